//! The Laravel-family plugins (blade, filament, migrations, composer,
//! tailwind) against their golden files, through `code-intel plugin test`.
//!
//! Needs the components built first: `cargo xtask plugins`. A missing
//! component fails the test with that hint.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("host/ lives in the repository").to_path_buf()
}

fn built_plugin(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_BIN_EXE_code-intel")).parent().expect("binary has a directory").join("plugins");
    let path = dir.join(format!("{name}.wasm"));
    assert!(path.is_file(), "{} is missing: build the plugins first with `cargo xtask plugins`", path.display());
    path
}

fn goldens(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .expect("fixture directory")
        .map(|e| e.expect("entry").path())
        .map(|p| if p.is_dir() { goldens(&p) } else { usize::from(p.to_string_lossy().ends_with(".golden.json")) })
        .sum()
}

fn assert_goldens_pass(plugin: &str) {
    let fixtures = repo_root().join("fixtures").join(plugin);
    let output = Command::new(env!("CARGO_BIN_EXE_code-intel"))
        .args(["plugin", "test"])
        .arg(built_plugin(plugin))
        .arg(&fixtures)
        .output()
        .expect("run code-intel");
    let out = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "plugin test {plugin} failed:\n{out}");
    let count = goldens(&fixtures);
    assert!(count >= 4, "too few golden files under {}", fixtures.display());
    assert!(out.contains(&format!("{count} file(s): {count} passed, 0 failed")), "expected all {count} fixtures checked:\n{out}");
}

#[test]
fn blade_plugin_matches_its_golden_files() {
    assert_goldens_pass("blade");
}

#[test]
fn filament_plugin_matches_its_golden_files() {
    assert_goldens_pass("filament");
}

#[test]
fn migrations_plugin_matches_its_golden_files() {
    assert_goldens_pass("migrations");
}

#[test]
fn composer_plugin_matches_its_golden_files() {
    assert_goldens_pass("composer");
}

#[test]
fn tailwind_plugin_matches_its_golden_files() {
    assert_goldens_pass("tailwind");
}

/// Selection by priority and decline, as the host does it for a real tree:
/// a Blade view goes to blade (not php), a Filament resource to filament, an
/// API resource named `*Resource.php` is declined by filament and taken by php,
/// a migration to migrations.
#[test]
fn laravel_files_reach_the_right_plugin() {
    let app = repo_root().join("fixtures/laravel-app");
    for (file, chunker) in [
        ("resources/views/products/show.blade.php", "blade"),
        ("app/Filament/Resources/CategoryResource.php", "filament"),
        ("app/Http/Resources/ProductResource.php", "php"),
        ("database/migrations/2025_01_10_100100_create_products_table.php", "migrations"),
        ("composer.json", "composer"),
        ("tailwind.config.js", "tailwind"),
        ("app/Models/Product.php", "php"),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_code-intel"))
            .current_dir(&app)
            .args(["chunk", file, "--repo", ".", "--json"])
            .output()
            .expect("run code-intel chunk");
        let out = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "code-intel chunk {file} failed: {}", String::from_utf8_lossy(&output.stderr));
        let json: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("chunk --json output for {file}: {e}\n{out}"));
        assert_eq!(json["chunker"], chunker, "{file} was chunked by {}", json["chunker"]);
    }
}
