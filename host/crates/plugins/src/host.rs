//! [`PluginHost`]: loads the plugins on the search path and chunks files with
//! them, containing every failure.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use code_intel_core::chunk::{FALLBACK_CHUNKER, line_chunks};
use code_intel_core::{Chunk, ChunkFailure, ChunkedFile, Chunker, FailureKind};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Serialize;
use wasmtime::{Engine, Store, Trap};

use crate::discovery::{PluginDir, SourceKind, search_path, wasm_files};
use crate::sandbox::{self, Limits, PluginState};
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
}

impl Default for HostOptions {
    fn default() -> Self {
        Self { limits: Limits::default(), cache_dir: cache::default_cache_dir() }
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
    /// True when the compiled code came from the cache (no compilation).
    pub from_cache: bool,
    /// Time to load: read, compile or fetch from cache, instantiate, `info`.
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

struct Plugin {
    summary: PluginSummary,
    globs: GlobSet,
    pre: Pre,
    idle: Mutex<Vec<Live>>,
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
        for ((path, source), result) in files.iter().zip(results) {
            match result {
                Ok(plugin) => {
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
        host
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
        self.plugins.iter().find(|p| p.summary.name == plugin).map(|p| self.run(p, path, content))
    }

    fn run(&self, plugin: &Plugin, path: &str, content: &str) -> Attempt {
        match self.call(plugin, path, content) {
            Ok(RawOutcome::Chunks(raw)) => match validate::chunks(raw, content) {
                Ok(chunks) => Attempt::Chunks(chunks),
                Err(message) => Attempt::Failed(failure(plugin, FailureKind::InvalidOutput, message)),
            },
            Ok(RawOutcome::Decline(reason)) => Attempt::Decline(reason),
            Ok(RawOutcome::Error { message, line }) => Attempt::Error { message, line },
            Err(f) => Attempt::Failed(f),
        }
    }

    /// One call into the plugin with an instance from its pool. An instance
    /// that trapped is discarded; the next call gets a fresh one.
    fn call(&self, plugin: &Plugin, path: &str, content: &str) -> Result<RawOutcome, ChunkFailure> {
        let limits = self.options.limits;
        let idle = plugin.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner).pop();
        let mut live = match idle {
            Some(live) => live,
            None => {
                let engine = self.engine.ok_or_else(|| failure(plugin, FailureKind::Trap, "no engine".into()))?;
                instantiate(engine, &plugin.pre, &limits)
                    .map_err(|e| classify(plugin, &e, None, &limits))?
            }
        };
        sandbox::arm_deadline(&mut live.store, &limits);
        match live.bindings.chunk(&mut live.store, path, content) {
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

impl Chunker for PluginHost {
    fn chunk_file(&self, path: &str, content: &str) -> ChunkedFile {
        let mut declined = Vec::new();
        let mut failures = Vec::new();
        for plugin in self.plugins.iter().filter(|p| p.globs.is_match(path)) {
            match self.run(plugin, path, content) {
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
    let trap = e.downcast_ref::<Trap>().copied();
    if trap == Some(Trap::Interrupt) {
        return failure(plugin, FailureKind::Timeout, format!("did not finish within the {:?} call time limit", limits.call_timeout));
    }
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

fn first_line(e: &wasmtime::Error) -> String {
    e.chain().last().map(ToString::to_string).unwrap_or_default().lines().next().unwrap_or_default().to_string()
}

fn instantiate(engine: &Engine, pre: &Pre, limits: &Limits) -> wasmtime::Result<Live> {
    let mut store = sandbox::new_store(engine, limits);
    let bindings = pre.instantiate(&mut store)?;
    Ok(Live { store, bindings })
}

/// Loads `files` on up to one thread per core (deserializing and
/// instantiating is CPU work; compiling on a cold cache even more so). The
/// results are in the order of `files`.
fn load_all(engine: &'static Engine, files: &[(PathBuf, SourceKind)], options: &HostOptions) -> Vec<Result<Plugin, (Option<String>, String)>> {
    let workers = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get).min(files.len());
    if workers <= 1 {
        return files.iter().map(|(path, source)| load_plugin(engine, path, *source, options)).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<Result<Plugin, (Option<String>, String)>>>> = files.iter().map(|_| Mutex::new(None)).collect();
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

/// Loads one plugin file: component (cached), version check, instance, `info`.
fn load_plugin(engine: &'static Engine, path: &Path, source: SourceKind, options: &HostOptions) -> Result<Plugin, (Option<String>, String)> {
    let started = Instant::now();
    let loaded = cache::load(engine, path, options.cache_dir.as_deref()).map_err(|e| (None, e))?;
    let pre = wit::prepare(engine, &loaded.component).map_err(|e| (None, e))?;
    let limits = options.limits;
    let mut live = instantiate(engine, &pre, &limits).map_err(|e| (None, format!("instantiation failed: {}", first_line(&e))))?;
    sandbox::arm_deadline(&mut live.store, &limits);
    let info = match live.bindings.info(&mut live.store) {
        Ok(info) => info,
        Err(e) => {
            let reason = if e.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
                format!("info() did not finish within {:?}", limits.call_timeout)
            } else {
                let stderr = live.store.data().last_stderr_line().map(|s| format!(" ({s})")).unwrap_or_default();
                format!("info() trapped: {}{stderr}", first_line(&e))
            };
            return Err((None, reason));
        }
    };
    let globs = check_info(&info).map_err(|e| (Some(info.name.clone()), e))?;
    let summary = PluginSummary {
        name: info.name,
        version: info.version,
        description: info.description,
        languages: info.languages,
        file_patterns: info.file_patterns,
        priority: info.priority,
        wit_version: pre.version().to_string(),
        path: path.to_path_buf(),
        source,
        from_cache: loaded.from_cache,
        load_ms: started.elapsed().as_secs_f64() * 1000.0,
    };
    tracing::debug!(plugin = %summary.name, path = %path.display(), from_cache = summary.from_cache, load_ms = summary.load_ms, "plugin loaded");
    Ok(Plugin { summary, globs, pre, idle: Mutex::new(vec![live]) })
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
