//! Embedding throughput of the encoder on real code chunks.
//!
//! `embed_throughput MODEL_DIR SOURCE_DIR [TEXTS_OUT.jsonl]`: chunks every
//! `.rs`/`.py`/`.php` file under SOURCE_DIR with the line-based chunker, builds
//! the texts the pipeline embeds, embeds them (tokenising included) and
//! prints real tokens/s and chunks/s as JSON on stdout. With TEXTS_OUT, the
//! texts are written one JSON string per line so another encoder
//! (bench/embed-throughput runs sentence-transformers) can embed the same.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use code_intel_embed::{Encoder, EncoderOptions, ModelSource, ResolvedModel, Role, chunk_text};

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
        } else if ["rs", "py", "php"].iter().any(|e| name.ends_with(&format!(".{e}"))) {
            out.push(path);
        }
    }
}

fn main() {
    // SAFETY: first thing in `main`: no other thread exists yet. As in `code-intel`.
    #[allow(unsafe_code)]
    unsafe {
        code_intel_embed::threads::run_elementwise_on_callers();
    }
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: embed_throughput MODEL_DIR SOURCE_DIR [TEXTS_OUT.jsonl]");
        std::process::exit(2);
    }
    let model = ResolvedModel { name: "bench".into(), dir: PathBuf::from(&args[1]), source: ModelSource::LocalPath };
    let mut files = Vec::new();
    collect(Path::new(&args[2]), &mut files);
    files.sort();
    let mut texts = Vec::new();
    for f in &files {
        let Ok(content) = std::fs::read_to_string(f) else { continue };
        for c in code_intel_core::line_chunks(&f.to_string_lossy(), &content) {
            texts.push(chunk_text(&c.kind, &c.name, None, c.metadata.as_str(), &c.content));
        }
    }
    if let Some(limit) = std::env::var("EMBED_LIMIT").ok().and_then(|v| v.parse::<usize>().ok()) {
        texts.truncate(limit);
    }
    if let Some(out) = args.get(3) {
        let mut w = std::io::BufWriter::new(std::fs::File::create(out).expect("create texts file"));
        for t in &texts {
            writeln!(w, "{}", serde_json::to_string(t).expect("json")).expect("write");
        }
    }
    let workers: usize = std::env::var("EMBED_WORKERS").ok().and_then(|v| v.parse().ok()).unwrap_or_else(|| EncoderOptions::default().workers);
    let encoder = Encoder::load(&model, &EncoderOptions { workers, ..EncoderOptions::default() }).expect("model loads");
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    // Warm-up on a few texts (allocations, thread start).
    let _ = encoder.embed(&refs[..refs.len().min(16)], Role::Passage, &|_, _| {});
    let started = Instant::now();
    let (vectors, tokens) = encoder.embed_counted(&refs, Role::Passage, &|_, _| {}).expect("embeds");
    let secs = started.elapsed().as_secs_f64();
    // Latency of a lone text: the longest chunk (a one-chunk re-index) and
    // a query, median of 9.
    let longest = refs.iter().copied().max_by_key(|t| t.len()).unwrap_or("");
    let median_ms = |text: &str| {
        let mut ms: Vec<f64> = (0..9)
            .map(|_| {
                let t = Instant::now();
                let _ = encoder.embed(&[text], Role::Passage, &|_, _| {});
                t.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        ms.sort_by(f64::total_cmp);
        ms[4]
    };
    let one_chunk_ms = median_ms(longest);
    let query_ms = median_ms("where are the chunks of a file replaced in the database");
    let report = serde_json::json!({
        "one_chunk_ms": one_chunk_ms,
        "query_ms": query_ms,
        "engine": "code-intel (candle)",
        "workers": workers,
        "chunks": vectors.len(),
        "tokens": tokens,
        "seconds": secs,
        "tokens_per_s": tokens as f64 / secs,
        "chunks_per_s": vectors.len() as f64 / secs,
        "max_tokens": encoder.info().max_tokens,
    });
    println!("{report}");
}
