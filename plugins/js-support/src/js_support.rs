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
//!
//! Parsing is the host's (`syntax` import): the strategy asks for the tree's
//! named nodes once ([`Tree::nodes`], all kinds, so that every node's parent
//! is its syntax parent), sorts out the nodes it needs in one pass over that
//! table (`Scan`: one lookup of each node's role by kind, then kind and field
//! ids looked up once per file, each rule naming the query pattern it
//! replaces), then post-processes what it found; it must not bundle a parser.

use std::collections::{BTreeMap, BTreeSet};

use code_intel_plugin_sdk::text::{docblock, elide, one_line, qualified};
use code_intel_plugin_sdk::{
    Chunk, ChunkBuilder, ChunkSet, FieldId, KindId, LineIndex, NodeRef, NodeTable, PluginError, Span, SpanSet, Tree,
    parse,
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

/// Kind and field ids of the node table the strategy looks at, looked up
/// once per file; `None` for a kind the file does not contain (or its
/// grammar lacks).
struct Kinds {
    error: Option<KindId>,
    identifier: Option<KindId>,
    property_identifier: Option<KindId>,
    type_identifier: Option<KindId>,
    statement_block: Option<KindId>,
    class_body: Option<KindId>,
    interface_body: Option<KindId>,
    enum_body: Option<KindId>,
    function_declaration: Option<KindId>,
    generator_function_declaration: Option<KindId>,
    lexical_declaration: Option<KindId>,
    variable_declaration: Option<KindId>,
    variable_declarator: Option<KindId>,
    arrow_function: Option<KindId>,
    function_expression: Option<KindId>,
    generator_function: Option<KindId>,
    expression_statement: Option<KindId>,
    assignment_expression: Option<KindId>,
    member_expression: Option<KindId>,
    class_declaration: Option<KindId>,
    abstract_class_declaration: Option<KindId>,
    method_definition: Option<KindId>,
    field_definition: Option<KindId>,
    public_field_definition: Option<KindId>,
    interface_declaration: Option<KindId>,
    type_alias_declaration: Option<KindId>,
    enum_declaration: Option<KindId>,
    internal_module: Option<KindId>,
    function_signature: Option<KindId>,
    export_statement: Option<KindId>,
    export_specifier: Option<KindId>,
    comment: Option<KindId>,
    decorator: Option<KindId>,
    import_statement: Option<KindId>,
    import_clause: Option<KindId>,
    namespace_import: Option<KindId>,
    named_imports: Option<KindId>,
    import_specifier: Option<KindId>,
    string: Option<KindId>,
    string_fragment: Option<KindId>,
    call_expression: Option<KindId>,
    arguments: Option<KindId>,
    object_pattern: Option<KindId>,
    shorthand_property_identifier_pattern: Option<KindId>,
    new_expression: Option<KindId>,
    class_heritage: Option<KindId>,
    extends_clause: Option<KindId>,
    implements_clause: Option<KindId>,
    extends_type_clause: Option<KindId>,
    jsx_opening_element: Option<KindId>,
    jsx_self_closing_element: Option<KindId>,
    name: Option<FieldId>,
    body: Option<FieldId>,
    value: Option<FieldId>,
    left: Option<FieldId>,
    right: Option<FieldId>,
    object: Option<FieldId>,
    property: Option<FieldId>,
    source: Option<FieldId>,
    alias: Option<FieldId>,
    function: Option<FieldId>,
    arguments_field: Option<FieldId>,
    constructor: Option<FieldId>,
}

impl Kinds {
    fn of(nodes: &NodeTable<'_>) -> Self {
        Self {
            error: nodes.kind_id("ERROR"),
            identifier: nodes.kind_id("identifier"),
            property_identifier: nodes.kind_id("property_identifier"),
            type_identifier: nodes.kind_id("type_identifier"),
            statement_block: nodes.kind_id("statement_block"),
            class_body: nodes.kind_id("class_body"),
            interface_body: nodes.kind_id("interface_body"),
            enum_body: nodes.kind_id("enum_body"),
            function_declaration: nodes.kind_id("function_declaration"),
            generator_function_declaration: nodes.kind_id("generator_function_declaration"),
            lexical_declaration: nodes.kind_id("lexical_declaration"),
            variable_declaration: nodes.kind_id("variable_declaration"),
            variable_declarator: nodes.kind_id("variable_declarator"),
            arrow_function: nodes.kind_id("arrow_function"),
            function_expression: nodes.kind_id("function_expression"),
            generator_function: nodes.kind_id("generator_function"),
            expression_statement: nodes.kind_id("expression_statement"),
            assignment_expression: nodes.kind_id("assignment_expression"),
            member_expression: nodes.kind_id("member_expression"),
            class_declaration: nodes.kind_id("class_declaration"),
            abstract_class_declaration: nodes.kind_id("abstract_class_declaration"),
            method_definition: nodes.kind_id("method_definition"),
            field_definition: nodes.kind_id("field_definition"),
            public_field_definition: nodes.kind_id("public_field_definition"),
            interface_declaration: nodes.kind_id("interface_declaration"),
            type_alias_declaration: nodes.kind_id("type_alias_declaration"),
            enum_declaration: nodes.kind_id("enum_declaration"),
            internal_module: nodes.kind_id("internal_module"),
            function_signature: nodes.kind_id("function_signature"),
            export_statement: nodes.kind_id("export_statement"),
            export_specifier: nodes.kind_id("export_specifier"),
            comment: nodes.kind_id("comment"),
            decorator: nodes.kind_id("decorator"),
            import_statement: nodes.kind_id("import_statement"),
            import_clause: nodes.kind_id("import_clause"),
            namespace_import: nodes.kind_id("namespace_import"),
            named_imports: nodes.kind_id("named_imports"),
            import_specifier: nodes.kind_id("import_specifier"),
            string: nodes.kind_id("string"),
            string_fragment: nodes.kind_id("string_fragment"),
            call_expression: nodes.kind_id("call_expression"),
            arguments: nodes.kind_id("arguments"),
            object_pattern: nodes.kind_id("object_pattern"),
            shorthand_property_identifier_pattern: nodes.kind_id("shorthand_property_identifier_pattern"),
            new_expression: nodes.kind_id("new_expression"),
            class_heritage: nodes.kind_id("class_heritage"),
            extends_clause: nodes.kind_id("extends_clause"),
            implements_clause: nodes.kind_id("implements_clause"),
            extends_type_clause: nodes.kind_id("extends_type_clause"),
            jsx_opening_element: nodes.kind_id("jsx_opening_element"),
            jsx_self_closing_element: nodes.kind_id("jsx_self_closing_element"),
            name: nodes.field_id("name"),
            body: nodes.field_id("body"),
            value: nodes.field_id("value"),
            left: nodes.field_id("left"),
            right: nodes.field_id("right"),
            object: nodes.field_id("object"),
            property: nodes.field_id("property"),
            source: nodes.field_id("source"),
            alias: nodes.field_id("alias"),
            function: nodes.field_id("function"),
            arguments_field: nodes.field_id("arguments"),
            constructor: nodes.field_id("constructor"),
        }
    }

    /// A query's `(_)`: any named node but an `ERROR`.
    fn wild(&self, node: NodeRef<'_>) -> bool {
        !node.is(self.error)
    }

    /// The first child filling `field` (a query's `field: (...)`).
    fn child<'a>(&self, node: NodeRef<'a>, field: Option<FieldId>) -> Option<NodeRef<'a>> {
        node.child_by(field?)
    }

    /// Every child filling `field`.
    fn children<'a>(&self, node: NodeRef<'a>, field: Option<FieldId>) -> impl Iterator<Item = NodeRef<'a>> + 'a {
        node.children().filter(move |c| field.is_some() && c.field_id() == field)
    }

    /// True when `node` fills `field` of a parent of kind `parent`.
    fn fills(&self, node: NodeRef<'_>, field: Option<FieldId>, parent: Option<KindId>) -> bool {
        field.is_some() && node.field_id() == field && node.parent().is_some_and(|p| p.is(parent))
    }

    /// `body: (_)` of a function value (`value: [(arrow_function body: (_)) (function_expression body: (_)) ...]`),
    /// generator functions too when `generators`.
    fn function_body<'a>(&self, value: NodeRef<'a>, generators: bool) -> Option<NodeRef<'a>> {
        if !(value.is(self.arrow_function) || value.is(self.function_expression) || (generators && value.is(self.generator_function))) {
            return None;
        }
        self.child(value, self.body).filter(|b| self.wild(*b))
    }

    /// The `string_fragment`s of a `(string (string_fragment) @source)`:
    /// one match per fragment.
    fn fragments<'a>(&self, string: Option<NodeRef<'a>>) -> impl Iterator<Item = NodeRef<'a>> + 'a {
        let fragment = self.string_fragment;
        string.filter(|s| s.is(self.string)).into_iter().flat_map(move |s| s.children().filter(move |c| c.is(fragment)))
    }
}

/// What the scan does with a node of a kind: one lookup per node in a
/// table indexed by kind ([`KindId::index`]) instead of comparing ids.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Other,
    Identifier,
    PropertyIdentifier,
    TypeIdentifier,
    Comment,
    Decorator,
    VariableDeclarator,
    Import,
    Export,
    ExportSpecifier,
    JsxElement,
    ClassHeritage,
    ExtendsTypeClause,
    /// A kind some definition pattern starts at.
    Definition,
}

/// The role of every kind of the table, for `g`.
fn roles(nodes: &NodeTable<'_>, k: &Kinds, g: Grammar) -> Vec<Role> {
    let mut roles = vec![Role::Other; nodes.kind_count()];
    let mut set = |kind: Option<KindId>, role: Role| {
        if let Some(slot) = kind.and_then(|kind| roles.get_mut(kind.index())) {
            *slot = role;
        }
    };
    let definitions = [
        k.function_declaration,
        k.generator_function_declaration,
        k.lexical_declaration,
        k.variable_declaration,
        k.expression_statement,
        k.class_declaration,
        k.method_definition,
    ];
    for kind in definitions {
        set(kind, Role::Definition);
    }
    if g.ts {
        let definitions = [
            k.abstract_class_declaration,
            k.public_field_definition,
            k.interface_declaration,
            k.type_alias_declaration,
            k.enum_declaration,
            k.internal_module,
            k.function_signature,
        ];
        for kind in definitions {
            set(kind, Role::Definition);
        }
        set(k.type_identifier, Role::TypeIdentifier);
        set(k.extends_type_clause, Role::ExtendsTypeClause);
    } else {
        set(k.field_definition, Role::Definition);
    }
    if g.jsx {
        set(k.jsx_opening_element, Role::JsxElement);
        set(k.jsx_self_closing_element, Role::JsxElement);
    }
    set(k.identifier, Role::Identifier);
    set(k.property_identifier, Role::PropertyIdentifier);
    set(k.comment, Role::Comment);
    set(k.decorator, Role::Decorator);
    set(k.variable_declarator, Role::VariableDeclarator);
    set(k.import_statement, Role::Import);
    set(k.export_statement, Role::Export);
    set(k.export_specifier, Role::ExportSpecifier);
    set(k.class_heritage, Role::ClassHeritage);
    roles
}

/// Which grammar the patterns are for.
#[derive(Clone, Copy)]
struct Grammar {
    /// `typescript` or `tsx`.
    ts: bool,
    /// `javascript` or `tsx`.
    jsx: bool,
}

impl Grammar {
    fn of(language: &str) -> Self {
        match language {
            "typescript" => Self { ts: true, jsx: false },
            "tsx" => Self { ts: true, jsx: true },
            _ => Self { ts: false, jsx: true },
        }
    }
}

/// A definition as matched: the node, its name and body.
struct Found<'s> {
    kind: DefKind,
    node: NodeRef<'s>,
    name: NodeRef<'s>,
    body: Option<NodeRef<'s>>,
    /// `exports.name = function` / `module.exports.name = () => ...`.
    commonjs: bool,
}

/// One import (or re-export) match: the source and what it binds.
struct ImportMatch<'s> {
    /// The statement (or `require` declarator); `None` for a re-export.
    at: Option<Span>,
    source: &'s str,
    /// A default or namespace import (or a plain `require`).
    local: Option<&'s str>,
    /// A named import (or destructured `require`).
    name: Option<&'s str>,
    alias: Option<&'s str>,
}

/// The nodes the strategy works on, sorted out in one pass over the table in
/// document order. Each rule names the query pattern it stands for (the
/// strategy matched one query before it read the node table).
struct Scan<'s> {
    defs: Vec<Found<'s>>,
    /// `(export_statement) @export`
    exports: Vec<Span>,
    /// `(comment) @comment` and `(decorator) @decorator`: (span, is a comment).
    trivia: Vec<(Span, bool)>,
    first_comment: Option<NodeRef<'s>>,
    /// Heritage: (start, text, is `implements`).
    extends: Vec<(u32, &'s str, bool)>,
    /// Class fields: (owner start, owner end, name).
    fields: Vec<(u32, u32, &'s str)>,
    /// Starts of JSX element names that start with a letter.
    jsx_at: Vec<u32>,
    /// `export { name }` (false) and `export default name` (true).
    named_exports: Vec<(&'s str, bool)>,
    imports: Vec<ImportMatch<'s>>,
    /// Identifier uses: (start, text, is a callee).
    uses: Vec<(u32, &'s str, bool)>,
    /// Starts of `(variable_declarator name: (identifier) @binding)`, ascending.
    bindings: Vec<u32>,
}

impl<'s> Scan<'s> {
    #[allow(clippy::too_many_lines, clippy::cognitive_complexity)]
    fn of(nodes: &'s NodeTable<'s>, k: &Kinds, g: Grammar) -> Self {
        let mut scan = Scan {
            defs: Vec::new(),
            exports: Vec::new(),
            trivia: Vec::new(),
            first_comment: None,
            extends: Vec::new(),
            fields: Vec::new(),
            jsx_at: Vec::new(),
            named_exports: Vec::new(),
            imports: Vec::new(),
            uses: Vec::new(),
            bindings: Vec::new(),
        };
        let roles = roles(nodes, k, g);
        for node in nodes.iter() {
            match roles.get(node.kind_id().index()).copied().unwrap_or(Role::Other) {
                Role::Other => {}
                Role::Identifier => {
                    let parent = node.parent();
                    let parent_is = |p: Option<KindId>| parent.is_some_and(|n| n.is(p));
                    let field = node.field_id();
                    let has = |f: Option<FieldId>| f.is_some() && field == f;
                    // `(call_expression function: (identifier) @callee)`
                    let callee = has(k.function) && parent_is(k.call_expression);
                    // `(new_expression constructor: (identifier) @id)`, `((identifier) @id (#match? @id "^[A-Z]"))`,
                    // `(member_expression object: (identifier) @id)`, `(arguments (identifier) @id)`
                    let text = node.text();
                    let id = (has(k.constructor) && parent_is(k.new_expression))
                        || text.as_bytes().first().is_some_and(u8::is_ascii_uppercase)
                        || (has(k.object) && parent_is(k.member_expression))
                        || parent_is(k.arguments);
                    if callee || id {
                        scan.uses.push((node.start_byte(), text, callee));
                    }
                    // `(variable_declarator name: (identifier) @binding)`
                    if has(k.name) && parent_is(k.variable_declarator) {
                        scan.bindings.push(node.start_byte());
                    }
                }
                Role::PropertyIdentifier => {
                    // `(call_expression function: (member_expression property: (property_identifier) @callee))`
                    if k.fills(node, k.property, k.member_expression)
                        && node.parent().is_some_and(|m| k.fills(m, k.function, k.call_expression))
                    {
                        scan.uses.push((node.start_byte(), node.text(), true));
                    }
                }
                // `(type_identifier) @type`
                Role::TypeIdentifier => scan.uses.push((node.start_byte(), node.text(), false)),
                Role::Comment => {
                    scan.trivia.push((Span::of(node), true));
                    if scan.first_comment.is_none() {
                        scan.first_comment = Some(node);
                    }
                }
                Role::Decorator => scan.trivia.push((Span::of(node), false)),
                Role::VariableDeclarator => scan.require(node, k),
                Role::Import => scan.import(node, k),
                Role::Export => {
                    scan.exports.push(Span::of(node));
                    // `(export_statement value: (identifier) @export.default)`
                    for value in k.children(node, k.value).filter(|v| v.is(k.identifier)) {
                        scan.named_exports.push((value.text(), true));
                    }
                    // `(export_statement source: (string (string_fragment) @reexport.source))`
                    for source in k.children(node, k.source) {
                        for fragment in k.fragments(Some(source)) {
                            scan.imports.push(ImportMatch { at: None, source: fragment.text(), local: None, name: None, alias: None });
                        }
                    }
                }
                Role::ExportSpecifier => {
                    // `(export_specifier name: (_) @export.name)`
                    for name in k.children(node, k.name).filter(|n| k.wild(*n)) {
                        scan.named_exports.push((name.text(), false));
                    }
                }
                Role::JsxElement => {
                    // `(jsx_opening_element name: (_) @jsx)`, `(jsx_self_closing_element name: (_) @jsx)`
                    for name in k.children(node, k.name).filter(|n| k.wild(*n)) {
                        let text = name.text();
                        scan.uses.push((name.start_byte(), text, false));
                        if text.starts_with(|c: char| c.is_ascii_alphabetic()) {
                            scan.jsx_at.push(name.start_byte());
                        }
                    }
                }
                Role::ClassHeritage => {
                    if g.ts {
                        for clause in node.children() {
                            if clause.is(k.extends_clause) {
                                // `(class_heritage (extends_clause value: (_) @extends))`
                                for value in k.children(clause, k.value).filter(|v| k.wild(*v)) {
                                    scan.extends.push((value.start_byte(), value.text(), false));
                                }
                            } else if clause.is(k.implements_clause) {
                                // `(class_heritage (implements_clause (_) @implements))`
                                for ty in clause.children().filter(|t| k.wild(*t)) {
                                    scan.extends.push((ty.start_byte(), ty.text(), true));
                                }
                            }
                        }
                    } else {
                        // `(class_heritage (_) @extends)`
                        for base in node.children().filter(|b| k.wild(*b)) {
                            scan.extends.push((base.start_byte(), base.text(), false));
                        }
                    }
                }
                // `(extends_type_clause (_) @extends)`
                Role::ExtendsTypeClause => {
                    for base in node.children().filter(|b| k.wild(*b)) {
                        scan.extends.push((base.start_byte(), base.text(), false));
                    }
                }
                Role::Definition => {
                    if let Some(found) = scan.definition(node, k, g) {
                        scan.defs.push(found);
                    }
                }
            }
        }
        scan
    }

    /// The definition patterns (`@def` with `@name` and `@body`), and class
    /// fields (`(field_definition property: (_) @field) @owner`).
    fn definition(&mut self, node: NodeRef<'s>, k: &Kinds, g: Grammar) -> Option<Found<'s>> {
        let kind = Some(node.kind_id());
        let found = |kind: DefKind, name: NodeRef<'s>, body: Option<NodeRef<'s>>| Found { kind, node, name, body, commonjs: false };
        let named = |field: Option<FieldId>| k.child(node, field).filter(|n| k.wild(*n));
        let body_of = |of: Option<KindId>| k.child(node, k.body).filter(|b| b.is(of));
        if kind == k.function_declaration || kind == k.generator_function_declaration {
            // `(function_declaration name: (identifier) @name body: (statement_block) @body) @def`
            let name = k.child(node, k.name).filter(|n| n.is(k.identifier))?;
            Some(found(DefKind::Function, name, Some(body_of(k.statement_block)?)))
        } else if kind == k.lexical_declaration || kind == k.variable_declaration {
            // `(lexical_declaration . (variable_declarator name: (identifier) @name value: [(arrow_function body: (_) @body) ...]) .) @def`:
            // the declarator is the only named child (a comment counts).
            let mut children = node.children();
            let (Some(declarator), None) = (children.next(), children.next()) else { return None };
            if !declarator.is(k.variable_declarator) {
                return None;
            }
            let name = k.child(declarator, k.name).filter(|n| n.is(k.identifier))?;
            let body = k.function_body(k.child(declarator, k.value)?, true)?;
            Some(found(DefKind::Function, name, Some(body)))
        } else if kind == k.expression_statement {
            // `(expression_statement (assignment_expression left: (member_expression object: [(identifier) @exports
            // (member_expression object: (identifier) @exports property: (property_identifier) @exports)]
            // property: (property_identifier) @name) right: [(arrow_function body: (_) @body) (function_expression body: (_) @body)])
            // (#any-of? @exports "exports" "module")) @def`
            let exports = |n: NodeRef<'_>| matches!(n.text(), "exports" | "module");
            for assignment in node.children().filter(|c| c.is(k.assignment_expression)) {
                let Some(left) = k.child(assignment, k.left).filter(|l| l.is(k.member_expression)) else { continue };
                let Some(object) = k.child(left, k.object) else { continue };
                let object_ok = if object.is(k.identifier) {
                    exports(object)
                } else if object.is(k.member_expression) {
                    match (
                        k.child(object, k.object).filter(|o| o.is(k.identifier)),
                        k.child(object, k.property).filter(|p| p.is(k.property_identifier)),
                    ) {
                        (Some(o), Some(p)) => exports(o) && exports(p),
                        _ => false,
                    }
                } else {
                    false
                };
                if !object_ok {
                    continue;
                }
                let Some(name) = k.child(left, k.property).filter(|p| p.is(k.property_identifier)) else { continue };
                let Some(body) = k.child(assignment, k.right).and_then(|r| k.function_body(r, false)) else { continue };
                return Some(Found { kind: DefKind::Function, node, name, body: Some(body), commonjs: true });
            }
            None
        } else if kind == k.class_declaration || (g.ts && kind == k.abstract_class_declaration) {
            // `(class_declaration name: (_) @name body: (class_body) @body) @def`
            Some(found(DefKind::Class, named(k.name)?, Some(body_of(k.class_body)?)))
        } else if kind == k.method_definition {
            // `(method_definition name: (_) @name body: (statement_block) @body) @def`
            Some(found(DefKind::Method, named(k.name)?, Some(body_of(k.statement_block)?)))
        } else if (!g.ts && kind == k.field_definition) || (g.ts && kind == k.public_field_definition) {
            // `(field_definition property: (_) @field) @owner` (JavaScript),
            // `(public_field_definition name: (_) @field) @owner` (TypeScript)
            let field = if g.ts { k.name } else { k.property };
            for name in k.children(node, field).filter(|n| k.wild(*n)) {
                self.fields.push((node.start_byte(), node.end_byte(), name.text()));
            }
            // `(field_definition property: (_) @name value: [(arrow_function body: (_) @body) (function_expression body: (_) @body)]) @def`
            let name = named(field)?;
            let body = k.function_body(k.child(node, k.value)?, false)?;
            Some(found(DefKind::Method, name, Some(body)))
        } else if !g.ts {
            None
        } else if kind == k.interface_declaration {
            Some(found(DefKind::Interface, named(k.name)?, Some(body_of(k.interface_body)?)))
        } else if kind == k.type_alias_declaration {
            // `(type_alias_declaration name: (_) @name value: (_) @body) @def`
            Some(found(DefKind::TypeAlias, named(k.name)?, Some(named(k.value)?)))
        } else if kind == k.enum_declaration {
            Some(found(DefKind::Enum, named(k.name)?, Some(body_of(k.enum_body)?)))
        } else if kind == k.internal_module {
            Some(found(DefKind::Namespace, named(k.name)?, Some(body_of(k.statement_block)?)))
        } else if kind == k.function_signature {
            // `(function_signature name: (identifier) @name) @def`
            let name = k.child(node, k.name).filter(|n| n.is(k.identifier))?;
            Some(found(DefKind::Function, name, None))
        } else {
            None
        }
    }

    /// `import` statements, in the order the query's patterns matched: per
    /// source fragment, the default, namespace, named and bare imports.
    fn import(&mut self, node: NodeRef<'s>, k: &Kinds) {
        let at = Some(Span::of(node));
        let source = k.child(node, k.source);
        let clause = node.children().find(|c| c.is(k.import_clause));
        // `(import_statement . source: ...)`: the source is the first named child.
        let bare = source.is_some() && node.children().next() == source;
        for fragment in k.fragments(source) {
            let push = |imports: &mut Vec<ImportMatch<'s>>, local, name, alias| {
                imports.push(ImportMatch { at, source: fragment.text(), local, name, alias });
            };
            if let Some(clause) = clause {
                // `(import_statement (import_clause (identifier) @import.default) source: ...)`
                for local in clause.children().filter(|c| c.is(k.identifier)) {
                    push(&mut self.imports, Some(local.text()), None, None);
                }
                // `(import_clause (namespace_import (identifier) @import.namespace))`
                for ns in clause.children().filter(|c| c.is(k.namespace_import)) {
                    for local in ns.children().filter(|c| c.is(k.identifier)) {
                        push(&mut self.imports, Some(local.text()), None, None);
                    }
                }
                // `(import_clause (named_imports (import_specifier name: (_) @import.name alias: (identifier)? @import.alias)))`
                for list in clause.children().filter(|c| c.is(k.named_imports)) {
                    for spec in list.children().filter(|c| c.is(k.import_specifier)) {
                        let alias = k.child(spec, k.alias).filter(|a| a.is(k.identifier)).map(NodeRef::text);
                        for name in k.children(spec, k.name).filter(|n| k.wild(*n)) {
                            push(&mut self.imports, None, Some(name.text()), alias);
                        }
                    }
                }
            }
            if bare {
                push(&mut self.imports, None, None, None);
            }
        }
    }

    /// `const x = require('...')` and `const { a, b } = require('...')`.
    fn require(&mut self, node: NodeRef<'s>, k: &Kinds) {
        let Some(name) = k.child(node, k.name) else { return };
        let is_identifier = name.is(k.identifier);
        if !is_identifier && !name.is(k.object_pattern) {
            return;
        }
        let Some(call) = k.child(node, k.value).filter(|v| v.is(k.call_expression)) else { return };
        if !k.child(call, k.function).is_some_and(|f| f.is(k.identifier) && f.text() == "require") {
            return;
        }
        // `arguments: (arguments . (string (string_fragment) @import.source))`
        let first = k.child(call, k.arguments_field).filter(|a| a.is(k.arguments)).and_then(|a| a.children().next());
        let at = Some(Span::of(node));
        for fragment in k.fragments(first) {
            let source = fragment.text();
            if is_identifier {
                // `(variable_declarator name: (identifier) @import.namespace value: (call_expression ...)) @import`
                self.imports.push(ImportMatch { at, source, local: Some(name.text()), name: None, alias: None });
            } else {
                // `(variable_declarator name: (object_pattern (shorthand_property_identifier_pattern) @import.name) ...) @import`
                for short in name.children().filter(|c| c.is(k.shorthand_property_identifier_pattern)) {
                    self.imports.push(ImportMatch { at, source, local: None, name: Some(short.text()), alias: None });
                }
            }
        }
    }
}

/// Globals and builtin types left out of `references`.
fn is_builtin(name: &str) -> bool {
    // A `match` on strings compiles to a switch on the length and a few
    // comparisons, not one comparison per entry.
    matches!(
        name,
        "Array" | "ArrayBuffer" | "Boolean" | "Date" | "Error" | "JSON" | "Map" | "Math" | "Number" |
        "Object" | "Promise" | "Proxy" | "Reflect" | "RegExp" | "Set" | "String" | "Symbol" | "TypeError" |
        "RangeError" | "WeakMap" | "WeakSet" | "Record" | "Partial" | "Required" | "Readonly" | "Pick" |
        "Omit" | "Exclude" | "Extract" | "NonNullable" | "ReturnType" | "Parameters" | "InstanceType" |
        "Awaited" | "Uppercase" | "Lowercase" | "console" | "window" | "document" | "globalThis" |
        "process" | "require" | "module" | "exports" | "undefined" | "NaN" | "Infinity" | "parseInt" |
        "parseFloat" | "setTimeout" | "clearTimeout" | "setInterval" | "clearInterval" | "fetch" | "this" |
        "super" | "push" | "map" | "filter" | "reduce" | "forEach" | "then" | "catch" | "log" | "join" |
        "slice" | "includes" | "find" | "keys" | "values" | "entries" | "toString" | "length"
    )
}

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
/// When the host cannot parse the source or list its nodes.
pub fn chunk_script(language: &str, path: &str, source: &str) -> Result<Vec<Chunk>, PluginError> {
    let tree = parse(language, source)?;
    let mut chunks = ChunkSet::new(source);
    let lines = LineIndex::new(source);
    push_script_chunks(&mut chunks, &tree, language, path, source, 0..source.len(), &lines, &module_path(path), None)?;
    Ok(chunks.finish())
}

/// What a script makes of itself, pushed into `chunks`. The script is
/// `source[script]` (the whole file, or a Vue `<script>` block parsed with
/// [`code_intel_plugin_sdk::parse_embedded`]); `tree` reports positions in
/// `source`, and spans come from `lines`, which index `source`. `parent`
/// becomes the parent of the module chunk (a Vue `script` block).
///
/// # Errors
/// When the host cannot list the tree's nodes.
#[allow(clippy::too_many_arguments, clippy::too_many_lines)]
pub fn push_script_chunks(
    chunks: &mut ChunkSet<'_>,
    tree: &Tree,
    language: &str,
    path: &str,
    source: &str,
    script: std::ops::Range<usize>,
    lines: &LineIndex,
    module: &str,
    parent: Option<(String, String)>,
) -> Result<(), PluginError> {
    let nodes = tree.nodes(&[])?;
    let k = Kinds::of(&nodes);
    let scan = Scan::of(&nodes, &k, Grammar::of(language));
    let Scan { defs: found, exports, trivia, first_comment, extends, fields, jsx_at, named_exports, imports: import_matches, uses, bindings } = scan;
    let mut defs = collect_defs(found, &exports, trivia, extends, fields, jsx_at, source, lines);
    let file_doc = file_doc(first_comment, &defs, source, script.start);
    let imports = collect_imports(import_matches, path);
    mark_exports(&named_exports, &mut defs);

    let top: Vec<usize> = (0..defs.len()).filter(|&i| defs[i].parent.is_none()).collect();
    let top_names: BTreeSet<&str> = top.iter().map(|&i| defs[i].name.as_str()).collect();
    let uses = collect_uses(uses, bindings, &defs, &imports, &top_names);
    let resolve = |name: &str| -> Option<String> {
        if let Some(target) = imports.bindings.get(name) {
            return Some(target.clone());
        }
        top_names.contains(name).then(|| qualified(module, ".", name))
    };

    // The module summary.
    let (module_id, module_kind, module_name, module_parent, module_span) = match &parent {
        Some((block_id, _)) => {
            // The block without the whitespace around it.
            let text = &source[script.clone()];
            let start = u32::try_from(script.start + text.len() - text.trim_start().len()).unwrap_or(0);
            let end = u32::try_from(script.start + text.trim_end().len()).unwrap_or(0);
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
    let module_refs = &uses[0];
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
        .docstring(file_doc)
        .related_all(imports.modules.iter().cloned())
        .references(module_refs.iter().map(|r| (*r).to_string()))
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

    let mut ids: Vec<Option<String>> = vec![None; defs.len()];
    // Each definition's children, in order.
    let mut children_of: Vec<Vec<usize>> = vec![Vec::new(); defs.len()];
    for (c, def) in defs.iter().enumerate() {
        if let Some(p) = def.parent {
            children_of[p].push(c);
        }
    }
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
        let refs = &uses[i + 1];
        let related: Vec<String> = refs.iter().filter_map(|r| resolve(r)).collect();
        let parent_id = def.parent.and_then(|p| ids[p].clone()).or_else(|| parent.as_ref().map(|_| module_id.clone()));
        let mut builder = ChunkBuilder::new(kind, def.name.clone())
            .id([kind, ":", &def.path].concat())
            .qualified_name(qualified(module, ".", &def.path))
            .parent(parent_id)
            .span(def.outer)
            .signature(signature(def, source))
            .docstring(def.docstring.clone())
            .references(refs.iter().map(|r| (*r).to_string()))
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
            let children = &children_of[i];
            let holes: Vec<_> = children.iter().filter_map(|&c| body_hole(&defs[c], source)).collect();
            let methods: Vec<String> = children.iter().map(|&c| defs[c].name.clone()).collect::<BTreeSet<_>>().into_iter().collect();
            builder = builder
                .content(elide(source, def.outer.range(), &holes))
                .meta_opt("methods", Some(methods))
                .meta_opt("fields", Some(def.fields.clone()));
        } else if def.kind == DefKind::Namespace {
            let children = &children_of[i];
            let holes: Vec<_> = children.iter().filter_map(|&c| Some((defs[c].outer.range(), "")).filter(|_| defs[c].chunked)).collect();
            builder = builder.content(elide(source, def.outer.range(), &holes));
        }
        let id = chunks.push(builder);
        ids[i] = Some(id);
    }
    Ok(())
}

fn resolve_dotted(expr: &str, resolve: &impl Fn(&str) -> Option<String>) -> Option<String> {
    let expr = expr.split('<').next().unwrap_or(expr).trim();
    let (head, rest) = expr.split_once('.').map_or((expr, None), |(h, r)| (h, Some(r)));
    let base = resolve(head)?;
    Some(rest.map_or(base.clone(), |r| [base.as_str(), ".", r].concat()))
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

#[allow(clippy::too_many_lines, clippy::too_many_arguments)]
fn collect_defs(
    found: Vec<Found<'_>>,
    exports: &[Span],
    mut trivia: Vec<(Span, bool)>,
    extends: Vec<(u32, &str, bool)>,
    fields: Vec<(u32, u32, &str)>,
    mut jsx_at: Vec<u32>,
    source: &str,
    lines: &LineIndex,
) -> Vec<Def> {
    let mut defs: Vec<Def> = found
        .into_iter()
        .map(|f| {
            // `exports.name` as written; other names without the quotes of a string name.
            let name_text = if f.commonjs { f.name.text() } else { f.name.text().trim_matches(['"', '\'']) };
            Def {
                kind: f.kind,
                name: name_text.to_string(),
                node: Span::of(f.node),
                outer: Span::of(f.node),
                name_start: f.name.start_byte(),
                body: f.body.map(Span::of),
                docstring: None,
                decorators: Vec::new(),
                exported: f.commonjs,
                default_export: false,
                extends: Vec::new(),
                implements: Vec::new(),
                fields: Vec::new(),
                jsx: false,
                parent: None,
                chunked: true,
                path: String::new(),
            }
        })
        .collect();
    // A lexical declaration matched both as a function (its declarator's
    // value) and, through the export, once: keep one def per node.
    defs.sort_by_key(|d| (d.node.start_byte, std::cmp::Reverse(d.node.end_byte)));
    defs.dedup_by_key(|d| (d.node.start_byte, d.node.end_byte, d.name_start));
    trivia.sort_by_key(|(s, _)| s.start_byte);

    // (declaration start, export statement), by declaration start.
    let mut export_by_decl: Vec<(u32, Span)> = exports
        .iter()
        .filter_map(|e| {
            let inner = source.get(e.range()).unwrap_or_default();
            // The declaration starts after `export`, `export default` and
            // decorators: the first definition starting inside the statement.
            let from = defs.partition_point(|d| d.node.start_byte <= e.start_byte);
            defs[from..].iter().take_while(|d| d.node.start_byte < e.end_byte).find(|d| e.contains(&d.node) && {
                let between = source.get(e.start_byte as usize..d.node.start_byte as usize).unwrap_or_default();
                (between.trim_start().starts_with("export") || between.trim_start().starts_with('@'))
                    && !declares_inside(between)
            }).map(|d| (d.node.start_byte, *e)).filter(|_| !inner.is_empty())
        })
        .collect();
    export_by_decl.sort_by_key(|(start, _)| *start);

    for def in &mut defs {
        let at = export_by_decl.partition_point(|(start, _)| *start <= def.node.start_byte);
        if let Some((_, export)) = at.checked_sub(1).map(|i| &export_by_decl[i]).filter(|(start, _)| *start == def.node.start_byte) {
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

    // Heritage and fields belong to the innermost class whose header or body
    // holds them: the last such definition in start order, so the nearest one
    // starting before them.
    for (at, text, implements) in extends {
        let before = defs.partition_point(|d| d.node.start_byte <= at);
        if let Some(def) = defs[..before]
            .iter_mut()
            .rev()
            .find(|d| matches!(d.kind, DefKind::Class | DefKind::Interface) && d.node.contains_byte(at) && d.body.is_none_or(|b| at < b.start_byte))
        {
            let text = one_line(text);
            if implements { def.implements.push(text) } else { def.extends.push(text) }
        }
    }
    for (start, end, name) in fields {
        let before = defs.partition_point(|d| d.node.start_byte <= start);
        if let Some(def) = defs[..before]
            .iter_mut()
            .rev()
            .find(|d| d.kind == DefKind::Class && d.body.is_some_and(|b| b.start_byte <= start && end <= b.end_byte))
            && !def.fields.iter().any(|f| f == name)
        {
            def.fields.push(name.to_string());
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
                defs[i].path = [defs[p].path.as_str(), ".", &defs[i].name].concat();
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
/// The script's first comment when it opens the script (`source[start..]`
/// is the script) and precedes every definition.
fn file_doc(first: Option<NodeRef<'_>>, defs: &[Def], source: &str, start: usize) -> Option<String> {
    let first = first?;
    if !source.get(start..first.start_byte() as usize).is_some_and(|before| before.trim().is_empty()) || defs.iter().any(|d| d.outer.start_byte <= first.start_byte()) {
        return None;
    }
    docblock(first.text())
}

/// `export { name }` and `export default name` mark top-level definitions.
fn mark_exports(named_exports: &[(&str, bool)], defs: &mut [Def]) {
    for def in defs.iter_mut().filter(|d| d.parent.is_none()) {
        // The last statement naming it decides whether the export is the default.
        if let Some(&(_, default)) = named_exports.iter().rev().find(|(name, _)| *name == def.name) {
            def.exported = true;
            def.default_export |= default;
        }
    }
}

struct Imports {
    /// Local name -> resolved symbol.
    bindings: BTreeMap<String, String>,
    /// Import statements as `source` or `source.name`.
    listed: Vec<String>,
    /// Resolved modules imported (related symbols of the module chunk).
    modules: BTreeSet<String>,
    at: Vec<Span>,
}

fn collect_imports(matches: Vec<ImportMatch<'_>>, path: &str) -> Imports {
    let mut imports = Imports { bindings: BTreeMap::new(), listed: Vec::new(), modules: BTreeSet::new(), at: Vec::new() };
    for m in matches {
        let target = resolve_import(m.source, path);
        if let Some(stmt) = m.at {
            imports.at.push(stmt);
        }
        let entry = if let Some(local) = m.local {
            imports.bindings.insert(local.to_string(), target.clone());
            target.clone()
        } else if let Some(name) = m.name {
            let name = name.trim_matches(['"', '\'']);
            let local = m.alias.unwrap_or(name);
            let symbol = if target.starts_with("file:") { target.clone() } else { qualified(&target, ".", name) };
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

/// Identifiers each chunk uses: index 0 the module chunk, `i + 1` definition `i`.
fn collect_uses<'s>(
    uses: Vec<(u32, &'s str, bool)>,
    bindings: Vec<u32>,
    defs: &[Def],
    imports: &Imports,
    top_names: &BTreeSet<&str>,
) -> Vec<BTreeSet<&'s str>> {
    let mut names: Vec<u32> = defs.iter().map(|d| d.name_start).collect();
    names.sort_unstable();
    let import_spans = SpanSet::new(imports.at.iter().copied());
    let chunked: Vec<usize> = (0..defs.len()).filter(|&i| defs[i].chunked).collect();
    let mut per: Vec<BTreeSet<&str>> = vec![BTreeSet::new(); defs.len() + 1];
    for (at, text, callee) in uses {
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
        if names.binary_search(&at).is_ok() || bindings.binary_search(&at).is_ok() || import_spans.contains_byte(at) || is_builtin(text) {
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
        per[owner.map_or(0, |i| i + 1)].insert(text);
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
