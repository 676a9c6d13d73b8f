//! `code-intel model show|install`: which embedding model semantic search
//! uses, and installing one from a local folder.

use std::path::PathBuf;
use std::process::ExitCode;

use code_intel_core::config::{self, Config};
use code_intel_embed::{Encoder, EncoderOptions, ResolveOptions, install, install_hint, models_dir, resolve};

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
}

pub fn run(args: &ModelArgs) -> ExitCode {
    match &args.command {
        ModelCommand::Show { repo, no_load, json } => show(repo.clone(), *no_load, *json),
        ModelCommand::Install { dir, name, check } => install_cmd(dir, name.as_deref(), *check),
    }
}

fn show(repo: Option<PathBuf>, no_load: bool, json: bool) -> ExitCode {
    let start = repo.unwrap_or_else(|| PathBuf::from("."));
    let root = config::find_repo_root(&start);
    let (config, warnings) = match Config::load(&root) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    for w in warnings {
        eprintln!("warning: config.json {}: {}", w.key, w.message);
    }
    let opts = ResolveOptions::new(Some(&config.embedding_model), Some(&root));
    let mut out = serde_json::json!({ "configured": config.embedding_model });
    let resolved = match resolve(&opts) {
        Ok(r) => r,
        Err(e) => {
            out["status"] = format!("unavailable: {e}").into();
            out["hint"] = install_hint().into();
            if json {
                println!("{out:#}");
            } else {
                println!("embedding model: {}", config.embedding_model);
                println!("status: unavailable: {e}");
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
                out["revision"] = info.key.revision.clone().into();
                out["e5_prefixes"] = info.e5_prefixes.into();
                lines.push(format!("dimension: {}", info.dim));
                lines.push(format!("window: {} tokens, {} layers, {:?} pooling", info.max_tokens, info.layers, info.pooling));
                lines.push(format!("e5 query/passage prefixes: {}", if info.e5_prefixes { "yes" } else { "no" }));
                lines.push(format!("revision: {}", info.key.revision));
                lines.push("status: ready".to_string());
            }
            Err(e) => {
                ok = false;
                out["status"] = format!("unavailable: {e}").into();
                lines.push(format!("status: unavailable: {e}"));
            }
        }
    }
    if json {
        println!("{out:#}");
    } else {
        println!("{}", lines.join("\n"));
    }
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
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
        let resolved = code_intel_embed::ResolvedModel {
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
