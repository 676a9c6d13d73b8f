//! JavaScript and TypeScript chunk strategy (a code-intel plugin, built as a
//! WebAssembly component): `.js`, `.jsx`, `.mjs`, `.cjs` with the host's
//! `javascript` grammar (JSX included), `.ts`, `.mts`, `.cts` with
//! `typescript`, `.tsx` with `tsx`. The strategy itself lives in
//! `code-intel-js-support` (shared with the Vue plugin); this crate is its
//! plugin wrapper.
//!
//! Minified bundles (`*.min.js`, or long files whose lines average over 500
//! bytes) are declined: they hold no definitions worth a chunk and fall back
//! to line chunks.

use code_intel_js_support::{chunk_script, grammar_for};
use code_intel_plugin_sdk::{ChunkOutcome, Plugin, PluginError, PluginInfo, SourceFile, export_plugin};

/// The plugin type exported to the host.
pub struct JavaScript;

/// A general language strategy: below framework-specific plugins (the
/// Tailwind config plugin takes `tailwind.config.js` with 20).
const PRIORITY: i32 = 10;

impl Plugin for JavaScript {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "javascript".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "JavaScript/TypeScript (JSX, TSX): modules, functions, arrow functions, classes, methods, React components, interfaces, type aliases, enums, with JSDoc, exports and imports".into(),
            languages: vec!["javascript".into(), "typescript".into(), "tsx".into()],
            file_patterns: ["js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts"].iter().map(|e| format!("**/*.{e}")).collect(),
            priority: PRIORITY,
        }
    }

    fn chunk(file: SourceFile) -> Result<ChunkOutcome, PluginError> {
        let Some(language) = grammar_for(&file.path) else {
            return Ok(ChunkOutcome::Decline("not a JavaScript or TypeScript file".into()));
        };
        if let Some(reason) = minified(&file.path, &file.content) {
            return Ok(ChunkOutcome::Decline(reason));
        }
        if file.content.trim().is_empty() {
            return Ok(ChunkOutcome::Chunks(Vec::new()));
        }
        Ok(ChunkOutcome::Chunks(chunk_script(language, &file.path, &file.content)?))
    }
}

export_plugin!(JavaScript);

/// Why a file looks minified, if it does.
fn minified(path: &str, content: &str) -> Option<String> {
    if path.contains(".min.") {
        return Some("a minified bundle (`.min.` in its name)".into());
    }
    let lines = content.lines().count().max(1);
    (content.len() > 20_000 && content.len() / lines > 500).then(|| "a minified bundle (lines average over 500 bytes)".into())
}
