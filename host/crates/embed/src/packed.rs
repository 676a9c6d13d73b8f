//! The encoder's forward pass over packed sequences.
//!
//! candle-transformers' `BertModel` computes a batch as one padded tensor:
//! every layer multiplies padding rows too, and makes seven element-wise
//! passes over the batch's attention scores (batch x heads x len² floats,
//! tens of megabytes) with scalar GELU (`erf` from libm) and `exp`. Profiled
//! with all-MiniLM-L6-v2 on 2 cores, the matrix products were only ~40 % of
//! its time: GELU's `erf` 13 %, `exp` 13 %, broadcast additions and
//! divisions 12 %. PyTorch's linear layers take about as long as candle's
//! products, but they are ~60 % of its time: the work between them made the
//! difference (bench/README.md, "A packed forward pass").
//!
//! This pass computes the same function (the same weights, layer for layer;
//! tests compare it with `BertModel`) differently:
//! - the batch's sequences are laid end to end with no padding: the linear
//!   layers see only real tokens, and attention runs per sequence and head
//!   with no mask;
//! - the products go straight to `gemm` (candle's own matrix kernel, with its
//!   AVX-512 path) with strides, so queries, keys and values are read in
//!   place from one fused QKV product and heads need no transposed copies;
//!   biases and residuals are written into the destination first and
//!   accumulated into;
//! - one head's scores (at most 256² floats) stay in cache while they are
//!   scaled, soft-maxed and multiplied by the values;
//! - GELU, `exp` and layer norms are branch-free loops compiled for AVX2/FMA
//!   where the CPU has them (checked at run time), with polynomial `erf` and
//!   `exp` accurate to a few units in the last place of an f32;
//! - f32 weights are read from the mapped model file, not copied.
//!
//! `CODE_INTEL_ENCODER=reference` switches back to `BertModel`
//! ([`crate::encoder`]).

use candle_transformers::models::bert::{Config as BertConfig, HiddenAct};

use crate::encoder::Pooling;
use crate::weights::{Values, Weight};

/// Fewest tokens whose matrix products are split over the pool's threads.
/// A query (a dozen tokens) gains nothing from a second thread but takes it
/// from the lexical search running beside it in hybrid search.
const PARALLEL_MIN_TOKENS: usize = 128;

/// The activation of the feed-forward layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Activation {
    /// `hidden_act: "gelu"`: x · Φ(x) with the exact (erf) normal CDF.
    Gelu,
    /// `hidden_act: "geluapproximate"`: the tanh approximation.
    GeluTanh,
    Relu,
}

struct Norm {
    weight: Values,
    bias: Values,
}

/// One encoder layer's weights, as stored (`[out, in]`, row-major).
struct Layer {
    /// Query, key and value weights stacked: `[3 · hidden, hidden]`.
    qkv: Vec<f32>,
    qkv_bias: Vec<f32>,
    attention_out: Values,
    attention_out_bias: Values,
    attention_norm: Norm,
    up: Values,
    up_bias: Values,
    down: Values,
    down_bias: Values,
    output_norm: Norm,
}

/// Takes a named tensor of the given shape out of the model's weights.
type Take<'a> = dyn FnMut(&str, &[usize]) -> Result<Values, String> + 'a;

/// A BERT encoder ready to run on packed sequences.
pub(crate) struct PackedBert {
    hidden: usize,
    heads: usize,
    intermediate: usize,
    max_positions: usize,
    eps: f32,
    activation: Activation,
    word: Values,
    vocab: usize,
    position: Values,
    /// Token type 0's embedding (every token of a sentence has type 0).
    token_type: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
}

impl PackedBert {
    /// Takes the model's tensors out of `weights`, under the names
    /// candle-transformers' `BertModel` uses (with or without a `bert.` or
    /// `<model_type>.` prefix).
    ///
    /// # Errors
    /// A missing tensor or one of the wrong shape, named.
    pub(crate) fn load(weights: &mut std::collections::HashMap<String, Weight>, config: &BertConfig) -> Result<Self, String> {
        let hidden = config.hidden_size;
        let heads = config.num_attention_heads;
        if heads == 0 || !hidden.is_multiple_of(heads) {
            return Err(format!("hidden_size {hidden} is not a multiple of num_attention_heads {heads}"));
        }
        let prefix = ["", "bert.", &format!("{}.", config.model_type.as_deref().unwrap_or("bert"))]
            .into_iter()
            .find(|p| weights.contains_key(&format!("{p}embeddings.word_embeddings.weight")))
            .ok_or("no tensor embeddings.word_embeddings.weight (nor bert.embeddings.word_embeddings.weight)")?
            .to_string();
        let mut take = |name: &str, shape: &[usize]| -> Result<Values, String> {
            let full = format!("{prefix}{name}");
            let weight = weights.remove(&full).ok_or_else(|| format!("no tensor {full}"))?;
            let (found, values) = weight.into_f32().map_err(|e| format!("tensor {full}: {e}"))?;
            if found != shape {
                return Err(format!("tensor {full} has shape {found:?}, config.json implies {shape:?}"));
            }
            Ok(values)
        };
        let norm = |take: &mut Take<'_>, at: &str| -> Result<Norm, String> {
            Ok(Norm { weight: take(&format!("{at}.weight"), &[hidden])?, bias: take(&format!("{at}.bias"), &[hidden])? })
        };
        let inner = config.intermediate_size;
        let word = take("embeddings.word_embeddings.weight", &[config.vocab_size, hidden])?;
        let position = take("embeddings.position_embeddings.weight", &[config.max_position_embeddings, hidden])?;
        let mut token_type = take("embeddings.token_type_embeddings.weight", &[config.type_vocab_size, hidden])?.into_vec();
        token_type.truncate(hidden);
        if token_type.len() != hidden {
            return Err("config.json type_vocab_size is 0".to_string());
        }
        let embedding_norm = norm(&mut take, "embeddings.LayerNorm")?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let at = format!("encoder.layer.{i}");
            let mut qkv = take(&format!("{at}.attention.self.query.weight"), &[hidden, hidden])?.into_vec();
            qkv.extend_from_slice(&take(&format!("{at}.attention.self.key.weight"), &[hidden, hidden])?);
            qkv.extend_from_slice(&take(&format!("{at}.attention.self.value.weight"), &[hidden, hidden])?);
            let mut qkv_bias = take(&format!("{at}.attention.self.query.bias"), &[hidden])?.into_vec();
            qkv_bias.extend_from_slice(&take(&format!("{at}.attention.self.key.bias"), &[hidden])?);
            qkv_bias.extend_from_slice(&take(&format!("{at}.attention.self.value.bias"), &[hidden])?);
            layers.push(Layer {
                qkv,
                qkv_bias,
                attention_out: take(&format!("{at}.attention.output.dense.weight"), &[hidden, hidden])?,
                attention_out_bias: take(&format!("{at}.attention.output.dense.bias"), &[hidden])?,
                attention_norm: norm(&mut take, &format!("{at}.attention.output.LayerNorm"))?,
                up: take(&format!("{at}.intermediate.dense.weight"), &[inner, hidden])?,
                up_bias: take(&format!("{at}.intermediate.dense.bias"), &[inner])?,
                down: take(&format!("{at}.output.dense.weight"), &[hidden, inner])?,
                down_bias: take(&format!("{at}.output.dense.bias"), &[hidden])?,
                output_norm: norm(&mut take, &format!("{at}.output.LayerNorm"))?,
            });
        }
        let activation = match config.hidden_act {
            HiddenAct::Gelu => Activation::Gelu,
            HiddenAct::GeluApproximate => Activation::GeluTanh,
            HiddenAct::Relu => Activation::Relu,
        };
        #[allow(clippy::cast_possible_truncation)]
        let eps = config.layer_norm_eps as f32;
        Ok(Self {
            hidden,
            heads,
            intermediate: inner,
            max_positions: config.max_position_embeddings,
            eps,
            activation,
            word,
            vocab: config.vocab_size,
            position,
            token_type,
            embedding_norm,
            layers,
        })
    }

    /// Sentence vectors (pooled, not normalised) of `sequences` (token ids),
    /// one per sequence. Runs on the calling thread, with the matrix
    /// products split over the current rayon pool's threads when it has
    /// more than one.
    ///
    /// # Errors
    /// A token id outside the vocabulary or a sequence longer than the
    /// model's positions.
    pub(crate) fn embed(&self, sequences: &[&[u32]], pooling: Pooling) -> Result<Vec<Vec<f32>>, String> {
        let h = self.hidden;
        let tokens: usize = sequences.iter().map(|s| s.len()).sum();
        if tokens == 0 {
            return Ok(vec![vec![0.0; h]; sequences.len()]);
        }
        let threads = rayon::current_num_threads();
        let parallelism = if threads > 1 && tokens >= PARALLEL_MIN_TOKENS {
            gemm::Parallelism::Rayon(threads)
        } else {
            gemm::Parallelism::None
        };

        let mut x = vec![0f32; tokens * h];
        let mut row = 0;
        for sequence in sequences {
            if sequence.len() > self.max_positions {
                return Err(format!("a sequence of {} tokens is longer than the model's {} positions", sequence.len(), self.max_positions));
            }
            for (position, &id) in sequence.iter().enumerate() {
                let id = id as usize;
                if id >= self.vocab {
                    return Err(format!("token id {id} is outside the vocabulary of {}", self.vocab));
                }
                let out = &mut x[row * h..(row + 1) * h];
                let word = &self.word[id * h..(id + 1) * h];
                let pos = &self.position[position * h..(position + 1) * h];
                for (((o, w), p), t) in out.iter_mut().zip(word).zip(pos).zip(&self.token_type) {
                    *o = w + p + t;
                }
                row += 1;
            }
        }
        kernels::layer_norm_rows(&mut x, h, &self.embedding_norm.weight, &self.embedding_norm.bias, self.eps);

        let head = h / self.heads;
        let scale = 1.0 / (head as f32).sqrt();
        let longest = sequences.iter().map(|s| s.len()).max().unwrap_or(0);
        let mut qkv = vec![0f32; tokens * 3 * h];
        let mut context = vec![0f32; tokens * h];
        let mut attended = vec![0f32; tokens * h];
        let mut inner = vec![0f32; tokens * self.intermediate];
        let mut scores = vec![0f32; longest * longest];
        for layer in &self.layers {
            // QKV = X · Wqkvᵀ + b
            fill_rows(&mut qkv, &layer.qkv_bias);
            linear(&mut qkv, &x, &layer.qkv, tokens, 3 * h, h, parallelism);
            // Attention per sequence and head, reading Q, K, V in place.
            let mut start = 0;
            for sequence in sequences {
                let len = sequence.len();
                for head_index in 0..self.heads {
                    let column = head_index * head;
                    let q = &qkv[start * 3 * h + column..];
                    let k = &qkv[start * 3 * h + h + column..];
                    let v = &qkv[start * 3 * h + 2 * h + column..];
                    let s = &mut scores[..len * len];
                    // S = scale · Q · Kᵀ  (len x len)
                    kernels::matmul(
                        kernels::Dst { values: s, rows: len, cols: len, row_stride: len, accumulate: false },
                        kernels::Matrix { values: q, row_stride: 3 * h, col_stride: 1 },
                        kernels::Matrix { values: k, row_stride: 1, col_stride: 3 * h },
                        head,
                        scale,
                        gemm::Parallelism::None,
                    );
                    for r in s.chunks_exact_mut(len) {
                        kernels::softmax(r);
                    }
                    // C[:, head] = S · V
                    kernels::matmul(
                        kernels::Dst {
                            values: &mut context[start * h + column..],
                            rows: len,
                            cols: head,
                            row_stride: h,
                            accumulate: false,
                        },
                        kernels::Matrix { values: s, row_stride: len, col_stride: 1 },
                        kernels::Matrix { values: v, row_stride: 3 * h, col_stride: 1 },
                        len,
                        1.0,
                        gemm::Parallelism::None,
                    );
                }
                start += len;
            }
            // A = LayerNorm(X + C · Woᵀ + b)
            add_rows(&mut attended, &x, &layer.attention_out_bias);
            linear(&mut attended, &context, &layer.attention_out, tokens, h, h, parallelism);
            kernels::layer_norm_rows(&mut attended, h, &layer.attention_norm.weight, &layer.attention_norm.bias, self.eps);
            // I = act(A · Wupᵀ + b)
            fill_rows(&mut inner, &layer.up_bias);
            linear(&mut inner, &attended, &layer.up, tokens, self.intermediate, h, parallelism);
            match self.activation {
                Activation::Gelu => kernels::gelu(&mut inner),
                Activation::GeluTanh => kernels::gelu_tanh(&mut inner),
                Activation::Relu => inner.iter_mut().for_each(|v| *v = v.max(0.0)),
            }
            // X = LayerNorm(A + I · Wdownᵀ + b)
            add_rows(&mut x, &attended, &layer.down_bias);
            linear(&mut x, &inner, &layer.down, tokens, h, self.intermediate, parallelism);
            kernels::layer_norm_rows(&mut x, h, &layer.output_norm.weight, &layer.output_norm.bias, self.eps);
        }

        let mut out = Vec::with_capacity(sequences.len());
        let mut start = 0;
        for sequence in sequences {
            let len = sequence.len();
            let mut v = vec![0f32; h];
            match pooling {
                Pooling::Cls => {
                    if len > 0 {
                        v.copy_from_slice(&x[start * h..(start + 1) * h]);
                    }
                }
                Pooling::Mean => {
                    for token in x[start * h..(start + len) * h].chunks_exact(h) {
                        for (a, b) in v.iter_mut().zip(token) {
                            *a += b;
                        }
                    }
                    #[allow(clippy::cast_precision_loss)]
                    let count = len.max(1) as f32;
                    v.iter_mut().for_each(|a| *a /= count);
                }
            }
            out.push(v);
            start += len;
        }
        Ok(out)
    }
}

/// Every row of `dst` (rows of `row.len()`) set to `row`.
fn fill_rows(dst: &mut [f32], row: &[f32]) {
    for d in dst.chunks_exact_mut(row.len()) {
        d.copy_from_slice(row);
    }
}

/// Every row of `dst` set to the same row of `src` plus `row`.
fn add_rows(dst: &mut [f32], src: &[f32], row: &[f32]) {
    for (d, s) in dst.chunks_exact_mut(row.len()).zip(src.chunks_exact(row.len())) {
        for ((d, s), r) in d.iter_mut().zip(s).zip(row) {
            *d = s + r;
        }
    }
}

/// `dst[tokens x out] += input[tokens x inner] · weightᵀ`, `weight` stored
/// `[out, inner]` row-major.
fn linear(dst: &mut [f32], input: &[f32], weight: &[f32], tokens: usize, out: usize, inner: usize, parallelism: gemm::Parallelism) {
    kernels::matmul(
        kernels::Dst { values: dst, rows: tokens, cols: out, row_stride: out, accumulate: true },
        kernels::Matrix { values: input, row_stride: inner, col_stride: 1 },
        kernels::Matrix { values: weight, row_stride: 1, col_stride: inner },
        inner,
        1.0,
        parallelism,
    );
}

/// The numeric kernels: `gemm` behind a bounds-checked call, and the
/// element-wise functions, compiled twice (portable and AVX2/FMA) and
/// chosen once per process.
pub(crate) mod kernels {
    use std::sync::OnceLock;

    /// A destination matrix: `rows x cols` at `values[r * row_stride + c]`.
    pub(crate) struct Dst<'a> {
        pub values: &'a mut [f32],
        pub rows: usize,
        pub cols: usize,
        pub row_stride: usize,
        /// Add the product to what is there instead of overwriting it.
        pub accumulate: bool,
    }

    /// A source matrix: element `(r, c)` at `values[r * row_stride + c * col_stride]`.
    pub(crate) struct Matrix<'a> {
        pub values: &'a [f32],
        pub row_stride: usize,
        pub col_stride: usize,
    }

    /// `dst (+)= scale · a · b` with `a` of `dst.rows x inner` and `b` of
    /// `inner x dst.cols`.
    ///
    /// # Panics
    /// When a matrix does not fit its slice (a bug in the caller).
    #[allow(unsafe_code, clippy::cast_possible_wrap)]
    pub(crate) fn matmul(dst: Dst<'_>, a: Matrix<'_>, b: Matrix<'_>, inner: usize, scale: f32, parallelism: gemm::Parallelism) {
        let (m, n, k) = (dst.rows, dst.cols, inner);
        if m == 0 || n == 0 {
            return;
        }
        let last = |rows: usize, cols: usize, rs: usize, cs: usize| (rows - 1) * rs + (cols - 1) * cs;
        assert!(dst.cols <= dst.row_stride || dst.rows == 1, "destination rows overlap");
        assert!(last(m, n, dst.row_stride, 1) < dst.values.len(), "destination out of bounds");
        if k > 0 {
            assert!(last(m, k, a.row_stride, a.col_stride) < a.values.len(), "left matrix out of bounds");
            assert!(last(k, n, b.row_stride, b.col_stride) < b.values.len(), "right matrix out of bounds");
        }
        // SAFETY: the assertions above keep every element gemm reads or
        // writes inside its slice; the destination's rows do not overlap
        // (cols <= row stride) and the destination is borrowed mutably, so
        // it aliases neither source.
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                dst.values.as_mut_ptr(),
                1,
                dst.row_stride as isize,
                dst.accumulate,
                a.values.as_ptr(),
                a.col_stride as isize,
                a.row_stride as isize,
                b.values.as_ptr(),
                b.col_stride as isize,
                b.row_stride as isize,
                1.0,
                scale,
                false,
                false,
                false,
                parallelism,
            );
        }
    }

    fn has_avx2_fma() -> bool {
        static DETECTED: OnceLock<bool> = OnceLock::new();
        *DETECTED.get_or_init(|| {
            #[cfg(target_arch = "x86_64")]
            {
                std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
            }
            #[cfg(not(target_arch = "x86_64"))]
            {
                false
            }
        })
    }

    /// Defines `pub(crate) fn $name(args)` running `$body` compiled for
    /// AVX2/FMA when the CPU has them, and portably otherwise.
    macro_rules! dispatched {
        ($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*) $body:block) => {
            $(#[$doc])*
            pub(crate) fn $name($($arg: $ty),*) {
                #[inline(always)]
                fn body($($arg: $ty),*) $body
                #[cfg(target_arch = "x86_64")]
                #[target_feature(enable = "avx2,fma")]
                fn simd($($arg: $ty),*) {
                    body($($arg),*)
                }
                #[cfg(target_arch = "x86_64")]
                if has_avx2_fma() {
                    // SAFETY: the CPU has AVX2 and FMA (checked at run time).
                    #[allow(unsafe_code)]
                    unsafe {
                        simd($($arg),*)
                    };
                    return;
                }
                body($($arg),*)
            }
        };
    }

    /// Lanes of the accumulators in reductions: wide enough for the
    /// compiler to keep one AVX register per accumulator.
    const LANES: usize = 8;

    #[inline(always)]
    fn sum(values: &[f32]) -> f32 {
        let mut acc = [0f32; LANES];
        let chunks = values.chunks_exact(LANES);
        let rest = chunks.remainder();
        for c in chunks {
            for (a, v) in acc.iter_mut().zip(c) {
                *a += v;
            }
        }
        acc.iter().sum::<f32>() + rest.iter().sum::<f32>()
    }

    #[inline(always)]
    fn max(values: &[f32]) -> f32 {
        let mut acc = [f32::NEG_INFINITY; LANES];
        let chunks = values.chunks_exact(LANES);
        let rest = chunks.remainder();
        for c in chunks {
            for (a, v) in acc.iter_mut().zip(c) {
                // Not `f32::max`: its NaN rules cost a blend per step.
                *a = if *v > *a { *v } else { *a };
            }
        }
        acc.iter().chain(rest).fold(f32::NEG_INFINITY, |m, v| if *v > m { *v } else { m })
    }

    /// eˣ by Cephes' range reduction and polynomial (relative error ~2e-7
    /// over the f32 range), branch-free so that it vectorises. Inputs below
    /// -87.3 give ~1e-38 instead of 0 and above 88.7 give f32::MAX-ish,
    /// which softmax and tanh never see after their own shifts.
    #[inline(always)]
    pub(crate) fn exp(x: f32) -> f32 {
        // Written so that every step is one vector instruction: comparisons
        // instead of `clamp` (whose NaN rules cost blends), and the integer
        // n = round(x · log2 e) read out of a float's mantissa instead of an
        // `as i32` cast (saturating, so done lane by lane).
        const MAGIC: f32 = 12_582_912.0; // 1.5 · 2²³: adding it rounds to an integer
        let x = if x < -87.3 { -87.3 } else { x };
        let x = if x > 88.7 { 88.7 } else { x };
        let t = x * std::f32::consts::LOG2_E + MAGIC;
        let n = t - MAGIC;
        // ln 2 in two parts (0.693359375 is exact in f32), as Cephes does.
        let r = x - n * 0.693_359_4 + n * 2.121_944_4e-4;
        let mut p = 1.987_569_1e-4_f32;
        p = p.mul_add(r, 1.398_2e-3);
        p = p.mul_add(r, 8.333_452e-3);
        p = p.mul_add(r, 4.166_579_6e-2);
        p = p.mul_add(r, 0.166_666_65);
        p = p.mul_add(r, 0.5);
        let y = (p * r).mul_add(r, r) + 1.0;
        // t's low bits are n (two's complement); shifted into the exponent
        // field with the bias they make 2ⁿ, the magic's own bits fall off.
        let scale = f32::from_bits(t.to_bits().wrapping_add(127) << 23);
        y * scale
    }

    /// erf(x) by the rational approximation Eigen and XLA use for f32
    /// (absolute error below 2e-7; 1 beyond |x| = 4).
    #[inline(always)]
    pub(crate) fn erf(x: f32) -> f32 {
        let x = x.clamp(-4.0, 4.0);
        let x2 = x * x;
        let mut p = -2.726_142_3e-10_f32;
        p = p.mul_add(x2, 2.770_681_4e-8);
        p = p.mul_add(x2, -2.101_024e-6);
        p = p.mul_add(x2, -5.692_506_4e-5);
        p = p.mul_add(x2, -7.349_906_3e-4);
        p = p.mul_add(x2, -2.954_6e-3);
        p = p.mul_add(x2, -1.609_603_3e-2);
        let mut q = -1.456_607_2e-5_f32;
        q = q.mul_add(x2, -2.133_740_6e-4);
        q = q.mul_add(x2, -1.682_827e-3);
        q = q.mul_add(x2, -7.373_329e-3);
        q = q.mul_add(x2, -1.426_474e-2);
        x * p / q
    }

    dispatched! {
        /// x · Φ(x), Φ the normal CDF through erf (BERT's "gelu"), in place.
        fn gelu(values: &mut [f32]) {
            for v in values.iter_mut() {
                let x = *v;
                *v = 0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2));
            }
        }
    }

    dispatched! {
        /// GELU's tanh approximation ("gelu_new"), in place.
        fn gelu_tanh(values: &mut [f32]) {
            const SQRT_2_OVER_PI: f32 = 0.797_884_6;
            for v in values.iter_mut() {
                let x = *v;
                let u = SQRT_2_OVER_PI * x * 0.044_715_f32.mul_add(x * x, 1.0);
                // tanh(u) = 1 - 2 / (e^{2u} + 1)
                let tanh = 1.0 - 2.0 / (exp(2.0 * u) + 1.0);
                *v = 0.5 * x * (1.0 + tanh);
            }
        }
    }

    dispatched! {
        /// Softmax of one row, in place.
        fn softmax(row: &mut [f32]) {
            let top = max(row);
            for v in row.iter_mut() {
                *v = exp(*v - top);
            }
            let total = sum(row);
            let inverse = 1.0 / total;
            for v in row.iter_mut() {
                *v *= inverse;
            }
        }
    }

    dispatched! {
        /// Layer norm of each row of `width` values, in place:
        /// (x - mean) / sqrt(var + eps) · weight + bias.
        fn layer_norm_rows(values: &mut [f32], width: usize, weight: &[f32], bias: &[f32], eps: f32) {
            #[allow(clippy::cast_precision_loss)]
            let n = width as f32;
            for row in values.chunks_exact_mut(width) {
                let mean = sum(row) / n;
                let mut acc = [0f32; LANES];
                let chunks = row.chunks_exact(LANES);
                let rest: f32 = chunks.remainder().iter().map(|v| (v - mean) * (v - mean)).sum();
                for c in chunks {
                    for (a, v) in acc.iter_mut().zip(c) {
                        *a += (v - mean) * (v - mean);
                    }
                }
                let variance = (acc.iter().sum::<f32>() + rest) / n;
                let inverse = 1.0 / (variance + eps).sqrt();
                for ((v, w), b) in row.iter_mut().zip(weight).zip(bias) {
                    *v = (*v - mean) * inverse * w + b;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::kernels;

    fn erf64(x: f64) -> f64 {
        // Abramowitz-Stegun 7.1.26 is too coarse for a reference; sum the
        // Taylor series instead (in f64 its cancellation costs < 1e-7 up to
        // |x| = 5; beyond, erf is 1 to f32 precision).
        let mut term = x;
        let mut total = x;
        let x2 = x * x;
        for n in 1..200 {
            term *= -x2 / f64::from(n);
            let add = term / f64::from(2 * n + 1);
            total += add;
            if add.abs() < 1e-17 {
                break;
            }
        }
        total * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn erf_is_accurate_over_the_range_gelu_sees() {
        let mut worst = 0f64;
        for i in -6000..=6000 {
            let x = f64::from(i) / 1000.0;
            #[allow(clippy::cast_possible_truncation)]
            let got = f64::from(kernels::erf(x as f32));
            let want = if x.abs() > 5.0 { x.signum() } else { erf64(x) };
            worst = worst.max((got - want).abs());
        }
        assert!(worst < 1e-6, "worst absolute error {worst}");
    }

    #[test]
    fn exp_is_accurate_where_softmax_uses_it() {
        let mut worst = 0f64;
        for i in -87_000..=20_000 {
            let x = f64::from(i) / 1000.0;
            #[allow(clippy::cast_possible_truncation)]
            let got = f64::from(kernels::exp(x as f32));
            #[allow(clippy::cast_possible_truncation)]
            let want = f64::from(x as f32).exp();
            worst = worst.max(((got - want) / want).abs());
        }
        assert!(worst < 1e-6, "worst relative error {worst}");
    }

    #[test]
    fn kernels_match_plain_formulas_on_odd_lengths() {
        // 37 values: the vector loop and its remainder both run.
        let xs: Vec<f32> = (0..37).map(|i| (i as f32 - 18.0) * 0.37).collect();
        let mut g = xs.clone();
        kernels::gelu(&mut g);
        for (x, y) in xs.iter().zip(&g) {
            let want = 0.5 * f64::from(*x) * (1.0 + erf64(f64::from(*x) / 2f64.sqrt()));
            assert!((f64::from(*y) - want).abs() < 1e-5, "gelu({x}) = {y}, want {want}");
        }
        let mut s = xs.clone();
        kernels::softmax(&mut s);
        let top = xs.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let total: f64 = xs.iter().map(|x| f64::from(x - top).exp()).sum();
        for (x, y) in xs.iter().zip(&s) {
            let want = f64::from(x - top).exp() / total;
            assert!((f64::from(*y) - want).abs() < 1e-6, "softmax {y} want {want}");
        }
        let mut n = xs.clone();
        let weight: Vec<f32> = (0..37).map(|i| 1.0 + i as f32 * 0.01).collect();
        let bias: Vec<f32> = (0..37).map(|i| i as f32 * -0.02).collect();
        kernels::layer_norm_rows(&mut n, 37, &weight, &bias, 1e-12);
        let mean = xs.iter().map(|v| f64::from(*v)).sum::<f64>() / 37.0;
        let var = xs.iter().map(|v| (f64::from(*v) - mean).powi(2)).sum::<f64>() / 37.0;
        for i in 0..37 {
            let want = (f64::from(xs[i]) - mean) / (var + 1e-12).sqrt() * f64::from(weight[i]) + f64::from(bias[i]);
            assert!((f64::from(n[i]) - want).abs() < 1e-5, "layer norm {} want {want}", n[i]);
        }
    }

    #[test]
    fn strided_products_match_a_naive_product() {
        // a: 5 x 3 read with row stride 4; b: 3 x 6 given transposed
        // (stored 6 x 3); dst rows of stride 7, accumulated onto 1.0.
        let a: Vec<f32> = (0..20).map(|i| i as f32 * 0.5 - 3.0).collect();
        let bt: Vec<f32> = (0..18).map(|i| (i as f32).sin()).collect();
        let mut dst = vec![1f32; 5 * 7];
        kernels::matmul(
            kernels::Dst { values: &mut dst, rows: 5, cols: 6, row_stride: 7, accumulate: true },
            kernels::Matrix { values: &a, row_stride: 4, col_stride: 1 },
            kernels::Matrix { values: &bt, row_stride: 1, col_stride: 3 },
            3,
            0.5,
            gemm::Parallelism::None,
        );
        for r in 0..5 {
            for c in 0..7 {
                let want = if c < 6 { 1.0 + 0.5 * (0..3).map(|k| a[r * 4 + k] * bt[c * 3 + k]).sum::<f32>() } else { 1.0 };
                assert!((dst[r * 7 + c] - want).abs() < 1e-5, "({r},{c}) {} want {want}", dst[r * 7 + c]);
            }
        }
    }
}
