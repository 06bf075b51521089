//! Membership: which task is in which cgroup (the css_set links), and the steps of a
//! task's life that change it: fork ([`Cgroup::can_fork`], [`ForkCharge::post_fork`],
//! [`ForkCharge::cancel`]), exit ([`CssLink::task_dead`]), reap
//! ([`CssLink::release`]), migration ([`Cgroup::attach`]) and `cgroup.kill`
//! ([`Cgroup::kill`]).
//!
//! Everything that changes membership is done under the global `css_set_lock`
//! (Linux618 / Linux70 profiles), which is what makes the kill/fork race come out
//! right: a fork either linked its child before a `cgroup.kill` collected the members
//! (and is killed with them), or sees the moved `kill_seq` at post_fork. Under
//! `Scalable` the anchors' member locks play that part (the kill bumps `kill_seq`,
//! then collects each anchor under its lock; post_fork compares and inserts under its
//! anchor's lock), and rmdir closes a cgroup to forks through the fork gate
//! (`fork_gate.rs`). A task forks its children into an anchor of its own
//! (`anchor.rs`), so two parents' forks share no line. Migration and fork exclude each other per thread group (`cgroup_threadgroup_rwsem`): the task
//! list holds its group's lock for reading from can_fork to post_fork, and a migration
//! runs inside [`TaskResolver::with_thread_group`] /
//! [`Attachable::with_threadgroup_locked`], which hold it for writing.

use core::fmt;

use parking_lot::{Mutex, MutexGuard};
use uproc_abi::Errno;

use crate::Cgroup;
use crate::anchor::Anchor;
use crate::controller::pids;
use crate::fork_gate;
use crate::hierarchy::{Hierarchy, common_ancestor};
use crate::members::MemberSet;
use crate::sync::{Arc, AtomicBool, AtomicU32, AtomicU64, Ordering, Weak};

/// What the cgroup code knows of a task. The task list implements it; cgroup knows
/// nothing of pids otherwise.
pub trait CgroupMember: Send + Sync + 'static {
    /// The thread-group id as the root pid namespace numbers it (`cgroup.procs` lists
    /// these).
    fn tgid(&self) -> i32;
    /// Whether this task leads its thread group (`cgroup.procs` lists leaders' tgids;
    /// `cgroup.threads` lists every member).
    fn is_group_leader(&self) -> bool;
    /// Delivers SIGKILL (`cgroup.kill`). Always called with no cgroup lock held: it may
    /// call back into [`CssLink::task_dead`].
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

    /// Runs `f` over the links of the thread group containing `pid` while that group
    /// can neither fork a thread nor finish forking a child into its cgroup (the write
    /// side of `cgroup_threadgroup_rwsem`), so a migration moves the whole group. The
    /// default collects the links and runs `f` without that exclusion.
    fn with_thread_group(&self, pid: i32, f: &mut MigrateFn<'_>) -> Result<(), Errno> {
        f(&self.thread_group_links(pid)?)
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
    /// The anchor the child is linked through (its cgroup is the one charged).
    anchor: Arc<Anchor>,
    /// `kill_seq` read under `css_set_lock` at can_fork (`cgroup_css_set_fork`).
    kill_seq: u64,
    armed: bool,
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
    state: Mutex<LinkState>,
    /// This link's entry in its anchor's member set (meaningful while linked). Stored
    /// by post_fork before `linked` is published, then changed only by migration with
    /// `state` held; narrow, so that the link stays small (one per task).
    key: AtomicU32,
    /// Between post_fork and task_dead. Set by post_fork (`SeqCst`, after `key` and
    /// `charged`), cleared under `state` (and `css_set_lock` under the Linux profiles).
    linked: AtomicBool,
    /// Still counted in the pids controller (until release). Set by post_fork before
    /// `linked`; cleared (swap) under `state`, read by migration under it.
    charged: AtomicBool,
    /// `Profile::Scalable` (no `css_set_lock`), fixed with the hierarchy.
    scalable: bool,
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

/// `cgroup_can_fork` through `anchor` (an anchor of the cgroup the child goes to).
#[inline]
fn charge_into(anchor: Arc<Anchor>) -> Result<ForkCharge, Errno> {
    let cg = &anchor.cg;
    let node = &cg.node;
    let kill_seq = if cg.hier.is_scalable() {
        // No lock: count the fork in on the anchor, then look at rmdir's flag (the
        // fork gate). Refused only once rmdir has decided and removed the cgroup.
        while !fork_gate::enter(&anchor.nr_forking, &node.closing) {
            // rmdir decides holding every anchor's member lock: wait for it.
            drop(anchor.members.lock());
            if node.is_removed() {
                return Err(Errno::ENOENT);
            }
        }
        node.kill_seq.load(Ordering::Acquire)
    } else {
        let _css = cg.hier.css_set_lock.lock();
        if node.is_removed() {
            return Err(Errno::ENOENT);
        }
        node.nr_forking.fetch_add(1, Ordering::AcqRel);
        node.kill_seq.load(Ordering::Relaxed)
    };
    // The root has no pids level (and no cgroup below it lacks one): nothing to charge.
    let charged = if node.is_charged_to() {
        pids::try_charge(node.pids_levels())
    } else {
        Ok(())
    };
    if let Err(level) = charged {
        leave_gate(&anchor);
        cg.pids_event(level);
        return Err(Errno::EAGAIN);
    }
    Ok(ForkCharge {
        anchor,
        kill_seq,
        armed: true,
    })
}

/// A fork through `anchor` is done (post_fork or cancel): the gate count it took.
#[inline]
fn leave_gate(anchor: &Anchor) {
    if anchor.cg.hier.is_scalable() {
        fork_gate::leave(&anchor.nr_forking);
    } else {
        fork_gate::leave(&anchor.cg.node.nr_forking);
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
    pub fn attach_links(&self, links: &[LinkRef]) -> Result<(), Errno> {
        if links.iter().any(|l| !l.is_of(&self.hier)) {
            return Err(Errno::EINVAL);
        }
        let dest = &self.node;
        let scalable = self.hier.is_scalable();
        let mut moved = 0usize;
        {
            let _css = (!scalable).then(|| self.hier.css_set_lock.lock());
            // ENOENT if removed. Taken (and the registry dropped) before any link's
            // state: the registry comes after a state in the lock order.
            let dest_anchor = self.default_anchor()?;
            for link in links {
                // Rule: css_set_lock -> link state -> anchors' member sets.
                let mut st = link.state.lock();
                if !link.linked.load(Ordering::Relaxed) || Arc::ptr_eq(&st.anchor.cg.node, dest) {
                    continue;
                }
                let src_anchor = st.anchor.clone();
                let src = &src_anchor.cg.node;
                // `Scalable`: both member sets, by address (no css_set_lock).
                let (mut src_set, mut dest_set) = lock_pair(&src_anchor, &dest_anchor);
                if scalable && dest.is_removed() {
                    // rmdir won the race before anything moved in (a populated cgroup
                    // cannot be removed): report it as the locked profiles would.
                    if moved == 0 {
                        return Err(Errno::ENOENT);
                    }
                    break;
                }
                let ca = common_ancestor(src, dest);
                if link.charged.load(Ordering::Relaxed) {
                    // pids_can_attach: charge the new css, uncharge the old one. The
                    // common ancestors would see +1 -1; they are skipped so their peak
                    // does not move.
                    pids::charge(dest.pids_levels_below(ca));
                    pids::uncharge_shared(src.pids_levels_below(ca));
                }
                let m = src_set.remove(link.key.load(Ordering::Relaxed) as usize);
                debug_assert!(m.is_some(), "a linked link is in its anchor's member set");
                if let Some((serial, m)) = m {
                    let key = if scalable {
                        // To the tail of the destination (`list_move_tail`).
                        dest_set.append(m)
                    } else {
                        // At its link serial (Linux profiles: one runtime-wide order).
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

    /// `cgroup.kill` (`cgroup_kill_write` -> `cgroup_kill`): SIGKILL every member of
    /// this cgroup and its descendants.
    ///
    /// Under `cgroup_mutex` and `css_set_lock` (`Scalable`: each anchor's member lock
    /// in turn) it bumps `kill_seq` of every cgroup of the subtree (so a fork between
    /// can_fork and post_fork comes out [`killed`](PostFork::killed)) and collects the
    /// members; it calls [`CgroupMember::kill`] on each (every linked thread) after
    /// dropping both locks. ENOENT on the root (Linux has no `cgroup.kill` there) and on
    /// a removed cgroup.
    pub fn kill(&self) -> Result<(), Errno> {
        if self.node.parent.is_none() {
            return Err(Errno::ENOENT);
        }
        let victims: Vec<Weak<dyn CgroupMember>> = {
            let tree = self.hier.tree.lock();
            if self.node.is_removed() {
                return Err(Errno::ENOENT);
            }
            let subtree = tree.subtree(&self.node);
            // Rule: cgroup_mutex -> css_set_lock -> registry -> member sets.
            // `Scalable`: no css_set_lock; one anchor at a time (see the bump below).
            let _css = (!self.hier.is_scalable()).then(|| self.hier.css_set_lock.lock());
            let mut v = Vec::new();
            for n in &subtree {
                // Bumped before any anchor is collected: a post_fork that compares after
                // its anchor was collected takes that anchor's lock after the
                // collection, so it sees the bump. An anchor registered after the
                // snapshot below serves forks that read kill_seq after the bump.
                n.kill_seq.fetch_add(1, Ordering::AcqRel);
                let anchors = n.registry.lock().live();
                for a in &anchors {
                    v.extend(a.members.lock().values().cloned());
                }
            }
            v
        };
        tracing::info!(path = %self.node.path(), tasks = victims.len(), "cgroup.kill");
        for v in victims {
            if let Some(m) = v.upgrade() {
                m.kill();
            }
        }
        Ok(())
    }

    /// The members linked in this cgroup itself (not descendants), in link order,
    /// collected under `css_set_lock` (the `css_task_iter` of a `cgroup.procs` read).
    pub(crate) fn members(&self) -> Vec<Arc<dyn CgroupMember>> {
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
        let tree = self.hier.tree.lock();
        tree.subtree(&self.node).iter().any(|n| n.has_members())
    }
}

impl ForkCharge {
    /// The cgroup charged (where post_fork will link the task).
    pub fn cgroup(&self) -> &Cgroup {
        &self.anchor.cg
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
        let node = &self.anchor.cg.node;
        if node.is_charged_to() {
            pids::uncharge(node.pids_levels());
        }
        leave_gate(&self.anchor);
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
        CssLink {
            current_id: AtomicU64::new(self.anchor.cg.node.id),
            state: Mutex::new(LinkState {
                anchor: self.anchor.clone(),
                children: None,
            }),
            key: AtomicU32::new(0),
            linked: AtomicBool::new(false),
            charged: AtomicBool::new(false),
            scalable: self.anchor.cg.hier.is_scalable(),
        }
    }

    /// [`post_fork`](ForkCharge::post_fork) onto a link from
    /// [`prepare_link`](ForkCharge::prepare_link) of this charge, for `member` (the
    /// task that holds the link): links it and hands it the charge. Returns `killed`.
    /// The member set keeps `member`; the link itself names no member (a link held
    /// inline is found through its member, [`CgroupMember::css`]).
    pub fn post_fork_link(mut self, link: &CssLink, member: Weak<dyn CgroupMember>) -> bool {
        self.armed = false;
        let anchor = &self.anchor;
        let hier = &anchor.cg.hier;
        let node = &anchor.cg.node;
        let (killed, key) = if link.scalable {
            // The anchor's member lock stands for css_set_lock: cgroup.kill collects
            // under it after bumping kill_seq, rmdir decides under it. The serial comes
            // from the anchor's own set (no runtime-wide counter every fork would
            // write); it only orders entries inside that set.
            let mut members = anchor.members.lock();
            let killed = node.kill_seq.load(Ordering::Acquire) != self.kill_seq;
            let key = members.append(member);
            drop(members);
            // After the member is linked: rmdir sees one or the other.
            fork_gate::leave(&anchor.nr_forking);
            (killed, key)
        } else {
            let serial = hier.next_link.fetch_add(1, Ordering::Relaxed);
            let _css = hier.css_set_lock.lock();
            debug_assert!(!node.is_removed(), "rmdir waits for nr_forking");
            let killed = node.kill_seq.load(Ordering::Relaxed) != self.kill_seq;
            let key = anchor.members.lock().insert(serial, member);
            // Every writer of `nr_populated` holds css_set_lock: a load and a store
            // suffice (no read-modify-write per level).
            for n in node.ancestors() {
                let v = n.nr_populated.load(Ordering::Relaxed);
                n.nr_populated.store(v + 1, Ordering::Release);
            }
            fork_gate::leave(&node.nr_forking);
            (killed, key)
        };
        // Filled in after the member lock, without the state lock: the member set
        // holds the task, not the link; every reader of `key` and `charged` (task_dead,
        // release, migration) acts only on a link it saw linked, which this `SeqCst`
        // store publishes last. A concurrent exit or release that saw the link
        // unlinked is caught by the caller's re-check.
        debug_assert!(
            Arc::ptr_eq(&link.state.lock().anchor, anchor),
            "a link prepared by this charge"
        );
        link.key.store(narrow_key(key), Ordering::Relaxed);
        link.charged.store(true, Ordering::Relaxed);
        link.linked.store(true, Ordering::SeqCst);
        if killed {
            tracing::debug!(path = %node.path(), "fork raced with cgroup.kill: child killed");
        }
        killed
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
            .field("cgroup", &self.anchor.cg)
            .field("kill_seq", &self.kill_seq)
            .field("armed", &self.armed)
            .finish()
    }
}

impl CssLink {
    /// `cgroup_can_fork` for a child of this link's task forked into the task's own
    /// cgroup: [`Cgroup::can_fork`] of [`cgroup`](CssLink::cgroup) without making a
    /// handle. The child is linked through an anchor of this task (made at its first
    /// fork, or after it moved), so two tasks forking into one cgroup write no common
    /// line. ENOENT if the cgroup was removed (possible only for a dead task).
    pub fn can_fork(&self) -> Result<ForkCharge, Errno> {
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
        charge_into(anchor)
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
    fn is_of(&self, h: &Hierarchy) -> bool {
        core::ptr::eq(Arc::as_ptr(&self.state.lock().anchor.cg.hier), h)
    }

    /// `cgroup_task_dead` (after the task's last switch): unlink it (`css_set_lock`
    /// acquisition #3 of its life; `Scalable`: the link's state and its anchor's
    /// member lock only). The cgroup may become unpopulated; the pids charge stays
    /// until [`release`](CssLink::release). Idempotent: an unlinked task takes no lock.
    pub fn task_dead(&self) {
        if !self.linked.load(Ordering::Acquire) {
            return;
        }
        // Linux profiles: css_set_lock comes before the state (the hierarchy is the
        // same whatever the anchor).
        let hier = (!self.scalable).then(|| self.state.lock().anchor.cg.hier.clone());
        let _css = hier.as_ref().map(|h| h.css_set_lock.lock());
        // Rule: css_set_lock -> link state -> member set.
        let st = self.state.lock();
        // `linked` is only ever cleared here, with the state lock held: a load and a
        // store decide it as a swap would.
        if !self.linked.load(Ordering::Relaxed) {
            return;
        }
        self.linked.store(false, Ordering::Release);
        let m = st
            .anchor
            .members
            .lock()
            .remove(self.key.load(Ordering::Relaxed) as usize);
        debug_assert!(m.is_some(), "a linked link is in its anchor's member set");
        if !self.scalable {
            for n in st.anchor.cg.node.ancestors() {
                // Written only under css_set_lock (held): load and store.
                let old = n.nr_populated.load(Ordering::Relaxed);
                debug_assert!(old > 0, "populated count below zero");
                n.nr_populated.store(old - 1, Ordering::Release);
            }
        }
    }

    /// `cgroup_release` at reap (pids: `pids_release`): uncharge the pids controller
    /// from the task's *current* cgroup; zombies count until this. Takes
    /// `css_set_lock` (never under `Scalable`) only if the task was never declared
    /// dead (then it unlinks first, as Linux does for a task still on a list).
    /// Idempotent.
    #[inline]
    pub fn release(&self) {
        if self.linked.load(Ordering::Acquire) {
            self.task_dead();
        }
        // Released already (or never charged: no lock at all, as in the drop of a
        // reaped task's link, which is part of every task's final drop: this check is
        // inlined there, the uncharge is not).
        if self.charged.load(Ordering::Acquire) {
            self.uncharge();
        }
    }

    /// The charged part of [`release`](CssLink::release).
    fn uncharge(&self) {
        // The swap under the state lock: a migration moves the charge under it, so
        // the cgroup uncharged is the one that holds it.
        let st = self.state.lock();
        if !self.charged.swap(false, Ordering::AcqRel) {
            return;
        }
        // Uncharged under the state lock (plain atomics, no lock taken): no clone of
        // the cgroup handle just to release it after.
        let node = &st.anchor.cg.node;
        if node.is_charged_to() {
            pids::uncharge(node.pids_levels());
        }
    }

    /// Whether the task is linked (between post_fork and task_dead).
    pub fn is_linked(&self) -> bool {
        self.linked.load(Ordering::Acquire)
    }

    /// Whether the task still counts in `pids.current` (until release).
    pub fn is_charged(&self) -> bool {
        self.charged.load(Ordering::Acquire)
    }
}

impl Drop for CssLink {
    #[inline]
    fn drop(&mut self) {
        self.release();
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

/// The member sets of two different anchors, locked by address so that two
/// migrations in opposite directions cannot deadlock.
fn lock_pair<'a>(
    a: &'a Anchor,
    b: &'a Anchor,
) -> (MutexGuard<'a, MemberSet>, MutexGuard<'a, MemberSet>) {
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
