//! The unit the host indexes: one piece of a source file, as a plugin (or the
//! line-based fallback) produced it.

use serde::{Deserialize, Serialize};

/// One chunk of a file: the host-side mirror of the WIT `chunk` record.
///
/// Lines are 1-based and inclusive; bytes are a half-open range into the file
/// content the plugin saw (invalid UTF-8 already replaced by U+FFFD).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// Unique within the file, stable across runs for the same code.
    pub id: String,
    /// `function`, `class`, `method`, `table_schema`, `lines`, ...
    pub kind: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qualified_name: Option<String>,
    /// Id of the enclosing chunk in the same file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    pub start_line: u32,
    pub end_line: u32,
    pub start_byte: u32,
    pub end_byte: u32,
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docstring: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub related_symbols: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<String>,
    /// Always a JSON object (the host validates plugin output).
    #[serde(default = "empty_object")]
    pub metadata: serde_json::Value,
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

/// Kind of the chunks the line-based fallback produces.
pub const FALLBACK_KIND: &str = "lines";
