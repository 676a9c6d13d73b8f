//! `code-intel`: the command-line entry point and MCP server.

mod cli;
mod mcp;

fn main() -> std::process::ExitCode {
    cli::main()
}
