//! Definitions from the chunk index: symbol -> where it is defined, with
//! kind, lines, signature and scope.
//!
//! ```
//! use code_intel_core::{ChunkedFile, Chunk};
//! use code_intel_search::definitions::{find_definitions, DefinitionQuery};
//! use code_intel_store::{FileRecord, NameMatch, Store};
//!
//! let mut store = Store::open_in_memory().unwrap();
//! # let chunk = Chunk { id: "f".into(), kind: "function".into(), name: "load_user".into(),
//! #   qualified_name: Some("app.users.load_user".into()), parent: None, start_line: 3, end_line: 5,
//! #   start_byte: 0, end_byte: 1, content: "def load_user(id): ...".into(),
//! #   signature: Some("def load_user(id)".into()), docstring: None, related_symbols: vec![],
//! #   references: vec![], metadata: code_intel_core::Metadata::empty() };
//! # let chunked = ChunkedFile { chunks: vec![chunk], chunker: "python".into(), ..Default::default() };
//! # let file = FileRecord { path: "app/users.py".into(), sha256: "00".into(), size: 1, mtime_ns: 0 };
//! # store.write(|w| w.replace_file(&file, &chunked, 0).map(drop)).unwrap();
//! let found = find_definitions(&store, &DefinitionQuery::new("load_user")).unwrap();
//! assert_eq!(found.definitions[0].path, "app/users.py");
//! assert_eq!(found.definitions[0].scope.as_deref(), Some("app.users"));
//! ```

use code_intel_store::{ChunkSummary, NameMatch, Store, StoreError};

use crate::links::{LinkedFile, MAX_LINKED_FILES, linked_files};
use schemars::JsonSchema;
use serde::Serialize;

/// How many definitions are fetched per requested result when a path filter
/// is applied after the query: the store cannot filter by path prefix, and
/// most symbols have few definitions, so 20x rarely under-fetches.
const PATH_FILTER_OVERFETCH: usize = 20;

/// Longest docstring (characters) returned with a definition: its summary
/// line is what tells definitions apart; the code tools return the rest.
pub const DOCSTRING_CHARS: usize = 200;

/// A definition request.
#[derive(Clone, Debug)]
pub struct DefinitionQuery {
    /// A name (`save`), or a qualified name (`User.save`, `App\Models\User`).
    pub symbol: String,
    pub how: NameMatch,
    /// Only these chunk kinds (empty = any).
    pub kinds: Vec<String>,
    /// Only files under this repository-relative directory or equal to this file (`""` = all).
    pub path_prefix: String,
    pub limit: usize,
    /// Linked files attached to each definition at most (0: none).
    pub links: usize,
}

impl DefinitionQuery {
    #[must_use]
    pub fn new(symbol: &str) -> Self {
        Self { symbol: symbol.to_string(), how: NameMatch::Exact, kinds: Vec::new(), path_prefix: String::new(), limit: 50, links: MAX_LINKED_FILES }
    }
}

/// One definition site.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Definition {
    pub name: String,
    pub kind: String,
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qualified_name: Option<String>,
    /// The enclosing scope: qualified name without its last segment
    /// (`App\Models` for `App\Models\User`, `User` for `User.save`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub docstring: Option<String>,
    /// Plugin that produced the chunk.
    pub chunker: String,
    /// Files tied to this definition by cross-file links (its model, the
    /// migrations of its table, the form class it delegates to, ...),
    /// strongest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub linked_files: Vec<LinkedFile>,
}

/// What [`find_definitions`] found.
#[derive(Clone, Debug, Serialize)]
pub struct DefinitionsFound {
    pub definitions: Vec<Definition>,
    /// The match mode that produced the results (`exact` falls back to
    /// `fuzzy` when nothing matched exactly).
    pub match_used: NameMatch,
    /// More definitions exist than `limit`.
    pub truncated: bool,
}

/// Looks a symbol up in the chunk index. An exact query that finds nothing
/// retries fuzzily (typos, case and `_` differences) and says so.
///
/// # Errors
/// Store errors.
pub fn find_definitions(store: &Store, query: &DefinitionQuery) -> Result<DefinitionsFound, StoreError> {
    let mut found = lookup(store, query, query.how)?;
    if found.0.is_empty() && query.how == NameMatch::Exact {
        // `Invoice.total` should find PHP's `App\Billing\Invoice::total`
        // and `User::save` Python's `app.models.User.save`: retry with the
        // other languages' scope separators before going fuzzy.
        for variant in separator_variants(&query.symbol) {
            found = lookup(store, &DefinitionQuery { symbol: variant, ..query.clone() }, NameMatch::Exact)?;
            if !found.0.is_empty() {
                break;
            }
        }
    }
    let mut match_used = query.how;
    if found.0.is_empty() && query.how == NameMatch::Exact {
        found = lookup(store, query, NameMatch::Fuzzy)?;
        match_used = NameMatch::Fuzzy;
    }
    let (definitions, truncated) = found;
    Ok(DefinitionsFound { definitions, match_used, truncated })
}

fn lookup(store: &Store, query: &DefinitionQuery, how: NameMatch) -> Result<(Vec<Definition>, bool), StoreError> {
    let prefix = query.path_prefix.trim_end_matches('/');
    let fetch = if prefix.is_empty() {
        query.limit.saturating_add(1)
    } else {
        query.limit.saturating_add(1).saturating_mul(PATH_FILTER_OVERFETCH)
    };
    let mut rows = store.definitions(&query.symbol, how, &query.kinds, fetch)?;
    rows.retain(|row| under(&row.path, prefix));
    let truncated = rows.len() > query.limit;
    rows.truncate(query.limit);
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let linked = linked_files(store, &row.path, row.rowid, query.links)?;
        let mut definition = Definition::from_summary(row);
        definition.linked_files = linked;
        out.push(definition);
    }
    Ok((out, truncated))
}

/// The symbol written with each other scope separator (`.`, `::`, `\\`).
fn separator_variants(symbol: &str) -> Vec<String> {
    let parts: Vec<&str> = symbol.split(|c| c == '.' || c == '\\').flat_map(|p| p.split("::")).filter(|p| !p.is_empty()).collect();
    if parts.len() < 2 {
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    for sep in [".", "::", "\\"] {
        let variant = parts.join(sep);
        if variant != symbol && !out.contains(&variant) {
            out.push(variant);
        }
    }
    // `Class::method` where the index qualifies the class with its namespace.
    let last_two = format!("{}::{}", parts[parts.len() - 2], parts[parts.len() - 1]);
    if !out.contains(&last_two) && last_two != symbol {
        out.push(last_two);
    }
    out
}

/// Whether `path` is `prefix` itself or inside it (`""` = everything).
#[must_use]
pub fn under(path: &str, prefix: &str) -> bool {
    prefix.is_empty() || path == prefix || (path.starts_with(prefix) && path.as_bytes().get(prefix.len()) == Some(&b'/'))
}

impl Definition {
    /// Builds a definition from a chunk summary (without linked files).
    #[must_use]
    pub fn from_summary(row: ChunkSummary) -> Self {
        let scope = row.qualified_name.as_deref().and_then(scope_of);
        let docstring = row.docstring.as_deref().map(|d| {
            let first = d.trim().lines().next().unwrap_or("").trim();
            if first.chars().count() > DOCSTRING_CHARS {
                let mut cut: String = first.chars().take(DOCSTRING_CHARS).collect();
                cut.push('…');
                cut
            } else {
                first.to_string()
            }
        });
        Self {
            name: row.name,
            kind: row.kind,
            path: row.path,
            start_line: row.start_line,
            end_line: row.end_line,
            qualified_name: row.qualified_name,
            scope,
            signature: row.signature,
            docstring: docstring.filter(|d| !d.is_empty()),
            chunker: row.chunker,
            linked_files: Vec::new(),
        }
    }
}

/// The scope part of a qualified name: everything before the last `.`,
/// `\`, `::` or `/` separator.
#[must_use]
pub fn scope_of(qualified: &str) -> Option<String> {
    let cut = ["::", "\\", ".", "/"]
        .iter()
        .filter_map(|sep| qualified.rfind(sep).map(|i| (i, sep.len())))
        .max_by_key(|(i, _)| *i)?;
    let scope = qualified[..cut.0].trim_end_matches(['\\', '.', ':', '/']);
    (!scope.is_empty()).then(|| scope.to_string())
}

/// The last segment of a possibly qualified symbol (`save` for `User.save`,
/// `User` for `App\Models\User`, `create` for `Foo::create`).
#[must_use]
pub fn leaf_name(symbol: &str) -> &str {
    let symbol = symbol.trim().trim_end_matches("()");
    let start = ["::", "\\", ".", "/", "->", "#"]
        .iter()
        .filter_map(|sep| symbol.rfind(sep).map(|i| i + sep.len()))
        .max()
        .unwrap_or(0);
    &symbol[start..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::chunk;
    use code_intel_core::{Chunk, ChunkedFile};
    use code_intel_store::FileRecord;

    fn store_with(files: &[(&str, Vec<Chunk>)]) -> Store {
        let mut store = Store::open_in_memory().unwrap();
        for (path, chunks) in files {
            let chunked = ChunkedFile { chunks: chunks.clone(), chunker: "test".into(), ..Default::default() };
            let file = FileRecord { path: (*path).into(), sha256: "00".into(), size: 1, mtime_ns: 0 };
            store.write(|w| w.replace_file(&file, &chunked, 0).map(drop)).unwrap();
        }
        store
    }

    #[test]
    fn exact_then_fuzzy_fallback_with_scope_and_path_filter() {
        let store = store_with(&[
            ("app/models/user.py", vec![chunk("c", "class", "User", Some("app.models.User"), (1, 20)),
                                        chunk("m", "method", "save", Some("app.models.User.save"), (5, 9))]),
            ("lib/user.py", vec![chunk("c", "class", "User", Some("lib.User"), (1, 3))]),
        ]);
        let all = find_definitions(&store, &DefinitionQuery::new("User")).unwrap();
        assert_eq!(all.definitions.len(), 2);
        assert_eq!(all.match_used, NameMatch::Exact);
        assert_eq!(all.definitions[0].docstring.as_deref(), Some("Loads things."));

        let scoped = find_definitions(&store, &DefinitionQuery { path_prefix: "lib".into(), ..DefinitionQuery::new("User") }).unwrap();
        assert_eq!(scoped.definitions.iter().map(|d| d.path.as_str()).collect::<Vec<_>>(), vec!["lib/user.py"]);

        let method = find_definitions(&store, &DefinitionQuery::new("User.save")).unwrap();
        assert_eq!(method.definitions[0].scope.as_deref(), Some("app.models.User"));

        let other_separator = find_definitions(&store, &DefinitionQuery::new("User::save")).unwrap();
        assert_eq!(other_separator.match_used, NameMatch::Exact);
        assert_eq!(other_separator.definitions.len(), 1);
        assert_eq!(other_separator.definitions[0].name, "save");

        let typo = find_definitions(&store, &DefinitionQuery::new("Usre")).unwrap();
        assert_eq!(typo.match_used, NameMatch::Fuzzy);

        let limited = find_definitions(&store, &DefinitionQuery { limit: 1, ..DefinitionQuery::new("User") }).unwrap();
        assert!(limited.truncated);
    }

    #[test]
    fn names_and_scopes() {
        assert_eq!(leaf_name("App\\Models\\User"), "User");
        assert_eq!(leaf_name("User.save"), "save");
        assert_eq!(leaf_name("Foo::create()"), "create");
        assert_eq!(leaf_name("$this->render"), "render");
        assert_eq!(scope_of("App\\Models\\User").as_deref(), Some("App\\Models"));
        assert_eq!(scope_of("Foo::bar").as_deref(), Some("Foo"));
        assert_eq!(scope_of("plain"), None);
        assert!(under("src/a.py", "src"));
        assert!(!under("srcx/a.py", "src"));
        assert!(under("src/a.py", "src/a.py"));
    }
}
