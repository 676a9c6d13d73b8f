//! `code-intel status [PATH] [--json] [--check]`: what the index holds, how
//! fresh it is, and how much of it has vectors for the embedding model;
//! with `--check`, whether the database is damaged.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use code_intel_core::config::{self, Config};
use code_intel_embed::{EncoderOptions, ModelHandle, ModelState, ResolveOptions};
use code_intel_search::semantic::VectorSearch;
use code_intel_store::{Store, meta_keys};
use serde_json::{Value, json};

/// Plugin failures listed by `status` (the newest ones).
const FAILURES_SHOWN: usize = 10;

/// Show what the index holds.
#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    /// Repository root (default: as for `index`).
    pub path: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Also check the index for damage: SQLite's integrity check, the
    /// full-text index's own check, and chunks without their file or
    /// full-text row. Exit code 1 when something is wrong.
    #[arg(long)]
    pub check: bool,
}

pub fn run(args: &StatusArgs) -> ExitCode {
    super::index::init_logging();
    let result = super::index::resolve_repo(args.path.as_deref()).and_then(|root| {
        let mut value = status_json(&root)?;
        let mut damaged = false;
        if args.check {
            let store = Store::open_existing(&config::database_path(&root)).map_err(|e| e.to_string())?;
            let problems = store.integrity_check().map_err(|e| format!("cannot check the index: {e}"))?.err();
            damaged = problems.is_some();
            value["check"] = json!({ "ok": !damaged, "problems": problems });
        }
        let out = if args.json { serde_json::to_string_pretty(&value).unwrap_or_default() + "\n" } else { render(&value) };
        Ok((out, damaged))
    });
    match result {
        Ok((out, damaged)) => {
            print!("{out}");
            if damaged { ExitCode::FAILURE } else { ExitCode::SUCCESS }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// Everything `status` reports, as JSON (the text form is rendered from it).
///
/// # Errors
/// No index yet, or a store error, as a message for the user.
pub fn status_json(root: &Path) -> Result<Value, String> {
    let db = config::database_path(root);
    let store = Store::open_existing(&db).map_err(|e| e.to_string())?;
    let stats = store.stats().map_err(|e| e.to_string())?;
    let failures = store.plugin_failures(FAILURES_SHOWN).map_err(|e| e.to_string())?;
    let last_sync_ms: Option<i64> =
        store.meta(meta_keys::LAST_SYNC_MS).map_err(|e| e.to_string())?.and_then(|v| v.parse().ok());
    let started_ms: Option<i64> =
        store.meta(meta_keys::SYNC_STARTED_MS).map_err(|e| e.to_string())?.and_then(|v| v.parse().ok());
    let last_report_json: Option<Value> = store
        .meta(meta_keys::LAST_SYNC_REPORT)
        .map_err(|e| e.to_string())?
        .and_then(|text| serde_json::from_str(&text).ok());
    let sync_state = if code_intel_index::sync_in_progress(root) {
        "running"
    } else if started_ms.is_some() {
        "interrupted"
    } else {
        "idle"
    };
    let index_bytes: u64 = ["", "-wal", "-shm"]
        .iter()
        .map(|suffix| file_size(&PathBuf::from(format!("{}{suffix}", db.display()))))
        .sum();
    let last = last_report_json.as_ref();
    let (config, _) = Config::load(root).map_err(|e| e.to_string())?;
    let embedding = embedding_json(&config, root, &store)?;
    let english = english_json(&config, root, &store, &embedding)?;
    Ok(json!({
        "repo": root.display().to_string(),
        "database": db.display().to_string(),
        "index_bytes": index_bytes,
        "files": stats.files,
        "source_bytes": stats.indexed_bytes,
        "chunks": stats.chunks,
        "chunks_by_kind": stats.chunks_by_kind,
        "by_chunker": stats.by_chunker,
        "fallback_after_failure": stats.fallback_after_failure,
        "plugin_failures": stats.plugin_failures,
        "recent_plugin_failures": failures,
        "sync": {
            "state": sync_state,
            "last_sync_ms": last_sync_ms,
            "age_seconds": last_sync_ms.map(|ms| (now_ms() - ms).max(0) / 1000),
            "skipped": last.and_then(|r| r.get("skipped")).cloned().unwrap_or(Value::Array(vec![])),
            "elapsed_ms": last.and_then(|r| r.get("elapsed_ms")).cloned(),
        },
        "embedding": embedding,
        "english_embedding": english,
    }))
}

/// The embedding model the repository's config resolves to, and how many
/// chunks have a vector for it. Loads the model: its key (name and a
/// fingerprint of its files) is what the vectors are stored under.
fn embedding_json(config: &Config, root: &Path, store: &Store) -> Result<Value, String> {
    let options = ResolveOptions::new(Some(&config.embedding_model), Some(root)).with_endpoint(config.embedding_endpoint.as_deref());
    model_json(&config.embedding_model, &options, store)
}

/// The English model (config `english_model`) as [`embedding_json`] reports
/// the main one, with `answers_english`: whether requests in English are
/// ranked with its vectors now. `null` when it is turned off.
fn english_json(config: &Config, root: &Path, store: &Store, main: &Value) -> Result<Value, String> {
    let (Some(spec), Some(options)) = (config.english_model.as_deref(), code_intel_search::semantic::english_model_options(config, root)) else {
        return Ok(Value::Null);
    };
    let mut value = model_json(spec, &options, store)?;
    let answers = value["vector_search"] == "ready" && value["model"].is_string() && value["model"] != main["model"];
    value["answers_english"] = answers.into();
    Ok(value)
}

fn model_json(configured: &str, options: &ResolveOptions, store: &Store) -> Result<Value, String> {
    let model = ModelHandle::load_blocking(options, &EncoderOptions::default());
    let vectors = VectorSearch::new(model.clone(), None);
    let status = vectors.status(store, std::time::Duration::ZERO).map_err(|e| e.to_string())?;
    let ModelState::Ready(encoder) = model.state() else {
        return Ok(json!({ "configured": configured, "vector_search": status.to_string() }));
    };
    let key = &encoder.info().key;
    let row = store.embedding_model(&key.name, &key.revision).map_err(|e| e.to_string())?;
    let coverage = store.embedding_coverage(row.map(|m| m.id)).map_err(|e| e.to_string())?;
    Ok(json!({
        "configured": configured,
        "model": key.to_string(),
        "dir": encoder.info().dir.display().to_string(),
        "vector_search": status.to_string(),
        "embedded_chunks": coverage.embedded_chunks,
        "total_chunks": coverage.total_chunks,
        "embedded_percent": coverage.percent(),
        "embedded_map": coverage.embedded_map,
        "total_map": coverage.total_map,
    }))
}

/// `model: embedded/total chunks (percent%)` of an embedding entry.
fn coverage(model: &str, e: &Value) -> String {
    format!(
        "{model}: {}/{} chunks ({:.0}%)",
        e["embedded_chunks"].as_u64().unwrap_or(0),
        e["total_chunks"].as_u64().unwrap_or(0),
        e["embedded_percent"].as_f64().unwrap_or(0.0).floor()
    )
}

fn render(v: &Value) -> String {
    let mut out = String::new();
    let n = |key: &str| v[key].as_u64().unwrap_or(0);
    let _ = writeln!(out, "Repository: {}", v["repo"].as_str().unwrap_or_default());
    let _ = writeln!(out, "Index:      {} ({})", v["database"].as_str().unwrap_or_default(), bytes(n("index_bytes")));
    let sync = &v["sync"];
    let last = match sync["age_seconds"].as_i64() {
        Some(age) => format!("{} ago", duration(age)),
        None => "never completed".to_string(),
    };
    let state = match sync["state"].as_str() {
        Some("running") => " (a sync is running now)",
        Some("interrupted") => " (the last sync was interrupted: run `code-intel index` to finish it)",
        _ => "",
    };
    let _ = writeln!(out, "Last sync:  {last}{state}");
    let _ = writeln!(out, "Files:      {} ({} of source)", n("files"), bytes(n("source_bytes")));
    let _ = writeln!(out, "Chunks:     {}", n("chunks"));
    if let Some(kinds) = v["chunks_by_kind"].as_object() {
        let mut kinds: Vec<(&String, u64)> = kinds.iter().map(|(k, c)| (k, c.as_u64().unwrap_or(0))).collect();
        kinds.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let line: Vec<String> = kinds.iter().map(|(k, c)| format!("{k} {c}")).collect();
        let _ = writeln!(out, "  by kind:    {}", line.join(", "));
    }
    if let Some(chunkers) = v["by_chunker"].as_object() {
        let line: Vec<String> = chunkers
            .iter()
            .map(|(name, c)| format!("{name} {} files / {} chunks", c["files"], c["chunks"]))
            .collect();
        let _ = writeln!(out, "  by chunker: {}", line.join("; "));
    }
    let e = &v["embedding"];
    match e["model"].as_str() {
        Some(model) => {
            let _ = writeln!(out, "Embeddings: {}; vector search {}", coverage(model, e), e["vector_search"].as_str().unwrap_or_default());
        }
        None => {
            let _ = writeln!(
                out,
                "Embeddings: {}: vector search {} (see `code-intel model show`)",
                e["configured"].as_str().unwrap_or_default(),
                e["vector_search"].as_str().unwrap_or_default()
            );
        }
    }
    let e = &v["english_embedding"];
    if !e.is_null() {
        let answers = if e["answers_english"].as_bool() == Some(true) {
            "answers requests in English"
        } else if e["model"] == v["embedding"]["model"] {
            "the main model itself: it answers every request"
        } else {
            "not used yet: requests in English use the main model until every chunk has its vector (`code-intel index`)"
        };
        match e["model"].as_str() {
            Some(model) => {
                let _ = writeln!(out, "English:    {}; {answers}", coverage(model, e));
            }
            None => {
                let _ = writeln!(
                    out,
                    "English:    {}: {}; requests in English use the main model (`bash scripts/fetch-english-model` installs it)",
                    e["configured"].as_str().unwrap_or_default(),
                    e["vector_search"].as_str().unwrap_or_default()
                );
            }
        }
    }
    let _ = writeln!(
        out,
        "Fallbacks after a plugin failure: {}; plugin failures recorded: {}",
        n("fallback_after_failure"),
        n("plugin_failures")
    );
    for f in v["recent_plugin_failures"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "  {}: {} ({}): {}",
            f["path"].as_str().unwrap_or_default(),
            f["plugin"].as_str().unwrap_or_default(),
            f["kind"].as_str().unwrap_or_default(),
            f["message"].as_str().unwrap_or_default()
        );
    }
    if let Some(skipped) = sync["skipped"].as_array().filter(|s| !s.is_empty()) {
        let mut reasons: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
        for s in skipped {
            *reasons.entry(s["reason"].as_str().unwrap_or("unknown")).or_default() += 1;
        }
        let line: Vec<String> = reasons.iter().map(|(r, c)| format!("{r} {c}")).collect();
        let _ = writeln!(out, "Skipped at last sync: {} ({})", skipped.len(), line.join(", "));
    }
    match v["check"]["ok"].as_bool() {
        Some(true) => {
            let _ = writeln!(out, "Check:      ok (integrity, full-text index, chunk rows)");
        }
        Some(false) => {
            let _ = writeln!(
                out,
                "Check:      DAMAGED: {}\n  move .code-intel/index.db (with its -wal and -shm files) aside and run `code-intel index` to build it again; the sessions recorded in it stay in the old file",
                v["check"]["problems"].as_str().unwrap_or_default()
            );
        }
        None => {}
    }
    out
}

fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{n} B") } else { format!("{value:.1} {}", UNITS[unit]) }
}

fn duration(seconds: i64) -> String {
    match seconds {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min", s / 60),
        s if s < 86_400 => format!("{:.1} h", s as f64 / 3600.0),
        s => format!("{:.1} days", s as f64 / 86_400.0),
    }
}
