//! SQLite store of record: files, chunks, the code-aware full-text index,
//! plugin failures and sync metadata (plus embeddings and sessions, in their
//! own modules).
//!
//! ```
//! use code_intel_core::{ChunkedFile, line_chunks};
//! use code_intel_store::{FileRecord, NameMatch, Store};
//!
//! let mut store = Store::open_in_memory().unwrap();
//! let content = "def getUserName(user):\n    return user.name\n";
//! let chunked = ChunkedFile { chunks: line_chunks("app/users.py", content), chunker: "fallback".into(), ..Default::default() };
//! let file = FileRecord { path: "app/users.py".into(), sha256: "00".into(), size: 44, mtime_ns: 0 };
//! store.write(|w| w.replace_file(&file, &chunked, 0).map(drop)).unwrap();
//! let query = store.text_query("user name", false).unwrap().unwrap();
//! let hits = store.fts_search(&query, None, &[], &|_| true, 10).unwrap();
//! assert_eq!(hits[0].path, "app/users.py");
//! ```
//!
//! The store is a single SQLite file (`.code-intel/index.db`) in WAL mode
//! with a busy timeout, so a server and a CLI (or two servers) can use one
//! repository at the same time: readers never block, writers take turns.
//! Every write goes through [`Store::write`], one transaction, so a killed
//! process leaves the previous consistent state.
//!
//! # Adding tables (schema migrations)
//!
//! A module that needs tables (embeddings, sessions, ...) declares its own
//! append-only list of SQL steps and registers it once:
//!
//! ```ignore
//! // src/sessions.rs
//! pub const SCHEMA: crate::migrations::Schema = crate::migrations::Schema {
//!     module: "sessions",
//!     steps: &[
//!         "CREATE TABLE sessions (id TEXT PRIMARY KEY, ...) STRICT;",
//!         // later: "ALTER TABLE sessions ADD COLUMN ...;",
//!     ],
//! };
//! // src/migrations.rs
//! pub const SCHEMAS: &[&Schema] = &[&crate::chunks::SCHEMA, &crate::sessions::SCHEMA];
//! ```
//!
//! Each module's applied step count is kept separately (see [`migrations`]),
//! so modules grow independently; never edit or reorder a committed step.
//! Module code reaches the connection with [`Store::conn`] and writes inside
//! [`Store::write`] via [`Writer::transaction`].
//!
//! This crate knows nothing about plugins, walking the file system, MCP or
//! the CLI; it depends only on `code-intel-core`.

pub mod aliases;
pub mod chunks;
pub mod embeddings;
pub mod links;
pub mod migrations;
pub mod name_words;
pub mod queries;
pub mod sessions;
pub mod text_query;
pub mod tokenize;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

pub use chunks::{FileRecord, Writer, content_hash, meta_keys};
pub use queries::{ChunkSummary, FailureRow, FtsHit, IndexStats, IndexedFile, NameMatch, StoredChunk};
pub use text_query::TextQuery;

/// How long a writer waits for another process's transaction before giving
/// up. Sync batches and session writes take milliseconds; 30 s covers a
/// large first-sync batch on a slow disk while still failing eventually if
/// another process is wedged.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// How much of the database file SQLite may read through a memory map. It
/// is address space, not memory: only the pages a query touches are read,
/// and they are the operating system's file cache, shared with every process
/// reading the index. Past it, reads fall back to read calls.
const MMAP_BYTES: i64 = 1 << 30;

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("malformed JSON in the index: {0}")]
    Json(#[from] serde_json::Error),
    #[error("cannot create {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("no index at {path}: run `code-intel index` in the repository first")]
    NotIndexed { path: PathBuf },
    #[error(
        "the index was written by a newer code-intel (schema `{module}` at step {found}, this build knows {known}); \
         upgrade code-intel, or move .code-intel/index.db aside and run `code-intel index` to rebuild it"
    )]
    NewerSchema { module: String, found: i64, known: i64 },
    #[error("schema migration `{module}` step {step} failed: {source}")]
    Migration { module: String, step: usize, source: rusqlite::Error },
}

/// Result with [`StoreError`].
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// An open index database.
pub struct Store {
    conn: Connection,
    path: Option<PathBuf>,
    term_counts: text_query::TermCountCache,
    name_words: name_words::NameWordCache,
    aliases: aliases::AliasCache,
}

impl Store {
    /// Opens (creating if needed, with its directory) and migrates the
    /// database at `path`.
    ///
    /// # Errors
    /// I/O, SQLite or migration errors.
    pub fn open(path: &Path) -> Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Io { path: dir.to_path_buf(), source })?;
        }
        let conn = Connection::open(path)?;
        Self::init(conn, Some(path.to_path_buf()))
    }

    /// Opens an existing database; [`StoreError::NotIndexed`] when there is none.
    ///
    /// # Errors
    /// As [`Store::open`], plus `NotIndexed`.
    pub fn open_existing(path: &Path) -> Result<Self> {
        if !path.is_file() {
            return Err(StoreError::NotIndexed { path: path.to_path_buf() });
        }
        let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
        Self::init(conn, Some(path.to_path_buf()))
    }

    /// A private in-memory database (tests, examples).
    ///
    /// # Errors
    /// SQLite or migration errors.
    pub fn open_in_memory() -> Result<Self> {
        Self::init(Connection::open_in_memory()?, None)
    }

    fn init(mut conn: Connection, path: Option<PathBuf>) -> Result<Self> {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        if path.is_some() {
            let mode = Self::enable_wal(&conn)?;
            if !mode.eq_ignore_ascii_case("wal") {
                tracing::warn!(mode, "SQLite refused WAL mode; concurrent readers may block");
            }
        }
        // NORMAL is durable against process crashes in WAL mode (only a power
        // loss can drop the last commits, never corrupt), and much faster than FULL.
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", true)?;
        if path.is_some() {
            // Reads through a memory map instead of a read call per page: a
            // search touches pages all over a large index (full-text postings,
            // then each hit's row), and the calls were most of a row lookup.
            conn.pragma_update(None, "mmap_size", MMAP_BYTES)?;
        }
        migrations::migrate(&mut conn)?;
        Ok(Self { conn, path, term_counts: text_query::TermCountCache::default(), name_words: name_words::NameWordCache::default(), aliases: aliases::AliasCache::default() })
    }

    /// Switches the database to WAL and returns the journal mode now in
    /// force. On a new database several openers race to switch it, and
    /// SQLite answers "database is locked" at once to all but one, without
    /// calling the busy handler; they wait a little and try again, up to
    /// [`BUSY_TIMEOUT`].
    fn enable_wal(conn: &Connection) -> Result<String> {
        let started = std::time::Instant::now();
        let mut pause = std::time::Duration::from_millis(1);
        loop {
            match conn.pragma_update_and_check(None, "journal_mode", "wal", |r| r.get::<_, String>(0)) {
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy && started.elapsed() < BUSY_TIMEOUT =>
                {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(std::time::Duration::from_millis(50));
                }
                other => return Ok(other?),
            }
        }
    }

    /// The database file, if not in memory.
    #[must_use]
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The connection, for reads by modules of this crate and by callers
    /// that need a query this crate does not offer yet.
    #[must_use]
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// Runs `f` in one IMMEDIATE transaction and commits it; on error
    /// nothing `f` did is kept.
    ///
    /// # Errors
    /// Whatever `f` returns, or SQLite errors.
    pub fn write<T, E>(&mut self, f: impl FnOnce(&Writer<'_>) -> Result<T, E>) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| E::from(StoreError::from(e)))?;
        let writer = Writer { tx };
        let value = f(&writer)?;
        writer.tx.commit().map_err(|e| E::from(StoreError::from(e)))?;
        Ok(value)
    }

    /// `PRAGMA integrity_check` plus the full-text index's own check;
    /// `Ok(())` when both pass, else the problems found.
    ///
    /// # Errors
    /// SQLite errors, or the list of problems as a string.
    pub fn integrity_check(&self) -> Result<Result<(), String>> {
        let mut problems = Vec::new();
        let mut stmt = self.conn.prepare("PRAGMA integrity_check")?;
        for row in stmt.query_map([], |r| r.get::<_, String>(0))? {
            let row = row?;
            if row != "ok" {
                problems.push(row);
            }
        }
        if let Err(e) = self.conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 0)", []) {
            problems.push(format!("full-text index: {e}"));
        }
        let orphans: i64 = self.conn.query_row(
            "SELECT (SELECT count(*) FROM chunks WHERE file_id NOT IN (SELECT id FROM files))
                  + (SELECT count(*) FROM chunks_fts WHERE rowid NOT IN (SELECT id FROM chunks))
                  + (SELECT count(*) FROM chunks WHERE id NOT IN (SELECT rowid FROM chunks_fts))",
            [],
            |r| r.get(0),
        )?;
        if orphans > 0 {
            problems.push(format!("{orphans} chunk rows without their file or full-text row"));
        }
        Ok(if problems.is_empty() { Ok(()) } else { Err(problems.join("; ")) })
    }
}
