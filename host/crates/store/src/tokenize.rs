//! Code-aware tokenisation for the full-text index.
//!
//! SQLite's `unicode61` tokenizer (with `_` as a token character) keeps every
//! identifier whole and case-folds it. Before a text is indexed,
//! [`expand_identifiers`] appends the words of each compound identifier right
//! after it, so `getUserName` is indexed as `getUserName get User Name` and
//! `get_user_name` as `get_user_name get user name`. A query word is then
//! matched either whole or as the phrase of its parts ([`match_expression`]),
//! so `getUserName`, `get_user_name`, `GetUserName` and `user name` all find
//! both spellings.
//!
//! Chinese, Japanese and Korean text has no spaces between words, so a run
//! of CJK characters would be one token. Each run of two or more is also
//! indexed as its overlapping character pairs ([`push_cjk_bigrams`]: `ユーザー`
//! adds `ユー ーザ ザー`), the usual bigram indexing of CJK search engines, and
//! a query's CJK words are searched as the phrase of their pairs, so `削除`
//! finds `ユーザーを削除する` without a dictionary. A query's CJK words are its
//! runs of kanji, katakana or hangul; hiragana (particles, inflections)
//! separates them ([`query_words`]).
//!
//! ```
//! use code_intel_store::tokenize::{split_identifier, match_expression};
//! assert_eq!(split_identifier("parseHTTPResponse2"), ["parse", "HTTP", "Response2"]);
//! assert_eq!(match_expression("get_user_name", false).unwrap(), r#"("get_user_name" OR "get user name")"#);
//! ```

/// Tokenizer configuration of the FTS table: Unicode-aware, case-folded,
/// diacritics removed, `_` kept inside tokens so identifiers stay whole.
pub const FTS_TOKENIZER: &str = "unicode61 remove_diacritics 2 tokenchars '_'";

/// Longest query honoured, in words. Longer queries are natural-language
/// paragraphs for semantic search; 32 words keeps the FTS expression (and
/// its evaluation time) bounded.
pub const MAX_QUERY_WORDS: usize = 32;

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The CJK script of a character, for bigram indexing and for splitting a
/// query into words; `None` for every other character.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cjk {
    Han,
    Hiragana,
    Katakana,
    Hangul,
}

fn cjk(c: char) -> Option<Cjk> {
    match c {
        '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}' | '\u{20000}'..='\u{2FA1F}' | '々' | '〆' => {
            Some(Cjk::Han)
        }
        '\u{3041}'..='\u{309F}' => Some(Cjk::Hiragana),
        '\u{30A0}'..='\u{30FF}' | '\u{31F0}'..='\u{31FF}' | '\u{FF66}'..='\u{FF9F}' => Some(Cjk::Katakana),
        '\u{AC00}'..='\u{D7AF}' | '\u{1100}'..='\u{11FF}' | '\u{3130}'..='\u{318F}' => Some(Cjk::Hangul),
        _ => None,
    }
}

/// Appends the overlapping character pairs of each run of two or more CJK
/// characters in `word`, each preceded by a space (see the module docs).
pub fn push_cjk_bigrams(word: &str, out: &mut String) {
    // Byte offset of the previous character when it is CJK.
    let mut previous: Option<usize> = None;
    let mut pushed = false;
    for (i, c) in word.char_indices() {
        if cjk(c).is_none() {
            previous = None;
            continue;
        }
        if let Some(start) = previous {
            out.push(' ');
            out.push_str(&word[start..i + c.len_utf8()]);
            pushed = true;
        }
        previous = Some(i);
    }
    if pushed {
        out.push(' ');
    }
}

/// Splits a word holding CJK text into what a query searches for: its runs
/// of kanji, katakana or hangul (a change of script ends a run; hiragana
/// separates runs and is dropped), and its runs of other word characters.
fn query_segments(word: &str) -> Vec<&str> {
    let mut segments = Vec::new();
    let mut start: Option<(usize, Option<Cjk>)> = None;
    for (i, c) in word.char_indices() {
        let script = cjk(c);
        match start {
            Some((_, s)) if s == script => {}
            _ => {
                if let Some((at, s)) = start.take()
                    && s != Some(Cjk::Hiragana)
                {
                    segments.push(&word[at..i]);
                }
                start = Some((i, script));
            }
        }
    }
    if let Some((at, s)) = start
        && s != Some(Cjk::Hiragana)
    {
        segments.push(&word[at..]);
    }
    segments
}

/// Does `text` hold any Chinese, Japanese or Korean character?
#[must_use]
pub fn has_cjk(text: &str) -> bool {
    text.chars().any(|c| cjk(c).is_some())
}

/// The words of an identifier: split at `_`, at lower-to-upper case changes
/// and before the last capital of an acronym (`HTTPServer` -> `HTTP Server`).
/// Digits stay with the word before them.
#[must_use]
pub fn split_identifier(ident: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    for piece in ident.split('_').filter(|p| !p.is_empty()) {
        let chars: Vec<(usize, char)> = piece.char_indices().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (at, c) = chars[i];
            let prev = chars[i - 1].1;
            let next_is_lower = chars.get(i + 1).is_some_and(|(_, n)| n.is_lowercase());
            let boundary = c.is_uppercase()
                && (prev.is_lowercase() || prev.is_numeric() || (prev.is_uppercase() && next_is_lower));
            if boundary {
                parts.push(&piece[start..at]);
                start = at;
            }
        }
        parts.push(&piece[start..]);
    }
    parts
}

/// Appends `text` to `out` with every compound identifier followed by its
/// parts (see the module docs).
pub fn expand_identifiers(text: &str, out: &mut String) {
    out.reserve(text.len() + text.len() / 4);
    let mut word_start: Option<usize> = None;
    for (i, c) in text.char_indices() {
        if is_word_char(c) {
            word_start.get_or_insert(i);
        } else if let Some(start) = word_start.take() {
            out.push_str(&text[start..i]);
            push_parts(&text[start..i], out);
            push_cjk_bigrams(&text[start..i], out);
            out.push(c);
        } else {
            out.push(c);
        }
    }
    if let Some(start) = word_start {
        out.push_str(&text[start..]);
        push_parts(&text[start..], out);
        push_cjk_bigrams(&text[start..], out);
    }
}

fn push_parts(word: &str, out: &mut String) {
    // Fast path: all-lowercase words without `_` have no parts.
    if !word.contains('_') && !word.chars().skip(1).any(char::is_uppercase) {
        return;
    }
    let parts = split_identifier(word);
    if parts.len() == 1 && parts[0] == word {
        return;
    }
    for part in parts {
        out.push(' ');
        out.push_str(part);
    }
    out.push(' ');
}

/// English words that carry no meaning in a request to a code index
/// ("where is the ... handled", "I want to ..."): left out of a query that
/// has other words. Lower case.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "do", "does", "did", "for", "from",
    "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "our", "please", "should",
    "so", "than", "that", "the", "their", "then", "there", "these", "this", "to", "was", "we", "were", "what", "when",
    "where", "which", "while", "who", "why", "will", "with", "would", "you", "your", "want", "wants", "need", "needs",
    "instead", "currently", "right", "now", "also", "any", "some", "about",
];

/// Is `word` (any case) an English stop word of requests?
#[must_use]
pub fn is_stopword(word: &str) -> bool {
    word.len() <= 9 && STOPWORDS.contains(&word.to_ascii_lowercase().as_str())
}

/// The identifier-like words of a query, in order, at most [`MAX_QUERY_WORDS`].
/// Stop words ([`is_stopword`]) are left out unless nothing else is left.
/// Text in CJK scripts is split into its runs of one script (see the module
/// docs); a lone kana is dropped.
#[must_use]
pub fn query_words(query: &str) -> Vec<&str> {
    let mut all: Vec<&str> = Vec::new();
    for word in query.split(|c: char| !is_word_char(c)).filter(|w| !w.is_empty()) {
        if has_cjk(word) {
            let lone_kana = |w: &&str| w.chars().count() == 1 && w.chars().all(|c| matches!(cjk(c), Some(Cjk::Katakana)));
            all.extend(query_segments(word).into_iter().filter(|w| !lone_kana(w)));
        } else {
            all.push(word);
        }
    }
    let kept: Vec<&str> = all.iter().copied().filter(|w| !is_stopword(w)).take(MAX_QUERY_WORDS).collect();
    if kept.is_empty() {
        all.truncate(MAX_QUERY_WORDS);
        all
    } else {
        kept
    }
}

/// The English stem of a plain word, when it differs from the word and is
/// long enough to search as a prefix: `servers` -> `server`, `sorting` ->
/// `sort`, `deleted` -> `delet` (matching `delete`, `deletes`, `deleting`).
#[must_use]
pub fn stem_prefix(word: &str) -> Option<String> {
    thread_local! {
        static STEMMER: rust_stemmers::Stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
    }
    if word.len() < 4 || !word.bytes().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    let lower = word.to_ascii_lowercase();
    let stem = STEMMER.with(|s| s.stem(&lower).into_owned());
    (stem.len() >= 3 && stem != lower && lower.starts_with(&stem[..3])).then_some(stem)
}

/// An FTS5 MATCH expression for `query`: each word matches whole or as the
/// phrase of its parts, and a plain English word also by its stem as a
/// prefix (`servers` finds `Server`); words are combined with AND (or OR
/// when `any`). `None` when the query has no word characters.
#[must_use]
pub fn match_expression(query: &str, any: bool) -> Option<String> {
    let words = query_words(query);
    if words.is_empty() {
        return None;
    }
    let clauses: Vec<String> = words
        .iter()
        .map(|word| {
            if has_cjk(word) {
                return cjk_clause(word);
            }
            let parts: Vec<&str> = split_identifier(word);
            if parts.is_empty() || (parts.len() == 1 && parts[0] == *word) {
                match stem_prefix(word) {
                    Some(stem) => format!("(\"{word}\" OR \"{stem}\"*)"),
                    None => format!("\"{word}\""),
                }
            } else {
                format!("(\"{word}\" OR \"{}\")", parts.join(" "))
            }
        })
        .collect();
    Some(clauses.join(if any { " OR " } else { " AND " }))
}

/// A CJK query word as a full-text clause: the phrase of its character
/// pairs (what [`push_cjk_bigrams`] indexed), or a single character as the
/// prefix of a token.
fn cjk_clause(word: &str) -> String {
    let mut pairs = String::new();
    push_cjk_bigrams(word, &mut pairs);
    let pairs = pairs.trim();
    if pairs.is_empty() { format!("\"{word}\"*") } else { format!("\"{pairs}\"") }
}

/// Lower-cases and drops `_`, so `get_user_name`, `getUserName` and
/// `GetUserName` compare equal.
#[must_use]
pub fn normalize_identifier(ident: &str) -> String {
    ident.chars().filter(|c| *c != '_').flat_map(char::to_lowercase).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_common_identifier_styles() {
        assert_eq!(split_identifier("getUserName"), ["get", "User", "Name"]);
        assert_eq!(split_identifier("get_user_name"), ["get", "user", "name"]);
        assert_eq!(split_identifier("GetUserName"), ["Get", "User", "Name"]);
        assert_eq!(split_identifier("HTTPServer"), ["HTTP", "Server"]);
        assert_eq!(split_identifier("__init__"), ["init"]);
        assert_eq!(split_identifier("MAX_FILE_BYTES"), ["MAX", "FILE", "BYTES"]);
        assert_eq!(split_identifier("utf8Decode"), ["utf8", "Decode"]);
        assert_eq!(split_identifier("plain"), ["plain"]);
        assert_eq!(split_identifier("日本語"), ["日本語"]);
    }

    #[test]
    fn expansion_keeps_text_and_adds_parts() {
        let mut out = String::new();
        expand_identifiers("def get_user_name(self): return self.userName", &mut out);
        assert_eq!(out, "def get_user_name get user name (self): return self.userName user Name ");
        let mut out = String::new();
        expand_identifiers("", &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn cjk_runs_are_also_indexed_as_pairs() {
        let mut out = String::new();
        expand_identifiers("// ユーザーを削除する deleteUser", &mut out);
        assert_eq!(out, "// ユーザーを削除する ユー ーザ ザー ーを を削 削除 除す する  deleteUser delete User ");
        let mut out = String::new();
        expand_identifiers("表 a", &mut out);
        assert_eq!(out, "表 a", "a single character has no pairs");
    }

    #[test]
    fn cjk_queries_search_their_words_as_pairs() {
        assert_eq!(query_words("ユーザーを削除するとエラーが出る"), ["ユーザー", "削除", "エラー", "出"]);
        assert_eq!(query_words("サーバー一覧でCSVを出力したい"), ["サーバー", "一覧", "CSV", "出力"]);
        assert_eq!(
            match_expression("ユーザーを削除", true).unwrap(),
            r#""ユー ーザ ザー" OR "削除""#
        );
        assert_eq!(match_expression("色", false).unwrap(), r#""色"*"#);
    }

    #[test]
    fn match_expressions() {
        assert_eq!(match_expression("user name", false).unwrap(), r#""user" AND "name""#);
        assert_eq!(match_expression("getUserName", false).unwrap(), r#"("getUserName" OR "get User Name")"#);
        assert_eq!(match_expression("x NEAR b", true).unwrap(), r#""x" OR "NEAR" OR "b""#);
        assert_eq!(match_expression("where are the servers sorted", true).unwrap(), r#"("servers" OR "server"*) OR ("sorted" OR "sort"*)"#);
        assert_eq!(match_expression("where is it", false).unwrap(), r#""where" AND "is" AND "it""#, "only stop words: kept");
        assert_eq!(match_expression("\"; DROP", false).unwrap(), r#""DROP""#);
        assert!(match_expression("  ()*  ", false).is_none());
    }
}
