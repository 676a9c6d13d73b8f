//! Fluent call chains: the shape Laravel DSLs are written in.
//!
//! `TextInput::make('sku')->label('SKU')->maxLength(32)` parses as nested
//! member calls around a scoped call. [`Calls`] collects every call of a file
//! in one query and answers: which calls continue a chain (`modifiers`),
//! where a chain starts (`root`), and which enclosing call's arguments hold a
//! given call (`enclosing`), e.g. the `->columns([...])` a column sits in.

use std::collections::HashMap;

use code_intel_plugin_sdk::{Matches, PluginError, QueryMatch, Span, Tree};

/// Scoped, member and null-safe member calls (patterns 0, 1, 2).
pub(crate) const CALLS: &str = "
(scoped_call_expression scope: (_) @target name: (name) @name arguments: (arguments) @args) @call
(member_call_expression object: (_) @target name: (name) @name arguments: (arguments) @args) @call
(nullsafe_member_call_expression object: (_) @target name: (name) @name arguments: (arguments) @args) @call
";

/// `X::f()` or `$x->f()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallKind {
    Scoped,
    Member,
}

/// One call expression.
#[derive(Clone, Debug)]
pub struct Call {
    pub kind: CallKind,
    pub span: Span,
    /// Method name.
    pub name: String,
    /// Source of the scope (`TextInput`) or object (`$table`, or an inner call).
    pub target: String,
    pub target_span: Span,
    /// Source of the argument list, with its parentheses.
    pub args: String,
    pub args_span: Span,
}

/// Every call of a file, in document order.
pub struct Calls {
    pub calls: Vec<Call>,
    by_span: HashMap<(u32, u32), usize>,
    /// Span of a call used as an object -> the call using it (the next link).
    next: HashMap<(u32, u32), usize>,
}

fn key(span: Span) -> (u32, u32) {
    (span.start_byte, span.end_byte)
}

impl Calls {
    /// Collects the calls of `tree` (a `php` tree).
    ///
    /// # Errors
    /// A query bug.
    pub fn collect(tree: &Tree) -> Result<Self, PluginError> {
        Ok(Self::from_matches(tree.query(CALLS)?))
    }

    /// Builds from the matches of [`CALLS`] (run alone or as part of a
    /// larger query, patterns renumbered from 0).
    #[must_use]
    pub fn from_matches(matches: Vec<QueryMatch>) -> Self {
        let mut calls = Vec::new();
        for m in matches {
            let (Some(call), Some(target), Some(name), Some(args)) = (m.get("call"), m.get("target"), m.get("name"), m.get("args"))
            else {
                continue;
            };
            calls.push(Call {
                kind: if m.pattern == 0 { CallKind::Scoped } else { CallKind::Member },
                span: Span::of(call),
                name: name.text.clone(),
                target: target.text.clone(),
                target_span: Span::of(target),
                args: args.text.clone(),
                args_span: Span::of(args),
            });
        }
        calls.sort_by_key(|c| (c.span.start_byte, std::cmp::Reverse(c.span.end_byte)));
        let by_span = calls.iter().enumerate().map(|(i, c)| (key(c.span), i)).collect();
        let next = calls
            .iter()
            .enumerate()
            .filter(|(_, c)| c.kind == CallKind::Member)
            .map(|(i, c)| (key(c.target_span), i))
            .collect();
        Self { calls, by_span, next }
    }

    /// The call whose object is call `i`'s result (the next link of its chain).
    #[must_use]
    pub fn next_link(&self, i: usize) -> Option<usize> {
        self.next.get(&key(self.calls[i].span)).copied()
    }

    /// The calls chained onto call `i`, innermost first:
    /// for `X::make('a')->required()->label('A')`, given `make`, `[required, label]`.
    #[must_use]
    pub fn modifiers(&self, i: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut at = i;
        while let Some(n) = self.next_link(at) {
            out.push(n);
            at = n;
        }
        out
    }

    /// The call a member call is made on, when that object is itself a call.
    #[must_use]
    pub fn receiver(&self, i: usize) -> Option<usize> {
        let c = &self.calls[i];
        (c.kind == CallKind::Member).then(|| self.by_span.get(&key(c.target_span)).copied()).flatten()
    }

    /// The first call of call `i`'s chain.
    #[must_use]
    pub fn root(&self, i: usize) -> usize {
        let mut at = i;
        while let Some(r) = self.receiver(at) {
            at = r;
        }
        at
    }

    /// The whole chain's span: from its root to its last link.
    #[must_use]
    pub fn chain_span(&self, i: usize) -> Span {
        let root = self.root(i);
        let last = self.modifiers(root).last().copied().unwrap_or(root);
        self.calls[last].span
    }

    /// The innermost call whose argument list contains `span` and whose name
    /// is one of `names`.
    #[must_use]
    pub fn enclosing(&self, span: Span, names: &[&str]) -> Option<usize> {
        self.calls
            .iter()
            .enumerate()
            .filter(|(_, c)| c.args_span.contains(&span) && c.args_span != span && names.contains(&c.name.as_str()))
            .min_by_key(|(_, c)| c.args_span.end_byte - c.args_span.start_byte)
            .map(|(i, _)| i)
    }

    /// Indices of the calls lying within `span`.
    pub fn within(&self, span: Span) -> impl Iterator<Item = usize> + '_ {
        self.calls.iter().enumerate().filter(move |(_, c)| span.contains(&c.span)).map(|(i, _)| i)
    }
}
