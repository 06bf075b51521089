//! `TaskSlot`: the task attached to a pid as `PIDTYPE_PID` (`pid->tasks`), a `Weak`
//! behind a word-sized reader-writer spin lock whose writer unlocks with a plain store.
//!
//! ```text
//!   state: AtomicU32 = WRITER (bit 31) | readers (bits 0..31)     value: Weak<dyn Any>
//!   write():  compare-exchange 0 -> WRITER (Acquire)   ...   unlock: store 0 (Release)
//!   read():   compare-exchange n -> n + 1 if no WRITER (Acquire) ... fetch_sub 1 (Release)
//! ```
//!
//! The slot is written twice in a task's life: once when the task is attached (fork)
//! and once when it is released (reap), each time by the one thread doing that;
//! lookups (`pid_task`, `find_task_by_vpid`, a kill by number) read it and upgrade
//! the `Weak`. A general lock (`parking_lot::RwLock`, used before) costs each write a
//! locked acquire and a locked release: the release must check for parked waiters.
//! Here nobody ever parks (a waiter spins, then yields: every hold is a few
//! instructions, and writers meet readers rarely), so the writer's unlock is a plain
//! `Release` store and a write costs one `lock`ed instruction instead of two. Readers
//! pay two (enter, leave), as before.
//!
//! # Memory orderings
//!
//! Every entry is an `Acquire` read-modify-write of the state word and every exit a
//! `Release` write of it (the writer's store, a reader's decrement), so each holder
//! synchronises with the holder before it: mutual exclusion with happens-before, as
//! any lock gives. A lookup that enters after a release's clear read the state the
//! clear's unlock wrote (or one later in its modification order, which the reader
//! decrements only continue), so it sees the slot empty: it never returns the task.
//! `tests/loom_task_slot.rs` models publish vs. lookup vs. clear (loom checks the
//! value's accesses) and fails if the writer's unlock or a reader's entry is weakened
//! to `Relaxed`.

use crate::sync::{AtomicU32, Ordering, backoff};
use std::any::Any;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Weak;

/// The held value: what tasklist attaches.
type Value = Option<Weak<dyn Any + Send + Sync>>;

/// State bit: a writer holds the slot.
const WRITER: u32 = 1 << 31;

/// The task slot of a [`Pid`](crate::Pid): a `Weak` to the attached task, read and
/// written through guards as with a reader-writer lock (`read()`, `write()`).
///
/// Nobody sleeps on it: a waiter spins briefly, then yields. Writers are the fork that
/// attaches the task and the reap that detaches it; lookups are the readers.
pub struct TaskSlot {
    state: AtomicU32,
    #[cfg(not(loom))]
    value: std::cell::UnsafeCell<Value>,
    #[cfg(loom)]
    value: loom::cell::UnsafeCell<Value>,
}

// SAFETY: the value is only reached through the guards, which the state word makes
// exclusive (a writer) or shared among readers only; `Weak<dyn Any + Send + Sync>` is
// `Send + Sync`, so sharing or handing it over between threads is sound.
#[allow(unsafe_code)]
unsafe impl Sync for TaskSlot {}

impl TaskSlot {
    /// An empty slot.
    pub(crate) fn new() -> TaskSlot {
        TaskSlot {
            state: AtomicU32::new(0),
            #[cfg(not(loom))]
            value: std::cell::UnsafeCell::new(None),
            #[cfg(loom)]
            value: loom::cell::UnsafeCell::new(None),
        }
    }

    /// Shared access: waits while a writer holds the slot (a few instructions).
    #[inline]
    #[allow(unsafe_code)]
    pub fn read(&self) -> TaskSlotReadGuard<'_> {
        let mut cur = self.state.load(Ordering::Relaxed);
        let mut spins = 0;
        loop {
            if cur & WRITER != 0 || cur == WRITER - 1 {
                backoff(&mut spins);
                cur = self.state.load(Ordering::Relaxed);
                continue;
            }
            match self
                .state
                .compare_exchange(cur, cur + 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(seen) => cur = seen,
            }
        }
        TaskSlotReadGuard {
            slot: self,
            #[cfg(loom)]
            ptr: self.value.get(),
        }
    }

    /// Exclusive access: waits while anyone holds the slot. The guard's drop unlocks
    /// with a plain store.
    #[inline]
    pub fn write(&self) -> TaskSlotWriteGuard<'_> {
        let mut spins = 0;
        while self
            .state
            .compare_exchange(0, WRITER, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            backoff(&mut spins);
        }
        TaskSlotWriteGuard {
            slot: self,
            #[cfg(loom)]
            ptr: self.value.get_mut(),
        }
    }
}

impl fmt::Debug for TaskSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskSlot")
            .field("attached", &self.read().is_some())
            .finish()
    }
}

/// Shared access to a [`TaskSlot`]'s value; leaving is one `Release` decrement.
pub struct TaskSlotReadGuard<'a> {
    slot: &'a TaskSlot,
    #[cfg(loom)]
    ptr: loom::cell::ConstPtr<Value>,
}

impl Deref for TaskSlotReadGuard<'_> {
    type Target = Option<Weak<dyn Any + Send + Sync>>;

    #[inline]
    #[allow(unsafe_code)]
    fn deref(&self) -> &Self::Target {
        // SAFETY: this guard holds a reader count of the state word, so no writer
        // holds the slot (a writer enters only from a state of zero) until it drops.
        #[cfg(not(loom))]
        return unsafe { &*self.slot.value.get() };
        #[cfg(loom)]
        return unsafe { self.ptr.deref() };
    }
}

impl fmt::Debug for TaskSlotReadGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TaskSlotReadGuard").field(&**self).finish()
    }
}

impl Drop for TaskSlotReadGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        self.slot.state.fetch_sub(1, Ordering::Release);
    }
}

/// Exclusive access to a [`TaskSlot`]'s value; unlocking is one `Release` store.
pub struct TaskSlotWriteGuard<'a> {
    slot: &'a TaskSlot,
    #[cfg(loom)]
    ptr: loom::cell::MutPtr<Value>,
}

impl Deref for TaskSlotWriteGuard<'_> {
    type Target = Option<Weak<dyn Any + Send + Sync>>;

    #[inline]
    #[allow(unsafe_code)]
    fn deref(&self) -> &Self::Target {
        // SAFETY: this guard holds the state word's WRITER bit: no other guard exists.
        #[cfg(not(loom))]
        return unsafe { &*self.slot.value.get() };
        #[cfg(loom)]
        return unsafe { self.ptr.deref() };
    }
}

impl DerefMut for TaskSlotWriteGuard<'_> {
    #[inline]
    #[allow(unsafe_code)]
    fn deref_mut(&mut self) -> &mut Self::Target {
        // SAFETY: as for `deref`; `&mut self` makes this the only reference.
        #[cfg(not(loom))]
        return unsafe { &mut *self.slot.value.get() };
        #[cfg(loom)]
        return unsafe { self.ptr.deref() };
    }
}

impl fmt::Debug for TaskSlotWriteGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TaskSlotWriteGuard").field(&**self).finish()
    }
}

impl Drop for TaskSlotWriteGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        // Only this guard can change the word while WRITER is set (readers and writers
        // enter from states without it): a store suffices.
        self.slot.state.store(0, Ordering::Release);
    }
}
