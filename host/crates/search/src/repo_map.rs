//! The repository map: a token-budgeted overview of the most important
//! symbols, ranked by PageRank over the reference graph (as aider's repo map
//! does). Nodes are definition chunks; a chunk that references an identifier
//! links to the chunks defining it. Symbols used from many places, by
//! symbols that are themselves used a lot, rank first.

use std::collections::HashMap;
use std::fmt::Write as _;

use code_intel_core::chunk::FALLBACK_KIND;
use code_intel_store::{Store, StoreError};
use schemars::JsonSchema;
use serde::Serialize;

use crate::definitions::{leaf_name, under};

/// PageRank damping factor: the probability of following a reference rather
/// than jumping anywhere; 0.85 is the value of the original paper and of aider.
pub const DAMPING: f64 = 0.85;
/// Upper bound on PageRank iterations; convergence on code graphs of
/// 10^5 nodes takes 30-60.
pub const MAX_ITERATIONS: usize = 100;
/// Convergence threshold on the L1 change of the rank vector.
pub const TOLERANCE: f64 = 1e-9;
/// Characters per token used to estimate the map's size: the usual rule of
/// thumb for code with BPE tokenizers (aider estimates the same way).
pub const CHARS_PER_TOKEN: usize = 4;
/// Identifiers at least this long that look like code names (snake_case,
/// camelCase) are specific and weigh more (aider's heuristic).
const SPECIFIC_NAME_LEN: usize = 8;
/// Weight multiplier for specific identifiers.
const SPECIFIC_WEIGHT: f64 = 10.0;
/// Weight multiplier for private (`_x`) identifiers and for names defined in
/// more than [`COMMON_DEFINITIONS`] places (`get`, `run`): their edges say little.
const WEAK_WEIGHT: f64 = 0.1;
const COMMON_DEFINITIONS: usize = 5;
/// Personalisation weight of the symbols in `focus` files, relative to 1 for
/// every other symbol: enough to pull their neighbourhood to the top.
const FOCUS_WEIGHT: f64 = 100.0;

/// Chunk kinds that summarise a whole file (imports and top-level names):
/// they take part in the graph (their references count) but are not shown
/// as symbols of the map.
const SUMMARY_KINDS: &[&str] = &["module", "file"];

/// A repo-map request.
#[derive(Clone, Debug)]
pub struct RepoMapQuery {
    /// Only symbols under this directory (or file); `""` = everything.
    pub path_prefix: String,
    /// Files the caller is working on: the map favours what they use.
    pub focus: Vec<String>,
    /// Budget of the rendered map, in estimated tokens.
    pub max_tokens: usize,
}

/// One symbol of the map.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct MapSymbol {
    pub name: String,
    pub kind: String,
    pub line: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    pub rank: f64,
}

/// One file of the map with its chosen symbols in line order.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct MapFile {
    pub path: String,
    pub rank: f64,
    pub symbols: Vec<MapSymbol>,
}

/// The map.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RepoMap {
    pub files: Vec<MapFile>,
    /// The rendered map (what an agent reads).
    pub text: String,
    pub tokens_estimated: usize,
    pub symbols_shown: usize,
    pub symbols_total: usize,
    /// Some ranked symbols did not fit in the budget.
    pub truncated: bool,
}

struct Node {
    path: String,
    kind: String,
    name: String,
    start_line: u32,
    end_line: u32,
    signature: Option<String>,
    refs: Vec<String>,
}

/// Builds the map.
///
/// # Errors
/// Store errors (including malformed reference lists).
pub fn repo_map(store: &Store, query: &RepoMapQuery) -> Result<RepoMap, StoreError> {
    let nodes = load_nodes(store, &query.path_prefix)?;
    let ranks = rank(&nodes, &query.focus);
    Ok(render(&nodes, &ranks, query.max_tokens))
}

fn load_nodes(store: &Store, prefix: &str) -> Result<Vec<Node>, StoreError> {
    let mut stmt = store.conn().prepare(
        "SELECT f.path, c.kind, c.name, c.start_line, c.end_line, c.signature, c.refs
         FROM chunks c JOIN files f ON f.id = c.file_id
         WHERE c.kind <> ?1 ORDER BY f.path, c.start_line",
    )?;
    let rows = stmt.query_map([FALLBACK_KIND], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, u32>(3)?,
            r.get::<_, u32>(4)?,
            r.get::<_, Option<String>>(5)?,
            r.get::<_, String>(6)?,
        ))
    })?;
    let prefix = prefix.trim_end_matches('/');
    let mut nodes = Vec::new();
    for row in rows {
        let (path, kind, name, start_line, end_line, signature, refs) = row?;
        if !under(&path, prefix) {
            continue;
        }
        let refs: Vec<String> = serde_json::from_str(&refs)?;
        nodes.push(Node { path, kind, name, start_line, end_line, signature, refs });
    }
    Ok(nodes)
}

fn is_specific(name: &str) -> bool {
    name.len() >= SPECIFIC_NAME_LEN
        && (name.contains('_') || name.chars().skip(1).any(char::is_uppercase) && name.chars().any(char::is_lowercase))
}

/// Weighted personalised PageRank over the reference graph.
fn rank(nodes: &[Node], focus: &[String]) -> Vec<f64> {
    let n = nodes.len();
    if n == 0 {
        return Vec::new();
    }
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, node) in nodes.iter().enumerate() {
        by_name.entry(node.name.as_str()).or_default().push(i);
    }
    // Edges u -> v with weights, summed per pair.
    let mut edges: Vec<HashMap<usize, f64>> = vec![HashMap::new(); n];
    for (u, node) in nodes.iter().enumerate() {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for r in &node.refs {
            *counts.entry(leaf_name(r)).or_default() += 1;
        }
        for (ident, count) in counts {
            let Some(targets) = by_name.get(ident) else { continue };
            let targets: Vec<usize> = targets.iter().copied().filter(|&t| t != u).collect();
            if targets.is_empty() {
                continue;
            }
            let mut weight = (count as f64).sqrt();
            if is_specific(ident) {
                weight *= SPECIFIC_WEIGHT;
            }
            if ident.starts_with('_') || targets.len() > COMMON_DEFINITIONS {
                weight *= WEAK_WEIGHT;
            }
            let share = weight / targets.len() as f64;
            for t in targets {
                *edges[u].entry(t).or_default() += share;
            }
        }
    }
    let out_weight: Vec<f64> = edges.iter().map(|e| e.values().sum()).collect();

    let mut personal: Vec<f64> =
        nodes.iter().map(|node| if focus.iter().any(|f| under(&node.path, f.trim_end_matches('/'))) { FOCUS_WEIGHT } else { 1.0 }).collect();
    let total: f64 = personal.iter().sum();
    personal.iter_mut().for_each(|p| *p /= total);

    let mut ranks = personal.clone();
    for _ in 0..MAX_ITERATIONS {
        let dangling: f64 = ranks.iter().zip(&out_weight).filter(|(_, w)| **w == 0.0).map(|(r, _)| r).sum();
        let mut next: Vec<f64> = personal.iter().map(|p| (1.0 - DAMPING + DAMPING * dangling) * p).collect();
        for (u, targets) in edges.iter().enumerate() {
            if out_weight[u] == 0.0 {
                continue;
            }
            let flow = DAMPING * ranks[u] / out_weight[u];
            for (&v, &w) in targets {
                next[v] += flow * w;
            }
        }
        let change: f64 = next.iter().zip(&ranks).map(|(a, b)| (a - b).abs()).sum();
        ranks = next;
        if change < TOLERANCE {
            break;
        }
    }
    ranks
}

fn symbol_line(node: &Node) -> String {
    let head = node.signature.as_deref().and_then(|s| s.lines().next()).map(str::trim).filter(|s| !s.is_empty());
    match head {
        Some(sig) => sig.to_string(),
        None => format!("{} {}", node.kind, node.name),
    }
}

fn render(nodes: &[Node], ranks: &[f64], max_tokens: usize) -> RepoMap {
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.sort_by(|&a, &b| ranks[b].total_cmp(&ranks[a]).then_with(|| nodes[a].path.cmp(&nodes[b].path)).then(nodes[a].start_line.cmp(&nodes[b].start_line)));

    let budget_chars = max_tokens.saturating_mul(CHARS_PER_TOKEN);
    let mut chosen: Vec<usize> = Vec::new();
    let mut used = 0usize;
    let mut files_seen: HashMap<&str, ()> = HashMap::new();
    let mut truncated = false;
    for &i in &order {
        let node = &nodes[i];
        if SUMMARY_KINDS.contains(&node.kind.as_str()) {
            continue;
        }
        // Cost: the symbol's line (5-digit line number, a 3-byte bar, a
        // newline), plus the file header the first time.
        let mut cost = symbol_line(node).len() + 10;
        if !files_seen.contains_key(node.path.as_str()) {
            cost += node.path.len() + 2;
        }
        if used + cost > budget_chars {
            truncated = true;
            continue;
        }
        used += cost;
        files_seen.insert(node.path.as_str(), ());
        chosen.push(i);
    }

    let mut files: Vec<MapFile> = Vec::new();
    let mut file_index: HashMap<&str, usize> = HashMap::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    for &i in &chosen {
        let path = nodes[i].path.as_str();
        let fi = *file_index.entry(path).or_insert_with(|| {
            files.push(MapFile { path: path.to_string(), rank: 0.0, symbols: Vec::new() });
            members.push(Vec::new());
            files.len() - 1
        });
        members[fi].push(i);
    }
    let mut text = String::new();
    for (file, list) in files.iter_mut().zip(members.iter_mut()) {
        list.sort_by_key(|&i| (nodes[i].start_line, std::cmp::Reverse(nodes[i].end_line)));
        file.rank = list.iter().map(|&i| ranks[i]).sum();
        let _ = writeln!(text, "{}:", file.path);
        for (pos, &i) in list.iter().enumerate() {
            let node = &nodes[i];
            let depth = list[..pos]
                .iter()
                .filter(|&&j| nodes[j].start_line <= node.start_line && node.end_line <= nodes[j].end_line)
                .count();
            let _ = writeln!(text, "{:>5}│{}{}", node.start_line, "  ".repeat(depth), symbol_line(node));
            file.symbols.push(MapSymbol {
                name: node.name.clone(),
                kind: node.kind.clone(),
                line: node.start_line,
                signature: node.signature.as_deref().and_then(|s| s.lines().next()).map(|s| s.trim().to_string()),
                rank: ranks[i],
            });
        }
    }
    let tokens_estimated = text.len().div_ceil(CHARS_PER_TOKEN);
    let symbols_total = nodes.iter().filter(|n| !SUMMARY_KINDS.contains(&n.kind.as_str())).count();
    RepoMap { files, text, tokens_estimated, symbols_shown: chosen.len(), symbols_total, truncated }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{chunk, index_files};

    fn with_refs(mut c: code_intel_core::Chunk, refs: &[&str]) -> code_intel_core::Chunk {
        c.references = refs.iter().map(|s| (*s).to_string()).collect();
        c
    }

    #[test]
    fn widely_used_symbols_rank_first_and_budget_is_kept() {
        let mut files = vec![(
            "core/db.py".to_string(),
            vec![chunk("f1", "function", "get_connection", None, (1, 5)), chunk("f2", "function", "unused_helper", None, (7, 9))],
        )];
        files.push(("app/__init__.py".to_string(), vec![with_refs(chunk("m", "module", "app", None, (1, 40)), &["get_connection"])]));
        for i in 0..6 {
            files.push((
                format!("app/view{i}.py"),
                vec![with_refs(chunk("v", "function", &format!("view{i}"), None, (1, 3)), &["get_connection", "print"])],
            ));
        }
        let refs: Vec<(&str, &str, Vec<code_intel_core::Chunk>)> =
            files.iter().map(|(p, c)| (p.as_str(), "", c.clone())).collect();
        let (_d, _root, store) = index_files(&refs);

        let map = repo_map(&store, &RepoMapQuery { path_prefix: String::new(), focus: vec![], max_tokens: 1000 }).unwrap();
        assert_eq!(map.files[0].path, "core/db.py");
        assert_eq!(map.files[0].symbols[0].name, "get_connection");
        let top = map.files[0].symbols.iter().find(|s| s.name == "get_connection").unwrap().rank;
        let low = map.files[0].symbols.iter().find(|s| s.name == "unused_helper").unwrap().rank;
        assert!(top > 3.0 * low, "{top} vs {low}");
        assert!(map.text.starts_with("core/db.py:\n"));
        assert!(!map.truncated);
        assert_eq!(map.symbols_total, 8);
        assert!(!map.text.contains("module "), "{}", map.text);

        let small = repo_map(&store, &RepoMapQuery { path_prefix: String::new(), focus: vec![], max_tokens: 15 }).unwrap();
        assert!(small.truncated);
        assert!(small.symbols_shown >= 1);
        assert!(small.tokens_estimated <= 15, "{}", small.tokens_estimated);
        assert_eq!(small.files[0].symbols[0].name, "get_connection");

        let focused = repo_map(&store, &RepoMapQuery { path_prefix: String::new(), focus: vec!["app/view3.py".into()], max_tokens: 10 }).unwrap();
        assert_eq!(focused.files[0].symbols[0].name, "view3");

        let scoped = repo_map(&store, &RepoMapQuery { path_prefix: "app".into(), focus: vec![], max_tokens: 1000 }).unwrap();
        assert!(scoped.files.iter().all(|f| f.path.starts_with("app/")));
    }
}
