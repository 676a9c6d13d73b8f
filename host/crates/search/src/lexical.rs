//! Lexical search over the chunk index: SQLite FTS5 BM25 with code-aware
//! tokens (see `code_intel_store::tokenize`) and a boost for chunks whose
//! name is exactly the identifier searched for.
//!
//! ```
//! use code_intel_core::{ChunkedFile, line_chunks};
//! use code_intel_search::lexical::{LexicalQuery, search};
//! use code_intel_store::{FileRecord, Store};
//!
//! let mut store = Store::open_in_memory().unwrap();
//! let text = "def get_user_name(user):\n    return user.name\n";
//! let chunked = ChunkedFile { chunks: line_chunks("app/users.py", text), chunker: "fallback".into(), ..Default::default() };
//! let file = FileRecord { path: "app/users.py".into(), sha256: "0".into(), size: 1, mtime_ns: 0 };
//! store.write(|w| w.replace_file(&file, &chunked, 0).map(drop)).unwrap();
//! for query in ["getUserName", "user name", "get_user_name"] {
//!     let hits = search(&store, &LexicalQuery::new(query)).unwrap();
//!     assert_eq!(hits[0].path, "app/users.py", "{query}");
//! }
//! ```
//!
//! Words are ANDed; when that finds fewer than the requested number of hits,
//! chunks matching any of the words follow. Kind and path filters are applied
//! before the top-k cut, so `-n 5 --path 'tests/**'` gives five hits in tests.
//! Words found in most chunks are ranked on a bounded candidate set (see
//! [`code_intel_store::queries::MAX_SCORED`]); words found in at least half
//! of them are required but not ranked, and left out of the any-word
//! fallback ([`code_intel_store::text_query`]).

use std::collections::HashSet;

use code_intel_store::{FtsHit, Store, StoreError};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Serialize;

/// Hits returned when the caller does not say (`-n`).
pub const DEFAULT_LIMIT: usize = 10;

/// A lexical query.
#[derive(Clone, Debug)]
pub struct LexicalQuery<'a> {
    pub text: &'a str,
    /// Glob over repo-relative paths (`*` also crosses `/`; a trailing `/`
    /// means everything under that directory).
    pub path_glob: Option<&'a str>,
    /// Chunk kinds to keep; empty = all.
    pub kinds: Vec<String>,
    pub limit: usize,
}

impl<'a> LexicalQuery<'a> {
    /// A query with no filters and [`DEFAULT_LIMIT`] hits.
    #[must_use]
    pub fn new(text: &'a str) -> Self {
        Self { text, path_glob: None, kinds: Vec::new(), limit: DEFAULT_LIMIT }
    }
}

/// One lexical hit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LexicalHit {
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub kind: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qualified_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// BM25 relevance plus the exact-identifier bonus; higher is better.
    pub score: f64,
    /// The chunk's name (or qualified name) is the identifier searched for.
    pub exact: bool,
    /// All query words matched (false for the any-word tail).
    pub all_words: bool,
    /// Row id of the chunk in the store.
    pub chunk_rowid: i64,
    /// SHA-256 of the chunk content (the embedding key).
    pub content_hash: String,
}

/// Why a lexical search failed.
#[derive(Debug, thiserror::Error)]
pub enum LexicalError {
    #[error("invalid path glob {glob:?}: {message}")]
    InvalidGlob { glob: String, message: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Longest path filter glob, in characters. A glob names directories and
/// file patterns: a few hundred characters at most. Longer ones only cost
/// matcher memory, and past the matcher's size limit (10 MB of compiled
/// automaton, reached by a few thousand characters of alternations and
/// classes) they cannot be compiled at all.
pub const MAX_GLOB_CHARS: usize = 1_000;

/// Compiles a path filter glob (see [`LexicalQuery::path_glob`]).
///
/// # Errors
/// [`LexicalError::InvalidGlob`]: bad syntax, longer than
/// [`MAX_GLOB_CHARS`], or too large to compile.
pub fn path_matcher(glob: &str) -> Result<GlobSet, LexicalError> {
    let invalid = |message: String| LexicalError::InvalidGlob { glob: truncated(glob), message };
    let chars = glob.chars().count();
    if chars > MAX_GLOB_CHARS {
        return Err(invalid(format!(
            "it is {chars} characters long; the limit is {MAX_GLOB_CHARS}: name a directory (`src/`) or a file pattern (`**/*.py`)"
        )));
    }
    let pattern = glob.trim_start_matches("./");
    let pattern = if pattern.ends_with('/') { format!("{pattern}**") } else { pattern.to_string() };
    let glob = GlobBuilder::new(&pattern).literal_separator(false).build().map_err(|e| invalid(e.to_string()))?;
    // A set reports a matcher too large to compile as an error, where a
    // single glob's matcher panics.
    GlobSetBuilder::new().add(glob).build().map_err(|e| invalid(e.to_string()))
}

/// `glob` as an error message shows it: at most 200 characters.
fn truncated(glob: &str) -> String {
    if glob.chars().count() <= 200 { glob.to_string() } else { format!("{}…", glob.chars().take(200).collect::<String>()) }
}

/// Runs a lexical search; an empty result for a query without words.
///
/// # Errors
/// An invalid glob or a store error.
pub fn search(store: &Store, query: &LexicalQuery<'_>) -> Result<Vec<LexicalHit>, LexicalError> {
    if query.limit == 0 {
        return Ok(Vec::new());
    }
    let matcher = query.path_glob.map(path_matcher).transpose()?;
    let Some(all) = store.text_query(query.text, false)? else { return Ok(Vec::new()) };
    let accept = |path: &str| matcher.as_ref().is_none_or(|m| m.is_match(path));
    let trimmed = query.text.trim();
    let exact = (!trimmed.is_empty() && !trimmed.contains(char::is_whitespace)).then_some(trimmed);
    let mut hits: Vec<LexicalHit> = store
        .fts_search(&all, exact, &query.kinds, &accept, query.limit)?
        .into_iter()
        .map(|h| hit(h, true))
        .collect();
    if hits.len() < query.limit
        && let Some(any) = store.text_query(query.text, true)?
        && any != all
    {
        let seen: HashSet<i64> = hits.iter().map(|h| h.chunk_rowid).collect();
        let more = store.fts_search(&any, exact, &query.kinds, &|p| accept(p), query.limit + seen.len())?;
        hits.extend(more.into_iter().filter(|h| !seen.contains(&h.rowid)).map(|h| hit(h, false)).take(query.limit - hits.len()));
    }
    Ok(hits)
}

/// Chunks matching a full-text `expression` (a quoted phrase, see
/// [`crate::quoted`]), best BM25 first, filters applied before the cut.
///
/// # Errors
/// An invalid glob or a store error.
pub fn expression_hits(store: &Store, expression: &str, query: &LexicalQuery<'_>) -> Result<Vec<LexicalHit>, LexicalError> {
    if query.limit == 0 {
        return Ok(Vec::new());
    }
    let matcher = query.path_glob.map(path_matcher).transpose()?;
    let accept = |path: &str| matcher.as_ref().is_none_or(|m| m.is_match(path));
    let text = code_intel_store::TextQuery::plain(expression);
    Ok(store.fts_search(&text, None, &query.kinds, &accept, query.limit)?.into_iter().map(|h| hit(h, false)).collect())
}

fn hit(h: FtsHit, all_words: bool) -> LexicalHit {
    LexicalHit {
        path: h.path,
        start_line: h.start_line,
        end_line: h.end_line,
        kind: h.kind,
        name: h.name,
        qualified_name: h.qualified_name,
        signature: h.signature,
        score: h.score,
        exact: h.exact_tier > 0,
        all_words,
        chunk_rowid: h.rowid,
        content_hash: h.content_hash,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use code_intel_core::{Chunk, ChunkedFile};
    use code_intel_store::FileRecord;

    fn chunk(id: &str, kind: &str, name: &str, content: &str, line: u32) -> Chunk {
        Chunk {
            id: id.into(),
            kind: kind.into(),
            name: name.into(),
            qualified_name: None,
            parent: None,
            start_line: line,
            end_line: line + 2,
            start_byte: 0,
            end_byte: 1,
            content: content.into(),
            signature: None,
            docstring: None,
            related_symbols: vec![],
            references: vec![],
            metadata: code_intel_core::Metadata::empty(),
        }
    }

    fn store(files: &[(&str, Vec<Chunk>)]) -> Store {
        let mut store = Store::open_in_memory().unwrap();
        for (path, chunks) in files {
            let chunked = ChunkedFile { chunks: chunks.clone(), chunker: "test".into(), ..Default::default() };
            let file = FileRecord { path: (*path).into(), sha256: "0".into(), size: 1, mtime_ns: 0 };
            store.write(|w| w.replace_file(&file, &chunked, 0).map(drop)).unwrap();
        }
        store
    }

    fn fixture() -> Store {
        store(&[
            (
                "app/Services/UserService.php",
                vec![
                    chunk("m1", "method", "getUserName", "public function getUserName(): string { return $this->name; }", 10),
                    chunk("m2", "method", "save", "public function save() { $this->repo->persist($this->getUserName()); }", 20),
                ],
            ),
            ("app/users.py", vec![chunk("f1", "function", "get_user_name", "def get_user_name(user):\n    return user.name", 1)]),
            ("tests/test_users.py", vec![chunk("t1", "function", "test_name", "def test_name():\n    assert get_user_name(u) == 'x'", 1)]),
            ("docs/notes.md", vec![chunk("lines:1-3", "lines", "notes.md:1-3", "The user name is shown in the header.", 1)]),
        ])
    }

    fn names(hits: &[LexicalHit]) -> Vec<&str> {
        hits.iter().map(|h| h.name.as_str()).collect()
    }

    #[test]
    fn identifier_spellings_all_find_both_definitions_first() {
        let store = fixture();
        for query in ["getUserName", "get_user_name", "GetUserName"] {
            let hits = search(&store, &LexicalQuery::new(query)).unwrap();
            let top: HashSet<&str> = names(&hits[..2]).into_iter().collect();
            assert_eq!(top, HashSet::from(["getUserName", "get_user_name"]), "{query}: {:?}", names(&hits));
            assert!(hits[0].exact && hits[1].exact, "{query}");
            assert!(hits.len() >= 4, "callers follow: {query}: {:?}", names(&hits));
        }
        let hits = search(&store, &LexicalQuery::new("getUserName")).unwrap();
        assert_eq!(hits[0].name, "getUserName", "the exact-case spelling wins");
    }

    #[test]
    fn words_match_split_identifiers_and_prose() {
        let store = fixture();
        let hits = search(&store, &LexicalQuery::new("user name")).unwrap();
        let found: HashSet<&str> = names(&hits).into_iter().collect();
        assert!(found.is_superset(&HashSet::from(["getUserName", "get_user_name", "notes.md:1-3"])), "{found:?}");
        assert!(hits.iter().all(|h| h.all_words));
    }

    #[test]
    fn filters_apply_before_the_limit() {
        let store = fixture();
        let q = LexicalQuery { path_glob: Some("tests/"), limit: 1, ..LexicalQuery::new("get_user_name") };
        assert_eq!(names(&search(&store, &q).unwrap()), ["test_name"]);
        let q = LexicalQuery { path_glob: Some("*.php"), ..LexicalQuery::new("user") };
        assert!(search(&store, &q).unwrap().iter().all(|h| h.path.ends_with(".php")));
        let q = LexicalQuery { kinds: vec!["function".into()], limit: 1, ..LexicalQuery::new("user name") };
        assert_eq!(search(&store, &q).unwrap()[0].kind, "function");
        let q = LexicalQuery { path_glob: Some("a[b"), ..LexicalQuery::new("user") };
        assert!(matches!(search(&store, &q), Err(LexicalError::InvalidGlob { .. })));
    }

    #[test]
    fn any_word_tail_fills_up_to_the_limit() {
        let store = fixture();
        let hits = search(&store, &LexicalQuery::new("persist header")).unwrap();
        assert_eq!(hits.len(), 2);
        assert!(hits.iter().all(|h| !h.all_words));
        assert!(search(&store, &LexicalQuery::new("(*)")).unwrap().is_empty());
        assert!(search(&store, &LexicalQuery::new("zzzunknownzzz")).unwrap().is_empty());
    }

    #[test]
    fn japanese_words_find_japanese_comments_and_templates() {
        let store = store(&[
            (
                "app/Http/Controllers/UserController.php",
                vec![chunk("m1", "method", "destroy", "// ユーザーを削除する（論理削除）\npublic function destroy(User $user) { $user->delete(); }", 30)],
            ),
            ("resources/views/login.blade.php", vec![chunk("lines:1-3", "lines", "login.blade.php:1-3", "<h1>ログイン画面</h1>\n<p>パスワードを入力してください</p>", 1)]),
            ("app/Models/Team.php", vec![chunk("c1", "class", "Team", "class Team extends Model {} // チーム", 1)]),
        ]);
        for (query, expected) in [
            ("ユーザーの削除処理はどこ？", "destroy"),
            ("ログイン画面のパスワード欄", "login.blade.php:1-3"),
            ("削除", "destroy"),
        ] {
            let hits = search(&store, &LexicalQuery::new(query)).unwrap();
            assert_eq!(names(&hits).first(), Some(&expected), "{query}: {:?}", names(&hits));
        }
        // A word is the phrase of its pairs: 論理 alone is not 論理和.
        assert!(search(&store, &LexicalQuery::new("論理和")).unwrap().is_empty());
    }

    #[test]
    fn path_globs_are_bounded_and_never_panic() {
        let m = path_matcher("app/").unwrap();
        assert!(m.is_match("app/Models/User.php") && !m.is_match("routes/web.php"));
        assert!(path_matcher("**/*.py").unwrap().is_match("src/a/b.py"));
        // Long but within the limit: compiled (alternations and classes of
        // non-ASCII letters make the largest automata).
        let long = "{a,é,c}[!é-ꯍ]".repeat(MAX_GLOB_CHARS / 13);
        assert!(long.chars().count() <= MAX_GLOB_CHARS);
        assert!(path_matcher(&long).is_ok());
        let err = path_matcher(&"*a".repeat(MAX_GLOB_CHARS)).unwrap_err().to_string();
        assert!(err.contains("2000 characters long; the limit is 1000"), "{err}");
        assert!(err.chars().count() < 600, "the glob is cut in the message: {err}");
        assert!(path_matcher("src/[").unwrap_err().to_string().contains("invalid path glob"));
    }
}
