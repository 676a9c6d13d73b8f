//! The keyword arm alone on a store that is already published (e.g. by
//! `org_search_scale` on a server started with `scripts/pg start`): each
//! request of a JSON list three times, one line per request (its three
//! times), then the median and the slowest; with `ROWS_OUT=<file>`, each
//! request's hits as found (repository, path, line, score), to compare
//! two builds' rankings.
//!
//!   cargo run --release --example keyword_arm_latency -- POSTGRES_URL REQUESTS.json

use std::time::Instant;

use code_intel_shared::{FullTextQuery, Scope, SharedStore};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, requests] = args.as_slice() else {
        eprintln!("usage: keyword_arm_latency POSTGRES_URL REQUESTS.json (a JSON list of strings)");
        std::process::exit(2);
    };
    let requests: Vec<String> =
        serde_json::from_str(&std::fs::read_to_string(requests).expect("the requests file")).expect("a JSON list of strings");
    let store = SharedStore::connect(url).expect("the store");
    let everything = Scope::everything();
    let mut all = Vec::new();
    let mut found = Vec::new();
    for q in &requests {
        let text = FullTextQuery::new(q);
        let mut ms = Vec::new();
        let mut hits = Vec::new();
        for _ in 0..3 {
            let t = Instant::now();
            let arm = store.keyword_arm(&text, &everything).expect("the keyword arm");
            ms.push(t.elapsed().as_secs_f64() * 1000.0);
            hits = arm
                .rows
                .iter()
                .map(|h| format!("{} {} {} {:.4}", h.repository, h.path, h.start_line, h.keyword_score.unwrap_or(0.0)))
                .collect::<Vec<_>>();
        }
        println!("{:6.1} {:6.1} {:6.1}  {}", ms[0], ms[1], ms[2], q.chars().take(60).collect::<String>());
        all.extend(ms);
        found.push(hits);
    }
    all.sort_by(f64::total_cmp);
    let n = all.len();
    if n > 0 {
        let median = if n % 2 == 0 { (all[n / 2 - 1] + all[n / 2]) / 2.0 } else { all[n / 2] };
        println!("{n} keyword arms: p50 {median:.1} ms, max {:.1} ms", all[n - 1]);
    }
    if let Ok(file) = std::env::var("ROWS_OUT") {
        std::fs::write(file, serde_json::to_string(&found).expect("JSON")).expect("ROWS_OUT written");
    }
}
