//! `semantic_search` with `shared`: every repository published to the shared
//! store (PostgreSQL + pgvector), through one connection the server keeps.
//!
//! The store is never required: not configured, unreachable, refusing the
//! credentials or at a newer schema, the caller answers from the local
//! index and says why ([`Miss`]). A failed connection is remembered for
//! [`RETRY_AFTER`], so an unreachable host does not cost every call the
//! connect timeout; a connection that breaks is opened again once.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use code_intel_shared::{Scope, ScopeError, SearchOutcome, SharedStore, Unavailable, configured_url};

use super::state::ServerState;

/// How long a failed connection attempt is remembered before a call tries again.
pub const RETRY_AFTER: Duration = Duration::from_secs(30);

/// The server's connection to the shared store.
#[derive(Default)]
pub struct SharedConnection {
    state: Mutex<Conn>,
}

#[derive(Default)]
enum Conn {
    #[default]
    Untried,
    Open(Arc<SharedStore>),
    Failed(Instant, Unavailable),
}

/// Why the shared store did not answer.
#[derive(Clone, Debug)]
pub enum Miss {
    /// No store is configured.
    Off,
    /// The store could not be used: as shown (no password), and why.
    Unavailable { store: String, reason: String },
    /// A repository asked for is not published (or the name is not one
    /// repository's): an argument error, not a reason to answer locally.
    Unknown(String),
}

impl Miss {
    /// The `status` of the answer's `shared` object.
    #[must_use]
    pub fn status(&self) -> String {
        match self {
            Self::Off => "off".to_string(),
            Self::Unavailable { reason, .. } => format!("unavailable: {reason}"),
            Self::Unknown(why) => format!("unknown repository: {why}"),
        }
    }

    /// The store as shown, when one is configured.
    #[must_use]
    pub fn store(&self) -> Option<String> {
        match self {
            Self::Off | Self::Unknown(_) => None,
            Self::Unavailable { store, .. } => Some(store.clone()),
        }
    }

    /// The note of an answer from the local index instead.
    #[must_use]
    pub fn note(&self) -> String {
        match self {
            Self::Off => format!(
                "shared=true needs a shared store: set {} or `shared_store` in .code-intel/config.json to its PostgreSQL URL; answered from this repository's index only",
                code_intel_shared::STORE_ENV
            ),
            Self::Unavailable { store, reason } => {
                format!("shared store {store} unavailable: {reason}; answered from this repository's index only")
            }
            Self::Unknown(why) => why.clone(),
        }
    }
}

impl From<Unavailable> for Miss {
    fn from(u: Unavailable) -> Self {
        Self::Unavailable { store: u.shown, reason: u.reason }
    }
}

/// What the store answered.
#[derive(Debug)]
pub struct Answer {
    /// The store as shown (no password).
    pub store: String,
    /// The repositories searched, when not every published one.
    pub searched: Option<Vec<String>>,
    pub outcome: SearchOutcome,
    /// The store's part (both arms and the fusion), after the query was embedded.
    pub query_ms: f64,
}

impl SharedConnection {
    /// The open connection, opening it when there is none and no failure is
    /// recent. `fresh` drops an open one first (it broke).
    fn store(&self, url: &str, fresh: bool) -> Result<Arc<SharedStore>, Unavailable> {
        let mut conn = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match &*conn {
            Conn::Open(store) if !fresh => return Ok(Arc::clone(store)),
            Conn::Failed(at, why) if !fresh && at.elapsed() < RETRY_AFTER => return Err(why.clone()),
            _ => {}
        }
        // Connecting under the lock: calls arriving meanwhile wait for this
        // attempt instead of each opening their own.
        match SharedStore::connect(url) {
            Ok(store) => {
                let store = Arc::new(store);
                *conn = Conn::Open(Arc::clone(&store));
                Ok(store)
            }
            Err(why) => {
                tracing::warn!("{why}; semantic_search with shared=true answers from this repository's index");
                *conn = Conn::Failed(Instant::now(), why.clone());
                Err(why)
            }
        }
    }

    fn fail(&self, why: Unavailable) {
        *self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Conn::Failed(Instant::now(), why);
    }
}

/// Searches the repositories published to the configured store for
/// `query` (every one, or those `repositories` names, see
/// [`SharedStore::scope`]): keywords and, when the model is ready, the
/// query's vector. At most `limit` hits. Blocking (the `postgres` client
/// runs its own runtime): call it off the async executor.
///
/// # Errors
/// [`Miss`] when no store is configured or it cannot be used, or a name no
/// published repository answers to.
pub fn search(state: &ServerState, query: &str, repositories: &[String], limit: usize) -> Result<Answer, Miss> {
    let url = configured_url(state.config().shared_store.as_deref()).ok_or(Miss::Off)?;
    let connection = state.shared_connection();
    let mut store = connection.store(&url, false)?;
    let scope = match store.scope(repositories) {
        Ok(scope) => scope,
        Err(ScopeError::Unknown(why)) => return Err(Miss::Unknown(why)),
        Err(ScopeError::Database(_)) => {
            // The connection may have broken: one new one, one more try.
            store = connection.store(&url, true)?;
            match store.scope(repositories) {
                Ok(scope) => scope,
                Err(ScopeError::Unknown(why)) => return Err(Miss::Unknown(why)),
                Err(ScopeError::Database(reason)) => {
                    let why = Unavailable { shown: store.shown().to_string(), reason };
                    connection.fail(why.clone());
                    return Err(why.into());
                }
            }
        }
    };

    // The keyword arm needs no query vector: it runs on the store's second
    // connection while the query is embedded here.
    let first = Arc::clone(&store);
    std::thread::scope(|s| {
        let keyword = crate::cli::shared::keyword_arm_beside(s, &first, query, &scope);
        answer(state, query, limit, &url, connection, store, &scope, keyword)
    })
}

/// The rest of [`search`], while `keyword` runs on `store`'s second
/// connection.
#[allow(clippy::too_many_arguments)]
fn answer(
    state: &ServerState,
    query: &str,
    limit: usize,
    url: &str,
    connection: &SharedConnection,
    mut store: Arc<SharedStore>,
    scope: &Scope,
    keyword: std::thread::ScopedJoinHandle<'_, Result<code_intel_shared::KeywordArm, String>>,
) -> Result<Answer, Miss> {
    let vectors = state.vectors();
    let (main, model) = vectors.encoder(code_intel_search::semantic::MODEL_WAIT);
    // A request in English goes to the English model's vectors when every
    // published repository has them, as locally (`cli::shared::use_english`).
    let english = match vectors.english() {
        Some(side) if code_intel_search::semantic::is_english(query) => side.encoder(code_intel_search::semantic::MODEL_WAIT).0,
        _ => None,
    };
    let english = match english {
        Some(e) => {
            let main_key = main.as_ref().map(|m| m.info().key.to_string());
            match crate::cli::shared::use_english(&store, query, &e.info().key.to_string(), main_key.as_deref(), scope) {
                Ok(true) => Some(e),
                Ok(false) => None,
                // The connection may have broken: the search below tries again.
                Err(_) => None,
            }
        }
        None => None,
    };
    let encoder = english.or_else(|| main.clone());
    let mut vector_note = None;
    let embedded = match &encoder {
        Some(encoder) => match encoder.embed_query(query) {
            Ok(v) => Some((encoder.info().key.to_string(), v)),
            Err(e) => {
                vector_note = Some(format!("unavailable: the query could not be embedded: {e}"));
                None
            }
        },
        None => {
            vector_note = Some(format!("unavailable: {}", model.status()));
            None
        }
    };
    let vector = embedded.as_ref().map(|(k, v)| (k.as_str(), v.as_slice()));
    // The confidence judgement's baselines, from the anchors of the model
    // that embedded the query (kept in memory by its vector search).
    let english_side = match (vectors.english(), &encoder) {
        (Some(side), Some(e)) if side.encoder(std::time::Duration::ZERO).0.is_some_and(|s| Arc::ptr_eq(&s, e)) => Some(side),
        _ => None,
    };
    let baselines = match (&encoder, &embedded) {
        (Some(e), Some((_, v))) => english_side.unwrap_or(&vectors).baselines(e, v).ok(),
        _ => None,
    };
    // The English model's topic vote, seconded by the main model's when it
    // leans to everyday talk, as locally.
    let everyday = crate::cli::shared_confidence::reads_as_everyday(baselines, || {
        let main = main.as_ref().filter(|_| english_side.is_some())?;
        let v = main.embed_query(query).ok()?;
        vectors.baselines(main, &v).ok()
    });
    let dictionary = [encoder.as_ref(), main.as_ref()].into_iter().flatten().find(|e| e.is_whole_word("the").is_some());
    let judgement = crate::cli::shared_confidence::Judgement { dictionary: dictionary.map(|e| &**e), baselines, everyday };

    // The store's part after the embedding (see `cli::shared::search`).
    let started = Instant::now();
    let weights = &state.config().search_weights;
    // A Japanese request read in English is embedded by the English model
    // when every repository has its vectors, else by the main one.
    let english_model = vectors.english().and_then(|side| side.encoder(std::time::Duration::ZERO).0);
    let readers = crate::cli::shared::Readers { english: english_model.as_deref(), main: main.as_deref() };
    let keyword = crate::cli::shared::joined(keyword);
    let mut result = keyword.and_then(|keyword| {
        let vector = store.vector_arm(vector, scope)?;
        crate::cli::shared::ranked(&store, query, keyword, vector, readers, scope, weights, limit, &judgement)
    });
    if result.is_err() {
        // The connection may have broken (the server restarted, a proxy
        // dropped it): one new connection, one more try.
        store = connection.store(url, true)?;
        result = crate::cli::shared::ranked_search(&store, query, vector, readers, scope, weights, limit, &judgement);
    }
    let mut outcome = match result {
        Ok(outcome) => outcome,
        Err(reason) => {
            let why = Unavailable { shown: store.shown().to_string(), reason };
            connection.fail(why.clone());
            return Err(why.into());
        }
    };
    let query_ms = started.elapsed().as_secs_f64() * 1000.0;
    if let Some(note) = vector_note {
        outcome.vector_status = note;
    }
    Ok(Answer { store: store.shown().to_string(), searched: (!scope.is_everything()).then(|| scope.names.clone()), outcome, query_ms })
}
