//! The read side: what the indexer, search, status and the code tools ask of
//! the chunk index.

use std::collections::BTreeMap;

use code_intel_core::Chunk;
use code_intel_core::chunk::FALLBACK_KIND;
use rusqlite::{OptionalExtension, Row, params};
use serde::Serialize;

use crate::tokenize::normalize_identifier;
use crate::{Result, Store};

/// BM25 column weights of the full-text index, in column order: name,
/// qualified name, signature, docstring, content, path. A hit in a name says
/// far more about a chunk than a hit somewhere in its body; the path is a
/// weak hint (`UserController` in `app/Http/Controllers/UserController.php`).
pub const BM25_WEIGHTS: [f64; 6] = [10.0, 6.0, 4.0, 2.0, 1.0, 2.0];

/// Score added per exact-identifier tier (see [`FtsHit::exact_tier`]). Larger
/// than any BM25 score seen in practice (< 50) so that the definition of the
/// identifier searched for ranks above chunks that merely mention it.
pub const EXACT_TIER_BONUS: f64 = 100.0;

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
            metadata: json(18)?,
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

    /// Full-text search: chunks matching the FTS5 expression `match_expr`
    /// (build it with [`crate::tokenize::match_expression`]), of one of
    /// `kinds` (empty = any), whose path `accept` allows, best first, at most
    /// `limit`. `exact` is the identifier whose definitions are boosted.
    ///
    /// # Errors
    /// SQLite errors (including FTS5 syntax errors in `match_expr`).
    pub fn fts_search(
        &self,
        match_expr: &str,
        exact: Option<&str>,
        kinds: &[String],
        accept: &dyn Fn(&str) -> bool,
        limit: usize,
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
        let seen: std::collections::HashSet<i64> = hits.iter().map(|h| h.rowid).collect();
        let [w0, w1, w2, w3, w4, w5] = BM25_WEIGHTS;
        let sql = format!(
            "SELECT c.id, f.path, c.kind, c.name, c.qualified_name, c.signature, c.start_line, c.end_line,
                    c.content_hash, -bm25(chunks_fts, {w0}, {w1}, {w2}, {w3}, {w4}, {w5}) AS relevance,
                    CASE WHEN ?2 IS NULL OR c.kind = ?4 THEN 0
                         WHEN c.name = ?2 THEN 3
                         WHEN c.name = ?2 COLLATE NOCASE OR c.qualified_name = ?2 COLLATE NOCASE THEN 2
                         WHEN lower(replace(c.name, '_', '')) = ?3 THEN 1
                         ELSE 0 END AS tier
             FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid JOIN files f ON f.id = c.file_id
             WHERE chunks_fts MATCH ?1 AND (?5 = '[]' OR c.kind IN (SELECT value FROM json_each(?5)))
             ORDER BY tier DESC, relevance DESC, f.path, c.start_line"
        );
        let normalized = exact.map(normalize_identifier);
        let mut stmt = self.conn().prepare_cached(&sql)?;
        let mut rows = stmt.query(params![match_expr, exact, normalized, FALLBACK_KIND, kinds_json])?;
        while let Some(row) = rows.next()? {
            let path: String = row.get(1)?;
            if !accept(&path) || seen.contains(&row.get::<_, i64>(0)?) {
                continue;
            }
            let relevance: f64 = row.get(9)?;
            hits.push(fts_hit(row, path, relevance, row.get(10)?)?);
            if hits.len() >= limit {
                break;
            }
        }
        Ok(hits)
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

    #[test]
    fn levenshtein_bounds() {
        assert_eq!(bounded_levenshtein("getusername", "getusername", 2), Some(0));
        assert_eq!(bounded_levenshtein("getusername", "getusrname", 2), Some(1));
        assert_eq!(bounded_levenshtein("getusername", "setuserage", 2), None);
    }
}
