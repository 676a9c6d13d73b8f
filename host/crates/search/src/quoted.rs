//! Quoted text in a request: what a developer copies from the screen or a
//! log ("the error 'Part exceeded maximum size'", 「Unavailable」と表示される)
//! is literally in the code, a template or a translation file. Each quoted
//! phrase is searched as a phrase, and the files holding it form a ranking
//! of their own in the file fusion ([`crate::files`]).
//!
//! ```
//! use code_intel_search::quoted::phrases;
//! assert_eq!(phrases("it says 'Part exceeded maximum size' and stops"), ["Part exceeded maximum size"]);
//! assert_eq!(phrases("「Unavailable」と英語のまま表示される"), ["Unavailable"]);
//! assert!(phrases("the user's profile isn't saved").is_empty());
//! ```

use code_intel_store::tokenize::{has_cjk, match_expression, query_words};

/// Most quoted phrases searched per request.
pub const MAX_PHRASES: usize = 3;

/// Longest quoted text taken as a phrase (longer quotes are pasted code or
/// logs, which the keyword arm already reads word by word).
const MAX_PHRASE_CHARS: usize = 80;

/// Opening and closing marks of a quotation.
const MARKS: &[(char, char)] = &[('「', '」'), ('『', '』'), ('“', '”'), ('"', '"'), ('\'', '\''), ('`', '`')];

/// The quoted phrases of `query`, in order, each once: text between
/// matching quotation marks that holds a word of three or more characters
/// (or two words, or CJK text), at most [`MAX_PHRASE_CHARS`] long. An
/// apostrophe inside a word (`user's`, `isn't`) opens no quotation.
#[must_use]
pub fn phrases(query: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    let chars: Vec<(usize, char)> = query.char_indices().collect();
    let mut i = 0;
    while i < chars.len() && out.len() < MAX_PHRASES {
        let (at, c) = chars[i];
        let Some(&(_, close)) = MARKS.iter().find(|(open, _)| *open == c) else {
            i += 1;
            continue;
        };
        // A straight quote opens only at the start of a word.
        let ascii_quote = c == '\'' || c == '"' || c == '`';
        if ascii_quote && i > 0 && chars[i - 1].1.is_alphanumeric() {
            i += 1;
            continue;
        }
        let Some(end) = (i + 1..chars.len()).find(|&j| {
            chars[j].1 == close && (!ascii_quote || chars.get(j + 1).is_none_or(|(_, n)| !n.is_alphanumeric()))
        }) else {
            i += 1;
            continue;
        };
        let inner = query[at + c.len_utf8()..chars[end].0].trim();
        if worth_searching(inner) && !out.contains(&inner) {
            out.push(inner);
        }
        i = end + 1;
    }
    out
}

fn worth_searching(text: &str) -> bool {
    if text.is_empty() || text.chars().count() > MAX_PHRASE_CHARS {
        return false;
    }
    let words = query_words(text);
    has_cjk(text) || words.len() >= 2 || words.iter().any(|w| w.chars().count() >= 3)
}

/// The full-text expression for a quoted phrase: its words in order as one
/// phrase; CJK text as the phrases of its character pairs. `None` when it
/// has no words.
#[must_use]
pub fn expression(phrase: &str) -> Option<String> {
    if has_cjk(phrase) {
        return match_expression(phrase, false);
    }
    // Every word, stop words too: "Method Not Allowed" is one phrase.
    let words: Vec<String> =
        phrase.split(|c: char| !c.is_alphanumeric() && c != '_').filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
    (!words.is_empty()).then(|| format!("\"{}\"", words.join(" ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotation_marks_of_both_languages() {
        assert_eq!(phrases("Requests fail with \"Invalid host header\" behind a proxy"), ["Invalid host header"]);
        assert_eq!(phrases("「Part exceeded maximum size」と返される"), ["Part exceeded maximum size"]);
        assert_eq!(phrases("the label says 'N items' and 'and N more'"), ["N items", "and N more"]);
        assert_eq!(phrases("「すべての曲」画面の曲数"), ["すべての曲"]);
        assert_eq!(phrases("“Up Next” card"), ["Up Next"]);
    }

    #[test]
    fn apostrophes_and_short_quotes_are_not_phrases() {
        assert!(phrases("the server's backups aren't listed").is_empty());
        assert!(phrases("a shortcut 'v' like Q").is_empty());
        assert!(phrases("an unclosed 'quote here").is_empty());
        let long = format!("'{}'", "word ".repeat(30));
        assert!(phrases(&long).is_empty());
    }

    #[test]
    fn expressions_are_phrases() {
        assert_eq!(expression("Part exceeded maximum size").as_deref(), Some("\"part exceeded maximum size\""));
        assert_eq!(expression("R&B").as_deref(), Some("\"r b\""));
        assert_eq!(expression("Method Not Allowed").as_deref(), Some("\"method not allowed\""));
        assert!(expression("すべての曲").is_some());
        assert_eq!(expression("!!"), None);
    }
}
