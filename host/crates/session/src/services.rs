//! What the workflow needs from the rest of the host, as traits: the symbol
//! index (the chunk store) and the map collection (agreements). The host
//! implements them with the store and the vector index; this crate never
//! depends on either.

use serde::{Deserialize, Serialize};

/// Where a symbol is defined, according to the index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SymbolSite {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qualified_name: Option<String>,
    pub kind: String,
    pub file: String,
    /// 1-based, inclusive.
    pub start_line: u32,
    /// 1-based, inclusive.
    pub end_line: u32,
}

impl From<code_intel_store::ChunkSummary> for SymbolSite {
    fn from(c: code_intel_store::ChunkSummary) -> Self {
        Self {
            name: c.name,
            qualified_name: c.qualified_name,
            kind: c.kind,
            file: c.path,
            start_line: c.start_line,
            end_line: c.end_line,
        }
    }
}

/// The index of definitions, as the workflow sees it.
pub trait SymbolIndex: Send + Sync {
    /// Definitions whose name or qualified name is `symbol` (exact match;
    /// `Class.method` / `Class::method` forms match a qualified name ending
    /// with them).
    ///
    /// # Errors
    /// A message naming what failed (the index could not be read).
    fn definitions(&self, symbol: &str) -> Result<Vec<SymbolSite>, String>;

    /// Number of indexed files; 0 means the index is not built yet, so an
    /// absent symbol proves nothing (learned pairs are then kept).
    ///
    /// # Errors
    /// A message naming what failed.
    fn indexed_files(&self) -> Result<u64, String>;
}

/// One symbol of an agreement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgreementSymbol {
    pub symbol: String,
    pub score: f32,
    pub method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_evidence: Option<String>,
}

/// A successful NL -> symbol mapping (SPEC §8 `record_outcome`): written to
/// `.code-intel/agreements/<id>.md` and added to the map collection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    pub id: String,
    pub nl_term: String,
    pub query: String,
    pub intent: String,
    pub symbols: Vec<AgreementSymbol>,
    pub files: Vec<String>,
    pub code_evidence: Vec<String>,
    pub session_id: String,
    pub created_at: String,
    /// Repository-relative path of the markdown file.
    pub path: String,
}

/// A map search hit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MapHit {
    pub agreement_id: String,
    pub score: f32,
    pub nl_term: String,
    pub symbols: Vec<String>,
    pub files: Vec<String>,
}

/// The map collection (agreements), as the workflow sees it.
pub trait AgreementMap: Send + Sync {
    /// Adds (or replaces) an agreement so later searches find it at once.
    ///
    /// # Errors
    /// A message naming what failed; the markdown file is already written, so
    /// the map can be rebuilt from it.
    fn add(&self, agreement: &Agreement, markdown: &str) -> Result<(), String>;

    /// Removes an agreement a `failure` outcome took back (its file is
    /// already deleted). The default is for maps that read the files alone.
    ///
    /// # Errors
    /// A message naming what failed.
    fn remove(&self, agreement_id: &str) -> Result<(), String> {
        let _ = agreement_id;
        Ok(())
    }

    /// The best agreements for a text, best first.
    ///
    /// # Errors
    /// A message naming what failed.
    fn search(&self, text: &str, limit: usize) -> Result<Vec<MapHit>, String>;
}
