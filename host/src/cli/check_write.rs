//! `code-intel check-write`: the Claude Code PreToolUse hook that enforces
//! the session workflow's write gate in the editor itself (SPEC §9).
//!
//! Claude Code runs the hook before Edit / Write / MultiEdit / NotebookEdit
//! with a JSON document on stdin (`tool_name`, `tool_input.file_path`, `cwd`,
//! `session_id`, ...). The hook asks the repository's active session (the most
//! recently active session without an outcome) whether the file may be
//! written. Exit code 0 allows the edit; exit code 2 blocks it, and what is
//! written to stderr is shown to the model as the reason, with the recovery
//! options. Files outside the repository are not this hook's business.
//!
//! Also here: `install_claude`, used by `code-intel init --claude`, which
//! installs `.claude/commands/code.md` and registers the hook in
//! `.claude/settings.json` (merged, never clobbered).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use code_intel_core::config;
use code_intel_session::services::{Agreement, AgreementMap, MapHit, SymbolIndex, SymbolSite};
use code_intel_session::{LexicalRelevance, Services, Workflow, WorkflowConfig};
use serde_json::{Value, json};

/// Tools whose calls the hook checks (Claude Code's file-writing tools).
pub const GUARDED_TOOLS: &[&str] = &["Edit", "Write", "MultiEdit", "NotebookEdit"];

/// The matcher registered in `.claude/settings.json`.
pub const HOOK_MATCHER: &str = "Edit|Write|MultiEdit|NotebookEdit";

/// Largest hook document read from stdin. A Write's `tool_input.content`
/// carries the whole new file; 64 MiB is far beyond any source file.
const MAX_HOOK_INPUT: u64 = 64 * 1024 * 1024;

/// Exit code that makes Claude Code block the tool call and show stderr to
/// the model (Claude Code hooks reference: "exit code 2: blocking error").
const BLOCK: u8 = 2;

/// First line of the `/code` command file; marks it as ours so `init
/// --claude` may refresh it.
const COMMAND_MARKER: &str = "<!-- installed by code-intel init --claude -->";

/// Check a Claude Code edit against the active code-intel session (PreToolUse hook).
#[derive(clap::Args, Debug)]
pub struct CheckWriteArgs {
    /// Repository root (default: found from the hook's `cwd`).
    #[arg(long)]
    pub repo: Option<PathBuf>,
}

/// Outcome of one check.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Not a guarded tool, or a file outside the repository.
    NotGuarded(String),
    Allowed(String),
    Blocked(String),
}

pub fn run(args: &CheckWriteArgs) -> ExitCode {
    let mut input = String::new();
    if let Err(e) = std::io::stdin().take(MAX_HOOK_INPUT).read_to_string(&mut input) {
        eprintln!("code-intel check-write: cannot read the hook input on stdin: {e}");
        return ExitCode::from(BLOCK);
    }
    match check(&input, args.repo.as_deref()) {
        Verdict::NotGuarded(_) | Verdict::Allowed(_) => ExitCode::SUCCESS,
        Verdict::Blocked(message) => {
            eprintln!("{message}");
            ExitCode::from(BLOCK)
        }
    }
}

/// Decides on one hook document.
#[must_use]
pub fn check(input: &str, repo: Option<&Path>) -> Verdict {
    let doc: Value = match serde_json::from_str(input) {
        Ok(v) => v,
        Err(e) => {
            return Verdict::Blocked(format!(
                "code-intel check-write: the hook input is not JSON ({e}); this hook must be run by Claude Code as a PreToolUse hook"
            ));
        }
    };
    let tool = doc.get("tool_name").and_then(Value::as_str).unwrap_or_default();
    if !GUARDED_TOOLS.contains(&tool) {
        return Verdict::NotGuarded(format!("{tool} does not write files"));
    }
    let input = doc.get("tool_input").cloned().unwrap_or(Value::Null);
    let Some(file) = ["file_path", "notebook_path", "path"].iter().find_map(|k| input.get(*k).and_then(Value::as_str))
    else {
        return Verdict::Blocked(format!("code-intel check-write: {tool} without tool_input.file_path; cannot check it"));
    };
    let cwd = doc.get("cwd").and_then(Value::as_str).map(PathBuf::from);
    let file_path = if Path::new(file).is_absolute() {
        PathBuf::from(file)
    } else {
        cwd.clone().unwrap_or_else(|| PathBuf::from(".")).join(file)
    };
    let root = match repo {
        Some(r) => r.to_path_buf(),
        None => config::find_repo_root(cwd.as_deref().unwrap_or_else(|| file_path.parent().unwrap_or(Path::new(".")))),
    };
    let Ok(root) = root.canonicalize() else {
        return Verdict::Blocked(format!("code-intel check-write: repository root {} does not exist", root.display()));
    };
    // Resolve the file (or, for a new file, its nearest existing parent) so
    // symlinks and `..` cannot smuggle a path in or out.
    let absolute = canonical_or_parent(&file_path);
    let Ok(relative) = absolute.strip_prefix(&root) else {
        return Verdict::NotGuarded(format!("{} is outside the repository {}", file_path.display(), root.display()));
    };
    let relative = relative.to_string_lossy().replace('\\', "/");
    let workflow = match open_workflow(&root) {
        Ok(w) => w,
        Err(e) => return Verdict::Blocked(format!("code-intel check-write: {e}")),
    };
    let session = match workflow.active_session() {
        Ok(Some(s)) => s,
        Ok(None) => {
            return Verdict::Blocked(format!(
                "code-intel: {tool} of {relative} blocked: no active code-intel session in this repository.\n\
                 Start one (the /code command, or start_session(intent, query) on the code-intel MCP server), explore, and reach READY; \
                 then edits to the files you explored are allowed."
            ));
        }
        Err(e) => return Verdict::Blocked(format!("code-intel check-write: cannot read sessions: {e}")),
    };
    match workflow.check_write_target(&session, &relative) {
        Ok(v) if v["allowed"] == json!(true) => Verdict::Allowed(format!("{relative}: {}", v["reason"].as_str().unwrap_or(""))),
        Ok(v) => Verdict::Blocked(block_message(tool, &relative, &v)),
        Err(e) => Verdict::Blocked(format!("code-intel: {tool} of {relative} blocked: {e}")),
    }
}

fn canonical_or_parent(path: &Path) -> PathBuf {
    if let Ok(p) = path.canonicalize() {
        return p;
    }
    let mut missing = Vec::new();
    let mut cur = path.to_path_buf();
    while let Some(parent) = cur.parent().map(Path::to_path_buf) {
        if let Some(name) = cur.file_name() {
            missing.push(name.to_os_string());
        }
        if let Ok(p) = parent.canonicalize() {
            let mut out = p;
            for m in missing.iter().rev() {
                out.push(m);
            }
            return out;
        }
        cur = parent;
    }
    path.to_path_buf()
}

fn block_message(tool: &str, relative: &str, v: &Value) -> String {
    let mut msg = format!(
        "code-intel: {tool} of {relative} blocked (session {}, phase {}): {}.\nNext: {}",
        v["session_id"].as_str().unwrap_or("?"),
        v["phase"].as_str().unwrap_or("?"),
        v["reason"].as_str().unwrap_or("not allowed"),
        v["next_step"].as_str().unwrap_or("")
    );
    if let Some(options) = v["recovery_options"].as_array().filter(|o| !o.is_empty()) {
        msg.push_str("\nRecovery options (code-intel MCP tools):");
        for o in options {
            msg.push_str(&format!(
                "\n  - {}({}): {}",
                o["tool"].as_str().unwrap_or(""),
                o["args"],
                o["effect"].as_str().unwrap_or("")
            ));
        }
    }
    msg
}

/// The workflow over a repository's database, for the CLI (no server).
fn open_workflow(root: &Path) -> Result<Workflow, String> {
    let (cfg, _) = config::Config::load(root).map_err(|e| e.to_string())?;
    let db = config::database_path(root);
    Workflow::open(
        root,
        WorkflowConfig { learned_pair_ttl_days: cfg.learned_pair_ttl_days },
        Services {
            relevance: Arc::new(LexicalRelevance),
            index: Arc::new(StoreIndex { db }),
            map: Arc::new(NoMap),
        },
    )
    .map_err(|e| e.to_string())
}

/// Definitions read straight from the index database.
struct StoreIndex {
    db: PathBuf,
}

impl SymbolIndex for StoreIndex {
    fn definitions(&self, symbol: &str) -> Result<Vec<SymbolSite>, String> {
        let store = code_intel_store::Store::open_existing(&self.db).map_err(|e| e.to_string())?;
        let rows = store.definitions(symbol, code_intel_store::NameMatch::Exact, &[], 50).map_err(|e| e.to_string())?;
        Ok(rows.into_iter().map(SymbolSite::from).collect())
    }

    fn indexed_files(&self) -> Result<u64, String> {
        let store = code_intel_store::Store::open_existing(&self.db).map_err(|e| e.to_string())?;
        store.file_count().map_err(|e| e.to_string())
    }
}

/// The hook never records outcomes or starts sessions, so it needs no map.
struct NoMap;

impl AgreementMap for NoMap {
    fn add(&self, _agreement: &Agreement, _markdown: &str) -> Result<(), String> {
        Err("the check-write hook does not record agreements".into())
    }
    fn search(&self, _text: &str, _limit: usize) -> Result<Vec<MapHit>, String> {
        Ok(Vec::new())
    }
}

// ---------------------------------------------------------------------------
// init --claude

/// Installs `.claude/commands/code.md` and the PreToolUse hook running
/// `<exe> check-write`. Returns a report of what was done.
///
/// # Errors
/// An unreadable or invalid `.claude/settings.json` (left untouched), I/O errors.
pub fn install_claude(root: &Path, exe: &Path) -> anyhow::Result<String> {
    let mut out = String::new();
    let commands = root.join(".claude").join("commands");
    std::fs::create_dir_all(&commands)?;
    let command_file = commands.join("code.md");
    let body = format!(
        "{COMMAND_MARKER}\n---\ndescription: Work on a coding request through the code-intel workflow (explore before you edit)\nargument-hint: <request>\n---\n\n{}\n\nRequest: $ARGUMENTS\n",
        crate::mcp::session_tools::WORKFLOW_PROMPT
    );
    match std::fs::read_to_string(&command_file) {
        Ok(existing) if !existing.starts_with(COMMAND_MARKER) => {
            out.push_str(&format!("kept {} (not written by code-intel; remove it to install ours)\n", command_file.display()));
        }
        _ => {
            std::fs::write(&command_file, body)?;
            out.push_str(&format!("wrote {} (the /code command)\n", command_file.display()));
        }
    }

    let settings_path = root.join(".claude").join("settings.json");
    let mut doc = match std::fs::read_to_string(&settings_path) {
        Ok(text) => serde_json::from_str::<Value>(&text).map_err(|e| {
            anyhow::anyhow!("{} is not valid JSON ({e}); fix it, then run init --claude again", settings_path.display())
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(e) => anyhow::bail!("cannot read {}: {e}", settings_path.display()),
    };
    let command = format!("{} check-write", shell_quote(exe));
    let changed = merge_hook(&mut doc, &command)
        .map_err(|e| anyhow::anyhow!("{}: {e}; fix it, then run init --claude again", settings_path.display()))?;
    if changed {
        std::fs::write(&settings_path, serde_json::to_string_pretty(&doc)? + "\n")?;
        out.push_str(&format!(
            "updated {}: PreToolUse hook on {HOOK_MATCHER} runs `{command}`\n",
            settings_path.display()
        ));
    } else {
        out.push_str(&format!("kept {}: the check-write hook is already installed\n", settings_path.display()));
    }
    Ok(out)
}

/// Adds (or updates) the check-write hook in a settings document, keeping
/// every other setting and hook. Returns whether anything changed.
///
/// # Errors
/// When `hooks` / `hooks.PreToolUse` exist with the wrong type.
pub fn merge_hook(doc: &mut Value, command: &str) -> Result<bool, String> {
    let obj = doc.as_object_mut().ok_or("the settings file must hold a JSON object")?;
    let hooks = obj.entry("hooks").or_insert_with(|| json!({}));
    let hooks = hooks.as_object_mut().ok_or("`hooks` must be an object")?;
    let pre = hooks.entry("PreToolUse").or_insert_with(|| json!([]));
    let pre = pre.as_array_mut().ok_or("`hooks.PreToolUse` must be an array")?;
    let ours = |h: &Value| h["command"].as_str().is_some_and(|c| c.ends_with(" check-write") || c.contains(" check-write "));
    for entry in pre.iter_mut() {
        let matcher_ok = entry_matcher_ok(entry);
        let Some(list) = entry.get_mut("hooks").and_then(Value::as_array_mut) else { continue };
        if let Some(h) = list.iter_mut().find(|h| ours(h)) {
            if h["command"] == json!(command) && matcher_ok {
                return Ok(false);
            }
            h["command"] = json!(command);
            entry["matcher"] = json!(HOOK_MATCHER);
            return Ok(true);
        }
    }
    pre.push(json!({"matcher": HOOK_MATCHER, "hooks": [{"type": "command", "command": command}]}));
    Ok(true)
}

fn entry_matcher_ok(entry: &Value) -> bool {
    entry["matcher"] == json!(HOOK_MATCHER)
}

fn shell_quote(path: &Path) -> String {
    let s = path.display().to_string();
    if s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:@".contains(c)) {
        s
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_keeps_other_hooks_and_is_idempotent() {
        let mut doc = json!({
            "permissions": {"allow": ["Bash(ls)"]},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}]}
        });
        assert!(merge_hook(&mut doc, "/bin/code-intel check-write").unwrap());
        assert!(!merge_hook(&mut doc, "/bin/code-intel check-write").unwrap());
        let pre = doc["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(pre.len(), 2);
        assert_eq!(pre[0]["hooks"][0]["command"], "guard.sh");
        assert_eq!(pre[1]["matcher"], HOOK_MATCHER);
        assert_eq!(doc["permissions"]["allow"][0], "Bash(ls)");
        // A moved binary updates the command in place.
        assert!(merge_hook(&mut doc, "/opt/code-intel check-write").unwrap());
        assert_eq!(doc["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
        assert_eq!(doc["hooks"]["PreToolUse"][1]["hooks"][0]["command"], "/opt/code-intel check-write");
        assert!(merge_hook(&mut json!({"hooks": []}), "x check-write").is_err());
    }

    #[test]
    fn non_write_tools_and_outside_files_pass() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let read = json!({"tool_name": "Read", "tool_input": {"file_path": "/etc/hosts"}, "cwd": root});
        assert!(matches!(check(&read.to_string(), Some(root)), Verdict::NotGuarded(_)));
        let outside = json!({"tool_name": "Write", "tool_input": {"file_path": "/tmp/elsewhere.txt"}, "cwd": root});
        assert!(matches!(check(&outside.to_string(), Some(root)), Verdict::NotGuarded(_)));
        assert!(matches!(check("not json", Some(root)), Verdict::Blocked(_)));
        let inside = json!({"tool_name": "Edit", "tool_input": {"file_path": root.join("a.py")}, "cwd": root});
        match check(&inside.to_string(), Some(root)) {
            Verdict::Blocked(m) => assert!(m.contains("no active code-intel session"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
