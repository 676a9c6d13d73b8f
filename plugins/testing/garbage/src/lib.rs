//! Returns output that breaks the contract, chosen by the file's name, so the
//! host's validation can be checked rule by rule. Files named `ok*` get a
//! valid chunk, `error*` a plugin error on line 3.

wit_bindgen::generate!({ world: "chunker", path: "../../../wit" });
include!("../../common.rs");


struct Plugin;

impl Guest for Plugin {
    fn info() -> PluginInfo {
        test_info("garbage", "returns invalid chunks")
    }

    fn chunk(file: SourceFile) -> Result<ChunkOutcome, PluginError> {
        let name = file.path.rsplit('/').next().unwrap_or_default().to_string();
        let good = whole_file(&file);
        let len = file.content.len() as u32;
        let chunks = if name.starts_with("ok") {
            vec![good]
        } else if name.starts_with("error") {
            return Err(PluginError { message: "deliberate test error".into(), line: Some(3) });
        } else if name.starts_with("bad-lines") {
            vec![Chunk { start_line: 0, ..good }]
        } else if name.starts_with("bad-metadata") {
            vec![Chunk { metadata: "[1, 2, 3]".into(), ..good }]
        } else if name.starts_with("not-json") {
            vec![Chunk { metadata: "{oops".into(), ..good }]
        } else if name.starts_with("dup-id") {
            vec![good.clone(), good]
        } else if name.starts_with("empty-id") {
            vec![Chunk { id: String::new(), ..good }]
        } else if name.starts_with("empty-kind") {
            vec![Chunk { kind: String::new(), ..good }]
        } else if name.starts_with("split-char") {
            vec![Chunk { start_byte: 1, ..good }]
        } else if name.starts_with("dangling-parent") {
            vec![Chunk { parent: Some("nowhere".into()), ..good }]
        } else {
            vec![Chunk { end_byte: len + 100, ..good }]
        };
        Ok(ChunkOutcome::Chunks(chunks))
    }
}

export!(Plugin);
