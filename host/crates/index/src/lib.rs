//! Walks a repository, chunks changed files through the plugin host and syncs them into the store.
