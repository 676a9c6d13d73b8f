//! Go chunk strategy (a code-intel plugin, built as a WebAssembly component).
//!
//! One file becomes:
//! - a `module` chunk named after the package: the file with function and
//!   method bodies elided (package clause, imports, constants, variables and
//!   type declarations verbatim), with imports and top-level names in
//!   metadata;
//! - a `function` chunk per function, a `method` chunk per method
//!   (`Type.Method`, receiver in metadata, parent the type's chunk when the
//!   type is declared in the same file);
//! - a `struct`, `interface` or `type` chunk per type declaration (fields,
//!   embedded types and interface methods in metadata).
//!
//! Doc comments (the `//` lines directly above a declaration) are kept in the
//! span and become the docstring. Qualified names are the package directory
//! and the name: `internal/orders.Service.Create` for a method of `Service`
//! in `internal/orders/service.go`. `references` are callees, types and
//! package-qualified names as written; `related_symbols` resolve
//! `pkg.Name` through the file's imports to `import/path.Name`.
//!
//! Parsing is the host's (`syntax` import): the plugin asks for the tree's
//! named nodes once ([`Tree::nodes`](code_intel_plugin_sdk::Tree::nodes), all
//! kinds, so that every node's parent is its syntax parent), sorts out the
//! nodes it needs in one pass over that table (`Scan`, comparing kind and
//! field ids, each rule naming the query pattern it replaces), then
//! post-processes what it found; it must not bundle a parser.

use std::borrow::Cow;
use std::collections::BTreeSet;

use code_intel_plugin_sdk::text::{elide, one_line, qualified};
use code_intel_plugin_sdk::{
    ChunkBuilder, ChunkOutcome, ChunkSet, FieldId, KindId, LineIndex, NodeRef, NodeTable, Plugin, PluginError,
    PluginInfo, SourceFile, Span, comments_above, export_plugin, parse,
};

/// The plugin type exported to the host.
pub struct Go;

const PRIORITY: i32 = 10;

/// Predeclared identifiers and types left out of `references`.
fn is_builtin(name: &str) -> bool {
    // A `match` on strings compiles to a switch on the length and a few
    // comparisons, not one comparison per entry.
    matches!(
        name,
        "append" | "cap" | "clear" | "close" | "complex" | "copy" | "delete" | "imag" | "len" | "make" |
        "max" | "min" | "new" | "panic" | "print" | "println" | "real" | "recover" | "bool" | "byte" |
        "complex64" | "complex128" | "error" | "float32" | "float64" | "int" | "int8" | "int16" | "int32" |
        "int64" | "rune" | "string" | "uint" | "uint8" | "uint16" | "uint32" | "uint64" | "uintptr" | "any" |
        "comparable" | "Error"
    )
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum DefKind {
    Function,
    Method,
    Type,
}

struct Def {
    kind: DefKind,
    name: String,
    node: Span,
    outer: Span,
    name_start: u32,
    body: Option<Span>,
    /// Receiver type name, without `*` and type parameters.
    receiver: Option<String>,
    receiver_text: Option<String>,
    type_kind: &'static str,
    docstring: Option<String>,
    fields: Vec<String>,
    embedded: Vec<String>,
    methods: Vec<String>,
    /// Where the signature ends.
    header_end: u32,
}

impl Plugin for Go {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "go".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Go: packages, functions, methods with receivers, structs, interfaces and types with doc comments and imports".into(),
            languages: vec!["go".into()],
            file_patterns: vec!["**/*.go".into()],
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

export_plugin!(Go);

/// The package directory of a file: `internal/orders/service.go` -> `internal/orders`.
#[must_use]
pub fn package_dir(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// Text of `// ...` lines cleaned of their markers; `/* */` cleaned too.
fn comment_text(comment: &str) -> String {
    if let Some(body) = comment.strip_prefix("/*") {
        return body.trim_end_matches("*/").trim().to_string();
    }
    let line = comment.trim_start_matches("//");
    line.strip_prefix(' ').unwrap_or(line).trim_end().to_string()
}

fn receiver_type(receiver: &str) -> String {
    // `(s *Service[T])` -> `Service`
    let inner = receiver.trim().trim_start_matches('(').trim_end_matches(')').trim();
    let inner = inner.split('[').next().unwrap_or(inner);
    let ty = inner.split_whitespace().last().unwrap_or(inner);
    ty.trim_start_matches('*').to_string()
}

/// Kind and field ids of the node table the plugin looks at, looked up once
/// per file; `None` for a kind the file does not contain.
struct Kinds {
    package_clause: Option<KindId>,
    package_identifier: Option<KindId>,
    function_declaration: Option<KindId>,
    method_declaration: Option<KindId>,
    identifier: Option<KindId>,
    field_identifier: Option<KindId>,
    type_identifier: Option<KindId>,
    block: Option<KindId>,
    parameter_list: Option<KindId>,
    type_declaration: Option<KindId>,
    type_spec: Option<KindId>,
    type_alias: Option<KindId>,
    struct_type: Option<KindId>,
    interface_type: Option<KindId>,
    comment: Option<KindId>,
    import_spec: Option<KindId>,
    field_declaration_list: Option<KindId>,
    field_declaration: Option<KindId>,
    method_elem: Option<KindId>,
    type_elem: Option<KindId>,
    call_expression: Option<KindId>,
    selector_expression: Option<KindId>,
    qualified_type: Option<KindId>,
    name: Option<FieldId>,
    body: Option<FieldId>,
    receiver: Option<FieldId>,
    type_: Option<FieldId>,
    path: Option<FieldId>,
    function: Option<FieldId>,
    operand: Option<FieldId>,
    field: Option<FieldId>,
    package: Option<FieldId>,
}

impl Kinds {
    fn of(nodes: &NodeTable<'_>) -> Self {
        Self {
            package_clause: nodes.kind_id("package_clause"),
            package_identifier: nodes.kind_id("package_identifier"),
            function_declaration: nodes.kind_id("function_declaration"),
            method_declaration: nodes.kind_id("method_declaration"),
            identifier: nodes.kind_id("identifier"),
            field_identifier: nodes.kind_id("field_identifier"),
            type_identifier: nodes.kind_id("type_identifier"),
            block: nodes.kind_id("block"),
            parameter_list: nodes.kind_id("parameter_list"),
            type_declaration: nodes.kind_id("type_declaration"),
            type_spec: nodes.kind_id("type_spec"),
            type_alias: nodes.kind_id("type_alias"),
            struct_type: nodes.kind_id("struct_type"),
            interface_type: nodes.kind_id("interface_type"),
            comment: nodes.kind_id("comment"),
            import_spec: nodes.kind_id("import_spec"),
            field_declaration_list: nodes.kind_id("field_declaration_list"),
            field_declaration: nodes.kind_id("field_declaration"),
            method_elem: nodes.kind_id("method_elem"),
            type_elem: nodes.kind_id("type_elem"),
            call_expression: nodes.kind_id("call_expression"),
            selector_expression: nodes.kind_id("selector_expression"),
            qualified_type: nodes.kind_id("qualified_type"),
            name: nodes.field_id("name"),
            body: nodes.field_id("body"),
            receiver: nodes.field_id("receiver"),
            type_: nodes.field_id("type"),
            path: nodes.field_id("path"),
            function: nodes.field_id("function"),
            operand: nodes.field_id("operand"),
            field: nodes.field_id("field"),
            package: nodes.field_id("package"),
        }
    }
}

/// The child of `node` filling `field`.
fn child(node: NodeRef<'_>, field: Option<FieldId>) -> Option<NodeRef<'_>> {
    node.child_by(field?)
}

/// True when `node` fills `field` of a parent of kind `parent`.
fn fills(node: NodeRef<'_>, field: Option<FieldId>, parent: Option<KindId>) -> bool {
    field.is_some() && node.field_id() == field && node.parent().is_some_and(|p| p.is(parent))
}

/// What a struct or interface type is made of.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Field,
    Embedded,
    Method,
}

/// A field, embedded type or interface method, by the node that holds it:
/// a struct's `field_declaration_list` or an `interface_type`.
struct TypePart<'s> {
    owner: u32,
    what: Part,
    text: &'s str,
}

/// `pkg.Member`: a selector on an identifier or a qualified type.
struct Member<'s> {
    at: u32,
    pkg: &'s str,
    member: &'s str,
    member_at: u32,
}

/// The nodes the plugin works on, sorted out in one pass over the table in
/// document order. Each rule stands for a pattern of the query the plugin
/// used before it read the node table.
#[derive(Default)]
struct Scan<'s> {
    /// `(package_clause (package_identifier) @package)`: the last one.
    package: Option<NodeRef<'s>>,
    /// Function and method declarations.
    funcs: Vec<NodeRef<'s>>,
    /// `type_spec` and `type_alias` nodes directly in a `type_declaration`.
    specs: Vec<NodeRef<'s>>,
    comments: Vec<Span>,
    imports: Vec<NodeRef<'s>>,
    parts: Vec<TypePart<'s>>,
    members: Vec<Member<'s>>,
    /// Callees and type names: (start, text).
    uses: Vec<(u32, &'s str)>,
}

impl<'s> Scan<'s> {
    fn of(nodes: &'s NodeTable<'s>, k: &Kinds) -> Self {
        let mut scan = Scan::default();
        for node in nodes.iter() {
            let kind = Some(node.kind_id());
            if kind == k.type_identifier {
                // `(type_identifier) @type_ref`
                scan.uses.push((node.start_byte(), node.text()));
            } else if kind == k.field_identifier {
                let Some(parent) = node.parent() else { continue };
                let field = node.field_id();
                if field.is_none() {
                    continue;
                }
                if field == k.name && parent.is(k.field_declaration) {
                    // `(field_declaration_list (field_declaration name: (field_identifier) @field)) @fields`
                    if let Some(list) = parent.parent().filter(|l| l.is(k.field_declaration_list)) {
                        scan.parts.push(TypePart { owner: list.start_byte(), what: Part::Field, text: node.text() });
                    }
                } else if field == k.name && parent.is(k.method_elem) {
                    // `(interface_type (method_elem name: (field_identifier) @imethod)) @iface`
                    if let Some(iface) = parent.parent().filter(|i| i.is(k.interface_type)) {
                        scan.parts.push(TypePart { owner: iface.start_byte(), what: Part::Method, text: node.text() });
                    }
                } else if field == k.field && parent.is(k.selector_expression) && fills(parent, k.function, k.call_expression) {
                    // `(call_expression function: (selector_expression field: (field_identifier) @callee))`
                    scan.uses.push((node.start_byte(), node.text()));
                }
            } else if kind == k.identifier {
                // `(call_expression function: (identifier) @callee)`
                if fills(node, k.function, k.call_expression) {
                    scan.uses.push((node.start_byte(), node.text()));
                }
            } else if kind == k.selector_expression {
                // `(selector_expression operand: (identifier) @pkg field: (field_identifier) @member)`
                if let (Some(pkg), Some(member)) = (
                    child(node, k.operand).filter(|o| o.is(k.identifier)),
                    child(node, k.field).filter(|f| f.is(k.field_identifier)),
                ) {
                    scan.members.push(Member { at: pkg.start_byte(), pkg: pkg.text(), member: member.text(), member_at: member.start_byte() });
                }
            } else if kind == k.qualified_type {
                // `(qualified_type package: (package_identifier) @pkg name: (type_identifier) @member)`
                if let (Some(pkg), Some(member)) = (
                    child(node, k.package).filter(|o| o.is(k.package_identifier)),
                    child(node, k.name).filter(|f| f.is(k.type_identifier)),
                ) {
                    scan.members.push(Member { at: pkg.start_byte(), pkg: pkg.text(), member: member.text(), member_at: member.start_byte() });
                }
            } else if kind == k.comment {
                scan.comments.push(Span::of(node));
            } else if kind == k.field_declaration {
                // `(field_declaration_list (field_declaration . type: (_) @embedded .)) @fields`:
                // the type is the declaration's only named child.
                if let Some(list) = node.parent().filter(|l| l.is(k.field_declaration_list)) {
                    let mut children = node.children();
                    if let (Some(ty), None) = (children.next(), children.next())
                        && k.type_.is_some()
                        && ty.field_id() == k.type_
                    {
                        scan.parts.push(TypePart { owner: list.start_byte(), what: Part::Embedded, text: ty.text() });
                    }
                }
            } else if kind == k.type_elem {
                // `(interface_type (type_elem) @embedded) @iface`
                if let Some(iface) = node.parent().filter(|i| i.is(k.interface_type)) {
                    scan.parts.push(TypePart { owner: iface.start_byte(), what: Part::Embedded, text: node.text() });
                }
            } else if kind == k.function_declaration || kind == k.method_declaration {
                scan.funcs.push(node);
            } else if kind == k.type_spec || kind == k.type_alias {
                if node.parent().is_some_and(|p| p.is(k.type_declaration)) {
                    scan.specs.push(node);
                }
            } else if kind == k.import_spec {
                scan.imports.push(node);
            } else if kind == k.package_identifier && node.parent().is_some_and(|p| p.is(k.package_clause)) {
                scan.package = Some(node);
            }
        }
        scan
    }
}

/// The import bound to `local` (the last one, as a later import of the same
/// name overrides an earlier one).
fn imported<'s>(imports: &[(&'s str, &'s str, u32)], local: &str) -> Option<&'s str> {
    imports.iter().rev().find(|(l, ..)| *l == local).map(|&(_, path, _)| path)
}

#[allow(clippy::too_many_lines)]
fn chunk_file(path: &str, source: &str) -> Result<Vec<code_intel_plugin_sdk::Chunk>, PluginError> {
    let tree = parse("go", source)?;
    let nodes = tree.nodes(&[])?;
    let k = Kinds::of(&nodes);
    let scan = Scan::of(&nodes, &k);
    let lines = LineIndex::new(source);
    let dir = package_dir(path);

    let package = scan.package.map(|p| p.text().to_string());
    let package_at = scan.package.map_or(0, NodeRef::start_byte);
    let mut defs: Vec<Def> = Vec::new();
    let mut comments = scan.comments;
    // (local name, import path, start of the import spec)
    let mut imports: Vec<(&str, &str, u32)> = Vec::new();
    let mut import_list: Vec<String> = Vec::new();
    let mut import_spans: Vec<Span> = Vec::new();
    let mut type_decls: Vec<(Span, usize)> = Vec::new();

    for &node in &scan.funcs {
        let method = node.is(k.method_declaration);
        let receiver = if method {
            let Some(receiver) = child(node, k.receiver).filter(|r| r.is(k.parameter_list)) else { continue };
            Some(receiver)
        } else {
            None
        };
        let name_kind = if method { k.field_identifier } else { k.identifier };
        let Some(name) = child(node, k.name).filter(|n| n.is(name_kind)) else { continue };
        let body = child(node, k.body).filter(|b| b.is(k.block)).map(Span::of);
        defs.push(Def {
            kind: if method { DefKind::Method } else { DefKind::Function },
            name: name.text().to_string(),
            node: Span::of(node),
            outer: Span::of(node),
            name_start: name.start_byte(),
            body,
            receiver: receiver.map(|r| receiver_type(r.text())),
            receiver_text: receiver.map(|r| r.text().to_string()),
            type_kind: "",
            docstring: None,
            fields: Vec::new(),
            embedded: Vec::new(),
            methods: Vec::new(),
            header_end: body.map_or(node.end_byte(), |b| b.start_byte),
        });
    }
    for &spec in &scan.specs {
        let (Some(name), Some(ty), Some(decl)) =
            (child(spec, k.name).filter(|n| n.is(k.type_identifier)), child(spec, k.type_), spec.parent())
        else {
            continue;
        };
        let type_kind = if ty.is(k.struct_type) {
            "struct"
        } else if ty.is(k.interface_type) {
            "interface"
        } else {
            "type"
        };
        let body = matches!(type_kind, "struct" | "interface").then(|| Span::of(ty));
        let header_end = match type_kind {
            "struct" | "interface" => ty.start_byte() + if type_kind == "struct" { 6 } else { 9 },
            _ => spec.end_byte(),
        };
        type_decls.push((Span::of(decl), defs.len()));
        defs.push(Def {
            kind: DefKind::Type,
            name: name.text().to_string(),
            node: Span::of(spec),
            outer: Span::of(spec),
            name_start: name.start_byte(),
            body,
            receiver: None,
            receiver_text: None,
            type_kind,
            docstring: None,
            fields: Vec::new(),
            embedded: Vec::new(),
            methods: Vec::new(),
            header_end,
        });
    }
    // `(import_spec name: (_)? @import.alias path: (_) @import.path) @import`
    for &spec in &scan.imports {
        let Some(p) = child(spec, k.path) else { continue };
        let import_path = p.text().trim_matches(['"', '`']);
        let local = child(spec, k.name).map_or_else(|| import_path.rsplit('/').next().unwrap_or(import_path), NodeRef::text);
        imports.push((local, import_path, spec.start_byte()));
        if !import_list.iter().any(|i| i == import_path) {
            import_list.push(import_path.to_string());
        }
        import_spans.push(Span::of(spec));
    }
    // `pkg.Name` where `pkg` is imported (by an import before it).
    let member_names: BTreeSet<u32> = scan
        .members
        .iter()
        .filter(|m| imports.iter().any(|&(local, _, at)| local == m.pkg && at < m.at))
        .map(|m| m.member_at)
        .collect();

    // A type declaration with one spec spans the `type` keyword.
    for &(decl, i) in &type_decls {
        if type_decls.iter().filter(|(d, _)| d.start_byte == decl.start_byte).count() == 1 {
            defs[i].outer = decl;
        }
    }
    // Fields, embedded types and interface methods.
    for def in defs.iter_mut().filter(|d| d.kind == DefKind::Type) {
        let Some(body) = def.body else { continue };
        for part in &scan.parts {
            let owner = part.owner;
            // The struct or interface node itself, or its field list.
            if owner >= body.start_byte && owner < body.start_byte + 16 && body.contains_byte(owner) {
                let (list, name) = match part.what {
                    Part::Field => (&mut def.fields, part.text.to_string()),
                    Part::Embedded => (&mut def.embedded, one_line(part.text)),
                    Part::Method => (&mut def.methods, part.text.to_string()),
                };
                if !list.contains(&name) {
                    list.push(name);
                }
            }
        }
    }
    // Doc comments: consecutive comment lines ending on the line above.
    comments.sort_by_key(|c| c.start_byte);
    for def in &mut defs {
        let run = comments_above(source, &comments, def.outer.start_byte);
        if let Some(first) = run.first() {
            let doc: Vec<String> = run.iter().map(|c| comment_text(c.text(source))).collect();
            def.docstring = Some(doc.join("\n").trim().to_string()).filter(|d| !d.is_empty());
            def.outer = def.outer.join(lines.span(first.start_byte, def.outer.end_byte));
        }
    }
    defs.sort_by_key(|d| (d.outer.start_byte, std::cmp::Reverse(d.outer.end_byte)));

    let package = package.unwrap_or_else(|| dir.rsplit('/').next().unwrap_or("main").to_string());
    let qualify = |name: &str| qualified(dir, ".", name);
    let local_names: BTreeSet<&str> = defs.iter().filter(|d| d.kind != DefKind::Method).map(|d| d.name.as_str()).collect();
    let type_names: BTreeSet<&str> = defs.iter().filter(|d| d.kind == DefKind::Type).map(|d| d.name.as_str()).collect();

    // Uses per def: the first (outermost) def containing them. Index 0 is
    // the module, `i + 1` def `i`.
    let owner_of = |at: u32| {
        let end = defs.partition_point(|d| d.outer.start_byte <= at);
        defs[..end].iter().position(|d| d.outer.contains_byte(at))
    };
    let slot = |owner: Option<usize>| owner.map_or(0, |i| i + 1);
    let in_import = |at: u32| import_spans.iter().any(|s| s.contains_byte(at));
    let name_starts: BTreeSet<u32> = defs.iter().map(|d| d.name_start).collect();
    let mut refs: Vec<BTreeSet<Cow<'_, str>>> = vec![BTreeSet::new(); defs.len() + 1];
    let mut related: Vec<BTreeSet<String>> = vec![BTreeSet::new(); defs.len() + 1];
    let mut member_at: BTreeSet<u32> = BTreeSet::new();
    for m in &scan.members {
        if let Some(import_path) = imported(&imports, m.pkg) {
            member_at.insert(m.at);
            let owner = slot(owner_of(m.at));
            refs[owner].insert(Cow::Owned([m.pkg, ".", m.member].concat()));
            related[owner].insert([import_path, ".", m.member].concat());
        }
    }
    for &(at, text) in &scan.uses {
        if name_starts.contains(&at)
            || in_import(at)
            || is_builtin(text)
            || member_at.contains(&at)
            || text.len() == 1
        {
            continue;
        }
        // `pkg.Name` of an imported package is counted once, as `pkg.Name`.
        if member_names.contains(&at) {
            continue;
        }
        let owner = slot(owner_of(at));
        refs[owner].insert(Cow::Borrowed(text));
        if local_names.contains(text) {
            related[owner].insert(qualify(text));
        }
    }

    let mut chunks = ChunkSet::new(source);
    let holes: Vec<(std::ops::Range<usize>, &str)> =
        defs.iter().filter(|d| d.kind != DefKind::Type).filter_map(|d| d.body.map(|b| (b.range(), "{ ... }"))).collect();
    let names_of = |kind: DefKind| -> Vec<String> {
        let mut v: Vec<String> = defs.iter().filter(|d| d.kind == kind).map(|d| d.name.clone()).collect();
        v.dedup();
        v
    };
    // The package doc: comment lines directly above the package clause.
    let mut module_doc: Vec<String> = Vec::new();
    let mut at = source[..package_at as usize].rfind("package").unwrap_or(0) as u32;
    for c in comments[..comments.partition_point(|c| c.end_byte <= at)].iter().rev() {
        let gap = &source[c.end_byte as usize..at as usize];
        if !gap.trim().is_empty() || gap.matches('\n').count() != 1 {
            break;
        }
        module_doc.push(comment_text(c.text(source)));
        at = c.start_byte;
    }
    module_doc.reverse();
    let module_doc = module_doc.join("\n");
    let mut module = ChunkBuilder::new("module", package.clone())
        .id("module")
        .qualified_name(if dir.is_empty() { package.clone() } else { dir.to_string() })
        .span(lines.span(0, u32::try_from(source.len()).unwrap_or(u32::MAX)))
        .content(elide(source, 0..source.len(), &holes))
        .signature(format!("package {package}"))
        .docstring(Some(module_doc.trim().to_string()).filter(|d| !d.is_empty()))
        .related_all(import_list.iter().cloned())
        .references(std::mem::take(&mut refs[0]))
        .related_all(std::mem::take(&mut related[0]))
        .meta("package", package.clone())
        .meta_opt("imports", Some(import_list.clone()))
        .meta_opt("types", Some(names_of(DefKind::Type)))
        .meta_opt("functions", Some(names_of(DefKind::Function)));
    if tree.has_errors() {
        module = module.meta("syntax_errors", true);
    }
    chunks.push(module);

    // The chunk id of the (last) type named `name` declared in the file.
    let type_id = |name: &str| {
        defs.iter().rev().find(|d| d.kind == DefKind::Type && d.name == name).map(|d| [d.type_kind, ":", &d.name].concat())
    };
    for (i, def) in defs.iter().enumerate() {
        let (kind, path) = match def.kind {
            DefKind::Function => ("function", def.name.clone()),
            DefKind::Method => ("method", [def.receiver.as_deref().unwrap_or("?"), ".", &def.name].concat()),
            DefKind::Type => (def.type_kind, def.name.clone()),
        };
        let header = source.get(def.node.start_byte as usize..def.header_end as usize).unwrap_or_default();
        let signature = match def.kind {
            DefKind::Type => format!("type {}", one_line(header)),
            _ => one_line(header),
        };
        let mut builder = ChunkBuilder::new(kind, def.name.clone())
            .id([kind, ":", &path].concat())
            .qualified_name(qualify(&path))
            .span(def.outer)
            .signature(signature.trim_end_matches(['{', ' ']))
            .docstring(def.docstring.clone())
            .references(std::mem::take(&mut refs[i + 1]))
            .related_all(std::mem::take(&mut related[i + 1]))
            .meta_opt("fields", Some(def.fields.clone()))
            .meta_opt("embedded", Some(def.embedded.clone()))
            .meta_opt("methods", Some(def.methods.clone()));
        if def.kind == DefKind::Method {
            let receiver = def.receiver.clone().unwrap_or_default();
            builder = builder
                .parent(type_id(&receiver))
                .meta("receiver", one_line(def.receiver_text.as_deref().unwrap_or_default()))
                .meta("pointer_receiver", def.receiver_text.as_deref().is_some_and(|r| r.contains('*')));
            if type_names.contains(receiver.as_str()) {
                builder = builder.related(qualify(&receiver));
            }
        }
        if def.name.starts_with(|c: char| c.is_ascii_uppercase()) {
            builder = builder.meta("exported", true);
        }
        if def.kind == DefKind::Type {
            // Methods declared on this type in the same file.
            let methods: Vec<String> =
                defs.iter().filter(|d| d.receiver.as_deref() == Some(def.name.as_str())).map(|d| d.name.clone()).collect();
            builder = builder.meta_opt("receiver_methods", Some(methods));
        }
        chunks.push(builder);
    }
    Ok(chunks.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receivers() {
        assert_eq!(receiver_type("(s *Service)"), "Service");
        assert_eq!(receiver_type("(c Cache[K, V])"), "Cache");
        assert_eq!(receiver_type("(*Service)"), "Service");
        assert_eq!(package_dir("internal/orders/service.go"), "internal/orders");
    }
}
