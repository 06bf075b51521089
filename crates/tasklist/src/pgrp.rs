//! Process groups and sessions: `PIDTYPE_PGID` / `PIDTYPE_SID` attachments,
//! `setpgid(2)`, `setsid(2)`.
//!
//! A pid used as a process-group or session id stays allocated while any process uses
//! it that way, even after the task it named was reaped (Linux frees a `struct pid`'s
//! numbers only when no task is attached to it under any type). uproc keeps a usage
//! table under `tasklist_lock`: a pid is freed when it has neither a task attached
//! (`task_slot`) nor a pgrp/session user.

use crate::sync::Ordering;
use crate::system::System;
use crate::task::{Task, TaskInner, pid_task};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;
use uproc_abi::{Errno, Profile};
use uproc_pidns::{Pid, free_pid};

/// What `tasklist_lock` guards besides the tree shape: the pgrp/session usage table.
#[derive(Default)]
pub(crate) struct TaskList {
    uses: HashMap<usize, PidUse, BuildHasherDefault<PtrHasher>>,
}

struct PidUse {
    pid: Arc<Pid>,
    pgrp: u32,
    session: u32,
}

impl PidUse {
    fn used(&self) -> bool {
        self.pgrp > 0 || self.session > 0
    }
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

/// Pids to free once the caller is done with `tasklist_lock` (`free_pids`), at most
/// one task pid plus its old pgrp and session.
#[derive(Default)]
pub(crate) struct FreeList {
    pids: [Option<Arc<Pid>>; 4],
}

impl FreeList {
    pub(crate) fn push(&mut self, pid: Arc<Pid>) {
        if self.pids.iter().flatten().any(|p| Arc::ptr_eq(p, &pid)) {
            return;
        }
        let slot = self
            .pids
            .iter_mut()
            .find(|s| s.is_none())
            .expect("at most 4 pids freed per detach");
        *slot = Some(pid);
    }

    /// `free_pids`: returns the numbers.
    pub(crate) fn free(&mut self) {
        for p in self.pids.iter_mut().filter_map(Option::take) {
            free_pid(&p);
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
    /// `attach_pid(PIDTYPE_PGID)`: one more process uses `pid` as its pgrp.
    pub(crate) fn get_pgrp(&mut self, pid: &Arc<Pid>) {
        self.entry(pid).pgrp += 1;
    }

    /// `attach_pid(PIDTYPE_SID)`.
    pub(crate) fn get_session(&mut self, pid: &Arc<Pid>) {
        self.entry(pid).session += 1;
    }

    /// `attach_pid` of both types, as fork does: one table lookup when the process
    /// group and the session are the same pid (the common case).
    pub(crate) fn get_pgrp_session(&mut self, pgrp: &Arc<Pid>, session: &Arc<Pid>) {
        if Arc::ptr_eq(pgrp, session) {
            let u = self.entry(pgrp);
            u.pgrp += 1;
            u.session += 1;
        } else {
            self.get_pgrp(pgrp);
            self.get_session(session);
        }
    }

    fn entry(&mut self, pid: &Arc<Pid>) -> &mut PidUse {
        self.uses.entry(key(pid)).or_insert_with(|| PidUse {
            pid: pid.clone(),
            pgrp: 0,
            session: 0,
        })
    }

    /// `detach_pid(PIDTYPE_PGID)`; queues the pid for freeing when nothing uses it.
    pub(crate) fn put_pgrp(&mut self, pid: &Arc<Pid>, free: &mut FreeList) {
        self.put(pid, 1, 0, free);
    }

    /// `detach_pid(PIDTYPE_SID)`.
    pub(crate) fn put_session(&mut self, pid: &Arc<Pid>, free: &mut FreeList) {
        self.put(pid, 0, 1, free);
    }

    /// `detach_pid` of both types, as release does: [`put_pgrp`](Self::put_pgrp) then
    /// [`put_session`](Self::put_session), with one table lookup when they are the same
    /// pid.
    pub(crate) fn put_pgrp_session(
        &mut self,
        pgrp: &Arc<Pid>,
        session: &Arc<Pid>,
        free: &mut FreeList,
    ) {
        if Arc::ptr_eq(pgrp, session) {
            self.put(pgrp, 1, 1, free);
        } else {
            self.put_pgrp(pgrp, free);
            self.put_session(session, free);
        }
    }

    /// Drops `pgrp` / `session` uses of `pid`; then drops the entry when unused and
    /// queues the pid when no task is attached either. One lookup.
    fn put(&mut self, pid: &Arc<Pid>, pgrp: u32, session: u32, free: &mut FreeList) {
        let k = key(pid);
        if let Some(u) = self.uses.get_mut(&k) {
            u.pgrp -= pgrp;
            u.session -= session;
            if u.used() {
                return;
            }
            let u = self.uses.remove(&k).expect("entry exists");
            drop(u.pid);
        }
        Self::free_if_detached(pid, free);
    }

    /// Whether some process uses `pid` as its pgrp or session.
    pub(crate) fn in_use(&self, pid: &Arc<Pid>) -> bool {
        self.uses.get(&key(pid)).is_some_and(PidUse::used)
    }

    /// Whether some process uses `pid` as its process group.
    pub(crate) fn is_pgrp(&self, pid: &Arc<Pid>) -> bool {
        self.uses.get(&key(pid)).is_some_and(|u| u.pgrp > 0)
    }

    fn free_if_detached(pid: &Arc<Pid>, free: &mut FreeList) {
        if pid.task_slot().read().is_none() && !pid.is_freed() {
            free.push(pid.clone());
        }
    }
}

impl Task {
    /// [setpgid(2)](https://man7.org/linux/man-pages/man2/setpgid.2.html): `pid` 0 is
    /// the caller, `pgid` 0 is `pid`. EINVAL for `pgid < 0` or a non-leader target;
    /// ESRCH if `pid` is neither the caller nor one of its children; EPERM if the target
    /// is a session leader, is in another session, or `pgid` names no process group of
    /// the caller's session; ESRCH if the caller itself was reaped.
    ///
    /// # References
    /// `SYSCALL_DEFINE2(setpgid)` in `kernel/sys.c`.
    pub fn setpgid(&self, pid: i32, pgid: i32) -> Result<(), Errno> {
        if pgid < 0 {
            return Err(Errno::EINVAL);
        }
        let sys = self.0.sys().ok_or(Errno::ESRCH)?;
        let ns = self.0.active_ns().clone();
        let me = self.0.leader_task().unwrap_or_else(|| self.0.clone());
        let mut free = FreeList::default();
        let result = {
            let mut tl = sys.tasklist_lock.write();
            let r = (|| {
                released_caller_is_esrch(&self.0)?;
                let target: Arc<TaskInner> = if pid == 0 {
                    me.clone()
                } else {
                    let p = ns.find_pid(pid).ok_or(Errno::ESRCH)?;
                    pid_task(&p).ok_or(Errno::ESRCH)?
                };
                if !target.leader {
                    return Err(Errno::EINVAL);
                }
                let same = Arc::ptr_eq(&target.group, &me.group);
                let (t_parent, t_session, t_pgrp) = {
                    let st = target.group.sig.lock();
                    (
                        st.real_parent.upgrade(),
                        st.session.clone(),
                        st.pgrp.clone(),
                    )
                };
                let my_session = me.group.sig.lock().session.clone();
                if !same {
                    let is_child = t_parent.is_some_and(|p| Arc::ptr_eq(&p.group, &me.group));
                    if !is_child {
                        return Err(Errno::ESRCH);
                    }
                    if !Arc::ptr_eq(&t_session, &my_session) {
                        return Err(Errno::EPERM);
                    }
                }
                if Arc::ptr_eq(&t_session, &target.pid) {
                    return Err(Errno::EPERM);
                }
                let new_pgrp = if pgid == 0 || pgid == target.pid.nr_in(&ns) {
                    target.pid.clone()
                } else {
                    let p = ns.find_pid(pgid).ok_or(Errno::EPERM)?;
                    if !tl.is_pgrp(&p) || !pgrp_in_session(&sys, &p, &my_session) {
                        return Err(Errno::EPERM);
                    }
                    p
                };
                if Arc::ptr_eq(&new_pgrp, &t_pgrp) {
                    return Ok(());
                }
                tl.get_pgrp(&new_pgrp);
                target.group.sig.lock().pgrp = new_pgrp;
                tl.put_pgrp(&t_pgrp, &mut free);
                Ok(())
            })();
            free.free_if_locked_profile(sys.cfg.profile);
            r
        };
        free.free();
        sys.process_zaps();
        result
    }

    /// [setsid(2)](https://man7.org/linux/man-pages/man2/setsid.2.html): the caller's
    /// process becomes leader of a new session and process group; returns the session
    /// id. EPERM if a process group with the caller's id already exists (the caller is
    /// a process-group leader); ESRCH if the caller was reaped.
    ///
    /// # References
    /// `ksys_setsid` in `kernel/sys.c`.
    pub fn setsid(&self) -> Result<i32, Errno> {
        let sys = self.0.sys().ok_or(Errno::ESRCH)?;
        let me = self.0.leader_task().unwrap_or_else(|| self.0.clone());
        let mut free = FreeList::default();
        let result = {
            let mut tl = sys.tasklist_lock.write();
            let r = if let Err(e) = released_caller_is_esrch(&self.0) {
                Err(e)
            } else if tl.is_pgrp(&me.pid) {
                Err(Errno::EPERM)
            } else {
                let sid = me.pid.clone();
                tl.get_pgrp(&sid);
                tl.get_session(&sid);
                let (old_pgrp, old_session) = {
                    let mut st = me.group.sig.lock();
                    let op = std::mem::replace(&mut st.pgrp, sid.clone());
                    let os = std::mem::replace(&mut st.session, sid.clone());
                    (op, os)
                };
                tl.put_pgrp(&old_pgrp, &mut free);
                tl.put_session(&old_session, &mut free);
                Ok(sid.nr_in(self.0.active_ns()))
            };
            free.free_if_locked_profile(sys.cfg.profile);
            r
        };
        free.free();
        sys.process_zaps();
        result
    }

    /// [getpgid(2)](https://man7.org/linux/man-pages/man2/getpgid.2.html) of the
    /// caller, in its namespace (0 if the group's pid is invisible there).
    pub fn getpgid(&self) -> i32 {
        let p = self.0.group.sig.lock().pgrp.clone();
        p.nr_in(self.0.active_ns())
    }

    /// [getsid(2)](https://man7.org/linux/man-pages/man2/getsid.2.html) of the caller.
    pub fn getsid(&self) -> i32 {
        let p = self.0.group.sig.lock().session.clone();
        p.nr_in(self.0.active_ns())
    }
}

/// ESRCH if `caller` was released (reaped): its process group and session uses were
/// already dropped by `release_task`, so changing them again would undo them twice.
/// The caller holds `tasklist_lock` (write): `release_task` sets `released` before it
/// takes the lock to drop the uses, so under the lock either the flag is visible or the
/// release will drop whatever this call installs.
fn released_caller_is_esrch(caller: &TaskInner) -> Result<(), Errno> {
    if caller.released.load(Ordering::SeqCst) {
        return Err(Errno::ESRCH);
    }
    Ok(())
}

/// Whether some process with pgrp `pgrp` is in `session`. The caller holds
/// `tasklist_lock`; slow path (walks every task).
fn pgrp_in_session(sys: &System, pgrp: &Arc<Pid>, session: &Arc<Pid>) -> bool {
    sys.root_ns
        .pids()
        .iter()
        .filter_map(|p| pid_task(p))
        .any(|t| {
            let st = t.group.sig.lock();
            t.leader && Arc::ptr_eq(&st.pgrp, pgrp) && Arc::ptr_eq(&st.session, session)
        })
}
