//! What a component declares in its script blocks, read from the text:
//! props, emits and models (`defineProps`, `defineEmits`, `defineModel`, or
//! an `export default { props, emits }` object), the registered and imported
//! components, an explicit name. The scripts' definitions are chunked by
//! `code-intel-js-support` from the parse tree; these few facts are cheaper
//! to read from the text than from a second walk of the tree.

use code_intel_plugin_sdk::text::{split_top_level, unquote};

/// What the component's scripts declare.
#[derive(Default, Debug, PartialEq, Eq)]
pub struct Declared {
    pub props: Vec<String>,
    pub emits: Vec<String>,
    /// `defineModel` names (`modelValue` for the default model).
    pub models: Vec<String>,
    /// Components registered in `components: { ... }`.
    pub registered: Vec<String>,
    /// `name: '...'` of the options object or of `defineOptions`.
    pub name: Option<String>,
    /// `export default { ... }` (or `defineComponent({ ... })`) was found.
    pub options_object: bool,
    /// The options object has a `setup()` function.
    pub setup_function: bool,
    /// Import bindings: local name, import source, imported name (`default`
    /// for a default import).
    pub imports: Vec<(String, String, String)>,
}

fn push_unique(list: &mut Vec<String>, value: &str) {
    let value = value.trim();
    if !value.is_empty() && !list.iter().any(|v| v == value) {
        list.push(value.to_string());
    }
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// `text` with comments blanked (same length, strings kept), so that
/// splitting at commas and brackets is not misled by them.
#[must_use]
pub fn strip_comments(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < bytes.len() {
        let b = bytes[i];
        if let Some(q) = quote {
            if b == b'\\' {
                i += 2;
                continue;
            }
            if b == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        match b {
            b'\'' | b'"' | b'`' => quote = Some(b),
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    out[i] = b' ';
                    i += 1;
                }
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let end = text[i + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |e| i + 2 + e + 2);
                for o in &mut out[i..end] {
                    if *o != b'\n' {
                        *o = b' ';
                    }
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    // Only ASCII bytes were replaced, and only whole comments (UTF-8
    // sequences inside a comment are blanked byte by byte, all of them).
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}

/// Index just past the bracket closing the one at `open` (`(`, `[`, `{` or
/// `<`), skipping strings; `None` when it is not closed. Angle brackets
/// count only inside a type argument list (opened by `<`), where `=>` is
/// not a closing one.
fn closing(text: &str, open: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let angles = bytes.get(open) == Some(&b'<');
    let mut depth = 0i32;
    let mut quote: Option<u8> = None;
    let mut i = open;
    while i < bytes.len() {
        let b = bytes[i];
        if let Some(q) = quote {
            if b == b'\\' {
                i += 2;
                continue;
            }
            if b == q {
                quote = None;
            }
        } else {
            match b {
                b'\'' | b'"' | b'`' => quote = Some(b),
                b'(' | b'[' | b'{' => depth += 1,
                b'<' if angles => depth += 1,
                b'>' if angles && i > 0 && bytes[i - 1] == b'=' => {}
                b')' | b']' | b'}' => depth -= 1,
                b'>' if angles => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                return Some(i + 1);
            }
        }
        i += 1;
    }
    None
}

/// Every call of `name` (a whole word): its type arguments and arguments,
/// without the brackets.
fn calls<'t>(text: &'t str, name: &str) -> Vec<(Option<&'t str>, Option<&'t str>)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = text[from..].find(name).map(|p| p + from) {
        from = pos + name.len();
        if text[..pos].chars().next_back().is_some_and(is_ident)
            || text[from..].chars().next().is_some_and(is_ident)
        {
            continue;
        }
        let mut at = from + (text[from..].len() - text[from..].trim_start().len());
        let mut generic = None;
        if text[at..].starts_with('<') {
            let Some(end) = closing(text, at) else {
                continue;
            };
            generic = Some(&text[at + 1..end - 1]);
            at = end + (text[end..].len() - text[end..].trim_start().len());
        }
        if !text[at..].starts_with('(') {
            continue;
        }
        let Some(end) = closing(text, at) else {
            continue;
        };
        let args = text[at + 1..end - 1].trim();
        out.push((generic, (!args.is_empty()).then_some(args)));
        from = end;
    }
    out
}

/// Top-level entries of an object literal's inside: key and value (the key
/// again for a shorthand entry, empty for a method).
fn object_entries(inner: &str) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    for entry in split_top_level(inner, ',') {
        if entry.starts_with("...") {
            continue;
        }
        let colon = top_level_colon(entry);
        let paren = entry.find('(');
        let (key, value) = match (colon, paren) {
            (Some(c), Some(p)) if p < c => (&entry[..p], ""),
            (Some(c), _) => (&entry[..c], entry[c + 1..].trim()),
            (None, Some(p)) => (&entry[..p], ""),
            (None, None) => (entry, entry),
        };
        let key = key.trim();
        let key = key.strip_prefix("async ").unwrap_or(key).trim();
        let key = unquote(key).unwrap_or(key);
        if !key.is_empty() {
            out.push((key.to_string(), value));
        }
    }
    out
}

fn top_level_colon(text: &str) -> Option<usize> {
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    for (i, c) in text.char_indices() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' | '`' => quote = Some(c),
            '(' | '[' | '{' | '<' => depth += 1,
            ')' | ']' | '}' | '>' => depth -= 1,
            ':' if depth == 0 => return Some(i),
            _ => {}
        }
    }
    None
}

/// Names declared by a runtime declaration: `['a', 'b']` or `{ a: String }`.
fn runtime_names(value: &str) -> Vec<String> {
    let value = value.trim();
    let mut out = Vec::new();
    if let Some(inner) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
        for item in split_top_level(inner, ',') {
            if let Some(name) = unquote(item) {
                push_unique(&mut out, name);
            }
        }
    } else if let Some(inner) = value.strip_prefix('{').and_then(|v| v.strip_suffix('}')) {
        for (key, _) in object_entries(inner) {
            push_unique(&mut out, &key);
        }
    }
    out
}

/// Members of a type literal's inside, split at top-level `;`, `,` and
/// line ends.
fn type_members(inner: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut start = 0;
    for (i, c) in inner.char_indices() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' | '`' => quote = Some(c),
            '(' | '[' | '{' | '<' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            '>' if i == 0 || inner.as_bytes()[i - 1] != b'=' => depth -= 1,
            ';' | ',' | '\n' if depth == 0 => {
                out.push(inner[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(inner[start..].trim());
    out.retain(|m| !m.is_empty());
    out
}

/// Property names of a type literal (`{ title: string; count?: number }`);
/// for call signatures (`(e: 'change', id: number): void`), the event name.
fn type_names(literal: &str) -> Vec<String> {
    let Some(inner) = literal
        .trim()
        .strip_prefix('{')
        .and_then(|v| v.strip_suffix('}'))
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for member in type_members(inner) {
        if member.starts_with('(') {
            // `(e: 'change', id: number): void` -> change
            let args = closing(member, 0).map_or(member, |end| &member[1..end - 1]);
            if let Some(first) = split_top_level(args, ',').first()
                && let Some(colon) = top_level_colon(first)
                && let Some(event) = unquote(&first[colon + 1..])
            {
                push_unique(&mut out, event);
            }
            continue;
        }
        let member = member.strip_prefix("readonly ").unwrap_or(member);
        let Some(colon) = top_level_colon(member) else {
            continue;
        };
        let key = member[..colon].trim().trim_end_matches('?').trim();
        let key = unquote(key).unwrap_or(key);
        if !key.is_empty() && !key.starts_with('[') && !key.contains('(') {
            push_unique(&mut out, key);
        }
    }
    out
}

/// The body of `interface Name { ... }` or `type Name = { ... }` in `text`,
/// with the braces.
fn named_type<'t>(text: &'t str, name: &str) -> Option<&'t str> {
    for keyword in ["interface", "type"] {
        let mut from = 0;
        let pattern = format!("{keyword} {name}");
        while let Some(pos) = text[from..].find(&pattern).map(|p| p + from) {
            from = pos + pattern.len();
            if text[..pos].chars().next_back().is_some_and(is_ident)
                || text[from..].chars().next().is_some_and(is_ident)
            {
                continue;
            }
            let open = text[from..].find('{')? + from;
            let end = closing(text, open)?;
            return Some(&text[open..end]);
        }
    }
    None
}

/// Names declared by `defineProps` / `defineEmits`: the type argument (a
/// literal or the name of an interface or type in the same script) or the
/// runtime argument.
fn declared_names(text: &str, generic: Option<&str>, args: Option<&str>) -> Vec<String> {
    if let Some(generic) = generic.map(str::trim) {
        if generic.starts_with('{') {
            return type_names(generic);
        }
        let name: String = generic.chars().take_while(|&c| is_ident(c)).collect();
        if let Some(body) = named_type(text, &name) {
            return type_names(body);
        }
        return Vec::new();
    }
    args.map(|a| runtime_names(split_top_level(a, ',').first().copied().unwrap_or_default()))
        .unwrap_or_default()
}

/// The inside of the options object: `export default { ... }` or
/// `export default defineComponent({ ... })`.
fn options_object(text: &str) -> Option<&str> {
    let pos = text.find("export default")?;
    let rest = &text[pos + "export default".len()..];
    let open = rest.find('{')?;
    // Only whitespace, `defineComponent(` or `Vue.extend(` before the brace.
    let between = rest[..open].trim();
    if !(between.is_empty() || between.ends_with('(')) {
        return None;
    }
    let start = pos + "export default".len() + open;
    let end = closing(text, start)?;
    Some(&text[start + 1..end - 1])
}

/// Import bindings of a script: `import A from 's'`, `import { B, C as D }
/// from 's'`, `import * as E from 's'` (type-only imports left out).
fn imports(text: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = text[from..].find("import").map(|p| p + from) {
        from = pos + "import".len();
        let line_start = text[..pos].rfind('\n').map_or(0, |p| p + 1);
        if !(text[line_start..pos].trim().is_empty()
            || text[..pos].trim_end().ends_with([';', '}']))
        {
            continue;
        }
        let rest = &text[from..];
        if !rest.starts_with([' ', '{', '\t', '\n']) {
            continue;
        }
        let Some(quote_at) = rest.find(['\'', '"']) else {
            continue;
        };
        let quote = rest.as_bytes()[quote_at] as char;
        let Some(len) = rest[quote_at + 1..].find(quote) else {
            continue;
        };
        let source = &rest[quote_at + 1..quote_at + 1 + len];
        let clause = rest[..quote_at].trim();
        let Some(clause) = clause.strip_suffix("from").map(str::trim) else {
            continue;
        };
        if clause.starts_with("type ") || clause.starts_with("type{") {
            continue;
        }
        let (default, named) = match clause.find('{') {
            Some(open) => (
                clause[..open].trim().trim_end_matches(',').trim(),
                Some(&clause[open..]),
            ),
            None => (clause, None),
        };
        if let Some(local) = default.strip_prefix("* as ") {
            out.push((
                local.trim().to_string(),
                source.to_string(),
                "*".to_string(),
            ));
        } else if !default.is_empty() && default.chars().all(is_ident) {
            out.push((
                default.to_string(),
                source.to_string(),
                "default".to_string(),
            ));
        }
        if let Some(named) = named
            .and_then(|n| n.strip_prefix('{'))
            .and_then(|n| n.split('}').next())
        {
            for item in split_top_level(named, ',') {
                if item.starts_with("type ") {
                    continue;
                }
                let (name, local) = item
                    .split_once(" as ")
                    .map_or((item, item), |(n, l)| (n.trim(), l.trim()));
                if !local.is_empty() && local.chars().all(is_ident) {
                    out.push((local.to_string(), source.to_string(), name.to_string()));
                }
            }
        }
        from = pos + "import".len() + quote_at + len + 2;
    }
    out
}

/// Reads what a script block declares into `declared`. `text` is the
/// block's content with comments stripped ([`strip_comments`]).
pub fn read(text: &str, declared: &mut Declared) {
    for (generic, args) in calls(text, "defineProps") {
        for name in declared_names(text, generic, args) {
            push_unique(&mut declared.props, &name);
        }
    }
    for (generic, args) in calls(text, "defineEmits") {
        for name in declared_names(text, generic, args) {
            push_unique(&mut declared.emits, &name);
        }
    }
    for (_, args) in calls(text, "defineModel") {
        let first = args
            .and_then(|a| split_top_level(a, ',').first().copied())
            .and_then(unquote);
        let name = first.unwrap_or("modelValue");
        push_unique(&mut declared.models, name);
        push_unique(&mut declared.props, name);
        push_unique(&mut declared.emits, &format!("update:{name}"));
    }
    for (_, args) in calls(text, "defineOptions") {
        let inner = args
            .and_then(|a| a.strip_prefix('{'))
            .and_then(|a| a.strip_suffix('}'))
            .unwrap_or_default();
        for (key, value) in object_entries(inner) {
            if key == "name" {
                declared.name = unquote(value).map(str::to_string).or(declared.name.take());
            }
        }
    }
    if let Some(inner) = options_object(text) {
        declared.options_object = true;
        for (key, value) in object_entries(inner) {
            match key.as_str() {
                "props" => runtime_names(value)
                    .iter()
                    .for_each(|n| push_unique(&mut declared.props, n)),
                "emits" => runtime_names(value)
                    .iter()
                    .for_each(|n| push_unique(&mut declared.emits, n)),
                "components" => {
                    let inner = value
                        .strip_prefix('{')
                        .and_then(|v| v.strip_suffix('}'))
                        .unwrap_or_default();
                    for (key, _) in object_entries(inner) {
                        push_unique(&mut declared.registered, &key);
                    }
                }
                "name" => {
                    declared.name = unquote(value).map(str::to_string).or(declared.name.take())
                }
                "setup" => declared.setup_function = true,
                _ => {}
            }
        }
    }
    for binding in imports(text) {
        if !declared.imports.contains(&binding) {
            declared.imports.push(binding);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared(text: &str) -> Declared {
        let mut d = Declared::default();
        read(&strip_comments(text), &mut d);
        d
    }

    #[test]
    fn script_setup_type_declarations() {
        let d = declared(
            "import { computed } from 'vue'\nimport UserAvatar from './UserAvatar.vue'\nimport type { User } from '@/types'\n\
             interface Props {\n  user: User // the user\n  size?: 'sm' | 'lg'\n  onPick?: (id: number) => void\n}\n\
             const props = withDefaults(defineProps<Props>(), { size: 'sm' })\n\
             const emit = defineEmits<{\n  (e: 'select', id: number): void\n  (e: 'close'): void\n}>()\n\
             const model = defineModel<string>('query')\n",
        );
        assert_eq!(d.props, ["user", "size", "onPick", "query"]);
        assert_eq!(d.emits, ["select", "close", "update:query"]);
        assert_eq!(d.models, ["query"]);
        assert_eq!(
            d.imports,
            [
                (
                    "computed".to_string(),
                    "vue".to_string(),
                    "computed".to_string()
                ),
                (
                    "UserAvatar".to_string(),
                    "./UserAvatar.vue".to_string(),
                    "default".to_string()
                )
            ]
        );
    }

    #[test]
    fn runtime_declarations_and_options() {
        let d = declared(
            "const props = defineProps({ title: String, 'max-items': { type: Number, default: () => 3 } })\nconst emit = defineEmits(['save', 'cancel'])\n",
        );
        assert_eq!(d.props, ["title", "max-items"]);
        assert_eq!(d.emits, ["save", "cancel"]);
        let d = declared(
            "import Modal from './Modal.vue'\nexport default defineComponent({\n  name: 'OrderList',\n  components: { Modal, Pager: PagerBar },\n  props: ['orders'],\n  emits: { refresh: null },\n  data() { return { page: 1 } },\n  setup(props) { return {} },\n})\n",
        );
        assert_eq!(d.name.as_deref(), Some("OrderList"));
        assert_eq!(d.registered, ["Modal", "Pager"]);
        assert_eq!(d.props, ["orders"]);
        assert_eq!(d.emits, ["refresh"]);
        assert!(d.options_object && d.setup_function);
        let d = declared(
            "const emit = defineEmits<{ change: [id: number]; 'update:open': [value: boolean] }>()",
        );
        assert_eq!(d.emits, ["change", "update:open"]);
    }

    #[test]
    fn comments_are_blanked() {
        assert_eq!(
            strip_comments("a // b, c\n/* d */e 'x // y'"),
            "a        \n       e 'x // y'"
        );
    }
}
