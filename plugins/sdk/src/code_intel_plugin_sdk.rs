//! Guest SDK for code-intel chunk-strategy plugins.
//!
//! A plugin is a WebAssembly component (`wasm32-wasip2`) that turns one source
//! file into chunks. This crate gives it the generated WIT bindings (world
//! `chunker` of `code-intel:plugin@0.1.0`) and the helpers that make a plugin
//! read like a description of its language: parse with the host's tree-sitter,
//! run queries, build chunks, clean docstrings, extract signatures and
//! references, and keep every chunk inside the embedding window.
//!
//! ```no_run
//! use code_intel_plugin_sdk::{
//!     export_plugin, parse, ChunkBuilder, ChunkOutcome, ChunkSet, Plugin, PluginError,
//!     PluginInfo, SourceFile, Span,
//! };
//!
//! struct Functions;
//!
//! impl Plugin for Functions {
//!     fn info() -> PluginInfo {
//!         PluginInfo {
//!             name: "functions".into(),
//!             version: env!("CARGO_PKG_VERSION").into(),
//!             description: "Python functions, one chunk each".into(),
//!             languages: vec!["python".into()],
//!             file_patterns: vec!["**/*.py".into()],
//!             priority: 5,
//!         }
//!     }
//!
//!     fn chunk(file: SourceFile) -> Result<ChunkOutcome, PluginError> {
//!         let tree = parse("python", &file.content)?;
//!         let mut chunks = ChunkSet::new(&file.content);
//!         for m in &tree.matches("(function_definition name: (identifier) @name) @def")? {
//!             let (Some(def), Some(name)) = (m.get("def"), m.get("name")) else { continue };
//!             chunks.push(ChunkBuilder::new("function", name.text).span(Span::of(def)));
//!         }
//!         Ok(ChunkOutcome::Chunks(chunks.finish()))
//!     }
//! }
//!
//! export_plugin!(Functions);
//! ```
//!
//! This crate depends on nothing but `wit-bindgen` and `serde_json`; it must
//! not grow a parser of its own (parsing is the host's `syntax` service) or
//! anything that needs a filesystem, clock or network, which the sandbox
//! does not offer.

pub mod arena;
mod builder;
mod span;
mod syntax;
pub mod text;

/// Bindings generated from `wit/plugin.wit` (world `chunker`).
///
/// Plugins normally use the re-exports at the crate root instead.
#[allow(missing_docs, clippy::pedantic, unsafe_code)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "chunker",
        path: "../../wit",
        pub_export_macro: true,
        export_macro_name: "export_plugin",
        default_bindings_module: "code_intel_plugin_sdk::bindings",
    });
}

pub use bindings::code_intel::plugin::syntax::{Capture, QueryMatch, SyntaxError};
pub use bindings::code_intel::plugin::types::{Chunk, ChunkOutcome, PluginError, PluginInfo, SourceFile};
/// The trait a plugin implements: `info()` and `chunk(file)`.
pub use bindings::Guest as Plugin;
pub use builder::{ChunkBuilder, ChunkSet, PART_KIND, fit_window};
pub use span::{LineIndex, Span, SpanSet, comments_above};
pub use syntax::{FieldId, KindId, Match, MatchSet, Matches, Node, NodeRef, NodeTable, Tree, languages, parse, parse_embedded};

/// Exports a type implementing [`Plugin`] as the component's `info` and
/// `chunk` functions. Call it once, at the crate root: `export_plugin!(MyPlugin);`.
pub use bindings::export_plugin;

/// Largest chunk content, in bytes, a plugin should emit.
///
/// The default embedding model (multilingual-e5-small) reads at most 512
/// tokens. Its SentencePiece vocabulary is built for prose, so code (operators,
/// indentation, identifiers split into pieces) averages about 3 bytes per token;
/// 1,500 bytes is ~500 tokens and leaves room for the model's `passage: ` prefix
/// and special tokens. [`fit_window`] splits anything larger into parts.
pub const MAX_CHUNK_BYTES: usize = 1_500;

impl From<SyntaxError> for PluginError {
    fn from(error: SyntaxError) -> Self {
        let message = match error {
            SyntaxError::UnknownLanguage(known) => {
                format!("the host has no grammar for this plugin's language (it has: {known}); upgrade code-intel")
            }
            SyntaxError::InvalidQuery(detail) => format!("plugin bug: a query does not compile: {detail}"),
            SyntaxError::ParseFailed(detail) => format!("the file could not be parsed: {detail}"),
        };
        PluginError { message, line: None }
    }
}

impl PluginError {
    /// A plugin error with a message and no line.
    #[must_use]
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), line: None }
    }

    /// A plugin error pointing at a 1-based line.
    #[must_use]
    pub fn at_line(message: impl Into<String>, line: u32) -> Self {
        Self { message: message.into(), line: Some(line) }
    }
}
