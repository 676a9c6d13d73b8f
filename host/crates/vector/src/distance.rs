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

/// Symmetric int8 quantization of one vector: `codes[i] * scale ≈ v[i]`,
/// with `scale = max |v[i]| / 127` (how a query meets int4 codes in
/// [`dot_u4_i8`]).
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

/// Components per int4 block. A block's 32 codes fill 16 bytes, the first
/// 16 in the low nibbles and the next 16 in the high ones, so one 16-byte
/// load unpacks (mask, shift) into the block's codes in order.
pub const INT4_BLOCK: usize = 32;

/// Bytes of the int4 code of a `dim`-component vector (whole blocks).
#[must_use]
pub fn int4_len(dim: usize) -> usize {
    dim.div_ceil(INT4_BLOCK) * INT4_BLOCK / 2
}

/// 4-bit quantization of one vector: unsigned codes `u` with
/// `v[i] ≈ scale * (u - 8)`, `u` in 1..=15, `scale = max |v[i]| / 7`;
/// components past the end of `v` (block padding) are 8, i.e. zero.
/// Appends [`int4_len`] bytes to `codes` and returns the scale. Scores from
/// these codes are within ~1e-2 of the float dot product for unit vectors
/// of a few hundred components: enough to pick a shortlist, which the float
/// vectors then score.
pub fn quantize4(v: &[f32], codes: &mut Vec<u8>) -> f32 {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    let inv = if max > 0.0 && max.is_finite() { 7.0 / max } else { 0.0 };
    // |x * inv| <= 7 by construction: the cast cannot wrap.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let code = |i: usize| -> u8 { v.get(i).map_or(8, |x| ((x * inv).round() as i32 + 8) as u8) };
    for block in 0..v.len().div_ceil(INT4_BLOCK) {
        let first = block * INT4_BLOCK;
        codes.extend((0..16).map(|j| code(first + j) | (code(first + 16 + j) << 4)));
    }
    if inv == 0.0 { 0.0 } else { max / 7.0 }
}

/// `Σ q[i] * u[i]` for the unsigned values `u` (0..=15) of int4 codes
/// ([`quantize4`]) and an int8 query ([`quantize`]) padded with zeros to
/// whole blocks. On x86-64 with AVX2 (detected once) a block is unpacked
/// and multiplied by a handful of instructions (`vpmaddubsw`, unsigned
/// codes times signed query). The codes are half the size of int8 ones,
/// and a scan reads every one.
#[must_use]
pub fn dot_u4_i8(codes: &[u8], q: &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx2() {
            // SAFETY: AVX2 is present (checked above).
            #[allow(unsafe_code)]
            return unsafe { avx2::dot_u4_i8(codes, q) };
        }
    }
    dot_u4_i8_portable(codes, q)
}

/// [`dot_u4_i8`] of the query with each of the consecutive codes in
/// `codes` (`code_len` bytes each), written to `out` (cleared first). One
/// call per batch rather than per point: the scan's per-point cost is a
/// few nanoseconds, which a call and a feature check per point would double.
pub fn dots_u4_i8(codes: &[u8], code_len: usize, q: &[i8], out: &mut Vec<i32>) {
    out.clear();
    if code_len == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx2() && code_len.is_multiple_of(16) {
            // SAFETY: AVX2 is present (checked above).
            #[allow(unsafe_code)]
            unsafe {
                avx2::dots_u4_i8(codes, code_len, q, out);
            }
            return;
        }
    }
    out.extend(codes.chunks_exact(code_len).map(|code| dot_u4_i8_portable(code, q)));
}

/// AVX2 support, detected once.
#[cfg(target_arch = "x86_64")]
fn has_avx2() -> bool {
    static AVX2: LazyLock<bool> = LazyLock::new(|| std::arch::is_x86_feature_detected!("avx2"));
    *AVX2
}

fn dot_u4_i8_portable(codes: &[u8], q: &[i8]) -> i32 {
    let mut sum = 0i32;
    for (bytes, qs) in codes.chunks_exact(16).zip(q.chunks_exact(INT4_BLOCK)) {
        for (j, &b) in bytes.iter().enumerate() {
            sum += i32::from(b & 0x0F) * i32::from(qs[j]) + i32::from(b >> 4) * i32::from(qs[16 + j]);
        }
    }
    sum
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    use std::arch::x86_64::{
        _MM_HINT_T0, __m128i, __m256i, _mm_add_epi32, _mm_and_si128, _mm_cvtsi128_si32, _mm_loadu_si128, _mm_prefetch,
        _mm_set1_epi8, _mm_shuffle_epi32, _mm_srli_epi16, _mm256_add_epi32, _mm256_castsi256_si128, _mm256_extracti128_si256,
        _mm256_loadu_si256, _mm256_madd_epi16, _mm256_maddubs_epi16, _mm256_set_m128i, _mm256_set1_epi16,
        _mm256_setzero_si256,
    };

    /// How far ahead of the code being scored [`dots_u4_i8`] asks for codes
    /// to be loaded into the cache. A search's codes come from memory, not
    /// the cache: the query's embedding has just read the model's weights.
    /// The hardware's own prefetching left the scan waiting on loads; with
    /// 8 KiB ahead a 100k-point search after reading 100 MB of other data
    /// took 1.4-1.8 ms p50 instead of 2.1-2.8 (`scan_profile 100000 300 0
    /// 100`, alternating builds; 4 KiB: 1.7-2.0, 32 KiB: 1.9-2.0), and the
    /// same as before with the codes already in the cache.
    const PREFETCH_AHEAD: usize = 8 * 1024;

    /// # Safety
    /// The CPU must support AVX2; `code_len` is a multiple of 16.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn dots_u4_i8(codes: &[u8], code_len: usize, q: &[i8], out: &mut Vec<i32>) {
        out.reserve(codes.len() / code_len);
        for (i, code) in codes.chunks_exact(code_len).enumerate() {
            // Ask for the code `PREFETCH_AHEAD` bytes on, a line at a time.
            // `wrapping_add`: near the end the address may lie past the
            // slice, which a prefetch may name (it never faults) but
            // in-bounds pointer arithmetic may not.
            let ahead = codes.as_ptr().wrapping_add(i * code_len + PREFETCH_AHEAD);
            for line in (0..code_len).step_by(64) {
                _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(line).cast::<i8>());
            }
            // SAFETY: the caller checked AVX2; inlined here, so the batch
            // pays no call per point.
            out.push(unsafe { dot_u4_i8(code, q) });
        }
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) unsafe fn dot_u4_i8(codes: &[u8], q: &[i8]) -> i32 {
        let blocks = (codes.len() / 16).min(q.len() / 32);
        let low_nibbles = _mm_set1_epi8(0x0F);
        let ones = _mm256_set1_epi16(1);
        let mut acc: __m256i = _mm256_setzero_si256();
        for block in 0..blocks {
            // SAFETY: block < blocks, so the 16 code bytes and 32 query
            // bytes read are in bounds; unaligned loads need no alignment.
            let (packed, qv) = unsafe {
                (
                    _mm_loadu_si128(codes.as_ptr().add(block * 16).cast::<__m128i>()),
                    _mm256_loadu_si256(q.as_ptr().add(block * 32).cast::<__m256i>()),
                )
            };
            let low = _mm_and_si128(packed, low_nibbles);
            let high = _mm_and_si128(_mm_srli_epi16::<4>(packed), low_nibbles);
            // Codes 0..16 of the block in the lower half, 16..32 in the upper.
            let unpacked = _mm256_set_m128i(high, low);
            // Unsigned codes (<= 15) times signed query bytes, pairs summed
            // into i16 (at most 2 * 15 * 128: no saturation), then into i32.
            let pairs = _mm256_maddubs_epi16(unpacked, qv);
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ones));
        }
        let half = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256::<1>(acc));
        let quarter = _mm_add_epi32(half, _mm_shuffle_epi32::<0b01_00_11_10>(half));
        let one = _mm_add_epi32(quarter, _mm_shuffle_epi32::<0b10_11_00_01>(quarter));
        _mm_cvtsi128_si32(one)
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

    #[test]
    fn int4_scores_are_close_to_the_float_dot() {
        let unit = |seed: u32, dim: u32| {
            let v: Vec<f32> = (0..dim).map(|i| ((i * 7919 + seed * 104_729) % 1000) as f32 / 500.0 - 1.0).collect();
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.into_iter().map(|x| x / n).collect::<Vec<f32>>()
        };
        for dim in [384, 37] {
            let (a, b) = (unit(1, dim), unit(2, dim));
            let mut q = Vec::new();
            let sq = quantize(&a, &mut q);
            q.resize(int4_len(a.len()) * 2, 0);
            let mut codes = Vec::new();
            let sb = quantize4(&b, &mut codes);
            assert_eq!(codes.len(), int4_len(dim as usize));
            let q_sum: i32 = q.iter().map(|&x| i32::from(x)).sum();
            let approx = sq * sb * (dot_u4_i8(&codes, &q) - 8 * q_sum) as f32;
            assert!((approx - dot(&a, &b)).abs() < 2e-2, "{approx} vs {} ({dim} components)", dot(&a, &b));
            assert_eq!(dot_u4_i8(&codes, &q), dot_u4_i8_portable(&codes, &q), "the SIMD path agrees with the portable one");
            let mut two = codes.clone();
            two.extend(std::iter::repeat_n(0x99, codes.len()));
            let mut out = vec![7];
            dots_u4_i8(&two, codes.len(), &q, &mut out);
            assert_eq!(out, vec![dot_u4_i8(&codes, &q), dot_u4_i8_portable(&two[codes.len()..], &q)], "one score per code");
        }
        // The extremes: no pair sum may saturate.
        let codes = vec![0xFF; 16];
        assert_eq!(dot_u4_i8(&codes, &[-128; 32]), -32 * 15 * 128);
        assert_eq!(dot_u4_i8(&codes, &[127; 32]), 32 * 15 * 127);
        let mut zero = Vec::new();
        assert_eq!(quantize4(&[0.0; 4], &mut zero), 0.0);
        assert_eq!(zero, vec![0x88; 16]);
        assert_eq!(quantize(&[0.0; 4], &mut Vec::new()), 0.0);
    }
}
