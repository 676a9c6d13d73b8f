//! Laravel Blade templates (`*.blade.php`), chosen before the PHP plugin.
//!
//! A template becomes a `blade_template` chunk (the view: what it extends,
//! its sections, stacks, components, Livewire components, routes, includes
//! and HTML ids) plus one chunk per block a user would look for:
//! `blade_section` (`@section`/`@fragment`), `blade_push` (`@push`,
//! `@prepend`), `blade_slot` (`@slot`, `<x-slot:name>`), `blade_component`
//! (`@component`, `<x-…>` with a body) and `html_element` (semantic
//! elements and elements with an id, when at least
//! [`MIN_ELEMENT_LINES`] long). A chunk's content is its source with nested
//! chunks elided to their first line, so no text is embedded twice.
//!
//! Related symbols: `<x-user-card>` -> `App\View\Components\UserCard` and
//! `view:components.user-card` (whichever exists: class or anonymous
//! component); `<livewire:cart-counter>` / `@livewire('cart-counter')` ->
//! `App\Livewire\CartCounter`; `route('orders.store')` -> `route:orders.store`;
//! `@extends`/`@include`/`@each`/`@component` -> `view:NAME`; `@vite` assets
//! -> `file:PATH`; semantic elements and ids -> `html:form#checkout`.
//!
//! Templates are read by a scanner (see [`scan`]): the host's grammars have
//! no Blade, and PHP's sees a template as plain text.

pub mod scan;

use std::collections::BTreeSet;

use code_intel_laravel_support::kebab_to_studly;
use code_intel_plugin_sdk::text::{elide, split_top_level, unquote};
use code_intel_plugin_sdk::{
    ChunkBuilder, ChunkOutcome, ChunkSet, LineIndex, Plugin, PluginError, PluginInfo, SourceFile, export_plugin,
};
use scan::Token;
use serde_json::{Value, json};

/// Above the PHP plugin (10) and every other `.php` strategy: a
/// `.blade.php` file is a template, never a class file.
const PRIORITY: i32 = 30;

/// Shortest element or component tag (in lines) that gets a chunk of its own; shorter
/// ones are only named in their parent's related symbols. Three lines is an
/// opening tag, some content and a closing tag: anything smaller is a
/// one-liner that reads fine inside its parent.
pub const MIN_ELEMENT_LINES: u32 = 3;

/// Elements that carry meaning for a reader of the page (HTML sectioning
/// and landmark elements, forms, dialogs).
const SEMANTIC: &[&str] = &["section", "article", "nav", "header", "footer", "main", "aside", "form", "dialog", "table"];

/// Elements without a closing tag.
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr", "!doctype",
];

/// Block directives: opening name, closing names, chunk kind.
const BLOCKS: &[(&str, &[&str], &str)] = &[
    ("section", &["endsection", "show", "stop", "overwrite", "append"], "blade_section"),
    ("fragment", &["endfragment"], "blade_section"),
    ("push", &["endpush"], "blade_push"),
    ("pushOnce", &["endPushOnce", "endpushOnce"], "blade_push"),
    ("pushIf", &["endPushIf", "endpushIf"], "blade_push"),
    ("prepend", &["endprepend"], "blade_push"),
    ("prependOnce", &["endPrependOnce", "endprependOnce"], "blade_push"),
    ("slot", &["endslot"], "blade_slot"),
    ("component", &["endcomponent"], "blade_component"),
    ("componentFirst", &["endcomponentFirst"], "blade_component"),
];

/// Directives naming another view in their first argument.
const VIEW_DIRECTIVES: &[&str] = &["extends", "include", "includeIf", "includeWhen", "includeUnless", "includeFirst", "each", "component", "componentFirst", "extendsFirst"];

/// Root namespace of class-based Blade components.
const COMPONENT_NAMESPACE: &str = "App\\View\\Components";
/// Root namespace of Livewire 3 components.
const LIVEWIRE_NAMESPACE: &str = "App\\Livewire";

struct Blade;

impl Plugin for Blade {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "blade".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Laravel Blade templates: sections, pushes, slots, components, Livewire, routes and semantic HTML".into(),
            languages: vec!["blade".into()],
            file_patterns: vec!["**/*.blade.php".into()],
            priority: PRIORITY,
        }
    }

    fn chunk(file: SourceFile) -> Result<ChunkOutcome, PluginError> {
        Ok(ChunkOutcome::Chunks(chunk_template(&file.path, &file.content)))
    }
}

export_plugin!(Blade);

/// `resources/views/products/index.blade.php` -> `products.index`.
#[must_use]
pub fn view_name(path: &str) -> String {
    let rel = path
        .find("resources/views/")
        .map(|i| &path[i + "resources/views/".len()..])
        .or_else(|| path.rfind("views/").map(|i| &path[i + "views/".len()..]))
        .unwrap_or_else(|| path.rsplit('/').next().unwrap_or(path));
    rel.trim_end_matches(".blade.php").replace('/', ".")
}

/// A block that becomes a chunk.
struct Block {
    kind: &'static str,
    name: String,
    start: usize,
    end: usize,
    meta: Vec<(&'static str, Value)>,
    /// Made from an HTML or component tag (as opposed to a Blade directive).
    from_tag: bool,
}

/// A symbol found at a byte offset.
struct Found {
    at: usize,
    symbol: String,
}

/// Facts about the whole template, for its chunk's metadata.
#[derive(Default)]
struct Facts {
    extends: Option<String>,
    sections: BTreeSet<String>,
    yields: BTreeSet<String>,
    stacks: BTreeSet<String>,
    pushes: BTreeSet<String>,
    props: Vec<String>,
    components: Vec<Value>,
    livewire: Vec<Value>,
    routes: BTreeSet<String>,
    views: BTreeSet<String>,
    ids: BTreeSet<String>,
    assets: BTreeSet<String>,
}

fn first_arg(args: Option<&str>) -> Option<String> {
    let args = args?;
    split_top_level(args, ',').first().and_then(|a| unquote(a)).map(str::to_string)
}

fn arg_count(args: Option<&str>) -> usize {
    args.map_or(0, |a| split_top_level(a, ',').len())
}

/// `foo.bar-baz` -> `Foo\BarBaz`.
fn dotted_to_class(name: &str) -> String {
    name.split('.').map(kebab_to_studly).collect::<Vec<_>>().join("\\")
}

/// Chunks one template. Never fails: an unreadable template is one chunk.
#[must_use]
pub fn chunk_template(path: &str, source: &str) -> Vec<code_intel_plugin_sdk::Chunk> {
    let (tokens, comments) = scan::scan(source);
    let view = view_name(path);
    let mut facts = Facts::default();
    let mut found: Vec<Found> = Vec::new();
    let mut blocks: Vec<Block> = Vec::new();
    let mut directive_stack: Vec<(usize, &'static str, &'static [&'static str], String, usize)> = Vec::new();
    let mut element_stack: Vec<(String, Vec<(String, Option<String>)>, usize)> = Vec::new();

    for token in &tokens {
        match token {
            Token::Directive { name, args, start, end } => {
                let args = args.as_deref();
                let arg = first_arg(args);
                match name.as_str() {
                    "extends" | "extendsFirst" => facts.extends = arg.clone(),
                    "yield" => facts.yields.extend(arg.clone()),
                    "stack" => facts.stacks.extend(arg.clone()),
                    "props" => {
                        let inner = args.unwrap_or_default().trim().trim_start_matches('[').trim_end_matches(']');
                        for prop in split_top_level(inner, ',') {
                            let key = prop.split("=>").next().unwrap_or(prop).trim();
                            if let Some(key) = unquote(key) {
                                facts.props.push(key.to_string());
                            }
                        }
                    }
                    "livewire" => {
                        if let Some(raw) = args.and_then(|a| split_top_level(a, ',').first().map(|s| s.to_string())) {
                            let class = match unquote(&raw) {
                                Some(component) => format!("{LIVEWIRE_NAMESPACE}\\{}", dotted_to_class(component)),
                                None => raw.trim().trim_end_matches("::class").trim_start_matches('\\').to_string(),
                            };
                            let name = unquote(&raw).map_or_else(|| class.clone(), str::to_string);
                            facts.livewire.push(json!({"name": name, "class": class}));
                            found.push(Found { at: *start, symbol: class });
                        }
                    }
                    "vite" => {
                        for asset in args.map(|a| split_top_level(a.trim().trim_start_matches('[').trim_end_matches(']'), ',')).unwrap_or_default() {
                            if let Some(asset) = unquote(asset) {
                                facts.assets.insert(asset.to_string());
                                found.push(Found { at: *start, symbol: format!("file:{asset}") });
                            }
                        }
                    }
                    _ => {}
                }
                if VIEW_DIRECTIVES.contains(&name.as_str()) {
                    let mut views = arg.iter().cloned().collect::<Vec<_>>();
                    if name == "each" {
                        views.extend(args.and_then(|a| split_top_level(a, ',').get(3).and_then(|s| unquote(s)).map(str::to_string)));
                    }
                    for v in views {
                        facts.views.insert(v.clone());
                        found.push(Found { at: *start, symbol: format!("view:{v}") });
                    }
                }
                if let Some((_, closers, kind)) = BLOCKS.iter().find(|(open, _, _)| open == name) {
                    let inline = matches!(name.as_str(), "section" | "slot") && arg_count(args) >= 2;
                    if name == "section" {
                        facts.sections.extend(arg.clone());
                    }
                    if *kind == "blade_push" {
                        facts.pushes.extend(arg.clone());
                    }
                    if !inline {
                        directive_stack.push((*start, kind, closers, arg.unwrap_or_else(|| name.clone()), *end));
                    }
                } else if let Some(pos) = directive_stack.iter().rposition(|(_, _, closers, _, _)| closers.contains(&name.as_str())) {
                    let (open_start, kind, _, block_name, _) = directive_stack.remove(pos);
                    directive_stack.truncate(pos);
                    blocks.push(Block { kind, name: block_name, start: open_start, end: *end, meta: vec![("closed_by", json!(name))], from_tag: false });
                }
            }
            Token::Open { name, attrs, self_closing, start, .. } => {
                let lower = name.to_ascii_lowercase();
                let id = attrs.iter().find(|(k, _)| k == "id").and_then(|(_, v)| v.clone()).filter(|v| !v.contains("{{") && !v.is_empty());
                if let Some(id) = &id {
                    facts.ids.insert(id.clone());
                }
                if SEMANTIC.contains(&lower.as_str()) || id.is_some() {
                    let symbol = match &id {
                        Some(id) => format!("html:{lower}#{id}"),
                        None => format!("html:{lower}"),
                    };
                    found.push(Found { at: *start, symbol });
                }
                if let Some(component) = name.strip_prefix("x-") {
                    component_symbols(component, *start, &mut facts, &mut found);
                } else if let Some(component) = name.strip_prefix("livewire:") {
                    let class = format!("{LIVEWIRE_NAMESPACE}\\{}", dotted_to_class(component));
                    facts.livewire.push(json!({"name": component, "class": class}));
                    found.push(Found { at: *start, symbol: class });
                }
                if !*self_closing && !VOID.contains(&lower.as_str()) {
                    element_stack.push((name.clone(), attrs.clone(), *start));
                }
            }
            Token::Close { name, end, .. } => {
                if let Some(pos) = element_stack.iter().rposition(|(n, _, _)| n.eq_ignore_ascii_case(name)) {
                    let (open_name, attrs, open_start) = element_stack.remove(pos);
                    element_stack.truncate(pos);
                    if let Some(block) = element_block(&open_name, &attrs, open_start, *end) {
                        blocks.push(block);
                    }
                }
            }
        }
    }
    routes(source, &comments, &mut facts, &mut found);

    let lines = LineIndex::new(source);
    let whole = lines.span(0, to_u32(source.len()));
    // Drop blocks that are too short, or that wrap the whole template (the
    // template chunk already is that block).
    blocks.retain(|b| {
        let span = lines.span(to_u32(b.start), to_u32(b.end));
        let wraps_all = source[..b.start].trim().is_empty() && source[b.end..].trim().is_empty();
        let long_enough = !b.from_tag || span.end_line - span.start_line + 1 >= MIN_ELEMENT_LINES;
        long_enough && !wraps_all
    });
    blocks.sort_by_key(|b| (b.start, std::cmp::Reverse(b.end)));

    let mut set = ChunkSet::new(source);
    let related_in = |start: usize, end: usize| -> Vec<String> {
        found.iter().filter(|f| f.at >= start && f.at < end).map(|f| f.symbol.clone()).collect()
    };
    let summary = summary_line(&view, &facts);
    let template_content = format!("{{{{-- {summary} --}}}}\n{}", elided(source, 0, source.len(), &blocks, None));
    let template_id = set.push(
        ChunkBuilder::new("blade_template", view.clone())
            .id(format!("blade_template:{view}"))
            .span(whole)
            .content(template_content)
            .signature(format!("view {view}"))
            .related_all(related_in(0, source.len()))
            .meta("view", view.clone())
            .meta_opt("extends", facts.extends.clone())
            .meta_opt("sections", Some(json!(facts.sections)))
            .meta_opt("yields", Some(json!(facts.yields)))
            .meta_opt("stacks", Some(json!(facts.stacks)))
            .meta_opt("pushes", Some(json!(facts.pushes)))
            .meta_opt("props", Some(json!(facts.props)))
            .meta_opt("components", Some(json!(facts.components)))
            .meta_opt("livewire", Some(json!(facts.livewire)))
            .meta_opt("routes", Some(json!(facts.routes)))
            .meta_opt("views", Some(json!(facts.views)))
            .meta_opt("html_ids", Some(json!(facts.ids)))
            .meta_opt("assets", Some(json!(facts.assets))),
    );

    // Parents: the innermost enclosing block, else the template.
    let mut ids: Vec<String> = Vec::with_capacity(blocks.len());
    for (i, block) in blocks.iter().enumerate() {
        let parent = (0..i)
            .rev()
            .find(|&j| blocks[j].start <= block.start && block.end <= blocks[j].end)
            .map_or_else(|| template_id.clone(), |j| ids[j].clone());
        let span = lines.span(to_u32(block.start), to_u32(block.end));
        let first = source[block.start..block.end].lines().next().unwrap_or_default().trim().to_string();
        let mut builder = ChunkBuilder::new(block.kind, block.name.clone())
            .id(format!("{}:{}", block.kind, block.name))
            .span(span)
            .parent(Some(parent))
            .signature(first)
            .content(elided(source, block.start, block.end, &blocks, Some(i)))
            .related_all(related_in(block.start, block.end))
            .meta("view", view.clone());
        for (key, value) in &block.meta {
            builder = builder.meta(key, value.clone());
        }
        ids.push(set.push(builder));
    }
    set.finish()
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// `start..end` of the source with every block directly inside it (not
/// `skip` itself) replaced by its first line and `…`.
fn elided(source: &str, start: usize, end: usize, blocks: &[Block], skip: Option<usize>) -> String {
    let holes: Vec<(std::ops::Range<usize>, String)> = blocks
        .iter()
        .enumerate()
        .filter(|(j, b)| Some(*j) != skip && b.start >= start && b.end <= end && (b.start, b.end) != (start, end))
        .map(|(_, b)| {
            let first = source[b.start..b.end].lines().next().unwrap_or_default();
            (b.start..b.end, format!("{first} …"))
        })
        .collect();
    let holes: Vec<(std::ops::Range<usize>, &str)> = holes.iter().map(|(r, s)| (r.clone(), s.as_str())).collect();
    elide(source, start..end, &holes)
}

fn component_symbols(component: &str, at: usize, facts: &mut Facts, found: &mut Vec<Found>) {
    if component == "dynamic-component" || component == "slot" || component.starts_with("slot:") {
        return;
    }
    if let Some((package, name)) = component.split_once("::") {
        facts.components.push(json!({"tag": format!("x-{component}"), "package": package, "name": name}));
        return;
    }
    let class = format!("{COMPONENT_NAMESPACE}\\{}", dotted_to_class(component));
    let view = format!("components.{component}");
    facts.components.push(json!({"tag": format!("x-{component}"), "class": class, "view": view}));
    found.push(Found { at, symbol: class });
    found.push(Found { at, symbol: format!("view:{view}") });
}

/// The chunk for an element, if it is one worth a chunk.
fn element_block(name: &str, attrs: &[(String, Option<String>)], start: usize, end: usize) -> Option<Block> {
    let lower = name.to_ascii_lowercase();
    if let Some(component) = name.strip_prefix("x-") {
        if let Some(slot) = component.strip_prefix("slot") {
            let slot_name = slot
                .strip_prefix(':')
                .map(str::to_string)
                .or_else(|| attrs.iter().find(|(k, _)| k == "name").and_then(|(_, v)| v.clone()))
                .unwrap_or_else(|| "slot".into());
            return Some(Block { kind: "blade_slot", name: slot_name, start, end, meta: vec![("tag", json!(name))], from_tag: true });
        }
        return Some(Block { kind: "blade_component", name: name.to_string(), start, end, meta: vec![("tag", json!(name))], from_tag: true });
    }
    let id = attrs.iter().find(|(k, _)| k == "id").and_then(|(_, v)| v.clone()).filter(|v| !v.contains("{{") && !v.is_empty());
    if !SEMANTIC.contains(&lower.as_str()) && id.is_none() {
        return None;
    }
    let label = match &id {
        Some(id) => format!("{lower}#{id}"),
        None => lower.clone(),
    };
    let mut meta = vec![("tag", json!(lower))];
    if let Some(id) = id {
        meta.push(("html_id", json!(id)));
    }
    for key in ["action", "method", "aria-label", "role", "wire:submit"] {
        if let Some((_, Some(value))) = attrs.iter().find(|(k, _)| k == key) {
            meta.push((attr_meta_key(key), json!(value)));
        }
    }
    Some(Block { kind: "html_element", name: label, start, end, meta, from_tag: true })
}

fn attr_meta_key(key: &str) -> &'static str {
    match key {
        "action" => "action",
        "method" => "method",
        "aria-label" => "aria_label",
        "role" => "role",
        _ => "wire_submit",
    }
}

/// `route('name'` calls outside comments.
fn routes(source: &str, comments: &[(usize, usize)], facts: &mut Facts, found: &mut Vec<Found>) {
    let b = source.as_bytes();
    let mut from = 0;
    while let Some(pos) = source[from..].find("route(") {
        let at = from + pos;
        from = at + "route(".len();
        let prev = at.checked_sub(1).map(|p| b[p]);
        if prev.is_some_and(|c| is_ident(c) || c == b'>' || c == b':' || c == b'$') {
            continue; // `to_route(`, `->route(`, `Route::`, `$route(`
        }
        if comments.iter().any(|(s, e)| (*s..*e).contains(&at)) {
            continue;
        }
        let rest = source[from..].trim_start();
        let Some(quote) = rest.chars().next().filter(|c| *c == '\'' || *c == '"') else { continue };
        let Some(close) = rest[1..].find(quote) else { continue };
        let name = &rest[1..1 + close];
        if name.is_empty() || name.contains(['$', '{', ' ']) {
            continue;
        }
        facts.routes.insert(name.to_string());
        found.push(Found { at, symbol: format!("route:{name}") });
    }
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn summary_line(view: &str, facts: &Facts) -> String {
    let mut parts = vec![format!("view {view}")];
    if let Some(extends) = &facts.extends {
        parts.push(format!("extends {extends}"));
    }
    let list = |label: &str, items: Vec<String>| (!items.is_empty()).then(|| format!("{label}: {}", items.join(", ")));
    parts.extend(list("sections", facts.sections.iter().cloned().collect()));
    parts.extend(list(
        "components",
        facts.components.iter().filter_map(|c| c.get("tag")?.as_str().map(str::to_string)).collect::<BTreeSet<_>>().into_iter().collect(),
    ));
    parts.extend(list(
        "livewire",
        facts.livewire.iter().filter_map(|c| c.get("name")?.as_str().map(str::to_string)).collect::<BTreeSet<_>>().into_iter().collect(),
    ));
    parts.extend(list("routes", facts.routes.iter().cloned().collect()));
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A template with accented text or a BOM is chunked like any other
    /// (it used to panic on the first multi-byte character).
    #[test]
    fn non_ascii_templates_are_chunked() {
        let chunks = chunk_template("resources/views/e.blade.php", "<div>\n  Prix : 5 €\n</div>\n");
        assert_eq!(chunks.len(), 1);
        assert!(chunks[0].content.contains("5 €"));

        let source = "\u{feff}@extends('layouts.app')\n@section('content')\n<form id=\"commande\" action=\"{{ route('commandes.store') }}\">\n  <label>Qté — 数量</label>\n  <x-champ nom=\"é\" />\n</form>\n@endsection\n";
        let chunks = chunk_template("resources/views/commande.blade.php", source);
        let kinds: Vec<&str> = chunks.iter().map(|c| c.kind.as_str()).collect();
        assert!(kinds.contains(&"blade_template") && kinds.contains(&"blade_section") && kinds.contains(&"html_element"), "{kinds:?}");
        for (i, _) in source.char_indices().chain([(source.len(), ' ')]) {
            let _ = chunk_template("resources/views/cut.blade.php", &source[..i]);
        }
    }
}
