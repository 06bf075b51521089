//! `ExitLatch`: the handshake between a spawned task's job and its [`Child`](crate::Child).
//!
//! Two events happen once each, in either order, on different threads: the job ends the
//! task (`exit`), and the `Child` is dropped (`detach`) or awaited (`register`). The
//! latch decides, with one atomic word and no lock:
//!
//! - **who reaps a detached task**: each side sets its bit with one `fetch_or`; the side
//!   that sees the other's bit already set is second and reaps. Exactly one side sees it
//!   (the two RMWs are totally ordered on the one word), so a detached task is reaped
//!   exactly once, never zero times.
//! - **that an awaiting future is never lost**: the waker lives in a cell next to the
//!   word, and the `WAITING` bit says whose the cell is. While it is clear, the cell is
//!   the registrant's (the one `Child`): it writes its waker there and *then* sets
//!   `WAITING` (`fetch_or`, release). From then on the cell is the exit side's: `exit`
//!   sets `EXITED` (`fetch_or`, acquire-release) and, if it read `WAITING`, takes the
//!   waker and wakes it. The two RMWs are ordered on the word: either the registrant's
//!   `fetch_or` reads `EXITED` (it returns "exited" and the exit never touched the cell),
//!   or the exit's reads `WAITING` (and sees the waker the registrant wrote before).
//!   To replace a waker it published, the registrant first takes the cell back by
//!   clearing `WAITING` with a `compare_exchange` from a word without `EXITED`, which
//!   fails once the exit has claimed it.
//!
//! It replaces a `Mutex<Option<Waker>>` beside the word: the await of a spawned task
//! cost a lock round trip to register and another at exit (four read-modify-writes);
//! now the registration and the exit are one `fetch_or` each.
//!
//! `tests/loom_latch.rs` checks the rules under every interleaving (and fails when the
//! registrant's `fetch_or` or the exit's is made `Relaxed`); the items are `pub` only so
//! that test can reach them through `loom_model` (a `cfg(loom)` build).
#![cfg_attr(not(loom), allow(unreachable_pub))]
#![allow(unsafe_code)]

use crate::sync::{AtomicU8, Ordering, UnsafeCell};
use std::fmt;
use std::task::Waker;

const DETACHED: u8 = 1;
const EXITED: u8 = 2;
/// The cell holds a waker published to the exit side (see the module docs).
const WAITING: u8 = 4;

/// See the module docs.
pub struct ExitLatch {
    flags: AtomicU8,
    /// The awaiting future's waker: the registrant's while `WAITING` is clear, the exit
    /// side's once it is set.
    waker: UnsafeCell<Option<Waker>>,
}

// SAFETY: the cell is only touched by the side that owns it under the `WAITING`
// protocol of the module docs (the registrant while the bit is clear, the first `exit`
// once it is set and `EXITED` was not), and ownership passes through acquire-release
// RMWs on `flags`, so no two threads access it at once and each sees the other's
// writes. `Waker` is `Send`.
unsafe impl Sync for ExitLatch {}

impl fmt::Debug for ExitLatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExitLatch")
            .field("flags", &self.flags.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Default for ExitLatch {
    fn default() -> ExitLatch {
        ExitLatch::new()
    }
}

impl ExitLatch {
    /// A latch with neither event seen.
    pub fn new() -> ExitLatch {
        ExitLatch {
            flags: AtomicU8::new(0),
            waker: UnsafeCell::new(None),
        }
    }

    /// The job ended the task. Returns true if the `Child` was already dropped: the
    /// caller must reap. Otherwise wakes a registered waiter. A second call does
    /// nothing and returns false.
    pub fn exit(&self) -> bool {
        let prev = self.flags.fetch_or(EXITED, Ordering::AcqRel);
        if prev & (DETACHED | EXITED) != 0 {
            return prev & EXITED == 0;
        }
        if prev & WAITING != 0 {
            // SAFETY: this RMW read `WAITING` set and `EXITED` clear, and set `EXITED`:
            // the cell is this side's from now on (the registrant touches it again only
            // after a compare-exchange from a word without `EXITED`, which cannot
            // succeed any more, and later exits return above); the acquire half of the
            // RMW made the registrant's write visible.
            let waker = self.waker.with_mut(|cell| unsafe { (*cell).take() });
            if let Some(w) = waker {
                w.wake();
            }
        }
        false
    }

    /// The `Child` was dropped unwaited. Returns true if the task already exited: the
    /// caller must reap.
    pub fn detach(&self) -> bool {
        self.flags.fetch_or(DETACHED, Ordering::AcqRel) & EXITED != 0
    }

    /// Whether [`exit`](Self::exit) happened.
    pub fn is_exited(&self) -> bool {
        self.flags.load(Ordering::Acquire) & EXITED != 0
    }

    /// Whether the task exited; if not, `w` is woken when it does. A waker that
    /// `will_wake` the stored one does not replace it.
    ///
    /// # Safety
    /// One registrant: calls must not overlap (the facade's only caller is the task's
    /// one `Child`, through `&mut`).
    pub unsafe fn exited_or_register(&self, w: &Waker) -> bool {
        let mut word = self.flags.load(Ordering::Acquire);
        loop {
            if word & EXITED != 0 {
                return true;
            }
            if word & WAITING == 0 {
                break;
            }
            // Published earlier: take the cell back before touching it.
            match self.flags.compare_exchange(
                word,
                word & !WAITING,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                Err(now) => word = now,
            }
        }
        // SAFETY: `WAITING` is clear and only this registrant sets it (the caller
        // guarantees one at a time), so no exit takes the cell until the `fetch_or`
        // below publishes it.
        let old = self.waker.with_mut(|cell| unsafe {
            match &*cell {
                Some(old) if old.will_wake(w) => None,
                _ => (*cell).replace(w.clone()),
            }
        });
        let prev = self.flags.fetch_or(WAITING, Ordering::AcqRel);
        drop(old);
        prev & EXITED != 0
    }
}
