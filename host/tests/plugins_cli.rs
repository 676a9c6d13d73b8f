//! `code-intel plugin list`, `plugin test` and `chunk`, run as a user would,
//! with the test plugins built by `cargo xtask plugins`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn target_dir() -> PathBuf {
    std::env::current_exe().unwrap().ancestors().nth(3).unwrap().to_path_buf()
}

fn test_plugin(name: &str) -> PathBuf {
    let path = target_dir().join("test-plugins").join(format!("{name}.wasm"));
    assert!(path.is_file(), "{} is missing: run `cargo xtask plugins` first", path.display());
    path
}

/// The binary with a private cache and the given plugin directory.
fn code_intel(plugin_dir: Option<&Path>, cache: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_code-intel"));
    cmd.env("CODE_INTEL_CACHE_DIR", cache).env_remove("CODE_INTEL_PLUGIN_DIR");
    if let Some(dir) = plugin_dir {
        cmd.env("CODE_INTEL_PLUGIN_DIR", dir);
    }
    cmd
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn plugin_list_shows_loaded_and_rejected_plugins() {
    let plugins = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    fs::copy(test_plugin("probe"), plugins.path().join("probe.wasm")).unwrap();
    fs::copy(test_plugin("info_trap"), plugins.path().join("info_trap.wasm")).unwrap();

    let out = code_intel(Some(plugins.path()), cache.path())
        .args(["plugin", "list", "--json", "--repo"])
        .arg(repo.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let probe = json["plugins"].as_array().unwrap().iter().find(|p| p["name"] == "probe").expect("probe loaded");
    assert_eq!(probe["source"], "env_var");
    assert_eq!(probe["from_cache"], false);
    let rejected = json["rejected"].as_array().unwrap();
    assert!(
        rejected.iter().any(|r| r["path"].as_str().unwrap().ends_with("info_trap.wasm")
            && r["reason"].as_str().unwrap().contains("info() trapped")),
        "{rejected:?}"
    );
    let kinds: Vec<_> = json["search_path"].as_array().unwrap().iter().map(|d| d["source"].as_str().unwrap().to_string()).collect();
    assert_eq!(kinds.last().map(String::as_str), Some("repo"));

    // Second start: from the cache. Text output names the rejection too.
    let out = code_intel(Some(plugins.path()), cache.path()).args(["plugin", "list"]).output().unwrap();
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.contains("probe 0.1.0") && text.contains("from cache"), "{text}");
    assert!(text.contains("Rejected") && text.contains("deliberate test panic in info"), "{text}");
}

#[test]
fn plugin_test_blesses_compares_and_diffs() {
    let cache = tempfile::tempdir().unwrap();
    let fixtures = tempfile::tempdir().unwrap();
    fs::create_dir_all(fixtures.path().join("pkg")).unwrap();
    fs::write(fixtures.path().join("pkg/app.py"), "def main():\n    return 1\n").unwrap();
    fs::write(fixtures.path().join("README.md"), "not matched by the plugin\n").unwrap();
    let run = |bless: bool| {
        let mut cmd = code_intel(None, cache.path());
        cmd.args(["plugin", "test"]).arg(test_plugin("probe")).arg(fixtures.path());
        if bless {
            cmd.arg("--bless");
        }
        cmd.output().unwrap()
    };

    let missing = run(false);
    assert!(!missing.status.success());
    assert!(stdout(&missing).contains("MISSING  pkg/app.py"), "{}", stdout(&missing));

    let blessed = run(true);
    assert!(blessed.status.success(), "{}", stdout(&blessed));
    let golden = fs::read_to_string(fixtures.path().join("pkg/app.py.golden.json")).unwrap();
    assert!(golden.starts_with("{\n  \"outcome\": \"chunks\""), "{golden}");
    assert!(golden.contains("\"name\": \"main\""));
    assert!(!fixtures.path().join("README.md.golden.json").exists());

    let passed = run(false);
    assert!(passed.status.success(), "{}", stdout(&passed));
    assert!(stdout(&passed).contains("1 passed, 0 failed"));

    fs::write(fixtures.path().join("pkg/app.py"), "def start():\n    return 1\n").unwrap();
    let mismatch = run(false);
    assert!(!mismatch.status.success());
    let text = stdout(&mismatch);
    assert!(text.contains("MISMATCH pkg/app.py"), "{text}");
    assert!(text.contains("-      \"name\": \"main\"") && text.contains("+      \"name\": \"start\""), "{text}");
}

#[test]
fn plugin_test_never_blesses_a_trap() {
    let cache = tempfile::tempdir().unwrap();
    let fixtures = tempfile::tempdir().unwrap();
    fs::write(fixtures.path().join("boom.hostile"), "x\n").unwrap();
    let out = code_intel(None, cache.path())
        .args(["plugin", "test"])
        .arg(test_plugin("trap"))
        .arg(fixtures.path())
        .arg("--bless")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stdout(&out).contains("FAILED   boom.hostile: Trap"), "{}", stdout(&out));
    assert!(!fixtures.path().join("boom.hostile.golden.json").exists());

    let bad = code_intel(None, cache.path()).args(["plugin", "test"]).arg(test_plugin("future_version")).arg(fixtures.path()).output().unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("code-intel:plugin@0.2.0"));
}

#[test]
fn chunk_shows_the_chunker_and_contained_failures() {
    let cache = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    let plugins = repo.path().join(".code-intel/plugins");
    fs::create_dir_all(&plugins).unwrap();
    fs::copy(test_plugin("probe"), plugins.join("probe.wasm")).unwrap();
    fs::copy(test_plugin("trap"), plugins.join("trap.wasm")).unwrap();
    fs::create_dir_all(repo.path().join("src")).unwrap();
    fs::write(repo.path().join("src/notes.probe"), "hello\nworld\n").unwrap();
    fs::write(repo.path().join("src/boom.hostile"), "one\ntwo\n").unwrap();

    let out = code_intel(None, cache.path())
        .args(["chunk", "--json", "--repo"])
        .arg(repo.path())
        .arg(repo.path().join("src/notes.probe"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["path"], "src/notes.probe");
    assert_eq!(json["chunker"], "probe");
    assert_eq!(json["chunks"][0]["content"], "hello\nworld\n");

    let out = code_intel(None, cache.path())
        .args(["chunk", "--repo"])
        .arg(repo.path())
        .arg(repo.path().join("src/boom.hostile"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.contains("by fallback") && text.contains("FAILED trap (Trap)"), "{text}");

    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("x.py"), "x = 1\n").unwrap();
    let out = code_intel(None, cache.path()).args(["chunk", "--repo"]).arg(repo.path()).arg(outside.path().join("x.py")).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not inside the repository"));
}
