//! `code-intel search QUERY`: lexical search over the chunk index.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use code_intel_core::config;
use code_intel_search::lexical::{self, DEFAULT_LIMIT, LexicalQuery};
use code_intel_store::Store;

/// Search the index.
#[derive(clap::Args, Debug)]
pub struct SearchArgs {
    /// What to look for: identifiers in any spelling (`getUserName`,
    /// `get_user_name`) or words (`user name`).
    pub query: String,
    /// Repository root (default: as for `index`).
    #[arg(long, value_name = "PATH")]
    pub repo: Option<PathBuf>,
    /// Only files whose repo-relative path matches this glob (`app/**`,
    /// `*.py`; a trailing `/` means the whole directory).
    #[arg(long, value_name = "GLOB")]
    pub path: Option<String>,
    /// Only chunks of this kind (`function`, `class`, `method`, ...); repeatable.
    #[arg(long = "kind", value_name = "KIND")]
    pub kinds: Vec<String>,
    /// Number of results.
    #[arg(short = 'n', long = "limit", default_value_t = DEFAULT_LIMIT)]
    pub limit: usize,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &SearchArgs) -> ExitCode {
    super::index::init_logging();
    match search(args) {
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

fn search(args: &SearchArgs) -> Result<String, String> {
    let root = super::index::resolve_repo(args.repo.as_deref())?;
    let store = Store::open_existing(&config::database_path(&root)).map_err(|e| e.to_string())?;
    let query = LexicalQuery { text: &args.query, path_glob: args.path.as_deref(), kinds: args.kinds.clone(), limit: args.limit };
    let started = std::time::Instant::now();
    let hits = lexical::search(&store, &query).map_err(|e| e.to_string())?;
    let query_ms = started.elapsed().as_secs_f64() * 1000.0;
    if args.json {
        let value = serde_json::json!({ "query": args.query, "mode": "lexical", "query_ms": query_ms, "results": hits });
        return Ok(serde_json::to_string_pretty(&value).unwrap_or_default() + "\n");
    }
    if hits.is_empty() {
        return Ok(format!("no matches for {:?}\n", args.query));
    }
    let mut out = String::new();
    for hit in &hits {
        let qualified = hit.qualified_name.as_deref().filter(|q| *q != hit.name).map(|q| format!("  ({q})")).unwrap_or_default();
        let _ = writeln!(
            out,
            "{}:{}-{}  {} {}{qualified}  [{:.1}]",
            hit.path, hit.start_line, hit.end_line, hit.kind, hit.name, hit.score
        );
        if let Some(signature) = hit.signature.as_deref().and_then(|s| s.lines().next()) {
            let _ = writeln!(out, "    {}", signature.trim());
        }
    }
    Ok(out)
}
