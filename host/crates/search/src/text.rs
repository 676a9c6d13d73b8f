//! Text search over the working tree with ripgrep's own crates: `ignore` walks
//! (honouring `.gitignore`, `.ignore`, hidden files), `grep-regex` matches and
//! `grep-searcher` reads files line by line with binary detection.
//!
//! Results are deterministic: files are searched in path order and the first
//! `max_results` matches in that order are returned, whatever the number of
//! threads.
//!
//! ```no_run
//! use code_intel_core::paths::RepoRoot;
//! use code_intel_search::text::{search_text, TextQuery};
//!
//! let root = RepoRoot::new(".").unwrap();
//! let scope = root.resolve("src").unwrap();
//! let query = TextQuery { pattern: "fn main".into(), literal: true, ..TextQuery::default() };
//! let found = search_text(&root, &[scope], &query).unwrap();
//! for m in &found.matches {
//!     println!("{}:{}: {}", m.path, m.line, m.text);
//! }
//! ```

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use code_intel_core::paths::{RepoPath, RepoRoot};
use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch};
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;
use ignore::{WalkBuilder, WalkState};
use schemars::JsonSchema;
use serde::Serialize;

/// Longest line (in characters) returned in a match or context line. Minified
/// files put a whole bundle on one line; 300 characters keep an identifier's
/// surroundings readable while one hit cannot flood the agent's context.
pub const MAX_LINE_CHARS: usize = 300;

/// Most context lines accepted on either side of a match: beyond this a
/// caller should read the file (or use `get_function_at_line`) instead.
pub const MAX_CONTEXT_LINES: usize = 20;

/// Size limit for a compiled regex (and its lazy DFA): ten times the regex
/// crate's default, which long alternations of identifiers can exceed, yet
/// small enough that a pathological pattern fails fast instead of eating memory.
const REGEX_SIZE_LIMIT: usize = 100 * (1 << 20);

/// Directories the search never enters even when not ignored: the tool's own
/// state and version-control internals.
const ALWAYS_EXCLUDED: &[&str] = &["!.code-intel/", "!.git/"];

/// How letter case is treated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseMode {
    /// Exact case.
    Sensitive,
    /// Ignore case.
    Insensitive,
    /// Ignore case unless the pattern has an upper-case letter (ripgrep's `-S`).
    #[default]
    Smart,
}

/// What to search for and where.
#[derive(Clone, Debug)]
pub struct TextQuery {
    /// A regular expression (Rust `regex` syntax), or a literal string when
    /// `literal` is set.
    pub pattern: String,
    pub literal: bool,
    pub case: CaseMode,
    /// Only whole-word matches.
    pub word: bool,
    /// ripgrep-style globs over repository-relative paths; a leading `!`
    /// excludes. When any include glob is given, only matching files are searched.
    pub globs: Vec<String>,
    /// ripgrep file type names (`py`, `php`, `js`, `rust`, ...).
    pub file_types: Vec<String>,
    pub before_context: usize,
    pub after_context: usize,
    /// Matches returned at most (the search stops once it has them).
    pub max_results: usize,
    /// Search hidden files and directories (dot-files) too.
    pub include_hidden: bool,
    /// Walker threads; 0 = one per core.
    pub threads: usize,
}

impl Default for TextQuery {
    fn default() -> Self {
        Self {
            pattern: String::new(),
            literal: false,
            case: CaseMode::default(),
            word: false,
            globs: Vec::new(),
            file_types: Vec::new(),
            before_context: 0,
            after_context: 0,
            max_results: 100,
            include_hidden: false,
            threads: 0,
        }
    }
}

/// One matching line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct TextMatch {
    /// Repository-relative path.
    pub path: String,
    /// 1-based line number.
    pub line: u64,
    /// 1-based column (in characters) of the first match on the line.
    pub column: u64,
    /// The line, without its terminator (cut at [`MAX_LINE_CHARS`]).
    pub text: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub before: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
}

/// The outcome of a search.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TextSearchOutcome {
    pub matches: Vec<TextMatch>,
    /// Files read (after ignore rules, globs and types).
    pub files_searched: usize,
    /// Files with at least one returned match.
    pub files_matched: usize,
    /// More matches exist than were returned.
    pub truncated: bool,
}

/// A problem with the query itself.
#[derive(Debug, thiserror::Error)]
pub enum TextSearchError {
    #[error("invalid regular expression: {0} (set literal=true to search for the text as is)")]
    Pattern(String),
    #[error("the pattern is empty; give the text or regular expression to search for")]
    EmptyPattern,
    #[error("invalid glob {glob:?}: {reason}")]
    Glob { glob: String, reason: String },
    #[error("unknown file type {name:?}; known types include: {known}")]
    FileType { name: String, known: String },
}

/// Builds the line matcher for a query (shared with reference search).
///
/// # Errors
/// [`TextSearchError::Pattern`] or [`TextSearchError::EmptyPattern`].
pub fn build_matcher(query: &TextQuery) -> Result<RegexMatcher, TextSearchError> {
    if query.pattern.is_empty() {
        return Err(TextSearchError::EmptyPattern);
    }
    let mut builder = RegexMatcherBuilder::new();
    builder
        .line_terminator(Some(b'\n'))
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .fixed_strings(query.literal)
        .word(query.word);
    match query.case {
        CaseMode::Sensitive => {}
        CaseMode::Insensitive => {
            builder.case_insensitive(true);
        }
        CaseMode::Smart => {
            builder.case_smart(true);
        }
    }
    builder.build(&query.pattern).map_err(|e| TextSearchError::Pattern(e.to_string()))
}

/// Lists the files a query would search under `scopes` (all of the
/// repository when empty), sorted by path.
///
/// # Errors
/// [`TextSearchError::Glob`] or [`TextSearchError::FileType`].
pub fn list_files(root: &RepoRoot, scopes: &[RepoPath], query: &TextQuery) -> Result<Vec<PathBuf>, TextSearchError> {
    let mut overrides = OverrideBuilder::new(root.path());
    for glob in query.globs.iter().map(String::as_str).chain(ALWAYS_EXCLUDED.iter().copied()) {
        overrides
            .add(glob)
            .map_err(|e| TextSearchError::Glob { glob: glob.to_string(), reason: e.to_string() })?;
    }
    let overrides = overrides
        .build()
        .map_err(|e| TextSearchError::Glob { glob: query.globs.join(", "), reason: e.to_string() })?;

    let mut types = TypesBuilder::new();
    types.add_defaults();
    for name in &query.file_types {
        if !types.definitions().iter().any(|d| d.name() == name) {
            let known: Vec<String> = types.definitions().iter().map(|d| d.name().to_string()).collect();
            let sample = known.iter().take(40).cloned().collect::<Vec<_>>().join(", ");
            return Err(TextSearchError::FileType { name: name.clone(), known: format!("{sample}, ...") });
        }
        types.select(name);
    }
    let types = types
        .build()
        .map_err(|e| TextSearchError::FileType { name: query.file_types.join(", "), known: e.to_string() })?;

    let mut scopes_abs: Vec<PathBuf> = scopes.iter().map(|s| s.absolute().to_path_buf()).collect();
    if scopes_abs.is_empty() {
        scopes_abs.push(root.path().to_path_buf());
    }
    let mut walker = WalkBuilder::new(&scopes_abs[0]);
    for scope in &scopes_abs[1..] {
        walker.add(scope);
    }
    walker
        .hidden(!query.include_hidden)
        .follow_links(false)
        .require_git(false)
        .overrides(overrides)
        .types(types)
        .threads(query.threads);
    if !query.include_hidden {
        // `hidden(true)` alone lets a type or glob whitelist match re-admit
        // dot-files (`-t py` would search `.hidden.py`); prune them outright.
        walker.filter_entry(|entry| entry.depth() == 0 || !entry.file_name().to_string_lossy().starts_with('.'));
    }

    let files = Mutex::new(Vec::new());
    walker.build_parallel().run(|| {
        let files = &files;
        Box::new(move |entry| {
            if let Ok(entry) = entry
                && entry.file_type().is_some_and(|t| t.is_file())
            {
                files.lock().expect("file list lock").push(entry.into_path());
            }
            WalkState::Continue
        })
    });
    let mut files = files.into_inner().expect("file list lock");
    files.sort_unstable();
    files.dedup();
    Ok(files)
}

/// Searches the working tree.
///
/// # Errors
/// A [`TextSearchError`] naming what is wrong with the query.
pub fn search_text(root: &RepoRoot, scopes: &[RepoPath], query: &TextQuery) -> Result<TextSearchOutcome, TextSearchError> {
    let matcher = build_matcher(query)?;
    let files = list_files(root, scopes, query)?;
    Ok(search_files(root, &files, &matcher, query))
}

/// Searches the given files (absolute paths under `root`) in order.
#[must_use]
pub fn search_files(root: &RepoRoot, files: &[PathBuf], matcher: &RegexMatcher, query: &TextQuery) -> TextSearchOutcome {
    let before = query.before_context.min(MAX_CONTEXT_LINES);
    let after = query.after_context.min(MAX_CONTEXT_LINES);
    // One more than asked for, to know whether anything was left out.
    let wanted = query.max_results.saturating_add(1);
    let threads = if query.threads == 0 {
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
    } else {
        query.threads
    }
    .min(files.len().max(1));

    let next = AtomicUsize::new(0);
    let found = AtomicUsize::new(0);
    let slots: Vec<Mutex<Vec<TextMatch>>> = (0..files.len()).map(|_| Mutex::new(Vec::new())).collect();
    let searched = AtomicUsize::new(0);

    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut searcher = SearcherBuilder::new()
                    .line_number(true)
                    .before_context(before)
                    .after_context(after)
                    .binary_detection(BinaryDetection::quit(b'\x00'))
                    .max_matches(Some(wanted as u64))
                    .build();
                loop {
                    // Files are taken in order; once enough matches are in,
                    // no new file is started, so the searched files always form
                    // a prefix of the sorted list and the result is deterministic.
                    if found.load(Ordering::Acquire) >= wanted {
                        break;
                    }
                    let index = next.fetch_add(1, Ordering::AcqRel);
                    let Some(path) = files.get(index) else { break };
                    let rel = root.relative_of(path).unwrap_or_else(|| path.display().to_string());
                    let mut sink = CollectSink::new(rel, matcher);
                    if let Err(e) = search_one(&mut searcher, matcher, path, &mut sink) {
                        tracing::debug!(path = %path.display(), error = %e, "search_text: skipping unreadable file");
                    }
                    searched.fetch_add(1, Ordering::Relaxed);
                    let matches = sink.finish();
                    found.fetch_add(matches.len(), Ordering::AcqRel);
                    *slots[index].lock().expect("slot lock") = matches;
                }
            });
        }
    });

    let mut matches = Vec::new();
    let mut files_matched = 0;
    for slot in slots {
        let slot = slot.into_inner().expect("slot lock");
        if slot.is_empty() {
            continue;
        }
        if matches.len() < query.max_results {
            files_matched += 1;
        }
        matches.extend(slot);
        if matches.len() > query.max_results {
            break;
        }
    }
    let truncated = matches.len() > query.max_results;
    matches.truncate(query.max_results);
    TextSearchOutcome { matches, files_searched: searched.into_inner(), files_matched, truncated }
}

fn search_one(searcher: &mut Searcher, matcher: &RegexMatcher, path: &std::path::Path, sink: &mut CollectSink<'_>) -> std::io::Result<()> {
    searcher.search_path(matcher, path, sink)
}

/// Collects matches with their context lines.
struct CollectSink<'m> {
    path: String,
    matcher: &'m RegexMatcher,
    matches: Vec<TextMatch>,
    pending_before: Vec<String>,
}

impl<'m> CollectSink<'m> {
    fn new(path: String, matcher: &'m RegexMatcher) -> Self {
        Self { path, matcher, matches: Vec::new(), pending_before: Vec::new() }
    }

    fn finish(self) -> Vec<TextMatch> {
        self.matches
    }
}

impl Sink for CollectSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let bytes = mat.bytes();
        let column = self
            .matcher
            .find(bytes)
            .ok()
            .flatten()
            .map_or(1, |m| String::from_utf8_lossy(&bytes[..m.start()]).chars().count() as u64 + 1);
        self.matches.push(TextMatch {
            path: self.path.clone(),
            line: mat.line_number().unwrap_or(0),
            column,
            text: clip_line(bytes),
            before: std::mem::take(&mut self.pending_before),
            after: Vec::new(),
        });
        Ok(true)
    }

    fn context(&mut self, _searcher: &Searcher, context: &SinkContext<'_>) -> Result<bool, Self::Error> {
        let line = clip_line(context.bytes());
        match context.kind() {
            SinkContextKind::After => {
                if let Some(last) = self.matches.last_mut() {
                    last.after.push(line);
                }
            }
            SinkContextKind::Before | SinkContextKind::Other => self.pending_before.push(line),
        }
        Ok(true)
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, Self::Error> {
        self.pending_before.clear();
        Ok(true)
    }
}

/// Decodes a line (invalid UTF-8 replaced), drops its terminator and cuts it
/// at [`MAX_LINE_CHARS`] characters, marking the cut with `…`.
#[must_use]
pub fn clip_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end_matches(['\n', '\r']);
    if text.chars().count() <= MAX_LINE_CHARS {
        return text.to_string();
    }
    let mut out: String = text.chars().take(MAX_LINE_CHARS).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(files: &[(&str, &str)]) -> (tempfile::TempDir, RepoRoot) {
        let dir = tempfile::tempdir().unwrap();
        for (path, content) in files {
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, content).unwrap();
        }
        let root = RepoRoot::new(dir.path()).unwrap();
        (dir, root)
    }

    fn q(pattern: &str) -> TextQuery {
        TextQuery { pattern: pattern.to_string(), ..TextQuery::default() }
    }

    #[test]
    fn finds_regex_matches_in_path_order_with_columns() {
        let (_d, root) = repo(&[
            ("b.py", "def beta():\n    return alpha()\n"),
            ("a.py", "def alpha():\n    pass\n"),
        ]);
        let out = search_text(&root, &[], &q(r"alpha\(")).unwrap();
        let got: Vec<(&str, u64, u64)> = out.matches.iter().map(|m| (m.path.as_str(), m.line, m.column)).collect();
        assert_eq!(got, vec![("a.py", 1, 5), ("b.py", 2, 12)]);
        assert_eq!(out.files_searched, 2);
        assert_eq!(out.files_matched, 2);
        assert!(!out.truncated);
    }

    #[test]
    fn literal_case_and_word_options() {
        let (_d, root) = repo(&[("x.txt", "a.b\naxb\nFoo foo\nfoobar\n")]);
        let lit = search_text(&root, &[], &TextQuery { literal: true, ..q("a.b") }).unwrap();
        assert_eq!(lit.matches.len(), 1);
        let re = search_text(&root, &[], &q("a.b")).unwrap();
        assert_eq!(re.matches.len(), 2);
        let sensitive = search_text(&root, &[], &TextQuery { case: CaseMode::Sensitive, ..q("Foo") }).unwrap();
        assert_eq!(sensitive.matches.len(), 1);
        // Smart case: lower-case pattern ignores case.
        let smart = search_text(&root, &[], &q("foo")).unwrap();
        assert_eq!(smart.matches.len(), 2);
        let word = search_text(&root, &[], &TextQuery { word: true, case: CaseMode::Sensitive, ..q("foo") }).unwrap();
        assert_eq!(word.matches.iter().map(|m| m.line).collect::<Vec<_>>(), vec![3]);
    }

    #[test]
    fn context_lines_attach_to_their_match() {
        let (_d, root) = repo(&[("f.txt", "1\n2\nHIT\n4\n5\n6\n7\nHIT\n9\n")]);
        let out = search_text(&root, &[], &TextQuery { before_context: 1, after_context: 1, ..q("HIT") }).unwrap();
        assert_eq!(out.matches[0].before, vec!["2"]);
        assert_eq!(out.matches[0].after, vec!["4"]);
        assert_eq!(out.matches[1].before, vec!["7"]);
        assert_eq!(out.matches[1].after, vec!["9"]);
    }

    #[test]
    fn globs_types_ignore_files_and_binary_files() {
        let (_d, root) = repo(&[
            ("src/a.py", "needle\n"),
            ("src/b.php", "<?php // needle\n"),
            ("docs/c.md", "needle\n"),
            ("build/out.py", "needle\n"),
            (".gitignore", "build/\n"),
            (".hidden.py", "needle\n"),
            (".code-intel/state.txt", "needle\n"),
            ("bin.dat", "needle\0\0\0"),
        ]);
        let all = search_text(&root, &[], &q("needle")).unwrap();
        let paths: Vec<&str> = all.matches.iter().map(|m| m.path.as_str()).collect();
        assert_eq!(paths, vec!["docs/c.md", "src/a.py", "src/b.php"]);

        let py = search_text(&root, &[], &TextQuery { file_types: vec!["py".into()], ..q("needle") }).unwrap();
        assert_eq!(py.matches.iter().map(|m| m.path.as_str()).collect::<Vec<_>>(), vec!["src/a.py"]);
        let glob = search_text(&root, &[], &TextQuery { globs: vec!["src/**".into(), "!*.php".into()], ..q("needle") }).unwrap();
        assert_eq!(glob.matches.iter().map(|m| m.path.as_str()).collect::<Vec<_>>(), vec!["src/a.py"]);
        let hidden = search_text(&root, &[], &TextQuery { include_hidden: true, ..q("needle") }).unwrap();
        assert!(hidden.matches.iter().any(|m| m.path == ".hidden.py"));
        assert!(!hidden.matches.iter().any(|m| m.path.starts_with(".code-intel")));

        let scoped = search_text(&root, &[root.resolve("src").unwrap()], &q("needle")).unwrap();
        assert_eq!(scoped.matches.len(), 2);
    }

    #[test]
    fn truncation_is_deterministic_and_marked() {
        let files: Vec<(String, String)> =
            (0..50).map(|i| (format!("f{i:02}.txt"), "hit\nhit\n".to_string())).collect();
        let refs: Vec<(&str, &str)> = files.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let (_d, root) = repo(&refs);
        let first = search_text(&root, &[], &TextQuery { max_results: 7, ..q("hit") }).unwrap();
        assert!(first.truncated);
        assert_eq!(first.matches.len(), 7);
        assert_eq!(first.matches[6].path, "f03.txt");
        for threads in [1, 2, 4] {
            let again = search_text(&root, &[], &TextQuery { max_results: 7, threads, ..q("hit") }).unwrap();
            assert_eq!(again.matches, first.matches);
        }
        let exact = search_text(&root, &[], &TextQuery { max_results: 100, ..q("hit") }).unwrap();
        assert!(!exact.truncated);
        assert_eq!(exact.matches.len(), 100);
    }

    #[test]
    fn clear_errors() {
        let (_d, root) = repo(&[("a.txt", "x\n")]);
        let e = search_text(&root, &[], &q("(unclosed")).unwrap_err();
        assert!(e.to_string().contains("literal=true"), "{e}");
        let e = search_text(&root, &[], &TextQuery { file_types: vec!["klingon".into()], ..q("x") }).unwrap_err();
        assert!(e.to_string().contains("klingon"));
        let e = search_text(&root, &[], &TextQuery { globs: vec!["a[".into()], ..q("x") }).unwrap_err();
        assert!(e.to_string().contains("a["), "{e}");
        assert!(matches!(search_text(&root, &[], &q("")).unwrap_err(), TextSearchError::EmptyPattern));
    }

    #[test]
    fn long_lines_and_invalid_utf8_are_clipped_not_fatal() {
        let mut long = "x".repeat(1000);
        long.push_str(" needle\n");
        let (_d, root) = repo(&[("min.js", long.as_str())]);
        std::fs::write(root.path().join("latin1.txt"), b"caf\xe9 needle\n").unwrap();
        let out = search_text(&root, &[], &q("needle")).unwrap();
        assert_eq!(out.matches.len(), 2);
        assert!(out.matches.iter().any(|m| m.text.ends_with('…') && m.text.chars().count() == MAX_LINE_CHARS + 1));
        assert!(out.matches.iter().any(|m| m.text.contains('\u{fffd}')));
    }
}
