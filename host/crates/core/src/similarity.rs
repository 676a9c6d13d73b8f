//! Reading embedding similarities on a scale that means the same with every
//! model.
//!
//! Raw cosine similarity is model-specific: unrelated texts score about 0.05
//! with all-MiniLM-L6-v2 but about 0.75 with multilingual-e5-small. Both
//! the search thresholds and the session's relevance tiers therefore judge a
//! similarity against a *baseline*: the median similarity of the same text
//! with a set of unrelated anchors, embedded with the same model.

/// The median of `values` (0 for none): the baseline of a set of anchor
/// similarities, robust to one or two anchors happening to be related.
#[must_use]
pub fn median(values: &[f32]) -> f32 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f32::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => f32::midpoint(sorted[n / 2 - 1], sorted[n / 2]),
    }
}

/// How far `raw` rises from `baseline` towards 1:
/// `(raw - baseline) / (1 - baseline)`, clamped to `[0, 1]`. No closer than
/// the unrelated anchors scores 0.
///
/// ```
/// use code_intel_core::similarity::{calibrate, median};
/// let minilm = median(&[0.02, 0.08, 0.05, 0.30, 0.04]); // unrelated ~0.05
/// let e5 = median(&[0.75, 0.77, 0.76, 0.86, 0.74]); // unrelated ~0.76
/// assert!((calibrate(0.6, minilm) - calibrate(0.9, e5)).abs() < 0.01);
/// assert_eq!(calibrate(0.7, e5), 0.0);
/// ```
#[must_use]
pub fn calibrate(raw: f32, baseline: f32) -> f32 {
    let span = (1.0 - baseline).max(f32::EPSILON);
    ((raw - baseline) / span).clamp(0.0, 1.0)
}
