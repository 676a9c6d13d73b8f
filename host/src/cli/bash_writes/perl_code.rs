//! Perl one-liners (`perl -ne 'print if /x/' FILE`, `perl -pi -e
//! 's/a/b/' FILE`): what the write gate can prove of them.
//!
//! The code is read by a small lexer that knows no more Perl than a
//! one-liner that reads text needs, and refuses the rest: a name that is
//! not one of a short list of built-in functions ([`PERL_WORDS`]), a
//! subroutine call through `&`, a typeglob, `->`, a symbolic or block
//! dereference (`${...}`, `@{...}`, `$$x`), a package name (`::`),
//! `$^X` variables (`$^I` turns on in-place editing), `@ARGV`, `%SIG`
//! and `@INC`, backticks and `qx`, `s///e`, code inside a regular expression
//! (`(?{...})`), a subscript inside an interpolated string (its expression
//! runs), here-documents, `<...>` other than `<>`/`<STDIN>`, comments, and a
//! `/`, `<`, `%`, `&`, `*` or `?` where Perl itself would have to guess
//! whether a term or an operator follows (after a block, or `print $fh`).
//! Where the lexer and Perl could split the code differently, it refuses,
//! so that no text it skips as a string or a pattern can be code to Perl.

use super::Word;

/// Built-in functions and keywords a one-liner may name. None of them
/// opens, writes, renames or deletes a file, runs a command or code built
/// from a string, or loads a module. (`say` only with `-E`; `do` only as
/// `do BLOCK`; `sort` not with a subroutine named by a variable.)
const PERL_WORDS: &[&str] = &[
    "print", "printf", "say", "sprintf", "if", "elsif", "else", "unless", "while", "until", "for", "foreach", "do", "next",
    "last", "redo", "my", "our", "local", "and", "or", "not", "xor", "chomp", "chop", "chr", "ord", "lc", "uc", "lcfirst",
    "ucfirst", "length", "substr", "index", "rindex", "join", "split", "grep", "map", "sort", "reverse", "keys", "values",
    "each", "exists", "delete", "defined", "undef", "scalar", "push", "pop", "shift", "unshift", "splice", "abs", "int",
    "sqrt", "hex", "oct", "quotemeta", "pos", "ref", "eof", "exit", "die", "warn", "time", "localtime", "gmtime", "BEGIN",
    "END", "STDIN", "STDOUT", "STDERR", "ARGV", "LINE",
];

/// Operators written as words: they stand where an operator belongs.
const PERL_WORD_OPERATORS: &[&str] = &["x", "lt", "gt", "le", "ge", "eq", "ne", "cmp"];

/// Quote-like operators the lexer reads (`qx` runs a command and is refused).
const PERL_QUOTES: &[&str] = &["q", "qq", "qw", "m", "qr", "s", "tr", "y"];

/// Filehandle names: after `print`/`printf`/`say` a term follows them.
const PERL_HANDLES: &[&str] = &["STDIN", "STDOUT", "STDERR", "ARGV", "LINE"];

/// What `perl` runs, read from its arguments.
pub(super) struct PerlRun<'a> {
    /// The files `-i` rewrites in place.
    pub in_place: Vec<&'a Word>,
    /// `-i`'s backup suffix (`-i.bak` also writes `FILE.bak`).
    pub backup_suffix: String,
}

/// Reads `perl [OPTIONS] -e CODE [FILES]`: `None` when no `-e`/`-E` code is
/// given (a script file, which the gate cannot read); an error saying why
/// when the one-liner cannot be proven to write nothing but the files `-i`
/// names.
pub(super) fn perl_run(words: &[Word]) -> Option<Result<PerlRun<'_>, String>> {
    let mut code: Vec<&str> = Vec::new();
    let mut say = false;
    let mut loop_wrapped = false;
    let mut in_place: Option<String> = None;
    let mut i = 0;
    while let Some(w) = words.get(i) {
        let t = w.text.as_str();
        if w.dynamic && t.starts_with('-') {
            return Some(Err(format!("the option `{t}` is only known when it runs")));
        }
        if t == "--" {
            i += 1;
            break;
        }
        if !t.starts_with('-') || t == "-" {
            break;
        }
        if t.starts_with("--") {
            return Some(Err(format!("the gate does not read what `{t}` does")));
        }
        let flags: Vec<char> = t[1..].chars().collect();
        let mut k = 0;
        while let Some(&f) = flags.get(k) {
            k += 1;
            let rest: String = flags[k..].iter().collect();
            match f {
                'n' | 'p' => loop_wrapped = true,
                'a' | 'w' | 'W' | 'X' | 't' | 'T' | 'c' | 'f' => {}
                'l' => k += flags[k..].iter().take_while(|c| c.is_digit(8)).count(),
                '0' => {
                    k += if flags.get(k) == Some(&'x') {
                        1 + flags[k + 1..].iter().take_while(|c| c.is_ascii_hexdigit()).count()
                    } else {
                        flags[k..].iter().take_while(|c| c.is_digit(8)).count()
                    };
                }
                'C' => {
                    if !rest.chars().all(|c| c.is_ascii_alphanumeric()) {
                        return Some(Err(format!("the gate does not read the option `{t}`")));
                    }
                    k = flags.len();
                }
                'i' => {
                    in_place = Some(rest);
                    k = flags.len();
                }
                'F' => {
                    // Perl pastes the pattern into the code it wraps around
                    // the one-liner (`split(/PATTERN/)` when it starts with
                    // `/`), so only characters that cannot end that text pass.
                    let plain = !rest.is_empty()
                        && rest.chars().all(|c| c.is_ascii_alphanumeric() || " \t:,|\\.-_=+*?^[]<>!%&~".contains(c));
                    if !plain {
                        return Some(Err(format!("the gate does not read the -F pattern `{rest}`")));
                    }
                    loop_wrapped = true;
                    k = flags.len();
                }
                'e' | 'E' => {
                    say |= f == 'E';
                    if rest.is_empty() {
                        i += 1;
                        match words.get(i) {
                            Some(c) if !c.dynamic && c.substitutions.is_empty() => code.push(c.text.as_str()),
                            Some(_) => return Some(Err("its code is only known when it runs".into())),
                            None => return Some(Err(format!("no code after -{f}"))),
                        }
                    } else {
                        // `-e'print 1'` after the shell: the code is the rest of the word.
                        if w.dynamic {
                            return Some(Err("its code is only known when it runs".into()));
                        }
                        code.push(&t[t.len() - rest.len()..]);
                    }
                    k = flags.len();
                }
                'M' | 'm' => return Some(Err(format!("`{t}` loads a module, whose code the gate does not read"))),
                'I' => return Some(Err(format!("`{t}` changes where Perl loads modules from"))),
                'd' | 'D' => return Some(Err(format!("`{t}` runs the debugger, which loads code the gate does not read"))),
                'x' | 'S' => return Some(Err(format!("`{t}` runs a script file the gate cannot read"))),
                _ => return Some(Err(format!("the gate does not read what the option -{f} (`{t}`) does"))),
            }
        }
        i += 1;
    }
    if code.is_empty() {
        return None;
    }
    let checked = perl_code_is_read_only(&code.join("\n"), say, loop_wrapped).and_then(|()| {
        let files = &words[i.min(words.len())..];
        for f in files {
            argv_name_is_plain(f)?;
        }
        let Some(backup_suffix) = in_place else {
            return Ok(PerlRun { in_place: Vec::new(), backup_suffix: String::new() });
        };
        if backup_suffix.contains(['*', '/']) {
            return Err(format!("its -i backup name `{backup_suffix}` puts the backup where the gate does not look"));
        }
        let in_place: Vec<&Word> = files.iter().filter(|f| f.text != "-").collect();
        Ok(PerlRun { in_place, backup_suffix })
    });
    Some(checked)
}

/// A file argument of a one-liner: Perl's `<>` (`-n`, `-p`) opens each
/// with two-argument `open`, so a name starting with `<`, `>`, `+`, `|` or
/// `&`, or ending with `|`, opens a file for writing or runs a command.
fn argv_name_is_plain(w: &Word) -> Result<(), String> {
    if w.dynamic {
        return Err(format!(
            "its file argument `{}` is only known when it runs (Perl's `<>` runs a command for a name ending in `|`): name the files",
            w.text
        ));
    }
    let t = w.text.as_str();
    let bad_start = t.starts_with(|c: char| c.is_whitespace() || "<>+|&".contains(c));
    let bad_end = t.ends_with(|c: char| c.is_whitespace() || c == '|');
    if t.is_empty() || bad_start || bad_end {
        return Err(format!("Perl's `<>` would open `{t}` as a command or for writing"));
    }
    Ok(())
}

/// Where the lexer stands: a term (a value, a pattern) or an operator comes
/// next, or Perl guesses and so the gate cannot tell.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Expect {
    Term,
    Operator,
    Unknown,
}

/// What a `{` opened: a subscript (`$h{k}`), a block after which a term
/// follows (`map {...} LIST`, `if (...) {...}`), or one Perl may read as
/// an anonymous hash (`do {...}`, a bare `{`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Brace {
    Subscript,
    Block,
    Unclear,
}

fn is_word_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether Perl one-liner code provably writes nothing and runs nothing
/// else; see the module documentation for what is refused. `say` tells
/// whether `-E` enabled `say`; `loop_wrapped`, whether `-n`/`-p` put the
/// code inside a loop (so `}{` balances).
pub(super) fn perl_code_is_read_only(code: &str, say: bool, loop_wrapped: bool) -> Result<(), String> {
    for bad in ["(?{", "(??{", "(*{"] {
        if code.contains(bad) {
            return Err(format!("it holds `{bad}`, code run inside a regular expression"));
        }
    }
    // Perl stops reading its code at ^D or ^Z.
    if code.chars().any(|c| c.is_control() && !matches!(c, '\n' | '\t' | '\r')) {
        return Err("it holds a control character".into());
    }
    let c: Vec<char> = code.chars().collect();
    let mut i = 0;
    let mut expect = Expect::Term;
    let mut braces: Vec<Brace> = if loop_wrapped { vec![Brace::Block] } else { Vec::new() };
    // The token before: a variable or a subscript's end (a `{`/`[` after
    // it is a subscript); `print`/`printf`/`say`/`sort` (a filehandle or a
    // subroutine may follow); a word after which a block opens.
    let mut after_variable = false;
    let mut after_print = false;
    let mut block_word = false;
    // The word before, kept across a `(` (`eof(STDIN)`).
    let mut last_word = String::new();
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
            continue;
        }
        if !ch.is_ascii() {
            return Err(format!("it holds `{ch}` outside a string"));
        }
        let was_variable = std::mem::take(&mut after_variable);
        let was_print = std::mem::take(&mut after_print);
        let was_block_word = std::mem::take(&mut block_word);
        let word_before = if ch == '(' { last_word.clone() } else { std::mem::take(&mut last_word) };
        // A term where an operator belongs is a syntax error to Perl, unless
        // Perl splits the code otherwise than the gate: refused either way.
        if expect == Expect::Operator && (ch.is_ascii_digit() || matches!(ch, '$' | '@' | '\'' | '"')) {
            return Err(format!("it holds `{ch}` where the gate expects an operator (Perl may read the code otherwise)"));
        }
        match ch {
            '#' => return Err("it holds a comment (`#`), past which the gate does not read".into()),
            '`' => return Err("backticks run a command".into()),
            '\\' => return Err("it takes a reference (`\\`), which the gate does not follow".into()),
            '$' | '@' => {
                let (name, end) = variable(&c, i)?;
                i = end;
                let subscript = matches!(next_significant(&c, i), Some('[' | '{'));
                if ch == '$' && name == "ARGV" && next_significant(&c, i) == Some('[') {
                    return Err("it changes or reads @ARGV, the files `<>` opens".into());
                }
                after_variable = true;
                expect = if was_print && ch == '$' && !subscript { Expect::Unknown } else { Expect::Operator };
            }
            '%' | '&' | '*' => {
                let op_len = operator_length(&c, i);
                match expect {
                    Expect::Term if ch == '%' => {
                        let (_, end) = variable(&c, i)?;
                        i = end;
                        after_variable = true;
                        expect = Expect::Operator;
                    }
                    Expect::Term if ch == '&' => return Err("it calls a subroutine through `&`".into()),
                    Expect::Term => return Err("it uses a typeglob (`*name`)".into()),
                    Expect::Unknown => return Err(ambiguous(ch)),
                    Expect::Operator => {
                        i += op_len;
                        expect = Expect::Term;
                    }
                }
            }
            '/' | '?' | '<' => match expect {
                Expect::Unknown => return Err(ambiguous(ch)),
                Expect::Operator => {
                    i += operator_length(&c, i);
                    expect = Expect::Term;
                }
                Expect::Term if ch == '/' => {
                    let (pattern, end) = delimited(&c, i + 1, '/')?;
                    interpolation_is_plain(&pattern, true)?;
                    i = end;
                    i += c[i..].iter().take_while(|c| c.is_ascii_alphabetic()).count();
                    expect = Expect::Operator;
                }
                Expect::Term if ch == '<' => {
                    let rest: String = c[i..].iter().take(8).collect();
                    let Some(form) = ["<<>>", "<>", "<STDIN>", "<ARGV>"].into_iter().find(|f| rest.starts_with(f)) else {
                        return Err("`<...>` here reads a here-document or a glob, which the gate does not read".into());
                    };
                    i += form.len();
                    expect = Expect::Operator;
                }
                Expect::Term => return Err("it holds `?` where a term belongs".into()),
            },
            ':' if c.get(i + 1) == Some(&':') => return Err("it names something in a package (`::`), which the gate does not read".into()),
            '-' if c.get(i + 1) == Some(&'>') => return Err("it uses `->` (a method call or a dereference)".into()),
            // `-e FILE`, `-s FILE`: file tests, which Perl reads apart from
            // the quote-like `s`, `y`, `q` and `m`.
            '-' if expect != Expect::Operator && c.get(i + 1).is_some_and(char::is_ascii_alphabetic) => {
                return Err("it uses a file test or `-word`, which the gate does not read".into());
            }
            '.' if expect != Expect::Operator && c.get(i + 1).is_some_and(char::is_ascii_digit) => {
                i = number(&c, i)?;
                expect = Expect::Operator;
            }
            '0'..='9' => {
                i = number(&c, i)?;
                expect = Expect::Operator;
            }
            '\'' | '"' => {
                let (text, end) = delimited(&c, i + 1, ch)?;
                if ch == '"' {
                    interpolation_is_plain(&text, false)?;
                }
                i = end;
                expect = Expect::Operator;
            }
            '(' => {
                i += 1;
                after_print = was_print;
                last_word = word_before;
                expect = Expect::Term;
            }
            '[' | ',' | ';' => {
                i += 1;
                expect = Expect::Term;
            }
            ')' => {
                i += 1;
                block_word = true;
                expect = Expect::Operator;
            }
            ']' => {
                i += 1;
                after_variable = true;
                expect = Expect::Operator;
            }
            '{' => {
                i += 1;
                braces.push(if was_variable {
                    Brace::Subscript
                } else if was_block_word {
                    Brace::Block
                } else {
                    Brace::Unclear
                });
                expect = Expect::Term;
            }
            '}' => {
                if braces.is_empty() {
                    return Err("its braces do not balance".into());
                }
                i += 1;
                match braces.pop() {
                    Some(Brace::Subscript) => {
                        after_variable = true;
                        expect = Expect::Operator;
                    }
                    Some(Brace::Block) => expect = Expect::Term,
                    _ => expect = Expect::Unknown,
                }
            }
            c0 if is_word_start(c0) => {
                let end = i + c[i..].iter().take_while(|c| is_word_char(**c)).count();
                let word: String = c[i..end].iter().collect();
                if c.get(end) == Some(&':') && c.get(end + 1) == Some(&':')
                    || c.get(end) == Some(&'\'') && c.get(end + 1).is_some_and(|n| is_word_start(*n))
                {
                    return Err(format!("it names `{word}` in a package (`::`), which the gate does not read"));
                }
                i = end;
                if PERL_QUOTES.contains(&word.as_str()) {
                    if expect != Expect::Term {
                        return Err(ambiguous_word(&word));
                    }
                    i = quote_like(&c, i, &word)?;
                    expect = Expect::Operator;
                    continue;
                }
                if expect == Expect::Operator
                    && !PERL_WORD_OPERATORS.contains(&word.as_str())
                    && !matches!(word.as_str(), "if" | "unless" | "while" | "until" | "for" | "foreach" | "and" | "or" | "xor")
                {
                    return Err(format!("it holds `{word}` where the gate expects an operator (Perl may read the code otherwise)"));
                }
                if PERL_WORD_OPERATORS.contains(&word.as_str()) {
                    if expect != Expect::Operator {
                        return Err(ambiguous_word(&word));
                    }
                    expect = Expect::Term;
                    continue;
                }
                if word == "qx" {
                    return Err("`qx` runs a command".into());
                }
                if word == "say" && !say {
                    return Err("`say` is a plain word without -E (Perl reads it differently)".into());
                }
                if !PERL_WORDS.contains(&word.as_str()) {
                    return Err(format!(
                        "it calls `{word}`, which is not one of the built-in functions the gate knows to write nothing"
                    ));
                }
                let next = next_significant(&c, i);
                match word.as_str() {
                    "do" if next != Some('{') => return Err("`do FILE` runs a file".into()),
                    // Not followed by a block they are calls of subroutines by those names.
                    "BEGIN" | "END" => {
                        let start = i - word.len();
                        let before = c[..start].iter().rev().copied().find(|c| !c.is_whitespace());
                        if next != Some('{') || !matches!(before, None | Some(';' | '}')) {
                            return Err(format!("`{word}` other than as a block of its own (Perl calls a subroutine of that name)"));
                        }
                    }
                    "sort" => {
                        let after_paren = c[i..].iter().filter(|c| !c.is_whitespace()).nth(usize::from(next == Some('(')));
                        if matches!(after_paren, Some('$' | '&')) {
                            return Err("`sort` with a subroutine named by a variable".into());
                        }
                    }
                    _ => {}
                }
                if PERL_HANDLES.contains(&word.as_str()) {
                    // Anywhere else a filehandle's name is a call of a
                    // subroutine by that name (`STDERR $x`).
                    let handle = was_print
                        || word_before == "eof"
                        || word == "LINE" && matches!(word_before.as_str(), "next" | "last" | "redo");
                    if !handle {
                        return Err(format!("`{word}` stands where the gate cannot tell a filehandle from a call"));
                    }
                    expect = if was_print { Expect::Term } else { Expect::Unknown };
                } else if word == "time" {
                    expect = Expect::Operator;
                } else {
                    after_print = matches!(word.as_str(), "print" | "printf" | "say" | "sort");
                    last_word.clone_from(&word);
                    // After `map {`/`grep {` Perl guesses between a block and an
                    // anonymous hash, so what follows their `}` is unclear.
                    block_word = matches!(word.as_str(), "sort" | "BEGIN" | "END" | "else");
                    expect = Expect::Term;
                }
            }
            _ => {
                // Other operators: = == =~ => ! != !~ + ++ += - -- -= . .. ... .= ^ | || ~ : > >= >> etc.
                i += operator_length(&c, i);
                expect = Expect::Term;
            }
        }
    }
    Ok(())
}

fn ambiguous(ch: char) -> String {
    format!("Perl guesses what `{ch}` means here (after a block or `print $fh`), so the gate cannot read past it")
}

fn ambiguous_word(word: &str) -> String {
    format!("Perl guesses what `{word}` means here, so the gate cannot read past it")
}

/// The next character that is not white space.
fn next_significant(c: &[char], from: usize) -> Option<char> {
    c[from.min(c.len())..].iter().copied().find(|c| !c.is_whitespace())
}

/// Perl's operators made of punctuation, longest first.
const PERL_OPERATORS: &[&str] = &[
    "<=>", "**=", "||=", "&&=", "//=", "<<=", ">>=", "...", "==", "=~", "=>", "!=", "!~", "++", "+=", "--", "-=", "**", "*=",
    "/=", "//", "%=", "..", ".=", "<=", "<<", ">=", ">>", "&&", "&=", "||", "|=", "^=", "~~",
];

/// The length of the operator starting at `i`: one of [`PERL_OPERATORS`]
/// or a single character (so `=/` is `=` and a pattern, as for Perl).
fn operator_length(c: &[char], i: usize) -> usize {
    PERL_OPERATORS
        .iter()
        .find(|op| op.chars().enumerate().all(|(k, o)| c.get(i + k) == Some(&o)))
        .map_or(1, |op| op.len())
}

/// A number (`12`, `1_000`, `0x1f`, `0b101`, `.5`, `1.5e3`); a name
/// right after it (`1x3`, which Perl reads as `1 x 3`) is refused.
fn number(c: &[char], start: usize) -> Result<usize, String> {
    let mut i = start;
    let digits = |i: &mut usize, ok: &dyn Fn(char) -> bool| {
        while c.get(*i).is_some_and(|d| ok(*d) || *d == '_') {
            *i += 1;
        }
    };
    if c[i] == '0' && matches!(c.get(i + 1), Some('x' | 'X' | 'b' | 'B')) {
        let hex = matches!(c[i + 1], 'x' | 'X');
        i += 2;
        digits(&mut i, &|d| if hex { d.is_ascii_hexdigit() } else { d == '0' || d == '1' });
    } else {
        digits(&mut i, &|d| d.is_ascii_digit());
        if c.get(i) == Some(&'.') && c.get(i + 1).is_some_and(char::is_ascii_digit) {
            i += 1;
            digits(&mut i, &|d| d.is_ascii_digit());
        }
        if matches!(c.get(i), Some('e' | 'E')) {
            let sign = usize::from(matches!(c.get(i + 1), Some('+' | '-')));
            if c.get(i + 1 + sign).is_some_and(char::is_ascii_digit) {
                i += 1 + sign;
                digits(&mut i, &|d| d.is_ascii_digit());
            }
        }
    }
    if c.get(i).is_some_and(|n| is_word_char(*n)) {
        return Err("a number runs into a name (Perl may read `1x3` as `1 x 3`)".into());
    }
    Ok(i)
}

/// The variable starting at `i` (`$name`, `$1`, `$_`, `$.`, `@F`, `%h`,
/// `$#a`): its name and where it ends. Refuses dereferences, `$^X`
/// variables, package names and the variables that reach files, code or
/// signal handlers (`@ARGV`, `@INC`, `%SIG`).
fn variable(c: &[char], i: usize) -> Result<(String, usize), String> {
    let sigil = c[i];
    let mut j = i + 1;
    let mut last_index = false;
    if sigil == '$' && c.get(j) == Some(&'#') {
        last_index = true;
        j += 1;
    }
    let Some(&first) = c.get(j) else {
        return Err(format!("`{sigil}` ends the code"));
    };
    let name: String = if is_word_start(first) {
        let end = j + c[j..].iter().take_while(|c| is_word_char(**c)).count();
        let name: String = c[j..end].iter().collect();
        j = end;
        if c.get(j) == Some(&':') && c.get(j + 1) == Some(&':')
            || c.get(j) == Some(&'\'') && c.get(j + 1).is_some_and(|n| is_word_start(*n))
        {
            return Err(format!("it names `{sigil}{name}` in a package (`::`), which the gate does not read"));
        }
        name
    } else if first.is_ascii_digit() && sigil == '$' && !last_index {
        let end = j + c[j..].iter().take_while(|c| c.is_ascii_digit()).count();
        let name = c[j..end].iter().collect();
        j = end;
        name
    } else {
        match (sigil, first) {
            (_, '{') => return Err(format!("`{sigil}{{...}}` reaches a variable by a name or reference only known when it runs")),
            ('$', '^') => return Err("it uses a `$^X` variable (`$^I` turns on in-place editing)".into()),
            ('$', '$') if c.get(j + 1).is_some_and(|n| is_word_char(*n) || matches!(n, '{' | '$' | ':')) => {
                return Err("`$$name` reaches a variable through a reference or a name only known when it runs".into());
            }
            (_, '$') if sigil != '$' => {
                return Err(format!("`{sigil}$name` reaches a variable through a reference or a name only known when it runs"));
            }
            ('$', p) if !last_index && "&'+!@/\\,;.<>()|?\"-=~%$0".contains(p) => {
                j += 1;
                p.to_string()
            }
            ('@' | '%', p @ ('-' | '+')) => {
                j += 1;
                p.to_string()
            }
            _ => return Err(format!("the gate does not read `{sigil}{first}`")),
        }
    };
    let reaches_files = match name.as_str() {
        "ARGV" => sigil != '$' || last_index,
        "INC" | "SIG" | "ARGVOUT" => true,
        _ => false,
    };
    if reaches_files {
        return Err(format!(
            "it uses `{sigil}{}{name}` (the files `<>` opens, where modules load from, or signal handlers)",
            if last_index { "#" } else { "" }
        ));
    }
    Ok((name, j))
}

/// The text up to the delimiter closing one opened just before `start`
/// (brackets nest; a backslash escapes), and where the text after it starts.
fn delimited(c: &[char], start: usize, open: char) -> Result<(String, usize), String> {
    let close = match open {
        '(' => ')',
        '[' => ']',
        '{' => '}',
        '<' => '>',
        other => other,
    };
    let mut depth = 0usize;
    let mut text = String::new();
    let mut i = start;
    while let Some(&ch) = c.get(i) {
        if ch == '\\' {
            text.push(ch);
            if let Some(&n) = c.get(i + 1) {
                text.push(n);
            }
            i += 2;
            continue;
        }
        if ch == close && depth == 0 {
            return Ok((text, i + 1));
        }
        if close != open {
            if ch == open {
                depth += 1;
            } else if ch == close {
                depth -= 1;
            }
        }
        text.push(ch);
        i += 1;
    }
    Err(format!("a string or pattern opened with `{open}` does not end"))
}

/// `q`, `qq`, `qw`, `m`, `qr`, `s`, `tr`, `y` with their delimited parts
/// and flags, from just after the word; where the code after them starts.
fn quote_like(c: &[char], i: usize, word: &str) -> Result<usize, String> {
    let Some(&open) = c.get(i) else {
        return Err(format!("`{word}` ends the code"));
    };
    // Perl allows white space (and then comments) before the delimiter, and
    // reads `s => 1` as a word: only a delimiter right after the word is read.
    if !open.is_ascii_punctuation() || open == '=' || open == '\\' {
        return Err(format!("`{word}` is not followed directly by its delimiter"));
    }
    let interpolates = match word {
        "q" | "qw" | "tr" | "y" => false,
        "qq" => true,
        _ => open != '\'',
    };
    let regex = matches!(word, "m" | "qr" | "s");
    let (first, mut end) = delimited(c, i + 1, open)?;
    if interpolates {
        interpolation_is_plain(&first, regex)?;
    }
    if matches!(word, "s" | "tr" | "y") {
        let second_open = if matches!(open, '(' | '[' | '{' | '<') {
            match c.get(end) {
                Some(&o @ ('(' | '[' | '{' | '<')) => {
                    end += 1;
                    o
                }
                _ => return Err(format!("`{word}{open}...` is not followed directly by its second part")),
            }
        } else {
            open
        };
        let (second, after) = delimited(c, end, second_open)?;
        if word == "s" && interpolates {
            interpolation_is_plain(&second, false)?;
        }
        end = after;
    }
    let flags: String = c[end..].iter().take_while(|c| c.is_ascii_alphabetic()).collect();
    if word == "s" && flags.contains('e') {
        return Err("`s///e` runs its replacement as code".into());
    }
    Ok(end + flags.len())
}

/// Whether an interpolating string or pattern only reads variables: no
/// `${...}`/`@{...}` (code), no subscript (`$a[EXPR]`, `$h{EXPR}`,
/// `$x->...`: its expression runs), no `$ name` with white space. In a
/// pattern, `$` before `)`, `|` or the end is an anchor.
fn interpolation_is_plain(text: &str, regex: bool) -> Result<(), String> {
    let c: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            '\\' => i += 2,
            '$' | '@' => {
                let sigil = c[i];
                let next = c.get(i + 1).copied();
                let literal = match next {
                    None => true,
                    Some(')' | '|') => regex || sigil == '@',
                    Some(n) if sigil == '@' => !(is_word_char(n) || matches!(n, '{' | '$' | ':' | '-' | '+')),
                    _ => false,
                };
                if literal {
                    i += 1;
                    continue;
                }
                if next.is_some_and(char::is_whitespace) {
                    return Err(format!("`{sigil}` followed by white space in a string (Perl reads the name after it)"));
                }
                let (_, end) = variable(&c, i)?;
                i = end;
                let after: String = c[i..].iter().take(2).collect();
                if after.starts_with('[') || after.starts_with('{') || after == "->" || after == "::" {
                    return Err("a subscript in an interpolated string or pattern runs its expression".into());
                }
            }
            _ => i += 1,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::perl_code_is_read_only;

    fn refused(code: &str) -> String {
        match perl_code_is_read_only(code, false, true) {
            Ok(()) => panic!("{code}: expected refused"),
            Err(why) => why,
        }
    }

    /// Where Perl guesses whether a term or an operator follows, the gate
    /// refuses the characters it would read either way, even with only
    /// allowed words around: a pattern read as a division (or back) would
    /// hide code inside what the other reads as a string.
    #[test]
    fn guesses_are_refused() {
        for code in ["do {1} /x/", "print $fh /x/", "print($fh /x/)", "{} /x/", "eof STDIN /x/", "next LINE /x/", "print $x / 2"] {
            assert!(refused(code).contains("guesses"), "{code}: {}", refused(code));
        }
        // Where Perl does not guess, both readings are taken as Perl takes them.
        for code in ["print $x[0] / 2", "print /x/ ? 1 : 0", "if ($x) { } /x/ and print", "sort { $a <=> $b } /x/", "print STDERR /x/", "$x = $y / 2 / 4"] {
            assert_eq!(perl_code_is_read_only(code, false, true), Ok(()), "{code}");
        }
        // `=/` is `=` and a pattern: the pattern's text is no operator.
        assert!(perl_code_is_read_only("$x=/'/; unlink(1); /'/", false, true).is_err());
    }

    #[test]
    fn strings_and_patterns_hide_no_code() {
        for code in [
            "print \"$x's\"",
            "print \"$h{unlink(1)}\"",
            "print \"$x->[0]\"",
            "print \"$$x\"",
            "print \"@$x\"",
            "print \"$#{x}\"",
            "print /a$x[1]/",
            "print \"\u{4}\"; unlink(1)",
            "print 'a' . \u{e9}",
            "s/a/b/e",
            "s{a} {b}",
            "s(a)/b/",
            "qw=a=",
            "print \"a",
            "print q{a{b}",
            "$x =~ y/a/b/; y",
            "1x3",
            "STDERR $x",
            "print 1; LINE",
            "::eof $x",
            "- END $h",
            "%h/ END { print 1 }",
            "map {$_,1} / 1, unlink(9), 1 /i",
            "print /x/ 1",
            "$x $y",
            "$x print",
        ] {
            refused(code);
        }
        for code in [
            "print \"$_: $1 $& $. @F\\n\"",
            "print if /^\\s*(\\w+)\\s*=\\s*(.*?)\\s*$/",
            "print q{a{b}c}, qq[$x], m<a>i, qr'$x', \"user@example.com\"",
            "s/(\\d+)/<$1>/g; tr/a-z//d; y/a/b/",
            "print \"\\$x[unlink 1]\"",
        ] {
            assert_eq!(perl_code_is_read_only(code, false, true), Ok(()), "{code}");
        }
    }

    /// What the gate lets through, compiled by Perl itself: its op tree
    /// holds no op that writes, runs or loads anything, and no subroutine
    /// call (Perl split the code as the gate did).
    #[test]
    fn perl_compiles_what_passes_to_harmless_ops() {
        const WRITING_OPS: &[&str] = &[
            "entersub", "unlink", "system", "exec", "open", "sysopen", "rename", "backtick", "entereval", "require", "dofile",
            "mkdir", "rmdir", "chmod", "chown", "utime", "truncate", "link", "symlink", "syscall", "fork", "kill", "glob",
        ];
        let programs = [
            ("-ne", "print if /TODO/"),
            ("-ne", "print \"$.: $_\" if /x$|y/"),
            ("-pe", "s{foo}{bar}gi; tr/a-z/A-Z/; y/a/b/"),
            ("-lane", "print $F[1] if $F[2] > 10"),
            ("-ne", "$n++ if /x/; END { print $n + 0, \"\\n\" }"),
            ("-lne", "$c++ }{ print $c"),
            ("-E", "say for 1..3"),
            ("-le", "print join(\",\", map { $_ * 2 } grep { $_ % 2 } 1..9)"),
            ("-ne", "print for sort { $a <=> $b } <>"),
            ("-e", "print $x[0] / 2; print /x/ ? 1 : 0; if ($x) { } /x/ and print; $x = $y / 2 / 4"),
            ("-e", "print q{a{b}c}, qq[$x], m<a>i, qr'$x', \"user@example.com\""),
            ("-ne", "next LINE unless /x/; print STDERR $_; print STDOUT /x/ ? 1 : 0"),
            ("-e", "print $unlink, \"$system\", q(unlink(1)), /system(1)/"),
        ];
        let dir = tempfile::tempdir().unwrap();
        for (flag, code) in programs {
            assert_eq!(perl_code_is_read_only(code, flag.contains('E'), flag.contains('n') || flag.contains('p')), Ok(()), "{code}");
            let Ok(out) = std::process::Command::new("perl").args(["-MO=Concise", flag, code]).current_dir(dir.path()).output() else {
                eprintln!("perl is not installed here: what passes was not compiled");
                return;
            };
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success() && stderr.contains("syntax OK"), "{code}: {stderr}");
            for line in String::from_utf8_lossy(&out.stdout).lines() {
                // `5  <@> print vK ->6`: the op's name follows its class.
                let op = line.split_once('>').map_or("", |(_, rest)| rest.trim_start()).split(|c: char| !c.is_ascii_alphanumeric() && c != '_').next();
                assert!(!op.is_some_and(|op| WRITING_OPS.contains(&op)), "{code}: perl compiled `{line}`");
            }
        }
    }

    #[test]
    fn say_needs_dash_capital_e() {
        assert!(perl_code_is_read_only("say 1", false, false).is_err());
        assert_eq!(perl_code_is_read_only("say 1", true, false), Ok(()));
    }

    #[test]
    fn braces_must_balance_inside_the_loop() {
        assert_eq!(perl_code_is_read_only("$c++ }{ print $c", false, true), Ok(()));
        assert!(perl_code_is_read_only("$c++ }{ print $c", false, false).is_err());
        assert!(perl_code_is_read_only("} } print 1", false, true).is_err());
    }
}
