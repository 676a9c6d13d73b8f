//! Text preparation: identifier splitting so symbol names read like the
//! natural language they are compared with, and the text embedded for a chunk.

/// Splits identifiers into words: `AuthService` -> `Auth Service`,
/// `user_login_count` -> `user login count`, `HTTPServer2` -> `HTTP Server 2`,
/// `App\Models\User::orders` -> `App Models User orders`.
///
/// Non-identifier characters become single spaces; everything else is kept,
/// so Japanese or other non-ASCII text passes through unchanged.
///
/// ```
/// use code_intel_embed::split_identifiers;
/// assert_eq!(split_identifiers("AuthService"), "Auth Service");
/// assert_eq!(split_identifiers("compute_order_total"), "compute order total");
/// assert_eq!(split_identifiers("parseHTTPResponse"), "parse HTTP Response");
/// ```
#[must_use]
pub fn split_identifiers(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    let mut pending_space = false;
    for (i, &c) in chars.iter().enumerate() {
        if c == '_' || c == '\\' || c == ':' || c == '.' || c == '$' || c == '-' || c.is_whitespace() {
            pending_space = !out.is_empty();
            continue;
        }
        if !out.is_empty() && !pending_space {
            let prev = chars[i - 1];
            let next = chars.get(i + 1).copied();
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_alphabetic() && c.is_ascii_digit())
                || (prev.is_ascii_digit() && c.is_alphabetic())
                // The last capital of an acronym starts the next word: HTTPServer.
                || (prev.is_uppercase() && c.is_uppercase() && next.is_some_and(char::is_lowercase));
            if boundary {
                pending_space = true;
            }
        }
        if pending_space {
            out.push(' ');
            pending_space = false;
        }
        out.push(c);
    }
    out
}

/// Longest symbol name part kept in the chunk header line; longer names are
/// generated noise (hashes, minified code) and would only eat the window.
const MAX_HEADER_CHARS: usize = 200;

/// Most words of plugin metadata put in the embedded text.
const MAX_METADATA_WORDS: usize = 48;

/// The words of a chunk's plugin metadata (a JSON object's text): every
/// string value, identifiers split, each word once, in order, at most
/// [`MAX_METADATA_WORDS`]. What a plugin knows of a Filament resource (its
/// navigation group and icon, form fields, table columns), a migration (its
/// table and columns) or a route (its name) is said in words a developer
/// uses ("shopping cart", "orders", "status"), not only in the code.
///
/// ```
/// use code_intel_embed::metadata_words;
/// let words = metadata_words(r#"{"navigation": {"icon": "heroicon-o-shopping-cart"}, "count": 3, "model": "App\\Models\\Order"}"#);
/// assert!(words.contains("shopping cart") && words.contains("Order"));
/// ```
#[must_use]
pub fn metadata_words(metadata: &str) -> String {
    fn strings<'a>(value: &'a serde_json::Value, out: &mut Vec<&'a str>) {
        match value {
            serde_json::Value::String(s) => out.push(s),
            serde_json::Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
            serde_json::Value::Object(map) => map.values().for_each(|v| strings(v, out)),
            _ => {}
        }
    }
    let Ok(mut value) = serde_json::from_str::<serde_json::Value>(metadata) else { return String::new() };
    // A chunk's `aliases` (what a request calls it, `orders list`) are
    // matched as names by the search, and their words are in the plugin's
    // summary already: the embedded text stays as it was without them.
    if let Some(object) = value.as_object_mut() {
        object.remove("aliases");
    }
    let mut values = Vec::new();
    strings(&value, &mut values);
    let mut seen = std::collections::HashSet::new();
    let mut words: Vec<String> = Vec::new();
    for value in values {
        for word in split_identifiers(value).split(' ') {
            // Hash-like or long tokens say nothing a developer would.
            let plausible = !word.is_empty() && word.chars().count() <= 30 && word.chars().any(char::is_alphabetic);
            if plausible && words.len() < MAX_METADATA_WORDS && seen.insert(word.to_lowercase()) {
                words.push(word.to_string());
            }
        }
    }
    words.join(" ")
}

/// The text embedded for a chunk: a header with the kind and the split name
/// (so "order total" matches `computeOrderTotal`), the words of its plugin
/// metadata ([`metadata_words`]), then the chunk's content.
///
/// The recipe is part of the model key ([`crate::TEXT_RECIPE_VERSION`]): change
/// it and every chunk is embedded again.
#[must_use]
pub fn chunk_text(kind: &str, name: &str, qualified_name: Option<&str>, metadata: &str, content: &str) -> String {
    let mut header = split_identifiers(qualified_name.unwrap_or(name));
    if header.chars().count() > MAX_HEADER_CHARS {
        header = header.chars().take(MAX_HEADER_CHARS).collect();
    }
    let words = metadata_words(metadata);
    let mut text = String::with_capacity(header.len() + words.len() + content.len() + kind.len() + 3);
    text.push_str(kind);
    text.push(' ');
    text.push_str(&header);
    text.push('\n');
    if !words.is_empty() {
        text.push_str(&words);
        text.push('\n');
    }
    text.push_str(content);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_camel_snake_and_acronyms() {
        assert_eq!(split_identifiers("AuthService"), "Auth Service");
        assert_eq!(split_identifiers("snake_case_name"), "snake case name");
        assert_eq!(split_identifiers("HTTPServer2Config"), "HTTP Server 2 Config");
        assert_eq!(split_identifiers("App\\Models\\User::orders"), "App Models User orders");
        assert_eq!(split_identifiers("__init__"), "init");
        assert_eq!(split_identifiers("OrderService.computeTotal"), "Order Service compute Total");
        assert_eq!(split_identifiers("ユーザー認証"), "ユーザー認証");
        assert_eq!(split_identifiers(""), "");
    }

    #[test]
    fn chunk_text_puts_split_name_first() {
        let t = chunk_text("function", "compute_total", None, "{}", "def compute_total(): pass");
        assert_eq!(t, "function compute total\ndef compute_total(): pass");
    }
}
