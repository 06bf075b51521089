//! The `Scalable` fork gate: what keeps rmdir and fork apart without `css_set_lock`,
//! with no counter every fork into the cgroup shares.
//!
//! A fork into a cgroup that can be removed (every one but the root) reserves an entry
//! in its anchor's member set at can_fork, under that anchor's member lock, unless the
//! cgroup is removed already (ENOENT); post_fork fills the entry with the task, cancel
//! gives it back (`members.rs`). rmdir decides holding the node's registry and every
//! anchor's member lock: any entry, member or reservation, is EBUSY; none, and it sets
//! `removed` before it lets the locks go. The two sides meet on the anchor's lock: a
//! fork that took it first left its reservation for rmdir to see; one that takes it
//! after sees `removed`. A fork is counted from can_fork until its member is in the set
//! (one entry all along), so rmdir never removes a cgroup a fork is linking into, and
//! a fork is refused with ENOENT only once `removed` is set. An anchor registered while
//! rmdir decides cannot appear: registration checks `removed` under the registry lock,
//! which rmdir holds. `tests/loom_fork_gate.rs` explores the interleavings.
//!
//! It costs a fork the one atomic of the anchor's lock at can_fork (post_fork takes
//! the lock anyway). The gate it replaces counted forks on the anchor and raised a flag
//! on the node, with a `SeqCst` fence on each side: three atomics per fork.
//!
//! The root is never removed: forks into it reserve nothing. The Linux profiles count
//! on the node under `css_set_lock` and never use this.

use crate::members::MemberSet;
use crate::sync::{AtomicBool, Ordering};

/// can_fork, with the anchor's member set locked: reserves the fork's entry, or `None`
/// (ENOENT) if rmdir has removed the cgroup.
#[inline]
pub(crate) fn enter(members: &mut MemberSet, removed: &AtomicBool) -> Option<usize> {
    // `Relaxed` would do: rmdir stores it under this same lock.
    if removed.load(Ordering::Acquire) {
        return None;
    }
    Some(members.reserve())
}

/// rmdir, with the node's registry and every anchor's member set locked: removes the
/// cgroup (sets `removed`) if no anchor holds a member or a fork's reservation.
pub(crate) fn close_if_idle<'a>(
    mut sets: impl Iterator<Item = &'a MemberSet>,
    removed: &AtomicBool,
) -> bool {
    if !sets.all(MemberSet::is_idle) {
        return false;
    }
    removed.store(true, Ordering::Release);
    true
}
