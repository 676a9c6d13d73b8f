//! The compiled-component cache: startup never recompiles an unchanged plugin,
//! and usually does not even load its code.
//!
//! Two kinds of entries, both keyed by the SHA-256 of the `.wasm` and the
//! engine hash (wasmtime's version and every compilation setting,
//! `Engine::precompile_compatibility_hash`):
//!
//! - `<sha>-<engine>.cwasm`: the output of `Engine::precompile_component`;
//! - `<sha>-<engine>-<contract>.info`: what the plugin's `info()` answered
//!   (name, version, patterns, priority, ...) and the contract version it was
//!   checked against. `<contract>` hashes the WIT contract this host
//!   implements, so a host with another contract never trusts it. The file
//!   starts with the SHA-256 of the rest: a damaged description is detected
//!   and ignored (the plugin is then loaded in full), never believed.
//!
//! A changed plugin or a changed engine therefore simply misses. Entries are
//! written atomically (temporary file, then rename), so a reader never sees
//! half an entry. [`prune`] removes entries nobody can use any more.

use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::wit::PluginInfo;

/// Environment variable naming code-intel's cache root; the plugin cache is
/// its `plugins/` subdirectory.
pub const CACHE_DIR_ENV: &str = "CODE_INTEL_CACHE_DIR";

/// Format of the `.info` entries; bumped when their fields change.
const INFO_FORMAT: u32 = 1;

/// An entry's use is recorded (its `.info` file's mtime moved to now) at most
/// this often, so a start writes nothing in the common case.
const TOUCH_EVERY: Duration = Duration::from_secs(24 * 3600);

/// [`prune`] runs at most this often on its own (and after any start that
/// had to compile, which is when entries go stale).
pub(crate) const PRUNE_EVERY: Duration = Duration::from_secs(24 * 3600);

/// Entries unused for this long are removed, whatever made them.
pub(crate) const UNUSED_LIMIT: Duration = Duration::from_secs(30 * 24 * 3600);

/// Entries of another engine or contract (another code-intel version), or
/// written without a description by an older host, are removed after this
/// long unused: the host that uses them records its use daily.
pub(crate) const FOREIGN_UNUSED_LIMIT: Duration = Duration::from_secs(2 * 24 * 3600);

/// Temporary files older than this are leftovers of a killed writer.
const TMP_LIMIT: Duration = Duration::from_secs(3600);

/// Name of the file whose mtime says when the cache was last pruned.
const PRUNE_STAMP: &str = ".pruned";

/// The default cache directory: `$CODE_INTEL_CACHE_DIR/plugins`, else
/// `$XDG_CACHE_HOME/code-intel/plugins`, else `~/.cache/code-intel/plugins`.
/// `None` when none of these can be determined (no cache is used then).
#[must_use]
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(CACHE_DIR_ENV).filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("plugins"));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from).filter(|d| d.is_absolute()) {
        return Some(dir.join("code-intel").join("plugins"));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|home| PathBuf::from(home).join(".cache").join("code-intel").join("plugins"))
}

/// A loaded component and where it came from.
pub(crate) struct LoadedComponent {
    pub(crate) component: Component,
    pub(crate) from_cache: bool,
    /// True when this load wrote a new `.cwasm` entry.
    pub(crate) wrote: bool,
}

/// Feeds `Hash` output into SHA-256, so the engine hash is stable across runs
/// (std's `DefaultHasher` makes no such promise).
struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn finish(&self) -> u64 {
        0
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Short stable hash of the engine's compilation settings.
pub(crate) fn engine_hash(engine: &Engine) -> String {
    let mut hasher = Sha256Hasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut hasher);
    hex(&hasher.0.finalize()[..8])
}

/// Short hash of the plugin contract as this host implements it (the WIT
/// text and the supported versions): a cached description says the plugin
/// fitted *this* contract.
pub(crate) fn contract_hash() -> &'static str {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| {
        let mut sha = Sha256::new();
        sha.update(include_str!("../../../../wit/plugin.wit"));
        for version in crate::wit::SUPPORTED_VERSIONS {
            sha.update(version.as_bytes());
            sha.update(b"\n");
        }
        hex(&sha.finalize()[..6])
    })
}

/// What identifies a component in the cache: the hash of its bytes and of
/// the engine that compiles it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Key {
    wasm_sha: String,
    engine: String,
}

impl Key {
    pub(crate) fn new(engine: &Engine, wasm: &[u8]) -> Self {
        Self { wasm_sha: hex(&Sha256::digest(wasm)), engine: engine_hash(engine) }
    }

    /// The hex SHA-256 of the component's bytes.
    pub(crate) fn wasm_sha(&self) -> &str {
        &self.wasm_sha
    }

    fn stem(&self) -> String {
        format!("{}-{}", self.wasm_sha, self.engine)
    }

    fn code_entry(&self, dir: &Path) -> PathBuf {
        dir.join(format!("{}.cwasm", self.stem()))
    }

    fn info_entry(&self, dir: &Path) -> PathBuf {
        dir.join(format!("{}-{}.info", self.stem(), contract_hash()))
    }
}

/// A plugin file read into memory, with what its file system entry said.
pub(crate) struct ComponentFile {
    pub(crate) bytes: Vec<u8>,
    len: u64,
    mtime_ns: i64,
}

fn mtime_ns(meta: &fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Reads a plugin file.
///
/// # Errors
/// The file cannot be read.
pub(crate) fn read_component(path: &Path) -> Result<ComponentFile, String> {
    let read = || -> std::io::Result<ComponentFile> {
        let mut file = fs::File::open(path)?;
        let meta = file.metadata()?;
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
        file.read_to_end(&mut bytes)?;
        Ok(ComponentFile { bytes, len: meta.len(), mtime_ns: mtime_ns(&meta) })
    };
    read().map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// A plugin's description as the cache keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CachedInfo {
    format: u32,
    /// `<sha>-<engine>`: the entry must describe the component it is found for.
    key: String,
    contract: String,
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) description: String,
    pub(crate) languages: Vec<String>,
    pub(crate) file_patterns: Vec<String>,
    pub(crate) priority: i32,
    /// Contract version the component was type-checked against.
    pub(crate) wit_version: String,
    /// The plugin file the entry was last written for, with its length and
    /// mtime then: when that file is gone or rewritten, [`prune`] knows the
    /// component no longer exists there.
    source: PathBuf,
    source_len: u64,
    source_mtime_ns: i64,
}

impl CachedInfo {
    pub(crate) fn new(key: &Key, info: &PluginInfo, wit_version: &str, source: &Path, file: &ComponentFile) -> Self {
        Self {
            format: INFO_FORMAT,
            key: key.stem(),
            contract: contract_hash().to_string(),
            name: info.name.clone(),
            version: info.version.clone(),
            description: info.description.clone(),
            languages: info.languages.clone(),
            file_patterns: info.file_patterns.clone(),
            priority: info.priority,
            wit_version: wit_version.to_string(),
            source: source.to_path_buf(),
            source_len: file.len,
            source_mtime_ns: file.mtime_ns,
        }
    }

    pub(crate) fn plugin_info(&self) -> PluginInfo {
        PluginInfo {
            name: self.name.clone(),
            version: self.version.clone(),
            description: self.description.clone(),
            languages: self.languages.clone(),
            file_patterns: self.file_patterns.clone(),
            priority: self.priority,
        }
    }

    fn encode(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        format!("{}\n{json}", hex(&Sha256::digest(json.as_bytes())))
    }

    /// The description in `text`, if it is intact and describes `key`.
    fn decode(text: &str, key: &Key) -> Result<Self, String> {
        let (sum, json) = text.split_once('\n').ok_or("no checksum line")?;
        if hex(&Sha256::digest(json.as_bytes())) != sum {
            return Err("checksum mismatch".into());
        }
        let info: Self = serde_json::from_str(json).map_err(|e| format!("unreadable: {e}"))?;
        if info.format != INFO_FORMAT || info.key != key.stem() || info.contract != contract_hash() {
            return Err("describes another component, format or contract".into());
        }
        Ok(info)
    }
}

/// The cached description of the component `file` (found at `source`), when
/// the cache holds an intact one. A damaged entry is deleted. Records the
/// entry's use (see [`prune`]) and, when the plugin file was rewritten with
/// the same content or is found at another path, where it now lives.
pub(crate) fn read_info(dir: &Path, key: &Key, source: &Path, file: &ComponentFile) -> Option<CachedInfo> {
    let entry = key.info_entry(dir);
    let mut handle = fs::File::open(&entry).ok()?;
    let mut text = String::new();
    let decoded = handle.read_to_string(&mut text).map_err(|e| e.to_string()).and_then(|_| CachedInfo::decode(&text, key));
    let info = match decoded {
        Ok(info) => info,
        Err(e) => {
            tracing::warn!(entry = %entry.display(), error = %e, "discarding unusable cached plugin description");
            let _ = fs::remove_file(&entry);
            return None;
        }
    };
    let moved = info.source != source || info.source_len != file.len || info.source_mtime_ns != file.mtime_ns;
    if moved && !source_matches(&info) {
        // The file it was written for is gone or changed: this one is its home now.
        let updated = CachedInfo { source: source.to_path_buf(), source_len: file.len, source_mtime_ns: file.mtime_ns, ..info.clone() };
        write_info(dir, key, &updated);
    } else if handle.metadata().and_then(|m| m.modified()).is_ok_and(|t| age(t) > TOUCH_EVERY) {
        let _ = fs::File::options().write(true).open(&entry).and_then(|f| f.set_modified(SystemTime::now()));
    }
    Some(info)
}

/// Stores a plugin's description (best effort: a cache that cannot be
/// written only costs a full load at the next start).
pub(crate) fn write_info(dir: &Path, key: &Key, info: &CachedInfo) {
    if let Err(e) = store_entry(dir, &key.info_entry(dir), info.encode().as_bytes()) {
        tracing::debug!(dir = %dir.display(), error = %e, "cannot write a cached plugin description");
    }
}

/// Removes the cached description of `key` (it turned out not to match the
/// component, or the component no longer loads).
pub(crate) fn forget_info(dir: &Path, key: &Key) {
    let _ = fs::remove_file(key.info_entry(dir));
}

/// True when the file a description was written for still has the length
/// and mtime it had then.
fn source_matches(info: &CachedInfo) -> bool {
    fs::metadata(&info.source).is_ok_and(|m| m.is_file() && m.len() == info.source_len && mtime_ns(&m) == info.source_mtime_ns)
}

fn age(time: SystemTime) -> Duration {
    SystemTime::now().duration_since(time).unwrap_or_default()
}

/// Loads the compiled code of `wasm`, from the cache in `cache_dir` when an
/// entry exists, else compiling it (and storing the result when possible).
/// An entry that fails to load is deleted and rebuilt.
///
/// # Errors
/// `wasm` is not a valid WebAssembly component.
pub(crate) fn load(engine: &Engine, wasm: &[u8], key: &Key, cache_dir: Option<&Path>) -> Result<LoadedComponent, String> {
    let Some(dir) = cache_dir else {
        return compile(engine, wasm).map(|component| LoadedComponent { component, from_cache: false, wrote: false });
    };
    let entry = key.code_entry(dir);
    match deserialize_file(engine, &entry) {
        Ok(Some(component)) => return Ok(LoadedComponent { component, from_cache: true, wrote: false }),
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(entry = %entry.display(), error = %e, "discarding unusable compiled-plugin cache entry");
            let _ = fs::remove_file(&entry);
        }
    }
    let compiled = engine
        .precompile_component(wasm)
        .map_err(|e| format!("not a valid WebAssembly component: {}", root_message(&e)))?;
    let wrote = match store_entry(dir, &entry, &compiled) {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot write the compiled-plugin cache; plugins will be compiled at every start");
            false
        }
    };
    deserialize_bytes(engine, &compiled).map(|component| LoadedComponent { component, from_cache: false, wrote })
}

fn compile(engine: &Engine, wasm: &[u8]) -> Result<Component, String> {
    Component::from_binary(engine, wasm).map_err(|e| format!("not a valid WebAssembly component: {}", root_message(&e)))
}

fn root_message(e: &wasmtime::Error) -> String {
    format!("{e:#}").lines().next().unwrap_or_default().to_string()
}

fn store_entry(dir: &Path, entry: &Path, bytes: &[u8]) -> std::io::Result<()> {
    fs::create_dir_all(dir)?;
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let tmp = dir.join(format!(".{}.{}.{nanos}.tmp", std::process::id(), entry.file_name().and_then(|n| n.to_str()).unwrap_or("entry")));
    fs::write(&tmp, bytes)?;
    fs::rename(&tmp, entry).inspect_err(|_| {
        let _ = fs::remove_file(&tmp);
    })
}

/// Reads a cache entry into memory and deserializes it; `None` when there is
/// no entry. Reading (rather than wasmtime's `deserialize_file`, which maps
/// the file) means a cache file truncated or rewritten by anyone later can
/// never fault the running host.
fn deserialize_file(engine: &Engine, path: &Path) -> Result<Option<Component>, String> {
    let read = || -> std::io::Result<(Vec<u8>, Option<SystemTime>)> {
        let mut file = fs::File::open(path)?;
        let modified = file.metadata().and_then(|m| m.modified()).ok();
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok((bytes, modified))
    };
    let (bytes, modified) = match read() {
        Ok(read) => read,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let component = deserialize_bytes(engine, &bytes)?;
    if modified.is_some_and(|t| age(t) > TOUCH_EVERY) {
        // Record the use for `prune` (plugins rejected after loading have no description to touch).
        let _ = fs::File::options().write(true).open(path).and_then(|f| f.set_modified(SystemTime::now()));
    }
    Ok(Some(component))
}

// Loading precompiled code is `unsafe` in wasmtime because the bytes become
// executable: they must come from `Engine::precompile_component` of a
// compatible engine. That holds here: the cache only holds files this module
// wrote (each written to a temporary file and renamed into place) under the
// user's own cache directory, and wasmtime additionally checks the header and
// the engine compatibility and refuses anything else, which `load` then
// deletes and rebuilds.
#[allow(unsafe_code)]
fn deserialize_bytes(engine: &Engine, bytes: &[u8]) -> Result<Component, String> {
    // SAFETY: see the comment above this function.
    unsafe { Component::deserialize(engine, bytes) }.map_err(|e| root_message(&e))
}

/// What [`prune`] removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PruneReport {
    /// Files deleted (entries of both kinds and temporary leftovers).
    pub(crate) removed: Vec<PathBuf>,
    /// Files kept.
    pub(crate) kept: usize,
}

/// True when the cache in `dir` is due for [`prune`]: never pruned, or not
/// within [`PRUNE_EVERY`]. One `stat`.
pub(crate) fn prune_due(dir: &Path) -> bool {
    fs::metadata(dir.join(PRUNE_STAMP)).and_then(|m| m.modified()).map_or(true, |t| age(t) > PRUNE_EVERY)
}

/// Removes what nobody can use any more from the cache in `dir`, for a host
/// whose engine hash is `engine`:
///
/// - entries whose description names a plugin file that is gone, or was
///   rewritten since (the component no longer exists there; a copy found
///   elsewhere is compiled again at its next start);
/// - entries of another engine or contract (another code-intel version),
///   and compiled code without a description (written by an older host),
///   unused for [`FOREIGN_UNUSED_LIMIT`];
/// - any entry unused for [`UNUSED_LIMIT`];
/// - temporary files left by killed writers.
///
/// An entry's use is its files' newest mtime: every start that reads a
/// description moves it forward, at most once a day. Removing an entry is
/// always safe: a running host holds its code in memory, and a host that
/// misses an entry compiles the plugin again. The cache is walked once;
/// cost is one `stat` per file and one read per description.
pub(crate) fn prune(dir: &Path, engine: &str) -> PruneReport {
    let mut report = PruneReport::default();
    let Ok(entries) = fs::read_dir(dir) else { return report };
    // stem (`<sha>-<engine>`) -> its files with their mtimes.
    let mut groups: std::collections::BTreeMap<String, Vec<(PathBuf, SystemTime)>> = std::collections::BTreeMap::new();
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_string) else { continue };
        let Ok(modified) = entry.metadata().and_then(|m| m.modified()) else { continue };
        if name.starts_with('.') {
            if name.ends_with(".tmp") && age(modified) > TMP_LIMIT && fs::remove_file(&path).is_ok() {
                report.removed.push(path);
            }
            continue;
        }
        let stem = if let Some(stem) = name.strip_suffix(".cwasm") {
            stem.to_string()
        } else if let Some(rest) = name.strip_suffix(".info") {
            match rest.rsplit_once('-') {
                Some((stem, _contract)) => stem.to_string(),
                None => continue,
            }
        } else {
            continue;
        };
        groups.entry(stem).or_default().push((path, modified));
    }
    let ours_suffix = format!("-{engine}");
    let our_info_suffix = format!("-{}.info", contract_hash());
    for (stem, files) in groups {
        let last_used = files.iter().map(|(_, t)| *t).max().unwrap_or(UNIX_EPOCH);
        let unused = age(last_used);
        let our_engine = stem.ends_with(&ours_suffix);
        let our_info = files.iter().find(|(p, _)| p.to_string_lossy().ends_with(&our_info_suffix));
        let stale = if unused > UNUSED_LIMIT {
            true
        } else if !our_engine || our_info.is_none() {
            unused > FOREIGN_UNUSED_LIMIT
        } else {
            // Ours, described: stale when the component is gone from where it was found.
            our_info.is_some_and(|(path, _)| {
                fs::read_to_string(path)
                    .ok()
                    .and_then(|text| text.split_once('\n').and_then(|(_, json)| serde_json::from_str::<CachedInfo>(json).ok()))
                    .is_none_or(|info| !source_matches(&info))
            })
        };
        for (path, _) in files {
            // Descriptions of another contract go with their age alone: the
            // other host may still use the compiled code beside them.
            if stale && fs::remove_file(&path).is_ok() {
                report.removed.push(path);
            } else {
                report.kept += 1;
            }
        }
    }
    let _ = fs::File::create(dir.join(PRUNE_STAMP));
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Key {
        Key { wasm_sha: "ab".repeat(32), engine: "0123456789abcdef".into() }
    }

    fn sample(source: &Path) -> (CachedInfo, ComponentFile) {
        fs::write(source, b"component bytes").unwrap();
        let file = read_component(source).unwrap();
        let info = PluginInfo {
            name: "probe".into(),
            version: "1.0.0".into(),
            description: "d".into(),
            languages: vec!["python".into()],
            file_patterns: vec!["**/*.py".into()],
            priority: 3,
        };
        (CachedInfo::new(&key(), &info, "0.1.0", source, &file), file)
    }

    #[test]
    fn a_description_round_trips_and_damage_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("probe.wasm");
        let (info, file) = sample(&source);
        write_info(dir.path(), &key(), &info);
        assert_eq!(read_info(dir.path(), &key(), &source, &file), Some(info.clone()));

        // Another component's key never reads it.
        let other = Key { wasm_sha: "cd".repeat(32), ..key() };
        assert_eq!(read_info(dir.path(), &other, &source, &file), None);

        // One changed character (still valid JSON) breaks the checksum: the
        // entry is deleted, not believed.
        let entry = key().info_entry(dir.path());
        let text = fs::read_to_string(&entry).unwrap().replace("\"priority\":3", "\"priority\":9");
        fs::write(&entry, text).unwrap();
        assert_eq!(read_info(dir.path(), &key(), &source, &file), None);
        assert!(!entry.exists());

        // A description copied under another component's name is refused too.
        write_info(dir.path(), &key(), &info);
        fs::copy(&entry, other.info_entry(dir.path())).unwrap();
        assert_eq!(read_info(dir.path(), &other, &source, &file), None);
    }

    #[test]
    fn prune_removes_gone_components_foreign_and_old_entries_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let plugins = tempfile::tempdir().unwrap();
        let engine = key().engine;
        let touch = |path: &Path, ago: Duration| {
            fs::File::options().write(true).open(path).unwrap().set_modified(SystemTime::now() - ago).unwrap();
        };
        let day = Duration::from_secs(24 * 3600);

        // Live: described, its plugin file unchanged.
        let (live, _) = sample(&plugins.path().join("live.wasm"));
        write_info(dir.path(), &key(), &live);
        fs::write(key().code_entry(dir.path()), b"code").unwrap();

        // Gone: its plugin file was deleted.
        let gone_key = Key { wasm_sha: "01".repeat(32), engine: engine.clone() };
        let (gone, _) = sample(&plugins.path().join("gone.wasm"));
        let gone = CachedInfo { key: gone_key.stem(), ..gone };
        write_info(dir.path(), &gone_key, &gone);
        fs::write(gone_key.code_entry(dir.path()), b"code").unwrap();
        fs::remove_file(plugins.path().join("gone.wasm")).unwrap();

        // Rewritten: the plugin file at its source now holds something else.
        let new_key = Key { wasm_sha: "02".repeat(32), engine: engine.clone() };
        let (rewritten, _) = sample(&plugins.path().join("rewritten.wasm"));
        let rewritten = CachedInfo { key: new_key.stem(), ..rewritten };
        write_info(dir.path(), &new_key, &rewritten);
        fs::write(plugins.path().join("rewritten.wasm"), b"a different, longer component").unwrap();

        // Another engine: kept while recently used, removed when not.
        let foreign_recent = Key { wasm_sha: "03".repeat(32), engine: "ffffffffffffffff".into() };
        fs::write(foreign_recent.code_entry(dir.path()), b"code").unwrap();
        let foreign_old = Key { wasm_sha: "04".repeat(32), engine: "ffffffffffffffff".into() };
        fs::write(foreign_old.code_entry(dir.path()), b"code").unwrap();
        touch(&foreign_old.code_entry(dir.path()), 3 * day);

        // Ours but without a description (older host), long unused.
        let bare = Key { wasm_sha: "05".repeat(32), engine: engine.clone() };
        fs::write(bare.code_entry(dir.path()), b"code").unwrap();
        touch(&bare.code_entry(dir.path()), 3 * day);

        // A temporary file of a killed writer, and a fresh one being written.
        let old_tmp = dir.path().join(".123.x.cwasm.1.tmp");
        fs::write(&old_tmp, b"half").unwrap();
        touch(&old_tmp, 2 * TMP_LIMIT);
        let new_tmp = dir.path().join(".124.y.cwasm.2.tmp");
        fs::write(&new_tmp, b"half").unwrap();

        assert!(prune_due(dir.path()));
        let report = prune(dir.path(), &engine);
        assert!(!prune_due(dir.path()), "the stamp is written");
        let mut removed: Vec<String> =
            report.removed.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        removed.sort();
        let mut expected = vec![
            gone_key.code_entry(dir.path()),
            gone_key.info_entry(dir.path()),
            new_key.info_entry(dir.path()),
            foreign_old.code_entry(dir.path()),
            bare.code_entry(dir.path()),
            old_tmp,
        ]
        .into_iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect::<Vec<_>>();
        expected.sort();
        assert_eq!(removed, expected);
        for kept in [key().code_entry(dir.path()), key().info_entry(dir.path()), foreign_recent.code_entry(dir.path()), new_tmp] {
            assert!(kept.exists(), "{} was removed", kept.display());
        }

        // Everything unused for the long limit goes, even when live.
        touch(&key().code_entry(dir.path()), UNUSED_LIMIT + day);
        touch(&key().info_entry(dir.path()), UNUSED_LIMIT + day);
        prune(dir.path(), &engine);
        assert!(!key().info_entry(dir.path()).exists());
    }
}
