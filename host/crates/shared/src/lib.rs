//! The shared store: a content-addressed cache on PostgreSQL + pgvector that
//! a team's machines and CI take chunk lists and embeddings from, and
//! publish theirs to.
//!
//! - Chunk lists are keyed by (chunker key, file content hash, path): the
//!   chunker key, given by the caller, is the host version and
//!   `code_intel_core::Chunker::identity` (a hash of every loaded plugin's
//!   name, version, WIT version and component); the path is part of the key
//!   because plugins are chosen by path.
//! - Embeddings are keyed by (model key, chunk content hash), the same key
//!   the local store uses, so a vector is only ever reused for the model and
//!   text recipe that made it.
//!
//! The local SQLite index stays the working store; this is a cache and a
//! publication target, never required: every failure is reported as a
//! status and the caller goes on locally. Writes are `INSERT ... ON CONFLICT
//! DO NOTHING` under primary keys, so publishers running at once neither
//! duplicate nor overwrite rows. The schema is versioned
//! ([`SCHEMA_VERSION`], `code_intel_meta`); migrations run under an advisory
//! lock, and a store at a newer version than this code is not used.
//!
//! The URL comes from `CODE_INTEL_SHARED_STORE` or config `shared_store`; a
//! password missing from it comes from `PGPASSWORD` or a pgpass file
//! (`PGPASSFILE`, else `~/.pgpass`). The URL is only ever shown without its
//! password ([`SharedStore::shown`]). Connections use TLS as libpq would
//! (`sslmode`, `sslrootcert`, `PGSSLMODE`, `PGSSLROOTCERT`; module [`tls`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Mutex;
use std::time::Duration;

use code_intel_core::{ChunkedFile, Chunker};
use postgres::config::Host;
use postgres::types::ToSql;
use postgres::{Client, NoTls};
use sha2::{Digest, Sha256};

pub mod tls;
pub mod words;

pub use words::{FullTextQuery, WORDS_VERSION, chunk_words};

/// Environment variable holding the store's URL; overrides config `shared_store`.
pub const STORE_ENV: &str = "CODE_INTEL_SHARED_STORE";

/// The schema this code reads and writes. A store at a higher version was
/// migrated by a newer code-intel and is not used.
pub const SCHEMA_VERSION: i64 = 2;

/// How long a connection attempt may take before the store counts as down.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Rows per statement when publishing or fetching.
const BATCH: usize = 500;

/// Arbitrary key of the advisory lock migrations take.
const MIGRATION_LOCK: i64 = 0x636f_6465_696e_7431;

/// The store's URL: `CODE_INTEL_SHARED_STORE`, else the configured one.
#[must_use]
pub fn configured_url(config_value: Option<&str>) -> Option<String> {
    std::env::var(STORE_ENV)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .or_else(|| {
            config_value
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A connection to the shared store.
pub struct SharedStore {
    client: Mutex<Client>,
    /// How to open a second connection ([`Self::spare`]).
    settings: (postgres::Config, tls::Tls),
    /// A second connection, opened on first use, for an arm of a search
    /// that runs beside the other (`None` inside: it could not be opened).
    spare: std::sync::OnceLock<Option<Box<SharedStore>>>,
    shown: String,
    /// What this version added to the schema is there (see [`Additions`]).
    additions: Additions,
    /// Calls made on the connection (each one round trip or a few).
    calls: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for SharedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedStore")
            .field("url", &self.shown)
            .finish()
    }
}

/// Why the store is not used; the message never holds a password.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unavailable {
    /// The store as shown (no password), if the URL could be read.
    pub shown: String,
    pub reason: String,
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "shared store {} unavailable: {}",
            self.shown, self.reason
        )
    }
}

/// The store's URL as shown to people: user, host, port and database, never
/// the password.
#[must_use]
pub fn shown(config: &postgres::Config) -> String {
    let user = config.get_user().unwrap_or("");
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        #[cfg(unix)]
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config.get_dbname().unwrap_or(user);
    format!("postgres://{user}@{host}:{port}/{db}")
}

/// Parses `url` (a `postgres://` URL or `key=value` pairs) and fills in what
/// it leaves out as libpq would: the user from `PGUSER` or the login name,
/// the password from `PGPASSWORD` or the pgpass file.
///
/// # Errors
/// A URL that does not parse; the message does not repeat the URL.
pub fn connection_config(url: &str) -> Result<postgres::Config, Unavailable> {
    connection_settings(url).map(|(config, _)| config)
}

/// [`connection_config`] and the connection's TLS settings ([`tls::Tls`]):
/// `sslmode` and `sslrootcert` from the URL, else `PGSSLMODE` and
/// `PGSSLROOTCERT`, else `prefer` and `~/.postgresql/root.crt`.
///
/// # Errors
/// A URL that does not parse, TLS settings that cannot be used (an unknown
/// `sslmode`, a root certificate file missing for `verify-ca` or
/// `verify-full`); the message does not repeat the URL.
pub fn connection_settings(url: &str) -> Result<(postgres::Config, tls::Tls), Unavailable> {
    let unreadable = |reason: String| Unavailable {
        shown: "(unreadable URL)".to_string(),
        reason,
    };
    let (url, tls_params) = tls::take_tls_params(url).map_err(unreadable)?;
    let mut config = postgres::Config::from_str(&url).map_err(|e| Unavailable {
        shown: "(unreadable URL)".to_string(),
        reason: format!(
            "{STORE_ENV} / shared_store is not a PostgreSQL URL ({e}); write it as postgres://USER@HOST:5432/DATABASE"
        ),
    })?;
    if config.get_user().is_none() {
        let user = std::env::var("PGUSER")
            .or_else(|_| std::env::var("USER"))
            .unwrap_or_else(|_| "postgres".to_string());
        config.user(&user);
    }
    if config.get_hosts().is_empty() {
        config.host("localhost");
    }
    if config.get_password().is_none() {
        if let Some(password) = std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty()) {
            config.password(password);
        } else if let Some(password) = pgpass_password(&config) {
            config.password(password);
        }
    }
    config.connect_timeout(CONNECT_TIMEOUT);
    config.keepalives_idle(Duration::from_secs(30));
    config.application_name("code-intel");
    let tls = tls::Tls::resolve(&tls_params, &|name| std::env::var(name).ok()).map_err(|reason| {
        Unavailable {
            shown: shown(&config),
            reason,
        }
    })?;
    config.ssl_mode(tls.postgres_mode());
    Ok((config, tls))
}

/// Connects with `tls`; with `sslmode=prefer`, a failed TLS handshake is
/// tried again unencrypted, as libpq does.
fn connect_with(config: &postgres::Config, tls: &tls::Tls) -> Result<Client, String> {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        #[cfg(unix)]
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost".to_string(),
    };
    let Some(connector) = tls.connector() else {
        return config.connect(NoTls).map_err(|e| describe(&e));
    };
    match config.connect(connector) {
        Ok(client) => Ok(client),
        Err(e) if tls.mode == tls::SslMode::Prefer && tls.describe(&e, &host).is_some() => {
            let mut plain = config.clone();
            plain.ssl_mode(postgres::config::SslMode::Disable);
            plain.connect(NoTls).map_err(|e| describe(&e))
        }
        Err(e) => Err(tls.describe(&e, &host).unwrap_or_else(|| describe(&e))),
    }
}

/// The password for `config` from the pgpass file (`PGPASSFILE`, else
/// `~/.pgpass`): the first line whose host, port, database and user match
/// (`*` matches anything).
fn pgpass_password(config: &postgres::Config) -> Option<String> {
    let path = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pgpass")))?;
    let text = std::fs::read_to_string(path).ok()?;
    let host = match config.get_hosts().first()? {
        Host::Tcp(h) => h.clone(),
        #[cfg(unix)]
        Host::Unix(_) => "localhost".to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let user = config.get_user()?.to_string();
    let db = config
        .get_dbname()
        .map_or_else(|| user.clone(), str::to_string);
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields = split_pgpass(line);
        if fields.len() != 5 {
            continue;
        }
        let matches = |field: &str, value: &str| field == "*" || field == value;
        if matches(&fields[0], &host)
            && matches(&fields[1], &port)
            && matches(&fields[2], &db)
            && matches(&fields[3], &user)
        {
            return Some(fields[4].clone());
        }
    }
    None
}

/// Splits a pgpass line at unescaped colons (`\:` and `\\` are escapes).
fn split_pgpass(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    fields.last_mut().map(|f| f.push(next));
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            _ => {
                fields.last_mut().map(|f| f.push(c));
            }
        }
    }
    fields
}

/// A vector row to publish: content hash and vector.
pub type VectorRow = (String, Vec<f32>);

impl SharedStore {
    /// Connects and brings the schema up to [`SCHEMA_VERSION`] (creating it
    /// on an empty database).
    ///
    /// # Errors
    /// Unreachable, refused credentials, TLS refused or failed (no TLS on
    /// the server with `sslmode=require`, a certificate not trusted), no
    /// pgvector, a schema at a newer version: each as [`Unavailable`] with
    /// what to do.
    pub fn connect(url: &str) -> Result<Self, Unavailable> {
        let (config, tls) = connection_settings(url)?;
        let shown = shown(&config);
        let fail = |reason: String| Unavailable {
            shown: shown.clone(),
            reason,
        };
        let mut client = connect_with(&config, &tls).map_err(fail)?;
        migrate(&mut client).map_err(fail)?;
        // Chunk lists by path, for the lookups of a whole sync at once
        // (`newest_chunk_lists`). Not part of the schema's version: a store
        // without it answers the same, slower; a user without the rights
        // leaves it to another.
        let exists = client
            .query_one("SELECT to_regclass('chunk_lists_by_path') IS NOT NULL", &[])
            .map(|r| r.get::<_, bool>(0))
            .unwrap_or(true);
        if !exists {
            let _ = client.batch_execute(
                "CREATE INDEX IF NOT EXISTS chunk_lists_by_path ON chunk_lists (chunker_key, path, published_at DESC)",
            );
        }
        let additions = ensure_additions(&mut client);
        Ok(Self {
            client: Mutex::new(client),
            settings: (config, tls),
            spare: std::sync::OnceLock::new(),
            shown,
            additions,
            calls: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// A second connection to the same store (opened on first use and kept;
    /// the schema is this one's), so that one arm of a search can run
    /// while the other does: `None` when it cannot be opened (the caller
    /// uses this connection).
    pub fn spare(&self) -> Option<&SharedStore> {
        self.spare
            .get_or_init(|| {
                let (config, tls) = &self.settings;
                match connect_with(config, tls) {
                    Ok(client) => Some(Box::new(SharedStore {
                        client: Mutex::new(client),
                        settings: self.settings.clone(),
                        spare: std::sync::OnceLock::from(None),
                        shown: self.shown.clone(),
                        additions: self.additions,
                        calls: std::sync::atomic::AtomicU64::new(0),
                    })),
                    Err(e) => {
                        tracing::info!("shared store: no second connection ({e}); the arms of a search take turns");
                        None
                    }
                }
            })
            .as_deref()
    }

    /// The URL as shown: no password.
    #[must_use]
    pub fn shown(&self) -> &str {
        &self.shown
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&mut Client) -> Result<T, postgres::Error>,
    ) -> Result<T, String> {
        let mut client = self
            .client
            .lock()
            .map_err(|_| "shared store connection lock poisoned".to_string())?;
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        f(&mut client).map_err(|e| describe(&e))
    }

    /// How many calls this connection made to the store so far (a call is
    /// one statement, or one transaction of a few).
    #[must_use]
    pub fn calls(&self) -> u64 {
        self.calls.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The chunk list published for `path` with content hash `file_hash`
    /// under `chunker_key`.
    ///
    /// # Errors
    /// Database errors (the caller stops using the store).
    pub fn chunk_list(
        &self,
        chunker_key: &str,
        file_hash: &str,
        path: &str,
    ) -> Result<Option<ChunkedFile>, String> {
        let row = self.with(|c| {
            c.query_opt("SELECT chunks FROM chunk_lists WHERE chunker_key = $1 AND file_hash = $2 AND path = $3", &[&chunker_key, &file_hash, &path])
        })?;
        // A row that does not parse (written by a buggy or foreign client)
        // is a miss, not an error: the file is chunked locally.
        Ok(row.and_then(|r| serde_json::from_slice::<ChunkedFile>(r.get::<_, &[u8]>(0)).ok()))
    }

    /// The newest chunk list published under `chunker_key` for each of
    /// `paths` (file hash and the list's encoded bytes), a few hundred paths
    /// per query. A path missing from the answer has no list under this key.
    ///
    /// # Errors
    /// Database errors.
    pub fn newest_chunk_lists(
        &self,
        chunker_key: &str,
        paths: &[&str],
    ) -> Result<HashMap<String, (String, Vec<u8>)>, String> {
        let mut out = HashMap::with_capacity(paths.len());
        for batch in paths.chunks(BATCH) {
            let rows = self.with(|c| {
                c.query(
                    "SELECT DISTINCT ON (path) path, file_hash, chunks FROM chunk_lists \
                     WHERE chunker_key = $1 AND path = ANY($2) ORDER BY path, published_at DESC, file_hash",
                    &[&chunker_key, &batch],
                )
            })?;
            for row in rows {
                out.insert(row.get::<_, String>(0), (row.get::<_, String>(1), row.get::<_, Vec<u8>>(2)));
            }
        }
        Ok(out)
    }

    /// Publishes chunk lists (file hash, path, chunked file); rows already
    /// there are kept. Returns how many rows were new.
    ///
    /// # Errors
    /// Database errors.
    pub fn publish_chunk_lists(
        &self,
        chunker_key: &str,
        lists: &[(String, String, ChunkedFile)],
    ) -> Result<u64, String> {
        let mut inserted = 0;
        for batch in lists.chunks(BATCH) {
            let encoded: Vec<(Vec<u8>, i32)> = batch
                .iter()
                .map(|(_, _, f)| {
                    (
                        serde_json::to_vec(f).unwrap_or_default(),
                        i32::try_from(f.chunks.len()).unwrap_or(i32::MAX),
                    )
                })
                .collect();
            let mut sql = String::from(
                "INSERT INTO chunk_lists (chunker_key, file_hash, path, chunks, chunk_count) VALUES ",
            );
            let mut params: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(batch.len() * 4 + 1);
            params.push(&chunker_key);
            for (i, ((hash, path, _), (bytes, count))) in batch.iter().zip(&encoded).enumerate() {
                let n = 2 + i * 4;
                if i > 0 {
                    sql.push(',');
                }
                sql.push_str(&format!("($1, ${n}, ${}, ${}, ${})", n + 1, n + 2, n + 3));
                params.extend_from_slice(&[hash as &(dyn ToSql + Sync), path, bytes, count]);
            }
            sql.push_str(" ON CONFLICT DO NOTHING");
            inserted += self.with(|c| c.execute(&sql, &params))?;
        }
        Ok(inserted)
    }

    /// The id of the model `key` (created on first use) and its dimension.
    ///
    /// # Errors
    /// Database errors, or the key already stored with another dimension.
    pub fn model(&self, key: &str, dim: usize) -> Result<i32, String> {
        let dim_i =
            i32::try_from(dim).map_err(|_| format!("vector dimension {dim} is too large"))?;
        let row = self.with(|c| {
            c.execute(
                "INSERT INTO models (key, dim) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
                &[&key, &dim_i],
            )?;
            c.query_one("SELECT id, dim FROM models WHERE key = $1", &[&key])
        })?;
        let (id, stored): (i32, i32) = (row.get(0), row.get(1));
        if stored != dim_i {
            return Err(format!(
                "the shared store holds model {key} with {stored}-dimensional vectors, this one gives {dim}"
            ));
        }
        // The model's HNSW index (cosine), for organisation-wide search. A
        // user without the rights, or a race with another publisher creating
        // it, leaves it to the next run.
        let _ = self.with(|c| {
            c.batch_execute(&format!(
                "CREATE INDEX IF NOT EXISTS embeddings_hnsw_{id} ON embeddings \
                 USING hnsw ((embedding::vector({dim})) vector_cosine_ops) WHERE model_id = {id}"
            ))
        });
        Ok(id)
    }

    /// The vectors stored for `model` under `hashes` (missing ones left out).
    ///
    /// # Errors
    /// Database errors.
    pub fn vectors(
        &self,
        model: i32,
        dim: usize,
        hashes: &[&str],
    ) -> Result<HashMap<String, Vec<f32>>, String> {
        let mut out = HashMap::with_capacity(hashes.len());
        for batch in hashes.chunks(BATCH * 4) {
            let rows = self.with(|c| {
                c.query("SELECT content_hash, embedding FROM embeddings WHERE model_id = $1 AND content_hash = ANY($2)", &[&model, &batch])
            })?;
            for row in rows {
                let vector: pgvector::Vector = row.get(1);
                let vector = vector.to_vec();
                if vector.len() == dim {
                    out.insert(row.get::<_, String>(0), vector);
                }
            }
        }
        Ok(out)
    }

    /// Which of `hashes` have a vector of `model` in the store.
    ///
    /// # Errors
    /// Database errors.
    pub fn existing_vectors(
        &self,
        model: i32,
        hashes: &[&str],
    ) -> Result<std::collections::HashSet<String>, String> {
        let mut out = std::collections::HashSet::new();
        for batch in hashes.chunks(BATCH * 4) {
            let rows = self.with(|c| {
                c.query("SELECT content_hash FROM embeddings WHERE model_id = $1 AND content_hash = ANY($2)", &[&model, &batch])
            })?;
            out.extend(rows.into_iter().map(|r| r.get::<_, String>(0)));
        }
        Ok(out)
    }

    /// Publishes vectors of `model`; rows already there are kept. Returns
    /// how many were new.
    ///
    /// # Errors
    /// Database errors.
    pub fn publish_vectors(&self, model: i32, rows: &[VectorRow]) -> Result<u64, String> {
        let mut inserted = 0;
        for batch in rows.chunks(BATCH) {
            let vectors: Vec<pgvector::Vector> = batch
                .iter()
                .map(|(_, v)| pgvector::Vector::from(v.clone()))
                .collect();
            let mut sql =
                String::from("INSERT INTO embeddings (model_id, content_hash, embedding) VALUES ");
            let mut params: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(batch.len() * 2 + 1);
            params.push(&model);
            for (i, ((hash, _), vector)) in batch.iter().zip(&vectors).enumerate() {
                let n = 2 + i * 2;
                if i > 0 {
                    sql.push(',');
                }
                sql.push_str(&format!("($1, ${n}, ${})", n + 1));
                params.extend_from_slice(&[hash as &(dyn ToSql + Sync), vector]);
            }
            sql.push_str(" ON CONFLICT DO NOTHING");
            inserted += self.with(|c| c.execute(&sql, &params))?;
        }
        Ok(inserted)
    }

    /// Publishes a repository's chunks under `name`, replacing what was
    /// published under that name before (one transaction: searches see the
    /// old set or the new one), then vacuums the chunks' table. Returns the
    /// number of chunks.
    ///
    /// # Errors
    /// Database errors.
    pub fn publish_repository(&self, name: &str, chunks: &[RepoChunk]) -> Result<u64, String> {
        let published = self.with(|c| {
            let mut tx = c.transaction()?;
            // The upsert locks the repository's row: two publishers of one
            // repository take turns.
            let id: i32 = tx
                .query_one(
                    "INSERT INTO repositories (name) VALUES ($1) ON CONFLICT (name) DO UPDATE SET published_at = now() RETURNING id",
                    &[&name],
                )?
                .get(0);
            tx.execute("DELETE FROM repository_chunks WHERE repository_id = $1", &[&id])?;
            let columns = if self.additions.words_column { ", words_version" } else { "" };
            let version = WORDS_VERSION;
            for batch in chunks.chunks(BATCH / 2) {
                let mut sql = format!(
                    "INSERT INTO repository_chunks (repository_id, path, chunk_id, kind, name, start_line, end_line, content_hash, words{columns}) VALUES "
                );
                let mut params: Vec<&(dyn ToSql + Sync)> = vec![&id];
                if self.additions.words_column {
                    params.push(&version);
                }
                let first = params.len() + 1;
                for (i, chunk) in batch.iter().enumerate() {
                    let n = first + i * 8;
                    if i > 0 {
                        sql.push(',');
                    }
                    sql.push_str(&format!(
                        "($1, ${n}, ${}, ${}, ${}, ${}, ${}, ${}, ${}::text::tsvector{})",
                        n + 1,
                        n + 2,
                        n + 3,
                        n + 4,
                        n + 5,
                        n + 6,
                        n + 7,
                        if self.additions.words_column { ", $2" } else { "" }
                    ));
                    params.extend_from_slice(&[
                        &chunk.path as &(dyn ToSql + Sync),
                        &chunk.chunk_id,
                        &chunk.kind,
                        &chunk.name,
                        &chunk.start_line,
                        &chunk.end_line,
                        &chunk.content_hash,
                        &chunk.words,
                    ]);
                }
                sql.push_str(" ON CONFLICT DO NOTHING");
                tx.execute(&sql, &params)?;
            }
            if self.additions.name_words_table {
                let texts = chunks.iter().flat_map(|c| [c.name.as_str(), c.path.as_str()]);
                let words: Vec<String> = code_intel_store::name_words::name_words_of(texts).to_vec();
                tx.execute(
                    "INSERT INTO repository_name_words (repository_id, words, published_at) \
                     SELECT $1, $2, published_at FROM repositories WHERE id = $1 \
                     ON CONFLICT (repository_id) DO UPDATE SET words = excluded.words, published_at = excluded.published_at",
                    &[&id, &words],
                )?;
            }
            if self.additions.aliases_table {
                tx.execute("DELETE FROM repository_aliases WHERE repository_id = $1", &[&id])?;
                let rows: Vec<(&RepoChunk, &String)> = chunks.iter().flat_map(|c| c.aliases.iter().map(move |a| (c, a))).collect();
                for batch in rows.chunks(BATCH) {
                    let mut sql = String::from(
                        "INSERT INTO repository_aliases (repository_id, path, chunk_id, alias, published_at) \
                         SELECT $1, v.path, v.chunk_id, v.alias, r.published_at FROM repositories r, (VALUES ",
                    );
                    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&id];
                    for (i, (chunk, alias)) in batch.iter().enumerate() {
                        let n = 2 + i * 3;
                        if i > 0 {
                            sql.push(',');
                        }
                        sql.push_str(&format!("(${n}::text, ${}::text, ${}::text)", n + 1, n + 2));
                        params.extend_from_slice(&[&chunk.path as &(dyn ToSql + Sync), &chunk.chunk_id, *alias]);
                    }
                    sql.push_str(") AS v (path, chunk_id, alias) WHERE r.id = $1 ON CONFLICT DO NOTHING");
                    tx.execute(&sql, &params)?;
                }
            }
            tx.commit()?;
            Ok(chunks.len() as u64)
        })?;
        // The rows just written are not yet marked visible to every
        // transaction, so counting the chunks that hold a word (the
        // any-word ranking's weights) reads each of them from the table
        // instead of the index alone until autovacuum runs: 46 ms against 7
        // for one 16-word request over 33,000 chunks. Vacuuming marks them
        // (~170 ms after publishing 1,500 chunks into 33,000); a store
        // that refuses (another owner) only warns, and searches stay right.
        if let Err(e) = self.with(|c| c.batch_execute("VACUUM repository_chunks")) {
            tracing::warn!("shared store: VACUUM repository_chunks after publishing {name} failed: {e}");
        }
        Ok(published)
    }

    /// Searches the published repositories of `scope` (every one, or those
    /// [`Self::scope`] named): [`Self::keyword_arm`] and
    /// [`Self::vector_arm`], one after the other, fused by reciprocal rank
    /// ([`SearchOutcome::fused`]). At most `limit` hits.
    ///
    /// # Errors
    /// Database errors.
    pub fn search(
        &self,
        text: &FullTextQuery,
        vector: Option<(&str, &[f32])>,
        scope: &Scope,
        limit: usize,
    ) -> Result<SearchOutcome, String> {
        let keyword = self.keyword_arm(text, scope)?;
        let vector = self.vector_arm(vector, scope)?;
        Ok(SearchOutcome::fused(keyword, vector, limit))
    }

    /// The full-text arm of a search of `scope`: the words of `text` in
    /// the chunks' words (PostgreSQL full text: chunks holding every word,
    /// ranked by `ts_rank_cd`, else, when none does, chunks holding any of
    /// its rarer words, ranked by the BM25 weights of the words each holds,
    /// its common words included ([`COMMON_WEIGHT_SHARE`]), and then by
    /// `ts_rank_cd`; in a large store, found by the rarest of them only,
    /// see [`finding_clauses`]), best first; with the counts of
    /// repositories an answer reports. It needs no query vector, so it can
    /// run (on [`Self::spare`]) while the query is embedded.
    ///
    /// # Errors
    /// Database errors.
    pub fn keyword_arm(&self, text: &FullTextQuery, scope: &Scope) -> Result<KeywordArm, String> {
        const DEPTH: i64 = SEARCH_DEPTH;
        // Chunks holding any of the rarer words ranked by `ts_rank_cd`
        // (best by the words' weights first).
        const SHORTLIST: i64 = 3 * DEPTH;
        // Chunks found by the rarest clauses alone whose other clauses
        // are weighed before the shortlist is taken (see
        // [`finding_clauses`]).
        const RESCORED: i64 = 20 * DEPTH;
        let in_scope = scope.only("repository_id");
        let older = if self.additions.words_column {
            format!(
                "(SELECT count(DISTINCT repository_id) FROM repository_chunks WHERE words_version < {WORDS_VERSION}{in_scope})"
            )
        } else {
            format!("(SELECT count(*) FROM repositories WHERE true{})", scope.only("id"))
        };
        let row = self.with(|c| {
            c.query_one(&format!("SELECT (SELECT count(*) FROM repositories WHERE true{}), {older}", scope.only("id")), &[])
        })?;
        let mut arm = KeywordArm { repositories: row.get(0), older_words: row.get(1), ..KeywordArm::default() };
        let columns = ARM_COLUMNS;
        // Chunks holding every word; only when none does, chunks holding any
        // of the rarer words (an any-word query of common code words would
        // match a large share of all chunks). Following a few chunks holding
        // every word with any-word ones, as the local index's lexical
        // search does below 50, measured no better on the retrieval
        // benchmark and cost a short request about 20 ms.
        if let Some(all) = text.all() {
            let rows = self.with(|c| {
                c.query(
                    &format!(
                        "SELECT {columns}, ts_rank_cd(c.words, t.q, 32)::float8 AS rank FROM repository_chunks c \
                         JOIN repositories r ON r.id = c.repository_id, (SELECT $1::text::tsquery AS q) t \
                         WHERE c.words @@ t.q{} ORDER BY rank DESC, r.name, c.path, c.start_line LIMIT {DEPTH}",
                        scope.only("c.repository_id")
                    ),
                    &[&all],
                )
            })?;
            let several = text.clauses.len() > 1;
            arm.every_word = !rows.is_empty();
            let scores: Vec<f64> = rows.iter().map(|r| r.get::<_, f64>(7)).collect();
            let mut any_rows = Vec::new();
            let mut any_scores = Vec::new();
            if several && rows.is_empty() {
                let weights = self.clause_weights(&text.clauses)?;
                let rare = rare_clauses(&weights);
                if !rare.is_empty() {
                    let any = rare.iter().map(|w| format!("({})", w.clause)).collect::<Vec<_>>().join(" | ");
                    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&any];
                    // Each finding clause's chunks through the GIN index
                    // alone (an exact match needs no chunk's words read),
                    // summed per chunk; only the shortlist's words are read,
                    // for `ts_rank_cd`. Weighing every candidate's words in
                    // place took 244 ms for a long request. Chunks are
                    // summed by their row's address (`ctid`, stable within
                    // the statement), on one process: grouping by the
                    // text key, with parallel workers, took 34-47 ms
                    // against 25-27 for a 20-word request over 33,000
                    // chunks.
                    let (finding, rarer_rescoring) = rare.split_at(finding_clauses(&rare));
                    // The words too common to find by (a request's
                    // `page`, `user`, `edit` in a wiki) still weigh on the
                    // found chunks, as in the local index's BM25: without
                    // them a chunk holding two rare words of a request
                    // outranked the one holding a rare word and four
                    // common ones that together say what the request is
                    // about (organisation-wide MRR within each request's
                    // own repository, English 0.56 -> 0.60, Japanese 0.44
                    // -> 0.52 on `bench/retrieval`).
                    let mut rescoring = rarer_rescoring.to_vec();
                    rescoring.extend(weights.iter().filter(|w| w.common && !rare.iter().any(|r| r.clause == w.clause)).cloned());
                    let mut held = Vec::with_capacity(finding.len());
                    for w in finding {
                        held.push(format!(
                            "SELECT ctid AS place, {:.6}::float8 AS weight FROM repository_chunks WHERE words @@ ${}::text::tsquery{in_scope}",
                            w.weight,
                            params.len() + 1
                        ));
                        params.push(&w.clause);
                    }
                    let held = held.join(" UNION ALL ");
                    // The commoner clauses left out of finding are weighed
                    // on the best found chunks' own words, so that those
                    // holding them still rank first.
                    let best = if rescoring.is_empty() {
                        format!(
                            "best AS (SELECT place, sum(weight) AS weight FROM held GROUP BY place \
                                      ORDER BY weight DESC, place LIMIT {SHORTLIST})"
                        )
                    } else {
                        let mut extra = Vec::with_capacity(rescoring.len());
                        for w in &rescoring {
                            extra.push(format!(
                                "CASE WHEN c.words @@ ${}::text::tsquery THEN {:.6}::float8 ELSE 0 END",
                                params.len() + 1,
                                w.weight
                            ));
                            params.push(&w.clause);
                        }
                        format!(
                            "found AS (SELECT place, sum(weight) AS weight FROM held GROUP BY place \
                                       ORDER BY weight DESC, place LIMIT {RESCORED}), \
                             best AS (SELECT f.place, f.weight + {} AS weight FROM found f \
                                      JOIN repository_chunks c ON c.ctid = f.place \
                                      ORDER BY weight DESC, f.place LIMIT {SHORTLIST})",
                            extra.join(" + ")
                        )
                    };
                    // `ts_rank_cd` (normalised by 32: under 1) only for the
                    // chunks it can still bring among the best: not those
                    // weighing a whole 1 less than the `DEPTH`th. It reads
                    // every position of the request's words in a chunk
                    // (36 us a chunk for a 20-word request).
                    any_rows = self.with(|c| {
                        let mut tx = c.transaction()?;
                        tx.batch_execute("SET LOCAL max_parallel_workers_per_gather = 0")?;
                        let rows = tx.query(
                            &format!(
                                "WITH held AS ({held}), {best}, \
                                 bar AS (SELECT weight - 1.01 AS weight FROM best ORDER BY weight DESC OFFSET {} LIMIT 1) \
                                 SELECT {columns}, b.weight + ts_rank_cd(c.words, $1::text::tsquery, 32)::float8 AS rank FROM best b \
                                 JOIN repository_chunks c ON c.ctid = b.place \
                                 JOIN repositories r ON r.id = c.repository_id \
                                 WHERE b.weight >= coalesce((SELECT weight FROM bar), '-infinity') \
                                 ORDER BY rank DESC, r.name, c.path, c.start_line LIMIT {DEPTH}",
                                DEPTH - 1
                            ),
                            &params,
                        )?;
                        tx.commit()?;
                        Ok(rows)
                    })?;
                    any_scores = any_rows.iter().map(|r| r.get::<_, f64>(7)).collect();
                }
            }
            let mut rows = rows;
            rows.extend(any_rows);
            let mut scores = scores;
            scores.extend(any_scores);
            arm.rows = rows.iter().zip(scores).map(|(r, score)| SharedHit::of(r, score, "keyword")).collect();
        }

        Ok(arm)
    }

    /// The chunks of `scope` holding text a request quotes (`phrase`, a
    /// `tsquery` from [`FullTextQuery::phrase`]: what a developer copies
    /// from a screen or a log is literally in the code), best first by
    /// `ts_rank_cd`, each with that score as [`SharedHit::quoted`]; at most
    /// as many as an arm finds. None when more than [`PHRASE_ROWS`] chunks
    /// hold it: quoted text that common (a quoted `page` in a wiki) says
    /// nothing of where the answer is, and ranking every chunk holding it
    /// would cost a read of each.
    ///
    /// # Errors
    /// Database errors.
    pub fn phrase_arm(&self, phrase: &str, scope: &Scope) -> Result<Vec<SharedHit>, String> {
        let columns = ARM_COLUMNS;
        let rows = self.with(|c| {
            c.query(
                &format!(
                    "WITH held AS (SELECT ctid AS place FROM repository_chunks WHERE words @@ $1::text::tsquery{} LIMIT {}) \
                     SELECT {columns}, ts_rank_cd(c.words, $1::text::tsquery, 32)::float8 AS rank FROM held h \
                     JOIN repository_chunks c ON c.ctid = h.place JOIN repositories r ON r.id = c.repository_id \
                     WHERE (SELECT count(*) FROM held) <= {PHRASE_ROWS} \
                     ORDER BY rank DESC, r.name, c.path, c.start_line LIMIT {SEARCH_DEPTH}",
                    scope.only("repository_id"),
                    PHRASE_ROWS + 1
                ),
                &[&phrase],
            )
        })?;
        Ok(rows
            .iter()
            .map(|r| {
                let score: f64 = r.get(7);
                let mut hit = SharedHit::of(r, score, "keyword");
                // Found by full text, though not by the keyword arm's
                // ranking: shown as a keyword hit, as locally.
                hit.arms = vec!["keyword"];
                hit.keyword_score = None;
                hit.quoted = Some(score);
                hit
            })
            .collect())
    }

    /// Which of the chunks `among` (repository name, path, chunk id: the
    /// hits the arms found) hold a pair of a request's neighbouring words
    /// (`pairs`, one `tsquery` each from [`words::near_pair`]), as their
    /// index in `among` and a score: how many of the pairs each holds, plus
    /// `ts_rank` of them all (under 1: how often their words occur) to
    /// order chunks holding as many (`ts_rank_cd` of this many phrases took
    /// about a millisecond per chunk holding one). Only the found chunks
    /// are read: searching the whole scope for every pair read each chunk
    /// holding both words of any pair (organisation-wide English `query_ms`
    /// p50 25.8 -> 58.5 ms over 40,000 chunks) and ranked no better.
    ///
    /// # Errors
    /// Database errors.
    pub fn pairs_among(&self, pairs: &[String], among: &[(&str, &str, &str)]) -> Result<Vec<(usize, f64)>, String> {
        if pairs.is_empty() || among.is_empty() {
            return Ok(Vec::new());
        }
        let all = pairs.iter().map(|p| format!("({p})")).collect::<Vec<_>>().join(" | ");
        let repositories: Vec<&str> = among.iter().map(|c| c.0).collect();
        let paths: Vec<&str> = among.iter().map(|c| c.1).collect();
        let chunk_ids: Vec<&str> = among.iter().map(|c| c.2).collect();
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&repositories, &paths, &chunk_ids, &all];
        let held: Vec<String> = (0..pairs.len()).map(|i| format!("(c.words @@ ${}::text::tsquery)::int", i + 5)).collect();
        params.extend(pairs.iter().map(|p| p as &(dyn ToSql + Sync)));
        let rows = self.with(|c| {
            c.query(
                &format!(
                    "SELECT f.i, ({})::float8 + ts_rank(c.words, t.q, 32)::float8 \
                     FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS f(repository, path, chunk_id, i) \
                     JOIN repositories r ON r.name = f.repository \
                     JOIN repository_chunks c ON c.repository_id = r.id AND c.path = f.path AND c.chunk_id = f.chunk_id, \
                     (SELECT $4::text::tsquery AS q) t \
                     WHERE c.words @@ t.q",
                    held.join(" + ")
                ),
                &params,
            )
        })?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                let i: i64 = r.get(0);
                usize::try_from(i - 1).ok().map(|i| (i, r.get::<_, f64>(1)))
            })
            .collect())
    }

    /// The vector arm of a search of `scope`: given the query's vector
    /// under a model key, the nearest chunk texts of that model (pgvector
    /// HNSW, cosine; within a scope, its texts compared one by one or the
    /// index's nearest that it holds, see `scoped_nearest`), nearest first;
    /// without one, or without that model's vectors, no rows and why.
    ///
    /// # Errors
    /// Database errors.
    pub fn vector_arm(&self, vector: Option<(&str, &[f32])>, scope: &Scope) -> Result<VectorArm, String> {
        const DEPTH: i64 = SEARCH_DEPTH;
        let mut arm = VectorArm::default();
        let columns = ARM_COLUMNS;
        let in_scope = scope.only("repository_id");
        match vector {
            None => arm.status = "unavailable: no embedding model".to_string(),
            Some((key, v)) => {
                let model = self
                    .with(|c| c.query_opt("SELECT id, dim FROM models WHERE key = $1", &[&key]))?;
                match model {
                    None => {
                        arm.status =
                            format!("unavailable: no vectors of model {key} were published")
                    }
                    Some(row) => {
                        let (id, dim): (i32, i32) = (row.get(0), row.get(1));
                        if usize::try_from(dim).ok() == Some(v.len()) {
                            let q = pgvector::Vector::from(v.to_vec());
                            // Nearest texts of the model (HNSW), then the
                            // published chunks holding them, in that order.
                            // Within a scope: the index's nearest that its
                            // chunks hold, or every text of its chunks (see
                            // `scoped_nearest`; the fence `OFFSET 0` keeps
                            // that ordering off the index).
                            let index_nearest = |limit: i64| {
                                format!(
                                    "SELECT content_hash, embedding::vector({dim}) <=> $1::vector({dim}) AS distance \
                                     FROM embeddings WHERE model_id = {id} \
                                     ORDER BY embedding::vector({dim}) <=> $1::vector({dim}) LIMIT {limit}"
                                )
                            };
                            let strategy = if scope.is_everything() {
                                Nearest::Index { candidates: DEPTH }
                            } else {
                                let row = self.with(|c| {
                                    c.query_one(
                                        &format!(
                                            "SELECT (SELECT count(*) FROM repository_chunks WHERE true{in_scope}), \
                                             (SELECT greatest(reltuples, 0)::int8 FROM pg_class WHERE relname = 'repository_chunks')"
                                        ),
                                        &[],
                                    )
                                })?;
                                scoped_nearest(row.get(0), row.get::<_, Option<i64>>(1).unwrap_or(0), scope.exact_scan_limit)
                            };
                            let (ctes, ef_search) = match strategy {
                                Nearest::Index { candidates } if scope.is_everything() => {
                                    (format!("nearest AS ({})", index_nearest(candidates)), 200)
                                }
                                Nearest::Index { candidates } => (
                                    format!(
                                        "candidates AS ({}), nearest AS (SELECT n.content_hash, n.distance FROM candidates n \
                                         WHERE EXISTS (SELECT 1 FROM repository_chunks c WHERE c.content_hash = n.content_hash{}) \
                                         ORDER BY n.distance LIMIT {DEPTH})",
                                        index_nearest(candidates),
                                        scope.only("c.repository_id")
                                    ),
                                    candidates.max(200),
                                ),
                                Nearest::Exact => (
                                    format!(
                                        "nearest AS (SELECT content_hash, distance FROM (SELECT e.content_hash, e.embedding::vector({dim}) <=> $1::vector({dim}) AS distance \
                                         FROM embeddings e WHERE e.model_id = {id} AND e.content_hash IN \
                                         (SELECT content_hash FROM repository_chunks WHERE true{in_scope}) OFFSET 0) s \
                                         ORDER BY distance LIMIT {DEPTH})"
                                    ),
                                    200,
                                ),
                            };
                            let rows = self.with(|c| {
                                let mut tx = c.transaction()?;
                                tx.batch_execute(&format!("SET LOCAL hnsw.ef_search = {ef_search}"))?;
                                let rows = tx.query(
                                    &format!(
                                        "WITH {ctes} \
                                         SELECT {columns}, 1 - n.distance FROM nearest n JOIN repository_chunks c ON c.content_hash = n.content_hash{} \
                                         JOIN repositories r ON r.id = c.repository_id ORDER BY n.distance, r.name, c.path, c.start_line",
                                        scope.only("c.repository_id")
                                    ),
                                    &[&q],
                                )?;
                                tx.commit()?;
                                Ok(rows)
                            })?;
                            let similarities: Vec<f64> = rows.iter().map(|r| r.get::<_, f64>(7)).collect();
                            arm.rows = rows.iter().zip(similarities).map(|(r, score)| SharedHit::of(r, score, "vector")).collect();
                            arm.status = "ready".to_string();
                        } else {
                            arm.status = format!(
                                "unavailable: the published vectors of {key} have {dim} dimensions"
                            );
                        }
                    }
                }
            }
        }
        Ok(arm)
    }

    /// The clauses of `text` an any-word search ranks by (see
    /// [`rare_clauses`]), rarest first.
    ///
    /// # Errors
    /// Database errors.
    pub fn any_word_clauses(&self, text: &FullTextQuery) -> Result<Vec<String>, String> {
        Ok(rare_clauses(&self.clause_weights(&text.clauses)?).into_iter().map(|w| w.clause).collect())
    }

    /// The words the published repositories of `scope` name things with
    /// (the parts of their chunks' names and paths, as recorded when each
    /// was last published; none for one last published by an older
    /// code-intel, which records none),
    /// sorted: what a request's katakana loanwords are read against
    /// (`code_intel_search::loanwords`).
    ///
    /// # Errors
    /// Database errors.
    pub fn name_words(&self, scope: &Scope) -> Result<Vec<String>, String> {
        if !self.additions.name_words_table {
            return Ok(Vec::new());
        }
        let rows = self.with(|c| {
            c.query(
                &format!(
                    "SELECT DISTINCT unnest(n.words) AS w FROM repository_name_words n \
                     JOIN repositories r ON r.id = n.repository_id AND r.published_at = n.published_at WHERE true{} ORDER BY w",
                    scope.only("n.repository_id")
                ),
                &[],
            )
        })?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// Every alias of the published chunks of `scope` (what plugins say a
    /// request calls a chunk: `orders list` for a Filament table of orders;
    /// few, a plugin gives them to the screens it knows), as last
    /// published; none for a repository last published by an older
    /// code-intel, which records none.
    ///
    /// # Errors
    /// Database errors.
    pub fn aliases(&self, scope: &Scope) -> Result<Vec<SharedAlias>, String> {
        if !self.additions.aliases_table {
            return Ok(Vec::new());
        }
        let rows = self.with(|c| {
            c.query(
                &format!(
                    "SELECT {ARM_COLUMNS}, a.alias FROM repository_aliases a \
                     JOIN repositories r ON r.id = a.repository_id AND r.published_at = a.published_at \
                     JOIN repository_chunks c ON c.repository_id = a.repository_id AND c.path = a.path AND c.chunk_id = a.chunk_id \
                     WHERE true{} ORDER BY r.name, c.path, c.start_line, a.alias",
                    scope.only("a.repository_id")
                ),
                &[],
            )
        })?;
        Ok(rows
            .iter()
            .map(|r| {
                let mut chunk = SharedHit::of(r, 0.0, "keyword");
                chunk.keyword_score = None;
                SharedAlias { alias: r.get(7), chunk }
            })
            .collect())
    }

    /// For each `tsquery` of `queries`, does some published chunk of
    /// `scope` match it? One round trip; each answered through the GIN
    /// index. For the confidence judgement of organisation-wide search
    /// (which of a request's words the store knows).
    ///
    /// # Errors
    /// Database errors (a malformed query among them).
    pub fn held(&self, queries: &[String], scope: &Scope) -> Result<Vec<bool>, String> {
        if queries.is_empty() {
            return Ok(Vec::new());
        }
        let rows = self.with(|c| {
            c.query(
                &format!(
                    "SELECT EXISTS (SELECT 1 FROM repository_chunks c WHERE c.words @@ w::tsquery{}) \
                     FROM unnest($1::text[]) WITH ORDINALITY AS q(w, i) ORDER BY i",
                    scope.only("c.repository_id")
                ),
                &[&queries],
            )
        })?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// Each clause with the number of published chunks holding it (one
    /// count per clause through the GIN index) and its weight: the inverse
    /// document frequency BM25 gives a word, `ln(1 + (N - n + 0.5) / (n +
    /// 0.5))` for `n` of `N` chunks.
    ///
    /// A clause is counted up to [`COMMON_SHARE`] of the chunks only: past
    /// that it is common, and its count matters only when it is among the
    /// [`RARE_WORDS_KEPT`] rarest, which are then counted in full. Counting
    /// reads each chunk holding the clause from the table where the
    /// visibility map does not mark its page visible to all (after a
    /// publication, until a `VACUUM` ends), and a sentence's common words
    /// are held by tens of thousands of chunks at 100,000: counting a
    /// 20-word request's clauses there took 54-135 ms in full.
    ///
    /// # Errors
    /// Database errors.
    fn clause_weights(&self, clauses: &[String]) -> Result<Vec<ClauseWeight>, String> {
        let counts = |clauses: &[String], capped: bool| {
            let cap = if capped { "LIMIT (SELECT ceil(n * $2)::int8 FROM total)" } else { "" };
            let share: &(dyn ToSql + Sync) = &COMMON_SHARE;
            let params: Vec<&(dyn ToSql + Sync)> = if capped { vec![&clauses, share] } else { vec![&clauses] };
            self.with(|c| {
                c.query(
                    &format!(
                        "WITH total AS (SELECT CASE WHEN reltuples > 0 THEN reltuples::float8 \
                                                    ELSE (SELECT greatest(count(*), 1)::float8 FROM repository_chunks) END AS n \
                                        FROM pg_class WHERE relname = 'repository_chunks') \
                         SELECT w, (SELECT count(*) FROM (SELECT 1 FROM repository_chunks c WHERE c.words @@ w::tsquery {cap}) s), \
                                (SELECT n FROM total) \
                         FROM unnest($1::text[]) WITH ORDINALITY AS q(w, i) ORDER BY i"
                    ),
                    &params,
                )
            })
        };
        #[allow(clippy::cast_precision_loss)]
        let weighed = |r: &postgres::Row| {
            let count: i64 = r.get(1);
            let total = r.get::<_, Option<f64>>(2).unwrap_or(1.0).max(count as f64);
            let n = count as f64;
            ClauseWeight {
                clause: r.get(0),
                count,
                weight: (1.0 + (total - n + 0.5) / (n + 0.5)).ln(),
                common: n >= total * COMMON_SHARE,
            }
        };
        let mut weights: Vec<ClauseWeight> = counts(clauses, true)?.iter().map(weighed).collect();
        let rare = weights.iter().filter(|w| w.count > 0 && !w.common).count();
        if rare < RARE_WORDS_KEPT {
            let common: Vec<String> = weights.iter().filter(|w| w.common).map(|w| w.clause.clone()).collect();
            if !common.is_empty() {
                for full in counts(&common, false)?.iter().map(weighed) {
                    if let Some(w) = weights.iter_mut().find(|w| w.clause == full.clause) {
                        *w = full;
                    }
                }
            }
        } else {
            for w in weights.iter_mut().filter(|w| w.common) {
                w.weight = common_weight();
            }
        }
        Ok(weights)
    }

    /// Records that every chunk published under `name` has a vector of
    /// the model `key` in the store, as of its last publication. Whether it
    /// was recorded (not when the store lacks the table or the repository).
    ///
    /// # Errors
    /// Database errors.
    pub fn mark_vectors(&self, name: &str, key: &str) -> Result<bool, String> {
        if !self.additions.vectors_table {
            return Ok(false);
        }
        let n = self.with(|c| {
            c.execute(
                "INSERT INTO repository_vectors (repository_id, model_id, published_at) \
                 SELECT r.id, m.id, r.published_at FROM repositories r, models m WHERE r.name = $1 AND m.key = $2 \
                 ON CONFLICT (repository_id, model_id) DO UPDATE SET published_at = excluded.published_at",
                &[&name, &key],
            )
        })?;
        Ok(n > 0)
    }

    /// The scope of a search limited to the repositories `wanted` names:
    /// each a published name (`github.com/org/app`) or its last parts
    /// (`org/app`, `app`) when only one published name ends so. Every
    /// published repository when `wanted` is empty.
    ///
    /// # Errors
    /// [`ScopeError::Unknown`] for a name no published repository, or more
    /// than one, answers to (listing the published names);
    /// [`ScopeError::Database`] when the store fails.
    pub fn scope(&self, wanted: &[String]) -> Result<Scope, ScopeError> {
        if wanted.is_empty() {
            return Ok(Scope::everything());
        }
        let rows = self
            .with(|c| c.query("SELECT id, name FROM repositories ORDER BY name", &[]))
            .map_err(ScopeError::Database)?;
        let published: Vec<(i32, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        let mut scope = Scope::everything();
        for w in wanted {
            let (id, name) = find_published(&published, w, self.shown())?;
            if !scope.ids.contains(id) {
                scope.ids.push(*id);
                scope.names.push(name.clone());
            }
        }
        Ok(scope)
    }

    /// Whether every published repository of `scope` has a vector of the
    /// model `key` for each of its chunks as last published
    /// ([`Self::mark_vectors`]); false for an empty store.
    ///
    /// # Errors
    /// Database errors.
    pub fn covers(&self, key: &str, scope: &Scope) -> Result<bool, String> {
        if !self.additions.vectors_table {
            return Ok(false);
        }
        let row = self.with(|c| {
            c.query_one(
                &format!(
                    "SELECT count(*) > 0 AND bool_and(EXISTS (SELECT 1 FROM repository_vectors v JOIN models m ON m.id = v.model_id \
                     WHERE v.repository_id = r.id AND m.key = $1 AND v.published_at = r.published_at)) FROM repositories r WHERE true{}",
                    scope.only("r.id")
                ),
                &[&key],
            )
        })?;
        Ok(row.get::<_, Option<bool>>(0).unwrap_or(false))
    }

    /// Row counts of the store's tables (chunk lists, models, embeddings), for status and tests.
    ///
    /// # Errors
    /// Database errors.
    pub fn counts(&self) -> Result<(i64, i64, i64), String> {
        let row = self.with(|c| {
            c.query_one(
                "SELECT (SELECT count(*) FROM chunk_lists), (SELECT count(*) FROM models), (SELECT count(*) FROM embeddings)",
                &[],
            )
        })?;
        Ok((row.get(0), row.get(1), row.get(2)))
    }
}

/// One chunk of a published repository.
#[derive(Clone, Debug)]
pub struct RepoChunk {
    pub path: String,
    pub chunk_id: String,
    pub kind: String,
    pub name: String,
    pub start_line: i32,
    pub end_line: i32,
    pub content_hash: String,
    /// The words the full-text arm matches: a `tsvector` literal,
    /// [`chunk_words`] of path, names and content.
    pub words: String,
    /// What a request calls the chunk: the `aliases` of its metadata
    /// (`orders list`), usually none.
    pub aliases: Vec<String>,
}

/// Share of the published chunks from which a word is too common to rank
/// an any-word search by (see [`rare_clauses`]).
const COMMON_SHARE: f64 = 0.05;

/// The share of the published chunks a [`ClauseWeight::common`] word is
/// weighed as if it were held by, unless it is among the
/// [`RARE_WORDS_KEPT`] rarest: its weight is then `ln(10)`, against ~3 for
/// a word in a twentieth of the chunks and more for rarer ones. Counting
/// each such word in full (up to half of the chunks) ranked no better on
/// `bench/retrieval` (MRR 0.598 / 0.527 against 0.601 / 0.521, English /
/// Japanese, docs/shared-store.md) and cost a read of every chunk holding
/// it (~3 ms per request at 40,000 chunks, more the larger the store).
const COMMON_WEIGHT_SHARE: f64 = 0.1;

/// The weight of a common word (see [`COMMON_WEIGHT_SHARE`]).
fn common_weight() -> f64 {
    (1.0 + (1.0 - COMMON_WEIGHT_SHARE) / COMMON_WEIGHT_SHARE).ln()
}

/// Chunks holding a quoted text beyond which [`SharedStore::phrase_arm`]
/// finds nothing.
const PHRASE_ROWS: i64 = 2_000;

/// Words an any-word search always keeps, the rarest first.
const RARE_WORDS_KEPT: usize = 3;

/// A full-text clause of a request, with how many published chunks hold it
/// and its weight (see `SharedStore::clause_weights`).
#[derive(Clone, Debug)]
struct ClauseWeight {
    clause: String,
    count: i64,
    weight: f64,
    /// Held by at least [`COMMON_SHARE`] of the published chunks.
    common: bool,
}

/// The clauses an any-word search ranks by: those no more common than
/// [`COMMON_SHARE`] of the published chunks, and at least the
/// [`RARE_WORDS_KEPT`] rarest that some chunk holds. A request in prose
/// holds words found in a large share of all code (`error`, `file`,
/// `user`); matching any of them would make most chunks candidates (664 ms
/// for one such request over four repositories), so they find nothing and
/// only weigh on the chunks the rarer words find (see
/// [`SharedStore::keyword_arm`]). Clauses no chunk holds match nothing and
/// are left out.
fn rare_clauses(weights: &[ClauseWeight]) -> Vec<ClauseWeight> {
    let mut held: Vec<&ClauseWeight> = weights.iter().filter(|w| w.count > 0).collect();
    held.sort_by_key(|w| w.count);
    held.iter()
        .enumerate()
        .filter(|(i, w)| *i < RARE_WORDS_KEPT || !w.common)
        .map(|(_, w)| (*w).clone())
        .collect()
}

/// Rows an any-word search reads to find its candidates, at most (unless
/// its rarest clause alone holds more): each row is read from the table for
/// its address, so their number is the search's cost. At 113,000 published
/// chunks a 20-word request's rarer words (those in under 5 % of them) held
/// 15,000-30,000 rows, 30-60 ms to read, sum and sort. With 10,000 (and
/// [`SharedStore::keyword_arm`]'s 2,000 weighed), the retrieval benchmark's
/// requests over its 38,857 chunks ranked the same files as with every
/// rarer word finding; with 5,000 and 1,000, 26 of 432 asks ranked their
/// ten files otherwise (one lost its answer from the first five).
const FINDING_ROWS: i64 = 10_000;

/// How many of `rare` (rarest first, see [`rare_clauses`]) find an
/// any-word search's candidates: the rarest whose chunks number at most
/// [`FINDING_ROWS`] together, at least one. The others are weighed only on
/// the best candidates (by the finding clauses' weights), whose words are
/// read anyway: a chunk holding only commoner words can no longer be found,
/// which changes little, since the rarer words weigh most (BM25), while the
/// rows read stop growing with the store. A small store finds by them all.
fn finding_clauses(rare: &[ClauseWeight]) -> usize {
    let mut rows = 0;
    rare.iter()
        .take_while(|w| {
            rows += w.count;
            rows <= FINDING_ROWS
        })
        .count()
        .max(1)
        .min(rare.len())
}

/// A hit of an organisation-wide search.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SharedHit {
    pub repository: String,
    pub path: String,
    pub chunk_id: String,
    pub kind: String,
    pub name: String,
    pub start_line: i32,
    pub end_line: i32,
    /// Reciprocal-rank fusion of the arms that found it.
    pub score: f64,
    /// `keyword`, `vector`.
    pub arms: Vec<&'static str>,
    /// The full-text arm's `ts_rank_cd` (for ranking files).
    #[serde(skip)]
    pub keyword_score: Option<f64>,
    /// The vector arm's cosine similarity (for ranking files).
    #[serde(skip)]
    pub similarity: Option<f64>,
    /// Holds text the request quotes: [`SharedStore::phrase_arm`]'s
    /// `ts_rank_cd` (for ranking files).
    #[serde(skip)]
    pub quoted: Option<f64>,
    /// That similarity calibrated against the query's similarity to
    /// unrelated code, as local hits' `vector_score` (set by code-intel's
    /// confidence judgement, which has the query's baselines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector_score: Option<f32>,
    /// The request calls it by one of its aliases (set by code-intel's
    /// file ranking, which reads the request; see [`SharedStore::aliases`]).
    #[serde(skip)]
    pub called: bool,
    /// Its cosine similarity to a second query of the request, the request
    /// read in English (set by code-intel's file ranking, from a second
    /// [`SharedStore::vector_arm`]).
    #[serde(skip)]
    pub translated: Option<f64>,
    /// Holds a pair of the request's neighbouring words:
    /// [`SharedStore::pairs_among`]'s score (for ranking files).
    #[serde(skip)]
    pub paired: Option<f64>,
}

/// A published chunk and one thing a request may call it
/// ([`SharedStore::aliases`]).
#[derive(Clone, Debug)]
pub struct SharedAlias {
    /// As the plugin wrote it (`orders list`).
    pub alias: String,
    /// The chunk, as an arm would find it but with no arm's score.
    pub chunk: SharedHit,
}

/// What a search's arms select of a chunk, in this order, then its score.
const ARM_COLUMNS: &str = "r.name, c.path, c.chunk_id, c.kind, c.name, c.start_line, c.end_line";

impl SharedHit {
    /// Whether `other` is the same published chunk (repository, path and
    /// chunk id), found by another arm or read another way.
    #[must_use]
    pub fn same_chunk(&self, other: &SharedHit) -> bool {
        self.repository == other.repository && self.path == other.path && self.chunk_id == other.chunk_id
    }

    /// A chunk as an arm found it (the columns of [`ARM_COLUMNS`]), with
    /// that arm's score: `keyword_score` (`ts_rank_cd` and the words'
    /// weights) or `similarity` (cosine); not yet fused.
    fn of(row: &postgres::Row, score: f64, arm: &'static str) -> Self {
        let keyword = arm == "keyword";
        Self {
            repository: row.get(0),
            path: row.get(1),
            chunk_id: row.get(2),
            kind: row.get(3),
            name: row.get(4),
            start_line: row.get(5),
            end_line: row.get(6),
            score: 0.0,
            arms: Vec::new(),
            keyword_score: keyword.then_some(score),
            similarity: (!keyword).then_some(score),
            quoted: None,
            vector_score: None,
            called: false,
            translated: None,
            paired: None,
        }
    }
}

/// What [`SharedStore::keyword_arm`] found, best first.
#[derive(Clone, Debug, Default)]
pub struct KeywordArm {
    pub rows: Vec<SharedHit>,
    /// Some chunk holds every word of the request.
    pub every_word: bool,
    /// Repositories published to the store (in the scope).
    pub repositories: i64,
    /// Repositories published by an older code-intel (see
    /// [`SearchOutcome::older_words`]).
    pub older_words: i64,
    /// The chunks the request calls by one of their aliases, found by the
    /// arm or not (set by code-intel, which reads the request against
    /// [`SharedStore::aliases`]); they join the file ranking of the
    /// definitions, not the fusion.
    pub called: Vec<SharedHit>,
    /// The English words a Japanese request is about, the keyword query
    /// asked for beside its own (set by code-intel).
    pub english_terms: Vec<String>,
}

/// What [`SharedStore::vector_arm`] found, nearest first.
#[derive(Clone, Debug, Default)]
pub struct VectorArm {
    pub rows: Vec<SharedHit>,
    /// `ready`, or `unavailable: <reason>`.
    pub status: String,
}

impl SearchOutcome {
    /// The two arms' chunks fused by reciprocal rank (k = 60), at most
    /// `limit`, best first.
    #[must_use]
    pub fn fused(keyword: KeywordArm, vector: VectorArm, limit: usize) -> Self {
        const RRF_K: f64 = 60.0;
        let mut fused: HashMap<(String, String, String), SharedHit> = HashMap::new();
        for (rows, arm) in [(keyword.rows, "keyword"), (vector.rows, "vector")] {
            // Rows arrive best first; a chunk's rank is its first row's place.
            let mut rank = 0usize;
            for row in rows {
                let key = (row.repository.clone(), row.path.clone(), row.chunk_id.clone());
                let (keyword_score, similarity) = (row.keyword_score, row.similarity);
                let hit = fused.entry(key).or_insert(row);
                if !hit.arms.contains(&arm) {
                    #[allow(clippy::cast_precision_loss)]
                    let place = rank as f64;
                    hit.score += 1.0 / (RRF_K + place + 1.0);
                    hit.arms.push(arm);
                    rank += 1;
                    hit.keyword_score = hit.keyword_score.or(keyword_score);
                    hit.similarity = hit.similarity.or(similarity);
                }
            }
        }
        let mut hits: Vec<SharedHit> = fused.into_values().collect();
        hits.sort_by(|a, b| {
            b.score.total_cmp(&a.score).then_with(|| {
                (&a.repository, &a.path, a.start_line).cmp(&(&b.repository, &b.path, b.start_line))
            })
        });
        hits.truncate(limit);
        SearchOutcome {
            hits,
            repositories: keyword.repositories,
            older_words: keyword.older_words,
            vector_status: vector.status,
            every_word: keyword.every_word,
            no_confident_match: None,
            english_query: None,
        }
    }
}

/// What [`SharedStore::search`] found.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct SearchOutcome {
    pub hits: Vec<SharedHit>,
    /// Repositories published to the store.
    pub repositories: i64,
    /// Repositories published by an older code-intel, whose chunks lack
    /// the words of this one (CJK character pairs): publishing them again
    /// (`code-intel index`) lets every request match them fully.
    pub older_words: i64,
    /// `ready`, or `unavailable: <reason>` for the vector arm.
    pub vector_status: String,
    /// Some chunk holds every word of the request: each word is known.
    pub every_word: bool,
    /// Why the answer is "no confident match" (then no hits), when its
    /// ranking judged so (code-intel's confidence judgement; never set by
    /// [`SharedStore::search`]).
    pub no_confident_match: Option<String>,
    /// The request read in English that a second vector arm searched
    /// (set by code-intel's ranking, which reads the request).
    pub english_query: Option<String>,
}

/// A scope of at most this many chunks has its texts compared with the
/// query one by one (about 6.5 us each; 5,000 take ~30 ms).
pub const EXACT_SCAN_CHUNKS: i64 = 5_000;

/// Most nearest texts a scoped search takes from the approximate index to
/// keep its scope's (pgvector's largest `hnsw.ef_search`).
const MAX_INDEX_CANDIDATES: i64 = 1_000;

/// How the vector arm finds a search's nearest texts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Nearest {
    /// The approximate index's first `candidates` (those the scope's chunks
    /// hold kept, when scoped).
    Index { candidates: i64 },
    /// Every text of the scope's chunks compared with the query.
    Exact,
}

/// How a scope of `scope_chunks` of the store's `all_chunks` finds its
/// nearest texts: exactly up to `exact_limit` chunks; beyond, from the
/// approximate index's nearest, enough of them that about twice the texts
/// needed are the scope's when its texts are spread like its share of the
/// chunks ([`MAX_INDEX_CANDIDATES`] at most: 20 % of the store); a larger
/// scope holding a smaller share is scanned exactly too (slower, as long as
/// the store runs pgvector releases without filtered index scans).
fn scoped_nearest(scope_chunks: i64, all_chunks: i64, exact_limit: i64) -> Nearest {
    if scope_chunks <= exact_limit {
        return Nearest::Exact;
    }
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
    let candidates = (2.0 * SEARCH_DEPTH as f64 * all_chunks.max(scope_chunks) as f64 / scope_chunks as f64).ceil() as i64;
    if candidates <= MAX_INDEX_CANDIDATES { Nearest::Index { candidates } } else { Nearest::Exact }
}

/// Nearest texts and best keyword chunks each arm of a search takes.
const SEARCH_DEPTH: i64 = 100;

/// The published repositories a search covers: every one
/// ([`Scope::everything`]), or those [`SharedStore::scope`] found by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scope {
    /// Their ids in the store; empty for every repository.
    ids: Vec<i32>,
    /// Their published names, in the order asked for.
    pub names: Vec<String>,
    /// Scopes of at most this many chunks are searched by meaning exactly
    /// ([`EXACT_SCAN_CHUNKS`] unless [`Scope::scanning_at_most`] says).
    exact_scan_limit: i64,
}

impl Default for Scope {
    fn default() -> Self {
        Self { ids: Vec::new(), names: Vec::new(), exact_scan_limit: EXACT_SCAN_CHUNKS }
    }
}

impl Scope {
    /// Every published repository.
    #[must_use]
    pub fn everything() -> Self {
        Self::default()
    }

    /// The same scope, compared with the query text by text only while it
    /// holds at most `chunks` chunks (larger ones keep the approximate
    /// index's nearest that they hold).
    #[must_use]
    pub fn scanning_at_most(mut self, chunks: i64) -> Self {
        self.exact_scan_limit = chunks;
        self
    }

    /// Whether it covers every published repository.
    #[must_use]
    pub fn is_everything(&self) -> bool {
        self.ids.is_empty()
    }

    /// An SQL condition limiting `column` (a repository id) to the scope,
    /// ` AND column IN (..)`; empty for every repository. The ids are the
    /// store's own integers, never text from the user.
    fn only(&self, column: &str) -> String {
        if self.ids.is_empty() {
            return String::new();
        }
        let ids: Vec<String> = self.ids.iter().map(ToString::to_string).collect();
        format!(" AND {column} IN ({})", ids.join(", "))
    }
}

/// Why [`SharedStore::scope`] found no scope.
#[derive(Debug, thiserror::Error)]
pub enum ScopeError {
    /// A name no published repository, or more than one, answers to; the
    /// message lists the published names.
    #[error("{0}")]
    Unknown(String),
    /// The store failed.
    #[error("{0}")]
    Database(String),
}

/// Published repositories listed in a message, at most this many.
const NAMES_SHOWN: usize = 20;

/// `names` as a message lists them: at most [`NAMES_SHOWN`], then how many more.
fn listed(names: &[&str]) -> String {
    let mut out = names.iter().take(NAMES_SHOWN).copied().collect::<Vec<_>>().join(", ");
    if names.len() > NAMES_SHOWN {
        out.push_str(&format!(" and {} more", names.len() - NAMES_SHOWN));
    }
    out
}

/// The published name `wanted` means among `published` (id, name): the
/// name itself, else the one name ending in `/wanted` (`app` or
/// `org/app` for `github.com/org/app`), letter case aside either way.
fn find_published<'a>(published: &'a [(i32, String)], wanted: &str, shown: &str) -> Result<&'a (i32, String), ScopeError> {
    let wanted = wanted.trim().trim_matches('/');
    let all: Vec<&str> = published.iter().map(|(_, n)| n.as_str()).collect();
    if wanted.is_empty() {
        return Err(ScopeError::Unknown(format!(
            "an empty repository name; give one published to {shown}: {}",
            listed(&all)
        )));
    }
    if let Some(exact) = published.iter().find(|(_, n)| n.eq_ignore_ascii_case(wanted)) {
        return Ok(exact);
    }
    let tail = format!("/{}", wanted.to_lowercase());
    let ending: Vec<&(i32, String)> = published.iter().filter(|(_, n)| n.to_lowercase().ends_with(&tail)).collect();
    match ending.as_slice() {
        [one] => Ok(one),
        [] if all.is_empty() => Err(ScopeError::Unknown(format!(
            "no repository named {wanted:?} is published to {shown}: none is yet; publish one with `code-intel index` and the store configured"
        ))),
        [] => Err(ScopeError::Unknown(format!(
            "no repository named {wanted:?} is published to {shown}; published: {}",
            listed(&all)
        ))),
        several => Err(ScopeError::Unknown(format!(
            "{wanted:?} names several published repositories: {}; give one's full name",
            listed(&several.iter().map(|(_, n)| n.as_str()).collect::<Vec<_>>())
        ))),
    }
}

/// A postgres error as one line without secrets: the server's message
/// (e.g. password authentication failed for user "x") or the connection
/// failure, with what to check.
fn describe(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let hint = match db.code().code() {
            "28P01" | "28000" => {
                "; check the user and password in the URL, PGPASSWORD or the pgpass file"
            }
            "3D000" => "; check the database name in the URL",
            "42501" => {
                "; the user needs the rights to create and write the shared tables (or an owner creates them first)"
            }
            _ => "",
        };
        return format!("{} ({}){hint}", db.message(), db.code().code());
    }
    let text = e.to_string();
    let source = std::error::Error::source(e)
        .map(ToString::to_string)
        .unwrap_or_default();
    if source.is_empty() || text.contains(&source) {
        text
    } else {
        format!("{text}: {source}")
    }
}

/// What this version of code-intel adds to a store of schema version 2,
/// when it is missing (a store made by an older code-intel) and the user
/// may (a user without the rights to alter the schema leaves it to
/// another). Older versions neither read nor need these, so the schema's
/// version stays:
///
/// - `repository_chunks.words_version`: the version of the words each chunk
///   was published with ([`WORDS_VERSION`]; 1 for what older versions
///   publish, which never name the column);
/// - `repository_vectors`: which models have a vector for every chunk of a
///   repository as it was last published (`published_at`: a publication
///   by an older version, which records nothing, makes the record stale).
/// - `repository_name_words`: the words a repository names things with as
///   last published (`code_intel_store::name_words::name_words_of` of its
///   chunks' names and paths), what a request's katakana loanwords are read
///   against (`published_at`: a publication by an older version makes the
///   record stale, as for `repository_vectors`).
/// - `repository_aliases`: what a request calls a published chunk (the
///   `aliases` a plugin put in its metadata: `orders list` for a Filament
///   table of orders), as last published (`published_at`, as above).
#[derive(Clone, Copy, Debug, Default)]
struct Additions {
    words_column: bool,
    vectors_table: bool,
    name_words_table: bool,
    aliases_table: bool,
}

fn ensure_additions(client: &mut Client) -> Additions {
    let present = |client: &mut Client| {
        client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'repository_chunks'::regclass \
                 AND attname = 'words_version' AND NOT attisdropped), to_regclass('repository_vectors') IS NOT NULL, \
                 to_regclass('repository_name_words') IS NOT NULL, to_regclass('repository_aliases') IS NOT NULL",
                &[],
            )
            .map_or(Additions::default(), |r| Additions {
                words_column: r.get(0),
                vectors_table: r.get(1),
                name_words_table: r.get(2),
                aliases_table: r.get(3),
            })
    };
    let found = present(client);
    if found.words_column && found.vectors_table && found.name_words_table && found.aliases_table {
        return found;
    }
    if !found.words_column {
        let _ = client.batch_execute(
            "ALTER TABLE repository_chunks ADD COLUMN IF NOT EXISTS words_version smallint NOT NULL DEFAULT 1;
             CREATE INDEX IF NOT EXISTS repository_chunks_words_version ON repository_chunks (words_version, repository_id);",
        );
    }
    if !found.vectors_table {
        let _ = client.batch_execute(
            "CREATE TABLE IF NOT EXISTS repository_vectors (
                 repository_id integer NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
                 model_id      integer NOT NULL REFERENCES models (id),
                 published_at  timestamptz NOT NULL,
                 PRIMARY KEY (repository_id, model_id)
             );",
        );
    }
    if !found.name_words_table {
        let _ = client.batch_execute(
            "CREATE TABLE IF NOT EXISTS repository_name_words (
                 repository_id integer PRIMARY KEY REFERENCES repositories (id) ON DELETE CASCADE,
                 words         text[] NOT NULL,
                 published_at  timestamptz NOT NULL
             );",
        );
    }
    if !found.aliases_table {
        let _ = client.batch_execute(
            "CREATE TABLE IF NOT EXISTS repository_aliases (
                 repository_id integer NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
                 path          text NOT NULL,
                 chunk_id      text NOT NULL,
                 alias         text NOT NULL,
                 published_at  timestamptz NOT NULL,
                 PRIMARY KEY (repository_id, path, chunk_id, alias)
             );",
        );
    }
    present(client)
}

/// Creates or upgrades the schema under an advisory lock, so two clients
/// starting on an empty database do not race.
fn migrate(client: &mut Client) -> Result<(), String> {
    let err = |e: postgres::Error| describe(&e);
    let mut tx = client.transaction().map_err(err)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(err)?;
    let has_meta: bool = tx
        .query_one("SELECT to_regclass('code_intel_meta') IS NOT NULL", &[])
        .map_err(err)?
        .get(0);
    let version: i64 = if has_meta {
        tx.query_opt(
            "SELECT value FROM code_intel_meta WHERE key = 'schema_version'",
            &[],
        )
        .map_err(err)?
        .and_then(|r| r.get::<_, String>(0).parse().ok())
        .unwrap_or(0)
    } else {
        0
    };
    if version > SCHEMA_VERSION {
        return Err(format!(
            "its schema is at version {version}, newer than this code-intel's ({SCHEMA_VERSION}); upgrade code-intel to use it"
        ));
    }
    if version == SCHEMA_VERSION {
        return tx.commit().map_err(err);
    }
    let has_vector: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')",
            &[],
        )
        .map_err(err)?
        .get(0);
    if !has_vector {
        tx.batch_execute("CREATE EXTENSION IF NOT EXISTS vector").map_err(|e| {
            format!(
                "the pgvector extension is not installed in this database and cannot be created by this user ({}); run CREATE EXTENSION vector as its owner",
                describe(&e)
            )
        })?;
    }
    // Version 1.
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS code_intel_meta (key text PRIMARY KEY, value text NOT NULL);
         CREATE TABLE IF NOT EXISTS chunk_lists (
             chunker_key  text NOT NULL,
             file_hash    text NOT NULL,
             path         text NOT NULL,
             chunks       bytea NOT NULL,
             chunk_count  integer NOT NULL,
             published_at timestamptz NOT NULL DEFAULT now(),
             PRIMARY KEY (chunker_key, file_hash, path)
         );
         CREATE TABLE IF NOT EXISTS models (
             id   serial PRIMARY KEY,
             key  text NOT NULL UNIQUE,
             dim  integer NOT NULL
         );
         CREATE TABLE IF NOT EXISTS embeddings (
             model_id     integer NOT NULL REFERENCES models (id),
             content_hash text NOT NULL,
             embedding    vector NOT NULL,
             PRIMARY KEY (model_id, content_hash)
         );
         -- Version 2: published repositories, for organisation-wide search.
         CREATE TABLE IF NOT EXISTS repositories (
             id           serial PRIMARY KEY,
             name         text NOT NULL UNIQUE,
             published_at timestamptz NOT NULL DEFAULT now()
         );
         CREATE TABLE IF NOT EXISTS repository_chunks (
             repository_id integer NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
             path          text NOT NULL,
             chunk_id      text NOT NULL,
             kind          text NOT NULL,
             name          text NOT NULL,
             start_line    integer NOT NULL,
             end_line      integer NOT NULL,
             content_hash  text NOT NULL,
             words         tsvector NOT NULL,
             PRIMARY KEY (repository_id, path, chunk_id)
         );
         CREATE INDEX IF NOT EXISTS repository_chunks_words ON repository_chunks USING gin (words);
         CREATE INDEX IF NOT EXISTS repository_chunks_hash ON repository_chunks (content_hash);",
    )
    .map_err(err)?;
    tx.execute(
        "INSERT INTO code_intel_meta (key, value) VALUES ('schema_version', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        &[&SCHEMA_VERSION.to_string()],
    )
    .map_err(err)?;
    tx.commit().map_err(err)
}

/// A [`Chunker`] that takes a file's chunk list from the shared store when
/// one was published for the same chunker, content and path, and asks the
/// wrapped chunker otherwise, keeping those results to publish. A store
/// error stops the lookups for the rest of the run (the status says why);
/// chunking goes on locally.
pub struct SharedChunker<'a> {
    inner: &'a dyn Chunker,
    store: &'a SharedStore,
    key: String,
    state: Mutex<ChunkerState>,
    /// From `prepare`: per path, the newest published list (file hash,
    /// encoded list), or `None` when nothing is published for the path.
    /// A path not here is looked up on its own.
    prefetched: Mutex<HashMap<String, Option<(String, Vec<u8>)>>>,
}

#[derive(Default)]
struct ChunkerState {
    files_from_store: u64,
    chunks_from_store: u64,
    to_publish: Vec<(String, String, ChunkedFile)>,
    error: Option<String>,
}

/// What a [`SharedChunker`] did in a run.
#[derive(Clone, Debug, Default)]
pub struct ChunkerReport {
    pub files_from_store: u64,
    pub chunks_from_store: u64,
    /// Chunk lists computed here, without plugin failures (those are never
    /// published: a timeout under load is no property of the file).
    pub to_publish: Vec<(String, String, ChunkedFile)>,
    /// The store error that stopped the lookups, if any.
    pub error: Option<String>,
}

impl<'a> SharedChunker<'a> {
    #[must_use]
    pub fn new(inner: &'a dyn Chunker, store: &'a SharedStore, chunker_key: String) -> Self {
        Self {
            inner,
            store,
            key: chunker_key,
            state: Mutex::new(ChunkerState::default()),
            prefetched: Mutex::new(HashMap::new()),
        }
    }

    /// What happened so far; takes the lists to publish.
    #[must_use]
    pub fn finish(self) -> ChunkerReport {
        let state = self.state.into_inner().unwrap_or_default();
        ChunkerReport {
            files_from_store: state.files_from_store,
            chunks_from_store: state.chunks_from_store,
            to_publish: state.to_publish,
            error: state.error,
        }
    }

    fn failed(&self) -> bool {
        self.state.lock().map_or(true, |s| s.error.is_some())
    }

    fn stop(&self, e: String) {
        tracing::warn!(
            store = self.store.shown(),
            "shared store lookups stopped: {e}"
        );
        if let Ok(mut s) = self.state.lock() {
            s.error.get_or_insert(e);
        }
    }

    /// The published list of `path` with content `hash`: from what
    /// `prepare` fetched when it answers (a path with nothing published is
    /// a miss without asking), else asked for on its own.
    fn lookup(&self, hash: &str, path: &str) -> Result<Option<ChunkedFile>, String> {
        let known = self
            .prefetched
            .lock()
            .ok()
            .and_then(|mut p| p.remove(path));
        match known {
            Some(None) => Ok(None),
            // A list that does not parse (written by a buggy or foreign
            // client) is a miss: the file is chunked locally.
            Some(Some((h, bytes))) if h == hash => {
                Ok(serde_json::from_slice::<ChunkedFile>(&bytes).ok())
            }
            // Another version is the newest: maybe an older one matches.
            Some(Some(_)) | None => self.store.chunk_list(&self.key, hash, path),
        }
    }
}

impl Chunker for SharedChunker<'_> {
    fn identity(&self) -> Option<String> {
        self.inner.identity()
    }

    fn chunk_file(&self, path: &str, content: &str) -> ChunkedFile {
        let hash = hex(&Sha256::digest(content.as_bytes()));
        if !self.failed() {
            match self.lookup(&hash, path) {
                Ok(Some(listed)) => {
                    if let Ok(mut s) = self.state.lock() {
                        s.files_from_store += 1;
                        s.chunks_from_store += listed.chunks.len() as u64;
                    }
                    return listed;
                }
                Ok(None) => {}
                Err(e) => self.stop(e),
            }
        }
        let chunked = self.inner.chunk_file(path, content);
        if chunked.failures.is_empty()
            && let Ok(mut s) = self.state.lock()
        {
            s.to_publish.push((hash, path.to_string(), chunked.clone()));
        }
        chunked
    }

    fn begin_run(&self) {
        self.inner.begin_run();
    }

    fn prepare(&self, paths: &[&str]) {
        self.inner.prepare(paths);
        if self.failed() {
            return;
        }
        match self.store.newest_chunk_lists(&self.key, paths) {
            Ok(found) => {
                if let Ok(mut p) = self.prefetched.lock() {
                    p.clear();
                    for path in paths {
                        p.insert((*path).to_string(), None);
                    }
                    for (path, list) in found {
                        p.insert(path, Some(list));
                    }
                }
            }
            Err(e) => self.stop(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_urls_never_hold_the_password() {
        let config =
            postgres::Config::from_str("postgres://ci:s3cret@db.internal:6543/code").unwrap();
        assert_eq!(shown(&config), "postgres://ci@db.internal:6543/code");
        let config = postgres::Config::from_str("host=/run/pg user=me password=s3cret").unwrap();
        assert!(!shown(&config).contains("s3cret"));
        let err = connection_config("postgres://ci:s3cret@db:notaport/x").unwrap_err();
        assert!(!err.to_string().contains("s3cret"), "{err}");
    }

    #[test]
    fn repositories_are_found_by_name_or_its_last_parts() {
        let published: Vec<(i32, String)> = [
            (1, "github.com/acme/shop"),
            (2, "github.com/acme/shop-admin"),
            (3, "gitlab.example.com/ops/shop"),
            (4, "github.com/acme/billing"),
        ]
        .iter()
        .map(|(id, n)| (*id, (*n).to_string()))
        .collect();
        let found = |w: &str| find_published(&published, w, "postgres://db/x").map(|(id, _)| *id);
        assert_eq!(found("github.com/acme/shop").unwrap(), 1);
        assert_eq!(found("GitHub.com/Acme/Shop/").unwrap(), 1, "letter case and a trailing slash aside");
        assert_eq!(found("billing").unwrap(), 4);
        assert_eq!(found("acme/shop").unwrap(), 1);
        assert_eq!(found("ops/shop").unwrap(), 3);
        assert_eq!(found("shop-admin").unwrap(), 2);
        // A part of a name is no name: `shop` is not `shop-admin`'s.
        let several = found("shop").unwrap_err().to_string();
        assert!(several.contains("names several") && several.contains("github.com/acme/shop,") && !several.contains("shop-admin"), "{several}");
        let unknown = found("payments").unwrap_err().to_string();
        assert!(unknown.contains("\"payments\"") && unknown.contains("published: github.com/acme/shop") && unknown.contains("postgres://db/x"), "{unknown}");
        assert!(found(" ").unwrap_err().to_string().contains("empty"));
        let none = find_published(&[], "shop", "postgres://db/x").unwrap_err().to_string();
        assert!(none.contains("none is yet"), "{none}");
    }

    #[test]
    fn small_scopes_are_scanned_and_large_shares_filtered_from_the_index() {
        assert_eq!(scoped_nearest(1_500, 113_000, EXACT_SCAN_CHUNKS), Nearest::Exact);
        // 36 % of the store: about 550 of the index's nearest hold ~200 of its texts.
        assert_eq!(scoped_nearest(40_866, 113_436, EXACT_SCAN_CHUNKS), Nearest::Index { candidates: 556 });
        // Under 20 % of the store it would take more than pgvector's 1,000.
        assert_eq!(scoped_nearest(15_000, 113_436, EXACT_SCAN_CHUNKS), Nearest::Exact);
        assert_eq!(scoped_nearest(10, 20, 0), Nearest::Index { candidates: 400 });
        assert_eq!(scoped_nearest(10, 0, 0), Nearest::Index { candidates: 200 }, "statistics not gathered yet");
    }

    #[test]
    fn scopes_limit_queries_to_their_repositories() {
        assert_eq!(Scope::everything().only("r.id"), "");
        let scope = Scope { ids: vec![3, 7], names: vec!["a".into(), "b".into()], ..Scope::everything() };
        assert_eq!(scope.only("c.repository_id"), " AND c.repository_id IN (3, 7)");
        assert!(!scope.is_everything());
        let many: Vec<String> = (0..25).map(|i| format!("r{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(listed(&many).ends_with("r19 and 5 more"), "{}", listed(&many));
    }

    fn weight(clause: &str, count: i64, common: bool) -> ClauseWeight {
        ClauseWeight { clause: clause.into(), count, weight: 1.0, common }
    }

    #[test]
    fn any_word_searches_rank_by_the_rarer_words_the_store_holds() {
        let weights = [
            weight("'user'", 900, true),
            weight("'error'", 800, true),
            weight("'file'", 700, true),
            weight("'webhook'", 3, false),
            weight("'zzyzx'", 0, false),
            weight("'retry'", 40, false),
        ];
        let rare: Vec<String> = rare_clauses(&weights).into_iter().map(|w| w.clause).collect();
        assert_eq!(rare, ["'webhook'", "'retry'", "'file'"], "the rare ones, and at least three held");
        let few = [weight("'user'", 900, true), weight("'zzyzx'", 0, false)];
        assert_eq!(rare_clauses(&few).len(), 1, "a word no chunk holds matches nothing");
    }

    #[test]
    fn any_word_searches_find_by_the_rarest_words_within_a_budget_of_rows() {
        let rare = [weight("'webhook'", 40, false), weight("'retry'", 1_900, false), weight("'backoff'", 8_500, false)];
        assert_eq!(finding_clauses(&rare), 2, "the third would read more than FINDING_ROWS rows");
        assert_eq!(finding_clauses(&rare[..2]), 2, "a small store finds by every rarer word");
        let common = [weight("'file'", 17_000, true), weight("'user'", 19_000, true)];
        assert_eq!(finding_clauses(&common), 1, "at least the rarest one finds");
        assert_eq!(finding_clauses(&[]), 0);
    }

    #[test]
    fn pgpass_lines_split_at_unescaped_colons() {
        assert_eq!(
            split_pgpass(r"db\:1:5432:*:ci:pa\:ss:word"),
            ["db:1", "5432", "*", "ci", "pa:ss:word"]
        );
    }
}
