//! The phase/tool matrix (SPEC §8): which code tools a session may call in
//! each phase. A refusal names the phase, the reason and the next step.
//!
//! | phase | exact tools | `search_text` | map search | forest search |
//! |---|---|---|---|---|
//! | EXPLORATION | yes | yes | yes | refused |
//! | SEMANTIC | refused | yes | yes | yes |
//! | VERIFICATION | yes | yes | yes | refused |
//! | READY | yes | yes | yes | yes |
//!
//! Index maintenance (`sync_index`, `index_status`) is allowed in every phase.

use serde::Serialize;

use crate::model::Phase;

/// Exact (fact-finding) tools besides `search_text`.
pub const EXACT_TOOLS: &[&str] =
    &["find_definitions", "find_references", "analyze_structure", "get_function_at_line", "repo_map"];

/// Tools accepted as exact evidence (slot evidence, verification).
pub const EVIDENCE_TOOLS: &[&str] =
    &["find_definitions", "find_references", "analyze_structure", "get_function_at_line", "repo_map", "search_text"];

/// Tools that never touch the workflow's judgement.
pub const MAINTENANCE_TOOLS: &[&str] = &["sync_index", "index_status"];

/// What kind of code tool a call is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolClass {
    /// Definitions, references, structure, function at line, repo map.
    Exact,
    /// `search_text`.
    TextSearch,
    /// `semantic_search` over the map (agreements) only.
    MapSearch,
    /// `semantic_search` that may reach the forest (code chunks).
    ForestSearch,
    /// Index maintenance.
    Maintenance,
}

/// Classifies a code tool call; `None` for tools the matrix does not govern.
#[must_use]
pub fn classify(tool: &str, args: &serde_json::Value) -> Option<ToolClass> {
    if EXACT_TOOLS.contains(&tool) {
        return Some(ToolClass::Exact);
    }
    if MAINTENANCE_TOOLS.contains(&tool) {
        return Some(ToolClass::Maintenance);
    }
    match tool {
        "search_text" => Some(ToolClass::TextSearch),
        "semantic_search" => {
            let collection = args.get("collection").and_then(serde_json::Value::as_str).unwrap_or("auto");
            if collection.eq_ignore_ascii_case("map") {
                Some(ToolClass::MapSearch)
            } else {
                Some(ToolClass::ForestSearch)
            }
        }
        _ => None,
    }
}

/// A refused tool call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Refusal {
    pub error: &'static str,
    pub tool: String,
    pub phase: Phase,
    pub reason: String,
    pub next_allowed_step: String,
    pub allowed_in_phase: Vec<&'static str>,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} refused in phase {}: {} Next: {} (allowed now: {})",
            self.tool,
            self.phase,
            self.reason,
            self.next_allowed_step,
            self.allowed_in_phase.join(", ")
        )
    }
}

/// Tools allowed in a phase, for messages.
#[must_use]
pub fn allowed_tools(phase: Phase) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = Vec::new();
    match phase {
        Phase::Exploration | Phase::Verification => {
            v.extend(EXACT_TOOLS);
            v.push("search_text");
            v.push("semantic_search(collection=\"map\")");
        }
        Phase::Semantic => {
            v.push("search_text");
            v.push("semantic_search");
        }
        Phase::Ready => {
            v.extend(EXACT_TOOLS);
            v.push("search_text");
            v.push("semantic_search");
        }
    }
    v.extend(MAINTENANCE_TOOLS);
    v
}

/// Checks a call against the matrix.
///
/// # Errors
/// The [`Refusal`] to send back.
pub fn check(phase: Phase, tool: &str, args: &serde_json::Value) -> Result<(), Refusal> {
    let Some(class) = classify(tool, args) else { return Ok(()) };
    let refuse = |reason: &str, next: &str| Refusal {
        error: "phase_refused",
        tool: tool.to_string(),
        phase,
        reason: reason.to_string(),
        next_allowed_step: next.to_string(),
        allowed_in_phase: allowed_tools(phase),
    };
    match (phase, class) {
        (_, ToolClass::Maintenance | ToolClass::TextSearch | ToolClass::MapSearch)
        | (Phase::Ready, _)
        | (Phase::Exploration | Phase::Verification, ToolClass::Exact)
        | (Phase::Semantic, ToolClass::ForestSearch) => Ok(()),
        (Phase::Exploration, ToolClass::ForestSearch) => Err(refuse(
            "semantic search over code (the forest) is refused until exact tools have been tried: facts before hypotheses.",
            "explore with find_definitions / find_references / search_text (semantic_search with collection=\"map\" is allowed), then call submit_understanding; if requirements are not met the session moves to SEMANTIC, where forest search is allowed.",
        )),
        (Phase::Verification, ToolClass::ForestSearch) => Err(refuse(
            "hypotheses are verified with exact tools only; more semantic search would add unverified guesses.",
            "check each hypothesis with find_definitions / get_function_at_line, then call submit_verification.",
        )),
        (Phase::Semantic, ToolClass::Exact) => Err(refuse(
            "SEMANTIC is for forming hypotheses with semantic_search and search_text; exact tools verify them in the next phase.",
            "call submit_semantic(hypotheses, semantic_reason) to move to VERIFICATION, where exact tools are allowed.",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matrix() {
        let forest = json!({"query": "x"});
        let map = json!({"query": "x", "collection": "map"});
        assert!(check(Phase::Exploration, "semantic_search", &forest).is_err());
        assert!(check(Phase::Exploration, "semantic_search", &map).is_ok());
        assert!(check(Phase::Exploration, "find_definitions", &json!({})).is_ok());
        assert!(check(Phase::Semantic, "semantic_search", &forest).is_ok());
        assert!(check(Phase::Semantic, "search_text", &json!({})).is_ok());
        let r = check(Phase::Semantic, "find_references", &json!({})).unwrap_err();
        assert_eq!(r.phase, Phase::Semantic);
        assert!(r.next_allowed_step.contains("submit_semantic"));
        assert!(check(Phase::Verification, "semantic_search", &forest).is_err());
        assert!(check(Phase::Verification, "semantic_search", &map).is_ok());
        assert!(check(Phase::Verification, "get_function_at_line", &json!({})).is_ok());
        for t in ["find_definitions", "search_text", "semantic_search", "repo_map", "sync_index"] {
            assert!(check(Phase::Ready, t, &forest).is_ok());
        }
        assert!(check(Phase::Exploration, "not_a_code_tool", &forest).is_ok());
    }
}
