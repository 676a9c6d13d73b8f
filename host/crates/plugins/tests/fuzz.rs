//! The fuzzer's bounded run in the test suite (`tests/fuzzing/mod.rs` says
//! what it checks; `examples/fuzz.rs` runs it for any duration): mutated
//! fixture files through every bundled plugin and mutated JSON-RPC lines
//! through `code-intel serve`. A fixed seed, so the suite is reproducible;
//! `CODE_INTEL_FUZZ_SEED`, `CODE_INTEL_FUZZ_FILES` (per plugin) and
//! `CODE_INTEL_FUZZ_LINES` change it. Every finding fails the test, its
//! input saved under `<target>/fuzz-findings/`.

#[path = "fuzzing/mod.rs"]
mod fuzzing;

use std::collections::BTreeMap;

use fuzzing::{Findings, PluginStats, ServeStats};

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn findings_dir(seed: u64) -> std::path::PathBuf {
    fuzzing::profile_dir().parent().expect("<target>").join("fuzz-findings").join(seed.to_string())
}

#[test]
fn mutated_files_through_every_plugin() {
    let seed = env_number("CODE_INTEL_FUZZ_SEED", 22);
    let files = env_number("CODE_INTEL_FUZZ_FILES", 120);
    let host = fuzzing::bundled_host();
    let seeds = fuzzing::seeds_by_plugin(&host);
    let mut findings = Findings::new(findings_dir(seed));
    let mut stats = BTreeMap::new();
    for (plugin, files_of_plugin) in &seeds {
        assert!(!files_of_plugin.is_empty(), "no fixture file matches plugin {plugin}");
        let s: &mut PluginStats = stats.entry(plugin.clone()).or_default();
        for case in 0..files {
            fuzzing::plugin_case(&host, plugin, files_of_plugin, seed, case, s, &mut findings);
        }
    }
    fuzzing::report_plugins(&stats);
    assert_eq!(findings.count, 0, "seed {seed}: {:?}; inputs in {}", findings.by_kind, findings.dir().display());
}

#[test]
fn mutated_json_rpc_through_serve() {
    let seed = env_number("CODE_INTEL_FUZZ_SEED", 22);
    let lines = env_number("CODE_INTEL_FUZZ_LINES", 400);
    let mut server = fuzzing::Server::start();
    assert!(server.tools.len() >= 5, "tools/list: {:?}", server.tools);
    let mut findings = Findings::new(findings_dir(seed));
    let mut stats = ServeStats::default();
    for case in 0..lines {
        fuzzing::serve_case(&mut server, seed, case, &mut stats, &mut findings);
        if !server.alive() {
            break;
        }
    }
    eprintln!("{stats:?}");
    assert_eq!(stats.lines, lines);
    assert!(stats.errors > lines / 4, "most mutated lines are malformed: {stats:?}");
    assert_eq!(findings.count, 0, "seed {seed}: {:?}; inputs in {}", findings.by_kind, findings.dir().display());
}

/// A PHP file cut after its header (what truncation at a line end leaves):
/// no chunk of its own, but never silent: the php plugin declines, saying
/// what the file holds, and the file gets line chunks.
#[test]
fn a_php_file_cut_after_its_header_is_declined_and_gets_line_chunks() {
    use code_intel_core::Chunker;
    let host = fuzzing::bundled_host();
    let file = host.chunk_file("app/Contracts/PaymentGateway.php", "<?php\n\nnamespace App\\Contracts;\n\nuse App\\Models\\Order;\n\n/**\n * Charges money.\n */\n");
    assert_eq!(file.chunker, code_intel_core::chunk::FALLBACK_CHUNKER, "{file:?}");
    assert!(!file.chunks.is_empty());
    let (plugin, reason) = &file.declined[0];
    assert_eq!(plugin, "php");
    assert!(reason.contains("namespace and use lines"), "{reason}");
}
