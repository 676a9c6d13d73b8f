//! `code-intel plugin new NAME`: scaffolds a plugin crate that builds for
//! `wasm32-wasip2` and passes `code-intel plugin test` out of the box.
//!
//! The crate depends on the guest SDK (`code-intel-plugin-sdk`):
//! - by path, when created inside a code-intel checkout (found by walking up
//!   from the new crate's directory) or when `--sdk PATH` names one;
//! - otherwise on a copy of the SDK and the WIT this binary was built with,
//!   written into the crate (`vendor/code-intel-plugin-sdk/`, `wit/`), with
//!   the lock file the SDK was built with: nothing to fetch but the SDK's own
//!   dependencies (wit-bindgen, serde), which `cargo build --offline` takes
//!   from the local cargo cache.

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
            write_vendored_sdk(&dir)?;
            (
                format!("code-intel-plugin-sdk = {{ path = \"{VENDORED_SDK}\" }}"),
                format!("{} copied into {VENDORED_SDK}, WIT into wit/", env!("CARGO_PKG_VERSION")),
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
/// crate, and the lock file they were built with.
fn write_vendored_sdk(dir: &Path) -> Result<(), String> {
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    let sdk = dir.join(VENDORED_SDK);
    files.push((sdk.join("Cargo.toml"), vendored_manifest()?));
    for (path, text) in SDK_SOURCES {
        files.push((sdk.join(path), (*text).to_string()));
    }
    for (name, text) in WIT_FILES {
        files.push((dir.join("wit").join(name), (*text).to_string()));
    }
    files.push((dir.join("Cargo.lock"), PLUGINS_LOCK.to_string()));
    for (path, text) in files {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
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

    #[test]
    fn relative_paths() {
        assert_eq!(relative(Path::new("/a/b/c"), Path::new("/a/plugins/sdk")), PathBuf::from("../../plugins/sdk"));
        assert_eq!(relative(Path::new("/a"), Path::new("/a/sdk")), PathBuf::from("sdk"));
        assert_eq!(relative(Path::new("/tmp/x"), Path::new("/srv/sdk")), PathBuf::from("/srv/sdk"));
    }
}
