//! Process groups and sessions: `PIDTYPE_PGID` / `PIDTYPE_SID` attachments,
//! `setpgid(2)`, `setsid(2)`.
//!
//! A pid used as a process-group or session id stays allocated while any process uses
//! it that way, even after the task it named was reaped (Linux frees a `struct pid`'s
//! numbers only when no task is attached to it under any type). uproc counts the uses
//! without a global table, so that a fork (which inherits its parent's process group
//! and session) and a reap touch no lock shared by other processes:
//!
//! ```text
//! GroupState.ids ──Arc──> ProcessIds { pgrp ──Arc──> PidUse{pid, state}, session ──Arc──> PidUse }
//!                          (shared by every process with the same pair)
//! leader's GroupState.own_use ──Weak──> the PidUse of its own pid, if it is a pgrp/sid
//! ```
//!
//! - A fork clones its parent's `Arc<ProcessIds>` (one reference count); a reap drops
//!   it. The `Arc` counts are the usage counts.
//! - A [`PidUse`] exists only for a pid that is (or was) a process-group or session
//!   id; it is made by the slow paths (`setpgid`, `setsid`, the runtime init) for a
//!   leader that is still attached, and recorded weakly in that leader's group.
//! - Its pid's numbers are freed by whichever comes last of (a) the task's release
//!   (it clears `TASK_ATTACHED`) and (b) the drop of the last `ProcessIds` using the
//!   pid (`PidUse::drop` clears `IN_USE`). One atomic `fetch_and` decides which, so
//!   the pid is freed exactly once. A leader whose pid never became a pgrp/sid has no
//!   `PidUse`: its release frees the pid directly.
//! - `setpgid` needs to find the `PidUse` of an arbitrary pid number: the slow-path
//!   [`TaskList`] keeps a weak index, under `tasklist_lock` (write) in every profile
//!   (setpgid and setsid are not on the fork/exit path).

use crate::sync::{AtomicU8, AtomicU32, Ordering};
use crate::system::System;
use crate::task::{GroupState, Task, TaskInner, ThreadGroup, pid_task};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Weak};
use uproc_abi::{Errno, Profile, Signal};
use uproc_pidns::{Pid, PidNamespace, free_pid};

/// `PidUse::state`: the task whose pid this is has not been released.
const TASK_ATTACHED: u8 = 1;
/// `PidUse::state`: some `ProcessIds` still uses the pid (cleared by `drop`).
const IN_USE: u8 = 2;

/// A pid in use as a process-group and/or session id.
pub(crate) struct PidUse {
    pub(crate) pid: Arc<Pid>,
    /// `TASK_ATTACHED | IN_USE`; whoever clears the last bit frees the pid.
    state: AtomicU8,
    /// How many [`ProcessIds`] use this pid as their process group (`setsid`'s and
    /// `setpgid`'s "a process group with this id exists").
    pgrp_pairs: AtomicU32,
    /// How many processes of the process group with this id are stopped
    /// (`SIGNAL_STOP_STOPPED`): `has_stopped_jobs` without a walk, so that an exit or
    /// a reparent asks [`orphaned_with_stopped`] only when it can matter. Changed under
    /// the stopping process's siglock ([`GroupState::set_stopped`], and setpgid/setsid
    /// moving a stopped process), read without a lock.
    ///
    /// [`GroupState::set_stopped`]: crate::task::GroupState::set_stopped
    stopped_members: AtomicU32,
}

impl PidUse {
    /// `has_stopped_jobs`: whether a process of the group with this id is stopped.
    pub(crate) fn has_stopped_members(&self) -> bool {
        self.stopped_members.load(Ordering::Acquire) > 0
    }

    /// One process of the group with this id stopped (`true`) or stopped no more.
    pub(crate) fn count_stopped(&self, stopped: bool) {
        if stopped {
            self.stopped_members.fetch_add(1, Ordering::AcqRel);
        } else {
            let old = self.stopped_members.fetch_sub(1, Ordering::AcqRel);
            debug_assert!(old > 0, "a process group's stopped count below zero");
        }
    }

    /// Whether some process uses this pid as its process group.
    pub(crate) fn is_pgrp(&self) -> bool {
        self.pgrp_pairs.load(Ordering::Acquire) > 0
    }

    /// The task whose pid this is was released. The caller holds a strong reference,
    /// so `drop` (which frees the pid once `TASK_ATTACHED` is clear) runs later.
    fn detach_task(&self) {
        self.state.fetch_and(!TASK_ATTACHED, Ordering::AcqRel);
    }
}

impl Drop for PidUse {
    fn drop(&mut self) {
        // A dropped runtime returned every number it had handed out, this one
        // included, before its task tree (which holds the process-group pairs) went.
        if self.state.fetch_and(!IN_USE, Ordering::AcqRel) & TASK_ATTACHED == 0
            && !self.pid.is_freed()
        {
            free_pid(&self.pid);
        }
    }
}

/// The process group and session of a process (`PIDTYPE_PGID`, `PIDTYPE_SID`),
/// shared by a process and the children it forked with the same pair.
pub(crate) struct ProcessIds {
    pub(crate) pgrp: Arc<PidUse>,
    pub(crate) session: Arc<PidUse>,
    /// The address of the thread group this object was made for (compared, never
    /// dereferenced): the one process whose forks clone it (see [`ids_for_child`]).
    owner: usize,
}

impl ProcessIds {
    /// A pair for the process whose group is `owner`.
    pub(crate) fn new(
        pgrp: Arc<PidUse>,
        session: Arc<PidUse>,
        owner: &ThreadGroup,
    ) -> Arc<ProcessIds> {
        pgrp.pgrp_pairs.fetch_add(1, Ordering::AcqRel);
        Arc::new(ProcessIds {
            pgrp,
            session,
            owner: std::ptr::from_ref(owner) as usize,
        })
    }
}

/// The pair a child of the process `group` (whose siglock is `st`) inherits at fork.
///
/// The children's reference counts are the usage counts, so whoever clones an
/// `Arc<ProcessIds>` writes its line. Every process but the runtime init starts with
/// its parent's object, which its siblings share: if those siblings forked from it
/// directly, two parents forking in parallel (each its own children) would write one
/// shared line per fork and per reap. So a process forks from an object of its own,
/// made on its first fork (one allocation per forking process, not per child; the
/// `PidUse` counts it bumps are written once per such process). A process whose
/// object is already its own clones it. A reused group address can only make a
/// process share an object where it could have made its own: the pair is the same.
#[inline]
pub(crate) fn ids_for_child(st: &mut GroupState, group: &ThreadGroup) -> Option<Arc<ProcessIds>> {
    let ids = st.ids.as_ref()?;
    if ids.owner != std::ptr::from_ref(group) as usize {
        // The old object still holds both `PidUse`s through the others that share it
        // (or, if it was the last, the new object holds them): its drop frees no pid,
        // so it may run here under the siglock.
        let own = ProcessIds::new(ids.pgrp.clone(), ids.session.clone(), group);
        st.ids = Some(own);
    }
    st.ids.clone()
}

impl Drop for ProcessIds {
    fn drop(&mut self) {
        self.pgrp.pgrp_pairs.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What a release hands back from a leader's group state, dropped after every lock:
/// the process's [`ProcessIds`] and the [`PidUse`] of its own pid (either drop may
/// free a pid, which takes the pid allocator's lock).
#[derive(Default)]
pub(crate) struct DetachedIds {
    ids: Option<Arc<ProcessIds>>,
    own: Option<Arc<PidUse>>,
}

impl DetachedIds {
    /// Drops both; returns whether that may have freed a pid (the leader's own pid was
    /// a process-group/session id, or this was the last process with its pair).
    #[inline(always)]
    pub(crate) fn release(self) -> bool {
        let last_pair = self.ids.and_then(Arc::into_inner).is_some();
        last_pair || self.own.is_some()
    }
}

/// `detach_pid` of `PIDTYPE_PGID`, `PIDTYPE_SID` and the leader's own pid, under its
/// siglock (`st`): queues the leader's pid on `free` unless it is still used as a
/// process-group or session id (then the last user frees it).
#[inline]
pub(crate) fn detach_leader<'a>(
    st: &mut GroupState,
    pid: &'a Arc<Pid>,
    free: &mut FreeList<'a>,
) -> DetachedIds {
    let own = st.own_use.upgrade();
    match &own {
        Some(u) => u.detach_task(),
        None => free.push(pid),
    }
    DetachedIds {
        ids: st.ids.take(),
        own,
    }
}

/// The slow-path index of the pids in use as process-group or session ids, under
/// `tasklist_lock` (write): `setpgid` looks up the group it joins here.
#[derive(Default)]
pub(crate) struct TaskList {
    uses: HashMap<usize, Weak<PidUse>, BuildHasherDefault<PtrHasher>>,
}

fn key(pid: &Arc<Pid>) -> usize {
    Arc::as_ptr(pid) as usize
}

/// The hash of a `Pid` address: one multiply and a rotate instead of SipHash (the keys
/// are our own heap addresses, not attacker input). The product's high half, where the
/// address bits are mixed, becomes the low half (the table's slot index); an address's
/// always-zero alignment bits never reach it.
#[derive(Default)]
struct PtrHasher(u64);

impl Hasher for PtrHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not used for `usize` keys; a correct fallback for any other input.
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(32);
    }
}

/// Pids to free once the caller is done with its locks (`free_pids`): a released
/// task's own pid, borrowed from the task (no reference count taken for it).
#[derive(Default)]
pub(crate) struct FreeList<'a> {
    pid: Option<&'a Arc<Pid>>,
}

impl<'a> FreeList<'a> {
    pub(crate) fn push(&mut self, pid: &'a Arc<Pid>) {
        debug_assert!(self.pid.is_none(), "one pid freed per release");
        self.pid = Some(pid);
    }

    /// `free_pids`: returns the numbers.
    pub(crate) fn free(&mut self) {
        if let Some(p) = self.pid.take() {
            free_pid(p);
        }
    }

    /// Frees now if the profile frees under `tasklist_lock` (`Linux618`); the caller
    /// holds it.
    pub(crate) fn free_if_locked_profile(&mut self, profile: Profile) {
        if profile == Profile::Linux618 {
            self.free();
        }
    }
}

impl TaskList {
    /// The [`PidUse`] of `pid`, if it is in use as a process-group or session id.
    fn lookup(&mut self, pid: &Arc<Pid>) -> Option<Arc<PidUse>> {
        let k = key(pid);
        let found = self.uses.get(&k)?.upgrade();
        match found {
            Some(u) if Arc::ptr_eq(&u.pid, pid) => Some(u),
            _ => {
                // The last user is gone (its pid freed or being freed): prune.
                self.uses.remove(&k);
                None
            }
        }
    }

    /// The [`PidUse`] of the leader `pid` whose group state is `st` (its siglock held),
    /// made on first use. The leader must not be released (`st.ids` is set).
    pub(crate) fn own_use(&mut self, st: &mut GroupState, pid: &Arc<Pid>) -> Arc<PidUse> {
        if let Some(u) = st.own_use.upgrade() {
            return u;
        }
        let u = Arc::new(PidUse {
            pid: pid.clone(),
            state: AtomicU8::new(TASK_ATTACHED | IN_USE),
            pgrp_pairs: AtomicU32::new(0),
            stopped_members: AtomicU32::new(0),
        });
        st.own_use = Arc::downgrade(&u);
        self.uses.insert(key(pid), Arc::downgrade(&u));
        u
    }
}

impl Task {
    /// [setpgid(2)](https://man7.org/linux/man-pages/man2/setpgid.2.html): `pid` 0 is
    /// the caller, `pgid` 0 is `pid`. EINVAL for `pgid < 0` (so for a zero `pgid` with a
    /// negative `pid`) or a non-leader target; ESRCH if `pid` is neither the caller nor
    /// one of its children (or was reaped), or if the caller itself was reaped;
    /// EPERM if the target is a session leader, is in another session, or `pgid` names
    /// no process group of the caller's session.
    ///
    /// Slow path: `tasklist_lock` (write) in every profile, then siglocks one at a
    /// time.
    ///
    /// # References
    /// `SYSCALL_DEFINE2(setpgid)` in `kernel/sys.c`.
    pub fn setpgid(&self, pid: i32, pgid: i32) -> Result<(), Errno> {
        // Linux substitutes `pgid = pid` for a zero pgid before its `pgid < 0` check:
        // `setpgid(-5, 0)` is EINVAL, `setpgid(-5, 7)` ESRCH (no such pid).
        if pgid < 0 || (pgid == 0 && pid < 0) {
            return Err(Errno::EINVAL);
        }
        let sys = self.0.sys().ok_or(Errno::ESRCH)?;
        let ns = self.0.active_ns().clone();
        let me = self.0.leader_task().unwrap_or_else(|| Arc::clone(&self.0));
        // The old pair, dropped after the locks (its drop may free a pid).
        let mut old = None;
        let result = {
            let mut tl = sys.tasklist_lock.write();
            (|| {
                self.0.check_not_released()?;
                let target: Arc<TaskInner> = if pid == 0 {
                    me.clone()
                } else {
                    let p = ns.find_pid(pid).ok_or(Errno::ESRCH)?;
                    pid_task(&p).ok_or(Errno::ESRCH)?
                };
                if !target.leader {
                    return Err(Errno::EINVAL);
                }
                let same = std::ptr::eq(target.group(), me.group());
                let (t_parent, t_ids) = {
                    let st = target.group().sig.lock();
                    (
                        st.real_parent.upgrade(),
                        st.ids.clone().ok_or(Errno::ESRCH)?,
                    )
                };
                let my_ids = me.group().sig.lock().ids.clone().ok_or(Errno::ESRCH)?;
                if !same {
                    let is_child = t_parent.is_some_and(|p| std::ptr::eq(p.group(), me.group()));
                    if !is_child {
                        return Err(Errno::ESRCH);
                    }
                    if !Arc::ptr_eq(&t_ids.session, &my_ids.session) {
                        return Err(Errno::EPERM);
                    }
                }
                if Arc::ptr_eq(&t_ids.session.pid, &target.pid) {
                    return Err(Errno::EPERM);
                }
                let own = pgid == 0 || pgid == target.pid.nr_in(&ns);
                let joined = if own {
                    None
                } else {
                    let p = ns.find_pid(pgid).ok_or(Errno::EPERM)?;
                    let u = tl.lookup(&p).ok_or(Errno::EPERM)?;
                    if !u.is_pgrp() || !pgrp_in_session(&sys, &p, &my_ids.session.pid) {
                        return Err(Errno::EPERM);
                    }
                    Some(u)
                };
                let mut st = target.group().sig.lock();
                // Re-read under the siglock that release takes: a target reaped since
                // the first look is ESRCH, and nothing is changed.
                let cur = st.ids.clone().ok_or(Errno::ESRCH)?;
                let new_pgrp = match joined {
                    Some(u) => u,
                    None => tl.own_use(&mut st, &target.pid),
                };
                if Arc::ptr_eq(&new_pgrp, &cur.pgrp) {
                    return Ok(());
                }
                if st.stopped {
                    // A stopped process counts in the group it is in.
                    cur.pgrp.count_stopped(false);
                    new_pgrp.count_stopped(true);
                }
                old = st.ids.replace(ProcessIds::new(
                    new_pgrp,
                    cur.session.clone(),
                    target.group(),
                ));
                Ok(())
            })()
        };
        drop(old);
        sys.process_zaps();
        result
    }

    /// [setsid(2)](https://man7.org/linux/man-pages/man2/setsid.2.html): the caller's
    /// process becomes leader of a new session and process group; returns the session
    /// id. EPERM if a process group with the caller's id already exists (the caller is
    /// a process-group leader); ESRCH if the caller was reaped.
    ///
    /// Slow path: `tasklist_lock` (write) in every profile, then the caller's siglock.
    ///
    /// # References
    /// `ksys_setsid` in `kernel/sys.c`.
    pub fn setsid(&self) -> Result<i32, Errno> {
        let sys = self.0.sys().ok_or(Errno::ESRCH)?;
        let me = self.0.leader_task().unwrap_or_else(|| Arc::clone(&self.0));
        let mut old = None;
        let result = {
            let mut tl = sys.tasklist_lock.write();
            let mut st = me.group().sig.lock();
            if st.ids.is_none() || self.0.check_not_released().is_err() {
                Err(Errno::ESRCH)
            } else if st.own_use.upgrade().is_some_and(|u| u.is_pgrp()) {
                Err(Errno::EPERM)
            } else {
                let own = tl.own_use(&mut st, &me.pid);
                if st.stopped {
                    // (A stopped process cannot call setsid; its threads are stopped
                    // too. Kept exact for a caller that is not a real thread of it.)
                    if let Some(cur) = &st.ids {
                        cur.pgrp.count_stopped(false);
                    }
                    own.count_stopped(true);
                }
                old = st
                    .ids
                    .replace(ProcessIds::new(own.clone(), own, me.group()));
                Ok(me.pid.nr_in(self.0.active_ns()))
            }
        };
        drop(old);
        sys.process_zaps();
        result
    }

    /// [getpgid(2)](https://man7.org/linux/man-pages/man2/getpgid.2.html) of the
    /// caller, in its namespace (0 if the group's pid is invisible there, or the
    /// process was reaped).
    pub fn getpgid(&self) -> i32 {
        self.pgid_in(self.0.active_ns())
    }

    /// [getsid(2)](https://man7.org/linux/man-pages/man2/getsid.2.html) of the caller.
    pub fn getsid(&self) -> i32 {
        self.sid_in(self.0.active_ns())
    }

    /// The process group's number as `ns` sees it, 0 if invisible there or the
    /// process was reaped: what `/proc/PID/stat` shows a reader of `ns`.
    ///
    /// # References
    /// `task_pgrp_nr_ns` in `kernel/pid.c`.
    pub fn pgid_in(&self, ns: &PidNamespace) -> i32 {
        let p = self.0.group().sig.lock().pgrp();
        p.map_or(0, |p| p.nr_in(ns))
    }

    /// The session's number as `ns` sees it, 0 if invisible there or the process was
    /// reaped (`task_session_nr_ns`).
    pub fn sid_in(&self, ns: &PidNamespace) -> i32 {
        let p = self.0.group().sig.lock().session();
        p.map_or(0, |p| p.nr_in(ns))
    }
}

/// Whether some process with pgrp `pgrp` is in `session`. The caller holds
/// `tasklist_lock`; slow path (walks every task).
fn pgrp_in_session(sys: &System, pgrp: &Arc<Pid>, session: &Arc<Pid>) -> bool {
    sys.root_ns
        .pids()
        .iter()
        .filter_map(|p| pid_task(p))
        .any(|t| {
            let st = t.group().sig.lock();
            t.leader
                && st.ids.as_ref().is_some_and(|ids| {
                    Arc::ptr_eq(&ids.pgrp.pid, pgrp) && Arc::ptr_eq(&ids.session.pid, session)
                })
        })
}

/// `will_become_orphaned_pgrp(pgrp, ignored)` (`is_current_pgrp_orphaned` with none
/// ignored): whether the process group `pgrp` is orphaned, i.e. no member has its
/// parent in another process group of the same session; `ignored` (an exiting
/// process) does not count. A member that is a zombie with no other thread left
/// (`p->exit_state && thread_group_empty(p)`) does not count, nor one whose parent is
/// the runtime init (the global init, `is_global_init(p->real_parent)`; a namespace
/// init is not one). A group with no member is orphaned.
///
/// Slow path, for SIGTSTP/SIGTTIN/SIGTTOU only (`signal.rs`): walks every task of the
/// runtime, as `kill(-pgid)` does. The caller holds `tasklist_lock` (read), which keeps
/// setpgid/setsid (write) from moving a member during the walk, and no other lock of
/// this crate; the walk takes each member's siglock and then its parent's, one at a
/// time, never nested.
///
/// # References
/// `will_become_orphaned_pgrp` in `kernel/exit.c`, `get_signal` in `kernel/signal.c`,
/// [Orphaned Process Groups](https://www.gnu.org/software/libc/manual/html_node/Orphaned-Process-Groups.html)
/// (glibc manual).
pub(crate) fn pgrp_orphaned(sys: &System, pgrp: &Arc<Pid>, ignored: Option<&ThreadGroup>) -> bool {
    let counts = |p: &Arc<TaskInner>| -> bool {
        if ignored.is_some_and(|g| std::ptr::eq(g, p.group())) {
            return false; // `ignored_task`: the exiting process itself
        }
        let (parent, session) = {
            let st = p.group().sig.lock();
            if !st.in_pgrp(pgrp) {
                return false;
            }
            if p.exit_state.load(Ordering::Acquire) != crate::task::RUNNING
                && st.threads.is_empty()
                && !st.zapping
            {
                // A zombie with no other thread. (A namespace init waiting for its
                // namespace to empty is still in `do_exit` on Linux, `exit_state` 0:
                // it counts until its zap ends, `try_finish_zap`.)
                return false;
            }
            // The runtime init has no parent; a released parent leaves none either.
            let Some(parent) = st.real_parent.upgrade() else {
                return false;
            };
            (parent, st.session())
        };
        if parent.group().runtime_init() {
            return false;
        }
        let pst = parent.group().sig.lock();
        let same_session = match (pst.session(), session) {
            (Some(a), Some(b)) => Arc::ptr_eq(&a, &b),
            _ => false,
        };
        same_session && !pst.in_pgrp(pgrp)
    };
    !sys.root_ns
        .pids()
        .iter()
        .filter_map(|p| pid_task(p))
        .filter(|t| t.leader)
        .any(|t| counts(&t))
}

/// `kill_orphaned_pgrp`: an exit or a reparent may have orphaned the process group of
/// `ids`; if it did and a member is stopped, SIGHUP goes to each stopped member and
/// then SIGCONT to the whole group (a stopped job nobody can continue any more is told
/// so, and continued; POSIX says both to every member, Linux 6.18 sends the SIGHUP to
/// the stopped ones only, as measured). The exit case (`exit_notify`): `ids` is the
/// exiting process's, `parent_ids` its parent's, `ignored` its group. The reparent
/// case (`reparent_leader`): `ids` is the
/// reparented child's, `parent_ids` the exiting parent's, nothing ignored. Either way
/// the group is considered only when the parent was in another process group of the
/// same session (it was the group's link outside). This is the decision: the process
/// group of `ids` if it is to hear them ([`signal_orphaned_pgrp`] sends them).
///
/// [`PidUse::has_stopped_members`] filtered the call (the hot path of exit and
/// reparent pays one load for it). The orphan test walks under `tasklist_lock` (read)
/// as [`pgrp_orphaned`] describes: taken here unless `tasklist_held` (the caller holds
/// it for writing: `exit_notify` decides in its hold, as Linux does, and sends with
/// [`signal_orphaned_pgrp`] once it is dropped). No other lock of this crate held.
///
/// # References
/// `kill_orphaned_pgrp`, `will_become_orphaned_pgrp` and `has_stopped_jobs` in
/// `kernel/exit.c`.
pub(crate) fn orphaned_with_stopped(
    sys: &System,
    ids: &ProcessIds,
    parent_ids: &ProcessIds,
    ignored: Option<&ThreadGroup>,
    tasklist_held: bool,
) -> Option<Arc<Pid>> {
    let pgrp = &ids.pgrp.pid;
    if Arc::ptr_eq(&parent_ids.pgrp.pid, pgrp)
        || !Arc::ptr_eq(&parent_ids.session.pid, &ids.session.pid)
    {
        return None;
    }
    let _r = (!tasklist_held).then(|| sys.tasklist_lock.read());
    (ids.pgrp.has_stopped_members() && pgrp_orphaned(sys, pgrp, ignored)).then(|| Arc::clone(pgrp))
}

/// `kill_orphaned_pgrp`'s signals to an orphaned `pgrp`, with no lock held: sent by the
/// runtime, as the kernel sends them (`SEND_SIG_PRIV`: a namespace init drops the
/// SIGHUP and is continued by the SIGCONT), each one group kill.
pub(crate) fn signal_orphaned_pgrp(sys: &System, pgrp: &Arc<Pid>) {
    tracing::debug!(
        pgrp = pgrp.numbers()[0].nr,
        "process group orphaned with a stopped member: SIGHUP, SIGCONT"
    );
    // SIGHUP to the stopped members only, then SIGCONT to all: measured on Linux
    // 6.18 (a running member, handler or not, SIGHUP blocked or not, gets the
    // SIGCONT alone), where POSIX words it as both to every member.
    let runtime = crate::signal::Sender::Runtime;
    // ESRCH: every member went meanwhile.
    let _ = crate::signal::kill_pgrp_where(sys, pgrp, Signal::HUP, runtime, |st| st.stopped);
    let _ = crate::signal::kill_pgrp(sys, pgrp, Signal::CONT, runtime);
}
