//! The shared store in `code-intel index`: connect when one is configured,
//! take chunk lists and vectors from it, publish what this run computed, and
//! report all of it (or why the store was not used) without ever failing
//! the command because of it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use code_intel_core::config::Config;
use code_intel_embed::Encoder;
use code_intel_plugins::PluginHost;
use code_intel_shared::{Scope, ScopeError, SharedStore, configured_url};
use code_intel_store::Store;
use serde::Serialize;

use super::shared_confidence::Judgement;

/// What the shared store did for one `index` run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SharedReport {
    /// `off` (not configured), `connected`, or `unavailable: <reason>`.
    pub status: String,
    /// The store's URL without its password.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
    /// Files whose chunk list came from the store (not chunked here).
    pub files_from_store: u64,
    /// Chunks in those lists.
    pub chunks_from_store: u64,
    /// Distinct chunk texts whose vector came from the store (not embedded here).
    pub vectors_from_store: u64,
    /// Chunk lists published by this run (new to the store).
    pub chunk_lists_published: u64,
    /// Vectors published by this run (new to the store).
    pub vectors_published: u64,
    /// The name this repository was published under for organisation-wide search.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// Chunks published under that name.
    pub repository_chunks: u64,
    /// Store errors met after connecting; the run went on locally.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

impl SharedReport {
    /// The summary line (empty when no store is configured).
    pub fn summary(&self) -> String {
        let Some(store) = &self.store else {
            return if self.status == "off" {
                String::new()
            } else {
                format!("  shared store {}; indexed locally only\n", self.status)
            };
        };
        if self.status != "connected" {
            return format!(
                "  shared store {store} {}; indexed locally only\n",
                self.status
            );
        }
        let mut line = format!(
            "  shared store {store}: {} files ({} chunks) and {} vectors taken from it; {} chunk lists and {} vectors published\n",
            self.files_from_store,
            self.chunks_from_store,
            self.vectors_from_store,
            self.chunk_lists_published,
            self.vectors_published
        );
        for e in &self.errors {
            line.push_str(&format!("  shared store error (went on locally): {e}\n"));
        }
        line
    }
}

/// Connects to the configured store, if any. The report says what happened.
pub fn connect(config: &Config) -> (Option<SharedStore>, SharedReport) {
    let Some(url) = configured_url(config.shared_store.as_deref()) else {
        return (
            None,
            SharedReport {
                status: "off".to_string(),
                ..SharedReport::default()
            },
        );
    };
    match SharedStore::connect(&url) {
        Ok(store) => {
            let report = SharedReport {
                status: "connected".to_string(),
                store: Some(store.shown().to_string()),
                ..SharedReport::default()
            };
            (Some(store), report)
        }
        Err(e) => {
            tracing::warn!("{e}; indexing locally only");
            (
                None,
                SharedReport {
                    status: format!("unavailable: {}", e.reason),
                    store: Some(e.shown),
                    ..SharedReport::default()
                },
            )
        }
    }
}

/// The chunker key chunk lists are published and looked up under: this
/// binary's version and its plugins' identity (`code_intel_core::Chunker::identity`: each
/// plugin's name, version, WIT version and component hash).
pub fn chunker_key(host: &PluginHost) -> String {
    use code_intel_core::Chunker;
    format!("h{}-{}", env!("CARGO_PKG_VERSION"), host.identity().unwrap_or_default())
}

/// Before embedding: copies the store's vectors for chunk texts that have
/// none here.
pub fn take_vectors(
    shared: &SharedStore,
    store: &mut Store,
    encoder: &Encoder,
    report: &mut SharedReport,
) {
    let result = (|| -> Result<u64, String> {
        let local =
            code_intel_embed::pipeline::model_row(store, encoder).map_err(|e| e.to_string())?;
        let remote = shared.model(&encoder.info().key.to_string(), encoder.dim())?;
        let pending = store
            .pending_chunks(local.id, usize::MAX)
            .map_err(|e| e.to_string())?;
        let hashes: Vec<&str> = pending.iter().map(|p| p.content_hash.as_str()).collect();
        let found = shared.vectors(remote, encoder.dim(), &hashes)?;
        let rows: Vec<(&str, &[f32])> = found
            .iter()
            .map(|(h, v)| (h.as_str(), v.as_slice()))
            .collect();
        for batch in rows.chunks(2000) {
            store
                .write(|w| w.put_embeddings(local.id, batch))
                .map_err(|e| e.to_string())?;
        }
        Ok(found.len() as u64)
    })();
    match result {
        Ok(n) => report.vectors_from_store += n,
        Err(e) => report.errors.push(format!("taking vectors: {e}")),
    }
}

/// After embedding: publishes every vector of the index's chunks that the
/// store does not have yet.
pub fn publish_vectors(
    shared: &SharedStore,
    store: &Store,
    encoder: &Encoder,
    report: &mut SharedReport,
) {
    let result = (|| -> Result<u64, String> {
        let key = &encoder.info().key;
        let Some(local) = store
            .embedding_model(&key.name, &key.revision)
            .map_err(|e| e.to_string())?
        else {
            return Ok(0);
        };
        let remote = shared.model(&key.to_string(), encoder.dim())?;
        let points = store.forest_points(local.id).map_err(|e| e.to_string())?;
        let hashes: Vec<&str> = points
            .iter()
            .map(|p| p.content_hash.as_str())
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        let there = shared.existing_vectors(remote, &hashes)?;
        let missing: Vec<&str> = hashes.into_iter().filter(|h| !there.contains(*h)).collect();
        let vectors = store
            .vectors(local.id, encoder.dim(), &missing)
            .map_err(|e| e.to_string())?;
        let rows: Vec<(String, Vec<f32>)> = vectors.into_iter().collect();
        shared.publish_vectors(remote, &rows)
    })();
    match result {
        Ok(n) => report.vectors_published += n,
        Err(e) => report.errors.push(format!("publishing vectors: {e}")),
    }
}

/// The name a repository is published under: config `shared_repository`
/// when set, else its `origin` remote without scheme, credentials or `.git`
/// (`github.com/org/app`), else its folder's name.
pub fn repository_name(root: &Path, configured: Option<&str>) -> String {
    if let Some(name) = configured {
        return name.to_string();
    }
    let folder = root.file_name().map_or_else(
        || "repository".to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let Ok(git_config) = std::fs::read_to_string(root.join(".git/config")) else {
        return folder;
    };
    let mut in_origin = false;
    for line in git_config.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_origin = line == "[remote \"origin\"]";
        } else if in_origin
            && let Some(url) = line
                .strip_prefix("url")
                .map(str::trim)
                .and_then(|l| l.strip_prefix('='))
        {
            let url = url.trim();
            let rest = url.split_once("://").map_or(url, |(_, r)| r);
            let rest = rest
                .rsplit_once('@')
                .map_or(rest, |(_, r)| r)
                .replace(':', "/");
            let rest = rest.trim_end_matches('/').trim_end_matches(".git");
            // A local path as the remote: its last component.
            if url.starts_with('/') || url.starts_with('.') || url.starts_with("file:") {
                return rest
                    .rsplit('/')
                    .next()
                    .filter(|s| !s.is_empty())
                    .map_or(folder, str::to_string);
            }
            return rest.to_string();
        }
    }
    folder
}

/// After embedding: publishes the repository's chunks for organisation-wide
/// search, replacing its previous publication.
pub fn publish_repository(
    shared: &SharedStore,
    store: &Store,
    name: &str,
    report: &mut SharedReport,
) {
    let result = (|| -> Result<u64, String> {
        let mut chunks = Vec::new();
        for file in store.indexed_files().map_err(|e| e.to_string())? {
            for summary in store.file_chunks(&file.path).map_err(|e| e.to_string())? {
                let Some(stored) = store.chunk(summary.rowid).map_err(|e| e.to_string())? else {
                    continue;
                };
                let c = &stored.chunk;
                let words = code_intel_shared::chunk_words(&format!(
                    "{} {} {} {}",
                    stored.path,
                    c.name,
                    c.qualified_name.as_deref().unwrap_or(""),
                    c.content
                ));
                chunks.push(code_intel_shared::RepoChunk {
                    path: stored.path.clone(),
                    chunk_id: c.id.clone(),
                    kind: c.kind.clone(),
                    name: c.name.clone(),
                    start_line: i32::try_from(c.start_line).unwrap_or(i32::MAX),
                    end_line: i32::try_from(c.end_line).unwrap_or(i32::MAX),
                    content_hash: stored.content_hash.clone(),
                    words,
                    aliases: chunk_aliases(&c.metadata),
                });
            }
        }
        shared.publish_repository(name, &chunks)
    })();
    match result {
        Ok(n) => {
            report.repository = Some(name.to_string());
            report.repository_chunks = n;
        }
        Err(e) => report
            .errors
            .push(format!("publishing the repository {name}: {e}")),
    }
}

/// The `aliases` of a chunk's metadata (what a request calls it: `orders
/// list`), as `code_intel_store::Store::aliases` reads them locally.
fn chunk_aliases(metadata: &code_intel_core::Metadata) -> Vec<String> {
    // Few chunks have any: their metadata is parsed only when it names them.
    if !metadata.as_str().contains("\"aliases\"") {
        return Vec::new();
    }
    match metadata.get("aliases") {
        Some(serde_json::Value::Array(values)) => values.into_iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
        _ => Vec::new(),
    }
}

/// After a model's vectors were published: records that every chunk of
/// the repository published as `name` has a vector of `encoder`'s model in
/// the store, when the local index has one for each and none failed to
/// publish (organisation-wide search routes a request to the English
/// model's vectors only when every repository has them).
pub fn mark_vectors(
    shared: &SharedStore,
    encoder: &Encoder,
    complete: bool,
    name: &str,
    report: &mut SharedReport,
) {
    if !complete || report.errors.iter().any(|e| e.starts_with("publishing vectors") || e.starts_with("publishing the repository")) {
        return;
    }
    if let Err(e) = shared.mark_vectors(name, &encoder.info().key.to_string()) {
        report.errors.push(format!("recording the vectors of {name}: {e}"));
    }
}

/// Candidate hits asked of the store per search (each arm gives at most
/// 100 chunks): enough for the file ranking to reorder.
const SHARED_CANDIDATES: usize = 200;

/// Whether organisation-wide search embeds `query` with the English model
/// whose key is `english_key` rather than the main model `main_key`: a
/// request written in English (`semantic::is_english`), as local search
/// routes it, when the English model is another model and every published
/// repository has its vectors for all its chunks
/// ([`SharedStore::covers`]); otherwise some repositories would have no
/// vector hits at all.
///
/// # Errors
/// Database errors.
pub fn use_english(
    shared: &SharedStore,
    query: &str,
    english_key: &str,
    main_key: Option<&str>,
    scope: &Scope,
) -> Result<bool, String> {
    if !code_intel_search::semantic::is_english(query) || main_key == Some(english_key) {
        return Ok(false);
    }
    shared.covers(english_key, scope)
}

/// Organisation-wide search ranked as local search ranks its own hits
/// (`code_intel_search::files`): the request's words matched as the local
/// index matches them (`code_intel_shared::words`), a Japanese request's
/// also in the English words of its software vocabulary
/// (`code_intel_search::glossary`); each arm's files (repository and path)
/// are ranked on all their chunks and fused by reciprocal rank with the
/// configured weights, together with the files defining what the request
/// names and those holding text it quotes ([`add_quoted`]), times the
/// file's prior (tests, docs, translations weighed down
/// unless asked for, tests a little even then); each file's best chunks follow one another. At most
/// `limit` hits; none, and `no_confident_match` saying why, when the answer
/// is not confident ([`super::shared_confidence`]).
///
/// # Errors
/// Database errors.
pub fn ranked_search(
    store: &SharedStore,
    query: &str,
    vector: Option<(&str, &[f32])>,
    readers: Readers<'_>,
    scope: &Scope,
    weights: &code_intel_core::config::SearchWeights,
    limit: usize,
    judgement: &Judgement<'_>,
) -> Result<code_intel_shared::SearchOutcome, String> {
    let keyword = keyword_arm(store, query, scope)?;
    let vector = store.vector_arm(vector, scope)?;
    ranked(store, query, keyword, vector, readers, scope, weights, limit, judgement)
}

/// The models a request read in English ([`english_query`]) may be
/// embedded by: the English model, else the main one.
#[derive(Clone, Copy, Default)]
pub struct Readers<'a> {
    pub english: Option<&'a Encoder>,
    pub main: Option<&'a Encoder>,
}

/// A Japanese request read in English as local search reads it
/// (`code_intel_search::hybrid::translated_query`, from the keyword arm's
/// `english_terms`), embedded by `english` when every repository of the
/// scope has that model's vectors ([`use_english`]), else by `main`: the
/// text, the model's key and the vector; `None` for a request with no such
/// reading, or when no model embeds it; the inner error when embedding it
/// failed (the answer goes on without it and says so).
///
/// # Errors
/// Database errors.
pub fn english_query(
    store: &SharedStore,
    query: &str,
    terms: &[String],
    english: Option<&Encoder>,
    main: Option<&Encoder>,
    scope: &Scope,
) -> Result<Result<Option<(String, String, Vec<f32>)>, String>, String> {
    let Some(text) = code_intel_search::hybrid::translated_query(query, terms) else { return Ok(Ok(None)) };
    let main_key = main.map(|m| m.info().key.to_string());
    let english = match english {
        Some(e) if use_english(store, &text, &e.info().key.to_string(), main_key.as_deref(), scope)? => Some(e),
        _ => None,
    };
    let Some(encoder) = english.or(main) else { return Ok(Ok(None)) };
    Ok(match encoder.embed_query(&text) {
        Ok(vector) => Ok(Some((text, encoder.info().key.to_string(), vector))),
        Err(e) => Err(e.to_string()),
    })
}

/// The keyword arm of [`ranked_search`], started on the store's second
/// connection (`SharedStore::spare`, else its own) on a thread of `s`, so
/// that it runs while the caller loads the model and embeds the query:
/// the arm needs no query vector.
pub fn keyword_arm_beside<'s>(
    s: &'s std::thread::Scope<'s, '_>,
    store: &'s SharedStore,
    query: &'s str,
    scope: &'s Scope,
) -> std::thread::ScopedJoinHandle<'s, Result<code_intel_shared::KeywordArm, String>> {
    s.spawn(move || keyword_arm(store.spare().unwrap_or(store), query, scope))
}

/// The joined result of [`keyword_arm_beside`] (a panic as an error).
///
/// # Errors
/// The arm's database error, or its thread's panic.
pub fn joined(
    handle: std::thread::ScopedJoinHandle<'_, Result<code_intel_shared::KeywordArm, String>>,
) -> Result<code_intel_shared::KeywordArm, String> {
    handle.join().unwrap_or_else(|_| Err("the keyword arm's thread panicked".to_string()))
}

/// The keyword arm of organisation-wide search: the request's words, a
/// Japanese request's also in the English words of its software
/// vocabulary and those its katakana words read as among the scope's
/// names; with the chunks the request calls by an alias
/// ([`called_chunks`], read on the same connection) as its `called`.
///
/// # Errors
/// Database errors.
pub fn keyword_arm(store: &SharedStore, query: &str, scope: &Scope) -> Result<code_intel_shared::KeywordArm, String> {
    let names = if code_intel_search::loanwords::has_katakana(query) { store.name_words(scope)? } else { Vec::new() };
    let terms = code_intel_search::hybrid::english_terms_with(query, &names);
    let words = if terms.is_empty() { query.to_string() } else { format!("{query} {}", terms.join(" ")) };
    let mut arm = store.keyword_arm(&code_intel_shared::FullTextQuery::new(&words), scope)?;
    arm.called = called_chunks(store, query, &names, scope)?;
    arm.english_terms = terms;
    Ok(arm)
}

/// The published chunks the request calls by one of their aliases ("the
/// orders list", 「注文一覧」, and 「ボード一覧」 with `names`, the words the
/// scope's names are made of), as local search judges them
/// (`code_intel_search::hybrid::alias_in_query`, `alias_in_terms`,
/// `code_intel_search::glossary::term_runs_with`).
///
/// # Errors
/// Database errors.
fn called_chunks(
    store: &SharedStore,
    query: &str,
    names: &[String],
    scope: &Scope,
) -> Result<Vec<code_intel_shared::SharedHit>, String> {
    let aliases = store.aliases(scope)?;
    if aliases.is_empty() {
        return Ok(Vec::new());
    }
    let sequence = code_intel_search::hybrid::query_sequence(query);
    let runs = code_intel_search::glossary::term_runs_with(query, names);
    let mut called: Vec<code_intel_shared::SharedHit> = Vec::new();
    for a in aliases {
        let said = code_intel_search::hybrid::alias_in_query(&a.alias, &sequence)
            || runs.iter().any(|run| code_intel_search::hybrid::alias_in_terms(&a.alias, run));
        if said && !called.iter().any(|h| h.same_chunk(&a.chunk)) {
            called.push(code_intel_shared::SharedHit { called: true, ..a.chunk });
        }
    }
    Ok(called)
}

/// The arms of [`ranked_search`] fused, judged and ranked by file.
///
/// # Errors
/// Database errors.
#[allow(clippy::too_many_arguments)]
pub fn ranked(
    store: &SharedStore,
    query: &str,
    mut keyword: code_intel_shared::KeywordArm,
    vector: code_intel_shared::VectorArm,
    readers: Readers<'_>,
    scope: &Scope,
    weights: &code_intel_core::config::SearchWeights,
    limit: usize,
    judgement: &Judgement<'_>,
) -> Result<code_intel_shared::SearchOutcome, String> {
    let called = std::mem::take(&mut keyword.called);
    let english_terms = std::mem::take(&mut keyword.english_terms);
    let mut outcome = code_intel_shared::SearchOutcome::fused(keyword, vector, SHARED_CANDIDATES);
    let query_terms = code_intel_search::hybrid::query_terms(query);
    outcome.no_confident_match = super::shared_confidence::judge(store, scope, query, &mut outcome, judgement, |name| {
        defines(name, query, &query_terms)
    })?;
    outcome.hits = if outcome.no_confident_match.is_some() {
        Vec::new()
    } else {
        let mut hits = std::mem::take(&mut outcome.hits);
        add_quoted(store, query, scope, &mut hits)?;
        add_called(called, &mut hits);
        add_paired(store, query, &mut hits)?;
        // A Japanese request read in English, as locally: a second vector
        // arm (for a confident answer only: it makes none confident).
        match english_query(store, query, &english_terms, readers.english, readers.main, scope)? {
            Ok(Some((text, key, v))) => {
                add_translated(store.vector_arm(Some((&key, &v)), scope)?.rows, &mut hits);
                outcome.english_query = Some(text);
            }
            Ok(None) => {}
            Err(why) => outcome.vector_status = format!("{}; the request was not also searched read in English: {why}", outcome.vector_status),
        }
        by_file(query, hits, weights, limit)
    };
    Ok(outcome)
}

/// Where organisation-wide search keeps the anchors' vectors: beside the
/// vector snapshots of `root`'s local index when there is one, else
/// `anchors` in code-intel's cache folder (beside `fingerprints`,
/// `$CODE_INTEL_CACHE_DIR` or `~/.cache/code-intel`). A file there is named
/// after the model and the anchor texts, so any repository can share it.
fn anchors_dir(root: &Path) -> PathBuf {
    let local = code_intel_search::semantic::vectors_dir(&code_intel_core::config::state_dir(root));
    if local.is_dir() {
        return local;
    }
    code_intel_embed::fingerprint::default_cache_dir().with_file_name("anchors")
}

/// The baselines of a query embedded by `encoder` (its anchors read from,
/// or written to, `dir`; embedded in this process without one), for the
/// confidence judgement. `None` when the anchors cannot be embedded: then
/// no similarity counts as confident.
#[must_use]
pub fn query_baselines(encoder: &Encoder, query: &[f32], dir: Option<&Path>) -> Option<code_intel_search::semantic::Baselines> {
    match code_intel_search::semantic::AnchorVectors::load(encoder, dir) {
        Ok(anchors) => Some(anchors.baselines(query)),
        Err(e) => {
            tracing::warn!("shared search: the confidence anchors could not be embedded: {e}");
            None
        }
    }
}

/// How surely the chunk named `name` defines what the request names, as
/// local search judges it: 2 when its name is a compound identifier the
/// request writes (`UserService` for "UserService rename") or the one word
/// searched for, 1 when it is a name of
/// at least two words all of them the request's, side by side
/// (`compute_order_total` for "compute the order total"; a one-word name
/// such as `send` is too weak a sign, and so is `test_app` for "our test
/// suite runs the app"), else 0.
fn defines(name: &str, query: &str, terms: &HashSet<String>) -> u8 {
    use code_intel_store::tokenize::{normalize_identifier, query_words, split_identifier};
    let normalized = normalize_identifier(name);
    let words = query_words(query);
    // A compound identifier, or the one word searched for (`send` in a
    // request in prose is no identifier the request writes).
    let writes = |w: &&str| normalize_identifier(w) == normalized && (words.len() == 1 || split_identifier(w).len() >= 2);
    if !normalized.is_empty() && words.iter().any(writes) {
        return 2;
    }
    let compound = split_identifier(name).iter().filter(|p| p.len() > 1).count() >= 2;
    u8::from(
        compound
            && code_intel_search::hybrid::name_in_query(name, terms)
            && code_intel_search::hybrid::name_as_phrase(name, &code_intel_search::hybrid::query_sequence(query)),
    )
}

/// The chunks holding text the request quotes (`code_intel_search::quoted`:
/// 'Part exceeded maximum size', 「Unavailable」), searched as local search
/// searches them and added to `hits` (those already there marked), for the
/// file ranking of their own that [`by_file`] fuses.
///
/// # Errors
/// Database errors.
fn add_quoted(
    store: &SharedStore,
    query: &str,
    scope: &Scope,
    hits: &mut Vec<code_intel_shared::SharedHit>,
) -> Result<(), String> {
    for phrase in code_intel_search::quoted::phrases(query) {
        let Some(tsquery) = code_intel_shared::FullTextQuery::phrase(phrase) else { continue };
        for found in store.phrase_arm(&tsquery, scope)? {
            match hits.iter_mut().find(|h| h.same_chunk(&found)) {
                Some(hit) => hit.quoted = Some(hit.quoted.unwrap_or(0.0).max(found.quoted.unwrap_or(0.0))),
                None => hits.push(found),
            }
        }
    }
    Ok(())
}

/// Marks the hits holding a pair of the request's neighbouring words
/// (`code_intel_search::pairs`: "trailing slash", "rate limit"), matched as
/// local search matches them, for the file ranking of their own that
/// [`by_file`] fuses. Only the hits are read (`SharedStore::pairs_among`):
/// locally a pair may also bring a chunk no arm found.
///
/// # Errors
/// Database errors.
fn add_paired(store: &SharedStore, query: &str, hits: &mut [code_intel_shared::SharedHit]) -> Result<(), String> {
    use code_intel_search::pairs::{NEAR, pairs};
    let pairs: Vec<String> = pairs(query)
        .iter()
        .map(|(a, b)| {
            code_intel_shared::words::near_pair((&a.text, a.prefix), (&b.text, b.prefix), NEAR)
        })
        .collect();
    if pairs.is_empty() {
        return Ok(());
    }
    let among: Vec<(&str, &str, &str)> = hits.iter().map(|h| (h.repository.as_str(), h.path.as_str(), h.chunk_id.as_str())).collect();
    let held = store.pairs_among(&pairs, &among)?;
    for (i, score) in held {
        if let Some(hit) = hits.get_mut(i) {
            hit.paired = Some(score);
        }
    }
    Ok(())
}

/// Marks the hits the request calls by an alias (`called`, from
/// [`called_chunks`]) and adds those neither arm found: as locally, what a
/// plugin says a request calls a chunk names it as its identifier would
/// (a bug report about a table's columns may share few words and little
/// meaning with the table's code). They take part in the ranking of the
/// files defining what the request names only, and make no request
/// confident (they are added after the judgement).
fn add_called(called: Vec<code_intel_shared::SharedHit>, hits: &mut Vec<code_intel_shared::SharedHit>) {
    for chunk in called {
        match hits.iter_mut().find(|h| h.same_chunk(&chunk)) {
            Some(hit) => hit.called = true,
            None => hits.push(code_intel_shared::SharedHit { arms: vec!["keyword"], ..chunk }),
        }
    }
}

/// Marks the hits the request read in English also found (`english`, a
/// second vector arm) with that similarity, and adds those it alone found:
/// they rank files as locally; they make no answer confident (that is
/// judged before).
fn add_translated(english: Vec<code_intel_shared::SharedHit>, hits: &mut Vec<code_intel_shared::SharedHit>) {
    for row in english {
        let similarity = row.similarity;
        match hits.iter_mut().find(|h| h.same_chunk(&row)) {
            Some(hit) => hit.translated = hit.translated.or(similarity),
            None => hits.push(code_intel_shared::SharedHit { arms: vec!["vector"], similarity: None, translated: similarity, ..row }),
        }
    }
}

/// The hits in file order (see [`ranked_search`]), at most `limit`.
fn by_file(
    query: &str,
    hits: Vec<code_intel_shared::SharedHit>,
    weights: &code_intel_core::config::SearchWeights,
    limit: usize,
) -> Vec<code_intel_shared::SharedHit> {
    use code_intel_search::files::{CHUNKS_PER_FILE, file_prior, fuse_ranks, rank_files};
    let keys: Vec<String> = hits.iter().map(|h| format!("{}\n{}", h.repository, h.path)).collect();
    let keyword = rank_files(hits.iter().zip(&keys).filter_map(|(h, k)| h.keyword_score.map(|s| (k.as_str(), s))));
    let vector = rank_files(hits.iter().zip(&keys).filter_map(|(h, k)| h.similarity.map(|s| (k.as_str(), s))));
    let english = rank_files(hits.iter().zip(&keys).filter_map(|(h, k)| h.translated.map(|s| (k.as_str(), s))));
    let terms = code_intel_search::hybrid::query_terms(query);
    // Files defining what the request names: the surer sign first, then by
    // the chunk's own fusion.
    let defining = rank_files(hits.iter().zip(&keys).filter_map(|(h, k)| {
        let sign = if h.called { 2 } else { defines(&h.name, query, &terms) };
        (sign > 0).then(|| (k.as_str(), f64::from(sign) + h.score))
    }));
    let quoted = rank_files(hits.iter().zip(&keys).filter_map(|(h, k)| h.quoted.map(|s| (k.as_str(), s))));
    let paired = rank_files(hits.iter().zip(&keys).filter_map(|(h, k)| h.paired.map(|s| (k.as_str(), s))));
    let mut fused = fuse_ranks(&[
        (&keyword, weights.keyword),
        (&vector, weights.vector),
        (&english, weights.vector * code_intel_search::hybrid::TRANSLATED_SHARE),
        (&defining, weights.definition),
        (&quoted, weights.keyword),
        (&paired, weights.keyword * code_intel_search::hybrid::PAIRS_SHARE),
    ]);
    let query_lower = query.to_lowercase();
    for (key, score) in &mut fused {
        let path = key.split_once('\n').map_or(key.as_str(), |(_, p)| p);
        *score *= file_prior(path, &query_lower);
    }
    let mut files: HashMap<String, Vec<code_intel_shared::SharedHit>> = HashMap::new();
    for (hit, key) in hits.into_iter().zip(keys) {
        files.entry(key).or_default().push(hit);
    }
    let mut files: Vec<(f64, String, Vec<code_intel_shared::SharedHit>)> =
        files.into_iter().map(|(key, chunks)| (fused.get(&key).copied().unwrap_or(0.0), key, chunks)).collect();
    files.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut out = Vec::new();
    for (_, _, mut chunks) in files {
        // A chunk the request calls by an alias first, as it names the
        // file (locally its definition weight puts it there).
        chunks.sort_by(|a, b| b.called.cmp(&a.called).then(b.score.total_cmp(&a.score)).then(a.start_line.cmp(&b.start_line)));
        out.extend(chunks.into_iter().take(CHUNKS_PER_FILE));
        if out.len() >= limit {
            break;
        }
    }
    out.truncate(limit);
    out
}

/// `code-intel search --shared`: every repository published to the store,
/// or those `repositories` names (`--repository`).
/// `Ok(None)`: the store is not usable (the caller searches locally, after
/// the status line printed here).
///
/// # Errors
/// No store configured, a name no published repository answers to, or a
/// database error.
pub fn search(
    query: &str,
    root: &Path,
    config: &Config,
    repositories: &[String],
    limit: usize,
    json: bool,
) -> Result<Option<String>, String> {
    let Some(url) = configured_url(config.shared_store.as_deref()) else {
        return Err(format!(
            "--shared needs a shared store: set {} or `shared_store` in .code-intel/config.json to its PostgreSQL URL",
            code_intel_shared::STORE_ENV
        ));
    };
    let shared = match SharedStore::connect(&url) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("note: {e}; searching this repository's local index only");
            return Ok(None);
        }
    };
    let scope = match shared.scope(repositories) {
        Ok(scope) => scope,
        Err(ScopeError::Unknown(why)) => return Err(format!("--repository: {why}")),
        Err(ScopeError::Database(why)) => {
            eprintln!("note: shared store {} unavailable: {why}; searching this repository's local index only", shared.shown());
            return Ok(None);
        }
    };
    // The keyword arm needs no query vector: it runs on a second
    // connection while the models load and the query is embedded here.
    std::thread::scope(|s| {
        let keyword = keyword_arm_beside(s, &shared, query, &scope);
        answer(query, root, config, limit, json, &shared, &scope, keyword)
    })
}

/// The rest of [`search`], while `keyword` runs: the query embedded, the
/// vector arm, the judgement and the answer.
#[allow(clippy::too_many_arguments)]
fn answer(
    query: &str,
    root: &Path,
    config: &Config,
    limit: usize,
    json: bool,
    shared: &SharedStore,
    scope: &Scope,
    keyword: std::thread::ScopedJoinHandle<'_, Result<code_intel_shared::KeywordArm, String>>,
) -> Result<Option<String>, String> {
    // A request in another language may be read in English (`ranked`): the
    // English model, loading meanwhile, embeds that reading.
    let english_loading = (!code_intel_search::semantic::is_english(query))
        .then(|| code_intel_search::semantic::english_model_options(config, root))
        .flatten()
        .map(|o| code_intel_embed::ModelHandle::spawn(o, code_intel_embed::EncoderOptions::default()));
    // A request in English is embedded by the English model when every
    // published repository has its vectors (`use_english`), else by the
    // main model.
    let english = if code_intel_search::semantic::is_english(query) {
        code_intel_search::semantic::english_model_options(config, root)
            .map(|o| code_intel_embed::ModelHandle::load_blocking(&o, &code_intel_embed::EncoderOptions::default()).state())
            .and_then(|s| s.encoder().cloned())
    } else {
        None
    };
    let english = match english {
        Some(encoder) if use_english(&shared, query, &encoder.info().key.to_string(), None, &scope)? => Some(encoder),
        _ => None,
    };
    let main_state = if english.is_some() {
        None
    } else {
        Some(
            code_intel_embed::ModelHandle::load_blocking(
                &code_intel_embed::ResolveOptions::new(Some(&config.embedding_model), Some(root))
                    .with_endpoint(config.embedding_endpoint.as_deref()),
                &code_intel_embed::EncoderOptions::default(),
            )
            .state(),
        )
    };
    let used_english = english.is_some();
    let encoder = english.or_else(|| main_state.as_ref().and_then(|s| s.encoder().cloned()));
    let embedded = match &encoder {
        Some(encoder) => match encoder.embed_query(query) {
            Ok(v) => Some((encoder.info().key.to_string(), v)),
            Err(e) => {
                eprintln!("note: keyword search only: the query could not be embedded: {e}");
                None
            }
        },
        None => None,
    };
    // The anchors the query's similarities are calibrated against, kept
    // beside this repository's vector snapshots when it has a local index,
    // else in the user's cache folder: embedding them takes 0.4-1 s
    // on each search.
    let anchors_dir = anchors_dir(root);
    let anchors_dir = Some(anchors_dir.as_path());
    let baselines = match (&encoder, &embedded) {
        (Some(encoder), Some((_, v))) => query_baselines(encoder, v, anchors_dir),
        _ => None,
    };
    // The English model's topic vote, seconded by the main model's when it
    // leans to everyday talk (that model loaded only then).
    let everyday = super::shared_confidence::reads_as_everyday(baselines, || {
        if !used_english {
            return None;
        }
        let main = code_intel_embed::ModelHandle::load_blocking(
            &code_intel_embed::ResolveOptions::new(Some(&config.embedding_model), Some(root))
                .with_endpoint(config.embedding_endpoint.as_deref()),
            &code_intel_embed::EncoderOptions::default(),
        )
        .state();
        let main = main.encoder()?;
        let v = main.embed_query(query).ok()?;
        query_baselines(main, &v, anchors_dir)
    });
    let dictionary = [encoder.as_ref(), main_state.as_ref().and_then(|s| s.encoder())]
        .into_iter()
        .flatten()
        .find(|e| e.is_whole_word("the").is_some());
    let judgement = Judgement { dictionary: dictionary.map(|e| &**e), baselines, everyday };
    let english_model = english_loading.map(|handle| {
        let _ = handle.wait(code_intel_search::semantic::MODEL_WAIT);
        handle.state()
    });
    // The store's part after the embedding: the vector arm, the keyword
    // arm's end if it is still running, the judgement and the ranking;
    // for a Japanese request read in English (from the keyword arm's
    // words), that query embedded, by the English model when every
    // repository has its vectors, and its vector arm.
    let started = std::time::Instant::now();
    let vector = shared.vector_arm(embedded.as_ref().map(|(k, v)| (k.as_str(), v.as_slice())), scope)?;
    let readers = Readers {
        english: english_model.as_ref().and_then(|s| s.encoder()).map(|e| &**e),
        main: main_state.as_ref().and_then(|s| s.encoder()).map(|e| &**e),
    };
    let mut outcome = ranked(shared, query, joined(keyword)?, vector, readers, scope, &config.search_weights, limit.max(1), &judgement)?;
    let query_ms = started.elapsed().as_secs_f64() * 1000.0;
    if let Some(state) = main_state.as_ref().filter(|s| s.encoder().is_none()) {
        outcome.vector_status = format!("unavailable: {}", state.status());
    }
    if json {
        let value = serde_json::json!({
            "shared": { "store": shared.shown(), "repositories": outcome.repositories, "searched": if scope.is_everything() { None } else { Some(&scope.names) }, "older_words": outcome.older_words, "vector_search": outcome.vector_status, "vector_model": embedded.as_ref().map(|(k, _)| k), "english_query": outcome.english_query, "query_ms": query_ms },
            "results": outcome.hits,
            "no_confident_match": outcome.no_confident_match.is_some(),
            "message": outcome.no_confident_match,
        });
        return Ok(Some(
            serde_json::to_string_pretty(&value).unwrap_or_default() + "\n",
        ));
    }
    let searched = if scope.is_everything() {
        format!("{} repositories", outcome.repositories)
    } else {
        scope.names.join(", ")
    };
    let mut out = format!(
        "{} results for {query:?} from {searched} published to {} (vector search {}; {query_ms:.0} ms)\n",
        outcome.hits.len(),
        shared.shown(),
        outcome.vector_status
    );
    if outcome.older_words > 0 {
        out.push_str(&format!(
            "  note: repositories last published by an older code-intel, whose words lack CJK character pairs: {}; run `code-intel index` in each (or let CI publish them) to match them fully\n",
            outcome.older_words
        ));
    }
    if let Some(english) = &outcome.english_query {
        out.push_str(&format!("  also searched in English as: {english}\n"));
    }
    if let Some(message) = &outcome.no_confident_match {
        out.push_str(&format!("  {message}\n"));
    }
    for (i, h) in outcome.hits.iter().enumerate() {
        out.push_str(&format!(
            "{:>3}. {}  {}:{}-{}  {} {}  [{}]\n",
            i + 1,
            h.repository,
            h.path,
            h.start_line,
            h.end_line,
            h.kind,
            h.name,
            h.arms.join("+")
        ));
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use code_intel_search::hybrid::query_terms;
    use code_intel_shared::SharedHit;

    fn hit(repository: &str, path: &str, line: i32, keyword: Option<f64>, similarity: Option<f64>) -> SharedHit {
        SharedHit {
            repository: repository.into(),
            path: path.into(),
            chunk_id: format!("{path}:{line}"),
            kind: "function".into(),
            name: "f".into(),
            start_line: line,
            end_line: line + 5,
            score: keyword.unwrap_or(0.0) + similarity.unwrap_or(0.0),
            arms: Vec::new(),
            keyword_score: keyword,
            similarity,
            quoted: None,
            vector_score: None,
            called: false,
            translated: None,
            paired: None,
        }
    }

    /// A chunk whose name is made of the request's words, or is the
    /// identifier searched for, is ranked as a definition.
    #[test]
    fn definitions_go_up() {
        let weights = code_intel_core::config::SearchWeights::default();
        let mut defining = hit("a", "app/orders.py", 1, Some(0.2), None);
        defining.name = "compute_order_total".into();
        let other = hit("a", "app/cart.py", 1, Some(0.3), None);
        let ranked = by_file("where do we compute the order total", vec![defining.clone(), other.clone()], &weights, 10);
        assert_eq!(ranked[0].path, "app/orders.py");
        let ranked = by_file("ComputeOrderTotal", vec![other.clone(), defining.clone()], &weights, 10);
        assert_eq!(ranked[0].path, "app/orders.py", "the identifier searched for");
        // A one-word name made of a request's word is too weak a sign.
        defining.name = "compute".into();
        let ranked = by_file("where do we compute the order total", vec![defining.clone(), other.clone()], &weights, 10);
        assert_eq!(ranked[0].path, "app/cart.py");
        // An identifier the request writes is a surer sign than a name made
        // of its words.
        let terms = query_terms("UserService rename");
        assert_eq!(defines("UserService", "UserService rename", &terms), 2);
        assert_eq!(defines("user_service", "UserService rename", &terms), 2);
        assert_eq!(defines("rename_user", "UserService rename", &terms), 0, "rename and user are apart");
        let terms = query_terms("rename a user in UserService");
        assert_eq!(defines("rename_user", "rename a user in UserService", &terms), 1);
        assert_eq!(defines("rename", "UserService rename", &terms), 0);
        assert_eq!(defines("send", "send", &query_terms("send")), 2);
        assert_eq!(defines("send", "send the email", &query_terms("send the email")), 0);
    }

    /// A chunk the request calls by an alias ranks its file as a definition
    /// would, whether an arm found it or not, and comes first in its file.
    #[test]
    fn chunks_called_by_an_alias_rank_their_files_as_definitions() {
        let weights = code_intel_core::config::SearchWeights::default();
        let query = "the customer column in the orders list shows ids";
        let first = hit("a", "app/Filament/Resources/Customers/CustomerResource.php", 1, Some(0.9), None);
        let near = hit("a", "app/Models/Customer.php", 1, None, Some(0.7));
        let table = hit("a", "app/Filament/Resources/Orders/Tables/OrdersTable.php", 17, Some(0.5), None);
        let called = SharedHit { called: true, ..table.clone() };
        let paths = |hits: Vec<SharedHit>| by_file(query, hits, &weights, 20).into_iter().map(|h| h.path).collect::<Vec<_>>();
        // Not called: the keyword arm's first file stays first.
        let mut hits = vec![first.clone(), near.clone(), table.clone()];
        assert_eq!(paths(hits.clone())[0], first.path);
        // Called, and found by an arm: marked, not added again, and first.
        add_called(vec![called.clone()], &mut hits);
        assert_eq!(hits.len(), 3);
        assert!(hits[2].called);
        assert_eq!(paths(hits)[0], table.path);
        // Called, found by neither arm: added, shown as the keyword arm's,
        // and ranked ahead of the vector arm's fifth file (not called: last).
        let mut hits = vec![first];
        hits.extend((0..5).map(|i| hit("a", &format!("app/Near{i}.php"), 1, None, Some(0.7 - 0.1 * f64::from(i)))));
        let unfound = SharedHit { keyword_score: None, ..table.clone() };
        let mut plain = hits.clone();
        plain.push(unfound.clone());
        assert_eq!(paths(plain).last(), Some(&table.path));
        add_called(vec![SharedHit { called: true, ..unfound }], &mut hits);
        assert_eq!(hits.last().unwrap().arms, vec!["keyword"]);
        let order = paths(hits);
        let at = |p: &str| order.iter().position(|x| x == p).unwrap();
        assert!(at(&table.path) < at("app/Near4.php"), "{order:?}");
        // Within its file, the called chunk comes first.
        let mut other = hit("a", &table.path, 80, Some(0.9), Some(0.6));
        other.chunk_id = "other".into();
        let ranked = by_file(query, vec![other, SharedHit { called: true, ..table }], &weights, 20);
        assert!(ranked[0].called, "{ranked:?}");
    }

    /// What the request read in English found ranks files beside the
    /// arms: a chunk both found is marked (its first similarity kept), not
    /// added again; a chunk only it found is added; and a file it found
    /// passes one the request's own vectors liked a little more.
    #[test]
    fn the_request_read_in_english_ranks_files_too() {
        let weights = code_intel_core::config::SearchWeights::default();
        let query = "注文一覧の並び順を変えたい";
        let liked = hit("a", "app/Orders/OrderList.php", 1, None, Some(0.6));
        let read = hit("a", "app/Orders/OrderSort.php", 1, None, Some(0.5));
        let paths = |hits: Vec<SharedHit>| by_file(query, hits, &weights, 10).into_iter().map(|h| h.path).collect::<Vec<_>>();
        assert_eq!(paths(vec![liked.clone(), read.clone()]), [liked.path.clone(), read.path.clone()]);
        let mut hits = vec![liked.clone(), read.clone()];
        let english_only = hit("a", "app/Orders/Sorting.php", 1, None, Some(0.3));
        add_translated(vec![hit("a", &read.path, 1, None, Some(0.7)), hit("a", &read.path, 1, None, Some(0.2)), english_only.clone()], &mut hits);
        assert_eq!(hits.len(), 3);
        assert_eq!(hits[1].translated, Some(0.7));
        assert_eq!((hits[2].similarity, hits[2].translated), (None, Some(0.3)), "{:?}", hits[2]);
        assert_eq!(paths(hits), [read.path.clone(), liked.path.clone(), english_only.path.clone()]);
    }

    /// Publishing reads a chunk's aliases from its metadata.
    #[test]
    fn aliases_are_read_from_the_chunk_metadata() {
        let metadata = code_intel_core::Metadata::parse(r#"{"aliases": ["orders list", "orders table"], "columns": []}"#.into()).unwrap();
        assert_eq!(chunk_aliases(&metadata), ["orders list", "orders table"]);
        assert!(chunk_aliases(&code_intel_core::Metadata::empty()).is_empty());
        let no_aliases = code_intel_core::Metadata::parse(r#"{"columns": ["aliases"]}"#.into()).unwrap();
        assert!(chunk_aliases(&no_aliases).is_empty());
    }

    /// The files holding text the request quotes, and those holding its
    /// neighbouring words side by side, are rankings of their own: such a
    /// file passes one the keywords liked a little more.
    #[test]
    fn files_holding_quoted_text_or_neighbouring_words_go_up() {
        let weights = code_intel_core::config::SearchWeights::default();
        let quoting = |h: &mut SharedHit| h.quoted = Some(0.1);
        let pairing = |h: &mut SharedHit| h.paired = Some(0.1);
        let cases: [(&str, &str, &dyn Fn(&mut SharedHit)); 2] = [
            ("the 'item updated' email only has the title in its subject", "app/Notifications/ItemUpdatedNotification.php", &quoting),
            ("make the trailing slash redirect permanent", "app/routing.py", &pairing),
        ];
        for (query, path, mark) in cases {
            let first = hit("a", "app/Mail/Digest.php", 1, Some(0.9), None);
            let mut holding = hit("a", path, 1, Some(0.8), None);
            let ranked = by_file(query, vec![first.clone(), holding.clone()], &weights, 10);
            assert_eq!(ranked[0].path, "app/Mail/Digest.php", "{query}");
            mark(&mut holding);
            let ranked = by_file(query, vec![first, holding], &weights, 10);
            assert_eq!(ranked[0].path, path, "{query}");
        }
    }

    /// Files are ranked on the evidence of both arms, priors weigh tests
    /// down, each file shows at most its best chunks, and files of two
    /// repositories with the same path stay apart.
    #[test]
    fn organisation_wide_hits_are_ranked_by_file() {
        let hits = vec![
            // Best by keywords alone, in a test.
            hit("a", "tests/test_login.py", 1, Some(0.9), None),
            // Both arms, three chunks.
            hit("a", "app/login.py", 1, Some(0.5), Some(0.6)),
            hit("a", "app/login.py", 20, Some(0.4), None),
            hit("a", "app/login.py", 40, None, Some(0.5)),
            // The same path in another repository: vectors only.
            hit("b", "app/login.py", 1, None, Some(0.7)),
            hit("b", "app/other.py", 1, Some(0.3), None),
        ];
        let ranked = by_file("the login form rejects valid passwords", hits, &code_intel_core::config::SearchWeights::default(), 10);
        let order: Vec<(&str, &str, i32)> = ranked.iter().map(|h| (h.repository.as_str(), h.path.as_str(), h.start_line)).collect();
        assert_eq!(order[0].0, "a");
        assert_eq!(order[0].1, "app/login.py");
        assert_eq!(order.iter().filter(|h| h.0 == "a" && h.1 == "app/login.py").count(), code_intel_search::files::CHUNKS_PER_FILE);
        let test_at = order.iter().position(|h| h.1 == "tests/test_login.py").unwrap();
        let other_repo_at = order.iter().position(|h| h.0 == "b" && h.1 == "app/login.py").unwrap();
        assert!(other_repo_at < test_at, "the test file is weighed down: {order:?}");
        // Asked about tests, the test file is weighed down less: third
        // (first at full weight) instead of after every source file.
        let hits = || {
            let mut hits = vec![hit("a", "tests/test_login.py", 1, Some(0.9), None)];
            for (i, path) in ["app/login.py", "app/a.py", "app/b.py", "app/c.py", "app/d.py"].into_iter().enumerate() {
                hits.push(hit("a", path, 1, Some(0.5 - 0.05 * f64::from(u8::try_from(i).unwrap())), None));
            }
            hits
        };
        let test_rank = |query: &str| {
            let ranked = by_file(query, hits(), &code_intel_core::config::SearchWeights::default(), 10);
            ranked.iter().position(|h| h.path == "tests/test_login.py").unwrap()
        };
        assert_eq!(test_rank("add a test for the login form"), 2);
        assert_eq!(test_rank("the login form rejects valid passwords"), 5);
    }
}
