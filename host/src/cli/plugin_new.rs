//! `code-intel plugin new NAME`: scaffolds a plugin crate that builds for
//! `wasm32-wasip2` and passes `code-intel plugin test` out of the box.
//!
//! The crate depends on the guest SDK (`code-intel-plugin-sdk`):
//! - by path, when created inside a code-intel checkout (found by walking up
//!   from the new crate's directory) or when `--sdk PATH` names one;
//! - otherwise by git, from the project repository at this version's tag.

use std::fs;
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

/// Where the SDK is fetched from when no local checkout is known (the
/// workspace's `repository`).
const SDK_GIT: &str = "https://github.com/code-intel/code-intel";

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
    /// depend on, instead of the one found around DIR or the git repository.
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

    let (dependency, how) = sdk_dependency(args.sdk.as_deref(), &dir)?;
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

/// The `code-intel-plugin-sdk = ...` line, and how it was chosen.
fn sdk_dependency(explicit: Option<&Path>, dir: &Path) -> Result<(String, String), String> {
    let local = match explicit {
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
    };
    Ok(match local {
        Some(sdk) => {
            let path = relative(dir, &sdk);
            let path = path.to_string_lossy().replace('\\', "/");
            (format!("code-intel-plugin-sdk = {{ path = \"{path}\" }}"), format!("by path: {path}"))
        }
        None => {
            let tag = format!("v{}", env!("CARGO_PKG_VERSION"));
            (
                format!("code-intel-plugin-sdk = {{ git = \"{SDK_GIT}\", tag = \"{tag}\" }}"),
                format!("from {SDK_GIT} at {tag}; pass --sdk PATH to use a local checkout instead"),
            )
        }
    })
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
    fn relative_paths() {
        assert_eq!(relative(Path::new("/a/b/c"), Path::new("/a/plugins/sdk")), PathBuf::from("../../plugins/sdk"));
        assert_eq!(relative(Path::new("/a"), Path::new("/a/sdk")), PathBuf::from("sdk"));
        assert_eq!(relative(Path::new("/tmp/x"), Path::new("/srv/sdk")), PathBuf::from("/srv/sdk"));
    }
}
