//! `KillState`: what a cgroup tells a fork about the `cgroup.kill`s that ran while the
//! fork was between can_fork and post_fork (Linux's `cgrp->kill_seq` and its
//! `CGRP_KILL` flag, `cgroup_css_set_fork` / `cgroup_post_fork`).
//!
//! ```text
//!   kill:  begin: in_flight += 1; seq += 1      (before collecting the members)
//!          collect the members (under the member locks), SIGKILL each
//!          end:   seq += 1; in_flight -= 1      (after the last SIGKILL)
//!   fork:  can_fork: seen = seq
//!          attach (the task list: EINTR if the parent has a fatal signal)
//!          post_fork: in the critical section (the member lock) that links the
//!                     child: killed = in_flight != 0 || seq != seen
//! ```
//!
//! A fork comes out killed when a kill started after its can_fork (the first bump),
//! is in flight as it links (the mark), or ended after its can_fork (the second bump).
//! The last case is the one a kill's snapshot of the members cannot catch alone: the
//! parent, a collected member, got its SIGKILL only after the fork's attach had checked
//! it for a fatal signal, and the child was linked after the collection. Without it the
//! child of a killed member outlived the kill.
//!
//! Who may touch what: every kill of this cgroup or an ancestor begins and ends it
//! (kills nest: `in_flight` counts them); forks into this cgroup only read it.
//!
//! # Memory orderings
//!
//! - A fork whose link the kill's collection did not see took the member lock after
//!   the collection released it, so its loads (in that critical section) see the
//!   kill's `begin` (before the collection): `in_flight` raised, or, if it reads it
//!   lowered, a value that came later in its modification order, which is an `end`'s.
//! - The fork loads `in_flight` first (`Acquire`). Reading an `end`'s decrement
//!   (`Release`) makes that end's second bump, sequenced before it, visible to the
//!   `seq` load that follows: `seq != seen` unless `seen` already included it, and a
//!   fork that read `seq` at can_fork after a kill's end started after that kill (its
//!   parent's SIGKILL, sent before the end, is then seen by the attach: EINTR).
//!
//! `tests/loom_kill.rs` checks it: a fork racing a kill of its parent either fails,
//! or its child is collected, or it comes out killed; and it fails with the reading
//! order of the two loads swapped (or the decrement weakened to `Relaxed`).

use crate::sync::{AtomicU32, AtomicU64, Ordering};

/// One cgroup's kill sequence and kills in flight (see the module docs).
#[derive(Debug)]
pub(crate) struct KillState {
    /// Bumped at each kill's begin and at its end.
    seq: AtomicU64,
    /// Kills between their begin and their end.
    in_flight: AtomicU32,
}

impl Default for KillState {
    fn default() -> KillState {
        KillState {
            seq: AtomicU64::new(0),
            in_flight: AtomicU32::new(0),
        }
    }
}

impl KillState {
    /// A kill of this cgroup (or an ancestor) begins: before it collects any member.
    #[inline]
    pub(crate) fn begin(&self) {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.seq.fetch_add(1, Ordering::AcqRel);
    }

    /// That kill ends: after its last SIGKILL.
    #[inline]
    pub(crate) fn end(&self) {
        self.seq.fetch_add(1, Ordering::AcqRel);
        self.in_flight.fetch_sub(1, Ordering::Release);
    }

    /// Whether a kill of this cgroup (or an ancestor) is between its begin and its end:
    /// a migration into the cgroup waits for it to end (see
    /// [`Cgroup::attach_links`](crate::Cgroup::attach_links)).
    #[inline]
    pub(crate) fn in_flight(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) != 0
    }

    /// can_fork's reading, kept by the fork until post_fork.
    #[inline]
    pub(crate) fn seen(&self) -> u64 {
        self.seq.load(Ordering::Acquire)
    }

    /// post_fork, in the critical section that links the child (the lock the kill
    /// collects under): whether a kill overlapped the fork since `seen`.
    #[inline]
    pub(crate) fn raced(&self, seen: u64) -> bool {
        self.in_flight.load(Ordering::Acquire) != 0 || self.seq.load(Ordering::Acquire) != seen
    }
}
