//! The packed forward pass computes the vectors candle-transformers'
//! `BertModel` computes: on tiny random models (GELU with erf, its tanh
//! approximation, ReLU; mean and CLS pooling; a `bert.` name prefix) and on
//! the real test model, for texts of many lengths batched together, alone,
//! and past the model's window.

mod embed_support;

use std::path::Path;

use code_intel_embed::{Encoder, EncoderOptions, ForwardPass, ModelSource, ResolvedModel, Role};

fn load(dir: &Path, name: &str, forward: ForwardPass) -> Encoder {
    let resolved = ResolvedModel { name: name.into(), dir: dir.to_path_buf(), source: ModelSource::EnvOverride };
    let options = EncoderOptions { forward: Some(forward), fingerprint_cache: None, ..EncoderOptions::default() };
    let encoder = Encoder::load(&resolved, &options).expect("the model loads");
    assert_eq!(encoder.info().forward, forward);
    encoder
}

/// Texts of 0 to several hundred words, so batches mix lengths and the
/// longest are cut at the model's window.
fn texts(words: &[&str]) -> Vec<String> {
    let mut out = vec![String::new(), "user".to_string()];
    for n in [3usize, 7, 8, 9, 15, 16, 17, 31, 40, 63, 64, 100, 250, 400] {
        out.push((0..n).map(|i| words[(i * 7 + n) % words.len()]).collect::<Vec<_>>().join(" "));
    }
    out
}

/// Largest component difference between the two passes' vectors, embedding
/// all texts at once (mixed batches) and each text alone.
fn largest_difference(dir: &Path, name: &str, texts: &[String]) -> f32 {
    let packed = load(dir, name, ForwardPass::Packed);
    let reference = load(dir, name, ForwardPass::Reference);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut worst = 0f32;
    for role in [Role::Passage, Role::Query] {
        let a = packed.embed(&refs, role, &|_, _| {}).unwrap();
        let b = reference.embed(&refs, role, &|_, _| {}).unwrap();
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.len(), y.len());
            let norm: f32 = x.iter().map(|v| v * v).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "packed vector not normalised: {norm}");
            worst = x.iter().zip(y).map(|(p, q)| (p - q).abs()).fold(worst, f32::max);
        }
    }
    for text in texts.iter().take(6) {
        let a = packed.embed_query(text).unwrap();
        let b = reference.embed_query(text).unwrap();
        worst = a.iter().zip(&b).map(|(p, q)| (p - q).abs()).fold(worst, f32::max);
    }
    worst
}

/// Rewrites the tiny model's config (activation) and optionally its pooling
/// and tensor names.
fn variant(dir: &Path, seed: u64, activation: &str, cls: bool, prefixed: bool) {
    embed_support::write_tiny_model(dir, seed);
    let config_path = dir.join("config.json");
    let mut config: serde_json::Value = serde_json::from_slice(&std::fs::read(&config_path).unwrap()).unwrap();
    config["hidden_act"] = activation.into();
    std::fs::write(&config_path, serde_json::to_vec(&config).unwrap()).unwrap();
    if cls {
        std::fs::create_dir_all(dir.join("1_Pooling")).unwrap();
        std::fs::write(dir.join("1_Pooling/config.json"), r#"{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#).unwrap();
    }
    if prefixed {
        let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
        let tensors = candle_core::safetensors::load_buffer(&bytes, &candle_core::Device::Cpu).unwrap();
        let renamed: std::collections::HashMap<String, candle_core::Tensor> =
            tensors.into_iter().map(|(name, t)| (format!("bert.{name}"), t)).collect();
        candle_core::safetensors::save(&renamed, dir.join("model.safetensors")).unwrap();
    }
}

#[test]
fn packed_pass_matches_bert_model_on_tiny_models() {
    let words = embed_support::WORDS;
    let cases = [("gelu", false, false), ("geluapproximate", true, false), ("relu", false, true), ("gelu", true, true)];
    for (i, (activation, cls, prefixed)) in cases.into_iter().enumerate() {
        let tmp = tempfile::tempdir().unwrap();
        variant(tmp.path(), 11 + i as u64, activation, cls, prefixed);
        let worst = largest_difference(tmp.path(), "tiny", &texts(words));
        assert!(worst < 2e-5, "{activation} cls={cls} prefixed={prefixed}: vectors differ by up to {worst}");
    }
}

#[test]
fn packed_pass_matches_bert_model_on_the_real_model() {
    let Some(dir) = embed_support::real_model_dir("packed_pass_matches_bert_model_on_the_real_model") else { return };
    let words = [
        "def", "login", "(", "user", ",", "password", ")", ":", "return", "session", ".", "create", "where", "do", "users",
        "log", "in", "order", "total", "=", "sum", "price", "*", "quantity", "class", "Invoice", "{", "}", "日本語", "über",
    ];
    let worst = largest_difference(&dir, &embed_support::real_model(&dir).name, &texts(&words));
    eprintln!("largest component difference: {worst}");
    assert!(worst < 1e-5, "vectors differ by up to {worst}");
}

#[test]
fn an_unknown_forward_pass_is_named() {
    let error = ForwardPass::from_setting(Some("fast")).unwrap_err();
    assert!(error.contains("CODE_INTEL_ENCODER=\"fast\"") && error.contains("`packed`") && error.contains("`reference`"), "{error}");
    assert_eq!(ForwardPass::from_setting(Some("Reference")), Ok(ForwardPass::Reference));
    assert_eq!(ForwardPass::from_setting(None), Ok(ForwardPass::Packed));
}
