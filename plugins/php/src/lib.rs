//! PHP chunk strategy (a code-intel plugin, built as a WebAssembly component).
//!
//! One file becomes a chunk per class, interface, trait and enum (its header,
//! docblock, constants, properties, enum cases and member signatures; method
//! bodies elided), a chunk per method (`Class.method`) and per function, and
//! a `script` chunk when the file has top-level code (routes, config arrays,
//! `return new class ...`), holding that code with declaration bodies elided.
//!
//! Names are resolved the way PHP resolves them: the namespace gives FQCNs,
//! `use` imports (aliases and group imports included) resolve the names
//! written in the code, so `references` hold the names as written and
//! `related_symbols` their FQCNs. Laravel facts land in metadata and related
//! symbols: constructor dependency injection (promoted and plain parameters,
//! scalars excluded), Eloquent relations with the related model,
//! `$fillable`/`$guarded`/`$hidden`/`$casts`/`$table`, and `$translatable` with
//! spatie's `HasTranslations`.
//!
//! A file being edited keeps what can be read: a class cut before its
//! closing brace (tree-sitter leaves an `ERROR` with no class node) is
//! chunked from its keyword to where the error ends, with its complete
//! methods and `syntax_errors: true`. A non-empty file that still gives no
//! chunk is never returned empty: with a syntax error it is a plugin error
//! naming the line (recorded; the host indexes the file as lines), without
//! one (only comments or inline HTML) a decline.
//!
//! Blade templates (`*.blade.php`) are declined so that a Blade strategy or
//! the line fallback takes them. Parsing is the host's (`syntax` import): the
//! plugin asks for the tree's named nodes once ([`Tree::nodes`], all kinds, so
//! that every node's parent is its syntax parent), sorts the nodes it needs in
//! one pass over that table (`Scan`) comparing kinds by a role table and
//! fields by id, then post-processes what it found (scopes, imports, nesting,
//! names, chunks). The structure it matches is what one tree-sitter query used
//! to match, node for node (goldens unchanged by the move).

use std::collections::BTreeSet;
use std::hash::{Hash, Hasher};

use code_intel_plugin_sdk::text::{docblock, elide, qualified, split_top_level, unquote};
use code_intel_plugin_sdk::{
    ChunkBuilder, ChunkOutcome, ChunkSet, FieldId, KindId, LineIndex, NodeRef, NodeTable, Plugin, PluginError,
    PluginInfo, SourceFile, Span, Tree, export_plugin, parse,
};
use serde_json::{Map, Value, json};

/// The plugin type exported to the host.
pub struct Php;

/// Priority among plugins matching `*.php`: the general PHP strategy, so that
/// Blade, Filament and migration strategies (higher numbers) are tried first.
const PRIORITY: i32 = 10;

/// Type names that are not classes: never dependencies or references.
const SCALARS: &[&str] = &[
    "int", "integer", "float", "double", "string", "bool", "boolean", "array", "mixed", "null", "callable",
    "iterable", "object", "void", "never", "false", "true", "self", "static", "parent",
];

/// Eloquent relation methods: `$this->hasMany(...)` and friends.
const RELATIONS: &[&str] = &[
    "hasOne", "hasMany", "belongsTo", "belongsToMany", "hasOneThrough", "hasManyThrough", "morphOne", "morphMany",
    "morphTo", "morphToMany", "morphedByMany",
];

/// Relations whose second argument is the intermediate ("through") model.
const THROUGH_RELATIONS: &[&str] = &["hasOneThrough", "hasManyThrough"];

/// Classes a model extends (directly) to be an Eloquent model.
const ELOQUENT_BASES: &[&str] = &[
    "Illuminate\\Database\\Eloquent\\Model",
    "Illuminate\\Foundation\\Auth\\User",
    "Illuminate\\Database\\Eloquent\\Relations\\Pivot",
    "Illuminate\\Database\\Eloquent\\Relations\\MorphPivot",
];

/// Model properties recorded in metadata as lists of strings.
const LIST_PROPERTIES: &[&str] = &["fillable", "guarded", "hidden", "visible", "appends", "with", "translatable"];

fn is_scalar(name: &str) -> bool {
    SCALARS.iter().any(|s| s.eq_ignore_ascii_case(name))
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum DeclKind {
    Class,
    Interface,
    Trait,
    Enum,
    Function,
    Method,
    Anonymous,
}

impl DeclKind {
    fn is_type(self) -> bool {
        matches!(self, Self::Class | Self::Interface | Self::Trait | Self::Enum)
    }

    fn chunk_kind(self) -> &'static str {
        match self {
            Self::Class => "class",
            Self::Interface => "interface",
            Self::Trait => "trait",
            Self::Enum => "enum",
            Self::Function => "function",
            Self::Method => "method",
            Self::Anonymous => "anonymous_class",
        }
    }
}

/// One declaration in the file.
struct Decl {
    kind: DeclKind,
    name: String,
    node: Span,
    /// The node with its docblock.
    outer: Span,
    /// Where the signature starts (after attributes) and ends (before the body).
    header: (u32, u32),
    name_start: u32,
    body: Option<Span>,
    params: Option<Span>,
    docstring: Option<String>,
    parent: Option<usize>,
    chunked: bool,
    fqn: String,
    /// Read from the pieces of a syntax error (a class cut mid-edit), not
    /// from a complete declaration node: see [`recovered_types`].
    recovered: bool,
}

/// Import table entries: lowercased alias -> target.
type Imports = Vec<(String, String)>;

fn import(table: &mut Imports, alias: String, target: String) {
    match table.iter_mut().find(|(a, _)| *a == alias) {
        Some(entry) => entry.1 = target,
        None => table.push((alias, target)),
    }
}

/// The target imported as `alias` (any case).
fn imported<'t>(table: &'t Imports, alias: &str) -> Option<&'t String> {
    table.iter().find(|(a, _)| a.eq_ignore_ascii_case(alias)).map(|(_, target)| target)
}

/// One namespace region and the imports made in it.
#[derive(Default)]
struct Scope {
    start: u32,
    namespace: String,
    /// Lowercased alias -> FQCN (a few entries: searched in order).
    classes: Imports,
    /// Lowercased alias -> fully qualified function name.
    functions: Imports,
    /// Imports as written, resolved: `Foo\Bar as Baz`.
    listed: Vec<String>,
}

impl Scope {
    /// FQCN of a class name written in this scope, `None` for scalars and
    /// `self`/`static`/`parent` (the caller knows what those mean).
    fn resolve_class(&self, written: &str) -> Option<String> {
        let written = written.trim();
        if written.is_empty() || is_scalar(written) {
            return None;
        }
        if let Some(full) = written.strip_prefix('\\') {
            return Some(full.to_string());
        }
        if let Some(rest) = written.strip_prefix("namespace\\") {
            return Some(qualified(&self.namespace, "\\", rest));
        }
        let (first, rest) = written.split_once('\\').map_or((written, None), |(f, r)| (f, Some(r)));
        if let Some(target) = imported(&self.classes, first) {
            return Some(rest.map_or_else(|| target.clone(), |r| [target.as_str(), "\\", r].concat()));
        }
        Some(qualified(&self.namespace, "\\", written))
    }

    /// Fully qualified name of a function call, when an import says it.
    fn resolve_function(&self, written: &str) -> Option<String> {
        if let Some(full) = written.strip_prefix('\\') {
            return Some(full.to_string());
        }
        imported(&self.functions, written).cloned()
    }
}

fn short(name: &str) -> &str {
    name.rsplit('\\').next().unwrap_or(name)
}

/// Parses one `use ...;` statement into (kind, target, alias) triples.
fn parse_use(statement: &str) -> Vec<(&'static str, String, String)> {
    let body = statement.trim().trim_end_matches(';').trim();
    let body = body.strip_prefix("use").unwrap_or(body).trim();
    let (kind, body) = strip_kind(body, "class");
    let (prefix, items): (String, Vec<&str>) = match (body.find('{'), body.rfind('}')) {
        (Some(open), Some(close)) if open < close => {
            (body[..open].trim().trim_end_matches('\\').to_string(), split_top_level(&body[open + 1..close], ','))
        }
        _ => (String::new(), split_top_level(body, ',')),
    };
    items
        .into_iter()
        .filter_map(|item| {
            let (kind, item) = strip_kind(item, kind);
            let words: Vec<&str> = item.split_whitespace().collect();
            let (path, alias) = match words.as_slice() {
                [path] => (*path, None),
                [path, as_kw, alias] if as_kw.eq_ignore_ascii_case("as") => (*path, Some(*alias)),
                _ => return None,
            };
            let path = path.trim_start_matches('\\');
            let target = if prefix.is_empty() { path.to_string() } else { format!("{}\\{path}", prefix.trim_start_matches('\\')) };
            let alias = alias.unwrap_or_else(|| short(path)).to_string();
            Some((kind, target, alias))
        })
        .collect()
}

fn strip_kind<'a>(text: &'a str, default: &'static str) -> (&'static str, &'a str) {
    for kind in ["function", "const"] {
        if let Some(rest) = text.strip_prefix(kind)
            && rest.starts_with(char::is_whitespace) {
                return (kind, rest.trim_start());
            }
    }
    (default, text.trim())
}

/// Class names in a type (`?Foo`, `A|B`, `(A&B)|null`), scalars excluded.
fn type_names(ty: &str) -> Vec<&str> {
    ty.split(|c: char| "|&?()".contains(c) || c.is_whitespace())
        .filter(|t| !t.is_empty() && !is_scalar(t))
        .collect()
}

/// Splits `key => value` at the top-level arrow.
fn split_arrow(element: &str) -> (Option<&str>, &str) {
    let mut quote: Option<char> = None;
    let mut depth = 0i32;
    let bytes = element.as_bytes();
    for (i, c) in element.char_indices() {
        if let Some(q) = quote {
            if c == q && (i == 0 || bytes[i - 1] != b'\\') {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            '=' if depth == 0 && bytes.get(i + 1) == Some(&b'>') => {
                return (Some(element[..i].trim()), element[i + 2..].trim());
            }
            _ => {}
        }
    }
    (None, element.trim())
}

/// Elements of an array literal (`[...]` or `array(...)`), or `None`.
fn array_elements(literal: &str) -> Option<Vec<&str>> {
    let literal = literal.trim();
    let inner = literal
        .strip_prefix('[')
        .and_then(|l| l.strip_suffix(']'))
        .or_else(|| literal.strip_prefix("array").map(str::trim_start).and_then(|l| l.strip_prefix('(')).and_then(|l| l.strip_suffix(')')))?;
    Some(split_top_level(inner, ','))
}

/// A PHP value as JSON: strings unquoted, `X::class` resolved, other
/// expressions as written.
fn value_json(expr: &str, scope: &Scope) -> Value {
    let expr = expr.trim();
    if let Some(s) = unquote(expr) {
        return json!(s);
    }
    if let Some(class) = expr.strip_suffix("::class") {
        return json!(scope.resolve_class(class).unwrap_or_else(|| class.to_string()));
    }
    json!(expr)
}

fn list_json(literal: &str, scope: &Scope) -> Option<Value> {
    Some(Value::Array(array_elements(literal)?.into_iter().map(|e| value_json(split_arrow(e).1, scope)).collect()))
}

fn map_json(literal: &str, scope: &Scope) -> Option<Value> {
    let mut map = Map::new();
    for element in array_elements(literal)? {
        if let (Some(key), value) = split_arrow(element) {
            let key = unquote(key).unwrap_or(key).to_string();
            map.insert(key, value_json(value, scope));
        }
    }
    Some(Value::Object(map))
}

impl Plugin for Php {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "php".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "PHP: classes, interfaces, traits, enums, functions and methods with FQCNs, imports, DI and Eloquent facts".into(),
            languages: vec!["php".into()],
            file_patterns: vec!["**/*.php".into()],
            priority: PRIORITY,
        }
    }

    fn chunk(file: SourceFile) -> Result<ChunkOutcome, PluginError> {
        if file.path.ends_with(".blade.php") {
            return Ok(ChunkOutcome::Decline(
                "a Blade template, not PHP code: left to a Blade strategy or the line fallback".into(),
            ));
        }
        if file.content.trim().is_empty() {
            return Ok(ChunkOutcome::Chunks(Vec::new()));
        }
        if !file.content.contains("<?php") && !file.content.contains("<?=") {
            return Ok(ChunkOutcome::Decline("no `<?php` tag: the file is not PHP code".into()));
        }
        let tree = parse("php", &file.content)?;
        chunk_file(&tree, &file.path, &file.content)
    }
}

export_plugin!(Php);

/// What the plugin does with a node kind: the grammar kinds it looks at, one
/// role each, and `Other` for the rest.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    Other,
    Program,
    Error,
    Decl(DeclKind),
    Name,
    QualifiedName,
    RelativeName,
    VariableName,
    AttributeList,
    DeclarationList,
    EnumDeclarationList,
    FormalParameters,
    CompoundStatement,
    Comment,
    NamespaceDefinition,
    NamespaceName,
    NamespaceUse,
    BaseClause,
    InterfaceClause,
    UseDeclaration,
    PrimitiveType,
    EnumCase,
    PropertyDeclaration,
    PropertyElement,
    SimpleParameter,
    PromotionParameter,
    ReturnStatement,
    ArrayCreation,
    Arguments,
    NamedType,
    ObjectCreation,
    ScopedCall,
    ClassConstantAccess,
    ScopedPropertyAccess,
    Attribute,
    Binary,
    FunctionCall,
    MemberCall,
    NullsafeMemberCall,
    /// Statements that are not "top-level code" for the `script` chunk
    /// (besides comments, namespaces, imports and named declarations).
    NotCode,
}

impl Role {
    fn of(kind: &str) -> Self {
        match kind {
            "program" => Self::Program,
            "ERROR" => Self::Error,
            "class_declaration" => Self::Decl(DeclKind::Class),
            "interface_declaration" => Self::Decl(DeclKind::Interface),
            "trait_declaration" => Self::Decl(DeclKind::Trait),
            "enum_declaration" => Self::Decl(DeclKind::Enum),
            "function_definition" => Self::Decl(DeclKind::Function),
            "method_declaration" => Self::Decl(DeclKind::Method),
            "anonymous_class" => Self::Decl(DeclKind::Anonymous),
            "name" => Self::Name,
            "qualified_name" => Self::QualifiedName,
            "relative_name" => Self::RelativeName,
            "variable_name" => Self::VariableName,
            "attribute_list" => Self::AttributeList,
            "declaration_list" => Self::DeclarationList,
            "enum_declaration_list" => Self::EnumDeclarationList,
            "formal_parameters" => Self::FormalParameters,
            "compound_statement" => Self::CompoundStatement,
            "comment" => Self::Comment,
            "namespace_definition" => Self::NamespaceDefinition,
            "namespace_name" => Self::NamespaceName,
            "namespace_use_declaration" => Self::NamespaceUse,
            "base_clause" => Self::BaseClause,
            "class_interface_clause" => Self::InterfaceClause,
            "use_declaration" => Self::UseDeclaration,
            "primitive_type" => Self::PrimitiveType,
            "enum_case" => Self::EnumCase,
            "property_declaration" => Self::PropertyDeclaration,
            "property_element" => Self::PropertyElement,
            "simple_parameter" => Self::SimpleParameter,
            "property_promotion_parameter" => Self::PromotionParameter,
            "return_statement" => Self::ReturnStatement,
            "array_creation_expression" => Self::ArrayCreation,
            "arguments" => Self::Arguments,
            "named_type" => Self::NamedType,
            "object_creation_expression" => Self::ObjectCreation,
            "scoped_call_expression" => Self::ScopedCall,
            "class_constant_access_expression" => Self::ClassConstantAccess,
            "scoped_property_access_expression" => Self::ScopedPropertyAccess,
            "attribute" => Self::Attribute,
            "binary_expression" => Self::Binary,
            "function_call_expression" => Self::FunctionCall,
            "member_call_expression" => Self::MemberCall,
            "nullsafe_member_call_expression" => Self::NullsafeMemberCall,
            "php_tag" | "text" | "text_interpolation" | "declare_statement" | "empty_statement" => Self::NotCode,
            _ => Self::Other,
        }
    }

    /// A class name as code writes it: `Foo`, `Foo\Bar`, `namespace\Foo`.
    fn is_class_name(self) -> bool {
        matches!(self, Self::Name | Self::QualifiedName | Self::RelativeName)
    }

    /// A statement that makes the file have top-level code (any named node
    /// but errors, comments, tags, inline HTML, namespaces, imports,
    /// `declare`, `;` and named declarations).
    fn is_code(self) -> bool {
        !matches!(
            self,
            Self::NotCode
                | Self::Comment
                | Self::Error
                | Self::NamespaceDefinition
                | Self::NamespaceUse
                | Self::Decl(DeclKind::Class | DeclKind::Interface | DeclKind::Trait | DeclKind::Enum | DeclKind::Function)
        )
    }
}

/// The index a [`KindId`] stands for. The SDK keeps it private; its derived
/// `Hash` writes it as one integer, which this hasher keeps as is, so that a
/// kind's role is one vector index away instead of a chain of comparisons.
fn kind_index(kind: KindId) -> usize {
    struct Identity(u64);
    impl Hasher for Identity {
        fn finish(&self) -> u64 {
            self.0
        }
        fn write(&mut self, bytes: &[u8]) {
            for (i, b) in bytes.iter().enumerate().take(8) {
                self.0 |= u64::from(*b) << (8 * i);
            }
        }
        fn write_u32(&mut self, n: u32) {
            self.0 = u64::from(n);
        }
    }
    let mut hasher = Identity(0);
    kind.hash(&mut hasher);
    usize::try_from(hasher.finish()).unwrap_or(usize::MAX)
}

/// The roles of the table's kinds and the ids of the fields the plugin
/// reads, looked up once per file.
struct Kinds {
    /// Kind index -> role.
    roles: Vec<Role>,
    attributes: Option<FieldId>,
    name: Option<FieldId>,
    body: Option<FieldId>,
    parameters: Option<FieldId>,
    return_type: Option<FieldId>,
    value: Option<FieldId>,
    default_value: Option<FieldId>,
    type_: Option<FieldId>,
    scope: Option<FieldId>,
    object: Option<FieldId>,
    arguments: Option<FieldId>,
    function: Option<FieldId>,
    left: Option<FieldId>,
    right: Option<FieldId>,
}

impl Kinds {
    fn of(nodes: &NodeTable<'_>) -> Self {
        // The host numbers kinds in the order they first occur, so a kind
        // seen for the first time has the next index.
        let mut roles: Vec<Option<Role>> = Vec::new();
        for node in nodes.iter() {
            let index = kind_index(node.kind_id());
            if index >= roles.len() {
                roles.resize(index + 1, None);
            }
            if roles[index].is_none() {
                roles[index] = Some(Role::of(node.kind()));
            }
        }
        Self {
            roles: roles.into_iter().map(|r| r.unwrap_or(Role::Other)).collect(),
            attributes: nodes.field_id("attributes"),
            name: nodes.field_id("name"),
            body: nodes.field_id("body"),
            parameters: nodes.field_id("parameters"),
            return_type: nodes.field_id("return_type"),
            value: nodes.field_id("value"),
            default_value: nodes.field_id("default_value"),
            type_: nodes.field_id("type"),
            scope: nodes.field_id("scope"),
            object: nodes.field_id("object"),
            arguments: nodes.field_id("arguments"),
            function: nodes.field_id("function"),
            left: nodes.field_id("left"),
            right: nodes.field_id("right"),
        }
    }

    #[inline]
    fn role(&self, node: NodeRef<'_>) -> Role {
        self.roles.get(kind_index(node.kind_id())).copied().unwrap_or(Role::Other)
    }

    fn parent_role(&self, node: NodeRef<'_>) -> Role {
        node.parent().map_or(Role::Other, |p| self.role(p))
    }

    /// The first child of `node` filling `field` when it has `role`.
    fn child<'a>(&self, node: NodeRef<'a>, field: Option<FieldId>, role: Role) -> Option<NodeRef<'a>> {
        node.child_by(field?).filter(|c| self.role(*c) == role)
    }

    /// The first child of `node` filling `field`, when a query's `(_)` takes
    /// it (any named node but an error).
    fn any_child<'a>(&self, node: NodeRef<'a>, field: Option<FieldId>) -> Option<NodeRef<'a>> {
        node.child_by(field?).filter(|c| self.role(*c) != Role::Error)
    }
}

/// How code uses a class or function name (what the query captured as
/// `@class`, `@function` and `@call`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum UseKind {
    Class,
    Function,
    Call,
}

/// Which declaration clause names a type.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Clause {
    Extends,
    Implements,
    Trait,
}

/// The nodes the plugin works on, sorted out in one pass over the table, in
/// document order within each list.
#[derive(Default)]
struct Scan<'a> {
    root: Option<NodeRef<'a>>,
    /// Every class, interface, trait, enum, function, method and anonymous class.
    decls: Vec<NodeRef<'a>>,
    namespaces: Vec<NodeRef<'a>>,
    /// `use ...;` statements (imports).
    imports: Vec<NodeRef<'a>>,
    /// (docblock, the declaration right after it).
    docs: Vec<(NodeRef<'a>, NodeRef<'a>)>,
    /// Names in `extends`, `implements` and trait `use` clauses.
    clauses: Vec<(Clause, NodeRef<'a>)>,
    /// (enum, its backing `primitive_type`).
    backings: Vec<(NodeRef<'a>, NodeRef<'a>)>,
    cases: Vec<NodeRef<'a>>,
    /// `property_element`s of property declarations.
    properties: Vec<NodeRef<'a>>,
    /// Simple and promoted parameters.
    params: Vec<NodeRef<'a>>,
    uses: Vec<(UseKind, NodeRef<'a>)>,
    /// `$this->hasMany(...)` and the other relation calls.
    relations: Vec<NodeRef<'a>>,
    /// Candidates for type declarations tree-sitter could not build (a
    /// class cut mid-edit, no closing brace), looked for only in a tree
    /// with errors: a `name` after a type keyword, outside any declaration
    /// node, with the kind and where the header starts
    /// ([`recovered_types`] keeps those right inside an `ERROR`).
    recovered: Vec<(DeclKind, u32, NodeRef<'a>)>,
}

impl<'a> Scan<'a> {
    fn of(nodes: &'a NodeTable<'a>, k: &Kinds, has_errors: bool) -> Self {
        let mut scan = Scan::default();
        let source = nodes.source();
        for node in nodes.iter() {
            match k.role(node) {
                Role::Name if has_errors && !matches!(k.parent_role(node), Role::Decl(_)) => {
                    if let Some((kind, start)) = type_keyword_before(source, node.start_byte()) {
                        scan.recovered.push((kind, start, node));
                    }
                    scan.name(node, k, source);
                }
                Role::Name | Role::QualifiedName | Role::RelativeName => scan.name(node, k, source),
                Role::Decl(_) => scan.decls.push(node),
                Role::Comment => {
                    // ((comment) @doc . [declarations] @documented): the next
                    // named sibling, under a parent that is not an error.
                    let Some(parent) = node.parent().filter(|p| k.role(*p) != Role::Error) else { continue };
                    let next = nodes.get(node.index() + 1 + node.descendants().len());
                    if let Some(next) = next.filter(|n| n.parent() == Some(parent))
                        && matches!(k.role(next), Role::Decl(kind) if kind != DeclKind::Anonymous)
                    {
                        scan.docs.push((node, next));
                    }
                }
                Role::NamespaceDefinition => scan.namespaces.push(node),
                Role::NamespaceUse => scan.imports.push(node),
                Role::PrimitiveType => {
                    if let Some(parent) = node.parent().filter(|p| k.role(*p) == Role::Decl(DeclKind::Enum)) {
                        scan.backings.push((parent, node));
                    }
                }
                Role::EnumCase => scan.cases.push(node),
                Role::PropertyElement if k.parent_role(node) == Role::PropertyDeclaration => scan.properties.push(node),
                Role::SimpleParameter | Role::PromotionParameter => scan.params.push(node),
                Role::MemberCall if is_relation(node, k) => scan.relations.push(node),
                Role::Program if scan.root.is_none() => scan.root = Some(node),
                _ => {}
            }
        }
        scan
    }

    /// A `name`, `qualified_name` or `relative_name`: a use of a class or
    /// function, a method call's name or a clause's type, by its parent.
    fn name(&mut self, node: NodeRef<'a>, k: &Kinds, source: &str) {
        let Some(parent) = node.parent() else { return };
        let role = k.role(node);
        let field = node.field_id();
        let found = match k.role(parent) {
            Role::NamedType | Role::ObjectCreation => Some(UseKind::Class),
            Role::ScopedCall => {
                // (scoped_call_expression scope: [names] @class name: (name) @call)
                if field.is_some() && field == k.scope {
                    k.child(parent, k.name, Role::Name).map(|_| UseKind::Class)
                } else if role == Role::Name && field.is_some() && field == k.name {
                    k.scope.and_then(|f| parent.child_by(f)).filter(|s| k.role(*s).is_class_name()).map(|_| UseKind::Call)
                } else {
                    None
                }
            }
            // The first named child: `Foo::BAR`, `Foo::class`.
            Role::ClassConstantAccess => (parent.children().next() == Some(node)).then_some(UseKind::Class),
            Role::ScopedPropertyAccess => (field.is_some() && field == k.scope).then_some(UseKind::Class),
            Role::Attribute => (role != Role::RelativeName).then_some(UseKind::Class),
            Role::Binary => (field.is_some() && field == k.right && is_instanceof(parent, node, k, source)).then_some(UseKind::Class),
            Role::FunctionCall => (field.is_some() && field == k.function).then_some(UseKind::Function),
            Role::MemberCall | Role::NullsafeMemberCall => {
                (role == Role::Name && field.is_some() && field == k.name).then_some(UseKind::Call)
            }
            Role::BaseClause => {
                self.clauses.push((Clause::Extends, node));
                None
            }
            Role::InterfaceClause => {
                self.clauses.push((Clause::Implements, node));
                None
            }
            Role::UseDeclaration => {
                self.clauses.push((Clause::Trait, node));
                None
            }
            _ => None,
        };
        if let Some(kind) = found {
            self.uses.push((kind, node));
        }
    }
}

/// The type keyword (`class`, `interface`, `trait`, `enum`, any case) right
/// before byte `at`, with where the declaration's header starts (its
/// `abstract`/`final`/`readonly` modifiers included). `None` when the word
/// before is not such a keyword, or is one used as a name (`Foo::class`,
/// `$x->class`, `new class`).
fn type_keyword_before(source: &str, at: u32) -> Option<(DeclKind, u32)> {
    /// The text before the last word of `text` (trailing blanks skipped), and that word.
    fn last_word(text: &str) -> Option<(&str, &str)> {
        let text = text.trim_end();
        let start = text.len() - text.chars().rev().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').count();
        (start < text.len()).then(|| (&text[..start], &text[start..]))
    }
    let (mut head, keyword) = last_word(source.get(..at as usize)?)?;
    let kind = match keyword.to_ascii_lowercase().as_str() {
        "class" => DeclKind::Class,
        "interface" => DeclKind::Interface,
        "trait" => DeclKind::Trait,
        "enum" => DeclKind::Enum,
        _ => return None,
    };
    if head.trim_end().ends_with(['$', ':', '>', '\\']) {
        return None;
    }
    let mut header_start = head.len();
    while let Some((before, word)) = last_word(head) {
        match word.to_ascii_lowercase().as_str() {
            "abstract" | "final" | "readonly" => {
                header_start = before.len();
                head = before;
            }
            "new" => return None,
            _ => break,
        }
    }
    u32::try_from(header_start).ok().map(|start| (kind, start))
}

/// True when binary expression `binary` is `left instanceof right`: the only
/// text between its left operand and `right`, comments aside, is the keyword
/// (any case, as PHP keywords are).
fn is_instanceof(binary: NodeRef<'_>, right: NodeRef<'_>, k: &Kinds, source: &str) -> bool {
    let mut operator: Option<&str> = None;
    let mut gap = |from: u32, to: u32| -> bool {
        let piece = source.get(from as usize..to as usize).unwrap_or_default().trim();
        if piece.is_empty() {
            return true;
        }
        operator.replace(piece).is_none()
    };
    let mut at = binary.start_byte();
    for child in binary.children() {
        if child == right {
            break;
        }
        if child.field_id().is_some() && child.field_id() == k.left {
            at = child.end_byte();
        } else {
            // A comment (or anything else named) between the operands.
            if !gap(at, child.start_byte()) {
                return false;
            }
            at = at.max(child.end_byte());
        }
    }
    if !gap(at, right.start_byte()) {
        return false;
    }
    operator.is_some_and(|o| o.eq_ignore_ascii_case("instanceof"))
}

/// `$this->hasMany(...)` and the other relations: the object is `$this`,
/// the name a relation method, and the call has arguments.
fn is_relation(call: NodeRef<'_>, k: &Kinds) -> bool {
    k.child(call, k.object, Role::VariableName).is_some_and(|o| o.text() == "$this")
        && k.child(call, k.name, Role::Name).is_some_and(|n| RELATIONS.contains(&n.text()))
        && k.child(call, k.arguments, Role::Arguments).is_some()
}

/// Everything the scan says about the file, matched to declarations.
struct Facts<'a> {
    decls: Vec<Decl>,
    scopes: Vec<Scope>,
    /// Per declaration index: names as written.
    extends: Vec<Vec<&'a str>>,
    implements: Vec<Vec<&'a str>>,
    traits: Vec<Vec<&'a str>>,
    backing: Vec<Option<&'a str>>,
    cases: Vec<Vec<Value>>,
    properties: Vec<Vec<(&'a str, Option<&'a str>)>>,
    /// Per method index: (type, variable, promoted).
    params: Vec<Vec<(Option<&'a str>, &'a str, bool)>>,
    casts_method: Vec<Option<&'a str>>,
}

impl Facts<'_> {
    fn scope_at(&self, at: u32) -> &Scope {
        let i = self.scopes.partition_point(|s| s.start <= at);
        &self.scopes[i.saturating_sub(1)]
    }

    /// Innermost declaration (any kind) whose outer span contains `at`.
    fn innermost(&self, at: u32) -> Option<usize> {
        let pos = self.decls.partition_point(|d| d.outer.start_byte <= at);
        let mut candidate = pos.checked_sub(1);
        while let Some(i) = candidate {
            if self.decls[i].outer.contains_byte(at) {
                return Some(i);
            }
            candidate = self.decls[i].parent;
        }
        None
    }

    /// Innermost chunked declaration containing `at`.
    fn owner(&self, at: u32) -> Option<usize> {
        let mut candidate = self.innermost(at);
        while let Some(i) = candidate {
            if self.decls[i].chunked {
                return Some(i);
            }
            candidate = self.decls[i].parent;
        }
        None
    }

    /// Innermost type declaration (class, interface, trait, enum) containing `at`.
    fn owning_type(&self, at: u32) -> Option<usize> {
        let mut candidate = self.innermost(at);
        while let Some(i) = candidate {
            if self.decls[i].kind.is_type() || self.decls[i].kind == DeclKind::Anonymous {
                return Some(i).filter(|&i| self.decls[i].kind.is_type());
            }
            candidate = self.decls[i].parent;
        }
        None
    }

    /// The declaration whose node starts at `at` (the last one, should two).
    fn starting_at(&self, at: u32) -> Option<usize> {
        let i = self.decls.partition_point(|d| d.node.start_byte <= at).checked_sub(1)?;
        (self.decls[i].node.start_byte == at).then_some(i)
    }
}

/// The parts of a declaration node the plugin reads, by field.
#[derive(Default)]
struct DeclParts<'a> {
    attributes: Option<NodeRef<'a>>,
    name: Option<NodeRef<'a>>,
    parameters: Option<NodeRef<'a>>,
    return_type: Option<NodeRef<'a>>,
    body: Option<NodeRef<'a>>,
}

impl<'a> DeclParts<'a> {
    /// The first child in each field (one pass over the children).
    fn of(node: NodeRef<'a>, k: &Kinds) -> Self {
        let mut parts = Self::default();
        for child in node.children() {
            let Some(field) = child.field_id() else { continue };
            let slot = if Some(field) == k.attributes {
                &mut parts.attributes
            } else if Some(field) == k.name {
                &mut parts.name
            } else if Some(field) == k.parameters {
                &mut parts.parameters
            } else if Some(field) == k.return_type {
                &mut parts.return_type
            } else if Some(field) == k.body {
                &mut parts.body
            } else {
                continue;
            };
            slot.get_or_insert(child);
        }
        parts
    }
}

/// The declaration `node` stands for, when it has the parts a declaration
/// needs (a name, a body for types and functions, parameters for functions
/// and methods); `None` for broken code.
fn decl_of(node: NodeRef<'_>, kind: DeclKind, k: &Kinds) -> Option<Decl> {
    let node_span = Span::of(node);
    if kind == DeclKind::Anonymous {
        return Some(Decl {
            kind,
            name: "class@anonymous".to_string(),
            node: node_span,
            outer: node_span,
            header: (node.start_byte(), node.end_byte()),
            name_start: node.start_byte(),
            body: None,
            params: None,
            docstring: None,
            parent: None,
            chunked: false,
            fqn: String::new(),
            recovered: false,
        });
    }
    let parts = DeclParts::of(node, k);
    let attributes = parts.attributes.filter(|a| k.role(*a) == Role::AttributeList);
    let name = parts.name.filter(|n| k.role(*n) == Role::Name)?;
    let (params, end, body) = match kind {
        DeclKind::Function | DeclKind::Method => {
            let params = parts.parameters.filter(|p| k.role(*p) == Role::FormalParameters)?;
            let ret = parts.return_type.filter(|r| k.role(*r) != Role::Error);
            let body = parts.body.filter(|b| k.role(*b) == Role::CompoundStatement);
            if kind == DeclKind::Function && body.is_none() {
                return None;
            }
            (Some(params), ret.unwrap_or(params).end_byte(), body)
        }
        _ => {
            let list = if kind == DeclKind::Enum { Role::EnumDeclarationList } else { Role::DeclarationList };
            let body = parts.body.filter(|b| k.role(*b) == list)?;
            (None, body.start_byte(), Some(body))
        }
    };
    Some(Decl {
        kind,
        name: name.text().to_string(),
        node: node_span,
        outer: node_span,
        header: (attributes.map_or(node.start_byte(), NodeRef::end_byte), end),
        name_start: name.start_byte(),
        body: body.map(Span::of),
        params: params.map(Span::of),
        docstring: None,
        parent: None,
        chunked: false,
        fqn: String::new(),
        recovered: false,
    })
}

/// The array a `casts()` method returns (`protected function casts(): array
/// { return [...]; }`): every array returned directly by its body.
fn casts_arrays<'a, 'k>(method: NodeRef<'a>, k: &'k Kinds) -> impl Iterator<Item = NodeRef<'a>> + use<'a, 'k> {
    let body = k.child(method, k.name, Role::Name)
        .filter(|n| n.text() == "casts")
        .and_then(|_| k.child(method, k.body, Role::CompoundStatement));
    body.into_iter()
        .flat_map(|b| b.children())
        .filter(|s| k.role(*s) == Role::ReturnStatement)
        .flat_map(|s| s.children())
        .filter(|a| k.role(*a) == Role::ArrayCreation)
}

/// The type declarations of syntax errors: what tree-sitter makes of a
/// class cut mid-edit (no closing brace) is an `ERROR` holding the
/// keyword, the name, the clauses and the complete methods, with no
/// declaration node (the node table leaves `ERROR` nodes out, so `errors`,
/// their spans, come from a query). A type keyword and a name right inside
/// an error become a declaration from the keyword to the next such name in
/// the same error, or to the error's end, so that the class and its
/// complete methods are chunked as the Python plugin keeps them.
fn recovered_types(scan: &Scan<'_>, errors: &[Span], source: &str) -> Vec<Decl> {
    let innermost = |at: u32| errors.iter().filter(|e| e.contains_byte(at)).min_by_key(|e| e.end_byte - e.start_byte);
    let lines = LineIndex::new(source);
    let mut found: Vec<(DeclKind, u32, NodeRef<'_>, Span)> = Vec::new();
    for &(kind, start, name) in &scan.recovered {
        let Some(error) = innermost(name.start_byte()) else { continue };
        // Right inside the error: its table parent (errors are not in the
        // table) is outside it, or it has none.
        if name.parent().is_some_and(|p| error.contains(&Span::of(p))) {
            continue;
        }
        found.push((kind, start.max(error.start_byte), name, *error));
    }
    let mut decls = Vec::with_capacity(found.len());
    for (n, &(kind, start, name, error)) in found.iter().enumerate() {
        let next = found.get(n + 1).filter(|next| next.3 == error).map(|next| next.1);
        let end = next.unwrap_or(error.end_byte).max(name.end_byte());
        let brace = source
            .get(name.end_byte() as usize..end as usize)
            .and_then(|header| header.find('{'))
            .and_then(|at| u32::try_from(at).ok())
            .map(|at| name.end_byte() + at);
        let span = lines.span(start, end);
        decls.push(Decl {
            kind,
            name: name.text().to_string(),
            node: span,
            outer: span,
            header: (start, brace.unwrap_or(end)),
            name_start: name.start_byte(),
            body: brace.map(|at| lines.span(at, end)),
            params: None,
            docstring: None,
            parent: None,
            chunked: false,
            fqn: String::new(),
            recovered: true,
        });
    }
    decls
}

fn collect<'a>(scan: &Scan<'a>, k: &Kinds, errors: &[Span], source: &str) -> Facts<'a> {
    let mut decls: Vec<Decl> = Vec::with_capacity(scan.decls.len() + scan.recovered.len());
    for &node in &scan.decls {
        let Role::Decl(kind) = k.role(node) else { continue };
        decls.extend(decl_of(node, kind, k));
    }
    decls.extend(recovered_types(scan, errors, source));
    // The table is in document order, an enclosing node before the ones it
    // contains: the order this sort keeps.
    decls.sort_by_key(|d| (d.node.start_byte, std::cmp::Reverse(d.node.end_byte)));

    let count = decls.len();
    let mut facts = Facts {
        decls,
        scopes: Vec::new(),
        extends: vec![Vec::new(); count],
        implements: vec![Vec::new(); count],
        traits: vec![Vec::new(); count],
        backing: vec![None; count],
        cases: vec![Vec::new(); count],
        properties: vec![Vec::new(); count],
        params: vec![Vec::new(); count],
        casts_method: vec![None; count],
    };
    // Nesting (before docblocks widen spans: nesting is by the nodes).
    let mut stack: Vec<usize> = Vec::new();
    for i in 0..facts.decls.len() {
        while let Some(&top) = stack.last() {
            if facts.decls[top].node.contains(&facts.decls[i].node) {
                break;
            }
            stack.pop();
        }
        let parent = stack.last().copied();
        let kind = facts.decls[i].kind;
        facts.decls[i].parent = parent;
        facts.decls[i].chunked = match (kind, parent.map(|p| (facts.decls[p].kind, facts.decls[p].chunked))) {
            (DeclKind::Anonymous, _) => false,
            (DeclKind::Method, Some((parent_kind, parent_chunked))) => parent_kind.is_type() && parent_chunked,
            (DeclKind::Method, None) => false,
            (_, None) => true,
            (_, Some(_)) => false,
        };
        stack.push(i);
    }

    for &(clause, name) in &scan.clauses {
        let at = name.start_byte();
        let (owner, list) = match clause {
            Clause::Extends => (facts.innermost(at), &mut facts.extends),
            Clause::Implements => (facts.innermost(at), &mut facts.implements),
            Clause::Trait => (facts.owning_type(at), &mut facts.traits),
        };
        if let Some(i) = owner {
            list[i].push(name.text());
        }
    }
    let mut docs: Vec<(usize, Span, String)> = Vec::new();
    for &(doc, decl) in &scan.docs {
        if let (Some(i), Some(text)) = (facts.starting_at(decl.start_byte()), docblock(doc.text())) {
            docs.push((i, Span::of(doc), text));
        }
    }
    for &(enumeration, backing) in &scan.backings {
        if let Some(i) = facts.starting_at(enumeration.start_byte()) {
            facts.backing[i] = Some(backing.text());
        }
    }
    for &case in &scan.cases {
        let Some(name) = k.child(case, k.name, Role::Name) else { continue };
        if let Some(i) = facts.owning_type(name.start_byte()) {
            let value = k.any_child(case, k.value).map_or(Value::Null, |v| {
                let text = v.text();
                match (unquote(text), text.trim().parse::<i64>()) {
                    (Some(s), _) => json!(s),
                    (None, Ok(n)) => json!(n),
                    (None, Err(_)) => json!(text),
                }
            });
            facts.cases[i].push(json!({"name": name.text(), "value": value}));
        }
    }
    for &element in &scan.properties {
        let Some(name) = k.child(element, k.name, Role::VariableName) else { continue };
        if let Some(i) = facts.owning_type(name.start_byte()) {
            let value = k.any_child(element, k.default_value).map(NodeRef::text);
            facts.properties[i].push((name.text().trim_start_matches('$'), value));
        }
    }
    for &param in &scan.params {
        let Some(name) = k.child(param, k.name, Role::VariableName) else { continue };
        let inside = |i: &usize| facts.decls[*i].params.is_some_and(|p| p.contains_byte(name.start_byte()));
        if let Some(i) = facts.innermost(param.start_byte()).filter(inside) {
            let ty = k.any_child(param, k.type_).map(NodeRef::text);
            let promoted = k.role(param) == Role::PromotionParameter;
            facts.params[i].push((ty, name.text().trim_start_matches('$'), promoted));
        }
    }
    for &method in &scan.decls {
        if k.role(method) != Role::Decl(DeclKind::Method) {
            continue;
        }
        for array in casts_arrays(method, k) {
            if let Some(i) = facts.innermost(array.start_byte()).and_then(|m| facts.decls[m].parent) {
                facts.casts_method[i] = Some(array.text());
            }
        }
    }
    for (i, doc, text) in docs {
        let decl = &mut facts.decls[i];
        decl.docstring = Some(text);
        decl.outer = decl.outer.join(doc);
    }

    // Scopes: one per namespace (or the whole file), with their imports.
    let mut namespaces: Vec<(u32, String)> = scan
        .namespaces
        .iter()
        .filter_map(|ns| k.child(*ns, k.name, Role::NamespaceName).map(|name| (ns.start_byte(), name.text().to_string())))
        .collect();
    namespaces.sort();
    facts.scopes = vec![Scope::default()];
    facts.scopes.extend(namespaces.into_iter().map(|(start, namespace)| Scope { start, namespace, ..Scope::default() }));
    for statement in &scan.imports {
        let at = statement.start_byte();
        let i = facts.scopes.partition_point(|s| s.start <= at).saturating_sub(1);
        let scope = &mut facts.scopes[i];
        for (kind, target, alias) in parse_use(statement.text()) {
            let listed = if short(&target) == alias { target.clone() } else { format!("{target} as {alias}") };
            if !scope.listed.contains(&listed) {
                scope.listed.push(listed);
            }
            let table = if kind == "function" { &mut scope.functions } else { &mut scope.classes };
            if kind != "const" {
                import(table, alias.to_ascii_lowercase(), target);
            }
        }
    }
    // Fully qualified names.
    for i in 0..facts.decls.len() {
        let at = facts.decls[i].node.start_byte;
        let fqn = match (facts.decls[i].kind, facts.decls[i].parent) {
            (DeclKind::Method, Some(p)) => [facts.decls[p].fqn.as_str(), "::", &facts.decls[i].name].concat(),
            _ => qualified(&facts.scope_at(at).namespace, "\\", &facts.decls[i].name),
        };
        facts.decls[i].fqn = fqn;
    }
    facts
}

/// References (as written) and related symbols (resolved) of one chunk.
#[derive(Default)]
struct Uses<'a> {
    references: BTreeSet<&'a str>,
    related: BTreeSet<String>,
}

/// Uses per chunk: index `0` is the `script` chunk, `i + 1` declaration `i`.
fn collect_uses<'a>(scan: &Scan<'a>, facts: &Facts<'_>) -> Vec<Uses<'a>> {
    let mut per_owner: Vec<Uses<'a>> = (0..=facts.decls.len()).map(|_| Uses::default()).collect();
    for &(kind, node) in &scan.uses {
        let at = node.start_byte();
        let uses = &mut per_owner[facts.owner(at).map_or(0, |i| i + 1)];
        let text = node.text();
        match kind {
            UseKind::Class => {
                let written = text.trim();
                if let Some(fqcn) = facts.scope_at(at).resolve_class(written) {
                    uses.references.insert(short(written));
                    uses.related.insert(fqcn);
                }
            }
            UseKind::Function => {
                uses.references.insert(short(text.trim()));
                if let Some(full) = facts.scope_at(at).resolve_function(text.trim()) {
                    uses.related.insert(full);
                }
            }
            UseKind::Call => {
                uses.references.insert(text);
            }
        }
    }
    per_owner
}

/// One Eloquent relation found in a method.
struct Relation<'a> {
    method: usize,
    kind: &'a str,
    related: Option<String>,
    through: Option<String>,
}

fn collect_relations<'a>(scan: &Scan<'a>, k: &Kinds, facts: &Facts<'_>) -> Vec<Relation<'a>> {
    let mut relations = Vec::new();
    for &call in &scan.relations {
        let (Some(kind), Some(args)) =
            (k.child(call, k.name, Role::Name).map(NodeRef::text), k.child(call, k.arguments, Role::Arguments))
        else {
            continue;
        };
        let Some(method) = facts.innermost(call.start_byte()).filter(|&i| facts.decls[i].kind == DeclKind::Method) else {
            continue;
        };
        let scope = facts.scope_at(call.start_byte());
        let inner = args.text().trim().trim_start_matches('(').trim_end_matches(')');
        let arguments = split_top_level(inner, ',');
        let class_of = |arg: Option<&&str>| -> Option<String> {
            let arg = arg?.trim();
            // A named argument (`related: Post::class`) names its value after one colon.
            let arg = match arg.find(':') {
                Some(colon) if !arg[colon + 1..].starts_with(':') && !arg[..colon].contains(['\'', '"']) => arg[colon + 1..].trim(),
                _ => arg,
            };
            if let Some(class) = arg.strip_suffix("::class") {
                return scope.resolve_class(class);
            }
            unquote(arg).map(|s| s.trim_start_matches('\\').to_string())
        };
        let related = if kind == "morphTo" { None } else { class_of(arguments.first()) };
        let through = if THROUGH_RELATIONS.contains(&kind) { class_of(arguments.get(1)) } else { None };
        relations.push(Relation { method, kind, related, through });
    }
    relations
}

fn relation_json(r: &Relation<'_>, facts: &Facts<'_>) -> Value {
    let mut value = json!({"method": facts.decls[r.method].name, "type": r.kind, "related": r.related});
    if let Some(through) = &r.through {
        value["through"] = json!(through);
    }
    value
}

fn signature(decl: &Decl, source: &str) -> String {
    source.get(decl.header.0 as usize..decl.header.1 as usize).unwrap_or_default().trim().to_string()
}

/// The chunks of a PHP file; never an empty list for a file with text in
/// it (see [`nothing_read`]).
fn chunk_file(tree: &Tree, path: &str, source: &str) -> Result<ChunkOutcome, PluginError> {
    let nodes = tree.nodes(&[])?;
    let k = Kinds::of(&nodes);
    let has_errors = tree.has_errors();
    let errors: Vec<Span> = if has_errors { tree.matches("(ERROR) @error")?.captures("error").map(Span::of).collect() } else { Vec::new() };
    let scan = Scan::of(&nodes, &k, has_errors);
    let facts = collect(&scan, &k, &errors, source);
    let uses = collect_uses(&scan, &facts);
    let relations = collect_relations(&scan, &k, &facts);
    let decls = &facts.decls;
    let mut chunks = ChunkSet::new(source);

    let body_hole = |i: usize| -> Option<(std::ops::Range<usize>, &'static str)> {
        decls[i].body.map(|b| (b.start_byte as usize..b.end_byte as usize, "{ ... }"))
    };

    // Top-level code, if any: the `script` chunk. Top-level statements are
    // the file's and those of braced namespaces (`namespace X { ... }`).
    let namespace_bodies = scan.namespaces.iter().filter_map(|ns| k.child(*ns, k.body, Role::CompoundStatement));
    let top_code = scan
        .root
        .into_iter()
        .chain(namespace_bodies)
        .flat_map(NodeRef::children)
        .any(|statement| k.role(statement).is_code());
    if top_code {
        let holes: Vec<_> = (0..decls.len()).filter(|&i| decls[i].chunked && decls[i].parent.is_none()).filter_map(body_hole).collect();
        let file_name = path.rsplit('/').next().unwrap_or(path);
        let scope_imports: Vec<&str> = facts.scopes.iter().flat_map(|s| s.listed.iter().map(String::as_str)).collect();
        let namespace = facts.scopes.last().map(|s| s.namespace.as_str()).unwrap_or_default();
        let own = &uses[0];
        chunks.push(
            ChunkBuilder::new("script", file_name)
                .id("script")
                .span(LineIndex::new(source).span(0, u32::try_from(source.len()).unwrap_or(u32::MAX)))
                .content(elide(source, 0..source.len(), &holes))
                .references(own.references.iter().copied())
                .related_all(own.related.iter().map(String::as_str))
                .meta_opt("namespace", Some(namespace).filter(|n| !n.is_empty()))
                .meta_opt("imports", Some(scope_imports)),
        );
    }

    let mut ids: Vec<Option<String>> = vec![None; decls.len()];
    for (i, decl) in decls.iter().enumerate() {
        if !decl.chunked {
            continue;
        }
        let scope = facts.scope_at(decl.node.start_byte);
        let own = &uses[i + 1];
        let kind = decl.kind.chunk_kind();
        let id_name = match decl.kind {
            DeclKind::Method => [decl.parent.map_or("", |p| decls[p].name.as_str()), ".", &decl.name].concat(),
            _ => decl.fqn.clone(),
        };
        let header = source.get(decl.header.0 as usize..decl.name_start as usize).unwrap_or_default();
        let has_word = |word: &str| header.split_whitespace().any(|w| w.eq_ignore_ascii_case(word));
        let mut builder = ChunkBuilder::new(kind, decl.name.clone())
            .id([kind, ":", &id_name].concat())
            .qualified_name(decl.fqn.clone())
            .parent(decl.parent.and_then(|p| ids[p].clone()))
            .span(decl.outer)
            .signature(signature(decl, source))
            .docstring(decl.docstring.clone())
            .references(own.references.iter().copied())
            .related_all(own.related.iter().map(String::as_str));
        for modifier in ["abstract", "final", "readonly", "static"] {
            if has_word(modifier) {
                builder = builder.meta(modifier, true);
            }
        }
        if decl.recovered {
            builder = builder.meta("syntax_errors", true);
        }

        if decl.kind.is_type() {
            builder = type_chunk(builder, i, &facts, scope, &relations, source, &body_hole);
        } else if decl.kind == DeclKind::Method {
            let visibility = ["private", "protected", "public"].into_iter().find(|v| has_word(v));
            builder = builder.meta("visibility", visibility.unwrap_or("public"));
            if let Some(r) = relations.iter().find(|r| r.method == i) {
                builder = builder.meta("relation", relation_json(r, &facts)).related_all(r.related.clone()).related_all(r.through.clone());
            }
            if decl.name.eq_ignore_ascii_case("__construct") {
                let deps = dependencies(i, &facts, scope);
                builder = builder.related_all(deps.iter().map(|d| d["type"].as_str().unwrap_or_default().to_string()).collect::<Vec<_>>());
            }
        }
        ids[i] = Some(chunks.push(builder));
    }
    let chunks = chunks.finish();
    if chunks.is_empty() {
        return nothing_read(has_errors, &errors);
    }
    Ok(ChunkOutcome::Chunks(chunks))
}

/// What a non-empty PHP file that gave no chunk gets instead, so that it is
/// never left silently empty: with a syntax error, a plugin error at the
/// line where the last error ends, where parsing gave up (the start of a
/// cut file's error is often its first line), which the host records
/// before it indexes the file as lines;
/// without one (only comments, `namespace` and `use` lines, `declare` or
/// inline HTML: nothing this plugin chunks), a decline, which leaves it to
/// the line fallback.
fn nothing_read(has_errors: bool, errors: &[Span]) -> Result<ChunkOutcome, PluginError> {
    const MESSAGE: &str =
        "a syntax error left no declaration or top-level code to read (cut mid-edit?); indexed as lines until it parses";
    if let Some(error) = errors.iter().max_by_key(|e| e.end_byte) {
        return Err(PluginError::at_line(MESSAGE, error.end_line));
    }
    if has_errors {
        return Err(PluginError::new(MESSAGE));
    }
    // A file cut after its header (`namespace`, `use`) lands here too: the
    // reason names what such a file holds.
    Ok(ChunkOutcome::Decline(
        "no declaration or top-level code, only comments, namespace and use lines, declare or inline HTML: left to the line fallback".into(),
    ))
}

/// Constructor parameters whose types are classes: `{type, variable, promoted}`.
fn dependencies(constructor: usize, facts: &Facts<'_>, scope: &Scope) -> Vec<Value> {
    let mut deps = Vec::new();
    for &(ty, variable, promoted) in &facts.params[constructor] {
        let Some(ty) = ty else { continue };
        for name in type_names(ty) {
            if let Some(fqcn) = scope.resolve_class(name) {
                deps.push(json!({"type": fqcn, "variable": variable, "promoted": promoted}));
            }
        }
    }
    deps
}

fn type_chunk(
    mut builder: ChunkBuilder,
    i: usize,
    facts: &Facts<'_>,
    scope: &Scope,
    relations: &[Relation<'_>],
    source: &str,
    body_hole: &impl Fn(usize) -> Option<(std::ops::Range<usize>, &'static str)>,
) -> ChunkBuilder {
    let decls = &facts.decls;
    let decl = &decls[i];
    let resolve_all = |names: &[&str]| -> Vec<String> { names.iter().filter_map(|n| scope.resolve_class(n)).collect() };
    let members: Vec<usize> = (0..decls.len()).filter(|&m| decls[m].parent == Some(i)).collect();
    let holes: Vec<_> = members.iter().filter_map(|&m| body_hole(m)).collect();
    let extends = resolve_all(&facts.extends[i]);
    let implements = resolve_all(&facts.implements[i]);
    let traits = resolve_all(&facts.traits[i]);
    let written = [&facts.extends[i], &facts.implements[i], &facts.traits[i]];
    let written = written.into_iter().flatten().map(|n| short(n.trim()));
    builder = builder
        .references(written)
        .content(elide(source, decl.outer.range(), &holes))
        .related_all(extends.iter().map(String::as_str))
        .related_all(implements.iter().map(String::as_str))
        .related_all(traits.iter().map(String::as_str))
        .meta_opt("namespace", Some(scope.namespace.as_str()).filter(|n| !n.is_empty()))
        .meta_opt("imports", Some(scope.listed.as_slice()))
        .meta_opt("extends", Some(extends.as_slice()))
        .meta_opt("implements", Some(implements))
        .meta_opt("traits", Some(traits.as_slice()))
        .meta_opt("methods", Some(members.iter().map(|&m| decls[m].name.as_str()).collect::<Vec<_>>()));
    if let Some(backing) = facts.backing[i] {
        builder = builder.meta("backed_by", backing);
    }
    builder = builder.meta_opt("cases", Some(facts.cases[i].as_slice()));

    // Constructor dependency injection.
    if let Some(&constructor) = members.iter().find(|&&m| decls[m].name.eq_ignore_ascii_case("__construct")) {
        let deps = dependencies(constructor, facts, scope);
        builder = builder
            .related_all(deps.iter().map(|d| d["type"].as_str().unwrap_or_default().to_string()).collect::<Vec<_>>())
            .meta_opt("injected_dependencies", Some(deps));
    }

    // Eloquent.
    let own_relations: Vec<&Relation<'_>> = relations.iter().filter(|r| decls[r.method].parent == Some(i)).collect();
    for r in &own_relations {
        builder = builder.related_all(r.related.clone()).related_all(r.through.clone());
    }
    let is_model = extends.iter().any(|e| ELOQUENT_BASES.contains(&e.as_str()));
    if is_model {
        builder = builder.meta("eloquent_model", true);
    }
    builder = builder.meta_opt("relations", Some(own_relations.iter().map(|r| relation_json(r, facts)).collect::<Vec<_>>()));
    let properties = facts.properties[i].as_slice();
    for &(name, value) in properties {
        let Some(value) = value else { continue };
        if LIST_PROPERTIES.contains(&name) {
            let key = if name == "translatable" { "translatable_fields" } else { name };
            builder = builder.meta_opt(key, list_json(value, scope));
        } else if name == "casts" {
            builder = builder.meta_opt("casts", map_json(value, scope));
        } else if matches!(name, "table" | "primaryKey" | "connection") {
            builder = builder.meta_opt(name, unquote(value));
        }
    }
    if let Some(array) = facts.casts_method[i] {
        builder = builder.meta_opt("casts", map_json(array, scope));
    }
    let has_translations = traits.iter().any(|t| short(t) == "HasTranslations");
    if has_translations || properties.iter().any(|(n, _)| *n == "translatable") {
        builder = builder.meta("translatable", has_translations);
    }
    builder
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_keywords_before_a_name() {
        let at = |source: &str| type_keyword_before(source, u32::try_from(source.len()).unwrap());
        assert_eq!(at("<?php class "), Some((DeclKind::Class, 6)));
        assert_eq!(at("<?php\nfinal  readonly class\n  "), Some((DeclKind::Class, 6)));
        assert_eq!(at("} abstract CLASS "), Some((DeclKind::Class, 2)));
        assert_eq!(at("é interface "), Some((DeclKind::Interface, 3)));
        assert_eq!(at("trait "), Some((DeclKind::Trait, 0)));
        assert_eq!(at(";enum "), Some((DeclKind::Enum, 1)));
        for not_a_declaration in ["Foo::class ", "$x->class ", "$class ", "new class ", "subclass ", "classes ", "\\class ", "return "] {
            assert_eq!(at(not_a_declaration), None, "{not_a_declaration}");
        }
    }

    #[test]
    fn use_statements() {
        assert_eq!(parse_use("use App\\Models\\User;"), vec![("class", "App\\Models\\User".into(), "User".into())]);
        assert_eq!(
            parse_use("use App\\Models\\{User, Post as Article};"),
            vec![("class", "App\\Models\\User".into(), "User".into()), ("class", "App\\Models\\Post".into(), "Article".into())]
        );
        assert_eq!(
            parse_use("use function App\\Support\\money as fmt;"),
            vec![("function", "App\\Support\\money".into(), "fmt".into())]
        );
        assert_eq!(parse_use("use \\Foo\\Bar AS Baz, Qux;").len(), 2);
    }

    #[test]
    fn name_resolution() {
        let mut scope = Scope { namespace: "App\\Http".into(), ..Scope::default() };
        import(&mut scope.classes, "baz".into(), "Foo\\Bar".into());
        assert_eq!(scope.resolve_class("Baz").as_deref(), Some("Foo\\Bar"));
        assert_eq!(scope.resolve_class("Baz\\Inner").as_deref(), Some("Foo\\Bar\\Inner"));
        assert_eq!(scope.resolve_class("\\DateTime").as_deref(), Some("DateTime"));
        assert_eq!(scope.resolve_class("Request").as_deref(), Some("App\\Http\\Request"));
        assert_eq!(scope.resolve_class("string"), None);
        assert_eq!(scope.resolve_class("STRING"), None);
    }

    #[test]
    fn types_and_arrays() {
        assert_eq!(type_names("?LoggerInterface"), ["LoggerInterface"]);
        assert_eq!(type_names("(A&B)|null"), ["A", "B"]);
        assert_eq!(type_names("int|string"), Vec::<&str>::new());
        let scope = Scope::default();
        assert_eq!(list_json("['name', \"email\"]", &scope), Some(json!(["name", "email"])));
        assert_eq!(
            map_json("['paid_at' => 'datetime', 'status' => Status::class]", &scope),
            Some(json!({"paid_at": "datetime", "status": "Status"}))
        );
        assert_eq!(split_arrow("'a=>b' => 1"), (Some("'a=>b'"), "1"));
    }
}
