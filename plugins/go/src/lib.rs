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

use std::collections::{BTreeSet, HashMap};

use code_intel_plugin_sdk::text::{elide, one_line};
use code_intel_plugin_sdk::{
    ChunkBuilder, ChunkOutcome, ChunkSet, LineIndex, Plugin, PluginError, PluginInfo, SourceFile, Span,
    export_plugin, parse,
};

/// The plugin type exported to the host.
pub struct Go;

const PRIORITY: i32 = 10;

const QUERY: &str = r#"
(package_clause (package_identifier) @package)
(function_declaration name: (identifier) @name body: (block)? @body) @def
(method_declaration receiver: (parameter_list) @receiver name: (field_identifier) @name body: (block)? @body) @def
(type_declaration (type_spec name: (type_identifier) @name type: (_) @type) @spec) @decl
(type_declaration (type_alias name: (type_identifier) @name type: (_) @type) @spec) @decl
(comment) @comment

(import_spec name: (_)? @import.alias path: (_) @import.path) @import

(field_declaration_list (field_declaration name: (field_identifier) @field)) @fields
(field_declaration_list (field_declaration . type: (_) @embedded .)) @fields
(interface_type (method_elem name: (field_identifier) @imethod)) @iface
(interface_type (type_elem) @embedded) @iface

(call_expression function: (identifier) @callee)
(call_expression function: (selector_expression operand: (identifier) @pkg field: (field_identifier) @member))
(call_expression function: (selector_expression field: (field_identifier) @callee))
(selector_expression operand: (identifier) @pkg field: (field_identifier) @member)
(qualified_type package: (package_identifier) @pkg name: (type_identifier) @member)
(composite_literal type: (type_identifier) @type_ref)
(type_identifier) @type_ref
"#;

/// Predeclared identifiers and types left out of `references`.
const BUILTINS: &[&str] = &[
    "append", "cap", "clear", "close", "complex", "copy", "delete", "imag", "len", "make", "max", "min", "new",
    "panic", "print", "println", "real", "recover", "bool", "byte", "complex64", "complex128", "error", "float32",
    "float64", "int", "int8", "int16", "int32", "int64", "rune", "string", "uint", "uint8", "uint16", "uint32",
    "uint64", "uintptr", "any", "comparable", "Error",
];

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

#[allow(clippy::too_many_lines)]
fn chunk_file(path: &str, source: &str) -> Result<Vec<code_intel_plugin_sdk::Chunk>, PluginError> {
    let tree = parse("go", source)?;
    let matches = tree.matches(QUERY)?;
    let lines = LineIndex::new(source);
    let dir = package_dir(path);

    let mut package = None;
    let mut defs: Vec<Def> = Vec::new();
    let mut comments: Vec<Span> = Vec::new();
    let mut imports: HashMap<String, String> = HashMap::new();
    let mut import_list: Vec<String> = Vec::new();
    let mut import_spans: Vec<Span> = Vec::new();
    let mut members: Vec<(u32, &str, &str)> = Vec::new();
    let mut member_names: BTreeSet<u32> = BTreeSet::new();
    let mut package_at = 0;
    let mut uses: Vec<(u32, String)> = Vec::new();
    // (container start, name, what)
    let mut type_parts: Vec<(u32, String, u8)> = Vec::new();
    let mut type_decls: Vec<(Span, usize)> = Vec::new();

    for m in &matches {
        if let Some(p) = m.get("package") {
            package = Some(p.text.to_string());
            package_at = p.start_byte;
        } else if let (Some(node), Some(name)) = (m.get("def"), m.get("name")) {
            let body = m.get("body").map(Span::of);
            let receiver = m.get("receiver");
            defs.push(Def {
                kind: if receiver.is_some() { DefKind::Method } else { DefKind::Function },
                name: name.text.to_string(),
                node: Span::of(node),
                outer: Span::of(node),
                name_start: name.start_byte,
                body,
                receiver: receiver.map(|r| receiver_type(r.text)),
                receiver_text: receiver.map(|r| r.text.to_string()),
                type_kind: "",
                docstring: None,
                fields: Vec::new(),
                embedded: Vec::new(),
                methods: Vec::new(),
                header_end: body.map_or(node.end_byte, |b| b.start_byte),
            });
        } else if let (Some(spec), Some(name), Some(ty), Some(decl)) = (m.get("spec"), m.get("name"), m.get("type"), m.get("decl")) {
            let type_kind = match ty.kind {
                "struct_type" => "struct",
                "interface_type" => "interface",
                _ => "type",
            };
            let body = matches!(type_kind, "struct" | "interface").then(|| Span::of(ty));
            let header_end = match type_kind {
                "struct" | "interface" => ty.start_byte + if type_kind == "struct" { 6 } else { 9 },
                _ => spec.end_byte,
            };
            type_decls.push((Span::of(decl), defs.len()));
            defs.push(Def {
                kind: DefKind::Type,
                name: name.text.to_string(),
                node: Span::of(spec),
                outer: Span::of(spec),
                name_start: name.start_byte,
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
        } else if let Some(c) = m.get("comment") {
            comments.push(Span::of(c));
        } else if let (Some(stmt), Some(p)) = (m.get("import"), m.get("import.path")) {
            let import_path = p.text.trim_matches(['"', '`']).to_string();
            let local = m.text("import.alias").map_or_else(|| import_path.rsplit('/').next().unwrap_or(&import_path).to_string(), str::to_string);
            imports.insert(local, import_path.clone());
            if !import_list.contains(&import_path) {
                import_list.push(import_path);
            }
            import_spans.push(Span::of(stmt));
        } else if let (Some(owner), Some(f)) = (m.get("fields"), m.get("field")) {
            type_parts.push((owner.start_byte, f.text.to_string(), 0));
        } else if let (Some(owner), Some(e)) = (m.get("fields").or_else(|| m.get("iface")), m.get("embedded")) {
            type_parts.push((owner.start_byte, one_line(e.text), 1));
        } else if let (Some(owner), Some(im)) = (m.get("iface"), m.get("imethod")) {
            type_parts.push((owner.start_byte, im.text.to_string(), 2));
        } else if let (Some(pkg), Some(member)) = (m.get("pkg"), m.get("member")) {
            members.push((pkg.start_byte, pkg.text, member.text));
            // Imports precede every use, so the import map is complete here.
            if imports.contains_key(pkg.text) {
                member_names.insert(member.start_byte);
            }
        } else if let Some(c) = m.get("callee").or_else(|| m.get("type_ref")) {
            uses.push((c.start_byte, c.text.to_string()));
        }
    }

    // A type declaration with one spec spans the `type` keyword.
    let mut decl_count: HashMap<u32, usize> = HashMap::new();
    for (decl, _) in &type_decls {
        *decl_count.entry(decl.start_byte).or_default() += 1;
    }
    for (decl, i) in &type_decls {
        if decl_count[&decl.start_byte] == 1 {
            defs[*i].outer = *decl;
        }
    }
    // Fields, embedded types and interface methods.
    for def in defs.iter_mut().filter(|d| d.kind == DefKind::Type) {
        let Some(body) = def.body else { continue };
        for (owner, name, what) in &type_parts {
            // The struct or interface node itself, or its field list.
            if *owner >= body.start_byte && *owner < body.start_byte + 16 && body.contains_byte(*owner) {
                let list = match what {
                    0 => &mut def.fields,
                    1 => &mut def.embedded,
                    _ => &mut def.methods,
                };
                if !list.contains(name) {
                    list.push(name.clone());
                }
            }
        }
    }
    // Doc comments: consecutive comment lines ending on the line above.
    comments.sort_by_key(|c| c.start_byte);
    for def in &mut defs {
        let mut start = def.outer.start_byte;
        let mut doc: Vec<String> = Vec::new();
        let pos = comments.partition_point(|c| c.end_byte <= start);
        for c in comments[..pos].iter().rev() {
            let gap = &source[c.end_byte as usize..start as usize];
            if !gap.trim().is_empty() || gap.matches('\n').count() != 1 {
                break;
            }
            doc.push(comment_text(c.text(source)));
            start = c.start_byte;
        }
        if !doc.is_empty() {
            doc.reverse();
            def.docstring = Some(doc.join("\n").trim().to_string()).filter(|d| !d.is_empty());
            def.outer = def.outer.join(lines.span(start, def.outer.end_byte));
        }
    }
    defs.sort_by_key(|d| (d.outer.start_byte, std::cmp::Reverse(d.outer.end_byte)));

    let package = package.unwrap_or_else(|| dir.rsplit('/').next().unwrap_or("main").to_string());
    let qualify = |name: &str| if dir.is_empty() { name.to_string() } else { format!("{dir}.{name}") };
    let local_names: BTreeSet<&str> = defs.iter().filter(|d| d.kind != DefKind::Method).map(|d| d.name.as_str()).collect();
    let type_names: BTreeSet<&str> = defs.iter().filter(|d| d.kind == DefKind::Type).map(|d| d.name.as_str()).collect();

    // Uses per def (innermost top-level def containing them; Go has no nesting of declarations).
    let owner_of = |at: u32| defs.iter().position(|d| d.outer.contains_byte(at));
    let in_import = |at: u32| import_spans.iter().any(|s| s.contains_byte(at));
    let name_starts: BTreeSet<u32> = defs.iter().map(|d| d.name_start).collect();
    let mut refs: HashMap<Option<usize>, BTreeSet<String>> = HashMap::new();
    let mut related: HashMap<Option<usize>, BTreeSet<String>> = HashMap::new();
    let member_at: BTreeSet<u32> = members.iter().filter(|(_, p, _)| imports.contains_key(*p)).map(|(at, _, _)| *at).collect();
    for (at, pkg, member) in &members {
        if let Some(import_path) = imports.get(*pkg) {
            let owner = owner_of(*at);
            refs.entry(owner).or_default().insert(format!("{pkg}.{member}"));
            related.entry(owner).or_default().insert(format!("{import_path}.{member}"));
        }
    }
    for (at, text) in &uses {
        if name_starts.contains(at)
            || in_import(*at)
            || BUILTINS.contains(&text.as_str())
            || member_at.contains(at)
            || text.len() == 1
        {
            continue;
        }
        // `pkg.Name` of an imported package is counted once, as `pkg.Name`.
        if member_names.contains(at) {
            continue;
        }
        let owner = owner_of(*at);
        refs.entry(owner).or_default().insert(text.clone());
        if local_names.contains(text.as_str()) {
            related.entry(owner).or_default().insert(qualify(text));
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
        .references(refs.remove(&None).unwrap_or_default())
        .related_all(related.remove(&None).unwrap_or_default())
        .meta("package", package.clone())
        .meta_opt("imports", Some(import_list.clone()))
        .meta_opt("types", Some(names_of(DefKind::Type)))
        .meta_opt("functions", Some(names_of(DefKind::Function)));
    if tree.has_errors() {
        module = module.meta("syntax_errors", true);
    }
    chunks.push(module);

    let type_ids: HashMap<&str, String> = defs
        .iter()
        .filter(|d| d.kind == DefKind::Type)
        .map(|d| (d.name.as_str(), format!("{}:{}", d.type_kind, d.name)))
        .collect();
    for (i, def) in defs.iter().enumerate() {
        let (kind, path) = match def.kind {
            DefKind::Function => ("function", def.name.clone()),
            DefKind::Method => ("method", format!("{}.{}", def.receiver.as_deref().unwrap_or("?"), def.name)),
            DefKind::Type => (def.type_kind, def.name.clone()),
        };
        let header = source.get(def.node.start_byte as usize..def.header_end as usize).unwrap_or_default();
        let signature = match def.kind {
            DefKind::Type => format!("type {}", one_line(header)),
            _ => one_line(header),
        };
        let mut builder = ChunkBuilder::new(kind, def.name.clone())
            .id(format!("{kind}:{path}"))
            .qualified_name(qualify(&path))
            .span(def.outer)
            .signature(signature.trim_end_matches(['{', ' ']))
            .docstring(def.docstring.clone())
            .references(refs.remove(&Some(i)).unwrap_or_default())
            .related_all(related.remove(&Some(i)).unwrap_or_default())
            .meta_opt("fields", Some(def.fields.clone()))
            .meta_opt("embedded", Some(def.embedded.clone()))
            .meta_opt("methods", Some(def.methods.clone()));
        if def.kind == DefKind::Method {
            let receiver = def.receiver.clone().unwrap_or_default();
            builder = builder
                .parent(type_ids.get(receiver.as_str()).cloned())
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
