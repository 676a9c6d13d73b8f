//! The structure of a PHP file, from the host's `php` grammar: namespace,
//! imports, classes with their methods and properties, and the definition
//! chunks (class skeleton + methods) every PHP file should yield.

use std::collections::BTreeMap;

use code_intel_plugin_sdk::text::{docblock, elide, one_line, split_top_level, unquote};
use code_intel_plugin_sdk::{ChunkBuilder, Matches, PluginError, QueryMatch, Span, Tree, parse};

use crate::calls::{self, Calls};

/// Classes, with their name and body (named and anonymous, e.g. migrations'
/// `return new class extends Migration { ... }`).
const CLASSES: &str = "
(class_declaration name: (name) @name body: (declaration_list) @body) @class
(anonymous_class body: (declaration_list) @body) @class
";

/// `extends X` of a class (named or anonymous).
const BASES: &str = "
(class_declaration (base_clause (_) @base)) @class
(anonymous_class (base_clause (_) @base)) @class
";

/// `implements A, B`.
const INTERFACES: &str = "(class_interface_clause (_) @iface)";

/// `use Trait;` inside a class body.
const TRAITS: &str = "(declaration_list (use_declaration (_) @trait))";

/// File-level `use` statements (parsed from their text: plain, aliased, grouped).
const USES: &str = "(namespace_use_declaration) @use";

const NAMESPACE: &str = "(namespace_definition name: (namespace_name) @ns)";

const METHODS: &str = "
(method_declaration name: (name) @name parameters: (formal_parameters) @params) @method
";
const METHOD_BODIES: &str = "(method_declaration body: (compound_statement) @body) @method";
const METHOD_RETURNS: &str = "(method_declaration return_type: (_) @ret) @method";

/// A docblock directly before a declaration.
const DOCS: &str = "
((comment) @doc . (method_declaration) @decl)
((comment) @doc . (property_declaration) @decl)
((comment) @doc . (class_declaration) @decl)
";

const PROPERTIES: &str = "(property_declaration (property_element name: (variable_name (name) @name))) @prop";
const PROPERTY_VALUES: &str =
    "(property_declaration (property_element name: (variable_name (name) @name) default_value: (_) @value)) @prop";

/// Type names that are not classes (never related symbols).
const SCALAR_TYPES: &[&str] = &[
    "string", "int", "integer", "float", "double", "bool", "boolean", "array", "mixed", "null", "void", "never",
    "callable", "iterable", "object", "false", "true", "self", "static", "parent",
];

/// A method of a class.
#[derive(Clone, Debug)]
pub struct MethodInfo {
    pub name: String,
    pub span: Span,
    /// The `{ ... }` body; `None` for abstract and interface methods.
    pub body: Option<Span>,
    /// Declaration up to the body, on one line.
    pub signature: String,
    /// Inside of the parentheses of the parameter list.
    pub params: String,
    pub return_type: Option<String>,
    pub doc: Option<String>,
    pub is_static: bool,
}

/// A property of a class.
#[derive(Clone, Debug)]
pub struct PropertyInfo {
    /// Without the `$`.
    pub name: String,
    pub span: Span,
    /// Source text of the default value.
    pub value: Option<String>,
    pub is_static: bool,
}

/// A class declaration (or an anonymous class).
#[derive(Clone, Debug)]
pub struct ClassInfo {
    /// `None` for an anonymous class.
    pub name: Option<String>,
    pub fqcn: Option<String>,
    pub span: Span,
    pub body: Span,
    /// `extends` as written, and resolved.
    pub base: Option<String>,
    pub base_fqcn: Option<String>,
    pub interfaces: Vec<String>,
    pub traits: Vec<String>,
    pub doc: Option<String>,
    pub methods: Vec<MethodInfo>,
    pub properties: Vec<PropertyInfo>,
}

impl ClassInfo {
    /// The method named `name`.
    #[must_use]
    pub fn method(&self, name: &str) -> Option<&MethodInfo> {
        self.methods.iter().find(|m| m.name == name)
    }

    /// The property named `name` (without `$`).
    #[must_use]
    pub fn property(&self, name: &str) -> Option<&PropertyInfo> {
        self.properties.iter().find(|p| p.name == name)
    }

    /// Short name of the base class (`Resource` for `Filament\Resources\Resource`).
    #[must_use]
    pub fn base_short(&self) -> Option<&str> {
        self.base.as_deref().map(|b| b.rsplit('\\').next().unwrap_or(b))
    }
}

/// A parsed PHP file with its namespace, imports and classes.
pub struct PhpFile<'s> {
    pub source: &'s str,
    pub tree: Tree,
    pub namespace: Option<String>,
    /// Alias (last segment or `as` name) -> fully qualified name.
    pub imports: BTreeMap<String, String>,
    pub classes: Vec<ClassInfo>,
    /// Every call of the file (see [`Calls`]).
    pub calls: Calls,
}

/// The queries [`PhpFile::parse`] runs, in the order they are concatenated
/// into one query (one tree walk per file), with their pattern counts.
const GROUPS: &[(&str, u32)] = &[
    (CLASSES, 2),
    (BASES, 2),
    (INTERFACES, 1),
    (TRAITS, 1),
    (USES, 1),
    (NAMESPACE, 1),
    (METHODS, 1),
    (METHOD_BODIES, 1),
    (METHOD_RETURNS, 1),
    (DOCS, 3),
    (PROPERTIES, 1),
    (PROPERTY_VALUES, 1),
    (calls::CALLS, 3),
];

/// The matches of one query of [`GROUPS`], patterns renumbered from 0.
struct Grouped {
    groups: Vec<Vec<QueryMatch>>,
}

impl Grouped {
    fn run(tree: &Tree) -> Result<Self, PluginError> {
        let query: String = GROUPS.iter().map(|(q, _)| *q).collect::<Vec<_>>().join("\n");
        let mut starts = Vec::with_capacity(GROUPS.len());
        let mut at = 0;
        for (_, count) in GROUPS {
            starts.push(at);
            at += count;
        }
        let mut groups: Vec<Vec<QueryMatch>> = vec![Vec::new(); GROUPS.len()];
        for mut m in tree.query(&query)? {
            let group = starts.partition_point(|&s| s <= m.pattern) - 1;
            m.pattern -= starts[group];
            groups[group].push(m);
        }
        Ok(Self { groups })
    }

    fn take(&mut self, query: &str) -> Vec<QueryMatch> {
        let index = GROUPS.iter().position(|(q, _)| *q == query).expect("query is one of GROUPS");
        std::mem::take(&mut self.groups[index])
    }

    fn captures(&mut self, query: &str, name: &str) -> Vec<code_intel_plugin_sdk::Capture> {
        self.take(query).into_iter().flat_map(|m| m.captures.into_iter().filter(|c| c.name == name)).collect()
    }
}

impl<'s> PhpFile<'s> {
    /// Parses `source` with the host's `php` grammar and collects its structure.
    ///
    /// # Errors
    /// The host cannot parse PHP, or a query is broken (a plugin bug).
    pub fn parse(source: &'s str) -> Result<Self, PluginError> {
        let tree = parse("php", source)?;
        let mut grouped = Grouped::run(&tree)?;
        let namespace = grouped.captures(NAMESPACE, "ns").first().map(|c| c.text.clone());
        let mut imports = BTreeMap::new();
        for capture in grouped.captures(USES, "use") {
            parse_use(&capture.text, &mut imports);
        }
        let calls = Calls::from_matches(grouped.take(calls::CALLS));
        let mut file = Self { source, tree, namespace, imports, classes: Vec::new(), calls };
        file.classes = file.collect_classes(&mut grouped);
        Ok(file)
    }

    fn collect_classes(&self, grouped: &mut Grouped) -> Vec<ClassInfo> {
        let mut classes = Vec::new();
        for m in grouped.take(CLASSES) {
            let (Some(class), Some(body)) = (m.get("class"), m.get("body")) else { continue };
            let name = m.text("name").map(str::to_string);
            let fqcn = name.as_ref().map(|n| self.qualify(n));
            classes.push(ClassInfo {
                name,
                fqcn,
                span: Span::of(class),
                body: Span::of(body),
                base: None,
                base_fqcn: None,
                interfaces: Vec::new(),
                traits: Vec::new(),
                doc: None,
                methods: Vec::new(),
                properties: Vec::new(),
            });
        }
        for m in grouped.take(BASES) {
            let (Some(class), Some(base)) = (m.get("class"), m.get("base")) else { continue };
            if let Some(c) = classes.iter_mut().find(|c| c.span == Span::of(class)) {
                c.base = Some(base.text.clone());
                c.base_fqcn = Some(self.resolve(&base.text));
            }
        }
        for capture in grouped.captures(INTERFACES, "iface") {
            if let Some(c) = innermost_mut(&mut classes, Span::of(&capture)) {
                let resolved = self.resolve(&capture.text);
                c.interfaces.push(resolved);
            }
        }
        for capture in grouped.captures(TRAITS, "trait") {
            if let Some(c) = innermost_body_mut(&mut classes, Span::of(&capture)) {
                let resolved = self.resolve(&capture.text);
                c.traits.push(resolved);
            }
        }
        let mut docs: BTreeMap<u32, String> = BTreeMap::new();
        for m in grouped.take(DOCS) {
            let (Some(doc), Some(decl)) = (m.get("doc"), m.get("decl")) else { continue };
            if let Some(text) = docblock(&doc.text) {
                docs.insert(decl.start_byte, text);
            }
        }
        let mut bodies: BTreeMap<u32, Span> = BTreeMap::new();
        for m in grouped.take(METHOD_BODIES) {
            if let (Some(method), Some(body)) = (m.get("method"), m.get("body")) {
                bodies.insert(method.start_byte, Span::of(body));
            }
        }
        let mut returns: BTreeMap<u32, String> = BTreeMap::new();
        for m in grouped.take(METHOD_RETURNS) {
            if let (Some(method), Some(ret)) = (m.get("method"), m.get("ret")) {
                returns.insert(method.start_byte, ret.text.clone());
            }
        }
        for m in grouped.take(METHODS) {
            let (Some(method), Some(name), Some(params)) = (m.get("method"), m.get("name"), m.get("params")) else { continue };
            let span = Span::of(method);
            let body = bodies.get(&method.start_byte).copied();
            let head_end = body.map_or(span.end_byte, |b| b.start_byte) as usize;
            let head = self.source.get(span.start_byte as usize..head_end).unwrap_or_default();
            let params_inner = params.text.trim().strip_prefix('(').and_then(|p| p.strip_suffix(')')).unwrap_or(&params.text);
            let info = MethodInfo {
                name: name.text.clone(),
                span,
                body,
                signature: one_line(head.trim_end_matches(';')),
                params: params_inner.to_string(),
                return_type: returns.get(&method.start_byte).cloned(),
                doc: docs.get(&method.start_byte).cloned(),
                is_static: head.split_whitespace().take_while(|w| *w != "function").any(|w| w == "static"),
            };
            if let Some(c) = innermost_body_mut(&mut classes, span) {
                c.methods.push(info);
            }
        }
        let mut values: BTreeMap<(u32, String), String> = BTreeMap::new();
        for m in grouped.take(PROPERTY_VALUES) {
            if let (Some(prop), Some(name), Some(value)) = (m.get("prop"), m.get("name"), m.get("value")) {
                values.insert((prop.start_byte, name.text.clone()), value.text.clone());
            }
        }
        for m in grouped.take(PROPERTIES) {
            let (Some(prop), Some(name)) = (m.get("prop"), m.get("name")) else { continue };
            let span = Span::of(prop);
            let head = prop.text.split('$').next().unwrap_or_default();
            let info = PropertyInfo {
                name: name.text.clone(),
                span,
                value: values.get(&(prop.start_byte, name.text.clone())).cloned(),
                is_static: head.split_whitespace().any(|w| w == "static"),
            };
            if let Some(c) = innermost_body_mut(&mut classes, span) {
                c.properties.push(info);
            }
        }
        for class in &mut classes {
            class.doc = docs.get(&class.span.start_byte).cloned();
        }
        classes
    }

    /// `Name` declared in this file's namespace, fully qualified.
    #[must_use]
    pub fn qualify(&self, name: &str) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}\\{name}"),
            None => name.to_string(),
        }
    }

    /// Resolves a class name as written in this file to its FQCN: `\X` is
    /// absolute; a first segment that is an import alias is replaced by the
    /// import; anything else is relative to the file's namespace.
    #[must_use]
    pub fn resolve(&self, name: &str) -> String {
        let name = name.trim();
        if let Some(absolute) = name.strip_prefix('\\') {
            return absolute.to_string();
        }
        let (first, rest) = match name.split_once('\\') {
            Some((first, rest)) => (first, Some(rest)),
            None => (name, None),
        };
        if let Some(import) = self.imports.get(first) {
            return match rest {
                Some(rest) => format!("{import}\\{rest}"),
                None => import.clone(),
            };
        }
        if rest.is_none() && SCALAR_TYPES.contains(&name.to_ascii_lowercase().as_str()) {
            return name.to_string();
        }
        self.qualify(name)
    }

    /// The FQCN of a `X::class` expression, or `None` for anything else.
    #[must_use]
    pub fn class_constant(&self, expression: &str) -> Option<String> {
        let name = expression.trim().strip_suffix("::class")?;
        (!name.is_empty() && !name.starts_with('$')).then(|| self.resolve(name))
    }

    /// The first class of the file whose base class (short name) is one of `bases`.
    #[must_use]
    pub fn class_extending(&self, bases: &[&str]) -> Option<&ClassInfo> {
        self.classes.iter().find(|c| c.base_short().is_some_and(|b| bases.contains(&b)))
    }

    /// The source text of a span.
    #[must_use]
    pub fn text(&self, span: Span) -> &'s str {
        span.text(self.source)
    }

    /// Class types of a parameter list (`private OrderService $orders, int $n`):
    /// `(type FQCN, variable)` for every parameter whose type is a class.
    #[must_use]
    pub fn parameter_classes(&self, params: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for param in split_top_level(params, ',') {
            let param = strip_attributes(param);
            let before_default = param.split('=').next().unwrap_or_default();
            let Some((head, var)) = before_default.rsplit_once('$') else { continue };
            let var = var.trim().to_string();
            let type_text = head
                .split_whitespace()
                .filter(|w| !matches!(*w, "private" | "protected" | "public" | "readonly" | "..." | "&"))
                .collect::<Vec<_>>()
                .join("");
            for ty in type_text.split(['|', '&']) {
                let ty = ty.trim_start_matches('?').trim_matches(|c| c == '(' || c == ')').trim_end_matches("...");
                if ty.is_empty() || SCALAR_TYPES.contains(&ty.to_ascii_lowercase().as_str()) {
                    continue;
                }
                out.push((self.resolve(ty), var.clone()));
            }
        }
        out
    }

    /// The class skeleton (method bodies elided) as chunk content.
    #[must_use]
    pub fn skeleton(&self, class: &ClassInfo) -> String {
        let holes: Vec<(std::ops::Range<usize>, &str)> =
            class.methods.iter().filter_map(|m| m.body).map(|b| (b.range(), "{ … }")).collect();
        let mut text = String::new();
        if let Some(ns) = &self.namespace {
            text.push_str(&format!("namespace {ns};\n\n"));
        }
        text.push_str(&elide(self.source, class.span.range(), &holes));
        text
    }

    /// A chunk describing `class`: its skeleton as content, header as
    /// signature, docblock, and base class, interfaces, traits and
    /// constructor-injected dependencies as related symbols. `kind` is
    /// usually `class`; specialised plugins pass their own.
    pub fn class_builder(&self, class: &ClassInfo, kind: &str, fallback_name: &str) -> ChunkBuilder {
        let name = class.name.clone().unwrap_or_else(|| fallback_name.to_string());
        let header_end = class.body.start_byte as usize;
        let header = self.source.get(class.span.start_byte as usize..header_end).unwrap_or_default();
        let injected = class.method("__construct").map(|c| self.parameter_classes(&c.params)).unwrap_or_default();
        let mut builder = ChunkBuilder::new(kind, name)
            .span(class.span)
            .content(self.skeleton(class))
            .signature(one_line(header))
            .docstring(class.doc.clone())
            .related_all(class.base_fqcn.iter().cloned())
            .related_all(class.interfaces.iter().cloned())
            .related_all(class.traits.iter().cloned())
            .related_all(injected.iter().map(|(t, _)| t.clone()))
            .meta_opt("namespace", self.namespace.clone())
            .meta_opt("extends", class.base_fqcn.clone())
            .meta_opt("implements", Some(class.interfaces.clone()))
            .meta_opt("traits", Some(class.traits.clone()));
        if let Some(fqcn) = &class.fqcn {
            builder = builder.qualified_name(fqcn.clone());
        }
        if !injected.is_empty() {
            let deps: Vec<serde_json::Value> =
                injected.iter().map(|(t, v)| serde_json::json!({"class": t, "variable": v})).collect();
            builder = builder.meta("injected_dependencies", deps);
        }
        builder
    }

    /// A chunk for `method` of `class` (`kind` usually `method`), qualified
    /// `FQCN::name`, with its parent's id.
    pub fn method_builder(&self, class: &ClassInfo, method: &MethodInfo, kind: &str, parent: &str) -> ChunkBuilder {
        let mut builder = ChunkBuilder::new(kind, method.name.clone())
            .span(method.span)
            .signature(&method.signature)
            .docstring(method.doc.clone())
            .parent(Some(parent.to_string()))
            .related_all(self.parameter_classes(&method.params).into_iter().map(|(t, _)| t))
            .meta("static", method.is_static);
        if let Some(fqcn) = &class.fqcn {
            builder = builder.qualified_name(format!("{fqcn}::{}", method.name));
        } else {
            builder = builder.id(format!("{kind}:{}", method.name));
        }
        if let Some(ret) = &method.return_type {
            let ret = ret.trim_start_matches('?');
            if !SCALAR_TYPES.contains(&ret.to_ascii_lowercase().as_str()) && !ret.contains('|') {
                builder = builder.related(self.resolve(ret));
            }
        }
        builder
    }

    /// Values of a `return [ ... ];` array in `method`: each element as
    /// `(key, value)` source text (key `None` for a list element).
    #[must_use]
    pub fn returned_array(&self, method: &MethodInfo) -> Vec<(Option<String>, String)> {
        let Some(body) = method.body else { return Vec::new() };
        let text = self.text(body);
        let Some(start) = text.find("return [") else { return Vec::new() };
        let inner = &text[start + "return [".len()..];
        let Some(end) = matching_close(inner, '[', ']') else { return Vec::new() };
        array_elements(&inner[..end])
    }
}

/// Elements of an array literal's inside (`'a' => X::class, Y::class`), as
/// `(key, value)` source text.
#[must_use]
pub fn array_elements(inner: &str) -> Vec<(Option<String>, String)> {
    split_top_level(inner, ',')
        .into_iter()
        .map(|element| match split_arrow(element) {
            Some((k, v)) => (Some(unquote(k).unwrap_or(k).to_string()), v.to_string()),
            None => (None, element.to_string()),
        })
        .collect()
}

/// Splits `key => value` at a top-level `=>`.
fn split_arrow(element: &str) -> Option<(&str, &str)> {
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
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
                return Some((element[..i].trim(), element[i + 2..].trim()));
            }
            _ => {}
        }
    }
    None
}

/// Byte offset of the bracket closing an already opened `open` in `text`
/// (quotes respected), or `None`.
#[must_use]
pub fn matching_close(text: &str, open: char, close: char) -> Option<usize> {
    let mut depth = 1i32;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        if c == '\'' || c == '"' {
            quote = Some(c);
        } else if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// The string literals among the top-level arguments `(a, 'b', ['c', 'd'])`
/// of a call, flattened one level into arrays: `["b", "c", "d"]`.
#[must_use]
pub fn string_arguments(args: &str) -> Vec<String> {
    let inner = args.trim().strip_prefix('(').and_then(|a| a.strip_suffix(')')).unwrap_or(args);
    let mut out = Vec::new();
    for arg in split_top_level(inner, ',') {
        let arg = named_argument_value(arg);
        if let Some(s) = unquote(arg) {
            out.push(s.to_string());
        } else if let Some(list) = arg.strip_prefix('[').and_then(|a| a.strip_suffix(']')) {
            out.extend(split_top_level(list, ',').into_iter().filter_map(unquote).map(str::to_string));
        }
    }
    out
}

/// The top-level arguments of a call's `( ... )`, as source text.
#[must_use]
pub fn arguments(args: &str) -> Vec<&str> {
    let inner = args.trim().strip_prefix('(').and_then(|a| a.strip_suffix(')')).unwrap_or(args);
    split_top_level(inner, ',')
}

/// `name: value` (a PHP 8 named argument) -> `value`.
fn named_argument_value(arg: &str) -> &str {
    match arg.split_once(':') {
        Some((name, value))
            if !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !value.starts_with(':') =>
        {
            value.trim()
        }
        _ => arg,
    }
}

/// The value of the first argument when it is a string literal.
#[must_use]
pub fn first_string_argument(args: &str) -> Option<String> {
    arguments(args).first().and_then(|a| unquote(named_argument_value(a))).map(str::to_string)
}

fn strip_attributes(param: &str) -> &str {
    let mut param = param.trim();
    while param.starts_with("#[") {
        match matching_close(&param[2..], '[', ']') {
            Some(end) => param = param[2 + end + 1..].trim_start(),
            None => break,
        }
    }
    param
}

/// Adds the names imported by one `use ...;` declaration.
fn parse_use(text: &str, imports: &mut BTreeMap<String, String>) {
    let body = text.trim().trim_start_matches("use").trim().trim_end_matches(';').trim();
    if body.starts_with("function ") || body.starts_with("const ") {
        return;
    }
    let mut add = |target: &str| {
        let target = target.trim().trim_start_matches('\\');
        let (path, alias) = match target.split_once(" as ") {
            Some((p, a)) => (p.trim(), a.trim().to_string()),
            None => (target, target.rsplit('\\').next().unwrap_or(target).to_string()),
        };
        if !path.is_empty() {
            imports.insert(alias, path.to_string());
        }
    };
    if let Some((prefix, group)) = body.split_once('{') {
        let prefix = prefix.trim().trim_end_matches('\\');
        for item in group.trim_end_matches('}').split(',') {
            let item = item.trim();
            if !item.is_empty() {
                add(&format!("{prefix}\\{item}"));
            }
        }
    } else {
        for item in body.split(',') {
            add(item);
        }
    }
}

fn innermost_mut(classes: &mut [ClassInfo], span: Span) -> Option<&mut ClassInfo> {
    classes.iter_mut().filter(|c| c.span.contains(&span)).min_by_key(|c| c.span.end_byte - c.span.start_byte)
}

fn innermost_body_mut(classes: &mut [ClassInfo], span: Span) -> Option<&mut ClassInfo> {
    classes.iter_mut().filter(|c| c.body.contains(&span)).min_by_key(|c| c.body.end_byte - c.body.start_byte)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn use_declarations_cover_aliases_and_groups() {
        let mut imports = BTreeMap::new();
        parse_use("use App\\Models\\User;", &mut imports);
        parse_use("use Illuminate\\Foundation\\Auth\\User as Authenticatable;", &mut imports);
        parse_use("use Filament\\Tables\\{Table, Columns\\TextColumn as Col};", &mut imports);
        parse_use("use function App\\helper;", &mut imports);
        assert_eq!(imports["User"], "App\\Models\\User");
        assert_eq!(imports["Authenticatable"], "Illuminate\\Foundation\\Auth\\User");
        assert_eq!(imports["Table"], "Filament\\Tables\\Table");
        assert_eq!(imports["Col"], "Filament\\Tables\\Columns\\TextColumn");
        assert!(!imports.contains_key("helper"));
    }

    #[test]
    fn string_arguments_flatten_arrays_and_named_arguments() {
        assert_eq!(string_arguments("('a', 10, ['b', \"c\"])"), ["a", "b", "c"]);
        assert_eq!(string_arguments("(table: 'users')"), ["users"]);
        assert_eq!(first_string_argument("($x, 'y')"), None);
    }

    #[test]
    fn array_elements_split_keys() {
        let elements = array_elements("'index' => Pages\\List::route('/'), X::class,");
        assert_eq!(elements[0], (Some("index".to_string()), "Pages\\List::route('/')".to_string()));
        assert_eq!(elements[1], (None, "X::class".to_string()));
    }
}
