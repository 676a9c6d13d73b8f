//! Project chores, run as `cargo xtask <task>`.
//!
//! - `plugins`: builds every plugin in `plugins/` for `wasm32-wasip2` and copies
//!   the components into `<target>/release/plugins/`, the directory the host
//!   searches beside its binary. Test-only plugins (crate names starting with
//!   `test-plugin-`) go to `<target>/test-plugins/` instead, so they are never
//!   loaded by accident.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const WASM_TARGET: &str = "wasm32-wasip2";
const TEST_PLUGIN_PREFIX: &str = "test_plugin_";

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("plugins") => build_plugins(),
        _ => Err("usage: cargo xtask plugins\n\n  plugins   build every plugin for wasm32-wasip2 and place it where the host finds it".to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

fn workspace_root() -> PathBuf {
    // `cargo run` sets the variable at run time too; prefer it over the
    // compile-time path, which is wrong when a binary built from another
    // checkout sharing the target directory is run.
    let manifest_dir = env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    manifest_dir.parent().expect("xtask lives in the workspace").to_path_buf()
}

fn target_dir(root: &Path) -> PathBuf {
    env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from)
}

fn build_plugins() -> Result<(), String> {
    let root = workspace_root();
    let target = target_dir(&root);
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(&cargo)
        .current_dir(root.join("plugins"))
        .args(["build", "--release", "--workspace", "--target", WASM_TARGET])
        .env("CARGO_TARGET_DIR", &target)
        .status()
        .map_err(|e| format!("could not run {cargo}: {e}"))?;
    if !status.success() {
        return Err(format!(
            "building the plugins failed (see above). If the error mentions `{WASM_TARGET}`, install the target: rustup target add {WASM_TARGET}"
        ));
    }
    let built = target.join(WASM_TARGET).join("release");
    let plugin_dir = target.join("release").join("plugins");
    let test_plugin_dir = target.join("test-plugins");
    for dir in [&plugin_dir, &test_plugin_dir] {
        fs::create_dir_all(dir).map_err(|e| format!("could not create {}: {e}", dir.display()))?;
    }
    let mut copied = 0;
    let entries = fs::read_dir(&built).map_err(|e| format!("could not read {}: {e}", built.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().and_then(|e| e.to_str()) != Some("wasm") {
            continue;
        }
        let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let destination = if let Some(rest) = file_name.strip_prefix(TEST_PLUGIN_PREFIX) {
            test_plugin_dir.join(rest)
        } else {
            plugin_dir.join(file_name.strip_prefix("code_intel_plugin_").unwrap_or(&file_name))
        };
        fs::copy(&path, &destination)
            .map_err(|e| format!("could not copy {} to {}: {e}", path.display(), destination.display()))?;
        copied += 1;
    }
    println!("xtask: {copied} plugin components placed in {} and {}", plugin_dir.display(), test_plugin_dir.display());
    Ok(())
}
