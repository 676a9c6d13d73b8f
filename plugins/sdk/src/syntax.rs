//! Thin wrappers over the host's `syntax` import: parse once, query many times.

use crate::bindings::code_intel::plugin::syntax as host;
use crate::{Capture, PluginError, QueryMatch};

/// A source file parsed by the host. Dropping it frees the tree in the host.
pub struct Tree {
    inner: host::Tree,
    /// The file: [`Tree::matches`] and [`NodeRef::text`] slice text from it.
    source: String,
    /// Where the parsed text starts in `source` ([`parse_embedded`]).
    at: Origin,
}

/// The position of a parsed block's first byte in its file: what turns the
/// host's positions in the block into positions in the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Origin {
    byte: u32,
    /// Lines before the block's first line.
    lines: u32,
    /// Column of the block's first byte in its line.
    column: u32,
}

impl Origin {
    fn of(source: &str, start: usize) -> Self {
        let before = &source.as_bytes()[..start];
        let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        Self {
            byte: to_u32(start),
            lines: to_u32(before.iter().filter(|&&b| b == b'\n').count()),
            column: to_u32(start - line_start),
        }
    }

    /// Moves a node table's positions (`NODE_SLOTS` integers per node) into the file.
    fn shift_table(self, nodes: &mut [u32]) {
        if self == Self::default() {
            return;
        }
        for node in nodes.chunks_exact_mut(NODE_SLOTS) {
            node[START_BYTE] += self.byte;
            node[END_BYTE] += self.byte;
            node[START_LINE] += self.lines;
            node[END_LINE] += self.lines;
        }
    }

    /// Moves one position, given as the host reports it (1-based line,
    /// 0-based column), into the file: columns move on the block's first line only.
    fn shift(self, byte: &mut u32, line: &mut u32, column: &mut u32) {
        if *line == 1 {
            *column += self.column;
        }
        *byte += self.byte;
        *line += self.lines;
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Parses `source` with the host grammar named `language` (`python`, `php`, ...).
///
/// # Errors
/// When the host has no such grammar or gives up on the file; the error says
/// which, and converts into the [`PluginError`] the plugin returns.
///
/// ```no_run
/// # fn demo() -> Result<(), code_intel_plugin_sdk::PluginError> {
/// let tree = code_intel_plugin_sdk::parse("python", "def f():\n    pass\n")?;
/// assert_eq!(tree.root_kind(), "module");
/// # Ok(()) }
/// ```
pub fn parse(language: &str, source: &str) -> Result<Tree, PluginError> {
    Ok(Tree { inner: host::parse(language, source)?, source: source.to_string(), at: Origin::default() })
}

/// Parses only `source[block]` (a Vue `<script>`, a fenced block, a template
/// expression) with the host grammar `language`, and reports every position
/// in the whole file: byte offsets, lines and columns from [`Tree::nodes`],
/// [`Tree::matches`] and [`Tree::query`] are those of `source`, and node
/// text is sliced from it. The grammar sees the block alone, so a block that
/// starts mid-line parses exactly as it would at the start of a file.
///
/// Cheaper than parsing a copy of the file with everything outside the
/// block blanked: the host neither receives nor scans the rest of the file.
///
/// # Errors
/// As [`parse`]; also when `block` is out of bounds or does not start and
/// end on character boundaries (a plugin bug).
///
/// ```no_run
/// # fn demo() -> Result<(), code_intel_plugin_sdk::PluginError> {
/// let file = "<template><p/></template>\n<script>\nconst a = 1\n</script>\n";
/// let start = file.find("<script>").unwrap() + "<script>".len();
/// let end = file.find("</script>").unwrap();
/// let tree = code_intel_plugin_sdk::parse_embedded("javascript", file, start..end)?;
/// let nodes = tree.nodes(&["lexical_declaration"])?;
/// let declaration = nodes.iter().next().unwrap();
/// assert_eq!((declaration.start_line(), declaration.text()), (3, "const a = 1"));
/// # Ok(()) }
/// ```
pub fn parse_embedded(language: &str, source: &str, block: std::ops::Range<usize>) -> Result<Tree, PluginError> {
    let text = source.get(block.clone()).ok_or_else(|| {
        PluginError::new(format!(
            "plugin bug: block {}..{} is not within the file's {} bytes or splits a character",
            block.start,
            block.end,
            source.len()
        ))
    })?;
    let inner = host::parse(language, text)?;
    Ok(Tree { inner, source: source.to_string(), at: Origin::of(source, block.start) })
}

/// The grammar names the host can parse.
#[must_use]
pub fn languages() -> Vec<String> {
    host::languages()
}

impl Tree {
    /// Runs a tree-sitter query over the whole tree and returns every match in
    /// document order, with owned copies of every capture's name, kind and
    /// text (at most 64 KiB each). Predicates (`#eq?`, `#match?`, `#any-of?`)
    /// are applied by the host. [`Tree::matches`] returns the same matches
    /// without sending any strings per capture; prefer it.
    ///
    /// Each call walks the whole tree: put all the patterns a plugin needs in
    /// one query and tell the matches apart by capture name (or
    /// [`QueryMatch::pattern`]) rather than calling this once per pattern.
    ///
    /// # Errors
    /// When the query does not compile for the grammar (a plugin bug: the
    /// message carries tree-sitter's row and column).
    ///
    /// ```no_run
    /// # fn demo(tree: &code_intel_plugin_sdk::Tree) -> Result<(), code_intel_plugin_sdk::PluginError> {
    /// use code_intel_plugin_sdk::Matches;
    /// for m in tree.query("(class_definition name: (identifier) @name) @class")? {
    ///     let name = m.text("name").unwrap_or_default();
    ///     let class = m.get("class").expect("every match has @class");
    ///     let _ = (name, class.start_line);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn query(&self, query: &str) -> Result<Vec<QueryMatch>, PluginError> {
        let mut matches = self.inner.query(query)?;
        if self.at != Origin::default() {
            for capture in matches.iter_mut().flat_map(|m| &mut m.captures) {
                self.at.shift(&mut capture.start_byte, &mut capture.start_line, &mut capture.start_column);
                self.at.shift(&mut capture.end_byte, &mut capture.end_line, &mut capture.end_column);
            }
        }
        Ok(matches)
    }

    /// Runs a tree-sitter query like [`Tree::query`], but only byte and line
    /// ranges cross from the host: each capture's text is sliced from the
    /// source this tree was parsed from, and names and kinds borrow from
    /// tables sent once. Cheaper than [`Tree::query`], the more so the more
    /// a query matches, and never limited by capture text size.
    ///
    /// # Errors
    /// As [`Tree::query`].
    ///
    /// ```no_run
    /// # fn demo(tree: &code_intel_plugin_sdk::Tree) -> Result<(), code_intel_plugin_sdk::PluginError> {
    /// for m in &tree.matches("(class_definition name: (identifier) @name) @class")? {
    ///     let name: &str = m.text("name").unwrap_or_default();
    ///     let class = m.get("class").expect("every match has @class");
    ///     let _ = (name, class.kind, class.start_line);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn matches(&self, query: &str) -> Result<MatchSet<'_>, PluginError> {
        let mut found = self.inner.query_spans(query)?;
        if self.at != Origin::default() {
            for c in &mut found.captures {
                self.at.shift(&mut c.start_byte, &mut c.start_line, &mut c.start_column);
                self.at.shift(&mut c.end_byte, &mut c.end_line, &mut c.end_column);
            }
        }
        Ok(MatchSet { found, source: &self.source })
    }

    /// The source the tree was parsed from (for [`parse_embedded`], the
    /// whole file).
    #[must_use]
    pub fn source(&self) -> &str {
        &self.source
    }

    /// All captures named `name` across every match of `query`, in document
    /// order: the common case of a one-capture query.
    ///
    /// # Errors
    /// As [`Tree::query`].
    pub fn captures(&self, query: &str, name: &str) -> Result<Vec<Capture>, PluginError> {
        Ok(self
            .query(query)?
            .into_iter()
            .flat_map(|m| m.captures.into_iter().filter(|c| c.name == name))
            .collect())
    }

    /// True when the file has syntax errors (the tree is still usable).
    #[must_use]
    pub fn has_errors(&self) -> bool {
        self.inner.has_errors()
    }

    /// Kind of the root node, e.g. `module` or `program`.
    #[must_use]
    pub fn root_kind(&self) -> String {
        self.inner.root_kind()
    }
}

/// Looking up captures of a match by name.
pub trait Matches {
    /// The first capture named `name`.
    fn get(&self, name: &str) -> Option<&Capture>;
    /// Every capture named `name` (quantified captures like `(decorator)* @d`).
    fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Capture> + 'a;
    /// The text of the first capture named `name`.
    fn text(&self, name: &str) -> Option<&str> {
        self.get(name).map(|c| c.text.as_str())
    }
}

impl Matches for QueryMatch {
    fn get(&self, name: &str) -> Option<&Capture> {
        self.captures.iter().find(|c| c.name == name)
    }

    fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Capture> + 'a {
        self.captures.iter().filter(move |c| c.name == name)
    }
}

/// Every match of one query, from [`Tree::matches`]. Iterate it (`for m in
/// &set`) for [`Match`]es in document order.
pub struct MatchSet<'t> {
    found: host::SpanMatches,
    source: &'t str,
}

impl<'t> MatchSet<'t> {
    /// Number of matches.
    #[must_use]
    pub fn len(&self) -> usize {
        self.found.matches.len()
    }

    /// True when the query matched nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.found.matches.is_empty()
    }

    /// The matches in document order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Match<'_>> + '_ {
        self.found.matches.iter().map(move |m| Match {
            pattern: m.pattern,
            captures: self.found.captures.get(m.first as usize..(m.first + m.count) as usize).unwrap_or_default(),
            set: self,
        })
    }

    /// Every capture named `name` across all matches, in document order.
    pub fn captures<'a>(&'a self, name: &'a str) -> impl Iterator<Item = Node<'a>> + 'a {
        let index = self.name_index(name);
        self.found.captures.iter().filter(move |c| Some(c.name) == index).map(move |c| self.node(c))
    }

    fn name_index(&self, name: &str) -> Option<u32> {
        self.found.capture_names.iter().position(|n| n == name).and_then(|i| u32::try_from(i).ok())
    }

    fn name_of(&self, c: &host::NodeSpan) -> &str {
        self.found.capture_names.get(c.name as usize).map_or("", String::as_str)
    }

    fn node(&self, c: &host::NodeSpan) -> Node<'_> {
        Node {
            name: self.name_of(c),
            kind: self.found.kinds.get(c.kind as usize).map_or("", String::as_str),
            text: self.source.get(c.start_byte as usize..c.end_byte as usize).unwrap_or_default(),
            start_byte: c.start_byte,
            end_byte: c.end_byte,
            start_line: c.start_line,
            end_line: c.end_line,
            start_column: c.start_column,
            end_column: c.end_column,
        }
    }
}

impl<'a> IntoIterator for &'a MatchSet<'_> {
    type Item = Match<'a>;
    type IntoIter = Box<dyn ExactSizeIterator<Item = Match<'a>> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

/// One match of a [`MatchSet`]: the pattern that matched and its captures.
#[derive(Clone, Copy)]
pub struct Match<'a> {
    /// Index of the pattern within the query, 0-based.
    pub pattern: u32,
    captures: &'a [host::NodeSpan],
    set: &'a MatchSet<'a>,
}

impl<'a> Match<'a> {
    /// The first capture named `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<Node<'a>> {
        // A match has a few captures and a query dozens of names: compare
        // the names of this match's captures rather than search the table.
        self.captures.iter().find(|c| self.set.name_of(c) == name).map(|c| self.set.node(c))
    }

    /// Every capture named `name` (quantified captures like `(decorator)* @d`).
    pub fn all(&self, name: &str) -> impl Iterator<Item = Node<'a>> + 'a {
        let index = self.set.name_index(name);
        let set = self.set;
        self.captures.iter().filter(move |c| Some(c.name) == index).map(move |c| set.node(c))
    }

    /// The text of the first capture named `name`.
    #[must_use]
    pub fn text(&self, name: &str) -> Option<&'a str> {
        self.get(name).map(|n| n.text)
    }

    /// All captures of the match, in document order.
    pub fn captures(&self) -> impl ExactSizeIterator<Item = Node<'a>> + 'a {
        let set = self.set;
        self.captures.iter().map(move |c| set.node(c))
    }
}

/// A captured node of a [`Match`]: a [`Capture`] whose strings borrow from
/// the query's tables and the parsed source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node<'a> {
    /// Capture name as written in the query, without the leading `@`.
    pub name: &'a str,
    /// The node's grammar kind, e.g. `function_definition`.
    pub kind: &'a str,
    /// The node's source text.
    pub text: &'a str,
    /// Byte range in the source, start inclusive, end exclusive.
    pub start_byte: u32,
    pub end_byte: u32,
    /// 1-based line numbers of the node's first and last byte.
    pub start_line: u32,
    pub end_line: u32,
    /// 0-based byte columns within those lines.
    pub start_column: u32,
    pub end_column: u32,
}

impl Tree {
    /// The tree's named nodes in document order (a node before its
    /// descendants): all of them when `kinds` is empty, else those of the
    /// listed kinds, each linked to its nearest listed ancestor. One walk of
    /// the tree with no pattern matching, which costs about a tenth of the
    /// parse (a fifth of a query); the plugin then finds the structure it needs with
    /// [`NodeRef::child`], [`NodeRef::children`], [`NodeRef::parent`] and
    /// [`NodeRef::descendants`]. Prefer it to [`Tree::matches`] when a
    /// plugin looks at most of the file anyway (definitions, their names and
    /// bodies, identifier uses); list the kinds it looks at to keep the
    /// table small.
    ///
    /// # Errors
    /// When a kind is not a named node kind of the grammar (a plugin bug:
    /// the message names it and close kinds), or the walk runs out of time.
    ///
    /// ```no_run
    /// # fn demo(tree: &code_intel_plugin_sdk::Tree) -> Result<(), code_intel_plugin_sdk::PluginError> {
    /// let nodes = tree.nodes(&["function_definition", "identifier"])?;
    /// for def in nodes.of_kind("function_definition") {
    ///     let name = def.child("name").map(|n| n.text()).unwrap_or_default();
    ///     let _ = (name, def.start_line());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn nodes(&self, kinds: &[&str]) -> Result<NodeTable<'_>, PluginError> {
        let kinds: Vec<String> = kinds.iter().map(|k| (*k).to_string()).collect();
        let mut table = self.inner.nodes(&kinds)?;
        self.at.shift_table(&mut table.nodes);
        Ok(NodeTable { table, source: &self.source })
    }
}

/// The parent of a node without an ancestor in the table.
const NO_PARENT: u32 = u32::MAX;

/// Integers per node in the WIT `node-table` and what each holds.
const NODE_SLOTS: usize = 8;
const KIND: usize = 0;
const FIELD: usize = 1;
const PARENT: usize = 2;
const END: usize = 3;
const START_BYTE: usize = 4;
const END_BYTE: usize = 5;
const START_LINE: usize = 6;
const END_LINE: usize = 7;

/// A kind as an index into one [`NodeTable`]'s kinds, for comparing kinds
/// in hot loops without comparing strings ([`NodeTable::kind_id`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KindId(u32);

impl KindId {
    /// The id as a number, below [`NodeTable::kind_count`]: for tables
    /// indexed by kind (a node's role in the plugin as one lookup).
    #[must_use]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A field name as an index into one [`NodeTable`]'s fields
/// ([`NodeTable::field_id`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FieldId(u32);

/// The named nodes of a tree, from [`Tree::nodes`].
pub struct NodeTable<'t> {
    table: host::NodeTable,
    source: &'t str,
}

impl<'t> NodeTable<'t> {
    /// Number of nodes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.table.nodes.len() / NODE_SLOTS
    }

    /// True when the table has no node (no node of the asked kinds).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.table.nodes.is_empty()
    }

    /// The node at `index` (indices run in document order).
    #[must_use]
    pub fn get(&self, index: usize) -> Option<NodeRef<'_>> {
        (index < self.len()).then(|| NodeRef { nodes: self, index: index as u32 })
    }

    /// Every node in document order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = NodeRef<'_>> + '_ {
        (0..self.len() as u32).map(move |index| NodeRef { nodes: self, index })
    }

    /// The nodes without an ancestor in the table (the root, when it is in it).
    pub fn roots(&self) -> impl Iterator<Item = NodeRef<'_>> + '_ {
        Siblings { nodes: self, next: 0, end: self.len() as u32 }
    }

    /// Every node of `kind`, in document order.
    pub fn of_kind<'a>(&'a self, kind: &str) -> impl Iterator<Item = NodeRef<'a>> + 'a {
        let id = self.kind_id(kind);
        self.iter().filter(move |n| Some(n.kind_id()) == id)
    }

    /// Number of distinct kinds in the table (every [`KindId::index`] is below it).
    #[must_use]
    pub fn kind_count(&self) -> usize {
        self.table.kinds.len()
    }

    /// The id of `kind` in this table; `None` when no node has that kind.
    #[must_use]
    pub fn kind_id(&self, kind: &str) -> Option<KindId> {
        self.table.kinds.iter().position(|k| k == kind).map(|i| KindId(i as u32))
    }

    /// The id of the field `name`; `None` when no node of the table fills
    /// it (the grammar may still have it).
    #[must_use]
    pub fn field_id(&self, name: &str) -> Option<FieldId> {
        self.table.fields.iter().skip(1).position(|f| f == name).map(|i| FieldId(i as u32 + 1))
    }

    /// The source the tree was parsed from.
    #[must_use]
    pub fn source(&self) -> &'t str {
        self.source
    }

    /// Field `slot` of node `index` (the layout of the WIT `node-table`).
    #[inline]
    fn slot(&self, index: u32, slot: usize) -> u32 {
        self.table.nodes[index as usize * NODE_SLOTS + slot]
    }
}

/// One node of a [`NodeTable`]: a cheap handle (a table reference and an
/// index) to ask for its kind, text, position and relatives.
#[derive(Clone, Copy)]
pub struct NodeRef<'a> {
    nodes: &'a NodeTable<'a>,
    index: u32,
}

impl PartialEq for NodeRef<'_> {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.nodes, other.nodes) && self.index == other.index
    }
}

impl Eq for NodeRef<'_> {}

impl std::fmt::Debug for NodeRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}#{}@{}..{}", self.kind(), self.index, self.start_byte(), self.end_byte())
    }
}

impl<'a> NodeRef<'a> {
    /// Index in the table (document order).
    #[inline]
    #[must_use]
    pub fn index(self) -> usize {
        self.index as usize
    }

    /// The grammar kind, e.g. `function_definition`.
    #[inline]
    #[must_use]
    pub fn kind(self) -> &'a str {
        self.nodes.table.kinds.get(self.slot(KIND) as usize).map_or("", String::as_str)
    }

    /// The kind as an id of this table, see [`NodeTable::kind_id`].
    #[inline]
    #[must_use]
    pub fn kind_id(self) -> KindId {
        KindId(self.slot(KIND))
    }

    /// The field this node fills in its syntax-tree parent (`name`, `body`,
    /// ...), empty when none.
    #[inline]
    #[must_use]
    pub fn field(self) -> &'a str {
        self.nodes.table.fields.get(self.slot(FIELD) as usize).map_or("", String::as_str)
    }

    /// The field as an id, see [`NodeTable::field_id`]; `None` when none.
    #[inline]
    #[must_use]
    pub fn field_id(self) -> Option<FieldId> {
        let field = self.slot(FIELD);
        (field != 0).then_some(FieldId(field))
    }

    /// The node's source text.
    #[inline]
    #[must_use]
    pub fn text(self) -> &'a str {
        self.nodes.source.get(self.start_byte() as usize..self.end_byte() as usize).unwrap_or_default()
    }

    /// Byte offset of the first byte.
    #[inline]
    #[must_use]
    pub fn start_byte(self) -> u32 {
        self.slot(START_BYTE)
    }

    /// Byte offset just past the last byte.
    #[inline]
    #[must_use]
    pub fn end_byte(self) -> u32 {
        self.slot(END_BYTE)
    }

    /// 1-based line of the first byte.
    #[inline]
    #[must_use]
    pub fn start_line(self) -> u32 {
        self.slot(START_LINE)
    }

    /// 1-based line of the last byte.
    #[inline]
    #[must_use]
    pub fn end_line(self) -> u32 {
        self.slot(END_LINE)
    }

    /// The nearest ancestor in the table.
    #[inline]
    #[must_use]
    pub fn parent(self) -> Option<Self> {
        let parent = self.slot(PARENT);
        (parent != NO_PARENT).then(|| Self { nodes: self.nodes, index: parent })
    }

    /// Ancestors in the table, nearest first.
    pub fn ancestors(self) -> impl Iterator<Item = Self> + 'a {
        std::iter::successors(self.parent(), |n| n.parent())
    }

    /// Children in the table, in document order.
    pub fn children(self) -> impl Iterator<Item = Self> + 'a {
        Siblings { nodes: self.nodes, next: self.index + 1, end: self.slot(END) }
    }

    /// Descendants in the table, in document order.
    pub fn descendants(self) -> impl ExactSizeIterator<Item = Self> + 'a {
        let nodes = self.nodes;
        (self.index + 1..self.slot(END)).map(move |index| Self { nodes, index })
    }

    /// The first child filling field `name` (`def.child("name")`).
    #[must_use]
    pub fn child(self, name: &str) -> Option<Self> {
        self.children().find(|c| c.field() == name)
    }

    /// The first child filling field `field`; the fast form of [`NodeRef::child`].
    #[must_use]
    pub fn child_by(self, field: FieldId) -> Option<Self> {
        self.children().find(|c| c.slot(FIELD) == field.0)
    }

    /// The first child of `kind`.
    #[must_use]
    pub fn child_of_kind(self, kind: &str) -> Option<Self> {
        self.children().find(|c| c.kind() == kind)
    }

    /// True when the node has kind `kind` (see [`NodeTable::kind_id`]).
    #[inline]
    #[must_use]
    pub fn is(self, kind: Option<KindId>) -> bool {
        kind == Some(self.kind_id())
    }

    #[inline]
    fn slot(self, slot: usize) -> u32 {
        self.nodes.slot(self.index, slot)
    }
}

impl From<NodeRef<'_>> for crate::Span {
    fn from(n: NodeRef<'_>) -> Self {
        Self { start_byte: n.start_byte(), end_byte: n.end_byte(), start_line: n.start_line(), end_line: n.end_line() }
    }
}

/// Children of one node (or the roots of a table): each next sibling is the
/// node just past the previous one's subtree.
struct Siblings<'a> {
    nodes: &'a NodeTable<'a>,
    next: u32,
    end: u32,
}

impl<'a> Iterator for Siblings<'a> {
    type Item = NodeRef<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.end {
            return None;
        }
        let node = NodeRef { nodes: self.nodes, index: self.next };
        self.next = node.slot(END);
        Some(node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_origin_counts_lines_and_the_column_of_its_first_byte() {
        let file = "<template>\n  <p>é</p>\n</template>\n<script>const a = 1</script>\n";
        let start = file.find("const").unwrap();
        assert_eq!(Origin::of(file, start), Origin { byte: start as u32, lines: 3, column: 8 });
        assert_eq!(Origin::of(file, 0), Origin::default());
        assert_eq!(Origin::of("a\n", 2), Origin { byte: 2, lines: 1, column: 0 });
    }

    #[test]
    fn positions_move_into_the_file() {
        let at = Origin { byte: 100, lines: 3, column: 8 };
        // On the block's first line the column moves too; on later lines only bytes and lines.
        let (mut byte, mut line, mut column) = (5, 1, 5);
        at.shift(&mut byte, &mut line, &mut column);
        assert_eq!((byte, line, column), (105, 4, 13));
        let (mut byte, mut line, mut column) = (40, 2, 3);
        at.shift(&mut byte, &mut line, &mut column);
        assert_eq!((byte, line, column), (140, 5, 3));

        let mut table = vec![7, 0, NO_PARENT, 1, 0, 20, 1, 2, 9, 1, 0, 2, 6, 9, 2, 2];
        at.shift_table(&mut table);
        assert_eq!(table, vec![7, 0, NO_PARENT, 1, 100, 120, 4, 5, 9, 1, 0, 2, 106, 109, 5, 5]);
    }

    #[test]
    fn a_whole_file_keeps_the_hosts_positions() {
        let mut table = vec![1, 0, NO_PARENT, 1, 0, 20, 1, 2];
        Origin::default().shift_table(&mut table);
        assert_eq!(table, vec![1, 0, NO_PARENT, 1, 0, 20, 1, 2]);
    }
}
