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

/// Every PHP fixture cut at every line end and mid-line (what a file looks
/// like while it is being edited) gets chunks from the PHP plugin, or a
/// recorded failure or decline with line chunks: never an empty result for
/// a file with text in it. A class cut before its closing brace keeps the
/// class and its complete methods, as the Python plugin does.
#[test]
fn php_files_cut_mid_edit_are_never_silently_empty() {
    let dir = common::target_dir().join("release").join("plugins");
    let cache = tempfile::tempdir().unwrap();
    let host = PluginHost::load_dirs(
        &[PluginDir { path: dir.clone(), kind: SourceKind::BesideBinary }],
        HostOptions { cache_dir: Some(cache.path().to_path_buf()), ..HostOptions::default() },
    );
    assert!(host.plugins().any(|p| p.name == "php"), "no php plugin in {}: run `cargo xtask plugins`", dir.display());

    let cut = "<?php class Account { public function balance(): int { return 1; } public function owner(): bo";
    let file = host.chunk_file("app/Account.php", cut);
    let ids: Vec<&str> = file.chunks.iter().map(|c| c.id.as_str()).collect();
    assert_eq!((file.chunker.as_str(), ids.as_slice()), ("php", ["class:Account", "method:Account.balance"].as_slice()), "{file:?}");
    assert!(file.chunks[0].metadata.as_str().contains("\"syntax_errors\":true"), "{:?}", file.chunks[0].metadata);

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../fixtures/php");
    let mut sources = Vec::new();
    let mut pending = vec![root];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "php") && !path.to_string_lossy().ends_with(".blade.php") {
                sources.push((path.file_name().unwrap().to_string_lossy().to_string(), std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    assert!(sources.len() >= 8, "PHP fixtures: {}", sources.len());
    let mut checked = 0;
    for (name, source) in &sources {
        let mut cuts: Vec<usize> = source.match_indices('\n').map(|(i, _)| i + 1).collect();
        cuts.extend(source.char_indices().map(|(i, _)| i).filter(|i| i % 37 == 0));
        for at in cuts {
            let piece = &source[..at];
            if piece.trim().is_empty() {
                continue;
            }
            let file = host.chunk_file(&format!("app/{name}"), piece);
            let empty = file.chunks.is_empty();
            assert!(!empty, "{name} cut at byte {at}: no chunk, chunker {}, failures {:?}, declined {:?}", file.chunker, file.failures, file.declined);
            if file.chunker == code_intel_core::chunk::FALLBACK_CHUNKER {
                assert!(!file.failures.is_empty() || !file.declined.is_empty(), "{name} cut at byte {at}: line chunks without a reason");
            }
            checked += 1;
        }
    }
    assert!(checked > 200, "only {checked} cut files checked");
}

/// Plugin bugs fuzzing found, through the real plugins: each file is chunked
/// by its plugin with no failure (they were contained before, as a trap, an
/// invalid output or a memory blow-up, and the file fell back to lines).
#[test]
fn fuzzing_findings_in_plugins_stay_fixed() {
    let dir = common::target_dir().join("release").join("plugins");
    let cache = tempfile::tempdir().unwrap();
    let host = PluginHost::load_dirs(
        &[PluginDir { path: dir.clone(), kind: SourceKind::BesideBinary }],
        HostOptions { cache_dir: Some(cache.path().to_path_buf()), ..HostOptions::default() },
    );
    let mut tailwind = b"module.exports = { content: ['./src/**/*.vue'], theme: { extend: { colors: { brand: caf".to_vec();
    tailwind.extend_from_slice(&[0xC3, 0x28, 0xFF]);
    tailwind.extend_from_slice(" é, x: 日本 } } } }\n".as_bytes());
    let long_name = format!("acme/{}", "a".repeat(100_000));
    let composer = format!("{{\n  \"name\": \"{long_name}\",\n  \"require\": {{\"php\": \"^8.2\"}},\n  \"autoload\": {{\"psr-4\": {{\"App\\\\\": \"app/\"}}}}\n}}\n");
    let vue = "<script setup>\nconst a = 1\n</script>\n<template><p>{{ a }}</p></template>\n<script setup>\nconst b = 2\n</script>\n\0\0\0";
    // A migration split in two by damage (fuzz case 13097, reduced): `down()`
    // sits in a second class, which got no chunk of its own, so its method
    // named a parent that did not exist (invalid output).
    let split_migration = "<?php\n\nuse Illuminate\\Database\\Migrations\\Migration;\n\nclass CreateReviewsTable extends Migration\n{\n  ! public func\n\nuse Illuminate\\Database\\Schema\\Blueprint;\n\nclass CreateReviewsTable extends Migration\n{\n    public function up()\n    {\n        Schema::create('reviews', function (Blueprint $table) {\n            $table->id();\n        });\n    }\n\n    public function down()\n    {\n        Schema::dropIfExists('reviews');\n    }\n}\n";
    // 36,000 nested `[` in a config (fuzz case 14374): the reader recursed
    // per level and the plugin ran out of WebAssembly stack (a trap).
    let deep_tailwind = format!(
        "module.exports = {{\n  content: ['./resources/**/*.blade.php'],\n  theme: {{ extend: {{ x: {}1{} }} }},\n  plugins: [require('@tailwindcss/forms')],\n}}\n",
        "[".repeat(36_000),
        "]".repeat(36_000)
    );
    // 36,000 nested `<div>` in a template (fuzz case 6100 of seed 20261126,
    // reduced): each element's depth counted by walking its ancestors and
    // the elision level found by a pass per depth, both quadratic, ran past
    // the fuel limit (a timeout).
    let deep_vue = format!(
        "<template>\n  {}x{}\n</template>\n\n<script setup>\nconst a = 1\n</script>\n",
        "<div>".repeat(36_000),
        "</div>".repeat(36_000)
    );
    for (path, plugin, content) in [
        ("tailwind.config.js", "tailwind", String::from_utf8_lossy(&tailwind).into_owned()),
        ("composer.json", "composer", composer),
        ("src/components/Twice.vue", "vue", vue.to_string()),
        ("database/migrations/2025_02_20_080000_create_reviews_table.php", "migrations", split_migration.to_string()),
        ("tailwind.config.js", "tailwind", deep_tailwind),
        ("src/components/Deep.vue", "vue", deep_vue),
    ] {
        assert!(host.plugins().any(|p| p.name == plugin), "no {plugin} plugin in {}: run `cargo xtask plugins`", dir.display());
        let file = host.chunk_file(path, &content);
        assert_eq!((file.chunker.as_str(), file.failures.as_slice()), (plugin, &[][..]), "{path}");
        match plugin {
            "migrations" => {
                let down = file.chunks.iter().find(|c| c.name == "down").expect("down() has a chunk");
                let parent = down.parent.as_deref().expect("down() has a parent");
                assert!(file.chunks.iter().any(|c| c.id == parent && c.kind == "class"), "{parent}: {:?}", file.chunks);
                assert!(file.chunks.iter().any(|c| c.kind == "table_schema" && c.name == "reviews"));
            }
            "tailwind" if content.len() > 36_000 => {
                let root = file.chunks.iter().find(|c| c.id == "tailwind:config").expect("root chunk");
                let note = root.metadata.get("note").and_then(|n| n.as_str().map(str::to_string)).unwrap_or_default();
                assert!(note.contains("nested deeper than"), "{}", root.metadata.as_str());
                assert!(file.chunks.iter().any(|c| c.id == "tailwind:plugins"));
            }
            "vue" if content.len() > 36_000 => {
                assert!(file.chunks.iter().any(|c| c.id == "template"), "{:?}", file.chunks);
            }
            _ => {}
        }
    }
}
