//! Types every part of code-intel shares: chunks, configuration and
//! repository-relative paths.
//!
//! This crate depends on nothing else in the workspace, so the plugin host,
//! the store, the indexer and the MCP server can all speak the same language
//! without depending on each other.

pub mod chunk;
pub mod config;
pub mod paths;
pub mod similarity;

pub use chunk::{Chunk, ChunkFailure, ChunkedFile, Chunker, FailureKind, Metadata, line_chunks};
