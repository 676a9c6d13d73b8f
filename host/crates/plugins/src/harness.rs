//! The plugin test harness behind `code-intel plugin test PLUGIN.wasm DIR`.
//!
//! Every file under `DIR` that the plugin's patterns match is chunked; the
//! outcome is rendered as pretty JSON and compared with the golden file
//! `<file>.golden.json` beside it. Golden files read like specifications: the
//! input file and what the plugin must make of it, side by side.

use std::fs;
use std::path::{Path, PathBuf};

use code_intel_core::{Chunk, ChunkFailure};
use serde::Serialize;

use crate::host::{Attempt, PluginHost};

/// Suffix of golden files (`models/User.php.golden.json`).
pub const GOLDEN_SUFFIX: &str = ".golden.json";

/// What a golden file holds: the outcome of one `chunk` call.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum GoldenOutcome {
    Chunks { chunks: Vec<Chunk> },
    Decline { reason: String },
    Error { message: String, line: Option<u32> },
}

impl GoldenOutcome {
    /// The golden file text: pretty JSON with a final newline. Field order
    /// follows the chunk record; metadata keys are sorted.
    #[must_use]
    pub fn render(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"unrenderable\": \"{e}\"}}"));
        text.push('\n');
        text
    }
}

/// How one fixture file fared.
#[derive(Clone, Debug)]
pub enum CaseStatus {
    /// Output equals the golden file.
    Pass,
    /// Output differs; the unified diff golden -> actual.
    Mismatch { diff: String },
    /// No golden file yet (run with `--bless` to create it).
    MissingGolden,
    /// `--bless` wrote (or rewrote) the golden file.
    Blessed { changed: bool },
    /// The plugin trapped, timed out, exceeded memory or broke the contract.
    /// Never blessed: that is a bug in the plugin.
    Failed(ChunkFailure),
    /// The fixture or golden file could not be read or written.
    Io(String),
}

/// One fixture file.
#[derive(Clone, Debug)]
pub struct Case {
    /// Path relative to the fixture directory, with `/` separators (the path
    /// the plugin saw).
    pub path: String,
    pub status: CaseStatus,
}

/// The harness run as a whole.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub cases: Vec<Case>,
}

impl Report {
    /// True when every case passed (or was blessed).
    #[must_use]
    pub fn ok(&self) -> bool {
        !self.cases.is_empty() && self.cases.iter().all(|c| matches!(c.status, CaseStatus::Pass | CaseStatus::Blessed { .. }))
    }
}

/// Runs `plugin` (loaded in `host`) on every matching file under `dir`.
///
/// # Errors
/// `dir` cannot be walked, or the host has no plugin by that name.
pub fn run(host: &PluginHost, plugin: &str, dir: &Path, bless: bool) -> Result<Report, String> {
    if !host.plugins().any(|p| p.name == plugin) {
        return Err(format!("no loaded plugin named `{plugin}`"));
    }
    let mut files = Vec::new();
    walk(dir, dir, &mut files)?;
    files.sort();
    let mut report = Report::default();
    for (rel, abs) in files {
        if rel.ends_with(GOLDEN_SUFFIX) || !host.matches(plugin, &rel) {
            continue;
        }
        let status = run_case(host, plugin, &rel, &abs, bless);
        report.cases.push(Case { path: rel, status });
    }
    Ok(report)
}

fn run_case(host: &PluginHost, plugin: &str, rel: &str, abs: &Path, bless: bool) -> CaseStatus {
    let bytes = match fs::read(abs) {
        Ok(b) => b,
        Err(e) => return CaseStatus::Io(format!("cannot read {}: {e}", abs.display())),
    };
    let content = String::from_utf8_lossy(&bytes);
    let outcome = match host.attempt(plugin, rel, &content) {
        Some(Attempt::Chunks(chunks)) => GoldenOutcome::Chunks { chunks },
        Some(Attempt::Decline(reason)) => GoldenOutcome::Decline { reason },
        Some(Attempt::Error { message, line }) => GoldenOutcome::Error { message, line },
        Some(Attempt::Failed(f)) => return CaseStatus::Failed(f),
        None => return CaseStatus::Io(format!("plugin `{plugin}` is not loaded")),
    };
    let actual = outcome.render();
    let golden_path = golden_path(abs);
    let expected = match fs::read_to_string(&golden_path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return CaseStatus::Io(format!("cannot read {}: {e}", golden_path.display())),
    };
    if bless {
        let changed = expected.as_deref() != Some(actual.as_str());
        if changed && let Err(e) = fs::write(&golden_path, &actual) {
            return CaseStatus::Io(format!("cannot write {}: {e}", golden_path.display()));
        }
        return CaseStatus::Blessed { changed };
    }
    match expected {
        None => CaseStatus::MissingGolden,
        Some(expected) if expected == actual => CaseStatus::Pass,
        Some(expected) => CaseStatus::Mismatch {
            diff: similar::TextDiff::from_lines(&expected, &actual)
                .unified_diff()
                .context_radius(3)
                .header(&format!("{rel}{GOLDEN_SUFFIX} (golden)"), &format!("{rel} (actual)"))
                .to_string(),
        },
    }
}

/// `<file>.golden.json` beside `file`.
#[must_use]
pub fn golden_path(file: &Path) -> PathBuf {
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(GOLDEN_SUFFIX);
    file.with_file_name(name)
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) -> Result<(), String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("cannot read directory {}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read directory {}: {e}", dir.display()))?;
        let path = entry.path();
        let file_type = entry.file_type().map_err(|e| format!("cannot stat {}: {e}", path.display()))?;
        if file_type.is_dir() {
            walk(root, &path, out)?;
        } else if file_type.is_file() {
            let rel = path.strip_prefix(root).unwrap_or(&path);
            let rel = rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
            out.push((rel, path));
        }
    }
    Ok(())
}
