//! `AllocCount`: one namespace's `pid_allocated` and `PIDNS_ADDING` under the
//! `Scalable` profile, as per-thread shards of the count beside a flag that only its
//! closing ever writes.
//!
//! ```text
//!   shard[0] (128-byte line)  ...  shard[SHARDS-1]  shard[SHARDS]     adding (read-mostly)
//!     added:   +1 per fork      owned by one       overflow: threads  cleared once, by
//!     removed: +1 per free      thread each:       beyond SHARDS,     disable_pid_allocation
//!                               load + store       read-modify-write  (+ membarrier)
//!   pid_allocated = sum(added) - sum(removed), removals read first
//!                   (exact at rest; nr_allocated: a snapshot when two collects agree)
//! ```
//!
//! A thread counts its forks and frees in its own shard (a thread claims a free one
//! on its first count and gives it back when it ends, so two workers never write one
//! line while there are no more threads than shards); the sum is read only where Linux
//! reads `pid_allocated` for a decision: the dead init's "is my namespace empty" check and the wakeup a free owes
//! it. A pid forked on one thread and freed on another is added in one shard and
//! removed in the other.
//!
//! # The handshake with the closing path (memory orderings)
//!
//! Linux keeps the count and the flag in one word changed under `pidmap_lock`, so a
//! fork either counts itself before the close or sees the close. Here each side writes
//! its own location and then reads the other's (a Dekker handshake). Described first
//! with every access `SeqCst`, as a thread on the overflow shard (or every thread,
//! where `membarrier` is unavailable) does it: all `SeqCst` operations fall in one
//! total order, and a `SeqCst` load reads the last `SeqCst` write before it in that
//! order. The next section replaces the hot side's read-modify-write:
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
//! With read-modify-writes, each side costs one uncontended `lock`ed instruction on a
//! line its thread owns; with owned shards (below), none.
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
//! [`nr_allocated`](crate::PidNamespace::nr_allocated) collects every counter twice
//! and reports an exact snapshot when the two agree
//! ([`snapshot_sum`](AllocCount::snapshot_sum)), the bound above otherwise.
//!
//! # Plain stores on the hot path: one writer per shard, an asymmetric handshake
//!
//! A thread owns its shard exclusively while it lives (up to [`SHARDS`] threads at
//! once; a thread that finds none free shares the overflow shard, with the
//! read-modify-writes described above). The owner is the only writer of its two
//! counters, so a count is a load and a `Release` store, not a `lock`ed instruction.
//! What the read-modify-write also gave the handshake is a full barrier between the
//! count and the flag read; the owner now only keeps the compiler from reordering
//! them, and the rare closer pays for the barrier instead: after clearing `adding` it
//! calls `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, which makes every running
//! thread of the process execute a full barrier before it returns. For a fork that
//! read the namespace open, that barrier fell either after its count (so the closer's
//! sum, read after the call, sees it) or before it (then the fork's flag read came
//! after the closer's store, and it saw the namespace closed). The same goes for a
//! free and the slot walk. Frees racing each other in a closed namespace meet in the
//! closed path, which both take: each issues a `SeqCst` fence between its removal and
//! its sum, so the one whose fence comes last sees every other's removal.
//!
//! The registration (`MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED`) is made when the
//! first count is built; where it fails (another OS, an old kernel, a seccomp filter)
//! every count keeps the read-modify-write of the overflow shard's kind. A shard
//! changes owner only through the registry's bitmask: the leaving thread's
//! `Release` clear, the next owner's `Acquire` claim.
//!
//! loom models the membarrier as what it guarantees: a `SeqCst` fence on each side
//! (`loom_order`).
//!
use crate::sync::{AtomicBool, AtomicU64, Ordering, fence, thread_local};
use std::cell::Cell;
use std::sync::atomic::AtomicU32 as StdAtomicU32;

/// Shards of a namespace's count that threads own (a power of two); threads beyond
/// this share the overflow shard (index `SHARDS`).
pub(crate) const SHARDS: usize = if cfg!(loom) { 2 } else { 16 };

/// One shard, alone on its cache line pair (adjacent-line prefetch included): the pids
/// its threads counted in and out, both only ever growing.
#[repr(align(128))]
struct Shard {
    added: AtomicU64,
    removed: AtomicU64,
}

/// The owned shards: bit `i` set while a thread owns shard `i`.
static SHARD_OWNERS: StdAtomicU32 = StdAtomicU32::new(0);

/// `MY_SHARD` before the thread's first count.
const UNASSIGNED: usize = usize::MAX;

/// Gives a thread's owned shard back to the registry when the thread ends. Its own
/// thread-local, touched only when the shard is claimed: the hot path reads a plain
/// `Cell` with no destructor state to check.
struct ShardLease(Cell<usize>);

impl Drop for ShardLease {
    fn drop(&mut self) {
        let i = self.0.get();
        if i < SHARDS {
            // Counts made after this (other thread-locals' destructors) go to the
            // overflow shard, with read-modify-writes.
            let _ = MY_SHARD.try_with(|s| s.set(SHARDS));
            // Release: the next owner's claim (Acquire) sees this thread's last counts.
            SHARD_OWNERS.fetch_and(!(1 << i), std::sync::atomic::Ordering::Release);
        }
    }
}

#[cfg(not(loom))]
thread_local! {
    /// This thread's shard: `UNASSIGNED`, an owned shard (`< SHARDS`) or the overflow
    /// shard (`SHARDS`).
    static MY_SHARD: Cell<usize> = const { Cell::new(UNASSIGNED) };
    static LEASE: ShardLease = const { ShardLease(Cell::new(UNASSIGNED)) };
}
#[cfg(loom)]
thread_local! {
    static MY_SHARD: Cell<usize> = Cell::new(UNASSIGNED);
    static LEASE: ShardLease = ShardLease(Cell::new(UNASSIGNED));
}

/// Sets this thread's shard (loom models place their threads explicitly, each on a
/// shard of its own unless a model says otherwise).
#[cfg(loom)]
pub(crate) fn set_my_shard(i: usize) {
    MY_SHARD.with(|s| s.set(i % SHARDS));
}

/// Claims a free shard for this thread (with a lease that gives it back when the
/// thread ends), or the overflow shard if all are owned or the thread is ending.
#[cold]
#[inline(never)]
fn claim_shard() -> usize {
    use std::sync::atomic::Ordering as O;
    if !asymmetric_available() {
        // No membarrier: every thread counts with read-modify-writes.
        return SHARDS;
    }
    let mut owners = SHARD_OWNERS.load(O::Relaxed);
    loop {
        let free = (!owners).trailing_zeros() as usize;
        if free >= SHARDS {
            return SHARDS;
        }
        match SHARD_OWNERS.compare_exchange_weak(
            owners,
            owners | (1 << free),
            O::Acquire,
            O::Relaxed,
        ) {
            Ok(_) => break,
            Err(now) => owners = now,
        }
    }
    let free = (!owners).trailing_zeros() as usize;
    if LEASE.try_with(|l| l.0.set(free)).is_ok() {
        free
    } else {
        // No destructor would give it back: return it now, share the overflow shard.
        SHARD_OWNERS.fetch_and(!(1 << free), O::Release);
        SHARDS
    }
}

/// This thread's shard: `< SHARDS` if it owns it alone, `SHARDS` (the overflow shard,
/// shared) if every shard was owned when it first counted or its thread-local storage
/// is already torn down.
///
/// One load and one compare once the shard is known: `UNASSIGNED` is the only value
/// above `SHARDS`, so the compare that sends a first count to the claim also tells the
/// compiler the index is in bounds (no clamp, no bounds check at the callers).
#[inline]
pub(crate) fn my_shard() -> usize {
    let i = MY_SHARD.try_with(Cell::get).unwrap_or(SHARDS);
    if i <= SHARDS { i } else { first_shard() }
}

/// [`my_shard`]'s first call on a thread: claims its shard and remembers it.
#[cold]
#[inline(never)]
fn first_shard() -> usize {
    // `claim_shard` never returns more than `SHARDS`; the clamp says so to the
    // compiler, which inlines this bound into `my_shard`'s callers and drops their
    // bounds check on the shard arrays (without it: 2 instructions more per life cycle).
    let i = claim_shard().min(SHARDS);
    let _ = MY_SHARD.try_with(|s| s.set(i));
    i
}

/// `membarrier(2)` commands (`linux/membarrier.h`).
#[cfg(all(target_os = "linux", not(loom)))]
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
#[cfg(all(target_os = "linux", not(loom)))]
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

/// Whether this process may use expedited private membarriers: registered once, by
/// the first thread that claims a shard. No thread owns a shard unless it is true.
/// Under loom, always (the models fence both sides); under Miri, which has no
/// `membarrier`, never (the symmetric fences then).
fn asymmetric_available() -> bool {
    #[cfg(loom)]
    return true;
    #[cfg(all(target_os = "linux", not(loom)))]
    {
        if cfg!(miri) {
            return false;
        }
        static REGISTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *REGISTERED.get_or_init(|| membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED))
    }
    #[cfg(all(not(target_os = "linux"), not(loom)))]
    return false;
}

#[cfg(all(target_os = "linux", not(loom)))]
#[allow(unsafe_code)]
fn membarrier(cmd: libc::c_long) -> bool {
    // SAFETY: `membarrier(cmd, flags = 0, cpu_id = 0)` reads no memory of ours; it is
    // a plain system call with integer arguments.
    unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            cmd,
            0 as libc::c_long,
            0 as libc::c_long,
        ) == 0
    }
}

/// The closer's half of the asymmetric handshake: every running thread of the process
/// executes a full barrier before this returns. Under loom, the `SeqCst` fence that
/// stands for it.
fn barrier_on_every_thread() {
    #[cfg(loom)]
    fence(Ordering::SeqCst);
    #[cfg(all(target_os = "linux", not(loom)))]
    {
        // Registered (asymmetric_available): this cannot fail but for a kernel bug.
        let mut tries = 0;
        while !membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) {
            tries += 1;
            assert!(
                tries < 100,
                "membarrier(PRIVATE_EXPEDITED) failed after registration: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

/// Under loom only: the `SeqCst` fence that stands for the single order of `SeqCst`
/// accesses, and for the barrier the closer's membarrier puts on this thread, neither
/// of which loom models (see the module essay). Elsewhere a compiler fence: the
/// hardware barrier is the closer's.
#[inline]
fn loom_order() {
    #[cfg(loom)]
    fence(Ordering::SeqCst);
    #[cfg(not(loom))]
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
}

/// `pid_allocated` + `PIDNS_ADDING` of one `Scalable` namespace.
pub(crate) struct AllocCount {
    /// `SHARDS` owned shards, then the overflow shard.
    shards: Box<[Shard; SHARDS + 1]>,
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

    /// Adds one to `counter` of this thread's shard: a load and a `Release` store on
    /// a shard the thread owns alone (the asymmetric handshake), else a `SeqCst`
    /// read-modify-write.
    #[inline(always)]
    fn bump(&self, counter: impl Fn(&Shard) -> &AtomicU64) {
        let i = my_shard();
        let c = counter(&self.shards[i]);
        if i < SHARDS {
            c.store(c.load(Ordering::Relaxed) + 1, Ordering::Release);
        } else {
            c.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Counts one pid in without the check (an outer level of a nested pid: Linux
    /// checks `PIDNS_ADDING` of the innermost namespace only), before the innermost
    /// level's [`add`](Self::add).
    #[inline]
    pub(crate) fn add_unchecked(&self) {
        self.bump(|s| &s.added);
    }

    /// Counts one pid in, after its slots were published: true if the namespace still
    /// accepts pids, false if it was closed (the caller undoes the fork with ENOMEM,
    /// [`sub`](Self::sub) included).
    #[inline]
    pub(crate) fn add(&self) -> bool {
        self.bump(|s| &s.added);
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
        // essay); the handshake with the close is the closer's membarrier (or SeqCst).
        self.bump(|s| &s.removed);
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
        // Frees racing in a closed namespace: the one whose fence comes last sees every
        // other's removal (module essay).
        fence(Ordering::SeqCst);
        matches!(self.sum(), 1 | 2)
    }

    /// `disable_pid_allocation`: no fork counts itself in after this returns.
    pub(crate) fn close(&self) {
        self.adding.store(false, Ordering::SeqCst);
        if asymmetric_available() {
            // Owned shards count with plain stores: their barrier is this one.
            barrier_on_every_thread();
        } else {
            loom_order();
        }
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

    /// `pid_allocated` as [`nr_allocated`](crate::PidNamespace::nr_allocated) reports
    /// it: exact at one moment whenever it can be, at no cost to forks and frees.
    ///
    /// Each collect reads every removal counter, then every add counter (as
    /// [`sum`](Self::sum)). Two collects in a row that read the same values prove a
    /// snapshot: the counters only grow, so each held its value from its read in the
    /// first collect to its read in the second, and all of them held theirs at once
    /// between the two collects; the difference is the exact count at that moment.
    /// While forks and frees keep changing counters, after [`SNAPSHOT_TRIES`] collects
    /// the last one's value is returned: never fewer pids than were counted in at its
    /// end, and more by at most the frees counted during it (a pid whose removal came
    /// after the removal counters were read but whose add was read).
    pub(crate) fn snapshot_sum(&self) -> i64 {
        let collect = || {
            let removed: [u64; SHARDS + 1] =
                std::array::from_fn(|i| self.shards[i].removed.load(Ordering::SeqCst));
            let added: [u64; SHARDS + 1] =
                std::array::from_fn(|i| self.shards[i].added.load(Ordering::SeqCst));
            (removed, added)
        };
        let count = |(removed, added): &([u64; SHARDS + 1], [u64; SHARDS + 1])| {
            let r: u64 = removed.iter().sum();
            let a: u64 = added.iter().sum();
            a.wrapping_sub(r) as i64
        };
        let mut last = collect();
        for _ in 1..SNAPSHOT_TRIES {
            let next = collect();
            if next == last {
                return count(&next);
            }
            last = next;
        }
        count(&last)
    }
}

/// Collects [`AllocCount::snapshot_sum`] makes at most before it settles for the
/// bound of the last one.
pub(crate) const SNAPSHOT_TRIES: usize = if cfg!(loom) { 2 } else { 8 };

impl std::fmt::Debug for AllocCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AllocCount")
            .field("sum", &self.sum())
            .field("adding", &self.is_adding())
            .finish()
    }
}
