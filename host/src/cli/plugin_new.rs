//! `code-intel plugin new NAME`: scaffolds a plugin crate that builds for
//! `wasm32-wasip2` and passes `code-intel plugin test` out of the box.
//!
//! The crate depends on the guest SDK (`code-intel-plugin-sdk`):
//! - by path, when created inside a code-intel checkout (found by walking up
//!   from the new crate's directory) or when `--sdk PATH` names one;
//! - otherwise on a copy of the SDK and the WIT this binary was built with,
//!   written into the crate (`vendor/code-intel-plugin-sdk/`, `wit/`), with
//!   a lock file holding the versions the SDK was built with. The SDK's own
//!   dependencies (wit-bindgen, serde, ...) are written out too, as `cargo
//!   vendor` lays them out (`vendor/crates/`, from an archive built into this
//!   binary by `scripts/vendor-plugin-sdk`), with a `.cargo/config.toml` that
//!   points cargo at them: the crate builds offline with an empty cargo
//!   cache. `--no-vendor` leaves them to crates.io.

use std::fs;
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

/// Where the vendored SDK goes in the new crate. The SDK reads the WIT from
/// `../../wit` (its `wit_bindgen::generate!`), i.e. `wit/` of the crate.
const VENDORED_SDK: &str = "vendor/code-intel-plugin-sdk";

/// The SDK's sources, as built into this binary: (path in the SDK crate, text).
const SDK_SOURCES: &[(&str, &str)] = &[
    ("README.md", include_str!("../../../plugins/sdk/README.md")),
    ("src/code_intel_plugin_sdk.rs", include_str!("../../../plugins/sdk/src/code_intel_plugin_sdk.rs")),
    ("src/arena.rs", include_str!("../../../plugins/sdk/src/arena.rs")),
    ("src/builder.rs", include_str!("../../../plugins/sdk/src/builder.rs")),
    ("src/span.rs", include_str!("../../../plugins/sdk/src/span.rs")),
    ("src/syntax.rs", include_str!("../../../plugins/sdk/src/syntax.rs")),
    ("src/text.rs", include_str!("../../../plugins/sdk/src/text.rs")),
];

/// The plugin contract, as built into this binary: (file name in `wit/`, text).
const WIT_FILES: &[(&str, &str)] = &[("plugin.wit", include_str!("../../../wit/plugin.wit"))];

/// The SDK's manifest and the plugin workspace's (which holds the versions
/// the SDK inherits), and the workspace's lock file.
const SDK_MANIFEST: &str = include_str!("../../../plugins/sdk/Cargo.toml");
const PLUGINS_MANIFEST: &str = include_str!("../../../plugins/Cargo.toml");
const PLUGINS_LOCK: &str = include_str!("../../../plugins/Cargo.lock");

/// Where the SDK's third-party crates go in the new crate.
const VENDORED_CRATES: &str = "vendor/crates";

/// The SDK's third-party crates as `cargo vendor` writes them (one
/// `<name>-<version>/` directory each, with its `.cargo-checksum.json`;
/// tests, benches and examples left out), a tar.zst made by
/// `scripts/vendor-plugin-sdk` from the versions `plugins/Cargo.lock` pins.
const VENDORED_CRATES_ARCHIVE: &[u8] = include_bytes!("plugin_template/vendor-crates.tar.zst");

/// `.cargo/config.toml` of the new crate: crates.io replaced by `vendor/crates`.
const CARGO_CONFIG: &str = include_str!("plugin_template/cargo-config.toml");

/// Template files: (path in the new crate, text). `{{name}}`,
/// `{{crate_file}}` and `{{sdk_dependency}}` are filled in.
const TEMPLATE: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("plugin_template/Cargo.toml.tmpl")),
    ("src/lib.rs", include_str!("plugin_template/src/lib.rs.tmpl")),
    ("README.md", include_str!("plugin_template/README.md.tmpl")),
    (".gitignore", include_str!("plugin_template/gitignore.tmpl")),
    ("fixtures/greetings.py", include_str!("plugin_template/fixtures/greetings.py")),
    ("fixtures/greetings.py.golden.json", include_str!("plugin_template/fixtures/greetings.py.golden.json")),
];

/// Scaffold a new plugin crate.
#[derive(clap::Args, Debug)]
pub struct NewArgs {
    /// Plugin name: lowercase letters, digits and `-`, starting with a letter
    /// (it names the crate, the component file and the plugin).
    pub name: String,
    /// Directory to create (default: `./NAME`). Must not exist or be empty.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Path of the SDK crate (`plugins/sdk` of a code-intel checkout) to
    /// depend on, instead of the one found around DIR or the copy this
    /// binary writes into the crate.
    #[arg(long)]
    pub sdk: Option<PathBuf>,
    /// Do not write the SDK's third-party crates (`vendor/crates/`) and the
    /// `.cargo/config.toml` that points cargo at them: cargo then takes them
    /// from crates.io or its cache, and an offline build needs them there.
    #[arg(long)]
    pub no_vendor: bool,
}

pub fn run(args: &NewArgs) -> ExitCode {
    match scaffold(args) {
        Ok(message) => {
            print!("{message}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn valid_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.ends_with('-')
}

fn scaffold(args: &NewArgs) -> Result<String, String> {
    if !valid_name(&args.name) {
        return Err(format!(
            "`{}` is not a valid plugin name: use lowercase letters, digits and `-`, starting with a letter (e.g. `my-lang`)",
            args.name
        ));
    }
    let cwd = std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from(&args.name));
    let dir = if dir.is_absolute() { dir } else { cwd.join(dir) };
    if dir.exists() && fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?.next().is_some() {
        return Err(format!("{} exists and is not empty; choose another --dir", dir.display()));
    }
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let dir = dir.canonicalize().map_err(|e| format!("{}: {e}", dir.display()))?;

    let (dependency, how) = match local_sdk(args.sdk.as_deref(), &dir)? {
        Some(sdk) => {
            let path = relative(&dir, &sdk);
            let path = path.to_string_lossy().replace('\\', "/");
            (format!("code-intel-plugin-sdk = {{ path = \"{path}\" }}"), format!("by path: {path}"))
        }
        None => {
            write_vendored_sdk(&dir, &args.name, !args.no_vendor)?;
            let crates = if args.no_vendor { "" } else { ", its dependencies into vendor/crates" };
            (
                format!("code-intel-plugin-sdk = {{ path = \"{VENDORED_SDK}\" }}"),
                format!("{} copied into {VENDORED_SDK}{crates}, WIT into wit/", env!("CARGO_PKG_VERSION")),
            )
        }
    };
    let crate_file = args.name.replace('-', "_");
    for (path, text) in TEMPLATE {
        let text = text
            .replace("{{name}}", &args.name)
            .replace("{{crate_file}}", &crate_file)
            .replace("{{sdk_dependency}}", &dependency);
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        fs::write(&target, text).map_err(|e| format!("cannot write {}: {e}", target.display()))?;
    }
    Ok(format!(
        "Created plugin `{name}` in {dir} (SDK {how}).\n\nNext:\n  cd {dir}\n  cargo build --release --target wasm32-wasip2\n  code-intel plugin test target/wasm32-wasip2/release/{crate_file}.wasm fixtures\n",
        name = args.name,
        dir = dir.display(),
    ))
}

/// The SDK checkout to depend on by path: `--sdk`, else `plugins/sdk` of a
/// code-intel checkout around `dir`; `None` to vendor the built-in copy.
fn local_sdk(explicit: Option<&Path>, dir: &Path) -> Result<Option<PathBuf>, String> {
    Ok(match explicit {
        Some(sdk) => {
            let sdk = sdk
                .canonicalize()
                .map_err(|e| format!("--sdk {}: {e}; give the `plugins/sdk` directory of a code-intel checkout", sdk.display()))?;
            if !sdk.join("Cargo.toml").is_file() {
                return Err(format!("--sdk {}: no Cargo.toml there; give the `plugins/sdk` directory of a code-intel checkout", sdk.display()));
            }
            Some(sdk)
        }
        None => dir
            .ancestors()
            .map(|a| a.join("plugins").join("sdk"))
            .find(|sdk| sdk.join("Cargo.toml").is_file() && sdk.join("../../wit/plugin.wit").is_file()),
    })
}

/// Writes the SDK and the WIT this binary was built with into the new
/// crate, the lock file of the versions they were built with and, with
/// `crates`, the SDK's third-party crates and the cargo configuration that
/// uses them.
fn write_vendored_sdk(dir: &Path, name: &str, crates: bool) -> Result<(), String> {
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    let sdk = dir.join(VENDORED_SDK);
    files.push((sdk.join("Cargo.toml"), vendored_manifest()?));
    for (path, text) in SDK_SOURCES {
        files.push((sdk.join(path), (*text).to_string()));
    }
    for (name, text) in WIT_FILES {
        files.push((dir.join("wit").join(name), (*text).to_string()));
    }
    files.push((dir.join("Cargo.lock"), scaffold_lock(name)?));
    if crates {
        files.push((dir.join(".cargo/config.toml"), CARGO_CONFIG.to_string()));
    }
    for (path, text) in files {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if crates {
        let target = dir.join(VENDORED_CRATES);
        fs::create_dir_all(&target).map_err(|e| format!("cannot create {}: {e}", target.display()))?;
        let mut archive = tar::Archive::new(vendored_crates()?);
        archive.set_preserve_mtime(false);
        archive.set_preserve_permissions(false);
        archive.unpack(&target).map_err(|e| format!("cannot write the SDK's crates into {}: {e}", target.display()))?;
    }
    Ok(())
}

/// The built-in archive of the SDK's crates, decompressed as it is read.
fn vendored_crates() -> Result<impl std::io::Read, String> {
    ruzstd::decoding::StreamingDecoder::new(VENDORED_CRATES_ARCHIVE)
        .map_err(|e| format!("the SDK's built-in crates cannot be read ({e}); this build of code-intel is damaged: reinstall it, or use --no-vendor"))
}

/// A package of a `Cargo.lock`.
#[derive(Debug, Clone, PartialEq)]
struct LockedPackage {
    name: String,
    version: String,
    source: Option<String>,
    checksum: Option<String>,
    /// `(name, version)` of each dependency, the version resolved when the
    /// lock file leaves it out (one package of that name).
    dependencies: Vec<(String, String)>,
}

/// The packages of a `Cargo.lock` (format 4).
fn locked_packages(lock: &str) -> Result<Vec<LockedPackage>, String> {
    let doc: toml_edit::DocumentMut = lock.parse().map_err(|e| format!("the built-in plugin lock file does not parse: {e}"))?;
    let string = |table: &toml_edit::Table, key: &str| table.get(key).and_then(toml_edit::Item::as_str).map(str::to_string);
    let tables = doc.get("package").and_then(toml_edit::Item::as_array_of_tables).ok_or("the built-in plugin lock file lists no packages")?;
    let mut packages = Vec::new();
    for table in tables.iter() {
        let (Some(name), Some(version)) = (string(table, "name"), string(table, "version")) else {
            return Err("the built-in plugin lock file has a package without name or version".into());
        };
        let dependencies = table
            .get("dependencies")
            .and_then(toml_edit::Item::as_array)
            .map(|a| a.iter().filter_map(|v| v.as_str()).map(|d| {
                let mut parts = d.split(' ');
                (parts.next().unwrap_or_default().to_string(), parts.next().unwrap_or_default().to_string())
            }).collect())
            .unwrap_or_default();
        packages.push(LockedPackage { name, version, source: string(table, "source"), checksum: string(table, "checksum"), dependencies });
    }
    let resolved: Vec<(String, String)> = packages.iter().map(|p| (p.name.clone(), p.version.clone())).collect();
    for package in &mut packages {
        for (name, version) in &mut package.dependencies {
            if version.is_empty() {
                let mut of_name = resolved.iter().filter(|(n, _)| n == name);
                match (of_name.next(), of_name.next()) {
                    (Some((_, v)), None) => *version = v.clone(),
                    _ => return Err(format!("the built-in plugin lock file names `{name}` without a version it can be told by")),
                }
            }
        }
    }
    Ok(packages)
}

/// The SDK and every package it depends on, directly or not, in the order
/// of the plugin workspace's lock file.
fn sdk_packages() -> Result<Vec<LockedPackage>, String> {
    let packages = locked_packages(PLUGINS_LOCK)?;
    let sdk = packages
        .iter()
        .find(|p| p.name == "code-intel-plugin-sdk" && p.source.is_none())
        .ok_or("the built-in plugin lock file has no code-intel-plugin-sdk")?;
    let mut wanted = vec![(sdk.name.clone(), sdk.version.clone())];
    let mut next = 0;
    while next < wanted.len() {
        let (name, version) = wanted[next].clone();
        next += 1;
        let package = packages
            .iter()
            .find(|p| p.name == name && p.version == version)
            .ok_or_else(|| format!("the built-in plugin lock file lacks {name} {version}"))?;
        for dependency in &package.dependencies {
            if !wanted.contains(dependency) {
                wanted.push(dependency.clone());
            }
        }
    }
    Ok(packages.into_iter().filter(|p| wanted.contains(&(p.name.clone(), p.version.clone()))).collect())
}

/// The new crate's `Cargo.lock`: the crate itself, the SDK and what the SDK
/// needs at the versions it was built with, as cargo writes it (so
/// `cargo build --locked` accepts it).
fn scaffold_lock(name: &str) -> Result<String, String> {
    let mut packages = sdk_packages()?;
    let sdk_version = packages.iter().find(|p| p.name == "code-intel-plugin-sdk").map(|p| p.version.clone()).unwrap_or_default();
    packages.push(LockedPackage {
        name: name.to_string(),
        version: "0.1.0".to_string(),
        source: None,
        checksum: None,
        dependencies: vec![("code-intel-plugin-sdk".to_string(), sdk_version)],
    });
    let version_key = |v: &str| -> Vec<u64> { v.split(['.', '-', '+']).map(|p| p.parse().unwrap_or(0)).collect() };
    packages.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| version_key(&a.version).cmp(&version_key(&b.version))));
    let mut text = String::from("# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 4\n");
    for package in &packages {
        text.push_str(&format!("\n[[package]]\nname = \"{}\"\nversion = \"{}\"\n", package.name, package.version));
        if let Some(source) = &package.source {
            text.push_str(&format!("source = \"{source}\"\n"));
        }
        if let Some(checksum) = &package.checksum {
            text.push_str(&format!("checksum = \"{checksum}\"\n"));
        }
        if !package.dependencies.is_empty() {
            text.push_str("dependencies = [\n");
            for (dep, version) in &package.dependencies {
                if packages.iter().filter(|p| &p.name == dep).count() > 1 {
                    text.push_str(&format!(" \"{dep} {version}\",\n"));
                } else {
                    text.push_str(&format!(" \"{dep}\",\n"));
                }
            }
            text.push_str("]\n");
        }
    }
    Ok(text)
}

/// The SDK's manifest standing on its own: every `x.workspace = true`
/// replaced by the plugin workspace's value.
fn vendored_manifest() -> Result<String, String> {
    let parse = |what: &str, text: &str| {
        text.parse::<toml_edit::DocumentMut>().map_err(|e| format!("the built-in {what} does not parse: {e}"))
    };
    let mut sdk = parse("SDK manifest", SDK_MANIFEST)?;
    let workspace = parse("plugin workspace manifest", PLUGINS_MANIFEST)?;
    let inherited = |section: &str, key: &str| -> Result<toml_edit::Item, String> {
        workspace["workspace"][section]
            .get(key)
            .cloned()
            .ok_or_else(|| format!("the plugin workspace has no {section}.{key} for the SDK to inherit"))
    };
    let inherits = |item: &toml_edit::Item| item.get("workspace").and_then(toml_edit::Item::as_bool) == Some(true);
    let keys: Vec<String> = sdk["package"].as_table_like().map(|t| t.iter().map(|(k, _)| k.to_string()).collect()).unwrap_or_default();
    for key in keys {
        if inherits(&sdk["package"][&key]) {
            let value = inherited("package", &key)?;
            sdk["package"][&key] = value;
        }
    }
    let deps: Vec<String> = sdk["dependencies"].as_table_like().map(|t| t.iter().map(|(k, _)| k.to_string()).collect()).unwrap_or_default();
    for dep in deps {
        if inherits(&sdk["dependencies"][&dep]) {
            let value = inherited("dependencies", &dep)?;
            sdk["dependencies"][&dep] = value;
        }
    }
    let text = sdk.to_string();
    if text.contains("workspace = true") || text.contains(".workspace") {
        return Err("the built-in SDK manifest still inherits from a workspace".into());
    }
    Ok(text)
}

/// `to` relative to `from` (both absolute, canonical); `to` itself when they
/// share nothing below the root (a relative path would climb to `/`).
fn relative(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<Component> = from.components().collect();
    let to: Vec<Component> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let only_root = from.iter().zip(&to).take(common).all(|(c, _)| matches!(c, Component::RootDir | Component::Prefix(_)));
    if common == 0 || only_root {
        return to.iter().collect();
    }
    let mut path = PathBuf::new();
    for _ in common..from.len() {
        path.push("..");
    }
    for part in &to[common..] {
        path.push(part);
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(valid_name("my-lang2"));
        assert!(!valid_name("My"));
        assert!(!valid_name("2go"));
        assert!(!valid_name("a_b"));
        assert!(!valid_name("trailing-"));
    }

    #[test]
    fn the_vendored_manifest_stands_alone() {
        let text = vendored_manifest().unwrap();
        let doc: toml_edit::DocumentMut = text.parse().unwrap();
        assert_eq!(doc["package"]["name"].as_str(), Some("code-intel-plugin-sdk"));
        assert_eq!(doc["package"]["version"].as_str(), Some(env!("CARGO_PKG_VERSION")), "{text}");
        assert!(doc["dependencies"]["wit-bindgen"].as_str().is_some(), "{text}");
        assert!(doc["dependencies"]["serde"]["features"].as_array().is_some(), "{text}");
    }

    /// Every file of the SDK and the WIT is built into the binary: a file
    /// added there without a line here fails.
    #[test]
    fn every_sdk_and_wit_file_is_built_in() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let listed = |dir: &Path| -> Vec<String> {
            let mut v: Vec<String> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
            v.sort();
            v
        };
        let mut sources: Vec<String> =
            SDK_SOURCES.iter().filter_map(|(p, _)| p.strip_prefix("src/")).map(str::to_string).collect();
        sources.sort();
        assert_eq!(listed(&root.join("plugins/sdk/src")), sources);
        let mut wit: Vec<String> = WIT_FILES.iter().map(|(n, _)| (*n).to_string()).collect();
        wit.sort();
        assert_eq!(listed(&root.join("wit")), wit);
        assert_eq!(listed(&root.join("plugins/sdk")), vec!["Cargo.toml", "README.md", "src"]);
    }

    /// The crates built in are exactly the third-party packages the SDK
    /// needs by the plugin workspace's lock file, at the same versions and
    /// checksums, each with its licence: a change of the SDK's dependencies
    /// or of `plugins/Cargo.lock` fails here until the archive is made again.
    #[test]
    fn the_vendored_crates_are_what_the_sdk_lock_needs() {
        let mut wanted: Vec<(String, String)> = sdk_packages()
            .unwrap()
            .into_iter()
            .filter(|p| p.source.is_some())
            .map(|p| (format!("{}-{}", p.name, p.version), p.checksum.expect("a registry package has a checksum")))
            .collect();
        wanted.sort();
        assert!(wanted.iter().any(|(dir, _)| dir.starts_with("wit-bindgen-0.")), "{wanted:?}");

        let mut archive = tar::Archive::new(vendored_crates().unwrap());
        let mut built_in: Vec<(String, String)> = Vec::new();
        let mut files: Vec<String> = Vec::new();
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            let path = entry.path().unwrap().components().filter(|c| matches!(c, Component::Normal(_))).map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/");
            if let Some(dir) = path.strip_suffix("/.cargo-checksum.json") {
                let mut json = String::new();
                std::io::Read::read_to_string(&mut entry, &mut json).unwrap();
                let checksums: serde_json::Value = serde_json::from_str(&json).unwrap();
                let package = checksums["package"].as_str().unwrap_or_else(|| panic!("{path} has no package checksum")).to_string();
                built_in.push((dir.to_string(), package));
            }
            files.push(path);
        }
        built_in.sort();
        assert_eq!(
            built_in, wanted,
            "the SDK's crates built into the binary differ from what plugins/Cargo.lock needs: run scripts/vendor-plugin-sdk and commit the archive"
        );
        for (dir, _) in &built_in {
            assert!(files.contains(&format!("{dir}/Cargo.toml")), "{dir} has no Cargo.toml");
            let licensed = files.iter().filter_map(|f| f.strip_prefix(&format!("{dir}/"))).any(|f| {
                let f = f.to_ascii_uppercase();
                !f.contains('/') && (f.starts_with("LICENSE") || f.starts_with("LICENCE") || f.starts_with("COPYING") || f.starts_with("UNLICENSE"))
            });
            assert!(licensed, "{dir} is built in without its licence file");
        }
    }

    /// The new crate's lock file holds the crate, the SDK and what the SDK
    /// needs, none of the plugin workspace's other members, and every
    /// dependency it names is in it.
    #[test]
    fn the_scaffold_lock_holds_the_sdk_and_what_it_needs() {
        let lock = scaffold_lock("demo-lang").unwrap();
        let packages = locked_packages(&lock).unwrap();
        let names: Vec<&str> = packages.iter().map(|p| p.name.as_str()).collect();
        for name in ["demo-lang", "code-intel-plugin-sdk", "wit-bindgen", "serde_json"] {
            assert!(names.contains(&name), "{name} missing:\n{lock}");
        }
        assert!(!names.iter().any(|n| n.starts_with("code-intel-plugin-") && *n != "code-intel-plugin-sdk" || n.starts_with("test-plugin-")), "{lock}");
        for package in &packages {
            for (dep, version) in &package.dependencies {
                assert!(packages.iter().any(|p| &p.name == dep && &p.version == version), "{dep} {version} missing:\n{lock}");
            }
        }
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted, "cargo writes packages sorted by name");
    }

    #[test]
    fn relative_paths() {
        assert_eq!(relative(Path::new("/a/b/c"), Path::new("/a/plugins/sdk")), PathBuf::from("../../plugins/sdk"));
        assert_eq!(relative(Path::new("/a"), Path::new("/a/sdk")), PathBuf::from("sdk"));
        assert_eq!(relative(Path::new("/tmp/x"), Path::new("/srv/sdk")), PathBuf::from("/srv/sdk"));
    }
}
