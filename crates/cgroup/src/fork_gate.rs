//! The `Scalable` fork gate: what keeps rmdir and fork apart without `css_set_lock`.
//!
//! A cgroup's `nr_forking` word counts forks between can_fork and post_fork (or
//! cancel); rmdir closes the cgroup by moving the word from exactly 0 to [`REMOVING`].
//! Both sides are read-modify-writes of one word, so they are totally ordered: either
//! rmdir saw the fork (the compare-exchange fails: EBUSY) or the fork sees the mark
//! (ENOENT). A fork that was counted keeps the word above 0 until after post_fork
//! counted it populated, under the member-set lock rmdir holds while it checks
//! `populated` and closes the gate: rmdir never removes a cgroup a fork is linking
//! into. The mark is the removal itself: `Node::is_removed` reads it, so a fork
//! refused with ENOENT never finds the cgroup still there in the moment before rmdir
//! sets `removed`. `tests/loom_fork_gate.rs` explores both sides' interleavings.
//!
//! The Linux profiles use the same word under `css_set_lock` and never set the mark.

use crate::sync::{AtomicU64, Ordering};

/// The bit rmdir sets in `nr_forking` to close a cgroup to forks.
pub(crate) const REMOVING: u64 = 1 << 63;

/// can_fork: counts a fork in; false (nothing counted) if rmdir closed the cgroup.
#[inline]
pub(crate) fn enter(nr_forking: &AtomicU64) -> bool {
    if nr_forking.fetch_add(1, Ordering::AcqRel) & REMOVING != 0 {
        nr_forking.fetch_sub(1, Ordering::AcqRel);
        return false;
    }
    true
}

/// post_fork (after the member is counted populated) or cancel: the fork is done.
#[inline]
pub(crate) fn leave(nr_forking: &AtomicU64) {
    nr_forking.fetch_sub(1, Ordering::AcqRel);
}

/// rmdir, with the cgroup's member sets locked and `populated` seen at 0: closes the
/// cgroup if no fork is in flight.
pub(crate) fn close_if_idle(nr_forking: &AtomicU64) -> bool {
    nr_forking
        .compare_exchange(0, REMOVING, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
}

/// Whether rmdir closed the gate: the cgroup is removed from that moment on.
#[inline]
pub(crate) fn is_closed(nr_forking: &AtomicU64) -> bool {
    nr_forking.load(Ordering::Acquire) & REMOVING != 0
}
