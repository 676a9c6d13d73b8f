//! The workflow's vocabulary: intents, phases, risk levels, slots, sources,
//! and the persisted state of one session.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::SessionError;

/// What the user asked for (SPEC §8). Chosen by the agent at `start_session`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Intent {
    /// New behaviour.
    Implement,
    /// Change existing behaviour (fix, refactor).
    Modify,
    /// Understand something, no edit planned.
    Investigate,
    /// A question answered from the code; READY at once.
    Question,
}

impl Intent {
    /// Whether a session of this intent may ever write: only IMPLEMENT and
    /// MODIFY change code; INVESTIGATE and QUESTION sessions read.
    #[must_use]
    pub fn writes(self) -> bool {
        matches!(self, Self::Implement | Self::Modify)
    }
}

/// Where a session stands (SPEC §8): EXPLORATION -> (SEMANTIC -> VERIFICATION) -> READY.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Phase {
    /// Facts first: exact tools and map search only.
    Exploration,
    /// Exact tools were not enough: semantic (forest) search to form hypotheses.
    Semantic,
    /// Hypotheses checked with exact tools.
    Verification,
    /// Understanding accepted: writes to explored files are allowed.
    Ready,
}

/// How uncertain the request is; drives exploration requirements (SPEC §8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RiskLevel {
    /// Precise request.
    Low,
    /// Some uncertainty (e.g. any IMPLEMENT).
    Medium,
    /// Vague or unfounded request; the longest exploration.
    High,
}

/// The four QueryFrame slots (SPEC §8, seed 000).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Slot {
    /// The feature, class or module concerned ("the login form").
    TargetFeature,
    /// When the problem happens ("when the password is empty").
    TriggerCondition,
    /// What goes wrong ("no error is shown").
    ObservedIssue,
    /// What should change ("add a check").
    DesiredAction,
}

/// Whether a piece of knowledge was established by exact tools or guessed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Source {
    /// Established from the request or by exact tools.
    Fact,
    /// Suggested by semantic search; must be verified before READY.
    Hypothesis,
}

/// Outcome reported by `record_outcome`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The change worked.
    Success,
    /// The change did not work.
    Failure,
    /// Part of it worked.
    Partial,
}

/// Why semantic search is needed (SPEC §8 `submit_semantic`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SemanticReason {
    /// `find_definitions` found nothing for the concept.
    NoDefinitionFound,
    /// How the parts fit together is unknown.
    ArchitectureUnknown,
    /// `find_references` found no callers or usages.
    NoReferenceFound,
    /// No similar existing code to follow.
    NoSimilarImplementation,
    /// The relevant code is spread over too many places.
    ContextFragmented,
}

macro_rules! names {
    ($t:ty, $what:literal, $($v:ident = $s:literal),+ $(,)?) => {
        impl $t {
            /// Every value, in declaration order.
            pub const ALL: &'static [$t] = &[$(<$t>::$v),+];
            /// The wire name.
            #[must_use]
            pub fn as_str(self) -> &'static str {
                match self { $(<$t>::$v => $s),+ }
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }
        impl FromStr for $t {
            type Err = SessionError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                let t = s.trim();
                <$t>::ALL.iter().copied().find(|v| v.as_str().eq_ignore_ascii_case(t)).ok_or_else(|| {
                    SessionError::invalid(
                        $what,
                        format!(
                            "{s:?} is not one of {}",
                            <$t>::ALL.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", ")
                        ),
                    )
                })
            }
        }
    };
}

names!(Intent, "intent", Implement = "IMPLEMENT", Modify = "MODIFY", Investigate = "INVESTIGATE", Question = "QUESTION");
names!(
    Phase,
    "phase",
    Exploration = "EXPLORATION",
    Semantic = "SEMANTIC",
    Verification = "VERIFICATION",
    Ready = "READY"
);
names!(RiskLevel, "risk_level", Low = "LOW", Medium = "MEDIUM", High = "HIGH");
names!(
    Slot,
    "slot",
    TargetFeature = "target_feature",
    TriggerCondition = "trigger_condition",
    ObservedIssue = "observed_issue",
    DesiredAction = "desired_action"
);
names!(Source, "source", Fact = "FACT", Hypothesis = "HYPOTHESIS");
names!(Outcome, "outcome", Success = "success", Failure = "failure", Partial = "partial");
names!(
    SemanticReason,
    "semantic_reason",
    NoDefinitionFound = "no_definition_found",
    ArchitectureUnknown = "architecture_unknown",
    NoReferenceFound = "no_reference_found",
    NoSimilarImplementation = "no_similar_implementation",
    ContextFragmented = "context_fragmented",
);

/// One filled slot: the agent's normalised value and the verbatim quote from
/// the request that supports it.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct FrameSlot {
    pub value: String,
    pub quote: String,
    pub source: Source,
}

/// A slot the server refused, and why.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct SlotRejection {
    pub slot: Slot,
    pub value: String,
    pub quote: String,
    pub error: String,
}

/// Evidence that a slot was established by a tool call of this session.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct SlotEvidence {
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub params: Option<serde_json::Value>,
    pub result: String,
    /// Id of the recorded tool call that backs this evidence.
    pub tool_call_id: i64,
}

/// How an NL -> symbol pair was judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Score above the FACT threshold.
    Fact,
    /// Grey zone: accepted, risk forced to HIGH.
    Accepted,
    /// Below the rejection threshold.
    Rejected,
}

/// A symbol mapped to the target feature.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct MappedSymbol {
    pub symbol: String,
    pub source: Source,
    pub score: f32,
    pub tier: Tier,
    pub method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_evidence: Option<String>,
}

/// The structured request (SPEC §8 QueryFrame).
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct QueryFrame {
    pub raw_query: String,
    pub slots: BTreeMap<Slot, FrameSlot>,
    pub rejected: Vec<SlotRejection>,
    pub missing_slots: Vec<Slot>,
    pub mapped_symbols: Vec<MappedSymbol>,
    pub slot_evidence: BTreeMap<Slot, SlotEvidence>,
    /// Slot values established during exploration (`resolved_frame`).
    pub resolved: BTreeMap<Slot, String>,
}

impl QueryFrame {
    /// The slot's value: resolved by exploration, else from the request.
    #[must_use]
    pub fn value(&self, slot: Slot) -> Option<&str> {
        self.resolved.get(&slot).map(String::as_str).or_else(|| self.slots.get(&slot).map(|s| s.value.as_str()))
    }

    /// Whether the request itself filled the slot.
    #[must_use]
    pub fn has(&self, slot: Slot) -> bool {
        self.slots.contains_key(&slot)
    }
}

/// What the agent submitted with `submit_understanding`, as accepted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct Understanding {
    pub symbols: Vec<String>,
    pub entry_points: Vec<String>,
    pub files: Vec<String>,
    pub patterns: Vec<String>,
}

/// Status of a hypothesis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum HypothesisStatus {
    /// Not verified yet.
    Hypothesis,
    /// Verified with exact-tool evidence.
    Fact,
    /// Verification failed; nothing may be built on it.
    Rejected,
}

/// A finding from semantic search (or a symbol the agent marked HYPOTHESIS).
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct Hypothesis {
    pub id: String,
    pub symbol: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    pub description: String,
    pub status: HypothesisStatus,
    /// Tool-call id after which verification evidence must come.
    pub created_after_call: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
}

/// A map hit shown at session start.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct MapHint {
    pub agreement_id: String,
    pub score: f32,
    pub nl_term: String,
    pub symbols: Vec<String>,
    pub files: Vec<String>,
}

/// One phase change, kept for analysis.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct PhaseChange {
    pub from: Phase,
    pub to: Phase,
    pub at: String,
    pub why: String,
}

/// Everything the workflow knows about one session; persisted as JSON in
/// `sessions.state_json` after every change.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct SessionState {
    pub id: String,
    pub intent: Intent,
    pub query: String,
    pub phase: Phase,
    pub risk_level: RiskLevel,
    /// Why the risk is what it is (rules that fired, grey-zone warnings).
    pub risk_reasons: Vec<String>,
    pub created_at: String,
    pub updated_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_at: Option<String>,
    /// Incremented by `revert_to_exploration(keep_results = false)`: tool
    /// calls of earlier epochs no longer count as evidence.
    pub epoch: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame: Option<QueryFrame>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub understanding: Option<Understanding>,
    pub missing_requirements: Vec<crate::requirements::Missing>,
    pub hypotheses: Vec<Hypothesis>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic_reason: Option<SemanticReason>,
    /// Files the agent may write (accepted `files_analyzed`, verified
    /// hypothesis files, `add_explored_files`).
    pub explored_files: BTreeSet<String>,
    /// Directories in which new files may be created.
    pub explored_dirs: BTreeSet<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub map_hints: Vec<MapHint>,
    pub history: Vec<PhaseChange>,
}

impl SessionState {
    /// Moves to `to`, remembering why.
    pub fn transition(&mut self, to: Phase, at: &str, why: impl Into<String>) {
        if self.phase != to {
            self.history.push(PhaseChange { from: self.phase, to, at: at.to_string(), why: why.into() });
        }
        self.phase = to;
    }

    /// Hypotheses not verified yet.
    #[must_use]
    pub fn pending_hypotheses(&self) -> Vec<&Hypothesis> {
        self.hypotheses.iter().filter(|h| h.status == HypothesisStatus::Hypothesis).collect()
    }
}

/// Parent directory of a repo-relative path (`""` for top-level files).
#[must_use]
pub fn parent_dir(path: &str) -> String {
    path.rsplit_once('/').map_or_else(String::new, |(dir, _)| dir.to_string())
}
