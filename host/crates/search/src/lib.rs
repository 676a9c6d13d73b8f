//! Search: text (ripgrep's grep crates), definitions, references, lexical, semantic and hybrid ranking.

pub mod hybrid;
pub mod lexical;
pub mod semantic;
