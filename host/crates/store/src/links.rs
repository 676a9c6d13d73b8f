//! Cross-file links: which file (and chunk) a chunk's related symbols lead
//! to, as resolved by the indexer after a sync (`route:orders.store` ->
//! `routes/web.php` line 14, `App\Models\Product` -> `app/Models/Product.php`,
//! table `products` -> its migrations). Each link remembers the file whose
//! chunk produced it (`origin_path`), so a sync that changed a few files can
//! replace just their links; a search answers "what else is this connected
//! to" with one indexed query.
//!
//! ```
//! use code_intel_store::{Store, links::NewLink};
//! let mut store = Store::open_in_memory().unwrap();
//! let link = NewLink {
//!     from_path: "resources/views/cart.blade.php".into(),
//!     from_chunk: Some("blade_template:cart".into()),
//!     to_path: "routes/web.php".into(),
//!     to_chunk: None,
//!     to_line: Some(14),
//!     kind: "route".into(),
//!     symbol: "route:orders.store".into(),
//!     origin_path: "resources/views/cart.blade.php".into(),
//! };
//! store.write(|w| w.replace_links(&[link])).unwrap();
//! let out = store.links_from("resources/views/cart.blade.php").unwrap();
//! assert_eq!(out[0].to_path, "routes/web.php");
//! assert_eq!(store.links_to("routes/web.php").unwrap().len(), 1);
//! let linked = store.linked_files("routes/web.php", None).unwrap();
//! assert_eq!((linked[0].path.as_str(), linked[0].direction), ("resources/views/cart.blade.php", "in"));
//! let with_links = store.paths_with_links(&["routes/web.php", "app/Unlinked.php", "resources/views/cart.blade.php"]).unwrap();
//! assert_eq!(with_links.len(), 2);
//! assert!(!with_links.contains("app/Unlinked.php"));
//! ```

use rusqlite::{Row, params};
use serde::Serialize;

use crate::chunks::Writer;
use crate::migrations::Schema;
use crate::{Result, Store};

/// Schema of the link table (module `links`).
pub const SCHEMA: Schema = Schema {
    module: "links",
    steps: &["CREATE TABLE links (
            id         INTEGER PRIMARY KEY,
            from_path  TEXT NOT NULL,   -- repo-relative file holding the symbol
            from_chunk TEXT,            -- chunk id in that file (NULL: the file as a whole)
            to_path    TEXT NOT NULL,   -- repo-relative file the symbol resolves to
            to_chunk   TEXT,            -- chunk id in the target, when one is known
            to_line    INTEGER,         -- 1-based line in the target, when known
            kind       TEXT NOT NULL,   -- class | component | livewire | view | route | route_action | model | table | filament | file
            symbol     TEXT NOT NULL    -- the related symbol that was resolved
        ) STRICT;
        CREATE INDEX links_by_from ON links(from_path, from_chunk);
        CREATE INDEX links_by_to ON links(to_path, to_chunk);",
        // The file whose chunk produced the link: usually `from_path`, but a
        // Filament resource also links the form/table classes it delegates to.
        "ALTER TABLE links ADD COLUMN origin_path TEXT NOT NULL DEFAULT '';
        CREATE INDEX links_by_origin ON links(origin_path);",
    ],
};

/// A link to write.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct NewLink {
    pub from_path: String,
    pub from_chunk: Option<String>,
    pub to_path: String,
    pub to_chunk: Option<String>,
    pub to_line: Option<u32>,
    pub kind: String,
    pub symbol: String,
    /// The file whose chunk produced the link (its links are replaced when
    /// that file changes). Internal bookkeeping, not shown to users.
    #[serde(skip)]
    pub origin_path: String,
}

/// A stored link (same fields as [`NewLink`]).
pub type Link = NewLink;

/// A file linked to another, in either direction, for search results.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LinkedFile {
    pub path: String,
    /// Line in `path` the link points at (a route definition), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Chunk id in `path`, when the link names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk: Option<String>,
    /// Link kind (`model`, `table`, `route`, `component`, ...).
    pub kind: String,
    /// `out`: the queried file names this one; `in`: this one names the queried file.
    pub direction: &'static str,
    /// The symbol behind the link (`route:orders.store`, `App\Models\Product`).
    pub via: String,
}

/// Most linked files returned for one file: enough for a resource's model,
/// migrations, form, table, pages and relation managers; more is noise in a
/// search result.
pub const MAX_LINKED_FILES: usize = 24;

/// Order of link kinds in [`Store::linked_files`]: the strongest ties first.
const KIND_ORDER: &[&str] =
    &["model", "table", "filament", "route_action", "route", "component", "livewire", "view", "class", "file"];

/// One chunk's link-relevant facts, as the resolver reads them.
#[derive(Clone, Debug)]
pub struct LinkSource {
    pub path: String,
    pub chunker: String,
    pub chunk_id: String,
    pub kind: String,
    pub name: String,
    pub qualified_name: Option<String>,
    pub related_symbols: Vec<String>,
    pub metadata: serde_json::Value,
}

impl Writer<'_> {
    /// Replaces every link with `links`.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn replace_links(&self, links: &[NewLink]) -> Result<()> {
        self.tx.execute("DELETE FROM links", [])?;
        self.insert_links(links)
    }

    /// Replaces the links produced by the chunks of `origins` with `links`
    /// (which must all come from those files); every other link stays.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn replace_links_of(&self, origins: &[String], links: &[NewLink]) -> Result<()> {
        let mut delete = self.tx.prepare_cached("DELETE FROM links WHERE origin_path = ?1")?;
        for origin in origins {
            delete.execute([origin])?;
        }
        self.insert_links(links)
    }

    fn insert_links(&self, links: &[NewLink]) -> Result<()> {
        let mut insert = self.tx.prepare_cached(
            "INSERT INTO links (from_path, from_chunk, to_path, to_chunk, to_line, kind, symbol, origin_path)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        for l in links {
            insert.execute(params![l.from_path, l.from_chunk, l.to_path, l.to_chunk, l.to_line, l.kind, l.symbol, l.origin_path])?;
        }
        Ok(())
    }
}

fn link_row(row: &Row<'_>) -> rusqlite::Result<Link> {
    Ok(Link {
        from_path: row.get(0)?,
        from_chunk: row.get(1)?,
        to_path: row.get(2)?,
        to_chunk: row.get(3)?,
        to_line: row.get(4)?,
        kind: row.get(5)?,
        symbol: row.get(6)?,
        origin_path: row.get(7)?,
    })
}

const LINK_COLUMNS: &str = "from_path, from_chunk, to_path, to_chunk, to_line, kind, symbol, origin_path";

/// The chunks that can take part in a link: chunks with related symbols and
/// the chunks links resolve to (classes, templates, table schemas, composer
/// autoload maps). Fallback line chunks never do.
const LINK_SOURCE_QUERY: &str = "SELECT f.path, f.chunker, c.chunk_id, c.kind, c.name, c.qualified_name, c.related_symbols, c.metadata
     FROM chunks c JOIN files f ON f.id = c.file_id
     WHERE f.chunker <> 'fallback'
       AND (c.related_symbols <> '[]' OR c.qualified_name IS NOT NULL OR c.kind IN ('blade_template', 'table_schema', 'autoload'))";

impl Store {
    /// Links whose symbol sits in `path` (any chunk of it), ordered by target.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn links_from(&self, path: &str) -> Result<Vec<Link>> {
        let mut stmt = self
            .conn()
            .prepare_cached(&format!("SELECT {LINK_COLUMNS} FROM links WHERE from_path = ?1 ORDER BY to_path, to_line, id"))?;
        let rows = stmt.query_map([path], link_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Which of `paths` have any link, from or to them: one statement for
    /// a page of search results, most of which usually have none.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn paths_with_links(&self, paths: &[&str]) -> Result<std::collections::HashSet<String>> {
        let mut out = std::collections::HashSet::new();
        // Each path is bound twice; SQLite allows 32,766 parameters.
        for batch in paths.chunks(1024) {
            let placeholders = vec!["?"; batch.len()].join(",");
            let mut stmt = self.conn().prepare_cached(&format!(
                "SELECT from_path FROM links WHERE from_path IN ({placeholders})
                 UNION SELECT to_path FROM links WHERE to_path IN ({placeholders})"
            ))?;
            let rows = stmt.query_map(rusqlite::params_from_iter(batch.iter().chain(batch)), |r| r.get::<_, String>(0))?;
            for path in rows {
                out.insert(path?);
            }
        }
        Ok(out)
    }

    /// Links that resolve to `path`, ordered by source.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn links_to(&self, path: &str) -> Result<Vec<Link>> {
        let mut stmt = self
            .conn()
            .prepare_cached(&format!("SELECT {LINK_COLUMNS} FROM links WHERE to_path = ?1 ORDER BY from_path, id"))?;
        let rows = stmt.query_map([path], link_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The files linked to `path` in either direction, one entry per
    /// (file, kind, direction), strongest kinds first, at most
    /// [`MAX_LINKED_FILES`]. With `chunk`, outgoing links are limited to
    /// those of that chunk (incoming ones always concern the whole file).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn linked_files(&self, path: &str, chunk: Option<&str>) -> Result<Vec<LinkedFile>> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for link in self.links_from(path)? {
            if chunk.is_some_and(|c| link.from_chunk.as_deref() != Some(c)) {
                continue;
            }
            if seen.insert((link.to_path.clone(), link.kind.clone(), "out")) {
                out.push(LinkedFile {
                    path: link.to_path,
                    line: link.to_line,
                    chunk: link.to_chunk,
                    kind: link.kind,
                    direction: "out",
                    via: link.symbol,
                });
            }
        }
        for link in self.links_to(path)? {
            if seen.insert((link.from_path.clone(), link.kind.clone(), "in")) {
                out.push(LinkedFile {
                    path: link.from_path,
                    line: None,
                    chunk: link.from_chunk,
                    kind: link.kind,
                    direction: "in",
                    via: link.symbol,
                });
            }
        }
        let rank = |k: &str| KIND_ORDER.iter().position(|o| *o == k).unwrap_or(KIND_ORDER.len());
        out.sort_by(|a, b| rank(&a.kind).cmp(&rank(&b.kind)).then_with(|| a.path.cmp(&b.path)));
        out.truncate(MAX_LINKED_FILES);
        Ok(out)
    }

    /// Number of stored links.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn link_count(&self) -> Result<u64> {
        let n: i64 = self.conn().query_row("SELECT count(*) FROM links", [], |r| r.get(0))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// Every chunk that can take part in a link, in file order.
    ///
    /// # Errors
    /// SQLite errors or malformed JSON in the index.
    pub fn link_sources(&self) -> Result<Vec<LinkSource>> {
        self.query_link_sources(&format!("{LINK_SOURCE_QUERY} ORDER BY f.path, c.start_byte"), &[])
    }

    /// The link sources of the files `paths`, in file order.
    ///
    /// # Errors
    /// SQLite errors or malformed JSON in the index.
    pub fn link_sources_in(&self, paths: &[String]) -> Result<Vec<LinkSource>> {
        let paths = serde_json::to_string(paths)?;
        self.query_link_sources(
            &format!("{LINK_SOURCE_QUERY} AND f.path IN (SELECT value FROM json_each(?1)) ORDER BY f.path, c.start_byte"),
            &[&paths],
        )
    }

    /// The link sources a resolver needs to resolve the symbols `names`
    /// (class FQCNs, `Class::method`): chunks qualified as one of them
    /// (ignoring case, a superset), plus every template, table schema and
    /// autoload map, which lookups by view, table or autoload need, and, when
    /// `models`, every Eloquent model (lookups of the models of a table need
    /// them all; finding them reads every class chunk). In file order, like
    /// [`Store::link_sources`], so "first definition wins" picks the same chunk.
    ///
    /// # Errors
    /// SQLite errors or malformed JSON in the index.
    pub fn link_fact_sources(&self, names: &[String], models: bool) -> Result<Vec<LinkSource>> {
        let names = serde_json::to_string(names)?;
        let models = if models {
            "UNION SELECT rowid FROM chunks WHERE kind = 'class' AND json_extract(metadata, '$.eloquent_model') = 1"
        } else {
            ""
        };
        self.query_link_sources(
            &format!(
                "{LINK_SOURCE_QUERY} AND c.rowid IN (
                     SELECT rowid FROM chunks WHERE qualified_name COLLATE NOCASE IN (SELECT value FROM json_each(?1))
                     UNION SELECT rowid FROM chunks WHERE kind IN ('blade_template', 'table_schema', 'autoload')
                     {models})
                 ORDER BY f.path, c.start_byte"
            ),
            &[&names],
        )
    }

    fn query_link_sources(&self, sql: &str, params: &[&dyn rusqlite::ToSql]) -> Result<Vec<LinkSource>> {
        let mut stmt = self.conn().prepare_cached(sql)?;
        let rows = stmt.query_map(params, |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, String>(4)?,
                row.get::<_, Option<String>>(5)?,
                row.get::<_, String>(6)?,
                row.get::<_, String>(7)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (path, chunker, chunk_id, kind, name, qualified_name, related, metadata) = row?;
            out.push(LinkSource {
                path,
                chunker,
                chunk_id,
                kind,
                name,
                qualified_name,
                related_symbols: serde_json::from_str(&related)?,
                metadata: serde_json::from_str(&metadata)?,
            });
        }
        Ok(out)
    }
}
