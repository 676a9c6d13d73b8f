//! How a model votes on the topic of requests (`code_intel_search::topic`):
//! for each line of a file, the kinds of its nine nearest anchor requests
//! (1 everyday, 0 developer), nearest first, and its best similarity to
//! each set.
//!
//! ```text
//! cargo run --release -p code-intel-search --example topic_votes -- MODEL_DIR REQUESTS.txt
//! ```
//!
//! The figures of `topic::SECOND_OPINION_VOTES` come from the English
//! requests of `bench/retrieval/queries` (off-topic ones first), run once
//! with each model.

use code_intel_embed::{Encoder, EncoderOptions, ModelSource, ResolvedModel};
use std::path::PathBuf;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: topic_votes MODEL_DIR REQUESTS_FILE (one request per line)");
        std::process::exit(2);
    }
    let model = ResolvedModel { name: "votes".into(), dir: PathBuf::from(&args[1]), source: ModelSource::LocalPath };
    let encoder = Encoder::load(&model, &EncoderOptions::default()).expect("model loads");
    let embed = |q: &str| encoder.embed_query(q).expect("request embeds");
    let everyday: Vec<Vec<f32>> = code_intel_search::topic::EVERYDAY_REQUESTS.iter().map(|q| embed(q)).collect();
    let software: Vec<Vec<f32>> = code_intel_search::topic::SOFTWARE_REQUESTS.iter().map(|q| embed(q)).collect();
    let best = |qv: &[f32], set: &[Vec<f32>]| set.iter().map(|v| code_intel_vector::dot(qv, v)).fold(f32::MIN, f32::max);
    for line in std::fs::read_to_string(&args[2]).expect("requests file reads").lines().filter(|l| !l.trim().is_empty()) {
        let qv = embed(line);
        let mut scored: Vec<(f32, bool)> = everyday
            .iter()
            .map(|v| (code_intel_vector::dot(&qv, v), true))
            .chain(software.iter().map(|v| (code_intel_vector::dot(&qv, v), false)))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        let votes: String = scored.iter().take(9).map(|(_, e)| if *e { '1' } else { '0' }).collect();
        println!("{votes} everyday {:.2} developer {:.2} | {line}", best(&qv, &everyday), best(&qv, &software));
    }
}
