//! What a shell command line writes, for the write gate (`check-write` on
//! Claude Code's `Bash`, Gemini CLI's `run_shell_command`, Cursor's shell
//! hook).
//!
//! The analysis is conservative: it lists the files a command writes when it
//! can see them (redirections, `sed -i`, `tee`, `cp`/`mv`/`rm`/`touch`/...,
//! `dd of=`, `git checkout -- FILE`, ...) and reports as *unprovable* every
//! command it cannot prove read-only (an interpreter running a script or
//! inline code, except `python -c` and `node -e|-p` code that provably
//! writes nothing (`bash_writes/inline_code.rs`) and `perl -e` code that
//! provably writes nothing but the files `-i` names (`bash_writes/perl_code.rs`),
//! `patch`, `git apply`, a command it does not know, a target behind a
//! variable or a glob, ...). `npx`/`bunx`/`pnpm exec`/`yarn dlx` are judged
//! by the command they run. The gate then allows a command only when it is
//! read-only or when every file it writes may be written.
//!
//! The lexer knows POSIX shell and bash quoting: single and double quotes,
//! backslashes, `$'...'`, command substitutions (`$(...)`, backticks, whose
//! commands are analysed too), process substitutions, here-documents (their
//! bodies are skipped, their substitutions analysed), comments and line
//! continuations. What it cannot read (an unbalanced quote, `case`) makes
//! the whole command unprovable.

use std::path::{Component, Path, PathBuf};

mod inline_code;
mod perl_code;

/// A file a command writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Absolute path (not canonicalised: the caller resolves symlinks).
    pub path: PathBuf,
    /// What writes it, for messages (`sed -i`, `> redirection`, `cp`).
    pub by: String,
}

/// The result of analysing one command line.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Analysis {
    /// Files the command writes, as far as they can be seen.
    pub targets: Vec<Target>,
    /// Parts the analysis cannot prove read-only, each with why.
    pub unprovable: Vec<String>,
}

impl Analysis {
    fn merge(&mut self, other: Analysis) {
        self.targets.extend(other.targets);
        self.unprovable.extend(other.unprovable);
    }
}

/// Analyses a command line run in `cwd`.
#[must_use]
pub fn analyze(command: &str, cwd: &Path) -> Analysis {
    analyze_depth(command, Some(cwd.to_path_buf()), 0, &Inherited::default())
}

/// What a nested command line (`bash -c`, `$(...)`) inherits from the line
/// around it: whether files were written before it, the variables set.
#[derive(Default)]
struct Inherited {
    written: usize,
    variables: Vec<String>,
}

const MAX_DEPTH: usize = 8;

fn analyze_depth(command: &str, cwd: Option<PathBuf>, depth: usize, inherited: &Inherited) -> Analysis {
    let mut out = Analysis::default();
    if depth > MAX_DEPTH {
        out.unprovable.push("commands nested too deeply to read".into());
        return out;
    }
    let tokens = match lex(command) {
        Ok(t) => t,
        Err(e) => {
            out.unprovable.push(format!("cannot read the command line ({e})"));
            return out;
        }
    };
    let mut walker = Walker {
        cwd_stack: Vec::new(),
        cwd,
        depth,
        out,
        assigned: Vec::new(),
        set_earlier: inherited.variables.clone(),
        written_before: 0,
        inherited_writes: inherited.written,
        stdin: None,
    };
    walker.walk(&tokens);
    walker.out
}

// ---------------------------------------------------------------------------
// Lexer

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Word {
    /// The value after quote removal; expansions are kept as written.
    text: String,
    /// Holds an expansion (`$x`, `$(..)`, a glob, `~`, braces): its value
    /// is not known.
    dynamic: bool,
    /// Was any part quoted (a quoted `*` is no glob).
    quoted: bool,
    /// Commands inside `$(...)`, backticks, `<(...)`, `>(...)`.
    substitutions: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Word(Word),
    /// `|`, `||`, `&&`, `;`, `&`, `|&`, `(`, `)`, newline as `\n`.
    Op(&'static str),
    /// An output or input redirection with its target word (none for a
    /// here-document and fd duplications) and, for a here-document, its
    /// body once read (`dynamic` when an unquoted body expands something).
    Redir { op: String, target: Option<Word>, body: Option<Word> },
}

struct Lexer<'a> {
    chars: Vec<char>,
    pos: usize,
    tokens: Vec<Tok>,
    /// Here-documents whose bodies start after the next newline: (delimiter,
    /// strip tabs, quoted, index of their `<<` token).
    pending_heredocs: Vec<(String, bool, bool, usize)>,
    _src: &'a str,
}

fn lex(src: &str) -> Result<Vec<Tok>, String> {
    let mut lx = Lexer { chars: src.chars().collect(), pos: 0, tokens: Vec::new(), pending_heredocs: Vec::new(), _src: src };
    lx.run()?;
    Ok(lx.tokens)
}

impl Lexer<'_> {
    fn peek(&self, off: usize) -> Option<char> {
        self.chars.get(self.pos + off).copied()
    }

    fn run(&mut self) -> Result<(), String> {
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\r' => self.pos += 1,
                '\\' if self.peek(1) == Some('\n') => self.pos += 2,
                '\n' => {
                    self.pos += 1;
                    self.tokens.push(Tok::Op("\n"));
                    self.read_heredoc_bodies()?;
                }
                '#' => {
                    while let Some(c) = self.peek(0) {
                        if c == '\n' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                '&' if self.peek(1) == Some('&') => self.op("&&", 2),
                '&' if self.peek(1) == Some('>') => {
                    let append = self.peek(2) == Some('>');
                    self.pos += if append { 3 } else { 2 };
                    let target = self.redirect_target()?;
                    self.tokens.push(Tok::Redir { op: if append { "&>>".into() } else { "&>".into() }, target: Some(target), body: None });
                }
                '&' => self.op("&", 1),
                '|' if self.peek(1) == Some('|') => self.op("||", 2),
                '|' if self.peek(1) == Some('&') => self.op("|&", 2),
                '|' => self.op("|", 1),
                ';' if self.peek(1) == Some(';') => return Err("`;;` (case) is not supported".into()),
                ';' => self.op(";", 1),
                '(' => self.op("(", 1),
                ')' => self.op(")", 1),
                '<' | '>' if self.peek(1) == Some('(') => {
                    // Process substitution: a word.
                    let w = self.word()?;
                    self.tokens.push(Tok::Word(w));
                }
                '<' | '>' => self.redirection(None)?,
                c if c.is_ascii_digit() && self.fd_redirection_ahead() => {
                    let start = self.pos;
                    while self.peek(0).is_some_and(|c| c.is_ascii_digit()) {
                        self.pos += 1;
                    }
                    let fd: String = self.chars[start..self.pos].iter().collect();
                    self.redirection(Some(fd))?;
                }
                _ => {
                    let w = self.word()?;
                    self.tokens.push(Tok::Word(w));
                }
            }
        }
        if !self.pending_heredocs.is_empty() {
            // A here-document without its body: nothing more to read.
            self.pending_heredocs.clear();
        }
        Ok(())
    }

    fn op(&mut self, op: &'static str, len: usize) {
        self.pos += len;
        self.tokens.push(Tok::Op(op));
    }

    /// Digits at a word start followed by `<` or `>` (`2>file`, `2>&1`).
    fn fd_redirection_ahead(&self) -> bool {
        let at_word_start = self.pos == 0 || matches!(self.chars[self.pos - 1], ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')');
        if !at_word_start {
            return false;
        }
        let mut i = self.pos;
        while self.chars.get(i).is_some_and(char::is_ascii_digit) {
            i += 1;
        }
        matches!(self.chars.get(i), Some('<' | '>'))
    }

    fn redirection(&mut self, fd: Option<String>) -> Result<(), String> {
        let c = self.peek(0).unwrap_or('>');
        let mut op = String::from(c);
        self.pos += 1;
        if c == '<' {
            match self.peek(0) {
                Some('<') => {
                    self.pos += 1;
                    if self.peek(0) == Some('<') {
                        self.pos += 1;
                        // Here-string: an input.
                        let w = self.redirect_target()?;
                        self.tokens.push(Tok::Redir { op: "<<<".into(), target: Some(w), body: None });
                        return Ok(());
                    }
                    let strip = self.peek(0) == Some('-');
                    if strip {
                        self.pos += 1;
                    }
                    let w = self.redirect_target()?;
                    self.pending_heredocs.push((w.text.clone(), strip, w.quoted, self.tokens.len()));
                    self.tokens.push(Tok::Redir { op: "<<".into(), target: None, body: None });
                    return Ok(());
                }
                Some('&') => {
                    self.pos += 1;
                    op.push('&');
                }
                Some('>') => {
                    self.pos += 1;
                    op.push('>');
                }
                _ => {}
            }
        } else {
            match self.peek(0) {
                Some('>') => {
                    self.pos += 1;
                    op.push('>');
                }
                Some('|') => {
                    self.pos += 1;
                    op.push('|');
                }
                Some('&') => {
                    self.pos += 1;
                    op.push('&');
                }
                _ => {}
            }
        }
        let target = self.redirect_target()?;
        let _ = fd;
        self.tokens.push(Tok::Redir { op, target: Some(target), body: None });
        Ok(())
    }

    fn redirect_target(&mut self) -> Result<Word, String> {
        while matches!(self.peek(0), Some(' ' | '\t')) {
            self.pos += 1;
        }
        match self.peek(0) {
            None | Some('\n' | ';' | '|' | '&' | '(' | ')' | '<' | '>') => Err("a redirection without a target".into()),
            _ => self.word(),
        }
    }

    fn read_heredoc_bodies(&mut self) -> Result<(), String> {
        let pending = std::mem::take(&mut self.pending_heredocs);
        for (delim, strip, quoted, index) in pending {
            let mut body = Word { quoted, ..Word::default() };
            loop {
                if self.pos >= self.chars.len() {
                    break; // unterminated: the rest is body
                }
                let start = self.pos;
                while self.peek(0).is_some_and(|c| c != '\n') {
                    self.pos += 1;
                }
                let line: String = self.chars[start..self.pos].iter().collect();
                if self.peek(0) == Some('\n') {
                    self.pos += 1;
                }
                let cmp = if strip { line.trim_start_matches('\t') } else { line.as_str() };
                if cmp == delim {
                    break;
                }
                body.text.push_str(cmp);
                body.text.push('\n');
                if !quoted && (line.contains('$') || line.contains('`')) {
                    body.dynamic = true;
                }
                if !quoted {
                    // Substitutions in an unquoted body run.
                    let mut sub = Lexer { chars: line.chars().collect(), pos: 0, tokens: Vec::new(), pending_heredocs: Vec::new(), _src: "" };
                    let mut w = Word::default();
                    while sub.pos < sub.chars.len() {
                        match sub.peek(0) {
                            Some('$') if sub.peek(1) == Some('(') => sub.dollar(&mut w)?,
                            Some('`') => sub.backtick(&mut w)?,
                            Some('\\') => sub.pos += 2,
                            _ => sub.pos += 1,
                        }
                    }
                    if !w.substitutions.is_empty() {
                        self.tokens.push(Tok::Word(Word { text: String::new(), dynamic: true, quoted: true, substitutions: w.substitutions }));
                    }
                }
            }
            if let Some(Tok::Redir { body: slot, .. }) = self.tokens.get_mut(index) {
                *slot = Some(body);
            }
        }
        Ok(())
    }

    fn word(&mut self) -> Result<Word, String> {
        let mut w = Word::default();
        let start = self.pos;
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\r' | '\n' | ';' | '&' | '|' | ')' => break,
                '(' if self.pos > start && !matches!(self.chars[self.pos - 1], '<' | '>' | '$' | '=' | '@' | '?' | '*' | '+' | '!') => {
                    break;
                }
                '<' | '>' if self.peek(1) == Some('(') => {
                    self.pos += 1;
                    let inner = self.balanced('(', ')')?;
                    w.substitutions.push(inner);
                    w.dynamic = true;
                }
                '<' | '>' => break,
                '(' if self.pos == start => break,
                '\'' => {
                    self.pos += 1;
                    w.quoted = true;
                    loop {
                        match self.peek(0) {
                            None => return Err("unbalanced single quote".into()),
                            Some('\'') => {
                                self.pos += 1;
                                break;
                            }
                            Some(c) => {
                                w.text.push(c);
                                self.pos += 1;
                            }
                        }
                    }
                }
                '"' => {
                    self.pos += 1;
                    w.quoted = true;
                    loop {
                        match self.peek(0) {
                            None => return Err("unbalanced double quote".into()),
                            Some('"') => {
                                self.pos += 1;
                                break;
                            }
                            Some('\\') => {
                                if let Some(n) = self.peek(1) {
                                    if !matches!(n, '$' | '`' | '"' | '\\' | '\n') {
                                        w.text.push('\\');
                                    }
                                    if n != '\n' {
                                        w.text.push(n);
                                    }
                                }
                                self.pos += 2;
                            }
                            Some('$') => self.dollar(&mut w)?,
                            Some('`') => self.backtick(&mut w)?,
                            Some(c) => {
                                w.text.push(c);
                                self.pos += 1;
                            }
                        }
                    }
                }
                '\\' => {
                    w.quoted = true;
                    if let Some(n) = self.peek(1) {
                        if n != '\n' {
                            w.text.push(n);
                        }
                    }
                    self.pos += 2;
                }
                '$' if self.peek(1) == Some('\'') => {
                    // ANSI-C quoting: the escapes are kept as written, the value is not needed exactly.
                    self.pos += 2;
                    w.quoted = true;
                    loop {
                        match self.peek(0) {
                            None => return Err("unbalanced $'...' quote".into()),
                            Some('\\') => {
                                w.text.push('\\');
                                if let Some(n) = self.peek(1) {
                                    w.text.push(n);
                                }
                                self.pos += 2;
                            }
                            Some('\'') => {
                                self.pos += 1;
                                break;
                            }
                            Some(c) => {
                                w.text.push(c);
                                self.pos += 1;
                            }
                        }
                    }
                    w.dynamic = true;
                }
                '$' => self.dollar(&mut w)?,
                '`' => self.backtick(&mut w)?,
                '*' | '?' | '[' | '{' => {
                    w.dynamic = true;
                    w.text.push(c);
                    self.pos += 1;
                }
                '~' if self.pos == start => {
                    w.dynamic = true;
                    w.text.push(c);
                    self.pos += 1;
                }
                c => {
                    w.text.push(c);
                    self.pos += 1;
                }
            }
        }
        Ok(w)
    }

    /// At `$`: a parameter, a command substitution or an arithmetic expansion.
    fn dollar(&mut self, w: &mut Word) -> Result<(), String> {
        w.dynamic = true;
        match self.peek(1) {
            Some('(') if self.peek(2) == Some('(') => {
                self.pos += 1;
                let inner = self.balanced('(', ')')?;
                w.text.push_str(&format!("$({inner})"));
                // Arithmetic can hold command substitutions: analyse them.
                if inner.contains("$(") || inner.contains('`') {
                    w.substitutions.push(inner);
                }
            }
            Some('(') => {
                self.pos += 1;
                let inner = self.balanced('(', ')')?;
                w.text.push_str(&format!("$({inner})"));
                w.substitutions.push(inner);
            }
            Some('{') => {
                self.pos += 1;
                let inner = self.balanced('{', '}')?;
                w.text.push_str(&format!("${{{inner}}}"));
                if inner.contains("$(") || inner.contains('`') {
                    w.substitutions.push(inner);
                }
            }
            _ => {
                w.text.push('$');
                self.pos += 1;
            }
        }
        Ok(())
    }

    fn backtick(&mut self, w: &mut Word) -> Result<(), String> {
        self.pos += 1;
        let mut inner = String::new();
        loop {
            match self.peek(0) {
                None => return Err("unbalanced backquote".into()),
                Some('`') => {
                    self.pos += 1;
                    break;
                }
                Some('\\') => {
                    if let Some(n) = self.peek(1) {
                        if !matches!(n, '`' | '\\' | '$') {
                            inner.push('\\');
                        }
                        inner.push(n);
                    }
                    self.pos += 2;
                }
                Some(c) => {
                    inner.push(c);
                    self.pos += 1;
                }
            }
        }
        w.dynamic = true;
        w.text.push_str(&format!("`{inner}`"));
        w.substitutions.push(inner);
        Ok(())
    }

    /// At an opening bracket: returns what is inside the balanced pair
    /// (quotes respected) and moves past the closing one.
    fn balanced(&mut self, open: char, close: char) -> Result<String, String> {
        debug_assert_eq!(self.peek(0), Some(open));
        self.pos += 1;
        let start = self.pos;
        let mut depth = 1usize;
        while let Some(c) = self.peek(0) {
            match c {
                '\\' => self.pos += 2,
                '\'' => {
                    self.pos += 1;
                    while self.peek(0).is_some_and(|c| c != '\'') {
                        self.pos += 1;
                    }
                    self.pos += 1;
                }
                '"' => {
                    self.pos += 1;
                    while let Some(c) = self.peek(0) {
                        if c == '\\' {
                            self.pos += 2;
                            continue;
                        }
                        if c == '"' {
                            break;
                        }
                        self.pos += 1;
                    }
                    self.pos += 1;
                }
                c if c == open => {
                    depth += 1;
                    self.pos += 1;
                }
                c if c == close => {
                    depth -= 1;
                    if depth == 0 {
                        let inner: String = self.chars[start..self.pos].iter().collect();
                        self.pos += 1;
                        return Ok(inner);
                    }
                    self.pos += 1;
                }
                _ => self.pos += 1,
            }
        }
        Err(format!("unbalanced `{open}`"))
    }
}

// ---------------------------------------------------------------------------
// Walker: commands, their redirections and what they write

struct Walker {
    cwd_stack: Vec<Option<PathBuf>>,
    /// The working directory, `None` once a `cd` went somewhere unknown.
    cwd: Option<PathBuf>,
    depth: usize,
    out: Analysis,
    /// Variables assigned for the command being read (`PYTHONPATH=. python ...`).
    assigned: Vec<String>,
    /// Variables set or exported earlier on the line (`export PYTHONPATH=.; python ...`).
    set_earlier: Vec<String>,
    /// Files written by the commands before the one being read.
    written_before: usize,
    /// Files written on the enclosing line before this nested one.
    inherited_writes: usize,
    /// The text the command being read gets on its standard input from a
    /// here-document or a here-string, if any.
    stdin: Option<Word>,
}

/// Words that start or end compound commands; the command after them is analysed as usual.
const RESERVED: &[&str] = &["if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "time", "function"];

impl Walker {
    fn walk(&mut self, tokens: &[Tok]) {
        let mut i = 0;
        let mut prev_op: Option<&'static str> = None;
        while i < tokens.len() {
            match &tokens[i] {
                Tok::Op("(") => {
                    self.cwd_stack.push(self.cwd.clone());
                    prev_op = Some("(");
                    i += 1;
                }
                Tok::Op(")") => {
                    if let Some(c) = self.cwd_stack.pop() {
                        self.cwd = c;
                    }
                    prev_op = Some(")");
                    i += 1;
                }
                Tok::Op(op) => {
                    prev_op = Some(op);
                    i += 1;
                }
                _ => {
                    let start = i;
                    while i < tokens.len() && !matches!(tokens[i], Tok::Op(_)) {
                        i += 1;
                    }
                    let next_op = match tokens.get(i) {
                        Some(Tok::Op(op)) => Some(*op),
                        _ => None,
                    };
                    let in_pipeline_or_background =
                        matches!(prev_op, Some("|" | "|&")) || matches!(next_op, Some("|" | "|&" | "&"));
                    self.simple_command(&tokens[start..i], in_pipeline_or_background);
                }
            }
        }
    }

    fn unprovable(&mut self, why: impl Into<String>) {
        self.out.unprovable.push(why.into());
    }

    fn target(&mut self, w: &Word, by: &str) {
        if w.dynamic {
            self.unprovable(format!("{by} writes `{}`, a path whose value is only known when the command runs", w.text));
            return;
        }
        self.target_text(&w.text, by);
    }

    fn target_text(&mut self, text: &str, by: &str) {
        if matches!(text, "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty" | "-") || text.starts_with("/dev/fd/") {
            return;
        }
        let path = Path::new(text);
        let abs = if path.is_absolute() {
            path.to_path_buf()
        } else if let Some(cwd) = &self.cwd {
            cwd.join(path)
        } else {
            self.unprovable(format!("{by} writes `{text}` after a `cd` to a directory only known when the command runs"));
            return;
        };
        self.out.targets.push(Target { path: normalize(&abs), by: by.to_string() });
    }

    fn substitutions(&mut self, w: &Word) {
        for s in &w.substitutions {
            let sub = analyze_depth(s, self.cwd.clone(), self.depth + 1, &self.inherited());
            self.out.merge(sub);
        }
    }

    fn simple_command(&mut self, toks: &[Tok], isolated: bool) {
        self.written_before = self.inherited_writes + self.out.targets.len();
        let mut words: Vec<Word> = Vec::new();
        self.stdin = None;
        for t in toks {
            match t {
                Tok::Word(w) => {
                    self.substitutions(w);
                    words.push(w.clone());
                }
                Tok::Redir { op, target, body } => {
                    if op == "<<" {
                        self.stdin.clone_from(body);
                    } else if op == "<<<" {
                        self.stdin.clone_from(target);
                    }
                    if let Some(target) = target {
                        self.substitutions(target);
                        let output = matches!(op.as_str(), ">" | ">>" | ">|" | "&>" | "&>>" | "<>");
                        let dup = matches!(op.as_str(), ">&" | "<&");
                        if output {
                            self.target(target, &format!("the redirection `{op}`"));
                        } else if dup && op == ">&" && !(target.text == "-" || target.text.chars().all(|c| c.is_ascii_digit())) {
                            self.target(target, "the redirection `>&`");
                        }
                    }
                }
                Tok::Op(_) => {}
            }
        }
        // Words that are only substitutions from a here-document body.
        words.retain(|w| !(w.text.is_empty() && w.dynamic && !w.substitutions.is_empty() && w.quoted));
        let mut words: &[Word] = &words;
        while let Some(first) = words.first() {
            if !first.quoted && RESERVED.contains(&first.text.as_str()) {
                words = &words[1..];
            } else {
                break;
            }
        }
        // `for x in ...`, `select`: the list is no command.
        if let Some(first) = words.first() {
            if !first.quoted && matches!(first.text.as_str(), "for" | "select") {
                return;
            }
            if !first.quoted && first.text == "case" {
                self.unprovable("`case` statements are not read by the write gate");
                return;
            }
        }
        // Assignments before the command.
        self.assigned.clear();
        while let Some(first) = words.first() {
            if is_assignment(first) {
                self.assigned.push(first.text.split('=').next().unwrap_or_default().to_string());
                words = &words[1..];
            } else {
                break;
            }
        }
        if words.is_empty() {
            self.set_earlier.append(&mut self.assigned);
        }
        self.command(words, isolated);
        self.assigned.clear();
    }

    fn inherited(&self) -> Inherited {
        Inherited {
            written: self.inherited_writes + self.out.targets.len(),
            variables: self.assigned.iter().chain(&self.set_earlier).cloned().collect(),
        }
    }

    /// A variable set for the command being read or earlier on the line
    /// whose name starts with one of `prefixes`.
    fn loader_variable(&self, prefixes: &[&str]) -> Option<String> {
        self.assigned.iter().chain(&self.set_earlier).find(|v| prefixes.iter().any(|p| v.starts_with(p))).cloned()
    }

    #[allow(clippy::too_many_lines)]
    fn command(&mut self, words: &[Word], isolated: bool) {
        let Some(name_word) = words.first() else { return };
        if name_word.dynamic && !matches!(name_word.text.as_str(), "[" | "[[") {
            self.unprovable(format!("the command `{}` is only known when it runs", name_word.text));
            return;
        }
        let name = name_word.text.rsplit('/').next().unwrap_or(&name_word.text).to_string();
        let args = &words[1..];
        let texts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
        if matches!(name.as_str(), "export" | "declare" | "typeset" | "readonly" | "local") {
            self.set_earlier.extend(texts.iter().filter(|t| !t.starts_with('-')).map(|t| t.split('=').next().unwrap_or_default().to_string()));
        }
        match name.as_str() {
            // Wrappers: analyse the command they run.
            "sudo" | "doas" | "nohup" | "command" | "builtin" | "exec" | "stdbuf" | "ionice" | "nice" | "timeout" | "time"
            | "env" | "chronic" => {
                let mut rest = args;
                if name == "command" && texts.first().is_some_and(|t| *t == "-v" || *t == "-V") {
                    return;
                }
                while let Some(first) = rest.first() {
                    let t = first.text.as_str();
                    if t.starts_with('-') || (name == "env" && is_assignment(first)) {
                        if name == "env" && is_assignment(first) {
                            self.assigned.push(t.split('=').next().unwrap_or_default().to_string());
                        }
                        rest = &rest[1..];
                        // Options with a value.
                        if matches!((name.as_str(), t), ("nice", "-n") | ("sudo", "-u" | "-g") | ("env", "-u" | "-C") | ("timeout", "-s" | "-k"))
                        {
                            rest = rest.get(1..).unwrap_or(&[]);
                        }
                    } else {
                        break;
                    }
                }
                if name == "timeout" && !rest.is_empty() {
                    rest = &rest[1..]; // the duration
                }
                self.command(rest, isolated);
            }
            "xargs" => {
                let mut rest = args;
                while let Some(first) = rest.first() {
                    let t = first.text.as_str();
                    if !t.starts_with('-') {
                        break;
                    }
                    rest = &rest[1..];
                    if matches!(t, "-I" | "-n" | "-L" | "-P" | "-d" | "-s" | "-E" | "-a") {
                        rest = rest.get(1..).unwrap_or(&[]);
                    }
                }
                if rest.is_empty() {
                    return; // echo
                }
                // xargs appends names read from its input: unknown values.
                let mut with_input = rest.to_vec();
                with_input.push(Word { text: "<names from xargs' input>".into(), dynamic: true, ..Word::default() });
                self.command(&with_input, isolated);
            }
            "cd" | "pushd" => {
                if isolated {
                    return; // a cd in a pipeline or in the background does not move the shell
                }
                match args.iter().find(|w| !w.text.starts_with('-')) {
                    Some(dir) if !dir.dynamic => {
                        self.cwd = self.cwd.as_ref().map(|c| normalize(&c.join(&dir.text)));
                    }
                    _ => self.cwd = None,
                }
            }
            "popd" => {
                if !isolated {
                    self.cwd = None;
                }
            }
            "sh" | "bash" | "zsh" | "dash" | "ksh" => {
                let mut it = args.iter();
                let mut script = None;
                while let Some(w) = it.next() {
                    if w.text == "-c" || (w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains('c')) {
                        script = it.next();
                        break;
                    }
                    if !w.text.starts_with('-') {
                        break;
                    }
                }
                match script {
                    Some(s) if !s.dynamic || (s.quoted && s.substitutions.is_empty() && !s.text.contains('$')) => {
                        let sub = analyze_depth(&s.text, self.cwd.clone(), self.depth + 1, &self.inherited());
                        self.out.merge(sub);
                    }
                    _ if args.iter().all(|w| matches!(w.text.as_str(), "--version" | "--help")) && !args.is_empty() => {}
                    _ => self.unprovable(format!("`{name}` runs a script the write gate cannot read")),
                }
            }
            "python" | "python3" | "python2" | "py" | "perl" | "ruby" | "node" | "nodejs" | "deno" | "bun" | "php" | "lua"
            | "Rscript" | "osascript" | "pwsh" | "powershell" => self.interpreter(&name, args),
            "npx" | "bunx" => self.package_runner(&name, args, isolated),
            "source" | "." | "eval" => self.unprovable(format!("`{name}` runs code the write gate cannot read")),
            "sed" | "gsed" => self.sed(args),
            "awk" | "gawk" | "mawk" | "nawk" => self.awk(args),
            "find" => self.find(args),
            "git" => self.git(args),
            "tee" => {
                for w in positionals(args, &[]) {
                    self.target(w, "tee");
                }
            }
            "cp" | "mv" | "install" | "ln" | "rsync" | "scp" => self.copy_like(&name, args),
            "rm" | "unlink" | "shred" | "rmdir" | "mkdir" | "touch" | "truncate" | "mkfifo" | "mknod" => {
                let with_value: &[&str] = match name.as_str() {
                    "touch" => &["-r", "-d", "-t", "--reference", "--date"],
                    "truncate" => &["-s", "-r", "--size", "--reference"],
                    "mkdir" | "mkfifo" | "mknod" => &["-m", "--mode"],
                    "shred" => &["-n", "-s", "--iterations", "--size"],
                    _ => &[],
                };
                for w in positionals(args, with_value) {
                    self.target(w, &name);
                }
            }
            "chmod" | "chown" | "chgrp" | "chattr" | "setfacl" => {
                let pos = positionals(args, &[]);
                let skip = usize::from(!texts.iter().any(|t| t.starts_with("--reference")));
                for w in pos.into_iter().skip(skip) {
                    self.target(w, &name);
                }
            }
            "dd" => {
                for w in args {
                    if let Some(path) = w.text.strip_prefix("of=") {
                        let mut t = w.clone();
                        t.text = path.to_string();
                        self.target(&t, "dd of=");
                    }
                }
            }
            "sort" => {
                let mut it = args.iter();
                while let Some(w) = it.next() {
                    if w.text == "-o" {
                        if let Some(f) = it.next() {
                            self.target(f, "sort -o");
                        }
                    } else if let Some(f) = w.text.strip_prefix("--output=") {
                        self.target_text(f, "sort -o");
                    } else if w.text.starts_with("-o") && w.text.len() > 2 && !w.text.starts_with("--") {
                        self.target_text(&w.text[2..], "sort -o");
                    }
                }
            }
            "uniq" => {
                if let Some(w) = positionals(args, &["-f", "-s", "-w"]).get(1) {
                    self.target(w, "uniq");
                }
            }
            "curl" => {
                let mut it = args.iter();
                while let Some(w) = it.next() {
                    match w.text.as_str() {
                        "-o" | "--output" => {
                            if let Some(f) = it.next() {
                                self.target(f, "curl -o");
                            }
                        }
                        "-O" | "--remote-name" | "--remote-name-all" | "-J" => self.unprovable("curl -O writes a file named by the server"),
                        t if t.starts_with("--output=") => self.target_text(&t["--output=".len()..], "curl -o"),
                        _ => {}
                    }
                }
            }
            "wget" => {
                let mut it = args.iter();
                let mut named = false;
                while let Some(w) = it.next() {
                    if w.text == "-O" || w.text == "--output-document" {
                        named = true;
                        if let Some(f) = it.next() {
                            self.target(f, "wget -O");
                        }
                    } else if w.text == "--version" || w.text == "--help" || w.text == "--spider" {
                        named = true;
                    }
                }
                if !named {
                    self.unprovable("wget writes a file named after the URL");
                }
            }
            "tar" | "bsdtar" => {
                let listing = texts.first().is_some_and(|t| !t.starts_with("--") && t.trim_start_matches('-').contains('t'))
                    || texts.iter().any(|t| *t == "--list" || *t == "-t" || *t == "--version");
                if !listing {
                    self.unprovable("tar creates or extracts files the write gate cannot list");
                }
            }
            "unzip" | "gunzip" | "gzip" | "bzip2" | "xz" | "zstd" | "7z" | "zip" => {
                let reading = texts.iter().any(|t| matches!(*t, "-l" | "-t" | "-c" | "--stdout" | "--list" | "--test" | "-h" | "--help" | "--version" | "-v"));
                if !reading {
                    self.unprovable(format!("`{name}` writes files the write gate cannot list"));
                }
            }
            // Codex's patch format run through the shell: its envelope names
            // every file it adds, updates, deletes or moves.
            "apply_patch" | "applypatch" => {
                let patch = args.first().or(self.stdin.as_ref()).cloned();
                self.apply_patch(patch.as_ref());
            }
            "patch" => {
                if !texts.iter().any(|t| *t == "--dry-run" || *t == "--version") {
                    self.unprovable("patch writes the files its diff names; use Edit/Write for them instead");
                }
            }
            "xxd" => {
                if positionals(args, &["-c", "-g", "-l", "-s", "-o", "-n"]).len() > 1 {
                    self.unprovable("xxd with an output file");
                }
            }
            "cargo" => self.cargo(&texts),
            "code-intel" => {
                // `init` rewrites client configuration (the hook among it), `model install`
                // and `plugin new` write files; the rest reads or writes only .code-intel/.
                let sub: Vec<&str> = texts.iter().filter(|t| !t.starts_with('-')).take(2).copied().collect();
                if matches!(sub.as_slice(), ["init", ..] | ["model", "install", ..] | ["plugin", "new", ..]) {
                    self.unprovable(format!("`code-intel {}` writes files the write gate does not check", sub.join(" ")));
                }
            }
            "pnpm" | "yarn" if matches!(texts.first(), Some(&("exec" | "dlx"))) => self.package_runner(&name, &args[1..], isolated),
            "npm" if matches!(texts.first(), Some(&("exec" | "x"))) => self.package_runner(&name, &args[1..], isolated),
            "npm" | "pnpm" | "yarn" => self.node_pm(&name, &texts),
            "go" => {
                let sub = texts.iter().find(|t| !t.starts_with('-')).copied().unwrap_or("");
                if !matches!(sub, "test" | "build" | "vet" | "list" | "version" | "env" | "doc" | "help" | "run" | "") {
                    self.unprovable(format!("`go {sub}` may change source files"));
                }
            }
            "gofmt" | "prettier" | "black" | "rustfmt" | "isort" | "clang-format" => {
                let checking = texts.iter().any(|t| matches!(*t, "--check" | "-l" | "--list-different" | "-d" | "--diff" | "--dry-run" | "--version"))
                    && !texts.iter().any(|t| matches!(*t, "-w" | "--write" | "-i"));
                if !checking {
                    self.unprovable(format!("`{name}` rewrites files in place (use its --check mode)"));
                }
            }
            "eslint" | "ruff" | "clippy-driver" | "stylelint" | "rubocop" | "phpcbf" => {
                let fixing = texts.iter().any(|t| t.starts_with("--fix") || *t == "-a" || *t == "-A" || *t == "format");
                if fixing || name == "phpcbf" {
                    self.unprovable(format!("`{name}` with a fix option rewrites files"));
                }
            }
            "tsc" | "vue-tsc" => {
                // The TypeScript compiler writes its .js/.d.ts output next to the
                // sources unless tsconfig names an outDir, so it is a write unless
                // it only checks or reports.
                let build = texts.iter().any(|t| matches!(*t, "-b" | "--build"));
                let checking = texts.iter().any(|t| {
                    matches!(*t, "--noEmit" | "--version" | "-v" | "--help" | "-h" | "--all" | "--showConfig" | "--listFilesOnly")
                }) || build && texts.iter().any(|t| matches!(*t, "--dry" | "-d"));
                let writing = texts.iter().any(|t| matches!(*t, "--init" | "--noEmit=false" | "--force" | "-f"))
                    || texts.windows(2).any(|w| w == ["--noEmit", "false"]);
                if !checking || writing {
                    self.unprovable(format!(
                        "`{name}` without --noEmit writes compiled .js and .d.ts files the write gate cannot list \
                         (type-check with `{name} --noEmit`)"
                    ));
                }
            }
            n if READ_ONLY.contains(&n) || BUILD_AND_TEST.contains(&n) => {}
            _ => self.unprovable(format!("`{name}` is not a command the write gate knows to be read-only")),
        }
    }

    fn interpreter(&mut self, name: &str, words: &[Word]) {
        let args: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
        let args = args.as_slice();
        let harmless = !args.is_empty()
            && args.iter().all(|a| matches!(*a, "--version" | "-V" | "-v" | "--help" | "-h" | "-VV"));
        if harmless {
            return;
        }
        if matches!(name, "python" | "python3" | "python2" | "py") {
            if let Some(i) = args.iter().position(|a| *a == "-m") {
                let module = args.get(i + 1).copied().unwrap_or("");
                let rest = &args[(i + 2).min(args.len())..];
                let read_only = match module {
                    "pytest" | "unittest" | "mypy" | "pyflakes" | "pydoc" | "timeit" | "tabnanny" | "py_compile" | "compileall" => true,
                    "json.tool" => rest.len() <= 1,
                    "pip" => rest.first().is_some_and(|s| matches!(*s, "list" | "show" | "freeze" | "check" | "--version")),
                    _ => false,
                };
                if read_only {
                    return;
                }
                self.unprovable(format!("`{name} -m {module}` runs code the write gate cannot read"));
                return;
            }
            if let Some(code) = python_inline_code(words) {
                let flags = &args[..args.iter().position(|a| *a == "-c").unwrap_or(0)];
                let isolated = flags.contains(&"-I") || flags.contains(&"-P");
                let ignores_env = flags.contains(&"-I") || flags.contains(&"-E");
                let checked = code.and_then(|c| python_code_is_read_only(&c.text)).and_then(|modules| {
                    let prefixes: &[&str] = if ignores_env { &["LD_"] } else { &["PYTHON", "LD_"] };
                    if let Some(var) = self.loader_variable(prefixes) {
                        return Err(format!("{var} is set for it, which changes what Python loads"));
                    }
                    if self.written_before > 0 {
                        // A module, a .pth or sitecustomize file the line wrote first would run.
                        return Err("the command line writes files before it, which Python may load; run it as a command of its own".into());
                    }
                    if modules.is_empty() || isolated {
                        return Ok(());
                    }
                    match &self.cwd {
                        None => Err("it imports from a directory only known when the command runs (run it with `python -I`)".into()),
                        Some(cwd) => inline_code::python_shadowed_in(cwd).map_or(Ok(()), Err),
                    }
                });
                if let Err(why) = checked {
                    self.unprovable(format!("`{name} -c`: {why}"));
                }
                return;
            }
        }
        if matches!(name, "node" | "nodejs") {
            if let Some(code) = node_inline_code(words) {
                let checked = code.and_then(|c| inline_code::node_code_is_read_only(&c.text)).and_then(|json_files| {
                    if let Some(var) = self.loader_variable(&["NODE_", "LD_"]) {
                        return Err(format!("{var} is set for it, which changes what node loads"));
                    }
                    if self.written_before > 0 && !json_files.is_empty() {
                        return Err("the command line writes files before it, which its require may load; run it as a command of its own".into());
                    }
                    for file in json_files {
                        let Some(cwd) = &self.cwd else {
                            return Err(format!("it requires '{file}' from a directory only known when the command runs"));
                        };
                        // node picks the loader by the resolved file's extension, and a
                        // missing file may resolve to `FILE.js` or a package directory.
                        match std::fs::canonicalize(cwd.join(&file)) {
                            Ok(real) if real.is_file() && real.extension().is_some_and(|e| e == "json") => {}
                            _ => return Err(format!("it requires '{file}', which is not a JSON file here (node would load something else)")),
                        }
                    }
                    Ok(())
                });
                if let Err(why) = checked {
                    self.unprovable(format!("`{name} -e`: {why}"));
                }
                return;
            }
        }
        if name == "perl" {
            if let Some(run) = perl_code::perl_run(words) {
                let checked = run.and_then(|run| match self.loader_variable(&["PERL", "LD_"]) {
                    Some(var) => Err(format!("{var} is set for it, which changes what Perl loads")),
                    None => Ok(run),
                });
                match checked {
                    Ok(run) => {
                        for file in run.in_place {
                            self.target(file, "perl -i");
                            if !run.backup_suffix.is_empty() {
                                self.target_text(&format!("{}{}", file.text, run.backup_suffix), "perl -i (backup)");
                            }
                        }
                    }
                    Err(why) => self.unprovable(format!(
                        "`perl -e`: {why}; to read text use grep, rg, sed -n or awk, to edit a file use Edit/Write"
                    )),
                }
                return;
            }
        }
        let inline = args.iter().any(|a| matches!(*a, "-c" | "-e" | "-E" | "-r" | "--eval" | "-p" | "-pe" | "-ne" | "-i" | "-pi" | "-n" | "-lne" | "-lane"));
        if inline && name == "ruby" {
            self.unprovable(
                "`ruby` runs inline code the write gate does not read (it reads only python -c, node -e|-p and perl -e code); \
                 to read text use grep, rg, sed -n or awk",
            );
            return;
        }
        let how = if inline { "inline code" } else { "a script" };
        self.unprovable(format!("`{name}` runs {how} that may write files; the write gate cannot tell which"));
    }

    /// `apply_patch` with its patch as the first argument or on standard
    /// input: the files named by `*** Add File:`, `*** Update File:`,
    /// `*** Delete File:` and `*** Move to:` lines are its writes.
    fn apply_patch(&mut self, patch: Option<&Word>) {
        let Some(patch) = patch else {
            self.unprovable("apply_patch reads its patch from a pipe or a file the write gate cannot see; pass it as a here-document");
            return;
        };
        if patch.dynamic {
            self.unprovable("apply_patch's patch expands variables or commands; quote the here-document's delimiter (<<'EOF')");
            return;
        }
        let files = patch_files(&patch.text);
        if files.is_empty() {
            self.unprovable("apply_patch's input names no file (no `*** Add File:` / `*** Update File:` lines)");
            return;
        }
        for file in files {
            self.target_text(&file, "apply_patch");
        }
    }

    fn sed(&mut self, args: &[Word]) {
        let mut in_place = false;
        let mut script_given = false;
        let mut scripts: Vec<String> = Vec::new();
        let mut files: Vec<&Word> = Vec::new();
        let mut it = args.iter();
        let mut options_done = false;
        while let Some(w) = it.next() {
            let t = w.text.as_str();
            if options_done || !t.starts_with('-') || t == "-" {
                if script_given {
                    files.push(w);
                } else {
                    scripts.push(t.to_string());
                    script_given = true;
                }
                continue;
            }
            if t == "--" {
                options_done = true;
            } else if t == "-e" || t == "--expression" {
                if let Some(s) = it.next() {
                    scripts.push(s.text.clone());
                }
                script_given = true;
            } else if let Some(s) = t.strip_prefix("--expression=") {
                scripts.push(s.to_string());
                script_given = true;
            } else if t == "-f" || t == "--file" || t.starts_with("--file=") {
                if t == "-f" || t == "--file" {
                    it.next();
                }
                self.unprovable("sed -f runs a script file the write gate cannot read");
                script_given = true;
            } else if t.starts_with("--in-place") {
                in_place = true;
            } else if t == "-l" || t == "--line-length" {
                it.next();
            } else if !t.starts_with("--") {
                // Bundled short options: -ni, -Ei.bak, -i, -n -e ...
                let flags = &t[1..];
                for (k, c) in flags.char_indices() {
                    match c {
                        'i' => {
                            in_place = true;
                            break; // the rest is the backup suffix
                        }
                        'e' => {
                            let rest = &flags[k + 1..];
                            if rest.is_empty() {
                                if let Some(s) = it.next() {
                                    scripts.push(s.text.clone());
                                }
                            } else {
                                scripts.push(rest.to_string());
                            }
                            script_given = true;
                            break;
                        }
                        'f' => {
                            self.unprovable("sed -f runs a script file the write gate cannot read");
                            script_given = true;
                            break;
                        }
                        _ => {}
                    }
                }
            }
        }
        for s in &scripts {
            if sed_script_writes(s) {
                self.unprovable(format!("the sed script `{s}` writes a file or runs a command (w, W or e)"));
            }
        }
        if in_place {
            if files.is_empty() {
                self.unprovable("sed -i without a file");
            }
            for f in files {
                self.target(f, "sed -i");
            }
        }
    }

    fn awk(&mut self, args: &[Word]) {
        let mut it = args.iter();
        let mut program: Option<&str> = None;
        while let Some(w) = it.next() {
            let t = w.text.as_str();
            match t {
                "-f" | "--file" => {
                    self.unprovable("awk -f runs a program file the write gate cannot read");
                    return;
                }
                "-i" | "--include" => {
                    let what = it.next().map_or("", |w| w.text.as_str());
                    if what.contains("inplace") {
                        self.unprovable("awk -i inplace rewrites its input files");
                        return;
                    }
                }
                "-v" | "-F" | "--assign" | "--field-separator" => {
                    it.next();
                }
                _ if t.starts_with('-') && program.is_none() => {}
                _ => {
                    if program.is_none() {
                        program = Some(t);
                    }
                }
            }
        }
        if let Some(p) = program {
            if awk_program_writes(p) {
                self.unprovable(format!("the awk program `{p}` may write files or run commands"));
            }
        }
    }

    fn find(&mut self, args: &[Word]) {
        let mut i = 0;
        while i < args.len() {
            let t = args[i].text.as_str();
            match t {
                "-delete" => self.unprovable("find -delete removes files the write gate cannot list"),
                "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                    if let Some(f) = args.get(i + 1) {
                        self.target(f, &format!("find {t}"));
                    }
                }
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let end = args[i + 1..].iter().position(|w| w.text == ";" || w.text == "+").map_or(args.len(), |p| i + 1 + p);
                    let inner: Vec<Word> = args[i + 1..end]
                        .iter()
                        .map(|w| if w.text.contains("{}") { Word { dynamic: true, ..w.clone() } } else { w.clone() })
                        .collect();
                    let before_targets = self.out.targets.len();
                    let before_unprovable = self.out.unprovable.len();
                    self.command(&inner, true);
                    if self.out.targets.len() > before_targets || self.out.unprovable.len() > before_unprovable {
                        self.out.targets.truncate(before_targets);
                        self.out.unprovable.truncate(before_unprovable);
                        let cmd = inner.first().map_or("", |w| w.text.as_str()).to_string();
                        self.unprovable(format!("find {t} runs `{cmd}`, which may write the files it finds"));
                    }
                    i = end;
                }
                _ => {}
            }
            i += 1;
        }
    }

    #[allow(clippy::too_many_lines)]
    fn git(&mut self, args: &[Word]) {
        let mut i = 0;
        let saved_cwd = self.cwd.clone();
        // Global options.
        while let Some(w) = args.get(i) {
            let t = w.text.as_str();
            if !t.starts_with('-') {
                break;
            }
            if t == "-C" {
                match args.get(i + 1) {
                    Some(d) if !d.dynamic => self.cwd = self.cwd.as_ref().map(|c| normalize(&c.join(&d.text))),
                    _ => self.cwd = None,
                }
                i += 2;
            } else if matches!(t, "-c" | "--git-dir" | "--work-tree" | "--namespace") {
                if t == "--work-tree" {
                    self.cwd = None;
                }
                i += 2;
            } else {
                if t.starts_with("--work-tree=") {
                    self.cwd = None;
                }
                i += 1;
            }
        }
        let sub = args.get(i).map_or("", |w| w.text.as_str());
        let rest = &args[(i + 1).min(args.len())..];
        let texts: Vec<&str> = rest.iter().map(|w| w.text.as_str()).collect();
        let has = |o: &str| texts.contains(&o);
        match sub {
            "" | "status" | "log" | "show" | "blame" | "annotate" | "grep" | "ls-files" | "ls-tree" | "ls-remote" | "rev-parse"
            | "rev-list" | "describe" | "shortlog" | "cat-file" | "show-ref" | "merge-base" | "name-rev" | "reflog" | "whatchanged"
            | "cherry" | "count-objects" | "fsck" | "help" | "version" | "--version" | "var" | "check-ignore" | "check-attr"
            | "for-each-ref" | "range-diff" | "diff-tree" | "diff-files" | "diff-index" | "verify-commit" | "verify-tag" | "fetch"
            | "push" | "add" | "commit" | "tag" | "branch" | "remote" | "config" | "notes" | "gc" | "prune" | "log-tree"
            | "bundle" | "request-pull" | "archive" => {
                if sub == "archive" && (has("-o") || texts.iter().any(|t| t.starts_with("--output"))) {
                    self.unprovable("git archive --output writes a file");
                }
            }
            "diff" => {
                let mut it = rest.iter();
                while let Some(w) = it.next() {
                    if w.text == "--output" {
                        if let Some(f) = it.next() {
                            self.target(f, "git diff --output");
                        }
                    } else if let Some(f) = w.text.strip_prefix("--output=") {
                        self.target_text(f, "git diff --output");
                    }
                }
            }
            "checkout" => match rest.iter().position(|w| w.text == "--") {
                Some(p) => {
                    for f in &rest[p + 1..] {
                        self.target(f, "git checkout --");
                    }
                }
                None => self.unprovable("git checkout without `--` may switch branches and rewrite any file"),
            },
            "restore" => {
                let worktree = !has("--staged") && !has("-S") || has("--worktree") || has("-W");
                if worktree {
                    let files = positionals(rest, &["-s", "--source"]);
                    if files.is_empty() {
                        self.unprovable("git restore without paths");
                    }
                    for f in files {
                        self.target(f, "git restore");
                    }
                }
            }
            "rm" => {
                if !has("--cached") && !has("-n") && !has("--dry-run") {
                    for f in positionals(rest, &[]) {
                        self.target(f, "git rm");
                    }
                }
            }
            "mv" => {
                for f in positionals(rest, &[]) {
                    self.target(f, "git mv");
                }
            }
            "clean" => {
                if !has("-n") && !has("--dry-run") {
                    self.unprovable("git clean deletes files the write gate cannot list");
                }
            }
            "reset" => {
                if has("--hard") || has("--merge") || has("--keep") {
                    self.unprovable(format!("git reset {} rewrites the working tree", texts.iter().find(|t| t.starts_with("--")).unwrap_or(&"")));
                }
            }
            "apply" => {
                let checking = (has("--check") || has("--stat") || has("--numstat") || has("--summary")) && !has("--apply");
                if !checking && !(has("--cached") && !has("--index")) {
                    self.unprovable("git apply writes the files its patch names; use Edit/Write for them instead");
                }
            }
            "stash" => {
                let action = texts.first().copied().unwrap_or("push");
                if !matches!(action, "list" | "show" | "drop" | "clear" | "create" | "store") {
                    self.unprovable(format!("git stash {action} rewrites files in the working tree"));
                }
            }
            "worktree" => {
                if !matches!(texts.first().copied(), Some("list" | "prune")) {
                    self.unprovable("git worktree may create a checkout");
                }
            }
            other => self.unprovable(format!("git {other} may rewrite files in the working tree")),
        }
        self.cwd = saved_cwd;
    }

    fn copy_like(&mut self, name: &str, args: &[Word]) {
        let with_value: &[&str] = match name {
            "install" => &["-m", "-o", "-g", "--mode", "--owner", "--group", "-S", "--suffix"],
            "cp" | "mv" | "ln" => &["-S", "--suffix"],
            "rsync" => &["-e", "--rsh", "--exclude", "--include", "--filter", "-f"],
            "scp" => &["-P", "-i", "-o", "-F", "-c", "-l", "-J"],
            _ => &[],
        };
        let mut target_dir: Option<&Word> = None;
        let mut it = args.iter();
        while let Some(w) = it.next() {
            if w.text == "-t" || w.text == "--target-directory" {
                target_dir = it.next();
            } else if let Some(d) = w.text.strip_prefix("--target-directory=") {
                let _ = d;
                target_dir = Some(w);
            }
        }
        let pos: Vec<&Word> =
            positionals(args, &[with_value, &["-t", "--target-directory"]].concat()).into_iter().collect();
        if name == "install" && args.iter().any(|w| w.text == "-d" || w.text == "--directory") {
            for w in pos {
                self.target(w, "install -d");
            }
            return;
        }
        let (sources, dest): (Vec<&Word>, Option<&Word>) = match target_dir {
            Some(d) => (pos.clone(), Some(d)),
            None => match pos.split_last() {
                Some((last, rest)) => (rest.to_vec(), Some(*last)),
                None => (Vec::new(), None),
            },
        };
        if name == "mv" {
            for s in &sources {
                self.target(s, "mv (source)");
            }
        }
        let Some(dest) = dest else { return };
        let dest_text = dest.text.strip_prefix("--target-directory=").unwrap_or(&dest.text);
        if dest.dynamic {
            self.target(dest, name);
            return;
        }
        if name == "scp" || name == "rsync" {
            if dest_text.contains(':') {
                return; // remote
            }
        }
        let dest_abs = match &self.cwd {
            Some(c) => c.join(dest_text),
            None => PathBuf::from(dest_text),
        };
        let into_dir = target_dir.is_some() || dest_abs.is_dir() || dest_text.ends_with('/');
        if into_dir && !sources.is_empty() && name != "rsync" {
            for s in &sources {
                if s.dynamic {
                    self.unprovable(format!("{name} writes into `{dest_text}` names only known when it runs"));
                    continue;
                }
                let base = Path::new(&s.text).file_name().map(|b| b.to_string_lossy().to_string()).unwrap_or_default();
                self.target_text(&format!("{}/{base}", dest_text.trim_end_matches('/')), name);
            }
        } else {
            let mut w = dest.clone();
            w.text = dest_text.to_string();
            self.target(&w, name);
        }
    }

    fn cargo(&mut self, args: &[&str]) {
        let sub = args.iter().find(|t| !t.starts_with('-') && !t.starts_with('+')).copied().unwrap_or("");
        let ok = match sub {
            "" | "test" | "build" | "check" | "run" | "bench" | "doc" | "metadata" | "tree" | "nextest" | "search" | "version"
            | "help" | "locate-project" | "pkgid" | "verify-project" | "read-manifest" | "xtask" | "audit" | "deny" | "expand" => true,
            "clippy" => !args.iter().any(|t| t.starts_with("--fix")),
            "fmt" => args.iter().any(|t| *t == "--check"),
            _ => false,
        };
        if !ok {
            self.unprovable(format!("`cargo {sub}` may change source files"));
        }
    }

    /// `npx [options] COMMAND ARGS...` (and `bunx`, `pnpm exec|dlx`, `yarn
    /// exec|dlx`): what the command it runs writes. `-c 'COMMAND LINE'` is
    /// read as a command line.
    fn package_runner(&mut self, name: &str, args: &[Word], isolated: bool) {
        let mut rest = args;
        while let Some(first) = rest.first() {
            let t = first.text.as_str();
            if t == "--" {
                rest = &rest[1..];
                break;
            }
            if !t.starts_with('-') {
                break;
            }
            rest = &rest[1..];
            match t {
                "-c" | "--call" => {
                    match rest.first() {
                        Some(line) if !line.dynamic && line.substitutions.is_empty() => {
                            let sub = analyze_depth(&line.text, self.cwd.clone(), self.depth + 1, &self.inherited());
                            self.out.merge(sub);
                        }
                        _ => self.unprovable(format!("`{name} -c` runs a command line the write gate cannot read")),
                    }
                    return;
                }
                // Options with a value.
                "-p" | "--package" | "--cache" | "--registry" | "--userconfig" | "-w" | "--workspace" => {
                    rest = rest.get(1..).unwrap_or(&[]);
                }
                _ => {}
            }
        }
        match rest.first() {
            Some(_) => self.command(rest, isolated),
            None => self.unprovable(format!("`{name}` without a command")),
        }
    }

    fn node_pm(&mut self, name: &str, args: &[&str]) {
        let sub = args.iter().find(|t| !t.starts_with('-')).copied().unwrap_or("");
        let ok = match sub {
            "test" | "t" | "ls" | "list" | "view" | "info" | "why" | "outdated" | "audit" | "explain" | "config" | "help" | "version"
            | "-v" | "" => !args.iter().any(|t| *t == "fix"),
            "run" | "run-script" => args.iter().skip_while(|t| **t != sub).nth(1).is_some_and(|s| {
                s.starts_with("test") || s.starts_with("lint") && !s.contains("fix") || s.starts_with("typecheck") || s.starts_with("check") || *s == "build"
            }),
            _ => false,
        };
        if !ok {
            self.unprovable(format!("`{name} {sub}` may change files in the repository"));
        }
    }
}

/// The files an apply_patch patch (`*** Begin Patch` ... `*** End Patch`)
/// adds, updates, deletes or moves to. Every line naming one counts, inside
/// the envelope or not and however indented, so the gate sees at least every
/// file the patch tool could write.
#[must_use]
pub fn patch_files(text: &str) -> Vec<String> {
    let mut files = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        for prefix in ["*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:"] {
            if let Some(f) = line.strip_prefix(prefix) {
                files.push(f.trim().to_string());
            }
        }
    }
    files
}

fn is_assignment(w: &Word) -> bool {
    let Some(eq) = w.text.find('=') else { return false };
    let name = &w.text[..eq];
    !name.is_empty()
        && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '+' || c == '[' || c == ']')
}

/// Non-option arguments (after `--` everything is one), skipping the values
/// of the options listed.
fn positionals<'a>(args: &'a [Word], with_value: &[&str]) -> Vec<&'a Word> {
    let mut out = Vec::new();
    let mut it = args.iter();
    let mut done = false;
    while let Some(w) = it.next() {
        let t = w.text.as_str();
        if done || !t.starts_with('-') || t == "-" || w.quoted && !t.starts_with('-') {
            out.push(w);
        } else if t == "--" {
            done = true;
        } else if with_value.contains(&t) {
            it.next();
        }
    }
    out
}

/// A sed script with a `w`/`W` command or flag (writes a file) or `e`
/// (runs a command). Conservative: may see one where there is none.
fn sed_script_writes(script: &str) -> bool {
    let chars: Vec<char> = script.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        if !matches!(c, 'w' | 'W' | 'e') {
            continue;
        }
        let next_ok = chars.get(i + 1).is_none_or(|n| n.is_whitespace() || *n == ';' || *n == '}');
        if !next_ok {
            continue;
        }
        // What precedes: start, a separator, an address, or s/// flags.
        let mut j = i;
        while j > 0 && matches!(chars[j - 1], 'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' | ' ') {
            j -= 1;
        }
        if j == 0 || matches!(chars[j - 1], ';' | '\n' | '{' | '}' | '/' | '$' | '!' | ',' | '|' | '#' | ':' | '@') {
            return true;
        }
    }
    false
}

/// An awk program that redirects output, pipes or calls `system`.
fn awk_program_writes(program: &str) -> bool {
    if program.contains("system") || program.contains("getline") && program.contains('|') {
        return true;
    }
    // `print ... > "file"` / `printf ... >> f` / `print | "cmd"`.
    for stmt in program.split([';', '{', '}', '\n']) {
        let s = stmt.trim_start();
        if (s.starts_with("print") || s.starts_with("printf")) && (s.contains('>') || s.contains('|')) {
            return true;
        }
    }
    false
}

/// The code of `python -c CODE` (flags that take no value, `-W`/`-X` with
/// theirs, before it): `None` when the command has no `-c`; an error when
/// the code cannot be read (only known at run time) or the flags say more
/// than running the code (`-i` reads more code from the terminal).
fn python_inline_code(words: &[Word]) -> Option<Result<&Word, String>> {
    let mut it = words.iter();
    while let Some(w) = it.next() {
        match w.text.as_str() {
            "-c" => {
                return Some(match it.next() {
                    Some(code) if !code.dynamic && code.substitutions.is_empty() => Ok(code),
                    Some(_) => Err("its code is only known when it runs".into()),
                    None => Err("no code after -c".into()),
                });
            }
            // A warning category with a module (`-W ignore::mod.Warning`) is
            // imported; `-X pycache_prefix=DIR` writes bytecode there.
            "-W" => match it.next() {
                Some(v) if !v.dynamic && !v.text.contains('.') => {}
                _ => return Some(Err("its -W option names a warning category in a module, which Python imports".into())),
            },
            "-X" => match it.next() {
                Some(v)
                    if !v.dynamic
                        && ["importtime", "dev", "utf8", "utf8=0", "utf8=1", "warn_default_encoding", "no_debug_ranges", "frozen_modules=on", "frozen_modules=off"]
                            .contains(&v.text.as_str()) => {}
                Some(v) => return Some(Err(format!("the gate does not read what `-X {}` does", v.text))),
                None => return Some(Err("no value after -X".into())),
            },
            "-B" | "-E" | "-I" | "-O" | "-OO" | "-P" | "-q" | "-s" | "-S" | "-u" | "-b" | "-bb" | "-R" => {}
            _ => return None,
        }
    }
    None
}

/// The code of `node -e|--eval|-p|--print|-pe CODE` with nothing before it
/// (another option may load code: `-r`, `--import`, `--loader`): `None`
/// without such an option; an error when the code cannot be read.
fn node_inline_code(words: &[Word]) -> Option<Result<&Word, String>> {
    let position = words.iter().position(|w| matches!(w.text.as_str(), "-e" | "--eval" | "-p" | "--print" | "-pe"))?;
    if let Some(other) = words[..position].first() {
        return Some(Err(format!("the option {} comes before the code, and the gate does not read what it loads", other.text)));
    }
    // Options after the code are still node's own (`node -e CODE --require
    // FILE` loads FILE) until `--` or the first other argument.
    if let Some(next) = words.get(position + 2).filter(|w| (w.text.starts_with('-') && w.text != "--") || w.dynamic) {
        return Some(Err(format!("the option {} after the code is node's own, and the gate does not read what it loads", next.text)));
    }
    Some(match words.get(position + 1) {
        Some(code) if !code.dynamic && code.substitutions.is_empty() => Ok(code),
        Some(_) => Err("its code is only known when it runs".into()),
        None => Err("no code after the option".into()),
    })
}

/// Builtins through which Python code can write a file, run code it
/// builds, or reach an object by a name held in a string. (`import` is
/// read by [`inline_code::python_imports`].)
const PYTHON_WRITERS: &[&str] = &[
    "open", "exec", "eval", "compile", "getattr", "setattr", "delattr", "globals", "locals", "vars", "breakpoint", "help",
    "memoryview",
];

/// Whether inline Python code provably writes no file: it imports only
/// modules of a short list and uses them only through listed attributes
/// (checked by [`inline_code::python_imports`], which returns them; any
/// other module reaches `os` one way or another), calls none of
/// [`PYTHON_WRITERS`], names no dunder (`__import__`, `__builtins__`,
/// `().__class__...` reach everything; not even in a string), no frame,
/// generator or traceback attribute (`f_builtins` is the builtins as a
/// dictionary), and holds no non-ASCII identifier
/// (Python folds `ｏｐｅｎ` into `open`). Plain string literals are skipped,
/// unless the code holds an f-string: then every character is read as code.
/// A check of names, not a sandbox: conservative, it refuses some harmless
/// code (`import os`, a string mentioning `open` next to an f-string).
fn python_code_is_read_only(code: &str) -> Result<Vec<String>, String> {
    let chars: Vec<char> = code.chars().collect();
    // Since Python 3.12 an f-string's braces may hold strings in its own
    // quotes, so where it ends cannot be told without parsing Python: with an
    // f-string anywhere, every character is read as code (a string or a
    // comment hides nothing).
    let f_string = (0..chars.len()).any(|i| {
        let starts_word = i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        let prefix: String = chars[i..].iter().take(3).collect::<String>().to_ascii_lowercase();
        starts_word && (prefix.starts_with("f'") || prefix.starts_with("f\"") || ["rf'", "rf\"", "fr'", "fr\""].contains(&prefix.as_str()))
    });
    python_names_are_checked(&chars, f_string)?;
    inline_code::python_imports(code, f_string)
}

fn python_names_are_checked(chars: &[char], f_string: bool) -> Result<(), String> {
    if f_string {
        return python_names_are_read_only(chars);
    }
    let mut i = 0;
    let mut ident = String::new();
    let check = |ident: &mut String| -> Result<(), String> {
        if ident.contains("__") {
            return Err(format!("it names {ident}, which reaches code that writes files"));
        }
        // Frames, generators, coroutines and tracebacks hold the builtins
        // and globals as dictionaries (`gi_frame.f_builtins["open"]`).
        if ["f_", "gi_", "cr_", "ag_", "tb_", "co_"].iter().any(|p| ident.starts_with(p)) {
            return Err(format!("it names {ident}, through which code reaches the builtins"));
        }
        if PYTHON_WRITERS.contains(&ident.as_str()) {
            return Err(format!("it uses `{ident}`, which may write files or run code the gate cannot read"));
        }
        ident.clear();
        Ok(())
    };
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_alphanumeric() || c == '_' {
            // A string prefix (r, b, u, f and pairs) directly before a quote.
            if ident.is_empty() || ident.len() < 2 {
                let mut candidate = ident.clone();
                candidate.push(c);
                if matches!(chars.get(i + 1), Some('\'' | '"'))
                    && candidate.len() <= 2
                    && candidate.chars().all(|p| matches!(p.to_ascii_lowercase(), 'r' | 'b' | 'u' | 'f'))
                {
                    ident.clear();
                    let (_, end) = skip_python_string(&chars, i + 1)?;
                    if chars[i + 1..end].windows(2).any(|w| w == ['_', '_']) {
                        return Err("a string in it names a dunder, which can reach code that writes files".into());
                    }
                    i = end;
                    continue;
                }
            }
            ident.push(c);
            i += 1;
            continue;
        }
        check(&mut ident)?;
        match c {
            '\'' | '"' => {
                let end = skip_python_string(&chars, i)?.1;
                if chars[i..end].windows(2).any(|w| w == ['_', '_']) {
                    return Err("a string in it names a dunder, which can reach code that writes files".into());
                }
                i = end;
            }
            '#' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            c if !c.is_ascii() => return Err(format!("it holds {c:?} outside a string, which Python may read as a name")),
            _ => i += 1,
        }
    }
    check(&mut ident)
}

/// Every name in `chars`, strings and comments included, checked as in
/// [`python_code_is_read_only`]; any non-ASCII character refused.
fn python_names_are_read_only(chars: &[char]) -> Result<(), String> {
    if let Some(c) = chars.iter().find(|c| !c.is_ascii()) {
        return Err(format!("it holds {c:?} in code with an f-string, where Python may read it as a name"));
    }
    let text: String = chars.iter().collect();
    for name in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|n| !n.is_empty()) {
        if name.contains("__") {
            return Err(format!("it names {name}, which reaches code that writes files"));
        }
        if ["f_", "gi_", "cr_", "ag_", "tb_", "co_"].iter().any(|p| name.starts_with(p)) {
            return Err(format!("it names {name}, through which code reaches the builtins"));
        }
        if PYTHON_WRITERS.contains(&name) {
            return Err(format!("it uses `{name}`, which may write files or run code the gate cannot read"));
        }
    }
    Ok(())
}

/// The string literal whose quote is at `start`: the length of its quotes
/// (1 or 3) and the index past its closing quotes.
fn skip_python_string(chars: &[char], start: usize) -> Result<(usize, usize), String> {
    let quote = chars[start];
    let triple = chars.get(start + 1) == Some(&quote) && chars.get(start + 2) == Some(&quote);
    let open = if triple { 3 } else { 1 };
    let mut i = start + open;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            c if c == quote && (!triple || (chars.get(i + 1) == Some(&quote) && chars.get(i + 2) == Some(&quote))) => {
                return Ok((open, i + open));
            }
            '\n' if !triple => return Err("it has an unterminated string".into()),
            _ => i += 1,
        }
    }
    Err("it has an unterminated string".into())
}

/// `..` and `.` removed without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Commands that never write files (their output goes to stdout; their
/// redirections are checked apart).
const READ_ONLY: &[&str] = &[
    "ls", "ll", "dir", "cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "ag", "ack", "wc", "cut", "tr", "nl",
    "od", "hexdump", "file", "stat", "du", "df", "pwd", "echo", "printf", "true", "false", "test", "[", "[[", "]]", "]", "which",
    "type", "whereis", "realpath", "readlink", "basename", "dirname", "date", "printenv", "id", "whoami", "uname", "hostname",
    "tree", "diff", "cmp", "comm", "column", "jq", "sha256sum", "sha1sum", "sha512sum", "md5sum", "cksum", "b2sum", "base64",
    "strings", "fold", "fmt", "paste", "join", "expand", "unexpand", "rev", "tac", "seq", "sleep", "ps", "free", "uptime", "locale",
    "man", "help", "export", "unset", "set", "shopt", "read", "let", "declare", "local", "typeset", "readonly", "exit", "return",
    "wait", "jobs", "alias", "hash", "history", "colordiff", "delta", "bat", "fd", "fdfind", "lsof", "nproc", "getconf", "tput",
    "column", "yes", "env", "ldd", "nm", "objdump", "readelf", "size", "stty", "shasum", "look", "zcat", "zgrep", "bzcat", "xzcat",
    "file", "locate", "mdfind", "open", "xdg-open", "sqlite3-version", "cloc", "tokei", "scc", "ctags-version", "pgrep", "top",
    "htop", "lscpu", "cal", "bc", "expr", "factor", "numfmt", "iconv", "dos2unix-check", "shellcheck", "hadolint", "tsc-version",
    ":", "break", "continue", "umask-show", "getopts", "shift", "ulimit", "caller", "printf", "mapfile", "readarray",
];

/// Build and test tools: they write build outputs (target/, node_modules,
/// caches), never the sources the session gates. Listed in docs/clients.md
/// as not gated.
const BUILD_AND_TEST: &[&str] = &[
    "make", "gmake", "ninja", "cmake", "pytest", "py.test", "tox", "nox", "mypy", "pyright", "jest", "vitest", "mocha",
    "phpunit", "pest", "rspec", "mvn", "gradle", "gradlew", "./gradlew", "dotnet", "swift", "ctest", "bazel", "buck", "just",
    "cargo-nextest", "pylint", "flake8", "pyflakes", "golangci-lint", "staticcheck", "phpstan", "psalm", "hyperfine",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn run(cmd: &str) -> Analysis {
        analyze(cmd, Path::new("/repo"))
    }

    fn targets(cmd: &str) -> Vec<String> {
        let a = run(cmd);
        assert!(a.unprovable.is_empty(), "{cmd}: unexpected unprovable {:?}", a.unprovable);
        a.targets.iter().map(|t| t.path.display().to_string()).collect()
    }

    fn read_only(cmd: &str) {
        let a = run(cmd);
        assert!(a.targets.is_empty() && a.unprovable.is_empty(), "{cmd}: expected read-only, got {a:?}");
    }

    fn unprovable(cmd: &str) {
        let a = run(cmd);
        assert!(!a.unprovable.is_empty(), "{cmd}: expected unprovable, got {a:?}");
    }

    #[test]
    fn read_only_commands_pass() {
        for cmd in [
            "ls -la",
            "cat src/a.py",
            "grep -rn 'foo > bar' src | head -20",
            "rg TODO --json 2>/dev/null",
            "git status && git diff HEAD~1 -- src/a.py",
            "git log --oneline -5",
            "cargo test --release --workspace 2>&1 | tail -30",
            "find . -name '*.py' -type f | xargs grep -l foo",
            "echo hello; pwd",
            "sed -n '1,20p' src/a.py",
            "awk '$3 > 100 { print $1 }' data.txt",
            "cat <<'EOF'\nrm -rf /\nEOF",
            "wc -l $(git ls-files)",
            "FOO=1 env BAR=2 grep x y",
            "python3 -m pytest -q tests",
            "find src -exec grep -l foo {} +",
            "diff <(sort a) <(sort b)",
            "ls > /dev/null 2>&1",
            "for f in a b; do echo $f; done",
            "if [ -f x ]; then cat x; fi",
            "bash -c 'ls -la | wc -l'",
            "curl -s https://example.com",
            "code-intel search 'user rename' --json",
        ] {
            read_only(cmd);
        }
    }

    #[test]
    fn writes_are_found() {
        assert_eq!(targets("sed -i 's/a/b/' src/a.py"), ["/repo/src/a.py"]);
        assert_eq!(targets("sed -i.bak -e 's/a/b/' x.py y.py"), ["/repo/x.py", "/repo/y.py"]);
        assert_eq!(targets("sed -Ei 's/a/b/' x.py"), ["/repo/x.py"]);
        assert_eq!(targets("cat > src/new.py"), ["/repo/src/new.py"]);
        assert_eq!(targets("echo 'x = 1' >> src/a.py"), ["/repo/src/a.py"]);
        assert_eq!(targets("printf x | tee -a notes.md other.md"), ["/repo/notes.md", "/repo/other.md"]);
        assert_eq!(targets("cat > src/b.py <<'EOF'\nimport os\nos.remove('x')\nEOF"), ["/repo/src/b.py"]);
        assert_eq!(targets("cp a.py b.py"), ["/repo/b.py"]);
        assert_eq!(targets("mv a.py b.py"), ["/repo/a.py", "/repo/b.py"]);
        assert_eq!(targets("rm -f a.py b.py"), ["/repo/a.py", "/repo/b.py"]);
        assert_eq!(targets("touch new.txt"), ["/repo/new.txt"]);
        assert_eq!(targets("truncate -s 0 a.py"), ["/repo/a.py"]);
        assert_eq!(targets("dd if=/dev/zero of=blob bs=1 count=1"), ["/repo/blob"]);
        assert_eq!(targets("git checkout -- src/a.py"), ["/repo/src/a.py"]);
        assert_eq!(targets("git restore src/a.py"), ["/repo/src/a.py"]);
        assert_eq!(targets("cd src && echo x > a.py"), ["/repo/src/a.py"]);
        assert_eq!(targets("(cd /tmp && echo x > a); echo y > b"), ["/tmp/a", "/repo/b"]);
        assert_eq!(targets("echo x > /tmp/out.txt"), ["/tmp/out.txt"]);
        assert_eq!(targets("ls 2> err.log"), ["/repo/err.log"]);
        assert_eq!(targets("ls &> all.log"), ["/repo/all.log"]);
        assert_eq!(targets("echo $(echo x > inner.txt)"), ["/repo/inner.txt"]);
        assert_eq!(targets("echo `rm -rf src`"), ["/repo/src"]);
        assert_eq!(targets("sort -o sorted.txt input.txt"), ["/repo/sorted.txt"]);
        assert_eq!(targets("sudo tee /repo/x.conf < y"), ["/repo/x.conf"]);
        assert_eq!(targets("bash -c 'echo hi > src/c.py'"), ["/repo/src/c.py"]);
        assert_eq!(targets("echo x >../outside.txt"), ["/outside.txt"]);
        assert_eq!(targets("git -C sub checkout -- f.py"), ["/repo/sub/f.py"]);
    }

    #[test]
    fn what_cannot_be_read_is_unprovable() {
        for cmd in [
            "python -c 'open(\"a.py\", \"w\").write(\"x\")'",
            "python3 script.py",
            "perl -pi -e 's/a/b/;unlink q(b.py)' a.py",
            "node -e 'require(\"fs\").writeFileSync(\"a.js\", \"\")'",
            "ruby -e 'File.write(\"a\", 1)'",
            "patch -p1 < fix.diff",
            "git apply fix.diff",
            "git checkout main",
            "git stash",
            "git reset --hard",
            "echo x > $OUT",
            "rm *.py",
            "cd $DIR && echo x > a",
            "some-unknown-tool --write",
            "trap 'rm -f a.py' EXIT",
            "code-intel init --client claude",
            "sed 's/a/b/w out.txt' a.py",
            "awk '{ print > \"out.txt\" }' a",
            "find . -name '*.tmp' -delete",
            "find . -exec rm {} ;",
            "xargs rm < list.txt",
            "eval \"$CMD\"",
            "echo 'unterminated",
            "$EDITOR a.py",
            "cargo fmt",
            "cargo fix --allow-dirty",
            "npm install left-pad",
            "tar xzf a.tgz",
            "wget https://example.com/x",
            "source env.sh",
            "sh install.sh",
            "echo `rm -rf $DIR`",
        ] {
            unprovable(cmd);
        }
    }

    /// Inline Python that provably writes nothing, and package runners
    /// judged by what they run, pass; the same forms that write are refused.
    #[test]
    fn inline_python_and_package_runners_are_read_when_they_can_be() {
        for cmd in [
            "python -c \"print(1)\"",
            "python3 -c 'print(sum(range(10)), len(\"abc\"))'",
            "python3 -I -u -c 'print(\"open the door\", r\"raw\", b\"bytes\", \"\"\"tri\nple\"\"\")'",
            "python3 -c 'x = [i * i for i in range(5)]; print(f\"{x!r} {len(x)}\")' | head -1",
            "python3 -c 'print(\"é 日本\")'",
            "npx tsc --noEmit",
            "npx --yes tsc --noEmit -p tsconfig.json",
            "npx -p typescript tsc --version",
            "npx -c 'tsc --noEmit && jest'",
            "tsc --noEmit -p tsconfig.json",
            "npx tsc -b --dry",
            "npx vue-tsc --noEmit",
            "tsc --version",
            "npm exec -- vitest run",
            "pnpm exec vitest run",
            "yarn dlx tsc --noEmit",
            "bunx jest",
            "node -e 'console.log(1)'",
        ] {
            read_only(cmd);
        }
        for cmd in [
            "python3 -c \"import os; os.remove('a.py')\"",
            "python3 -c 'from pathlib import Path; Path(\"a\").write_text(\"x\")'",
            "python3 -c '__import__(\"os\").remove(\"a.py\")'",
            "python3 -c \"getattr(print, 'x')\"",
            "python3 -c \"exec('op' + 'en(1)')\"",
            "python3 -c \"eval(compile('1', 'x', 'eval'))\"",
            "python3 -c 'print(f\"{open(1)}\")'",
            "python3 -c 'print(f\"{ \"x\" }{open(1)}\")'",
            "python3 -c 'print(rf\"{ \"#\" }\", open(1))'",
            "python3 -c 'print(().__class__)'",
            "python3 -c 'print(vars()[\"x\"])'",
            "python3 -c \"(x for x in []).gi_frame.f_builtins['op' + 'en']('a.py', 'w').write('x')\"",
            "python3 -c \"print('__main__')\"",
            "python3 -c '\u{ff4f}\u{ff50}\u{ff45}\u{ff4e}(\"a.py\", \"w\")'",
            "python3 -c \"$CODE\"",
            "python3 -c \"print($(cat x))\"",
            "python3 -i -c 'print(1)'",
            "python3 -c 'print(\"unterminated)'",
            "python3 -c",
            "python3 -X dev script.py",
            "npx prettier --write .",
            "npx tsc",
            "tsc -p tsconfig.json",
            "npx tsc --outDir dist",
            "tsc -b",
            "tsc --init",
            "tsc --noEmit false",
            "pnpm exec tsc --watch",
            "npx eslint --fix src",
            "npx some-unknown-tool",
            "npx",
            "npx -c \"$CMD\"",
            "pnpm exec prettier -w src",
        ] {
            unprovable(cmd);
        }
        // What they write through the shell is still seen.
        assert_eq!(targets("python3 -c 'print(1)' > out.py"), ["/repo/out.py"]);
        assert_eq!(targets("npx -c 'echo x > a.py'"), ["/repo/a.py"]);
        assert_eq!(targets("npx tsc --noEmit 2> tsc.log"), ["/repo/tsc.log"]);
    }

    /// Inline Python may import a few modules that write nothing and use
    /// them through listed attributes; everything else is refused, however
    /// it is spelled.
    #[test]
    fn inline_python_imports_are_read() {
        for cmd in [
            "python -c \"import json,sys; print(json.load(sys.stdin)['x'])\"",
            "python3 -c 'from os.path import join, exists; print(exists(join(\"a\", \"b\")))'",
            "python3 -c 'import re; print(re.findall(r\"\\d+\", \"a1b22\"))'",
            "python3 -c 'import math, itertools; print(math.sqrt(2), list(itertools.islice(itertools.count(), 3)))'",
            "python3 -c 'import os.path as p; print(p.basename(\"a/b\"))'",
            "python3 -c 'from collections import (Counter,\n    defaultdict,); print(Counter(\"aab\"), defaultdict(int))'",
            "python3 -c 'import sys\nif len(sys.argv) > 1: import json\nprint(\";import os\")'",
            "python3 -c 'import sys; sys.stdout.write(\"x\"); sys.exit(0)'",
            "python3 -c 'import json; print(f\"{json.dumps([1])}\")'",
            "cat package.json | python3 -c 'import json, sys; d = json.load(sys.stdin); print(d[\"version\"])'",
            "export LANG=C; python3 -c 'import json; print(json.dumps(1))'",
            "export PYTHONPATH=/tmp/evil; python3 -I -c 'import json; print(json.dumps(1))'",
            "python3 -W ignore -X utf8 -c 'import json; print(json.dumps(1))'",
        ] {
            read_only(cmd);
        }
        for cmd in [
            "python3 -c 'import os; print(1)'",
            "python3 -c 'import subprocess'",
            "python3 -c 'import json, os'",
            "python3 -c 'import importlib'",
            "python3 -c 'import os.path; print(os.path.sep)'",
            "python3 -c 'from os import path'",
            "python3 -c 'from json import *'",
            "python3 -c 'from sys import modules'",
            "python3 -c 'from . import x'",
            "python3 -c 'import json; print(json.decoder.re)'",
            "python3 -c 'import json as j; print(j.scanner)'",
            "python3 -c \"import sys; sys.modules['os'].remove('a.py')\"",
            "python3 -c 'import sys; m = sys; print(m.modules)'",
            "python3 -c 'import sys; print((sys).modules)'",
            "python3 -c 'import sys; sys.path.insert(0, \".\")'",
            "python3 -c 'import sys; print(f\"{sys.modules}\")'",
            "python3 -c 'import sys; type(sys.stdout.buffer.raw)(\"a.py\", \"w\")'",
            "python3 -c 'import json\\\nimport os'",
            "python3 -c 'x = [import os]'",
            "python3 -c 'if 1:import os'",
            "python3 -c 'import json;import\tos'",
            "PYTHONPATH=evil python3 -c 'import json'",
            "env PYTHONPATH=evil python3 -c 'print(1)'",
            "export PYTHONPATH=/tmp/evil; python3 -c 'import json'",
            "PYTHONPATH=/tmp/evil; export PYTHONPATH; python3 -c 'import json'",
            "declare -x LD_PRELOAD=/tmp/x.so && python3 -c 'print(1)'",
            "cd $D && python3 -c 'import json'",
            "mkdir /tmp/e && echo 'import os' > /tmp/e/json.py && cd /tmp/e && python3 -c 'import json'",
            "echo 'import os' > /tmp/e/json.py; cd /tmp/e; bash -c \"python3 -c 'import json'\"",
            "export PYTHONPATH=/tmp/e; sh -c \"python3 -c 'import json'\"",
            "PYTHONPATH=/tmp/e bash -c \"python3 -c 'import json'\"",
            "python3 -W 'ignore::evil.Warning' -c 'print(1)'",
            "python3 -X pycache_prefix=src -c 'import json'",
        ] {
            unprovable(cmd);
        }
        // A .pth file written first runs at Python's start, imports or not.
        let a = run("echo 'import os' > /usr/lib/python3/dist-packages/x.pth; python3 -c 'print(1)'");
        assert!(a.unprovable.iter().any(|u| u.contains("writes files before it")), "{a:?}");
        // Its own output is no earlier write.
        assert_eq!(targets("python3 -c 'import json; print(json.dumps(1))' > /tmp/out.json"), ["/tmp/out.json"]);
        // `python -c` imports from the current directory first.
        let dir = tempfile::tempdir().unwrap();
        let at = |cmd: &str| analyze(cmd, dir.path());
        assert!(at("python3 -c 'import json; print(json.dumps(1))'").unprovable.is_empty());
        std::fs::write(dir.path().join("re.py"), "import os\n").unwrap();
        let a = at("python3 -c 'import json; print(json.dumps(1))'");
        assert!(a.unprovable.iter().any(|u| u.contains("re.py")), "{a:?}");
        assert!(at("python3 -I -c 'import json; print(json.dumps(1))'").unprovable.is_empty());
        assert!(at("python3 -c 'print(1)'").unprovable.is_empty());
    }

    /// `node -e|-p` code passes when it reaches no file, process or code
    /// built from strings; every road there is refused.
    #[test]
    fn inline_node_is_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("package.json"), "{\"version\": \"1.0.0\"}").unwrap();
        std::fs::create_dir(dir.path().join("dir.json")).unwrap();
        std::fs::write(dir.path().join("evil.js"), "require('fs').writeFileSync('x', '')").unwrap();
        std::fs::write(dir.path().join("missing.json.js"), "require('fs').writeFileSync('x', '')").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(dir.path().join("evil.js"), dir.path().join("link.json")).unwrap();
        let at = |cmd: &str| analyze(cmd, dir.path());
        for cmd in [
            "node -e \"console.log(require('./package.json').version)\"",
            "node -p \"require('./package.json').version\"",
            "node -p 'require(\"path\").join(\"a\", \"b\")'",
            "node -e 'console.log(Object.keys({a: 1}), process.version, process.env.HOME, [1, 2][0], {[\"k\"]: 1})'",
            "node -e 'const v = `v${1 + 1}`; console.log(v, [\"a\"].map((x) => x.toUpperCase()))'",
            "node -e 'for (const [k, v] of Object.entries({a: 1})) console.log(k, v)' extra args",
            "node -e 'console.log(process.argv)' -- --require ./evil.js",
            "node -e 'console.log(process.argv)' x --require ./evil.js",
            "node -p 'crypto.randomUUID() + path.sep + util.format(\"%s\", 1)'",
        ] {
            let a = at(cmd);
            assert!(a.unprovable.is_empty() && a.targets.is_empty(), "{cmd}: {a:?}");
        }
        for cmd in [
            "node -e 'require(\"fs\").writeFileSync(\"a\", \"\")'",
            "node -e 'fs.writeFileSync(\"a\", \"\")'",
            "node -p 'child_process.execSync(\"touch a\")'",
            "node -e 'vm.runInThisContext(\"1\")'",
            "node -e 'v8.writeHeapSnapshot()'",
            "node -e 'const w = worker_threads; w'",
            "node -e 'console.log(crypto.randomUUID(), os.EOL)'",
            "node -e 'require(\"child_process\").execSync(\"rm a\")'",
            "node -e 'const m = \"fs\"; require(m)'",
            "node -e 'require.resolve(\"x\")'",
            "node -e \"require('./dir.json')\"",
            "node -e \"require('./missing.json')\"",
            "node -e \"require('./link.json')\"",
            "node -e \"require('lodash.json')\"",
            "node -e 'process.mainModule.require(\"fs\")'",
            "node -e 'process.binding(\"fs\")'",
            "node -e 'const p = process; p.exit()'",
            "node -e 'process[\"main\" + \"Module\"]'",
            "node -e 'process.getBuiltinModule(\"fs\")'",
            "node -e '[].constructor.constructor(\"return 1\")()'",
            "node -e '[][\"constr\" + \"uctor\"]'",
            "node -e '[][\"constructor\"]'",
            "node -e 'const k = \"x\"; console.log({a: 1}[k])'",
            "node -e 'const {constructor: F} = [].map'",
            "node -e 'const {[\"constr\" + \"uctor\"]: F} = [].map'",
            "node -e 'const {\"constructor\": F} = [].map'",
            "node -e 'globalThis.console.log(1)'",
            "node -e 'console.log(this)'",
            "node -e 'eval(\"1\")'",
            "node -e 'import(\"fs\")'",
            "node -e 'module.require(\"fs\")'",
            "node -e 'Reflect.get({}, \"a\")'",
            "node -e 'Object.getOwnPropertyDescriptor({}, \"a\")'",
            "node -e 'new Function(\"return 1\")()'",
            "node -e '\\u0065val(\"1\")'",
            "node -e 'console.log(1 / 2)'",
            "node -e '/x/.test(\"x\")'",
            "node -e '1 // comment'",
            "node -e 'console.log(`${require(\"fs\").rmSync(\"a\")}`)'",
            "node -e 'console.log(__dirname)'",
            "node -e 'Error.prepareStackTrace = (e, s) => s'",
            "node -e 'console.log(\"\u{e9}\", \u{e9})'",
            "NODE_OPTIONS='--require ./evil.js' node -e 'console.log(1)'",
            "export NODE_OPTIONS='--require ./evil.js'; node -e 'console.log(1)'",
            "ln -sf evil.js /tmp/x.json; node -e \"require('./package.json')\"",
            "node -r ./evil.js -e 'console.log(1)'",
            "node -e 'console.log(1)' --require ./evil.js",
            "node -e 'console.log(1)' $OPTS",
            "node --input-type=module -e 'console.log(1)'",
            "node -e \"$CODE\"",
            "node evil.js",
            "node -e",
            "perl -ne 'print if /x/' *.txt",
            "ruby -e 'puts 1'",
        ] {
            let a = at(cmd);
            assert!(!a.unprovable.is_empty(), "{cmd}: expected unprovable, got {a:?}");
        }
    }

    #[test]
    fn heredoc_substitutions_run() {
        let a = run("cat <<EOF\n$(touch made.txt)\nEOF");
        assert_eq!(a.targets.len(), 1, "{a:?}");
        assert!(a.targets[0].path.ends_with("made.txt"));
    }

    #[test]
    fn apply_patch_through_the_shell_writes_the_files_it_names() {
        let patch = "*** Begin Patch\n*** Update File: app/a.py\n@@\n-x = 1\n+x = 2\n*** Add File: app/new.py\n+y = 1\n\
                     *** Update File: app/old.py\n*** Move to: app/moved.py\n*** Delete File: gone.py\n*** End Patch";
        let all = ["/repo/app/a.py", "/repo/app/new.py", "/repo/app/old.py", "/repo/app/moved.py", "/repo/gone.py"];
        // What Codex's models run without the apply_patch tool.
        assert_eq!(targets(&format!("apply_patch <<'EOF'\n{patch}\nEOF\n")), all);
        assert_eq!(targets(&format!("cd app && apply_patch <<\"PATCH\"\n{patch}\nPATCH")), all.map(|p| p.replace("/repo/", "/repo/app/")));
        // A body without expansions reads the same unquoted.
        assert_eq!(targets(&format!("apply_patch <<EOF\n{patch}\nEOF")), all);
        assert_eq!(targets(&format!("apply_patch '{patch}'")), all);
        // Another command on the same line still counts, before or after.
        assert_eq!(targets(&format!("apply_patch <<'EOF' && echo ok > log.txt\n{patch}\nEOF"))[5], "/repo/log.txt");
        // What the gate cannot see is refused.
        unprovable("cat fix.patch | apply_patch");
        unprovable("apply_patch < fix.patch");
        unprovable("apply_patch <<< \"$PATCH\"");
        unprovable("apply_patch <<EOF\n*** Begin Patch\n*** Update File: $TARGET\n*** End Patch\nEOF");
        unprovable("apply_patch <<'EOF'\nnot a patch\nEOF");
        // The body of a here-document fed to another command is no patch.
        read_only(&format!("cat <<'EOF'\n{patch}\nEOF"));
    }

    /// Perl one-liners that only read pass; `-i` writes the files it names
    /// (and their backups); everything the gate cannot follow is refused.
    #[test]
    fn perl_one_liners_are_read() {
        for cmd in [
            "perl -ne 'print if /TODO/' src/a.py",
            "perl -lne 'print $1 if /foo(\\d+)/' a.txt",
            "perl -ne 'print \"$.: $_\" if /x$|y/' a.txt b.txt",
            "perl -pe 's/User/Person/g' app/models.py",
            "perl -pe 's{foo}{bar}gi; tr/a-z/A-Z/' a.txt",
            "perl -e 'print \"hello\\n\"'",
            "perl -lane 'print $F[1]' a.txt",
            "perl -F, -lane 'print $F[0] if $F[2] > 10' a.csv",
            "perl -0777 -ne 'print \"$1\\n\" while /class (\\w+)/g' a.py",
            "perl -nle 'print if /start/ .. /end/' a.txt",
            "perl -ne '$n++ if /x/; END { print $n + 0, \"\\n\" }' a.txt",
            "perl -lne '$c++ }{ print $c' a.txt",
            "perl -E 'say for 1..3'",
            "git log --oneline | perl -ne 'print unless /^#/'",
            "perl -ne 'print if $. <= 10 and not /^\\s*$/' a.txt",
            "perl -le 'print join(\",\", map { $_ * 2 } grep { $_ % 2 } 1..9)'",
            "perl -ne 'my @w = split /\\s+/; print scalar(@w), \"\\n\"' a.txt",
            "perl -lne 'print lc' a.txt",
            "perl -ne 'print for sort { $a <=> $b } <>' a.txt",
            "perl -pe '' a.txt",
            "perl -ne 'print grep { /x/ } @ARGV2' a.txt",
            "perl -le 'print for map { $_ * 2 } 1..3'",
            "perl -ne 'next LINE unless /x/; print' a.txt -",
            "perl -e 'print q(a b), qq{c $x d}, \"\\n\"'",
        ] {
            read_only(cmd);
        }
        assert_eq!(targets("perl -pi -e 's/User/Person/' app/models.py"), ["/repo/app/models.py"]);
        assert_eq!(targets("perl -pe 's/a/b/' -i a.py"), ["/repo/a.py"]);
        assert_eq!(targets("perl -i -ne 'print unless /debug/' a.py"), ["/repo/a.py"]);
        assert_eq!(targets("cd src && perl -i.bak -pe 's/a/b/' a.py b.py"), [
            "/repo/src/a.py",
            "/repo/src/a.py.bak",
            "/repo/src/b.py",
            "/repo/src/b.py.bak"
        ]);
        for cmd in [
            // Writes, commands and code the gate does not read.
            "perl -e 'unlink \"a.py\"'",
            "perl -e 'open(my $f, \">\", \"a.py\"); print $f 1'",
            "perl -e 'system(\"rm a.py\")'",
            "perl -e 'exec \"rm\", \"a.py\"'",
            "perl -e 'rename \"a.py\", \"b.py\"'",
            "perl -e 'print `rm a.py`'",
            "perl -e 'print qx(rm a.py)'",
            "perl -e 'eval q(unlink 1)'",
            "perl -e 'do \"evil.pl\"'",
            "perl -e 'require \"evil.pl\"'",
            "perl -e 'CORE::unlink(\"a.py\")'",
            "perl -e '&{\"CORE::unlink\"}(\"a.py\")'",
            "perl -e '$f = \"CORE::unlink\"; $f->(\"a.py\")'",
            "perl -e '*{\"main::x\"} = 1'",
            "perl -e 'my @s = sort $name 1, 2'",
            "perl -pe 's/x/unlink(q(a.py))/e' a.txt",
            "perl -pe 's/x/$y/ee' a.txt",
            "perl -ne 'print if /(?{ unlink q(a.py) })/' a.txt",
            "perl -e 'print \"@{[ unlink q(a.py) ]}\"'",
            "perl -e 'print \"${\\ unlink q(a.py)}\"'",
            "perl -e 'print \"$x[unlink q(a.py)]\"'",
            "perl -e 'print \"$ {\\ unlink q(a.py)}\"'",
            // In-place editing switched on from the code, or files named in it.
            "perl -pe 'BEGIN { $^I = q() }' a.py",
            "perl -e '@ARGV = (\"rm a.py|\"); print while <>'",
            "perl -e 'push @ARGV, \">a.py\"; print while <>'",
            "perl -e '$ARGV[0] = \">a.py\"; print while <>'",
            "perl -e '${\"ARGV\"}[0] = 1'",
            // `<>` opens its files with two-argument open.
            "perl -ne 'print' 'rm -rf src|'",
            "perl -ne 'print' '>a.py'",
            "perl -pe 1 ' >a.py'",
            "perl -ne 'print' *.py",
            "perl -ne 'print' \"$FILE\"",
            // Where Perl guesses, so could split the code otherwise.
            "perl -e 'print $fh /x/'",
            "perl -e \"do {1} /'/; unlink(1); /'/\"",
            "perl -e 'say /1;unlink(q(a.py));1/1'",
            "perl -e 'print 1 # a comment'",
            "perl -e 'print <*.py>'",
            "perl -e 'print <<EOF\nx\nEOF'",
            "perl -e 'print -s \"a.py\"'",
            "perl -e 'print q (a)'",
            // Options that load or run other code.
            "perl -MPOSIX -e 'print 1'",
            "perl -Ilib -e 'print 1'",
            "perl -d -e 1",
            "perl -x script.pl",
            "perl script.pl",
            "perl -F'/x/);unlink(q(a));(/' -ane 'print'",
            "perl -e \"print $x\"",
            "perl -e",
            "PERL5OPT=-Mevil perl -e 'print 1'",
            "export PERL5LIB=.; perl -e 'print 1'",
            "perl -i'orig/*' -pe 1 a.py",
        ] {
            unprovable(cmd);
        }
    }
}
