//! Inode number allocators.
//!
//! - `Linux618`: one `u64` counter that lives with the ordered index (see
//!   [`crate::index`]), advanced under the index mutex, itself taken only "under
//!   `pidmap_lock`": numbers are handed out in creation order.
//! - `Linux70` and `Scalable`: [`InoCookie`], Linux's `gen_cookie_next`: each thread takes a batch of
//!   numbers from a shared atomic counter and hands them out without touching shared
//!   memory until the batch runs out. Unique, never reused, but not ordered across
//!   threads.

use crate::sync::{AtomicU64, Ordering, thread_local};
use std::cell::RefCell;
use std::sync::atomic::AtomicU64 as StdAtomicU64;

/// Distinguishes allocator instances in the per-thread batch cache, so that two runtimes
/// in one process never hand out numbers from one batch. Never 0 (0 marks a free slot).
static NEXT_COOKIE_ID: StdAtomicU64 = StdAtomicU64::new(1);

/// How many allocators a thread keeps a batch for; a thread that alternates between more
/// runtimes than this throws away the rest of a batch (a gap, never a duplicate).
const CACHED: usize = 4;

/// One cached batch: numbers `next..end` belong to allocator `id` and to this thread.
#[derive(Clone, Copy)]
struct Batch {
    id: u64,
    next: u64,
    end: u64,
}

struct Cache {
    batches: [Batch; CACHED],
    /// Round-robin victim for a miss.
    victim: usize,
    /// The batch used last: a thread forking in one runtime finds it first try.
    last: usize,
}

#[cfg(not(loom))]
thread_local! {
    // Const-initialised: no lazy-initialisation check on the fork path.
    static BATCHES: RefCell<Cache> = const { RefCell::new(Cache::EMPTY) };
}
#[cfg(loom)]
thread_local! {
    static BATCHES: RefCell<Cache> = RefCell::new(Cache::EMPTY);
}

impl Cache {
    const EMPTY: Cache = Cache {
        batches: [Batch {
            id: 0,
            next: 0,
            end: 0,
        }; CACHED],
        victim: 0,
        last: 0,
    };
}

/// `gen_cookie_next` for one runtime: unique `u64` numbers starting at 1, taken in
/// per-thread batches of a shared counter.
///
/// ```
/// let c = uproc_pidfs::InoCookie::new(4);
/// assert_eq!(c.next(), 1);
/// assert_eq!(c.next(), 2);
/// ```
///
/// # Ordering
/// The shared counter is only ever `fetch_add`ed: atomicity alone makes the batches
/// disjoint, so `Relaxed` suffices. The numbers publish nothing; the index that maps
/// them to pids has its own locks.
///
/// # References
/// `DEFINE_COOKIE` / `gen_cookie_next` in `include/linux/cookie.h`; `pidfs_alloc_ino`
/// in `fs/pidfs.c` (7.0).
pub struct InoCookie {
    id: u64,
    batch: u64,
    shared: AtomicU64,
}

impl InoCookie {
    /// A fresh allocator whose threads take `batch` numbers at a time (at least 1).
    pub fn new(batch: u64) -> InoCookie {
        InoCookie {
            id: NEXT_COOKIE_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            batch: batch.max(1),
            shared: AtomicU64::new(1),
        }
    }

    /// The next number for the calling thread.
    pub fn next(&self) -> u64 {
        BATCHES.with(|cache| {
            let mut cache = cache.borrow_mut();
            let last = cache.last;
            let b = &mut cache.batches[last];
            if b.id == self.id && b.next != b.end {
                b.next += 1;
                return b.next - 1;
            }
            self.next_slow(&mut cache)
        })
    }

    #[cold]
    fn next_slow(&self, cache: &mut Cache) -> u64 {
        let slot = match cache.batches.iter().position(|b| b.id == self.id) {
            Some(i) => i,
            None => {
                let i = cache.victim;
                cache.victim = (i + 1) % CACHED;
                cache.batches[i] = Batch {
                    id: self.id,
                    next: 0,
                    end: 0,
                };
                i
            }
        };
        cache.last = slot;
        let b = &mut cache.batches[slot];
        if b.next == b.end {
            let start = self.shared.fetch_add(self.batch, Ordering::Relaxed);
            b.next = start;
            b.end = start + self.batch;
        }
        let ino = b.next;
        b.next += 1;
        ino
    }
}

impl std::fmt::Debug for InoCookie {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InoCookie")
            .field("id", &self.id)
            .field("batch", &self.batch)
            .finish_non_exhaustive()
    }
}
