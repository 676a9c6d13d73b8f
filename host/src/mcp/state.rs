//! What the server knows about its repository: root, configuration, the
//! index (a pool of read connections plus the background sync and its
//! status), and the registered tool hooks.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use code_intel_core::config::{self, Config};
use code_intel_core::paths::RepoRoot;
use code_intel_plugins::{HostOptions, PluginHost};
use code_intel_embed::{EncoderOptions, ModelHandle, ResolveOptions};
use code_intel_search::semantic::{VectorSearch, vectors_dir};
use code_intel_store::Store;
use schemars::JsonSchema;
use serde::Serialize;
use tokio::sync::watch;

use super::ToolHook;

/// How long shutdown waits for a running sync to notice cancellation before
/// the process exits anyway (its open transaction is rolled back by SQLite).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// How long a tool that needs the index waits for the first sync before it
/// answers `initializing` with a retry hint: long enough for a small
/// repository to finish, short enough that the agent is never stuck.
pub const INDEX_WAIT: Duration = Duration::from_secs(5);

/// Read connections kept open between calls: one per core on the machines
/// this targets, more are opened on demand and closed after use.
const POOLED_READERS: usize = 4;

/// Where the index is in its life.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum IndexPhase {
    /// The server started; the first sync has not begun yet.
    Starting,
    /// A sync is running.
    Syncing {
        /// Files examined so far.
        files_done: u64,
        /// Files to examine (0 while still walking).
        files_total: u64,
    },
    /// The index is up to date as of the last sync.
    Ready,
    /// The last sync failed; the index holds what earlier syncs left.
    Failed {
        message: String,
    },
}

/// Counts of one finished sync.
#[derive(Clone, Debug, Default, PartialEq, Serialize, JsonSchema)]
pub struct SyncSummary {
    pub added: u64,
    pub modified: u64,
    pub deleted: u64,
    pub unchanged: u64,
    pub chunks_written: u64,
    pub fallback_files: u64,
    pub plugin_failures: u64,
    pub skipped: u64,
    pub elapsed_ms: u64,
    /// Whether the sync was stopped before it finished (what it had
    /// committed is kept; the next sync resumes).
    pub cancelled: bool,
}

/// The shared state of one server.
pub struct ServerState {
    root: RepoRoot,
    config: Config,
    config_warnings: Vec<String>,
    db_path: PathBuf,
    readers: Mutex<Vec<Store>>,
    hooks: RwLock<Vec<Arc<dyn ToolHook>>>,
    phase: watch::Sender<IndexPhase>,
    last_sync: Mutex<Option<SyncSummary>>,
    sync_lock: tokio::sync::Mutex<()>,
    cancel: Arc<AtomicBool>,
    plugins: OnceLock<Arc<PluginHost>>,
    vectors: OnceLock<Arc<VectorSearch>>,
    embed_lock: tokio::sync::Mutex<()>,
    /// Held by the English model's embedding pass, which runs after the
    /// main model's, in the background.
    english_embed_lock: tokio::sync::Mutex<()>,
    /// (done, total) of the embedding pass under way, for requests that wait for it.
    embed_progress: watch::Sender<Option<(usize, usize)>>,
    /// The shared store's connection, opened by the first shared search.
    shared: super::shared::SharedConnection,
}

/// Why the index cannot answer right now.
#[derive(Debug, thiserror::Error)]
pub enum IndexUnavailable {
    #[error(
        "initializing: the index is being built ({0}); retry in a few seconds, or call index_status to follow progress"
    )]
    Initializing(String),
    #[error("the index could not be opened: {0}")]
    Broken(String),
}

impl ServerState {
    /// Opens the state for a repository: canonical root and configuration.
    /// Cheap: no database work happens here, so `initialize` is answered at once.
    ///
    /// # Errors
    /// When the root is not a directory or the configuration is invalid.
    pub fn open(repo: &std::path::Path) -> anyhow::Result<Self> {
        let root = RepoRoot::new(repo)?;
        let (config, warnings) = Config::load(root.path())?;
        let db_path = config::database_path(root.path());
        let initial = if db_path.is_file() { IndexPhase::Ready } else { IndexPhase::Starting };
        Ok(Self {
            root,
            config,
            config_warnings: warnings.iter().map(ToString::to_string).collect(),
            db_path,
            readers: Mutex::new(Vec::new()),
            hooks: RwLock::new(Vec::new()),
            phase: watch::channel(initial).0,
            last_sync: Mutex::new(None),
            sync_lock: tokio::sync::Mutex::new(()),
            cancel: Arc::new(AtomicBool::new(false)),
            plugins: OnceLock::new(),
            vectors: OnceLock::new(),
            embed_lock: tokio::sync::Mutex::new(()),
            english_embed_lock: tokio::sync::Mutex::new(()),
            embed_progress: watch::channel(None).0,
            shared: super::shared::SharedConnection::default(),
        })
    }

    #[must_use]
    pub fn root(&self) -> &RepoRoot {
        &self.root
    }

    #[must_use]
    pub fn config(&self) -> &Config {
        &self.config
    }

    #[must_use]
    pub fn config_warnings(&self) -> &[String] {
        &self.config_warnings
    }

    #[must_use]
    pub fn database_path(&self) -> &std::path::Path {
        &self.db_path
    }

    /// Registers a hook around every tool call.
    pub fn add_hook(&self, hook: Arc<dyn ToolHook>) {
        self.hooks.write().expect("hooks lock").push(hook);
    }

    /// The registered hooks, in registration order.
    #[must_use]
    pub fn hooks(&self) -> Vec<Arc<dyn ToolHook>> {
        self.hooks.read().expect("hooks lock").clone()
    }

    /// The current index phase.
    #[must_use]
    pub fn phase(&self) -> IndexPhase {
        self.phase.borrow().clone()
    }

    /// The summary of the last finished sync in this process.
    #[must_use]
    pub fn last_sync(&self) -> Option<SyncSummary> {
        self.last_sync.lock().expect("last sync lock").clone()
    }

    /// Whether an index database exists at all.
    #[must_use]
    pub fn has_index(&self) -> bool {
        self.db_path.is_file()
    }

    /// Waits (at most [`INDEX_WAIT`]) until an index exists to answer from.
    /// An existing index is used at once, even while a sync refreshes it.
    ///
    /// # Errors
    /// [`IndexUnavailable::Initializing`] when the first sync is still running.
    pub async fn wait_for_index(&self) -> Result<(), IndexUnavailable> {
        let mut rx = self.phase.subscribe();
        let deadline = tokio::time::Instant::now() + INDEX_WAIT;
        loop {
            let phase = rx.borrow_and_update().clone();
            match phase {
                IndexPhase::Ready => return Ok(()),
                IndexPhase::Failed { message } if !self.has_index() => return Err(IndexUnavailable::Broken(message)),
                IndexPhase::Failed { .. } => return Ok(()),
                IndexPhase::Starting | IndexPhase::Syncing { .. } if self.has_index() && self.first_sync_done() => {
                    return Ok(());
                }
                IndexPhase::Starting => {}
                IndexPhase::Syncing { .. } => {}
            }
            let describe = match &*rx.borrow() {
                IndexPhase::Syncing { files_done, files_total } => format!("{files_done} of {files_total} files"),
                _ => "starting".to_string(),
            };
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => return Err(IndexUnavailable::Initializing(describe)),
            }
        }
    }

    /// Whether a sync has completed before (in this process or an earlier
    /// one): an index left by a previous run is complete enough to answer from.
    fn first_sync_done(&self) -> bool {
        self.last_sync().is_some() || self.with_store(|s| s.meta(code_intel_store::meta_keys::LAST_SYNC_MS).ok().flatten().is_some()).unwrap_or(false)
    }

    /// Runs `f` with a read connection from the pool.
    ///
    /// # Errors
    /// When the database does not exist or cannot be opened.
    pub fn with_store<T>(&self, f: impl FnOnce(&Store) -> T) -> Result<T, IndexUnavailable> {
        let pooled = self.readers.lock().expect("reader pool lock").pop();
        let store = match pooled {
            Some(store) => store,
            None => Store::open_existing(&self.db_path).map_err(|e| IndexUnavailable::Broken(e.to_string()))?,
        };
        let value = f(&store);
        let mut pool = self.readers.lock().expect("reader pool lock");
        if pool.len() < POOLED_READERS {
            pool.push(store);
        }
        Ok(value)
    }

    /// The plugin host, loaded on first use (from the compiled-component
    /// cache when warm): never on the handshake path.
    pub fn plugin_host(&self) -> Arc<PluginHost> {
        self.plugins
            .get_or_init(|| {
                let host = PluginHost::discover(Some(self.root.path()), HostOptions::default());
                for rejection in host.rejections() {
                    tracing::warn!(plugin = %rejection.path.display(), reason = %rejection.reason, "plugin not loaded");
                }
                if host.plugins().next().is_none() {
                    tracing::warn!("no chunking plugins found; files are indexed as line windows (see `code-intel plugin list`)");
                }
                Arc::new(host)
            })
            .clone()
    }

    /// The vector side of search. The first call starts loading the
    /// embedding model on a background thread (never on the handshake path);
    /// searches wait for it briefly and otherwise answer without vectors.
    pub fn vectors(&self) -> Arc<VectorSearch> {
        self.vectors
            .get_or_init(|| {
                let resolve = ResolveOptions::new(Some(&self.config.embedding_model), Some(self.root.path()))
                    .with_endpoint(self.config.embedding_endpoint.as_deref());
                let model = ModelHandle::spawn(resolve, EncoderOptions::default());
                let dir = vectors_dir(&config::state_dir(self.root.path()));
                let vectors = VectorSearch::new(model, Some(dir.clone()));
                // The English model, loaded alongside: its vectors answer
                // requests in English once it has embedded every chunk.
                Arc::new(match code_intel_search::semantic::english_model_options(&self.config, self.root.path()) {
                    Some(options) => vectors.with_english(VectorSearch::new(
                        ModelHandle::spawn(options, EncoderOptions::default()),
                        Some(code_intel_search::semantic::english_dir(&dir)),
                    )),
                    None => vectors,
                })
            })
            .clone()
    }

    /// The connection to the shared store (config `shared_store`).
    pub(crate) fn shared_connection(&self) -> &super::shared::SharedConnection {
        &self.shared
    }

    pub(crate) fn embed_lock(&self) -> &tokio::sync::Mutex<()> {
        &self.embed_lock
    }

    pub(crate) fn english_embed_lock(&self) -> &tokio::sync::Mutex<()> {
        &self.english_embed_lock
    }

    /// Progress of the embedding pass under way (`None` between passes).
    pub(crate) fn embed_progress(&self) -> &watch::Sender<Option<(usize, usize)>> {
        &self.embed_progress
    }

    /// Whether stop was requested (the client left).
    #[must_use]
    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }

    pub(crate) fn set_phase(&self, phase: IndexPhase) {
        self.phase.send_replace(phase);
    }

    pub(crate) fn record_sync(&self, summary: SyncSummary) {
        *self.last_sync.lock().expect("last sync lock") = Some(summary);
    }

    pub(crate) fn cancel_flag(&self) -> Arc<AtomicBool> {
        self.cancel.clone()
    }

    pub(crate) fn sync_lock(&self) -> &tokio::sync::Mutex<()> {
        &self.sync_lock
    }

    /// Starts the start-up sync in the background (when `sync_on_start`).
    pub fn start_background_sync(self: &Arc<Self>) {
        if !self.config.sync_on_start && self.has_index() {
            self.set_phase(IndexPhase::Ready);
            return;
        }
        let state = self.clone();
        tokio::spawn(async move {
            let _ = state.vectors();
            if let Err(e) = super::code_tools::run_sync(&state, false, |_| {}).await {
                tracing::warn!(error = %e, "background sync failed");
            }
        });
    }

    /// Asks running work to stop and waits up to [`SHUTDOWN_GRACE`] for it.
    pub async fn shutdown(&self) {
        self.cancel.store(true, Ordering::SeqCst);
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, async {
            let _sync = self.sync_lock.lock().await;
            let _embed = self.embed_lock.lock().await;
            let _english = self.english_embed_lock.lock().await;
        })
        .await;
    }
}
