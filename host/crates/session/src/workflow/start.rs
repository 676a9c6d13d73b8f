//! Opening a session: `start_session`, `set_query_frame` and the `query` planner.

use super::*;
use crate::results::{LearnedPairsCleaned, QueryPlan, RejectedSlot, SetQueryFrameResult, StartSessionResult, to_json};

impl Workflow {

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
        Ok(to_json(&StartSessionResult {
            session_id: s.id.clone(),
            intent,
            phase: s.phase,
            risk_level: s.risk_level,
            risk_note: "provisional until set_query_frame".into(),
            extraction_prompt: extraction_prompt(query),
            map_hints: s.map_hints.clone(),
            map_hint_threshold: MAP_HINT_THRESHOLD,
            learned_pairs_cleaned: LearnedPairsCleaned { expired: cleaned.0, symbol_gone: cleaned.1 },
            warnings,
            next_step: next,
        }))
    }


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
            let rejected = !frame.rejected.is_empty();
            Ok(to_json(&SetQueryFrameResult {
                success: !rejected,
                session_id: s.id.clone(),
                phase: s.phase,
                accepted_slots: frame.slots.clone(),
                missing_slots: frame.missing_slots.clone(),
                risk_level: risk,
                risk_reasons: reasons,
                investigation_guidance: guidance,
                plan,
                decision_id: decision,
                notes,
                error: rejected.then(|| "validation_failed".to_string()),
                validation_errors: rejected.then(|| {
                    frame
                        .rejected
                        .iter()
                        .map(|r| RejectedSlot { slot: r.slot, error: r.error.clone(), quote: r.quote.clone() })
                        .collect()
                }),
                message: rejected.then(|| {
                    "Some slots were rejected and count as missing. Fix them by quoting the request verbatim, or set them to null."
                        .to_string()
                }),
                next_step: match s.intent {
                    Intent::Question => "answer from the code; the session is READY".to_string(),
                    _ => format!(
                        "explore with the recommended tools (pass session_id to every code tool), then submit_understanding. Needed: {} symbols, {} entry points, {} files, {} patterns{}.",
                        req.symbols, req.entry_points, req.files, req.patterns,
                        if req.tools.is_empty() { String::new() } else { format!(", and {} used", req.tools.join(" + ")) }
                    ),
                },
                requirements: req.clone(),
            }))
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
                Ok(to_json(&QueryPlan {
                    session_id: Some(s.id.clone()),
                    text: text.to_string(),
                    investigation_guidance: investigation_guidance(&plan.missing_slots),
                    plan,
                    allowed_tools: Some(matrix::allowed_tools(s.phase).into_iter().map(str::to_string).collect()),
                    decision_id: decision,
                    note: None,
                }))
            });
        }
        let intent = intent.unwrap_or(Intent::Investigate);
        let plan = router::plan(intent, Phase::Exploration, None);
        let store = self.lock();
        let decision = Self::log_decision(store.conn(), None, text, &plan)?;
        Ok(to_json(&QueryPlan {
            session_id: None,
            text: text.to_string(),
            investigation_guidance: investigation_guidance(&plan.missing_slots),
            plan,
            allowed_tools: None,
            decision_id: decision,
            note: Some(
                "No session: this plan treats every slot as missing. start_session + set_query_frame give a plan for the actual request and enforce the workflow."
                    .into(),
            ),
        }))
    }
}
