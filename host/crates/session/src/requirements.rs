//! Exploration requirements by intent and risk (SPEC §8 table, seed 000
//! `get_exploration_requirements`, seed 004 "最低成果条件"), and what is
//! missing from a submission.

use serde::{Deserialize, Serialize};

use crate::model::{Intent, RiskLevel, SemanticReason, Slot};

/// Minimum evidence before READY.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Requirements {
    pub symbols: usize,
    pub entry_points: usize,
    pub files: usize,
    pub patterns: usize,
    pub slot_evidence: &'static [Slot],
    pub tools: &'static [&'static str],
    /// IMPLEMENT/MODIFY must resolve `target_feature` (seed 000 v3.6
    /// "target_feature は必須").
    pub resolved_target: bool,
}

/// Tools IMPLEMENT/MODIFY must actually have used (SPEC §8 "plus
/// find_definitions and find_references actually used in this session").
pub const REQUIRED_CHANGE_TOOLS: &[&str] = &["find_definitions", "find_references"];

/// HIGH risk, IMPLEMENT/MODIFY (SPEC §8 table row HIGH: 5 / 2 / 4 / 2,
/// slot evidence for target_feature and observed_issue).
pub const HIGH_RISK: Requirements = Requirements {
    symbols: 5,
    entry_points: 2,
    files: 4,
    patterns: 2,
    slot_evidence: &[Slot::TargetFeature, Slot::ObservedIssue],
    tools: REQUIRED_CHANGE_TOOLS,
    resolved_target: true,
};

/// MEDIUM risk, IMPLEMENT/MODIFY (SPEC §8 table row MEDIUM: 3 / 1 / 2 / 1,
/// slot evidence for target_feature).
pub const MEDIUM_RISK: Requirements = Requirements {
    symbols: 3,
    entry_points: 1,
    files: 2,
    patterns: 1,
    slot_evidence: &[Slot::TargetFeature],
    tools: REQUIRED_CHANGE_TOOLS,
    resolved_target: true,
};

/// LOW risk, IMPLEMENT/MODIFY (SPEC §8 table row LOW: 3 / 1 / 2 / 1, no slot
/// evidence).
pub const LOW_RISK: Requirements = Requirements {
    symbols: 3,
    entry_points: 1,
    files: 2,
    patterns: 1,
    slot_evidence: &[],
    tools: REQUIRED_CHANGE_TOOLS,
    resolved_target: true,
};

/// INVESTIGATE at any risk (SPEC §8: "INVESTIGATE: 1 symbol, 1 file").
pub const INVESTIGATE: Requirements = Requirements {
    symbols: 1,
    entry_points: 0,
    files: 1,
    patterns: 0,
    slot_evidence: &[],
    tools: &[],
    resolved_target: false,
};

/// QUESTION (SPEC §8: "QUESTION: none (READY at once)").
pub const QUESTION: Requirements = Requirements {
    symbols: 0,
    entry_points: 0,
    files: 0,
    patterns: 0,
    slot_evidence: &[],
    tools: &[],
    resolved_target: false,
};

/// The requirements for an intent at a risk level.
#[must_use]
pub fn requirements_for(intent: Intent, risk: RiskLevel) -> &'static Requirements {
    match (intent, risk) {
        (Intent::Implement | Intent::Modify, RiskLevel::High) => &HIGH_RISK,
        (Intent::Implement | Intent::Modify, RiskLevel::Medium) => &MEDIUM_RISK,
        (Intent::Implement | Intent::Modify, RiskLevel::Low) => &LOW_RISK,
        (Intent::Investigate, _) => &INVESTIGATE,
        (Intent::Question, _) => &QUESTION,
    }
}

/// One unmet requirement.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct Missing {
    /// `symbols_identified`, `entry_points`, `files_analyzed`,
    /// `existing_patterns`, `slot_evidence:<slot>`, `resolved_target_feature`,
    /// `nl_symbol_mapping`, `unverified_hypotheses`.
    pub kind: String,
    pub message: String,
    /// `semantic_reason` values that fit this gap (SPEC §8 `submit_semantic`).
    pub semantic_reasons: Vec<SemanticReason>,
}

/// The `semantic_reason` values that fit a missing-requirement kind (SPEC §8:
/// symbols -> no_definition_found/architecture_unknown; entry points ->
/// no_definition_found/no_reference_found; patterns ->
/// no_similar_implementation/architecture_unknown; files ->
/// context_fragmented/architecture_unknown). Slot evidence follows seed 000:
/// the target -> no_definition_found/architecture_unknown, the problem ->
/// no_similar_implementation/context_fragmented.
#[must_use]
pub fn reasons_for(kind: &str) -> Vec<SemanticReason> {
    use SemanticReason::*;
    match kind {
        "symbols_identified" | "resolved_target_feature" | "nl_symbol_mapping" | "slot_evidence:target_feature" => {
            vec![NoDefinitionFound, ArchitectureUnknown]
        }
        "entry_points" => vec![NoDefinitionFound, NoReferenceFound],
        "existing_patterns" => vec![NoSimilarImplementation, ArchitectureUnknown],
        "files_analyzed" => vec![ContextFragmented, ArchitectureUnknown],
        "slot_evidence:observed_issue" | "slot_evidence:trigger_condition" => {
            vec![NoSimilarImplementation, ContextFragmented]
        }
        "slot_evidence:desired_action" => vec![NoReferenceFound, ArchitectureUnknown],
        _ => vec![],
    }
}

impl Missing {
    /// A gap of `kind` with its fitting reasons.
    #[must_use]
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        let kind = kind.into();
        let semantic_reasons = reasons_for(&kind);
        Self { kind, message: message.into(), semantic_reasons }
    }
}

/// Counted evidence of a submission.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Counts {
    pub symbols: usize,
    pub entry_points: usize,
    pub files: usize,
    pub patterns: usize,
}

/// Compares counted evidence with the requirements; slot evidence and the
/// resolved target are passed as the set of slots that have evidence and
/// whether the target is resolved.
#[must_use]
pub fn evaluate(req: &Requirements, have: &Counts, evidenced: &[Slot], target_resolved: bool) -> Vec<Missing> {
    let mut out = Vec::new();
    let mut count = |kind: &str, have: usize, need: usize, what: &str| {
        if have < need {
            out.push(Missing::new(kind, format!("{what}: {have} of {need} required")));
        }
    };
    count("symbols_identified", have.symbols, req.symbols, "symbols identified (existing in the index, relevant)");
    count("entry_points", have.entry_points, req.entry_points, "entry points (each one of the symbols)");
    count("files_analyzed", have.files, req.files, "files analysed (returned or read by a tool in this session)");
    count("existing_patterns", have.patterns, req.patterns, "existing patterns to follow");
    if req.resolved_target && !target_resolved {
        out.push(Missing::new(
            "resolved_target_feature",
            "target_feature is not resolved: name the feature in resolved_frame.target_feature",
        ));
    }
    for slot in req.slot_evidence {
        if !evidenced.contains(slot) {
            out.push(Missing::new(
                format!("slot_evidence:{slot}"),
                format!(
                    "slot_evidence for {slot} is required at this risk level: the tool call (made in this session) that established it"
                ),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_matches_spec() {
        let h = requirements_for(Intent::Modify, RiskLevel::High);
        assert_eq!((h.symbols, h.entry_points, h.files, h.patterns), (5, 2, 4, 2));
        assert_eq!(h.slot_evidence, &[Slot::TargetFeature, Slot::ObservedIssue]);
        let m = requirements_for(Intent::Implement, RiskLevel::Medium);
        assert_eq!((m.symbols, m.entry_points, m.files, m.patterns), (3, 1, 2, 1));
        assert_eq!(m.slot_evidence, &[Slot::TargetFeature]);
        let l = requirements_for(Intent::Modify, RiskLevel::Low);
        assert_eq!((l.symbols, l.entry_points, l.files, l.patterns), (3, 1, 2, 1));
        assert!(l.slot_evidence.is_empty());
        let i = requirements_for(Intent::Investigate, RiskLevel::High);
        assert_eq!((i.symbols, i.files), (1, 1));
        assert_eq!(requirements_for(Intent::Question, RiskLevel::Low), &QUESTION);
    }

    #[test]
    fn evaluate_lists_gaps_with_reasons() {
        let have = Counts { symbols: 5, entry_points: 1, files: 4, patterns: 2 };
        let m = evaluate(&HIGH_RISK, &have, &[Slot::TargetFeature], true);
        let kinds: Vec<&str> = m.iter().map(|m| m.kind.as_str()).collect();
        assert_eq!(kinds, vec!["entry_points", "slot_evidence:observed_issue"]);
        assert_eq!(m[0].semantic_reasons, vec![SemanticReason::NoDefinitionFound, SemanticReason::NoReferenceFound]);
        assert!(evaluate(&LOW_RISK, &Counts { symbols: 3, entry_points: 1, files: 2, patterns: 1 }, &[], true).is_empty());
    }
}
