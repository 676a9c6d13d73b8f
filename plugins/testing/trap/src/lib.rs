//! Panics on every file not named `ok*`; with `panic = "abort"` that is a
//! trap. The host must survive it and show the panic message.

wit_bindgen::generate!({ world: "chunker", path: "../../../wit" });
include!("../../common.rs");


struct Plugin;

impl Guest for Plugin {
    fn info() -> PluginInfo {
        test_info("trap", "panics")
    }

    fn chunk(file: SourceFile) -> Result<ChunkOutcome, PluginError> {
        if is_ok_file(&file) {
            return Ok(ChunkOutcome::Chunks(vec![whole_file(&file)]));
        }
        panic!("deliberate test panic while chunking {}", file.path);
    }
}

export!(Plugin);
