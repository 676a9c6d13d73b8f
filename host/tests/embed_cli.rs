//! The real `code-intel` binary with embeddings: `index` embeds the chunks
//! with the real test model (the default, multilingual-e5-small, from
//! `CODE_INTEL_TEST_MODEL_DIR`, installed by scripts/fetch-default-model), a
//! second `index` finds them all cached, `search --mode hybrid` ranks the
//! login code first for a question, and `status` reports the coverage.
//! Without any model, `index` still succeeds and says why semantic search is
//! unavailable, and `search` falls back to lexical and says so.

mod embed_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// A copy of the fixture in a scratch folder (the index is written inside it).
fn fixture_copy(tmp: &Path) -> PathBuf {
    let repo = tmp.join("semantic-app");
    let mut stack = vec![(embed_support::fixture_dir(), repo.clone())];
    while let Some((from, to)) = stack.pop() {
        std::fs::create_dir_all(&to).unwrap();
        for entry in std::fs::read_dir(&from).unwrap() {
            let path = entry.unwrap().path();
            let dest = to.join(path.file_name().unwrap());
            if path.is_dir() {
                stack.push((path, dest));
            } else {
                std::fs::copy(&path, &dest).unwrap();
            }
        }
    }
    repo
}

/// The binary with a private HOME and cache (so no installed model or
/// Hugging Face cache of the machine is found) and downloads off.
fn bin(home: &Path, model_dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_code-intel"));
    cmd.env("HOME", home)
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env_remove("HF_HOME")
        .env_remove("HF_HUB_CACHE")
        .env("HF_HUB_OFFLINE", "1")
        .env("CODE_INTEL_MODEL_DIR", model_dir)
        .env_remove("CODE_INTEL_LOG");
    cmd
}

fn ok(mut cmd: Command, args: &[&str]) -> Output {
    let out = cmd.args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn index_embeds_and_hybrid_search_ranks_the_login_code_first() {
    let Some(model_dir) = embed_support::real_model_dir("index_embeds_and_hybrid_search_ranks_the_login_code_first") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let repo = fixture_copy(tmp.path());
    let r = repo.to_str().unwrap();

    let first = ok(bin(&home, &model_dir), &["index", r, "--json"]);
    let report: Value = serde_json::from_str(&stdout(&first)).unwrap();
    let embedding = &report["embedding"];
    assert_eq!(embedding["status"], "ready", "{embedding}");
    let total = report["total_chunks"].as_u64().unwrap();
    assert!(total >= 8, "{report}");
    assert_eq!(embedding["coverage"]["embedded_chunks"], total, "{embedding}");
    assert!(embedding["embedded_chunks"].as_u64().unwrap() >= 8, "{embedding}");
    assert_eq!(embedding["cached_chunks"], 0, "{embedding}");
    assert_eq!(embedding["model_loaded"], true, "{embedding}");

    // Nothing changed: everything is cached, nothing is embedded again.
    let again = stdout(&ok(bin(&home, &model_dir), &["index", r]));
    assert!(again.contains("0 chunks embedded"), "{again}");
    assert!(again.contains(&format!("{total} already cached")), "{again}");
    assert!(again.contains("(100%)"), "{again}");
    // Once the model's fingerprint is remembered and the store records the
    // complete pass, the next run does not even wait for the model. Files
    // changed within the settling time (a model unpacked moments before)
    // are not remembered: then wait it out and let one more run remember.
    let cache = std::env::var_os("CODE_INTEL_CACHE_DIR")
        .filter(|v| !v.is_empty())
        .map_or_else(|| home.join(".cache").join("code-intel"), PathBuf::from)
        .join("fingerprints");
    if code_intel_embed::fingerprint::remembered(&cache, &model_dir).is_none() {
        std::thread::sleep(code_intel_embed::fingerprint::SETTLE + std::time::Duration::from_millis(200));
        ok(bin(&home, &model_dir), &["index", r]);
    }
    assert!(code_intel_embed::fingerprint::remembered(&cache, &model_dir).is_some(), "the fingerprint is remembered");
    let third: Value = serde_json::from_str(&stdout(&ok(bin(&home, &model_dir), &["index", r, "--json"]))).unwrap();
    assert_eq!(third["embedding"]["coverage"]["embedded_chunks"], total, "{third}");
    assert_eq!(third["embedding"]["cached_chunks"], total, "{third}");
    assert_eq!(third["embedding"]["model_loaded"], false, "{third}");
    // The chunk densities that rank hubs down were computed at index time
    // and kept; without them the next run loads the model to compute them.
    let vectors = repo.join(".code-intel").join("vectors");
    let densities = || -> Vec<PathBuf> {
        std::fs::read_dir(&vectors).unwrap().filter_map(Result::ok).map(|e| e.path()).filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("forest-densities-"))).collect()
    };
    let kept = densities();
    assert_eq!(kept.len(), 1, "{kept:?}");
    std::fs::remove_file(&kept[0]).unwrap();
    let recomputed: Value = serde_json::from_str(&stdout(&ok(bin(&home, &model_dir), &["index", r, "--json"]))).unwrap();
    assert_eq!(recomputed["embedding"]["model_loaded"], true, "{recomputed}");
    assert_eq!(densities(), kept);
    // A change is embedded again, with the model.
    std::fs::write(repo.join("app/extra.py"), "def shipping_cost(order):\n    return order.weight * 2\n").unwrap();
    let fourth: Value = serde_json::from_str(&stdout(&ok(bin(&home, &model_dir), &["index", r, "--json"]))).unwrap();
    assert_eq!(fourth["embedding"]["model_loaded"], true, "{fourth}");
    assert!(fourth["embedding"]["embedded_chunks"].as_u64().unwrap() >= 1, "{fourth}");
    let total = fourth["total_chunks"].as_u64().unwrap();
    assert_eq!(fourth["embedding"]["coverage"]["embedded_chunks"], total, "{fourth}");

    let out = ok(bin(&home, &model_dir), &["search", "--repo", r, "--mode", "hybrid", "--json", "where do users log in"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["mode"], "hybrid", "{v}");
    assert_eq!(v["vector_search"], "ready", "{v}");
    assert_eq!(v["short_circuit"], false, "{v}");
    let results = v["results"].as_array().unwrap();
    assert!(!results.is_empty(), "{v}");
    assert_eq!(results[0]["path"], "app/auth/session.py", "{v}");
    assert!(results[0]["arms"].as_array().unwrap().iter().any(|a| a == "vector"), "{v}");
    assert!(
        results.iter().take(3).any(|h| h["name"] == "login" && h["path"] == "app/auth/session.py"),
        "the login function is in the top 3: {v}"
    );

    // Default mode: hybrid, since a model and vectors are there; text output
    // names the arms of each hit.
    let out = ok(bin(&home, &model_dir), &["search", "--repo", r, "where do users log in"]);
    let text = stdout(&out);
    assert!(text.starts_with("hybrid search (vector search: ready)"), "{text}");
    assert!(text.lines().nth(1).is_some_and(|l| l.contains("app/auth/session.py") && l.contains("vector")), "{text}");

    let status = ok(bin(&home, &model_dir), &["status", r, "--json"]);
    let s: Value = serde_json::from_str(&stdout(&status)).unwrap();
    assert_eq!(s["embedding"]["embedded_chunks"], total, "{s}");
    assert_eq!(s["embedding"]["embedded_percent"], 100.0, "{s}");
    let key_name = embed_support::real_model_key_name(&model_dir);
    assert!(s["embedding"]["model"].as_str().unwrap().starts_with(&format!("{key_name}@")), "{key_name}: {s}");
    let text = stdout(&ok(bin(&home, &model_dir), &["status", r]));
    assert!(text.contains(&format!("{total}/{total} chunks (100%)")), "{text}");
}

#[test]
fn without_a_model_index_succeeds_and_search_is_lexical() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let empty = tmp.path().join("no-model");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&empty).unwrap();
    let repo = fixture_copy(tmp.path());
    let r = repo.to_str().unwrap();

    let out = ok(bin(&home, &empty), &["index", r]);
    let text = stdout(&out);
    assert!(text.contains("semantic search unavailable: CODE_INTEL_MODEL_DIR"), "{text}");
    assert!(text.contains("code-intel model install"), "how to install one: {text}");
    let json: Value = serde_json::from_str(&stdout(&ok(bin(&home, &empty), &["index", r, "--json"]))).unwrap();
    assert!(json["embedding"]["status"].as_str().unwrap().starts_with("unavailable: "), "{json}");

    // --no-embed does not even look for a model.
    let text = stdout(&ok(bin(&home, &empty), &["index", r, "--no-embed"]));
    assert!(!text.contains("semantic search") && !text.contains("embeddings"), "{text}");

    let out = ok(bin(&home, &empty), &["search", "--repo", r, "--json", "where do users log in"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["mode"], "lexical", "{v}");
    assert!(v["vector_search"].as_str().unwrap().starts_with("unavailable: "), "{v}");
    assert_eq!(v["short_circuit"], false, "{v}");
    assert!(stderr(&out).contains("lexical search: semantic search unavailable"), "{}", stderr(&out));
    let results = v["results"].as_array().unwrap();
    assert!(results.iter().all(|h| h["arms"] == serde_json::json!(["lexical"])), "{v}");
    assert!(results.iter().any(|h| h["path"] == "app/auth/session.py"), "{v}");

    // Asking for hybrid explicitly degrades to lexical and says why.
    let out = ok(bin(&home, &empty), &["search", "--repo", r, "--mode", "hybrid", "where do users log in"]);
    assert!(stdout(&out).starts_with("lexical search (vector search: unavailable)"), "{}", stdout(&out));
    assert!(stderr(&out).contains("answered with lexical search"), "{}", stderr(&out));

    let text = stdout(&ok(bin(&home, &empty), &["status", r]));
    assert!(text.contains("Embeddings: ") && text.contains("unavailable"), "{text}");

    let out = bin(&home, &empty).args(["search", "--repo", r, "--mode", "fuzzy", "x"]).output().unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("lexical, semantic or hybrid"), "{}", stderr(&out));
}
