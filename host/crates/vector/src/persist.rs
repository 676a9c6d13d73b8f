//! Snapshots of an index on disk, so a restart does not rebuild the graph.
//!
//! Layout under the collection's folder:
//! - `current`: the name of the snapshot folder in use (replaced atomically);
//! - `snap-*/points.bin`: keys, hashes, tombstones and vectors;
//! - `snap-*/graph.hnsw.graph`, `snap-*/graph.hnsw.data`: the hnsw_rs dump;
//! - `snap-*/manifest.json`: model, generation, sizes and SHA-256 of every file.
//!
//! A snapshot is written to a new folder and then named in `current`, so a
//! reader never sees a half-written one. Every file is checked against the
//! manifest before hnsw_rs reads it (hnsw_rs asserts, allocates from file
//! headers and prints on bad input); a snapshot that does not verify is an
//! error the caller answers by rebuilding from the store.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use hnsw_rs::api::AnnT;
use hnsw_rs::hnswio::HnswIo;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::distance::UnitDot;
use crate::index::VectorIndex;

const FORMAT: u32 = 1;
const MAGIC: &[u8; 4] = b"CIVX";
const CURRENT: &str = "current";
const POINTS: &str = "points.bin";
const MANIFEST: &str = "manifest.json";
const GRAPH_BASENAME: &str = "graph";

/// Why a snapshot could not be written or used.
#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("no snapshot in {0}")]
    Missing(PathBuf),
    #[error("snapshot {path} is unusable: {reason}")]
    Invalid { path: PathBuf, reason: String },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PersistError + '_ {
    move |source| PersistError::Io { path: path.to_path_buf(), source }
}

#[derive(Serialize, Deserialize)]
struct Manifest {
    format: u32,
    model: String,
    generation: i64,
    dim: usize,
    points: usize,
    points_sha256: String,
    hnsw: Option<GraphFiles>,
}

#[derive(Serialize, Deserialize)]
struct GraphFiles {
    basename: String,
    /// Internal ids below this are in the graph.
    hnsw_len: usize,
    graph_sha256: String,
    data_sha256: String,
}

/// What a loaded snapshot was built from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotInfo {
    pub model: String,
    /// The store's vector generation at the time of the snapshot.
    pub generation: i64,
}

fn sha256_file(path: &Path) -> Result<String, PersistError> {
    let mut file = std::fs::File::open(path).map_err(io(path))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(io(path))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

fn invalid(path: &Path, reason: impl Into<String>) -> PersistError {
    PersistError::Invalid { path: path.to_path_buf(), reason: reason.into() }
}

impl VectorIndex {
    /// Writes a snapshot of the index into `dir` (created if needed) for
    /// `model` at store generation `generation`, then removes older
    /// snapshots.
    ///
    /// # Errors
    /// I/O errors; the previous snapshot stays in place.
    pub fn save(&self, dir: &Path, model: &str, generation: i64) -> Result<(), PersistError> {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let name = format!("snap-{generation}-{}-{nanos}", std::process::id());
        let snap = dir.join(&name);
        std::fs::create_dir_all(&snap).map_err(io(&snap))?;
        let result = self.write_snapshot(&snap, model, generation);
        if let Err(e) = result {
            let _ = std::fs::remove_dir_all(&snap);
            return Err(e);
        }
        let tmp = dir.join(format!("{CURRENT}.{}.tmp", std::process::id()));
        std::fs::write(&tmp, &name).map_err(io(&tmp))?;
        std::fs::rename(&tmp, dir.join(CURRENT)).map_err(io(dir))?;
        if let Ok(entries) = std::fs::read_dir(dir) {
            for entry in entries.flatten() {
                let file_name = entry.file_name();
                let n = file_name.to_string_lossy();
                if n.starts_with("snap-") && n != name.as_str() {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        Ok(())
    }

    fn write_snapshot(&self, snap: &Path, model: &str, generation: i64) -> Result<(), PersistError> {
        let points_path = snap.join(POINTS);
        {
            let file = std::fs::File::create(&points_path).map_err(io(&points_path))?;
            let mut w = std::io::BufWriter::new(file);
            let mut put = |bytes: &[u8]| w.write_all(bytes).map_err(io(&points_path));
            put(MAGIC)?;
            put(&FORMAT.to_le_bytes())?;
            put(&(self.dim as u64).to_le_bytes())?;
            put(&(self.keys.len() as u64).to_le_bytes())?;
            for id in 0..self.keys.len() {
                put(&self.keys[id].to_le_bytes())?;
                put(&self.hashes[id].to_le_bytes())?;
                put(&[u8::from(self.alive[id])])?;
            }
            for x in &self.vectors {
                put(&x.to_le_bytes())?;
            }
            w.flush().map_err(io(&points_path))?;
        }
        let hnsw = match &self.hnsw {
            Some(graph) => {
                // hnsw_rs prints (to stdout) and panics when it cannot create
                // its files: the folder exists and is ours, so it can.
                let basename = graph
                    .file_dump(snap, GRAPH_BASENAME)
                    .map_err(|e| invalid(snap, format!("hnsw dump failed: {e}")))?;
                Some(GraphFiles {
                    graph_sha256: sha256_file(&snap.join(format!("{basename}.hnsw.graph")))?,
                    data_sha256: sha256_file(&snap.join(format!("{basename}.hnsw.data")))?,
                    basename,
                    hnsw_len: self.hnsw_len,
                })
            }
            None => None,
        };
        let manifest = Manifest {
            format: FORMAT,
            model: model.to_string(),
            generation,
            dim: self.dim,
            points: self.keys.len(),
            points_sha256: sha256_file(&points_path)?,
            hnsw,
        };
        let manifest_path = snap.join(MANIFEST);
        let text = serde_json::to_vec_pretty(&manifest).map_err(|e| invalid(snap, e.to_string()))?;
        std::fs::write(&manifest_path, text).map_err(io(&manifest_path))
    }

    /// Loads the current snapshot in `dir`, if it is for `model` and `dim`
    /// and every file verifies.
    ///
    /// # Errors
    /// [`PersistError::Missing`] when there is none; `Invalid` when it does
    /// not match or verify (rebuild from the store then).
    pub fn load(dir: &Path, model: &str, dim: usize) -> Result<(Self, SnapshotInfo), PersistError> {
        let current = dir.join(CURRENT);
        let name = match std::fs::read_to_string(&current) {
            Ok(n) => n.trim().to_string(),
            Err(_) => return Err(PersistError::Missing(dir.to_path_buf())),
        };
        if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
            return Err(invalid(&current, "bad snapshot name"));
        }
        let snap = dir.join(&name);
        let manifest_path = snap.join(MANIFEST);
        let manifest: Manifest = serde_json::from_slice(&std::fs::read(&manifest_path).map_err(io(&manifest_path))?)
            .map_err(|e| invalid(&manifest_path, e.to_string()))?;
        if manifest.format != FORMAT {
            return Err(invalid(&snap, format!("format {} (this build reads {FORMAT})", manifest.format)));
        }
        if manifest.model != model || manifest.dim != dim {
            return Err(invalid(&snap, format!("built for {} ({}-d), not {model} ({dim}-d)", manifest.model, manifest.dim)));
        }
        let points_path = snap.join(POINTS);
        if sha256_file(&points_path)? != manifest.points_sha256 {
            return Err(invalid(&points_path, "checksum mismatch"));
        }
        let mut index = read_points(&points_path, dim, manifest.points)?;
        if let Some(files) = &manifest.hnsw {
            let graph_path = snap.join(format!("{}.hnsw.graph", files.basename));
            let data_path = snap.join(format!("{}.hnsw.data", files.basename));
            if sha256_file(&graph_path)? != files.graph_sha256 || sha256_file(&data_path)? != files.data_sha256 {
                return Err(invalid(&snap, "graph checksum mismatch"));
            }
            if files.hnsw_len > index.keys.len() {
                return Err(invalid(&snap, "graph larger than the point list"));
            }
            // hnsw_rs ties the loaded graph's lifetime to its loader (it
            // may memory-map the data file); ours reads it into memory, so the
            // small loader is leaked to give the graph a 'static lifetime.
            // This happens once per collection load.
            let graph = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| load_graph(&snap, &files.basename)))
                .map_err(|_| invalid(&snap, "hnsw_rs panicked while loading the graph"))?
                .map_err(|e| invalid(&snap, format!("hnsw_rs: {e}")))?;
            index.hnsw = Some(graph);
            index.hnsw_len = files.hnsw_len;
        }
        Ok((index, SnapshotInfo { model: manifest.model, generation: manifest.generation }))
    }
}

fn load_graph(dir: &Path, basename: &str) -> anyhow::Result<hnsw_rs::hnsw::Hnsw<'static, f32, UnitDot>> {
    let loader: &'static mut HnswIo = Box::leak(Box::new(HnswIo::new(dir, basename)));
    loader.load_hnsw::<f32, UnitDot>()
}

fn read_points(path: &Path, dim: usize, expected: usize) -> Result<VectorIndex, PersistError> {
    let bytes = std::fs::read(path).map_err(io(path))?;
    let mut at = 0usize;
    let mut take = |n: usize| -> Result<&[u8], PersistError> {
        let slice = bytes.get(at..at + n).ok_or_else(|| invalid(path, "truncated"))?;
        at += n;
        Ok(slice)
    };
    let u64_of = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
    if take(4)? != MAGIC {
        return Err(invalid(path, "not a point file"));
    }
    let format = u32::from_le_bytes(take(4)?.try_into().unwrap_or([0; 4]));
    let file_dim = u64_of(take(8)?);
    let count = u64_of(take(8)?);
    if format != FORMAT || file_dim != dim as u64 || count != expected as u64 {
        return Err(invalid(path, "header does not match the manifest"));
    }
    let count = usize::try_from(count).map_err(|_| invalid(path, "too many points"))?;
    let mut index = VectorIndex::new(dim);
    index.keys.reserve(count);
    for id in 0..count {
        let key = i64::from_le_bytes(take(8)?.try_into().unwrap_or([0; 8]));
        let hash = u64_of(take(8)?);
        let alive = take(1)?[0] == 1;
        index.keys.push(key);
        index.hashes.push(hash);
        index.alive.push(alive);
        if alive {
            index.live.insert(key, id);
        }
    }
    let floats = take(count * dim * 4)?;
    index.vectors = floats.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    index.quantize_all();
    Ok(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(seed: u64, dim: usize) -> Vec<f32> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut v: Vec<f32> = (0..dim)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s % 2000) as f32 / 1000.0 - 1.0
            })
            .collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= n);
        v
    }

    #[test]
    fn exact_snapshot_round_trip_keeps_tombstones() {
        let tmp = tempfile::tempdir().unwrap();
        let mut index = VectorIndex::new(4);
        for i in 0..20 {
            index.insert(i, i as u64, &unit(i as u64, 4));
        }
        index.remove(5);
        index.save(tmp.path(), "m@1", 7).unwrap();
        let (loaded, info) = VectorIndex::load(tmp.path(), "m@1", 4).unwrap();
        assert_eq!(info.generation, 7);
        assert_eq!(loaded.len(), 19);
        assert_eq!(loaded.search(&unit(3, 4), 1, None)[0].key, 3);
        assert!(loaded.search(&unit(5, 4), 20, None).iter().all(|h| h.key != 5));
        // Another model's snapshot is refused.
        assert!(matches!(VectorIndex::load(tmp.path(), "other@1", 4), Err(PersistError::Invalid { .. })));
        assert!(matches!(VectorIndex::load(&tmp.path().join("none"), "m@1", 4), Err(PersistError::Missing(_))));
    }

    #[test]
    fn graph_snapshot_round_trip_and_corruption_is_detected() {
        let tmp = tempfile::tempdir().unwrap();
        let dim = 8;
        let mut index = VectorIndex::new(dim).with_graph_threshold(1000);
        for i in 0..1100 {
            index.insert(i, i as u64, &unit(i as u64, dim));
        }
        index.refresh();
        index.save(tmp.path(), "m@1", 3).unwrap();
        // Saving again replaces the snapshot and removes the old folder.
        index.save(tmp.path(), "m@1", 4).unwrap();
        let snaps = std::fs::read_dir(tmp.path()).unwrap().filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with("snap-")).count();
        assert_eq!(snaps, 1);
        let (loaded, info) = VectorIndex::load(tmp.path(), "m@1", dim).unwrap();
        let loaded = loaded.with_graph_threshold(1000);
        assert_eq!(info.generation, 4);
        assert!(loaded.uses_hnsw());
        assert_eq!(loaded.search(&unit(77, dim), 1, None)[0].key, 77);

        // Flip a byte in the graph data: the snapshot is refused, not loaded.
        let name = std::fs::read_to_string(tmp.path().join(CURRENT)).unwrap();
        let data = tmp.path().join(name.trim()).join("graph.hnsw.data");
        let mut bytes = std::fs::read(&data).unwrap();
        bytes[100] ^= 0xff;
        std::fs::write(&data, bytes).unwrap();
        let err = VectorIndex::load(tmp.path(), "m@1", dim).err().unwrap();
        assert!(err.to_string().contains("checksum"), "{err}");
    }
}
