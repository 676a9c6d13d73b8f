//! Full-text queries that leave the collection's common words out of
//! ranking.
//!
//! FTS5's BM25 weighs a word by its inverse document frequency,
//! `ln((N - n + 0.5) / (n + 0.5))`, clamped to almost zero (1e-6) when the
//! word is in at least half of the `N` chunks. Such a word (`the`, `is`, `a`
//! in a question; `self` or `return` in most code) cannot change the order of
//! the hits, yet costs more than any other: before scoring a single row, BM25
//! reads the whole posting list of every word in the query to count the
//! chunks holding it, and an any-word query over it matches most of the
//! index. A [`TextQuery`] therefore ranks by the query's other words and, for
//! an all-words query, still requires the common ones
//! ([`TextQuery::required`]: the candidates are the matches of the whole
//! query, read without scoring): the same hits in the same order, for a
//! fraction of the work. Whether a word is that common is read from the index's term
//! statistics once per connection and reused after the chunks change while
//! the chunks inserted and deleted since cannot have moved its count across
//! the half.

use std::cell::RefCell;
use std::collections::HashMap;

use rusqlite::OptionalExtension;

use crate::tokenize::{match_expression, query_words, split_identifier};
use crate::{Result, Store};

/// A full-text query ready for [`Store::fts_search`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextQuery {
    /// FTS5 expression whose matches are ranked by BM25.
    pub ranked: String,
    /// FTS5 expression every hit must match too, without taking part in
    /// ranking: the common words of an all-words query.
    pub required: Option<String>,
    /// At most this many chunks match the whole query (`ranked` and
    /// `required`), when known from the index's term statistics: an
    /// all-words query matches no more chunks than its rarest plain word.
    /// Lets [`Store::fts_search`] rank a query it knows to be narrow
    /// without first reading its matches to find out.
    pub most_matches: Option<u64>,
}

impl TextQuery {
    /// A query ranked by `expression` alone.
    #[must_use]
    pub fn plain(expression: impl Into<String>) -> Self {
        Self { ranked: expression.into(), required: None, most_matches: None }
    }

    /// Whether it is known to match at most `max_scored` chunks and has no
    /// required words: then it is ranked without first reading its matches
    /// to count them.
    #[must_use]
    pub fn known_narrow(&self, max_scored: usize) -> bool {
        self.required.is_none() && self.most_matches.is_some_and(|m| m <= u64::try_from(max_scored).unwrap_or(u64::MAX))
    }
}

/// Posting-list sizes already read, by column (empty: any) and term, exact
/// while the chunks do not change.
#[derive(Default)]
pub(crate) struct TermCounts {
    generation: String,
    counts: HashMap<(String, String), u64>,
    /// Whole-row counts kept across changes of the chunks: (count, the
    /// [`Store::chunk_changes`] when it was read). A count can since have
    /// moved by at most the chunks inserted or deleted in between, which
    /// often still settles whether the word is in half of the chunks.
    bounded: HashMap<String, (u64, u64)>,
}

/// Per-connection cache of [`TermCounts`].
pub(crate) type TermCountCache = RefCell<TermCounts>;

impl Store {
    /// The full-text query for `text`: every word (`any = false`) or any word
    /// (`any = true`), see [`match_expression`], with the words found in at
    /// least half of the chunks moved out of ranking: into
    /// [`TextQuery::required`] for an all-words query, dropped from an
    /// any-word one. Nothing moves when every word is that common. `None`
    /// when the text has no words.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn text_query(&self, text: &str, any: bool) -> Result<Option<TextQuery>> {
        let Some(whole) = match_expression(text, any) else { return Ok(None) };
        let words = query_words(text);
        // Only plain words are counted: an identifier's parts form a phrase,
        // rarer than any of its words, and a non-ASCII word may be folded by
        // the tokenizer in ways a lookup would have to repeat.
        let folded: Vec<Option<String>> = words
            .iter()
            .map(|w| {
                (w.chars().all(|c| c.is_ascii_alphanumeric()) && split_identifier(w).len() == 1)
                    .then(|| w.to_ascii_lowercase())
            })
            .collect();
        let plain: Vec<&str> = folded.iter().flatten().map(String::as_str).collect();
        if words.len() < 2 || plain.is_empty() {
            return Ok(Some(TextQuery::plain(whole)));
        }
        let common_flags = self.in_half_of_the_chunks(&plain)?;
        let most_matches = if any { None } else { self.most_matches(&plain)? };
        let whole = TextQuery { most_matches, ..TextQuery::plain(whole) };
        let common: Vec<&str> = plain.iter().zip(&common_flags).filter(|(_, c)| **c).map(|(w, _)| *w).collect();
        let is_common = |i: usize| folded[i].as_deref().is_some_and(|f| common.contains(&f));
        let rare: Vec<&str> = (0..words.len()).filter(|&i| !is_common(i)).map(|i| words[i]).collect();
        if common.is_empty() || rare.is_empty() {
            return Ok(Some(whole));
        }
        let Some(ranked) = match_expression(&rare.join(" "), any) else { return Ok(Some(whole)) };
        let required = if any {
            None
        } else {
            let common_words: Vec<&str> = (0..words.len()).filter(|&i| is_common(i)).map(|i| words[i]).collect();
            match_expression(&common_words.join(" "), false)
        };
        Ok(Some(TextQuery { ranked, required, most_matches }))
    }

    /// At most how many chunks hold every one of `terms` (plain lower-case
    /// words of an all-words query, counted by
    /// [`Self::in_half_of_the_chunks`] just before): the fewest holding one
    /// of them, among the words the query matches as written (a word it
    /// also matches by its stem as a prefix matches more than its own
    /// count), widened by the chunks changed since that count was read.
    /// `None` when no such word was counted.
    fn most_matches(&self, terms: &[&str]) -> Result<Option<u64>> {
        let changes = self.chunk_changes()?;
        let cache = self.term_counts.borrow();
        Ok(terms
            .iter()
            .filter(|t| crate::tokenize::stem_prefix(t).is_none())
            .filter_map(|t| cache.bounded.get(*t))
            .filter_map(|&(n, since)| Some(n.saturating_add(changes.checked_sub(since)?)))
            .min())
    }

    /// Whether each of `terms` is in at least half of the chunks (and in
    /// one at least). Exact: a count read before the chunks changed is used
    /// only while the chunks inserted and deleted since cannot have moved it
    /// across the half; otherwise it is read again.
    fn in_half_of_the_chunks(&self, terms: &[&str]) -> Result<Vec<bool>> {
        let total = self.chunk_total()?;
        let changes = self.chunk_changes()?;
        let settled = |n: u64, since: u64| -> Option<bool> {
            let drift = changes.checked_sub(since)?;
            let (low, high) = (n.saturating_sub(drift), n.saturating_add(drift));
            if low > 0 && low.saturating_mul(2) >= total {
                Some(true)
            } else if high == 0 || high.saturating_mul(2) < total {
                Some(false)
            } else {
                None
            }
        };
        let unsettled: Vec<&str> = {
            let cache = self.term_counts.borrow();
            terms.iter().copied().filter(|t| cache.bounded.get(*t).and_then(|&(n, since)| settled(n, since)).is_none()).collect()
        };
        if !unsettled.is_empty() {
            let counts = self.term_chunk_counts(&unsettled)?;
            let mut cache = self.term_counts.borrow_mut();
            for (term, n) in unsettled.iter().zip(counts) {
                cache.bounded.insert((*term).to_string(), (n, changes));
            }
        }
        let cache = self.term_counts.borrow();
        Ok(terms.iter().map(|t| cache.bounded.get(*t).and_then(|&(n, since)| settled(n, since)).unwrap_or(false)).collect())
    }

    /// Does any chunk match the full-text `expression` (a
    /// [`match_expression`])? One index probe, no ranking.
    ///
    /// # Errors
    /// SQLite errors (an invalid expression among them).
    pub fn any_match(&self, expression: &str) -> Result<bool> {
        let found: Option<i64> = self
            .conn()
            .prepare_cached("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?1 LIMIT 1")?
            .query_row([expression], |r| r.get(0))
            .optional()?;
        Ok(found.is_some())
    }

    /// How many chunks hold each of `terms` (full-text tokens: lower-case
    /// words as the index stores them), in order; 0 for a term the index does
    /// not have. Read from the full-text index's term statistics
    /// (`fts5vocab`, one posting list per term) and remembered until the
    /// chunks change.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn term_chunk_counts(&self, terms: &[&str]) -> Result<Vec<u64>> {
        self.counted(None, terms)
    }

    /// [`Store::term_chunk_counts`] within one column of the full-text index
    /// (`name`, `qualified_name`, `signature`, `docstring`, `content`, `path`).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn column_term_chunk_counts(&self, column: &str, terms: &[&str]) -> Result<Vec<u64>> {
        self.counted(Some(column), terms)
    }

    fn counted(&self, column: Option<&str>, terms: &[&str]) -> Result<Vec<u64>> {
        let generation = self.chunks_generation()?;
        let mut cache = self.term_counts.borrow_mut();
        if cache.generation != generation {
            cache.counts.clear();
            cache.generation = generation;
        }
        let key = |term: &str| (column.unwrap_or_default().to_string(), term.to_string());
        let missing: Vec<&str> = terms.iter().copied().filter(|t| !cache.counts.contains_key(&key(t))).collect();
        if !missing.is_empty() {
            // Views over the index's own term statistics: nothing is stored.
            self.conn().execute_batch(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.chunks_fts_terms USING fts5vocab(main, 'chunks_fts', 'row');
                 CREATE VIRTUAL TABLE IF NOT EXISTS temp.chunks_fts_column_terms USING fts5vocab(main, 'chunks_fts', 'col');",
            )?;
            for term in missing {
                let n: Option<i64> = match column {
                    None => self
                        .conn()
                        .prepare_cached("SELECT doc FROM temp.chunks_fts_terms WHERE term = ?1")?
                        .query_row([term], |r| r.get(0))
                        .optional()?,
                    Some(column) => self
                        .conn()
                        .prepare_cached("SELECT doc FROM temp.chunks_fts_column_terms WHERE term = ?1 AND col = ?2")?
                        .query_row([term, column], |r| r.get(0))
                        .optional()?,
                };
                cache.counts.insert(key(term), n.map_or(0, |n| u64::try_from(n).unwrap_or(0)));
            }
        }
        Ok(terms.iter().map(|t| cache.counts.get(&key(t)).copied().unwrap_or(0)).collect())
    }
}

#[cfg(test)]
mod tests {
    use code_intel_core::{Chunk, ChunkedFile};

    use crate::{FileRecord, Store, TextQuery};

    /// Chunk `i` (named `f{i}`, on line `i + 1`) holding `content`.
    fn chunk(i: usize, content: &str) -> Chunk {
        let line = u32::try_from(i + 1).unwrap();
        Chunk {
            id: format!("c{i}"),
            kind: "function".into(),
            name: format!("f{i}"),
            qualified_name: None,
            parent: None,
            start_line: line,
            end_line: line,
            start_byte: 0,
            end_byte: 0,
            content: content.to_string(),
            signature: None,
            docstring: None,
            related_symbols: Vec::new(),
            references: Vec::new(),
            metadata: code_intel_core::Metadata::empty(),
        }
    }

    /// A store of `n` chunks, each saying "self" and "value", every tenth
    /// also "total" (and "order" in one of them).
    fn store(n: usize) -> Store {
        let mut store = Store::open_in_memory().unwrap();
        let chunks: Vec<Chunk> = (0..n)
            .map(|i| {
                let extra = match i {
                    7 => " total order",
                    _ if i % 10 == 0 => " total",
                    _ => "",
                };
                chunk(i, &format!("self value {i}{extra}"))
            })
            .collect();
        let file = FileRecord { path: "a.py".into(), sha256: "00".into(), size: 1, mtime_ns: 0 };
        let chunked = ChunkedFile { chunks, chunker: "test".into(), ..Default::default() };
        store.write(|w| w.replace_file(&file, &chunked, 0).map(drop)).unwrap();
        store
    }

    #[test]
    fn counts_come_from_the_index_and_follow_its_changes() {
        let mut s = store(40);
        assert_eq!(s.term_chunk_counts(&["self", "total", "order", "absent"]).unwrap(), [40, 5, 1, 0]);
        assert_eq!(s.column_term_chunk_counts("content", &["total", "f7"]).unwrap(), [5, 0]);
        assert_eq!(s.column_term_chunk_counts("name", &["total", "f7"]).unwrap(), [0, 1]);
        let matched: i64 =
            s.conn().query_row("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'content:\"total\"'", [], |r| r.get(0)).unwrap();
        assert_eq!(matched, 5, "the statistics count what a query counts");
        let file = FileRecord { path: "a.py".into(), sha256: "01".into(), size: 1, mtime_ns: 0 };
        s.write(|w| w.replace_file(&file, &ChunkedFile::default(), 0).map(drop)).unwrap();
        assert_eq!(s.term_chunk_counts(&["self"]).unwrap(), [0], "a cached count survived a change of the chunks");
    }

    #[test]
    fn a_count_read_before_a_change_is_kept_only_while_it_settles_the_half() {
        let mut s = store(40);
        assert_eq!(s.in_half_of_the_chunks(&["self", "total"]).unwrap(), [true, false]);
        // One more chunk with "total" (6 of 41 now): both answers still
        // hold within the one chunk changed, so neither word is read again
        // (the cached counts stay those of 40 chunks).
        let extra = ChunkedFile { chunks: vec![chunk(99, "self total")], chunker: "test".into(), ..Default::default() };
        let file = FileRecord { path: "b.py".into(), sha256: "00".into(), size: 1, mtime_ns: 0 };
        s.write(|w| w.replace_file(&file, &extra, 0).map(drop)).unwrap();
        assert_eq!(s.in_half_of_the_chunks(&["self", "total"]).unwrap(), [true, false]);
        assert_eq!(s.term_counts.borrow().bounded["total"], (5, 40));
        // Replacing the first file's 40 chunks by 30 without "self": 70
        // changes, more than settle either word, so both are read again.
        let chunks = (0..30).map(|i| chunk(i, "total value")).collect();
        let file = FileRecord { path: "a.py".into(), sha256: "01".into(), size: 1, mtime_ns: 0 };
        s.write(|w| w.replace_file(&file, &ChunkedFile { chunks, chunker: "test".into(), ..Default::default() }, 0).map(drop))
            .unwrap();
        assert_eq!(s.in_half_of_the_chunks(&["self", "total"]).unwrap(), [false, true]);
    }

    #[test]
    fn common_words_are_required_not_ranked() {
        let s = store(40);
        let q = s.text_query("self total order", false).unwrap().unwrap();
        assert_eq!(q, TextQuery { ranked: r#""total" AND "order""#.into(), required: Some(r#""self""#.into()), most_matches: Some(1) });
        let any = s.text_query("self total order", true).unwrap().unwrap();
        assert_eq!(any, TextQuery::plain(r#""total" OR "order""#));
        // Nothing but common words: the query stays whole. `value` is also
        // matched by its stem, so only `self` bounds the matches.
        assert_eq!(
            s.text_query("self value", false).unwrap().unwrap(),
            TextQuery { most_matches: Some(40), ..TextQuery::plain(r#""self" AND ("value" OR "valu"*)"#) }
        );
        // One word or an identifier: as written.
        assert_eq!(s.text_query("self", false).unwrap().unwrap(), TextQuery::plain(r#""self""#));
        assert_eq!(
            s.text_query("the_value total", false).unwrap().unwrap(),
            TextQuery { most_matches: Some(5), ..TextQuery::plain(r#"("the_value" OR "the value") AND "total""#) }
        );
    }

    /// A query known to be narrow is ranked without first reading its
    /// matches: the same hits as when they are read, and the bound holds
    /// after the chunks change.
    #[test]
    fn narrow_queries_rank_like_counted_ones() {
        let mut s = store(40);
        let names = |s: &Store, q: &TextQuery| -> Vec<String> {
            s.fts_search(q, None, &[], &|_| true, 100).unwrap().into_iter().map(|h| h.name).collect()
        };
        let matches = |s: &Store, q: &TextQuery| -> u64 {
            let n: i64 = s.conn().query_row("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?1", [&q.ranked], |r| r.get(0)).unwrap();
            n.unsigned_abs()
        };
        let q = s.text_query("value total", false).unwrap().unwrap();
        assert_eq!(q.most_matches, Some(5));
        assert_eq!(matches(&s, &q), 5);
        let unbounded = TextQuery { most_matches: None, ..q.clone() };
        assert_eq!(names(&s, &q), names(&s, &unbounded));
        assert_eq!(names(&s, &q).len(), 5);
        // One more chunk with "total": the count read before is widened by
        // the change, so it still bounds the matches.
        let extra = ChunkedFile { chunks: vec![chunk(99, "value total")], chunker: "test".into(), ..Default::default() };
        let file = FileRecord { path: "b.py".into(), sha256: "00".into(), size: 1, mtime_ns: 0 };
        s.write(|w| w.replace_file(&file, &extra, 0).map(drop)).unwrap();
        let q = s.text_query("value total", false).unwrap().unwrap();
        assert!(q.most_matches.is_some_and(|m| m >= matches(&s, &q)), "{:?} for {} matches", q.most_matches, matches(&s, &q));
        assert_eq!(names(&s, &q).len(), 6);
        // An any-word query is not bounded by its rarest word.
        assert_eq!(s.text_query("value total", true).unwrap().unwrap().most_matches, None);
    }

    #[test]
    fn required_words_filter_the_hits_like_the_whole_query() {
        let s = store(40);
        let split = s.text_query("self total", false).unwrap().unwrap();
        assert!(split.required.is_some());
        let whole = TextQuery::plain(crate::tokenize::match_expression("self total", false).unwrap());
        let names = |q: &TextQuery| -> Vec<String> {
            s.fts_search(q, None, &[], &|_| true, 100).unwrap().into_iter().map(|h| h.name).collect()
        };
        assert_eq!(names(&split), names(&whole));
        assert_eq!(names(&split).len(), 5);
        // A required word no hit has leaves none.
        let missing = TextQuery { ranked: r#""total""#.into(), required: Some(r#""absent""#.into()), most_matches: None };
        assert!(names(&missing).is_empty());
    }
}
