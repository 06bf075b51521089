//! `ExitLatch`: the handshake between a spawned task's job and its [`Child`](crate::Child).
//!
//! Two events happen once each, in either order, on different threads: the job ends the
//! task (`exit`), and the `Child` is dropped (`detach`) or awaited (`register`). The
//! latch decides, without a lock on the common path:
//!
//! - **who reaps a detached task**: each side sets its bit with one `fetch_or`; the side
//!   that sees the other's bit already set is second and reaps. Exactly one side sees it
//!   (the two RMWs are totally ordered on the one atomic), so a detached task is reaped
//!   exactly once, never zero times.
//! - **that an awaiting future is never lost**: the future stores its waker under the
//!   slot's mutex and *then* re-reads `EXITED`; the job sets `EXITED` and *then* takes
//!   the slot. Either the future's re-read sees `EXITED`, or the job's take finds the
//!   waker (the mutex orders the store before the take).
//!
//! `tests/loom_latch.rs` checks both rules under every interleaving; the items are `pub`
//! only so that test can reach them through `loom_model` (a `cfg(loom)` build).
#![cfg_attr(not(loom), allow(unreachable_pub))]

use crate::sync::{AtomicU8, Mutex, Ordering};
use std::task::Waker;

const DETACHED: u8 = 1;
const EXITED: u8 = 2;

/// See the module docs.
#[derive(Debug, Default)]
pub struct ExitLatch {
    flags: AtomicU8,
    waiter: Mutex<Option<Waker>>,
}

impl ExitLatch {
    /// A latch with neither event seen.
    pub fn new() -> ExitLatch {
        ExitLatch {
            flags: AtomicU8::new(0),
            waiter: Mutex::new(None),
        }
    }

    /// The job ended the task. Returns true if the `Child` was already dropped: the
    /// caller must reap. Otherwise wakes a registered waiter.
    pub fn exit(&self) -> bool {
        let prev = self.flags.fetch_or(EXITED, Ordering::AcqRel);
        if prev & DETACHED != 0 {
            return true;
        }
        let waker = self.waiter.lock().take();
        if let Some(w) = waker {
            w.wake(); // outside the lock: waking may run foreign code
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
    pub fn exited_or_register(&self, w: &Waker) -> bool {
        if self.is_exited() {
            return true;
        }
        let old = {
            let mut slot = self.waiter.lock();
            match &*slot {
                Some(old) if old.will_wake(w) => None,
                _ => slot.replace(w.clone()),
            }
        };
        drop(old); // outside the lock: dropping a waker may run foreign code
        self.is_exited()
    }
}
