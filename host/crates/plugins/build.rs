//! Compiles the node-table walk (`src/syntax/named_nodes.c`) against the
//! sources of the tree-sitter crate this crate links. The walk reads
//! tree-sitter's internal structures, so it must see the same headers the
//! library was built from; the `tree-sitter` crate publishes their location
//! as `DEP_TREE_SITTER_INCLUDE` (its public headers; the internal ones are
//! in the `src` folder beside them).

use std::env;
use std::path::PathBuf;

fn main() {
    let include = PathBuf::from(
        env::var("DEP_TREE_SITTER_INCLUDE").expect("the tree-sitter crate sets DEP_TREE_SITTER_INCLUDE"),
    );
    let internal = include.parent().expect("tree-sitter's include folder has a parent").join("src");
    let walk = "src/syntax/named_nodes.c";
    println!("cargo:rerun-if-changed={walk}");
    cc::Build::new()
        .std("c11")
        .include(&internal)
        .include(&include)
        .define("_POSIX_C_SOURCE", "200112L")
        .define("_DEFAULT_SOURCE", None)
        .flag_if_supported("-fvisibility=hidden")
        .flag_if_supported("-Wno-unused-parameter")
        .warnings(true)
        .file(walk)
        .compile("code-intel-named-nodes");
}
