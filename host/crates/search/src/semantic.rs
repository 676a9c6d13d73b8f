//! Semantic (vector) search over the two collections: **forest** (code
//! chunks) and **map** (agreements learned from successful sessions).
//!
//! [`VectorSearch`] is the per-repository context the CLI and the MCP server
//! keep for the life of the process: the model handle, and the vector
//! indexes derived from the store, kept in step with it by the store's
//! vector generation (see `code_intel_store::embeddings`).
//!
//! With `collection = auto` the map is searched first; a map hit scoring at
//! least [`MAP_SHORT_CIRCUIT_SCORE`] short-circuits the forest (the map hit
//! and its symbols are returned with `short_circuit: true`); otherwise the
//! forest is searched and map hits come along as hints.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use code_intel_embed::{Encoder, ModelHandle, ModelState};
use code_intel_store::embeddings::{EmbeddingCoverage, EmbeddingModel, StoredMapEntry, VectorPoint};
use code_intel_store::{Store, StoreError};
use code_intel_vector::{DENSITY_STEP_PAIRS, Densities, Hit, VectorIndex, hash64};
use serde::Serialize;

/// A map hit at or above this score answers the query on its own (seed
/// v3.9 "short-circuit": score >= 0.7 skips the forest). Scores are
/// calibrated similarities (see [`calibrate`]), so the threshold means the
/// same with every model.
pub const MAP_SHORT_CIRCUIT_SCORE: f32 = 0.7;

/// Map hits at or above this score are passed along as hints when the
/// forest is searched: below it an agreement is about something else.
pub const MAP_HINT_SCORE: f32 = 0.5;

/// Most map hints returned with forest results.
pub const MAP_HINTS: usize = 3;

/// A vector hit below this score is not a confident match. Observed with
/// all-MiniLM-L6-v2 on `fixtures/semantic-app` (`host/tests/embed_real_model.rs`):
/// the right chunk for a real question scores 0.28-0.65, the best chunk for
/// gibberish 0.05-0.06 (raw cosine: 0.31-0.66 and up to ~0.2).
pub const VECTOR_CONFIDENCE_FLOOR: f32 = 0.2;

/// Code about nothing a repository is likely to be about, in several
/// languages: the yardstick [`calibrate`] measures a query's similarity to
/// *unrelated* code against. Varied on purpose, so that a query close to one
/// or two of them still leaves the median unrelated.
pub const PASSAGE_ANCHORS: &[&str] = &[
    "def hex_to_rgb(value):\n    value = value.lstrip('#')\n    return tuple(int(value[i:i + 2], 16) for i in (0, 2, 4))",
    "function slugify(text) {\n  return text.toLowerCase().replace(/[^a-z0-9]+/g, '-');\n}",
    "public function thumbnail(Image $image, int $width): Image\n{\n    return $image->scale(width: $width);\n}",
    "func retryWithBackoff(attempts int, fn func() error) (err error) {\n\tfor i := 0; i < attempts; i++ {\n\t\tif err = fn(); err == nil {\n\t\t\treturn nil\n\t\t}\n\t\ttime.Sleep(time.Duration(1<<i) * time.Second)\n\t}\n\treturn err\n}",
    "class ZipArchiveReader:\n    def entries(self):\n        return self._zip.namelist()",
    "SELECT country, COUNT(*) AS visitors FROM page_views GROUP BY country ORDER BY visitors DESC;",
    ".navbar {\n  display: flex;\n  justify-content: space-between;\n  padding: 0 1rem;\n}",
    "export const formatDate = (date, locale = navigator.language) =>\n  new Intl.DateTimeFormat(locale).format(date);",
    "def parse_csv_row(line, sep=','):\n    return [cell.strip() for cell in line.split(sep)]",
    "public static int gcd(int a, int b) {\n    return b == 0 ? a : gcd(b, a % b);\n}",
    "queue.on('failed', (job, err) => logger.warn(`job ${job.id} failed`, err));",
];

/// Requests about nothing a repository is likely to be about: the
/// yardstick for map (agreement) hits, which are requests too.
pub const REQUEST_ANCHORS: &[&str] = &[
    "change the colour palette of the charts",
    "export the table as a CSV file",
    "format dates in the user's locale",
    "make thumbnails of uploaded images",
    "retry failed background jobs with backoff",
    "render the report as a PDF",
    "cache the responses of the HTTP client",
    "list the files inside a zip archive",
    "switch the language of the site",
    "add a dark mode to the settings page",
    "compute the greatest common divisor",
];

pub use code_intel_core::similarity::calibrate;
use code_intel_core::similarity::median;

/// The anchors embedded with one model: computed once per process, and
/// kept beside the vector snapshots (see [`AnchorVectors::load`]).
pub struct AnchorVectors {
    model: String,
    passages: Vec<Vec<f32>>,
    requests: Vec<Vec<f32>>,
    /// [`crate::topic::EVERYDAY_REQUESTS`] as queries.
    everyday: Vec<Vec<f32>>,
    /// [`crate::topic::SOFTWARE_REQUESTS`] as queries.
    software: Vec<Vec<f32>>,
}

impl AnchorVectors {
    /// The anchors embedded with `encoder`'s model: read from `dir` (a file
    /// named after the model and the anchor texts, so a new model or new
    /// anchors never read stale vectors), else embedded now (about 90
    /// short texts) and written there for the next process.
    ///
    /// # Errors
    /// Inference failure while embedding the anchors.
    pub fn load(encoder: &Encoder, dir: Option<&Path>) -> Result<Self, SearchError> {
        let model = encoder.info().key.to_string();
        let texts = anchor_texts();
        let dim = encoder.info().dim;
        // Not hex at its start, so `hash64` hashes all of it (it reads a
        // leading hex digest as the hash).
        let mut key = format!("anchors\n{model}");
        for (text, role) in &texts {
            key.push_str(&format!("\n{role:?}:{text}"));
        }
        let file = dir.map(|d| d.join(format!("anchors-{:016x}.f32", hash64(&key))));
        let cached = file.as_ref().and_then(|f| read_vectors(f, texts.len(), dim));
        let vectors = match cached {
            Some(vectors) => vectors,
            None => {
                let mut vectors = Vec::with_capacity(texts.len());
                for role in [code_intel_embed::Role::Passage, code_intel_embed::Role::Query] {
                    let group: Vec<&str> = texts.iter().filter(|(_, r)| *r == role).map(|(t, _)| *t).collect();
                    vectors.extend(encoder.embed(&group, role, &|_, _| {}).map_err(|e| SearchError::Embed(e.to_string()))?);
                }
                if let Some(file) = &file {
                    write_vectors(file, &vectors);
                }
                vectors
            }
        };
        let mut rest = vectors.into_iter();
        let mut take = |n: usize| rest.by_ref().take(n).collect::<Vec<_>>();
        Ok(Self {
            model,
            passages: take(PASSAGE_ANCHORS.len()),
            requests: take(REQUEST_ANCHORS.len()),
            everyday: take(crate::topic::EVERYDAY_REQUESTS.len()),
            software: take(crate::topic::SOFTWARE_REQUESTS.len()),
        })
    }

    /// The baselines of a query embedded by the anchors' model: its median
    /// similarity to unrelated code and to unrelated requests, and its
    /// topic vote ([`crate::topic`]).
    #[must_use]
    pub fn baselines(&self, query: &[f32]) -> Baselines {
        let of = |vectors: &[Vec<f32>]| median(&vectors.iter().map(|v| code_intel_vector::dot(query, v)).collect::<Vec<_>>());
        let votes = crate::topic::everyday_votes(query, &self.everyday, &self.software);
        Baselines {
            forest: of(&self.passages),
            map: of(&self.requests),
            everyday: votes >= crate::topic::EVERYDAY_VOTES,
            everyday_votes: votes,
        }
    }
}

/// Every anchor text, in the order [`AnchorVectors`] keeps them, with its
/// role.
fn anchor_texts() -> Vec<(&'static str, code_intel_embed::Role)> {
    use code_intel_embed::Role;
    let passages = PASSAGE_ANCHORS.iter().map(|t| (*t, Role::Passage));
    let queries = [REQUEST_ANCHORS, crate::topic::EVERYDAY_REQUESTS, crate::topic::SOFTWARE_REQUESTS];
    passages.chain(queries.into_iter().flatten().map(|t| (*t, Role::Query))).collect()
}

/// How long a query waits for a model that is still loading before it
/// answers without vectors (and says `initializing`).
pub const MODEL_WAIT: Duration = Duration::from_secs(3);

/// Graph maintenance a query may do inline (points inserted into the HNSW
/// graph, ~1 ms each); bigger jobs wait for [`VectorSearch::sync`] and the
/// query scans the points not yet in the graph.
const INLINE_GRAPH_WORK: usize = 256;

/// Chunk densities (hubness, see `code_intel_vector::Densities`) a query may
/// compute inline: each costs a scan of the collection (~0.2 ms at 15,000
/// chunks). Bigger jobs wait for [`VectorSearch::sync`] (which `index` and
/// the server run after embedding); until then chunks without a density are
/// ranked by similarity alone.
const INLINE_DENSITY_WORK: usize = 1_000;

/// Vector candidates re-ranked for hubness before the best `k` are kept:
/// chunks just below the cut that are close to the request and to little
/// else get their chance.
const HUBNESS_CANDIDATES: usize = 100;

/// Which collection to search.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Collection {
    /// Map first, forest unless the map short-circuits.
    #[default]
    Auto,
    Map,
    Forest,
}

/// Filters applied before the top `k` is taken.
#[derive(Clone, Debug, Default)]
pub struct Filters {
    /// Repo-relative path glob (`app/**/*.py`).
    pub path_glob: Option<String>,
    /// Chunk kinds (empty: all).
    pub kinds: Vec<String>,
}

impl Filters {
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.path_glob.is_none() && self.kinds.is_empty()
    }

    /// The path predicate of the glob.
    ///
    /// # Errors
    /// An invalid glob, with the reason.
    pub fn path_matcher(&self) -> Result<Box<dyn Fn(&str) -> bool + Send + Sync>, SearchError> {
        match &self.path_glob {
            None => Ok(Box::new(|_| true)),
            Some(glob) => {
                let matcher = crate::lexical::path_matcher(glob).map_err(|e| SearchError::BadFilter(e.to_string()))?;
                Ok(Box::new(move |path: &str| matcher.is_match(path)))
            }
        }
    }
}

/// Errors of a search.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    BadFilter(String),
    #[error("embedding the query failed: {0}")]
    Embed(String),
}

/// A map (agreement) hit.
#[derive(Clone, Debug, Serialize)]
pub struct MapHit {
    pub key: String,
    pub text: String,
    pub symbols: Vec<String>,
    pub files: Vec<String>,
    /// Calibrated similarity (see [`calibrate`]): what thresholds judge.
    pub score: f32,
    /// Raw cosine similarity of the query and the agreement.
    pub similarity: f32,
}

/// A vector hit in the forest, with the chunk's place.
#[derive(Clone, Debug, Serialize)]
pub struct ForestHit {
    pub rowid: i64,
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub kind: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qualified_name: Option<String>,
    /// Calibrated similarity (see [`calibrate`]): what thresholds judge.
    pub score: f32,
    /// Raw cosine similarity of the query and the chunk.
    pub similarity: f32,
    /// What the hits are ordered by: the calibrated similarity less the
    /// chunk's hubness ([`VectorIndex::hubness_adjusted`]), not clamped.
    /// For ranking only; it may fall below 0.
    #[serde(skip)]
    pub ranking: f32,
}

/// The nearest chunks of a query with their similarity less hubness, best
/// first ([`VectorSearch::forest_candidates`]).
pub type ForestCandidates = Vec<(Hit, f32)>;

/// What a forest search read from the store before the query was embedded
/// ([`VectorSearch::prepare_forest`]).
#[derive(Debug)]
pub struct ForestPlan {
    /// The model key of the collection prepared.
    key: String,
    /// The chunks the filters allow (`None`: all).
    allowed: Option<HashSet<i64>>,
}

/// A query's median similarity to unrelated code and to unrelated requests,
/// from [`VectorSearch::baselines`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Baselines {
    pub forest: f32,
    pub map: f32,
    /// The query reads as everyday talk rather than a request about
    /// software ([`crate::topic::reads_as_everyday`]).
    pub everyday: bool,
    /// Of its nearest topic anchors, how many are everyday requests
    /// ([`crate::topic::everyday_votes`]).
    pub everyday_votes: usize,
}

/// How usable vector search is right now: `ready`, `partial: N%`,
/// `initializing`, or `unavailable: <reason>`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub enum VectorStatus {
    Ready,
    /// Embedding is under way; the number is the embedded share (0-99).
    Partial(u8),
    /// The model is still loading.
    Initializing,
    Unavailable(String),
}

impl VectorStatus {
    /// Can vector results be given at all?
    #[must_use]
    pub fn usable(&self) -> bool {
        matches!(self, Self::Ready | Self::Partial(_))
    }
}

impl std::fmt::Display for VectorStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Ready => f.write_str("ready"),
            Self::Partial(p) => write!(f, "partial: {p}%"),
            Self::Initializing => f.write_str("initializing"),
            Self::Unavailable(reason) => write!(f, "unavailable: {reason}"),
        }
    }
}

impl From<VectorStatus> for String {
    fn from(s: VectorStatus) -> Self {
        s.to_string()
    }
}

struct Collections {
    model: EmbeddingModel,
    key: String,
    generation: i64,
    forest: VectorIndex,
    map: VectorIndex,
    /// The forest's densities were read from their file (once per load).
    densities_read: bool,
}

/// The vector side of search for one repository. Cheap to share (`Arc`);
/// every method takes the store it should read.
pub struct VectorSearch {
    model: ModelHandle,
    /// `.code-intel/vectors`; `None`: never persist (tests, read-only use).
    dir: Option<PathBuf>,
    loaded: Mutex<Option<Collections>>,
    /// Coverage last counted, by (model id, vector generation): counting
    /// scans every chunk (~100 ms at 10k chunks), while every change that
    /// can alter coverage bumps the generation, so a query only reads it.
    coverage: Mutex<Option<(i64, i64, EmbeddingCoverage)>>,
    anchors: Mutex<Option<Arc<AnchorVectors>>>,
    /// The English model's side (config `english_model`), which answers
    /// requests written in English once it has embedded every chunk
    /// ([`VectorSearch::for_query`]).
    english: Option<Box<VectorSearch>>,
}

/// Folder of the vector snapshots under a repository's state folder.
#[must_use]
pub fn vectors_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("vectors")
}

/// Folder of the English model's vector snapshots (config `english_model`)
/// under [`vectors_dir`].
#[must_use]
pub fn english_dir(vectors_dir: &Path) -> PathBuf {
    vectors_dir.join("english")
}

/// How to find the English model of `config` for the repository at `root`
/// (config `english_model`); `None` when it is turned off or when an
/// embedding endpoint (config `embedding_endpoint` or its environment
/// variable) computes the vectors instead of a local model.
#[must_use]
pub fn english_model_options(config: &code_intel_core::config::Config, root: &Path) -> Option<code_intel_embed::ResolveOptions> {
    let spec = config.english_model.as_deref()?;
    let main = code_intel_embed::ResolveOptions::new(Some(&config.embedding_model), Some(root)).with_endpoint(config.embedding_endpoint.as_deref());
    if main.endpoint.is_some() {
        return None;
    }
    Some(code_intel_embed::ResolveOptions::english(spec, Some(root)))
}

/// Whether `text` is written in English for the choice of model: it has
/// Latin letters and no letter outside ASCII (Japanese, accented Latin,
/// Cyrillic, ... go to the multilingual model).
#[must_use]
pub fn is_english(text: &str) -> bool {
    text.chars().any(|c| c.is_ascii_alphabetic()) && !text.chars().any(|c| c.is_alphabetic() && !c.is_ascii())
}

/// The file keeping the forest's chunk densities for the model with key
/// `model_key` under `dir` ([`vectors_dir`]).
#[must_use]
pub fn densities_file(dir: &Path, model_key: &str) -> PathBuf {
    // Not hex at its start, so `hash64` hashes all of it.
    dir.join(format!("forest-densities-{:016x}.bin", hash64(&format!("densities\n{model_key}"))))
}

impl VectorSearch {
    /// A context over `model`, persisting graph snapshots under `dir`.
    #[must_use]
    pub fn new(model: ModelHandle, dir: Option<PathBuf>) -> Self {
        Self { model, dir, loaded: Mutex::new(None), coverage: Mutex::new(None), anchors: Mutex::new(None), english: None }
    }

    /// This context with `english`, over the English model, as the side that
    /// answers requests written in English ([`VectorSearch::for_query`]).
    /// Its snapshots belong in their own folder ([`english_dir`]).
    #[must_use]
    pub fn with_english(mut self, english: VectorSearch) -> Self {
        self.english = Some(Box::new(english));
        self
    }

    /// The English model's side, when one is configured.
    #[must_use]
    pub fn english(&self) -> Option<&VectorSearch> {
        self.english.as_deref()
    }

    /// The side whose vectors answer `query` in the forest: the English
    /// model's when the request is written in English ([`is_english`]) and
    /// that model, a different one from this context's, is loaded (waiting
    /// up to `wait`) and has a vector for every chunk; else this one. The
    /// map stays with this context's model, which embeds the agreements.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn for_query(&self, store: &Store, query: &str, wait: Duration) -> Result<&VectorSearch, StoreError> {
        let Some(english) = self.english.as_deref() else { return Ok(self) };
        if !is_english(query) {
            return Ok(self);
        }
        let (Some(own), _) = self.encoder(Duration::ZERO) else { return Ok(self) };
        let (Some(theirs), _) = english.encoder(wait) else { return Ok(self) };
        if theirs.info().key == own.info().key || english.status(store, Duration::ZERO)? != VectorStatus::Ready {
            return Ok(self);
        }
        Ok(english)
    }

    #[must_use]
    pub fn model(&self) -> &ModelHandle {
        &self.model
    }

    /// The encoder, waiting up to `wait` for a loading model.
    #[must_use]
    pub fn encoder(&self, wait: Duration) -> (Option<Arc<Encoder>>, ModelState) {
        let state = self.model.wait(wait);
        (state.encoder().cloned(), state)
    }

    /// Vector search status for `store`, waiting up to `wait` for the model.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn status(&self, store: &Store, wait: Duration) -> Result<VectorStatus, StoreError> {
        let state = self.model.wait(wait);
        Ok(match &state {
            ModelState::Loading => VectorStatus::Initializing,
            ModelState::Unavailable(reason) => VectorStatus::Unavailable(reason.clone()),
            ModelState::Ready(encoder) => {
                let key = &encoder.info().key;
                let model = store.embedding_model(&key.name, &key.revision)?;
                let coverage = self.coverage(store, model.map(|m| m.id))?;
                if coverage.complete() {
                    VectorStatus::Ready
                } else {
                    // Floor, so 99.6 % never shows as 100 %.
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    let p = coverage.percent().floor().clamp(0.0, 99.0) as u8;
                    VectorStatus::Partial(p)
                }
            }
        })
    }

    /// The store's embedding coverage for `model_id`, counted again only
    /// when the vector generation moved.
    fn coverage(&self, store: &Store, model_id: Option<i64>) -> Result<EmbeddingCoverage, StoreError> {
        let Some(id) = model_id else { return store.embedding_coverage(None) };
        // Read the generation first: a change landing between the two reads
        // leaves a newer count under an older generation, recounted next time.
        let generation = store.vector_generation()?;
        let mut cached = self.coverage.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((cid, cgen, c)) = *cached
            && cid == id
            && cgen == generation
        {
            return Ok(c);
        }
        let c = store.embedding_coverage(Some(id))?;
        *cached = Some((id, generation, c));
        Ok(c)
    }

    /// Brings the in-memory indexes in step with the store, finishes any
    /// graph work (build, rebuild, inserts), then saves a snapshot when a
    /// graph is in use, and brings the chunk densities up to date. For after
    /// an embedding pass, in the background.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn sync(&self, store: &Store) -> Result<(), StoreError> {
        let Some(encoder) = self.model.state().encoder().cloned() else { return Ok(()) };
        // A long density pass goes a step at a time, letting go of the
        // collections between steps so that queries are answered meanwhile.
        while self.with_collections(store, &encoder, true, |c| c.forest.density_pass_pending())? == Some(true) {}
        Ok(())
    }

    fn with_collections<T>(
        &self,
        store: &Store,
        encoder: &Encoder,
        full: bool,
        f: impl FnOnce(&Collections) -> T,
    ) -> Result<Option<T>, StoreError> {
        let info = encoder.info();
        let Some(model) = store.embedding_model(&info.key.name, &info.key.revision)? else {
            return Ok(None); // nothing embedded for this model yet
        };
        let key = info.key.to_string();
        let generation = store.vector_generation()?;
        let mut guard = self.loaded.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if guard.as_ref().is_none_or(|c| c.key != key || c.model.id != model.id) {
            *guard = Some(Collections {
                forest: self.open_index("forest", &key, model.dim),
                map: self.open_index("map", &key, model.dim),
                model: model.clone(),
                key: key.clone(),
                generation: i64::MIN,
                densities_read: false,
            });
        }
        let Some(c) = guard.as_mut() else { return Ok(None) };
        if c.generation != generation {
            let forest_points = store.forest_points(model.id)?;
            catch_up(store, &model, &mut c.forest, &forest_points)?;
            let map_points = store.map_points(model.id)?;
            catch_up(store, &model, &mut c.map, &map_points)?;
            c.generation = generation;
            self.update_densities(c, full);
        } else if full {
            self.update_densities(c, full);
        }
        for (name, index) in [("forest", &mut c.forest), ("map", &mut c.map)] {
            let work = index.pending_graph_work();
            if work > 0 && (full || work <= INLINE_GRAPH_WORK) {
                let rebuilt = work == usize::MAX;
                let had_graph = index.uses_hnsw();
                index.refresh();
                if (rebuilt || full) && index.uses_hnsw() {
                    self.save_index(name, &key, index, generation);
                } else if had_graph && !index.uses_hnsw() {
                    // Scanned from now on: a snapshot would only bring the
                    // dropped graph back at the next start.
                    self.remove_snapshot(name);
                }
            }
        }
        Ok(Some(f(c)))
    }

    /// Brings the forest's chunk densities up to date: inline when the work
    /// is small, else, in a sync (`full`), one step of a pass
    /// ([`DENSITY_STEP_PAIRS`] products, about a second) so that queries
    /// waiting for the collections wait no longer; [`VectorSearch::sync`]
    /// takes the steps. Reads them from their file first, and keeps them
    /// there when a pass ends.
    fn update_densities(&self, c: &mut Collections, full: bool) {
        let file = self.dir.as_ref().map(|d| densities_file(d, &c.key));
        if !c.densities_read {
            c.densities_read = true;
            if let Some(densities) = file.as_deref().and_then(read_densities) {
                c.forest.restore_densities(densities);
            }
        }
        if !c.forest.density_pass_pending() {
            let work = c.forest.density_work();
            if work == 0 && full && file.as_ref().is_some_and(|f| !f.exists()) {
                // Nothing to compute (every density read back, or too few
                // chunks): the file still says this pass is done.
                if let Some(file) = &file {
                    write_densities(file, c.forest.densities());
                }
            }
            if work == 0 || !(full || work <= INLINE_DENSITY_WORK) {
                return;
            }
            if work <= INLINE_DENSITY_WORK {
                let computed = c.forest.compute_densities();
                tracing::debug!(computed, "chunk densities computed");
                if let Some(file) = &file {
                    write_densities(file, c.forest.densities());
                }
                return;
            }
        } else if !full {
            // A sync's pass is under way: it takes the steps.
            return;
        }
        let step = c.forest.compute_densities_step(DENSITY_STEP_PAIRS);
        tracing::debug!(computed = step.computed, finished = step.finished, "chunk densities: a step of a pass");
        if step.finished
            && let Some(file) = &file
        {
            write_densities(file, c.forest.densities());
        }
    }

    fn open_index(&self, collection: &str, key: &str, dim: usize) -> VectorIndex {
        if let Some(dir) = &self.dir {
            match VectorIndex::load(&dir.join(collection), key, dim) {
                Ok((index, info)) => {
                    tracing::debug!(collection, generation = info.generation, "vector snapshot loaded");
                    return index;
                }
                Err(code_intel_vector::PersistError::Missing(_)) => {}
                Err(e) => tracing::info!(collection, "vector snapshot not used, rebuilding from the store: {e}"),
            }
        }
        VectorIndex::new(dim)
    }

    fn remove_snapshot(&self, collection: &str) {
        if let Some(dir) = &self.dir
            && let Err(e) = std::fs::remove_dir_all(dir.join(collection))
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(collection, "could not remove the unused vector snapshot: {e}");
        }
    }

    fn save_index(&self, collection: &str, key: &str, index: &VectorIndex, generation: i64) {
        if let Some(dir) = &self.dir
            && let Err(e) = index.save(&dir.join(collection), key, generation)
        {
            tracing::warn!(collection, "could not save the vector snapshot (it will be rebuilt next start): {e}");
        }
    }

    /// Embeds a query (e5 `query: ` prefix where it applies).
    ///
    /// # Errors
    /// Inference failure.
    pub fn embed_query(encoder: &Encoder, text: &str) -> Result<Vec<f32>, SearchError> {
        encoder.embed_query(text).map_err(|e| SearchError::Embed(e.to_string()))
    }

    /// The anchors embedded with `encoder`'s model: from memory, else
    /// [`AnchorVectors::load`] from the folder beside the vector snapshots.
    fn anchor_vectors(&self, encoder: &Encoder) -> Result<Arc<AnchorVectors>, SearchError> {
        let model = encoder.info().key.to_string();
        let mut guard = self.anchors.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(anchors) = guard.as_ref().filter(|a| a.model == model) {
            return Ok(Arc::clone(anchors));
        }
        let anchors = Arc::new(AnchorVectors::load(encoder, self.dir.as_deref())?);
        *guard = Some(Arc::clone(&anchors));
        Ok(anchors)
    }

    /// The query's median similarity to unrelated code (`forest`) and to
    /// unrelated requests (`map`): the baselines [`calibrate`] measures from.
    ///
    /// # Errors
    /// Inference failure while embedding the anchors (once per model).
    pub fn baselines(&self, encoder: &Encoder, query: &[f32]) -> Result<Baselines, SearchError> {
        Ok(self.anchor_vectors(encoder)?.baselines(query))
    }

    /// Map hits for an embedded query, best first, scored on the calibrated
    /// scale (`baseline`: [`Baselines::map`]).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn search_map(&self, store: &Store, encoder: &Encoder, query: &[f32], baseline: f32, k: usize) -> Result<Vec<MapHit>, SearchError> {
        let hits = self.with_collections(store, encoder, false, |c| c.map.search(query, k, None))?.unwrap_or_default();
        let entries = store.map_entries_by_id(&hits.iter().map(|h| h.key).collect::<Vec<_>>())?;
        Ok(hits
            .iter()
            .filter_map(|h| entries.get(&h.key).map(|e| map_hit(e, h.score, baseline)))
            .collect())
    }

    /// Forest hits for an embedded query, filters applied before the top `k`,
    /// ranked by calibrated similarity less hubness (see [`ForestHit`]):
    /// [`VectorSearch::prepare_forest`], [`VectorSearch::forest_candidates`]
    /// and [`VectorSearch::forest_hits`] in turn.
    ///
    /// # Errors
    /// SQLite errors, or an invalid filter.
    pub fn search_forest(
        &self,
        store: &Store,
        encoder: &Encoder,
        query: &[f32],
        baseline: f32,
        k: usize,
        filters: &Filters,
    ) -> Result<Vec<ForestHit>, SearchError> {
        let Some(plan) = self.prepare_forest(store, encoder, filters)? else { return Ok(Vec::new()) };
        let candidates = self.forest_candidates(query, k, &plan);
        self.forest_hits(store, candidates, baseline, k)
    }

    /// What a forest search needs from the store, read before the query is
    /// embedded: the collection brought up to date with the stored vectors,
    /// and the chunks the filters allow. `None` when nothing is embedded for
    /// this model yet.
    ///
    /// # Errors
    /// SQLite errors, or an invalid filter.
    pub fn prepare_forest(&self, store: &Store, encoder: &Encoder, filters: &Filters) -> Result<Option<ForestPlan>, SearchError> {
        let allowed: Option<HashSet<i64>> = if filters.is_empty() {
            None
        } else {
            let accept = filters.path_matcher()?;
            Some(store.chunk_ids_matching(&filters.kinds, &*accept)?.into_iter().collect())
        };
        Ok(self.with_collections(store, encoder, false, |_| ())?.map(|()| ForestPlan { key: encoder.info().key.to_string(), allowed }))
    }

    /// The nearest chunks of an embedded query among those `plan` allows,
    /// best first by similarity less hubness, at most `k`: the vector index
    /// alone, no store (so it can run beside the keyword arm, which has the
    /// store). Empty when the collection is no longer the one prepared.
    #[must_use]
    pub fn forest_candidates(&self, query: &[f32], k: usize, plan: &ForestPlan) -> ForestCandidates {
        let guard = self.loaded.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(c) = guard.as_ref().filter(|c| c.key == plan.key) else { return Vec::new() };
        let hits = c.forest.search(query, k.max(HUBNESS_CANDIDATES), plan.allowed.as_ref());
        let adjusted = c.forest.hubness_adjusted(&hits);
        let mut ranked: Vec<(Hit, f32)> = hits.into_iter().zip(adjusted).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.key.cmp(&b.0.key)));
        ranked.truncate(k);
        ranked
    }

    /// [`VectorSearch::forest_candidates`] as hits: calibrated against the
    /// query's `baseline` and located in the store.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn forest_hits(&self, store: &Store, candidates: ForestCandidates, baseline: f32, k: usize) -> Result<Vec<ForestHit>, SearchError> {
        let span = (1.0 - baseline).max(f32::EPSILON);
        // Calibration keeps the order: it subtracts and divides by the same
        // positive numbers for every candidate.
        let hits: Vec<(Hit, f32)> = candidates.into_iter().take(k).map(|(h, a)| (h, (a - baseline) / span)).collect();
        let locations = store.chunk_locations(&hits.iter().map(|(h, _)| h.key).collect::<Vec<_>>())?;
        Ok(hits
            .iter()
            .filter_map(|(h, ranking)| {
                locations.get(&h.key).map(|l| ForestHit {
                    rowid: l.rowid,
                    path: l.path.clone(),
                    start_line: l.start_line,
                    end_line: l.end_line,
                    kind: l.kind.clone(),
                    name: l.name.clone(),
                    qualified_name: l.qualified_name.clone(),
                    score: calibrate(h.score, baseline),
                    similarity: h.score,
                    ranking: *ranking,
                })
            })
            .collect())
    }

    /// Adds an agreement to the map and embeds it at once when the model is
    /// ready (otherwise the next embedding pass does). Returns the row id.
    ///
    /// # Errors
    /// SQLite or inference errors.
    pub fn add_map_entry(&self, store: &mut Store, entry: &code_intel_store::embeddings::MapEntry) -> Result<i64, SearchError> {
        let id = store.write(|w| w.upsert_map_entry(entry))?;
        if let Some(encoder) = self.model.state().encoder() {
            let v = encoder
                .embed(&[entry.text.as_str()], code_intel_embed::Role::Query, &|_, _| {})
                .map_err(|e| SearchError::Embed(e.to_string()))?;
            let model = code_intel_embed::pipeline::model_row(store, encoder)?;
            let hash = code_intel_store::embeddings::map_text_hash(&entry.text);
            if let Some(v) = v.first() {
                store.write(|w| w.put_embeddings(model.id, &[(hash.as_str(), v.as_slice())]))?;
            }
        }
        Ok(id)
    }

    /// Cosine similarity of a natural-language text with each symbol name,
    /// names split into words first (`AuthService` -> `Auth Service`). For
    /// the session's relevance tiers. `None` when no model is ready.
    ///
    /// # Errors
    /// Inference failure.
    pub fn symbol_similarity(&self, text: &str, symbols: &[&str], wait: Duration) -> Result<Option<Vec<f32>>, SearchError> {
        let (Some(encoder), _) = self.encoder(wait) else { return Ok(None) };
        let split: Vec<String> = symbols.iter().map(|s| code_intel_embed::split_identifiers(s)).collect();
        let mut texts: Vec<&str> = vec![text];
        texts.extend(split.iter().map(String::as_str));
        // Both sides are short natural language: the query side of e5.
        let vectors = encoder
            .embed(&texts, code_intel_embed::Role::Query, &|_, _| {})
            .map_err(|e| SearchError::Embed(e.to_string()))?;
        let (head, rest) = vectors.split_first().map_or((&[][..], &[][..]), |(h, r)| (h.as_slice(), r));
        Ok(Some(rest.iter().map(|v| code_intel_vector::dot(head, v)).collect()))
    }
}

fn map_hit(e: &StoredMapEntry, similarity: f32, baseline: f32) -> MapHit {
    MapHit {
        key: e.entry.key.clone(),
        text: e.entry.text.clone(),
        symbols: e.entry.symbols.clone(),
        files: e.entry.files.clone(),
        score: calibrate(similarity, baseline),
        similarity,
    }
}

/// Applies the difference between `index` and the store's `points`.
fn catch_up(store: &Store, model: &EmbeddingModel, index: &mut VectorIndex, points: &[VectorPoint]) -> Result<(), StoreError> {
    let current: Vec<(i64, u64)> = points.iter().map(|p| (p.rowid, hash64(&p.content_hash))).collect();
    let diff = index.diff(&current);
    if diff.is_empty() {
        return Ok(());
    }
    for key in &diff.remove {
        index.remove(*key);
    }
    let wanted: HashSet<i64> = diff.add.iter().map(|(k, _)| *k).collect();
    let adds: Vec<&VectorPoint> = points.iter().filter(|p| wanted.contains(&p.rowid)).collect();
    /// Past this many new points, one pass over the whole table beats a
    /// lookup per point.
    const BULK_LOAD: usize = 2_000;
    let vectors = if adds.len() > BULK_LOAD {
        let need: HashSet<&str> = adds.iter().map(|p| p.content_hash.as_str()).collect();
        let mut all = std::collections::HashMap::with_capacity(need.len());
        store.for_each_vector(model.id, model.dim, &mut |hash, v| {
            if need.contains(hash) {
                all.insert(hash.to_string(), v);
            }
        })?;
        all
    } else {
        store.vectors(model.id, model.dim, &adds.iter().map(|p| p.content_hash.as_str()).collect::<Vec<_>>())?
    };
    for p in adds {
        if let Some(v) = vectors.get(&p.content_hash) {
            index.insert(p.rowid, hash64(&p.content_hash), v);
        }
    }
    tracing::debug!(removed = diff.remove.len(), added = diff.add.len(), "vector index caught up with the store");
    Ok(())
}

/// `count` vectors of `dim` floats (little-endian f32) from `file`; `None`
/// when it is missing or of another size.
fn read_vectors(file: &Path, count: usize, dim: usize) -> Option<Vec<Vec<f32>>> {
    let bytes = std::fs::read(file).ok()?;
    if bytes.len() != count * dim * 4 {
        return None;
    }
    let floats: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    Some(floats.chunks_exact(dim).map(<[f32]>::to_vec).collect())
}

/// Writes `vectors` to `file` whole or not at all (a temporary file renamed
/// into place); a failure only costs embedding them again next time.
fn write_vectors(file: &Path, vectors: &[Vec<f32>]) {
    let bytes: Vec<u8> = vectors.iter().flatten().flat_map(|f| f.to_le_bytes()).collect();
    write_atomically(file, &bytes, "anchor vectors");
}

/// Writes `bytes` to a temporary file renamed to `file`, so a reader never
/// sees half of it; a failure is logged (`what` names the content).
fn write_atomically(file: &Path, bytes: &[u8], what: &str) {
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    let written = file.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| std::fs::write(&tmp, bytes)).and_then(|()| std::fs::rename(&tmp, file));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        tracing::info!("could not keep the {what} for the next start: {e}");
    }
}

/// Chunk densities file: magic, format, the last full computation's size,
/// the points computed one at a time since, the count, then (content hash,
/// density) pairs; little-endian.
const DENSITIES_MAGIC: &[u8; 4] = b"CIDN";
const DENSITIES_FORMAT: u32 = 1;

/// The densities kept in `file`; `None` when it is missing or unreadable
/// (they are computed again).
fn read_densities(file: &Path) -> Option<Densities> {
    let bytes = std::fs::read(file).ok()?;
    let word = |at: usize| -> Option<u64> { Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?)) };
    if bytes.get(..4)? != DENSITIES_MAGIC || u32::from_le_bytes(bytes.get(4..8)?.try_into().ok()?) != DENSITIES_FORMAT {
        return None;
    }
    let (basis, incremental, count) = (usize::try_from(word(8)?).ok()?, usize::try_from(word(16)?).ok()?, usize::try_from(word(24)?).ok()?);
    let body = bytes.get(32..)?;
    if body.len() != count.checked_mul(12)? {
        return None;
    }
    let pairs = body.chunks_exact(12).map(|r| (u64::from_le_bytes(r[..8].try_into().unwrap_or_default()), f32::from_le_bytes(r[8..].try_into().unwrap_or_default())));
    Some(Densities::new(pairs, basis, incremental))
}

/// Writes the densities to `file` whole or not at all; a failure only costs
/// computing them again.
fn write_densities(file: &Path, densities: &Densities) {
    let pairs: Vec<(u64, f32)> = densities.pairs().collect();
    let mut bytes = Vec::with_capacity(32 + pairs.len() * 12);
    bytes.extend_from_slice(DENSITIES_MAGIC);
    bytes.extend_from_slice(&DENSITIES_FORMAT.to_le_bytes());
    for n in [densities.basis(), densities.incremental(), pairs.len()] {
        bytes.extend_from_slice(&(n as u64).to_le_bytes());
    }
    for (hash, density) in pairs {
        bytes.extend_from_slice(&hash.to_le_bytes());
        bytes.extend_from_slice(&density.to_le_bytes());
    }
    write_atomically(file, &bytes, "chunk densities");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn densities_are_kept_whole_or_not_at_all() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = densities_file(dir.path(), "some-model@1");
        assert_ne!(file, densities_file(dir.path(), "another-model@1"), "one file per model");
        assert!(read_densities(&file).is_none(), "missing: computed again");
        write_densities(&file, &Densities::new([(7, 0.5), (u64::MAX, 0.25)], 40, 3));
        let back = read_densities(&file).expect("read back");
        let mut pairs: Vec<(u64, f32)> = back.pairs().collect();
        pairs.sort_by_key(|p| p.0);
        assert_eq!(pairs, vec![(7, 0.5), (u64::MAX, 0.25)]);
        assert_eq!((back.basis(), back.incremental()), (40, 3));
        // Cut short or of another format: not used.
        let bytes = std::fs::read(&file).expect("bytes");
        std::fs::write(&file, &bytes[..bytes.len() - 5]).expect("truncate");
        assert!(read_densities(&file).is_none());
        let mut other = bytes.clone();
        other[4] = 9;
        std::fs::write(&file, &other).expect("rewrite");
        assert!(read_densities(&file).is_none());
    }

    #[test]
    fn calibration_reads_the_same_across_models() {
        // all-MiniLM-L6-v2-like: unrelated code ~0.05, the right chunk 0.6.
        let minilm = median(&[0.02, 0.08, 0.05, 0.30, 0.04]);
        // multilingual-e5-small-like: unrelated code ~0.76, the right chunk 0.90.
        let e5 = median(&[0.75, 0.77, 0.76, 0.86, 0.74]);
        assert!((minilm - 0.05).abs() < 1e-6 && (e5 - 0.76).abs() < 1e-6, "one related anchor leaves the median alone");
        let (right_minilm, right_e5) = (calibrate(0.6, minilm), calibrate(0.9, e5));
        assert!(right_minilm >= VECTOR_CONFIDENCE_FLOOR && right_e5 >= VECTOR_CONFIDENCE_FLOOR, "{right_minilm} {right_e5}");
        // Unrelated code is never confident, whatever the raw level.
        assert!(calibrate(0.77, e5) < VECTOR_CONFIDENCE_FLOOR && calibrate(0.1, minilm) < VECTOR_CONFIDENCE_FLOOR);
        // Clamped to [0, 1].
        assert_eq!(calibrate(0.2, 0.5), 0.0);
        assert_eq!(calibrate(1.0, 0.5), 1.0);
        assert_eq!(calibrate(1.0, 1.0), 0.0, "no better than unrelated code");
        assert_eq!(median(&[]), 0.0);
        assert!((median(&[0.1, 0.3]) - 0.2).abs() < 1e-6);
    }
}
