//! Pid namespaces and pid numbers: Linux's `kernel/pid.c` and `kernel/pid_namespace.c`
//! for userspace tasks.
//!
//! # What this crate owns
//!
//! - [`PidNamespace`]: a tree of namespaces (level 0 is a runtime's root), each with its
//!   own `pid_max` (`PID_MAX_LIMIT` for a new namespace; ancestors' limits still bound
//!   the outer levels' numbers), cyclic cursor, `pid_allocated` count and `PIDNS_ADDING` state.
//! - [`Pid`] (`struct pid`): one number per level, outermost to innermost, shared by
//!   `Arc`. It outlives its numbers: [`free_pid`] returns them for reuse while handles
//!   keep the object, so an old handle can never name a new task.
//! - [`alloc_pid`] / [`free_pid`], with Linux's numbering (next after the last, wrap to
//!   300 once the cursor passed 300, `set_tid`, the init-first rule) and error codes.
//! - [`PidMap`]: what all namespaces of one runtime share: the [`Profile`] and the named
//!   global `pidmap_lock`, plus the hooks pidfs installs.
//! - Under `Scalable`, each namespace's number pool (`pool.rs`): a FIFO of free numbers
//!   behind a per-namespace lock taken once per batch, per-thread batches in front of
//!   it, a per-number state byte that arbitrates ownership, and a table of per-number
//!   lookup slots.
//!
//! # Locks, and who touches what
//!
//! | field | written under | read under |
//! |---|---|---|
//! | a namespace's idr, cursor, `pid_allocated`, `PIDNS_ADDING` | `pidmap_lock` + that namespace's state lock (write) | the state lock (read): `find_pid` never takes `pidmap_lock`, as Linux's RCU lookup does not |
//! | `pid_max` | relaxed atomic (Linux: `proc_dointvec`, no lock) | snapshot before `pidmap_lock` |
//! | `Pid::numbers` | private to `alloc_pid` until published; immutable after | anyone |
//! | `Pid::ino` | pidfs, once: before the pid escapes `alloc_pid` (`Linux*`), at the first read (`Scalable`, a compare-exchange) | anyone |
//! | `Pid::task_slot` | tasklist: attached once (fork or boot, a `Release` store after the one write of the `Weak`), detached at release (a `Release` store) | anyone, lock-free (`Acquire` load, then the `Weak`'s upgrade) |
//! | `Scalable`: a number's state byte | compare-exchange, no lock (an exhaustion scan marks the numbers in use under the pool lock, and a marked number is released under it) | anyone |
//! | `Scalable`: a number's lookup slot | plain stores by the number's owner (a pointer holding one strong count) | `find_pid`, registered as a reader in the number's state byte, which the owner's release waits on |
//! | `Scalable`: the free-number FIFO and fresh cursor | the namespace's pool lock (counted, `pidns_pool_lock`), once per batch | the same |
//! | `Scalable`: `pid_allocated` | the forking or freeing thread's own shard of the count (a line no other thread writes: a load and a store; threads beyond the shard count share an overflow shard with read-modify-writes) | the closing path sums the shards; `nr_allocated` takes a snapshot of them |
//! | `Scalable`: `PIDNS_ADDING` | cleared once by `disable_pid_allocation` (`SeqCst`, then `membarrier`) | every fork and free, after its own count |
//!
//! The per-namespace state lock nests inside `pidmap_lock` and is never held while
//! calling out of this crate, except that `Linux618` calls pidfs's hooks with
//! `pidmap_lock` held, as 6.18 did (pidfs must not take `pidmap_lock` in them).
//!
//! # Invariants
//!
//! - A number is in one of three states in its namespace: free, reserved (`Linux*`: bit
//!   set, no entry; `Scalable`: owned, slot empty; invisible to `find_pid` either way),
//!   published. All levels of one pid are published
//!   together, so a lookup never finds a pid that is missing a level.
//! - `nr_allocated()` counts reserved + published numbers; at rest it equals the number
//!   of pids not yet freed that have a number in that namespace. (Linux's
//!   `pid_allocated` counts published pids only; the two differ only while an
//!   `alloc_pid` is between reserve and publish or rollback.)
//! - The cyclic cursor only moves forward (mod wrap) except while a namespace still waits
//!   for its first process, when it is reset so that process gets 1.
//!
//! # Profiles
//!
//! See [`alloc_pid`]'s module table: `Linux618` takes `pidmap_lock` once per level to
//! reserve plus once to publish (2 for a single-level fork), `Linux70` once. Freeing
//! takes it once in both. `Scalable` never takes it: numbers come from per-thread
//! batches of a per-namespace FIFO pool (least recently freed first; the pool lock is
//! taken once per 128 operations of a thread and counted by [`PidMap::pool_lock_stat`]),
//! `set_tid` claims its number directly, and `find_pid` reads a per-number slot. It keeps
//! every error code and rule except the order numbers are handed out in: a freed number
//! waits behind every free number in the shared pool ([`PidNamespace::pool_len`], less
//! what other threads' batches take of them), and EAGAIN means that at one moment every
//! number below `pid_max` was in use (other threads' batches are drained first, and the
//! last pass over the numbers decides under the namespace's pool lock, so a number
//! freed behind it cannot be missed). That follows from the order too: Linux's cursor,
//! once past `RESERVED_PIDS` (300), never hands out a number below it again, so its
//! EAGAIN comes while numbers 2..300 may still be free; `Scalable` hands those out
//! first (with `pid_max` 400, a namespace refilled after a wrap takes 398 forks where
//! Linux takes 100). See `IMPLEMENTATION.md`.
//!
//! The crate's `unsafe` is confined to a few items, each with its safety argument: the
//! per-thread credits of a root namespace's reference count (`Scalable`:
//! [`PidNamespace::pid_ref_credits`]: raw strong-count operations on the namespace's
//! own `Arc`), the `Scalable` lookup slot (a raw pointer holding a strong count, read
//! under the number's reader registration), the [`TaskSlot`]'s write-once value, and the
//! `membarrier` system call of the allocation count.
#![deny(unsafe_code)]

mod alloc;
mod chunks;
mod count;
mod idr;
mod namespace;
mod pid;
mod pid_cache;
mod pidfs_slot;
mod pool;
mod ref_credits;
mod sync;
mod task_slot;

pub use alloc::{alloc_pid, free_pid};
pub use namespace::{PidMap, PidNamespace, PidfsHooks, ReaperWakeup};
pub use pid::{Attachment, PIDFS_DEAD, PIDFS_OPENED, Pid, Upid};
pub use pid_cache::{cached_numbers, cached_pids, put_pid, put_pid_as};
pub use pidfs_slot::PidfsSlot;
pub use ref_credits::PidRefCredits;
pub use task_slot::TaskSlot;
pub use uproc_abi::Profile;

/// Numbers below this are not reused once the cursor has passed it (`RESERVED_PIDS`).
pub const RESERVED_PIDS: i32 = 300;
/// Default `pid_max` (`PID_MAX_DEFAULT`).
pub const PID_MAX_DEFAULT: i32 = 0x8000;
/// The largest `pid_max` (`PID_MAX_LIMIT` on 64-bit).
pub const PID_MAX_LIMIT: i32 = 4 * 1024 * 1024;
/// The smallest `pid_max` a namespace accepts (`pid_max_min` = `RESERVED_PIDS + 1`).
pub const PID_MAX_MIN: i32 = RESERVED_PIDS + 1;
/// The deepest namespace level (`MAX_PID_NS_LEVEL`): level 33 fails with ENOSPC.
pub const MAX_PID_NS_LEVEL: u32 = 32;

/// The `Scalable` number pool on its own, for `tests/loom_pool.rs`: loom cannot run the
/// rest of the crate (its locks are `parking_lot`'s), and does not need to.
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_model {
    use std::sync::Arc;

    /// Puts the calling thread's counts in shard `i` (mod the shard count), so a model
    /// decides whether two threads share a shard.
    pub fn set_thread_shard(i: usize) {
        crate::count::set_my_shard(i)
    }

    /// A pool of numbers `1..limit` whose slots publish `u32`s. Every value published
    /// is also kept here until the model ends, so that a model of a broken ordering
    /// reports loom's race on the slot's count instead of touching freed memory.
    #[derive(Debug, Clone)]
    pub struct Pool(
        Arc<crate::pool::NumberPool<u32>>,
        Arc<std::sync::Mutex<Vec<Arc<u32>>>>,
    );

    impl Pool {
        /// A pool for numbers `1..limit`, refilled `batch` at a time.
        pub fn new(limit: i32, batch: usize) -> Pool {
            Pool(
                crate::pool::NumberPool::new(limit, batch, &crate::pool::PoolLockStats::new()),
                Default::default(),
            )
        }

        /// The next number below `pid_max` in pool order (batches, then the scan).
        pub fn alloc(&self, pid_max: i32) -> Option<i32> {
            self.0.alloc(pid_max)
        }

        /// The exhaustion scan's deciding pass alone (under the pool lock, marking the
        /// numbers in use).
        pub fn scan_exact(&self, pid_max: i32) -> Option<i32> {
            self.0.scan_exact(pid_max)
        }

        /// `set_tid`'s exact claim.
        pub fn claim(&self, nr: i32) -> bool {
            self.0.claim(nr)
        }

        /// Gives an owned number back.
        pub fn release(&self, nr: i32) {
            self.0.release(nr)
        }

        /// Publishes `v` under the owned number `nr`.
        pub fn publish(&self, nr: i32, v: u32) {
            let v = Arc::new(v);
            self.1.lock().expect("keep list").push(Arc::clone(&v));
            self.0.publish(nr, v)
        }

        /// `free_pid`'s step for one level: clear the slot, then release the number.
        pub fn unpublish_release(&self, nr: i32) {
            self.0.unpublish_release(nr)
        }

        /// `find_pid`'s lock-free read.
        pub fn find(&self, nr: i32) -> Option<u32> {
            self.0.find(nr).map(|v| *v)
        }

        /// A fork's count of its innermost level: false if the namespace was closed.
        pub fn count_add(&self) -> bool {
            self.0.count.add()
        }

        /// A fork's count of an outer level (no check).
        pub fn count_add_unchecked(&self) {
            self.0.count.add_unchecked()
        }

        /// A free's count: true if the dead init must be woken.
        pub fn count_sub(&self) -> bool {
            self.0.count.sub()
        }

        /// A free's removal of one level, before a multi-level free reads the flags.
        pub fn count_sub_only(&self) {
            self.0.count.sub_only()
        }

        /// After this thread's removals: true if the dead init must be woken.
        pub fn owes_wakeup(&self) -> bool {
            self.0.count.owes_wakeup()
        }

        /// `disable_pid_allocation`.
        pub fn close(&self) {
            self.0.count.close()
        }

        /// `pid_allocated`: the sum of the shards.
        pub fn allocated(&self) -> usize {
            self.0.allocated()
        }

        /// Every published value, ascending by number (the zap walk).
        pub fn published(&self) -> Vec<u32> {
            self.0.published().into_iter().map(|v| *v).collect()
        }
    }

    /// An empty task slot, as every `Pid` starts with.
    pub fn task_slot() -> crate::TaskSlot {
        crate::TaskSlot::new()
    }

    /// An empty pidfs slot, as every `Pid` starts with.
    pub fn pidfs_slot() -> crate::PidfsSlot {
        crate::PidfsSlot::new()
    }

    /// A root namespace's reference-count credits over a model strong count (loom
    /// cannot run `Arc`'s real count through raw pointers): `get`/`put` do what
    /// `alloc_pid` and a `Pid`'s drop do to the namespace's count.
    #[derive(Clone)]
    pub struct Credits(Arc<(crate::ref_credits::RefCredits, crate::sync::AtomicU64)>);

    impl std::fmt::Debug for Credits {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Credits")
                .field("strong", &self.strong())
                .finish()
        }
    }

    impl Credits {
        /// Closed credits over a strong count of `strong`.
        pub fn new(strong: u64) -> Credits {
            Credits(Arc::new((
                crate::ref_credits::RefCredits::new(),
                crate::sync::AtomicU64::new(strong),
            )))
        }

        /// Opens them (the runtime's guard).
        pub fn open(&self) -> bool {
            self.0.0.open()
        }

        /// `get_pid_ns`: one more count owned by the caller.
        pub fn get(&self) {
            let strong = &self.0.1;
            let ord = crate::sync::Ordering::AcqRel;
            self.0.0.acquire(
                |n| {
                    strong.fetch_add(n, ord);
                },
                |n| {
                    assert!(strong.fetch_sub(n, ord) > n, "the count reached zero");
                },
            );
        }

        /// `put_pid_ns`: the caller's count goes to a credit or off the count.
        pub fn put(&self) {
            if !self.0.0.try_give() {
                assert!(self.0.1.fetch_sub(1, crate::sync::Ordering::AcqRel) > 0);
            }
        }

        /// The guard's drop: the credits go back off the count.
        pub fn close(&self) {
            let n = self.0.0.close();
            assert!(self.0.1.fetch_sub(n, crate::sync::Ordering::AcqRel) >= n);
        }

        /// The strong count now.
        pub fn strong(&self) -> u64 {
            self.0.1.load(crate::sync::Ordering::Acquire)
        }
    }
}
