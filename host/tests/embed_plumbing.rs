//! Embedding plumbing with a tiny random-weight BERT built by the test:
//! loading, pooling and padding, e5 prefixes, broken models, the pipeline's
//! caching by content hash (edits, renames, model changes, resumption), and
//! the map short-circuit. The weights are random, so nothing here judges
//! meaning: that is `embed_real_model.rs`.

mod embed_support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use code_intel_core::{Chunk, ChunkedFile, line_chunks};
use code_intel_embed::pipeline::embed_pending;
use code_intel_embed::{EmbedError, Encoder, EncoderOptions, ModelHandle, ModelSource, ResolvedModel, Role};
use code_intel_search::hybrid::{Mode, SearchRequest, search};
use code_intel_search::semantic::{Collection, VectorSearch};
use code_intel_store::embeddings::MapEntry;
use code_intel_store::{FileRecord, Store};
use embed_support::write_tiny_model;

fn resolved(dir: &Path, name: &str) -> ResolvedModel {
    ResolvedModel { name: name.to_string(), dir: dir.to_path_buf(), source: ModelSource::LocalPath }
}

fn tiny(dir: &Path, name: &str, seed: u64) -> Encoder {
    write_tiny_model(dir, seed);
    Encoder::load(&resolved(dir, name), &EncoderOptions::default()).expect("tiny model loads")
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn vectors_are_unit_length_and_independent_of_batch_padding() {
    let tmp = tempfile::tempdir().unwrap();
    let encoder = tiny(&tmp.path().join("tiny"), "tiny", 1);
    assert_eq!(encoder.dim(), embed_support::HIDDEN);
    let short = "user login";
    let long = "how is the order total computed where do users log in the warehouse stock report";
    let alone = encoder.embed(&[short], Role::Passage, &|_, _| {}).unwrap();
    let batch = encoder.embed(&[long, short, "tax", long], Role::Passage, &|_, _| {}).unwrap();
    assert_eq!(batch.len(), 4);
    for v in &batch {
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
    }
    // Padding next to a longer text must not change a vector (mask + mean pooling).
    let diff: f32 = alone[0].iter().zip(&batch[1]).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
    assert!(diff < 1e-4, "padding changed the vector by {diff}");
    assert!((cosine(&batch[0], &batch[3]) - 1.0).abs() < 1e-5);
    assert!(cosine(&batch[0], &batch[1]) < 0.999);

    // Progress reaches the total; an empty input is fine.
    let seen = std::sync::Mutex::new(Vec::new());
    encoder.embed(&[short, long, "tax"], Role::Passage, &|d, t| seen.lock().unwrap().push((d, t))).unwrap();
    assert_eq!(seen.lock().unwrap().last(), Some(&(3, 3)));
    assert!(encoder.embed(&[], Role::Passage, &|_, _| {}).unwrap().is_empty());

    // Texts past the window are truncated, not refused.
    let huge = "user login ".repeat(5000);
    assert_eq!(encoder.embed(&[huge.as_str()], Role::Passage, &|_, _| {}).unwrap().len(), 1);
    assert!(encoder.count_tokens(&huge, Role::Passage).unwrap() <= embed_support::MAX_POSITIONS);
}

#[test]
fn prompts_from_the_config_else_the_e5_name() {
    use code_intel_embed::PromptSource;
    let tmp = tempfile::tempdir().unwrap();
    let plain = tiny(&tmp.path().join("plain"), "org/tiny-bert", 2);
    assert_eq!(plain.info().prompts.from, PromptSource::None);
    let q = plain.embed(&["user login"], Role::Query, &|_, _| {}).unwrap();
    let p = plain.embed(&["user login"], Role::Passage, &|_, _| {}).unwrap();
    assert!((cosine(&q[0], &p[0]) - 1.0).abs() < 1e-5, "no prefixes: query and passage embed alike");

    // No config_sentence_transformers.json: the e5 name rule.
    let e5 = tiny(&tmp.path().join("e5"), "intfloat/multilingual-e5-tiny", 2);
    assert_eq!((e5.info().prompts.query.as_str(), e5.info().prompts.from), ("query: ", PromptSource::E5Name));
    let q = e5.embed(&["user login"], Role::Query, &|_, _| {}).unwrap();
    let p = e5.embed(&["user login"], Role::Passage, &|_, _| {}).unwrap();
    assert!(cosine(&q[0], &p[0]) < 0.9999, "e5: `query: ` and `passage: ` prefixes differ");
    assert_eq!(e5.count_tokens("user login", Role::Query).unwrap(), 2 + 2 + 2, "[CLS] query : user login [SEP]");

    // The config's prompts, whatever the folder is called; the same
    // vectors as the name rule gives for the same prompts.
    let dir = tmp.path().join("renamed");
    write_tiny_model(&dir, 2);
    std::fs::write(dir.join("config_sentence_transformers.json"), r#"{"prompts": {"query": "query: ", "passage": "passage: "}}"#).unwrap();
    let configured = Encoder::load(&resolved(&dir, "my-model"), &EncoderOptions::default()).unwrap();
    assert_eq!(configured.info().prompts.from, PromptSource::Config);
    let q2 = configured.embed(&["user login"], Role::Query, &|_, _| {}).unwrap();
    assert!((cosine(&q[0], &q2[0]) - 1.0).abs() < 1e-5, "the configured prompt is applied");
}

#[test]
fn broken_models_are_clear_errors_not_crashes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    write_tiny_model(&dir, 3);

    let weights = std::fs::read(dir.join("model.safetensors")).unwrap();
    std::fs::write(dir.join("model.safetensors"), &weights[..weights.len() / 2]).unwrap();
    let err = Encoder::load(&resolved(&dir, "m"), &EncoderOptions::default()).err().unwrap();
    assert!(matches!(err, EmbedError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("model.safetensors"), "{err}");

    write_tiny_model(&dir, 3);
    let config = std::fs::read_to_string(dir.join("config.json")).unwrap();
    std::fs::write(dir.join("config.json"), config.replace("\"bert\"", "\"xlm-roberta\"")).unwrap();
    let err = Encoder::load(&resolved(&dir, "m"), &EncoderOptions::default()).err().unwrap();
    assert!(matches!(err, EmbedError::Incompatible { .. }) && err.to_string().contains("xlm-roberta"), "{err}");

    std::fs::write(dir.join("config.json"), "{ not json").unwrap();
    let err = Encoder::load(&resolved(&dir, "m"), &EncoderOptions::default()).err().unwrap();
    assert!(err.to_string().contains("config.json"), "{err}");

    write_tiny_model(&dir, 3);
    std::fs::write(dir.join("tokenizer.json"), "[]").unwrap();
    let err = Encoder::load(&resolved(&dir, "m"), &EncoderOptions::default()).err().unwrap();
    assert!(err.to_string().contains("tokenizer.json"), "{err}");

    std::fs::remove_file(dir.join("tokenizer.json")).unwrap();
    let err = Encoder::load(&resolved(&dir, "m"), &EncoderOptions::default()).err().unwrap();
    assert!(matches!(err, EmbedError::Missing(..)) && err.to_string().contains("tokenizer.json"), "{err}");

    // A weight tensor with the wrong shape.
    write_tiny_model(&dir, 3);
    let config = std::fs::read_to_string(dir.join("config.json")).unwrap();
    std::fs::write(dir.join("config.json"), config.replace("\"intermediate_size\": 64", "\"intermediate_size\": 48")).unwrap();
    let err = Encoder::load(&resolved(&dir, "m"), &EncoderOptions::default()).err().unwrap();
    assert!(err.to_string().contains("does not fit config.json"), "{err}");
}

fn add_file(store: &mut Store, path: &str, chunks: Vec<Chunk>) {
    let chunked = ChunkedFile { chunks, chunker: "test".into(), ..Default::default() };
    let file = FileRecord { path: path.into(), sha256: path.into(), size: 1, mtime_ns: 0 };
    store.write(|w| w.replace_file(&file, &chunked, 0).map(drop)).unwrap();
}

fn function(id: &str, name: &str, body: &str, line: u32) -> Chunk {
    let mut c = line_chunks("x.py", body).remove(0);
    c.id = id.into();
    c.kind = "function".into();
    c.name = name.into();
    c.start_line = line;
    c.end_line = line + 2;
    c
}

fn app_chunks(total_body: &str) -> Vec<Chunk> {
    vec![
        function("login", "login", "def login(user, password): return user", 1),
        function("total", "compute_total", total_body, 5),
        function("stock", "reserve_stock", "def reserve_stock(): return stock", 9),
    ]
}

#[test]
fn pipeline_embeds_only_new_content_and_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let encoder = tiny(&tmp.path().join("tiny"), "tiny", 4);
    let mut store = Store::open(&tmp.path().join("index.db")).unwrap();
    add_file(&mut store, "app/a.py", app_chunks("def compute_total(order): return order.total"));
    add_file(&mut store, "app/b.py", line_chunks("app/b.py", "the monthly revenue report\nsend email\n"));

    let report = embed_pending(&mut store, &encoder, &|_| {}, None).unwrap();
    assert_eq!(report.embedded_chunks, 4);
    assert!(report.coverage.complete());
    assert_eq!(report.cached_chunks, 0);
    // The complete pass is remembered: the next one has nothing to look for.
    let model_id = store.embedding_model(&encoder.info().key.name, &encoder.info().key.revision).unwrap().unwrap().id;
    assert_eq!(store.embedded_through(model_id).unwrap(), Some(report.coverage));
    let again = embed_pending(&mut store, &encoder, &|_| {}, None).unwrap();
    assert_eq!((again.embedded_chunks, again.cached_chunks), (0, 4), "nothing new");

    // A one-line change: only that chunk's content is new.
    add_file(&mut store, "app/a.py", app_chunks("def compute_total(order): return order.total + tax"));
    assert_eq!(store.embedded_through(model_id).unwrap(), None, "a change voids the record");
    let report = embed_pending(&mut store, &encoder, &|_| {}, None).unwrap();
    assert_eq!(report.embedded_chunks, 1);
    assert_eq!(report.cached_chunks, 3);
    assert_eq!(report.pruned, 1, "the old content's vector is dropped");

    // A rename: same contents under a new path, nothing to embed.
    store.write(|w| w.delete_file("app/b.py").map(drop)).unwrap();
    add_file(&mut store, "lib/b.py", line_chunks("lib/b.py", "the monthly revenue report\nsend email\n"));
    assert_eq!(embed_pending(&mut store, &encoder, &|_| {}, None).unwrap().embedded_chunks, 0);

    // New model files: everything is embedded again under the new key.
    let other = tiny(&tmp.path().join("tiny"), "tiny", 5);
    assert_ne!(other.info().key, encoder.info().key);
    let report = embed_pending(&mut store, &other, &|_| {}, None).unwrap();
    assert_eq!(report.embedded_chunks, 4);

    // Cancelled before the first commit group: nothing lost, the next run finishes.
    let third = tiny(&tmp.path().join("tiny"), "tiny", 6);
    let cancel = AtomicBool::new(true);
    let report = embed_pending(&mut store, &third, &|_| {}, Some(&cancel)).unwrap();
    assert!(report.cancelled);
    assert_eq!(report.embedded_chunks, 0);
    cancel.store(false, Ordering::Relaxed);
    let report = embed_pending(&mut store, &third, &|_| {}, Some(&cancel)).unwrap();
    assert_eq!(report.embedded_chunks, 4);
    assert!(report.coverage.complete());
}

#[test]
fn killed_pipeline_resumes_from_committed_groups() {
    // Many distinct chunks, so the run spans several commit groups; a
    // progress callback that cancels midway stands in for a kill between
    // two commits.
    let tmp = tempfile::tempdir().unwrap();
    let encoder = tiny(&tmp.path().join("tiny"), "tiny", 7);
    let mut store = Store::open(&tmp.path().join("index.db")).unwrap();
    let words = embed_support::WORDS;
    let n = code_intel_embed::pipeline::COMMIT_EVERY * 2 + 10;
    let chunks: Vec<Chunk> = (0..n)
        .map(|i| function(&format!("f{i}"), &format!("f{i}"), &format!("{} {} {i}", words[i % 20], words[(i / 20) % 20]), 1))
        .collect();
    add_file(&mut store, "big.py", chunks);
    let cancel = AtomicBool::new(false);
    let report = embed_pending(
        &mut store,
        &encoder,
        &|p| {
            if p.done >= code_intel_embed::pipeline::COMMIT_EVERY {
                cancel.store(true, Ordering::Relaxed);
            }
        },
        Some(&cancel),
    )
    .unwrap();
    assert!(report.cancelled);
    assert_eq!(report.embedded_chunks, code_intel_embed::pipeline::COMMIT_EVERY, "one group committed");
    let report = embed_pending(&mut store, &encoder, &|_| {}, None).unwrap();
    assert_eq!(report.embedded_chunks, n - code_intel_embed::pipeline::COMMIT_EVERY, "the rest, and only the rest");
    assert!(report.coverage.complete());
}

#[test]
fn map_short_circuits_and_forest_honours_filters_and_deletions() {
    let tmp = tempfile::tempdir().unwrap();
    let encoder = Arc::new(tiny(&tmp.path().join("tiny"), "tiny", 8));
    let mut store = Store::open(&tmp.path().join("index.db")).unwrap();
    add_file(&mut store, "app/a.py", app_chunks("def compute_total(order): return order.total"));
    add_file(&mut store, "lib/c.py", vec![function("send", "send_email", "def send_email(user): send email", 1)]);
    embed_pending(&mut store, &encoder, &|_| {}, None).unwrap();
    let vectors = VectorSearch::new(ModelHandle::ready(Arc::clone(&encoder)), Some(tmp.path().join("vectors")));

    let mut request = SearchRequest::new("where do users log in");
    request.mode = Some(Mode::Semantic);
    let before = search(&store, Some(&vectors), &request).unwrap();
    assert!(!before.short_circuit);
    assert_eq!(before.vector_search, "ready");

    // An agreement with the same words answers at once from the map.
    let entry = MapEntry {
        key: "agreement-1".into(),
        text: "where do users log in".into(),
        symbols: vec!["login".into()],
        files: vec!["app/a.py".into()],
        metadata: serde_json::json!({"session": "s1"}),
    };
    vectors.add_map_entry(&mut store, &entry).unwrap();
    let after = search(&store, Some(&vectors), &request).unwrap();
    assert!(after.short_circuit, "{after:?}");
    assert_eq!(after.map_hits[0].symbols, vec!["login".to_string()]);
    assert!(after.map_hits[0].score > 0.99);
    assert!(after.hits.is_empty(), "the forest is skipped");
    // Forest only: no short-circuit.
    request.collection = Collection::Forest;
    let forest = search(&store, Some(&vectors), &request).unwrap();
    assert!(!forest.short_circuit);

    // Filters apply before top-k: a path glob and a kind.
    let mut filtered = SearchRequest::new("user login password email");
    filtered.mode = Some(Mode::Semantic);
    filtered.collection = Collection::Forest;
    filtered.filters.path_glob = Some("lib/**".into());
    let res = search(&store, Some(&vectors), &filtered).unwrap();
    assert!(res.hits.iter().all(|h| h.file.starts_with("lib/")), "{res:?}");
    filtered.filters.path_glob = None;
    filtered.filters.kinds = vec!["lines".into()];
    let res = search(&store, Some(&vectors), &filtered).unwrap();
    assert!(res.hits.is_empty() || res.hits.iter().all(|h| h.kind == "lines"));
    filtered.filters.path_glob = Some("[".into());
    assert!(search(&store, Some(&vectors), &filtered).unwrap_err().to_string().contains("glob"));

    // Deleted chunks are never returned.
    store.write(|w| w.delete_file("lib/c.py").map(drop)).unwrap();
    let mut all = SearchRequest::new("send email user");
    all.mode = Some(Mode::Semantic);
    all.collection = Collection::Forest;
    all.n_results = 50;
    let res = search(&store, Some(&vectors), &all).unwrap();
    assert!(res.hits.iter().all(|h| h.file != "lib/c.py"), "{res:?}");
}

#[test]
fn a_graph_snapshot_is_dropped_once_the_collection_is_scanned_instead() {
    // An index saved with a graph (as earlier versions did from 20,000
    // points) must not bring the graph back at every start once the
    // collection is searched by a scan: the first sync drops the snapshot.
    let tmp = tempfile::tempdir().unwrap();
    let encoder = Arc::new(tiny(&tmp.path().join("tiny"), "tiny", 8));
    let mut store = Store::open(&tmp.path().join("index.db")).unwrap();
    add_file(&mut store, "app/a.py", app_chunks("def compute_total(order): return order.total"));
    embed_pending(&mut store, &encoder, &|_| {}, None).unwrap();
    let dir = tmp.path().join("vectors");
    let key = encoder.info().key.to_string();
    let mut graph = code_intel_vector::VectorIndex::new(encoder.dim()).with_graph_threshold(1);
    for i in 0..8u64 {
        let mut v = vec![0.0; encoder.dim()];
        v[usize::try_from(i).unwrap() % encoder.dim()] = 1.0;
        graph.insert(1_000 + i64::try_from(i).unwrap(), i, &v);
    }
    assert!(graph.refresh() && graph.uses_hnsw());
    graph.save(&dir.join("forest"), &key, store.vector_generation().unwrap()).unwrap();
    assert!(dir.join("forest").exists());

    let vectors = VectorSearch::new(ModelHandle::ready(Arc::clone(&encoder)), Some(dir.clone()));
    vectors.sync(&store).unwrap();
    assert!(!dir.join("forest").exists(), "the unused snapshot is removed");
    let mut request = SearchRequest::new("compute the order total");
    request.mode = Some(Mode::Semantic);
    request.collection = Collection::Forest;
    let res = search(&store, Some(&vectors), &request).unwrap();
    assert!(res.hits.iter().all(|h| h.file == "app/a.py"), "the store's chunks, not the snapshot's points: {res:?}");
}

#[test]
fn without_a_model_search_degrades_to_lexical_and_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let mut store = Store::open(&tmp.path().join("index.db")).unwrap();
    add_file(&mut store, "app/a.py", app_chunks("def compute_total(order): return order.total"));
    let vectors = VectorSearch::new(ModelHandle::unavailable("model \"x\" is not installed"), None);
    let mut request = SearchRequest::new("compute_total");
    request.mode = Some(Mode::Semantic);
    let res = search(&store, Some(&vectors), &request).unwrap();
    assert_eq!(res.mode, Mode::Lexical);
    assert!(res.vector_search.starts_with("unavailable: "), "{}", res.vector_search);
    assert!(res.message.as_deref().unwrap_or("").contains("code-intel model install"), "{:?}", res.message);
    assert_eq!(res.hits[0].name, "compute_total");
    // Gibberish: no confident match, no random code.
    let res = search(&store, Some(&vectors), &SearchRequest::new("qwxz blorptangle")).unwrap();
    assert!(res.no_confident_match && res.hits.is_empty());
    // Map search needs vectors: says so.
    let mut map = SearchRequest::new("user login");
    map.collection = Collection::Map;
    let res = search(&store, Some(&vectors), &map).unwrap();
    assert!(res.no_confident_match);
    assert!(res.message.unwrap().contains("unavailable"));
    // An empty query is an error naming what to fix.
    assert!(search(&store, Some(&vectors), &SearchRequest::new("  ")).unwrap_err().to_string().contains("query is empty"));
}
