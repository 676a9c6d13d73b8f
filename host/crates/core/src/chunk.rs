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
        metadata: empty_object(),
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

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
