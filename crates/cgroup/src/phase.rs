//! A link's phase: where a [`CssLink`](crate::CssLink) is in its life, and the steps
//! that move it (post_fork, task_dead, release, migration).
//!
//! The task list makes a task visible before post_fork links it, so an exit
//! (task_dead) and even a reap (release) can come first; each step decides on the one
//! value it finds here. A link in a member set (`LINKED`) changes only under its
//! anchor's member lock. A link *listed* in the root (`LISTED`, `Scalable` with a task
//! list that lists the root's members itself, `Hierarchy::set_listing_resolver`) is in
//! no member set, so nothing it could be locked under: it is linked, unlinked and
//! moved out by compare-exchange. That is why every step below that can meet a
//! `PREPARED` or `LISTED` link is a compare-exchange loop, under the lock or not:
//!
//! ```text
//!             post_fork (a member set)      task_dead, under the member lock
//!  PREPARED ────────────► LINKED ─────────────────────────────► UNLINKED
//!     │  │ post_fork (root, listed)  ▲ migration out       ▲ ▲ ▲
//!     │  └───────────► LISTED ───────┘ of the root (CAS)   │ │ │
//!     │                  │ ▲  task_dead / release (CAS) ───┘ │ │
//!     │                  │ └── migration into the root       │ │
//!     │ task_dead                  post_fork (keeps the charge)│
//!     └──────────► DEAD_EARLY ────────────────────────────────┘ │
//!     │ release        │ release       post_fork (uncharges)      │
//!     └────────────────┴──────────► RELEASED_EARLY ──────────────┘
//! ```
//!
//! Who writes which transition, and under what:
//!
//! | transition | by | held |
//! |---|---|---|
//! | `PREPARED -> LINKED` | post_fork ([`adopt`](crate::CssLink)) | the anchor's member lock |
//! | `PREPARED -> LISTED` | post_fork ([`list`]) | nothing (CAS) |
//! | `PREPARED / DEAD_EARLY -> DEAD_EARLY / RELEASED_EARLY` | task_dead, release ([`unlink_step`]) | link state, member lock (CAS: a listing post_fork holds neither) |
//! | `DEAD_EARLY / RELEASED_EARLY -> UNLINKED` | post_fork's late step | the member lock, or nothing for a listing one (CAS) |
//! | `LINKED -> UNLINKED` | task_dead, release ([`unlink_step`]) | link state, member lock (a store: nothing else writes a `LINKED` link) |
//! | `LISTED -> UNLINKED` | task_dead, release ([`unlist`], or [`unlink_step`]) | nothing, or the locks (CAS) |
//! | `LISTED -> LINKED` | migration out of the root ([`relink`]) | link state, both member locks (CAS: an unlist holds neither) |
//! | `LINKED -> LISTED` | migration into the root | link state, both member locks (a store) |
//!
//! `UNLINKED` is final. Orderings: every transition is `Release` (a reader that sees
//! the phase sees the `charged` stored before it), every load and failed
//! compare-exchange `Acquire`. The model in `tests/loom_phase.rs` runs these functions
//! against each other.

use crate::sync::{AtomicU8, Ordering};

/// Built by `prepare_link`, post_fork not run yet.
pub(crate) const PREPARED: u8 = 0;
/// In its anchor's member set (between post_fork and task_dead).
pub(crate) const LINKED: u8 = 1;
/// Out of the member set for good: task_dead ran after post_fork, or post_fork found
/// the task already dead (or released) and did not link it.
pub(crate) const UNLINKED: u8 = 2;
/// task_dead ran before post_fork: post_fork hands the charge over without linking.
pub(crate) const DEAD_EARLY: u8 = 3;
/// release ran before post_fork: post_fork uncharges instead of handing the charge over.
pub(crate) const RELEASED_EARLY: u8 = 4;
/// Linked in the root cgroup of a hierarchy whose task list lists the root's members
/// (`Scalable`): in no member set, found through the task list.
pub(crate) const LISTED: u8 = 5;

/// What post_fork did with a prepared link.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Adopted {
    /// Linked (into the member set, or listed); it holds the charge.
    Linked,
    /// Dead already: not linked, but it holds the charge (a zombie counts).
    Dead,
    /// Released already: neither linked nor charged; the caller uncharges.
    Released,
}

/// post_fork of a link into the root of a listing hierarchy, with no lock:
/// `PREPARED -> LISTED`, or, if task_dead or release came first, the late step
/// (`DEAD_EARLY` keeps the charge, `RELEASED_EARLY` does not). The caller stored
/// `charged` before (the `Release` here publishes it), and clears it on
/// [`Adopted::Released`].
#[inline]
pub(crate) fn list(phase: &AtomicU8) -> Adopted {
    match phase.compare_exchange(PREPARED, LISTED, Ordering::Release, Ordering::Acquire) {
        Ok(_) => Adopted::Linked,
        Err(cur) => late(phase, cur),
    }
}

/// post_fork's step on a link task_dead or release reached first (`cur`: the phase
/// it found, `DEAD_EARLY` or `RELEASED_EARLY`). A release may still move `DEAD_EARLY`
/// on meanwhile (a listing post_fork holds no lock), hence the loop.
#[cold]
pub(crate) fn late(phase: &AtomicU8, mut cur: u8) -> Adopted {
    loop {
        let adopted = match cur {
            DEAD_EARLY => Adopted::Dead,
            RELEASED_EARLY => Adopted::Released,
            other => unreachable!("post_fork runs once per link (phase {other})"),
        };
        match phase.compare_exchange(cur, UNLINKED, Ordering::Release, Ordering::Acquire) {
            Ok(_) => return adopted,
            Err(now) => cur = now,
        }
    }
}

/// task_dead or release of a listed link, with no lock: `LISTED -> UNLINKED`. False
/// if the link was not listed (any more): the caller takes the locked path, which
/// sees what happened to it.
#[inline]
pub(crate) fn unlist(phase: &AtomicU8) -> bool {
    phase
        .compare_exchange(LISTED, UNLINKED, Ordering::Release, Ordering::Acquire)
        .is_ok()
}

/// task_dead's (`released` false) and release's entry: a listed link is unlisted here,
/// with no lock; a link with a step left under the locks (in a member set, not linked
/// yet, or moved out of the root meanwhile) runs `locked` (the link's state lock, its
/// anchor's member lock, then [`unlink_step`]). Nothing for a link past the step.
#[inline]
pub(crate) fn leave(phase: &AtomicU8, released: bool, locked: impl FnOnce()) {
    let cur = phase.load(Ordering::Acquire);
    if cur == LISTED && unlist(phase) {
        return;
    }
    let todo = if released {
        !matches!(cur, UNLINKED | RELEASED_EARLY)
    } else {
        matches!(cur, PREPARED | LINKED | LISTED)
    };
    if todo {
        locked();
    }
}

/// Migration of a linked link into the root of a listing hierarchy, under its state
/// lock and both member locks, once the caller took it out of the source's member
/// set: `LINKED -> LISTED`. From here its exit may unlist it without a lock.
#[inline]
pub(crate) fn moved_into_listing(phase: &AtomicU8) {
    debug_assert_eq!(phase.load(Ordering::Relaxed), LINKED);
    phase.store(LISTED, Ordering::Release);
}

/// task_dead's (`released` false) or release's step under the link's state lock and
/// its anchor's member lock. `remove` takes a `LINKED` link out of the member set.
/// Returns true if it did (the Linux profiles then move `nr_populated`).
#[inline]
pub(crate) fn unlink_step(phase: &AtomicU8, released: bool, remove: impl FnOnce()) -> bool {
    let mut cur = phase.load(Ordering::Acquire);
    loop {
        let next = match cur {
            LINKED => {
                // Nothing writes a linked link without the member lock (held).
                remove();
                phase.store(UNLINKED, Ordering::Release);
                return true;
            }
            LISTED => UNLINKED,
            PREPARED | DEAD_EARLY if released => RELEASED_EARLY,
            PREPARED => DEAD_EARLY,
            _ => return false,
        };
        // A listing post_fork or an unlist holds none of the locks: compare-exchange.
        match phase.compare_exchange(cur, next, Ordering::Release, Ordering::Acquire) {
            Ok(_) => return false,
            Err(now) => cur = now,
        }
    }
}

/// Migration of a listed link out of the root, under its state lock and both member
/// locks: `LISTED -> LINKED`, after which the caller inserts it into the destination's
/// member set before it lets the locks go. False if task_dead or release unlisted it
/// first (it then stays where its charge is, as any dead task does).
#[inline]
pub(crate) fn relink(phase: &AtomicU8) -> bool {
    phase
        .compare_exchange(LISTED, LINKED, Ordering::Release, Ordering::Acquire)
        .is_ok()
}
