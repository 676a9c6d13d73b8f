//! The end of SEMANTIC: `submit_semantic` records hypotheses and moves to
//! VERIFICATION.

use super::*;
use crate::results::{ReasonsForMissing, SubmitSemanticResult, to_json};

impl Workflow {

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
                let allowed: Vec<ReasonsForMissing> = s
                    .missing_requirements
                    .iter()
                    .map(|m| ReasonsForMissing { missing: m.kind.clone(), allowed_reasons: m.semantic_reasons.clone() })
                    .collect();
                return Ok(to_json(&SubmitSemanticResult {
                    accepted: false,
                    error: Some("semantic_reason_mismatch".into()),
                    message: Some(format!("semantic_reason {reason} does not fit anything that is missing")),
                    missing_requirements: Some(allowed),
                    phase: Some(s.phase),
                    next_step: "call submit_semantic again with a semantic_reason that fits one of the missing requirements".into(),
                    ..SubmitSemanticResult::default()
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
                return Ok(to_json(&SubmitSemanticResult {
                    accepted: false,
                    error: Some("inconsistent_evidence".into()),
                    errors: Some(errors),
                    phase: Some(s.phase),
                    next_step: "fix the listed hypotheses and call submit_semantic again".into(),
                    ..SubmitSemanticResult::default()
                }));
            }
            s.semantic_reason = Some(reason);
            s.hypotheses.extend(new.iter().cloned());
            let at = now();
            s.transition(Phase::Verification, &at, format!("{} hypothesis(es), reason {reason}", new.len()));
            Ok(to_json(&SubmitSemanticResult {
                accepted: true,
                session_id: Some(s.id.clone()),
                next_phase: Some(s.phase),
                semantic_reason: Some(reason),
                addresses: Some(fits),
                hypotheses: Some(new),
                next_step: "verify each hypothesis with an exact tool (find_definitions / get_function_at_line, with session_id), then submit_verification(results: [{hypothesis, confirmed, evidence: {tool, file, line}}])".into(),
                ..SubmitSemanticResult::default()
            }))
        })
    }
}
