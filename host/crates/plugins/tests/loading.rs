//! Loading: rejections with reasons, shadowing on the search path, and the
//! compiled-component cache.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use code_intel_core::Chunker;
use code_intel_plugins::{HostOptions, PluginDir, PluginHost, SourceKind};
use common::{quick_limits, test_plugin};

fn options(cache: &std::path::Path) -> HostOptions {
    HostOptions { limits: quick_limits(), cache_dir: Some(cache.to_path_buf()), lazy: true }
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

fn eager(cache: &std::path::Path) -> HostOptions {
    HostOptions { lazy: false, ..options(cache) }
}

/// The cache entries (file names, sorted) ending with `suffix`.
fn entries(cache: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().ends_with(suffix))
        .collect();
    found.sort();
    found
}

#[test]
fn second_start_loads_from_the_cache() {
    let cache = tempfile::tempdir().unwrap();
    let files = [(test_plugin("probe"), SourceKind::Explicit)];
    let first = PluginHost::load_files(&files, eager(cache.path()));
    let first = first.plugins().next().unwrap().clone();
    assert!(!first.from_cache, "a fresh cache cannot hold the plugin");
    let code = entries(cache.path(), ".cwasm");
    assert_eq!(code.len(), 1, "{code:?}");
    assert_eq!(entries(cache.path(), ".info").len(), 1, "the description is cached beside the code");

    let second = PluginHost::load_files(&files, eager(cache.path()));
    let second = second.plugins().next().unwrap().clone();
    assert!(second.from_cache && !second.deferred, "the second start must not recompile");
    assert_eq!(second.name, first.name);

    // A corrupt entry is discarded and rebuilt, never trusted.
    fs::write(&code[0], b"corrupt").unwrap();
    let third = PluginHost::load_files(&files, eager(cache.path()));
    assert!(third.rejections().is_empty(), "{:?}", third.rejections());
    assert!(!third.plugins().next().unwrap().from_cache);
    assert!(fs::read(&code[0]).unwrap().len() > 1000);
}

#[test]
fn lazy_start_describes_plugins_from_the_cache_and_loads_only_what_a_file_needs() {
    let cache = tempfile::tempdir().unwrap();
    let files: Vec<_> = ["probe", "decline", "trap"].iter().map(|n| (test_plugin(n), SourceKind::Explicit)).collect();

    // Cold cache: nothing to describe the plugins from, so each is loaded
    // (and instantiated) to ask for its info, which is then cached.
    let first = PluginHost::load_files(&files, options(cache.path()));
    assert!(first.rejections().is_empty(), "{:?}", first.rejections());
    assert!(first.plugins().all(|p| !p.deferred && !p.from_cache));
    assert!(["probe", "decline", "trap"].iter().all(|n| first.is_loaded(n)));
    let cold: Vec<_> = first.plugins().cloned().collect();
    drop(first);

    // Second start: every plugin described from the cache, none loaded.
    let second = PluginHost::load_files(&files, options(cache.path()));
    assert!(second.rejections().is_empty(), "{:?}", second.rejections());
    let warm: Vec<_> = second.plugins().cloned().collect();
    assert!(warm.iter().all(|p| p.deferred && p.from_cache), "{warm:?}");
    let describe = |p: &code_intel_plugins::PluginSummary| {
        (p.name.clone(), p.version.clone(), p.description.clone(), p.languages.clone(), p.file_patterns.clone(), p.priority, p.wit_version.clone())
    };
    assert_eq!(warm.iter().map(describe).collect::<Vec<_>>(), cold.iter().map(describe).collect::<Vec<_>>());
    assert!(!second.is_loaded("probe") && !second.is_loaded("decline") && !second.is_loaded("trap"));

    // A `.probe` file is claimed by probe alone: only probe is loaded.
    let file = second.chunk_file("src/a.probe", "hello\n");
    assert_eq!(file.chunker, "probe", "{file:?}");
    assert!(file.failures.is_empty(), "{:?}", file.failures);
    assert!(second.is_loaded("probe"));
    assert!(!second.is_loaded("decline") && !second.is_loaded("trap"), "plugins no file needed were loaded");

    // A Python file goes to decline (priority 1000) then trap: both load now,
    // on first use, and behave as if they had been loaded at start.
    let file = second.chunk_file("a.py", "def f():\n    pass\n");
    assert_eq!(file.declined.first().map(|d| d.0.as_str()), Some("decline"), "{file:?}");
    assert_eq!(file.failures.first().map(|f| f.plugin.as_str()), Some("trap"), "{file:?}");
    assert!(second.is_loaded("decline") && second.is_loaded("trap"));
}

#[test]
fn deferred_plugins_load_once_when_many_threads_need_them_at_once() {
    let cache = tempfile::tempdir().unwrap();
    let files = [(test_plugin("probe"), SourceKind::Explicit)];
    drop(PluginHost::load_files(&files, options(cache.path())));
    let host = PluginHost::load_files(&files, options(cache.path()));
    assert!(!host.is_loaded("probe"));
    std::thread::scope(|scope| {
        for i in 0..8 {
            let host = &host;
            scope.spawn(move || {
                let file = host.chunk_file(&format!("f{i}.py"), "def f():\n    pass\n");
                assert_eq!(file.chunker, "probe", "{file:?}");
            });
        }
    });
    assert!(host.is_loaded("probe"));
}

#[test]
fn a_damaged_cache_falls_back_to_loading_the_component() {
    let cache = tempfile::tempdir().unwrap();
    let files = [(test_plugin("probe"), SourceKind::Explicit)];
    drop(PluginHost::load_files(&files, options(cache.path())));
    let info = entries(cache.path(), ".info").pop().expect("description cached");
    let code = entries(cache.path(), ".cwasm").pop().expect("code cached");
    let chunk = |host: &PluginHost| host.chunk_file("m.py", "def f():\n    pass\n");

    // A garbled description: not believed; the plugin is loaded in full and
    // the description written again.
    fs::write(&info, b"{ not what was written").unwrap();
    let host = PluginHost::load_files(&files, options(cache.path()));
    let summary = host.plugins().next().unwrap().clone();
    assert!(!summary.deferred && host.is_loaded("probe"), "{summary:?}");
    assert_eq!(chunk(&host).chunker, "probe");
    assert!(PluginHost::load_files(&files, options(cache.path())).plugins().next().unwrap().deferred);

    // A truncated description, likewise.
    let text = fs::read(&info).unwrap();
    fs::write(&info, &text[..text.len() / 2]).unwrap();
    assert!(!PluginHost::load_files(&files, options(cache.path())).plugins().next().unwrap().deferred);

    // Corrupt compiled code behind an intact description: the first file
    // that needs the plugin compiles it again (and rewrites the entry).
    fs::write(&code, b"corrupt").unwrap();
    let host = PluginHost::load_files(&files, options(cache.path()));
    assert!(host.plugins().next().unwrap().deferred);
    let file = chunk(&host);
    assert_eq!(file.chunker, "probe", "{file:?}");
    assert!(file.failures.is_empty(), "{:?}", file.failures);
    assert!(fs::read(&code).unwrap().len() > 1000);

    // Compiled code gone: the same.
    fs::remove_file(&code).unwrap();
    let host = PluginHost::load_files(&files, options(cache.path()));
    assert_eq!(chunk(&host).chunker, "probe");
    assert!(code.is_file());
}

#[test]
fn a_description_that_does_not_match_its_component_is_never_used_twice() {
    use sha2::{Digest, Sha256};
    let cache = tempfile::tempdir().unwrap();
    let files = [(test_plugin("probe"), SourceKind::Explicit)];
    drop(PluginHost::load_files(&files, options(cache.path())));
    let info = entries(cache.path(), ".info").pop().expect("description cached");

    // Forge a well-formed description (valid checksum) that claims other
    // patterns than the component's `info()` answers.
    let text = fs::read_to_string(&info).unwrap();
    let (_, json) = text.split_once('\n').unwrap();
    let forged = json.replace("\"**/*.probe\"", "\"**/*.forged\"");
    assert_ne!(forged, json);
    let sum: String = Sha256::digest(forged.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    fs::write(&info, format!("{sum}\n{forged}")).unwrap();

    let host = PluginHost::load_files(&files, options(cache.path()));
    assert!(host.plugins().next().unwrap().file_patterns.contains(&"**/*.forged".to_string()));
    // First use compares with what the component says: the file gets line
    // chunks and a recorded failure, never chunks under a wrong description.
    let file = host.chunk_file("x.forged", "text\n");
    assert_eq!(file.chunker, code_intel_core::chunk::FALLBACK_CHUNKER, "{file:?}");
    assert!(file.failures[0].message.contains("no longer matches its cached description"), "{:?}", file.failures);
    assert!(!host.is_loaded("probe"));
    // The entry is gone: the next start loads the component and is right again.
    assert!(!info.exists());
    let next = PluginHost::load_files(&files, options(cache.path()));
    let summary = next.plugins().next().unwrap();
    assert!(!summary.deferred && summary.file_patterns.contains(&"**/*.probe".to_string()), "{summary:?}");
}

#[test]
fn a_start_that_compiles_prunes_stale_cache_entries() {
    let cache = tempfile::tempdir().unwrap();
    let plugins = tempfile::tempdir().unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3 * 24 * 3600);
    // Compiled code of another engine, unused for days.
    let foreign = cache.path().join(format!("{}-ffffffffffffffff.cwasm", "ab".repeat(32)));
    fs::write(&foreign, b"code").unwrap();
    fs::File::options().write(true).open(&foreign).unwrap().set_modified(old).unwrap();

    // A plugin that is then rebuilt: its old entries describe a component
    // that no longer exists.
    let plugin = plugins.path().join("probe.wasm");
    fs::copy(test_plugin("decline"), &plugin).unwrap();
    let files = [(plugin.clone(), SourceKind::Repo)];
    drop(PluginHost::load_files(&files, options(cache.path())));
    let before = entries(cache.path(), ".cwasm");
    assert!(!foreign.exists(), "a start that compiled prunes the cache");
    assert_eq!(before.len(), 1, "{before:?}");

    fs::copy(test_plugin("probe"), &plugin).unwrap();
    let host = PluginHost::load_files(&files, options(cache.path()));
    assert_eq!(host.plugins().next().unwrap().name, "probe");
    let after = entries(cache.path(), ".cwasm");
    assert_eq!(after.len(), 1, "{after:?}");
    assert_ne!(after, before, "the rebuilt plugin's old entry is removed, the new one kept");
    assert_eq!(entries(cache.path(), ".info").len(), 1);

    // A start that compiles nothing and pruned recently does not walk the cache.
    fs::write(&foreign, b"code").unwrap();
    fs::File::options().write(true).open(&foreign).unwrap().set_modified(old).unwrap();
    drop(PluginHost::load_files(&files, options(cache.path())));
    assert!(foreign.exists());
}

#[test]
fn without_a_cache_directory_plugins_still_load() {
    let files = [(test_plugin("probe"), SourceKind::Explicit)];
    let host = PluginHost::load_files(&files, HostOptions { limits: quick_limits(), cache_dir: None, lazy: true });
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

/// The identity an index keeps of its chunker follows the plugin set and
/// each component's bytes, whether the code was loaded or only described
/// from the cache.
#[test]
fn the_identity_changes_with_the_plugins_and_only_then() {
    let cache = tempfile::tempdir().unwrap();
    let one = [(test_plugin("probe"), SourceKind::Explicit)];
    let two = [(test_plugin("probe"), SourceKind::Explicit), (test_plugin("decline"), SourceKind::Explicit)];
    let eager_id = PluginHost::load_files(&one, eager(cache.path())).identity().unwrap();
    let lazy_id = PluginHost::load_files(&one, options(cache.path())).identity().unwrap();
    assert_eq!(eager_id, lazy_id, "loaded or described from the cache, the same plugins");
    assert_ne!(PluginHost::load_files(&two, options(cache.path())).identity().unwrap(), eager_id, "a plugin added");
    // The same name and version, other bytes (a rebuilt plugin).
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = fs::read(test_plugin("probe")).unwrap();
    // A custom section appended: still a valid component, other bytes.
    bytes.extend_from_slice(&[0x00, 0x04, 0x01, b'x', 0x01, 0x02]);
    let rebuilt = dir.path().join("probe.wasm");
    fs::write(&rebuilt, bytes).unwrap();
    let host = PluginHost::load_files(&[(rebuilt, SourceKind::Explicit)], options(cache.path()));
    assert!(host.rejections().is_empty(), "{:?}", host.rejections());
    assert_ne!(host.identity().unwrap(), eager_id, "a rebuilt plugin");
}
