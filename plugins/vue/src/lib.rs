//! Vue single-file component chunk strategy (a code-intel plugin, built as a
//! WebAssembly component) for `*.vue` files.
//!
//! The file is parsed once with the host's `html` grammar, which finds the
//! blocks (`<template>`, `<script>`, `<script setup>`, `<style>`, custom
//! blocks) and the template's elements. Each script block is parsed as
//! JavaScript or TypeScript (`lang="ts"`, `"tsx"`, `"jsx"`) on its own
//! ([`code_intel_plugin_sdk::parse_embedded`]), with positions reported in
//! the file, so that its chunks carry the file's own bytes and lines. One
//! component becomes:
//! - a `component` chunk named after the file (`user-card.vue` ->
//!   `UserCard`): an outline of its blocks, props, emits, models, slots,
//!   imported and registered components; the components its template uses
//!   are its references;
//! - a `template` chunk: the template block, with the inner content of
//!   nested elements elided when it is larger than the embedding window
//!   (each elided element is then a `template_element` chunk of its own);
//! - per script block, the JavaScript/TypeScript chunks of
//!   `code-intel-js-support`: a `module` chunk (`module` for `<script>`,
//!   `module:setup` for `<script setup>`) whose parent is the component, and
//!   its functions, classes, interfaces, ...;
//! - a `style` chunk per style block (`lang`, `scoped`, `module` in
//!   metadata) and a `custom_block` chunk per custom block (`<i18n>`,
//!   `<docs>`).

mod script;

use std::collections::{BTreeMap, BTreeSet};

use code_intel_js_support::{push_script_chunks, resolve_import};
use code_intel_plugin_sdk::text::{cleandoc, elide, one_line};
use code_intel_plugin_sdk::{
    Chunk, ChunkBuilder, ChunkOutcome, ChunkSet, LineIndex, MAX_CHUNK_BYTES, NodeRef, NodeTable,
    Plugin, PluginError, PluginInfo, SourceFile, Span, export_plugin, parse, parse_embedded,
};
use serde_json::Value;

/// The plugin type exported to the host.
pub struct Vue;

const PRIORITY: i32 = 10;

/// Template elements shorter than this many lines are never chunks of their own.
const MIN_ELEMENT_LINES: u32 = 3;

/// Vue's built-in components and elements: not references to components.
fn is_builtin(name: &str) -> bool {
    // A `match` on strings compiles to a switch on the length and a few
    // comparisons, not one comparison per entry.
    matches!(
        name,
        "component" | "transition" | "transition-group" | "keep-alive" | "slot" | "teleport" | "suspense" |
        "template" | "Component" | "Transition" | "TransitionGroup" | "KeepAlive" | "Teleport" | "Suspense"
    )
}

impl Plugin for Vue {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "vue".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Vue single-file components: component outline (props, emits, components), template, script blocks as JavaScript/TypeScript, styles".into(),
            languages: vec!["vue".into()],
            file_patterns: vec!["**/*.vue".into()],
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

export_plugin!(Vue);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum BlockKind {
    Template,
    Script,
    Style,
    Custom,
}

struct Block<'t> {
    kind: BlockKind,
    tag: String,
    /// The whole block, tags included.
    span: Span,
    /// The start tag.
    open: Span,
    /// Between the tags.
    inner: Span,
    attrs: Vec<(String, Option<String>)>,
    node: NodeRef<'t>,
}

impl Block<'_> {
    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_deref().unwrap_or(""))
    }

    fn has(&self, name: &str) -> bool {
        self.attrs.iter().any(|(n, _)| n == name)
    }
}

/// Attributes of a start tag's text (`<script setup lang="ts">`): names
/// lowercased, values unquoted, `None` for a bare attribute.
fn attributes(open: &str) -> Vec<(String, Option<String>)> {
    let inner = open
        .trim_start_matches('<')
        .trim_end_matches('>')
        .trim_end_matches('/');
    let mut rest = inner.trim_start_matches(|c: char| !c.is_whitespace()); // the tag name
    let mut out = Vec::new();
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        let name_end = rest
            .find(|c: char| c.is_whitespace() || c == '=')
            .unwrap_or(rest.len());
        let name = rest[..name_end].to_ascii_lowercase();
        rest = rest[name_end..].trim_start();
        let value = if let Some(after) = rest.strip_prefix('=') {
            let after = after.trim_start();
            let (value, len) = match after.chars().next() {
                Some(q @ ('"' | '\'')) => {
                    let end = after[1..].find(q).map_or(after.len(), |e| e + 1);
                    (&after[1..end], (end + 1).min(after.len()))
                }
                _ => {
                    let end = after.find(char::is_whitespace).unwrap_or(after.len());
                    (&after[..end], end)
                }
            };
            rest = &after[len..];
            Some(value.to_string())
        } else {
            None
        };
        if !name.is_empty() {
            out.push((name, value));
        }
    }
    out
}

/// Component name of a file: its stem, kebab- or snake-case turned into
/// PascalCase (`user-card.vue` -> `UserCard`).
fn component_name(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.strip_suffix(".vue").unwrap_or(file);
    if stem.contains(['-', '_']) {
        pascal(stem)
    } else {
        stem.to_string()
    }
}

fn pascal(text: &str) -> String {
    text.split(['-', '_'])
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
        })
        .collect()
}

/// The component a template tag names, as it would be imported
/// (`router-link` -> `RouterLink`), or `None` for an HTML or built-in tag.
fn component_of_tag(tag: &str) -> Option<String> {
    if tag.is_empty() || is_builtin(tag) || tag.contains(':') {
        return None;
    }
    if tag.starts_with(|c: char| c.is_ascii_uppercase()) {
        Some(tag.to_string())
    } else if tag.contains('-')
        && tag
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        Some(pascal(tag))
    } else {
        None
    }
}

/// A copy of `source` with the inside of every `{{ ... }}` blanked (newlines
/// kept): same length and lines.
fn blank_interpolations(source: &str) -> String {
    let Some(first) = find_pair(source, 0, '{') else {
        return source.to_string();
    };
    let mut bytes = source.as_bytes().to_vec();
    let mut next = Some(first);
    while let Some(open) = next.map(|p| p + 2) {
        let Some(close) = find_pair(source, open, '}') else {
            break;
        };
        for b in &mut bytes[open..close] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
        next = find_pair(source, close + 2, '{');
    }
    // Whole characters between ASCII delimiters were blanked.
    String::from_utf8(bytes).unwrap_or_else(|_| source.to_string())
}

/// Where the next pair of `brace` (`{{` or `}}`) at or after byte `from`
/// starts. Looks for the single character, which the standard library finds
/// a word at a time; a two-character pattern takes its general substring
/// search, which was the largest part of the plugin's own time.
fn find_pair(source: &str, from: usize, brace: char) -> Option<usize> {
    let mut at = from;
    loop {
        let found = at + source.get(at..)?.find(brace)?;
        if source.as_bytes().get(found + 1) == Some(&(brace as u8)) {
            return Some(found);
        }
        at = found + 1;
    }
}

/// Host grammar for a script block's `lang`.
fn script_grammar(lang: Option<&str>) -> Option<&'static str> {
    match lang.map(str::to_ascii_lowercase).as_deref() {
        None | Some("" | "js" | "javascript" | "jsx" | "mjs") => Some("javascript"),
        Some("ts" | "typescript") => Some("typescript"),
        Some("tsx") => Some("tsx"),
        _ => None,
    }
}

/// Symbol of an imported component: a `file:` symbol for a `.vue` file
/// (relative, or under `@/`, the usual alias of `src/`), else the import's
/// module path joined with the imported name.
fn import_symbol(source: &str, imported: &str, path: &str) -> String {
    if let Some(rest) = source
        .strip_prefix("@/")
        .filter(|_| source.ends_with(".vue"))
    {
        return format!("file:src/{rest}");
    }
    let target = resolve_import(source, path);
    if target.starts_with("file:") || imported == "default" || imported == "*" {
        target
    } else {
        format!("{target}.{imported}")
    }
}

struct Element<'t> {
    tag: String,
    span: Span,
    open: Span,
    /// Between the tags; `None` for a self-closing element.
    inner: Option<Span>,
    depth: usize,
    node: NodeRef<'t>,
}

/// Node kinds the plugin reads from the `html` tree.
const KINDS: &[&str] = &[
    "element",
    "script_element",
    "style_element",
    "start_tag",
    "self_closing_tag",
    "end_tag",
    "tag_name",
    "comment",
];

struct Kinds {
    element: Option<code_intel_plugin_sdk::KindId>,
    script: Option<code_intel_plugin_sdk::KindId>,
    style: Option<code_intel_plugin_sdk::KindId>,
    start: Option<code_intel_plugin_sdk::KindId>,
    self_closing: Option<code_intel_plugin_sdk::KindId>,
    end: Option<code_intel_plugin_sdk::KindId>,
    tag_name: Option<code_intel_plugin_sdk::KindId>,
    comment: Option<code_intel_plugin_sdk::KindId>,
}

impl Kinds {
    fn of(nodes: &NodeTable<'_>) -> Self {
        Self {
            element: nodes.kind_id("element"),
            script: nodes.kind_id("script_element"),
            style: nodes.kind_id("style_element"),
            start: nodes.kind_id("start_tag"),
            self_closing: nodes.kind_id("self_closing_tag"),
            end: nodes.kind_id("end_tag"),
            tag_name: nodes.kind_id("tag_name"),
            comment: nodes.kind_id("comment"),
        }
    }

    /// Start tag, end tag and tag name of an element.
    fn tags<'t>(&self, node: NodeRef<'t>) -> (Option<NodeRef<'t>>, Option<NodeRef<'t>>, &'t str) {
        let (mut open, mut close) = (None, None);
        for child in node.children() {
            if open.is_none() && (child.is(self.start) || child.is(self.self_closing)) {
                open = Some(child);
            } else if child.is(self.end) {
                close = Some(child);
            }
        }
        let name = open
            .and_then(|o| o.children().find(|c| c.is(self.tag_name)))
            .map_or("", NodeRef::text);
        (open, close, name)
    }
}

#[allow(clippy::too_many_lines)]
fn chunk_file(path: &str, source: &str) -> Result<Vec<Chunk>, PluginError> {
    // Interpolations hold expressions (`{{ a < b }}`) the HTML grammar
    // would read as tags: it parses a copy with their insides blanked.
    let tree = parse("html", &blank_interpolations(source))?;
    let nodes = tree.nodes(KINDS)?;
    let k = Kinds::of(&nodes);
    let lines = LineIndex::new(source);
    let len = u32::try_from(source.len()).unwrap_or(u32::MAX);

    // The blocks: top-level elements, and every script and style element
    // (an unclosed template swallows the blocks after it).
    let mut blocks: Vec<Block<'_>> = Vec::new();
    let mut doc_comment: Option<String> = None;
    for node in nodes.iter() {
        let is_raw = node.is(k.script) || node.is(k.style);
        let top = node.parent().is_none();
        if node.is(k.comment) && top && blocks.is_empty() && doc_comment.is_none() {
            let text = node
                .text()
                .trim_start_matches("<!--")
                .trim_end_matches("-->");
            doc_comment = Some(cleandoc(text)).filter(|d| !d.trim().is_empty());
            continue;
        }
        if !(is_raw || (top && node.is(k.element))) {
            continue;
        }
        let (open, close, name) = k.tags(node);
        let Some(open) = open else { continue };
        let tag = name.to_ascii_lowercase();
        let kind = if node.is(k.script) {
            BlockKind::Script
        } else if node.is(k.style) {
            BlockKind::Style
        } else if tag == "template" {
            BlockKind::Template
        } else {
            BlockKind::Custom
        };
        let inner_end = close
            .map_or(node.end_byte(), NodeRef::start_byte)
            .max(open.end_byte());
        blocks.push(Block {
            kind,
            tag,
            span: Span::of(node),
            open: Span::of(open),
            inner: lines.span(open.end_byte(), inner_end),
            attrs: attributes(open.text()),
            node,
        });
    }
    if blocks.is_empty() {
        return Err(PluginError::new(
            "no <template>, <script> or <style> block: not a Vue single-file component",
        ));
    }
    // A block that swallowed later blocks (unclosed) ends where the first of them starts.
    let starts: Vec<u32> = blocks.iter().map(|b| b.span.start_byte).collect();
    for block in &mut blocks {
        if let Some(&next) = starts
            .iter()
            .find(|&&s| s > block.span.start_byte && s < block.span.end_byte)
        {
            let end = u32::try_from(source[..next as usize].trim_end().len())
                .unwrap_or(next)
                .max(block.open.end_byte);
            block.span = lines.span(block.span.start_byte, end);
            block.inner = lines.span(block.inner.start_byte, end.max(block.inner.start_byte));
        }
    }
    blocks.sort_by_key(|b| b.span.start_byte);

    let name = component_name(path);
    let module = path.strip_suffix(".vue").unwrap_or(path).to_string();
    let component_id = format!("component:{name}");

    // What the scripts declare (from their text).
    let mut declared = script::Declared::default();
    for block in blocks.iter().filter(|b| b.kind == BlockKind::Script) {
        script::read(
            &script::strip_comments(block.inner.text(source)),
            &mut declared,
        );
    }

    // The template.
    let template = blocks
        .iter()
        .find(|b| b.kind == BlockKind::Template && b.attr("lang").is_none_or(|l| l == "html"));
    let mut elements: Vec<Element<'_>> = Vec::new();
    if let Some(t) = template {
        // The end bytes of the elements around the current one (nodes come
        // in document order): its depth without walking its ancestors,
        // which is quadratic on deep nesting.
        let mut around: Vec<u32> = Vec::new();
        for node in t.node.descendants() {
            if node.start_byte() >= t.span.end_byte {
                break;
            }
            if !node.is(k.element) {
                continue;
            }
            while around.last().is_some_and(|&end| end <= node.start_byte()) {
                around.pop();
            }
            let depth = around.len() + 1;
            around.push(node.end_byte());
            let (open, close, tag) = k.tags(node);
            let Some(open) = open else { continue };
            let end = node.end_byte().min(t.span.end_byte);
            elements.push(Element {
                tag: tag.to_string(),
                span: lines.span(node.start_byte(), end),
                open: Span::of(open),
                inner: close.map(|c| lines.span(open.end_byte(), c.start_byte())),
                depth,
                node,
            });
        }
    }
    let template_components: BTreeSet<String> = elements
        .iter()
        .filter_map(|e| component_of_tag(&e.tag))
        .collect();
    let mut slots: Vec<String> = Vec::new();
    for e in elements.iter().filter(|e| e.tag == "slot") {
        let attrs = attributes(e.open.text(source));
        let slot = attrs
            .iter()
            .find(|(n, _)| n == "name")
            .and_then(|(_, v)| v.clone())
            .unwrap_or_else(|| "default".into());
        if !slots.contains(&slot) {
            slots.push(slot);
        }
    }

    // Imported and registered components.
    let mut components: Vec<String> = Vec::new();
    let mut related: BTreeSet<String> = BTreeSet::new();
    for (local, from, imported) in &declared.imports {
        let used = template_components.contains(local) || declared.registered.contains(local);
        let is_component =
            from.ends_with(".vue") || (used && local.starts_with(|c: char| c.is_ascii_uppercase()));
        if is_component {
            if !components.contains(local) {
                components.push(local.clone());
            }
            related.insert(import_symbol(from, imported, path));
        }
    }
    for registered in &declared.registered {
        if !components.contains(registered) {
            components.push(registered.clone());
        }
    }

    // The component chunk.
    let setup = blocks
        .iter()
        .any(|b| b.kind == BlockKind::Script && b.has("setup"));
    let api = if setup {
        Some("script_setup")
    } else if declared.options_object {
        Some(if declared.setup_function {
            "composition"
        } else {
            "options"
        })
    } else {
        None
    };
    let block_names: Vec<String> = blocks
        .iter()
        .map(|b| one_line(b.open.text(source)))
        .collect();
    let mut outline = format!("<{name}> {path}\n");
    if let Some(doc) = &doc_comment {
        outline.push_str(doc);
        outline.push('\n');
    }
    outline.push_str(&block_names.join(" "));
    outline.push('\n');
    for (label, list) in [
        ("props", &declared.props),
        ("emits", &declared.emits),
        ("slots", &slots),
        ("components", &components),
    ] {
        if !list.is_empty() {
            outline.push_str(&format!("{label}: {}\n", list.join(", ")));
        }
    }
    if !template_components.is_empty() {
        outline.push_str(&format!(
            "template uses: {}\n",
            template_components
                .iter()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let mut signature = name.clone();
    if !declared.props.is_empty() {
        signature.push_str(&format!("(props: {})", declared.props.join(", ")));
    }
    if !declared.emits.is_empty() {
        signature.push_str(&format!(" emits {}", declared.emits.join(", ")));
    }
    let custom: Vec<String> = blocks
        .iter()
        .filter(|b| b.kind == BlockKind::Custom)
        .map(|b| b.tag.clone())
        .collect();
    let script_lang = blocks
        .iter()
        .filter(|b| b.kind == BlockKind::Script)
        .find_map(|b| b.attr("lang"))
        .map(str::to_string);
    let mut component = ChunkBuilder::new("component", name.clone())
        .id(component_id.clone())
        .qualified_name(module.clone())
        .span(lines.span(0, len))
        .content(outline)
        .signature(signature)
        .docstring(doc_comment.clone())
        .references(template_components.iter().cloned())
        .related_all(related)
        .meta(
            "blocks",
            blocks.iter().map(|b| block_label(b)).collect::<Vec<_>>(),
        )
        .meta_opt("api", api)
        .meta_opt("script_lang", script_lang)
        .meta_opt("name", declared.name.clone())
        .meta_opt("props", Some(declared.props.clone()))
        .meta_opt("emits", Some(declared.emits.clone()))
        .meta_opt("models", Some(declared.models.clone()))
        .meta_opt("slots", Some(slots.clone()))
        .meta_opt("components", Some(components))
        .meta_opt(
            "template_components",
            Some(template_components.iter().cloned().collect::<Vec<_>>()),
        )
        .meta_opt("custom_blocks", Some(custom));
    if tree.has_errors() {
        component = component.meta("syntax_errors", true);
    }
    let mut chunks = ChunkSet::new(source);
    chunks.push(component);

    // Template, styles and custom blocks.
    let mut template_done = false;
    for block in &blocks {
        let signature = one_line(block.open.text(source));
        match block.kind {
            BlockKind::Template if !template_done => {
                template_done = true;
                push_template(
                    &mut chunks,
                    block,
                    &elements,
                    &template_components,
                    &slots,
                    source,
                    &component_id,
                );
            }
            BlockKind::Template | BlockKind::Custom => {
                chunks.push(
                    ChunkBuilder::new("custom_block", block.tag.clone())
                        .id(format!("custom_block:{}", block.tag))
                        .parent(Some(component_id.clone()))
                        .span(block.span)
                        .signature(signature)
                        .meta("tag", block.tag.clone())
                        .meta_opt("lang", block.attr("lang").map(str::to_string))
                        .meta_opt("src", block.attr("src").map(str::to_string)),
                );
            }
            BlockKind::Style => {
                let mut style = ChunkBuilder::new("style", "style")
                    .id("style")
                    .parent(Some(component_id.clone()))
                    .span(block.span)
                    .signature(signature)
                    .meta(
                        "lang",
                        block
                            .attr("lang")
                            .filter(|l| !l.is_empty())
                            .unwrap_or("css"),
                    );
                if block.has("scoped") {
                    style = style.meta("scoped", true);
                }
                if let Some(m) = block.attr("module") {
                    style = style.meta(
                        "module",
                        if m.is_empty() {
                            Value::Bool(true)
                        } else {
                            Value::String(m.to_string())
                        },
                    );
                }
                if let Some(src) = block.attr("src").filter(|s| !s.is_empty()) {
                    style = style.meta("src", src).related(resolve_import(src, path));
                }
                chunks.push(style);
            }
            BlockKind::Script => {}
        }
    }

    // Script blocks: JavaScript/TypeScript chunks under the component.
    let mut modules: Vec<bool> = Vec::new();
    for block in blocks.iter().filter(|b| b.kind == BlockKind::Script) {
        let setup = block.has("setup");
        let lang = block.attr("lang");
        let src = block.attr("src").filter(|s| !s.is_empty());
        let grammar = script_grammar(lang);
        match grammar {
            Some(grammar) if src.is_none() && !block.inner.text(source).trim().is_empty() => {
                let script_tree = parse_embedded(grammar, source, block.inner.range())?;
                let label = if setup { "script setup" } else { "script" };
                push_script_chunks(
                    &mut chunks,
                    &script_tree,
                    grammar,
                    path,
                    source,
                    block.inner.range(),
                    &lines,
                    &module,
                    Some((component_id.clone(), label.to_string())),
                )?;
                modules.push(setup);
            }
            _ => {
                // An external (`src`) or unparsed (`lang="coffee"`) script: one chunk.
                let mut chunk =
                    ChunkBuilder::new("script", if setup { "script setup" } else { "script" })
                        .id(if setup { "script:setup" } else { "script" })
                        .parent(Some(component_id.clone()))
                        .span(block.span)
                        .signature(one_line(block.open.text(source)))
                        .meta_opt("lang", lang.map(str::to_string));
                if let Some(src) = src {
                    chunk = chunk.meta("src", src).related(resolve_import(src, path));
                }
                chunks.push(chunk);
            }
        }
    }
    let mut out = chunks.finish();
    name_modules(&mut out, &component_id, &modules);
    Ok(out)
}

/// `template`, `script setup`, `style scoped`, ... for the component's `blocks` metadata.
fn block_label(block: &Block<'_>) -> String {
    match block.kind {
        BlockKind::Script if block.has("setup") => "script setup".into(),
        BlockKind::Style if block.has("scoped") => "style scoped".into(),
        _ => block.tag.clone(),
    }
}

/// The template chunk and, when the template is larger than the embedding
/// window, chunks for the elements whose content its skeleton elides.
fn push_template(
    chunks: &mut ChunkSet<'_>,
    block: &Block<'_>,
    elements: &[Element<'_>],
    components: &BTreeSet<String>,
    slots: &[String],
    source: &str,
    component_id: &str,
) {
    let range = block.span.range();
    let size = range.len();
    // Elide at the deepest level at which the skeleton fits the window.
    let elidable = |e: &Element<'_>| {
        e.inner.filter(|i| {
            e.span.end_line - e.span.start_line + 1 >= MIN_ELEMENT_LINES && i.range().len() > 3
        })
    };
    let mut level = None;
    if size > MAX_CHUNK_BYTES {
        // What eliding saves at each depth, summed in one pass (a pass per
        // depth is quadratic on deep nesting: 36,000 nested <div>s).
        let deepest = elements.iter().map(|e| e.depth).max().unwrap_or(0);
        let mut saved = vec![0usize; deepest + 1];
        for e in elements {
            if let Some(i) = elidable(e) {
                saved[e.depth] += i.range().len() - 3;
            }
        }
        for depth in (1..=deepest).rev() {
            level = Some(depth);
            if size - saved[depth] <= MAX_CHUNK_BYTES {
                break;
            }
        }
    }
    let elided: Vec<&Element<'_>> = level.map_or_else(Vec::new, |d| {
        elements
            .iter()
            .filter(|e| e.depth == d && elidable(e).is_some())
            .collect()
    });
    let holes: Vec<(std::ops::Range<usize>, &str)> = elided
        .iter()
        .filter_map(|e| e.inner.map(|i| (i.range(), " … ")))
        .collect();
    let mut template = ChunkBuilder::new("template", "template")
        .id("template")
        .parent(Some(component_id.to_string()))
        .span(block.span)
        .signature(one_line(block.open.text(source)))
        .references(components.iter().cloned())
        .meta_opt("lang", block.attr("lang").map(str::to_string))
        .meta_opt(
            "components",
            Some(components.iter().cloned().collect::<Vec<_>>()),
        )
        .meta_opt("slots", Some(slots.to_vec()));
    if !holes.is_empty() {
        template = template
            .content(elide(source, range, &holes))
            .meta("elided", true);
    }
    let template_id = chunks.push(template);

    for e in elided {
        let attrs = attributes(e.open.text(source));
        let html_id = attrs
            .iter()
            .find(|(n, _)| n == "id")
            .and_then(|(_, v)| v.clone())
            .filter(|v| !v.is_empty());
        let name = html_id
            .as_ref()
            .map_or_else(|| e.tag.clone(), |id| format!("{}#{id}", e.tag));
        let inner: BTreeSet<String> = elements
            .iter()
            .filter(|d| e.span.contains(&d.span) && d.node != e.node)
            .filter_map(|d| component_of_tag(&d.tag))
            .chain(component_of_tag(&e.tag))
            .collect();
        let mut signature = one_line(e.open.text(source));
        if signature.len() > 200 {
            let cut = (0..=200)
                .rev()
                .find(|&i| signature.is_char_boundary(i))
                .unwrap_or(0);
            signature = format!("{} …", &signature[..cut]);
        }
        chunks.push(
            ChunkBuilder::new("template_element", name.clone())
                .id(format!("template_element:{name}"))
                .parent(Some(template_id.clone()))
                .span(e.span)
                .signature(signature)
                .references(inner.iter().cloned())
                .meta("tag", e.tag.clone())
                .meta_opt("html_id", html_id)
                .meta_opt("components", Some(inner.into_iter().collect::<Vec<_>>())),
        );
    }
}

/// Gives the module chunks of the script blocks their names (`script`,
/// `script setup`) and ids (`module`, `module:setup`), and marks the
/// setup block's in metadata. `modules` lists the parsed blocks in order.
fn name_modules(chunks: &mut [Chunk], component_id: &str, modules: &[bool]) {
    let mut renames: BTreeMap<String, String> = BTreeMap::new();
    // Two blocks of a kind (a broken or unusual file) are numbered the way
    // `ChunkSet` numbers repeated ids: `module:setup`, `module:setup#2`.
    let mut seen: BTreeMap<&str, u32> = BTreeMap::new();
    let module_chunks = chunks
        .iter_mut()
        .filter(|c| c.kind == "module" && c.parent.as_deref() == Some(component_id));
    for (chunk, &setup) in module_chunks.zip(modules) {
        let base = if setup { "module:setup" } else { "module" };
        let count = seen.entry(base).or_insert(0);
        *count += 1;
        let id = if *count == 1 { base.to_string() } else { format!("{base}#{count}") };
        chunk.name = if setup {
            "script setup".into()
        } else {
            "script".into()
        };
        if setup && let Ok(Value::Object(mut meta)) = serde_json::from_str::<Value>(&chunk.metadata)
        {
            meta.insert("setup".into(), Value::Bool(true));
            chunk.metadata = Value::Object(meta).to_string();
        }
        renames.insert(chunk.id.clone(), id);
    }
    if renames.iter().all(|(old, new)| old == new) {
        return;
    }
    let rename = |id: &str| -> Option<String> {
        if let Some(new) = renames.get(id) {
            return Some(new.clone());
        }
        let (base, part) = id.split_once("#part")?;
        renames.get(base).map(|new| format!("{new}#part{part}"))
    };
    for chunk in chunks.iter_mut() {
        if let Some(new) = rename(&chunk.id) {
            chunk.id = new;
        }
        if let Some(new) = chunk.parent.as_deref().and_then(rename) {
            chunk.parent = Some(new);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(component_name("src/components/user-card.vue"), "UserCard");
        assert_eq!(component_name("src/components/UserCard.vue"), "UserCard");
        assert_eq!(component_name("pages/[id].vue"), "[id]");
        assert_eq!(
            component_of_tag("router-link").as_deref(),
            Some("RouterLink")
        );
        assert_eq!(
            component_of_tag("UserAvatar").as_deref(),
            Some("UserAvatar")
        );
        assert_eq!(component_of_tag("div"), None);
        assert_eq!(component_of_tag("transition-group"), None);
        assert_eq!(component_of_tag("linearGradient"), None);
    }

    #[test]
    fn start_tag_attributes() {
        assert_eq!(
            attributes("<script setup lang=\"ts\">"),
            [
                ("setup".to_string(), None),
                ("lang".to_string(), Some("ts".to_string()))
            ]
        );
        assert_eq!(
            attributes("<style scoped lang='scss' module=classes>")[2],
            ("module".to_string(), Some("classes".to_string()))
        );
    }

    #[test]
    fn pairs_of_braces_are_found_past_single_ones() {
        assert_eq!(find_pair("a { b {{ c", 0, '{'), Some(6));
        assert_eq!(find_pair("{{{x}}}", 1, '{'), Some(1));
        assert_eq!(find_pair("} }}}", 0, '}'), Some(2));
        assert_eq!(find_pair("ü{ {", 0, '{'), None);
        assert_eq!(find_pair("{{", 2, '{'), None);
        assert_eq!(blank_interpolations("{ x } {{ y }} }"), "{ x } {{   }} }");
    }

    #[test]
    fn interpolations_are_blanked() {
        let inner = " a < b ? 'ü' : c ";
        let blanked = blank_interpolations(&format!("<p>{{{{{inner}}}}}</p>\n{{{{ x }}}}"));
        assert_eq!(
            blanked,
            format!("<p>{{{{{}}}}}</p>\n{{{{   }}}}", " ".repeat(inner.len()))
        );
    }

    #[test]
    fn import_symbols() {
        assert_eq!(
            import_symbol("./UserAvatar.vue", "default", "src/components/UserCard.vue"),
            "file:src/components/UserAvatar.vue"
        );
        assert_eq!(
            import_symbol("@/components/Base.vue", "default", "src/App.vue"),
            "file:src/components/Base.vue"
        );
        assert_eq!(
            import_symbol("vue-router", "RouterLink", "src/App.vue"),
            "vue-router.RouterLink"
        );
    }
}
