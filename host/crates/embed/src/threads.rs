//! How candle's element-wise work is spread over threads (it matters for the
//! `reference` forward pass; the default packed pass runs its element-wise
//! work on the worker's own thread anyway).
//!
//! candle runs element-wise operations (additions, GELU, softmax, layer
//! norms) on a process-wide pool of its own that takes one caller at a time.
//! The encoder already runs one batch per core (see [`crate::encoder`]), so
//! with that pool the workers queue for it and wait on each other. Measured
//! with all-MiniLM-L6-v2 on 2 cores (`embed_throughput`, 472 chunks, same
//! binary, alternating runs): 2,845-2,900 tokens/s with candle's pool, 3,254-
//! 3,269 tokens/s with element-wise work on each worker's own thread. A lone
//! batch (one chunk re-indexed) loses that pool's second thread: 117-131 ms
//! became 158-172 ms; a query's embedding is unchanged (~23 ms).

/// The variable candle sizes its element-wise pool from.
pub const CANDLE_THREADS_ENV: &str = "CANDLE_NUM_THREADS";

/// Makes candle run element-wise work on the calling thread (an empty pool),
/// unless the user set [`CANDLE_THREADS_ENV`] themselves. Does nothing once
/// candle has built its pool.
///
/// # Safety
/// Sets an environment variable: call it while the process has a single
/// thread (first thing in `main`), as for [`std::env::set_var`].
#[allow(unsafe_code)]
pub unsafe fn run_elementwise_on_callers() {
    if std::env::var_os(CANDLE_THREADS_ENV).is_none() {
        // SAFETY: the caller guarantees no other thread exists yet.
        unsafe { std::env::set_var(CANDLE_THREADS_ENV, "1") };
    }
}
