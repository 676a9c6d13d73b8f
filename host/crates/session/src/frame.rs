//! QueryFrame checks (SPEC §8 `set_query_frame`): verbatim quotes, value/quote
//! agreement, missing slots, risk level and investigation guidance.

use serde::Serialize;

use crate::model::{Intent, QueryFrame, RiskLevel, Slot};
use crate::relevance::lexical_tokens;

/// Share of the value's character bigrams that must also occur in the quote
/// for value and quote to agree when they share no whole word (Japanese and
/// other unspaced text). Seed 001 used a 0.5 character-overlap ratio for the
/// same check; bigrams keep "ログイン" from matching "ログアウト" on one shared
/// character.
pub const VALUE_QUOTE_MIN_BIGRAM_OVERLAP: f32 = 0.5;

/// Whether `quote` is a verbatim substring of the request. Surrounding
/// whitespace is ignored; nothing else is (the seeds reject any quote that is
/// not literally in the query as a hallucination).
#[must_use]
pub fn quote_is_verbatim(quote: &str, raw_query: &str) -> bool {
    let q = quote.trim();
    !q.is_empty() && raw_query.contains(q)
}

/// Whether the normalised `value` says what the `quote` says, lexically:
/// one contains the other (case-insensitive), or they share a word, or at
/// least [`VALUE_QUOTE_MIN_BIGRAM_OVERLAP`] of the value's character bigrams
/// occur in the quote. (The workflow may additionally accept a pair its
/// embedding model scores above the FACT threshold: "サインイン" vs "sign-in".)
#[must_use]
pub fn value_agrees_with_quote(value: &str, quote: &str) -> bool {
    let v = value.trim().to_lowercase();
    let q = quote.trim().to_lowercase();
    if v.is_empty() || q.is_empty() {
        return false;
    }
    if q.contains(&v) || v.contains(&q) {
        return true;
    }
    let vt = lexical_tokens(&v);
    let qt = lexical_tokens(&q);
    if vt.iter().any(|t| qt.contains(t)) {
        return true;
    }
    let vb = bigrams(&v);
    if vb.is_empty() {
        return false;
    }
    let qb = bigrams(&q);
    #[allow(clippy::cast_precision_loss)]
    let share = vb.iter().filter(|b| qb.contains(b)).count() as f32 / vb.len() as f32;
    share >= VALUE_QUOTE_MIN_BIGRAM_OVERLAP
}

fn bigrams(s: &str) -> Vec<(char, char)> {
    let chars: Vec<char> = s.chars().filter(|c| !c.is_whitespace() && !c.is_ascii_punctuation()).collect();
    chars.windows(2).map(|w| (w[0], w[1])).collect()
}

/// Slots the request did not fill, in priority order for the intent
/// (seed 000 `_prioritize_missing`: for changes the target and the problem
/// come first; for investigation the trigger comes before the problem).
#[must_use]
pub fn missing_slots(intent: Intent, frame: &QueryFrame) -> Vec<Slot> {
    let order: [Slot; 4] = match intent {
        Intent::Modify | Intent::Implement => {
            [Slot::TargetFeature, Slot::ObservedIssue, Slot::TriggerCondition, Slot::DesiredAction]
        }
        Intent::Investigate | Intent::Question => {
            [Slot::TargetFeature, Slot::TriggerCondition, Slot::ObservedIssue, Slot::DesiredAction]
        }
    };
    order.into_iter().filter(|s| !frame.has(*s)).collect()
}

/// Risk level of a request and the rules that set it (SPEC §8 "Risk").
///
/// - MODIFY without `observed_issue` -> HIGH (a change with no stated problem).
/// - MODIFY without `target_feature` -> HIGH.
/// - `desired_action` without `observed_issue` -> HIGH. For IMPLEMENT the
///   desired action *is* the new feature and there is no problem to observe,
///   so this rule is not applied to IMPLEMENT (it would make every feature
///   request HIGH and demand evidence of a problem that does not exist);
///   IMPLEMENT without `target_feature` is HIGH instead (where the feature
///   goes is unknown).
/// - IMPLEMENT -> at least MEDIUM.
/// - INVESTIGATE / QUESTION -> LOW unless a rule above fires.
#[must_use]
pub fn assess_risk(intent: Intent, frame: &QueryFrame) -> (RiskLevel, Vec<String>) {
    let mut reasons = Vec::new();
    let target = frame.has(Slot::TargetFeature);
    let issue = frame.has(Slot::ObservedIssue);
    let action = frame.has(Slot::DesiredAction);
    if intent == Intent::Modify && !issue {
        reasons.push("MODIFY without observed_issue: the problem to fix is not stated".to_string());
    }
    if intent == Intent::Modify && !target {
        reasons.push("MODIFY without target_feature: what to change is not stated".to_string());
    }
    if intent != Intent::Implement && intent != Intent::Modify && action && !issue {
        reasons.push("desired_action without observed_issue: a change is asked with no stated problem".to_string());
    }
    if intent == Intent::Implement && !target {
        reasons.push("IMPLEMENT without target_feature: where the feature belongs is not stated".to_string());
    }
    if !reasons.is_empty() {
        return (RiskLevel::High, reasons);
    }
    if intent == Intent::Implement {
        return (RiskLevel::Medium, vec!["IMPLEMENT is at least MEDIUM: new code must fit existing patterns".to_string()]);
    }
    (RiskLevel::Low, vec![format!("{intent} with the needed slots stated")])
}

/// Guidance for one missing slot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct SlotHint {
    pub slot: Slot,
    pub hint: &'static str,
    pub action: &'static str,
}

/// What to investigate for the missing slots (SPEC §8, seed 000
/// `INVESTIGATION_HINTS`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct InvestigationGuidance {
    pub missing_slots: Vec<Slot>,
    pub hints: Vec<SlotHint>,
    pub recommended_tools: Vec<&'static str>,
}

/// Hint and action per slot, adapted from seed 000 to this server's tools.
#[must_use]
pub fn slot_hint(slot: Slot) -> (&'static str, &'static str) {
    match slot {
        Slot::TargetFeature => (
            "The feature or module concerned is not identified.",
            "Get an overview with repo_map or analyze_structure, then locate candidate classes and functions with find_definitions and search_text.",
        ),
        Slot::ObservedIssue => (
            "The problem motivating the change is not stated.",
            "Look for error messages, log lines, failing conditions and TODOs with search_text; read the suspicious function with get_function_at_line.",
        ),
        Slot::TriggerCondition => (
            "The condition under which the problem occurs is not identified.",
            "Search the conditions and exception handling around the target with search_text, and follow callers with find_references.",
        ),
        Slot::DesiredAction => (
            "The expected change is not stated.",
            "Measure the impact area with find_references and analyze_structure before choosing what to change.",
        ),
    }
}

/// Builds the guidance for `missing` slots; tools come from the router's
/// slot -> tools table, de-duplicated in order.
#[must_use]
pub fn investigation_guidance(missing: &[Slot]) -> InvestigationGuidance {
    let mut tools: Vec<&'static str> = Vec::new();
    let mut hints = Vec::new();
    for slot in missing {
        let (hint, action) = slot_hint(*slot);
        hints.push(SlotHint { slot: *slot, hint, action });
        for t in crate::router::slot_tools(*slot) {
            if !tools.contains(t) {
                tools.push(t);
            }
        }
    }
    InvestigationGuidance { missing_slots: missing.to_vec(), hints, recommended_tools: tools }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FrameSlot, Source};

    fn frame(slots: &[Slot]) -> QueryFrame {
        let mut f = QueryFrame::default();
        for s in slots {
            f.slots.insert(*s, FrameSlot { value: "x".into(), quote: "x".into(), source: Source::Fact });
        }
        f
    }

    #[test]
    fn verbatim_quotes() {
        let q = "ログイン機能でパスワードが空のときエラーが出ない";
        assert!(quote_is_verbatim("パスワードが空のとき", q));
        assert!(quote_is_verbatim("  ログイン機能で ", q));
        assert!(!quote_is_verbatim("ログアウト機能", q));
        assert!(!quote_is_verbatim("", q));
    }

    #[test]
    fn value_quote_agreement() {
        assert!(value_agrees_with_quote("login", "the Login form"));
        assert!(value_agrees_with_quote("login form", "in the login form"));
        assert!(value_agrees_with_quote("ログイン機能", "ログイン機能で"));
        assert!(!value_agrees_with_quote("ログアウト", "ログイン機能で"));
        assert!(!value_agrees_with_quote("payment", "the login form"));
    }

    #[test]
    fn risk_rules() {
        use Slot::*;
        assert_eq!(assess_risk(Intent::Modify, &frame(&[TargetFeature, DesiredAction])).0, RiskLevel::High);
        assert_eq!(assess_risk(Intent::Modify, &frame(&[ObservedIssue])).0, RiskLevel::High);
        assert_eq!(
            assess_risk(Intent::Modify, &frame(&[TargetFeature, ObservedIssue, DesiredAction])).0,
            RiskLevel::Low
        );
        assert_eq!(assess_risk(Intent::Implement, &frame(&[TargetFeature, DesiredAction])).0, RiskLevel::Medium);
        assert_eq!(assess_risk(Intent::Implement, &frame(&[DesiredAction])).0, RiskLevel::High);
        assert_eq!(assess_risk(Intent::Investigate, &frame(&[TargetFeature])).0, RiskLevel::Low);
        assert_eq!(assess_risk(Intent::Investigate, &frame(&[TargetFeature, DesiredAction])).0, RiskLevel::High);
    }

    #[test]
    fn missing_slot_order_and_guidance() {
        let f = frame(&[Slot::TargetFeature]);
        let m = missing_slots(Intent::Modify, &f);
        assert_eq!(m, vec![Slot::ObservedIssue, Slot::TriggerCondition, Slot::DesiredAction]);
        let g = investigation_guidance(&m);
        assert_eq!(g.hints.len(), 3);
        assert_eq!(g.recommended_tools[0], "search_text");
        let mut dedup = g.recommended_tools.clone();
        dedup.dedup();
        assert_eq!(dedup.len(), g.recommended_tools.len());
    }
}
