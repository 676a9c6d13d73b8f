//! Search: text (ripgrep's grep crates), definitions, references, lexical, semantic and hybrid ranking.

pub mod lexical;
