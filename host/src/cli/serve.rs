//! `code-intel serve`: the MCP server over stdio.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::mcp::{ServeOptions, ToolProfile, serve};

/// Serve the code tools to an MCP client over stdio.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Repository root (default: the repository containing the current directory).
    #[arg(long, value_name = "PATH")]
    pub repo: Option<PathBuf>,
    /// Do not sync the index at start (serve the index as it is).
    #[arg(long)]
    pub no_sync: bool,
    /// Tools to offer: `all` (code tools and the session workflow) or `code`
    /// (the code tools alone, for clients that load every tool's schema up
    /// front).
    #[arg(long, value_enum, default_value_t = ToolProfile::All, value_name = "PROFILE")]
    pub tools: ToolProfile,
}

pub fn run(args: &ServeArgs) -> ExitCode {
    init_logging();
    let repo = match &args.repo {
        Some(repo) => repo.clone(),
        None => {
            let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
            code_intel_core::config::find_repo_root(&cwd)
        }
    };
    match serve(&ServeOptions { repo, no_sync: args.no_sync, tools: args.tools }) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("code-intel serve: {e:#}");
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr only (stdout is the MCP channel). `CODE_INTEL_LOG`
/// takes a tracing filter (default `info`).
fn init_logging() {
    let filter = crate::log_filter("info");
    let _ = tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(filter).with_ansi(false).try_init();
}
