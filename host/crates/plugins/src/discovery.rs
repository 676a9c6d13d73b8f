//! Where plugins are found: the plugin search path.
//!
//! In order: a `plugins/` directory beside the running binary, the
//! directories in `CODE_INTEL_PLUGIN_DIR` (a path list, like `PATH`), then the
//! repository's `.code-intel/plugins/`. When two plugins report the same name,
//! the one found **last** wins: a repository can override a plugin installed
//! with code-intel, and `CODE_INTEL_PLUGIN_DIR` can override the bundled ones.
//! The losing plugin is listed as shadowed by `code-intel plugin list`.

use std::path::{Path, PathBuf};

use serde::Serialize;

/// Environment variable with extra plugin directories (a path list).
pub const PLUGIN_DIR_ENV: &str = "CODE_INTEL_PLUGIN_DIR";

/// Where a plugin directory on the search path comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// `plugins/` beside the code-intel binary (or its build output).
    BesideBinary,
    /// A directory from `CODE_INTEL_PLUGIN_DIR`.
    EnvVar,
    /// `<repo>/.code-intel/plugins/`.
    Repo,
    /// A file named explicitly (e.g. `code-intel plugin test FILE`).
    Explicit,
}

impl SourceKind {
    /// Short label for human-readable output.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            SourceKind::BesideBinary => "beside-binary",
            SourceKind::EnvVar => "env",
            SourceKind::Repo => "repo",
            SourceKind::Explicit => "explicit",
        }
    }
}

/// One directory of the search path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PluginDir {
    pub path: PathBuf,
    pub kind: SourceKind,
}

/// The plugin search path for `repo` (see the module documentation), in
/// order, without duplicates. Directories need not exist.
#[must_use]
pub fn search_path(repo: Option<&Path>) -> Vec<PluginDir> {
    let mut dirs = Vec::new();
    if let Some(bin_dir) = std::env::current_exe().ok().and_then(|exe| exe.parent().map(Path::to_path_buf)) {
        dirs.push(PluginDir { path: bin_dir.join("plugins"), kind: SourceKind::BesideBinary });
        // Test and bench binaries live in `<target>/<profile>/deps/`; the
        // plugins are built into `<target>/<profile>/plugins/`.
        if bin_dir.file_name().is_some_and(|n| n == "deps")
            && let Some(profile_dir) = bin_dir.parent()
        {
            dirs.push(PluginDir { path: profile_dir.join("plugins"), kind: SourceKind::BesideBinary });
        }
    }
    if let Some(list) = std::env::var_os(PLUGIN_DIR_ENV) {
        for path in std::env::split_paths(&list).filter(|p| !p.as_os_str().is_empty()) {
            dirs.push(PluginDir { path, kind: SourceKind::EnvVar });
        }
    }
    if let Some(repo) = repo {
        dirs.push(PluginDir { path: repo.join(".code-intel").join("plugins"), kind: SourceKind::Repo });
    }
    let mut seen = std::collections::HashSet::new();
    dirs.retain(|d| seen.insert(d.path.canonicalize().unwrap_or_else(|_| d.path.clone())));
    dirs
}

/// The `*.wasm` files directly inside `dir`, sorted by file name. A missing
/// directory has none; an unreadable one is reported.
///
/// # Errors
/// The directory exists but cannot be read.
pub fn wasm_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot read plugin directory {}: {e}", dir.display())),
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "wasm") && p.is_file())
        .collect();
    files.sort();
    Ok(files)
}
