//! SQLite store of record: files, chunks, full-text index, embeddings, sessions and logs.
