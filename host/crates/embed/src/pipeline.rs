//! The embedding pipeline: gives every chunk (and map entry) of the store a
//! vector for the current model.
//!
//! Runs after chunking, usually in the background. Work is keyed by chunk
//! content hash, so only new content is embedded: a one-line change embeds
//! the one changed chunk, a rename embeds nothing. Vectors are committed
//! every [`COMMIT_EVERY`] texts, so a killed run loses at most one group and
//! the next run resumes where it stopped. A new model (or new model files)
//! is a new model key: everything is embedded again under it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use code_intel_store::embeddings::{EmbeddingCoverage, EmbeddingModel, PendingText};
use code_intel_store::{Store, StoreError};
use serde::Serialize;

use crate::encoder::{EmbedError, Encoder, ModelKey, Role};
use crate::text::chunk_text;

/// Texts embedded between two commits. ~256 chunks are a few seconds of
/// work on two cores: a kill loses little, and commits stay rare enough not
/// to matter (one SQLite transaction each).
pub const COMMIT_EVERY: usize = 256;

/// Progress of a run, reported after every batch.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct EmbedProgress {
    /// Texts embedded so far in this run.
    pub done: usize,
    /// Texts this run has to embed.
    pub total: usize,
}

/// What a run did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EmbedReport {
    /// `name@revision` of the model.
    pub model: String,
    /// Chunk contents embedded in this run.
    pub embedded_chunks: usize,
    /// Map entries embedded in this run.
    pub embedded_map: usize,
    /// Real (unpadded) tokens processed.
    pub tokens: usize,
    pub elapsed_ms: u64,
    /// Stopped early because cancellation was requested.
    pub cancelled: bool,
    /// Old vectors removed (other models, content no longer indexed).
    pub pruned: usize,
    /// Chunks that already had a vector before this run.
    pub cached_chunks: u64,
    /// Coverage after the run.
    pub coverage: EmbeddingCoverage,
}

/// Errors of a run: the store, or the model.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
}

/// The store's row for the encoder's model (created on first use).
///
/// # Errors
/// SQLite errors.
pub fn model_row(store: &mut Store, encoder: &Encoder) -> Result<EmbeddingModel, StoreError> {
    let key = &encoder.info().key;
    if let Some(model) = store.embedding_model(&key.name, &key.revision)?
        && model.dim == encoder.dim()
    {
        return Ok(model);
    }
    store.write(|w| w.ensure_embedding_model(&key.name, &key.revision, encoder.dim()))
}

/// Embeds everything in the store that has no vector for `encoder`'s model,
/// then prunes vectors nobody uses (every other model's among them). `cancel`
/// is checked between commit groups.
///
/// # Errors
/// Store or inference errors; vectors committed before the error are kept.
pub fn embed_pending(
    store: &mut Store,
    encoder: &Encoder,
    progress: &(dyn Fn(EmbedProgress) + Sync),
    cancel: Option<&AtomicBool>,
) -> Result<EmbedReport, PipelineError> {
    embed_pending_keeping(store, encoder, &[], progress, cancel)
}

/// [`embed_pending`] for a store that holds the vectors of more than one
/// model in use (the main and the English model): the prune keeps those of
/// `also_keep`.
///
/// # Errors
/// As [`embed_pending`].
pub fn embed_pending_keeping(
    store: &mut Store,
    encoder: &Encoder,
    also_keep: &[ModelKey],
    progress: &(dyn Fn(EmbedProgress) + Sync),
    cancel: Option<&AtomicBool>,
) -> Result<EmbedReport, PipelineError> {
    let started = Instant::now();
    let model = model_row(store, encoder)?;
    let mut report = EmbedReport { model: encoder.info().key.to_string(), ..EmbedReport::default() };
    if let Some(coverage) = store.embedded_through(model.id)? {
        // Nothing changed since a pass left every text with a vector.
        report.coverage = coverage;
        report.cached_chunks = coverage.embedded_chunks;
        report.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        progress(EmbedProgress { done: 0, total: 0 });
        return Ok(report);
    }

    // Map entries first: there are few, and they drive the short-circuit.
    let map_pending = store.pending_map_entries(model.id)?;
    // Chunks arrive ordered by length, so each commit group is already of
    // similar lengths and the encoder's batches carry little padding.
    let chunks_pending = store.pending_chunks(model.id, usize::MAX)?;
    let total = map_pending.len() + chunks_pending.len();
    progress(EmbedProgress { done: 0, total });

    let mut done = 0usize;
    let mut embedded_rows = 0u64;
    for (pending, role, is_map) in [(&map_pending, Role::Query, true), (&chunks_pending, Role::Passage, false)] {
        for group in pending.chunks(COMMIT_EVERY) {
            if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                report.cancelled = true;
                break;
            }
            let texts: Vec<String> = group.iter().map(|p| embedding_text(p, is_map)).collect();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let base = done;
            let (vectors, tokens) = encoder.embed_counted(&refs, role, &|d, _| progress(EmbedProgress { done: base + d, total }))?;
            let rows: Vec<(&str, &[f32])> = group.iter().zip(&vectors).map(|(p, v)| (p.content_hash.as_str(), v.as_slice())).collect();
            store.write(|w| w.put_embeddings(model.id, &rows))?;
            done += group.len();
            report.tokens += tokens;
            if is_map {
                report.embedded_map += group.len();
            } else {
                report.embedded_chunks += group.len();
                embedded_rows += group.iter().map(|p| p.rows).sum::<u64>();
            }
        }
    }
    if report.cancelled {
        report.coverage = store.embedding_coverage(Some(model.id))?;
    } else {
        let mut kept = Vec::new();
        for key in also_keep {
            kept.extend(store.embedding_model(&key.name, &key.revision)?.map(|m| m.id));
        }
        (report.pruned, report.coverage) =
            store.write(|w| Ok::<_, StoreError>((w.prune_embeddings(model.id, &kept)?, w.finish_embedding_pass(model.id)?)))?;
    }
    report.cached_chunks = report.coverage.embedded_chunks.saturating_sub(embedded_rows);
    report.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    tracing::info!(
        model = %report.model,
        chunks = report.embedded_chunks,
        map = report.embedded_map,
        tokens = report.tokens,
        ms = report.elapsed_ms,
        "embedding pass finished"
    );
    Ok(report)
}

/// Map entries are natural language compared with natural-language queries
/// (the e5 `query: ` side); chunks are documents.
fn embedding_text(p: &PendingText, is_map: bool) -> String {
    if is_map { p.content.clone() } else { chunk_text(&p.kind, &p.name, p.qualified_name.as_deref(), &p.metadata, &p.content) }
}
