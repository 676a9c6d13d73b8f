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
    #[serde(default)]
    pub metadata: Metadata,
}

/// A chunk's metadata: a JSON object, kept as the text the plugin wrote.
///
/// Indexing never looks inside it: the host checks it once (valid JSON, an
/// object) and the store writes the text as it is. Building a
/// `serde_json::Value` for every chunk, only to write it back out as text,
/// cost a plugin 0.01-0.04 of its parse time. Readers parse it when they
/// need a field ([`Metadata::get`], [`Metadata::value`]). It serializes as
/// the parsed object (keys sorted), so JSON output is the same as for a
/// `Value`; two metadata compare equal when their objects do.
#[derive(Clone)]
pub struct Metadata(String);

impl Metadata {
    /// `{}`.
    #[must_use]
    pub fn empty() -> Self {
        Self("{}".to_string())
    }

    /// Checks `text`: valid JSON, and an object. An empty or blank text is
    /// `{}` (the WIT contract's "no metadata").
    ///
    /// # Errors
    /// What is wrong with the text: not JSON (with serde_json's message,
    /// line and column), or JSON that is not an object.
    pub fn parse(text: String) -> Result<Self, String> {
        let start = text.trim_start();
        if start.is_empty() {
            return Ok(Self::empty());
        }
        // Syntax only: `IgnoredAny` reads the whole value without building it.
        serde_json::from_str::<serde::de::IgnoredAny>(&text).map_err(|e| format!("metadata is not valid JSON: {e}"))?;
        if !start.starts_with('{') {
            return Err("metadata is JSON but not an object".to_string());
        }
        Ok(Self(text))
    }

    /// The JSON text, as the plugin wrote it (or `{}`).
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The parsed object.
    #[must_use]
    pub fn value(&self) -> serde_json::Value {
        serde_json::from_str(&self.0).unwrap_or_else(|_| serde_json::Value::Object(serde_json::Map::new()))
    }

    /// The field `key`, parsed; `None` when there is none.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<serde_json::Value> {
        match self.value() {
            serde_json::Value::Object(mut map) => map.remove(key),
            _ => None,
        }
    }
}

impl Default for Metadata {
    fn default() -> Self {
        Self::empty()
    }
}

impl From<serde_json::Map<String, serde_json::Value>> for Metadata {
    fn from(object: serde_json::Map<String, serde_json::Value>) -> Self {
        Self(serde_json::Value::Object(object).to_string())
    }
}

/// Only an object is metadata: `json!({ ... })` converts, anything else is refused.
impl TryFrom<serde_json::Value> for Metadata {
    type Error = String;

    fn try_from(value: serde_json::Value) -> Result<Self, String> {
        match value {
            serde_json::Value::Object(object) => Ok(object.into()),
            other => Err(format!("metadata must be a JSON object, not {other}")),
        }
    }
}

impl PartialEq for Metadata {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0 || self.value() == other.value()
    }
}

impl Eq for Metadata {}

impl std::fmt::Debug for Metadata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Metadata {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Metadata {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        if value.is_object() { Ok(Self(value.to_string())) } else { Err(serde::de::Error::custom("metadata must be a JSON object")) }
    }
}

/// Kind of the chunks the line-based fallback produces.
pub const FALLBACK_KIND: &str = "lines";

/// Lines per fallback chunk (SPEC §3: every other text file gets 50-line
/// windows; small enough to stay inside a 512-token embedding window for
/// typical code, large enough to keep a function's context together).
pub const FALLBACK_WINDOW_LINES: usize = 50;

/// Why a plugin's attempt at a file did not produce chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The plugin returned its own `plugin-error`.
    PluginError,
    /// The component trapped (panic, unreachable, out of bounds).
    Trap,
    /// The call ran past its time limit.
    Timeout,
    /// The call tried to grow memory past its limit.
    MemoryLimit,
    /// The plugin returned chunks that break the contract (bad spans,
    /// metadata that is not a JSON object, duplicate ids, ...).
    InvalidOutput,
}

/// One failed plugin attempt, kept so `status` can show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkFailure {
    pub plugin: String,
    pub kind: FailureKind,
    pub message: String,
}

/// What chunking one file produced.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkedFile {
    pub chunks: Vec<Chunk>,
    /// Name of the plugin whose chunks these are, or `fallback`.
    pub chunker: String,
    /// Plugins that declined the file, with their reasons, in the order tried.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub declined: Vec<(String, String)>,
    /// Plugins that failed on the file, in the order tried.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<ChunkFailure>,
}

/// Name recorded as the chunker of files indexed by [`line_chunks`].
pub const FALLBACK_CHUNKER: &str = "fallback";

/// Anything that turns a file into chunks. The plugin host implements it;
/// the indexer depends only on this trait.
pub trait Chunker: Send + Sync {
    /// Chunks one file. Never fails: when no plugin can, the result is line
    /// chunks with the failures recorded.
    fn chunk_file(&self, path: &str, content: &str) -> ChunkedFile;

    /// Called by the indexer as a sync starts. A chunker that stops calling
    /// a strategy that keeps failing (the plugin host's circuit breaker)
    /// gives it a fresh chance here. Nothing by default.
    fn begin_run(&self) {}

    /// Called by the indexer with the paths it is about to look at (their
    /// content may turn out unchanged), before any `chunk_file` of the run:
    /// a chunker that looks files up somewhere can fetch them in a few
    /// round trips instead of one per file. Nothing by default.
    fn prepare(&self, _paths: &[&str]) {}

    /// What identifies this chunker's output (its plugins and their
    /// versions, by content): when it differs from the one an index was
    /// last synced with, the indexer chunks every file again, so a new or
    /// upgraded plugin applies to files that did not change (their vectors
    /// are reused by content). `None`: not tracked.
    fn identity(&self) -> Option<String> {
        None
    }
}

/// The line-based fallback: consecutive windows of [`FALLBACK_WINDOW_LINES`]
/// lines. An empty file has no chunks.
#[must_use]
pub fn line_chunks(path: &str, content: &str) -> Vec<Chunk> {
    let file_name = path.rsplit('/').next().unwrap_or(path);
    let mut chunks = Vec::new();
    let mut window_start_byte = 0usize;
    let mut window_start_line = 1usize;
    let mut lines_in_window = 0usize;
    let mut offset = 0usize;
    for line in content.split_inclusive('\n') {
        offset += line.len();
        lines_in_window += 1;
        if lines_in_window == FALLBACK_WINDOW_LINES {
            chunks.push(window(file_name, content, window_start_byte, offset, window_start_line, lines_in_window));
            window_start_byte = offset;
            window_start_line += lines_in_window;
            lines_in_window = 0;
        }
    }
    if lines_in_window > 0 {
        chunks.push(window(file_name, content, window_start_byte, offset, window_start_line, lines_in_window));
    }
    chunks
}

fn window(file_name: &str, content: &str, start: usize, end: usize, first_line: usize, lines: usize) -> Chunk {
    let last_line = first_line + lines - 1;
    Chunk {
        id: format!("lines:{first_line}-{last_line}"),
        kind: FALLBACK_KIND.to_string(),
        name: format!("{file_name}:{first_line}-{last_line}"),
        qualified_name: None,
        parent: None,
        start_line: to_u32(first_line),
        end_line: to_u32(last_line),
        start_byte: to_u32(start),
        end_byte: to_u32(end),
        content: content[start..end].to_string(),
        signature: None,
        docstring: None,
        related_symbols: Vec::new(),
        references: Vec::new(),
        metadata: Metadata::empty(),
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_keeps_the_plugins_text_once_checked() {
        let text = r#"{ "b": [1, 2], "a": {"x": null} }"#;
        let metadata = Metadata::parse(text.to_string()).unwrap();
        assert_eq!(metadata.as_str(), text);
        assert_eq!(metadata.get("b"), Some(serde_json::json!([1, 2])));
        assert_eq!(metadata.get("missing"), None);
        // Output is the parsed object, keys sorted, as it was for a `Value`.
        assert_eq!(serde_json::to_string(&metadata).unwrap(), r#"{"a":{"x":null},"b":[1,2]}"#);
        // Equal when the objects are, whatever the spacing and key order.
        assert_eq!(metadata, Metadata::try_from(serde_json::json!({"a": {"x": null}, "b": [1, 2]})).unwrap());
        assert_ne!(metadata, Metadata::empty());
    }

    #[test]
    fn metadata_must_be_one_json_object() {
        assert_eq!(Metadata::parse(String::new()).unwrap(), Metadata::empty());
        assert_eq!(Metadata::parse(" \n".to_string()).unwrap().as_str(), "{}");
        for (text, why) in [
            ("[1]", "not an object"),
            ("\"text\"", "not an object"),
            ("{", "not valid JSON"),
            ("{\"a\": 1} {}", "not valid JSON"),
            ("{\"a\": \"\\q\"}", "not valid JSON"),
        ] {
            let err = Metadata::parse(text.to_string()).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
        assert!(Metadata::try_from(serde_json::json!([1])).unwrap_err().contains("must be a JSON object"));
    }

    #[test]
    fn metadata_reads_back_from_json() {
        let chunk: Chunk = serde_json::from_str(
            r#"{"id": "a", "kind": "k", "name": "n", "start_line": 1, "end_line": 1, "start_byte": 0, "end_byte": 0,
                "content": "", "metadata": {"z": 1, "a": 2}}"#,
        )
        .unwrap();
        assert_eq!(chunk.metadata.get("z"), Some(serde_json::json!(1)));
        let refused = serde_json::from_str::<Metadata>("[1]").unwrap_err();
        assert!(refused.to_string().contains("must be a JSON object"), "{refused}");
        let missing: Chunk = serde_json::from_str(
            r#"{"id": "a", "kind": "k", "name": "n", "start_line": 1, "end_line": 1, "start_byte": 0, "end_byte": 0, "content": ""}"#,
        )
        .unwrap();
        assert_eq!(missing.metadata, Metadata::empty());
    }

    #[test]
    fn empty_file_has_no_chunks() {
        assert!(line_chunks("a.txt", "").is_empty());
    }

    #[test]
    fn windows_cover_every_line_once() {
        let content: String = (1..=120).map(|i| format!("line {i}\n")).collect();
        let chunks = line_chunks("dir/notes.txt", &content);
        let spans: Vec<(u32, u32)> = chunks.iter().map(|c| (c.start_line, c.end_line)).collect();
        assert_eq!(spans, vec![(1, 50), (51, 100), (101, 120)]);
        let rebuilt: String = chunks.iter().map(|c| c.content.as_str()).collect();
        assert_eq!(rebuilt, content);
        assert_eq!(chunks[1].name, "notes.txt:51-100");
        assert_eq!(&content[chunks[2].start_byte as usize..chunks[2].end_byte as usize], chunks[2].content);
    }

    #[test]
    fn last_line_without_newline_is_kept() {
        let chunks = line_chunks("a.txt", "one\ntwo");
        assert_eq!(chunks.len(), 1);
        assert_eq!((chunks[0].start_line, chunks[0].end_line), (1, 2));
        assert_eq!(chunks[0].content, "one\ntwo");
    }
}
