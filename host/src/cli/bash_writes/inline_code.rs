//! Inline code the write gate reads: the imports of `python -c` code (the
//! rest of it is read by [`super::python_code_is_read_only`]) and
//! `node -e|-p` code. Both are checks of names and shapes, not sandboxes:
//! what they cannot prove harmless they refuse, saying why.

use std::path::Path;

/// Modules inline Python may import, with the attributes it may use on
/// them (`None`: any public one; only for modules holding no other module).
/// An imported module may appear only as `MODULE.ATTRIBUTE` with a listed
/// attribute, so no module object is ever passed on (`json.decoder.re...`,
/// `sys.modules` reach `os`).
const PYTHON_MODULES: &[(&str, Option<&[&str]>)] = &[
    ("json", Some(&["load", "loads", "dump", "dumps", "JSONDecodeError"])),
    (
        "sys",
        Some(&[
            "argv", "stdin", "stdout", "stderr", "exit", "version", "version_info", "hexversion", "platform", "maxsize", "byteorder",
            "getsizeof", "getdefaultencoding",
        ]),
    ),
    (
        "re",
        Some(&[
            "compile", "match", "search", "fullmatch", "findall", "finditer", "sub", "subn", "split", "escape", "error", "I", "IGNORECASE",
            "M", "MULTILINE", "S", "DOTALL", "X", "VERBOSE", "A", "ASCII",
        ]),
    ),
    ("math", None),
    ("itertools", None),
    (
        "os.path",
        Some(&[
            "join", "basename", "dirname", "exists", "isfile", "isdir", "islink", "isabs", "splitext", "split", "abspath", "relpath",
            "normpath", "realpath", "getsize", "getmtime", "commonpath", "commonprefix", "expanduser", "sep",
        ]),
    ),
    ("collections", Some(&["Counter", "defaultdict", "OrderedDict", "deque", "namedtuple", "ChainMap"])),
    ("functools", Some(&["reduce", "partial", "cmp_to_key", "lru_cache", "cache"])),
    (
        "statistics",
        Some(&["mean", "fmean", "median", "median_low", "median_high", "mode", "multimode", "stdev", "pstdev", "variance", "pvariance", "quantiles"]),
    ),
    ("datetime", Some(&["datetime", "date", "time", "timedelta", "timezone"])),
    ("time", Some(&["time", "perf_counter", "monotonic", "sleep", "strftime", "gmtime", "localtime"])),
    ("hashlib", Some(&["sha256", "sha1", "sha512", "md5", "blake2b", "blake2s"])),
    ("base64", Some(&["b64encode", "b64decode", "urlsafe_b64encode", "urlsafe_b64decode", "b32encode", "b32decode", "b16encode", "b16decode"])),
    ("textwrap", Some(&["dedent", "indent", "wrap", "fill", "shorten"])),
    ("string", Some(&["ascii_letters", "ascii_lowercase", "ascii_uppercase", "digits", "hexdigits", "octdigits", "punctuation", "whitespace", "printable"])),
    ("shlex", Some(&["split", "quote", "join"])),
    ("csv", Some(&["reader", "DictReader", "writer", "DictWriter"])),
    ("difflib", Some(&["unified_diff", "context_diff", "ndiff", "SequenceMatcher", "get_close_matches"])),
    ("pprint", Some(&["pprint", "pformat", "pp"])),
    ("tomllib", Some(&["load", "loads"])),
];

fn python_attribute_allowed(module: &str, attribute: &str) -> bool {
    PYTHON_MODULES.iter().any(|(m, attrs)| {
        *m == module
            && match attrs {
                Some(list) => list.contains(&attribute),
                None => !attribute.starts_with('_'),
            }
    })
}

fn python_module_names() -> String {
    PYTHON_MODULES.iter().map(|(m, _)| *m).collect::<Vec<_>>().join(", ")
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum PyTok {
    Name(String),
    Str,
    Punct(char),
    Newline,
}

/// Python tokens; with `whole`, quotes and `#` are punctuation, so the text
/// of strings and comments is read as names too.
fn python_tokens(chars: &[char], whole: bool) -> Result<Vec<PyTok>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let name: String = chars[start..i].iter().collect();
            let prefix = name.len() <= 2 && name.chars().all(|p| matches!(p.to_ascii_lowercase(), 'r' | 'b' | 'u' | 'f'));
            if !whole && prefix && matches!(chars.get(i), Some('\'' | '"')) {
                i = super::skip_python_string(chars, i)?.1;
                out.push(PyTok::Str);
            } else {
                out.push(PyTok::Name(name));
            }
            continue;
        }
        match c {
            '\\' if chars.get(i + 1) == Some(&'\n') => i += 2,
            '\n' => {
                out.push(PyTok::Newline);
                i += 1;
            }
            ' ' | '\t' | '\r' | '\x0c' => i += 1,
            '\'' | '"' if !whole => {
                i = super::skip_python_string(chars, i)?.1;
                out.push(PyTok::Str);
            }
            '#' if !whole => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            _ => {
                out.push(PyTok::Punct(c));
                i += 1;
            }
        }
    }
    Ok(out)
}

/// Checks the imports of inline Python and every use of the modules they
/// bind; returns the modules imported. Only modules of [`PYTHON_MODULES`]
/// may be imported, each bound module may appear only as
/// `MODULE.ATTRIBUTE` with a listed attribute, `from M import NAME` takes
/// only listed attributes, and `type` is refused once something is
/// imported (`type(sys.stdout.buffer.raw)` is the class that opens files).
pub(super) fn python_imports(code: &str, whole: bool) -> Result<Vec<String>, String> {
    let chars: Vec<char> = code.chars().collect();
    let toks = python_tokens(&chars, whole)?;
    let name = |i: usize| match toks.get(i) {
        Some(PyTok::Name(n)) => Some(n.as_str()),
        _ => None,
    };
    let punct = |i: usize, p: char| toks.get(i) == Some(&PyTok::Punct(p));
    let statement_end = |i: usize| matches!(toks.get(i), None | Some(PyTok::Newline | PyTok::Punct(';')));
    let allowed_module = |m: &str| PYTHON_MODULES.iter().any(|(name, _)| *name == m);
    let refuse_module = |m: &str| {
        format!("it imports {m}; inline code may import only {} (a script the gate cannot read may do more)", python_module_names())
    };
    // (alias, module) of every `import M [as A]`.
    let mut aliases: Vec<(String, String)> = Vec::new();
    let mut modules: Vec<String> = Vec::new();
    let mut in_import = vec![false; toks.len()];
    let mut i = 0;
    while i < toks.len() {
        let keyword = name(i);
        let at_start = i == 0 || matches!(toks[i - 1], PyTok::Newline | PyTok::Punct(';' | ':'));
        if keyword == Some("import") && !at_start {
            return Err("it uses `import` where the gate cannot read it as an import statement".into());
        }
        if !(at_start && matches!(keyword, Some("import" | "from"))) {
            i += 1;
            continue;
        }
        let start = i;
        // A dotted module name.
        let dotted = |mut j: usize| -> Result<(String, usize), String> {
            let mut module = String::new();
            loop {
                match name(j) {
                    Some(n) => module.push_str(n),
                    None => return Err("it has an import the gate cannot read (a relative or incomplete module name)".into()),
                }
                j += 1;
                if punct(j, '.') {
                    module.push('.');
                    j += 1;
                } else {
                    return Ok((module, j));
                }
            }
        };
        if keyword == Some("import") {
            let mut j = i + 1;
            loop {
                let (module, next) = dotted(j)?;
                j = next;
                if !allowed_module(&module) {
                    return Err(refuse_module(&module));
                }
                if name(j) == Some("as") {
                    let alias = name(j + 1).ok_or("it has an import the gate cannot read")?;
                    aliases.push((alias.to_string(), module.clone()));
                    j += 2;
                } else if module.contains('.') {
                    return Err(format!(
                        "`import {module}` binds `{}`, a module the gate does not allow; write `from {module} import NAME` or `import {module} as NAME`",
                        module.split('.').next().unwrap_or_default()
                    ));
                } else {
                    aliases.push((module.clone(), module.clone()));
                }
                modules.push(module);
                if punct(j, ',') {
                    j += 1;
                    continue;
                }
                break;
            }
            i = j;
        } else {
            let (module, mut j) = dotted(i + 1)?;
            if !allowed_module(&module) {
                return Err(refuse_module(&module));
            }
            if name(j) != Some("import") {
                return Err("it has a `from` import the gate cannot read".into());
            }
            j += 1;
            let parenthesised = punct(j, '(');
            if parenthesised {
                j += 1;
            }
            loop {
                while parenthesised && toks.get(j) == Some(&PyTok::Newline) {
                    j += 1;
                }
                let Some(attribute) = name(j) else {
                    return Err(format!("`from {module} import` takes only named attributes here (no `*`)"));
                };
                if !python_attribute_allowed(&module, attribute) {
                    return Err(format!("`from {module} import {attribute}`: the gate allows only some of {module}'s attributes in inline code"));
                }
                j += 1;
                if name(j) == Some("as") {
                    name(j + 1).ok_or("it has an import the gate cannot read")?;
                    j += 2;
                }
                while parenthesised && toks.get(j) == Some(&PyTok::Newline) {
                    j += 1;
                }
                if punct(j, ',') {
                    j += 1;
                    if parenthesised && punct(j, ')') {
                        break;
                    }
                    continue;
                }
                break;
            }
            if parenthesised {
                if !punct(j, ')') {
                    return Err("it has a `from` import the gate cannot read".into());
                }
                j += 1;
            }
            modules.push(module);
            i = j;
        }
        if !statement_end(i) {
            return Err("it has an import the gate cannot read".into());
        }
        in_import[start..i].iter_mut().for_each(|b| *b = true);
    }
    // Every use of a bound module: `MODULE.ATTRIBUTE` with a listed attribute.
    for (k, tok) in toks.iter().enumerate() {
        let PyTok::Name(n) = tok else { continue };
        if in_import[k] || (k > 0 && toks[k - 1] == PyTok::Punct('.')) {
            continue;
        }
        if n == "type" && !modules.is_empty() {
            return Err("it uses `type` next to an import (the class of a module's file object opens files)".into());
        }
        if let Some((_, module)) = aliases.iter().find(|(a, _)| a == n) {
            match (toks.get(k + 1), name(k + 2)) {
                (Some(PyTok::Punct('.')), Some(attribute)) if python_attribute_allowed(module, attribute) => {}
                (Some(PyTok::Punct('.')), Some(attribute)) => {
                    return Err(format!("it uses {n}.{attribute}; the gate allows only some of {module}'s attributes in inline code"));
                }
                _ => return Err(format!("it uses the module {n} other than as `{n}.ATTRIBUTE`, which the gate cannot follow")),
            }
        }
    }
    Ok(modules)
}

/// Why Python would not import the standard modules from `cwd`: `python -c`
/// puts the current directory first on its path, so a `json.py` there (or
/// one of the modules a standard module imports in turn) runs instead.
pub(super) fn python_shadowed_in(cwd: &Path) -> Option<String> {
    let entries = match std::fs::read_dir(cwd) {
        Ok(e) => e,
        Err(_) => return None,
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name().to_string_lossy().to_string();
        let path = entry.path();
        let stem = if path.is_dir() {
            if !path.join("__init__.py").exists() {
                continue;
            }
            file_name.as_str()
        } else if let Some(stem) = file_name.strip_suffix(".py").or_else(|| file_name.strip_suffix(".pyc")) {
            stem
        } else if file_name.ends_with(".so") || file_name.ends_with(".pyd") {
            file_name.split('.').next().unwrap_or_default()
        } else {
            continue;
        };
        if PYTHON_STDLIB.split_whitespace().any(|m| m == stem) {
            return Some(format!(
                "the current directory holds {file_name}, which Python would import instead of the standard module `{stem}` (run it with `python -I`)"
            ));
        }
    }
    None
}

// ---------------------------------------------------------------------------
// JavaScript (node -e / -p)

#[derive(Debug, Clone, PartialEq, Eq)]
enum JsTok {
    Name(String),
    /// A string literal's value (escapes not decoded) and whether it is a
    /// plain literal: no escape, no template substitution.
    Str(String, bool),
    Num,
    Punct(char),
}

/// Names inline JavaScript may not use, as a name or a property: the
/// roads to the global object, the module system, code built from strings
/// and the process (`require`, `process` and `Object` have allowed forms),
/// and node's built-in modules that reach files, processes, the network or
/// code: `node -e` and `-p` make every built-in module a global
/// (`node -e 'fs.writeFileSync(...)'`). Those left (`path`, `util`, `url`,
/// `crypto`, `buffer`, `events`, `assert`, ...) write nothing.
const JS_BANNED: &[&str] = &[
    "import", "module", "exports", "global", "globalThis", "this", "self", "window", "eval", "Function", "constructor", "prototype",
    "Reflect", "Proxy", "arguments", "with", "WebAssembly", "prepareStackTrace", "captureStackTrace", "getThis", "getFunction",
    "getBuiltinModule", "mainModule", "binding", "dlopen", "caller", "callee", "Deno", "Bun", "Worker",
    // Built-in modules (globals in `node -e`), of node 20 and later.
    "async_hooks", "child_process", "cluster", "constants", "dgram", "diagnostics_channel", "dns", "domain", "fs", "http", "http2",
    "https", "inspector", "net", "os", "perf_hooks", "readline", "repl", "stream", "sys", "tls", "trace_events", "tty", "v8", "vm",
    "wasi", "worker_threads", "zlib", "sqlite", "sea", "test",
];

/// What `process.X` may name.
const JS_PROCESS: &[&str] = &[
    "argv", "env", "version", "versions", "platform", "arch", "cwd", "exit", "exitCode", "stdout", "stderr", "stdin", "pid", "uptime",
    "hrtime", "memoryUsage", "release", "nextTick",
];

/// What `Object.X` may name.
const JS_OBJECT: &[&str] = &["keys", "values", "entries", "fromEntries", "assign", "freeze", "is"];

/// Modules `require` may load by name (JSON files are loaded by path).
const JS_MODULES: &[&str] = &["path", "node:path", "util", "node:util"];

/// Keywords after which `[` opens an array, not a member access.
const JS_KEYWORDS: &[&str] =
    &["return", "typeof", "in", "of", "void", "delete", "case", "await", "yield", "else", "do", "instanceof", "throw", "new", "const", "let", "var"];

fn js_tokens(chars: &[char], i: &mut usize, out: &mut Vec<JsTok>, in_template: bool) -> Result<(), String> {
    let mut depth = 0usize;
    while *i < chars.len() {
        let c = chars[*i];
        if c.is_ascii_alphabetic() || c == '_' || c == '$' {
            let start = *i;
            while *i < chars.len() && (chars[*i].is_ascii_alphanumeric() || chars[*i] == '_' || chars[*i] == '$') {
                *i += 1;
            }
            out.push(JsTok::Name(chars[start..*i].iter().collect()));
            continue;
        }
        if c.is_ascii_digit() {
            while *i < chars.len() && (chars[*i].is_ascii_alphanumeric() || chars[*i] == '.' || chars[*i] == '_') {
                *i += 1;
            }
            out.push(JsTok::Num);
            continue;
        }
        match c {
            ' ' | '\t' | '\r' | '\n' => *i += 1,
            '\'' | '"' => {
                let start = *i + 1;
                *i += 1;
                let mut plain = true;
                loop {
                    match chars.get(*i) {
                        None | Some('\n') => return Err("it has an unterminated string".into()),
                        Some('\\') => {
                            plain = false;
                            *i += 2;
                        }
                        Some(q) if *q == c => break,
                        Some(_) => *i += 1,
                    }
                }
                out.push(JsTok::Str(chars[start..*i].iter().collect(), plain));
                *i += 1;
            }
            '`' => {
                *i += 1;
                let mut plain = true;
                loop {
                    match chars.get(*i) {
                        None => return Err("it has an unterminated template literal".into()),
                        Some('\\') => {
                            plain = false;
                            *i += 2;
                        }
                        Some('`') => break,
                        Some('$') if chars.get(*i + 1) == Some(&'{') => {
                            plain = false;
                            *i += 2;
                            out.push(JsTok::Punct('('));
                            js_tokens(chars, i, out, true)?;
                            out.push(JsTok::Punct(')'));
                        }
                        Some(_) => *i += 1,
                    }
                }
                *i += 1;
                out.push(JsTok::Str(String::new(), plain));
            }
            '/' => return Err("it holds a `/` outside a string (a division, a regular expression or a comment), which the gate does not read".into()),
            '\\' => return Err("it holds a `\\` outside a string (an escaped name may spell any name)".into()),
            c if !c.is_ascii() => return Err(format!("it holds {c:?} outside a string, which JavaScript may read as a name")),
            '{' => {
                depth += 1;
                *i += 1;
                out.push(JsTok::Punct('{'));
            }
            '}' if in_template && depth == 0 => {
                *i += 1;
                return Ok(());
            }
            '}' => {
                depth = depth.saturating_sub(1);
                *i += 1;
                out.push(JsTok::Punct('}'));
            }
            _ => {
                *i += 1;
                out.push(JsTok::Punct(c));
            }
        }
    }
    if in_template {
        return Err("it has an unterminated template literal".into());
    }
    Ok(())
}

fn js_key_allowed(key: &str) -> bool {
    !key.starts_with('_') && !JS_BANNED.contains(&key) && !matches!(key, "require" | "process" | "Object")
}

/// Whether inline JavaScript (`node -e|-p CODE`) provably writes nothing:
/// no name of [`JS_BANNED`] and none starting with `_`, as a name or a
/// property; `require` only as `require('path'|'util')` or of a relative
/// path ending in `.json` (returned, for the caller to check on disk);
/// `process` only as `process.X` with X of [`JS_PROCESS`]; `Object` only as
/// `Object.X` of [`JS_OBJECT`]; a computed member or key (`a[k]`,
/// `{[k]: v}`) only with a literal number or string, which is checked as a
/// name; no `/`, `\` or non-ASCII character outside strings. Template
/// literals' substitutions are read as code.
pub(super) fn node_code_is_read_only(code: &str) -> Result<Vec<String>, String> {
    let chars: Vec<char> = code.chars().collect();
    let mut toks = Vec::new();
    js_tokens(&chars, &mut 0, &mut toks, false)?;
    let mut json_files = Vec::new();
    let mut open: Vec<char> = Vec::new();
    for (k, tok) in toks.iter().enumerate() {
        let prev = k.checked_sub(1).and_then(|p| toks.get(p));
        let after_dot = prev == Some(&JsTok::Punct('.'));
        let next_name = match (toks.get(k + 1), toks.get(k + 2)) {
            (Some(JsTok::Punct('.')), Some(JsTok::Name(n))) => Some(n.as_str()),
            _ => None,
        };
        match tok {
            JsTok::Name(n) => {
                if n.starts_with('_') || JS_BANNED.contains(&n.as_str()) {
                    return Err(format!("it uses `{n}`, through which code can reach files, processes or code built from strings"));
                }
                match n.as_str() {
                    "require" => {
                        let literal = match (after_dot, toks.get(k + 1), toks.get(k + 2), toks.get(k + 3)) {
                            (false, Some(JsTok::Punct('(')), Some(JsTok::Str(s, true)), Some(JsTok::Punct(')'))) => Some(s.as_str()),
                            _ => None,
                        };
                        match literal {
                            Some(m) if JS_MODULES.contains(&m) => {}
                            Some(m) if (m.starts_with("./") || m.starts_with("../") || m.starts_with('/')) && m.ends_with(".json") => {
                                json_files.push(m.to_string());
                            }
                            Some(m) => {
                                return Err(format!(
                                    "it requires '{m}'; inline code may require only {} and JSON files by relative path",
                                    JS_MODULES.join(", ")
                                ))
                            }
                            None => return Err("it uses `require` other than as require('LITERAL')".into()),
                        }
                    }
                    "process" => match next_name {
                        Some(p) if !after_dot && JS_PROCESS.contains(&p) => {}
                        _ => return Err(format!("it uses `process` other than as process.{{{}}}", JS_PROCESS.join(","))),
                    },
                    "Object" => match next_name {
                        Some(p) if !after_dot && JS_OBJECT.contains(&p) => {}
                        _ => return Err(format!("it uses `Object` other than as Object.{{{}}}", JS_OBJECT.join(","))),
                    },
                    _ => {}
                }
            }
            JsTok::Str(s, _) if toks.get(k + 1) == Some(&JsTok::Punct(':')) && matches!(prev, Some(JsTok::Punct('{' | ','))) => {
                if !js_key_allowed(s) {
                    return Err(format!("it uses the key '{s}', through which code can reach what it may not"));
                }
            }
            JsTok::Punct(c @ ('(' | '{')) => open.push(*c),
            JsTok::Punct('[') => {
                let member = match prev {
                    Some(JsTok::Name(n)) => !JS_KEYWORDS.contains(&n.as_str()),
                    Some(JsTok::Str(..) | JsTok::Num | JsTok::Punct(')' | ']' | '}' | '.')) => true,
                    _ => false,
                };
                let computed_key = !member && matches!(prev, Some(JsTok::Punct('{' | ','))) && open.last() == Some(&'{');
                if member || computed_key {
                    let literal = match (toks.get(k + 1), toks.get(k + 2)) {
                        (Some(JsTok::Num), Some(JsTok::Punct(']'))) => true,
                        (Some(JsTok::Str(s, true)), Some(JsTok::Punct(']'))) => js_key_allowed(s),
                        _ => false,
                    };
                    if !literal {
                        return Err("it reads a member by a computed name (`a[k]`), which may be any name; use a literal or `.name`".into());
                    }
                }
                open.push('[');
            }
            JsTok::Punct(')' | '}' | ']') => {
                open.pop();
            }
            _ => {}
        }
    }
    Ok(json_files)
}

/// Standard-library module names (`sys.stdlib_module_names` of Python 3.11).
const PYTHON_STDLIB: &str = "\
    __future__ _abc _aix_support _ast _asyncio _bisect _blake2 _bootsubprocess _bz2 _codecs _codecs_cn \
    _codecs_hk _codecs_iso2022 _codecs_jp _codecs_kr _codecs_tw _collections _collections_abc _compat_pickle \
    _compression _contextvars _crypt _csv _ctypes _curses _curses_panel _datetime _dbm _decimal _elementtree \
    _frozen_importlib _frozen_importlib_external _functools _gdbm _hashlib _heapq _imp _io _json _locale \
    _lsprof _lzma _markupbase _md5 _msi _multibytecodec _multiprocessing _opcode _operator _osx_support \
    _overlapped _pickle _posixshmem _posixsubprocess _py_abc _pydecimal _pyio _queue _random _scproxy _sha1 \
    _sha256 _sha3 _sha512 _signal _sitebuiltins _socket _sqlite3 _sre _ssl _stat _statistics _string \
    _strptime _struct _symtable _thread _threading_local _tkinter _tokenize _tracemalloc _typing _uuid \
    _warnings _weakref _weakrefset _winapi _zoneinfo abc aifc antigravity argparse array ast asynchat \
    asyncio asyncore atexit audioop base64 bdb binascii bisect builtins bz2 cProfile calendar cgi cgitb \
    chunk cmath cmd code codecs codeop collections colorsys compileall concurrent configparser contextlib \
    contextvars copy copyreg crypt csv ctypes curses dataclasses datetime dbm decimal difflib dis distutils \
    doctest email encodings ensurepip enum errno faulthandler fcntl filecmp fileinput fnmatch fractions \
    ftplib functools gc genericpath getopt getpass gettext glob graphlib grp gzip hashlib heapq hmac html \
    http idlelib imaplib imghdr imp importlib inspect io ipaddress itertools json keyword lib2to3 linecache \
    locale logging lzma mailbox mailcap marshal math mimetypes mmap modulefinder msilib msvcrt \
    multiprocessing netrc nis nntplib nt ntpath nturl2path numbers opcode operator optparse os ossaudiodev \
    pathlib pdb pickle pickletools pipes pkgutil platform plistlib poplib posix posixpath pprint profile \
    pstats pty pwd py_compile pyclbr pydoc pydoc_data pyexpat queue quopri random re readline reprlib \
    resource rlcompleter runpy sched secrets select selectors shelve shlex shutil signal site smtpd smtplib \
    sndhdr socket socketserver spwd sqlite3 sre_compile sre_constants sre_parse ssl stat statistics string \
    stringprep struct subprocess sunau symtable sys sysconfig syslog tabnanny tarfile telnetlib tempfile \
    termios textwrap this threading time timeit tkinter token tokenize tomllib trace traceback tracemalloc \
    tty turtle turtledemo types typing unicodedata unittest urllib uu uuid venv warnings wave weakref \
    webbrowser winreg winsound wsgiref xdrlib xml xmlrpc zipapp zipfile zipimport zlib zoneinfo \
";

#[cfg(test)]
mod tests {
    use super::JS_BANNED;

    /// Node's built-in modules that `node -e` may name: they reach no file,
    /// process, network or code (`process`, `module` and names starting with
    /// `_` are handled apart).
    const JS_HARMLESS_MODULES: &[&str] =
        &["assert", "buffer", "console", "crypto", "events", "path", "process", "punycode", "querystring", "string_decoder", "timers", "url", "util"];

    /// [`JS_BANNED`] lists node's built-in modules by name, so a module a
    /// newer node adds would pass unread: every built-in module of the node
    /// on this machine must be either banned or known to be harmless.
    #[test]
    fn every_builtin_module_of_this_node_is_judged() {
        let Ok(out) = std::process::Command::new("node").args(["-p", "require('module').builtinModules.join(' ')"]).output() else {
            eprintln!("node is not installed here: its built-in modules were not checked");
            return;
        };
        assert!(out.status.success(), "node -p failed: {}", String::from_utf8_lossy(&out.stderr));
        let listed = String::from_utf8_lossy(&out.stdout).to_string();
        let unjudged: Vec<&str> = listed
            .split_whitespace()
            .map(|m| m.trim_start_matches("node:"))
            .filter(|m| !m.contains('/') && !m.starts_with('_'))
            .filter(|m| !JS_BANNED.contains(m) && !JS_HARMLESS_MODULES.contains(m) && *m != "module")
            .collect();
        assert!(
            unjudged.is_empty(),
            "node's built-in modules {unjudged:?} are neither in JS_BANNED nor known to be harmless: add each to one of them"
        );
    }
}
