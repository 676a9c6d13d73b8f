//! Embeddings (the store of record for vectors) and the `map` collection.
//!
//! - `embedding_models`: one row per model identity (name + revision, where
//!   the revision fingerprints the model files and the text recipe).
//! - `embeddings`: one vector per (model, content hash). Chunks are keyed by
//!   the SHA-256 of their content, so an unchanged chunk is never embedded
//!   again, even when its file changed around it or moved.
//! - `map_entries`: agreements (natural-language description -> symbols and
//!   files) learned from successful sessions; embedded like chunks, under the
//!   hash of their text ([`map_text_hash`]).
//! - `vector_generation`: a counter bumped (by triggers) on every change that
//!   can alter a vector index: chunk rows, embeddings, map entries. The
//!   vector index compares it with the generation it was built at.
//!
//! Vectors are stored as little-endian `f32`, L2-normalised.
//!
//! After an embedding pass leaves nothing without a vector, the `meta` table
//! remembers so (model, generation, coverage): until the generation moves,
//! the next pass and every coverage question are answered without scanning
//! the chunks (a scan costs ~4 us per chunk: 9 ms at 2,000 chunks, a quarter
//! of a second at 60,000).

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::chunks::{Writer, hex};
use crate::migrations::Schema;
use crate::{Result, Store};

/// Schema of module `embeddings`. The triggers on `chunks` belong to this
/// module: a later step of module `index` that rebuilds `chunks` must be
/// followed by a step here that recreates them.
pub const SCHEMA: Schema = Schema {
    module: "embeddings",
    steps: &["CREATE TABLE embedding_models (
            id         INTEGER PRIMARY KEY,
            name       TEXT NOT NULL,
            revision   TEXT NOT NULL,
            dim        INTEGER NOT NULL,
            created_ms INTEGER NOT NULL,
            UNIQUE (name, revision)
        ) STRICT;
        CREATE TABLE embeddings (
            model_id     INTEGER NOT NULL REFERENCES embedding_models(id) ON DELETE CASCADE,
            content_hash TEXT NOT NULL,
            vector       BLOB NOT NULL,   -- little-endian f32 x dim, unit length
            PRIMARY KEY (model_id, content_hash)
        ) STRICT, WITHOUT ROWID;
        CREATE TABLE map_entries (
            id           INTEGER PRIMARY KEY,
            key          TEXT NOT NULL UNIQUE,  -- agreement id
            text         TEXT NOT NULL,         -- the natural-language side, embedded
            symbols      TEXT NOT NULL,         -- JSON array of symbol names
            files        TEXT NOT NULL,         -- JSON array of repo-relative paths
            metadata     TEXT NOT NULL,         -- JSON object (session, evidence, ...)
            content_hash TEXT NOT NULL,         -- map_text_hash(text)
            created_ms   INTEGER NOT NULL
        ) STRICT;
        CREATE TABLE vector_generation (
            id         INTEGER PRIMARY KEY CHECK (id = 1),
            generation INTEGER NOT NULL
        ) STRICT;
        INSERT INTO vector_generation (id, generation) VALUES (1, 0);
        CREATE TRIGGER vector_gen_chunk_insert AFTER INSERT ON chunks BEGIN
            UPDATE vector_generation SET generation = generation + 1 WHERE id = 1;
        END;
        CREATE TRIGGER vector_gen_chunk_delete AFTER DELETE ON chunks BEGIN
            UPDATE vector_generation SET generation = generation + 1 WHERE id = 1;
        END;
        CREATE TRIGGER vector_gen_embedding_insert AFTER INSERT ON embeddings BEGIN
            UPDATE vector_generation SET generation = generation + 1 WHERE id = 1;
        END;
        CREATE TRIGGER vector_gen_embedding_delete AFTER DELETE ON embeddings BEGIN
            UPDATE vector_generation SET generation = generation + 1 WHERE id = 1;
        END;
        CREATE TRIGGER vector_gen_map_insert AFTER INSERT ON map_entries BEGIN
            UPDATE vector_generation SET generation = generation + 1 WHERE id = 1;
        END;
        CREATE TRIGGER vector_gen_map_update AFTER UPDATE ON map_entries BEGIN
            UPDATE vector_generation SET generation = generation + 1 WHERE id = 1;
        END;
        CREATE TRIGGER vector_gen_map_delete AFTER DELETE ON map_entries BEGIN
            UPDATE vector_generation SET generation = generation + 1 WHERE id = 1;
        END;"],
};

/// A model's identity as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmbeddingModel {
    pub id: i64,
    pub name: String,
    pub revision: String,
    pub dim: usize,
}

/// A chunk (or map entry) that has no vector for a model yet.
#[derive(Clone, Debug)]
pub struct PendingText {
    pub content_hash: String,
    /// Rows sharing this content (chunks with equal content are embedded once).
    pub rows: u64,
    pub kind: String,
    pub name: String,
    pub qualified_name: Option<String>,
    pub content: String,
    /// The chunk's plugin metadata (a JSON object's text; empty for map
    /// entries).
    pub metadata: String,
}

/// A point of a collection: the row it belongs to, and the hash its vector
/// is stored under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VectorPoint {
    /// `chunks.id` for the forest, `map_entries.id` for the map.
    pub rowid: i64,
    pub content_hash: String,
}

/// An agreement in the map collection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MapEntry {
    /// Stable id (the agreement's id).
    pub key: String,
    /// The natural-language description that was mapped.
    pub text: String,
    pub symbols: Vec<String>,
    pub files: Vec<String>,
    /// Free-form JSON object: session id, code evidence, ...
    #[serde(default)]
    pub metadata: serde_json::Value,
}

/// A stored map entry.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StoredMapEntry {
    pub rowid: i64,
    #[serde(flatten)]
    pub entry: MapEntry,
    pub created_ms: i64,
}

/// Where a chunk is, for presenting a vector hit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChunkLocation {
    pub rowid: i64,
    pub path: String,
    pub kind: String,
    pub name: String,
    pub qualified_name: Option<String>,
    pub start_line: u32,
    pub end_line: u32,
}

/// How far embedding has got for one model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbeddingCoverage {
    /// Chunks whose content has a vector.
    pub embedded_chunks: u64,
    pub total_chunks: u64,
    /// Map entries whose text has a vector.
    pub embedded_map: u64,
    pub total_map: u64,
}

impl EmbeddingCoverage {
    /// Percentage of chunks embedded (100 for an empty index).
    #[must_use]
    pub fn percent(&self) -> f64 {
        if self.total_chunks == 0 {
            100.0
        } else {
            // Counts are far below 2^52: exact in f64.
            #[allow(clippy::cast_precision_loss)]
            let p = self.embedded_chunks as f64 * 100.0 / self.total_chunks as f64;
            p
        }
    }

    /// Everything (chunks and map) has a vector.
    #[must_use]
    pub fn complete(&self) -> bool {
        self.embedded_chunks >= self.total_chunks && self.embedded_map >= self.total_map
    }
}

/// `meta` key of the [`EmbeddedThrough`] record.
const EMBEDDED_THROUGH_KEY: &str = "embedded_through";

/// Row ids per statement in [`Store::chunk_locations`]: far below SQLite's
/// limit on bound parameters (32,766), and a search's whole candidate list
/// in one go.
const LOCATION_BATCH: usize = 256;

/// "At `generation`, every chunk and map entry had a vector for `model_id`."
#[derive(Debug, Serialize, Deserialize)]
struct EmbeddedThrough {
    model_id: i64,
    generation: i64,
    coverage: EmbeddingCoverage,
}

fn generation_of(conn: &Connection) -> Result<i64> {
    Ok(conn.query_row("SELECT generation FROM vector_generation WHERE id = 1", [], |r| r.get(0))?)
}

/// The coverage of `model_id` when the store still is as a complete pass
/// left it (same generation), without counting.
fn remembered_coverage(conn: &Connection, model_id: i64) -> Result<Option<EmbeddingCoverage>> {
    let text: Option<String> =
        conn.query_row("SELECT value FROM meta WHERE key = ?1", [EMBEDDED_THROUGH_KEY], |r| r.get(0)).optional()?;
    let Some(record) = text.and_then(|t| serde_json::from_str::<EmbeddedThrough>(&t).ok()) else { return Ok(None) };
    Ok((record.model_id == model_id && record.generation == generation_of(conn)?).then_some(record.coverage))
}

fn count_coverage(conn: &Connection, model_id: Option<i64>) -> Result<EmbeddingCoverage> {
    let count = |sql: &str, params: &[&dyn rusqlite::ToSql]| -> Result<u64> {
        let n: i64 = conn.query_row(sql, params, |r| r.get(0))?;
        Ok(u64::try_from(n).unwrap_or(0))
    };
    let total_chunks = count("SELECT count(*) FROM chunks", &[])?;
    let total_map = count("SELECT count(*) FROM map_entries", &[])?;
    let Some(model_id) = model_id else {
        return Ok(EmbeddingCoverage { embedded_chunks: 0, total_chunks, embedded_map: 0, total_map });
    };
    let embedded_chunks = count(
        "SELECT count(*) FROM chunks c WHERE EXISTS
           (SELECT 1 FROM embeddings e WHERE e.model_id = ?1 AND e.content_hash = c.content_hash)",
        &[&model_id],
    )?;
    let embedded_map = count(
        "SELECT count(*) FROM map_entries m WHERE EXISTS
           (SELECT 1 FROM embeddings e WHERE e.model_id = ?1 AND e.content_hash = m.content_hash)",
        &[&model_id],
    )?;
    Ok(EmbeddingCoverage { embedded_chunks, total_chunks, embedded_map, total_map })
}

/// The hash a map entry's vector is stored under: distinct from any chunk
/// content hash (a chunk whose content equals a map text is embedded with a
/// different e5 prefix, so it must not share the vector).
#[must_use]
pub fn map_text_hash(text: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"map\0");
    h.update(text.as_bytes());
    hex(&h.finalize())
}

/// Encodes a vector for storage.
#[must_use]
pub fn vector_to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Decodes a stored vector (`None` if the length is not `dim` floats).
#[must_use]
pub fn blob_to_vector(blob: &[u8], dim: usize) -> Option<Vec<f32>> {
    (blob.len() == dim * 4).then(|| blob.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl Writer<'_> {
    /// The row of a model identity, created if new.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn ensure_embedding_model(&self, name: &str, revision: &str, dim: usize) -> Result<EmbeddingModel> {
        let tx = self.transaction();
        tx.prepare_cached(
            "INSERT INTO embedding_models (name, revision, dim, created_ms) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (name, revision) DO NOTHING",
        )?
        .execute(params![name, revision, i64::try_from(dim).unwrap_or(i64::MAX), now_ms()])?;
        let (id, dim): (i64, i64) = tx.query_row(
            "SELECT id, dim FROM embedding_models WHERE name = ?1 AND revision = ?2",
            params![name, revision],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok(EmbeddingModel { id, name: name.to_string(), revision: revision.to_string(), dim: usize::try_from(dim).unwrap_or(0) })
    }

    /// Stores vectors (replacing any under the same key).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn put_embeddings(&self, model_id: i64, vectors: &[(&str, &[f32])]) -> Result<()> {
        let mut stmt = self.transaction().prepare_cached(
            "INSERT INTO embeddings (model_id, content_hash, vector) VALUES (?1, ?2, ?3)
             ON CONFLICT (model_id, content_hash) DO UPDATE SET vector = excluded.vector",
        )?;
        for (hash, v) in vectors {
            stmt.execute(params![model_id, hash, vector_to_blob(v)])?;
        }
        Ok(())
    }

    /// Drops vectors nobody can use any more: those of models other than
    /// `keep_model_id` and `also_keep` (the other model in use: the main
    /// and the English model keep each other's vectors), and those of
    /// `keep_model_id` whose hash no chunk or map entry has. Returns how many
    /// went (a dropped model counts once).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn prune_embeddings(&self, keep_model_id: i64, also_keep: &[i64]) -> Result<usize> {
        let tx = self.transaction();
        let kept: Vec<String> = std::iter::once(keep_model_id).chain(also_keep.iter().copied()).map(|id| id.to_string()).collect();
        // Ids are integers: listing them in the statement is safe.
        let mut removed = tx.execute(&format!("DELETE FROM embedding_models WHERE id NOT IN ({})", kept.join(",")), [])?;
        removed += tx.execute(
            "DELETE FROM embeddings WHERE model_id = ?1
               AND content_hash NOT IN (SELECT content_hash FROM chunks)
               AND content_hash NOT IN (SELECT content_hash FROM map_entries)",
            [keep_model_id],
        )?;
        Ok(removed)
    }

    /// Counts the coverage of `model_id` as this transaction sees it and,
    /// when nothing lacks a vector, remembers so for the current generation
    /// (see the module doc). Call it in the transaction that ends a pass:
    /// the count and the generation are then of one consistent state.
    ///
    /// # Errors
    /// SQLite or JSON errors.
    pub fn finish_embedding_pass(&self, model_id: i64) -> Result<EmbeddingCoverage> {
        let tx = self.transaction();
        let coverage = count_coverage(tx, Some(model_id))?;
        if coverage.complete() {
            let record = EmbeddedThrough { model_id, generation: generation_of(tx)?, coverage };
            self.set_meta(EMBEDDED_THROUGH_KEY, &serde_json::to_string(&record)?)?;
        }
        Ok(coverage)
    }

    /// Adds or replaces (by key) an agreement in the map collection. Its
    /// vector is computed by the embedding pipeline (or at once by callers
    /// holding the encoder, via [`Writer::put_embeddings`] under
    /// [`map_text_hash`]). Returns the row id.
    ///
    /// # Errors
    /// SQLite or JSON errors.
    pub fn upsert_map_entry(&self, entry: &MapEntry) -> Result<i64> {
        let metadata = if entry.metadata.is_object() { entry.metadata.clone() } else { serde_json::json!({}) };
        let tx = self.transaction();
        tx.prepare_cached(
            "INSERT INTO map_entries (key, text, symbols, files, metadata, content_hash, created_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (key) DO UPDATE SET text = excluded.text, symbols = excluded.symbols,
                files = excluded.files, metadata = excluded.metadata, content_hash = excluded.content_hash",
        )?
        .execute(params![
            entry.key,
            entry.text,
            serde_json::to_string(&entry.symbols)?,
            serde_json::to_string(&entry.files)?,
            serde_json::to_string(&metadata)?,
            map_text_hash(&entry.text),
            now_ms()
        ])?;
        Ok(tx.query_row("SELECT id FROM map_entries WHERE key = ?1", [&entry.key], |r| r.get(0))?)
    }

    /// Removes an agreement from the map. Returns whether it existed.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn delete_map_entry(&self, key: &str) -> Result<bool> {
        Ok(self.transaction().execute("DELETE FROM map_entries WHERE key = ?1", [key])? > 0)
    }
}

impl Store {
    /// The stored identity of a model, if any vectors were ever stored for it.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn embedding_model(&self, name: &str, revision: &str) -> Result<Option<EmbeddingModel>> {
        Ok(self
            .conn()
            .query_row(
                "SELECT id, dim FROM embedding_models WHERE name = ?1 AND revision = ?2",
                params![name, revision],
                |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
            )
            .optional()?
            .map(|(id, dim)| EmbeddingModel { id, name: name.to_string(), revision: revision.to_string(), dim: usize::try_from(dim).unwrap_or(0) }))
    }

    /// The change counter of everything vector indexes are built from.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn vector_generation(&self) -> Result<i64> {
        Ok(self.conn().query_row("SELECT generation FROM vector_generation WHERE id = 1", [], |r| r.get(0))?)
    }

    /// Distinct chunk contents without a vector for `model_id`, ordered by
    /// content length so consecutive batches hold texts of similar length.
    /// At most `limit`.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn pending_chunks(&self, model_id: i64, limit: usize) -> Result<Vec<PendingText>> {
        let mut stmt = self.conn().prepare_cached(
            "SELECT c.content_hash, c.kind, c.name, c.qualified_name, c.content, count(*), c.metadata
             FROM chunks c
             WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.model_id = ?1 AND e.content_hash = c.content_hash)
             GROUP BY c.content_hash
             ORDER BY length(c.content), c.content_hash
             LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![model_id, i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
            Ok(PendingText {
                content_hash: r.get(0)?,
                kind: r.get(1)?,
                name: r.get(2)?,
                qualified_name: r.get(3)?,
                content: r.get(4)?,
                rows: u64::try_from(r.get::<_, i64>(5)?).unwrap_or(0),
                metadata: r.get(6)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Map entries without a vector for `model_id` (`content` is the text).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn pending_map_entries(&self, model_id: i64) -> Result<Vec<PendingText>> {
        let mut stmt = self.conn().prepare_cached(
            "SELECT m.content_hash, m.text FROM map_entries m
             WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.model_id = ?1 AND e.content_hash = m.content_hash)
             GROUP BY m.content_hash",
        )?;
        let rows = stmt.query_map([model_id], |r| {
            Ok(PendingText {
                content_hash: r.get(0)?,
                rows: 1,
                kind: "map".to_string(),
                name: String::new(),
                qualified_name: None,
                content: r.get(1)?,
                metadata: String::new(),
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// How many chunks and map entries have vectors for `model_id` (from the
    /// record of the last complete pass while the generation has not moved).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn embedding_coverage(&self, model_id: Option<i64>) -> Result<EmbeddingCoverage> {
        if let Some(id) = model_id
            && let Some(coverage) = remembered_coverage(self.conn(), id)?
        {
            return Ok(coverage);
        }
        count_coverage(self.conn(), model_id)
    }

    /// The coverage of `model_id` if the last embedding pass for it left
    /// every chunk and map entry with a vector and nothing changed since:
    /// then there is nothing to embed. `None` means "count and look".
    ///
    /// # Errors
    /// SQLite errors.
    pub fn embedded_through(&self, model_id: i64) -> Result<Option<EmbeddingCoverage>> {
        remembered_coverage(self.conn(), model_id)
    }

    /// The points of the forest collection: chunks that have a vector.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn forest_points(&self, model_id: i64) -> Result<Vec<VectorPoint>> {
        self.points(
            "SELECT c.id, c.content_hash FROM chunks c
             WHERE EXISTS (SELECT 1 FROM embeddings e WHERE e.model_id = ?1 AND e.content_hash = c.content_hash)",
            model_id,
        )
    }

    /// The points of the map collection: entries that have a vector.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn map_points(&self, model_id: i64) -> Result<Vec<VectorPoint>> {
        self.points(
            "SELECT m.id, m.content_hash FROM map_entries m
             WHERE EXISTS (SELECT 1 FROM embeddings e WHERE e.model_id = ?1 AND e.content_hash = m.content_hash)",
            model_id,
        )
    }

    fn points(&self, sql: &str, model_id: i64) -> Result<Vec<VectorPoint>> {
        let mut stmt = self.conn().prepare_cached(sql)?;
        let rows = stmt.query_map([model_id], |r| Ok(VectorPoint { rowid: r.get(0)?, content_hash: r.get(1)? }))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The vectors stored under `hashes` for `model_id` (missing ones and
    /// blobs of the wrong size are left out).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn vectors(&self, model_id: i64, dim: usize, hashes: &[&str]) -> Result<HashMap<String, Vec<f32>>> {
        let mut out = HashMap::with_capacity(hashes.len());
        let mut stmt = self.conn().prepare_cached("SELECT vector FROM embeddings WHERE model_id = ?1 AND content_hash = ?2")?;
        for &hash in hashes {
            if out.contains_key(hash) {
                continue;
            }
            let blob: Option<Vec<u8>> = stmt.query_row(params![model_id, hash], |r| r.get(0)).optional()?;
            if let Some(v) = blob.and_then(|b| blob_to_vector(&b, dim)) {
                out.insert(hash.to_string(), v);
            }
        }
        Ok(out)
    }

    /// Calls `f(hash, vector)` for every vector of `model_id`; faster than
    /// [`Store::vectors`] when most are needed (loading a whole collection).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn for_each_vector(&self, model_id: i64, dim: usize, f: &mut dyn FnMut(&str, Vec<f32>)) -> Result<()> {
        let mut stmt = self.conn().prepare("SELECT content_hash, vector FROM embeddings WHERE model_id = ?1")?;
        let mut rows = stmt.query([model_id])?;
        while let Some(row) = rows.next()? {
            let hash: String = row.get(0)?;
            let blob = row.get_ref(1)?.as_blob().map_err(rusqlite::Error::from)?;
            if let Some(v) = blob_to_vector(blob, dim) {
                f(&hash, v);
            }
        }
        Ok(())
    }

    /// Locations of chunks by row id (unknown ids are left out).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn chunk_locations(&self, rowids: &[i64]) -> Result<HashMap<i64, ChunkLocation>> {
        let mut out = HashMap::with_capacity(rowids.len());
        // One statement per batch rather than per row: a search asks for
        // ~50 rows, and each statement run costs more than its row.
        for batch in rowids.chunks(LOCATION_BATCH) {
            let placeholders = vec!["?"; batch.len()].join(",");
            let mut stmt = self.conn().prepare_cached(&format!(
                "SELECT c.id, f.path, c.kind, c.name, c.qualified_name, c.start_line, c.end_line
                 FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.id IN ({placeholders})"
            ))?;
            let rows = stmt.query_map(rusqlite::params_from_iter(batch), |r| {
                Ok(ChunkLocation {
                    rowid: r.get(0)?,
                    path: r.get(1)?,
                    kind: r.get(2)?,
                    name: r.get(3)?,
                    qualified_name: r.get(4)?,
                    start_line: r.get(5)?,
                    end_line: r.get(6)?,
                })
            })?;
            for loc in rows {
                let loc = loc?;
                out.insert(loc.rowid, loc);
            }
        }
        Ok(out)
    }

    /// Row ids of the chunks a filter admits: kinds (empty: any) and a path
    /// predicate (e.g. a glob).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn chunk_ids_matching(&self, kinds: &[String], accept_path: &dyn Fn(&str) -> bool) -> Result<Vec<i64>> {
        let kinds_json = serde_json::to_string(kinds)?;
        let mut stmt = self.conn().prepare_cached(
            "SELECT c.id, f.path FROM chunks c JOIN files f ON f.id = c.file_id
             WHERE (?1 = '[]' OR c.kind IN (SELECT value FROM json_each(?1)))
             ORDER BY c.id",
        )?;
        let mut rows = stmt.query([kinds_json])?;
        let mut ids = Vec::new();
        let mut last_path = String::new();
        let mut last_ok = false;
        while let Some(row) = rows.next()? {
            let path = row.get_ref(1)?.as_str().map_err(rusqlite::Error::from)?;
            if path != last_path {
                last_path = path.to_string();
                last_ok = accept_path(path);
            }
            if last_ok {
                ids.push(row.get(0)?);
            }
        }
        Ok(ids)
    }

    /// Whether the map holds any agreement.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn has_map_entries(&self) -> Result<bool> {
        Ok(self.conn().prepare_cached("SELECT EXISTS (SELECT 1 FROM map_entries)")?.query_row([], |r| r.get(0))?)
    }

    /// Every map entry.
    ///
    /// # Errors
    /// SQLite or JSON errors.
    pub fn map_entries(&self) -> Result<Vec<StoredMapEntry>> {
        let mut stmt = self.conn().prepare_cached("SELECT id, key, text, symbols, files, metadata, created_ms FROM map_entries ORDER BY id")?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, String>(3)?, r.get::<_, String>(4)?, r.get::<_, String>(5)?, r.get::<_, i64>(6)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (rowid, key, text, symbols, files, metadata, created_ms) = row?;
            out.push(StoredMapEntry {
                rowid,
                entry: MapEntry { key, text, symbols: serde_json::from_str(&symbols)?, files: serde_json::from_str(&files)?, metadata: serde_json::from_str(&metadata)? },
                created_ms,
            });
        }
        Ok(out)
    }

    /// Map entries by row id.
    ///
    /// # Errors
    /// SQLite or JSON errors.
    pub fn map_entries_by_id(&self, rowids: &[i64]) -> Result<HashMap<i64, StoredMapEntry>> {
        let wanted: std::collections::HashSet<i64> = rowids.iter().copied().collect();
        Ok(self.map_entries()?.into_iter().filter(|e| wanted.contains(&e.rowid)).map(|e| (e.rowid, e)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunks::FileRecord;
    use code_intel_core::{ChunkedFile, line_chunks};

    fn add_file(store: &mut Store, path: &str, content: &str) {
        let chunked = ChunkedFile { chunks: line_chunks(path, content), chunker: "fallback".into(), ..Default::default() };
        let file = FileRecord { path: path.into(), sha256: crate::content_hash(content), size: 1, mtime_ns: 0 };
        store.write(|w| w.replace_file(&file, &chunked, 0).map(drop)).unwrap();
    }

    #[test]
    fn vectors_keyed_by_content_hash_survive_moves() {
        let mut store = Store::open_in_memory().unwrap();
        add_file(&mut store, "a.py", "def login(): pass\n");
        let g0 = store.vector_generation().unwrap();
        let model = store.write(|w| w.ensure_embedding_model("m", "r1", 2)).unwrap();
        let pending = store.pending_chunks(model.id, 100).unwrap();
        assert_eq!(pending.len(), 1);
        let hash = pending[0].content_hash.clone();
        store.write(|w| w.put_embeddings(model.id, &[(hash.as_str(), &[0.6, 0.8][..])])).unwrap();
        assert!(store.vector_generation().unwrap() > g0);
        assert!(store.pending_chunks(model.id, 100).unwrap().is_empty());
        let cov = store.embedding_coverage(Some(model.id)).unwrap();
        assert_eq!((cov.embedded_chunks, cov.total_chunks), (1, 1));

        // Move the file: same content, new row, no pending work.
        store.write(|w| w.delete_file("a.py").map(drop)).unwrap();
        add_file(&mut store, "b.py", "def login(): pass\n");
        assert!(store.pending_chunks(model.id, 100).unwrap().is_empty());
        let points = store.forest_points(model.id).unwrap();
        assert_eq!(points.len(), 1);
        let v = store.vectors(model.id, 2, &[hash.as_str()]).unwrap();
        assert_eq!(v[&hash], vec![0.6, 0.8]);
        let locs = store.chunk_locations(&[points[0].rowid]).unwrap();
        assert_eq!(locs[&points[0].rowid].path, "b.py");

        // Another model sees everything as pending; pruning drops the old one.
        let other = store.write(|w| w.ensure_embedding_model("m", "r2", 2)).unwrap();
        assert_eq!(store.pending_chunks(other.id, 100).unwrap().len(), 1);
        store.write(|w| w.prune_embeddings(other.id, &[])).unwrap();
        assert!(store.embedding_model("m", "r1").unwrap().is_none());

        // Two models in use (the main and the English one) keep each other.
        let english = store.write(|w| w.ensure_embedding_model("english", "r1", 2)).unwrap();
        let third = store.write(|w| w.ensure_embedding_model("old", "r0", 2)).unwrap();
        store.write(|w| w.put_embeddings(english.id, &[(hash.as_str(), &[0.0, 1.0][..])])).unwrap();
        store.write(|w| w.put_embeddings(other.id, &[(hash.as_str(), &[1.0, 0.0][..])])).unwrap();
        assert_eq!(store.write(|w| w.prune_embeddings(other.id, &[english.id])).unwrap(), 1);
        assert!(store.embedding_model("old", "r0").unwrap().is_none(), "{third:?} was not in use");
        assert_eq!(store.vectors(english.id, 2, &[hash.as_str()]).unwrap()[&hash], vec![0.0, 1.0]);
        store.write(|w| w.prune_embeddings(english.id, &[other.id])).unwrap();
        assert_eq!(store.vectors(other.id, 2, &[hash.as_str()]).unwrap()[&hash], vec![1.0, 0.0]);
    }

    #[test]
    fn chunk_locations_span_batches_and_skip_unknown_rows() {
        let mut store = Store::open_in_memory().unwrap();
        for i in 0..300 {
            add_file(&mut store, &format!("f{i}.py"), &format!("x = {i}\n"));
        }
        let rowids: Vec<i64> =
            store.conn().prepare("SELECT id FROM chunks").unwrap().query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
        assert_eq!(rowids.len(), 300);
        let mut asked = rowids.clone();
        asked.push(-1);
        let locs = store.chunk_locations(&asked).unwrap();
        assert_eq!(locs.len(), 300, "every known row, across two batches; the unknown one left out");
        assert!(rowids.iter().all(|id| locs[id].rowid == *id && locs[id].path.starts_with('f')));
    }

    #[test]
    fn map_entries_round_trip_and_are_pending() {
        let mut store = Store::open_in_memory().unwrap();
        let model = store.write(|w| w.ensure_embedding_model("m", "r", 2)).unwrap();
        let entry = MapEntry {
            key: "a1".into(),
            text: "user login".into(),
            symbols: vec!["AuthService.login".into()],
            files: vec!["app/auth.py".into()],
            metadata: serde_json::json!({"session": "s1"}),
        };
        assert!(!store.has_map_entries().unwrap());
        let id = store.write(|w| w.upsert_map_entry(&entry)).unwrap();
        assert!(store.has_map_entries().unwrap());
        assert_eq!(store.map_entries().unwrap()[0].entry, entry);
        let pending = store.pending_map_entries(model.id).unwrap();
        assert_eq!(pending[0].content_hash, map_text_hash("user login"));
        store.write(|w| w.put_embeddings(model.id, &[(pending[0].content_hash.as_str(), &[1.0, 0.0][..])])).unwrap();
        assert_eq!(store.map_points(model.id).unwrap()[0].rowid, id);
        assert!(store.write(|w| w.delete_map_entry("a1")).unwrap());
        assert!(store.map_points(model.id).unwrap().is_empty());
    }

    #[test]
    fn a_complete_pass_is_remembered_until_the_generation_moves() {
        let mut store = Store::open_in_memory().unwrap();
        add_file(&mut store, "a.py", "def login(): pass\n");
        let model = store.write(|w| w.ensure_embedding_model("m", "r1", 2)).unwrap();
        // Incomplete: nothing is remembered.
        let partial = store.write(|w| w.finish_embedding_pass(model.id)).unwrap();
        assert_eq!((partial.embedded_chunks, partial.total_chunks), (0, 1));
        assert_eq!(store.embedded_through(model.id).unwrap(), None);

        let hash = store.pending_chunks(model.id, 10).unwrap()[0].content_hash.clone();
        store.write(|w| w.put_embeddings(model.id, &[(hash.as_str(), &[0.6, 0.8][..])])).unwrap();
        let done = store.write(|w| w.finish_embedding_pass(model.id)).unwrap();
        assert_eq!(store.embedded_through(model.id).unwrap(), Some(done));
        assert_eq!(store.embedding_coverage(Some(model.id)).unwrap(), done);
        let other = store.write(|w| w.ensure_embedding_model("m", "r2", 2)).unwrap();
        assert_eq!(store.embedded_through(other.id).unwrap(), None, "the record is per model");

        // Any change of chunks, vectors or map entries voids the record, and
        // coverage is counted again (here: the new chunk has no vector).
        add_file(&mut store, "b.py", "def logout(): pass\n");
        assert_eq!(store.embedded_through(model.id).unwrap(), None);
        let counted = store.embedding_coverage(Some(model.id)).unwrap();
        assert_eq!((counted.embedded_chunks, counted.total_chunks), (1, 2));
        store.write(|w| w.finish_embedding_pass(model.id)).unwrap();
        assert_eq!(store.embedded_through(model.id).unwrap(), None, "an incomplete pass replaces nothing");
    }

    #[test]
    fn pending_chunks_count_the_rows_sharing_a_content() {
        let mut store = Store::open_in_memory().unwrap();
        add_file(&mut store, "a.py", "same\n");
        add_file(&mut store, "b.py", "same\n");
        let model = store.write(|w| w.ensure_embedding_model("m", "r", 2)).unwrap();
        let pending = store.pending_chunks(model.id, 10).unwrap();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].rows, 2);
    }

    #[test]
    fn blob_round_trip_checks_size() {
        let v = vec![0.25f32, -1.5, 3.0];
        assert_eq!(blob_to_vector(&vector_to_blob(&v), 3), Some(v));
        assert_eq!(blob_to_vector(&[0, 0, 0], 3), None);
    }
}
