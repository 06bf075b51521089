//! `System`: one runtime ("the kernel"): the pid map and root namespace, pidfs, the
//! cgroup hierarchy, `tasklist_lock`, and the runtime init task. Also the three
//! interfaces the sibling crates call back through (`PidfdBackend`, `TaskResolver`,
//! the reaper wakeup of `free_pid`).

use crate::pgrp::{ProcessIds, TaskList};
use crate::signal::Sender;
use crate::sync::{
    AtomicBool, AtomicI32, AtomicU8, AtomicU16, AtomicU64, Mutex, Ordering, SpinMutex,
};
use crate::task::{
    CAP_CHECKPOINT_RESTORE, Comm, GroupHome, GroupState, NameWords, RARE_USED, RUNNING, Rare,
    RareSlot, StartFlag, Task, TaskInner, ThreadGroup, ZOMBIE, pid_task,
};
use crate::zap_flag::ZapFlag;
use std::fmt;
use std::sync::{Arc, Weak};
use uproc_abi::lockstat::{LockStat, NamedRwLock};
use uproc_abi::{Errno, PidfdFlags, Profile, Signal};
use uproc_cgroup::{Cgroup, CgroupMember, Hierarchy, LinkRef, MigrateFn, TaskResolver};
use uproc_pidfs::{FileHandle, PidFd, PidTaskState, PidfdBackend, Pidfs, SignalScope, TaskIds};
use uproc_pidns::{Pid, PidMap, PidNamespace, PidRefCredits, alloc_pid, free_pid};

/// How a [`System`] is built.
#[derive(Clone, Debug)]
pub struct SystemConfig {
    /// The lock profile.
    pub profile: Profile,
    /// `pid_max` of the root namespace, in `[301, 4194304]`. Default 32768.
    pub pid_max: i32,
    /// The runtime init reaps the orphans reparented to it (its own children stay the
    /// caller's to wait for). Default true.
    pub reap_orphans: bool,
}

impl Default for SystemConfig {
    fn default() -> Self {
        SystemConfig {
            profile: Profile::default(),
            pid_max: uproc_pidns::PID_MAX_DEFAULT,
            reap_orphans: true,
        }
    }
}

/// One runtime: what the kernel is to Linux processes.
///
/// Owns the pid map and root namespace, pidfs, the cgroup hierarchy, the named global
/// `tasklist_lock`, and the runtime init (pid 1 of the root namespace, `child_reaper`
/// of it, in the root cgroup). The init owns the task tree (parents hold children);
/// the init points back to the `System` weakly, and other tasks reach it through the
/// init.
pub struct System {
    pub(crate) cfg: SystemConfig,
    pub(crate) map: Arc<PidMap>,
    pub(crate) root_ns: Arc<PidNamespace>,
    pub(crate) pidfs: Arc<Pidfs>,
    pub(crate) cgroups: Arc<Hierarchy>,
    /// `tasklist_lock`: under the `Linux*` profiles, serialises changes to the task
    /// tree (attach, exit_notify, release) as Linux does; in every profile, the slow
    /// paths (setpgid, setsid, kill -1/-pgid walks, subreaper marking, the namespace
    /// zap walk) and the index of process-group/session ids.
    pub(crate) tasklist_lock: NamedRwLock<TaskList>,
    /// Whether the fork/exit/reap path takes `tasklist_lock` (every profile but
    /// `Scalable`, which relies on the per-process locks alone).
    pub(crate) tasklist_on_hot_path: bool,
    pub(crate) init: Task,
    /// Raised by `free_pid`'s reaper wakeup and by a zap: some closed namespace may
    /// have emptied (`zap_flag.rs` says why raising is a read-modify-write).
    pub(crate) zap_check: ZapFlag,
    /// Namespace inits waiting for their namespace to empty (`zap_pid_ns_processes`).
    pub(crate) zapping: Mutex<Vec<Task>>,
    /// `Scalable`: the per-thread credits of the root namespace's reference count,
    /// which its pids take at fork and give back when dropped. Dropped with the
    /// runtime, after `drop` freed every pid: the credits go back to the count.
    _pid_ref_credits: Option<PidRefCredits>,
    /// The embedding runtime's `current`: the task whose code runs on the calling
    /// thread, if any ([`System::set_current`]).
    current: std::sync::OnceLock<CurrentFn>,
}

/// [`System::set_current`]'s callback.
type CurrentFn = Box<dyn Fn() -> Option<Task> + Send + Sync>;

impl fmt::Debug for System {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("System")
            .field("profile", &self.cfg.profile)
            .field("root_ns", &self.root_ns)
            .field("tasklist_lock", &self.tasklist_lock)
            .finish_non_exhaustive()
    }
}

impl System {
    /// A new runtime with its init (pid 1 of the root namespace, in the root cgroup).
    /// `pid_max` outside `[301, 4194304]` -> EINVAL.
    pub fn new(cfg: SystemConfig) -> Result<Arc<System>, Errno> {
        let map = PidMap::new(cfg.profile);
        let root_ns = PidNamespace::new_root(&map, cfg.pid_max)?;
        let pidfs = Pidfs::new(&map);
        let cgroups = Hierarchy::new(cfg.profile);
        let pid = alloc_pid(&root_ns, &[], false)?;
        let charge = cgroups.root().can_fork()?;
        let sys = Arc::new_cyclic(|weak: &Weak<System>| {
            let group =
                ThreadGroup::with_role(GroupState::new_process(true), true, cfg.reap_orphans);
            let inner = Arc::new(TaskInner {
                pid: std::mem::ManuallyDrop::new(pid.clone()),
                locked_runtime: if tasklist_on_hot_path(cfg.profile) {
                    weak.clone()
                } else {
                    Weak::new()
                },
                home: GroupHome::Own(group),
                group_at: crate::task::GroupAt::unlinked(),
                leader: true,
                exit_state: AtomicU8::new(RUNNING),
                exit_code: AtomicI32::new(0),
                exiting: AtomicBool::new(false),
                released: AtomicBool::new(false),
                started: StartFlag::new(true),
                exit_signal: AtomicI32::new(0),
                pending: AtomicU64::new(0),
                // Root-like, as Linux's init: `set_tid` works out of the box.
                flags: AtomicU8::new(CAP_CHECKPOINT_RESTORE | RARE_USED),
                // The runtime's one strong-count-free way back from its tasks.
                rare: std::mem::ManuallyDrop::new(SpinMutex::new(RareSlot {
                    hook: None,
                    boxed: Some(Box::new(Rare {
                        runtime: weak.clone(),
                        ..Rare::default()
                    })),
                })),
                css: charge.prepare_link(),
                pidfd: None,
                name: NameWords::new(Comm::new("init")),
                name_seq: AtomicU16::new(0),
            });
            TaskInner::link_group(&inner);
            let mut tl = TaskList::default();
            {
                // The init leads the first session and process group (`init_struct_pid`).
                let group = inner.group();
                let mut st = group.sig.lock();
                st.shared_pending
                    .set_leader(crate::task::LeaderRef::new(Arc::as_ptr(&inner)));
                let own = tl.own_use(&mut st, &pid);
                st.ids = Some(ProcessIds::new(own.clone(), own, group));
            }
            crate::task::publish_in_pid(&inner);
            root_ns.set_child_reaper(Some(TaskInner::as_any_weak(&inner)));
            let backend: Weak<dyn PidfdBackend> = weak.clone();
            pidfs.set_backend(backend);
            let resolver: Weak<dyn TaskResolver> = weak.clone();
            // Every task has a number in the root namespace and holds its link inline:
            // the root cgroup (`Scalable`) keeps no member set of its own.
            cgroups.set_listing_resolver(resolver);
            let w = weak.clone();
            map.set_reaper_wakeup(Box::new(move |_ns| {
                if let Some(s) = w.upgrade() {
                    s.zap_check.raise();
                }
            }));
            System {
                cfg: cfg.clone(),
                map: map.clone(),
                root_ns: root_ns.clone(),
                pidfs: pidfs.clone(),
                cgroups: cgroups.clone(),
                tasklist_lock: NamedRwLock::new("tasklist_lock", tl),
                tasklist_on_hot_path: tasklist_on_hot_path(cfg.profile),
                init: Task::from_inner(inner),
                zap_check: ZapFlag::default(),
                zapping: Mutex::new(Vec::new()),
                _pid_ref_credits: root_ns.pid_ref_credits(),
                current: std::sync::OnceLock::new(),
            }
        });
        let _killed = charge.post_fork_inline(&sys.init.0);
        tracing::debug!(profile = %sys.cfg.profile, pid_max = sys.cfg.pid_max, "system created");
        Ok(sys)
    }

    /// Tells the runtime how to find Linux's `current`, the task whose code runs on
    /// the calling thread (a runtime that runs task bodies knows: the `uproc` facade
    /// registers its `uproc::current()`).
    /// Used where Linux reads `current` although the call names no task: a
    /// `cgroup.procs` or `cgroup.threads` write of `0` moves the writer's process or
    /// thread (`cgroup_procs_write_start`). Without one, or where it answers `None`
    /// or a task of another runtime, such a write is ESRCH. Set once: EBUSY after.
    pub fn set_current(
        &self,
        current: impl Fn() -> Option<Task> + Send + Sync + 'static,
    ) -> Result<(), Errno> {
        self.current
            .set(Box::new(current))
            .map_err(|_| Errno::EBUSY)
    }

    /// The runtime init: pid 1 of the root namespace.
    pub fn init(&self) -> Task {
        self.init.clone()
    }

    /// The lock profile.
    pub fn profile(&self) -> Profile {
        self.cfg.profile
    }

    /// The configuration this runtime was built with.
    pub fn config(&self) -> &SystemConfig {
        &self.cfg
    }

    /// The root pid namespace.
    pub fn root_ns(&self) -> &Arc<PidNamespace> {
        &self.root_ns
    }

    /// pidfs of this runtime.
    pub fn pidfs(&self) -> &Arc<Pidfs> {
        &self.pidfs
    }

    /// The cgroup hierarchy of this runtime.
    pub fn cgroups(&self) -> &Arc<Hierarchy> {
        &self.cgroups
    }

    /// The root cgroup.
    pub fn cgroup_root(&self) -> Cgroup {
        self.cgroups.root()
    }

    /// `open_by_handle_at(2)` on a pidfs file handle, as `caller` (its namespace decides
    /// visibility). EINVAL if `caller` is a task of another runtime.
    pub fn open_by_handle(
        &self,
        caller: &Task,
        h: &FileHandle,
        flags: PidfdFlags,
    ) -> Result<PidFd, Errno> {
        if !caller.belongs_to(self) {
            return Err(Errno::EINVAL);
        }
        self.pidfs.open_by_handle(caller.0.active_ns(), h, flags)
    }

    /// Acquisitions of the named global locks: `[pidmap_lock, tasklist_lock,
    /// css_set_lock, pidns_pool_lock]` (real counts with the `lockstat` feature, else
    /// 0). The last one sums the per-namespace number-pool locks of `Scalable` (batch
    /// refills and flushes; 0 under the other profiles).
    pub fn lock_stats(&self) -> Vec<LockStat> {
        vec![
            self.map.pidmap_lock_stat(),
            self.tasklist_lock.stat(),
            self.cgroups.css_set_lock_stat(),
            self.map.pool_lock_stat(),
        ]
    }

    /// Every task not yet released (running, stopped, zombie), threads included, in
    /// root-namespace pid order.
    pub fn tasks(&self) -> Vec<Task> {
        self.root_ns
            .pids()
            .iter()
            .filter_map(|p| pid_task(p))
            .map(Task::from_inner)
            .collect()
    }

    /// How many tasks are not yet released.
    pub fn nr_tasks(&self) -> usize {
        self.root_ns
            .pids()
            .iter()
            .filter(|p| p.task_slot().is_attached())
            .count()
    }

    /// The task with number `nr` in `ns` (`find_task_by_pid_ns`), if attached.
    pub fn find_task(&self, ns: &PidNamespace, nr: i32) -> Option<Task> {
        let pid = ns.find_pid(nr)?;
        pid_task(&pid).map(Task::from_inner)
    }

    /// `write_lock_irq(&tasklist_lock)` on the fork/exit/reap path: taken under the
    /// `Linux*` profiles (the caller then holds it around its per-process locks), not
    /// under `Scalable`. Inlined: under `Scalable` it is a load and a branch, three
    /// times per life cycle.
    #[inline]
    pub(crate) fn tasklist_write_hot(
        &self,
    ) -> Option<uproc_abi::lockstat::NamedRwLockWriteGuard<'_, TaskList>> {
        self.tasklist_on_hot_path
            .then(|| self.tasklist_lock.write())
    }

    /// `read_lock(&tasklist_lock)` on the stop/continue notification: `Linux*` only.
    #[inline]
    pub(crate) fn tasklist_read_hot(&self) -> Option<parking_lot::RwLockReadGuard<'_, TaskList>> {
        self.tasklist_on_hot_path.then(|| self.tasklist_lock.read())
    }

    /// Namespace inits whose namespace may have emptied: finish their exit. Called
    /// with no lock held after pids were freed. The check is inlined into every reap
    /// and failed fork; the work is not.
    #[inline]
    pub(crate) fn process_zaps(&self) {
        // A plain load first: the flag is almost always clear, and a swap would write
        // the shared line on every reap.
        if self.zap_check.is_raised() {
            self.process_zaps_slow();
        }
    }

    #[cold]
    fn process_zaps_slow(&self) {
        if !self.zap_check.take() {
            return;
        }
        let list: Vec<Task> = self.zapping.lock().clone();
        for init in list {
            if crate::exit::try_finish_zap(self, &init.0) {
                self.zapping.lock().retain(|t| t != &init);
            }
        }
    }
}

/// Whether the fork/exit/reap path of `profile` takes `tasklist_lock` (every profile
/// but `Scalable`, which relies on the per-process locks alone).
pub(crate) fn tasklist_on_hot_path(profile: Profile) -> bool {
    matches!(profile, Profile::Linux618 | Profile::Linux70)
}

/// Dropping the last handle of a runtime frees everything it built. A namespace's idr
/// holds its published pids and every pid holds its namespaces, so a pid still
/// allocated (the init's, which is never reaped, a process-group id, or the pid of a
/// task whose handle outlives the runtime) would keep the whole namespace tree, pidfs's
/// index and the pid objects alive forever. Every number is returned here: a task
/// handle that outlives its runtime keeps its `Pid` object (numbers readable, nothing
/// findable), and every call that needs the runtime answers ESRCH.
impl Drop for System {
    fn drop(&mut self) {
        // Every pid has a number in the root namespace, nested ones included.
        let mut threads = Vec::new();
        for pid in self.root_ns.pids() {
            // A thread holds its leader (the group lives there) and an attached thread
            // is held by its leader: break that loop for threads never released.
            if let Some(t) = pid_task(&pid) {
                if let Some(r) = t.rare.lock().boxed.as_mut() {
                    threads.append(&mut r.threads);
                }
            }
            if !pid.is_freed() {
                pid.task_slot().detach();
                free_pid(&pid);
            }
        }
        drop(threads);
        tracing::debug!(profile = %self.cfg.profile, "system dropped");
    }
}

impl PidfdBackend for System {
    fn task_state(&self, pid: &Pid) -> PidTaskState {
        let Some(t) = pid_task(pid) else {
            return PidTaskState::default();
        };
        let st = t.exit_state.load(Ordering::Acquire);
        let exited = st == ZOMBIE || st == crate::task::DEAD;
        PidTaskState {
            attached: true,
            group_leader: t.leader,
            exited,
            exit_status: exited.then(|| t.exit_status()),
        }
    }

    fn send_signal(
        &self,
        pid: &Arc<Pid>,
        sig: Signal,
        scope: SignalScope,
        from: &PidNamespace,
    ) -> Result<(), Errno> {
        let sender = Sender::InNamespace(from);
        let task = || pid_task(pid).ok_or(Errno::ESRCH);
        match scope {
            SignalScope::Thread => crate::signal::send_thread(&task()?, sig, sender),
            SignalScope::ThreadGroup => crate::signal::send_group(&task()?, sig, sender),
            // `kill_pgrp_info(sig, &kinfo, pid)`: the process group whose id is the
            // pidfd's pid, not the task's current group. It may outlive the task
            // (a reaped leader whose group lives on), and a task that is no group's
            // leader names no group (ESRCH).
            SignalScope::ProcessGroup => crate::signal::kill_pgrp(self, pid, sig, sender),
        }
    }

    fn task_ids(&self, pid: &Pid, viewer: &PidNamespace) -> Option<TaskIds> {
        let t = pid_task(pid)?;
        let leader = t.leader_task().unwrap_or_else(|| t.clone());
        let parent = t.group().sig.lock().real_parent.upgrade();
        let ppid = parent
            .map(|p| p.leader_task().unwrap_or(p).pid.nr_in(viewer))
            .unwrap_or(0);
        Some(TaskIds {
            pid: t.pid.nr_in(viewer),
            tgid: leader.pid.nr_in(viewer),
            ppid,
            cgroupid: t.cgroup_id(),
        })
    }
}

impl TaskResolver for System {
    fn thread_group_links(&self, pid: i32) -> Result<Vec<LinkRef>, Errno> {
        Ok(self.resolve(pid)?.group().css_links())
    }

    fn thread_link(&self, tid: i32) -> Result<LinkRef, Errno> {
        Ok(LinkRef::Inline(self.resolve(tid)? as Arc<dyn CgroupMember>))
    }

    fn with_thread_group(&self, pid: i32, f: &mut MigrateFn<'_>) -> Result<(), Errno> {
        self.resolve(pid)?.group().migrate(f)
    }

    /// Every task attached to a pid of the root namespace (threads included), ascending
    /// by number: the cgroup side keeps those listed in the root cgroup.
    fn members(&self) -> Vec<Arc<dyn CgroupMember>> {
        self.root_ns
            .pids()
            .iter()
            .filter_map(|p| pid_task(p))
            .map(|t| t as Arc<dyn CgroupMember>)
            .collect()
    }
}

impl System {
    /// The task a `cgroup.procs` write names (root-namespace number, or `0` for the
    /// writer, [`System::set_current`]); ESRCH if none.
    fn resolve(&self, pid: i32) -> Result<Arc<TaskInner>, Errno> {
        if pid == 0 {
            let me = self.current.get().and_then(|f| f()).ok_or(Errno::ESRCH)?;
            // A task of this runtime: its outermost number is in this root namespace.
            let mine = Arc::ptr_eq(&me.0.pid.numbers()[0].ns, &self.root_ns);
            return if mine {
                Ok(Arc::clone(&me.0))
            } else {
                Err(Errno::ESRCH)
            };
        }
        if pid < 0 {
            return Err(Errno::ESRCH);
        }
        let p = self.root_ns.find_pid(pid).ok_or(Errno::ESRCH)?;
        pid_task(&p).ok_or(Errno::ESRCH)
    }
}
