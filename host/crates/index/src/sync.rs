//! Incremental sync: walk, compare fingerprints, chunk what changed in
//! parallel, and write it to the store in batched transactions.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use code_intel_core::chunk::FALLBACK_CHUNKER;
use code_intel_core::config::{self, Config};
use code_intel_core::{ChunkedFile, Chunker};
use code_intel_store::{FileRecord, Store, meta_keys};
use rayon::prelude::*;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::IndexError;
use crate::walk::{SkipReason, SkippedFile, WalkedFile, walk};

/// Sync-metadata key: the chunks generation (see `Store::chunks_generation`)
/// the cross-file links were last brought up to date with, so a sync that
/// changed nothing skips them. Renamed when links started to carry their
/// origin file (v2) and when the key became the generation (v3), so an index
/// from before rebuilds its links once instead of updating them file by file.
const LINKS_BUILT_FROM: &str = "links_built_from_v3";
/// Above this many edited files a full link rebuild is as cheap as
/// re-resolving them one by one.
const MAX_INCREMENTAL_LINK_FILES: usize = 256;

/// Bytes sniffed for a NUL to call a file binary: the same heuristic and
/// window as git and ripgrep (text files essentially never contain NUL).
pub const BINARY_SNIFF_BYTES: usize = 8192;

/// Files written per transaction. Large enough that commit overhead (a WAL
/// append and, with synchronous=NORMAL, no fsync) is amortised, small enough
/// that a killed sync loses well under a second of work.
pub const BATCH_FILES: usize = 256;

/// Content bytes written per transaction at most, so a batch of large files
/// still commits regularly.
pub const BATCH_BYTES: usize = 16 * 1024 * 1024;

/// A batch is committed after this long even if not full, so progress is
/// durable and visible to concurrent readers while slow plugins run.
pub const BATCH_MAX_AGE: Duration = Duration::from_millis(500);

/// Chunked files buffered between the chunking workers and the writer:
/// bounds memory while keeping every core busy.
pub const PIPELINE_DEPTH: usize = 64;

/// A file whose mtime is within this window of the time it was indexed is
/// re-hashed even if mtime and size match: file systems with coarse
/// timestamps (FAT: 2 s) can hide an edit made right after indexing.
pub const RACY_WINDOW_NS: i64 = 2_000_000_000;

/// Name of the lock file in `.code-intel/` that serialises syncs of one
/// repository across processes.
pub const SYNC_LOCK_FILE: &str = "sync.lock";

/// Options for one sync.
#[derive(Clone, Copy, Debug, Default)]
pub struct SyncOptions<'a> {
    /// Re-read and re-chunk every file, even unchanged ones.
    pub force: bool,
    /// Set to stop the sync early; what was written stays consistent and the
    /// next sync resumes.
    pub cancel: Option<&'a AtomicBool>,
}

/// Where a sync is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Another process is syncing this repository; waiting for it.
    Waiting,
    /// Walking the tree and comparing fingerprints.
    Scanning,
    /// Reading, chunking and writing changed files.
    Indexing,
    /// Finished.
    Done,
}

/// A progress report; `done`/`total` count files in the current phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Progress {
    pub phase: Phase,
    pub done: u64,
    pub total: u64,
}

/// Progress callback (the CLI draws a bar, the MCP server sends notifications).
pub type ProgressFn<'a> = &'a (dyn Fn(Progress) + Sync);

/// One plugin failure, for the report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileFailure {
    pub path: String,
    pub plugin: String,
    pub kind: code_intel_core::FailureKind,
    pub message: String,
}

/// What a sync did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SyncReport {
    pub added: u64,
    pub modified: u64,
    pub deleted: u64,
    /// `(from, to)` pairs: a deleted and an added path with the same content.
    /// Not counted in `added`/`deleted`.
    pub renamed: Vec<(String, String)>,
    pub unchanged: u64,
    /// Chunks written by this sync.
    pub chunks: u64,
    /// Files this sync chunked with the line fallback.
    pub fallbacks: u64,
    pub plugin_failures: Vec<FileFailure>,
    pub skipped: Vec<SkippedFile>,
    /// Files and chunks in the index afterwards.
    pub total_files: u64,
    pub total_chunks: u64,
    pub elapsed_ms: u64,
    /// True when the sync was cancelled before finishing (the index is
    /// consistent; the next sync continues).
    pub cancelled: bool,
    /// What happened to the cross-file links.
    pub links: LinksUpdate,
    /// The chunker (its plugins) changed since the last complete sync, so
    /// every file was chunked again ([`Chunker::identity`]).
    pub chunker_changed: bool,
}

/// What a sync did to the cross-file links.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinksUpdate {
    /// Nothing changed, so neither did the links.
    #[default]
    Unchanged,
    /// Only the edited files' links were re-resolved.
    Updated,
    /// The whole table was rebuilt (files added or deleted, facts changed).
    Rebuilt,
}

/// The line-based fallback as a [`Chunker`]: every file becomes 50-line
/// windows. Used when no plugin host is available, and by tests.
#[derive(Clone, Copy, Debug, Default)]
pub struct LineChunker;

impl Chunker for LineChunker {
    fn chunk_file(&self, path: &str, content: &str) -> ChunkedFile {
        ChunkedFile {
            chunks: code_intel_core::line_chunks(path, content),
            chunker: FALLBACK_CHUNKER.to_string(),
            ..ChunkedFile::default()
        }
    }
}

/// Why a pending file is being looked at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Change {
    Added,
    Changed,
}

struct Pending<'w> {
    file: &'w WalkedFile,
    change: Change,
    old_sha: Option<&'w str>,
}

enum Outcome {
    Chunked { record: FileRecord, change: Change, chunked: ChunkedFile, bytes: usize },
    /// Content identical to what is indexed: only mtime/size are updated.
    Unchanged { path: String, size: i64, mtime_ns: i64 },
    Skipped(SkippedFile),
    /// Deleted between the walk and the read.
    Vanished(String),
}

fn now_ns() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

fn sha256_hex(bytes: &[u8]) -> String {
    code_intel_store::chunks::hex(&Sha256::digest(bytes))
}

/// Takes the per-repository sync lock, waiting (and saying so) if another
/// process holds it. Released when the returned file is dropped, or when the
/// process dies.
fn lock_sync(root: &Path, progress: ProgressFn<'_>) -> Result<File, IndexError> {
    let dir = config::state_dir(root);
    std::fs::create_dir_all(&dir).map_err(|source| IndexError::Io { path: dir.clone(), source })?;
    let path = dir.join(SYNC_LOCK_FILE);
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|source| IndexError::Io { path: path.clone(), source })?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            tracing::info!("another process is syncing this repository; waiting for it");
            progress(Progress { phase: Phase::Waiting, done: 0, total: 0 });
            file.lock().map_err(|source| IndexError::Io { path: path.clone(), source })?;
        }
        Err(std::fs::TryLockError::Error(source)) => return Err(IndexError::Io { path, source }),
    }
    Ok(file)
}

/// Whether another process is syncing `root` right now (its sync lock is
/// held).
#[must_use]
pub fn sync_in_progress(root: &Path) -> bool {
    let path = config::state_dir(root).join(SYNC_LOCK_FILE);
    let Ok(file) = File::options().write(true).open(&path) else { return false };
    matches!(file.try_lock(), Err(std::fs::TryLockError::WouldBlock))
}

/// Brings the index of `root` up to date with the files on disk.
///
/// Files are chunked in parallel (rayon) and written in transactions of at
/// most [`BATCH_FILES`] files; each file's rows are replaced atomically. If
/// the process is killed, every committed batch stays and the next sync
/// picks up the rest. Two processes syncing one repository take turns.
///
/// # Errors
/// Store errors, an invalid exclude pattern or source dir, or an unusable
/// `.code-intel/` directory. Problems with individual files are not errors:
/// they are in the report's `skipped` list.
pub fn sync(
    root: &Path,
    store: &mut Store,
    chunker: &dyn Chunker,
    config: &Config,
    options: SyncOptions<'_>,
    progress: ProgressFn<'_>,
) -> Result<SyncReport, IndexError> {
    let started = Instant::now();
    let _lock = lock_sync(root, progress)?;
    chunker.begin_run();
    progress(Progress { phase: Phase::Scanning, done: 0, total: 0 });
    let sync_start_ns = now_ns();

    // The walk (stat-bound, on worker threads) runs while this thread reads
    // what the index holds.
    let (walked, indexed, (links_were_current, chunked_by)) = std::thread::scope(|scope| {
        let walker = scope.spawn(|| walk(root, config));
        let read = (|| {
            store.write(|w| w.set_meta(meta_keys::SYNC_STARTED_MS, &(sync_start_ns / 1_000_000).to_string()))?;
            // Links can be updated file by file only from a table that
            // matched the chunks when this sync started.
            let links_were_current = store.meta(LINKS_BUILT_FROM)?.as_deref() == Some(store.chunks_generation()?.as_str());
            let mut indexed = store.indexed_files()?;
            indexed.sort_unstable_by(|a, b| a.path.cmp(&b.path));
            let chunked_by = store.meta(meta_keys::CHUNKER_IDENTITY)?;
            Ok::<_, IndexError>((indexed, links_were_current, chunked_by))
        })();
        let walked = walker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        read.and_then(|(indexed, current, chunked_by)| Ok((walked?, indexed, (current, chunked_by))))
    })?;
    tracing::debug!(ms = started.elapsed().as_millis(), files = walked.files.len(), "sync: walked");
    let mut report = SyncReport { skipped: walked.skipped, ..SyncReport::default() };
    // Files chunked by other plugins (or other versions of them) are chunked
    // again, changed or not: an upgrade reaches the whole index. An index
    // built before identities were kept counts as chunked by others.
    let identity = chunker.identity();
    report.chunker_changed = identity.is_some() && !indexed.is_empty() && chunked_by != identity;
    if report.chunker_changed {
        tracing::info!(was = ?chunked_by, now = ?identity, "the plugins changed since the last index: every file is chunked again");
    }
    let force = options.force || report.chunker_changed;

    // Both lists are sorted by path: one merge pass pairs each walked file
    // with what the index holds for it. Indexed files the walk did not find
    // are deleted, except files we could not read, which keep whatever the
    // index has for them.
    let unreadable: HashSet<&str> = report
        .skipped
        .iter()
        .filter(|s| matches!(s.reason, SkipReason::Unreadable { .. }))
        .map(|s| s.path.as_str())
        .collect();
    let mut deleted: Vec<&code_intel_store::IndexedFile> = Vec::new();
    let mut olds = indexed.iter().peekable();
    let mut pending = Vec::new();
    for file in &walked.files {
        while let Some(gone) = olds.next_if(|o| o.path < file.path) {
            if !unreadable.contains(gone.path.as_str()) {
                deleted.push(gone);
            }
        }
        match olds.next_if(|o| o.path == file.path) {
            None => pending.push(Pending { file, change: Change::Added, old_sha: None }),
            Some(old) => {
                let same_stat = i64::try_from(file.size).ok() == Some(old.size) && file.mtime_ns == old.mtime_ns;
                let racy = old.mtime_ns.saturating_add(RACY_WINDOW_NS) >= old.indexed_at_ns;
                if force || !same_stat || racy {
                    pending.push(Pending { file, change: Change::Changed, old_sha: Some(&old.sha256) });
                } else {
                    report.unchanged += 1;
                }
            }
        }
    }
    deleted.extend(olds.filter(|o| !unreadable.contains(o.path.as_str())));

    // Deletions first: they free chunk budget and are cheap.
    let mut deleted_sha: HashMap<&str, Vec<&str>> = HashMap::new();
    for batch in deleted.chunks(BATCH_FILES * 4) {
        store.write(|w| {
            for file in batch {
                w.delete_file(&file.path)?;
            }
            Ok::<_, IndexError>(())
        })?;
    }
    for file in &deleted {
        deleted_sha.entry(file.sha256.as_str()).or_default().push(file.path.as_str());
    }
    report.deleted = deleted.len() as u64;

    // What the edited files contributed to link resolution before they
    // were rewritten (see `links::fact_signatures`), read batch by batch
    // just before each write; `None` once a full link rebuild is certain.
    let mut old_facts: Option<HashMap<String, u64>> = links_were_current.then(HashMap::new);

    let total = pending.len() as u64;
    progress(Progress { phase: Phase::Indexing, done: 0, total });
    if !pending.is_empty() {
        let paths: Vec<&str> = pending.iter().map(|p| p.file.path.as_str()).collect();
        chunker.prepare(&paths);
    }
    let mut chunk_total = store.chunk_total()?;
    let mut added_sha: Vec<(String, String)> = Vec::new(); // (path, sha) of added files
    let mut modified_paths: Vec<String> = Vec::new();
    let stop = AtomicBool::new(false);
    let stopped = |stop: &AtomicBool| stop.load(Ordering::Relaxed) || options.cancel.is_some_and(|c| c.load(Ordering::Relaxed));

    let result: Result<(), IndexError> = std::thread::scope(|scope| {
        let (tx, rx) = mpsc::sync_channel::<Outcome>(PIPELINE_DEPTH);
        let stop_ref = &stop;
        let pending_ref = &pending;
        scope.spawn(move || {
            pending_ref.par_iter().for_each_with(tx, |tx, item| {
                if stopped(stop_ref) {
                    return;
                }
                let outcome = process(item, chunker, force, config.skip_generated);
                if tx.send(outcome).is_err() {
                    stop_ref.store(true, Ordering::Relaxed);
                }
            });
        });

        let mut batch: Vec<Outcome> = Vec::new();
        let mut batch_bytes = 0usize;
        let mut batch_started = Instant::now();
        let mut done = 0u64;
        let mut flush = |batch: &mut Vec<Outcome>, report: &mut SyncReport| {
            let edited: Vec<String> = batch
                .iter()
                .filter_map(|o| match o {
                    Outcome::Chunked { record, change: Change::Changed, .. } => Some(record.path.clone()),
                    _ => None,
                })
                .collect();
            if let Some(facts) = &mut old_facts
                && !edited.is_empty()
            {
                if facts.len() + edited.len() > MAX_INCREMENTAL_LINK_FILES {
                    old_facts = None;
                } else {
                    facts.extend(crate::links::fact_signatures(&store.link_sources_in(&edited)?));
                }
            }
            let indexed_at = now_ns();
            let mut total = chunk_total;
            let mut batch_report = SyncReport::default();
            let mut batch_added = Vec::new();
            let mut batch_modified = Vec::new();
            let outcome = store.write(|w| {
                for item in batch.iter() {
                    match item {
                        Outcome::Chunked { record, change, chunked, .. } => {
                            let old = w.file_chunk_count(&record.path)?;
                            let new = chunked.chunks.len() as u64;
                            if total.saturating_sub(old) + new > config.max_chunks {
                                batch_report.skipped.push(SkippedFile {
                                    path: record.path.clone(),
                                    reason: SkipReason::MaxChunks { limit: config.max_chunks },
                                });
                                continue;
                            }
                            w.replace_file(record, chunked, indexed_at)?;
                            total = total.saturating_sub(old) + new;
                            match change {
                                Change::Added => {
                                    batch_report.added += 1;
                                    batch_added.push((record.path.clone(), record.sha256.clone()));
                                }
                                Change::Changed => {
                                    batch_report.modified += 1;
                                    batch_modified.push(record.path.clone());
                                }
                            }
                            batch_report.chunks += new;
                            if chunked.chunker == FALLBACK_CHUNKER {
                                batch_report.fallbacks += 1;
                            }
                            batch_report.plugin_failures.extend(chunked.failures.iter().map(|f| FileFailure {
                                path: record.path.clone(),
                                plugin: f.plugin.clone(),
                                kind: f.kind,
                                message: f.message.clone(),
                            }));
                        }
                        Outcome::Unchanged { path, size, mtime_ns } => {
                            w.touch_file(path, *size, *mtime_ns, indexed_at)?;
                            batch_report.unchanged += 1;
                        }
                        Outcome::Vanished(path) => {
                            if w.delete_file(path)? {
                                batch_report.deleted += 1;
                            }
                        }
                        Outcome::Skipped(skip) => {
                            // An unreadable file keeps what the index has; one that
                            // became binary (or otherwise unindexable) leaves it.
                            if !matches!(skip.reason, SkipReason::Unreadable { .. }) && w.delete_file(&skip.path)? {
                                batch_report.deleted += 1;
                            }
                            batch_report.skipped.push(skip.clone());
                        }
                    }
                }
                Ok::<_, IndexError>(())
            });
            batch.clear();
            outcome?;
            // Counted only once committed.
            chunk_total = total;
            report.added += batch_report.added;
            report.modified += batch_report.modified;
            report.deleted += batch_report.deleted;
            report.unchanged += batch_report.unchanged;
            report.chunks += batch_report.chunks;
            report.fallbacks += batch_report.fallbacks;
            report.plugin_failures.append(&mut batch_report.plugin_failures);
            report.skipped.append(&mut batch_report.skipped);
            added_sha.append(&mut batch_added);
            modified_paths.append(&mut batch_modified);
            Ok::<_, IndexError>(())
        };
        for outcome in rx.iter() {
            done += 1;
            if let Outcome::Chunked { bytes, .. } = &outcome {
                batch_bytes += bytes;
            }
            batch.push(outcome);
            if batch.len() >= BATCH_FILES || batch_bytes >= BATCH_BYTES || batch_started.elapsed() >= BATCH_MAX_AGE {
                if let Err(e) = flush(&mut batch, &mut report) {
                    stop.store(true, Ordering::Relaxed);
                    return Err(e);
                }
                batch_bytes = 0;
                batch_started = Instant::now();
            }
            progress(Progress { phase: Phase::Indexing, done, total });
            if stopped(&stop) {
                break;
            }
        }
        let flushed = flush(&mut batch, &mut report);
        stop.store(true, Ordering::Relaxed);
        drop(rx);
        flushed
    });
    result?;
    tracing::debug!(ms = started.elapsed().as_millis(), files = total, "sync: chunked and written");

    // Cross-file links: re-resolve just the edited files when nothing their
    // neighbours' links depend on changed; else rebuild them all (also when
    // the chunks no longer match what the links were built from: a sync
    // killed between its last batch and this step).
    let chunks_key = store.chunks_generation()?;
    if report.added + report.modified + report.deleted > 0 || store.meta(LINKS_BUILT_FROM)?.as_deref() != Some(chunks_key.as_str())
    {
        let incremental = report.added == 0
            && report.deleted == 0
            && links_were_current
            && !modified_paths.iter().any(|p| crate::links::is_routes_file(p))
            && modified_paths.len() <= MAX_INCREMENTAL_LINK_FILES
            && match &old_facts {
                Some(old) => {
                    let new = crate::links::fact_signatures(&store.link_sources_in(&modified_paths)?);
                    modified_paths.iter().all(|p| old.get(p) == new.get(p))
                }
                None => false,
            };
        if incremental {
            let files: HashSet<String> = indexed.iter().map(|f| f.path.clone()).collect();
            crate::links::update(root, store, &modified_paths, &files)?;
            report.links = LinksUpdate::Updated;
        } else {
            crate::links::rebuild(root, store)?;
            report.links = LinksUpdate::Rebuilt;
        }
        let built_from = store.chunks_generation()?;
        store.write(|w| w.set_meta(LINKS_BUILT_FROM, &built_from))?;
        tracing::debug!(ms = started.elapsed().as_millis(), incremental, "sync: links updated");
    }

    // A deleted path and an added path with the same content: a rename.
    for (path, sha) in &added_sha {
        if let Some(from) = deleted_sha.get_mut(sha.as_str()).and_then(Vec::pop) {
            report.renamed.push((from.to_string(), path.clone()));
        }
    }
    report.renamed.sort();
    report.added -= report.renamed.len() as u64;
    report.deleted -= report.renamed.len() as u64;
    report.cancelled = options.cancel.is_some_and(|c| c.load(Ordering::Relaxed));
    report.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    (report.total_files, report.total_chunks) = (store.file_count()?, store.chunk_total()?);
    tracing::debug!(ms = started.elapsed().as_millis(), "sync: counted");
    report.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    if !report.cancelled {
        let json = serde_json::to_string(&report).map_err(code_intel_store::StoreError::from)?;
        store.write(|w| {
            w.set_meta(meta_keys::LAST_SYNC_MS, &(now_ns() / 1_000_000).to_string())?;
            w.set_meta(meta_keys::LAST_SYNC_REPORT, &json)?;
            if let Some(identity) = &identity {
                w.set_meta(meta_keys::CHUNKER_IDENTITY, identity)?;
            }
            w.delete_meta(meta_keys::SYNC_STARTED_MS)
        })?;
    }
    progress(Progress { phase: Phase::Done, done: total, total });
    Ok(report)
}

/// Moves the byte spans of `chunked`, made on the text of a file that is not
/// valid UTF-8 (each invalid sequence replaced by U+FFFD, three bytes), onto
/// the file's own bytes, so that a span never ends past the file or points
/// at other bytes than the ones it names. Lines are the same in both.
fn file_offsets(bytes: &[u8], chunked: &mut ChunkedFile) {
    // (offset in the text, offset in the file) where each piece starts.
    let mut starts: Vec<(usize, usize)> = Vec::new();
    let (mut text, mut file) = (0, 0);
    for piece in bytes.utf8_chunks() {
        starts.push((text, file));
        text += piece.valid().len();
        file += piece.valid().len();
        if !piece.invalid().is_empty() {
            starts.push((text, file));
            text += char::REPLACEMENT_CHARACTER.len_utf8();
            file += piece.invalid().len();
        }
    }
    let to_file = |at: u32| -> u32 {
        let at = at as usize;
        let i = starts.partition_point(|&(t, _)| t <= at).saturating_sub(1);
        let (t, f) = starts.get(i).copied().unwrap_or((0, 0));
        // Inside a replacement character: its start (it stands for those bytes).
        let inside_replacement = starts.get(i + 1).is_some_and(|&(next_t, next_f)| next_t - t != next_f - f);
        let moved = if inside_replacement { f } else { f + (at - t) };
        u32::try_from(moved.min(bytes.len())).unwrap_or(u32::MAX)
    };
    for chunk in &mut chunked.chunks {
        chunk.start_byte = to_file(chunk.start_byte);
        chunk.end_byte = to_file(chunk.end_byte);
    }
}

fn process(item: &Pending<'_>, chunker: &dyn Chunker, force: bool, skip_generated: bool) -> Outcome {
    let file = item.file;
    let skipped = |reason| Outcome::Skipped(SkippedFile { path: file.path.clone(), reason });
    let bytes = match std::fs::read(&file.abs) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Outcome::Vanished(file.path.clone()),
        Err(e) => return skipped(SkipReason::Unreadable { error: e.to_string() }),
    };
    if bytes[..bytes.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
        return skipped(SkipReason::Binary);
    }
    // Checked before the fingerprint comparison, so a file indexed before
    // the rule existed leaves the index at the next sync.
    if skip_generated && let Some(rule) = crate::hygiene::by_content(&String::from_utf8_lossy(&bytes)) {
        return skipped(SkipReason::Generated { rule: rule.to_string() });
    }
    let sha256 = sha256_hex(&bytes);
    // Sizes come from the bytes actually read (the file may have changed since the walk).
    let size = i64::try_from(bytes.len()).unwrap_or(i64::MAX);
    if !force && item.old_sha == Some(sha256.as_str()) {
        return Outcome::Unchanged { path: file.path.clone(), size, mtime_ns: file.mtime_ns };
    }
    let content = String::from_utf8_lossy(&bytes);
    let mut chunked = chunker.chunk_file(&file.path, &content);
    if let std::borrow::Cow::Owned(_) = content {
        file_offsets(&bytes, &mut chunked);
    }
    Outcome::Chunked {
        record: FileRecord { path: file.path.clone(), sha256, size, mtime_ns: file.mtime_ns },
        change: item.change,
        chunked,
        bytes: bytes.len(),
    }
}
