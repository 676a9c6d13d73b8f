//! The session workflow over MCP (SPEC §8): the session tools, the phase/tool
//! matrix enforced on the code tools (a [`ToolHook`]), the optional
//! `session_id` argument of every code tool, and the `code` prompt.
//!
//! The rules live in `code-intel-session`; this module only translates
//! between MCP and [`Workflow`], and provides the host services the workflow
//! needs (the symbol index from the store, the map of agreements, relevance).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use code_intel_session::services::{Agreement, AgreementMap, MapHit, SymbolIndex, SymbolSite};
use code_intel_session::workflow::{
    EvidenceInput, HypothesisInput, SymbolClaim, UnderstandingInput, VerificationEvidence, VerificationInput,
};
use code_intel_session::{Relevance, Scored, Services, SessionError, Workflow, WorkflowConfig, matrix, results};
use code_intel_store::NameMatch;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, JsonObject, PromptMessage, Role};
use rmcp::{ErrorData, prompt, prompt_router, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::code_tools::parse_args;
use super::schema;
use super::state::ServerState;
use super::{CodeIntelServer, ToolHook};

/// The session tools (their own `session_id` is part of their arguments).
pub const SESSION_TOOLS: &[&str] = &[
    "start_session",
    "set_query_frame",
    "query",
    "get_session_status",
    "submit_understanding",
    "validate_symbol_relevance",
    "submit_semantic",
    "submit_verification",
    "check_write_target",
    "add_explored_files",
    "revert_to_exploration",
    "record_outcome",
    "get_session_analysis",
    "get_improvement_insights",
];

/// Definitions looked up per symbol when checking evidence: a name defined
/// more often than this is checked against the first ones only.
const DEFINITION_LOOKUP_LIMIT: usize = 50;

/// Description of the `session_id` argument added to every code tool.
const SESSION_ID_DOC: &str = "Session from start_session. With it, the call is checked against the session's phase \
(e.g. semantic search over code is refused during EXPLORATION) and recorded as evidence for submit_understanding.";

// ---------------------------------------------------------------------------
// Per-server runtime

/// The workflow of one server state, opened on first use.
struct Runtime {
    state: Weak<ServerState>,
    workflow: OnceLock<Result<Arc<Workflow>, String>>,
}

impl Runtime {
    fn workflow(&self) -> Result<Arc<Workflow>, String> {
        self.workflow
            .get_or_init(|| {
                let state = self.state.upgrade().ok_or("the server is shutting down")?;
                let services = Services {
                    relevance: Arc::new(HostRelevance { state: self.state.clone() }),
                    index: Arc::new(HostIndex { state: self.state.clone() }),
                    map: Arc::new(AgreementFiles { root: state.root().path().to_path_buf(), state: self.state.clone() }),
                };
                let backfill = AgreementFiles { root: state.root().path().to_path_buf(), state: self.state.clone() };
                std::thread::spawn(move || backfill.backfill_collection());
                let config = WorkflowConfig { learned_pair_ttl_days: state.config().learned_pair_ttl_days };
                Workflow::open(state.root().path(), config, services)
                    .map(Arc::new)
                    .map_err(|e| format!("the session store could not be opened: {e}"))
            })
            .clone()
    }
}

fn registry() -> &'static Mutex<Vec<(usize, Arc<Runtime>)>> {
    static REGISTRY: OnceLock<Mutex<Vec<(usize, Arc<Runtime>)>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

fn runtime(state: &Arc<ServerState>) -> Arc<Runtime> {
    let key = Arc::as_ptr(state) as usize;
    let mut reg = registry().lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    reg.retain(|(_, r)| r.state.strong_count() > 0);
    if let Some((_, r)) = reg.iter().find(|(k, r)| *k == key && r.state.upgrade().is_some_and(|s| Arc::ptr_eq(&s, state))) {
        return r.clone();
    }
    let r = Arc::new(Runtime { state: Arc::downgrade(state), workflow: OnceLock::new() });
    reg.push((key, r.clone()));
    r
}

/// Registers the session hook on a server state (once per state).
pub fn install(state: &Arc<ServerState>) {
    let key = Arc::as_ptr(state) as usize;
    let fresh = !registry()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .any(|(k, r)| *k == key && r.state.upgrade().is_some_and(|s| Arc::ptr_eq(&s, state)));
    let rt = runtime(state);
    if fresh {
        state.add_hook(Arc::new(SessionHook { runtime: rt }));
    }
}

/// Adds the optional `session_id` argument to every code tool's schema.
pub fn advertise_session_id(router: &mut ToolRouter<CodeIntelServer>) {
    for (name, route) in &mut router.map {
        if SESSION_TOOLS.contains(&name.as_ref()) {
            continue;
        }
        let schema = Arc::make_mut(&mut route.attr.input_schema);
        if let Some(Value::Object(props)) = schema.get_mut("properties") {
            props.insert("session_id".into(), json!({"type": "string", "description": SESSION_ID_DOC}));
        }
    }
}

/// Removes `session_id` from a code tool's arguments before the tool parses
/// them (the hook has already used it).
pub fn strip_session_id(request: &mut CallToolRequestParams) {
    if SESSION_TOOLS.contains(&request.name.as_ref()) {
        return;
    }
    if let Some(args) = request.arguments.as_mut() {
        args.remove("session_id");
    }
}

// ---------------------------------------------------------------------------
// The hook on code tools

struct SessionHook {
    runtime: Arc<Runtime>,
}

fn session_of(arguments: &JsonObject) -> Option<&str> {
    arguments.get("session_id").and_then(Value::as_str)
}

fn without_session(arguments: &JsonObject) -> Value {
    let mut a = arguments.clone();
    a.remove("session_id");
    Value::Object(a)
}

/// The JSON of a tool result: its structured content, else its first text
/// block parsed as JSON, else that text.
fn result_json(result: &CallToolResult) -> Value {
    if let Some(v) = &result.structured_content {
        return v.clone();
    }
    let text = result.content.iter().find_map(|c| c.as_text().map(|t| t.text.clone())).unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

impl ToolHook for SessionHook {
    fn before_call(&self, tool: &str, arguments: &JsonObject) -> Result<(), String> {
        if SESSION_TOOLS.contains(&tool) {
            return Ok(());
        }
        let Some(sid) = session_of(arguments) else {
            if arguments.contains_key("session_id") {
                return Err("session_id must be a string (the id returned by start_session)".into());
            }
            return Ok(());
        };
        let workflow = self.runtime.workflow()?;
        match workflow.gate_tool(sid, tool, &without_session(arguments)) {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(refusal)) => Err(serde_json::to_string_pretty(&json!({
                "error": refusal.error,
                "message": refusal.to_string(),
                "phase": refusal.phase,
                "tool": refusal.tool,
                "reason": refusal.reason,
                "next_allowed_step": refusal.next_allowed_step,
                "allowed_in_phase": refusal.allowed_in_phase,
            }))
            .unwrap_or_else(|_| refusal.to_string())),
            Err(e) => Err(e.to_string()),
        }
    }

    fn after_call(&self, tool: &str, arguments: &JsonObject, result: &CallToolResult) {
        if SESSION_TOOLS.contains(&tool) || result.is_error == Some(true) {
            // Refusals were recorded by the gate; failed calls are not evidence.
            return;
        }
        let Some(sid) = session_of(arguments) else { return };
        if matrix::classify(tool, &Value::Object(arguments.clone())).is_none() {
            return;
        }
        let Ok(workflow) = self.runtime.workflow() else { return };
        if let Err(e) = workflow.record_tool_call(sid, tool, &without_session(arguments), &result_json(result)) {
            tracing::warn!(tool, session = sid, error = %e, "could not record the tool call");
        }
    }
}

// ---------------------------------------------------------------------------
// Host services

/// Definitions from the chunk index.
struct HostIndex {
    state: Weak<ServerState>,
}

impl SymbolIndex for HostIndex {
    fn definitions(&self, symbol: &str) -> Result<Vec<SymbolSite>, String> {
        let state = self.state.upgrade().ok_or("the server is shutting down")?;
        if !state.has_index() {
            return Ok(Vec::new());
        }
        let rows = state
            .with_store(|s| s.definitions(symbol, NameMatch::Exact, &[], DEFINITION_LOOKUP_LIMIT))
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        Ok(rows.into_iter().map(SymbolSite::from).collect())
    }

    fn indexed_files(&self) -> Result<u64, String> {
        let state = self.state.upgrade().ok_or("the server is shutting down")?;
        if !state.has_index() {
            return Ok(0);
        }
        state
            .with_store(code_intel_store::Store::file_count)
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())
    }
}

/// Symbol relevance for the workflow, from the server's embedding model:
/// cosine similarity of `target_feature` with each split symbol name,
/// calibrated against unrelated names ([`code_intel_session::relevance::calibrate`])
/// and never below the lexical rule ([`code_intel_session::relevance::combine`]).
/// Without a ready model it says why, and the workflow applies the lexical
/// rule alone and reports that it did.
struct HostRelevance {
    state: Weak<ServerState>,
}

/// How long a relevance check waits for a model that is still loading
/// before it judges with the lexical rule instead.
const RELEVANCE_MODEL_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

impl Relevance for HostRelevance {
    fn score(&self, nl: &str, candidates: &[String]) -> Result<Scored, String> {
        use code_intel_session::relevance::{CALIBRATION_ANCHORS, LexicalRelevance, calibrate, combine};
        let state = self.state.upgrade().ok_or("the server is shutting down")?;
        let vectors = state.vectors();
        let (encoder, model_state) = vectors.encoder(RELEVANCE_MODEL_WAIT);
        let Some(encoder) = encoder else {
            return Err(format!("no embedding model is ready ({})", model_state.status()));
        };
        let texts: Vec<&str> = candidates.iter().map(String::as_str).chain(CALIBRATION_ANCHORS.iter().copied()).collect();
        let raw = vectors
            .symbol_similarity(nl, &texts, RELEVANCE_MODEL_WAIT)
            .map_err(|e| format!("embedding failed: {e}"))?
            .ok_or("the embedding model became unavailable")?;
        let (raw, anchors) = raw.split_at(candidates.len());
        let lexical = LexicalRelevance.score(nl, candidates)?.scores;
        Ok(Scored {
            method: format!("embedding:{}+lexical", encoder.info().key.name),
            note: None,
            scores: combine(&calibrate(raw, anchors), &lexical),
        })
    }
}

/// The map of agreements: `.code-intel/agreements/*.md` (the record of
/// every successful session), scored with the lexical rule for the session
/// tools' hints, and mirrored into the index's map collection, which
/// `semantic_search` searches by embedding (and short-circuits on).
struct AgreementFiles {
    root: std::path::PathBuf,
    state: Weak<ServerState>,
}

impl AgreementFiles {
    /// Puts `agreement` into the map collection, embedded at once when the
    /// model is ready (else by the next embedding pass).
    fn add_to_collection(&self, agreement: &Agreement) -> Result<(), String> {
        let state = self.state.upgrade().ok_or("the server is shutting down")?;
        let entry = code_intel_store::embeddings::MapEntry {
            key: agreement.id.clone(),
            text: code_intel_session::agreement::map_text(agreement),
            symbols: agreement.symbols.iter().map(|s| s.symbol.clone()).collect(),
            files: agreement.files.clone(),
            metadata: json!({
                "nl_term": agreement.nl_term,
                "query": agreement.query,
                "intent": agreement.intent,
                "session_id": agreement.session_id,
                "path": agreement.path,
            }),
        };
        let mut store = code_intel_store::Store::open(state.database_path())
            .map_err(|e| format!("the index database could not be opened for writing: {e}"))?;
        state.vectors().add_map_entry(&mut store, &entry).map_err(|e| format!("the map collection could not be updated: {e}"))?;
        Ok(())
    }

    /// Takes an agreement out of the map collection.
    fn remove_from_collection(&self, agreement_id: &str) -> Result<(), String> {
        let state = self.state.upgrade().ok_or("the server is shutting down")?;
        let mut store = code_intel_store::Store::open(state.database_path())
            .map_err(|e| format!("the index database could not be opened for writing: {e}"))?;
        store.write(|w| w.delete_map_entry(agreement_id)).map_err(|e| format!("the map collection could not be updated: {e}"))?;
        Ok(())
    }

    /// Makes the map collection hold the agreement files: adds the files it
    /// does not hold yet (written by an older version, copied in, or
    /// recorded while the index was missing) and drops entries whose file is
    /// gone (an agreement a `failure` outcome took back just before a
    /// crash).
    fn backfill_collection(&self) {
        let Some(state) = self.state.upgrade() else { return };
        let Ok(Ok(known)) = state.with_store(|s| s.map_entries().map(|e| e.into_iter().map(|e| e.entry.key).collect::<std::collections::HashSet<_>>()))
        else {
            return;
        };
        let files = self.read_all();
        for a in &files {
            if !known.contains(&a.id)
                && let Err(e) = self.add_to_collection(a)
            {
                tracing::warn!(agreement = %a.path, "agreement not added to the map collection: {e}");
            }
        }
        let dir = code_intel_core::config::state_dir(&self.root).join("agreements");
        for key in known.iter().filter(|k| !dir.join(format!("{k}.md")).exists()) {
            if let Err(e) = self.remove_from_collection(key) {
                tracing::warn!(agreement = %key, "taken-back agreement not removed from the map collection: {e}");
            }
        }
    }

    fn read_all(&self) -> Vec<Agreement> {
        let dir = code_intel_core::config::state_dir(&self.root).join("agreements");
        let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
        let mut out = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some("md") {
                continue;
            }
            let Ok(md) = std::fs::read_to_string(&path) else { continue };
            let rel = format!("{}/agreements/{}", code_intel_core::config::STATE_DIR_NAME, entry.file_name().to_string_lossy());
            match code_intel_session::agreement::parse(&md, &rel) {
                Ok(a) => out.push(a),
                Err(_) => tracing::warn!(path = %path.display(), "unreadable agreement file skipped"),
            }
        }
        out
    }
}

impl AgreementMap for AgreementFiles {
    fn add(&self, agreement: &Agreement, _markdown: &str) -> Result<(), String> {
        // The workflow wrote the file before calling this; it is what
        // `search` reads, so the agreement is searchable at once.
        let path = self.root.join(&agreement.path);
        if !path.is_file() {
            return Err(format!("{} is missing", path.display()));
        }
        self.add_to_collection(agreement)
    }

    fn remove(&self, agreement_id: &str) -> Result<(), String> {
        self.remove_from_collection(agreement_id)
    }

    fn search(&self, text: &str, limit: usize) -> Result<Vec<MapHit>, String> {
        let mut hits = Vec::new();
        for a in self.read_all() {
            let score = code_intel_session::agreement::map_text(&a)
                .lines()
                .map(|line| code_intel_session::LexicalRelevance::pair(text, line))
                .fold(0.0_f32, f32::max);
            hits.push(MapHit {
                agreement_id: a.id,
                score,
                nl_term: a.nl_term,
                symbols: a.symbols.into_iter().map(|s| s.symbol).collect(),
                files: a.files,
            });
        }
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        hits.truncate(limit);
        Ok(hits)
    }
}

// ---------------------------------------------------------------------------
// Arguments

/// Request intent.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum IntentArg {
    Implement,
    Modify,
    Investigate,
    Question,
}

impl From<IntentArg> for code_intel_session::Intent {
    fn from(i: IntentArg) -> Self {
        match i {
            IntentArg::Implement => Self::Implement,
            IntentArg::Modify => Self::Modify,
            IntentArg::Investigate => Self::Investigate,
            IntentArg::Question => Self::Question,
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartSessionArgs {
    /// IMPLEMENT (new behaviour), MODIFY (change or fix), INVESTIGATE (understand), QUESTION (answer only).
    pub intent: IntentArg,
    /// The user's request, verbatim (slot quotes are checked against it).
    pub query: String,
}

/// One slot: normalised value and a verbatim quote from the request.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlotArg {
    /// The slot's value, normalised.
    pub value: String,
    /// The words of the request that state it, copied verbatim.
    pub quote: String,
}

/// The four slots; omit (or null) a slot the request does not state.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlotsArg {
    /// Feature, class or module concerned.
    pub target_feature: Option<SlotArg>,
    /// When the problem happens.
    pub trigger_condition: Option<SlotArg>,
    /// What goes wrong.
    pub observed_issue: Option<SlotArg>,
    /// What should change.
    pub desired_action: Option<SlotArg>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetQueryFrameArgs {
    pub session_id: String,
    pub slots: SlotsArg,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryArgs {
    /// Session whose QueryFrame drives the plan (optional).
    pub session_id: Option<String>,
    /// What you are looking for.
    pub text: String,
    /// Intent when there is no session (default INVESTIGATE).
    pub intent: Option<IntentArg>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionArgs {
    pub session_id: String,
}

/// Evidence for a slot: the tool call of this session that established it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvidenceArg {
    /// The exact tool used (find_definitions, find_references, search_text, ...).
    pub tool: String,
    /// The arguments of that call (a subset is enough to identify it).
    pub params: Option<JsonObject>,
    /// What it showed, in a sentence.
    pub result: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlotEvidenceArg {
    pub target_feature: Option<EvidenceArg>,
    pub trigger_condition: Option<EvidenceArg>,
    pub observed_issue: Option<EvidenceArg>,
    pub desired_action: Option<EvidenceArg>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolvedFrameArg {
    pub target_feature: Option<String>,
    pub trigger_condition: Option<String>,
    pub observed_issue: Option<String>,
    pub desired_action: Option<String>,
}

/// A symbol you could not confirm with exact tools (verified later).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HypothesisSymbolArg {
    pub name: String,
    pub file: Option<String>,
    pub line: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitUnderstandingArgs {
    pub session_id: String,
    /// Symbols found with exact tools (each must be defined in the index and returned by a tool in this session).
    pub symbols_identified: Vec<String>,
    /// Where the behaviour starts (each one of symbols_identified).
    pub entry_points: Option<Vec<String>>,
    /// Files read or returned by tools in this session.
    pub files_analyzed: Option<Vec<String>>,
    /// Existing patterns the change should follow.
    pub existing_patterns: Option<Vec<String>>,
    /// Slot values established by exploration.
    pub resolved_frame: Option<ResolvedFrameArg>,
    /// For each slot, the tool call that established it.
    pub slot_evidence: Option<SlotEvidenceArg>,
    /// Symbols you believe in but could not confirm: recorded as HYPOTHESIS.
    pub hypothesis_symbols: Option<Vec<HypothesisSymbolArg>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidateRelevanceArgs {
    pub session_id: String,
    /// The natural-language feature (default: the session's target_feature).
    pub target_feature: Option<String>,
    /// Candidate symbols.
    pub symbols: Vec<String>,
    /// Symbols you confirm as implementing the feature (needs code_evidence).
    pub relevant_symbols: Option<Vec<String>>,
    /// The code that proves the mapping (method, comment, naming convention).
    pub code_evidence: Option<String>,
}

/// Why semantic search is needed; must fit what is missing.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SemanticReasonArg {
    NoDefinitionFound,
    ArchitectureUnknown,
    NoReferenceFound,
    NoSimilarImplementation,
    ContextFragmented,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HypothesisArg {
    pub symbol: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub description: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitSemanticArgs {
    pub session_id: String,
    /// Findings from semantic_search / search_text, recorded as HYPOTHESIS.
    pub hypotheses: Vec<HypothesisArg>,
    pub semantic_reason: SemanticReasonArg,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerificationEvidenceArg {
    /// The exact tool that confirmed it (run in this session after submit_semantic).
    pub tool: String,
    /// Where the symbol is defined.
    pub file: Option<String>,
    pub line: Option<u32>,
    pub params: Option<JsonObject>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerificationArg {
    /// Hypothesis id (hyp-...) or its symbol.
    pub hypothesis: String,
    pub confirmed: bool,
    pub evidence: Option<VerificationEvidenceArg>,
    pub note: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitVerificationArgs {
    pub session_id: String,
    pub results: Vec<VerificationArg>,
    pub slot_evidence: Option<SlotEvidenceArg>,
    pub resolved_frame: Option<ResolvedFrameArg>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckWriteArgs {
    pub session_id: String,
    /// File to write, relative to the repository root.
    pub path: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddExploredArgs {
    pub session_id: String,
    /// Files (or directories, for new files) read by a tool in this session.
    pub paths: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RevertArgs {
    pub session_id: String,
    /// Keep explored files and verified facts (default true).
    pub keep_results: Option<bool>,
}

#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeArg {
    Success,
    Failure,
    Partial,
}

#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PhaseArg {
    Exploration,
    Semantic,
    Verification,
    Ready,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordOutcomeArgs {
    pub session_id: String,
    pub outcome: OutcomeArg,
    /// What worked or what went wrong.
    pub analysis: Option<String>,
    /// Phase the outcome refers to (default: the session's phase).
    pub phase_at_outcome: Option<PhaseArg>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InsightsArgs {
    /// Latest outcomes considered (default 100).
    pub limit: Option<u32>,
}

/// Outcomes considered by `get_improvement_insights` by default (seed 002).
const DEFAULT_INSIGHTS_LIMIT: u32 = 100;

fn slots_json(s: SlotsArg) -> Value {
    let one = |a: Option<SlotArg>| a.map_or(Value::Null, |a| json!({"value": a.value, "quote": a.quote}));
    json!({
        "target_feature": one(s.target_feature),
        "trigger_condition": one(s.trigger_condition),
        "observed_issue": one(s.observed_issue),
        "desired_action": one(s.desired_action),
    })
}

fn evidence_map(e: Option<SlotEvidenceArg>) -> BTreeMap<String, EvidenceInput> {
    let e = e.unwrap_or_default();
    let mut out = BTreeMap::new();
    for (k, v) in [
        ("target_feature", e.target_feature),
        ("trigger_condition", e.trigger_condition),
        ("observed_issue", e.observed_issue),
        ("desired_action", e.desired_action),
    ] {
        if let Some(v) = v {
            out.insert(k.to_string(), EvidenceInput { tool: v.tool, params: v.params.map(Value::Object), result: v.result });
        }
    }
    out
}

fn resolved_map(r: Option<ResolvedFrameArg>) -> BTreeMap<String, Option<String>> {
    let r = r.unwrap_or_default();
    [
        ("target_feature", r.target_feature),
        ("trigger_condition", r.trigger_condition),
        ("observed_issue", r.observed_issue),
        ("desired_action", r.desired_action),
    ]
    .into_iter()
    .filter(|(_, v)| v.is_some())
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

fn arg_error(e: &super::budget::ArgError) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(e.to_string())])
}

macro_rules! args {
    ($e:expr) => {
        match parse_args($e) {
            Ok(v) => v,
            Err(e) => return Ok(arg_error(&e)),
        }
    };
}

/// Runs a workflow call off the async runtime and turns its answer into a
/// tool result (structured content + pretty JSON text).
async fn run(
    state: &Arc<ServerState>,
    f: impl FnOnce(&Workflow) -> Result<Value, SessionError> + Send + 'static,
) -> Result<CallToolResult, ErrorData> {
    let rt = runtime(state);
    let outcome = tokio::task::spawn_blocking(move || match rt.workflow() {
        Ok(w) => f(&w).map_err(|e| (e.code(), e.to_string())),
        Err(e) => Err(("internal", e)),
    })
    .await
    .map_err(|e| ErrorData::internal_error(format!("session task failed: {e}"), None))?;
    Ok(match outcome {
        Ok(value) => {
            let text = serde_json::to_string_pretty(&value).unwrap_or_default();
            let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
            r.structured_content = Some(value);
            r
        }
        Err((code, message)) => {
            let value = json!({"error": code, "message": message});
            let mut r = CallToolResult::error(vec![ContentBlock::text(format!("{code}: {message}"))]);
            r.structured_content = Some(value);
            r
        }
    })
}

// ---------------------------------------------------------------------------
// Tools

#[tool_router(router = session_tools, vis = "pub")]
impl CodeIntelServer {
    #[tool(
        name = "start_session",
        description = "Start a gated work session for one user request. Returns session_id and the slot-extraction \
prompt; hints from earlier successful sessions (the map) when one matches. Then call set_query_frame.",
        input_schema = schema::input::<StartSessionArgs>(),
        output_schema = schema::output::<results::StartSessionResult>(),
        annotations(title = "Start session", read_only_hint = false, destructive_hint = false, open_world_hint = false)
    )]
    pub async fn start_session(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        let a: StartSessionArgs = args!(arguments);
        run(self.state(), move |w| w.start_session(a.intent.into(), &a.query)).await
    }

    #[tool(
        name = "set_query_frame",
        description = "Give the request's four slots (target_feature, trigger_condition, observed_issue, desired_action), \
each {value, quote} with the quote copied verbatim from the request. The server rejects hallucinated quotes and \
returns missing slots, the risk level, investigation guidance and a plan.",
        input_schema = schema::input::<SetQueryFrameArgs>(),
        output_schema = schema::output::<results::SetQueryFrameResult>(),
        annotations(title = "Set query frame", read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    pub async fn set_query_frame(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        let a: SetQueryFrameArgs = args!(arguments);
        let slots = slots_json(a.slots);
        run(self.state(), move |w| w.set_query_frame(&a.session_id, &slots)).await
    }

    #[tool(
        name = "query",
        description = "Plan: which tools to run next, from the session's QueryFrame (missing slots -> tools). \
Logged as a decision for later analysis.",
        input_schema = schema::input::<QueryArgs>(),
        output_schema = schema::output::<results::QueryPlan>(),
        annotations(title = "Plan a query", read_only_hint = false, destructive_hint = false, open_world_hint = false)
    )]
    pub async fn query(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        let a: QueryArgs = args!(arguments);
        run(self.state(), move |w| w.query(a.session_id.as_deref(), &a.text, a.intent.map(Into::into))).await
    }

    #[tool(
        name = "get_session_status",
        description = "A session's phase, risk, frame, requirements, evidence, explored files and the next allowed step.",
        input_schema = schema::input::<SessionArgs>(),
        output_schema = schema::output::<results::SessionStatus>(),
        annotations(title = "Session status", read_only_hint = true, open_world_hint = false)
    )]
    pub async fn get_session_status(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        let a: SessionArgs = args!(arguments);
        run(self.state(), move |w| w.get_session_status(&a.session_id)).await
    }

    #[tool(
        name = "submit_understanding",
        description = "End EXPLORATION: submit symbols, entry points, files, patterns and slot evidence. The server checks \
them against the tool calls of this session and the index, judges NL->symbol relevance, and moves the session to \
READY (all requirements met) or SEMANTIC (missing_requirements listed).",
        input_schema = schema::input::<SubmitUnderstandingArgs>(),
        output_schema = schema::output::<results::SubmitUnderstandingResult>(),
        annotations(title = "Submit understanding", read_only_hint = false, destructive_hint = false, open_world_hint = false)
    )]
    pub async fn submit_understanding(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        let a: SubmitUnderstandingArgs = args!(arguments);
        let mut symbols: Vec<SymbolClaim> = a.symbols_identified.into_iter().map(SymbolClaim::Name).collect();
        symbols.extend(a.hypothesis_symbols.unwrap_or_default().into_iter().map(|h| SymbolClaim::Detailed {
            name: h.name,
            source: Some("HYPOTHESIS".into()),
            file: h.file,
            line: h.line,
        }));
        let input = UnderstandingInput {
            symbols_identified: symbols,
            entry_points: a.entry_points.unwrap_or_default(),
            files_analyzed: a.files_analyzed.unwrap_or_default(),
            existing_patterns: a.existing_patterns.unwrap_or_default(),
            resolved_frame: resolved_map(a.resolved_frame),
            slot_evidence: evidence_map(a.slot_evidence),
        };
        run(self.state(), move |w| w.submit_understanding(&a.session_id, &input)).await
    }

    #[tool(
        name = "validate_symbol_relevance",
        description = "Three-tier relevance of symbols to a natural-language feature (>0.6 FACT, 0.3-0.6 accepted with \
risk HIGH, <0.3 rejected with re-investigation guidance), with cached pairs and map hits. Confirm mappings with \
relevant_symbols + code_evidence.",
        input_schema = schema::input::<ValidateRelevanceArgs>(),
        output_schema = schema::output::<results::RelevanceResult>(),
        annotations(title = "Validate symbol relevance", read_only_hint = false, destructive_hint = false, open_world_hint = false)
    )]
    pub async fn validate_symbol_relevance(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        let a: ValidateRelevanceArgs = args!(arguments);
        run(self.state(), move |w| {
            w.validate_symbol_relevance(
                &a.session_id,
                a.target_feature.as_deref(),
                &a.symbols,
                &a.relevant_symbols.unwrap_or_default(),
                a.code_evidence.as_deref(),
            )
        })
        .await
    }

    #[tool(
        name = "submit_semantic",
        description = "End SEMANTIC: submit hypotheses found with semantic_search and the reason semantic search was \
needed (must fit what is missing). Moves to VERIFICATION.",
        input_schema = schema::input::<SubmitSemanticArgs>(),
        output_schema = schema::output::<results::SubmitSemanticResult>(),
        annotations(title = "Submit semantic findings", read_only_hint = false, destructive_hint = false, open_world_hint = false)
    )]
    pub async fn submit_semantic(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        let a: SubmitSemanticArgs = args!(arguments);
        let reason = match a.semantic_reason {
            SemanticReasonArg::NoDefinitionFound => "no_definition_found",
            SemanticReasonArg::ArchitectureUnknown => "architecture_unknown",
            SemanticReasonArg::NoReferenceFound => "no_reference_found",
            SemanticReasonArg::NoSimilarImplementation => "no_similar_implementation",
            SemanticReasonArg::ContextFragmented => "context_fragmented",
        };
        let hyps: Vec<HypothesisInput> = a
            .hypotheses
            .into_iter()
            .map(|h| HypothesisInput { symbol: h.symbol, file: h.file, line: h.line, description: h.description })
            .collect();
        run(self.state(), move |w| w.submit_semantic(&a.session_id, &hyps, reason)).await
    }

    #[tool(
        name = "submit_verification",
        description = "End VERIFICATION: for each hypothesis, confirmed (with the exact tool that showed it, file, line) or \
rejected. The server checks the symbol really is defined there; READY only when no HYPOTHESIS remains and \
requirements are met.",
        input_schema = schema::input::<SubmitVerificationArgs>(),
        output_schema = schema::output::<results::SubmitVerificationResult>(),
        annotations(title = "Submit verification", read_only_hint = false, destructive_hint = false, open_world_hint = false)
    )]
    pub async fn submit_verification(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        let a: SubmitVerificationArgs = args!(arguments);
        let results: Vec<VerificationInput> = a
            .results
            .into_iter()
            .map(|r| VerificationInput {
                hypothesis: r.hypothesis,
                confirmed: r.confirmed,
                evidence: r.evidence.map(|e| VerificationEvidence { tool: e.tool, file: e.file, line: e.line, params: e.params.map(Value::Object) }),
                note: r.note,
            })
            .collect();
        let evidence = evidence_map(a.slot_evidence);
        let resolved = resolved_map(a.resolved_frame);
        run(self.state(), move |w| w.submit_verification(&a.session_id, &results, &evidence, &resolved)).await
    }

    #[tool(
        name = "check_write_target",
        description = "Before editing a file: allowed only in READY, for files explored in this session (or new files in \
an explored directory). A refusal lists recovery options (add_explored_files, revert_to_exploration).",
        input_schema = schema::input::<CheckWriteArgs>(),
        output_schema = schema::output::<results::WriteDecision>(),
        annotations(title = "Check write target", read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    pub async fn check_write_target(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        let a: CheckWriteArgs = args!(arguments);
        run(self.state(), move |w| w.check_write_target(&a.session_id, &a.path)).await
    }

    #[tool(
        name = "add_explored_files",
        description = "READY only: add files (read by a tool in this session) or directories (for new files) to the \
session's write set.",
        input_schema = schema::input::<AddExploredArgs>(),
        output_schema = schema::output::<results::AddExploredResult>(),
        annotations(title = "Add explored files", read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    pub async fn add_explored_files(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        let a: AddExploredArgs = args!(arguments);
        run(self.state(), move |w| w.add_explored_files(&a.session_id, &a.paths)).await
    }

    #[tool(
        name = "revert_to_exploration",
        description = "Back to EXPLORATION, keeping results (default) or discarding them.",
        input_schema = schema::input::<RevertArgs>(),
        output_schema = schema::output::<results::RevertResult>(),
        annotations(title = "Revert to exploration", read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    pub async fn revert_to_exploration(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        let a: RevertArgs = args!(arguments);
        run(self.state(), move |w| w.revert_to_exploration(&a.session_id, a.keep_results.unwrap_or(true))).await
    }

    #[tool(
        name = "record_outcome",
        description = "Record how the work ended (success, failure, partial) and close the session. Success writes an \
agreement (.code-intel/agreements/<id>.md), adds it to the map and learns the NL->symbol pairs.",
        input_schema = schema::input::<RecordOutcomeArgs>(),
        output_schema = schema::output::<results::RecordOutcomeResult>(),
        annotations(title = "Record outcome", read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    pub async fn record_outcome(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        let a: RecordOutcomeArgs = args!(arguments);
        let outcome = match a.outcome {
            OutcomeArg::Success => code_intel_session::Outcome::Success,
            OutcomeArg::Failure => code_intel_session::Outcome::Failure,
            OutcomeArg::Partial => code_intel_session::Outcome::Partial,
        };
        let phase = a.phase_at_outcome.map(|p| match p {
            PhaseArg::Exploration => code_intel_session::Phase::Exploration,
            PhaseArg::Semantic => code_intel_session::Phase::Semantic,
            PhaseArg::Verification => code_intel_session::Phase::Verification,
            PhaseArg::Ready => code_intel_session::Phase::Ready,
        });
        run(self.state(), move |w| w.record_outcome(&a.session_id, outcome, a.analysis.as_deref().unwrap_or(""), phase)).await
    }

    #[tool(
        name = "get_session_analysis",
        description = "A session's decision log, outcomes and failure point.",
        input_schema = schema::input::<SessionArgs>(),
        output_schema = schema::output::<results::SessionAnalysis>(),
        annotations(title = "Session analysis", read_only_hint = true, open_world_hint = false)
    )]
    pub async fn get_session_analysis(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        let a: SessionArgs = args!(arguments);
        run(self.state(), move |w| w.get_session_analysis(&a.session_id)).await
    }

    #[tool(
        name = "get_improvement_insights",
        description = "Failure correlations over recent outcomes: by tool, risk level, phase and semantic-search use.",
        input_schema = schema::input::<InsightsArgs>(),
        output_schema = schema::output::<results::ImprovementInsights>(),
        annotations(title = "Improvement insights", read_only_hint = true, open_world_hint = false)
    )]
    pub async fn get_improvement_insights(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        let a: InsightsArgs = args!(arguments);
        run(self.state(), move |w| w.get_improvement_insights(a.limit.unwrap_or(DEFAULT_INSIGHTS_LIMIT))).await
    }
}

// ---------------------------------------------------------------------------
// The `code` prompt

/// Arguments of the `code` prompt.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CodePromptArgs {
    /// The user's request, verbatim.
    pub request: Option<String>,
}

/// The workflow, as the agent should follow it (also `.claude/commands/code.md`).
pub const WORKFLOW_PROMPT: &str = "\
Work on this request through the code-intel session workflow. The server judges; you gather.

1. Pick the intent: IMPLEMENT (new behaviour), MODIFY (change/fix), INVESTIGATE (understand), QUESTION (answer only).
   Call start_session(intent, query) with the request verbatim.
2. Extract the four slots (target_feature, trigger_condition, observed_issue, desired_action) as {value, quote};
   quote the request word for word, null for anything not stated. Call set_query_frame.
3. EXPLORATION: follow investigation_guidance and the plan. Pass session_id to every code tool. Use exact tools
   (find_definitions, find_references, search_text, analyze_structure, get_function_at_line); semantic search over
   code is refused here (collection=\"map\" is allowed). find_definitions and find_references are required for
   IMPLEMENT/MODIFY.
4. submit_understanding with symbols, entry points, files, patterns, resolved_frame and slot_evidence (the tool call
   that established each slot). Everything you claim must come from a tool result of this session.
5. If the session moves to SEMANTIC: semantic_search for what is missing, then submit_semantic(hypotheses,
   semantic_reason). In VERIFICATION confirm each hypothesis with an exact tool and submit_verification.
6. READY: call check_write_target(session_id, path) before every edit. If refused, use the recovery options
   (read the file, add_explored_files) or revert_to_exploration.
7. When done, record_outcome(session_id, success|failure|partial, analysis).";

#[prompt_router(router = "session_prompts", vis = "pub")]
impl CodeIntelServer {
    #[prompt(
        name = "code",
        description = "Work on a coding request through the server-enforced workflow (explore before you edit)."
    )]
    pub async fn code_prompt(&self, params: Parameters<CodePromptArgs>) -> Vec<PromptMessage> {
        let request = params.0.request.unwrap_or_default();
        let text = if request.trim().is_empty() {
            format!("{WORKFLOW_PROMPT}\n\nAsk the user for the request if it is not clear.")
        } else {
            format!("{WORKFLOW_PROMPT}\n\nRequest: {request}")
        };
        vec![PromptMessage::new_text(Role::User, text)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every session tool publishes the schema of its typed result, in the
    /// subset every client accepts (tests/e2e/test_session_schemas.py checks
    /// real results against them).
    #[test]
    fn every_session_tool_has_a_portable_output_schema() {
        let tools = CodeIntelServer::session_tools().list_all();
        assert_eq!(tools.len(), SESSION_TOOLS.len());
        for tool in tools {
            let schema = tool.output_schema.as_ref().unwrap_or_else(|| panic!("{} has no output schema", tool.name));
            let schema = Value::Object((**schema).clone());
            assert_eq!(schema["type"], "object", "{}", tool.name);
            assert_eq!(schema::portability_problems(&schema), Vec::<String>::new(), "{}: {schema:#}", tool.name);
        }
    }
}
