//! Checks a plugin's output against the contract before the host trusts it.
//!
//! Everything here is something a buggy or hostile plugin could get wrong and
//! that would otherwise corrupt the index or crash a consumer later: spans
//! outside the file or not on character boundaries, lines that disagree with
//! bytes, duplicate or empty ids, dangling parents, metadata that is not a
//! JSON object.

use std::collections::HashSet;

use code_intel_core::{Chunk, Metadata};

use crate::wit::RawChunk;

/// Byte offsets of every `\n` in a text, for byte -> line lookups.
struct Lines {
    newlines: Vec<usize>,
}

impl Lines {
    fn new(content: &str) -> Self {
        Self { newlines: memchr::memchr_iter(b'\n', content.as_bytes()).collect() }
    }

    /// 1-based line holding byte `offset` (an offset at the end of the text
    /// belongs to the last line, which is empty after a final newline).
    fn line_of(&self, offset: usize) -> usize {
        self.newlines.partition_point(|&nl| nl < offset) + 1
    }

    /// Number of lines: newlines + 1 (a final newline starts an empty line).
    fn count(&self) -> usize {
        self.newlines.len() + 1
    }
}

fn is_snake_case(kind: &str) -> bool {
    let mut chars = kind.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Validates `raw` against `content` and converts it to host chunks.
///
/// # Errors
/// The first problem found, naming the chunk (by index and id) and the rule.
pub(crate) fn chunks(raw: Vec<RawChunk>, content: &str) -> Result<Vec<Chunk>, String> {
    let lines = Lines::new(content);
    let mut ids = HashSet::with_capacity(raw.len());
    for (i, c) in raw.iter().enumerate() {
        let at = || format!("chunk {i} (id {:?})", c.id);
        if c.id.is_empty() {
            return Err(format!("chunk {i} has an empty id"));
        }
        if !ids.insert(c.id.as_str()) {
            return Err(format!("{}: the id is used by another chunk of this file; ids must be unique within a file", at()));
        }
        if !is_snake_case(&c.kind) {
            return Err(format!("{}: kind {:?} is not lowercase snake_case (e.g. `function`, `table_schema`)", at(), c.kind));
        }
        let (start, end) = (c.start_byte as usize, c.end_byte as usize);
        if start > end || end > content.len() {
            return Err(format!("{}: byte span {start}..{end} is not within the file's {} bytes", at(), content.len()));
        }
        if !content.is_char_boundary(start) || !content.is_char_boundary(end) {
            return Err(format!("{}: byte span {start}..{end} splits a UTF-8 character", at()));
        }
        let (first, last) = (c.start_line as usize, c.end_line as usize);
        if first == 0 || first > last || last > lines.count() {
            return Err(format!(
                "{}: line span {first}-{last} is not a 1-based, ordered range within the file's {} lines",
                at(),
                lines.count()
            ));
        }
        if lines.line_of(start) != first {
            return Err(format!("{}: start line {first} does not match start byte {start}, which is on line {}", at(), lines.line_of(start)));
        }
        // The end line is the line of the last byte; accept the line of the
        // exclusive end too (a span ending with its newline).
        let last_byte_line = lines.line_of(end.saturating_sub(1).max(start));
        if last != last_byte_line && last != lines.line_of(end) {
            return Err(format!(
                "{}: end line {last} does not match end byte {end} (last byte on line {last_byte_line})",
                at()
            ));
        }
    }
    for (i, c) in raw.iter().enumerate() {
        if let Some(parent) = &c.parent
            && (parent == &c.id || !ids.contains(parent.as_str()))
        {
            return Err(format!("chunk {i} (id {:?}): parent {parent:?} is not the id of another chunk in this file", c.id));
        }
    }
    raw.into_iter()
        .enumerate()
        .map(|(i, c)| {
            let id = &c.id;
            let metadata = Metadata::parse(c.metadata).map_err(|e| format!("chunk {i} (id {id:?}): {e}"))?;
            Ok(Chunk {
                id: c.id,
                kind: c.kind,
                name: c.name,
                qualified_name: c.qualified_name,
                parent: c.parent,
                start_line: c.start_line,
                end_line: c.end_line,
                start_byte: c.start_byte,
                end_byte: c.end_byte,
                content: c.content,
                signature: c.signature,
                docstring: c.docstring,
                related_symbols: c.related_symbols,
                references: c.references,
                metadata,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "def a():\n    pass\n\ndef b():\n    pass\n";

    fn chunk(id: &str, lines: (u32, u32), bytes: (u32, u32)) -> RawChunk {
        RawChunk {
            id: id.into(),
            kind: "function".into(),
            name: id.into(),
            qualified_name: None,
            parent: None,
            start_line: lines.0,
            end_line: lines.1,
            start_byte: bytes.0,
            end_byte: bytes.1,
            content: String::new(),
            signature: None,
            docstring: None,
            related_symbols: vec![],
            references: vec![],
            metadata: "{}".into(),
        }
    }

    #[test]
    fn good_chunks_pass_with_either_end_line_convention() {
        // `def a` spans bytes 0..17 (without its newline) or 0..18 (with it).
        let out = chunks(vec![chunk("a", (1, 2), (0, 17)), chunk("b", (4, 5), (19, 36))], SRC).unwrap();
        assert_eq!(out.len(), 2);
        assert!(chunks(vec![chunk("a", (1, 2), (0, 18))], SRC).is_ok());
        assert!(chunks(vec![chunk("a", (1, 3), (0, 18))], SRC).is_ok());
    }

    #[test]
    fn every_contract_break_is_named() {
        let cases: Vec<(Vec<RawChunk>, &str)> = vec![
            (vec![chunk("", (1, 2), (0, 17))], "empty id"),
            (vec![chunk("a", (1, 2), (0, 17)), chunk("a", (4, 5), (19, 36))], "unique"),
            (vec![chunk("a", (1, 2), (0, 999))], "not within"),
            (vec![chunk("a", (0, 2), (0, 17))], "1-based"),
            (vec![chunk("a", (2, 1), (0, 17))], "1-based"),
            (vec![chunk("a", (1, 99), (0, 17))], "1-based"),
            (vec![chunk("a", (2, 2), (0, 17))], "start line"),
            (vec![chunk("a", (1, 5), (0, 17))], "end line"),
            (vec![RawChunk { metadata: "[1]".into(), ..chunk("a", (1, 2), (0, 17)) }], "not an object"),
            (vec![RawChunk { metadata: "{".into(), ..chunk("a", (1, 2), (0, 17)) }], "not valid JSON"),
            (vec![RawChunk { kind: String::new(), ..chunk("a", (1, 2), (0, 17)) }], "snake_case"),
            (vec![RawChunk { kind: "Class Thing".into(), ..chunk("a", (1, 2), (0, 17)) }], "snake_case"),
            (vec![RawChunk { parent: Some("zz".into()), ..chunk("a", (1, 2), (0, 17)) }], "parent"),
            (vec![RawChunk { parent: Some("a".into()), ..chunk("a", (1, 2), (0, 17)) }], "parent"),
        ];
        for (raw, expected) in cases {
            let err = chunks(raw.clone(), SRC).unwrap_err();
            assert!(err.contains(expected), "{raw:?}: {err}");
        }
    }

    #[test]
    fn spans_splitting_a_character_are_refused() {
        let src = "é\n";
        let err = chunks(vec![chunk("a", (1, 1), (1, 2))], src).unwrap_err();
        assert!(err.contains("UTF-8"), "{err}");
    }

    #[test]
    fn empty_metadata_means_an_empty_object() {
        let out = chunks(vec![RawChunk { metadata: String::new(), ..chunk("a", (1, 2), (0, 17)) }], SRC).unwrap();
        assert_eq!(out[0].metadata, Metadata::empty());
    }
}
