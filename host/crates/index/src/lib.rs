//! Walks a repository, chunks changed files and syncs them into the store.
//!
//! ```no_run
//! use code_intel_core::config::{Config, database_path};
//! use code_intel_index::{LineChunker, SyncOptions, sync};
//! use code_intel_store::Store;
//!
//! let root = std::path::Path::new(".");
//! let (config, _warnings) = Config::load(root).unwrap();
//! let mut store = Store::open(&database_path(root)).unwrap();
//! let report = sync(root, &mut store, &LineChunker, &config, SyncOptions::default(), &|_| {}).unwrap();
//! eprintln!("{} added, {} modified, {} deleted", report.added, report.modified, report.deleted);
//! ```
//!
//! - [`walk`] decides which files are indexed (ignore files, config
//!   excludes and source dirs, size limit, file types);
//! - [`sync`] compares fingerprints (mtime + size, then SHA-256), chunks
//!   what changed in parallel through any [`code_intel_core::Chunker`] (the
//!   plugin host in production), and writes in batched transactions.
//!
//! This crate depends on `code-intel-core` and `code-intel-store` only: it
//! knows the `Chunker` trait, not the plugin host, MCP or the CLI.

pub mod hygiene;
pub mod links;
pub mod sync;
pub mod walk;

use std::path::PathBuf;

pub use sync::{FileFailure, LineChunker, LinksUpdate, Phase, Progress, ProgressFn, SyncOptions, SyncReport, sync, sync_in_progress};
pub use walk::{SkipReason, SkippedFile, Walk, WalkedFile, walk};

/// Why a sync could not run.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error(transparent)]
    Store(#[from] code_intel_store::StoreError),
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("invalid ignore pattern in {source_name}: {message}")]
    Pattern { source_name: String, message: String },
    #[error("config key `source_dirs`: {dir:?} is not a directory in the repository")]
    SourceDir { dir: String },
}
