//! CSS and SCSS chunk strategy (a code-intel plugin, built as a WebAssembly
//! component).
//!
//! One stylesheet becomes:
//! - a `stylesheet` chunk: the file with the bodies of its top-level blocks
//!   elided (imports, `@tailwind` directives, top-level SCSS variables
//!   verbatim), with imports, custom properties, variables, keyframes, media
//!   queries, mixins and class names in metadata;
//! - a chunk per top-level block: `rule_set` (named after its selectors),
//!   `custom_properties` (a rule set that only defines `--custom`
//!   properties, like `:root { … }`), `media_query`, `keyframes`, `at_rule`
//!   (`@supports`, `@layer`, `@font-face`, `@container`, …) and, in SCSS,
//!   `mixin` and `function`. Nested rules stay in their block.
//!
//! A comment directly above a block is part of its span and becomes its
//! docstring. `references` are the custom properties a block reads
//! (`var(--brand)`), SCSS variables, mixins it includes and selectors it
//! extends.

use std::collections::{BTreeMap, BTreeSet};

use code_intel_plugin_sdk::text::{elide, one_line, split_top_level};
use code_intel_plugin_sdk::{
    ChunkBuilder, ChunkOutcome, ChunkSet, LineIndex, Plugin, PluginError, PluginInfo, SourceFile, Span,
    export_plugin, parse,
};
use serde_json::{Map, Value};

/// The plugin type exported to the host.
pub struct Css;

/// Below the tailwind plugin (20), which takes the stylesheets that
/// configure Tailwind v4 and declines the others.
const PRIORITY: i32 = 15;

/// Patterns both grammars understand: one query per file, so the tree is
/// walked once.
const BASE_QUERY: &str = r#"
(stylesheet (rule_set (selectors) @selectors (block) @body) @rule)
(stylesheet (media_statement (block) @body) @media)
(stylesheet (keyframes_statement (keyframes_name) @keyframes.name (keyframe_block_list) @body) @keyframes)
(stylesheet (supports_statement (block) @body) @at)
(stylesheet (at_rule (at_keyword) @at.keyword (block) @body) @at)
(stylesheet (import_statement) @import)
(stylesheet (comment) @comment)
(keyframe_block . (_) @step)
((declaration (property_name) @custom.name) @custom (#match? @custom.name "^--"))
((call_expression (function_name) @fn (arguments (plain_value) @var.ref)) (#eq? @fn "var"))
(class_selector (class_name) @class)
(id_selector (id_name) @id)
((postcss_statement (at_keyword) @apply.keyword) @apply (#eq? @apply.keyword "@apply"))
"#;

/// SCSS only.
const SCSS_QUERY: &str = r#"
(stylesheet (mixin_statement name: (identifier) @name (block) @body) @mixin)
(stylesheet (function_statement name: (identifier) @name (block) @body) @function)
(stylesheet (use_statement) @import)
(stylesheet (forward_statement) @import)
(stylesheet (js_comment) @comment)
((stylesheet (declaration (property_name) @var.name) @var) (#match? @var.name "^[$]"))
(include_statement (identifier) @include)
(extend_statement) @extend
(variable) @variable
"#;

#[derive(Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Rule,
    Media,
    Keyframes,
    AtRule,
    Mixin,
    Function,
}

struct Block {
    kind: BlockKind,
    name: String,
    node: Span,
    outer: Span,
    body: Span,
    docstring: Option<String>,
    selectors: Vec<String>,
    classes: Vec<String>,
    ids: Vec<String>,
    custom: Map<String, Value>,
    declarations: usize,
    apply: Vec<String>,
    steps: Vec<String>,
    refs: BTreeSet<String>,
}

impl Plugin for Css {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "css".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "CSS and SCSS: rule sets, media queries, keyframes, custom properties, at-rules, SCSS mixins, functions and variables".into(),
            languages: vec!["css".into(), "scss".into()],
            file_patterns: vec!["**/*.css".into(), "**/*.scss".into()],
            priority: PRIORITY,
        }
    }

    fn chunk(file: SourceFile) -> Result<ChunkOutcome, PluginError> {
        if file.path.ends_with(".min.css") {
            return Ok(ChunkOutcome::Decline("a minified stylesheet (`.min.css`)".into()));
        }
        if file.content.trim().is_empty() {
            return Ok(ChunkOutcome::Chunks(Vec::new()));
        }
        let language = if file.path.ends_with(".scss") { "scss" } else { "css" };
        Ok(ChunkOutcome::Chunks(chunk_file(language, &file.path, &file.content)?))
    }
}

export_plugin!(Css);

/// A copy of an SCSS source, byte for byte the same length, with what the
/// host's SCSS grammar cannot read made readable: `!default` and `!global`
/// flags blanked, `@use` without `as`/`with`, `@extend %placeholder` read
/// as a class, and map values
/// (`$breakpoints: (sm: 640px)`) read as `0`. Texts that matter are sliced
/// from the original source.
#[must_use]
pub fn scss_compat(source: &str) -> String {
    let mut out = source.as_bytes().to_vec();
    for flag in ["!default", "!global"] {
        let mut at = 0;
        while let Some(pos) = source[at..].find(flag) {
            out[at + pos..at + pos + flag.len()].fill(b' ');
            at += pos + flag.len();
        }
    }
    let mut at = 0;
    while let Some(pos) = source[at..].find("@extend") {
        let rest = &source[at + pos + 7..];
        let skip = rest.len() - rest.trim_start().len();
        if rest.trim_start().starts_with('%') {
            out[at + pos + 7 + skip] = b'.';
        }
        at += pos + 7;
    }
    // `@use "x" as y;` and `@use "x" with (...)`: the module only.
    let mut at = 0;
    while let Some(pos) = source[at..].find("@use") {
        let start = at + pos + 4;
        let rest = &source[start..];
        let quote = rest.trim_start().chars().next();
        if let Some(q @ ('"' | '\'')) = quote {
            let open = start + rest.find(q).unwrap_or(0);
            if let (Some(close), Some(end)) = (source[open + 1..].find(q), source[open..].find(';')) {
                let (close, end) = (open + 1 + close + 1, open + end);
                if close <= end {
                    out[close..end].iter_mut().filter(|b| **b != b'\n').for_each(|b| *b = b' ');
                }
            }
        }
        at = start;
    }
    // `$name: (...)`: maps.
    let bytes = source.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'$' {
            let name_end = bytes[i + 1..].iter().position(|b| !(b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_')).map_or(bytes.len(), |p| i + 1 + p);
            let after = &source[name_end..];
            if let Some(value) = after.strip_prefix(':') {
                let value_start = name_end + 1 + (value.len() - value.trim_start().len());
                if bytes.get(value_start) == Some(&b'(') {
                    // The whole map becomes `0` padded with spaces (newlines kept).
                    let mut depth = 0;
                    let mut j = value_start;
                    while j < bytes.len() {
                        match bytes[j] {
                            b'(' => depth += 1,
                            b')' => depth -= 1,
                            b';' | b'{' | b'}' => break,
                            _ => {}
                        }
                        if bytes[j] != b'\n' {
                            out[j] = if j == value_start { b'0' } else { b' ' };
                        }
                        j += 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    i = j;
                    continue;
                }
            }
            i = name_end;
            continue;
        }
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| source.to_string())
}

/// A comment's text without its markers.
fn comment_text(comment: &str) -> String {
    if let Some(body) = comment.strip_prefix("/*") {
        let body = body.trim_end_matches("*/");
        let lines: Vec<&str> = body.lines().map(|l| l.trim().trim_start_matches('*').trim()).collect();
        return lines.join("\n").trim().to_string();
    }
    comment.trim_start_matches('/').trim().to_string()
}

/// The target of an import statement: `@import url("a.css") screen;` -> `a.css`.
fn import_target(statement: &str) -> Option<String> {
    let rest = statement.trim_start_matches(|c: char| c == '@' || c.is_ascii_alphabetic()).trim();
    let rest = rest.strip_prefix("url(").unwrap_or(rest);
    let quote = rest.chars().next()?;
    if quote == '"' || quote == '\'' {
        let inner = &rest[1..];
        return inner.find(quote).map(|end| inner[..end].to_string());
    }
    let end = rest.find([')', ' ', ';']).unwrap_or(rest.len());
    Some(rest[..end].to_string()).filter(|t| !t.is_empty())
}

/// `file:` symbol of a relative stylesheet import, resolved against the
/// importing file's directory.
fn file_symbol(target: &str, from_path: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("//") || !(target.ends_with(".css") || target.ends_with(".scss")) {
        return None;
    }
    let mut parts: Vec<&str> = if target.starts_with('/') {
        Vec::new()
    } else {
        from_path.rsplit_once('/').map_or_else(Vec::new, |(dir, _)| dir.split('/').collect())
    };
    for part in target.trim_start_matches('/').split('/') {
        match part {
            "." | "" => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(format!("file:{}", parts.join("/")))
}

fn push_unique(list: &mut Vec<String>, item: &str) {
    if !list.iter().any(|x| x == item) {
        list.push(item.to_string());
    }
}

#[allow(clippy::too_many_lines)]
fn chunk_file(language: &str, path: &str, source: &str) -> Result<Vec<code_intel_plugin_sdk::Chunk>, PluginError> {
    let compat = if language == "scss" { scss_compat(source) } else { String::new() };
    let tree = parse(language, if language == "scss" { &compat } else { source })?;
    let query = if language == "scss" { format!("{BASE_QUERY}{SCSS_QUERY}") } else { BASE_QUERY.to_string() };
    let matches = tree.matches(&query)?;
    let lines = LineIndex::new(source);

    let mut blocks: Vec<Block> = Vec::new();
    let mut comments: Vec<Span> = Vec::new();
    let mut imports: Vec<String> = Vec::new();
    let mut related: BTreeSet<String> = BTreeSet::new();
    let mut variables = Map::new();
    // Inner facts, assigned to blocks once all blocks are known: (at, what, text).
    let mut inner: Vec<(u32, u8, String)> = Vec::new();

    let new_block = |kind: BlockKind, name: String, node: Span, body: Span| Block {
        kind,
        name,
        node,
        outer: node,
        body,
        docstring: None,
        selectors: Vec::new(),
        classes: Vec::new(),
        ids: Vec::new(),
        custom: Map::new(),
        declarations: 0,
        apply: Vec::new(),
        steps: Vec::new(),
        refs: BTreeSet::new(),
    };
    for m in &matches {
        let body = m.get("body").map(Span::of).unwrap_or_default();
        if let (Some(rule), Some(selectors)) = (m.get("rule"), m.get("selectors")) {
            let mut block = new_block(BlockKind::Rule, one_line(selectors.text), Span::of(rule), body);
            block.selectors = split_top_level(selectors.text, ',').into_iter().map(one_line).filter(|s| !s.is_empty()).collect();
            blocks.push(block);
        } else if let Some(media) = m.get("media") {
            let header = &source[media.start_byte as usize..body.start_byte as usize];
            blocks.push(new_block(BlockKind::Media, one_line(header), Span::of(media), body));
        } else if let (Some(k), Some(name)) = (m.get("keyframes"), m.get("keyframes.name")) {
            blocks.push(new_block(BlockKind::Keyframes, name.text.to_string(), Span::of(k), body));
        } else if let Some(at) = m.get("at") {
            let header = &source[at.start_byte as usize..body.start_byte as usize];
            blocks.push(new_block(BlockKind::AtRule, one_line(header), Span::of(at), body));
        } else if let (Some(node), Some(name)) = (m.get("mixin").or_else(|| m.get("function")), m.get("name")) {
            let kind = if node.name == "mixin" { BlockKind::Mixin } else { BlockKind::Function };
            blocks.push(new_block(kind, name.text.to_string(), Span::of(node), body));
        } else if let Some(import) = m.get("import") {
            if let Some(target) = import_target(import.text) {
                related.extend(file_symbol(&target, path));
                push_unique(&mut imports, &target);
            }
        } else if let Some(c) = m.get("comment") {
            comments.push(Span::of(c));
        } else if let Some(step) = m.get("step") {
            inner.push((step.start_byte, 0, step.text.to_string()));
        } else if let (Some(decl), Some(name)) = (m.get("custom"), m.get("custom.name")) {
            let value = decl.text[(name.end_byte - decl.start_byte) as usize..].trim_start().trim_start_matches(':');
            inner.push((decl.start_byte, 1, format!("{}\n{}", name.text, one_line(value.trim().trim_end_matches(';')))));
        } else if let Some(v) = m.get("var.ref") {
            inner.push((v.start_byte, 2, v.text.to_string()));
        } else if let Some(c) = m.get("class") {
            // `@extend %placeholder` reads as a class in the parsed copy.
            if c.start_byte > 0 && source.as_bytes()[c.start_byte as usize - 1] == b'%' {
                continue;
            }
            inner.push((c.start_byte, 3, c.text.to_string()));
        } else if let Some(id) = m.get("id") {
            inner.push((id.start_byte, 4, id.text.to_string()));
        } else if let (Some(apply), Some(keyword)) = (m.get("apply"), m.get("apply.keyword")) {
            let args = apply.text[(keyword.end_byte - apply.start_byte) as usize..].trim().trim_end_matches(';');
            for utility in args.split_whitespace().filter(|u| *u != "!important") {
                inner.push((apply.start_byte, 5, utility.to_string()));
            }
        } else if let Some(i) = m.get("include") {
            inner.push((i.start_byte, 6, i.text.to_string()));
        } else if let Some(e) = m.get("extend") {
            let target = Span::of(e).text(source).trim_start_matches("@extend").trim().trim_end_matches(';').trim_end_matches("!optional");
            inner.push((e.start_byte, 7, one_line(target)));
        } else if let Some(v) = m.get("variable") {
            inner.push((v.start_byte, 8, v.text.to_string()));
        } else if let (Some(decl), Some(name)) = (m.get("var"), m.get("var.name")) {
            let value = Span::of(decl).text(source)[(name.end_byte - decl.start_byte) as usize..].trim_start().trim_start_matches(':');
            variables.insert(name.text.to_string(), Value::String(one_line(value.trim().trim_end_matches(';'))));
        }
    }
    blocks.sort_by_key(|b| b.node.start_byte);

    // Comments directly above a block: its docstring.
    comments.sort_by_key(|c| c.start_byte);
    for block in &mut blocks {
        let mut start = block.node.start_byte;
        let mut doc: Vec<String> = Vec::new();
        let pos = comments.partition_point(|c| c.end_byte <= start);
        for c in comments[..pos].iter().rev() {
            let gap = &source[c.end_byte as usize..start as usize];
            if !gap.trim().is_empty() || gap.matches('\n').count() != 1 {
                break;
            }
            doc.push(comment_text(c.text(source)));
            start = c.start_byte;
        }
        if !doc.is_empty() {
            doc.reverse();
            block.docstring = Some(doc.join("\n").trim().to_string()).filter(|d| !d.is_empty());
            block.outer = lines.span(start, block.node.end_byte);
        }
    }

    // Inner facts to their top-level block (or to the stylesheet).
    let mut sheet_refs: BTreeSet<String> = BTreeSet::new();
    let mut custom_names: Vec<String> = Vec::new();
    let mut all_classes: Vec<String> = Vec::new();
    let mut all_ids: Vec<String> = Vec::new();
    for (at, what, text) in inner {
        let pos = blocks.partition_point(|b| b.node.start_byte <= at);
        let owner = pos.checked_sub(1).filter(|&i| blocks[i].node.contains_byte(at));
        match what {
            1 => {
                let (name, value) = text.split_once('\n').unwrap_or((&text, ""));
                push_unique(&mut custom_names, name);
                if let Some(i) = owner {
                    blocks[i].custom.insert(name.to_string(), Value::String(value.to_string()));
                }
            }
            3 => push_unique(&mut all_classes, &text),
            4 => push_unique(&mut all_ids, &text),
            _ => {}
        }
        let Some(i) = owner else {
            if matches!(what, 2 | 6 | 7 | 8) {
                sheet_refs.insert(text);
            }
            continue;
        };
        let block = &mut blocks[i];
        match what {
            0 => push_unique(&mut block.steps, &text),
            3 if at < block.body.start_byte => push_unique(&mut block.classes, &text),
            4 if at < block.body.start_byte => push_unique(&mut block.ids, &text),
            // Classes and ids of nested rules (SCSS, media queries).
            3 => push_unique(&mut block.classes, &text),
            4 => push_unique(&mut block.ids, &text),
            5 => push_unique(&mut block.apply, &text),
            2 | 6 | 7 | 8 => {
                block.refs.insert(text);
            }
            _ => {}
        }
    }
    // Declarations per rule set: a rule that only sets custom properties is
    // a `custom_properties` chunk.
    for block in blocks.iter_mut().filter(|b| b.kind == BlockKind::Rule) {
        let body = block.body.text(source);
        let inner_body = body.trim_start_matches('{').trim_end_matches('}');
        block.declarations = split_top_level(inner_body, ';').iter().filter(|d| !d.trim().is_empty()).count();
    }

    let file_name = path.rsplit('/').next().unwrap_or(path);
    let mut chunks = ChunkSet::new(source);
    let holes: Vec<(std::ops::Range<usize>, &str)> = blocks.iter().map(|b| (b.body.range(), "{ ... }")).collect();
    let names_of = |kind: BlockKind| -> Vec<String> {
        let mut names = Vec::new();
        for b in blocks.iter().filter(|b| b.kind == kind) {
            push_unique(&mut names, &b.name);
        }
        names
    };
    let nonempty = |v: Vec<String>| Some(v).filter(|l| !l.is_empty());
    let mut sheet = ChunkBuilder::new("stylesheet", file_name)
        .id("stylesheet")
        .qualified_name(path)
        .span(lines.span(0, u32::try_from(source.len()).unwrap_or(u32::MAX)))
        .content(elide(source, 0..source.len(), &holes))
        .related_all(related)
        .references(sheet_refs)
        .meta("language", language)
        .meta_opt("imports", nonempty(imports))
        .meta_opt("custom_properties", nonempty(custom_names))
        .meta_opt("variables", Some(Value::Object(variables.clone())).filter(|_| !variables.is_empty()))
        .meta_opt("keyframes", nonempty(names_of(BlockKind::Keyframes)))
        .meta_opt("media_queries", nonempty(names_of(BlockKind::Media)))
        .meta_opt("mixins", nonempty(names_of(BlockKind::Mixin)))
        .meta_opt("functions", nonempty(names_of(BlockKind::Function)))
        .meta_opt("classes", nonempty(all_classes))
        .meta_opt("ids", nonempty(all_ids));
    if tree.has_errors() {
        sheet = sheet.meta("syntax_errors", true);
    }
    chunks.push(sheet);

    for block in &blocks {
        let kind = match block.kind {
            BlockKind::Rule if !block.custom.is_empty() && block.custom.len() == block.declarations => "custom_properties",
            BlockKind::Rule => "rule_set",
            BlockKind::Media => "media_query",
            BlockKind::Keyframes => "keyframes",
            BlockKind::AtRule => "at_rule",
            BlockKind::Mixin => "mixin",
            BlockKind::Function => "function",
        };
        let header = one_line(&source[block.node.start_byte as usize..block.body.start_byte as usize]);
        let custom: BTreeMap<String, Value> = block.custom.clone().into_iter().collect();
        let mut builder = ChunkBuilder::new(kind, block.name.clone())
            .id(format!("{kind}:{}", block.name))
            .span(block.outer)
            .signature(header.clone())
            .docstring(block.docstring.clone())
            .references(block.refs.iter().cloned())
            .meta_opt("selectors", nonempty(block.selectors.clone()))
            .meta_opt("classes", nonempty(block.classes.clone()))
            .meta_opt("ids", nonempty(block.ids.clone()))
            .meta_opt("custom_properties", Some(serde_json::json!(custom)).filter(|_| !custom.is_empty()))
            .meta_opt("apply", nonempty(block.apply.clone()))
            .meta_opt("steps", nonempty(block.steps.clone()));
        match block.kind {
            BlockKind::Media => builder = builder.meta("query", header.trim_start_matches("@media").trim()),
            BlockKind::AtRule => {
                let keyword = header.split_whitespace().next().unwrap_or_default().trim_start_matches('@');
                builder = builder.meta("at_rule", keyword);
                if keyword == "font-face" {
                    let family = block.body.text(source).split(';').find_map(|d| {
                        let (property, value) = d.split_once(':')?;
                        (property.trim().trim_start_matches('{').trim() == "font-family").then(|| value.trim().trim_matches(['"', '\'']).to_string())
                    });
                    builder = builder.meta_opt("font_family", family);
                }
            }
            _ => {}
        }
        chunks.push(builder);
    }
    Ok(chunks.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compat_keeps_offsets() {
        let src = "$a: 1px !default;\n$m: (sm: 1px, md: (x: 2));\n.b { @extend %c; }\n";
        let out = scss_compat(src);
        assert_eq!(out.len(), src.len());
        assert_eq!(out, "$a: 1px         ;\n$m: 0                    ;\n.b { @extend .c; }\n");
        assert_eq!(scss_compat("@use \"a\" as b;\n"), "@use \"a\"     ;\n");
    }

    #[test]
    fn imports() {
        assert_eq!(import_target("@import url(\"theme.css\") screen;").as_deref(), Some("theme.css"));
        assert_eq!(import_target("@import 'base';").as_deref(), Some("base"));
        assert_eq!(import_target("@use \"sass:math\";").as_deref(), Some("sass:math"));
        assert_eq!(import_target("@import url(print.css);").as_deref(), Some("print.css"));
        assert_eq!(file_symbol("../base/reset.css", "src/styles/app.css").as_deref(), Some("file:src/base/reset.css"));
        assert_eq!(file_symbol("sass:math", "a.scss"), None);
        assert_eq!(file_symbol("https://x.org/a.css", "a.css"), None);
    }
}
