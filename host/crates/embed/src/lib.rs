//! Sentence embeddings with candle: BERT-family encoders, tokenizers, model
//! resolution, and the pipeline that embeds indexed chunks.
//!
//! ```no_run
//! use code_intel_embed::{Encoder, EncoderOptions, ResolveOptions, Role, resolve};
//! let model = resolve(&ResolveOptions::new(Some("sentence-transformers/all-MiniLM-L6-v2"), None))?;
//! let encoder = Encoder::load(&model, &EncoderOptions::default())?;
//! let query = encoder.embed_query("where do users log in")?;
//! let chunks = encoder.embed(&["def login(user, password): ..."], Role::Passage, &|_, _| {})?;
//! let score: f32 = query.iter().zip(&chunks[0]).map(|(a, b)| a * b).sum();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! - [`model`]: where the model folder comes from (config, env, caches,
//!   hf-hub), without ever hanging offline.
//! - [`encoder`]: the BERT encoder: tokenise, length-sorted batches,
//!   mean pooling, L2 normalisation, prompts.
//! - [`sentence_config`]: what the folder's sentence-transformers files say:
//!   prompts (`config_sentence_transformers.json`, else the e5 name rule),
//!   modules, pooling, and the marker of a copy derived from quantised
//!   weights.
//! - `packed`: the forward pass over a batch's sequences packed without
//!   padding, on candle's matrix kernel (`gemm`) with fused element-wise
//!   work; candle-transformers' `BertModel` is the reference it is tested
//!   against.
//! - [`remote`]: the alternative encoder, an OpenAI-compatible
//!   `/v1/embeddings` endpoint (TEI, vLLM, Ollama, infinity): batched,
//!   concurrent, retried, with a model key naming endpoint and model.
//! - [`service`]: one shared encoder per process, loaded in the background.
//! - [`pipeline`]: embeds the chunks of the store that have no vector for the
//!   current model yet, batch by batch, resumable.
//! - [`fingerprint`]: the model files' content fingerprint, remembered
//!   per file identity so a start does not hash the weights again.
//! - [`threads`]: candle's element-wise work on the workers' own threads.
//! - [`text`]: identifier splitting and the text embedded for a chunk.
//!
//! Depends on `code-intel-core` and `code-intel-store` only; knows nothing of
//! the vector index, search or MCP. Never writes to stdout.

pub mod encoder;
pub mod fingerprint;
mod heap;
mod packed;
pub mod model;
pub mod pipeline;
pub mod remote;
pub mod sentence_config;
pub mod service;
pub mod text;
pub mod threads;
mod weights;

pub use encoder::{ENCODER_ENV, EmbedError, Encoder, EncoderOptions, ForwardPass, ModelInfo, ModelKey, Pooling, Role, TEXT_RECIPE_VERSION, normalize};
pub use model::{DEFAULT_MODEL, ENGLISH_MODEL_DIR_ENV, MODEL_DIR_ENV, ModelSource, ResolveOptions, ResolvedModel, Unavailable, install, install_hint, models_dir, resolve};
pub use remote::{RemoteEncoder, RemoteOptions};
pub use pipeline::{EmbedProgress, EmbedReport, embed_pending, embed_pending_keeping};
pub use sentence_config::{Derived, Normalization, PromptSource, Prompts};
pub use service::{ModelHandle, ModelState};
pub use heap::keep_tensor_memory;
pub use text::{chunk_text, metadata_words, split_identifiers};
