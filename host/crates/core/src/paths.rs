//! Repository-relative paths: normalisation and refusal of anything outside
//! the repository root.
//!
//! Every path that crosses the MCP boundary is repository-relative, written
//! with `/` separators, and never leaves the root: no `..` component, no
//! absolute path elsewhere, no symlink whose target lies outside.
//!
//! ```
//! use code_intel_core::paths::RepoRoot;
//!
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::create_dir(dir.path().join("src")).unwrap();
//! std::fs::write(dir.path().join("src/app.py"), "x = 1\n").unwrap();
//! let root = RepoRoot::new(dir.path()).unwrap();
//!
//! let path = root.resolve("./src//app.py").unwrap();
//! assert_eq!(path.relative(), "src/app.py");
//! assert!(root.resolve("../etc/passwd").is_err());
//! assert!(root.resolve("/etc/passwd").is_err());
//! ```

use std::fmt;
use std::path::{Component, Path, PathBuf};

/// Why a path was refused or could not be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PathError {
    /// The repository root itself is unusable.
    #[error("repository root {root:?} is not usable: {reason}")]
    BadRoot { root: PathBuf, reason: String },
    /// The path contains a `..` component.
    #[error(
        "path {path:?} contains '..'; give a path inside the repository, relative to its root (e.g. \"src/app.py\")"
    )]
    ParentComponent { path: String },
    /// An absolute path that is not inside the repository.
    #[error("path {path:?} is outside the repository root {root:?}; give a path relative to the root")]
    OutsideRoot { path: String, root: PathBuf },
    /// A symlink (the path itself or one of its parents) points outside.
    /// Where it points is not said: that is outside the repository too, and
    /// no tool tells what lies there.
    #[error(
        "path {path:?} goes through a symlink that points outside the repository root; give the path of a file inside the repository"
    )]
    SymlinkEscape { path: String },
    /// The path is not valid (NUL byte, a Windows drive prefix, ...).
    #[error("path {path:?} is not valid: {reason}")]
    Invalid { path: String, reason: &'static str },
    /// The path does not exist (only from [`RepoRoot::resolve_existing`]).
    #[error("path {path:?} does not exist in the repository")]
    NotFound { path: String },
}

/// A repository root, canonicalised once (symlinks in the root's own path are
/// resolved, so containment checks compare like with like).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepoRoot {
    root: PathBuf,
}

/// A path inside the repository: its normalised relative form (empty for the
/// root itself) and its absolute form under the canonical root.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RepoPath {
    relative: String,
    absolute: PathBuf,
}

impl RepoPath {
    /// Repository-relative, `/`-separated, no leading `./`; `""` for the root.
    #[must_use]
    pub fn relative(&self) -> &str {
        &self.relative
    }

    /// The same path, absolute under the canonical root.
    #[must_use]
    pub fn absolute(&self) -> &Path {
        &self.absolute
    }

    /// `true` for the repository root itself.
    #[must_use]
    pub fn is_root(&self) -> bool {
        self.relative.is_empty()
    }

    /// How to show this path to a user: `.` for the root.
    #[must_use]
    pub fn display(&self) -> &str {
        if self.relative.is_empty() { "." } else { &self.relative }
    }
}

impl fmt::Display for RepoPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.display())
    }
}

impl RepoRoot {
    /// Opens a repository root: it must exist and be a directory.
    ///
    /// # Errors
    /// [`PathError::BadRoot`] when the directory is missing or unreadable.
    pub fn new(root: impl AsRef<Path>) -> Result<Self, PathError> {
        let given = root.as_ref();
        let root = given.canonicalize().map_err(|e| PathError::BadRoot {
            root: given.to_path_buf(),
            reason: e.to_string(),
        })?;
        if !root.is_dir() {
            return Err(PathError::BadRoot { root, reason: "not a directory".to_string() });
        }
        Ok(Self { root })
    }

    /// The canonical absolute root.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// Resolves a user-given path (repository-relative, or absolute inside the
    /// root) to a [`RepoPath`]. `""` and `"."` are the root. The path need not
    /// exist; if it (or a parent) exists and is a symlink, its target must be
    /// inside the root.
    ///
    /// # Errors
    /// [`PathError::ParentComponent`], [`PathError::OutsideRoot`],
    /// [`PathError::SymlinkEscape`] or [`PathError::Invalid`].
    pub fn resolve(&self, input: &str) -> Result<RepoPath, PathError> {
        let relative = self.normalize(input)?;
        let absolute = if relative.is_empty() { self.root.clone() } else { self.root.join(&relative) };
        self.check_symlinks(input, &absolute)?;
        Ok(RepoPath { relative, absolute })
    }

    /// Like [`Self::resolve`], and the path must exist.
    ///
    /// # Errors
    /// As [`Self::resolve`], plus [`PathError::NotFound`].
    pub fn resolve_existing(&self, input: &str) -> Result<RepoPath, PathError> {
        let path = self.resolve(input)?;
        if std::fs::symlink_metadata(path.absolute()).is_err() {
            return Err(PathError::NotFound { path: input.to_string() });
        }
        Ok(path)
    }

    /// Lexical normalisation only: strips `.` components and repeated
    /// separators, refuses `..`, strips the root prefix from absolute paths
    /// inside the root. Returns the `/`-separated relative form.
    ///
    /// # Errors
    /// As [`Self::resolve`], except symlink checks.
    pub fn normalize(&self, input: &str) -> Result<String, PathError> {
        if input.contains('\0') {
            return Err(PathError::Invalid { path: input.to_string(), reason: "contains a NUL byte" });
        }
        let trimmed = input.trim();
        let path = Path::new(trimmed);
        let relative_part: PathBuf = if path.is_absolute() {
            // Accept an absolute path that names something under the root,
            // either literally or through the root's non-canonical spelling.
            let lexical = lexical_clean(path).ok_or_else(|| PathError::ParentComponent { path: input.to_string() })?;
            match lexical.strip_prefix(&self.root) {
                Ok(rest) => rest.to_path_buf(),
                Err(_) => {
                    return Err(PathError::OutsideRoot { path: input.to_string(), root: self.root.clone() });
                }
            }
        } else {
            path.to_path_buf()
        };
        let mut parts: Vec<String> = Vec::new();
        for component in relative_part.components() {
            match component {
                Component::CurDir => {}
                Component::ParentDir => return Err(PathError::ParentComponent { path: input.to_string() }),
                Component::Normal(part) => match part.to_str() {
                    Some(s) => parts.push(s.to_string()),
                    None => {
                        return Err(PathError::Invalid { path: input.to_string(), reason: "not valid UTF-8" });
                    }
                },
                Component::RootDir | Component::Prefix(_) => {
                    return Err(PathError::Invalid {
                        path: input.to_string(),
                        reason: "has a drive or root prefix in the middle",
                    });
                }
            }
        }
        Ok(parts.join("/"))
    }

    /// The repository-relative form of an absolute path found while walking
    /// the repository (e.g. by the `ignore` walker), or `None` when it is not
    /// under the root.
    #[must_use]
    pub fn relative_of(&self, absolute: &Path) -> Option<String> {
        let rest = absolute.strip_prefix(&self.root).ok()?;
        let parts: Option<Vec<&str>> = rest
            .components()
            .map(|c| match c {
                Component::Normal(p) => p.to_str(),
                _ => None,
            })
            .collect();
        Some(parts?.join("/"))
    }

    /// Refuses a path whose deepest existing ancestor (the path itself when
    /// it exists) resolves outside the root.
    fn check_symlinks(&self, input: &str, absolute: &Path) -> Result<(), PathError> {
        let mut probe = absolute;
        loop {
            if std::fs::symlink_metadata(probe).is_ok() {
                let target = probe.canonicalize().map_err(|e| PathError::Invalid {
                    path: input.to_string(),
                    reason: if e.kind() == std::io::ErrorKind::NotFound {
                        "is a dangling symlink"
                    } else {
                        "cannot be resolved"
                    },
                })?;
                if !target.starts_with(&self.root) {
                    return Err(PathError::SymlinkEscape { path: input.to_string() });
                }
                return Ok(());
            }
            match probe.parent() {
                Some(parent) if parent.starts_with(&self.root) => probe = parent,
                _ => return Ok(()),
            }
        }
    }
}

/// Removes `.` components of an absolute path; `None` if it has `..`.
fn lexical_clean(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => return None,
            other => out.push(other.as_os_str()),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> (tempfile::TempDir, RepoRoot) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/pkg")).unwrap();
        std::fs::write(dir.path().join("src/pkg/mod.py"), "x = 1\n").unwrap();
        let root = RepoRoot::new(dir.path()).unwrap();
        (dir, root)
    }

    #[test]
    fn normalises_relative_paths() {
        let (_dir, root) = repo();
        assert_eq!(root.resolve("src/pkg/mod.py").unwrap().relative(), "src/pkg/mod.py");
        assert_eq!(root.resolve("./src//pkg/./mod.py").unwrap().relative(), "src/pkg/mod.py");
        assert_eq!(root.resolve("src/pkg/").unwrap().relative(), "src/pkg");
        assert!(root.resolve("").unwrap().is_root());
        assert!(root.resolve(".").unwrap().is_root());
        assert_eq!(root.resolve(".").unwrap().display(), ".");
    }

    #[test]
    fn refuses_parent_components_even_when_they_stay_inside() {
        let (_dir, root) = repo();
        for bad in ["..", "../x", "src/../../etc", "src/../src/pkg"] {
            let err = root.resolve(bad).unwrap_err();
            assert!(matches!(err, PathError::ParentComponent { .. }), "{bad}: {err}");
            assert!(err.to_string().contains("'..'"));
        }
    }

    #[test]
    fn absolute_paths_inside_are_accepted_outside_refused() {
        let (_dir, root) = repo();
        let inside = root.path().join("src/pkg/mod.py");
        assert_eq!(root.resolve(inside.to_str().unwrap()).unwrap().relative(), "src/pkg/mod.py");
        let err = root.resolve("/etc/passwd").unwrap_err();
        assert!(matches!(err, PathError::OutsideRoot { .. }));
        assert!(err.to_string().contains("outside the repository root"));
        // A sibling directory sharing the root's name as a prefix is outside.
        let sibling = format!("{}-other/file", root.path().display());
        assert!(matches!(root.resolve(&sibling).unwrap_err(), PathError::OutsideRoot { .. }));
    }

    #[test]
    fn refuses_symlinks_that_escape() {
        let (dir, root) = repo();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "s").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("escape")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), dir.path().join("secret-link")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("src"), dir.path().join("inner")).unwrap();

        for bad in ["escape", "escape/secret.txt", "escape/missing.txt", "secret-link"] {
            let err = root.resolve(bad).unwrap_err();
            assert!(matches!(err, PathError::SymlinkEscape { .. }), "{bad}: {err}");
            // The refusal names the path asked for, never where the link points.
            let outside_dir = outside.path().canonicalize().unwrap();
            let message = err.to_string();
            assert!(message.contains(bad) && message.contains("outside the repository"), "{message}");
            for outside in [outside_dir.as_path(), outside.path()] {
                assert!(!message.contains(&*outside.to_string_lossy()), "{message}");
            }
        }
        assert_eq!(root.resolve("inner/pkg/mod.py").unwrap().relative(), "inner/pkg/mod.py");
    }

    #[test]
    fn missing_paths_resolve_but_are_not_existing() {
        let (_dir, root) = repo();
        assert_eq!(root.resolve("src/new_file.py").unwrap().relative(), "src/new_file.py");
        assert!(matches!(root.resolve_existing("src/new_file.py").unwrap_err(), PathError::NotFound { .. }));
    }

    #[test]
    fn rejects_nul_bytes_and_bad_roots() {
        let (_dir, root) = repo();
        assert!(matches!(root.resolve("a\0b").unwrap_err(), PathError::Invalid { .. }));
        assert!(matches!(RepoRoot::new("/definitely/not/here").unwrap_err(), PathError::BadRoot { .. }));
    }

    #[test]
    fn relative_of_walked_paths() {
        let (_dir, root) = repo();
        let abs = root.path().join("src/pkg/mod.py");
        assert_eq!(root.relative_of(&abs).as_deref(), Some("src/pkg/mod.py"));
        assert_eq!(root.relative_of(Path::new("/etc/passwd")), None);
    }
}
