//! Per-pid pidfs state (`pid->attr` and `pid->wait_pidfd`), kept in
//! [`Pid::pidfs_slot`], and the two calls tasklist makes on exit and reap:
//! [`do_notify_pidfd`] and [`pidfs_exit`].
//!
//! # The slot and the flag word
//!
//! The slot is a set-once cell ([`uproc_pidns::PidfsSlot`]) holding an
//! `Arc<PidState>`, created by the first attempt to make a pidfd and shared with every
//! [`PidFd`](crate::PidFd) of the pid, so exit info outlives the `Pid`'s numbers for as
//! long as any handle lives.
//!
//! `PIDFS_PID_DEAD` (the pid was reaped: no pidfd can be made for it any more) is a bit
//! of [`Pid::pidfs_flags`], set by `pidfs_exit` with one `fetch_or`; an opener that
//! created or found the slot sets [`OPENED`] with one `fetch_or` too. Marking a pid dead
//! therefore allocates nothing and touches no shared object (an earlier version
//! installed a shared `Arc` marker in the slot: a `Once` round and a refcount on one
//! global cache line per reap).
//!
//! # Race rule: an exit racing with the first open is never lost
//!
//! The opener creates the slot, then `fetch_or(OPENED)`; `pidfs_exit` does
//! `fetch_or(DEAD)`, then looks at the slot. Both are read-modify-writes of one word, so
//! one comes first: if the opener's did, its slot is visible to `pidfs_exit` (acquire
//! on the word), which updates the state under the slot mutex; if `pidfs_exit`'s did,
//! the opener reads DEAD and fails with ESRCH. As before, the slot exists before the
//! backend is asked for the task's state, and `do_notify_pidfd` updates the slot
//! whenever it exists, so an exit's notification is seen either in the slot or in the
//! backend answer. Registration (`Registration::Registered`) and the dead mark are
//! decided under the slot mutex: an open that registers after `pidfs_exit` marked the
//! state dead fails with ESRCH, and a `pidfs_exit` after registration records exit info.

use crate::ExitEvent;
use crossbeam_channel::Sender;
use parking_lot::{Condvar, Mutex};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::Waker;
use uproc_abi::WaitStatus;
use uproc_pidns::Pid;

/// `PIDFS_PID_DEAD` in [`Pid::pidfs_flags`]: `pidfs_exit` ran; no pidfd can be made.
pub(crate) const DEAD: u8 = uproc_pidns::PIDFS_DEAD;
/// In [`Pid::pidfs_flags`]: an opener created (or found) the slot.
pub(crate) const OPENED: u8 = uproc_pidns::PIDFS_OPENED;
/// In [`Pid::pidfs_flags`] (`Scalable`): the pid got an entry in the ino index (set
/// under the entry's bucket lock by the first pidfd's registration).
pub(crate) const INDEXED: u8 = 4;
/// In [`Pid::pidfs_flags`] (`Scalable`): `pidfs_remove_pid` ran (the numbers are
/// freed); no index entry may be added after it.
pub(crate) const REMOVED: u8 = 8;

/// Whether a pidfd was ever made for the pid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Registration {
    /// The slot exists (an open is in progress or failed its checks).
    Pending,
    /// A pidfd was created (`pidfs_register_pid`): exit info will be recorded.
    Registered,
    /// Reaped while an open was between creating the slot and registering
    /// (`PIDFS_PID_DEAD` seen by `pidfs_register_pid`): the open fails with ESRCH.
    Dead,
}

/// Exit info recorded at reap (`struct pidfs_exit_info`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ExitInfo {
    pub(crate) status: WaitStatus,
    pub(crate) cgroupid: u64,
}

/// One subscriber: its channel and the pid's number in the subscriber's viewer ns.
#[derive(Debug)]
pub(crate) struct Subscriber {
    pub(crate) tx: Sender<ExitEvent>,
    pub(crate) nr: i32,
}

/// Everything under the slot mutex.
#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) registration: Registration,
    /// The task exited (and is not a delayed group leader): poll readable.
    pub(crate) exited: bool,
    /// The status it exited with, where known.
    pub(crate) exit_status: Option<WaitStatus>,
    /// Set by `pidfs_exit` for a registered pid: readable + hangup, `PIDFD_INFO_EXIT`.
    pub(crate) reaped: Option<ExitInfo>,
    /// Async waiters: `(future id, waker)`. Taken whole on wakeup; a woken future that
    /// is not ready yet registers again.
    pub(crate) wakers: Vec<(u64, Waker)>,
    pub(crate) next_waker_id: u64,
    /// Exit-event subscribers; emptied when the event is sent.
    pub(crate) subscribers: Vec<Subscriber>,
    /// Whether the exit event has been sent (it is sent once).
    pub(crate) event_sent: bool,
    /// Blocking waiters parked on `cond` (for tests and debugging).
    pub(crate) blocked: usize,
}

impl Inner {
    pub(crate) fn readable(&self) -> bool {
        self.exited || self.reaped.is_some()
    }

    /// The status to report in an exit event, once known.
    pub(crate) fn event_status(&self) -> Option<WaitStatus> {
        if self.exited {
            self.exit_status.or(self.reaped.map(|r| r.status))
        } else {
            self.reaped.map(|r| r.status)
        }
    }
}

/// `pid->attr` + `pid->wait_pidfd`: the per-pid pidfs state shared by all its pidfds.
#[derive(Debug)]
pub(crate) struct PidState {
    pub(crate) inner: Mutex<Inner>,
    pub(crate) cond: Condvar,
}

impl PidState {
    fn new() -> PidState {
        PidState {
            inner: Mutex::new(Inner {
                registration: Registration::Pending,
                exited: false,
                exit_status: None,
                reaped: None,
                wakers: Vec::new(),
                next_waker_id: 0,
                subscribers: Vec::new(),
                event_sent: false,
                blocked: 0,
            }),
            cond: Condvar::new(),
        }
    }

    /// The state of `pid`, created if the slot is empty; `None` if the pid is marked dead
    /// (before or while the slot was being created: see the race rule above).
    pub(crate) fn get_or_create(pid: &Pid) -> Option<Arc<PidState>> {
        let flags = pid.pidfs_flags();
        if flags.load(Ordering::Acquire) & DEAD != 0 {
            return None;
        }
        let any = pid
            .pidfs_slot()
            .get_or_init(|| crate::cache::new_state(PidState::new()))
            .clone();
        // Release: a `pidfs_exit` whose fetch_or comes later sees the slot.
        if flags.fetch_or(OPENED, Ordering::AcqRel) & DEAD != 0 {
            return None;
        }
        any.downcast::<PidState>().ok()
    }

    /// A registered state outside any slot, for a `PidFd` that must exist although the
    /// pid is marked dead (never in practice; see `pidfd_prepare_stale`).
    pub(crate) fn detached() -> PidState {
        let s = PidState::new();
        s.inner.lock().registration = Registration::Registered;
        s
    }

    /// A state not attached to any pid, already exited and reaped with `status`: the
    /// state of a pidfd made after the reap (`Pidfs::pidfd_reaped`).
    pub(crate) fn reaped(status: WaitStatus, cgroupid: u64) -> PidState {
        let s = PidState::detached();
        {
            let mut inner = s.inner.lock();
            inner.exited = true;
            inner.exit_status = Some(status);
            inner.reaped = Some(ExitInfo { status, cgroupid });
        }
        s
    }

    /// A state attached to no pid and never registered (`Pidfs::pidfd_wait_only`).
    pub(crate) fn unregistered() -> PidState {
        PidState::new()
    }

    /// The state of `pid` as a shared handle, if a pidfd was ever attempted.
    pub(crate) fn get_existing(pid: &Pid) -> Option<Arc<PidState>> {
        pid.pidfs_slot().get()?.clone().downcast::<PidState>().ok()
    }

    /// The state of `pid`, if a pidfd was ever attempted (not created here).
    pub(crate) fn get(pid: &Pid) -> Option<&PidState> {
        pid.pidfs_slot().get()?.downcast_ref::<PidState>()
    }
}

/// What a notification must do once the slot mutex is released.
#[derive(Default)]
struct Wakeups {
    wakers: Vec<(u64, Waker)>,
    events: Vec<Subscriber>,
    status: Option<WaitStatus>,
}

impl Wakeups {
    /// Takes the waiters out of `inner` (the caller holds the slot mutex). `None` when
    /// nobody waits: no waker and no subscriber that has not had its event (the common
    /// exit and reap, where the pidfd is only held), so that nothing is moved or run.
    /// A subscriber that comes later finds the status itself (`PidFd::subscribe`).
    fn take(inner: &mut Inner) -> Option<Wakeups> {
        if inner.wakers.is_empty() && (inner.event_sent || inner.subscribers.is_empty()) {
            return None;
        }
        let mut w = Wakeups {
            wakers: std::mem::take(&mut inner.wakers),
            ..Wakeups::default()
        };
        if !inner.event_sent {
            if let Some(status) = inner.event_status() {
                inner.event_sent = true;
                w.events = std::mem::take(&mut inner.subscribers);
                w.status = Some(status);
            }
        }
        Some(w)
    }

    /// Wakes and sends, with no lock held.
    fn run(self, ino: u64) {
        for (_, waker) in self.wakers {
            // An executor's waker is user code: its panic must not stop the exit
            // (or the release after it) that runs this.
            if let Err(panic) = uproc_abi::user::contain(|| waker.wake()) {
                tracing::error!(ino, panic, "pidfd waker panicked; contained");
            }
        }
        if let Some(status) = self.status {
            for s in self.events {
                // A dropped receiver is not an error: nobody listens any more.
                let _ = s.tx.send(ExitEvent {
                    ino,
                    pid: s.nr,
                    status,
                });
            }
        }
    }
}

/// `do_notify_pidfd`: the task attached to `pid` exited and is not a delayed group
/// leader. Its pidfds become readable; only this pid's waiters are woken (blocking
/// waiters on its condvar, async wakers registered on it) and its subscribers get one
/// [`ExitEvent`]. A no-op for a pid that never had a pidfd.
///
/// # References
/// `do_notify_pidfd` in `kernel/signal.c` (`wake_up_all(&pid->wait_pidfd)`).
#[inline]
pub fn do_notify_pidfd(pid: &Pid, status: WaitStatus) {
    // Inline, the common case: no pidfd was ever opened, one load.
    if let Some(state) = PidState::get(pid) {
        notify_pidfds(pid, state, status);
    }
}

/// [`do_notify_pidfd`] for a pid with pidfd state: out of line.
#[inline(never)]
fn notify_pidfds(pid: &Pid, state: &PidState, status: WaitStatus) {
    tracing::debug!(ino = pid.ino(), nr = pid.nr(), %status, "pidfs: do_notify_pidfd");
    let wake = {
        let mut inner = state.inner.lock();
        inner.exited = true;
        inner.exit_status.get_or_insert(status);
        if inner.blocked > 0 {
            state.cond.notify_all();
        }
        Wakeups::take(&mut inner)
    };
    if let Some(wake) = wake {
        wake.run(pid.ino());
    }
}

/// `pidfs_exit`, from `release_task` (reap): mark the pid dead so no pidfd can be
/// created for it afterwards, and for a pid that ever had a pidfd, record the exit info
/// `{status, cgroupid}` (poll becomes readable + hangup, `PIDFD_INFO_EXIT` available)
/// and wake its waiters. Allocates nothing; for a pid that never had a pidfd it is one
/// atomic `fetch_or`.
///
/// # References
/// `pidfs_exit` in `fs/pidfs.c`.
#[inline(always)]
pub fn pidfs_exit(pid: &Pid, status: WaitStatus, cgroupid: u64) {
    // Acquire: an opener whose fetch_or(OPENED) came first made its slot visible.
    pid.pidfs_flags().fetch_or(DEAD, Ordering::AcqRel);
    // Inline, the common case: no opener came first (none ever came, or one that
    // created the slot has yet to set OPENED: its fetch_or comes after ours in the
    // byte's order, sees DEAD and fails), so there is no state to update and the slot
    // is not read. A load after our fetch_or reads the byte at least as late as it (an
    // `OPENED` it shows may be a later opener's, which only costs the slot read); a
    // plain `fetch_or` whose old value is used would be a compare-exchange loop.
    let state = if pid.pidfs_flags().load(Ordering::Acquire) & OPENED == 0 {
        None
    } else {
        PidState::get(pid)
    };
    match state {
        // `ino_if_assigned`: a trace must not number a pid that nobody asked about
        // (under `Scalable` `Pid::ino` assigns one on first read).
        None => {
            tracing::debug!(ino = ?pid.ino_if_assigned(), nr = pid.nr(), "pidfs: exit, marked dead")
        }
        Some(state) => record_exit(pid, state, status, cgroupid),
    }
}

/// [`pidfs_exit`] for a pid with pidfd state: out of line.
#[inline(never)]
fn record_exit(pid: &Pid, state: &PidState, status: WaitStatus, cgroupid: u64) {
    tracing::debug!(ino = pid.ino(), nr = pid.nr(), %status, cgroupid, "pidfs: exit");
    let wake = {
        let mut inner = state.inner.lock();
        if inner.registration != Registration::Registered {
            // An open is between creating the slot and registering: it will see this
            // mark and fail with ESRCH, as if it had come after the reap.
            inner.registration = Registration::Dead;
            return;
        }
        if inner.reaped.is_none() {
            inner.reaped = Some(ExitInfo { status, cgroupid });
        }
        if inner.blocked > 0 {
            state.cond.notify_all();
        }
        Wakeups::take(&mut inner)
    };
    if let Some(wake) = wake {
        wake.run(pid.ino());
    }
}
