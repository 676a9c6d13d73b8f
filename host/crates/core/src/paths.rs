//! Repository-relative paths: normalisation and refusal of anything outside
//! the repository root.
