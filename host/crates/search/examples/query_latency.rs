//! Query latency of semantic and hybrid search, and ANN recall, at a given
//! collection size.
//!
//! `query_latency MODEL_DIR SOURCE_DIR [SIZE ...]` (sizes default to 10000
//! and 100000). For each size it builds an on-disk store of SIZE chunks
//! (line chunks of SOURCE_DIR, repeated under `copyN/` with a distinguishing
//! line until SIZE is reached, so lexical search works on real code text),
//! gives every chunk a synthetic unit vector (clustered: each copy of a base
//! chunk lies near the base chunk's random direction, like near-duplicate
//! code does), then with the real model measures, over the queries below:
//!
//! - `embed_ms`: embedding the query alone;
//! - `semantic_ms` / `hybrid_ms`: [`code_intel_search::hybrid::search`] end
//!   to end in `semantic` and `hybrid` mode (status check, query embedding,
//!   map and forest search, lexical arm, fusion, chunk locations);
//! - `recall_at_10`: the vector index's answer against exact search, for
//!   queries near stored points and for random directions.
//!
//! Prints one JSON object per size on stdout. Only timings of warm
//! processes: the index is built (`VectorSearch::sync`) before timing.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use code_intel_core::ChunkedFile;
use code_intel_embed::{Encoder, EncoderOptions, ModelHandle, ModelSource, ResolvedModel};
use code_intel_search::hybrid::{Mode, SearchRequest, search};
use code_intel_search::lexical::{self, LexicalQuery};
use code_intel_search::semantic::{Collection, Filters, VectorSearch};
use code_intel_store::{FileRecord, Store, content_hash};
use code_intel_vector::VectorIndex;

const QUERIES: &[&str] = &[
    "where are chunks written to the database",
    "parse the command line arguments",
    "nearest neighbour search over embeddings",
    "load the embedding model from a folder",
    "how is a plugin sandboxed",
    "full text search ranking",
    "session write gate evidence check",
    "walk the repository and skip ignored files",
    "tokenize text into word pieces",
    "save a snapshot of the vector index",
    "MCP tool that finds definitions",
    "cross-file links between routes and controllers",
    "progress notifications while indexing",
    "retry when the database is locked",
    "compute the SHA-256 fingerprint of a file",
    "format search results as JSON",
    "migrations of the sqlite schema",
    "cosine similarity of two vectors",
    "start the server on stdio",
    "count tokens of a chunk",
];

/// Timed passes over [`QUERIES`] (after one warm-up pass).
const PASSES: usize = 3;

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "target" || name == "node_modules" {
            continue;
        }
        if path.is_dir() {
            collect(&path, out);
        } else if ["rs", "py", "php", "md"].iter().any(|e| name.ends_with(&format!(".{e}"))) {
            out.push(path);
        }
    }
}

/// xorshift64*: deterministic noise without a dependency.
struct Rng(u64);

impl Rng {
    fn next_f32(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        // Uniform in [-1, 1); the sum of three is close enough to a normal.
        #[allow(clippy::cast_precision_loss)]
        let u = (x >> 40) as f32 / (1u64 << 23) as f32 - 1.0;
        u
    }

    fn gaussian(&mut self) -> f32 {
        (self.next_f32() + self.next_f32() + self.next_f32()) * 0.577
    }

    fn unit(&mut self, dim: usize) -> Vec<f32> {
        let mut v: Vec<f32> = (0..dim).map(|_| self.gaussian()).collect();
        code_intel_embed::normalize(&mut v);
        v
    }

    fn near(&mut self, base: &[f32], spread: f32) -> Vec<f32> {
        #[allow(clippy::cast_precision_loss)]
        let scale = spread / (base.len() as f32).sqrt();
        let mut v: Vec<f32> = base.iter().map(|x| x + self.gaussian() * scale).collect();
        code_intel_embed::normalize(&mut v);
        v
    }
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn summary(mut ms: Vec<f64>) -> serde_json::Value {
    if ms.is_empty() {
        return serde_json::json!({ "n": 0 });
    }
    ms.sort_by(f64::total_cmp);
    serde_json::json!({ "p50": pct(&ms, 50.0), "p95": pct(&ms, 95.0), "n": ms.len() })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[allow(clippy::too_many_lines)]
fn run(encoder: &Arc<Encoder>, base: &[(String, ChunkedFile)], size: usize) -> serde_json::Value {
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut store = Store::open(&tmp.path().join("index.db")).expect("store opens");
    let dim = encoder.dim();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ size as u64);
    let base_chunks: usize = base.iter().map(|(_, f)| f.chunks.len()).sum();
    // `QUERY_LATENCY_COMMON=W` gives every vector a common direction of
    // weight W (1.5 makes unrelated points' cosines ~0.7, like
    // multilingual-e5's); also measured then: queries leaning on it.
    let common_weight: f32 = std::env::var("QUERY_LATENCY_COMMON").ok().and_then(|w| w.parse().ok()).unwrap_or(0.0);
    let common = rng.unit(dim);
    let lean = |v: Vec<f32>| -> Vec<f32> {
        if common_weight == 0.0 {
            return v;
        }
        let mut v: Vec<f32> = v.iter().zip(&common).map(|(x, c)| x + common_weight * c).collect();
        code_intel_embed::normalize(&mut v);
        v
    };
    let mut base_vectors: Vec<Vec<f32>> = (0..base_chunks).map(|_| lean(rng.unit(dim))).collect();
    let mut vectors: Vec<(String, Vec<f32>)> = Vec::with_capacity(size);
    let mut points: Vec<Vec<f32>> = Vec::with_capacity(size);

    let started = Instant::now();
    let mut copy = 0usize;
    'fill: loop {
        let mut files = Vec::new();
        let mut b = 0usize;
        for (path, chunked) in base {
            let mut chunked = chunked.clone();
            for c in &mut chunked.chunks {
                if copy > 0 {
                    c.content.push_str(&format!("\n// copy {copy}\n"));
                }
                let v = if copy == 0 { base_vectors[b].clone() } else { rng.near(&base_vectors[b], 0.6) };
                b += 1;
                vectors.push((content_hash(&c.content), v.clone()));
                points.push(v);
            }
            let path = if copy == 0 { path.clone() } else { format!("copy{copy}/{path}") };
            files.push((FileRecord { sha256: format!("{copy}-{path}"), path, size: 1, mtime_ns: 1 }, chunked));
            if vectors.len() >= size {
                break;
            }
        }
        store
            .write(|w| {
                for (record, chunked) in &files {
                    w.replace_file(record, chunked, 1)?;
                }
                Ok::<_, code_intel_store::StoreError>(())
            })
            .expect("chunks stored");
        copy += 1;
        if vectors.len() >= size {
            break 'fill;
        }
    }
    base_vectors.clear();
    let key = &encoder.info().key;
    let model = store.write(|w| w.ensure_embedding_model(&key.name, &key.revision, dim)).expect("model row");
    for group in vectors.chunks(10_000) {
        let rows: Vec<(&str, &[f32])> = group.iter().map(|(h, v)| (h.as_str(), v.as_slice())).collect();
        store.write(|w| w.put_embeddings(model.id, &rows)).expect("vectors stored");
    }
    let store_secs = started.elapsed().as_secs_f64();
    let chunks = store.chunk_count().expect("count");

    let vs = VectorSearch::new(ModelHandle::ready(Arc::clone(encoder)), Some(tmp.path().join("vectors")));
    // The build (the vector index and every chunk's density), with semantic
    // queries sent from another connection meanwhile, as a server answers
    // them during its first sync: how long does a query wait?
    let done = std::sync::atomic::AtomicBool::new(false);
    let started = Instant::now();
    let (build_secs, during_sync) = std::thread::scope(|s| {
        let asking = s.spawn(|| {
            let reader = Store::open(&tmp.path().join("index.db")).expect("second connection");
            let mut times = Vec::new();
            let mut request = SearchRequest::new(QUERIES[0]);
            request.mode = Some(Mode::Semantic);
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                request.query = QUERIES[times.len() % QUERIES.len()].to_string();
                let t = Instant::now();
                let _ = search(&reader, Some(&vs), &request).expect("search during the sync");
                times.push(ms(t.elapsed()));
            }
            times
        });
        vs.sync(&store).expect("vector index built");
        let build_secs = started.elapsed().as_secs_f64();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        (build_secs, asking.join().expect("asking thread"))
    });
    let first_during_sync = during_sync.first().copied().unwrap_or(0.0);
    let longest_during_sync = during_sync.iter().skip(1).copied().fold(0.0, f64::max);

    // Warm-up, then timed passes.
    let mut embed = Vec::new();
    let mut semantic = Vec::new();
    let mut hybrid = Vec::new();
    let mut hits = 0usize;
    let (mut status_t, mut forest_t, mut lexical_t) = (Vec::new(), Vec::new(), Vec::new());
    for pass in 0..=PASSES {
        for q in QUERIES {
            let t = Instant::now();
            let _ = encoder.embed_query(q).expect("query embeds");
            let e = ms(t.elapsed());
            let mut request = SearchRequest::new(*q);
            request.collection = Collection::Auto;
            request.mode = Some(Mode::Semantic);
            let t = Instant::now();
            let s = search(&store, Some(&vs), &request).expect("semantic search");
            let sm = ms(t.elapsed());
            request.mode = Some(Mode::Hybrid);
            let t = Instant::now();
            let h = search(&store, Some(&vs), &request).expect("hybrid search");
            let hm = ms(t.elapsed());
            assert_eq!(s.mode, Mode::Semantic, "{:?}", s.message);
            // The parts: status check, forest search of a ready vector,
            // lexical arm.
            let qv = encoder.embed_query(q).expect("query embeds");
            let t = Instant::now();
            let _ = vs.status(&store, Duration::ZERO).expect("status");
            let st = ms(t.elapsed());
            let t = Instant::now();
            let _ = vs.search_forest(&store, encoder, &qv, 0.0, 50, &Filters::default()).expect("forest search");
            let ft = ms(t.elapsed());
            let t = Instant::now();
            let _ = lexical::search(&store, &LexicalQuery { text: q, path_glob: None, kinds: Vec::new(), limit: 50 }).expect("lexical");
            let lt = ms(t.elapsed());
            if pass > 0 {
                status_t.push(st);
                forest_t.push(ft);
                lexical_t.push(lt);
                embed.push(e);
                semantic.push(sm);
                hybrid.push(hm);
                hits += h.hits.len();
            }
        }
    }

    // Recall@10 of the index the product uses (exact, quantized scan or
    // HNSW by size; `QUERY_LATENCY_GRAPH_ABOVE=N` forces the graph above N
    // points to compare) against exact search, on the same points.
    let mut index = match std::env::var("QUERY_LATENCY_GRAPH_ABOVE").ok().and_then(|n| n.parse().ok()) {
        Some(n) => VectorIndex::new(dim).with_graph_threshold(n),
        None => VectorIndex::new(dim),
    };
    for (i, v) in points.iter().enumerate() {
        index.insert(i64::try_from(i).unwrap_or(i64::MAX), i as u64, v);
    }
    let started = Instant::now();
    index.refresh();
    let recall_build_secs = started.elapsed().as_secs_f64();
    let recall = |queries: &[Vec<f32>]| -> (f64, serde_json::Value) {
        let mut found = 0usize;
        let mut times = Vec::new();
        for q in queries {
            let exact: std::collections::HashSet<i64> = index.search_exact(q, 10).iter().map(|h| h.key).collect();
            let t = Instant::now();
            let got = index.search(q, 10, None);
            times.push(ms(t.elapsed()));
            found += got.iter().filter(|h| exact.contains(&h.key)).count();
        }
        #[allow(clippy::cast_precision_loss)]
        let r = found as f64 / (queries.len() * 10) as f64;
        (r, summary(times))
    };
    let near: Vec<Vec<f32>> = (0..200).map(|i| rng.near(&points[(i * 7919) % points.len()], 0.8)).collect();
    let random: Vec<Vec<f32>> = (0..200).map(|_| rng.unit(dim)).collect();
    let (recall_near, search_near) = recall(&near);
    let (recall_random, _) = recall(&random);
    let leaning: Vec<Vec<f32>> = (0..200).map(|_| lean(rng.unit(dim))).collect();
    let (recall_leaning, _) = recall(&leaning);

    serde_json::json!({
        "chunks": chunks,
        "vectors": points.len(),
        "search_path": index.search_path(),
        "store_build_s": store_secs,
        "vector_index_build_s": build_secs,
        // The first query also waits for the collections to load; the
        // longest of the others is the wait a density step causes.
        "semantic_during_build_ms": summary(during_sync.clone()),
        "first_query_during_build_ms": first_during_sync,
        "longest_later_query_during_build_ms": longest_during_sync,
        "embed_ms": summary(embed),
        "semantic_ms": summary(semantic),
        "hybrid_ms": summary(hybrid),
        "status_ms": summary(status_t),
        "forest_search_ms": summary(forest_t),
        "lexical_ms": summary(lexical_t),
        "hybrid_hits_per_query": hits as f64 / (QUERIES.len() * PASSES) as f64,
        "index_search_ms": search_near,
        "index_build_s": recall_build_secs,
        "recall_at_10_near": recall_near,
        "common_direction_weight": common_weight,
        "recall_at_10_leaning": recall_leaning,
        "recall_at_10_random": recall_random,
    })
}

fn main() {
    // SAFETY: first thing in `main`: no other thread exists yet. As in
    // `code-intel`, so the query's embedding runs as it does there.
    #[allow(unsafe_code)]
    unsafe {
        code_intel_embed::threads::run_elementwise_on_callers();
    }
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: query_latency MODEL_DIR SOURCE_DIR [SIZE ...]");
        std::process::exit(2);
    }
    let model = ResolvedModel { name: "bench".into(), dir: PathBuf::from(&args[1]), source: ModelSource::LocalPath };
    let encoder = Arc::new(Encoder::load(&model, &EncoderOptions::default()).expect("model loads"));
    let root = PathBuf::from(&args[2]);
    let mut files = Vec::new();
    collect(&root, &mut files);
    files.sort();
    let base: Vec<(String, ChunkedFile)> = files
        .iter()
        .filter_map(|f| {
            let content = std::fs::read_to_string(f).ok()?;
            let rel = f.strip_prefix(&root).unwrap_or(f).to_string_lossy().into_owned();
            let chunks = code_intel_core::line_chunks(&rel, &content);
            Some((rel, ChunkedFile { chunks, chunker: code_intel_core::chunk::FALLBACK_CHUNKER.to_string(), declined: Vec::new(), failures: Vec::new() }))
        })
        .filter(|(_, c)| !c.chunks.is_empty())
        .collect();
    let sizes: Vec<usize> = if args.len() > 3 { args[3..].iter().filter_map(|s| s.parse().ok()).collect() } else { vec![10_000, 100_000] };
    for size in sizes {
        let mut report = run(&encoder, &base, size);
        report["size"] = size.into();
        println!("{report}");
    }
}
