//! `waitid(2)`: `do_wait`, `wait_consider_task`, `wait_task_zombie`,
//! `wait_task_stopped`, `wait_task_continued`.
//!
//! A waiter never takes `tasklist_lock`: it scans its own group's children list under
//! the group's `children` lock (the list, a leader child's `exit_state` and its
//! `real_parent` only change with that lock held), reads each child's lock-free `exit_state` and stop/continue
//! reports, claims a zombie (ZOMBIE -> DEAD, decided by that lock), and reaps it after dropping the
//! lock. With nothing ready it sleeps on `wait_chldexit` (`ThreadGroup::sleep_on_children`),
//! which every state change of a child signals while holding the same lock
//! (`ThreadGroup::notify_waiters`): no lost wakeup, no polling.
//!
//! The list is the process's, in fork order; Linux keeps one per thread and walks the
//! caller's first. A process with several threads scans in that order (`wait_order`:
//! the children sorted by their parent thread's place in the walk), so which of
//! several ready children a wait reports is Linux's; one thread scans as is.

use crate::exit::{claim, release_claimed_child, release_task};
use crate::sync::Ordering;
use crate::task::{Children, DEAD, DELAYED, RUNNING, Task, TaskInner, ZOMBIE};
use std::sync::Arc;
use uproc_abi::{Errno, Signal, WaitOptions, WaitStatus};
use uproc_pidfs::PidFd;
use uproc_pidns::Pid;

/// Which children a wait considers (`idtype` + `id` of waitid).
#[derive(Clone, Copy, Debug)]
pub enum WaitId<'a> {
    /// `P_ALL`: any child.
    All,
    /// `P_PID`: the child with this pid (in the caller's namespace); `<= 0` is EINVAL.
    Pid(i32),
    /// `P_PGID`: any child in this process group; 0 is the caller's; `< 0` is EINVAL.
    Pgid(i32),
    /// `P_PIDFD`: the child this pidfd refers to. A `NONBLOCK` pidfd makes the wait
    /// non-blocking and "nothing ready" EAGAIN.
    PidFd(&'a PidFd),
}

/// `si_code` of a `waitid` result (`CLD_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChildCode {
    /// `CLD_EXITED`.
    Exited,
    /// `CLD_KILLED`.
    Killed,
    /// `CLD_DUMPED`.
    Dumped,
    /// `CLD_STOPPED`.
    Stopped,
    /// `CLD_CONTINUED`.
    Continued,
}

/// What a wait reports (`siginfo_t` of waitid, plus the wait4 status word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitInfo {
    /// `si_pid`: the child's pid in the waiter's namespace.
    pub pid: i32,
    /// `si_uid` (always 0: uproc models no credentials).
    pub uid: u32,
    /// The wait4 status word.
    pub status: WaitStatus,
    /// `si_code`.
    pub code: ChildCode,
}

enum Target<'a> {
    All,
    /// `P_PID` by number: the child whose pid reads `n` in the waiter's namespace.
    /// Matched on the children's own numbers instead of a `find_pid` lookup: a child
    /// on the list keeps its numbers (they are freed only after `release_task` took
    /// it off), so the two agree, and the wait reads no namespace-wide lock.
    Nr(i32),
    /// The child with this `struct pid`, borrowed from the caller's pidfd or child
    /// handle (no count taken and dropped per wait).
    Pid(&'a Arc<Pid>),
    /// A by-number target pinned before sleeping (see [`Task::wait`]).
    PinnedPid(Arc<Pid>),
    Pgrp(Arc<Pid>),
}

enum Scan {
    /// Claimed the zombie at this index of the list: release it, then report. (An
    /// index, not a handle: the reap takes the list's own reference out of the list,
    /// with no count taken and dropped and no second search.)
    Reap(usize, WaitInfo),
    Report(WaitInfo),
    NotReady,
    NoChild,
}

fn code_of(status: WaitStatus) -> ChildCode {
    if status.core_dumped() {
        ChildCode::Dumped
    } else if status.is_signaled() {
        ChildCode::Killed
    } else {
        ChildCode::Exited
    }
}

const VALID: WaitOptions = WaitOptions::NOHANG
    .union(WaitOptions::NOWAIT)
    .union(WaitOptions::EXITED)
    .union(WaitOptions::STOPPED)
    .union(WaitOptions::CONTINUED)
    .union(WaitOptions::NOTHREAD)
    .union(WaitOptions::CLONE)
    .union(WaitOptions::ALL);

impl Task {
    /// `waitid(2)`: wait for a child to exit, stop or continue.
    ///
    /// Errors: EINVAL for unknown options, none of `EXITED|STOPPED|CONTINUED`,
    /// `Pid(<= 0)`, `Pgid(< 0)` or a pidfd of another runtime; ECHILD when no child matches (a pid that is not a
    /// child, a pidfd of a non-child); EAGAIN through a `NONBLOCK` pidfd when nothing
    /// is ready (unless `NOHANG` was passed, then `Ok(None)`); EINTR when a fatal
    /// signal becomes pending on the waiter (or it exits) while it sleeps. `NOHANG`
    /// with nothing ready returns `Ok(None)`; `NOWAIT` leaves the child waitable; a
    /// stop and a continue are each reported once. Threads of a group wait for each
    /// other's children unless `NOTHREAD`. Reaping a zombie releases it
    /// (`release_task`).
    ///
    /// # References
    /// [wait(2)](https://man7.org/linux/man-pages/man2/wait.2.html), `do_wait` in
    /// `kernel/exit.c`.
    pub fn wait(&self, which: WaitId<'_>, opts: WaitOptions) -> Result<Option<WaitInfo>, Errno> {
        check_options(opts)?;
        let mut nohang = opts.contains(WaitOptions::NOHANG);
        let mut eagain = false;
        let target = match which {
            WaitId::All => Target::All,
            WaitId::Pid(n) => {
                if n <= 0 {
                    return Err(Errno::EINVAL);
                }
                Target::Nr(n)
            }
            WaitId::Pgid(n) => {
                if n < 0 {
                    return Err(Errno::EINVAL);
                }
                if n == 0 {
                    Target::Pgrp(self.0.group().sig.lock().pgrp().ok_or(Errno::ECHILD)?)
                } else {
                    Target::Pgrp(self.0.active_ns().find_pid(n).ok_or(Errno::ECHILD)?)
                }
            }
            WaitId::PidFd(fd) => {
                // A pidfd of another runtime is no pidfd here.
                if !Arc::ptr_eq(fd.pid().ns().map(), self.0.active_ns().map()) {
                    return Err(Errno::EINVAL);
                }
                if fd.is_nonblocking() {
                    eagain = !nohang;
                    nohang = true;
                }
                Target::Pid(fd.pid())
            }
        };
        self.wait_for(target, opts, nohang, eagain)
    }

    /// `waitid(P_PIDFD)` for `child` without a pidfd: the wait names the child by its
    /// task object (its `struct pid`), never by a number that may have been recycled,
    /// exactly as a pidfd of it would, for a holder of the child's [`Task`] handle (a
    /// runtime's child handle) that needs no pidfd otherwise. Options, errors and the
    /// reap are [`wait`](Task::wait)'s; ECHILD if `child` is not (or no longer) a child
    /// of this task's group, EINVAL if it belongs to another runtime.
    pub fn wait_task(&self, child: &Task, opts: WaitOptions) -> Result<Option<WaitInfo>, Errno> {
        check_options(opts)?;
        if !Arc::ptr_eq(child.0.pid.ns().map(), self.0.active_ns().map()) {
            return Err(Errno::EINVAL);
        }
        let target = Target::Pid(&child.0.pid);
        self.wait_for(target, opts, opts.contains(WaitOptions::NOHANG), false)
    }

    /// The body of [`wait`](Task::wait) once the target is resolved: scan, claim and
    /// reap, or sleep on the group's `wait_chldexit` queue.
    fn wait_for(
        &self,
        mut target: Target<'_>,
        opts: WaitOptions,
        nohang: bool,
        eagain: bool,
    ) -> Result<Option<WaitInfo>, Errno> {
        let ns = self.0.active_ns();
        // `Linux*`: the runtime for the reap's `tasklist_lock`; `Scalable`: nothing.
        let sys = self.0.hot_sys().map_err(|_| Errno::ECHILD)?;
        let g = self.0.group();
        let mut guard = g.children.lock();
        loop {
            match scan(&self.0, ns, &guard, &target, opts) {
                Scan::Reap(i, info) => {
                    match sys.as_deref() {
                        // `Scalable`: unlinked in the same hold of the list's lock.
                        None => release_claimed_child(i, guard),
                        // `Linux*`: `tasklist_lock` comes first, so the list's lock is
                        // dropped and taken again inside it.
                        Some(sys) => {
                            let child = guard.list[i].0.clone();
                            drop(guard);
                            release_task(Some(sys), &child);
                        }
                    }
                    return Ok(Some(info));
                }
                Scan::Report(info) => return Ok(Some(info)),
                Scan::NoChild => return Err(Errno::ECHILD),
                Scan::NotReady => {}
            }
            if nohang {
                return if eagain { Err(Errno::EAGAIN) } else { Ok(None) };
            }
            // Rule 3: the siglock nests inside the children lock.
            if self.0.exiting.load(Ordering::Acquire) || self.0.fatal_signal_pending() {
                return Err(Errno::EINTR);
            }
            // Before sleeping, pin a by-number target to the child's `Pid`, as Linux's
            // `do_wait` holds `find_get_pid(n)` for the whole wait: a number recycled
            // by a new child while this waiter sleeps must not match.
            if let Target::Nr(n) = target {
                if let Some(c) = guard.list.iter().find(|c| c.0.pid.nr_in(ns) == n) {
                    target = Target::PinnedPid(Arc::clone(&c.0.pid));
                }
            }
            g.sleep_on_children(&mut guard, &self.0);
        }
    }
}

/// The option checks of `waitid`: unknown bits, or none of `EXITED|STOPPED|CONTINUED`,
/// are EINVAL.
fn check_options(opts: WaitOptions) -> Result<(), Errno> {
    if opts.bits() & !VALID.bits() != 0
        || !opts.intersects(WaitOptions::EXITED | WaitOptions::STOPPED | WaitOptions::CONTINUED)
    {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// `wait_consider_task` over the children list. The caller holds the group's
/// `children` lock; `ns` is the caller's active namespace (the one whose numbers the
/// wait reports).
#[inline]
fn scan(
    me: &Arc<TaskInner>,
    ns: &uproc_pidns::PidNamespace,
    children: &Children,
    target: &Target<'_>,
    opts: WaitOptions,
) -> Scan {
    let mut eligible = false;
    if let Some(order) = wait_order(me, children, opts) {
        for i in order {
            if let Some(found) = consider_child(me, ns, children, i, target, opts, &mut eligible) {
                return found;
            }
        }
    } else {
        // One live thread (the common case): every child is the caller's, fork order.
        for i in 0..children.list.len() {
            if let Some(found) = consider_child(me, ns, children, i, target, opts, &mut eligible) {
                return found;
            }
        }
    }
    if eligible {
        Scan::NotReady
    } else {
        Scan::NoChild
    }
}

/// The order `__do_wait` meets the children of a process with several threads in:
/// each thread has its own children list in Linux, and the wait walks the caller's
/// first, then every other thread's in thread-list order from the caller on
/// (`do_wait_thread` ... `while_each_thread(current, tsk)`), each in its own order:
/// the thread's forks and the children handed to it, each appended when it came. Here
/// the process has one list in that order (a child handed on by an exiting thread
/// moves to its end, `pass_to_live_thread`), and a child's `real_parent` says whose it
/// is: the indices of the list sorted (stably) by that thread's place in the walk. `None` when
/// the caller is the process's only thread (no reordering) or `__WNOTHREAD` limits the
/// wait to the caller's children anyway.
#[inline]
fn wait_order(me: &Arc<TaskInner>, children: &Children, opts: WaitOptions) -> Option<Vec<usize>> {
    if opts.contains(WaitOptions::NOTHREAD) || children.list.len() < 2 {
        return None;
    }
    threads_wait_order(me, children)
}

/// [`wait_order`] past its quick checks: the caller's process has two children or
/// more (the siglock tells whether it has threads).
#[cold]
#[inline(never)]
fn threads_wait_order(me: &Arc<TaskInner>, children: &Children) -> Option<Vec<usize>> {
    // Rule 3: the siglock nests inside the children lock.
    let threads: Vec<*const TaskInner> = {
        let st = me.group().sig.lock();
        if st.threads.is_empty() {
            return None;
        }
        let leader = st.leader().as_ptr();
        std::iter::once(leader)
            .chain(st.threads.iter().map(std::sync::Weak::as_ptr))
            .collect()
    };
    let mine = threads
        .iter()
        .position(|&t| std::ptr::eq(t, Arc::as_ptr(me)))?;
    // The walk's place of a child's parent thread: 0 for the caller, then on around
    // the thread list; a parent no longer listed comes last.
    let place = |c: &Task| {
        let parent = c.0.group().sig.lock().real_parent.as_ptr();
        threads
            .iter()
            .position(|&t| std::ptr::eq(t, parent))
            .map_or(threads.len(), |p| {
                (p + threads.len() - mine) % threads.len()
            })
    };
    let mut order: Vec<(usize, usize)> = children
        .list
        .iter()
        .enumerate()
        .map(|(i, c)| (place(c), i))
        .collect();
    order.sort_unstable();
    Some(order.into_iter().map(|(_, i)| i).collect())
}

/// `wait_consider_task` for the child at `i`: what the wait returns if it is ready,
/// `None` to go on (with `eligible` set when it is a child this wait may report).
#[inline(always)]
fn consider_child(
    me: &Arc<TaskInner>,
    ns: &uproc_pidns::PidNamespace,
    children: &Children,
    i: usize,
    target: &Target<'_>,
    opts: WaitOptions,
    eligible: &mut bool,
) -> Option<Scan> {
    let ci = &children.list[i].0;
    // The child's number in the waiter's namespace when the match already read it
    // (a by-number wait reports the number it matched).
    let nr_seen = match target {
        Target::All => None,
        Target::Nr(n) if ci.pid.nr_in(ns) == *n => Some(*n),
        Target::Pid(p) if Arc::ptr_eq(&ci.pid, p) => None,
        Target::PinnedPid(p) if Arc::ptr_eq(&ci.pid, p) => None,
        Target::Pgrp(p) if ci.group().sig.lock().in_pgrp(p) => None,
        Target::Nr(_) | Target::Pid(_) | Target::PinnedPid(_) | Target::Pgrp(_) => {
            return None;
        }
    };
    if opts.contains(WaitOptions::NOTHREAD)
        && !std::ptr::eq(ci.group().sig.lock().real_parent.as_ptr(), Arc::as_ptr(me))
    {
        return None;
    }
    // eligible_child: __WALL, or "clone child" (exit signal other than SIGCHLD)
    // exactly when __WCLONE.
    let clone_child = ci.exit_signal.load(Ordering::Acquire) != Signal::CHLD.raw();
    if !opts.contains(WaitOptions::ALL) && clone_child != opts.contains(WaitOptions::CLONE) {
        return None;
    }
    let state = ci.exit_state.load(Ordering::Acquire);
    match state {
        DEAD => return None,
        ZOMBIE => {
            if !opts.contains(WaitOptions::EXITED) {
                return None; // wait_task_zombie returns 0 without clearing ECHILD
            }
            *eligible = true;
            let status = ci.exit_status();
            let info = WaitInfo {
                pid: nr_seen.unwrap_or_else(|| ci.pid.nr_in(ns)),
                uid: 0,
                status,
                code: code_of(status),
            };
            if opts.contains(WaitOptions::NOWAIT) {
                return Some(Scan::Report(info));
            }
            if claim(ci, children) {
                return Some(Scan::Reap(i, info));
            }
        }
        // A leader held back by live threads (`delay_group_leader`) is not reaped,
        // but its group's stop and continue are reported through it, as through a
        // running leader (`wait_consider_task` falls through to
        // `wait_task_stopped` / `wait_task_continued`, which read the group).
        RUNNING | DELAYED => {
            *eligible = true;
            let pid = nr_seen.unwrap_or_else(|| ci.pid.nr_in(ns));
            if opts.contains(WaitOptions::STOPPED) {
                let nowait = opts.contains(WaitOptions::NOWAIT);
                let sig = if nowait {
                    ci.group().stop_report.load(Ordering::Acquire)
                } else {
                    ci.group().stop_report.swap(0, Ordering::AcqRel)
                };
                if let Ok(sig) = Signal::new(sig) {
                    if !sig.is_probe() {
                        return Some(Scan::Report(WaitInfo {
                            pid,
                            uid: 0,
                            status: WaitStatus::stopped_by(sig),
                            code: ChildCode::Stopped,
                        }));
                    }
                }
            }
            if opts.contains(WaitOptions::CONTINUED) {
                let nowait = opts.contains(WaitOptions::NOWAIT);
                let cont = if nowait {
                    ci.group().cont_report.load(Ordering::Acquire)
                } else {
                    ci.group().cont_report.swap(false, Ordering::AcqRel)
                };
                if cont {
                    return Some(Scan::Report(WaitInfo {
                        pid,
                        uid: 0,
                        status: WaitStatus::CONTINUED,
                        code: ChildCode::Continued,
                    }));
                }
            }
        }
        _ => {}
    }
    None
}
