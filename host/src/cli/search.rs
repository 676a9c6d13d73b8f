//! `code-intel search QUERY [--mode lexical|semantic|hybrid]`: search the
//! chunk index with the same ranking the MCP server's `semantic_search`
//! uses (keywords, vectors, or both fused), each hit with the files linked
//! to it (model, migrations, routes, views).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use code_intel_core::config;
use code_intel_embed::{EncoderOptions, ModelHandle, ResolveOptions, install_hint};
use code_intel_search::hybrid::{self, Arm, Mode, SearchHit, SearchRequest, SearchResponse};
use code_intel_search::lexical::DEFAULT_LIMIT;
use code_intel_search::links::MAX_LINKED_FILES;
use code_intel_search::semantic::{self, Collection, Filters, VectorSearch, VectorStatus, vectors_dir};
use code_intel_store::Store;
use serde_json::json;

/// Search the index.
#[derive(clap::Args, Debug)]
pub struct SearchArgs {
    /// What to look for: identifiers in any spelling (`getUserName`,
    /// `get_user_name`), words (`user name`), or a question (`where do users
    /// log in`).
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
    /// Ranking: `lexical` (keywords), `semantic` (embedding similarity) or
    /// `hybrid` (both fused). Default: hybrid when an embedding model is
    /// available and the index has vectors, else lexical.
    #[arg(long, value_name = "MODE")]
    pub mode: Option<Mode>,
    /// Number of results.
    #[arg(short = 'n', long = "limit", default_value_t = DEFAULT_LIMIT)]
    pub limit: usize,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Search every repository published to the shared store (config
    /// `shared_store` / `CODE_INTEL_SHARED_STORE`) instead of this one's index;
    /// each hit names its repository.
    #[arg(long)]
    pub shared: bool,
    /// With `--shared`: search only this published repository, by the name
    /// `code-intel index` published it under (`github.com/org/app`) or its
    /// last parts (`org/app`, `app`) when no other published name ends so;
    /// repeatable.
    #[arg(long = "repository", value_name = "NAME", requires = "shared")]
    pub repositories: Vec<String>,
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
    if args.shared
        && let Some(out) = super::shared::search(&args.query, &root, &super::index::load_config(&root)?, &args.repositories, args.limit, args.json)?
    {
        return Ok(out);
    }
    let store = Store::open_existing(&config::database_path(&root)).map_err(|e| e.to_string())?;
    let config = super::index::load_config(&root)?;

    // One-shot process: load the model here, unless keywords were asked for.
    // The English model answers a request in English and, in hybrid mode,
    // embeds another one read in English (loaded meanwhile).
    let english = (args.mode != Some(Mode::Lexical) && (semantic::is_english(&args.query) || args.mode != Some(Mode::Semantic)))
        .then(|| semantic::english_model_options(&config, &root))
        .flatten()
        .map(|options| ModelHandle::spawn(options, EncoderOptions::default()));
    let model = if args.mode == Some(Mode::Lexical) {
        ModelHandle::unavailable("not loaded (--mode lexical)")
    } else {
        ModelHandle::load_blocking(
            &ResolveOptions::new(Some(&config.embedding_model), Some(&root)).with_endpoint(config.embedding_endpoint.as_deref()),
            &EncoderOptions::default(),
        )
    };
    let dir = vectors_dir(&config::state_dir(&root));
    let mut vectors = VectorSearch::new(model, Some(dir.clone()));
    if let Some(english) = english {
        let _ = english.wait(semantic::MODEL_WAIT);
        vectors = vectors.with_english(VectorSearch::new(english, Some(semantic::english_dir(&dir))));
    }
    let status = vectors.status(&store, Duration::ZERO).map_err(|e| e.to_string())?;
    let mode = match args.mode {
        Some(m) => m,
        None => match &status {
            VectorStatus::Partial(0) => {
                eprintln!("note: lexical search: no chunk has a vector yet; run `code-intel index` to embed them");
                Mode::Lexical
            }
            s if s.usable() => Mode::Hybrid,
            VectorStatus::Unavailable(reason) => {
                eprintln!("note: lexical search: semantic search unavailable: {reason}; {}", install_hint());
                Mode::Lexical
            }
            other => {
                eprintln!("note: lexical search: vector search is {other}");
                Mode::Lexical
            }
        },
    };

    let request = SearchRequest {
        query: args.query.clone(),
        mode: Some(mode),
        collection: Collection::Auto,
        n_results: args.limit.clamp(1, hybrid::MAX_RESULTS),
        filters: Filters { path_glob: args.path.clone(), kinds: args.kinds.clone() },
        weights: config.search_weights.clone(),
        model_wait: Duration::ZERO,
        links: MAX_LINKED_FILES,
    };
    let started = std::time::Instant::now();
    let response = hybrid::search(&store, Some(&vectors), &request).map_err(|e| e.to_string())?;
    let query_ms = started.elapsed().as_secs_f64() * 1000.0;
    if args.json {
        return Ok(serde_json::to_string_pretty(&to_json(&response, query_ms)).unwrap_or_default() + "\n");
    }
    if let Some(message) = response.message.as_deref().filter(|_| !response.short_circuit) {
        eprintln!("note: {message}");
    }
    Ok(render(&args.query, &response, args.mode != Some(Mode::Lexical)))
}

/// `lexical`, `vector`, or `lexical+vector`.
fn arms(hit: &SearchHit) -> String {
    let names: Vec<&str> = hit
        .arms
        .iter()
        .map(|a| match a {
            Arm::Lexical => "lexical",
            Arm::Vector => "vector",
        })
        .collect();
    names.join("+")
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Lexical => "lexical",
        Mode::Semantic => "semantic",
        Mode::Hybrid => "hybrid",
    }
}

fn to_json(r: &SearchResponse, query_ms: f64) -> serde_json::Value {
    let results: Vec<serde_json::Value> = r
        .hits
        .iter()
        .map(|h| {
            json!({
                "path": h.file,
                "start_line": h.start_line,
                "end_line": h.end_line,
                "file_rank": h.file_rank,
                "kind": h.kind,
                "name": h.name,
                "qualified_name": h.qualified_name,
                "score": h.score,
                "arms": h.arms,
                "vector_score": h.vector_score,
                "keyword_score": h.keyword_score,
                "linked_files": h.linked_files,
            })
        })
        .collect();
    json!({
        "query": r.query,
        "mode": mode_name(r.mode),
        "vector_search": r.vector_search,
        "vector_model": r.vector_model,
        "english_query": r.english_query,
        "short_circuit": r.short_circuit,
        "no_confident_match": r.no_confident_match,
        "message": r.message,
        "query_ms": query_ms,
        "results": results,
        "map_hits": r.map_hits,
    })
}

/// The text answer. `vector_wanted`: the user did not ask for keywords only,
/// so the vector status is worth a word in the header.
fn render(query: &str, r: &SearchResponse, vector_wanted: bool) -> String {
    let mut out = String::new();
    if vector_wanted {
        // The reason for an unavailable model is in the note on stderr.
        let vector = if r.vector_search.starts_with("unavailable") { "unavailable" } else { r.vector_search.as_str() };
        let _ = writeln!(out, "{} search (vector search: {vector})", mode_name(r.mode));
    } else {
        let _ = writeln!(out, "{} search", mode_name(r.mode));
    }
    if let Some(english) = &r.english_query {
        let _ = writeln!(out, "also searched in English as: {english}");
    }
    if r.short_circuit {
        if let Some(message) = &r.message {
            let _ = writeln!(out, "{message}");
        }
    }
    for m in &r.map_hits {
        let label = if r.short_circuit { "agreement" } else { "hint from an agreement" };
        let _ = writeln!(out, "{label} [{:.2}]: {}", m.score, m.text);
        if !m.symbols.is_empty() {
            let _ = writeln!(out, "    symbols: {}", m.symbols.join(", "));
        }
        if !m.files.is_empty() {
            let _ = writeln!(out, "    files: {}", m.files.join(", "));
        }
    }
    if r.short_circuit {
        return out;
    }
    if r.hits.is_empty() {
        let _ = writeln!(out, "no matches for {query:?}");
        return out;
    }
    for hit in &r.hits {
        let qualified = hit.qualified_name.as_deref().filter(|q| *q != hit.name).map(|q| format!("  ({q})")).unwrap_or_default();
        let _ = writeln!(
            out,
            "{:.3}  {}:{}-{}  {} {}{qualified}  [{}]",
            hit.score,
            hit.file,
            hit.start_line,
            hit.end_line,
            hit.kind,
            hit.name,
            arms(hit)
        );
        crate::mcp::render::linked_files(&mut out, &hit.linked_files);
    }
    out
}
