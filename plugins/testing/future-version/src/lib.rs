//! Built against `code-intel:plugin@0.2.0`, which the host does not support:
//! it must be rejected at load with a reason naming the versions.

wit_bindgen::generate!({ world: "chunker", path: "wit" });

struct Plugin;

impl Guest for Plugin {
    fn describe() -> String {
        code_intel::plugin::syntax::languages().join(",")
    }
}

export!(Plugin);
