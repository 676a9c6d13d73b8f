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

mod named_nodes;

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

/// Deadline for native calls that do not pass one: the plugin calls'
/// wall-clock backstop. Parsing 1 MiB of PHP takes well under 100 ms, but
/// 10,000 levels of nesting take seconds on a loaded machine, and two
/// seconds (the old value) failed there; this only stops true hangs.
pub const DEFAULT_TIMEOUT: Duration = crate::sandbox::DEFAULT_CALL_TIMEOUT;

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

/// One named node of [`SyntaxTree::named_nodes`] (one node of the WIT
/// `node-table`, see [`TreeNode::to_array`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)] // written by the C walk in `syntax/named_nodes.c`
pub struct TreeNode {
    /// Index into [`NodeTable::kinds`].
    pub kind: u32,
    /// Index into [`NodeTable::fields`]: the field this node fills in its
    /// parent in the syntax tree; 0 (the empty name) when none.
    pub field: u32,
    /// Index of the nearest ancestor in the table; [`NO_PARENT`] for none.
    pub parent: u32,
    /// Index just past the node's last descendant in the table.
    pub end: u32,
    pub start_byte: u32,
    pub end_byte: u32,
    /// 1-based line of the node's first byte.
    pub start_line: u32,
    /// 1-based line of the node's last byte.
    pub end_line: u32,
}

impl TreeNode {
    /// The node as the WIT `node-table` lays it out: kind, field, parent,
    /// end, start byte, end byte, start line, end line.
    #[must_use]
    pub fn to_array(&self) -> [u32; 8] {
        [self.kind, self.field, self.parent, self.end, self.start_byte, self.end_byte, self.start_line, self.end_line]
    }
}

/// [`TreeNode::parent`] of a node with no ancestor in the table.
pub const NO_PARENT: u32 = u32::MAX;

/// The named nodes of a tree in document order (mirrors the WIT `node-table`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeTable {
    /// The kinds of the nodes in the table, each once.
    pub kinds: Vec<String>,
    /// The field names the nodes fill, each once; index 0 is the empty
    /// name (no field).
    pub fields: Vec<String>,
    pub nodes: Vec<TreeNode>,
}

/// Per-node cost of [`SyntaxTree::named_nodes`] counted against
/// [`MAX_QUERY_RESULT_BYTES`] (eight `u32`s).
const TREE_NODE_BYTES: usize = 32;

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
    let tree = if source.len() < OWN_STACK_FROM_BYTES {
        PARSERS.with(|parsers| {
            let mut parsers = parsers.borrow_mut();
            let parser = match parsers.entry(name) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => e.insert(new_parser(name, &grammar)?),
            };
            run_parse(parser, name, &source, deadline)
        })?
    } else {
        // Tree-sitter releases its parse stack recursively, one frame per
        // level of nesting: a long source can nest deeper than the 2 MiB
        // stack of a worker thread holds (176,000 `/*` in a Python file
        // aborted the process). A thread of its own, with a stack sized to
        // the source; only the pages it touches are used.
        let stack = source.len().saturating_mul(PARSE_STACK_PER_BYTE).clamp(8 << 20, 1 << 30);
        std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name("code-intel-parse".into())
                .stack_size(stack)
                .spawn_scoped(scope, || run_parse(&mut new_parser(name, &grammar)?, name, &source, deadline))
                .map_err(|e| SyntaxError::ParseFailed(format!("could not start a thread to parse {} bytes: {e}", source.len())))?
                .join()
                .map_err(|_| SyntaxError::ParseFailed(format!("parsing {} bytes of {name} panicked", source.len())))?
        })?
    };
    let tree = tree.ok_or_else(|| SyntaxError::ParseFailed("tree-sitter returned no tree".into()))?;
    Ok(SyntaxTree { language: name, source, tree })
}

/// Sources from this size on are parsed on a thread of their own (see
/// [`parse_until`]); smaller ones cannot nest deep enough to matter, and
/// parse on the caller's thread with its cached parser.
const OWN_STACK_FROM_BYTES: usize = 16 * 1024;

/// Stack per byte of source for that thread: tree-sitter's recursion
/// takes well under this per level, and a level takes at least one byte.
const PARSE_STACK_PER_BYTE: usize = 256;

fn new_parser(name: &str, grammar: &tree_sitter::Language) -> Result<Parser, SyntaxError> {
    let mut parser = Parser::new();
    parser.set_language(grammar).map_err(|e| SyntaxError::ParseFailed(format!("grammar `{name}` is unusable: {e}")))?;
    Ok(parser)
}

/// One parse with `parser`, abandoned at `deadline`.
fn run_parse(parser: &mut Parser, name: &str, source: &str, deadline: Instant) -> Result<Option<tree_sitter::Tree>, SyntaxError> {
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
        return Err(SyntaxError::ParseFailed(format!("parsing {} bytes of {name} {why}", source.len())));
    }
    Ok(tree)
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
        let mut kinds = KindTable::default();
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
                let kind = kinds.index_of(&node);
                out.captures.push(NodeSpan { name: c.index, kind, ..position(&node) });
            }
            Ok(())
        })?;
        out.capture_names = compiled.capture_names().iter().map(|n| (*n).to_string()).collect();
        out.kinds = kinds.names;
        Ok(out)
    }

    /// Every named node, or every named node of one of `kinds` (all when
    /// `kinds` is empty), in document order, with [`DEFAULT_TIMEOUT`].
    ///
    /// # Errors
    /// See [`SyntaxTree::named_nodes_until`].
    pub fn named_nodes(&self, kinds: &[String]) -> Result<NodeTable, SyntaxError> {
        self.named_nodes_until(kinds, Instant::now() + DEFAULT_TIMEOUT)
    }

    /// Walks the whole tree once and returns its named nodes (of `kinds`
    /// only, unless `kinds` is empty) in document order: the kind, the field
    /// the node fills in its parent, the nearest ancestor in the table and
    /// the end of its subtree in the table. The walk reads tree-sitter's
    /// subtrees directly and costs about a tenth of the parse, a query walk
    /// about half; the plugin matches the structure it needs itself.
    ///
    /// # Errors
    /// `InvalidQuery` when a kind is not a named node kind of the grammar
    /// (the message lists close names); `ParseFailed` when the walk runs
    /// past `deadline` or the table exceeds [`MAX_QUERY_RESULT_BYTES`].
    pub fn named_nodes_until(&self, kinds: &[String], deadline: Instant) -> Result<NodeTable, SyntaxError> {
        let grammar = self.tree.language();
        let grammar_kinds = grammar_kinds(self.language, &grammar);
        // Kept kind ids, named ones only: one lookup per node instead of
        // asking tree-sitter whether each node is named.
        let wanted = wanted_kinds(self.language, &grammar, &grammar_kinds, kinds)?;
        let kept_ids: &[bool] = wanted.as_deref().unwrap_or(&grammar_kinds.named);
        let max_nodes = MAX_QUERY_RESULT_BYTES / TREE_NODE_BYTES;
        let walked = named_nodes::walk(&self.tree, kept_ids, deadline, max_nodes).map_err(|e| match e {
            named_nodes::WalkError::Full => SyntaxError::ParseFailed(format!(
                "the node table exceeds {MAX_QUERY_RESULT_BYTES} bytes; ask for fewer kinds"
            )),
            named_nodes::WalkError::Expired => SyntaxError::ParseFailed(format!(
                "walking {} bytes of {} took longer than its time limit",
                self.source.len(),
                self.language
            )),
            named_nodes::WalkError::NoMemory => {
                SyntaxError::ParseFailed(format!("walking {} bytes of {} ran out of memory", self.source.len(), self.language))
            }
        })?;
        let kind_name = |id: u16| grammar.node_kind_for_id(id).unwrap_or_default().to_string();
        let mut fields = vec![String::new()];
        fields.extend(walked.field_ids.iter().skip(1).map(|&id| grammar.field_name_for_id(id).unwrap_or_default().to_string()));
        Ok(NodeTable { kinds: walked.kind_ids.into_iter().map(kind_name).collect(), fields, nodes: walked.nodes })
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

/// What `named_nodes` needs to know about a grammar's kinds: which kind ids
/// are named, and the ids of each named kind's name (an alias gives a name
/// several ids).
struct GrammarKinds {
    named: Vec<bool>,
    ids_by_name: HashMap<String, Vec<u16>>,
}

/// The [`GrammarKinds`] of `language`, worked out on its first node table
/// and kept: resolving listed names against the grammar on every call took
/// a pass over all its kinds per name (2-3 % of the CSS plugin's call with
/// its 26 kinds listed).
fn grammar_kinds(language: &'static str, grammar: &Language) -> Arc<GrammarKinds> {
    static CACHE: OnceLock<Mutex<HashMap<&'static str, Arc<GrammarKinds>>>> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Mutex::default).lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let kinds = cache.entry(language).or_insert_with(|| {
        let ids = (0..grammar.node_kind_count()).map_while(|id| u16::try_from(id).ok());
        let named: Vec<bool> = ids.clone().map(|id| grammar.node_kind_is_named(id)).collect();
        let mut ids_by_name: HashMap<String, Vec<u16>> = HashMap::new();
        for id in ids.filter(|&id| grammar.node_kind_is_named(id)) {
            if let Some(name) = grammar.node_kind_for_id(id) {
                ids_by_name.entry(name.to_string()).or_default().push(id);
            }
        }
        Arc::new(GrammarKinds { named, ids_by_name })
    });
    Arc::clone(kinds)
}

/// Which grammar kind ids [`SyntaxTree::named_nodes_until`] keeps for
/// `kinds`: `None` for every named kind (an empty list).
fn wanted_kinds(language: &str, grammar: &Language, grammar_kinds: &GrammarKinds, kinds: &[String]) -> Result<Option<Vec<bool>>, SyntaxError> {
    if kinds.is_empty() {
        return Ok(None);
    }
    let count = grammar.node_kind_count();
    let mut wanted = vec![false; count];
    for kind in kinds {
        let Some(ids) = grammar_kinds.ids_by_name.get(kind.as_str()) else {
            let mut close: Vec<&str> = (0..count)
                .filter_map(|id| u16::try_from(id).ok())
                .filter(|&id| grammar.node_kind_is_named(id) && grammar.node_kind_is_visible(id))
                .filter_map(|id| grammar.node_kind_for_id(id))
                .filter(|name| name.contains(kind.as_str()) || kind.contains(name))
                .collect();
            close.sort_unstable();
            close.dedup();
            close.truncate(8);
            let hint = if close.is_empty() { String::new() } else { format!(" (close: {})", close.join(", ")) };
            return Err(SyntaxError::InvalidQuery(format!(
                "grammar `{language}` has no named node kind `{kind}`{hint}"
            )));
        };
        for &id in ids {
            wanted[usize::from(id)] = true;
        }
    }
    Ok(Some(wanted))
}

/// The node kinds a result names, each once, in the order first seen.
#[derive(Default)]
struct KindTable {
    names: Vec<String>,
    /// Grammar kind id -> index in `names` (`u32::MAX`: not seen yet).
    index: Vec<u32>,
}

impl KindTable {
    fn index_of(&mut self, node: &tree_sitter::Node<'_>) -> u32 {
        let id = usize::from(node.kind_id());
        if id >= self.index.len() {
            self.index.resize(id + 1, u32::MAX);
        }
        if self.index[id] == u32::MAX {
            self.index[id] = to_u32(self.names.len());
            self.names.push(node.kind().to_string());
        }
        self.index[id]
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
    fn named_nodes_carry_fields_parents_and_subtree_ends() {
        let src = "import os\n\nclass A:\n    def run(self):\n        return 1\n";
        let tree = parse("python", src).unwrap();
        let table = tree.named_nodes(&[]).unwrap();
        let kind = |i: usize| table.kinds[table.nodes[i].kind as usize].as_str();
        let text = |i: usize| &src[table.nodes[i].start_byte as usize..table.nodes[i].end_byte as usize];
        assert_eq!(kind(0), "module");
        assert_eq!((table.nodes[0].parent, table.nodes[0].end as usize), (NO_PARENT, table.nodes.len()));
        let def = (0..table.nodes.len()).find(|&i| kind(i) == "function_definition").unwrap();
        let (start_line, end_line) = (table.nodes[def].start_line, table.nodes[def].end_line);
        assert_eq!((start_line, end_line), (4, 5));
        // Children by field, found among the descendants.
        let child = |field: &str| {
            (def + 1..table.nodes[def].end as usize)
                .find(|&j| table.nodes[j].parent as usize == def && table.fields[table.nodes[j].field as usize] == field)
        };
        assert_eq!(text(child("name").unwrap()), "run");
        assert_eq!(kind(child("body").unwrap()), "block");
        assert_eq!(child("superclasses"), None);
        let class = table.nodes[def].parent as usize;
        assert_eq!(kind(class), "block");
        assert_eq!(kind(table.nodes[class].parent as usize), "class_definition");
        // Every node lies inside its parent, in both the table and the source.
        for (i, n) in table.nodes.iter().enumerate().skip(1) {
            let p = &table.nodes[n.parent as usize];
            assert!((n.parent as usize) < i && i < p.end as usize && n.end <= p.end, "node {i}");
            assert!(p.start_byte <= n.start_byte && n.end_byte <= p.end_byte, "node {i}");
        }
        // Anonymous nodes (`class`, `:`) are never in the table.
        assert!(table.kinds.iter().all(|k| k.chars().all(|c| c.is_ascii_lowercase() || c == '_')));
    }

    #[test]
    fn named_nodes_of_some_kinds_link_to_the_nearest_listed_ancestor() {
        let src = "class A:\n    def run(self):\n        print(len(self))\n";
        let tree = parse("python", src).unwrap();
        let kinds = ["class_definition".to_string(), "call".to_string(), "identifier".to_string()];
        let table = tree.named_nodes(&kinds).unwrap();
        let names: Vec<&str> = table.nodes.iter().map(|n| table.kinds[n.kind as usize].as_str()).collect();
        assert_eq!(names, ["class_definition", "identifier", "identifier", "identifier", "call", "identifier", "call", "identifier", "identifier"]);
        // `run`'s name: its parent function_definition is not listed, so the
        // nearest listed ancestor is the class; the field is still `name`.
        let run = &table.nodes[2];
        assert_eq!(&src[run.start_byte as usize..run.end_byte as usize], "run");
        assert_eq!((run.parent, table.fields[run.field as usize].as_str()), (0, "name"));
        // The inner call is a child of the outer one.
        assert_eq!(table.nodes[6].parent, 4);
        assert_eq!(table.nodes[4].end, 9);
    }

    #[test]
    fn named_nodes_name_an_unknown_kind() {
        let tree = parse("python", "x = 1\n").unwrap();
        let err = tree.named_nodes(&["function".to_string()]).unwrap_err();
        let SyntaxError::InvalidQuery(message) = err else { panic!("{err:?}") };
        assert!(message.contains("`function`") && message.contains("function_definition"), "{message}");
    }

    #[test]
    fn a_listed_kind_keeps_every_node_of_that_name_aliases_included() {
        // `property_identifier` is an alias: the grammar gives the name its own
        // id besides the aliased `identifier`'s.
        let src = "a.b.c = d.e;\nconst { f } = g;\n";
        let tree = parse("javascript", src).unwrap();
        let all = tree.named_nodes(&[]).unwrap();
        let listed = ["property_identifier".to_string(), "identifier".to_string()];
        let expected: Vec<&str> = all
            .nodes
            .iter()
            .filter(|n| listed.contains(&all.kinds[n.kind as usize]))
            .map(|n| &src[n.start_byte as usize..n.end_byte as usize])
            .collect();
        assert_eq!(expected, ["a", "b", "c", "d", "e", "g"]);
        // Twice: the second call reads the grammar's kinds from the cache.
        for _ in 0..2 {
            let table = tree.named_nodes(&listed).unwrap();
            let texts: Vec<&str> = table.nodes.iter().map(|n| &src[n.start_byte as usize..n.end_byte as usize]).collect();
            assert_eq!(texts, expected);
        }
        assert!(tree.named_nodes(&["property".to_string()]).is_err());
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

    /// Found by the fuzzer: tree-sitter releases its parse stack
    /// recursively, so deeply nested broken code overflowed the 2 MiB stack
    /// of an indexing thread and aborted the process. Parsed on a thread
    /// with the default stack, as the indexer's workers are.
    #[test]
    fn deep_nesting_parses_on_a_thread_with_the_default_stack() {
        let shapes: Vec<(&str, String)> = vec![
            // The fuzzer's input: a line of 176,000 `/*` in a Python file.
            ("python", format!("import sys\nif {}\n", "/*".repeat(176_000))),
            ("python", "def f():\n".repeat(40_000)),
            ("python", format!("x = {}", "(".repeat(300_000))),
            ("python", format!("x = {}", "[{".repeat(150_000))),
            ("php", format!("<?php\n{}", "if (1) {".repeat(60_000))),
            ("javascript", "function f() {".repeat(60_000)),
        ];
        std::thread::Builder::new()
            .stack_size(2 * 1024 * 1024)
            .spawn(move || {
                for (language, source) in shapes {
                    let tree = parse_until(language, Arc::from(source.as_str()), Instant::now() + Duration::from_secs(60));
                    assert!(tree.is_ok(), "{language}: {:?}", tree.err());
                }
            })
            .unwrap()
            .join()
            .unwrap();
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
