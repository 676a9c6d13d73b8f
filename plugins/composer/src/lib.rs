//! `composer.json`: what a PHP project depends on and where its classes live.
//!
//! Chunks (kind, name):
//! - `package` `NAME`: the manifest's identity (name, type, description,
//!   license, stability, config), with the other sections elided;
//! - `dependencies` `production_dependencies` / `dev_dependencies`: `require`
//!   and `require-dev`, each package with its version constraint;
//! - `autoload` `autoload` / `autoload_dev`: the PSR-4 (and PSR-0, classmap,
//!   files) mapping. PSR-4 paths are also given relative to the repository
//!   root (`psr4_resolved`), so the host can turn an FQCN into a file even
//!   for a nested package's `composer.json`;
//! - `scripts` `scripts`: script names and their commands.
//!
//! Invalid JSON is a plugin error naming the line and column; the host then
//! indexes the file with line chunks.

use code_intel_plugin_sdk::{
    ChunkBuilder, ChunkOutcome, ChunkSet, LineIndex, Plugin, PluginError, PluginInfo, SourceFile, export_plugin,
};
use serde_json::{Map, Value, json};

/// Above any general JSON strategy: a `composer.json` is a manifest.
const PRIORITY: i32 = 20;

struct Composer;

impl Plugin for Composer {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "composer".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "composer.json: dependencies, dev dependencies, PSR-4 autoload mapping, scripts".into(),
            languages: vec!["json".into()],
            file_patterns: vec!["**/composer.json".into()],
            priority: PRIORITY,
        }
    }

    fn chunk(file: SourceFile) -> Result<ChunkOutcome, PluginError> {
        chunk_manifest(&file.path, &file.content).map(ChunkOutcome::Chunks)
    }
}

export_plugin!(Composer);

/// Byte ranges of the top-level members of a JSON object: `(key, member
/// start, value start, value end)`. The text must be valid JSON.
fn top_level_members(text: &str) -> Vec<(String, usize, usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut i = 0;
    let mut expecting_key = false;
    let mut pending: Option<(String, usize)> = None;
    let mut value_start = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                if depth == 1 && expecting_key {
                    let key: String = serde_json::from_str(&text[start..=i.min(b.len() - 1)]).unwrap_or_default();
                    pending = Some((key, start));
                    expecting_key = false;
                }
            }
            b':' if depth == 1 && pending.is_some() => {
                value_start = i + 1;
                while value_start < b.len() && b[value_start].is_ascii_whitespace() {
                    value_start += 1;
                }
            }
            b'{' | b'[' => {
                depth += 1;
                if depth == 1 {
                    expecting_key = true;
                }
            }
            b'}' | b']' => {
                if depth == 1 {
                    if let Some((key, start)) = pending.take() {
                        out.push((key, start, value_start, trim_end(text, i)));
                    }
                }
                depth -= 1;
            }
            b',' if depth == 1 => {
                if let Some((key, start)) = pending.take() {
                    out.push((key, start, value_start, trim_end(text, i)));
                }
                expecting_key = true;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// End of the text before `at`, without trailing whitespace.
fn trim_end(text: &str, at: usize) -> usize {
    text[..at].trim_end().len()
}

/// The directory of `path` (`packages/billing/composer.json` -> `packages/billing/`).
fn base_dir(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..=i])
}

/// `base` + a path from the manifest, normalised (`./`, trailing `/` kept).
fn join(base: &str, path: &str) -> String {
    let path = path.trim_start_matches("./");
    format!("{base}{path}")
}

fn constraint_list(section: &Value) -> Vec<Value> {
    section
        .as_object()
        .map(|o| o.iter().map(|(name, version)| json!({"name": name, "constraint": version})).collect())
        .unwrap_or_default()
}

/// Chunks one manifest.
///
/// # Errors
/// The file is not valid JSON, or its root is not an object.
pub fn chunk_manifest(path: &str, source: &str) -> Result<Vec<code_intel_plugin_sdk::Chunk>, PluginError> {
    let root: Value = serde_json::from_str(source).map_err(|e| {
        PluginError::at_line(
            format!("{path} is not valid JSON: {e}; fix the syntax (composer validate shows the same error)"),
            u32::try_from(e.line()).unwrap_or(0).max(1),
        )
    })?;
    let Some(object) = root.as_object() else {
        return Err(PluginError::at_line(format!("{path}: the top level must be a JSON object, as composer requires"), 1));
    };
    let lines = LineIndex::new(source);
    let members = top_level_members(source);
    let span_of = |key: &str| {
        members.iter().find(|(k, ..)| k == key).map(|&(_, start, _, end)| lines.span(to_u32(start), to_u32(end)))
    };
    let base = base_dir(path);
    let package = object.get("name").and_then(Value::as_str).unwrap_or("composer.json").to_string();
    let mut set = ChunkSet::new(source);

    // The manifest itself: identity, with big sections elided.
    let sections = ["require", "require-dev", "autoload", "autoload-dev", "scripts"];
    let mut skeleton = Map::new();
    for (key, value) in object {
        if sections.contains(&key.as_str()) {
            skeleton.insert(key.clone(), json!("…"));
        } else {
            skeleton.insert(key.clone(), value.clone());
        }
    }
    let identity = |key: &str| object.get(key).cloned().filter(|v| !v.is_null());
    let root_id = set.push(
        ChunkBuilder::new("package", package.clone())
            .id("package")
            .span(lines.span(0, to_u32(source.len())))
            .content(format!("composer.json of {package}\n{}", serde_json::to_string_pretty(&Value::Object(skeleton)).unwrap_or_default()))
            .signature(format!("composer package {package}"))
            .docstring(object.get("description").and_then(Value::as_str).map(str::to_string))
            .meta("package", package.clone())
            .meta_opt("type", identity("type"))
            .meta_opt("license", identity("license"))
            .meta_opt("keywords", identity("keywords"))
            .meta_opt("minimum_stability", identity("minimum-stability"))
            .meta_opt("php", object.get("require").and_then(|r| r.get("php")).cloned())
            .meta("base_dir", base),
    );

    for (key, name, kind) in [("require", "production_dependencies", "production"), ("require-dev", "dev_dependencies", "development")] {
        let (Some(section), Some(span)) = (object.get(key), span_of(key)) else { continue };
        let packages = constraint_list(section);
        set.push(
            ChunkBuilder::new("dependencies", name)
                .id(format!("dependencies:{key}"))
                .parent(Some(root_id.clone()))
                .span(span)
                .content(format!("composer {key} ({kind} dependencies of {package})\n{}", span.text(source)))
                .signature(format!("\"{key}\""))
                .meta("type", kind)
                .meta("packages", packages)
                .references(section.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()).unwrap_or_default()),
        );
    }

    for (key, name) in [("autoload", "autoload"), ("autoload-dev", "autoload_dev")] {
        let (Some(section), Some(span)) = (object.get(key), span_of(key)) else { continue };
        let mut psr4 = Map::new();
        let mut resolved = Vec::new();
        if let Some(map) = section.get("psr-4").and_then(Value::as_object) {
            for (namespace, dirs) in map {
                psr4.insert(namespace.clone(), dirs.clone());
                let dirs: Vec<&str> = match dirs {
                    Value::String(d) => vec![d.as_str()],
                    Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
                    _ => Vec::new(),
                };
                for dir in dirs {
                    resolved.push(json!({"namespace": namespace.trim_end_matches('\\'), "path": join(base, dir)}));
                }
            }
        }
        let files: Vec<String> =
            section.get("files").and_then(Value::as_array).map(|f| f.iter().filter_map(Value::as_str).map(|p| join(base, p)).collect()).unwrap_or_default();
        let classmap: Vec<String> =
            section.get("classmap").and_then(Value::as_array).map(|f| f.iter().filter_map(Value::as_str).map(|p| join(base, p)).collect()).unwrap_or_default();
        set.push(
            ChunkBuilder::new("autoload", name)
                .id(format!("autoload:{key}"))
                .parent(Some(root_id.clone()))
                .span(span)
                .content(format!("composer {key}: namespace to directory mapping of {package}\n{}", span.text(source)))
                .signature(format!("\"{key}\""))
                .meta("dev", key == "autoload-dev")
                .meta_opt("psr4", Some(Value::Object(psr4)))
                .meta_opt("psr4_resolved", Some(json!(resolved)))
                .meta_opt("psr0", section.get("psr-0").cloned())
                .meta_opt("files", Some(json!(files)))
                .meta_opt("classmap", Some(json!(classmap)))
                .related_all(files.iter().map(|f| format!("file:{f}"))),
        );
    }

    if let (Some(scripts), Some(span)) = (object.get("scripts").and_then(Value::as_object), span_of("scripts")) {
        let mut commands = Map::new();
        for (name, command) in scripts {
            let list = match command {
                Value::String(c) => vec![Value::String(c.clone())],
                Value::Array(list) => list.clone(),
                _ => Vec::new(),
            };
            commands.insert(name.clone(), Value::Array(list));
        }
        set.push(
            ChunkBuilder::new("scripts", "scripts")
                .id("scripts")
                .parent(Some(root_id.clone()))
                .span(span)
                .content(format!("composer scripts of {package}\n{}", span.text(source)))
                .signature("\"scripts\"")
                .meta("scripts", Value::Object(commands))
                .references(scripts.keys().cloned().collect::<Vec<_>>()),
        );
    }
    Ok(set.finish())
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_have_value_spans() {
        let text = "{\n  \"name\": \"a/b\",\n  \"require\": {\"x/y\": \"^1\"}\n}\n";
        let members = top_level_members(text);
        assert_eq!(members.len(), 2);
        let (key, start, value_start, end) = &members[1];
        assert_eq!(key, "require");
        assert_eq!(&text[*start..*end], "\"require\": {\"x/y\": \"^1\"}");
        assert_eq!(&text[*value_start..*end], "{\"x/y\": \"^1\"}");
    }

    #[test]
    fn nested_manifest_paths_are_resolved_from_its_directory() {
        assert_eq!(join(base_dir("packages/billing/composer.json"), "./src/"), "packages/billing/src/");
        assert_eq!(join(base_dir("composer.json"), "app/"), "app/");
    }
}
