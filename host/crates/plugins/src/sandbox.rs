//! The sandbox every plugin runs in: one wasmtime [`Engine`] for the process,
//! fuel as each call's budget, an epoch ticker as the wall-clock backstop for
//! true hangs, and the per-store state (an empty WASI context, memory limits,
//! the trees a plugin holds, the host work a call has left).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use wasmtime::component::ResourceTable;
use wasmtime::{Config, Engine, ResourceLimiter, Store, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{Deterministic, WasiCtx, WasiCtxView, WasiView};

/// Fuel one plugin call (`info` or `chunk` on one file) may burn: wasmtime
/// counts about one unit per WebAssembly instruction the plugin executes, so
/// whether a call finishes depends on the file and the plugin only, never on
/// how busy the machine is (a wall-clock deadline chunked the same file by
/// its plugin in one run and by lines in another). The most any bundled
/// plugin burned on the 7,367 files of the fixtures and of four real
/// repositories (pelican, starlette, koel, bookstack) was 192 million units
/// (css on a 613 KB stylesheet; at most 650 units per byte on any file of
/// 4 KiB or more). Ten billion is 52 times that, and 15 times what the worst
/// rate would burn on a 1 MiB file, the indexer's size cap. A plugin runs
/// about 1.8 billion units a second, so a plugin that loops is stopped after
/// about 5 s of work, the same work on every machine.
pub const DEFAULT_CALL_FUEL: u64 = 10_000_000_000;

/// Host work one plugin call may ask for: bytes of source the `syntax`
/// import parses, walks into node tables or queries, summed over the call.
/// Host work burns no fuel (it runs natively), so without this a plugin
/// that parsed its file in a loop would only be stopped by the wall clock.
/// A plugin parses a file once or twice and walks or queries each tree once
/// or twice (Vue parses each script block again): about 4x the file. 256 MiB
/// is 64 times that for a 1 MiB file, and still lets a plugin parse and walk
/// the largest source the service accepts (16 MiB) several times.
pub const MAX_HOST_WORK_BYTES: u64 = 256 * 1024 * 1024;

/// Wall-clock backstop for one call, host parsing included: only for true
/// hangs that fuel cannot see (a host parse or query that never ends, a
/// plugin stuck in host code). Fuel decides when a working plugin is cut
/// off; this is ten times the two seconds that used to be the deadline, so
/// load on the machine never reaches it for a plugin within its fuel.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(20);

/// Timeouts (fuel or wall clock) in a row after which the host stops calling a plugin for the
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

/// What a plugin's WASI randomness returns, over and over: fixed, so that
/// plugins are deterministic (see [`new_store`]). 64 bytes of SplitMix64
/// output; a plugin is not a place for secrets.
const RANDOM_BYTES: [u8; 64] = {
    let mut out = [0u8; 64];
    let mut state: u64 = 0x0C0D_E1A7_E11A_0022;
    let mut i = 0;
    while i < 8 {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let bytes = z.to_le_bytes();
        let mut j = 0;
        while j < 8 {
            out[i * 8 + j] = bytes[j];
            j += 1;
        }
        i += 1;
    }
    out
};

/// What a plugin writes to stderr is kept (up to this many bytes) so that a
/// panic message can be shown with the trap it caused. Stdout is discarded.
pub const STDERR_CAPTURE_BYTES: usize = 16 * 1024;

/// Tunable sandbox limits. [`Default`] gives the documented constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Fuel for each call into a plugin: the budget that decides.
    pub call_fuel: u64,
    /// Wall-clock backstop for each call into a plugin.
    pub call_timeout: Duration,
    /// Maximum size of each linear memory of an instance, in bytes.
    pub memory_limit: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self { call_fuel: DEFAULT_CALL_FUEL, call_timeout: DEFAULT_CALL_TIMEOUT, memory_limit: DEFAULT_MEMORY_LIMIT }
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
            config.consume_fuel(fuel_enabled());
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

/// Environment variable that turns fuel off when set to `off`, leaving only
/// the wall-clock backstop: for measuring what counting fuel costs
/// (docs/plugin-host.md, "Fuel"), never for normal use.
pub const FUEL_ENV: &str = "CODE_INTEL_PLUGIN_FUEL";

/// Whether the engine counts fuel (always, unless [`FUEL_ENV`] is `off`).
pub fn fuel_enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| std::env::var_os(FUEL_ENV).is_none_or(|v| v != "off"))
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
    /// Bytes of host work ([`MAX_HOST_WORK_BYTES`]) the current call has left.
    pub(crate) host_work_left: u64,
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
    // The same bytes for every instance: a plugin's hash maps (std seeds
    // them from WASI randomness) then iterate, and burn fuel, the same way on
    // every run, so its chunks and whether it finishes depend on the file
    // alone.
    wasi.secure_random(Deterministic::new(RANDOM_BYTES.to_vec()))
        .insecure_random(Deterministic::new(RANDOM_BYTES.to_vec()))
        .insecure_random_seed(u128::from_le_bytes(RANDOM_BYTES[..16].try_into().unwrap_or_default()));
    let state = PluginState {
        wasi: wasi.build(),
        table: ResourceTable::new(),
        limiter: Limiter {
            inner: StoreLimitsBuilder::new().memory_size(limits.memory_limit).trap_on_grow_failure(true).build(),
            memory_exceeded: false,
        },
        deadline: Instant::now() + limits.call_timeout,
        host_work_left: MAX_HOST_WORK_BYTES,
        live_trees: 0,
        stderr,
    };
    let mut store = Store::new(engine, state);
    store.limiter(|state| &mut state.limiter);
    store.epoch_deadline_trap();
    arm_deadline(&mut store, limits);
    store
}

/// Arms the budget for one call: fresh fuel, fresh host work, and the
/// wall-clock backstop.
pub(crate) fn arm_deadline(store: &mut Store<PluginState>, limits: &Limits) {
    store.data_mut().deadline = Instant::now() + limits.call_timeout;
    store.data_mut().host_work_left = MAX_HOST_WORK_BYTES;
    store.set_epoch_deadline(limits.deadline_ticks());
    // Fails only when fuel is off in the engine (`FUEL_ENV`).
    let _ = store.set_fuel(limits.call_fuel);
}

/// Fuel the call armed by [`arm_deadline`] has burned so far (0 with fuel
/// off).
pub(crate) fn fuel_used(store: &Store<PluginState>, limits: &Limits) -> u64 {
    store.get_fuel().map_or(0, |left| limits.call_fuel.saturating_sub(left))
}

/// The error a host function returns (a trap ending the call) when the call
/// has used up its [`MAX_HOST_WORK_BYTES`].
#[derive(Debug)]
pub(crate) struct HostWorkExhausted;

impl std::fmt::Display for HostWorkExhausted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the call asked the host to parse, walk or query more than {} MiB of source", MAX_HOST_WORK_BYTES / (1024 * 1024))
    }
}

impl std::error::Error for HostWorkExhausted {}

impl PluginState {
    /// Charges `bytes` of host work to the current call; a trap once the
    /// call has used up [`MAX_HOST_WORK_BYTES`].
    pub(crate) fn charge_host_work(&mut self, bytes: usize) -> wasmtime::Result<()> {
        let bytes = u64::try_from(bytes).unwrap_or(u64::MAX);
        match self.host_work_left.checked_sub(bytes) {
            Some(left) => {
                self.host_work_left = left;
                Ok(())
            }
            None => {
                self.host_work_left = 0;
                Err(wasmtime::Error::new(HostWorkExhausted))
            }
        }
    }
}
