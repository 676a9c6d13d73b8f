//! Keeping the encoder's tensor memory mapped between batches.
//!
//! Every operation of a forward pass allocates a fresh tensor, and the large
//! ones (a batch's attention scores and feed-forward activations, tens of
//! megabytes) are above glibc's mmap threshold: each is mapped, touched page
//! by page and unmapped again, so the kernel zeroes the same memory for every
//! layer of every batch. Measured with all-MiniLM-L6-v2 on 2 cores, that was
//! about a fifth of the encoder's CPU time spent in the kernel
//! (`bench/embed-throughput`: 7.3 s system time for 25 s user). Serving
//! those blocks from the heap and not trimming it after each batch removes
//! nearly all of it; the price is that the process keeps its peak encoder
//! memory (a few hundred megabytes with the default batch) once it has
//! embedded.

use std::sync::Once;

/// Blocks up to this size come from the heap instead of their own mapping.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: i32 = 512 * 1024 * 1024;

/// Free memory at the top of the heap is returned to the system only above this.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD: i32 = 1024 * 1024 * 1024;

/// Extra memory asked of the system whenever the heap grows, and kept when
/// it shrinks: a batch's blocks then reuse pages already mapped.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TOP_PAD: i32 = 256 * 1024 * 1024;

/// Tunes the C allocator once per process, before the first batch. Only
/// glibc needs it; elsewhere this does nothing.
pub fn keep_tensor_memory() {
    static TUNED: Once = Once::new();
    TUNED.call_once(tune);
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn tune() {
    // SAFETY: `mallopt` only sets allocator parameters; glibc serialises it
    // against concurrent allocation, and any value is valid for these three
    // parameters (it returns 0 if it refuses one, which leaves the default).
    let (mmap, trim, pad) = unsafe {
        (
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD),
            libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD),
            libc::mallopt(libc::M_TOP_PAD, TOP_PAD),
        )
    };
    tracing::debug!(mmap, trim, pad, "allocator tuned for tensor memory (1 = applied)");
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune() {}
