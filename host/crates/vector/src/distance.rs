//! Cosine distance for unit vectors.

use std::sync::LazyLock;

use hnsw_rs::anndists::dist::Distance;

/// The CPU's widest supported SIMD level, detected once.
static ARCH: LazyLock<pulp::Arch> = LazyLock::new(pulp::Arch::new);

/// Dot product. Sixteen independent accumulators let the compiler vectorise
/// the loop without fast-math; it is compiled for the widest SIMD level the
/// CPU offers (AVX2 + FMA on x86-64, detected at run time), with a baseline
/// fallback, so one binary runs everywhere.
#[must_use]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    ARCH.dispatch(Dot(a, b))
}

struct Dot<'a>(&'a [f32], &'a [f32]);

impl pulp::WithSimd for Dot<'_> {
    type Output = f32;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) -> f32 {
        let (a, b) = (self.0, self.1);
        let mut acc = [0f32; 16];
        let chunks_a = a.chunks_exact(16);
        let chunks_b = b.chunks_exact(16);
        let tail: f32 = chunks_a.remainder().iter().zip(chunks_b.remainder()).map(|(x, y)| x * y).sum();
        for (ca, cb) in chunks_a.zip(chunks_b) {
            for i in 0..16 {
                acc[i] += ca[i] * cb[i];
            }
        }
        let mut half = [0f32; 8];
        for i in 0..8 {
            half[i] = acc[i] + acc[i + 8];
        }
        half.iter().sum::<f32>() + tail
    }
}

/// `1 - a·b` for L2-normalised vectors: the cosine distance without
/// recomputing norms, clamped to `[0, 2]` so rounding never yields a
/// negative distance (anndists' `DistDot` asserts on that, which a vector
/// whose norm rounds above 1 would trip).
#[derive(Clone, Copy, Debug, Default)]
pub struct UnitDot;

impl Distance<f32> for UnitDot {
    fn eval(&self, va: &[f32], vb: &[f32]) -> f32 {
        (1.0 - dot(va, vb)).clamp(0.0, 2.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_matches_naive() {
        let a: Vec<f32> = (0..37).map(|i| i as f32 * 0.1).collect();
        let b: Vec<f32> = (0..37).map(|i| 1.0 - i as f32 * 0.05).collect();
        let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - naive).abs() < 1e-3);
        assert_eq!(UnitDot.eval(&[1.0, 0.0], &[1.0000001, 0.0]), 0.0);
    }
}
