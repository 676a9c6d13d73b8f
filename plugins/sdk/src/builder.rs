//! Building chunks: ids, spans, content, metadata, and the embedding window.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use crate::span::to_u32;
use crate::{Chunk, LineIndex, MAX_CHUNK_BYTES, Span};

/// Kind of the continuation chunks [`fit_window`] makes from an oversized
/// chunk. They are not definitions: hosts list them under their parent.
pub const PART_KIND: &str = "part";

/// Smallest window a part may have, so that a very long signature used as a
/// part's header can never stop the split from making progress.
const MIN_PART_BYTES: usize = 256;

/// Most of a chunk's name and signature each of its parts repeats (bytes,
/// cut at a character boundary). Every part carries them, so an enormous
/// name or signature (a 100 KB package name) would otherwise be copied
/// into hundreds of parts and take the plugin past its memory limit; 200
/// bytes is more than any real signature line.
pub const MAX_PART_LABEL_BYTES: usize = 200;

/// Longest chunk id kept as written. A longer one (an id made from a
/// selector or a name that runs for hundreds of kilobytes in a damaged file)
/// keeps its first bytes and a hash of the whole: every part of a split
/// chunk repeats its id (`ID#partN`, and as its parent), so an unbounded id
/// made the output grow with the square of the file (a 400 KB CSS string
/// took 52 MB of ids and the plugin past its memory limit).
pub const MAX_ID_BYTES: usize = 256;

/// Describes one chunk; [`ChunkSet::push`] turns it into a [`Chunk`].
///
/// Only kind, name and span are required. The id defaults to
/// `kind:qualified-name` (or `kind:name`), the content to the source of the
/// span. Related symbols and references are de-duplicated and sorted so that
/// output is stable across runs.
///
/// ```
/// use code_intel_plugin_sdk::{ChunkBuilder, ChunkSet, LineIndex};
/// let source = "def greet(name):\n    return 'hi ' + name\n";
/// let span = LineIndex::new(source).span(0, source.len() as u32);
/// let mut set = ChunkSet::new(source);
/// let id = set.push(
///     ChunkBuilder::new("function", "greet")
///         .qualified_name("app.greet")
///         .span(span)
///         .signature("def greet(name):")
///         .reference("name")
///         .meta("async", false),
/// );
/// assert_eq!(id, "function:app.greet");
/// let chunks = set.finish();
/// assert_eq!(chunks[0].content, source);
/// assert_eq!(chunks[0].metadata, r#"{"async":false}"#);
/// ```
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct ChunkBuilder {
    kind: String,
    name: String,
    id: Option<String>,
    qualified_name: Option<String>,
    parent: Option<String>,
    span: Span,
    content: Option<String>,
    signature: Option<String>,
    docstring: Option<String>,
    related: BTreeSet<String>,
    references: BTreeSet<String>,
    /// Entries in the order given; [`metadata_json`] sorts them and keeps
    /// the last value of a repeated key, as a map would.
    metadata: Vec<(String, Value)>,
}

impl ChunkBuilder {
    /// A chunk of `kind` (`function`, `class`, ...) named `name`.
    pub fn new(kind: impl Into<String>, name: impl Into<String>) -> Self {
        Self { kind: kind.into(), name: name.into(), ..Self::default() }
    }

    /// Overrides the default id (`kind:qualified-name`).
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// FQCN, dotted module path, ...
    pub fn qualified_name(mut self, name: impl Into<String>) -> Self {
        self.qualified_name = Some(name.into()).filter(|n: &String| !n.is_empty());
        self
    }

    /// Id of the enclosing chunk (as returned by [`ChunkSet::push`]).
    pub fn parent(mut self, parent: Option<String>) -> Self {
        self.parent = parent;
        self
    }

    /// The chunk's range in the file.
    pub fn span(mut self, span: Span) -> Self {
        self.span = span;
        self
    }

    /// Content to index instead of the span's source (a class skeleton, a summary).
    pub fn content(mut self, content: impl Into<String>) -> Self {
        self.content = Some(content.into());
        self
    }

    /// Declaration without the body; surrounding whitespace is trimmed.
    pub fn signature(mut self, signature: impl AsRef<str>) -> Self {
        let signature = signature.as_ref().trim();
        self.signature = (!signature.is_empty()).then(|| signature.to_string());
        self
    }

    /// Cleaned docstring or docblock; empty text means none.
    pub fn docstring(mut self, doc: Option<String>) -> Self {
        self.docstring = doc.filter(|d| !d.trim().is_empty());
        self
    }

    /// A symbol this chunk points to (dependency, model, base class).
    pub fn related(mut self, symbol: impl Into<String>) -> Self {
        let symbol = symbol.into();
        if !symbol.is_empty() {
            self.related.insert(symbol);
        }
        self
    }

    /// Several related symbols.
    pub fn related_all<I: IntoIterator<Item = S>, S: Into<String>>(mut self, symbols: I) -> Self {
        // Inserted in place: moving the builder through `related` per symbol
        // copies the whole struct each time.
        self.related.extend(symbols.into_iter().map(Into::into).filter(|s: &String| !s.is_empty()));
        self
    }

    /// An identifier this chunk uses.
    pub fn reference(mut self, identifier: impl Into<String>) -> Self {
        let identifier = identifier.into();
        if !identifier.is_empty() {
            self.references.insert(identifier);
        }
        self
    }

    /// Several identifiers.
    pub fn references<I: IntoIterator<Item = S>, S: Into<String>>(mut self, identifiers: I) -> Self {
        self.references.extend(identifiers.into_iter().map(Into::into).filter(|s: &String| !s.is_empty()));
        self
    }

    /// A metadata entry; anything `serde_json` can represent.
    pub fn meta(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.metadata.push((key.to_string(), value.into()));
        self
    }

    /// A metadata entry only when `value` is `Some` / a non-empty list.
    pub fn meta_opt(mut self, key: &str, value: Option<impl Into<Value>>) -> Self {
        if let Some(value) = value.map(Into::into) {
            let empty = matches!(&value, Value::Array(a) if a.is_empty()) || matches!(&value, Value::Object(o) if o.is_empty());
            if !empty {
                self.metadata.push((key.to_string(), value));
            }
        }
        self
    }

    /// The kind given to [`ChunkBuilder::new`].
    #[must_use]
    pub fn kind_name(&self) -> &str {
        &self.kind
    }

    fn default_id(&self) -> String {
        // `concat`, not `format!`: formatting is slow in WebAssembly.
        [self.kind.as_str(), ":", self.qualified_name.as_deref().unwrap_or(&self.name)].concat()
    }

    fn build(self, id: String, source: &str) -> Chunk {
        let content = self.content.unwrap_or_else(|| self.span.text(source).to_string());
        Chunk {
            id,
            kind: self.kind,
            name: self.name,
            qualified_name: self.qualified_name,
            parent: self.parent,
            start_line: self.span.start_line,
            end_line: self.span.end_line,
            start_byte: self.span.start_byte,
            end_byte: self.span.end_byte,
            content,
            signature: self.signature,
            docstring: self.docstring,
            related_symbols: self.related.into_iter().collect(),
            references: self.references.into_iter().collect(),
            metadata: metadata_json(self.metadata),
        }
    }
}

/// The metadata object's JSON text: keys sorted, a repeated key's last
/// value, compact, exactly as `serde_json` writes a `Map` holding the same
/// entries. Written entry by entry instead of through a `Map`: a map's
/// inserts shift its nodes, and in WebAssembly every such move is a call
/// into the runtime.
fn metadata_json(mut entries: Vec<(String, Value)>) -> String {
    if entries.is_empty() {
        return "{}".to_string();
    }
    // Stable: equal keys stay in insertion order, and the last one wins below.
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = Vec::with_capacity(64 * entries.len());
    out.push(b'{');
    for (i, (key, value)) in entries.iter().enumerate() {
        if entries.get(i + 1).is_some_and(|next| next.0 == *key) {
            continue; // Replaced by a later value.
        }
        if out.len() > 1 {
            out.push(b',');
        }
        // Writing to a `Vec<u8>` cannot fail, and a `Value` always serializes.
        let _ = serde_json::to_writer(&mut out, key);
        out.push(b':');
        let _ = serde_json::to_writer(&mut out, value);
    }
    out.push(b'}');
    // serde_json writes UTF-8.
    String::from_utf8(out).unwrap_or_else(|_| "{}".to_string())
}

/// The chunks of one file: keeps ids unique and every chunk inside the
/// embedding window.
pub struct ChunkSet<'s> {
    source: &'s str,
    chunks: Vec<Chunk>,
    seen: HashMap<String, u32>,
    max_bytes: usize,
}

impl<'s> ChunkSet<'s> {
    /// An empty set for chunks of `source`, split at [`MAX_CHUNK_BYTES`].
    #[must_use]
    pub fn new(source: &'s str) -> Self {
        Self { source, chunks: Vec::new(), seen: HashMap::new(), max_bytes: MAX_CHUNK_BYTES }
    }

    /// Uses another content limit (bytes) for [`ChunkSet::finish`].
    #[must_use]
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Adds a chunk and returns its id. A second chunk with the same id (a
    /// property getter and setter, a function redefined under `if`) gets
    /// `#2`, `#3`, ... appended, in document order of pushing.
    pub fn push(&mut self, mut chunk: ChunkBuilder) -> String {
        let base = bounded_id(chunk.id.take().unwrap_or_else(|| chunk.default_id()));
        let id = match self.seen.get_mut(&base) {
            Some(count) => {
                *count += 1;
                format!("{base}#{count}")
            }
            None => {
                self.seen.insert(base.clone(), 1);
                base
            }
        };
        self.chunks.push(chunk.build(id.clone(), self.source));
        id
    }

    /// Number of chunks pushed so far.
    #[must_use]
    pub fn len(&self) -> usize {
        self.chunks.len()
    }

    /// True when nothing was pushed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// The chunks in document order (by start, enclosing before enclosed),
    /// oversized ones split with [`fit_window`].
    #[must_use]
    pub fn finish(self) -> Vec<Chunk> {
        let mut chunks = self.chunks;
        // Parents named by an id the plugin made itself (not the one `push`
        // returned) get the same bound as the ids.
        for chunk in &mut chunks {
            if let Some(parent) = chunk.parent.take() {
                chunk.parent = Some(bounded_id(parent));
            }
        }
        chunks.sort_by_key(|c| (c.start_byte, std::cmp::Reverse(c.end_byte)));
        if chunks.iter().all(|c| c.content.len() <= self.max_bytes) {
            return chunks; // The common case; no line index to build.
        }
        let lines = LineIndex::new(self.source);
        let mut fitted = Vec::with_capacity(chunks.len() + 8);
        for chunk in chunks {
            // Only the oversized ones are split; the others move over as they are.
            if chunk.content.len() <= self.max_bytes {
                fitted.push(chunk);
            } else {
                fitted.extend(fit_window(chunk, self.source, &lines, self.max_bytes));
            }
        }
        fitted
    }
}

/// Keeps a chunk within `max_bytes` of content.
///
/// A chunk that fits is returned as is. A larger one keeps its id, span and
/// metadata with the first window of its content (cut at line boundaries);
/// the rest becomes [`PART_KIND`] chunks `ID#part2`, `ID#part3`, ... whose
/// parent is the chunk, named `NAME (part 2/3)`, each starting with the
/// chunk's signature so it embeds in context. When the content is the
/// source of the span, parts carry their exact lines; otherwise (a skeleton)
/// they share the chunk's span.
///
/// ```
/// use code_intel_plugin_sdk::{fit_window, ChunkBuilder, ChunkSet, LineIndex, PART_KIND};
/// let source: String = (0..100).map(|i| format!("    x{i} = {i}\n")).collect();
/// let source = format!("def big():\n{source}");
/// let lines = LineIndex::new(&source);
/// let mut set = ChunkSet::new(&source).with_max_bytes(usize::MAX);
/// set.push(ChunkBuilder::new("function", "big").span(lines.span(0, source.len() as u32)).signature("def big():"));
/// let chunk = set.finish().remove(0);
/// let parts = fit_window(chunk, &source, &lines, 400);
/// assert!(parts.len() > 3);
/// assert!(parts.iter().all(|p| p.content.len() <= 400));
/// assert_eq!(parts[1].kind, PART_KIND);
/// assert_eq!(parts[1].parent.as_deref(), Some("function:big"));
/// assert!(parts[1].content.starts_with("def big():\n"));
/// assert_eq!(parts.last().unwrap().end_line, 101);
/// ```
#[must_use]
pub fn fit_window(chunk: Chunk, source: &str, lines: &LineIndex, max_bytes: usize) -> Vec<Chunk> {
    if chunk.content.len() <= max_bytes {
        return vec![chunk];
    }
    let verbatim = source.get(chunk.start_byte as usize..chunk.end_byte as usize) == Some(chunk.content.as_str());
    let header = label(chunk.signature.as_deref().map(crate::text::first_line).unwrap_or_default()).to_string();
    let part_name = label(&chunk.name).to_string();
    let part_budget = max_bytes.saturating_sub(header.len() + 1).max(MIN_PART_BYTES);
    let first_budget = max_bytes.max(MIN_PART_BYTES);

    let mut windows: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    while start < chunk.content.len() {
        let budget = if windows.is_empty() { first_budget } else { part_budget };
        let end = window_end(&chunk.content, start, budget);
        windows.push((start, end));
        start = end;
    }
    let total = windows.iter().filter(|(s, e)| !chunk.content[*s..*e].trim().is_empty()).count();

    let mut out = Vec::with_capacity(windows.len());
    let mut main = chunk.clone();
    let (first_start, first_end) = windows[0];
    main.content = chunk.content[first_start..first_end].to_string();
    out.push(main);
    let mut number = 1;
    for &(s, e) in &windows[1..] {
        let text = &chunk.content[s..e];
        if text.trim().is_empty() {
            continue;
        }
        number += 1;
        let span = if verbatim {
            lines.span(chunk.start_byte + to_u32(s), chunk.start_byte + to_u32(e))
        } else {
            Span { start_byte: chunk.start_byte, end_byte: chunk.end_byte, start_line: chunk.start_line, end_line: chunk.end_line }
        };
        let content = if header.is_empty() { text.to_string() } else { format!("{header}\n{text}") };
        out.push(Chunk {
            id: format!("{}#part{number}", chunk.id),
            kind: PART_KIND.to_string(),
            name: format!("{part_name} (part {number}/{total})"),
            qualified_name: None,
            parent: Some(chunk.id.clone()),
            start_line: span.start_line,
            end_line: span.end_line,
            start_byte: span.start_byte,
            end_byte: span.end_byte,
            content,
            signature: chunk.signature.as_ref().map(|s| if s.len() <= MAX_PART_LABEL_BYTES { s.clone() } else { header.clone() }),
            docstring: None,
            related_symbols: Vec::new(),
            references: Vec::new(),
            metadata: "{}".to_string(),
        });
    }
    out
}

/// `id` if it has at most [`MAX_ID_BYTES`], else its first bytes (cut at a
/// character boundary), `~` and a 64-bit FNV-1a hash of the whole id.
fn bounded_id(id: String) -> String {
    if id.len() <= MAX_ID_BYTES {
        return id;
    }
    let hash = id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    let mut end = MAX_ID_BYTES - 17;
    while !id.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}~{hash:016x}", &id[..end])
}

/// `text` cut to at most [`MAX_PART_LABEL_BYTES`], at a character boundary.
fn label(text: &str) -> &str {
    let mut end = text.len().min(MAX_PART_LABEL_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// End of the window starting at `start`: after the last whole line that
/// fits in `budget` bytes, or (for a single longer line) at the last
/// character boundary that fits.
fn window_end(text: &str, start: usize, budget: usize) -> usize {
    let mut limit = (start + budget).min(text.len());
    if limit == text.len() {
        return limit;
    }
    while !text.is_char_boundary(limit) {
        limit -= 1;
    }
    if let Some(newline) = text[start..limit].rfind('\n') {
        return start + newline + 1;
    }
    let mut end = limit;
    if end == start {
        // A budget smaller than one character: take the character anyway.
        end = start + text[start..].chars().next().map_or(1, char::len_utf8);
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn metadata_is_written_exactly_as_a_map_would_be() {
        let cases: Vec<Vec<(&str, Value)>> = vec![
            vec![],
            vec![("b", json!(1)), ("a", json!("x"))],
            vec![("k", json!(1)), ("a", json!(true)), ("k", json!([2, 3])), ("k", json!({"z": null, "y": "é\n\"q\""}))],
            vec![("é", json!("\u{1F642}\t")), ("E", json!(-1.5)), ("e", json!([])), ("", json!({}))],
            vec![("same", json!(1)), ("same", json!(2))],
        ];
        for entries in cases {
            let mut map = serde_json::Map::new();
            for (key, value) in &entries {
                map.insert((*key).to_string(), value.clone());
            }
            let owned = entries.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            assert_eq!(metadata_json(owned), serde_json::to_string(&Value::Object(map)).unwrap());
        }
    }

    /// An id longer than [`MAX_ID_BYTES`] is cut with a hash of the whole, the
    /// same for a parent named by the long id, and split parts repeat only
    /// the bounded one: the output grows with the file, not its square.
    #[test]
    fn long_ids_are_bounded_and_parents_follow() {
        let selector = format!("\"{}é\"", "a".repeat(300_000));
        let source = format!("{selector} {{\n{}}}\n", "  color: red;\n".repeat(20_000));
        let lines = LineIndex::new(&source);
        let mut set = ChunkSet::new(&source);
        let end = u32::try_from(source.len()).unwrap();
        let rule = set.push(ChunkBuilder::new("rule", selector.clone()).id(format!("rule:{selector}")).span(lines.span(0, end)).content(source.clone()));
        assert!(rule.len() <= MAX_ID_BYTES, "{}", rule.len());
        let other = set.push(ChunkBuilder::new("rule", "b").id(format!("rule:{selector}x")).span(lines.span(0, end)).content("b"));
        assert_ne!(rule, other, "different long ids stay different");
        set.push(ChunkBuilder::new("decl", "color").parent(Some(format!("rule:{selector}"))).span(lines.span(0, 10)).content("x"));
        let chunks = set.finish();
        assert!(chunks.len() > 100);
        // `#partN` may follow a bounded id.
        assert!(chunks.iter().all(|c| c.id.len() <= MAX_ID_BYTES + 16 && c.parent.as_ref().is_none_or(|p| p.len() <= MAX_ID_BYTES)));
        assert!(chunks.iter().filter_map(|c| c.parent.as_ref()).all(|p| chunks.iter().any(|c| &c.id == p)));
    }

    #[test]
    fn duplicate_ids_are_numbered() {
        let source = "ab";
        let mut set = ChunkSet::new(source);
        let span = LineIndex::new(source).span(0, 1);
        assert_eq!(set.push(ChunkBuilder::new("method", "x").qualified_name("C.x").span(span)), "method:C.x");
        assert_eq!(set.push(ChunkBuilder::new("method", "x").qualified_name("C.x").span(span)), "method:C.x#2");
    }

    #[test]
    fn long_single_line_is_cut_at_char_boundaries() {
        let source = "é".repeat(2000);
        let lines = LineIndex::new(&source);
        let mut set = ChunkSet::new(&source).with_max_bytes(usize::MAX);
        set.push(ChunkBuilder::new("module", "m").span(lines.span(0, to_u32(source.len()))));
        let parts = fit_window(set.finish().remove(0), &source, &lines, 300);
        let rebuilt: String = parts.iter().map(|p| p.content.as_str()).collect();
        assert_eq!(rebuilt, source);
        assert!(parts.iter().all(|p| p.content.len() <= 300));
    }

    /// Parts repeat a bounded piece of an enormous name and signature (a
    /// 100 KB composer package name took the plugin past its memory limit).
    #[test]
    fn parts_repeat_at_most_a_label_of_the_name_and_signature() {
        let huge = "é".repeat(50_000);
        let source = format!("{huge}\n{}", "x = 1\n".repeat(2_000));
        let lines = LineIndex::new(&source);
        let mut set = ChunkSet::new(&source).with_max_bytes(usize::MAX);
        set.push(ChunkBuilder::new("package", huge.clone()).span(lines.span(0, to_u32(source.len()))).signature(huge.clone()));
        let parts = fit_window(set.finish().remove(0), &source, &lines, MAX_CHUNK_BYTES);
        assert!(parts.len() > 5);
        for part in &parts[1..] {
            assert!(part.name.len() < MAX_PART_LABEL_BYTES + 30, "{}", part.name.len());
            assert!(part.signature.as_ref().is_some_and(|s| s.len() <= MAX_PART_LABEL_BYTES));
            assert!(part.content.len() <= MAX_CHUNK_BYTES, "{}", part.content.len());
        }
        let total: usize = parts.iter().map(|p| p.name.len() + p.content.len() + p.signature.as_ref().map_or(0, String::len)).sum();
        assert!(total < 4 * source.len(), "parts hold {total} bytes for {} of source", source.len());
    }

    #[test]
    fn skeleton_parts_share_the_parent_span() {
        let source = "class A:\n    pass\n";
        let lines = LineIndex::new(source);
        let mut set = ChunkSet::new(source).with_max_bytes(usize::MAX);
        let long: String = (0..50).map(|i| format!("    def m{i}(self): ...\n")).collect();
        set.push(ChunkBuilder::new("class", "A").span(lines.span(0, to_u32(source.len()))).content(long));
        let parts = fit_window(set.finish().remove(0), source, &lines, 300);
        assert!(parts.len() > 2);
        assert!(parts.iter().all(|p| (p.start_line, p.end_line) == (1, 2)));
    }
}
