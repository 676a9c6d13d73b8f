//! Sync behaviour on generated trees: ignore rules, incremental changes,
//! renames, files that become unindexable, limits, cancellation, and
//! concurrent syncs — each checked against a clean index of the same tree.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, SystemTime};

use code_intel_core::config::{Config, database_path};
use code_intel_core::{ChunkedFile, Chunker};
use code_intel_index::{LineChunker, SkipReason, SyncOptions, SyncReport, sync};
use code_intel_store::Store;

fn write(root: &Path, path: &str, content: &str) {
    let abs = root.join(path);
    std::fs::create_dir_all(abs.parent().unwrap()).unwrap();
    std::fs::write(abs, content).unwrap();
}

/// Moves every file's mtime an hour back, so the mtime+size pre-check (not
/// the racy-timestamp re-hash) decides what is unchanged.
fn age(root: &Path) {
    let old = SystemTime::now() - Duration::from_secs(3600);
    for entry in walk_all(root) {
        std::fs::File::options().write(true).open(&entry).unwrap().set_modified(old).unwrap();
    }
}

fn walk_all(root: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let ty = entry.file_type().unwrap();
            if entry.file_name() == ".code-intel" {
                continue;
            }
            if ty.is_dir() {
                stack.push(entry.path());
            } else if ty.is_file() {
                out.push(entry.path());
            }
        }
    }
    out
}

fn run(root: &Path, config: &Config) -> SyncReport {
    run_with(root, config, &LineChunker, false)
}

fn run_with(root: &Path, config: &Config, chunker: &dyn Chunker, force: bool) -> SyncReport {
    let mut store = Store::open(&database_path(root)).unwrap();
    sync(root, &mut store, chunker, config, SyncOptions { force, cancel: None }, &|_| {}).unwrap()
}

/// Everything the index holds, in a comparable form (row ids excluded).
fn snapshot(root: &Path) -> Vec<String> {
    let store = Store::open(&database_path(root)).unwrap();
    assert_eq!(store.integrity_check().unwrap(), Ok(()));
    let mut stmt = store
        .conn()
        .prepare(
            "SELECT f.path, f.sha256, f.size, f.chunker, c.chunk_id, c.kind, c.name, c.start_line, c.end_line,
                    c.content_hash, c.content
             FROM files f LEFT JOIN chunks c ON c.file_id = f.id ORDER BY f.path, c.chunk_id",
        )
        .unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok(format!(
                "{}|{}|{}|{}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}",
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, Option<String>>(5)?,
                r.get::<_, Option<String>>(6)?,
                r.get::<_, Option<i64>>(7)?,
                r.get::<_, Option<i64>>(8)?,
                r.get::<_, Option<String>>(9)?,
                r.get::<_, Option<String>>(10)?,
            ))
        })
        .unwrap();
    let mut out: Vec<String> = rows.map(Result::unwrap).collect();
    // The full-text index must answer for every chunk too.
    let fts: i64 = store.conn().query_row("SELECT count(*) FROM chunks_fts", [], |r| r.get(0)).unwrap();
    let chunks: i64 = store.conn().query_row("SELECT count(*) FROM chunks", [], |r| r.get(0)).unwrap();
    out.push(format!("fts rows = chunks: {}", fts == chunks));
    out
}

/// A clean index of a copy of `root`'s tree, for comparison.
fn clean_snapshot(root: &Path, config: &Config) -> Vec<String> {
    let copy = tempfile::tempdir().unwrap();
    for file in walk_all(root) {
        let rel = file.strip_prefix(root).unwrap();
        let dest = copy.path().join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&file, dest).unwrap();
    }
    if root.join(".code-intel/ignore").exists() {
        write(copy.path(), ".code-intel/ignore", &std::fs::read_to_string(root.join(".code-intel/ignore")).unwrap());
    }
    run(copy.path(), config);
    snapshot(copy.path())
}

fn indexed_paths(root: &Path) -> Vec<String> {
    let store = Store::open(&database_path(root)).unwrap();
    let mut paths: Vec<String> = store.indexed_files().unwrap().into_iter().map(|f| f.path).collect();
    paths.sort();
    paths
}

fn py(name: &str) -> String {
    format!("def {name}(user):\n    \"\"\"Return the user's {name}.\"\"\"\n    return user.{name}\n")
}

#[test]
fn ignore_rules_and_default_skips() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for path in [
        "app/models.py",
        "app/ignored_by_gitignore.py",
        "app/ignored_by_dot_ignore.py",
        "app/ignored_by_project_ignore.py",
        "app/excluded_by_config.py",
        "vendor/laravel/framework/src/Foo.php",
        "node_modules/left-pad/index.js",
        "web/node_modules/x/index.js",
        "storage/logs/x.php",
        "src/storage/backend.py",
        "public/build/app.js",
        "public/js/app.min.js",
        "public/css/app.min.css",
        ".hidden/secret.py",
        "tests/test_models.py",
    ] {
        write(root, path, &py(&path.replace(['/', '.', '-'], "_")));
    }
    write(root, ".gitignore", "ignored_by_gitignore.py\n");
    write(root, "app/.ignore", "ignored_by_dot_ignore.py\n");
    write(root, ".code-intel/ignore", "# project-only ignores\n/app/ignored_by_project_ignore.py\n");
    write(root, "big.py", &"x = 1\n".repeat(300));
    write(root, "image.png", "\u{89}PNG\r\n\u{1a}\n\0\0\0\rIHDR");
    write(root, "data.bin", "\u{89}BIN\r\n\u{1a}\n\0\0\0\rIHDR");
    write(root, "composer.lock", "{\"packages\": []}\n");
    let (mut config, _) = Config::from_json_str(r#"{"max_file_bytes": 1000}"#).unwrap();
    config.exclude_patterns.push("excluded_by_config.py".into());

    let report = run(root, &config);
    assert_eq!(
        indexed_paths(root),
        ["app/models.py", "src/storage/backend.py", "tests/test_models.py"],
        "only real source survives the ignore rules (hidden files such as .gitignore are skipped too)"
    );
    let reasons: Vec<(String, SkipReason)> = report.skipped.iter().map(|s| (s.path.clone(), s.reason.clone())).collect();
    assert_eq!(
        reasons,
        [
            ("big.py".to_string(), SkipReason::TooLarge { size: 1800, limit: 1000 }),
            ("composer.lock".to_string(), SkipReason::Generated { rule: "lock file".into() }),
            ("data.bin".to_string(), SkipReason::Binary),
            ("image.png".to_string(), SkipReason::Generated { rule: "image, font, media or archive".into() }),
        ]
    );
    assert_eq!(report.added, 3);

    // source_dirs narrows the walk; files outside leave the index, and a
    // pattern no longer excluded comes in.
    let (config, _) = Config::from_json_str(r#"{"source_dirs": ["app", "tests"]}"#).unwrap();
    let report = run(root, &config);
    assert_eq!(indexed_paths(root), ["app/excluded_by_config.py", "app/models.py", "tests/test_models.py"]);
    assert_eq!((report.added, report.deleted), (1, 1));
    let (config, _) = Config::from_json_str(r#"{"source_dirs": ["nope"]}"#).unwrap();
    let mut store = Store::open(&database_path(root)).unwrap();
    let err = sync(root, &mut store, &LineChunker, &config, SyncOptions::default(), &|_| {}).unwrap_err();
    assert!(err.to_string().contains("`source_dirs`") && err.to_string().contains("nope"), "{err}");
}

#[test]
fn incremental_changes_match_a_clean_index() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = Config::default();
    for i in 0..40 {
        write(root, &format!("pkg/mod{i}.py"), &py(&format!("get_value{i}")));
    }
    write(root, "README.md", "# demo\n");
    let first = run(root, &config);
    assert_eq!((first.added, first.modified, first.deleted, first.unchanged), (41, 0, 0, 0));
    assert_eq!(first.total_files, 41);
    assert_eq!(first.fallbacks, 41);
    age(root);

    // Nothing changed: nothing is read again.
    let again = run(root, &config);
    assert_eq!((again.added, again.modified, again.deleted, again.unchanged, again.chunks), (0, 0, 0, 41, 0));

    // Modify two, add one, delete one, rename one, touch one without change.
    write(root, "pkg/mod1.py", &py("changed_one"));
    write(root, "pkg/mod2.py", &format!("{}\n# more\n", py("get_value2")));
    write(root, "pkg/new.py", &py("brand_new"));
    std::fs::remove_file(root.join("pkg/mod3.py")).unwrap();
    std::fs::create_dir_all(root.join("lib")).unwrap();
    std::fs::rename(root.join("pkg/mod4.py"), root.join("lib/mod4.py")).unwrap();
    std::fs::File::options().write(true).open(root.join("pkg/mod5.py")).unwrap().set_modified(SystemTime::now()).unwrap();
    let report = run(root, &config);
    assert_eq!((report.added, report.modified, report.deleted), (1, 2, 1), "{report:#?}");
    assert_eq!(report.renamed, [("pkg/mod4.py".to_string(), "lib/mod4.py".to_string())]);
    assert_eq!(report.unchanged, 37, "36 untouched + 1 touched but identical");
    assert_eq!(snapshot(root), clean_snapshot(root, &config));

    // --force re-chunks everything and changes nothing.
    let before = snapshot(root);
    let forced = run_with(root, &config, &LineChunker, true);
    assert_eq!(forced.modified, 41);
    assert_eq!(snapshot(root), before);
}

#[test]
fn a_file_that_turns_binary_or_too_large_leaves_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (config, _) = Config::from_json_str(r#"{"max_file_bytes": 4096}"#).unwrap();
    write(root, "a.py", &py("alpha"));
    write(root, "b.py", &py("beta"));
    write(root, "c.py", &py("gamma"));
    run(root, &config);
    std::fs::write(root.join("a.py"), b"\x7fELF\x02\x01\x01\0\0\0binary now").unwrap();
    write(root, "b.py", &"y = 2\n".repeat(1000));
    let report = run(root, &config);
    assert_eq!(indexed_paths(root), ["c.py"]);
    assert_eq!(report.deleted, 2);
    let reasons: Vec<&SkipReason> = report.skipped.iter().map(|s| &s.reason).collect();
    assert_eq!(reasons, [&SkipReason::Binary, &SkipReason::TooLarge { size: 6000, limit: 4096 }]);
    assert_eq!(snapshot(root), clean_snapshot(root, &config));
}

/// We run as root, which reads any file regardless of permission bits, so
/// "unreadable" is produced the other ways a path can fail: a dangling
/// symbolic link (open fails with ENOENT), a FIFO (never opened: reading it
/// would block), and a link escaping the repository.
#[cfg(unix)]
#[test]
fn unreadable_and_special_files_are_skipped_and_reported_nothing_else_lost() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = Config::default();
    write(root, "keep.py", &py("kept"));
    write(root, "linked_target.py", &py("target"));
    write(outside.path(), "secret.py", &py("secret"));
    std::os::unix::fs::symlink(root.join("missing.py"), root.join("dangling.py")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.py"), root.join("escape.py")).unwrap();
    std::os::unix::fs::symlink(root.join("linked_target.py"), root.join("alias.py")).unwrap();
    let fifo = root.join("pipe.py");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());

    let report = run(root, &config);
    assert_eq!(indexed_paths(root), ["keep.py", "linked_target.py"]);
    let reasons: Vec<(String, String)> =
        report.skipped.iter().map(|s| (s.path.clone(), format!("{:?}", s.reason))).collect();
    assert_eq!(reasons.len(), 4, "{reasons:?}");
    assert_eq!(reasons[0].0, "alias.py");
    assert_eq!(reasons[0].1, "Symlink");
    assert_eq!(reasons[1].0, "dangling.py");
    assert!(reasons[1].1.starts_with("Unreadable"), "{reasons:?}");
    assert_eq!(reasons[2], ("escape.py".to_string(), "SymlinkOutsideRepository".to_string()));
    assert_eq!(reasons[3], ("pipe.py".to_string(), "NotRegularFile".to_string()));
    assert!(report.skipped[1].reason.to_string().contains("unreadable"));
}

/// A file whose name is not UTF-8 is skipped and reported like every other
/// skipped file: by its repository-relative path (bad bytes as U+FFFD),
/// never by the absolute path of the machine it is on.
#[test]
fn a_non_utf8_file_name_is_reported_relative_to_the_root() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "keep.py", &py("kept"));
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("sub").join(std::ffi::OsStr::from_bytes(b"caf\xe9.py")), py("latin1")).unwrap();
    let report = run(root, &Config::default());
    assert_eq!(indexed_paths(root), ["keep.py"]);
    let skipped: Vec<(&str, &SkipReason)> = report.skipped.iter().map(|s| (s.path.as_str(), &s.reason)).collect();
    assert_eq!(skipped, [("sub/caf\u{FFFD}.py", &SkipReason::NonUtf8Path)]);
}

/// A file that is not valid UTF-8 is chunked from its text with U+FFFD in
/// place of each bad sequence (three bytes for one or two in the file); the
/// stored byte spans are the file's own, never past its end.
#[test]
fn byte_spans_of_a_file_with_invalid_utf8_are_the_file_s() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut bytes = Vec::new();
    for i in 0..120 {
        bytes.extend_from_slice(format!("line {i} caf").as_bytes());
        bytes.extend_from_slice(if i % 2 == 0 { b"\xe9" } else { b"\xc3\x28" });
        bytes.extend_from_slice(" é\n".as_bytes());
    }
    std::fs::write(root.join("latin1.txt"), &bytes).unwrap();
    run(root, &Config::default());
    let store = Store::open(&database_path(root)).unwrap();
    let mut stmt = store.conn().prepare("SELECT start_byte, end_byte, start_line, end_line FROM chunks ORDER BY start_byte").unwrap();
    let spans: Vec<(usize, usize, usize, usize)> = stmt
        .query_map([], |r| Ok((r.get::<_, i64>(0)? as usize, r.get::<_, i64>(1)? as usize, r.get::<_, i64>(2)? as usize, r.get::<_, i64>(3)? as usize)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(spans.len() >= 3, "{spans:?}");
    assert_eq!(spans.last().unwrap().1, bytes.len(), "the last chunk ends where the file ends");
    for (start, end, start_line, end_line) in spans {
        // Each span starts and ends on a line boundary of the file itself.
        assert!(start == 0 || bytes[start - 1] == b'\n', "{start}");
        assert!(bytes[end - 1] == b'\n', "{end}");
        let lines = bytes[..start].iter().filter(|b| **b == b'\n').count() + 1;
        assert_eq!((lines, lines + bytes[start..end].iter().filter(|b| **b == b'\n').count() - 1), (start_line, end_line));
    }
}

/// A chunker that fails on one file the way a broken plugin would.
struct FlakyChunker;

impl Chunker for FlakyChunker {
    fn chunk_file(&self, path: &str, content: &str) -> ChunkedFile {
        let mut out = LineChunker.chunk_file(path, content);
        if path.ends_with("bad.py") {
            out.failures.push(code_intel_core::ChunkFailure {
                plugin: "python".into(),
                kind: code_intel_core::FailureKind::Trap,
                message: "wasm trap: unreachable".into(),
            });
        } else {
            out.chunker = "python".into();
        }
        out
    }
}

#[test]
fn plugin_failures_and_fallbacks_are_reported_and_stored() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "good.py", &py("good"));
    write(root, "bad.py", &py("bad"));
    let report = run_with(root, &Config::default(), &FlakyChunker, false);
    assert_eq!(report.fallbacks, 1);
    assert_eq!(report.plugin_failures.len(), 1);
    assert_eq!(report.plugin_failures[0].path, "bad.py");
    let store = Store::open(&database_path(root)).unwrap();
    let stats = store.stats().unwrap();
    assert_eq!(stats.fallback_after_failure, 1);
    assert_eq!(stats.plugin_failures, 1);
    assert_eq!(stats.by_chunker["python"].files, 1);
    assert_eq!(stats.by_chunker["fallback"].files, 1);
    let failures = store.plugin_failures(10).unwrap();
    assert_eq!((failures[0].path.as_str(), failures[0].kind.as_str()), ("bad.py", "trap"));
}

#[test]
fn max_chunks_skips_and_reports_instead_of_growing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for i in 0..10 {
        write(root, &format!("f{i}.py"), &py("x"));
    }
    let (config, _) = Config::from_json_str(r#"{"max_chunks": 6}"#).unwrap();
    let report = run(root, &config);
    assert_eq!(report.total_chunks, 6);
    assert_eq!(report.added, 6);
    assert_eq!(report.skipped.iter().filter(|s| s.reason == SkipReason::MaxChunks { limit: 6 }).count(), 4);
}

#[test]
fn cancelled_sync_is_consistent_and_the_next_one_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = Config::default();
    for i in 0..600 {
        write(root, &format!("d{}/m{i}.py", i % 7), &py(&format!("fn{i}")));
    }
    struct CancelAfter<'a>(&'a AtomicBool, std::sync::atomic::AtomicUsize);
    impl Chunker for CancelAfter<'_> {
        fn chunk_file(&self, path: &str, content: &str) -> ChunkedFile {
            if self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 300 {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            LineChunker.chunk_file(path, content)
        }
    }
    let cancel = AtomicBool::new(false);
    let chunker = CancelAfter(&cancel, 0.into());
    let mut store = Store::open(&database_path(root)).unwrap();
    let partial = sync(root, &mut store, &chunker, &config, SyncOptions { force: false, cancel: Some(&cancel) }, &|_| {}).unwrap();
    assert!(partial.cancelled);
    assert!(partial.added > 0 && partial.added < 600, "{}", partial.added);
    assert_eq!(store.integrity_check().unwrap(), Ok(()));
    assert!(store.meta(code_intel_store::meta_keys::LAST_SYNC_MS).unwrap().is_none());
    drop(store);
    let rest = run(root, &config);
    assert_eq!(rest.added + partial.added, 600);
    assert_eq!(snapshot(root), clean_snapshot(root, &config));
}

#[test]
fn concurrent_syncs_take_turns_and_agree() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = Config::default();
    for i in 0..400 {
        write(root, &format!("p{}/m{i}.py", i % 5), &py(&format!("fn{i}")));
    }
    let reports: Vec<SyncReport> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..3).map(|_| s.spawn(|| run(root, &config))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let added: u64 = reports.iter().map(|r| r.added).sum();
    assert_eq!(added, 400, "each file added exactly once across the three syncs");
    assert_eq!(snapshot(root), clean_snapshot(root, &config));
}

/// Line chunks under a name that stands for a plugin set and its version.
struct Versioned(&'static str);

impl Chunker for Versioned {
    fn chunk_file(&self, path: &str, content: &str) -> ChunkedFile {
        let mut out = LineChunker.chunk_file(path, content);
        out.chunker = self.0.to_string();
        out
    }

    fn identity(&self) -> Option<String> {
        Some(self.0.to_string())
    }
}

#[test]
fn files_are_chunked_again_when_the_plugins_change() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = Config::default();
    for i in 0..3 {
        write(root, &format!("m{i}.py"), &py(&format!("f{i}")));
    }
    age(root);
    let chunkers = |root: &Path| -> Vec<String> { Store::open(&database_path(root)).unwrap().stats().unwrap().by_chunker.into_keys().collect() };
    let first = run_with(root, &config, &Versioned("plugins-1"), false);
    assert!(!first.chunker_changed, "a new index has nothing to chunk again");
    assert_eq!(chunkers(root), ["plugins-1"]);
    // The same plugins: nothing is read again.
    let same = run_with(root, &config, &Versioned("plugins-1"), false);
    assert_eq!((same.unchanged, same.modified, same.chunker_changed), (3, 0, false));
    // Upgraded plugins: every file again, though none changed.
    let upgraded = run_with(root, &config, &Versioned("plugins-2"), false);
    assert_eq!((upgraded.unchanged, upgraded.modified, upgraded.chunker_changed), (0, 3, true));
    assert_eq!(chunkers(root), ["plugins-2"]);
    // And only once.
    let after = run_with(root, &config, &Versioned("plugins-2"), false);
    assert_eq!((after.unchanged, after.chunker_changed), (3, false));
    // A chunker that keeps no identity never forces a run.
    let untracked = run(root, &config);
    assert_eq!((untracked.unchanged, untracked.chunker_changed), (3, false));
}
