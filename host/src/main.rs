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

/// The log filter for `CODE_INTEL_LOG` (else `default`). The WebAssembly
/// compiler (cranelift, regalloc2, wasmtime) logs thousands of lines at
/// debug level while it compiles a plugin; those targets stay at `warn`
/// unless the filter names them.
pub(crate) fn log_filter(default: &str) -> tracing_subscriber::EnvFilter {
    let asked = std::env::var("CODE_INTEL_LOG").ok().filter(|v| !v.trim().is_empty());
    let mut directives = asked.clone().unwrap_or_else(|| default.to_string());
    for quiet in ["cranelift", "regalloc2", "wasmtime", "wasmparser"] {
        if !directives.contains(quiet) {
            directives.push_str(&format!(",{quiet}=warn"));
        }
    }
    tracing_subscriber::EnvFilter::try_new(&directives).unwrap_or_else(|e| {
        eprintln!("warning: CODE_INTEL_LOG={}: {e}; using {default}", asked.unwrap_or_default());
        tracing_subscriber::EnvFilter::new(default)
    })
}
