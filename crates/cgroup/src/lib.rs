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
//! - A [`CssLink`] is one task's membership, built by [`ForkCharge::prepare_link`] or
//!   [`ForkCharge::take_link`] (which moves a listed root fork's anchor count into it)
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
//! | `css_set_lock` | named global [`NamedMutex`](uproc_abi::lockstat::NamedMutex) | membership: member sets, a link's anchor and phase, `populated`, `kill_seq`, `nr_forking`, `removed` (never taken under `Scalable`) |
//! | a link's state | spin lock (`uproc_abi::spin`: one atomic a round) | its anchor (the current cgroup, its id mirrored in an atomic for lock-free reads) and its children's anchor |
//! | a cgroup's registry | `parking_lot::Mutex` | which anchors the cgroup has (anchor creation, rmdir's decision) |
//! | an anchor's member set | spin lock (`uproc_abi::spin`) | its members and the phase of the links in it; inside `css_set_lock` under the Linux profiles; under `Scalable` the lock of membership (can_fork's reservation, post_fork, task_dead, migration, kill, rmdir takes all of a cgroup's). The root under `Scalable` with a listing resolver ([`Hierarchy::set_listing_resolver`]) keeps no set: a link *listed* there changes phase by compare-exchange (`phase.rs`) |
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
//! Under `Scalable` nothing takes it: `can_fork` reserves the fork's entry in its
//! anchor's member set under the anchor's lock (`fork_gate.rs`; not in the root,
//! which is never removed), then charges each level (a credit parked by the thread's
//! last uncharge, or the level's counter); post_fork and task_dead take the anchor's
//! member lock, and release of a task charged to the root only takes nothing; nothing
//! keeps a populated count (it is computed when read). The per-task locks are spin
//! locks of one atomic a round: a life cycle in the root cgroup costs the cgroup code
//! nine atomic read-modify-writes (four lock rounds, two anchor refcount pairs, the
//! member's `Weak`). A task forking into its own cgroup
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
//! - A fork that raced with `cgroup.kill` on its cgroup or an ancestor (any overlap of
//!   its can_fork..post_fork with the kill) is either collected by the kill or
//!   reported [`PostFork::killed`]: no child of a killed member survives the kill.
//!
//! # The kernel functions modelled
//!
//! | uproc | Linux |
//! |---|---|
//! | [`Cgroup::can_fork`] | `cgroup_can_fork` -> `cgroup_css_set_fork` + `pids_can_fork` -> `pids_try_charge` |
//! | [`ForkCharge::cancel`] / drop | `cgroup_cancel_fork` -> `pids_cancel_fork` |
//! | [`ForkCharge::post_fork`], [`ForkCharge::post_fork_inline`] | `cgroup_post_fork` (link, `kill_seq` check) |
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
#![deny(unsafe_code)]

mod anchor;
mod cgroup;
mod controller;
mod files;
mod fork_gate;
mod hierarchy;
mod kill_state;
mod members;
mod membership;
mod phase;
use uproc_abi::spin;
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

    /// A cgroup's `cgroup.kill` state (`kill_state.rs`), as the kill and a fork use it.
    #[derive(Debug, Default)]
    pub struct Kill(crate::kill_state::KillState);

    impl Kill {
        /// A kill begins (before collecting the members).
        pub fn begin(&self) {
            self.0.begin()
        }

        /// The kill ends (after its last SIGKILL).
        pub fn end(&self) {
            self.0.end()
        }

        /// can_fork's reading.
        pub fn seen(&self) -> u64 {
            self.0.seen()
        }

        /// post_fork's verdict, after linking: whether a kill overlapped since `seen`.
        pub fn raced(&self, seen: u64) -> bool {
            self.0.raced(seen)
        }
    }

    /// The member and link-state spin lock's algorithm (`uproc_abi::spin`) on a loom flag,
    /// guarding a loom cell: loom reports a data race if two holders overlap or a
    /// holder's writes do not happen before the next holder's reads.
    #[derive(Debug)]
    pub struct Spin {
        flag: loom::sync::atomic::AtomicBool,
        value: loom::cell::UnsafeCell<u64>,
    }

    impl Default for Spin {
        fn default() -> Spin {
            Spin {
                flag: loom::sync::atomic::AtomicBool::new(false),
                value: loom::cell::UnsafeCell::new(0),
            }
        }
    }

    impl Spin {
        /// Lock, read-modify-write the value, unlock.
        pub fn increment(&self) {
            crate::spin::lock(&self.flag);
            self.bump();
            crate::spin::unlock(&self.flag);
        }

        /// As [`Spin::increment`] if the lock is free; whether it was.
        pub fn try_increment(&self) -> bool {
            if !crate::spin::try_lock(&self.flag) {
                return false;
            }
            self.bump();
            crate::spin::unlock(&self.flag);
            true
        }

        /// Whether the lock is held.
        pub fn is_locked(&self) -> bool {
            self.flag.load(std::sync::atomic::Ordering::SeqCst)
        }

        /// The value (under the lock).
        pub fn value(&self) -> u64 {
            crate::spin::lock(&self.flag);
            let v = self.value.with(|p| {
                // SAFETY: the lock is held, so no holder writes the cell meanwhile
                // (loom reports it otherwise: that is the model's check).
                #[allow(unsafe_code)]
                unsafe {
                    *p
                }
            });
            crate::spin::unlock(&self.flag);
            v
        }

        fn bump(&self) {
            self.value.with_mut(|p| {
                // SAFETY: called with the lock held: the cell's only accessor now
                // (loom reports it otherwise: that is the model's check).
                #[allow(unsafe_code)]
                unsafe {
                    *p += 1;
                }
            });
        }
    }

    /// One cgroup's `Scalable` fork gate with two anchors, driven through the crate's
    /// own gate functions: each anchor's member set behind a loom mutex standing for
    /// its member lock, and the node's `removed`.
    #[derive(Debug)]
    pub struct Gate {
        removed: crate::sync::AtomicBool,
        members: [loom::sync::Mutex<MemberSet>; 2],
    }

    /// A member set, for the model (its `Debug` shows nothing).
    pub struct MemberSet(crate::members::MemberSet);

    impl core::fmt::Debug for MemberSet {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            f.write_str("MemberSet")
        }
    }

    /// The model's task: no member a reader would upgrade.
    struct Task;

    impl crate::CgroupMember for Task {
        fn tgid(&self) -> i32 {
            1
        }
        fn is_group_leader(&self) -> bool {
            true
        }
        fn kill(&self) {}
    }

    impl Default for Gate {
        fn default() -> Gate {
            Gate {
                removed: crate::sync::AtomicBool::new(false),
                members: [
                    loom::sync::Mutex::new(MemberSet(Default::default())),
                    loom::sync::Mutex::new(MemberSet(Default::default())),
                ],
            }
        }
    }

    impl Gate {
        /// can_fork through anchor `a` (reserve an entry under its lock unless removed),
        /// then post_fork (fill it under the lock): false if the cgroup was removed.
        pub fn fork(&self, a: usize) -> bool {
            let slot = {
                let mut set = self.members[a].lock().expect("member lock");
                crate::fork_gate::enter(&mut set.0, &self.removed)
            };
            let Some(slot) = slot else {
                return false;
            };
            let task: std::sync::Weak<dyn crate::CgroupMember> = std::sync::Weak::<Task>::new();
            self.members[a]
                .lock()
                .expect("member lock")
                .0
                .fill(slot, task);
            true
        }

        /// rmdir: every anchor's lock; no member and no reservation removes it.
        pub fn rmdir(&self) -> bool {
            let sets: Vec<_> = self
                .members
                .iter()
                .map(|m| m.lock().expect("member lock"))
                .collect();
            crate::fork_gate::close_if_idle(sets.iter().map(|s| &s.0), &self.removed)
        }

        /// `Cgroup::is_removed`.
        pub fn is_removed(&self) -> bool {
            self.removed.load(crate::sync::Ordering::Acquire)
        }

        /// Linked members counted, over both anchors (reservations left out).
        pub fn populated(&self) -> u64 {
            self.members
                .iter()
                .map(|m| m.lock().expect("member lock").0.linked() as u64)
                .sum()
        }
    }

    /// One link's phase, driven through the crate's own phase steps (`phase.rs`), in
    /// the root of a listing hierarchy: `locks` stands for the link's state lock and
    /// the member lock of the anchor the locked paths take with it (always together
    /// there), and its flag says whether the link is in that anchor's member set.
    #[derive(Debug)]
    pub struct Phase {
        phase: crate::sync::AtomicU8,
        locks: loom::sync::Mutex<bool>,
    }

    impl Phase {
        /// A link built by `prepare_link`, post_fork not run yet.
        pub fn prepared() -> Phase {
            Phase {
                phase: crate::sync::AtomicU8::new(crate::phase::PREPARED),
                locks: loom::sync::Mutex::new(false),
            }
        }

        /// A link already listed in the root (post_fork ran).
        pub fn listed() -> Phase {
            let p = Phase::prepared();
            assert!(p.post_fork().is_some());
            p
        }

        /// A link in a member set (post_fork ran under the anchor's lock).
        pub fn in_set() -> Phase {
            let p = Phase::prepared();
            p.phase
                .store(crate::phase::LINKED, crate::sync::Ordering::Release);
            *p.locks.lock().expect("locks") = true;
            p
        }

        /// post_fork through `post_fork_inline` into the root: `Some(true)` listed,
        /// `Some(false)` dead already (it keeps the charge), `None` released already.
        pub fn post_fork(&self) -> Option<bool> {
            match crate::phase::list(&self.phase) {
                crate::phase::Adopted::Linked => Some(true),
                crate::phase::Adopted::Dead => Some(false),
                crate::phase::Adopted::Released => None,
            }
        }

        /// `CssLink::task_dead` (`released` false) or `CssLink::release`'s unlink.
        pub fn leave(&self, released: bool) {
            crate::phase::leave(&self.phase, released, || {
                let mut in_set = self.locks.lock().expect("locks");
                crate::phase::unlink_step(&self.phase, released, || {
                    assert!(*in_set, "a linked link is in the member set");
                    *in_set = false;
                });
            });
        }

        /// Migration out of the root (`Cgroup::attach_links`): true if it moved the
        /// link into the destination's member set.
        pub fn migrate_out(&self) -> bool {
            let mut in_set = self.locks.lock().expect("locks");
            if self.phase.load(crate::sync::Ordering::Acquire) != crate::phase::LISTED
                || !crate::phase::relink(&self.phase)
            {
                return false;
            }
            *in_set = true;
            true
        }

        /// Migration of a linked link into the root: true if it listed it.
        pub fn migrate_in(&self) -> bool {
            let mut in_set = self.locks.lock().expect("locks");
            if self.phase.load(crate::sync::Ordering::Acquire) != crate::phase::LINKED {
                return false;
            }
            *in_set = false;
            crate::phase::moved_into_listing(&self.phase);
            true
        }

        /// Whether the link is linked (in the set, or listed).
        pub fn is_linked(&self) -> bool {
            matches!(
                self.phase.load(crate::sync::Ordering::Acquire),
                crate::phase::LINKED | crate::phase::LISTED
            )
        }

        /// Whether it is out for good (`UNLINKED`).
        pub fn is_unlinked(&self) -> bool {
            self.phase.load(crate::sync::Ordering::Acquire) == crate::phase::UNLINKED
        }

        /// Whether it is in the member set.
        pub fn is_in_set(&self) -> bool {
            *self.locks.lock().expect("locks")
        }
    }
}
