//! Reading sessions back: `get_session_status`, `get_session_analysis`,
//! `get_improvement_insights`.

use super::*;
use crate::results::{
    AgreementRef, AnalysisSummary, DecisionRecord, FailurePoint, FailureRate, ImprovementInsights, OutcomeRecord, SessionAnalysis, SessionStatus,
    ToolFailures, to_json,
};

impl Workflow {

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
        Ok(to_json(&SessionStatus {
            next_step: next_step(&s),
            tools_used: used.into_iter().map(str::to_string).collect(),
            tool_calls: calls.len(),
            refused_calls: calls.iter().filter(|c| c.refused).count(),
            allowed_tools: matrix::allowed_tools(s.phase).into_iter().map(str::to_string).collect(),
            requirements: req.clone(),
            closed: s.closed_at.is_some(),
            session_id: s.id,
            intent: s.intent,
            query: s.query,
            phase: s.phase,
            risk_level: s.risk_level,
            risk_reasons: s.risk_reasons,
            query_frame: s.frame,
            understanding: s.understanding,
            missing_requirements: s.missing_requirements,
            hypotheses: s.hypotheses,
            explored_files: s.explored_files,
            explored_dirs: s.explored_dirs,
            map_hints: s.map_hints,
            history: s.history,
            created_at: s.created_at,
            updated_at: s.updated_at,
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
        let decision = decisions.last().map(decision_record);
        let final_outcome = outcomes.last().map(|o| o.outcome.clone());
        let failure_point = outcomes.last().filter(|o| o.outcome != "success").map(|o| {
            let detail: Value = serde_json::from_str(&o.detail_json).unwrap_or(Value::Null);
            FailurePoint {
                phase: o.phase_at_outcome.clone(),
                risk_level: o.risk_level.clone(),
                last_tool: calls.iter().rev().find(|c| c.refused.is_none()).map(|c| c.tool.clone()),
                last_refusal: detail.get("last_refusal").and_then(Value::as_object).cloned(),
                missing_requirements: detail.get("missing_requirements").filter(|v| v.is_array()).cloned(),
                rejected_hypotheses: detail.get("rejected_hypotheses").and_then(|v| serde_json::from_value(v.clone()).ok()),
            }
        });
        let tools_planned: Vec<String> = decisions
            .last()
            .and_then(|d| serde_json::from_str(&d.tools_planned_json).ok())
            .unwrap_or_default();
        let tools_used: BTreeSet<String> = calls.iter().filter(|c| c.refused.is_none()).map(|c| c.tool.clone()).collect();
        let agreements = db::agreements_of_session(&conn, &s.id)?
            .iter()
            .map(|a| AgreementRef { id: a.id.clone(), path: a.path.clone(), nl_term: a.nl_term.clone() })
            .collect();
        Ok(to_json(&SessionAnalysis {
            session_id: s.id.clone(),
            intent: s.intent,
            query: s.query.clone(),
            phase: s.phase,
            decision,
            decisions: decisions.len(),
            outcomes: outcomes
                .iter()
                .map(|o| OutcomeRecord {
                    id: o.id,
                    outcome: o.outcome.clone(),
                    phase_at_outcome: o.phase_at_outcome.clone(),
                    risk_level: o.risk_level.clone(),
                    semantic_used: o.semantic_used,
                    analysis: o.analysis.clone(),
                    tools_used: serde_json::from_str(&o.tools_used_json).unwrap_or_default(),
                    created_at: o.created_at.clone(),
                })
                .collect(),
            agreements,
            analysis: AnalysisSummary {
                had_decision: !decisions.is_empty(),
                had_outcome: !outcomes.is_empty(),
                final_outcome,
                planned_not_used: tools_planned.iter().filter(|t| !tools_used.contains(t.as_str())).cloned().collect(),
                tools_planned,
                tools_used,
                refused_calls: calls.iter().filter(|c| c.refused.is_some()).count(),
                phase_history: s.history.clone(),
                failure_point,
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
        let mut tool_list: Vec<(String, (u32, u32))> = tools.into_iter().collect();
        tool_list.sort_by(|a, b| {
            let ra = f64::from(a.1.1) / f64::from(a.1.0.max(1));
            let rb = f64::from(b.1.1) / f64::from(b.1.0.max(1));
            rb.total_cmp(&ra).then(b.1.0.cmp(&a.1.0))
        });
        Ok(to_json(&ImprovementInsights {
            outcomes_considered: outcomes.len(),
            total_sessions_with_outcomes: by_session.len(),
            sessions_with_decisions: with_decisions,
            tool_failure_correlation: tool_list.into_iter().map(|(tool, c)| ToolFailures { tool, rate: FailureRate::of(c) }).collect(),
            risk_level_correlation: risks.into_iter().map(|(r, c)| (r, FailureRate::of(c))).collect(),
            semantic_search_correlation: semantic
                .into_iter()
                .map(|(u, c)| (if u { "used" } else { "not_used" }.to_string(), FailureRate::of(c)))
                .collect(),
            common_failure_points: phases,
            refusals_in_failed_sessions: refusals,
        }))
    }
}

fn decision_record(d: &db::DecisionRow) -> DecisionRecord {
    DecisionRecord {
        id: d.id,
        query: d.query.clone(),
        intent: d.intent.clone(),
        missing_slots: serde_json::from_str(&d.missing_slots_json).unwrap_or_default(),
        risk_level: d.risk_level.clone(),
        tools_planned: serde_json::from_str(&d.tools_planned_json).unwrap_or_default(),
        timestamp: d.created_at.clone(),
        session_id: d.session_id.clone(),
    }
}
