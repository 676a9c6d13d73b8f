//! Structure: a file's or a directory's outline from the chunk index,
//! nested the way the code is (classes > methods), with lines.

use std::collections::HashMap;

use code_intel_core::chunk::FALLBACK_KIND;
use code_intel_store::{ChunkSummary, Store, StoreError};
use schemars::JsonSchema;
use serde::Serialize;

/// Kinds that contain other definitions: a chunk without an explicit
/// parent is nested under the innermost chunk of one of these kinds that
/// spans it.
const CONTAINER_KINDS: &[&str] =
    &["class", "interface", "trait", "enum", "struct", "impl", "namespace", "module_block", "object", "component"];

/// One symbol of an outline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct OutlineNode {
    pub name: String,
    pub kind: String,
    pub start_line: u32,
    pub end_line: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<OutlineNode>,
}

impl OutlineNode {
    /// Number of nodes in this subtree.
    #[must_use]
    pub fn count(&self) -> usize {
        1 + self.children.iter().map(OutlineNode::count).sum::<usize>()
    }
}

/// The outline of one file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct FileOutline {
    pub path: String,
    /// Plugin that chunked the file (`fallback` for plain line windows).
    pub chunker: String,
    pub symbols: Vec<OutlineNode>,
}

/// Outline of the indexed file `path` (`None` when it is not indexed).
///
/// # Errors
/// Store errors.
pub fn outline_file(store: &Store, path: &str) -> Result<Option<FileOutline>, StoreError> {
    let chunks = store.file_chunks(path)?;
    if chunks.is_empty() {
        let indexed = store.indexed_files()?.iter().any(|f| f.path == path);
        return Ok(indexed.then(|| FileOutline { path: path.to_string(), chunker: String::new(), symbols: Vec::new() }));
    }
    let chunker = chunks[0].chunker.clone();
    Ok(Some(FileOutline { path: path.to_string(), chunker, symbols: nest(&chunks) }))
}

/// Outlines of every indexed file under `dir` (`""` = the repository), in
/// path order, reading at most `max_chunks` chunks.
/// Returns the outlines and whether the chunk limit cut the listing.
///
/// # Errors
/// Store errors.
pub fn outline_dir(store: &Store, dir: &str, max_chunks: usize) -> Result<(Vec<FileOutline>, bool), StoreError> {
    let chunks = store.chunks_under(dir, max_chunks.saturating_add(1))?;
    let truncated = chunks.len() > max_chunks;
    let mut by_file: Vec<(String, Vec<ChunkSummary>)> = Vec::new();
    for chunk in chunks.into_iter().take(max_chunks) {
        match by_file.last_mut() {
            Some((path, list)) if *path == chunk.path => list.push(chunk),
            _ => by_file.push((chunk.path.clone(), vec![chunk])),
        }
    }
    // The last file may have been cut mid-way by the limit.
    if truncated {
        by_file.pop();
    }
    let outlines = by_file
        .into_iter()
        .map(|(path, chunks)| FileOutline { chunker: chunks[0].chunker.clone(), symbols: nest(&chunks), path })
        .collect();
    Ok((outlines, truncated))
}

/// Nests a file's chunks: by the plugin's `parent` id where given, otherwise
/// under the innermost container chunk spanning them. Line-fallback windows
/// are left out when the file has real chunks.
#[must_use]
pub fn nest(chunks: &[ChunkSummary]) -> Vec<OutlineNode> {
    let has_real = chunks.iter().any(|c| c.kind != FALLBACK_KIND);
    let chunks: Vec<&ChunkSummary> = chunks.iter().filter(|c| !has_real || c.kind != FALLBACK_KIND).collect();
    let index_of: HashMap<&str, usize> = chunks.iter().enumerate().map(|(i, c)| (c.chunk_id.as_str(), i)).collect();

    let mut parent_of: Vec<Option<usize>> = vec![None; chunks.len()];
    for (i, chunk) in chunks.iter().enumerate() {
        parent_of[i] = chunk
            .parent
            .as_deref()
            .and_then(|p| index_of.get(p).copied())
            .filter(|&p| p != i)
            .or_else(|| {
                chunks
                    .iter()
                    .enumerate()
                    .filter(|(j, c)| {
                        *j != i
                            && CONTAINER_KINDS.contains(&c.kind.as_str())
                            && c.start_line <= chunk.start_line
                            && chunk.end_line <= c.end_line
                            && (c.start_line, std::cmp::Reverse(c.end_line)) < (chunk.start_line, std::cmp::Reverse(chunk.end_line))
                    })
                    .min_by_key(|(_, c)| c.end_line - c.start_line)
                    .map(|(j, _)| j)
            });
    }
    // Break any cycle a malformed parent chain could form.
    for i in 0..chunks.len() {
        let mut seen = vec![i];
        let mut cur = parent_of[i];
        while let Some(p) = cur {
            if seen.contains(&p) {
                parent_of[i] = None;
                break;
            }
            seen.push(p);
            cur = parent_of[p];
        }
    }
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); chunks.len()];
    let mut roots = Vec::new();
    for (i, parent) in parent_of.iter().enumerate() {
        match parent {
            Some(p) => children[*p].push(i),
            None => roots.push(i),
        }
    }
    fn build(i: usize, chunks: &[&ChunkSummary], children: &[Vec<usize>]) -> OutlineNode {
        let c = chunks[i];
        let mut kids: Vec<OutlineNode> = children[i].iter().map(|&k| build(k, chunks, children)).collect();
        kids.sort_by_key(|k| (k.start_line, std::cmp::Reverse(k.end_line)));
        OutlineNode {
            name: c.name.clone(),
            kind: c.kind.clone(),
            start_line: c.start_line,
            end_line: c.end_line,
            signature: c.signature.as_deref().map(|s| s.lines().next().unwrap_or("").trim().to_string()),
            children: kids,
        }
    }
    let mut out: Vec<OutlineNode> = roots.into_iter().map(|r| build(r, &chunks, &children)).collect();
    out.sort_by_key(|k| (k.start_line, std::cmp::Reverse(k.end_line)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{chunk, index_files};

    #[test]
    fn nests_methods_under_classes_by_parent_or_span() {
        let mut method = chunk("m1", "method", "save", Some("User.save"), (3, 5));
        method.parent = Some("c1".into());
        let (_d, _root, store) = index_files(&[
            (
                "app/user.py",
                "",
                vec![
                    chunk("c1", "class", "User", Some("User"), (1, 10)),
                    method,
                    chunk("m2", "method", "delete", Some("User.delete"), (7, 9)),
                    chunk("f1", "function", "helper", None, (12, 14)),
                ],
            ),
            ("app/other.py", "", vec![chunk("f", "function", "other", None, (1, 2))]),
            ("README.md", "", code_intel_core::line_chunks("README.md", "a\nb\n")),
        ]);
        let file = outline_file(&store, "app/user.py").unwrap().unwrap();
        assert_eq!(file.symbols.len(), 2);
        assert_eq!(file.symbols[0].name, "User");
        let kids: Vec<&str> = file.symbols[0].children.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(kids, vec!["save", "delete"]);
        assert_eq!(file.symbols[1].name, "helper");
        assert!(outline_file(&store, "missing.py").unwrap().is_none());

        let (dir, truncated) = outline_dir(&store, "app", 100).unwrap();
        assert!(!truncated);
        assert_eq!(dir.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), vec!["app/other.py", "app/user.py"]);
        let (cut, truncated) = outline_dir(&store, "", 2).unwrap();
        assert!(truncated);
        assert_eq!(cut.len(), 1);
    }
}
