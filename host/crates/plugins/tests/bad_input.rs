//! Bad input never crashes the syntax service or the host, and finishes in
//! bounded time: invalid UTF-8, binary, empty, a 1 MiB single line, 10,000
//! levels of nesting. Checked natively and through the real python and php
//! plugins (built by `cargo xtask plugins`).

mod common;

use std::time::{Duration, Instant};

use code_intel_core::{Chunker, FailureKind};
use code_intel_plugins::{HostOptions, PluginDir, PluginHost, SourceKind, syntax};

/// Generous bound for one file: the point is "does not hang", not speed
/// (the bench measures speed).
const BOUND: Duration = Duration::from_secs(10);

const DEPTH: usize = 10_000;

fn inputs(language: &str) -> Vec<(&'static str, Vec<u8>)> {
    let (open, nest_open, nest_close, close): (&str, &str, &str, &str) = match language {
        "python" => ("x = ", "[", "]", "\n"),
        _ => ("<?php\n$x = ", "[", "]", ";\n"),
    };
    let prefix = if language == "python" { "" } else { "<?php\n" };
    let mut invalid_utf8 = format!("{prefix}def caf").into_bytes();
    invalid_utf8.extend_from_slice(&[0xC3, 0x28, 0xFF, 0xFE]);
    invalid_utf8.extend_from_slice(b"(x):\n    return 1\n");
    let binary: Vec<u8> = (0..64 * 1024u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let long_line = format!("{open}\"{}\"{close}", "a".repeat(1024 * 1024));
    let nested = format!("{open}{}{}{close}", nest_open.repeat(DEPTH), nest_close.repeat(DEPTH));
    let unclosed = format!("{open}{}{close}", "(".repeat(DEPTH));
    vec![
        ("invalid_utf8", invalid_utf8),
        ("binary", binary),
        ("empty", Vec::new()),
        ("long_line", long_line.into_bytes()),
        ("nested", nested.into_bytes()),
        ("unclosed", unclosed.into_bytes()),
    ]
}

#[test]
fn native_syntax_service_survives_bad_input() {
    for language in ["python", "php", "php_only"] {
        for (name, bytes) in inputs(language) {
            let started = Instant::now();
            let tree = syntax::parse_bytes(language, &bytes).unwrap_or_else(|e| panic!("{language}/{name}: {e}"));
            assert_eq!(tree.source(), String::from_utf8_lossy(&bytes), "{language}/{name}");
            let q = if language == "python" { "(function_definition) @f" } else { "(array_creation_expression) @a" };
            match tree.query(q) {
                Ok(_) => {}
                // Capturing every one of 10,000 nested arrays copies ~100 MB:
                // the result guard refuses it, which is the point.
                Err(syntax::SyntaxError::ParseFailed(m)) if name == "nested" && m.contains("exceed") => {}
                Err(e) => panic!("{language}/{name}: {e}"),
            }
            assert!(started.elapsed() < BOUND, "{language}/{name} took {:?}", started.elapsed());
        }
    }
    // Invalid UTF-8 is replaced, not dropped, and the rest still parses.
    let tree = syntax::parse_bytes("python", &inputs("python")[0].1).unwrap();
    assert!(tree.source().starts_with("def caf\u{FFFD}(\u{FFFD}\u{FFFD}(x):"), "{}", tree.source());
    let m = tree.query("(return_statement) @r").unwrap();
    assert_eq!(m[0].captures[0].text, "return 1");
}

#[test]
fn real_plugins_survive_bad_input() {
    let dir = common::target_dir().join("release").join("plugins");
    let cache = tempfile::tempdir().unwrap();
    let host = PluginHost::load_dirs(
        &[PluginDir { path: dir.clone(), kind: SourceKind::BesideBinary }],
        HostOptions { cache_dir: Some(cache.path().to_path_buf()), ..HostOptions::default() },
    );
    for (plugin, ext, language) in [("python", "py", "python"), ("php", "php", "php")] {
        assert!(
            host.plugins().any(|p| p.name == plugin),
            "plugin `{plugin}` missing from {}: build the plugins with `cargo xtask plugins`",
            dir.display()
        );
        for (name, bytes) in inputs(language) {
            let content = String::from_utf8_lossy(&bytes);
            let path = format!("bad/{name}.{ext}");
            let started = Instant::now();
            let file = host.chunk_file(&path, &content);
            assert!(started.elapsed() < BOUND, "{path} took {:?}", started.elapsed());
            // Either the plugin chunked it, or it failed in a contained way
            // (never an invalid-output failure: the plugins must stay valid).
            for f in &file.failures {
                assert_ne!(f.kind, FailureKind::InvalidOutput, "{path}: {}", f.message);
            }
            if file.chunker == code_intel_core::chunk::FALLBACK_CHUNKER {
                let rebuilt: String = file.chunks.iter().map(|c| c.content.as_str()).collect();
                assert_eq!(rebuilt, content, "{path}: line chunks must cover the file");
            }
            eprintln!("{path}: {} chunk(s) by {} {:?}", file.chunks.len(), file.chunker, file.failures);
        }
    }
}
