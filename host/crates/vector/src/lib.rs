//! Vector search over chunk embeddings: exact cosine for small collections,
//! an int4 scan with float re-scoring above [`EXACT_SEARCH_MAX`] points,
//! HNSW (hnsw_rs) above [`QUANTIZED_SCAN_MAX`].
//!
//! ```
//! use code_intel_vector::VectorIndex;
//! let mut index = VectorIndex::new(2);
//! index.insert(10, 0xa, &[1.0, 0.0]);
//! index.insert(11, 0xb, &[0.0, 1.0]);
//! let hits = index.search(&[0.8, 0.6], 1, None);
//! assert_eq!(hits[0].key, 10);
//! ```
//!
//! An index is derived data: the store (SQLite) holds the vectors of record,
//! and the caller keeps the index in step with it through
//! [`VectorIndex::diff`] + [`VectorIndex::remove`] / [`VectorIndex::insert`].
//! Points are addressed by a caller key (a chunk or map-entry row id) and a
//! 64-bit content hash, so a row id reused for new content is noticed.
//! hnsw_rs cannot delete: removed points are tombstoned (filtered out of
//! every result) and the graph is rebuilt when tombstones pass
//! [`REBUILD_DEAD_FRACTION`].
//!
//! Ranking can discount hubs, points close to a great many others
//! ([`VectorIndex::hubness_adjusted`], see the `density` module).
//!
//! Snapshots ([`VectorIndex::save`], [`VectorIndex::load`]) persist the
//! points and the graph so a restart does not rebuild it; a snapshot that
//! does not verify is ignored and the index is rebuilt from the store.
//!
//! Vectors must be L2-normalised; the score is the cosine similarity.
//! This crate depends on nothing in the workspace and never writes to
//! stdout: the hnsw_rs code paths that print (dump/load errors, level-scale
//! changes, `max_nb_connection > 256`) are never reached, because files are
//! checked before hnsw_rs opens them and those settings are constants here.

mod density;
mod distance;
mod index;
mod persist;

pub use density::{DENSITY_NEIGHBOURS, DENSITY_SAMPLE, DENSITY_STEP_PAIRS, Densities, DensityStep, HUBNESS_WEIGHT};
pub use distance::{INT4_BLOCK, UnitDot, dot, dot_u4_i8, dots_u4_i8, int4_len, quantize, quantize4};
pub use index::{
    Diff, EXACT_SEARCH_MAX, HNSW_EF_CONSTRUCTION, HNSW_EF_SEARCH, HNSW_MAX_CONNECTIONS, HNSW_MAX_LAYERS, Hit,
    QUANTIZED_SCAN_MAX, REBUILD_DEAD_FRACTION, VectorIndex, hash64,
};
pub use persist::{PersistError, SnapshotInfo};
