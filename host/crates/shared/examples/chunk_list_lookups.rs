//! Times taking a sync's chunk lists from the shared store: one lookup per
//! file (a chunker that is not prepared) against the batched lookups of a
//! prepared one (`Chunker::prepare`: the newest list of a few hundred paths
//! per query). Publishes the line chunks of every text file under the given
//! folders under chunker key `KEY` (default `timing`; use a fresh key per
//! repository: equal paths of several folders share one newest list), then
//! takes them back both ways, three rounds.
//!
//!   cargo run --release --example chunk_list_lookups -- POSTGRES_URL FOLDER...
use code_intel_core::{Chunker, ChunkedFile};
use code_intel_shared::{SharedChunker, SharedStore};
use std::time::Instant;

struct Lines;
impl Chunker for Lines {
    fn chunk_file(&self, path: &str, content: &str) -> ChunkedFile {
        ChunkedFile { chunks: code_intel_core::line_chunks(path, content), chunker: "lines".into(), ..ChunkedFile::default() }
    }
}

fn walk(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<(String, String)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().to_string();
        if name == ".git" || name == ".code-intel" { continue; }
        let p = e.path();
        if e.file_type().unwrap().is_dir() { walk(root, &p, out); }
        else if let Ok(text) = std::fs::read_to_string(&p) {
            out.push((p.strip_prefix(root).unwrap().to_string_lossy().to_string(), text));
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let store = SharedStore::connect(&args[1]).unwrap();
    let mut files = Vec::new();
    for root in &args[2..] {
        let root = std::path::Path::new(root);
        walk(root, root, &mut files);
    }
    let key = &*Box::leak(std::env::var("KEY").unwrap_or_else(|_| "timing".into()).into_boxed_str());
    let publish = SharedChunker::new(&Lines, &store, key.into());
    for (p, t) in &files { publish.chunk_file(p, t); }
    let report = publish.finish();
    store.publish_chunk_lists(key, &report.to_publish).unwrap();
    let paths: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    for round in 0..3 {
        // Before: one query per file.
        let t = Instant::now();
        let c0 = store.calls();
        let one = SharedChunker::new(&Lines, &store, key.into());
        for (p, text) in &files { one.chunk_file(p, text); }
        let r1 = one.finish();
        let (before_ms, before_calls) = (t.elapsed().as_secs_f64() * 1e3, store.calls() - c0);
        // After: prepare, then the same files.
        let t = Instant::now();
        let c0 = store.calls();
        let batched = SharedChunker::new(&Lines, &store, key.into());
        batched.prepare(&paths);
        for (p, text) in &files { batched.chunk_file(p, text); }
        let r2 = batched.finish();
        let (after_ms, after_calls) = (t.elapsed().as_secs_f64() * 1e3, store.calls() - c0);
        println!("round {round}: {} files: per file {before_ms:.0} ms ({before_calls} calls, {} taken); batched {after_ms:.0} ms ({after_calls} calls, {} taken)",
            files.len(), r1.files_from_store, r2.files_from_store);
    }
}
