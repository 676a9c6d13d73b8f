// Shared by the test plugins (`include!`d at each crate root, after the
// bindings): the well-behaved answer every test plugin gives for files whose
// name starts with `ok`, so tests can check that a plugin instance that failed
// was replaced and the next file works.

use code_intel::plugin::types::Chunk;

#[allow(dead_code)]
fn test_info(name: &str, description: &str) -> PluginInfo {
    PluginInfo {
        name: name.to_string(),
        version: "0.1.0".to_string(),
        description: description.to_string(),
        languages: vec!["text".to_string()],
        file_patterns: vec!["**/*.hostile".to_string(), "**/*.py".to_string()],
        priority: 1000,
    }
}

#[allow(dead_code)]
fn is_ok_file(file: &SourceFile) -> bool {
    file.path.rsplit('/').next().is_some_and(|name| name.starts_with("ok"))
}

/// One chunk covering the whole file, valid by the contract.
#[allow(dead_code)]
fn whole_file(file: &SourceFile) -> Chunk {
    let content = &file.content;
    let last_line = content[..content.len().saturating_sub(1)].matches('\n').count() + 1;
    Chunk {
        id: "file".to_string(),
        kind: "file".to_string(),
        name: file.path.clone(),
        qualified_name: None,
        parent: None,
        start_line: 1,
        end_line: last_line as u32,
        start_byte: 0,
        end_byte: content.len() as u32,
        content: content.clone(),
        signature: None,
        docstring: None,
        related_symbols: Vec::new(),
        references: Vec::new(),
        metadata: "{\"ok\": true}".to_string(),
    }
}
