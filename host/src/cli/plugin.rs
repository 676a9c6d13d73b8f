//! `code-intel plugin list|test|new`: what the plugin host loaded (and
//! rejected), the golden-file harness for plugin authors, and the scaffold
//! (`plugin_new.rs`).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use code_intel_plugins::harness::{self, CaseStatus};
use code_intel_plugins::{HostOptions, PluginHost, SourceKind};

/// Inspect and test chunk-strategy plugins.
#[derive(clap::Args, Debug)]
pub struct PluginArgs {
    #[command(subcommand)]
    pub command: PluginCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum PluginCommand {
    /// Show the plugin search path, the plugins loaded from it (in the order
    /// they are tried) and the plugin files rejected, with reasons.
    List(ListArgs),
    /// Run a plugin on every matching file under DIR and compare the chunks
    /// with the golden files `<file>.golden.json` beside them.
    Test(TestArgs),
    /// Scaffold a plugin crate that builds for wasm32-wasip2 and passes
    /// `plugin test` out of the box.
    New(super::plugin_new::NewArgs),
}

#[derive(clap::Args, Debug)]
pub struct ListArgs {
    /// Repository whose `.code-intel/plugins/` is searched too (default: the
    /// current directory).
    #[arg(long)]
    pub repo: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct TestArgs {
    /// The plugin component (`.wasm`) to test.
    pub plugin: PathBuf,
    /// Fixture directory, searched recursively; paths given to the plugin are
    /// relative to it.
    pub dir: PathBuf,
    /// Write the current output as the golden files instead of comparing.
    #[arg(long)]
    pub bless: bool,
}

pub fn run(args: &PluginArgs) -> ExitCode {
    match &args.command {
        PluginCommand::List(a) => list(a),
        PluginCommand::Test(a) => test(a),
        PluginCommand::New(a) => super::plugin_new::run(a),
    }
}

fn list(args: &ListArgs) -> ExitCode {
    let repo = args.repo.clone().or_else(|| std::env::current_dir().ok());
    // Every plugin is loaded in full (not described from the cache), so the
    // list says what actually loads and what is rejected, and why.
    let options = HostOptions { lazy: false, ..HostOptions::default() };
    let host = PluginHost::discover(repo.as_deref(), options.clone());
    if args.json {
        let value = serde_json::json!({
            "search_path": host.searched(),
            "plugins": host.plugins().collect::<Vec<_>>(),
            "rejected": host.rejections(),
            "cache_dir": options.cache_dir,
            "limits": {
                "call_timeout_ms": options.limits.call_timeout.as_millis(),
                "memory_limit_bytes": options.limits.memory_limit,
            },
        });
        println!("{}", serde_json::to_string_pretty(&value).unwrap_or_default());
        return ExitCode::SUCCESS;
    }
    let mut out = String::new();
    let _ = writeln!(out, "Plugin search path (a later plugin with the same name wins):");
    for dir in host.searched() {
        let state = if dir.exists { format!("{} plugin file(s)", dir.files) } else { "missing".to_string() };
        let _ = writeln!(out, "  {:<14} {}  ({state})", dir.source.label(), dir.path.display());
    }
    if !host.searched().iter().any(|d| d.source == SourceKind::EnvVar) {
        let _ = writeln!(out, "  {:<14} (set {} to add directories)", "env", code_intel_plugins::PLUGIN_DIR_ENV);
    }
    let plugins: Vec<_> = host.plugins().collect();
    let _ = writeln!(out, "\nLoaded ({}), in the order they are tried:", plugins.len());
    if plugins.is_empty() {
        let _ = writeln!(out, "  none: every file gets line chunks. Build the plugins with `cargo xtask plugins`.");
    }
    for p in &plugins {
        let _ = writeln!(out, "  {} {}  priority {}  [{}]", p.name, p.version, p.priority, p.languages.join(", "));
        if !p.description.is_empty() {
            let _ = writeln!(out, "      {}", p.description);
        }
        let _ = writeln!(out, "      patterns: {}", p.file_patterns.join("  "));
        let _ = writeln!(
            out,
            "      {} ({}), contract {}, {} in {:.1} ms",
            p.path.display(),
            p.source.label(),
            p.wit_version,
            if p.from_cache { "from cache" } else { "compiled" },
            p.load_ms
        );
    }
    if !host.rejections().is_empty() {
        let _ = writeln!(out, "\nRejected ({}):", host.rejections().len());
        for r in host.rejections() {
            let name = r.name.as_deref().map(|n| format!(" [{n}]")).unwrap_or_default();
            let _ = writeln!(out, "  {}{name} ({}): {}", r.path.display(), r.source.label(), r.reason);
        }
    }
    let cache = options.cache_dir.as_ref().map_or_else(|| "disabled".to_string(), |d| d.display().to_string());
    let _ = writeln!(
        out,
        "\nCompiled-plugin cache: {cache}\nLimits per call: {:?}, {} MiB memory",
        options.limits.call_timeout,
        options.limits.memory_limit / (1024 * 1024)
    );
    print!("{out}");
    ExitCode::SUCCESS
}

fn test(args: &TestArgs) -> ExitCode {
    if !args.dir.is_dir() {
        eprintln!("error: {} is not a directory; give the fixture directory to test against", args.dir.display());
        return ExitCode::FAILURE;
    }
    let options = HostOptions { lazy: false, ..HostOptions::default() };
    let host = PluginHost::load_files(&[(args.plugin.clone(), SourceKind::Explicit)], options);
    if let Some(r) = host.rejections().first() {
        eprintln!("error: {} cannot be loaded: {}", args.plugin.display(), r.reason);
        return ExitCode::FAILURE;
    }
    let Some(plugin) = host.plugins().next().map(|p| p.name.clone()) else {
        eprintln!("error: {} did not load", args.plugin.display());
        return ExitCode::FAILURE;
    };
    let report = match harness::run(&host, &plugin, &args.dir, args.bless) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (mut passed, mut failed, mut blessed) = (0, 0, 0);
    for case in &report.cases {
        match &case.status {
            CaseStatus::Pass => {
                passed += 1;
                println!("ok       {}", case.path);
            }
            CaseStatus::Blessed { changed } => {
                blessed += 1;
                println!("{} {}", if *changed { "blessed " } else { "same    " }, case.path);
            }
            CaseStatus::Mismatch { diff } => {
                failed += 1;
                println!("MISMATCH {}\n{diff}", case.path);
            }
            CaseStatus::MissingGolden => {
                failed += 1;
                println!(
                    "MISSING  {}: no {} (run with --bless to create it)",
                    case.path,
                    harness::golden_path(std::path::Path::new(&case.path)).display()
                );
            }
            CaseStatus::Failed(f) => {
                failed += 1;
                println!("FAILED   {}: {:?}: {}", case.path, f.kind, f.message);
            }
            CaseStatus::Io(e) => {
                failed += 1;
                println!("ERROR    {}: {e}", case.path);
            }
        }
    }
    if report.cases.is_empty() {
        let patterns = host.plugins().next().map(|p| p.file_patterns.join(" ")).unwrap_or_default();
        eprintln!("error: no file under {} matches the plugin's patterns ({patterns})", args.dir.display());
        return ExitCode::FAILURE;
    }
    println!(
        "\n{plugin}: {} file(s): {passed} passed, {failed} failed{}",
        report.cases.len(),
        if args.bless { format!(", {blessed} blessed") } else { String::new() }
    );
    if report.ok() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
