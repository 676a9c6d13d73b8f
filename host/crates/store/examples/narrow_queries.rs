//! All-words full-text queries ranked at once when the index's term
//! statistics show they are narrow ([`TextQuery::most_matches`]) against
//! the same queries whose matches are first read to count them: time per
//! query, hits checked identical.
//!
//! ```text
//! cargo run --release -p code-intel-store --example narrow_queries -- INDEX_DB REQUESTS_FILE
//! ```
//!
//! `INDEX_DB` is a `.code-intel/index.db` (a copy: it is opened for
//! writing); `REQUESTS_FILE` has one request per line (for instance the
//! `query` fields of `bench/retrieval/queries/*.jsonl`). Each query runs
//! five times each way, alternating; means and medians over the queries.

use code_intel_store::queries::MAX_SCORED;
use code_intel_store::{Store, TextQuery};
use std::time::Instant;

const RUNS: u32 = 5;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: narrow_queries INDEX_DB REQUESTS_FILE (one request per line)");
        std::process::exit(2);
    }
    let store = Store::open_existing(std::path::Path::new(&args[1])).expect("index opens");
    let requests = std::fs::read_to_string(&args[2]).expect("requests file reads");
    let (mut counted, mut bounded, mut narrow) = (Vec::new(), Vec::new(), 0usize);
    for request in requests.lines().filter(|l| !l.trim().is_empty()) {
        let Some(query) = store.text_query(request, false).expect("query builds") else { continue };
        let unbounded = TextQuery { most_matches: None, ..query.clone() };
        narrow += usize::from(query.known_narrow(MAX_SCORED));
        let search = |q: &TextQuery| store.fts_search(q, None, &[], &|_| true, 50).expect("search runs");
        let _ = search(&query);
        let (mut a, mut b) = (0.0, 0.0);
        for _ in 0..RUNS {
            let t = Instant::now();
            let x = search(&unbounded);
            a += t.elapsed().as_secs_f64();
            let t = Instant::now();
            let y = search(&query);
            b += t.elapsed().as_secs_f64();
            let ids = |hits: &[code_intel_store::FtsHit]| hits.iter().map(|h| h.rowid).collect::<Vec<_>>();
            assert_eq!(ids(&x), ids(&y), "different hits for {request:?}");
        }
        counted.push(a * 1000.0 / f64::from(RUNS));
        bounded.push(b * 1000.0 / f64::from(RUNS));
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    let (ma, mb) = (mean(&counted), mean(&bounded));
    println!(
        "{} queries, {narrow} known narrow; counted first: mean {ma:.3} ms, p50 {:.3} ms; ranked at once when narrow: mean {mb:.3} ms, p50 {:.3} ms",
        counted.len(),
        median(&mut counted),
        median(&mut bounded)
    );
}
