//! The WebAssembly plugin host: loads chunk-strategy components, offers them
//! tree-sitter parsing, sandboxes and contains them.
//!
//! ```no_run
//! use code_intel_core::Chunker;
//! use code_intel_plugins::{HostOptions, PluginHost};
//!
//! let host = PluginHost::discover(Some(std::path::Path::new(".")), HostOptions::default());
//! for plugin in host.plugins() {
//!     eprintln!("{} {} from {}", plugin.name, plugin.version, plugin.path.display());
//! }
//! let file = host.chunk_file("app/models.py", "class User:\n    pass\n");
//! eprintln!("{} chunks by {}", file.chunks.len(), file.chunker);
//! ```
//!
//! Modules, one job each:
//! - [`syntax`]: the native tree-sitter service (also the WIT `syntax` import).
//! - [`discovery`]: the plugin search path.
//! - `cache`: compiled components and plugin descriptions on disk, keyed by
//!   wasm hash and engine (a start describes plugins from it and loads a
//!   plugin's code on first use), and the pruning of stale entries.
//! - `wit`: one module per supported contract version (`since_v0_1_0`).
//! - [`sandbox`]: engine, fuel and the wall-clock backstop, memory limits, the empty WASI context.
//! - `validate`: plugin output checked against the contract.
//! - [`host`]: [`PluginHost`], selection and containment; implements
//!   [`code_intel_core::Chunker`].
//! - [`harness`]: golden-file tests for plugins (`code-intel plugin test`).
//!
//! This crate depends only on `code-intel-core` in the workspace; it knows
//! nothing of the store, the index, embeddings or MCP.

mod cache;
pub mod discovery;
pub mod harness;
pub mod host;
pub mod sandbox;
pub mod syntax;
mod validate;
pub mod wit;

pub use cache::{CACHE_DIR_ENV, default_cache_dir};
pub use discovery::{PLUGIN_DIR_ENV, PluginDir, SourceKind, search_path};
pub use host::{Attempt, HostOptions, PluginHost, PluginSummary, Rejection, SearchedDir};
pub use sandbox::Limits;
