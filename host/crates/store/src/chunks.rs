//! Files, chunks, the full-text index over chunks, plugin failures and sync
//! metadata: the schema and the write side.

use code_intel_core::{Chunk, ChunkedFile};
use rusqlite::{OptionalExtension, Transaction, params};
use sha2::{Digest, Sha256};

use crate::Result;
use crate::migrations::Schema;
use crate::tokenize::expand_identifiers;

/// Schema of the chunk index (module `index`).
pub const SCHEMA: Schema = Schema {
    module: "index",
    steps: &[concat!(
        "CREATE TABLE files (
            id          INTEGER PRIMARY KEY,
            path        TEXT NOT NULL UNIQUE,   -- repo-relative, '/'-separated
            sha256      TEXT NOT NULL,          -- hex SHA-256 of the file content
            size        INTEGER NOT NULL,       -- bytes
            mtime_ns    INTEGER NOT NULL,       -- modification time, ns since the epoch
            chunker     TEXT NOT NULL,          -- plugin name, or 'fallback'
            status      TEXT NOT NULL,          -- 'ok' | 'fallback'
            error       TEXT,                   -- why the fallback was used, when a plugin failed
            indexed_at_ns INTEGER NOT NULL
        ) STRICT;
        CREATE TABLE chunks (
            id             INTEGER PRIMARY KEY,
            file_id        INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
            chunk_id       TEXT NOT NULL,       -- the plugin's id, unique within the file
            kind           TEXT NOT NULL,
            name           TEXT NOT NULL,
            qualified_name TEXT,
            parent         TEXT,
            start_line     INTEGER NOT NULL,
            end_line       INTEGER NOT NULL,
            start_byte     INTEGER NOT NULL,
            end_byte       INTEGER NOT NULL,
            content        TEXT NOT NULL,
            signature      TEXT,
            docstring      TEXT,
            related_symbols TEXT NOT NULL,      -- JSON array of strings
            refs           TEXT NOT NULL,       -- JSON array of strings (the chunk's `references`)
            metadata       TEXT NOT NULL,       -- JSON object
            content_hash   TEXT NOT NULL,       -- hex SHA-256 of content; embeddings are keyed on it
            UNIQUE (file_id, chunk_id)
        ) STRICT;
        CREATE INDEX chunks_by_file ON chunks(file_id, start_line);
        CREATE INDEX chunks_by_name ON chunks(name COLLATE NOCASE);
        CREATE INDEX chunks_by_qualified_name ON chunks(qualified_name COLLATE NOCASE);
        CREATE INDEX chunks_by_content_hash ON chunks(content_hash);
        CREATE INDEX chunks_by_kind ON chunks(kind);
        CREATE TABLE plugin_failures (
            id       INTEGER PRIMARY KEY,
            file_id  INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
            plugin   TEXT NOT NULL,
            kind     TEXT NOT NULL,             -- code_intel_core::FailureKind, snake_case
            message  TEXT NOT NULL
        ) STRICT;
        CREATE INDEX plugin_failures_by_file ON plugin_failures(file_id);
        CREATE TABLE meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        ) STRICT;
        -- Contentless: the text lives in `chunks`; the index holds the
        -- identifier-expanded tokens (see tokenize.rs). rowid = chunks.id.
        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            name, qualified_name, signature, docstring, content, path,
            content = '', contentless_delete = 1,
            tokenize = \"unicode61 remove_diacritics 2 tokenchars '_'\"
        );
        CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
            DELETE FROM chunks_fts WHERE rowid = old.id;
        END;"
        ),
        // Names compared ignoring case and `_` (`get_user` = `getUser`), for
        // the exact-identifier tiers of lexical search.
        "CREATE INDEX chunks_by_folded_name ON chunks(lower(replace(name, '_', '')));",
        // CJK text is also indexed as character pairs (see tokenize.rs):
        // files holding any are read and chunked again at the next sync, as
        // if changed. Their embeddings are kept (same content hashes).
        "UPDATE files SET sha256 = '', mtime_ns = -1
         WHERE path GLOB '*[\u{3040}-\u{30FF}\u{3400}-\u{4DBF}\u{4E00}-\u{9FFF}\u{AC00}-\u{D7AF}]*'
            OR id IN (SELECT file_id FROM chunks
                      WHERE content GLOB '*[\u{3040}-\u{30FF}\u{3400}-\u{4DBF}\u{4E00}-\u{9FFF}\u{AC00}-\u{D7AF}]*'
                         OR name GLOB '*[\u{3040}-\u{30FF}\u{3400}-\u{4DBF}\u{4E00}-\u{9FFF}\u{AC00}-\u{D7AF}]*');",
    ],
};

/// Fingerprint of one file as the indexer saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileRecord {
    pub path: String,
    pub sha256: String,
    pub size: i64,
    pub mtime_ns: i64,
}

/// Meta keys written by the indexer.
pub mod meta_keys {
    /// Unix time (ms) the last complete sync finished.
    pub const LAST_SYNC_MS: &str = "last_sync_ms";
    /// JSON of the last complete sync's report.
    pub const LAST_SYNC_REPORT: &str = "last_sync_report";
    /// Unix time (ms) a sync started and has not finished (absent when none is running or it finished).
    pub const SYNC_STARTED_MS: &str = "sync_started_ms";
    /// Counter moved by every write that inserts or deletes chunks (see
    /// [`crate::Store::chunks_generation`]).
    pub const CHUNKS_GENERATION: &str = "chunks_generation";
    /// Number of chunks, kept by every write that inserts or deletes chunks
    /// (see [`crate::Store::chunk_total`]).
    pub const CHUNK_TOTAL: &str = "chunk_total";
    /// Chunks inserted plus chunks deleted, over the index's life (kept from
    /// the first write of a version that has it): a bound on how far any
    /// word's chunk count can have moved since it was read.
    pub const CHUNK_CHANGES: &str = "chunk_changes";
    /// The chunker identity (`code_intel_core::Chunker::identity`) of the
    /// last complete sync.
    pub const CHUNKER_IDENTITY: &str = "chunker_identity";
}

/// Hex SHA-256 of a chunk's content: the key embeddings are cached under.
#[must_use]
pub fn content_hash(content: &str) -> String {
    hex(&Sha256::digest(content.as_bytes()))
}

/// Lower-case hex of bytes.
#[must_use]
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Writes inside one transaction; see [`crate::Store::write`]. Every method
/// keeps the index consistent on its own: a file's row, chunks, full-text
/// rows and failures change together.
pub struct Writer<'conn> {
    pub(crate) tx: Transaction<'conn>,
}

impl Writer<'_> {
    /// Replaces everything stored for `file.path` with `chunked`.
    /// Returns the file's row id.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn replace_file(&self, file: &FileRecord, chunked: &ChunkedFile, indexed_at_ns: i64) -> Result<i64> {
        if !self.delete_file(&file.path)? {
            self.bump_chunks_generation()?;
        }
        let (status, error) = if chunked.chunker == code_intel_core::chunk::FALLBACK_CHUNKER {
            let why = chunked
                .failures
                .iter()
                .map(|f| format!("{}: {}", f.plugin, f.message))
                .collect::<Vec<_>>()
                .join("; ");
            ("fallback", (!why.is_empty()).then_some(why))
        } else {
            ("ok", None)
        };
        self.tx
            .prepare_cached(
                "INSERT INTO files (path, sha256, size, mtime_ns, chunker, status, error, indexed_at_ns)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?
            .execute(params![
                file.path,
                file.sha256,
                file.size,
                file.mtime_ns,
                chunked.chunker,
                status,
                error,
                indexed_at_ns
            ])?;
        let file_id = self.tx.last_insert_rowid();
        let mut insert_chunk = self.tx.prepare_cached(
            "INSERT INTO chunks (file_id, chunk_id, kind, name, qualified_name, parent, start_line, end_line,
                start_byte, end_byte, content, signature, docstring, related_symbols, refs, metadata, content_hash)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)
             ON CONFLICT (file_id, chunk_id) DO NOTHING",
        )?;
        let mut insert_fts = self.tx.prepare_cached(
            "INSERT INTO chunks_fts (rowid, name, qualified_name, signature, docstring, content, path)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?;
        let mut expanded_path = String::new();
        expand_identifiers(&file.path, &mut expanded_path);
        let mut buffers: [String; 5] = Default::default();
        let mut stored = 0i64;
        for chunk in &chunked.chunks {
            let inserted = insert_chunk.execute(params![
                file_id,
                chunk.id,
                chunk.kind,
                chunk.name,
                chunk.qualified_name,
                chunk.parent,
                chunk.start_line,
                chunk.end_line,
                chunk.start_byte,
                chunk.end_byte,
                chunk.content,
                chunk.signature,
                chunk.docstring,
                serde_json::to_string(&chunk.related_symbols)?,
                serde_json::to_string(&chunk.references)?,
                chunk.metadata.as_str(),
                content_hash(&chunk.content),
            ])?;
            if inserted == 0 {
                tracing::warn!(path = %file.path, chunk = %chunk.id, "duplicate chunk id dropped");
                continue;
            }
            stored += 1;
            let rowid = self.tx.last_insert_rowid();
            fill_fts_buffers(chunk, &mut buffers);
            insert_fts.execute(params![
                rowid,
                buffers[0],
                buffers[1],
                buffers[2],
                buffers[3],
                buffers[4],
                expanded_path
            ])?;
        }
        let mut insert_failure = self.tx.prepare_cached(
            "INSERT INTO plugin_failures (file_id, plugin, kind, message) VALUES (?1, ?2, ?3, ?4)",
        )?;
        for failure in &chunked.failures {
            let kind = serde_json::to_value(failure.kind)?;
            insert_failure.execute(params![file_id, failure.plugin, kind.as_str().unwrap_or("unknown"), failure.message])?;
        }
        self.adjust_chunk_total(stored)?;
        Ok(file_id)
    }

    /// Records a new mtime/size for a file whose content hash did not change.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn touch_file(&self, path: &str, size: i64, mtime_ns: i64, indexed_at_ns: i64) -> Result<()> {
        self.tx
            .prepare_cached("UPDATE files SET size = ?2, mtime_ns = ?3, indexed_at_ns = ?4 WHERE path = ?1")?
            .execute(params![path, size, mtime_ns, indexed_at_ns])?;
        Ok(())
    }

    /// Removes a file with its chunks, full-text rows and failures.
    /// Returns whether it was indexed.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn delete_file(&self, path: &str) -> Result<bool> {
        let id: Option<i64> = self
            .tx
            .prepare_cached("SELECT id FROM files WHERE path = ?1")?
            .query_row([path], |r| r.get(0))
            .optional()?;
        let Some(id) = id else { return Ok(false) };
        // Chunks first so the FTS trigger sees each row; failures cascade.
        let removed = self.tx.prepare_cached("DELETE FROM chunks WHERE file_id = ?1")?.execute([id])?;
        self.tx.prepare_cached("DELETE FROM files WHERE id = ?1")?.execute([id])?;
        self.bump_chunks_generation()?;
        self.adjust_chunk_total(-i64::try_from(removed).unwrap_or(i64::MAX))?;
        Ok(true)
    }

    /// Adds `delta` to [`meta_keys::CHUNK_TOTAL`], after the change is made.
    /// An index from before the counter gets it here, counted once.
    fn adjust_chunk_total(&self, delta: i64) -> Result<()> {
        let updated = self
            .tx
            .prepare_cached("UPDATE meta SET value = CAST(CAST(value AS INTEGER) + ?2 AS TEXT) WHERE key = ?1")?
            .execute(params![meta_keys::CHUNK_TOTAL, delta])?;
        if updated == 0 {
            self.tx
                .prepare_cached("INSERT INTO meta (key, value) SELECT ?1, CAST(count(*) AS TEXT) FROM chunks")?
                .execute([meta_keys::CHUNK_TOTAL])?;
        }
        self.tx
            .prepare_cached(
                "INSERT INTO meta (key, value) VALUES (?1, CAST(?2 AS TEXT))
                 ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + ?2 AS TEXT)",
            )?
            .execute(params![meta_keys::CHUNK_CHANGES, delta.saturating_abs()])?;
        Ok(())
    }

    /// Moves [`meta_keys::CHUNKS_GENERATION`] forward (part of this transaction).
    fn bump_chunks_generation(&self) -> Result<()> {
        self.tx
            .prepare_cached(
                "INSERT INTO meta (key, value) VALUES (?1, '1')
                 ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)",
            )?
            .execute([meta_keys::CHUNKS_GENERATION])?;
        Ok(())
    }

    /// Number of chunks stored for `path` (0 when not indexed).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn file_chunk_count(&self, path: &str) -> Result<u64> {
        let n: i64 = self
            .tx
            .prepare_cached("SELECT count(*) FROM chunks WHERE file_id = (SELECT id FROM files WHERE path = ?1)")?
            .query_row([path], |r| r.get(0))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// Sets a meta value.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.tx
            .prepare_cached(
                "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            )?
            .execute(params![key, value])?;
        Ok(())
    }

    /// Removes a meta value.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn delete_meta(&self, key: &str) -> Result<()> {
        self.tx.prepare_cached("DELETE FROM meta WHERE key = ?1")?.execute([key])?;
        Ok(())
    }

    /// The transaction, for modules of this crate that add their own writes.
    #[must_use]
    pub fn transaction(&self) -> &Transaction<'_> {
        &self.tx
    }
}

fn fill_fts_buffers(chunk: &Chunk, buffers: &mut [String; 5]) {
    let fields = [
        chunk.name.as_str(),
        chunk.qualified_name.as_deref().unwrap_or(""),
        chunk.signature.as_deref().unwrap_or(""),
        chunk.docstring.as_deref().unwrap_or(""),
        chunk.content.as_str(),
    ];
    for (buffer, text) in buffers.iter_mut().zip(fields) {
        buffer.clear();
        expand_identifiers(text, buffer);
    }
}

/// A value read from the whole index (the names' words, the chunks'
/// aliases), kept per connection with the chunks generation it was read at
/// ([`crate::Store::chunks_generation`]), so that searches read it again only
/// after the chunks change.
pub(crate) struct PerGeneration<T> {
    generation: String,
    value: Option<T>,
}

impl<T> Default for PerGeneration<T> {
    fn default() -> Self {
        Self { generation: String::new(), value: None }
    }
}

/// Per-connection cache of one [`PerGeneration`] value.
pub(crate) type GenerationCache<T> = std::cell::RefCell<PerGeneration<T>>;

impl crate::Store {
    /// The value `cache` holds for the current chunks generation, else what
    /// `read` reads now (then kept).
    ///
    /// # Errors
    /// SQLite errors, `read`'s included.
    pub(crate) fn per_generation<T: Clone>(&self, cache: &GenerationCache<T>, read: impl FnOnce(&Self) -> Result<T>) -> Result<T> {
        let generation = self.chunks_generation()?;
        {
            let cached = cache.borrow();
            if let Some(value) = cached.value.as_ref().filter(|_| cached.generation == generation) {
                return Ok(value.clone());
            }
        }
        let value = read(self)?;
        *cache.borrow_mut() = PerGeneration { generation, value: Some(value.clone()) };
        Ok(value)
    }

    /// A key that changes with every committed write that inserts or deletes
    /// chunks ([`Writer::replace_file`], [`Writer::delete_file`]), for
    /// derived data such as the cross-file links to tell whether it is
    /// stale. One row lookup, where counting the chunks reads a whole index.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn chunks_generation(&self) -> Result<String> {
        let generation = self.meta(meta_keys::CHUNKS_GENERATION)?;
        Ok(format!("gen:{}", generation.as_deref().unwrap_or("0")))
    }

    /// Chunks inserted plus deleted so far ([`meta_keys::CHUNK_CHANGES`]).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn chunk_changes(&self) -> Result<u64> {
        Ok(self.meta(meta_keys::CHUNK_CHANGES)?.and_then(|v| v.parse::<u64>().ok()).unwrap_or(0))
    }

    /// Number of chunks, as [`Store::chunk_count`] counts them, from the
    /// counter every chunk write keeps (one row lookup instead of reading a
    /// whole index); counted when the index predates the counter.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn chunk_total(&self) -> Result<u64> {
        match self.meta(meta_keys::CHUNK_TOTAL)?.and_then(|v| v.parse::<u64>().ok()) {
            Some(total) => Ok(total),
            None => self.chunk_count(),
        }
    }
}

#[cfg(test)]
mod tests {
    use code_intel_core::{Chunk, ChunkedFile};

    use super::*;
    use crate::Store;

    fn file(path: &str, chunks: usize) -> (FileRecord, ChunkedFile) {
        let chunks = (0..chunks)
            .map(|i| Chunk {
                id: format!("c{i}"),
                kind: "function".into(),
                name: format!("f{i}"),
                qualified_name: None,
                parent: None,
                start_line: 1,
                end_line: 1,
                start_byte: 0,
                end_byte: 0,
                content: format!("def f{i}(): pass"),
                signature: None,
                docstring: None,
                related_symbols: vec![],
                references: vec![],
                metadata: code_intel_core::Metadata::empty(),
            })
            .collect();
        let record = FileRecord { path: path.into(), sha256: "00".repeat(32), size: 1, mtime_ns: 1 };
        (record, ChunkedFile { chunks, chunker: "probe".into(), ..ChunkedFile::default() })
    }

    #[test]
    fn upgrading_marks_files_with_cjk_text_for_chunking_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.db");
        {
            let mut store = Store::open(&path).unwrap();
            let (english, chunks) = file("a.py", 1);
            let (japanese, mut ja_chunks) = file("b.py", 1);
            ja_chunks.chunks[0].content = "# ユーザーを削除する\ndef f0(): pass".into();
            store.write(|w| {
                w.replace_file(&english, &chunks, 1)?;
                w.replace_file(&japanese, &ja_chunks, 1).map(|_| ())
            })
            .unwrap();
            // As an index written before the step.
            store
                .conn()
                .execute_batch("UPDATE schema_versions SET version = 2 WHERE module = 'index'; PRAGMA user_version = 0;")
                .unwrap();
        }
        let store = Store::open(&path).unwrap();
        let files = store.indexed_files().unwrap();
        let sha = |p: &str| files.iter().find(|f| f.path == p).unwrap().sha256.clone();
        assert_eq!(sha("a.py"), "00".repeat(32));
        assert_eq!(sha("b.py"), "", "chunked again at the next sync");
    }

    #[test]
    fn every_chunk_write_moves_the_generation_and_keeps_the_total() {
        let mut store = Store::open_in_memory().unwrap();
        assert_eq!(store.chunks_generation().unwrap(), "gen:0");
        assert_eq!(store.chunk_total().unwrap(), 0);
        let mut seen = vec![store.chunks_generation().unwrap()];
        let mut step = |store: &mut Store, f: &dyn Fn(&Writer<'_>) -> Result<()>| {
            store.write(|w| f(w)).unwrap();
            let generation = store.chunks_generation().unwrap();
            assert!(!seen.contains(&generation), "{generation} seen before");
            seen.push(generation);
            assert_eq!(store.chunk_total().unwrap(), store.chunk_count().unwrap());
        };
        let (a, a3) = file("a.py", 3);
        let (b, b5) = file("b.py", 5);
        let (_, a1) = file("a.py", 1);
        step(&mut store, &|w| w.replace_file(&a, &a3, 1).map(|_| ()));
        step(&mut store, &|w| w.replace_file(&b, &b5, 1).map(|_| ()));
        step(&mut store, &|w| w.replace_file(&a, &a1, 1).map(|_| ()));
        assert_eq!(store.chunk_total().unwrap(), 6);
        step(&mut store, &|w| w.delete_file("b.py").map(|_| ()));
        // Same count as before, different chunks: still a new generation.
        step(&mut store, &|w| w.replace_file(&a, &a1, 2).map(|_| ()));
        // Touching a file or deleting one never indexed changes no chunk.
        let before = store.chunks_generation().unwrap();
        store.write(|w| w.touch_file("a.py", 2, 2, 2)).unwrap();
        store.write(|w| w.delete_file("nope.py").map(|_| ())).unwrap();
        assert_eq!(store.chunks_generation().unwrap(), before);

        // An index from before the counter: counted on read, then kept again
        // from the next write on.
        store.write(|w| w.delete_meta(meta_keys::CHUNK_TOTAL)).unwrap();
        assert_eq!(store.chunk_total().unwrap(), 1);
        step(&mut store, &|w| w.replace_file(&b, &b5, 3).map(|_| ()));
        assert_eq!(store.meta(meta_keys::CHUNK_TOTAL).unwrap().as_deref(), Some("6"));
    }
}
