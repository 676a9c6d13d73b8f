//! What requests call chunks: the `aliases` a plugin puts in a chunk's
//! metadata, short names in plain words for what the chunk makes (a Filament
//! table of orders is `orders list` and `orders table`, a product form
//! `product form`). Search treats a request that says one as naming the
//! chunk, the way "OrdersTable" would (see `code_intel_search::hybrid`).

use std::sync::Arc;

use crate::Result;

/// One alias of one chunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkAlias {
    /// Row id of the chunk.
    pub rowid: i64,
    /// Repo-relative path of its file.
    pub path: String,
    /// The chunk's kind.
    pub kind: String,
    /// The alias as the plugin wrote it (`orders list`).
    pub alias: String,
}

/// Per-connection cache of [`crate::Store::aliases`].
pub(crate) type AliasCache = crate::chunks::GenerationCache<Arc<[ChunkAlias]>>;

impl crate::Store {
    /// Every alias of every chunk (few: plugins give them to the screens
    /// they know). Read once per change of the chunks
    /// ([`crate::Store::chunks_generation`]) and kept; the read scans the
    /// chunks' metadata (a few milliseconds per 10,000 chunks).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn aliases(&self) -> Result<Arc<[ChunkAlias]>> {
        self.per_generation(&self.aliases, |store| {
            let mut stmt = store.conn().prepare_cached(
                "SELECT c.id, f.path, c.kind, a.value
                   FROM chunks c JOIN files f ON f.id = c.file_id, json_each(c.metadata, '$.aliases') a
                  WHERE c.metadata LIKE '%\"aliases\"%' AND a.type = 'text'
                  ORDER BY c.id",
            )?;
            let rows = stmt.query_map([], |r| Ok(ChunkAlias { rowid: r.get(0)?, path: r.get(1)?, kind: r.get(2)?, alias: r.get(3)? }))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?.into())
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::{FileRecord, Store};
    use code_intel_core::{Chunk, ChunkedFile, Metadata};

    fn add(store: &mut Store, path: &str, metadata: &str) {
        let chunk = Chunk {
            id: "configure".into(),
            kind: "filament_table".into(),
            name: "configure".into(),
            qualified_name: None,
            parent: None,
            start_line: 1,
            end_line: 3,
            start_byte: 0,
            end_byte: 10,
            content: "public static function configure() {}".into(),
            signature: None,
            docstring: None,
            related_symbols: vec![],
            references: vec![],
            metadata: Metadata::parse(metadata.to_string()).unwrap(),
        };
        let chunked = ChunkedFile { chunks: vec![chunk], chunker: "test".into(), ..Default::default() };
        let file = FileRecord { path: path.into(), sha256: path.into(), size: 10, mtime_ns: 0 };
        store.write(|w| w.replace_file(&file, &chunked, 0).map(drop)).unwrap();
    }

    #[test]
    fn aliases_follow_the_chunks() {
        let mut store = Store::open_in_memory().unwrap();
        add(&mut store, "app/Filament/Resources/Orders/Tables/OrdersTable.php", r#"{"aliases": ["orders list", "orders table"]}"#);
        add(&mut store, "app/Models/Order.php", r#"{"model": "Order"}"#);
        let aliases = store.aliases().unwrap();
        let names: Vec<&str> = aliases.iter().map(|a| a.alias.as_str()).collect();
        assert_eq!(names, ["orders list", "orders table"]);
        assert!(aliases.iter().all(|a| a.path.ends_with("OrdersTable.php") && a.kind == "filament_table"));
        add(&mut store, "app/Filament/Resources/Products/Schemas/ProductForm.php", r#"{"aliases": ["product form"]}"#);
        let aliases = store.aliases().unwrap();
        assert!(aliases.iter().any(|a| a.alias == "product form"), "a new chunk's aliases are read: {aliases:?}");
    }
}
