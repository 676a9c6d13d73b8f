//! Laravel migrations (`database/migrations/*.php`): the schema a migration
//! creates or changes, as something a search can find ("where are orders
//! stored?", "which columns does products have?").
//!
//! Chunks:
//! - `migration`: the migration class (named or anonymous) as a skeleton,
//!   prefixed with a one-line summary of what it does to which tables;
//! - `table_schema`: one per `Schema::create` / `Schema::table` / `drop` /
//!   `rename` in `up()`, with columns (name, type, modifiers), indexes,
//!   foreign keys, dropped and renamed columns, and what `down()` does to
//!   the table;
//! - `method`: `down()` and any other method (`up()` is represented by its
//!   `table_schema` chunks), so the file still yields its definitions.
//!
//! A PHP file in the migrations folder with neither a `Migration` class nor
//! `Schema::` calls is declined, so the general PHP plugin takes it.

use std::collections::BTreeMap;

use code_intel_laravel_support::php::{arguments, first_string_argument, string_arguments};
use code_intel_laravel_support::{Calls, CallKind, ClassInfo, MethodInfo, PhpFile, pluralize, snake_case};
use code_intel_plugin_sdk::text::unquote;
use code_intel_plugin_sdk::{
    ChunkBuilder, ChunkOutcome, ChunkSet, Plugin, PluginError, PluginInfo, SourceFile, export_plugin,
};
use serde_json::{Map, Value, json};

/// Above the general PHP plugin (10): a migration is chunked by its schema.
const PRIORITY: i32 = 20;

/// `Schema::` operations that define or change a table.
const SCHEMA_OPS: &[&str] = &["create", "table", "drop", "dropIfExists", "rename"];

struct Migrations;

impl Plugin for Migrations {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "migrations".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Laravel migrations: one table_schema chunk per Schema::create/table with columns, indexes and foreign keys".into(),
            languages: vec!["php".into()],
            file_patterns: vec!["**/database/migrations/**/*.php".into()],
            priority: PRIORITY,
        }
    }

    fn chunk(file: SourceFile) -> Result<ChunkOutcome, PluginError> {
        chunk_migration(&file.path, &file.content)
    }
}

export_plugin!(Migrations);

/// One `Schema::...` call.
struct SchemaOp {
    call: usize,
    op: String,
    table: String,
    connection: Option<String>,
}

/// Chunks one migration file.
///
/// # Errors
/// The host cannot parse PHP.
pub fn chunk_migration(path: &str, source: &str) -> Result<ChunkOutcome, PluginError> {
    let php = PhpFile::parse(source)?;
    let calls = &php.calls;
    let ops = schema_ops(&php, &calls);
    let migration_class = php.class_extending(&["Migration"]);
    if migration_class.is_none() && ops.is_empty() {
        return Ok(ChunkOutcome::Decline(
            "not a migration: no class extending Migration and no Schema:: calls".into(),
        ));
    }
    let stem = path.rsplit('/').next().unwrap_or(path).trim_end_matches(".php").to_string();
    let mut set = ChunkSet::new(source);

    // `down()` of any class: a file damaged mid-edit can split the migration
    // in two, its `down()` in a class of its own.
    let down_spans: Vec<_> = php.classes.iter().filter_map(|c| c.method("down")).map(|m| m.span).collect();
    let in_down = |op: &SchemaOp| down_spans.iter().any(|d| d.contains(&calls.calls[op.call].span));
    let mut reverts: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    for op in ops.iter().filter(|o| in_down(o)) {
        if op.op == "rename" {
            // down() renames the table back: note it on the original name.
            if let Some(original) = string_arguments(&calls.calls[op.call].args).get(1) {
                reverts.entry(original.clone()).or_default().insert("renames_back_from".into(), json!(op.table));
            }
            continue;
        }
        let entry = reverts.entry(op.table.clone()).or_default();
        match op.op.as_str() {
            "drop" | "dropIfExists" => {
                entry.insert("drops_table".into(), Value::Bool(true));
            }
            "table" => {
                let body = blueprint(&php, &calls, op);
                for (key, value) in [("drops_columns", json!(body.dropped_columns)), ("drops_indexes", json!(body.dropped_indexes))] {
                    if value.as_array().is_some_and(|a| !a.is_empty()) {
                        entry.insert(key.into(), value);
                    }
                }
                if !body.columns.is_empty() {
                    let names: Vec<&Value> = body.columns.iter().filter_map(|c| c.get("name")).collect();
                    entry.insert("adds_columns".into(), json!(names));
                }
            }
            "rename" => {}
            _ => {}
        }
    }

    let up_ops: Vec<&SchemaOp> = ops.iter().filter(|o| !in_down(o)).collect();
    let summary = summary_line(&stem, &up_ops, &reverts);
    let primary = migration_class.or_else(|| php.classes.first());
    let parent = primary.map(|class| push_class(&mut set, &php, class, &stem, &summary, &up_ops, &reverts));

    for op in &up_ops {
        let call = &calls.calls[op.call];
        let body = blueprint(&php, &calls, op);
        let operation = match op.op.as_str() {
            "create" => "create",
            "table" => "alter",
            "rename" => "rename",
            _ => "drop",
        };
        let mut builder = ChunkBuilder::new("table_schema", op.table.clone())
            .span(call.span)
            .parent(parent.clone())
            .signature(format!("Schema::{}('{}')", op.op, op.table))
            .meta("table", op.table.clone())
            .meta("operation", operation)
            .meta("migration", stem.clone())
            .meta_opt("connection", op.connection.clone())
            .meta_opt("columns", Some(body.columns.clone()))
            .meta_opt("indexes", Some(body.indexes.clone()))
            .meta_opt("foreign_keys", Some(body.foreign_keys.clone()))
            .meta_opt("dropped_columns", Some(body.dropped_columns.clone()))
            .meta_opt("renamed_columns", Some(body.renamed_columns.clone()))
            .meta_opt("dropped_indexes", Some(body.dropped_indexes.clone()))
            .meta_opt("down", reverts.get(&op.table).cloned().map(Value::Object))
            .related_all(body.foreign_keys.iter().filter_map(|fk| fk.get("on")?.as_str().map(|t| format!("table:{t}"))));
        if op.op == "rename" {
            if let Some(to) = string_arguments(&call.args).get(1) {
                builder = builder.meta("renamed_to", to.clone()).related(format!("table:{to}"));
            }
        }
        builder = builder.references(body.columns.iter().filter_map(|c| c.get("name")?.as_str().map(str::to_string)));
        set.push(builder);
    }

    // A method's parent is the id its class chunk was given: the primary
    // class's above, or a class chunk of its own for any other named class
    // that has methods to show (a file damaged mid-edit can hold several).
    let covered = |method: &MethodInfo| {
        method.name == "up" && up_ops.iter().any(|o| method.span.contains(&calls.calls[o.call].span))
    };
    for class in &php.classes {
        let class_id = if primary.is_some_and(|p| p.span == class.span) {
            parent.clone()
        } else if class.name.is_some() && class.methods.iter().any(|m| !covered(m)) {
            Some(set.push(php.class_builder(class, "class", &stem).meta("migration", stem.clone())))
        } else {
            None
        };
        let Some(class_id) = class_id else { continue };
        for method in &class.methods {
            if covered(method) {
                continue;
            }
            let mut builder = php.method_builder(class, method, "method", &class_id);
            if method.name == "down" && !reverts.is_empty() {
                builder = builder.meta("reverts", Value::Object(reverts.clone().into_iter().map(|(k, v)| (k, Value::Object(v))).collect()));
            }
            set.push(builder);
        }
    }
    Ok(ChunkOutcome::Chunks(set.finish()))
}

fn push_class(
    set: &mut ChunkSet<'_>,
    php: &PhpFile<'_>,
    class: &ClassInfo,
    stem: &str,
    summary: &str,
    up_ops: &[&SchemaOp],
    reverts: &BTreeMap<String, Map<String, Value>>,
) -> String {
    let is_migration = class.base_short() == Some("Migration");
    let kind = if is_migration { "migration" } else { "class" };
    let id = if is_migration { format!("migration:{stem}") } else { format!("class:{}", class.fqcn.clone().unwrap_or_else(|| stem.to_string())) };
    let mut tables: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for op in up_ops {
        tables.entry(op.op.as_str()).or_default().push(op.table.as_str());
    }
    let created: Vec<&str> = tables.get("create").cloned().unwrap_or_default();
    let altered: Vec<&str> = tables.get("table").cloned().unwrap_or_default();
    let dropped: Vec<&str> =
        up_ops.iter().filter(|o| matches!(o.op.as_str(), "drop" | "dropIfExists")).map(|o| o.table.as_str()).collect();
    let content = format!("// {summary}\n{}", php.skeleton(class));
    let builder = php
        .class_builder(class, kind, stem)
        .id(id)
        .content(content)
        .meta("migration", stem)
        .meta_opt("creates_tables", Some(json!(created)))
        .meta_opt("alters_tables", Some(json!(altered)))
        .meta_opt("drops_tables", Some(json!(dropped)))
        .meta_opt("down", Some(Value::Object(reverts.clone().into_iter().map(|(k, v)| (k, Value::Object(v))).collect())))
        .related_all(up_ops.iter().map(|o| format!("table:{}", o.table)));
    set.push(builder)
}

fn summary_line(stem: &str, up_ops: &[&SchemaOp], reverts: &BTreeMap<String, Map<String, Value>>) -> String {
    let mut parts: Vec<String> = up_ops
        .iter()
        .map(|o| {
            let verb = match o.op.as_str() {
                "create" => "creates table",
                "table" => "alters table",
                "rename" => "renames table",
                _ => "drops table",
            };
            format!("{verb} {}", o.table)
        })
        .collect();
    for (table, revert) in reverts {
        if revert.contains_key("drops_table") {
            parts.push(format!("down() drops {table}"));
        } else {
            parts.push(format!("down() reverts {table}"));
        }
    }
    if parts.is_empty() {
        format!("Migration {stem}")
    } else {
        format!("Migration {stem}: {}", parts.join("; "))
    }
}

fn schema_ops(php: &PhpFile<'_>, calls: &Calls) -> Vec<SchemaOp> {
    let is_schema = |target: &str| {
        let resolved = php.resolve(target);
        target == "Schema" || resolved == "Illuminate\\Support\\Facades\\Schema" || resolved == "Schema"
    };
    let mut ops = Vec::new();
    for (i, call) in calls.calls.iter().enumerate() {
        if !SCHEMA_OPS.contains(&call.name.as_str()) {
            continue;
        }
        let connection = match call.kind {
            CallKind::Scoped if is_schema(&call.target) => None,
            CallKind::Member => match calls.receiver(i).map(|r| &calls.calls[r]) {
                Some(r) if r.kind == CallKind::Scoped && is_schema(&r.target) && r.name == "connection" => {
                    Some(first_string_argument(&r.args).unwrap_or_else(|| r.args.clone()))
                }
                _ => continue,
            },
            CallKind::Scoped => continue,
        };
        let Some(table) = first_string_argument(&call.args) else { continue };
        ops.push(SchemaOp { call: i, op: call.name.clone(), table, connection });
    }
    ops
}

/// What a Blueprint closure declares.
#[derive(Default)]
struct Blueprint {
    columns: Vec<Value>,
    indexes: Vec<Value>,
    foreign_keys: Vec<Value>,
    dropped_columns: Vec<String>,
    renamed_columns: Vec<Value>,
    dropped_indexes: Vec<Value>,
}

/// Column types whose column name is implied when no name is given.
fn implied_columns(method: &str) -> &'static [(&'static str, &'static str)] {
    match method {
        "id" => &[("id", "id")],
        "timestamps" | "nullableTimestamps" => &[("created_at", "timestamp"), ("updated_at", "timestamp")],
        "timestampsTz" => &[("created_at", "timestampTz"), ("updated_at", "timestampTz")],
        "softDeletes" => &[("deleted_at", "timestamp")],
        "softDeletesTz" => &[("deleted_at", "timestampTz")],
        "rememberToken" => &[("remember_token", "string")],
        _ => &[],
    }
}

fn blueprint(php: &PhpFile<'_>, calls: &Calls, op: &SchemaOp) -> Blueprint {
    let call = &calls.calls[op.call];
    let mut out = Blueprint::default();
    let args = arguments(&call.args);
    let Some(closure) = args.get(1) else { return out };
    let Some(var) = closure.split(')').next().and_then(|p| p.rsplit('$').next()).filter(|_| closure.contains('$')) else {
        return out;
    };
    let var = format!("${}", var.trim());
    for i in calls.within(call.args_span).collect::<Vec<_>>() {
        let c = &calls.calls[i];
        if c.kind != CallKind::Member || c.target.trim() != var || calls.receiver(i).is_some() {
            continue;
        }
        let chain: Vec<&code_intel_laravel_support::Call> = calls.modifiers(i).into_iter().map(|m| &calls.calls[m]).collect();
        blueprint_statement(php, c, &chain, &mut out);
    }
    out
}

fn modifier_value(args: &str) -> Value {
    let list = arguments(args);
    match list.as_slice() {
        [] => Value::Bool(true),
        [one] => unquote(one).map_or_else(|| Value::String((*one).to_string()), |s| Value::String(s.to_string())),
        many => Value::Array(many.iter().map(|a| Value::String(unquote(a).unwrap_or(a).to_string())).collect()),
    }
}

/// Foreign-key modifiers and the action they set.
const FK_ACTIONS: &[(&str, &str, &str)] = &[
    ("cascadeOnDelete", "on_delete", "cascade"),
    ("restrictOnDelete", "on_delete", "restrict"),
    ("nullOnDelete", "on_delete", "set null"),
    ("noActionOnDelete", "on_delete", "no action"),
    ("cascadeOnUpdate", "on_update", "cascade"),
    ("restrictOnUpdate", "on_update", "restrict"),
    ("nullOnUpdate", "on_update", "set null"),
];

fn blueprint_statement(
    php: &PhpFile<'_>,
    root: &code_intel_laravel_support::Call,
    chain: &[&code_intel_laravel_support::Call],
    out: &mut Blueprint,
) {
    let method = root.name.as_str();
    let names = string_arguments(&root.args);
    match method {
        "index" | "unique" | "primary" | "fullText" | "spatialIndex" | "rawIndex" => {
            let list = arguments(&root.args);
            let mut index = Map::new();
            index.insert("type".into(), json!(method));
            index.insert("columns".into(), json!(list.first().map(|a| string_arguments(&format!("({a})"))).unwrap_or_default()));
            if let Some(name) = list.get(1).and_then(|a| unquote(a)) {
                index.insert("name".into(), json!(name));
            }
            out.indexes.push(Value::Object(index));
            return;
        }
        "foreign" => {
            let mut fk = Map::new();
            fk.insert("columns".into(), json!(names));
            for m in chain {
                match m.name.as_str() {
                    "references" => {
                        fk.insert("references".into(), modifier_value(&m.args));
                    }
                    "on" => {
                        fk.insert("on".into(), modifier_value(&m.args));
                    }
                    "onDelete" => {
                        fk.insert("on_delete".into(), modifier_value(&m.args));
                    }
                    "onUpdate" => {
                        fk.insert("on_update".into(), modifier_value(&m.args));
                    }
                    other => {
                        if let Some((_, key, value)) = FK_ACTIONS.iter().find(|(n, _, _)| *n == other) {
                            fk.insert((*key).into(), json!(value));
                        }
                    }
                }
            }
            out.foreign_keys.push(Value::Object(fk));
            return;
        }
        "dropColumn" | "dropColumns" => {
            out.dropped_columns.extend(names);
            return;
        }
        "dropTimestamps" | "dropTimestampsTz" => {
            out.dropped_columns.extend(["created_at".to_string(), "updated_at".to_string()]);
            return;
        }
        "dropSoftDeletes" | "dropSoftDeletesTz" => {
            out.dropped_columns.push("deleted_at".into());
            return;
        }
        "dropRememberToken" => {
            out.dropped_columns.push("remember_token".into());
            return;
        }
        "renameColumn" => {
            if let [from, to, ..] = names.as_slice() {
                out.renamed_columns.push(json!({"from": from, "to": to}));
            }
            return;
        }
        "dropForeign" | "dropIndex" | "dropUnique" | "dropPrimary" | "dropFullText" | "dropSpatialIndex" => {
            out.dropped_indexes.push(json!({"type": method.trim_start_matches("drop").to_lowercase(), "target": names}));
            return;
        }
        "dropConstrainedForeignId" | "dropForeignIdFor" => {
            out.dropped_columns.extend(names);
            return;
        }
        _ => {}
    }

    // A column definition: its names, type and modifiers.
    let mut columns: Vec<(String, String)> = Vec::new();
    match method {
        "morphs" | "nullableMorphs" | "uuidMorphs" | "ulidMorphs" | "nullableUuidMorphs" | "nullableUlidMorphs" => {
            if let Some(name) = names.first() {
                columns.push((format!("{name}_id"), method.into()));
                columns.push((format!("{name}_type"), "string".into()));
            }
        }
        "foreignIdFor" => {
            let list = arguments(&root.args);
            let model = list.first().and_then(|a| php.class_constant(a));
            let name = list.get(1).and_then(|a| unquote(a)).map(str::to_string).or_else(|| {
                model.as_ref().map(|m| format!("{}_id", snake_case(m.rsplit('\\').next().unwrap_or(m))))
            });
            if let Some(name) = name {
                columns.push((name, method.into()));
            }
        }
        _ => match names.first() {
            Some(name) => columns.push((name.clone(), method.into())),
            None => {
                for (name, ty) in implied_columns(method) {
                    columns.push(((*name).to_string(), (*ty).to_string()));
                }
            }
        },
    }
    if columns.is_empty() {
        return;
    }
    let mut modifiers = Map::new();
    let mut fk: Option<Map<String, Value>> = None;
    for m in chain {
        let name = m.name.as_str();
        if name == "constrained" {
            let list = string_arguments(&m.args);
            let column = &columns[0].0;
            let on = list.first().cloned().unwrap_or_else(|| {
                if method == "foreignIdFor" {
                    let model = arguments(&root.args).first().and_then(|a| php.class_constant(a));
                    model.map_or_else(
                        || guess_table(column),
                        |m| pluralize(&snake_case(m.rsplit('\\').next().unwrap_or(&m))),
                    )
                } else {
                    guess_table(column)
                }
            });
            let references = list.get(1).cloned().unwrap_or_else(|| "id".into());
            let mut map = Map::new();
            map.insert("columns".into(), json!([column]));
            map.insert("references".into(), json!(references));
            map.insert("on".into(), json!(on));
            fk = Some(map);
        } else if let Some((_, key, value)) = FK_ACTIONS.iter().find(|(n, _, _)| *n == name) {
            if let Some(map) = fk.as_mut() {
                map.insert((*key).into(), json!(value));
            }
        } else if matches!(name, "onDelete" | "onUpdate") && fk.is_some() {
            let key = if name == "onDelete" { "on_delete" } else { "on_update" };
            fk.as_mut().map(|f| f.insert(key.into(), modifier_value(&m.args)));
        } else {
            modifiers.insert(name.to_string(), modifier_value(&m.args));
            if matches!(name, "unique" | "index" | "primary" | "fullText") {
                out.indexes.push(json!({"type": name, "columns": [columns[0].0.clone()]}));
            }
        }
    }
    if let Some(fk) = fk {
        out.foreign_keys.push(Value::Object(fk));
    }
    let params: Vec<&str> = arguments(&root.args).into_iter().skip(1).collect();
    for (name, ty) in columns {
        let mut column = Map::new();
        column.insert("name".into(), json!(name));
        column.insert("type".into(), json!(ty));
        if !params.is_empty() && !matches!(method, "foreignIdFor") {
            column.insert("params".into(), json!(params));
        }
        if !modifiers.is_empty() {
            column.insert("modifiers".into(), Value::Object(modifiers.clone()));
        }
        out.columns.push(Value::Object(column));
    }
}

/// `category_id` -> `categories` (what `->constrained()` assumes).
fn guess_table(column: &str) -> String {
    pluralize(column.strip_suffix("_id").unwrap_or(column))
}
