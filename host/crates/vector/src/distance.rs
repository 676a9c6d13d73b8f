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

/// Dot product of two int8 codes ([`quantize`]), exact in `i32` (384
/// components of at most 127² stay far below `i32::MAX`). On x86-64 with
/// AVX2 (detected once) it multiplies 32 pairs per instruction
/// (`vpmaddubsw`); what the compiler makes of the portable loop is four times
/// slower there (bench/README.md, "Vector search at 100k").
#[must_use]
pub fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    {
        static AVX2: LazyLock<bool> = LazyLock::new(|| std::arch::is_x86_feature_detected!("avx2"));
        if *AVX2 {
            // SAFETY: AVX2 is present (checked above).
            #[allow(unsafe_code)]
            return unsafe { avx2::dot_i8(a, b) };
        }
    }
    a.iter().zip(b).map(|(&x, &y)| i32::from(x) * i32::from(y)).sum()
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    use std::arch::x86_64::{
        __m256i, _mm_add_epi32, _mm_cvtsi128_si32, _mm_shuffle_epi32, _mm256_abs_epi8, _mm256_add_epi32,
        _mm256_castsi256_si128, _mm256_extracti128_si256, _mm256_loadu_si256, _mm256_madd_epi16,
        _mm256_maddubs_epi16, _mm256_set1_epi16, _mm256_setzero_si256, _mm256_sign_epi8,
    };

    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
        let len = a.len().min(b.len());
        let blocks = len / 32;
        let ones = _mm256_set1_epi16(1);
        let mut acc: __m256i = _mm256_setzero_si256();
        for i in 0..blocks {
            // SAFETY: i * 32 + 32 <= len, so both 32-byte loads are in
            // bounds; unaligned loads need no alignment.
            let (va, vb) = unsafe {
                (
                    _mm256_loadu_si256(a.as_ptr().add(i * 32).cast::<__m256i>()),
                    _mm256_loadu_si256(b.as_ptr().add(i * 32).cast::<__m256i>()),
                )
            };
            // |a| * (b with a's sign) = a * b, as unsigned x signed bytes:
            // `vpmaddubsw` then sums pairs into i16 (at most 2 * 127 * 128,
            // no saturation since codes lie in -127..=127) and `vpmaddwd`
            // widens pairs of those into i32.
            let pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(va), _mm256_sign_epi8(vb, va));
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ones));
        }
        let half = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256::<1>(acc));
        let quarter = _mm_add_epi32(half, _mm_shuffle_epi32::<0b01_00_11_10>(half));
        let one = _mm_add_epi32(quarter, _mm_shuffle_epi32::<0b10_11_00_01>(quarter));
        let tail: i32 = a[blocks * 32..len].iter().zip(&b[blocks * 32..len]).map(|(&x, &y)| i32::from(x) * i32::from(y)).sum();
        _mm_cvtsi128_si32(one) + tail
    }
}

/// Symmetric int8 quantization of one vector: `codes[i] * scale ≈ v[i]`,
/// with `scale = max |v[i]| / 127`. Scores from codes
/// (`scale_a * scale_b * dot_i8`) are within ~1e-3 of the float dot product
/// for unit vectors of a few hundred components: good enough to shortlist,
/// not to rank (the shortlist is re-scored with the float vectors).
pub fn quantize(v: &[f32], codes: &mut Vec<i8>) -> f32 {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        codes.extend(std::iter::repeat_n(0, v.len()));
        return 0.0;
    }
    let inv = 127.0 / max;
    // |x * inv| <= 127 by construction: the cast cannot saturate.
    #[allow(clippy::cast_possible_truncation)]
    codes.extend(v.iter().map(|x| (x * inv).round() as i8));
    max / 127.0
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

    #[test]
    fn quantized_dot_is_close_to_the_float_dot() {
        let unit = |seed: u32| {
            let v: Vec<f32> = (0..384u32).map(|i| ((i * 7919 + seed * 104_729) % 1000) as f32 / 500.0 - 1.0).collect();
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.into_iter().map(|x| x / n).collect::<Vec<f32>>()
        };
        let (a, b) = (unit(1), unit(2));
        let (mut ca, mut cb) = (Vec::new(), Vec::new());
        let (sa, sb) = (quantize(&a, &mut ca), quantize(&b, &mut cb));
        let approx = sa * sb * dot_i8(&ca, &cb) as f32;
        assert!((approx - dot(&a, &b)).abs() < 2e-3, "{approx} vs {}", dot(&a, &b));
        let naive: i32 = ca.iter().zip(&cb).map(|(&x, &y)| i32::from(x) * i32::from(y)).sum();
        assert_eq!(dot_i8(&ca, &cb), naive);
        let naive_tail: i32 = ca[..37].iter().zip(&cb[..37]).map(|(&x, &y)| i32::from(x) * i32::from(y)).sum();
        assert_eq!(dot_i8(&ca[..37], &cb[..37]), naive_tail, "a length that is not a whole number of blocks");
        // The extremes: no pair sum may saturate.
        assert_eq!(dot_i8(&[-127; 64], &[-127; 64]), 64 * 127 * 127);
        assert_eq!(dot_i8(&[127; 64], &[-127; 64]), -64 * 127 * 127);
        let mut zero = Vec::new();
        assert_eq!(quantize(&[0.0; 4], &mut zero), 0.0);
        assert_eq!(zero, vec![0; 4]);
    }
}
