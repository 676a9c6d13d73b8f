//! The in-memory index: flat vectors for exact search, an optional HNSW
//! graph over them for large collections.

use std::collections::{HashMap, HashSet};

use hnsw_rs::hnsw::Hnsw;
use rayon::prelude::*;
use serde::Serialize;

use crate::distance::{UnitDot, dot, dots_u4_i8, int4_len, quantize, quantize4};

/// Collections up to this many live points are searched exactly. At 10k
/// points an exact scan takes ~1.1 ms p50 on two cores (bench/README.md,
/// `query_latency`).
pub const EXACT_SEARCH_MAX: usize = 20_000;

/// Collections up to this many live points (and above
/// [`EXACT_SEARCH_MAX`]) are searched by scanning int4 codes of the vectors
/// (an eighth of the float data to read) and re-scoring a shortlist with
/// the float vectors: as accurate as exact search for every query measured,
/// with no graph to build (a 100k-point graph took 513 s on two cores and
/// missed the recall goal for queries far from every point;
/// bench/README.md). Above it the HNSW graph takes over.
pub const QUANTIZED_SCAN_MAX: usize = 250_000;

/// The quantized scan's shortlist: this many candidates per wanted result
/// (at least [`RERANK_MIN`]) are re-scored with the float vectors. Int4
/// scores are within ~1e-2 of the float ones, so only points that close
/// to the last wanted result can be misordered at the shortlist's edge;
/// they crowd it when a query is far from every point of a collection whose
/// vectors share one direction (bench/README.md), so the shortlist is
/// generous: re-scoring 512 vectors costs ~0.2 ms.
const RERANK_FACTOR: usize = 16;
const RERANK_MIN: usize = 512;

/// Shortlisted points per rayon task when the float vectors re-score them.
const RESCORE_CHUNK: usize = 128;

/// hnsw_rs `max_nb_connection` (M). 24 is the usual choice for 384-d
/// embeddings; at 100k clustered points recall@10 is 1.0 for queries near
/// stored points, 0.67 for random directions (bench/README.md). Must stay
/// <= 256 (hnsw_rs exits above that).
pub const HNSW_MAX_CONNECTIONS: usize = 24;

/// hnsw_rs `ef_construction`: candidate list while inserting; 200 is the
/// usual quality/time balance, but a 100k-point build measured 634 s on two
/// loaded cores (bench/README.md): to be tuned.
pub const HNSW_EF_CONSTRUCTION: usize = 200;

/// Candidate list while searching (at least `k`). Measured on 20,000
/// clustered 384-d unit vectors (graph of M 24, 50 queries, recall@10
/// against exact search, other builds running): queries near stored points
/// reach 1.0 from 128 up; uniformly random directions, the worst case, reach
/// 0.94 at 128, 0.98 at 192, 0.99 at 256 and 0.998 at 384, at about 5, 8,
/// 13 and 20 ms p50. 192 is the smallest that keeps the worst case >= 0.95.
pub const HNSW_EF_SEARCH: usize = 192;

/// hnsw_rs layer cap (its own maximum is 16).
pub const HNSW_MAX_LAYERS: usize = 16;

/// Rebuild the graph when this share of its points are tombstones: past it,
/// searches waste much of their candidate list on dead points.
pub const REBUILD_DEAD_FRACTION: f64 = 0.2;

/// When a filter admits at most this many points, scan them exactly instead
/// of walking the graph: a graph walk with a very selective filter visits
/// most of the graph anyway and may miss admitted points.
const FILTERED_EXACT_MAX: usize = EXACT_SEARCH_MAX;

/// Points per rayon task of an exact scan.
const SCAN_CHUNK: usize = 4096;

/// One result.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Hit {
    /// The caller's key (chunk or map-entry row id).
    pub key: i64,
    /// Cosine similarity, -1..=1.
    pub score: f32,
}

/// What must change to bring an index in step with the store.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diff {
    /// Keys to remove (gone, or their content changed).
    pub remove: Vec<i64>,
    /// (key, content hash) to insert.
    pub add: Vec<(i64, u64)>,
}

impl Diff {
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.remove.is_empty() && self.add.is_empty()
    }
}

/// The first 64 bits of a hex content hash (SHA-256 hex in practice).
#[must_use]
pub fn hash64(hex: &str) -> u64 {
    let prefix = hex.get(..16).unwrap_or(hex);
    u64::from_str_radix(prefix, 16).unwrap_or_else(|_| {
        // Not hex: FNV-1a of the whole string, still stable.
        hex.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
    })
}

/// A collection's vectors. See the crate documentation.
pub struct VectorIndex {
    pub(crate) dim: usize,
    /// Internal id -> caller key.
    pub(crate) keys: Vec<i64>,
    /// Internal id -> content hash.
    pub(crate) hashes: Vec<u64>,
    pub(crate) alive: Vec<bool>,
    /// Internal id * dim -> vector.
    pub(crate) vectors: Vec<f32>,
    /// Internal id * [`int4_len`] -> int4 code of the vector ([`quantize4`]).
    pub(crate) codes: Vec<u8>,
    /// Internal id -> the code's scale.
    pub(crate) scales: Vec<f32>,
    /// Live key -> internal id.
    pub(crate) live: HashMap<i64, usize>,
    pub(crate) hnsw: Option<Hnsw<'static, f32, UnitDot>>,
    /// Internal ids below this are in the graph.
    pub(crate) hnsw_len: usize,
    /// Live points up to which search is exact ([`EXACT_SEARCH_MAX`]).
    pub(crate) exact_max: usize,
    /// Live points up to which search scans (exact, then quantized) and
    /// no graph is kept ([`QUANTIZED_SCAN_MAX`]).
    pub(crate) scan_max: usize,
    /// Hubness of the points, by content hash (see `crate::density`).
    pub(crate) densities: crate::density::Densities,
    /// A density pass under way (see `crate::density`).
    pub(crate) density_pass: Option<crate::density::DensityPass>,
}

impl VectorIndex {
    /// An empty index of `dim`-dimensional vectors.
    #[must_use]
    pub fn new(dim: usize) -> Self {
        Self {
            dim,
            keys: Vec::new(),
            hashes: Vec::new(),
            alive: Vec::new(),
            vectors: Vec::new(),
            codes: Vec::new(),
            scales: Vec::new(),
            live: HashMap::new(),
            hnsw: None,
            hnsw_len: 0,
            exact_max: EXACT_SEARCH_MAX,
            scan_max: QUANTIZED_SCAN_MAX,
            densities: crate::density::Densities::default(),
            density_pass: None,
        }
    }

    /// Sets the sizes up to which search is exact (default
    /// [`EXACT_SEARCH_MAX`]) and up to which it scans without a graph
    /// (default [`QUANTIZED_SCAN_MAX`]); for benchmarks and tests that
    /// compare the paths. `scan_max` below `exact_max` counts as `exact_max`.
    #[must_use]
    pub fn with_thresholds(mut self, exact_max: usize, scan_max: usize) -> Self {
        self.exact_max = exact_max;
        self.scan_max = scan_max.max(exact_max);
        self
    }

    /// Exact search up to `n` live points, the graph above (no quantized
    /// scan in between).
    #[must_use]
    pub fn with_graph_threshold(self, n: usize) -> Self {
        self.with_thresholds(n, n)
    }

    #[must_use]
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Live points.
    #[must_use]
    pub fn len(&self) -> usize {
        self.live.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// Is the HNSW graph in use?
    #[must_use]
    pub fn uses_hnsw(&self) -> bool {
        self.hnsw.is_some()
    }

    /// How an unfiltered search is answered at the current size: `exact`,
    /// `quantized` (int4 scan, float re-scoring) or `graph`.
    #[must_use]
    pub fn search_path(&self) -> &'static str {
        if self.hnsw.is_some() {
            "graph"
        } else if self.live.len() > self.exact_max {
            "quantized"
        } else {
            "exact"
        }
    }

    /// Tombstoned points still held.
    #[must_use]
    pub fn dead(&self) -> usize {
        self.keys.len() - self.live.len()
    }

    /// Compares with the store's current points (key, content hash).
    #[must_use]
    pub fn diff(&self, current: &[(i64, u64)]) -> Diff {
        let mut diff = Diff::default();
        let mut seen = HashSet::with_capacity(current.len());
        for &(key, hash) in current {
            seen.insert(key);
            match self.live.get(&key) {
                Some(&id) if self.hashes[id] == hash => {}
                Some(_) => {
                    diff.remove.push(key);
                    diff.add.push((key, hash));
                }
                None => diff.add.push((key, hash)),
            }
        }
        diff.remove.extend(self.live.keys().filter(|k| !seen.contains(k)).copied());
        diff
    }

    /// Tombstones `key`. Returns whether it was live.
    pub fn remove(&mut self, key: i64) -> bool {
        match self.live.remove(&key) {
            Some(id) => {
                self.alive[id] = false;
                true
            }
            None => false,
        }
    }

    /// Adds a point (replacing a live point with the same key). The vector
    /// must have [`VectorIndex::dim`] components and unit length; a vector of
    /// the wrong size is refused (returns false).
    pub fn insert(&mut self, key: i64, hash: u64, vector: &[f32]) -> bool {
        if vector.len() != self.dim {
            tracing::warn!(key, got = vector.len(), want = self.dim, "vector of the wrong dimension ignored");
            return false;
        }
        self.remove(key);
        let id = self.keys.len();
        self.keys.push(key);
        self.hashes.push(hash);
        self.alive.push(true);
        self.vectors.extend_from_slice(vector);
        self.scales.push(quantize4(vector, &mut self.codes));
        self.live.insert(key, id);
        true
    }

    pub(crate) fn vector(&self, id: usize) -> &[f32] {
        &self.vectors[id * self.dim..(id + 1) * self.dim]
    }

    fn code(&self, id: usize) -> &[u8] {
        let n = int4_len(self.dim);
        &self.codes[id * n..(id + 1) * n]
    }

    /// Recomputes every point's int4 code from its vector (after loading
    /// vectors in bulk).
    pub(crate) fn quantize_all(&mut self) {
        self.codes = Vec::with_capacity(self.keys.len() * int4_len(self.dim));
        self.scales = self.vectors.chunks_exact(self.dim.max(1)).map(|v| quantize4(v, &mut self.codes)).collect();
    }

    /// How much graph maintenance [`VectorIndex::refresh`] would do: `0` when
    /// none, the number of points to insert, or `usize::MAX` for a (re)build.
    /// Query paths refresh only when this is small and leave big jobs to a
    /// background sync; results are exact either way (points not yet in the
    /// graph are scanned).
    #[must_use]
    pub fn pending_graph_work(&self) -> usize {
        let dead = self.dead();
        #[allow(clippy::cast_precision_loss)]
        let too_dead = !self.keys.is_empty() && dead as f64 / self.keys.len() as f64 > REBUILD_DEAD_FRACTION;
        if self.live.len() <= self.scan_max {
            return usize::from(self.hnsw.is_some() || too_dead);
        }
        if self.hnsw.is_none() || too_dead {
            return usize::MAX;
        }
        self.keys.len() - self.hnsw_len
    }

    /// Brings the graph up to date: builds it when the collection passed
    /// [`QUANTIZED_SCAN_MAX`], rebuilds it (compacting tombstones) when too
    /// many of its points are dead, inserts points added since, and drops it
    /// when the collection shrank back under the threshold. Returns whether
    /// anything was done.
    pub fn refresh(&mut self) -> bool {
        let dead_share = if self.keys.is_empty() {
            0.0
        } else {
            // Point counts are far below 2^52: exact in f64.
            #[allow(clippy::cast_precision_loss)]
            let share = self.dead() as f64 / self.keys.len() as f64;
            share
        };
        if self.live.len() <= self.scan_max {
            let changed = self.hnsw.is_some() || dead_share > REBUILD_DEAD_FRACTION;
            self.hnsw = None;
            self.hnsw_len = 0;
            if dead_share > REBUILD_DEAD_FRACTION {
                self.compact();
            }
            return changed;
        }
        if self.hnsw.is_none() || dead_share > REBUILD_DEAD_FRACTION {
            self.compact();
            self.hnsw = Some(self.new_graph());
            self.hnsw_len = 0;
        }
        if self.hnsw_len == self.keys.len() {
            return false;
        }
        let start = self.hnsw_len;
        let batch: Vec<(&[f32], usize)> = (start..self.keys.len()).filter(|&id| self.alive[id]).map(|id| (self.vector(id), id)).collect();
        if let Some(graph) = &self.hnsw {
            graph.parallel_insert_slice(&batch);
        }
        self.hnsw_len = self.keys.len();
        true
    }

    fn new_graph(&self) -> Hnsw<'static, f32, UnitDot> {
        let mut graph = Hnsw::new(HNSW_MAX_CONNECTIONS, self.live.len().max(1), HNSW_MAX_LAYERS, HNSW_EF_CONSTRUCTION, UnitDot);
        graph.set_searching_mode(false);
        graph
    }

    /// Drops tombstones (renumbers internal ids; the graph must be rebuilt).
    fn compact(&mut self) {
        if self.dead() == 0 {
            return;
        }
        let mut keys = Vec::with_capacity(self.live.len());
        let mut hashes = Vec::with_capacity(self.live.len());
        let mut vectors = Vec::with_capacity(self.live.len() * self.dim);
        let mut codes = Vec::with_capacity(self.live.len() * int4_len(self.dim));
        let mut scales = Vec::with_capacity(self.live.len());
        for id in 0..self.keys.len() {
            if self.alive[id] {
                keys.push(self.keys[id]);
                hashes.push(self.hashes[id]);
                vectors.extend_from_slice(self.vector(id));
                codes.extend_from_slice(self.code(id));
                scales.push(self.scales[id]);
            }
        }
        self.codes = codes;
        self.scales = scales;
        self.live = keys.iter().enumerate().map(|(i, &k)| (k, i)).collect();
        self.alive = vec![true; keys.len()];
        self.keys = keys;
        self.hashes = hashes;
        self.vectors = vectors;
        self.hnsw = None;
        self.hnsw_len = 0;
    }

    /// The `k` nearest live points to `query` (unit length), best first.
    /// `allowed` restricts the result to those keys; it is applied before
    /// the top `k` is taken, so a filter never shrinks the result below `k`
    /// while admitted points remain.
    #[must_use]
    pub fn search(&self, query: &[f32], k: usize, allowed: Option<&HashSet<i64>>) -> Vec<Hit> {
        if k == 0 || query.len() != self.dim || self.live.is_empty() {
            return Vec::new();
        }
        let large = self.live.len() > self.exact_max;
        match (&self.hnsw, allowed) {
            (Some(graph), None) => self.search_graph(graph, query, k, None),
            (Some(graph), Some(set)) if set.len() > self.exact_max.min(FILTERED_EXACT_MAX) => self.search_graph(graph, query, k, Some(set)),
            (None, Some(set)) if large && set.len() > self.exact_max.min(FILTERED_EXACT_MAX) => self.scan_quantized(query, k, Some(set)),
            (_, Some(set)) => {
                let ids: Vec<usize> = set.iter().filter_map(|key| self.live.get(key).copied()).collect();
                self.exact(query, k, Some(&ids))
            }
            (None, None) if large => self.scan_quantized(query, k, None),
            (None, None) => self.exact(query, k, None),
        }
    }

    /// Exact search regardless of size (the reference for recall checks).
    #[must_use]
    pub fn search_exact(&self, query: &[f32], k: usize) -> Vec<Hit> {
        if k == 0 || query.len() != self.dim {
            return Vec::new();
        }
        self.exact(query, k, None)
    }

    fn exact(&self, query: &[f32], k: usize, ids: Option<&[usize]>) -> Vec<Hit> {
        let score = |id: usize| Hit { key: self.keys[id], score: dot(query, self.vector(id)) };
        let top_of = |hits: &mut Vec<Hit>| {
            if hits.len() > k {
                hits.select_nth_unstable_by(k - 1, |a, b| b.score.total_cmp(&a.score));
                hits.truncate(k);
            }
        };
        let mut hits: Vec<Hit> = match ids {
            Some(ids) => ids.iter().filter(|&&id| self.alive[id]).map(|&id| score(id)).collect(),
            None if self.keys.len() <= SCAN_CHUNK => (0..self.keys.len()).filter(|&id| self.alive[id]).map(score).collect(),
            None => (0..self.keys.len().div_ceil(SCAN_CHUNK))
                .into_par_iter()
                .flat_map_iter(|chunk| {
                    let ids = chunk * SCAN_CHUNK..((chunk + 1) * SCAN_CHUNK).min(self.keys.len());
                    let mut local: Vec<Hit> = ids.filter(|&id| self.alive[id]).map(score).collect();
                    top_of(&mut local);
                    local
                })
                .collect(),
        };
        top_of(&mut hits);
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.key.cmp(&b.key)));
        hits
    }

    /// Scans the int4 codes for a shortlist, then re-scores it with the
    /// float vectors (see [`QUANTIZED_SCAN_MAX`]).
    fn scan_quantized(&self, query: &[f32], k: usize, allowed: Option<&HashSet<i64>>) -> Vec<Hit> {
        let mut q = Vec::with_capacity(self.dim);
        quantize(query, &mut q);
        q.resize(int4_len(self.dim) * 2, 0);
        let q_sum: i32 = q.iter().map(|&x| i32::from(x)).sum();
        let shortlist = k.saturating_mul(RERANK_FACTOR).max(RERANK_MIN);
        let admits = |id: usize| self.alive[id] && allowed.is_none_or(|set| set.contains(&self.keys[id]));
        let code_len = int4_len(self.dim);
        let keep_best = |c: &mut Vec<(usize, f32)>| {
            if c.len() > shortlist {
                c.select_nth_unstable_by(shortlist - 1, |a, b| b.1.total_cmp(&a.1));
                c.truncate(shortlist);
            }
        };
        // Each worker scans its share of the runs of points into one buffer,
        // pushing only the points that beat its current bar; when the
        // buffer holds twice the shortlist it keeps the best `shortlist` and
        // raises the bar to the worst of them. Most points fail the bar
        // after the first runs, so a run costs its products and one
        // comparison per point, with no selection over the run and no
        // allocation. The shares are contiguous, one per thread: a bar rises
        // only within its share, and rayon's `fold` would start a new buffer
        // (and bar) at every split of the range, pushing whole runs and
        // selecting over them (at 100k points, 15-30 % of a search).
        struct Scan {
            buffer: Vec<(usize, f32)>,
            bar: f32,
            dots: Vec<i32>,
        }
        let runs = self.keys.len().div_ceil(SCAN_CHUNK);
        let run_of = |chunk: usize| (chunk * SCAN_CHUNK, ((chunk + 1) * SCAN_CHUNK).min(self.keys.len()));
        let workers = rayon::current_num_threads().clamp(1, runs.max(1));
        let mut candidates: Vec<(usize, f32)> = (0..workers)
            .into_par_iter()
            .map(|worker| {
                let mut scan = Scan { buffer: Vec::with_capacity(2 * shortlist + SCAN_CHUNK), bar: f32::NEG_INFINITY, dots: Vec::with_capacity(SCAN_CHUNK) };
                for c in runs * worker / workers..runs * (worker + 1) / workers {
                    let (first, end) = run_of(c);
                    scan.dots.clear();
                    dots_u4_i8(&self.codes[first * code_len..end * code_len], code_len, &q, &mut scan.dots);
                    for (id, &dot) in (first..end).zip(&scan.dots) {
                        // Ordering by `scale * dot` is ordering by the
                        // approximate cosine: the query's own scale is the
                        // same for every point.
                        #[allow(clippy::cast_precision_loss)]
                        let score = self.scales[id] * (dot - 8 * q_sum) as f32;
                        if score > scan.bar && admits(id) {
                            scan.buffer.push((id, score));
                        }
                    }
                    if scan.buffer.len() >= 2 * shortlist {
                        keep_best(&mut scan.buffer);
                        scan.bar = scan.buffer.iter().map(|c| c.1).fold(f32::INFINITY, f32::min);
                    }
                }
                scan.buffer
            })
            .reduce(Vec::new, |mut a, b| {
                a.extend(b);
                keep_best(&mut a);
                a
            });
        keep_best(&mut candidates);
        // The shortlist's float vectors, in id order so the reads run
        // forward, on every core: ~0.5 ms of reads from memory on one.
        candidates.sort_unstable_by_key(|c| c.0);
        let mut hits: Vec<Hit> = candidates
            .par_chunks(RESCORE_CHUNK)
            .flat_map_iter(|part| part.iter().map(|&(id, _)| Hit { key: self.keys[id], score: dot(query, self.vector(id)) }))
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.key.cmp(&b.key)));
        hits.truncate(k);
        hits
    }

    fn search_graph(&self, graph: &Hnsw<'static, f32, UnitDot>, query: &[f32], k: usize, allowed: Option<&HashSet<i64>>) -> Vec<Hit> {
        let live_filter = |id: &usize| {
            *id < self.keys.len() && self.alive[*id] && allowed.is_none_or(|set| set.contains(&self.keys[*id]))
        };
        // hnsw_rs gives up its early stop whenever a filter is passed (it
        // keeps walking until no candidate is left: near a full scan at 100k
        // points), so without a caller's filter the graph is searched
        // unfiltered for enough neighbours to cover every dead point, and
        // dead ones are dropped afterwards. Only when that leaves fewer than
        // `k` is the filtered walk needed.
        let unfiltered = allowed.is_none().then(|| {
            let want = k.saturating_add(self.dead());
            graph.search_filter(query, want, HNSW_EF_SEARCH.max(want), None)
        });
        let neighbours = match unfiltered {
            Some(found) if found.iter().filter(|n| live_filter(&n.d_id)).count() >= k.min(self.live.len()) => found,
            _ => graph.search_filter(query, k, HNSW_EF_SEARCH.max(k), Some(&live_filter)),
        };
        let mut hits: Vec<Hit> = neighbours
            .into_iter()
            .filter(|n| live_filter(&n.d_id))
            .map(|n| Hit { key: self.keys[n.d_id], score: dot(query, self.vector(n.d_id)) })
            .collect();
        // Points added since the graph was built are not in it yet: scan them.
        for id in self.hnsw_len..self.keys.len() {
            if live_filter(&id) {
                hits.push(Hit { key: self.keys[id], score: dot(query, self.vector(id)) });
            }
        }
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.key.cmp(&b.key)));
        hits.truncate(k);
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn unit(seed: u64, dim: usize) -> Vec<f32> {
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
    fn exact_search_orders_and_filters_before_top_k() {
        let mut index = VectorIndex::new(8);
        for i in 0..100 {
            index.insert(i, i as u64, &unit(i as u64, 8));
        }
        let q = unit(42, 8);
        let hits = index.search(&q, 3, None);
        assert_eq!(hits[0].key, 42);
        assert!((hits[0].score - 1.0).abs() < 1e-5);
        assert!(hits[0].score >= hits[1].score && hits[1].score >= hits[2].score);
        let allowed: HashSet<i64> = [7, 8, 9].into_iter().collect();
        let hits = index.search(&q, 5, Some(&allowed));
        assert_eq!(hits.len(), 3);
        assert!(hits.iter().all(|h| allowed.contains(&h.key)));
    }

    #[test]
    fn removed_points_never_come_back_and_diff_sees_changes() {
        let mut index = VectorIndex::new(8);
        for i in 0..10 {
            index.insert(i, 100 + i as u64, &unit(i as u64, 8));
        }
        assert!(index.remove(3));
        assert!(index.search(&unit(3, 8), 10, None).iter().all(|h| h.key != 3));
        let current: Vec<(i64, u64)> = vec![(0, 100), (1, 999), (20, 5)];
        let diff = index.diff(&current);
        let mut remove = diff.remove.clone();
        remove.sort_unstable();
        assert_eq!(remove, vec![1, 2, 4, 5, 6, 7, 8, 9]);
        assert_eq!(diff.add, vec![(1, 999), (20, 5)]);
        assert!(!index.insert(30, 1, &[1.0]), "wrong dimension refused");
    }

    #[test]
    fn graph_search_matches_exact_and_respects_tombstones() {
        let dim = 16;
        let n = 3000;
        let mut index = VectorIndex::new(dim).with_graph_threshold(2000);
        for i in 0..n {
            index.insert(i as i64, i as u64, &unit(i as u64, dim));
        }
        assert!(index.refresh());
        assert!(index.uses_hnsw());
        let q = unit(7, dim);
        let hits = index.search(&q, 10, None);
        assert_eq!(hits[0].key, 7);
        index.remove(7);
        let hits = index.search(&q, 10, None);
        assert!(hits.iter().all(|h| h.key != 7));
        // New points are found before the graph takes them in.
        index.insert(7_000_000, 1, &q);
        assert_eq!(index.search(&q, 1, None)[0].key, 7_000_000);
        // A selective filter is answered exactly.
        let allowed: HashSet<i64> = [11, 12].into_iter().collect();
        let hits = index.search(&q, 10, Some(&allowed));
        assert_eq!(hits.len(), 2);
        // Recall against exact search on a sample of queries.
        let mut found = 0;
        for s in 0..50u64 {
            let q = unit(1_000_000 + s, dim);
            let exact: HashSet<i64> = index.search_exact(&q, 10).iter().map(|h| h.key).collect();
            found += index.search(&q, 10, None).iter().filter(|h| exact.contains(&h.key)).count();
        }
        assert!(found as f64 / 500.0 >= 0.9, "recall {found}/500");
    }

    #[test]
    fn quantized_scan_matches_exact_search() {
        let dim = 64;
        let mut index = VectorIndex::new(dim).with_thresholds(500, 10_000);
        // Clustered points: near-ties are where a shortlist could go wrong.
        for i in 0..3000u64 {
            let base = unit(i % 300, dim);
            let noise = unit(10_000 + i, dim);
            let v: Vec<f32> = base.iter().zip(&noise).map(|(b, n)| b + 0.15 * n).collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            index.insert(i as i64, i, &v.iter().map(|x| x / norm).collect::<Vec<f32>>());
        }
        assert!(!index.refresh(), "no graph below the scan threshold");
        assert_eq!(index.search_path(), "quantized");
        for s in 0..40u64 {
            let q = if s % 2 == 0 { unit(s, dim) } else { unit(1_000_000 + s, dim) };
            let exact = index.search_exact(&q, 10);
            let found = index.search(&q, 10, None);
            assert_eq!(found.iter().map(|h| h.key).collect::<Vec<_>>(), exact.iter().map(|h| h.key).collect::<Vec<_>>(), "query {s}");
            assert!(found.iter().zip(&exact).all(|(a, b)| a.score == b.score), "float scores are returned");
        }
        // Tombstones and large filters go through the same scan.
        let q = unit(5, dim);
        let best = index.search(&q, 1, None)[0].key;
        index.remove(best);
        assert!(index.search(&q, 10, None).iter().all(|h| h.key != best));
        let allowed: HashSet<i64> = (0..3000).filter(|k| k % 2 == 1).collect();
        let hits = index.search(&q, 10, Some(&allowed));
        assert_eq!(hits.len(), 10);
        assert!(hits.iter().all(|h| h.key % 2 == 1));
    }

    /// Recall@10 against exact search over `queries`.
    fn recall(index: &VectorIndex, queries: &[Vec<f32>]) -> f64 {
        let mut found = 0;
        for q in queries {
            let exact: HashSet<i64> = index.search_exact(q, 10).iter().map(|h| h.key).collect();
            found += index.search(q, 10, None).iter().filter(|h| exact.contains(&h.key)).count();
        }
        found as f64 / (queries.len() * 10) as f64
    }

    fn normalized(v: Vec<f32>) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect()
    }

    #[test]
    fn quantized_scan_keeps_recall_when_every_point_shares_one_direction() {
        // Like multilingual-e5: every vector leans on one common direction
        // (unrelated points have cosines around 0.7), and points come in
        // clusters: what tells points apart is a small part of each vector,
        // which the int4 codes must still resolve.
        let dim = 384;
        let common = unit(999, dim);
        let mut index = VectorIndex::new(dim).with_thresholds(500, 1_000_000);
        let point = |i: u64| {
            let cluster = unit(i % 500, dim);
            let noise = unit(50_000 + i, dim);
            normalized((0..dim).map(|d| 1.5 * common[d] + 0.8 * cluster[d] + 0.4 * noise[d]).collect())
        };
        let n = 20_000u64;
        for i in 0..n {
            index.insert(i as i64, i, &point(i));
        }
        let (a, b) = (point(1), point(2));
        let cos: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!(cos > 0.6, "the points share a direction (cosine {cos})");
        assert_eq!(index.search_path(), "quantized");
        let near: Vec<Vec<f32>> = (0..30u64).map(|s| normalized(point(s * 613).iter().zip(unit(77_000 + s, dim)).map(|(p, r)| p + 0.3 * r).collect())).collect();
        let leaning: Vec<Vec<f32>> = (0..30u64).map(|s| normalized(common.iter().zip(unit(88_000 + s, dim)).map(|(c, r)| 1.5 * c + r).collect())).collect();
        let random: Vec<Vec<f32>> = (0..30u64).map(|s| unit(99_000 + s, dim)).collect();
        for (name, queries) in [("near a point", &near), ("leaning on the common direction", &leaning), ("random", &random)] {
            let r = recall(&index, queries);
            assert!(r >= 0.95, "recall@10 {r} for queries {name}");
        }
    }

    #[test]
    fn hash64_takes_hex_prefix() {
        assert_eq!(hash64("00000000000000ffabc"), 255);
        assert_ne!(hash64("not hex"), hash64("not hex either"));
    }
}
