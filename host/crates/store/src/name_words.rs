//! The English words a repository names things with: the parts of its
//! chunks' names and of its file paths (`DatabaseHostResource` and
//! `app/Filament/Admin` give `database`, `host`, `resource`, `filament`,
//! `admin`), for matching a request's loanwords against what the code
//! calls things (see `code_intel_search::loanwords`).

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::Result;
use crate::tokenize::split_identifier;

/// Shortest word kept: two letters name nothing a request would mean.
const MIN_WORD: usize = 3;

/// Per-connection cache of [`crate::Store::name_words`].
pub(crate) type NameWordCache = crate::chunks::GenerationCache<Arc<[String]>>;

/// The distinct lower-case ASCII words (three letters or more) of names
/// and paths, each split at identifier boundaries, sorted: what
/// [`crate::Store::name_words`] reads from the index (and organisation-wide
/// search from a shared store).
#[must_use]
pub fn name_words_of<'a>(texts: impl Iterator<Item = &'a str>) -> Arc<[String]> {
    let mut words = BTreeSet::new();
    for text in texts {
        for run in text.split(|c: char| !c.is_ascii_alphabetic()).filter(|r| r.len() >= MIN_WORD) {
            for part in split_identifier(run) {
                if part.len() >= MIN_WORD && !words.contains(part) {
                    words.insert(part.to_ascii_lowercase());
                }
            }
        }
    }
    words.into_iter().collect()
}

impl crate::Store {
    /// The distinct lower-case ASCII words (three letters or more) of the
    /// chunks' names and of the indexed files' paths, sorted. Read once per
    /// change of the chunks ([`crate::Store::chunks_generation`]) and kept.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn name_words(&self) -> Result<Arc<[String]>> {
        self.per_generation(&self.name_words, |store| {
            let mut texts: Vec<String> = Vec::new();
            let mut names = store.conn().prepare_cached("SELECT DISTINCT name FROM chunks")?;
            let mut rows = names.query([])?;
            while let Some(row) = rows.next()? {
                texts.push(row.get_ref(0)?.as_str().unwrap_or_default().to_string());
            }
            let mut paths = store.conn().prepare_cached("SELECT path FROM files")?;
            let mut rows = paths.query([])?;
            while let Some(row) = rows.next()? {
                texts.push(row.get_ref(0)?.as_str().unwrap_or_default().to_string());
            }
            Ok(name_words_of(texts.iter().map(String::as_str)))
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::{FileRecord, Store};
    use code_intel_core::{ChunkedFile, line_chunks};

    fn add(store: &mut Store, path: &str, content: &str) {
        let chunked = ChunkedFile { chunks: line_chunks(path, content), chunker: "fallback".into(), ..Default::default() };
        let file = FileRecord { path: path.into(), sha256: path.into(), size: i64::try_from(content.len()).unwrap(), mtime_ns: 0 };
        store.write(|w| w.replace_file(&file, &chunked, 0).map(drop)).unwrap();
    }

    #[test]
    fn words_of_names_and_paths_follow_the_chunks() {
        let mut store = Store::open_in_memory().unwrap();
        add(&mut store, "app/Models/EggVariable.php", "<?php class EggVariable {}\n");
        let words = store.name_words().unwrap();
        for word in ["app", "models", "egg", "variable", "php"] {
            assert!(words.iter().any(|w| w == word), "{word} in {words:?}");
        }
        assert!(!words.iter().any(|w| w.len() < 3));
        add(&mut store, "app/Services/ScheduleRunner.php", "<?php\n");
        let words = store.name_words().unwrap();
        assert!(words.iter().any(|w| w == "schedule"), "a new file's words are read: {words:?}");
    }
}
