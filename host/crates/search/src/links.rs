//! The files a search result is tied to: the cross-file links the indexer
//! resolved (a Filament form -> its model and the migrations of its table, a
//! Blade view -> the route it posts to and the controller method behind it),
//! attached to definitions and ranked search hits so one answer leads to
//! every file a change touches.
//!
//! A result's links are those of its own chunk and of the chunks inside it
//! (a resource's form delegates to a form class), then those of the chunks
//! around it (a method inherits its class's model), plus the links from
//! other files that point at it. One entry per linked file: the result's own
//! links before the ones around it, strongest kind first, then the files
//! linked most often, at most [`MAX_LINKED_FILES`].
//!
//! ```
//! use code_intel_core::{Chunk, ChunkedFile};
//! use code_intel_search::links::linked_files;
//! use code_intel_store::links::NewLink;
//! use code_intel_store::{FileRecord, Store};
//!
//! let mut store = Store::open_in_memory().unwrap();
//! # let chunk = Chunk { id: "class:App\\Filament\\ProductForm".into(), kind: "class".into(), name: "ProductForm".into(),
//! #   qualified_name: Some("App\\Filament\\ProductForm".into()), parent: None, start_line: 3, end_line: 30,
//! #   start_byte: 0, end_byte: 1, content: "class ProductForm {}".into(), signature: None, docstring: None,
//! #   related_symbols: vec![], references: vec![], metadata: code_intel_core::Metadata::empty() };
//! # let chunked = ChunkedFile { chunks: vec![chunk], chunker: "php".into(), ..Default::default() };
//! # let file = FileRecord { path: "app/Filament/ProductForm.php".into(), sha256: "00".into(), size: 1, mtime_ns: 0 };
//! # store.write(|w| w.replace_file(&file, &chunked, 0).map(drop)).unwrap();
//! store.write(|w| w.replace_links(&[NewLink {
//!     from_path: "app/Filament/ProductForm.php".into(),
//!     from_chunk: Some("class:App\\Filament\\ProductForm".into()),
//!     to_path: "database/migrations/2025_01_10_create_products_table.php".into(),
//!     to_chunk: Some("table_schema:products".into()),
//!     to_line: None,
//!     kind: "table".into(),
//!     symbol: "table:products".into(),
//!     origin_path: "app/Filament/ProductForm.php".into(),
//! }])).unwrap();
//! let form = &store.file_chunks("app/Filament/ProductForm.php").unwrap()[0];
//! let linked = linked_files(&store, &form.path, form.rowid, 8).unwrap();
//! assert_eq!(linked[0].path, "database/migrations/2025_01_10_create_products_table.php");
//! assert_eq!((linked[0].kind.as_str(), linked[0].via.as_str()), ("table", "table:products"));
//! ```

use std::collections::{HashMap, HashSet};

use code_intel_store::{Store, StoreError};
use schemars::JsonSchema;
use serde::Serialize;

/// Linked files attached to one result at most: a Filament resource's model,
/// both migrations of its table and its form, table and infolist classes
/// fit; the long tail (pages, widgets) is one `find_definitions` away, and
/// ten search results with eight links each stay well inside the default
/// output budget (about 200 characters a link).
pub const MAX_LINKED_FILES: usize = 8;

/// A file tied to a result by a cross-file link.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct LinkedFile {
    /// Repository-relative path of the linked file.
    pub path: String,
    /// Line in `path` the link points at (a named route's definition), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// What ties the files: `model`, `table` (a migration of the table),
    /// `filament`, `route_action`, `route`, `component`, `livewire`, `view`,
    /// `class` or `file`.
    pub kind: String,
    /// `out`: the result names the linked file; `in`: the linked file names the result.
    pub direction: String,
    /// The symbol behind the link (`App\Models\Product`, `table:products`, `route:orders.store`).
    pub via: String,
}

/// Link kinds, strongest tie first (as `Store::linked_files` orders them):
/// the model and the table's migrations are what a change to a form or a
/// resource most often also touches; a plain file reference least often.
const KIND_ORDER: &[&str] =
    &["model", "table", "filament", "route_action", "route", "component", "livewire", "view", "class", "file"];

/// Rank of a link kind: lower is stronger.
fn rank(kind: &str) -> usize {
    KIND_ORDER.iter().position(|k| *k == kind).unwrap_or(KIND_ORDER.len())
}

/// The files linked to the chunk `rowid` of `path`, at most `max`; empty
/// when the chunk is gone or nothing links to it.
///
/// # Errors
/// SQLite errors.
pub fn linked_files(store: &Store, path: &str, rowid: i64, max: usize) -> Result<Vec<LinkedFile>, StoreError> {
    if max == 0 {
        return Ok(Vec::new());
    }
    // Most files have no links: two indexed lookups answer that before the
    // file's chunks are read (~0.2 ms per search hit otherwise).
    let (outgoing, incoming) = (store.links_from(path)?, store.links_to(path)?);
    if outgoing.is_empty() && incoming.is_empty() {
        return Ok(Vec::new());
    }
    let chunks = store.file_chunks(path)?;
    let Some(hit) = chunks.iter().find(|c| c.rowid == rowid) else { return Ok(Vec::new()) };
    let (start, end) = (hit.start_line, hit.end_line);
    // The result's own chunk and the chunks inside it come first; the chunks
    // around it (a method's class, a form element's template) second.
    let inside: HashSet<&str> = chunks
        .iter()
        .filter(|c| c.start_line >= start && c.end_line <= end)
        .map(|c| c.chunk_id.as_str())
        .collect();
    let around: HashSet<&str> = chunks
        .iter()
        .filter(|c| c.start_line <= start && c.end_line >= end)
        .map(|c| c.chunk_id.as_str())
        .collect();
    // 0: the result's own, 1: from around it (or the whole file), None: another chunk's.
    let proximity = |chunk: Option<&str>| match chunk {
        Some(c) if inside.contains(c) => Some(0u8),
        Some(c) if around.contains(c) => Some(1),
        Some(_) => None,
        None => Some(1),
    };

    let mut by_path: HashMap<String, Ranked> = HashMap::new();
    let mut add = |file: LinkedFile, near: u8| {
        if file.path == path {
            return;
        }
        let key = (near, rank(&file.kind));
        // The link shown for a file: the nearest, then one the result makes
        // itself (its `via` is what the result names), then the strongest.
        let shown = (near, file.direction != "out", rank(&file.kind));
        match by_path.get_mut(&file.path) {
            None => {
                by_path.insert(file.path.clone(), Ranked { key, shown, count: 1, file });
            }
            Some(best) => {
                best.count += 1;
                best.key = best.key.min(key);
                if shown < best.shown {
                    best.shown = shown;
                    best.file = file;
                } else if best.file.line.is_none() && file.line.is_some() && file.kind == best.file.kind {
                    best.file.line = file.line;
                }
            }
        }
    };
    for link in outgoing {
        if let Some(near) = proximity(link.from_chunk.as_deref()) {
            add(LinkedFile { path: link.to_path, line: link.to_line, kind: link.kind, direction: "out".into(), via: link.symbol }, near);
        }
    }
    for link in incoming {
        let near = match (link.to_chunk.as_deref(), link.to_line) {
            (Some(_), _) => proximity(link.to_chunk.as_deref()),
            // A link to a line (a route) concerns the result holding that line.
            (None, Some(line)) => (start..=end).contains(&line).then_some(0),
            (None, None) => Some(1),
        };
        if let Some(near) = near {
            add(LinkedFile { path: link.from_path, line: None, kind: link.kind, direction: "in".into(), via: link.symbol }, near);
        }
    }
    let mut out: Vec<Ranked> = by_path.into_values().collect();
    out.sort_by(|a, b| a.key.cmp(&b.key).then(b.count.cmp(&a.count)).then_with(|| a.file.path.cmp(&b.file.path)));
    Ok(out.into_iter().take(max).map(|r| r.file).collect())
}

/// A linked file with what orders it: the best (proximity, kind rank) of
/// the links leading to it, then how many links do.
struct Ranked {
    key: (u8, usize),
    /// Why `file` is the link shown: (proximity, incoming, kind rank).
    shown: (u8, bool, usize),
    count: usize,
    file: LinkedFile,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::chunk;
    use code_intel_core::{Chunk, ChunkedFile};
    use code_intel_store::FileRecord;
    use code_intel_store::links::NewLink;

    /// (from, from chunk, to, to chunk, to line, kind, symbol)
    type LinkRow<'a> = (&'a str, Option<&'a str>, &'a str, Option<&'a str>, Option<u32>, &'a str, &'a str);

    fn store_with(files: &[(&str, Vec<Chunk>)], links: &[LinkRow<'_>]) -> Store {
        let mut store = Store::open_in_memory().unwrap();
        for (path, chunks) in files {
            let chunked = ChunkedFile { chunks: chunks.clone(), chunker: "test".into(), ..Default::default() };
            let file = FileRecord { path: (*path).into(), sha256: "00".into(), size: 1, mtime_ns: 0 };
            store.write(|w| w.replace_file(&file, &chunked, 0).map(drop)).unwrap();
        }
        let links: Vec<NewLink> = links
            .iter()
            .map(|(from, from_chunk, to, to_chunk, to_line, kind, symbol)| NewLink {
                from_path: (*from).into(),
                from_chunk: from_chunk.map(Into::into),
                to_path: (*to).into(),
                to_chunk: to_chunk.map(Into::into),
                to_line: *to_line,
                kind: (*kind).into(),
                symbol: (*symbol).into(),
                origin_path: (*from).into(),
            })
            .collect();
        store.write(|w| w.replace_links(&links)).unwrap();
        store
    }

    fn rowid(store: &Store, path: &str, chunk_id: &str) -> i64 {
        store.file_chunks(path).unwrap().into_iter().find(|c| c.chunk_id == chunk_id).unwrap().rowid
    }

    #[test]
    fn a_method_inherits_its_class_links_and_strong_kinds_come_first() {
        let form = "app/Forms/ProductForm.php";
        let store = store_with(
            &[
                (form, vec![chunk("class", "class", "ProductForm", None, (3, 40)), chunk("configure", "method", "configure", None, (10, 30))]),
                ("app/Resources/ProductResource.php", vec![chunk("res", "class", "ProductResource", None, (1, 50))]),
            ],
            &[
                (form, Some("class"), "database/migrations/create_products.php", Some("table_schema:products"), None, "table", "table:products"),
                (form, Some("class"), "app/Models/Product.php", Some("class:Product"), None, "model", "App\\Models\\Product"),
                (form, Some("class"), "app/Models/Product.php", Some("class:Product"), None, "model", "App\\Models\\Product"),
                ("app/Resources/ProductResource.php", Some("res"), form, Some("class"), None, "filament", "App\\Forms\\ProductForm"),
                (form, Some("class"), "app/Resources/ProductResource.php", Some("res"), None, "filament", "App\\Resources\\ProductResource"),
                // Another file's link to a different chunk of the form is not the method's.
                ("app/Other.php", None, form, Some("elsewhere"), None, "class", "X"),
            ],
        );
        let linked = linked_files(&store, form, rowid(&store, form, "configure"), 8).unwrap();
        let got: Vec<(&str, &str)> = linked.iter().map(|l| (l.path.as_str(), l.kind.as_str())).collect();
        assert_eq!(
            got,
            vec![
                ("app/Models/Product.php", "model"),
                ("database/migrations/create_products.php", "table"),
                ("app/Resources/ProductResource.php", "filament"),
            ]
        );
        assert_eq!(linked[2].direction, "out", "one entry per file: the outgoing link was seen first");
        assert_eq!(linked_files(&store, form, rowid(&store, form, "configure"), 1).unwrap().len(), 1);
        assert!(linked_files(&store, form, 999_999, 8).unwrap().is_empty());
    }

    #[test]
    fn a_result_own_links_come_before_those_around_it() {
        let view = "resources/views/products/show.blade.php";
        let store = store_with(
            &[(view, vec![chunk("template", "blade_template", "products.show", None, (1, 40)), chunk("form", "html_element", "form#add-to-cart", None, (16, 22))])],
            &[
                (view, Some("template"), "app/Models/Product.php", None, None, "model", "App\\Models\\Product"),
                (view, Some("form"), "routes/web.php", None, Some(20), "route", "route:orders.checkout"),
                (view, Some("template"), "resources/views/partials/review.blade.php", None, None, "view", "view:partials.review"),
            ],
        );
        let form = linked_files(&store, view, rowid(&store, view, "form"), 8).unwrap();
        let got: Vec<(&str, Option<u32>)> = form.iter().map(|l| (l.path.as_str(), l.line)).collect();
        assert_eq!(
            got,
            vec![("routes/web.php", Some(20)), ("app/Models/Product.php", None), ("resources/views/partials/review.blade.php", None)]
        );
        // The template holds the form: the form's link is its own.
        let template = linked_files(&store, view, rowid(&store, view, "template"), 8).unwrap();
        assert_eq!(template[0].path, "app/Models/Product.php");
    }

    #[test]
    fn incoming_links_at_a_line_belong_to_the_chunk_holding_it() {
        let routes = "routes/web.php";
        let store = store_with(
            &[(routes, vec![chunk("a", "lines", "web.php:1-10", None, (1, 10)), chunk("b", "lines", "web.php:11-20", None, (11, 20))])],
            &[("resources/views/cart.blade.php", Some("t"), routes, None, Some(14), "route", "route:orders.store")],
        );
        assert!(linked_files(&store, routes, rowid(&store, routes, "a"), 8).unwrap().is_empty());
        let second = linked_files(&store, routes, rowid(&store, routes, "b"), 8).unwrap();
        assert_eq!(second[0].path, "resources/views/cart.blade.php");
        assert_eq!((second[0].direction.as_str(), second[0].via.as_str()), ("in", "route:orders.store"));
    }
}
