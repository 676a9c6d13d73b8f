//! Command-line interface: `serve`, `init`, `index`, `search`, `status`,
//! `model (show|install)`, `plugin (list|test|new)`, `chunk`, `check-write`.

use std::process::ExitCode;

use clap::Parser;

mod bash_writes;
mod check_write;
mod chunk;
mod clients;
mod index;
mod init;
mod model;
mod plugin;
mod plugin_new;
mod search;
mod serve;
pub(crate) mod shared;
pub(crate) mod shared_confidence;
mod status;

#[derive(Parser)]
#[command(name = "code-intel", version, about = "Code intelligence MCP server")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Serve the code tools to an MCP client over stdio.
    Serve(serve::ServeArgs),
    /// Create .code-intel/config.json and set up MCP clients (--client claude|vscode|cursor|codex|gemini).
    Init(init::InitArgs),
    /// List, test (and scaffold) chunk-strategy plugins.
    Plugin(plugin::PluginArgs),
    /// Show the chunks the loaded plugins make of one file.
    Chunk(chunk::ChunkArgs),
    /// Write-gate hook (Claude Code, Gemini CLI, Codex, Cursor): block a write outside the active session's READY, explored files.
    CheckWrite(check_write::CheckWriteArgs),
    /// Index (or re-sync) a repository: only changed files are re-read.
    Index(index::IndexArgs),
    /// Show what the index holds: files, chunks per kind and plugin, failures, last sync.
    Status(status::StatusArgs),
    /// Search the index: hybrid (words and meaning) when an embedding model is available, else lexical.
    Search(search::SearchArgs),
    /// Show the embedding model semantic search uses, or install one from a local folder.
    Model(model::ModelArgs),
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => serve::run(&args),
        Command::Init(args) => init::run(&args),
        Command::Plugin(args) => plugin::run(&args),
        Command::Chunk(args) => chunk::run(&args),
        Command::CheckWrite(args) => check_write::run(&args),
        Command::Index(args) => index::run(&args),
        Command::Status(args) => status::run(&args),
        Command::Search(args) => search::run(&args),
        Command::Model(args) => model::run(&args),
    }
}
