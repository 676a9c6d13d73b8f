//! Hostile plugins are contained: the host survives, the file gets line
//! chunks, the failure is recorded with the right kind, and the next file is
//! chunked by a fresh instance of the same plugin.

mod common;

use std::time::{Duration, Instant};

use code_intel_core::chunk::{FALLBACK_CHUNKER, FALLBACK_KIND};
use code_intel_core::{ChunkedFile, Chunker, FailureKind};
use common::host_with;

const FILE: &str = "line one\nline two\nline three\n";

fn assert_contained(file: &ChunkedFile, plugin: &str, kind: FailureKind) {
    assert_eq!(file.chunker, FALLBACK_CHUNKER, "{file:?}");
    assert_eq!(file.chunks.len(), 1);
    assert_eq!(file.chunks[0].kind, FALLBACK_KIND);
    assert_eq!(file.chunks[0].content, FILE);
    assert_eq!(file.failures.len(), 1, "{file:?}");
    assert_eq!(file.failures[0].plugin, plugin);
    assert_eq!(file.failures[0].kind, kind, "{:?}", file.failures[0]);
}

fn assert_next_file_works(host: &impl Chunker, plugin: &str) {
    let ok = host.chunk_file("dir/ok.hostile", FILE);
    assert_eq!(ok.chunker, plugin, "{ok:?}");
    assert!(ok.failures.is_empty());
    assert_eq!(ok.chunks[0].metadata.value(), serde_json::json!({"ok": true}));
}

#[test]
fn infinite_loop_runs_out_of_fuel() {
    let cache = tempfile::tempdir().unwrap();
    let host = host_with(&["infinite-loop"], cache.path());
    for _ in 0..2 {
        let started = Instant::now();
        let file = host.chunk_file("spin.hostile", FILE);
        let elapsed = started.elapsed();
        assert_contained(&file, "infinite-loop", FailureKind::Timeout);
        let message = &file.failures[0].message;
        assert!(message.contains("fuel limit of 200000000 units"), "{message}");
        // Fuel, not the 10 s backstop, stopped it.
        assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
        assert_next_file_works(&host, "infinite-loop");
    }
    // The same loop burns exactly its fuel, every time.
    let (_, fuel) = host.attempt_metered("infinite-loop", "spin.hostile", FILE).unwrap();
    assert_eq!(fuel, common::QUICK_FUEL);
}

/// Fuel is the budget; the wall clock is only a backstop for hangs fuel
/// cannot see. With fuel to spare, the backstop still stops the loop.
#[test]
fn the_wall_clock_backstop_stops_a_loop_with_fuel_to_spare() {
    let cache = tempfile::tempdir().unwrap();
    let limits = code_intel_plugins::Limits { call_fuel: u64::MAX / 4, call_timeout: Duration::from_millis(500), ..common::quick_limits() };
    let host = common::host_with_limits(&["infinite-loop"], cache.path(), limits);
    let started = Instant::now();
    let file = host.chunk_file("spin.hostile", FILE);
    let elapsed = started.elapsed();
    assert_contained(&file, "infinite-loop", FailureKind::Timeout);
    assert!(file.failures[0].message.contains("500ms wall-clock time limit"), "{}", file.failures[0].message);
    // 500 ms limit, 10 ms epoch ticks: stopped promptly, not hung.
    assert!(elapsed >= Duration::from_millis(450) && elapsed < Duration::from_secs(5), "{elapsed:?}");
    assert_next_file_works(&host, "infinite-loop");
}

/// The circuit breaker: after `MAX_CONSECUTIVE_TIMEOUTS` timeouts in a row
/// (here: out of fuel) the looping plugin is not called again in this run,
/// so its other files get line chunks at once, each with a failure saying
/// why; a new run (`begin_run`) calls it again.
#[test]
fn a_plugin_that_keeps_timing_out_is_not_called_again_in_the_run() {
    use code_intel_plugins::sandbox::MAX_CONSECUTIVE_TIMEOUTS;
    let cache = tempfile::tempdir().unwrap();
    let host = host_with(&["infinite-loop"], cache.path());
    for i in 0..MAX_CONSECUTIVE_TIMEOUTS {
        let file = host.chunk_file(&format!("spin{i}.hostile"), FILE);
        assert_contained(&file, "infinite-loop", FailureKind::Timeout);
        assert!(file.failures[0].message.contains("fuel limit"), "{}", file.failures[0].message);
    }
    let started = Instant::now();
    for i in 0..20 {
        let file = host.chunk_file(&format!("more{i}.hostile"), FILE);
        assert_contained(&file, "infinite-loop", FailureKind::Timeout);
        let message = &file.failures[0].message;
        assert!(message.contains("not called") && message.contains("3 files in a row") && message.contains("next run"), "{message}");
        assert!(message.contains("200000000 fuel"), "{message}");
    }
    assert!(started.elapsed() < Duration::from_millis(400), "skipped files cost no call: {:?}", started.elapsed());
    // Even a file it would chunk: the breaker is open for the whole run.
    assert_eq!(host.chunk_file("dir/ok.hostile", FILE).chunker, FALLBACK_CHUNKER);

    host.begin_run();
    assert_next_file_works(&host, "infinite-loop");
    // A call that finishes starts the count again: timeouts between
    // finished calls never trip it.
    for i in 0..2 * MAX_CONSECUTIVE_TIMEOUTS {
        assert_contained(&host.chunk_file(&format!("spin{i}.hostile"), FILE), "infinite-loop", FailureKind::Timeout);
        if i % 2 == 1 {
            assert_next_file_works(&host, "infinite-loop");
        }
    }
}

#[test]
fn memory_bomb_hits_the_limit() {
    let cache = tempfile::tempdir().unwrap();
    let host = host_with(&["memory-bomb"], cache.path());
    let file = host.chunk_file("bomb.hostile", FILE);
    assert_contained(&file, "memory-bomb", FailureKind::MemoryLimit);
    assert!(file.failures[0].message.contains("64 MiB"), "{}", file.failures[0].message);
    assert_next_file_works(&host, "memory-bomb");
}

#[test]
fn trap_is_reported_with_the_panic_message() {
    let cache = tempfile::tempdir().unwrap();
    let host = host_with(&["trap"], cache.path());
    let file = host.chunk_file("src/boom.hostile", FILE);
    assert_contained(&file, "trap", FailureKind::Trap);
    let message = &file.failures[0].message;
    assert!(message.contains("deliberate test panic while chunking src/boom.hostile"), "{message}");
    assert_next_file_works(&host, "trap");
}

#[test]
fn garbage_output_is_refused_rule_by_rule() {
    let cache = tempfile::tempdir().unwrap();
    let host = host_with(&["garbage"], cache.path());
    let cases = [
        ("bad-span.hostile", "not within the file"),
        ("bad-lines.hostile", "1-based"),
        ("bad-metadata.hostile", "not an object"),
        ("not-json.hostile", "not valid JSON"),
        ("dup-id.hostile", "unique"),
        ("empty-id.hostile", "empty id"),
        ("empty-kind.hostile", "snake_case"),
        ("dangling-parent.hostile", "parent"),
    ];
    for (path, expected) in cases {
        let file = host.chunk_file(path, FILE);
        assert_contained(&file, "garbage", FailureKind::InvalidOutput);
        assert!(file.failures[0].message.contains(expected), "{path}: {}", file.failures[0].message);
    }
    let split = host.chunk_file("split-char.hostile", "é and more\n");
    assert_eq!(split.failures[0].kind, FailureKind::InvalidOutput);
    assert!(split.failures[0].message.contains("UTF-8"), "{}", split.failures[0].message);

    let error = host.chunk_file("error.hostile", FILE);
    assert_contained(&error, "garbage", FailureKind::PluginError);
    assert_eq!(error.failures[0].message, "line 3: deliberate test error");
    assert_next_file_works(&host, "garbage");
}

#[test]
fn decline_passes_the_file_on() {
    let cache = tempfile::tempdir().unwrap();
    // `decline` has priority 1000, `probe` 10: decline is asked first.
    let host = host_with(&["decline", "probe"], cache.path());
    let order: Vec<_> = host.plugins().map(|p| p.name.clone()).collect();
    assert_eq!(order, ["decline", "probe"]);
    let file = host.chunk_file("pkg/app.py", "def main():\n    return 1\n");
    assert_eq!(file.chunker, "probe");
    assert_eq!(file.declined, vec![("decline".to_string(), "pkg/app.py is not mine".to_string())]);
    assert!(file.failures.is_empty());
    assert_eq!(file.chunks[0].name, "main");

    // Only the decliner matches `.hostile`: line chunks, nothing failed.
    let alone = host.chunk_file("x.hostile", FILE);
    assert_eq!(alone.chunker, FALLBACK_CHUNKER);
    assert_eq!(alone.declined.len(), 1);
    assert!(alone.failures.is_empty());
}

#[test]
fn files_no_plugin_matches_get_line_chunks() {
    let cache = tempfile::tempdir().unwrap();
    let host = host_with(&["trap"], cache.path());
    let file = host.chunk_file("README.md", FILE);
    assert_eq!(file.chunker, FALLBACK_CHUNKER);
    assert!(file.failures.is_empty() && file.declined.is_empty());
}

#[test]
fn hostile_and_good_files_chunk_in_parallel() {
    let cache = tempfile::tempdir().unwrap();
    let host = host_with(&["trap", "probe"], cache.path());
    std::thread::scope(|scope| {
        for t in 0..4 {
            let host = &host;
            scope.spawn(move || {
                for i in 0..25 {
                    let good = host.chunk_file(&format!("t{t}/f{i}.py"), &format!("def f{i}():\n    pass\n"));
                    // `trap` (priority 1000) claims .py too: only ok* files survive it.
                    assert_eq!(good.chunker, FALLBACK_CHUNKER);
                    assert_eq!(good.failures[0].kind, FailureKind::Trap);
                    let ok = host.chunk_file(&format!("t{t}/ok{i}.py"), "x = 1\n");
                    assert_eq!(ok.chunker, "trap");
                }
            });
        }
    });
}

#[test]
fn syntax_import_works_from_a_component() {
    let cache = tempfile::tempdir().unwrap();
    let host = host_with(&["probe"], cache.path());
    let src = "class User:\n    def save(self):\n        pass\n\ndef helper():\n    return 2\n";
    let file = host.chunk_file("app/models.py", src);
    assert_eq!(file.chunker, "probe", "{file:?}");
    let spans: Vec<_> = file.chunks.iter().map(|c| (c.kind.as_str(), c.name.as_str(), c.start_line, c.end_line)).collect();
    assert_eq!(spans, [("class", "User", 1, 3), ("function", "save", 2, 3), ("function", "helper", 5, 6)]);
    assert_eq!(file.chunks[0].metadata.value(), serde_json::json!({"has_errors": false, "root": "module"}));

    let php = host.chunk_file("app/User.php", "<?php\nnamespace App;\nclass User {\n  public function posts() {}\n}\n");
    let names: Vec<_> = php.chunks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["User", "posts"]);
    assert_eq!(php.chunks[0].metadata.value()["root"], "program");
}

#[test]
fn syntax_guards_reach_the_plugin_as_errors() {
    let cache = tempfile::tempdir().unwrap();
    let host = host_with(&["probe"], cache.path());
    let cases = [
        ("hoard.probe", "x = 1\n".to_string(), "holds 32 trees"),
        ("unknown-language.probe", "x".to_string(), "no grammar named `cobol`; this host has: css, go, html, java, javascript, php, php_only, python, scss, tsx, typescript"),
        ("bad-query.probe", "x = 1\n".to_string(), "invalid-query"),
        (
            "everything.probe",
            format!("x = {}{}\n", "[".repeat(10_000), "]".repeat(10_000)),
            "exceed",
        ),
    ];
    for (path, content, expected) in cases {
        let started = Instant::now();
        let file = host.chunk_file(path, &content);
        assert_eq!(file.failures.len(), 1, "{path}: {file:?}");
        assert_eq!(file.failures[0].kind, FailureKind::PluginError, "{path}");
        assert!(file.failures[0].message.contains(expected), "{path}: {}", file.failures[0].message);
        assert!(started.elapsed() < Duration::from_secs(5), "{path} took {:?}", started.elapsed());
    }
    // After all that, the same plugin still works.
    let file = host.chunk_file("ok.py", "def f():\n    pass\n");
    assert_eq!(file.chunker, "probe");
}
