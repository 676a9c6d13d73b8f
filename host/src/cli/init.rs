//! `code-intel init [PATH] [--client NAME]...`: creates
//! `.code-intel/config.json` with the documented defaults and sets up MCP
//! clients (`super::clients`): the server registration and, where the
//! client has hooks, the write gate. Without `--client` it shows the
//! Claude Code registration.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use code_intel_core::config::{self, Config};

use super::clients::{self, Client, Machine};

/// Set up a repository for code-intel.
#[derive(clap::Args, Debug)]
pub struct InitArgs {
    /// Repository root (default: the current directory).
    pub path: Option<PathBuf>,
    /// Set up an MCP client: claude, vscode, cursor, codex, gemini
    /// (repeat the option or give a comma list). Project files hold no path
    /// of this machine; docs/clients.md lists what each client gets.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub client: Vec<Client>,
    /// Same as `--client claude`: the MCP server in `.mcp.json`, the `/code`
    /// command and the PreToolUse hook that blocks edits outside the session
    /// workflow (existing settings are kept).
    #[arg(long)]
    pub claude: bool,
    /// Only add (or update) the `code-intel` entry in `<PATH>/.mcp.json`,
    /// keeping every other server in it.
    #[arg(long)]
    pub write_mcp_json: bool,
}

pub fn run(args: &InitArgs) -> ExitCode {
    match init(args) {
        Ok(report) => {
            print!("{report}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init(args: &InitArgs) -> anyhow::Result<String> {
    let exe = std::env::current_exe()?.canonicalize()?;
    init_with(args, &Machine::detect(exe))
}

fn init_with(args: &InitArgs, machine: &Machine) -> anyhow::Result<String> {
    let given = args.path.clone().unwrap_or_else(|| PathBuf::from("."));
    let root = given
        .canonicalize()
        .map_err(|e| anyhow::anyhow!("{}: {e}; give an existing repository directory", given.display()))?;
    if !root.is_dir() {
        anyhow::bail!("{} is not a directory; give the repository root", root.display());
    }
    let mut out = String::new();
    let config_path = config::config_path(&root);
    if config_path.exists() {
        // Never overwrite: validate what is there and say so.
        let (_, warnings) = Config::load(&root)?;
        out.push_str(&format!("kept existing {}\n", config_path.display()));
        for w in warnings {
            out.push_str(&format!("  warning: {w}\n"));
        }
    } else {
        std::fs::create_dir_all(config::state_dir(&root))?;
        std::fs::write(&config_path, Config::default_json() + "\n")?;
        out.push_str(&format!("wrote {} (defaults; see docs/tools.md for every key)\n", config_path.display()));
    }

    let mut chosen = args.client.clone();
    if args.claude && !chosen.contains(&Client::Claude) {
        chosen.push(Client::Claude);
    }
    chosen.dedup();
    if args.write_mcp_json && !chosen.contains(&Client::Claude) {
        let path = root.join(".mcp.json");
        write_mcp_json(&path, &clients::claude_server_entry())?;
        out.push_str(&format!("updated {}\n", path.display()));
    }
    for client in &chosen {
        out.push('\n');
        out.push_str(&clients::install(*client, &root, machine)?);
    }
    if chosen.is_empty() {
        let mcp_json = serde_json::json!({ "mcpServers": { "code-intel": clients::claude_server_entry() } });
        out.push_str("\nMCP client configuration (.mcp.json in the repository root):\n");
        out.push_str(&serde_json::to_string_pretty(&mcp_json)?);
        out.push('\n');
        out.push_str("\nSet up a client (server, and the write gate where the client has hooks):\n");
        out.push_str(&format!("code-intel init {} --client claude   (or vscode, cursor, codex, gemini)\n", shell_quote(&root)));
    }
    if !machine.on_path {
        out.push_str(&format!(
            "\nnote: `code-intel` on PATH is not {}; clients start the server as `code-intel`\n",
            machine.exe.display()
        ));
    }
    Ok(out)
}

/// Adds or replaces the `code-intel` server in an `.mcp.json`, keeping the rest.
fn write_mcp_json(path: &Path, entry: &serde_json::Value) -> anyhow::Result<()> {
    let mut doc = match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str::<serde_json::Value>(&text)
            .map_err(|e| anyhow::anyhow!("{} is not valid JSON ({e}); fix it or remove it first", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => serde_json::json!({}),
        Err(e) => return Err(anyhow::anyhow!("cannot read {}: {e}", path.display())),
    };
    let Some(obj) = doc.as_object_mut() else {
        anyhow::bail!("{} must hold a JSON object", path.display());
    };
    let servers = obj.entry("mcpServers").or_insert_with(|| serde_json::json!({}));
    let Some(servers) = servers.as_object_mut() else {
        anyhow::bail!("`mcpServers` in {} must be an object", path.display());
    };
    servers.insert("code-intel".to_string(), entry.clone());
    std::fs::write(path, serde_json::to_string_pretty(&doc)? + "\n")?;
    Ok(())
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
    fn writes_defaults_once_and_merges_mcp_json() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".mcp.json"), r#"{"mcpServers": {"other": {"command": "x"}}}"#).unwrap();
        let args = InitArgs { path: Some(dir.path().to_path_buf()), write_mcp_json: true, claude: false, client: vec![] };
        let report = init(&args).unwrap();
        assert!(report.contains("wrote"), "{report}");
        assert!(report.contains("--client claude"), "{report}");
        let (config, warnings) = Config::load(dir.path()).unwrap();
        assert_eq!(config, Config::default());
        assert!(warnings.is_empty());
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join(".mcp.json")).unwrap()).unwrap();
        assert_eq!(doc["mcpServers"]["other"]["command"], "x");
        assert_eq!(doc["mcpServers"]["code-intel"]["args"], serde_json::json!(["serve"]));

        // A second run keeps the (edited) config.
        std::fs::write(config::config_path(dir.path()), r#"{"max_file_bytes": 5}"#).unwrap();
        let report = init(&args).unwrap();
        assert!(report.contains("kept existing"), "{report}");
        assert_eq!(Config::load(dir.path()).unwrap().0.max_file_bytes, 5);
    }

    #[test]
    fn refuses_a_missing_directory_and_broken_mcp_json() {
        let err = init(&InitArgs { path: Some("/definitely/missing".into()), write_mcp_json: false, claude: false, client: vec![] }).unwrap_err();
        assert!(err.to_string().contains("/definitely/missing"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".mcp.json"), "{ nope").unwrap();
        let err = init(&InitArgs { path: Some(dir.path().to_path_buf()), write_mcp_json: true, claude: false, client: vec![] }).unwrap_err();
        assert!(err.to_string().contains("not valid JSON"), "{err}");
    }
}
