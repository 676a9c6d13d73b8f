//! The node table's walk: one pass over tree-sitter's subtrees in C
//! (`named_nodes.c`), for about a third of what a tree cursor costs.
//!
//! The C walk reads tree-sitter internals. What keeps it honest is the
//! tests below: on every bundled grammar, over fixtures, benchmark-shaped
//! files, broken syntax and aliases, its table must equal the table of a
//! plain tree-cursor walk, node for node.

// The only unsafe code of the crate: the call into the C walk and the
// buffers it fills.
#![allow(unsafe_code)]

use std::ffi::{c_int, c_void};
use std::time::Instant;

use tree_sitter::{Language, Tree};

use super::TreeNode;

/// What the walk found: the rows, and the grammar's kind and field ids in
/// the order the rows' `kind` and `field` indices number them (fields start
/// at index 1; 0 is "no field").
pub(super) struct Walked {
    pub nodes: Vec<TreeNode>,
    pub kind_ids: Vec<u16>,
    pub field_ids: Vec<u16>,
}

/// Why the walk stopped early.
pub(super) enum WalkError {
    /// The table would hold more than `max_nodes` rows.
    Full,
    /// `deadline` passed.
    Expired,
    /// The walk's stack could not grow.
    NoMemory,
}

/// Mirrors `CiWalk` in `named_nodes.c`.
#[repr(C)]
struct CiWalk {
    kept: *const bool,
    kept_len: u32,
    kind_index: *mut u32,
    kinds_seen: *mut u16,
    kinds_seen_len: u32,
    field_index: *mut u32,
    fields_seen: *mut u16,
    fields_seen_len: u32,
    field_index_len: u32,
    nodes: *mut TreeNode,
    capacity: u32,
    count: u32,
    expired: extern "C" fn(*mut c_void) -> bool,
    context: *mut c_void,
}

const CI_WALK_DONE: c_int = 0;
const CI_WALK_FULL: c_int = 1;
const CI_WALK_EXPIRED: c_int = 2;

unsafe extern "C" {
    fn code_intel_named_nodes(root: tree_sitter::ffi::TSNode, walk: *mut CiWalk) -> c_int;
}

extern "C" fn deadline_passed(context: *mut c_void) -> bool {
    // SAFETY: `walk` passes a pointer to an `Instant` that outlives the call.
    let deadline = unsafe { &*context.cast::<Instant>() };
    Instant::now() >= *deadline
}

/// Walks `tree` and keeps the named nodes whose kind id `kept` marks.
pub(super) fn walk(tree: &Tree, kept: &[bool], deadline: Instant, max_nodes: usize) -> Result<Walked, WalkError> {
    // Tree-sitter's count of visible nodes bounds the table. Should it ever
    // fall short (it skips an aliased end-of-input token, which the cursor
    // would show), the walk runs again with room for `max_nodes`.
    walk_sized(tree, kept, deadline, max_nodes, tree.root_node().descendant_count())
}

/// [`walk`] with a first table of `first_capacity` rows.
fn walk_sized(tree: &Tree, kept: &[bool], deadline: Instant, max_nodes: usize, first_capacity: usize) -> Result<Walked, WalkError> {
    let first = first_capacity.min(max_nodes);
    match walk_with_capacity(tree, kept, deadline, first) {
        Err(WalkError::Full) if first < max_nodes => walk_with_capacity(tree, kept, deadline, max_nodes),
        walked => walked,
    }
}

/// One walk into a table of at most `capacity` rows (`Full` past it).
fn walk_with_capacity(tree: &Tree, kept: &[bool], deadline: Instant, capacity: usize) -> Result<Walked, WalkError> {
    let grammar: Language = tree.language().to_owned();
    let root = tree.root_node();
    let mut nodes: Vec<TreeNode> = Vec::with_capacity(capacity);
    let mut kind_index = vec![u32::MAX; kept.len()];
    let mut kinds_seen = vec![0u16; kept.len()];
    let field_slots = grammar.field_count() + 1;
    let mut field_index = vec![0u32; field_slots];
    let mut fields_seen = vec![0u16; field_slots];
    let mut deadline = deadline;
    let mut state = CiWalk {
        kept: kept.as_ptr(),
        kept_len: to_u32(kept.len()),
        kind_index: kind_index.as_mut_ptr(),
        kinds_seen: kinds_seen.as_mut_ptr(),
        kinds_seen_len: 0,
        field_index: field_index.as_mut_ptr(),
        fields_seen: fields_seen.as_mut_ptr(),
        fields_seen_len: 1,
        field_index_len: to_u32(field_slots),
        nodes: nodes.as_mut_ptr(),
        capacity: to_u32(capacity),
        count: 0,
        expired: deadline_passed,
        context: (&raw mut deadline).cast::<c_void>(),
    };
    // SAFETY: every pointer in `state` points into a live buffer of the
    // length given beside it (`kinds_seen` holds one id per kind id, each
    // seen at most once; `fields_seen` likewise), `root` belongs to `tree`,
    // which outlives the call, and the walk writes at most `capacity` rows.
    let status = unsafe { code_intel_named_nodes(root.into_raw(), &raw mut state) };
    let count = state.count as usize;
    // SAFETY: the walk initialised rows `0..count`, `count <= capacity`.
    unsafe { nodes.set_len(count.min(capacity)) };
    match status {
        CI_WALK_DONE => {
            kinds_seen.truncate(state.kinds_seen_len as usize);
            fields_seen.truncate(state.fields_seen_len as usize);
            Ok(Walked { nodes, kind_ids: kinds_seen, field_ids: fields_seen })
        }
        CI_WALK_FULL => Err(WalkError::Full),
        CI_WALK_EXPIRED => Err(WalkError::Expired),
        _ => Err(WalkError::NoMemory),
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::super::{KindTable, NO_PARENT, NodeTable, TreeNode, parse, position};

    /// The node table as a tree cursor walk builds it: the reference the
    /// C walk must reproduce.
    fn cursor_table(tree: &tree_sitter::Tree) -> NodeTable {
        let grammar = tree.language();
        let mut out = NodeTable::default();
        let mut kinds = KindTable::default();
        let mut fields: Vec<String> = vec![String::new()];
        let mut path: Vec<Option<u32>> = Vec::new();
        let mut parent = NO_PARENT;
        let mut cursor = tree.walk();
        'walk: loop {
            let node = cursor.node();
            let id = node.kind_id();
            if usize::from(id) < grammar.node_kind_count() && grammar.node_kind_is_named(id) {
                let p = position(&node);
                let index = u32::try_from(out.nodes.len()).unwrap();
                let field = cursor.field_name().map_or(0, |name| {
                    let at = fields.iter().position(|f| f == name).unwrap_or_else(|| {
                        fields.push(name.to_string());
                        fields.len() - 1
                    });
                    u32::try_from(at).unwrap()
                });
                out.nodes.push(TreeNode {
                    kind: kinds.index_of(&node),
                    field,
                    parent,
                    end: 0,
                    start_byte: p.start_byte,
                    end_byte: p.end_byte,
                    start_line: p.start_line,
                    end_line: p.end_line,
                });
                path.push(Some(index));
                parent = index;
            } else {
                path.push(None);
            }
            if cursor.goto_first_child() {
                continue;
            }
            loop {
                if let Some(Some(index)) = path.pop() {
                    let end = u32::try_from(out.nodes.len()).unwrap();
                    let closed = &mut out.nodes[index as usize];
                    closed.end = end;
                    parent = closed.parent;
                }
                if cursor.goto_next_sibling() {
                    continue 'walk;
                }
                if !cursor.goto_parent() {
                    break 'walk;
                }
            }
        }
        out.kinds = kinds.names;
        out.fields = fields;
        out
    }

    fn assert_same_table(language: &str, name: &str, source: &str) {
        let tree = parse(language, source).unwrap();
        let expected = cursor_table(&tree.tree);
        let actual = tree.named_nodes(&[]).unwrap();
        assert_eq!(actual.kinds, expected.kinds, "{language} {name}: kinds");
        assert_eq!(actual.fields, expected.fields, "{language} {name}: fields");
        assert_eq!(actual.nodes.len(), expected.nodes.len(), "{language} {name}: node count");
        for (i, (a, e)) in actual.nodes.iter().zip(&expected.nodes).enumerate() {
            assert_eq!(a, e, "{language} {name}: node {i} ({})", expected.kinds[e.kind as usize]);
        }
    }

    /// Every fixture of the repository in a language the host parses.
    fn fixture_sources() -> Vec<(&'static str, String, String)> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../fixtures");
        let by_extension = [
            ("py", "python"),
            ("php", "php"),
            ("js", "javascript"),
            ("jsx", "javascript"),
            ("ts", "typescript"),
            ("tsx", "tsx"),
            ("go", "go"),
            ("java", "java"),
            ("html", "html"),
            ("vue", "html"),
            ("css", "css"),
            ("scss", "scss"),
        ];
        let mut found = Vec::new();
        let mut dirs = vec![root];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                let ext = path.extension().and_then(|e| e.to_str()).unwrap_or_default();
                let Some((_, language)) = by_extension.iter().find(|(e, _)| *e == ext) else { continue };
                if let Ok(text) = std::fs::read_to_string(&path) {
                    found.push((*language, path.display().to_string(), text));
                }
            }
        }
        found
    }

    #[test]
    fn the_walk_builds_the_cursor_walks_table_on_every_fixture() {
        let sources = fixture_sources();
        let languages: std::collections::BTreeSet<&str> = sources.iter().map(|(l, _, _)| *l).collect();
        assert!(languages.len() >= 8, "fixtures in too few languages: {languages:?}");
        for (language, name, text) in &sources {
            assert_same_table(language, name, text);
        }
    }

    #[test]
    fn the_walk_builds_the_cursor_walks_table_on_broken_and_unusual_code() {
        let cases: &[(&str, &str)] = &[
            ("python", "def f(:\n    return )\nclass\n"),
            ("python", "x = 1 # comment\n@dec\n# between\ndef g(a, *b, **c) -> int:\n    '''doc'''\n    return [i for i in b if i]\n"),
            ("python", ""),
            ("python", "\n\n\n"),
            ("php", "<?php\nclass A { public function __construct(private B $b) {} }\n?>\n<div><?= $x ?></div>\n"),
            ("php", "<?php function ( { \n"),
            ("javascript", "const A = () => <div a={1}>{b}</div>;\nexport default class extends B { #p = 1; static { x; } }\n"),
            ("typescript", "enum E { A = 1 }\ntype T<U> = U extends string ? 'a' : never;\nabstract class C implements I { abstract m(): void; }\n"),
            ("tsx", "export function App(): JSX.Element { return <A b={c as D} />; }\n"),
            ("go", "package p\nfunc (r *R) M[T any](x T) (int, error) { return 0, nil }\ntype I interface{ M() }\n"),
            ("java", "@A record R(int x) { R { } }\nenum E { A { void m() {} } }\n"),
            ("html", "<!DOCTYPE html><p>unclosed <b>bold<script>let x = 1;</script><style>a{}</style>\n"),
            ("css", "@media (max-width: 1px) { a > b:hover { color: red !important } }\n@keyframes k { from { x: 1 } }\n"),
            ("scss", "$x: 1;\n@mixin m($a) { .b { &:hover { c: $a } } }\n.d { @include m(2); }\n"),
            ("php_only", "class A { use T; public function b(): ?C { return $this->c ?? null; } }\n"),
        ];
        for (language, source) in cases {
            assert_same_table(language, source, source);
        }
        let deep = format!("x = {}{}\n", "[".repeat(10_000), "]".repeat(10_000));
        assert_same_table("python", "10,000 nested lists", &deep);
    }

    #[test]
    fn a_table_larger_than_its_first_estimate_is_walked_again_and_one_over_the_limit_is_refused() {
        let src = "class A:\n    def run(self):\n        return [1, 2, 3]\n";
        let tree = parse("python", src).unwrap();
        let kept: Vec<bool> = (0..tree.tree.language().node_kind_count())
            .map(|id| tree.tree.language().node_kind_is_named(u16::try_from(id).unwrap()))
            .collect();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let expected = tree.named_nodes(&[]).unwrap().nodes;
        let Ok(walked) = super::walk_sized(&tree.tree, &kept, deadline, 1000, 2) else { panic!("walk failed") };
        assert_eq!(walked.nodes, expected);
        let limit = expected.len() - 1;
        assert!(matches!(super::walk(&tree.tree, &kept, deadline, limit), Err(super::WalkError::Full)));
        let Ok(exact) = super::walk(&tree.tree, &kept, deadline, expected.len()) else { panic!("walk failed") };
        assert_eq!(exact.nodes.len(), expected.len());
    }

    #[test]
    fn a_walk_past_its_deadline_stops_with_a_message() {
        let src = "x = [1, 2, 3]\n".repeat(2_000);
        let tree = parse("python", &src).unwrap();
        let past = std::time::Instant::now();
        let err = tree.named_nodes_until(&[], past).unwrap_err();
        let super::super::SyntaxError::ParseFailed(message) = err else { panic!("{err:?}") };
        assert!(message.contains("took longer than its time limit"), "{message}");
        // The same tree walks in full with time to spare: the module, and per
        // line a statement, an assignment, a name, a list and three integers.
        assert_eq!(tree.named_nodes(&[]).unwrap().nodes.len(), 1 + 2_000 * 7);
    }

    #[test]
    fn the_walk_keeps_only_the_listed_kinds_with_their_nearest_listed_parent() {
        let src = "class A:\n    def run(self):\n        print(len(self))\n";
        let tree = parse("python", src).unwrap();
        let all = tree.named_nodes(&[]).unwrap();
        let kinds = ["class_definition".to_string(), "call".to_string(), "identifier".to_string()];
        let some = tree.named_nodes(&kinds).unwrap();
        let kept: Vec<&TreeNode> =
            all.nodes.iter().filter(|n| kinds.contains(&all.kinds[n.kind as usize])).collect();
        assert_eq!(some.nodes.len(), kept.len());
        for (n, k) in some.nodes.iter().zip(kept) {
            assert_eq!((n.start_byte, n.end_byte), (k.start_byte, k.end_byte));
            assert_eq!(some.fields[n.field as usize], all.fields[k.field as usize]);
        }
    }
}
