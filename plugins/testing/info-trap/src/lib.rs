//! Traps in `info()`: the host must reject it at load, with the reason, and
//! load the other plugins.

wit_bindgen::generate!({ world: "chunker", path: "../../../wit" });
include!("../../common.rs");


struct Plugin;

impl Guest for Plugin {
    fn info() -> PluginInfo {
        panic!("deliberate test panic in info");
    }

    fn chunk(file: SourceFile) -> Result<ChunkOutcome, PluginError> {
        Ok(ChunkOutcome::Chunks(vec![whole_file(&file)]))
    }
}

export!(Plugin);
