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
//!   thread-local Stash of 8    ◄───┘ (full, or the thread's cache gone: free it)
//!          │
//!          ▼
//!  alloc_pid ──► new_pid(value): write the new Pid into a cached ArcInner
//!                (Arc::from_raw), else Arc::new
//! ```
//!
//! Who may touch what: only the owning thread reads or writes its cache (a
//! `thread_local!`); an entry is an `ArcInner<Pid>` whose strong and weak counts are
//! the ones `Arc::get_mut` left (1 and 1, no `Weak` outstanding) and whose value has
//! been dropped, so no handle to it exists anywhere. The thread's exit frees every
//! entry (as `Arc<ManuallyDrop<Pid>>`, which has the same layout and drops nothing).
//!
//! Only [`put_pid`] feeds the cache: a task list hands its task's pid to it when the
//! task's object is dropped (the common last reference). Every other holder (a pidfd,
//! a process-group id, the pid table) drops its `Arc` plainly, and the allocation goes
//! back to the allocator as before. Nothing observable changes: the `Pid`'s drop runs
//! at the same moment as it would have.
#![allow(unsafe_code)]

use std::cell::RefCell;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::Arc;

use uproc_abi::stash::Stash;

use crate::pid::Pid;

/// Emptied allocations a thread keeps: one is all a fork/exit/reap loop needs; a few
/// more absorb a burst of reaps, and the bound keeps memory held per thread tiny.
const CACHED: usize = 8;

/// One thread's emptied pid allocations.
struct PidCache(Stash<NonNull<Pid>, CACHED>);

impl Drop for PidCache {
    fn drop(&mut self) {
        while let Some(raw) = self.0.pop() {
            free_emptied(raw);
        }
    }
}

/// Frees an emptied pid allocation (one the cache kept or has no room for).
fn free_emptied(raw: NonNull<Pid>) {
    // SAFETY: `raw` came from `Arc::<Pid>::into_raw` of a unique `Arc` whose value was
    // dropped in place (see `put_pid`): its counts are 1 and 1 and no handle exists.
    // `ManuallyDrop<Pid>` has `Pid`'s size and alignment, so `Arc::from_raw` may take it
    // as one, and its drop frees the allocation without dropping the dead value again.
    drop(unsafe { Arc::from_raw(raw.as_ptr().cast::<ManuallyDrop<Pid>>()) });
}

thread_local! {
    // Const-initialised: no lazy-initialisation check on the fork and reap paths.
    static CACHE: RefCell<PidCache> = const { RefCell::new(PidCache(Stash::new())) };
}

/// `kmem_cache_alloc` of a pid: `value` in an allocation this thread's cache kept,
/// else in a new one.
#[inline]
pub(crate) fn new_pid(value: Pid) -> Arc<Pid> {
    let cached = CACHE.try_with(|c| c.borrow_mut().0.pop()).ok().flatten();
    match cached {
        Some(raw) => {
            // SAFETY: a cache entry is an `ArcInner<Pid>` with counts 1 and 1 whose
            // value was dropped and to which no handle exists (see `put_pid`); writing
            // a value makes it a live pid again, and the `Arc` rebuilt from the pointer
            // `Arc::into_raw` gave is its one strong reference.
            unsafe {
                raw.as_ptr().write(value);
                Arc::from_raw(raw.as_ptr())
            }
        }
        None => Arc::new(value),
    }
}

/// `put_pid`: drops a reference to a pid. When it is the last one (no other `Arc`
/// and no `Weak`), the pid is dropped now, as any last drop would, but its allocation
/// stays with this thread for the next `alloc_pid` (the pid slab cache of Linux).
/// Otherwise a plain drop.
///
/// # References
/// `put_pid` in `kernel/pid.c`.
#[inline]
pub fn put_pid(mut pid: Arc<Pid>) {
    if Arc::get_mut(&mut pid).is_none() {
        return; // drop(pid): another handle holds it
    }
    let raw = Arc::into_raw(pid).cast_mut();
    // SAFETY: `Arc::get_mut` succeeded, so this was the only `Arc` and no `Weak`
    // exists; `into_raw` consumed it, so nothing else can reach the value, and
    // dropping it in place is the drop the last `Arc` would have run. The allocation
    // (counts still 1 and 1) is kept or freed below, never used as a `Pid` again
    // until `new_pid` writes one.
    unsafe { raw.drop_in_place() };
    // SAFETY: from `Arc::into_raw`, never null.
    let raw = unsafe { NonNull::new_unchecked(raw) };
    let kept = CACHE
        .try_with(|c| c.borrow_mut().0.push(raw).is_ok())
        .unwrap_or(false);
    if !kept {
        free_emptied(raw);
    }
}

/// How many emptied allocations this thread's cache holds (tests).
#[doc(hidden)]
pub fn cached_pids() -> usize {
    CACHE.try_with(|c| c.borrow().0.len()).unwrap_or(0)
}
