//! The JavaScript / TypeScript chunk strategy, shared by the `javascript`
//! plugin and by plugins that embed scripts (Vue single-file components).
//!
//! One source becomes:
//! - a `module` chunk: the file with the bodies of its top-level definitions
//!   elided (imports, exports, constants and top-level code verbatim), with
//!   imports, exports and top-level names in metadata;
//! - a `class` chunk per class (header, JSDoc, decorators, fields and member
//!   signatures, method bodies elided) and a `method` chunk per method or
//!   arrow-function field (`Class.method`);
//! - a `function` chunk per function declaration and per arrow function or
//!   function expression bound to a name (`const add = (a, b) => a + b`,
//!   `exports.add = function () {}`); a capitalised function or class that
//!   renders JSX is a `component` (React);
//! - `interface`, `type_alias`, `enum` and `namespace` chunks for TypeScript.
//!
//! Definitions inside functions stay part of their enclosing chunk. Spans
//! include `export`, decorators and the JSDoc comment; JSDoc becomes the
//! docstring. Qualified names are the module path (the file path without
//! extension and without a trailing `/index`) and the dotted path inside it:
//! `src/models/user.User.save`. Relative imports resolve the same way, so an
//! imported name's related symbol is the qualified name of its definition;
//! package imports stay as written (`react.useState`), and relative imports
//! of non-script files become `file:` symbols.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use code_intel_plugin_sdk::text::{docblock, elide, one_line};
use code_intel_plugin_sdk::{
    Chunk, ChunkBuilder, ChunkSet, LineIndex, MatchSet, PluginError, Span, SpanSet, Tree, parse,
};
use serde_json::Value;

/// Host grammar for a script file: `javascript` (with JSX) for `.js`,
/// `.jsx`, `.mjs`, `.cjs`; `tsx` for `.tsx`; `typescript` for `.ts`, `.mts`,
/// `.cts`. `None` for anything else.
#[must_use]
pub fn grammar_for(path: &str) -> Option<&'static str> {
    let ext = path.rsplit_once('.').map(|(_, e)| e)?;
    match ext {
        "js" | "jsx" | "mjs" | "cjs" => Some("javascript"),
        "ts" | "mts" | "cts" => Some("typescript"),
        "tsx" => Some("tsx"),
        _ => None,
    }
}

const SCRIPT_EXTENSIONS: &[&str] = &[".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts"];

/// Module path of a repository-relative file: extension and a trailing
/// `/index` dropped (`src/components/index.ts` -> `src/components`).
#[must_use]
pub fn module_path(path: &str) -> String {
    let mut path = path.trim_start_matches("./");
    for ext in SCRIPT_EXTENSIONS {
        if let Some(p) = path.strip_suffix(ext) {
            path = p;
            break;
        }
    }
    let path = path.strip_suffix("/index").unwrap_or(path);
    if path == "index" { String::new() } else { path.to_string() }
}

/// Resolves an import source against the importing file. Relative script
/// imports become module paths, relative imports of other files `file:`
/// symbols, packages stay as written.
#[must_use]
pub fn resolve_import(source: &str, from_path: &str) -> String {
    if !(source.starts_with("./") || source.starts_with("../") || source == "." || source == "..") {
        return source.to_string();
    }
    let mut parts: Vec<&str> = from_path.split('/').collect();
    parts.pop();
    for segment in source.split('/') {
        match segment {
            "." | "" => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    let last = joined.rsplit('/').next().unwrap_or(&joined);
    let is_script = SCRIPT_EXTENSIONS.iter().any(|e| joined.ends_with(e)) || !last.contains('.');
    if is_script { module_path(&joined) } else { format!("file:{joined}") }
}

/// Patterns every grammar understands.
const COMMON: &str = r#"
(function_declaration name: (identifier) @name body: (statement_block) @body) @def
(generator_function_declaration name: (identifier) @name body: (statement_block) @body) @def
(lexical_declaration . (variable_declarator name: (identifier) @name value: [(arrow_function body: (_) @body) (function_expression body: (_) @body) (generator_function body: (_) @body)]) .) @def
(variable_declaration . (variable_declarator name: (identifier) @name value: [(arrow_function body: (_) @body) (function_expression body: (_) @body) (generator_function body: (_) @body)]) .) @def
(expression_statement (assignment_expression left: (member_expression object: [(identifier) @exports (member_expression object: (identifier) @exports property: (property_identifier) @exports)] property: (property_identifier) @name) right: [(arrow_function body: (_) @body) (function_expression body: (_) @body)]) (#any-of? @exports "exports" "module")) @def
(class_declaration name: (_) @name body: (class_body) @body) @def
(method_definition name: (_) @name body: (statement_block) @body) @def

(export_statement) @export
(export_specifier name: (_) @export.name)
(export_statement value: (identifier) @export.default)
(comment) @comment
(decorator) @decorator

(import_statement (import_clause (identifier) @import.default) source: (string (string_fragment) @import.source)) @import
(import_statement (import_clause (namespace_import (identifier) @import.namespace)) source: (string (string_fragment) @import.source)) @import
(import_statement (import_clause (named_imports (import_specifier name: (_) @import.name alias: (identifier)? @import.alias))) source: (string (string_fragment) @import.source)) @import
(import_statement . source: (string (string_fragment) @import.source)) @import
(variable_declarator name: (identifier) @import.namespace value: (call_expression function: (identifier) @require arguments: (arguments . (string (string_fragment) @import.source))) (#eq? @require "require")) @import
(variable_declarator name: (object_pattern (shorthand_property_identifier_pattern) @import.name) value: (call_expression function: (identifier) @require arguments: (arguments . (string (string_fragment) @import.source))) (#eq? @require "require")) @import
(export_statement source: (string (string_fragment) @reexport.source))

(call_expression function: (identifier) @callee)
(call_expression function: (member_expression property: (property_identifier) @callee))
(new_expression constructor: (identifier) @id)
((identifier) @id (#match? @id "^[A-Z]"))
(member_expression object: (identifier) @id)
(arguments (identifier) @id)
(variable_declarator name: (identifier) @binding)
"#;

/// JavaScript only: class fields and heritage have other shapes than in TypeScript.
const JS_ONLY: &str = r#"
(field_definition property: (_) @name value: [(arrow_function body: (_) @body) (function_expression body: (_) @body)]) @def
(field_definition property: (_) @field) @owner
(class_heritage (_) @extends)
"#;

/// TypeScript (both grammars).
const TS_ONLY: &str = r#"
(abstract_class_declaration name: (_) @name body: (class_body) @body) @def
(public_field_definition name: (_) @name value: [(arrow_function body: (_) @body) (function_expression body: (_) @body)]) @def
(public_field_definition name: (_) @field) @owner
(interface_declaration name: (_) @name body: (interface_body) @body) @def
(type_alias_declaration name: (_) @name value: (_) @body) @def
(enum_declaration name: (_) @name body: (enum_body) @body) @def
(internal_module name: (_) @name body: (statement_block) @body) @def
(function_signature name: (identifier) @name) @def
(class_heritage (extends_clause value: (_) @extends))
(class_heritage (implements_clause (_) @implements))
(extends_type_clause (_) @extends)
(type_identifier) @type
"#;

/// JSX (the `javascript` and `tsx` grammars).
const JSX_ONLY: &str = r#"
(jsx_opening_element name: (_) @jsx)
(jsx_self_closing_element name: (_) @jsx)
"#;

/// The query for a grammar: all patterns in one, so the tree is walked once.
fn query_for(language: &str) -> String {
    match language {
        "typescript" => format!("{COMMON}{TS_ONLY}"),
        "tsx" => format!("{COMMON}{TS_ONLY}{JSX_ONLY}"),
        _ => format!("{COMMON}{JS_ONLY}{JSX_ONLY}"),
    }
}

/// Globals and builtin types left out of `references`.
const BUILTINS: &[&str] = &[
    "Array", "ArrayBuffer", "Boolean", "Date", "Error", "JSON", "Map", "Math", "Number", "Object", "Promise",
    "Proxy", "Reflect", "RegExp", "Set", "String", "Symbol", "TypeError", "RangeError", "WeakMap", "WeakSet",
    "Record", "Partial", "Required", "Readonly", "Pick", "Omit", "Exclude", "Extract", "NonNullable",
    "ReturnType", "Parameters", "InstanceType", "Awaited", "Uppercase", "Lowercase", "console", "window",
    "document", "globalThis", "process", "require", "module", "exports", "undefined", "NaN", "Infinity",
    "parseInt", "parseFloat", "setTimeout", "clearTimeout", "setInterval", "clearInterval", "fetch",
    "this", "super", "push", "map", "filter", "reduce", "forEach", "then", "catch", "log", "join", "slice",
    "includes", "find", "keys", "values", "entries", "toString", "length",
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum DefKind {
    Function,
    Class,
    Method,
    Interface,
    TypeAlias,
    Enum,
    Namespace,
}

impl DefKind {
    fn of(node_kind: &str) -> Self {
        match node_kind {
            "class_declaration" | "abstract_class_declaration" => Self::Class,
            "method_definition" | "field_definition" | "public_field_definition" => Self::Method,
            "interface_declaration" => Self::Interface,
            "type_alias_declaration" => Self::TypeAlias,
            "enum_declaration" => Self::Enum,
            "internal_module" => Self::Namespace,
            _ => Self::Function,
        }
    }

    /// Definitions whose nested definitions may become chunks.
    fn is_container(self) -> bool {
        matches!(self, Self::Class | Self::Namespace)
    }
}

struct Def {
    kind: DefKind,
    name: String,
    node: Span,
    /// With `export`, decorators and JSDoc.
    outer: Span,
    name_start: u32,
    body: Option<Span>,
    docstring: Option<String>,
    decorators: Vec<String>,
    exported: bool,
    default_export: bool,
    extends: Vec<String>,
    implements: Vec<String>,
    fields: Vec<String>,
    jsx: bool,
    parent: Option<usize>,
    chunked: bool,
    path: String,
}

/// Chunks one script. `language` is a host grammar name (see
/// [`grammar_for`]); `path` the repository-relative path (imports resolve
/// against it).
///
/// # Errors
/// When the host cannot parse or query the source.
pub fn chunk_script(language: &str, path: &str, source: &str) -> Result<Vec<Chunk>, PluginError> {
    let tree = parse(language, source)?;
    let mut chunks = ChunkSet::new(source);
    let lines = LineIndex::new(source);
    push_script_chunks(&mut chunks, &tree, language, path, source, &lines, &module_path(path), None)?;
    Ok(chunks.finish())
}

/// What a script makes of itself, pushed into `chunks`. Spans come from
/// `lines`, which index the whole file `source` the script was parsed from
/// (the caller may parse a padded copy of the file so that offsets match).
/// `parent` becomes the parent of the module chunk (a Vue `script` block).
///
/// # Errors
/// When the host cannot run the query.
#[allow(clippy::too_many_arguments, clippy::too_many_lines)]
pub fn push_script_chunks(
    chunks: &mut ChunkSet<'_>,
    tree: &Tree,
    language: &str,
    path: &str,
    source: &str,
    lines: &LineIndex,
    module: &str,
    parent: Option<(String, String)>,
) -> Result<(), PluginError> {
    let matches = tree.matches(&query_for(language))?;
    let mut defs = collect_defs(&matches, source, lines);
    let imports = collect_imports(&matches, path);
    mark_exports(&matches, &mut defs);

    let top: Vec<usize> = (0..defs.len()).filter(|&i| defs[i].parent.is_none()).collect();
    let top_names: BTreeSet<String> = top.iter().map(|&i| defs[i].name.clone()).collect();
    let uses = collect_uses(&matches, &defs, &imports, &top_names);
    let resolve = |name: &str| -> Option<String> {
        if let Some(target) = imports.bindings.get(name) {
            return Some(target.clone());
        }
        top_names.contains(name).then(|| join(module, name))
    };

    // The module summary.
    let (module_id, module_kind, module_name, module_parent, module_span) = match &parent {
        Some((block_id, _)) => {
            let start = u32::try_from(source.len() - source.trim_start().len()).unwrap_or(0);
            let end = u32::try_from(source.trim_end().len()).unwrap_or(0);
            ("module".to_string(), "module", module.rsplit('/').next().unwrap_or(module).to_string(), Some(block_id.clone()), lines.span(start, end.max(start)))
        }
        None => {
            let name = module.rsplit('/').next().filter(|n| !n.is_empty()).unwrap_or(path).to_string();
            ("module".to_string(), "module", name, None, lines.span(0, u32::try_from(source.len()).unwrap_or(u32::MAX)))
        }
    };
    let holes: Vec<(std::ops::Range<usize>, &str)> =
        top.iter().filter(|&&i| defs[i].chunked).filter_map(|&i| body_hole(&defs[i], source)).collect();
    let skeleton = elide(source, module_span.range(), &holes);
    let module_refs = uses.get(&None).cloned().unwrap_or_default();
    let names_of = |kinds: &[DefKind]| -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for &i in top.iter().filter(|&&i| kinds.contains(&defs[i].kind)) {
            if !names.contains(&defs[i].name) {
                names.push(defs[i].name.clone());
            }
        }
        names
    };
    let mut exports: Vec<String> = Vec::new();
    for &i in top.iter().filter(|&&i| defs[i].exported) {
        if !exports.contains(&defs[i].name) {
            exports.push(defs[i].name.clone());
        }
    }
    let mut module_chunk = ChunkBuilder::new(module_kind, module_name)
        .id(module_id)
        .qualified_name(module)
        .parent(module_parent)
        .span(module_span)
        .content(skeleton)
        .docstring(file_doc(&matches, &defs, source))
        .related_all(imports.modules.iter().cloned())
        .references(module_refs.iter().cloned())
        .meta("language", language)
        .meta_opt("imports", Some(imports.listed.clone()))
        .meta_opt("exports", Some(exports))
        .meta_opt("classes", Some(names_of(&[DefKind::Class])))
        .meta_opt("functions", Some(names_of(&[DefKind::Function])))
        .meta_opt("types", Some(names_of(&[DefKind::Interface, DefKind::TypeAlias, DefKind::Enum])));
    if tree.has_errors() {
        module_chunk = module_chunk.meta("syntax_errors", true);
    }
    let module_id = chunks.push(module_chunk);

    let mut ids: HashMap<usize, String> = HashMap::new();
    for (i, def) in defs.iter().enumerate() {
        if !def.chunked {
            continue;
        }
        let component = def.jsx && def.name.starts_with(|c: char| c.is_ascii_uppercase());
        let kind = match def.kind {
            DefKind::Function | DefKind::Class if component => "component",
            DefKind::Function => "function",
            DefKind::Class => "class",
            DefKind::Method => "method",
            DefKind::Interface => "interface",
            DefKind::TypeAlias => "type_alias",
            DefKind::Enum => "enum",
            DefKind::Namespace => "namespace",
        };
        let refs = uses.get(&Some(i)).cloned().unwrap_or_default();
        let related: Vec<String> = refs.iter().filter_map(|r| resolve(r)).collect();
        let parent_id = def.parent.and_then(|p| ids.get(&p).cloned()).or_else(|| parent.as_ref().map(|_| module_id.clone()));
        let mut builder = ChunkBuilder::new(kind, def.name.clone())
            .id(format!("{kind}:{}", def.path))
            .qualified_name(join(module, &def.path))
            .parent(parent_id)
            .span(def.outer)
            .signature(signature(def, source))
            .docstring(def.docstring.clone())
            .references(refs.iter().cloned())
            .related_all(related)
            .related_all(def.extends.iter().chain(&def.implements).filter_map(|b| resolve_dotted(b, &resolve)))
            .meta_opt("decorators", Some(def.decorators.clone()))
            .meta_opt("extends", Some(def.extends.clone()))
            .meta_opt("implements", Some(def.implements.clone()));
        if def.exported {
            builder = builder.meta("exported", true);
        }
        if def.default_export {
            builder = builder.meta("default_export", true);
        }
        let head = source.get(def.node.start_byte as usize..def.name_start as usize).unwrap_or_default();
        let after_name = def.body.map_or("", |b| source.get(def.name_start as usize..b.start_byte as usize).unwrap_or_default());
        if matches!(def.kind, DefKind::Function | DefKind::Method)
            && (head.split_whitespace().any(|w| w == "async") || after_name.contains("async "))
        {
            builder = builder.meta("async", true);
        }
        if def.kind == DefKind::Class {
            let children: Vec<usize> = (0..defs.len()).filter(|&c| defs[c].parent == Some(i)).collect();
            let holes: Vec<_> = children.iter().filter_map(|&c| body_hole(&defs[c], source)).collect();
            let methods: Vec<String> = children.iter().map(|&c| defs[c].name.clone()).collect::<BTreeSet<_>>().into_iter().collect();
            builder = builder
                .content(elide(source, def.outer.range(), &holes))
                .meta_opt("methods", Some(methods))
                .meta_opt("fields", Some(def.fields.clone()));
        } else if def.kind == DefKind::Namespace {
            let children: Vec<usize> = (0..defs.len()).filter(|&c| defs[c].parent == Some(i)).collect();
            let holes: Vec<_> = children.iter().filter_map(|&c| Some((defs[c].outer.range(), "")).filter(|_| defs[c].chunked)).collect();
            builder = builder.content(elide(source, def.outer.range(), &holes));
        }
        let id = chunks.push(builder);
        ids.insert(i, id);
    }
    Ok(())
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() { name.to_string() } else { format!("{prefix}.{name}") }
}

fn resolve_dotted(expr: &str, resolve: &impl Fn(&str) -> Option<String>) -> Option<String> {
    let expr = expr.split('<').next().unwrap_or(expr).trim();
    let (head, rest) = expr.split_once('.').map_or((expr, None), |(h, r)| (h, Some(r)));
    let base = resolve(head)?;
    Some(rest.map_or(base.clone(), |r| format!("{base}.{r}")))
}

/// The replacement of a definition's body in a skeleton.
fn body_hole(def: &Def, source: &str) -> Option<(std::ops::Range<usize>, &'static str)> {
    let body = def.body?;
    match def.kind {
        DefKind::TypeAlias | DefKind::Namespace => None,
        _ if source.as_bytes().get(body.start_byte as usize) == Some(&b'{') => Some((body.range(), "{ ... }")),
        DefKind::Function | DefKind::Method if body.end_line > body.start_line => Some((body.range(), "...")),
        _ => None,
    }
}

/// Declaration text without the body, on one line: `export async function
/// load(id: string): Promise<User>`, `const add = (a, b) =>`, `class A extends B`.
fn signature(def: &Def, source: &str) -> String {
    let end = match (def.kind, def.body) {
        (DefKind::TypeAlias, _) | (_, None) => def.node.end_byte,
        (_, Some(body)) => body.start_byte,
    };
    let start = def.sig_start(source);
    let text = one_line(source.get(start as usize..end as usize).unwrap_or_default());
    let text = text.trim_end_matches(['{', ' ', ';']).to_string();
    if text.len() > 300 {
        let cut = (0..=300).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
        format!("{} ...", &text[..cut])
    } else {
        text
    }
}

impl Def {
    /// Where the signature starts: the `export` keyword or the definition,
    /// after its decorators.
    fn sig_start(&self, source: &str) -> u32 {
        let mut start = if self.exported && self.outer.start_byte < self.node.start_byte {
            // `export` (or `export default`) directly before the definition.
            let before = source.get(..self.node.start_byte as usize).unwrap_or_default();
            let trimmed = before.trim_end();
            let trimmed = trimmed.strip_suffix("declare").map_or(trimmed, str::trim_end);
            let trimmed = trimmed.strip_suffix("default").map_or(trimmed, str::trim_end);
            if trimmed.ends_with("export") { u32::try_from(trimmed.len() - "export".len()).unwrap_or(0) } else { self.node.start_byte }
        } else {
            self.node.start_byte
        };
        // Skip decorators at the start of the definition (`@Injectable() class`).
        let mut text = source.get(start as usize..self.name_start as usize).unwrap_or_default();
        while text.starts_with('@') {
            let Some(pos) = decorator_end(text) else { break };
            let rest = &text[pos..];
            let skipped = text.len() - rest.trim_start().len();
            start += u32::try_from(skipped).unwrap_or(0);
            text = &text[skipped..];
        }
        start
    }
}

/// End of a leading decorator `@name(...)` in `text`.
fn decorator_end(text: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in text.char_indices().skip(1) {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            c if c.is_whitespace() && depth == 0 => return Some(i),
            _ => {}
        }
    }
    None
}

fn decorator_name(text: &str) -> String {
    let text = text.trim().trim_start_matches('@').trim();
    text.split('(').next().unwrap_or(text).trim().to_string()
}

#[allow(clippy::too_many_lines)]
fn collect_defs(matches: &MatchSet<'_>, source: &str, lines: &LineIndex) -> Vec<Def> {
    let mut defs: Vec<Def> = Vec::new();
    let mut exports: HashMap<u32, Span> = HashMap::new();
    // Comments and decorators: leading trivia of definitions.
    let mut trivia: Vec<(Span, bool)> = Vec::new();
    let mut extends: Vec<(u32, String, bool)> = Vec::new();
    let mut fields: Vec<(u32, u32, String)> = Vec::new();
    let mut jsx_at: Vec<u32> = Vec::new();
    for m in matches {
        if let (Some(node), Some(name)) = (m.get("def"), m.get("name")) {
            let kind = DefKind::of(node.kind);
            // `exports.name = function` / `module.exports.name = () => ...`.
            let commonjs = node.kind == "expression_statement";
            let name_text = if m.get("exports").is_some() { name.text } else { name.text.trim_matches(['"', '\'']) };
            defs.push(Def {
                kind,
                name: name_text.to_string(),
                node: Span::of(node),
                outer: Span::of(node),
                name_start: name.start_byte,
                body: m.get("body").map(Span::of),
                docstring: None,
                decorators: Vec::new(),
                exported: commonjs,
                default_export: false,
                extends: Vec::new(),
                implements: Vec::new(),
                fields: Vec::new(),
                jsx: false,
                parent: None,
                chunked: true,
                path: String::new(),
            });
        } else if let Some(export) = m.get("export") {
            exports.insert(export.start_byte, Span::of(export));
        } else if let Some(c) = m.get("comment") {
            trivia.push((Span::of(c), true));
        } else if let Some(d) = m.get("decorator") {
            trivia.push((Span::of(d), false));
        } else if let Some(e) = m.get("extends") {
            extends.push((e.start_byte, e.text.to_string(), false));
        } else if let Some(e) = m.get("implements") {
            extends.push((e.start_byte, e.text.to_string(), true));
        } else if let (Some(owner), Some(field)) = (m.get("owner"), m.get("field")) {
            fields.push((owner.start_byte, owner.end_byte, field.text.to_string()));
        } else if let Some(j) = m.get("jsx") {
            if j.text.starts_with(|c: char| c.is_ascii_alphabetic()) {
                jsx_at.push(j.start_byte);
            }
        }
    }
    // A lexical declaration matched both as a function (its declarator's
    // value) and, through the export, once: keep one def per node.
    defs.sort_by_key(|d| (d.node.start_byte, std::cmp::Reverse(d.node.end_byte)));
    defs.dedup_by_key(|d| (d.node.start_byte, d.node.end_byte, d.name_start));
    trivia.sort_by_key(|(s, _)| s.start_byte);

    let export_by_decl: HashMap<u32, Span> = exports
        .values()
        .filter_map(|e| {
            let inner = source.get(e.range()).unwrap_or_default();
            // The declaration starts after `export`, `export default` and decorators.
            defs.iter().find(|d| e.contains(&d.node) && d.node.start_byte > e.start_byte && {
                let between = source.get(e.start_byte as usize..d.node.start_byte as usize).unwrap_or_default();
                (between.trim_start().starts_with("export") || between.trim_start().starts_with('@'))
                    && !declares_inside(between)
            }).map(|d| (d.node.start_byte, *e)).filter(|_| !inner.is_empty())
        })
        .collect();

    for def in &mut defs {
        if let Some(export) = export_by_decl.get(&def.node.start_byte) {
            def.outer = def.outer.join(*export);
            def.exported = true;
            let text = source.get(export.start_byte as usize..def.node.start_byte as usize).unwrap_or_default();
            def.default_export = text.contains("default");
        }
        // Leading decorators and comments, nearest first.
        let mut start = def.outer.start_byte;
        let mut doc = None;
        let pos = trivia.partition_point(|(s, _)| s.end_byte <= start);
        for (span, is_comment) in trivia[..pos].iter().rev() {
            let gap = source.get(span.end_byte as usize..start as usize).unwrap_or("x");
            if !gap.trim().is_empty() || gap.matches('\n').count() > 1 {
                break;
            }
            if *is_comment {
                let text = span.text(source);
                if text.starts_with("/**") {
                    if doc.is_none() {
                        doc = docblock(text);
                    }
                } else if doc.is_some() || !text.starts_with("//") {
                    break;
                }
            }
            start = span.start_byte;
        }
        if start < def.outer.start_byte {
            def.outer = def.outer.join(lines.span(start, def.outer.end_byte));
        }
        def.docstring = doc;
        // Decorators between the outer start and the name.
        let first = trivia.partition_point(|(s, _)| s.start_byte < def.outer.start_byte);
        for (span, is_comment) in &trivia[first..] {
            if span.start_byte >= def.name_start {
                break;
            }
            if !is_comment && def.body.is_none_or(|b| span.end_byte <= b.start_byte) {
                def.decorators.push(decorator_name(span.text(source)));
            }
        }
    }

    // Heritage and fields belong to the innermost class whose header or body holds them.
    for (at, text, implements) in extends {
        if let Some(def) = defs
            .iter_mut()
            .filter(|d| matches!(d.kind, DefKind::Class | DefKind::Interface) && d.node.contains_byte(at) && d.body.is_none_or(|b| at < b.start_byte))
            .last()
        {
            let text = one_line(&text);
            if implements { def.implements.push(text) } else { def.extends.push(text) }
        }
    }
    for (start, end, name) in fields {
        if let Some(def) = defs
            .iter_mut()
            .filter(|d| d.kind == DefKind::Class && d.body.is_some_and(|b| b.start_byte <= start && end <= b.end_byte))
            .last()
            && !def.fields.contains(&name)
        {
            def.fields.push(name);
        }
    }

    // Nesting.
    defs.sort_by_key(|d| (d.outer.start_byte, std::cmp::Reverse(d.outer.end_byte)));
    let mut stack: Vec<usize> = Vec::new();
    for i in 0..defs.len() {
        while let Some(&top) = stack.last() {
            if defs[top].outer.contains(&defs[i].outer) {
                break;
            }
            stack.pop();
        }
        defs[i].parent = stack.last().copied();
        match defs[i].parent {
            Some(p) => {
                defs[i].chunked = defs[p].chunked && defs[p].kind.is_container();
                defs[i].path = format!("{}.{}", defs[p].path, defs[i].name);
            }
            None => {
                // A method outside any class (an object literal's) stays in its chunk.
                defs[i].chunked = defs[i].kind != DefKind::Method;
                defs[i].path = defs[i].name.clone();
            }
        }
        stack.push(i);
    }
    // JSX rendered by a function or class (not by a nested chunk).
    jsx_at.sort_unstable();
    for def in &mut defs {
        if matches!(def.kind, DefKind::Function | DefKind::Class) {
            let from = jsx_at.partition_point(|&a| a < def.node.start_byte);
            def.jsx = jsx_at.get(from).is_some_and(|&a| a < def.node.end_byte);
        }
    }
    defs
}

/// True when the text between an `export` and a definition shows the
/// definition is nested in the exported value (a method of `export default
/// { data() {} }` or of `export default defineComponent({ setup() {} })`)
/// rather than being the exported declaration.
fn declares_inside(between: &str) -> bool {
    let mut text = between.trim_end();
    // Skip block comments (a JSDoc of the nested method).
    while let Some(rest) = text.strip_suffix("*/") {
        text = rest.rfind("/*").map_or(rest, |start| rest[..start].trim_end());
    }
    text.ends_with(['{', ',', '}', '(', ';', ':'])
}

/// A leading `/** ... */` of the file that documents no definition.
fn file_doc(matches: &MatchSet<'_>, defs: &[Def], source: &str) -> Option<String> {
    let first = matches.captures("comment").next()?;
    if !source[..first.start_byte as usize].trim().is_empty() || defs.iter().any(|d| d.outer.start_byte <= first.start_byte) {
        return None;
    }
    docblock(first.text)
}

fn mark_exports(matches: &MatchSet<'_>, defs: &mut [Def]) {
    let mut named: BTreeMap<String, bool> = BTreeMap::new();
    for m in matches {
        if let Some(n) = m.get("export.name") {
            named.insert(n.text.to_string(), false);
        } else if let Some(n) = m.get("export.default") {
            named.insert(n.text.to_string(), true);
        }
    }
    for def in defs.iter_mut().filter(|d| d.parent.is_none()) {
        if let Some(&default) = named.get(&def.name) {
            def.exported = true;
            def.default_export |= default;
        }
    }
}

struct Imports {
    /// Local name -> resolved symbol.
    bindings: HashMap<String, String>,
    /// Import statements as `source` or `source.name`.
    listed: Vec<String>,
    /// Resolved modules imported (related symbols of the module chunk).
    modules: BTreeSet<String>,
    at: Vec<Span>,
}

fn collect_imports(matches: &MatchSet<'_>, path: &str) -> Imports {
    let mut imports = Imports { bindings: HashMap::new(), listed: Vec::new(), modules: BTreeSet::new(), at: Vec::new() };
    for m in matches {
        let source = if let Some(s) = m.text("import.source") {
            s
        } else if let Some(s) = m.text("reexport.source") {
            s
        } else {
            continue;
        };
        let target = resolve_import(source, path);
        if let Some(stmt) = m.get("import") {
            imports.at.push(Span::of(stmt));
        }
        let entry = if let Some(local) = m.text("import.default").or_else(|| m.text("import.namespace")) {
            imports.bindings.insert(local.to_string(), target.clone());
            target.clone()
        } else if let Some(name) = m.text("import.name") {
            let name = name.trim_matches(['"', '\'']);
            let local = m.text("import.alias").unwrap_or(name);
            let symbol = if target.starts_with("file:") { target.clone() } else { join(&target, name) };
            imports.bindings.insert(local.to_string(), symbol.clone());
            symbol
        } else {
            target.clone()
        };
        imports.modules.insert(target);
        if !imports.listed.contains(&entry) {
            imports.listed.push(entry);
        }
    }
    imports
}

/// Identifiers each chunk uses (`None`: the module chunk).
fn collect_uses(
    matches: &MatchSet<'_>,
    defs: &[Def],
    imports: &Imports,
    top_names: &BTreeSet<String>,
) -> HashMap<Option<usize>, BTreeSet<String>> {
    let names: BTreeSet<u32> = defs.iter().map(|d| d.name_start).collect();
    let import_spans = SpanSet::new(imports.at.iter().copied());
    let chunked: Vec<usize> = (0..defs.len()).filter(|&i| defs[i].chunked).collect();
    let mut bindings: BTreeSet<u32> = BTreeSet::new();
    let mut uses: Vec<(u32, &str, bool)> = Vec::new();
    for m in matches {
        for c in m.captures() {
            match c.name {
                "id" | "type" | "jsx" => uses.push((c.start_byte, c.text, false)),
                "callee" => uses.push((c.start_byte, c.text, true)),
                "binding" => {
                    bindings.insert(c.start_byte);
                }
                _ => {}
            }
        }
    }
    let mut per: HashMap<Option<usize>, BTreeSet<String>> = HashMap::new();
    for (at, text, callee) in uses {
        if names.contains(&at) || bindings.contains(&at) || import_spans.contains_byte(at) || BUILTINS.contains(&text) {
            continue;
        }
        let first = text.chars().next().unwrap_or('_');
        if !first.is_ascii_alphabetic() && first != '_' && first != '$' {
            continue;
        }
        // One letter: a type parameter or a throwaway local.
        if text.len() == 1 {
            continue;
        }
        let wanted = first.is_ascii_uppercase() || callee || top_names.contains(text) || imports.bindings.contains_key(text);
        if !wanted || text.contains('.') {
            continue;
        }
        let pos = chunked.partition_point(|&i| defs[i].outer.start_byte <= at);
        let mut candidate = pos.checked_sub(1).map(|p| chunked[p]);
        let owner = loop {
            match candidate {
                Some(i) if defs[i].outer.contains_byte(at) => break Some(i),
                Some(i) => candidate = defs[i].parent.filter(|&p| defs[p].chunked),
                None => break None,
            }
        };
        per.entry(owner).or_default().insert(text.to_string());
    }
    per
}

/// Metadata value helper for tests.
#[must_use]
pub fn metadata(chunk: &Chunk) -> Value {
    serde_json::from_str(&chunk.metadata).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_paths() {
        assert_eq!(module_path("src/models/user.ts"), "src/models/user");
        assert_eq!(module_path("src/components/index.tsx"), "src/components");
        assert_eq!(module_path("types/api.d.ts"), "types/api");
        assert_eq!(module_path("index.js"), "");
    }

    #[test]
    fn imports_resolve_against_the_file() {
        assert_eq!(resolve_import("./models/user", "src/app.ts"), "src/models/user");
        assert_eq!(resolve_import("../lib/api.js", "src/pages/home.js"), "src/lib/api");
        assert_eq!(resolve_import("./components", "src/app.tsx"), "src/components");
        assert_eq!(resolve_import("./app.css", "src/main.js"), "file:src/app.css");
        assert_eq!(resolve_import("react", "src/app.tsx"), "react");
        assert_eq!(resolve_import("@/stores/cart", "src/app.ts"), "@/stores/cart");
    }

    #[test]
    fn grammars() {
        assert_eq!(grammar_for("a/b.jsx"), Some("javascript"));
        assert_eq!(grammar_for("a/b.d.ts"), Some("typescript"));
        assert_eq!(grammar_for("a/b.tsx"), Some("tsx"));
        assert_eq!(grammar_for("a/b.vue"), None);
    }
}
