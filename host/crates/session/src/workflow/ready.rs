//! READY and the write gate: `check_write_target`, `add_explored_files`,
//! `revert_to_exploration`. Only an IMPLEMENT or MODIFY session in READY
//! ever allows a write.

use super::*;

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
