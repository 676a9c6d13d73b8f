//! The words of published chunks and of organisation-wide requests, as the
//! local index's full text has them (`code_intel_store::tokenize`).
//!
//! A chunk's words ([`chunk_words`]) are its text with every compound
//! identifier followed by its parts and every run of CJK characters by its
//! overlapping character pairs (`expand_identifiers`), lower-cased, each at
//! its position: a `tsvector` built here rather than by PostgreSQL's parser,
//! which would read `request.url` as a host name and CJK text by the
//! database's locale. A request ([`FullTextQuery`]) is one `tsquery` clause
//! per word, as the local index matches it: a plain English word whole or
//! by its stem as a prefix (`servers` finds `server`), an identifier whole
//! or as the phrase of its parts, a CJK word as the phrase of its character
//! pairs; stop words are dropped.
//!
//! ```
//! use code_intel_shared::words::{FullTextQuery, chunk_words};
//! assert_eq!(chunk_words("getUserName()"), "'get':2 'getusername':1 'name':4 'user':3");
//! let query = FullTextQuery::new("where are the servers sorted by getUserName");
//! assert_eq!(query.clauses, ["('servers' | 'server':*)", "('sorted' | 'sort':*)", "('getusername' | 'get' <-> 'user' <-> 'name')"]);
//! ```

use std::collections::BTreeMap;

use code_intel_store::tokenize;

/// The version of the words [`chunk_words`] makes, stored with each
/// published chunk (`repository_chunks.words_version`). Chunks published
/// by an older code-intel hold version 1: PostgreSQL's parser over the
/// identifiers and their parts, without CJK character pairs.
pub const WORDS_VERSION: i16 = 2;

/// PostgreSQL keeps positions up to this one; later words share it.
const MAX_POSITION: usize = 16_383;

/// Positions kept per word (PostgreSQL's limit).
const MAX_POSITIONS_PER_WORD: usize = 256;

/// Longest word kept, in bytes (PostgreSQL refuses longer ones).
const MAX_WORD_BYTES: usize = 2_046;

/// Bytes of words kept per chunk: PostgreSQL refuses a `tsvector` of 1 MiB
/// or more; chunks are far smaller, this only bounds a pathological one.
const MAX_CHUNK_WORD_BYTES: usize = 512 * 1024;

/// The words of a chunk's text (path, names and content) as a `tsvector`
/// literal, to be cast with `::tsvector` (see the module docs).
#[must_use]
pub fn chunk_words(text: &str) -> String {
    let mut expanded = String::new();
    tokenize::expand_identifiers(text, &mut expanded);
    let mut words: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut bytes = 0usize;
    let tokens = expanded.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|t| !t.is_empty());
    for (i, token) in tokens.enumerate() {
        let position = (i + 1).min(MAX_POSITION);
        let word = token.to_lowercase();
        if word.len() > MAX_WORD_BYTES {
            continue;
        }
        if let Some(positions) = words.get_mut(&word) {
            if positions.len() < MAX_POSITIONS_PER_WORD && positions.last() != Some(&position) {
                positions.push(position);
            }
        } else if bytes + word.len() <= MAX_CHUNK_WORD_BYTES {
            bytes += word.len();
            words.insert(word, vec![position]);
        }
    }
    let mut out = String::with_capacity(bytes + words.len() * 8);
    for (word, positions) in words {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&quoted(&word));
        out.push(':');
        for (i, p) in positions.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&p.to_string());
        }
    }
    out
}

/// A word as a `tsvector` or `tsquery` lexeme: single-quoted, quotes and
/// backslashes escaped.
fn quoted(word: &str) -> String {
    format!("'{}'", word.replace('\\', "\\\\").replace('\'', "''"))
}

/// An organisation-wide request's words as `tsquery` clauses (see the
/// module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FullTextQuery {
    /// One clause per distinct word, in the request's order.
    pub clauses: Vec<String>,
}

impl FullTextQuery {
    /// The clauses of `text`'s words ([`tokenize::query_words`]: stop words
    /// left out unless nothing else is left, at most 32 words).
    #[must_use]
    pub fn new(text: &str) -> Self {
        let mut clauses: Vec<String> = Vec::new();
        for word in tokenize::query_words(text) {
            let clause = clause(word);
            if !clause.is_empty() && !clauses.contains(&clause) {
                clauses.push(clause);
            }
        }
        Self { clauses }
    }

    /// Every clause (a chunk holding all the words), `None` without words.
    #[must_use]
    pub fn all(&self) -> Option<String> {
        (!self.clauses.is_empty()).then(|| self.clauses.join(" & "))
    }

    /// Text a request quotes as one `tsquery`: its words side by side when
    /// each is a clause (`'item updated'` finds `ItemUpdatedNotification`
    /// and "item updated" alike), else, when stop words were dropped from
    /// between them, each anywhere in the chunk; `None` without words.
    #[must_use]
    pub fn phrase(text: &str) -> Option<String> {
        let query = Self::new(text);
        let words = text.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).count();
        if words == query.clauses.len() {
            (!query.clauses.is_empty()).then(|| query.clauses.iter().map(|c| format!("({c})")).collect::<Vec<_>>().join(" <-> "))
        } else {
            query.all()
        }
    }
}

/// A pair of a request's neighbouring words
/// (`code_intel_search::pairs`) as one `tsquery`: the two words with at
/// most `near` words between them, in either order, each `(text, prefix)`
/// as `code_intel_search::pairs::searched_as` gives it.
#[must_use]
pub fn near_pair(a: (&str, bool), b: (&str, bool), near: usize) -> String {
    let lexeme = |(word, prefix): (&str, bool)| if prefix { format!("{}:*", quoted(word)) } else { quoted(word) };
    let (a, b) = (lexeme(a), lexeme(b));
    let mut alternatives = Vec::with_capacity(2 * (near + 1));
    for (first, second) in [(&a, &b), (&b, &a)] {
        for distance in 1..=near + 1 {
            alternatives.push(format!("{first} <{distance}> {second}"));
        }
    }
    format!("({})", alternatives.join(" | "))
}

/// One query word as a clause.
fn clause(word: &str) -> String {
    let lower = word.to_lowercase();
    if tokenize::has_cjk(word) {
        let mut pairs = String::new();
        tokenize::push_cjk_bigrams(&lower, &mut pairs);
        let pairs: Vec<String> = pairs.split_whitespace().map(quoted).collect();
        return if pairs.is_empty() { format!("{}:*", quoted(&lower)) } else { pairs.join(" <-> ") };
    }
    let parts = tokenize::split_identifier(word);
    if parts.is_empty() || (parts.len() == 1 && parts[0] == word) {
        return match tokenize::stem_prefix(word) {
            Some(stem) => format!("({} | {}:*)", quoted(&lower), quoted(&stem)),
            None => quoted(&lower),
        };
    }
    let phrase: Vec<String> = parts.iter().map(|p| quoted(&p.to_lowercase())).collect();
    format!("({} | {})", quoted(&lower), phrase.join(" <-> "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_words_hold_identifiers_their_parts_and_cjk_pairs() {
        assert_eq!(
            chunk_words("def get_user_name(self)"),
            "'def':1 'get':3 'get_user_name':2 'name':5 'self':6 'user':4"
        );
        assert_eq!(chunk_words("HTTPServer"), "'http':2 'httpserver':1 'server':3");
        // A CJK run, then its pairs in order (a phrase of pairs matches).
        assert_eq!(chunk_words("ユーザー削除"), "'ザー':4 'ユー':2 'ユーザー削除':1 'ーザ':3 'ー削':5 '削除':6");
        assert_eq!(chunk_words("it's a \\ test"), "'a':3 'it':1 's':2 'test':4", "punctuation separates words");
        assert!(chunk_words("").is_empty());
    }

    #[test]
    fn repeated_words_keep_their_positions() {
        assert_eq!(chunk_words("user user"), "'user':1,2");
        let long = "word ".repeat(20_000);
        let words = chunk_words(&long);
        assert_eq!(words.matches(',').count(), MAX_POSITIONS_PER_WORD - 1, "at most 256 positions");
    }

    #[test]
    fn query_clauses_match_as_the_local_index_does() {
        let q = FullTextQuery::new("ユーザーを削除すると色が変わる");
        assert_eq!(q.clauses, ["'ユー' <-> 'ーザ' <-> 'ザー'", "'削除'", "'色':*", "'変':*"]);
        assert_eq!(FullTextQuery::new("get_user_name").clauses, ["('get_user_name' | 'get' <-> 'user' <-> 'name')"]);
        assert_eq!(FullTextQuery::new("how do I").all().unwrap(), "'how' & 'do' & 'i'", "only stop words: kept");
        assert_eq!(FullTextQuery::new("user users").clauses, ["'user'", "('users' | 'user':*)"]);
        assert_eq!(quoted("o'k\\"), "'o''k\\\\'", "quotes and backslashes are escaped");
        assert!(FullTextQuery::new(" ()* ").all().is_none());
    }

    #[test]
    fn pairs_are_their_words_near_each_other_in_either_order() {
        assert_eq!(
            near_pair(("trail", true), ("slash", false), 1),
            "('trail':* <1> 'slash' | 'trail':* <2> 'slash' | 'slash' <1> 'trail':* | 'slash' <2> 'trail':*)"
        );
    }

    #[test]
    fn quoted_text_is_a_phrase_unless_stop_words_stood_between() {
        assert_eq!(FullTextQuery::phrase("item updated").unwrap(), "('item') <-> (('updated' | 'updat':*))");
        assert_eq!(FullTextQuery::phrase("moved to board").unwrap(), "('moved' | 'move':*) & 'board'");
        assert_eq!(FullTextQuery::phrase("最近更新").unwrap(), "('最近' <-> '近更' <-> '更新')");
        assert!(FullTextQuery::phrase("").is_none());
    }
}
