//! Fitting an outline into `analyze_structure`'s output budget without
//! losing track of what was left out: symbols are kept in reading order
//! (a scope before what it holds) until the budget is spent, and the line of
//! the first symbol left out is returned, so the caller can continue there
//! (`from_line`).

use code_intel_search::structure::OutlineNode;

use super::budget::json_len;

/// Characters a symbol costs beyond its own fields (the nesting's brackets
/// and the `children` key of its parent).
const NODE_OVERHEAD: usize = 16;

/// The symbols that start at `from_line` or later, with the scopes that
/// enclose them (a class that starts earlier is kept, holding only its later
/// members).
#[must_use]
pub fn from_line(symbols: Vec<OutlineNode>, from_line: u32) -> Vec<OutlineNode> {
    symbols
        .into_iter()
        .filter(|n| n.end_line >= from_line)
        .map(|mut n| {
            if n.start_line < from_line {
                n.children = self::from_line(std::mem::take(&mut n.children), from_line);
            }
            n
        })
        .collect()
}

/// Keeps the symbols (in reading order, each scope before its members)
/// whose JSON fits in `room` characters. Returns the start line of the
/// first symbol left out, `None` when everything fit.
pub fn cut(symbols: &mut Vec<OutlineNode>, room: usize) -> Option<u32> {
    let mut left = room;
    let mut first_left_out = None;
    take(symbols, &mut left, &mut first_left_out);
    first_left_out
}

fn take(nodes: &mut Vec<OutlineNode>, left: &mut usize, first_left_out: &mut Option<u32>) {
    let mut keep = 0;
    for node in nodes.iter_mut() {
        if first_left_out.is_some() {
            break;
        }
        let own = own_len(node);
        if own > *left {
            *first_left_out = Some(node.start_line);
            break;
        }
        *left -= own;
        keep += 1;
        take(&mut node.children, left, first_left_out);
    }
    nodes.truncate(keep);
}

/// JSON length of a symbol without its members.
fn own_len(node: &OutlineNode) -> usize {
    let shallow = OutlineNode {
        name: node.name.clone(),
        kind: node.kind.clone(),
        start_line: node.start_line,
        end_line: node.end_line,
        signature: node.signature.clone(),
        children: Vec::new(),
    };
    json_len(&shallow) + NODE_OVERHEAD
}

/// Number of symbols in an outline, members included.
#[must_use]
pub fn count(symbols: &[OutlineNode]) -> usize {
    symbols.iter().map(OutlineNode::count).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, start: u32, end: u32, children: Vec<OutlineNode>) -> OutlineNode {
        OutlineNode { name: name.into(), kind: "function".into(), start_line: start, end_line: end, signature: Some(format!("def {name}(self, a, b)")), children }
    }

    /// A module holding 100 functions of 7 lines each (a 700-line file).
    fn module() -> Vec<OutlineNode> {
        let functions = (0..100).map(|i| node(&format!("function_{i}"), i * 7 + 1, i * 7 + 7, Vec::new())).collect();
        vec![node("module", 1, 700, functions)]
    }

    #[test]
    fn a_small_budget_keeps_what_fits_in_reading_order_and_says_where_to_go_on() {
        let mut symbols = module();
        let next = cut(&mut symbols, 2_000).expect("100 functions do not fit in 2,000 characters");
        let kept = count(&symbols);
        assert!(kept > 10, "only {kept} symbols kept");
        assert!(json_len(&symbols) <= 2_000, "{}", json_len(&symbols));
        let last = symbols[0].children.last().unwrap();
        assert_eq!(next, last.end_line + 1, "the first symbol left out follows the last one kept");

        // Continuing from there gives the rest, with the module as context.
        let mut rest = from_line(module(), next);
        assert_eq!(rest[0].name, "module");
        assert_eq!(rest[0].children[0].start_line, next);
        assert_eq!(count(&rest) - 1 + kept - 1, 100, "every function is on one page or the other");
        assert_eq!(cut(&mut rest, 200_000), None);
    }

    #[test]
    fn everything_fits_in_a_large_budget() {
        let mut symbols = module();
        assert_eq!(cut(&mut symbols, 200_000), None);
        assert_eq!(count(&symbols), 101);
    }
}
