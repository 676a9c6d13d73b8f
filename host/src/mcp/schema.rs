//! JSON Schemas for tool inputs and outputs that every major MCP client
//! accepts.
//!
//! schemars writes `Option<T>` as `"type": ["string", "null"]` (or an `anyOf`
//! with a null branch), puts nested types behind `$ref`/`$defs`, and adds
//! non-standard formats such as `"uint32"`. Several clients reject one or the
//! other (union types, unresolved references, unknown formats), so schemas are
//! generated inline and simplified: an optional argument is simply not
//! `required`, never nullable.

use std::sync::Arc;

use rmcp::model::JsonObject;
use rmcp::schemars::JsonSchema;
use rmcp::schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// Formats defined by JSON Schema 2020-12 (the others are dropped).
const STANDARD_FORMATS: &[&str] = &[
    "date-time", "date", "time", "duration", "email", "idn-email", "hostname", "idn-hostname", "ipv4", "ipv6",
    "uri", "uri-reference", "iri", "iri-reference", "uuid", "uri-template", "json-pointer",
    "relative-json-pointer", "regex",
];

/// The input schema of a tool whose arguments deserialize into `T`.
///
/// # Panics
/// If `T`'s schema is not an object schema (a programming error caught by
/// the unit tests of every tool).
#[must_use]
pub fn input<T: JsonSchema>() -> Arc<JsonObject> {
    let value = generate::<T>(false);
    assert_eq!(value.get("type").and_then(Value::as_str), Some("object"), "tool input schemas must be objects");
    Arc::new(value)
}

/// The output schema of a tool whose structured result serializes from `T`.
#[must_use]
pub fn output<T: JsonSchema>() -> Arc<JsonObject> {
    Arc::new(generate::<T>(true))
}

fn generate<T: JsonSchema>(for_output: bool) -> JsonObject {
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    if for_output {
        settings = settings.for_serialize();
    }
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = serde_json::to_value(schema).expect("a schema serializes");
    simplify(&mut value);
    let Value::Object(mut object) = value else { panic!("schema root is not an object") };
    for key in ["$schema", "title", "description"] {
        object.remove(key);
    }
    if !for_output {
        // Inputs are inlined entirely (recursive input types are not used);
        // outputs keep `$defs` for recursive types such as outlines.
        object.remove("$defs");
        object.remove("definitions");
    }
    object
}

/// Rewrites a schema in place into the subset every client understands:
/// no nullable branches, no non-standard formats, enums as
/// `{"type": "string", "enum": [...]}` (not `oneOf` + `const`), no
/// `additionalProperties: true` (the default anyway), and no bare `true`
/// schema (an unconstrained value is declared as an object by its type, see
/// [`JsonObject`]).
pub fn simplify(value: &mut Value) {
    match value {
        Value::Object(map) => {
            collapse_nullable(map);
            collapse_const_enum(map);
            if map.get("additionalProperties") == Some(&Value::Bool(true)) {
                map.remove("additionalProperties");
            }
            if map.get("type").and_then(Value::as_str) == Some("integer")
                && map.get("minimum").and_then(Value::as_f64).is_some_and(|m| m.fract() != 0.0)
            {
                map.remove("minimum");
            }
            if let Some(Value::String(format)) = map.get("format")
                && !STANDARD_FORMATS.contains(&format.as_str())
            {
                map.remove("format");
            }
            if map.get("default").is_some_and(Value::is_null) {
                map.remove("default");
            }
            for child in map.values_mut() {
                simplify(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(simplify),
        _ => {}
    }
}

/// `"type": [X, "null"]` -> `"type": X`; `anyOf`/`oneOf` with a null branch
/// -> the other branch (merged in when it is the only one).
fn collapse_nullable(map: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = map.get("type") {
        let non_null: Vec<Value> = types.iter().filter(|t| t.as_str() != Some("null")).cloned().collect();
        let replacement = if non_null.len() == 1 { non_null[0].clone() } else { Value::Array(non_null) };
        map.insert("type".to_string(), replacement);
    }
    if map.get("const").is_some_and(Value::is_null) {
        map.remove("const");
    }
    if let Some(Value::Array(options)) = map.get("enum") {
        let kept: Vec<Value> = options.iter().filter(|o| !o.is_null()).cloned().collect();
        map.insert("enum".to_string(), Value::Array(kept));
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = map.get(key) else { continue };
        let kept: Vec<Value> = branches.iter().filter(|b| !is_null_schema(b)).cloned().collect();
        if kept.len() == branches.len() {
            continue;
        }
        map.remove(key);
        if kept.len() == 1 {
            if let Value::Object(only) = &kept[0] {
                for (k, v) in only {
                    map.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        } else {
            map.insert(key.to_string(), Value::Array(kept));
        }
    }
}

/// `oneOf`/`anyOf` whose branches are each one constant of one JSON type
/// (what schemars writes for an enum whose variants have doc comments) ->
/// `"type"` + `"enum"`. The variants' descriptions go; the property's own
/// description names the values.
fn collapse_const_enum(map: &mut Map<String, Value>) {
    for key in ["oneOf", "anyOf"] {
        let Some(Value::Array(branches)) = map.get(key) else { continue };
        let constants: Option<Vec<Vec<Value>>> = branches
            .iter()
            .map(|b| {
                let b = b.as_object()?;
                let values = match (b.get("const"), b.get("enum")) {
                    (Some(c), None) => vec![c.clone()],
                    (None, Some(Value::Array(e))) => e.clone(),
                    _ => return None,
                };
                b.keys().all(|k| matches!(k.as_str(), "const" | "enum" | "type" | "description" | "title")).then_some(values)
            })
            .collect();
        let Some(constants) = constants else { continue };
        let constants: Vec<Value> = constants.into_iter().flatten().collect();
        let Some(kind) = json_type(&constants) else { continue };
        map.remove(key);
        map.insert("type".into(), Value::String(kind.into()));
        map.insert("enum".into(), Value::Array(constants));
    }
    if map.contains_key("enum") && !map.contains_key("type")
        && let Some(kind) = map.get("enum").and_then(Value::as_array).and_then(|e| json_type(e))
    {
        map.insert("type".into(), Value::String(kind.into()));
    }
}

/// The one JSON type all `values` share (`None` when they mix types).
fn json_type(values: &[Value]) -> Option<&'static str> {
    let kind = |v: &Value| match v {
        Value::String(_) => Some("string"),
        Value::Bool(_) => Some("boolean"),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some("integer"),
        Value::Number(_) => Some("number"),
        _ => None,
    };
    let first = kind(values.first()?)?;
    values.iter().all(|v| kind(v) == Some(first)).then_some(first)
}

fn is_null_schema(value: &Value) -> bool {
    value.get("type").and_then(Value::as_str) == Some("null")
        || value.get("const").is_some_and(Value::is_null)
        || value.as_object().is_some_and(|m| m.get("enum").and_then(Value::as_array).is_some_and(|e| e.iter().all(Value::is_null)))
}

/// Every place in a schema that uses a feature some client rejects or a
/// strict validator (MCP Inspector `--strict`) warns about, as JSON
/// pointers: union `type` arrays, `$ref`, nullable branches, boolean
/// schemas, properties without a `type`, enums written as `oneOf`/`const`.
#[cfg(test)]
#[must_use]
pub fn portability_problems(value: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    walk(value, String::new(), &mut problems);
    problems
}

#[cfg(test)]
fn walk(value: &Value, pointer: String, problems: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if map.get("type").is_some_and(Value::is_array) {
                problems.push(format!("{pointer}/type is a union"));
            }
            if map.contains_key("$ref") {
                problems.push(format!("{pointer}/$ref"));
            }
            if map.get("type").and_then(Value::as_str) == Some("null") {
                problems.push(format!("{pointer} is a null branch"));
            }
            if map.contains_key("const") {
                problems.push(format!("{pointer}/const (an enum as oneOf + const)"));
            }
            if map.contains_key("enum") && !map.contains_key("type") {
                problems.push(format!("{pointer}/enum has no type"));
            }
            // Keywords whose value is data or a flag, never a schema.
            let not_schemas = ["required", "enum", "default", "examples", "uniqueItems", "readOnly", "writeOnly", "deprecated"];
            for (k, v) in map.iter().filter(|(k, _)| !not_schemas.contains(&k.as_str())) {
                if v.is_boolean() && k != "additionalProperties" {
                    problems.push(format!("{pointer}/{k} is a boolean schema"));
                }
            }
            if let Some(Value::Object(props)) = map.get("properties") {
                for (name, prop) in props {
                    let typed = prop.get("type").is_some() || prop.get("$ref").is_some();
                    if !typed {
                        problems.push(format!("{pointer}/properties/{name} has no type"));
                    }
                }
            }
            if let Some(items) = map.get("items")
                && items.get("type").is_none()
            {
                problems.push(format!("{pointer}/items has no type"));
            }
            for (k, v) in map {
                walk(v, format!("{pointer}/{k}"), problems);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                walk(v, format!("{pointer}/{i}"), problems);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    enum Mode {
        /// The first.
        #[serde(rename = "a")]
        A,
        /// The second.
        #[serde(rename = "b")]
        B,
    }

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Inner {
        x: u32,
    }

    /// Some args.
    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        /// Needed.
        name: String,
        /// Maybe.
        limit: Option<u32>,
        mode: Option<Mode>,
        inner: Option<Inner>,
        tags: Option<Vec<String>>,
        /// Any arguments.
        params: Option<JsonObject>,
        #[schemars(range(min = 1, max = 10))]
        count: Option<u32>,
    }

    #[test]
    fn optional_fields_become_plain_optional_properties() {
        let schema = Value::Object((*input::<Args>()).clone());
        assert_eq!(portability_problems(&schema), Vec::<String>::new(), "{schema:#}");
        assert_eq!(schema["required"], serde_json::json!(["name"]));
        assert_eq!(schema["properties"]["limit"]["type"], "integer");
        assert!(schema["properties"]["limit"].get("format").is_none());
        assert_eq!(schema["properties"]["limit"]["description"], "Maybe.");
        assert_eq!(schema["properties"]["mode"]["enum"], serde_json::json!(["a", "b"]));
        assert_eq!(schema["properties"]["mode"]["type"], "string");
        assert!(schema["properties"]["mode"].get("oneOf").is_none(), "{schema:#}");
        assert_eq!(schema["properties"]["params"], serde_json::json!({"type": "object", "description": "Any arguments."}));
        assert_eq!((&schema["properties"]["count"]["minimum"], &schema["properties"]["count"]["maximum"]), (&serde_json::json!(1), &serde_json::json!(10)));
        assert_eq!(schema["properties"]["inner"]["type"], "object");
        assert_eq!(schema["properties"]["tags"]["type"], "array");
        assert!(schema.get("$schema").is_none());
    }
}
