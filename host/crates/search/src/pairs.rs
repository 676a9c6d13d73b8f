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

/// A word of a pair as it is searched: `text` whole, or as a prefix
/// (`prefix`) of the words it begins.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Term {
    pub text: String,
    pub prefix: bool,
}

/// A word as it is searched in a pair: by its stem as a prefix when it has
/// one (`trailing` `trail`*), or by what it shares with its stem when the
/// stem is no prefix of it (`query` `quer`*, whose stem `queri` would not
/// find it), else whole.
#[must_use]
pub fn searched_as(word: &str) -> Term {
    let Some(stem) = stem_prefix(word) else { return Term { text: word.to_string(), prefix: false } };
    let shared = word.bytes().zip(stem.bytes()).take_while(|(a, b)| a == b).count();
    if shared >= 3 {
        Term { text: word[..shared].to_string(), prefix: true }
    } else {
        Term { text: word.to_string(), prefix: false }
    }
}

/// The pairs of neighbouring content words of an English request (words
/// of three letters or more, stop words left out), as they are searched
/// ([`searched_as`]): each pair once in either order, none of one word
/// twice ("redirect redirects"), at most [`MAX_PAIRS`]; none for a request
/// in another language (one not written in ASCII letters).
#[must_use]
pub fn pairs(query: &str) -> Vec<(Term, Term)> {
    if !crate::semantic::is_english(query) {
        return Vec::new();
    }
    let terms: Vec<Term> = query
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() >= 3 && w.bytes().all(|b| b.is_ascii_alphabetic()) && !is_stopword(w))
        .map(|w| searched_as(&w.to_ascii_lowercase()))
        .collect();
    let mut pairs: Vec<(Term, Term)> = Vec::new();
    for pair in terms.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let known = pairs.iter().any(|(x, y)| (x.text == a.text && y.text == b.text) || (x.text == b.text && y.text == a.text));
        if a.text != b.text && !known {
            pairs.push((a.clone(), b.clone()));
        }
        if pairs.len() == MAX_PAIRS {
            break;
        }
    }
    pairs
}

/// The full-text (FTS5) expression of the request's [`pairs`]: each the
/// two words with at most [`NEAR`] tokens between them, in either order;
/// `None` without pairs.
#[must_use]
pub fn expression(query: &str) -> Option<String> {
    let term = |t: &Term| if t.prefix { format!("\"{}\"*", t.text) } else { format!("\"{}\"", t.text) };
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
        assert_eq!(
            expression("redirect redirects to the login redirect page").unwrap(),
            r#"NEAR("redirect"* "login", 2) OR NEAR("redirect" "page", 2)"#,
            "one word twice is no pair, and a pair is the same in either order"
        );
    }

    #[test]
    fn a_word_is_searched_by_what_it_shares_with_its_stem() {
        assert_eq!(searched_as("trailing"), Term { text: "trail".into(), prefix: true });
        assert_eq!(searched_as("query"), Term { text: "quer".into(), prefix: true }, "the stem `queri` is no prefix of it");
        assert_eq!(searched_as("policy"), Term { text: "polic".into(), prefix: true });
        assert_eq!(searched_as("slash"), Term { text: "slash".into(), prefix: false });
        assert_eq!(expression("the query string").unwrap(), r#"NEAR("quer"* "string", 2)"#);
    }
}
