//! Bindings for `code-intel:plugin@0.1.0`, the first version of the contract.
//!
//! Each supported WIT version has a module like this one: its own `bindgen!`,
//! its own linker, and conversions into the host's version-independent types.
//! A new version of the contract gets a new module beside this one; this one
//! stays, so plugins built against 0.1.0 keep loading.
//!
//! `tree.query-spans` was added to the `syntax` interface of 0.1.0 after its
//! first release. Adding to an imported interface keeps every earlier plugin
//! loading (a component only names the functions its build saw); a plugin
//! that calls it needs a host that provides it.

use std::sync::{Arc, OnceLock};

use wasmtime::component::{HasSelf, Linker, Resource};
use wasmtime::{Engine, Store};

use super::{RawChunk, RawOutcome};
use crate::sandbox::{MAX_LIVE_TREES, PluginState};
use crate::syntax::{self, SyntaxTree};

/// The host-side, version-independent plugin description.
type HostPluginInfo = super::PluginInfo;

wasmtime::component::bindgen!({
    world: "chunker",
    path: "../../../wit",
    // Host functions may trap: a resource-table error is the plugin's fault
    // and must end its call, not the host.
    imports: { default: trappable },
    with: {
        "code-intel:plugin/syntax.tree": crate::syntax::SyntaxTree,
    },
});

use code_intel::plugin::syntax as wit_syntax;
use code_intel::plugin::types as wit_types;

/// The WIT package version these bindings implement.
pub(crate) const VERSION: &str = "0.1.0";

/// The linker for this version: WASI preview 2 (with the empty context every
/// store gets) plus the `syntax` import. Built once per process.
pub(crate) fn linker(engine: &Engine) -> Result<&'static Linker<PluginState>, String> {
    static LINKER: OnceLock<Result<Linker<PluginState>, String>> = OnceLock::new();
    LINKER
        .get_or_init(|| {
            let mut linker = Linker::new(engine);
            wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
                .map_err(|e| format!("could not link WASI: {e:#}"))?;
            Chunker::add_to_linker::<PluginState, HasSelf<PluginState>>(&mut linker, |state| state)
                .map_err(|e| format!("could not link the syntax import: {e:#}"))?;
            Ok(linker)
        })
        .as_ref()
        .map_err(Clone::clone)
}

pub(crate) fn info(bindings: &Chunker, store: &mut Store<PluginState>) -> wasmtime::Result<HostPluginInfo> {
    let info = bindings.call_info(store)?;
    Ok(HostPluginInfo {
        name: info.name,
        version: info.version,
        description: info.description,
        languages: info.languages,
        file_patterns: info.file_patterns,
        priority: info.priority,
    })
}

pub(crate) fn chunk(
    bindings: &Chunker,
    store: &mut Store<PluginState>,
    path: &str,
    content: &str,
) -> wasmtime::Result<RawOutcome> {
    let file = wit_types::SourceFile { path: path.to_string(), content: content.to_string() };
    Ok(match bindings.call_chunk(store, &file)? {
        Ok(wit_types::ChunkOutcome::Chunks(chunks)) => RawOutcome::Chunks(chunks.into_iter().map(raw_chunk).collect()),
        Ok(wit_types::ChunkOutcome::Decline(reason)) => RawOutcome::Decline(reason),
        Err(e) => RawOutcome::Error { message: e.message, line: e.line },
    })
}

fn raw_chunk(c: wit_types::Chunk) -> RawChunk {
    RawChunk {
        id: c.id,
        kind: c.kind,
        name: c.name,
        qualified_name: c.qualified_name,
        parent: c.parent,
        start_line: c.start_line,
        end_line: c.end_line,
        start_byte: c.start_byte,
        end_byte: c.end_byte,
        content: c.content,
        signature: c.signature,
        docstring: c.docstring,
        related_symbols: c.related_symbols,
        references: c.references,
        metadata: c.metadata,
    }
}

impl wit_types::Host for PluginState {}

fn wit_error(e: syntax::SyntaxError) -> wit_syntax::SyntaxError {
    match e {
        syntax::SyntaxError::UnknownLanguage(m) => wit_syntax::SyntaxError::UnknownLanguage(m),
        syntax::SyntaxError::InvalidQuery(m) => wit_syntax::SyntaxError::InvalidQuery(m),
        syntax::SyntaxError::ParseFailed(m) => wit_syntax::SyntaxError::ParseFailed(m),
    }
}

impl wit_syntax::Host for PluginState {
    fn languages(&mut self) -> wasmtime::Result<Vec<String>> {
        Ok(syntax::languages())
    }

    fn parse(
        &mut self,
        language: String,
        source: String,
    ) -> wasmtime::Result<Result<Resource<SyntaxTree>, wit_syntax::SyntaxError>> {
        if self.live_trees >= MAX_LIVE_TREES {
            return Ok(Err(wit_syntax::SyntaxError::ParseFailed(format!(
                "the plugin already holds {MAX_LIVE_TREES} trees; drop trees it no longer needs"
            ))));
        }
        self.charge_host_work(source.len())?;
        match syntax::parse_until(&language, Arc::from(source), self.deadline) {
            Ok(tree) => {
                let handle = self.table.push(tree)?;
                self.live_trees += 1;
                Ok(Ok(handle))
            }
            Err(e) => Ok(Err(wit_error(e))),
        }
    }
}

impl wit_syntax::HostTree for PluginState {
    fn query(
        &mut self,
        tree: Resource<SyntaxTree>,
        query: String,
    ) -> wasmtime::Result<Result<Vec<wit_syntax::QueryMatch>, wit_syntax::SyntaxError>> {
        let deadline = self.deadline;
        let bytes = self.table.get(&tree)?.source().len();
        self.charge_host_work(bytes)?;
        let tree = self.table.get(&tree)?;
        Ok(match tree.query_until(&query, deadline) {
            Ok(matches) => Ok(matches
                .into_iter()
                .map(|m| wit_syntax::QueryMatch {
                    pattern: m.pattern,
                    captures: m
                        .captures
                        .into_iter()
                        .map(|c| wit_syntax::Capture {
                            name: c.name,
                            kind: c.kind,
                            start_byte: c.start_byte,
                            end_byte: c.end_byte,
                            start_line: c.start_line,
                            end_line: c.end_line,
                            start_column: c.start_column,
                            end_column: c.end_column,
                            text: c.text,
                        })
                        .collect(),
                })
                .collect()),
            Err(e) => Err(wit_error(e)),
        })
    }

    fn query_spans(
        &mut self,
        tree: Resource<SyntaxTree>,
        query: String,
    ) -> wasmtime::Result<Result<wit_syntax::SpanMatches, wit_syntax::SyntaxError>> {
        let deadline = self.deadline;
        let bytes = self.table.get(&tree)?.source().len();
        self.charge_host_work(bytes)?;
        let tree = self.table.get(&tree)?;
        Ok(match tree.query_spans_until(&query, deadline) {
            Ok(found) => Ok(wit_syntax::SpanMatches {
                capture_names: found.capture_names,
                kinds: found.kinds,
                matches: found
                    .matches
                    .into_iter()
                    .map(|m| wit_syntax::SpanMatch { pattern: m.pattern, first: m.first, count: m.count })
                    .collect(),
                captures: found
                    .captures
                    .into_iter()
                    .map(|c| wit_syntax::NodeSpan {
                        name: c.name,
                        kind: c.kind,
                        start_byte: c.start_byte,
                        end_byte: c.end_byte,
                        start_line: c.start_line,
                        end_line: c.end_line,
                        start_column: c.start_column,
                        end_column: c.end_column,
                    })
                    .collect(),
            }),
            Err(e) => Err(wit_error(e)),
        })
    }

    fn nodes(
        &mut self,
        tree: Resource<SyntaxTree>,
        kinds: Vec<String>,
    ) -> wasmtime::Result<Result<wit_syntax::NodeTable, wit_syntax::SyntaxError>> {
        let deadline = self.deadline;
        let bytes = self.table.get(&tree)?.source().len();
        self.charge_host_work(bytes)?;
        let tree = self.table.get(&tree)?;
        Ok(match tree.named_nodes_until(&kinds, deadline) {
            Ok(table) => Ok(wit_syntax::NodeTable {
                kinds: table.kinds,
                fields: table.fields,
                nodes: table.nodes.iter().flat_map(|n| n.to_array()).collect(),
            }),
            Err(e) => Err(wit_error(e)),
        })
    }

    fn has_errors(&mut self, tree: Resource<SyntaxTree>) -> wasmtime::Result<bool> {
        Ok(self.table.get(&tree)?.has_errors())
    }

    fn root_kind(&mut self, tree: Resource<SyntaxTree>) -> wasmtime::Result<String> {
        Ok(self.table.get(&tree)?.root_kind())
    }

    fn drop(&mut self, tree: Resource<SyntaxTree>) -> wasmtime::Result<()> {
        self.table.delete(tree)?;
        self.live_trees = self.live_trees.saturating_sub(1);
        Ok(())
    }
}
