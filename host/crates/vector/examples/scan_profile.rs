//! Times `VectorIndex::search` on N random unit vectors (default 100,000 of
//! 384 components), k = 50 as hybrid search asks: `scan_profile [N] [QUERIES]`.
use std::time::Instant;

use code_intel_vector::VectorIndex;

fn unit(state: &mut u64, dim: usize) -> Vec<f32> {
    let mut v: Vec<f32> = (0..dim)
        .map(|_| {
            *state ^= *state << 13;
            *state ^= *state >> 7;
            *state ^= *state << 17;
            (*state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect();
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= n);
    v
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let (n, queries) = (args.first().copied().unwrap_or(100_000), args.get(1).copied().unwrap_or(500));
    let dim = 384;
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut index = VectorIndex::new(dim);
    for i in 0..n {
        index.insert(i64::try_from(i).unwrap_or(i64::MAX), i as u64, &unit(&mut state, dim));
    }
    index.refresh();
    let qs: Vec<Vec<f32>> = (0..queries).map(|_| unit(&mut state, dim)).collect();
    let mut times: Vec<f64> = Vec::with_capacity(queries);
    for q in &qs {
        let start = Instant::now();
        std::hint::black_box(index.search(q, 50, None));
        times.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    println!("{} points ({}), {queries} searches: p50 {:.3} ms, p95 {:.3} ms", n, index.search_path(), times[queries / 2], times[queries * 95 / 100]);
}
