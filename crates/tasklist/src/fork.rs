//! `fork` / `clone3`: `copy_process`, in the kernel's step order, with reverse unwinding.
//!
//! 1. validate flags (EINVAL)
//! 2. `alloc_pid` in `pid_ns_for_children` (or a new child namespace for NEWPID)
//! 3. `CLONE_PIDFD`: `pidfd_prepare(.., PIDFD_STALE)`
//! 4. `cgroup_can_fork`: pids charge (EAGAIN)
//! 5. attach (`Linux*`: inside `tasklist_lock` (write); every profile: the parent
//!    group's `children` lock or, for a thread, the group's siglock): namespace still
//!    adding (ENOMEM), no fatal signal pending
//!    on the parent (EINTR), attach
//! 6. `cgroup_post_fork`: link; SIGKILL the child if a cgroup.kill raced
//! 7. `wake_up_new_task`: publish `started` (lock-free, `task::StartFlag`); end the
//!    child if a fatal signal marked it before
//!
//! The task object does not exist before step 5: its parts wait in a `Proto`, and the
//! attach builds it inside its critical section with its final group state (parent,
//! process group and session, subreaper bit), so no lock is taken on a task nobody can
//! see yet; publishing it (the parent's list, the pid's task slot) is the attach's last
//! act.
//!
//! A failure at step n undoes steps n-1..2: cancel the charge, drop the pidfd, free the
//! pid. A failed fork leaves nothing behind.

use crate::sync::{AtomicBool, AtomicI32, AtomicU8, AtomicU16, AtomicU64, Ordering, SpinMutex};
use crate::task::{
    Comm, GroupHome, GroupState, NameWords, RUNNING, RareSlot, StartFlag, Task, TaskInner,
    ThreadGroup,
};
use std::mem::ManuallyDrop;
use std::sync::{Arc, Weak};
use uproc_abi::hint::cold_path;
use uproc_abi::{CloneFlags, Errno, PidfdFlags, Signal};
use uproc_cgroup::Cgroup;
use uproc_pidns::{MAX_PID_NS_LEVEL, alloc_pid, free_pid};

/// The arguments of [`Task::fork`] (`struct clone_args`).
///
/// # References
/// [clone3(2)](https://man7.org/linux/man-pages/man2/clone3.2.html)
#[derive(Clone, Debug, Default)]
pub struct CloneArgs {
    /// `CLONE_*` flags; unknown bits -> EINVAL. Flags for state uproc does not model
    /// (`FILES`, `SETTLS`, ...) are accepted: see [`CloneFlags`].
    pub flags: CloneFlags,
    /// `set_tid`: the pid wanted in the new task's namespace, then its parent, ...;
    /// at most 32 entries; needs `CAP_CHECKPOINT_RESTORE`.
    pub set_tid: Vec<i32>,
    /// `CLONE_INTO_CGROUP` target.
    pub cgroup: Option<Cgroup>,
    /// `exit_signal`. `None`: SIGCHLD, except 0 for `CLONE_AUTOREAP` and threads.
    pub exit_signal: Option<Signal>,
}

/// The flags uproc knows; anything else is EINVAL.
const KNOWN: CloneFlags = CloneFlags::all();

/// Returns the caller's `pid_ns_for_children` if it is not the active namespace
/// (`None` if it is), read once for the whole fork.
#[inline]
fn validate(
    t: &TaskInner,
    args: &CloneArgs,
) -> Result<Option<Arc<uproc_pidns::PidNamespace>>, Errno> {
    if args.flags.is_empty() {
        // The plain fork (what nearly every fork is): of the checks below only these
        // two can fail without a flag (`INTO_CGROUP` unset, so no cgroup may be given).
        if args.set_tid.len() > MAX_PID_NS_LEVEL as usize || args.cgroup.is_some() {
            cold_path();
            return Err(Errno::EINVAL);
        }
        return Ok(t.changed_ns_for_children());
    }
    validate_flags(t, args)
}

/// [`validate`] of a fork with flags, out of line: the plain fork's code stays short.
#[inline(never)]
fn validate_flags(
    t: &TaskInner,
    args: &CloneArgs,
) -> Result<Option<Arc<uproc_pidns::PidNamespace>>, Errno> {
    let f = args.flags;
    if f.bits() & !KNOWN.bits() != 0 {
        return Err(Errno::EINVAL);
    }
    // clone3_args_valid
    if args.set_tid.len() > MAX_PID_NS_LEVEL as usize {
        return Err(Errno::EINVAL);
    }
    let exit_sig = args.exit_signal.is_some_and(|s| !s.is_probe());
    let thread = f.contains(CloneFlags::THREAD);
    let parent = f.contains(CloneFlags::PARENT);
    if (thread || parent) && exit_sig {
        return Err(Errno::EINVAL);
    }
    // Shared handlers cannot be reset for the child alone.
    if f.contains(CloneFlags::SIGHAND | CloneFlags::CLEAR_SIGHAND) {
        return Err(Errno::EINVAL);
    }
    // copy_process
    if thread && f.contains(CloneFlags::NEWPID) {
        return Err(Errno::EINVAL);
    }
    // Thread groups share signal handlers, and shared handlers imply a shared VM.
    if thread && !f.contains(CloneFlags::SIGHAND) {
        return Err(Errno::EINVAL);
    }
    if f.contains(CloneFlags::SIGHAND) && !f.contains(CloneFlags::VM) {
        return Err(Errno::EINVAL);
    }
    if f.contains(CloneFlags::AUTOREAP) && (thread || parent || exit_sig) {
        return Err(Errno::EINVAL);
    }
    if f.contains(CloneFlags::INTO_CGROUP) != args.cgroup.is_some() {
        return Err(Errno::EINVAL);
    }
    let for_children = t.changed_ns_for_children();
    let other_ns = for_children.is_some();
    // A thread cannot live in another namespace than its group; NEWPID needs the
    // children's namespace to be the active one (copy_pid_ns).
    if other_ns && (thread || f.contains(CloneFlags::NEWPID)) {
        return Err(Errno::EINVAL);
    }
    if parent && t.group().sig.lock().unkillable {
        // Siblings of an init would be unreapable.
        return Err(Errno::EINVAL);
    }
    Ok(for_children)
}

impl Task {
    /// `clone3(2)`: a new process (or thread with `CLONE_THREAD`), a child of this task
    /// (of its parent with `CLONE_PARENT` / `CLONE_THREAD`).
    ///
    /// Errors: EINVAL for bad flag combinations (unknown bits, `THREAD` without
    /// `SIGHAND`, `SIGHAND` without `VM`, `SIGHAND|CLEAR_SIGHAND`, `THREAD|NEWPID`,
    /// `exit_signal` with `THREAD`/`PARENT`, `AUTOREAP` with `THREAD`/`PARENT`/an
    /// `exit_signal`, `INTO_CGROUP` without a cgroup or the reverse, more than 32
    /// `set_tid` entries, `PARENT` from a namespace init, `THREAD` or `NEWPID` after
    /// `unshare_pid_ns`); `alloc_pid`'s errors (EINVAL, EPERM, EEXIST, EAGAIN, ENOMEM);
    /// ENOSPC for a 33rd namespace level; EAGAIN over `pids.max`; ENOENT for a removed
    /// cgroup; EOPNOTSUPP for `THREAD | INTO_CGROUP` into another cgroup than the
    /// caller's group's; ENOMEM if the target namespace's init died; EINTR if a fatal
    /// signal is pending on the caller; ESRCH if the caller itself has exited.
    ///
    /// # References
    /// `copy_process` in `kernel/fork.c`.
    #[inline]
    pub fn fork(&self, args: &CloneArgs) -> Result<Task, Errno> {
        self.copy_process(args, false)
    }

    /// [`fork`](Task::fork) of a child that is *managed* from its creation, as if
    /// [`set_signal_hook`](Task::set_signal_hook) had installed a hook with nothing to
    /// do before anyone could signal it: a fatal signal is made pending
    /// ([`fatal_signal_pending`](Task::fatal_signal_pending)), not acted on, and the
    /// runtime ends the task when its body learns of it. What a runtime whose bodies
    /// poll their pending signals wants, without a hook to install (a lock and two
    /// atomics at the spawn, a lock at the exit) or a window between the fork and the
    /// install in which the child is bare. A hook installed later is called as usual;
    /// `set_signal_hook(None)` makes the task bare. Same errors as `fork`.
    #[inline]
    pub fn fork_managed(&self, args: &CloneArgs) -> Result<Task, Errno> {
        self.copy_process(args, true)
    }

    /// `copy_process`: [`fork`](Task::fork), the child managed from its creation when
    /// `managed` ([`fork_managed`](Task::fork_managed)).
    fn copy_process(&self, args: &CloneArgs, managed: bool) -> Result<Task, Errno> {
        let me = &self.0;
        if me.exiting.load(Ordering::Acquire) {
            cold_path();
            return Err(Errno::ESRCH);
        }
        // `Linux*`: the runtime, for `tasklist_lock`. `Scalable`: nothing (no count on
        // the runtime every fork shares); the slow branches below fetch it themselves.
        // (Each `inspect_err(|_| cold_path())` lays its error return out of line.)
        let hot = me.hot_sys().inspect_err(|_| cold_path())?;
        // 1. validate
        let changed_ns = validate(me, args).inspect_err(|_| cold_path())?;
        // The usual case borrows the active namespace: no refcount round trip on the
        // namespace every fork shares.
        let for_children = changed_ns.as_ref().unwrap_or(me.active_ns());
        let f = args.flags;
        let thread = f.contains(CloneFlags::THREAD);
        let parent_flag = f.contains(CloneFlags::PARENT);
        let autoreap = f.contains(CloneFlags::AUTOREAP);
        if let Some(cg) = &args.cgroup {
            let sys = me.sys().ok_or(Errno::ESRCH)?;
            if !Arc::ptr_eq(&cg.hierarchy(), &sys.cgroups) {
                cold_path();
                return Err(Errno::EINVAL);
            }
        }
        // 2. alloc_pid
        let new_ns;
        let ns = if f.contains(CloneFlags::NEWPID) {
            new_ns = for_children.new_child()?;
            &new_ns
        } else {
            for_children
        };
        // What the child copies of the caller's flags: its capability and its process's
        // core limit (`copy_creds`, `copy_signal`).
        let inherited = me.flags.load(Ordering::Relaxed)
            & (crate::task::CAP_CHECKPOINT_RESTORE | crate::task::DUMPS_CORE);
        let cap = inherited & crate::task::CAP_CHECKPOINT_RESTORE != 0;
        let pid = alloc_pid(ns, &args.set_tid, cap).inspect_err(|e| {
            cold_path();
            if *e == Errno::EAGAIN {
                tracing::warn!(level = ns.level(), "fork rejected: pid namespace full");
            }
            // A number reserved and rolled back in a closed namespace may have hidden
            // its emptiness from the dead init's check: the rollback raised the
            // re-check flag, act on it (the ENOMEM race).
            process_zaps_of(me);
        })?;
        // 3. CLONE_PIDFD
        let pidfd = if f.contains(CloneFlags::PIDFD) {
            let fl = if thread {
                PidfdFlags::THREAD
            } else {
                PidfdFlags::empty()
            };
            // The runtime's pidfs through the pid's map, borrowed: fetching the
            // runtime itself would take the root init's locks and counts.
            let Some(pidfs) = uproc_pidfs::Pidfs::of_map(pid.ns().map()) else {
                cold_path();
                free_pid(&pid);
                return Err(Errno::ESRCH);
            };
            Some(pidfs.pidfd_prepare_stale(me.active_ns(), pid.clone(), fl))
        } else {
            None
        };
        // cgroup_threadgroup_change_begin: a new thread joins this group, so the group's
        // migration must wait until the thread is linked (and the cgroup read below is
        // the group's current one).
        let caller_group_guard = thread.then(|| me.group().threadgroup_rwsem.read());
        // 4. cgroup_can_fork
        // Into the caller's own cgroup through its link: no cgroup handle made.
        let charge = match &args.cgroup {
            // `cgroup_attach_permissions(.., threadgroup = false)`: a new thread joins
            // its group's cgroup (a thread group is never split across cgroups; uproc
            // has no threaded cgroups). A removed target fails as for a process. Read
            // under the group's `threadgroup_rwsem`, so no migration moves it meanwhile.
            Some(c) if thread && !c.is_removed() && c.id() != me.cgroup_id() => {
                cold_path();
                Err(Errno::EOPNOTSUPP)
            }
            Some(c) => c.can_fork(),
            None => me.css.can_fork(),
        };
        let mut charge = match charge {
            Ok(c) => c,
            Err(e) => {
                cold_path();
                if e == Errno::EAGAIN {
                    let cg = args.cgroup.clone().unwrap_or_else(|| me.cgroup());
                    tracing::warn!(cgroup = %cg.path(), "fork rejected: pids.max reached");
                }
                drop(pidfd);
                free_pid(&pid);
                process_zaps_of(me);
                return Err(e);
            }
        };
        let exit_signal = if thread || autoreap {
            0
        } else if parent_flag {
            // A placeholder: `attach` copies the caller's leader's exit signal, which a
            // reparent of the caller resets, under the parent's list lock (which that
            // reparent holds), as `copy_process` copies it under `tasklist_lock`.
            Signal::CHLD.raw()
        } else {
            args.exit_signal.map_or(Signal::CHLD.raw(), |s| s.raw())
        };
        // The child's cgroup link, built now so that the task holds it from its
        // creation; a fork into the listed root moves the charge's anchor count into
        // it (`ForkCharge::take_link`) and leaves `charge` nothing to cancel.
        let css = charge.take_link();
        // Everything of the task but its group: the task object itself is built inside
        // the attach's critical section, once its parent and ids are known, so that its
        // group state is written before anyone can see it (no lock round on it).
        let locked_runtime = match hot.as_ref() {
            None => Weak::new(),
            Some(sys) => Arc::downgrade(sys),
        };
        let name = me.name.get(&me.name_seq);
        // 5. attach: fork's only `tasklist_lock` acquisition (`Linux*`; none under
        // `Scalable`).
        let attached = attach(
            hot.as_deref(),
            me,
            ns,
            Proto {
                pid,
                locked_runtime,
                exit_signal,
                inherited,
                managed,
                autoreap,
                css,
                pidfd,
                name,
            },
            thread,
            parent_flag,
        );
        let child = match attached {
            Ok(child) => child,
            Err((e, proto)) => {
                cold_path();
                // Unwind in reverse: cancel the charge, drop the pidfd, free the pid.
                charge.cancel();
                drop(caller_group_guard);
                let Proto {
                    pid, css, pidfd, ..
                } = proto;
                drop(css);
                drop(pidfd);
                free_pid(&pid);
                // The freed number may have been the last but the init's of a closed
                // namespace (the ENOMEM race).
                process_zaps_of(me);
                return Err(e);
            }
        };
        if f.contains(CloneFlags::CLEAR_SIGHAND) {
            cold_path();
            clear_sighand(&child);
        }
        // 6. cgroup_post_fork: links the link the child was built with (`Scalable`, the
        // root: lists it, one compare-exchange). An exit or a release that ran before
        // marked the link (dead or released early), and post_fork, deciding on the same
        // phase, does not link it (and uncharges a released one): nothing to redo here.
        let killed = charge.post_fork_inline(&child);
        // cgroup_threadgroup_change_end: linked, a migration now moves it with the group.
        // (A new process's own group holds no read lock: its migration waits for
        // `started` instead, see `ThreadGroup::migrate`.)
        drop(caller_group_guard);
        // wake_up_new_task: from here on signals act on it directly.
        // One fence (after `started`'s write) for two handshakes, each a write before it
        // and a read after it,
        // against a write and a fenced read on the other side:
        // - attached (`pid_task` finds it) vs. a zap that closed one of the child's
        //   namespaces and may have walked it before the attach (under `Scalable` no
        //   `tasklist_lock` orders the two; under `Linux*` the zap sends its SIGKILLs
        //   after dropping it): either the zap's walk (after its fence) finds the
        //   child, or these loads see the namespace closed and the child dies here,
        //   as the zap would have killed it (`zapped_since_attach`);
        // - `started` vs. a fatal signal's marking of the thread (`StartFlag`): either
        //   the signal side sees it started and ends it, or this load sees SIGKILL;
        // - attached vs. a group kill in flight (`group_kill.rs`): either its walk finds
        //   the child, or this fork sees the kill raised and waits for it to end.
        child.started.publish_then_fence();
        let zapped = zapped_since_attach(me, ns, &child.pid);
        crate::group_kill::wait_out_group_kills(hot.is_none());
        let fatal = child.pending.load(Ordering::Acquire) & Signal::KILL.mask() != 0;
        tracing::debug!(
            pid = child.pid.numbers()[0].nr,
            ppid = me.pid.numbers()[0].nr,
            thread,
            "fork"
        );
        // A fatal signal decided while the child was not started (a zap's walk, a kill)
        // left it to us: end it first. Sending SIGKILL instead would find the group
        // already dying and do nothing, and the child would live on (both a zap that
        // found the child and this fork's `zapped` check can be true at once). The
        // status was decided under the siglock before SIGKILL was marked.
        if fatal {
            cold_path();
            let status = child.group().sig.lock().group_exit;
            let status = status.unwrap_or(uproc_abi::WaitStatus::signaled_by(Signal::KILL, false));
            crate::exit::do_exit(&child, status);
        } else if killed || zapped {
            cold_path();
            let _ = crate::signal::send_group(&child, Signal::KILL, crate::signal::Sender::Runtime);
        }
        Ok(Task::from_inner(child))
    }
}

/// A task being forked, before its object exists: what [`attach`] builds it from once
/// its parent and group state are known, or hands back to the unwinding on failure.
struct Proto {
    pid: Arc<uproc_pidns::Pid>,
    locked_runtime: Weak<crate::system::System>,
    exit_signal: i32,
    /// The caller's flags the child starts with ([`CAP_CHECKPOINT_RESTORE`],
    /// [`DUMPS_CORE`]).
    ///
    /// [`CAP_CHECKPOINT_RESTORE`]: crate::task::CAP_CHECKPOINT_RESTORE
    /// [`DUMPS_CORE`]: crate::task::DUMPS_CORE
    inherited: u8,
    /// [`Task::fork_managed`]: the task starts with [`MANAGED`](crate::task::MANAGED).
    managed: bool,
    autoreap: bool,
    css: uproc_cgroup::CssLink,
    pidfd: Option<uproc_pidfs::PidFd>,
    name: Comm,
}

impl Proto {
    /// The task object, living in the `home` that `home` makes (made as the task is
    /// written, so that a process's group is written in place, not built on the stack
    /// and copied in).
    #[inline(always)]
    fn into_task(self, home: impl FnOnce() -> GroupHome, leader: bool) -> TaskInner {
        TaskInner {
            pid: ManuallyDrop::new(self.pid),
            locked_runtime: self.locked_runtime,
            home: home(),
            group_at: crate::task::GroupAt::unlinked(),
            leader,
            exit_state: AtomicU8::new(RUNNING),
            exit_code: AtomicI32::new(0),
            exiting: AtomicBool::new(false),
            released: AtomicBool::new(false),
            started: StartFlag::new(false),
            exit_signal: AtomicI32::new(self.exit_signal),
            pending: AtomicU64::new(0),
            flags: AtomicU8::new(
                self.inherited
                    | if self.managed {
                        crate::task::MANAGED
                    } else {
                        0
                    },
            ),
            rare: ManuallyDrop::new(SpinMutex::new(RareSlot::EMPTY)),
            css: self.css,
            pidfd: self.pidfd,
            name: NameWords::new(self.name),
            name_seq: AtomicU16::new(0),
        }
    }
}

/// `CLONE_CLEAR_SIGHAND` (`flush_signal_handlers(p, 0)`): every handler back to
/// `SIG_DFL` and its `sa_flags` cleared, `SIG_IGN` kept. Of what uproc keeps, only
/// SIGCHLD's `SA_NOCLDWAIT` changes. Before the child is started: nothing of it has
/// run yet, and it has no child whose exit would read the disposition.
#[cold]
#[inline(never)]
fn clear_sighand(child: &TaskInner) {
    let mut st = child.group().sig.lock();
    if st.sigchld == crate::signal::SigChld::NoCldWait {
        st.sigchld = crate::signal::SigChld::Default;
    }
}

/// After the attach and its fence: whether a namespace zap the child must die with
/// closed one of its namespaces, so that the zap's walk may have missed it. `ns` is
/// the child's own (innermost) namespace, the one its `pid` was allocated in.
///
/// - The innermost namespace closed: the attach saw it open (else ENOMEM, as
///   `alloc_pid`'s `PIDNS_ADDING` check), so the zap raced this fork.
/// - An outer namespace closed while the caller has a number in it (a member forking
///   a `CLONE_NEWPID` child, or a child after `unshare_pid_ns`): in Linux that zap's
///   walk, under `tasklist_lock`, either finds the child or SIGKILLs the caller first,
///   whose attach then fails with EINTR; the child never outlives it.
/// - An outer namespace closed that the caller is not in (a task that `setns`-ed
///   below it): its zap kills nothing of this fork's; Linux lets the child live (it
///   keeps the dead init unreapable until it dies), and so does this.
#[inline(always)]
fn zapped_since_attach(
    me: &TaskInner,
    ns: &uproc_pidns::PidNamespace,
    pid: &uproc_pidns::Pid,
) -> bool {
    if !ns.is_adding() {
        return true;
    }
    // The usual child has one level: nothing more to read.
    ns.level() > 0 && outer_zapped(me, pid)
}

/// [`zapped_since_attach`]'s outer levels (a nested child only).
#[cold]
#[inline(never)]
fn outer_zapped(me: &TaskInner, pid: &uproc_pidns::Pid) -> bool {
    let outer = &pid.numbers()[..pid.numbers().len() - 1];
    outer
        .iter()
        .any(|u| !u.ns.is_adding() && me.pid.nr_in(&u.ns) != 0)
}

/// A failed fork freed a number: run the namespace-init checks it may have made due
/// (slow path: it fetches the runtime).
#[cold]
fn process_zaps_of(me: &TaskInner) {
    if let Some(sys) = me.sys() {
        sys.process_zaps();
    }
}

/// `fatal_signal_pending(current)` for fork: the caller's group is exiting or has a
/// fatal signal queued, or the caller itself is exiting. The caller holds `me`'s
/// siglock.
fn group_dying(me: &TaskInner, st: &GroupState) -> bool {
    st.group_exit.is_some()
        || st.shared_pending.contains(Signal::KILL)
        || me.exiting.load(Ordering::Acquire)
        || me.pending.load(Ordering::Acquire) & Signal::KILL.mask() != 0
}

/// Step 5 of fork: checks that must be made in the attach's critical section, then the
/// attach (`ns`: the namespace the child's pid was allocated in, whose closing fails
/// the fork with ENOMEM). Under the `Linux*` profiles inside `tasklist_lock` (write),
/// once; under `Scalable` with the per-process locks alone:
///
/// - a thread attaches under its group's siglock, the lock group death
///   (`nr_live`, `group_exit`) is decided under, so it joins a live group or fails;
/// - a process attaches under its parent group's `children` lock (then siglocks one at
///   a time, rules 2-3): a parent group that died has closed its list in the same
///   critical section that handed its children on, so the child is either handed on
///   with the others or not attached at all (EINTR). A `CLONE_PARENT` fork whose
///   parent closed its list was reparented meanwhile and retries with the new parent.
///   The parent's subreaper bits are read under the same lock, so a concurrent
///   `PR_SET_CHILD_SUBREAPER` walk (which reads the list after marking the parent)
///   either marks the new child or is seen by it.
#[inline]
fn attach(
    sys: Option<&crate::system::System>,
    me: &Arc<TaskInner>,
    ns: &uproc_pidns::PidNamespace,
    mut proto: Proto,
    thread: bool,
    parent_flag: bool,
) -> Result<Arc<TaskInner>, (Errno, Proto)> {
    let _tl = sys.and_then(crate::system::System::tasklist_write_hot);
    if !ns.is_adding() {
        cold_path();
        return Err((Errno::ENOMEM, proto));
    }
    if thread {
        return attach_thread(me, proto);
    }
    // `CLONE_PARENT`: the caller's parent, re-read under its list's lock. Otherwise
    // the caller itself, borrowed (no reference count taken and dropped per fork).
    let mut rp_owned = if parent_flag {
        me.group().sig.lock().real_parent.upgrade()
    } else {
        None
    };
    loop {
        let p: &Arc<TaskInner> = if parent_flag {
            match rp_owned.as_ref() {
                Some(p) => p,
                None => {
                    cold_path();
                    return Err((Errno::EINVAL, proto));
                }
            }
        } else {
            me
        };
        let mut ch = p.group().children.lock();
        let my_group = me.group();
        // One siglock round for everything read from the caller's group.
        let (now_parent, ids, dying, my_sub, sigchld) = {
            let mut st = my_group.sig.lock();
            // The list is the caller's group's: it has children from here on (or
            // fails below), see `GroupState::had_children`.
            st.had_children |= !parent_flag;
            (
                if parent_flag {
                    st.real_parent.upgrade()
                } else {
                    None
                },
                crate::pgrp::ids_for_child(&mut st, my_group),
                group_dying(me, &st),
                st.has_child_subreaper || st.is_subreaper,
                // `copy_sighand`: the child starts with the caller's dispositions,
                // SIGCHLD's `SIG_IGN` and `SA_NOCLDWAIT` included.
                st.sigchld,
            )
        };
        if parent_flag
            && !now_parent
                .as_ref()
                .is_some_and(|n| std::ptr::eq(n.group(), p.group()))
        {
            // Reparented between the read and the lock: retry with the new parent.
            cold_path();
            drop(ch);
            rp_owned = now_parent;
            continue;
        }
        if dying || p.group().children_closed(&ch) {
            // A closed list with the caller still its member: the caller's own group
            // died (a CLONE_PARENT caller would have been handed on already).
            cold_path();
            return Err((Errno::EINTR, proto));
        }
        if parent_flag {
            // `p->exit_signal = current->group_leader->exit_signal`, read where the
            // caller's parent is known current: a reparent of the caller (which resets
            // its leader's exit signal to SIGCHLD) holds this list's lock, so it either
            // came before the `now_parent` check (and this is the new parent's list, the
            // reset done) or comes after the attach (and resets the child's too).
            proto.exit_signal = leader_exit_signal(me);
        }
        let Some(ids) = ids else {
            cold_path();
            return Err((Errno::EINTR, proto));
        };
        // The parent thread: `p` itself, or (`CLONE_PARENT`) the thread of `p`'s group
        // that the caller's `real_parent` names now.
        let rp: &Arc<TaskInner> = now_parent.as_ref().unwrap_or(p);
        let has_sub = if parent_flag {
            let mut ps = rp.group().sig.lock();
            ps.had_children = true;
            ps.has_child_subreaper || ps.is_subreaper
        } else {
            my_sub
        };
        let init = proto.pid.nr() == 1;
        let autoreap = proto.autoreap;
        // The task and its group, with their final state: nobody can reach them until
        // they are published below (the parent's list, the pid's task slot), so no
        // lock is taken on them.
        let real_parent = Arc::downgrade(rp);
        let child = build_leader(proto, |leader| {
            let st = GroupState::for_child(leader, real_parent, ids, has_sub, init, sigchld);
            let group = ThreadGroup::new(st);
            group.autoreap.store(autoreap, Ordering::Relaxed);
            group
        });
        if init {
            become_child_reaper(&child);
        }
        ch.list.push(Task::from_inner(child.clone()));
        crate::task::publish_kept_in_pid(&child);
        return Ok(child);
    }
}

/// The exit signal of `me`'s group leader (SIGCHLD if it is gone), for a
/// `CLONE_PARENT` child. Out of line: only `CLONE_PARENT` forks come here. The leader
/// handle is dropped after the caller's locks: the caller holds `me`, whose group lives
/// in the leader's allocation, so it is never the last.
#[cold]
#[inline(never)]
fn leader_exit_signal(me: &TaskInner) -> i32 {
    me.leader_task().map_or(Signal::CHLD.raw(), |l| {
        l.exit_signal.load(Ordering::Relaxed)
    })
}

/// A new namespace init becomes its namespace's `child_reaper`. Under `Scalable` it
/// also opens the per-thread credits of the namespace's reference count
/// (`PidNamespace::pid_ref_credits`), so that the pids forked into the namespace take
/// and give back their reference on a line of their thread's own instead of the count
/// every fork into it shares, and keeps the guard in its rare fields: dropped with the
/// init's task, which holds its own pid and so the namespace, the guard changes
/// nothing in when the namespace is freed. Called before the task is published
/// (nobody else can take its rare lock yet). A root namespace's credits are the
/// runtime's (`None` here). Out of line: one fork per namespace comes here.
#[cold]
#[inline(never)]
fn become_child_reaper(init: &Arc<TaskInner>) {
    let ns = init.pid.ns();
    ns.set_child_reaper(Some(TaskInner::as_any_weak(init)));
    if let Some(guard) = ns.pid_ref_credits() {
        init.with_rare(|r| r.ns_credits = Some(guard));
    }
}

/// [`attach`] of a thread, out of line: a process fork (the common case of most
/// embeddings) then runs through a shorter `attach`, and a thread fork through this
/// one, each without the other's code between its instructions.
#[inline(never)]
fn attach_thread(me: &Arc<TaskInner>, proto: Proto) -> Result<Arc<TaskInner>, (Errno, Proto)> {
    // The "group is dying" check and the insertion are one siglock hold, as in
    // `copy_process`: a group exit (which marks every thread under the siglock)
    // either came first (EINTR) or will see, and kill, the new thread.
    let mut st = me.group().sig.lock();
    if group_dying(me, &st) || st.nr_live == 0 {
        cold_path();
        return Err((Errno::EINTR, proto));
    }
    let mut proto = proto;
    // The process's core limit as it is now, under the siglock that `set_dumps_core`
    // changes it under (the copy read before the lock may be stale): one setting for
    // every thread of the process.
    let core = me.flags.load(Ordering::Relaxed) & crate::task::DUMPS_CORE;
    proto.inherited = proto.inherited & !crate::task::DUMPS_CORE | core;
    let child = crate::task_cache::new_task_slot()
        .fill(proto.into_task(|| GroupHome::Leader(TaskInner::group_owner(me)), false));
    st.threads.push(Arc::downgrade(&child));
    st.nr_live += 1;
    let leader = st.leader().upgrade();
    drop(st);
    if let Some(l) = leader {
        l.with_rare(|r| r.threads.push(Task::from_inner(child.clone())));
    }
    crate::task::publish_kept_in_pid(&child);
    Ok(child)
}

/// The `Arc` of a new process's leader: `proto` living in the group that `group` builds
/// from the leader's own address (its [`LeaderRef`](crate::task::LeaderRef)), known
/// before the task is (the allocation's kept weak still to be handed to the pid,
/// [`publish_kept_in_pid`](crate::task::publish_kept_in_pid)).
///
/// `Arc::new_cyclic` would give the address too, through a `Weak` whose hand-over to
/// the finished `Arc` is a locked increment of the strong count: one atomic per fork
/// for an address. Here the allocation (this thread's cached one, `task_cache.rs`, else
/// a new one) is taken uninitialised, the task written into it, and the `Arc` taken as
/// initialised: no atomic.
#[inline(always)]
fn build_leader(
    proto: Proto,
    group: impl FnOnce(crate::task::LeaderRef) -> ThreadGroup,
) -> Arc<TaskInner> {
    let kept = crate::task_cache::new_task_slot();
    // `group` only takes the address (`LeaderRef` reads nothing through it while the
    // task is built). The task is passed in, not captured by `group`: a capture would
    // copy it into the closure first.
    let leader = crate::task::LeaderRef::new(kept.as_ptr());
    kept.fill(proto.into_task(|| GroupHome::Own(group(leader)), true))
}
