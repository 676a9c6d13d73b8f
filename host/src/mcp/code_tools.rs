//! The code tools: exact search, definitions, references, structure,
//! function at line, repo map, semantic search, sync and status.
//!
//! Every tool takes repository-relative paths, refuses anything outside the
//! root, caps its result by `max_results` and `max_chars`, and says
//! `truncated` when it cut. Argument errors name the argument.

use std::collections::BTreeMap;
use std::sync::Arc;

use code_intel_core::paths::{PathError, RepoPath};
use code_intel_search::definitions::{self, Definition, DefinitionQuery};
use code_intel_search::links::{LinkedFile, MAX_LINKED_FILES};
use code_intel_search::references::{self, DefinitionSite, ReferenceGroup, ReferenceQuery};
use code_intel_search::repo_map::{self, MapFile, RepoMapQuery};
use code_intel_search::structure::{self, FileOutline};
use code_intel_search::text::{self, CaseMode, TextMatch, TextQuery};
use code_intel_store::NameMatch;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use rmcp::{ErrorData, tool, tool_router};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::budget::{self, ArgError};
use super::progress::Reporter;
use super::outline;
use super::render;
use super::schema;
use super::state::{IndexPhase, IndexUnavailable, ServerState, SyncSummary};
use super::CodeIntelServer;

/// Default `max_results` of list-returning tools: a screenful that usually
/// answers the question, small enough to leave room for follow-ups.
pub const DEFAULT_MAX_RESULTS: usize = 50;
/// Default repo-map budget in tokens (aider's default map size).
pub const DEFAULT_MAP_TOKENS: usize = 1024;
/// Smallest and largest repo-map budgets accepted.
pub const MIN_MAP_TOKENS: usize = 64;
pub const MAX_MAP_TOKENS: usize = 16_384;
/// Default and largest `n_results` of `semantic_search`: semantic hits are
/// hypotheses to verify one by one, so a short list is more useful.
pub const DEFAULT_SEMANTIC_RESULTS: usize = 10;
pub const MAX_SEMANTIC_RESULTS: usize = 100;

/// Most repositories `semantic_search` with `shared` limits itself to: more
/// are better searched as the whole store.
pub const MAX_SHARED_REPOSITORIES: usize = 50;

/// Longest repository name `semantic_search` accepts in `repositories`.
pub const MAX_REPOSITORY_NAME_CHARS: usize = 500;
/// Chunks read at most when outlining a directory: a directory's outline
/// beyond this many symbols is no longer an overview.
const MAX_OUTLINE_CHUNKS: usize = 5_000;

// ---------------------------------------------------------------------------
// Arguments

/// Letter case handling for text search.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CaseArg {
    /// Ignore case unless the pattern contains an upper-case letter.
    Smart,
    Sensitive,
    Insensitive,
}

/// Arguments of `search_text`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchTextArgs {
    /// Regular expression (Rust regex syntax), or the exact text when `literal` is true.
    pub pattern: String,
    /// Search for the pattern as plain text, not a regular expression. Default false.
    pub literal: Option<bool>,
    /// Letter case: `smart` (default: ignore case unless the pattern has an upper-case letter), `sensitive`, `insensitive`.
    pub case: Option<CaseArg>,
    /// Match whole words only. Default false.
    pub word: Option<bool>,
    /// File or directory to search, relative to the repository root. Default: the whole repository.
    pub path: Option<String>,
    /// Globs over repository-relative paths, e.g. `["src/**/*.py", "!**/tests/**"]`; a leading `!` excludes.
    pub glob: Option<Vec<String>>,
    /// File types by ripgrep's names: `py`, `php`, `js`, `ts`, `rust`, `go`, `java`, `css`, `html`, ...
    pub file_types: Option<Vec<String>>,
    /// Lines of context before and after each match (0-20). Default 0.
    #[schemars(range(max = text::MAX_CONTEXT_LINES))]
    pub context_lines: Option<u32>,
    /// Lines of context before each match; overrides `context_lines`.
    #[schemars(range(max = text::MAX_CONTEXT_LINES))]
    pub before_context: Option<u32>,
    /// Lines of context after each match; overrides `context_lines`.
    #[schemars(range(max = text::MAX_CONTEXT_LINES))]
    pub after_context: Option<u32>,
    /// Also search hidden files and directories (dot-files). Default false.
    pub include_hidden: Option<bool>,
    /// Matches returned at most (1-1000). Default 50.
    #[schemars(range(min = 1, max = budget::MAX_MAX_RESULTS))]
    pub max_results: Option<u32>,
    /// Output budget in characters (500-200000). Default 20000.
    #[schemars(range(min = budget::MIN_MAX_CHARS, max = budget::MAX_MAX_CHARS))]
    pub max_chars: Option<u32>,
}

/// How a symbol name is matched.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MatchArg {
    /// Name or qualified name equal (ignoring case); falls back to fuzzy when nothing matches.
    Exact,
    /// Names starting with the symbol.
    Prefix,
    /// Exact, prefix, then case/underscore-insensitive and small-typo matches.
    Fuzzy,
}

/// Arguments of `find_definitions`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindDefinitionsArgs {
    /// Symbol name (`save`), or qualified name (`User.save`, `App\\Models\\User`, `Foo::bar`).
    pub symbol: String,
    /// `exact` (default; falls back to fuzzy when nothing matches), `prefix` or `fuzzy`.
    #[serde(rename = "match")]
    pub match_mode: Option<MatchArg>,
    /// Only these kinds, e.g. `["class", "method"]`.
    pub kinds: Option<Vec<String>>,
    /// Only definitions in this file or directory (repository-relative).
    pub path: Option<String>,
    /// Definitions returned at most (1-1000). Default 50.
    #[schemars(range(min = 1, max = budget::MAX_MAX_RESULTS))]
    pub max_results: Option<u32>,
    /// Output budget in characters (500-200000). Default 20000.
    #[schemars(range(min = budget::MIN_MAX_CHARS, max = budget::MAX_MAX_CHARS))]
    pub max_chars: Option<u32>,
}

/// Arguments of `find_references`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindReferencesArgs {
    /// Symbol whose usages to find; a qualified name is searched by its last segment.
    pub symbol: String,
    /// Only usages in this file or directory (repository-relative).
    pub path: Option<String>,
    /// Globs over repository-relative paths; a leading `!` excludes.
    pub glob: Option<Vec<String>>,
    /// File types by ripgrep's names (`py`, `php`, ...).
    pub file_types: Option<Vec<String>>,
    /// Also list the definition lines themselves. Default false.
    pub include_definitions: Option<bool>,
    /// Usage lines returned at most (1-1000). Default 50.
    #[schemars(range(min = 1, max = budget::MAX_MAX_RESULTS))]
    pub max_results: Option<u32>,
    /// Output budget in characters (500-200000). Default 20000.
    #[schemars(range(min = budget::MIN_MAX_CHARS, max = budget::MAX_MAX_CHARS))]
    pub max_chars: Option<u32>,
}

/// Arguments of `analyze_structure`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnalyzeStructureArgs {
    /// File or directory (repository-relative). Default: the repository root.
    pub path: Option<String>,
    /// For a file: outline only the symbols from this line on (with the scopes around them). Continue a
    /// truncated outline with its `next_from_line`.
    #[schemars(range(min = 1))]
    pub from_line: Option<u32>,
    /// Files listed at most for a directory (1-1000). Default 50.
    #[schemars(range(min = 1, max = budget::MAX_MAX_RESULTS))]
    pub max_results: Option<u32>,
    /// Output budget in characters (500-200000). Default 20000.
    #[schemars(range(min = budget::MIN_MAX_CHARS, max = budget::MAX_MAX_CHARS))]
    pub max_chars: Option<u32>,
}

/// Arguments of `get_function_at_line`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FunctionAtLineArgs {
    /// File (repository-relative).
    pub path: String,
    /// 1-based line number.
    #[schemars(range(min = 1))]
    pub line: u32,
    /// Include the code of the function. Default true.
    pub include_code: Option<bool>,
    /// Output budget in characters (500-200000). Default 20000.
    #[schemars(range(min = budget::MIN_MAX_CHARS, max = budget::MAX_MAX_CHARS))]
    pub max_chars: Option<u32>,
}

/// Arguments of `repo_map`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RepoMapArgs {
    /// Only symbols in this file or directory (repository-relative). Default: everything.
    pub path: Option<String>,
    /// Files being worked on: the map favours the symbols they use.
    pub focus: Option<Vec<String>>,
    /// Size of the map in tokens (64-16384). Default 1024.
    #[schemars(range(min = MIN_MAP_TOKENS, max = MAX_MAP_TOKENS))]
    pub max_tokens: Option<u32>,
}

/// Which collection `semantic_search` searches.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CollectionArg {
    /// The map of confirmed NL -> symbol agreements first; code when no confident map hit.
    Auto,
    /// Code chunks only.
    Forest,
    /// Agreements only.
    Map,
}

/// Arguments of `semantic_search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SemanticSearchArgs {
    /// What to look for, in natural language or code words (`where are invoices totalled`).
    pub query: String,
    /// Results returned at most (1-100). Default 10.
    #[schemars(range(min = 1, max = MAX_SEMANTIC_RESULTS))]
    pub n_results: Option<u32>,
    /// `auto` (default), `forest` (code) or `map` (agreements).
    pub collection: Option<CollectionArg>,
    /// Only chunks in this file or directory (repository-relative).
    pub path: Option<String>,
    /// Only these chunk kinds, e.g. `["function", "method"]`.
    pub kinds: Option<Vec<String>>,
    /// Search every repository published to the team's shared store (config `shared_store` / `CODE_INTEL_SHARED_STORE`) instead of this one; each hit names its repository. Without a usable store, this repository's index answers and `shared.status` says why. Default false.
    pub shared: Option<bool>,
    /// With `shared`: only these published repositories, each by the name it was published under (`github.com/org/app`) or its last parts (`org/app`, `app`) when no other published name ends so. Default: every published repository.
    #[schemars(length(min = 1, max = MAX_SHARED_REPOSITORIES))]
    pub repositories: Option<Vec<String>>,
    /// Output budget in characters (500-200000). Default 20000.
    #[schemars(range(min = budget::MIN_MAX_CHARS, max = budget::MAX_MAX_CHARS))]
    pub max_chars: Option<u32>,
}

/// What `sync_index` refreshes.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SyncTarget {
    /// Code chunks (the forest) and their embeddings.
    Forest,
    /// The map of agreements.
    Map,
    /// Both.
    All,
}

/// Arguments of `sync_index`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SyncIndexArgs {
    /// `forest` (code), `map` (agreements) or `all` (default).
    pub target: Option<SyncTarget>,
    /// Re-read and re-chunk every file, not only changed ones. Default false.
    pub force: Option<bool>,
}

/// `index_status` takes no arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

// ---------------------------------------------------------------------------
// Results

/// Result of `search_text`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchTextResult {
    pub pattern: String,
    pub matches: Vec<TextMatch>,
    pub files_searched: usize,
    pub files_matched: usize,
    /// Some matches were left out (by `max_results` or `max_chars`).
    pub truncated: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Result of `find_definitions`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FindDefinitionsResult {
    pub symbol: String,
    /// `exact`, `prefix` or `fuzzy`: the mode that produced these results.
    pub match_used: String,
    pub definitions: Vec<Definition>,
    pub truncated: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Result of `find_references`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FindReferencesResult {
    pub symbol: String,
    /// The identifier searched for (last segment of `symbol`).
    pub searched: String,
    /// Usages grouped by the chunk (function, method, class) that contains them.
    pub groups: Vec<ReferenceGroup>,
    pub total_hits: usize,
    pub files: usize,
    pub definitions_excluded: Vec<DefinitionSite>,
    pub truncated: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Result of `analyze_structure`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AnalyzeStructureResult {
    pub path: String,
    pub files: Vec<FileOutline>,
    pub truncated: bool,
    /// When a file's outline was cut to fit `max_chars`: the line of the first symbol left out. Call
    /// analyze_structure again with `from_line` set to it for the rest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_from_line: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A chunk as `get_function_at_line` returns it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FunctionChunk {
    pub name: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qualified_name: Option<String>,
    pub start_line: u32,
    pub end_line: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub docstring: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// An enclosing scope of the function (outermost first).
#[derive(Debug, Serialize, JsonSchema)]
pub struct ScopeChunk {
    pub name: String,
    pub kind: String,
    pub start_line: u32,
    pub end_line: u32,
}

/// Result of `get_function_at_line`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FunctionAtLineResult {
    pub path: String,
    pub line: u32,
    /// The innermost function or method containing the line (or the
    /// innermost chunk of any kind when no function does).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionChunk>,
    /// Chunks around it, outermost first (e.g. the class).
    pub enclosing: Vec<ScopeChunk>,
    pub truncated: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Result of `repo_map`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RepoMapResult {
    pub files: Vec<MapFile>,
    /// The rendered map.
    pub map: String,
    pub tokens_estimated: usize,
    pub symbols_shown: usize,
    pub symbols_total: usize,
    pub truncated: bool,
}

/// Result of `sync_index`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SyncIndexResult {
    pub target: String,
    pub added: u64,
    pub modified: u64,
    pub deleted: u64,
    /// `from -> to` for files moved without changes.
    pub renamed: Vec<String>,
    pub unchanged: u64,
    pub chunks_written: u64,
    pub fallback_files: u64,
    pub plugin_failures: u64,
    /// Files skipped (too large, binary, unreadable), with the reason.
    pub skipped: Vec<String>,
    pub total_files: u64,
    pub total_chunks: u64,
    pub elapsed_ms: u64,
    pub cancelled: bool,
    /// Chunks embedded before this answer: when the request carried a
    /// progress token and a model is available. Otherwise new chunks are
    /// embedded in the background after the answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedded_chunks: Option<u64>,
    /// `ready`, `partial: N%`, `initializing` or `unavailable: <reason>` as of this answer.
    pub vector_search: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Skipped files listed at most in a `sync_index` result.
const SYNC_SKIPPED_LISTED: usize = 50;

/// One `semantic_search` result: a chunk, with how it was found.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SemanticHit {
    /// The repository of the hit, with `shared`: the name it was published under (`github.com/org/app`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    pub path: String,
    pub name: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qualified_name: Option<String>,
    pub start_line: u32,
    pub end_line: u32,
    /// Relevance (0-1 in hybrid and semantic ranking; BM25 in keyword-only ranking).
    pub score: f64,
    /// Calibrated similarity to the query, when the vector side found the chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector_score: Option<f64>,
    /// `lexical`, `vector` or `hybrid` (found by both).
    pub source: String,
    /// Rank of this hit's file among the answer's files (1 = best). Results
    /// are in file order, each file's best chunks one after the other.
    pub file_rank: usize,
    /// Files tied to this chunk by cross-file links (its model, the
    /// migrations of its table, the route a form posts to, ...), strongest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub linked_files: Vec<LinkedFile>,
}

/// A hit in the map of agreements (past successful NL -> symbol mappings).
#[derive(Debug, Serialize, JsonSchema)]
pub struct MapHitOut {
    /// The agreement's id (its file is `.code-intel/agreements/<id>.md`).
    pub agreement_id: String,
    pub text: String,
    pub symbols: Vec<String>,
    pub files: Vec<String>,
    pub score: f64,
}

/// Result of `semantic_search`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SemanticSearchResult {
    pub query: String,
    pub collection: String,
    /// `hybrid`, `semantic` or `lexical`: the ranking actually used.
    pub mode: String,
    pub results: Vec<SemanticHit>,
    /// A map hit answered the query (score >= 0.7); the code was not searched.
    pub short_circuit: bool,
    /// Agreements matching the query: the answer when `short_circuit`, hints otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub map_hits: Vec<MapHitOut>,
    /// `ready`, `partial: N%`, `initializing`, or `unavailable: <reason>` (then results are keyword matches only).
    pub vector_search: String,
    /// The model whose vectors ranked the code for the request as written (`name@revision`): the English model for a request in English when it is installed and complete, else the main model; absent for keyword-only answers. A request read in English (`english_query`) is embedded by the English model when it is complete, else by this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector_model: Option<String>,
    /// A request in Japanese read in English (its software vocabulary and the katakana words the repository names): the code was also searched by meaning with these words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub english_query: Option<String>,
    /// Results are hypotheses until an exact tool (find_definitions, get_function_at_line) confirms them.
    pub confidence: String,
    pub truncated: bool,
    /// With `shared`: the store that answered, or why this repository's index answered instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared: Option<SharedSearch>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// How `semantic_search` with `shared` was answered.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SharedSearch {
    /// `searched` (every published repository, or those `repositories` named), `off` (no store configured) or `unavailable: <reason>`; unless `searched`, the results come from this repository's index.
    pub status: String,
    /// The store, without its password.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
    /// Repositories searched: every published one, or those `repositories` named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repositories: Option<i64>,
    /// With `repositories`: the published names searched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub searched: Option<Vec<String>>,
    /// Milliseconds the store took (keyword and vector search, fusion), after the query was embedded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query_ms: Option<f64>,
}

/// Files and chunks one chunker produced.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ChunkerCounts {
    pub files: u64,
    pub chunks: u64,
}

/// A recorded plugin failure.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PluginFailure {
    pub path: String,
    pub plugin: String,
    pub kind: String,
    pub message: String,
}

/// Plugin failures listed at most by `index_status`.
const STATUS_FAILURES: usize = 20;

/// Result of `index_status`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct IndexStatusResult {
    /// Where the index is: starting, syncing (with progress), ready, failed.
    pub index: IndexPhase,
    pub files: u64,
    pub chunks: u64,
    pub chunks_by_kind: BTreeMap<String, u64>,
    /// Per chunker (plugin name, or `fallback` for line windows).
    pub by_chunker: BTreeMap<String, ChunkerCounts>,
    /// Files indexed as line windows because their plugin failed.
    pub fallback_after_failure: u64,
    pub plugin_failures: u64,
    pub recent_plugin_failures: Vec<PluginFailure>,
    /// Bytes of source indexed.
    pub indexed_bytes: u64,
    /// Size of the index database on disk.
    pub index_size_bytes: u64,
    /// Unix time (ms) the last complete sync finished.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_sync_unix_ms: Option<u64>,
    /// Summary of the last sync run by this server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_sync: Option<SyncSummary>,
    /// `ready`, `partial: N%` (embedding under way), `initializing` (model
    /// loading) or `unavailable: <reason>` (semantic search is keyword-only).
    pub vector_search: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub config_warnings: Vec<String>,
}

// ---------------------------------------------------------------------------
// Helpers

/// Parses tool arguments; errors name the field.
pub fn parse_args<T: DeserializeOwned>(arguments: JsonObject) -> Result<T, ArgError> {
    let value = serde_json::Value::Object(arguments);
    serde_path_to_error::deserialize::<_, T>(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        if path == "." || path.is_empty() {
            ArgError::new("arguments", inner)
        } else {
            ArgError { argument: leak_field(&path), message: inner }
        }
    })
}

/// Argument names are a small fixed set per tool; they are interned so
/// [`ArgError`] can keep a `&'static str`.
fn leak_field(path: &str) -> &'static str {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES.get_or_init(Default::default).lock().expect("names lock");
    if let Some(existing) = names.get(path) {
        return existing;
    }
    // Bounded: field paths come from the tool schemas, but a hostile client
    // could send many distinct array indices; cap what is interned.
    if names.len() > 1024 {
        return "arguments";
    }
    let leaked: &'static str = Box::leak(path.to_string().into_boxed_str());
    names.insert(leaked);
    leaked
}

/// A tool error result (shown to the agent) for a bad argument.
/// The answer of `semantic_search` with `shared` from the store: hits of
/// every published repository, fused by reciprocal rank, each naming its
/// repository; `file_rank` numbers the (repository, path) pairs by their
/// best hit, and each file's hits follow one another, as in local answers.
fn shared_answer(query: String, answer: super::shared::Answer, max_chars: usize) -> Result<CallToolResult, ErrorData> {
    let outcome = answer.outcome;
    let vector_ready = outcome.vector_status == "ready";
    let mut files: Vec<(String, String)> = Vec::new();
    let mut results: Vec<SemanticHit> = outcome
        .hits
        .into_iter()
        .map(|h| {
            let file = (h.repository.clone(), h.path.clone());
            let file_rank = match files.iter().position(|f| *f == file) {
                Some(i) => i + 1,
                None => {
                    files.push(file);
                    files.len()
                }
            };
            SemanticHit {
                source: match (h.arms.contains(&"keyword"), h.arms.contains(&"vector")) {
                    (true, true) => "hybrid",
                    (false, true) => "vector",
                    _ => "lexical",
                }
                .to_string(),
                repository: Some(h.repository),
                path: h.path,
                name: h.name,
                kind: h.kind,
                qualified_name: None,
                start_line: u32::try_from(h.start_line).unwrap_or(0),
                end_line: u32::try_from(h.end_line).unwrap_or(0),
                score: h.score,
                vector_score: h.vector_score.map(f64::from),
                file_rank,
                linked_files: Vec::new(),
            }
        })
        .collect();
    results.sort_by_key(|h| h.file_rank);
    let mut notes = Vec::new();
    if let Some(message) = outcome.no_confident_match {
        notes.push(format!(
            "{message} (in the {} repositories published to {})",
            answer.searched.as_ref().map_or_else(|| outcome.repositories.to_string(), |names| names.join(", ")),
            answer.store
        ));
    } else if results.is_empty() {
        notes.push(format!(
            "no match in the {} repositories published to {}; try other words, or search this repository without shared",
            answer.searched.as_ref().map_or_else(|| outcome.repositories.to_string(), |names| names.join(", ")),
            answer.store
        ));
    }
    if outcome.older_words > 0 {
        notes.push(format!(
            "repositories last published by an older code-intel, whose words lack CJK character pairs: {}; publishing them again (`code-intel index`) lets every request match them fully",
            outcome.older_words
        ));
    }
    let result = SemanticSearchResult {
        query,
        collection: "forest".to_string(),
        mode: if vector_ready { "hybrid" } else { "lexical" }.to_string(),
        results,
        short_circuit: false,
        map_hits: Vec::new(),
        vector_search: outcome.vector_status,
        vector_model: None,
        english_query: outcome.english_query,
        confidence: "HYPOTHESIS".to_string(),
        truncated: false,
        shared: Some(SharedSearch {
            status: "searched".to_string(),
            store: Some(answer.store),
            repositories: Some(outcome.repositories),
            searched: answer.searched,
            query_ms: Some((answer.query_ms * 10.0).round() / 10.0),
        }),
        notes,
    };
    semantic_answer(result, max_chars)
}

/// A `semantic_search` answer fitted to `max_chars` (linked files cut
/// first, then whole results, each cut noted) and rendered.
fn semantic_answer(mut result: SemanticSearchResult, max_chars: usize) -> Result<CallToolResult, ErrorData> {
    let reserved = budget::json_len(&result) + 400;
    if let Some(cap) = budget::trim_nested(&mut result.results, max_chars, reserved, |h| &mut h.linked_files) {
        note_links_cut(&mut result.notes, cap, "result", max_chars);
    }
    let dropped = budget::fit(&mut result.results, max_chars, reserved, |h, _| h.linked_files.clear());
    if dropped > 0 {
        result.truncated = true;
        note_dropped(&mut result.notes, dropped, "results", max_chars);
    }
    let text = render::semantic(&result);
    success(&result, text)
}

fn arg_error(e: &ArgError) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(e.to_string())])
}

fn tool_error(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.into())])
}

/// A successful result: structured content plus its compact text rendering.
fn success<T: Serialize>(value: &T, text: String) -> Result<CallToolResult, ErrorData> {
    let structured =
        serde_json::to_value(value).map_err(|e| ErrorData::internal_error(format!("cannot serialize result: {e}"), None))?;
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(structured);
    Ok(result)
}

fn path_arg(state: &ServerState, argument: &'static str, value: &str) -> Result<RepoPath, ArgError> {
    state.root().resolve(value).map_err(|e| ArgError::new(argument, path_message(&e)))
}

fn existing_path_arg(state: &ServerState, argument: &'static str, value: &str) -> Result<RepoPath, ArgError> {
    state.root().resolve_existing(value).map_err(|e| ArgError::new(argument, path_message(&e)))
}

/// Directories the text searches never enter (the search's own exclusion
/// list does not apply to a walk that starts inside them): the index and
/// session records, and version control.
const UNSEARCHED_DIRS: &[(&str, &str)] = &[
    (code_intel_core::config::STATE_DIR_NAME, "holds the index and the session records, not source code"),
    (".git", "holds version control's own files, not source code"),
];

/// [`existing_path_arg`] for the scope of a text search: refuses a path
/// inside one of [`UNSEARCHED_DIRS`].
fn searched_path_arg(state: &ServerState, argument: &'static str, value: &str) -> Result<RepoPath, ArgError> {
    let path = path_arg(state, argument, value)?;
    let relative = path.relative();
    for (dir, why) in UNSEARCHED_DIRS {
        if relative == *dir || relative.strip_prefix(dir).is_some_and(|rest| rest.starts_with('/')) {
            return Err(ArgError::new(argument, format!("{dir}/ {why} and is never searched; give a path in the source tree")));
        }
    }
    existing_path_arg(state, argument, value)
}

fn path_message(e: &PathError) -> String {
    e.to_string()
}

fn context_arg(argument: &'static str, value: Option<u32>, default: usize) -> Result<usize, ArgError> {
    match value {
        None => Ok(default),
        Some(v) if (v as usize) <= text::MAX_CONTEXT_LINES => Ok(v as usize),
        Some(v) => Err(ArgError::new(argument, format!("must be between 0 and {}, got {v}", text::MAX_CONTEXT_LINES))),
    }
}

fn note_dropped(notes: &mut Vec<String>, dropped: usize, what: &str, max_chars: usize) {
    if dropped > 0 {
        notes.push(format!(
            "{dropped} more {what} cut by the output budget of {max_chars} characters; narrow the query (path, glob) or raise max_chars"
        ));
    }
}

fn note_links_cut(notes: &mut Vec<String>, cap: usize, what: &str, max_chars: usize) {
    notes.push(if cap == 0 {
        format!("linked files left out to fit the output budget of {max_chars} characters; raise max_chars or ask for fewer results")
    } else {
        format!("linked files cut to {cap} per {what} to fit the output budget of {max_chars} characters; raise max_chars to see them all")
    });
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, ErrorData> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ErrorData::internal_error(format!("tool task failed: {e}"), None))
}

fn unavailable(e: &IndexUnavailable) -> CallToolResult {
    tool_error(e.to_string())
}

macro_rules! try_arg {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return Ok(arg_error(&e)),
        }
    };
}

// ---------------------------------------------------------------------------
// Tools

#[tool_router(router = code_tools, vis = "pub")]
impl CodeIntelServer {
    #[tool(
        name = "search_text",
        description = "Regex or literal text search over the working tree (ripgrep engine; honours .gitignore). \
Filters: path, glob, file_types; options: case, word, context lines. Returns matching lines with line/column.",
        input_schema = schema::input::<SearchTextArgs>(),
        output_schema = schema::output::<SearchTextResult>(),
        annotations(title = "Search text", read_only_hint = true, open_world_hint = false)
    )]
    pub async fn search_text(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        let args: SearchTextArgs = try_arg!(parse_args(arguments));
        try_arg!(budget::text_limit(
            "pattern",
            &args.pattern,
            budget::MAX_PATTERN_CHARS,
            "a match lies within one line; search for a distinctive part of the line"
        ));
        let state = self.state().clone();
        let max_results = try_arg!(budget::max_results(args.max_results, DEFAULT_MAX_RESULTS));
        let max_chars = try_arg!(budget::max_chars(args.max_chars));
        let around = try_arg!(context_arg("context_lines", args.context_lines, 0));
        let before = try_arg!(context_arg("before_context", args.before_context, around));
        let after = try_arg!(context_arg("after_context", args.after_context, around));
        let scopes = match args.path.as_deref() {
            None | Some("") | Some(".") => Vec::new(),
            Some(p) => vec![try_arg!(searched_path_arg(&state, "path", p))],
        };
        let query = TextQuery {
            pattern: args.pattern.clone(),
            literal: args.literal.unwrap_or(false),
            case: match args.case {
                None | Some(CaseArg::Smart) => CaseMode::Smart,
                Some(CaseArg::Sensitive) => CaseMode::Sensitive,
                Some(CaseArg::Insensitive) => CaseMode::Insensitive,
            },
            word: args.word.unwrap_or(false),
            globs: args.glob.unwrap_or_default(),
            file_types: args.file_types.unwrap_or_default(),
            before_context: before,
            after_context: after,
            max_results,
            include_hidden: args.include_hidden.unwrap_or(false),
            threads: 0,
        };
        let root = state.root().clone();
        let literal = query.literal;
        let outcome = blocking(move || text::search_text(&root, &scopes, &query)).await?;
        let outcome = match outcome {
            Ok(o) => o,
            // The search's own advice is to set `literal`; it already is.
            Err(text::TextSearchError::Pattern(why)) if literal => {
                return Ok(arg_error(&ArgError::new(
                    "pattern",
                    format!("the text could not be turned into a matcher ({why}); search for a shorter part of it"),
                )));
            }
            Err(e) => {
                let argument = match e {
                    text::TextSearchError::Glob { .. } => "glob",
                    text::TextSearchError::FileType { .. } => "file_types",
                    _ => "pattern",
                };
                return Ok(arg_error(&ArgError::new(argument, e.to_string())));
            }
        };
        let mut result = SearchTextResult {
            pattern: args.pattern,
            matches: outcome.matches,
            files_searched: outcome.files_searched,
            files_matched: outcome.files_matched,
            truncated: outcome.truncated,
            notes: Vec::new(),
        };
        if outcome.truncated {
            result.notes.push(format!("more than {max_results} matches; narrow with path/glob/file_types or raise max_results"));
        }
        let reserved = budget::json_len(&result) + 400;
        let dropped = budget::fit(&mut result.matches, max_chars, reserved, |m, room| {
            m.before.clear();
            m.after.clear();
            m.text = m.text.chars().take(room / 2).collect();
        });
        if dropped > 0 {
            result.truncated = true;
            note_dropped(&mut result.notes, dropped, "matches", max_chars);
        }
        result.files_matched = {
            let mut paths: Vec<&str> = result.matches.iter().map(|m| m.path.as_str()).collect();
            paths.dedup();
            paths.len()
        };
        let text = render::search_text(&result);
        success(&result, text)
    }

    #[tool(
        name = "find_definitions",
        description = "Where a symbol is defined, from the code index: kind, file, lines, signature, scope / qualified name. \
Matches exactly (falling back to fuzzy when nothing matches), by prefix, or fuzzily.",
        input_schema = schema::input::<FindDefinitionsArgs>(),
        output_schema = schema::output::<FindDefinitionsResult>(),
        annotations(title = "Find definitions", read_only_hint = true, open_world_hint = false)
    )]
    pub async fn find_definitions(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        let args: FindDefinitionsArgs = try_arg!(parse_args(arguments));
        let state = self.state().clone();
        let max_results = try_arg!(budget::max_results(args.max_results, DEFAULT_MAX_RESULTS));
        let max_chars = try_arg!(budget::max_chars(args.max_chars));
        if args.symbol.trim().is_empty() {
            return Ok(arg_error(&ArgError::new("symbol", "is empty; give a function, class or method name")));
        }
        try_arg!(budget::text_limit("symbol", &args.symbol, budget::MAX_SYMBOL_CHARS, "give a function, class or method name, not code"));
        let path_prefix = match args.path.as_deref() {
            None => String::new(),
            Some(p) => try_arg!(path_arg(&state, "path", p)).relative().to_string(),
        };
        if let Err(e) = state.wait_for_index().await {
            return Ok(unavailable(&e));
        }
        let query = DefinitionQuery {
            symbol: args.symbol.clone(),
            how: match args.match_mode {
                None | Some(MatchArg::Exact) => NameMatch::Exact,
                Some(MatchArg::Prefix) => NameMatch::Prefix,
                Some(MatchArg::Fuzzy) => NameMatch::Fuzzy,
            },
            kinds: args.kinds.unwrap_or_default(),
            path_prefix,
            limit: max_results,
            links: MAX_LINKED_FILES,
        };
        let st = state.clone();
        let found = match blocking(move || st.with_store(|s| definitions::find_definitions(s, &query))).await? {
            Ok(Ok(found)) => found,
            Ok(Err(e)) => return Ok(tool_error(format!("index query failed: {e}"))),
            Err(e) => return Ok(unavailable(&e)),
        };
        let mut notes = Vec::new();
        let match_used = match found.match_used {
            NameMatch::Exact => "exact",
            NameMatch::Prefix => "prefix",
            NameMatch::Fuzzy => "fuzzy",
        };
        if matches!(args.match_mode, None | Some(MatchArg::Exact)) && found.match_used == NameMatch::Fuzzy {
            notes.push(format!("no exact definition of {:?}; these are fuzzy matches", args.symbol));
        }
        if found.definitions.is_empty() {
            notes.push(format!(
                "no definition of {:?} in the index; try search_text, a shorter name, or match=\"fuzzy\"",
                args.symbol
            ));
        }
        let mut result = FindDefinitionsResult {
            symbol: args.symbol,
            match_used: match_used.to_string(),
            definitions: found.definitions,
            truncated: found.truncated,
            notes,
        };
        let reserved = budget::json_len(&result) + 400;
        if let Some(cap) = budget::trim_nested(&mut result.definitions, max_chars, reserved, |d| &mut d.linked_files) {
            note_links_cut(&mut result.notes, cap, "definition", max_chars);
        }
        let dropped = budget::fit(&mut result.definitions, max_chars, reserved, |d, _| {
            d.docstring = None;
            d.linked_files.clear();
        });
        if dropped > 0 {
            result.truncated = true;
            note_dropped(&mut result.notes, dropped, "definitions", max_chars);
        }
        let text = render::definitions(&result);
        success(&result, text)
    }

    #[tool(
        name = "find_references",
        description = "Where a symbol is used: whole-word hits across the working tree minus its definition sites, \
grouped by the function/method/class that contains each usage.",
        input_schema = schema::input::<FindReferencesArgs>(),
        output_schema = schema::output::<FindReferencesResult>(),
        annotations(title = "Find references", read_only_hint = true, open_world_hint = false)
    )]
    pub async fn find_references(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        let args: FindReferencesArgs = try_arg!(parse_args(arguments));
        let state = self.state().clone();
        let max_results = try_arg!(budget::max_results(args.max_results, DEFAULT_MAX_RESULTS));
        let max_chars = try_arg!(budget::max_chars(args.max_chars));
        try_arg!(budget::text_limit("symbol", &args.symbol, budget::MAX_SYMBOL_CHARS, "give a function, class, method or variable name, not code"));
        if definitions::leaf_name(&args.symbol).is_empty() {
            return Ok(arg_error(&ArgError::new("symbol", "is empty; give a function, class, method or variable name")));
        }
        let scopes = match args.path.as_deref() {
            None | Some("") | Some(".") => Vec::new(),
            Some(p) => vec![try_arg!(searched_path_arg(&state, "path", p))],
        };
        let mut notes = Vec::new();
        let indexed = match state.wait_for_index().await {
            Ok(()) => true,
            Err(e) => {
                notes.push(format!("{e}; definition sites are not excluded and usages are grouped per file"));
                false
            }
        };
        let query = ReferenceQuery {
            symbol: args.symbol.clone(),
            scopes,
            globs: args.glob.unwrap_or_default(),
            file_types: args.file_types.unwrap_or_default(),
            max_hits: max_results,
            include_definitions: args.include_definitions.unwrap_or(false),
        };
        let st = state.clone();
        let found = blocking(move || {
            if indexed
                && let Ok(found) = st.with_store(|s| references::find_references(st.root(), Some(s), &query))
            {
                return found;
            }
            references::find_references(st.root(), None, &query)
        })
        .await?;
        let found = match found {
            Ok(f) => f,
            Err(references::ReferenceError::Text(e)) => {
                let argument = match e {
                    text::TextSearchError::Glob { .. } => "glob",
                    text::TextSearchError::FileType { .. } => "file_types",
                    _ => "symbol",
                };
                return Ok(arg_error(&ArgError::new(argument, e.to_string())));
            }
            Err(e) => return Ok(tool_error(e.to_string())),
        };
        if found.truncated {
            notes.push(format!("more than {max_results} usages; narrow with path/glob or raise max_results"));
        }
        if found.total_hits == 0 {
            notes.push(format!("no usages of {:?} outside its definitions", found.searched));
        }
        let mut result = FindReferencesResult {
            symbol: args.symbol,
            searched: found.searched,
            groups: found.groups,
            total_hits: found.total_hits,
            files: found.files,
            definitions_excluded: found.definitions_excluded,
            truncated: found.truncated,
            notes,
        };
        let reserved = budget::json_len(&result) + 400;
        let dropped = budget::fit(&mut result.groups, max_chars, reserved, |g, room| {
            let keep = (room / 200).max(1);
            g.hits.truncate(keep);
        });
        if dropped > 0 {
            result.truncated = true;
            note_dropped(&mut result.notes, dropped, "groups of usages", max_chars);
            result.total_hits = result.groups.iter().map(|g| g.hits.len()).sum();
        }
        let text = render::references(&result);
        success(&result, text)
    }

    #[tool(
        name = "analyze_structure",
        description = "Outline of a file or directory from the code index: classes > methods, functions and other \
definitions with their line ranges and signatures.",
        input_schema = schema::input::<AnalyzeStructureArgs>(),
        output_schema = schema::output::<AnalyzeStructureResult>(),
        annotations(title = "Analyze structure", read_only_hint = true, open_world_hint = false)
    )]
    pub async fn analyze_structure(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        let args: AnalyzeStructureArgs = try_arg!(parse_args(arguments));
        let state = self.state().clone();
        let max_results = try_arg!(budget::max_results(args.max_results, DEFAULT_MAX_RESULTS));
        let max_chars = try_arg!(budget::max_chars(args.max_chars));
        let path = try_arg!(existing_path_arg(&state, "path", args.path.as_deref().unwrap_or(".")));
        if let Err(e) = state.wait_for_index().await {
            return Ok(unavailable(&e));
        }
        let is_dir = path.absolute().is_dir();
        if is_dir && args.from_line.is_some() {
            return Ok(arg_error(&ArgError::new("from_line", "applies to a file; give the path of a file")));
        }
        if args.from_line == Some(0) {
            return Ok(arg_error(&ArgError::new("from_line", "line numbers start at 1")));
        }
        let rel = path.relative().to_string();
        let st = state.clone();
        let outcome = blocking(move || {
            st.with_store(|s| {
                if is_dir {
                    structure::outline_dir(s, &rel, MAX_OUTLINE_CHUNKS)
                } else {
                    structure::outline_file(s, &rel).map(|o| (o.into_iter().collect(), false))
                }
            })
        })
        .await?;
        let (mut files, chunk_cut) = match outcome {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => return Ok(tool_error(format!("index query failed: {e}"))),
            Err(e) => return Ok(unavailable(&e)),
        };
        let mut notes = Vec::new();
        if !is_dir && files.is_empty() {
            notes.push(format!(
                "{} is not in the index (ignored, binary, too large, or added since the last sync; run sync_index)",
                path.display()
            ));
        }
        if let Some(line) = args.from_line {
            for f in &mut files {
                f.symbols = outline::from_line(std::mem::take(&mut f.symbols), line);
            }
        }
        let mut truncated = chunk_cut;
        if chunk_cut {
            notes.push(format!("the directory has more than {MAX_OUTLINE_CHUNKS} symbols; outline a subdirectory"));
        }
        if files.len() > max_results {
            notes.push(format!("{} more files not listed (max_results={max_results})", files.len() - max_results));
            files.truncate(max_results);
            truncated = true;
        }
        let mut result =
            AnalyzeStructureResult { path: path.display().to_string(), files: Vec::new(), truncated, next_from_line: None, notes };
        // What the rest of the result costs (the note a cut adds included).
        let reserved = budget::json_len(&result) + 400;
        result.files = files;
        let cut_at = std::cell::Cell::new(None);
        let dropped = budget::fit(&mut result.files, max_chars, reserved, |f, room| {
            let before = outline::count(&f.symbols);
            let room = room.saturating_sub(budget::json_len(&FileOutline { symbols: Vec::new(), ..f.clone() }));
            if let Some(line) = outline::cut(&mut f.symbols, room) {
                cut_at.set(Some((line, outline::count(&f.symbols), before)));
            }
        });
        if let Some((line, kept, of)) = cut_at.get() {
            result.truncated = true;
            result.next_from_line = Some(line);
            let file = result.files.first().map_or(String::new(), |f| f.path.clone());
            result.notes.push(format!(
                "{file}: {kept} of {of} symbols fit in max_chars={max_chars}; the rest starts at line {line}: call \
analyze_structure(path={file:?}, from_line={line}) for it, or raise max_chars"
            ));
        }
        if dropped > 0 {
            result.truncated = true;
            note_dropped(&mut result.notes, dropped, "files", max_chars);
        }
        let text = render::structure(&result);
        success(&result, text)
    }

    #[tool(
        name = "get_function_at_line",
        description = "The function or method enclosing a line of a file, with its code, signature and the scopes \
around it (e.g. its class).",
        input_schema = schema::input::<FunctionAtLineArgs>(),
        output_schema = schema::output::<FunctionAtLineResult>(),
        annotations(title = "Function at line", read_only_hint = true, open_world_hint = false)
    )]
    pub async fn get_function_at_line(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        let args: FunctionAtLineArgs = try_arg!(parse_args(arguments));
        let state = self.state().clone();
        let max_chars = try_arg!(budget::max_chars(args.max_chars));
        let path = try_arg!(existing_path_arg(&state, "path", &args.path));
        if path.absolute().is_dir() {
            return Ok(arg_error(&ArgError::new("path", format!("{} is a directory; give a file", path.display()))));
        }
        if args.line == 0 {
            return Ok(arg_error(&ArgError::new("line", "line numbers start at 1")));
        }
        if let Err(e) = state.wait_for_index().await {
            return Ok(unavailable(&e));
        }
        let rel = path.relative().to_string();
        let line = args.line;
        let st = state.clone();
        let chunks = match blocking(move || st.with_store(|s| s.enclosing_chunks(&rel, line))).await? {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return Ok(tool_error(format!("index query failed: {e}"))),
            Err(e) => return Ok(unavailable(&e)),
        };
        let mut notes = Vec::new();
        if chunks.is_empty() {
            let lines = std::fs::read_to_string(path.absolute()).map(|t| t.lines().count()).unwrap_or(0);
            if lines > 0 && args.line as usize > lines {
                return Ok(arg_error(&ArgError::new(
                    "line",
                    format!("{} has {lines} lines; line {} is past its end", path.display(), args.line),
                )));
            }
            notes.push(format!(
                "no indexed chunk contains {}:{} (the file is not indexed, or the line is outside any definition)",
                path.display(),
                args.line
            ));
        }
        // `enclosing_chunks` is innermost first; prefer a function-like chunk.
        let is_callable = |k: &str| matches!(k, "function" | "method" | "constructor" | "closure" | "arrow_function");
        let real: Vec<_> = chunks.iter().filter(|c| c.chunk.kind != code_intel_core::chunk::FALLBACK_KIND).collect();
        let chosen = real
            .iter()
            .find(|c| is_callable(&c.chunk.kind))
            .or_else(|| real.first())
            .copied()
            .or_else(|| chunks.first());
        if let Some(c) = chosen
            && !is_callable(&c.chunk.kind)
        {
            notes.push(format!("no function or method contains line {}; this is the enclosing {}", args.line, c.chunk.kind));
        }
        let enclosing: Vec<ScopeChunk> = chosen
            .map(|f| {
                let mut outer: Vec<ScopeChunk> = real
                    .iter()
                    .filter(|c| {
                        c.rowid != f.rowid
                            && c.chunk.start_line <= f.chunk.start_line
                            && f.chunk.end_line <= c.chunk.end_line
                            && (c.chunk.end_line - c.chunk.start_line) > (f.chunk.end_line - f.chunk.start_line)
                    })
                    .map(|c| ScopeChunk {
                        name: c.chunk.name.clone(),
                        kind: c.chunk.kind.clone(),
                        start_line: c.chunk.start_line,
                        end_line: c.chunk.end_line,
                    })
                    .collect();
                outer.reverse();
                outer
            })
            .unwrap_or_default();
        let include_code = args.include_code.unwrap_or(true);
        let mut truncated = false;
        let function = chosen.map(|c| {
            let code = include_code.then(|| {
                let content = with_first_line_indent(path.absolute(), c.chunk.start_line, &c.chunk.content);
                let (code, cut) = budget::clip_text(&content, max_chars.saturating_sub(1_000).max(200));
                truncated |= cut;
                code
            });
            FunctionChunk {
                name: c.chunk.name.clone(),
                kind: c.chunk.kind.clone(),
                qualified_name: c.chunk.qualified_name.clone(),
                start_line: c.chunk.start_line,
                end_line: c.chunk.end_line,
                signature: c.chunk.signature.clone(),
                docstring: c.chunk.docstring.clone(),
                code,
            }
        });
        if truncated {
            notes.push(format!("the code was cut to fit max_chars={max_chars}; read the file for the rest"));
        }
        let result = FunctionAtLineResult { path: path.display().to_string(), line: args.line, function, enclosing, truncated, notes };
        let text = render::function_at_line(&result);
        success(&result, text)
    }

    #[tool(
        name = "repo_map",
        description = "A token-budgeted overview of the repository's most important symbols, ranked by PageRank over \
the reference graph (what is used most, by what is used most). Optionally focused on the files being worked on.",
        input_schema = schema::input::<RepoMapArgs>(),
        output_schema = schema::output::<RepoMapResult>(),
        annotations(title = "Repository map", read_only_hint = true, open_world_hint = false)
    )]
    pub async fn repo_map(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        let args: RepoMapArgs = try_arg!(parse_args(arguments));
        let state = self.state().clone();
        let max_tokens = match args.max_tokens {
            None => DEFAULT_MAP_TOKENS,
            Some(t) if (MIN_MAP_TOKENS..=MAX_MAP_TOKENS).contains(&(t as usize)) => t as usize,
            Some(t) => {
                return Ok(arg_error(&ArgError::new(
                    "max_tokens",
                    format!("must be between {MIN_MAP_TOKENS} and {MAX_MAP_TOKENS}, got {t}"),
                )));
            }
        };
        let path_prefix = match args.path.as_deref() {
            None => String::new(),
            Some(p) => try_arg!(existing_path_arg(&state, "path", p)).relative().to_string(),
        };
        let mut focus = Vec::new();
        for f in args.focus.unwrap_or_default() {
            focus.push(try_arg!(path_arg(&state, "focus", &f)).relative().to_string());
        }
        if let Err(e) = state.wait_for_index().await {
            return Ok(unavailable(&e));
        }
        let query = RepoMapQuery { path_prefix, focus, max_tokens };
        let st = state.clone();
        let map = match blocking(move || st.with_store(|s| repo_map::repo_map(s, &query))).await? {
            Ok(Ok(m)) => m,
            Ok(Err(e)) => return Ok(tool_error(format!("index query failed: {e}"))),
            Err(e) => return Ok(unavailable(&e)),
        };
        let result = RepoMapResult {
            files: map.files,
            map: map.text,
            tokens_estimated: map.tokens_estimated,
            symbols_shown: map.symbols_shown,
            symbols_total: map.symbols_total,
            truncated: map.truncated,
        };
        let text = render::repo_map(&result);
        success(&result, text)
    }

    #[tool(
        name = "semantic_search",
        description = "Search code by meaning (hybrid: keyword BM25 + embeddings when a model is available). Results \
are HYPOTHESES: confirm them with find_definitions / get_function_at_line before relying on them.",
        input_schema = schema::input::<SemanticSearchArgs>(),
        output_schema = schema::output::<SemanticSearchResult>(),
        annotations(title = "Semantic search", read_only_hint = true, open_world_hint = false)
    )]
    pub async fn semantic_search(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        let args: SemanticSearchArgs = try_arg!(parse_args(arguments));
        let state = self.state().clone();
        let max_chars = try_arg!(budget::max_chars(args.max_chars));
        let n_results = match args.n_results {
            None => DEFAULT_SEMANTIC_RESULTS,
            Some(n) if (1..=MAX_SEMANTIC_RESULTS as u32).contains(&n) => n as usize,
            Some(n) => {
                return Ok(arg_error(&ArgError::new(
                    "n_results",
                    format!("must be between 1 and {MAX_SEMANTIC_RESULTS}, got {n}"),
                )));
            }
        };
        if args.query.trim().is_empty() {
            return Ok(arg_error(&ArgError::new("query", "is empty; describe what you are looking for")));
        }
        try_arg!(budget::text_limit("query", &args.query, budget::MAX_QUERY_TEXT_CHARS, "describe what you are looking for in a sentence or two, not with the code itself"));
        let mut shared = None;
        let repositories = args.repositories.clone().unwrap_or_default();
        if args.repositories.is_some() && args.shared != Some(true) {
            return Ok(arg_error(&ArgError::new("repositories", "names repositories of the shared store; set shared=true with it, or leave it out to search this repository")));
        }
        if repositories.is_empty() && args.repositories.is_some() {
            return Ok(arg_error(&ArgError::new("repositories", "is empty; name at least one published repository, or leave it out to search all of them")));
        }
        if repositories.len() > MAX_SHARED_REPOSITORIES {
            return Ok(arg_error(&ArgError::new("repositories", format!("names {} repositories; the limit is {MAX_SHARED_REPOSITORIES}: leave it out to search all of them", repositories.len()))));
        }
        for name in &repositories {
            try_arg!(budget::text_limit("repositories", name, MAX_REPOSITORY_NAME_CHARS, "give a repository's published name, such as github.com/org/app"));
        }
        if args.shared == Some(true) {
            if args.collection == Some(CollectionArg::Map) {
                return Ok(arg_error(&ArgError::new("collection", "the map of agreements belongs to this repository; with shared=true leave collection out or use forest")));
            }
            for (argument, given) in [("path", args.path.is_some()), ("kinds", args.kinds.is_some())] {
                if given {
                    return Ok(arg_error(&ArgError::new(argument, "filters this repository's index, not the shared store; leave it out with shared=true")));
                }
            }
            let (st, query) = (state.clone(), args.query.clone());
            match blocking(move || super::shared::search(&st, &query, &repositories, n_results)).await? {
                Ok(answer) => return shared_answer(args.query, answer, max_chars),
                Err(super::shared::Miss::Unknown(why)) => return Ok(arg_error(&ArgError::new("repositories", why))),
                Err(miss) => shared = Some(miss),
            }
        }
        let path_prefix = match args.path.as_deref() {
            None => String::new(),
            Some(p) => try_arg!(path_arg(&state, "path", p)).relative().to_string(),
        };
        let collection = args.collection.unwrap_or(CollectionArg::Auto);
        if let Err(e) = state.wait_for_index().await {
            return Ok(unavailable(&e));
        }
        let path_glob = match path_prefix.as_str() {
            "" => None,
            p if state.root().path().join(p).is_dir() => Some(format!("{}/**", glob_escape(p))),
            p => Some(glob_escape(p)),
        };
        let request = code_intel_search::hybrid::SearchRequest {
            query: args.query.clone(),
            mode: None,
            collection: match collection {
                CollectionArg::Auto => code_intel_search::semantic::Collection::Auto,
                CollectionArg::Forest => code_intel_search::semantic::Collection::Forest,
                CollectionArg::Map => code_intel_search::semantic::Collection::Map,
            },
            n_results,
            filters: code_intel_search::semantic::Filters { path_glob, kinds: args.kinds.unwrap_or_default() },
            weights: state.config().search_weights.clone(),
            model_wait: code_intel_search::semantic::MODEL_WAIT,
            links: MAX_LINKED_FILES,
        };
        let st = state.clone();
        let response = blocking(move || {
            let vectors = st.vectors();
            st.with_store(|s| code_intel_search::hybrid::search(s, Some(&vectors), &request))
        })
        .await?;
        let response = match response {
            Ok(Ok(r)) => r,
            Ok(Err(code_intel_search::semantic::SearchError::BadFilter(e))) => {
                return Ok(arg_error(&ArgError::new("path", e)));
            }
            Ok(Err(e)) => return Ok(tool_error(format!("search failed: {e}"))),
            Err(e) => return Ok(unavailable(&e)),
        };
        let mut notes = Vec::new();
        if let Some(message) = &response.message {
            notes.push(message.clone());
        } else if response.no_confident_match {
            notes.push("no confident match; try other words, search_text, or find_definitions with match=\"fuzzy\"".to_string());
        }
        let mut result = SemanticSearchResult {
            query: args.query,
            collection: match collection {
                CollectionArg::Auto => "auto",
                CollectionArg::Forest => "forest",
                CollectionArg::Map => "map",
            }
            .to_string(),
            mode: format!("{:?}", response.mode).to_lowercase(),
            results: response
                .hits
                .into_iter()
                .map(|h| {
                    let lexical = h.arms.contains(&code_intel_search::hybrid::Arm::Lexical);
                    let vector = h.arms.contains(&code_intel_search::hybrid::Arm::Vector);
                    SemanticHit {
                        repository: None,
                        source: match (lexical, vector) {
                            (true, true) => "hybrid",
                            (false, true) => "vector",
                            _ => "lexical",
                        }
                        .to_string(),
                        path: h.file,
                        name: h.name,
                        kind: h.kind,
                        qualified_name: h.qualified_name,
                        start_line: h.start_line,
                        end_line: h.end_line,
                        score: h.score,
                        vector_score: h.vector_score.map(f64::from),
                        file_rank: h.file_rank,
                        linked_files: h.linked_files,
                    }
                })
                .collect(),
            short_circuit: response.short_circuit,
            map_hits: response
                .map_hits
                .into_iter()
                .map(|m| MapHitOut { agreement_id: m.key, text: m.text, symbols: m.symbols, files: m.files, score: f64::from(m.score) })
                .collect(),
            vector_search: response.vector_search,
            vector_model: response.vector_model,
            english_query: response.english_query,
            confidence: "HYPOTHESIS".to_string(),
            truncated: false,
            shared: None,
            notes,
        };
        if let Some(miss) = shared {
            // Answered here instead: each hit names this repository, as the
            // store's hits name theirs.
            let name = crate::cli::shared::repository_name(state.root().path(), state.config().shared_repository.as_deref());
            for hit in &mut result.results {
                hit.repository = Some(name.clone());
            }
            result.notes.insert(0, miss.note());
            result.shared = Some(SharedSearch { status: miss.status(), store: miss.store(), repositories: None, searched: None, query_ms: None });
        }
        semantic_answer(result, max_chars)
    }

    #[tool(
        name = "sync_index",
        description = "Bring the code index up to date with the files on disk (incremental: only added, modified and \
deleted files are re-chunked; force=true re-chunks everything). Reports what changed. With a progress token it \
sends progress notifications (chunking, then embedding) and answers once the new chunks are embedded; without \
one, embedding continues in the background.",
        input_schema = schema::input::<SyncIndexArgs>(),
        output_schema = schema::output::<SyncIndexResult>(),
        annotations(title = "Sync index", read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    pub async fn sync_index(
        &self,
        arguments: JsonObject,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let args: SyncIndexArgs = try_arg!(parse_args(arguments));
        let state = self.state().clone();
        let target = args.target.unwrap_or(SyncTarget::All);
        let mut notes = Vec::new();
        let reporter = Reporter::new(&context);
        let report = if target == SyncTarget::Map {
            notes.push("the map (agreements) is updated as agreements are recorded; nothing to re-chunk".to_string());
            None
        } else {
            let r = reporter.clone();
            match sync_forest(&state, args.force.unwrap_or(false), move |p| r.sync(p)).await {
                Ok(report) => Some(report),
                Err(e) => {
                    reporter.finish().await;
                    return Ok(tool_error(format!("sync failed: {e}")));
                }
            }
        };
        // A client following progress follows the embedding too, and gets
        // the answer once semantic search covers the new chunks; otherwise
        // they are embedded in the background.
        let mut embedded_chunks = None;
        if report.as_ref().is_some_and(|r| !r.cancelled) {
            if reporter.wanted() {
                let pass = tokio::spawn(embedding_pass(state.clone(), Some(reporter.clone())));
                match pass.await {
                    Ok(EmbedOutcome::Embedded(e)) => embedded_chunks = Some(e.embedded_chunks as u64),
                    Ok(EmbedOutcome::Background(why)) => {
                        notes.push(format!("{why}: new chunks are embedded in the background; index_status shows how far"));
                    }
                    Ok(EmbedOutcome::Failed(e)) => notes.push(e),
                    Ok(EmbedOutcome::NoModel) => {}
                    Err(e) => notes.push(format!("embedding task failed: {e}")),
                }
            } else {
                spawn_embedding(state.clone());
            }
        }
        reporter.finish().await;
        let st = state.clone();
        let vector_search = blocking(move || {
            st.with_store(|s| st.vectors().status(s, std::time::Duration::ZERO).map(|v| v.to_string()))
        })
        .await?
        .map_or_else(|e| e.to_string(), |r| r.unwrap_or_else(|e| format!("unknown: {e}")));
        let report = report.unwrap_or_default();
        if report.cancelled {
            notes.push("the sync was cancelled; what it committed is kept and the next sync resumes".to_string());
        }
        if report.chunker_changed {
            notes.push("the plugins changed since the last sync: every file was chunked again (vectors reused where the text is the same)".to_string());
        }
        let result = SyncIndexResult {
            target: match target {
                SyncTarget::Forest => "forest",
                SyncTarget::Map => "map",
                SyncTarget::All => "all",
            }
            .to_string(),
            added: report.added,
            modified: report.modified,
            deleted: report.deleted,
            renamed: report.renamed.iter().map(|(a, b)| format!("{a} -> {b}")).collect(),
            unchanged: report.unchanged,
            chunks_written: report.chunks,
            fallback_files: report.fallbacks,
            plugin_failures: report.plugin_failures.len() as u64,
            skipped: report
                .skipped
                .iter()
                .take(SYNC_SKIPPED_LISTED)
                .map(|s| format!("{}: {}", s.path, serde_json::to_string(&s.reason).unwrap_or_default().trim_matches('"')))
                .collect(),
            total_files: report.total_files,
            total_chunks: report.total_chunks,
            elapsed_ms: report.elapsed_ms,
            cancelled: report.cancelled,
            embedded_chunks,
            vector_search,
            notes,
        };
        let text = render::sync(&result);
        success(&result, text)
    }

    #[tool(
        name = "index_status",
        description = "State of the code index: sync progress, files and chunks (per kind and per plugin), plugin \
failures and fallbacks, index size, last sync.",
        input_schema = schema::input::<NoArgs>(),
        output_schema = schema::output::<IndexStatusResult>(),
        annotations(title = "Index status", read_only_hint = true, open_world_hint = false)
    )]
    pub async fn index_status(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        let _: NoArgs = try_arg!(parse_args(arguments));
        let state = self.state().clone();
        let phase = state.phase();
        let st = state.clone();
        let stats = blocking(move || {
            if !st.has_index() {
                return Ok(None);
            }
            st.with_store(|s| -> Result<_, code_intel_store::StoreError> {
                let stats = s.stats()?;
                let failures = s.plugin_failures(STATUS_FAILURES)?;
                let last = s.meta(code_intel_store::meta_keys::LAST_SYNC_MS)?.and_then(|v| v.parse::<u64>().ok());
                let vectors = st.vectors().status(s, std::time::Duration::ZERO)?.to_string();
                Ok(Some((stats, failures, last, vectors)))
            })
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| e.to_string()))
        })
        .await?;
        let (stats, failures, last_sync_unix_ms, vector_search) = match stats {
            Ok(Some(v)) => v,
            Ok(None) => (Default::default(), Vec::new(), None, "initializing".to_string()),
            Err(e) => return Ok(tool_error(format!("cannot read the index: {e}"))),
        };
        let db = state.database_path();
        let index_size_bytes = ["", "-wal"]
            .iter()
            .filter_map(|suffix| std::fs::metadata(format!("{}{suffix}", db.display())).ok())
            .map(|m| m.len())
            .sum();
        let result = IndexStatusResult {
            index: phase,
            files: stats.files,
            chunks: stats.chunks,
            chunks_by_kind: stats.chunks_by_kind,
            by_chunker: stats
                .by_chunker
                .into_iter()
                .map(|(k, v)| (k, ChunkerCounts { files: v.files, chunks: v.chunks }))
                .collect(),
            fallback_after_failure: stats.fallback_after_failure,
            plugin_failures: stats.plugin_failures,
            recent_plugin_failures: failures
                .into_iter()
                .map(|f| PluginFailure { path: f.path, plugin: f.plugin, kind: f.kind, message: f.message })
                .collect(),
            indexed_bytes: stats.indexed_bytes,
            index_size_bytes,
            last_sync_unix_ms,
            last_sync: state.last_sync(),
            vector_search,
            config_warnings: state.config_warnings().to_vec(),
        };
        let text = render::index_status(&result);
        success(&result, text)
    }
}

/// Escapes glob metacharacters so a path matches only itself.
fn glob_escape(path: &str) -> String {
    path.chars().map(|c| if "*?[]{}!".contains(c) { format!("[{c}]") } else { c.to_string() }).collect()
}

/// A chunk's content starts at its definition, not at the start of its
/// line; give the first line back its indentation so the code reads as in
/// the file.
fn with_first_line_indent(file: &std::path::Path, start_line: u32, content: &str) -> String {
    if content.starts_with([' ', '\t']) {
        return content.to_string();
    }
    let Ok(text) = std::fs::read_to_string(file) else { return content.to_string() };
    let Some(line) = text.lines().nth(start_line.saturating_sub(1) as usize) else { return content.to_string() };
    let indent: String = line.chars().take_while(|c| *c == ' ' || *c == '\t').collect();
    let first = content.lines().next().unwrap_or("");
    // Only when the file's line really is that indentation followed by the chunk's first line.
    if !indent.is_empty() && line[indent.len()..].starts_with(first) {
        format!("{indent}{content}")
    } else {
        content.to_string()
    }
}

/// Runs one sync of the forest (serialised with any other sync of this
/// server), keeping the index phase up to date for `index_status` and for
/// tools waiting on the first sync.
///
/// # Errors
/// When the index cannot be opened or the sync fails.
pub async fn run_sync(
    state: &Arc<ServerState>,
    force: bool,
    progress: impl Fn(code_intel_index::Progress) + Send + Sync + 'static,
) -> Result<code_intel_index::SyncReport, String> {
    let outcome = sync_forest(state, force, progress).await;
    if outcome.as_ref().is_ok_and(|r| !r.cancelled) {
        spawn_embedding(state.clone());
    }
    outcome
}

/// [`run_sync`] without the embedding pass after it: the caller runs it.
///
/// # Errors
/// When the index cannot be opened or the sync fails.
async fn sync_forest(
    state: &Arc<ServerState>,
    force: bool,
    progress: impl Fn(code_intel_index::Progress) + Send + Sync + 'static,
) -> Result<code_intel_index::SyncReport, String> {
    let _running = state.sync_lock().lock().await;
    if state.cancelled() {
        return Err("the server is shutting down".to_string());
    }
    state.set_phase(IndexPhase::Syncing { files_done: 0, files_total: 0 });
    let st = state.clone();
    let outcome = tokio::task::spawn_blocking(move || {
        let host = st.plugin_host();
        let mut store = code_intel_store::Store::open(st.database_path()).map_err(|e| e.to_string())?;
        let cancel = st.cancel_flag();
        let on_progress = |p: code_intel_index::Progress| {
            if p.phase == code_intel_index::Phase::Indexing {
                st.set_phase(IndexPhase::Syncing { files_done: p.done, files_total: p.total });
            }
            progress(p);
        };
        let options = code_intel_index::SyncOptions { force, cancel: Some(&cancel) };
        code_intel_index::sync(st.root().path(), &mut store, host.as_ref(), st.config(), options, &on_progress)
            .map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| format!("sync task failed: {e}"))
    .and_then(|r| r);
    match &outcome {
        Ok(report) => {
            state.record_sync(SyncSummary {
                added: report.added,
                modified: report.modified,
                deleted: report.deleted,
                unchanged: report.unchanged,
                chunks_written: report.chunks,
                fallback_files: report.fallbacks,
                plugin_failures: report.plugin_failures.len() as u64,
                skipped: report.skipped.len() as u64,
                elapsed_ms: report.elapsed_ms,
                cancelled: report.cancelled,
            });
            state.set_phase(IndexPhase::Ready);
        }
        Err(message) => state.set_phase(IndexPhase::Failed { message: message.clone() }),
    }
    outcome
}

/// How long the background embedding pass waits for the model to finish
/// loading (a cold start reads ~100 MB of weights); past that the pass is
/// skipped and the next sync embeds.
const EMBED_MODEL_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// Longest wait of a `sync_index` request for a model that is still
/// loading before it leaves embedding to the background: a small model
/// loads in a second or two, a cold large one can take a minute.
const REQUEST_MODEL_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

const MODEL_LOADING: &str = "the embedding model is still loading";

/// What an embedding pass did.
#[derive(Debug)]
pub enum EmbedOutcome {
    Embedded(code_intel_embed::EmbedReport),
    /// No model: semantic search stays keyword-only.
    NoModel,
    /// Left to a background pass, for the reason given (the model is still
    /// loading, the server is shutting down).
    Background(&'static str),
    Failed(String),
}

/// Embeds the chunks that have no vector yet, in the background (SPEC §4:
/// search works at every moment and says how complete the vectors are).
/// One pass at a time; cancelled when the client leaves.
fn spawn_embedding(state: Arc<ServerState>) {
    tokio::spawn(embedding_pass(state, None));
}

/// One embedding pass. With a `reporter` (a `sync_index` request following
/// progress) it reports `embedding N/M chunks`, first of a pass already
/// under way (which it waits for), then of its own; a model still loading
/// after [`REQUEST_MODEL_WAIT`] leaves the work to the background. The pass
/// runs to its end even if the request is cancelled (the caller awaits it as
/// a task).
async fn embedding_pass(state: Arc<ServerState>, reporter: Option<Arc<Reporter>>) -> EmbedOutcome {
    let _running = match &reporter {
        None => state.embed_lock().lock().await,
        Some(r) => match state.embed_lock().try_lock() {
            Ok(guard) => guard,
            Err(_) => {
                // Follow the pass under way until it is done.
                let mut watched = state.embed_progress().subscribe();
                if let Some((done, total)) = *watched.borrow_and_update() {
                    r.earlier_embedding(done, total);
                }
                let lock = state.embed_lock().lock();
                tokio::pin!(lock);
                loop {
                    tokio::select! {
                        guard = &mut lock => break guard,
                        Ok(()) = watched.changed() => {
                            if let Some((done, total)) = *watched.borrow_and_update() {
                                r.earlier_embedding(done, total);
                            }
                        }
                    }
                }
            }
        },
    };
    if state.cancelled() {
        return EmbedOutcome::Background("the server is shutting down");
    }
    let vectors = state.vectors();
    let wait = match &reporter {
        Some(r) => {
            if matches!(vectors.encoder(std::time::Duration::ZERO).1, code_intel_embed::ModelState::Loading) {
                r.note("loading model", "loading the embedding model");
            }
            REQUEST_MODEL_WAIT
        }
        None => EMBED_MODEL_WAIT,
    };
    let st = state.clone();
    let outcome = tokio::task::spawn_blocking(move || -> Result<EmbedOutcome, String> {
        let (encoder, model_state) = vectors.encoder(wait);
        let Some(encoder) = encoder else {
            if matches!(model_state, code_intel_embed::ModelState::Loading) {
                return Ok(EmbedOutcome::Background(MODEL_LOADING));
            }
            tracing::info!(state = ?model_state, "no embedding model; semantic search stays keyword-only");
            return Ok(EmbedOutcome::NoModel);
        };
        let mut store = code_intel_store::Store::open(st.database_path()).map_err(|e| e.to_string())?;
        let cancel = st.cancel_flag();
        let on_progress = |p: code_intel_embed::EmbedProgress| {
            st.embed_progress().send_replace(Some((p.done, p.total)));
            if let Some(r) = &reporter {
                r.embedding(p.done, p.total);
            }
        };
        // The English model's vectors stay: it loads alongside the main
        // model (wait for it as for that one, so a start where it is a little
        // slower does not drop its vectors; one that is not installed
        // answers at once).
        let english_key: Vec<_> = vectors
            .english()
            .and_then(|english| english.encoder(wait).0)
            .map(|e| e.info().key.clone())
            .into_iter()
            .collect();
        let report = code_intel_embed::embed_pending_keeping(&mut store, &encoder, &english_key, &on_progress, Some(&cancel));
        st.embed_progress().send_replace(None);
        let report = report.map_err(|e| e.to_string())?;
        if !report.cancelled {
            vectors.sync(&store).map_err(|e| e.to_string())?;
        }
        Ok(EmbedOutcome::Embedded(report))
    })
    .await;
    let outcome = match outcome {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(e)) => EmbedOutcome::Failed(format!("embedding pass failed: {e}")),
        Err(e) => EmbedOutcome::Failed(format!("embedding task failed: {e}")),
    };
    match &outcome {
        EmbedOutcome::Embedded(report) => {
            tracing::info!(chunks = report.embedded_chunks, ms = report.elapsed_ms, "embedding pass done");
            if !report.cancelled && state.vectors().english().is_some() {
                tokio::spawn(english_embedding_pass(state.clone()));
            }
        }
        EmbedOutcome::Failed(e) => tracing::warn!("{e}"),
        // Embed once the model is there.
        EmbedOutcome::Background(why) if *why == MODEL_LOADING => spawn_embedding(state.clone()),
        EmbedOutcome::Background(_) => {}
        EmbedOutcome::NoModel => {}
    }
    outcome
}

/// The English model's embedding pass, in the background after each pass
/// of the main model: until it has a vector for every chunk, requests in
/// English are answered with the main model's vectors
/// (`VectorSearch::for_query`). It keeps the main model's vectors, and the
/// main pass keeps its.
async fn english_embedding_pass(state: Arc<ServerState>) {
    let _running = state.english_embed_lock().lock().await;
    if state.cancelled() {
        return;
    }
    let st = state.clone();
    let outcome = tokio::task::spawn_blocking(move || -> Result<Option<code_intel_embed::EmbedReport>, String> {
        let vectors = st.vectors();
        let Some(english) = vectors.english() else { return Ok(None) };
        let (Some(main), _) = vectors.encoder(std::time::Duration::ZERO) else { return Ok(None) };
        let (encoder, model_state) = english.encoder(EMBED_MODEL_WAIT);
        let Some(encoder) = encoder else {
            tracing::info!(state = ?model_state, "no English model; requests in English use the main model");
            return Ok(None);
        };
        if encoder.info().key == main.info().key {
            return Ok(None);
        }
        let mut store = code_intel_store::Store::open(st.database_path()).map_err(|e| e.to_string())?;
        let keep = [main.info().key.clone()];
        let report = code_intel_embed::embed_pending_keeping(&mut store, &encoder, &keep, &|_| {}, Some(&st.cancel_flag())).map_err(|e| e.to_string())?;
        if !report.cancelled {
            english.sync(&store).map_err(|e| e.to_string())?;
        }
        Ok(Some(report))
    })
    .await;
    match outcome {
        Ok(Ok(Some(report))) => tracing::info!(chunks = report.embedded_chunks, ms = report.elapsed_ms, "English model's embedding pass done"),
        Ok(Ok(None)) => {}
        Ok(Err(e)) => tracing::warn!("the English model's embedding pass failed (requests in English use the main model): {e}"),
        Err(e) => tracing::warn!("the English model's embedding task failed: {e}"),
    }
}

/// Shared by tests: every tool's input schema is portable.
#[cfg(test)]
#[must_use]
pub fn all_input_schemas() -> Vec<(String, serde_json::Value)> {
    CodeIntelServer::tool_router()
        .list_all()
        .into_iter()
        .map(|t| (t.name.to_string(), serde_json::Value::Object((*t.input_schema).clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_input_schema_is_portable() {
        let schemas = all_input_schemas();
        assert!(schemas.len() >= 6);
        for (name, schema) in schemas {
            assert_eq!(schema::portability_problems(&schema), Vec::<String>::new(), "{name}: {schema:#}");
            assert_eq!(schema["type"], "object", "{name}");
        }
    }

    /// Clients treat a tool without hints as destructive: every tool is
    /// read-only or says it is not destructive.
    #[test]
    fn every_tool_declares_its_effects() {
        for tool in CodeIntelServer::tool_router().list_all() {
            let a = tool.annotations.as_ref().unwrap_or_else(|| panic!("{} has no annotations", tool.name));
            assert!(
                a.read_only_hint == Some(true) || a.destructive_hint == Some(false),
                "{}: neither readOnlyHint nor destructiveHint: false",
                tool.name
            );
            assert_eq!(a.open_world_hint, Some(false), "{}", tool.name);
        }
    }

    #[test]
    fn argument_errors_name_the_field() {
        let args = serde_json::json!({"pattern": "x", "max_results": "ten"});
        let err = parse_args::<SearchTextArgs>(args.as_object().unwrap().clone()).unwrap_err();
        assert_eq!(err.argument, "max_results");
        assert!(err.to_string().contains("invalid type"), "{err}");
        let args = serde_json::json!({"patern": "x"});
        let err = parse_args::<SearchTextArgs>(args.as_object().unwrap().clone()).unwrap_err();
        assert!(err.to_string().contains("patern"), "{err}");
        let args = serde_json::json!({});
        let err = parse_args::<SearchTextArgs>(args.as_object().unwrap().clone()).unwrap_err();
        assert!(err.to_string().contains("pattern"), "{err}");
    }
}
