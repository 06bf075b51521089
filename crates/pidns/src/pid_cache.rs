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
//!  alloc_pid ──► new_pid(make): write the new Pid into a cached ArcInner,
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
//!
//! A pid of a nested namespace has a second allocation, its boxed numbers (one `Upid`
//! per level, `Numbers::Many`). Those boxes are kept the same way, per thread, by
//! [`new_numbers`] and [`put_numbers`] (the `Pid`'s drop): the numbers are dropped in
//! place (the namespace reference goes back at once) and the box, now
//! `Box<[MaybeUninit<Upid>]>`, waits for the next nested `alloc_pid` of the same depth.
//! Of a nested pid's numbers only the innermost counts its namespace; the outer ones
//! borrow theirs (see [`new_numbers`]).

use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::sync::Arc;

use uproc_abi::arc_cache::{ArcCache, empty_unique};
use uproc_abi::stash::Stash;

use crate::PidNamespace;
use crate::pid::{Pid, Upid};

/// Emptied allocations a thread keeps: one is all a fork/exit/reap loop needs; a few
/// more absorb a burst of reaps, and the bound keeps memory held per thread tiny.
const CACHED: usize = 8;

/// Emptied number boxes a thread keeps (nested pids; any depth, most recent first).
const NUMBERS_CACHED: usize = 4;

/// A box of numbers whose values were dropped (or never written).
type EmptyNumbers = Box<[MaybeUninit<Upid>]>;

thread_local! {
    // Const-initialised: no lazy-initialisation check on the fork and reap paths.
    static CACHE: ArcCache<Pid, CACHED> = const { ArcCache::new() };
    // A `RefCell`: its `pop_if` looks at the kept box (a nested pid's path only).
    static NUMBERS: RefCell<Stash<EmptyNumbers, NUMBERS_CACHED>> =
        const { RefCell::new(Stash::new()) };
}

/// The boxed numbers of a nested pid, `levels` of them, outermost first, for the
/// namespaces `innermost_first` yields (exactly `levels` of them: the pid's namespace
/// and its ancestors), numbered 0 until `alloc_pid` fills them in: in the box of that
/// length this thread kept last, if its most recent one is, else in a new one.
///
/// Only the innermost level's `Upid` holds a count of its namespace. The outer ones
/// hold theirs *borrowed*: a namespace holds its parent, so the innermost namespace
/// keeps every ancestor alive as long as the pid keeps it, and counting each level
/// wrote the root namespace's count, a line every nested fork of the runtime shares,
/// twice per life cycle. A borrowed `Arc` is never dropped ([`put_numbers`] leaves
/// it); anyone else reaches it only by reference through the pid, and a clone of it
/// is an ordinary counted `Arc`.
#[allow(unsafe_code)]
pub(crate) fn new_numbers<'a>(
    levels: usize,
    innermost_first: impl Iterator<Item = &'a Arc<PidNamespace>>,
) -> Box<[Upid]> {
    let kept = NUMBERS
        .try_with(|c| c.borrow_mut().pop_if(|b| b.len() == levels))
        .ok()
        .flatten();
    let mut slots = kept.unwrap_or_else(|| Box::new_uninit_slice(levels));
    let mut written = 0;
    for (k, ns) in innermost_first.take(levels).enumerate() {
        let ns = if k == 0 {
            // `get_pid_ns`: from this thread's credits when the namespace's are open
            // (`PidNamespace::pid_ref_credits`, `Scalable`), else a clone.
            if ns.has_ref_credits() {
                ns.get_for_nested_pid()
            } else {
                Arc::clone(ns)
            }
        } else {
            // SAFETY: a borrowed `Arc` (see above): the pointer is a live `Arc`'s, the
            // innermost level's counted `Arc` keeps this ancestor alive for as long as
            // the `Upid` exists, and `put_numbers` never drops it, so no count is
            // given back that was not taken.
            unsafe { Arc::from_raw(Arc::as_ptr(ns)) }
        };
        slots[levels - 1 - k].write(Upid { nr: 0, ns });
        written += 1;
    }
    // Not a debug assertion: `assume_init` below relies on it (a short iterator would
    // leave numbers unwritten; panicking here leaks the written ones, nothing worse).
    assert_eq!(written, levels, "one number per level");
    // SAFETY: each of the `levels` slots was written exactly once above (indices
    // `levels - 1 - k` for `k` in `0..levels`).
    unsafe { slots.assume_init() }
}

/// The drop of a nested pid's numbers (made by [`new_numbers`]): the innermost level's
/// namespace reference goes back now (the outer levels' are borrowed from it and are
/// left alone), and the box is kept for this thread's next nested `alloc_pid` (else
/// freed, the cache full or the thread's cache gone).
#[allow(unsafe_code)]
pub(crate) fn put_numbers(numbers: Box<[Upid]>) {
    let Some(last) = numbers.len().checked_sub(1) else {
        return;
    };
    let raw: *mut [Upid] = Box::into_raw(numbers);
    // SAFETY: `raw` owns a live `[Upid]` (from `Box::into_raw`) of `last + 1` numbers.
    // The innermost one (`last`) is moved out, once, and its namespace reference goes
    // back (`put_pid_ns`: to this thread's credits when open); the others hold
    // borrowed `Arc`s (`new_numbers`) and a plain `i32`, whose drop must not run: they
    // are simply not dropped. Nothing reads the numbers again. `MaybeUninit<Upid>` has
    // `Upid`'s layout, so the slice's allocation may be owned as a box of them, which
    // frees it without dropping anything.
    let emptied: EmptyNumbers = unsafe {
        let innermost = raw.cast::<Upid>().add(last);
        if (*innermost).ns.has_ref_credits() {
            PidNamespace::put_for_nested_pid(std::ptr::read(innermost).ns);
        } else {
            std::ptr::drop_in_place(innermost);
        }
        Box::from_raw(raw as *mut [MaybeUninit<Upid>])
    };
    let _ = NUMBERS.try_with(|c| c.borrow_mut().push(emptied));
}

/// How many emptied number boxes this thread's cache holds (tests).
#[doc(hidden)]
pub fn cached_numbers() -> usize {
    NUMBERS.try_with(|c| c.borrow().len()).unwrap_or(0)
}

/// `kmem_cache_alloc` of a pid: the pid `make` builds, in an allocation this thread's
/// cache kept, else in a new one. Built after the allocation is taken, so that it is
/// written in place rather than built on the stack and copied in.
#[inline(always)]
pub(crate) fn new_pid(make: impl FnOnce() -> Pid) -> Arc<Pid> {
    let cached = CACHE.try_with(|c| c.pop()).ok().flatten();
    cached.unwrap_or_default().fill(make())
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
    // SAFETY: `known_unique` false: `put_pid_as` asks `Arc::get_mut` itself.
    #[allow(unsafe_code)]
    unsafe {
        put_pid_as(pid, false)
    }
}

/// [`put_pid`], or with `known_unique` the same for a pid known to be unreachable but
/// through the caller's one reference: no `Arc::get_mut` (a compare-exchange on the
/// weak count) to ask. The task cache's recycling of a task passes `true` from the
/// task's drop, having proved the task's pid unreachable (`sole_owner` in
/// `uproc-tasklist`); one place that drops a pid in place either way, so that the
/// pid's drop is inlined once.
///
/// # Safety
///
/// With `known_unique`, as [`empty_unique`]: `pid`
/// is the only `Arc`, no `Weak` to it exists, and none can be made while this runs
/// (the caller read both counts after an `Acquire` fence, and nothing outside the
/// caller can reach the pid). None without it.
#[inline]
#[allow(unsafe_code)]
pub unsafe fn put_pid_as(mut pid: Arc<Pid>, known_unique: bool) {
    if !known_unique && Arc::get_mut(&mut pid).is_none() {
        // Others hold it (or a `Weak` names it): a plain drop of this reference.
        drop(pid);
        return;
    }
    // SAFETY: unique, by the caller's contract or by `Arc::get_mut` just now (no other
    // `Arc`, no `Weak`; none can be made but from `pid`, which this call owns).
    let emptied = unsafe { empty_unique(pid) };
    // Full, or the thread's cache gone: the emptied allocation is freed.
    let _ = CACHE.try_with(|c| c.push(emptied));
}

/// How many emptied allocations this thread's cache holds (tests).
#[doc(hidden)]
pub fn cached_pids() -> usize {
    CACHE.try_with(|c| c.len()).unwrap_or(0)
}
