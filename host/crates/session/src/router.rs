//! The router (SPEC §8 `query`): "traffic control, not judgement" (seed 000).
//! It turns a QueryFrame and an intent into an execution plan from the
//! slot -> tools table. There is no keyword classifier: what is *missing* from
//! the frame decides where to look first (seed 001 "slot-only routing").

use serde::Serialize;

use crate::frame::{assess_risk, missing_slots, slot_hint};
use crate::model::{Intent, Phase, QueryFrame, RiskLevel, Slot};

/// Tools that fill each slot when it is missing (seed 000 proposal 3 and
/// seed 001 `SLOT_TO_TOOLS`, mapped onto this server's tools: `get_symbols`
/// became `repo_map`; the prototype's free-form `query` became exact search).
pub const SLOT_TO_TOOLS: &[(Slot, &[&str])] = &[
    (Slot::TargetFeature, &["find_definitions", "search_text", "repo_map", "analyze_structure"]),
    (Slot::TriggerCondition, &["search_text", "find_references"]),
    (Slot::ObservedIssue, &["search_text", "get_function_at_line"]),
    (Slot::DesiredAction, &["find_references", "analyze_structure"]),
];

/// Tools that ground a slot the request *did* fill (turn the words into code
/// locations).
pub const SLOT_TO_GROUNDING_TOOLS: &[(Slot, &[&str])] = &[
    (Slot::TargetFeature, &["find_definitions", "find_references"]),
    (Slot::TriggerCondition, &["search_text"]),
    (Slot::ObservedIssue, &["search_text"]),
    (Slot::DesiredAction, &["find_references"]),
];

/// Most steps in one plan (seed 000 capped initial tools at 4 per plan; each
/// slot contributes at most its table row, so 8 covers four slots' leading tools).
pub const MAX_PLAN_STEPS: usize = 8;

/// The tools of a slot from [`SLOT_TO_TOOLS`].
#[must_use]
pub fn slot_tools(slot: Slot) -> &'static [&'static str] {
    SLOT_TO_TOOLS.iter().find(|(s, _)| *s == slot).map_or(&[], |(_, t)| t)
}

fn grounding_tools(slot: Slot) -> &'static [&'static str] {
    SLOT_TO_GROUNDING_TOOLS.iter().find(|(s, _)| *s == slot).map_or(&[], |(_, t)| t)
}

/// One step of a plan.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct PlanStep {
    pub tool: &'static str,
    pub slot: Slot,
    pub purpose: String,
    /// Suggested arguments, from the slot's value when the request gave one.
    #[serde(skip_serializing_if = "serde_json::Value::is_null")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub args: serde_json::Value,
}

/// The router's output (seed 002 `ExecutionPlan`).
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ExecutionPlan {
    pub intent: Intent,
    pub phase: Phase,
    pub risk_level: RiskLevel,
    pub missing_slots: Vec<Slot>,
    pub steps: Vec<PlanStep>,
    pub tools_planned: Vec<&'static str>,
    pub reasoning: Vec<String>,
}

fn suggested_args(tool: &str, value: Option<&str>) -> serde_json::Value {
    let Some(v) = value else { return serde_json::Value::Null };
    match tool {
        "search_text" => serde_json::json!({ "pattern": v, "literal": true }),
        "find_definitions" | "find_references" => {
            // A symbol-looking value is passed as is; a phrase is offered as
            // its most specific word (the longest), to be refined by the agent.
            let word = v
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .max_by_key(|w| w.chars().count())
                .unwrap_or(v);
            serde_json::json!({ "symbol": word })
        }
        _ => serde_json::Value::Null,
    }
}

/// Builds the plan for a frame. `frame = None` (no session, or no frame yet)
/// treats every slot as missing.
#[must_use]
pub fn plan(intent: Intent, phase: Phase, frame: Option<&QueryFrame>) -> ExecutionPlan {
    let empty = QueryFrame::default();
    let f = frame.unwrap_or(&empty);
    let missing = missing_slots(intent, f);
    let (risk, risk_reasons) = assess_risk(intent, f);
    let mut steps: Vec<PlanStep> = Vec::new();
    let mut reasoning = Vec::new();
    if frame.is_none() {
        reasoning.push(
            "No QueryFrame yet: every slot is treated as missing. Call set_query_frame to narrow the plan.".to_string(),
        );
    }
    for slot in &missing {
        let (hint, _) = slot_hint(*slot);
        reasoning.push(format!("{slot} missing: {hint}"));
        for tool in slot_tools(*slot) {
            if !steps.iter().any(|s| s.tool == *tool) {
                steps.push(PlanStep {
                    tool,
                    slot: *slot,
                    purpose: format!("fill {slot}"),
                    args: serde_json::Value::Null,
                });
            }
        }
    }
    for slot in Slot::ALL {
        if missing.contains(slot) {
            continue;
        }
        let value = f.value(*slot);
        for tool in grounding_tools(*slot) {
            if !steps.iter().any(|s| s.tool == *tool && s.slot == *slot) {
                steps.push(PlanStep {
                    tool,
                    slot: *slot,
                    purpose: format!("ground {slot} {:?} in code", value.unwrap_or_default()),
                    args: suggested_args(tool, value),
                });
            }
        }
    }
    match intent {
        Intent::Implement | Intent::Modify => {
            reasoning.push(
                "IMPLEMENT/MODIFY must use find_definitions and find_references before submit_understanding."
                    .to_string(),
            );
            for tool in ["find_definitions", "find_references"] {
                if !steps.iter().any(|s| s.tool == tool) {
                    steps.push(PlanStep {
                        tool,
                        slot: Slot::TargetFeature,
                        purpose: "required exploration tool".to_string(),
                        args: serde_json::Value::Null,
                    });
                }
            }
        }
        Intent::Investigate => reasoning.push("INVESTIGATE needs 1 symbol and 1 file.".to_string()),
        Intent::Question => reasoning.push("QUESTION is READY at once; answer from the code.".to_string()),
    }
    steps.truncate(MAX_PLAN_STEPS);
    reasoning.extend(risk_reasons.into_iter().map(|r| format!("risk {risk}: {r}")));
    let mut tools_planned: Vec<&'static str> = Vec::new();
    for s in &steps {
        if !tools_planned.contains(&s.tool) {
            tools_planned.push(s.tool);
        }
    }
    ExecutionPlan { intent, phase, risk_level: risk, missing_slots: missing, steps, tools_planned, reasoning }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FrameSlot, Source};

    #[test]
    fn vague_request_plans_from_missing_slots() {
        let mut f = QueryFrame::default();
        f.slots.insert(
            Slot::TargetFeature,
            FrameSlot { value: "login".into(), quote: "login".into(), source: Source::Fact },
        );
        let p = plan(Intent::Modify, Phase::Exploration, Some(&f));
        assert_eq!(p.risk_level, RiskLevel::High);
        assert_eq!(p.missing_slots[0], Slot::ObservedIssue);
        assert_eq!(p.steps[0].tool, "search_text");
        assert!(p.tools_planned.contains(&"find_definitions"));
        assert!(p.tools_planned.contains(&"find_references"));
        let grounding = p.steps.iter().find(|s| s.slot == Slot::TargetFeature && s.tool == "find_definitions").unwrap();
        assert_eq!(grounding.args["symbol"], "login");
    }

    #[test]
    fn no_frame_means_everything_missing() {
        let p = plan(Intent::Investigate, Phase::Exploration, None);
        assert_eq!(p.missing_slots.len(), 4);
        assert!(p.steps.len() <= MAX_PLAN_STEPS);
    }
}
