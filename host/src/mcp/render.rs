//! Compact text renderings of tool results: what an agent reads when its
//! client shows the text content rather than the structured result.
//! grep-like lines, outlines with indentation, no JSON noise.

use std::fmt::Write as _;

use code_intel_search::structure::OutlineNode;

use super::code_tools::{
    AnalyzeStructureResult, FindDefinitionsResult, FindReferencesResult, FunctionAtLineResult, RepoMapResult,
    SearchTextResult,
};

fn notes(out: &mut String, notes: &[String], truncated: bool) {
    for note in notes {
        let _ = writeln!(out, "note: {note}");
    }
    if truncated && notes.is_empty() {
        let _ = writeln!(out, "note: truncated");
    }
}

/// A result's linked files, one per line under it: `-> path (kind via)`
/// when the result names the file, `<- path` when the file names the result.
pub fn linked_files(out: &mut String, files: &[code_intel_search::links::LinkedFile]) {
    for f in files {
        let arrow = if f.direction == "in" { "<-" } else { "->" };
        let line = f.line.map(|l| format!(":{l}")).unwrap_or_default();
        let _ = writeln!(out, "    {arrow} {}{line} ({} {})", f.path, f.kind, f.via);
    }
}

pub fn search_text(r: &SearchTextResult) -> String {
    let mut out = format!(
        "{} match(es) in {} file(s) ({} searched){}\n",
        r.matches.len(),
        r.files_matched,
        r.files_searched,
        if r.truncated { ", truncated" } else { "" }
    );
    let mut last_path = "";
    for m in &r.matches {
        if m.path != last_path {
            let _ = writeln!(out, "{}", m.path);
            last_path = &m.path;
        }
        let first = m.line.saturating_sub(m.before.len() as u64);
        for (i, line) in m.before.iter().enumerate() {
            let _ = writeln!(out, "{:>6}-{line}", first + i as u64);
        }
        let _ = writeln!(out, "{:>6}:{}", m.line, m.text);
        for (i, line) in m.after.iter().enumerate() {
            let _ = writeln!(out, "{:>6}-{line}", m.line + 1 + i as u64);
        }
    }
    notes(&mut out, &r.notes, r.truncated);
    out
}

pub fn definitions(r: &FindDefinitionsResult) -> String {
    let mut out = format!("{} definition(s) of {:?} ({} match)\n", r.definitions.len(), r.symbol, r.match_used);
    for d in &r.definitions {
        let name = d.qualified_name.as_deref().unwrap_or(&d.name);
        let _ = writeln!(out, "{}:{}-{} {} {}", d.path, d.start_line, d.end_line, d.kind, name);
        if let Some(sig) = &d.signature {
            let _ = writeln!(out, "    {}", sig.lines().next().unwrap_or("").trim());
        }
        if let Some(doc) = &d.docstring {
            let _ = writeln!(out, "    \"{doc}\"");
        }
        linked_files(&mut out, &d.linked_files);
    }
    notes(&mut out, &r.notes, r.truncated);
    out
}

pub fn references(r: &FindReferencesResult) -> String {
    let mut out = format!(
        "{} usage(s) of {:?} in {} file(s); {} definition site(s) excluded\n",
        r.total_hits,
        r.searched,
        r.files,
        r.definitions_excluded.len()
    );
    for g in &r.groups {
        match &g.enclosing {
            Some(c) => {
                let name = c.qualified_name.as_deref().unwrap_or(&c.name);
                let _ = writeln!(out, "{} — in {} {} ({}-{})", g.path, c.kind, name, c.start_line, c.end_line);
            }
            None => {
                let _ = writeln!(out, "{} — at file level", g.path);
            }
        }
        for h in &g.hits {
            let _ = writeln!(out, "{:>6}:{}", h.line, h.text);
        }
    }
    notes(&mut out, &r.notes, r.truncated);
    out
}

fn outline(out: &mut String, nodes: &[OutlineNode], depth: usize) {
    for n in nodes {
        let sig = n.signature.as_deref().filter(|s| !s.is_empty());
        let label = match sig {
            Some(s) => s.to_string(),
            None => format!("{} {}", n.kind, n.name),
        };
        let _ = writeln!(out, "{:>6}-{:<6}{}{}", n.start_line, n.end_line, "  ".repeat(depth + 1), label);
        outline(out, &n.children, depth + 1);
    }
}

pub fn structure(r: &AnalyzeStructureResult) -> String {
    let mut out = String::new();
    for f in &r.files {
        let _ = writeln!(out, "{} [{}]", f.path, f.chunker);
        outline(&mut out, &f.symbols, 0);
    }
    if r.files.is_empty() {
        let _ = writeln!(out, "no indexed symbols under {}", r.path);
    }
    notes(&mut out, &r.notes, r.truncated);
    out
}

pub fn function_at_line(r: &FunctionAtLineResult) -> String {
    let mut out = String::new();
    match &r.function {
        Some(f) => {
            let scopes: Vec<String> = r.enclosing.iter().map(|s| format!("{} {}", s.kind, s.name)).collect();
            let name = f.qualified_name.as_deref().unwrap_or(&f.name);
            let _ = writeln!(out, "{}:{}-{} {} {}", r.path, f.start_line, f.end_line, f.kind, name);
            if !scopes.is_empty() {
                let _ = writeln!(out, "inside: {}", scopes.join(" > "));
            }
            if let Some(code) = &f.code {
                for (i, line) in code.lines().enumerate() {
                    let _ = writeln!(out, "{:>6}│{line}", f.start_line as usize + i);
                }
            }
        }
        None => {
            let _ = writeln!(out, "no function contains {}:{}", r.path, r.line);
        }
    }
    notes(&mut out, &r.notes, r.truncated);
    out
}

pub fn repo_map(r: &RepoMapResult) -> String {
    let mut out = r.map.clone();
    let _ = writeln!(
        out,
        "({} of {} symbols, ~{} tokens{})",
        r.symbols_shown,
        r.symbols_total,
        r.tokens_estimated,
        if r.truncated { ", truncated to the budget" } else { "" }
    );
    out
}

pub fn index_status(r: &super::code_tools::IndexStatusResult) -> String {
    let mut out = String::new();
    let state = match &r.index {
        super::state::IndexPhase::Starting => "starting".to_string(),
        super::state::IndexPhase::Syncing { files_done, files_total } => format!("syncing ({files_done}/{files_total} files)"),
        super::state::IndexPhase::Ready => "ready".to_string(),
        super::state::IndexPhase::Failed { message } => format!("failed: {message}"),
    };
    let _ = writeln!(out, "index: {state}  vector search: {}", r.vector_search);
    let _ = writeln!(out, "files: {}  chunks: {}  source: {} KiB  index: {} KiB", r.files, r.chunks, r.indexed_bytes / 1024, r.index_size_bytes / 1024);
    let kinds: Vec<String> = r.chunks_by_kind.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let _ = writeln!(out, "chunks by kind: {}", kinds.join(", "));
    let chunkers: Vec<String> = r.by_chunker.iter().map(|(k, c)| format!("{k} {} files/{} chunks", c.files, c.chunks)).collect();
    let _ = writeln!(out, "by chunker: {}", chunkers.join(", "));
    let _ = writeln!(out, "plugin failures: {} (fallback files after failure: {})", r.plugin_failures, r.fallback_after_failure);
    for f in &r.recent_plugin_failures {
        let _ = writeln!(out, "  {} [{} {}]: {}", f.path, f.plugin, f.kind, f.message);
    }
    if let Some(s) = &r.last_sync {
        let _ = writeln!(
            out,
            "last sync: +{} ~{} -{} ({} unchanged) in {} ms{}",
            s.added,
            s.modified,
            s.deleted,
            s.unchanged,
            s.elapsed_ms,
            if s.cancelled { ", cancelled" } else { "" }
        );
    }
    for w in &r.config_warnings {
        let _ = writeln!(out, "config warning: {w}");
    }
    out
}

pub fn semantic(r: &super::code_tools::SemanticSearchResult) -> String {
    let mut out = format!(
        "{} result(s) for {:?} [{} ranking, {}; vector search: {}]\n",
        r.results.len(),
        r.query,
        r.mode,
        r.confidence,
        r.vector_search
    );
    for m in &r.map_hits {
        let _ = writeln!(out, "map {:.2} {:?} -> {}", m.score, m.text, m.symbols.join(", "));
    }
    if r.short_circuit {
        let _ = writeln!(out, "(answered from the map of agreements; code not searched)");
    }
    if let Some(english) = &r.english_query {
        let _ = writeln!(out, "(also searched in English as: {english})");
    }
    // Fused reciprocal-rank scores of the shared store are small (at most
    // 2/61): four decimals tell them apart.
    let mut places = 2;
    if let Some(s) = r.shared.as_ref().filter(|s| s.status == "searched") {
        places = 4;
        let _ = writeln!(
            out,
            "(shared store {}: {} repositories searched in {:.0} ms)",
            s.store.as_deref().unwrap_or(""),
            s.repositories.unwrap_or(0),
            s.query_ms.unwrap_or(0.0)
        );
    }
    for h in &r.results {
        let name = h.qualified_name.as_deref().unwrap_or(&h.name);
        let repository = h.repository.as_deref().map(|r| format!("{r}  ")).unwrap_or_default();
        let _ = writeln!(out, "{:.places$} {repository}{}:{}-{} {} {} [{}]", h.score, h.path, h.start_line, h.end_line, h.kind, name, h.source);
        linked_files(&mut out, &h.linked_files);
    }
    notes(&mut out, &r.notes, r.truncated);
    out
}

pub fn sync(r: &super::code_tools::SyncIndexResult) -> String {
    let mut out = format!(
        "sync ({}): +{} added, ~{} modified, -{} deleted, {} renamed, {} unchanged; {} chunks written; {} files / {} chunks in the index ({} ms){}\n",
        r.target,
        r.added,
        r.modified,
        r.deleted,
        r.renamed.len(),
        r.unchanged,
        r.chunks_written,
        r.total_files,
        r.total_chunks,
        r.elapsed_ms,
        if r.cancelled { ", cancelled" } else { "" }
    );
    if let Some(n) = r.embedded_chunks {
        let _ = writeln!(out, "{n} chunk(s) embedded; vector search: {}", r.vector_search);
    } else {
        let _ = writeln!(out, "vector search: {}", r.vector_search);
    }
    if r.fallback_files > 0 || r.plugin_failures > 0 {
        let _ = writeln!(out, "{} file(s) as line windows, {} plugin failure(s)", r.fallback_files, r.plugin_failures);
    }
    for s in &r.skipped {
        let _ = writeln!(out, "skipped {s}");
    }
    notes(&mut out, &r.notes, false);
    out
}
