//! A per-thread cache of freed allocations by layout: where a spawned task's tracker
//! ([`Shared`](crate::shared::Shared)) leaves its block when its last handle goes, for
//! the thread's next spawn.
//!
//! Every spawn allocates one tracker and frees it when the `Child` and the job are both
//! done: a `malloc` and a `free` per life cycle, which on glibc often take the slow
//! paths that tokio's 128-byte-aligned task allocations leave behind (split chunks,
//! `unlink_chunk`), ~150-300 instructions. The pid cache of `uproc-pidns` does the same
//! for pids.
//!
//! ```text
//!  alloc(layout)   ─► a cached block of exactly this layout? ─ yes ─► it
//!                                                            └ no ──► std::alloc
//!  dealloc(block)  ─► room in this thread's cache? ─ yes ─► keep it (value dropped)
//!                                                 └ no ──► std::alloc::dealloc
//!  thread exit     ─► every kept block to std::alloc::dealloc
//! ```
//!
//! Only the owning thread touches its cache (`thread_local!`); a block in it holds no
//! value (the caller dropped it) and is reachable from nowhere else. Blocks move between
//! threads freely: one allocated here may be cached by whichever thread frees it. At most
//! [`CACHED`] blocks per thread, so the memory held is a few hundred bytes. Under loom
//! the cache is bypassed (the models run on one OS thread and test the counts, not the
//! allocator).
#![allow(unsafe_code)]

use std::alloc::Layout;
use std::ptr::NonNull;

/// Blocks one thread keeps: one per life cycle in flight on it is what a spawn/await
/// loop needs; a few more absorb bursts.
#[cfg(not(loom))]
const CACHED: usize = 4;

/// A block of memory of `Layout` `layout`, from `std::alloc::alloc`.
#[cfg(not(loom))]
struct Block {
    ptr: NonNull<u8>,
    layout: Layout,
}

#[cfg(not(loom))]
struct BlockCache(uproc_abi::stash::Stash<Block, CACHED>);

#[cfg(not(loom))]
impl Drop for BlockCache {
    fn drop(&mut self) {
        while let Some(b) = self.0.pop() {
            // SAFETY: `b.ptr` was allocated by `std::alloc::alloc` with `b.layout` and is
            // held by nothing but this cache (see the module docs).
            unsafe { std::alloc::dealloc(b.ptr.as_ptr(), b.layout) };
        }
    }
}

#[cfg(not(loom))]
thread_local! {
    // Const-initialised: no lazy-initialisation check on the spawn path.
    static CACHE: std::cell::RefCell<BlockCache> = const {
        std::cell::RefCell::new(BlockCache(uproc_abi::stash::Stash::new()))
    };
}

/// A block for `layout` (not zero-sized): a cached one of exactly this layout, else a
/// new one. Aborts, as `Box::new` does, if the allocator fails.
#[inline]
pub(crate) fn alloc(layout: Layout) -> NonNull<u8> {
    debug_assert!(layout.size() > 0, "no zero-sized blocks");
    #[cfg(not(loom))]
    {
        // The last kept block, if it has this layout (the one just freed: warm).
        let cached = CACHE
            .try_with(|c| c.borrow_mut().0.pop_if(|b| b.layout == layout))
            .ok()
            .flatten()
            .map(|b| b.ptr);
        if let Some(ptr) = cached {
            return ptr;
        }
    }
    // SAFETY: `layout` has a non-zero size (asserted above; every caller's type is
    // non-empty).
    let ptr = unsafe { std::alloc::alloc(layout) };
    NonNull::new(ptr).unwrap_or_else(|| std::alloc::handle_alloc_error(layout))
}

/// Gives back a block from [`alloc`] with the same `layout`, whose value the caller has
/// dropped.
///
/// # Safety
/// `ptr` came from [`alloc`] with this `layout`, holds no live value, and nothing uses
/// it afterwards.
#[inline]
pub(crate) unsafe fn dealloc(ptr: NonNull<u8>, layout: Layout) {
    #[cfg(not(loom))]
    {
        let kept = CACHE
            .try_with(|c| c.borrow_mut().0.push(Block { ptr, layout }).is_ok())
            .unwrap_or(false);
        if kept {
            return;
        }
    }
    // SAFETY: the caller's obligation: allocated by `std::alloc::alloc` (through
    // `alloc`) with `layout`, and no longer used.
    unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) };
}

/// Blocks this thread's cache holds (tests).
#[cfg(all(test, not(loom)))]
pub(crate) fn cached() -> usize {
    CACHE.with(|c| c.borrow().0.len())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_freed_block_is_reused_for_the_same_layout_only() {
        std::thread::spawn(|| {
            let l = Layout::new::<[u64; 6]>();
            let a = alloc(l);
            // SAFETY: from `alloc` with `l`, nothing in it, not used again.
            unsafe { dealloc(a, l) };
            assert_eq!(cached(), 1);
            let other = Layout::new::<[u64; 7]>();
            let b = alloc(other);
            assert_ne!(b, a, "another layout: not the kept block");
            assert_eq!(cached(), 1);
            let c = alloc(l);
            assert_eq!(c, a, "the kept block of this layout");
            assert_eq!(cached(), 0);
            // SAFETY: as above.
            unsafe {
                dealloc(b, other);
                dealloc(c, l);
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn the_cache_is_bounded() {
        std::thread::spawn(|| {
            let l = Layout::new::<[u8; 40]>();
            let blocks: Vec<_> = (0..10).map(|_| alloc(l)).collect();
            for b in blocks {
                // SAFETY: from `alloc` with `l`, nothing in it, not used again.
                unsafe { dealloc(b, l) };
            }
            assert_eq!(cached(), CACHED);
        })
        .join()
        .unwrap();
    }
}
