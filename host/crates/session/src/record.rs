//! Summaries of recorded tool calls: which files and symbols a call returned
//! or read. Submitted evidence is checked against these (SPEC §8: "a file
//! claimed as analysed must have been returned or read by a tool in this
//! session").
//!
//! Results are walked generically: any string under a key naming a file
//! (`file`, `path`, `file_path`, `files`) is a file, any string under a key
//! naming a symbol (`name`, `symbol`, `qualified_name`, `qualified`, `fqcn`,
//! `symbols`, `related_symbols`) is a symbol. Code tools therefore need no
//! per-tool adapter, and a new tool's results count as evidence as soon as
//! they use these keys.

use serde::{Deserialize, Serialize};

/// Most files (and, separately, symbols) kept per recorded call. A
/// repository-wide `search_text` can return thousands of lines; 2,000 covers
/// every result budget of the code tools (SPEC §7 caps results well below it)
/// while bounding the log's growth.
pub const MAX_SUMMARY_ITEMS: usize = 2_000;

/// Keys whose string values are repository-relative file paths.
pub const FILE_KEYS: &[&str] = &["file", "path", "file_path", "files", "relative_path"];
/// Keys whose string values are symbol names.
pub const SYMBOL_KEYS: &[&str] =
    &["name", "symbol", "qualified_name", "qualified", "fqcn", "symbols", "related_symbols", "enclosing_symbol"];
/// Parameters that name a file or directory the tool read.
pub const READ_PARAM_KEYS: &[&str] = &["path", "file", "file_path"];

/// What one tool call returned, as far as evidence is concerned.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolSummary {
    pub files: Vec<String>,
    pub symbols: Vec<String>,
    /// Files or directories the call was asked to read (its path parameter).
    pub read: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn push(list: &mut Vec<String>, truncated: &mut bool, value: &str) {
    let v = value.trim().trim_start_matches("./");
    if v.is_empty() || v.len() > 1024 || list.iter().any(|x| x == v) {
        return;
    }
    if list.len() >= MAX_SUMMARY_ITEMS {
        *truncated = true;
        return;
    }
    list.push(v.to_string());
}

fn walk(value: &serde_json::Value, key: Option<&str>, out: &mut ToolSummary) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                walk(v, Some(k.as_str()), out);
            }
        }
        serde_json::Value::Array(items) => {
            for v in items {
                walk(v, key, out);
            }
        }
        serde_json::Value::String(s) => match key {
            Some(k) if FILE_KEYS.contains(&k) => push(&mut out.files, &mut out.truncated, s),
            Some(k) if SYMBOL_KEYS.contains(&k) => push(&mut out.symbols, &mut out.truncated, s),
            _ => {}
        },
        _ => {}
    }
}

/// Summarises a call from its parameters and its (JSON) result.
#[must_use]
pub fn summarize(params: &serde_json::Value, result: &serde_json::Value) -> ToolSummary {
    let mut out = ToolSummary::default();
    match result {
        // A top-level field that echoes a parameter (`{"symbol": "Foo",
        // "definitions": []}`) is the question, not an answer.
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                if params.get(k).is_some_and(|p| p == v) {
                    continue;
                }
                walk(v, Some(k.as_str()), &mut out);
            }
        }
        other => walk(other, None, &mut out),
    }
    for k in READ_PARAM_KEYS {
        if let Some(p) = params.get(*k).and_then(serde_json::Value::as_str) {
            let p = p.trim().trim_start_matches("./").trim_end_matches('/');
            if !p.is_empty() && p != "." && !out.read.iter().any(|x| x == p) {
                out.read.push(p.to_string());
            }
        }
    }
    if let Some(e) = result.get("error") {
        out.error = Some(e.as_str().map_or_else(|| e.to_string(), str::to_string));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn collects_files_and_symbols() {
        let result = json!({
            "definitions": [
                {"name": "AuthService", "qualified_name": "app.auth.AuthService", "file": "app/auth.py", "line": 3},
                {"name": "login", "file": "./app/views.py", "related_symbols": ["User", "Session"]}
            ],
            "truncated": false
        });
        let s = summarize(&json!({"symbol": "AuthService"}), &result);
        assert_eq!(s.files, vec!["app/auth.py", "app/views.py"]);
        assert_eq!(s.symbols, vec!["AuthService", "app.auth.AuthService", "login", "User", "Session"]);
        assert!(s.read.is_empty());
        let echo = summarize(&json!({"symbol": "Nope"}), &json!({"symbol": "Nope", "definitions": []}));
        assert!(echo.symbols.is_empty());
        let s = summarize(&json!({"path": "app/", "line": 3}), &json!({"error": "no such file"}));
        assert_eq!(s.read, vec!["app"]);
        assert_eq!(s.error.as_deref(), Some("no such file"));
    }
}
