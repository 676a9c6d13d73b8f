//! Command-line interface: `serve`, `init`, `index`, `search`, `status`,
//! `plugin (list|test|new)`, `chunk`, `doctor`.

use std::process::ExitCode;

use clap::Parser;

#[derive(Parser)]
#[command(name = "code-intel", version, about = "Code intelligence MCP server")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {}
}
