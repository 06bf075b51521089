//! Anchors: a cgroup's membership split by forking parent (uproc's css_sets).
//!
//! Linux links every task to a `css_set`, a refcounted object shared by the tasks of
//! one set of cgroups, and a cgroup finds its tasks by walking its css_sets. uproc
//! keeps that shape with one difference: a cgroup has one [`Anchor`] per task that
//! forks children into it (plus a default one for forks and migrations named by
//! cgroup), so the objects a fork writes (the anchor's refcount, its member list, its
//! fork count) belong to the forking task. Two parents forking into one cgroup, the
//! root included, write no common cache line; a thread forking many children reuses
//! one anchor, allocated at its first fork.
//!
//! Who holds what:
//! - a [`CssLink`](crate::CssLink) holds its task's anchor (the parent's children
//!   anchor, or the default one), and the anchor of the children its task forks;
//! - an anchor holds its cgroup ([`Cgroup`]: the hierarchy and the node), so a task's
//!   link keeps both alive as before;
//! - a node's [`Registry`] names its anchors weakly (a strong reference would close a
//!   cycle node -> anchor -> node), for the rare readers: `cgroup.procs`,
//!   `cgroup.kill`, rmdir, `populated`. Dead entries are pruned as the list grows.
//!
//! Each anchor's member list is its own lock; under `Scalable` it also holds an entry
//! reserved by each fork in flight through it (the fork gate of `fork_gate.rs`), so
//! can_fork writes only the anchor's line. Lock order: a link's state -> a node's
//! registry -> anchors' member lists (rmdir: every anchor of the node, in registry
//! order; migration: two, by address).

use crate::Cgroup;
use crate::members::MemberSet;
use crate::spin::SpinMutex;
use crate::sync::{Arc, Weak};

/// One css_set of a cgroup: the members linked through it. Aligned to its own cache
/// lines: it is written by one forking task's forks, exits and reaps.
#[repr(align(128))]
pub(crate) struct Anchor {
    /// The cgroup this anchor belongs to (never changes).
    pub(crate) cg: Cgroup,
    /// The tasks linked through this anchor, and (`Scalable`, the fork gate of
    /// `fork_gate.rs`) the entries reserved by forks in flight through it.
    pub(crate) members: SpinMutex<MemberSet>,
}

/// A node's anchors, under the node's registry lock.
#[derive(Default)]
pub(crate) struct Registry {
    anchors: Vec<Weak<Anchor>>,
    /// The anchor of forks and migrations that name the cgroup (no forking task's own
    /// anchor applies); weak like the rest, rebuilt when it has died.
    default: Weak<Anchor>,
    /// List length at which dead entries are pruned next.
    prune_at: usize,
}

impl Registry {
    /// A new anchor of `cg`, registered. The caller has checked that the cgroup is not
    /// removed, under this registry's lock (rmdir decides under it).
    pub(crate) fn create(&mut self, cg: &Cgroup) -> Arc<Anchor> {
        let a = Arc::new(Anchor {
            cg: cg.clone(),
            members: SpinMutex::new(MemberSet::default()),
        });
        if self.anchors.len() >= self.prune_at {
            self.anchors.retain(|w| w.strong_count() > 0);
            self.prune_at = (self.anchors.len() * 2).max(8);
        }
        self.anchors.push(Arc::downgrade(&a));
        a
    }

    /// The default anchor, created if it has died.
    pub(crate) fn default_anchor(&mut self, cg: &Cgroup) -> Arc<Anchor> {
        if let Some(a) = self.default.upgrade() {
            return a;
        }
        let a = self.create(cg);
        self.default = Arc::downgrade(&a);
        a
    }

    /// Every live anchor, in registration order.
    pub(crate) fn live(&self) -> Vec<Arc<Anchor>> {
        self.anchors.iter().filter_map(Weak::upgrade).collect()
    }
}
