//! Hubness reduction: some chunks (boilerplate, long lists of imports,
//! generic helpers) sit close to a great many others and so come near the
//! top for requests of every kind. A point's *density* is its mean cosine
//! similarity to its [`DENSITY_NEIGHBOURS`] nearest other points; ranking by
//! `similarity - HUBNESS_WEIGHT * (density - mean density)` (cross-domain
//! similarity local scaling, CSLS, with the collection standing in for the
//! queries) lowers such hubs and lifts chunks that are close to the request
//! but to little else.
//!
//! Densities are kept by content hash (a chunk's density depends on its
//! vector and the collection, not on its row), computed for the points that
//! lack one, and all recomputed once the points computed one at a time since
//! the last full pass pass a quarter of the collection (new points change
//! their neighbours' densities a little; a quarter of new points, enough).
//! The caller persists them ([`VectorIndex::densities`],
//! [`VectorIndex::restore_densities`]).

use std::collections::HashMap;

use rayon::prelude::*;

use crate::distance::dot;
use crate::index::{Hit, VectorIndex};

/// Neighbours a point's density is the mean similarity to.
pub const DENSITY_NEIGHBOURS: usize = 10;

/// How much of a point's density above the collection's mean is taken off
/// its similarity to a request. CSLS proper takes 0.5 (`2 cos - r`, halved);
/// on `bench/retrieval` (hybrid, 120 requests) 0.5 and 0.25 both raised file
/// R@5 from 0.725 to 0.750, but 0.5 cost R@1 (0.483 -> 0.458) and 0.25 did
/// not (0.475), so the milder one.
pub const HUBNESS_WEIGHT: f32 = 0.25;

/// Points a density is measured against at most: in a larger collection,
/// an even sample of this many (every n-th live point). The ten nearest of
/// a sample stand for about the ten times n nearest of the whole: the same
/// for every point, so densities still compare, and computing them all
/// costs at most this many products per point (by the 14,000-point timing,
/// about 4 minutes for 100,000 points on two cores) instead of growing with
/// the square.
pub const DENSITY_SAMPLE: usize = 20_000;

/// Query points scored against the collection together: each collection
/// vector is read once per tile, the tile's vectors stay in cache.
const TILE: usize = 32;

/// Similarity products one step of a density pass computes at most
/// ([`VectorIndex::compute_densities_step`]): 500 points against a sample
/// of 20,000, about a second on two cores at 384 dimensions. Whoever waits
/// for the index between steps waits no longer.
pub const DENSITY_STEP_PAIRS: usize = 10_000_000;

/// A density pass under way.
#[derive(Debug)]
pub(crate) struct DensityPass {
    /// All densities are recomputed (not only the missing ones).
    full: bool,
    /// Content hashes still to compute, the next one last.
    todo: Vec<u64>,
    done: Vec<(u64, f32)>,
}

/// What a step of a density pass did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DensityStep {
    /// Densities computed in this step.
    pub computed: usize,
    /// The pass ended (its densities are in use), or there was none to do.
    pub finished: bool,
}

/// Densities of an index's points, by content hash.
#[derive(Clone, Debug, Default)]
pub struct Densities {
    pub(crate) by_hash: HashMap<u64, f32>,
    /// Live points at the last full computation.
    pub(crate) basis: usize,
    /// Points computed one at a time since.
    pub(crate) incremental: usize,
    /// Mean density of the live points (0 when none is known).
    pub(crate) mean: f32,
}

impl Densities {
    /// Densities as read back from disk: `(content hash, density)` pairs,
    /// the live count of their last full computation, and the points
    /// computed one at a time since.
    #[must_use]
    pub fn new(pairs: impl IntoIterator<Item = (u64, f32)>, basis: usize, incremental: usize) -> Self {
        Self { by_hash: pairs.into_iter().filter(|(_, d)| d.is_finite()).collect(), basis, incremental, mean: 0.0 }
    }

    /// `(content hash, density)` pairs, in no particular order.
    pub fn pairs(&self) -> impl Iterator<Item = (u64, f32)> + '_ {
        self.by_hash.iter().map(|(&h, &d)| (h, d))
    }

    #[must_use]
    pub fn basis(&self) -> usize {
        self.basis
    }

    #[must_use]
    pub fn incremental(&self) -> usize {
        self.incremental
    }
}

impl VectorIndex {
    /// Live points whose density is not known.
    #[must_use]
    pub fn missing_densities(&self) -> usize {
        self.live.values().filter(|&&id| !self.densities.by_hash.contains_key(&self.hashes[id])).count()
    }

    /// How many densities [`VectorIndex::compute_densities`] would compute
    /// now: 0, the missing ones, or every live point.
    #[must_use]
    pub fn density_work(&self) -> usize {
        let missing = self.missing_densities();
        if missing == 0 || self.live.len() < 2 {
            0
        } else if self.full_density_pass_due(missing) {
            self.live.len()
        } else {
            missing
        }
    }

    fn full_density_pass_due(&self, missing: usize) -> bool {
        self.densities.basis == 0 || (self.densities.incremental + missing) * 4 > self.densities.basis
    }

    /// Whether a density pass begun by [`VectorIndex::compute_densities_step`]
    /// is still under way (until it ends, the previous densities rank).
    #[must_use]
    pub fn density_pass_pending(&self) -> bool {
        self.density_pass.is_some()
    }

    /// Computes the densities that are missing, or all of them when the
    /// collection changed by a quarter since the last full pass. Returns how
    /// many were computed. Costs one exact scan of the collection (or of its
    /// [`DENSITY_SAMPLE`]) per point computed: 24 s for 14,000 points of 384
    /// dimensions on two busy cores.
    pub fn compute_densities(&mut self) -> usize {
        let mut computed = 0;
        loop {
            let step = self.compute_densities_step(usize::MAX);
            computed += step.computed;
            if step.finished {
                return computed;
            }
        }
    }

    /// One step of a density pass: begins one (the missing densities, or all
    /// as [`VectorIndex::compute_densities`] decides) unless one is under
    /// way, and computes as many of its points as `max_pairs` similarity
    /// products allow (one point at least). The densities in use change only
    /// when the pass ends, all at once, so a caller holding the index behind
    /// a lock can let go of it between steps and searches in between rank
    /// with the previous densities. Points added meanwhile wait for the next
    /// pass; points removed are skipped.
    pub fn compute_densities_step(&mut self, max_pairs: usize) -> DensityStep {
        let live: Vec<usize> = (0..self.keys.len()).filter(|&id| self.alive[id]).collect();
        if live.len() < 2 {
            self.densities = Densities::default();
            self.density_pass = None;
            return DensityStep { computed: 0, finished: true };
        }
        let mut pass = match self.density_pass.take() {
            Some(pass) => pass,
            None => {
                let missing: Vec<usize> =
                    live.iter().copied().filter(|&id| !self.densities.by_hash.contains_key(&self.hashes[id])).collect();
                let full = self.full_density_pass_due(missing.len());
                let todo = if full { live.clone() } else { missing };
                // Points with one content hash have one vector: computed once.
                let mut seen = std::collections::HashSet::with_capacity(todo.len());
                let mut todo: Vec<u64> = todo.into_iter().map(|id| self.hashes[id]).filter(|&h| seen.insert(h)).collect();
                // Taken from the end, in the order of the ids.
                todo.reverse();
                DensityPass { full, todo, done: Vec::new() }
            }
        };
        let step = live.len().div_ceil(DENSITY_SAMPLE);
        let sample: Vec<usize> = live.iter().copied().step_by(step).collect();
        let points = (max_pairs / sample.len()).clamp(1, pass.todo.len().max(1));
        let batch = pass.todo.split_off(pass.todo.len().saturating_sub(points));
        let id_of: HashMap<u64, usize> = live.iter().map(|&id| (self.hashes[id], id)).collect();
        let ids: Vec<usize> = batch.iter().rev().filter_map(|h| id_of.get(h).copied()).collect();
        let computed: Vec<(u64, f32)> = ids
            .par_chunks(TILE)
            .flat_map_iter(|tile| self.neighbour_means(tile, &sample).into_iter().zip(tile).map(|(d, &id)| (self.hashes[id], d)).collect::<Vec<_>>())
            .collect();
        let count = computed.len();
        pass.done.extend(computed);
        if !pass.todo.is_empty() {
            self.density_pass = Some(pass);
            return DensityStep { computed: count, finished: false };
        }
        if pass.full {
            self.densities.by_hash.clear();
            self.densities.basis = live.len();
            self.densities.incremental = 0;
        } else {
            self.densities.incremental += pass.done.len();
        }
        self.densities.by_hash.extend(pass.done);
        self.forget_dead_densities();
        DensityStep { computed: count, finished: true }
    }

    /// The mean similarity of each point of `tile` to its
    /// [`DENSITY_NEIGHBOURS`] nearest other points among `among`.
    fn neighbour_means(&self, tile: &[usize], among: &[usize]) -> Vec<f32> {
        let k = DENSITY_NEIGHBOURS.min(among.len().saturating_sub(1)).max(1);
        // Each point's best `k` so far, ascending (the bar is the first).
        let mut best: Vec<Vec<f32>> = vec![Vec::with_capacity(k + 1); tile.len()];
        for &j in among {
            let v = self.vector(j);
            for (t, &i) in tile.iter().enumerate() {
                if i == j {
                    continue;
                }
                let s = dot(self.vector(i), v);
                let top = &mut best[t];
                if top.len() < k {
                    let at = top.partition_point(|&x| x < s);
                    top.insert(at, s);
                } else if s > top[0] {
                    top.remove(0);
                    let at = top.partition_point(|&x| x < s);
                    top.insert(at, s);
                }
            }
        }
        // At most DENSITY_NEIGHBOURS values: exact in f32.
        #[allow(clippy::cast_precision_loss)]
        best.into_iter().map(|top| if top.is_empty() { 0.0 } else { top.iter().sum::<f32>() / top.len() as f32 }).collect()
    }

    /// Drops the densities of content no live point has, and updates the
    /// mean over the live points.
    fn forget_dead_densities(&mut self) {
        let live_hashes: std::collections::HashSet<u64> = self.live.values().map(|&id| self.hashes[id]).collect();
        self.densities.by_hash.retain(|h, _| live_hashes.contains(h));
        let known: Vec<f32> = self.live.values().filter_map(|&id| self.densities.by_hash.get(&self.hashes[id]).copied()).collect();
        // Point counts are far below 2^24 in practice; the mean is a ranking offset.
        #[allow(clippy::cast_precision_loss)]
        let mean = if known.is_empty() { 0.0 } else { known.iter().sum::<f32>() / known.len() as f32 };
        self.densities.mean = mean;
    }

    /// The densities, to persist.
    #[must_use]
    pub fn densities(&self) -> &Densities {
        &self.densities
    }

    /// Puts back densities read from disk (entries for content the index
    /// does not hold are dropped).
    pub fn restore_densities(&mut self, densities: Densities) {
        self.densities = densities;
        self.forget_dead_densities();
    }

    /// Each hit's similarity less [`HUBNESS_WEIGHT`] times how far its
    /// point's density lies above the collection's mean (a point without a
    /// known density is left as it is). For ranking only: the similarity
    /// itself still says how close the point is.
    #[must_use]
    pub fn hubness_adjusted(&self, hits: &[Hit]) -> Vec<f32> {
        hits.iter()
            .map(|h| {
                let density = self.live.get(&h.key).and_then(|&id| self.densities.by_hash.get(&self.hashes[id]));
                density.map_or(h.score, |d| h.score - HUBNESS_WEIGHT * (d - self.densities.mean))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    /// A hub close to many points, a loner close to few: the hub's density
    /// is higher, and a query slightly closer to the hub than to the loner
    /// ranks the loner first once adjusted.
    #[test]
    fn a_hub_is_ranked_below_a_point_as_close_to_the_query_but_to_little_else() {
        let mut index = VectorIndex::new(3);
        // A cluster around the x axis, the hub in its middle.
        index.insert(1, 0x1, &unit(&[1.0, 0.05, 0.0]));
        for i in 0..12 {
            #[allow(clippy::cast_precision_loss)]
            let t = i as f32 * 0.02;
            index.insert(100 + i, 0x100 + i as u64, &unit(&[1.0, t - 0.1, 0.1]));
        }
        // The loner, away from the cluster.
        index.insert(2, 0x2, &unit(&[0.6, 0.0, 0.8]));
        assert_eq!(index.missing_densities(), 14);
        assert_eq!(index.compute_densities(), 14);
        assert_eq!(index.missing_densities(), 0);
        let hub = index.densities().by_hash[&0x1];
        let loner = index.densities().by_hash[&0x2];
        assert!(hub > loner + 0.1, "hub {hub}, loner {loner}");

        let query = unit(&[0.88, 0.03, 0.42]);
        let raw = index.search(&query, 14, None);
        let hub_raw = raw.iter().position(|h| h.key == 1).unwrap();
        let loner_raw = raw.iter().position(|h| h.key == 2).unwrap();
        assert!(hub_raw < loner_raw, "the hub is closer to the query before adjusting");
        let adjusted = index.hubness_adjusted(&raw);
        assert!(adjusted[loner_raw] > adjusted[hub_raw], "adjusted: loner {} hub {}", adjusted[loner_raw], adjusted[hub_raw]);
    }

    /// Past [`DENSITY_SAMPLE`] points, densities are measured against an
    /// even sample: every point still gets one, and a tight cluster is still
    /// denser than points spread thin.
    #[test]
    fn large_collections_are_measured_against_a_sample() {
        let n = DENSITY_SAMPLE + 500;
        let mut index = VectorIndex::new(2);
        for i in 0..n {
            // A third of the points in a narrow arc, the rest spread round
            // the circle.
            #[allow(clippy::cast_precision_loss)]
            let a = if i % 3 == 0 { 0.01 * (i as f32 / n as f32) } else { std::f32::consts::TAU * (i as f32 / n as f32) };
            index.insert(i64::try_from(i).unwrap(), i as u64, &[a.cos(), a.sin()]);
        }
        assert_eq!(index.compute_densities(), n);
        assert_eq!(index.missing_densities(), 0);
        let dense = index.densities().by_hash[&0];
        let spread = index.densities().by_hash[&(n as u64 / 2 / 3 * 3 + 1)];
        assert!(dense > 0.999 && dense > spread, "dense {dense}, spread {spread}");
    }

    #[test]
    fn densities_follow_content_and_are_recomputed_when_the_collection_changes_much() {
        let mut index = VectorIndex::new(2);
        for i in 0..20u64 {
            #[allow(clippy::cast_precision_loss)]
            let a = i as f32 * 0.05;
            index.insert(i64::try_from(i).unwrap(), i, &[a.cos(), a.sin()]);
        }
        assert_eq!(index.compute_densities(), 20);
        assert_eq!(index.compute_densities(), 0, "nothing missing, nothing computed");
        // One new point: computed alone.
        index.insert(100, 100, &[0.0, 1.0]);
        assert_eq!(index.compute_densities(), 1);
        // A removed point's density is forgotten.
        index.remove(100);
        index.compute_densities();
        assert!(!index.densities().by_hash.contains_key(&100));
        // Persisted and restored: nothing to compute.
        let saved = Densities::new(index.densities().pairs(), index.densities().basis(), index.densities().incremental());
        let mut again = VectorIndex::new(2);
        for i in 0..20u64 {
            #[allow(clippy::cast_precision_loss)]
            let a = i as f32 * 0.05;
            again.insert(i64::try_from(i).unwrap(), i, &[a.cos(), a.sin()]);
        }
        again.restore_densities(saved);
        assert_eq!(again.missing_densities(), 0);
        // Six new points of twenty: more than a quarter, all recomputed.
        for i in 200..206u64 {
            #[allow(clippy::cast_precision_loss)]
            let a = i as f32 * 0.01;
            again.insert(i64::try_from(i).unwrap(), i, &[a.sin(), a.cos()]);
        }
        assert_eq!(again.compute_densities(), 26);
    }

    /// A pass taken a step at a time gives the densities a one-shot pass
    /// gives, and the previous ones stay in use until it ends.
    #[test]
    fn a_pass_in_steps_keeps_the_old_densities_until_it_ends() {
        let build = || {
            let mut index = VectorIndex::new(2);
            for i in 0..40u64 {
                #[allow(clippy::cast_precision_loss)]
                let a = if i % 2 == 0 { i as f32 * 0.01 } else { i as f32 * 0.15 };
                index.insert(i64::try_from(i).unwrap(), i, &[a.cos(), a.sin()]);
            }
            index
        };
        let mut one_shot = build();
        assert_eq!(one_shot.compute_densities(), 40);

        let mut stepped = build();
        let mut steps = 0;
        let mut computed = 0;
        loop {
            // 40 points, each against 40: 400 products are 10 points a step.
            let step = stepped.compute_densities_step(400);
            steps += 1;
            computed += step.computed;
            if step.finished {
                break;
            }
            assert!(stepped.density_pass_pending());
            assert!(stepped.densities().by_hash.is_empty(), "nothing in use before the pass ends");
            if steps == 2 {
                // Removed mid-pass: skipped. Added mid-pass: left for the next pass.
                stepped.remove(39);
                stepped.insert(500, 500, &[0.0, 1.0]);
            }
        }
        assert_eq!(steps, 4);
        assert_eq!(computed, 39);
        assert!(!stepped.density_pass_pending());
        for i in 0..39u64 {
            let (a, b) = (one_shot.densities().by_hash[&i], stepped.densities().by_hash[&i]);
            // Point 39 left and point 500 came: neighbours differ a little.
            assert!((a - b).abs() < 0.05, "point {i}: {a} against {b}");
        }
        assert!(!stepped.densities().by_hash.contains_key(&39));
        assert_eq!(stepped.missing_densities(), 1, "the point added mid-pass");
        assert_eq!(stepped.compute_densities(), 1);

        // Unchanged collection: step by step equals one shot exactly.
        let mut again = build();
        while !again.compute_densities_step(100).finished {}
        for i in 0..40u64 {
            assert_eq!(one_shot.densities().by_hash[&i].to_bits(), again.densities().by_hash[&i].to_bits(), "point {i}");
        }
    }
}
