//! Organisation-wide search at scale: publishes repositories' chunks (JSON
//! lines of path, chunk_id, kind, name, qualified_name, start_line,
//! end_line, content_hash, content and aliases, e.g. read from their local indexes) to a
//! shared store, with vectors from a deterministic hashing stand-in encoder
//! (each word of a text, identifiers split as for full text, adds ±1 to one
//! of 384 dimensions, then L2-normalised: real texts and a real index, no
//! model), then times `SharedStore::search` over all of them: each query
//! three times, its vector from the same stand-in (so embedding the query
//! costs nothing here; with a model, add its query embedding time). Then
//! the same queries limited to the largest repository (`--repository`,
//! whose vector arm scans that repository's texts exactly) and to the
//! smallest. Last, the way code-intel runs a search: the keyword arm on a
//! second connection, followed there by the read of the published aliases
//! that code-intel matches the request against, while the query is embedded (here a pause of
//! `CODE_INTEL_SCALE_EMBED_MS`, 15 ms by default, about all-MiniLM-L6-v2's
//! query embedding), then the vector arm; timed from the end of that pause.
//!
//!   cargo run --release --example org_search_scale -- POSTGRES_URL NAME=CHUNKS.jsonl... [-- QUERY...]

use std::collections::HashSet;
use std::io::BufRead;
use std::time::Instant;

use code_intel_shared::{FullTextQuery, RepoChunk, Scope, SearchOutcome, SharedStore, chunk_words};

const DIM: usize = 384;
const MODEL: &str = "standin-hashing-384@bench";

fn hash_vector(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; DIM];
    let mut words = String::new();
    code_intel_store::tokenize::expand_identifiers(text, &mut words);
    for word in words.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()) {
        let word = word.to_lowercase();
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in word.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x100_0000_01b3);
        }
        v[(h % DIM as u64) as usize] += if h >> 63 == 0 { 1.0 } else { -1.0 };
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm == 0.0 {
        v[0] = 1.0;
    } else {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let url = &args[0];
    let split = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let mut queries: Vec<String> = args.get(split + 1..).unwrap_or(&[]).to_vec();
    if queries.is_empty() {
        queries = [
            "where are cookies signed",
            "RateLimiter",
            "how do I render a template with context",
            "unicode slug for article titles",
            "playlist songs shuffle",
            "websocket close code",
            "eager load a relationship with a subquery",
            "connection pool recycle stale connections",
            "queue a job to run later",
            "page revision history",
        ]
        .map(String::from)
        .to_vec();
    }
    let store = SharedStore::connect(url).expect("the store");
    let p50 = |ms: &mut Vec<f64>| {
        ms.sort_by(f64::total_cmp);
        let n = ms.len();
        (if n % 2 == 0 { (ms[n / 2 - 1] + ms[n / 2]) / 2.0 } else { ms[n / 2] }, ms[n - 1])
    };
    let model = store.model(MODEL, DIM).expect("the model row");
    let mut total = 0usize;
    let mut sizes: Vec<(usize, String)> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let started = Instant::now();
    for spec in &args[1..split] {
        let (name, file) = spec.split_once('=').expect("NAME=FILE");
        let mut chunks = Vec::new();
        let mut vectors = Vec::new();
        for line in std::io::BufReader::new(std::fs::File::open(file).unwrap()).lines() {
            let row: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
            let s = |k: &str| row[k].as_str().unwrap_or("").to_string();
            let content = s("content");
            let hash = s("content_hash");
            if seen.insert(hash.clone()) {
                vectors.push((hash.clone(), hash_vector(&content)));
            }
            chunks.push(RepoChunk {
                words: chunk_words(&format!("{} {} {} {}", s("path"), s("name"), s("qualified_name"), content)),
                path: s("path"),
                chunk_id: s("chunk_id"),
                kind: s("kind"),
                name: s("name"),
                start_line: row["start_line"].as_i64().unwrap_or(0) as i32,
                end_line: row["end_line"].as_i64().unwrap_or(0) as i32,
                content_hash: hash,
                aliases: row["aliases"]
                    .as_array()
                    .map_or_else(Vec::new, |a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()),
            });
        }
        let t = Instant::now();
        let published = store.publish_repository(name, &chunks).unwrap();
        let new = store.publish_vectors(model, &vectors).unwrap();
        total += chunks.len();
        sizes.push((chunks.len(), name.to_string()));
        println!("published {name}: {published} chunks, {new} new vectors ({:.1} s)", t.elapsed().as_secs_f64());
    }
    println!("{total} chunks, {} distinct texts, published in {:.0} s", seen.len(), started.elapsed().as_secs_f64());
    let mut ms = Vec::new();
    let everything = Scope::everything();
    for q in &queries {
        let v = hash_vector(q);
        for _ in 0..3 {
            let t = Instant::now();
            let outcome = store.search(&FullTextQuery::new(q), Some((MODEL, &v)), &everything, 10).unwrap();
            let elapsed = t.elapsed().as_secs_f64() * 1000.0;
            ms.push(elapsed);
            let top = outcome.hits.first();
            println!(
                "{q:?}: {elapsed:.1} ms over {} repositories (vectors {}); top: {} {}",
                outcome.repositories,
                outcome.vector_status,
                top.map_or("-", |h| h.repository.as_str()),
                top.map_or("-", |h| h.path.as_str())
            );
        }
    }
    let (median, max) = p50(&mut ms);
    println!("{} searches: p50 {median:.1} ms, max {max:.1} ms (the store's part: both arms and the fusion)", ms.len());
    let embed_ms: u64 = std::env::var("CODE_INTEL_SCALE_EMBED_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(15);
    let spare = store.spare().expect("a second connection");
    let aliases = store.aliases(&everything).unwrap().len();
    let no_aliases = aliases == 0;
    println!("{aliases} aliases published");
    let mut beside = Vec::new();
    for q in &queries {
        let v = hash_vector(q);
        let text = FullTextQuery::new(q);
        for _ in 0..3 {
            let (sequential, overlapped) = std::thread::scope(|s| {
                let keyword = s.spawn(|| {
                    let arm = spare.keyword_arm(&text, &everything).unwrap();
                    assert!(!spare.aliases(&everything).unwrap().is_empty() || no_aliases);
                    arm
                });
                std::thread::sleep(std::time::Duration::from_millis(embed_ms));
                let t = Instant::now();
                let vector = store.vector_arm(Some((MODEL, &v)), &everything).unwrap();
                let outcome = SearchOutcome::fused(keyword.join().unwrap(), vector, 10);
                let elapsed = t.elapsed().as_secs_f64() * 1000.0;
                (store.search(&text, Some((MODEL, &v)), &everything, 10).unwrap(), (elapsed, outcome))
            });
            let (elapsed, outcome) = overlapped;
            let paths = |o: &SearchOutcome| o.hits.iter().map(|h| (h.repository.clone(), h.path.clone())).collect::<Vec<_>>();
            assert_eq!(paths(&outcome), paths(&sequential), "{q:?}: the arms side by side find what they find in turn");
            beside.push((code_intel_store::tokenize::has_cjk(q), elapsed));
        }
    }
    let (median, max) = p50(&mut beside.iter().map(|(_, ms)| *ms).collect());
    println!(
        "{} searches, the keyword arm beside an embedding of {embed_ms} ms: p50 {median:.1} ms, max {max:.1} ms after it",
        beside.len()
    );
    // Requests in Japanese have fewer, rarer clauses than those in English
    // prose: each language's own median.
    for (cjk, language) in [(false, "without"), (true, "with")] {
        let mut ms: Vec<f64> = beside.iter().filter(|(c, _)| *c == cjk).map(|(_, ms)| *ms).collect();
        if !ms.is_empty() && ms.len() < beside.len() {
            let (median, max) = p50(&mut ms);
            println!("  {} of them {language} CJK text: p50 {median:.1} ms, max {max:.1} ms", ms.len());
        }
    }
    sizes.sort();
    let mut ends = vec![sizes.last().cloned(), sizes.first().cloned()];
    ends.dedup();
    for (chunks, name) in ends.into_iter().flatten() {
        let scope = store.scope(&[name.clone()]).expect("a published repository");
        let mut ms = Vec::new();
        for q in &queries {
            let v = hash_vector(q);
            for _ in 0..3 {
                let t = Instant::now();
                let outcome = store.search(&FullTextQuery::new(q), Some((MODEL, &v)), &scope, 10).unwrap();
                ms.push(t.elapsed().as_secs_f64() * 1000.0);
                assert!(outcome.hits.iter().all(|h| h.repository == name), "a hit outside {name}");
            }
        }
        let (median, max) = p50(&mut ms);
        println!("{} searches limited to {name} ({chunks} chunks): p50 {median:.1} ms, max {max:.1} ms", ms.len());
    }
}
