//! The pid cache: where a dead pid's allocation waits for the next `alloc_pid` of the
//! same thread.
//!
//! Linux allocates every `struct pid` from a slab cache (`ns->pid_cachep`,
//! `kmem_cache_alloc` in `alloc_pid`, `kmem_cache_free` in `put_pid`), whose per-CPU
//! free lists make a fork's allocation and a reap's free a few instructions each. Here
//! a pid is an `Arc<Pid>`, allocated by the global allocator; a plain drop of its last
//! reference costs two atomics (the strong and the weak count) and a `free`, and the
//! next fork a `malloc`: about 140 instructions of glibc per life cycle on this path
//! alone. So, per thread, a small cache of *emptied* pid allocations:
//!
//! ```text
//!  put_pid(last Arc<Pid>) ──► Arc::get_mut: unique? ─ no ──► plain drop (others hold it)
//!                                  │ yes
//!                                  ▼
//!            drop the Pid in place (its namespace reference goes back now, as
//!            Linux's put_pid does) and keep the ArcInner, counts 1/1, value dead
//!                                  │
//!   thread-local cache of 8    ◄───┘ (full, or the thread's cache gone: free it)
//!          │
//!          ▼
//!  alloc_pid ──► new_pid(value): write the new Pid into a cached ArcInner,
//!                else into a new one
//! ```
//!
//! Who may touch what: only the owning thread reads or writes its cache (a
//! `thread_local!`); an entry is an `ArcInner<Pid>` whose strong and weak counts are
//! the ones `Arc::get_mut` left (1 and 1, no `Weak` outstanding) and whose value has
//! been dropped, so no handle to it exists anywhere. The thread's exit frees every
//! entry (as `Arc<MaybeUninit<Pid>>`, which drops nothing).
//!
//! Only [`put_pid`] feeds the cache: a task list hands its task's pid to it when the
//! task's object is dropped (the common last reference). Every other holder (a pidfd,
//! a process-group id, the pid table) drops its `Arc` plainly, and the allocation goes
//! back to the allocator as before. Nothing observable changes: the `Pid`'s drop runs
//! at the same moment as it would have.
//!
//! The cache itself is `uproc_abi::arc_cache` (shared with the task cache of
//! `uproc-tasklist`): this module is its pid instance and the two entry points.

use std::cell::RefCell;
use std::sync::Arc;

use uproc_abi::arc_cache::{ArcCache, empty_if_unique};

use crate::pid::Pid;

/// Emptied allocations a thread keeps: one is all a fork/exit/reap loop needs; a few
/// more absorb a burst of reaps, and the bound keeps memory held per thread tiny.
const CACHED: usize = 8;

thread_local! {
    // Const-initialised: no lazy-initialisation check on the fork and reap paths.
    static CACHE: RefCell<ArcCache<Pid, CACHED>> = const { RefCell::new(ArcCache::new()) };
}

/// `kmem_cache_alloc` of a pid: `value` in an allocation this thread's cache kept,
/// else in a new one.
#[inline]
pub(crate) fn new_pid(value: Pid) -> Arc<Pid> {
    let cached = CACHE.try_with(|c| c.borrow_mut().pop()).ok().flatten();
    cached.unwrap_or_default().fill(value)
}

/// `put_pid`: drops a reference to a pid. When it is the last one (no other `Arc`
/// and no `Weak`), the pid is dropped now, as any last drop would, but its allocation
/// stays with this thread for the next `alloc_pid` (the pid slab cache of Linux).
/// Otherwise a plain drop.
///
/// # References
/// `put_pid` in `kernel/pid.c`.
#[inline]
pub fn put_pid(pid: Arc<Pid>) {
    if let Some(emptied) = empty_if_unique(pid) {
        // Full, or the thread's cache gone: the emptied allocation is freed.
        let _ = CACHE.try_with(|c| c.borrow_mut().push(emptied));
    }
}

/// How many emptied allocations this thread's cache holds (tests).
#[doc(hidden)]
pub fn cached_pids() -> usize {
    CACHE.try_with(|c| c.borrow().len()).unwrap_or(0)
}
