//! The shared store in `code-intel index`: connect when one is configured,
//! take chunk lists and vectors from it, publish what this run computed, and
//! report all of it (or why the store was not used) without ever failing
//! the command because of it.

use std::collections::HashSet;

use code_intel_core::config::Config;
use code_intel_embed::Encoder;
use code_intel_plugins::PluginHost;
use code_intel_shared::{SharedStore, configured_url};
use code_intel_store::Store;
use serde::Serialize;

/// What the shared store did for one `index` run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SharedReport {
    /// `off` (not configured), `connected`, or `unavailable: <reason>`.
    pub status: String,
    /// The store's URL without its password.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
    /// Files whose chunk list came from the store (not chunked here).
    pub files_from_store: u64,
    /// Chunks in those lists.
    pub chunks_from_store: u64,
    /// Distinct chunk texts whose vector came from the store (not embedded here).
    pub vectors_from_store: u64,
    /// Chunk lists published by this run (new to the store).
    pub chunk_lists_published: u64,
    /// Vectors published by this run (new to the store).
    pub vectors_published: u64,
    /// Store errors met after connecting; the run went on locally.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

impl SharedReport {
    /// The summary line (empty when no store is configured).
    pub fn summary(&self) -> String {
        let Some(store) = &self.store else {
            return if self.status == "off" {
                String::new()
            } else {
                format!("  shared store {}; indexed locally only\n", self.status)
            };
        };
        if self.status != "connected" {
            return format!(
                "  shared store {store} {}; indexed locally only\n",
                self.status
            );
        }
        let mut line = format!(
            "  shared store {store}: {} files ({} chunks) and {} vectors taken from it; {} chunk lists and {} vectors published\n",
            self.files_from_store,
            self.chunks_from_store,
            self.vectors_from_store,
            self.chunk_lists_published,
            self.vectors_published
        );
        for e in &self.errors {
            line.push_str(&format!("  shared store error (went on locally): {e}\n"));
        }
        line
    }
}

/// Connects to the configured store, if any. The report says what happened.
pub fn connect(config: &Config) -> (Option<SharedStore>, SharedReport) {
    let Some(url) = configured_url(config.shared_store.as_deref()) else {
        return (
            None,
            SharedReport {
                status: "off".to_string(),
                ..SharedReport::default()
            },
        );
    };
    match SharedStore::connect(&url) {
        Ok(store) => {
            let report = SharedReport {
                status: "connected".to_string(),
                store: Some(store.shown().to_string()),
                ..SharedReport::default()
            };
            (Some(store), report)
        }
        Err(e) => {
            tracing::warn!("{e}; indexing locally only");
            (
                None,
                SharedReport {
                    status: format!("unavailable: {}", e.reason),
                    store: Some(e.shown),
                    ..SharedReport::default()
                },
            )
        }
    }
}

/// The chunker key of the loaded plugins under this binary.
pub fn chunker_key(host: &PluginHost) -> String {
    code_intel_shared::chunker_key(
        env!("CARGO_PKG_VERSION"),
        host.plugins().map(|p| {
            (
                p.name.as_str(),
                p.version.as_str(),
                p.wit_version.as_str(),
                p.path.as_path(),
            )
        }),
    )
}

/// Before embedding: copies the store's vectors for chunk texts that have
/// none here.
pub fn take_vectors(
    shared: &SharedStore,
    store: &mut Store,
    encoder: &Encoder,
    report: &mut SharedReport,
) {
    let result = (|| -> Result<u64, String> {
        let local =
            code_intel_embed::pipeline::model_row(store, encoder).map_err(|e| e.to_string())?;
        let remote = shared.model(&encoder.info().key.to_string(), encoder.dim())?;
        let pending = store
            .pending_chunks(local.id, usize::MAX)
            .map_err(|e| e.to_string())?;
        let hashes: Vec<&str> = pending.iter().map(|p| p.content_hash.as_str()).collect();
        let found = shared.vectors(remote, encoder.dim(), &hashes)?;
        let rows: Vec<(&str, &[f32])> = found
            .iter()
            .map(|(h, v)| (h.as_str(), v.as_slice()))
            .collect();
        for batch in rows.chunks(2000) {
            store
                .write(|w| w.put_embeddings(local.id, batch))
                .map_err(|e| e.to_string())?;
        }
        Ok(found.len() as u64)
    })();
    match result {
        Ok(n) => report.vectors_from_store += n,
        Err(e) => report.errors.push(format!("taking vectors: {e}")),
    }
}

/// After embedding: publishes every vector of the index's chunks that the
/// store does not have yet.
pub fn publish_vectors(
    shared: &SharedStore,
    store: &Store,
    encoder: &Encoder,
    report: &mut SharedReport,
) {
    let result = (|| -> Result<u64, String> {
        let key = &encoder.info().key;
        let Some(local) = store
            .embedding_model(&key.name, &key.revision)
            .map_err(|e| e.to_string())?
        else {
            return Ok(0);
        };
        let remote = shared.model(&key.to_string(), encoder.dim())?;
        let points = store.forest_points(local.id).map_err(|e| e.to_string())?;
        let hashes: Vec<&str> = points
            .iter()
            .map(|p| p.content_hash.as_str())
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        let there = shared.existing_vectors(remote, &hashes)?;
        let missing: Vec<&str> = hashes.into_iter().filter(|h| !there.contains(*h)).collect();
        let vectors = store
            .vectors(local.id, encoder.dim(), &missing)
            .map_err(|e| e.to_string())?;
        let rows: Vec<(String, Vec<f32>)> = vectors.into_iter().collect();
        shared.publish_vectors(remote, &rows)
    })();
    match result {
        Ok(n) => report.vectors_published += n,
        Err(e) => report.errors.push(format!("publishing vectors: {e}")),
    }
}
