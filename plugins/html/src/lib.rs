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
//!
//! Parsing is the host's (`syntax` import): the plugin asks for the tree's
//! named nodes once ([`Tree::nodes`], all kinds, so that every node's parent
//! is its syntax parent), picks the elements, attributes, scripts and styles
//! out of that table in one pass comparing kind ids ([`scan`]), then
//! post-processes what it found (ids, nesting, holes, chunks).

use std::collections::BTreeSet;

use code_intel_plugin_sdk::text::{elide, one_line};
use code_intel_plugin_sdk::{
    ChunkBuilder, ChunkOutcome, ChunkSet, KindId, LineIndex, NodeTable, Plugin, PluginError, PluginInfo,
    SourceFile, Span, export_plugin, parse,
};
#[cfg(doc)]
use code_intel_plugin_sdk::Tree;

/// The plugin type exported to the host.
pub struct Html;

const PRIORITY: i32 = 10;

/// Elements shorter than this many lines are listed, not chunked.
pub const MIN_ELEMENT_LINES: u32 = 3;

/// Elements that are chunks even without an id.
const SEMANTIC: &[&str] = &["section", "article", "nav", "header", "footer", "main", "aside", "form", "dialog", "table"];

/// Attributes the plugin reads (names as written: matched case-sensitively).
const ATTRIBUTES: &[&str] = &["id", "class", "action", "method", "role", "aria-label", "src", "href", "rel", "type"];

struct Element<'s> {
    tag: String,
    node: Span,
    /// Between the start and the end tag.
    inner: Option<Span>,
    attrs: Vec<(&'static str, &'s str)>,
}

impl Element<'_> {
    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }
}

/// An inline `<script>` or `<style>` block.
struct Raw {
    /// `script` or `style`.
    kind: &'static str,
    node: Span,
    /// Its content, when not empty.
    raw: Option<Span>,
    /// End of its start tag.
    open_end: u32,
}

/// An attribute the plugin reads: the start of its tag (the last `<` before
/// it), its name and its value, unquoted and trimmed.
struct Attr<'s> {
    tag_start: u32,
    name: &'static str,
    value: &'s str,
}

/// Ids of the kinds the plugin looks at; `None` for a kind the file does
/// not contain.
struct Kinds {
    element: Option<KindId>,
    start_tag: Option<KindId>,
    end_tag: Option<KindId>,
    tag_name: Option<KindId>,
    attribute: Option<KindId>,
    attribute_name: Option<KindId>,
    attribute_value: Option<KindId>,
    quoted_attribute_value: Option<KindId>,
    script_element: Option<KindId>,
    style_element: Option<KindId>,
    raw_text: Option<KindId>,
}

impl Kinds {
    fn of(nodes: &NodeTable<'_>) -> Self {
        Self {
            element: nodes.kind_id("element"),
            start_tag: nodes.kind_id("start_tag"),
            end_tag: nodes.kind_id("end_tag"),
            tag_name: nodes.kind_id("tag_name"),
            attribute: nodes.kind_id("attribute"),
            attribute_name: nodes.kind_id("attribute_name"),
            attribute_value: nodes.kind_id("attribute_value"),
            quoted_attribute_value: nodes.kind_id("quoted_attribute_value"),
            script_element: nodes.kind_id("script_element"),
            style_element: nodes.kind_id("style_element"),
            raw_text: nodes.kind_id("raw_text"),
        }
    }
}

/// What one pass over the node table finds.
struct Scan<'s> {
    /// Elements with a start tag, in document order.
    elements: Vec<Element<'s>>,
    /// Attributes named in [`ATTRIBUTES`] that have a value, in document order.
    attrs: Vec<Attr<'s>>,
    /// Inline scripts and styles, in document order.
    raws: Vec<Raw>,
}

/// Sorts the nodes the plugin needs out of the table, in one pass. Each
/// rule is one pattern of the query the plugin used to run:
/// `(element (start_tag (tag_name) @tag) @open (end_tag)? @close) @element`,
/// `(attribute (attribute_name) @name [(attribute_value) (quoted_attribute_value)] @value)`
/// with the name one of [`ATTRIBUTES`], and
/// `(script_element (start_tag) @open (raw_text)? @raw)` (`style_element` alike).
fn scan<'s>(nodes: &'s NodeTable<'s>, lines: &LineIndex, source: &'s str) -> Scan<'s> {
    let k = Kinds::of(nodes);
    let mut found = Scan { elements: Vec::new(), attrs: Vec::new(), raws: Vec::new() };
    for node in nodes.iter() {
        let kind = Some(node.kind_id());
        if kind == k.element {
            let mut children = node.children();
            let Some((open, tag)) =
                children.by_ref().filter(|c| c.is(k.start_tag)).find_map(|open| Some((open, open.children().find(|t| t.is(k.tag_name))?)))
            else {
                continue;
            };
            let inner = children.find(|c| c.is(k.end_tag)).map(|close| lines.span(open.end_byte(), close.start_byte()));
            found.elements.push(Element { tag: tag.text().to_ascii_lowercase(), node: Span::from(node), inner, attrs: Vec::new() });
        } else if kind == k.attribute {
            let mut children = node.children();
            let Some(name) = children.by_ref().find(|c| c.is(k.attribute_name)) else { continue };
            let written = name.text();
            let Some(&known) = ATTRIBUTES.iter().find(|a| **a == written) else { continue };
            let Some(value) = children.find(|c| c.is(k.attribute_value) || c.is(k.quoted_attribute_value)) else { continue };
            let value = value.text().trim_matches(['"', '\'']).trim();
            // The attribute's tag starts at the last `<` before it.
            let tag_start = source[..name.start_byte() as usize].rfind('<').unwrap_or(0);
            found.attrs.push(Attr { tag_start: u32::try_from(tag_start).unwrap_or(0), name: known, value });
        } else if kind == k.script_element || kind == k.style_element {
            let mut children = node.children();
            let Some(open) = children.by_ref().find(|c| c.is(k.start_tag)) else { continue };
            let raw = children.find(|c| c.is(k.raw_text)).map(Span::from);
            let kind = if kind == k.script_element { "script" } else { "style" };
            found.raws.push(Raw { kind, node: Span::from(node), raw, open_end: open.end_byte() });
        }
    }
    found
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
    code_intel_plugin_sdk::text::resolve_path(from_path, target).map(|path| format!("file:{path}"))
}

#[allow(clippy::too_many_lines)]
fn chunk_file(path: &str, source: &str) -> Result<Vec<code_intel_plugin_sdk::Chunk>, PluginError> {
    let tree = parse("html", source)?;
    let nodes = tree.nodes(&[])?;
    let lines = LineIndex::new(source);
    let Scan { mut elements, attrs, raws } = scan(&nodes, &lines, source);

    // The first `<title>`'s text: the first to end (a query finished its
    // matches in that order), i.e. the first title or the first title
    // nested in it, and so on.
    let mut first_title: Option<usize> = None;
    for (i, e) in elements.iter().enumerate().filter(|(_, e)| e.tag == "title") {
        match first_title {
            Some(t) if !elements[t].node.contains(&e.node) => break,
            _ => first_title = Some(i),
        }
    }
    let title: Option<String> =
        first_title.and_then(|i| elements[i].inner).map(|inner| one_line(inner.text(source))).filter(|t| !t.is_empty());
    // Already in document order; outer before inner at the same start.
    elements.sort_by_key(|e| (e.node.start_byte, std::cmp::Reverse(e.node.end_byte)));
    let mut ids: Vec<String> = Vec::new();
    let mut related: BTreeSet<String> = BTreeSet::new();
    let mut scripts: Vec<String> = Vec::new();
    let mut stylesheets: Vec<String> = Vec::new();
    for Attr { tag_start: start, name, value } in attrs {
        // The element starting at the tag (the last of several).
        let at = elements.partition_point(|e| e.node.start_byte <= start);
        if let Some(e) = at.checked_sub(1).map(|i| &mut elements[i]).filter(|e| e.node.start_byte == start) {
            e.attrs.push((name, value));
        }
        // `<script src>` and `<link rel="stylesheet" href>` are not `element`s with
        // an end tag everywhere; read them from the source tag.
        let tag_text = &source[start as usize..];
        let tag_len = tag_text[1..].bytes().take_while(u8::is_ascii_alphanumeric).count();
        let tag_name = &tag_text[1..=tag_len];
        match name {
            "src" if tag_name.eq_ignore_ascii_case("script") => {
                related.extend(file_symbol(value, path));
                scripts.push(value.to_string());
            }
            "href" if tag_name.eq_ignore_ascii_case("link") => {
                let tag_end = tag_text.find('>').unwrap_or(tag_text.len());
                if tag_text[..tag_end].contains("stylesheet") {
                    related.extend(file_symbol(value, path));
                    stylesheets.push(value.to_string());
                }
            }
            "id" if !value.is_empty() && !value.contains(['{', '<']) => {
                ids.push(value.to_string());
                related.insert(format!("html:{}#{value}", tag_name.to_ascii_lowercase()));
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
        .filter(|r| r.node.end_line - r.node.start_line + 1 >= MIN_ELEMENT_LINES)
        .map(|r| (r.kind, r.node, r.raw))
        .collect();
    raw_chunks.sort_by_key(|(_, n, _)| n.start_byte);

    let name_of = |e: &Element| match e.attr("id") {
        Some(id) if !id.is_empty() => format!("{}#{id}", e.tag),
        _ => e.tag.clone(),
    };
    let mut chunks = ChunkSet::new(source);
    // Element index -> id of its chunk.
    let mut ids_of: Vec<Option<String>> = vec![None; elements.len()];
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
        let parent = chunked.iter().rev().find(|&&j| j != i && elements[j].node.contains(&e.node)).and_then(|&j| ids_of[j].clone());
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
        ids_of[i] = Some(id);
    }
    for (kind, node, _) in raw_chunks {
        let parent = chunked.iter().rev().find(|&&j| elements[j].node.contains(&node)).and_then(|&j| ids_of[j].clone());
        let open = raws.iter().find(|r| r.node == node).map_or(node.end_byte, |r| r.open_end);
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
