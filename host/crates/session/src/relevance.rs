//! NL -> symbol relevance (SPEC §8, seed 001 "three tiers").
//!
//! The server, not the agent, decides whether a symbol is what the request's
//! `target_feature` talks about. A [`Relevance`] provider scores texts; the
//! host provides one backed by the embedding model. Without a model the
//! documented lexical rule [`LexicalRelevance`] is used, and every response
//! says which method judged.

use serde::Serialize;

use crate::model::Tier;

/// Score above which a symbol is accepted as FACT (SPEC §8: "> 0.6 FACT";
/// seed 001 `THRESHOLD_HIGH`).
pub const FACT_THRESHOLD: f32 = 0.6;

/// Score below which a symbol is rejected with re-investigation guidance
/// (SPEC §8: "< 0.3 rejected"; seed 001 `THRESHOLD_LOW`). Between this and
/// [`FACT_THRESHOLD`] the symbol is accepted but the session's risk is forced
/// to HIGH.
pub const REJECT_THRESHOLD: f32 = 0.3;

/// Map score at which a previous agreement is offered as a hint at session
/// start (SPEC §6/§8: short-circuit at >= 0.7).
pub const MAP_HINT_THRESHOLD: f32 = 0.7;

/// Scores of candidate texts against one natural-language term.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scored {
    /// Which method produced the scores (`"embedding:<model>"`, `"lexical"`).
    pub method: String,
    /// Why a fallback was used, when one was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// One score per candidate, in order, roughly in `[0, 1]`.
    pub scores: Vec<f32>,
}

/// Scores how well candidate texts match a natural-language term.
///
/// Candidates given by the workflow are symbol names already split into words
/// ([`split_symbol`]). Implementations must not approve blindly: when they
/// cannot judge (no model) they fall back to [`LexicalRelevance`] and say so in
/// [`Scored::note`].
pub trait Relevance: Send + Sync {
    /// Scores each candidate against `nl`.
    ///
    /// # Errors
    /// A message naming what failed; the workflow then uses the lexical rule
    /// and reports the failure.
    fn score(&self, nl: &str, candidates: &[String]) -> Result<Scored, String>;
}

/// The three-tier verdict for a score.
#[must_use]
pub fn tier(score: f32) -> Tier {
    if score > FACT_THRESHOLD {
        Tier::Fact
    } else if score >= REJECT_THRESHOLD {
        Tier::Accepted
    } else {
        Tier::Rejected
    }
}

/// Splits a symbol into words for comparison with natural language:
/// `App\Services\AuthService::handleLogin` -> `App Services Auth Service handle Login`.
/// camelCase, PascalCase (with acronyms: `HTTPServer` -> `HTTP Server`),
/// snake_case, kebab-case, digits and path separators all split.
#[must_use]
pub fn split_symbol(symbol: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    for part in symbol.split(|c: char| !c.is_alphanumeric()) {
        let chars: Vec<char> = part.chars().collect();
        let mut cur = String::new();
        for (i, &c) in chars.iter().enumerate() {
            let prev = i.checked_sub(1).map(|j| chars[j]);
            let next = chars.get(i + 1).copied();
            let boundary = match prev {
                None => false,
                Some(p) => {
                    (p.is_lowercase() && c.is_uppercase())
                        || (p.is_uppercase() && c.is_uppercase() && next.is_some_and(char::is_lowercase))
                        || (p.is_alphabetic() != c.is_alphabetic())
                }
            };
            if boundary && !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            cur.push(c);
        }
        if !cur.is_empty() {
            words.push(cur);
        }
    }
    words.join(" ")
}

/// Words that carry no meaning about *which* code is meant; dropped by the
/// lexical rule so "the login feature" and "LoginController" compare on
/// "login" alone.
pub const LEXICAL_STOPWORDS: &[&str] = &[
    "a", "an", "and", "as", "at", "be", "by", "for", "from", "in", "into", "is", "it", "of", "on", "or", "the",
    "to", "when", "with", "this", "that", "feature", "function", "functionality", "module", "code", "class",
    "method", "logic", "part", "page", "screen", "thing",
];

/// Shortest shared prefix that makes two different words match in the
/// lexical rule ("auth" ~ "authentication", "valid" ~ "validator"): four
/// letters keeps "use"/"user" and "log"/"login" apart.
pub const LEXICAL_MIN_PREFIX: usize = 4;

/// Lower-case content words of `text` (split as [`split_symbol`] does),
/// without [`LEXICAL_STOPWORDS`] and one-letter words.
#[must_use]
pub fn lexical_tokens(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in split_symbol(text).split_whitespace() {
        let w = w.to_lowercase();
        if w.chars().count() < 2 || LEXICAL_STOPWORDS.contains(&w.as_str()) {
            continue;
        }
        if !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

fn words_match(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    short.chars().count() >= LEXICAL_MIN_PREFIX && long.starts_with(short)
}

/// The documented fallback rule when no embedding model is available:
/// a Dice coefficient over content words. With `T` the words of the term and
/// `S` the words of the split symbol, `score = (|S matched in T| + |T matched
/// in S|) / (|S| + |T|)`, where two words match when equal or when one is a
/// prefix of the other of at least [`LEXICAL_MIN_PREFIX`] letters.
///
/// "login" vs `LoginController` = 2/3 (FACT); "user login" vs
/// `LoginController` = 2/4 (grey zone); "config" vs `AuthService` = 0
/// (rejected). It cannot relate different languages ("ログイン" vs `Login`):
/// such pairs score 0 and are rejected, never approved blindly.
#[derive(Clone, Copy, Debug, Default)]
pub struct LexicalRelevance;

impl LexicalRelevance {
    /// The lexical score of one pair.
    #[must_use]
    pub fn pair(nl: &str, candidate: &str) -> f32 {
        let t = lexical_tokens(nl);
        let s = lexical_tokens(candidate);
        if t.is_empty() || s.is_empty() {
            return 0.0;
        }
        let s_matched = s.iter().filter(|w| t.iter().any(|x| words_match(w, x))).count();
        let t_matched = t.iter().filter(|w| s.iter().any(|x| words_match(w, x))).count();
        #[allow(clippy::cast_precision_loss)]
        let score = (s_matched + t_matched) as f32 / (s.len() + t.len()) as f32;
        score
    }
}

/// Name under which the lexical rule reports itself.
pub const LEXICAL_METHOD: &str = "lexical";

impl Relevance for LexicalRelevance {
    fn score(&self, nl: &str, candidates: &[String]) -> Result<Scored, String> {
        Ok(Scored {
            method: LEXICAL_METHOD.to_string(),
            note: None,
            scores: candidates.iter().map(|c| Self::pair(nl, c)).collect(),
        })
    }
}

/// Symbol names of everyday code that no feature request is about as a
/// whole: the yardstick [`calibrate`] measures an embedding model's
/// similarity of *unrelated* code against. Varied on purpose, so that a term
/// close to one or two of them (a request about CSV export) still leaves the
/// median unrelated.
pub const CALIBRATION_ANCHORS: &[&str] = &[
    "Color Palette",
    "Csv Exporter",
    "Date Formatter",
    "Image Resizer",
    "Queue Worker",
    "Pdf Renderer",
    "Cache Store",
    "Http Client",
    "Zip Archive Reader",
    "Locale Switcher",
    "Retry Backoff",
];

/// Maps raw embedding similarities onto the scale the tiers are defined on.
///
/// Raw cosine similarity depends on the model: unrelated names score around
/// 0.1 with all-MiniLM-L6-v2 but around 0.75 with multilingual-e5-small, so a
/// fixed 0.3/0.6 cut would reject everything with one model and approve
/// everything with the other. The baseline is the median similarity of the
/// term with [`CALIBRATION_ANCHORS`]; a candidate's score is how far it rises
/// from that baseline towards 1: `(raw - baseline) / (1 - baseline)`,
/// clamped to `[0, 1]`. A candidate no closer than unrelated code scores 0.
#[must_use]
pub fn calibrate(raw: &[f32], anchor_raw: &[f32]) -> Vec<f32> {
    let baseline = code_intel_core::similarity::median(anchor_raw);
    raw.iter().map(|&r| code_intel_core::similarity::calibrate(r, baseline)).collect()
}

/// The relevance the tiers judge when a model is available: the better of
/// the calibrated embedding score (which relates synonyms and other
/// languages: "sign in" ~ `LoginController`) and the lexical rule (which
/// never lets a model's blind spot reject a symbol that literally names the
/// feature).
#[must_use]
pub fn combine(calibrated: &[f32], lexical: &[f32]) -> Vec<f32> {
    calibrated.iter().zip(lexical).map(|(c, l)| c.max(*l)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_measures_from_the_unrelated_median() {
        // An e5-like model: unrelated code scores ~0.75.
        let anchors = [0.74, 0.76, 0.75, 0.90, 0.73];
        let scores = calibrate(&[0.75, 0.95, 0.80, 0.60], &anchors);
        assert!(scores[0].abs() < 1e-6, "{scores:?}"); // at the baseline
        assert!((scores[1] - 0.8).abs() < 1e-4, "{scores:?}"); // 0.20 of the 0.25 left
        assert_eq!(tier(scores[2]), Tier::Rejected, "{scores:?}"); // 0.2
        assert!(scores[3].abs() < 1e-6, "{scores:?}"); // below the baseline: clamped
        // A MiniLM-like model: unrelated code scores ~0.1.
        let scores = calibrate(&[0.75, 0.35], &[0.05, 0.1, 0.15, 0.12]);
        assert_eq!(tier(scores[0]), Tier::Fact, "{scores:?}");
        assert_eq!(tier(scores[1]), Tier::Rejected, "{scores:?}");
        assert_eq!(combine(&[0.2, 0.7], &[0.67, 0.0]), [0.67, 0.7]);
    }

    #[test]
    fn splits_symbols() {
        assert_eq!(split_symbol("AuthService"), "Auth Service");
        assert_eq!(split_symbol("App\\Services\\AuthService::handleLogin"), "App Services Auth Service handle Login");
        assert_eq!(split_symbol("HTTPServer"), "HTTP Server");
        assert_eq!(split_symbol("parse_json_v2"), "parse json v 2");
    }

    #[test]
    fn lexical_tiers() {
        let r = LexicalRelevance;
        let s = r
            .score("login", &["Login Controller".into(), "Config Loader".into(), "Authentication Service".into()])
            .unwrap();
        assert_eq!(tier(s.scores[0]), Tier::Fact);
        assert_eq!(tier(s.scores[1]), Tier::Rejected);
        assert_eq!(tier(s.scores[2]), Tier::Rejected);
        assert_eq!(tier(LexicalRelevance::pair("user login", "Login Controller")), Tier::Accepted);
        assert_eq!(tier(LexicalRelevance::pair("auth", "Authentication Service")), Tier::Fact);
        assert_eq!(tier(LexicalRelevance::pair("ログイン機能", "Login Controller")), Tier::Rejected);
        assert!((LexicalRelevance::pair("the login feature", "Login Controller") - 2.0 / 3.0).abs() < 1e-6);
    }

    #[test]
    fn tier_boundaries() {
        assert_eq!(tier(0.61), Tier::Fact);
        assert_eq!(tier(0.6), Tier::Accepted);
        assert_eq!(tier(0.3), Tier::Accepted);
        assert_eq!(tier(0.29), Tier::Rejected);
    }
}
