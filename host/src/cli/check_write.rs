//! `code-intel check-write`: the hook that enforces the session workflow's
//! write gate in the client itself (SPEC §9).
//!
//! Claude Code (PreToolUse), Gemini CLI (BeforeTool) and Codex (PreToolUse)
//! run the hook before a tool call with a JSON document on stdin
//! (`tool_name`, `tool_input`, `cwd`, ...); Cursor's hooks send `command`
//! (beforeShellExecution) or `tool_name`/`tool_input` (preToolUse). The hook
//! works out which files in the repository the call writes:
//!
//! - file tools: Claude Code's Edit, Write, MultiEdit, NotebookEdit; Gemini
//!   CLI's write_file, replace; Cursor's Write, StrReplace, Delete;
//! - Codex's apply_patch (the files its patch adds, updates, deletes, moves);
//! - shell tools (Bash, run_shell_command, Shell, shell): the command line is
//!   read by [`super::bash_writes`]; what cannot be proven read-only is
//!   refused.
//!
//! Each file inside the repository must be allowed by the active session
//! (the most recently active session without an outcome): READY, explored.
//! Exit code 0 allows the call; exit code 2 blocks it, and stderr is shown
//! to the model as the reason. With `--client cursor` the answer is Cursor's
//! JSON (`{"permission": "deny", ...}`) on stdout. Files outside the
//! repository are not this hook's business.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use code_intel_core::config;
use code_intel_session::services::{Agreement, AgreementMap, MapHit, SymbolIndex, SymbolSite};
use code_intel_session::{LexicalRelevance, Services, Workflow, WorkflowConfig};
use serde_json::{Value, json};

use super::bash_writes;

/// File-writing tools, by client: Claude Code, Gemini CLI, Cursor.
pub const FILE_TOOLS: &[&str] =
    &["Edit", "Write", "MultiEdit", "NotebookEdit", "write_file", "replace", "edit", "StrReplace", "Delete", "create_file"];

/// Shell tools, by client: Claude Code and Codex, Gemini CLI, Cursor, Codex.
pub const SHELL_TOOLS: &[&str] = &["Bash", "run_shell_command", "Shell", "shell", "exec_command", "local_shell", "container.exec"];

/// Patch tools (Codex).
pub const PATCH_TOOLS: &[&str] = &["apply_patch"];

/// The matcher registered in `.claude/settings.json`.
pub const HOOK_MATCHER: &str = "Edit|Write|MultiEdit|NotebookEdit|Bash";

/// The matcher registered in `.gemini/settings.json`.
pub const GEMINI_MATCHER: &str = "write_file|replace|run_shell_command";

/// Largest hook document read from stdin. A Write's `tool_input.content`
/// carries the whole new file; 64 MiB is far beyond any source file.
const MAX_HOOK_INPUT: u64 = 64 * 1024 * 1024;

/// Exit code that makes Claude Code (and Gemini CLI, Codex) block the tool
/// call and show stderr to the model ("exit code 2: blocking error").
const BLOCK: u8 = 2;

/// Check a tool call against the active code-intel session (PreToolUse / BeforeTool hook).
#[derive(clap::Args, Debug)]
pub struct CheckWriteArgs {
    /// Repository root (default: `$CLAUDE_PROJECT_DIR` or
    /// `$GEMINI_PROJECT_DIR`, which the clients set for their hooks, else
    /// found from the hook's `cwd`). An empty value is refused.
    #[arg(long)]
    pub repo: Option<PathBuf>,
    /// The hook protocol to answer in: `claude` (also Gemini CLI and Codex:
    /// exit code 2 and the reason on stderr) or `cursor` (JSON on stdout).
    #[arg(long, default_value = "claude", value_parser = ["claude", "gemini", "codex", "cursor"])]
    pub client: String,
}

/// Outcome of one check.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Not a guarded tool, a read-only command, or files outside the repository.
    NotGuarded(String),
    Allowed(String),
    Blocked(String),
}

pub fn run(args: &CheckWriteArgs) -> ExitCode {
    let mut input = String::new();
    let verdict = match std::io::stdin().take(MAX_HOOK_INPUT).read_to_string(&mut input) {
        Ok(_) => check(&input, repo_from(args).as_deref()),
        Err(e) => Verdict::Blocked(format!("code-intel check-write: cannot read the hook input on stdin: {e}")),
    };
    if args.client == "cursor" {
        let answer = match &verdict {
            Verdict::Blocked(message) => json!({
                "permission": "deny",
                "continue": true,
                "user_message": message,
                "agent_message": message,
                "userMessage": message,
                "agentMessage": message,
            }),
            _ => json!({ "permission": "allow", "continue": true }),
        };
        println!("{answer}");
        return ExitCode::SUCCESS;
    }
    match verdict {
        Verdict::NotGuarded(_) | Verdict::Allowed(_) => ExitCode::SUCCESS,
        Verdict::Blocked(message) => {
            eprintln!("{message}");
            ExitCode::from(BLOCK)
        }
    }
}

/// The repository: `--repo`, else the project directory the client gives
/// its hooks (`CLAUDE_PROJECT_DIR`; Gemini CLI also sets
/// `GEMINI_PROJECT_DIR`), else found from the hook's input. The project
/// directory, not the hook's `cwd`: a `cd` elsewhere must not move the gate.
/// A client started in a subdirectory names that directory: the repository
/// is the nearest one at or above it, as `serve` finds it.
fn repo_from(args: &CheckWriteArgs) -> Option<PathBuf> {
    args.repo.clone().or_else(|| {
        ["CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"]
            .iter()
            .find_map(|k| std::env::var_os(k).filter(|v| !v.is_empty()).map(|d| config::find_repo_root(Path::new(&d))))
    })
}

/// A write the call makes: the file (absolute) and what writes it.
struct Write {
    path: PathBuf,
    by: String,
}

/// Decides on one hook document.
#[must_use]
pub fn check(input: &str, repo: Option<&Path>) -> Verdict {
    let doc: Value = match serde_json::from_str(input) {
        Ok(v) => v,
        Err(e) => {
            return Verdict::Blocked(format!(
                "code-intel check-write: the hook input is not JSON ({e}); this command is run by the client as a hook (PreToolUse, BeforeTool)"
            ));
        }
    };
    let cwd = doc.get("cwd").and_then(Value::as_str).filter(|c| !c.is_empty()).map(PathBuf::from);
    let root = match repo {
        Some(r) if r.as_os_str().is_empty() => {
            return Verdict::Blocked(
                "code-intel check-write: --repo is empty; give the repository root".to_string(),
            );
        }
        Some(r) => r.to_path_buf(),
        None => match doc.get("workspace_roots").and_then(|r| r.get(0)).and_then(Value::as_str).map(PathBuf::from).or_else(|| cwd.clone()) {
            Some(c) => config::find_repo_root(&c),
            None => std::env::current_dir().map_or_else(|_| PathBuf::from("."), |d| config::find_repo_root(&d)),
        },
    };
    let Ok(root) = root.canonicalize() else {
        return Verdict::Blocked(format!("code-intel check-write: repository root {} does not exist", root.display()));
    };
    let cwd = cwd.unwrap_or_else(|| root.clone());
    let tool = doc.get("tool_name").and_then(Value::as_str).unwrap_or_default().to_string();
    let tool_input = doc.get("tool_input").cloned().unwrap_or(Value::Null);

    // Cursor's beforeShellExecution: `command` at the top level.
    let shell_command = if tool.is_empty() {
        doc.get("command").and_then(Value::as_str).map(str::to_string)
    } else if SHELL_TOOLS.contains(&tool.as_str()) {
        match tool_input.get("command").or_else(|| tool_input.get("cmd")) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Array(parts)) => Some(join_argv(parts)),
            _ => {
                return Verdict::Blocked(format!("code-intel check-write: {tool} without tool_input.command; cannot check it"));
            }
        }
    } else {
        None
    };
    let label = if tool.is_empty() { "shell command".to_string() } else { tool.clone() };

    let mut writes: Vec<Write> = Vec::new();
    if let Some(command) = shell_command {
        let analysis = bash_writes::analyze(&command, &absolute(&cwd, &root));
        if !analysis.unprovable.is_empty() {
            return Verdict::Blocked(unprovable_message(&label, &command, &analysis.unprovable));
        }
        writes.extend(analysis.targets.into_iter().map(|t| Write { path: t.path, by: t.by }));
    } else if PATCH_TOOLS.contains(&tool.as_str()) {
        let files = patch_files(&tool_input);
        if files.is_empty() {
            return Verdict::Blocked(format!(
                "code-intel check-write: cannot find the files {tool} writes (no `*** Add File:` / `*** Update File:` lines); cannot check it"
            ));
        }
        writes.extend(files.into_iter().map(|f| Write { path: absolute(&cwd, Path::new(&f)), by: tool.clone() }));
    } else if FILE_TOOLS.contains(&tool.as_str()) {
        let Some(file) = ["file_path", "notebook_path", "path", "absolute_path", "target_file"]
            .iter()
            .find_map(|k| tool_input.get(*k).and_then(Value::as_str))
        else {
            return Verdict::Blocked(format!("code-intel check-write: {tool} without tool_input.file_path; cannot check it"));
        };
        writes.push(Write { path: absolute(&cwd, Path::new(file)), by: tool.clone() });
    } else {
        return Verdict::NotGuarded(format!("{tool} does not write files"));
    }
    gate(&root, &label, writes)
}

fn absolute(cwd: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() { path.to_path_buf() } else { cwd.join(path) }
}

/// An argv array as one shell line (Codex sends `["bash", "-lc", "..."]`).
fn join_argv(parts: &[Value]) -> String {
    parts
        .iter()
        .map(|p| {
            let s = p.as_str().unwrap_or_default();
            if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:@=,".contains(c)) {
                s.to_string()
            } else {
                format!("'{}'", s.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The files an apply_patch patch touches, from any string in the tool input.
fn patch_files(input: &Value) -> Vec<String> {
    let mut texts = Vec::new();
    collect_strings(input, &mut texts);
    texts.iter().flat_map(|t| bash_writes::patch_files(t)).collect()
}

fn collect_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}

fn unprovable_message(tool: &str, command: &str, why: &[String]) -> String {
    let shown: String = command.chars().take(200).collect();
    let ellipsis = if command.chars().count() > 200 { "..." } else { "" };
    format!(
        "code-intel: {tool} command blocked: {}.\nCommand: {shown}{ellipsis}\n\
         code-intel lets a shell command through only when it can see every file the command writes in this repository. \
         To change files, open an IMPLEMENT or MODIFY session (the /code command, or start_session on the code-intel MCP server), \
         explore the files, reach READY and use the edit tools; to look around, use read-only commands (ls, cat, grep, rg, git diff) \
         or the code-intel tools.",
        why.join("; ")
    )
}

/// Checks each write inside the repository against the active session.
fn gate(root: &Path, tool: &str, writes: Vec<Write>) -> Verdict {
    let mut inside: Vec<(String, String)> = Vec::new();
    for w in writes {
        // Resolve the file (or, for a new file, its nearest existing parent)
        // so symlinks and `..` cannot smuggle a path in or out.
        let mut candidates = vec![canonical_or_parent(&w.path)];
        // A link in the repository to a file outside it is a file of the
        // repository too: `rm`, `mv`, `sed -i` and `perl -i` remove or
        // replace the link itself.
        if !candidates[0].starts_with(root) && std::fs::symlink_metadata(&w.path).is_ok_and(|m| m.file_type().is_symlink()) {
            if let (Some(parent), Some(name)) = (w.path.parent(), w.path.file_name()) {
                candidates.push(canonical_or_parent(parent).join(name));
            }
        }
        for absolute in candidates {
            if root.starts_with(&absolute) && absolute != root {
                return Verdict::Blocked(format!(
                    "code-intel: {tool} blocked: {} writes {}, a directory that holds the repository",
                    w.by,
                    absolute.display()
                ));
            }
            if let Ok(relative) = absolute.strip_prefix(root) {
                let relative = relative.to_string_lossy().replace('\\', "/");
                if relative.is_empty() {
                    return Verdict::Blocked(format!("code-intel: {tool} blocked: {} writes the repository root itself", w.by));
                }
                if !inside.iter().any(|(r, _)| *r == relative) {
                    inside.push((relative, w.by.clone()));
                }
            }
        }
    }
    if inside.is_empty() {
        return Verdict::NotGuarded("writes nothing inside the repository".to_string());
    }
    let files = inside.iter().map(|(r, _)| r.as_str()).collect::<Vec<_>>().join(", ");
    // Without a database there is no session; never create one here.
    if !config::database_path(root).exists() {
        return Verdict::Blocked(no_session_message(tool, &files));
    }
    let workflow = match open_workflow(root) {
        Ok(w) => w,
        Err(e) => return Verdict::Blocked(format!("code-intel check-write: {e}")),
    };
    let session = match workflow.active_session() {
        Ok(Some(s)) => s,
        Ok(None) => return Verdict::Blocked(no_session_message(tool, &files)),
        Err(e) => return Verdict::Blocked(format!("code-intel check-write: cannot read sessions: {e}")),
    };
    let mut allowed = Vec::new();
    for (relative, by) in &inside {
        let what = if by == tool { tool.to_string() } else { format!("{tool} ({by})") };
        match workflow.check_write_target(&session, relative) {
            Ok(v) if v["allowed"] == json!(true) => allowed.push(format!("{relative}: {}", v["reason"].as_str().unwrap_or(""))),
            Ok(v) => return Verdict::Blocked(block_message(&what, relative, &v)),
            Err(e) => return Verdict::Blocked(format!("code-intel: {what} of {relative} blocked: {e}")),
        }
    }
    Verdict::Allowed(allowed.join("; "))
}

fn no_session_message(tool: &str, files: &str) -> String {
    format!(
        "code-intel: {tool} of {files} blocked: no active code-intel session in this repository.\n\
         Start one for the change (the /code command, or start_session with intent IMPLEMENT or MODIFY on the code-intel MCP server), \
         explore, and reach READY; then edits to the files you explored are allowed."
    )
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

#[cfg(test)]
mod tests {
    use super::*;

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

    fn blocked(doc: &Value, root: &Path) -> String {
        match check(&doc.to_string(), Some(root)) {
            Verdict::Blocked(m) => m,
            other => panic!("{doc}: expected a block, got {other:?}"),
        }
    }

    #[test]
    fn every_client_shape_is_gated_and_no_database_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("a.py"), "x = 1\n").unwrap();
        // Read-only shell commands pass.
        for cmd in ["ls -la", "cat a.py | grep x", "git status", "cargo test --release 2>&1 | tail"] {
            let doc = json!({"tool_name": "Bash", "tool_input": {"command": cmd}, "cwd": root});
            assert!(matches!(check(&doc.to_string(), Some(root)), Verdict::NotGuarded(_)), "{cmd}");
        }
        // Writes without a session are blocked, in every client's shape.
        let docs = [
            json!({"tool_name": "Bash", "tool_input": {"command": "sed -i s/x/y/ a.py"}, "cwd": root}),
            json!({"tool_name": "run_shell_command", "tool_input": {"command": "echo y >> a.py"}, "cwd": root}),
            json!({"tool_name": "write_file", "tool_input": {"file_path": "a.py", "content": "y"}, "cwd": root}),
            json!({"tool_name": "replace", "tool_input": {"file_path": root.join("a.py"), "old_string": "x", "new_string": "y"}, "cwd": root}),
            json!({"tool_name": "NotebookEdit", "tool_input": {"notebook_path": root.join("n.ipynb")}, "cwd": root}),
            json!({"tool_name": "apply_patch", "tool_input": {"command": "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n*** End Patch"}, "cwd": root}),
            json!({"tool_name": "shell", "tool_input": {"command": ["bash", "-lc", "tee a.py < /dev/null"]}, "cwd": root}),
            json!({"hook_event_name": "beforeShellExecution", "command": "touch b.py", "cwd": root, "workspace_roots": [root]}),
        ];
        for doc in &docs {
            let m = blocked(doc, root);
            assert!(m.contains("no active code-intel session"), "{doc}: {m}");
        }
        // Removing a directory that holds the repository is a write to it.
        let m = blocked(&json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf .."}, "cwd": root}), root);
        assert!(m.contains("holds the repository"), "{m}");
        // What cannot be read is blocked with the way forward.
        let m = blocked(&json!({"tool_name": "Bash", "tool_input": {"command": "python3 -c 'open(\"a.py\",\"w\")'"}, "cwd": root}), root);
        assert!(m.contains("IMPLEMENT or MODIFY") && m.contains("python3"), "{m}");
        assert!(!config::database_path(root).exists(), "check-write created the database");
        assert!(!config::state_dir(root).exists(), "check-write created .code-intel/");
        // A link in the repository to a file outside it is a file of the
        // repository: `rm` removes it, `sed -i` and `perl -i` replace it.
        #[cfg(unix)]
        {
            let outside = tempfile::tempdir().unwrap();
            std::fs::write(outside.path().join("shared.txt"), "x\n").unwrap();
            std::os::unix::fs::symlink(outside.path().join("shared.txt"), root.join("link.txt")).unwrap();
            let target = outside.path().join("shared.txt");
            let through = json!({"tool_name": "Write", "tool_input": {"file_path": target}, "cwd": root});
            assert!(matches!(check(&through.to_string(), Some(root)), Verdict::NotGuarded(_)), "the outside file itself passes");
            for cmd in ["echo y >> link.txt", "rm link.txt", "sed -i s/x/y/ link.txt", "perl -pi -e s/x/y/ link.txt", "mv link.txt other.txt"] {
                let m = blocked(&json!({"tool_name": "Bash", "tool_input": {"command": cmd}, "cwd": root}), root);
                assert!(m.contains("link.txt") && m.contains("no active code-intel session"), "{cmd}: {m}");
            }
        }
        // An empty --repo is refused, not guessed.
        let doc = json!({"tool_name": "Write", "tool_input": {"file_path": root.join("a.py")}, "cwd": root});
        assert!(matches!(check(&doc.to_string(), Some(Path::new(""))), Verdict::Blocked(m) if m.contains("--repo is empty")));
    }
}
