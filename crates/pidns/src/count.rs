//! `AllocCount`: one namespace's `pid_allocated` and `PIDNS_ADDING` under the
//! `Scalable` profile, as per-thread shards of the count beside a flag that only its
//! closing ever writes.
//!
//! ```text
//!   shard[0] (128-byte line)  shard[1]  ...  shard[SHARDS-1]     adding (read-mostly)
//!     added:   +1 per fork      threads         threads          cleared once, by
//!     removed: +1 per free      mapped here     mapped here      disable_pid_allocation
//!   pid_allocated = sum(added) - sum(removed), removals read first
//!                   (exact at rest; read on the closing path only)
//! ```
//!
//! A thread counts its forks and frees in its own shard (threads are spread over the
//! shards round-robin, so two workers never write one line while there are no more
//! threads than shards); the sum is read only where Linux reads `pid_allocated` for a
//! decision: the dead init's "is my namespace empty" check and the wakeup a free owes
//! it. A pid forked on one thread and freed on another is added in one shard and
//! removed in the other.
//!
//! # The handshake with the closing path (memory orderings)
//!
//! Linux keeps the count and the flag in one word changed under `pidmap_lock`, so a
//! fork either counts itself before the close or sees the close. Here each side writes
//! its own location and then reads the other's, every access `SeqCst` (a Dekker
//! handshake: all `SeqCst` operations fall in one total order, and a `SeqCst` load
//! reads the last `SeqCst` write before it in that order):
//!
//! - fork ([`add`](AllocCount::add)): publish the slots, `shard.added += 1`, read
//!   `adding`. If it reads the namespace open, its increment precedes the closer's
//!   store in the order, so the closer's reads after it (the count, then the slot walk
//!   that kills the namespace's tasks, which the count read synchronises with) see this
//!   fork. If it reads it closed it undoes itself with ENOMEM.
//! - free ([`sub`](AllocCount::sub)): `shard.removed += 1`, read `adding`; in a closed
//!   namespace, sum every shard and owe the reaper a wakeup when the sum is 1 or 2
//!   (`case 2: case 1: wake_up_process`). Of the frees racing each other, the one
//!   whose increment comes last in the order sees every other's, so the wakeup Linux
//!   gives on the last decrement is never lost (an earlier free may wake it too: the
//!   reaper re-checks, an extra wakeup costs nothing). A free that reads the namespace
//!   still open came before the closer's store, whose own count read sees the removal.
//!   A free of several levels counts every level out, then reads every level's flag.
//! - close ([`close`](AllocCount::close)): clear `adding`, then read the sum once, so
//!   that any thread that later synchronises with the closer (the zap list's mutex)
//!   reads a count no older than the one the order guarantees the closer.
//!
//! On x86 a `SeqCst` read-modify-write is the `lock`ed instruction a relaxed one is
//! anyway and a `SeqCst` load a plain load: the handshake costs no fence (an earlier
//! version put a `SeqCst` fence after each increment: two `mfence`s per life cycle).
//! loom models `SeqCst` accesses as acquire/release only, so under `cfg(loom)` the
//! same order is made explicit with a `SeqCst` fence between each side's write and
//! read (`loom_order`), which is what the models check.
//!
//! Each side costs one uncontended read-modify-write of a line its thread owns: no
//! write to a line another worker writes.
//!
//! # Why two monotonic counters per shard, removals read first
//!
//! One signed counter per shard would let a sum read shard A before a fork's +1 landed
//! there and shard B after the same pid's -1 (its parent reaped it on another thread):
//! one pid fewer than the namespace ever held, enough for a dead init to finish its zap
//! while a task still lives (`tests/loom_count.rs` shows it). Here a free counts its
//! removal with (at least) `Release`, and a sum reads every removal counter (at least
//! `Acquire`) before any add counter: a removal it sees synchronises with the free,
//! whose pid's add
//! happened-before it, so that add is seen too. A sum may run ahead (an add seen, its
//! removal not yet) but never behind: a dead init may check once more, never too early.
//!

#[cfg(loom)]
use crate::sync::fence;
use crate::sync::{AtomicBool, AtomicU64, Ordering, thread_local};
use std::cell::Cell;
use std::sync::atomic::AtomicUsize as StdAtomicUsize;

/// Shards of a namespace's count (a power of two); threads beyond this share shards.
pub(crate) const SHARDS: usize = if cfg!(loom) { 2 } else { 16 };

/// One shard, alone on its cache line pair (adjacent-line prefetch included): the pids
/// its threads counted in and out, both only ever growing.
#[repr(align(128))]
struct Shard {
    added: AtomicU64,
    removed: AtomicU64,
}

/// Round-robin shard assignment for new threads.
static NEXT_SHARD: StdAtomicUsize = StdAtomicUsize::new(0);

#[cfg(not(loom))]
thread_local! {
    /// This thread's shard index, assigned on first use.
    static MY_SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
}
#[cfg(loom)]
thread_local! {
    /// This thread's shard index, assigned on first use.
    static MY_SHARD: Cell<usize> = Cell::new(usize::MAX);
}

/// Sets this thread's shard (loom models place their threads explicitly).
#[cfg(loom)]
pub(crate) fn set_my_shard(i: usize) {
    MY_SHARD.with(|s| s.set(i % SHARDS));
}

/// This thread's shard, `< SHARDS` (so indexing a `[_; SHARDS]` needs no bounds check
/// once inlined).
#[inline]
pub(crate) fn my_shard() -> usize {
    let i = MY_SHARD
        .try_with(|s| {
            let mut i = s.get();
            if i == usize::MAX {
                i = NEXT_SHARD.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % SHARDS;
                s.set(i);
            }
            i
        })
        // Thread-local storage already torn down: any shard is correct, only slower.
        .unwrap_or(0);
    i % SHARDS
}

/// Under loom only: the `SeqCst` fence that stands for the single order of `SeqCst`
/// accesses, which loom does not model (see the module essay).
#[inline]
fn loom_order() {
    #[cfg(loom)]
    fence(Ordering::SeqCst);
}

/// `pid_allocated` + `PIDNS_ADDING` of one `Scalable` namespace.
pub(crate) struct AllocCount {
    shards: Box<[Shard; SHARDS]>,
    adding: AtomicBool,
}

impl AllocCount {
    /// Zero pids, accepting new ones.
    pub(crate) fn new() -> AllocCount {
        AllocCount {
            shards: Box::new(std::array::from_fn(|_| Shard {
                added: AtomicU64::new(0),
                removed: AtomicU64::new(0),
            })),
            adding: AtomicBool::new(true),
        }
    }

    #[inline]
    fn shard(&self) -> &Shard {
        &self.shards[my_shard()]
    }

    /// Counts one pid in without the check (an outer level of a nested pid: Linux
    /// checks `PIDNS_ADDING` of the innermost namespace only), before the innermost
    /// level's [`add`](Self::add).
    #[inline]
    pub(crate) fn add_unchecked(&self) {
        self.shard().added.fetch_add(1, Ordering::SeqCst);
    }

    /// Counts one pid in, after its slots were published: true if the namespace still
    /// accepts pids, false if it was closed (the caller undoes the fork with ENOMEM,
    /// [`sub`](Self::sub) included).
    #[inline]
    pub(crate) fn add(&self) -> bool {
        self.shard().added.fetch_add(1, Ordering::SeqCst);
        loom_order();
        self.adding.load(Ordering::SeqCst)
    }

    /// Counts one pid out (`--pid_allocated`): true when the namespace is closed and
    /// down to 2 or 1 pids, so its dead init must re-check "is my namespace empty".
    #[inline]
    pub(crate) fn sub(&self) -> bool {
        self.sub_only();
        self.owes_wakeup()
    }

    /// [`sub`](Self::sub)'s removal alone, for a free of several levels: the caller
    /// counts every level out, then asks each level [`owes_wakeup`](Self::owes_wakeup).
    #[inline]
    pub(crate) fn sub_only(&self) {
        // At least Release: a sum that sees this removal sees the pid's add (module
        // essay); SeqCst for the handshake with the close.
        self.shard().removed.fetch_add(1, Ordering::SeqCst);
    }

    /// After this thread's removals: true when the namespace is closed and down to 2
    /// or 1 pids.
    #[inline]
    pub(crate) fn owes_wakeup(&self) -> bool {
        loom_order();
        if self.adding.load(Ordering::SeqCst) {
            return false;
        }
        self.sub_closed()
    }

    #[cold]
    fn sub_closed(&self) -> bool {
        matches!(self.sum(), 1 | 2)
    }

    /// `disable_pid_allocation`: no fork counts itself in after this returns.
    pub(crate) fn close(&self) {
        self.adding.store(false, Ordering::SeqCst);
        loom_order();
        // Read once after the store: see the module essay.
        let _ = self.sum();
    }

    /// Whether the namespace still accepts pids (`PIDNS_ADDING`).
    pub(crate) fn is_adding(&self) -> bool {
        self.adding.load(Ordering::Acquire)
    }

    /// `pid_allocated` without the flag: every shard's adds minus every shard's
    /// removals. Exact at rest; while forks and frees run on other threads it may count
    /// pids whose removal is in flight, never fewer pids than there are.
    pub(crate) fn sum(&self) -> i64 {
        let removed: u64 = self
            .shards
            .iter()
            .map(|s| s.removed.load(Ordering::SeqCst))
            .sum();
        let added: u64 = self
            .shards
            .iter()
            .map(|s| s.added.load(Ordering::SeqCst))
            .sum();
        added.wrapping_sub(removed) as i64
    }
}

impl std::fmt::Debug for AllocCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AllocCount")
            .field("sum", &self.sum())
            .field("adding", &self.is_adding())
            .finish()
    }
}
