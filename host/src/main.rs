//! `code-intel`: the command-line entry point and MCP server.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
