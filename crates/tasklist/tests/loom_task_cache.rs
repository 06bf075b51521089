//! Loom model of the task cache's ownership check (`task_cache.rs`, `sole_owner`): the
//! last handle of a reaped task reads the pid's weak count, the pid's strong count and
//! the task's counts, each after an `Acquire` fence, and only then drops the task in
//! place (here: writes the value, as the drop and the next fork's fill would) while
//! its strong count is still 1. A lookup racing it reaches the task only through the
//! pid: from a clone of the pidfs index's `Weak` (upgrade the pid, drop the clone), or
//! through a pidfd's counted pid; then the slot's state, the task's upgrade, a read of
//! the task, and the drops.
//!
//! The counts are loom atomics with `Arc`'s orderings (upgrade: an `Acquire`
//! compare-exchange from a non-zero count; drop: a `Release` decrement). loom reports a
//! read of the task unordered with the recycler's write (a data race on the cell): the
//! index lookup's model fails if the pid's two counts are read in the other order or
//! the fence after the weak count is left out (both tried), and without the pid's
//! counts at all (`recycle_without_the_pid_check` expects that race). The fence between
//! the pid's strong count and the task's counts is implied by the last one, which
//! follows both loads; `sole_owner` keeps it for the reading's sake (on x86 an
//! `Acquire` fence emits no instruction).
//! The recycler also writes the pid (it takes the task slot's `Weak` out and drops the
//! pid in place without `Arc::get_mut`'s check, on the strength of the same counts),
//! and a lookup reads the slot's `Weak` once it finds the slot attached: loom checks
//! that write against those reads too.
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p uproc-tasklist --test loom_task_cache --release`.
#![cfg(loom)]
#![allow(unsafe_code)]

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicU8, AtomicUsize, Ordering, fence};
use loom::thread;

const ATTACHED: u8 = 1;
const DETACHED: u8 = 2;

/// A reaped task and its pid, as the last handle's drop finds them.
struct World {
    pid_strong: AtomicUsize,
    /// `Weak`s to the pid (the index's entry, clones of it in flight).
    pid_weak: AtomicUsize,
    /// The task slot's state.
    slot: AtomicU8,
    task_strong: AtomicUsize,
    /// `Weak`s to the task: the slot's own, inside the pid.
    task_weak: AtomicUsize,
    /// The task's contents: 7 until the recycler drops it in place.
    value: UnsafeCell<u32>,
    /// The pid's contents, its task slot's `Weak` among them: 7 until the recycler
    /// takes the slot's `Weak` out (`TaskSlot::take_unique`, kept with the task's
    /// allocation) and drops the pid in place without asking `Arc::get_mut`
    /// (`put_pid_as(pid, true)`), both on the strength of the same check.
    pid_value: UnsafeCell<u32>,
}

// SAFETY: `value` is only accessed under the protocol the model checks; loom tracks
// every access and reports those the protocol leaves unordered.
unsafe impl Sync for World {}

impl World {
    /// Reaped (slot detached, pid freed), the last task handle held by the recycler;
    /// `pid_holders` more strong counts of the pid and `index_clones` `Weak`s to it,
    /// each owned by a lookup.
    fn reaped(pid_holders: usize, index_clones: usize) -> World {
        World {
            pid_strong: AtomicUsize::new(1 + pid_holders),
            pid_weak: AtomicUsize::new(index_clones),
            slot: AtomicU8::new(DETACHED),
            task_strong: AtomicUsize::new(1),
            task_weak: AtomicUsize::new(1),
            value: UnsafeCell::new(7),
            pid_value: UnsafeCell::new(7),
        }
    }

    /// `Weak::upgrade`: an `Acquire` compare-exchange from a non-zero count.
    fn upgrade(count: &AtomicUsize) -> bool {
        let mut n = count.load(Ordering::Relaxed);
        loop {
            if n == 0 {
                return false;
            }
            match count.compare_exchange_weak(n, n + 1, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(seen) => n = seen,
            }
        }
    }

    /// A lookup holding a pid count: the slot, the task's upgrade, a read of the task.
    fn look_through_pid(&self) -> Option<u32> {
        let mut seen = None;
        // The slot's `Weak` is read (to upgrade it) only once the state says attached.
        // SAFETY (both reads): loom's cells hand out a valid pointer to an initialised
        // `u32`; whether the read races the recycler's write is what the model checks
        // (loom reports an unordered access as a failure).
        let attached = self.slot.load(Ordering::Acquire) == ATTACHED
            && self.pid_value.with(|v| unsafe { *v }) == 7;
        if attached && Self::upgrade(&self.task_strong) {
            seen = Some(self.value.with(|v| unsafe { *v }));
            self.task_strong.fetch_sub(1, Ordering::Release);
        }
        self.pid_strong.fetch_sub(1, Ordering::Release);
        seen
    }

    /// `pidfs` index lookup with a clone of the entry's `Weak`: upgrade, drop the clone.
    fn look_through_index(&self) -> Option<u32> {
        let got = Self::upgrade(&self.pid_strong);
        self.pid_weak.fetch_sub(1, Ordering::Release);
        if got { self.look_through_pid() } else { None }
    }

    /// `sole_owner` then `empty_sole_owner`'s fence and the drop in place: true if the
    /// task was recycled.
    fn put_task(&self, check_pid: bool) -> bool {
        if check_pid {
            if self.pid_weak.load(Ordering::Relaxed) != 0 {
                return false;
            }
            fence(Ordering::Acquire);
            if self.pid_strong.load(Ordering::Relaxed) != 1 {
                return false;
            }
            fence(Ordering::Acquire);
        }
        if self.task_strong.load(Ordering::Relaxed) != 1
            || self.task_weak.load(Ordering::Relaxed) != 1
        {
            return false;
        }
        fence(Ordering::Acquire);
        // The slot's `Weak` taken out and the pid dropped in place (no `Arc::get_mut`),
        // then the task's drop in place and the next fork's fill: strong count still 1.
        // SAFETY (both writes): valid pointers to initialised `u32`s; the model checks
        // that no lookup's read is unordered with them.
        self.pid_value.with_mut(|v| unsafe { *v = 0 });
        self.value.with_mut(|v| unsafe { *v = 8 });
        true
    }
}

/// The state a lookup may find before the detach: attached (a lookup that read the slot
/// just before the release). Recycling then must wait for it.
fn attached(w: World) -> World {
    w.slot.store(ATTACHED, Ordering::Relaxed);
    w
}

/// One model: a reaped task (`World::reaped(pid_holders, index_clones)`, its slot as
/// a lookup that read it before the detach finds it) whose lookup `look` races the
/// last handle's `put_task(check_pid)`. Either the check refuses (the lookup still
/// reaches the pid), or the lookup has finished with the task, or never reached it,
/// before the write: it sees the task whole or nothing.
fn lookup_races_the_recycler(
    pid_holders: usize,
    index_clones: usize,
    look: fn(&World) -> Option<u32>,
    check_pid: bool,
) {
    loom::model(move || {
        let w = Arc::new(attached(World::reaped(pid_holders, index_clones)));
        let w2 = w.clone();
        let t = thread::spawn(move || look(&w2));
        let _ = w.put_task(check_pid);
        let seen = t.join().unwrap();
        assert!(matches!(seen, None | Some(7)), "{seen:?}");
    });
}

#[test]
fn an_index_lookup_never_reads_a_recycled_task() {
    lookup_races_the_recycler(0, 1, World::look_through_index, true);
}

#[test]
fn a_pidfd_lookup_never_reads_a_recycled_task() {
    lookup_races_the_recycler(1, 0, World::look_through_pid, true);
}

#[test]
fn with_no_lookup_the_task_is_recycled() {
    loom::model(|| {
        let w = World::reaped(0, 0);
        assert!(w.put_task(true));
    });
}

/// The counterexample the pid's counts are read for: with the task's counts alone, an
/// index lookup can upgrade the task (its strong count read as 1 before the upgrade)
/// and read it while it is dropped in place. loom reports the race (a panic inside the
/// model), which this test expects.
#[test]
#[should_panic(expected = "Causality violation")]
fn recycle_without_the_pid_check() {
    lookup_races_the_recycler(0, 1, World::look_through_index, false);
}
