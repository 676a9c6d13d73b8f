//! Thin wrappers over the host's `syntax` import: parse once, query many times.

use crate::bindings::code_intel::plugin::syntax as host;
use crate::{Capture, PluginError, QueryMatch};

/// A source file parsed by the host. Dropping it frees the tree in the host.
pub struct Tree {
    inner: host::Tree,
}

/// Parses `source` with the host grammar named `language` (`python`, `php`, ...).
///
/// # Errors
/// When the host has no such grammar or gives up on the file; the error says
/// which, and converts into the [`PluginError`] the plugin returns.
///
/// ```no_run
/// # fn demo() -> Result<(), code_intel_plugin_sdk::PluginError> {
/// let tree = code_intel_plugin_sdk::parse("python", "def f():\n    pass\n")?;
/// assert_eq!(tree.root_kind(), "module");
/// # Ok(()) }
/// ```
pub fn parse(language: &str, source: &str) -> Result<Tree, PluginError> {
    Ok(Tree { inner: host::parse(language, source)? })
}

/// The grammar names the host can parse.
#[must_use]
pub fn languages() -> Vec<String> {
    host::languages()
}

impl Tree {
    /// Runs a tree-sitter query over the whole tree and returns every match in
    /// document order. Predicates (`#eq?`, `#match?`, `#any-of?`) are applied
    /// by the host.
    ///
    /// Each call walks the whole tree: put all the patterns a plugin needs in
    /// one query and tell the matches apart by capture name (or
    /// [`QueryMatch::pattern`]) rather than calling this once per pattern.
    ///
    /// # Errors
    /// When the query does not compile for the grammar (a plugin bug: the
    /// message carries tree-sitter's row and column).
    ///
    /// ```no_run
    /// # fn demo(tree: &code_intel_plugin_sdk::Tree) -> Result<(), code_intel_plugin_sdk::PluginError> {
    /// use code_intel_plugin_sdk::Matches;
    /// for m in tree.query("(class_definition name: (identifier) @name) @class")? {
    ///     let name = m.text("name").unwrap_or_default();
    ///     let class = m.get("class").expect("every match has @class");
    ///     let _ = (name, class.start_line);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn query(&self, query: &str) -> Result<Vec<QueryMatch>, PluginError> {
        Ok(self.inner.query(query)?)
    }

    /// All captures named `name` across every match of `query`, in document
    /// order: the common case of a one-capture query.
    ///
    /// # Errors
    /// As [`Tree::query`].
    pub fn captures(&self, query: &str, name: &str) -> Result<Vec<Capture>, PluginError> {
        Ok(self
            .query(query)?
            .into_iter()
            .flat_map(|m| m.captures.into_iter().filter(|c| c.name == name))
            .collect())
    }

    /// True when the file has syntax errors (the tree is still usable).
    #[must_use]
    pub fn has_errors(&self) -> bool {
        self.inner.has_errors()
    }

    /// Kind of the root node, e.g. `module` or `program`.
    #[must_use]
    pub fn root_kind(&self) -> String {
        self.inner.root_kind()
    }
}

/// Looking up captures of a match by name.
pub trait Matches {
    /// The first capture named `name`.
    fn get(&self, name: &str) -> Option<&Capture>;
    /// Every capture named `name` (quantified captures like `(decorator)* @d`).
    fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Capture> + 'a;
    /// The text of the first capture named `name`.
    fn text(&self, name: &str) -> Option<&str> {
        self.get(name).map(|c| c.text.as_str())
    }
}

impl Matches for QueryMatch {
    fn get(&self, name: &str) -> Option<&Capture> {
        self.captures.iter().find(|c| c.name == name)
    }

    fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Capture> + 'a {
        self.captures.iter().filter(move |c| c.name == name)
    }
}
