//! The sentence encoder: a BERT-family model with its `tokenizer.json`, mean
//! (or CLS) pooling and L2 normalisation.
//!
//! Throughput comes from four things: texts are tokenised once and sorted by
//! token length so that each batch holds sequences of nearly equal length;
//! batches are bounded by a token budget rather than a count; each core runs
//! its own batches on a single-thread pool, so the element-wise work between
//! matrix products (GELU, layer norm, softmax) is parallel too, not only the
//! matrix products; and the forward pass is [`crate::packed`]'s, which packs
//! a batch's sequences without padding and fuses the element-wise work.
//! candle-transformers' `BertModel` computes the same vectors more slowly and
//! stays available as the reference (`CODE_INTEL_ENCODER=reference`, see
//! [`ENCODER_ENV`]).

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use serde::{Deserialize, Serialize};
use tokenizers::Tokenizer;

use crate::fingerprint;
use crate::model::{ModelSource, ResolvedModel, check_model_dir};
use crate::packed::PackedBert;
pub use crate::sentence_config::is_e5_name;
use crate::sentence_config::{self, ConfigError, Derived, Normalization, Prompts, SentenceConfig};

/// Version of the text recipe ([`crate::chunk_text`], prefixes, pooling);
/// part of the model key, so changing the recipe re-embeds everything.
/// 2: plugin metadata as words in the chunk text.
pub const TEXT_RECIPE_VERSION: u32 = 2;

/// Most padded tokens (sequences x longest sequence) in one forward pass.
/// The packed pass has no padding and keeps one head's attention scores at
/// a time, so the budget only sizes the matrix products (a batch's
/// activations: ~25 MB per worker for all-MiniLM-L6-v2). Measured with
/// all-MiniLM-L6-v2 on 2 cores (`embed_throughput`, 680 chunks of host/,
/// alternating builds): 4,096 tokens 6,104 / 5,970 tokens/s, 2,048 5,816,
/// 1,024 5,843 / 5,785. (candle-transformers' padded pass preferred 1,024:
/// its element-wise passes over all heads' scores at once fell out of
/// cache at 4,096; bench/README.md.)
pub const MAX_BATCH_TOKENS: usize = 4096;

/// Most sequences in one forward pass (very short texts: queries, names).
pub const MAX_BATCH_SEQUENCES: usize = 64;

/// Characters kept per token of the window before tokenising: a word-piece
/// token of code is rarely longer than this, so cutting the text here never
/// changes the truncated result but spares tokenising megabytes.
const MAX_CHARS_PER_TOKEN: usize = 12;

/// Selects the forward pass: `packed` (the default, [`crate::packed`]) or
/// `reference` (candle-transformers' `BertModel`, padded batches).
pub const ENCODER_ENV: &str = "CODE_INTEL_ENCODER";

/// The implementation of the model's forward pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ForwardPass {
    /// Sequences packed without padding, fused element-wise kernels.
    Packed,
    /// candle-transformers' `BertModel` on padded batches.
    Reference,
    /// An OpenAI-compatible endpoint computes the vectors ([`crate::remote`]).
    Remote,
}

impl ForwardPass {
    /// The pass [`ENCODER_ENV`] names; `Packed` when it is unset.
    ///
    /// # Errors
    /// A value other than `packed` or `reference`, with what to set instead.
    pub fn from_env() -> Result<Self, String> {
        Self::from_setting(std::env::var(ENCODER_ENV).ok().as_deref())
    }

    /// The pass a value of [`ENCODER_ENV`] names (`None`: unset).
    ///
    /// # Errors
    /// As [`ForwardPass::from_env`].
    pub fn from_setting(value: Option<&str>) -> Result<Self, String> {
        match value {
            None => Ok(Self::Packed),
            Some(v) if v.eq_ignore_ascii_case("packed") || v.is_empty() => Ok(Self::Packed),
            Some(v) if v.eq_ignore_ascii_case("reference") => Ok(Self::Reference),
            Some(v) => Err(format!("{ENCODER_ENV}={v:?} is not a forward pass; set it to `packed` (the default) or `reference`, or unset it")),
        }
    }
}

/// Which side of a comparison a text is on (e5 models are trained with
/// `query: ` and `passage: ` prefixes; a model's prompts say which text goes
/// before each side, [`Prompts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A search query or a natural-language description.
    Query,
    /// A document: a code chunk, an agreement.
    Passage,
}

/// How token vectors become one sentence vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pooling {
    Mean,
    Cls,
}

/// Errors of loading or running a model. Loading errors say which file is
/// wrong and what to do; none of them is a crash.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("model folder {0}: {1}")]
    Missing(String, String),
    #[error("model in {dir} is not a usable BERT-family model: {reason}")]
    Incompatible { dir: String, reason: String },
    #[error("model in {dir} is corrupt: {reason}")]
    Corrupt { dir: String, reason: String },
    #[error("embedding failed: {0}")]
    Inference(String),
}

/// The identity of a model's vectors: two encoders with the same key produce
/// the same vectors, so stored embeddings stay valid.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct ModelKey {
    /// Display name (hub id or folder name); a copy derived from quantised
    /// weights carries a suffix saying so ([`Derived::key_suffix`]).
    pub name: String,
    /// Content fingerprint of the model files plus the text recipe version
    /// (and, for a model with prompts, a hash of them).
    pub revision: String,
}

impl ModelKey {
    /// The key of a model named `name` whose files have `fingerprint`,
    /// under the current [`TEXT_RECIPE_VERSION`].
    #[must_use]
    pub fn new(name: String, fingerprint: &str) -> Self {
        Self { name, revision: format!("{fingerprint}.r{TEXT_RECIPE_VERSION}") }
    }

    /// The key of the model `name` whose files have `fingerprint`, as its
    /// folder's sentence-transformers files describe it: a derived copy's
    /// name carries [`Derived::key_suffix`], and prompts (which change every
    /// vector but live outside the fingerprinted files) add `.p` and a hash
    /// of them to the revision.
    #[must_use]
    pub fn for_model(name: &str, fingerprint: &str, sentence: &SentenceConfig) -> Self {
        let name = match &sentence.derived {
            Some(derived) => format!("{name}{}", derived.key_suffix()),
            None => name.to_string(),
        };
        let mut key = Self::new(name, fingerprint);
        let prompts = &sentence.prompts;
        if !(prompts.query.is_empty() && prompts.passage.is_empty()) {
            use sha2::Digest;
            let digest = sha2::Sha256::digest(format!("{}\0{}", prompts.query, prompts.passage));
            let short: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
            key.revision.push_str(&format!(".p{short}"));
        }
        key
    }
}

impl std::fmt::Display for ModelKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}", self.name, self.revision)
    }
}

/// What is known about a loaded model.
#[derive(Clone, Debug, Serialize)]
pub struct ModelInfo {
    pub key: ModelKey,
    pub dir: std::path::PathBuf,
    pub source: ModelSource,
    /// Vector dimension.
    pub dim: usize,
    /// Tokens per text; longer texts are truncated.
    pub max_tokens: usize,
    pub layers: usize,
    pub pooling: Pooling,
    /// The texts put before queries and passages (e5: `query: `, `passage: `).
    pub prompts: Prompts,
    /// Whether the model's own modules normalise its vectors; they are unit
    /// length either way.
    pub normalization: Normalization,
    /// Set when the folder is a copy derived from quantised weights
    /// (`derived_from.json`).
    pub derived: Option<Derived>,
    /// The forward pass computing the vectors.
    pub forward: ForwardPass,
    /// The `/embeddings` URL of a remote encoder (without credentials).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
}

/// Options of [`Encoder::load`].
#[derive(Clone, Debug)]
pub struct EncoderOptions {
    /// Worker threads, each with its own single-thread compute pool.
    /// Default: the available cores.
    pub workers: usize,
    /// Cap on tokens per text (below the model's own window).
    pub max_tokens: Option<usize>,
    /// Where the model files' fingerprints are remembered (see
    /// [`crate::fingerprint`]); `None` hashes the files at every load.
    /// Default: [`fingerprint::default_cache_dir`].
    pub fingerprint_cache: Option<std::path::PathBuf>,
    /// The forward pass; `None` (the default) reads [`ENCODER_ENV`] at
    /// load ([`ForwardPass::from_env`]: an invalid value fails the load).
    pub forward: Option<ForwardPass>,
}

impl Default for EncoderOptions {
    fn default() -> Self {
        Self {
            workers: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            max_tokens: None,
            fingerprint_cache: Some(fingerprint::default_cache_dir()),
            forward: None,
        }
    }
}

/// A loaded sentence encoder. Load once, share (`Arc`), call from any thread.
pub struct Encoder {
    backend: Backend,
    info: ModelInfo,
}

/// Where the vectors are computed.
enum Backend {
    Local(Local),
    Remote(crate::remote::RemoteEncoder),
}

/// The local model and its threads.
struct Local {
    model: Model,
    tokenizer: Tokenizer,
    /// One single-thread pool per worker; see the module doc.
    pools: Vec<rayon::ThreadPool>,
    /// One pool of all the workers' threads, for a lone batch (a query, a
    /// one-chunk re-index): its matrix products are split across cores
    /// instead of leaving all but one idle.
    shared: rayon::ThreadPool,
    device: Device,
}

enum Model {
    Packed(PackedBert),
    Reference(BertModel),
}

#[derive(Deserialize)]
struct SentenceBertConfig {
    max_seq_length: Option<usize>,
}

#[derive(Deserialize)]
struct ModelTypeProbe {
    model_type: Option<String>,
    architectures: Option<Vec<String>>,
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Option<Result<T, String>> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display())))
}

impl Encoder {
    /// Loads the model in `resolved.dir`.
    ///
    /// # Errors
    /// Missing files, a config that is not BERT-family, unreadable weights or
    /// tokenizer: each with the file at fault.
    pub fn load(resolved: &ResolvedModel, options: &EncoderOptions) -> Result<Self, EmbedError> {
        crate::heap::keep_tensor_memory();
        let forward = match options.forward {
            Some(forward) => forward,
            None => ForwardPass::from_env().map_err(EmbedError::Inference)?,
        };
        let dir = &resolved.dir;
        let dir_s = dir.display().to_string();
        check_model_dir(dir).map_err(|e| EmbedError::Missing(dir_s.clone(), e))?;
        let incompatible = |reason: String| EmbedError::Incompatible { dir: dir_s.clone(), reason };
        let corrupt = |reason: String| EmbedError::Corrupt { dir: dir_s.clone(), reason };

        let config_bytes = std::fs::read(dir.join("config.json")).map_err(|e| corrupt(format!("config.json: {e}")))?;
        let probe: ModelTypeProbe = serde_json::from_slice(&config_bytes).map_err(|e| corrupt(format!("config.json: {e}")))?;
        let model_type = probe.model_type.unwrap_or_else(|| "bert".to_string());
        if model_type != "bert" {
            return Err(incompatible(format!(
                "config.json model_type is \"{model_type}\"; only \"bert\" models (e.g. all-MiniLM-L6-v2, multilingual-e5-small, bge-small) are supported"
            )));
        }
        if let Some(archs) = probe.architectures
            && !archs.iter().any(|a| a.starts_with("Bert"))
        {
            return Err(incompatible(format!("config.json architectures {archs:?} are not BERT")));
        }
        let config: BertConfig = serde_json::from_slice(&config_bytes).map_err(|e| incompatible(format!("config.json: {e}")))?;
        if config.num_attention_heads == 0 || !config.hidden_size.is_multiple_of(config.num_attention_heads) {
            return Err(incompatible(format!(
                "config.json hidden_size {} is not a multiple of num_attention_heads {}",
                config.hidden_size, config.num_attention_heads
            )));
        }

        let tokenizer_bytes = std::fs::read(dir.join("tokenizer.json")).map_err(|e| corrupt(format!("tokenizer.json: {e}")))?;
        let mut tokenizer = Tokenizer::from_bytes(&tokenizer_bytes).map_err(|e| corrupt(format!("tokenizer.json: {e}")))?;
        let vocab = tokenizer.get_vocab_size(true);
        if vocab > config.vocab_size {
            return Err(incompatible(format!(
                "tokenizer.json has {vocab} tokens but the model's vocab_size is {}: tokenizer and weights do not belong together",
                config.vocab_size
            )));
        }

        let st_max = match read_json::<SentenceBertConfig>(&dir.join("sentence_bert_config.json")) {
            Some(Ok(c)) => c.max_seq_length,
            Some(Err(e)) => return Err(corrupt(e)),
            None => None,
        };
        let mut max_tokens = st_max.unwrap_or(config.max_position_embeddings).min(config.max_position_embeddings);
        if let Some(cap) = options.max_tokens {
            max_tokens = max_tokens.min(cap.max(8));
        }
        let sentence = sentence_config::read_for(resolved).map_err(|e| match e {
            ConfigError::Corrupt(reason) => corrupt(reason),
            ConfigError::Unsupported(reason) => incompatible(reason),
        })?;
        let pooling = sentence.pooling;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(tokenizers::TruncationParams { max_length: max_tokens, ..Default::default() }))
            .map_err(|e| incompatible(format!("tokenizer.json truncation: {e}")))?;

        let weights_file =
            std::fs::File::open(dir.join("model.safetensors")).map_err(|e| corrupt(format!("model.safetensors: {e}")))?;
        // Mapped rather than read: the packed pass reads its weights from
        // the mapping for as long as the encoder lives (nothing to copy or
        // fault in at load), the reference pass copies them out once.
        // SAFETY: the mapping is read-only. A file truncated or rewritten in
        // place by another process while mapped would fault or change the
        // weights; model files are replaced, never rewritten in place (the
        // hub writes new blobs, `model install` copies into a fresh folder),
        // and a replaced file keeps its old contents for this mapping.
        #[allow(unsafe_code)]
        let weights = std::sync::Arc::new(
            unsafe { memmap2::Mmap::map(&weights_file) }.map_err(|e| corrupt(format!("model.safetensors: {e}")))?,
        );
        let fingerprint_cache = options.fingerprint_cache.as_deref();
        let fingerprint = match fingerprint_cache.and_then(|cache| fingerprint::remembered(cache, dir)) {
            Some(remembered) => remembered,
            None => {
                let computed = fingerprint::compute(&config_bytes, &tokenizer_bytes, &weights);
                if let Some(cache) = fingerprint_cache {
                    fingerprint::remember(cache, dir, &computed);
                }
                computed
            }
        };

        let device = Device::Cpu;
        // candle's loaders validate as they go but a malformed file could
        // still trip an assertion deep inside; never let that take the host down.
        let model = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> Result<Model, String> {
            let unreadable = |e: candle_core::Error| format!("model.safetensors: {e}");
            let unfit = |e: String| format!("model.safetensors does not fit config.json: {e}");
            match forward {
                ForwardPass::Packed => {
                    let mut tensors = crate::weights::load(&weights, &device).map_err(unreadable)?;
                    PackedBert::load(&mut tensors, &config).map(Model::Packed).map_err(unfit)
                }
                ForwardPass::Reference => {
                    let tensors = crate::weights::load_tensors(&weights, &device).map_err(unreadable)?;
                    let vb = VarBuilder::from_tensors(tensors, DType::F32, &device);
                    BertModel::load(vb, &config).map(Model::Reference).map_err(|e| unfit(e.to_string()))
                }
                ForwardPass::Remote => Err("a model folder is computed locally; a remote encoder is made by Encoder::remote".to_string()),
            }
        }))
        .map_err(|_| corrupt("model.safetensors: loading panicked".to_string()))?
        .map_err(corrupt)?;

        let workers = options.workers.max(1);
        let pools = (0..workers)
            .map(|i| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(1)
                    .thread_name(move |_| format!("code-intel-embed-{i}"))
                    .build()
                    .map_err(|e| EmbedError::Inference(format!("cannot start embedding threads: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;

        let shared = rayon::ThreadPoolBuilder::new()
            .num_threads(workers)
            .thread_name(|i| format!("code-intel-embed-shared-{i}"))
            .build()
            .map_err(|e| EmbedError::Inference(format!("cannot start embedding threads: {e}")))?;
        let info = ModelInfo {
            key: ModelKey::for_model(&resolved.name, &fingerprint, &sentence),
            dir: dir.clone(),
            source: resolved.source,
            dim: config.hidden_size,
            max_tokens,
            layers: config.num_hidden_layers,
            pooling,
            prompts: sentence.prompts,
            normalization: sentence.normalization,
            derived: sentence.derived,
            forward,
            endpoint: None,
        };
        tracing::info!(model = %info.key, dim = info.dim, max_tokens, workers, "embedding model loaded");
        Ok(Self { backend: Backend::Local(Local { model, tokenizer, pools, shared, device }), info })
    }

    /// An encoder whose vectors come from an OpenAI-compatible endpoint
    /// ([`crate::remote`]). Connecting embeds a probe text, so a wrong URL,
    /// key or model name fails here, with what to fix.
    ///
    /// # Errors
    /// The endpoint's failure.
    pub fn remote(options: crate::remote::RemoteOptions) -> Result<Self, EmbedError> {
        let key = crate::remote::remote_key(&options.endpoint, &options.model).map_err(EmbedError::Inference)?;
        let client = crate::remote::RemoteEncoder::connect(options)?;
        let info = ModelInfo {
            key,
            dir: std::path::PathBuf::new(),
            source: ModelSource::Remote,
            dim: client.dim(),
            max_tokens: crate::remote::MAX_TEXT_CHARS / MAX_CHARS_PER_TOKEN,
            layers: 0,
            pooling: Pooling::Mean,
            prompts: client.prompts().clone(),
            normalization: Normalization::Cosine,
            derived: None,
            forward: ForwardPass::Remote,
            endpoint: Some(client.url().to_string()),
        };
        tracing::info!(model = %info.key, dim = info.dim, "remote embedding endpoint connected");
        Ok(Self { backend: Backend::Remote(client), info })
    }

    fn local(&self) -> Result<&Local, EmbedError> {
        match &self.backend {
            Backend::Local(local) => Ok(local),
            Backend::Remote(remote) => {
                Err(EmbedError::Inference(format!("the remote encoder at {} has no local tokenizer or model", remote.url())))
            }
        }
    }

    #[must_use]
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    #[must_use]
    pub fn dim(&self) -> usize {
        self.info.dim
    }

    /// Embeds one query (after the model's query prompt, e5's `query: `).
    ///
    /// # Errors
    /// Tokenisation or inference failure.
    pub fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let mut v = self.embed(&[text], Role::Query, &|_, _| {})?;
        Ok(v.pop().unwrap_or_default())
    }

    /// Embeds texts; vectors come back in input order, L2-normalised.
    /// `progress(done, total)` is called after every batch.
    ///
    /// # Errors
    /// Tokenisation or inference failure.
    pub fn embed(&self, texts: &[&str], role: Role, progress: &(dyn Fn(usize, usize) + Sync)) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(self.embed_counted(texts, role, progress)?.0)
    }

    /// Like [`Encoder::embed`], also returning the number of real (unpadded)
    /// tokens processed, for throughput figures.
    ///
    /// # Errors
    /// Tokenisation or inference failure.
    pub fn embed_counted(
        &self,
        texts: &[&str],
        role: Role,
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> Result<(Vec<Vec<f32>>, usize), EmbedError> {
        if texts.is_empty() {
            return Ok((Vec::new(), 0));
        }
        let local = match &self.backend {
            Backend::Local(local) => local,
            Backend::Remote(remote) => return remote.embed(texts, role, progress),
        };
        let encodings = self.tokenize(texts, role)?;
        let tokens: usize = encodings.iter().map(Vec::len).sum();
        let batches = plan_batches(&encodings);
        let total = texts.len();
        let done = AtomicUsize::new(0);
        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<Option<Vec<f32>>>> = Mutex::new(vec![None; total]);
        let failure: Mutex<Option<EmbedError>> = Mutex::new(None);
        let worker = |pool: &rayon::ThreadPool| {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(batch) = batches.get(i) else { break };
                if failure.lock().is_ok_and(|f| f.is_some()) {
                    break;
                }
                match pool.install(|| self.forward(local, batch, &encodings)) {
                    Ok(vectors) => {
                        if let Ok(mut r) = results.lock() {
                            for (&index, v) in batch.iter().zip(vectors) {
                                r[index] = Some(v);
                            }
                        }
                        let d = done.fetch_add(batch.len(), Ordering::Relaxed) + batch.len();
                        progress(d, total);
                    }
                    Err(e) => {
                        if let Ok(mut f) = failure.lock() {
                            f.get_or_insert(e);
                        }
                        break;
                    }
                }
            }
        };
        let workers = local.pools.len().min(batches.len()).max(1);
        if batches.len() == 1 {
            worker(&local.shared);
        } else {
            std::thread::scope(|s| {
                for pool in &local.pools[1..workers] {
                    s.spawn(|| worker(pool));
                }
                worker(&local.pools[0]);
            });
        }
        if let Some(e) = failure.into_inner().ok().flatten() {
            return Err(e);
        }
        let vectors = results
            .into_inner()
            .map_err(|_| EmbedError::Inference("a worker panicked".to_string()))?
            .into_iter()
            .map(|v| v.ok_or_else(|| EmbedError::Inference("a text was not embedded".to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((vectors, tokens))
    }

    /// Number of tokens `text` takes (after truncation), for sizing and stats.
    ///
    /// # Errors
    /// Tokenisation failure.
    pub fn count_tokens(&self, text: &str, role: Role) -> Result<usize, EmbedError> {
        Ok(self.tokenize(&[text], role)?.first().map_or(0, Vec::len))
    }

    /// Whether the model's vocabulary holds `word` (lower-cased) as a whole
    /// word: a word-start piece of a SentencePiece vocabulary (`▁word`, e5's
    /// XLM-R), or a WordPiece entry that is not a continuation (`word`, not
    /// `##word`; BERT's). A vocabulary of 30,000 pieces or more holds the
    /// common words of the languages it was trained on and few strings that
    /// are no word at all (`qwxz`, `asdfgh`). `None` for a remote encoder,
    /// which has no local vocabulary.
    #[must_use]
    pub fn is_whole_word(&self, word: &str) -> Option<bool> {
        let Backend::Local(local) = &self.backend else {
            return None;
        };
        let word = word.to_lowercase();
        if word.is_empty() || word.starts_with("##") {
            return Some(false);
        }
        let tokenizer = &local.tokenizer;
        if tokenizer.token_to_id("▁").is_some() {
            return Some(tokenizer.token_to_id(&format!("▁{word}")).is_some());
        }
        Some(tokenizer.token_to_id(&word).is_some())
    }

    /// The token ids each text is embedded as (its prompt, the model's
    /// special tokens, truncated to the window), for checks and tools.
    ///
    /// # Errors
    /// Tokenisation failure.
    pub fn token_ids(&self, texts: &[&str], role: Role) -> Result<Vec<Vec<u32>>, EmbedError> {
        self.tokenize(texts, role)
    }

    fn tokenize(&self, texts: &[&str], role: Role) -> Result<Vec<Vec<u32>>, EmbedError> {
        let max_chars = self.info.max_tokens * MAX_CHARS_PER_TOKEN;
        let prefix = match role {
            Role::Query => self.info.prompts.query.as_str(),
            Role::Passage => self.info.prompts.passage.as_str(),
        };
        let inputs: Vec<String> = texts
            .iter()
            .map(|t| {
                let cut = t.char_indices().nth(max_chars).map_or(*t, |(i, _)| &t[..i]);
                format!("{prefix}{cut}")
            })
            .collect();
        // The global pool: tokenising is parallel over texts, on every core.
        let encodings = self
            .local()?
            .tokenizer
            .encode_batch_fast(inputs, true)
            .map_err(|e| EmbedError::Inference(format!("tokenizer: {e}")))?;
        Ok(encodings.into_iter().map(|e| e.get_ids().to_vec()).collect())
    }

    /// One forward pass over `batch` (indices into `encodings`), returning a
    /// normalised vector per index.
    fn forward(&self, local: &Local, batch: &[usize], encodings: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let model = match &local.model {
            Model::Packed(model) => model,
            Model::Reference(model) => return self.forward_padded(local, model, batch, encodings),
        };
        let sequences: Vec<&[u32]> = batch.iter().map(|&i| encodings[i].as_slice()).collect();
        let mut vectors = model.embed(&sequences, self.info.pooling).map_err(EmbedError::Inference)?;
        vectors.iter_mut().for_each(|v| normalize(v));
        Ok(vectors)
    }

    /// [`Encoder::forward`] through candle-transformers' `BertModel`: one
    /// padded tensor per batch, with an attention mask.
    fn forward_padded(&self, local: &Local, model: &BertModel, batch: &[usize], encodings: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let err = |e: candle_core::Error| EmbedError::Inference(e.to_string());
        let n = batch.len();
        let len = batch.iter().map(|&i| encodings[i].len()).max().unwrap_or(1).max(1);
        let mut ids = vec![0u32; n * len];
        let mut mask = vec![0u32; n * len];
        for (row, &i) in batch.iter().enumerate() {
            let e = &encodings[i];
            ids[row * len..row * len + e.len()].copy_from_slice(e);
            mask[row * len..row * len + e.len()].fill(1);
        }
        let ids_t = Tensor::from_vec(ids, (n, len), &local.device).map_err(err)?;
        let mask_t = Tensor::from_vec(mask.clone(), (n, len), &local.device).map_err(err)?;
        let types = ids_t.zeros_like().map_err(err)?;
        let hidden = model.forward(&ids_t, &types, Some(&mask_t)).map_err(err)?;
        let hidden: Vec<f32> = hidden.flatten_all().and_then(|t| t.to_vec1()).map_err(err)?;
        let dim = self.info.dim;
        let mut out = Vec::with_capacity(n);
        for row in 0..n {
            let mut v = vec![0f32; dim];
            match self.info.pooling {
                Pooling::Cls => v.copy_from_slice(&hidden[row * len * dim..row * len * dim + dim]),
                Pooling::Mean => {
                    let mut count = 0f32;
                    for t in 0..len {
                        if mask[row * len + t] == 1 {
                            count += 1.0;
                            let h = &hidden[(row * len + t) * dim..(row * len + t + 1) * dim];
                            for (a, b) in v.iter_mut().zip(h) {
                                *a += b;
                            }
                        }
                    }
                    for a in &mut v {
                        *a /= count.max(1.0);
                    }
                }
            }
            normalize(&mut v);
            out.push(v);
        }
        Ok(out)
    }
}

/// Scales `v` to unit length (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        for x in v {
            *x /= norm;
        }
    }
}

/// Groups text indices into batches of similar token length: sorted by
/// length, cut when the padded size would pass [`MAX_BATCH_TOKENS`] or the
/// count [`MAX_BATCH_SEQUENCES`]. Longest first, so the biggest allocation
/// happens at once and later batches reuse the memory.
fn plan_batches(encodings: &[Vec<u32>]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..encodings.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(encodings[i].len()));
    let mut batches = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut current_max = 0usize;
    for i in order {
        let len = encodings[i].len().max(1);
        let new_max = current_max.max(len);
        if !current.is_empty() && (new_max * (current.len() + 1) > MAX_BATCH_TOKENS || current.len() >= MAX_BATCH_SEQUENCES) {
            batches.push(std::mem::take(&mut current));
            current_max = 0;
        }
        current_max = current_max.max(len);
        current.push(i);
    }
    if !current.is_empty() {
        batches.push(current);
    }
    batches
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_respect_budget_and_group_lengths() {
        let enc: Vec<Vec<u32>> = [5usize, 500, 7, 130, 128, 6, 512, 129].iter().map(|&n| vec![1; n]).collect();
        let batches = plan_batches(&enc);
        let mut seen: Vec<usize> = batches.iter().flatten().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..enc.len()).collect::<Vec<_>>());
        for b in &batches {
            let max = b.iter().map(|&i| enc[i].len()).max().unwrap();
            assert!(max * b.len() <= MAX_BATCH_TOKENS || b.len() == 1);
        }
        // Longest first.
        assert_eq!(batches[0][0], 6);
    }
}
