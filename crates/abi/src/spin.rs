//! The lock of the short per-task and per-process critical sections: a spin lock whose
//! acquisition is one compare-exchange and whose release is a plain `Release` store.
//!
//! Its users take it on every life cycle and almost never contend on it: a process's
//! siglock (`uproc-tasklist`; Linux's `sighand->siglock` is a spinlock too), shared
//! only with signals, waits and the exits of that process's threads and children, a
//! cgroup link's state (the parent's at can_fork, the child's at task_dead), shared
//! only with a migration of that task, and an anchor's member set (post_fork,
//! task_dead), shared only with the forking parent's other children and the rare
//! readers (`cgroup.procs`, `cgroup.kill`, rmdir, migration). A
//! `parking_lot` mutex costs two atomic read-modify-writes per round (a
//! compare-exchange to lock, another to unlock, which must look for parked waiters);
//! this lock costs one, which is what the life cycle pays most for (every atomic is
//! a full barrier on x86). The price is on contention: a waiter spins a little, then
//! yields its time slice until the holder is done. Every critical section under it is
//! short and takes no lock but the ones the crate's lock order puts after it.
//!
//! Wrapped in `lock_api`'s `Mutex` (through `parking_lot`'s re-export), so the
//! guards and the code that takes them are those of any other mutex.

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::lock_api;

/// A mutex of [`RawSpin`]: see the module essay.
pub type SpinMutex<T> = lock_api::Mutex<RawSpin, T>;

/// A guard of a [`SpinMutex`].
pub type SpinGuard<'a, T> = lock_api::MutexGuard<'a, RawSpin, T>;

/// Exchanges before a waiter starts yielding its time slice.
const SPINS_BEFORE_YIELD: u32 = 64;

/// The flag the lock's algorithm runs on: `std`'s `AtomicBool` in the crate, loom's in
/// `uproc-cgroup`'s `tests/loom_spin.rs` (whose flag cannot be the `const` that `lock_api` needs), so
/// the model checks the very functions below.
pub trait SpinFlag {
    /// `compare_exchange(false, true)`: whether it took the flag. Not a swap: a
    /// failed attempt then writes nothing (and loom 0.7 lets a final load read the
    /// `true` of a swap that failed against a holder that released after it, a
    /// history no hardware produces, so the model could not check a swap).
    fn acquire(&self) -> bool;
    /// The flag's value (`true`: held).
    fn load(&self, order: Ordering) -> bool;
    /// Sets the flag (`false` with `Release`: the holder's unlock).
    fn store(&self, value: bool, order: Ordering);
    /// A waiter's pause while the flag reads held.
    #[inline]
    fn backoff(spins: &mut u32) {
        if *spins < SPINS_BEFORE_YIELD {
            *spins += 1;
            core::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

impl SpinFlag for AtomicBool {
    #[inline]
    fn acquire(&self) -> bool {
        self.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }
    #[inline]
    fn load(&self, order: Ordering) -> bool {
        AtomicBool::load(self, order)
    }
    #[inline]
    fn store(&self, value: bool, order: Ordering) {
        AtomicBool::store(self, value, order)
    }
}

#[cfg(loom)]
impl SpinFlag for loom::sync::atomic::AtomicBool {
    fn acquire(&self) -> bool {
        self.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }
    fn load(&self, order: Ordering) -> bool {
        loom::sync::atomic::AtomicBool::load(self, order)
    }
    fn store(&self, value: bool, order: Ordering) {
        loom::sync::atomic::AtomicBool::store(self, value, order)
    }
    /// loom must be told that a spinning thread waits for another.
    fn backoff(_: &mut u32) {
        loom::thread::yield_now();
    }
}

/// Takes the lock: one compare-exchange when it is free.
#[inline]
pub fn lock<F: SpinFlag>(flag: &F) {
    if !flag.acquire() {
        lock_contended(flag);
    }
}

#[cold]
#[inline(never)]
fn lock_contended<F: SpinFlag>(flag: &F) {
    let mut spins = 0u32;
    loop {
        // Wait reading, not writing: the holder's line stays shared until it stores.
        while flag.load(Ordering::Relaxed) {
            F::backoff(&mut spins);
        }
        if flag.acquire() {
            return;
        }
    }
}

/// Takes the lock if it is free.
#[inline]
pub fn try_lock<F: SpinFlag>(flag: &F) -> bool {
    flag.acquire()
}

/// Releases the lock (its holder only): one plain `Release` store.
#[inline]
pub fn unlock<F: SpinFlag>(flag: &F) {
    flag.store(false, Ordering::Release);
}

/// The raw lock: `true` while held.
#[derive(Debug)]
pub struct RawSpin(AtomicBool);

// SAFETY: `lock` and `try_lock` return only after this thread's compare-exchange turned the
// flag from `false` to `true`, so at most one holder exists at a time (the exchanges
// of one flag are totally ordered); `unlock` is called only by that holder (the
// trait's contract) and stores `false` with `Release`, which the next holder's
// `Acquire` exchange reads, so everything the holder did happens before the next
// critical section (`uproc-cgroup`'s `tests/loom_spin.rs` checks both). The guard may be sent: nothing
// in the lock is tied to a thread.
#[allow(unsafe_code)]
unsafe impl lock_api::RawMutex for RawSpin {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawSpin = RawSpin(AtomicBool::new(false));

    type GuardMarker = lock_api::GuardSend;

    #[inline]
    fn lock(&self) {
        lock(&self.0);
    }

    #[inline]
    fn try_lock(&self) -> bool {
        try_lock(&self.0)
    }

    #[inline]
    unsafe fn unlock(&self) {
        unlock(&self.0);
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn excludes_and_hands_over_what_was_written() {
        let m = Arc::new(SpinMutex::new(0u64));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || {
                    for _ in 0..20_000 {
                        // A read-modify-write that loses updates without exclusion.
                        let mut g = m.lock();
                        let v = *g;
                        *g = v + 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*m.lock(), 80_000);
    }

    #[test]
    fn try_lock_fails_while_held() {
        let m = SpinMutex::new(());
        let g = m.lock();
        assert!(m.try_lock().is_none());
        assert!(m.is_locked());
        drop(g);
        assert!(m.try_lock().is_some());
        assert!(!m.is_locked());
    }
}
