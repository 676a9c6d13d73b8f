//! The read side: what the indexer, search, status and the code tools ask of
//! the chunk index.

use std::collections::BTreeMap;

use code_intel_core::Chunk;
use code_intel_core::chunk::FALLBACK_KIND;
use rusqlite::{OptionalExtension, Row, params};
use serde::Serialize;

use crate::tokenize::normalize_identifier;
use crate::{Result, Store, TextQuery};

/// BM25 column weights of the full-text index, in column order: name,
/// qualified name, signature, docstring, content, path. A hit in a name says
/// far more about a chunk than a hit somewhere in its body; the path is a
/// weak hint (`UserController` in `app/Http/Controllers/UserController.php`).
pub const BM25_WEIGHTS: [f64; 6] = [10.0, 6.0, 4.0, 2.0, 1.0, 2.0];

/// Score added per exact-identifier tier (see [`FtsHit::exact_tier`]). Larger
/// than any BM25 score seen in practice (< 50) so that the definition of the
/// identifier searched for ranks above chunks that merely mention it.
pub const EXACT_TIER_BONUS: f64 = 100.0;

/// Rows of the BM25 ranking looked up per full-text query before filters
/// (at least; more when more hits are asked for).
pub const RANK_WINDOW: usize = 64;

/// Most chunks BM25 scores for one full-text query. A query matching more
/// (words found in a large share of the chunks) is ranked on a candidate set
/// of this size; below it, every match is scored. FTS5's BM25 costs about a
/// microsecond per row, so this bounds ranking to a few milliseconds.
pub const MAX_SCORED: usize = 4096;

/// The row ids a full-text query is scored on ([`Store::broad_candidates`]).
enum Candidates {
    /// Every match (at most the scoring bound).
    All(Vec<i64>),
    /// A bounded candidate set of a query matching more.
    Broad(Vec<i64>),
}

/// What the indexer remembers of a file between syncs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexedFile {
    pub path: String,
    pub sha256: String,
    pub size: i64,
    pub mtime_ns: i64,
    pub indexed_at_ns: i64,
}

/// A chunk without its content: enough for outlines and definition lists.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChunkSummary {
    /// Row id in `chunks` (stable until the file is re-indexed).
    pub rowid: i64,
    pub path: String,
    pub chunk_id: String,
    pub kind: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qualified_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    pub start_line: u32,
    pub end_line: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub docstring: Option<String>,
    /// Plugin that produced the chunk, or `fallback`.
    pub chunker: String,
}

/// A whole stored chunk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StoredChunk {
    pub rowid: i64,
    pub path: String,
    pub chunker: String,
    pub content_hash: String,
    pub chunk: Chunk,
}

/// How [`Store::definitions`] matches a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NameMatch {
    /// Name or qualified name equal, ignoring case; a qualified query
    /// (`User.save`, `App\Models\User`) matches qualified names ending with it.
    Exact,
    /// Name starts with the query, ignoring case.
    Prefix,
    /// Exact and prefix matches first, then names equal after dropping case
    /// and `_` (`get_user_name` ~ `getUserName`), then names containing the
    /// query that way, then names within a small edit distance.
    Fuzzy,
}

/// One full-text hit before path filtering by the caller.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FtsHit {
    pub rowid: i64,
    pub path: String,
    pub kind: String,
    pub name: String,
    pub qualified_name: Option<String>,
    pub signature: Option<String>,
    pub start_line: u32,
    pub end_line: u32,
    pub content_hash: String,
    /// BM25 relevance (higher is better); for a chunk defining the searched
    /// identifier, [`EXACT_TIER_BONUS`] per tier instead (ranked above
    /// every text match, ordered by path within a tier).
    pub score: f64,
    /// 3: name equals the query exactly; 2: name or qualified name equals it
    /// ignoring case; 1: equal ignoring case and `_`; 0: text match only.
    pub exact_tier: u8,
}

/// One recorded plugin failure.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FailureRow {
    pub path: String,
    pub plugin: String,
    pub kind: String,
    pub message: String,
}

/// Counts for `status`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct IndexStats {
    pub files: u64,
    pub chunks: u64,
    pub chunks_by_kind: BTreeMap<String, u64>,
    /// chunker -> (files, chunks)
    pub by_chunker: BTreeMap<String, ChunkerCount>,
    /// Files indexed by the line fallback because a plugin failed on them.
    pub fallback_after_failure: u64,
    pub plugin_failures: u64,
    pub indexed_bytes: u64,
}

/// Files and chunks one chunker produced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ChunkerCount {
    pub files: u64,
    pub chunks: u64,
}

const SUMMARY_COLUMNS: &str = "c.id, f.path, c.chunk_id, c.kind, c.name, c.qualified_name, c.parent,
    c.start_line, c.end_line, c.signature, c.docstring, f.chunker";

fn summary(row: &Row<'_>) -> rusqlite::Result<ChunkSummary> {
    Ok(ChunkSummary {
        rowid: row.get(0)?,
        path: row.get(1)?,
        chunk_id: row.get(2)?,
        kind: row.get(3)?,
        name: row.get(4)?,
        qualified_name: row.get(5)?,
        parent: row.get(6)?,
        start_line: row.get(7)?,
        end_line: row.get(8)?,
        signature: row.get(9)?,
        docstring: row.get(10)?,
        chunker: row.get(11)?,
    })
}

const FULL_COLUMNS: &str = "c.id, f.path, f.chunker, c.content_hash, c.chunk_id, c.kind, c.name, c.qualified_name,
    c.parent, c.start_line, c.end_line, c.start_byte, c.end_byte, c.content, c.signature, c.docstring,
    c.related_symbols, c.refs, c.metadata";

fn full(row: &Row<'_>) -> rusqlite::Result<StoredChunk> {
    let json = |i: usize| -> rusqlite::Result<serde_json::Value> {
        let text: String = row.get(i)?;
        serde_json::from_str(&text)
            .map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e)))
    };
    let strings = |i: usize| -> rusqlite::Result<Vec<String>> {
        serde_json::from_value(json(i)?)
            .map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e)))
    };
    Ok(StoredChunk {
        rowid: row.get(0)?,
        path: row.get(1)?,
        chunker: row.get(2)?,
        content_hash: row.get(3)?,
        chunk: Chunk {
            id: row.get(4)?,
            kind: row.get(5)?,
            name: row.get(6)?,
            qualified_name: row.get(7)?,
            parent: row.get(8)?,
            start_line: row.get(9)?,
            end_line: row.get(10)?,
            start_byte: row.get(11)?,
            end_byte: row.get(12)?,
            content: row.get(13)?,
            signature: row.get(14)?,
            docstring: row.get(15)?,
            related_symbols: strings(16)?,
            references: strings(17)?,
            metadata: {
                let text: String = row.get(18)?;
                code_intel_core::Metadata::parse(text).map_err(|e| {
                    rusqlite::Error::FromSqlConversionFailure(18, rusqlite::types::Type::Text, e.into())
                })?
            },
        },
    })
}

/// Largest edit distance [`NameMatch::Fuzzy`] accepts, for names of at
/// least [`FUZZY_MIN_LEN`] characters: catches one or two typos without
/// matching unrelated short names.
pub const FUZZY_MAX_DISTANCE: usize = 2;
/// Shortest normalised query for which edit distance is tried at all.
pub const FUZZY_MIN_LEN: usize = 5;

impl Store {
    /// Every indexed file's fingerprint.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn indexed_files(&self) -> Result<Vec<IndexedFile>> {
        let mut stmt = self.conn().prepare("SELECT path, sha256, size, mtime_ns, indexed_at_ns FROM files")?;
        let rows = stmt.query_map([], |r| {
            Ok(IndexedFile {
                path: r.get(0)?,
                sha256: r.get(1)?,
                size: r.get(2)?,
                mtime_ns: r.get(3)?,
                indexed_at_ns: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// A meta value.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn meta(&self, key: &str) -> Result<Option<String>> {
        Ok(self.conn().query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0)).optional()?)
    }

    /// A cheap key that changes whenever the set of chunks changes (rows are
    /// only ever inserted with a fresh rowid or deleted), for derived data
    /// such as cross-file links to tell whether it is stale.
    pub fn chunks_key(&self) -> Result<String> {
        let (count, max): (i64, i64) =
            self.conn().query_row("SELECT count(*), coalesce(max(rowid), 0) FROM chunks", [], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(format!("{count}:{max}"))
    }

    /// Number of indexed files.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn file_count(&self) -> Result<u64> {
        Ok(count(self.conn().query_row("SELECT count(*) FROM files", [], |r| r.get(0))?))
    }

    /// Number of chunks.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn chunk_count(&self) -> Result<u64> {
        Ok(count(self.conn().query_row("SELECT count(*) FROM chunks", [], |r| r.get(0))?))
    }

    /// Counts for `status`.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn stats(&self) -> Result<IndexStats> {
        let conn = self.conn();
        let mut stats = IndexStats::default();
        (stats.files, stats.indexed_bytes, stats.fallback_after_failure) = conn.query_row(
            "SELECT count(*), COALESCE(SUM(size), 0), COALESCE(SUM(status = 'fallback' AND error IS NOT NULL), 0) FROM files",
            [],
            |r| Ok((count(r.get(0)?), count(r.get(1)?), count(r.get(2)?))),
        )?;
        let mut stmt = conn.prepare("SELECT kind, count(*) FROM chunks GROUP BY kind")?;
        for row in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, count(r.get(1)?))))? {
            let (kind, n) = row?;
            stats.chunks += n;
            stats.chunks_by_kind.insert(kind, n);
        }
        let mut stmt = conn.prepare(
            "SELECT f.chunker, count(*), COALESCE(SUM((SELECT count(*) FROM chunks c WHERE c.file_id = f.id)), 0)
             FROM files f GROUP BY f.chunker",
        )?;
        for row in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, count(r.get(1)?), count(r.get(2)?))))? {
            let (chunker, files, chunks) = row?;
            stats.by_chunker.insert(chunker, ChunkerCount { files, chunks });
        }
        stats.plugin_failures = count(conn.query_row("SELECT count(*) FROM plugin_failures", [], |r| r.get(0))?);
        Ok(stats)
    }

    /// Recorded plugin failures, newest files first, at most `limit`.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn plugin_failures(&self, limit: usize) -> Result<Vec<FailureRow>> {
        let mut stmt = self.conn().prepare(
            "SELECT f.path, p.plugin, p.kind, p.message FROM plugin_failures p JOIN files f ON f.id = p.file_id
             ORDER BY f.indexed_at_ns DESC, f.path LIMIT ?1",
        )?;
        let rows = stmt.query_map([i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
            Ok(FailureRow { path: r.get(0)?, plugin: r.get(1)?, kind: r.get(2)?, message: r.get(3)? })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Definitions named `name` (not line-fallback chunks), best matches
    /// first, at most `limit`. `kinds` empty = any kind.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn definitions(&self, name: &str, how: NameMatch, kinds: &[String], limit: usize) -> Result<Vec<ChunkSummary>> {
        let name = name.trim();
        if name.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let kinds_json = serde_json::to_string(kinds)?;
        let kind_filter = "AND c.kind <> ?2 AND (?3 = '[]' OR c.kind IN (SELECT value FROM json_each(?3)))";
        let mut out: Vec<ChunkSummary> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut push = |rows: Vec<ChunkSummary>, out: &mut Vec<ChunkSummary>| {
            for row in rows {
                if out.len() < limit && seen.insert(row.rowid) {
                    out.push(row);
                }
            }
        };
        // Exact: name or qualified name, then qualified names ending in
        // `<sep>name` (`Models\User` finds `App\Models\User`). Each
        // lookup goes through an index: the suffix match is tried only on
        // chunks named like the last segment.
        let last_segment = name.rsplit(['.', '\\', ':', '/']).next().unwrap_or(name);
        let qualified = last_segment != name && !last_segment.is_empty();
        let exact_sql = format!(
            "SELECT {SUMMARY_COLUMNS} FROM chunks c JOIN files f ON f.id = c.file_id
             WHERE c.id IN (SELECT id FROM chunks WHERE name = ?1 COLLATE NOCASE
                            UNION ALL SELECT id FROM chunks WHERE qualified_name = ?1 COLLATE NOCASE
                            UNION ALL SELECT id FROM chunks WHERE ?4 AND name = ?5 COLLATE NOCASE
                                AND (qualified_name LIKE '%.' || ?1 OR qualified_name LIKE '%\\' || ?1
                                     OR qualified_name LIKE '%::' || ?1))
             {kind_filter}
             ORDER BY (c.name = ?1) DESC, (c.qualified_name = ?1) DESC, f.path, c.start_line"
        );
        push(self.query_summaries(&exact_sql, params![name, FALLBACK_KIND, kinds_json, qualified, last_segment])?, &mut out);
        if how == NameMatch::Exact || out.len() >= limit {
            return Ok(out);
        }
        let prefix_sql = format!(
            "SELECT {SUMMARY_COLUMNS} FROM chunks c JOIN files f ON f.id = c.file_id
             WHERE c.name LIKE ?1 || '%' ESCAPE '\\' {kind_filter}
             ORDER BY length(c.name), c.name, f.path, c.start_line LIMIT ?4"
        );
        let escaped = name.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
        let lim = i64::try_from(limit).unwrap_or(i64::MAX);
        push(self.query_summaries(&prefix_sql, params![escaped, FALLBACK_KIND, kinds_json, lim])?, &mut out);
        if how == NameMatch::Prefix || out.len() >= limit {
            return Ok(out);
        }
        // Fuzzy: score every distinct definition name in Rust.
        let wanted = normalize_identifier(name);
        let mut stmt = self.conn().prepare_cached(&format!(
            "SELECT DISTINCT c.name FROM chunks c WHERE 1 {}",
            kind_filter.replace("?2", "?1").replace("?3", "?2")
        ))?;
        let names = stmt.query_map(params![FALLBACK_KIND, kinds_json], |r| r.get::<_, String>(0))?;
        let mut scored: Vec<(usize, String)> = Vec::new();
        for candidate in names {
            let candidate = candidate?;
            let norm = normalize_identifier(&candidate);
            let rank = if norm == wanted {
                0
            } else if norm.contains(&wanted) || (wanted.len() >= FUZZY_MIN_LEN && wanted.contains(&norm) && norm.len() >= FUZZY_MIN_LEN) {
                1 + norm.len().abs_diff(wanted.len())
            } else if wanted.chars().count() >= FUZZY_MIN_LEN {
                match bounded_levenshtein(&norm, &wanted, FUZZY_MAX_DISTANCE) {
                    Some(d) => 1000 + d,
                    None => continue,
                }
            } else {
                continue;
            };
            scored.push((rank, candidate));
        }
        scored.sort();
        let by_name = format!(
            "SELECT {SUMMARY_COLUMNS} FROM chunks c JOIN files f ON f.id = c.file_id
             WHERE c.name = ?1 {kind_filter} ORDER BY f.path, c.start_line"
        );
        for (_, candidate) in scored {
            if out.len() >= limit {
                break;
            }
            push(self.query_summaries(&by_name, params![candidate, FALLBACK_KIND, kinds_json])?, &mut out);
        }
        Ok(out)
    }

    fn query_summaries(&self, sql: &str, params: impl rusqlite::Params) -> Result<Vec<ChunkSummary>> {
        let mut stmt = self.conn().prepare_cached(sql)?;
        let rows = stmt.query_map(params, summary)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Every chunk of a file in line order (for outlines); empty when the
    /// file is not indexed.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn file_chunks(&self, path: &str) -> Result<Vec<ChunkSummary>> {
        self.query_summaries(
            &format!(
                "SELECT {SUMMARY_COLUMNS} FROM chunks c JOIN files f ON f.id = c.file_id
                 WHERE f.path = ?1 ORDER BY c.start_line, c.end_line DESC"
            ),
            [path],
        )
    }

    /// Chunks of every file under a directory prefix (`""` = all), in path
    /// and line order, excluding line-fallback chunks, at most `limit`.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn chunks_under(&self, dir: &str, limit: usize) -> Result<Vec<ChunkSummary>> {
        let prefix = dir.trim_end_matches('/');
        let pattern = if prefix.is_empty() { String::new() } else { format!("{prefix}/") };
        self.query_summaries(
            &format!(
                "SELECT {SUMMARY_COLUMNS} FROM chunks c JOIN files f ON f.id = c.file_id
                 WHERE substr(f.path, 1, length(?1)) = ?1 AND c.kind <> ?2
                 ORDER BY f.path, c.start_line, c.end_line DESC LIMIT ?3"
            ),
            params![pattern, FALLBACK_KIND, i64::try_from(limit).unwrap_or(i64::MAX)],
        )
    }

    /// Chunks of `path` that contain `line`, innermost (shortest) first.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn enclosing_chunks(&self, path: &str, line: u32) -> Result<Vec<StoredChunk>> {
        let mut stmt = self.conn().prepare_cached(&format!(
            "SELECT {FULL_COLUMNS} FROM chunks c JOIN files f ON f.id = c.file_id
             WHERE f.path = ?1 AND c.start_line <= ?2 AND c.end_line >= ?2
             ORDER BY (c.end_line - c.start_line), c.start_line"
        ))?;
        let rows = stmt.query_map(params![path, line], full)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// One chunk by row id.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn chunk(&self, rowid: i64) -> Result<Option<StoredChunk>> {
        let mut stmt = self
            .conn()
            .prepare_cached(&format!("SELECT {FULL_COLUMNS} FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.id = ?1"))?;
        Ok(stmt.query_row([rowid], full).optional()?)
    }

    /// Full-text search: chunks matching `query` (build it with
    /// [`Store::text_query`]), of one of `kinds` (empty = any), whose path
    /// `accept` allows, best first, at most `limit`. `exact` is the
    /// identifier whose definitions are boosted.
    ///
    /// # Errors
    /// SQLite errors (including FTS5 syntax errors in `query`'s expressions).
    pub fn fts_search(
        &self,
        query: &TextQuery,
        exact: Option<&str>,
        kinds: &[String],
        accept: &dyn Fn(&str) -> bool,
        limit: usize,
    ) -> Result<Vec<FtsHit>> {
        self.fts_search_bounded(query, exact, kinds, accept, limit, MAX_SCORED)
    }

    /// [`Store::fts_search`] with BM25 computed for at most `max_scored`
    /// candidates of a broad query ([`MAX_SCORED`] there).
    ///
    /// # Errors
    /// As [`Store::fts_search`].
    pub fn fts_search_bounded(
        &self,
        query: &TextQuery,
        exact: Option<&str>,
        kinds: &[String],
        accept: &dyn Fn(&str) -> bool,
        limit: usize,
        max_scored: usize,
    ) -> Result<Vec<FtsHit>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let kinds_json = serde_json::to_string(kinds)?;
        let mut hits = Vec::new();
        if let Some(exact) = exact {
            self.exact_identifier_hits(exact, &kinds_json, accept, limit, &mut hits)?;
            if hits.len() >= limit {
                return Ok(hits);
            }
        }
        self.ranked_text_hits(query, kinds, accept, limit, max_scored, &mut hits)?;
        Ok(hits)
    }

    /// The text matches of `query` by BM25, appended to `hits` until it
    /// holds `limit`, skipping the chunks already in `hits`.
    ///
    /// Ranking reads the full-text index alone (no join): only the best
    /// [`RANK_WINDOW`]-sized window of row ids is looked up in `chunks`, so a
    /// word found in most chunks does not cost a row read and a sort key per
    /// match. BM25 itself costs about a microsecond per matching row, so a
    /// query matching more than `max_scored` chunks (common words: "return
    /// value") is scored on a bounded candidate set instead of every match
    /// (see [`Store::broad_candidates`]). When filters reject too many of the
    /// window, every remaining match follows in one more ranked pass, scored
    /// exactly. A hit must also match [`TextQuery::required`]: the matches
    /// of both expressions are read without scoring and ranked by
    /// [`TextQuery::ranked`] alone.
    fn ranked_text_hits(
        &self,
        query: &TextQuery,
        kinds: &[String],
        accept: &dyn Fn(&str) -> bool,
        limit: usize,
        max_scored: usize,
        hits: &mut Vec<FtsHit>,
    ) -> Result<()> {
        let seen: std::collections::HashSet<i64> = hits.iter().map(|h| h.rowid).collect();
        let [w0, w1, w2, w3, w4, w5] = BM25_WEIGHTS;
        let bm25 = format!("-bm25(chunks_fts, {w0}, {w1}, {w2}, {w3}, {w4}, {w5})");
        let to_i64 = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        let wanted = limit - hits.len().min(limit);
        let window = (wanted + seen.len()).max(RANK_WINDOW);
        // With required words, the candidates are the matches of the whole
        // query (read without scoring, which is cheap), ranked by the
        // ranked words alone; the exhaustive pass matches the whole query.
        let whole = match &query.required {
            Some(required) => format!("({}) AND ({required})", query.ranked),
            None => query.ranked.clone(),
        };
        // `complete`: the first pass sees every match. A query known to
        // match at most `max_scored` chunks is ranked at once: reading its
        // matches first, only to count them, took about as long as ranking
        // them on real repositories' indexes (bench/README.md).
        let (broad, complete) = if query.known_narrow(max_scored) {
            (None, true)
        } else {
            match (self.broad_candidates(&whole, max_scored)?, &query.required) {
                (Candidates::All(ids), Some(_)) => (Some(ids), true),
                (Candidates::All(_), None) => (None, true),
                (Candidates::Broad(ids), _) => (Some(ids), false),
            }
        };
        let mut lookup = self.conn().prepare_cached(
            "SELECT c.id, f.path, c.kind, c.name, c.qualified_name, c.signature, c.start_line, c.end_line, c.content_hash
             FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.id = ?1",
        )?;
        // First pass: the best `window` rows (of the candidates, for a broad
        // query); second, only when filters left too few: every remaining
        // match, still in rank order.
        let mut done: std::collections::HashSet<i64> = std::collections::HashSet::new();
        for pass in 0..2 {
            let (sql, candidates) = match (&broad, pass) {
                (Some(ids), 0) => (
                    format!(
                        "SELECT rowid, {bm25} AS relevance FROM chunks_fts
                         WHERE chunks_fts MATCH ?1 AND +rowid IN (SELECT value FROM json_each(?3))
                         ORDER BY relevance DESC, rowid LIMIT ?2"
                    ),
                    serde_json::to_string(ids)?,
                ),
                _ => (
                    format!(
                        "SELECT rowid, {bm25} AS relevance FROM chunks_fts WHERE chunks_fts MATCH ?1
                         ORDER BY relevance DESC, rowid LIMIT ?2 OFFSET ?3"
                    ),
                    "0".to_string(),
                ),
            };
            let count = if pass == 0 { window } else { usize::MAX };
            let mut page = Vec::new();
            let mut stmt = self.conn().prepare_cached(&sql)?;
            let match_expr = if pass == 0 { &query.ranked } else { &whole };
            let mut rows = stmt.query(params![match_expr, to_i64(count), candidates])?;
            let mut returned = 0usize;
            while let Some(row) = rows.next()? {
                returned += 1;
                let rowid: i64 = row.get(0)?;
                if seen.contains(&rowid) || !done.insert(rowid) {
                    continue;
                }
                let relevance: f64 = row.get(1)?;
                let Some(hit) = lookup.query_row([rowid], |r| fts_hit(r, r.get(1)?, relevance, 0)).optional()? else {
                    continue;
                };
                if (!kinds.is_empty() && !kinds.contains(&hit.kind)) || !accept(&hit.path) {
                    continue;
                }
                page.push(hit);
                if pass > 0 && hits.len() + page.len() >= limit {
                    break;
                }
            }
            // Equal scores: path, then line order.
            page.sort_by(|a, b| {
                b.score.total_cmp(&a.score).then_with(|| a.path.cmp(&b.path)).then(a.start_line.cmp(&b.start_line))
            });
            page.truncate(limit - hits.len());
            hits.extend(page);
            if hits.len() >= limit || (complete && returned < count) {
                break;
            }
        }
        Ok(())
    }

    /// The chunks to score for `match_expr`: all of its matches when there
    /// are at most `max_scored`; else the candidates of this broad query, at
    /// most `max_scored` row ids: first the chunks whose name, qualified
    /// name, signature, docstring or path hold the whole query (BM25 weighs
    /// those columns 2 to 10 times the body), then other matches in index
    /// order. Each read stops after `max_scored` rows and none computes BM25.
    fn broad_candidates(&self, match_expr: &str, max_scored: usize) -> Result<Candidates> {
        let cap = i64::try_from(max_scored).unwrap_or(i64::MAX);
        let mut stmt = self.conn().prepare_cached("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?1 LIMIT ?2")?;
        let sample: Vec<i64> =
            stmt.query_map(params![match_expr, cap.saturating_add(1)], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
        if sample.len() <= max_scored {
            return Ok(Candidates::All(sample));
        }
        let named = format!("{{name qualified_name signature docstring path}} : ({match_expr})");
        let mut ids: Vec<i64> = stmt.query_map(params![named, cap], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
        let have: std::collections::HashSet<i64> = ids.iter().copied().collect();
        ids.extend(sample.into_iter().filter(|id| !have.contains(id)).take(max_scored - ids.len()));
        Ok(Candidates::Broad(ids))
    }

    /// The chunks defining identifier `exact` (exact tiers 3 to 1), found
    /// through the name indexes rather than by scoring every text match: an
    /// identifier's definitions rank first anyway, and a common name can
    /// match thousands of chunks by text (FTS5 computes BM25 for every match,
    /// and even one row's BM25 reads the whole posting list of each term).
    /// A chunk so named always matches the text query too (names are indexed
    /// with their identifier parts). Within a tier, definitions come in path
    /// order, scored by the tier alone.
    fn exact_identifier_hits(
        &self,
        exact: &str,
        kinds_json: &str,
        accept: &dyn Fn(&str) -> bool,
        limit: usize,
        hits: &mut Vec<FtsHit>,
    ) -> Result<()> {
        let mut stmt = self.conn().prepare_cached(
            "SELECT c.id, f.path, c.kind, c.name, c.qualified_name, c.signature, c.start_line, c.end_line, c.content_hash,
                    CASE WHEN c.name = ?1 THEN 3
                         WHEN c.name = ?1 COLLATE NOCASE OR c.qualified_name = ?1 COLLATE NOCASE THEN 2
                         ELSE 1 END AS tier
             FROM chunks c JOIN files f ON f.id = c.file_id
             WHERE c.id IN (SELECT id FROM chunks WHERE name = ?1 COLLATE NOCASE
                            UNION ALL SELECT id FROM chunks WHERE qualified_name = ?1 COLLATE NOCASE
                            UNION ALL SELECT id FROM chunks WHERE lower(replace(name, '_', '')) = ?2)
               AND c.kind <> ?3 AND (?4 = '[]' OR c.kind IN (SELECT value FROM json_each(?4)))
             ORDER BY tier DESC, f.path, c.start_line",
        )?;
        let mut rows = stmt.query(params![exact, normalize_identifier(exact), FALLBACK_KIND, kinds_json])?;
        while let Some(row) = rows.next()? {
            let path: String = row.get(1)?;
            if !accept(&path) {
                continue;
            }
            hits.push(fts_hit(row, path, 0.0, row.get(9)?)?);
            if hits.len() >= limit {
                break;
            }
        }
        Ok(())
    }
}

/// A hit from a row whose first nine columns are `c.id, f.path, c.kind,
/// c.name, c.qualified_name, c.signature, c.start_line, c.end_line,
/// c.content_hash` (`path` already read), scored `relevance` plus the tier bonus.
fn fts_hit(row: &Row<'_>, path: String, relevance: f64, tier: u8) -> rusqlite::Result<FtsHit> {
    Ok(FtsHit {
        rowid: row.get(0)?,
        path,
        kind: row.get(2)?,
        name: row.get(3)?,
        qualified_name: row.get(4)?,
        signature: row.get(5)?,
        start_line: row.get(6)?,
        end_line: row.get(7)?,
        content_hash: row.get(8)?,
        score: relevance + f64::from(tier) * EXACT_TIER_BONUS,
        exact_tier: tier,
    })
}

/// SQLite counts are `i64`; they are never negative.
fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// Levenshtein distance between `a` and `b` if it is at most `max`.
fn bounded_levenshtein(a: &str, b: &str, max: usize) -> Option<usize> {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > max {
        return None;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        let mut row_min = cur[0];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
            row_min = row_min.min(cur[j + 1]);
        }
        if row_min > max {
            return None;
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    (prev[b.len()] <= max).then_some(prev[b.len()])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FileRecord;
    use crate::tokenize::match_expression;
    use code_intel_core::ChunkedFile;

    fn chunk(id: &str, kind: &str, name: &str, signature: Option<&str>, content: &str) -> Chunk {
        Chunk {
            id: id.into(),
            kind: kind.into(),
            name: name.into(),
            qualified_name: None,
            parent: None,
            start_line: 1,
            end_line: 3,
            start_byte: 0,
            end_byte: 1,
            content: content.into(),
            signature: signature.map(Into::into),
            docstring: None,
            related_symbols: vec![],
            references: vec![],
            metadata: code_intel_core::Metadata::empty(),
        }
    }

    /// `n` filler files whose one chunk mentions `words` in its body only,
    /// then the files of `extra`, indexed last (highest row ids).
    fn filled_store(n: usize, words: &str, extra: &[(&str, Chunk)]) -> Store {
        let mut store = Store::open_in_memory().unwrap();
        let mut files: Vec<(String, Chunk)> = (0..n)
            .map(|i| {
                let body = format!("def step_{i}(x):\n    # {words} and more filler text here\n    return x + {i}");
                (format!("lib/filler_{i:04}.py"), chunk("c", "function", &format!("step_{i}"), None, &body))
            })
            .collect();
        files.extend(extra.iter().map(|(p, c)| ((*p).to_string(), c.clone())));
        store
            .write(|w| {
                for (path, c) in &files {
                    let chunked = ChunkedFile { chunks: vec![c.clone()], chunker: "test".into(), ..Default::default() };
                    let file = FileRecord { path: path.clone(), sha256: "0".into(), size: 1, mtime_ns: 0 };
                    w.replace_file(&file, &chunked, 0)?;
                }
                Ok::<_, crate::StoreError>(())
            })
            .unwrap();
        store
    }

    fn search(store: &Store, query: &str, limit: usize, max_scored: usize) -> Vec<FtsHit> {
        let text = store.text_query(query, false).unwrap().unwrap();
        let exact = (!query.contains(' ')).then_some(query);
        store.fts_search_bounded(&text, exact, &[], &|_| true, limit, max_scored).unwrap()
    }

    #[test]
    fn prose_query_finds_the_body_that_holds_both_words() {
        let target = chunk("t", "function", "refresh", None, "def refresh(cache):\n    # evict stale entries from the cache\n");
        let store = filled_store(200, "cache", &[("app/cache.py", target)]);
        for max_scored in [MAX_SCORED, 16] {
            let hits = search(&store, "evict cache", 5, max_scored);
            assert_eq!(hits.len(), 1, "only one chunk holds both words ({max_scored})");
            assert_eq!(hits[0].path, "app/cache.py");
            assert!(hits[0].score > 0.0 && hits[0].exact_tier == 0);
        }
    }

    #[test]
    fn broad_query_ranks_a_named_match_beyond_the_sample_first() {
        // 300 chunks mention both words in their bodies; the chunk named
        // after them is indexed last, outside the index-order sample.
        let named = chunk("n", "function", "parse_config_value", Some("def parse_config_value(raw)"), "def parse_config_value(raw):\n    return raw");
        let store = filled_store(300, "config value", &[("app/config.py", named)]);
        let exact = search(&store, "config value", 10, usize::MAX);
        let bounded = search(&store, "config value", 10, 32);
        assert_eq!(exact[0].path, "app/config.py", "BM25 over every match");
        assert_eq!(bounded[0].path, "app/config.py", "BM25 over the candidates");
        assert_eq!(bounded.len(), 10);
        assert!((bounded[0].score - exact[0].score).abs() < 1e-9, "the same BM25 score either way");
        // Below the bound every match is scored: identical answers.
        let small = filled_store(20, "config value", &[]);
        assert_eq!(search(&small, "config value", 10, 32), search(&small, "config value", 10, usize::MAX));
    }

    #[test]
    fn identifier_query_ranks_the_definition_first_among_many_mentions() {
        let def = chunk("d", "function", "loadSettings", Some("function loadSettings()"), "function loadSettings() { return {}; }");
        let store = filled_store(500, "loadSettings load settings", &[("src/settings.js", def)]);
        for max_scored in [MAX_SCORED, 32] {
            let hits = search(&store, "loadSettings", 10, max_scored);
            assert_eq!(hits[0].path, "src/settings.js", "{max_scored}");
            assert_eq!(hits[0].exact_tier, 3);
            assert_eq!(hits.len(), 10, "mentions follow");
            assert!(hits[1..].iter().all(|h| h.exact_tier == 0 && h.score < hits[0].score));
        }
    }

    #[test]
    fn filters_that_reject_the_ranked_window_still_fill_the_limit() {
        let extra: Vec<(String, Chunk)> =
            (0..3).map(|i| (format!("tests/test_{i}.py"), chunk("c", "function", &format!("check_{i}"), None, "assert token parse"))).collect();
        let extra: Vec<(&str, Chunk)> = extra.iter().map(|(p, c)| (p.as_str(), c.clone())).collect();
        let store = filled_store(200, "token parse", &extra);
        let expr = TextQuery::plain(match_expression("token parse", false).unwrap());
        for max_scored in [MAX_SCORED, 16] {
            let hits = store
                .fts_search_bounded(&expr, None, &[], &|p: &str| p.starts_with("tests/"), 5, max_scored)
                .unwrap();
            let paths: Vec<&str> = hits.iter().map(|h| h.path.as_str()).collect();
            assert_eq!(paths, ["tests/test_0.py", "tests/test_1.py", "tests/test_2.py"], "{max_scored}");
        }
    }


    #[test]
    fn levenshtein_bounds() {
        assert_eq!(bounded_levenshtein("getusername", "getusername", 2), Some(0));
        assert_eq!(bounded_levenshtein("getusername", "getusrname", 2), Some(1));
        assert_eq!(bounded_levenshtein("getusername", "setuserage", 2), None);
    }
}
