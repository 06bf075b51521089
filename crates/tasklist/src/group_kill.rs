//! Group kills in flight (`Scalable`): the handshake that keeps a fork from outrunning
//! `kill(-1)` / `kill(-pgid)`.
//!
//! Linux's group kill holds `tasklist_lock` (read) over its whole walk and
//! `copy_process` attaches under the write lock, failing with EINTR when a fatal signal
//! is pending: no child of a doomed process escapes. `Scalable`'s forks take no
//! `tasklist_lock`, so the kill (`signal::signal_groups`) walks again after marking
//! until a walk finds nothing new. A fork bomb whose children each fork the next
//! before a walk decides them could keep every walk busy; this module makes each fork
//! that attached during a kill wait, before it returns, until that kill has ended. The
//! child cannot fork before its fork returns, so each forking thread adds at most one
//! child while a kill is in flight, and the kill's walks end.
//!
//! The handshake is Dekker's, on one word ([`GroupKills::in_flight`]):
//!
//! ```text
//! kill:  raise (fetch_add, SeqCst); fence(SeqCst); walk (pid_task of every pid)
//! fork:  attach (task slot written); fence(SeqCst); load in_flight
//! ```
//!
//! Either the kill's walk (after its fence) sees the attached child, or the fork's
//! load (after its fence) sees the kill and waits for it to end. The fork's fence is
//! the one `Task::fork` already makes after its attach for the namespace zap; the load
//! is the only cost on the fork path, of a word no fork writes
//! (`tests/loom_group_kill.rs` fails with either fence removed).
//!
//! A fork that sees the word raised waits on [`GroupKills::wait_out`] for every kill
//! that had begun by then (by ticket, so later kills cannot starve it) to end. The word
//! is process-wide rather than per runtime: a fork reaches its runtime only through
//! slow paths, and a fork of another runtime that sees the word raised only waits for
//! that kill's walks, which never wait for anything a fork holds (see below).
//!
//! What the waiting fork holds, and why nothing the kill waits for needs it: no lock
//! at all (it waits after its `threadgroup_rwsem` read lock is dropped and its child
//! linked into its cgroup), only its child's pids charge, which a kill never waits
//! for. A kill's walks take `tasklist_lock` (read), `children` locks and siglocks,
//! whose holders never wait for a fork to return. The kill
//! ends ([`KillInFlight`] dropped) after its last walk and before its actions (hooks,
//! exits, parent notifications): a hook that forks, or an exit that waits for a
//! migration waiting for the fork's rwsem, runs after the fork is released. `Linux*`
//! neither raises nor waits: their attach excludes the walk under `tasklist_lock`.

// `pub` for the loom model (`loom_model::group_kill`), crate-private otherwise.
#![cfg_attr(not(loom), allow(unreachable_pub))]

use crate::sync::{AtomicU64, Ordering, fence};
#[cfg(not(loom))]
use crate::sync::{Condvar, Mutex};
#[cfg(not(loom))]
use std::collections::BTreeSet;

/// The kills in flight: the handshake word, and the tickets a waiting fork waits on.
/// Aligned to its own cache lines (two, for the adjacent-line prefetch), so that the
/// word every fork reads shares no line with anything but the kills' own slow path
/// (the tickets, which only a kill or a fork that waits for one writes).
#[derive(Debug)]
#[repr(align(128))]
pub struct GroupKills {
    /// How many group kills are between their raise and their end: the one word the
    /// fork path reads (and never writes).
    in_flight: AtomicU64,
    /// The tickets of the kills in flight and the next ticket (slow path only).
    #[cfg(not(loom))]
    tickets: Mutex<Tickets>,
    /// Notified when a kill ends.
    #[cfg(not(loom))]
    ended: Condvar,
}

/// Kills in flight, by ticket (in the order they began).
#[cfg(not(loom))]
#[derive(Debug)]
struct Tickets {
    next: u64,
    in_flight: BTreeSet<u64>,
}

impl GroupKills {
    /// No kill in flight.
    #[cfg(not(loom))]
    pub const fn new() -> GroupKills {
        GroupKills {
            in_flight: AtomicU64::new(0),
            tickets: Mutex::new(Tickets {
                next: 0,
                in_flight: BTreeSet::new(),
            }),
            ended: Condvar::new(),
        }
    }

    /// No kill in flight (loom model: the handshake word alone).
    #[cfg(loom)]
    pub fn new() -> GroupKills {
        GroupKills {
            in_flight: AtomicU64::new(0),
        }
    }

    /// The kill's side before its first walk: raise the word, then the fence that
    /// orders the raise before every read of the walk.
    pub fn raise(&self) {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    /// The kill's end, after its last walk.
    pub fn lower(&self) {
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }

    /// The fork's side, after its attach and its `SeqCst` fence: whether some kill is
    /// in flight (one load; the fork path never writes the word).
    #[inline]
    pub fn any_in_flight(&self) -> bool {
        self.in_flight.load(Ordering::SeqCst) != 0
    }

    /// Begins a kill: takes a ticket and raises the word under the tickets' lock, so
    /// that a fork that sees the raise finds the ticket.
    #[cfg(not(loom))]
    pub(crate) fn begin(&self) -> KillInFlight<'_> {
        let ticket = {
            let mut t = self.tickets.lock();
            let ticket = t.next;
            t.next += 1;
            t.in_flight.insert(ticket);
            self.raise();
            ticket
        };
        KillInFlight {
            kills: self,
            ticket,
        }
    }

    /// A fork that saw [`GroupKills::any_in_flight`]: waits until every kill that had
    /// begun by now has ended (kills begun later do not hold it up).
    #[cfg(not(loom))]
    #[cold]
    pub(crate) fn wait_out(&self) {
        let mut t = self.tickets.lock();
        let upto = t.next;
        let mut waited = false;
        while t.in_flight.first().is_some_and(|&oldest| oldest < upto) {
            if !waited {
                tracing::trace!("fork waits for a group kill in flight");
                waited = true;
            }
            self.ended.wait(&mut t);
        }
    }
}

#[cfg(loom)]
impl Default for GroupKills {
    fn default() -> Self {
        GroupKills::new()
    }
}

/// A kill between its raise and its end: dropping it (after the last walk, or on
/// unwinding) lowers the word and wakes the forks waiting for it.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct KillInFlight<'a> {
    kills: &'a GroupKills,
    ticket: u64,
}

#[cfg(not(loom))]
impl Drop for KillInFlight<'_> {
    fn drop(&mut self) {
        {
            let mut t = self.kills.tickets.lock();
            t.in_flight.remove(&self.ticket);
            self.kills.lower();
        }
        self.kills.ended.notify_all();
    }
}

/// The process's group kills in flight (every `Scalable` runtime's).
#[cfg(not(loom))]
pub(crate) static GROUP_KILLS: GroupKills = GroupKills::new();

/// Fork's step after its attach and the fence that follows `started` (before it returns):
/// under `Scalable` (`scalable`), a fork that attached while a group kill was in flight
/// waits until that kill has ended, so that the kill's next walk finds its child before
/// the child can fork in turn. One load when no kill is in flight; nothing under
/// `Linux*`.
#[cfg(not(loom))]
#[inline]
pub(crate) fn wait_out_group_kills(scalable: bool) {
    if scalable && GROUP_KILLS.any_in_flight() {
        GROUP_KILLS.wait_out();
    }
}

/// `signal_groups` under `Scalable`: a group kill is in flight until the guard drops.
#[cfg(not(loom))]
pub(crate) fn begin_group_kill() -> KillInFlight<'static> {
    GROUP_KILLS.begin()
}

/// Under loom the crate builds but never forks: no process-wide state.
#[cfg(loom)]
pub(crate) fn wait_out_group_kills(_scalable: bool) {}

/// Under loom the crate builds but never kills: no process-wide state.
#[cfg(loom)]
pub(crate) fn begin_group_kill() -> KillInFlight {
    KillInFlight
}

/// Under loom: nothing in flight to end.
#[cfg(loom)]
#[derive(Debug)]
pub(crate) struct KillInFlight;
