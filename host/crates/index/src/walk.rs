//! Which files of a repository are indexed: the `ignore` crate's walk
//! (`.gitignore`, `.ignore`, git excludes) plus `.code-intel/ignore`, config
//! `exclude_patterns` and `source_dirs`, hidden files skipped, and files that
//! cannot be indexed (too large, not regular, symlinks, non-UTF-8 names)
//! reported with the reason.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use code_intel_core::config::{self, Config, STATE_DIR_NAME};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use serde::Serialize;

use crate::IndexError;

/// A regular file the walk found, with its cheap fingerprint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkedFile {
    /// Repo-relative, `/`-separated.
    pub path: String,
    pub abs: PathBuf,
    pub size: u64,
    pub mtime_ns: i64,
}

/// Why a file is not indexed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum SkipReason {
    /// Larger than `max_file_bytes`.
    TooLarge { size: u64, limit: u64 },
    /// Has a NUL byte near the start.
    Binary,
    /// Could not be read (permissions, dangling symlink, I/O error).
    Unreadable { error: String },
    /// A FIFO, socket or device: never opened, reading could block.
    NotRegularFile,
    /// A symbolic link; its target is indexed at its own path if it is a
    /// regular file inside the repository.
    Symlink,
    /// A symbolic link pointing outside the repository.
    SymlinkOutsideRepository,
    /// The file name is not valid UTF-8.
    NonUtf8Path,
    /// Indexing it would take the index past `max_chunks`.
    MaxChunks { limit: u64 },
    /// A lock file, asset, minified or generated file (config
    /// `skip_generated`; see [`crate::hygiene`]).
    Generated { rule: String },
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TooLarge { size, limit } => {
                write!(f, "larger than max_file_bytes ({size} > {limit} bytes)")
            }
            Self::Binary => f.write_str("binary file"),
            Self::Unreadable { error } => write!(f, "unreadable: {error}"),
            Self::NotRegularFile => f.write_str("not a regular file (FIFO, socket or device)"),
            Self::Symlink => f.write_str("symbolic link (its target is indexed at its own path)"),
            Self::SymlinkOutsideRepository => f.write_str("symbolic link pointing outside the repository"),
            Self::NonUtf8Path => f.write_str("file name is not valid UTF-8"),
            Self::MaxChunks { limit } => write!(f, "index already holds max_chunks ({limit}) chunks"),
            Self::Generated { rule } => write!(f, "{rule} (set skip_generated to false to index it)"),
        }
    }
}

/// A file left out of the index, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SkippedFile {
    pub path: String,
    #[serde(flatten)]
    pub reason: SkipReason,
}

/// What a walk found.
#[derive(Debug, Default)]
pub struct Walk {
    pub files: Vec<WalkedFile>,
    pub skipped: Vec<SkippedFile>,
}

/// Builds the matcher for `.code-intel/ignore` and config `exclude_patterns`
/// (gitignore syntax, relative to the repository root). `.code-intel/` itself
/// is always excluded.
///
/// # Errors
/// A pattern that is not a valid glob.
pub fn exclude_matcher(root: &Path, config: &Config) -> Result<Gitignore, IndexError> {
    let mut builder = GitignoreBuilder::new(root);
    builder
        .add_line(None, &format!("/{STATE_DIR_NAME}/"))
        .map_err(|e| IndexError::Pattern { source_name: "built-in".into(), message: e.to_string() })?;
    let ignore_file = config::ignore_path(root);
    if ignore_file.is_file()
        && let Some(e) = builder.add(&ignore_file)
    {
        return Err(IndexError::Pattern { source_name: ignore_file.display().to_string(), message: e.to_string() });
    }
    for pattern in &config.exclude_patterns {
        builder.add_line(None, pattern).map_err(|e| IndexError::Pattern {
            source_name: "config key `exclude_patterns`".into(),
            message: e.to_string(),
        })?;
    }
    builder
        .build()
        .map_err(|e| IndexError::Pattern { source_name: "exclude patterns".into(), message: e.to_string() })
}

/// Walks `root` (or its `source_dirs`) and returns the candidate files and
/// the ones skipped. Content is not read here.
///
/// # Errors
/// An invalid exclude pattern, or a `source_dirs` entry that does not exist.
pub fn walk(root: &Path, config: &Config) -> Result<Walk, IndexError> {
    let excludes = Arc::new(exclude_matcher(root, config)?);
    let mut roots: Vec<PathBuf> = Vec::new();
    for dir in &config.source_dirs {
        let abs = root.join(dir);
        if !abs.is_dir() {
            return Err(IndexError::SourceDir { dir: dir.clone() });
        }
        roots.push(abs);
    }
    if roots.is_empty() {
        roots.push(root.to_path_buf());
    }
    let mut builder = ignore::WalkBuilder::new(&roots[0]);
    for extra in &roots[1..] {
        builder.add(extra);
    }
    builder
        .hidden(true)
        .parents(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .ignore(true)
        // Honour .gitignore even when the tree is not (yet) a git checkout.
        .require_git(false)
        .follow_links(false);
    let filter = Arc::clone(&excludes);
    builder.filter_entry(move |entry| {
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        !filter.matched(entry.path(), is_dir).is_ignore()
    });

    // Stat-bound: walking on every core is ~2x faster on large trees.
    let canonical_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let (tx, rx) = std::sync::mpsc::channel::<Walked>();
    builder.build_parallel().run(|| {
        let tx = tx.clone();
        let canonical_root = &canonical_root;
        Box::new(move |result| {
            if let Some(walked) = visit(root, canonical_root, config, result) {
                let _ = tx.send(walked);
            }
            ignore::WalkState::Continue
        })
    });
    drop(tx);
    let mut out = Walk::default();
    for walked in rx {
        match walked {
            Walked::File(file) => out.files.push(file),
            Walked::Skipped(skip) => out.skipped.push(skip),
        }
    }
    out.files.sort_by(|a, b| a.path.cmp(&b.path));
    out.files.dedup_by(|a, b| a.path == b.path); // overlapping source_dirs
    out.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    out.skipped.dedup_by(|a, b| !a.path.is_empty() && a.path == b.path);
    Ok(out)
}

enum Walked {
    File(WalkedFile),
    Skipped(SkippedFile),
}

/// What one walk entry is: a candidate file, a skipped one, or nothing to
/// report (a directory).
fn visit(root: &Path, canonical_root: &Path, config: &Config, result: Result<ignore::DirEntry, ignore::Error>) -> Option<Walked> {
    let skipped = |path: String, reason: SkipReason| Some(Walked::Skipped(SkippedFile { path, reason }));
    let entry = match result {
        Ok(entry) => entry,
        Err(err) => {
            let path = error_path(&err).map_or_else(String::new, |p| relative(root, p).unwrap_or_default());
            return skipped(path, SkipReason::Unreadable { error: err.to_string() });
        }
    };
    let file_type = entry.file_type()?; // None: stdin only
    if file_type.is_dir() {
        return None;
    }
    let Some(path) = relative(root, entry.path()) else {
        // Repository-relative like every other entry, its bad bytes shown as U+FFFD.
        let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
        let shown: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        return skipped(shown.join("/"), SkipReason::NonUtf8Path);
    };
    if file_type.is_symlink() {
        let reason = match std::fs::canonicalize(entry.path()) {
            Err(e) => SkipReason::Unreadable { error: format!("dangling symbolic link ({e})") },
            Ok(target) if !target.starts_with(canonical_root) => SkipReason::SymlinkOutsideRepository,
            Ok(_) => SkipReason::Symlink,
        };
        return skipped(path, reason);
    }
    if !file_type.is_file() {
        return skipped(path, SkipReason::NotRegularFile);
    }
    if config.skip_generated
        && let Some(rule) = crate::hygiene::by_path(&path)
    {
        return skipped(path, SkipReason::Generated { rule: rule.to_string() });
    }
    let metadata = match entry.metadata() {
        Ok(m) => m,
        Err(e) => return skipped(path, SkipReason::Unreadable { error: e.to_string() }),
    };
    let size = metadata.len();
    if size > config.max_file_bytes {
        return skipped(path, SkipReason::TooLarge { size, limit: config.max_file_bytes });
    }
    let mtime_ns = metadata
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    Some(Walked::File(WalkedFile { path, abs: entry.into_path(), size, mtime_ns }))
}

fn error_path(err: &ignore::Error) -> Option<&Path> {
    match err {
        ignore::Error::WithPath { path, .. } => Some(path),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => error_path(err),
        _ => None,
    }
}

/// `path` relative to `root`, `/`-separated; `None` if not valid UTF-8.
fn relative(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).unwrap_or(path);
    // The walk's paths are already clean and `/`-separated on Unix: take
    // them as they are (one allocation per file, thousands per sync).
    #[cfg(unix)]
    if rel.is_relative() {
        return rel.to_str().map(str::to_string);
    }
    let mut out = String::new();
    for component in rel.components() {
        if !out.is_empty() {
            out.push('/');
        }
        out.push_str(component.as_os_str().to_str()?);
    }
    Some(out)
}
