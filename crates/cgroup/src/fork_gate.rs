//! The `Scalable` fork gate: what keeps rmdir and fork apart without `css_set_lock`,
//! with no counter every fork into the cgroup shares.
//!
//! Each anchor (`anchor.rs`) counts the forks in flight through it (`nr_forking`,
//! between can_fork and post_fork or cancel): a fork writes only its own anchor's
//! line. rmdir, holding the node's registry and every anchor's member lock, raises
//! the node's `closing` flag and then sums the anchors' counts. The two sides are a
//! store, a `SeqCst` fence, then a load each (Dekker's handshake; the fences are
//! totally ordered, so one side's load sees the other's store): a fork that did not
//! see `closing` had counted itself before rmdir's loads, so rmdir sees it (EBUSY);
//! a fork that sees `closing` uncounts itself and waits for rmdir's decision by taking
//! its anchor's member lock, which rmdir holds until it has decided; then it reads
//! `removed` (ENOENT) or tries again (rmdir failed and lowered the flag). A fork that
//! was counted keeps its count until post_fork linked it, under that same lock: rmdir
//! never removes a cgroup a fork is linking into, and a fork is refused with ENOENT
//! only once `removed` is set. `tests/loom_fork_gate.rs` explores the interleavings.
//!
//! The Linux profiles count on the node under `css_set_lock` and never use the flag.

use crate::sync::{AtomicBool, AtomicU64, Ordering, fence};

/// can_fork: counts a fork in through its anchor; false (nothing counted) while
/// rmdir is closing the cgroup (the caller waits on the anchor's member lock, then
/// reads `removed`).
#[inline]
pub(crate) fn enter(nr_forking: &AtomicU64, closing: &AtomicBool) -> bool {
    nr_forking.fetch_add(1, Ordering::Relaxed);
    // Pairs with rmdir's fence: either rmdir's loads see this count or this load sees
    // its flag. (A `SeqCst` read-modify-write and load would do in the C++ model, but
    // loom checks only the fence form; on x86 the cost is the same order.)
    fence(Ordering::SeqCst);
    if closing.load(Ordering::Relaxed) {
        nr_forking.fetch_sub(1, Ordering::Relaxed);
        return false;
    }
    true
}

/// post_fork (after the member is linked) or cancel: the fork is done.
#[inline]
pub(crate) fn leave(nr_forking: &AtomicU64) {
    nr_forking.fetch_sub(1, Ordering::Release);
}

/// rmdir, with the node's registry and every anchor's member lock held and no member
/// linked: closes the cgroup if no fork is in flight through any anchor. On `false`
/// the flag is down again (EBUSY); on `true` it stays up for good.
pub(crate) fn close_if_idle<'a>(
    closing: &AtomicBool,
    mut anchors_forking: impl Iterator<Item = &'a AtomicU64>,
) -> bool {
    closing.store(true, Ordering::Relaxed);
    // Pairs with every can_fork's fence (see `enter`).
    fence(Ordering::SeqCst);
    if anchors_forking.all(|n| n.load(Ordering::Relaxed) == 0) {
        return true;
    }
    // Still under every anchor's lock: a fork that saw the flag waits for it.
    closing.store(false, Ordering::Relaxed);
    false
}
