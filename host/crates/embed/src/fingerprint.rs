//! The content fingerprint of a model's files (part of its [`ModelKey`]),
//! remembered per file identity.
//!
//! The fingerprint is a SHA-256 over `config.json`, `tokenizer.json` and
//! `model.safetensors`. Hashing 90 MB (all-MiniLM-L6-v2) to 470 MB
//! (multilingual-e5-small) of weights took a fifth of every `code-intel index`
//! run, so the result is kept in a small file under the cache folder, keyed by
//! the model folder, and reused while every file still has the same size,
//! modification time, change time and inode. Anything that replaces or
//! rewrites a file changes one of those, and the files are hashed again.
//! File times have a coarse clock (a few milliseconds), so two writes close
//! together can leave the same times behind: a file changed less than
//! [`SETTLE`] before the record would be written is not remembered at all
//! (the same rule git uses for its index).
//!
//! [`ModelKey`]: crate::ModelKey

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The files the fingerprint covers, in hashing order.
pub const FINGERPRINTED_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// Where remembered fingerprints live by default: `$CODE_INTEL_CACHE_DIR/fingerprints`,
/// else `$XDG_CACHE_HOME/code-intel/fingerprints`, else `~/.cache/code-intel/fingerprints`
/// (beside the compiled-plugin cache).
#[must_use]
pub fn default_cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CODE_INTEL_CACHE_DIR").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir).join("fingerprints");
    }
    crate::model::models_dir().parent().map_or_else(|| PathBuf::from("fingerprints"), |p| p.join("fingerprints"))
}

/// How long a file must have been left alone before its fingerprint is
/// remembered.
pub const SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

/// What identifies one file's current content without reading it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct FileStamp {
    name: String,
    len: u64,
    modified_ns: i128,
    changed_ns: i128,
    inode: u64,
}

#[derive(Debug, Serialize, Deserialize)]
struct Remembered {
    dir: PathBuf,
    files: Vec<FileStamp>,
    fingerprint: String,
}

fn stamp(dir: &Path, name: &str) -> std::io::Result<FileStamp> {
    let meta = std::fs::metadata(dir.join(name))?;
    let modified_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX));
    #[cfg(unix)]
    let (changed_ns, inode) = {
        use std::os::unix::fs::MetadataExt;
        (i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()), meta.ino())
    };
    #[cfg(not(unix))]
    let (changed_ns, inode) = (0, 0);
    Ok(FileStamp { name: name.to_string(), len: meta.len(), modified_ns, changed_ns, inode })
}

/// The record file for `dir` inside `cache`.
fn record_path(cache: &Path, dir: &Path) -> PathBuf {
    let digest = Sha256::digest(dir.as_os_str().as_encoded_bytes());
    let name: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    cache.join(format!("{name}.json"))
}

/// The key the model `opts` names would load under, without loading it:
/// the folder is looked up locally only (no download), and the fingerprint
/// must be remembered in `cache` for the files as they are now. `None`
/// means "load the model to know".
#[must_use]
pub fn remembered_key(opts: &crate::ResolveOptions, cache: &Path) -> Option<crate::ModelKey> {
    if let Some(endpoint) = &opts.endpoint {
        return crate::remote::remote_key(endpoint, &opts.spec).ok();
    }
    let local_only = crate::ResolveOptions { allow_download: false, ..opts.clone() };
    let resolved = crate::resolve(&local_only).ok()?;
    let fingerprint = remembered(cache, &resolved.dir)?;
    let sentence = crate::sentence_config::read_for(&resolved).ok()?;
    Some(crate::ModelKey::for_model(&resolved.name, &fingerprint, &sentence))
}

/// Hashes the three files' bytes (each preceded by its length) and returns
/// the first 8 bytes of the digest in hex.
#[must_use]
pub fn compute(config: &[u8], tokenizer: &[u8], weights: &[u8]) -> String {
    let mut hasher = Sha256::new();
    for part in [config, tokenizer, weights] {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hasher.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The remembered fingerprint of the model in `dir`, if the record exists
/// and every file is unchanged since it was written.
#[must_use]
pub fn remembered(cache: &Path, dir: &Path) -> Option<String> {
    let text = std::fs::read(record_path(cache, dir)).ok()?;
    let record: Remembered = serde_json::from_slice(&text).ok()?;
    if record.dir != dir {
        return None;
    }
    let now: Vec<FileStamp> = FINGERPRINTED_FILES.iter().map(|name| stamp(dir, name)).collect::<std::io::Result<_>>().ok()?;
    (now == record.files).then_some(record.fingerprint)
}

/// Remembers `fingerprint` for the files of `dir` as they are now, unless
/// one of them changed within [`SETTLE`]. Failures only cost a hash at the
/// next start, so they are logged, not returned.
pub fn remember(cache: &Path, dir: &Path, fingerprint: &str) {
    remember_at(cache, dir, fingerprint, std::time::SystemTime::now());
}

fn remember_at(cache: &Path, dir: &Path, fingerprint: &str, now: std::time::SystemTime) {
    let files = match FINGERPRINTED_FILES.iter().map(|name| stamp(dir, name)).collect::<std::io::Result<Vec<_>>>() {
        Ok(files) => files,
        Err(e) => {
            tracing::debug!(dir = %dir.display(), "model fingerprint not remembered: {e}");
            return;
        }
    };
    let now_ns = now.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX));
    let settle_ns = i128::try_from(SETTLE.as_nanos()).unwrap_or(i128::MAX);
    if files.iter().any(|f| now_ns - f.modified_ns.max(f.changed_ns) < settle_ns) {
        tracing::debug!(dir = %dir.display(), "model files changed moments ago; fingerprint not remembered");
        return;
    }
    let record = Remembered { dir: dir.to_path_buf(), files, fingerprint: fingerprint.to_string() };
    let path = record_path(cache, dir);
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(cache)?;
        let json = serde_json::to_vec(&record).map_err(std::io::Error::other)?;
        // Written aside and renamed, so a concurrent start never reads half a record.
        let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
        std::fs::write(&tmp, json)?;
        std::fs::rename(&tmp, &path)
    };
    if let Err(e) = write() {
        tracing::debug!(path = %path.display(), "model fingerprint not remembered: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model_dir(root: &Path) -> PathBuf {
        let dir = root.join("model");
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in [("config.json", "{}"), ("tokenizer.json", "{\"t\":1}"), ("model.safetensors", "weights")] {
            std::fs::write(dir.join(name), text).unwrap();
        }
        dir
    }

    /// A moment far enough after the files were written for them to count as settled.
    fn later() -> std::time::SystemTime {
        std::time::SystemTime::now() + SETTLE * 2
    }

    #[test]
    fn a_remembered_fingerprint_is_used_until_a_file_changes() {
        let root = tempfile::tempdir().unwrap();
        let cache = root.path().join("cache");
        let dir = model_dir(root.path());
        assert_eq!(remembered(&cache, &dir), None, "nothing remembered yet");
        remember(&cache, &dir, "abc123");
        assert_eq!(remembered(&cache, &dir), None, "files written moments ago are not remembered");
        remember_at(&cache, &dir, "abc123", later());
        assert_eq!(remembered(&cache, &dir).as_deref(), Some("abc123"));

        // Same length, new content: the change time (and usually the
        // modification time) moves, so the record no longer applies.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(dir.join("model.safetensors"), "WEIGHTS").unwrap();
        assert_eq!(remembered(&cache, &dir), None, "a rewritten weights file must be hashed again");

        remember_at(&cache, &dir, "def456", later());
        assert_eq!(remembered(&cache, &dir).as_deref(), Some("def456"));
        std::fs::remove_file(dir.join("tokenizer.json")).unwrap();
        assert_eq!(remembered(&cache, &dir), None, "a missing file is never answered from the record");
    }

    #[test]
    fn records_are_per_folder_and_a_corrupt_record_is_ignored() {
        let root = tempfile::tempdir().unwrap();
        let cache = root.path().join("cache");
        let a = model_dir(&root.path().join("a"));
        let b = model_dir(&root.path().join("b"));
        remember_at(&cache, &a, "aaaa", later());
        assert_eq!(remembered(&cache, &a).as_deref(), Some("aaaa"));
        assert_eq!(remembered(&cache, &b), None);
        std::fs::write(record_path(&cache, &a), "not json").unwrap();
        assert_eq!(remembered(&cache, &a), None);
    }

    #[test]
    fn the_fingerprint_covers_every_file_and_its_boundaries() {
        let base = compute(b"c", b"t", b"w");
        assert_eq!(base.len(), 16);
        assert_ne!(base, compute(b"c", b"t", b"W"));
        assert_ne!(base, compute(b"c", b"tw", b""), "moving bytes between files changes the fingerprint");
    }
}
