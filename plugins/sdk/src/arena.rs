//! The plugin's heap: a bump arena that rewinds whenever nothing in it is
//! live, in front of the default allocator.
//!
//! A plugin call makes thousands of small, short-lived allocations (node
//! texts, names, chunk strings, metadata) and frees every one of them by the
//! time the host has read the result: the call drops what it built, and the
//! component's post-return frees the returned chunks. The default allocator
//! of `wasm32-wasip2` (dlmalloc) spends about a fifth of a plugin's time
//! keeping free lists for memory that is about to be given back all at once.
//!
//! [`CallArena`] hands out memory by moving a pointer and counts the
//! allocations it has out. A free decrements the count (and takes back the
//! space when it was the latest allocation); when the count reaches zero,
//! nothing in the arena is referenced any more and it starts again from its
//! first byte. No hook into the call is needed, and nothing depends on the
//! plugin being well behaved:
//!
//! - Memory that outlives a call (a static cache, a leaked value) keeps the
//!   count above zero. The arena then does not rewind: it fills up and
//!   further allocations go to the default allocator, as if there were no
//!   arena. Nothing is ever reused while it is referenced.
//! - A call that needs more than the arena holds is served by the default
//!   allocator past that point; at the next rewind the arena doubles, up to
//!   [`MAX_REGION_BYTES`].
//!
//! The SDK installs it as the global allocator of every plugin built for
//! WebAssembly (single-threaded, so it needs no locking). Native builds,
//! such as a plugin's unit tests, keep the system allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;

/// The first region's size. A typical source file's call allocates a few
/// hundred KiB in all.
pub const FIRST_REGION_BYTES: usize = 1 << 20;

/// The largest region the arena grows to; allocations past it come from the
/// default allocator. Well under the host's 256 MiB per instance.
pub const MAX_REGION_BYTES: usize = 64 << 20;

const REGION_ALIGN: usize = 16;

/// A bump allocator over one region taken from [`System`], rewound when its
/// live allocations reach zero (module documentation).
pub struct CallArena {
    state: UnsafeCell<State>,
}

struct State {
    /// Start of the region, 0 before the first allocation.
    base: usize,
    /// First free byte.
    top: usize,
    /// End of the region.
    end: usize,
    /// Allocations handed out from the region and not yet freed.
    live: usize,
    /// Size of the region to take at the next rewind.
    next_size: usize,
}

// SAFETY: the arena is only installed on WebAssembly targets without the
// `atomics` feature, where there is a single thread. Tests use their own
// instance from one thread.
#[allow(unsafe_code)]
unsafe impl Sync for CallArena {}

impl CallArena {
    /// An arena that takes its first region on first use.
    #[must_use]
    pub const fn new() -> Self {
        Self { state: UnsafeCell::new(State { base: 0, top: 0, end: 0, live: 0, next_size: FIRST_REGION_BYTES }) }
    }

    /// Allocations out of the region (not those served by the default allocator).
    #[must_use]
    pub fn live(&self) -> usize {
        self.state().live
    }

    /// Bytes of the region in use, from its start to the first free byte.
    #[must_use]
    pub fn used(&self) -> usize {
        let state = self.state();
        state.top - state.base
    }

    /// Size of the current region (0 before the first allocation).
    #[must_use]
    pub fn region_size(&self) -> usize {
        let state = self.state();
        state.end - state.base
    }

    #[allow(unsafe_code, clippy::mut_from_ref)]
    fn state(&self) -> &mut State {
        // SAFETY: single-threaded (see `Sync` above), and no reference to
        // the state outlives one method of this type.
        unsafe { &mut *self.state.get() }
    }

    fn contains(state: &State, address: usize) -> bool {
        address >= state.base && address < state.end
    }

    /// Takes a region of `next_size` bytes from the default allocator.
    #[allow(unsafe_code)]
    fn take_region(state: &mut State) -> bool {
        let Ok(layout) = Layout::from_size_align(state.next_size, REGION_ALIGN) else { return false };
        // SAFETY: the layout has a non-zero size.
        let base = unsafe { System.alloc(layout) } as usize;
        if base == 0 {
            return false;
        }
        *state = State { base, top: base, end: base + state.next_size, live: 0, next_size: state.next_size };
        true
    }

    /// Bump-allocates `layout` from the region, or `None` when it does not fit.
    fn bump(state: &mut State, layout: Layout) -> Option<*mut u8> {
        if state.base == 0 && !Self::take_region(state) {
            return None;
        }
        let start = state.top.checked_add(layout.align() - 1)? & !(layout.align() - 1);
        let end = start.checked_add(layout.size())?;
        if end > state.end {
            // Past the region: the next region, taken at the next rewind, is larger.
            state.next_size = (state.end - state.base).saturating_mul(2).min(MAX_REGION_BYTES);
            return None;
        }
        state.top = end;
        state.live += 1;
        Some(start as *mut u8)
    }

    /// Called with the region empty: start again from its first byte, or
    /// give it back for a larger one.
    #[allow(unsafe_code)]
    fn rewind(state: &mut State) {
        let size = state.end - state.base;
        if state.next_size > size {
            // SAFETY: the region was allocated with this layout by `take_region`.
            unsafe { System.dealloc(state.base as *mut u8, Layout::from_size_align_unchecked(size, REGION_ALIGN)) };
            *state = State { base: 0, top: 0, end: 0, live: 0, next_size: state.next_size };
        } else {
            state.top = state.base;
        }
    }
}

impl Default for CallArena {
    fn default() -> Self {
        Self::new()
    }
}

#[allow(unsafe_code)]
// SAFETY: every pointer handed out is either from the region, unique until
// freed (the region is reused only when no allocation from it is live), or
// from `System`; `dealloc` and `realloc` tell them apart by address.
unsafe impl GlobalAlloc for CallArena {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let state = self.state();
        match Self::bump(state, layout) {
            Some(pointer) => pointer,
            // SAFETY: `layout` comes from the caller, as `GlobalAlloc` requires.
            None => unsafe { System.alloc(layout) },
        }
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        let state = self.state();
        let address = pointer as usize;
        if !Self::contains(state, address) {
            // SAFETY: not from the region, so from `System` with this layout.
            unsafe { System.dealloc(pointer, layout) };
            return;
        }
        state.live -= 1;
        if state.live == 0 {
            Self::rewind(state);
        } else if address + layout.size() == state.top {
            // The latest allocation (a temporary): its space is free again.
            state.top = address;
        }
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let state = self.state();
        let address = pointer as usize;
        if !Self::contains(state, address) {
            // SAFETY: from `System` with this layout; the caller's contract holds.
            return unsafe { System.realloc(pointer, layout, new_size) };
        }
        if address + layout.size() == state.top && address + new_size <= state.end {
            // The latest allocation grows or shrinks in place.
            state.top = address + new_size;
            return pointer;
        }
        if new_size <= layout.size() {
            return pointer;
        }
        // SAFETY: `new_size` is non-zero and, with the old alignment, a valid
        // layout (the caller's contract).
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: as for `alloc`.
        let moved = unsafe { self.alloc(new_layout) };
        if !moved.is_null() {
            // SAFETY: both blocks are at least `layout.size()` long and distinct.
            unsafe {
                std::ptr::copy_nonoverlapping(pointer, moved, layout.size());
                self.dealloc(pointer, layout);
            }
        }
        moved
    }
}

/// The plugin's global allocator (WebAssembly builds only).
#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics"), feature = "call-arena"))]
#[global_allocator]
static PLUGIN_HEAP: CallArena = CallArena::new();

/// The arena installed as this plugin's global allocator: `None` in native
/// builds and with the `call-arena` feature off. For diagnostics: at the
/// start of a call, [`CallArena::live`] counts what earlier calls left
/// behind plus the call's own arguments.
#[must_use]
pub fn global() -> Option<&'static CallArena> {
    #[cfg(all(target_arch = "wasm32", not(target_feature = "atomics"), feature = "call-arena"))]
    return Some(&PLUGIN_HEAP);
    #[cfg(not(all(target_arch = "wasm32", not(target_feature = "atomics"), feature = "call-arena")))]
    None
}

#[cfg(test)]
#[allow(unsafe_code)]
mod tests {
    use super::*;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    /// Allocates and fills with `byte`.
    fn filled(arena: &CallArena, size: usize, byte: u8) -> *mut u8 {
        let p = unsafe { arena.alloc(layout(size, 8)) };
        assert!(!p.is_null());
        unsafe { std::ptr::write_bytes(p, byte, size) };
        p
    }

    fn holds(p: *mut u8, size: usize, byte: u8) -> bool {
        unsafe { std::slice::from_raw_parts(p, size) }.iter().all(|b| *b == byte)
    }

    #[test]
    fn allocations_bump_and_respect_alignment() {
        let arena = CallArena::new();
        let a = unsafe { arena.alloc(layout(3, 1)) } as usize;
        let b = unsafe { arena.alloc(layout(8, 8)) } as usize;
        let c = unsafe { arena.alloc(layout(1, 64)) } as usize;
        assert_eq!(a % REGION_ALIGN, 0);
        assert_eq!(b, (a + 3).next_multiple_of(8));
        assert_eq!(c % 64, 0);
        assert!(c > b);
        assert_eq!(arena.live(), 3);
        assert_eq!(arena.region_size(), FIRST_REGION_BYTES);
    }

    #[test]
    fn the_arena_rewinds_when_nothing_in_it_is_live() {
        let arena = CallArena::new();
        let first = filled(&arena, 100, 1);
        let second = filled(&arena, 100, 2);
        unsafe { arena.dealloc(first, layout(100, 8)) };
        assert_eq!(arena.live(), 1);
        assert!(arena.used() >= 200, "a free that is not the latest allocation does not move the top");
        assert!(holds(second, 100, 2));
        unsafe { arena.dealloc(second, layout(100, 8)) };
        assert_eq!((arena.live(), arena.used()), (0, 0));
        assert_eq!(filled(&arena, 10, 3), first, "the next allocation starts over at the region's start");
    }

    #[test]
    fn freeing_the_latest_allocation_gives_its_space_back() {
        let arena = CallArena::new();
        let kept = filled(&arena, 16, 1);
        let temporary = filled(&arena, 64, 2);
        unsafe { arena.dealloc(temporary, layout(64, 8)) };
        assert_eq!(arena.used(), 16);
        assert_eq!(filled(&arena, 8, 3), temporary);
        assert!(holds(kept, 16, 1));
    }

    #[test]
    fn memory_that_outlives_a_call_is_never_reused() {
        let arena = CallArena::new();
        // A static cache filled during the first call.
        let cached = filled(&arena, 32, 0xAB);
        for call in 0..1_000u32 {
            let size = 100 + (call as usize % 900);
            let pieces: Vec<*mut u8> = (0..20u8).map(|i| filled(&arena, size, i)).collect();
            for (i, p) in pieces.into_iter().enumerate() {
                assert!(holds(p, size, i as u8));
                unsafe { arena.dealloc(p, layout(size, 8)) };
            }
            assert!(holds(cached, 32, 0xAB), "call {call} overwrote memory that is still live");
        }
        assert_eq!(arena.live(), 1);
    }

    #[test]
    fn a_full_region_falls_back_to_the_system_and_grows_at_the_rewind() {
        let arena = CallArena::new();
        let big = FIRST_REGION_BYTES / 2 + 1;
        let a = filled(&arena, big, 1);
        let b = filled(&arena, big, 2); // does not fit: from the system
        assert_eq!(arena.live(), 1);
        assert!(holds(a, big, 1) && holds(b, big, 2));
        unsafe { arena.dealloc(b, layout(big, 8)) };
        assert_eq!(arena.region_size(), FIRST_REGION_BYTES, "the region is not replaced while it is in use");
        unsafe { arena.dealloc(a, layout(big, 8)) };
        let c = filled(&arena, big, 3);
        let d = filled(&arena, big, 4);
        assert_eq!(arena.region_size(), 2 * FIRST_REGION_BYTES);
        assert_eq!(arena.live(), 2, "both now fit in the larger region");
        unsafe {
            arena.dealloc(c, layout(big, 8));
            arena.dealloc(d, layout(big, 8));
        }
    }

    #[test]
    fn regions_stop_growing_at_the_limit() {
        let arena = CallArena::new();
        for _ in 0..12 {
            let p = filled(&arena, 8, 1);
            let size = arena.region_size() + 1;
            let q = filled(&arena, size, 2);
            unsafe {
                arena.dealloc(q, layout(size, 8));
                arena.dealloc(p, layout(8, 8));
            }
        }
        let _ = filled(&arena, 8, 1);
        assert_eq!(arena.region_size(), MAX_REGION_BYTES);
    }

    #[test]
    fn realloc_grows_the_latest_allocation_in_place_and_moves_others() {
        let arena = CallArena::new();
        let a = filled(&arena, 16, 7);
        let grown = unsafe { arena.realloc(a, layout(16, 8), 64) };
        assert_eq!(grown, a, "the latest allocation grows in place");
        assert_eq!(arena.used(), 64);
        let b = filled(&arena, 8, 9);
        let moved = unsafe { arena.realloc(a, layout(64, 8), 128) };
        assert_ne!(moved, a);
        assert!(holds(moved, 16, 7), "the contents move with it");
        assert_eq!(arena.live(), 2);
        let shrunk = unsafe { arena.realloc(moved, layout(128, 8), 32) };
        assert_eq!(shrunk, moved);
        unsafe {
            arena.dealloc(b, layout(8, 8));
            arena.dealloc(shrunk, layout(32, 8));
        }
        assert_eq!((arena.live(), arena.used()), (0, 0));
    }

    #[test]
    fn random_traffic_never_hands_out_live_memory() {
        // A fixed pseudo-random sequence of allocations, frees and reallocs,
        // each block filled with its own byte and checked before it is freed.
        let arena = CallArena::new();
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut blocks: Vec<(*mut u8, usize, u8)> = Vec::new();
        for step in 0..20_000u32 {
            let roll = next() % 10;
            if roll < 5 || blocks.is_empty() {
                let size = 1 + (next() % 4_000) as usize;
                let byte = (step % 251) as u8;
                blocks.push((filled(&arena, size, byte), size, byte));
            } else if roll < 8 {
                let (p, size, byte) = blocks.swap_remove((next() % blocks.len() as u64) as usize);
                assert!(holds(p, size, byte), "step {step}: a block was overwritten");
                unsafe { arena.dealloc(p, layout(size, 8)) };
            } else {
                let i = (next() % blocks.len() as u64) as usize;
                let (p, size, byte) = blocks[i];
                let new_size = 1 + (next() % 8_000) as usize;
                let q = unsafe { arena.realloc(p, layout(size, 8), new_size) };
                assert!(holds(q, size.min(new_size), byte), "step {step}: realloc lost the contents");
                unsafe { std::ptr::write_bytes(q, byte, new_size) };
                blocks[i] = (q, new_size, byte);
            }
        }
        for (p, size, byte) in blocks {
            assert!(holds(p, size, byte));
            unsafe { arena.dealloc(p, layout(size, 8)) };
        }
        assert_eq!(arena.live(), 0);
    }
}
