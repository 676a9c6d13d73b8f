//! The real `code-intel` binary indexing generated trees: summaries and
//! JSON, clear errors, a sync killed with SIGKILL mid-way, and two processes
//! syncing the same repository at once. After each, the index must pass
//! SQLite's and FTS5's integrity checks and equal a clean index of the same
//! tree, row for row.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use code_intel_store::Store;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_code-intel"))
}

fn run(args: &[&str], cwd: &Path) -> Output {
    bin().args(args).current_dir(cwd).output().unwrap()
}

fn ok(args: &[&str], cwd: &Path) -> String {
    let out = run(args, cwd);
    assert!(
        out.status.success(),
        "{args:?} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `n` files, mixed Python and PHP, about 2-3 KiB each, in nested dirs.
fn generate(root: &Path, n: usize) {
    for i in 0..n {
        let dir = root.join(format!("pkg{}/sub{}", i % 17, i % 5));
        std::fs::create_dir_all(&dir).unwrap();
        if i % 2 == 0 {
            let mut text = format!("\"\"\"Module {i}.\"\"\"\nimport os\n\n");
            for j in 0..12 {
                text.push_str(&format!(
                    "def get_value_{i}_{j}(record):\n    \"\"\"Return field {j} of the record.\"\"\"\n    total = record.get('f{j}', 0)\n    return total * {j}\n\n"
                ));
            }
            std::fs::write(dir.join(format!("mod_{i}.py")), text).unwrap();
        } else {
            let mut text = format!("<?php\n\nnamespace App\\Pkg{};\n\nclass Service{i}\n{{\n", i % 17);
            for j in 0..12 {
                text.push_str(&format!(
                    "    /** Loads item {j}. */\n    public function loadItem{j}(int $id): array\n    {{\n        return $this->repo->find($id + {j});\n    }}\n\n"
                ));
            }
            text.push_str("}\n");
            std::fs::write(dir.join(format!("Service{i}.php")), text).unwrap();
        }
    }
}

fn db(root: &Path) -> PathBuf {
    root.join(".code-intel/index.db")
}

/// The whole index as comparable rows, after checking its integrity.
fn snapshot(root: &Path) -> Vec<String> {
    let store = Store::open(&db(root)).unwrap();
    assert_eq!(store.integrity_check().unwrap(), Ok(()), "integrity check of {}", root.display());
    let mut stmt = store
        .conn()
        .prepare(
            "SELECT f.path || '|' || f.sha256 || '|' || f.size || '|' || f.chunker || '|' ||
                    COALESCE(c.chunk_id, '') || '|' || COALESCE(c.kind, '') || '|' || COALESCE(c.name, '') || '|' ||
                    COALESCE(c.start_line, '') || '|' || COALESCE(c.end_line, '') || '|' || COALESCE(c.content_hash, '')
             FROM files f LEFT JOIN chunks c ON c.file_id = f.id ORDER BY f.path, c.chunk_id",
        )
        .unwrap();
    let mut rows: Vec<String> = stmt.query_map([], |r| r.get::<_, String>(0)).unwrap().map(Result::unwrap).collect();
    let counts: (i64, i64) = store
        .conn()
        .query_row("SELECT (SELECT count(*) FROM chunks), (SELECT count(*) FROM chunks_fts)", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    rows.push(format!("chunks={} fts={}", counts.0, counts.1));
    rows
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() == ".code-intel" {
            continue;
        }
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
            copy_tree(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}

fn clean_snapshot(root: &Path) -> Vec<String> {
    let copy = tempfile::tempdir().unwrap();
    copy_tree(root, copy.path());
    ok(&["index", copy.path().to_str().unwrap()], copy.path());
    snapshot(copy.path())
}

fn indexed_files(root: &Path) -> i64 {
    // A reader in WAL mode never blocks the writer and sees only committed batches.
    let Ok(store) = Store::open_existing(&db(root)) else { return 0 };
    store.conn().query_row("SELECT count(*) FROM files", [], |r| r.get(0)).unwrap_or(0)
}

#[test]
fn index_status_search_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    generate(root, 40);
    std::fs::write(root.join("notes.md"), "The user name appears in the header.\n").unwrap();

    // Not a repository: `index` without a path refuses; with one it indexes.
    let refused = run(&["index"], root);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not inside a repository"), "{}", String::from_utf8_lossy(&refused.stderr));
    assert!(!root.join(".code-intel").exists(), "a refused index left .code-intel/ behind");
    let summary = ok(&["index", "."], root);
    assert!(summary.contains("41 added"), "{summary}");
    let again = ok(&["index", "--json"], root);
    let report: serde_json::Value = serde_json::from_str(&again).unwrap();
    assert_eq!(report["unchanged"], 41);
    assert_eq!(report["added"], 0);

    let status: serde_json::Value = serde_json::from_str(&ok(&["status", "--json"], root)).unwrap();
    assert_eq!(status["files"], 41);
    assert!(status["chunks"].as_u64().unwrap() >= 41);
    assert_eq!(status["sync"]["state"], "idle");
    let text = ok(&["status"], root);
    assert!(text.contains("Files:      41"), "{text}");

    // `status --check`: SQLite's and FTS5's own checks pass on a sound index
    // (and, at the end, report a full-text index with a segment page gone).
    let checked: serde_json::Value = serde_json::from_str(&ok(&["status", "--json", "--check"], root)).unwrap();
    assert_eq!(checked["check"]["ok"], true, "{checked}");
    assert!(ok(&["status", "--check"], root).contains("Check:      ok"));

    // loadItem3 in camelCase is found by its words and by snake_case.
    for query in ["loadItem3", "load_item3", "load item3"] {
        let out = ok(&["search", query, "--json", "-n", "3", "--path", "*.php"], root);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let results = v["results"].as_array().unwrap();
        assert_eq!(results.len(), 3, "{query}: {out}");
        assert!(results.iter().all(|r| r["path"].as_str().unwrap().ends_with(".php")), "{query}: {out}");
    }
    let out = ok(&["search", "get_value_4_2", "--repo", root.to_str().unwrap()], dir.path().parent().unwrap());
    assert!(out.contains("pkg4/sub4/mod_4.py"), "{out}");
    let out = ok(&["search", "qwertyuiop"], root);
    assert!(out.contains("no matches"), "{out}");

    {
        let store = Store::open_existing(&db(root)).unwrap();
        store.conn().execute("DELETE FROM chunks_fts_data WHERE id = (SELECT max(id) FROM chunks_fts_data)", []).unwrap();
    }
    let damaged = run(&["status", "--check"], root);
    let text = String::from_utf8_lossy(&damaged.stdout);
    assert_eq!(damaged.status.code(), Some(1), "{text}");
    assert!(text.contains("DAMAGED") && text.contains("full-text index") && text.contains("index.db"), "{text}");
}

#[test]
fn errors_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&["search", "anything"], dir.path());
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("code-intel index"), "{err}");
    let out = run(&["status"], dir.path());
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("code-intel index"));

    std::fs::create_dir_all(dir.path().join(".code-intel")).unwrap();
    std::fs::write(dir.path().join(".code-intel/config.json"), r#"{"max_file_bytes": "huge", "colour": 1}"#).unwrap();
    let out = run(&["index"], dir.path());
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`max_file_bytes`"), "{err}");
    std::fs::write(dir.path().join(".code-intel/config.json"), r#"{"colour": 1}"#).unwrap();
    let out = run(&["index"], dir.path());
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("`colour`"), "unknown keys are reported");

    let out = run(&["search", "x", "--repo", dir.path().to_str().unwrap(), "--path", "a[b"], dir.path());
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid path glob"));
    let out = run(&["index", "/nonexistent/dir"], dir.path());
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/dir"));
}

/// SIGKILL during a sync (after at least one batch has committed, long
/// before the last): the index is intact, the next run resumes, and the
/// result equals a clean index.
#[cfg(unix)]
#[test]
fn sync_killed_mid_way_leaves_a_consistent_index_and_resumes() {
    const FILES: usize = 6_000;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    generate(root, FILES);

    let mut child = bin().arg("index").arg(root).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
    let started = Instant::now();
    let mut seen = 0;
    while started.elapsed() < Duration::from_secs(120) {
        seen = indexed_files(root);
        if seen > 0 {
            break;
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    assert!(!status.success(), "the sync finished before it could be killed; make the tree larger");
    let at_kill = indexed_files(root);
    assert!(seen > 0 && at_kill < FILES as i64, "killed mid-way: {at_kill} of {FILES} files committed");

    // Intact right after the kill, before any repair.
    let store = Store::open(&db(root)).unwrap();
    assert_eq!(store.integrity_check().unwrap(), Ok(()));
    drop(store);
    let status: serde_json::Value = serde_json::from_str(&ok(&["status", "--json"], root)).unwrap();
    assert_eq!(status["sync"]["state"], "interrupted");

    let report: serde_json::Value = serde_json::from_str(&ok(&["index", "--json"], root)).unwrap();
    assert_eq!(report["added"].as_i64().unwrap() + at_kill, FILES as i64, "resumed where it stopped: {report}");
    assert_eq!(snapshot(root), clean_snapshot(root));
}

#[test]
fn two_processes_syncing_one_repository() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    generate(root, 3000);
    let spawn = || {
        bin().args(["index", "--json"]).arg(root).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    let ra: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    let rb: serde_json::Value = serde_json::from_slice(&b.stdout).unwrap();
    assert_eq!(ra["added"].as_u64().unwrap() + rb["added"].as_u64().unwrap(), 3000, "each file added once: {ra} {rb}");
    assert_eq!(snapshot(root), clean_snapshot(root));
}
