//! Membership: which task is in which cgroup (the css_set links), and the steps of a
//! task's life that change it: fork ([`Cgroup::can_fork`], [`ForkCharge::post_fork`],
//! [`ForkCharge::cancel`]), exit ([`CssLink::task_dead`]), reap
//! ([`CssLink::release`]), migration ([`Cgroup::attach`]) and `cgroup.kill`
//! ([`Cgroup::kill`]).
//!
//! Everything that changes membership is done under the global `css_set_lock`
//! (Linux618 / Linux70 profiles), which is what makes the kill/fork race come out
//! right: a fork either linked its child before a `cgroup.kill` collected the members
//! (and is killed with them), or sees at post_fork the kill in flight or its moved
//! `kill_seq` (`kill_state.rs`). Under `Scalable` the anchors' member locks play that
//! part (the kill begins, then collects each anchor under its lock; post_fork reads
//! the kill state and inserts under its anchor's lock), and rmdir closes a cgroup to forks through the fork gate
//! (`fork_gate.rs`). A task forks its children into an anchor of its own
//! (`anchor.rs`), so two parents' forks share no line. Migration and fork exclude each other per thread group (`cgroup_threadgroup_rwsem`): the task
//! list holds its group's lock for reading from can_fork to post_fork, and a migration
//! runs inside [`TaskResolver::with_thread_group`] /
//! [`Attachable::with_threadgroup_locked`], which hold it for writing.

use core::fmt;

use uproc_abi::Errno;

use crate::Cgroup;
use crate::anchor::Anchor;
use crate::controller::pids;
use crate::fork_gate;
use crate::hierarchy::DyingLeader;
use crate::hierarchy::{Hierarchy, common_ancestor};
use crate::members::MemberSet;
use crate::phase::{self, Adopted, DEAD_EARLY, LINKED, LISTED, PREPARED, RELEASED_EARLY, UNLINKED};
use crate::spin::{SpinGuard, SpinMutex};
use crate::sync::{Arc, AtomicBool, AtomicU8, AtomicU32, AtomicU64, Ordering, Weak};

/// What the cgroup code knows of a task. The task list implements it; cgroup knows
/// nothing of pids otherwise.
pub trait CgroupMember: Send + Sync + 'static {
    /// The thread-group id as the root pid namespace numbers it (`cgroup.procs` lists
    /// these).
    fn tgid(&self) -> i32;
    /// Whether this task leads its thread group (`cgroup.procs` lists leaders' tgids;
    /// `cgroup.threads` lists every member).
    fn is_group_leader(&self) -> bool;
    /// Delivers SIGKILL (`cgroup.kill`), thread-directed as `cgroup_kill`'s
    /// `send_sig` is: called on group leaders only, live ones and those parked by
    /// [`CssLink::task_dead_leader`] whose group has a live thread. Always called with
    /// no cgroup lock held: it may call back into [`CssLink::task_dead`].
    fn kill(&self);
    /// The thread id in the root pid namespace, for `cgroup.threads`. Defaults to
    /// [`tgid`](CgroupMember::tgid), so `cgroup.threads` lists a thread group's tgid
    /// once per thread unless the implementor knows the tid.
    fn tid(&self) -> i32 {
        self.tgid()
    }
    /// The member's own link, when it holds it inside itself (built by
    /// [`ForkCharge::prepare_link`] into the member's allocation): a [`LinkRef`] then
    /// reaches the link through the member, and the link costs no allocation of its
    /// own. `None` (the default) for a member that holds its link apart, by
    /// `Arc<CssLink>` ([`ForkCharge::post_fork`]).
    fn css(&self) -> Option<&CssLink> {
        None
    }
    /// Whether the member's thread group still has a live thread (`signal->live`):
    /// asked of a leader that died before its threads
    /// ([`CssLink::task_dead_leader`]), which `cgroup.procs` lists and `cgroup.kill`
    /// signals while this holds. Always called with no cgroup lock held. Defaults to
    /// `false`: a member that never parks itself is never asked.
    fn group_has_live_threads(&self) -> bool {
        false
    }
}

/// A handle on one task's [`CssLink`] that keeps the link alive: either the link in
/// its own allocation ([`ForkCharge::post_fork`]'s `Arc<CssLink>`), or the member that
/// holds its link inline ([`CgroupMember::css`]), which is how the task list keeps it
/// (one allocation per task instead of two). Dereferences to the link.
#[derive(Clone)]
pub enum LinkRef {
    /// A link in its own allocation.
    Shared(Arc<CssLink>),
    /// A member whose [`css`](CgroupMember::css) is `Some`.
    Inline(Arc<dyn CgroupMember>),
}

impl LinkRef {
    /// The link `member` holds inline; `None` if it holds none
    /// ([`CgroupMember::css`]).
    pub fn of_member(member: Arc<dyn CgroupMember>) -> Option<LinkRef> {
        member.css()?;
        Some(LinkRef::Inline(member))
    }
}

impl From<Arc<CssLink>> for LinkRef {
    fn from(link: Arc<CssLink>) -> LinkRef {
        LinkRef::Shared(link)
    }
}

impl core::ops::Deref for LinkRef {
    type Target = CssLink;

    fn deref(&self) -> &CssLink {
        match self {
            LinkRef::Shared(l) => l,
            LinkRef::Inline(m) => m
                .css()
                .expect("an inline LinkRef is made only of a member that holds its link"),
        }
    }
}

impl fmt::Debug for LinkRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// The closure a migration runs over a thread group's links while the group cannot
/// fork ([`TaskResolver::with_thread_group`], [`Attachable::with_threadgroup_locked`]).
pub type MigrateFn<'a> = dyn FnMut(&[LinkRef]) -> Result<(), Errno> + 'a;

/// Finds the css links of a whole thread group from a pid written to `cgroup.procs`
/// (numbers of the root pid namespace). The task list registers one with
/// [`Hierarchy::set_resolver`].
pub trait TaskResolver: Send + Sync + 'static {
    /// Every live thread's link of the thread group containing `pid`; ESRCH when no
    /// such task exists.
    fn thread_group_links(&self, pid: i32) -> Result<Vec<LinkRef>, Errno>;

    /// The link of the one thread `tid` names, live or exited and not yet released (a
    /// zombie stays in its cgroup until then): what a `cgroup.threads` write compares
    /// with its cgroup. ESRCH when no such task exists. The default takes the first
    /// live link of the thread's group ([`thread_group_links`](Self::thread_group_links)),
    /// which cannot see a zombie's own cgroup: ESRCH for a group with no live thread,
    /// and a zombie leader reads as where its live threads are.
    fn thread_link(&self, tid: i32) -> Result<LinkRef, Errno> {
        self.thread_group_links(tid)?
            .into_iter()
            .next()
            .ok_or(Errno::ESRCH)
    }

    /// Runs `f` over the links of the thread group containing `pid` while that group
    /// can neither fork a thread nor finish forking a child into its cgroup (the write
    /// side of `cgroup_threadgroup_rwsem`), so a migration moves the whole group. The
    /// default collects the links and runs `f` without that exclusion.
    fn with_thread_group(&self, pid: i32, f: &mut MigrateFn<'_>) -> Result<(), Errno> {
        f(&self.thread_group_links(pid)?)
    }

    /// Every task of the hierarchy that holds its link inline ([`CgroupMember::css`]),
    /// live or not, in any cgroup: the cgroup side keeps the ones listed in the root.
    /// Called with no cgroup lock held. Needed only by a resolver registered with
    /// [`Hierarchy::set_listing_resolver`]; defaults to none.
    fn members(&self) -> Vec<Arc<dyn CgroupMember>> {
        Vec::new()
    }
}

/// Something that can be moved between cgroups as a whole thread group.
pub trait Attachable {
    /// The links of every live thread of the thread group.
    fn css_links(&self) -> Vec<LinkRef>;

    /// Runs `f` over [`css_links`](Attachable::css_links) while the group cannot fork
    /// (see [`TaskResolver::with_thread_group`]). The default has no such exclusion.
    fn with_threadgroup_locked(&self, f: &mut MigrateFn<'_>) -> Result<(), Errno> {
        f(&self.css_links())
    }

    /// Whether this belongs to the runtime of hierarchy `h`, whatever state it is in (a
    /// dead task has no links left to compare). [`Cgroup::attach`] refuses anything
    /// else with EINVAL. The default answers from the links.
    fn belongs_to(&self, h: &Hierarchy) -> bool {
        self.css_links().iter().all(|l| l.is_of(h))
    }
}

impl Attachable for Vec<LinkRef> {
    fn css_links(&self) -> Vec<LinkRef> {
        self.clone()
    }
}

impl Attachable for LinkRef {
    fn css_links(&self) -> Vec<LinkRef> {
        vec![self.clone()]
    }
}

impl Attachable for Vec<Arc<CssLink>> {
    fn css_links(&self) -> Vec<LinkRef> {
        self.iter().cloned().map(LinkRef::from).collect()
    }
}

impl Attachable for Arc<CssLink> {
    fn css_links(&self) -> Vec<LinkRef> {
        vec![LinkRef::from(self.clone())]
    }
}

/// A successful [`Cgroup::can_fork`]: the new task is charged to the cgroup and its
/// ancestors, and the cgroup cannot be removed until the fork completes
/// ([`post_fork`](ForkCharge::post_fork)) or fails ([`cancel`](ForkCharge::cancel)).
/// Dropping it cancels.
#[must_use = "a ForkCharge must end in post_fork(_link) or cancel (dropping it cancels)"]
pub struct ForkCharge {
    /// The anchor the child is linked through (its cgroup is the one charged). `None`
    /// only once [`take_link`](ForkCharge::take_link) has moved it into the link, which
    /// disarms the charge ([`anchor`](ForkCharge::anchor) reads it).
    anchor: Option<Arc<Anchor>>,
    /// `kill_seq` read under `css_set_lock` at can_fork (`cgroup_css_set_fork`).
    kill_seq: u64,
    /// `Scalable`, a cgroup that can be removed: the member-set entry reserved at
    /// can_fork (rmdir is EBUSY while it is there), [`NO_SLOT`] otherwise.
    slot: u32,
    armed: bool,
    /// A fork into the root of a `Scalable` hierarchy whose resolver lists the root's
    /// members (decided at can_fork): [`take_link`](ForkCharge::take_link) moves the
    /// anchor into the link.
    listed_root: bool,
}

/// The result of [`ForkCharge::post_fork`].
#[derive(Debug)]
pub struct PostFork {
    /// The new task's membership; the task list keeps it for the task's whole life.
    pub link: Arc<CssLink>,
    /// A `cgroup.kill` on the cgroup or an ancestor happened between can_fork and
    /// post_fork: the caller must SIGKILL the new task (Linux does so in
    /// `cgroup_post_fork`). The task is linked either way.
    pub killed: bool,
}

/// One task's membership (its css_set link), built unlinked by
/// [`ForkCharge::prepare_link`] into the task itself and linked by
/// [`ForkCharge::post_fork_link`] (the task list's way: the link lives inside the task,
/// which hands it out through [`CgroupMember::css`]), or created apart, in an `Arc`, by
/// [`ForkCharge::post_fork`]. Held for the task's life.
///
/// It is *linked* (counted in `populated`, listed in `cgroup.procs`, reached by
/// `cgroup.kill`) from post_fork until [`task_dead`](CssLink::task_dead), and
/// *charged* (counted in `pids.current`) until [`release`](CssLink::release). Dropping
/// it does both, so a task list that forgets cannot leak a charge.
pub struct CssLink {
    /// The id of the current cgroup, mirrored from `state` (written with it held) so
    /// that the id recorded at every reap (`pidfs_exit`) is read without a lock.
    current_id: AtomicU64,
    /// Lock order: `css_set_lock` -> `state` -> a node's registry -> anchors' member
    /// locks (`Scalable`: no `css_set_lock`; two anchors by address). `release` takes
    /// `state` alone.
    state: SpinMutex<LinkState>,
    /// This link's entry in its anchor's member set (meaningful while linked). Written
    /// under the anchor's member lock (post_fork, migration), read under it.
    key: AtomicU32,
    /// Where the link is in its life (`phase.rs`: who writes which transition, under
    /// which lock). A link in a member set changes only under its anchor's member lock
    /// (and `css_set_lock` under the Linux profiles); a listed one (`Scalable`, the
    /// root) by compare-exchange. So post_fork, task_dead, release and migration decide
    /// on one value each, in one order; read without a lock (`Acquire`) to skip work
    /// for a link past the step.
    phase: AtomicU8,
    /// What release has to uncharge ([`NOT_CHARGED`], [`CHARGED_TO_ROOT`],
    /// [`CHARGED_TO_LEVELS`]). Set with the phase by post_fork, then written only
    /// under `state` (migration, and release for pids levels) or, for a root charge,
    /// cleared by release once the link is unlinked for good.
    charged: AtomicU8,
    /// `Profile::Scalable` (no `css_set_lock`), fixed with the hierarchy.
    scalable: bool,
    /// On its cgroup's list of dying leaders ([`task_dead_leader`]). Set once, under
    /// `state`, after the link is unlinked for good (so its anchor no longer moves);
    /// release and drop, which take the entry out, read it first (`Acquire`) to skip
    /// the lock for every other task.
    ///
    /// [`task_dead_leader`]: CssLink::task_dead_leader
    parked: AtomicBool,
}

/// [`CssLink::charged`]: nothing to uncharge (released, or post_fork not run yet).
const NOT_CHARGED: u8 = 0;
/// Charged to the root, which keeps no pids counter: release only clears the flag.
const CHARGED_TO_ROOT: u8 = 1;
/// Charged to the pids levels of the current cgroup: release uncharges them.
const CHARGED_TO_LEVELS: u8 = 2;

/// The [`CssLink::charged`] value of a task charged to `node`.
#[inline]
fn charge_kind(node: &crate::hierarchy::Node) -> u8 {
    if node.is_charged_to() {
        CHARGED_TO_LEVELS
    } else {
        CHARGED_TO_ROOT
    }
}

struct LinkState {
    /// The task's css_set: the anchor of its current cgroup it is linked through
    /// (`task->cgroups`); changes on migration. It holds the cgroup and the hierarchy.
    anchor: Arc<Anchor>,
    /// The anchor this task forks its children into (made at its first fork, replaced
    /// when the task has moved to another cgroup since).
    children: Option<Arc<Anchor>>,
}

/// A member-set slab key as stored in [`CssLink::key`] (a member set holds at most one
/// entry per live task).
fn narrow_key(key: usize) -> u32 {
    u32::try_from(key).expect("fewer than 2^32 members in one anchor")
}

/// A `cgroup.kill` in flight on these cgroups (the subtree it kills): its drop ends it
/// (bumps each `kill_seq` once more, then lowers each mark), also if a member's kill
/// panicked, so that no later fork is killed for it.
struct KillInFlight(Vec<Arc<crate::hierarchy::Node>>);

impl Drop for KillInFlight {
    fn drop(&mut self) {
        for n in &self.0 {
            n.kill.end();
        }
    }
}

thread_local! {
    /// How many [`Cgroup::kill`]s this thread is signalling (a hook they run may
    /// migrate: it must not wait for them).
    static SIGNALLING_KILLS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Counts this thread in [`SIGNALLING_KILLS`] while it lives.
struct Signalling;

impl Signalling {
    fn enter() -> Signalling {
        SIGNALLING_KILLS.with(|n| n.set(n.get() + 1));
        Signalling
    }
}

impl Drop for Signalling {
    fn drop(&mut self) {
        SIGNALLING_KILLS.with(|n| n.set(n.get() - 1));
    }
}

impl Cgroup {
    /// The tree lock (`cgroup_mutex`), taken once no kill of this cgroup or an
    /// ancestor is signalling (unless this thread is signalling one): see
    /// [`attach_links`](Cgroup::attach_links). A slow path: it spins, yields, then
    /// sleeps while a kill's signal hooks run.
    fn tree_lock_between_kills(&self) -> parking_lot::MutexGuard<'_, crate::hierarchy::Tree> {
        let mut waits = 0u32;
        loop {
            let tree = self.hier.tree.lock();
            if !self.node.kill.in_flight() || SIGNALLING_KILLS.with(|n| n.get()) != 0 {
                return tree;
            }
            drop(tree);
            waits += 1;
            match waits {
                0..=16 => std::hint::spin_loop(),
                17..=64 => std::thread::yield_now(),
                _ => std::thread::sleep(std::time::Duration::from_micros(100)),
            }
        }
    }
}

/// [`ForkCharge::slot`] of a fork that reserved no entry.
const NO_SLOT: u32 = u32::MAX;

/// `cgroup_can_fork` through `anchor` (an anchor of the cgroup the child goes to).
#[inline(always)]
fn charge_into(anchor: Arc<Anchor>) -> Result<ForkCharge, Errno> {
    let cg = &anchor.cg;
    let node = &cg.node;
    let mut listed_root = false;
    let (kill_seq, slot) = if !cg.hier.is_scalable() {
        let _css = cg.hier.css_set_lock.lock();
        if node.is_removed() {
            return Err(Errno::ENOENT);
        }
        node.nr_forking.fetch_add(1, Ordering::AcqRel);
        (node.kill.seen(), NO_SLOT)
    } else if node.is_gated() {
        // rmdir decides under every anchor's member lock: either it sees this fork's
        // reserved entry (EBUSY), or this fork, taking the lock after, sees the
        // cgroup removed. The entry is filled at post_fork, given back at cancel.
        let reserved = fork_gate::enter(&mut anchor.members.lock(), &node.removed);
        let Some(slot) = reserved else {
            return Err(Errno::ENOENT);
        };
        let slot = narrow_key(slot);
        (node.kill.seen(), slot)
    } else {
        // The root: never removed, never killed (its kill_seq stays 0).
        listed_root = cg.hier.lists_root_members();
        (0, NO_SLOT)
    };
    // The root has no pids level (and no cgroup below it lacks one): nothing to charge.
    let charged = if node.is_charged_to() {
        pids::try_charge(node.pids_levels())
    } else {
        Ok(())
    };
    if let Err(level) = charged {
        leave_gate(&anchor, slot);
        cg.pids_event(level);
        return Err(Errno::EAGAIN);
    }
    Ok(ForkCharge {
        anchor: Some(anchor),
        kill_seq,
        slot,
        armed: true,
        listed_root,
    })
}

/// A fork through `anchor` failed after can_fork: what it did to keep rmdir off
/// (`slot`: its reserved entry under `Scalable`) is undone.
#[inline]
fn leave_gate(anchor: &Anchor, slot: u32) {
    if !anchor.cg.hier.is_scalable() {
        anchor.cg.node.nr_forking.fetch_sub(1, Ordering::Release);
    } else if slot != NO_SLOT {
        anchor.members.lock().unreserve(slot as usize);
    }
}

impl Cgroup {
    /// `cgroup_can_fork`: the cgroup half of fork, before the task is visible, for a
    /// fork named into this cgroup (`CLONE_INTO_CGROUP`); a task forking into its own
    /// cgroup calls [`CssLink::can_fork`] on its link.
    ///
    /// `Scalable` takes no global lock (one atomic on the anchor's fork count, then
    /// the per-level charge). The other profiles take `css_set_lock` once
    /// (`cgroup_css_set_fork`: pin the cgroup, read `kill_seq`), then charge the pids
    /// controller without it (`pids_can_fork` -> `pids_try_charge`): one atomic per
    /// level from this cgroup up to (not including) the root. On a full level
    /// everything is reverted, the rejection is counted in `pids.events` /
    /// `pids.events.local`, and the fork fails with EAGAIN. ENOENT if this cgroup was
    /// removed.
    pub fn can_fork(&self) -> Result<ForkCharge, Errno> {
        charge_into(self.default_anchor()?)
    }

    /// The anchor of forks and migrations that name this cgroup; ENOENT once removed.
    fn default_anchor(&self) -> Result<Arc<Anchor>, Errno> {
        let mut reg = self.node.registry.lock();
        if self.node.is_removed() {
            return Err(Errno::ENOENT);
        }
        Ok(reg.default_anchor(self))
    }

    /// `pids_event`: count a rejected fork (forking cgroup = self, over-limit cgroup =
    /// the `level`-th pids level above it) and log it.
    #[cold]
    fn pids_event(&self, level: usize) {
        let node = &self.node;
        let first = node.pids.as_ref().is_some_and(|p| p.note_forkfail());
        pids::note_max_event(node.pids_levels().skip(level));
        if first {
            tracing::info!(path = %node.path(), "fork rejected by pids controller in {}", node.path());
        } else {
            tracing::debug!(path = %node.path(), "fork rejected by pids controller in {}", node.path());
        }
    }

    /// Migrates whole thread groups here (`cgroup_attach_task`, as a write to
    /// `cgroup.procs` does): every linked thread of `task` moves; threads already dead
    /// stay where their charge is.
    ///
    /// The pids controller charges the destination unconditionally and uncharges the
    /// source (`pids_can_attach`), so `pids.current` may end above `pids.max`.
    /// Takes `css_set_lock` once, inside the task's thread-group exclusion
    /// ([`Attachable::with_threadgroup_locked`]): a thread being forked lands in the
    /// group's cgroup either before (and moves with it) or after (and is forked there).
    /// ENOENT if this cgroup was removed; EINVAL for a task or link of another
    /// hierarchy (a dead task of another runtime included).
    pub fn attach(&self, task: &impl Attachable) -> Result<(), Errno> {
        if !task.belongs_to(&self.hier) {
            return Err(Errno::EINVAL);
        }
        task.with_threadgroup_locked(&mut |links| self.attach_links(links))
    }

    /// [`attach`](Cgroup::attach) for links already collected (the `cgroup.procs`
    /// write path).
    ///
    /// A migration into a cgroup that a `cgroup.kill` (of it or of an ancestor) is
    /// signalling waits for the kill to end, as Linux's waits for the `cgroup_mutex`
    /// the kill holds throughout: the kill releases its lock once it has collected its
    /// victims, and a process moved in meanwhile was not collected, so it must not
    /// join before the kill ends (its forks would read the kill as theirs and lose
    /// their children to it). A migration made by a signal hook that the kill itself
    /// runs does not wait for that kill.
    pub fn attach_links(&self, links: &[LinkRef]) -> Result<(), Errno> {
        if links.iter().any(|l| !l.is_of(&self.hier)) {
            return Err(Errno::EINVAL);
        }
        let dest = &self.node;
        let scalable = self.hier.is_scalable();
        // Into the root of a listing hierarchy, a link held inline is listed, not put in
        // a member set (`phase.rs`).
        let dest_lists = scalable && dest.parent.is_none() && self.hier.lists_root_members();
        let mut moved = 0usize;
        {
            // `cgroup_mutex`, as every migration takes it in Linux: a `cgroup.kill`
            // collects its subtree under it, so a task moving inside the subtree is
            // collected where it is before or after the move, never missed between
            // two of the subtree's cgroups (`Scalable` has no css_set_lock to order
            // them). Rule: cgroup_mutex -> css_set_lock -> link state -> member sets.
            let _tree = self.tree_lock_between_kills();
            let _css = (!scalable).then(|| self.hier.css_set_lock.lock());
            // ENOENT if removed. Taken (and the registry dropped) before any link's
            // state: the registry comes after a state in the lock order.
            let dest_anchor = self.default_anchor()?;
            for link in links {
                // Rule: css_set_lock -> link state -> anchors' member sets.
                let mut st = link.state.lock();
                if Arc::ptr_eq(&st.anchor.cg.node, dest) {
                    continue;
                }
                let src_anchor = st.anchor.clone();
                let src = &src_anchor.cg.node;
                // `Scalable`: both member sets, by address (no css_set_lock).
                let (mut src_set, mut dest_set) = lock_pair(&src_anchor, &dest_anchor);
                // A link in a member set changes phase only under the source's member
                // lock; a listed one (the source is the root) may be unlisted by its
                // exit without it, so it is claimed by compare-exchange below. A link
                // not linked (dead, or not linked yet) stays where its charge is.
                let listed = match link.phase.load(Ordering::Acquire) {
                    LINKED => false,
                    LISTED => true,
                    _ => continue,
                };
                if scalable && dest.is_removed() {
                    // rmdir won the race before anything moved in (a populated cgroup
                    // cannot be removed): report it as the locked profiles would.
                    if moved == 0 {
                        return Err(Errno::ENOENT);
                    }
                    break;
                }
                if listed && !phase::relink(&link.phase) {
                    // Its exit unlisted it first: dead, it stays.
                    continue;
                }
                let ca = common_ancestor(src, dest);
                // A linked link holds its charge (post_fork hands both at once).
                debug_assert_ne!(link.charged.load(Ordering::Relaxed), NOT_CHARGED);
                // pids_can_attach: charge the new css's every level, then uncharge the
                // old one's. The common ancestors go +1 then -1: their peak records
                // the +1, as Linux's does (`pids_charge` updates each watermark), but
                // their counter is left alone. No fork ever sees that +1 in Linux
                // (a migration holds `cgroup_threadgroup_rwsem` for writing, which
                // every fork's can_fork..post_fork holds for reading); here forks run
                // beside migrations, and a +1 they could see would refuse them with
                // room to spare.
                pids::charge(dest.pids_levels_below(ca));
                pids::uncharge_shared(src.pids_levels_below(ca));
                pids::peak_one_more(ca.pids_levels());
                link.charged.store(charge_kind(dest), Ordering::Relaxed);
                let m = if listed {
                    // In no member set: the member is the one that holds the link.
                    match link {
                        LinkRef::Inline(m) => Some((0, Arc::downgrade(m))),
                        LinkRef::Shared(_) => {
                            unreachable!("a listed link is held inline by its member")
                        }
                    }
                } else {
                    let m = src_set.remove(link.key.load(Ordering::Relaxed) as usize);
                    debug_assert!(m.is_some(), "a linked link is in its anchor's member set");
                    m
                };
                if dest_lists && matches!(link, LinkRef::Inline(_)) {
                    // Into the root: listed. Its exit may unlist it from now on.
                    drop(m);
                    phase::moved_into_listing(&link.phase);
                } else if let Some((_, m)) = m {
                    // To the tail of the destination (`cgroup_migrate_execute` splices
                    // the moved tasks onto the end of the css_set's list).
                    let key = if scalable {
                        dest_set.append(m)
                    } else {
                        // A new serial of the one runtime-wide order (under
                        // css_set_lock, as a fork's): after every member linked before.
                        let serial = self.hier.next_link.fetch_add(1, Ordering::Relaxed);
                        dest_set.insert(serial, m)
                    };
                    link.key.store(narrow_key(key), Ordering::Relaxed);
                }
                if !scalable {
                    // Written only under css_set_lock (held): the destination chain
                    // first, so no common ancestor reads unpopulated transiently.
                    for n in dest.ancestors().take_while(|n| !core::ptr::eq(*n, ca)) {
                        n.nr_populated.fetch_add(1, Ordering::Release);
                    }
                    for n in src.ancestors().take_while(|n| !core::ptr::eq(*n, ca)) {
                        n.nr_populated.fetch_sub(1, Ordering::Release);
                    }
                }
                drop((src_set, dest_set));
                st.anchor = dest_anchor.clone();
                // The anchor its next children would have joined in the old cgroup:
                // kept, it would hold that cgroup in memory after its rmdir.
                st.children = None;
                link.current_id.store(dest.id, Ordering::Relaxed);
                moved += 1;
            }
        }
        tracing::debug!(path = %dest.path(), moved, "tasks migrated");
        Ok(())
    }

    /// `cgroup.kill` (`cgroup_kill_write` -> `cgroup_kill`): SIGKILL to the leader of
    /// every process of this cgroup and its descendants (each thread group with its
    /// leader in the subtree: live, or dead before a thread of its group that still
    /// lives, see [`CssLink::task_dead_leader`]), and to every child a fork links into
    /// the subtree while the kill is in flight.
    ///
    /// Under `cgroup_mutex` and `css_set_lock` (`Scalable`: each anchor's member lock
    /// in turn) it marks every cgroup of the subtree as being killed
    /// (`kills_in_flight`, Linux's `CGRP_KILL`), bumps its `kill_seq` and collects the
    /// members; it calls [`CgroupMember::kill`] on each leader after
    /// dropping both locks, then bumps every `kill_seq` once more and lowers the marks.
    /// A fork between can_fork and post_fork comes out [`killed`](PostFork::killed)
    /// when the kill started after its can_fork (the first bump), was in flight when it
    /// linked its child (the mark), or ended after its can_fork (the second bump: its
    /// parent, collected here, may have been killed only after the fork's attach
    /// checked it for a fatal signal, and a collection made before the child was
    /// linked missed the child). So no child of a killed member survives the kill.
    /// ENOENT on the root (Linux has no `cgroup.kill` there) and on a removed cgroup.
    pub fn kill(&self) -> Result<(), Errno> {
        if self.node.parent.is_none() {
            return Err(Errno::ENOENT);
        }
        let (in_flight, victims) = {
            let tree = self.hier.tree.lock();
            if self.node.is_removed() {
                return Err(Errno::ENOENT);
            }
            let subtree = tree.subtree(&self.node);
            // Rule: cgroup_mutex -> css_set_lock -> registry -> member sets.
            // `Scalable`: no css_set_lock; one anchor at a time (see the bump below).
            let _css = (!self.hier.is_scalable()).then(|| self.hier.css_set_lock.lock());
            let mut v: Vec<Weak<dyn CgroupMember>> = Vec::new();
            let mut dying: Vec<Weak<dyn CgroupMember>> = Vec::new();
            for n in &subtree {
                // Marked and bumped before any anchor is collected: a post_fork that
                // compares after its anchor was collected takes that anchor's lock
                // after the collection, so it sees both. An anchor registered after
                // the snapshot below serves forks that read kill_seq after the bump,
                // and they link while the mark is up (or see the end's bump).
                n.kill.begin();
                let anchors = n.registry.lock().live();
                for a in &anchors {
                    v.extend(a.members.lock().values().cloned());
                }
                dying.extend(n.parked());
            }
            (KillInFlight(subtree), (v, dying))
        };
        let (members, dying) = victims;
        let _signalling = Signalling::enter();
        tracing::info!(path = %self.node.path(), tasks = members.len(), "cgroup.kill");
        // The leaders `cgroup.procs` lists, as Linux's CSS_TASK_ITER_PROCS walk
        // signals them: the live ones (the task list's SIGKILL to a live leader ends
        // its group), then those that died in the subtree while a thread of theirs
        // lives (Linux's SIGKILL to one is taken by nobody, so the process survives;
        // the member decides). A live non-leader is never signalled itself.
        // One kill walk (`uproc_abi::walk`): every leader has its SIGKILL before any
        // member the task list ends at once dies, as Linux's victims die after
        // `cgroup_kill`'s loop.
        uproc_abi::walk::walk(|| {
            for m in members.iter().filter_map(Weak::upgrade) {
                if m.is_group_leader() {
                    m.kill();
                }
            }
            for m in crate::hierarchy::still_listed(&dying) {
                m.kill();
            }
        });
        drop(in_flight);
        Ok(())
    }

    /// The members linked in this cgroup itself (not descendants), in link order,
    /// collected under `css_set_lock` (the `css_task_iter` of a `cgroup.procs` read).
    pub(crate) fn members(&self) -> Vec<Arc<dyn CgroupMember>> {
        let mut members = self.set_members();
        members.extend(self.listed_members());
        members
    }

    /// The root's listed members (`Scalable`, a listing resolver: in no member set),
    /// in the resolver's order; none elsewhere.
    fn listed_members(&self) -> Vec<Arc<dyn CgroupMember>> {
        // Not the flag: links listed under a listing resolver stay listed whatever is
        // registered after it.
        if self.node.parent.is_some() || !self.hier.is_scalable() {
            return Vec::new();
        }
        let Some(resolver) = self.hier.resolver() else {
            return Vec::new();
        };
        let mut listed = resolver.members();
        listed.retain(|m| {
            m.css()
                .is_some_and(|l| l.is_listed() && l.is_of(&self.hier))
        });
        listed
    }

    /// The members of this cgroup's anchors' member sets.
    fn set_members(&self) -> Vec<Arc<dyn CgroupMember>> {
        let _css = (!self.hier.is_scalable()).then(|| self.hier.css_set_lock.lock());
        let anchors = self.node.registry.lock().live();
        let mut out: Vec<(u64, Arc<dyn CgroupMember>)> = Vec::new();
        for a in &anchors {
            let from = out.len();
            out.extend(
                a.members
                    .lock()
                    .entries()
                    .filter_map(|(serial, m)| Some((serial, m.upgrade()?))),
            );
            // `Scalable` numbers per anchor: anchor by anchor, link order within each,
            // as Linux walks one css_set after another.
            out[from..].sort_unstable_by_key(|(serial, _)| *serial);
        }
        // Linux profiles: one runtime-wide link order across the anchors.
        if !self.hier.is_scalable() {
            out.sort_by_key(|(serial, _)| *serial);
        }
        out.into_iter().map(|(_, m)| m).collect()
    }

    /// `cgroup.events` "populated". Kept as a count under the Linux profiles; computed
    /// under `Scalable` (a member in an anchor of this cgroup or a descendant), so no
    /// fork writes a count its whole subtree shares.
    pub(crate) fn populated(&self) -> bool {
        if !self.hier.is_scalable() {
            return self.node.is_populated();
        }
        let in_sets = {
            let tree = self.hier.tree.lock();
            tree.subtree(&self.node).iter().any(|n| n.has_members())
        };
        // The resolver is asked with no lock held.
        in_sets || !self.listed_members().is_empty()
    }
}

impl ForkCharge {
    /// The anchor, which every charge has until [`take_link`](ForkCharge::take_link)
    /// moves it into a listed root's link (and disarms the charge, whose remaining
    /// steps, `post_fork_inline`, cancel and drop, do not call this).
    #[inline]
    fn anchor(&self) -> &Arc<Anchor> {
        self.anchor
            .as_ref()
            .expect("a charge keeps its anchor until take_link disarms it")
    }

    /// The cgroup charged (where post_fork will link the task).
    pub fn cgroup(&self) -> &Cgroup {
        &self.anchor().cg
    }

    /// `cgroup_cancel_fork` (pids: `pids_cancel_fork`): the fork failed after
    /// can_fork; uncharge. Takes no global lock.
    pub fn cancel(mut self) {
        self.cancel_inner();
    }

    fn cancel_inner(&mut self) {
        if !std::mem::replace(&mut self.armed, false) {
            return;
        }
        // Armed, so it has its anchor (`take_link` disarms the charge it takes it from).
        if let Some(anchor) = &self.anchor {
            let node = &anchor.cg.node;
            if node.is_charged_to() {
                pids::uncharge(node.pids_levels());
            }
            leave_gate(anchor, self.slot);
        }
    }

    /// `cgroup_post_fork`: link the new task into the cgroup (`css_set_lock`
    /// acquisition #2 of its life; `Scalable`: its anchor's member lock only) and hand
    /// back its [`CssLink`]. `killed` is true when `kill_seq` moved since can_fork (a
    /// `cgroup.kill` on this cgroup or an ancestor raced with the fork); the charge
    /// taken at can_fork now belongs to the link.
    pub fn post_fork(self, member: Weak<dyn CgroupMember>) -> PostFork {
        let link = Arc::new(self.prepare_link());
        let killed = self.post_fork_link(&link, member);
        PostFork { link, killed }
    }

    /// The new task's [`CssLink`], built before the task is visible so that the task
    /// can hold it from its creation (no set-once cell to fill at post_fork): neither
    /// linked nor charged yet, its cgroup the one charged here. Until
    /// [`post_fork_link`](ForkCharge::post_fork_link) (or if the fork fails and it is
    /// dropped) [`task_dead`](CssLink::task_dead) and [`release`](CssLink::release)
    /// do nothing to it.
    ///
    /// Returned by value, so that the task holds it inline (one allocation per task,
    /// not two) and hands it to the cgroup side through [`CgroupMember::css`].
    pub fn prepare_link(&self) -> CssLink {
        CssLink::prepared(self.anchor().clone())
    }

    /// [`prepare_link`](ForkCharge::prepare_link) for a fork that ends this charge
    /// with [`post_fork_inline`](ForkCharge::post_fork_inline) (the task list's way),
    /// sparing the common `Scalable` fork two atomic read-modify-writes: a fork into
    /// the root of a hierarchy whose resolver lists the root's members (the fork that
    /// `post_fork_inline` lists without a lock) *moves* this charge's count of its
    /// anchor into the link, instead of cloning it for the link and dropping the
    /// charge's at post_fork. That is sound because such a fork charged and reserved
    /// nothing (the root keeps no pids counter and is never removed): the charge is
    /// disarmed, nothing is left to cancel, and post_fork needs only the link. Any
    /// other fork gets what `prepare_link` gives, and the charge is unchanged.
    ///
    /// Whether the root lists its members was read at can_fork rather than at post_fork
    /// (Linux too picks the child's css_set at can_fork). After it, end the charge with
    /// `post_fork_inline` on the member that holds this link, or with
    /// [`cancel`](ForkCharge::cancel) or a drop.
    ///
    /// # Panics
    /// [`cgroup`](ForkCharge::cgroup), [`prepare_link`](ForkCharge::prepare_link),
    /// [`post_fork`](ForkCharge::post_fork) and
    /// [`post_fork_link`](ForkCharge::post_fork_link) panic on a charge whose anchor
    /// this moved (they would need it), and so does a second `take_link` of it.
    #[inline(always)]
    pub fn take_link(&mut self) -> CssLink {
        if !self.listed_root {
            return CssLink::prepared(self.anchor().clone());
        }
        debug_assert!(
            !self.anchor().cg.node.is_charged_to(),
            "the root keeps no pids counter"
        );
        debug_assert_eq!(self.slot, NO_SLOT, "the root reserves no entry");
        // Disarmed first: the charge stood for nothing to cancel (above), so its
        // cancel and its drop do nothing and never read the anchor it gave up.
        self.armed = false;
        CssLink::prepared(self.anchor.take().expect("an armed charge has its anchor"))
    }

    /// [`post_fork_link`](ForkCharge::post_fork_link) for a member that holds its link
    /// inline ([`CgroupMember::css`] returns the link built by
    /// [`prepare_link`](ForkCharge::prepare_link) of this charge): the task list's way.
    /// Returns `killed`.
    ///
    /// Under `Scalable`, into the root of a hierarchy whose resolver lists the root's
    /// members ([`Hierarchy::set_listing_resolver`]), the link is *listed*: linked by one
    /// compare-exchange, in no member set (so no lock, and no `Weak` of the member to
    /// make and drop); `cgroup.procs` of the root finds it through the resolver.
    ///
    /// # Panics
    /// If `member` holds no link ([`CgroupMember::css`] is `None`).
    #[inline(always)]
    pub fn post_fork_inline<M: CgroupMember>(self, member: &Arc<M>) -> bool {
        let link = member
            .css()
            .expect("post_fork_inline: a member that holds its link inline");
        let Some(anchor) = &self.anchor else {
            // `take_link` moved the listed root's anchor into the link and disarmed
            // this charge, which now owns nothing (plain values and `None`): forgotten,
            // not dropped, which spares the fork the drop's call.
            std::mem::forget(self);
            link.list_in_root();
            return false;
        };
        let node = &anchor.cg.node;
        if link.scalable && !node.is_gated() && anchor.cg.hier.lists_root_members() {
            return self.post_fork_listed(link);
        }
        let weak: Weak<M> = Arc::downgrade(member);
        self.post_fork_link(link, weak)
    }

    /// post_fork of a listed link (see [`post_fork_inline`](Self::post_fork_inline)):
    /// the root is never killed nor removed and keeps no pids counter, so there is no
    /// `kill_seq` to compare, no reserved entry and nothing to uncharge; the phase
    /// alone decides (`phase::list`).
    #[inline]
    fn post_fork_listed(mut self, link: &CssLink) -> bool {
        self.armed = false;
        debug_assert!(
            Arc::ptr_eq(&link.state.lock().anchor, self.anchor()),
            "a link prepared by this charge"
        );
        debug_assert_eq!(self.slot, NO_SLOT, "the root reserves no entry");
        link.list_in_root();
        false
    }

    /// [`post_fork`](ForkCharge::post_fork) onto a link from
    /// [`prepare_link`](ForkCharge::prepare_link) of this charge, for `member` (the
    /// task that holds the link): links it into the anchor's member set and hands it
    /// the charge. Returns `killed`. The member set keeps `member`; the link itself
    /// names no member (a link held inline is found through its member,
    /// [`CgroupMember::css`]).
    pub fn post_fork_link(mut self, link: &CssLink, member: Weak<dyn CgroupMember>) -> bool {
        // The charge goes to the link (or, for a task released already, is undone
        // here): no longer this ForkCharge's to cancel.
        self.armed = false;
        let anchor = self.anchor();
        debug_assert!(
            Arc::ptr_eq(&link.state.lock().anchor, anchor),
            "a link prepared by this charge"
        );
        let node = &anchor.cg.node;
        let kind = charge_kind(node);
        let (killed, adopted) = if link.scalable {
            // The anchor's member lock stands for css_set_lock: cgroup.kill collects
            // under it after bumping kill_seq, rmdir decides under it, and every change
            // of the link's phase is made under it. The serial comes from the anchor's
            // own set (no runtime-wide counter every fork would write); it only orders
            // entries inside that set.
            let mut members = anchor.members.lock();
            // Read in the critical section that links the child (`kill_state.rs`).
            let killed = node.kill.raced(self.kill_seq);
            let slot = self.slot;
            let adopted = link.adopt(&mut members, kind, |m| match slot {
                NO_SLOT => m.append(member),
                // The entry reserved at can_fork: rmdir saw it all along.
                slot => m.fill(slot as usize, member),
            });
            if adopted != Adopted::Linked && slot != NO_SLOT {
                members.unreserve(slot as usize);
            }
            drop(members);
            (killed, adopted)
        } else {
            self.link_under_css_set_lock(link, member, kind)
        };
        if killed || adopted == Adopted::Released {
            self.after_post_fork_race(killed, adopted);
        }
        killed
    }

    /// post_fork's linking under the Linux profiles: `css_set_lock` -> the anchor's
    /// member lock, at a runtime-wide serial, `nr_populated` up to the root. Returns
    /// `killed` and what the link became. Apart from the `Scalable` path, so that its
    /// registers and code stay out of it.
    #[inline(never)]
    fn link_under_css_set_lock(
        &self,
        link: &CssLink,
        member: Weak<dyn CgroupMember>,
        kind: u8,
    ) -> (bool, Adopted) {
        let hier = &self.anchor().cg.hier;
        let node = &self.anchor().cg.node;
        let serial = hier.next_link.fetch_add(1, Ordering::Relaxed);
        let _css = hier.css_set_lock.lock();
        debug_assert!(!node.is_removed(), "rmdir waits for nr_forking");
        let killed = node.kill.raced(self.kill_seq);
        let adopted = link.adopt(&mut self.anchor().members.lock(), kind, |m| {
            m.insert(serial, member)
        });
        if adopted == Adopted::Linked {
            // Every writer of `nr_populated` holds css_set_lock: a load and a store
            // suffice (no read-modify-write per level).
            for n in node.ancestors() {
                let v = n.nr_populated.load(Ordering::Relaxed);
                n.nr_populated.store(v + 1, Ordering::Release);
            }
        }
        // After the member is linked: rmdir sees one or the other.
        node.nr_forking.fetch_sub(1, Ordering::Release);
        (killed, adopted)
    }

    /// What post_fork does after a race: a task reaped before it was linked gives the
    /// charge back; a `cgroup.kill` between can_fork and post_fork is logged.
    #[cold]
    #[inline(never)]
    fn after_post_fork_race(&self, killed: bool, adopted: Adopted) {
        let node = &self.anchor().cg.node;
        if adopted == Adopted::Released && node.is_charged_to() {
            // Reaped before it was linked: the charge leaves with the fork.
            pids::uncharge(node.pids_levels());
        }
        if killed {
            tracing::debug!(path = %node.path(), "fork raced with cgroup.kill: child killed");
        }
    }
}

impl Drop for ForkCharge {
    fn drop(&mut self) {
        self.cancel_inner();
    }
}

impl fmt::Debug for ForkCharge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ForkCharge")
            .field("cgroup", &self.anchor.as_ref().map(|a| &a.cg))
            .field("kill_seq", &self.kill_seq)
            .field("slot", &self.slot)
            .field("armed", &self.armed)
            .finish()
    }
}

impl CssLink {
    /// A new task's link through `anchor`, neither linked nor charged
    /// ([`ForkCharge::prepare_link`], [`ForkCharge::take_link`]).
    #[inline(always)]
    fn prepared(anchor: Arc<Anchor>) -> CssLink {
        let (id, scalable) = (anchor.cg.node.id, anchor.cg.hier.is_scalable());
        CssLink {
            current_id: AtomicU64::new(id),
            state: SpinMutex::new(LinkState {
                anchor,
                children: None,
            }),
            key: AtomicU32::new(0),
            phase: AtomicU8::new(PREPARED),
            charged: AtomicU8::new(NOT_CHARGED),
            scalable,
            parked: AtomicBool::new(false),
        }
    }

    /// post_fork of a link listed in the root: the root's charge is only a flag, stored
    /// before the phase publishes it (`Release`); a link released already is left
    /// uncharged (`phase::list` decides against an early task_dead or release).
    #[inline]
    fn list_in_root(&self) {
        self.charged.store(CHARGED_TO_ROOT, Ordering::Relaxed);
        if phase::list(&self.phase) == Adopted::Released {
            self.charged.store(NOT_CHARGED, Ordering::Relaxed);
        }
    }

    /// `cgroup_can_fork` for a child of this link's task forked into the task's own
    /// cgroup: [`Cgroup::can_fork`] of [`cgroup`](CssLink::cgroup) without making a
    /// handle. The child is linked through an anchor of this task (made at its first
    /// fork, or after it moved), so two tasks forking into one cgroup write no common
    /// line. ENOENT if the cgroup was removed (possible only for a dead task).
    ///
    /// A migration may move the task between the read of its cgroup and the charge,
    /// and an rmdir remove the cgroup it left: the charge then finds that cgroup
    /// removed, and the fork goes on in the one the task is in now (Linux's fork holds
    /// `cgroup_threadgroup_rwsem` against the migration instead; a live task's plain
    /// fork never gets ENOENT there).
    pub fn can_fork(&self) -> Result<ForkCharge, Errno> {
        let anchor = self.fork_anchor()?;
        let node = Arc::as_ptr(&anchor.cg.node);
        match charge_into(anchor) {
            Err(Errno::ENOENT) => self.can_fork_after_a_move(node),
            r => r,
        }
    }

    /// [`can_fork`](CssLink::can_fork) after its charge found the cgroup at `node`
    /// removed: again in the task's current cgroup while a migration has moved it.
    #[cold]
    #[inline(never)]
    fn can_fork_after_a_move(
        &self,
        mut node: *const crate::hierarchy::Node,
    ) -> Result<ForkCharge, Errno> {
        loop {
            // Compared by address only: the task's current cgroup is live, so it is
            // not a node freed and reallocated at the same address meanwhile.
            if core::ptr::eq(self.state.lock().anchor.cg.node.as_ref(), node) {
                return Err(Errno::ENOENT);
            }
            let anchor = self.fork_anchor()?;
            node = Arc::as_ptr(&anchor.cg.node);
            match charge_into(anchor) {
                Err(Errno::ENOENT) => {}
                r => return r,
            }
        }
    }

    /// The anchor a fork of this link's task links its child through: the task's own
    /// for its current cgroup, made at its first fork there. ENOENT if that cgroup
    /// was removed.
    #[inline(always)]
    fn fork_anchor(&self) -> Result<Arc<Anchor>, Errno> {
        let anchor = {
            let mut st = self.state.lock();
            match &st.children {
                Some(a) if Arc::ptr_eq(&a.cg.node, &st.anchor.cg.node) => a.clone(),
                _ => {
                    let cg = &st.anchor.cg;
                    let a = {
                        // Rule: link state -> registry.
                        let mut reg = cg.node.registry.lock();
                        if cg.node.is_removed() {
                            return Err(Errno::ENOENT);
                        }
                        reg.create(cg)
                    };
                    st.children = Some(a.clone());
                    a
                }
            }
        };
        Ok(anchor)
    }

    /// The task's current cgroup (changes on migration; a dead task keeps the last).
    ///
    /// Takes the link's own state lock (never shared with another task's life cycle);
    /// `arc-swap` in its place was measured slower (see `IMPLEMENTATION.md`).
    pub fn cgroup(&self) -> Cgroup {
        self.state.lock().anchor.cg.clone()
    }

    /// The id of the task's current cgroup: [`Cgroup::id`] of
    /// [`cgroup`](CssLink::cgroup), without making a handle (what `pidfs_exit` records
    /// at every reap).
    pub fn cgroup_id(&self) -> u64 {
        self.current_id.load(Ordering::Relaxed)
    }

    /// Whether this link belongs to hierarchy `h`.
    pub(crate) fn is_of(&self, h: &Hierarchy) -> bool {
        core::ptr::eq(Arc::as_ptr(&self.state.lock().anchor.cg.hier), h)
    }

    /// post_fork's step on a prepared link, under its anchor's member lock (and
    /// `css_set_lock` under the Linux profiles): link it (`insert` puts the member in
    /// the set) and hand it the charge of kind `kind`; or, if task_dead or release
    /// already ran (they found it prepared and left it to this step), hand over the
    /// charge without linking, or neither.
    #[inline]
    fn adopt(
        &self,
        members: &mut MemberSet,
        kind: u8,
        insert: impl FnOnce(&mut MemberSet) -> usize,
    ) -> Adopted {
        // A link in a member set is written only under its anchor's lock (held): a load
        // and a store decide it.
        let (next, charged, adopted) = match self.phase.load(Ordering::Relaxed) {
            PREPARED => {
                self.key
                    .store(narrow_key(insert(members)), Ordering::Relaxed);
                (LINKED, kind, Adopted::Linked)
            }
            DEAD_EARLY => (UNLINKED, kind, Adopted::Dead),
            cur => {
                debug_assert_eq!(cur, RELEASED_EARLY, "post_fork runs once per link");
                (UNLINKED, NOT_CHARGED, Adopted::Released)
            }
        };
        self.charged.store(charged, Ordering::Relaxed);
        // `Release`: a reader that sees the phase without the lock sees `charged`.
        self.phase.store(next, Ordering::Release);
        adopted
    }

    /// `cgroup_task_dead` (after the task's last switch): unlink it (`css_set_lock`
    /// acquisition #3 of its life; `Scalable`: the link's state and its anchor's
    /// member lock only, and for a task listed in the root one compare-exchange and no
    /// lock). The cgroup may become unpopulated; the pids charge stays
    /// until [`release`](CssLink::release). Idempotent: a task unlinked already takes
    /// no lock. On a link post_fork has not linked yet it takes the locks and marks
    /// it dead, so that post_fork does not link it.
    pub fn task_dead(&self) {
        phase::leave(&self.phase, false, || self.unlink(false));
    }

    /// [`task_dead`](CssLink::task_dead) of a thread-group leader that dies while
    /// other threads of its group live: unlinked like any dying task (it no longer
    /// keeps its cgroup populated, `cgroup.threads` no longer lists it, and no
    /// migration moves it, charge included), but kept on its cgroup's list of dying
    /// leaders, as `cgroup_task_dead` keeps it on `cset->dying_tasks`. While its group
    /// has a live thread ([`CgroupMember::group_has_live_threads`]), that cgroup's
    /// `cgroup.procs` lists its tgid and its `cgroup.kill` signals it
    /// ([`CgroupMember::kill`]; on Linux that SIGKILL to an exited thread does
    /// nothing), even after the threads moved elsewhere; the cgroup a thread moved to
    /// does neither. The entry goes at [`release`](CssLink::release) (or the link's
    /// drop).
    ///
    /// `member` is the task this link belongs to. Linux: `cgroup_task_dead` and
    /// `css_task_iter_advance` in `kernel/cgroup/cgroup.c`.
    #[cold]
    pub fn task_dead_leader(&self, member: Weak<dyn CgroupMember>) {
        self.task_dead();
        let st = self.state.lock();
        // Not linked by post_fork (a leader with threads was), or parked already.
        if self.phase.load(Ordering::Acquire) != UNLINKED || self.parked.load(Ordering::Relaxed) {
            return;
        }
        // Rule: link state -> the node's dying list (a leaf).
        st.anchor.cg.node.dying.lock().push(DyingLeader {
            link: self as *const CssLink as usize,
            member,
        });
        self.parked.store(true, Ordering::Release);
    }

    /// Takes a parked link ([`task_dead_leader`](CssLink::task_dead_leader)) off its
    /// cgroup's list of dying leaders; one load for every other link.
    #[inline]
    fn unpark(&self) {
        if !self.parked.load(Ordering::Acquire) {
            return;
        }
        unpark_slow(self);
    }

    /// task_dead's step under the locks, and release's for a link post_fork has not
    /// linked yet (`released`): the phase decides, under the anchor's member lock.
    #[inline(never)]
    fn unlink(&self, released: bool) {
        if !self.scalable {
            return self.unlink_under_css_set_lock(released);
        }
        // Rule: link state -> member set.
        let st = self.state.lock();
        self.unlink_locked(&mut st.anchor.members.lock(), released);
    }

    /// [`unlink`](CssLink::unlink) under the Linux profiles: `css_set_lock` comes
    /// before the state (the hierarchy is the same whatever the anchor), and a task
    /// unlinked leaves `nr_populated` of its cgroup and every ancestor.
    #[inline(never)]
    fn unlink_under_css_set_lock(&self, released: bool) {
        let hier = self.state.lock().anchor.cg.hier.clone();
        let _css = hier.css_set_lock.lock();
        // Rule: css_set_lock -> link state -> member set.
        let st = self.state.lock();
        if self.unlink_locked(&mut st.anchor.members.lock(), released) {
            for n in st.anchor.cg.node.ancestors() {
                // Written only under css_set_lock (held): load and store.
                let old = n.nr_populated.load(Ordering::Relaxed);
                debug_assert!(old > 0, "populated count below zero");
                n.nr_populated.store(old - 1, Ordering::Release);
            }
        }
    }

    /// The phase step of [`unlink`](CssLink::unlink), with the link's anchor's member
    /// set locked: true if it took a linked task out of the set.
    #[inline]
    fn unlink_locked(&self, members: &mut MemberSet, released: bool) -> bool {
        phase::unlink_step(&self.phase, released, || {
            let m = members.remove(self.key.load(Ordering::Relaxed) as usize);
            debug_assert!(m.is_some(), "a linked link is in its anchor's member set");
        })
    }

    /// `cgroup_release` at reap (pids: `pids_release`): uncharge the pids controller
    /// from the task's *current* cgroup; zombies count until this. Takes
    /// `css_set_lock` (never under `Scalable`) only if the task was never declared
    /// dead (then it unlinks first, as Linux does for a task still on a list).
    /// Idempotent. A task charged to the root only (which keeps no counter) takes
    /// no lock and no atomic read-modify-write.
    #[inline]
    pub fn release(&self) {
        // Linked: unlink first. Not linked by post_fork yet: tell it (under the
        // anchor's lock) to uncharge, or, if it has linked meanwhile, unlink.
        phase::leave(&self.phase, true, || self.unlink(true));
        self.unpark();
        self.drop_charge();
    }

    /// The charge part of [`release`](CssLink::release).
    #[inline]
    fn drop_charge(&self) {
        match self.charged.load(Ordering::Acquire) {
            NOT_CHARGED => {}
            // Nothing counted anywhere, and no migration moves an unlinked link: a
            // store ends it (a racing release stores the same).
            CHARGED_TO_ROOT => self.charged.store(NOT_CHARGED, Ordering::Relaxed),
            _ => self.uncharge(),
        }
    }

    /// The pids part of [`release`](CssLink::release).
    fn uncharge(&self) {
        // The swap under the state lock: a migration moves the charge under it, so
        // the cgroup uncharged is the one that holds it.
        let st = self.state.lock();
        // Every write of `charged` after post_fork's (which this release saw, or it
        // would have found nothing to uncharge) is made under the state lock: a load
        // and a store decide it as a swap would.
        if self.charged.load(Ordering::Relaxed) != CHARGED_TO_LEVELS {
            return;
        }
        self.charged.store(NOT_CHARGED, Ordering::Relaxed);
        // Uncharged under the state lock (plain atomics, no lock taken): no clone of
        // the cgroup handle just to release it after.
        pids::uncharge(st.anchor.cg.node.pids_levels());
    }

    /// Whether the task is linked (between post_fork and task_dead).
    pub fn is_linked(&self) -> bool {
        matches!(self.phase.load(Ordering::Acquire), LINKED | LISTED)
    }

    /// Whether the task is listed in the root (linked in no member set, found through
    /// the resolver: [`ForkCharge::post_fork_inline`]).
    pub(crate) fn is_listed(&self) -> bool {
        self.phase.load(Ordering::Acquire) == LISTED
    }

    /// Whether the task still counts in `pids.current` (until release).
    pub fn is_charged(&self) -> bool {
        self.charged.load(Ordering::Acquire) != NOT_CHARGED
    }
}

impl Drop for CssLink {
    #[inline]
    fn drop(&mut self) {
        // Nothing can post_fork a link being dropped: a prepared (or early dead)
        // link's charge is still its ForkCharge's. A reaped task's link (the common
        // case: part of every task's final drop) finds nothing to do in two loads. A
        // listed link is in no member set: only its charge flag to clear.
        if self.phase.load(Ordering::Relaxed) == LINKED {
            self.unlink(true);
        }
        self.unpark();
        self.drop_charge();
    }
}

impl fmt::Debug for CssLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.lock();
        f.debug_struct("CssLink")
            .field("cgroup", &st.anchor.cg.node.path())
            .field("linked", &self.is_linked())
            .field("charged", &self.is_charged())
            .finish_non_exhaustive()
    }
}

/// [`CssLink::unpark`]'s work, out of line: under the link's state (its anchor is
/// fixed once unlinked), the entry with this link's address leaves the list.
#[cold]
#[inline(never)]
fn unpark_slow(link: &CssLink) {
    let st = link.state.lock();
    if !link.parked.swap(false, Ordering::Relaxed) {
        return;
    }
    let addr = link as *const CssLink as usize;
    st.anchor.cg.node.dying.lock().retain(|d| d.link != addr);
}

/// The member sets of two different anchors, locked by address so that two
/// migrations in opposite directions cannot deadlock.
fn lock_pair<'a>(
    a: &'a Anchor,
    b: &'a Anchor,
) -> (SpinGuard<'a, MemberSet>, SpinGuard<'a, MemberSet>) {
    debug_assert!(
        !core::ptr::eq(a, b),
        "a migration moves between two anchors"
    );
    if (a as *const Anchor) < (b as *const Anchor) {
        let ga = a.members.lock();
        (ga, b.members.lock())
    } else {
        let gb = b.members.lock();
        (a.members.lock(), gb)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    //! `ForkCharge::take_link` counts an anchor exactly as `prepare_link` and
    //! `post_fork_inline` do: the anchor's strong count, read at every step of a fork
    //! that completes and of one that is cancelled, into the listed root (where the
    //! charge's count moves into the link) and into a child cgroup (where the charge
    //! keeps its own beside the link's).
    use super::*;
    use uproc_abi::Profile;

    /// A task that holds its link inline, as the task list's does.
    struct Inline(CssLink);

    impl CgroupMember for Inline {
        fn tgid(&self) -> i32 {
            7
        }
        fn is_group_leader(&self) -> bool {
            true
        }
        fn kill(&self) {
            self.0.task_dead();
        }
        fn css(&self) -> Option<&CssLink> {
            Some(&self.0)
        }
    }

    /// A listing resolver that lists nobody (the counts are all these tests read).
    struct Nobody;

    impl TaskResolver for Nobody {
        fn thread_group_links(&self, _pid: i32) -> Result<Vec<LinkRef>, Errno> {
            Err(Errno::ESRCH)
        }
    }

    /// The anchor forks into `cg` go through, and its strong count with no fork in
    /// flight (the test's own handle included).
    fn anchor_of(cg: &Cgroup) -> (Arc<Anchor>, usize) {
        let a = cg.can_fork().expect("can_fork").anchor().clone();
        let n = Arc::strong_count(&a);
        (a, n)
    }

    fn hierarchies() -> Vec<(Profile, Arc<Hierarchy>, Arc<Nobody>)> {
        Profile::ALL
            .iter()
            .map(|&p| {
                let h = Hierarchy::new(p);
                let r = Arc::new(Nobody);
                h.set_listing_resolver(Arc::downgrade(&r) as Weak<dyn TaskResolver>);
                (p, h, r)
            })
            .collect()
    }

    #[test]
    fn take_link_moves_the_listed_roots_count_and_keeps_every_other() {
        for (p, h, _r) in hierarchies() {
            let root = h.root();
            let jobs = root.mkdir("jobs").unwrap();
            for (cg, listed) in [(&root, p == Profile::Scalable), (&jobs, false)] {
                let (a, base) = anchor_of(cg);
                let mut charge = cg.can_fork().unwrap();
                assert_eq!(Arc::strong_count(&a), base + 1, "{p:?}: the charge's count");
                let link = charge.take_link();
                assert_eq!(
                    charge.anchor.is_none(),
                    listed,
                    "{p:?}: moved only in a Scalable root"
                );
                // Listed: the charge's count moved into the link; else one each.
                let in_flight = if listed { base + 1 } else { base + 2 };
                assert_eq!(Arc::strong_count(&a), in_flight, "{p:?}: after take_link");
                let task = Arc::new(Inline(link));
                assert!(!charge.post_fork_inline(&task), "{p:?}: nothing killed");
                assert_eq!(Arc::strong_count(&a), base + 1, "{p:?}: the link's alone");
                assert!(task.0.is_linked() && task.0.is_charged(), "{p:?}");
                let into_jobs = u64::from(std::ptr::eq(cg, &jobs));
                assert_eq!(
                    jobs.pids_current(),
                    into_jobs,
                    "{p:?}: charged to jobs only"
                );
                task.0.task_dead();
                task.0.release();
                drop(task);
                assert_eq!(
                    Arc::strong_count(&a),
                    base,
                    "{p:?}: nothing kept, nothing lost"
                );
                assert_eq!(jobs.pids_current(), 0, "{p:?}");
            }
            jobs.rmdir().unwrap();
        }
    }

    #[test]
    #[should_panic(expected = "a charge keeps its anchor until take_link disarms it")]
    fn a_listed_charge_has_no_anchor_left_once_its_link_is_taken() {
        let (p, h, _r) = hierarchies().pop().expect("a profile");
        assert_eq!(p, Profile::Scalable, "the last profile is Scalable");
        let mut charge = h.root().can_fork().unwrap();
        let _link = charge.take_link();
        // What needs the anchor panics (documented on `take_link`) instead of reading
        // one it no longer owns.
        let _ = charge.cgroup();
    }

    #[test]
    fn a_cancelled_take_link_gives_everything_back() {
        for (p, h, _r) in hierarchies() {
            let root = h.root();
            let jobs = root.mkdir("jobs").unwrap();
            jobs.write("pids.max", "1").unwrap();
            for cg in [&root, &jobs] {
                let (a, base) = anchor_of(cg);
                for cancel in [true, false] {
                    let mut charge = cg.can_fork().unwrap();
                    let link = charge.take_link();
                    assert_eq!(jobs.pids_current(), u64::from(std::ptr::eq(cg, &jobs)));
                    // A failed fork: the charge first (explicitly, or by its drop),
                    // then the link, never linked.
                    if cancel {
                        charge.cancel();
                    } else {
                        drop(charge);
                    }
                    assert_eq!(jobs.pids_current(), 0, "{p:?}: uncharged");
                    assert!(!link.is_linked() && !link.is_charged(), "{p:?}");
                    drop(link);
                    assert_eq!(
                        Arc::strong_count(&a),
                        base,
                        "{p:?}: nothing kept, nothing lost"
                    );
                }
            }
            // The limit of 1 is free again, and nothing holds the cgroup.
            let mut charge = jobs.can_fork().unwrap();
            let link = charge.take_link();
            assert_eq!(
                jobs.can_fork().unwrap_err(),
                Errno::EAGAIN,
                "{p:?}: pids.max 1"
            );
            charge.cancel();
            drop(link);
            jobs.rmdir().unwrap();
        }
    }
}
