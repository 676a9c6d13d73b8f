//! The WIT contract versions this host implements, and the host-side types
//! every version converts into.
//!
//! A component says which version it was built against through the names of
//! its imports (`code-intel:plugin/syntax@0.1.0`, `code-intel:plugin/types@0.1.0`).
//! [`prepare`] reads them, refuses versions the host does not know with a
//! clear reason, and type-checks the component against that version's world.

pub(crate) mod since_v0_1_0;

use wasmtime::Store;
use wasmtime::component::Component;

use crate::sandbox::PluginState;

/// Package name of the contract, as it appears in import names.
pub const PACKAGE: &str = "code-intel:plugin";

/// Contract versions this host loads, oldest first.
pub const SUPPORTED_VERSIONS: &[&str] = &[since_v0_1_0::VERSION];

/// What a plugin says about itself (version-independent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginInfo {
    pub name: String,
    pub version: String,
    pub description: String,
    pub languages: Vec<String>,
    pub file_patterns: Vec<String>,
    pub priority: i32,
}

/// A chunk exactly as a plugin returned it, before validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawChunk {
    pub id: String,
    pub kind: String,
    pub name: String,
    pub qualified_name: Option<String>,
    pub parent: Option<String>,
    pub start_line: u32,
    pub end_line: u32,
    pub start_byte: u32,
    pub end_byte: u32,
    pub content: String,
    pub signature: Option<String>,
    pub docstring: Option<String>,
    pub related_symbols: Vec<String>,
    pub references: Vec<String>,
    pub metadata: String,
}

/// What a plugin's `chunk` call returned, before validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RawOutcome {
    Chunks(Vec<RawChunk>),
    Decline(String),
    Error { message: String, line: Option<u32> },
}

/// A component type-checked against one contract version, ready to
/// instantiate any number of times.
#[derive(Clone)]
pub(crate) enum Pre {
    V0_1_0(since_v0_1_0::ChunkerPre<PluginState>),
}

/// One live instance of a plugin.
pub(crate) enum Bindings {
    V0_1_0(since_v0_1_0::Chunker),
}

impl Pre {
    pub(crate) fn version(&self) -> &'static str {
        match self {
            Pre::V0_1_0(_) => since_v0_1_0::VERSION,
        }
    }

    pub(crate) fn instantiate(&self, store: &mut Store<PluginState>) -> wasmtime::Result<Bindings> {
        match self {
            Pre::V0_1_0(pre) => pre.instantiate(store).map(Bindings::V0_1_0),
        }
    }
}

impl Bindings {
    pub(crate) fn info(&self, store: &mut Store<PluginState>) -> wasmtime::Result<PluginInfo> {
        match self {
            Bindings::V0_1_0(b) => since_v0_1_0::info(b, store),
        }
    }

    pub(crate) fn chunk(&self, store: &mut Store<PluginState>, path: &str, content: &str) -> wasmtime::Result<RawOutcome> {
        match self {
            Bindings::V0_1_0(b) => since_v0_1_0::chunk(b, store, path, content),
        }
    }
}

/// The contract versions a component's imports name, e.g. `{"0.1.0"}`.
fn imported_versions(component: &Component, engine: &wasmtime::Engine) -> Vec<String> {
    let prefix = format!("{PACKAGE}/");
    let mut versions: Vec<String> = component
        .component_type()
        .imports(engine)
        .filter_map(|(name, _)| {
            let rest = name.strip_prefix(&prefix)?;
            Some(rest.split_once('@').map_or_else(|| "unversioned".to_string(), |(_, v)| v.to_string()))
        })
        .collect();
    versions.sort();
    versions.dedup();
    versions
}

/// Picks the contract version `component` was built against and type-checks
/// it. A component that imports nothing from the contract (it bundles its own
/// parser and uses no shared types) is checked against the newest version.
///
/// # Errors
/// A reason naming the version found and the versions supported, or the
/// linker's explanation of what does not fit.
pub(crate) fn prepare(engine: &wasmtime::Engine, component: &Component) -> Result<Pre, String> {
    let versions = imported_versions(component, engine);
    let version = match versions.as_slice() {
        [] => SUPPORTED_VERSIONS[SUPPORTED_VERSIONS.len() - 1].to_string(),
        [one] => one.clone(),
        many => {
            return Err(format!(
                "the component imports several versions of {PACKAGE} ({}); build it against one",
                many.join(", ")
            ));
        }
    };
    match version.as_str() {
        since_v0_1_0::VERSION => {
            let linker = since_v0_1_0::linker(engine)?;
            let pre = linker.instantiate_pre(component).map_err(|e| {
                format!("the component does not fit {PACKAGE}@{version} as this host provides it: {e:#}")
            })?;
            let pre = since_v0_1_0::ChunkerPre::new(pre).map_err(|e| {
                format!("the component does not export the {PACKAGE}@{version} `chunker` world: {e:#}")
            })?;
            Ok(Pre::V0_1_0(pre))
        }
        other => Err(format!(
            "built against {PACKAGE}@{other}, which this host does not support (supported: {}); \
             rebuild the plugin against a supported version or upgrade code-intel",
            SUPPORTED_VERSIONS.join(", ")
        )),
    }
}
