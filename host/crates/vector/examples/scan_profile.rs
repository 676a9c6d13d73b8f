//! Times `VectorIndex::search` alone, and its recall@10 against exact
//! search: `scan_profile [N] [QUERIES] [COMMON] [EVICT_MB]`.
//!
//! N points (default 100,000) of 384 components, in clusters of 10 near
//! copies of a random direction (like near-duplicate code); COMMON (default
//! 0) is the weight of one direction every point and query shares, as
//! embeddings of one model do. Searches ask for k = 50, as hybrid search
//! does. Recall is measured for queries near stored points and for random
//! directions, the worst case. EVICT_MB (default 0) megabytes of other data
//! are read before each timed search, as the query embedding reads the
//! model's weights (~90 MB for all-MiniLM-L6-v2) just before the search in
//! the product: without it a repeated search finds the codes in the CPU's
//! cache, which the product's searches do not.
use std::collections::HashSet;
use std::time::Instant;

use code_intel_vector::VectorIndex;

struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }

    fn unit(&mut self, dim: usize) -> Vec<f32> {
        normalized((0..dim).map(|_| self.uniform()).collect())
    }

    fn near(&mut self, base: &[f32], spread: f32) -> Vec<f32> {
        let scale = spread / (base.len() as f32).sqrt() * 3.4;
        normalized(base.iter().map(|x| x + self.uniform() * scale).collect())
    }
}

fn normalized(mut v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= n);
    v
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: f64| args.get(i).and_then(|a| a.parse::<f64>().ok()).unwrap_or(default);
    let (n, queries, common_weight) = (arg(0, 100_000.0) as usize, arg(1, 500.0) as usize, arg(2, 0.0) as f32);
    let evict: Vec<u64> = vec![1; (arg(3, 0.0) * 1024.0 * 1024.0 / 8.0) as usize];
    let dim = 384;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let common = rng.unit(dim);
    let lean = |v: Vec<f32>| normalized(v.iter().zip(&common).map(|(x, c)| x + common_weight * c).collect());
    let mut index = VectorIndex::new(dim);
    let mut points = Vec::with_capacity(n);
    while points.len() < n {
        let base = lean(rng.unit(dim));
        for _ in 0..10.min(n - points.len()) {
            points.push(rng.near(&base, 0.3));
        }
    }
    for (i, p) in points.iter().enumerate() {
        index.insert(i64::try_from(i).unwrap_or(i64::MAX), i as u64, p);
    }
    index.refresh();

    let random: Vec<Vec<f32>> = (0..queries).map(|_| lean(rng.unit(dim))).collect();
    let near: Vec<Vec<f32>> = (0..queries).map(|i| rng.near(&points[(i * 7919) % n], 0.8)).collect();
    let mut times: Vec<f64> = Vec::with_capacity(2 * queries);
    for q in random.iter().chain(&near) {
        std::hint::black_box(evict.iter().fold(0u64, |a, &x| a.wrapping_add(x)));
        let start = Instant::now();
        std::hint::black_box(index.search(q, 50, None));
        times.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    let recall = |qs: &[Vec<f32>]| {
        let found: usize = qs
            .iter()
            .map(|q| {
                let exact: HashSet<i64> = index.search_exact(q, 10).iter().map(|h| h.key).collect();
                index.search(q, 10, None).iter().filter(|h| exact.contains(&h.key)).count()
            })
            .sum();
        found as f64 / (qs.len() * 10) as f64
    };
    println!(
        "{n} points ({}), common weight {common_weight}, {} MB read between searches, {} searches: p50 {:.3} ms, p95 {:.3} ms; recall@10 near {:.4}, random {:.4}",
        index.search_path(),
        evict.len() * 8 / (1024 * 1024),
        times.len(),
        times[times.len() / 2],
        times[times.len() * 95 / 100],
        recall(&near),
        recall(&random)
    );
}
