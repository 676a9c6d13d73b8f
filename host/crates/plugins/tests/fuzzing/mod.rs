//! The corpus-driven fuzzer shared by `examples/fuzz.rs` (any duration) and
//! `tests/fuzz.rs` (the bounded run of the test suite).
//!
//! Two targets:
//! - **plugins**: files mutated from `fixtures/` (byte flips, truncations,
//!   deep nesting, huge lines, invalid UTF-8, BOMs, CRLF, NULs, long strings,
//!   splices) through every bundled plugin via the host, as the indexer gives
//!   them (lossy UTF-8, at most 1 MiB). A finding is a trap, a timeout (fuel
//!   or wall clock), a memory-limit failure, invalid output, a host panic, or
//!   chunks that are empty for a file that is not blank (a plugin that does
//!   not want a file declines; one that cannot chunk it reports an error;
//!   both are recorded, an empty list is not).
//! - **serve**: JSON-RPC lines mutated from valid requests, written to a
//!   running `code-intel serve`. A finding is a line left unanswered (a request
//!   with a readable id gets a response with that id; a line that is not a
//!   valid request gets an error), an error answered later than 100 ms, an
//!   answer that is not JSON-RPC 2.0, a request that grows the server's peak
//!   memory by more than 64 MiB, output that is not JSON on stdout, or the
//!   server exiting.
//!
//! Every case is generated from (seed, target, case number) alone, so a run is
//! reproducible and a single case can be replayed. Findings are written to a
//! directory with the input bytes and a text file naming the case.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use code_intel_core::FailureKind;
use code_intel_plugins::{Attempt, HostOptions, PluginDir, PluginHost, SourceKind};
use serde_json::{Value, json};

/// Largest file the fuzzer makes: the indexer's default `max_file_bytes`.
pub const MAX_FILE_BYTES: usize = 1024 * 1024;

/// How long an error answer to a malformed line may take.
pub const ERROR_ANSWER_LIMIT: Duration = Duration::from_millis(100);

/// How much one request may grow the server's peak memory.
pub const MEMORY_GROWTH_LIMIT: u64 = 64 * 1024 * 1024;

/// How long any answer may take before the line counts as unanswered.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------- randomness

/// SplitMix64: small, fast, and the same on every platform.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The generator of one case: depends on the run's seed, the target and
    /// the case number only.
    pub fn for_case(seed: u64, target: &str, case: u64) -> Self {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in target.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        let mut rng = Self(seed ^ h.rotate_left(17) ^ case.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        rng.next();
        rng
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    /// Log-uniform in `lo..=hi`: small sizes as often as large ones.
    pub fn size(&mut self, lo: usize, hi: usize) -> usize {
        let (lo, hi) = (lo.max(1) as f64, hi.max(lo.max(1)) as f64);
        let unit = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        (lo * (hi / lo).powf(unit)) as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

// ------------------------------------------------------------------ mutations

const OPENERS: &[(&str, &str)] = &[
    ("(", ")"),
    ("[", "]"),
    ("{", "}"),
    ("<div>", "</div>"),
    ("a{", "}"),
    ("@media print{", "}"),
    ("if (x) {", "}"),
    ("<?php if (1): ?>", "<?php endif; ?>"),
    ("@if(1)", "@endif"),
    ("<template>", "</template>"),
    ("def f():\n", ""),
    ("{\"a\":", "}"),
    ("  ", ""),
];

const TOKENS: &[&str] = &["a", "x = 1; ", "é", "日本語", "😀", "\t", " ", "/*", "*/", "\\", "'", "\"", "`", "{{ ", "}}", "<", "@", "$", "-", "#"];

const INVALID_UTF8: &[&[u8]] =
    &[b"\xFF", b"\xFE", b"\xC0\x80", b"\x80", b"\xC3", b"\xE2\x82", b"\xED\xA0\x80", b"\xF4\x90\x80\x80", b"\xF0\x9F\x98"];

const NON_ASCII: &[&str] = &["é", "€", "日本", "😀", "\u{301}", "\u{200B}", "\u{FEFF}", "ß", "Ω", "\u{2028}"];

/// `seed` mutated one to three times (`other` is another seed to splice
/// from); what was done is appended to `log`.
pub fn mutate(rng: &mut Rng, seed: &[u8], other: &[u8], log: &mut Vec<String>) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    let rounds = 1 + rng.below(3);
    for _ in 0..rounds {
        // The large mutations (deep nesting, huge lines, long strings: up
        // to 512 KiB each) in about one case in ten; they cost the most time.
        let kind = if rng.chance(5) { *rng.pick(&[6, 7, 12]) } else { *rng.pick(&[0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 13, 14, 15, 16]) };
        let at = rng.below(bytes.len() + 1);
        match kind {
            0 | 1 => {
                let n = 1 + rng.below(16);
                for _ in 0..n {
                    if !bytes.is_empty() {
                        let i = rng.below(bytes.len());
                        bytes[i] ^= 1 << rng.below(8);
                    }
                }
                log.push(format!("flip {n} bits"));
            }
            2 => {
                let n = 1 + rng.below(64);
                let insert: Vec<u8> = (0..n).map(|_| *rng.pick(b"{}[]()<>;:,.'\"`\\/*#@$%&|=-+!? \n\tabcxyz0189")).collect();
                bytes.splice(at..at, insert);
                log.push(format!("insert {n} punctuation bytes at {at}"));
            }
            3 => {
                let len = rng.size(1, bytes.len().max(1));
                let end = (at + len).min(bytes.len());
                bytes.drain(at..end);
                log.push(format!("delete {at}..{end}"));
            }
            4 => {
                bytes.truncate(at);
                log.push(format!("truncate at byte {at}"));
            }
            5 => {
                // Keep whole lines only: what a file looks like cut mid-edit.
                let line_end = bytes[..at].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                bytes.truncate(line_end);
                log.push(format!("truncate at line end {line_end}"));
            }
            6 => {
                let (open, close) = *rng.pick(OPENERS);
                let budget = MAX_FILE_BYTES.saturating_sub(bytes.len()).min(400 * 1024);
                let depth = rng.size(10, (budget / (open.len() + close.len()).max(1)).max(10));
                let closed = rng.chance(50);
                let mut insert = open.repeat(depth).into_bytes();
                if closed {
                    insert.extend(close.repeat(depth).into_bytes());
                }
                bytes.splice(at..at, insert);
                log.push(format!("nest {open:?} {depth} deep at {at}{}", if closed { ", closed" } else { "" }));
            }
            7 => {
                let token = *rng.pick(TOKENS);
                let len = rng.size(1_000, 512 * 1024) / token.len().max(1);
                let mut insert = token.repeat(len).into_bytes();
                insert.push(b'\n');
                bytes.splice(at..at, insert);
                log.push(format!("line of {len} x {token:?} at {at}"));
            }
            8 => {
                let n = 1 + rng.below(8);
                for _ in 0..n {
                    let at = rng.below(bytes.len() + 1);
                    bytes.splice(at..at, rng.pick(INVALID_UTF8).iter().copied());
                }
                log.push(format!("{n} invalid UTF-8 sequences"));
            }
            9 => {
                bytes.splice(0..0, b"\xEF\xBB\xBF".iter().copied());
                log.push("BOM".into());
            }
            10 => {
                let lone = rng.chance(30);
                let mut out = Vec::with_capacity(bytes.len() + bytes.len() / 16);
                for &b in &bytes {
                    if b == b'\n' {
                        out.extend_from_slice(if lone { b"\r" } else { b"\r\n" });
                    } else {
                        out.push(b);
                    }
                }
                bytes = out;
                log.push(if lone { "CR line ends".into() } else { "CRLF line ends".into() });
            }
            11 => {
                let n = 1 + rng.below(32);
                for _ in 0..n {
                    let at = rng.below(bytes.len() + 1);
                    bytes.insert(at, 0);
                }
                log.push(format!("{n} NULs"));
            }
            12 => {
                let quote = *rng.pick(&["\"", "'", "`", "\"\"\"", "<<<EOT\n"]);
                let len = rng.size(1_000, 512 * 1024);
                let closed = rng.chance(60);
                let mut insert = quote.as_bytes().to_vec();
                insert.extend(std::iter::repeat_n(b'a', len));
                if closed {
                    insert.extend_from_slice(if quote.starts_with("<<<") { b"\nEOT;\n" } else { quote.as_bytes() });
                }
                bytes.splice(at..at, insert);
                log.push(format!("string {quote:?} of {len}{} at {at}", if closed { "" } else { " unclosed" }));
            }
            13 if !other.is_empty() => {
                let from = rng.below(other.len());
                let len = rng.size(1, other.len() - from);
                bytes.splice(at..at, other[from..from + len].iter().copied());
                log.push(format!("splice {len} bytes of another seed at {at}"));
            }
            14 if !bytes.is_empty() => {
                let from = rng.below(bytes.len());
                let len = rng.size(1, (bytes.len() - from).min(4096));
                let times = rng.size(2, 200);
                let region = bytes[from..from + len].to_vec();
                let insert: Vec<u8> = region.iter().copied().cycle().take(len * times).collect();
                bytes.splice(from..from, insert);
                log.push(format!("repeat {len} bytes at {from} x{times}"));
            }
            _ => {
                let n = 1 + rng.below(16);
                for _ in 0..n {
                    let at = rng.below(bytes.len() + 1);
                    bytes.splice(at..at, rng.pick(NON_ASCII).bytes());
                }
                log.push(format!("{n} non-ASCII characters"));
            }
        }
    }
    if bytes.len() > MAX_FILE_BYTES {
        bytes.truncate(MAX_FILE_BYTES);
        log.push(format!("cut to {MAX_FILE_BYTES} bytes"));
    }
    bytes
}

// ------------------------------------------------------------------ findings

pub struct Findings {
    dir: PathBuf,
    pub count: usize,
    pub by_kind: BTreeMap<String, usize>,
}

impl Findings {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir, count: 0, by_kind: BTreeMap::new() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Records a finding: prints it and saves the input and a description.
    pub fn record(&mut self, target: &str, case: u64, kind: &str, message: &str, input: &[u8], about: &str) {
        self.count += 1;
        *self.by_kind.entry(format!("{target}: {kind}")).or_default() += 1;
        let short: String = message.chars().take(300).collect();
        eprintln!("FINDING {target} case {case}: {kind}: {short}");
        if std::fs::create_dir_all(&self.dir).is_ok() {
            let stem = format!("{target}-{case}-{kind}");
            let _ = std::fs::write(self.dir.join(format!("{stem}.input")), input);
            let _ = std::fs::write(self.dir.join(format!("{stem}.txt")), format!("{about}\n{kind}: {message}\n"));
        }
    }
}

// ------------------------------------------------------------------- plugins

/// A fixture file: its path as the plugin sees it and its bytes.
#[derive(Clone)]
pub struct Seed {
    pub path: String,
    pub bytes: Vec<u8>,
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(3).expect("host/crates/plugins is three levels down").to_path_buf()
}

/// `<target>/release` for this binary (an example in `examples/`, a test in
/// `deps/`).
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("own path");
    exe.ancestors().nth(2).expect("<target>/<profile>/<kind>/<binary>").to_path_buf()
}

/// Every file under `fixtures/` (golden files and dot-directories left out),
/// with its path relative to its fixture directory.
pub fn fixture_files() -> Vec<(Vec<String>, Vec<u8>)> {
    fn walk(dir: &Path, parts: &mut Vec<String>, out: &mut Vec<(Vec<String>, Vec<u8>)>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name.ends_with(".golden.json") {
                continue;
            }
            let path = entry.path();
            parts.push(name);
            if path.is_dir() {
                walk(&path, parts, out);
            } else if let Ok(bytes) = std::fs::read(&path) {
                out.push((parts.clone(), bytes));
            }
            parts.pop();
        }
    }
    let mut out = Vec::new();
    walk(&repo_root().join("fixtures"), &mut Vec::new(), &mut out);
    out
}

/// The bundled plugins, loaded in full from `<target>/release/plugins`.
pub fn bundled_host() -> PluginHost {
    let dir = profile_dir().join("plugins");
    assert!(dir.is_dir(), "{} is missing: build the plugins first with `cargo xtask plugins`", dir.display());
    let host = PluginHost::load_dirs(&[PluginDir { path: dir, kind: SourceKind::BesideBinary }], HostOptions { lazy: false, ..HostOptions::default() });
    assert!(host.rejections().is_empty(), "rejected plugins: {:?}", host.rejections());
    host
}

/// The fixture files each plugin claims, with the shortest repository path
/// (a suffix of the fixture path) its patterns match.
pub fn seeds_by_plugin(host: &PluginHost) -> BTreeMap<String, Vec<Seed>> {
    let files = fixture_files();
    let mut out = BTreeMap::new();
    for plugin in host.plugins() {
        let mut seeds = Vec::new();
        for (parts, bytes) in &files {
            for skip in (0..parts.len()).rev() {
                let path = parts[skip..].join("/");
                if host.matches(&plugin.name, &path) {
                    seeds.push(Seed { path, bytes: bytes.clone() });
                    break;
                }
            }
        }
        out.insert(plugin.name.clone(), seeds);
    }
    out
}

/// Figures of one plugin's run.
#[derive(Default, Debug, Clone)]
pub struct PluginStats {
    pub files: u64,
    pub bytes: u64,
    pub chunks: u64,
    pub declined: u64,
    pub errors: u64,
    pub failures: u64,
    pub max_fuel: u64,
    pub max_fuel_bytes: usize,
    pub max_call: Duration,
    pub total: Duration,
}

/// One plugin case: the mutated file, what the plugin did, whether it is a
/// finding. Panics in the host are caught and are findings.
pub fn plugin_case(
    host: &PluginHost,
    plugin: &str,
    seeds: &[Seed],
    seed: u64,
    case: u64,
    stats: &mut PluginStats,
    findings: &mut Findings,
) {
    let mut rng = Rng::for_case(seed, plugin, case);
    let chosen = rng.pick(seeds).clone();
    let other = rng.pick(seeds).bytes.clone();
    let mut log = Vec::new();
    let bytes = mutate(&mut rng, &chosen.bytes, &other, &mut log);
    let text = String::from_utf8_lossy(&bytes);
    let about = format!(
        "plugin {plugin}, path {}, seed {seed}, case {case}\nreplay: cargo run --release --example fuzz -- --seed {seed} --plugin {plugin} --case {case}\nmutations: {}",
        chosen.path,
        log.join("; ")
    );
    // A crash that takes the process down leaves no finding: with this set,
    // every input is written before it runs (for replaying one case).
    if std::env::var_os("CODE_INTEL_FUZZ_DUMP").is_some() && std::fs::create_dir_all(findings.dir()).is_ok() {
        let _ = std::fs::write(findings.dir().join(format!("{plugin}-{case}.running.input")), &bytes);
    }
    let started = Instant::now();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| host.attempt_metered(plugin, &chosen.path, &text)));
    let elapsed = started.elapsed();
    stats.files += 1;
    stats.bytes += bytes.len() as u64;
    stats.total += elapsed;
    stats.max_call = stats.max_call.max(elapsed);
    let (attempt, fuel) = match outcome {
        Ok(Some(found)) => found,
        Ok(None) => panic!("no plugin named {plugin}"),
        Err(panic) => {
            let message = panic.downcast_ref::<String>().cloned().or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_string()));
            findings.record(plugin, case, "host-panic", &message.unwrap_or_default(), &bytes, &about);
            return;
        }
    };
    if fuel > stats.max_fuel {
        stats.max_fuel = fuel;
        stats.max_fuel_bytes = bytes.len();
    }
    let valid = std::str::from_utf8(&bytes).is_ok();
    match attempt {
        Attempt::Chunks(chunks) => {
            if chunks.is_empty() && !text.trim().is_empty() {
                findings.record(plugin, case, "silent-empty", "no chunks, no failure, no decline for a file that is not blank", &bytes, &about);
            }
            stats.chunks += chunks.len() as u64;
        }
        Attempt::Decline(_) => stats.declined += 1,
        Attempt::Error { .. } => stats.errors += 1,
        Attempt::Failed(f) => {
            stats.failures += 1;
            let kind = match f.kind {
                FailureKind::Trap if valid => "trap",
                FailureKind::Trap => "trap-invalid-utf8",
                FailureKind::Timeout => "timeout",
                FailureKind::MemoryLimit => "memory-limit",
                FailureKind::InvalidOutput => "invalid-output",
                FailureKind::PluginError => "plugin-error",
            };
            findings.record(plugin, case, kind, &f.message, &bytes, &about);
        }
    }
}

// --------------------------------------------------------------------- serve

/// A running `code-intel serve` on a copy of `fixtures/mini-repo`.
pub struct Server {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<(Instant, Result<Value, String>)>,
    _repo: tempfile::TempDir,
    pub tools: Vec<(String, Value)>,
    next_sentinel: u64,
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

pub fn server_binary() -> PathBuf {
    std::env::var_os("CODE_INTEL_BIN").map_or_else(|| profile_dir().join("code-intel"), PathBuf::from)
}

impl Server {
    pub fn start() -> Self {
        let bin = server_binary();
        assert!(bin.is_file(), "{} is missing: build it with `cargo test --release --workspace --no-run`", bin.display());
        let repo = tempfile::tempdir().expect("temporary repository");
        copy_dir(&repo_root().join("fixtures/mini-repo"), repo.path()).expect("copy of fixtures/mini-repo");
        let mut child = Command::new(&bin)
            .args(["serve", "--repo"])
            .arg(repo.path())
            .env("CODE_INTEL_OFFLINE", "1")
            .env("CODE_INTEL_LOG", "error")
            .env_remove("CODE_INTEL_MODEL_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("code-intel serve starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = Vec::new();
            loop {
                line.clear();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let parsed = serde_json::from_slice::<Value>(&line).map_err(|_| String::from_utf8_lossy(&line).into_owned());
                        if send.send((Instant::now(), parsed)).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let mut server = Self { child, stdin, lines, _repo: repo, tools: Vec::new(), next_sentinel: 0 };
        server.write(&serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "0"}}})).unwrap());
        server.wait_for_id(&json!("init"), Duration::from_secs(30)).expect("initialize is answered");
        server.write(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        server.write(br#"{"jsonrpc":"2.0","id":"tools","method":"tools/list"}"#);
        let tools = server.wait_for_id(&json!("tools"), Duration::from_secs(30)).expect("tools/list is answered");
        server.tools = tools["result"]["tools"]
            .as_array()
            .map(|t| t.iter().map(|t| (t["name"].as_str().unwrap_or_default().to_string(), t["inputSchema"].clone())).collect())
            .unwrap_or_default();
        server
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn write(&mut self, line: &[u8]) {
        let _ = self.stdin.write_all(line);
        let _ = self.stdin.write_all(b"\n");
        let _ = self.stdin.flush();
    }

    fn wait_for_id(&mut self, id: &Value, timeout: Duration) -> Option<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            match self.lines.recv_timeout(left) {
                Ok((_, Ok(message))) if message.get("id") == Some(id) && message.get("method").is_none() => return Some(message),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }

    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A field of `/proc/PID/status` in bytes (`VmRSS`, `VmHWM`).
fn proc_status_bytes(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Resets the peak resident size (`VmHWM`) to the current one.
fn reset_peak(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}

/// A sample value for a JSON schema property.
fn sample(schema: &Value, rng: &mut Rng) -> Value {
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => json!(*rng.pick(&["main", "src/app.py", "User", "def", "how are users saved", "."])),
        Some("integer" | "number") => json!(rng.below(20)),
        Some("boolean") => json!(rng.chance(50)),
        Some("array") => json!([*rng.pick(&["src", "User", "a.py"])]),
        Some("object") => json!({}),
        _ => json!("x"),
    }
}

/// A valid request (or notification) to mutate.
fn seed_request(rng: &mut Rng, tools: &[(String, Value)], id: u64) -> Value {
    match rng.below(10) {
        0 => json!({"jsonrpc": "2.0", "id": id, "method": "ping"}),
        1 => json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}),
        2 => json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "x"}}),
        3 => json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "0"}}}),
        4 => json!({"jsonrpc": "2.0", "id": id, "method": *rng.pick(&["resources/list", "prompts/list", "nope", "", "completion/complete"])}),
        _ if !tools.is_empty() => {
            let (name, schema) = rng.pick(tools).clone();
            let mut arguments = serde_json::Map::new();
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                let required: Vec<&str> =
                    schema.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
                for (key, property) in properties {
                    if required.contains(&key.as_str()) || rng.chance(30) {
                        arguments.insert(key.clone(), sample(property, rng));
                    }
                }
            }
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
        }
        _ => json!({"jsonrpc": "2.0", "id": id, "method": "ping"}),
    }
}

/// A JSON-RPC line mutated from a valid request. Never contains `\n` (one
/// line is one case).
pub fn mutate_line(rng: &mut Rng, tools: &[(String, Value)], id: u64, log: &mut Vec<String>) -> Vec<u8> {
    let mut request = seed_request(rng, tools, id);
    log.push(format!("seed {request}"));
    // Structural mutations on the value.
    if rng.chance(40) {
        let what = rng.below(9);
        let obj = request.as_object_mut().expect("an object");
        match what {
            0 => {
                obj.insert("id".into(), rng.pick(&[json!(null), json!({"a": 1}), json!([1]), json!(1.5), json!(true), json!(u64::MAX), json!(-1), json!("")]).clone());
            }
            1 => {
                obj.remove("jsonrpc");
            }
            2 => {
                obj.insert("jsonrpc".into(), json!(*rng.pick(&["1.0", "2", "", "2.0 "])));
            }
            3 => {
                obj.insert("params".into(), rng.pick(&[json!(null), json!([1, 2]), json!("x"), json!(3), json!({"name": 5}), json!({"name": "search", "arguments": "x"})]).clone());
            }
            4 => {
                obj.insert("method".into(), rng.pick(&[json!(null), json!(5), json!("tools/call"), json!("x".repeat(10_000))]).clone());
            }
            5 => {
                let len = rng.size(1_000, 3 * 1024 * 1024);
                obj.insert("extra".into(), json!("é".repeat(len / 2)));
            }
            6 => {
                let arguments = obj.get_mut("params").and_then(|p| p.get_mut("arguments")).and_then(Value::as_object_mut);
                if let Some(arguments) = arguments {
                    let len = rng.size(1_000, 2 * 1024 * 1024);
                    if let Some(key) = arguments.keys().next().cloned() {
                        arguments.insert(key, json!("a".repeat(len)));
                    }
                }
            }
            7 => {
                request = json!([request.clone(), request]);
            }
            _ => {
                obj.remove("method");
            }
        }
        log.push(format!("structural {what}"));
    }
    let mut bytes = serde_json::to_vec(&request).expect("serializable");
    // Byte-level mutations on the line.
    if rng.chance(70) {
        let rounds = 1 + rng.below(2);
        for _ in 0..rounds {
            let at = rng.below(bytes.len() + 1);
            match rng.below(12) {
                0 | 1 => {
                    for _ in 0..1 + rng.below(4) {
                        if !bytes.is_empty() {
                            let i = rng.below(bytes.len());
                            bytes[i] ^= 1 << rng.below(8);
                        }
                    }
                    log.push("flip bits".into());
                }
                2 => {
                    bytes.truncate(at);
                    log.push(format!("truncate at {at}"));
                }
                3 => {
                    let depth = rng.size(10, 200_000);
                    let open = *rng.pick(&["[", "{\"a\":"]);
                    let nested = open.repeat(depth);
                    bytes.splice(at..at, nested.into_bytes());
                    log.push(format!("nest {open} {depth} deep at {at}"));
                }
                4 => {
                    bytes.splice(at..at, rng.pick(INVALID_UTF8).iter().copied());
                    log.push(format!("invalid UTF-8 at {at}"));
                }
                5 => {
                    let escape = *rng.pick(&["\\ud800", "\\udfff", "\\ud800\\u0041", "\\u0000", "\\x", "\\"]);
                    // Inside the first string value after `at`, where it means something.
                    let quote = bytes[at..].iter().position(|&b| b == b'"').map_or(at, |p| at + p + 1);
                    bytes.splice(quote..quote, escape.bytes());
                    log.push(format!("escape {escape} at {quote}"));
                }
                6 => {
                    bytes.splice(0..0, b"\xEF\xBB\xBF".iter().copied());
                    log.push("BOM".into());
                }
                7 => {
                    bytes.push(b'\r');
                    log.push("CR before the newline".into());
                }
                8 => {
                    bytes.insert(at, 0);
                    log.push(format!("NUL at {at}"));
                }
                9 => {
                    let n = 1 + rng.below(8);
                    let insert: Vec<u8> = (0..n).map(|_| *rng.pick(b"{}[],:\" 0123456789-eE.tfn\\")).collect();
                    bytes.splice(at..at, insert);
                    log.push(format!("insert {n} JSON bytes at {at}"));
                }
                10 => {
                    let len = rng.size(1, bytes.len().max(1));
                    let end = (at + len).min(bytes.len());
                    bytes.drain(at..end);
                    log.push(format!("delete {at}..{end}"));
                }
                _ => {
                    bytes = b"   ".to_vec();
                    log.push("blank line".into());
                }
            }
        }
    }
    for b in &mut bytes {
        if *b == b'\n' {
            *b = b' ';
        }
    }
    bytes
}

/// What a line must get back.
#[derive(Debug, PartialEq)]
enum Expect {
    /// A response with this id (a result or an error).
    Response(Value),
    /// An error, with this id or `null` (`None`: with any id).
    Error(Option<Value>),
    /// Nothing (a notification); an error with a `null` id is allowed too.
    Nothing,
}

fn expectation(line: &[u8]) -> Expect {
    // A byte order mark may be ignored (RFC 8259); a line that is blank is
    // no message at all.
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Expect::Nothing;
    }
    // Unparseable here (`serde_json` refuses lone surrogate escapes, which
    // the server reads past): an error with any id.
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        return Expect::Error(None);
    };
    let Some(obj) = value.as_object() else { return Expect::Error(Some(Value::Null)) };
    let id = obj.get("id").filter(|id| id.is_string() || id.is_number()).cloned();
    let method_ok = obj.get("method").is_some_and(Value::is_string);
    let version_ok = obj.get("jsonrpc") == Some(&json!("2.0"));
    match (id, method_ok && version_ok) {
        (Some(id), true) => Expect::Response(id),
        (id, false) => Expect::Error(Some(id.unwrap_or(Value::Null))),
        (None, true) if obj.contains_key("id") => Expect::Error(Some(Value::Null)),
        (None, true) => Expect::Nothing,
    }
}

fn is_jsonrpc_response(message: &Value) -> bool {
    let Some(obj) = message.as_object() else { return false };
    obj.get("jsonrpc") == Some(&json!("2.0"))
        && obj.contains_key("id")
        && (obj.contains_key("result") ^ obj.contains_key("error"))
        && obj.get("error").is_none_or(|e| e.get("code").is_some_and(Value::is_i64) && e.get("message").is_some_and(Value::is_string))
}

#[derive(Default, Debug, Clone)]
pub struct ServeStats {
    pub lines: u64,
    pub bytes: u64,
    pub answered: u64,
    pub errors: u64,
    pub max_error_answer: Duration,
    pub max_growth: u64,
}

/// One serve case: a mutated line, then a `ping` sentinel; everything that
/// arrives before the sentinel's answer (and the line's own answer, when
/// it is a request) belongs to the line.
pub fn serve_case(server: &mut Server, seed: u64, case: u64, stats: &mut ServeStats, findings: &mut Findings) {
    let mut rng = Rng::for_case(seed, "serve", case);
    let mut log = Vec::new();
    let line = mutate_line(&mut rng, &server.tools.clone(), 1_000_000 + case, &mut log);
    let about = format!(
        "serve, seed {seed}, case {case}\nreplay: cargo run --release --example fuzz -- --seed {seed} --serve-case {case}\nmutations: {}",
        log.join("; ")
    );
    let expect = expectation(&line);
    let pid = server.pid();
    let measured = reset_peak(pid);
    let before = proc_status_bytes(pid, "VmRSS").unwrap_or(0);
    let written = Instant::now();
    server.write(&line);
    server.next_sentinel += 1;
    let sentinel = json!(format!("sentinel-{}", server.next_sentinel));
    server.write(&serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": sentinel, "method": "ping"})).unwrap());
    stats.lines += 1;
    stats.bytes += line.len() as u64;

    let deadline = written + ANSWER_TIMEOUT;
    let mut sentinel_seen = false;
    let mut answers: Vec<(Duration, Value)> = Vec::new();
    let wanted_id = match &expect {
        Expect::Response(id) => Some(id.clone()),
        _ => None,
    };
    let fail = |kind: &str, message: String, findings: &mut Findings| findings.record("serve", case, kind, &message, &line, &about);
    loop {
        let own_seen = wanted_id.as_ref().is_none_or(|id| answers.iter().any(|(_, a)| a.get("id") == Some(id)));
        if sentinel_seen && own_seen {
            break;
        }
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            fail("unanswered", format!("no answer within {ANSWER_TIMEOUT:?} (expected {expect:?}; got {answers:?})"), findings);
            return;
        };
        match server.lines.recv_timeout(left) {
            Ok((at, Ok(message))) => {
                if message.get("method").is_some() {
                    continue; // a request or notification from the server
                }
                if message.get("id") == Some(&sentinel) {
                    sentinel_seen = true;
                    continue;
                }
                if !is_jsonrpc_response(&message) {
                    fail("not-jsonrpc", format!("{message}"), findings);
                }
                answers.push((at.duration_since(written), message));
            }
            Ok((_, Err(text))) => {
                fail("stdout-garbage", text.chars().take(200).collect(), findings);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                fail("server-exit", "the server closed stdout".into(), findings);
                return;
            }
        }
    }
    stats.answered += answers.len() as u64;
    match &expect {
        Expect::Response(_) => {
            if answers.len() != 1 {
                fail("answers", format!("expected one response with the request's id, got {answers:?}"), findings);
            }
        }
        Expect::Error(id) => match answers.as_slice() {
            [(_, answer)] if answer.get("error").is_some() => {
                let answer_id = answer.get("id").cloned().unwrap_or(Value::Null);
                if id.is_some() && answer_id != Value::Null && Some(&answer_id) != id.as_ref() {
                    fail("answers", format!("error with id {answer_id}, expected null or {id:?}"), findings);
                }
            }
            _ => fail("answers", format!("expected one error, got {answers:?}"), findings),
        },
        Expect::Nothing => {
            if answers.len() > 1 || answers.iter().any(|(_, a)| a.get("id") != Some(&Value::Null) || a.get("error").is_none()) {
                fail("answers", format!("a notification was answered: {answers:?}"), findings);
            }
        }
    }
    let mut slow = None;
    for (took, answer) in &answers {
        if answer.get("error").is_some() {
            stats.errors += 1;
            stats.max_error_answer = stats.max_error_answer.max(*took);
            if *took > ERROR_ANSWER_LIMIT {
                slow = Some(format!("error answered after {took:?}: {answer}"));
            }
        }
    }
    // A loaded machine can hold up any one answer: a slow error is a finding
    // when the same line is slow again.
    if let Some(first) = slow
        && let Some(again) = error_time(server, &line)
        && again > ERROR_ANSWER_LIMIT
    {
        fail("slow-error", format!("{first}; sent again, answered after {again:?}"), findings);
    }
    if measured {
        let peak = proc_status_bytes(pid, "VmHWM").unwrap_or(0);
        let growth = peak.saturating_sub(before);
        stats.max_growth = stats.max_growth.max(growth);
        if growth > MEMORY_GROWTH_LIMIT {
            fail("memory", format!("peak memory grew by {} MiB", growth / (1024 * 1024)), findings);
        }
    }
    if !server.alive() {
        fail("server-exit", "the server exited".into(), findings);
    }
}

/// Sends `line` again and times its first error answer (with a `ping` after
/// it, as in [`serve_case`]).
fn error_time(server: &mut Server, line: &[u8]) -> Option<Duration> {
    let written = Instant::now();
    server.write(line);
    server.next_sentinel += 1;
    let sentinel = json!(format!("sentinel-{}", server.next_sentinel));
    server.write(&serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": sentinel, "method": "ping"})).unwrap());
    let mut took = None;
    while let Ok((at, message)) = server.lines.recv_timeout(ANSWER_TIMEOUT) {
        let Ok(message) = message else { continue };
        if message.get("id") == Some(&sentinel) {
            return took;
        }
        if message.get("error").is_some() && took.is_none() {
            took = Some(at.duration_since(written));
        }
    }
    took
}

pub fn report_plugins(stats: &BTreeMap<String, PluginStats>) {
    eprintln!("{:<12} {:>7} {:>9} {:>8} {:>8} {:>7} {:>8} {:>14} {:>10} {:>10}", "plugin", "files", "MB", "chunks", "declined", "errors", "failures", "max fuel", "(bytes)", "max call");
    for (name, s) in stats {
        eprintln!(
            "{:<12} {:>7} {:>9.1} {:>8} {:>8} {:>7} {:>8} {:>14} {:>10} {:>9.0?}",
            name,
            s.files,
            s.bytes as f64 / 1e6,
            s.chunks,
            s.declined,
            s.errors,
            s.failures,
            s.max_fuel,
            s.max_fuel_bytes,
            s.max_call
        );
    }
}
