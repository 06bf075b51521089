//! `TaskSlot`: the task attached to a pid as `PIDTYPE_PID` (`pid->tasks`): a `Weak`
//! written once, and a state byte that says whether it is attached, with no lock.
//!
//! ```text
//!   state: AtomicU8   EMPTY ──attach──▶ ATTACHED ──detach──▶ DETACHED
//!   value: Weak<dyn Any>   written once, by attach, before the state says ATTACHED;
//!                          dropped with the slot (the pid's drop)
//!   attach():  value = weak; state.store(ATTACHED, Release)        plain stores
//!   detach():  state.store(DETACHED, Release)                      a plain store
//!   get():     if state.load(Acquire) == ATTACHED { value.upgrade() }
//! ```
//!
//! A pid names one task for its whole life: the fork that allocated it attaches the
//! task (the boot, for the runtime init), the reap detaches it, and nothing attaches it
//! again. Lookups (`pid_task`, `find_task_by_vpid`, a kill by number, a pidfd's
//! operations) read the state and upgrade the `Weak`.
//!
//! So the value needs no lock: it is written once, before anyone may read it, and
//! never again while the slot is shared; what changes is only whether it counts, which
//! one byte says. The `Weak` stays until the pid drops instead of going at the detach:
//! a lookup that read `ATTACHED` just before the detach may still be reading it, and
//! the pid outlives every lookup through it. (It keeps the task's allocation, not the
//! task: its fields are dropped with its last strong count, as before; the block is
//! freed with the pid, which the task itself holds, so only a pid held past its task's
//! end, by a pidfd, keeps the block that much longer.)
//!
//! The lock this replaced (a word-sized reader-writer spin lock) cost the attach and
//! the detach one locked instruction each and every lookup two: a life cycle now pays
//! none here.
//!
//! # Memory orderings
//!
//! The attach's `Release` store of `ATTACHED` comes after its write of the value; a
//! lookup's `Acquire` load that reads `ATTACHED` synchronises with it, so the write
//! happens-before the lookup's read of the value (no data race, the `Weak` complete).
//! The detach's `Release` store of `DETACHED` is later in the byte's modification order
//! than the attach's: a lookup that happens after the detach (it read a flag the
//! detacher set afterwards, say) reads `DETACHED` or later by coherence, so it never
//! returns the task; a lookup concurrent with the detach may return it, as one that
//! ran just before it would have. The zap and group-kill handshakes that must find a
//! new task (the fork's `SeqCst` fence after `started`) order the attach's store like
//! any other store before that fence. `tests/loom_task_slot.rs` models attach vs.
//! lookup vs. detach vs. the slot's drop, and fails if the attach's store or a lookup's
//! load is weakened to `Relaxed`.

use crate::sync::{AtomicU8, Ordering};
use std::any::Any;
use std::fmt;
use std::sync::{Arc, Weak};

/// The held value: what tasklist attaches.
type Value = Option<Weak<dyn Any + Send + Sync>>;

/// Nothing attached yet.
const EMPTY: u8 = 0;
/// The value is written and names the attached task.
const ATTACHED: u8 = 1;
/// The task was released: lookups find nothing (the value stays until the drop).
const DETACHED: u8 = 2;

/// The task slot of a [`Pid`](crate::Pid): a `Weak` to the attached task, attached once
/// ([`attach`](TaskSlot::attach), unsafe: once per slot), detached once
/// ([`detach`](TaskSlot::detach)), read by lookups ([`get`](TaskSlot::get)) without a
/// lock.
pub struct TaskSlot {
    state: AtomicU8,
    #[cfg(not(loom))]
    value: std::cell::UnsafeCell<Value>,
    #[cfg(loom)]
    value: loom::cell::UnsafeCell<Value>,
}

// SAFETY: the value is written only by `attach`, whose contract makes it the one write
// while the slot is shared, before the `Release` store that lets a reader in (a reader
// reads only after an `Acquire` load of it), and dropped only with `&mut self`. So
// shared access only reads it, after its write; `Weak<dyn Any + Send + Sync>` is
// `Send + Sync`, so reading it from, or dropping it on, any thread is sound.
#[allow(unsafe_code)]
unsafe impl Sync for TaskSlot {}

impl TaskSlot {
    /// An empty slot.
    pub(crate) fn new() -> TaskSlot {
        TaskSlot {
            state: AtomicU8::new(EMPTY),
            #[cfg(not(loom))]
            value: std::cell::UnsafeCell::new(None),
            #[cfg(loom)]
            value: loom::cell::UnsafeCell::new(None),
        }
    }

    /// Attaches `task` (`attach_pid(PIDTYPE_PID)`): [`get`](TaskSlot::get) finds it from
    /// here on, until [`detach`](TaskSlot::detach). Two plain stores.
    ///
    /// # Safety
    ///
    /// At most one `attach` per slot over its whole life, and none concurrent with
    /// another: the caller is the one that owns the pid's first task (the fork that
    /// allocated the pid, or the boot of the runtime init). The value is written
    /// without a lock; a second attach would write it while lookups read it.
    #[inline]
    #[allow(unsafe_code)]
    pub unsafe fn attach(&self, task: Weak<dyn Any + Send + Sync>) {
        debug_assert_ne!(
            self.state.load(Ordering::Relaxed),
            ATTACHED,
            "a pid's task slot is attached once"
        );
        #[cfg(not(loom))]
        // SAFETY: the caller's contract: no other attach, so no other write; no reader
        // reads the value before the `Release` store below lets it in. Written without
        // dropping the old value, which is `None` (a slot is made empty and attached
        // once): no drop code for a value that is never there.
        unsafe {
            debug_assert!((*self.value.get()).is_none());
            self.value.get().write(Some(task));
        }
        #[cfg(loom)]
        self.value.with_mut(|v| {
            // SAFETY: as above (loom records the access and checks that claim).
            unsafe { *v = Some(task) }
        });
        self.state.store(ATTACHED, Ordering::Release);
    }

    /// Detaches the task (`detach_pid(PIDTYPE_PID)` at release): lookups that start
    /// after this find nothing. One plain store; idempotent.
    #[inline]
    pub fn detach(&self) {
        self.state.store(DETACHED, Ordering::Release);
    }

    /// Whether a task is attached (and not detached yet).
    #[inline]
    pub fn is_attached(&self) -> bool {
        self.state.load(Ordering::Acquire) == ATTACHED
    }

    /// Whether a task was ever attached (attached now, or detached since): the slot then
    /// holds that task's `Weak` until the pid drops. A plain load; for a task deciding
    /// how many of the weak references to it are its own pid's.
    #[inline]
    pub fn was_attached(&self) -> bool {
        self.state.load(Ordering::Relaxed) != EMPTY
    }

    /// Takes the slot's `Weak` out, for the task's own recycling (the task cache of
    /// `uproc-tasklist`, which keeps it beside the task's emptied allocation and hands
    /// it to the next task written there): the pid's drop then drops no `Weak`, and the
    /// next fork makes none. The state is left as it is ([`detach`](TaskSlot::detach)ed
    /// by the reap already; by the contract below nothing reads it again).
    ///
    /// # Safety
    ///
    /// Nobody else reads or writes the slot while this runs or after: the caller holds
    /// the pid's only reference and has proved that no other can be made (the task
    /// cache's `sole_owner`: the pid's counts read after `Acquire` fences), so no
    /// lookup can be reading the value.
    #[inline]
    #[allow(unsafe_code)]
    pub unsafe fn take_unique(&self) -> Option<Weak<dyn Any + Send + Sync>> {
        #[cfg(not(loom))]
        // SAFETY: the caller's contract: nothing else accesses the value now or later
        // (the drop, with `&mut self`, comes after), so this write races with nothing.
        return unsafe { (*self.value.get()).take() };
        #[cfg(loom)]
        return self.value.with_mut(|v| {
            // SAFETY: as above (loom records the access and checks that claim).
            unsafe { (*v).take() }
        });
    }

    /// The attached task, if one is attached and still alive (`pid_task`).
    #[inline]
    #[allow(unsafe_code)]
    pub fn get(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        if !self.is_attached() {
            return None;
        }
        #[cfg(not(loom))]
        // SAFETY: the `Acquire` load above read `ATTACHED`, which only the attach
        // stores (`Release`) after its one write of the value, so that write
        // happens-before this read; nothing else writes the value while the slot is
        // shared (the drop needs `&mut self`).
        return unsafe { (*self.value.get()).as_ref().and_then(Weak::upgrade) };
        #[cfg(loom)]
        return self.value.with(|v| {
            // SAFETY: as above (loom records the access and checks that claim).
            unsafe { (*v).as_ref().and_then(Weak::upgrade) }
        });
    }
}

impl fmt::Debug for TaskSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state.load(Ordering::Acquire) {
            EMPTY => "empty",
            ATTACHED => "attached",
            _ => "detached",
        };
        f.debug_struct("TaskSlot").field("state", &state).finish()
    }
}
