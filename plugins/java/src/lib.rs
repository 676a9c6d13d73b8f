//! Java chunk strategy (a code-intel plugin, built as a WebAssembly component).
//!
//! One file becomes:
//! - a `module` chunk named after the package: the file with the bodies of
//!   its top-level types elided (license header, package clause, imports),
//!   with imports and type names in metadata;
//! - a `class`, `interface`, `enum`, `record` or `annotation_type` chunk per
//!   type, nested types included (`Order.Line`): header, Javadoc,
//!   annotations, fields, enum constants and member signatures, with method
//!   bodies and nested type bodies elided;
//! - a `method` chunk per method and a `constructor` chunk per constructor
//!   (`Type.name`, parent the type's chunk).
//!
//! Javadoc comments (`/** */` directly above a declaration) are part of the
//! span and become the docstring. Qualified names are the package and the
//! path inside the file: `com.acme.shop.Order.Line.total`. `references` are
//! type names, annotation names and callees as written; `related_symbols`
//! resolve type names through the imports (`com.acme.shop.model.Customer`),
//! to the file's own types, or else (when the file has no wildcard import)
//! to the file's package.
//! Types declared inside method bodies (local and anonymous classes) stay
//! part of their method.

use std::collections::{BTreeSet, HashMap};

use code_intel_plugin_sdk::text::{docblock, elide, one_line};
use code_intel_plugin_sdk::{
    ChunkBuilder, ChunkOutcome, ChunkSet, LineIndex, Plugin, PluginError, PluginInfo, SourceFile, Span,
    export_plugin, parse,
};

/// The plugin type exported to the host.
pub struct Java;

/// A general language strategy, like `python` and `php`.
const PRIORITY: i32 = 10;

/// Everything the strategy needs, in one query (one walk of the tree).
const QUERY: &str = r#"
(package_declaration [(identifier) (scoped_identifier)] @package)
(import_declaration) @import
(class_declaration name: (identifier) @name body: (class_body) @body) @type
(interface_declaration name: (identifier) @name body: (interface_body) @body) @type
(enum_declaration name: (identifier) @name body: (enum_body) @body) @type
(record_declaration name: (identifier) @name body: (class_body) @body) @type
(annotation_type_declaration name: (identifier) @name body: (annotation_type_body) @body) @type
(method_declaration name: (identifier) @name body: (block)? @body) @method
(constructor_declaration name: (identifier) @name body: (constructor_body) @body) @method
(compact_constructor_declaration name: (identifier) @name body: (block) @body) @method
((block_comment) @doc (#match? @doc "^/[*][*]"))
(modifiers) @modifiers
(modifiers [(annotation name: (_) @annotation.name) (marker_annotation name: (_) @annotation.name)] @annotation)
(field_declaration declarator: (variable_declarator name: (identifier) @field))
(constant_declaration declarator: (variable_declarator name: (identifier) @field))
(enum_constant name: (identifier) @constant)
(record_declaration parameters: (formal_parameters (formal_parameter name: (identifier) @component)))
(annotation_type_element_declaration name: (identifier) @element)
(superclass (_) @extends)
(super_interfaces (type_list (_) @implements))
(extends_interfaces (type_list (_) @extends))
(enum_constant body: (class_body) @anonymous)
(method_invocation name: (identifier) @callee)
(scoped_type_identifier) @scoped_ref
(type_identifier) @type_ref
"#;

/// `java.lang` types, boxed primitives and common annotations: left out of
/// `references` and `related_symbols`, they would link everything to nothing.
const JAVA_LANG: &[&str] = &[
    "Boolean", "Byte", "Character", "Class", "Comparable", "Deprecated", "Double", "Enum", "Error", "Exception",
    "Float", "FunctionalInterface", "Integer", "Iterable", "Long", "Math", "Number", "Object", "Override", "Record",
    "Runnable", "RuntimeException", "SafeVarargs", "Short", "String", "StringBuilder", "SuppressWarnings", "System",
    "Thread", "Throwable", "Void", "var", "IllegalArgumentException", "IllegalStateException",
    "UnsupportedOperationException", "NullPointerException", "CharSequence", "AutoCloseable",
];

/// Modifier keywords (annotations are listed apart).
const MODIFIERS: &[&str] = &[
    "public", "protected", "private", "static", "final", "abstract", "default", "synchronized", "native",
    "transient", "volatile", "strictfp", "sealed", "non-sealed",
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum DefKind {
    Type(&'static str),
    Method,
    Constructor,
}

struct Def {
    kind: DefKind,
    name: String,
    /// The declaration node (annotations and modifiers included).
    node: Span,
    /// With the Javadoc above it.
    outer: Span,
    body: Option<Span>,
    docstring: Option<String>,
    /// Path inside the file: `Order.Line.total`.
    path: String,
    parent: Option<usize>,
    /// Inside a method body: not a chunk of its own.
    local: bool,
    annotations: Vec<String>,
    modifiers: Vec<String>,
    /// Where the signature starts (after leading annotations).
    header_start: u32,
    extends: Vec<String>,
    implements: Vec<String>,
    fields: Vec<String>,
    constants: Vec<String>,
    components: Vec<String>,
    elements: Vec<String>,
}

impl Plugin for Java {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "java".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Java: classes, interfaces, enums, records, annotation types, methods and constructors with Javadoc, annotations and imports".into(),
            languages: vec!["java".into()],
            file_patterns: vec!["**/*.java".into()],
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

export_plugin!(Java);

/// The simple name of a type as written: `List<Order>` -> `List`,
/// `java.util.Map.Entry` -> `java.util.Map.Entry`, `Foo[]` -> `Foo`.
fn base_type(text: &str) -> String {
    let text = text.split('<').next().unwrap_or(text);
    one_line(text.trim_end_matches(['[', ']', ' ']))
}

/// The index of the innermost def containing `at` (defs sorted by start).
fn owner_of(defs: &[Def], at: u32) -> Option<usize> {
    let end = defs.partition_point(|d| d.outer.start_byte <= at);
    (0..end).rev().find(|&i| defs[i].outer.contains_byte(at))
}

#[allow(clippy::too_many_lines)]
fn chunk_file(path: &str, source: &str) -> Result<Vec<code_intel_plugin_sdk::Chunk>, PluginError> {
    let tree = parse("java", source)?;
    let matches = tree.matches(QUERY)?;
    let lines = LineIndex::new(source);

    let mut package: Option<String> = None;
    let mut imports: HashMap<String, String> = HashMap::new();
    let mut import_list: Vec<String> = Vec::new();
    let mut import_spans: Vec<Span> = Vec::new();
    // With `import a.b.*;` an unknown name may come from anywhere.
    let mut wildcard = false;
    let mut defs: Vec<Def> = Vec::new();
    let mut docs: Vec<Span> = Vec::new();
    let mut modifiers: HashMap<u32, &str> = HashMap::new();
    // (modifiers start, annotation text, annotation name, annotation end)
    let mut annotations: Vec<(u32, &str, &str, u32)> = Vec::new();
    // (at, what, text)
    let mut parts: Vec<(u32, u8, String)> = Vec::new();
    let mut uses: Vec<(u32, &str)> = Vec::new();
    // Bodies of enum constants (anonymous classes): their methods stay in the enum.
    let mut anonymous: Vec<Span> = Vec::new();
    // `Order.Line`: one reference, not `Order` and `Line`.
    let mut scoped: Vec<Span> = Vec::new();

    for m in &matches {
        if let Some(p) = m.get("package") {
            package = Some(one_line(p.text));
        } else if let Some(import) = m.get("import") {
            let text = one_line(import.text.trim_start_matches("import").trim_end_matches(';'));
            let (is_static, target) = match text.strip_prefix("static ") {
                Some(rest) => (true, rest.trim().to_string()),
                None => (false, text.trim().to_string()),
            };
            if target.ends_with('*') {
                wildcard = true;
            } else {
                let simple = target.rsplit('.').next().unwrap_or(&target).to_string();
                if !is_static || simple.starts_with(|c: char| c.is_ascii_uppercase()) {
                    imports.insert(simple, target.clone());
                }
            }
            let listed = if is_static { format!("static {target}") } else { target };
            if !import_list.contains(&listed) {
                import_list.push(listed);
            }
            import_spans.push(Span::of(import));
        } else if let (Some(node), Some(name)) = (m.get("type").or_else(|| m.get("method")), m.get("name")) {
            let kind = match node.kind {
                "class_declaration" => DefKind::Type("class"),
                "interface_declaration" => DefKind::Type("interface"),
                "enum_declaration" => DefKind::Type("enum"),
                "record_declaration" => DefKind::Type("record"),
                "annotation_type_declaration" => DefKind::Type("annotation_type"),
                "method_declaration" => DefKind::Method,
                _ => DefKind::Constructor,
            };
            defs.push(Def {
                kind,
                name: name.text.to_string(),
                node: Span::of(node),
                outer: Span::of(node),
                body: m.get("body").map(Span::of),
                docstring: None,
                path: String::new(),
                parent: None,
                local: false,
                annotations: Vec::new(),
                modifiers: Vec::new(),
                header_start: node.start_byte,
                extends: Vec::new(),
                implements: Vec::new(),
                fields: Vec::new(),
                constants: Vec::new(),
                components: Vec::new(),
                elements: Vec::new(),
            });
        } else if let Some(doc) = m.get("doc") {
            docs.push(Span::of(doc));
        } else if let (Some(a), Some(n)) = (m.get("annotation"), m.get("annotation.name")) {
            // The enclosing `modifiers` node starts at or before the annotation;
            // resolved below against the modifiers list.
            annotations.push((a.start_byte, a.text, n.text, a.end_byte));
            uses.push((n.start_byte, n.text));
        } else if let Some(mods) = m.get("modifiers") {
            modifiers.insert(mods.start_byte, mods.text);
        } else if let Some(f) = m.get("field") {
            parts.push((f.start_byte, 0, f.text.to_string()));
        } else if let Some(c) = m.get("constant") {
            parts.push((c.start_byte, 1, c.text.to_string()));
        } else if let Some(c) = m.get("component") {
            parts.push((c.start_byte, 2, c.text.to_string()));
        } else if let Some(e) = m.get("element") {
            parts.push((e.start_byte, 3, e.text.to_string()));
        } else if let Some(e) = m.get("extends") {
            parts.push((e.start_byte, 4, base_type(e.text)));
        } else if let Some(i) = m.get("implements") {
            parts.push((i.start_byte, 5, base_type(i.text)));
        } else if let Some(a) = m.get("anonymous") {
            anonymous.push(Span::of(a));
        } else if let Some(t) = m.get("scoped_ref") {
            scoped.push(Span::of(t));
        } else if let Some(c) = m.get("callee") {
            uses.push((c.start_byte, c.text));
        } else if let Some(t) = m.get("type_ref") {
            uses.push((t.start_byte, t.text));
        }
    }
    defs.sort_by_key(|d| (d.node.start_byte, std::cmp::Reverse(d.node.end_byte)));

    // Annotations and modifiers: a declaration's `modifiers` node is its first child.
    let def_at: HashMap<u32, usize> = defs.iter().enumerate().map(|(i, d)| (d.node.start_byte, i)).collect();
    for (&start, &text) in &modifiers {
        let Some(&i) = def_at.get(&start) else { continue };
        let end = start + u32::try_from(text.len()).unwrap_or(0);
        let def = &mut defs[i];
        let mut header_start = start;
        for &(at, annotation, _, a_end) in annotations.iter().filter(|(at, ..)| (start..end).contains(at)) {
            def.annotations.push(one_line(annotation));
            if at == header_start {
                let rest = &source[a_end as usize..end as usize];
                header_start = a_end + u32::try_from(rest.len() - rest.trim_start().len()).unwrap_or(0);
            }
        }
        def.header_start = header_start;
        let mut plain = text.to_string();
        for &(_, annotation, ..) in annotations.iter().filter(|(at, ..)| (start..end).contains(at)) {
            plain = plain.replacen(annotation, " ", 1);
        }
        def.modifiers = plain.split_whitespace().filter(|w| MODIFIERS.contains(w)).map(str::to_string).collect();
    }

    // Javadoc: a `/** */` comment separated from the declaration by whitespace only.
    docs.sort_by_key(|d| d.start_byte);
    for def in &mut defs {
        let pos = docs.partition_point(|d| d.end_byte <= def.node.start_byte);
        if let Some(doc) = pos.checked_sub(1).map(|p| docs[p]) {
            let gap = &source[doc.end_byte as usize..def.node.start_byte as usize];
            if gap.trim().is_empty() && gap.matches('\n').count() <= 1 {
                def.docstring = docblock(doc.text(source));
                def.outer = doc.join(def.node);
            }
        }
    }

    // Nesting: parents, paths, and definitions local to a method body.
    let mut stack: Vec<usize> = Vec::new();
    for i in 0..defs.len() {
        while let Some(&top) = stack.last() {
            if defs[top].node.contains(&defs[i].node) {
                break;
            }
            stack.pop();
        }
        let parent = stack.last().copied();
        defs[i].parent = parent;
        if let Some(p) = parent {
            defs[i].local = defs[p].local
                || !matches!(defs[p].kind, DefKind::Type(_))
                || anonymous.iter().any(|a| a.contains(&defs[i].node));
            defs[i].path = format!("{}.{}", defs[p].path, defs[i].name);
        } else {
            defs[i].path = defs[i].name.clone();
        }
        stack.push(i);
    }

    // Fields, constants, components, elements, supertypes: to the innermost type.
    for (at, what, text) in parts {
        let Some(i) = owner_of(&defs, at) else { continue };
        if !matches!(defs[i].kind, DefKind::Type(_)) {
            continue;
        }
        let list = match what {
            0 => &mut defs[i].fields,
            1 => &mut defs[i].constants,
            2 => &mut defs[i].components,
            3 => &mut defs[i].elements,
            4 => &mut defs[i].extends,
            _ => &mut defs[i].implements,
        };
        if !list.contains(&text) {
            list.push(text);
        }
    }

    let qualify = |path: &str| match &package {
        Some(p) => format!("{p}.{path}"),
        None => path.to_string(),
    };
    // Type names of this file, by simple name (nested types too).
    let local_types: HashMap<&str, String> = defs
        .iter()
        .filter(|d| matches!(d.kind, DefKind::Type(_)) && !d.local)
        .map(|d| (d.name.as_str(), qualify(&d.path)))
        .collect();
    let resolve = |name: &str| -> Option<String> {
        let first = name.split('.').next().unwrap_or(name);
        if let Some(target) = imports.get(first) {
            return Some(match name.split_once('.') {
                Some((_, rest)) => format!("{target}.{rest}"),
                None => target.clone(),
            });
        }
        if let Some(q) = local_types.get(name) {
            return Some(q.clone());
        }
        if name.contains('.') {
            return Some(name.to_string());
        }
        if wildcard {
            return None;
        }
        package.as_ref().map(|p| format!("{p}.{name}"))
    };

    // Uses per chunk: the innermost non-local def containing them.
    let chunk_of = |at: u32| -> Option<usize> {
        let mut i = owner_of(&defs, at)?;
        while defs[i].local {
            i = defs[i].parent?;
        }
        Some(i)
    };
    let in_import = |at: u32| import_spans.iter().any(|s| s.contains_byte(at));
    // Outermost scoped type names replace the names they are made of.
    scoped.sort_by_key(|s| (s.start_byte, std::cmp::Reverse(s.end_byte)));
    let mut outer_scoped: Vec<Span> = Vec::new();
    for s in scoped {
        if outer_scoped.last().is_none_or(|o| !o.contains(&s)) {
            outer_scoped.push(s);
        }
    }
    let in_scoped = |at: u32| {
        let i = outer_scoped.partition_point(|s| s.start_byte <= at);
        i > 0 && outer_scoped[i - 1].contains_byte(at)
    };
    uses.retain(|&(at, _)| !in_scoped(at));
    uses.extend(outer_scoped.iter().map(|s| (s.start_byte, s.text(source))));
    let mut refs: HashMap<Option<usize>, BTreeSet<String>> = HashMap::new();
    let mut related: HashMap<Option<usize>, BTreeSet<String>> = HashMap::new();
    for &(at, text) in &uses {
        if text.len() == 1 || JAVA_LANG.contains(&text) || in_import(at) {
            continue;
        }
        let text = text.split_whitespace().collect::<String>();
        let owner = chunk_of(at);
        if text.starts_with(|c: char| c.is_ascii_uppercase())
            && let Some(symbol) = resolve(&text)
            && owner.is_none_or(|o| symbol != qualify(&defs[o].path))
        {
            related.entry(owner).or_default().insert(symbol);
        }
        refs.entry(owner).or_default().insert(text);
    }
    let mut chunks = ChunkSet::new(source);
    let id_of = |i: usize| {
        let d = &defs[i];
        let kind = match d.kind {
            DefKind::Type(k) => k,
            DefKind::Method => "method",
            DefKind::Constructor => "constructor",
        };
        format!("{kind}:{}", d.path)
    };

    // The module: the file with top-level type bodies elided.
    let package_name = package.clone().unwrap_or_default();
    let file_stem = path.rsplit('/').next().unwrap_or(path).trim_end_matches(".java");
    let top_types: Vec<&Def> = defs.iter().filter(|d| d.parent.is_none()).collect();
    let holes: Vec<(std::ops::Range<usize>, &str)> =
        top_types.iter().filter_map(|d| d.body.map(|b| (b.range(), "{ ... }"))).collect();
    let mut module = ChunkBuilder::new("module", if package_name.is_empty() { file_stem.to_string() } else { package_name.clone() })
        .id("module")
        .qualified_name(package.clone().unwrap_or_else(|| file_stem.to_string()))
        .span(lines.span(0, u32::try_from(source.len()).unwrap_or(u32::MAX)))
        .content(elide(source, 0..source.len(), &holes))
        .references(refs.remove(&None).unwrap_or_default())
        .related_all(imports.values().cloned())
        .related_all(related.remove(&None).unwrap_or_default())
        .meta_opt("package", package.clone())
        .meta_opt("imports", Some(import_list.clone()).filter(|l| !l.is_empty()))
        .meta_opt("types", Some(top_types.iter().map(|d| d.name.clone()).collect::<Vec<_>>()).filter(|l| !l.is_empty()));
    if let Some(p) = &package {
        module = module.signature(format!("package {p};"));
    }
    if tree.has_errors() {
        module = module.meta("syntax_errors", true);
    }
    chunks.push(module);

    for (i, def) in defs.iter().enumerate().filter(|(_, d)| !d.local) {
        let header_end = def.body.map_or(def.node.end_byte, |b| b.start_byte);
        let header = source.get(def.header_start as usize..header_end as usize).unwrap_or_default();
        let signature = one_line(header.trim_end_matches(';'));
        let parent = def.parent.map(id_of);
        let mut builder = ChunkBuilder::new(id_of(i).split(':').next().unwrap_or("class"), def.name.clone())
            .id(id_of(i))
            .qualified_name(qualify(&def.path))
            .parent(parent)
            .span(def.outer)
            .signature(signature)
            .docstring(def.docstring.clone())
            .references(refs.remove(&Some(i)).unwrap_or_default())
            .related_all(related.remove(&Some(i)).unwrap_or_default())
            .meta_opt("annotations", Some(def.annotations.clone()).filter(|l| !l.is_empty()))
            .meta_opt("modifiers", Some(def.modifiers.clone()).filter(|l| !l.is_empty()));
        if let DefKind::Type(_) = def.kind {
            // Skeleton: member bodies and nested type bodies elided.
            let holes: Vec<(std::ops::Range<usize>, &str)> = defs
                .iter()
                .enumerate()
                .filter(|&(j, d)| j != i && def.node.contains(&d.node) && !d.local)
                .filter_map(|(_, d)| d.body.map(|b| (b.range(), "{ ... }")))
                .collect();
            let members = |kind: DefKind| -> Vec<String> {
                let mut names: Vec<String> = Vec::new();
                for d in defs.iter().filter(|d| d.parent == Some(i) && d.kind == kind && !d.local) {
                    if !names.contains(&d.name) {
                        names.push(d.name.clone());
                    }
                }
                names
            };
            let nested: Vec<String> = defs
                .iter()
                .filter(|d| d.parent == Some(i) && matches!(d.kind, DefKind::Type(_)) && !d.local)
                .map(|d| d.name.clone())
                .collect();
            let nonempty = |v: Vec<String>| Some(v).filter(|l| !l.is_empty());
            builder = builder
                .content(elide(source, def.outer.range(), &holes))
                .related_all(def.extends.iter().chain(&def.implements).filter(|t| !JAVA_LANG.contains(&t.as_str())).filter_map(|t| resolve(t)))
                .meta_opt("extends", nonempty(def.extends.clone()))
                .meta_opt("implements", nonempty(def.implements.clone()))
                .meta_opt("fields", nonempty(def.fields.clone()))
                .meta_opt("constants", nonempty(def.constants.clone()))
                .meta_opt("components", nonempty(def.components.clone()))
                .meta_opt("elements", nonempty(def.elements.clone()))
                .meta_opt("methods", nonempty(members(DefKind::Method)))
                .meta_opt("nested_types", nonempty(nested));
        } else if def.body.is_none() {
            builder = builder.meta("abstract", true);
        }
        chunks.push(builder);
    }
    Ok(chunks.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_types() {
        assert_eq!(base_type("List<Order>"), "List");
        assert_eq!(base_type("Map.Entry<K, V>"), "Map.Entry");
        assert_eq!(base_type("byte[]"), "byte");
    }
}
