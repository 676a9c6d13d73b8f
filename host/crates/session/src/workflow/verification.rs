//! The end of VERIFICATION: `submit_verification` confirms or rejects each
//! hypothesis against the index and the session's exact tool calls.

use super::*;
use crate::results::{SubmitVerificationResult, Verdict, VerdictRelevance, to_json};

impl Workflow {

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
            let mut verdicts: Vec<Verdict> = Vec::new();
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
                        let mut rel = None;
                        let mut counts_as_symbol = true;
                        if let Some(t) = &target {
                            let (scored, _) = self.score(t, std::slice::from_ref(&h.symbol));
                            let sc = scored.scores.first().copied().unwrap_or(0.0);
                            let ti = tier(sc);
                            rel = Some(VerdictRelevance { score: sc, tier: ti, method: scored.method.clone() });
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
                        verdicts.push(Verdict {
                            hypothesis: h.id.clone(),
                            symbol: h.symbol.clone(),
                            status: "FACT".into(),
                            site: Some(site),
                            relevance: rel,
                            reason: None,
                        });
                    }
                    Err(why) => {
                        let hs = &mut s.hypotheses[idx];
                        hs.status = HypothesisStatus::Rejected;
                        hs.verdict = Some(why.clone());
                        verdicts.push(Verdict {
                            hypothesis: h.id.clone(),
                            symbol: h.symbol.clone(),
                            status: "REJECTED".into(),
                            site: None,
                            relevance: None,
                            reason: Some(why),
                        });
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
            Ok(to_json(&SubmitVerificationResult {
                session_id: s.id.clone(),
                verdicts,
                errors,
                next_phase: s.phase,
                risk_level: s.risk_level,
                requirements: req.clone(),
                have: counts,
                missing_requirements: missing,
                note: (!rejected_names.is_empty())
                    .then(|| "rejected hypotheses count for nothing: nothing may be built on them".to_string()),
                rejected_hypotheses: rejected_names,
                next_step: next_step(s),
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
}
