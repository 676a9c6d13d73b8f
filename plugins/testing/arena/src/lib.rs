//! Built on the SDK, so its heap is the SDK's call arena. Every file gets one
//! chunk whose metadata reports the arena as the call found it: `live`
//! (allocations not yet freed: the call's two arguments when every earlier
//! call freed everything), `used` (bytes from the region's start) and
//! `region`. A file named `remember*` also adds its path to a static list
//! that outlives calls, and the chunk's references are that whole list, so
//! a test can see it survive later calls.

use std::sync::Mutex;

use code_intel_plugin_sdk::{
    ChunkBuilder, ChunkOutcome, ChunkSet, LineIndex, Plugin, PluginError, PluginInfo, SourceFile, arena, export_plugin,
};

static REMEMBERED: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct ArenaProbe;

impl Plugin for ArenaProbe {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "arena-probe".into(),
            version: "0.1.0".into(),
            description: "reports the call arena".into(),
            languages: vec!["text".into()],
            file_patterns: vec!["**/*.arena".into()],
            priority: 1000,
        }
    }

    fn chunk(file: SourceFile) -> Result<ChunkOutcome, PluginError> {
        let heap = arena::global().ok_or_else(|| PluginError::new("the call arena is not installed"))?;
        let (live, used, region) = (heap.live(), heap.used(), heap.region_size());
        let name = file.path.rsplit('/').next().unwrap_or(&file.path);
        let mut remembered = REMEMBERED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if name.starts_with("remember") {
            // Strings built the long way round, so they are spread over the heap.
            remembered.push(file.path.chars().rev().collect::<String>().chars().rev().collect());
        }
        // Churn: allocations the call frees before it returns.
        let churn: Vec<String> = (0..2_000).map(|i| i.to_string().repeat(i % 7 + 1)).collect();
        let lines = LineIndex::new(&file.content);
        let mut chunks = ChunkSet::new(&file.content);
        chunks.push(
            ChunkBuilder::new("probe", name)
                .span(lines.span(0, u32::try_from(file.content.len()).unwrap_or(u32::MAX)))
                .references(remembered.iter().cloned())
                .meta("live", live)
                .meta("used", used)
                .meta("region", region)
                .meta("churn", churn.len()),
        );
        Ok(ChunkOutcome::Chunks(chunks.finish()))
    }
}

export_plugin!(ArenaProbe);
