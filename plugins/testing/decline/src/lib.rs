//! Declines every file, so the host must try the next plugin or fall back to
//! line chunks.

wit_bindgen::generate!({ world: "chunker", path: "../../../wit" });
include!("../../common.rs");


struct Plugin;

impl Guest for Plugin {
    fn info() -> PluginInfo {
        test_info("decline", "declines everything")
    }

    fn chunk(file: SourceFile) -> Result<ChunkOutcome, PluginError> {
        Ok(ChunkOutcome::Decline(format!("{} is not mine", file.path)))
    }
}

export!(Plugin);
