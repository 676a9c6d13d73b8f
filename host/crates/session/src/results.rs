//! What the session tools return, typed. A workflow step builds its answer
//! as one of these and serializes it, and the MCP server publishes the
//! generated JSON Schema of each as the tool's output schema, so the schema
//! and the answer cannot drift apart.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::frame::InvestigationGuidance;
use crate::model::{
    FrameSlot, Hypothesis, Intent, MapHint, Outcome, Phase, PhaseChange, QueryFrame, RiskLevel, SemanticReason, Slot, Tier,
    Understanding,
};
use crate::requirements::{Counts, Missing, Requirements};
use crate::router::ExecutionPlan;
use crate::services::{MapHit, SymbolSite};

/// `start_session`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct StartSessionResult {
    pub session_id: String,
    pub intent: Intent,
    /// EXPLORATION, or READY at once for QUESTION.
    pub phase: Phase,
    pub risk_level: RiskLevel,
    pub risk_note: String,
    /// How to extract the request's four slots for set_query_frame.
    pub extraction_prompt: String,
    /// Earlier successful sessions that match the request.
    pub map_hints: Vec<MapHint>,
    pub map_hint_threshold: f32,
    pub learned_pairs_cleaned: LearnedPairsCleaned,
    pub warnings: Vec<String>,
    pub next_step: String,
}

/// Learned pairs dropped at session start.
#[derive(Clone, Copy, Debug, Serialize, JsonSchema)]
pub struct LearnedPairsCleaned {
    /// Past their time to live.
    pub expired: usize,
    /// Whose symbol is no longer defined.
    pub symbol_gone: usize,
}

/// `check_write_target`: whether the session may write `path`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct WriteDecision {
    pub allowed: bool,
    pub session_id: String,
    pub path: String,
    pub phase: Phase,
    pub reason: String,
    /// When refused: what to do next.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_step: Option<String>,
    /// When refused: calls the session accepts now that lead to the write.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery_options: Option<Vec<RecoveryOption>>,
}

/// A call that recovers from a refused write.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RecoveryOption {
    /// The session tool to call.
    pub tool: String,
    /// Its arguments (placeholders in angle brackets).
    pub args: Map<String, Value>,
    /// What it does.
    pub effect: String,
}

/// `add_explored_files`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct AddExploredResult {
    pub session_id: String,
    pub phase: Phase,
    pub added: Vec<AddedPath>,
    pub refused: Vec<RefusedPath>,
    /// The session's write set after the call.
    pub explored_files: BTreeSet<String>,
}

/// A path added to the write set.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct AddedPath {
    pub path: String,
    /// `file`, `directory` (new files may be created in it) or `new file`.
    pub kind: String,
}

/// A path not added, and why.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RefusedPath {
    pub path: String,
    pub why: String,
}

/// `revert_to_exploration`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RevertResult {
    pub session_id: String,
    pub from_phase: Phase,
    pub phase: Phase,
    /// Whether results were kept (`keep_results`).
    pub kept: bool,
    pub explored_files: BTreeSet<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub understanding: Option<Understanding>,
    pub note: String,
    pub next_step: String,
}

/// `get_session_status`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SessionStatus {
    pub session_id: String,
    pub intent: Intent,
    pub query: String,
    pub phase: Phase,
    pub risk_level: RiskLevel,
    pub risk_reasons: Vec<String>,
    pub closed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query_frame: Option<QueryFrame>,
    /// The evidence READY needs for this intent and risk.
    pub requirements: Requirements,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub understanding: Option<Understanding>,
    pub missing_requirements: Vec<Missing>,
    pub hypotheses: Vec<Hypothesis>,
    pub explored_files: BTreeSet<String>,
    pub explored_dirs: BTreeSet<String>,
    /// Tools used (not refused) since the last discarding revert.
    pub tools_used: BTreeSet<String>,
    pub tool_calls: usize,
    pub refused_calls: usize,
    pub allowed_tools: Vec<String>,
    pub map_hints: Vec<MapHint>,
    pub history: Vec<PhaseChange>,
    pub created_at: String,
    pub updated_at: String,
    pub next_step: String,
}

/// The JSON of a result (what the workflow's methods return).
///
/// # Panics
/// Never: the result types serialize to JSON objects.
#[must_use]
pub fn to_json<T: Serialize>(result: &T) -> Value {
    serde_json::to_value(result).expect("session results serialize")
}

/// `get_improvement_insights`: failure correlations over recent outcomes
/// (each session counted once, by its latest outcome).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ImprovementInsights {
    pub outcomes_considered: usize,
    pub total_sessions_with_outcomes: usize,
    pub sessions_with_decisions: usize,
    /// Per tool used, worst failure rate first.
    pub tool_failure_correlation: Vec<ToolFailures>,
    /// Per risk level (LOW, MEDIUM, HIGH).
    pub risk_level_correlation: BTreeMap<String, FailureRate>,
    /// `used` and `not_used`.
    pub semantic_search_correlation: BTreeMap<String, FailureRate>,
    /// Failed sessions per phase at outcome.
    pub common_failure_points: BTreeMap<String, u32>,
    /// Refused calls per tool in failed sessions.
    pub refusals_in_failed_sessions: BTreeMap<String, u32>,
}

/// How often sessions of one kind failed.
#[derive(Clone, Copy, Debug, Serialize, JsonSchema)]
pub struct FailureRate {
    pub sessions: u32,
    pub failures: u32,
    pub failure_rate: f64,
}

impl FailureRate {
    /// From (sessions, failures).
    #[must_use]
    pub fn of((sessions, failures): (u32, u32)) -> Self {
        let failure_rate = if sessions == 0 { 0.0 } else { f64::from(failures) / f64::from(sessions) };
        Self { sessions, failures, failure_rate }
    }
}

/// How often sessions that used one tool failed.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ToolFailures {
    pub tool: String,
    #[serde(flatten)]
    pub rate: FailureRate,
}

/// `submit_semantic`: accepted (the session moves to VERIFICATION) or
/// refused with the `error` and what to fix; the session stays in SEMANTIC.
#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
pub struct SubmitSemanticResult {
    pub accepted: bool,
    /// When refused: `semantic_reason_mismatch` or `inconsistent_evidence`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When refused for inconsistent evidence: each problem.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<String>>,
    /// When the reason fits nothing: what is missing and the reasons that fit it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_requirements: Option<Vec<ReasonsForMissing>>,
    /// When refused: the phase the session stays in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// When accepted: VERIFICATION.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_phase: Option<Phase>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub semantic_reason: Option<SemanticReason>,
    /// When accepted: the missing requirements the reason addresses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addresses: Option<Vec<String>>,
    /// When accepted: the hypotheses recorded, with their ids.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hypotheses: Option<Vec<Hypothesis>>,
    pub next_step: String,
}

/// A missing requirement and the semantic reasons that fit it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ReasonsForMissing {
    pub missing: String,
    pub allowed_reasons: Vec<SemanticReason>,
}

/// `query`: which tools to run next.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct QueryPlan {
    /// The session whose frame drove the plan (absent without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    pub text: String,
    pub plan: ExecutionPlan,
    pub investigation_guidance: InvestigationGuidance,
    /// With a session: the code tools its phase allows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<Vec<String>>,
    /// The decision logged for later analysis.
    pub decision_id: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `get_session_analysis`: a session's decision log, outcomes and where it
/// failed.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SessionAnalysis {
    pub session_id: String,
    pub intent: Intent,
    pub query: String,
    pub phase: Phase,
    /// The last plan logged (`query`, `set_query_frame`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<DecisionRecord>,
    /// Plans logged.
    pub decisions: usize,
    pub outcomes: Vec<OutcomeRecord>,
    pub agreements: Vec<AgreementRef>,
    pub analysis: AnalysisSummary,
}

/// A logged plan.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct DecisionRecord {
    pub id: i64,
    pub query: String,
    pub intent: String,
    pub missing_slots: Vec<String>,
    pub risk_level: String,
    pub tools_planned: Vec<String>,
    pub timestamp: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// A recorded outcome.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct OutcomeRecord {
    pub id: i64,
    /// success, failure or partial.
    pub outcome: String,
    pub phase_at_outcome: String,
    pub risk_level: String,
    pub semantic_used: bool,
    pub analysis: String,
    pub tools_used: Vec<String>,
    pub created_at: String,
}

/// An agreement a session wrote.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct AgreementRef {
    pub id: String,
    /// Repository-relative path of its file.
    pub path: String,
    pub nl_term: String,
}

/// What the log says about the session.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct AnalysisSummary {
    pub had_decision: bool,
    pub had_outcome: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_outcome: Option<String>,
    pub tools_planned: Vec<String>,
    pub tools_used: BTreeSet<String>,
    pub planned_not_used: Vec<String>,
    pub refused_calls: usize,
    pub phase_history: Vec<PhaseChange>,
    /// When the last outcome was not a success.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_point: Option<FailurePoint>,
}

/// Where a session that did not succeed stood.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FailurePoint {
    pub phase: String,
    pub risk_level: String,
    /// The last tool that ran (not refused).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_tool: Option<String>,
    /// The last refused call: tool, phase, why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_refusal: Option<Map<String, Value>>,
    /// What READY still needed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Vec<Map<String, Value>>>")]
    pub missing_requirements: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected_hypotheses: Option<Vec<String>>,
}

/// `set_query_frame`: the slots accepted and rejected, and what follows
/// from them. `success` is false when a slot was rejected; rejected slots
/// count as missing.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SetQueryFrameResult {
    /// Whether every given slot was accepted.
    pub success: bool,
    pub session_id: String,
    pub phase: Phase,
    pub accepted_slots: BTreeMap<Slot, FrameSlot>,
    pub missing_slots: Vec<Slot>,
    pub risk_level: RiskLevel,
    pub risk_reasons: Vec<String>,
    pub investigation_guidance: InvestigationGuidance,
    pub plan: ExecutionPlan,
    /// The decision logged for later analysis.
    pub decision_id: i64,
    /// The evidence READY needs for this intent and risk.
    pub requirements: Requirements,
    /// Slots accepted although value and quote share no words.
    pub notes: Vec<String>,
    /// When a slot was rejected: `validation_failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When a slot was rejected: each rejected slot and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation_errors: Option<Vec<RejectedSlot>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub next_step: String,
}

/// A slot `set_query_frame` refused.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RejectedSlot {
    pub slot: Slot,
    pub error: String,
    pub quote: String,
}

/// `submit_understanding`: accepted (the session moves to READY or
/// SEMANTIC) or refused with the `error` and what to fix; the session stays
/// in EXPLORATION.
#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
pub struct SubmitUnderstandingResult {
    pub accepted: bool,
    /// A retry of the submission that was accepted last: its result, read
    /// back; nothing was checked or written again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub already_submitted: Option<bool>,
    /// When refused: `inconsistent_evidence` or `required_tools_not_used`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When refused for inconsistent evidence: each problem.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<String>>,
    /// When refused for tools not used: the tools the intent requires.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_tools: Option<Vec<String>>,
    /// When refused: the phase the session stays in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// When accepted: READY (every requirement met) or SEMANTIC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_phase: Option<Phase>,
    /// When accepted: `high` (READY) or `low`, computed by the server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evaluated_confidence: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub risk_level: Option<RiskLevel>,
    /// When accepted: whether a grey-zone symbol raised the risk to HIGH.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub risk_raised: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requirements: Option<Requirements>,
    /// When accepted: the evidence counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub have: Option<Counts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_requirements: Option<Vec<Missing>>,
    /// When accepted: each symbol's relevance to the target feature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbol_relevance: Option<Vec<SymbolScore>>,
    /// How relevance was scored (absent without a target feature).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relevance_method: Option<String>,
    /// Symbols below the rejection threshold, which count for nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected_symbols: Option<Vec<RejectedSymbol>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
    /// When accepted: the session's write set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explored_files: Option<BTreeSet<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub next_step: String,
}

/// A symbol's relevance to the target feature.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SymbolScore {
    pub symbol: String,
    pub score: f32,
    pub tier: Tier,
    pub method: String,
}

/// A symbol rejected as unrelated to the target feature.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RejectedSymbol {
    pub symbol: String,
    pub score: f32,
    pub reinvestigation_guidance: ReinvestigationGuidance,
}

/// What to do after a symbol was rejected as unrelated.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ReinvestigationGuidance {
    pub reason: String,
    pub next_actions: Vec<String>,
    pub fallback: String,
}

/// `validate_symbol_relevance`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RelevanceResult {
    pub session_id: String,
    pub target_feature: String,
    /// How the scores were computed (`embedding:<model>` or `lexical`).
    pub method: String,
    /// Why a fallback method was used, when one was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method_note: Option<String>,
    pub thresholds: Thresholds,
    /// One per symbol, in the order given.
    pub results: Vec<SymbolRelevance>,
    /// Symbols not rejected, most similar first.
    pub embedding_suggestions: Vec<Suggestion>,
    /// Pairs learned for this target feature by earlier successful sessions.
    pub cached_matches: Vec<CachedPair>,
    /// Agreements (the map) that match the target feature.
    pub map_hits: Vec<MapHit>,
    /// When the map could not be searched: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub map_unavailable: Option<String>,
    /// The `relevant_symbols` recorded as FACT mappings.
    pub confirmed: Vec<String>,
    pub refused_confirmations: Vec<RefusedConfirmation>,
    pub risk_level: RiskLevel,
    /// When a grey-zone confirmation raised the risk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub risk_note: Option<String>,
    pub learned_pairs_cleaned: LearnedPairsCleaned,
    pub warnings: Vec<String>,
    pub validation_prompt: String,
}

/// The relevance tiers' bounds.
#[derive(Clone, Copy, Debug, Serialize, JsonSchema)]
pub struct Thresholds {
    /// Above: FACT.
    pub fact: f32,
    /// Below: rejected.
    pub reject: f32,
}

/// One symbol judged by `validate_symbol_relevance`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SymbolRelevance {
    pub symbol: String,
    pub score: f32,
    pub tier: Tier,
    /// Whether the symbol may be used (not rejected).
    pub approved: bool,
    /// Whether the index defines it.
    pub in_index: bool,
    /// Up to three definition sites, `file:line`.
    pub definitions: Vec<String>,
    /// `FACT` or `REJECTED`.
    pub source: String,
    /// Grey zone: `HIGH`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub risk_adjustment: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// When rejected: what to do instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reinvestigation_guidance: Option<ReinvestigationGuidance>,
}

/// A candidate symbol and its similarity.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Suggestion {
    pub symbol: String,
    pub similarity: f32,
}

/// A learned NL -> symbol pair.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct CachedPair {
    pub nl_term: String,
    pub symbol: String,
    pub similarity: f64,
    pub code_evidence: String,
    pub session_id: String,
    pub learned_at: String,
    pub expires_at: String,
}

/// A confirmation `validate_symbol_relevance` refused.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RefusedConfirmation {
    pub symbol: String,
    pub why: String,
}

/// `submit_verification`: a verdict per hypothesis and where the session
/// stands.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SubmitVerificationResult {
    pub session_id: String,
    pub verdicts: Vec<Verdict>,
    /// Results and evidence that could not be used, and why.
    pub errors: Vec<String>,
    /// READY when no hypothesis is pending and requirements are met, else
    /// VERIFICATION.
    pub next_phase: Phase,
    pub risk_level: RiskLevel,
    pub requirements: Requirements,
    pub have: Counts,
    pub missing_requirements: Vec<Missing>,
    /// Symbols of rejected hypotheses.
    pub rejected_hypotheses: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub next_step: String,
}

/// The verdict on one hypothesis.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Verdict {
    /// The hypothesis id.
    pub hypothesis: String,
    pub symbol: String,
    /// `FACT` (verified) or `REJECTED`.
    pub status: String,
    /// When verified: where the index defines the symbol.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub site: Option<SymbolSite>,
    /// When verified against a target feature: its relevance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relevance: Option<VerdictRelevance>,
    /// When rejected: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A verified symbol's relevance to the target feature.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct VerdictRelevance {
    pub score: f32,
    pub tier: Tier,
    pub method: String,
}

/// `record_outcome`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RecordOutcomeResult {
    pub recorded: bool,
    /// A retry of the outcome already recorded: nothing was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub already_recorded: Option<bool>,
    pub session_id: String,
    pub outcome_id: i64,
    pub outcome: Outcome,
    pub phase_at_outcome: Phase,
    /// When already recorded: when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_at: Option<String>,
    pub session_closed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// After a success: the agreement written, or why none was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agreement: Option<AgreementOutcome>,
    /// After a success with an agreement: the NL -> symbol pairs learned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub learned_pairs: Option<LearnedPairsAdded>,
    /// After a failure: learned pairs dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub learned_pairs_dropped: Option<usize>,
    /// A failure replacing an earlier outcome: that outcome.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaces_outcome: Option<Outcome>,
    /// A failure replacing an earlier outcome: the agreements taken back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agreements_retracted: Option<Vec<String>>,
    /// What happened to the map entry (`added`, or why not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub map: Option<String>,
}

/// The agreement a success wrote, or why none was written.
#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
pub struct AgreementOutcome {
    pub written: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Repository-relative path of its file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nl_term: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbols: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<String>>,
    /// When not written: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl AgreementOutcome {
    /// No agreement was written, and why.
    #[must_use]
    pub fn not_written(why: &str) -> Self {
        Self { written: false, why: Some(why.to_string()), ..Self::default() }
    }
}

/// Pairs a success taught.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct LearnedPairsAdded {
    pub added: usize,
    pub expires_at: String,
    pub ttl_days: u32,
}
