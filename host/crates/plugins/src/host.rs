//! [`PluginHost`]: loads the plugins on the search path and chunks files with
//! them, containing every failure.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use code_intel_core::chunk::{FALLBACK_CHUNKER, line_chunks};
use code_intel_core::{Chunk, ChunkFailure, ChunkedFile, Chunker, FailureKind};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Serialize;
use wasmtime::{Engine, Store, Trap};

use crate::discovery::{PluginDir, SourceKind, search_path, wasm_files};
use crate::sandbox::{self, Limits, MAX_CONSECUTIVE_TIMEOUTS, PluginState};
use crate::wit::{self, Bindings, PluginInfo, Pre, RawOutcome};
use crate::{cache, validate};

/// Idle instances kept per plugin. Chunking runs on at most one thread per
/// core, each holding one instance while it works; a few spare instances
/// beyond that only cost memory.
const MAX_IDLE_INSTANCES: usize = 16;

/// How the host is set up.
#[derive(Clone, Debug)]
pub struct HostOptions {
    /// Sandbox limits applied to every call.
    pub limits: Limits,
    /// Compiled-component cache directory; `None` compiles at every start.
    pub cache_dir: Option<PathBuf>,
    /// Describe plugins from the cache at start and load a plugin's code
    /// only when a file first needs it (see [`PluginHost::load_files`]).
    /// `false` loads and instantiates every plugin at start, as `plugin list`
    /// does to report on each one.
    pub lazy: bool,
}

impl Default for HostOptions {
    fn default() -> Self {
        Self { limits: Limits::default(), cache_dir: cache::default_cache_dir(), lazy: true }
    }
}

/// What `plugin list` shows about a loaded plugin.
#[derive(Clone, Debug, Serialize)]
pub struct PluginSummary {
    pub name: String,
    pub version: String,
    pub description: String,
    pub languages: Vec<String>,
    pub file_patterns: Vec<String>,
    pub priority: i32,
    /// Version of the WIT contract the plugin was built against.
    pub wit_version: String,
    pub path: PathBuf,
    pub source: SourceKind,
    /// True when nothing was compiled at start: the compiled code came from
    /// the cache or, for a deferred plugin, its description did.
    pub from_cache: bool,
    /// True when the plugin was described from the cache and its code is
    /// loaded only when a file first needs it ([`PluginHost::is_loaded`]
    /// tells whether that happened).
    pub deferred: bool,
    /// Time to load at start: read and hash the file, then either read the
    /// cached description (deferred) or compile or fetch the code from the
    /// cache, instantiate and call `info`.
    pub load_ms: f64,
}

/// A plugin file that was not loaded, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Rejection {
    pub path: PathBuf,
    pub source: SourceKind,
    /// The plugin's name when it got as far as reporting one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub reason: String,
}

/// One directory of the search path as it was searched.
#[derive(Clone, Debug, Serialize)]
pub struct SearchedDir {
    pub path: PathBuf,
    pub source: SourceKind,
    pub exists: bool,
    /// `.wasm` files found there.
    pub files: usize,
}

/// The result of one plugin's attempt at a file, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// The plugin's chunks, valid by the contract.
    Chunks(Vec<Chunk>),
    /// The plugin declined the file, with its reason.
    Decline(String),
    /// The plugin reported its own error for the file.
    Error { message: String, line: Option<u32> },
    /// Trap, timeout, memory limit or invalid output.
    Failed(ChunkFailure),
}

struct Live {
    store: Store<PluginState>,
    bindings: Bindings,
}

/// A plugin's code, ready to instantiate.
struct Code {
    pre: Pre,
}

/// What a deferred plugin needs to load its code: the component as read at
/// start (its hash is the cache key the description was found under).
struct Deferred {
    wasm: Vec<u8>,
    key: cache::Key,
}

struct Plugin {
    summary: PluginSummary,
    globs: GlobSet,
    /// Set at start (eager load) or on first use (deferred): the code, or why
    /// it could not be loaded. Initialised once per process, whichever thread
    /// gets there first; the others wait for it.
    code: OnceLock<Result<Code, String>>,
    deferred: Mutex<Option<Deferred>>,
    idle: Mutex<Vec<Live>>,
    /// The circuit breaker: timeouts since a call last finished, and
    /// whether [`MAX_CONSECUTIVE_TIMEOUTS`] was reached in this run.
    timeouts_in_a_row: AtomicU32,
    tripped: AtomicBool,
    /// Hex SHA-256 of the component's bytes (part of [`Chunker::identity`]).
    wasm_sha: String,
}

/// The loaded plugins. Send + Sync: files may be chunked from many threads at
/// once; each call takes an instance of its own from a per-plugin pool.
pub struct PluginHost {
    engine: Option<&'static Engine>,
    /// Sorted by priority (highest first), then name.
    plugins: Vec<Plugin>,
    rejections: Vec<Rejection>,
    searched: Vec<SearchedDir>,
    options: HostOptions,
}

impl PluginHost {
    /// Loads every plugin on the search path for `repo` (see
    /// [`crate::discovery`]). Never fails: problems become rejections.
    #[must_use]
    pub fn discover(repo: Option<&Path>, options: HostOptions) -> Self {
        Self::load_dirs(&search_path(repo), options)
    }

    /// Loads every `*.wasm` file in `dirs`, in order; later plugins with the
    /// same name shadow earlier ones.
    #[must_use]
    pub fn load_dirs(dirs: &[PluginDir], options: HostOptions) -> Self {
        let mut files = Vec::new();
        let mut searched = Vec::new();
        let mut rejections = Vec::new();
        for dir in dirs {
            let exists = dir.path.is_dir();
            match wasm_files(&dir.path) {
                Ok(found) => {
                    searched.push(SearchedDir { path: dir.path.clone(), source: dir.kind, exists, files: found.len() });
                    files.extend(found.into_iter().map(|f| (f, dir.kind)));
                }
                Err(reason) => {
                    searched.push(SearchedDir { path: dir.path.clone(), source: dir.kind, exists, files: 0 });
                    rejections.push(Rejection { path: dir.path.clone(), source: dir.kind, name: None, reason });
                }
            }
        }
        let mut host = Self::load_files(&files, options);
        host.searched = searched;
        rejections.append(&mut host.rejections);
        host.rejections = rejections;
        host
    }

    /// Loads exactly these plugin files (a later file shadows an earlier one
    /// with the same plugin name).
    #[must_use]
    pub fn load_files(files: &[(PathBuf, SourceKind)], options: HostOptions) -> Self {
        let mut host = Self { engine: None, plugins: Vec::new(), rejections: Vec::new(), searched: Vec::new(), options };
        let engine = match sandbox::engine() {
            Ok(engine) => engine,
            Err(reason) => {
                host.rejections.extend(files.iter().map(|(path, source)| Rejection {
                    path: path.clone(),
                    source: *source,
                    name: None,
                    reason: reason.clone(),
                }));
                return host;
            }
        };
        host.engine = Some(engine);
        let mut loaded: Vec<Plugin> = Vec::new();
        let results = load_all(engine, files, &host.options);
        let mut wrote = false;
        for ((path, source), result) in files.iter().zip(results) {
            match result {
                Ok((plugin, wrote_entry)) => {
                    wrote |= wrote_entry;
                    if let Some(i) = loaded.iter().position(|p| p.summary.name == plugin.summary.name) {
                        let old = loaded.remove(i);
                        host.rejections.push(Rejection {
                            path: old.summary.path.clone(),
                            source: old.summary.source,
                            name: Some(old.summary.name.clone()),
                            reason: format!(
                                "shadowed by {} ({}), which has the same name and comes later on the search path",
                                plugin.summary.path.display(),
                                plugin.summary.source.label()
                            ),
                        });
                    }
                    loaded.push(plugin);
                }
                Err((name, reason)) => {
                    tracing::warn!(plugin = %path.display(), %reason, "plugin rejected");
                    host.rejections.push(Rejection { path: path.clone(), source: *source, name, reason });
                }
            }
        }
        loaded.sort_by(|a, b| b.summary.priority.cmp(&a.summary.priority).then_with(|| a.summary.name.cmp(&b.summary.name)));
        host.plugins = loaded;
        // Entries go stale when plugins change, which is when something was
        // compiled; otherwise the cache is looked over once a day.
        if let Some(dir) = &host.options.cache_dir
            && (wrote || cache::prune_due(dir))
        {
            let report = cache::prune(dir, &cache::engine_hash(engine));
            tracing::debug!(dir = %dir.display(), removed = report.removed.len(), kept = report.kept, "compiled-plugin cache pruned");
        }
        host
    }

    /// True when the code of the plugin named `plugin` is loaded in this
    /// process (at start, or by a file that needed it since).
    #[must_use]
    pub fn is_loaded(&self, plugin: &str) -> bool {
        self.plugins.iter().any(|p| p.summary.name == plugin && matches!(p.code.get(), Some(Ok(_))))
    }

    /// The loaded plugins, in the order they are tried.
    pub fn plugins(&self) -> impl Iterator<Item = &PluginSummary> {
        self.plugins.iter().map(|p| &p.summary)
    }

    /// Plugin files that were not loaded, with reasons.
    #[must_use]
    pub fn rejections(&self) -> &[Rejection] {
        &self.rejections
    }

    /// The search path as it was searched (empty for [`PluginHost::load_files`]).
    #[must_use]
    pub fn searched(&self) -> &[SearchedDir] {
        &self.searched
    }

    /// The options the host was set up with.
    #[must_use]
    pub fn options(&self) -> &HostOptions {
        &self.options
    }

    /// True when the plugin named `plugin` claims `path` by its file patterns.
    #[must_use]
    pub fn matches(&self, plugin: &str, path: &str) -> bool {
        self.plugins.iter().any(|p| p.summary.name == plugin && p.globs.is_match(path))
    }

    /// Runs one plugin on one file, whatever its patterns say, and validates
    /// the result. Used by the test harness; indexing uses [`Chunker`].
    #[must_use]
    pub fn attempt(&self, plugin: &str, path: &str, content: &str) -> Option<Attempt> {
        self.attempt_metered(plugin, path, content).map(|(attempt, _)| attempt)
    }

    /// [`PluginHost::attempt`], with the fuel the call burned (see
    /// [`sandbox::DEFAULT_CALL_FUEL`]; 0 when no instance was called).
    #[must_use]
    pub fn attempt_metered(&self, plugin: &str, path: &str, content: &str) -> Option<(Attempt, u64)> {
        self.plugins.iter().find(|p| p.summary.name == plugin).map(|p| {
            let mut fuel = 0;
            let attempt = self.run(p, path, content, &mut fuel);
            (attempt, fuel)
        })
    }

    fn run(&self, plugin: &Plugin, path: &str, content: &str, fuel: &mut u64) -> Attempt {
        match self.call(plugin, path, content, fuel) {
            Ok(RawOutcome::Chunks(raw)) => match validate::chunks(raw, content) {
                Ok(chunks) => Attempt::Chunks(chunks),
                Err(message) => Attempt::Failed(failure(plugin, FailureKind::InvalidOutput, message)),
            },
            Ok(RawOutcome::Decline(reason)) => Attempt::Decline(reason),
            Ok(RawOutcome::Error { message, line }) => Attempt::Error { message, line },
            Err(f) => Attempt::Failed(f),
        }
    }

    /// The plugin's code, loading it on first use (deferred plugins).
    fn code<'p>(&self, plugin: &'p Plugin) -> Result<&'p Code, ChunkFailure> {
        plugin
            .code
            .get_or_init(|| self.load_deferred(plugin))
            .as_ref()
            .map_err(|reason| failure(plugin, FailureKind::Trap, format!("could not be loaded: {reason}")))
    }

    /// Loads a deferred plugin's code (compiled code from the cache, else
    /// compiled), instantiates it and checks that `info()` still says what
    /// the cached description said. The instance is kept for the first call.
    /// On any failure the description is removed from the cache, so the next
    /// start loads the plugin in full and reports what is wrong with it.
    fn load_deferred(&self, plugin: &Plugin) -> Result<Code, String> {
        let started = Instant::now();
        let deferred = plugin.deferred.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        let Some(Deferred { wasm, key }) = deferred else { return Err("the component is not available".into()) };
        let engine = self.engine.ok_or("no WebAssembly engine")?;
        let dir = self.options.cache_dir.as_deref();
        let result = (|| {
            let loaded = cache::load(engine, &wasm, &key, dir)?;
            let pre = wit::prepare(engine, &loaded.component)?;
            let limits = self.options.limits;
            let mut live = instantiate(engine, &pre, &limits).map_err(|e| format!("instantiation failed: {}", first_line(&e)))?;
            sandbox::arm_deadline(&mut live.store, &limits);
            let info = live.bindings.info(&mut live.store).map_err(|e| format!("info() failed: {}", first_line(&e)))?;
            let s = &plugin.summary;
            let same = pre.version() == s.wit_version
                && info.name == s.name
                && info.version == s.version
                && info.description == s.description
                && info.languages == s.languages
                && info.file_patterns == s.file_patterns
                && info.priority == s.priority;
            if !same {
                return Err("the component no longer matches its cached description; it is loaded afresh at the next start".to_string());
            }
            plugin.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(live);
            tracing::debug!(plugin = %s.name, from_cache = loaded.from_cache, load_ms = started.elapsed().as_secs_f64() * 1000.0, "deferred plugin loaded");
            Ok(Code { pre })
        })();
        if let (Err(reason), Some(dir)) = (&result, dir) {
            tracing::warn!(plugin = %plugin.summary.name, %reason, "deferred plugin could not be loaded");
            cache::forget_info(dir, &key);
        }
        result
    }

    /// One call into the plugin with an instance from its pool. An instance
    /// that trapped is discarded; the next call gets a fresh one.
    fn call(&self, plugin: &Plugin, path: &str, content: &str, fuel: &mut u64) -> Result<RawOutcome, ChunkFailure> {
        let limits = self.options.limits;
        let code = self.code(plugin)?;
        let idle = plugin.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner).pop();
        let mut live = match idle {
            Some(live) => live,
            None => {
                let engine = self.engine.ok_or_else(|| failure(plugin, FailureKind::Trap, "no engine".into()))?;
                instantiate(engine, &code.pre, &limits)
                    .map_err(|e| classify(plugin, &e, None, &limits))?
            }
        };
        sandbox::arm_deadline(&mut live.store, &limits);
        let result = live.bindings.chunk(&mut live.store, path, content);
        *fuel = sandbox::fuel_used(&live.store, &limits);
        match result {
            Ok(outcome) => {
                let mut idle = plugin.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if idle.len() < MAX_IDLE_INSTANCES {
                    idle.push(live);
                }
                Ok(outcome)
            }
            Err(e) => {
                let f = classify(plugin, &e, Some(live.store.data()), &limits);
                tracing::debug!(plugin = %plugin.summary.name, %path, kind = ?f.kind, message = %f.message, "plugin call failed; instance discarded");
                Err(f)
            }
        }
    }
}

impl PluginHost {
    /// Counts a call's outcome on the plugin's circuit breaker: a timeout
    /// adds one, anything else (the call finished) starts the count again.
    fn note_outcome(plugin: &Plugin, attempt: &Attempt) {
        if matches!(attempt, Attempt::Failed(f) if f.kind == FailureKind::Timeout) {
            let in_a_row = plugin.timeouts_in_a_row.fetch_add(1, Ordering::Relaxed) + 1;
            if in_a_row >= MAX_CONSECUTIVE_TIMEOUTS && !plugin.tripped.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    plugin = %plugin.summary.name,
                    "plugin timed out on {in_a_row} files in a row: not called again in this index run, its files get line chunks"
                );
            }
        } else {
            plugin.timeouts_in_a_row.store(0, Ordering::Relaxed);
        }
    }
}

impl Chunker for PluginHost {
    /// The host's version and every loaded plugin's name, version, contract
    /// version and component hash, in a stable order, hashed: a plugin
    /// added, removed, upgraded or rebuilt changes it.
    fn identity(&self) -> Option<String> {
        use sha2::{Digest, Sha256};
        let mut parts: Vec<String> = self
            .plugins
            .iter()
            .map(|p| format!("{}\0{}\0{}\0{}", p.summary.name, p.summary.version, p.summary.wit_version, p.wasm_sha))
            .collect();
        parts.sort();
        let mut hasher = Sha256::new();
        hasher.update(format!("code-intel {}\n", env!("CARGO_PKG_VERSION")));
        for part in parts {
            hasher.update(part);
            hasher.update(b"\n");
        }
        Some(hasher.finalize().iter().take(12).map(|b| format!("{b:02x}")).collect())
    }

    /// A new index run: every plugin whose circuit breaker tripped is
    /// called again.
    fn begin_run(&self) {
        for plugin in &self.plugins {
            plugin.timeouts_in_a_row.store(0, Ordering::Relaxed);
            plugin.tripped.store(false, Ordering::Relaxed);
        }
    }

    fn chunk_file(&self, path: &str, content: &str) -> ChunkedFile {
        let mut declined = Vec::new();
        let mut failures = Vec::new();
        for plugin in self.plugins.iter().filter(|p| p.globs.is_match(path)) {
            if plugin.tripped.load(Ordering::Relaxed) {
                let message = format!(
                    "not called: it timed out on {MAX_CONSECUTIVE_TIMEOUTS} files in a row in this index run (each past its {} fuel or {:?} time limit), so its files are indexed as lines until the next run; fix or remove the plugin",
                    self.options.limits.call_fuel,
                    self.options.limits.call_timeout
                );
                failures.push(failure(plugin, FailureKind::Timeout, message));
                break;
            }
            let attempt = self.run(plugin, path, content, &mut 0);
            Self::note_outcome(plugin, &attempt);
            match attempt {
                Attempt::Chunks(chunks) => {
                    return ChunkedFile { chunks, chunker: plugin.summary.name.clone(), declined, failures };
                }
                Attempt::Decline(reason) => declined.push((plugin.summary.name.clone(), reason)),
                Attempt::Error { message, line } => {
                    let message = match line {
                        Some(line) => format!("line {line}: {message}"),
                        None => message,
                    };
                    tracing::info!(plugin = %plugin.summary.name, %path, %message, "plugin error; using line chunks");
                    failures.push(failure(plugin, FailureKind::PluginError, message));
                    break;
                }
                Attempt::Failed(f) => {
                    // The plugin claimed the file (it did not decline): its
                    // failure ends the search, the file gets line chunks.
                    tracing::warn!(plugin = %f.plugin, %path, kind = ?f.kind, message = %f.message, "plugin failed; using line chunks");
                    failures.push(f);
                    break;
                }
            }
        }
        ChunkedFile { chunks: line_chunks(path, content), chunker: FALLBACK_CHUNKER.to_string(), declined, failures }
    }
}

fn failure(plugin: &Plugin, kind: FailureKind, message: String) -> ChunkFailure {
    ChunkFailure { plugin: plugin.summary.name.clone(), kind, message }
}

fn classify(plugin: &Plugin, e: &wasmtime::Error, state: Option<&PluginState>, limits: &Limits) -> ChunkFailure {
    if let Some(message) = budget_exceeded(e, limits) {
        return failure(plugin, FailureKind::Timeout, message);
    }
    let trap = e.downcast_ref::<Trap>().copied();
    if state.is_some_and(|s| s.limiter.memory_exceeded) {
        return failure(
            plugin,
            FailureKind::MemoryLimit,
            format!("tried to grow its memory past the {} MiB limit", limits.memory_limit / (1024 * 1024)),
        );
    }
    let what = trap.map_or_else(|| first_line(e), |t| t.to_string());
    let message = match state.and_then(PluginState::last_stderr_line) {
        Some(stderr) => format!("{what} ({stderr})"),
        None => what,
    };
    failure(plugin, FailureKind::Trap, message)
}

/// Why a call was cut off, when it ran past one of its budgets: fuel (the
/// budget that decides), host work, or the wall-clock backstop.
fn budget_exceeded(e: &wasmtime::Error, limits: &Limits) -> Option<String> {
    if let Some(work) = e.downcast_ref::<sandbox::HostWorkExhausted>() {
        return Some(format!("did not finish within its host work limit: {work} (MAX_HOST_WORK_BYTES)"));
    }
    match e.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => Some(format!(
            "did not finish within its fuel limit of {} units (about one per WebAssembly instruction; call_fuel)",
            limits.call_fuel
        )),
        Some(Trap::Interrupt) => Some(format!("did not finish within the {:?} wall-clock time limit (call_timeout)", limits.call_timeout)),
        _ => None,
    }
}

fn first_line(e: &wasmtime::Error) -> String {
    e.chain().last().map(ToString::to_string).unwrap_or_default().lines().next().unwrap_or_default().to_string()
}

fn instantiate(engine: &Engine, pre: &Pre, limits: &Limits) -> wasmtime::Result<Live> {
    let mut store = sandbox::new_store(engine, limits);
    let bindings = pre.instantiate(&mut store)?;
    Ok(Live { store, bindings })
}

/// A loaded plugin and whether loading it wrote a compiled-code entry, or
/// the plugin's name (when it got that far) and why it was rejected.
type LoadResult = Result<(Plugin, bool), (Option<String>, String)>;

/// Loads `files` on up to one thread per core (deserializing and
/// instantiating is CPU work; compiling on a cold cache even more so). The
/// results are in the order of `files`.
fn load_all(engine: &'static Engine, files: &[(PathBuf, SourceKind)], options: &HostOptions) -> Vec<LoadResult> {
    let workers = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get).min(files.len());
    if workers <= 1 {
        return files.iter().map(|(path, source)| load_plugin(engine, path, *source, options)).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<LoadResult>>> = files.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((path, source)) = files.get(i) else { break };
                    let result = load_plugin(engine, path, *source, options);
                    *slots[i].lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(result);
                }
            });
        }
    });
    slots
        .into_iter()
        .zip(files)
        .map(|(slot, (path, _))| {
            slot.into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .unwrap_or_else(|| Err((None, format!("loading {} did not complete", path.display()))))
        })
        .collect()
}

/// Loads one plugin file. Lazy hosts first look for the plugin's cached
/// description: when there is one, the plugin is described from it and its
/// code is left for the first file that needs it. Otherwise: component
/// (compiled code cached), version check, instance, `info`, and the
/// description is cached for the next start.
fn load_plugin(engine: &'static Engine, path: &Path, source: SourceKind, options: &HostOptions) -> LoadResult {
    let started = Instant::now();
    let file = cache::read_component(path).map_err(|e| (None, e))?;
    let key = cache::Key::new(engine, &file.bytes);
    let dir = options.cache_dir.as_deref();
    if options.lazy
        && let Some(dir) = dir
        && let Some(cached) = cache::read_info(dir, &key, path, &file)
    {
        let info = cached.plugin_info();
        // Only descriptions that passed this check are cached; a failure
        // here means the entry is not to be trusted: load in full instead.
        if let Ok(globs) = check_info(&info) {
            let summary = summary(info, cached.wit_version.clone(), path, source, true, true, started);
            tracing::debug!(plugin = %summary.name, path = %path.display(), load_ms = summary.load_ms, "plugin described from the cache");
            let plugin = Plugin {
                summary,
                globs,
                code: OnceLock::new(),
                wasm_sha: key.wasm_sha().to_string(),
                deferred: Mutex::new(Some(Deferred { wasm: file.bytes, key })),
                idle: Mutex::new(Vec::new()),
                timeouts_in_a_row: AtomicU32::new(0),
                tripped: AtomicBool::new(false),
            };
            return Ok((plugin, false));
        }
        cache::forget_info(dir, &key);
    }
    let loaded = cache::load(engine, &file.bytes, &key, dir).map_err(|e| (None, e))?;
    let pre = wit::prepare(engine, &loaded.component).map_err(|e| (None, e))?;
    let limits = options.limits;
    let mut live = instantiate(engine, &pre, &limits).map_err(|e| (None, format!("instantiation failed: {}", first_line(&e))))?;
    sandbox::arm_deadline(&mut live.store, &limits);
    let info = match live.bindings.info(&mut live.store) {
        Ok(info) => info,
        Err(e) => {
            let reason = if let Some(why) = budget_exceeded(&e, &limits) {
                format!("info() {why}")
            } else {
                let stderr = live.store.data().last_stderr_line().map(|s| format!(" ({s})")).unwrap_or_default();
                format!("info() trapped: {}{stderr}", first_line(&e))
            };
            return Err((None, reason));
        }
    };
    let globs = check_info(&info).map_err(|e| (Some(info.name.clone()), e))?;
    if let Some(dir) = dir {
        cache::write_info(dir, &key, &cache::CachedInfo::new(&key, &info, pre.version(), path, &file));
    }
    let summary = summary(info, pre.version().to_string(), path, source, loaded.from_cache, false, started);
    tracing::debug!(plugin = %summary.name, path = %path.display(), from_cache = summary.from_cache, load_ms = summary.load_ms, "plugin loaded");
    let plugin = Plugin {
        summary,
        globs,
        code: OnceLock::from(Ok(Code { pre })),
        deferred: Mutex::new(None),
        idle: Mutex::new(vec![live]),
        timeouts_in_a_row: AtomicU32::new(0),
        tripped: AtomicBool::new(false),
        wasm_sha: key.wasm_sha().to_string(),
    };
    Ok((plugin, loaded.wrote))
}

fn summary(info: PluginInfo, wit_version: String, path: &Path, source: SourceKind, from_cache: bool, deferred: bool, started: Instant) -> PluginSummary {
    PluginSummary {
        name: info.name,
        version: info.version,
        description: info.description,
        languages: info.languages,
        file_patterns: info.file_patterns,
        priority: info.priority,
        wit_version,
        path: path.to_path_buf(),
        source,
        from_cache,
        deferred,
        load_ms: started.elapsed().as_secs_f64() * 1000.0,
    }
}

/// Checks what a plugin says about itself and compiles its file patterns.
/// Patterns are globs over repository-relative paths; `*` does not cross `/`
/// (use `**/` for any directory depth).
fn check_info(info: &PluginInfo) -> Result<GlobSet, String> {
    let name_ok = !info.name.is_empty()
        && info.name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !name_ok {
        return Err(format!("invalid plugin name {:?}: use lowercase letters, digits, `-` and `_`", info.name));
    }
    if info.file_patterns.is_empty() {
        return Err("the plugin declares no file patterns, so no file would ever be offered to it".into());
    }
    let mut set = GlobSetBuilder::new();
    for pattern in &info.file_patterns {
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("invalid file pattern {pattern:?}: {e}"))?;
        set.add(glob);
    }
    set.build().map_err(|e| format!("file patterns do not compile: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_can_be_shared_across_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<PluginHost>();
    }

    #[test]
    fn patterns_do_not_cross_directories_with_a_single_star() {
        let info = PluginInfo {
            name: "x".into(),
            version: "1".into(),
            description: String::new(),
            languages: vec![],
            file_patterns: vec!["*.md".into(), "**/*.py".into(), "**/*.blade.php".into()],
            priority: 0,
        };
        let globs = check_info(&info).unwrap();
        assert!(globs.is_match("README.md") && !globs.is_match("docs/a.md"));
        assert!(globs.is_match("a.py") && globs.is_match("src/pkg/a.py"));
        assert!(globs.is_match("resources/views/welcome.blade.php"));
    }

    #[test]
    fn bad_info_is_explained() {
        let base = PluginInfo {
            name: "ok".into(),
            version: "1".into(),
            description: String::new(),
            languages: vec![],
            file_patterns: vec!["**/*.py".into()],
            priority: 0,
        };
        let err = |info: PluginInfo| check_info(&info).unwrap_err();
        assert!(err(PluginInfo { name: "Bad Name".into(), ..base.clone() }).contains("invalid plugin name"));
        assert!(err(PluginInfo { file_patterns: vec![], ..base.clone() }).contains("no file patterns"));
        assert!(err(PluginInfo { file_patterns: vec!["src/[".into()], ..base }).contains("invalid file pattern"));
    }
}
