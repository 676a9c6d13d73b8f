//! References: where a symbol is used. Whole-word text hits over the
//! working tree (so a file edited since the last sync is still current),
//! minus the symbol's definition sites, grouped by the chunk that encloses
//! each hit (the function or method doing the using).

use std::collections::{BTreeMap, HashMap};

use code_intel_core::chunk::FALLBACK_KIND;
use code_intel_core::paths::{RepoPath, RepoRoot};
use code_intel_store::{ChunkSummary, NameMatch, Store};
use schemars::JsonSchema;
use serde::Serialize;

use crate::definitions::{leaf_name, under};
use crate::text::{CaseMode, TextMatch, TextQuery, TextSearchError, search_text};

/// Definitions considered when removing definition sites from the hits: a
/// name defined in more places than this is so common that its remaining
/// definition lines are reported as references rather than slow every call.
const MAX_DEFINITION_SITES: usize = 500;

/// A reference request.
#[derive(Clone, Debug)]
pub struct ReferenceQuery {
    /// The symbol; a qualified name is searched by its last segment.
    pub symbol: String,
    /// Search only these files/directories (empty = the whole repository).
    pub scopes: Vec<RepoPath>,
    pub globs: Vec<String>,
    pub file_types: Vec<String>,
    /// Hits returned at most.
    pub max_hits: usize,
    /// Also return the definition lines themselves.
    pub include_definitions: bool,
}

/// One line using the symbol.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ReferenceHit {
    pub line: u64,
    pub column: u64,
    pub text: String,
}

/// The chunk around a group of hits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct EnclosingChunk {
    pub name: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qualified_name: Option<String>,
    pub start_line: u32,
    pub end_line: u32,
}

/// Hits in one file inside one enclosing chunk (or at file level when no
/// chunk encloses them, e.g. the file is not indexed yet).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ReferenceGroup {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enclosing: Option<EnclosingChunk>,
    pub hits: Vec<ReferenceHit>,
}

/// A definition line left out of the references.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct DefinitionSite {
    pub path: String,
    pub line: u64,
    pub kind: String,
}

/// What [`find_references`] found.
#[derive(Clone, Debug, Serialize)]
pub struct ReferencesFound {
    /// The identifier searched for (the last segment of the symbol).
    pub searched: String,
    pub groups: Vec<ReferenceGroup>,
    pub total_hits: usize,
    pub files: usize,
    pub definitions_excluded: Vec<DefinitionSite>,
    /// More hits exist than `max_hits`.
    pub truncated: bool,
}

/// Errors of a reference search.
#[derive(Debug, thiserror::Error)]
pub enum ReferenceError {
    #[error("the symbol is empty; give the name of a function, class, method or variable")]
    EmptySymbol,
    #[error(transparent)]
    Text(#[from] TextSearchError),
    #[error(transparent)]
    Store(#[from] code_intel_store::StoreError),
}

/// Finds the references of a symbol. `store` is `None` when no index exists
/// yet: hits are then grouped per file and definition sites are not removed.
///
/// # Errors
/// [`ReferenceError`].
pub fn find_references(root: &RepoRoot, store: Option<&Store>, query: &ReferenceQuery) -> Result<ReferencesFound, ReferenceError> {
    let searched = leaf_name(&query.symbol).to_string();
    if searched.is_empty() {
        return Err(ReferenceError::EmptySymbol);
    }
    let definitions: Vec<ChunkSummary> = match store {
        Some(store) => {
            let mut defs = store.definitions(&query.symbol, NameMatch::Exact, &[], MAX_DEFINITION_SITES)?;
            defs.retain(|d| d.name == searched);
            defs
        }
        None => Vec::new(),
    };

    // Search for more than asked, since definition lines are removed after.
    let text = TextQuery {
        pattern: searched.clone(),
        literal: true,
        case: CaseMode::Sensitive,
        word: true,
        globs: query.globs.clone(),
        file_types: query.file_types.clone(),
        max_results: query.max_hits.saturating_add(definitions.len()),
        ..TextQuery::default()
    };
    let found = search_text(root, &query.scopes, &text)?;
    let mut more = found.truncated;

    let mut hits_by_file: BTreeMap<String, Vec<TextMatch>> = BTreeMap::new();
    for m in found.matches {
        hits_by_file.entry(m.path.clone()).or_default().push(m);
    }

    // A definition site is the first hit inside the definition's chunk on
    // the line that carries its signature (decorators and docblocks come
    // before it), or the first hit in the chunk when there is no signature.
    let mut excluded: Vec<DefinitionSite> = Vec::new();
    for def in &definitions {
        let Some(hits) = hits_by_file.get(&def.path) else { continue };
        let in_chunk = hits.iter().filter(|h| h.line >= u64::from(def.start_line) && h.line <= u64::from(def.end_line));
        let signature_head = def.signature.as_deref().map(|s| s.lines().next().unwrap_or("").trim().to_string());
        let mut site = None;
        for hit in in_chunk {
            let line = hit.text.trim();
            let matches_signature = signature_head
                .as_deref()
                .is_none_or(|head| !head.is_empty() && (head.starts_with(line) || line.starts_with(head) || line.contains(head)));
            if matches_signature {
                site = Some(hit.line);
                break;
            }
        }
        let site = site.or_else(|| {
            hits.iter()
                .find(|h| h.line >= u64::from(def.start_line) && h.line <= u64::from(def.end_line))
                .map(|h| h.line)
        });
        if let Some(line) = site
            && !excluded.iter().any(|e| e.path == def.path && e.line == line)
        {
            excluded.push(DefinitionSite { path: def.path.clone(), line, kind: def.kind.clone() });
        }
    }
    if !query.include_definitions {
        for site in &excluded {
            if let Some(hits) = hits_by_file.get_mut(&site.path) {
                hits.retain(|h| h.line != site.line);
            }
        }
    }

    // Keep the first `max_hits` in path/line order.
    let mut kept = 0usize;
    let mut groups = Vec::new();
    let mut files = 0usize;
    let mut chunk_cache: HashMap<String, Vec<ChunkSummary>> = HashMap::new();
    for (path, hits) in hits_by_file {
        if hits.is_empty() {
            continue;
        }
        if kept >= query.max_hits {
            more = true;
            break;
        }
        files += 1;
        let chunks = match store {
            Some(store) => chunk_cache.entry(path.clone()).or_insert_with(|| store.file_chunks(&path).unwrap_or_default()),
            None => chunk_cache.entry(path.clone()).or_default(),
        };
        let mut file_groups: Vec<ReferenceGroup> = Vec::new();
        for hit in hits {
            if kept >= query.max_hits {
                more = true;
                break;
            }
            kept += 1;
            let enclosing = innermost(chunks, hit.line).map(|c| EnclosingChunk {
                name: c.name.clone(),
                kind: c.kind.clone(),
                qualified_name: c.qualified_name.clone(),
                start_line: c.start_line,
                end_line: c.end_line,
            });
            let entry = ReferenceHit { line: hit.line, column: hit.column, text: hit.text.trim().to_string() };
            match file_groups.last_mut() {
                Some(group) if group.enclosing == enclosing => group.hits.push(entry),
                _ => file_groups.push(ReferenceGroup { path: path.clone(), enclosing, hits: vec![entry] }),
            }
        }
        groups.extend(file_groups);
    }
    let scope_prefixes: Vec<&str> = query.scopes.iter().map(RepoPath::relative).collect();
    excluded.retain(|e| scope_prefixes.is_empty() || scope_prefixes.iter().any(|p| under(&e.path, p)));
    Ok(ReferencesFound { searched, groups, total_hits: kept, files, definitions_excluded: excluded, truncated: more })
}

/// The innermost chunk containing `line`: a real chunk over a line-fallback
/// window, the shortest span among those.
#[must_use]
pub fn innermost(chunks: &[ChunkSummary], line: u64) -> Option<&ChunkSummary> {
    chunks
        .iter()
        .filter(|c| u64::from(c.start_line) <= line && line <= u64::from(c.end_line))
        .min_by_key(|c| (c.kind == FALLBACK_KIND, c.end_line - c.start_line, std::cmp::Reverse(c.start_line)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{chunk, index_files};

    #[test]
    fn hits_minus_definitions_grouped_by_enclosing_chunk() {
        let (_dir, root, store) = index_files(&[
            (
                "app/users.py",
                "@cached\ndef load_user(id):\n    return db.get(id)\n\ndef show(id):\n    u = load_user(id)\n    return load_user(id).name\n",
                vec![
                    {
                        let mut c = chunk("f1", "function", "load_user", Some("app.users.load_user"), (1, 3));
                        c.signature = Some("def load_user(id):".into());
                        c
                    },
                    chunk("f2", "function", "show", Some("app.users.show"), (5, 7)),
                ],
            ),
            ("app/views.py", "from app.users import load_user\nload_user_count = 1\n", vec![]),
        ]);
        let q = ReferenceQuery {
            symbol: "app.users.load_user".into(),
            scopes: vec![],
            globs: vec![],
            file_types: vec![],
            max_hits: 100,
            include_definitions: false,
        };
        let found = find_references(&root, Some(&store), &q).unwrap();
        assert_eq!(found.searched, "load_user");
        assert_eq!(found.definitions_excluded, vec![DefinitionSite { path: "app/users.py".into(), line: 2, kind: "function".into() }]);
        // Two hits inside `show`, one at file level in views.py (word boundary: not load_user_count).
        assert_eq!(found.total_hits, 3);
        assert_eq!(found.groups.len(), 2);
        assert_eq!(found.groups[0].enclosing.as_ref().unwrap().name, "show");
        assert_eq!(found.groups[0].hits.iter().map(|h| h.line).collect::<Vec<_>>(), vec![6, 7]);
        assert_eq!(found.groups[1].path, "app/views.py");
        assert!(found.groups[1].enclosing.is_none());
        assert!(!found.truncated);

        let limited = find_references(&root, Some(&store), &ReferenceQuery { max_hits: 1, ..q.clone() }).unwrap();
        assert_eq!(limited.total_hits, 1);
        assert!(limited.truncated);

        let with_defs = find_references(&root, Some(&store), &ReferenceQuery { include_definitions: true, ..q }).unwrap();
        assert_eq!(with_defs.total_hits, 4);
    }
}
