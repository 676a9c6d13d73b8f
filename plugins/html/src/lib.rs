//! HTML chunk strategy (a code-intel plugin, built as a WebAssembly
//! component) for `*.html` and `*.htm` pages.
//!
//! One page becomes:
//! - an `html_document` chunk named after the file: the page with the inner
//!   content of its element chunks elided, with the title, element ids,
//!   scripts and stylesheets in metadata;
//! - an `html_element` chunk per semantic element (`section`, `article`,
//!   `nav`, `header`, `footer`, `main`, `aside`, `form`, `dialog`, `table`)
//!   and per element with an `id`, named `tag#id` (or `tag`), when it spans
//!   at least [`MIN_ELEMENT_LINES`] lines; nested element chunks are elided
//!   from its content and name it as their parent;
//! - a `script` or `style` chunk per inline `<script>` or `<style>` block of
//!   at least [`MIN_ELEMENT_LINES`] lines.
//!
//! Blade templates (`*.blade.php`) belong to the blade plugin.

use std::collections::{BTreeSet, HashMap};

use code_intel_plugin_sdk::text::{elide, one_line};
use code_intel_plugin_sdk::{
    ChunkBuilder, ChunkOutcome, ChunkSet, LineIndex, Plugin, PluginError, PluginInfo, SourceFile, Span,
    export_plugin, parse,
};

/// The plugin type exported to the host.
pub struct Html;

const PRIORITY: i32 = 10;

/// Elements shorter than this many lines are listed, not chunked.
pub const MIN_ELEMENT_LINES: u32 = 3;

/// Elements that are chunks even without an id.
const SEMANTIC: &[&str] = &["section", "article", "nav", "header", "footer", "main", "aside", "form", "dialog", "table"];

const QUERY: &str = r#"
(element (start_tag (tag_name) @tag) @open (end_tag)? @close) @element
((attribute (attribute_name) @attr.name [(attribute_value) (quoted_attribute_value)] @attr.value)
  (#any-of? @attr.name "id" "class" "action" "method" "role" "aria-label" "src" "href" "rel" "type"))
(script_element (start_tag) @open (raw_text)? @raw) @script
(style_element (start_tag) @open (raw_text)? @raw) @style
"#;

struct Element {
    tag: String,
    node: Span,
    /// Between the start and the end tag.
    inner: Option<Span>,
    attrs: Vec<(String, String)>,
}

impl Element {
    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

impl Plugin for Html {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "html".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "HTML pages: semantic elements and elements with ids, inline scripts and styles, title, scripts and stylesheets".into(),
            languages: vec!["html".into()],
            file_patterns: vec!["**/*.html".into(), "**/*.htm".into()],
            priority: PRIORITY,
        }
    }

    fn chunk(file: SourceFile) -> Result<ChunkOutcome, PluginError> {
        if file.content.trim().is_empty() {
            return Ok(ChunkOutcome::Chunks(Vec::new()));
        }
        Ok(ChunkOutcome::Chunks(chunk_file(&file.path, &file.content)?))
    }
}

export_plugin!(Html);

/// `file:` symbol of a relative `src`/`href`, resolved against the page's directory.
fn file_symbol(target: &str, from_path: &str) -> Option<String> {
    if target.is_empty() || target.contains("://") || target.starts_with("//") || target.starts_with('#') || target.contains(':') {
        return None;
    }
    let target = target.split(['?', '#']).next().unwrap_or(target);
    let mut parts: Vec<&str> = if target.starts_with('/') {
        Vec::new()
    } else {
        from_path.rsplit_once('/').map_or_else(Vec::new, |(dir, _)| dir.split('/').collect())
    };
    for part in target.trim_start_matches('/').split('/') {
        match part {
            "." | "" => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(format!("file:{}", parts.join("/")))
}

#[allow(clippy::too_many_lines)]
fn chunk_file(path: &str, source: &str) -> Result<Vec<code_intel_plugin_sdk::Chunk>, PluginError> {
    let tree = parse("html", source)?;
    let matches = tree.matches(QUERY)?;
    let lines = LineIndex::new(source);

    let mut elements: Vec<Element> = Vec::new();
    // (start tag start, name, value)
    let mut attrs: Vec<(u32, String, String)> = Vec::new();
    let mut raws: Vec<(&str, Span, Option<Span>, u32)> = Vec::new();
    for m in &matches {
        if let (Some(el), Some(tag), Some(open)) = (m.get("element"), m.get("tag"), m.get("open")) {
            let inner = m.get("close").map(|close| lines.span(open.end_byte, close.start_byte));
            elements.push(Element { tag: tag.text.to_ascii_lowercase(), node: Span::of(el), inner, attrs: Vec::new() });
        } else if let (Some(name), Some(value)) = (m.get("attr.name"), m.get("attr.value")) {
            let value = value.text.trim_matches(['"', '\'']).trim().to_string();
            // The attribute's tag starts at the last `<` before it.
            let tag_start = source[..name.start_byte as usize].rfind('<').unwrap_or(0);
            attrs.push((u32::try_from(tag_start).unwrap_or(0), name.text.to_ascii_lowercase(), value));
        } else if let (Some(node), Some(open)) = (m.get("script").or_else(|| m.get("style")), m.get("open")) {
            raws.push((node.name, Span::of(node), m.get("raw").map(Span::of), open.end_byte));
        }
    }
    // The first `<title>`'s text.
    let title: Option<String> = elements
        .iter()
        .find(|e| e.tag == "title")
        .and_then(|e| e.inner)
        .map(|inner| one_line(inner.text(source)))
        .filter(|t| !t.is_empty());
    elements.sort_by_key(|e| (e.node.start_byte, std::cmp::Reverse(e.node.end_byte)));
    let at: HashMap<u32, usize> = elements.iter().enumerate().map(|(i, e)| (e.node.start_byte, i)).collect();
    let mut ids: Vec<String> = Vec::new();
    let mut related: BTreeSet<String> = BTreeSet::new();
    let mut scripts: Vec<String> = Vec::new();
    let mut stylesheets: Vec<String> = Vec::new();
    for (start, name, value) in attrs {
        if let Some(&i) = at.get(&start) {
            elements[i].attrs.push((name.clone(), value.clone()));
        }
        // `<script src>` and `<link rel="stylesheet" href>` are not `element`s with
        // an end tag everywhere; read them from the source tag.
        let tag_text = &source[start as usize..];
        let tag_name: String = tag_text[1..].chars().take_while(char::is_ascii_alphanumeric).collect::<String>().to_ascii_lowercase();
        match (tag_name.as_str(), name.as_str()) {
            ("script", "src") => {
                related.extend(file_symbol(&value, path));
                scripts.push(value);
            }
            ("link", "href") => {
                let tag_end = tag_text.find('>').unwrap_or(tag_text.len());
                if tag_text[..tag_end].contains("stylesheet") {
                    related.extend(file_symbol(&value, path));
                    stylesheets.push(value);
                }
            }
            (_, "id") if !value.is_empty() && !value.contains(['{', '<']) => {
                ids.push(value.clone());
                related.insert(format!("html:{tag_name}#{value}"));
            }
            _ => {}
        }
    }

    // Which elements are chunks.
    let chunked: Vec<usize> = (0..elements.len())
        .filter(|&i| {
            let e = &elements[i];
            (SEMANTIC.contains(&e.tag.as_str()) || e.attr("id").is_some_and(|v| !v.is_empty()))
                && e.node.end_line - e.node.start_line + 1 >= MIN_ELEMENT_LINES
        })
        .collect();
    let mut raw_chunks: Vec<(&str, Span, Option<Span>)> = raws
        .iter()
        .filter(|(_, node, _, _)| node.end_line - node.start_line + 1 >= MIN_ELEMENT_LINES)
        .map(|(kind, node, raw, _)| (*kind, *node, *raw))
        .collect();
    raw_chunks.sort_by_key(|(_, n, _)| n.start_byte);

    let name_of = |e: &Element| match e.attr("id") {
        Some(id) if !id.is_empty() => format!("{}#{id}", e.tag),
        _ => e.tag.clone(),
    };
    let mut chunks = ChunkSet::new(source);
    let mut ids_of: HashMap<usize, String> = HashMap::new();
    // Holes: inner content of chunked elements and bodies of script/style chunks.
    let hole_of = |i: usize| elements[i].inner.map(|s| (s.range(), " … "));
    let raw_holes: Vec<(std::ops::Range<usize>, &str)> =
        raw_chunks.iter().filter_map(|(_, _, raw)| raw.map(|r| (r.range(), " … "))).collect();

    let file_name = path.rsplit('/').next().unwrap_or(path);
    let mut doc_holes: Vec<(std::ops::Range<usize>, &str)> = chunked.iter().filter_map(|&i| hole_of(i)).collect();
    doc_holes.extend(raw_holes.iter().cloned());
    let nonempty = |v: Vec<String>| Some(v).filter(|l| !l.is_empty());
    let mut document = ChunkBuilder::new("html_document", file_name)
        .id("html_document")
        .qualified_name(path)
        .span(lines.span(0, u32::try_from(source.len()).unwrap_or(u32::MAX)))
        .content(elide(source, 0..source.len(), &doc_holes))
        .signature(title.clone().map_or_else(|| file_name.to_string(), |t| format!("{file_name}: {t}")))
        .related_all(related)
        .meta_opt("title", title.clone())
        .meta_opt("ids", nonempty(ids))
        .meta_opt("scripts", nonempty(scripts))
        .meta_opt("stylesheets", nonempty(stylesheets));
    if tree.has_errors() {
        document = document.meta("syntax_errors", true);
    }
    chunks.push(document);

    for &i in &chunked {
        let e = &elements[i];
        let parent = chunked.iter().rev().find(|&&j| j != i && elements[j].node.contains(&e.node)).and_then(|j| ids_of.get(j).cloned());
        let holes: Vec<(std::ops::Range<usize>, &str)> = chunked
            .iter()
            .filter(|&&j| j != i && e.node.contains(&elements[j].node))
            .filter_map(|&j| hole_of(j))
            .chain(raw_holes.iter().filter(|(r, _)| e.node.range().contains(&r.start)).cloned())
            .collect();
        let name = name_of(e);
        let open_end = e.inner.map_or(e.node.end_byte, |s| s.start_byte);
        let mut builder = ChunkBuilder::new("html_element", name.clone())
            .id(format!("html_element:{name}"))
            .parent(parent)
            .span(e.node)
            .content(elide(source, e.node.range(), &holes))
            .signature(one_line(&source[e.node.start_byte as usize..open_end as usize]))
            .meta("tag", e.tag.clone());
        if let Some(id) = e.attr("id").filter(|v| !v.is_empty()) {
            builder = builder.meta("html_id", id).related(format!("html:{}#{id}", e.tag));
        }
        if let Some(class) = e.attr("class") {
            builder = builder.meta_opt("classes", nonempty(class.split_whitespace().map(str::to_string).collect()));
        }
        for (attr, key) in [("action", "action"), ("method", "method"), ("role", "role"), ("aria-label", "aria_label")] {
            builder = builder.meta_opt(key, e.attr(attr).map(str::to_string));
        }
        let id = chunks.push(builder);
        ids_of.insert(i, id);
    }
    for (kind, node, _) in raw_chunks {
        let parent = chunked.iter().rev().find(|&&j| elements[j].node.contains(&node)).and_then(|j| ids_of.get(j).cloned());
        let open = raws.iter().find(|r| r.1 == node).map_or(node.end_byte, |r| r.3);
        chunks.push(
            ChunkBuilder::new(kind, kind)
                .id(kind.to_string())
                .parent(parent)
                .span(node)
                .signature(one_line(&source[node.start_byte as usize..open as usize]))
                .meta("language", if kind == "script" { "javascript" } else { "css" }),
        );
    }
    Ok(chunks.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files() {
        assert_eq!(file_symbol("js/app.js", "public/index.html").as_deref(), Some("file:public/js/app.js"));
        assert_eq!(file_symbol("../css/site.css?v=2", "public/shop/index.html").as_deref(), Some("file:public/css/site.css"));
        assert_eq!(file_symbol("/assets/app.css", "public/index.html").as_deref(), Some("file:assets/app.css"));
        assert_eq!(file_symbol("https://cdn.example.com/x.js", "index.html"), None);
        assert_eq!(file_symbol("mailto:a@b.c", "index.html"), None);
    }
}
