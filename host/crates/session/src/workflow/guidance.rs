//! What the workflow tells the agent to do next, in words.

use super::*;
use crate::results::ReinvestigationGuidance;

/// The next allowed step for a session, in words.
#[must_use]
pub fn next_step(s: &SessionState) -> String {
    if s.closed_at.is_some() {
        return "the session is closed; start_session for new work".into();
    }
    match s.phase {
        Phase::Exploration if s.frame.is_none() && s.intent != Intent::Question => {
            "set_query_frame(session_id, slots) with a verbatim quote per slot".into()
        }
        Phase::Exploration => {
            "explore with exact tools (session_id on every call), then submit_understanding".into()
        }
        Phase::Semantic => format!(
            "semantic_search (forest allowed) / search_text for the missing items ({}), then submit_semantic(hypotheses, semantic_reason)",
            s.missing_requirements.iter().map(|m| m.kind.as_str()).collect::<Vec<_>>().join(", ")
        ),
        Phase::Verification => {
            let pending = s.pending_hypotheses();
            if pending.is_empty() {
                format!(
                    "requirements still missing ({}): revert_to_exploration(keep_results=true) to gather more facts",
                    s.missing_requirements.iter().map(|m| m.kind.as_str()).collect::<Vec<_>>().join(", ")
                )
            } else {
                format!(
                    "verify {} with find_definitions / get_function_at_line, then submit_verification",
                    pending.iter().map(|h| format!("{} ({})", h.symbol, h.id)).collect::<Vec<_>>().join(", ")
                )
            }
        }
        Phase::Ready if !s.intent.writes() => format!(
            "answer from the code (any code tool, with session_id); record_outcome when done. A {} session never writes: start_session(IMPLEMENT or MODIFY) for a change",
            s.intent
        ),
        Phase::Ready => "check_write_target(session_id, path) before each edit; record_outcome when done".into(),
    }
}

/// Guidance after a symbol was rejected (seed 001 `_create_guidance`).
pub(super) fn reinvestigation_guidance(nl: &str, symbol: &str) -> ReinvestigationGuidance {
    ReinvestigationGuidance {
        reason: format!("{nl:?} and {symbol:?} are too dissimilar (< {})", crate::relevance::REJECT_THRESHOLD),
        next_actions: vec![
            format!("search_text for words of {nl:?} to find other candidate symbols"),
            format!("find_references {symbol:?} to check whether it really takes part in {nl:?}"),
            "find code that proves the relation (a comment, a naming convention) and cite it as code_evidence in validate_symbol_relevance".into(),
        ],
        fallback: "if exact search finds nothing, the session moves to SEMANTIC, where semantic_search over code is allowed".into(),
    }
}

/// The slot-extraction prompt returned by `start_session` (seed 000).
#[must_use]
pub fn extraction_prompt(query: &str) -> String {
    format!(
        "Extract the request into four slots. Rules: extract only what is stated; never guess or complete; \
a slot that is not stated is null. For each stated slot give \"value\" (normalised) and \"quote\" (copied \
verbatim from the request; the server rejects any quote that is not a literal substring).\n\
Slots: target_feature (feature/class/module concerned), trigger_condition (when it happens), \
observed_issue (what goes wrong), desired_action (what should change).\n\
Output: {{\"target_feature\": {{\"value\": ..., \"quote\": ...}} | null, \"trigger_condition\": ..., \
\"observed_issue\": ..., \"desired_action\": ...}}\n\
Request: {query}"
    )
}
