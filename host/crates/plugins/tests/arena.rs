//! The SDK's call arena in a real component (`test-plugin-arena`, built on
//! the SDK): the heap is reused from its start once a call has freed
//! everything, memory that outlives calls is never handed out again, and a
//! file larger than the arena still chunks and makes the arena grow.

mod common;

use code_intel_core::{ChunkedFile, Chunker};
use common::host_with;

/// The one chunk's metadata field `key`, as the probe reported it.
fn reported(file: &ChunkedFile, key: &str) -> u64 {
    assert_eq!(file.chunker, "arena-probe", "the probe did not chunk the file: {:?}", file.failures);
    file.chunks[0].metadata.value()[key].as_u64().unwrap_or_else(|| panic!("no {key} in {:?}", file.chunks[0].metadata))
}

#[test]
fn each_call_starts_from_an_empty_arena_when_the_last_one_freed_everything() {
    let cache = tempfile::tempdir().unwrap();
    let host = host_with(&["arena"], cache.path());
    for i in 0..20 {
        let (path, content) = (format!("src/file{i}.arena"), "some text\n".repeat(i + 1));
        let file = host.chunk_file(&path, &content);
        // Live at the start: the call's two arguments (path and content), nothing else.
        assert_eq!(reported(&file, "live"), 2, "call {i}");
        // Used: those two arguments only, so the arena rewound to its start.
        assert!(reported(&file, "used") <= (path.len() + content.len() + 16) as u64, "call {i}: {:?}", file.chunks[0].metadata);
        assert_eq!(reported(&file, "churn"), 2_000);
    }
}

#[test]
fn memory_that_outlives_calls_is_never_overwritten() {
    let cache = tempfile::tempdir().unwrap();
    let host = host_with(&["arena"], cache.path());
    let mut remembered: Vec<String> = Vec::new();
    for i in 0..60 {
        // Every third file is remembered in a static list; the others only churn.
        let name = if i % 3 == 0 { format!("remember{i}.arena") } else { format!("other{i}.arena") };
        let path = format!("dir{i}/{name}");
        if i % 3 == 0 {
            remembered.push(path.clone());
        }
        let file = host.chunk_file(&path, &format!("file {i}\n"));
        assert_eq!(file.chunker, "arena-probe", "{:?}", file.failures);
        let mut expected = remembered.clone();
        expected.sort();
        assert_eq!(file.chunks[0].references, expected, "call {i}: the static list was damaged");
    }
}

#[test]
fn a_file_larger_than_the_arena_chunks_and_the_arena_grows() {
    let cache = tempfile::tempdir().unwrap();
    let host = host_with(&["arena"], cache.path());
    let first = host.chunk_file("a.arena", "small\n");
    let region = reported(&first, "region");
    let big = "x".repeat(63) + "\n";
    let big = big.repeat(usize::try_from(region).unwrap() * 3 / 2 / 64);
    let file = host.chunk_file("big.arena", &big);
    assert_eq!(file.chunker, "arena-probe", "{:?}", file.failures);
    assert_eq!(file.chunks.last().map(|c| c.end_byte as usize), Some(big.len()), "the chunks reach the end of the file");
    let after = host.chunk_file("b.arena", "small\n");
    assert!(reported(&after, "region") > region, "the arena did not grow: {:?}", after.chunks[0].metadata);
    assert_eq!(reported(&after, "live"), 2);
}
