//! READY and the write gate: `check_write_target`, `add_explored_files`,
//! `revert_to_exploration`. Only an IMPLEMENT or MODIFY session in READY
//! ever allows a write.

use super::*;
use crate::results::{AddExploredResult, AddedPath, RecoveryOption, RefusedPath, RevertResult, WriteDecision, to_json};

impl Workflow {

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
            let refused = (!decision.allowed).then_some(decision.reason.as_str());
            Self::insert_call(conn, s, "check_write_target", &json!({"path": rel}), &ToolSummary::default(), refused)?;
            Ok(to_json(&decision))
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
                        added.push(AddedPath { path: p.clone(), kind: "directory".into() });
                    } else {
                        refused.push(RefusedPath { path: p.clone(), why: "directory not explored in this session: run analyze_structure on it (with session_id) first".into() });
                    }
                } else if abs.exists() {
                    if seen.files.contains(p) {
                        s.explored_files.insert(p.clone());
                        s.explored_dirs.insert(parent_dir(p));
                        added.push(AddedPath { path: p.clone(), kind: "file".into() });
                    } else {
                        refused.push(RefusedPath { path: p.clone(), why: "no tool returned or read this file in this session: read it with get_function_at_line / analyze_structure (with session_id) first".into() });
                    }
                } else {
                    let parent = parent_dir(p);
                    if seen.dirs.contains(&parent) || s.explored_dirs.contains(&parent) {
                        s.explored_files.insert(p.clone());
                        added.push(AddedPath { path: p.clone(), kind: "new file".into() });
                    } else {
                        refused.push(RefusedPath { path: p.clone(), why: format!("new file whose directory {:?} was not explored: run analyze_structure on it (with session_id) first", if parent.is_empty() { "." } else { &parent }) });
                    }
                }
            }
            Ok(to_json(&AddExploredResult {
                session_id: s.id.clone(),
                phase: s.phase,
                added,
                refused,
                explored_files: s.explored_files.clone(),
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
            Ok(to_json(&RevertResult {
                session_id: s.id.clone(),
                from_phase: from,
                phase: s.phase,
                kept: keep_results,
                explored_files: s.explored_files.clone(),
                understanding: s.understanding.clone(),
                note: if keep_results {
                    "results kept: explored files and verified facts remain; tool calls so far still count as evidence"
                } else {
                    "results discarded: earlier tool calls no longer count as evidence; explore again"
                }
                .into(),
                next_step: "explore with exact tools (session_id on every call), then submit_understanding with the full evidence".into(),
            }))
        })
    }
}

/// The write-gate decision for a normalised path. Only an IMPLEMENT or
/// MODIFY session in READY ever allows a write; a refusal's recovery
/// options name only calls the session's current phase accepts
/// ([`recovery_options`]).
fn write_decision(s: &SessionState, rel: &str, exists: bool) -> WriteDecision {
    let allow = |reason: String| WriteDecision {
        allowed: true,
        session_id: s.id.clone(),
        path: rel.to_string(),
        phase: s.phase,
        reason,
        next_step: None,
        recovery_options: None,
    };
    let refuse = |reason: String, next: String| WriteDecision {
        allowed: false,
        session_id: s.id.clone(),
        path: rel.to_string(),
        phase: s.phase,
        reason,
        next_step: Some(next),
        recovery_options: Some(recovery_options(s, rel)),
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
        return allow("file explored in this session".into());
    }
    let parent = parent_dir(rel);
    if !exists && s.explored_dirs.contains(&parent) {
        return allow(format!("new file in explored directory {:?}", if parent.is_empty() { "." } else { &parent }));
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
pub fn recovery_options(s: &SessionState, rel: &str) -> Vec<RecoveryOption> {
    let option = |tool: &str, args: Value, effect: &str| RecoveryOption {
        tool: tool.to_string(),
        args: match args {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        },
        effect: effect.to_string(),
    };
    let session = json!({"session_id": s.id});
    let revert = || {
        option(
            "revert_to_exploration",
            json!({"session_id": s.id, "keep_results": true}),
            "back to EXPLORATION to explore the file properly, keeping what was found",
        )
    };
    if s.closed_at.is_some() || !s.intent.writes() {
        return vec![option(
            "start_session",
            json!({"intent": "MODIFY", "query": "<the request, verbatim>"}),
            "a new IMPLEMENT or MODIFY session; writes open once it reaches READY with the file explored",
        )];
    }
    match s.phase {
        Phase::Exploration if s.frame.is_none() => vec![option(
            "set_query_frame",
            session,
            "the request's slots; then explore with exact tools and submit_understanding",
        )],
        Phase::Exploration => vec![option(
            "submit_understanding",
            session,
            "after exploring with exact tools (session_id on every call): READY when the evidence suffices, then files read in this session may be written",
        )],
        Phase::Semantic => vec![
            option("submit_semantic", session, "hypotheses from semantic_search move the session to VERIFICATION"),
            revert(),
        ],
        Phase::Verification if s.pending_hypotheses().is_empty() => vec![revert()],
        Phase::Verification => vec![
            option("submit_verification", session, "confirmed hypotheses (checked with exact tools) move the session to READY"),
            revert(),
        ],
        Phase::Ready if !s.pending_hypotheses().is_empty() => vec![revert()],
        Phase::Ready => vec![
            option(
                "add_explored_files",
                json!({"session_id": s.id, "paths": [rel]}),
                "stays READY; allowed once a tool has read the file (or, for a new file, its directory) in this session",
            ),
            revert(),
        ],
    }
}
