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
//! Blade templates (`*.blade.php`) are declined so that a Blade strategy or
//! the line fallback takes them. Parsing is the host's (`syntax` import).

use std::collections::{BTreeSet, HashMap};

use code_intel_plugin_sdk::text::{docblock, elide, split_top_level, unquote};
use code_intel_plugin_sdk::{
    ChunkBuilder, ChunkOutcome, ChunkSet, LineIndex, MatchSet, Plugin, PluginError, PluginInfo, SourceFile, Span,
    Tree, export_plugin, parse,
};
use serde_json::{Map, Value, json};

/// The plugin type exported to the host.
pub struct Php;

/// Priority among plugins matching `*.php`: the general PHP strategy, so that
/// Blade, Filament and migration strategies (higher numbers) are tried first.
const PRIORITY: i32 = 10;

/// Everything the plugin asks the host, in one query so that the tree is
/// walked once (several queries cost a walk each). Capture names tell the
/// patterns apart.
const QUERY: &str = r#"
; Declarations: @decl is a class, interface, trait, enum, function, method or
; anonymous class.
(class_declaration attributes: (attribute_list)? @attrs name: (name) @name body: (declaration_list) @body) @decl
(interface_declaration attributes: (attribute_list)? @attrs name: (name) @name body: (declaration_list) @body) @decl
(trait_declaration attributes: (attribute_list)? @attrs name: (name) @name body: (declaration_list) @body) @decl
(enum_declaration attributes: (attribute_list)? @attrs name: (name) @name body: (enum_declaration_list) @body) @decl
(function_definition attributes: (attribute_list)? @attrs name: (name) @name parameters: (formal_parameters) @params return_type: (_)? @ret body: (compound_statement) @body) @decl
(method_declaration attributes: (attribute_list)? @attrs name: (name) @name parameters: (formal_parameters) @params return_type: (_)? @ret body: (compound_statement)? @body) @decl
(anonymous_class) @decl

; Namespaces, imports, class clauses, docblocks, members and parameters.
(namespace_definition name: (namespace_name) @namespace) @ns
(namespace_use_declaration) @use
(base_clause [(name) (qualified_name) (relative_name)] @extends)
(class_interface_clause [(name) (qualified_name) (relative_name)] @implements)
(use_declaration [(name) (qualified_name) (relative_name)] @trait)
((comment) @doc . [(class_declaration) (interface_declaration) (trait_declaration) (enum_declaration) (function_definition) (method_declaration)] @documented)
(enum_declaration (primitive_type) @backing) @enum
(enum_case name: (name) @case value: (_)? @case_value)
(property_declaration (property_element name: (variable_name) @property default_value: (_)? @property_value))
(simple_parameter type: (_)? @param_type name: (variable_name) @param_name) @param
(property_promotion_parameter type: (_)? @param_type name: (variable_name) @param_name) @promoted
(method_declaration name: (name) @casts_method body: (compound_statement (return_statement (array_creation_expression) @casts_array)) (#eq? @casts_method "casts"))

; Names used in code.
(named_type [(name) (qualified_name) (relative_name)] @class)
(object_creation_expression [(name) (qualified_name) (relative_name)] @class)
(scoped_call_expression scope: [(name) (qualified_name) (relative_name)] @class name: (name) @call)
(class_constant_access_expression . [(name) (qualified_name) (relative_name)] @class)
(scoped_property_access_expression scope: [(name) (qualified_name) (relative_name)] @class)
(attribute [(name) (qualified_name)] @class)
(binary_expression operator: "instanceof" right: [(name) (qualified_name) (relative_name)] @class)
(function_call_expression function: [(name) (qualified_name) (relative_name)] @function)
(member_call_expression name: (name) @call)
(nullsafe_member_call_expression name: (name) @call)

; Eloquent relations: `$this->hasMany(...)` and friends.
(member_call_expression
  object: (variable_name) @object
  name: (name) @relation
  arguments: (arguments) @args
  (#eq? @object "$this")
  (#any-of? @relation "hasOne" "hasMany" "belongsTo" "belongsToMany" "hasOneThrough" "hasManyThrough" "morphOne" "morphMany" "morphTo" "morphToMany" "morphedByMany")) @relation.call

; Top-level statements (directly in the file or in a braced namespace).
(program (_) @top)
(namespace_definition body: (compound_statement (_) @top))
"#;





/// Statements that are not "top-level code" for the `script` chunk.
const NOT_CODE: &[&str] = &[
    "php_tag", "text", "text_interpolation", "comment", "namespace_definition", "namespace_use_declaration",
    "declare_statement", "empty_statement", "class_declaration", "interface_declaration", "trait_declaration",
    "enum_declaration", "function_definition",
];

/// Type names that are not classes: never dependencies or references.
const SCALARS: &[&str] = &[
    "int", "integer", "float", "double", "string", "bool", "boolean", "array", "mixed", "null", "callable",
    "iterable", "object", "void", "never", "false", "true", "self", "static", "parent",
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
    fn from_node_kind(kind: &str) -> Self {
        match kind {
            "class_declaration" => Self::Class,
            "interface_declaration" => Self::Interface,
            "trait_declaration" => Self::Trait,
            "enum_declaration" => Self::Enum,
            "function_definition" => Self::Function,
            "method_declaration" => Self::Method,
            _ => Self::Anonymous,
        }
    }

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
}

/// One namespace region and the imports made in it.
#[derive(Default)]
struct Scope {
    start: u32,
    namespace: String,
    /// Lowercased alias -> FQCN.
    classes: HashMap<String, String>,
    /// Lowercased alias -> fully qualified function name.
    functions: HashMap<String, String>,
    /// Imports as written, resolved: `Foo\Bar as Baz`.
    listed: Vec<String>,
}

impl Scope {
    /// FQCN of a class name written in this scope, `None` for scalars and
    /// `self`/`static`/`parent` (the caller knows what those mean).
    fn resolve_class(&self, written: &str) -> Option<String> {
        let written = written.trim();
        if written.is_empty() || SCALARS.contains(&written.to_ascii_lowercase().as_str()) {
            return None;
        }
        if let Some(full) = written.strip_prefix('\\') {
            return Some(full.to_string());
        }
        if let Some(rest) = written.strip_prefix("namespace\\") {
            return Some(qualify(&self.namespace, rest));
        }
        let (first, rest) = written.split_once('\\').map_or((written, None), |(f, r)| (f, Some(r)));
        if let Some(target) = self.classes.get(&first.to_ascii_lowercase()) {
            return Some(rest.map_or_else(|| target.clone(), |r| format!("{target}\\{r}")));
        }
        Some(qualify(&self.namespace, written))
    }

    /// Fully qualified name of a function call, when an import says it.
    fn resolve_function(&self, written: &str) -> Option<String> {
        if let Some(full) = written.strip_prefix('\\') {
            return Some(full.to_string());
        }
        self.functions.get(&written.to_ascii_lowercase()).cloned()
    }
}

fn qualify(namespace: &str, name: &str) -> String {
    if namespace.is_empty() { name.to_string() } else { format!("{namespace}\\{name}") }
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
        .filter(|t| !t.is_empty() && !SCALARS.contains(&t.to_ascii_lowercase().as_str()))
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
        Ok(ChunkOutcome::Chunks(chunk_file(&tree, &file.path, &file.content)?))
    }
}

export_plugin!(Php);

/// Everything the queries say about the file, matched to declarations.
struct Facts {
    decls: Vec<Decl>,
    scopes: Vec<Scope>,
    /// Per declaration index.
    extends: HashMap<usize, Vec<String>>,
    implements: HashMap<usize, Vec<String>>,
    traits: HashMap<usize, Vec<String>>,
    backing: HashMap<usize, String>,
    cases: HashMap<usize, Vec<Value>>,
    properties: HashMap<usize, Vec<(String, Option<String>)>>,
    /// Per method index: (type, variable, promoted).
    params: HashMap<usize, Vec<(Option<String>, String, bool)>>,
    casts_method: HashMap<usize, String>,
}

impl Facts {
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
}

fn collect(matches: &MatchSet<'_>) -> Facts {
    let mut decls = Vec::new();
    for m in matches {
        let Some(node) = m.get("decl") else { continue };
        let kind = DeclKind::from_node_kind(node.kind);
        let name = m.get("name");
        let start = m.get("attrs").map_or(node.start_byte, |a| a.end_byte);
        let end = match kind {
            DeclKind::Function | DeclKind::Method => {
                m.get("ret").or_else(|| m.get("params")).map_or(node.end_byte, |c| c.end_byte)
            }
            _ => m.get("body").map_or(node.end_byte, |c| c.start_byte),
        };
        decls.push(Decl {
            kind,
            name: name.map_or_else(|| "class@anonymous".to_string(), |n| n.text.to_string()),
            node: Span::of(node),
            outer: Span::of(node),
            header: (start, end),
            name_start: name.map_or(node.start_byte, |n| n.start_byte),
            body: m.get("body").map(Span::of),
            params: m.get("params").map(Span::of),
            docstring: None,
            parent: None,
            chunked: false,
            fqn: String::new(),
        });
    }
    decls.sort_by_key(|d| (d.node.start_byte, std::cmp::Reverse(d.node.end_byte)));

    let mut facts = Facts {
        decls,
        scopes: Vec::new(),
        extends: HashMap::new(),
        implements: HashMap::new(),
        traits: HashMap::new(),
        backing: HashMap::new(),
        cases: HashMap::new(),
        properties: HashMap::new(),
        params: HashMap::new(),
        casts_method: HashMap::new(),
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

    let by_start: HashMap<u32, usize> = facts.decls.iter().enumerate().map(|(i, d)| (d.node.start_byte, i)).collect();
    let mut namespaces: Vec<(u32, String)> = Vec::new();
    let mut uses: Vec<(u32, String)> = Vec::new();
    let mut docs: Vec<(usize, Span, String)> = Vec::new();
    for m in matches {
        let at = m.captures().next().map_or(0, |c| c.start_byte);
        if let (Some(ns), Some(name)) = (m.get("ns"), m.get("namespace")) {
            namespaces.push((ns.start_byte, name.text.to_string()));
        } else if let Some(u) = m.get("use") {
            uses.push((u.start_byte, u.text.to_string()));
        } else if let Some(c) = m.get("extends") {
            if let Some(i) = facts.innermost(c.start_byte) {
                facts.extends.entry(i).or_default().push(c.text.to_string());
            }
        } else if let Some(c) = m.get("implements") {
            if let Some(i) = facts.innermost(c.start_byte) {
                facts.implements.entry(i).or_default().push(c.text.to_string());
            }
        } else if let Some(c) = m.get("trait") {
            if let Some(i) = facts.owning_type(c.start_byte) {
                facts.traits.entry(i).or_default().push(c.text.to_string());
            }
        } else if let (Some(doc), Some(decl)) = (m.get("doc"), m.get("documented")) {
            if let (Some(&i), Some(text)) = (by_start.get(&decl.start_byte), docblock(doc.text)) {
                docs.push((i, Span::of(doc), text));
            }
        } else if let (Some(e), Some(backing)) = (m.get("enum"), m.get("backing")) {
            if let Some(&i) = by_start.get(&e.start_byte) {
                facts.backing.insert(i, backing.text.to_string());
            }
        } else if let Some(case) = m.get("case") {
            if let Some(i) = facts.owning_type(case.start_byte) {
                let value = m.get("case_value").map_or(Value::Null, |v| match (unquote(v.text), v.text.trim().parse::<i64>()) {
                    (Some(s), _) => json!(s),
                    (None, Ok(n)) => json!(n),
                    (None, Err(_)) => json!(v.text),
                });
                facts.cases.entry(i).or_default().push(json!({"name": case.text, "value": value}));
            }
        } else if let Some(p) = m.get("property") {
            if let Some(i) = facts.owning_type(p.start_byte) {
                let name = p.text.trim_start_matches('$').to_string();
                facts.properties.entry(i).or_default().push((name, m.text("property_value").map(str::to_string)));
            }
        } else if let Some(name) = m.get("param_name") {
            if let Some(i) = facts.innermost(at).filter(|&i| facts.decls[i].params.is_some_and(|p| p.contains_byte(name.start_byte))) {
                let ty = m.text("param_type").map(str::to_string);
                let promoted = m.get("promoted").is_some();
                facts.params.entry(i).or_default().push((ty, name.text.trim_start_matches('$').to_string(), promoted));
            }
        } else if let Some(array) = m.get("casts_array")
            && let Some(i) = facts.innermost(array.start_byte).and_then(|m| facts.decls[m].parent) {
                facts.casts_method.insert(i, array.text.to_string());
            }
    }
    for (i, doc, text) in docs {
        let decl = &mut facts.decls[i];
        decl.docstring = Some(text);
        decl.outer = decl.outer.join(doc);
    }

    // Scopes: one per namespace (or the whole file), with their imports.
    namespaces.sort();
    facts.scopes = if namespaces.is_empty() {
        vec![Scope::default()]
    } else {
        let mut scopes = vec![Scope::default()];
        scopes.extend(namespaces.into_iter().map(|(start, namespace)| Scope { start, namespace, ..Scope::default() }));
        scopes
    };
    for (at, text) in uses {
        let i = facts.scopes.partition_point(|s| s.start <= at).saturating_sub(1);
        let scope = &mut facts.scopes[i];
        for (kind, target, alias) in parse_use(&text) {
            let listed = if short(&target) == alias { target.clone() } else { format!("{target} as {alias}") };
            if !scope.listed.contains(&listed) {
                scope.listed.push(listed);
            }
            let table = if kind == "function" { &mut scope.functions } else { &mut scope.classes };
            if kind != "const" {
                table.insert(alias.to_ascii_lowercase(), target);
            }
        }
    }
    // Fully qualified names.
    for i in 0..facts.decls.len() {
        let at = facts.decls[i].node.start_byte;
        let fqn = match (facts.decls[i].kind, facts.decls[i].parent) {
            (DeclKind::Method, Some(p)) => format!("{}::{}", facts.decls[p].fqn, facts.decls[i].name),
            _ => qualify(&facts.scope_at(at).namespace, &facts.decls[i].name),
        };
        facts.decls[i].fqn = fqn;
    }
    facts
}

/// References (as written) and related symbols (resolved) per chunk owner.
#[derive(Default)]
struct Uses {
    references: BTreeSet<String>,
    related: BTreeSet<String>,
}

fn collect_uses(matches: &MatchSet<'_>, facts: &Facts) -> HashMap<Option<usize>, Uses> {
    let mut per_owner: HashMap<Option<usize>, Uses> = HashMap::new();
    for m in matches {
        for c in m.captures() {
            let owner = facts.owner(c.start_byte);
            let scope = facts.scope_at(c.start_byte);
            let uses = per_owner.entry(owner).or_default();
            match c.name {
                "class" => {
                    let written = c.text.trim();
                    if let Some(fqcn) = scope.resolve_class(written) {
                        uses.references.insert(short(written).to_string());
                        uses.related.insert(fqcn);
                    }
                }
                "function" => {
                    uses.references.insert(short(c.text.trim()).to_string());
                    if let Some(full) = scope.resolve_function(c.text.trim()) {
                        uses.related.insert(full);
                    }
                }
                "call" => {
                    uses.references.insert(c.text.to_string());
                }
                _ => {}
            }
        }
    }
    per_owner
}

/// One Eloquent relation found in a method.
struct Relation {
    method: usize,
    kind: String,
    related: Option<String>,
    through: Option<String>,
}

fn collect_relations(matches: &MatchSet<'_>, facts: &Facts) -> Vec<Relation> {
    let mut relations = Vec::new();
    for m in matches {
        let (Some(call), Some(kind), Some(args)) = (m.get("relation.call"), m.text("relation"), m.get("args")) else { continue };
        let Some(method) = facts.innermost(call.start_byte).filter(|&i| facts.decls[i].kind == DeclKind::Method) else {
            continue;
        };
        let scope = facts.scope_at(call.start_byte);
        let inner = args.text.trim().trim_start_matches('(').trim_end_matches(')');
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
        relations.push(Relation { method, kind: kind.to_string(), related, through });
    }
    relations
}

fn relation_json(r: &Relation, facts: &Facts) -> Value {
    let mut value = json!({"method": facts.decls[r.method].name, "type": r.kind, "related": r.related});
    if let Some(through) = &r.through {
        value["through"] = json!(through);
    }
    value
}

fn signature(decl: &Decl, source: &str) -> String {
    source.get(decl.header.0 as usize..decl.header.1 as usize).unwrap_or_default().trim().to_string()
}

fn chunk_file(tree: &Tree, path: &str, source: &str) -> Result<Vec<code_intel_plugin_sdk::Chunk>, PluginError> {
    let matches = tree.matches(QUERY)?;
    let facts = collect(&matches);
    let uses = collect_uses(&matches, &facts);
    let relations = collect_relations(&matches, &facts);
    let decls = &facts.decls;
    let mut chunks = ChunkSet::new(source);
    let lines = LineIndex::new(source);

    let body_hole = |i: usize| -> Option<(std::ops::Range<usize>, &'static str)> {
        decls[i].body.map(|b| (b.start_byte as usize..b.end_byte as usize, "{ ... }"))
    };

    // Top-level code, if any: the `script` chunk.
    let top_code = matches
        .iter()
        .filter_map(|m| m.get("top"))
        .any(|c| !NOT_CODE.contains(&c.kind));
    if top_code {
        let holes: Vec<_> = (0..decls.len()).filter(|&i| decls[i].chunked && decls[i].parent.is_none()).filter_map(body_hole).collect();
        let file_name = path.rsplit('/').next().unwrap_or(path);
        let scope_imports: Vec<String> = facts.scopes.iter().flat_map(|s| s.listed.iter().cloned()).collect();
        let namespace = facts.scopes.last().map(|s| s.namespace.clone()).unwrap_or_default();
        let own = uses.get(&None);
        chunks.push(
            ChunkBuilder::new("script", file_name)
                .id("script")
                .span(lines.span(0, u32::try_from(source.len()).unwrap_or(u32::MAX)))
                .content(elide(source, 0..source.len(), &holes))
                .references(own.map(|u| u.references.iter().cloned().collect::<Vec<_>>()).unwrap_or_default())
                .related_all(own.map(|u| u.related.iter().cloned().collect::<Vec<_>>()).unwrap_or_default())
                .meta_opt("namespace", Some(namespace).filter(|n| !n.is_empty()))
                .meta_opt("imports", Some(scope_imports)),
        );
    }

    let mut ids: HashMap<usize, String> = HashMap::new();
    for (i, decl) in decls.iter().enumerate() {
        if !decl.chunked {
            continue;
        }
        let scope = facts.scope_at(decl.node.start_byte);
        let own = uses.get(&Some(i));
        let kind = decl.kind.chunk_kind();
        let id_name = match decl.kind {
            DeclKind::Method => format!("{}.{}", decl.parent.map_or("", |p| decls[p].name.as_str()), decl.name),
            _ => decl.fqn.clone(),
        };
        let header = source.get(decl.header.0 as usize..decl.name_start as usize).unwrap_or_default().to_ascii_lowercase();
        let mut builder = ChunkBuilder::new(kind, decl.name.clone())
            .id(format!("{kind}:{id_name}"))
            .qualified_name(decl.fqn.clone())
            .parent(decl.parent.and_then(|p| ids.get(&p).cloned()))
            .span(decl.outer)
            .signature(signature(decl, source))
            .docstring(decl.docstring.clone())
            .references(own.map(|u| u.references.iter().cloned().collect::<Vec<_>>()).unwrap_or_default())
            .related_all(own.map(|u| u.related.iter().cloned().collect::<Vec<_>>()).unwrap_or_default());
        for modifier in ["abstract", "final", "readonly", "static"] {
            if header.split_whitespace().any(|w| w == modifier) {
                builder = builder.meta(modifier, true);
            }
        }

        if decl.kind.is_type() {
            builder = type_chunk(builder, i, &facts, scope, &relations, source, &body_hole);
        } else if decl.kind == DeclKind::Method {
            let visibility = ["private", "protected", "public"].into_iter().find(|v| header.split_whitespace().any(|w| w == *v));
            builder = builder.meta("visibility", visibility.unwrap_or("public"));
            if let Some(r) = relations.iter().find(|r| r.method == i) {
                builder = builder.meta("relation", relation_json(r, &facts)).related_all(r.related.clone()).related_all(r.through.clone());
            }
            if decl.name.eq_ignore_ascii_case("__construct") {
                let deps = dependencies(i, &facts, scope);
                builder = builder.related_all(deps.iter().map(|d| d["type"].as_str().unwrap_or_default().to_string()).collect::<Vec<_>>());
            }
        }
        let id = chunks.push(builder);
        ids.insert(i, id);
    }
    Ok(chunks.finish())
}

/// Constructor parameters whose types are classes: `{type, variable, promoted}`.
fn dependencies(constructor: usize, facts: &Facts, scope: &Scope) -> Vec<Value> {
    let mut deps = Vec::new();
    for (ty, variable, promoted) in facts.params.get(&constructor).into_iter().flatten() {
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
    facts: &Facts,
    scope: &Scope,
    relations: &[Relation],
    source: &str,
    body_hole: &impl Fn(usize) -> Option<(std::ops::Range<usize>, &'static str)>,
) -> ChunkBuilder {
    let decls = &facts.decls;
    let decl = &decls[i];
    let resolve_all = |names: Option<&Vec<String>>| -> Vec<String> {
        names.into_iter().flatten().filter_map(|n| scope.resolve_class(n)).collect()
    };
    let members: Vec<usize> = (0..decls.len()).filter(|&m| decls[m].parent == Some(i)).collect();
    let holes: Vec<_> = members.iter().filter_map(|&m| body_hole(m)).collect();
    let extends = resolve_all(facts.extends.get(&i));
    let implements = resolve_all(facts.implements.get(&i));
    let traits = resolve_all(facts.traits.get(&i));
    let written = [&facts.extends, &facts.implements, &facts.traits];
    let written: Vec<String> = written.iter().filter_map(|m| m.get(&i)).flatten().map(|n| short(n.trim()).to_string()).collect();
    builder = builder
        .references(written)
        .content(elide(source, decl.outer.range(), &holes))
        .related_all(extends.clone())
        .related_all(implements.clone())
        .related_all(traits.clone())
        .meta_opt("namespace", Some(scope.namespace.clone()).filter(|n| !n.is_empty()))
        .meta_opt("imports", Some(scope.listed.clone()))
        .meta_opt("extends", Some(extends.clone()))
        .meta_opt("implements", Some(implements))
        .meta_opt("traits", Some(traits.clone()))
        .meta_opt("methods", Some(members.iter().map(|&m| json!(decls[m].name)).collect::<Vec<_>>()));
    if let Some(backing) = facts.backing.get(&i) {
        builder = builder.meta("backed_by", backing.as_str());
    }
    builder = builder.meta_opt("cases", facts.cases.get(&i).cloned());

    // Constructor dependency injection.
    if let Some(&constructor) = members.iter().find(|&&m| decls[m].name.eq_ignore_ascii_case("__construct")) {
        let deps = dependencies(constructor, facts, scope);
        builder = builder
            .related_all(deps.iter().map(|d| d["type"].as_str().unwrap_or_default().to_string()).collect::<Vec<_>>())
            .meta_opt("injected_dependencies", Some(deps));
    }

    // Eloquent.
    let own_relations: Vec<&Relation> = relations.iter().filter(|r| decls[r.method].parent == Some(i)).collect();
    for r in &own_relations {
        builder = builder.related_all(r.related.clone()).related_all(r.through.clone());
    }
    let is_model = extends.iter().any(|e| ELOQUENT_BASES.contains(&e.as_str()));
    if is_model {
        builder = builder.meta("eloquent_model", true);
    }
    builder = builder.meta_opt("relations", Some(own_relations.iter().map(|r| relation_json(r, facts)).collect::<Vec<_>>()));
    let properties = facts.properties.get(&i).map(Vec::as_slice).unwrap_or_default();
    for (name, value) in properties {
        let Some(value) = value else { continue };
        if LIST_PROPERTIES.contains(&name.as_str()) {
            let key = if name == "translatable" { "translatable_fields" } else { name.as_str() };
            builder = builder.meta_opt(key, list_json(value, scope));
        } else if name == "casts" {
            builder = builder.meta_opt("casts", map_json(value, scope));
        } else if matches!(name.as_str(), "table" | "primaryKey" | "connection") {
            builder = builder.meta_opt(name, unquote(value).map(str::to_string));
        }
    }
    if let Some(array) = facts.casts_method.get(&i) {
        builder = builder.meta_opt("casts", map_json(array, scope));
    }
    let has_translations = traits.iter().any(|t| short(t) == "HasTranslations");
    if has_translations || properties.iter().any(|(n, _)| n == "translatable") {
        builder = builder.meta("translatable", has_translations);
    }
    builder
}

#[cfg(test)]
mod tests {
    use super::*;

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
        scope.classes.insert("baz".into(), "Foo\\Bar".into());
        assert_eq!(scope.resolve_class("Baz").as_deref(), Some("Foo\\Bar"));
        assert_eq!(scope.resolve_class("Baz\\Inner").as_deref(), Some("Foo\\Bar\\Inner"));
        assert_eq!(scope.resolve_class("\\DateTime").as_deref(), Some("DateTime"));
        assert_eq!(scope.resolve_class("Request").as_deref(), Some("App\\Http\\Request"));
        assert_eq!(scope.resolve_class("string"), None);
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
