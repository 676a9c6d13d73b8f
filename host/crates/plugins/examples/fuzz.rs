//! The fuzzer, for any duration (see `tests/fuzzing/mod.rs` for what it
//! checks, docs/plugin-host.md "Fuzzing" for how to run it):
//!
//! ```text
//! cargo xtask plugins
//! cargo run --release --example fuzz -- --files-per-plugin 10000 --serve-lines 5000
//! cargo run --release --example fuzz -- --seconds 3600
//! cargo run --release --example fuzz -- --seed 42 --plugin php --case 17   # replay one case
//! ```
//!
//! Options: `--seed N` (default: from the clock, printed), `--seconds N` (stop
//! after this long; cases are shared out over plugins and serve evenly),
//! `--files-per-plugin N` (default 1000), `--serve-lines N` (default 1000),
//! `--plugin NAME` (only this plugin), `--case N` / `--serve-case N` (replay one
//! case), `--threads N` (plugin cases on N threads, default 1), `--no-serve`,
//! `--no-plugins`, `--findings DIR` (default `fuzz-findings`). Exits 1 when
//! anything was found.
//!
//! `--measure DIR` (repeatable; with `--rounds N`) fuzzes nothing: it chunks
//! every file under the directories as the indexer would (at most 1 MiB,
//! plugins by priority) and prints the fuel each plugin burned at most, per
//! byte at most, and the time of each round (`CODE_INTEL_PLUGIN_FUEL=off`
//! measures the same without fuel).

#[path = "../tests/fuzzing/mod.rs"]
mod fuzzing;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use fuzzing::{Findings, PluginStats, ServeStats};

struct Options {
    seed: u64,
    seconds: Option<u64>,
    files_per_plugin: u64,
    serve_lines: u64,
    plugin: Option<String>,
    case: Option<u64>,
    serve_case: Option<u64>,
    threads: usize,
    serve: bool,
    plugins: bool,
    findings: PathBuf,
    measure: Vec<PathBuf>,
    rounds: u32,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        seed: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64),
        seconds: None,
        files_per_plugin: 1000,
        serve_lines: 1000,
        plugin: None,
        case: None,
        serve_case: None,
        threads: 1,
        serve: true,
        plugins: true,
        findings: PathBuf::from("fuzz-findings"),
        measure: Vec::new(),
        rounds: 1,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        let number = |v: String| v.parse::<u64>().map_err(|e| format!("{v}: {e}"));
        match arg.as_str() {
            "--seed" => o.seed = number(value()?)?,
            "--seconds" => o.seconds = Some(number(value()?)?),
            "--files-per-plugin" => o.files_per_plugin = number(value()?)?,
            "--serve-lines" => o.serve_lines = number(value()?)?,
            "--plugin" => o.plugin = Some(value()?),
            "--case" => o.case = Some(number(value()?)?),
            "--serve-case" => o.serve_case = Some(number(value()?)?),
            "--threads" => o.threads = usize::try_from(number(value()?)?).unwrap_or(1).max(1),
            "--no-serve" => o.serve = false,
            "--no-plugins" => o.plugins = false,
            "--findings" => o.findings = PathBuf::from(value()?),
            "--measure" => o.measure.push(PathBuf::from(value()?)),
            "--rounds" => o.rounds = u32::try_from(number(value()?)?).unwrap_or(1).max(1),
            other => return Err(format!("unknown option {other}")),
        }
    }
    if o.seconds.is_some() {
        o.files_per_plugin = u64::MAX;
        o.serve_lines = u64::MAX;
    }
    Ok(o)
}

fn main() -> std::process::ExitCode {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("fuzz: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    if !o.measure.is_empty() {
        measure(&o.measure, o.rounds);
        return std::process::ExitCode::SUCCESS;
    }
    eprintln!("fuzz: seed {} (replay with --seed {}), findings in {}", o.seed, o.seed, o.findings.display());
    let started = Instant::now();
    let stop = o.seconds.map(|s| started + Duration::from_secs(s));
    let findings = Mutex::new(Findings::new(o.findings.clone()));

    let replaying = o.case.is_some() || o.serve_case.is_some();
    let mut plugin_stats = BTreeMap::new();
    if o.plugins && o.serve_case.is_none() {
        let host = fuzzing::bundled_host();
        let seeds = fuzzing::seeds_by_plugin(&host);
        let names: Vec<String> =
            seeds.iter().filter(|(n, s)| !s.is_empty() && o.plugin.as_ref().is_none_or(|p| p == *n)).map(|(n, _)| n.clone()).collect();
        for (name, s) in &seeds {
            if s.is_empty() {
                eprintln!("fuzz: no fixture file matches plugin {name}: not fuzzed");
            }
        }
        let stats: BTreeMap<String, Mutex<PluginStats>> = names.iter().map(|n| (n.clone(), Mutex::new(PluginStats::default()))).collect();
        let cases: Vec<u64> = o.case.map_or_else(Vec::new, |c| vec![c]);
        let next = AtomicU64::new(0);
        // With a time budget, plugins get 90 % of it unless serve is off.
        let plugin_stop = stop.map(|s| if o.serve && !replaying { started + (s - started) * 9 / 10 } else { s });
        std::thread::scope(|scope| {
            for _ in 0..o.threads {
                scope.spawn(|| {
                    let mut local = Findings::new(o.findings.clone());
                    // What this thread is doing, for a crash that takes the
                    // process down (a stack overflow aborts without unwinding).
                    let _ = std::fs::create_dir_all(&o.findings);
                    let doing = o.findings.join(format!("running-{:?}.txt", std::thread::current().id()).replace(['(', ')'], ""));
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let (case, name) = if replaying {
                            let Some(&case) = cases.get(i as usize / names.len().max(1)) else { break };
                            (case, &names[i as usize % names.len()])
                        } else {
                            let case = i / names.len() as u64;
                            if case >= o.files_per_plugin || plugin_stop.is_some_and(|s| Instant::now() >= s) {
                                break;
                            }
                            (case, &names[(i % names.len() as u64) as usize])
                        };
                        let _ = std::fs::write(&doing, format!("--seed {} --plugin {name} --case {case}\n", o.seed));
                        if case > 0 && case % 1000 == 0 && name == &names[0] {
                            eprintln!("fuzz: case {case} of every plugin, {:.0?}", started.elapsed());
                        }
                        let mut s = stats[name].lock().unwrap().clone();
                        let before = s.clone();
                        fuzzing::plugin_case(&host, name, &seeds[name], o.seed, case, &mut s, &mut local);
                        let mut shared = stats[name].lock().unwrap();
                        shared.files += s.files - before.files;
                        shared.bytes += s.bytes - before.bytes;
                        shared.chunks += s.chunks - before.chunks;
                        shared.declined += s.declined - before.declined;
                        shared.errors += s.errors - before.errors;
                        shared.failures += s.failures - before.failures;
                        shared.total += s.total - before.total;
                        shared.max_call = shared.max_call.max(s.max_call);
                        if s.max_fuel > shared.max_fuel {
                            shared.max_fuel = s.max_fuel;
                            shared.max_fuel_bytes = s.max_fuel_bytes;
                        }
                    }
                    let mut all = findings.lock().unwrap();
                    all.count += local.count;
                    for (k, v) in local.by_kind {
                        *all.by_kind.entry(k).or_default() += v;
                    }
                });
            }
        });
        plugin_stats = stats.into_iter().map(|(n, s)| (n, s.into_inner().unwrap())).collect();
        fuzzing::report_plugins(&plugin_stats);
    }

    if o.serve && o.case.is_none() && o.plugin.is_none() {
        let mut server = fuzzing::Server::start();
        let mut stats = ServeStats::default();
        let mut all = findings.lock().unwrap();
        let cases: Box<dyn Iterator<Item = u64>> = match o.serve_case {
            Some(c) => Box::new(std::iter::once(c)),
            None => Box::new(0..o.serve_lines),
        };
        for case in cases {
            if stop.is_some_and(|s| Instant::now() >= s) {
                break;
            }
            if !server.alive() {
                eprintln!("fuzz: the server exited; starting another");
                server = fuzzing::Server::start();
            }
            fuzzing::serve_case(&mut server, o.seed, case, &mut stats, &mut all);
        }
        eprintln!(
            "serve: {} lines ({:.1} MB), {} answers, {} errors, slowest error answer {:?}, largest peak memory growth {:.1} MiB",
            stats.lines,
            stats.bytes as f64 / 1e6,
            stats.answered,
            stats.errors,
            stats.max_error_answer,
            stats.max_growth as f64 / (1024.0 * 1024.0)
        );
    }

    let all = findings.into_inner().unwrap();
    let files: u64 = plugin_stats.values().map(|s| s.files).sum();
    eprintln!("fuzz: {files} plugin files, {:.0?}, seed {}: {} findings {:?}", started.elapsed(), o.seed, all.count, all.by_kind);
    if all.count > 0 { std::process::ExitCode::FAILURE } else { std::process::ExitCode::SUCCESS }
}

/// Chunks every file under `dirs` `rounds` times; prints fuel and time.
fn measure(dirs: &[PathBuf], rounds: u32) {
    fn walk(dir: &std::path::Path, root: &std::path::Path, out: &mut Vec<(String, String)>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "node_modules" || name == "vendor" {
                continue;
            }
            if path.is_dir() {
                walk(&path, root, out);
            } else if let Ok(bytes) = std::fs::read(&path)
                && bytes.len() <= fuzzing::MAX_FILE_BYTES
            {
                let rel = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().replace('\\', "/");
                out.push((rel, String::from_utf8_lossy(&bytes).into_owned()));
            }
        }
    }
    let host = fuzzing::bundled_host();
    let mut files = Vec::new();
    for dir in dirs {
        walk(dir, dir, &mut files);
    }
    let order: Vec<String> = host.plugins().map(|p| p.name.clone()).collect();
    eprintln!("measure: {} files, {:.1} MB, fuel {}", files.len(), files.iter().map(|f| f.1.len()).sum::<usize>() as f64 / 1e6, if code_intel_plugins::sandbox::fuel_enabled() { "on" } else { "off" });
    // plugin -> (files, bytes, max fuel, its file, max fuel per byte, its file)
    let mut per: BTreeMap<String, (u64, u64, u64, String, f64, String)> = BTreeMap::new();
    for round in 0..rounds {
        let started = Instant::now();
        let mut chunked = 0u64;
        for (path, text) in &files {
            for name in order.iter().filter(|n| host.matches(n, path)) {
                let (attempt, fuel) = host.attempt_metered(name, path, text).expect("a loaded plugin");
                if round == 0 {
                    let e = per.entry(name.clone()).or_default();
                    e.0 += 1;
                    e.1 += text.len() as u64;
                    if fuel > e.2 {
                        e.2 = fuel;
                        e.3 = format!("{path} ({} bytes)", text.len());
                    }
                    let per_byte = fuel as f64 / text.len().max(1) as f64;
                    if text.len() >= 4096 && per_byte > e.4 {
                        e.4 = per_byte;
                        e.5 = format!("{path} ({} bytes)", text.len());
                    }
                }
                if !matches!(attempt, code_intel_plugins::Attempt::Decline(_)) {
                    chunked += 1;
                    break;
                }
            }
        }
        eprintln!("round {round}: {chunked} files chunked by a plugin in {:.3} s", started.elapsed().as_secs_f64());
    }
    for (name, (n, bytes, max, file, per_byte, pfile)) in &per {
        eprintln!("{name:<12} {n:>6} files {:>8.1} MB  max fuel {max:>12} {file}  max per byte (files >= 4 KiB) {per_byte:>7.0} {pfile}", *bytes as f64 / 1e6);
    }
}
