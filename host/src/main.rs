//! `code-intel`: the command-line entry point and MCP server.

mod cli;
mod mcp;

fn main() -> std::process::ExitCode {
    // SAFETY: first thing in `main`: no other thread exists yet.
    #[allow(unsafe_code)]
    unsafe {
        code_intel_embed::threads::run_elementwise_on_callers();
    }
    cli::main()
}
