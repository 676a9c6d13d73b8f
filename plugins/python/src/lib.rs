//! Python chunk strategy (a code-intel plugin, built as a WebAssembly component).
//!
//! One file becomes:
//! - a `module` chunk: the file with every top-level definition's body
//!   replaced by `...` (imports, constants and top-level code verbatim,
//!   definitions as signatures), with the imports and top-level names in
//!   metadata;
//! - a `class` chunk per class, nested classes included (`Outer.Inner`):
//!   decorators, header, docstring, class attributes and member signatures,
//!   member bodies elided;
//! - a `function` chunk per module-level function and a `method` chunk per
//!   method (`Class.method`), decorators and docstring included. Functions
//!   defined inside functions stay part of their enclosing chunk.
//!
//! Qualified names are the dotted module path from the file path
//! (`pkg/mod.py` -> `pkg.mod.Class.method`; a leading `src/` and a trailing
//! `__init__` are dropped). `references` are the identifiers a chunk calls or
//! uses: callees, class-like (capitalised) names, and names the module defines
//! or imports where they are used as values (attribute roots, arguments,
//! decorators); locals and builtins are left out. `related_symbols` are those
//! references resolved through the file's imports and top-level definitions
//! to dotted paths.
//!
//! Parsing is the host's (`syntax` import): the plugin asks for the tree's
//! named nodes once ([`Tree::nodes`]) and matches the structure it needs on
//! that table; it must not bundle a parser.

use std::collections::{BTreeMap, BTreeSet};

use code_intel_plugin_sdk::text::{elide, python_docstring, qualified, split_top_level};
use code_intel_plugin_sdk::{
    ChunkBuilder, ChunkOutcome, ChunkSet, FieldId, KindId, NodeRef, NodeTable, Plugin, PluginError, PluginInfo,
    SourceFile, Span, SpanSet, Tree, export_plugin, parse,
};
use serde_json::{Value, json};

/// The plugin type exported to the host.
pub struct Python;

/// Priority among plugins matching `*.py`: a general language strategy,
/// below framework-specific ones (which use higher numbers).
const PRIORITY: i32 = 10;

/// Builtins left out of `references`: calling `len` or raising `ValueError`
/// says nothing about how a codebase's own symbols relate. A `match`, not a
/// list to search: it is asked for most identifiers of every file.
fn is_builtin(name: &str) -> bool {
    matches!(
        name,
        "abs" | "all" | "any" | "ascii" | "bin" | "bool" | "breakpoint" | "bytearray" | "bytes" | "callable"
        | "chr" | "classmethod" | "compile" | "complex" | "delattr" | "dict" | "dir" | "divmod" | "enumerate"
        | "eval" | "exec" | "filter" | "float" | "format" | "frozenset" | "getattr" | "globals" | "hasattr"
        | "hash" | "help" | "hex" | "id" | "input" | "int" | "isinstance" | "issubclass" | "iter" | "len"
        | "list" | "locals" | "map" | "max" | "memoryview" | "min" | "next" | "object" | "oct" | "open"
        | "ord" | "pow" | "print" | "property" | "range" | "repr" | "reversed" | "round" | "set" | "setattr"
        | "slice" | "sorted" | "staticmethod" | "str" | "sum" | "super" | "tuple" | "type" | "vars" | "zip"
        | "self" | "cls" | "Exception" | "BaseException" | "ValueError" | "TypeError" | "KeyError"
        | "IndexError" | "AttributeError" | "RuntimeError" | "NotImplementedError" | "StopIteration"
        | "OSError" | "NotImplemented" | "Ellipsis"
    )
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum DefKind {
    Function,
    Class,
}

/// One `def` or `class` in the file.
struct Def {
    kind: DefKind,
    name: String,
    /// The definition node (`def ...` / `class ...`).
    node: Span,
    /// The node with its decorators.
    outer: Span,
    name_start: u32,
    /// Where the signature ends (after the parameters, return type or bases).
    header_end: u32,
    body: Span,
    bases: Option<String>,
    decorators: Vec<String>,
    docstring: Option<String>,
    fields: Vec<String>,
    parent: Option<usize>,
    /// Only definitions whose ancestors are all classes become chunks.
    chunked: bool,
    /// Dotted path within the file, e.g. `Outer.Inner.method`.
    path: String,
}

impl Plugin for Python {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "python".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Python: modules, classes, functions and methods with decorators, docstrings and imports".into(),
            languages: vec!["python".into()],
            file_patterns: vec!["**/*.py".into(), "**/*.pyi".into()],
            priority: PRIORITY,
        }
    }

    fn chunk(file: SourceFile) -> Result<ChunkOutcome, PluginError> {
        if file.content.trim().is_empty() {
            return Ok(ChunkOutcome::Chunks(Vec::new()));
        }
        let tree = parse("python", &file.content)?;
        let module = module_path(&file.path);
        let chunks = chunk_module(&tree, &file.path, &module, &file.content)?;
        Ok(ChunkOutcome::Chunks(chunks))
    }
}

export_plugin!(Python);

/// Dotted module path of a repository-relative file path: `src/` and
/// `__init__` dropped, `pkg/mod.py` -> `pkg.mod`.
#[must_use]
pub fn module_path(path: &str) -> String {
    let path = path.strip_prefix("src/").unwrap_or(path);
    let path = path.strip_suffix(".pyi").or_else(|| path.strip_suffix(".py")).unwrap_or(path);
    let mut parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    if parts.last() == Some(&"__init__") {
        parts.pop();
    }
    parts.join(".")
}

/// The package a relative import starts from: the module itself for a
/// package's `__init__`, else the module's parent.
fn package_of(path: &str, module: &str) -> String {
    if path.ends_with("__init__.py") || path.ends_with("__init__.pyi") {
        module.to_string()
    } else {
        module.rsplit_once('.').map(|(parent, _)| parent.to_string()).unwrap_or_default()
    }
}

/// Resolves `from ..x import` module text against the current package.
fn resolve_relative(from: &str, package: &str) -> String {
    let dots = from.chars().take_while(|&c| c == '.').count();
    if dots == 0 {
        return from.to_string();
    }
    let mut base: Vec<&str> = package.split('.').filter(|p| !p.is_empty()).collect();
    for _ in 1..dots {
        base.pop();
    }
    let rest = &from[dots..];
    if !rest.is_empty() {
        base.push(rest);
    }
    base.join(".")
}

/// Name of a decorator without `@` and call arguments: `@app.route("/")` -> `app.route`.
fn decorator_name(text: &str) -> String {
    let text = text.trim().trim_start_matches('@').trim();
    text.split('(').next().unwrap_or(text).trim().to_string()
}

struct Imports {
    /// Local name -> dotted target (`User` -> `app.models.User`).
    bindings: BTreeMap<String, String>,
    /// Top-level import statements as written targets, for the module summary.
    listed: Vec<String>,
}

/// Kind and field ids of the node table the plugin looks at; `None` for a
/// kind the file does not contain.
struct Kinds {
    module: Option<KindId>,
    function: Option<KindId>,
    class: Option<KindId>,
    decorated: Option<KindId>,
    decorator: Option<KindId>,
    block: Option<KindId>,
    expression_statement: Option<KindId>,
    string: Option<KindId>,
    assignment: Option<KindId>,
    identifier: Option<KindId>,
    dotted_name: Option<KindId>,
    aliased_import: Option<KindId>,
    wildcard_import: Option<KindId>,
    import: Option<KindId>,
    import_from: Option<KindId>,
    future_import: Option<KindId>,
    call: Option<KindId>,
    attribute: Option<KindId>,
    argument_list: Option<KindId>,
    keyword_argument: Option<KindId>,
    name: Option<FieldId>,
    body: Option<FieldId>,
    parameters: Option<FieldId>,
    return_type: Option<FieldId>,
    superclasses: Option<FieldId>,
    definition: Option<FieldId>,
    left: Option<FieldId>,
    module_name: Option<FieldId>,
    alias: Option<FieldId>,
    function_field: Option<FieldId>,
    attribute_field: Option<FieldId>,
    object: Option<FieldId>,
    value: Option<FieldId>,
}

impl Kinds {
    fn of(nodes: &NodeTable<'_>) -> Self {
        Self {
            module: nodes.kind_id("module"),
            function: nodes.kind_id("function_definition"),
            class: nodes.kind_id("class_definition"),
            decorated: nodes.kind_id("decorated_definition"),
            decorator: nodes.kind_id("decorator"),
            block: nodes.kind_id("block"),
            expression_statement: nodes.kind_id("expression_statement"),
            string: nodes.kind_id("string"),
            assignment: nodes.kind_id("assignment"),
            identifier: nodes.kind_id("identifier"),
            dotted_name: nodes.kind_id("dotted_name"),
            aliased_import: nodes.kind_id("aliased_import"),
            wildcard_import: nodes.kind_id("wildcard_import"),
            import: nodes.kind_id("import_statement"),
            import_from: nodes.kind_id("import_from_statement"),
            future_import: nodes.kind_id("future_import_statement"),
            call: nodes.kind_id("call"),
            attribute: nodes.kind_id("attribute"),
            argument_list: nodes.kind_id("argument_list"),
            keyword_argument: nodes.kind_id("keyword_argument"),
            name: nodes.field_id("name"),
            body: nodes.field_id("body"),
            parameters: nodes.field_id("parameters"),
            return_type: nodes.field_id("return_type"),
            superclasses: nodes.field_id("superclasses"),
            definition: nodes.field_id("definition"),
            left: nodes.field_id("left"),
            module_name: nodes.field_id("module_name"),
            alias: nodes.field_id("alias"),
            function_field: nodes.field_id("function"),
            attribute_field: nodes.field_id("attribute"),
            object: nodes.field_id("object"),
            value: nodes.field_id("value"),
        }
    }

}

/// The child of `node` filling `field`.
fn child(node: NodeRef<'_>, field: Option<FieldId>) -> Option<NodeRef<'_>> {
    node.child_by(field?)
}

/// The nodes the plugin works on, sorted out in one pass over the table.
#[derive(Default)]
struct Scan<'a> {
    module: Option<NodeRef<'a>>,
    /// Function and class definitions, in document order.
    defs: Vec<NodeRef<'a>>,
    /// `import` and `from ... import` statements.
    imports: Vec<NodeRef<'a>>,
    /// Every import statement's span, `from __future__` ones included.
    import_spans: Vec<Span>,
    identifiers: Vec<NodeRef<'a>>,
}

impl<'a> Scan<'a> {
    fn of(nodes: &'a NodeTable<'a>, k: &Kinds) -> Self {
        let mut scan = Scan::default();
        for node in nodes.iter() {
            let kind = Some(node.kind_id());
            if kind == k.identifier {
                scan.identifiers.push(node);
            } else if kind == k.function || kind == k.class {
                scan.defs.push(node);
            } else if kind == k.import || kind == k.import_from {
                scan.imports.push(node);
                scan.import_spans.push(Span::of(node));
            } else if kind == k.future_import {
                scan.import_spans.push(Span::of(node));
            } else if kind == k.module && scan.module.is_none() {
                scan.module = Some(node);
            }
        }
        scan
    }
}

/// The string of a docstring statement: `node` is a body (or the module)
/// whose first child is an expression statement holding a string.
fn docstring_of<'a>(node: NodeRef<'a>, k: &Kinds) -> Option<NodeRef<'a>> {
    let first = node.children().next().filter(|c| c.is(k.expression_statement))?;
    first.children().find(|c| c.is(k.string))
}

/// Names assigned by the expression statements among `node`'s children
/// (`name = ...`, `name: T = ...`).
fn assigned_names<'a>(node: NodeRef<'a>, k: &'a Kinds) -> impl Iterator<Item = &'a str> + 'a {
    node.children()
        .filter(|s| s.is(k.expression_statement))
        .flat_map(move |s| s.children().filter(|a| a.is(k.assignment)))
        .filter_map(move |a| child(a, k.left).filter(|l| l.is(k.identifier)))
        .map(|l| l.text())
}

fn collect_imports(scan: &Scan<'_>, k: &Kinds, path: &str, module: &str, defs: &[Def]) -> Imports {
    let package = package_of(path, module);
    let mut bindings = BTreeMap::new();
    let mut listed = Vec::new();
    for &statement in &scan.imports {
        let top_level = !defs.iter().any(|d| d.node.contains_byte(statement.start_byte()));
        let from = statement
            .is(k.import_from)
            .then(|| child(statement, k.module_name))
            .flatten()
            .map(|m| resolve_relative(m.text(), &package));
        if statement.is(k.import_from) && from.is_none() {
            continue;
        }
        let mut entries: Vec<String> = Vec::new();
        for bound in statement.children() {
            let is_name = bound.field_id() == k.name;
            let (dotted, alias) = if is_name && bound.is(k.dotted_name) {
                (bound.text(), None)
            } else if is_name && bound.is(k.aliased_import) {
                let (Some(dotted), Some(alias)) = (
                    child(bound, k.name).filter(|n| n.is(k.dotted_name)),
                    child(bound, k.alias).filter(|n| n.is(k.identifier)),
                ) else {
                    continue;
                };
                (dotted.text(), Some(alias.text()))
            } else if bound.is(k.wildcard_import) {
                if let Some(from) = &from {
                    entries.push(qualified(from, ".", "*"));
                }
                continue;
            } else {
                continue;
            };
            let entry = match &from {
                None => {
                    let local = alias.map_or_else(|| dotted.split('.').next().unwrap_or(dotted).to_string(), str::to_string);
                    let target = if alias.is_some() { dotted.to_string() } else { local.clone() };
                    bindings.insert(local, target);
                    alias.map_or_else(|| dotted.to_string(), |a| format!("{dotted} as {a}"))
                }
                Some(from) => {
                    let target = qualified(from, ".", dotted);
                    bindings.insert(alias.unwrap_or(dotted).to_string(), target.clone());
                    alias.map_or(target.clone(), |a| format!("{target} as {a}"))
                }
            };
            entries.push(entry);
        }
        if top_level {
            for entry in entries {
                if !listed.contains(&entry) {
                    listed.push(entry);
                }
            }
        }
    }
    Imports { bindings, listed }
}

/// The file's definitions, nested and annotated.
fn collect_defs(scan: &Scan<'_>, k: &Kinds) -> Defs {
    let mut defs = Vec::new();
    let mut module_doc = None;
    let mut variables: Vec<String> = Vec::new();
    if let Some(module) = scan.module {
        module_doc = docstring_of(module, k).map(|doc| python_docstring(doc.text()));
        for variable in assigned_names(module, k) {
            if !variables.iter().any(|v| v == variable) {
                variables.push(variable.to_string());
            }
        }
    }
    for &node in &scan.defs {
        let kind = if node.is(k.class) { DefKind::Class } else { DefKind::Function };
        let Some(name) = child(node, k.name).filter(|n| n.is(k.identifier)) else { continue };
        let Some(body) = child(node, k.body).filter(|n| n.is(k.block)) else { continue };
        let (header_end, bases) = match kind {
            DefKind::Function => {
                let Some(params) = child(node, k.parameters) else { continue };
                (child(node, k.return_type).unwrap_or(params).end_byte(), None)
            }
            DefKind::Class => {
                let bases = child(node, k.superclasses).filter(|b| b.is(k.argument_list));
                (
                    bases.map_or(name.end_byte(), |b| b.end_byte()),
                    bases.map(|b| b.text().trim_start_matches('(').trim_end_matches(')').to_string()),
                )
            }
        };
        // Decorators wrap the definition in a decorated_definition.
        let mut outer = Span::of(node);
        let mut decorators = Vec::new();
        if let Some(wrapper) = node.parent().filter(|p| p.is(k.decorated) && node.field_id() == k.definition) {
            for d in wrapper.children().filter(|d| d.is(k.decorator)) {
                decorators.push(decorator_name(d.text()));
                outer = outer.join(Span::of(d));
            }
        }
        let mut fields = Vec::new();
        if kind == DefKind::Class {
            for field in assigned_names(body, k) {
                if !fields.iter().any(|f| f == field) {
                    fields.push(field.to_string());
                }
            }
        }
        defs.push(Def {
            kind,
            name: name.text().to_string(),
            node: Span::of(node),
            outer,
            name_start: name.start_byte(),
            header_end,
            body: Span::of(body),
            bases,
            decorators,
            docstring: docstring_of(body, k).map(|doc| python_docstring(doc.text())),
            fields,
            parent: None,
            chunked: true,
            path: String::new(),
        });
    }
    // The table is in document order, so definitions already are; an
    // enclosing definition comes before the ones it contains.

    // Nesting: the innermost enclosing definition of each.
    let mut stack: Vec<usize> = Vec::new();
    for i in 0..defs.len() {
        while let Some(&top) = stack.last() {
            if defs[top].node.contains(&defs[i].node) {
                break;
            }
            stack.pop();
        }
        defs[i].parent = stack.last().copied();
        if let Some(p) = defs[i].parent {
            defs[i].chunked = defs[p].chunked && defs[p].kind == DefKind::Class;
            defs[i].path = [defs[p].path.as_str(), ".", &defs[i].name].concat();
        } else {
            defs[i].path = defs[i].name.clone();
        }
        stack.push(i);
    }
    Defs { defs, module_doc, variables }
}

/// What [`collect_defs`] found.
struct Defs {
    defs: Vec<Def>,
    module_doc: Option<String>,
    /// Names assigned at module level, in order.
    variables: Vec<String>,
}

/// Identifier uses per chunk: index of the chunked definition (or `None` for
/// the module) -> identifiers.
struct Uses<'s> {
    /// Index `0` is the module, `i + 1` definition `i`; sorted, each once.
    per_def: Vec<Vec<&'s str>>,
}

impl<'s> Uses<'s> {
    fn of(&self, def: Option<usize>) -> &[&'s str] {
        &self.per_def[def.map_or(0, |i| i + 1)]
    }
}

/// How an identifier is used, from where it sits in the tree.
struct IdentifierUse {
    /// Called: `f(...)` or `x.f(...)`.
    callee: bool,
    /// A use that can name a module-level object: capitalised, an attribute
    /// chain's root, a decorator, an argument or a keyword argument's value.
    value: bool,
    /// A capitalised assignment target: a definition, not a use.
    binding: bool,
}

fn identifier_use(id: NodeRef<'_>, k: &Kinds) -> IdentifierUse {
    let capitalised = id.text().starts_with(|c: char| c.is_ascii_uppercase());
    let parent = id.parent();
    let field = id.field_id();
    let in_parent = |kind: Option<KindId>, expected: Option<FieldId>| {
        field.is_some() && field == expected && parent.is_some_and(|p| p.is(kind))
    };
    let callee = in_parent(k.call, k.function_field)
        || (in_parent(k.attribute, k.attribute_field)
            && parent.is_some_and(|a| a.field_id() == k.function_field && a.parent().is_some_and(|c| c.is(k.call))));
    let value = capitalised
        || in_parent(k.attribute, k.object)
        || parent.is_some_and(|p| p.is(k.decorator) || p.is(k.argument_list))
        || in_parent(k.keyword_argument, k.value);
    IdentifierUse { callee, value, binding: capitalised && in_parent(k.assignment, k.left) }
}

fn collect_uses<'s>(scan: &Scan<'s>, k: &Kinds, defs: &[Def], module_names: &BTreeSet<String>, imports: &Imports) -> Uses<'s> {
    // Definitions are in document order, so their names' offsets are sorted.
    let names: Vec<u32> = defs.iter().map(|d| d.name_start).collect();
    let imports_at = SpanSet::new(scan.import_spans.iter().copied());
    let chunked: Vec<usize> = (0..defs.len()).filter(|&i| defs[i].chunked).collect();
    let mut per_def: Vec<Vec<&'s str>> = vec![Vec::new(); defs.len() + 1];
    for &id in &scan.identifiers {
        let usage = identifier_use(id, k);
        if !(usage.callee || usage.value) || usage.binding {
            continue;
        }
        let (at, text) = (id.start_byte(), id.text());
        if is_builtin(text) || names.binary_search(&at).is_ok() || imports_at.contains_byte(at) {
            continue;
        }
        // Uppercase names and callees always count; other names only when
        // they are the module's own or imported (not locals).
        let wanted = text.starts_with(|c: char| c.is_ascii_uppercase())
            || module_names.contains(text)
            || imports.bindings.contains_key(text)
            || usage.callee;
        if !wanted {
            continue;
        }
        let owner = innermost(defs, &chunked, at);
        per_def[owner.map_or(0, |i| i + 1)].push(text);
    }
    for used in &mut per_def {
        used.sort_unstable();
        used.dedup();
    }
    Uses { per_def }
}

/// The innermost chunked definition containing byte `at` (by its span with decorators).
fn innermost(defs: &[Def], chunked: &[usize], at: u32) -> Option<usize> {
    // Chunked definitions are sorted by start; the last one starting at or
    // before `at` either contains it or one of its ancestors does.
    let pos = chunked.partition_point(|&i| defs[i].outer.start_byte <= at);
    let mut candidate = pos.checked_sub(1).map(|p| chunked[p]);
    while let Some(i) = candidate {
        if defs[i].outer.contains_byte(at) {
            return Some(i);
        }
        candidate = defs[i].parent.filter(|&p| defs[p].chunked);
    }
    None
}

fn signature(def: &Def, source: &str) -> String {
    let header = source.get(def.node.start_byte as usize..def.header_end as usize).unwrap_or_default();
    format!("{}:", header.trim_end())
}

/// Holes that turn the bodies of `children` into `...`.
fn body_holes(defs: &[Def], children: impl Iterator<Item = usize>) -> Vec<(std::ops::Range<usize>, &'static str)> {
    children.map(|c| (defs[c].body.start_byte as usize..defs[c].node.end_byte as usize, "...")).collect()
}

fn chunk_module(tree: &Tree, path: &str, module: &str, source: &str) -> Result<Vec<code_intel_plugin_sdk::Chunk>, PluginError> {
    let nodes = tree.nodes(&[])?;
    let kinds = Kinds::of(&nodes);
    let scan = Scan::of(&nodes, &kinds);
    let Defs { defs, module_doc, variables } = collect_defs(&scan, &kinds);
    let imports = collect_imports(&scan, &kinds, path, module, &defs);

    let top: Vec<usize> = (0..defs.len()).filter(|&i| defs[i].parent.is_none()).collect();
    let mut module_names: BTreeSet<String> = top.iter().map(|&i| defs[i].name.clone()).collect();
    module_names.extend(variables.iter().cloned());
    let uses = collect_uses(&scan, &kinds, &defs, &module_names, &imports);
    let top_names: BTreeSet<&str> = top.iter().map(|&i| defs[i].name.as_str()).chain(variables.iter().map(String::as_str)).collect();
    let resolve = |name: &str| -> Option<String> {
        if let Some(target) = imports.bindings.get(name) {
            return Some(target.clone());
        }
        top_names.contains(name).then(|| qualified(module, ".", name))
    };

    let mut chunks = ChunkSet::new(source);
    let lines = code_intel_plugin_sdk::LineIndex::new(source);

    // The module summary.
    let module_name = module.rsplit('.').next().filter(|n| !n.is_empty()).map_or_else(
        || path.rsplit('/').next().unwrap_or(path).trim_end_matches(".py").to_string(),
        str::to_string,
    );
    let skeleton = elide(source, 0..source.len(), &body_holes(&defs, top.iter().copied().filter(|&i| defs[i].chunked)));
    let module_refs = uses.of(None);
    let names_of = |kind: DefKind| -> Vec<String> {
        top.iter().filter(|&&i| defs[i].kind == kind).map(|&i| defs[i].name.clone()).collect()
    };
    let mut module_chunk = ChunkBuilder::new("module", module_name)
        .id("module")
        .qualified_name(module)
        .span(lines.span(0, u32::try_from(source.len()).unwrap_or(u32::MAX)))
        .content(skeleton)
        .docstring(module_doc)
        .related_all(imports.listed.iter().map(|i| i.split(" as ").next().unwrap_or(i).trim_end_matches(".*").to_string()))
        .references(module_refs.iter().copied())
        .meta_opt("imports", Some(imports.listed.clone()))
        .meta_opt("classes", Some(names_of(DefKind::Class)))
        .meta_opt("functions", Some(names_of(DefKind::Function)))
        .meta_opt("variables", Some(variables.clone()));
    if tree.has_errors() {
        module_chunk = module_chunk.meta("syntax_errors", true);
    }
    chunks.push(module_chunk);

    // Definitions, outermost first so that parents have ids.
    let mut ids: Vec<Option<String>> = vec![None; defs.len()];
    for (i, def) in defs.iter().enumerate() {
        if !def.chunked {
            continue;
        }
        let parent_class = def.parent.filter(|&p| defs[p].kind == DefKind::Class);
        let kind = match (def.kind, parent_class) {
            (DefKind::Class, _) => "class",
            (DefKind::Function, Some(_)) => "method",
            (DefKind::Function, None) => "function",
        };
        let refs = uses.of(Some(i));
        let related: Vec<String> = refs.iter().filter_map(|r| resolve(r)).collect();
        let mut builder = ChunkBuilder::new(kind, def.name.clone())
            .id([kind, ":", &def.path].concat())
            .qualified_name(qualified(module, ".", &def.path))
            .parent(def.parent.and_then(|p| ids[p].clone()))
            .span(def.outer)
            .signature(signature(def, source))
            .docstring(def.docstring.clone())
            .references(refs.iter().cloned())
            .related_all(related)
            .meta_opt("decorators", Some(def.decorators.clone()));
        match def.kind {
            DefKind::Function => {
                let header = source.get(def.node.start_byte as usize..def.name_start as usize).unwrap_or_default();
                if header.trim_start().starts_with("async") {
                    builder = builder.meta("async", true);
                }
            }
            DefKind::Class => {
                let children: Vec<usize> = (0..defs.len()).filter(|&c| defs[c].parent == Some(i)).collect();
                let holes = body_holes(&defs, children.iter().copied());
                let bases: Vec<String> = def
                    .bases
                    .as_deref()
                    .map(|b| split_top_level(b, ',').into_iter().filter(|p| !p.contains('=')).map(str::to_string).collect())
                    .unwrap_or_default();
                // Bases as dotted paths where an import or a top-level
                // definition says what they are, else as written.
                let resolved_bases: Vec<Option<String>> = bases.iter().map(|b| resolve_dotted(b, &resolve)).collect();
                let shown_bases: Vec<String> =
                    bases.iter().zip(&resolved_bases).map(|(b, r)| r.clone().unwrap_or_else(|| b.clone())).collect();
                let mut methods: Vec<Value> = Vec::new();
                for &c in children.iter().filter(|&&c| defs[c].kind == DefKind::Function) {
                    if !methods.contains(&json!(defs[c].name)) {
                        methods.push(json!(defs[c].name));
                    }
                }
                builder = builder
                    .content(elide(source, def.outer.range(), &holes))
                    .related_all(resolved_bases.into_iter().flatten())
                    .meta_opt("bases", Some(shown_bases))
                    .meta_opt("fields", Some(def.fields.clone()))
                    .meta_opt("methods", Some(methods));
            }
        }
        let id = chunks.push(builder);
        ids[i] = Some(id);
    }
    Ok(chunks.finish())
}

/// Resolves a dotted expression (`models.Model`) whose first name is bound
/// by an import or a top-level definition.
fn resolve_dotted(expr: &str, resolve: &impl Fn(&str) -> Option<String>) -> Option<String> {
    let (head, rest) = expr.split_once('.').map_or((expr, None), |(h, r)| (h, Some(r)));
    let base = resolve(head)?;
    Some(rest.map_or(base.clone(), |r| [base.as_str(), ".", r].concat()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_paths() {
        assert_eq!(module_path("pkg/mod.py"), "pkg.mod");
        assert_eq!(module_path("src/pkg/__init__.py"), "pkg");
        assert_eq!(module_path("__init__.py"), "");
        assert_eq!(module_path("tools/stub.pyi"), "tools.stub");
    }

    #[test]
    fn relative_imports() {
        assert_eq!(resolve_relative(".models", "app.users"), "app.users.models");
        assert_eq!(resolve_relative("..core", "app.users"), "app.core");
        assert_eq!(resolve_relative(".", "app"), "app");
        assert_eq!(resolve_relative("os.path", "app"), "os.path");
        assert_eq!(package_of("app/users/__init__.py", "app.users"), "app.users");
        assert_eq!(package_of("app/users/views.py", "app.users.views"), "app.users");
    }

    #[test]
    fn decorator_names() {
        assert_eq!(decorator_name("@app.route(\"/x\", methods=[\"GET\"])"), "app.route");
        assert_eq!(decorator_name("@dataclass"), "dataclass");
    }
}
