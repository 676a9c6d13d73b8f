//! Filament admin panels, in both layouts in use today:
//!
//! - v3: the resource holds `form(Form $form)`, `table(Table $table)` and
//!   `infolist(Infolist $infolist)` inline;
//! - v4: the resource delegates to `Schemas/*Form::configure`,
//!   `Tables/*Table::configure` and `Schemas/*Infolist::configure` classes in
//!   sibling folders, may sit in a cluster, and types its navigation icon
//!   `string|BackedEnum|null`.
//!
//! Chunks: `filament_resource` (model, navigation icon/group/label, cluster,
//! pages, relations, widgets, translatable, the classes it delegates to),
//! `filament_form` / `filament_table` / `filament_infolist` (field, column,
//! filter and entry names from `X::make('name')`, with the actions placed in
//! them), `filament_actions` (header actions of pages), `filament_page`,
//! `filament_relation_manager` and `filament_widget` classes, and plain
//! `class` / `method` chunks for everything else, so a Filament file still
//! yields its definitions.
//!
//! A file that matches the patterns but holds no Filament class (a Laravel
//! API resource named `*Resource.php`) is declined for the PHP plugin.

use code_intel_laravel_support::php::{arguments, first_string_argument};
use code_intel_laravel_support::{Calls, CallKind, ClassInfo, MethodInfo, PhpFile, pluralize};
use code_intel_plugin_sdk::text::unquote;
use code_intel_plugin_sdk::{
    ChunkBuilder, ChunkOutcome, ChunkSet, Plugin, PluginError, PluginInfo, SourceFile, Span, export_plugin,
};
use serde_json::{Map, Value, json};

/// Above the general PHP plugin (10): a Filament class is chunked by what it configures.
const PRIORITY: i32 = 20;

/// Methods of a resource (or relation manager) that build a schema or table.
const SCHEMA_METHODS: &[(&str, &str)] =
    &[("form", "filament_form"), ("table", "filament_table"), ("infolist", "filament_infolist")];

/// Methods returning actions, and where those actions are placed.
const ACTION_METHODS: &[(&str, &str)] = &[
    ("getHeaderActions", "header"),
    ("getActions", "header"),
    ("getFormActions", "form"),
    ("getTableActions", "record"),
    ("getTableBulkActions", "bulk"),
    ("getBulkActions", "bulk"),
];

/// Table/schema methods whose arguments place an action, and the placement.
const ACTION_SLOTS: &[(&str, &str)] = &[
    ("headerActions", "header"),
    ("actions", "record"),
    ("recordActions", "record"),
    ("bulkActions", "bulk"),
    ("groupedBulkActions", "bulk"),
    ("toolbarActions", "toolbar"),
    ("emptyStateActions", "empty_state"),
    ("footerActions", "footer"),
    ("suffixAction", "field"),
    ("prefixAction", "field"),
    ("hintAction", "field"),
];

/// Layout components: they group fields but are not fields themselves.
const LAYOUT: &[&str] = &[
    "Section", "Grid", "Tabs", "Tab", "Fieldset", "Group", "Wizard", "Step", "Split", "Flex", "Card", "Actions",
    "Placeholder", "View", "Livewire", "Text", "Html", "Callout", "EmptyState", "Form",
];

struct Filament;

impl Plugin for Filament {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "filament".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Filament resources (v3 and v4 layouts, clusters), forms, tables, infolists and actions".into(),
            languages: vec!["php".into()],
            file_patterns: vec![
                "**/Filament/**/*Resource.php".into(),
                "**/Filament/**/Schemas/*Form.php".into(),
                "**/Filament/**/Schemas/*Infolist.php".into(),
                "**/Filament/**/Tables/*Table.php".into(),
                "**/Filament/**/Pages/*.php".into(),
                "**/Filament/**/RelationManagers/*.php".into(),
                "**/Filament/**/Widgets/*.php".into(),
            ],
            priority: PRIORITY,
        }
    }

    fn chunk(file: SourceFile) -> Result<ChunkOutcome, PluginError> {
        chunk_filament(&file.content)
    }
}

export_plugin!(Filament);

/// What a Filament class is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Resource,
    /// A v4 `configure()` class: form, infolist or table.
    Configurator,
    Page,
    RelationManager,
    /// A dashboard or page widget (stats, chart, table).
    Widget,
    /// Any other class extending a Filament class (a cluster, ...).
    Other,
}

fn role(php: &PhpFile<'_>, class: &ClassInfo) -> Option<Role> {
    let base = class.base_fqcn.as_deref().unwrap_or_default();
    let filament_base = base.starts_with("Filament\\");
    let short = class.base_short().unwrap_or_default();
    // A resource extends Filament's `Resource`, or an app's own base resource
    // (`BaseResource extends Resource`) in a file that uses Filament and
    // defines a form or table.
    let app_base = !base.starts_with("Illuminate\\")
        && short.ends_with("Resource")
        && imports_filament(php)
        && (class.method("form").is_some() || class.method("table").is_some());
    if (filament_base && short == "Resource") || app_base {
        return Some(Role::Resource);
    }
    if class.method("configure").is_some_and(|m| m.is_static && configures_filament(php, m)) {
        return Some(Role::Configurator);
    }
    if filament_base && base.contains("\\RelationManagers\\") {
        return Some(Role::RelationManager);
    }
    if filament_base && (base.contains("\\Pages\\") || short.ends_with("Records") || short.ends_with("Record")) {
        return Some(Role::Page);
    }
    if filament_base && base.starts_with("Filament\\Widgets\\") {
        return Some(Role::Widget);
    }
    filament_base.then_some(Role::Other)
}

fn imports_filament(php: &PhpFile<'_>) -> bool {
    php.imports.values().any(|i| i.starts_with("Filament\\"))
}

fn configures_filament(php: &PhpFile<'_>, method: &MethodInfo) -> bool {
    php.parameter_classes(&method.params).iter().any(|(ty, _)| ty.starts_with("Filament\\"))
}

/// Chunks one Filament file.
///
/// # Errors
/// The host cannot parse PHP.
pub fn chunk_filament(source: &str) -> Result<ChunkOutcome, PluginError> {
    let php = PhpFile::parse(source)?;
    let roles: Vec<(usize, Role)> =
        php.classes.iter().enumerate().filter_map(|(i, c)| role(&php, c).map(|r| (i, r))).collect();
    if roles.is_empty() {
        let why = match php.classes.first() {
            Some(c) => format!(
                "not a Filament class: {} extends {}",
                c.name.as_deref().unwrap_or("an anonymous class"),
                c.base_fqcn.as_deref().unwrap_or("nothing")
            ),
            None => "no class in the file".to_string(),
        };
        return Ok(ChunkOutcome::Decline(why));
    }
    let calls = &php.calls;
    let mut set = ChunkSet::new(source);
    for (i, class) in php.classes.iter().enumerate() {
        let role = roles.iter().find(|(j, _)| *j == i).map(|(_, r)| *r);
        match role {
            Some(Role::Resource) => resource(&mut set, &php, &calls, class),
            Some(Role::Configurator) => configurator(&mut set, &php, &calls, class),
            Some(Role::Page) => page(&mut set, &php, &calls, class, "filament_page"),
            Some(Role::RelationManager) => page(&mut set, &php, &calls, class, "filament_relation_manager"),
            Some(Role::Widget) => widget(&mut set, &php, &calls, class),
            Some(Role::Other) | None => plain(&mut set, &php, &calls, class, "class"),
        }
    }
    Ok(ChunkOutcome::Chunks(set.finish()))
}

/// The value of a static property: a string literal, a `X::class` FQCN, or the source text.
fn property_value(php: &PhpFile<'_>, class: &ClassInfo, name: &str) -> Option<String> {
    let value = class.property(name)?.value.as_deref()?.trim();
    if value == "null" {
        return None;
    }
    Some(unquote(value).map(str::to_string).or_else(|| php.class_constant(value)).unwrap_or_else(|| value.to_string()))
}

/// `ProductForm::configure($schema)` in a resource method -> the FQCN of `ProductForm`.
fn delegate(php: &PhpFile<'_>, calls: &Calls, method: &MethodInfo) -> Option<String> {
    let body = method.body?;
    calls
        .within(body)
        .map(|i| &calls.calls[i])
        .find(|c| c.kind == CallKind::Scoped && c.name == "configure")
        .map(|c| php.resolve(&c.target))
}

fn resource(set: &mut ChunkSet<'_>, php: &PhpFile<'_>, calls: &Calls, class: &ClassInfo) {
    let fqcn = class.fqcn.clone().unwrap_or_default();
    let short = class.name.clone().unwrap_or_default();
    let model = property_value(php, class, "model");
    let cluster = property_value(php, class, "cluster");
    let translatable = class.traits.iter().any(|t| t.ends_with("\\Translatable") || t == "Translatable");
    let pages: Map<String, Value> = class
        .method("getPages")
        .map(|m| {
            php.returned_array(m)
                .into_iter()
                .filter_map(|(key, value)| {
                    let page = value.split("::").next().filter(|_| value.contains("::route"))?;
                    let route = first_string_argument(value.split_once("::route").map_or("", |(_, r)| r));
                    Some((key.unwrap_or_else(|| page.to_string()), json!({"class": php.resolve(page), "route": route})))
                })
                .collect()
        })
        .unwrap_or_default();
    let class_list = |method: &str| -> Vec<String> {
        class
            .method(method)
            .map(|m| {
                php.returned_array(m)
                    .into_iter()
                    .filter_map(|(_, v)| php.class_constant(&v).or_else(|| v.split("::").next().filter(|_| v.contains("::make")).map(|c| php.resolve(c))))
                    .collect()
            })
            .unwrap_or_default()
    };
    let relations = class_list("getRelations");
    let widgets = class_list("getWidgets");
    let mut delegates = Map::new();
    for (method, _) in SCHEMA_METHODS {
        if let Some(target) = class.method(method).and_then(|m| delegate(php, calls, m)) {
            delegates.insert((*method).to_string(), json!(target));
        }
    }
    let inline: Vec<&str> =
        SCHEMA_METHODS.iter().map(|(m, _)| *m).filter(|m| class.method(m).is_some() && !delegates.contains_key(*m)).collect();
    let layout = if !delegates.is_empty() || class.property("navigationIcon").is_some_and(|p| php.text(p.span).contains("BackedEnum")) {
        "v4"
    } else {
        "v3"
    };

    let mut summary = format!("// Filament resource {short}");
    if let Some(model) = &model {
        summary.push_str(&format!(" for model {model}"));
    }
    summary.push_str(&format!(": {}", screen_words(php, "resource", &short, None, model.as_deref())));
    if let Some(cluster) = &cluster {
        summary.push_str(&format!(", in cluster {}", cluster.rsplit('\\').next().unwrap_or(cluster)));
    }
    for (method, target) in &delegates {
        summary.push_str(&format!("; {method}: {}", target.as_str().unwrap_or_default().rsplit('\\').next().unwrap_or_default()));
    }
    if !inline.is_empty() {
        summary.push_str(&format!("; inline {}", inline.join(", ")));
    }
    let mut navigation = Map::new();
    for (key, property) in [("icon", "navigationIcon"), ("group", "navigationGroup"), ("label", "navigationLabel"), ("sort", "navigationSort"), ("parent_item", "navigationParentItem")] {
        if let Some(value) = property_value(php, class, property) {
            navigation.insert(key.into(), json!(value));
        }
    }
    let builder = php
        .class_builder(class, "filament_resource", &short)
        .content(format!("{summary}\n{}", php.skeleton(class)))
        .meta("layout", layout)
        .meta_opt("model", model.clone())
        .meta_opt("cluster", cluster.clone())
        .meta_opt("navigation", Some(Value::Object(navigation)))
        .meta_opt("record_title_attribute", property_value(php, class, "recordTitleAttribute"))
        .meta_opt("slug", property_value(php, class, "slug"))
        .meta_opt("model_label", property_value(php, class, "modelLabel"))
        .meta_opt("pages", Some(Value::Object(pages.clone())))
        .meta_opt("relations", Some(json!(relations)))
        .meta_opt("widgets", Some(json!(widgets)))
        .meta_opt("delegates", Some(Value::Object(delegates.clone())))
        .meta("translatable", translatable)
        .related_all(model.iter().cloned())
        .related_all(cluster.iter().cloned())
        .related_all(pages.values().filter_map(|p| p.get("class")?.as_str().map(str::to_string)))
        .related_all(relations.iter().cloned())
        .related_all(widgets.iter().cloned())
        .related_all(delegates.values().filter_map(|v| v.as_str().map(str::to_string)));
    let id = set.push(builder);

    for method in &class.methods {
        let builder = if let Some((_, kind)) = SCHEMA_METHODS.iter().find(|(m, _)| *m == method.name) {
            match delegates.get(&method.name).and_then(Value::as_str) {
                Some(target) => php
                    .method_builder(class, method, kind, &id)
                    .content(format!(
                        "// {short} {} is configured in {target}\n{}",
                        method.name,
                        php.text(method.span)
                    ))
                    .meta("delegates_to", target)
                    .meta("resource", fqcn.clone())
                    .related(target.to_string())
                    .related_all(model.iter().cloned()),
                None => schema_chunk(php, calls, class, method, kind, &id, &short, Some(&fqcn), model.as_deref()),
            }
        } else if let Some((_, placement)) = ACTION_METHODS.iter().find(|(m, _)| *m == method.name) {
            actions_chunk(php, calls, class, method, &id, placement, &short)
        } else {
            php.method_builder(class, method, "method", &id)
        };
        set.push(builder);
    }
}

/// A v4 `Schemas/*Form`, `Schemas/*Infolist` or `Tables/*Table` class.
fn configurator(set: &mut ChunkSet<'_>, php: &PhpFile<'_>, calls: &Calls, class: &ClassInfo) {
    let short = class.name.clone().unwrap_or_default();
    let Some(configure) = class.method("configure") else { return };
    let param_types: Vec<String> = php.parameter_classes(&configure.params).into_iter().map(|(t, _)| t).collect();
    let kind = if param_types.iter().any(|t| t.ends_with("\\Table")) {
        "filament_table"
    } else if short.ends_with("Infolist") {
        "filament_infolist"
    } else {
        "filament_form"
    };
    let id = set.push(php.class_builder(class, "class", &short).meta("configures", kind.trim_start_matches("filament_")));
    for method in &class.methods {
        let builder = if method.name == "configure" {
            schema_chunk(php, calls, class, method, kind, &id, &short, None, None)
        } else {
            php.method_builder(class, method, "method", &id)
        };
        set.push(builder);
    }
}

/// A resource page or relation manager.
fn page(set: &mut ChunkSet<'_>, php: &PhpFile<'_>, calls: &Calls, class: &ClassInfo, kind: &str) {
    let short = class.name.clone().unwrap_or_default();
    let resource = property_value(php, class, "resource");
    let relationship = property_value(php, class, "relationship");
    let builder = php
        .class_builder(class, kind, &short)
        .meta_opt("resource", resource.clone())
        .meta_opt("relationship", relationship)
        .related_all(resource.iter().cloned());
    let id = set.push(builder);
    screen_methods(set, php, calls, class, &id, &short, resource.as_deref());
}

/// A page's or a widget's methods: its form, table and infolist as schema
/// chunks, its action methods as `filament_actions`, the rest as `method`.
fn screen_methods(set: &mut ChunkSet<'_>, php: &PhpFile<'_>, calls: &Calls, class: &ClassInfo, id: &str, short: &str, resource: Option<&str>) {
    for method in &class.methods {
        let builder = if let Some((_, kind)) = SCHEMA_METHODS.iter().find(|(m, _)| *m == method.name) {
            schema_chunk(php, calls, class, method, kind, id, short, resource, None)
        } else if let Some((_, placement)) = ACTION_METHODS.iter().find(|(m, _)| *m == method.name) {
            actions_chunk(php, calls, class, method, id, placement, short).related_all(resource.map(str::to_string))
        } else {
            php.method_builder(class, method, "method", id)
        };
        set.push(builder);
    }
}

fn plain(set: &mut ChunkSet<'_>, php: &PhpFile<'_>, _calls: &Calls, class: &ClassInfo, kind: &str) {
    let Some(short) = class.name.clone() else { return };
    let id = set.push(php.class_builder(class, kind, &short));
    for method in &class.methods {
        set.push(php.method_builder(class, method, "method", &id));
    }
}

/// The Filament components built in a span.
#[derive(Default)]
struct Components {
    fields: Vec<Value>,
    columns: Vec<Value>,
    filters: Vec<Value>,
    entries: Vec<Value>,
    layout: Vec<Value>,
    actions: Vec<Value>,
}

impl Components {
    fn names(list: &[Value]) -> Vec<String> {
        list.iter().filter_map(|v| v.get("name")?.as_str().map(str::to_string)).collect()
    }
}

/// `DeleteBulkAction` -> `delete`, as Filament names actions by default.
fn default_action_name(class: &str) -> String {
    let stem = class.trim_end_matches("Action").trim_end_matches("Bulk");
    let mut chars = stem.chars();
    chars.next().map(|c| c.to_lowercase().chain(chars).collect()).unwrap_or_default()
}

fn components(php: &PhpFile<'_>, calls: &Calls, span: Span, default_placement: Option<&str>) -> Components {
    let mut out = Components::default();
    let slot_names: Vec<&str> = ACTION_SLOTS.iter().map(|(n, _)| *n).collect();
    for i in calls.within(span).collect::<Vec<_>>() {
        let call = &calls.calls[i];
        if call.kind != CallKind::Scoped || call.name != "make" {
            continue;
        }
        let fqcn = php.resolve(&call.target);
        let ty = fqcn.rsplit('\\').next().unwrap_or(&fqcn).to_string();
        if ty.ends_with("ActionGroup") {
            continue;
        }
        let name = first_string_argument(&call.args);
        let modifiers: Vec<&code_intel_laravel_support::Call> = calls.modifiers(i).into_iter().map(|m| &calls.calls[m]).collect();
        let mut entry = Map::new();
        entry.insert("type".into(), json!(ty));
        let modifier_names: Vec<&str> = modifiers.iter().map(|m| m.name.as_str()).collect();
        for m in &modifiers {
            match m.name.as_str() {
                "relationship" => {
                    if let Some(rel) = first_string_argument(&m.args) {
                        entry.insert("relationship".into(), json!(rel));
                    }
                }
                "label" | "modalHeading" => {
                    if let Some(label) = first_string_argument(&m.args) {
                        entry.insert(if m.name == "label" { "label" } else { "modal_heading" }.into(), json!(label));
                    }
                }
                _ => {}
            }
        }
        if !modifier_names.is_empty() {
            entry.insert("modifiers".into(), json!(modifier_names));
        }
        if ty.ends_with("Action") {
            let placement = calls
                .enclosing(call.span, &slot_names)
                .and_then(|s| ACTION_SLOTS.iter().find(|(n, _)| *n == calls.calls[s].name))
                .map(|(_, p)| *p)
                .or(default_placement)
                .unwrap_or("form");
            let placement = if ty.contains("Bulk") && placement == "toolbar" { "bulk" } else { placement };
            entry.insert("name".into(), json!(name.clone().unwrap_or_else(|| default_action_name(&ty))));
            entry.insert("placement".into(), json!(placement));
            if arguments(&call.args).is_empty() || name.is_none() {
                entry.insert("default_name".into(), json!(true));
            }
            out.actions.push(Value::Object(entry));
            continue;
        }
        let Some(name) = name else { continue };
        entry.insert("name".into(), json!(name));
        let list = if ty.ends_with("Column") || ty == "ColumnGroup" {
            &mut out.columns
        } else if ty.ends_with("Filter") {
            &mut out.filters
        } else if ty.ends_with("Entry") {
            &mut out.entries
        } else if LAYOUT.contains(&ty.as_str()) {
            &mut out.layout
        } else {
            &mut out.fields
        };
        list.push(Value::Object(entry));
    }
    out
}

/// What a developer calls the screen a resource, form, table or infolist
/// makes, in words (`the database hosts list (table) in the admin panel`;
/// a custom page's or a widget's: `the settings form in the admin panel`):
/// requests say "the hosts list", "the order form", "管理画面の一覧", not
/// `DatabaseHostResource::table`. The records are named by the model, else
/// by the resource or the owner less its Filament suffix (`VotesRelationManager`
/// -> votes, `ProductsTable` -> products); the panel by the namespace
/// (`App\Filament\Server\...` -> server), `admin` when it names none
/// (Filament's default panel).
fn screen_words(php: &PhpFile<'_>, what: &str, owner: &str, resource: Option<&str>, model: Option<&str>) -> String {
    screen(php, what, owner, resource, model).0
}

/// [`screen_words`], and the short names a request gives that screen
/// (`orders list`, `orders table`, `product form`, `product details`; a
/// relation manager's table also `reviews tab`): the
/// chunk's metadata `aliases`, which the host reads as names of the chunk (a
/// request saying "the orders list" names the table of orders the way
/// "OrdersTable" would). Only a screen of records has them: a custom page's
/// or a widget's class name is already what it is called.
fn screen(php: &PhpFile<'_>, what: &str, owner: &str, resource: Option<&str>, model: Option<&str>) -> (String, Vec<String>) {
    let last = |s: &str| s.rsplit('\\').next().unwrap_or(s).to_string();
    // Records: a resource's, a relation manager's or a v4 schema class's
    // form or table creates, edits and lists records; a custom page's or a
    // widget's (`Settings`, `PopularItems`) is a screen of its own.
    let mut records = true;
    let subject = model.map(last).or_else(|| resource.map(|r| last(r).trim_end_matches("Resource").to_string())).unwrap_or_else(|| {
        let suffix = ["RelationManager", "Resource", "Table", "Form", "Infolist", "Schema"]
            .iter()
            .find_map(|suffix| owner.strip_suffix(suffix).filter(|s| !s.is_empty()));
        records = suffix.is_some();
        suffix.unwrap_or(owner).to_string()
    });
    let mut words = split_words(&subject);
    let panel = panel(php);
    if !records {
        return (format!("the {} {what} in the {panel} panel", words.join(" ")), Vec::new());
    }
    match what {
        "table" | "resource" => {
            if let Some(noun) = words.last_mut().filter(|w| !w.ends_with('s')) {
                *noun = pluralize(noun);
            }
            let subject = words.join(" ");
            if what == "table" {
                let mut aliases = vec![format!("{subject} list"), format!("{subject} table")];
                // A relation manager's table is shown as a tab of its
                // owner's view and edit pages ("the node's allocations tab").
                if owner.ends_with("RelationManager") {
                    aliases.push(format!("{subject} tab"));
                }
                (format!("the {subject} list (table) in the {panel} panel"), aliases)
            } else {
                (format!("the {subject} pages of the {panel} panel"), Vec::new())
            }
        }
        "infolist" => {
            let subject = words.join(" ");
            (format!("the {subject} details (view) in the {panel} panel"), vec![format!("{subject} details")])
        }
        _ => {
            let subject = words.join(" ");
            (format!("the {subject} {what} (create, edit) in the {panel} panel"), vec![format!("{subject} {what}")])
        }
    }
}

/// The panel a class belongs to, from its namespace (`App\Filament\Server\...`
/// -> `server`), `admin` when it names none (Filament's default panel).
fn panel(php: &PhpFile<'_>) -> String {
    php.namespace
        .as_deref()
        .and_then(|ns| {
            let mut segments = ns.split('\\').skip_while(|s| *s != "Filament");
            segments.next()?;
            segments.next().filter(|s| !matches!(*s, "Resources" | "Pages" | "Widgets" | "Clusters" | "Schemas" | "Tables" | "Components"))
        })
        .map_or_else(|| "admin".to_string(), |s| split_words(s).join(" "))
}

/// A widget (`Filament\Widgets\*`: stats, chart, table), on a dashboard
/// or a resource's pages: a `filament_widget` chunk whose summary names it
/// as a developer does (`the popular items widget (table) in the admin
/// panel`), with `aliases` (`popular items widget`, and `orders chart` for
/// a chart), its `table()` a `filament_table` chunk with its columns.
fn widget(set: &mut ChunkSet<'_>, php: &PhpFile<'_>, calls: &Calls, class: &ClassInfo) {
    let Some(short) = class.name.clone() else { return };
    // As resolved: `TableWidget as BaseWidget` is a table widget.
    let base = class.base_fqcn.as_deref().map_or("", |b| b.rsplit('\\').next().unwrap_or(b));
    let what = if base.contains("Chart") {
        "chart"
    } else if base.contains("Stats") {
        "stats"
    } else if base.contains("Table") {
        "table"
    } else {
        "widget"
    };
    let name = short.strip_suffix("Widget").filter(|s| !s.is_empty()).unwrap_or(&short);
    let words = split_words(name).join(" ");
    let panel = panel(php);
    let mut aliases = vec![format!("{words} widget")];
    if what == "chart" && !words.ends_with("chart") {
        aliases.push(format!("{words} chart"));
    }
    let mut summary = format!("// Filament widget {short}: the {words} widget ({what}) in the {panel} panel");
    // A stats widget's cards, by their labels (`Stat::make('Revenue', ...)`).
    let stats: Vec<String> = class
        .methods
        .iter()
        .flat_map(|m| calls.within(m.span).map(|i| &calls.calls[i]).collect::<Vec<_>>())
        .filter(|c| c.kind == CallKind::Scoped && c.name == "make" && php.resolve(&c.target).ends_with("\\Stat"))
        .filter_map(|c| first_string_argument(&c.args))
        .collect();
    if !stats.is_empty() {
        summary.push_str(&format!("; stats: {}", stats.join(", ")));
    }
    let builder = php
        .class_builder(class, "filament_widget", &short)
        .content(format!("{summary}\n{}", php.skeleton(class)))
        .meta("widget", what)
        .meta_opt("stats", Some(stats))
        .meta_opt("aliases", Some(aliases));
    let id = set.push(builder);
    screen_methods(set, php, calls, class, &id, &short, None);
}

/// `DatabaseHost` -> `["database", "host"]`.
fn split_words(name: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let boundary = i > 0
            && c.is_uppercase()
            && (chars[i - 1].is_lowercase() || chars.get(i + 1).is_some_and(|n| n.is_lowercase()) && chars[i - 1].is_uppercase());
        if words.is_empty() || boundary || c == '_' {
            words.push(String::new());
        }
        if c != '_' {
            if let Some(w) = words.last_mut() {
                w.extend(c.to_lowercase());
            }
        }
    }
    words.retain(|w| !w.is_empty());
    words
}

#[allow(clippy::too_many_arguments)]
fn schema_chunk(
    php: &PhpFile<'_>,
    calls: &Calls,
    class: &ClassInfo,
    method: &MethodInfo,
    kind: &str,
    parent: &str,
    owner: &str,
    resource: Option<&str>,
    model: Option<&str>,
) -> ChunkBuilder {
    let found = components(php, calls, method.span, None);
    let what = kind.trim_start_matches("filament_");
    let (screen_words, aliases) = screen(php, what, owner, resource, model);
    let mut summary = format!("// Filament {what} of {owner}: {screen_words}");
    for (label, list) in [("fields", &found.fields), ("columns", &found.columns), ("filters", &found.filters), ("entries", &found.entries)] {
        let names = Components::names(list);
        if !names.is_empty() {
            summary.push_str(&format!("; {label}: {}", names.join(", ")));
        }
    }
    let actions: Vec<String> = found
        .actions
        .iter()
        .filter_map(|a| Some(format!("{} ({})", a.get("name")?.as_str()?, a.get("placement")?.as_str()?)))
        .collect();
    if !actions.is_empty() {
        summary.push_str(&format!("; actions: {}", actions.join(", ")));
    }
    php.method_builder(class, method, kind, parent)
        .content(format!("{summary}\n{}", php.text(method.span)))
        .meta_opt("resource", resource.map(str::to_string))
        .meta_opt("model", model.map(str::to_string))
        .meta_opt("fields", Some(found.fields))
        .meta_opt("columns", Some(found.columns))
        .meta_opt("filters", Some(found.filters))
        .meta_opt("entries", Some(found.entries))
        .meta_opt("layout", Some(found.layout))
        .meta_opt("actions", Some(found.actions))
        .meta_opt("aliases", Some(aliases))
        .related_all(resource.map(str::to_string))
        .related_all(model.map(str::to_string))
}

fn actions_chunk(
    php: &PhpFile<'_>,
    calls: &Calls,
    class: &ClassInfo,
    method: &MethodInfo,
    parent: &str,
    placement: &str,
    owner: &str,
) -> ChunkBuilder {
    let found = components(php, calls, method.span, Some(placement));
    let names: Vec<String> = found
        .actions
        .iter()
        .filter_map(|a| Some(format!("{} ({})", a.get("name")?.as_str()?, a.get("type")?.as_str()?)))
        .collect();
    php.method_builder(class, method, "filament_actions", parent)
        .content(format!("// Filament {placement} actions of {owner}: {}\n{}", names.join(", "), php.text(method.span)))
        .meta("placement", placement)
        .meta_opt("actions", Some(found.actions))
}

#[cfg(test)]
mod tests {
    use super::split_words;

    #[test]
    fn screen_words_are_plain_english() {
        assert_eq!(split_words("DatabaseHost"), ["database", "host"]);
        assert_eq!(split_words("APIKey"), ["api", "key"]);
        assert_eq!(split_words("Votes"), ["votes"]);
        assert_eq!(split_words("order_item"), ["order", "item"]);
    }
}
