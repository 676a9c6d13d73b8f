//! The session workflow service: every operation of SPEC §8, persisted in
//! SQLite after each step (a restart loses nothing).
//!
//! Responses are JSON values shaped for an agent: what happened, why, and
//! the next allowed step. Errors are [`SessionError`]s naming what to fix.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use code_intel_core::paths::RepoRoot;
use code_intel_store::sessions as db;
use code_intel_store::Store;
use rusqlite::Connection;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::agreement;
use crate::error::{Result, SessionError};
use crate::frame::{
    assess_risk, investigation_guidance, missing_slots, quote_is_verbatim, value_agrees_with_quote,
};
use crate::matrix::{self, EVIDENCE_TOOLS, Refusal};
use crate::model::{
    FrameSlot, Hypothesis, HypothesisStatus, Intent, MapHint, MappedSymbol, Outcome, Phase, QueryFrame, RiskLevel,
    SemanticReason, SessionState, Slot, SlotEvidence, SlotRejection, Source, Tier, Understanding, parent_dir,
};
use crate::record::{ToolSummary, summarize};
use crate::relevance::{FACT_THRESHOLD, LexicalRelevance, MAP_HINT_THRESHOLD, Relevance, Scored, split_symbol, tier};
use crate::requirements::{Counts, Missing, evaluate, requirements_for};
use crate::router;
use crate::services::{Agreement, AgreementMap, AgreementSymbol, SymbolIndex, SymbolSite};

/// Version of the JSON in `sessions.state_json`.
pub const STATE_VERSION: u32 = 1;

/// Longest request accepted by `start_session`, and longest `query` text
/// (characters). A request is a paragraph, not a document; 20,000
/// characters is far beyond any real one, keeps a pasted file from becoming
/// the frame's quote source and from being stored in the decision log.
pub const MAX_QUERY_CHARS: usize = 20_000;

/// Map hits fetched at session start (the first few are enough for a hint).
pub const MAP_HINT_LIMIT: usize = 3;

/// Shortest `code_evidence` accepted when confirming a mapping: a symbol
/// name plus a few words. Shorter strings ("yes", "ok") are not evidence.
pub const MIN_CODE_EVIDENCE_CHARS: usize = 12;

/// Settings of the workflow.
#[derive(Clone, Debug)]
pub struct WorkflowConfig {
    /// Lifetime of learned NL -> symbol pairs (config `learned_pair_ttl_days`).
    pub learned_pair_ttl_days: u32,
}

impl Default for WorkflowConfig {
    fn default() -> Self {
        Self { learned_pair_ttl_days: code_intel_core::config::DEFAULT_LEARNED_PAIR_TTL_DAYS }
    }
}

/// The host services the workflow consults.
#[derive(Clone)]
pub struct Services {
    pub relevance: Arc<dyn Relevance>,
    pub index: Arc<dyn SymbolIndex>,
    pub map: Arc<dyn AgreementMap>,
}

/// The session workflow of one repository.
pub struct Workflow {
    store: Mutex<Store>,
    root: RepoRoot,
    config: WorkflowConfig,
    services: Services,
}

/// Current time, RFC 3339 UTC with milliseconds (sorts as text).
#[must_use]
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn in_days(days: u32) -> String {
    (chrono::Utc::now() + chrono::Duration::days(i64::from(days))).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A fresh identifier: `prefix-` and 16 hex digits from the clock, the
/// process, a counter and the standard library's random hasher keys.
#[must_use]
pub fn new_id(prefix: &str) -> String {
    use sha2::Digest;
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let mut d = sha2::Sha256::new();
    d.update(nanos.to_le_bytes());
    d.update(std::process::id().to_le_bytes());
    d.update(h.finish().to_le_bytes());
    let out = d.finalize();
    let hex: String = out.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("{prefix}-{hex}")
}

/// The id of the agreement a session writes: one per session, derived from
/// the session's id, so that recording the outcome again after a crash
/// replaces the file instead of adding a second.
fn agreement_id(session_id: &str) -> String {
    format!("agr-{}", session_id.strip_prefix("ses-").unwrap_or(session_id))
}

/// A slot as submitted: `{value, quote}`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlotInput {
    pub value: String,
    pub quote: String,
}

/// A symbol claimed in `submit_understanding`: a name, or an object marking
/// it as a hypothesis.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum SymbolClaim {
    Name(String),
    Detailed {
        name: String,
        #[serde(default)]
        source: Option<String>,
        #[serde(default)]
        file: Option<String>,
        #[serde(default)]
        line: Option<u32>,
    },
}

/// Evidence for a slot: the tool call that established it.
#[derive(Clone, Debug, Deserialize)]
pub struct EvidenceInput {
    pub tool: String,
    #[serde(default)]
    pub params: Option<Value>,
    #[serde(default)]
    pub result: Option<String>,
}

/// Arguments of `submit_understanding`.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct UnderstandingInput {
    #[serde(default)]
    pub symbols_identified: Vec<SymbolClaim>,
    #[serde(default)]
    pub entry_points: Vec<String>,
    #[serde(default)]
    pub files_analyzed: Vec<String>,
    #[serde(default)]
    pub existing_patterns: Vec<String>,
    #[serde(default)]
    pub resolved_frame: BTreeMap<String, Option<String>>,
    #[serde(default)]
    pub slot_evidence: BTreeMap<String, EvidenceInput>,
}

/// A hypothesis submitted with `submit_semantic`.
#[derive(Clone, Debug, Deserialize)]
pub struct HypothesisInput {
    pub symbol: String,
    #[serde(default)]
    pub file: Option<String>,
    #[serde(default)]
    pub line: Option<u32>,
    #[serde(default)]
    pub description: Option<String>,
}

/// Where a confirmed hypothesis was checked.
#[derive(Clone, Debug, Deserialize)]
pub struct VerificationEvidence {
    pub tool: String,
    #[serde(default)]
    pub file: Option<String>,
    #[serde(default)]
    pub line: Option<u32>,
    #[serde(default)]
    pub params: Option<Value>,
}

/// One verification result.
#[derive(Clone, Debug, Deserialize)]
pub struct VerificationInput {
    /// Hypothesis id (`hyp-…`) or its symbol.
    pub hypothesis: String,
    pub confirmed: bool,
    #[serde(default)]
    pub evidence: Option<VerificationEvidence>,
    #[serde(default)]
    pub note: Option<String>,
}

/// A recorded tool call, decoded.
#[derive(Clone, Debug)]
struct Call {
    id: i64,
    epoch: u32,
    tool: String,
    params: Value,
    summary: ToolSummary,
    refused: bool,
}

/// What the tool calls of the current epoch returned or read.
#[derive(Default)]
struct Seen {
    files: BTreeSet<String>,
    dirs: BTreeSet<String>,
    symbols: BTreeSet<String>,
}

fn symbol_forms(s: &str) -> Vec<String> {
    let mut v = vec![s.to_string()];
    if let Some(last) = s.rsplit(['.', ':', '\\', '/']).next()
        && !last.is_empty()
        && last != s
    {
        v.push(last.to_string());
    }
    v
}

fn dedupe_errors<'a>(field: &str, items: impl Iterator<Item = &'a String>, errors: &mut Vec<String>) {
    let mut seen = BTreeSet::new();
    for i in items {
        if !seen.insert(i.as_str()) {
            errors.push(format!("{field}: {i:?} is listed twice; list each once"));
        }
    }
}

fn params_contain(call: &Value, wanted: &Value) -> bool {
    match (call, wanted) {
        (Value::Object(c), Value::Object(w)) => w.iter().all(|(k, v)| c.get(k).is_some_and(|cv| params_contain(cv, v))),
        (a, b) => a == b,
    }
}

impl Workflow {
    /// Opens the workflow over the repository's database
    /// (`.code-intel/index.db`), creating the session tables if needed.
    ///
    /// # Errors
    /// The root is unusable or the database cannot be opened.
    pub fn open(repo_root: &Path, config: WorkflowConfig, services: Services) -> Result<Self> {
        let root = RepoRoot::new(repo_root).map_err(|e| SessionError::Service(e.to_string()))?;
        let store = Store::open(&code_intel_core::config::database_path(root.path()))?;
        Ok(Self::with_store(store, root, config, services))
    }

    /// Uses an open store (its migrations created the session tables).
    #[must_use]
    pub fn with_store(store: Store, root: RepoRoot, config: WorkflowConfig, services: Services) -> Self {
        Self { store: Mutex::new(store), root, config, services }
    }

    /// The repository root.
    #[must_use]
    pub fn root(&self) -> &RepoRoot {
        &self.root
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn load(conn: &Connection, id: &str) -> Result<SessionState> {
        let row = db::get_session(conn, id)?.ok_or_else(|| SessionError::UnknownSession(id.to_string()))?;
        let v: Value = serde_json::from_str(&row.state_json)
            .map_err(|e| SessionError::Corrupt { id: id.to_string(), message: e.to_string() })?;
        serde_json::from_value(v.get("state").cloned().unwrap_or(Value::Null))
            .map_err(|e| SessionError::Corrupt { id: id.to_string(), message: e.to_string() })
    }

    fn save(conn: &Connection, s: &mut SessionState) -> Result<()> {
        s.updated_at = now();
        let state = json!({ "version": STATE_VERSION, "state": s });
        db::save_session(
            conn,
            &db::SessionRow {
                id: s.id.clone(),
                intent: s.intent.to_string(),
                query: s.query.clone(),
                phase: s.phase.to_string(),
                risk_level: s.risk_level.to_string(),
                created_at: s.created_at.clone(),
                updated_at: s.updated_at.clone(),
                closed_at: s.closed_at.clone(),
                state_json: state.to_string(),
            },
        )?;
        Ok(())
    }

    /// Runs `f` on the session inside one IMMEDIATE transaction and saves it
    /// when `f` succeeds, so two processes never lose each other's updates.
    fn with_session<T>(&self, id: &str, f: impl FnOnce(&Connection, &mut SessionState) -> Result<T>) -> Result<T> {
        let mut store = self.lock();
        store.write(|w| {
            let tx: &Connection = w.transaction();
            let mut s = Self::load(tx, id)?;
            let out = f(tx, &mut s)?;
            Self::save(tx, &mut s)?;
            Ok(out)
        })
    }

    fn calls(conn: &Connection, id: &str) -> Result<Vec<Call>> {
        Ok(db::tool_calls(conn, id)?
            .into_iter()
            .map(|r| Call {
                id: r.id,
                epoch: r.epoch,
                tool: r.tool,
                params: serde_json::from_str(&r.params_json).unwrap_or(Value::Null),
                summary: serde_json::from_str(&r.summary_json).unwrap_or_default(),
                refused: r.refused.is_some(),
            })
            .collect())
    }

    fn seen(&self, calls: &[Call], epoch: u32) -> Seen {
        let mut seen = Seen::default();
        for c in calls.iter().filter(|c| c.epoch == epoch && !c.refused && c.summary.error.is_none()) {
            seen.files.extend(c.summary.files.iter().cloned());
            for r in &c.summary.read {
                if self.root.path().join(r).is_dir() {
                    seen.dirs.insert(r.clone());
                } else {
                    seen.files.insert(r.clone());
                }
            }
            for s in &c.summary.symbols {
                seen.symbols.extend(symbol_forms(s));
            }
        }
        let parents: Vec<String> = seen.files.iter().map(|f| parent_dir(f)).collect();
        seen.dirs.extend(parents);
        seen
    }

    fn normalize(&self, field: &str, path: &str) -> Result<String> {
        self.root.normalize(path).map_err(|e| SessionError::invalid(field, e.to_string()))
    }

    fn insert_call(
        conn: &Connection,
        s: &SessionState,
        tool: &str,
        params: &Value,
        summary: &ToolSummary,
        refused: Option<&str>,
    ) -> Result<i64> {
        let params_json = params.to_string();
        let summary_json = serde_json::to_string(summary).unwrap_or_else(|_| "{}".into());
        let at = now();
        Ok(db::insert_tool_call(
            conn,
            &db::NewToolCall {
                session_id: &s.id,
                epoch: s.epoch,
                phase: s.phase.as_str(),
                tool,
                params_json: &params_json,
                summary_json: &summary_json,
                refused,
                created_at: &at,
            },
        )?)
    }

    fn score(&self, nl: &str, symbols: &[String]) -> (Scored, Vec<String>) {
        let texts: Vec<String> = symbols.iter().map(|s| split_symbol(s)).collect();
        let mut warnings = Vec::new();
        let scored = match self.services.relevance.score(nl, &texts) {
            Ok(s) if s.scores.len() == texts.len() => s,
            other => {
                let why = match other {
                    Err(e) => e,
                    Ok(_) => "relevance provider returned the wrong number of scores".to_string(),
                };
                let mut s = LexicalRelevance.score(nl, &texts).unwrap_or_else(|_| Scored {
                    method: crate::relevance::LEXICAL_METHOD.into(),
                    note: None,
                    scores: vec![0.0; texts.len()],
                });
                s.note = Some(format!("{why}; the lexical rule was used instead"));
                s
            }
        };
        if let Some(n) = &scored.note {
            warnings.push(format!("relevance method {}: {n}", scored.method));
        }
        (scored, warnings)
    }

    fn learned_score(conn: &Connection, nl: &str, symbol: &str) -> Result<Option<db::LearnedPairRow>> {
        let t = now();
        Ok(db::learned_pairs(conn)?
            .into_iter()
            .find(|p| p.expires_at >= t && p.nl_term.eq_ignore_ascii_case(nl.trim()) && p.symbol == symbol))
    }

    fn definitions(&self, symbol: &str) -> Result<Vec<SymbolSite>> {
        self.services.index.definitions(symbol).map_err(|e| SessionError::Service(format!("symbol index: {e}")))
    }

    /// Drops learned pairs that expired or whose symbol left the index.
    /// Returns `(expired, disappeared)`.
    fn cleanup_learned_pairs(&self, conn: &Connection) -> Result<(usize, usize)> {
        let expired = db::delete_expired_learned_pairs(conn, &now())?;
        let mut gone = 0;
        if self.services.index.indexed_files().unwrap_or(0) > 0 {
            for p in db::learned_pairs(conn)? {
                if matches!(self.services.index.definitions(&p.symbol), Ok(v) if v.is_empty()) {
                    gone += db::delete_learned_pair(conn, p.id)?;
                }
            }
        }
        Ok((expired, gone))
    }

    // ----------------------------------------------------------------- start

    /// `start_session(intent, query)`.
    ///
    /// # Errors
    /// An empty or oversized query; store errors.
    pub fn start_session(&self, intent: Intent, query: &str) -> Result<Value> {
        let query = query.trim();
        if query.is_empty() {
            return Err(SessionError::invalid("query", "the user's request is empty; pass it verbatim"));
        }
        if query.chars().count() > MAX_QUERY_CHARS {
            return Err(SessionError::invalid(
                "query",
                format!("the request is longer than {MAX_QUERY_CHARS} characters; pass the request, not the code"),
            ));
        }
        let at = now();
        let (risk, reasons) = assess_risk(intent, &QueryFrame::default());
        let mut s = SessionState {
            id: new_id("ses"),
            intent,
            query: query.to_string(),
            phase: Phase::Exploration,
            risk_level: risk,
            risk_reasons: reasons,
            created_at: at.clone(),
            updated_at: at.clone(),
            closed_at: None,
            epoch: 0,
            frame: None,
            understanding: None,
            missing_requirements: Vec::new(),
            hypotheses: Vec::new(),
            semantic_reason: None,
            explored_files: BTreeSet::new(),
            explored_dirs: BTreeSet::new(),
            map_hints: Vec::new(),
            history: Vec::new(),
        };
        if intent == Intent::Question {
            s.transition(Phase::Ready, &at, "QUESTION needs no exploration (SPEC §8)");
        }
        let mut warnings = Vec::new();
        match self.services.map.search(query, MAP_HINT_LIMIT) {
            Ok(hits) => {
                s.map_hints = hits
                    .into_iter()
                    .filter(|h| h.score >= MAP_HINT_THRESHOLD)
                    .map(|h| MapHint {
                        agreement_id: h.agreement_id,
                        score: h.score,
                        nl_term: h.nl_term,
                        symbols: h.symbols,
                        files: h.files,
                    })
                    .collect();
            }
            Err(e) => warnings.push(format!("map search unavailable: {e}")),
        }
        let cleaned = {
            let mut store = self.lock();
            store.write(|w| {
                let tx: &Connection = w.transaction();
                let cleaned = self.cleanup_learned_pairs(tx)?;
                Self::save(tx, &mut s)?;
                Ok::<_, SessionError>(cleaned)
            })?
        };
        let next = if intent == Intent::Question {
            "READY at once: answer from the code with any tool (pass session_id). Call set_query_frame only if you want a plan."
                .to_string()
        } else {
            "Extract the four slots from the request as instructed in extraction_prompt and call set_query_frame(session_id, slots).".to_string()
        };
        Ok(json!({
            "session_id": s.id,
            "intent": intent,
            "phase": s.phase,
            "risk_level": s.risk_level,
            "risk_note": "provisional until set_query_frame",
            "extraction_prompt": extraction_prompt(query),
            "map_hints": s.map_hints,
            "map_hint_threshold": MAP_HINT_THRESHOLD,
            "learned_pairs_cleaned": {"expired": cleaned.0, "symbol_gone": cleaned.1},
            "warnings": warnings,
            "next_step": next,
        }))
    }

    // ------------------------------------------------------------ query frame

    /// `set_query_frame(session_id, slots)`.
    ///
    /// # Errors
    /// Unknown session, wrong phase, malformed slots.
    pub fn set_query_frame(&self, session_id: &str, slots: &Value) -> Result<Value> {
        let obj = slots.as_object().ok_or_else(|| {
            SessionError::invalid(
                "slots",
                "must be an object {target_feature, trigger_condition, observed_issue, desired_action}, each {value, quote} or null",
            )
        })?;
        let mut parsed: Vec<(Slot, Option<SlotInput>)> = Vec::new();
        for (k, v) in obj {
            let slot: Slot = k.parse().map_err(|_| {
                SessionError::invalid(
                    format!("slots.{k}"),
                    "unknown slot; use target_feature, trigger_condition, observed_issue, desired_action",
                )
            })?;
            if v.is_null() {
                parsed.push((slot, None));
                continue;
            }
            let input: SlotInput = serde_json::from_value(v.clone()).map_err(|e| {
                SessionError::invalid(format!("slots.{k}"), format!("expected {{\"value\": ..., \"quote\": ...}}: {e}"))
            })?;
            parsed.push((slot, Some(input)));
        }
        self.with_session(session_id, |conn, s| {
            if s.closed_at.is_some() {
                return Err(SessionError::Closed(s.id.clone()));
            }
            if s.phase != Phase::Exploration && s.intent != Intent::Question {
                return Err(SessionError::WrongPhase {
                    action: "set_query_frame".into(),
                    phase: s.phase,
                    reason: "the frame is fixed once understanding was submitted".into(),
                    next: "revert_to_exploration(session_id, keep_results) to change it".into(),
                });
            }
            let mut frame = QueryFrame { raw_query: s.query.clone(), ..QueryFrame::default() };
            if let Some(old) = &s.frame {
                frame.mapped_symbols.clone_from(&old.mapped_symbols);
            }
            let mut notes = Vec::new();
            for (slot, input) in &parsed {
                let Some(input) = input else { continue };
                let reject = |error: String| SlotRejection {
                    slot: *slot,
                    value: input.value.clone(),
                    quote: input.quote.clone(),
                    error,
                };
                if input.value.trim().is_empty() {
                    frame.rejected.push(reject("value is empty; use null for a slot the request does not fill".into()));
                    continue;
                }
                if !quote_is_verbatim(&input.quote, &s.query) {
                    frame.rejected.push(reject(
                        "quote not found in the request: the quote must be copied verbatim from the original query (hallucination check)".into(),
                    ));
                    continue;
                }
                if !value_agrees_with_quote(&input.value, &input.quote) {
                    let (scored, _) = self.score(&input.value, std::slice::from_ref(&input.quote));
                    let sim = scored.scores.first().copied().unwrap_or(0.0);
                    if scored.method != crate::relevance::LEXICAL_METHOD && sim > FACT_THRESHOLD {
                        notes.push(format!(
                            "{slot}: value and quote share no words but {} scores them {sim:.2} (> {FACT_THRESHOLD})",
                            scored.method
                        ));
                    } else {
                        frame.rejected.push(reject(format!(
                            "value does not match its quote (no shared words; {} similarity {sim:.2}): the value must restate the quoted words",
                            scored.method
                        )));
                        continue;
                    }
                }
                frame.slots.insert(
                    *slot,
                    FrameSlot { value: input.value.trim().to_string(), quote: input.quote.trim().to_string(), source: Source::Fact },
                );
            }
            frame.missing_slots = missing_slots(s.intent, &frame);
            let (mut risk, mut reasons) = assess_risk(s.intent, &frame);
            let forced: Vec<String> =
                s.risk_reasons.iter().filter(|r| r.starts_with("grey-zone relevance")).cloned().collect();
            if !forced.is_empty() {
                risk = RiskLevel::High;
                reasons.extend(forced);
            }
            s.risk_level = risk;
            s.risk_reasons.clone_from(&reasons);
            let guidance = investigation_guidance(&frame.missing_slots);
            let plan = router::plan(s.intent, s.phase, Some(&frame));
            s.frame = Some(frame.clone());
            let decision = Self::log_decision(conn, Some(&s.id), &s.query, &plan)?;
            let req = requirements_for(s.intent, risk);
            let rejected: Vec<Value> =
                frame.rejected.iter().map(|r| json!({"slot": r.slot, "error": r.error, "quote": r.quote})).collect();
            let mut out = json!({
                "success": frame.rejected.is_empty(),
                "session_id": s.id,
                "phase": s.phase,
                "accepted_slots": frame.slots,
                "missing_slots": frame.missing_slots,
                "risk_level": risk,
                "risk_reasons": reasons,
                "investigation_guidance": guidance,
                "plan": plan,
                "decision_id": decision,
                "requirements": req,
                "notes": notes,
                "next_step": match s.intent {
                    Intent::Question => "answer from the code; the session is READY".to_string(),
                    _ => format!(
                        "explore with the recommended tools (pass session_id to every code tool), then submit_understanding. Needed: {} symbols, {} entry points, {} files, {} patterns{}.",
                        req.symbols, req.entry_points, req.files, req.patterns,
                        if req.tools.is_empty() { String::new() } else { format!(", and {} used", req.tools.join(" + ")) }
                    ),
                },
            });
            if !frame.rejected.is_empty() {
                out["error"] = json!("validation_failed");
                out["validation_errors"] = Value::Array(rejected);
                out["message"] = json!(
                    "Some slots were rejected and count as missing. Fix them by quoting the request verbatim, or set them to null."
                );
            }
            Ok(out)
        })
    }

    fn log_decision(conn: &Connection, session: Option<&str>, query: &str, plan: &router::ExecutionPlan) -> Result<i64> {
        Ok(db::insert_decision(
            conn,
            &db::DecisionRow {
                id: 0,
                session_id: session.map(str::to_string),
                query: query.to_string(),
                intent: plan.intent.to_string(),
                missing_slots_json: serde_json::to_string(&plan.missing_slots).unwrap_or_default(),
                risk_level: plan.risk_level.to_string(),
                tools_planned_json: serde_json::to_string(&plan.tools_planned).unwrap_or_default(),
                plan_json: serde_json::to_string(plan).unwrap_or_default(),
                created_at: now(),
            },
        )?)
    }

    /// `query(session_id?, text)`: the router's plan, logged as a decision.
    ///
    /// # Errors
    /// Unknown session; store errors.
    pub fn query(&self, session_id: Option<&str>, text: &str, intent: Option<Intent>) -> Result<Value> {
        if text.trim().is_empty() {
            return Err(SessionError::invalid("text", "empty; say what you are looking for"));
        }
        if text.chars().count() > MAX_QUERY_CHARS {
            return Err(SessionError::invalid(
                "text",
                format!("is longer than {MAX_QUERY_CHARS} characters (the limit of a request); say what you are looking for, not the code"),
            ));
        }
        if let Some(id) = session_id {
            return self.with_session(id, |conn, s| {
                let plan = router::plan(s.intent, s.phase, s.frame.as_ref());
                let decision = Self::log_decision(conn, Some(&s.id), text, &plan)?;
                Ok(json!({
                    "session_id": s.id,
                    "text": text,
                    "plan": plan,
                    "investigation_guidance": investigation_guidance(&plan.missing_slots),
                    "allowed_tools": matrix::allowed_tools(s.phase),
                    "decision_id": decision,
                }))
            });
        }
        let intent = intent.unwrap_or(Intent::Investigate);
        let plan = router::plan(intent, Phase::Exploration, None);
        let store = self.lock();
        let decision = Self::log_decision(store.conn(), None, text, &plan)?;
        Ok(json!({
            "text": text,
            "plan": plan,
            "investigation_guidance": investigation_guidance(&plan.missing_slots),
            "decision_id": decision,
            "note": "No session: this plan treats every slot as missing. start_session + set_query_frame give a plan for the actual request and enforce the workflow.",
        }))
    }

    // ----------------------------------------------------------- tool gating

    /// Checks a code tool call against the phase/tool matrix. A refusal is
    /// recorded in the session's log and returned.
    ///
    /// # Errors
    /// Unknown session; store errors.
    pub fn gate_tool(&self, session_id: &str, tool: &str, params: &Value) -> Result<Result<Phase, Refusal>> {
        self.with_session(session_id, |conn, s| match matrix::check(s.phase, tool, params) {
            Ok(()) => Ok(Ok(s.phase)),
            Err(mut refusal) => {
                if s.phase == Phase::Exploration && s.frame.is_none() {
                    // submit_understanding needs the frame first.
                    refusal.next_allowed_step = format!("call set_query_frame(session_id, slots) first; then {}", refusal.next_allowed_step);
                }
                let reason = refusal.to_string();
                Self::insert_call(conn, s, tool, params, &ToolSummary::default(), Some(&reason))?;
                Ok(Err(refusal))
            }
        })
    }

    /// Records a code tool call that ran: its parameters and a summary of the
    /// files and symbols it returned. Returns the call id.
    ///
    /// # Errors
    /// Unknown session; store errors.
    pub fn record_tool_call(&self, session_id: &str, tool: &str, params: &Value, result: &Value) -> Result<i64> {
        let summary = summarize(params, result);
        self.with_session(session_id, |conn, s| Self::insert_call(conn, s, tool, params, &summary, None))
    }

    // --------------------------------------------------------- understanding

    /// `submit_understanding`.
    ///
    /// # Errors
    /// Unknown session, wrong phase, malformed arguments.
    #[allow(clippy::too_many_lines)]
    pub fn submit_understanding(&self, session_id: &str, input: &UnderstandingInput) -> Result<Value> {
        self.with_session(session_id, |conn, s| {
            if s.closed_at.is_some() {
                return Err(SessionError::Closed(s.id.clone()));
            }
            if s.phase != Phase::Exploration {
                return Err(SessionError::WrongPhase {
                    action: "submit_understanding".into(),
                    phase: s.phase,
                    reason: "understanding is submitted once, at the end of EXPLORATION".into(),
                    next: next_step(s),
                });
            }
            let Some(frame) = s.frame.clone() else {
                return Err(SessionError::WrongPhase {
                    action: "submit_understanding".into(),
                    phase: s.phase,
                    reason: "no QueryFrame yet".into(),
                    next: "call set_query_frame(session_id, slots) first".into(),
                });
            };
            let calls = Self::calls(conn, &s.id)?;
            let seen = self.seen(&calls, s.epoch);
            let mut errors: Vec<String> = Vec::new();

            // Parse and normalise.
            let mut symbols: Vec<String> = Vec::new();
            let mut hyp_claims: Vec<(String, Option<String>, Option<u32>)> = Vec::new();
            for c in &input.symbols_identified {
                match c {
                    SymbolClaim::Name(n) => symbols.push(n.trim().to_string()),
                    SymbolClaim::Detailed { name, source, file, line } => {
                        let hyp = match source.as_deref() {
                            None => false,
                            Some(src) => match src.parse::<Source>() {
                                Ok(Source::Hypothesis) => true,
                                Ok(Source::Fact) => false,
                                Err(e) => {
                                    errors.push(format!("symbols_identified {name:?}: {e}"));
                                    false
                                }
                            },
                        };
                        if hyp {
                            hyp_claims.push((name.trim().to_string(), file.clone(), *line));
                        } else {
                            symbols.push(name.trim().to_string());
                        }
                    }
                }
            }
            let mut files = Vec::new();
            for f in &input.files_analyzed {
                match self.normalize("files_analyzed", f) {
                    Ok(p) => files.push(p),
                    Err(e) => errors.push(e.to_string()),
                }
            }
            let entry_points: Vec<String> = input.entry_points.iter().map(|e| e.trim().to_string()).collect();
            let patterns: Vec<String> = input.existing_patterns.iter().map(|p| p.trim().to_string()).collect();
            let all_symbol_names: Vec<String> =
                symbols.iter().cloned().chain(hyp_claims.iter().map(|h| h.0.clone())).collect();
            dedupe_errors("symbols_identified", all_symbol_names.iter(), &mut errors);
            dedupe_errors("entry_points", entry_points.iter(), &mut errors);
            dedupe_errors("files_analyzed", files.iter(), &mut errors);
            dedupe_errors("existing_patterns", patterns.iter(), &mut errors);
            if symbols.iter().chain(entry_points.iter()).chain(patterns.iter()).any(String::is_empty) {
                errors.push("empty strings are not evidence; remove them".into());
            }
            if !patterns.is_empty() && files.is_empty() {
                errors.push("existing_patterns were given but no files_analyzed: a pattern lives in files; list them".into());
            }

            // Consistency with the recorded tool calls and the index.
            for f in &files {
                if !seen.files.contains(f) {
                    errors.push(format!(
                        "files_analyzed: {f:?} was not returned or read by any tool in this session; open it with get_function_at_line / analyze_structure or find it with search_text first"
                    ));
                }
            }
            let mut sites: BTreeMap<String, Vec<SymbolSite>> = BTreeMap::new();
            for sym in &symbols {
                if sym.is_empty() {
                    continue;
                }
                let defs = self.definitions(sym)?;
                if defs.is_empty() {
                    errors.push(format!(
                        "symbols_identified: {sym:?} is not defined in the index; check the spelling with find_definitions, or mark it {{\"name\": {sym:?}, \"source\": \"HYPOTHESIS\"}}"
                    ));
                    continue;
                }
                let returned = symbol_forms(sym).iter().any(|f| seen.symbols.contains(f))
                    || defs.iter().any(|d| seen.files.contains(&d.file));
                if !returned {
                    errors.push(format!(
                        "symbols_identified: {sym:?} exists but no tool in this session returned it or its file; look it up with find_definitions first"
                    ));
                }
                sites.insert(sym.clone(), defs);
            }
            for e in &entry_points {
                if !symbols.contains(e) {
                    errors.push(format!("entry_points: {e:?} is not one of symbols_identified; an entry point must be a submitted symbol"));
                }
            }
            let mut resolved: BTreeMap<Slot, String> = BTreeMap::new();
            for (k, v) in &input.resolved_frame {
                match k.parse::<Slot>() {
                    Ok(slot) => {
                        if let Some(v) = v.as_ref().map(|v| v.trim()).filter(|v| !v.is_empty()) {
                            resolved.insert(slot, v.to_string());
                        }
                    }
                    Err(_) => errors.push(format!("resolved_frame: unknown slot {k:?}")),
                }
            }
            let evidence = self.check_slot_evidence(&input.slot_evidence, &calls, s, &frame, &resolved, 0, &mut errors);

            if !errors.is_empty() {
                let reason = errors.join("; ");
                Self::insert_call(conn, s, "submit_understanding", &json!({}), &ToolSummary::default(), Some(&reason))?;
                return Ok(json!({
                    "accepted": false,
                    "error": "inconsistent_evidence",
                    "errors": errors,
                    "phase": s.phase,
                    "next_step": "fix the listed items (every claim must match what a tool returned in this session) and call submit_understanding again",
                }));
            }

            // Required tools.
            let req_now = requirements_for(s.intent, s.risk_level);
            let used: BTreeSet<&str> = calls
                .iter()
                .filter(|c| c.epoch == s.epoch && !c.refused)
                .map(|c| c.tool.as_str())
                .collect();
            let missing_tools: Vec<&str> = req_now.tools.iter().copied().filter(|t| !used.contains(t)).collect();
            if !missing_tools.is_empty() {
                Self::insert_call(
                    conn,
                    s,
                    "submit_understanding",
                    &json!({}),
                    &ToolSummary::default(),
                    Some(&format!("required tools not used: {}", missing_tools.join(", "))),
                )?;
                return Ok(json!({
                    "accepted": false,
                    "error": "required_tools_not_used",
                    "missing_tools": missing_tools,
                    "phase": s.phase,
                    "next_step": format!("{} must use {} in this session before submitting; call {} (with session_id) and submit again", s.intent, req_now.tools.join(" and "), missing_tools.join(" and ")),
                }));
            }

            // NL -> symbol relevance.
            let target = resolved.get(&Slot::TargetFeature).cloned().or_else(|| frame.value(Slot::TargetFeature).map(str::to_string));
            let mut warnings = Vec::new();
            let mut relevance_report = Vec::new();
            let mut mapped: Vec<MappedSymbol> = Vec::new();
            let mut rejected = Vec::new();
            let mut accepted_symbols: Vec<String> = Vec::new();
            let mut method = None;
            let mut forced_high = Vec::new();
            if let Some(target) = &target {
                let (scored, w) = self.score(target, &symbols);
                warnings.extend(w);
                method = Some(scored.method.clone());
                for (sym, score) in symbols.iter().zip(scored.scores.iter()) {
                    let (score, meth) = match Self::learned_score(conn, target, sym)? {
                        Some(p) if tier(score.to_owned()) == Tier::Rejected || p.similarity > f64::from(*score) => {
                            #[allow(clippy::cast_possible_truncation)]
                            let ps = p.similarity as f32;
                            (ps.max(*score), format!("learned pair ({})", p.method))
                        }
                        _ => (*score, scored.method.clone()),
                    };
                    let t = tier(score);
                    relevance_report.push(json!({"symbol": sym, "score": score, "tier": t, "method": meth}));
                    match t {
                        Tier::Fact | Tier::Accepted => {
                            if t == Tier::Accepted {
                                let w = format!(
                                    "grey-zone relevance: {sym:?} vs {target:?} scored {score:.2} (between {} and {FACT_THRESHOLD}); accepted, risk forced to HIGH",
                                    crate::relevance::REJECT_THRESHOLD
                                );
                                warnings.push(w.clone());
                                forced_high.push(w);
                            }
                            accepted_symbols.push(sym.clone());
                            mapped.push(MappedSymbol {
                                symbol: sym.clone(),
                                source: Source::Fact,
                                score,
                                tier: t,
                                method: meth,
                                code_evidence: frame
                                    .mapped_symbols
                                    .iter()
                                    .find(|m| &m.symbol == sym)
                                    .and_then(|m| m.code_evidence.clone()),
                            });
                        }
                        Tier::Rejected => rejected.push(json!({
                            "symbol": sym,
                            "score": score,
                            "reinvestigation_guidance": reinvestigation_guidance(target, sym),
                        })),
                    }
                }
            } else {
                accepted_symbols.clone_from(&symbols);
            }

            // Risk and requirements.
            let old_risk = s.risk_level;
            if !forced_high.is_empty() {
                s.risk_level = RiskLevel::High;
                s.risk_reasons.extend(forced_high);
            }
            let req = requirements_for(s.intent, s.risk_level);
            let counts = Counts {
                symbols: accepted_symbols.len(),
                entry_points: entry_points.iter().filter(|e| accepted_symbols.contains(e)).count(),
                files: files.len(),
                patterns: patterns.len(),
            };
            let evidenced: Vec<Slot> = evidence.keys().copied().collect();
            let mut missing = evaluate(req, &counts, &evidenced, target.is_some());
            for r in &rejected {
                missing.push(Missing::new(
                    "nl_symbol_mapping",
                    format!(
                        "{} does not match target_feature {:?} (score {:.2} < {})",
                        r["symbol"],
                        target.clone().unwrap_or_default(),
                        r["score"].as_f64().unwrap_or(0.0),
                        crate::relevance::REJECT_THRESHOLD
                    ),
                ));
            }
            let last_call = calls.last().map_or(0, |c| c.id);
            for (name, file, line) in &hyp_claims {
                s.hypotheses.push(Hypothesis {
                    id: new_id("hyp"),
                    symbol: name.clone(),
                    file: file.as_deref().and_then(|f| self.root.normalize(f).ok()),
                    line: *line,
                    description: "marked HYPOTHESIS in submit_understanding".into(),
                    status: HypothesisStatus::Hypothesis,
                    created_after_call: last_call,
                    verdict: None,
                });
            }
            if !s.pending_hypotheses().is_empty() {
                missing.push(Missing {
                    kind: "unverified_hypotheses".into(),
                    message: format!("{} HYPOTHESIS symbol(s) must be verified with exact tools", s.pending_hypotheses().len()),
                    semantic_reasons: vec![SemanticReason::NoDefinitionFound, SemanticReason::ArchitectureUnknown],
                });
            }

            // Store.
            let mut f = frame;
            f.resolved = resolved;
            f.slot_evidence = evidence;
            for m in mapped {
                f.mapped_symbols.retain(|x| x.symbol != m.symbol);
                f.mapped_symbols.push(m);
            }
            s.frame = Some(f);
            s.understanding = Some(Understanding {
                symbols: accepted_symbols,
                entry_points,
                files: files.clone(),
                patterns,
            });
            s.explored_files.extend(files.iter().cloned());
            s.explored_dirs.extend(files.iter().map(|f| parent_dir(f)));
            s.missing_requirements.clone_from(&missing);
            let at = now();
            let next_phase = if missing.is_empty() { Phase::Ready } else { Phase::Semantic };
            s.transition(
                next_phase,
                &at,
                if missing.is_empty() { "all requirements met".to_string() } else { format!("{} requirement(s) missing", missing.len()) },
            );
            Self::insert_call(
                conn,
                s,
                "submit_understanding",
                &json!({"symbols": counts.symbols, "files": counts.files}),
                &ToolSummary::default(),
                None,
            )?;
            Ok(json!({
                "accepted": true,
                "session_id": s.id,
                "next_phase": s.phase,
                "evaluated_confidence": if missing.is_empty() { "high" } else { "low" },
                "risk_level": s.risk_level,
                "risk_raised": s.risk_level != old_risk,
                "requirements": req,
                "have": counts,
                "missing_requirements": missing,
                "symbol_relevance": relevance_report,
                "relevance_method": method,
                "rejected_symbols": rejected,
                "warnings": warnings,
                "explored_files": s.explored_files,
                "next_step": next_step(s),
            }))
        })
    }

    /// Checks submitted slot evidence against recorded calls (made after
    /// `after_call`); returns the accepted evidence.
    #[allow(clippy::too_many_arguments)]
    fn check_slot_evidence(
        &self,
        input: &BTreeMap<String, EvidenceInput>,
        calls: &[Call],
        s: &SessionState,
        frame: &QueryFrame,
        resolved: &BTreeMap<Slot, String>,
        after_call: i64,
        errors: &mut Vec<String>,
    ) -> BTreeMap<Slot, SlotEvidence> {
        let mut out = frame.slot_evidence.clone();
        for (k, ev) in input {
            let Ok(slot) = k.parse::<Slot>() else {
                errors.push(format!("slot_evidence: unknown slot {k:?}"));
                continue;
            };
            if !EVIDENCE_TOOLS.contains(&ev.tool.as_str()) {
                errors.push(format!(
                    "slot_evidence.{k}: tool {:?} is not an exact tool; evidence comes from {}",
                    ev.tool,
                    EVIDENCE_TOOLS.join(", ")
                ));
                continue;
            }
            let call = calls.iter().rev().find(|c| {
                c.epoch == s.epoch
                    && !c.refused
                    && c.id > after_call
                    && c.tool == ev.tool
                    && ev.params.as_ref().is_none_or(|p| params_contain(&c.params, p))
            });
            let Some(call) = call else {
                errors.push(format!(
                    "slot_evidence.{k}: no {} call{} was recorded in this session; evidence must point at a call you made (pass session_id to the tool)",
                    ev.tool,
                    if ev.params.is_some() { " with those params" } else { "" }
                ));
                continue;
            };
            if !resolved.contains_key(&slot) && !frame.has(slot) {
                errors.push(format!(
                    "slot_evidence.{k}: the slot has no value; state what was found in resolved_frame.{k}"
                ));
                continue;
            }
            out.insert(
                slot,
                SlotEvidence {
                    tool: ev.tool.clone(),
                    params: Some(call.params.clone()),
                    result: ev.result.clone().unwrap_or_default(),
                    tool_call_id: call.id,
                },
            );
        }
        out
    }

    // ------------------------------------------------------------- relevance

    /// `validate_symbol_relevance(session_id, target_feature, symbols,
    /// relevant_symbols?, code_evidence?)`.
    ///
    /// # Errors
    /// Unknown session; `code_evidence` missing when confirming.
    pub fn validate_symbol_relevance(
        &self,
        session_id: &str,
        target_feature: Option<&str>,
        symbols: &[String],
        relevant_symbols: &[String],
        code_evidence: Option<&str>,
    ) -> Result<Value> {
        if symbols.is_empty() {
            return Err(SessionError::invalid("symbols", "give the candidate symbols to check"));
        }
        let evidence = code_evidence.map(str::trim).unwrap_or_default();
        if !relevant_symbols.is_empty() && evidence.chars().count() < MIN_CODE_EVIDENCE_CHARS {
            return Err(SessionError::invalid(
                "code_evidence",
                format!(
                    "required when confirming relevant_symbols: cite the code that proves the mapping (a method, a comment, a naming convention), at least {MIN_CODE_EVIDENCE_CHARS} characters"
                ),
            ));
        }
        for r in relevant_symbols {
            if !symbols.contains(r) {
                return Err(SessionError::invalid("relevant_symbols", format!("{r:?} is not one of symbols")));
            }
        }
        let map_hits = self.services.map.search(target_feature.unwrap_or_default(), MAP_HINT_LIMIT);
        self.with_session(session_id, |conn, s| {
            let target = target_feature
                .map(str::to_string)
                .or_else(|| s.frame.as_ref().and_then(|f| f.value(Slot::TargetFeature).map(str::to_string)))
                .ok_or_else(|| {
                    SessionError::invalid("target_feature", "not given and the session's frame has none; pass target_feature")
                })?;
            let cleaned = self.cleanup_learned_pairs(conn)?;
            let (scored, warnings) = self.score(&target, symbols);
            let mut results = Vec::new();
            let mut confirmed = Vec::new();
            let mut refused = Vec::new();
            let mut forced = false;
            for (sym, score) in symbols.iter().zip(scored.scores.iter()) {
                let t = tier(*score);
                let defs = self.definitions(sym)?;
                let mut r = json!({
                    "symbol": sym,
                    "score": score,
                    "tier": t,
                    "approved": t != Tier::Rejected,
                    "in_index": !defs.is_empty(),
                    "definitions": defs.iter().take(3).map(|d| format!("{}:{}", d.file, d.start_line)).collect::<Vec<_>>(),
                });
                match t {
                    Tier::Fact => r["source"] = json!("FACT"),
                    Tier::Accepted => {
                        r["source"] = json!("FACT");
                        r["risk_adjustment"] = json!("HIGH");
                        r["warning"] = json!(format!("similarity {score:.2} is in the grey zone; exploration requirements rise to HIGH"));
                    }
                    Tier::Rejected => {
                        r["source"] = json!("REJECTED");
                        r["reinvestigation_guidance"] = reinvestigation_guidance(&target, sym);
                    }
                }
                if relevant_symbols.contains(sym) {
                    if t == Tier::Rejected || defs.is_empty() {
                        refused.push(json!({
                            "symbol": sym,
                            "why": if defs.is_empty() { "not defined in the index".to_string() } else { format!("score {score:.2} < {}", crate::relevance::REJECT_THRESHOLD) },
                        }));
                    } else {
                        if t == Tier::Accepted {
                            forced = true;
                        }
                        confirmed.push(MappedSymbol {
                            symbol: sym.clone(),
                            source: Source::Fact,
                            score: *score,
                            tier: t,
                            method: scored.method.clone(),
                            code_evidence: Some(evidence.to_string()),
                        });
                    }
                }
                results.push(r);
            }
            let mut suggestions: Vec<(String, f32)> = symbols
                .iter()
                .cloned()
                .zip(scored.scores.iter().copied())
                .filter(|(_, sc)| tier(*sc) != Tier::Rejected)
                .collect();
            suggestions.sort_by(|a, b| b.1.total_cmp(&a.1));
            let t = now();
            let cached: Vec<Value> = db::learned_pairs(conn)?
                .into_iter()
                .filter(|p| p.expires_at >= t && p.nl_term.eq_ignore_ascii_case(target.trim()))
                .map(|p| json!({"nl_term": p.nl_term, "symbol": p.symbol, "similarity": p.similarity, "code_evidence": p.code_evidence, "session_id": p.session_id, "learned_at": p.learned_at, "expires_at": p.expires_at}))
                .collect();
            let mut risk_note = None;
            if forced {
                let w = format!("grey-zone relevance confirmed for {target:?}; risk forced to HIGH");
                if s.risk_level != RiskLevel::High {
                    s.risk_level = RiskLevel::High;
                    risk_note = Some(if s.phase == Phase::Ready {
                        "risk raised to HIGH after READY: HIGH requirements apply to the next submission".to_string()
                    } else {
                        "risk raised to HIGH: exploration requirements are now 5/2/4/2 with slot evidence".to_string()
                    });
                }
                s.risk_reasons.push(w);
            }
            let frame = s.frame.get_or_insert_with(|| QueryFrame { raw_query: s.query.clone(), ..QueryFrame::default() });
            for m in &confirmed {
                frame.mapped_symbols.retain(|x| x.symbol != m.symbol);
                frame.mapped_symbols.push(m.clone());
            }
            Ok(json!({
                "session_id": s.id,
                "target_feature": target,
                "method": scored.method,
                "method_note": scored.note,
                "thresholds": {"fact": FACT_THRESHOLD, "reject": crate::relevance::REJECT_THRESHOLD},
                "results": results,
                "embedding_suggestions": suggestions.iter().map(|(s, sc)| json!({"symbol": s, "similarity": sc})).collect::<Vec<_>>(),
                "cached_matches": cached,
                "map_hits": match &map_hits { Ok(h) => json!(h), Err(e) => json!(format!("unavailable: {e}")) },
                "confirmed": confirmed.iter().map(|m| &m.symbol).collect::<Vec<_>>(),
                "refused_confirmations": refused,
                "risk_level": s.risk_level,
                "risk_note": risk_note,
                "learned_pairs_cleaned": {"expired": cleaned.0, "symbol_gone": cleaned.1},
                "warnings": warnings,
                "validation_prompt": format!(
                    "Which of these symbols implement {target:?}? Confirm with relevant_symbols and cite code_evidence (a method, a comment, a naming convention in the code). Symbols scored below {} are rejected by the server whatever you answer.",
                    crate::relevance::REJECT_THRESHOLD
                ),
            }))
        })
    }

    // -------------------------------------------------------------- semantic

    /// `submit_semantic(session_id, hypotheses, semantic_reason)`.
    ///
    /// # Errors
    /// Unknown session, wrong phase, malformed arguments.
    pub fn submit_semantic(&self, session_id: &str, hypotheses: &[HypothesisInput], reason: &str) -> Result<Value> {
        let reason: SemanticReason = reason.parse()?;
        self.with_session(session_id, |conn, s| {
            if s.closed_at.is_some() {
                return Err(SessionError::Closed(s.id.clone()));
            }
            if s.phase != Phase::Semantic {
                return Err(SessionError::WrongPhase {
                    action: "submit_semantic".into(),
                    phase: s.phase,
                    reason: "hypotheses are submitted in SEMANTIC only".into(),
                    next: next_step(s),
                });
            }
            let fits: Vec<String> = s.missing_requirements.iter().filter(|m| m.semantic_reasons.contains(&reason)).map(|m| m.kind.clone()).collect();
            if fits.is_empty() {
                let allowed: Vec<Value> = s
                    .missing_requirements
                    .iter()
                    .map(|m| json!({"missing": m.kind, "allowed_reasons": m.semantic_reasons}))
                    .collect();
                return Ok(json!({
                    "accepted": false,
                    "error": "semantic_reason_mismatch",
                    "message": format!("semantic_reason {reason} does not fit anything that is missing"),
                    "missing_requirements": allowed,
                    "phase": s.phase,
                    "next_step": "call submit_semantic again with a semantic_reason that fits one of the missing requirements",
                }));
            }
            if hypotheses.is_empty() {
                return Err(SessionError::invalid(
                    "hypotheses",
                    "no hypotheses: give at least one {symbol, file, description} found with semantic_search; if it found nothing, revert_to_exploration(keep_results=true)",
                ));
            }
            let calls = Self::calls(conn, &s.id)?;
            let seen = self.seen(&calls, s.epoch);
            let mut errors = Vec::new();
            let mut new = Vec::new();
            let last_call = calls.last().map_or(0, |c| c.id);
            for h in hypotheses {
                let symbol = h.symbol.trim().to_string();
                if symbol.is_empty() {
                    errors.push("hypotheses: a symbol is empty".to_string());
                    continue;
                }
                if s.hypotheses.iter().chain(new.iter()).any(|x: &Hypothesis| x.symbol == symbol && x.status != HypothesisStatus::Rejected) {
                    errors.push(format!("hypotheses: {symbol:?} is listed twice"));
                    continue;
                }
                let file = match &h.file {
                    Some(f) => match self.normalize("hypotheses.file", f) {
                        Ok(p) => Some(p),
                        Err(e) => {
                            errors.push(e.to_string());
                            continue;
                        }
                    },
                    None => None,
                };
                let found = symbol_forms(&symbol).iter().any(|f| seen.symbols.contains(f))
                    || file.as_ref().is_some_and(|f| seen.files.contains(f));
                if !found {
                    errors.push(format!(
                        "hypotheses: {symbol:?} was not returned by any tool in this session; hypotheses come from semantic_search / search_text results"
                    ));
                    continue;
                }
                new.push(Hypothesis {
                    id: new_id("hyp"),
                    symbol,
                    file,
                    line: h.line,
                    description: h.description.clone().unwrap_or_default(),
                    status: HypothesisStatus::Hypothesis,
                    created_after_call: last_call,
                    verdict: None,
                });
            }
            if !errors.is_empty() {
                return Ok(json!({
                    "accepted": false,
                    "error": "inconsistent_evidence",
                    "errors": errors,
                    "phase": s.phase,
                    "next_step": "fix the listed hypotheses and call submit_semantic again",
                }));
            }
            s.semantic_reason = Some(reason);
            s.hypotheses.extend(new.iter().cloned());
            let at = now();
            s.transition(Phase::Verification, &at, format!("{} hypothesis(es), reason {reason}", new.len()));
            Ok(json!({
                "accepted": true,
                "session_id": s.id,
                "next_phase": s.phase,
                "semantic_reason": reason,
                "addresses": fits,
                "hypotheses": new,
                "next_step": "verify each hypothesis with an exact tool (find_definitions / get_function_at_line, with session_id), then submit_verification(results: [{hypothesis, confirmed, evidence: {tool, file, line}}])",
            }))
        })
    }

    // ---------------------------------------------------------- verification

    /// `submit_verification(session_id, results)`.
    ///
    /// # Errors
    /// Unknown session, wrong phase, malformed arguments.
    #[allow(clippy::too_many_lines)]
    pub fn submit_verification(
        &self,
        session_id: &str,
        results: &[VerificationInput],
        slot_evidence: &BTreeMap<String, EvidenceInput>,
        resolved_frame: &BTreeMap<String, Option<String>>,
    ) -> Result<Value> {
        self.with_session(session_id, |conn, s| {
            if s.closed_at.is_some() {
                return Err(SessionError::Closed(s.id.clone()));
            }
            if s.phase != Phase::Verification {
                return Err(SessionError::WrongPhase {
                    action: "submit_verification".into(),
                    phase: s.phase,
                    reason: "verification follows submit_semantic".into(),
                    next: next_step(s),
                });
            }
            if results.is_empty() && slot_evidence.is_empty() {
                return Err(SessionError::invalid("results", "give one result per hypothesis: {hypothesis, confirmed, evidence}"));
            }
            let calls = Self::calls(conn, &s.id)?;
            let mut verdicts = Vec::new();
            let mut errors = Vec::new();
            let target = s.frame.as_ref().and_then(|f| f.value(Slot::TargetFeature).map(str::to_string));
            for r in results {
                let Some(idx) = s.hypotheses.iter().position(|h| {
                    (h.id == r.hypothesis || h.symbol == r.hypothesis) && h.status == HypothesisStatus::Hypothesis
                }) else {
                    errors.push(format!("results: no pending hypothesis {:?} (ids: {})", r.hypothesis,
                        s.pending_hypotheses().iter().map(|h| format!("{} {}", h.id, h.symbol)).collect::<Vec<_>>().join(", ")));
                    continue;
                };
                let h = s.hypotheses[idx].clone();
                let verdict: std::result::Result<SymbolSite, String> = if r.confirmed {
                    self.verify(&h, r.evidence.as_ref(), &calls, s.epoch)
                } else {
                    Err(r.note.clone().unwrap_or_else(|| "rejected by the agent".into()))
                };
                match verdict {
                    Ok(site) => {
                        let hs = &mut s.hypotheses[idx];
                        hs.status = HypothesisStatus::Fact;
                        hs.file = Some(site.file.clone());
                        hs.verdict = Some(format!("verified: defined at {}:{}-{}", site.file, site.start_line, site.end_line));
                        let u = s.understanding.get_or_insert_with(Understanding::default);
                        let mut rel = json!(null);
                        let mut counts_as_symbol = true;
                        if let Some(t) = &target {
                            let (scored, _) = self.score(t, std::slice::from_ref(&h.symbol));
                            let sc = scored.scores.first().copied().unwrap_or(0.0);
                            let ti = tier(sc);
                            rel = json!({"score": sc, "tier": ti, "method": scored.method});
                            if ti == Tier::Rejected {
                                counts_as_symbol = false;
                            } else if let Some(f) = s.frame.as_mut() {
                                f.mapped_symbols.retain(|m| m.symbol != h.symbol);
                                f.mapped_symbols.push(MappedSymbol { symbol: h.symbol.clone(), source: Source::Fact, score: sc, tier: ti, method: scored.method.clone(), code_evidence: None });
                                if ti == Tier::Accepted {
                                    s.risk_level = RiskLevel::High;
                                    s.risk_reasons.push(format!("grey-zone relevance of verified {:?}", h.symbol));
                                }
                            }
                        }
                        if counts_as_symbol && !u.symbols.contains(&h.symbol) {
                            u.symbols.push(h.symbol.clone());
                        }
                        if !u.files.contains(&site.file) {
                            u.files.push(site.file.clone());
                        }
                        s.explored_files.insert(site.file.clone());
                        s.explored_dirs.insert(parent_dir(&site.file));
                        verdicts.push(json!({"hypothesis": h.id, "symbol": h.symbol, "status": "FACT", "site": site, "relevance": rel}));
                    }
                    Err(why) => {
                        let hs = &mut s.hypotheses[idx];
                        hs.status = HypothesisStatus::Rejected;
                        hs.verdict = Some(why.clone());
                        verdicts.push(json!({"hypothesis": h.id, "symbol": h.symbol, "status": "REJECTED", "reason": why}));
                    }
                }
            }
            // Slot evidence gathered during verification.
            let frame = s.frame.clone().unwrap_or_default();
            let mut resolved = frame.resolved.clone();
            for (k, v) in resolved_frame {
                match k.parse::<Slot>() {
                    Ok(slot) => {
                        if let Some(v) = v.as_ref().map(|v| v.trim()).filter(|v| !v.is_empty()) {
                            resolved.insert(slot, v.to_string());
                        }
                    }
                    Err(_) => errors.push(format!("resolved_frame: unknown slot {k:?}")),
                }
            }
            let evidence = self.check_slot_evidence(slot_evidence, &calls, s, &frame, &resolved, 0, &mut errors);
            if let Some(f) = s.frame.as_mut() {
                f.resolved = resolved.clone();
                f.slot_evidence = evidence.clone();
            }
            // Re-evaluate.
            let u = s.understanding.clone().unwrap_or_default();
            let req = requirements_for(s.intent, s.risk_level);
            let counts = Counts {
                symbols: u.symbols.len(),
                entry_points: u.entry_points.iter().filter(|e| u.symbols.contains(e)).count(),
                files: u.files.len(),
                patterns: u.patterns.len(),
            };
            let target_resolved = resolved.contains_key(&Slot::TargetFeature) || frame.has(Slot::TargetFeature);
            let mut missing = evaluate(req, &counts, &evidence.keys().copied().collect::<Vec<_>>(), target_resolved);
            let pending = s.pending_hypotheses().len();
            if pending > 0 {
                missing.push(Missing {
                    kind: "unverified_hypotheses".into(),
                    message: format!("{pending} hypothesis(es) still HYPOTHESIS: verify or reject each"),
                    semantic_reasons: vec![],
                });
            }
            let rejected_names: Vec<String> =
                s.hypotheses.iter().filter(|h| h.status == HypothesisStatus::Rejected).map(|h| h.symbol.clone()).collect();
            s.missing_requirements.clone_from(&missing);
            let at = now();
            if missing.is_empty() {
                s.transition(Phase::Ready, &at, "hypotheses verified, requirements met");
            }
            Ok(json!({
                "session_id": s.id,
                "verdicts": verdicts,
                "errors": errors,
                "next_phase": s.phase,
                "risk_level": s.risk_level,
                "requirements": req,
                "have": counts,
                "missing_requirements": missing,
                "rejected_hypotheses": rejected_names,
                "note": if rejected_names.is_empty() { Value::Null } else { json!("rejected hypotheses count for nothing: nothing may be built on them") },
                "next_step": next_step(s),
            }))
        })
    }

    fn verify(
        &self,
        h: &Hypothesis,
        ev: Option<&VerificationEvidence>,
        calls: &[Call],
        epoch: u32,
    ) -> std::result::Result<SymbolSite, String> {
        let ev = ev.ok_or("confirmed without evidence: give evidence {tool, file, line} from an exact tool call")?;
        if !EVIDENCE_TOOLS.contains(&ev.tool.as_str()) {
            return Err(format!("{:?} is not an exact tool; verify with {}", ev.tool, EVIDENCE_TOOLS.join(", ")));
        }
        let claimed_file = match ev.file.as_deref().or(h.file.as_deref()) {
            Some(f) => Some(self.root.normalize(f).map_err(|e| e.to_string())?),
            None => None,
        };
        let forms = symbol_forms(&h.symbol);
        let backing = calls.iter().rev().find(|c| {
            c.epoch == epoch
                && !c.refused
                && c.id > h.created_after_call
                && c.tool == ev.tool
                && ev.params.as_ref().is_none_or(|p| params_contain(&c.params, p))
                && (c.summary.symbols.iter().any(|s| forms.contains(s))
                    || claimed_file.as_ref().is_some_and(|f| c.summary.files.contains(f) || c.summary.read.contains(f)))
        });
        if backing.is_none() {
            return Err(format!(
                "no {} call after the hypothesis returned {:?}{}; run it with session_id and submit again",
                ev.tool,
                h.symbol,
                claimed_file.as_ref().map(|f| format!(" or {f}")).unwrap_or_default()
            ));
        }
        let defs = self.services.index.definitions(&h.symbol).map_err(|e| format!("symbol index: {e}"))?;
        if defs.is_empty() {
            return Err(format!("{:?} is not defined anywhere in the index", h.symbol));
        }
        let line = ev.line.or(h.line);
        let site = defs.iter().find(|d| {
            claimed_file.as_ref().is_none_or(|f| &d.file == f)
                && line.is_none_or(|l| d.start_line <= l && l <= d.end_line)
        });
        site.cloned().ok_or_else(|| {
            format!(
                "{:?} is not defined at the claimed place ({}{}); the index has it at {}",
                h.symbol,
                claimed_file.as_deref().unwrap_or("?"),
                line.map(|l| format!(":{l}")).unwrap_or_default(),
                defs.iter().map(|d| format!("{}:{}-{}", d.file, d.start_line, d.end_line)).collect::<Vec<_>>().join(", ")
            )
        })
    }

    // ------------------------------------------------------------ write gate

    /// `check_write_target(session_id, path)`.
    ///
    /// # Errors
    /// Unknown session; a path outside the repository.
    pub fn check_write_target(&self, session_id: &str, path: &str) -> Result<Value> {
        let rel = self.normalize("path", path)?;
        if rel.is_empty() {
            return Err(SessionError::invalid("path", "give a file path, not the repository root"));
        }
        let exists = self.root.path().join(&rel).exists();
        self.with_session(session_id, |conn, s| {
            let decision = write_decision(s, &rel, exists);
            let refused = decision.get("reason").and_then(Value::as_str).filter(|_| decision["allowed"] == json!(false)).map(str::to_string);
            Self::insert_call(conn, s, "check_write_target", &json!({"path": rel}), &ToolSummary::default(), refused.as_deref())?;
            Ok(decision)
        })
    }

    /// The session an editor hook guards: the most recently active session
    /// without an outcome.
    ///
    /// # Errors
    /// Store errors.
    pub fn active_session(&self) -> Result<Option<String>> {
        let store = self.lock();
        Ok(db::latest_open_session(store.conn())?.map(|r| r.id))
    }

    /// `add_explored_files(session_id, paths)`: READY only; each path must have
    /// been returned or read by a tool in this session (a new file: its parent
    /// directory).
    ///
    /// # Errors
    /// Unknown session, wrong phase, paths outside the repository.
    pub fn add_explored_files(&self, session_id: &str, paths: &[String]) -> Result<Value> {
        if paths.is_empty() {
            return Err(SessionError::invalid("paths", "give at least one path"));
        }
        let mut norm = Vec::new();
        for p in paths {
            norm.push(self.normalize("paths", p)?);
        }
        self.with_session(session_id, |conn, s| {
            if s.closed_at.is_some() {
                return Err(SessionError::Closed(s.id.clone()));
            }
            if !s.intent.writes() {
                return Err(SessionError::ReadOnlySession { action: "add_explored_files".into(), intent: s.intent });
            }
            if s.phase != Phase::Ready {
                return Err(SessionError::WrongPhase {
                    action: "add_explored_files".into(),
                    phase: s.phase,
                    reason: "files are added to a READY session's write set".into(),
                    next: next_step(s),
                });
            }
            let calls = Self::calls(conn, &s.id)?;
            let seen = self.seen(&calls, s.epoch);
            let mut added = Vec::new();
            let mut refused = Vec::new();
            for p in &norm {
                let abs = self.root.path().join(p);
                if abs.is_dir() {
                    if seen.dirs.contains(p) {
                        s.explored_dirs.insert(p.clone());
                        added.push(json!({"path": p, "kind": "directory"}));
                    } else {
                        refused.push(json!({"path": p, "why": "directory not explored in this session: run analyze_structure on it (with session_id) first"}));
                    }
                } else if abs.exists() {
                    if seen.files.contains(p) {
                        s.explored_files.insert(p.clone());
                        s.explored_dirs.insert(parent_dir(p));
                        added.push(json!({"path": p, "kind": "file"}));
                    } else {
                        refused.push(json!({"path": p, "why": "no tool returned or read this file in this session: read it with get_function_at_line / analyze_structure (with session_id) first"}));
                    }
                } else {
                    let parent = parent_dir(p);
                    if seen.dirs.contains(&parent) || s.explored_dirs.contains(&parent) {
                        s.explored_files.insert(p.clone());
                        added.push(json!({"path": p, "kind": "new file"}));
                    } else {
                        refused.push(json!({"path": p, "why": format!("new file whose directory {:?} was not explored: run analyze_structure on it (with session_id) first", if parent.is_empty() { "." } else { &parent })}));
                    }
                }
            }
            Ok(json!({
                "session_id": s.id,
                "phase": s.phase,
                "added": added,
                "refused": refused,
                "explored_files": s.explored_files,
            }))
        })
    }

    /// `revert_to_exploration(session_id, keep_results)`.
    ///
    /// # Errors
    /// Unknown session.
    pub fn revert_to_exploration(&self, session_id: &str, keep_results: bool) -> Result<Value> {
        self.with_session(session_id, |_conn, s| {
            if s.closed_at.is_some() {
                return Err(SessionError::Closed(s.id.clone()));
            }
            let from = s.phase;
            let at = now();
            if keep_results {
                s.hypotheses.retain(|h| h.status == HypothesisStatus::Fact);
            } else {
                s.epoch += 1;
                s.understanding = None;
                s.hypotheses.clear();
                s.explored_files.clear();
                s.explored_dirs.clear();
                s.semantic_reason = None;
                if let Some(f) = s.frame.as_mut() {
                    f.mapped_symbols.clear();
                    f.slot_evidence.clear();
                    f.resolved.clear();
                }
            }
            s.missing_requirements.clear();
            s.transition(Phase::Exploration, &at, format!("revert_to_exploration(keep_results={keep_results})"));
            Ok(json!({
                "session_id": s.id,
                "from_phase": from,
                "phase": s.phase,
                "kept": keep_results,
                "explored_files": s.explored_files,
                "understanding": s.understanding,
                "note": if keep_results {
                    "results kept: explored files and verified facts remain; tool calls so far still count as evidence"
                } else {
                    "results discarded: earlier tool calls no longer count as evidence; explore again"
                },
                "next_step": "explore with exact tools (session_id on every call), then submit_understanding with the full evidence",
            }))
        })
    }

    // --------------------------------------------------------------- outcome

    /// `record_outcome(session_id, outcome, analysis, phase_at_outcome?)`.
    ///
    /// An outcome is recorded once. On a closed session, the outcome it was
    /// closed with again (a client retrying an answer it lost) writes
    /// nothing and returns what was recorded (`already_recorded`); `failure`
    /// after `success` or `partial` retracts what the session taught: its
    /// learned pairs, its agreement (row, file and map entry) go, and the
    /// failure is logged; any other outcome is refused
    /// ([`SessionError::OutcomeRecorded`]). The agreement's id derives from
    /// the session's, so a retry after a crash that lost the first attempt
    /// rewrites the same file instead of adding a second.
    ///
    /// # Errors
    /// Unknown session; another outcome on a closed session; agreement file
    /// cannot be written.
    #[allow(clippy::too_many_lines)]
    pub fn record_outcome(&self, session_id: &str, outcome: Outcome, analysis: &str, phase_at_outcome: Option<Phase>) -> Result<Value> {
        let ttl = self.config.learned_pair_ttl_days;
        let agreements_dir = code_intel_core::config::state_dir(self.root.path()).join("agreements");
        let mut agreement_for_map: Option<(Agreement, String)> = None;
        let mut retracted: Vec<String> = Vec::new();
        let mut out = self.with_session(session_id, |conn, s| {
            let recorded = if s.closed_at.is_some() { db::outcomes(conn, &s.id)?.pop() } else { None };
            if let Some(recorded) = &recorded {
                if recorded.outcome == outcome.to_string() {
                    return Ok(Self::recorded_outcome(conn, s, recorded)?);
                }
                if outcome != Outcome::Failure || recorded.outcome == Outcome::Failure.to_string() {
                    return Err(SessionError::OutcomeRecorded { id: s.id.clone(), recorded: recorded.outcome.clone() });
                }
            }
            let calls = Self::calls(conn, &s.id)?;
            let tools_used: BTreeSet<&str> = calls.iter().filter(|c| !c.refused).map(|c| c.tool.as_str()).collect();
            let semantic_used = !s.hypotheses.is_empty()
                || calls.iter().any(|c| !c.refused && c.tool == "semantic_search" && c.params.get("collection").and_then(Value::as_str) != Some("map"));
            let phase = phase_at_outcome.unwrap_or(s.phase);
            let last_refusal = db::tool_calls(conn, &s.id)?.into_iter().rev().find_map(|r| r.refused.map(|why| json!({"tool": r.tool, "phase": r.phase, "why": why})));
            let detail = json!({
                "missing_requirements": s.missing_requirements,
                "last_refusal": last_refusal,
                "rejected_hypotheses": s.hypotheses.iter().filter(|h| h.status == HypothesisStatus::Rejected).map(|h| &h.symbol).collect::<Vec<_>>(),
            });
            let at = now();
            let outcome_id = db::insert_outcome(
                conn,
                &db::OutcomeRow {
                    id: 0,
                    session_id: s.id.clone(),
                    outcome: outcome.to_string(),
                    phase_at_outcome: phase.to_string(),
                    intent: s.intent.to_string(),
                    risk_level: s.risk_level.to_string(),
                    semantic_used,
                    tools_used_json: serde_json::to_string(&tools_used).unwrap_or_default(),
                    analysis: analysis.to_string(),
                    detail_json: detail.to_string(),
                    created_at: at.clone(),
                },
            )?;
            let mut result = json!({
                "recorded": true,
                "session_id": s.id,
                "outcome_id": outcome_id,
                "outcome": outcome,
                "phase_at_outcome": phase,
                "session_closed": true,
            });
            match outcome {
                Outcome::Success => {
                    let frame = s.frame.clone().unwrap_or_default();
                    let facts: Vec<&MappedSymbol> = frame.mapped_symbols.iter().filter(|m| m.source == Source::Fact && m.tier != Tier::Rejected).collect();
                    // The NL side of the pair: the request's own words first, else what
                    // exploration resolved.
                    let term = frame.slots.get(&Slot::TargetFeature).map(|x| x.value.as_str()).or_else(|| frame.value(Slot::TargetFeature));
                    match (term, facts.is_empty()) {
                        (Some(term), false) => {
                            let id = agreement_id(&s.id);
                            let rel_path = format!("{}/agreements/{id}.md", code_intel_core::config::STATE_DIR_NAME);
                            let mut evidence: Vec<String> = frame
                                .slot_evidence
                                .iter()
                                .map(|(slot, e)| format!("{slot}: {} {} -> {}", e.tool, e.params.as_ref().map(Value::to_string).unwrap_or_default(), e.result))
                                .collect();
                            evidence.extend(facts.iter().filter_map(|m| m.code_evidence.as_ref().map(|e| format!("{}: {e}", m.symbol))));
                            let files: Vec<String> = s.explored_files.iter().cloned().collect();
                            let a = Agreement {
                                id: id.clone(),
                                nl_term: term.to_string(),
                                query: s.query.clone(),
                                intent: s.intent.to_string(),
                                symbols: facts
                                    .iter()
                                    .map(|m| AgreementSymbol { symbol: m.symbol.clone(), score: m.score, method: m.method.clone(), code_evidence: m.code_evidence.clone() })
                                    .collect(),
                                files: files.clone(),
                                code_evidence: evidence,
                                session_id: s.id.clone(),
                                created_at: at.clone(),
                                path: rel_path.clone(),
                            };
                            let md = agreement::render(&a);
                            std::fs::create_dir_all(&agreements_dir).map_err(|source| SessionError::Io { what: format!("creating {}", agreements_dir.display()), source })?;
                            let final_path = agreements_dir.join(format!("{id}.md"));
                            let tmp = agreements_dir.join(format!(".{id}.md.tmp"));
                            std::fs::write(&tmp, &md).and_then(|()| std::fs::rename(&tmp, &final_path)).map_err(|source| SessionError::Io { what: format!("writing {}", final_path.display()), source })?;
                            db::save_agreement(conn, &db::AgreementRow {
                                id: id.clone(),
                                session_id: s.id.clone(),
                                nl_term: term.to_string(),
                                symbols_json: serde_json::to_string(&a.symbols.iter().map(|x| &x.symbol).collect::<Vec<_>>()).unwrap_or_default(),
                                files_json: serde_json::to_string(&files).unwrap_or_default(),
                                path: rel_path.clone(),
                                created_at: at.clone(),
                            })?;
                            let expires = in_days(ttl);
                            for m in &facts {
                                db::upsert_learned_pair(conn, &db::LearnedPairRow {
                                    id: 0,
                                    nl_term: term.to_string(),
                                    symbol: m.symbol.clone(),
                                    similarity: f64::from(m.score),
                                    method: m.method.clone(),
                                    code_evidence: m.code_evidence.clone().unwrap_or_default(),
                                    session_id: s.id.clone(),
                                    learned_at: at.clone(),
                                    expires_at: expires.clone(),
                                })?;
                            }
                            result["agreement"] = json!({"id": id, "path": rel_path, "nl_term": term, "symbols": a.symbols.iter().map(|x| &x.symbol).collect::<Vec<_>>(), "files": files});
                            result["learned_pairs"] = json!({"added": facts.len(), "expires_at": expires, "ttl_days": ttl});
                            agreement_for_map = Some((a, md));
                        }
                        (None, _) => result["agreement"] = json!({"written": false, "why": "the session has no target_feature, so there is no NL term to map"}),
                        (_, true) => result["agreement"] = json!({"written": false, "why": "no FACT symbol was mapped to the target feature (submit_understanding / validate_symbol_relevance)"}),
                    }
                }
                Outcome::Failure => {
                    let dropped = db::delete_learned_pairs_of_session(conn, &s.id)?;
                    if dropped > 0 {
                        result["learned_pairs_dropped"] = json!(dropped);
                    }
                    // A success recorded earlier is taken back whole: the
                    // file first (a crash before the commit leaves the row
                    // and the success, and a retry deletes again).
                    for a in db::delete_agreements_of_session(conn, &s.id)? {
                        let file = self.root.path().join(&a.path);
                        match std::fs::remove_file(&file) {
                            Ok(()) => {}
                            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                            Err(source) => return Err(SessionError::Io { what: format!("removing {}", file.display()), source }),
                        }
                        retracted.push(a.id);
                    }
                    if let Some(recorded) = &recorded {
                        result["replaces_outcome"] = json!(recorded.outcome);
                        result["agreements_retracted"] = json!(retracted);
                    }
                }
                Outcome::Partial => {}
            }
            if s.closed_at.is_none() {
                s.closed_at = Some(at);
            }
            Ok(result)
        })?;
        if let Some((a, md)) = agreement_for_map {
            out["map"] = match self.services.map.add(&a, &md) {
                Ok(()) => json!("added"),
                Err(e) => json!(format!("not added: {e}; the agreement file is kept and the map is rebuilt from it on the next sync")),
            };
        }
        for id in &retracted {
            if let Err(e) = self.services.map.remove(id) {
                out["map"] = json!(format!("not removed: {e}; the agreement file is gone and the map drops it on the next start"));
            }
        }
        Ok(out)
    }

    /// The answer of an outcome already recorded, for a client retrying it:
    /// the outcome row and the agreement it wrote, read back; nothing is
    /// written.
    fn recorded_outcome(conn: &Connection, s: &SessionState, recorded: &db::OutcomeRow) -> Result<Value> {
        let mut result = json!({
            "recorded": true,
            "already_recorded": true,
            "session_id": s.id,
            "outcome_id": recorded.id,
            "outcome": recorded.outcome,
            "phase_at_outcome": recorded.phase_at_outcome,
            "recorded_at": recorded.created_at,
            "session_closed": true,
            "note": "this outcome was recorded before (a retry?): nothing was written again",
        });
        if let Some(a) = db::agreements_of_session(conn, &s.id)?.into_iter().last() {
            let symbols: Value = serde_json::from_str(&a.symbols_json).unwrap_or(Value::Null);
            let files: Value = serde_json::from_str(&a.files_json).unwrap_or(Value::Null);
            result["agreement"] = json!({"id": a.id, "path": a.path, "nl_term": a.nl_term, "symbols": symbols, "files": files});
        }
        Ok(result)
    }

    // --------------------------------------------------------------- reports

    /// `get_session_status(session_id)`.
    ///
    /// # Errors
    /// Unknown session.
    pub fn get_session_status(&self, session_id: &str) -> Result<Value> {
        let store = self.lock();
        let conn = store.conn();
        let s = Self::load(&conn, session_id)?;
        let calls = Self::calls(&conn, &s.id)?;
        let req = requirements_for(s.intent, s.risk_level);
        let used: BTreeSet<&str> = calls.iter().filter(|c| c.epoch == s.epoch && !c.refused).map(|c| c.tool.as_str()).collect();
        Ok(json!({
            "session_id": s.id,
            "intent": s.intent,
            "query": s.query,
            "phase": s.phase,
            "risk_level": s.risk_level,
            "risk_reasons": s.risk_reasons,
            "closed": s.closed_at.is_some(),
            "query_frame": s.frame,
            "requirements": req,
            "understanding": s.understanding,
            "missing_requirements": s.missing_requirements,
            "hypotheses": s.hypotheses,
            "explored_files": s.explored_files,
            "explored_dirs": s.explored_dirs,
            "tools_used": used,
            "tool_calls": calls.len(),
            "refused_calls": calls.iter().filter(|c| c.refused).count(),
            "allowed_tools": matrix::allowed_tools(s.phase),
            "map_hints": s.map_hints,
            "history": s.history,
            "created_at": s.created_at,
            "updated_at": s.updated_at,
            "next_step": next_step(&s),
        }))
    }

    /// `get_session_analysis(session_id)`: decision + outcomes + failure point.
    ///
    /// # Errors
    /// Unknown session.
    pub fn get_session_analysis(&self, session_id: &str) -> Result<Value> {
        let store = self.lock();
        let conn = store.conn();
        let s = Self::load(&conn, session_id)?;
        let decisions = db::decisions(&conn, &s.id)?;
        let outcomes = db::outcomes(&conn, &s.id)?;
        let calls = db::tool_calls(&conn, &s.id)?;
        let decision = decisions.last().map(decision_json);
        let final_outcome = outcomes.last().map(|o| o.outcome.clone());
        let failure_point = outcomes.last().filter(|o| o.outcome != "success").map(|o| {
            let detail: Value = serde_json::from_str(&o.detail_json).unwrap_or(Value::Null);
            json!({
                "phase": o.phase_at_outcome,
                "risk_level": o.risk_level,
                "last_tool": calls.iter().rev().find(|c| c.refused.is_none()).map(|c| &c.tool),
                "last_refusal": detail.get("last_refusal"),
                "missing_requirements": detail.get("missing_requirements"),
                "rejected_hypotheses": detail.get("rejected_hypotheses"),
            })
        });
        let tools_planned: Vec<String> = decisions
            .last()
            .and_then(|d| serde_json::from_str(&d.tools_planned_json).ok())
            .unwrap_or_default();
        let tools_used: BTreeSet<&str> = calls.iter().filter(|c| c.refused.is_none()).map(|c| c.tool.as_str()).collect();
        Ok(json!({
            "session_id": s.id,
            "intent": s.intent,
            "query": s.query,
            "phase": s.phase,
            "decision": decision,
            "decisions": decisions.len(),
            "outcomes": outcomes.iter().map(|o| json!({
                "id": o.id, "outcome": o.outcome, "phase_at_outcome": o.phase_at_outcome,
                "risk_level": o.risk_level, "semantic_used": o.semantic_used, "analysis": o.analysis,
                "tools_used": serde_json::from_str::<Value>(&o.tools_used_json).unwrap_or(Value::Null),
                "created_at": o.created_at,
            })).collect::<Vec<_>>(),
            "agreements": db::agreements_of_session(&conn, &s.id)?.iter().map(|a| json!({"id": a.id, "path": a.path, "nl_term": a.nl_term})).collect::<Vec<_>>(),
            "analysis": {
                "had_decision": !decisions.is_empty(),
                "had_outcome": !outcomes.is_empty(),
                "final_outcome": final_outcome,
                "tools_planned": tools_planned,
                "tools_used": tools_used,
                "planned_not_used": tools_planned.iter().filter(|t| !tools_used.contains(t.as_str())).collect::<Vec<_>>(),
                "refused_calls": calls.iter().filter(|c| c.refused.is_some()).count(),
                "phase_history": s.history,
                "failure_point": failure_point,
            },
        }))
    }

    /// `get_improvement_insights(limit)`: failure correlations over the last
    /// `limit` outcomes, by tool, risk level and phase.
    ///
    /// # Errors
    /// Store errors.
    pub fn get_improvement_insights(&self, limit: u32) -> Result<Value> {
        let store = self.lock();
        let conn = store.conn();
        let outcomes = db::recent_outcomes(&conn, limit.max(1))?;
        // The latest outcome of each session is its verdict.
        let mut by_session: BTreeMap<String, &db::OutcomeRow> = BTreeMap::new();
        for o in &outcomes {
            by_session.entry(o.session_id.clone()).or_insert(o);
        }
        let mut with_decisions = 0;
        let mut tools: BTreeMap<String, (u32, u32)> = BTreeMap::new();
        let mut risks: BTreeMap<String, (u32, u32)> = BTreeMap::new();
        let mut phases: BTreeMap<String, u32> = BTreeMap::new();
        let mut semantic: BTreeMap<bool, (u32, u32)> = BTreeMap::new();
        let mut refusals: BTreeMap<String, u32> = BTreeMap::new();
        for (sid, o) in &by_session {
            if !db::decisions(&conn, sid)?.is_empty() {
                with_decisions += 1;
            }
            let failed = u32::from(o.outcome != "success");
            let used: Vec<String> = serde_json::from_str(&o.tools_used_json).unwrap_or_default();
            for t in used {
                let e = tools.entry(t).or_default();
                e.0 += 1;
                e.1 += failed;
            }
            let e = risks.entry(o.risk_level.clone()).or_default();
            e.0 += 1;
            e.1 += failed;
            let e = semantic.entry(o.semantic_used).or_default();
            e.0 += 1;
            e.1 += failed;
            if failed == 1 {
                *phases.entry(o.phase_at_outcome.clone()).or_default() += 1;
                for c in db::tool_calls(&conn, sid)? {
                    if c.refused.is_some() {
                        *refusals.entry(c.tool).or_default() += 1;
                    }
                }
            }
        }
        let rate = |(n, f): (u32, u32)| json!({"sessions": n, "failures": f, "failure_rate": if n == 0 { 0.0 } else { f64::from(f) / f64::from(n) }});
        let mut tool_list: Vec<(String, (u32, u32))> = tools.into_iter().collect();
        tool_list.sort_by(|a, b| {
            let ra = f64::from(a.1.1) / f64::from(a.1.0.max(1));
            let rb = f64::from(b.1.1) / f64::from(b.1.0.max(1));
            rb.total_cmp(&ra).then(b.1.0.cmp(&a.1.0))
        });
        Ok(json!({
            "outcomes_considered": outcomes.len(),
            "total_sessions_with_outcomes": by_session.len(),
            "sessions_with_decisions": with_decisions,
            "tool_failure_correlation": tool_list.into_iter().map(|(t, c)| { let mut v = rate(c); v["tool"] = json!(t); v }).collect::<Vec<_>>(),
            "risk_level_correlation": risks.into_iter().map(|(r, c)| (r, rate(c))).collect::<serde_json::Map<_, _>>(),
            "semantic_search_correlation": semantic.into_iter().map(|(u, c)| (if u { "used" } else { "not_used" }.to_string(), rate(c))).collect::<serde_json::Map<_, _>>(),
            "common_failure_points": phases,
            "refusals_in_failed_sessions": refusals,
        }))
    }
}

fn decision_json(d: &db::DecisionRow) -> Value {
    json!({
        "id": d.id,
        "query": d.query,
        "intent": d.intent,
        "missing_slots": serde_json::from_str::<Value>(&d.missing_slots_json).unwrap_or(Value::Null),
        "risk_level": d.risk_level,
        "tools_planned": serde_json::from_str::<Value>(&d.tools_planned_json).unwrap_or(Value::Null),
        "timestamp": d.created_at,
        "session_id": d.session_id,
    })
}

/// The write-gate decision for a normalised path. Only an IMPLEMENT or
/// MODIFY session in READY ever allows a write; a refusal's recovery
/// options name only calls the session's current phase accepts
/// ([`recovery_options`]).
fn write_decision(s: &SessionState, rel: &str, exists: bool) -> Value {
    let refuse = |reason: String, next: String| {
        json!({"allowed": false, "session_id": s.id, "path": rel, "phase": s.phase, "reason": reason, "next_step": next,
            "recovery_options": recovery_options(s, rel)})
    };
    if s.closed_at.is_some() {
        return refuse("the session is closed (an outcome was recorded)".into(), "start_session for the new change".into());
    }
    if !s.intent.writes() {
        return refuse(
            format!("a {} session never writes; only an IMPLEMENT or MODIFY session in READY may edit files", s.intent),
            "start_session(IMPLEMENT or MODIFY, the request) for the change".into(),
        );
    }
    if s.phase != Phase::Ready {
        return refuse(format!("writes are allowed only in READY; the session is in {}", s.phase), next_step(s));
    }
    if !s.pending_hypotheses().is_empty() {
        return refuse(
            "unverified hypotheses remain".into(),
            "revert_to_exploration(session_id, keep_results=true) and confirm them with exact tools".into(),
        );
    }
    if s.explored_files.contains(rel) {
        return json!({"allowed": true, "session_id": s.id, "path": rel, "phase": s.phase, "reason": "file explored in this session"});
    }
    let parent = parent_dir(rel);
    if !exists && s.explored_dirs.contains(&parent) {
        return json!({"allowed": true, "session_id": s.id, "path": rel, "phase": s.phase,
            "reason": format!("new file in explored directory {:?}", if parent.is_empty() { "." } else { &parent })});
    }
    let reason = if exists {
        format!("{rel} was not explored in this session")
    } else {
        format!("{rel} is a new file and its directory {:?} was not explored in this session", if parent.is_empty() { "." } else { &parent })
    };
    refuse(reason, "read the file with a code tool (session_id), then add_explored_files; or revert_to_exploration".into())
}

/// What a refused write can do next: only calls that the session's phase
/// and intent accept (a closed session: a new session).
#[must_use]
pub fn recovery_options(s: &SessionState, rel: &str) -> Value {
    let new_session = json!({"tool": "start_session", "args": {"intent": "MODIFY", "query": "<the request, verbatim>"},
        "effect": "a new IMPLEMENT or MODIFY session; writes open once it reaches READY with the file explored"});
    let revert = json!({"tool": "revert_to_exploration", "args": {"session_id": s.id, "keep_results": true},
        "effect": "back to EXPLORATION to explore the file properly, keeping what was found"});
    if s.closed_at.is_some() || !s.intent.writes() {
        return json!([new_session]);
    }
    match s.phase {
        Phase::Exploration if s.frame.is_none() => json!([
            {"tool": "set_query_frame", "args": {"session_id": s.id},
             "effect": "the request's slots; then explore with exact tools and submit_understanding"},
        ]),
        Phase::Exploration => json!([
            {"tool": "submit_understanding", "args": {"session_id": s.id},
             "effect": "after exploring with exact tools (session_id on every call): READY when the evidence suffices, then files read in this session may be written"},
        ]),
        Phase::Semantic => json!([
            {"tool": "submit_semantic", "args": {"session_id": s.id},
             "effect": "hypotheses from semantic_search move the session to VERIFICATION"},
            revert,
        ]),
        Phase::Verification if s.pending_hypotheses().is_empty() => json!([revert]),
        Phase::Verification => json!([
            {"tool": "submit_verification", "args": {"session_id": s.id},
             "effect": "confirmed hypotheses (checked with exact tools) move the session to READY"},
            revert,
        ]),
        Phase::Ready if !s.pending_hypotheses().is_empty() => json!([revert]),
        Phase::Ready => json!([
            {"tool": "add_explored_files", "args": {"session_id": s.id, "paths": [rel]},
             "effect": "stays READY; allowed once a tool has read the file (or, for a new file, its directory) in this session"},
            revert,
        ]),
    }
}

/// The next allowed step for a session, in words.
#[must_use]
pub fn next_step(s: &SessionState) -> String {
    if s.closed_at.is_some() {
        return "the session is closed; start_session for new work".into();
    }
    match s.phase {
        Phase::Exploration if s.frame.is_none() && s.intent != Intent::Question => {
            "set_query_frame(session_id, slots) with a verbatim quote per slot".into()
        }
        Phase::Exploration => {
            "explore with exact tools (session_id on every call), then submit_understanding".into()
        }
        Phase::Semantic => format!(
            "semantic_search (forest allowed) / search_text for the missing items ({}), then submit_semantic(hypotheses, semantic_reason)",
            s.missing_requirements.iter().map(|m| m.kind.as_str()).collect::<Vec<_>>().join(", ")
        ),
        Phase::Verification => {
            let pending = s.pending_hypotheses();
            if pending.is_empty() {
                format!(
                    "requirements still missing ({}): revert_to_exploration(keep_results=true) to gather more facts",
                    s.missing_requirements.iter().map(|m| m.kind.as_str()).collect::<Vec<_>>().join(", ")
                )
            } else {
                format!(
                    "verify {} with find_definitions / get_function_at_line, then submit_verification",
                    pending.iter().map(|h| format!("{} ({})", h.symbol, h.id)).collect::<Vec<_>>().join(", ")
                )
            }
        }
        Phase::Ready if !s.intent.writes() => format!(
            "answer from the code (any code tool, with session_id); record_outcome when done. A {} session never writes: start_session(IMPLEMENT or MODIFY) for a change",
            s.intent
        ),
        Phase::Ready => "check_write_target(session_id, path) before each edit; record_outcome when done".into(),
    }
}

/// Guidance after a symbol was rejected (seed 001 `_create_guidance`).
fn reinvestigation_guidance(nl: &str, symbol: &str) -> Value {
    json!({
        "reason": format!("{nl:?} and {symbol:?} are too dissimilar (< {})", crate::relevance::REJECT_THRESHOLD),
        "next_actions": [
            format!("search_text for words of {nl:?} to find other candidate symbols"),
            format!("find_references {symbol:?} to check whether it really takes part in {nl:?}"),
            "find code that proves the relation (a comment, a naming convention) and cite it as code_evidence in validate_symbol_relevance",
        ],
        "fallback": "if exact search finds nothing, the session moves to SEMANTIC, where semantic_search over code is allowed",
    })
}

/// The slot-extraction prompt returned by `start_session` (seed 000).
#[must_use]
pub fn extraction_prompt(query: &str) -> String {
    format!(
        "Extract the request into four slots. Rules: extract only what is stated; never guess or complete; \
a slot that is not stated is null. For each stated slot give \"value\" (normalised) and \"quote\" (copied \
verbatim from the request; the server rejects any quote that is not a literal substring).\n\
Slots: target_feature (feature/class/module concerned), trigger_condition (when it happens), \
observed_issue (what goes wrong), desired_action (what should change).\n\
Output: {{\"target_feature\": {{\"value\": ..., \"quote\": ...}} | null, \"trigger_condition\": ..., \
\"observed_issue\": ..., \"desired_action\": ...}}\n\
Request: {query}"
    )
}
