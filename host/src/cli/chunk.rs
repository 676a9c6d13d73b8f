//! `code-intel chunk FILE`: the chunks the loaded plugins make of one file,
//! which plugin made them, and which plugins declined or failed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use code_intel_core::Chunker;
use code_intel_plugins::{HostOptions, PluginHost};

/// Show how a file is chunked.
#[derive(clap::Args, Debug)]
pub struct ChunkArgs {
    /// The file to chunk.
    pub file: PathBuf,
    /// Repository root: plugins see the file's path relative to it, and its
    /// `.code-intel/plugins/` is searched. Default: the nearest ancestor of
    /// FILE holding `.code-intel` or `.git`, else the current directory.
    #[arg(long)]
    pub repo: Option<PathBuf>,
    /// Print JSON (the chunked file: chunker, chunks, declines, failures).
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &ChunkArgs) -> ExitCode {
    match chunk(args) {
        Ok(out) => {
            print!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn find_repo(file: &Path) -> Option<PathBuf> {
    file.ancestors().skip(1).find(|d| d.join(".code-intel").is_dir() || d.join(".git").exists()).map(Path::to_path_buf)
}

fn chunk(args: &ChunkArgs) -> Result<String, String> {
    let file = args
        .file
        .canonicalize()
        .map_err(|e| format!("{}: {e}; give an existing file", args.file.display()))?;
    if !file.is_file() {
        return Err(format!("{} is not a file", file.display()));
    }
    let repo = match &args.repo {
        Some(r) => r.canonicalize().map_err(|e| format!("--repo {}: {e}", r.display()))?,
        None => find_repo(&file)
            .or_else(|| std::env::current_dir().ok().and_then(|d| d.canonicalize().ok()))
            .ok_or("cannot determine the repository root; pass --repo")?,
    };
    let rel = file.strip_prefix(&repo).map_err(|_| {
        format!("{} is not inside the repository {}; pass --repo with a directory that contains it", file.display(), repo.display())
    })?;
    let rel = rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
    let bytes = std::fs::read(&file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let content = String::from_utf8_lossy(&bytes);

    let host = PluginHost::discover(Some(&repo), HostOptions::default());
    let chunked = host.chunk_file(&rel, &content);
    if args.json {
        let value = serde_json::json!({
            "path": rel,
            "chunker": chunked.chunker,
            "declined": chunked.declined.iter().map(|(p, r)| serde_json::json!({"plugin": p, "reason": r})).collect::<Vec<_>>(),
            "failures": chunked.failures,
            "chunks": chunked.chunks,
        });
        return Ok(serde_json::to_string_pretty(&value).unwrap_or_default() + "\n");
    }
    let mut out = String::new();
    let _ = writeln!(out, "{rel}: {} chunk(s) by {}", chunked.chunks.len(), chunked.chunker);
    for (plugin, reason) in &chunked.declined {
        let _ = writeln!(out, "  declined by {plugin}: {reason}");
    }
    for f in &chunked.failures {
        let _ = writeln!(out, "  FAILED {} ({:?}): {}", f.plugin, f.kind, f.message);
    }
    for c in &chunked.chunks {
        let qualified = c.qualified_name.as_deref().map(|q| format!("  ({q})")).unwrap_or_default();
        let _ = writeln!(out, "  {:>5}-{:<5} {:<12} {}{qualified}", c.start_line, c.end_line, c.kind, c.name);
        if let Some(sig) = &c.signature {
            let _ = writeln!(out, "              {}", sig.lines().next().unwrap_or_default());
        }
        if !c.related_symbols.is_empty() {
            let _ = writeln!(out, "              related: {}", c.related_symbols.join(", "));
        }
    }
    Ok(out)
}
