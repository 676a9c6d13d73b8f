//! The compiled-component cache: startup never recompiles an unchanged plugin.
//!
//! An entry is the output of `Engine::precompile_component` stored as
//! `<sha256 of the .wasm>-<engine hash>.cwasm`, where the engine hash covers
//! wasmtime's version and every compilation setting
//! (`Engine::precompile_compatibility_hash`). A changed plugin or a changed
//! engine therefore simply misses; entries are written atomically (temporary
//! file, then rename), so a reader never sees half an entry.

use std::fs;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Environment variable naming code-intel's cache root; the plugin cache is
/// its `plugins/` subdirectory.
pub const CACHE_DIR_ENV: &str = "CODE_INTEL_CACHE_DIR";

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

/// Loads the component in `wasm_path`, from the cache in `cache_dir` when an
/// entry exists, else compiling it (and storing the result when possible).
///
/// # Errors
/// The file cannot be read, or it is not a valid WebAssembly component.
pub(crate) fn load(engine: &Engine, wasm_path: &Path, cache_dir: Option<&Path>) -> Result<LoadedComponent, String> {
    let wasm = fs::read(wasm_path).map_err(|e| format!("cannot read {}: {e}", wasm_path.display()))?;
    let Some(dir) = cache_dir else {
        return compile(engine, &wasm).map(|component| LoadedComponent { component, from_cache: false });
    };
    let entry = dir.join(format!("{}-{}.cwasm", hex(&Sha256::digest(&wasm)), engine_hash(engine)));
    if entry.is_file() {
        match deserialize_file(engine, &entry) {
            Ok(component) => return Ok(LoadedComponent { component, from_cache: true }),
            Err(e) => {
                tracing::warn!(entry = %entry.display(), error = %e, "discarding unusable compiled-plugin cache entry");
                let _ = fs::remove_file(&entry);
            }
        }
    }
    let compiled = engine
        .precompile_component(&wasm)
        .map_err(|e| format!("not a valid WebAssembly component: {}", root_message(&e)))?;
    if let Err(e) = store_entry(dir, &entry, &compiled) {
        tracing::warn!(dir = %dir.display(), error = %e, "cannot write the compiled-plugin cache; plugins will be compiled at every start");
    }
    deserialize_bytes(engine, &compiled).map(|component| LoadedComponent { component, from_cache: false })
}

fn compile(engine: &Engine, wasm: &[u8]) -> Result<Component, String> {
    Component::from_binary(engine, wasm).map_err(|e| format!("not a valid WebAssembly component: {}", root_message(&e)))
}

fn root_message(e: &wasmtime::Error) -> String {
    format!("{e:#}").lines().next().unwrap_or_default().to_string()
}

fn store_entry(dir: &Path, entry: &Path, compiled: &[u8]) -> std::io::Result<()> {
    fs::create_dir_all(dir)?;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let tmp = dir.join(format!(".{}.{}.{nanos}.tmp", std::process::id(), entry.file_name().and_then(|n| n.to_str()).unwrap_or("entry")));
    fs::write(&tmp, compiled)?;
    fs::rename(&tmp, entry).inspect_err(|_| {
        let _ = fs::remove_file(&tmp);
    })
}

/// Reads a cache entry into memory and deserializes it. Reading (rather than
/// wasmtime's `deserialize_file`, which maps the file) means a cache file
/// truncated or rewritten by anyone later can never fault the running host.
fn deserialize_file(engine: &Engine, path: &Path) -> Result<Component, String> {
    let bytes = fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    deserialize_bytes(engine, &bytes)
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
