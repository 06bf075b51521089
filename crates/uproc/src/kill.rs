//! `KillFlag`: how a `SIGKILL` reaches an async body that is parked.
//!
//! The task list calls the task's signal hook (outside every task-list lock); the hook
//! raises this flag, and the job polling the body checks it at every poll and drops
//! the body when it is set. A parked body is polled again only if someone wakes it,
//! so the flag also keeps the waker of the task that polls the body:
//!
//! - `raise` stores the flag (`Release`) and *then* takes the waker slot under its lock
//!   and wakes what it finds;
//! - the job stores its waker under the same lock (`register`) and *then* loads the flag.
//!
//! Either the job's load sees the flag (it wakes itself and drops the body at once), or
//! `raise` took the lock after the job's store and finds the waker. The job registers
//! only when the body parks, so a body done in one poll never touches the lock.
//!
//! `tests/loom_kill.rs` checks the pairing under every interleaving; the items are
//! `pub` only so that test can reach them through `loom_model` (a `cfg(loom)` build).
#![cfg_attr(not(loom), allow(unreachable_pub))]

use crate::sync::{AtomicBool, Mutex, Ordering};
use std::task::Waker;
use uproc_abi::Signal;

/// See the module docs.
#[derive(Debug, Default)]
pub struct KillFlag {
    killed: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl KillFlag {
    /// Called by the task list's signal hook, outside every task-list lock: on
    /// `SIGKILL`, sets the flag and wakes the registered waker.
    pub fn raise(&self, sig: Signal) {
        if sig == Signal::KILL {
            self.killed.store(true, Ordering::Release);
            let w = self.waker.lock().take();
            if let Some(w) = w {
                w.wake(); // outside the lock: waking may run foreign code
            }
        }
    }

    /// Whether `SIGKILL` came.
    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    /// Stores the waker to wake on `SIGKILL` (replacing any older one). The caller
    /// checks [`is_killed`](KillFlag::is_killed) after: `raise` sets the flag before it
    /// takes the slot's lock, so a kill is either seen by that check or wakes this waker.
    pub fn register(&self, w: &Waker) {
        let old = self.waker.lock().replace(w.clone());
        drop(old); // outside the lock: dropping a waker may run foreign code
    }
}
