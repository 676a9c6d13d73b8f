//! A BERT encoder forward pass for CPU inference, computing the same function
//! as candle-transformers' `BertModel` (and Hugging Face's `BertModel`) with
//! fewer, larger operations:
//!
//! - query, key and value are one matrix product (their weights stacked at
//!   load), split by one copy instead of three;
//! - the `1/sqrt(head_dim)` attention scale is folded into the query weights;
//! - softmax is candle's fused last-dimension kernel instead of four
//!   element-wise passes;
//! - hidden states stay two-dimensional (`tokens x hidden`), so every linear
//!   layer is a plain matrix product.
//!
//! Weights are read with the names of Hugging Face checkpoints (optionally
//! under `bert.` or `<model_type>.`), so any BERT-family `model.safetensors`
//! that candle's loader accepts loads here.

use candle_core::{DType, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder};
use candle_transformers::models::bert::{Config, HiddenAct};

struct Layer {
    qkv: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

/// The encoder: embeddings and transformer layers, no pooler.
pub struct Bert {
    word: Embedding,
    position: Embedding,
    token_type: Embedding,
    embedding_norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
    head_dim: usize,
    hidden: usize,
    act: HiddenAct,
}

fn linear(vb: &VarBuilder, input: usize, output: usize) -> Result<(Tensor, Tensor)> {
    Ok((vb.get((output, input), "weight")?, vb.get(output, "bias")?))
}

fn layer_norm(vb: &VarBuilder, size: usize, eps: f64) -> Result<LayerNorm> {
    // Older checkpoints name the parameters gamma/beta.
    let (weight, bias) = match (vb.get(size, "weight"), vb.get(size, "bias")) {
        (Ok(w), Ok(b)) => (w, b),
        _ => (vb.get(size, "gamma")?, vb.get(size, "beta")?),
    };
    Ok(LayerNorm::new(weight, bias, eps))
}

impl Bert {
    /// Loads the weights of `config` from `vb`.
    ///
    /// # Errors
    /// A missing tensor or a tensor of the wrong shape.
    pub fn load(vb: &VarBuilder, config: &Config) -> Result<Self> {
        let mut prefixes = vec![String::new(), "bert".to_string()];
        if let Some(t) = &config.model_type {
            prefixes.push(t.clone());
        }
        let mut first_err = None;
        for prefix in prefixes {
            let vb = if prefix.is_empty() { vb.clone() } else { vb.pp(&prefix) };
            if !prefix.is_empty() && !vb.contains_tensor("embeddings.word_embeddings.weight") {
                continue;
            }
            match Self::load_at(&vb, config) {
                Ok(model) => return Ok(model),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        Err(first_err.unwrap_or_else(|| candle_core::Error::Msg("no BERT weights found".to_string())))
    }

    fn load_at(vb: &VarBuilder, config: &Config) -> Result<Self> {
        let h = config.hidden_size;
        let heads = config.num_attention_heads;
        let head_dim = h / heads;
        let eps = config.layer_norm_eps;
        let emb = vb.pp("embeddings");
        let word = Embedding::new(emb.pp("word_embeddings").get((config.vocab_size, h), "weight")?, h);
        let position = Embedding::new(emb.pp("position_embeddings").get((config.max_position_embeddings, h), "weight")?, h);
        let token_type = Embedding::new(emb.pp("token_type_embeddings").get((config.type_vocab_size, h), "weight")?, h);
        let embedding_norm = layer_norm(&emb.pp("LayerNorm"), h, eps)?;
        #[allow(clippy::cast_precision_loss)]
        let scale = 1.0 / (head_dim as f64).sqrt();
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let l = vb.pp(format!("encoder.layer.{i}"));
            let att = l.pp("attention");
            let (qw, qb) = linear(&att.pp("self").pp("query"), h, h)?;
            let (kw, kb) = linear(&att.pp("self").pp("key"), h, h)?;
            let (vw, vbias) = linear(&att.pp("self").pp("value"), h, h)?;
            let qkv_w = Tensor::cat(&[(qw * scale)?, kw, vw], 0)?;
            let qkv_b = Tensor::cat(&[(qb * scale)?, kb, vbias], 0)?;
            let (ow, ob) = linear(&att.pp("output").pp("dense"), h, h)?;
            let (iw, ib) = linear(&l.pp("intermediate").pp("dense"), h, config.intermediate_size)?;
            let (pw, pb) = linear(&l.pp("output").pp("dense"), config.intermediate_size, h)?;
            layers.push(Layer {
                qkv: Linear::new(qkv_w, Some(qkv_b)),
                attention_out: Linear::new(ow, Some(ob)),
                attention_norm: layer_norm(&att.pp("output").pp("LayerNorm"), h, eps)?,
                intermediate: Linear::new(iw, Some(ib)),
                output: Linear::new(pw, Some(pb)),
                output_norm: layer_norm(&l.pp("output").pp("LayerNorm"), h, eps)?,
            });
        }
        Ok(Self { word, position, token_type, embedding_norm, layers, heads, head_dim, hidden: h, act: config.hidden_act })
    }

    /// Hidden states of the last layer, `(batch, len, hidden)`, for token
    /// ids `(batch, len)` with `mask` (1 = token, 0 = padding). Token type
    /// ids are all 0 (single-segment inputs).
    ///
    /// # Errors
    /// Shape errors (ids longer than the position table).
    pub fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (n, len) = ids.dims2()?;
        let device = ids.device();
        let h = self.hidden;
        let positions = Tensor::arange(0u32, u32::try_from(len).unwrap_or(u32::MAX), device)?;
        let type0 = Tensor::zeros(1, DType::U32, device)?;
        let extra = (self.position.forward(&positions)? + self.token_type.forward(&type0)?.broadcast_as((len, h))?)?;
        let x = self.word.forward(&ids.flatten_all()?)?.reshape((n, len, h))?.broadcast_add(&extra)?;
        let mut x = self.embedding_norm.forward(&x.reshape((n * len, h))?)?;
        // 0 for tokens, f32::MIN for padding (as Hugging Face's extended mask).
        let mask_add = ((mask.to_dtype(DType::F32)?.affine(-1.0, 1.0))? * f64::from(f32::MIN))?.reshape((n, 1, 1, len))?;
        for layer in &self.layers {
            x = self.layer(layer, &x, &mask_add, n, len)?;
        }
        x.reshape((n, len, h))
    }

    fn layer(&self, layer: &Layer, x: &Tensor, mask_add: &Tensor, n: usize, len: usize) -> Result<Tensor> {
        let (heads, hd, h) = (self.heads, self.head_dim, self.hidden);
        let qkv = layer.qkv.forward(x)?.reshape((n, len, 3, heads, hd))?.permute((2, 0, 3, 1, 4))?.contiguous()?;
        let (q, k, v) = (qkv.get(0)?, qkv.get(1)?, qkv.get(2)?);
        let scores = q.matmul(&k.t()?)?.broadcast_add(mask_add)?;
        let probs = candle_nn::ops::softmax_last_dim(&scores)?;
        let context = probs.matmul(&v)?.transpose(1, 2)?.contiguous()?.reshape((n * len, h))?;
        let attention = layer.attention_norm.forward(&(layer.attention_out.forward(&context)? + x)?)?;
        let inter = layer.intermediate.forward(&attention)?;
        let inter = match self.act {
            HiddenAct::Gelu => inter.gelu_erf()?,
            HiddenAct::GeluApproximate => inter.gelu()?,
            HiddenAct::Relu => inter.relu()?,
        };
        layer.output_norm.forward(&(layer.output.forward(&inter)? + attention)?)
    }

    /// Last dimension of the hidden states.
    #[must_use]
    pub fn hidden_size(&self) -> usize {
        self.hidden
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;
    use candle_transformers::models::bert::BertModel;

    /// Same function as candle-transformers' `BertModel` on the real test
    /// model (`CODE_INTEL_TEST_MODEL_DIR`; skipped without it), on a padded
    /// batch of real texts.
    #[test]
    fn matches_candle_bert_on_the_real_model() {
        let Some(dir) = std::env::var_os("CODE_INTEL_TEST_MODEL_DIR").map(std::path::PathBuf::from) else {
            eprintln!("CODE_INTEL_TEST_MODEL_DIR not set; skipped");
            return;
        };
        let config: Config = serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
        let tokenizer = tokenizers::Tokenizer::from_file(dir.join("tokenizer.json")).unwrap();
        let device = Device::Cpu;
        let vb = unsafe_free_load(&dir.join("model.safetensors"), &device);
        let ours = Bert::load(&vb, &config).unwrap();
        let reference = BertModel::load(vb, &config).unwrap();
        let texts = [
            "fn main() { println!(\"hello\"); }",
            "def get_user_name(user):\n    return user.name",
            "Where are the chunks of a file replaced in the database?",
            "class UserService { public function save() { $this->repo->persist($this); } }",
        ];
        let encodings: Vec<Vec<u32>> = texts.iter().map(|t| tokenizer.encode(*t, true).unwrap().get_ids().to_vec()).collect();
        let len = encodings.iter().map(Vec::len).max().unwrap();
        let n = encodings.len();
        let mut ids = vec![0u32; n * len];
        let mut mask = vec![0u32; n * len];
        for (row, e) in encodings.iter().enumerate() {
            ids[row * len..row * len + e.len()].copy_from_slice(e);
            mask[row * len..row * len + e.len()].fill(1);
        }
        let ids = Tensor::from_vec(ids, (n, len), &device).unwrap();
        let mask = Tensor::from_vec(mask, (n, len), &device).unwrap();
        let a = ours.forward(&ids, &mask).unwrap();
        let b = reference.forward(&ids, &ids.zeros_like().unwrap(), Some(&mask)).unwrap();
        for (row, e) in encodings.iter().enumerate() {
            let a: Vec<Vec<f32>> = a.get(row).unwrap().to_vec2().unwrap();
            let b: Vec<Vec<f32>> = b.get(row).unwrap().to_vec2().unwrap();
            for t in 0..e.len() {
                let diff = a[t].iter().zip(&b[t]).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max);
                assert!(diff < 1e-3, "text {row} token {t}: max abs difference {diff}");
            }
        }
    }

    fn unsafe_free_load(path: &std::path::Path, device: &Device) -> VarBuilder<'static> {
        let bytes = std::fs::read(path).unwrap();
        let tensors = candle_core::safetensors::load_buffer(&bytes, device).unwrap();
        VarBuilder::from_tensors(tensors, DType::F32, device)
    }
}
