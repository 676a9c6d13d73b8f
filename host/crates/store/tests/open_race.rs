//! Processes that open one fresh database at the same moment (two `index`
//! runs, an `index` and `serve`) all get it. Switching a new database to WAL
//! answers "database is locked" at once to all but one of them, without
//! waiting for the busy timeout; the store waits and tries again.

use std::sync::Barrier;

use code_intel_store::Store;

#[test]
fn a_fresh_database_opened_by_many_at_once_opens_for_all() {
    const THREADS: usize = 6;
    const ROUNDS: usize = 120;
    let mut failures = Vec::new();
    for round in 0..ROUNDS {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".code-intel").join("index.db");
        let barrier = Barrier::new(THREADS);
        let errors: Vec<String> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        Store::open(&path).err().map(|e| e.to_string())
                    })
                })
                .collect();
            handles.into_iter().filter_map(|h| h.join().unwrap()).collect()
        });
        failures.extend(errors.into_iter().map(|e| format!("round {round}: {e}")));
    }
    assert!(failures.is_empty(), "{} of {} opens failed: {:?}", failures.len(), THREADS * ROUNDS, &failures[..failures.len().min(5)]);
}
