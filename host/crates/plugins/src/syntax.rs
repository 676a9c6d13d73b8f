//! The native parsing service: tree-sitter with the grammars the host ships.
//!
//! Plugins reach it through the WIT `syntax` import; the host (and the
//! benchmarks) call it directly. One parse, then any number of queries, each
//! returning every match at once.
//!
//! ```
//! use code_intel_plugins::syntax;
//!
//! let tree = syntax::parse("python", "def hello():\n    pass\n").unwrap();
//! let matches = tree.query("(function_definition name: (identifier) @name)").unwrap();
//! assert_eq!(matches[0].captures[0].text, "hello");
//! assert_eq!(matches[0].captures[0].start_line, 1);
//! ```
//!
//! Guards: sources over [`MAX_SOURCE_BYTES`] are refused, a parse or query
//! that runs past its deadline is abandoned, capture text is cut at
//! [`MAX_CAPTURE_TEXT_BYTES`] and one query's results are capped at
//! [`MAX_QUERY_RESULT_BYTES`].

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tree_sitter::{Language, Parser, Query, QueryCursor, QueryCursorOptions, StreamingIterator};

/// Largest source the service parses. The indexer skips files over 1 MiB by
/// default (configurable); 16 MiB leaves room for a raised limit while
/// keeping one tree (roughly 10x the source in memory) far from exhausting
/// the host.
pub const MAX_SOURCE_BYTES: usize = 16 * 1024 * 1024;

/// Longest capture text returned for one node (64 KiB, as the WIT contract
/// documents). A plugin needs the text of names and signatures, not of whole
/// modules; it can always slice the source it already holds by byte range.
pub const MAX_CAPTURE_TEXT_BYTES: usize = 64 * 1024;

/// Upper bound on what one query returns (capture text plus a fixed
/// per-capture overhead). Overlapping captures such as `(_) @node` on a
/// deeply nested file would otherwise copy the source thousands of times.
/// 64 MiB is far beyond any sensible query on a file under the size cap and
/// still fits a plugin's 256 MiB memory limit.
pub const MAX_QUERY_RESULT_BYTES: usize = 64 * 1024 * 1024;

/// Per-capture bookkeeping counted against [`MAX_QUERY_RESULT_BYTES`]
/// (the record's integers and string headers as lowered into a plugin).
const CAPTURE_OVERHEAD_BYTES: usize = 64;

/// Deadline for native calls that do not pass one. Parsing 1 MiB of PHP takes
/// well under 100 ms; two seconds only stops pathological inputs.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// Query texts are cached per language; a plugin generating unbounded distinct
/// queries must not grow the cache forever. Real plugins use a few dozen.
const MAX_CACHED_QUERIES: usize = 1024;

/// Why parsing or querying failed (mirrors the WIT `syntax-error`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SyntaxError {
    #[error("{0}")]
    UnknownLanguage(String),
    #[error("{0}")]
    InvalidQuery(String),
    #[error("{0}")]
    ParseFailed(String),
}

/// One captured node of a query match (mirrors the WIT `capture`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capture {
    pub name: String,
    pub kind: String,
    pub start_byte: u32,
    pub end_byte: u32,
    /// 1-based line of the node's first byte.
    pub start_line: u32,
    /// 1-based line of the node's last byte.
    pub end_line: u32,
    /// 0-based byte column of the first byte.
    pub start_column: u32,
    /// 0-based byte column just past the last byte (tree-sitter's end point).
    pub end_column: u32,
    pub text: String,
}

/// One match of a query (mirrors the WIT `query-match`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryMatch {
    pub pattern: u32,
    pub captures: Vec<Capture>,
}

/// One captured node without text (mirrors the WIT `node-span`): the name
/// and kind are indices into the tables of its [`SpanMatches`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeSpan {
    /// Index into [`SpanMatches::capture_names`].
    pub name: u32,
    /// Index into [`SpanMatches::kinds`].
    pub kind: u32,
    pub start_byte: u32,
    pub end_byte: u32,
    /// 1-based line of the node's first byte.
    pub start_line: u32,
    /// 1-based line of the node's last byte.
    pub end_line: u32,
    /// 0-based byte column of the first byte.
    pub start_column: u32,
    /// 0-based byte column just past the last byte (tree-sitter's end point).
    pub end_column: u32,
}

/// One match of [`SyntaxTree::query_spans`] (mirrors the WIT `span-match`):
/// its captures are `captures[first..first + count]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpanMatch {
    pub pattern: u32,
    pub first: u32,
    pub count: u32,
}

/// Every match of one query, flattened (mirrors the WIT `span-matches`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpanMatches {
    /// The query's capture names, without `@`.
    pub capture_names: Vec<String>,
    /// The kinds of the captured nodes, each once.
    pub kinds: Vec<String>,
    pub matches: Vec<SpanMatch>,
    pub captures: Vec<NodeSpan>,
}

impl SpanMatches {
    /// The captures of match `m`.
    #[must_use]
    pub fn captures_of(&self, m: &SpanMatch) -> &[NodeSpan] {
        self.captures.get(m.first as usize..(m.first + m.count) as usize).unwrap_or_default()
    }
}

/// Per-capture cost of [`SyntaxTree::query_spans`] counted against
/// [`MAX_QUERY_RESULT_BYTES`] (eight `u32`s).
const SPAN_CAPTURE_BYTES: usize = 32;

/// The grammars this host ships, by the names plugins use.
///
/// `php` is tree-sitter-php's full grammar, which accepts files that mix HTML
/// and `<?php` blocks (what `.php` files are); `php_only` parses pure PHP code
/// without the leading `<?php` tag. `javascript` includes JSX; `typescript`
/// is TypeScript without JSX (in it `<T>x` is a cast) and `tsx` TypeScript
/// with JSX.
const GRAMMARS: &[(&str, fn() -> Language)] = &[
    ("css", || Language::new(tree_sitter_css::LANGUAGE)),
    ("go", || Language::new(tree_sitter_go::LANGUAGE)),
    ("html", || Language::new(tree_sitter_html::LANGUAGE)),
    ("java", || Language::new(tree_sitter_java::LANGUAGE)),
    ("javascript", || Language::new(tree_sitter_javascript::LANGUAGE)),
    ("php", || Language::new(tree_sitter_php::LANGUAGE_PHP)),
    ("php_only", || Language::new(tree_sitter_php::LANGUAGE_PHP_ONLY)),
    ("python", || Language::new(tree_sitter_python::LANGUAGE)),
    ("scss", tree_sitter_scss::language),
    ("tsx", || Language::new(tree_sitter_typescript::LANGUAGE_TSX)),
    ("typescript", || Language::new(tree_sitter_typescript::LANGUAGE_TYPESCRIPT)),
];

/// The grammar names this host can parse, sorted.
#[must_use]
pub fn languages() -> Vec<String> {
    GRAMMARS.iter().map(|(name, _)| (*name).to_string()).collect()
}

fn grammar(name: &str) -> Result<(&'static str, Language), SyntaxError> {
    GRAMMARS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(n, f)| (*n, f()))
        .ok_or_else(|| {
            SyntaxError::UnknownLanguage(format!(
                "no grammar named `{name}`; this host has: {}",
                languages().join(", ")
            ))
        })
}

thread_local! {
    /// Parsers are reused per thread and language: creating one allocates
    /// tree-sitter's stacks, which is measurable at thousands of files.
    static PARSERS: RefCell<HashMap<&'static str, Parser>> = RefCell::new(HashMap::new());
}

/// A parsed source. Cheap to keep; queries borrow it.
pub struct SyntaxTree {
    language: &'static str,
    source: Arc<str>,
    tree: tree_sitter::Tree,
}

impl std::fmt::Debug for SyntaxTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyntaxTree")
            .field("language", &self.language)
            .field("source_bytes", &self.source.len())
            .finish_non_exhaustive()
    }
}

/// Parses `source` with the grammar named `language`, with
/// [`DEFAULT_TIMEOUT`].
///
/// # Errors
/// Unknown language, a source over [`MAX_SOURCE_BYTES`], or a parse that ran
/// past the deadline.
pub fn parse(language: &str, source: &str) -> Result<SyntaxTree, SyntaxError> {
    parse_until(language, Arc::from(source), Instant::now() + DEFAULT_TIMEOUT)
}

/// Parses bytes that may not be valid UTF-8: invalid sequences become U+FFFD
/// first, exactly as the host does before offering a file to a plugin.
///
/// # Errors
/// As [`parse`].
pub fn parse_bytes(language: &str, source: &[u8]) -> Result<SyntaxTree, SyntaxError> {
    parse(language, &String::from_utf8_lossy(source))
}

/// Parses `source`, abandoning the parse at `deadline`.
///
/// # Errors
/// As [`parse`].
pub fn parse_until(language: &str, source: Arc<str>, deadline: Instant) -> Result<SyntaxTree, SyntaxError> {
    let (name, grammar) = language_checked(language)?;
    if source.len() > MAX_SOURCE_BYTES {
        return Err(SyntaxError::ParseFailed(format!(
            "source is {} bytes; the parse limit is {MAX_SOURCE_BYTES} bytes",
            source.len()
        )));
    }
    let tree = PARSERS.with(|parsers| {
        let mut parsers = parsers.borrow_mut();
        let parser = match parsers.entry(name) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let mut parser = Parser::new();
                parser
                    .set_language(&grammar)
                    .map_err(|e| SyntaxError::ParseFailed(format!("grammar `{name}` is unusable: {e}")))?;
                e.insert(parser)
            }
        };
        let bytes = source.as_bytes();
        let mut timed_out = false;
        let mut progress = |_: &tree_sitter::ParseState| {
            if Instant::now() >= deadline {
                timed_out = true;
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let options = tree_sitter::ParseOptions::new().progress_callback(&mut progress);
        let tree = parser.parse_with_options(
            &mut |offset, _| if offset < bytes.len() { &bytes[offset..] } else { &[][..] },
            None,
            Some(options),
        );
        if tree.is_none() {
            // An abandoned parse would otherwise resume on the next call.
            parser.reset();
            let why = if timed_out { "took longer than its time limit" } else { "was abandoned by tree-sitter" };
            return Err(SyntaxError::ParseFailed(format!(
                "parsing {} bytes of {name} {why}",
                source.len()
            )));
        }
        Ok(tree)
    })?;
    let tree = tree.ok_or_else(|| SyntaxError::ParseFailed("tree-sitter returned no tree".into()))?;
    Ok(SyntaxTree { language: name, source, tree })
}

fn language_checked(language: &str) -> Result<(&'static str, Language), SyntaxError> {
    grammar(language)
}

type QuerySlot = Arc<OnceLock<Result<Arc<Query>, SyntaxError>>>;

/// Compiled queries shared by every thread and every plugin instance:
/// compiling a PHP query takes milliseconds to tens of milliseconds, and each
/// plugin runs the same few queries on every file.
fn query_cache() -> &'static Mutex<HashMap<(&'static str, String), QuerySlot>> {
    static CACHE: OnceLock<Mutex<HashMap<(&'static str, String), QuerySlot>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Returns the compiled query for `(language, text)`, compiling it once.
/// Compilation happens outside the cache lock, so threads asking for other
/// queries are not held up.
fn compiled_query(language: &'static str, grammar: &Language, text: &str) -> Result<Arc<Query>, SyntaxError> {
    let slot = {
        let mut cache = query_cache().lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(slot) = cache.get(&(language, text.to_string())) {
            Some(Arc::clone(slot))
        } else if cache.len() < MAX_CACHED_QUERIES {
            let slot: QuerySlot = Arc::new(OnceLock::new());
            cache.insert((language, text.to_string()), Arc::clone(&slot));
            Some(slot)
        } else {
            None
        }
    };
    let compile = || {
        Query::new(grammar, text)
            .map(Arc::new)
            .map_err(|e| SyntaxError::InvalidQuery(e.to_string()))
    };
    match slot {
        Some(slot) => slot.get_or_init(compile).clone(),
        None => compile(),
    }
}

/// Compiles (or fetches from the shared cache) a query, e.g. to warm the
/// cache before timing.
///
/// # Errors
/// Unknown language or a query that does not compile.
pub fn prepare_query(language: &str, query: &str) -> Result<(), SyntaxError> {
    let (name, grammar) = language_checked(language)?;
    compiled_query(name, &grammar, query).map(|_| ())
}

impl SyntaxTree {
    /// The grammar this tree was parsed with.
    #[must_use]
    pub fn language(&self) -> &str {
        self.language
    }

    /// The parsed source.
    #[must_use]
    pub fn source(&self) -> &str {
        &self.source
    }

    /// True when the tree holds syntax errors or missing nodes.
    #[must_use]
    pub fn has_errors(&self) -> bool {
        self.tree.root_node().has_error()
    }

    /// Kind of the root node, e.g. `module` or `program`.
    #[must_use]
    pub fn root_kind(&self) -> String {
        self.tree.root_node().kind().to_string()
    }

    /// Runs a query with [`DEFAULT_TIMEOUT`].
    ///
    /// # Errors
    /// See [`SyntaxTree::query_until`].
    pub fn query(&self, query: &str) -> Result<Vec<QueryMatch>, SyntaxError> {
        self.query_until(query, Instant::now() + DEFAULT_TIMEOUT)
    }

    /// Runs a query over the whole tree and returns every match in document
    /// order, with `#eq?`, `#match?` and `#any-of?` predicates applied.
    ///
    /// # Errors
    /// `InvalidQuery` when the query does not compile for this grammar;
    /// `ParseFailed` when it runs past `deadline` or its results exceed
    /// [`MAX_QUERY_RESULT_BYTES`].
    pub fn query_until(&self, query: &str, deadline: Instant) -> Result<Vec<QueryMatch>, SyntaxError> {
        let mut out = Vec::new();
        let mut budget = MAX_QUERY_RESULT_BYTES;
        self.for_each_match(query, deadline, |names, m| {
            let mut captures = Vec::with_capacity(m.captures().len());
            for c in m.captures() {
                let node = c.node;
                let range = node.byte_range();
                let text = cut_text(&self.source, range.start, range.end);
                let name = names.get(c.index as usize).copied().unwrap_or_default();
                let cost = text.len() + name.len() + node.kind().len() + CAPTURE_OVERHEAD_BYTES;
                budget = budget.checked_sub(cost).ok_or_else(over_budget)?;
                let position = position(&node);
                captures.push(Capture {
                    name: name.to_string(),
                    kind: node.kind().to_string(),
                    start_byte: position.start_byte,
                    end_byte: position.end_byte,
                    start_line: position.start_line,
                    end_line: position.end_line,
                    start_column: position.start_column,
                    end_column: position.end_column,
                    text,
                });
            }
            out.push(QueryMatch { pattern: to_u32(m.pattern_index), captures });
            Ok(())
        })?;
        Ok(out)
    }

    /// Runs a query with [`DEFAULT_TIMEOUT`], returning spans only.
    ///
    /// # Errors
    /// See [`SyntaxTree::query_spans_until`].
    pub fn query_spans(&self, query: &str) -> Result<SpanMatches, SyntaxError> {
        self.query_spans_until(query, Instant::now() + DEFAULT_TIMEOUT)
    }

    /// Runs a query like [`SyntaxTree::query_until`] and returns the same
    /// matches without text: capture names and node kinds as indices into
    /// tables, captures flattened into one list. Each capture costs
    /// a fixed 32 bytes against [`MAX_QUERY_RESULT_BYTES`].
    ///
    /// # Errors
    /// As [`SyntaxTree::query_until`].
    pub fn query_spans_until(&self, query: &str, deadline: Instant) -> Result<SpanMatches, SyntaxError> {
        let mut out = SpanMatches::default();
        // Grammar kind id -> index in `out.kinds` (u32::MAX: not seen yet).
        let mut kind_index: Vec<u32> = Vec::new();
        let mut budget = MAX_QUERY_RESULT_BYTES;
        let compiled = self.for_each_match(query, deadline, |_, m| {
            out.matches.push(SpanMatch {
                pattern: to_u32(m.pattern_index),
                first: to_u32(out.captures.len()),
                count: to_u32(m.captures().len()),
            });
            for c in m.captures() {
                budget = budget.checked_sub(SPAN_CAPTURE_BYTES).ok_or_else(over_budget)?;
                let node = c.node;
                let id = usize::from(node.kind_id());
                if id >= kind_index.len() {
                    kind_index.resize(id + 1, u32::MAX);
                }
                if kind_index[id] == u32::MAX {
                    kind_index[id] = to_u32(out.kinds.len());
                    out.kinds.push(node.kind().to_string());
                }
                let p = position(&node);
                out.captures.push(NodeSpan { name: c.index, kind: kind_index[id], ..p });
            }
            Ok(())
        })?;
        out.capture_names = compiled.capture_names().iter().map(|n| (*n).to_string()).collect();
        Ok(out)
    }

    /// Runs `query` and calls `each` with the query's capture names and every
    /// match, in document order, until it returns an error. Returns the
    /// compiled query.
    fn for_each_match(
        &self,
        query: &str,
        deadline: Instant,
        mut each: impl FnMut(&[&str], &tree_sitter::QueryMatch<'_, '_>) -> Result<(), SyntaxError>,
    ) -> Result<Arc<Query>, SyntaxError> {
        let (name, grammar) = language_checked(self.language)?;
        let compiled = compiled_query(name, &grammar, query)?;
        let names = compiled.capture_names();
        let source = self.source.as_bytes();
        let mut cursor = QueryCursor::new();
        let mut timed_out = false;
        let mut progress = |_: &tree_sitter::QueryCursorState| {
            if Instant::now() >= deadline {
                timed_out = true;
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let options = QueryCursorOptions::new().progress_callback(&mut progress);
        let mut matches =
            cursor.matches_with_options(&compiled, self.tree.root_node(), source, options);
        while let Some(m) = matches.next() {
            each(names, m)?;
        }
        drop(matches);
        if timed_out {
            return Err(SyntaxError::ParseFailed(format!(
                "query over {} bytes of {name} took longer than its time limit",
                self.source.len()
            )));
        }
        Ok(compiled)
    }
}

fn over_budget() -> SyntaxError {
    SyntaxError::ParseFailed(format!(
        "query results exceed {MAX_QUERY_RESULT_BYTES} bytes; capture smaller nodes or narrow the query"
    ))
}

/// A node's byte range, lines (the end line is the line of the last byte)
/// and columns, with the name and kind indices left at 0.
fn position(node: &tree_sitter::Node<'_>) -> NodeSpan {
    let range = node.byte_range();
    let start = node.start_position();
    let end = node.end_position();
    let end_line = if range.end > range.start && end.column == 0 && end.row > start.row {
        end.row // the last byte is the newline ending the previous row
    } else {
        end.row + 1
    };
    NodeSpan {
        name: 0,
        kind: 0,
        start_byte: to_u32(range.start),
        end_byte: to_u32(range.end),
        start_line: to_u32(start.row + 1),
        end_line: to_u32(end_line),
        start_column: to_u32(start.column),
        end_column: to_u32(end.column),
    }
}

/// The source text of `start..end`, cut to at most [`MAX_CAPTURE_TEXT_BYTES`]
/// at a character boundary.
fn cut_text(source: &str, start: usize, end: usize) -> String {
    let end = end.min(source.len());
    let start = start.min(end);
    let cut = source.floor_char_boundary(start.saturating_add(MAX_CAPTURE_TEXT_BYTES).min(end));
    source.get(start..cut).unwrap_or_default().to_string()
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_function_is_captured_with_lines_and_columns() {
        let src = "import os\n\nclass A:\n    def run(self):\n        return 1\n";
        let tree = parse("python", src).unwrap();
        assert!(!tree.has_errors());
        assert_eq!(tree.root_kind(), "module");
        let m = tree.query("(function_definition name: (identifier) @name) @def").unwrap();
        assert_eq!(m.len(), 1);
        let def = m[0].captures.iter().find(|c| c.name == "def").unwrap();
        assert_eq!((def.start_line, def.end_line), (4, 5));
        assert_eq!(def.start_column, 4);
        assert_eq!(def.kind, "function_definition");
        assert_eq!(&src[def.start_byte as usize..def.end_byte as usize], def.text);
    }

    #[test]
    fn query_spans_match_query_without_text() {
        let src = "import os\n\nclass A(B):\n    def run(self):\n        return 1\n\n    def stop(self): pass\n";
        let tree = parse("python", src).unwrap();
        let query = "(function_definition name: (identifier) @name) @def (class_definition name: (identifier) @class)";
        let full = tree.query(query).unwrap();
        let spans = tree.query_spans(query).unwrap();
        assert_eq!(spans.capture_names, ["name", "def", "class"]);
        assert_eq!(spans.matches.len(), full.len());
        for (m, s) in full.iter().zip(&spans.matches) {
            assert_eq!(m.pattern, s.pattern);
            let captures = spans.captures_of(s);
            assert_eq!(captures.len(), m.captures.len());
            for (c, n) in m.captures.iter().zip(captures) {
                assert_eq!(spans.capture_names[n.name as usize], c.name);
                assert_eq!(spans.kinds[n.kind as usize], c.kind);
                assert_eq!(&src[n.start_byte as usize..n.end_byte as usize], c.text);
                assert_eq!(
                    (n.start_line, n.end_line, n.start_column, n.end_column),
                    (c.start_line, c.end_line, c.start_column, c.end_column)
                );
            }
        }
        // Each kind is listed once.
        let mut kinds = spans.kinds.clone();
        kinds.sort();
        kinds.dedup();
        assert_eq!(kinds.len(), spans.kinds.len());
        // No matches: the capture names are still there.
        let none = tree.query_spans("(lambda) @l").unwrap();
        assert_eq!(none.capture_names, ["l"]);
        assert!(none.matches.is_empty() && none.captures.is_empty() && none.kinds.is_empty());
    }

    #[test]
    fn query_spans_of_overlapping_captures_cost_no_text() {
        // What exceeds the text budget of `query` is cheap as spans.
        let depth = 10_000;
        let src = format!("x = {}{}\n", "[".repeat(depth), "]".repeat(depth));
        let tree = parse("python", &src).unwrap();
        let spans = tree.query_spans("(list) @n").unwrap();
        assert_eq!(spans.captures.len(), depth);
        assert_eq!(spans.kinds, ["list"]);
    }

    #[test]
    fn php_with_html_parses_with_full_grammar() {
        let src = "<html><?php\nnamespace App;\nclass User {}\n?></html>\n";
        let tree = parse("php", src).unwrap();
        let m = tree.query("(class_declaration name: (name) @n)").unwrap();
        assert_eq!(m[0].captures[0].text, "User");
        let only = parse("php_only", "class User {}").unwrap();
        assert!(!only.has_errors());
    }

    #[test]
    fn predicates_are_applied() {
        let tree = parse("python", "def a(): pass\ndef b(): pass\n").unwrap();
        let m = tree
            .query(r#"((function_definition name: (identifier) @n) (#eq? @n "b"))"#)
            .unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].captures[0].text, "b");
    }

    #[test]
    fn unknown_language_lists_the_known_ones() {
        let err = parse("cobol", "x").unwrap_err();
        assert!(matches!(&err, SyntaxError::UnknownLanguage(m) if m.contains("python") && m.contains("php")));
    }

    #[test]
    fn invalid_query_names_the_position() {
        let tree = parse("python", "x = 1\n").unwrap();
        let err = tree.query("(no_such_node) @x").unwrap_err();
        assert!(matches!(&err, SyntaxError::InvalidQuery(m) if m.contains("1:")), "{err:?}");
        // The failure is cached too and stays the same.
        assert_eq!(tree.query("(no_such_node) @x").unwrap_err(), err);
    }

    #[test]
    fn capture_text_is_cut_at_a_char_boundary() {
        let long = format!("x = \"{}\"\n", "é".repeat(MAX_CAPTURE_TEXT_BYTES));
        let tree = parse("python", &long).unwrap();
        let m = tree.query("(string) @s").unwrap();
        let text = &m[0].captures[0].text;
        assert!(text.len() <= MAX_CAPTURE_TEXT_BYTES && text.len() > MAX_CAPTURE_TEXT_BYTES - 4);
        assert_eq!(m[0].captures[0].end_byte as usize, long.len() - 1);
    }

    #[test]
    fn oversized_source_is_refused() {
        let big = "a".repeat(MAX_SOURCE_BYTES + 1);
        assert!(matches!(parse("python", &big), Err(SyntaxError::ParseFailed(_))));
    }

    #[test]
    fn expired_deadline_abandons_the_parse_and_the_parser_recovers() {
        let src = "def f():\n    return 1\n".repeat(20_000);
        let past = Instant::now().checked_sub(Duration::from_millis(1)).unwrap();
        let err = parse_until("python", Arc::from(src.as_str()), past).unwrap_err();
        assert!(matches!(&err, SyntaxError::ParseFailed(m) if m.contains("time limit")), "{err:?}");
        // The same thread's parser must start afresh, not resume.
        let tree = parse("python", "x = 1\n").unwrap();
        assert_eq!(tree.source().len(), 6);
        assert!(!tree.has_errors());
    }

    #[test]
    fn query_result_budget_is_enforced_for_overlapping_captures() {
        // 10,000 nested lists: capturing each copies about depth^2 = 100 MB.
        let depth = 10_000;
        let src = format!("x = {}{}\n", "[".repeat(depth), "]".repeat(depth));
        let tree = parse("python", &src).unwrap();
        let err = tree.query("(list) @n").unwrap_err();
        assert!(matches!(&err, SyntaxError::ParseFailed(m) if m.contains("exceed")), "{err:?}");
        // Capturing only the outermost list is fine.
        let m = tree.query("(expression_statement (assignment right: (list) @n))").unwrap();
        assert_eq!(m.len(), 1);
    }
}
