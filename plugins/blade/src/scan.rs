//! A tolerant, single-pass scanner for Blade templates.
//!
//! The host has no HTML grammar, and the `php` grammar sees a Blade file as
//! one `text` node (Blade is not PHP until it is compiled), so a template is
//! read here: Blade comments, echoes, directives with balanced arguments,
//! HTML comments, open/close tags with their attributes, and raw
//! `<script>`/`<style>`/`@verbatim`/`@php` bodies that must not be read as
//! markup. It never fails: anything it does not recognise is text.
//!
//! Everything it looks for is ASCII, so it steps through bytes and compares
//! bytes (`b[i..].starts_with(b"{{")`): a byte offset inside a multi-byte
//! character (accented text, a BOM, CJK) is never used to slice the `str`.
//! Every range it returns starts and ends on an ASCII byte it matched, or at
//! the end of the source, so callers may slice the `str` with them.

/// One thing the scanner found, with its byte range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Token {
    /// `@name` or `@name(args)`; `args` is the text inside the parentheses.
    Directive { name: String, args: Option<String>, start: usize, end: usize },
    /// `<name attrs>`; `self_closing` for `<name ... />`.
    Open { name: String, attrs: Vec<(String, Option<String>)>, self_closing: bool, start: usize, end: usize },
    /// `</name>`.
    Close { name: String, start: usize, end: usize },
}

/// Byte ranges the scanner treats as comments (Blade `{{-- --}}` and HTML `<!-- -->`).
pub type Comments = Vec<(usize, usize)>;

/// Scans `source` into tokens (document order) and comment ranges.
#[must_use]
pub fn scan(source: &str) -> (Vec<Token>, Comments) {
    let b = source.as_bytes();
    let mut tokens = Vec::new();
    let mut comments = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"{{--") {
            let end = find(source, i + 4, "--}}").map_or(b.len(), |e| e + 4);
            comments.push((i, end));
            i = end;
        } else if rest.starts_with(b"{{") {
            i = find(source, i + 2, "}}").map_or(b.len(), |e| e + 2);
        } else if rest.starts_with(b"{!!") {
            i = find(source, i + 3, "!!}").map_or(b.len(), |e| e + 3);
        } else if b[i] == b'@' {
            i = directive(source, i, &mut tokens);
        } else if rest.starts_with(b"<!--") {
            let end = find(source, i + 4, "-->").map_or(b.len(), |e| e + 3);
            comments.push((i, end));
            i = end;
        } else if b[i] == b'<' {
            i = tag(source, i, &mut tokens);
        } else {
            i += 1;
        }
    }
    (tokens, comments)
}

fn find(source: &str, from: usize, needle: &str) -> Option<usize> {
    source.get(from..)?.find(needle).map(|p| from + p)
}

fn is_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Reads a directive at `at` (a `@`); returns where scanning continues.
fn directive(source: &str, at: usize, tokens: &mut Vec<Token>) -> usize {
    let b = source.as_bytes();
    if b.get(at + 1) == Some(&b'@') {
        return at + 2; // `@@if` is an escaped, literal `@if`.
    }
    if at > 0 && (is_name_byte(b[at - 1]) || b[at - 1] == b'.') {
        return at + 1; // an e-mail address, not a directive
    }
    let mut end = at + 1;
    while end < b.len() && is_name_byte(b[end]) {
        end += 1;
    }
    if end == at + 1 || !b[at + 1].is_ascii_alphabetic() {
        return at + 1;
    }
    let name = source[at + 1..end].to_string();
    let mut after = end;
    while after < b.len() && (b[after] == b' ' || b[after] == b'\t') {
        after += 1;
    }
    let mut args = None;
    if b.get(after) == Some(&b'(') {
        if let Some(close) = balanced(source, after) {
            args = Some(source[after + 1..close].to_string());
            end = close + 1;
        }
    }
    let skip_to = match (name.as_str(), &args) {
        ("verbatim", _) => Some("@endverbatim"),
        ("php", None) => Some("@endphp"),
        _ => None,
    };
    tokens.push(Token::Directive { name, args, start: at, end });
    match skip_to.and_then(|needle| find(source, end, needle)) {
        Some(body_end) => body_end,
        None => end,
    }
}

/// Index of the `)` closing the `(` at `open`, skipping quoted strings.
fn balanced(source: &str, open: usize) -> Option<usize> {
    let b = source.as_bytes();
    let mut depth = 0i32;
    let mut quote: Option<u8> = None;
    let mut i = open;
    while i < b.len() {
        let c = b[i];
        if let Some(q) = quote {
            if c == b'\\' {
                i += 1;
            } else if c == q {
                quote = None;
            }
        } else if c == b'\'' || c == b'"' {
            quote = Some(c);
        } else if c == b'(' {
            depth += 1;
        } else if c == b')' {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
        i += 1;
    }
    None
}

fn is_tag_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b':' | b'.')
}

/// Reads a tag at `at` (a `<`); returns where scanning continues.
fn tag(source: &str, at: usize, tokens: &mut Vec<Token>) -> usize {
    let b = source.as_bytes();
    let closing = b.get(at + 1) == Some(&b'/');
    let name_start = if closing { at + 2 } else { at + 1 };
    if !b.get(name_start).is_some_and(u8::is_ascii_alphabetic) {
        return at + 1;
    }
    let mut name_end = name_start;
    while name_end < b.len() && is_tag_name_byte(b[name_end]) {
        name_end += 1;
    }
    let name = source[name_start..name_end].to_string();
    let Some(end) = tag_end(source, name_end) else { return at + 1 };
    if closing {
        tokens.push(Token::Close { name, start: at, end: end + 1 });
        return end + 1;
    }
    let self_closing = end > name_end && b[end - 1] == b'/';
    let attr_text = &source[name_end..if self_closing { end - 1 } else { end }];
    let lower = name.to_ascii_lowercase();
    tokens.push(Token::Open { name, attrs: attributes(attr_text), self_closing, start: at, end: end + 1 });
    if !self_closing && (lower == "script" || lower == "style") {
        // Raw text: skip to the closing tag so `<` in code is not read as markup.
        if let Some(close) = source[end + 1..].to_ascii_lowercase().find(&format!("</{lower}")) {
            return end + 1 + close;
        }
    }
    end + 1
}

/// Index of the `>` ending a tag whose name ends at `from`: quotes and
/// Blade echoes inside attribute values may contain `>`.
fn tag_end(source: &str, from: usize) -> Option<usize> {
    let b = source.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = from;
    while i < b.len() {
        let c = b[i];
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
        } else if b[i..].starts_with(b"{{") {
            i = find(source, i + 2, "}}").map_or(b.len(), |e| e + 1);
        } else if c == b'"' || c == b'\'' {
            quote = Some(c);
        } else if c == b'>' {
            return Some(i);
        } else if c == b'<' && b.get(i + 1).is_some_and(|n| n.is_ascii_alphabetic() || *n == b'/') {
            return None; // an unterminated tag: give up on it
        }
        i += 1;
    }
    None
}

/// `name="value"` pairs of a tag, in order (values unquoted, bare names with `None`).
fn attributes(text: &str) -> Vec<(String, Option<String>)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'=' {
            if b[i..].starts_with(b"{{") {
                i = text[i..].find("}}").map_or(b.len(), |e| i + e + 2);
                continue;
            }
            i += 1;
        }
        if i == start {
            i += 1;
            continue;
        }
        let name = text[start..i].to_string();
        let mut value = None;
        if i < b.len() && b[i] == b'=' {
            i += 1;
            if i < b.len() && (b[i] == b'"' || b[i] == b'\'') {
                let q = b[i];
                let vstart = i + 1;
                let vend = text[vstart..].find(q as char).map_or(b.len(), |e| vstart + e);
                value = Some(text[vstart..vend].to_string());
                i = vend + 1;
            } else {
                let vstart = i;
                while i < b.len() && !b[i].is_ascii_whitespace() {
                    i += 1;
                }
                value = Some(text[vstart..i].to_string());
            }
        }
        out.push((name, value));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_tags_and_comments() {
        let src = "{{-- <nav> @section('x') --}}\n@section('title', 'Hi')\n<form id=\"f\" action=\"{{ route('a') }}\"><x-alert :m=\"$a > 1\" /></form> mail@example.com @@if";
        let (tokens, comments) = scan(src);
        assert_eq!(comments.len(), 1);
        let names: Vec<String> = tokens
            .iter()
            .map(|t| match t {
                Token::Directive { name, .. } => format!("@{name}"),
                Token::Open { name, self_closing, .. } => format!("<{name}{}", if *self_closing { "/" } else { "" }),
                Token::Close { name, .. } => format!("</{name}"),
            })
            .collect();
        assert_eq!(names, ["@section", "<form", "<x-alert/", "</form"]);
        match &tokens[1] {
            Token::Open { attrs, .. } => assert_eq!(attrs[0], ("id".to_string(), Some("f".to_string()))),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn script_bodies_and_verbatim_are_not_markup() {
        let src = "<script>if (a < b) { x('<div id=\"no\">'); }</script>@verbatim <nav id=\"no\"> @endverbatim<p>";
        let (tokens, _) = scan(src);
        let opens: Vec<&str> =
            tokens.iter().filter_map(|t| if let Token::Open { name, .. } = t { Some(name.as_str()) } else { None }).collect();
        assert_eq!(opens, ["script", "p"]);
    }

    /// Multi-byte characters anywhere (a BOM, accented text, CJK, an emoji) are
    /// text: the scanner steps over them without slicing inside one, and
    /// still finds what surrounds them.
    #[test]
    fn non_ascii_text_anywhere_is_scanned_without_panicking() {
        let template = "{{-- c --}}@section('t', 'x')<div id=\"a\" class=\"{{ $c }}\" data-x=y>{{ $v }}{!! $h !!}<!-- h --></div>@endsection<script>a<b</script>@verbatim<p>@endverbatim mail@example.com<x-a :m=\"1\"/>";
        let boundaries: Vec<usize> = (0..=template.len()).filter(|i| template.is_char_boundary(*i)).collect();
        for insert in ["\u{feff}", "é", "€", "日本語", "😀"] {
            for &at in &boundaries {
                let src = format!("{}{insert}{}", &template[..at], &template[at..]);
                let (tokens, comments) = scan(&src);
                for t in &tokens {
                    let (Token::Directive { start, end, .. } | Token::Open { start, end, .. } | Token::Close { start, end, .. }) = t;
                    assert!(src.is_char_boundary(*start) && src.is_char_boundary(*end), "{src:?}: {t:?}");
                }
                for (start, end) in &comments {
                    assert!(src.is_char_boundary(*start) && src.is_char_boundary(*end), "{src:?}");
                }
            }
        }
        let (tokens, _) = scan("\u{feff}<div>\n  Prix : 5 €\n</div>\n");
        assert_eq!(tokens.len(), 2, "{tokens:?}");
    }
}
