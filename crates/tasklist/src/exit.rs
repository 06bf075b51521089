//! Exit and reap: `do_exit`, `do_group_exit`, `exit_notify`, `do_notify_parent`,
//! `release_task`, and the namespace-init death (`zap_pid_ns_processes`).
//!
//! The state machine of one thread (`exit_state`), all transitions (the reaper's claim
//! included) under the parent group's `children` lock (a leader) or the group's siglock
//! (a thread), and under `Linux*` also `tasklist_lock` (write):
//!
//! ```text
//! RUNNING --exit, non-leader-------------------------------> DEAD (autoreap)
//! RUNNING --exit, leader, group empty, parent waits--------> ZOMBIE --wait--> DEAD
//! RUNNING --exit, leader, group empty, autoreap------------> DEAD
//! RUNNING --exit, leader, threads left / ns init zapping---> DELAYED
//! DELAYED --last thread released / ns emptied--------------> ZOMBIE or DEAD
//! DEAD    --release_task-----------------------------------> (detached, pid freed)
//! ```
//!
//! `Task::state` reads DELAYED as a zombie and DEAD as gone, except for the thread
//! that ended a namespace init's process (`ZAPPER`, the group's last to exit): that
//! one is still in `do_exit` on Linux (`R`/`S` in `/proc`) until its namespace empties.

use crate::pgrp::{DetachedIds, FreeList, ProcessIds, detach_leader};
use crate::reparent;
use crate::signal::SigChld;
use crate::sync::{Ordering, SpinGuard};
use crate::system::System;
use crate::task::{
    Children, DEAD, DELAYED, Managed, RUNNING, Task, TaskInner, ThreadGroup, ZOMBIE,
};
use std::sync::{Arc, Weak};
use uproc_abi::hint::cold_path;
use uproc_abi::{Signal, WaitStatus};
use uproc_cgroup::CgroupMember;

/// What `exit_notify` decided under its locks, done after they are dropped.
#[derive(Default)]
pub(crate) struct PostExit {
    /// Children that were zombies and are reaped now (reparented to an autoreaping
    /// parent, or children of a dying namespace init).
    pub(crate) release: Vec<Arc<TaskInner>>,
    /// The exiting thread itself is reaped (autoreap).
    release_self: bool,
    /// The exiting thread's pidfds become readable.
    notify_self: bool,
    /// The namespace init's group died: zap its namespace.
    pub(crate) zap: bool,
    /// A leader that exited after the thread that ended its namespace init's process
    /// became DELAYED: the zap's end is checked again.
    zap_recheck: bool,
    /// The exiting leader's exit signal, when it is not SIGCHLD.
    exit_signal: ParentSignal,
    /// Reparented children with something to check once the locks are dropped
    /// (boxed: almost always none, and then nothing to drop).
    pub(crate) reparent_checks: Option<Box<ReparentChecks>>,
    /// The kill walk the exit's parent-death and orphaned-group signals were sent in
    /// (`exit_signals_before_zombie`): the hooks they call and the bare tasks they end
    /// wait until the exit is over (the task published a zombie), as Linux's targets
    /// act on them in their own context later.
    walk: Option<uproc_abi::walk::Walking>,
}

/// What an exit decides before its task becomes a zombie, with no lock of its own held
/// ([`exit_signals_before_zombie`]): `reparent_leader`'s `kill_orphaned_pgrp`, the
/// children's parent-death signals, and the exit's own `kill_orphaned_pgrp`.
#[derive(Default)]
pub(crate) struct ReparentChecks {
    /// The children handed on whose process group has a stopped member.
    pub(crate) children: Vec<Arc<TaskInner>>,
    /// The exiting process's process group and session, read under the locks that
    /// keep it unreleased.
    pub(crate) father_ids: Option<Arc<ProcessIds>>,
    /// The parent-death signals of the children's threads, read in the hand-over
    /// ([`crate::reparent::pdeath_signals_of`]).
    pub(crate) pdeath: Vec<(Arc<TaskInner>, Signal)>,
    /// The exit half of `kill_orphaned_pgrp`, read in `do_exit`.
    exit_orphan: Option<ExitOrphanCheck>,
}

/// An exit signal other than SIGCHLD that `do_notify_parent` decided to send: the
/// parent and the signal. Delivered by [`send_exit_signal`] once the locks are dropped,
/// because delivery takes the parent's actions (a fatal signal ends it, which takes
/// the parent's locks and, under `Linux*`, `tasklist_lock`).
pub(crate) type ParentSignal = Option<(Arc<TaskInner>, Signal)>;

/// Delivers the exit signal of `child` to its parent as any signal is delivered
/// (`__send_signal_locked` from `do_notify_parent`, not forced): an init ignores it as
/// it ignores every signal without a handler, any other parent takes its default
/// action (a fatal one ends it). Called with no lock held.
pub(crate) fn send_exit_signal(child: &TaskInner, sig: ParentSignal) {
    if let Some((parent, sig)) = sig {
        let _ = crate::signal::send_group(&parent, sig, crate::signal::Sender::Task(child));
    }
}

/// Whether the group has no attached thread but its leader (`thread_group_empty`).
pub(crate) fn thread_group_empty(g: &ThreadGroup) -> bool {
    g.sig.lock().threads.is_empty()
}

/// `status` without its core bit: what a thread that did not dump core exits with when
/// its process dies of a core-dumping signal (Linux adds 0x80 to the dumping thread's
/// code alone, in `coredump_finish`; the process's status, `group_exit_code`, has it).
pub(crate) fn without_core(status: WaitStatus) -> WaitStatus {
    match status.signaled() {
        Some(sig) if status.core_dumped() => WaitStatus::signaled_by(sig, false),
        _ => status,
    }
}

/// `do_group_exit`: the whole thread group exits with `status`. Other managed threads
/// get SIGKILL + their hook (`zap_other_threads`); other bare threads exit now.
pub(crate) fn do_group_exit(t: &Arc<TaskInner>, status: WaitStatus) {
    if t.runtime_dropped() {
        return;
    }
    if t.group().runtime_init() {
        cold_path();
        if !t.leader {
            // Linux has no answer (its init's group exit panics the kernel): the
            // runtime's init lives on, and the thread that asked ends alone, with the
            // status it asked for, as a thread exit (never the group's last thread).
            do_exit(t, status);
            return;
        }
        tracing::warn!("exit_group of the runtime init ignored: it never exits");
        return;
    }
    let mut hooks = Vec::new();
    let mut bare = Vec::new();
    let (status, first_to_act) = {
        let mut st = t.group().sig.lock();
        // The first thread to act on the group's exit is the one that dumps core (if
        // the status has it); the others exit without the core bit.
        let first_to_act = st.exit_flags & crate::task::EXIT_ACTED == 0;
        let status = *st.group_exit.get_or_insert(status);
        st.exit_flags |= crate::task::EXIT_ACTED;
        t.group().end_job_control(&mut st);
        for th in ThreadGroup::live_threads(&st) {
            if Arc::ptr_eq(&th, t) {
                continue;
            }
            th.pending.fetch_or(Signal::KILL.mask(), Ordering::AcqRel);
            if !th.started.load(Ordering::Acquire) {
                continue;
            }
            Managed::file(th, &mut hooks, &mut bare);
        }
        (status, first_to_act)
    };
    crate::task::call_hooks(hooks, Some(Signal::KILL));
    for th in &bare {
        do_exit(th, without_core(status));
    }
    do_exit(
        t,
        if first_to_act {
            status
        } else {
            without_core(status)
        },
    );
}

/// `do_exit`: this thread exits with `status` (the group exit status wins if the group
/// is exiting). Idempotent.
pub(crate) fn do_exit(t: &Arc<TaskInner>, status: WaitStatus) {
    // Read once: the group is immutable, but the compiler cannot know it across the
    // locks below.
    let g = t.group();
    if t.leader && g.runtime_init() {
        cold_path();
        tracing::warn!("exit of the runtime init ignored: it never exits");
        return;
    }
    // ESRCH: the runtime was dropped (a handle that outlived it does nothing).
    let Ok(hot) = t.hot_sys() else {
        cold_path();
        return;
    };
    if t.exiting.swap(true, Ordering::SeqCst) {
        cold_path();
        return;
    }
    // The hook may hold the task (a runtime closure): drop it to break that cycle.
    // A task that never boxed its rare fields has no hook: one plain load (`RARE_USED`
    // pairs it with the installer).
    if t.rare_ever_used() {
        let hook = t.rare.lock().hook.take();
        crate::task::drop_hook(hook);
    }
    let (group_dead, status, parent, threadless, childless, orphan) = {
        let mut st = g.sig.lock();
        // The thread's own pending set is gone from its exit on (measured on Linux
        // 6.18: `SigPnd` 0 for a zombie, a zombie leader whose thread runs, and an init
        // waiting in its exit for its namespace, whatever was `tgkill`ed to it; the
        // shared set stays): the SIGKILL that ends it is dequeued by `get_signal`, the
        // rest flushed. Under the siglock, where every sender sets it; a plain load on
        // the common path.
        if t.pending.load(Ordering::Acquire) != 0 {
            cold_path();
            t.pending.store(0, Ordering::Release);
        }
        st.nr_live -= 1;
        let status = match st.group_exit {
            Some(decided) => {
                // This thread acts on the group's exit (a Linux thread that dequeued
                // its fatal signal): a Core signal's can no longer be taken over.
                st.exit_flags |= crate::task::EXIT_ACTED;
                // A thread that did not dump core (its caller says so) exits without
                // the core bit; the group's status keeps it.
                if decided.core_dumped() && status == without_core(decided) {
                    status
                } else {
                    decided
                }
            }
            None => status,
        };
        let dead = st.nr_live == 0;
        let mut orphan = None;
        if dead {
            // `synchronize_group_exit`: the last thread to exit, with no group exit
            // before it, gives the group its exit code. Only a thread outliving its
            // leader changes what the leader reports (the leader's own code otherwise).
            if !t.leader && st.group_exit.is_none() {
                st.group_exit = Some(status);
            }
            g.end_job_control(&mut st);
            // `exit_notify`'s `kill_orphaned_pgrp(tsk->group_leader, NULL)`, asked only
            // when the process group has a stopped member (one load otherwise). A
            // nested namespace's init asks once its namespace is empty
            // (`try_finish_zap`), as Linux asks after `zap_pid_ns_processes` returns.
            if st
                .ids
                .as_ref()
                .is_some_and(|i| i.pgrp.has_stopped_members())
            {
                cold_path();
                orphan = exit_orphan_check(t, &st);
            }
        }
        // A leader's parent, for `exit_notify` (re-checked there under the parent's
        // lock): read in this hold instead of a round of its own.
        let parent = if t.leader {
            st.real_parent.upgrade()
        } else {
            None
        };
        // A process dead with no thread attached gets none any more (attach needs a
        // live thread): its leader can never be delayed for its threads.
        let threadless = dead && st.threads.is_empty();
        // Nothing was ever attached to the group's list (and nothing can be now: see
        // `GroupState::had_children`): no hand-over to make.
        let childless = dead && !st.had_children;
        (dead, status, parent, threadless, childless, orphan)
    };
    t.exit_code.store(status.raw(), Ordering::Release);
    tracing::debug!(pid = t.pid.numbers()[0].nr, %status, group_dead, "exit");
    // cgroup_task_dead (css_set_lock #3). A task not linked yet (a no-op here) is
    // unlinked by post_fork when it sees `exiting`. A leader outlived by its threads
    // stays on its cgroup's dying list (cgroup.procs, cgroup.kill) until its release.
    if t.leader && !group_dead {
        t.css
            .task_dead_leader(Arc::downgrade(t) as Weak<dyn CgroupMember>);
    } else {
        t.css.task_dead();
    }
    // A waiter of this very thread (blocked in wait on another OS thread) returns:
    // woken by the reparenting step, under the `children` lock it already takes.
    exit_notify(
        hot.as_deref(),
        t,
        group_dead,
        status,
        (parent, threadless, childless),
        orphan,
    );
}

/// The exit half of `kill_orphaned_pgrp`, as read in `do_exit`'s siglock hold: the
/// process's ids and its parent.
struct ExitOrphanCheck(Arc<ProcessIds>, Option<Arc<TaskInner>>);

/// Reads [`ExitOrphanCheck`], boxed as `exit_notify` takes it (the caller holds the
/// siglock of the dead process `t`); `None` for a nested namespace's init, whose exit
/// waits for its namespace to empty first ([`try_finish_zap`] asks then).
#[cold]
#[inline(never)]
fn exit_orphan_check(t: &TaskInner, st: &crate::task::GroupState) -> Option<Box<ReparentChecks>> {
    let ns = t.active_ns();
    if ns.level() > 0 && reparent::group_is_init_of(t, ns) {
        return None;
    }
    Some(Box::new(ReparentChecks {
        exit_orphan: Some(zapped_orphan_check(st)?),
        ..Default::default()
    }))
}

/// [`ExitOrphanCheck`] of a dead process whose exit goes on (the caller holds its
/// siglock), or `None` if it is in no process group any more.
fn zapped_orphan_check(st: &crate::task::GroupState) -> Option<ExitOrphanCheck> {
    let ids = st.ids.clone()?;
    Some(ExitOrphanCheck(ids, st.real_parent.upgrade()))
}

/// The exit half of `kill_orphaned_pgrp`, decided: the process of `t`, whose process
/// group `ids` has a stopped member, is dead; if its parent was the group's link
/// outside (another group of the same session) and no other member is one, the group
/// is returned, to hear SIGHUP and SIGCONT once the locks are dropped. `tasklist_held`:
/// the caller holds `tasklist_lock` (write).
#[cold]
#[inline(never)]
fn exit_orphaned_pgrp(
    t: &TaskInner,
    ExitOrphanCheck(ids, parent): ExitOrphanCheck,
    tasklist_held: bool,
) -> Option<Arc<uproc_pidns::Pid>> {
    let (Some(sys), Some(parent)) = (t.sys(), parent) else {
        return None;
    };
    // A released parent is no link.
    let parent_ids = parent.group().sig.lock().ids.clone()?;
    crate::pgrp::orphaned_with_stopped(&sys, &ids, &parent_ids, Some(t.group()), tasklist_held)
}

/// `exit_notify`: reparent the children, become a zombie (or autoreap), notify the
/// parent. `Linux*`: one `tasklist_lock` (write) acquisition around it all. `Scalable`:
/// the reparenting takes the dying group's and its reaper's `children` locks
/// (`reparent.rs`); the zombie transition, the parent's notification and the autoreap
/// decision are one critical section under the parent group's `children` lock (and the
/// exiting group's siglock for the delayed-leader decision), so a waiter, a reparent
/// and a concurrent release of the group's last thread each see either all of it or
/// none.
///
/// Parent-death signals and orphaned-group checks (`orphan`: the exit half, read in
/// `do_exit`) are made after the hand-over and before the exiting task becomes a
/// zombie, as Linux makes them under the `tasklist_lock` hold that publishes it: once a
/// waiter can reap it, they are sent. They take no lock of this exit (`Linux*` drop
/// `tasklist_lock` for them and take it again, the only exits with two holds): a
/// signal may end its target, whose exit takes its own locks.
#[inline(always)]
fn exit_notify(
    sys: Option<&System>,
    t: &Arc<TaskInner>,
    group_dead: bool,
    status: WaitStatus,
    (parent, threadless, childless): (Option<Arc<TaskInner>>, bool, bool),
    orphan: Option<Box<ReparentChecks>>,
) {
    let mut post = PostExit {
        reparent_checks: orphan,
        ..Default::default()
    };
    let status = {
        let mut tl = sys.and_then(System::tasklist_write_hot);
        if group_dead {
            reparent::forget_original_parent(t, &mut post, childless);
        } else {
            reparent::pass_to_live_thread(t, &mut post);
        }
        if let Some(checks) = post.reparent_checks.take() {
            exit_signals_before_zombie(sys, t, &mut tl, *checks, &mut post.walk);
        }
        if !t.leader {
            // A thread autoreaps; its thread pidfds become readable. Unless it ended
            // its namespace init's process: it waits for the namespace to empty,
            // attached (`try_finish_zap` does the rest).
            if post.zap {
                // Exited (its status known), still attached: `Task::state` reads it
                // as running while `zapping` lasts, as a waiting leader reads.
                t.exit_state.store(DELAYED, Ordering::Release);
            } else {
                t.exit_state.store(DEAD, Ordering::Release);
                post.notify_self = true;
                post.release_self = true;
            }
            status
        } else if zombie_under_known_parent(t, threadless && !post.zap, parent.as_ref(), &mut post)
        {
            status
        } else {
            let (group_status, zapping) = t.with_parent_children_from(parent, |parent, st| {
                // Rule 3: the group's siglock inside the parent's children lock. The
                // release of the group's last thread checks for DELAYED under the same
                // siglock: exactly one of the two makes the leader reportable.
                let delayed = post.zap || !st.threads.is_empty();
                // A thread of this namespace init ended the process and waits for the
                // namespace: the zap may have looked while this leader was still
                // exiting; it looks again below, the leader now DELAYED.
                let zapping = delayed && !post.zap && st.zapping;
                // The group's code, if one was set since this thread's status was read
                // (another thread's `exit_group`, or its exit as the last thread, may
                // have come and gone meanwhile): what Linux's `wait_task_zombie`
                // reports under `SIGNAL_GROUP_EXIT`.
                let group_status = st.group_exit.filter(|_| !delayed);
                if let Some(s) = group_status {
                    t.exit_code.store(s.raw(), Ordering::Release);
                }
                let state = if delayed { DELAYED } else { ZOMBIE };
                t.exit_state.store(state, Ordering::Release);
                // Rule 4: dropped before `publish_exit` takes the parent's siglock.
                drop(st);
                if !delayed {
                    post.notify_self = true;
                    post.release_self = publish_exit(t, parent, &mut post.exit_signal);
                }
                (group_status, zapping)
            });
            if zapping {
                post.zap_recheck = true;
            }
            group_status.unwrap_or(status)
        }
    };
    // Used up field by field (partial moves, read in place): each piece is dropped
    // where it is used up, so no drop of the whole runs at the end, and nothing is
    // copied out first.
    send_exit_signal(t, post.exit_signal);
    if post.notify_self {
        uproc_pidfs::do_notify_pidfd(&t.pid, status);
    }
    // Usually never pushed to: a `Vec` that never allocated holds nothing to drop or
    // free, so it is forgotten rather than handed to its (out-of-line) drop.
    if post.release.capacity() == 0 {
        std::mem::forget(post.release);
    } else {
        for c in post.release {
            release_task(sys, &c);
        }
    }
    if post.release_self {
        release_task(sys, t);
    }
    if post.zap {
        if let Some(sys) = t.sys() {
            zap_pid_ns_processes(&sys, t);
        }
    }
    if post.zap_recheck {
        if let Some(sys) = t.sys() {
            sys.zap_check.raise();
            sys.process_zaps();
        }
    }
    if let Some(walk) = post.walk {
        uproc_abi::hint::cold_path();
        drop(walk);
    }
}

/// Decides the signals an exit sends before its task becomes a zombie, in
/// `exit_notify`'s hold (`tl`: `Linux*`'s `tasklist_lock`),
/// as Linux's `forget_original_parent` and `exit_notify` decide them under
/// `tasklist_lock`: from the hand-over, the children's parent-death signals and the
/// reparent half of `kill_orphaned_pgrp` (`reparent_leader`: each child of
/// `children`, just handed to a new parent, is in a process group with a stopped
/// member, which `t`'s process, `father_ids`, may have been the link of); then the
/// exit half (`exit_orphan`). Every group is decided before any signal is sent, as
/// Linux's targets die later, in their own context. Then, if there is anything to
/// send, drops `tl`, sends, and takes it again (`Linux*`: the only exits with two
/// holds).
#[cold]
#[inline(never)]
fn exit_signals_before_zombie<'a>(
    sys: Option<&'a System>,
    t: &Arc<TaskInner>,
    tl: &mut Option<uproc_abi::lockstat::NamedRwLockWriteGuard<'a, crate::pgrp::TaskList>>,
    checks: ReparentChecks,
    walk: &mut Option<uproc_abi::walk::Walking>,
) {
    let ReparentChecks {
        children,
        father_ids,
        pdeath,
        exit_orphan,
    } = checks;
    let tasklist_held = tl.is_some();
    let mut orphaned: Vec<Arc<uproc_pidns::Pid>> = Vec::new();
    let mut add = |pgrp: Option<Arc<uproc_pidns::Pid>>| {
        if let Some(p) = pgrp {
            // Once continued, a group has no stopped member for a second check.
            if !orphaned.iter().any(|q| Arc::ptr_eq(q, &p)) {
                orphaned.push(p);
            }
        }
    };
    let runtime = t.sys();
    if let (Some(rt), Some(father_ids)) = (&runtime, father_ids) {
        for c in &children {
            let Some(ids) = c.group().sig.lock().ids.clone() else {
                continue; // released meanwhile
            };
            add(crate::pgrp::orphaned_with_stopped(
                rt,
                &ids,
                &father_ids,
                None,
                tasklist_held,
            ));
        }
    }
    if let Some(check) = exit_orphan {
        add(exit_orphaned_pgrp(t, check, tasklist_held));
    }
    if pdeath.is_empty() && orphaned.is_empty() {
        return;
    }
    *tl = None;
    // One walk over every signal of the exit, over until the exit is.
    *walk = Some(uproc_abi::walk::enter());
    // The parent-death signals first: Linux sends them in the hand-over itself,
    // before `reparent_leader`'s check.
    crate::reparent::send_pdeath_signals(t, pdeath);
    if let Some(rt) = &runtime {
        for pgrp in &orphaned {
            crate::pgrp::signal_orphaned_pgrp(rt, pgrp);
        }
    }
    *tl = sys.and_then(System::tasklist_write_hot);
}

/// The usual exit of a process's last thread (`fast`: no thread attached, not a
/// namespace init), in one lock round on its parent: under the parent group's
/// `children` lock, the parent read in `do_exit`'s siglock hold is confirmed by the
/// group's parent address ([`ThreadGroup::parent_is`]) instead of a siglock round, and
/// the leader becomes a zombie and is published. Returns false (nothing done) when the
/// exit is not that simple or the parent moved: the caller takes the general path.
#[inline]
fn zombie_under_known_parent(
    t: &TaskInner,
    fast: bool,
    parent: Option<&Arc<TaskInner>>,
    post: &mut PostExit,
) -> bool {
    let Some(p) = parent.filter(|_| fast) else {
        return false;
    };
    let mut ch = p.group().children.lock();
    if !t.group().parent_is(p) {
        return false;
    }
    t.exit_state.store(ZOMBIE, Ordering::Release);
    post.notify_self = true;
    post.release_self = publish_exit(t, Some((p, &mut ch)), &mut post.exit_signal);
    true
}

/// ZOMBIE -> DEAD: the caller won the right to release `t`.
///
/// The caller holds the `children` lock of the list `t` is on (`_held`; during a
/// reparent, both lists' locks). Every transition of a leader's `exit_state` is made
/// under that lock (the exit's ZOMBIE/DELAYED/DEAD under its parent's list lock, every
/// claim under the lock of the list it scans or empties), so a load and a store decide
/// the claim as a compare-exchange would, without a locked instruction.
#[inline]
pub(crate) fn claim(t: &TaskInner, _held: &Children) -> bool {
    if t.exit_state.load(Ordering::Acquire) != ZOMBIE {
        return false;
    }
    t.exit_state.store(DEAD, Ordering::Release);
    true
}

/// The leader `t` (running or delayed) becomes reportable: [`do_notify_parent`] decides
/// whether it autoreaps, its `exit_state` becomes DEAD (autoreap: the caller releases
/// it) or ZOMBIE (a waiter may claim it), and only then are the parent's waiters woken.
/// The caller holds the `children` lock of `parent`'s group (the one
/// [`TaskInner::with_parent_children`] gives), so the decision, the publication and the
/// wakeup are one critical section for every waiter (they scan under that lock): a
/// waiter never sees an autoreaped child as a zombie, and a woken waiter always sees
/// the new state. Returns whether `t` autoreaps.
#[inline]
pub(crate) fn publish_exit(
    t: &TaskInner,
    parent: Option<(&Arc<TaskInner>, &mut Children)>,
    signal: &mut ParentSignal,
) -> bool {
    let (p, held) = parent.unzip();
    let autoreap = do_notify_parent(t, p, signal);
    t.exit_state
        .store(if autoreap { DEAD } else { ZOMBIE }, Ordering::Release);
    if let (Some(p), Some(held)) = (p, held) {
        p.group().notify_waiters(held);
    }
    autoreap
}

/// `do_notify_parent` without the wakeup: the leader `t` is becoming (or, reparented,
/// already is) a reportable zombie of `parent`. Queue SIGCHLD on the parent (unless the
/// parent ignores it), or leave any other exit signal in `signal` for the caller to
/// send once it dropped its locks ([`send_exit_signal`]). Returns whether `t` autoreaps
/// (parent ignores SIGCHLD or set `SA_NOCLDWAIT`, or `t` has `autoreap`, or there is no
/// parent). The caller holds the `children` lock of `parent`'s group; this takes the
/// parent's siglock (rule 3).
#[inline]
pub(crate) fn do_notify_parent(
    t: &TaskInner,
    parent: Option<&Arc<TaskInner>>,
    signal: &mut ParentSignal,
) -> bool {
    let sig = t.exit_signal.load(Ordering::Acquire);
    let mut autoreap = t.group().autoreap.load(Ordering::Acquire);
    let Some(p) = parent else { return true };
    if sig == Signal::CHLD.raw() && p.chld_notify_is_noop() {
        // SIGCHLD pending already, default disposition, no zap: queueing it again
        // changes nothing, and the rest is the caller's (under the `children` lock it
        // holds). The flag is lowered inside the critical section that ends any of
        // the three, so this read sees the state of some moment before that section:
        // the notification is ordered before it, as if it had taken the lock first.
        return autoreap;
    }
    let mut ps = p.group().sig.lock();
    if ps.zapping {
        // A dying namespace init reaps every child, whatever its exit signal
        // (`zap_pid_ns_processes` waits with `__WALL`).
        return true;
    }
    if sig == Signal::CHLD.raw() {
        let dying = crate::signal::drops_signals(&ps);
        match ps.sigchld {
            SigChld::Ignore => autoreap = true,
            SigChld::NoCldWait => {
                autoreap = true;
                if !dying {
                    ps.shared_pending.insert(Signal::CHLD);
                }
            }
            SigChld::Default if dying => cold_path(),
            SigChld::Default => {
                ps.shared_pending.insert(Signal::CHLD);
                // Not zapping (returned above): the next SIGCHLD changes nothing.
                ps.shared_pending.set_chld_noop(true);
            }
        }
    } else if let Ok(s) = Signal::new(sig) {
        if !s.is_probe() {
            *signal = Some((p.clone(), s));
        }
    }
    autoreap
}

/// `release_task`: reap `t` (already DEAD). pidfs exit info, pids uncharge, detach
/// (`Linux*`: under one `tasklist_lock` (write) acquisition), free the pid numbers
/// after the locks are dropped (`Linux70`, `Scalable`) or under `tasklist_lock`
/// (`Linux618`). Then, if `t` was the last thread of a delayed zombie leader, notify
/// (and maybe reap) that leader.
///
/// `sys` is [`TaskInner::hot_sys`]'s answer: the runtime under `Linux*` (for
/// `tasklist_lock`), `None` under `Scalable`.
pub(crate) fn release_task(sys: Option<&System>, t: &Arc<TaskInner>) {
    let mut next = release_one(sys, t);
    while let Some(n) = next {
        next = release_one(sys, &n);
    }
}

/// `release_task` of a child that the waiter claimed on its own group's list, the
/// `Scalable` reap (no `tasklist_lock` to take first, which would have to come before
/// the `children` lock): the waiter still holds that list's lock (`ch`) from its scan,
/// so the child is known to be on it (a child moves between lists only under the lock
/// of the one it leaves) and leaves it in the same hold. Saves
/// [`TaskInner::with_parent_children`]'s parent lookup and lock rounds, which the
/// usual reap needs to find and lock the list again.
///
/// `release_task`'s order is kept: the pidfs exit record and the pids uncharge come
/// before the unhash (the process-group/session detach and the pid's task slot), so a
/// task that `kill(pid, 0)`, a pidfd or its process group already reports gone is no
/// longer counted in `pids.current` and has its exit information recorded. Only the
/// list unlink comes first, in the claim's hold: the claimed child is DEAD, which
/// every waiter skips (as `wait_consider_task` skips `EXIT_DEAD`), and nothing else
/// reads a child's place on the list. The lock is dropped before the rest, which may
/// wake pidfd pollers and takes the child's siglock on its own.
#[inline]
pub(crate) fn release_claimed_child(i: usize, mut ch: SpinGuard<'_, Children>) {
    // Leave the list: its reference is the one this reap holds from here on (dropped
    // at the end, after the locks).
    // The list keeps fork order (wait reports the first ready child); the usual reap
    // takes the last entry, which needs no shift (`Vec::remove` would still call
    // `memmove` for the empty tail).
    let unlinked = if i + 1 == ch.list.len() {
        ch.list
            .pop()
            .expect("the claimed child's index is in the list")
    } else {
        ch.list.remove(i)
    };
    drop(ch);
    let cur = &unlinked.0;
    debug_assert_eq!(cur.exit_state.load(Ordering::Acquire), DEAD);
    debug_assert!(cur.leader, "a children list holds thread-group leaders");
    let status = cur.exit_status();
    uproc_pidfs::pidfs_exit(&cur.pid, status, cur.cgroup_id());
    cur.released.store(true, Ordering::Release);
    cur.css.release();
    let mut free = FreeList::default();
    // __unhash_process: detach_pid(PGID, SID, PID) under the child's siglock. Off
    // the list, the child has no parent that could need to be stable meanwhile.
    let ids = detach_leader(&mut cur.group().sig.lock(), &cur.pid, &mut free);
    cur.pid.task_slot().detach();
    free.free();
    let ids_may_free = ids.release();
    tracing::debug!(pid = cur.pid.numbers()[0].nr, "reap");
    recheck_zaps_without_runtime(cur, ids_may_free);
    // The list's reference, dropped last (as the waiter's own handle on the child was
    // before it moved here): the task may be freed with it.
    drop(unlinked);
}

/// `Scalable`'s namespace-init re-check after a reap, which holds no runtime: only when
/// a freed number (`ids_may_free`: a process-group or session id; or the task's own in a
/// closed namespace) can have emptied a closed namespace, so that the common reap never
/// reaches the runtime.
#[inline]
fn recheck_zaps_without_runtime(cur: &TaskInner, ids_may_free: bool) {
    if ids_may_free || in_closed_namespace(&cur.pid) {
        cold_path();
        if let Some(sys) = cur.sys() {
            sys.process_zaps();
        }
    }
}

/// One step of [`release_task`]: reaps `cur`; returns the delayed leader that became
/// reapable (and was claimed) by it, if any.
///
/// A leader leaves its parent group's list under that group's `children` lock
/// ([`TaskInner::with_parent_children`]: a concurrent reparent may have moved it); a
/// thread leaves its group's thread list under the siglock, where it also decides
/// whether it was the last thread of a delayed leader (rule 3: the siglock is dropped
/// before the leader's parent's `children` lock is taken for the notification).
fn release_one(sys: Option<&System>, cur: &Arc<TaskInner>) -> Option<Arc<TaskInner>> {
    debug_assert_eq!(cur.exit_state.load(Ordering::Acquire), DEAD);
    let status = cur.exit_status();
    uproc_pidfs::pidfs_exit(&cur.pid, status, cur.cgroup_id());
    cur.released.store(true, Ordering::Release);
    cur.css.release();
    let mut free = FreeList::default();
    let mut next = None;
    let mut notify_leader = None;
    let mut leader_signal = None;
    // Strong references dropped only after the locks (a drop may run a CssLink's
    // release, which takes css_set_lock, or free a pid: never under our locks).
    let mut unlinked: Option<Task> = None;
    let mut ids = DetachedIds::default();
    {
        let _tl = sys.and_then(System::tasklist_write_hot);
        let g = cur.group();
        if cur.leader {
            // __unhash_process: detach_pid(PGID, SID, PID) and leave the parent's
            // children list, in one hold of the siglock inside the parent's lock.
            cur.with_parent_children(|parent, mut st| {
                ids = detach_leader(&mut st, &cur.pid, &mut free);
                drop(st);
                if let Some((_, ch)) = parent {
                    if let Some(i) = ch.list.iter().position(|c| Arc::ptr_eq(&c.0, cur)) {
                        unlinked = Some(ch.list.remove(i));
                    }
                }
            });
            cur.pid.task_slot().detach();
        } else {
            let (leader, last_of_delayed) = {
                let mut st = g.sig.lock();
                st.threads
                    .retain(|w| !std::ptr::eq(w.as_ptr(), Arc::as_ptr(cur)));
                let leader = st.leader().upgrade();
                // The zap-leader check: the last thread of a delayed leader is gone.
                let ready = st.threads.is_empty()
                    && !st.zapping
                    && leader
                        .as_ref()
                        .is_some_and(|l| l.exit_state.load(Ordering::Acquire) == DELAYED);
                (leader, ready)
            };
            cur.pid.task_slot().detach();
            free.push(&cur.pid);
            if let Some(l) = leader {
                {
                    let mut rare = l.rare.lock();
                    let ths = rare.boxed.as_mut().map(|r| &mut r.threads);
                    if let Some(ths) = ths {
                        if let Some(i) = ths.iter().position(|x| Arc::ptr_eq(&x.0, cur)) {
                            unlinked = Some(ths.remove(i));
                        }
                    }
                }
                if last_of_delayed {
                    let status = final_status(&l);
                    l.exit_code.store(status.raw(), Ordering::Release);
                    if make_reportable(&l, &mut leader_signal) {
                        next = Some(l.clone());
                    }
                    notify_leader = Some((l, status));
                }
            }
        }
        free.free_if_locked_profile(cur.pid.ns().map().profile());
    }
    free.free();
    let ids_may_free = ids.release();
    drop(unlinked);
    tracing::debug!(pid = cur.pid.numbers()[0].nr, "reap");
    if let Some((l, status)) = notify_leader {
        send_exit_signal(&l, leader_signal);
        uproc_pidfs::do_notify_pidfd(&l.pid, status);
    }
    // A freed number may have emptied a closed namespace (the reaper wakeup raised the
    // runtime's re-check flag). `Linux*` look at the flag every time; `Scalable` only
    // when a number can have woken a reaper, without reaching the runtime otherwise.
    match sys {
        Some(sys) => sys.process_zaps(),
        None => recheck_zaps_without_runtime(cur, ids_may_free),
    }
    next
}

/// Whether a namespace of `pid` below the root is closed (its init died), read after
/// `pid` was freed: then the free may have emptied it, and the reaper's re-check must
/// run. A pid of the root namespace alone (the usual reap) answers at once.
///
/// The closing side (`zap_pid_ns_processes`) clears `adding`, fences (`SeqCst`), and
/// only then counts the namespace's pids (`try_finish_zap`); this side freed the pid,
/// fences, and reads `adding`. With a fence on each side, either this load sees the
/// namespace closed (and the re-check runs here), or the closer's count sees this free
/// (and it finishes itself): never neither. The model is `tests/loom_zap_check.rs`.
pub(crate) fn in_closed_namespace(pid: &uproc_pidns::Pid) -> bool {
    let nested = &pid.numbers()[1..];
    if nested.is_empty() {
        return false;
    }
    crate::sync::fence(Ordering::SeqCst);
    nested.iter().any(|u| !u.ns.is_adding())
}

/// A delayed leader `l` becomes reportable ([`publish_exit`] under its parent group's
/// `children` lock). Returns whether it autoreaps (the caller releases it). The caller
/// decided, under `l`'s siglock, that it is the one to do this (and holds no lock of
/// this crate but, under `Linux*`, `tasklist_lock`).
fn make_reportable(l: &Arc<TaskInner>, signal: &mut ParentSignal) -> bool {
    l.with_parent_children(|parent, st| {
        drop(st);
        publish_exit(l, parent, signal)
    })
}

/// The status a leader reports: the group exit code, set by a group exit or by the
/// last thread's exit (a thread that outlived its leader).
fn final_status(l: &TaskInner) -> WaitStatus {
    l.group()
        .sig
        .lock()
        .group_exit
        .unwrap_or_else(|| l.exit_status())
}

/// `zap_pid_ns_processes`, first half: the init `t`'s group died. Close the namespace
/// (fork into it fails with ENOMEM), SIGKILL every other task in it; the init stays a
/// non-reapable zombie until [`try_finish_zap`] sees the namespace empty.
fn zap_pid_ns_processes(sys: &System, t: &Arc<TaskInner>) {
    let leader = t.leader_task().unwrap_or_else(|| t.clone());
    let ns = leader.active_ns().clone();
    ns.disable_pid_allocation();
    // Pairs with fork's fence after its attach: either the walk below finds a task
    // attached in the namespace, or that fork sees it closed and kills its child.
    std::sync::atomic::fence(Ordering::SeqCst);
    tracing::debug!(
        level = ns.level(),
        "namespace init died: killing the namespace"
    );
    let victims: Vec<Arc<TaskInner>> = {
        // Slow path: read lock while walking (rule 1).
        let _r = sys.tasklist_lock.read();
        ns.pids()
            .iter()
            .filter_map(|p| crate::task::pid_task(p))
            .filter(|v| v.leader && !std::ptr::eq(v.group(), leader.group()))
            .collect()
    };
    // One kill walk: every victim has its SIGKILL before any dies (a victim's exit
    // then finds its parent and children in the namespace dying: no SIGCHLD or
    // parent-death signal of theirs acts on a victim).
    uproc_abi::walk::walk(|| {
        for v in &victims {
            let _ = crate::signal::send_group(v, Signal::KILL, crate::signal::Sender::Runtime);
        }
    });
    sys.zapping.lock().push(Task::from_inner(leader));
    sys.zap_check.raise();
    sys.process_zaps();
}

/// `zap_pid_ns_processes`, second half: once only the init's own pid is left in its
/// namespace (and its threads are released), it becomes a reportable zombie and its
/// parent is notified. Returns true when done (or nothing left to do).
pub(crate) fn try_finish_zap(sys: &System, l: &Arc<TaskInner>) -> bool {
    let ns = l.active_ns();
    // The init's number, and the waiting thread's when that is not the leader
    // (`zap_pid_ns_processes`'s `init_pids`).
    if ns.nr_allocated() > 2 {
        return false;
    }
    let mut exit_signal = None;
    let orphan;
    let waiter;
    // The leader's final status and whether it autoreaps, unless a waiting thread's
    // release below makes it reportable (as the release of any delayed leader's last
    // thread does).
    let finished = {
        let tl = sys.tasklist_write_hot();
        match l.exit_state.load(Ordering::Acquire) {
            DELAYED => {}
            // The leader's own exit is still on its way (its thread ended the process
            // and waits attached): it comes back here once DELAYED (`exit_notify`).
            RUNNING => return false,
            _ => return true,
        }
        {
            // `zapping` is the claim: cleared once, by whoever finishes.
            let mut st = l.group().sig.lock();
            if !st.zapping {
                return true;
            }
            // A thread other than the leader that ended the process waits attached,
            // its tid still found (`kill` and `tgkill` succeed, a thread pidfd
            // opens), as Linux's sleeps in `do_exit`; every other thread is released.
            waiter = ThreadGroup::attached_threads(&st).find(|th| {
                !th.leader && th.flags.load(Ordering::Acquire) & crate::task::ZAPPER != 0
            });
            let numbers = if waiter.is_some() { 2 } else { 1 };
            if st.threads.iter().count() > numbers - 1 || ns.nr_allocated() > numbers {
                return false;
            }
            st.zapping = false;
            // `exit_notify`'s `kill_orphaned_pgrp`, which Linux reaches once the zap
            // returns: the init counted as a live member of its process group until
            // now (`pgrp_orphaned`), and the group is judged as it is now.
            orphan = st
                .ids
                .as_ref()
                .is_some_and(|i| i.pgrp.has_stopped_members())
                .then(|| zapped_orphan_check(&st))
                .flatten();
        }
        // Decided in this hold and sent before the init becomes reportable, as
        // `exit_notify` does.
        let orphaned = orphan.and_then(|c| exit_orphaned_pgrp(l, c, tl.is_some()));
        let _tl = match orphaned {
            None => tl,
            Some(pgrp) => {
                drop(tl);
                crate::pgrp::signal_orphaned_pgrp(sys, &pgrp);
                sys.tasklist_write_hot()
            }
        };
        waiter.is_none().then(|| {
            let status = final_status(l);
            l.exit_code.store(status.raw(), Ordering::Release);
            (status, make_reportable(l, &mut exit_signal))
        })
    };
    tracing::debug!(level = ns.level(), "namespace empty: its init is reapable");
    let hot = sys.tasklist_on_hot_path.then_some(sys);
    if let Some(th) = waiter {
        // The rest of its `exit_notify`: a thread autoreaps, its pidfds readable.
        th.exit_state.store(DEAD, Ordering::Release);
        uproc_pidfs::do_notify_pidfd(&th.pid, th.exit_status());
        release_task(hot, &th);
        return true;
    }
    let Some((status, release)) = finished else {
        return true; // (set whenever there is no waiting thread)
    };
    send_exit_signal(l, exit_signal);
    uproc_pidfs::do_notify_pidfd(&l.pid, status);
    if release {
        release_task(hot, l);
    }
    true
}

impl Task {
    /// `exit(2)` of this thread with `code` (low 8 bits kept): the group ends with its
    /// last thread. Idempotent. The runtime init ignores it (it never exits).
    ///
    /// # References
    /// [_exit(2)](https://man7.org/linux/man-pages/man2/_exit.2.html), `do_exit`.
    pub fn exit(&self, code: i32) {
        do_exit(&self.0, WaitStatus::exited_with(code));
    }

    /// [exit_group(2)](https://man7.org/linux/man-pages/man2/exit_group.2.html): every
    /// thread of the group exits; the group's status is `code`. The runtime init
    /// never exits: its leader ignores this, another thread of it ends alone (Linux
    /// has no such case to copy: its init's group exit panics the kernel).
    pub fn exit_group(&self, code: i32) {
        do_group_exit(&self.0, WaitStatus::exited_with(code));
    }

    /// Death by `sig`: the group exits with a "killed by `sig`" status, as a runtime
    /// reports a fatal signal it acted on; its core bit set when `sig` dumps core
    /// ([`Signal::dumps_core`]) and the process does ([`Task::set_dumps_core`]).
    /// `Signal(0)` reads as `exit_group(0)`. A thread of the runtime init ends alone
    /// (the init never exits), as with [`exit_group`](Task::exit_group).
    pub fn exit_signaled(&self, sig: Signal) {
        let status = if sig.is_probe() {
            WaitStatus::exited_with(0)
        } else {
            let core = sig.dumps_core() && self.0.dumps_core();
            WaitStatus::signaled_by(sig, core)
        };
        do_group_exit(&self.0, status);
    }

    /// Whether this thread has not exited yet.
    pub fn is_alive(&self) -> bool {
        self.0.exit_state.load(Ordering::Acquire) == RUNNING
            && !self.0.exiting.load(Ordering::Acquire)
    }
}
