//! Search: everything that answers a query about the repository.
//!
//! - [`text`]: regex or literal search over the working tree with ripgrep's
//!   grep crates (`ignore` + `grep-regex` + `grep-searcher`).
//! - [`definitions`]: symbol -> definition sites from the chunk index.
//! - [`links`]: the files a result is tied to (model, migrations, routes,
//!   views, ...), attached to definitions and ranked hits.
//! - [`references`]: symbol -> whole-word usages minus definitions, grouped
//!   by enclosing chunk.
//! - [`structure`]: nested outlines of files and directories.
//! - [`repo_map`]: a token-budgeted, PageRank-ranked overview of the
//!   repository's most important symbols.
//! - [`lexical`]: FTS5 BM25 with an exact-identifier boost.
//! - [`semantic`] and [`hybrid`]: vector search over the `forest` and `map`
//!   collections (with the map short-circuit) and the fused ranking;
//!   [`files`]: ranking by file (evidence per file, rank fusion, priors);
//!   [`glossary`]: English words for the Japanese vocabulary of a request;
//!   [`topic`]: whether a request is about software at all.
//!
//! Depends on `code-intel-core`, `code-intel-store`, `code-intel-embed` and
//! `code-intel-vector`; knows nothing of MCP or plugins.

pub mod definitions;
pub mod files;
pub mod glossary;
pub mod hybrid;
pub mod lexical;
pub mod links;
pub mod loanwords;
pub mod pairs;
pub mod quoted;
pub mod references;
pub mod repo_map;
pub mod semantic;
pub mod structure;
pub mod text;
pub mod topic;
pub mod vocabulary;

#[cfg(test)]
pub(crate) mod test_support {
    use code_intel_core::paths::RepoRoot;
    use code_intel_core::{Chunk, ChunkedFile};
    use code_intel_store::{FileRecord, Store};

    /// A chunk with the given identity and span.
    pub fn chunk(id: &str, kind: &str, name: &str, qualified: Option<&str>, lines: (u32, u32)) -> Chunk {
        Chunk {
            id: id.into(),
            kind: kind.into(),
            name: name.into(),
            qualified_name: qualified.map(Into::into),
            parent: None,
            start_line: lines.0,
            end_line: lines.1,
            start_byte: 0,
            end_byte: 1,
            content: format!("{kind} {name}"),
            signature: Some(format!("{kind} {name}()")),
            docstring: Some("Loads things.\nMore detail.".into()),
            related_symbols: vec![],
            references: vec![],
            metadata: code_intel_core::Metadata::empty(),
        }
    }

    /// `c` holding `content`.
    pub fn with_content(mut c: Chunk, content: &str) -> Chunk {
        c.content = content.into();
        c
    }

    /// Indexes each `(path, chunk)` as a file of its own, beside 20 files
    /// about something else (invoices), so that the request's words are
    /// rare in the index.
    pub fn index_among_unrelated(files: Vec<(String, Chunk)>) -> (tempfile::TempDir, RepoRoot, Store) {
        let invoice = with_content(chunk("c", "class", "Invoice", None, (1, 9)), "invoice totals and taxes");
        let mut all = files;
        all.extend((0..20).map(|i| (format!("app/Billing/Invoice{i}.php"), invoice.clone())));
        let files: Vec<(&str, &str, Vec<Chunk>)> = all.iter().map(|(path, c)| (path.as_str(), "", vec![c.clone()])).collect();
        index_files(&files)
    }

    /// Writes files into a temporary repository and their given chunks into
    /// an in-memory store.
    pub fn index_files(files: &[(&str, &str, Vec<Chunk>)]) -> (tempfile::TempDir, RepoRoot, Store) {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open_in_memory().unwrap();
        for (path, content, chunks) in files {
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(&full, content).unwrap();
            let chunked = ChunkedFile { chunks: chunks.clone(), chunker: "test".into(), ..Default::default() };
            let file = FileRecord { path: (*path).into(), sha256: "00".into(), size: content.len() as i64, mtime_ns: 0 };
            store.write(|w| w.replace_file(&file, &chunked, 0).map(drop)).unwrap();
        }
        let root = RepoRoot::new(dir.path()).unwrap();
        (dir, root, store)
    }
}
