//! The sandbox every plugin runs in: one wasmtime [`Engine`] for the process,
//! an epoch ticker for per-call deadlines, and the per-store state (an empty
//! WASI context, memory limits, the trees a plugin holds).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use wasmtime::component::ResourceTable;
use wasmtime::{Config, Engine, ResourceLimiter, Store, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// Time one plugin call (`info` or `chunk` on one file) may take, host
/// parsing included. The python and php plugins chunk a 1 MiB file in well
/// under 200 ms; two seconds stops runaway loops without cutting off large
/// real files on a slow, busy machine.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(2);

/// Timeouts in a row after which the host stops calling a plugin for the
/// rest of an index run (its circuit breaker): the files it matches get line
/// chunks at once, each with a recorded failure saying so. A plugin that
/// loops costs its whole call time limit on every file (83 files, 87 s);
/// three in a row, with no call of it finishing in between, is a plugin
/// that loops or is far too slow, while one or two can be a large file on a
/// busy machine. The next run (`sync_index`, `code-intel index`) calls it
/// again.
pub const MAX_CONSECUTIVE_TIMEOUTS: u32 = 3;

/// Largest linear memory a plugin instance may grow to. A plugin holds one
/// file (the indexer's default cap is 1 MiB), its query results and its
/// chunks; 256 MiB is ample for that and bounds what a memory bomb can take
/// from the host, times the number of worker threads.
pub const DEFAULT_MEMORY_LIMIT: usize = 256 * 1024 * 1024;

/// How often the engine's epoch advances. Deadlines are rounded up to whole
/// ticks, so this is the precision of the call timeout; 10 ms costs nothing
/// measurable (one atomic increment) and keeps a timeout within 1% of 1 s.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Trees a plugin may hold at once. Each is roughly ten times its source in
/// host memory, outside the plugin's own memory limit; a plugin needs one or
/// two per file, so 32 only stops a plugin that never drops its trees.
pub const MAX_LIVE_TREES: usize = 32;

/// What a plugin writes to stderr is kept (up to this many bytes) so that a
/// panic message can be shown with the trap it caused. Stdout is discarded.
const STDERR_CAPTURE_BYTES: usize = 16 * 1024;

/// Tunable sandbox limits. [`Default`] gives the documented constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Deadline for each call into a plugin.
    pub call_timeout: Duration,
    /// Maximum size of each linear memory of an instance, in bytes.
    pub memory_limit: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self { call_timeout: DEFAULT_CALL_TIMEOUT, memory_limit: DEFAULT_MEMORY_LIMIT }
    }
}

impl Limits {
    /// Epoch ticks corresponding to [`Limits::call_timeout`], rounded up,
    /// plus one because the current tick may be about to end.
    pub(crate) fn deadline_ticks(&self) -> u64 {
        let tick = EPOCH_TICK.as_nanos().max(1);
        let ticks = self.call_timeout.as_nanos().div_ceil(tick);
        u64::try_from(ticks).unwrap_or(u64::MAX - 1).saturating_add(1)
    }
}

/// The process-wide engine. All plugins share it (and its compiled code
/// cache key); a background thread advances its epoch every [`EPOCH_TICK`].
///
/// # Errors
/// Only if wasmtime rejects the configuration, which would be a build defect;
/// the message is kept so every caller can report it.
pub(crate) fn engine() -> Result<&'static Engine, String> {
    static ENGINE: OnceLock<Result<Engine, String>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let mut config = Config::new();
            config.wasm_component_model(true);
            config.epoch_interruption(true);
            // `perf record` can name plugin functions only if the JIT tells
            // it where they are (docs/writing-a-plugin.md, "Profiling").
            if std::env::var_os("CODE_INTEL_PLUGIN_PROFILER").is_some_and(|v| v == "perfmap") {
                config.profiler(wasmtime::ProfilingStrategy::PerfMap);
            }
            let engine = Engine::new(&config).map_err(|e| format!("could not create the WebAssembly engine: {e:#}"))?;
            let weak = engine.weak();
            std::thread::Builder::new()
                .name("code-intel-epoch".into())
                .spawn(move || {
                    loop {
                        std::thread::sleep(EPOCH_TICK);
                        match weak.upgrade() {
                            Some(engine) => engine.increment_epoch(),
                            None => break,
                        }
                    }
                })
                .map_err(|e| format!("could not start the plugin deadline thread: {e}"))?;
            Ok(engine)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// A [`StoreLimits`] that also remembers whether a growth was refused, so a
/// trap after it can be reported as a memory-limit failure.
pub(crate) struct Limiter {
    inner: StoreLimits,
    pub(crate) memory_exceeded: bool,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let result = self.inner.memory_growing(current, desired, maximum);
        if !matches!(result, Ok(true)) {
            self.memory_exceeded = true;
        }
        result
    }

    fn table_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let result = self.inner.table_growing(current, desired, maximum);
        if !matches!(result, Ok(true)) {
            self.memory_exceeded = true;
        }
        result
    }

    fn instances(&self) -> usize {
        self.inner.instances()
    }

    fn tables(&self) -> usize {
        self.inner.tables()
    }

    fn memories(&self) -> usize {
        self.inner.memories()
    }
}

/// Everything a plugin's store holds.
pub(crate) struct PluginState {
    wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: Limiter,
    /// When the current call must end; host parsing and queries stop here too
    /// (epoch interruption only reaches code running inside the plugin).
    pub(crate) deadline: Instant,
    pub(crate) live_trees: usize,
    stderr: MemoryOutputPipe,
}

impl WasiView for PluginState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl PluginState {
    /// The plugin's last words on stderr: a Rust panic's `panicked at FILE:LINE:`
    /// line and message when there is one, else the last line written.
    pub(crate) fn last_stderr_line(&self) -> Option<String> {
        let bytes = self.stderr.contents();
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> =
            text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("note: run with")).collect();
        match lines.iter().rposition(|l| l.contains("panicked at")) {
            Some(i) => Some(lines[i..].iter().take(3).copied().collect::<Vec<_>>().join(" ")),
            None => lines.last().map(|l| (*l).to_string()),
        }
    }
}

/// A fresh store: no preopened directories, no environment variables, no
/// arguments, no sockets, closed stdin, discarded stdout, captured stderr.
pub(crate) fn new_store(engine: &Engine, limits: &Limits) -> Store<PluginState> {
    let stderr = MemoryOutputPipe::new(STDERR_CAPTURE_BYTES);
    let mut wasi = WasiCtx::builder();
    wasi.stderr(stderr.clone()).allow_tcp(false).allow_udp(false).allow_ip_name_lookup(false);
    let state = PluginState {
        wasi: wasi.build(),
        table: ResourceTable::new(),
        limiter: Limiter {
            inner: StoreLimitsBuilder::new().memory_size(limits.memory_limit).trap_on_grow_failure(true).build(),
            memory_exceeded: false,
        },
        deadline: Instant::now() + limits.call_timeout,
        live_trees: 0,
        stderr,
    };
    let mut store = Store::new(engine, state);
    store.limiter(|state| &mut state.limiter);
    store.epoch_deadline_trap();
    store.set_epoch_deadline(limits.deadline_ticks());
    store
}

/// Arms the deadline for one call.
pub(crate) fn arm_deadline(store: &mut Store<PluginState>, limits: &Limits) {
    store.data_mut().deadline = Instant::now() + limits.call_timeout;
    store.set_epoch_deadline(limits.deadline_ticks());
}
