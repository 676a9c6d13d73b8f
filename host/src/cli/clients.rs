//! `code-intel init --client NAME`: registers the MCP server with a client
//! and, where the client has hooks, installs the write gate
//! (`code-intel check-write`). docs/clients.md describes every file written.
//!
//! Files meant to be committed hold no machine-specific paths: the server
//! is started as `code-intel` from PATH with the repository given by the
//! client's own variable (`$CLAUDE_PROJECT_DIR`, `${workspaceFolder}`) or
//! the directory the client starts it in. What belongs to one machine (a
//! binary that is not on PATH, `CODE_INTEL_MODEL_DIR`) goes into the
//! client's local or user file when it has one (Claude Code's
//! `.claude/settings.local.json`, Codex's `~/.codex/config.toml`), and is
//! reported when it has to go into a project file.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// The clients `init --client` sets up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    /// Claude Code: `.mcp.json`, `.claude/settings.json` (hook), `/code`.
    Claude,
    /// VS Code (Copilot agent mode): `.vscode/mcp.json`.
    Vscode,
    /// Cursor: `.cursor/mcp.json` and `.cursor/hooks.json`.
    Cursor,
    /// Codex CLI: `[mcp_servers.code-intel]` in `$CODEX_HOME/config.toml`,
    /// the PreToolUse hook in the project's `.codex/config.toml`.
    Codex,
    /// Gemini CLI: `.gemini/settings.json` (server and BeforeTool hook).
    Gemini,
}

/// The name the server is registered under in every client.
pub const SERVER_NAME: &str = "code-intel";

/// First line after the frontmatter of the `/code` command file: marks it
/// as ours so `init --client claude` may refresh it. Claude Code reads the
/// frontmatter only when it is the very first thing in the file.
const COMMAND_MARKER: &str = "<!-- installed by code-intel init --client claude -->";

/// The hook command in `.claude/settings.json`. `CODE_INTEL_BIN` (set in
/// `.claude/settings.local.json` when code-intel is not on PATH) names the
/// binary on one machine; the committed file names none.
/// `check-write` finds the repository from `$CLAUDE_PROJECT_DIR`.
pub const CLAUDE_HOOK_COMMAND: &str = r#""${CODE_INTEL_BIN:-code-intel}" check-write"#;

/// The server command in `.mcp.json` (Claude Code expands `${VAR:-default}`).
pub const CLAUDE_SERVER_COMMAND: &str = "${CODE_INTEL_BIN:-code-intel}";

/// What `init` knows about this machine.
pub struct Machine {
    /// The running binary.
    pub exe: PathBuf,
    /// `code-intel` on PATH is this binary.
    pub on_path: bool,
    /// `CODE_INTEL_MODEL_DIR`, when set.
    pub model_dir: Option<String>,
    /// Codex's home (`$CODEX_HOME`, else `~/.codex`).
    pub codex_home: Option<PathBuf>,
    /// Claude Code's user file (`$CLAUDE_CONFIG_DIR/.claude.json`, else `~/.claude.json`).
    pub claude_user_config: PathBuf,
}

impl Machine {
    #[must_use]
    pub fn detect(exe: PathBuf) -> Self {
        let on_path = std::env::var_os("PATH").is_some_and(|paths| {
            std::env::split_paths(&paths).any(|dir| {
                let candidate = dir.join(if cfg!(windows) { "code-intel.exe" } else { "code-intel" });
                candidate.canonicalize().is_ok_and(|c| c == exe)
            })
        });
        let model_dir = std::env::var(code_intel_embed::MODEL_DIR_ENV).ok().filter(|v| !v.is_empty());
        let codex_home = std::env::var_os("CODEX_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".codex")));
        Self { exe, on_path, model_dir, codex_home, claude_user_config: claude_user_config() }
    }

    /// The command a project file names: `code-intel` when it is on PATH,
    /// else this machine's binary (reported as such).
    fn project_command(&self, out: &mut String, file: &Path) -> String {
        if self.on_path {
            "code-intel".to_string()
        } else {
            out.push_str(&format!(
                "  note: code-intel is not on PATH, so {} names {}; put code-intel on PATH and run init again before you commit it\n",
                file.display(),
                self.exe.display()
            ));
            self.exe.display().to_string()
        }
    }

    fn model_env(&self, out: &mut String, file: &Path, committed: bool) -> Option<Value> {
        let dir = self.model_dir.as_ref()?;
        if committed {
            out.push_str(&format!(
                "  note: {} passes CODE_INTEL_MODEL_DIR={dir} to the server (a path on this machine; drop the `env` entry before you commit it, or install the model with `code-intel model install`)\n",
                file.display()
            ));
        }
        Some(json!({ code_intel_embed::MODEL_DIR_ENV: dir }))
    }
}

/// Sets up one client for the repository at `root`; returns the report.
///
/// # Errors
/// A client file that exists but is not valid JSON/TOML or has the wrong
/// shape (left untouched), I/O errors.
pub fn install(client: Client, root: &Path, machine: &Machine) -> anyhow::Result<String> {
    match client {
        Client::Claude => install_claude(root, machine),
        Client::Vscode => install_vscode(root, machine),
        Client::Cursor => install_cursor(root, machine),
        Client::Codex => install_codex(root, machine),
        Client::Gemini => install_gemini(root, machine),
    }
}

// ---------------------------------------------------------------------------
// JSON files

fn read_json(path: &Path, client: &str) -> anyhow::Result<Value> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok(json!({})),
        Ok(text) => {
            let v: Value = serde_json::from_str(&text).map_err(|e| {
                anyhow::anyhow!("{} is not valid JSON ({e}); fix it, then run `code-intel init --client {client}` again", path.display())
            })?;
            if !v.is_object() {
                anyhow::bail!("{} must hold a JSON object; fix it, then run init again", path.display());
            }
            Ok(v)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(json!({})),
        Err(e) => anyhow::bail!("cannot read {}: {e}", path.display()),
    }
}

/// Writes `doc` when it differs from what is there; returns whether it did.
fn write_json(path: &Path, doc: &Value) -> anyhow::Result<bool> {
    let text = serde_json::to_string_pretty(doc)? + "\n";
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(false);
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, text)?;
    Ok(true)
}

/// Sets `doc[key][SERVER_NAME] = entry`, keeping every other server.
fn put_server(doc: &mut Value, key: &str, entry: Value, path: &Path) -> anyhow::Result<()> {
    let obj = doc.as_object_mut().ok_or_else(|| anyhow::anyhow!("{} must hold a JSON object", path.display()))?;
    let servers = obj.entry(key).or_insert_with(|| json!({}));
    let servers = servers.as_object_mut().ok_or_else(|| anyhow::anyhow!("`{key}` in {} must be an object", path.display()))?;
    servers.insert(SERVER_NAME.to_string(), entry);
    Ok(())
}

fn report(out: &mut String, path: &Path, changed: bool, what: &str) {
    if changed {
        out.push_str(&format!("wrote {}: {what}\n", path.display()));
    } else {
        out.push_str(&format!("kept {}: {what} (already up to date)\n", path.display()));
    }
}

// ---------------------------------------------------------------------------
// Claude Code

/// The `.mcp.json` entry: no path of this machine, the repository is the
/// directory Claude Code starts the server in (the project directory).
#[must_use]
pub fn claude_server_entry() -> Value {
    json!({ "type": "stdio", "command": CLAUDE_SERVER_COMMAND, "args": ["serve"] })
}

fn install_claude(root: &Path, machine: &Machine) -> anyhow::Result<String> {
    let mut out = String::new();
    // The MCP server: without it the model can never open the session the hook asks for.
    let mcp_path = root.join(".mcp.json");
    let mut doc = read_json(&mcp_path, "claude")?;
    put_server(&mut doc, "mcpServers", claude_server_entry(), &mcp_path)?;
    let changed = write_json(&mcp_path, &doc)?;
    report(&mut out, &mcp_path, changed, "the code-intel MCP server (project scope)");

    // The /code command.
    let commands = root.join(".claude").join("commands");
    std::fs::create_dir_all(&commands)?;
    let command_file = commands.join("code.md");
    let body = code_command_body();
    match std::fs::read_to_string(&command_file) {
        Ok(existing) if !existing.contains(COMMAND_MARKER) && !existing.contains("<!-- installed by code-intel init --claude -->") => {
            out.push_str(&format!("kept {} (not written by code-intel; remove it to install ours)\n", command_file.display()));
        }
        Ok(existing) if existing == body => report(&mut out, &command_file, false, "the /code command"),
        _ => {
            std::fs::write(&command_file, &body)?;
            report(&mut out, &command_file, true, "the /code command");
        }
    }

    // The hook, in the committed settings.
    let settings_path = root.join(".claude").join("settings.json");
    let mut doc = read_json(&settings_path, "claude")?;
    merge_hook(&mut doc, "PreToolUse", HOOK_MATCHER_CLAUDE, claude_hook())
        .map_err(|e| anyhow::anyhow!("{}: {e}; fix it, then run init --client claude again", settings_path.display()))?;
    let changed = write_json(&settings_path, &doc)?;
    report(&mut out, &settings_path, changed, &format!("PreToolUse hook on {HOOK_MATCHER_CLAUDE} runs `{CLAUDE_HOOK_COMMAND}`, blocking when it fails"));

    // What belongs to this user and machine: the local settings (not
    // committed): the approval of the project's server and, when code-intel
    // is not on PATH, the binary the hook runs.
    let local_path = root.join(".claude").join("settings.local.json");
    let mut local = read_json(&local_path, "claude")?;
    let obj = local.as_object_mut().ok_or_else(|| anyhow::anyhow!("{} must hold a JSON object", local_path.display()))?;
    let enabled = obj.entry("enabledMcpjsonServers").or_insert_with(|| json!([]));
    let enabled = enabled
        .as_array_mut()
        .ok_or_else(|| anyhow::anyhow!("`enabledMcpjsonServers` in {} must be an array", local_path.display()))?;
    if !enabled.contains(&json!(SERVER_NAME)) {
        enabled.push(json!(SERVER_NAME));
    }
    let mut what = vec!["the approval of the project's code-intel server".to_string()];
    if !machine.on_path {
        let slot = obj.entry("env").or_insert_with(|| json!({}));
        let slot = slot.as_object_mut().ok_or_else(|| anyhow::anyhow!("`env` in {} must be an object", local_path.display()))?;
        slot.insert("CODE_INTEL_BIN".into(), json!(machine.exe.display().to_string()));
        what.push("CODE_INTEL_BIN for the hook".to_string());
    }
    let changed = write_json(&local_path, &local)?;
    report(&mut out, &local_path, changed, &format!("{} (keep this file out of commits)", what.join(", ")));

    // A server that needs this machine's binary or model folder: Claude
    // Code's local scope (~/.claude.json, this project only), which takes
    // precedence over the project's .mcp.json entry of the same name.
    if !machine.on_path || machine.model_dir.is_some() {
        let mut entry = json!({ "type": "stdio", "command": machine.exe.display().to_string(), "args": ["serve"] });
        if let Some(dir) = &machine.model_dir {
            entry["env"] = json!({ code_intel_embed::MODEL_DIR_ENV: dir });
        }
        let user_path = machine.claude_user_config.clone();
        let mut user = read_json(&user_path, "claude")?;
        let projects = user
            .as_object_mut()
            .ok_or_else(|| anyhow::anyhow!("{} must hold a JSON object", user_path.display()))?
            .entry("projects")
            .or_insert_with(|| json!({}));
        let projects = projects.as_object_mut().ok_or_else(|| anyhow::anyhow!("`projects` in {} must be an object", user_path.display()))?;
        let project = projects.entry(root.display().to_string()).or_insert_with(|| json!({}));
        let project = project.as_object_mut().ok_or_else(|| anyhow::anyhow!("`projects` entries in {} must be objects", user_path.display()))?;
        let servers = project.entry("mcpServers").or_insert_with(|| json!({}));
        let servers = servers.as_object_mut().ok_or_else(|| anyhow::anyhow!("`mcpServers` in {} must be an object", user_path.display()))?;
        servers.insert(SERVER_NAME.to_string(), entry);
        let changed = write_json(&user_path, &user)?;
        let why = if machine.on_path { "with CODE_INTEL_MODEL_DIR" } else { "with this machine's binary" };
        report(&mut out, &user_path, changed, &format!("the code-intel server for this project only (local scope, {why})"));
    }
    if !machine.on_path {
        out.push_str("  note: code-intel is not on PATH; teammates who clone the repository need it on PATH (the hook blocks edits until it runs)\n");
    }
    Ok(out)
}

/// Claude Code's user file (`$CLAUDE_CONFIG_DIR/.claude.json`, else `~/.claude.json`).
fn claude_user_config() -> PathBuf {
    match std::env::var_os("CLAUDE_CONFIG_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir).join(".claude.json"),
        None => std::env::var_os("HOME").map_or_else(|| PathBuf::from(".claude.json"), |h| PathBuf::from(h).join(".claude.json")),
    }
}

/// The matcher of the Claude Code hook.
pub const HOOK_MATCHER_CLAUDE: &str = super::check_write::HOOK_MATCHER;

fn claude_hook() -> Value {
    // `onFailure: block`: a hook that cannot run (binary missing, crash)
    // blocks the call instead of letting it through.
    json!({ "type": "command", "command": CLAUDE_HOOK_COMMAND, "timeout": 30, "onFailure": "block" })
}

/// The `/code` command: frontmatter first, our marker after it.
#[must_use]
pub fn code_command_body() -> String {
    format!(
        "---\ndescription: Work on a coding request through the code-intel workflow (explore before you edit)\nargument-hint: <request>\n---\n{COMMAND_MARKER}\n\n{}\n\nRequest: $ARGUMENTS\n",
        crate::mcp::session_tools::WORKFLOW_PROMPT
    )
}

/// Adds (or updates) our check-write hook under `hooks.<event>`, keeping
/// every other setting and hook. Returns whether anything changed.
///
/// # Errors
/// When `hooks` / `hooks.<event>` exist with the wrong type.
pub fn merge_hook(doc: &mut Value, event: &str, matcher: &str, hook: Value) -> Result<bool, String> {
    let obj = doc.as_object_mut().ok_or("the settings file must hold a JSON object")?;
    let hooks = obj.entry("hooks").or_insert_with(|| json!({}));
    let hooks = hooks.as_object_mut().ok_or("`hooks` must be an object")?;
    let list = hooks.entry(event).or_insert_with(|| json!([]));
    let list = list.as_array_mut().ok_or_else(|| format!("`hooks.{event}` must be an array"))?;
    let ours = |h: &Value| h["command"].as_str().is_some_and(|c| c.contains(" check-write"));
    for entry in list.iter_mut() {
        let same_matcher = entry["matcher"] == json!(matcher);
        let Some(inner) = entry.get_mut("hooks").and_then(Value::as_array_mut) else { continue };
        if let Some(h) = inner.iter_mut().find(|h| ours(h)) {
            let changed = *h != hook || !same_matcher;
            *h = hook;
            entry["matcher"] = json!(matcher);
            return Ok(changed);
        }
    }
    list.push(json!({ "matcher": matcher, "hooks": [hook] }));
    Ok(true)
}

// ---------------------------------------------------------------------------
// VS Code, Cursor

/// Writes the server entry of an editor's project MCP file (`servers` for
/// VS Code, `mcpServers` for Cursor), started in `${workspaceFolder}`.
fn install_workspace_server(path: &Path, client: &str, key: &str, machine: &Machine, out: &mut String) -> anyhow::Result<()> {
    let mut doc = read_json(path, client)?;
    let mut entry = json!({
        "type": "stdio",
        "command": machine.project_command(out, path),
        "args": ["serve", "--repo", "${workspaceFolder}"],
    });
    if let Some(env) = machine.model_env(out, path, true) {
        entry["env"] = env;
    }
    put_server(&mut doc, key, entry, path)?;
    let changed = write_json(path, &doc)?;
    report(out, path, changed, "the code-intel MCP server");
    Ok(())
}

fn install_vscode(root: &Path, machine: &Machine) -> anyhow::Result<String> {
    let mut out = String::new();
    install_workspace_server(&root.join(".vscode").join("mcp.json"), "vscode", "servers", machine, &mut out)?;
    out.push_str("  note: VS Code has no hook that can refuse an edit; the write gate does not apply there (docs/clients.md)\n");
    Ok(out)
}

/// The shell line Cursor and Gemini CLI run for the gate: a missing binary
/// blocks (exit 2) instead of passing, since neither client blocks on a
/// failed hook by itself.
fn gate_command(client: &str) -> String {
    format!(
        "command -v code-intel >/dev/null 2>&1 || {{ echo 'code-intel is not on PATH: the write gate cannot run, so this call is blocked; install code-intel or remove the hook' >&2; exit 2; }}; code-intel check-write --client {client}"
    )
}

fn install_cursor(root: &Path, machine: &Machine) -> anyhow::Result<String> {
    let mut out = String::new();
    install_workspace_server(&root.join(".cursor").join("mcp.json"), "cursor", "mcpServers", machine, &mut out)?;

    let hooks_path = root.join(".cursor").join("hooks.json");
    let mut hooks = read_json(&hooks_path, "cursor")?;
    if let Some(obj) = hooks.as_object_mut() {
        obj.entry("version").or_insert(json!(1));
    }
    let command = gate_command("cursor");
    let mut changed = false;
    for (event, matcher) in [("beforeShellExecution", None), ("preToolUse", Some("Write|StrReplace|Delete|Edit|MultiEdit"))] {
        changed |= merge_cursor_hook(&mut hooks, event, matcher, &command)
            .map_err(|e| anyhow::anyhow!("{}: {e}; fix it, then run init --client cursor again", hooks_path.display()))?;
    }
    if changed {
        write_json(&hooks_path, &hooks)?;
    }
    report(&mut out, &hooks_path, changed, "beforeShellExecution and preToolUse hooks run `code-intel check-write --client cursor`");
    Ok(out)
}

/// Cursor's hooks.json: `hooks.<event>` is a list of `{command, matcher?}`.
fn merge_cursor_hook(doc: &mut Value, event: &str, matcher: Option<&str>, command: &str) -> Result<bool, String> {
    let obj = doc.as_object_mut().ok_or("hooks.json must hold a JSON object")?;
    let hooks = obj.entry("hooks").or_insert_with(|| json!({}));
    let hooks = hooks.as_object_mut().ok_or("`hooks` must be an object")?;
    let list = hooks.entry(event).or_insert_with(|| json!([]));
    let list = list.as_array_mut().ok_or_else(|| format!("`hooks.{event}` must be an array"))?;
    let mut entry = json!({ "command": command });
    if let Some(m) = matcher {
        entry["matcher"] = json!(m);
    }
    if let Some(existing) = list.iter_mut().find(|h| h["command"].as_str().is_some_and(|c| c.contains(" check-write"))) {
        if *existing == entry {
            return Ok(false);
        }
        *existing = entry;
        return Ok(true);
    }
    list.push(entry);
    Ok(true)
}

// ---------------------------------------------------------------------------
// Codex

/// A Codex TOML file's text (empty when missing) and its parsed document.
fn read_codex_toml(path: &Path) -> anyhow::Result<(String, toml_edit::DocumentMut)> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => anyhow::bail!("cannot read {}: {e}", path.display()),
    };
    let doc = text
        .parse()
        .map_err(|e| anyhow::anyhow!("{} is not valid TOML ({e}); fix it, then run init --client codex again", path.display()))?;
    Ok((text, doc))
}

fn install_codex(root: &Path, machine: &Machine) -> anyhow::Result<String> {
    let mut out = String::new();
    let Some(home) = &machine.codex_home else {
        anyhow::bail!("cannot find Codex's home: set CODEX_HOME (or HOME) and run init --client codex again");
    };
    let path = home.join("config.toml");
    let (text, mut doc) = read_codex_toml(&path)?;
    let servers = doc.entry("mcp_servers").or_insert_with(|| {
        let mut t = toml_edit::Table::new();
        t.set_implicit(true);
        toml_edit::Item::Table(t)
    });
    let servers = servers
        .as_table_like_mut()
        .ok_or_else(|| anyhow::anyhow!("`mcp_servers` in {} must be a table; fix it, then run init again", path.display()))?;
    // A user file: this machine's binary is the right thing to name. No
    // --repo: Codex starts the server in the directory it runs in.
    let mut table = toml_edit::Table::new();
    table["command"] = toml_edit::value(machine.exe.display().to_string());
    let mut args = toml_edit::Array::new();
    args.push("serve");
    table["args"] = toml_edit::value(args);
    if let Some(dir) = &machine.model_dir {
        let mut env = toml_edit::InlineTable::new();
        env.insert(code_intel_embed::MODEL_DIR_ENV, dir.as_str().into());
        table["env"] = toml_edit::value(env);
    }
    servers.insert(SERVER_NAME, toml_edit::Item::Table(table));
    let new_text = doc.to_string();
    let changed = new_text != text;
    if changed {
        std::fs::create_dir_all(home)?;
        std::fs::write(&path, new_text)?;
    }
    report(&mut out, &path, changed, "[mcp_servers.code-intel] (user config: serves the repository Codex runs in)");
    install_codex_hook(root, &mut out)?;
    Ok(out)
}

/// The write gate as a PreToolUse hook in the project's `.codex/config.toml`
/// (committable: it names `code-intel` from PATH). No matcher: every tool
/// call reaches `check-write`, which passes the tools that write nothing.
fn install_codex_hook(root: &Path, out: &mut String) -> anyhow::Result<()> {
    let path = root.join(".codex").join("config.toml");
    let (text, mut doc) = read_codex_toml(&path)?;
    let command = gate_command("codex");
    let shape = || anyhow::anyhow!("`hooks.PreToolUse` in {} must be an array of tables; fix it, then run init again", path.display());
    let hooks = doc.entry("hooks").or_insert_with(|| {
        let mut t = toml_edit::Table::new();
        t.set_implicit(true);
        toml_edit::Item::Table(t)
    });
    let hooks = hooks.as_table_like_mut().ok_or_else(shape)?;
    let pre = hooks.entry("PreToolUse").or_insert(toml_edit::Item::ArrayOfTables(toml_edit::ArrayOfTables::new()));
    let pre = pre.as_array_of_tables_mut().ok_or_else(shape)?;
    // An entry of ours (its command runs `check-write --client codex`) is
    // brought up to date in place; otherwise one is added.
    let ours = pre.iter_mut().find_map(|group| {
        group.get_mut("hooks").and_then(toml_edit::Item::as_array_of_tables_mut).and_then(|list| {
            list.iter_mut().find(|h| h.get("command").and_then(toml_edit::Item::as_str).is_some_and(|c| c.contains("check-write --client codex")))
        })
    });
    match ours {
        Some(hook) => {
            hook["type"] = toml_edit::value("command");
            hook["command"] = toml_edit::value(command);
        }
        None => {
            let mut hook = toml_edit::Table::new();
            hook["type"] = toml_edit::value("command");
            hook["command"] = toml_edit::value(command);
            let mut list = toml_edit::ArrayOfTables::new();
            list.push(hook);
            let mut group = toml_edit::Table::new();
            group.insert("hooks", toml_edit::Item::ArrayOfTables(list));
            pre.push(group);
        }
    }
    let new_text = doc.to_string();
    let changed = new_text != text;
    if changed {
        std::fs::create_dir_all(root.join(".codex"))?;
        std::fs::write(&path, new_text)?;
    }
    report(out, &path, changed, "a PreToolUse hook running the write gate on every tool call");
    out.push_str(
        "  note: Codex runs a project's hooks only once you trust the project and then the hook: start `codex` in this repository and accept both; until then edits are not gated\n",
    );
    Ok(())
}

// ---------------------------------------------------------------------------
// Gemini CLI

fn install_gemini(root: &Path, machine: &Machine) -> anyhow::Result<String> {
    let mut out = String::new();
    let path = root.join(".gemini").join("settings.json");
    let mut doc = read_json(&path, "gemini")?;
    let mut entry = json!({ "command": machine.project_command(&mut out, &path), "args": ["serve"] });
    if let Some(env) = machine.model_env(&mut out, &path, true) {
        entry["env"] = env;
    }
    put_server(&mut doc, "mcpServers", entry, &path)?;
    let hook = json!({
        "name": "code-intel-write-gate",
        "type": "command",
        "command": gate_command("gemini"),
        "timeout": 30000,
    });
    merge_hook(&mut doc, "BeforeTool", super::check_write::GEMINI_MATCHER, hook)
        .map_err(|e| anyhow::anyhow!("{}: {e}; fix it, then run init --client gemini again", path.display()))?;
    let changed = write_json(&path, &doc)?;
    report(
        &mut out,
        &path,
        changed,
        &format!("the code-intel MCP server and a BeforeTool hook on {}", super::check_write::GEMINI_MATCHER),
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(on_path: bool, model_dir: Option<&str>, codex_home: Option<&Path>) -> Machine {
        Machine {
            exe: PathBuf::from("/opt/bin/code-intel"),
            on_path,
            model_dir: model_dir.map(str::to_string),
            codex_home: codex_home.map(Path::to_path_buf),
            claude_user_config: std::env::temp_dir().join(format!("code-intel-test-{}-claude.json", std::process::id())),
        }
    }

    fn read(path: &Path) -> Value {
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn merge_keeps_other_hooks_and_is_idempotent() {
        let mut doc = json!({
            "permissions": {"allow": ["Bash(ls)"]},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}]}
        });
        assert!(merge_hook(&mut doc, "PreToolUse", HOOK_MATCHER_CLAUDE, claude_hook()).unwrap());
        assert!(!merge_hook(&mut doc, "PreToolUse", HOOK_MATCHER_CLAUDE, claude_hook()).unwrap());
        let pre = doc["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(pre.len(), 2);
        assert_eq!(pre[0]["hooks"][0]["command"], "guard.sh");
        assert_eq!(pre[1]["matcher"], HOOK_MATCHER_CLAUDE);
        assert_eq!(pre[1]["hooks"][0]["onFailure"], "block");
        assert_eq!(doc["permissions"]["allow"][0], "Bash(ls)");
        // An old entry with an absolute path is replaced in place.
        let mut old = json!({"hooks": {"PreToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "/old/code-intel check-write"}]}]}});
        assert!(merge_hook(&mut old, "PreToolUse", HOOK_MATCHER_CLAUDE, claude_hook()).unwrap());
        assert_eq!(old["hooks"]["PreToolUse"].as_array().unwrap().len(), 1);
        assert_eq!(old["hooks"]["PreToolUse"][0]["hooks"][0]["command"], CLAUDE_HOOK_COMMAND);
        assert!(merge_hook(&mut json!({"hooks": []}), "PreToolUse", "x", claude_hook()).is_err());
    }

    #[test]
    fn claude_files_hold_no_machine_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".claude/commands")).unwrap();
        // An old command file with the marker before the frontmatter is replaced.
        std::fs::write(root.join(".claude/commands/code.md"), "<!-- installed by code-intel init --claude -->\n---\nx\n---\n").unwrap();
        std::fs::write(root.join(".mcp.json"), r#"{"mcpServers": {"other": {"command": "x"}}}"#).unwrap();
        let mut m = machine(false, Some("/models/e5"), None);
        m.claude_user_config = root.join("home/.claude.json");
        let report = install(Client::Claude, root, &m).unwrap();
        let command = std::fs::read_to_string(root.join(".claude/commands/code.md")).unwrap();
        assert!(command.starts_with("---\ndescription: "), "{command}");
        assert!(command.contains(COMMAND_MARKER));
        let mcp = read(&root.join(".mcp.json"));
        assert_eq!(mcp["mcpServers"]["other"]["command"], "x");
        assert_eq!(mcp["mcpServers"]["code-intel"], claude_server_entry());
        let settings = std::fs::read_to_string(root.join(".claude/settings.json")).unwrap();
        let mcp_text = std::fs::read_to_string(root.join(".mcp.json")).unwrap();
        for text in [&settings, &mcp_text, &command] {
            assert!(!text.contains("/opt/bin") && !text.contains(&root.display().to_string()), "{text}");
        }
        let local = read(&root.join(".claude/settings.local.json"));
        assert_eq!(local["env"]["CODE_INTEL_BIN"], "/opt/bin/code-intel");
        assert_eq!(local["enabledMcpjsonServers"], json!(["code-intel"]));
        let user = read(&root.join("home/.claude.json"));
        let entry = &user["projects"][root.display().to_string()]["mcpServers"]["code-intel"];
        assert_eq!(entry["command"], "/opt/bin/code-intel");
        assert_eq!(entry["env"]["CODE_INTEL_MODEL_DIR"], "/models/e5");
        assert!(report.contains("not on PATH"), "{report}");
        // A second run changes nothing; a user's own command file is kept.
        let again = install(Client::Claude, root, &m).unwrap();
        assert!(!again.contains("wrote"), "{again}");
        std::fs::write(root.join(".claude/commands/code.md"), "---\ndescription: mine\n---\n").unwrap();
        let mut m = machine(true, None, None);
        m.claude_user_config = root.join("home/.claude.json");
        let kept = install(Client::Claude, root, &m).unwrap();
        assert!(kept.contains("not written by code-intel"), "{kept}");
    }

    #[test]
    fn other_clients() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let codex = root.join("codex-home");
        std::fs::create_dir_all(&codex).unwrap();
        std::fs::write(codex.join("config.toml"), "# mine\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n").unwrap();
        let m = machine(true, Some("/models/e5"), Some(&codex));
        for client in [Client::Vscode, Client::Cursor, Client::Codex, Client::Gemini] {
            install(client, root, &m).unwrap();
        }
        let vscode = read(&root.join(".vscode/mcp.json"));
        assert_eq!(vscode["servers"]["code-intel"]["type"], "stdio");
        assert_eq!(vscode["servers"]["code-intel"]["command"], "code-intel");
        assert_eq!(vscode["servers"]["code-intel"]["args"][2], "${workspaceFolder}");
        assert_eq!(vscode["servers"]["code-intel"]["env"]["CODE_INTEL_MODEL_DIR"], "/models/e5");
        let cursor = read(&root.join(".cursor/mcp.json"));
        assert_eq!(cursor["mcpServers"]["code-intel"]["command"], "code-intel");
        let hooks = read(&root.join(".cursor/hooks.json"));
        assert_eq!(hooks["version"], 1);
        assert!(hooks["hooks"]["beforeShellExecution"][0]["command"].as_str().unwrap().contains("check-write --client cursor"));
        let gemini = read(&root.join(".gemini/settings.json"));
        assert_eq!(gemini["mcpServers"]["code-intel"]["args"][0], "serve");
        assert_eq!(gemini["hooks"]["BeforeTool"][0]["matcher"], super::super::check_write::GEMINI_MATCHER);
        let toml = std::fs::read_to_string(codex.join("config.toml")).unwrap();
        assert!(toml.starts_with("# mine\nmodel = \"o3\""), "{toml}");
        let parsed: toml_edit::DocumentMut = toml.parse().unwrap();
        assert_eq!(parsed["mcp_servers"]["other"]["command"].as_str(), Some("x"));
        assert_eq!(parsed["mcp_servers"]["code-intel"]["command"].as_str(), Some("/opt/bin/code-intel"));
        assert_eq!(parsed["mcp_servers"]["code-intel"]["env"]["CODE_INTEL_MODEL_DIR"].as_str(), Some("/models/e5"));
        // The write gate, in the project's file; other hooks stay.
        let project: toml_edit::DocumentMut = std::fs::read_to_string(root.join(".codex/config.toml")).unwrap().parse().unwrap();
        let command = project["hooks"]["PreToolUse"][0]["hooks"][0]["command"].as_str().unwrap().to_string();
        assert!(command.ends_with("code-intel check-write --client codex") && command.contains("exit 2"), "{command}");
        assert!(!command.contains("/opt/bin"), "{command}");
        std::fs::write(
            root.join(".codex/config.toml"),
            "model = \"o3\"\n\n[[hooks.PreToolUse]]\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"guard.sh\"\n\n[[hooks.PreToolUse]]\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"/old/code-intel check-write --client codex\"\n",
        )
        .unwrap();
        install(Client::Codex, root, &m).unwrap();
        let project: toml_edit::DocumentMut = std::fs::read_to_string(root.join(".codex/config.toml")).unwrap().parse().unwrap();
        let pre = project["hooks"]["PreToolUse"].as_array_of_tables().unwrap();
        assert_eq!(pre.len(), 2);
        assert_eq!(pre.get(0).unwrap()["hooks"][0]["command"].as_str(), Some("guard.sh"));
        assert_eq!(pre.get(1).unwrap()["hooks"][0]["command"].as_str(), Some(command.as_str()));
        assert_eq!(project["model"].as_str(), Some("o3"));
        // Idempotent.
        assert!(!install(Client::Codex, root, &m).unwrap().contains("wrote"));
        std::fs::write(codex.join("config.toml"), "not = [toml").unwrap();
        let err = install(Client::Codex, root, &m).unwrap_err();
        assert!(err.to_string().contains("not valid TOML"), "{err}");
    }
}
