//! The end of EXPLORATION: `submit_understanding` checks every claim against
//! the session's tool calls and the index, and moves to READY or SEMANTIC.

use super::*;
use crate::results::{RejectedSymbol, SubmitUnderstandingResult, SymbolScore, to_json};

impl Workflow {

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
                if let Some(recorded) = self.resubmitted(conn, s, input)? {
                    return Ok(to_json(&recorded));
                }
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
                return Ok(to_json(&SubmitUnderstandingResult {
                    accepted: false,
                    error: Some("inconsistent_evidence".into()),
                    errors: Some(errors),
                    phase: Some(s.phase),
                    next_step: "fix the listed items (every claim must match what a tool returned in this session) and call submit_understanding again".into(),
                    ..SubmitUnderstandingResult::default()
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
                return Ok(to_json(&SubmitUnderstandingResult {
                    accepted: false,
                    error: Some("required_tools_not_used".into()),
                    missing_tools: Some(missing_tools.iter().map(|t| (*t).to_string()).collect()),
                    phase: Some(s.phase),
                    next_step: format!("{} must use {} in this session before submitting; call {} (with session_id) and submit again", s.intent, req_now.tools.join(" and "), missing_tools.join(" and ")),
                    ..SubmitUnderstandingResult::default()
                }));
            }

            // NL -> symbol relevance.
            let target = resolved.get(&Slot::TargetFeature).cloned().or_else(|| frame.value(Slot::TargetFeature).map(str::to_string));
            let mut warnings = Vec::new();
            let mut relevance_report = Vec::new();
            let mut mapped: Vec<MappedSymbol> = Vec::new();
            let mut rejected: Vec<RejectedSymbol> = Vec::new();
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
                    relevance_report.push(SymbolScore { symbol: sym.clone(), score, tier: t, method: meth.clone() });
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
                        Tier::Rejected => rejected.push(RejectedSymbol {
                            symbol: sym.clone(),
                            score,
                            reinvestigation_guidance: reinvestigation_guidance(target, sym),
                        }),
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
                        "{:?} does not match target_feature {:?} (score {:.2} < {})",
                        r.symbol,
                        target.clone().unwrap_or_default(),
                        r.score,
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
            Ok(to_json(&SubmitUnderstandingResult {
                accepted: true,
                session_id: Some(s.id.clone()),
                next_phase: Some(s.phase),
                evaluated_confidence: Some(if missing.is_empty() { "high" } else { "low" }.into()),
                risk_level: Some(s.risk_level),
                risk_raised: Some(s.risk_level != old_risk),
                requirements: Some(req.clone()),
                have: Some(counts),
                missing_requirements: Some(missing),
                symbol_relevance: Some(relevance_report),
                relevance_method: method,
                rejected_symbols: Some(rejected),
                warnings: Some(warnings),
                explored_files: Some(s.explored_files.clone()),
                next_step: next_step(s),
                ..SubmitUnderstandingResult::default()
            }))
        })
    }

    /// The answer to a retried `submit_understanding`: when the session's
    /// last call was an accepted submission of the same understanding (a
    /// client whose answer was lost in a crash sends it again), what that
    /// submission established, read back; nothing is checked or written
    /// again. `None` for anything else, which the phase then refuses.
    fn resubmitted(&self, conn: &Connection, s: &SessionState, input: &UnderstandingInput) -> Result<Option<SubmitUnderstandingResult>> {
        if !matches!(s.phase, Phase::Ready | Phase::Semantic) {
            return Ok(None);
        }
        let Some(u) = &s.understanding else { return Ok(None) };
        let calls = Self::calls(conn, &s.id)?;
        let last = calls.iter().rev().find(|c| !c.refused);
        if !last.is_some_and(|c| c.tool == "submit_understanding" && c.epoch == s.epoch) {
            return Ok(None);
        }
        let trimmed = |v: &[String]| v.iter().map(|x| x.trim().to_string()).collect::<BTreeSet<_>>();
        let files: BTreeSet<String> = input.files_analyzed.iter().filter_map(|f| self.normalize("files_analyzed", f).ok()).collect();
        let named: BTreeSet<String> = input
            .symbols_identified
            .iter()
            .map(|c| match c {
                SymbolClaim::Name(n) | SymbolClaim::Detailed { name: n, .. } => n.trim().to_string(),
            })
            .collect();
        let same = files == u.files.iter().cloned().collect::<BTreeSet<_>>()
            && trimmed(&input.entry_points) == u.entry_points.iter().cloned().collect::<BTreeSet<_>>()
            && trimmed(&input.existing_patterns) == u.patterns.iter().cloned().collect::<BTreeSet<_>>()
            && u.symbols.iter().all(|x| named.contains(x));
        if !same {
            return Ok(None);
        }
        let frame = s.frame.clone().unwrap_or_default();
        let relevance: Vec<SymbolScore> = frame
            .mapped_symbols
            .iter()
            .filter(|m| u.symbols.contains(&m.symbol))
            .map(|m| SymbolScore { symbol: m.symbol.clone(), score: m.score, tier: m.tier, method: m.method.clone() })
            .collect();
        Ok(Some(SubmitUnderstandingResult {
            accepted: true,
            already_submitted: Some(true),
            session_id: Some(s.id.clone()),
            next_phase: Some(s.phase),
            evaluated_confidence: Some(if s.missing_requirements.is_empty() { "high" } else { "low" }.into()),
            risk_level: Some(s.risk_level),
            requirements: Some(requirements_for(s.intent, s.risk_level).clone()),
            have: Some(Counts {
                symbols: u.symbols.len(),
                entry_points: u.entry_points.iter().filter(|e| u.symbols.contains(e)).count(),
                files: u.files.len(),
                patterns: u.patterns.len(),
            }),
            missing_requirements: Some(s.missing_requirements.clone()),
            symbol_relevance: Some(relevance),
            explored_files: Some(s.explored_files.clone()),
            note: Some("this understanding was accepted before (a retry?): what it established is returned, nothing was checked or written again".into()),
            next_step: next_step(s),
            ..SubmitUnderstandingResult::default()
        }))
    }

    /// Checks submitted slot evidence against recorded calls (made after
    /// `after_call`); returns the accepted evidence.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn check_slot_evidence(
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
}
