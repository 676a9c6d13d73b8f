//! Text helpers: docstrings, docblocks, signatures, skeletons, identifiers.

use std::ops::Range;

/// Cleans a Python string literal used as a docstring: drops the prefix
/// (`r`, `u`, `b`, `f`) and quotes, then dedents like `inspect.cleandoc`.
///
/// ```
/// use code_intel_plugin_sdk::text::python_docstring;
/// let literal = "r\"\"\"Fetch a user.\n\n    Args:\n        id: the key\n    \"\"\"";
/// assert_eq!(python_docstring(literal), "Fetch a user.\n\nArgs:\n    id: the key");
/// ```
#[must_use]
pub fn python_docstring(literal: &str) -> String {
    let body = literal.trim_start_matches(|c: char| "rRuUbBfF".contains(c));
    let body = ["\"\"\"", "'''", "\"", "'"]
        .iter()
        .find_map(|q| body.strip_prefix(q).and_then(|b| b.strip_suffix(q)))
        .unwrap_or(body);
    cleandoc(body)
}

/// Dedents text the way Python's `inspect.cleandoc` does: the first line's
/// leading whitespace is dropped, the common indentation of the other lines
/// removed, and leading and trailing blank lines dropped.
///
/// ```
/// use code_intel_plugin_sdk::text::cleandoc;
/// assert_eq!(cleandoc("  Title\n      body\n        more\n  "), "Title\nbody\n  more");
/// ```
#[must_use]
pub fn cleandoc(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let indent = lines
        .iter()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let cleaned: Vec<String> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                l.trim().to_string()
            } else {
                l.get(indent..).unwrap_or_else(|| l.trim_start()).trim_end().to_string()
            }
        })
        .collect();
    let first = cleaned.iter().position(|l| !l.is_empty()).unwrap_or(cleaned.len());
    let last = cleaned.iter().rposition(|l| !l.is_empty()).map_or(first, |i| i + 1);
    cleaned[first..last.max(first)].join("\n")
}

/// Cleans a C-style doc comment (`/** ... */`, as in PHP, Java, JS): drops
/// the markers and the leading `*` of each line, keeps tags like `@param`.
/// Returns `None` for a comment that is not a docblock (`//`, `#`, `/* */`).
///
/// ```
/// use code_intel_plugin_sdk::text::docblock;
/// let comment = "/**\n     * Creates an order.\n     *\n     * @param array $items\n     */";
/// assert_eq!(docblock(comment).as_deref(), Some("Creates an order.\n\n@param array $items"));
/// assert_eq!(docblock("// not a docblock"), None);
/// ```
#[must_use]
pub fn docblock(comment: &str) -> Option<String> {
    let body = comment.trim().strip_prefix("/**")?.strip_suffix("*/")?;
    let lines: Vec<String> = body
        .lines()
        .map(|l| {
            let l = l.trim();
            let l = l.strip_prefix('*').unwrap_or(l);
            l.strip_prefix(' ').unwrap_or(l).trim_end().to_string()
        })
        .collect();
    let text = cleandoc(&lines.join("\n"));
    (!text.is_empty()).then_some(text)
}

/// The first line of `text`, trimmed.
#[must_use]
pub fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default().trim()
}

/// `prefix` and `name` joined by `separator`, or `name` alone when `prefix`
/// is empty: how plugins build qualified names (`app.models` + `User`,
/// `App\Models` + `User`). Plugins call it once per definition and per
/// resolved use, so it joins with `concat`: `format!` goes through the
/// formatting machinery, several times slower in WebAssembly.
///
/// ```
/// use code_intel_plugin_sdk::text::qualified;
/// assert_eq!(qualified("app.models", ".", "User"), "app.models.User");
/// assert_eq!(qualified("", "\\", "User"), "User");
/// ```
#[must_use]
pub fn qualified(prefix: &str, separator: &str, name: &str) -> String {
    if prefix.is_empty() { name.to_string() } else { [prefix, separator, name].concat() }
}

/// Collapses every run of whitespace to one space: a multi-line signature
/// on one line.
///
/// ```
/// use code_intel_plugin_sdk::text::one_line;
/// assert_eq!(one_line("def f(\n    a,\n    b,\n):"), "def f( a, b, ):");
/// ```
#[must_use]
pub fn one_line(text: &str) -> String {
    let mut line = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    line
}

/// Copies `source[range]` with the given sub-ranges replaced: how a plugin
/// builds a skeleton (a class with its method bodies replaced by `...`).
/// Holes must lie inside `range`; overlapping or nested holes are skipped
/// after the first (the outer one wins when sorted by start).
///
/// ```
/// use code_intel_plugin_sdk::text::elide;
/// let src = "class A:\n    def f(self):\n        return 1\n";
/// let body = src.find("return").unwrap()..src.len() - 1;
/// assert_eq!(elide(src, 0..src.len(), &[(body, "...")]), "class A:\n    def f(self):\n        ...\n");
/// ```
#[must_use]
pub fn elide(source: &str, range: Range<usize>, holes: &[(Range<usize>, &str)]) -> String {
    let mut holes: Vec<&(Range<usize>, &str)> = holes.iter().collect();
    holes.sort_by_key(|(r, _)| (r.start, std::cmp::Reverse(r.end)));
    let mut out = String::with_capacity(range.len());
    let mut at = range.start;
    for (hole, replacement) in holes {
        if hole.start < at || hole.end > range.end {
            continue;
        }
        out.push_str(source.get(at..hole.start).unwrap_or_default());
        out.push_str(replacement);
        at = hole.end;
    }
    out.push_str(source.get(at..range.end).unwrap_or_default());
    out
}

/// Identifier-like words (`[A-Za-z_][A-Za-z0-9_]*`) in `text`, in order,
/// with duplicates: a lexical fallback for plugins without a grammar.
///
/// ```
/// use code_intel_plugin_sdk::text::identifiers;
/// let ids: Vec<&str> = identifiers("user.save(force=True) + 2x").collect();
/// assert_eq!(ids, ["user", "save", "force", "True", "x"]);
/// ```
pub fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            let b = bytes[i];
            if b.is_ascii_alphabetic() || b == b'_' {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                return Some(&text[start..i]);
            }
            if b.is_ascii_digit() {
                // Skip the whole number so `2x` yields `x` only after it.
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
                continue;
            }
            i += 1;
        }
        None
    })
}

/// Splits `text` at top-level occurrences of `separator`: not inside
/// brackets, parentheses, braces or quotes. Pieces are trimmed; empty
/// pieces (a trailing comma) dropped. For argument lists and array literals.
///
/// ```
/// use code_intel_plugin_sdk::text::split_top_level;
/// assert_eq!(split_top_level("a, f(b, c), 'x,y', [1, 2],", ','), ["a", "f(b, c)", "'x,y'", "[1, 2]"]);
/// ```
#[must_use]
pub fn split_top_level(text: &str, separator: char) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            c if c == separator && depth == 0 => {
                pieces.push(text[start..i].trim());
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    pieces.push(text[start..].trim());
    pieces.retain(|p| !p.is_empty());
    pieces
}

/// The value of a simple quoted string literal (`'a'`, `"b"`), or `None`.
///
/// ```
/// use code_intel_plugin_sdk::text::unquote;
/// assert_eq!(unquote("'name'"), Some("name"));
/// assert_eq!(unquote("name"), None);
/// ```
#[must_use]
pub fn unquote(literal: &str) -> Option<&str> {
    let literal = literal.trim();
    ['\'', '"'].iter().find_map(|&q| literal.strip_prefix(q).and_then(|l| l.strip_suffix(q)))
}

/// Resolves `target`, a path written in the repository file `from_file`
/// (`../css/app.css`, `./logo.svg`, `/assets/site.js`), to a
/// repository-relative path: relative to the file's folder, or to the
/// repository root when it starts with `/`. `None` when `..` climbs above
/// the root.
///
/// ```
/// use code_intel_plugin_sdk::text::resolve_path;
/// assert_eq!(resolve_path("public/index.html", "../css/app.css").as_deref(), Some("css/app.css"));
/// assert_eq!(resolve_path("public/index.html", "/js/site.js").as_deref(), Some("js/site.js"));
/// assert_eq!(resolve_path("index.html", "../up.css"), None);
/// ```
#[must_use]
pub fn resolve_path(from_file: &str, target: &str) -> Option<String> {
    let mut parts: Vec<&str> = if target.starts_with('/') {
        Vec::new()
    } else {
        from_file.rsplit_once('/').map_or_else(Vec::new, |(dir, _)| dir.split('/').collect())
    };
    for part in target.trim_start_matches('/').split('/') {
        match part {
            "." | "" => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}
