//! cgroup v2 for uproc: the hierarchy, the pids controller, membership, `cgroup.kill`
//! and migration.
//!
//! # What this crate owns
//!
//! One [`Hierarchy`] per runtime (Linux's default hierarchy, `cgrp_dfl_root`) holds a
//! tree of cgroups. Each non-root cgroup carries a pids controller (`pids.max`,
//! `pids.current`, `pids.peak`, `pids.events`, `pids.events.local`), its anchors (the
//! tasks linked into it: Linux's css_sets and their task lists, one css_set per
//! forking task here), a `kill_seq`, and (Linux profiles) a `populated` count. The crate knows nothing of pids or tasks: the
//! task list implements [`CgroupMember`] (what a member is), [`Attachable`] (what can
//! be migrated) and [`TaskResolver`] (a pid written to `cgroup.procs` -> links), and
//! calls the life-cycle entry points below.
//!
//! # The objects and who holds them
//!
//! ```text
//!  Hierarchy ──(cgroup_mutex: Tree)──> every live cgroup ──parent (Arc)──> parent ... root
//!     ^  ^                                  │ registry: Weak<Anchor> (its css_sets)
//!     │  └── Cgroup handle = (Arc<Hierarchy>, Arc<cgroup>)
//!     │                                     │
//!     └──── Anchor (one per forking task and cgroup, + a default one) = Cgroup handle
//!              ^        member set: Weak<dyn CgroupMember>, fork count
//!              │
//!           CssLink (inside the task list's task): its anchor, its children's anchor
//! ```
//!
//! - The hierarchy's tree owns the live cgroups; a cgroup owns its parent (a removed
//!   cgroup still charged by zombies must uncharge its ancestors at reap) and never its
//!   children, so there is no reference cycle. rmdir drops the tree's reference; the
//!   cgroup is freed with its last handle, anchor or charge.
//! - A [`Cgroup`] is a pair of `Arc`s: cheap to clone, equal by identity.
//! - An anchor is uproc's css_set: the tasks one task forked into one cgroup (or that
//!   were forked or moved there by name). It holds its cgroup; the cgroup names its
//!   anchors weakly. A fork writes only its parent's anchor, never a line every fork
//!   into the cgroup shares (`anchor.rs`).
//! - A [`CssLink`] is one task's membership, built by [`ForkCharge::prepare_link`]
//!   inside the task's own allocation (the task list's way: no allocation of its own;
//!   the cgroup side reaches it through the member, [`CgroupMember::css`], as a
//!   [`LinkRef`]) or made apart by [`ForkCharge::post_fork`]; the member set refers to
//!   the task weakly.
//!
//! # Locks and what they protect
//!
//! | lock | kind | protects |
//! |---|---|---|
//! | `cgroup_mutex` | `parking_lot::Mutex` | the tree's shape: children, ids (mkdir, rmdir, kill's subtree walk) |
//! | `css_set_lock` | named global [`NamedMutex`](uproc_abi::lockstat::NamedMutex) | membership: member sets, a link's anchor, `linked`, `populated`, `kill_seq`, `nr_forking`, `removed` (never taken under `Scalable`) |
//! | a link's state | `parking_lot::Mutex` | its anchor (the current cgroup, its id mirrored in an atomic for lock-free reads) and its children's anchor |
//! | a cgroup's registry | `parking_lot::Mutex` | which anchors the cgroup has (anchor creation, rmdir's decision) |
//! | an anchor's member set | `parking_lot::Mutex` | its members; inside `css_set_lock` under the Linux profiles; under `Scalable` the lock of membership (post_fork, task_dead, migration, kill, rmdir takes all of a cgroup's) |
//! | pids counters | atomics | `counter`, per-thread credits, `limit`, `peak`, events |
//! | a pids level's `exact` lock | `parking_lot::Mutex` | the exact path: closing every credit shard, the decision, reopening. Taken only by a charge that finds the level's counter at its limit (with no other lock held), and by a reading of `pids.current` that raced it; a leaf: nothing is taken under it |
//!
//! Lock order: `cgroup_mutex` -> `css_set_lock` -> link state -> registry -> member
//! sets; a pids level's `exact` lock is a leaf. Under `Scalable` the same without `css_set_lock`; migration takes two member
//! sets by address. [`CssLink::release`] takes a link's state alone.
//! [`CgroupMember::kill`] and the [`TaskResolver`] are always called with no lock held.
//!
//! Under the `Linux618` and `Linux70` profiles (identical here) a task's life cycle
//! takes `css_set_lock` exactly three times, as Linux does: can_fork, post_fork,
//! task_dead. Migration and `cgroup.kill` take it once each, reading `cgroup.procs`
//! once; release takes it only for a task that was never declared dead.
//!
//! Under `Scalable` nothing takes it: `can_fork` counts the fork on its anchor and
//! reads rmdir's `closing` flag after a fence (`fork_gate.rs`), then charges each level
//! (a credit parked by the thread's last uncharge, or the level's counter); post_fork
//! and task_dead take the anchor's member lock; nothing keeps a populated count (it
//! is computed when read). A task forking into its own cgroup
//! ([`CssLink::can_fork`]) bumps no shared refcount: the child holds its parent's
//! anchor. No lock, counter or refcount a life cycle in the root cgroup writes is
//! shared with another parent's, and in a cgroup with `pids.max` only the rare
//! credit refill and the exact path write the level's counter.
//!
//! # Invariants
//!
//! - `pids.current` of a cgroup = tasks charged in its subtree: charged at can_fork,
//!   moved by migration, uncharged by cancel or release (reap). Zombies count. Exact
//!   at rest (the counter less the parked credits).
//! - A fork never makes `pids.current` exceed `pids.max` of any level, even
//!   transiently (the per-level charge is a compare-exchange that refuses to step
//!   over the limit); only migration, or lowering `pids.max`, can leave it above.
//! - A fork is refused (EAGAIN) only when a level is full: the level that refuses
//!   decides under its `exact` lock with every credit shard closed, so no credit is
//!   parked or in flight and its counter is `pids.current`. (As in Linux, a fork that
//!   a higher level refuses holds its charge of the lower levels until it reverts them;
//!   a fork racing it there may see that charge.)
//! - `pids.peak` never decreases; `populated` = linked members in the subtree.
//! - A fork that raced with `cgroup.kill` on its cgroup or an ancestor is either
//!   collected by the kill or reported [`PostFork::killed`].
//!
//! # The kernel functions modelled
//!
//! | uproc | Linux |
//! |---|---|
//! | [`Cgroup::can_fork`] | `cgroup_can_fork` -> `cgroup_css_set_fork` + `pids_can_fork` -> `pids_try_charge` |
//! | [`ForkCharge::cancel`] / drop | `cgroup_cancel_fork` -> `pids_cancel_fork` |
//! | [`ForkCharge::post_fork`] | `cgroup_post_fork` (link, `kill_seq` check) |
//! | [`CssLink::task_dead`] | `cgroup_task_dead` / `do_cgroup_task_dead` |
//! | [`CssLink::release`] | `cgroup_release` -> `pids_release` |
//! | [`Cgroup::attach`], `cgroup.procs` write | `cgroup_attach_task`, `pids_can_attach` |
//! | [`Cgroup::kill`], `cgroup.kill` | `cgroup_kill_write` -> `cgroup_kill` |
//! | [`Cgroup::mkdir`] / [`Cgroup::rmdir`] | `cgroup_mkdir` / `cgroup_rmdir` |
//! | [`Cgroup::read`] / [`Cgroup::write`] | the cgroupfs `cftype` handlers (`pids_max_write`, `pids_events_show`, `cgroup_events_show`, ...) |
//!
//! `IMPLEMENTATION.md` beside this crate explains the charge algorithm, membership,
//! `kill_seq`, and the memory orderings.
//!
//! ```
//! use std::sync::{Arc, Weak};
//! use uproc_abi::{Errno, Profile};
//! use uproc_cgroup::{CgroupMember, Hierarchy};
//!
//! struct T;
//! impl CgroupMember for T {
//!     fn tgid(&self) -> i32 { 100 }
//!     fn is_group_leader(&self) -> bool { true }
//!     fn kill(&self) {}
//! }
//!
//! let h = Hierarchy::new(Profile::Linux70);
//! let jobs = h.root().mkdir("jobs")?;
//! jobs.write("pids.max", "1")?;
//! let task: Arc<dyn CgroupMember> = Arc::new(T);
//! let charge = jobs.can_fork()?;                       // fork step 4
//! let link = charge.post_fork(Arc::downgrade(&task)).link; // fork step 6
//! assert_eq!(jobs.read("cgroup.procs")?, "100\n");
//! assert_eq!(jobs.can_fork().unwrap_err(), Errno::EAGAIN);
//! assert_eq!(jobs.read("pids.events")?, "max 1\n");
//! link.task_dead();                                    // exit: a zombie still counts
//! assert_eq!(jobs.read("cgroup.events")?, "populated 0\nfrozen 0\n");
//! assert_eq!(jobs.pids_current(), 1);
//! link.release();                                      // reap
//! assert_eq!(jobs.pids_current(), 0);
//! # Ok::<(), Errno>(())
//! ```
#![forbid(unsafe_code)]

mod anchor;
mod cgroup;
mod controller;
mod files;
mod fork_gate;
mod hierarchy;
mod members;
mod membership;
mod sync;

pub use cgroup::{Cgroup, WeakCgroup};
pub use controller::pids::{Limit, PID_MAX_LIMIT};
pub use hierarchy::Hierarchy;
pub use membership::{
    Attachable, CgroupMember, CssLink, ForkCharge, LinkRef, MigrateFn, PostFork, TaskResolver,
};

/// The lock-free pids charge on its own, for `tests/loom_pids.rs`: loom cannot run the
/// rest of the crate (its locks are `parking_lot`'s), and does not need to.
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_model {
    use crate::controller::pids::{self, PidsCounter};

    /// A chain of pids levels, the forking cgroup's first, the root excluded. Each
    /// model thread names its own credit shard.
    #[derive(Debug)]
    pub struct Chain(Vec<PidsCounter>);

    impl Chain {
        /// `limits[i]` is level `i`'s `pids.max`.
        pub fn new(limits: &[u64]) -> Chain {
            Chain(
                limits
                    .iter()
                    .map(|&l| {
                        let p = PidsCounter::new();
                        p.set_limit(crate::Limit::Value(l)).expect("limit in range");
                        p
                    })
                    .collect(),
            )
        }

        /// `pids_try_charge` from level `from` upwards with credit shard `shard` (the
        /// calling thread's); false when a level was full.
        pub fn try_charge(&self, from: usize, shard: usize) -> bool {
            pids::try_charge_on(self.0[from..].iter(), shard).is_ok()
        }

        /// `pids_uncharge` from level `from` upwards, parking on shard `shard`.
        pub fn uncharge(&self, from: usize, shard: usize) {
            pids::uncharge_on(self.0[from..].iter(), shard)
        }

        /// `pids.current` of level `i`.
        pub fn current(&self, i: usize) -> u64 {
            self.0[i].current()
        }

        /// `pids.peak` of level `i`.
        pub fn peak(&self, i: usize) -> u64 {
            self.0[i].peak()
        }
    }

    /// One cgroup's `Scalable` fork gate with two anchors, driven through the crate's
    /// own gate functions: each anchor's fork count and a loom mutex standing for its
    /// member lock (holding its member count), the node's `closing` and `removed`.
    #[derive(Debug)]
    pub struct Gate {
        closing: crate::sync::AtomicBool,
        removed: crate::sync::AtomicBool,
        forking: [crate::sync::AtomicU64; 2],
        members: [loom::sync::Mutex<u64>; 2],
    }

    impl Default for Gate {
        fn default() -> Gate {
            Gate {
                closing: crate::sync::AtomicBool::new(false),
                removed: crate::sync::AtomicBool::new(false),
                forking: [
                    crate::sync::AtomicU64::new(0),
                    crate::sync::AtomicU64::new(0),
                ],
                members: [loom::sync::Mutex::new(0), loom::sync::Mutex::new(0)],
            }
        }
    }

    impl Gate {
        /// can_fork through anchor `a` (waiting out an rmdir deciding), then post_fork
        /// (link under the anchor's lock, leave): false if the cgroup was removed.
        pub fn fork(&self, a: usize) -> bool {
            while !crate::fork_gate::enter(&self.forking[a], &self.closing) {
                drop(self.members[a].lock().expect("member lock"));
                if self.is_removed() {
                    return false;
                }
            }
            *self.members[a].lock().expect("member lock") += 1;
            crate::fork_gate::leave(&self.forking[a]);
            true
        }

        /// rmdir: every anchor's lock, no member, no fork in flight closes it; then
        /// the `removed` flag, as `Cgroup::rmdir` stores it, before the locks go.
        pub fn rmdir(&self) -> bool {
            let sets: Vec<_> = self
                .members
                .iter()
                .map(|m| m.lock().expect("member lock"))
                .collect();
            let closed = sets.iter().all(|s| **s == 0)
                && crate::fork_gate::close_if_idle(&self.closing, self.forking.iter());
            if closed {
                self.removed.store(true, crate::sync::Ordering::Release);
            }
            closed
        }

        /// `Cgroup::is_removed`.
        pub fn is_removed(&self) -> bool {
            self.removed.load(crate::sync::Ordering::Acquire)
        }

        /// Linked members counted, over both anchors.
        pub fn populated(&self) -> u64 {
            self.members
                .iter()
                .map(|m| *m.lock().expect("member lock"))
                .sum()
        }
    }
}
