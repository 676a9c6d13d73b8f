//! Loading: rejections with reasons, shadowing on the search path, and the
//! compiled-component cache.

mod common;

use std::fs;

use code_intel_plugins::{HostOptions, PluginDir, PluginHost, SourceKind};
use common::{quick_limits, test_plugin};

fn options(cache: &std::path::Path) -> HostOptions {
    HostOptions { limits: quick_limits(), cache_dir: Some(cache.to_path_buf()) }
}

#[test]
fn bad_plugins_are_rejected_with_reasons_and_the_rest_load() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    for name in ["info-trap", "future-version", "probe"] {
        fs::copy(test_plugin(name), dir.path().join(format!("{name}.wasm"))).unwrap();
    }
    fs::write(dir.path().join("not-a-component.wasm"), b"\0asm\x01\0\0\0garbage").unwrap();
    fs::write(dir.path().join("notes.txt"), "not a plugin").unwrap();
    let host = PluginHost::load_dirs(&[PluginDir { path: dir.path().to_path_buf(), kind: SourceKind::Repo }], options(cache.path()));

    let loaded: Vec<_> = host.plugins().map(|p| p.name.as_str()).collect();
    assert_eq!(loaded, ["probe"]);
    let reason = |file: &str| {
        host.rejections()
            .iter()
            .find(|r| r.path.ends_with(file))
            .unwrap_or_else(|| panic!("{file} not rejected: {:?}", host.rejections()))
            .reason
            .clone()
    };
    let info = reason("info-trap.wasm");
    assert!(info.contains("info() trapped") && info.contains("deliberate test panic in info"), "{info}");
    let version = reason("future-version.wasm");
    assert!(version.contains("code-intel:plugin@0.2.0") && version.contains("supported: 0.1.0"), "{version}");
    let garbage = reason("not-a-component.wasm");
    assert!(garbage.contains("not a valid WebAssembly component"), "{garbage}");
    assert_eq!(host.rejections().len(), 3);
    assert_eq!(host.searched()[0].files, 4);
}

#[test]
fn later_search_path_entries_shadow_earlier_ones() {
    let bundled = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    fs::copy(test_plugin("probe"), bundled.path().join("probe.wasm")).unwrap();
    fs::copy(test_plugin("probe"), repo.path().join("my-probe.wasm")).unwrap();
    let dirs = [
        PluginDir { path: bundled.path().to_path_buf(), kind: SourceKind::BesideBinary },
        PluginDir { path: repo.path().to_path_buf(), kind: SourceKind::Repo },
        PluginDir { path: repo.path().join("missing"), kind: SourceKind::EnvVar },
    ];
    let host = PluginHost::load_dirs(&dirs, options(cache.path()));
    let loaded: Vec<_> = host.plugins().collect();
    assert_eq!(loaded.len(), 1);
    assert_eq!(loaded[0].source, SourceKind::Repo);
    assert!(loaded[0].path.ends_with("my-probe.wasm"));
    assert_eq!(host.rejections().len(), 1);
    let shadowed = &host.rejections()[0];
    assert_eq!(shadowed.name.as_deref(), Some("probe"));
    assert!(shadowed.reason.starts_with("shadowed by"), "{}", shadowed.reason);
    assert!(!host.searched()[2].exists);
}

#[test]
fn second_start_loads_from_the_cache() {
    let cache = tempfile::tempdir().unwrap();
    let files = [(test_plugin("probe"), SourceKind::Explicit)];
    let first = PluginHost::load_files(&files, options(cache.path()));
    let first = first.plugins().next().unwrap().clone();
    assert!(!first.from_cache, "a fresh cache cannot hold the plugin");
    let entries: Vec<_> = fs::read_dir(cache.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert!(entries[0].to_string_lossy().ends_with(".cwasm"));

    let second = PluginHost::load_files(&files, options(cache.path()));
    let second = second.plugins().next().unwrap().clone();
    assert!(second.from_cache, "the second start must not recompile");
    assert_eq!(second.name, first.name);

    // A corrupt entry is discarded and rebuilt, never trusted.
    let entry = cache.path().join(&entries[0]);
    fs::write(&entry, b"corrupt").unwrap();
    let third = PluginHost::load_files(&files, options(cache.path()));
    assert!(third.rejections().is_empty(), "{:?}", third.rejections());
    assert!(!third.plugins().next().unwrap().from_cache);
    assert!(fs::read(&entry).unwrap().len() > 1000);
}

#[test]
fn without_a_cache_directory_plugins_still_load() {
    let files = [(test_plugin("probe"), SourceKind::Explicit)];
    let host = PluginHost::load_files(&files, HostOptions { limits: quick_limits(), cache_dir: None });
    assert_eq!(host.plugins().count(), 1);
}

#[test]
fn search_path_order_is_binary_env_repo() {
    let repo = tempfile::tempdir().unwrap();
    let dirs = code_intel_plugins::search_path(Some(repo.path()));
    let kinds: Vec<_> = dirs.iter().map(|d| d.kind).collect();
    assert_eq!(kinds.first(), Some(&SourceKind::BesideBinary));
    assert_eq!(kinds.last(), Some(&SourceKind::Repo));
    assert_eq!(dirs.last().unwrap().path, repo.path().join(".code-intel").join("plugins"));
    // Test binaries live in <target>/release/deps: <target>/release/plugins is searched too.
    assert!(dirs.iter().any(|d| d.path == common::target_dir().join("release").join("plugins")), "{dirs:?}");
}
