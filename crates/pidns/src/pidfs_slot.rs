//! `PidfsSlot`: pidfs's per-pid state (`pid->attr`), set once by the first pidfd open
//! of the pid and read by every later one, by the exit's notification and by the
//! reap's: a value written once, and a state byte, with no lock.
//!
//! ```text
//!   state: AtomicU8   EMPTY ──claim (CAS)──▶ WRITING ──store──▶ SET
//!   value: Option<Attachment>   written once, by the claimer, between its claim and
//!                               the `Release` store of SET; taken out by the pid's
//!                               drop (`take`, `&mut`) and handed to pidfs
//!   get():          if state.load(Acquire) == SET { value }            a load
//!   get_or_init(f): get(), else v = f(); CAS EMPTY -> WRITING:
//!                     won:  value = v; state.store(SET, Release)
//!                     lost: drop(v); wait for SET (the winner is two stores away)
//! ```
//!
//! Only pidfs writes it (pidns only holds it for the `Pid`). A pid gets its state at the
//! first pidfd of its life (a `CLONE_PIDFD` fork, `pidfd_open`), so a fork with
//! `CLONE_PIDFD` initialises one slot, and every exit and reap of such a pid reads it.
//!
//! This replaced a `std::sync::OnceLock`, whose `get_or_init` goes through `Once`'s
//! general state machine (waiters, poisoning, a closure call out of line) on every
//! first initialisation, and whose drop is a call: about 100 instructions per
//! `CLONE_PIDFD` fork that a compare-exchange and two stores do. What it gives up:
//! racing initialisers may each run their `f` (the losers' values are dropped, never
//! seen), which pidfs's initialiser (a fresh, empty state) allows; and a loser waits
//! for the winner's store by spinning, then yielding, where `Once` would park it. The
//! winner holds no lock and calls nothing between its claim and its store.
//!
//! # Memory orderings
//!
//! The winner's `Release` store of `SET` comes after its write of the value; a reader's
//! `Acquire` load that reads `SET` synchronises with it, so the write happens-before
//! every read of the value. The claim is a compare-exchange, so exactly one
//! initialiser writes. Nothing writes the value again while the slot is shared (its
//! `take` needs `&mut self`). `tests/loom_pidfs_slot.rs` models two initialisers and a
//! reader racing, and fails if the store of `SET` or a reader's load is weakened to
//! `Relaxed`.

use crate::pid::Attachment;
use crate::sync::{AtomicU8, Ordering, backoff};
use std::cell::UnsafeCell;
use std::fmt;

/// Nothing set yet.
const EMPTY: u8 = 0;
/// An initialiser won the claim and is writing the value.
const WRITING: u8 = 1;
/// The value is written and never changes again.
const SET: u8 = 2;

/// pidfs's slot in a [`Pid`](crate::Pid) ([`Pid::pidfs_slot`](crate::Pid::pidfs_slot)): a
/// set-once cell of an [`Attachment`], read without a lock.
pub struct PidfsSlot {
    state: AtomicU8,
    value: UnsafeCell<Option<Attachment>>,
    /// Under loom: stands for `value`, so that the model checks that the write
    /// happens-before every read (a read touches it with `with`, the write with
    /// `with_mut`; loom reports two unordered accesses).
    #[cfg(loom)]
    witness: loom::cell::UnsafeCell<()>,
}

// SAFETY: `value` is written once, by the initialiser that won the claim (a
// compare-exchange, so one), before the `Release` store of `SET`; it is read only after
// an `Acquire` load of `SET`, and dropped only with `&mut self`. So shared access only
// reads it, after its write; an `Attachment` is `Send + Sync`, so reading it from, or
// dropping it on, any thread is sound.
#[allow(unsafe_code)]
unsafe impl Sync for PidfsSlot {}

impl PidfsSlot {
    /// An empty slot.
    pub(crate) fn new() -> PidfsSlot {
        PidfsSlot {
            state: AtomicU8::new(EMPTY),
            value: UnsafeCell::new(None),
            #[cfg(loom)]
            witness: loom::cell::UnsafeCell::new(()),
        }
    }

    /// The value, once set. One `Acquire` load.
    #[inline]
    #[allow(unsafe_code)]
    pub fn get(&self) -> Option<&Attachment> {
        if self.state.load(Ordering::Acquire) != SET {
            return None;
        }
        #[cfg(loom)]
        self.witness.with(|_| ());
        // SAFETY: the load above read `SET`, which only the claimer stores (`Release`)
        // after its one write of the value, so that write happens-before this read;
        // nothing writes the value again while the slot is shared.
        unsafe { (*self.value.get()).as_ref() }
    }

    /// The value, set to `init()` first if the slot is empty. Initialisers that race
    /// may each call their `init`; one value is kept, the others are dropped unseen.
    #[inline]
    pub fn get_or_init(&self, init: impl FnOnce() -> Attachment) -> &Attachment {
        match self.get() {
            Some(v) => v,
            None => self.initialize(init()),
        }
    }

    /// Sets `value` if the slot is still empty (else drops it), then returns the slot's
    /// value.
    #[allow(unsafe_code)]
    fn initialize(&self, value: Attachment) -> &Attachment {
        if self
            .state
            .compare_exchange(EMPTY, WRITING, Ordering::Acquire, Ordering::Acquire)
            .is_ok()
        {
            #[cfg(loom)]
            self.witness.with_mut(|_| ());
            // SAFETY: the compare-exchange made this the one initialiser: no other
            // write, and no reader reads the value before the `Release` store below.
            unsafe { *self.value.get() = Some(value) };
            self.state.store(SET, Ordering::Release);
        } else {
            drop(value);
            let mut spins = 0;
            while self.state.load(Ordering::Acquire) != SET {
                backoff(&mut spins);
            }
        }
        self.get().expect("a set slot has its value")
    }

    /// Takes the value out: the pid's drop, which hands it to pidfs
    /// ([`PidfsHooks::release_state`](crate::PidfsHooks::release_state)). `&mut`: nobody
    /// else can reach the slot, so no atomic is needed.
    pub(crate) fn take(&mut self) -> Option<Attachment> {
        self.value.get_mut().take()
    }

    /// Whether a value is there (`&mut`: the pid's drop, before [`take`](Self::take)).
    #[inline]
    pub(crate) fn holds_value(&mut self) -> bool {
        self.value.get_mut().is_some()
    }
}

impl fmt::Debug for PidfsSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PidfsSlot")
            .field("set", &(self.state.load(Ordering::Acquire) == SET))
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::PidfsSlot;
    use crate::pid::Attachment;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Barrier};

    fn value(v: &Attachment) -> usize {
        *v.downcast_ref::<usize>().expect("a usize")
    }

    #[test]
    fn empty_until_set_then_never_replaced() {
        let slot = PidfsSlot::new();
        assert!(slot.get().is_none());
        let mut calls = 0;
        assert_eq!(
            value(slot.get_or_init(|| {
                calls += 1;
                Arc::new(1usize)
            })),
            1
        );
        assert_eq!(
            value(slot.get_or_init(|| {
                calls += 1;
                Arc::new(2usize)
            })),
            1
        );
        assert_eq!(calls, 1, "a set slot calls no initialiser");
        assert_eq!(slot.get().map(value), Some(1));
    }

    /// Initialisers racing on fresh slots all return the one value kept, and every
    /// value made is dropped exactly once (the losers' at once, the winner's with the
    /// slot).
    #[test]
    fn racing_initialisers_agree_and_drop_the_losers() {
        struct Counted(usize, Arc<AtomicUsize>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.1.fetch_add(1, Ordering::Relaxed);
            }
        }
        let threads = 4;
        let rounds = if cfg!(miri) { 4 } else { 200 };
        let made = Arc::new(AtomicUsize::new(0));
        let dropped = Arc::new(AtomicUsize::new(0));
        for _ in 0..rounds {
            let slot = Arc::new(PidfsSlot::new());
            let start = Arc::new(Barrier::new(threads));
            let seen: Vec<usize> = (0..threads)
                .map(|i| {
                    let (slot, start) = (slot.clone(), start.clone());
                    let (made, dropped) = (made.clone(), dropped.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        let v = slot.get_or_init(|| {
                            made.fetch_add(1, Ordering::Relaxed);
                            Arc::new(Counted(i, dropped))
                        });
                        v.downcast_ref::<Counted>().expect("a Counted").0
                    })
                })
                .collect::<Vec<_>>()
                .into_iter()
                .map(|t| t.join().expect("no panic"))
                .collect();
            assert!(seen.iter().all(|&s| s == seen[0]), "{seen:?}");
        }
        assert_eq!(
            dropped.load(Ordering::Relaxed),
            made.load(Ordering::Relaxed),
            "every value made was dropped once"
        );
    }
}
