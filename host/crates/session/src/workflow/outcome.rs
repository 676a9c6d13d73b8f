//! `record_outcome`: closing a session, its agreement and learned pairs, and
//! the retraction a later `failure` makes.

use super::*;
use crate::results::{AgreementOutcome, LearnedPairsAdded, RecordOutcomeResult, to_json};

impl Workflow {

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
                    return Ok(Self::recorded_outcome(conn, s, outcome, recorded)?);
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
            let mut result = RecordOutcomeResult {
                recorded: true,
                already_recorded: None,
                session_id: s.id.clone(),
                outcome_id,
                outcome,
                phase_at_outcome: phase,
                recorded_at: None,
                session_closed: true,
                note: None,
                agreement: None,
                learned_pairs: None,
                learned_pairs_dropped: None,
                replaces_outcome: None,
                agreements_retracted: None,
                map: None,
            };
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
                            result.agreement = Some(AgreementOutcome {
                                written: true,
                                id: Some(id),
                                path: Some(rel_path),
                                nl_term: Some(term.to_string()),
                                symbols: Some(a.symbols.iter().map(|x| x.symbol.clone()).collect()),
                                files: Some(files),
                                why: None,
                            });
                            result.learned_pairs = Some(LearnedPairsAdded { added: facts.len(), expires_at: expires, ttl_days: ttl });
                            agreement_for_map = Some((a, md));
                        }
                        (None, _) => result.agreement = Some(AgreementOutcome::not_written("the session has no target_feature, so there is no NL term to map")),
                        (_, true) => result.agreement = Some(AgreementOutcome::not_written(
                            "no FACT symbol was mapped to the target feature (submit_understanding / validate_symbol_relevance)",
                        )),
                    }
                }
                Outcome::Failure => {
                    let dropped = db::delete_learned_pairs_of_session(conn, &s.id)?;
                    if dropped > 0 {
                        result.learned_pairs_dropped = Some(dropped);
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
                        result.replaces_outcome = recorded.outcome.parse().ok();
                        result.agreements_retracted = Some(retracted.clone());
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
            out.map = Some(match self.services.map.add(&a, &md) {
                Ok(()) => "added".to_string(),
                Err(e) => format!("not added: {e}; the agreement file is kept and the map is rebuilt from it on the next sync"),
            });
        }
        for id in &retracted {
            if let Err(e) = self.services.map.remove(id) {
                out.map = Some(format!("not removed: {e}; the agreement file is gone and the map drops it on the next start"));
            }
        }
        Ok(to_json(&out))
    }

    /// The answer of an outcome already recorded, for a client retrying it:
    /// the outcome row and the agreement it wrote, read back; nothing is
    /// written.
    fn recorded_outcome(conn: &Connection, s: &SessionState, outcome: Outcome, recorded: &db::OutcomeRow) -> Result<RecordOutcomeResult> {
        let agreement = db::agreements_of_session(conn, &s.id)?.into_iter().last().map(|a| AgreementOutcome {
            written: true,
            id: Some(a.id),
            path: Some(a.path),
            nl_term: Some(a.nl_term),
            symbols: serde_json::from_str(&a.symbols_json).ok(),
            files: serde_json::from_str(&a.files_json).ok(),
            why: None,
        });
        Ok(RecordOutcomeResult {
            recorded: true,
            already_recorded: Some(true),
            session_id: s.id.clone(),
            outcome_id: recorded.id,
            outcome,
            phase_at_outcome: recorded.phase_at_outcome.parse().unwrap_or(s.phase),
            recorded_at: Some(recorded.created_at.clone()),
            session_closed: true,
            note: Some("this outcome was recorded before (a retry?): nothing was written again".into()),
            agreement,
            learned_pairs: None,
            learned_pairs_dropped: None,
            replaces_outcome: None,
            agreements_retracted: None,
            map: None,
        })
    }
}
