//! Words a request says side by side: "trailing slash", "rate limit",
//! "keyboard shortcut", "reorder point". Code says them side by side too,
//! in a name (`redirect_slashes`, `ThrottleApiRequests`: full text holds an
//! identifier's words in order) or a comment, while a chunk holding both
//! words apart is about something else as often as not. Each pair of
//! neighbouring content words of an English request is searched as the
//! two words near each other (either order, a word by its stem); the
//! files holding such pairs, best by BM25, are one more ranking in the
//! file fusion ([`crate::files`]).
//!
//! ```
//! use code_intel_search::pairs::expression;
//! assert_eq!(
//!     expression("a keyboard shortcut for strikethrough").unwrap(),
//!     r#"NEAR("keyboard" "shortcut", 2) OR NEAR("shortcut" "strikethrough", 2)"#
//! );
//! assert!(expression("ユーザーを削除").is_none());
//! ```

use code_intel_store::tokenize::{is_stopword, stem_prefix};

/// Most pairs searched per request (a long bug report has 20 content
/// words; its first pairs say what it is about).
pub const MAX_PAIRS: usize = 12;

/// Most tokens between the two words of a pair (an identifier's words
/// stand next to each other; "list of users", `userList`).
pub const NEAR: usize = 2;

/// The pairs of neighbouring content words of an English request (words
/// of three letters or more, stop words left out, lower-case), each pair
/// once, at most [`MAX_PAIRS`]; none for a request in another language.
#[must_use]
pub fn pairs(query: &str) -> Vec<(String, String)> {
    if !crate::semantic::is_english(query) {
        return Vec::new();
    }
    let words: Vec<String> = query
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() >= 3 && w.bytes().all(|b| b.is_ascii_alphabetic()) && !is_stopword(w))
        .map(str::to_ascii_lowercase)
        .collect();
    let mut pairs: Vec<(String, String)> = Vec::new();
    for pair in words.windows(2) {
        let pair = (pair[0].clone(), pair[1].clone());
        if pair.0 != pair.1 && !pairs.contains(&pair) {
            pairs.push(pair);
        }
        if pairs.len() == MAX_PAIRS {
            break;
        }
    }
    pairs
}

/// A word of a pair as it is searched: its stem as a prefix when it has
/// one (`trailing` `trail`, true), else the word itself (false).
#[must_use]
pub fn searched_as(word: &str) -> (String, bool) {
    match stem_prefix(word) {
        Some(stem) => (stem, true),
        None => (word.to_string(), false),
    }
}

/// The full-text (FTS5) expression of the request's [`pairs`]: each the
/// two words within [`NEAR`] tokens of each other; `None` without pairs.
#[must_use]
pub fn expression(query: &str) -> Option<String> {
    let term = |w: &str| match searched_as(w) {
        (stem, true) => format!("\"{stem}\"*"),
        (word, false) => format!("\"{word}\""),
    };
    let clauses: Vec<String> = pairs(query).iter().map(|(a, b)| format!("NEAR({} {}, {NEAR})", term(a), term(b))).collect();
    (!clauses.is_empty()).then(|| clauses.join(" OR "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_skip_stop_words_short_words_and_repeats() {
        assert_eq!(
            expression("the list of users is slow").unwrap(),
            r#"NEAR("list" "user"*, 2) OR NEAR("user"* "slow", 2)"#
        );
        assert_eq!(expression("Ctrl+Shift+X").unwrap(), r#"NEAR("ctrl" "shift", 2)"#);
        assert!(expression("sorting").is_none(), "one content word has no pair");
        assert!(expression("where is it").is_none());
        assert!(expression("ボタンの色").is_none(), "not English");
        assert!(expression("utf8 base64 sha256").is_none(), "words with digits are no words of a pair");
        let long = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa";
        assert_eq!(expression(long).unwrap().matches("NEAR(").count(), MAX_PAIRS);
    }
}
