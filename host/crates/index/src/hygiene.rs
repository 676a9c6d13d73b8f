//! Index hygiene: files nobody asks a question about, left out by default
//! (config `skip_generated`) and reported in `skipped` with the rule that
//! matched.
//!
//! A lock file or a compiled stylesheet is not where a developer's answer
//! lives, yet it is large, hash-like and full of every word of the domain:
//! indexed, it floods both the keyword and the vector arm of search (two
//! published CSS files can hold most of a Laravel application's chunks).
//! Two checks:
//!
//! - by path ([`by_path`]), before a file is read: lock files, build
//!   manifests, test snapshots, published vendor assets, images, fonts,
//!   media and archives;
//! - by content ([`by_content`]), after it is read: minified or compiled
//!   code (very long lines, a Tailwind build banner, a source map
//!   reference at the end) and files that say they are generated.
//!
//! ```
//! use code_intel_index::hygiene::{by_path, by_content};
//! assert_eq!(by_path("composer.lock"), Some("lock file"));
//! assert_eq!(by_path("public/vendor/filament/app.css"), Some("published vendor asset"));
//! assert_eq!(by_path("app/Models/User.php"), None);
//! assert_eq!(by_content(&format!("a{{{}}}", "b:c;".repeat(2000))), Some("minified or compiled (long lines)"));
//! assert_eq!(by_content("def f():\n    return 1\n"), None);
//! ```

/// File names that are dependency lock files or build manifests.
const LOCK_FILES: &[&str] = &[
    "composer.lock",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "bun.lock",
    "bun.lockb",
    "uv.lock",
    "poetry.lock",
    "pdm.lock",
    "Pipfile.lock",
    "Cargo.lock",
    "Gemfile.lock",
    "go.sum",
    "flake.lock",
    "pubspec.lock",
    "mix.lock",
    "packages.lock.json",
];

/// Build manifests: generated maps from asset names to hashed file names.
const MANIFESTS: &[&str] = &["mix-manifest.json", ".vite-manifest.json", "asset-manifest.json", "webpack-stats.json"];

/// Extensions of images, fonts, media, archives and other non-source files
/// (lower case). Binary ones would be dropped after reading anyway; naming
/// them here saves the read, and SVG is text that reads as noise.
const ASSET_EXTENSIONS: &[&str] = &[
    "svg", "png", "jpg", "jpeg", "gif", "webp", "avif", "ico", "bmp", "tif", "tiff", "psd", "woff", "woff2", "ttf",
    "otf", "eot", "mp3", "mp4", "m4a", "wav", "ogg", "oga", "flac", "webm", "mov", "avi", "pdf", "zip", "gz", "tgz",
    "bz2", "xz", "7z", "rar", "jar", "war", "phar", "so", "dll", "dylib", "exe", "wasm", "pyc", "class", "snap",
];

/// Directory prefixes whose files are copies published from dependencies
/// (`php artisan vendor:publish`, `filament:assets`, collectstatic).
const VENDOR_ASSET_DIRS: &[&str] = &["public/vendor/", "public/js/filament/", "public/css/filament/", "static/vendor/"];

/// Lines longer than this are not written by hand.
const LONG_LINE_BYTES: usize = 1_000;

/// A file whose long lines hold at least this share of its bytes is minified
/// or compiled.
const LONG_LINE_SHARE: f64 = 0.5;

/// How much of a file's start is read for a "generated" marker.
const MARKER_WINDOW: usize = 1_024;

/// The rule that leaves `path` (repo-relative, `/`-separated) out of the
/// index, if any.
#[must_use]
pub fn by_path(path: &str) -> Option<&'static str> {
    let name = path.rsplit('/').next().unwrap_or(path);
    if LOCK_FILES.contains(&name) {
        return Some("lock file");
    }
    if MANIFESTS.contains(&name) {
        return Some("build manifest");
    }
    if path.split('/').any(|dir| dir == "__snapshots__") {
        return Some("test snapshot");
    }
    if VENDOR_ASSET_DIRS.iter().any(|dir| path.starts_with(dir) || path.contains(&format!("/{dir}"))) {
        return Some("published vendor asset");
    }
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())?;
    if ASSET_EXTENSIONS.contains(&ext.as_str()) {
        return Some(if ext == "snap" { "test snapshot" } else { "image, font, media or archive" });
    }
    None
}

/// The rule that leaves a file with this text out of the index, if any:
/// minified or compiled code, or a "generated" marker near the start.
#[must_use]
pub fn by_content(text: &str) -> Option<&'static str> {
    let head = &text.as_bytes()[..text.len().min(MARKER_WINDOW)];
    let head = String::from_utf8_lossy(head);
    if head.contains("@generated") || (head.contains("Code generated") && head.contains("DO NOT EDIT")) {
        return Some("generated (marked as such)");
    }
    // Tailwind writes this banner on its build output only; the sources say
    // `@import "tailwindcss"` or `@tailwind base`. Filament plugins publish
    // such builds under `public/css/<vendor>/`.
    if head.contains("/*! tailwindcss v") {
        return Some("compiled (Tailwind CSS build)");
    }
    // Bundlers and compilers end their output with a source map reference.
    let tail_start = text.len().saturating_sub(MARKER_WINDOW);
    let tail = String::from_utf8_lossy(&text.as_bytes()[tail_start..]);
    if tail.contains("# sourceMappingURL=") {
        return Some("compiled (has a source map)");
    }
    if text.len() < LONG_LINE_BYTES {
        return None;
    }
    let long: usize = text.split('\n').map(str::len).filter(|&n| n > LONG_LINE_BYTES).sum();
    // Byte counts are far below 2^52: exact in f64.
    #[allow(clippy::cast_precision_loss)]
    let share = long as f64 / text.len() as f64;
    (share >= LONG_LINE_SHARE).then_some("minified or compiled (long lines)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        for (path, rule) in [
            ("uv.lock", Some("lock file")),
            ("frontend/package-lock.json", Some("lock file")),
            ("public/mix-manifest.json", Some("build manifest")),
            ("public/vendor/livewire/livewire.js", Some("published vendor asset")),
            ("resources/img/logo.SVG", Some("image, font, media or archive")),
            ("tests/__snapshots__/Player.spec.ts.snap", Some("test snapshot")),
            ("app/Filament/Resources/OrderResource.php", None),
            ("resources/css/app.css", None),
            ("src/vendor.ts", None),
            ("Makefile", None),
        ] {
            assert_eq!(by_path(path), rule, "{path}");
        }
    }

    #[test]
    fn content() {
        let minified = format!("!function(){{{}}}();\n", "var a=1;".repeat(500));
        assert_eq!(by_content(&minified), Some("minified or compiled (long lines)"));
        // One long line in a long hand-written file is not enough.
        let mut mixed = "x = 1\n".repeat(1000);
        mixed.push_str(&"y".repeat(2000));
        assert_eq!(by_content(&mixed), None);
        assert_eq!(by_content("// Code generated by protoc-gen-go. DO NOT EDIT.\npackage x\n"), Some("generated (marked as such)"));
        assert_eq!(by_content("# DO NOT EDIT this by hand, see docs\n"), None);
        assert_eq!(by_content(""), None);
        let tailwind = "/*! tailwindcss v4.1.12 | MIT License | https://tailwindcss.com */\n@layer theme {\n  :root { --x: 1; }\n}\n";
        assert_eq!(by_content(tailwind), Some("compiled (Tailwind CSS build)"));
        assert_eq!(by_content("@import \"tailwindcss\";\n@theme { --color-brand: red; }\n"), None);
        let bundle = format!("{}//# sourceMappingURL=app.js.map\n", "export const a = 1;\n".repeat(200));
        assert_eq!(by_content(&bundle), Some("compiled (has a source map)"));
        assert_eq!(by_content("/* see sourceMappingURL docs */\nbody { color: red; }\n"), None);
    }
}
