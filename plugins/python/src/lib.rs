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
//! Parsing is the host's (`syntax` import); this crate is queries plus
//! post-processing and must not bundle a parser.

use std::collections::{BTreeSet, HashMap};

use code_intel_plugin_sdk::text::{elide, python_docstring, split_top_level};
use code_intel_plugin_sdk::{
    ChunkBuilder, ChunkOutcome, ChunkSet, MatchSet, Plugin, PluginError, PluginInfo, SourceFile, Span,
    SpanSet, Tree, export_plugin, parse,
};
use serde_json::{Value, json};

/// The plugin type exported to the host.
pub struct Python;

/// Priority among plugins matching `*.py`: a general language strategy,
/// below framework-specific ones (which use higher numbers).
const PRIORITY: i32 = 10;

/// Everything the plugin asks the host, in one query so that the tree is
/// walked once (several queries cost a walk each). Capture names tell the
/// patterns apart.
const QUERY: &str = r#"
; Definitions: @def is a function_definition or a class_definition.
(function_definition
  name: (identifier) @name
  parameters: (parameters) @params
  return_type: (type)? @ret
  body: (block) @body) @def
(class_definition
  name: (identifier) @name
  superclasses: (argument_list)? @bases
  body: (block) @body) @def

; Decorators with the definition they wrap; docstrings (the first statement
; of a body or of the module, when it is a string); class attributes;
; module-level assignments.
(decorated_definition (decorator) @decorator definition: (_) @decorator_of)
(function_definition body: (block . (expression_statement (string) @doc))) @documented
(class_definition body: (block . (expression_statement (string) @doc))) @documented
(module . (expression_statement (string) @module_doc))
(class_definition body: (block (expression_statement (assignment left: (identifier) @field)))) @owner
(module (expression_statement (assignment left: (identifier) @variable)))

; Imports: one match per bound name; @import is the statement.
(import_statement name: (dotted_name) @import.module) @import
(import_statement name: (aliased_import name: (dotted_name) @import.module alias: (identifier) @import.alias)) @import
(import_from_statement module_name: (_) @import.from name: (dotted_name) @import.name) @import
(import_from_statement module_name: (_) @import.from name: (aliased_import name: (dotted_name) @import.name alias: (identifier) @import.alias)) @import
(import_from_statement module_name: (_) @import.from (wildcard_import)) @import
(future_import_statement) @import.future

; Identifier uses. Not every identifier (that would be most of the file, and
; mostly locals): callees, class-like names, roots of attribute chains
; (modules, module-level objects), decorators and arguments. Uppercase
; assignment targets are definitions, not uses.
(call function: (identifier) @callee)
(call function: (attribute attribute: (identifier) @callee))
((identifier) @id (#match? @id "^[A-Z]"))
(attribute object: (identifier) @id)
(decorator (identifier) @id)
(argument_list (identifier) @id)
(keyword_argument value: (identifier) @id)
(assignment left: (identifier) @binding (#match? @binding "^[A-Z]"))
"#;

/// Builtins left out of `references`: calling `len` or raising `ValueError`
/// says nothing about how a codebase's own symbols relate.
const BUILTINS: &[&str] = &[
    "abs", "all", "any", "ascii", "bin", "bool", "breakpoint", "bytearray", "bytes", "callable", "chr",
    "classmethod", "compile", "complex", "delattr", "dict", "dir", "divmod", "enumerate", "eval", "exec",
    "filter", "float", "format", "frozenset", "getattr", "globals", "hasattr", "hash", "help", "hex", "id",
    "input", "int", "isinstance", "issubclass", "iter", "len", "list", "locals", "map", "max", "memoryview",
    "min", "next", "object", "oct", "open", "ord", "pow", "print", "property", "range", "repr", "reversed",
    "round", "set", "setattr", "slice", "sorted", "staticmethod", "str", "sum", "super", "tuple", "type",
    "vars", "zip", "self", "cls", "Exception", "BaseException", "ValueError", "TypeError", "KeyError",
    "IndexError", "AttributeError", "RuntimeError", "NotImplementedError", "StopIteration", "OSError",
    "NotImplemented", "Ellipsis",
];

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

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() { name.to_string() } else { format!("{prefix}.{name}") }
}

/// Name of a decorator without `@` and call arguments: `@app.route("/")` -> `app.route`.
fn decorator_name(text: &str) -> String {
    let text = text.trim().trim_start_matches('@').trim();
    text.split('(').next().unwrap_or(text).trim().to_string()
}

struct Imports {
    /// Local name -> dotted target (`User` -> `app.models.User`).
    bindings: HashMap<String, String>,
    /// Top-level import statements as written targets, for the module summary.
    listed: Vec<String>,
}

fn collect_imports(matches: &MatchSet<'_>, path: &str, module: &str, defs: &[Def]) -> Imports {
    let package = package_of(path, module);
    let mut bindings = HashMap::new();
    let mut listed = Vec::new();
    for m in matches {
        let Some(statement) = m.get("import") else { continue };
        let top_level = !defs.iter().any(|d| d.node.contains_byte(statement.start_byte));
        let alias = m.text("import.alias");
        let entry = if let Some(dotted) = m.text("import.module") {
            let local = alias.map_or_else(|| dotted.split('.').next().unwrap_or(dotted).to_string(), str::to_string);
            let target = if alias.is_some() { dotted.to_string() } else { local.clone() };
            bindings.insert(local, target);
            alias.map_or_else(|| dotted.to_string(), |a| format!("{dotted} as {a}"))
        } else if let Some(from) = m.text("import.from") {
            let from = resolve_relative(from, &package);
            match m.text("import.name") {
                Some(name) => {
                    let target = join(&from, name);
                    bindings.insert(alias.unwrap_or(name).to_string(), target.clone());
                    alias.map_or(target.clone(), |a| format!("{target} as {a}"))
                }
                None => join(&from, "*"),
            }
        } else {
            continue;
        };
        if top_level && !listed.contains(&entry) {
            listed.push(entry);
        }
    }
    Imports { bindings, listed }
}

/// The file's definitions, nested and annotated.
fn collect_defs(matches: &MatchSet<'_>) -> Defs {
    let mut defs = Vec::new();
    for m in matches {
        let (Some(node), Some(name), Some(body)) = (m.get("def"), m.get("name"), m.get("body")) else { continue };
        let kind = if node.kind == "class_definition" { DefKind::Class } else { DefKind::Function };
        let header_end = match kind {
            DefKind::Function => m.get("ret").or_else(|| m.get("params")).map_or(name.end_byte, |c| c.end_byte),
            DefKind::Class => m.get("bases").map_or(name.end_byte, |c| c.end_byte),
        };
        let bases = m.text("bases").map(|b| b.trim_start_matches('(').trim_end_matches(')').to_string());
        defs.push(Def {
            kind,
            name: name.text.to_string(),
            node: Span::of(node),
            outer: Span::of(node),
            name_start: name.start_byte,
            header_end,
            body: Span::of(body),
            bases,
            decorators: Vec::new(),
            docstring: None,
            fields: Vec::new(),
            parent: None,
            chunked: true,
            path: String::new(),
        });
    }
    defs.sort_by_key(|d| (d.node.start_byte, std::cmp::Reverse(d.node.end_byte)));

    // Decorators, docstrings and class attributes, matched to their definition.
    // Definition start -> the span of its decorators, and their names.
    let mut decorated: HashMap<u32, Span> = HashMap::new();
    let mut decorators: HashMap<u32, Vec<String>> = HashMap::new();
    let by_start: HashMap<u32, usize> = defs.iter().enumerate().map(|(i, d)| (d.node.start_byte, i)).collect();
    let mut module_doc = None;
    let mut variables: Vec<String> = Vec::new();
    for m in matches {
        if let (Some(d), Some(of)) = (m.get("decorator"), m.get("decorator_of")) {
            decorators.entry(of.start_byte).or_default().push(decorator_name(d.text));
            let wrapper = decorated.entry(of.start_byte).or_insert_with(|| Span::of(d));
            *wrapper = wrapper.join(Span::of(d));
        } else if let (Some(owner), Some(doc)) = (m.get("documented"), m.get("doc")) {
            if let Some(&i) = by_start.get(&owner.start_byte) {
                defs[i].docstring = Some(python_docstring(doc.text));
            }
        } else if let (Some(owner), Some(field)) = (m.get("owner"), m.get("field")) {
            if let Some(&i) = by_start.get(&owner.start_byte)
                && !defs[i].fields.iter().any(|f| f == field.text) {
                    defs[i].fields.push(field.text.to_string());
                }
        } else if let Some(doc) = m.get("module_doc") {
            module_doc = Some(python_docstring(doc.text));
        } else if let Some(variable) = m.get("variable")
            && !variables.iter().any(|v| v == variable.text) {
                variables.push(variable.text.to_string());
            }
    }
    for def in &mut defs {
        if let Some(wrapper) = decorated.get(&def.node.start_byte) {
            def.outer = def.outer.join(*wrapper);
            def.decorators = decorators.remove(&def.node.start_byte).unwrap_or_default();
        }
    }

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
            defs[i].path = format!("{}.{}", defs[p].path, defs[i].name);
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
struct Uses {
    per_def: HashMap<Option<usize>, BTreeSet<String>>,
}

fn collect_uses(matches: &MatchSet<'_>, defs: &[Def], module_names: &BTreeSet<String>, imports: &Imports) -> Uses {
    let mut ids: Vec<(u32, &str)> = Vec::new();
    let mut bindings: BTreeSet<u32> = BTreeSet::new();
    let mut callee_at: BTreeSet<u32> = BTreeSet::new();
    let mut imports_at: Vec<Span> = Vec::new();
    for m in matches {
        for c in m.captures() {
            match c.name {
                "id" => ids.push((c.start_byte, c.text)),
                "callee" => {
                    callee_at.insert(c.start_byte);
                    ids.push((c.start_byte, c.text));
                }
                "binding" => {
                    bindings.insert(c.start_byte);
                }
                "import" | "import.future" => imports_at.push(Span::of(c)),
                _ => {}
            }
        }
    }
    let names: BTreeSet<u32> = defs.iter().map(|d| d.name_start).collect();
    let imports_at = SpanSet::new(imports_at);
    let chunked: Vec<usize> = (0..defs.len()).filter(|&i| defs[i].chunked).collect();
    let mut per_def: HashMap<Option<usize>, BTreeSet<String>> = HashMap::new();
    for (at, text) in ids {
        if names.contains(&at) || bindings.contains(&at) || BUILTINS.contains(&text) || imports_at.contains_byte(at) {
            continue;
        }
        // Uppercase names and callees always count; other names only when
        // they are the module's own or imported (not locals).
        let wanted = text.starts_with(|c: char| c.is_ascii_uppercase())
            || module_names.contains(text)
            || imports.bindings.contains_key(text)
            || callee_at.contains(&at);
        if !wanted {
            continue;
        }
        let owner = innermost(defs, &chunked, at);
        per_def.entry(owner).or_default().insert(text.to_string());
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
    let matches = tree.matches(QUERY)?;
    let Defs { defs, module_doc, variables } = collect_defs(&matches);
    let imports = collect_imports(&matches, path, module, &defs);

    let top: Vec<usize> = (0..defs.len()).filter(|&i| defs[i].parent.is_none()).collect();
    let mut module_names: BTreeSet<String> = top.iter().map(|&i| defs[i].name.clone()).collect();
    module_names.extend(variables.iter().cloned());
    let uses = collect_uses(&matches, &defs, &module_names, &imports);
    let top_names: BTreeSet<&str> = top.iter().map(|&i| defs[i].name.as_str()).chain(variables.iter().map(String::as_str)).collect();
    let resolve = |name: &str| -> Option<String> {
        if let Some(target) = imports.bindings.get(name) {
            return Some(target.clone());
        }
        top_names.contains(name).then(|| join(module, name))
    };

    let mut chunks = ChunkSet::new(source);
    let lines = code_intel_plugin_sdk::LineIndex::new(source);

    // The module summary.
    let module_name = module.rsplit('.').next().filter(|n| !n.is_empty()).map_or_else(
        || path.rsplit('/').next().unwrap_or(path).trim_end_matches(".py").to_string(),
        str::to_string,
    );
    let skeleton = elide(source, 0..source.len(), &body_holes(&defs, top.iter().copied().filter(|&i| defs[i].chunked)));
    let module_refs = uses.per_def.get(&None).cloned().unwrap_or_default();
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
        .references(module_refs.iter().cloned())
        .meta_opt("imports", Some(imports.listed.clone()))
        .meta_opt("classes", Some(names_of(DefKind::Class)))
        .meta_opt("functions", Some(names_of(DefKind::Function)))
        .meta_opt("variables", Some(variables.clone()));
    if tree.has_errors() {
        module_chunk = module_chunk.meta("syntax_errors", true);
    }
    chunks.push(module_chunk);

    // Definitions, outermost first so that parents have ids.
    let mut ids: HashMap<usize, String> = HashMap::new();
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
        let refs = uses.per_def.get(&Some(i)).cloned().unwrap_or_default();
        let related: Vec<String> = refs.iter().filter_map(|r| resolve(r)).collect();
        let mut builder = ChunkBuilder::new(kind, def.name.clone())
            .id(format!("{kind}:{}", def.path))
            .qualified_name(join(module, &def.path))
            .parent(def.parent.and_then(|p| ids.get(&p).cloned()))
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
        ids.insert(i, id);
    }
    Ok(chunks.finish())
}

/// Resolves a dotted expression (`models.Model`) whose first name is bound
/// by an import or a top-level definition.
fn resolve_dotted(expr: &str, resolve: &impl Fn(&str) -> Option<String>) -> Option<String> {
    let (head, rest) = expr.split_once('.').map_or((expr, None), |(h, r)| (h, Some(r)));
    let base = resolve(head)?;
    Some(rest.map_or(base.clone(), |r| format!("{base}.{r}")))
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
