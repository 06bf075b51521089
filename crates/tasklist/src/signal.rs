//! Signals: `kill(2)`, `tgkill(2)`, delivery to a thread or a thread group, the
//! SIGCHLD disposition, and the stop/continue state changes the parent's wait sees.
//!
//! uproc models no handlers: every signal takes its default action, except that a
//! managed task (one with a signal hook) turns fatal signals into pending ones and lets
//! its runtime decide when the body ends, and that SIGCHLD is queued to a parent whose
//! disposition is not [`SigChld::Ignore`] (as if a handler were installed).
//!
//! A signal takes effect when it is sent (no target dequeues it), so the rules Linux
//! applies when a thread dequeues a signal apply at the send, in [`decide`]:
//!
//! - SIGTSTP, SIGTTIN and SIGTTOU to a process whose process group is orphaned are
//!   discarded (`get_signal` with `is_current_pgrp_orphaned`); SIGSTOP still stops.
//!   See [`crate::pgrp::pgrp_orphaned`] for the test and its locks.
//! - A thread-directed signal (`tgkill`, a thread-scoped pidfd) to an exiting thread,
//!   such as a leader that exited while its other threads run, does nothing and is
//!   not left pending: no group exit, no group stop (`complete_signal`: `wants_signal`
//!   is false for a `PF_EXITING` thread, and a `PIDTYPE_PID` signal is never handed
//!   to another thread; Linux 6.18's `/proc` shows nothing pending). What
//!   `prepare_signal` does at the send still happens: SIGCONT continues a stopped
//!   group, a stop signal drops a pending SIGCONT. A group-directed signal
//!   (`kill(tgid)`) picks a live thread as before.
//! - A stopped group takes nothing but SIGKILL and SIGCONT (`wants_signal`): any other
//!   signal with an action stays queued, a stop signal until SIGCONT flushes it (of an
//!   orphaned process group too: the orphan rule applies at a dequeue), a fatal one
//!   until SIGCONT lets it act.
//!
//! Group signals (`kill(-1)`, `kill(-pgid)`, [`signal_groups`]) are one step against
//! forks, as Linux's walk under `tasklist_lock` is: every process that existed when the
//! call was made gets the signal, and a child forked meanwhile either gets it too or
//! was forked after the call (for a fatal signal: its fork failed with EINTR). Under
//! `Linux*` the read lock over the walk gives that; under `Scalable` the walk repeats
//! until it finds nothing new, and a fork that attached while the call was in flight
//! does not return before the call's walks end (`group_kill.rs`), so that a fork bomb
//! cannot keep ahead of the walks.

use crate::sync::Ordering;
use crate::system::System;
use crate::task::{GroupState, Managed, Task, TaskInner, ThreadGroup, pid_task};
use std::collections::HashSet;
use std::sync::Arc;
use uproc_abi::{DefaultAction, Errno, SIGRTMAX, Signal, WaitStatus};
use uproc_pidns::{Pid, PidNamespace};

/// The SIGCHLD disposition of a process.
///
/// # References
/// [sigaction(2)](https://man7.org/linux/man-pages/man2/sigaction.2.html) `SA_NOCLDWAIT`,
/// [wait(2)](https://man7.org/linux/man-pages/man2/wait.2.html) NOTES.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SigChld {
    /// Children become zombies until waited for; SIGCHLD is queued.
    #[default]
    Default,
    /// `SIG_IGN`: children are reaped at exit, SIGCHLD is not queued.
    Ignore,
    /// `SA_NOCLDWAIT`: children are reaped at exit; SIGCHLD is still queued.
    NoCldWait,
}

/// The sender of a signal, for the namespace-init rule (`send_signal_locked`'s
/// `force`: SIGKILL/SIGSTOP reach an init only from an ancestor namespace).
#[derive(Clone, Copy)]
pub(crate) enum Sender<'a> {
    /// The runtime itself (cgroup.kill, a zap, a raced fork's child): from outside
    /// every namespace.
    Runtime,
    /// A task (`kill`, `tgkill`, an exit signal to the parent).
    Task(&'a TaskInner),
    /// Some task of this namespace: a pidfd's sender, which is known by the
    /// namespace the pidfd was opened in.
    InNamespace(&'a PidNamespace),
}

/// `sig_task_ignored` for `SIGNAL_UNKILLABLE`: whether a namespace init drops `sig`.
/// It drops every default-action signal sent from inside its namespace, and all but
/// SIGKILL/SIGSTOP from an ancestor namespace (`force`). SIGCONT still continues it.
fn init_ignores(target: &TaskInner, sig: Signal, sender: Sender<'_>) -> bool {
    if sig == Signal::CONT || sig == Signal::CHLD {
        return false;
    }
    // The runtime init has no outside: nothing can force a signal on it.
    let force = target.active_ns().level() > 0
        && match sender {
            Sender::Runtime => true,
            Sender::Task(s) => s.pid.nr_in(target.active_ns()) == 0,
            // A task of `ns` has a number in the target's namespace exactly when that
            // namespace is `ns` or one of its ancestors.
            Sender::InNamespace(ns) => !target.active_ns().is_same_or_ancestor_of(ns),
        };
    !(force && sig.is_unblockable())
}

/// What delivery decided, acted on after the siglock is dropped.
enum Outcome {
    Nothing,
    /// The group stopped: notify the parent (`CLD_STOPPED`).
    Stopped,
    /// The group continued: notify the parent (`CLD_CONTINUED`).
    Continued,
    /// The group continued with a fatal signal pending that it could not take while
    /// stopped: notify the parent, then die of it.
    ContinuedToDie {
        sig: Signal,
        status: WaitStatus,
    },
    /// A fatal signal: call these hooks, end these bare threads.
    Fatal {
        sig: Signal,
        status: WaitStatus,
    },
    /// SIGKILL to a group already dying: call the managed threads' hooks with it
    /// (`hooks`: the first SIGKILL after another fatal signal), and end the bare
    /// threads still running (threads made bare by `set_signal_hook(None)` after the
    /// fatal signal found them managed) with the group's status.
    ForceKill {
        hooks: bool,
    },
}

/// Sends `sig` to the thread group of `t` (`group_send_sig_info`). A zombie or an
/// exiting group succeeds silently.
pub(crate) fn send_group(t: &Arc<TaskInner>, sig: Signal, sender: Sender<'_>) -> Result<(), Errno> {
    deliver(t, sig, sender, false)
}

/// Sends `sig` to the thread `t` (`send_sig_info` / `do_tkill`): a non-fatal signal is
/// queued on that thread only; stop, continue and fatal signals act on the whole group
/// as Linux's default actions do, except that a thread already exiting (a leader that
/// exited while its threads run) only gets the signal queued on its own set: SIGCONT
/// still continues its group, nothing else acts (`complete_signal`).
pub(crate) fn send_thread(
    t: &Arc<TaskInner>,
    sig: Signal,
    sender: Sender<'_>,
) -> Result<(), Errno> {
    deliver(t, sig, sender, true)
}

fn deliver(t: &Arc<TaskInner>, sig: Signal, sender: Sender<'_>, thread: bool) -> Result<(), Errno> {
    let outcome = if is_tty_stop(sig) {
        // The orphaned-group test walks the process group: `tasklist_lock` (read)
        // first, as `is_current_pgrp_orphaned` and `kill(-pgid)` take it, held over the
        // decision so that no setpgid/setsid moves a member in between. The caller
        // holds no lock of this crate (rule 1). Never on the fork/exit path.
        let sys = t.sys();
        let _r = sys.as_deref().map(|s| s.tasklist_lock.read());
        let orphaned = sys.as_deref().is_some_and(|s| target_pgrp_orphaned(s, t));
        decide(t, sig, sender, thread, orphaned)
    } else {
        decide(t, sig, sender, thread, false)
    };
    act(t, outcome);
    Ok(())
}

/// `sig_kernel_stop(sig) && sig != SIGSTOP`: the job-control stop signals that
/// `get_signal` discards for an orphaned process group.
fn is_tty_stop(sig: Signal) -> bool {
    sig == Signal::TSTP || sig == Signal::TTIN || sig == Signal::TTOU
}

/// `SIG_KERNEL_STOP_MASK`: the signals whose default action stops the group.
const KERNEL_STOP_MASK: u64 =
    Signal::STOP.mask() | Signal::TSTP.mask() | Signal::TTIN.mask() | Signal::TTOU.mask();

/// Whether the process group of `t`'s process is orphaned
/// ([`crate::pgrp::pgrp_orphaned`]); false for a released process (no group). The
/// caller holds `tasklist_lock` (read) and no other lock of this crate.
fn target_pgrp_orphaned(sys: &System, t: &TaskInner) -> bool {
    let pgrp = t.group().sig.lock().pgrp();
    pgrp.is_some_and(|pg| crate::pgrp::pgrp_orphaned(sys, &pg, None))
}

/// The siglock half of a delivery (`prepare_signal` + the state changes of
/// `complete_signal`, and `get_signal`'s choice for what a thread would dequeue):
/// queue the signal and mark the group stopped, continued or dying (`group_exit`,
/// which fails every later fork of the group with EINTR). Takes only the group's
/// siglock, so a caller may hold `tasklist_lock` (read) around it; the rest ([`act`])
/// runs with no lock held.
///
/// `orphaned`: the group's process group is orphaned ([`crate::pgrp::pgrp_orphaned`],
/// asked by the caller before this siglock, for SIGTSTP/SIGTTIN/SIGTTOU only): those
/// are then discarded instead of stopping the group, unless it is stopped already (then
/// queued, as every stop signal to a stopped group is). A thread-directed signal
/// (`thread`) to an exiting thread does nothing (see the module docs).
///
/// # References
/// `prepare_signal`, `complete_signal`, `wants_signal` and `get_signal` in
/// `kernel/signal.c`.
fn decide(
    t: &Arc<TaskInner>,
    sig: Signal,
    sender: Sender<'_>,
    thread: bool,
    orphaned: bool,
) -> Outcome {
    if sig.is_probe() {
        return Outcome::Nothing;
    }
    tracing::debug!(target_pid = t.pid.numbers()[0].nr, sig = sig.raw(), "kill");
    let g = t.group();
    {
        let mut st = g.sig.lock();
        if st.nr_live == 0 {
            return Outcome::Nothing; // a zombie
        }
        if st.group_exit.is_some()
            && core_unacted(&st)
            && !(thread && t.exiting.load(Ordering::Acquire))
        {
            uproc_abi::hint::cold_path();
            if let Some(o) = after_unacted_core(t, &mut st, sig, sender, thread) {
                return o;
            }
        }
        if st.group_exit.is_some() {
            // A group already dying: nothing more to do in Linux, where it dies at
            // once. A managed task's body ends cooperatively, though, on a request
            // (another fatal signal) that it may not heed: the first SIGKILL sent
            // after it is what forces the end, so the hooks hear it too (the status
            // stays the first fatal signal's, as in Linux, unless that was a Core
            // signal: below).
            if sig == Signal::KILL {
                // A Core signal starts no group exit in Linux until it is dequeued and
                // dumped: a SIGKILL that comes first (or during the dump) is what the
                // group dies of, without a core (measured on Linux 6.18: SIGQUIT then
                // SIGKILL to a process that dequeued nothing reports "killed by 9").
                if st
                    .group_exit
                    .and_then(|s| s.signaled())
                    .is_some_and(Signal::dumps_core)
                {
                    st.group_exit = Some(WaitStatus::signaled_by(Signal::KILL, false));
                    // The group exit SIGKILL starts is final: nothing is dequeued now.
                    st.exit_flags &= !crate::task::DEQUEUE_PENDING;
                }
                let hooks = st.exit_flags & crate::task::KILL_FORCED == 0
                    && !st.shared_pending.contains(sig);
                if hooks {
                    st.exit_flags |= crate::task::KILL_FORCED;
                }
                // A bare thread takes a fatal signal at once; one made bare after
                // the group's fatal signal found it managed takes this one.
                let bare_left = ThreadGroup::live_threads(&st)
                    .any(|th| th.started.load(Ordering::Acquire) && th.is_bare());
                if hooks || bare_left {
                    return Outcome::ForceKill { hooks };
                }
            }
            return Outcome::Nothing;
        }
        if st.unkillable && init_ignores(t, sig, sender) {
            return Outcome::Nothing;
        }
        // `complete_signal`: `wants_signal` is false for a `PF_EXITING` thread, and a
        // thread-directed signal (`PIDTYPE_PID`) goes to no other thread: nothing acts,
        // and nothing is left to see either (measured on Linux 6.18: after tgkill of
        // SIGUSR1, SIGTERM, SIGSTOP or SIGKILL to a zombie leader with a live thread,
        // `/proc/PID/task/*/status` shows SigPnd and ShdPnd empty and the thread runs
        // on). Only SIGCONT's side effects remain (`prepare_signal`, below). (`exiting`
        // is set by `do_exit` before its siglock hold, so under this siglock a thread
        // still counted in `nr_live` may read as exiting: Linux's `PF_EXITING` is set
        // before `signal->live` drops too.)
        let exiting_target = thread && t.exiting.load(Ordering::Acquire);
        match sig.default_action() {
            DefaultAction::Ignore => {
                if sig == Signal::CHLD && st.sigchld != SigChld::Ignore && !exiting_target {
                    queue(t, &mut st, sig, thread);
                }
                Outcome::Nothing
            }
            DefaultAction::Cont => {
                // `prepare_signal`: flush the stop signals from the group's set and from
                // every thread's own (an exiting thread's may hold queued ones), and
                // continue the group whichever thread was named.
                ThreadGroup::flush_pending(&mut st, KERNEL_STOP_MASK);
                if st.stopped {
                    st.set_stopped(false);
                    g.stop_report.store(0, Ordering::Release);
                    g.cont_report.store(true, Ordering::Release);
                    // The woken threads dequeue what waited for them (`get_signal`).
                    match pending_fatal(&st) {
                        Some(sig) => {
                            let status =
                                WaitStatus::signaled_by(sig, t.dumps_core() && sig.dumps_core());
                            st.group_exit = Some(status);
                            // The parent is still notified of the continue (SIGCHLD,
                            // `get_signal`'s CLD_CONTINUED before it dequeues the fatal
                            // signal); the group exit that follows clears the report.
                            g.end_job_control(&mut st);
                            Outcome::ContinuedToDie { sig, status }
                        }
                        None => Outcome::Continued,
                    }
                } else {
                    Outcome::Nothing
                }
            }
            DefaultAction::Stop => {
                // `prepare_signal`: a stop signal drops a pending SIGCONT at the send.
                st.shared_pending.remove(Signal::CONT);
                if exiting_target {
                    return Outcome::Nothing;
                }
                if st.stopped {
                    // A stopped thread dequeues nothing (`wants_signal`): the stop
                    // signal stays queued until SIGCONT flushes it (measured on Linux
                    // 6.18: ShdPnd shows SIGSTOP and SIGTSTP sent to a stopped process,
                    // of an orphaned process group too, and is empty after SIGCONT).
                    queue(t, &mut st, sig, thread);
                    return Outcome::Nothing;
                }
                if orphaned && sig != Signal::STOP {
                    // `get_signal`: a job-control stop with the default action, for a
                    // process of an orphaned process group, is discarded when it is
                    // dequeued (a running thread dequeues it at once).
                    Outcome::Nothing
                } else {
                    st.set_stopped(true);
                    g.cont_report.store(false, Ordering::Release);
                    g.stop_report.store(sig.raw(), Ordering::Release);
                    Outcome::Stopped
                }
            }
            DefaultAction::Term | DefaultAction::Core if exiting_target => {
                // Not even SIGKILL completes: no group exit from a thread that is
                // already on its way out.
                Outcome::Nothing
            }
            DefaultAction::Term | DefaultAction::Core if st.stopped && sig != Signal::KILL => {
                // `wants_signal`: a stopped thread takes nothing but SIGKILL. The signal
                // stays queued and the group stopped; SIGCONT lets it act.
                queue(t, &mut st, sig, thread);
                Outcome::Nothing
            }
            DefaultAction::Term | DefaultAction::Core => {
                let status = WaitStatus::signaled_by(sig, t.dumps_core() && sig.dumps_core());
                st.group_exit = Some(status);
                if sig.dumps_core() {
                    // No group exit until a thread dequeues it in Linux: the signal
                    // waits in the set it was sent to, and a fatal signal sent
                    // meanwhile may be dequeued first (`after_unacted_core`).
                    st.exit_flags |= crate::task::DEQUEUE_PENDING;
                    queue(t, &mut st, sig, thread);
                } else if thread {
                    // `tgkill`: the thread's own set, which its exit empties (a
                    // namespace init waiting in its exit shows nothing pending after a
                    // `tgkill`ed SIGKILL, measured on 6.18; one `kill`ed stays in the
                    // shared set). A SIGKILL is told apart from the one every thread
                    // of a dying group gets marked with by `KILL_FORCED`.
                    queue(t, &mut st, sig, true);
                    if sig == Signal::KILL {
                        st.exit_flags |= crate::task::KILL_FORCED;
                    }
                } else {
                    st.shared_pending.insert(sig);
                }
                g.end_job_control(&mut st);
                Outcome::Fatal { sig, status }
            }
        }
    }
}

/// `__send_signal_locked`'s choice of set: `t`'s own for a thread-directed signal, its
/// group's otherwise. The caller holds the group's siglock (`st`).
fn queue(t: &TaskInner, st: &mut GroupState, sig: Signal, thread: bool) {
    if thread {
        t.pending.fetch_or(sig.mask(), Ordering::AcqRel);
    } else {
        st.shared_pending.insert(sig);
    }
}

/// What [`decide`] left to do, with no lock held: notify the parent of a stop or
/// continue, end the threads of a dying group (hooks, bare exits).
fn act(t: &Arc<TaskInner>, outcome: Outcome) {
    match outcome {
        Outcome::Nothing => {}
        Outcome::Stopped => notify_parent_cldstop(t, false),
        Outcome::Continued => notify_parent_cldstop(t, true),
        Outcome::ContinuedToDie { sig, status } => {
            notify_parent_cldstop(t, true);
            complete_fatal(t, sig, status);
        }
        Outcome::Fatal { sig, status } => complete_fatal(t, sig, status),
        Outcome::ForceKill { hooks } => force_kill(t, hooks),
    }
}

/// Signals every group of `targets` as one step against forks: the targets are
/// collected and each group marked (its fate decided under its siglock) with
/// `tasklist_lock` (read) held, as Linux holds it over the whole loop of `kill(-1)` and
/// `__kill_pgrp_info`. Under `Linux*` a fork attaches under the write lock, so its child
/// was either collected, or its parent is already marked and the fork fails with EINTR:
/// no child escapes. The actions run after the lock is dropped. ESRCH if nothing
/// matched.
///
/// `Scalable`'s forks do not take `tasklist_lock`, so the call walks again until a walk
/// finds nothing new, and is a group kill in flight from before its first walk to after
/// its last (`group_kill.rs`):
///
/// - A fork may have passed its "dying?" check before its parent was marked and attach
///   its child after the walk. Such a fork holds its parent group's `children` lock
///   from the check to the attach (a `CLONE_PARENT` fork: its caller's parent's), so
///   after marking, the walk takes each marked target's `children` lock and its
///   parent's once (every such attach has then completed) and collects again: the
///   children found only now are decided too. (A target reparented since had its old
///   parent's list closed after any such attach, and this reads the new parent.)
/// - A fork that attached while the kill was in flight does not return before the kill
///   ends (either the walk after the kill's raise finds the child, or the fork sees the
///   raise and waits). So a child found late cannot have forked yet, and each thread
///   that forks adds at most one child while the kill is in flight: the walks end, with
///   no bound that a fork bomb (each child forking the next) could outrun.
///
/// A child that no walk found attached after the last walk, when every target was
/// already marked: its fork linearises after the call (a doomed parent's fork failed
/// with EINTR; a stop or continue did not reach a child forked after it).
fn signal_groups(
    sys: &System,
    collect: impl Fn() -> Vec<Arc<TaskInner>>,
    sig: Signal,
    sender: Sender<'_>,
) -> Result<(), Errno> {
    // The orphaned-group answers of this call, by process group (the walks hold
    // `tasklist_lock`, read, which the test needs): `kill(-pgid, SIGTSTP)` walks the
    // group once, not once per member.
    let mut orphaned_pgrps: Vec<(Arc<Pid>, bool)> = Vec::new();
    let mut orphaned = |t: &TaskInner| -> bool {
        if !is_tty_stop(sig) {
            return false;
        }
        let Some(pgrp) = t.group().sig.lock().pgrp() else {
            return false;
        };
        if let Some((_, o)) = orphaned_pgrps.iter().find(|(p, _)| Arc::ptr_eq(p, &pgrp)) {
            return *o;
        }
        let o = crate::pgrp::pgrp_orphaned(sys, &pgrp, None);
        orphaned_pgrps.push((pgrp, o));
        o
    };
    let mut decide_all = |targets: Vec<Arc<TaskInner>>| -> Vec<(Arc<TaskInner>, Outcome)> {
        targets
            .into_iter()
            .map(|t| {
                let o = decide(&t, sig, sender, false, orphaned(&t));
                (t, o)
            })
            .collect()
    };
    let scalable = !sys.tasklist_on_hot_path;
    // Raised (with its fence) before the first walk reads a task: see `group_kill.rs`.
    let in_flight = scalable.then(crate::group_kill::begin_group_kill);
    let mut decided = {
        let _r = sys.tasklist_lock.read();
        decide_all(collect())
    };
    if decided.is_empty() {
        return Err(Errno::ESRCH);
    }
    // The groups decided so far, by identity, for the walks to tell what is new.
    let mut seen: HashSet<usize> = decided.iter().map(|(t, _)| task_key(t)).collect();
    let mut barrier_from = 0;
    let mut walks = 0usize;
    while scalable && barrier_from < decided.len() {
        walks += 1;
        // The groups marked last (a late child may itself have been forking). A
        // `CLONE_PARENT` fork of a target holds the target's parent's `children` lock
        // from its check to its attach instead: wait for that one too.
        for (t, _) in &decided[barrier_from..] {
            drop(t.group().children.lock());
            let parent = t.group().sig.lock().real_parent.upgrade();
            if let Some(p) = &parent {
                drop(p.group().children.lock());
            }
        }
        barrier_from = decided.len();
        let late: Vec<Arc<TaskInner>> = {
            let _r = sys.tasklist_lock.read();
            collect()
                .into_iter()
                .filter(|t| seen.insert(task_key(t)))
                .collect()
        };
        decided.extend(decide_all(late));
    }
    // The last walk found nothing new: the forks waiting for this call may return.
    // (Under loom the guard is a stand-in without a drop.)
    #[cfg_attr(loom, allow(clippy::drop_non_drop))]
    drop(in_flight);
    if walks > 2 {
        tracing::debug!(walks, targets = decided.len(), "group kill walked again");
    }
    // One kill walk: every target's fate is acted on (hooks called, stops and
    // continues notified) before any bare one dies, as Linux's victims die after its
    // walk.
    uproc_abi::walk::walk(|| {
        for (t, o) in decided {
            act(&t, o);
        }
    });
    Ok(())
}

/// A task's identity (its address) for the walks' set of decided targets.
fn task_key(t: &Arc<TaskInner>) -> usize {
    Arc::as_ptr(t) as usize
}

/// Whether the group's exit was decided by a core-dumping signal that no thread has
/// acted on yet ([`EXIT_ACTED`](crate::task::EXIT_ACTED): a managed group whose
/// runtime has not ended it, or the victims of a kill walk not yet ended). Linux starts no group exit for a Core
/// signal until a thread dequeues it (`complete_signal`'s fast path leaves
/// `sig_kernel_coredump` signals out), so a fatal signal sent meanwhile still counts.
/// The caller holds the siglock (`st`).
fn core_unacted(st: &GroupState) -> bool {
    st.exit_flags & (crate::task::DEQUEUE_PENDING | crate::task::EXIT_ACTED)
        == crate::task::DEQUEUE_PENDING
}

/// `prepare_signal`'s drop of a signal to a process that is dying
/// (`SIGNAL_GROUP_EXIT`: a fatal signal or `exit_group` decided its exit, or its last
/// thread exited), for the SIGCHLDs its children's exits, stops and continues queue
/// on it directly: a child that dies in the same kill walk as its parent, after it,
/// leaves nothing pending there. A core-dumping signal no thread has acted on yet
/// starts no group exit ([`core_unacted`]). The caller holds the siglock (`st`).
pub(crate) fn drops_signals(st: &GroupState) -> bool {
    (st.group_exit.is_some() && !core_unacted(st)) || st.nr_live == 0
}

/// A fatal signal other than SIGKILL to a group whose exit a Core signal decided but no
/// thread acted on ([`core_unacted`]), as Linux takes it: the target has a signal
/// pending, so no thread "wants" this one (`wants_signal`) and `complete_signal` starts
/// no group exit for it either: it is queued (a signal an init ignores changes
/// nothing), and the process dies of the first fatal signal a thread dequeues
/// ([`dequeued_first`]). Measured on Linux 6.18 (the target asleep): SIGQUIT then
/// SIGHUP kills by SIGHUP, SIGQUIT then SIGINT by SIGINT, SIGQUIT then SIGSEGV by
/// SIGSEGV, SIGSEGV then SIGHUP by SIGSEGV, SIGABRT then SIGTERM by SIGABRT, and
/// SIGQUIT sent by `tgkill` then SIGHUP by `kill` by SIGQUIT (the thread's own set is
/// dequeued first). `None`: not such a signal, decided as for any dying group.
#[cold]
#[inline(never)]
fn after_unacted_core(
    t: &Arc<TaskInner>,
    st: &mut GroupState,
    sig: Signal,
    sender: Sender<'_>,
    thread: bool,
) -> Option<Outcome> {
    if sig == Signal::KILL
        || !matches!(
            sig.default_action(),
            DefaultAction::Term | DefaultAction::Core
        )
    {
        return None;
    }
    if st.unkillable && init_ignores(t, sig, sender) {
        return Some(Outcome::Nothing);
    }
    queue(t, st, sig, thread);
    if let Some(dies_of) = dequeued_first(st) {
        let core = dies_of.dumps_core() && t.dumps_core();
        st.group_exit = Some(WaitStatus::signaled_by(dies_of, core));
    }
    Some(Outcome::Nothing)
}

/// The fatal signal a thread of the group dequeues first, as [`pending_fatal`] picks it
/// (the first live thread's own set, the group's, then the other threads'), the
/// SIGKILL uproc marks on every thread of a dying group left out (no SIGKILL was sent
/// while [`core_unacted`]: one would have ended that state). The caller holds the
/// siglock.
fn dequeued_first(st: &GroupState) -> Option<Signal> {
    let sent = |bits: u64| bits & !Signal::KILL.mask();
    let mut threads = ThreadGroup::live_threads(st);
    let first = threads
        .next()
        .and_then(|th| first_fatal(sent(th.pending.load(Ordering::Acquire))));
    first
        .or_else(|| first_fatal(sent(st.shared_pending.bits())))
        .or_else(|| threads.find_map(|th| first_fatal(sent(th.pending.load(Ordering::Acquire)))))
}

/// `SYNCHRONOUS_MASK`: the signals `next_signal` dequeues before any other of a set
/// (SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE, SIGSYS), whoever sent them.
const SYNCHRONOUS_MASK: u64 = Signal::SEGV.mask()
    | Signal::BUS.mask()
    | Signal::ILL.mask()
    | Signal::TRAP.mask()
    | Signal::FPE.mask()
    | Signal::SYS.mask();

/// The first signal of `bits` a woken thread dies of, in `next_signal`'s order: the
/// synchronous ones first, then the lowest-numbered; signals whose default action is
/// not fatal are taken and passed over (SIGCHLD runs the handler uproc assumes).
fn first_fatal(bits: u64) -> Option<Signal> {
    let pick = |set: u64| {
        (1..=SIGRTMAX)
            .filter(|n| set & (1u64 << (n - 1)) != 0)
            .filter_map(|n| Signal::new(n).ok())
            .find(|s| {
                matches!(
                    s.default_action(),
                    DefaultAction::Term | DefaultAction::Core
                )
            })
    };
    pick(bits & SYNCHRONOUS_MASK).or_else(|| pick(bits))
}

/// The fatal signal a continued group dies of: what the first woken thread's
/// `get_signal` dequeues. `dequeue_signal` takes that thread's own set before the
/// group's, so its private fatal signal comes first, then the group's shared one
/// (measured on Linux 6.18: a stopped process with SIGHUP queued by `kill` and SIGUSR1
/// by `tgkill` dies of SIGUSR1 when continued; with SIGHUP and SIGSEGV both queued by
/// `kill`, of SIGSEGV). Which thread of several runs first is the scheduler's choice
/// (with the SIGUSR1 on a second thread Linux was seen dying of either signal):
/// uproc takes the first live one in the group's order, leader first, as SIGCONT
/// wakes them, then another thread's own set. The caller holds the siglock.
fn pending_fatal(st: &GroupState) -> Option<Signal> {
    let mut threads = ThreadGroup::live_threads(st);
    let first = threads
        .next()
        .and_then(|th| first_fatal(th.pending.load(Ordering::Acquire)));
    first
        .or_else(|| first_fatal(st.shared_pending.bits()))
        .or_else(|| threads.find_map(|th| first_fatal(th.pending.load(Ordering::Acquire))))
}

/// A fatal signal hit the group (`complete_signal` with `sig_fatal`): SIGKILL every
/// thread; managed threads get their hook, bare ones exit now, threads still being
/// forked exit when their fork completes.
fn complete_fatal(t: &Arc<TaskInner>, sig: Signal, status: WaitStatus) {
    let g = t.group();
    let mut hooks = Vec::new();
    let mut bare = Vec::new();
    let dumper;
    {
        let st = g.sig.lock();
        // The thread that takes the signal (`complete_signal`: the target if it
        // wants it, else another): the one that dumps core, if any.
        dumper = ThreadGroup::live_threads(&st)
            .find(|th| Arc::ptr_eq(th, t))
            .or_else(|| ThreadGroup::live_threads(&st).next())
            .map_or(std::ptr::null(), |th| Arc::as_ptr(&th));
        for th in ThreadGroup::live_threads(&st) {
            th.pending.fetch_or(Signal::KILL.mask(), Ordering::AcqRel);
            if !th.started.load(Ordering::Acquire) {
                continue; // post_fork ends it
            }
            Managed::file(th, &mut hooks, &mut bare);
        }
    }
    // A waiter in this group returns EINTR.
    g.wake_waiters();
    crate::task::call_hooks(hooks, Some(sig));
    end_bare(g, &bare, status, dumper);
}

/// Ends the bare threads a fatal signal found with `status` (with no lock held), and
/// wakes the group's waiters if any ended. The core bit of a core-dumping `status`
/// goes to the thread that dumps (`dumper`) alone: the others exit with the plain
/// signal, as Linux's do before the dump ends (`coredump_finish` adds 0x80 to the
/// dumper's code only), which their thread pidfds' exit information shows. Inside a
/// kill walk ([`uproc_abi::walk::walk`]: a group kill, a namespace zap, `cgroup.kill`,
/// parent-death signals) they end once the walk has signalled every victim, as Linux's
/// victims die after the walk, in their own context.
fn end_bare(
    g: &ThreadGroup,
    bare: &[Arc<TaskInner>],
    status: WaitStatus,
    dumper: *const TaskInner,
) {
    if bare.is_empty() {
        return;
    }
    // (The address only tells the dumper apart: it is never dereferenced.)
    let dumper = dumper as usize;
    if uproc_abi::walk::in_walk() {
        uproc_abi::hint::cold_path();
        let bare = bare.to_vec();
        // Named by process, after its parent's process if the walk ends that too,
        // and among its siblings by its place in their parent's list (fork order):
        // an order no profile's numbering changes.
        let key = std::ptr::from_ref(g) as usize;
        let parent = g.sig.lock().real_parent.upgrade();
        let after = parent
            .as_ref()
            .map_or(0, |p| std::ptr::from_ref(p.group()) as usize);
        let tie = parent.map_or(0, |p| {
            let list = p.group().children.lock();
            list.list
                .iter()
                .position(|c| std::ptr::eq(c.0.group(), g))
                .map_or(u64::MAX, |i| i as u64)
        });
        uproc_abi::walk::end_or_defer(key, after, tie, move || {
            end_threads(&bare, status, dumper);
            bare[0].group().wake_waiters();
        });
        return;
    }
    end_threads(bare, status, dumper);
    g.wake_waiters();
}

/// [`end_bare`]'s exits: each thread with `status`, without its core bit but for the
/// thread at address `dumper`.
fn end_threads(bare: &[Arc<TaskInner>], status: WaitStatus, dumper: usize) {
    for th in bare {
        let own = if Arc::as_ptr(th) as usize == dumper {
            status
        } else {
            crate::exit::without_core(status)
        };
        crate::exit::do_exit(th, own);
    }
}

/// [`Outcome::ForceKill`]: the hooks of the group's live, started threads hear
/// SIGKILL (if `hooks`), and its bare ones end with the group's status (a thread still
/// being forked is ended by its fork, as for any fatal signal).
#[cold]
fn force_kill(t: &Arc<TaskInner>, hooks: bool) {
    let mut called = Vec::new();
    let mut bare = Vec::new();
    let status = {
        let st = t.group().sig.lock();
        for th in ThreadGroup::live_threads(&st) {
            if th.started.load(Ordering::Acquire) {
                Managed::file(th, &mut called, &mut bare);
            }
        }
        st.group_exit
    };
    crate::task::call_hooks(called, hooks.then_some(Signal::KILL));
    let status = status.unwrap_or(WaitStatus::signaled_by(Signal::KILL, false));
    end_bare(t.group(), &bare, status, std::ptr::null());
}

/// `do_notify_parent_cldstop`: tell the parent its child stopped or continued
/// (SIGCHLD unless ignored, wake its waiters). The parent group's `children` lock
/// (with `real_parent` re-checked under it) keeps the parent from changing underneath;
/// `Linux*` also take `tasklist_lock` (read) first, as Linux does (rule 1).
fn notify_parent_cldstop(t: &Arc<TaskInner>, _continued: bool) {
    let Ok(sys) = t.hot_sys() else { return };
    let _r = sys.as_deref().and_then(System::tasklist_read_hot);
    t.with_parent_children(|parent, st| {
        drop(st);
        if let Some((p, held)) = parent {
            {
                let mut ps = p.group().sig.lock();
                if ps.sigchld != SigChld::Ignore && !drops_signals(&ps) {
                    ps.shared_pending.insert(Signal::CHLD);
                }
            }
            p.group().notify_waiters(held);
        }
    });
}

/// Signals every process of process group `pgrp` (`__kill_pgrp_info`): ESRCH if it has
/// no member. Slow path: `tasklist_lock` (read) while collecting.
pub(crate) fn kill_pgrp(
    sys: &System,
    pgrp: &Arc<Pid>,
    sig: Signal,
    sender: Sender<'_>,
) -> Result<(), Errno> {
    kill_pgrp_where(sys, pgrp, sig, sender, |_| true)
}

/// [`kill_pgrp`] to the members whose group state passes `pick` (read under their
/// siglock at collection time).
pub(crate) fn kill_pgrp_where(
    sys: &System,
    pgrp: &Arc<Pid>,
    sig: Signal,
    sender: Sender<'_>,
    pick: impl Fn(&GroupState) -> bool,
) -> Result<(), Errno> {
    let collect = || {
        sys.root_ns
            .pids()
            .iter()
            .filter_map(|p| pid_task(p))
            .filter(|t| {
                t.leader && {
                    let st = t.group().sig.lock();
                    st.in_pgrp(pgrp) && pick(&st)
                }
            })
            .collect()
    };
    signal_groups(sys, collect, sig, sender)
}

fn find_in(ns: &PidNamespace, nr: i32) -> Option<Arc<TaskInner>> {
    ns.find_pid(nr).and_then(|p| pid_task(&p))
}

impl Task {
    /// [kill(2)](https://man7.org/linux/man-pages/man2/kill.2.html): `pid > 0` that
    /// process, `0` the caller's process group, `-1` every process the caller can see
    /// except its namespace's init and itself, `< -1` process group `-pid`. ESRCH when
    /// nothing matched. Signal 0 checks existence only. A namespace init silently
    /// ignores signals from inside its namespace (and all but SIGKILL/SIGSTOP from an
    /// ancestor one). A `pid` naming a non-leader thread signals its thread group. ESRCH
    /// if the caller was reaped. SIGTSTP, SIGTTIN and SIGTTOU to a process whose process
    /// group is orphaned (a child of init, a session leader, ...) are discarded, as
    /// Linux's `get_signal` discards them; SIGSTOP still stops.
    ///
    /// # References
    /// `kill_something_info` in `kernel/signal.c`; `get_signal` there and
    /// `will_become_orphaned_pgrp` in `kernel/exit.c` for the orphaned-group rule.
    pub fn kill(&self, pid: i32, sig: Signal) -> Result<(), Errno> {
        let sys = self.0.sys().ok_or(Errno::ESRCH)?;
        self.0.check_not_released()?;
        let ns = self.0.active_ns();
        let me = Sender::Task(&self.0);
        if pid > 0 {
            let t = find_in(ns, pid).ok_or(Errno::ESRCH)?;
            return send_group(&t, sig, me);
        }
        if pid == 0 {
            let pgrp = self.0.group().sig.lock().pgrp().ok_or(Errno::ESRCH)?;
            return kill_pgrp(&sys, &pgrp, sig, me);
        }
        if pid == -1 {
            let collect = || {
                ns.pids()
                    .iter()
                    .filter(|p| p.nr_in(ns) > 1)
                    .filter_map(|p| pid_task(p))
                    .filter(|t| t.leader && !std::ptr::eq(t.group(), self.0.group()))
                    .collect()
            };
            return signal_groups(&sys, collect, sig, me);
        }
        let Some(nr) = pid.checked_neg() else {
            return Err(Errno::ESRCH); // INT_MIN
        };
        let pgrp = ns.find_pid(nr).ok_or(Errno::ESRCH)?;
        kill_pgrp(&sys, &pgrp, sig, me)
    }

    /// [tgkill(2)](https://man7.org/linux/man-pages/man2/tgkill.2.html): signal thread
    /// `tid` of thread group `tgid` (both in the caller's namespace). EINVAL for
    /// `tgid <= 0` or `tid <= 0`; ESRCH if no such thread in that group or the caller
    /// was reaped.
    ///
    /// A stop or fatal signal to a live thread acts on its whole group. To a thread
    /// that is exiting, such as a leader that exited while its other threads run (a
    /// zombie leader, still named by `tgid`), the call succeeds but the signal goes to
    /// that thread alone, which takes nothing any more (no trace in
    /// [`Task::pending_signals`], as none in `/proc/PID/status` on Linux 6.18), and the
    /// group is left alone: SIGKILL kills nothing, SIGSTOP stops nothing; SIGCONT still continues a
    /// stopped group. [`Task::kill`] of the `tgid` picks a live thread and acts.
    ///
    /// # References
    /// `do_tkill`, `complete_signal` and `wants_signal` in `kernel/signal.c`.
    pub fn tgkill(&self, tgid: i32, tid: i32, sig: Signal) -> Result<(), Errno> {
        if tgid <= 0 || tid <= 0 {
            return Err(Errno::EINVAL);
        }
        self.0.check_not_released()?;
        let ns = self.0.active_ns();
        let t = find_in(ns, tid).ok_or(Errno::ESRCH)?;
        let leader = t.leader_task().ok_or(Errno::ESRCH)?;
        if leader.pid.nr_in(ns) != tgid {
            return Err(Errno::ESRCH);
        }
        send_thread(&t, sig, Sender::Task(&self.0))
    }

    /// Takes the next pending signal, as a managed runtime's body does when it handles
    /// signals: the thread's own set first, then the group's; in each, a synchronous
    /// signal (SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE, SIGSYS) before any other, else
    /// the lowest-numbered.
    ///
    /// # References
    /// `dequeue_signal` and `next_signal` in `kernel/signal.c`.
    pub fn dequeue_signal(&self) -> Option<Signal> {
        if let Some(s) = next_signal(self.0.pending.load(Ordering::Acquire)) {
            self.0.pending.fetch_and(!s.mask(), Ordering::AcqRel);
            return Some(s);
        }
        let mut st = self.0.group().sig.lock();
        let s = next_signal(st.shared_pending.bits())?;
        st.shared_pending.remove(s);
        Some(s)
    }
}

/// `next_signal`: the signal of `bits` dequeued first, a synchronous one
/// ([`SYNCHRONOUS_MASK`]) before any other, else the lowest-numbered.
fn next_signal(bits: u64) -> Option<Signal> {
    let set = if bits & SYNCHRONOUS_MASK != 0 {
        bits & SYNCHRONOUS_MASK
    } else {
        bits
    };
    if set == 0 {
        return None;
    }
    Signal::new(set.trailing_zeros() as i32 + 1).ok()
}
