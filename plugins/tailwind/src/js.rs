//! A tolerant reader for the object literals Tailwind configurations are
//! written in (JavaScript or TypeScript).
//!
//! The host has no JavaScript grammar yet, so this reads just enough of the
//! language: object and array literals, strings (including template
//! literals), numbers, comments, spreads, shorthand members, and anything
//! else (calls, arrow functions, identifiers) as an opaque expression kept
//! as source text. It never fails; what it cannot read becomes an expression.
//!
//! Objects and arrays nested deeper than [`MAX_DEPTH`] are kept as source
//! text too ([`Reader::too_deep`] says so): the reader recurses once per
//! level, and a plugin's WebAssembly stack holds a few thousand levels,
//! not the 36,000 a damaged file can have.

use std::cell::Cell;

/// Deepest object or array read as structure. Real configurations nest
/// less than ten levels (theme > extend > colors > brand > shade); deeper
/// literals are read as one expression, without recursion.
pub const MAX_DEPTH: u32 = 64;

/// A literal value with its byte range.
#[derive(Clone, Debug)]
pub struct Node {
    pub value: Value,
    pub start: usize,
    pub end: usize,
}

/// One member of an object literal.
#[derive(Clone, Debug)]
pub struct Member {
    /// The key (`...` for a spread).
    pub key: String,
    /// Where the member starts (its key).
    pub start: usize,
    pub value: Node,
}

#[derive(Clone, Debug)]
pub enum Value {
    Object(Vec<Member>),
    Array(Vec<Node>),
    Str(String),
    /// Numbers, identifiers, calls, functions, spreads: source text.
    Expr(String),
}

impl Node {
    /// The member `key` of an object.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Member> {
        match &self.value {
            Value::Object(members) => members.iter().find(|m| m.key == key),
            _ => None,
        }
    }

    /// The value as display text: a string's content, an expression's source.
    #[must_use]
    pub fn text(&self) -> String {
        match &self.value {
            Value::Str(s) | Value::Expr(s) => s.clone(),
            Value::Array(items) => items.iter().map(Node::text).collect::<Vec<_>>().join(", "),
            Value::Object(_) => "{…}".into(),
        }
    }
}

/// Reads source text.
pub struct Reader<'s> {
    src: &'s str,
    b: &'s [u8],
    /// Objects and arrays open around the value being read.
    depth: Cell<u32>,
    /// Whether a literal nested deeper than [`MAX_DEPTH`] was kept as text.
    too_deep: Cell<bool>,
}

impl<'s> Reader<'s> {
    #[must_use]
    pub fn new(src: &'s str) -> Self {
        Self { src, b: src.as_bytes(), depth: Cell::new(0), too_deep: Cell::new(false) }
    }

    /// Whether some object or array was nested deeper than [`MAX_DEPTH`]
    /// and read as source text instead of structure.
    #[must_use]
    pub fn too_deep(&self) -> bool {
        self.too_deep.get()
    }

    /// Index of the character after the one at `i`: a value that is only
    /// Unicode whitespace (U+2028, which `trim` removes) ends where it starts,
    /// and stepping one byte past it landed inside the character.
    fn next_char(&self, i: usize) -> usize {
        i + self.src.get(i..).and_then(|rest| rest.chars().next()).map_or(1, char::len_utf8)
    }

    /// Skips whitespace and comments from `i` (rounded up to a character
    /// boundary, so no caller can slice inside a character).
    #[must_use]
    pub fn skip(&self, i: usize) -> usize {
        let mut i = self.src.ceil_char_boundary(i);
        loop {
            while i < self.b.len() && self.b[i].is_ascii_whitespace() {
                i += 1;
            }
            if self.b[i..].starts_with(b"//") {
                i = self.src[i..].find('\n').map_or(self.b.len(), |e| i + e + 1);
            } else if self.b[i..].starts_with(b"/*") {
                i = self.src[i + 2..].find("*/").map_or(self.b.len(), |e| i + 2 + e + 2);
            } else {
                return i;
            }
        }
    }

    /// Reads a value at `i` (after whitespace).
    #[must_use]
    pub fn value(&self, i: usize) -> Node {
        let i = self.skip(i);
        let nested = matches!(self.b.get(i), Some(b'{' | b'['));
        if nested && self.depth.get() >= MAX_DEPTH {
            self.too_deep.set(true);
            let end = self.expression_end(i);
            return Node { value: Value::Expr(self.src[i..end].trim().to_string()), start: i, end };
        }
        if nested {
            self.depth.set(self.depth.get() + 1);
        }
        let node = self.value_here(i);
        if nested {
            self.depth.set(self.depth.get() - 1);
        }
        node
    }

    /// Reads the value at `i` (whitespace already skipped).
    fn value_here(&self, i: usize) -> Node {
        match self.b.get(i) {
            Some(b'{') => self.object(i),
            Some(b'[') => self.array(i),
            Some(q @ (b'\'' | b'"' | b'`')) => {
                let end = self.string_end(i, *q);
                let inner = self.src.get(i + 1..end.saturating_sub(1)).unwrap_or_default();
                Node { value: Value::Str(inner.to_string()), start: i, end }
            }
            _ => {
                let end = self.expression_end(i);
                Node { value: Value::Expr(self.src[i..end].trim().to_string()), start: i, end }
            }
        }
    }

    /// Index just past the string starting at `i`.
    fn string_end(&self, i: usize, quote: u8) -> usize {
        let mut j = i + 1;
        while j < self.b.len() {
            if self.b[j] == b'\\' {
                j += 2;
                continue;
            }
            if self.b[j] == quote {
                return j + 1;
            }
            j += 1;
        }
        self.b.len()
    }

    /// End of an expression: the next top-level `,`, `}`, `]` or `)` (not consumed).
    fn expression_end(&self, i: usize) -> usize {
        let i = self.src.ceil_char_boundary(i);
        let mut depth = 0i32;
        let mut j = i;
        while j < self.b.len() {
            let c = self.b[j];
            match c {
                b'\'' | b'"' | b'`' => {
                    j = self.string_end(j, c);
                    continue;
                }
                b'/' if self.b[j..].starts_with(b"//") || self.b[j..].starts_with(b"/*") => {
                    if depth == 0 {
                        let trimmed = self.src[i..j].trim_end().len();
                        return i + trimmed;
                    }
                    j = self.skip(j);
                    continue;
                }
                b'{' | b'[' | b'(' => depth += 1,
                b'}' | b']' | b')' => {
                    if depth == 0 {
                        return i + self.src[i..j].trim_end().len();
                    }
                    depth -= 1;
                }
                b',' | b';' if depth == 0 => return i + self.src[i..j].trim_end().len(),
                _ => {}
            }
            j += 1;
        }
        self.b.len()
    }

    fn array(&self, start: usize) -> Node {
        let mut items = Vec::new();
        let mut i = start + 1;
        loop {
            i = self.skip(i);
            match self.b.get(i) {
                None => return Node { value: Value::Array(items), start, end: self.b.len() },
                Some(b']') => return Node { value: Value::Array(items), start, end: i + 1 },
                Some(b',') => i += 1,
                _ => {
                    let item = self.value(i);
                    i = item.end.max(self.next_char(i));
                    items.push(item);
                }
            }
        }
    }

    fn object(&self, start: usize) -> Node {
        let mut members = Vec::new();
        let mut i = start + 1;
        loop {
            i = self.skip(i);
            match self.b.get(i) {
                None => return Node { value: Value::Object(members), start, end: self.b.len() },
                Some(b'}') => return Node { value: Value::Object(members), start, end: i + 1 },
                Some(b',') => {
                    i += 1;
                    continue;
                }
                _ => {}
            }
            let member_start = i;
            if self.b[i..].starts_with(b"...") {
                let value = self.value(i);
                i = value.end.max(i + 3);
                members.push(Member { key: "...".into(), start: member_start, value });
                continue;
            }
            let (key, after_key) = self.key(i);
            let j = self.skip(after_key);
            if self.b.get(j) == Some(&b':') {
                let value = self.value(j + 1);
                i = value.end.max(j + 1);
                members.push(Member { key, start: member_start, value });
            } else {
                // Shorthand `forms,` or a method `foo() { ... }`: keep the source.
                let end = self.expression_end(member_start);
                let end = end.max(after_key);
                let text = self.src[member_start..end].trim().to_string();
                members.push(Member { key, start: member_start, value: Node { value: Value::Expr(text), start: member_start, end } });
                i = end.max(self.next_char(member_start));
            }
        }
    }

    /// An object key: identifier, string, number or `[computed]`.
    fn key(&self, i: usize) -> (String, usize) {
        match self.b.get(i) {
            Some(q @ (b'\'' | b'"' | b'`')) => {
                let end = self.string_end(i, *q);
                (self.src.get(i + 1..end.saturating_sub(1)).unwrap_or_default().to_string(), end)
            }
            Some(b'[') => {
                let end = self.src[i..].find(']').map_or(self.b.len(), |e| i + e + 1);
                (self.src[i..end].to_string(), end)
            }
            _ => {
                let mut end = i;
                while end < self.b.len() && (self.b[end].is_ascii_alphanumeric() || matches!(self.b[end], b'_' | b'$' | b'-' | b'.')) {
                    end += 1;
                }
                if end == i {
                    // One character, whole: a non-ASCII one (or the U+FFFD
                    // that replaced invalid UTF-8) is several bytes.
                    end = i + self.src.get(i..).and_then(|rest| rest.chars().next()).map_or(1, char::len_utf8);
                }
                (self.src.get(i..end).unwrap_or_default().to_string(), end)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_nested_literals_with_comments_spreads_and_calls() {
        let src = "{ // c\n content: ['./a/**/*.php', \"b\"], theme: { extend: { colors: { brand: { 100: '#fff' }, ink: `#000` }, fontFamily: { sans: ['Inter', ...defaultTheme.fontFamily.sans] } } }, plugins: [require('@tailwindcss/forms'), typography({ x: 1 })], forms, }";
        let root = Reader::new(src).value(0);
        let content = &root.get("content").unwrap().value;
        assert!(matches!(&content.value, Value::Array(items) if items.len() == 2));
        let extend = &root.get("theme").unwrap().value.get("extend").unwrap().value;
        let colors = &extend.get("colors").unwrap().value;
        assert_eq!(colors.get("brand").unwrap().value.get("100").unwrap().value.text(), "#fff");
        assert_eq!(colors.get("ink").unwrap().value.text(), "#000");
        let sans = &extend.get("fontFamily").unwrap().value.get("sans").unwrap().value;
        assert_eq!(sans.text(), "Inter, ...defaultTheme.fontFamily.sans");
        let plugins = &root.get("plugins").unwrap().value;
        assert_eq!(plugins.text(), "require('@tailwindcss/forms'), typography({ x: 1 })");
        assert_eq!(root.get("forms").unwrap().value.text(), "forms");
        assert_eq!(root.end, src.len());
    }

    /// Found by the fuzzer: an array item or shorthand member that is only
    /// Unicode whitespace (U+2028 after a name) ended where it started, and
    /// the reader stepped one byte into it.
    #[test]
    fn unicode_whitespace_between_items_is_stepped_over_whole() {
        for src in ["{ plugins: [forms\u{3a9}\u{2028}, typography] }", "{ a: [\u{2028}, b] }", "{ forms\u{2028}, x: 1 }", "[\u{2028}\u{2028}]"] {
            let root = Reader::new(src).value(0);
            assert_eq!(root.end, src.len(), "{src:?}");
        }
    }

    /// Non-ASCII text anywhere (and U+FFFD, which stands for invalid UTF-8 in
    /// what the host hands over) is read without slicing inside a
    /// character; it used to panic on a bare non-ASCII character.
    #[test]
    fn non_ascii_anywhere_is_read_without_panicking() {
        let config = "{ content: ['./a/**/*.php', \"b\"], theme: { extend: { colors: { brand: { 100: '#fff' } } } }, x: y.z, /* c */ w: [1, ...s], // e\n plugins: [require('p')] }";
        for insert in ["\u{FFFD}", "é", "日本", "😀"] {
            for at in (0..=config.len()).filter(|i| config.is_char_boundary(*i)) {
                let src = format!("{}{insert}{}", &config[..at], &config[at..]);
                let _ = Reader::new(&src).value(0);
            }
        }
        let root = Reader::new("{ a: é, b: 日本 }").value(0);
        assert!(root.get("a").is_some(), "{root:?}");
    }

    /// Found by the fuzzer: 36,000 nested `[` ran the plugin out of
    /// WebAssembly stack (one recursion per level). Past `MAX_DEPTH` the
    /// rest is one expression, read without recursion, and the reader says so.
    #[test]
    fn nesting_past_the_limit_is_read_as_text_without_recursion() {
        for (open, close) in [("[", "]"), ("{ a: ", " }"), ("[{ b: ", "}]")] {
            for closed in [true, false] {
                let depth = 200_000;
                let src = format!("{{ theme: {}1{}, plugins: [forms] }}", open.repeat(depth), if closed { close.repeat(depth) } else { String::new() });
                let reader = Reader::new(&src);
                let root = reader.value(0);
                assert!(reader.too_deep(), "{open:?} closed={closed}");
                assert!(root.get("theme").is_some());
                if closed {
                    assert_eq!(root.end, src.len());
                    assert_eq!(root.get("plugins").map(|m| m.value.text()).as_deref(), Some("forms"), "{open:?}");
                }
            }
        }
        // Up to the limit, structure is kept.
        let src = format!("{}1{}", "[".repeat(MAX_DEPTH as usize), "]".repeat(MAX_DEPTH as usize));
        let reader = Reader::new(&src);
        let mut node = reader.value(0);
        assert!(!reader.too_deep());
        for _ in 1..MAX_DEPTH {
            let Value::Array(mut items) = node.value else { panic!("not an array") };
            node = items.remove(0);
        }
        assert!(matches!(&node.value, Value::Array(items) if items[0].text() == "1"), "{node:?}");
    }
}
