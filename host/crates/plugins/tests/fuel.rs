//! Fuel decides when a plugin is cut off, so the same file gets the same
//! chunks however busy the machine is: every fixture file through every
//! bundled plugin gives the same outcome and burns the same fuel with every
//! core kept busy as on a quiet machine, and a budget of exactly the fuel a
//! file needs passes while half of it fails, under load too.

#[path = "fuzzing/mod.rs"]
mod fuzzing;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use code_intel_core::FailureKind;
use code_intel_plugins::sandbox::DEFAULT_CALL_FUEL;
use code_intel_plugins::{Attempt, HostOptions, Limits, PluginDir, PluginHost, SourceKind};

/// Busy threads (two per core) spinning until dropped.
struct Load(Arc<AtomicBool>, Vec<std::thread::JoinHandle<()>>);

impl Load {
    fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = 2 * std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        let handles = (0..threads)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let mut x = 1u64;
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..10_000 {
                            x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
                        }
                    }
                })
            })
            .collect();
        Self(stop, handles)
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
        for handle in self.1.drain(..) {
            let _ = handle.join();
        }
    }
}

fn host(limits: Limits) -> PluginHost {
    let dir = fuzzing::profile_dir().join("plugins");
    let host = PluginHost::load_dirs(&[PluginDir { path: dir, kind: SourceKind::BesideBinary }], HostOptions { limits, lazy: false, ..HostOptions::default() });
    assert!(host.rejections().is_empty(), "{:?}", host.rejections());
    host
}

/// Every (plugin, fixture file) in a fresh host, one after the other: the
/// outcome and the fuel burned.
fn run_all() -> Vec<(String, String, Attempt, u64)> {
    let host = host(Limits::default());
    let seeds = fuzzing::seeds_by_plugin(&host);
    let mut out = Vec::new();
    for (plugin, files) in &seeds {
        for seed in files {
            let text = String::from_utf8_lossy(&seed.bytes);
            let (attempt, fuel) = host.attempt_metered(plugin, &seed.path, &text).unwrap();
            out.push((plugin.clone(), seed.path.clone(), attempt, fuel));
        }
    }
    out
}

#[test]
fn the_same_files_get_the_same_chunks_and_fuel_under_cpu_load() {
    let quiet = run_all();
    assert!(quiet.len() > 200, "fixture files through plugins: {}", quiet.len());
    let plugins: std::collections::BTreeSet<&str> = quiet.iter().map(|(p, ..)| p.as_str()).collect();
    assert!(plugins.len() >= 13, "{plugins:?}");
    for (plugin, path, attempt, fuel) in &quiet {
        assert!(!matches!(attempt, Attempt::Failed(_)), "{plugin} on {path}: {attempt:?}");
        // The documented margin: every fixture file needs well under a
        // tenth of the budget.
        assert!(*fuel < DEFAULT_CALL_FUEL / 10, "{plugin} on {path} burned {fuel}");
    }
    let loaded = {
        let _load = Load::start();
        run_all()
    };
    assert_eq!(quiet.len(), loaded.len());
    for (q, l) in quiet.iter().zip(&loaded) {
        assert_eq!(q, l, "{} on {}: a different outcome or fuel under load", q.0, q.1);
    }
}

#[test]
fn exactly_the_fuel_a_file_needs_passes_and_half_of_it_fails_even_under_load() {
    let fresh = |fuel: u64| host(Limits { call_fuel: fuel, ..Limits::default() });
    let seeds = fuzzing::seeds_by_plugin(&fresh(DEFAULT_CALL_FUEL));
    let file = seeds["python"].iter().max_by_key(|s| s.bytes.len()).unwrap();
    let text = String::from_utf8_lossy(&file.bytes);
    let (full, needed) = fresh(DEFAULT_CALL_FUEL).attempt_metered("python", &file.path, &text).unwrap();
    assert!(matches!(&full, Attempt::Chunks(c) if !c.is_empty()), "{full:?}");
    assert!(needed > 100_000, "{needed}");
    let _load = Load::start();
    for _ in 0..3 {
        let (enough, used) = fresh(needed).attempt_metered("python", &file.path, &text).unwrap();
        assert_eq!(enough, full);
        assert_eq!(used, needed);
        // Wasmtime checks fuel at function entries and loop heads, not
        // after every instruction, so the exact cut-off is a few units fuzzy;
        // half is always short.
        let (short, _) = fresh(needed / 2).attempt_metered("python", &file.path, &text).unwrap();
        match short {
            Attempt::Failed(f) => {
                assert_eq!(f.kind, FailureKind::Timeout);
                assert!(f.message.contains(&format!("fuel limit of {} units", needed / 2)), "{}", f.message);
            }
            other => panic!("half the fuel must fail: {other:?}"),
        }
    }
}
