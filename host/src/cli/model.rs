//! `code-intel model show|install|embed`: which embedding model semantic
//! search uses, installing one from a local folder, and the vectors (and
//! token ids) it gives texts.

use std::path::PathBuf;
use std::process::ExitCode;

use code_intel_core::config::{self, Config};
use code_intel_embed::{Encoder, EncoderOptions, ResolveOptions, ResolvedModel, Role, install, install_hint, models_dir, resolve};

/// Show or install the embedding model.
#[derive(clap::Args, Debug)]
pub struct ModelArgs {
    #[command(subcommand)]
    pub command: ModelCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum ModelCommand {
    /// Show the model semantic search resolves to (where from, dimension),
    /// or why there is none.
    Show {
        /// Repository whose config.json names the model (default: the
        /// repository containing the current directory).
        #[arg(long)]
        repo: Option<PathBuf>,
        /// Only resolve, do not load the weights (faster; no dimension check).
        #[arg(long)]
        no_load: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Copy a local sentence-transformers model folder (config.json,
    /// model.safetensors, tokenizer.json) into the models folder the
    /// resolver searches.
    Install {
        /// The model folder.
        dir: PathBuf,
        /// Name to install under: the `embedding_model` value that will find
        /// it (default: the folder's name). A hub id such as
        /// intfloat/multilingual-e5-small makes the default config use it.
        #[arg(long)]
        name: Option<String>,
        /// Load the model after copying, to check it works.
        #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
        check: bool,
    },
    /// Print the vectors the model gives texts, as JSON: one object per
    /// text with its token ids and its unit vector (the text as it is
    /// embedded: after the model's query or passage prompt, truncated to
    /// its window).
    Embed {
        /// Texts to embed; none: one JSON array of strings on standard input.
        texts: Vec<String>,
        /// Which side the texts are on: `query` or `passage`.
        #[arg(long, default_value = "query", value_parser = ["query", "passage"])]
        role: String,
        /// Repository whose config.json names the model (default: the
        /// repository containing the current directory).
        #[arg(long)]
        repo: Option<PathBuf>,
        /// Print only the token ids, not the vectors.
        #[arg(long)]
        ids_only: bool,
    },
}

pub fn run(args: &ModelArgs) -> ExitCode {
    match &args.command {
        ModelCommand::Show { repo, no_load, json } => show(repo.clone(), *no_load, *json),
        ModelCommand::Install { dir, name, check } => install_cmd(dir, name.as_deref(), *check),
        ModelCommand::Embed { texts, role, repo, ids_only } => embed(texts, role, repo.clone(), *ids_only),
    }
}

/// The repository's configuration (warnings on stderr), or the error printed.
fn repo_config(repo: Option<PathBuf>) -> Option<(PathBuf, Config)> {
    let start = repo.unwrap_or_else(|| PathBuf::from("."));
    let root = config::find_repo_root(&start);
    match Config::load(&root) {
        Ok((config, warnings)) => {
            for w in warnings {
                eprintln!("warning: config.json {}: {}", w.key, w.message);
            }
            Some((root, config))
        }
        Err(e) => {
            eprintln!("error: {e}");
            None
        }
    }
}

fn show(repo: Option<PathBuf>, no_load: bool, json: bool) -> ExitCode {
    let Some((root, config)) = repo_config(repo) else { return ExitCode::FAILURE };
    let opts = ResolveOptions::new(Some(&config.embedding_model), Some(&root));
    let mut out = serde_json::json!({ "configured": config.embedding_model });
    let resolved = match resolve(&opts) {
        Ok(r) => r,
        Err(e) => {
            out["status"] = format!("unavailable: {e}").into();
            out["hint"] = install_hint().into();
            let others = installed_models(&opts, &config.embedding_model);
            out["installed"] = others.iter().map(|(name, dir)| serde_json::json!({"name": name, "dir": dir.display().to_string()})).collect();
            let (english, english_line) = english_model(&config, &root);
            out["english"] = english;
            if json {
                println!("{out:#}");
            } else {
                println!("{english_line}");
                println!("embedding model: {}", config.embedding_model);
                println!("status: unavailable: {e}");
                for (name, dir) in &others {
                    println!(
                        "installed here: {name} ({}); to use it, set \"embedding_model\": \"{name}\" in {}",
                        dir.display(),
                        config::config_path(&root).display()
                    );
                }
                println!("{}", install_hint());
            }
            return ExitCode::FAILURE;
        }
    };
    out["name"] = resolved.name.clone().into();
    out["dir"] = resolved.dir.display().to_string().into();
    out["source"] = resolved.source.to_string().into();
    let mut lines = vec![
        format!("embedding model: {}", resolved.name),
        format!("folder: {}", resolved.dir.display()),
        format!("found in: {}", resolved.source),
    ];
    let mut ok = true;
    if no_load {
        out["status"] = "resolved (not loaded)".into();
        lines.push("status: resolved (not loaded; drop --no-load to check it)".to_string());
    } else {
        match Encoder::load(&resolved, &EncoderOptions::default()) {
            Ok(encoder) => {
                let info = encoder.info();
                out["status"] = "ready".into();
                out["dim"] = info.dim.into();
                out["max_tokens"] = info.max_tokens.into();
                out["layers"] = info.layers.into();
                out["key"] = info.key.to_string().into();
                out["revision"] = info.key.revision.clone().into();
                out["pooling"] = serde_json::to_value(info.pooling).unwrap_or_default();
                out["normalization"] = serde_json::to_value(info.normalization).unwrap_or_default();
                out["prompts"] = serde_json::to_value(&info.prompts).unwrap_or_default();
                out["derived"] = serde_json::to_value(&info.derived).unwrap_or_default();
                if let Some(derived) = &info.derived {
                    lines.push(format!("weights: {derived}; quantisation: {}", derived.quantization));
                }
                lines.push(format!("dimension: {}", info.dim));
                lines.push(format!("window: {} tokens, {} layers, {:?} pooling", info.max_tokens, info.layers, info.pooling));
                lines.push(format!(
                    "prompts: query {:?}, passage {:?} (from {})",
                    info.prompts.query, info.prompts.passage, info.prompts.from
                ));
                lines.push(format!("key: {}", info.key));
                lines.push("status: ready".to_string());
            }
            Err(e) => {
                ok = false;
                out["status"] = format!("unavailable: {e}").into();
                lines.push(format!("status: unavailable: {e}"));
            }
        }
    }
    let (english, english_line) = english_model(&config, &root);
    out["english"] = english;
    lines.push(english_line);
    if json {
        println!("{out:#}");
    } else {
        println!("{}", lines.join("\n"));
    }
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// Where the English model (config `english_model`) is found, as JSON and
/// as a line, without loading it.
fn english_model(config: &code_intel_core::config::Config, root: &std::path::Path) -> (serde_json::Value, String) {
    let Some(options) = code_intel_search::semantic::english_model_options(config, root) else {
        let why = if config.english_model.is_none() { "off (\"english_model\": null)" } else { "off (embedding_endpoint is set)" };
        return (serde_json::json!({ "status": why }), format!("English model: {why}"));
    };
    match resolve(&options) {
        Ok(r) => (
            serde_json::json!({ "configured": options.spec, "name": r.name, "dir": r.dir.display().to_string(), "source": r.source.to_string(), "status": "resolved" }),
            format!("English model (answers requests in English): {} in {} (found in: {})", r.name, r.dir.display(), r.source),
        ),
        Err(e) => (
            serde_json::json!({ "configured": options.spec, "status": format!("unavailable: {e}"), "hint": "bash scripts/fetch-english-model" }),
            format!("English model: {}: unavailable: {e}; requests in English use the embedding model (`bash scripts/fetch-english-model` installs it)", options.spec),
        ),
    }
}

/// Complete model folders on this machine other than `configured`: the
/// models folder (`model install`) and the Hugging Face hub cache.
fn installed_models(opts: &ResolveOptions, configured: &str) -> Vec<(String, PathBuf)> {
    let complete = |dir: &std::path::Path| ["config.json", "model.safetensors", "tokenizer.json"].iter().all(|f| dir.join(f).is_file());
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&opts.models_dir) {
        for e in entries.flatten() {
            let dir = e.path();
            let name = e.file_name().to_string_lossy().replace("--", "/");
            if !name.starts_with('.') && complete(&dir) {
                found.push((name, dir));
            }
        }
    }
    if let Ok(entries) = std::fs::read_dir(&opts.hub_cache) {
        for e in entries.flatten() {
            let Some(id) = e.file_name().to_string_lossy().strip_prefix("models--").map(|n| n.replace("--", "/")) else { continue };
            let Ok(snapshots) = std::fs::read_dir(e.path().join("snapshots")) else { continue };
            if let Some(dir) = snapshots.flatten().map(|s| s.path()).find(|d| complete(d)) {
                found.push((id, dir));
            }
        }
    }
    let wanted = configured.trim_matches('/');
    let short = wanted.rsplit('/').next().unwrap_or(wanted);
    found.retain(|(name, _)| name != wanted && name != short);
    found.sort();
    found.dedup_by(|a, b| a.0 == b.0);
    found
}

fn embed(texts: &[String], role: &str, repo: Option<PathBuf>, ids_only: bool) -> ExitCode {
    let texts: Vec<String> = if texts.is_empty() {
        let mut input = String::new();
        if let Err(e) = std::io::Read::read_to_string(&mut std::io::stdin(), &mut input) {
            eprintln!("error: cannot read standard input: {e}");
            return ExitCode::FAILURE;
        }
        match serde_json::from_str(&input) {
            Ok(texts) => texts,
            Err(e) => {
                eprintln!("error: standard input is not a JSON array of strings ({e}); give the texts as arguments or as [\"text\", ...]");
                return ExitCode::FAILURE;
            }
        }
    } else {
        texts.to_vec()
    };
    let role = if role == "passage" { Role::Passage } else { Role::Query };
    let Some((root, config)) = repo_config(repo) else { return ExitCode::FAILURE };
    let resolved = match resolve(&ResolveOptions::new(Some(&config.embedding_model), Some(&root))) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: no embedding model: {e}; {}", install_hint());
            return ExitCode::FAILURE;
        }
    };
    let encoder = match Encoder::load(&resolved, &EncoderOptions::default()) {
        Ok(encoder) => encoder,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let ids = match encoder.token_ids(&refs, role) {
        Ok(ids) => ids,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let vectors = if ids_only {
        Vec::new()
    } else {
        match encoder.embed(&refs, role, &|_, _| {}) {
            Ok(vectors) => vectors,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        }
    };
    let items: Vec<serde_json::Value> = texts
        .iter()
        .zip(ids)
        .enumerate()
        .map(|(i, (text, ids))| {
            let mut item = serde_json::json!({ "text": text, "ids": ids });
            if let Some(vector) = vectors.get(i) {
                item["vector"] = vector.clone().into();
            }
            item
        })
        .collect();
    println!("{}", serde_json::json!({ "model": encoder.info().key.to_string(), "role": role_name(role), "texts": items }));
    ExitCode::SUCCESS
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Query => "query",
        Role::Passage => "passage",
    }
}

fn install_cmd(dir: &std::path::Path, name: Option<&str>, check: bool) -> ExitCode {
    let target = models_dir();
    let dest = match install(dir, name, &target) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: cannot install the model: {e}");
            return ExitCode::FAILURE;
        }
    };
    let installed_name = dest.file_name().map_or_else(String::new, |n| n.to_string_lossy().replace("--", "/"));
    if check {
        let resolved = ResolvedModel {
            name: installed_name.clone(),
            dir: dest.clone(),
            source: code_intel_embed::ModelSource::Installed,
        };
        if let Err(e) = Encoder::load(&resolved, &EncoderOptions { workers: 1, ..EncoderOptions::default() }) {
            eprintln!("error: copied to {}, but it does not load: {e}", dest.display());
            return ExitCode::FAILURE;
        }
    }
    println!("installed {} in {}", installed_name, dest.display());
    println!("use it with \"embedding_model\": \"{installed_name}\" in .code-intel/config.json");
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installed_models_are_named_except_the_configured_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = ResolveOptions::new(Some("intfloat/multilingual-e5-small"), None);
        opts.models_dir = dir.path().join("models");
        opts.hub_cache = dir.path().join("hub");
        let complete = |d: &std::path::Path| {
            std::fs::create_dir_all(d).unwrap();
            for f in ["config.json", "model.safetensors", "tokenizer.json"] {
                std::fs::write(d.join(f), "x").unwrap();
            }
        };
        complete(&opts.models_dir.join("all-MiniLM-L6-v2"));
        complete(&opts.models_dir.join("intfloat--multilingual-e5-small"));
        std::fs::create_dir_all(opts.models_dir.join("half-copied")).unwrap();
        complete(&opts.hub_cache.join("models--BAAI--bge-small-en-v1.5/snapshots/abc"));
        let names: Vec<String> = installed_models(&opts, "intfloat/multilingual-e5-small").into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["BAAI/bge-small-en-v1.5", "all-MiniLM-L6-v2"]);
    }
}
