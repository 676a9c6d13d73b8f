//! Tailwind CSS configuration: the project's design tokens, so "change the
//! primary colour" or "add a breakpoint" finds where they are defined.
//!
//! `tailwind.config.{js,cjs,mjs,ts}` (v3 and earlier) gives `ui_config`
//! chunks: `tailwind_config` (the file, sections elided), `tailwind_theme`
//! (`theme` overrides), `tailwind_theme_extend` (`theme.extend`),
//! `tailwind_plugins` and `tailwind_content` (the paths scanned for
//! classes). Colours are flattened (`brand.600`), and screens, fonts and
//! spacing listed, in metadata.
//!
//! Tailwind v4 configures in CSS: a stylesheet with `@theme`, `@plugin`,
//! `@source` or `@import "tailwindcss"` gives a `tailwind_css` chunk and one
//! `tailwind_theme` chunk per `@theme` block, its `--color-*`, `--font-*`,
//! `--breakpoint-*` and `--spacing-*` variables grouped in metadata. Other
//! stylesheets are declined.
//!
//! The host has no JavaScript grammar yet, so configs are read by a
//! tolerant literal reader ([`js`]); computed values (function calls,
//! arrow functions, spreads) are kept as source text.

pub mod js;

use std::collections::BTreeMap;

use code_intel_plugin_sdk::text::elide;
use code_intel_plugin_sdk::{
    ChunkBuilder, ChunkOutcome, ChunkSet, LineIndex, Plugin, PluginError, PluginInfo, SourceFile, export_plugin,
};
use js::{Member, Node, Reader, Value as Js};
use serde_json::{Map, Value, json};

/// Above a general JavaScript or CSS strategy: these files are configuration.
const PRIORITY: i32 = 20;

/// Theme keys summarised in metadata, with the metadata name.
const THEME_KEYS: &[(&str, &str)] =
    &[("colors", "colors"), ("screens", "screens"), ("fontFamily", "fonts"), ("spacing", "spacing")];

struct Tailwind;

impl Plugin for Tailwind {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "tailwind".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Tailwind CSS configuration: theme, theme.extend, plugins, content paths; v4 CSS @theme blocks".into(),
            languages: vec!["javascript".into(), "typescript".into(), "css".into()],
            file_patterns: vec!["**/tailwind.config.{js,cjs,mjs,ts,mts,cts}".into(), "**/*.css".into()],
            priority: PRIORITY,
        }
    }

    fn chunk(file: SourceFile) -> Result<ChunkOutcome, PluginError> {
        if file.path.ends_with(".css") {
            Ok(chunk_css(&file.path, &file.content))
        } else {
            chunk_config(&file.path, &file.content).map(ChunkOutcome::Chunks)
        }
    }
}

export_plugin!(Tailwind);

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Where the configuration object starts: `module.exports =`, `export
/// default` (an object, `defineConfig({...})`, or a named constant).
fn config_start(src: &str) -> Option<usize> {
    let reader = Reader::new(src);
    let after = |needle: &str| src.find(needle).map(|i| reader.skip(i + needle.len()));
    let at = after("module.exports =").or_else(|| after("module.exports=")).or_else(|| after("export default"))?;
    let rest = &src[at..];
    if rest.starts_with('{') {
        return Some(at);
    }
    let ident: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$').collect();
    if ident.is_empty() {
        return rest.find('{').map(|i| at + i);
    }
    if rest[ident.len()..].trim_start().starts_with('(') {
        return rest.find('{').map(|i| at + i);
    }
    // `export default config` with `const config = { ... }` (maybe typed).
    for decl in ["const", "let", "var"] {
        if let Some(pos) = src.find(&format!("{decl} {ident}")) {
            let eq = src[pos..].find('=').map(|e| pos + e + 1)?;
            return src[eq..].find('{').map(|i| eq + i);
        }
    }
    None
}

/// `import forms from '@tailwindcss/forms'` -> `forms` -> `@tailwindcss/forms`.
fn imports(src: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in src.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("import ") {
            if rest.starts_with("type ") || rest.starts_with('{') {
                continue; // types and named imports are not plugins
            }
            if let Some((name, from)) = rest.split_once(" from ") {
                let module = from.trim().trim_end_matches(';').trim_matches(|c| c == '\'' || c == '"');
                out.insert(name.trim().to_string(), module.to_string());
            }
        } else if let Some((lhs, rhs)) = line.split_once("= require(") {
            let name = lhs.trim().trim_start_matches("const ").trim_start_matches("let ").trim_start_matches("var ").trim();
            let module = rhs.split(')').next().unwrap_or_default().trim_matches(|c| c == '\'' || c == '"');
            out.insert(name.to_string(), module.to_string());
        }
    }
    out
}

/// Flattens a colour tree: `{brand: {100: '#..'}}` -> `{"brand.100": "#.."}`
/// (`DEFAULT` keys name their parent).
fn flatten(prefix: &str, node: &Node, out: &mut Map<String, Value>) {
    match &node.value {
        Js::Object(members) => {
            for m in members {
                let key = if m.key == "DEFAULT" && !prefix.is_empty() {
                    prefix.to_string()
                } else if prefix.is_empty() {
                    m.key.clone()
                } else {
                    format!("{prefix}.{}", m.key)
                };
                flatten(&key, &m.value, out);
            }
        }
        _ => {
            out.insert(if prefix.is_empty() { "…".into() } else { prefix.to_string() }, json!(node.text()));
        }
    }
}

/// A map of one theme key: `screens: {sm: '640px'}` -> `{"sm": "640px"}`;
/// font stacks as lists.
fn entries(node: &Node) -> Value {
    match &node.value {
        Js::Object(members) => {
            let mut map = Map::new();
            for m in members {
                let value = match &m.value.value {
                    Js::Array(items) => json!(items.iter().map(Node::text).collect::<Vec<_>>()),
                    Js::Object(_) => {
                        let mut nested = Map::new();
                        flatten("", &m.value, &mut nested);
                        Value::Object(nested)
                    }
                    _ => json!(m.value.text()),
                };
                map.insert(m.key.clone(), value);
            }
            Value::Object(map)
        }
        _ => json!(node.text()),
    }
}

/// The summary metadata of a theme (or extend) object.
fn theme_meta(theme: &Node) -> Map<String, Value> {
    let mut meta = Map::new();
    let mut other = Vec::new();
    if let Js::Object(members) = &theme.value {
        for m in members {
            if m.key == "extend" {
                continue;
            }
            if m.key == "colors" {
                let mut colors = Map::new();
                flatten("", &m.value, &mut colors);
                meta.insert("colors".into(), Value::Object(colors));
            } else if let Some((_, name)) = THEME_KEYS.iter().find(|(k, _)| *k == m.key) {
                meta.insert((*name).into(), entries(&m.value));
            } else {
                other.push(m.key.clone());
            }
        }
    }
    if !other.is_empty() {
        meta.insert("other_keys".into(), json!(other));
    }
    meta
}

fn summary(label: &str, meta: &Map<String, Value>) -> String {
    let mut parts = vec![label.to_string()];
    for (key, value) in meta {
        if let Some(map) = value.as_object() {
            parts.push(format!("{key}: {}", map.keys().cloned().collect::<Vec<_>>().join(", ")));
        } else if let Some(list) = value.as_array() {
            parts.push(format!("{key}: {}", list.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")));
        }
    }
    parts.join("; ")
}

/// Chunks a `tailwind.config.*` file.
///
/// # Errors
/// No configuration object could be found (the file is not a Tailwind config).
pub fn chunk_config(path: &str, src: &str) -> Result<Vec<code_intel_plugin_sdk::Chunk>, PluginError> {
    let Some(start) = config_start(src) else {
        return Err(PluginError::new(format!(
            "{path}: no configuration object found; expected `export default {{ ... }}`, `module.exports = {{ ... }}` or `export default defineConfig({{ ... }})`"
        )));
    };
    let reader = Reader::new(src);
    let root = reader.value(start);
    let lines = LineIndex::new(src);
    let imported = imports(src);
    let file = path.rsplit('/').next().unwrap_or(path).to_string();
    let member_span = |m: &Member| lines.span(to_u32(m.start), to_u32(m.value.end));
    let mut set = ChunkSet::new(src);

    let sections = ["theme", "plugins", "content"];
    let holes: Vec<(std::ops::Range<usize>, String)> = sections
        .iter()
        .filter_map(|k| root.get(k))
        .map(|m| (m.value.start..m.value.end, if matches!(m.value.value, Js::Array(_)) { "[ … ]".into() } else { "{ … }".into() }))
        .collect();
    let holes_ref: Vec<(std::ops::Range<usize>, &str)> = holes.iter().map(|(r, s)| (r.clone(), s.as_str())).collect();
    let scalar = |key: &str| root.get(key).map(|m| json!(m.value.text()));
    let root_id = set.push(
        ChunkBuilder::new("ui_config", "tailwind_config")
            .id("tailwind:config")
            .span(lines.span(0, to_u32(src.len())))
            .content(format!("// Tailwind configuration {file}\n{}", elide(src, 0..src.len(), &holes_ref)))
            .signature(format!("tailwind config {file}"))
            .meta("file", path)
            .meta_opt("dark_mode", scalar("darkMode"))
            .meta_opt("prefix", scalar("prefix"))
            .meta_opt("important", scalar("important"))
            .meta_opt("presets", scalar("presets"))
            .meta_opt("imports", Some(json!(imported)))
            .meta_opt(
                "note",
                reader.too_deep().then(|| {
                    json!(format!(
                        "literals nested deeper than {} levels are kept as source text, not read as structure",
                        js::MAX_DEPTH
                    ))
                }),
            ),
    );

    if let Some(theme) = root.get("theme") {
        let meta = theme_meta(&theme.value);
        let extend = theme.value.get("extend");
        let content = match extend {
            Some(e) => elide(src, theme.start..theme.value.end, &[(e.value.start..e.value.end, "{ … }")]),
            None => member_span(theme).text(src).to_string(),
        };
        let mut builder = ChunkBuilder::new("ui_config", "tailwind_theme")
            .id("tailwind:theme")
            .parent(Some(root_id.clone()))
            .span(member_span(theme))
            .content(format!("// {}\n{content}", summary("Tailwind theme (replaces the defaults)", &meta)))
            .signature("theme")
            .meta("section", "theme");
        for (key, value) in meta {
            builder = builder.meta_opt(&key, Some(value));
        }
        let theme_id = set.push(builder);
        if let Some(extend) = extend {
            let meta = theme_meta(&extend.value);
            let mut builder = ChunkBuilder::new("ui_config", "tailwind_theme_extend")
                .id("tailwind:theme.extend")
                .parent(Some(theme_id))
                .span(member_span(extend))
                .content(format!("// {}\n{}", summary("Tailwind theme.extend (added to the defaults)", &meta), member_span(extend).text(src)))
                .signature("theme.extend")
                .meta("section", "theme.extend");
            for (key, value) in meta {
                builder = builder.meta_opt(&key, Some(value));
            }
            set.push(builder);
        }
    }

    if let Some(plugins) = root.get("plugins") {
        let names: Vec<String> = match &plugins.value.value {
            Js::Array(items) => items.iter().map(|item| plugin_name(&item.text(), &imported)).collect(),
            _ => vec![plugins.value.text()],
        };
        set.push(
            ChunkBuilder::new("ui_config", "tailwind_plugins")
                .id("tailwind:plugins")
                .parent(Some(root_id.clone()))
                .span(member_span(plugins))
                .content(format!("// Tailwind plugins: {}\n{}", names.join(", "), member_span(plugins).text(src)))
                .signature("plugins")
                .meta("plugins", json!(names))
                .references(names.clone()),
        );
    }

    if let Some(content) = root.get("content") {
        let files = match &content.value.value {
            Js::Array(_) => Some(&content.value),
            Js::Object(_) => content.value.get("files").map(|f| &f.value),
            _ => None,
        };
        let paths: Vec<String> = match files.map(|f| &f.value) {
            Some(Js::Array(items)) => items.iter().map(Node::text).collect(),
            _ => vec![content.value.text()],
        };
        set.push(
            ChunkBuilder::new("ui_config", "tailwind_content")
                .id("tailwind:content")
                .parent(Some(root_id))
                .span(member_span(content))
                .content(format!("// Tailwind content: files scanned for class names\n{}", member_span(content).text(src)))
                .signature("content")
                .meta("scan_patterns", json!(paths)),
        );
    }
    Ok(set.finish())
}

/// `require('@tailwindcss/forms')`, `forms`, `forms({...})` -> `@tailwindcss/forms`.
fn plugin_name(expr: &str, imported: &BTreeMap<String, String>) -> String {
    let expr = expr.trim();
    if expr.starts_with("function") || expr.contains("=>") || expr.starts_with("plugin(") {
        return "(inline plugin)".into();
    }
    if let Some(rest) = expr.strip_prefix("require(") {
        return rest.split(')').next().unwrap_or_default().trim_matches(|c| c == '\'' || c == '"' || c == '`').to_string();
    }
    let ident: String = expr.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$').collect();
    imported.get(&ident).cloned().unwrap_or_else(|| expr.to_string())
}

/// CSS custom property namespaces of Tailwind v4 themes, with the metadata name.
const CSS_NAMESPACES: &[(&str, &str)] = &[
    ("--color-", "colors"),
    ("--font-", "fonts"),
    ("--breakpoint-", "screens"),
    ("--spacing-", "spacing"),
    ("--text-", "text"),
    ("--radius-", "radius"),
    ("--shadow-", "shadows"),
];

/// Why a stylesheet is declined.
const NOT_TAILWIND_CSS: &str =
    "not a Tailwind v4 stylesheet: no @theme, @plugin, @source, @config or @import \"tailwindcss\"";

/// Chunks a v4 stylesheet, or declines one that configures nothing.
#[must_use]
pub fn chunk_css(path: &str, src: &str) -> ChunkOutcome {
    // Every stylesheet of a project is offered to this plugin first, and
    // most configure nothing: one scan for the directives' names declines
    // those before any other work (the full check below ignores comments).
    let may_configure = src.contains("tailwindcss")
        || src.match_indices('@').any(|(at, _)| {
            let rest = &src.as_bytes()[at + 1..];
            [&b"theme"[..], b"plugin", b"source", b"config"].iter().any(|d| rest.starts_with(d))
        });
    if !may_configure {
        return ChunkOutcome::Decline(NOT_TAILWIND_CSS.into());
    }
    let lines = LineIndex::new(src);
    let stripped = strip_css_comments(src);
    let mut themes = Vec::new();
    let mut at = 0;
    while let Some(pos) = stripped[at..].find("@theme") {
        let start = at + pos;
        let Some(open) = stripped[start..].find('{').map(|o| start + o) else { break };
        let mut depth = 0i32;
        let mut end = stripped.len();
        for (i, c) in stripped[open..].char_indices() {
            if c == '{' {
                depth += 1;
            } else if c == '}' {
                depth -= 1;
                if depth == 0 {
                    end = open + i + 1;
                    break;
                }
            }
        }
        themes.push((start, open, end));
        at = end;
    }
    let directive_args = |name: &str| -> Vec<String> {
        stripped
            .lines()
            .filter_map(|l| l.trim().strip_prefix(name))
            .map(|rest| rest.trim().trim_end_matches(';').trim().trim_matches(|c| c == '"' || c == '\'').to_string())
            .collect()
    };
    let plugins = directive_args("@plugin ");
    let sources = directive_args("@source ");
    let imports_tailwind = stripped.contains("@import \"tailwindcss") || stripped.contains("@import 'tailwindcss");
    let config = directive_args("@config ");
    if themes.is_empty() && plugins.is_empty() && sources.is_empty() && !imports_tailwind && config.is_empty() {
        return ChunkOutcome::Decline(NOT_TAILWIND_CSS.into());
    }
    let mut set = ChunkSet::new(src);
    let holes: Vec<(std::ops::Range<usize>, &str)> = themes.iter().map(|&(_, open, end)| (open..end, "{ … }")).collect();
    let root_id = set.push(
        ChunkBuilder::new("ui_config", "tailwind_css")
            .id("tailwind:css")
            .span(lines.span(0, to_u32(src.len())))
            .content(format!("/* Tailwind v4 stylesheet {path} */\n{}", elide(src, 0..src.len(), &holes)))
            .signature(format!("tailwind stylesheet {path}"))
            .meta("file", path)
            .meta_opt("plugins", Some(json!(plugins)))
            .meta_opt("sources", Some(json!(sources)))
            .meta_opt("config", Some(json!(config)))
            .related_all(config.iter().map(|c| format!("file:{c}"))),
    );
    for (n, &(start, open, end)) in themes.iter().enumerate() {
        let mut groups: BTreeMap<&str, Map<String, Value>> = BTreeMap::new();
        // An unclosed `@theme {` runs to the end of the file, which need not
        // end in `}` (nor in a one-byte character).
        let inner_end = if stripped[..end].ends_with('}') { end - 1 } else { end };
        for declaration in stripped[open + 1..inner_end.max(open + 1)].split(';') {
            let Some((name, value)) = declaration.split_once(':') else { continue };
            let name = name.trim();
            let value = value.trim();
            let (group, key) = CSS_NAMESPACES
                .iter()
                .find_map(|(prefix, group)| name.strip_prefix(prefix).map(|k| (*group, k)))
                .unwrap_or(("other", name));
            groups.entry(group).or_default().insert(key.to_string(), json!(value));
        }
        let modifiers = stripped[start + "@theme".len()..open].trim().to_string();
        let span = lines.span(to_u32(start), to_u32(end));
        let mut builder = ChunkBuilder::new("ui_config", "tailwind_theme")
            .id(if n == 0 { "tailwind:theme".to_string() } else { format!("tailwind:theme#{}", n + 1) })
            .parent(Some(root_id.clone()))
            .span(span)
            .signature(format!("@theme {modifiers}"))
            .meta("section", "@theme")
            .meta_opt("modifiers", Some(modifiers).filter(|m| !m.is_empty()));
        let mut label = String::from("Tailwind v4 @theme");
        for (group, values) in groups {
            label.push_str(&format!("; {group}: {}", values.keys().cloned().collect::<Vec<_>>().join(", ")));
            builder = builder.meta(group, Value::Object(values));
        }
        builder = builder.content(format!("/* {label} */\n{}", span.text(src)));
        set.push(builder);
    }
    ChunkOutcome::Chunks(set.finish())
}

/// The stylesheet with `/* */` comments blanked out (same length, so
/// offsets still point into the original).
fn strip_css_comments(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut chars = src.char_indices().peekable();
    let mut quote: Option<char> = None;
    while let Some((i, c)) = chars.next() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            out.push(c);
            continue;
        }
        if c == '"' || c == '\'' {
            quote = Some(c);
            out.push(c);
        } else if c == '/' && src[i..].starts_with("/*") {
            let end = src[i + 2..].find("*/").map_or(src.len(), |e| i + 2 + e + 2);
            for c in src[i..end].chars() {
                if c == '\n' {
                    out.push('\n');
                } else {
                    out.extend(std::iter::repeat_n(' ', c.len_utf8()));
                }
            }
            while chars.peek().is_some_and(|(j, _)| *j < end) {
                chars.next();
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn css_comments_are_blanked_but_strings_kept() {
        let src = "@source \"../views/**/*.blade.php\"; /* é */ a";
        let out = strip_css_comments(src);
        assert_eq!(out.len(), src.len());
        assert!(out.contains("../views/**/*.blade.php"));
        assert!(!out.contains('é'));
    }

    fn declined(src: &str) -> bool {
        matches!(chunk_css("app.css", src), ChunkOutcome::Decline(ref why) if why == NOT_TAILWIND_CSS)
    }

    #[test]
    fn stylesheets_that_configure_nothing_are_declined() {
        assert!(declined(".a { color: red }\n@media (max-width: 1px) { .b { x: 1 } }\n"));
        // A directive's name in a comment passes the first scan, not the check.
        assert!(declined("/* @theme { --color-x: red; } @import \"tailwindcss\"; */\n.a { x: 1 }\n"));
        for configuring in [
            "@import \"tailwindcss\";\n",
            "@theme { --color-brand: #fff; }\n",
            "@plugin \"@tailwindcss/forms\";\n",
            "@source \"../views\";\n",
            "@config \"./tailwind.config.js\";\n",
        ] {
            assert!(!declined(configuring), "{configuring}");
        }
    }

    /// Found by the fuzzer: 36,000 nested `[` in a config ran the plugin out
    /// of WebAssembly stack. The config is chunked, and its root chunk says
    /// what was read as text.
    #[test]
    fn a_config_nested_past_the_limit_is_chunked_with_a_note() {
        let src = format!(
            "module.exports = {{\n  content: ['./src/**/*.vue'],\n  theme: {{ extend: {{ x: {}1{} }} }},\n  plugins: [require('@tailwindcss/forms')],\n}}\n",
            "[".repeat(36_000),
            "]".repeat(36_000)
        );
        let chunks = chunk_config("tailwind.config.js", &src).expect("chunked");
        let root = chunks.iter().find(|c| c.id == "tailwind:config").expect("root chunk");
        assert!(root.metadata.contains("nested deeper than"), "{}", root.metadata);
        let plugins = chunks.iter().find(|c| c.id == "tailwind:plugins").expect("plugins chunk");
        assert!(plugins.metadata.contains("@tailwindcss/forms"), "{}", plugins.metadata);
        // A normal config carries no note.
        let plain = chunk_config("tailwind.config.js", "module.exports = { theme: { extend: { colors: { a: '#fff' } } } }\n").expect("chunked");
        assert!(!plain[0].metadata.contains("note"), "{}", plain[0].metadata);
    }

    /// Found by the fuzzer: an unclosed `@theme {` whose file ends in a
    /// multi-byte character panicked slicing off a `}` that was not there.
    #[test]
    fn an_unclosed_theme_ending_in_a_multibyte_character_is_chunked() {
        let src = "@import \"tailwindcss\";\n@theme {\n  --color-brand: #123;\n\u{20ac}";
        match chunk_css("app.css", src) {
            ChunkOutcome::Chunks(chunks) => assert!(!chunks.is_empty()),
            other => panic!("{other:?}"),
        }
    }
}
