//! Allocates (and touches) 16 MiB blocks until the host's memory limit stops
//! it, on every file not named `ok*`.

wit_bindgen::generate!({ world: "chunker", path: "../../../wit" });
include!("../../common.rs");


struct Plugin;

impl Guest for Plugin {
    fn info() -> PluginInfo {
        test_info("memory-bomb", "allocates without bound")
    }

    fn chunk(file: SourceFile) -> Result<ChunkOutcome, PluginError> {
        if is_ok_file(&file) {
            return Ok(ChunkOutcome::Chunks(vec![whole_file(&file)]));
        }
        let mut hoard: Vec<Vec<u8>> = Vec::new();
        loop {
            hoard.push(std::hint::black_box(vec![0xAB; 16 << 20]));
            std::hint::black_box(&hoard);
        }
    }
}

export!(Plugin);
