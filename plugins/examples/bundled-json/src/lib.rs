//! Example plugin that bundles its own parser: the tree-sitter runtime and
//! the JSON grammar are compiled into the component (C code, built for
//! wasm32-wasip2 with clang and wasi-libc; see `.cargo/config.toml`), so the
//! plugin never calls the host's `syntax` import.
//!
//! Strategy: one `json_key` chunk per key of the top-level object, its value
//! as content; a file that is not a JSON object is declined.

use code_intel_plugin_sdk::{
    ChunkBuilder, ChunkOutcome, ChunkSet, LineIndex, Plugin, PluginError, PluginInfo, SourceFile, export_plugin,
};

struct BundledJson;

impl Plugin for BundledJson {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "bundled-json".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "JSON top-level keys, parsed by a tree-sitter grammar bundled in the component".into(),
            languages: vec!["json".into()],
            file_patterns: vec!["**/*.json".into()],
            priority: 1,
        }
    }

    fn chunk(file: SourceFile) -> Result<ChunkOutcome, PluginError> {
        let mut parser = tree_sitter::Parser::new();
        parser
            .set_language(&tree_sitter_json::LANGUAGE.into())
            .map_err(|e| PluginError::new(format!("plugin bug: grammar and runtime disagree: {e}")))?;
        let tree = parser.parse(&file.content, None).ok_or_else(|| PluginError::new("the file could not be parsed"))?;
        let root = tree.root_node();
        let Some(object) = root.named_child(0).filter(|n| n.kind() == "object") else {
            return Ok(ChunkOutcome::Decline("not a JSON object at the top level".into()));
        };
        if root.has_error() {
            let line = first_error_line(root).unwrap_or(1);
            return Err(PluginError::at_line("invalid JSON: fix the syntax error", line));
        }
        let lines = LineIndex::new(&file.content);
        let mut chunks = ChunkSet::new(&file.content);
        let mut cursor = object.walk();
        for pair in object.named_children(&mut cursor).filter(|n| n.kind() == "pair") {
            let Some(key) = pair.child_by_field_name("key") else { continue };
            let name = key.utf8_text(file.content.as_bytes()).unwrap_or_default().trim_matches('"');
            let span = lines.span(to_u32(pair.start_byte()), to_u32(pair.end_byte()));
            let kind = pair.child_by_field_name("value").map_or("null", |v| v.kind());
            chunks.push(ChunkBuilder::new("json_key", name).span(span).meta("value_kind", kind));
        }
        Ok(ChunkOutcome::Chunks(chunks.finish()))
    }
}

fn first_error_line(node: tree_sitter::Node) -> Option<u32> {
    if node.is_error() || node.is_missing() {
        return Some(to_u32(node.start_position().row + 1));
    }
    let mut cursor = node.walk();
    node.children(&mut cursor).filter(|c| c.has_error()).find_map(first_error_line)
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

export_plugin!(BundledJson);
