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
//!
//! Parsing is the host's (`syntax` import): the plugin asks for the tree's
//! named nodes once ([`Tree::nodes`](code_intel_plugin_sdk::Tree::nodes), all
//! kinds, so that every node's parent is its syntax parent), sorts out the
//! nodes it needs in one pass over that table (`Scan`, comparing kind and
//! field ids, each rule naming the query pattern it replaces), then
//! post-processes what it found; it must not bundle a parser.

use std::borrow::Cow;
use std::collections::BTreeSet;

use code_intel_plugin_sdk::text::{docblock, elide, one_line, qualified};
use code_intel_plugin_sdk::{
    ChunkBuilder, ChunkOutcome, ChunkSet, FieldId, KindId, LineIndex, NodeRef, NodeTable, Plugin, PluginError,
    PluginInfo, SourceFile, Span, export_plugin, parse,
};

/// The plugin type exported to the host.
pub struct Java;

/// A general language strategy, like `python` and `php`.
const PRIORITY: i32 = 10;

/// `java.lang` types, boxed primitives and common annotations: left out of
/// `references` and `related_symbols`, they would link everything to nothing.
fn is_java_lang(name: &str) -> bool {
    // A `match` on strings compiles to a switch on the length and a few
    // comparisons, not one comparison per entry.
    matches!(
        name,
        "Boolean" | "Byte" | "Character" | "Class" | "Comparable" | "Deprecated" | "Double" | "Enum" |
        "Error" | "Exception" | "Float" | "FunctionalInterface" | "Integer" | "Iterable" | "Long" | "Math" |
        "Number" | "Object" | "Override" | "Record" | "Runnable" | "RuntimeException" | "SafeVarargs" |
        "Short" | "String" | "StringBuilder" | "SuppressWarnings" | "System" | "Thread" | "Throwable" |
        "Void" | "var" | "IllegalArgumentException" | "IllegalStateException" |
        "UnsupportedOperationException" | "NullPointerException" | "CharSequence" | "AutoCloseable"
    )
}

/// Modifier keywords (annotations are listed apart).
fn is_modifier(name: &str) -> bool {
    // A `match` on strings compiles to a switch on the length and a few
    // comparisons, not one comparison per entry.
    matches!(
        name,
        "public" | "protected" | "private" | "static" | "final" | "abstract" | "default" | "synchronized" |
        "native" | "transient" | "volatile" | "strictfp" | "sealed" | "non-sealed"
    )
}

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

/// Kind and field ids of the node table the plugin looks at, looked up once
/// per file; `None` for a kind the file does not contain.
struct Kinds {
    package_declaration: Option<KindId>,
    identifier: Option<KindId>,
    scoped_identifier: Option<KindId>,
    import_declaration: Option<KindId>,
    class_declaration: Option<KindId>,
    interface_declaration: Option<KindId>,
    enum_declaration: Option<KindId>,
    record_declaration: Option<KindId>,
    annotation_type_declaration: Option<KindId>,
    method_declaration: Option<KindId>,
    constructor_declaration: Option<KindId>,
    compact_constructor_declaration: Option<KindId>,
    class_body: Option<KindId>,
    interface_body: Option<KindId>,
    enum_body: Option<KindId>,
    annotation_type_body: Option<KindId>,
    block: Option<KindId>,
    constructor_body: Option<KindId>,
    block_comment: Option<KindId>,
    modifiers: Option<KindId>,
    annotation: Option<KindId>,
    marker_annotation: Option<KindId>,
    field_declaration: Option<KindId>,
    constant_declaration: Option<KindId>,
    variable_declarator: Option<KindId>,
    enum_constant: Option<KindId>,
    formal_parameters: Option<KindId>,
    formal_parameter: Option<KindId>,
    annotation_type_element_declaration: Option<KindId>,
    superclass: Option<KindId>,
    super_interfaces: Option<KindId>,
    extends_interfaces: Option<KindId>,
    type_list: Option<KindId>,
    method_invocation: Option<KindId>,
    scoped_type_identifier: Option<KindId>,
    type_identifier: Option<KindId>,
    name: Option<FieldId>,
    body: Option<FieldId>,
    declarator: Option<FieldId>,
    parameters: Option<FieldId>,
}

impl Kinds {
    fn of(nodes: &NodeTable<'_>) -> Self {
        Self {
            package_declaration: nodes.kind_id("package_declaration"),
            identifier: nodes.kind_id("identifier"),
            scoped_identifier: nodes.kind_id("scoped_identifier"),
            import_declaration: nodes.kind_id("import_declaration"),
            class_declaration: nodes.kind_id("class_declaration"),
            interface_declaration: nodes.kind_id("interface_declaration"),
            enum_declaration: nodes.kind_id("enum_declaration"),
            record_declaration: nodes.kind_id("record_declaration"),
            annotation_type_declaration: nodes.kind_id("annotation_type_declaration"),
            method_declaration: nodes.kind_id("method_declaration"),
            constructor_declaration: nodes.kind_id("constructor_declaration"),
            compact_constructor_declaration: nodes.kind_id("compact_constructor_declaration"),
            class_body: nodes.kind_id("class_body"),
            interface_body: nodes.kind_id("interface_body"),
            enum_body: nodes.kind_id("enum_body"),
            annotation_type_body: nodes.kind_id("annotation_type_body"),
            block: nodes.kind_id("block"),
            constructor_body: nodes.kind_id("constructor_body"),
            block_comment: nodes.kind_id("block_comment"),
            modifiers: nodes.kind_id("modifiers"),
            annotation: nodes.kind_id("annotation"),
            marker_annotation: nodes.kind_id("marker_annotation"),
            field_declaration: nodes.kind_id("field_declaration"),
            constant_declaration: nodes.kind_id("constant_declaration"),
            variable_declarator: nodes.kind_id("variable_declarator"),
            enum_constant: nodes.kind_id("enum_constant"),
            formal_parameters: nodes.kind_id("formal_parameters"),
            formal_parameter: nodes.kind_id("formal_parameter"),
            annotation_type_element_declaration: nodes.kind_id("annotation_type_element_declaration"),
            superclass: nodes.kind_id("superclass"),
            super_interfaces: nodes.kind_id("super_interfaces"),
            extends_interfaces: nodes.kind_id("extends_interfaces"),
            type_list: nodes.kind_id("type_list"),
            method_invocation: nodes.kind_id("method_invocation"),
            scoped_type_identifier: nodes.kind_id("scoped_type_identifier"),
            type_identifier: nodes.kind_id("type_identifier"),
            name: nodes.field_id("name"),
            body: nodes.field_id("body"),
            declarator: nodes.field_id("declarator"),
            parameters: nodes.field_id("parameters"),
        }
    }

    /// The def kind of a declaration node and the kind its body must have.
    fn declaration(&self, kind: Option<KindId>) -> Option<(DefKind, Option<KindId>)> {
        if kind == self.class_declaration {
            Some((DefKind::Type("class"), self.class_body))
        } else if kind == self.method_declaration {
            Some((DefKind::Method, self.block))
        } else if kind == self.constructor_declaration {
            Some((DefKind::Constructor, self.constructor_body))
        } else if kind == self.interface_declaration {
            Some((DefKind::Type("interface"), self.interface_body))
        } else if kind == self.enum_declaration {
            Some((DefKind::Type("enum"), self.enum_body))
        } else if kind == self.record_declaration {
            Some((DefKind::Type("record"), self.class_body))
        } else if kind == self.annotation_type_declaration {
            Some((DefKind::Type("annotation_type"), self.annotation_type_body))
        } else if kind == self.compact_constructor_declaration {
            Some((DefKind::Constructor, self.block))
        } else {
            None
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

/// What a type declaration lists: fields, enum constants, record components,
/// annotation elements, supertypes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Field,
    Constant,
    Component,
    Element,
    Extends,
    Implements,
}

/// The nodes the plugin works on, sorted out in one pass over the table in
/// document order. Each rule stands for a pattern of the query the plugin
/// used before it read the node table.
#[derive(Default)]
struct Scan<'s> {
    /// `(package_declaration [(identifier) (scoped_identifier)] @package)`: the last one.
    package: Option<NodeRef<'s>>,
    imports: Vec<NodeRef<'s>>,
    /// Type, method and constructor declarations with their kind.
    decls: Vec<(NodeRef<'s>, DefKind, Option<KindId>)>,
    /// `/** */` comments.
    docs: Vec<Span>,
    /// (start, what, node)
    parts: Vec<(u32, Part, NodeRef<'s>)>,
    /// Annotation names, callees and type names: (start, text).
    uses: Vec<(u32, &'s str)>,
    /// Bodies of enum constants (anonymous classes): their methods stay in the enum.
    anonymous: Vec<Span>,
    /// `Order.Line`: one reference, not `Order` and `Line`.
    scoped: Vec<Span>,
}

impl<'s> Scan<'s> {
    fn of(nodes: &'s NodeTable<'s>, k: &Kinds) -> Self {
        let mut scan = Scan::default();
        for node in nodes.iter() {
            let kind = Some(node.kind_id());
            if kind == k.type_identifier {
                // `(type_identifier) @type_ref`
                scan.uses.push((node.start_byte(), node.text()));
            } else if kind == k.identifier {
                let Some(parent) = node.parent() else { continue };
                let field = node.field_id();
                if field.is_some() && field == k.name {
                    if parent.is(k.method_invocation) {
                        // `(method_invocation name: (identifier) @callee)`
                        scan.uses.push((node.start_byte(), node.text()));
                    } else if parent.is(k.variable_declarator) {
                        // `(field_declaration declarator: (variable_declarator name: (identifier) @field))`,
                        // the same in a `constant_declaration`.
                        if parent.field_id() == k.declarator
                            && parent.parent().is_some_and(|d| d.is(k.field_declaration) || d.is(k.constant_declaration))
                        {
                            scan.parts.push((node.start_byte(), Part::Field, node));
                        }
                    } else if parent.is(k.enum_constant) {
                        // `(enum_constant name: (identifier) @constant)`
                        scan.parts.push((node.start_byte(), Part::Constant, node));
                    } else if parent.is(k.formal_parameter) {
                        // `(record_declaration parameters: (formal_parameters (formal_parameter name: (identifier) @component)))`
                        if parent.parent().is_some_and(|p| {
                            p.is(k.formal_parameters) && fills(p, k.parameters, k.record_declaration)
                        }) {
                            scan.parts.push((node.start_byte(), Part::Component, node));
                        }
                    } else if parent.is(k.annotation_type_element_declaration) {
                        // `(annotation_type_element_declaration name: (identifier) @element)`
                        scan.parts.push((node.start_byte(), Part::Element, node));
                    }
                } else if parent.is(k.package_declaration) {
                    scan.package = Some(node);
                }
            } else if kind == k.scoped_type_identifier {
                // `(scoped_type_identifier) @scoped_ref`
                scan.scoped.push(Span::of(node));
            } else if kind == k.annotation || kind == k.marker_annotation {
                // `(modifiers [(annotation name: (_) @annotation.name) (marker_annotation name: (_) @annotation.name)] @annotation)`
                if node.parent().is_some_and(|p| p.is(k.modifiers))
                    && let Some(name) = child(node, k.name)
                {
                    scan.uses.push((name.start_byte(), name.text()));
                }
            } else if kind == k.block_comment {
                // `((block_comment) @doc (#match? @doc "^/[*][*]"))`
                if node.text().starts_with("/**") {
                    scan.docs.push(Span::of(node));
                }
            } else if kind == k.class_body {
                // `(enum_constant body: (class_body) @anonymous)`
                if fills(node, k.body, k.enum_constant) {
                    scan.anonymous.push(Span::of(node));
                }
            } else if kind == k.superclass {
                // `(superclass (_) @extends)`
                for ty in node.children() {
                    scan.parts.push((ty.start_byte(), Part::Extends, ty));
                }
            } else if kind == k.type_list {
                // `(super_interfaces (type_list (_) @implements))`, `(extends_interfaces (type_list (_) @extends))`
                let what = match node.parent() {
                    Some(p) if p.is(k.super_interfaces) => Part::Implements,
                    Some(p) if p.is(k.extends_interfaces) => Part::Extends,
                    _ => continue,
                };
                for ty in node.children() {
                    scan.parts.push((ty.start_byte(), what, ty));
                }
            } else if kind == k.import_declaration {
                // `(import_declaration) @import`
                scan.imports.push(node);
            } else if kind == k.scoped_identifier {
                if node.parent().is_some_and(|p| p.is(k.package_declaration)) {
                    scan.package = Some(node);
                }
            } else if let Some((def, body)) = k.declaration(kind) {
                scan.decls.push((node, def, body));
            }
        }
        scan
    }
}

#[allow(clippy::too_many_lines)]
fn chunk_file(path: &str, source: &str) -> Result<Vec<code_intel_plugin_sdk::Chunk>, PluginError> {
    let tree = parse("java", source)?;
    let nodes = tree.nodes(&[])?;
    let k = Kinds::of(&nodes);
    let scan = Scan::of(&nodes, &k);
    let lines = LineIndex::new(source);

    let package: Option<String> = scan.package.map(|p| one_line(p.text()));
    // Simple name -> imported name (a later import of a name overrides).
    let mut imports: Vec<(String, String)> = Vec::new();
    let mut import_list: Vec<String> = Vec::new();
    let mut import_spans: Vec<Span> = Vec::new();
    // With `import a.b.*;` an unknown name may come from anywhere.
    let mut wildcard = false;
    let mut defs: Vec<Def> = Vec::new();
    let mut docs = scan.docs;
    let mut uses = scan.uses;
    let anonymous = scan.anonymous;
    let mut scoped = scan.scoped;

    for &import in &scan.imports {
        let text = one_line(import.text().trim_start_matches("import").trim_end_matches(';'));
        let (is_static, target) = match text.strip_prefix("static ") {
            Some(rest) => (true, rest.trim().to_string()),
            None => (false, text.trim().to_string()),
        };
        if target.ends_with('*') {
            wildcard = true;
        } else {
            let simple = target.rsplit('.').next().unwrap_or(&target).to_string();
            if !is_static || simple.starts_with(|c: char| c.is_ascii_uppercase()) {
                match imports.iter_mut().find(|(s, _)| *s == simple) {
                    Some(entry) => entry.1.clone_from(&target),
                    None => imports.push((simple, target.clone())),
                }
            }
        }
        let listed = if is_static { format!("static {target}") } else { target };
        if !import_list.contains(&listed) {
            import_list.push(listed);
        }
        import_spans.push(Span::of(import));
    }
    for &(node, kind, body_kind) in &scan.decls {
        let Some(name) = child(node, k.name).filter(|n| n.is(k.identifier)) else { continue };
        let body = child(node, k.body).filter(|b| b.is(body_kind));
        // Only a method may lack its body.
        if body.is_none() && kind != DefKind::Method {
            continue;
        }
        let mut def = Def {
            kind,
            name: name.text().to_string(),
            node: Span::of(node),
            outer: Span::of(node),
            body: body.map(Span::of),
            docstring: None,
            path: String::new(),
            parent: None,
            local: false,
            annotations: Vec::new(),
            modifiers: Vec::new(),
            header_start: node.start_byte(),
            extends: Vec::new(),
            implements: Vec::new(),
            fields: Vec::new(),
            constants: Vec::new(),
            components: Vec::new(),
            elements: Vec::new(),
        };
        // Annotations and modifiers: a declaration's `modifiers` node is its first child.
        if let Some(mods) = node.children().next().filter(|m| m.is(k.modifiers) && m.start_byte() == node.start_byte()) {
            let (start, end, text) = (mods.start_byte(), mods.end_byte(), mods.text());
            let annotations = || {
                mods.children().filter(|a| (a.is(k.annotation) || a.is(k.marker_annotation)) && child(*a, k.name).is_some())
            };
            let mut header_start = start;
            for a in annotations() {
                def.annotations.push(one_line(a.text()));
                if a.start_byte() == header_start {
                    let a_end = a.end_byte();
                    let rest = &source[a_end as usize..end as usize];
                    header_start = a_end + u32::try_from(rest.len() - rest.trim_start().len()).unwrap_or(0);
                }
            }
            def.header_start = header_start;
            let mut plain = text.to_string();
            for a in annotations() {
                plain = plain.replacen(a.text(), " ", 1);
            }
            def.modifiers = plain.split_whitespace().filter(|w| is_modifier(w)).map(str::to_string).collect();
        }
        defs.push(def);
    }
    defs.sort_by_key(|d| (d.node.start_byte, std::cmp::Reverse(d.node.end_byte)));

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
            defs[i].path = [defs[p].path.as_str(), ".", &defs[i].name].concat();
        } else {
            defs[i].path = defs[i].name.clone();
        }
        stack.push(i);
    }

    // Fields, constants, components, elements, supertypes: to the innermost type.
    for &(at, what, node) in &scan.parts {
        let Some(i) = owner_of(&defs, at) else { continue };
        if !matches!(defs[i].kind, DefKind::Type(_)) {
            continue;
        }
        let text = match what {
            Part::Extends | Part::Implements => base_type(node.text()),
            _ => node.text().to_string(),
        };
        let list = match what {
            Part::Field => &mut defs[i].fields,
            Part::Constant => &mut defs[i].constants,
            Part::Component => &mut defs[i].components,
            Part::Element => &mut defs[i].elements,
            Part::Extends => &mut defs[i].extends,
            Part::Implements => &mut defs[i].implements,
        };
        if !list.contains(&text) {
            list.push(text);
        }
    }

    let qualify = |path: &str| qualified(package.as_deref().unwrap_or(""), ".", path);
    // Qualified names of the defs, computed once.
    let qualified: Vec<String> = defs.iter().map(|d| qualify(&d.path)).collect();
    let resolve = |name: &str| -> Option<String> {
        let first = name.split('.').next().unwrap_or(name);
        if let Some((_, target)) = imports.iter().find(|(simple, _)| simple == first) {
            return Some(match name.split_once('.') {
                Some((_, rest)) => [target.as_str(), ".", rest].concat(),
                None => target.clone(),
            });
        }
        // Type names of this file, by simple name (nested types too; the
        // last one of a name).
        if let Some(i) =
            defs.iter().rposition(|d| matches!(d.kind, DefKind::Type(_)) && !d.local && d.name == name)
        {
            return Some(qualified[i].clone());
        }
        if name.contains('.') {
            return Some(name.to_string());
        }
        if wildcard {
            return None;
        }
        package.as_ref().map(|p| [p.as_str(), ".", name].concat())
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
    // Index 0 is the module, `i + 1` def `i`.
    let mut refs: Vec<BTreeSet<Cow<'_, str>>> = vec![BTreeSet::new(); defs.len() + 1];
    let mut related: Vec<BTreeSet<String>> = vec![BTreeSet::new(); defs.len() + 1];
    for &(at, text) in &uses {
        if text.len() == 1 || is_java_lang(text) || in_import(at) {
            continue;
        }
        let text: Cow<'_, str> = if text.contains(char::is_whitespace) {
            Cow::Owned(text.split_whitespace().collect::<String>())
        } else {
            Cow::Borrowed(text)
        };
        let owner = chunk_of(at);
        if text.starts_with(|c: char| c.is_ascii_uppercase())
            && let Some(symbol) = resolve(&text)
            && owner.is_none_or(|o| symbol != qualified[o])
        {
            related[owner.map_or(0, |o| o + 1)].insert(symbol);
        }
        refs[owner.map_or(0, |o| o + 1)].insert(text);
    }
    let mut chunks = ChunkSet::new(source);
    let id_of = |i: usize| {
        let d = &defs[i];
        let kind = match d.kind {
            DefKind::Type(k) => k,
            DefKind::Method => "method",
            DefKind::Constructor => "constructor",
        };
        [kind, ":", &d.path].concat()
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
        .references(std::mem::take(&mut refs[0]))
        .related_all(imports.iter().map(|(_, target)| target.clone()))
        .related_all(std::mem::take(&mut related[0]))
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
            .references(std::mem::take(&mut refs[i + 1]))
            .related_all(std::mem::take(&mut related[i + 1]))
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
                .related_all(def.extends.iter().chain(&def.implements).filter(|t| !is_java_lang(t.as_str())).filter_map(|t| resolve(t)))
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
