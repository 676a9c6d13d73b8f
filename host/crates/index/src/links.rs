//! Cross-file links, resolved after a sync from what the plugins indexed.
//!
//! Plugins see one file at a time, so they name what a chunk points to as
//! related symbols (`App\Models\Product`, `route:orders.store`,
//! `view:layouts.shop`, `table:products`, `file:resources/js/app.js`). Here
//! those symbols are resolved to files with the whole index in view:
//!
//! - class names through the index's own class chunks (qualified names),
//!   else through the PSR-4 map of every `composer.json` (`App\` -> `app/`);
//! - `<x-…>` components to their class, else to their anonymous view;
//!   Livewire components to `App\Livewire\…` (or v2's `App\Http\Livewire\…`);
//! - `route('name')` through `routes/*.php` (named routes, name-prefixed
//!   groups, `Route::resource`) to the route's line and its controller action;
//! - views to their `.blade.php` file;
//! - tables to the migrations that create or change them, and Eloquent models
//!   (their `$table`, or the naming convention) to those migrations and back;
//! - Filament resources to their model, its migrations, and the form/table/
//!   infolist classes they delegate to, which are in turn linked back to the
//!   resource, the model and the migrations.
//!
//! A link depends on files other than its own, through the *facts* the
//! resolver looks symbols up in (which file defines a class, a view, a table,
//! a route, the PSR-4 map). A sync that only edited files without changing
//! their facts (the common case: a method body) re-resolves just those
//! files' links against the facts they need ([`update`]); any other change
//! (a file added or deleted, a class renamed, a routes file or
//! `composer.json` edited) rebuilds the whole table ([`rebuild`]).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;

use code_intel_store::Store;
use code_intel_store::links::{LinkSource, NewLink};
use serde_json::Value;

use crate::IndexError;

/// Resource actions Laravel names `Route::resource` routes after.
const RESOURCE_ACTIONS: &[&str] = &["index", "create", "store", "show", "edit", "update", "destroy"];
/// `Route::apiResource` leaves out the two form pages.
const API_RESOURCE_ACTIONS: &[&str] = &["index", "store", "show", "update", "destroy"];

/// A named route found in a routes file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteDef {
    pub name: String,
    pub path: String,
    pub line: u32,
    /// Controller FQCN and method.
    pub action: Option<(String, String)>,
    /// `Route::view` target.
    pub view: Option<String>,
}

/// What a rebuild produced.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LinkReport {
    pub links: u64,
    pub routes: u64,
    /// Related symbols that resolved to nothing in this repository (vendor
    /// classes, routes defined by packages, ...).
    pub unresolved: u64,
}

/// Recomputes every link of the index of `root`.
///
/// # Errors
/// Store errors.
pub fn rebuild(root: &Path, store: &mut Store) -> Result<LinkReport, IndexError> {
    let files: HashSet<String> = store.indexed_files()?.into_iter().map(|f| f.path).collect();
    let routes = load_routes(root, &files);
    let sources = store.link_sources()?;
    let (links, unresolved) = resolve(&sources, &files, &routes);
    store.write(|w| w.replace_links(&links))?;
    Ok(LinkReport { links: links.len() as u64, routes: routes.len() as u64, unresolved })
}

/// Re-resolves the links produced by the chunks of `paths`, leaving every
/// other link as it is.
///
/// `files` is the set of indexed files. Only correct when that set and the
/// [facts](fact_signatures)
/// of every file are what they were when the other links were resolved, and
/// no routes file is among `paths`; the caller checks that and calls
/// [`rebuild`] otherwise.
///
/// # Errors
/// Store errors.
pub fn update(root: &Path, store: &mut Store, paths: &[String], files: &HashSet<String>) -> Result<LinkReport, IndexError> {
    let routes = load_routes(root, files);
    let sources = store.link_sources_in(paths)?;
    let fact_sources = store.link_fact_sources(&lookup_names(&sources, &routes), needs_every_model(&sources))?;
    let (links, unresolved) = resolve_with(&fact_sources, &sources, files, &routes);
    store.write(|w| w.replace_links_of(paths, &links))?;
    Ok(LinkReport { links: links.len() as u64, routes: routes.len() as u64, unresolved })
}

/// Whether resolving `sources` may look up Eloquent models other than by a
/// class name [`lookup_names`] lists: the models of a table (`table:`
/// symbols, migrations), or a source's own model facts (an edited model,
/// a Filament resource). Only then do the facts need every model, which
/// costs a read of every class chunk.
fn needs_every_model(sources: &[LinkSource]) -> bool {
    sources.iter().any(|s| {
        matches!(s.kind.as_str(), "table_schema" | "filament_resource")
            || s.metadata.get("eloquent_model").and_then(Value::as_bool) == Some(true)
            || s.related_symbols.iter().any(|r| r.starts_with("table:"))
    })
}

/// Every class-like name resolving `sources` may look up by qualified name:
/// their related symbols (and the Livewire 2 spelling), models, delegates,
/// and the controller actions of the routes they name.
fn lookup_names(sources: &[LinkSource], routes: &[RouteDef]) -> Vec<String> {
    let routes: HashMap<&str, &RouteDef> = routes.iter().map(|r| (r.name.as_str(), r)).collect();
    let mut names = BTreeSet::new();
    for s in sources {
        for symbol in &s.related_symbols {
            if let Some(route) = symbol.strip_prefix("route:").and_then(|name| routes.get(name)) {
                if let Some((class, method)) = &route.action {
                    names.insert(class.clone());
                    names.insert(format!("{class}::{method}"));
                }
            } else {
                names.insert(symbol.clone());
                if let Some(rest) = symbol.strip_prefix("App\\Livewire\\") {
                    names.insert(format!("App\\Http\\Livewire\\{rest}"));
                }
            }
        }
        if let Some(model) = s.metadata.get("model").and_then(Value::as_str) {
            names.insert(model.to_string());
        }
        for delegate in s.metadata.get("delegates").and_then(Value::as_object).into_iter().flat_map(|d| d.values()) {
            if let Some(delegate) = delegate.as_str() {
                names.insert(delegate.to_string());
            }
        }
    }
    names.into_iter().collect()
}

/// A fingerprint, per file, of what the file's chunks contribute to the facts
/// other files' links are resolved against (see [`Facts::new`]): defined
/// qualified names and their chunk ids, templates, table schemas, autoload
/// maps, Eloquent models and their tables. Chunks that only name symbols do
/// not contribute. Equal fingerprints before and after an edit mean no other
/// file's links can have changed.
#[must_use]
pub fn fact_signatures(sources: &[LinkSource]) -> HashMap<String, u64> {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut out: HashMap<String, DefaultHasher> = HashMap::new();
    for s in sources {
        let defines = s.qualified_name.is_some() || matches!(s.kind.as_str(), "autoload" | "blade_template" | "table_schema");
        if !defines {
            continue;
        }
        let hasher = out.entry(s.path.clone()).or_default();
        (&s.chunk_id, &s.kind, &s.name, &s.qualified_name).hash(hasher);
        for key in ["psr4_resolved", "renamed_to", "eloquent_model", "table"] {
            s.metadata.get(key).map(Value::to_string).hash(hasher);
        }
    }
    out.into_iter().map(|(path, hasher)| (path, hasher.finish())).collect()
}

/// The named routes of every routes file among `files`.
fn load_routes(root: &Path, files: &HashSet<String>) -> Vec<RouteDef> {
    let mut routes = Vec::new();
    let mut route_files: Vec<&String> = files.iter().filter(|p| is_routes_file(p)).collect();
    route_files.sort();
    for path in route_files {
        if let Ok(text) = std::fs::read_to_string(root.join(path)) {
            routes.extend(parse_routes(path, &text));
        }
    }
    routes
}

/// `routes/web.php`, `routes/api.php`, `modules/shop/routes/admin.php`, ...
pub fn is_routes_file(path: &str) -> bool {
    let Some((dir, file)) = path.rsplit_once('/') else { return false };
    file.ends_with(".php") && !file.ends_with(".blade.php") && (dir == "routes" || dir.ends_with("/routes"))
}

/// The index's facts, arranged for lookups.
struct Facts<'a> {
    files: &'a HashSet<String>,
    /// FQCN (or other qualified name without `::`) -> (path, chunk id).
    classes: HashMap<&'a str, (&'a str, &'a str)>,
    /// `Class::member` -> (path, chunk id).
    members: HashMap<String, (&'a str, &'a str)>,
    /// (namespace, directory) from composer autoload maps, longest namespace first.
    psr4: Vec<(String, String)>,
    /// View name -> (path, chunk id).
    views: HashMap<&'a str, (&'a str, &'a str)>,
    /// Table -> (path, chunk id, line) of each migration chunk touching it.
    tables: HashMap<String, Vec<(&'a str, &'a str)>>,
    /// Table -> (model FQCN, path, chunk id).
    models_by_table: HashMap<String, Vec<(&'a str, &'a str, &'a str)>>,
    /// Model FQCN -> table.
    table_of_model: HashMap<&'a str, String>,
    routes: HashMap<&'a str, &'a RouteDef>,
}

impl<'a> Facts<'a> {
    fn new(sources: &'a [LinkSource], files: &'a HashSet<String>, routes: &'a [RouteDef]) -> Self {
        let mut facts = Facts {
            files,
            classes: HashMap::new(),
            members: HashMap::new(),
            psr4: Vec::new(),
            views: HashMap::new(),
            tables: HashMap::new(),
            models_by_table: HashMap::new(),
            table_of_model: HashMap::new(),
            routes: routes.iter().map(|r| (r.name.as_str(), r)).collect(),
        };
        for s in sources {
            if let Some(q) = s.qualified_name.as_deref() {
                if let Some((class, member)) = q.split_once("::") {
                    facts.members.entry(format!("{class}::{member}")).or_insert((&s.path, &s.chunk_id));
                } else if s.kind != "part" {
                    facts.classes.entry(q).or_insert((&s.path, &s.chunk_id));
                }
            }
            match s.kind.as_str() {
                "autoload" => {
                    for entry in s.metadata.get("psr4_resolved").and_then(Value::as_array).into_iter().flatten() {
                        if let (Some(ns), Some(dir)) = (entry.get("namespace").and_then(Value::as_str), entry.get("path").and_then(Value::as_str)) {
                            facts.psr4.push((ns.to_string(), dir.to_string()));
                        }
                    }
                }
                "blade_template" => {
                    facts.views.entry(&s.name).or_insert((&s.path, &s.chunk_id));
                }
                "table_schema" => {
                    facts.tables.entry(s.name.clone()).or_default().push((&s.path, &s.chunk_id));
                    if let Some(to) = s.metadata.get("renamed_to").and_then(Value::as_str) {
                        facts.tables.entry(to.to_string()).or_default().push((&s.path, &s.chunk_id));
                    }
                }
                _ => {}
            }
            if s.metadata.get("eloquent_model").and_then(Value::as_bool) == Some(true)
                && let Some(fqcn) = s.qualified_name.as_deref()
            {
                let table = s.metadata.get("table").and_then(Value::as_str).map_or_else(|| conventional_table(fqcn), str::to_string);
                facts.models_by_table.entry(table.clone()).or_default().push((fqcn, &s.path, &s.chunk_id));
                facts.table_of_model.insert(fqcn, table);
            }
        }
        facts.psr4.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.cmp(b)));
        facts
    }

    /// The file (and chunk, when indexed as one) defining class `fqcn`.
    fn class(&self, fqcn: &str) -> Option<(String, Option<String>)> {
        if let Some((path, chunk)) = self.classes.get(fqcn) {
            return Some(((*path).to_string(), Some((*chunk).to_string())));
        }
        for (ns, dir) in &self.psr4 {
            let rest = if ns.is_empty() { Some(fqcn) } else { fqcn.strip_prefix(ns.as_str()).and_then(|r| r.strip_prefix('\\')) };
            if let Some(rest) = rest {
                let candidate = format!("{}{}.php", dir.trim_end_matches('/').to_string() + "/", rest.replace('\\', "/"));
                let candidate = candidate.trim_start_matches("./").to_string();
                if self.files.contains(&candidate) {
                    return Some((candidate, None));
                }
            }
        }
        None
    }

    /// The file of view `name` (`layouts.shop`).
    fn view(&self, name: &str) -> Option<(String, Option<String>)> {
        if let Some((path, chunk)) = self.views.get(name) {
            return Some(((*path).to_string(), Some((*chunk).to_string())));
        }
        if name.contains("::") {
            return None; // a package's view
        }
        let candidate = format!("resources/views/{}.blade.php", name.replace('.', "/"));
        self.files.contains(&candidate).then_some((candidate, None))
    }
}

/// `App\Models\OrderItem` -> `order_items` (Eloquent's default table name).
fn conventional_table(fqcn: &str) -> String {
    let short = fqcn.rsplit('\\').next().unwrap_or(fqcn);
    let mut snake = String::new();
    for (i, c) in short.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                snake.push('_');
            }
            snake.extend(c.to_lowercase());
        } else {
            snake.push(c);
        }
    }
    pluralize(&snake)
}

/// English plural for the regular cases Eloquent's inflector covers.
fn pluralize(word: &str) -> String {
    let vowel_before_y = word.len() >= 2 && word[..word.len() - 1].ends_with(['a', 'e', 'i', 'o', 'u']);
    if word.ends_with('y') && !vowel_before_y {
        format!("{}ies", &word[..word.len() - 1])
    } else if word.ends_with('s') || word.ends_with('x') || word.ends_with("ch") || word.ends_with("sh") {
        format!("{word}es")
    } else {
        format!("{word}s")
    }
}

/// Resolves the related symbols of `sources` against the index (pure: no I/O).
/// Returns the links and how many symbols resolved to nothing.
#[must_use]
pub fn resolve(sources: &[LinkSource], files: &HashSet<String>, routes: &[RouteDef]) -> (Vec<NewLink>, u64) {
    resolve_with(sources, sources, files, routes)
}

/// Resolves the related symbols of `sources` against the facts of
/// `fact_sources` (which must include every source a lookup for them can
/// find, in file order).
fn resolve_with(
    fact_sources: &[LinkSource],
    sources: &[LinkSource],
    files: &HashSet<String>,
    routes: &[RouteDef],
) -> (Vec<NewLink>, u64) {
    let facts = Facts::new(fact_sources, files, routes);
    let mut links: BTreeSet<NewLink> = BTreeSet::new();
    let mut unresolved = 0u64;
    let mut add = |origin: &str, from: &LinkSource, to: (String, Option<String>), line: Option<u32>, kind: &str, symbol: &str| {
        if to.0 == from.path {
            return;
        }
        links.insert(NewLink {
            from_path: from.path.clone(),
            from_chunk: Some(from.chunk_id.clone()),
            to_path: to.0,
            to_chunk: to.1,
            to_line: line,
            kind: kind.to_string(),
            symbol: symbol.to_string(),
            origin_path: origin.to_string(),
        });
    };

    for s in sources {
        let origin = s.path.as_str();
        let model = s.metadata.get("model").and_then(Value::as_str);
        for symbol in &s.related_symbols {
            let mut resolved = true;
            if let Some(name) = symbol.strip_prefix("route:") {
                match facts.routes.get(name) {
                    Some(route) => {
                        add(origin, s, (route.path.clone(), None), Some(route.line), "route", symbol);
                        if let Some((class, method)) = &route.action {
                            let target = facts
                                .members
                                .get(&format!("{class}::{method}"))
                                .map(|(p, c)| ((*p).to_string(), Some((*c).to_string())))
                                .or_else(|| facts.class(class));
                            if let Some(target) = target {
                                add(origin, s, target, None, "route_action", &format!("{class}::{method}"));
                            }
                        }
                    }
                    None => resolved = false,
                }
            } else if let Some(name) = symbol.strip_prefix("view:") {
                let kind = if name.starts_with("components.") {
                    "component"
                } else if name.starts_with("livewire.") {
                    "livewire"
                } else {
                    "view"
                };
                match facts.view(name) {
                    Some(target) => add(origin, s, target, None, kind, symbol),
                    None => resolved = false,
                }
            } else if let Some(table) = symbol.strip_prefix("table:") {
                match facts.tables.get(table) {
                    Some(migrations) => {
                        for (path, chunk) in migrations {
                            add(origin, s, ((*path).to_string(), Some((*chunk).to_string())), None, "table", symbol);
                        }
                    }
                    None => resolved = false,
                }
                for (fqcn, path, chunk) in facts.models_by_table.get(table).into_iter().flatten() {
                    add(origin, s, ((*path).to_string(), Some((*chunk).to_string())), None, "model", fqcn);
                }
            } else if let Some(path) = symbol.strip_prefix("file:") {
                let path = path.trim_start_matches("./");
                if files.contains(path) {
                    add(origin, s, (path.to_string(), None), None, "file", symbol);
                } else {
                    resolved = false;
                }
            } else if symbol.starts_with("html:") {
                continue;
            } else {
                let is_model = model == Some(symbol.as_str()) || facts.table_of_model.contains_key(symbol.as_str());
                let kind = if is_model { "model" } else { class_link_kind(s, symbol) };
                let target = facts.class(symbol).or_else(|| {
                    // Livewire 2 kept components in App\Http\Livewire.
                    symbol.strip_prefix("App\\Livewire\\").and_then(|rest| facts.class(&format!("App\\Http\\Livewire\\{rest}")))
                });
                match target {
                    Some(target) => add(origin, s, target, None, kind, symbol),
                    None => resolved = false,
                }
            }
            if !resolved {
                unresolved += 1;
            }
        }

        // An Eloquent model -> the migrations of its table.
        if s.metadata.get("eloquent_model").and_then(Value::as_bool) == Some(true)
            && let Some(table) = s.qualified_name.as_deref().and_then(|q| facts.table_of_model.get(q))
        {
            for (path, chunk) in facts.tables.get(table).into_iter().flatten() {
                add(origin, s, ((*path).to_string(), Some((*chunk).to_string())), None, "table", &format!("table:{table}"));
            }
        }
        // A migration's table -> its models.
        if s.kind == "table_schema" {
            for (fqcn, path, chunk) in facts.models_by_table.get(&s.name).into_iter().flatten() {
                add(origin, s, ((*path).to_string(), Some((*chunk).to_string())), None, "model", fqcn);
            }
        }
        // A Filament resource -> its model's migrations; the classes it
        // delegates to -> the resource, the model and the migrations.
        if s.kind == "filament_resource" {
            let table = model.and_then(|m| facts.table_of_model.get(m).cloned().or_else(|| Some(conventional_table(m))));
            let migrations: Vec<(String, Option<String>)> = table
                .as_ref()
                .and_then(|t| facts.tables.get(t))
                .into_iter()
                .flatten()
                .map(|(p, c)| ((*p).to_string(), Some((*c).to_string())))
                .collect();
            let table_symbol = table.as_ref().map(|t| format!("table:{t}")).unwrap_or_default();
            for migration in &migrations {
                add(origin, s, migration.clone(), None, "table", &table_symbol);
            }
            let resource_target = (s.path.clone(), Some(s.chunk_id.clone()));
            let model_target = model.and_then(|m| facts.class(m));
            for delegate in s.metadata.get("delegates").and_then(Value::as_object).into_iter().flat_map(|d| d.values()) {
                let Some(delegate) = delegate.as_str() else { continue };
                let Some((delegate_path, delegate_chunk)) = facts.class(delegate) else { continue };
                let from = LinkSource {
                    path: delegate_path,
                    chunker: s.chunker.clone(),
                    chunk_id: delegate_chunk.unwrap_or_default(),
                    kind: "class".into(),
                    name: delegate.to_string(),
                    qualified_name: Some(delegate.to_string()),
                    related_symbols: Vec::new(),
                    metadata: Value::Null,
                };
                add(origin, &from, resource_target.clone(), None, "filament", s.qualified_name.as_deref().unwrap_or(&s.name));
                if let (Some(target), Some(m)) = (model_target.clone(), model) {
                    add(origin, &from, target, None, "model", m);
                }
                for migration in &migrations {
                    add(origin, &from, migration.clone(), None, "table", &table_symbol);
                }
            }
        }
    }
    (links.into_iter().collect(), unresolved)
}

/// How a chunk is linked to a class it names (Eloquent models aside).
fn class_link_kind(source: &LinkSource, symbol: &str) -> &'static str {
    if source.kind.starts_with("blade_") || source.kind == "html_element" {
        if symbol.starts_with("App\\Livewire\\") || symbol.starts_with("App\\Http\\Livewire\\") { "livewire" } else { "component" }
    } else if source.kind.starts_with("filament_") {
        "filament"
    } else {
        "class"
    }
}

// ---------------------------------------------------------------------------
// Routes files

/// Bytes of `text` that are code (not inside strings or comments).
fn code_mask(text: &str) -> Vec<bool> {
    let b = text.as_bytes();
    let mut mask = vec![true; b.len()];
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'\'' || c == b'"' {
            let start = i;
            i += 1;
            while i < b.len() && b[i] != c {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            for m in mask.iter_mut().take((i + 1).min(b.len())).skip(start + 1) {
                *m = false;
            }
        } else if text[i..].starts_with("//") || c == b'#' && !text[i..].starts_with("#[") {
            let end = text[i..].find('\n').map_or(b.len(), |e| i + e);
            mask[i..end].iter_mut().for_each(|m| *m = false);
            i = end;
        } else if text[i..].starts_with("/*") {
            let end = text[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
            mask[i..end].iter_mut().for_each(|m| *m = false);
            i = end;
        }
        i += 1;
    }
    mask
}

/// Index of the bracket closing the one opened at `open` (code bytes only).
fn closing(text: &str, mask: &[bool], open: usize) -> Option<usize> {
    let b = text.as_bytes();
    let (o, c) = match b[open] {
        b'(' => (b'(', b')'),
        b'[' => (b'[', b']'),
        _ => (b'{', b'}'),
    };
    let mut depth = 0i32;
    for i in open..b.len() {
        if !mask[i] {
            continue;
        }
        if b[i] == o {
            depth += 1;
        } else if b[i] == c {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// One call of a chain: method name, argument text, where the arguments start.
type ChainCall = (String, String, usize);

/// The calls of a chain starting at `start` (`Route::get(...)->name(...)`):
/// `(method, args inner text, args start)`, and where the chain ends.
fn chain(text: &str, mask: &[bool], start: usize) -> (Vec<ChainCall>, usize) {
    let b = text.as_bytes();
    let mut calls = Vec::new();
    let mut i = start;
    loop {
        let name_start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
        }
        let name = text[name_start..i].to_string();
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= b.len() || b[i] != b'(' {
            return (calls, i);
        }
        let Some(close) = closing(text, mask, i) else { return (calls, b.len()) };
        calls.push((name, text[i + 1..close].to_string(), i + 1));
        i = close + 1;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if text[i..].starts_with("->") {
            i += 2;
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
        } else {
            return (calls, i);
        }
    }
}

fn split_args(args: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut start = 0;
    for (i, c) in args.char_indices() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(args[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(args[start..].trim());
    out.retain(|a| !a.is_empty());
    out
}

fn unquote(s: &str) -> Option<&str> {
    let s = s.trim();
    ['\'', '"'].iter().find_map(|q| s.strip_prefix(*q).and_then(|r| r.strip_suffix(*q)))
}

/// Named routes of one routes file: `->name()` on a route, name prefixes of
/// `Route::name('admin.')->group(...)`/`->as(...)`, and `Route::resource` /
/// `Route::apiResource` (with `only`/`except`). Controllers are resolved
/// through the file's `use` imports.
#[must_use]
pub fn parse_routes(path: &str, text: &str) -> Vec<RouteDef> {
    let mask = code_mask(text);
    let mut imports: HashMap<String, String> = HashMap::new();
    let mut namespace = String::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("namespace ") {
            namespace = rest.trim_end_matches(';').trim().to_string();
        }
        if let Some(rest) = line.strip_prefix("use ").and_then(|r| r.strip_suffix(';')) {
            let (target, alias) = match rest.split_once(" as ") {
                Some((t, a)) => (t.trim(), a.trim().to_string()),
                None => (rest.trim(), rest.rsplit('\\').next().unwrap_or(rest).trim().to_string()),
            };
            imports.insert(alias, target.trim_start_matches('\\').to_string());
        }
    }
    let resolve = |name: &str| -> String {
        let name = name.trim();
        if let Some(abs) = name.strip_prefix('\\') {
            return abs.to_string();
        }
        let (first, rest) = name.split_once('\\').map_or((name, None), |(f, r)| (f, Some(r)));
        match (imports.get(first), rest) {
            (Some(import), Some(rest)) => format!("{import}\\{rest}"),
            (Some(import), None) => import.clone(),
            _ if namespace.is_empty() => name.to_string(),
            _ => format!("{namespace}\\{name}"),
        }
    };
    let class_of = |arg: &str| arg.trim().strip_suffix("::class").map(&resolve);

    let line_of = |at: usize| u32::try_from(text[..at].bytes().filter(|&c| c == b'\n').count() + 1).unwrap_or(u32::MAX);
    // Name prefixes of groups: (closure start, closure end, prefix).
    let mut groups: Vec<(usize, usize, String)> = Vec::new();
    let mut pending: Vec<(usize, Vec<ChainCall>)> = Vec::new();
    let mut from = 0;
    while let Some(pos) = text[from..].find("Route::") {
        let at = from + pos;
        from = at + "Route::".len();
        if !mask[at] {
            continue;
        }
        let (calls, end) = chain(text, &mask, at + "Route::".len());
        if let Some(group) = calls.iter().position(|(n, _, _)| n == "group") {
            let prefix: String = calls[..group]
                .iter()
                .filter(|(n, _, _)| n == "name" || n == "as")
                .filter_map(|(_, a, _)| split_args(a).first().and_then(|s| unquote(s)).map(str::to_string))
                .collect();
            let (_, _, args_start) = &calls[group];
            groups.push((*args_start, end, prefix));
            // Routes inside the closure are found by the outer loop; only
            // skip past this chain's head.
            from = *args_start;
            continue;
        }
        from = end.max(from);
        pending.push((at, calls));
    }
    let prefix_at = |at: usize| -> String {
        let mut containing: Vec<&(usize, usize, String)> = groups.iter().filter(|(s, e, _)| *s <= at && at < *e).collect();
        containing.sort_by_key(|(s, _, _)| *s);
        containing.iter().map(|(_, _, p)| p.as_str()).collect()
    };

    let mut routes = Vec::new();
    for (at, calls) in pending {
        let Some((verb, args, _)) = calls.first() else { continue };
        let prefix = prefix_at(at);
        let args = split_args(args);
        let line = line_of(at);
        if verb == "resource" || verb == "apiResource" {
            let (Some(base), Some(controller)) = (args.first().and_then(|a| unquote(a)), args.get(1).and_then(|a| class_of(a))) else { continue };
            let mut actions: Vec<&str> = if verb == "resource" { RESOURCE_ACTIONS.to_vec() } else { API_RESOURCE_ACTIONS.to_vec() };
            for (name, call_args, _) in &calls[1..] {
                let listed: Vec<String> = split_args(call_args.trim().trim_start_matches('[').trim_end_matches(']'))
                    .iter()
                    .filter_map(|a| unquote(a).map(str::to_string))
                    .collect();
                if name == "only" {
                    actions.retain(|a| listed.iter().any(|l| l == a));
                } else if name == "except" {
                    actions.retain(|a| !listed.iter().any(|l| l == a));
                }
            }
            for action in actions {
                routes.push(RouteDef {
                    name: format!("{prefix}{base}.{action}"),
                    path: path.to_string(),
                    line,
                    action: Some((controller.clone(), action.to_string())),
                    view: None,
                });
            }
            continue;
        }
        let Some(name) = calls
            .iter()
            .skip(1)
            .filter(|(n, _, _)| n == "name")
            .find_map(|(_, a, _)| split_args(a).first().and_then(|s| unquote(s)).map(str::to_string))
        else {
            continue;
        };
        let (action, view) = if verb == "view" {
            (None, args.get(1).and_then(|a| unquote(a)).map(str::to_string))
        } else {
            let action = args.get(1).and_then(|handler| {
                if let Some(list) = handler.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
                    let parts = split_args(list);
                    Some((class_of(parts.first()?)?, unquote(parts.get(1)?)?.to_string()))
                } else if let Some(class) = class_of(handler) {
                    Some((class, "__invoke".to_string()))
                } else {
                    let (class, method) = unquote(handler)?.split_once('@')?;
                    Some((resolve(class), method.to_string()))
                }
            });
            (action, None)
        };
        routes.push(RouteDef { name: format!("{prefix}{name}"), path: path.to_string(), line, action, view });
    }
    routes
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTES: &str = r#"<?php

use App\Http\Controllers\OrderController;
use App\Http\Controllers\Admin;
use Illuminate\Support\Facades\Route;

Route::view('/', 'welcome')->name('home');
// Route::get('/old', fn () => 1)->name('commented.out');
Route::get('/orders/{order}', [OrderController::class, 'show'])->name('orders.show');
Route::post('/hook', App\Http\Controllers\WebhookController::class)->name("webhook");

Route::middleware('auth')->name('admin.')->prefix('admin')->group(function () {
    Route::get('/stats', 'Admin\StatsController@index')->name('stats');
    Route::resource('products', Admin\ProductController::class)->only(['index', 'edit']);
    Route::name('reports.')->group(function () {
        Route::get('/daily', [Admin\ReportController::class, 'daily'])->name('daily');
    });
});
Route::get('/unnamed', [OrderController::class, 'index']);
"#;

    #[test]
    fn named_routes_groups_and_resources() {
        let routes = parse_routes("routes/web.php", ROUTES);
        let by_name: HashMap<&str, &RouteDef> = routes.iter().map(|r| (r.name.as_str(), r)).collect();
        let mut names: Vec<&str> = by_name.keys().copied().collect();
        names.sort_unstable();
        assert_eq!(
            names,
            ["admin.products.edit", "admin.products.index", "admin.reports.daily", "admin.stats", "home", "orders.show", "webhook"]
        );
        assert_eq!(by_name["home"].view.as_deref(), Some("welcome"));
        assert_eq!(by_name["orders.show"].line, 9);
        assert_eq!(
            by_name["orders.show"].action,
            Some(("App\\Http\\Controllers\\OrderController".to_string(), "show".to_string()))
        );
        assert_eq!(by_name["webhook"].action.as_ref().map(|a| a.1.as_str()), Some("__invoke"));
        assert_eq!(
            by_name["admin.reports.daily"].action.as_ref().map(|a| a.0.as_str()),
            Some("App\\Http\\Controllers\\Admin\\ReportController")
        );
        assert_eq!(
            by_name["admin.products.edit"].action,
            Some(("App\\Http\\Controllers\\Admin\\ProductController".to_string(), "edit".to_string()))
        );
    }

    #[test]
    fn conventional_table_names() {
        assert_eq!(conventional_table("App\\Models\\OrderItem"), "order_items");
        assert_eq!(conventional_table("App\\Models\\Category"), "categories");
    }
}
