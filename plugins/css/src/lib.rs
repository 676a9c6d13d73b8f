//! CSS and SCSS chunk strategy (a code-intel plugin, built as a WebAssembly
//! component).
//!
//! One stylesheet becomes:
//! - a `stylesheet` chunk: the file with the bodies of its top-level blocks
//!   elided (imports, `@tailwind` directives, top-level SCSS variables
//!   verbatim), with imports, custom properties, variables, keyframes, media
//!   queries, mixins and class names in metadata;
//! - a chunk per top-level block: `rule_set` (named after its selectors),
//!   `custom_properties` (a rule set that only defines `--custom`
//!   properties, like `:root { … }`), `media_query`, `keyframes`, `at_rule`
//!   (`@supports`, `@layer`, `@font-face`, `@container`, …) and, in SCSS,
//!   `mixin` and `function`. Nested rules stay in their block.
//!
//! A comment directly above a block is part of its span and becomes its
//! docstring. `references` are the custom properties a block reads
//! (`var(--brand)`), SCSS variables, mixins it includes and selectors it
//! extends.
//!
//! Parsing is the host's (`syntax` import): the plugin asks for the tree's
//! named nodes once ([`Tree::nodes`], all kinds, so that every node's parent
//! is its syntax parent), sorts the nodes it needs into top-level blocks,
//! comments, imports, variables and inner facts in one pass comparing kind
//! and field ids ([`scan`]), then assigns the facts to their blocks and
//! builds the chunks.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashSet};

use code_intel_plugin_sdk::text::{elide, one_line, split_top_level};
#[cfg(doc)]
use code_intel_plugin_sdk::Tree;
use code_intel_plugin_sdk::{
    ChunkBuilder, ChunkOutcome, ChunkSet, FieldId, KindId, LineIndex, NodeRef, NodeTable, Plugin, PluginError,
    PluginInfo, SourceFile, Span, comments_above, export_plugin, parse,
};
use serde_json::{Map, Value};

/// The plugin type exported to the host.
pub struct Css;

/// Below the tailwind plugin (20), which takes the stylesheets that
/// configure Tailwind v4 and declines the others.
const PRIORITY: i32 = 15;

#[derive(Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Rule,
    Media,
    Keyframes,
    AtRule,
    Mixin,
    Function,
}

struct Block {
    kind: BlockKind,
    name: String,
    /// The source before the body on one line (the chunk's signature);
    /// `None` when that is the name, as for most blocks.
    header: Option<String>,
    node: Span,
    outer: Span,
    body: Span,
    docstring: Option<String>,
    selectors: Vec<String>,
    classes: Vec<String>,
    ids: Vec<String>,
    custom: Map<String, Value>,
    /// A rule set whose statements are all custom property definitions
    /// (`:root { --brand: #4f46e5; }`).
    only_custom: bool,
    apply: Vec<String>,
    steps: Vec<String>,
    refs: BTreeSet<String>,
}

impl Plugin for Css {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "css".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "CSS and SCSS: rule sets, media queries, keyframes, custom properties, at-rules, SCSS mixins, functions and variables".into(),
            languages: vec!["css".into(), "scss".into()],
            file_patterns: vec!["**/*.css".into(), "**/*.scss".into()],
            priority: PRIORITY,
        }
    }

    fn chunk(file: SourceFile) -> Result<ChunkOutcome, PluginError> {
        if file.path.ends_with(".min.css") {
            return Ok(ChunkOutcome::Decline("a minified stylesheet (`.min.css`)".into()));
        }
        if file.content.trim().is_empty() {
            return Ok(ChunkOutcome::Chunks(Vec::new()));
        }
        let language = if file.path.ends_with(".scss") { "scss" } else { "css" };
        Ok(ChunkOutcome::Chunks(chunk_file(language, &file.path, &file.content)?))
    }
}

export_plugin!(Css);

/// A copy of an SCSS source, byte for byte the same length, with what the
/// host's SCSS grammar cannot read made readable: `!default` and `!global`
/// flags blanked, `@use` without `as`/`with`, `@extend %placeholder` read
/// as a class, and map values
/// (`$breakpoints: (sm: 640px)`) read as `0`. Texts that matter are sliced
/// from the original source.
#[must_use]
pub fn scss_compat(source: &str) -> String {
    let mut out = source.as_bytes().to_vec();
    for flag in ["!default", "!global"] {
        let mut at = 0;
        while let Some(pos) = source[at..].find(flag) {
            out[at + pos..at + pos + flag.len()].fill(b' ');
            at += pos + flag.len();
        }
    }
    let mut at = 0;
    while let Some(pos) = source[at..].find("@extend") {
        let rest = &source[at + pos + 7..];
        let skip = rest.len() - rest.trim_start().len();
        if rest.trim_start().starts_with('%') {
            out[at + pos + 7 + skip] = b'.';
        }
        at += pos + 7;
    }
    // `@use "x" as y;` and `@use "x" with (...)`: the module only.
    let mut at = 0;
    while let Some(pos) = source[at..].find("@use") {
        let start = at + pos + 4;
        let rest = &source[start..];
        let quote = rest.trim_start().chars().next();
        if let Some(q @ ('"' | '\'')) = quote {
            let open = start + rest.find(q).unwrap_or(0);
            if let (Some(close), Some(end)) = (source[open + 1..].find(q), source[open..].find(';')) {
                let (close, end) = (open + 1 + close + 1, open + end);
                if close <= end {
                    out[close..end].iter_mut().filter(|b| **b != b'\n').for_each(|b| *b = b' ');
                }
            }
        }
        at = start;
    }
    // `$name: (...)`: maps.
    let bytes = source.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'$' {
            let name_end = bytes[i + 1..].iter().position(|b| !(b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_')).map_or(bytes.len(), |p| i + 1 + p);
            let after = &source[name_end..];
            if let Some(value) = after.strip_prefix(':') {
                let value_start = name_end + 1 + (value.len() - value.trim_start().len());
                if bytes.get(value_start) == Some(&b'(') {
                    // The whole map becomes `0` padded with spaces (newlines kept).
                    let mut depth = 0;
                    let mut j = value_start;
                    while j < bytes.len() {
                        match bytes[j] {
                            b'(' => depth += 1,
                            b')' => depth -= 1,
                            b';' | b'{' | b'}' => break,
                            _ => {}
                        }
                        if bytes[j] != b'\n' {
                            out[j] = if j == value_start { b'0' } else { b' ' };
                        }
                        j += 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    i = j;
                    continue;
                }
            }
            i = name_end;
            continue;
        }
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| source.to_string())
}

/// A comment's text without its markers.
fn comment_text(comment: &str) -> String {
    if let Some(body) = comment.strip_prefix("/*") {
        let body = body.trim_end_matches("*/");
        let lines: Vec<&str> = body.lines().map(|l| l.trim().trim_start_matches('*').trim()).collect();
        return lines.join("\n").trim().to_string();
    }
    comment.trim_start_matches('/').trim().to_string()
}

/// The target of an import statement: `@import url("a.css") screen;` -> `a.css`.
fn import_target(statement: &str) -> Option<String> {
    let rest = statement.trim_start_matches(|c: char| c == '@' || c.is_ascii_alphabetic()).trim();
    let rest = rest.strip_prefix("url(").unwrap_or(rest);
    let quote = rest.chars().next()?;
    if quote == '"' || quote == '\'' {
        let inner = &rest[1..];
        return inner.find(quote).map(|end| inner[..end].to_string());
    }
    let end = rest.find([')', ' ', ';']).unwrap_or(rest.len());
    Some(rest[..end].to_string()).filter(|t| !t.is_empty())
}

/// `file:` symbol of a relative stylesheet import, resolved against the
/// importing file's directory.
fn file_symbol(target: &str, from_path: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("//") || !(target.ends_with(".css") || target.ends_with(".scss")) {
        return None;
    }
    code_intel_plugin_sdk::text::resolve_path(from_path, target).map(|path| format!("file:{path}"))
}

/// [`push_unique`] for a list that can grow long: `seen` holds what `list` has.
fn push_new<'t>(seen: &mut HashSet<&'t str>, list: &mut Vec<String>, item: &'t str) {
    if seen.insert(item) {
        list.push(item.to_string());
    }
}

fn push_unique(list: &mut Vec<String>, item: &str) {
    if !list.iter().any(|x| x == item) {
        list.push(item.to_string());
    }
}

/// A fact found inside a block (or at the top level), assigned to its
/// top-level block once all blocks are known.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fact {
    /// A keyframe selector (`from`, `50%`).
    Step,
    /// A custom property definition; the text is `name\nvalue`.
    Custom,
    /// `var(--name)`.
    VarRef,
    Class,
    Id,
    /// One utility of a Tailwind `@apply`.
    Apply,
    /// SCSS: a mixin an `@include` names.
    Include,
    /// SCSS: an `@extend` target.
    Extend,
    /// SCSS: a `$variable` used.
    Variable,
}

/// Ids of the kinds and fields the plugin looks at; `None` for a kind the
/// file does not contain (and for the SCSS kinds in CSS).
struct Kinds {
    stylesheet: Option<KindId>,
    rule_set: Option<KindId>,
    selectors: Option<KindId>,
    block: Option<KindId>,
    media_statement: Option<KindId>,
    keyframes_statement: Option<KindId>,
    keyframes_name: Option<KindId>,
    keyframe_block_list: Option<KindId>,
    keyframe_block: Option<KindId>,
    supports_statement: Option<KindId>,
    at_rule: Option<KindId>,
    at_keyword: Option<KindId>,
    import_statement: Option<KindId>,
    comment: Option<KindId>,
    declaration: Option<KindId>,
    property_name: Option<KindId>,
    call_expression: Option<KindId>,
    function_name: Option<KindId>,
    arguments: Option<KindId>,
    plain_value: Option<KindId>,
    class_selector: Option<KindId>,
    class_name: Option<KindId>,
    id_selector: Option<KindId>,
    id_name: Option<KindId>,
    postcss_statement: Option<KindId>,
    // SCSS only.
    mixin_statement: Option<KindId>,
    function_statement: Option<KindId>,
    identifier: Option<KindId>,
    use_statement: Option<KindId>,
    forward_statement: Option<KindId>,
    js_comment: Option<KindId>,
    include_statement: Option<KindId>,
    extend_statement: Option<KindId>,
    variable: Option<KindId>,
    name: Option<FieldId>,
}

impl Kinds {
    fn of(nodes: &NodeTable<'_>, scss: bool) -> Self {
        let scss_kind = |kind: &str| if scss { nodes.kind_id(kind) } else { None };
        Self {
            stylesheet: nodes.kind_id("stylesheet"),
            rule_set: nodes.kind_id("rule_set"),
            selectors: nodes.kind_id("selectors"),
            block: nodes.kind_id("block"),
            media_statement: nodes.kind_id("media_statement"),
            keyframes_statement: nodes.kind_id("keyframes_statement"),
            keyframes_name: nodes.kind_id("keyframes_name"),
            keyframe_block_list: nodes.kind_id("keyframe_block_list"),
            keyframe_block: nodes.kind_id("keyframe_block"),
            supports_statement: nodes.kind_id("supports_statement"),
            at_rule: nodes.kind_id("at_rule"),
            at_keyword: nodes.kind_id("at_keyword"),
            import_statement: nodes.kind_id("import_statement"),
            comment: nodes.kind_id("comment"),
            declaration: nodes.kind_id("declaration"),
            property_name: nodes.kind_id("property_name"),
            call_expression: nodes.kind_id("call_expression"),
            function_name: nodes.kind_id("function_name"),
            arguments: nodes.kind_id("arguments"),
            plain_value: nodes.kind_id("plain_value"),
            class_selector: nodes.kind_id("class_selector"),
            class_name: nodes.kind_id("class_name"),
            id_selector: nodes.kind_id("id_selector"),
            id_name: nodes.kind_id("id_name"),
            postcss_statement: nodes.kind_id("postcss_statement"),
            mixin_statement: scss_kind("mixin_statement"),
            function_statement: scss_kind("function_statement"),
            identifier: scss_kind("identifier"),
            use_statement: scss_kind("use_statement"),
            forward_statement: scss_kind("forward_statement"),
            js_comment: scss_kind("js_comment"),
            include_statement: scss_kind("include_statement"),
            extend_statement: scss_kind("extend_statement"),
            variable: scss_kind("variable"),
            name: nodes.field_id("name"),
        }
    }
}

/// What [`scan`] does with a node of a kind: one lookup per node
/// ([`Kinds::roles`]) instead of comparing its kind with every kind in turn.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Other,
    PlainValue,
    PropertyName,
    ClassName,
    IdName,
    Variable,
    KeyframeBlock,
    AtKeyword,
    Include,
    Extend,
    // Top-level only (children of `stylesheet`):
    Comment,
    Import,
    RuleSet,
    MediaOrSupports,
    Keyframes,
    AtRule,
    MixinOrFunction,
}

impl Kinds {
    /// The role of every kind of the table, indexed by [`KindId::index`].
    fn roles(&self, kind_count: usize) -> Vec<Role> {
        let mut roles = vec![Role::Other; kind_count];
        let assignments = [
            (self.plain_value, Role::PlainValue),
            (self.property_name, Role::PropertyName),
            (self.class_name, Role::ClassName),
            (self.id_name, Role::IdName),
            (self.variable, Role::Variable),
            (self.keyframe_block, Role::KeyframeBlock),
            (self.at_keyword, Role::AtKeyword),
            (self.include_statement, Role::Include),
            (self.extend_statement, Role::Extend),
            (self.comment, Role::Comment),
            (self.js_comment, Role::Comment),
            (self.import_statement, Role::Import),
            (self.use_statement, Role::Import),
            (self.forward_statement, Role::Import),
            (self.rule_set, Role::RuleSet),
            (self.media_statement, Role::MediaOrSupports),
            (self.supports_statement, Role::MediaOrSupports),
            (self.keyframes_statement, Role::Keyframes),
            (self.at_rule, Role::AtRule),
            (self.mixin_statement, Role::MixinOrFunction),
            (self.function_statement, Role::MixinOrFunction),
        ];
        for (kind, role) in assignments {
            if let Some(slot) = kind.and_then(|k| roles.get_mut(k.index())) {
                *slot = role;
            }
        }
        roles
    }
}

/// What one pass over the node table finds.
struct Scan<'s> {
    /// Top-level blocks, in document order.
    blocks: Vec<Block>,
    /// Top-level comments, in document order.
    comments: Vec<Span>,
    /// Import targets as written, each once.
    imports: Vec<String>,
    /// `file:` symbols of the imports.
    related: BTreeSet<String>,
    /// Top-level SCSS variables -> values.
    variables: Map<String, Value>,
    /// Inner facts (where, what, text), in document order per kind of fact.
    inner: Vec<(u32, Fact, Cow<'s, str>)>,
}

fn new_block(kind: BlockKind, name: String, node: Span, body: Span) -> Block {
    Block {
        kind,
        name,
        header: None,
        node,
        outer: node,
        body,
        docstring: None,
        selectors: Vec::new(),
        classes: Vec::new(),
        ids: Vec::new(),
        custom: Map::new(),
        only_custom: false,
        apply: Vec::new(),
        steps: Vec::new(),
        refs: BTreeSet::new(),
    }
}

/// The first child of `node` of kind `first` and the first child of kind
/// `then` after it.
fn child_pair<'a>(node: NodeRef<'a>, first: impl Fn(NodeRef<'a>) -> bool, then: Option<KindId>) -> Option<(NodeRef<'a>, NodeRef<'a>)> {
    let mut children = node.children();
    let first = children.by_ref().find(|c| first(*c))?;
    Some((first, children.find(|c| c.is(then))?))
}

/// Sorts the nodes the plugin needs out of the table, in one pass. Each
/// rule is one pattern of the query the plugin used to run (the SCSS ones
/// only for SCSS), emitted in the order the query produced its matches
/// (document order of the node that completes each pattern):
/// - top-level (children of `stylesheet`): `(rule_set (selectors) (block))`,
///   `(media_statement (block))`, `(keyframes_statement (keyframes_name)
///   (keyframe_block_list))`, `(supports_statement (block))`, `(at_rule
///   (at_keyword) (block))`, `(mixin_statement name: (identifier) (block))`,
///   `(function_statement name: (identifier) (block))`, `(import_statement)`,
///   `(use_statement)`, `(forward_statement)`, `(comment)`, `(js_comment)`,
///   and `(declaration (property_name))` named `$…`;
/// - anywhere: `(keyframe_block . (_) @step)`, `(declaration
///   (property_name))` named `--…`, `(call_expression (function_name)
///   (arguments (plain_value)))` with the function `var`, `(class_selector
///   (class_name))`, `(id_selector (id_name))`, `(postcss_statement
///   (at_keyword))` with the keyword `@apply`, `(include_statement
///   (identifier))`, `(extend_statement)` and `(variable)`.
#[allow(clippy::too_many_lines)]
fn scan<'s>(nodes: &'s NodeTable<'s>, scss: bool, path: &str, source: &'s str) -> Scan<'s> {
    let k = Kinds::of(nodes, scss);
    let mut found = Scan {
        blocks: Vec::new(),
        comments: Vec::new(),
        imports: Vec::new(),
        related: BTreeSet::new(),
        variables: Map::new(),
        inner: Vec::new(),
    };
    let top_level = |node: NodeRef<'_>| node.parent().is_some_and(|p| p.is(k.stylesheet));
    let roles = k.roles(nodes.kind_count());
    for node in nodes.iter() {
        let kind = Some(node.kind_id());
        let role = roles.get(node.kind_id().index()).copied().unwrap_or(Role::Other);
        if role == Role::Other {
            continue;
        }
        if role == Role::PlainValue {
            // `var(--name)`: the value is an argument of a `var` call.
            let Some(args) = node.parent().filter(|a| a.is(k.arguments)) else { continue };
            let Some(call) = args.parent().filter(|c| c.is(k.call_expression)) else { continue };
            let is_var = call
                .children()
                .take_while(|c| c.index() < args.index())
                .any(|c| c.is(k.function_name) && c.text() == "var");
            if is_var {
                found.inner.push((node.start_byte(), Fact::VarRef, Cow::Borrowed(node.text())));
            }
        } else if role == Role::PropertyName {
            let Some(decl) = node.parent().filter(|d| d.is(k.declaration)) else { continue };
            let name = node.text();
            if name.starts_with("--") {
                let value = decl.text()[(node.end_byte() - decl.start_byte()) as usize..].trim_start().trim_start_matches(':');
                let text = format!("{name}\n{}", one_line(value.trim().trim_end_matches(';')));
                found.inner.push((decl.start_byte(), Fact::Custom, Cow::Owned(text)));
            } else if scss && name.starts_with('$') && top_level(decl) {
                let value = Span::from(decl).text(source)[(node.end_byte() - decl.start_byte()) as usize..].trim_start().trim_start_matches(':');
                found.variables.insert(name.to_string(), Value::String(one_line(value.trim().trim_end_matches(';'))));
            }
        } else if role == Role::ClassName {
            if !node.parent().is_some_and(|p| p.is(k.class_selector)) {
                continue;
            }
            // `@extend %placeholder` reads as a class in the parsed copy.
            let start = node.start_byte();
            if start > 0 && source.as_bytes()[start as usize - 1] == b'%' {
                continue;
            }
            found.inner.push((start, Fact::Class, Cow::Borrowed(node.text())));
        } else if role == Role::IdName {
            if node.parent().is_some_and(|p| p.is(k.id_selector)) {
                found.inner.push((node.start_byte(), Fact::Id, Cow::Borrowed(node.text())));
            }
        } else if role == Role::Variable {
            found.inner.push((node.start_byte(), Fact::Variable, Cow::Borrowed(node.text())));
        } else if role == Role::KeyframeBlock {
            if let Some(step) = node.children().next() {
                found.inner.push((step.start_byte(), Fact::Step, Cow::Borrowed(step.text())));
            }
        } else if role == Role::AtKeyword {
            let Some(apply) = node.parent().filter(|p| p.is(k.postcss_statement)) else { continue };
            if node.text() == "@apply" {
                let args = apply.text()[(node.end_byte() - apply.start_byte()) as usize..].trim().trim_end_matches(';');
                for utility in args.split_whitespace().filter(|u| *u != "!important") {
                    found.inner.push((apply.start_byte(), Fact::Apply, Cow::Borrowed(utility)));
                }
            }
        } else if role == Role::Include {
            for mixin in node.children().filter(|c| c.is(k.identifier)) {
                found.inner.push((mixin.start_byte(), Fact::Include, Cow::Borrowed(mixin.text())));
            }
        } else if role == Role::Extend {
            let target = Span::from(node).text(source).trim_start_matches("@extend").trim().trim_end_matches(';').trim_end_matches("!optional");
            found.inner.push((node.start_byte(), Fact::Extend, Cow::Owned(one_line(target))));
        } else if !top_level(node) {
            // The rules below are for children of `stylesheet` only.
        } else if role == Role::Comment {
            found.comments.push(Span::from(node));
        } else if role == Role::Import {
            if let Some(target) = import_target(node.text()) {
                found.related.extend(file_symbol(&target, path));
                push_unique(&mut found.imports, &target);
            }
        } else if role == Role::RuleSet {
            let Some((selectors, body)) = child_pair(node, |c| c.is(k.selectors), k.block) else { continue };
            let text = selectors.text();
            let mut block = new_block(BlockKind::Rule, one_line(text), Span::from(node), Span::from(body));
            block.selectors = if text.contains(',') {
                split_top_level(text, ',').into_iter().map(one_line).filter(|s| !s.is_empty()).collect()
            } else {
                Some(block.name.clone()).filter(|s| !s.is_empty()).into_iter().collect()
            };
            if node.start_byte() != selectors.start_byte() || !source[selectors.end_byte() as usize..body.start_byte() as usize].trim().is_empty() {
                block.header = Some(one_line(&source[node.start_byte() as usize..body.start_byte() as usize]));
            }
            // The block's statements from the tree: reading the body's text
            // again would cost a pass over most of the file.
            let (mut statements, mut custom) = (0, 0);
            for statement in body.children().filter(|c| !matches!(roles.get(c.kind_id().index()), Some(Role::Comment))) {
                statements += 1;
                let property = statement.children().next().filter(|p| statement.is(k.declaration) && p.is(k.property_name));
                custom += usize::from(property.is_some_and(|p| p.text().starts_with("--")));
            }
            block.only_custom = statements > 0 && custom == statements;
            found.blocks.push(block);
        } else if role == Role::MediaOrSupports {
            let Some(body) = node.children().find(|c| c.is(k.block)) else { continue };
            let header = &source[node.start_byte() as usize..body.start_byte() as usize];
            let kind = if kind == k.media_statement { BlockKind::Media } else { BlockKind::AtRule };
            found.blocks.push(new_block(kind, one_line(header), Span::from(node), Span::from(body)));
        } else if role == Role::Keyframes {
            let Some((name, body)) = child_pair(node, |c| c.is(k.keyframes_name), k.keyframe_block_list) else { continue };
            let mut block = new_block(BlockKind::Keyframes, name.text().to_string(), Span::from(node), Span::from(body));
            block.header = Some(one_line(&source[node.start_byte() as usize..body.start_byte() as usize]));
            found.blocks.push(block);
        } else if role == Role::AtRule {
            let Some((_, body)) = child_pair(node, |c| c.is(k.at_keyword), k.block) else { continue };
            let header = &source[node.start_byte() as usize..body.start_byte() as usize];
            found.blocks.push(new_block(BlockKind::AtRule, one_line(header), Span::from(node), Span::from(body)));
        } else if role == Role::MixinOrFunction {
            let named = |c: NodeRef<'_>| c.is(k.identifier) && k.name.is_some() && c.field_id() == k.name;
            let Some((name, body)) = child_pair(node, named, k.block) else { continue };
            let kind = if kind == k.mixin_statement { BlockKind::Mixin } else { BlockKind::Function };
            let mut block = new_block(kind, name.text().to_string(), Span::from(node), Span::from(body));
            block.header = Some(one_line(&source[node.start_byte() as usize..body.start_byte() as usize]));
            found.blocks.push(block);
        }
    }
    found
}

/// The whole file's span. Its last line is the root node's when the root
/// reaches the end of the file, as it does unless the file ends in
/// something the grammar skips; only then are the lines counted.
fn file_span(nodes: &NodeTable<'_>, source: &str) -> Span {
    let len = u32::try_from(source.len()).unwrap_or(u32::MAX);
    match nodes.get(0) {
        Some(root) if root.start_byte() == 0 && root.end_byte() == len => Span::from(root),
        _ => LineIndex::new(source).span(0, len),
    }
}

#[allow(clippy::too_many_lines)]
fn chunk_file(language: &str, path: &str, source: &str) -> Result<Vec<code_intel_plugin_sdk::Chunk>, PluginError> {
    let scss = language == "scss";
    let compat = if scss { scss_compat(source) } else { String::new() };
    let tree = parse(language, if scss { &compat } else { source })?;
    let nodes = tree.nodes(&[])?;
    // Top-level blocks come in document order.
    let Scan { mut blocks, mut comments, imports, related, variables, inner } = scan(&nodes, scss, path, source);

    // Comments directly above a block: its docstring.
    comments.sort_by_key(|c| c.start_byte);
    for block in &mut blocks {
        let run = comments_above(source, &comments, block.node.start_byte);
        if let Some(first) = run.first() {
            let doc: Vec<String> = run.iter().map(|c| comment_text(c.text(source))).collect();
            block.docstring = Some(doc.join("\n").trim().to_string()).filter(|d| !d.is_empty());
            block.outer = first.join(block.node);
        }
    }

    // Inner facts to their top-level block (or to the stylesheet).
    let mut sheet_refs: BTreeSet<String> = BTreeSet::new();
    let mut custom_names: Vec<String> = Vec::new();
    let mut all_classes: Vec<String> = Vec::new();
    let mut all_ids: Vec<String> = Vec::new();
    // Membership of the two file-wide lists, which grow with the file (a
    // list search per class would be quadratic).
    let (mut class_set, mut id_set) = (HashSet::new(), HashSet::new());
    for (at, what, text) in &inner {
        let (at, what, text) = (*at, *what, &**text);
        let pos = blocks.partition_point(|b| b.node.start_byte <= at);
        let owner = pos.checked_sub(1).filter(|&i| blocks[i].node.contains_byte(at));
        match what {
            Fact::Custom => {
                let (name, value) = text.split_once('\n').unwrap_or((text, ""));
                push_unique(&mut custom_names, name);
                if let Some(i) = owner {
                    blocks[i].custom.insert(name.to_string(), Value::String(value.to_string()));
                }
            }
            Fact::Class => push_new(&mut class_set, &mut all_classes, text),
            Fact::Id => push_new(&mut id_set, &mut all_ids, text),
            _ => {}
        }
        let is_ref = matches!(what, Fact::VarRef | Fact::Include | Fact::Extend | Fact::Variable);
        let Some(i) = owner else {
            if is_ref {
                sheet_refs.insert(text.to_string());
            }
            continue;
        };
        let block = &mut blocks[i];
        match what {
            Fact::Step => push_unique(&mut block.steps, text),
            // Classes and ids of the selectors, then of nested rules (SCSS,
            // media queries): one list each.
            Fact::Class => push_unique(&mut block.classes, text),
            Fact::Id => push_unique(&mut block.ids, text),
            Fact::Apply => push_unique(&mut block.apply, text),
            _ if is_ref => {
                block.refs.insert(text.to_string());
            }
            _ => {}
        }
    }
    let file_name = path.rsplit('/').next().unwrap_or(path);
    let mut chunks = ChunkSet::new(source);
    let holes: Vec<(std::ops::Range<usize>, &str)> = blocks.iter().map(|b| (b.body.range(), "{ ... }")).collect();
    let names_of = |kind: BlockKind| -> Vec<String> {
        let mut names = Vec::new();
        for b in blocks.iter().filter(|b| b.kind == kind) {
            push_unique(&mut names, &b.name);
        }
        names
    };
    let nonempty = |v: Vec<String>| Some(v).filter(|l| !l.is_empty());
    let mut sheet = ChunkBuilder::new("stylesheet", file_name)
        .id("stylesheet")
        .qualified_name(path)
        .span(file_span(&nodes, source))
        .content(elide(source, 0..source.len(), &holes))
        .related_all(related)
        .references(sheet_refs)
        .meta("language", language)
        .meta_opt("imports", nonempty(imports))
        .meta_opt("custom_properties", nonempty(custom_names))
        .meta_opt("variables", Some(Value::Object(variables.clone())).filter(|_| !variables.is_empty()))
        .meta_opt("keyframes", nonempty(names_of(BlockKind::Keyframes)))
        .meta_opt("media_queries", nonempty(names_of(BlockKind::Media)))
        .meta_opt("mixins", nonempty(names_of(BlockKind::Mixin)))
        .meta_opt("functions", nonempty(names_of(BlockKind::Function)))
        .meta_opt("classes", nonempty(all_classes))
        .meta_opt("ids", nonempty(all_ids));
    if tree.has_errors() {
        sheet = sheet.meta("syntax_errors", true);
    }
    chunks.push(sheet);

    // The blocks are not needed after their chunks: move their lists.
    for block in blocks {
        let kind = match block.kind {
            BlockKind::Rule if block.only_custom => "custom_properties",
            BlockKind::Rule => "rule_set",
            BlockKind::Media => "media_query",
            BlockKind::Keyframes => "keyframes",
            BlockKind::AtRule => "at_rule",
            BlockKind::Mixin => "mixin",
            BlockKind::Function => "function",
        };
        let header = block.header.unwrap_or_else(|| block.name.clone());
        let custom: BTreeMap<String, Value> = block.custom.into_iter().collect();
        let id = [kind, ":", &block.name].concat();
        let mut builder = ChunkBuilder::new(kind, block.name)
            .id(id)
            .span(block.outer)
            .signature(header.as_str())
            .docstring(block.docstring)
            .references(block.refs)
            .meta_opt("selectors", nonempty(block.selectors))
            .meta_opt("classes", nonempty(block.classes))
            .meta_opt("ids", nonempty(block.ids))
            .meta_opt("custom_properties", Some(serde_json::json!(custom)).filter(|_| !custom.is_empty()))
            .meta_opt("apply", nonempty(block.apply))
            .meta_opt("steps", nonempty(block.steps));
        match block.kind {
            BlockKind::Media => builder = builder.meta("query", header.trim_start_matches("@media").trim()),
            BlockKind::AtRule => {
                let keyword = header.split_whitespace().next().unwrap_or_default().trim_start_matches('@');
                builder = builder.meta("at_rule", keyword);
                if keyword == "font-face" {
                    let family = block.body.text(source).split(';').find_map(|d| {
                        let (property, value) = d.split_once(':')?;
                        (property.trim().trim_start_matches('{').trim() == "font-family").then(|| value.trim().trim_matches(['"', '\'']).to_string())
                    });
                    builder = builder.meta_opt("font_family", family);
                }
            }
            _ => {}
        }
        chunks.push(builder);
    }
    Ok(chunks.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compat_keeps_offsets() {
        let src = "$a: 1px !default;\n$m: (sm: 1px, md: (x: 2));\n.b { @extend %c; }\n";
        let out = scss_compat(src);
        assert_eq!(out.len(), src.len());
        assert_eq!(out, "$a: 1px         ;\n$m: 0                    ;\n.b { @extend .c; }\n");
        assert_eq!(scss_compat("@use \"a\" as b;\n"), "@use \"a\"     ;\n");
    }

    #[test]
    fn imports() {
        assert_eq!(import_target("@import url(\"theme.css\") screen;").as_deref(), Some("theme.css"));
        assert_eq!(import_target("@import 'base';").as_deref(), Some("base"));
        assert_eq!(import_target("@use \"sass:math\";").as_deref(), Some("sass:math"));
        assert_eq!(import_target("@import url(print.css);").as_deref(), Some("print.css"));
        assert_eq!(file_symbol("../base/reset.css", "src/styles/app.css").as_deref(), Some("file:src/base/reset.css"));
        assert_eq!(file_symbol("sass:math", "a.scss"), None);
        assert_eq!(file_symbol("https://x.org/a.css", "a.css"), None);
    }
}
