//! Shared helpers: where the test plugins are, and hosts built from them.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use code_intel_plugins::{HostOptions, Limits, PluginHost, SourceKind};

/// `<target>` for this test binary (`<target>/release/deps/<test>`).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.ancestors().nth(3).expect("test binary lives in <target>/<profile>/deps").to_path_buf()
}

/// A test plugin built by `cargo xtask plugins` (crate `test-plugin-<name>`).
pub fn test_plugin(name: &str) -> PathBuf {
    let path = target_dir().join("test-plugins").join(format!("{}.wasm", name.replace('-', "_")));
    assert!(
        path.is_file(),
        "{} is missing: build the plugins first with `cargo xtask plugins` (same CARGO_TARGET_DIR)",
        path.display()
    );
    path
}

/// Fuel small enough to stop a looping test plugin in a fraction of a
/// second, and far more than the well-behaved test plugins need.
pub const QUICK_FUEL: u64 = 200_000_000;

/// Limits small enough to keep the hostile tests quick: fuel stops a loop;
/// the wall-clock backstop stays well above what that fuel takes, so which
/// limit stops a plugin never depends on the machine.
pub fn quick_limits() -> Limits {
    Limits { call_fuel: QUICK_FUEL, call_timeout: Duration::from_secs(10), memory_limit: 64 * 1024 * 1024 }
}

/// A host with exactly these test plugins and these limits.
pub fn host_with_limits(names: &[&str], cache: &Path, limits: Limits) -> PluginHost {
    let files: Vec<_> = names.iter().map(|n| (test_plugin(n), SourceKind::Explicit)).collect();
    let host = PluginHost::load_files(&files, HostOptions { limits, cache_dir: Some(cache.to_path_buf()), lazy: true });
    assert!(host.rejections().is_empty(), "unexpected rejections: {:?}", host.rejections());
    host
}

/// A host with exactly these test plugins, its own empty cache directory.
pub fn host_with(names: &[&str], cache: &Path) -> PluginHost {
    host_with_limits(names, cache, quick_limits())
}
