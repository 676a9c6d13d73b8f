//! Loops forever on every file not named `ok*`: the host's epoch deadline must
//! stop it, record a timeout and index the file with line chunks.

wit_bindgen::generate!({ world: "chunker", path: "../../../wit" });
include!("../../common.rs");


struct Plugin;

impl Guest for Plugin {
    fn info() -> PluginInfo {
        test_info("infinite-loop", "loops forever")
    }

    fn chunk(file: SourceFile) -> Result<ChunkOutcome, PluginError> {
        if is_ok_file(&file) {
            return Ok(ChunkOutcome::Chunks(vec![whole_file(&file)]));
        }
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }
}

export!(Plugin);
