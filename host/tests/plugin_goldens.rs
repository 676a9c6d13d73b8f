//! The built-in plugins against their golden files, and `plugin new` end to
//! end: scaffold, build for wasm32-wasip2, pass the harness.
//!
//! Needs the components built first: `cargo xtask plugins` (the README's test
//! command does it). A missing component fails the test with that hint.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn code_intel() -> Command {
    Command::new(env!("CARGO_BIN_EXE_code-intel"))
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("host/ lives in the repository").to_path_buf()
}

/// `<target>/release/plugins`, where `cargo xtask plugins` puts the components:
/// beside the `code-intel` binary under test.
fn plugin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_code-intel")).parent().expect("binary has a directory").join("plugins")
}

fn built_plugin(name: &str) -> PathBuf {
    let path = plugin_dir().join(format!("{name}.wasm"));
    assert!(path.is_file(), "{} is missing: build the plugins first with `cargo xtask plugins`", path.display());
    path
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

fn count_goldens(dir: &Path) -> usize {
    let mut count = 0;
    for entry in std::fs::read_dir(dir).expect("fixture directory") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            count += count_goldens(&path);
        } else if path.to_string_lossy().ends_with(".golden.json") {
            count += 1;
        }
    }
    count
}

fn assert_harness_passes(plugin: &Path, fixtures: &Path) {
    let output = code_intel().args(["plugin", "test"]).arg(plugin).arg(fixtures).output().expect("run code-intel");
    let out = text(&output);
    assert!(output.status.success(), "plugin test failed:\n{out}");
    let goldens = count_goldens(fixtures);
    assert!(goldens > 0, "no golden files under {}", fixtures.display());
    assert!(
        out.contains(&format!("{goldens} file(s): {goldens} passed, 0 failed")),
        "expected all {goldens} fixtures to be checked:\n{out}"
    );
}

#[test]
fn python_plugin_matches_its_golden_files() {
    assert_harness_passes(&built_plugin("python"), &repo_root().join("fixtures/python"));
}

#[test]
fn php_plugin_matches_its_golden_files() {
    assert_harness_passes(&built_plugin("php"), &repo_root().join("fixtures/php"));
}

#[test]
fn javascript_plugin_matches_its_golden_files() {
    assert_harness_passes(&built_plugin("javascript"), &repo_root().join("fixtures/javascript"));
}

#[test]
fn go_plugin_matches_its_golden_files() {
    assert_harness_passes(&built_plugin("go"), &repo_root().join("fixtures/go"));
}

#[test]
fn java_plugin_matches_its_golden_files() {
    assert_harness_passes(&built_plugin("java"), &repo_root().join("fixtures/java"));
}

#[test]
fn css_plugin_matches_its_golden_files() {
    assert_harness_passes(&built_plugin("css"), &repo_root().join("fixtures/css"));
}

#[test]
fn html_plugin_matches_its_golden_files() {
    assert_harness_passes(&built_plugin("html"), &repo_root().join("fixtures/html"));
}

#[test]
fn vue_plugin_matches_its_golden_files() {
    assert_harness_passes(&built_plugin("vue"), &repo_root().join("fixtures/vue"));
}

/// The harness really compares: a golden file that disagrees with the plugin
/// fails the run with a diff naming the difference.
#[test]
fn a_wrong_golden_file_fails_the_harness() {
    let dir = tempfile::tempdir().expect("temp dir");
    let fixture = repo_root().join("fixtures/python/shop/services/notifications.py");
    std::fs::copy(&fixture, dir.path().join("notifications.py")).expect("copy fixture");
    let golden = std::fs::read_to_string(fixture.with_file_name("notifications.py.golden.json")).expect("golden");
    let wrong = golden.replace("\"name\": \"send_created\"", "\"name\": \"send_deleted\"");
    assert_ne!(golden, wrong, "the fixture's golden file names send_created");
    std::fs::write(dir.path().join("notifications.py.golden.json"), wrong).expect("write golden");

    let output = code_intel().args(["plugin", "test"]).arg(built_plugin("python")).arg(dir.path()).output().expect("run");
    let out = text(&output);
    assert!(!output.status.success(), "a wrong golden file must fail:\n{out}");
    assert!(out.contains("MISMATCH") && out.contains("send_deleted") && out.contains("send_created"), "{out}");
}

/// `plugin new` in an empty directory outside any checkout scaffolds a crate
/// that builds for wasm32-wasip2 without network and with an empty cargo
/// home (no registry cache, no user configuration): the SDK, the WIT and the
/// SDK's third-party crates are written into it, with the cargo
/// configuration that uses them and a lock file `--locked` accepts. The
/// component passes the harness without any edit.
#[test]
fn scaffolded_plugin_builds_offline_and_passes_the_harness() {
    let started = std::time::Instant::now();
    let dir = tempfile::tempdir().expect("temp dir");
    let crate_dir = dir.path().join("demo-lang");
    let output = code_intel()
        .args(["plugin", "new", "demo-lang", "--dir"])
        .arg(&crate_dir)
        .output()
        .expect("run code-intel plugin new");
    assert!(output.status.success(), "plugin new failed:\n{}", text(&output));
    for file in [
        "Cargo.toml",
        "Cargo.lock",
        "src/lib.rs",
        "README.md",
        "fixtures/greetings.py",
        "fixtures/greetings.py.golden.json",
        "wit/plugin.wit",
        "vendor/code-intel-plugin-sdk/Cargo.toml",
        "vendor/code-intel-plugin-sdk/src/code_intel_plugin_sdk.rs",
        ".cargo/config.toml",
        "vendor/crates/wit-bindgen-0.61.1/.cargo-checksum.json",
    ] {
        assert!(crate_dir.join(file).is_file(), "scaffold lacks {file}");
    }

    // The toolchain's own cargo (the one running this test) and the rustc
    // beside it, so that nothing is looked up in the empty cargo home.
    let cargo = PathBuf::from(std::env::var("CARGO").expect("cargo test sets CARGO"));
    let rustc = cargo.with_file_name(format!("rustc{}", std::env::consts::EXE_SUFFIX));
    assert!(rustc.is_file(), "no rustc beside {}", cargo.display());
    let empty_cargo_home = tempfile::tempdir().expect("temp dir");
    // Its own target directory inside the shared one: never contending for
    // the lock of the build running us.
    let target = plugin_dir().parent().expect("release dir").parent().expect("target dir").join("scaffold-test");
    let build = Command::new(&cargo)
        .current_dir(&crate_dir)
        .args(["build", "--release", "--target", "wasm32-wasip2", "--offline", "--locked"])
        .env("CARGO_HOME", empty_cargo_home.path())
        .env("RUSTC", &rustc)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("run cargo");
    assert!(build.status.success(), "the scaffold does not build offline with an empty cargo home:\n{}", text(&build));
    let home: Vec<_> = std::fs::read_dir(empty_cargo_home.path()).expect("cargo home").map(|e| e.expect("entry").file_name()).collect();
    assert!(!home.iter().any(|n| n == "registry"), "the build went to the registry cache: {home:?}");

    let component = target.join("wasm32-wasip2/release/demo_lang.wasm");
    assert!(component.is_file(), "no component at {}", component.display());
    assert_harness_passes(&component, &crate_dir.join("fixtures"));

    let list = code_intel().args(["plugin", "test"]).arg(&component).arg(crate_dir.join("fixtures")).output().expect("run");
    assert!(text(&list).contains("demo-lang"), "the plugin reports the scaffolded name:\n{}", text(&list));
    eprintln!("plugin new, offline build and plugin test: {:.1} s", started.elapsed().as_secs_f64());
}

/// Outside a code-intel checkout, without `--sdk`, the scaffold depends on the
/// SDK copy written into it; with `--sdk` or inside a checkout it uses a
/// relative path.
#[test]
fn scaffold_chooses_how_to_depend_on_the_sdk() {
    let outside = tempfile::tempdir().expect("temp dir");
    let crate_dir = outside.path().join("elsewhere");
    let output = code_intel().args(["plugin", "new", "elsewhere", "--dir"]).arg(&crate_dir).output().expect("run");
    assert!(output.status.success(), "{}", text(&output));
    let manifest = std::fs::read_to_string(crate_dir.join("Cargo.toml")).expect("manifest");
    assert!(manifest.contains("code-intel-plugin-sdk = { path = \"vendor/code-intel-plugin-sdk\" }"), "{manifest}");
    assert!(!manifest.contains("git ="), "{manifest}");

    // --no-vendor: the SDK is copied, its crates are left to crates.io.
    let registry = outside.path().join("registry");
    let output = code_intel().args(["plugin", "new", "registry", "--no-vendor", "--dir"]).arg(&registry).output().expect("run");
    assert!(output.status.success(), "{}", text(&output));
    assert!(registry.join("vendor/code-intel-plugin-sdk/Cargo.toml").is_file());
    assert!(registry.join("Cargo.lock").is_file());
    assert!(!registry.join("vendor/crates").exists() && !registry.join(".cargo").exists(), "--no-vendor writes no crates");
    assert!(crate_dir.join("vendor/crates").is_dir() && crate_dir.join(".cargo/config.toml").is_file(), "without it they are written");

    let with_sdk = outside.path().join("with-sdk");
    let output = code_intel()
        .args(["plugin", "new", "with-sdk", "--dir"])
        .arg(&with_sdk)
        .arg("--sdk")
        .arg(repo_root().join("plugins/sdk"))
        .output()
        .expect("run");
    assert!(output.status.success(), "{}", text(&output));
    let manifest = std::fs::read_to_string(with_sdk.join("Cargo.toml")).expect("manifest");
    assert!(manifest.contains("plugins/sdk\" }"), "{manifest}");
    assert!(!with_sdk.join("vendor").exists(), "an SDK given by path is not copied");

    let again = code_intel().args(["plugin", "new", "elsewhere", "--dir"]).arg(&crate_dir).output().expect("run");
    assert!(!again.status.success(), "a non-empty directory must be refused");
    assert!(text(&again).contains("not empty"), "{}", text(&again));

    let bad = code_intel().args(["plugin", "new", "Bad_Name"]).current_dir(outside.path()).output().expect("run");
    assert!(!bad.status.success());
    assert!(text(&bad).contains("not a valid plugin name"), "{}", text(&bad));

    // Inside the checkout (under the git-ignored `target/`), found by walking up.
    let ignored = repo_root().join("target");
    std::fs::create_dir_all(&ignored).expect("create target/");
    let inside = tempfile::tempdir_in(&ignored).expect("temp dir in target/");
    let output = code_intel().args(["plugin", "new", "inside", "--dir"]).arg(inside.path().join("inside")).output().expect("run");
    assert!(output.status.success(), "{}", text(&output));
    let manifest = std::fs::read_to_string(inside.path().join("inside/Cargo.toml")).expect("manifest");
    assert!(manifest.contains("code-intel-plugin-sdk = { path = \"../../../plugins/sdk\" }"), "{manifest}");
}
