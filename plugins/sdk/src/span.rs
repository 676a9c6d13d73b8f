//! Byte and line ranges of chunks.

use crate::{Capture, Node};

/// A range of the file: bytes half-open, lines 1-based and inclusive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    pub start_byte: u32,
    pub end_byte: u32,
    pub start_line: u32,
    pub end_line: u32,
}

impl Span {
    /// The span of a captured node (a [`Capture`] or a [`Node`]).
    #[must_use]
    pub fn of(node: impl Into<Self>) -> Self {
        node.into()
    }

    /// The smallest span covering both.
    #[must_use]
    pub fn join(self, other: Self) -> Self {
        let (start_byte, start_line) = if other.start_byte < self.start_byte {
            (other.start_byte, other.start_line)
        } else {
            (self.start_byte, self.start_line)
        };
        let (end_byte, end_line) = if other.end_byte > self.end_byte {
            (other.end_byte, other.end_line)
        } else {
            (self.end_byte, self.end_line)
        };
        Self { start_byte, end_byte, start_line, end_line }
    }

    /// True when `other` lies within this span (equal spans contain each other).
    #[must_use]
    pub fn contains(&self, other: &Self) -> bool {
        self.start_byte <= other.start_byte && other.end_byte <= self.end_byte
    }

    /// True when the byte offset lies within this span.
    #[must_use]
    pub fn contains_byte(&self, byte: u32) -> bool {
        self.start_byte <= byte && byte < self.end_byte
    }

    /// The span's bytes as a `usize` range, for slicing the source.
    #[must_use]
    pub fn range(&self) -> std::ops::Range<usize> {
        self.start_byte as usize..self.end_byte as usize
    }

    /// The source text of the span (empty if the span is out of range or cuts
    /// a character, which a host-produced span never does).
    #[must_use]
    pub fn text<'s>(&self, source: &'s str) -> &'s str {
        source.get(self.range()).unwrap_or_default()
    }
}

impl From<&Capture> for Span {
    fn from(c: &Capture) -> Self {
        Self { start_byte: c.start_byte, end_byte: c.end_byte, start_line: c.start_line, end_line: c.end_line }
    }
}

impl From<Node<'_>> for Span {
    fn from(n: Node<'_>) -> Self {
        Self { start_byte: n.start_byte, end_byte: n.end_byte, start_line: n.start_line, end_line: n.end_line }
    }
}

impl From<&Node<'_>> for Span {
    fn from(n: &Node<'_>) -> Self {
        Self::from(*n)
    }
}

/// The comments that document whatever starts at byte `start`: the run of
/// `comments` (sorted by start) directly above it, each separated from the
/// next, and the last from `start`, by whitespace holding exactly one line
/// break. Returned top to bottom; empty when the line above `start` is not a
/// comment. The first one's start is where a chunk that includes its doc
/// comment begins.
///
/// ```
/// use code_intel_plugin_sdk::{comments_above, Span};
/// let source = "// a\n\n// b\n// c\nfn f() {}\n";
/// let at = |s: &str| source.find(s).unwrap() as u32;
/// let comment = |s: &str| Span { start_byte: at(s), end_byte: at(s) + 4, ..Span::default() };
/// let comments = [comment("// a"), comment("// b"), comment("// c")];
/// let run = comments_above(source, &comments, at("fn f"));
/// assert_eq!(run.iter().map(|c| c.text(source)).collect::<Vec<_>>(), ["// b", "// c"]);
/// ```
#[must_use]
pub fn comments_above<'c>(source: &str, comments: &'c [Span], start: u32) -> &'c [Span] {
    let end = comments.partition_point(|c| c.end_byte <= start);
    let mut first = end;
    let mut next_start = start;
    while first > 0 {
        let c = &comments[first - 1];
        let gap = source.get(c.end_byte as usize..next_start as usize).unwrap_or("x");
        if !gap.trim().is_empty() || gap.matches('\n').count() != 1 {
            break;
        }
        first -= 1;
        next_start = c.start_byte;
    }
    &comments[first..end]
}

/// Maps byte offsets to 1-based line numbers, for spans a plugin computes
/// itself (parts of an oversized chunk, ranges found by text scanning).
///
/// ```
/// use code_intel_plugin_sdk::LineIndex;
/// let lines = LineIndex::new("a\nbb\nccc");
/// assert_eq!(lines.line_of(0), 1);
/// assert_eq!(lines.line_of(3), 2);
/// assert_eq!(lines.line_of(8), 3);
/// let span = lines.span(2, 9);
/// assert_eq!((span.start_line, span.end_line), (2, 3));
/// ```
#[derive(Clone, Debug)]
pub struct LineIndex {
    /// Byte offset where each line starts; `line_starts[0] == 0`.
    line_starts: Vec<u32>,
}

impl LineIndex {
    /// Indexes the line starts of `source`.
    #[must_use]
    pub fn new(source: &str) -> Self {
        // Every plugin indexes every file it chunks, so this looks at eight
        // bytes at a time: WebAssembly has no vectorised newline search.
        const LOW_SEVEN: u64 = 0x7f7f_7f7f_7f7f_7f7f;
        const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
        const NEWLINES: u64 = 0x0a0a_0a0a_0a0a_0a0a;
        let bytes = source.as_bytes();
        let mut line_starts = Vec::with_capacity(bytes.len() / 32 + 1);
        line_starts.push(0);
        let mut words = bytes.chunks_exact(8);
        let mut offset = 0;
        for word in &mut words {
            let x = u64::from_le_bytes(word.try_into().unwrap_or_default()) ^ NEWLINES;
            // The high bit of each byte that is zero in `x` (a newline), and
            // of no other: the addition cannot carry from byte to byte.
            let mut newlines = !(((x & LOW_SEVEN) + LOW_SEVEN) | x) & HIGH_BITS;
            while newlines != 0 {
                line_starts.push(to_u32(offset + newlines.trailing_zeros() as usize / 8 + 1));
                newlines &= newlines - 1;
            }
            offset += 8;
        }
        for (i, &b) in words.remainder().iter().enumerate() {
            if b == b'\n' {
                line_starts.push(to_u32(offset + i + 1));
            }
        }
        Self { line_starts }
    }

    /// The 1-based line containing byte `offset`.
    #[must_use]
    pub fn line_of(&self, offset: u32) -> u32 {
        let index = self.line_starts.partition_point(|&start| start <= offset);
        to_u32(index.max(1))
    }

    /// The span of bytes `start..end`; its end line is the line of its last
    /// byte (a range ending just after a newline ends on that newline's line).
    #[must_use]
    pub fn span(&self, start: u32, end: u32) -> Span {
        let last = if end > start { end - 1 } else { start };
        Span { start_byte: start, end_byte: end, start_line: self.line_of(start), end_line: self.line_of(last) }
    }
}

pub(crate) fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A union of byte ranges with fast membership: "is this identifier inside
/// any type annotation / import statement / string?".
///
/// ```
/// use code_intel_plugin_sdk::{LineIndex, SpanSet};
/// let lines = LineIndex::new("0123456789");
/// let set = SpanSet::new([lines.span(2, 4), lines.span(3, 6), lines.span(8, 9)]);
/// assert!(set.contains_byte(5) && set.contains_byte(8));
/// assert!(!set.contains_byte(6) && !set.contains_byte(1) && !set.contains_byte(9));
/// ```
#[derive(Clone, Debug, Default)]
pub struct SpanSet {
    /// Disjoint, sorted `(start, end)` byte ranges.
    ranges: Vec<(u32, u32)>,
}

impl SpanSet {
    /// The union of `spans`.
    pub fn new(spans: impl IntoIterator<Item = Span>) -> Self {
        let mut all: Vec<(u32, u32)> = spans.into_iter().map(|s| (s.start_byte, s.end_byte)).collect();
        all.sort_unstable();
        let mut ranges: Vec<(u32, u32)> = Vec::with_capacity(all.len());
        for (start, end) in all {
            match ranges.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => ranges.push((start, end)),
            }
        }
        Self { ranges }
    }

    /// True when some span contains byte `at`.
    #[must_use]
    pub fn contains_byte(&self, at: u32) -> bool {
        let i = self.ranges.partition_point(|&(start, _)| start <= at);
        i > 0 && at < self.ranges[i - 1].1
    }
}

#[cfg(test)]
mod tests {
    use super::LineIndex;

    #[test]
    fn line_starts_are_found_at_every_offset_and_only_at_newlines() {
        // Newlines at every position within and across eight-byte words,
        // between multi-byte characters and bytes one off from `\n`.
        let pieces = ["\n", "a", "é", "\t", "\u{b}", "\u{8a}", "€\n", "\n\n", "xyz\r\n", "\u{10a0a}"];
        let mut source = String::new();
        for i in 0..400usize {
            source.push_str(pieces[(i * 7 + i / 3) % pieces.len()]);
            let expected: Vec<u32> = std::iter::once(0)
                .chain(source.bytes().enumerate().filter(|&(_, b)| b == b'\n').map(|(i, _)| u32::try_from(i + 1).unwrap()))
                .collect();
            assert_eq!(LineIndex::new(&source).line_starts, expected, "{source:?}");
        }
        assert_eq!(LineIndex::new("").line_starts, [0]);
    }
}
