//! WebAssembly plugin host: loads chunk-strategy components, offers them tree-sitter parsing, sandboxes and contains them.
