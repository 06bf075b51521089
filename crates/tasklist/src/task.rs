//! `Task` (a thread: `struct task_struct`) and `ThreadGroup` (a process: `struct
//! signal_struct` + `sighand_struct`), their fields, and the accessors that read them.
//!
//! Which lock protects which field is in the crate essay (`lib.rs`); each field says it
//! again in one word.

use crate::pgrp::{PidUse, ProcessIds};
use crate::signal::SigChld;
use crate::sync::{
    AtomicBool, AtomicI32, AtomicU8, AtomicU64, Condvar, Mutex, MutexGuard, Ordering, RwLock,
};
use crate::system::System;
use std::any::Any;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Weak};
use uproc_abi::{Errno, SigSet, Signal, WaitStatus};
use uproc_cgroup::{Attachable, Cgroup, CgroupMember, CssLink, LinkRef, MigrateFn};
use uproc_pidfs::PidFd;
use uproc_pidns::{Pid, PidNamespace};

/// `exit_state == 0`: the thread has not exited.
pub(crate) const RUNNING: u8 = 0;
/// `EXIT_ZOMBIE`, reportable: wait can consume it, its pidfd is readable.
pub(crate) const ZOMBIE: u8 = 1;
/// `EXIT_ZOMBIE` that is not reportable yet: a group leader whose other threads are not
/// released (`delay_group_leader`), or a namespace init waiting for its namespace to
/// empty (`zap_pid_ns_processes`).
pub(crate) const DELAYED: u8 = 2;
/// `EXIT_DEAD`: claimed by a reaper (a waiter's CAS or autoreap); being or already
/// released.
pub(crate) const DEAD: u8 = 3;

/// A hook a runtime installs to hear about fatal signals (managed mode).
pub(crate) type SignalHook = Arc<dyn Fn(Signal) + Send + Sync>;

/// `TASK_COMM_LEN`: names are truncated to 15 bytes, as `prctl(PR_SET_NAME)` does.
const COMM_LEN: usize = 16;

/// The task name (`comm`), stored inline so that fork copies it without allocating.
#[derive(Clone, Copy)]
pub(crate) struct Comm {
    bytes: [u8; COMM_LEN],
    len: u8,
}

impl Comm {
    pub(crate) fn new(name: &str) -> Comm {
        let mut c = Comm {
            bytes: [0; COMM_LEN],
            len: 0,
        };
        // Truncate at a char boundary within 15 bytes.
        let mut end = name.len().min(COMM_LEN - 1);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        c.bytes[..end].copy_from_slice(&name.as_bytes()[..end]);
        c.len = end as u8;
        c
    }

    pub(crate) fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len as usize]).unwrap_or("?")
    }
}

/// The state a task is in, as `/proc/PID/status` `State:` reports it.
///
/// # References
/// `task_state_array` in `fs/proc/array.c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// `R`: alive (uproc does not distinguish running from sleeping).
    Running,
    /// `T`: stopped by SIGSTOP/SIGTSTP/SIGTTIN/SIGTTOU, until SIGCONT.
    Stopped,
    /// `Z`: exited, not yet reaped.
    Zombie,
    /// `X`: reaped (or being reaped).
    Dead,
}

/// A task handle: one thread of a thread group (`struct task_struct`).
///
/// Cheap to clone (one `Arc`); compares and hashes by identity. A handle keeps the
/// task object alive but not its pid numbers: once the task is reaped its numbers are
/// freed and [`Task::state`] reads [`TaskState::Dead`].
#[derive(Clone)]
pub struct Task(pub(crate) Arc<TaskInner>);

/// A weak task handle: does not keep the task object alive.
#[derive(Clone, Debug)]
pub struct WeakTask(pub(crate) Weak<TaskInner>);

impl WeakTask {
    /// The task, if its object still exists.
    pub fn upgrade(&self) -> Option<Task> {
        self.0.upgrade().map(Task)
    }
}

/// One thread.
pub(crate) struct TaskInner {
    /// `thread_pid`: the pid attached as `PIDTYPE_PID`. Immutable.
    pub(crate) pid: Arc<Pid>,
    /// `Linux*` only: the runtime, for the `tasklist_lock` of the fork/exit/reap path
    /// ([`TaskInner::hot_sys`]). `Scalable`: `Weak::new()`, which counts on nothing
    /// (the path needs nothing of the runtime there). Immutable.
    pub(crate) locked_runtime: Weak<System>,
    /// Where the process this thread belongs to lives ([`TaskInner::group`]).
    /// Immutable.
    pub(crate) home: GroupHome,
    /// `thread_group_leader()`. Immutable.
    pub(crate) leader: bool,
    /// `exit_state`: RUNNING / ZOMBIE / DELAYED / DEAD. Written under the parent
    /// group's `children` lock (a leader; a thread: its group's siglock), including
    /// ZOMBIE -> DEAD, a CAS by the reaper that wins it.
    pub(crate) exit_state: AtomicU8,
    /// The raw wait status this thread exited with (valid once `exit_state != RUNNING`).
    pub(crate) exit_code: AtomicI32,
    /// `PF_EXITING`: `do_exit` has started. Makes exit idempotent.
    pub(crate) exiting: AtomicBool,
    /// `release_task` has started.
    pub(crate) released: AtomicBool,
    /// Post-fork done (`wake_up_new_task`). Read and written under the group siglock.
    pub(crate) started: AtomicBool,
    /// `exit_signal` (leaders): the signal the parent gets at exit; 0 for none.
    /// Written at fork and on reparent (under the parent groups' `children` locks).
    pub(crate) exit_signal: AtomicI32,
    /// Per-thread pending signals (`task->pending`), bit `n-1` for signal `n`.
    pub(crate) pending: AtomicU64,
    /// `CAP_CHECKPOINT_RESTORE` for `set_tid`.
    pub(crate) cap_checkpoint_restore: AtomicBool,
    /// The fields few tasks use (the managed-mode signal hook, a leader's threads, a
    /// changed `pid_ns_for_children`),
    /// boxed on first use so that a plain task pays one pointer for them. Own lock
    /// (leaf, taken under the group's siglock by the kill walks); a hook is called with
    /// no lock held.
    pub(crate) rare: Mutex<Option<Box<Rare>>>,
    /// The css_set link, built with the task (`ForkCharge::prepare_link`: in the cgroup
    /// charged at fork, unlinked) and linked by post_fork. Inline: the cgroup side
    /// reaches it through the task ([`CgroupMember::css`]), so it costs no allocation
    /// of its own; its drop (with the task's) unlinks and uncharges what is left.
    pub(crate) css: CssLink,
    /// The `CLONE_PIDFD` handle.
    pub(crate) pidfd: Option<PidFd>,
    /// `comm`. Own lock (leaf).
    pub(crate) name: Mutex<Comm>,
}

/// Where a thread's process lives: in its leader's allocation, so that a process is
/// one allocation, not two.
pub(crate) enum GroupHome {
    /// A leader: the process itself, inline.
    Own(ThreadGroup),
    /// Another thread: its leader, which holds the group. Strong: the group lives as
    /// long as any of its threads. (The leader holds the thread strongly in turn,
    /// `Rare::threads`, until the thread is released; a runtime dropped with threads
    /// still attached breaks those links in `System::drop`.)
    Leader(Arc<TaskInner>),
}

/// The rarely used part of a task, under [`TaskInner::rare`].
#[derive(Default)]
pub(crate) struct Rare {
    /// The managed-mode signal hook.
    pub(crate) hook: Option<SignalHook>,
    /// Leader only: strong references to the other threads of the group (the leader is
    /// released last, so it is the natural owner). Changed after the group's siglock is
    /// dropped by fork's thread attach and a thread's release.
    pub(crate) threads: Vec<Task>,
    /// `nsproxy->pid_ns_for_children` once `unshare`/`setns` changed it; `None`: the
    /// active namespace (what every task starts with, so a fork stores nothing).
    pub(crate) ns_for_children: Option<Arc<PidNamespace>>,
    /// The runtime init only: its [`System`] (weak: the runtime owns the task tree).
    /// Every other task reaches the runtime through the init of its root namespace
    /// ([`TaskInner::sys`]), on the slow paths only, so that no task holds a count on
    /// the one object every fork of the runtime would share.
    pub(crate) runtime: Weak<System>,
}

/// One process (thread group).
pub(crate) struct ThreadGroup {
    /// The children of every thread of the group (child thread-group leaders, fork
    /// order). Modified only with this lock held (and `tasklist_lock` (write) under
    /// `Linux*`), so a waiter holding only this lock sees a consistent list.
    pub(crate) children: Mutex<Children>,
    /// `signal->wait_chldexit`, paired with `children`.
    pub(crate) wait_chldexit: Condvar,
    /// `cgroup_threadgroup_rwsem`, per group: a fork that adds a task to this group
    /// holds it for reading from choosing the cgroup (`cgroup_can_fork`) until the task
    /// is linked (`cgroup_post_fork`); a migration of the group holds it for writing
    /// while it collects and moves the links. Outermost of this crate's locks.
    pub(crate) threadgroup_rwsem: RwLock<()>,
    /// `siglock`: signal and group state. A leaf lock.
    pub(crate) sig: Mutex<GroupState>,
    /// A stop to report to the parent's wait (`WSTOPPED`): the stop signal, 0 if none.
    /// Set under `sig`; consumed by a swap in the waiter.
    pub(crate) stop_report: AtomicI32,
    /// A continue to report to the parent's wait (`WCONTINUED`).
    pub(crate) cont_report: AtomicBool,
    /// `signal->autoreap`: reaped at exit whatever the parent does (`CLONE_AUTOREAP`,
    /// or an orphan adopted by a runtime init with `reap_orphans`).
    pub(crate) autoreap: AtomicBool,
    /// The runtime init's process (which never exits). Immutable.
    pub(crate) runtime_init: bool,
    /// The runtime init's process, built with `reap_orphans`: orphans reparented to it
    /// autoreap. Immutable.
    pub(crate) reaps_orphans: bool,
}

/// A process's threads other than its leader: boxed on the first one, so that a
/// single-threaded process (the common case) pays one pointer, not a `Vec`'s three.
#[derive(Default)]
#[allow(clippy::box_collection)] // the point: 8 bytes in every group, not 24
pub(crate) struct ThreadList(Option<Box<Vec<Weak<TaskInner>>>>);

impl ThreadList {
    pub(crate) fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|v| v.is_empty())
    }

    pub(crate) fn push(&mut self, t: Weak<TaskInner>) {
        self.0.get_or_insert_with(Default::default).push(t);
    }

    pub(crate) fn iter(&self) -> std::slice::Iter<'_, Weak<TaskInner>> {
        self.0.as_deref().map_or([].iter(), |v| v.iter())
    }

    pub(crate) fn retain(&mut self, keep: impl FnMut(&Weak<TaskInner>) -> bool) {
        if let Some(v) = &mut self.0 {
            v.retain(keep);
        }
    }
}

/// The children list of a thread group.
pub(crate) struct Children {
    pub(crate) list: Vec<Task>,
    /// Set by the group's death (`forget_original_parent`) in the same critical
    /// section that hands the children on: no child attaches afterwards (a fork that
    /// sees it fails, a `CLONE_PARENT` fork retries with its new parent), and a
    /// reparenting group picks another reaper (unless this is a namespace init, which
    /// keeps adopting and autoreaps).
    pub(crate) closed: bool,
}

/// Group state under the siglock.
pub(crate) struct GroupState {
    /// `group_leader`.
    pub(crate) leader: Weak<TaskInner>,
    /// Attached (not released) threads other than the leader, in creation order (empty
    /// for a single-threaded process, so a fork allocates no list).
    pub(crate) threads: ThreadList,
    /// `signal->live`: threads that have not exited.
    pub(crate) nr_live: usize,
    /// `real_parent`: the thread that forked the group (or its adopter). Weak.
    pub(crate) real_parent: Weak<TaskInner>,
    /// `signal->shared_pending`.
    pub(crate) shared_pending: SigSet,
    /// `SIGNAL_GROUP_EXIT` + `group_exit_code`.
    pub(crate) group_exit: Option<WaitStatus>,
    /// `SIGNAL_STOP_STOPPED`.
    pub(crate) stopped: bool,
    /// SIGCHLD disposition.
    pub(crate) sigchld: SigChld,
    /// `is_child_subreaper`.
    pub(crate) is_subreaper: bool,
    /// `has_child_subreaper`: some ancestor is a subreaper.
    pub(crate) has_child_subreaper: bool,
    /// `SIGNAL_UNKILLABLE`: a namespace init.
    pub(crate) unkillable: bool,
    /// The init of a namespace whose last thread exited: `zap_pid_ns_processes` runs.
    pub(crate) zapping: bool,
    /// `PIDTYPE_PGID` + `PIDTYPE_SID`, shared with every process forked with the same
    /// pair (the `Arc` count is the usage count, see `pgrp.rs`). `None` before attach
    /// and after release.
    pub(crate) ids: Option<Arc<ProcessIds>>,
    /// The use of this process's own pid as a process-group/session id, if any.
    pub(crate) own_use: Weak<PidUse>,
}

impl GroupState {
    /// The state of a new process: one live thread, no process group or session until
    /// attach inherits the parent's, default SIGCHLD disposition. `unkillable` is
    /// `SIGNAL_UNKILLABLE` (the runtime's init).
    #[inline(always)]
    pub(crate) fn new_process(unkillable: bool) -> GroupState {
        GroupState {
            leader: Weak::new(),
            threads: ThreadList::default(),
            nr_live: 1,
            real_parent: Weak::new(),
            shared_pending: SigSet::default(),
            group_exit: None,
            stopped: false,
            sigchld: SigChld::Default,
            is_subreaper: false,
            has_child_subreaper: false,
            unkillable,
            zapping: false,
            ids: None,
            own_use: Weak::new(),
        }
    }

    /// The process group's pid (`task_pgrp`), `None` once released.
    pub(crate) fn pgrp(&self) -> Option<Arc<Pid>> {
        self.ids.as_ref().map(|i| i.pgrp.pid.clone())
    }

    /// The session's pid (`task_session`), `None` once released.
    pub(crate) fn session(&self) -> Option<Arc<Pid>> {
        self.ids.as_ref().map(|i| i.session.pid.clone())
    }

    /// Whether the process group is `pgrp`.
    pub(crate) fn in_pgrp(&self, pgrp: &Arc<Pid>) -> bool {
        self.ids
            .as_ref()
            .is_some_and(|i| Arc::ptr_eq(&i.pgrp.pid, pgrp))
    }
}

impl ThreadGroup {
    /// A new process (not the runtime init's).
    #[inline(always)]
    pub(crate) fn new(st: GroupState) -> ThreadGroup {
        ThreadGroup::with_role(st, false, false)
    }

    /// A new process; `runtime_init` and `reaps_orphans` for the runtime init's.
    #[inline(always)]
    pub(crate) fn with_role(
        st: GroupState,
        runtime_init: bool,
        reaps_orphans: bool,
    ) -> ThreadGroup {
        ThreadGroup {
            children: Mutex::new(Children {
                list: Vec::new(),
                closed: false,
            }),
            wait_chldexit: Condvar::new(),
            threadgroup_rwsem: RwLock::new(()),
            sig: Mutex::new(st),
            stop_report: AtomicI32::new(0),
            cont_report: AtomicBool::new(false),
            autoreap: AtomicBool::new(false),
            runtime_init,
            reaps_orphans,
        }
    }

    /// Wakes this group's waiters (`__wake_up_parent`). Takes `children` (rule 3).
    pub(crate) fn wake_waiters(&self) {
        let _g = self.children.lock();
        self.wait_chldexit.notify_all();
    }

    /// Live (not exited) threads, leader first.
    pub(crate) fn live_threads(st: &GroupState) -> impl Iterator<Item = Arc<TaskInner>> + '_ {
        std::iter::once(&st.leader)
            .chain(st.threads.iter())
            .filter_map(Weak::upgrade)
            .filter(|t| !t.exiting.load(Ordering::Acquire))
    }
}

impl TaskInner {
    /// The process this thread belongs to (`signal_struct` + `sighand_struct`).
    ///
    /// Not recursive, so that it inlines into its many callers (a recursive version
    /// stayed a call: ~40 instructions per life cycle): a thread's home is its leader,
    /// whose home is always its own group ([`TaskInner::group_owner`]).
    #[inline]
    pub(crate) fn group(&self) -> &ThreadGroup {
        let owner = match &self.home {
            GroupHome::Own(g) => return g,
            GroupHome::Leader(l) => l,
        };
        match &owner.home {
            GroupHome::Own(g) => g,
            GroupHome::Leader(_) => unreachable!("a thread's home is a group leader"),
        }
    }

    /// The thread-group leader holding the group's allocation: `this` itself for a
    /// leader.
    pub(crate) fn group_owner(this: &Arc<TaskInner>) -> Arc<TaskInner> {
        match &this.home {
            GroupHome::Own(_) => this.clone(),
            GroupHome::Leader(l) => l.clone(),
        }
    }

    /// The runtime, `None` once it was dropped. A slow-path call: it goes through the
    /// root namespace's `child_reaper` (the runtime init, never reaped while its
    /// runtime lives) and upgrades two weak references, so the fork/exit/reap path
    /// of `Scalable` never calls it ([`TaskInner::hot_sys`]).
    pub(crate) fn sys(&self) -> Option<Arc<System>> {
        let init = crate::reparent::child_reaper(&self.pid.numbers()[0].ns)?;
        let rare = init.rare.lock();
        rare.as_ref()?.runtime.upgrade()
    }

    /// The runtime as the fork/exit/reap path needs it: under `Scalable` nothing
    /// (`Ok(None)`: no reference count on a shared object is touched; the path
    /// reaches every object it uses through the task itself); under `Linux*` the
    /// [`System`] for its `tasklist_lock`. ESRCH once the runtime was dropped.
    pub(crate) fn hot_sys(&self) -> Result<Option<Arc<System>>, Errno> {
        if self.runtime_dropped() {
            return Err(Errno::ESRCH);
        }
        if !crate::system::tasklist_on_hot_path(self.pid.ns().map().profile()) {
            return Ok(None);
        }
        self.locked_runtime.upgrade().map(Some).ok_or(Errno::ESRCH)
    }

    /// Whether this task's runtime was dropped, read without touching the runtime:
    /// dropping a [`System`] frees every number it handed out, so a task whose pid is
    /// freed although it was never released outlived its runtime. (`release_one`
    /// sets `released` before it frees the pid, so a released task never reads as
    /// dropped.) A runtime dropped during a call that passed this check is like one
    /// dropped just after the call: every object the call touches is reached
    /// through the caller's own task handle (its pid, namespaces, group, css link),
    /// which keeps them alive.
    pub(crate) fn runtime_dropped(&self) -> bool {
        self.pid.is_freed() && !self.released.load(Ordering::Acquire)
    }

    /// ESRCH once this task was released (reaped): a reaped task makes no more system
    /// calls. For the calls whose effect needs no lock-held recheck (the pgrp/session
    /// changes check under `tasklist_lock`).
    pub(crate) fn check_not_released(&self) -> Result<(), Errno> {
        if self.released.load(Ordering::Acquire) {
            Err(Errno::ESRCH)
        } else {
            Ok(())
        }
    }

    /// The status wait reports: the group exit code if the group exited as a whole,
    /// else this thread's own.
    pub(crate) fn exit_status(&self) -> WaitStatus {
        WaitStatus::from_raw(self.exit_code.load(Ordering::Acquire))
    }

    /// The namespace this task's numbers end in (`task_active_pid_ns`).
    pub(crate) fn active_ns(&self) -> &Arc<PidNamespace> {
        self.pid.ns()
    }

    pub(crate) fn thread_pending(&self) -> SigSet {
        let mut s = SigSet::EMPTY;
        let bits = self.pending.load(Ordering::Acquire);
        for n in 1..=64 {
            if bits & (1u64 << (n - 1)) != 0 {
                s.insert(Signal::new(n).expect("1..=64 is a signal"));
            }
        }
        s
    }

    /// `fatal_signal_pending`: SIGKILL pending for this thread or its group.
    pub(crate) fn fatal_signal_pending(&self) -> bool {
        if self.pending.load(Ordering::Acquire) & Signal::KILL.mask() != 0 {
            return true;
        }
        self.group()
            .sig
            .lock()
            .shared_pending
            .contains(Signal::KILL)
    }

    /// The managed-mode signal hook, if one is installed.
    pub(crate) fn hook(&self) -> Option<SignalHook> {
        self.rare.lock().as_ref().and_then(|r| r.hook.clone())
    }

    /// `pid_ns_for_children` if it is not the active namespace (`None` if it is).
    #[inline(always)]
    pub(crate) fn changed_ns_for_children(&self) -> Option<Arc<PidNamespace>> {
        self.rare
            .lock()
            .as_ref()
            .and_then(|r| r.ns_for_children.clone())
    }

    /// Runs `f` on the rarely used fields, boxing them on first use.
    pub(crate) fn with_rare<R>(&self, f: impl FnOnce(&mut Rare) -> R) -> R {
        f(self.rare.lock().get_or_insert_with(Default::default))
    }

    pub(crate) fn cgroup(&self) -> Cgroup {
        self.css.cgroup()
    }

    /// `cgroup().id()` without making a `Cgroup` handle.
    pub(crate) fn cgroup_id(&self) -> u64 {
        self.css.cgroup_id()
    }

    /// Runs `f` with the `children` lock of this process's parent group held and
    /// `real_parent` stable meanwhile (it moves to another group only under the old
    /// parent group's `children` lock): reads the parent, locks its children, re-reads
    /// and retries if a reparent moved this task in between. `f` gets the current
    /// parent thread and its group's children, or `None` when there is no parent (the
    /// runtime init; a parent released), and this group's siglock, still held from the
    /// re-read (so a caller that needs this group's state under the parent's lock
    /// pays no second round; it drops the guard before it takes another siglock).
    ///
    /// Takes one `children` lock and this group's siglock inside it (lock order rules
    /// 2-4); the caller holds no `children` lock or siglock.
    #[inline]
    pub(crate) fn with_parent_children<R>(
        &self,
        f: impl FnOnce(Option<(&Arc<TaskInner>, &mut Children)>, MutexGuard<'_, GroupState>) -> R,
    ) -> R {
        let mine = self.group();
        let mut parent = mine.sig.lock().real_parent.upgrade();
        loop {
            let Some(p) = parent else {
                return f(None, mine.sig.lock());
            };
            let mut ch = p.group().children.lock();
            let st = mine.sig.lock();
            // The usual case, the same parent thread, needs no second `upgrade`.
            if std::ptr::eq(st.real_parent.as_ptr(), Arc::as_ptr(&p)) {
                return f(Some((&p, &mut ch)), st);
            }
            match st.real_parent.upgrade() {
                Some(n) if std::ptr::eq(n.group(), p.group()) => {
                    return f(Some((&n, &mut ch)), st);
                }
                now => {
                    drop(st);
                    drop(ch);
                    parent = now;
                }
            }
        }
    }

    /// The group's leader task (itself for a leader).
    pub(crate) fn leader_task(&self) -> Option<Arc<TaskInner>> {
        self.group().sig.lock().leader.upgrade()
    }

    pub(crate) fn as_any_weak(this: &Arc<TaskInner>) -> Weak<dyn Any + Send + Sync> {
        let w: Weak<TaskInner> = Arc::downgrade(this);
        w
    }
}

/// The task attached to a pid as `PIDTYPE_PID` (`pid_task`).
pub(crate) fn pid_task(pid: &Pid) -> Option<Arc<TaskInner>> {
    pid.task().and_then(|a| a.downcast::<TaskInner>().ok())
}

impl CgroupMember for TaskInner {
    fn tgid(&self) -> i32 {
        match self.leader_task() {
            Some(l) => l.pid.numbers()[0].nr,
            None => self.pid.numbers()[0].nr,
        }
    }

    fn is_group_leader(&self) -> bool {
        self.leader
    }

    fn kill(&self) {
        // cgroup.kill comes from the cgroup writer, outside any task: it reaches
        // namespace inits (force), as a writer in an ancestor namespace would.
        if let Some(t) = self.leader_task() {
            let _ = crate::signal::send_group(&t, Signal::KILL, None);
        }
    }

    fn tid(&self) -> i32 {
        self.pid.numbers()[0].nr
    }

    fn css(&self) -> Option<&CssLink> {
        Some(&self.css)
    }
}

impl ThreadGroup {
    /// The css links of the live threads (a migration skips those not linked yet,
    /// which its exclusion of forks leaves none of, and those already dead).
    pub(crate) fn css_links(&self) -> Vec<LinkRef> {
        let st = self.sig.lock();
        ThreadGroup::live_threads(&st)
            .map(|t| LinkRef::Inline(t as Arc<dyn CgroupMember>))
            .collect()
    }

    /// Runs a migration of the whole group with its forks excluded (the write side of
    /// `threadgroup_rwsem`; rule 0 of the lock order).
    pub(crate) fn migrate(&self, f: &mut MigrateFn<'_>) -> Result<(), Errno> {
        let _tg = self.threadgroup_rwsem.write();
        f(&self.css_links())
    }
}

impl Attachable for Task {
    fn css_links(&self) -> Vec<LinkRef> {
        self.0.group().css_links()
    }

    fn with_threadgroup_locked(&self, f: &mut MigrateFn<'_>) -> Result<(), Errno> {
        self.0.group().migrate(f)
    }

    fn belongs_to(&self, h: &uproc_cgroup::Hierarchy) -> bool {
        self.0
            .sys()
            .is_some_and(|s| std::ptr::eq(Arc::as_ptr(&s.cgroups), h))
    }
}

impl PartialEq for Task {
    fn eq(&self, other: &Task) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Task {}

impl Hash for Task {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (Arc::as_ptr(&self.0) as usize).hash(state);
    }
}

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("nspid", &self.0.pid.nspid())
            .field("leader", &self.0.leader)
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

impl Task {
    pub(crate) fn from_inner(inner: Arc<TaskInner>) -> Task {
        Task(inner)
    }

    /// The pid number in the task's own (innermost) namespace (`task_pid_vnr` as the
    /// task itself sees it).
    ///
    /// # References
    /// [gettid(2)](https://man7.org/linux/man-pages/man2/gettid.2.html)
    pub fn pid(&self) -> i32 {
        self.0.pid.nr()
    }

    /// The number `other` has as this task sees it, 0 if invisible (`pid_nr_ns` in the
    /// caller's active namespace).
    ///
    /// # References
    /// `task_pid_nr_ns` in `kernel/pid.c`.
    pub fn pid_of(&self, other: &Task) -> i32 {
        other.0.pid.nr_in(self.0.active_ns())
    }

    /// Every level's number, outermost (the root namespace) to innermost, as
    /// `/proc/PID/status` `NSpid:` shows from the root namespace.
    pub fn nspid(&self) -> Vec<i32> {
        self.0.pid.nspid()
    }

    /// The thread-group id in the task's own namespace ([getpid(2)](https://man7.org/linux/man-pages/man2/getpid.2.html)).
    pub fn tgid(&self) -> i32 {
        match self.0.leader_task() {
            Some(l) => l.pid.nr_in(self.0.active_ns()),
            None => self.pid(),
        }
    }

    /// The parent's tgid in the task's own namespace, 0 when the parent is invisible
    /// (a namespace init) or there is none (the runtime init).
    ///
    /// # References
    /// [getppid(2)](https://man7.org/linux/man-pages/man2/getppid.2.html), `task_ppid_nr_ns`.
    pub fn ppid(&self) -> i32 {
        self.ppid_in(self.0.active_ns())
    }

    /// `task_ppid_nr_ns`: the parent's tgid as `ns` sees it, 0 when the task has no
    /// parent (the runtime's init) or the parent is invisible from `ns`.
    pub fn ppid_in(&self, ns: &PidNamespace) -> i32 {
        self.parent().map_or(0, |p| p.0.pid.nr_in(ns))
    }

    /// The parent process (`real_parent`'s thread-group leader, or the parent thread
    /// itself when its leader is gone); `None` for the runtime's init or once the parent
    /// was released.
    pub fn parent(&self) -> Option<Task> {
        let parent = self.0.group().sig.lock().real_parent.upgrade()?;
        Some(Task(parent.leader_task().unwrap_or(parent)))
    }

    /// Running, stopped, zombie or dead.
    pub fn state(&self) -> TaskState {
        match self.0.exit_state.load(Ordering::Acquire) {
            ZOMBIE | DELAYED => TaskState::Zombie,
            DEAD => TaskState::Dead,
            _ => {
                if self.0.group().sig.lock().stopped {
                    TaskState::Stopped
                } else {
                    TaskState::Running
                }
            }
        }
    }

    /// The task's own (active) pid namespace (`task_active_pid_ns`).
    pub fn pid_ns(&self) -> Arc<PidNamespace> {
        self.0.active_ns().clone()
    }

    /// The namespace the task's children are created in
    /// (`nsproxy->pid_ns_for_children`).
    pub fn pid_ns_for_children(&self) -> Arc<PidNamespace> {
        self.0
            .changed_ns_for_children()
            .unwrap_or_else(|| self.0.active_ns().clone())
    }

    /// `unshare(CLONE_NEWPID)`: children go to a new child namespace of the active one;
    /// the first of them becomes its init (pid 1). EINVAL if the children's namespace
    /// was already changed (`copy_pid_ns`: it must be the active one); ENOSPC past
    /// level 32; ESRCH if the task was reaped.
    ///
    /// # References
    /// [unshare(2)](https://man7.org/linux/man-pages/man2/unshare.2.html), `copy_pid_ns`.
    pub fn unshare_pid_ns(&self) -> Result<(), Errno> {
        self.0.check_not_released()?;
        self.0.with_rare(|r| {
            if r.ns_for_children.is_some() {
                return Err(Errno::EINVAL);
            }
            r.ns_for_children = Some(self.0.active_ns().new_child()?);
            Ok(())
        })
    }

    /// `setns(fd, CLONE_NEWPID)`: children go to `ns`, which must be the active
    /// namespace or a descendant of it (else EINVAL); ESRCH if the task was reaped.
    ///
    /// # References
    /// [setns(2)](https://man7.org/linux/man-pages/man2/setns.2.html), `pidns_install`.
    pub fn setns_pid(&self, ns: &Arc<PidNamespace>) -> Result<(), Errno> {
        self.0.check_not_released()?;
        let active = self.0.active_ns();
        if !Arc::ptr_eq(active.map(), ns.map()) || !active.is_same_or_ancestor_of(ns) {
            return Err(Errno::EINVAL);
        }
        let changed = (!Arc::ptr_eq(active, ns)).then(|| ns.clone());
        if changed.is_some() || self.0.rare.lock().is_some() {
            self.0.with_rare(|r| r.ns_for_children = changed);
        }
        Ok(())
    }

    /// [pidfd_open(2)](https://man7.org/linux/man-pages/man2/pidfd_open.2.html): `pid`
    /// is looked up in this task's namespace; ESRCH if this task was reaped.
    pub fn pidfd_open(&self, pid: i32, flags: uproc_abi::PidfdFlags) -> Result<PidFd, Errno> {
        self.0.check_not_released()?;
        let sys = self.0.sys().ok_or(Errno::ESRCH)?;
        sys.pidfs().pidfd_open(self.0.active_ns(), pid, flags)
    }

    /// The pidfd `CLONE_PIDFD` created for this task at fork.
    pub fn pidfd(&self) -> Option<PidFd> {
        self.0.pidfd.clone()
    }

    /// `PR_SET_CHILD_SUBREAPER`: orphaned descendants are reparented to this process
    /// rather than to the namespace init. Turning it on marks every current descendant
    /// (`has_child_subreaper`), as Linux's `walk_process_tree` does.
    ///
    /// # References
    /// [prctl(2)](https://man7.org/linux/man-pages/man2/prctl.2.html) `PR_SET_CHILD_SUBREAPER`.
    pub fn set_child_subreaper(&self, on: bool) {
        self.0.group().sig.lock().is_subreaper = on;
        if !on {
            return;
        }
        let Some(sys) = self.0.sys() else { return };
        // Slow path: tasklist_lock (read) keeps the tree still while it is walked.
        let _r = sys.tasklist_lock.read();
        let mut stack: Vec<Task> = self.0.group().children.lock().list.clone();
        while let Some(t) = stack.pop() {
            let mut st = t.0.group().sig.lock();
            if st.has_child_subreaper {
                continue;
            }
            st.has_child_subreaper = true;
            drop(st);
            stack.extend(t.0.group().children.lock().list.iter().cloned());
        }
    }

    /// The SIGCHLD disposition of this process: `Ignore` and `NoCldWait` make its
    /// children autoreap; `Ignore` also drops the SIGCHLD itself.
    pub fn set_sigchld(&self, d: SigChld) {
        self.0.group().sig.lock().sigchld = d;
    }

    /// Grants or drops `CAP_CHECKPOINT_RESTORE`, which `set_tid` needs (EPERM without).
    /// The runtime's init holds it, as Linux's root init does, and a child inherits
    /// its parent's value at fork.
    pub fn set_cap_checkpoint_restore(&self, on: bool) {
        self.0.cap_checkpoint_restore.store(on, Ordering::Relaxed);
    }

    /// The cgroup the task belongs to.
    pub fn cgroup(&self) -> Cgroup {
        self.0.cgroup()
    }

    /// `/proc/PID/status` lines `Name`, `State`, `Tgid`, `Pid`, `PPid`, `NSpid`
    /// (tab-separated like Linux), with the numbers as the root namespace sees them.
    ///
    /// # References
    /// [proc_pid_status(5)](https://man7.org/linux/man-pages/man5/proc_pid_status.5.html)
    pub fn status(&self) -> String {
        use std::fmt::Write;
        let state = match self.state() {
            TaskState::Running => "R (running)",
            TaskState::Stopped => "T (stopped)",
            TaskState::Zombie => "Z (zombie)",
            TaskState::Dead => "X (dead)",
        };
        let root = &self.0.pid.numbers()[0].ns;
        let leader = self.0.leader_task().unwrap_or_else(|| self.0.clone());
        let ppid = self
            .0
            .group()
            .sig
            .lock()
            .real_parent
            .upgrade()
            .map(|p| p.leader_task().unwrap_or(p).pid.nr_in(root))
            .unwrap_or(0);
        let mut s = String::new();
        let _ = writeln!(s, "Name:\t{}", self.name());
        let _ = writeln!(s, "State:\t{state}");
        let _ = writeln!(s, "Tgid:\t{}", leader.pid.nr_in(root));
        let _ = writeln!(s, "Pid:\t{}", self.0.pid.nr_in(root));
        let _ = writeln!(s, "PPid:\t{ppid}");
        let _ = write!(s, "NSpid:");
        for n in self.nspid() {
            let _ = write!(s, "\t{n}");
        }
        s.push('\n');
        s
    }

    /// The task name (`comm`, at most 15 bytes).
    pub fn name(&self) -> String {
        self.0.name.lock().as_str().to_owned()
    }

    /// Sets the task name, truncated to 15 bytes (`PR_SET_NAME`).
    pub fn set_name(&self, name: &str) {
        *self.0.name.lock() = Comm::new(name);
    }

    /// Whether the task belongs to runtime `sys` (its objects are EINVAL to another
    /// runtime's calls), in whatever state it is.
    pub fn belongs_to(&self, sys: &System) -> bool {
        // Every namespace of a runtime shares its pid map.
        Arc::ptr_eq(self.0.pid.ns().map(), &sys.map)
    }

    /// The runtime the task belongs to; `None` once that [`System`] was dropped (a
    /// handle that outlived its runtime).
    pub fn system(&self) -> Option<Arc<System>> {
        self.0.sys()
    }

    /// The task's `struct pid`.
    pub fn struct_pid(&self) -> &Arc<Pid> {
        &self.0.pid
    }

    /// `thread_group_leader`.
    pub fn is_thread_group_leader(&self) -> bool {
        self.0.leader
    }

    /// The status this thread exited with, once it has exited.
    pub fn exit_status(&self) -> Option<WaitStatus> {
        (self.0.exit_state.load(Ordering::Acquire) != RUNNING).then(|| self.0.exit_status())
    }

    /// A weak handle.
    pub fn downgrade(&self) -> WeakTask {
        WeakTask(Arc::downgrade(&self.0))
    }

    /// Installs (or removes) the managed-mode signal hook; see the crate docs.
    ///
    /// With a hook, a fatal signal (SIGKILL or a default-Term/Core signal) does not
    /// end the task at once: it is made pending (SIGKILL in the thread's pending set,
    /// the signal itself in the group's) and the hook is called with the signal, with
    /// no lock held, so the runtime can stop the body and call
    /// [`exit_signaled`](Task::exit_signaled). Without one (a bare task) the task ends
    /// immediately. The hook is dropped when the task exits; once it has exited this
    /// call does nothing.
    pub fn set_signal_hook(&self, hook: Option<Arc<dyn Fn(Signal) + Send + Sync>>) {
        let old = {
            let mut rare = self.0.rare.lock();
            // `do_exit` sets `exiting` and then takes the hook under this lock: a hook
            // installed after that would never be dropped (and may hold the task).
            if self.0.exiting.load(Ordering::SeqCst) {
                hook
            } else if hook.is_none() && rare.is_none() {
                None
            } else {
                let slot = &mut rare.get_or_insert_with(Default::default).hook;
                std::mem::replace(slot, hook)
            }
        };
        drop(old);
    }

    /// `fatal_signal_pending`: SIGKILL is pending for this thread (a managed task that
    /// got a fatal signal and has not exited yet).
    pub fn fatal_signal_pending(&self) -> bool {
        self.0.fatal_signal_pending()
    }

    /// The pending signals: the thread's own set and the group's shared set, lowest
    /// number first, each once.
    pub fn pending_signals(&self) -> Vec<Signal> {
        let mut s = self.0.thread_pending();
        for sig in self.0.group().sig.lock().shared_pending.iter() {
            s.insert(sig);
        }
        s.iter().collect()
    }
}
