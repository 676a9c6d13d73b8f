//! `code-intel index [PATH] [--force] [--no-embed]`: bring the repository's
//! index up to date, then embed the new chunks for semantic search when an
//! embedding model resolves, with progress bars on stderr and a summary on
//! stdout.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use code_intel_core::config::{self, Config};
use code_intel_embed::{EmbedProgress, EmbedReport, EncoderOptions, ModelHandle, ModelKey, ModelState, ResolveOptions, embed_pending_keeping, install_hint};
use code_intel_index::{Phase, Progress, SyncOptions, SyncReport, sync};
use code_intel_plugins::{HostOptions, PluginHost};
use code_intel_search::semantic::{VectorSearch, english_dir, vectors_dir};
use code_intel_store::Store;
use indicatif::{ProgressBar, ProgressStyle};

/// Skipped files and plugin failures listed in the summary before "... and
/// N more" (the full lists are in `--json`).
const SUMMARY_LIST_LIMIT: usize = 20;

/// How long `index` waits, after the sync, for the model that started
/// loading in the background when the command began. Loading a small model
/// takes a second or two; a first download is bounded by the resolver's own
/// timeouts, so this only guards against a stuck load.
const MODEL_WAIT: Duration = Duration::from_secs(15 * 60);

/// Index (or re-sync) a repository.
#[derive(clap::Args, Debug)]
pub struct IndexArgs {
    /// Repository root (default: the nearest directory at or above the
    /// current one holding `.code-intel/` or `.git`, else the current one).
    pub path: Option<PathBuf>,
    /// Re-read and re-chunk every file, not only changed ones.
    #[arg(long)]
    pub force: bool,
    /// Do not embed chunks for semantic search (only chunk and index them).
    #[arg(long)]
    pub no_embed: bool,
    /// Print the sync report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &IndexArgs) -> ExitCode {
    init_logging();
    match index(args) {
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

/// Logs (warnings and up by default) go to stderr; `CODE_INTEL_LOG` takes a
/// tracing filter. The model service's own "unavailable" log is left out by
/// default: the commands report the model's state themselves.
pub(super) fn init_logging() {
    let filter = crate::log_filter("warn,code_intel_embed::service=off");
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
}

/// A bar style whose `{rate}` prints at most one decimal (indicatif's
/// `{per_sec}` prints four).
fn bar_style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .map(|s| {
            s.with_key("rate", |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{}", rate(state.per_sec()));
            })
        })
        .unwrap_or_else(|_| ProgressStyle::default_bar())
}

/// `12.3/s`, `1234/s`.
fn rate(per_sec: f64) -> String {
    if per_sec >= 100.0 { format!("{per_sec:.0}/s") } else { format!("{per_sec:.1}/s") }
}

/// The repository root for an optional PATH argument (see [`IndexArgs::path`]).
pub(super) fn resolve_repo(path: Option<&Path>) -> Result<PathBuf, String> {
    match path {
        Some(p) => {
            let root = p.canonicalize().map_err(|e| format!("{}: {e}", p.display()))?;
            if !root.is_dir() {
                return Err(format!("{} is not a directory; give the repository root", root.display()));
            }
            Ok(root)
        }
        None => {
            let cwd = std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
            Ok(config::find_repo_root(&cwd))
        }
    }
}

/// Loads the config, printing its warnings on stderr.
pub(super) fn load_config(root: &Path) -> Result<Config, String> {
    let (config, warnings) = Config::load(root).map_err(|e| e.to_string())?;
    for warning in warnings {
        eprintln!("warning: {}: {warning}", config::config_path(root).display());
    }
    Ok(config)
}

fn index(args: &IndexArgs) -> Result<String, String> {
    let started = std::time::Instant::now();
    let root = resolve_repo(args.path.as_deref())?;
    // Without PATH, never index a directory that is no repository (a home
    // directory, say) by accident.
    if args.path.is_none() && !root.join(".git").exists() && !config::state_dir(&root).is_dir() {
        return Err(format!(
            "{} is not inside a repository (no .git or .code-intel/ here or above); \
             run this in a repository, give the directory to index (`code-intel index PATH`), or run `code-intel init` here first",
            root.display()
        ));
    }
    let config = load_config(&root)?;
    let mut store = Store::open(&config::database_path(&root)).map_err(|e| e.to_string())?;
    let host = PluginHost::discover(Some(&root), HostOptions::default());
    for rejection in host.rejections() {
        eprintln!("warning: plugin {} not loaded: {}", rejection.path.display(), rejection.reason);
    }
    if host.plugins().next().is_none() {
        eprintln!("warning: no chunking plugins found; every file is indexed as line windows (see `code-intel plugin list`)");
    }

    // The model loads on a background thread while the files are synced.
    let resolve_options = ResolveOptions::new(Some(&config.embedding_model), Some(&root)).with_endpoint(config.embedding_endpoint.as_deref());
    let model = (!args.no_embed).then(|| ModelHandle::spawn(resolve_options.clone(), EncoderOptions::default()));
    let english_options = if args.no_embed { None } else { code_intel_search::semantic::english_model_options(&config, &root) };
    let english_model = english_options.as_ref().map(|o| ModelHandle::spawn(o.clone(), EncoderOptions::default()));
    // The shared store, when configured: a cache and publication target;
    // whatever happens to it, the index is built locally.
    let (shared, mut shared_report) = super::shared::connect(&config);
    let shared_chunker =
        shared.as_ref().map(|s| code_intel_shared::SharedChunker::new(&host, s, super::shared::chunker_key(&host)));
    let chunker: &dyn code_intel_core::Chunker = match &shared_chunker {
        Some(c) => c,
        None => &host,
    };

    let bar = ProgressBar::new_spinner();
    bar.enable_steady_tick(Duration::from_millis(120));
    bar.set_message("scanning");
    let progress = |p: Progress| match p.phase {
        Phase::Waiting => bar.set_message("waiting for another code-intel sync of this repository"),
        Phase::Scanning => bar.set_message("scanning"),
        Phase::Indexing => {
            if bar.length() != Some(p.total) {
                bar.set_style(bar_style("{spinner} indexing {bar:30} {pos}/{len} files ({rate}, eta {eta})"));
                bar.set_length(p.total);
            }
            bar.set_position(p.done);
        }
        Phase::Done => {}
    };
    let options = SyncOptions { force: args.force, cancel: None };
    let report = sync(&root, &mut store, chunker, &config, options, &progress);
    bar.finish_and_clear();
    let report = report.map_err(|e| e.to_string())?;
    if let (Some(shared), Some(chunker)) = (&shared, shared_chunker) {
        let chunked = chunker.finish();
        shared_report.files_from_store = chunked.files_from_store;
        shared_report.chunks_from_store = chunked.chunks_from_store;
        shared_report.errors.extend(chunked.error.map(|e| format!("taking chunk lists: {e}")));
        match shared.publish_chunk_lists(&super::shared::chunker_key(&host), &chunked.to_publish) {
            Ok(n) => shared_report.chunk_lists_published = n,
            Err(e) => shared_report.errors.push(format!("publishing chunk lists: {e}")),
        }
    }
    let vectors = vectors_dir(&config::state_dir(&root));
    let published_as = super::shared::repository_name(&root, config.shared_repository.as_deref());
    let embedding = match model {
        None => Embedding::Skipped,
        Some(_) if report.cancelled => Embedding::Skipped,
        // With a shared store, vectors may be taken or published even when
        // none is missing here: always run the pass.
        Some(model) => match if shared.is_some() { None } else { nothing_to_embed(&store, &resolve_options, &vectors) } {
            Some(done) => done,
            None => embed(
                &vectors,
                &mut store,
                model,
                shared.as_ref().map(|s| (s, &mut shared_report)),
                Some((&published_as, true)),
                // The English model's vectors stay (it loads meanwhile).
                english_model.as_ref().and_then(|m| m.wait(MODEL_WAIT).encoder().map(|e| e.info().key.clone())),
            )?,
        },
    };
    // The English model's pass, after the main one (its vectors answer
    // requests in English).
    let english = match (english_model, &english_options, &embedding) {
        (None, ..) | (_, None, _) => Embedding::Skipped,
        (Some(_), ..) if report.cancelled => Embedding::Skipped,
        // It only complements the main model: without that, search is by
        // keywords whatever the English model holds.
        (Some(_), _, Embedding::Skipped | Embedding::Unavailable(_)) => Embedding::Skipped,
        (Some(model), Some(options), main) => {
            let dir = english_dir(&vectors);
            match if shared.is_some() { None } else { nothing_to_embed(&store, options, &dir) } {
                Some(done) => done,
                // A failure here leaves the main model's index as it is:
                // reported, not fatal.
                None => embed(&dir, &mut store, model, shared.as_ref().map(|s| (s, &mut shared_report)), Some((&published_as, false)), main.model_key())
                    .unwrap_or_else(Embedding::Unavailable),
            }
            .unless_same_model_as(main)
        }
    };
    if args.json {
        let mut value = serde_json::to_value(&report).map_err(|e| e.to_string())?;
        if let Some(obj) = value.as_object_mut() {
            obj.insert("embedding".to_string(), embedding.to_json());
            let mut english_json = english.to_json();
            if english_json.get("hint").is_some() {
                english_json["hint"] = ENGLISH_HINT.into();
            }
            obj.insert("english_embedding".to_string(), english_json);
            obj.insert("shared".to_string(), serde_json::to_value(&shared_report).unwrap_or_default());
        }
        return serde_json::to_string_pretty(&value).map(|s| s + "\n").map_err(|e| e.to_string());
    }
    let total_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let mut out = summary(&root, &report, Some(total_ms));
    out.push_str(&embedding.summary());
    out.push_str(&english.english_summary());
    out.push_str(&shared_report.summary());
    Ok(out)
}

/// What to do without the English model.
const ENGLISH_HINT: &str = "requests in English use the main model; `bash scripts/fetch-english-model` in a code-intel checkout installs the English model, `\"english_model\": null` in .code-intel/config.json turns it off";

/// What the embedding step after a sync did.
enum Embedding {
    /// `--no-embed`, or the sync was cancelled.
    Skipped,
    /// No model: the resolver's (or loader's) reason.
    Unavailable(String),
    /// The run; `model_loaded` is false when nothing needed embedding and
    /// the model was not waited for.
    Done { report: EmbedReport, model_loaded: bool },
}

impl Embedding {
    /// The English model's pass counts as skipped when it resolved to the
    /// main model itself (nothing to add).
    fn unless_same_model_as(self, main: &Embedding) -> Self {
        match (&self, main) {
            (Self::Done { report, .. }, Self::Done { report: main, .. }) if report.model == main.model => Self::Skipped,
            _ => self,
        }
    }

    /// The key of the model whose pass this was.
    fn model_key(&self) -> Option<ModelKey> {
        let Self::Done { report, .. } = self else { return None };
        let (name, revision) = report.model.rsplit_once('@')?;
        Some(ModelKey { name: name.to_string(), revision: revision.to_string() })
    }

    /// The English model's line of the summary.
    fn english_summary(&self) -> String {
        match self {
            Self::Skipped => String::new(),
            Self::Unavailable(reason) => format!("  English model unavailable: {reason}\n    {ENGLISH_HINT}\n"),
            done => done.summary().replacen("  embeddings (", "  English embeddings (", 1),
        }
    }

    fn to_json(&self) -> serde_json::Value {
        match self {
            Self::Skipped => serde_json::json!({ "status": "skipped" }),
            Self::Unavailable(reason) => {
                serde_json::json!({ "status": format!("unavailable: {reason}"), "hint": install_hint() })
            }
            Self::Done { report, model_loaded } => {
                let mut value = serde_json::to_value(report).unwrap_or_default();
                if let Some(obj) = value.as_object_mut() {
                    obj.insert("status".to_string(), "ready".into());
                    obj.insert("model_loaded".to_string(), (*model_loaded).into());
                }
                value
            }
        }
    }

    fn summary(&self) -> String {
        match self {
            Self::Skipped => String::new(),
            Self::Unavailable(reason) => {
                format!("  semantic search unavailable: {reason}\n    {}\n", install_hint())
            }
            Self::Done { report: r, .. } => {
                let c = &r.coverage;
                let mut line = format!(
                    "  embeddings ({}): {} chunks embedded ({} distinct texts), {} already cached; {}/{} chunks have vectors ({:.0}%) in {:.2} s",
                    r.model,
                    c.embedded_chunks.saturating_sub(r.cached_chunks),
                    r.embedded_chunks,
                    r.cached_chunks,
                    c.embedded_chunks,
                    c.total_chunks,
                    c.percent(),
                    r.elapsed_ms as f64 / 1000.0
                );
                if r.cancelled {
                    line.push_str("; cancelled: run `code-intel index` again to finish");
                }
                line + "\n"
            }
        }
    }
}

/// The embedding step's result when it has nothing to do, known without
/// waiting for the model: its key resolves from remembered fingerprints and
/// the store records a complete pass for it at the current generation, and
/// the chunk densities of that pass are on disk. `None`: load the model and
/// run the pass.
/// `dir`: the model's vector folder. A store that cannot be read says
/// `None` too: the pass then reports the error.
fn nothing_to_embed(store: &Store, resolve_options: &ResolveOptions, dir: &Path) -> Option<Embedding> {
    let cache = EncoderOptions::default().fingerprint_cache?;
    let key = code_intel_embed::fingerprint::remembered_key(resolve_options, &cache)?;
    if !code_intel_search::semantic::densities_file(dir, &key.to_string()).exists() {
        return None;
    }
    let model = store.embedding_model(&key.name, &key.revision).ok()??;
    let coverage = store.embedded_through(model.id).ok()??;
    let report = EmbedReport { model: key.to_string(), coverage, cached_chunks: coverage.embedded_chunks, ..EmbedReport::default() };
    Some(Embedding::Done { report, model_loaded: false })
}

/// Embeds the chunks that have no vector yet for the model (the same
/// library calls as the server's background pass), then brings the vector
/// index snapshot up to date.
/// `dir`: the model's vector folder; `published_as`: the repository's name
/// in the shared store and whether this pass publishes its chunks after the
/// vectors (the main model's pass); every pass then records that the
/// repository's chunks have this model's vectors in the store.
fn embed(
    dir: &Path,
    store: &mut Store,
    model: ModelHandle,
    mut shared: Option<(&code_intel_shared::SharedStore, &mut super::shared::SharedReport)>,
    published_as: Option<(&str, bool)>,
    also_keep: Option<ModelKey>,
) -> Result<Embedding, String> {
    let spinner = ProgressBar::new_spinner();
    spinner.enable_steady_tick(Duration::from_millis(120));
    spinner.set_message("loading the embedding model");
    let vectors = VectorSearch::new(model, Some(dir.to_path_buf()));
    let (encoder, state) = vectors.encoder(MODEL_WAIT);
    spinner.finish_and_clear();
    let Some(encoder) = encoder else {
        return Ok(Embedding::Unavailable(match state {
            ModelState::Unavailable(reason) => reason,
            other => format!("the model is still {}", other.status()),
        }));
    };
    let bar = ProgressBar::new(0);
    // The pass embeds each distinct text once; chunks with the same text
    // share its vector, so the bar counts texts.
    bar.set_style(bar_style("{spinner} embedding {bar:30} {pos}/{len} distinct texts ({rate}, eta {eta})"));
    bar.enable_steady_tick(Duration::from_millis(120));
    let progress = |p: EmbedProgress| {
        if bar.length() != Some(p.total as u64) {
            bar.set_length(p.total as u64);
        }
        bar.set_position(p.done as u64);
    };
    if let Some((shared, shared_report)) = shared.as_mut() {
        super::shared::take_vectors(shared, store, &encoder, shared_report);
    }
    let report = embed_pending_keeping(store, &encoder, also_keep.as_slice(), &progress, None);
    bar.finish_and_clear();
    let report = report.map_err(|e| format!("embedding failed: {e}"))?;
    if let Some((shared, shared_report)) = shared.as_mut() {
        super::shared::publish_vectors(shared, store, &encoder, shared_report);
        if let Some((name, publish)) = published_as {
            if publish {
                super::shared::publish_repository(shared, store, name, shared_report);
            }
            let complete = !report.cancelled && report.coverage.embedded_chunks >= report.coverage.total_chunks;
            super::shared::mark_vectors(shared, &encoder, complete, name, shared_report);
        }
    }
    // Brings the vector index up to date now rather than at the first
    // search: the chunk densities that rank hubs down (one scan of the
    // vectors per new chunk) and, for a large collection, the graph and its
    // snapshot.
    {
        let finishing = ProgressBar::new_spinner();
        finishing.enable_steady_tick(Duration::from_millis(120));
        finishing.set_message("updating the vector index");
        let synced = vectors.sync(store);
        finishing.finish_and_clear();
        synced.map_err(|e| format!("cannot update the vector index: {e}"))?;
    }
    Ok(Embedding::Done { report, model_loaded: true })
}

/// The human summary of a sync. `total_ms`: the whole command's time
/// (sync, model and embeddings), when it did more than the sync.
pub(super) fn summary(root: &Path, r: &SyncReport, total_ms: Option<u64>) -> String {
    let mut out = String::new();
    let sync_secs = r.elapsed_ms as f64 / 1000.0;
    let time = match total_ms {
        Some(total) if total > r.elapsed_ms + 50 => {
            format!("{:.2} s (files {sync_secs:.2} s, embedding model and vectors {:.2} s)", total as f64 / 1000.0, (total - r.elapsed_ms) as f64 / 1000.0)
        }
        _ => format!("{sync_secs:.2} s"),
    };
    let _ = writeln!(
        out,
        "Indexed {} in {time}: {} added, {} modified, {} deleted, {} renamed, {} unchanged",
        root.display(),
        r.added,
        r.modified,
        r.deleted,
        r.renamed.len(),
        r.unchanged
    );
    let _ = writeln!(out, "  chunks written: {}; index now holds {} files, {} chunks", r.chunks, r.total_files, r.total_chunks);
    if r.chunker_changed {
        let _ = writeln!(out, "  plugins changed since the last index: every file was chunked again (vectors reused where the text is the same)");
    }
    if r.fallbacks > 0 {
        let _ = writeln!(out, "  fallbacks: {} file(s) indexed as line windows", r.fallbacks);
    }
    if !r.plugin_failures.is_empty() {
        let _ = writeln!(out, "  plugin failures: {}", r.plugin_failures.len());
        for f in r.plugin_failures.iter().take(SUMMARY_LIST_LIMIT) {
            let kind = serde_json::to_value(f.kind).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
            let _ = writeln!(out, "    {}: {} ({kind}): {}", f.path, f.plugin, f.message);
        }
        more(&mut out, r.plugin_failures.len());
    }
    if !r.skipped.is_empty() {
        let _ = writeln!(out, "  skipped: {}", r.skipped.len());
        for s in r.skipped.iter().take(SUMMARY_LIST_LIMIT) {
            let _ = writeln!(out, "    {}: {}", s.path, s.reason);
        }
        more(&mut out, r.skipped.len());
    }
    if r.cancelled {
        let _ = writeln!(out, "  cancelled: run `code-intel index` again to finish");
    }
    out
}

fn more(out: &mut String, total: usize) {
    if total > SUMMARY_LIST_LIMIT {
        let _ = writeln!(out, "    ... and {} more (see --json)", total - SUMMARY_LIST_LIMIT);
    }
}
