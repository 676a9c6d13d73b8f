//! A remote encoder: an OpenAI-compatible `/v1/embeddings` endpoint, what
//! TEI, vLLM, Ollama and infinity serve, as an alternative to the local
//! model.
//!
//! Texts go in batches of at most [`RemoteOptions::batch_size`] inputs,
//! [`RemoteOptions::concurrency`] requests at a time; a request that times
//! out, cannot connect, or gets 429 or 5xx is tried again with a growing
//! pause (a `Retry-After` is honoured, up to [`MAX_RETRY_PAUSE`]); a 413
//! splits the batch in two. Every other failure is an error that names the
//! endpoint and what to change. Vectors are L2-normalised here whatever the
//! server did.
//!
//! The model key ([`remote_key`]) names the endpoint and the remote model, so
//! vectors from a server never mix with a local model's, nor with another
//! server's. The API key (`CODE_INTEL_EMBEDDING_API_KEY`) is sent as a bearer
//! token and never printed; an endpoint URL is shown without user info or
//! query.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::encoder::{EmbedError, ModelKey, Role, TEXT_RECIPE_VERSION};
use crate::sentence_config::{PromptSource, Prompts, is_e5_name};

/// Environment variable: the endpoint's base URL (`http://host:8080/v1`);
/// overrides config `embedding_endpoint`. Set, `embedding_model` names the
/// model on that server.
pub const ENDPOINT_ENV: &str = "CODE_INTEL_EMBEDDING_ENDPOINT";

/// Environment variable: the endpoint's API key, sent as
/// `Authorization: Bearer ...`. Only ever read from the environment.
pub const API_KEY_ENV: &str = "CODE_INTEL_EMBEDDING_API_KEY";

/// Longest pause between two tries, whatever `Retry-After` says.
pub const MAX_RETRY_PAUSE: Duration = Duration::from_secs(30);

/// Characters sent per text at most: the local encoder's cut (512 tokens
/// x 12 characters), so a server that truncates at the same window embeds
/// the same tokens.
pub const MAX_TEXT_CHARS: usize = 512 * 12;

/// How to reach the endpoint.
#[derive(Clone, Debug)]
pub struct RemoteOptions {
    /// The endpoint as configured: a base URL (`http://h:8080`, `.../v1`)
    /// or the full `.../v1/embeddings` URL.
    pub endpoint: String,
    /// The model name the server knows (`embedding_model`).
    pub model: String,
    /// Bearer token; see [`API_KEY_ENV`].
    pub api_key: Option<String>,
    /// Inputs per request (TEI's default client batch limit is 32).
    pub batch_size: usize,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Time for one request, connect to last byte.
    pub timeout: Duration,
    /// Tries after the first for a retryable failure.
    pub retries: u32,
    /// First pause between tries; doubled after each.
    pub backoff: Duration,
}

impl RemoteOptions {
    /// Defaults for `endpoint` and `model`, the API key from [`API_KEY_ENV`].
    #[must_use]
    pub fn new(endpoint: &str, model: &str) -> Self {
        Self {
            endpoint: endpoint.trim().to_string(),
            model: model.trim().to_string(),
            api_key: std::env::var(API_KEY_ENV)
                .ok()
                .filter(|k| !k.trim().is_empty()),
            batch_size: 32,
            concurrency: 4,
            timeout: Duration::from_secs(60),
            retries: 4,
            backoff: Duration::from_millis(500),
        }
    }
}

/// The full `/embeddings` URL of an endpoint as configured.
///
/// # Errors
/// Not an `http(s)://` URL.
pub fn embeddings_url(endpoint: &str) -> Result<String, String> {
    let e = endpoint.trim().trim_end_matches('/');
    if !(e.starts_with("http://") || e.starts_with("https://")) {
        return Err(format!(
            "embedding endpoint {:?} is not an http:// or https:// URL; set embedding_endpoint (or {ENDPOINT_ENV}) to the server's base URL, e.g. http://localhost:8080/v1",
            redact(e)
        ));
    }
    Ok(if e.ends_with("/embeddings") {
        e.to_string()
    } else if e.ends_with("/v1") {
        format!("{e}/embeddings")
    } else {
        format!("{e}/v1/embeddings")
    })
}

/// `url` without user info, query or fragment, for messages and keys.
#[must_use]
pub fn redact(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or(url);
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            if path.is_empty() {
                format!("{scheme}://{host}")
            } else {
                format!("{scheme}://{host}/{path}")
            }
        }
        None => url.to_string(),
    }
}

/// The prompts put before texts sent to `model`: e5's `query: `/`passage: `
/// when the name says e5 (the OpenAI route of TEI and vLLM adds none), else
/// none.
#[must_use]
pub fn remote_prompts(model: &str) -> Prompts {
    if is_e5_name(model) {
        Prompts {
            query: "query: ".into(),
            passage: "passage: ".into(),
            from: PromptSource::E5Name,
        }
    } else {
        Prompts {
            query: String::new(),
            passage: String::new(),
            from: PromptSource::None,
        }
    }
}

/// The model key of `model` served at `endpoint`: `remote:<url>#<model>`,
/// revision `remote.r<recipe>` plus the prompts' hash as for a local model.
/// Known without contacting the server.
///
/// # Errors
/// As [`embeddings_url`].
pub fn remote_key(endpoint: &str, model: &str) -> Result<ModelKey, String> {
    let url = redact(&embeddings_url(endpoint)?);
    let mut key = ModelKey {
        name: format!("remote:{url}#{}", model.trim()),
        revision: format!("remote.r{TEXT_RECIPE_VERSION}"),
    };
    let prompts = remote_prompts(model);
    if !(prompts.query.is_empty() && prompts.passage.is_empty()) {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(format!("{}\0{}", prompts.query, prompts.passage));
        let short: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
        key.revision.push_str(&format!(".p{short}"));
    }
    Ok(key)
}

/// A client of one endpoint and model.
pub struct RemoteEncoder {
    agent: ureq::Agent,
    url: String,
    shown: String,
    options: RemoteOptions,
    prompts: Prompts,
    dim: usize,
}

impl std::fmt::Debug for RemoteEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteEncoder")
            .field("url", &self.shown)
            .field("model", &self.options.model)
            .field("dim", &self.dim)
            .finish()
    }
}

#[derive(serde::Deserialize)]
struct Response {
    data: Vec<Datum>,
    usage: Option<Usage>,
}

#[derive(serde::Deserialize)]
struct Datum {
    index: Option<usize>,
    embedding: Vec<f32>,
}

#[derive(serde::Deserialize)]
struct Usage {
    prompt_tokens: Option<usize>,
}

/// One request's failure: worth another try or not.
enum Failure {
    Retry(String, Option<Duration>),
    TooLarge,
    Fatal(String),
}

impl RemoteEncoder {
    /// Connects: one request embeds a probe text, which checks the URL, the
    /// key and the model name and tells the vector dimension.
    ///
    /// # Errors
    /// The endpoint's failure, naming what to fix.
    pub fn connect(options: RemoteOptions) -> Result<Self, EmbedError> {
        let url = embeddings_url(&options.endpoint).map_err(EmbedError::Inference)?;
        if options.model.is_empty() {
            return Err(EmbedError::Inference(format!(
                "no model named for the embedding endpoint {}: set embedding_model to the model the server serves",
                redact(&url)
            )));
        }
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(options.timeout.min(Duration::from_secs(10)))
            .timeout(options.timeout)
            .max_idle_connections_per_host(options.concurrency.max(1))
            .build();
        let prompts = remote_prompts(&options.model);
        let shown = redact(&url);
        let mut encoder = Self {
            agent,
            url,
            shown,
            options,
            prompts,
            dim: 0,
        };
        let (probe, _) = encoder.request_with_retries(&["passage: dimension probe".to_string()])?;
        encoder.dim = probe.first().map_or(0, Vec::len);
        if encoder.dim == 0 {
            return Err(EmbedError::Inference(format!(
                "the embedding endpoint {} answered an empty vector",
                encoder.shown
            )));
        }
        Ok(encoder)
    }

    /// The vector dimension the server answers.
    #[must_use]
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The prompts put before queries and passages.
    #[must_use]
    pub fn prompts(&self) -> &Prompts {
        &self.prompts
    }

    /// The `/embeddings` URL, without credentials.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.shown
    }

    /// The options in force.
    #[must_use]
    pub fn options(&self) -> &RemoteOptions {
        &self.options
    }

    /// Embeds `texts` (after the role's prompt) in input order, with the
    /// tokens the server counted (estimated at 4 characters a token when it
    /// does not say). `progress(done, total)` after every batch.
    ///
    /// # Errors
    /// A failure that retries did not cure, naming the endpoint.
    pub fn embed(
        &self,
        texts: &[&str],
        role: Role,
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> Result<(Vec<Vec<f32>>, usize), EmbedError> {
        let prefix = match role {
            Role::Query => self.prompts.query.as_str(),
            Role::Passage => self.prompts.passage.as_str(),
        };
        let inputs: Vec<String> = texts
            .iter()
            .map(|t| {
                let cut = t
                    .char_indices()
                    .nth(MAX_TEXT_CHARS)
                    .map_or(*t, |(i, _)| &t[..i]);
                format!("{prefix}{cut}")
            })
            .collect();
        let batches: Vec<std::ops::Range<usize>> = (0..inputs.len())
            .step_by(self.options.batch_size.max(1))
            .map(|s| s..(s + self.options.batch_size.max(1)).min(inputs.len()))
            .collect();
        let total = inputs.len();
        let next = AtomicUsize::new(0);
        let done = AtomicUsize::new(0);
        let tokens = AtomicUsize::new(0);
        let results: Mutex<Vec<Option<Vec<f32>>>> = Mutex::new(vec![None; total]);
        let failure: Mutex<Option<EmbedError>> = Mutex::new(None);
        let worker = || {
            loop {
                if failure.lock().is_ok_and(|f| f.is_some()) {
                    break;
                }
                let Some(range) = batches.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    break;
                };
                match self.request_with_retries(&inputs[range.clone()]) {
                    Ok((vectors, t)) => {
                        tokens.fetch_add(t, Ordering::Relaxed);
                        if let Ok(mut r) = results.lock() {
                            for (slot, v) in r[range.clone()].iter_mut().zip(vectors) {
                                *slot = Some(v);
                            }
                        }
                        let d = done.fetch_add(range.len(), Ordering::Relaxed) + range.len();
                        progress(d, total);
                    }
                    Err(e) => {
                        if let Ok(mut f) = failure.lock() {
                            f.get_or_insert(e);
                        }
                        break;
                    }
                }
            }
        };
        let workers = self.options.concurrency.clamp(1, batches.len().max(1));
        std::thread::scope(|s| {
            for _ in 1..workers {
                s.spawn(worker);
            }
            worker();
        });
        if let Some(e) = failure.into_inner().ok().flatten() {
            return Err(e);
        }
        let vectors = results
            .into_inner()
            .map_err(|_| EmbedError::Inference("a request thread panicked".to_string()))?
            .into_iter()
            .map(|v| v.ok_or_else(|| EmbedError::Inference("a text was not embedded".to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((vectors, tokens.into_inner()))
    }

    /// One batch, retried; a 413 splits it in two.
    fn request_with_retries(
        &self,
        inputs: &[String],
    ) -> Result<(Vec<Vec<f32>>, usize), EmbedError> {
        let mut pause = self.options.backoff;
        let mut last = String::new();
        for attempt in 0..=self.options.retries {
            if attempt > 0 {
                tracing::warn!(url = %self.shown, attempt, "embedding request failed ({last}); trying again");
            }
            match self.request(inputs) {
                Ok(ok) => return Ok(ok),
                Err(Failure::TooLarge) if inputs.len() > 1 => {
                    let (a, b) = inputs.split_at(inputs.len() / 2);
                    let (mut va, ta) = self.request_with_retries(a)?;
                    let (vb, tb) = self.request_with_retries(b)?;
                    va.extend(vb);
                    return Ok((va, ta + tb));
                }
                Err(Failure::TooLarge) => {
                    return Err(EmbedError::Inference(format!(
                        "the embedding endpoint {} refused a single text as too large (HTTP 413); raise the server's input limit",
                        self.shown
                    )));
                }
                Err(Failure::Fatal(message)) => return Err(EmbedError::Inference(message)),
                Err(Failure::Retry(message, after)) => {
                    last = message;
                    if attempt < self.options.retries {
                        std::thread::sleep(after.unwrap_or(pause).min(MAX_RETRY_PAUSE));
                        pause = pause.saturating_mul(2);
                    }
                }
            }
        }
        Err(EmbedError::Inference(format!(
            "the embedding endpoint {} failed {} times: {last}; check that the server runs and is reachable, or unset embedding_endpoint to embed locally",
            self.shown,
            self.options.retries + 1
        )))
    }

    fn request(&self, inputs: &[String]) -> Result<(Vec<Vec<f32>>, usize), Failure> {
        let body = serde_json::json!({ "model": self.options.model, "input": inputs, "encoding_format": "float" });
        let mut request = self
            .agent
            .post(&self.url)
            .set("Content-Type", "application/json");
        if let Some(key) = &self.options.api_key {
            request = request.set("Authorization", &format!("Bearer {key}"));
        }
        let response = match request.send_json(body) {
            Ok(r) => r,
            Err(ureq::Error::Status(code, r)) => return Err(self.status_failure(code, r)),
            Err(ureq::Error::Transport(t)) => {
                let what = match t.kind() {
                    ureq::ErrorKind::ConnectionFailed => "cannot connect".to_string(),
                    ureq::ErrorKind::Dns => "cannot resolve the host name".to_string(),
                    ureq::ErrorKind::Io if t.to_string().contains("timed out") => {
                        format!("no answer within {} s", self.options.timeout.as_secs_f32())
                    }
                    _ => t.to_string(),
                };
                return Err(Failure::Retry(what, None));
            }
        };
        let parsed: Response = response.into_json().map_err(|e| {
            Failure::Fatal(format!("the embedding endpoint {} answered something other than an OpenAI embeddings response: {e}", self.shown))
        })?;
        if parsed.data.len() != inputs.len() {
            return Err(Failure::Fatal(format!(
                "the embedding endpoint {} answered {} vectors for {} inputs",
                self.shown,
                parsed.data.len(),
                inputs.len()
            )));
        }
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; inputs.len()];
        for (position, datum) in parsed.data.into_iter().enumerate() {
            let index = datum.index.unwrap_or(position);
            let Some(slot) = vectors.get_mut(index) else {
                return Err(Failure::Fatal(format!(
                    "the embedding endpoint {} answered a vector for input {index} of {}",
                    self.shown,
                    inputs.len()
                )));
            };
            let mut v = datum.embedding;
            if self.dim != 0 && v.len() != self.dim {
                return Err(Failure::Fatal(format!(
                    "the embedding endpoint {} answered a {}-dimensional vector after {}-dimensional ones; is another model behind it now?",
                    self.shown,
                    v.len(),
                    self.dim
                )));
            }
            if v.iter().any(|x| !x.is_finite()) {
                return Err(Failure::Fatal(format!(
                    "the embedding endpoint {} answered a vector with NaN or infinite values",
                    self.shown
                )));
            }
            crate::encoder::normalize(&mut v);
            *slot = Some(v);
        }
        let vectors: Vec<Vec<f32>> =
            vectors.into_iter().collect::<Option<_>>().ok_or_else(|| {
                Failure::Fatal(format!(
                    "the embedding endpoint {} answered the same input index twice",
                    self.shown
                ))
            })?;
        let tokens = parsed
            .usage
            .and_then(|u| u.prompt_tokens)
            .unwrap_or_else(|| inputs.iter().map(|t| t.len().div_ceil(4)).sum());
        Ok((vectors, tokens))
    }

    fn status_failure(&self, code: u16, response: ureq::Response) -> Failure {
        let retry_after = response
            .header("Retry-After")
            .and_then(|s| s.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let text = response.into_string().unwrap_or_default();
        let message = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| {
                v.pointer("/error/message")
                    .or_else(|| v.get("error"))
                    .or_else(|| v.get("message"))
                    .and_then(|m| m.as_str().map(str::to_string))
            })
            .unwrap_or_else(|| text.chars().take(200).collect());
        let url = &self.shown;
        let model = &self.options.model;
        match code {
            413 => Failure::TooLarge,
            429 | 500..=599 => Failure::Retry(format!("HTTP {code}: {message}"), retry_after),
            401 | 403 => Failure::Fatal(format!(
                "the embedding endpoint {url} refused the credentials (HTTP {code}: {message}); set {API_KEY_ENV} to a key the server accepts"
            )),
            404 => Failure::Fatal(format!(
                "the embedding endpoint {url} answered HTTP 404 ({message}); check that embedding_endpoint is the server's OpenAI-compatible base URL (…/v1) and that it serves the model {model:?} named by embedding_model"
            )),
            _ => Failure::Fatal(format!(
                "the embedding endpoint {url} refused the request (HTTP {code}: {message}); check embedding_model ({model:?})"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_completed_and_redacted() {
        assert_eq!(
            embeddings_url("http://h:8080").unwrap(),
            "http://h:8080/v1/embeddings"
        );
        assert_eq!(
            embeddings_url("http://h:8080/v1/").unwrap(),
            "http://h:8080/v1/embeddings"
        );
        assert_eq!(
            embeddings_url("https://h/api/v1/embeddings").unwrap(),
            "https://h/api/v1/embeddings"
        );
        assert!(
            embeddings_url("h:8080")
                .unwrap_err()
                .contains("embedding_endpoint")
        );
        assert_eq!(
            redact("https://user:secret@h:1/v1?key=secret"),
            "https://h:1/v1"
        );
        assert!(
            !embeddings_url("ftp://user:secret@h")
                .unwrap_err()
                .contains("secret")
        );
    }

    #[test]
    fn keys_name_endpoint_and_model_and_never_credentials() {
        let a = remote_key(
            "http://user:pw@tei:8080/v1",
            "intfloat/multilingual-e5-small",
        )
        .unwrap();
        assert_eq!(
            a.name,
            "remote:http://tei:8080/v1/embeddings#intfloat/multilingual-e5-small"
        );
        assert!(
            a.revision.starts_with("remote.r") && a.revision.contains(".p"),
            "{a}"
        );
        let b = remote_key("http://other:8080/v1", "intfloat/multilingual-e5-small").unwrap();
        assert_ne!(a, b);
        let c = remote_key("http://tei:8080/v1", "BAAI/bge-small-en-v1.5").unwrap();
        assert!(
            !c.revision.contains(".p"),
            "no prompts for a non-e5 model: {c}"
        );
    }
}
