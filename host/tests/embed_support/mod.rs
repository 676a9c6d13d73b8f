//! Shared helpers of the embedding tests: a tiny random-weight BERT model
//! written to a temporary folder (config.json, model.safetensors in the real
//! safetensors format, a WordPiece tokenizer.json), and the real test model.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Words of the tiny tokenizer's vocabulary (after the special tokens).
pub const WORDS: &[&str] = &[
    "user", "users", "login", "log", "in", "password", "order", "total", "compute", "price", "tax", "shipping", "stock",
    "warehouse", "email", "send", "report", "monthly", "revenue", "def", "return", "class", "function", "the", "a",
    "is", "how", "where", "do", "query", ":", "passage", "(", ")", ".", ",", "=", "##s", "##ed", "##ing",
];

pub const HIDDEN: usize = 32;
pub const LAYERS: usize = 2;
pub const HEADS: usize = 4;
pub const INTERMEDIATE: usize = 64;
pub const MAX_POSITIONS: usize = 64;

/// Writes a tiny random BERT model into `dir` (created). `seed` changes the
/// weights (and so the model's fingerprint).
pub fn write_tiny_model(dir: &Path, seed: u64) {
    std::fs::create_dir_all(dir).unwrap();
    let vocab_size = 4 + WORDS.len();
    let config = serde_json::json!({
        "architectures": ["BertModel"],
        "model_type": "bert",
        "vocab_size": vocab_size,
        "hidden_size": HIDDEN,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "intermediate_size": INTERMEDIATE,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": MAX_POSITIONS,
        "type_vocab_size": 2,
        "initializer_range": 0.02,
        "layer_norm_eps": 1e-12,
        "pad_token_id": 0
    });
    std::fs::write(dir.join("config.json"), serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    std::fs::write(dir.join("tokenizer.json"), tokenizer_json()).unwrap();

    let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut random = |n: usize, scale: f32| -> Vec<f32> {
        (0..n)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                ((rng % 20_000) as f32 / 10_000.0 - 1.0) * scale
            })
            .collect()
    };
    let mut tensors: BTreeMap<String, (Vec<usize>, Vec<f32>)> = BTreeMap::new();
    let mut put = |name: &str, shape: Vec<usize>, data: Vec<f32>| {
        tensors.insert(name.to_string(), (shape, data));
    };
    put("embeddings.word_embeddings.weight", vec![vocab_size, HIDDEN], random(vocab_size * HIDDEN, 1.0));
    put("embeddings.position_embeddings.weight", vec![MAX_POSITIONS, HIDDEN], random(MAX_POSITIONS * HIDDEN, 0.1));
    put("embeddings.token_type_embeddings.weight", vec![2, HIDDEN], random(2 * HIDDEN, 0.1));
    put("embeddings.LayerNorm.weight", vec![HIDDEN], vec![1.0; HIDDEN]);
    put("embeddings.LayerNorm.bias", vec![HIDDEN], vec![0.0; HIDDEN]);
    for l in 0..LAYERS {
        let p = format!("encoder.layer.{l}");
        for m in ["query", "key", "value"] {
            put(&format!("{p}.attention.self.{m}.weight"), vec![HIDDEN, HIDDEN], random(HIDDEN * HIDDEN, 0.3));
            put(&format!("{p}.attention.self.{m}.bias"), vec![HIDDEN], random(HIDDEN, 0.1));
        }
        put(&format!("{p}.attention.output.dense.weight"), vec![HIDDEN, HIDDEN], random(HIDDEN * HIDDEN, 0.3));
        put(&format!("{p}.attention.output.dense.bias"), vec![HIDDEN], random(HIDDEN, 0.1));
        put(&format!("{p}.attention.output.LayerNorm.weight"), vec![HIDDEN], vec![1.0; HIDDEN]);
        put(&format!("{p}.attention.output.LayerNorm.bias"), vec![HIDDEN], vec![0.0; HIDDEN]);
        put(&format!("{p}.intermediate.dense.weight"), vec![INTERMEDIATE, HIDDEN], random(INTERMEDIATE * HIDDEN, 0.3));
        put(&format!("{p}.intermediate.dense.bias"), vec![INTERMEDIATE], random(INTERMEDIATE, 0.1));
        put(&format!("{p}.output.dense.weight"), vec![HIDDEN, INTERMEDIATE], random(HIDDEN * INTERMEDIATE, 0.3));
        put(&format!("{p}.output.dense.bias"), vec![HIDDEN], random(HIDDEN, 0.1));
        put(&format!("{p}.output.LayerNorm.weight"), vec![HIDDEN], vec![1.0; HIDDEN]);
        put(&format!("{p}.output.LayerNorm.bias"), vec![HIDDEN], vec![0.0; HIDDEN]);
    }
    std::fs::write(dir.join("model.safetensors"), safetensors(&tensors)).unwrap();
}

/// The safetensors format: u64 header length, JSON header, raw data.
fn safetensors(tensors: &BTreeMap<String, (Vec<usize>, Vec<f32>)>) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    let mut data = Vec::new();
    for (name, (shape, values)) in tensors {
        let start = data.len();
        for v in values {
            data.extend_from_slice(&v.to_le_bytes());
        }
        header.insert(name.clone(), serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [start, data.len()]}));
    }
    let mut header = serde_json::to_vec(&serde_json::Value::Object(header)).unwrap();
    while header.len() % 8 != 0 {
        header.push(b' ');
    }
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&header);
    out.extend_from_slice(&data);
    out
}

fn tokenizer_json() -> String {
    let specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"];
    let mut vocab = serde_json::Map::new();
    for (i, t) in specials.iter().chain(WORDS).enumerate() {
        vocab.insert((*t).to_string(), i.into());
    }
    let added: Vec<serde_json::Value> = specials
        .iter()
        .enumerate()
        .map(|(i, t)| serde_json::json!({"id": i, "content": t, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}))
        .collect();
    serde_json::json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}
            }
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": vocab}
    })
    .to_string()
}

/// The real test model from `CODE_INTEL_TEST_MODEL_DIR` (scripts/test sets
/// it to the default model, multilingual-e5-small, as scripts/fetch-default-model
/// converts it), or `None` with a loud note when it is not set.
pub fn real_model_dir(test: &str) -> Option<PathBuf> {
    match std::env::var_os("CODE_INTEL_TEST_MODEL_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => {
            eprintln!(
                "\n!!! SKIPPED {test}: CODE_INTEL_TEST_MODEL_DIR is not set. Run scripts/fetch-default-model and export \
                 CODE_INTEL_TEST_MODEL_DIR=<its output> (scripts/test does this) to run the real-model tests. !!!\n"
            );
            None
        }
    }
}

/// The real test model as a resolved model: named after the model a
/// converted copy was made from (`derived_from.json`), else its folder.
pub fn real_model(dir: &Path) -> code_intel_embed::ResolvedModel {
    let derived = code_intel_embed::sentence_config::read(dir, &[]).ok().and_then(|c| c.derived);
    let name = derived
        .and_then(|d| d.model)
        .unwrap_or_else(|| dir.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned()));
    code_intel_embed::ResolvedModel { name, dir: dir.to_path_buf(), source: code_intel_embed::ModelSource::EnvOverride }
}

/// The name in the model key `code-intel` gives the real test model when
/// `CODE_INTEL_MODEL_DIR` points at it: the folder's name, and for a
/// converted copy the suffix saying so.
pub fn real_model_key_name(dir: &Path) -> String {
    let folder = dir.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    match code_intel_embed::sentence_config::read(dir, &[]).ok().and_then(|c| c.derived) {
        Some(derived) => format!("{folder}{}", derived.key_suffix()),
        None => folder,
    }
}

/// The fixture project of the semantic tests.
pub fn fixture_dir() -> PathBuf {
    let mut dir = Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf();
    loop {
        let candidate = dir.join("fixtures/semantic-app");
        if candidate.is_dir() {
            return candidate;
        }
        assert!(dir.pop(), "fixtures/semantic-app not found above {}", env!("CARGO_MANIFEST_DIR"));
    }
}
