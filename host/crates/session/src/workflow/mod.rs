//! The session workflow service: every operation of SPEC §8, persisted in
//! SQLite after each step (a restart loses nothing).
//!
//! Responses are JSON values shaped for an agent: what happened, why, and
//! the next allowed step. Errors are [`SessionError`]s naming what to fix.

mod gating;
mod guidance;
mod outcome;
mod ready;
mod relevance_check;
mod reports;
mod semantic;
mod start;
mod understanding;
mod verification;

pub use guidance::{extraction_prompt, next_step};
use guidance::reinvestigation_guidance;
pub use ready::recovery_options;

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
}
