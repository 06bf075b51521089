//! Reparenting: `forget_original_parent`, `find_new_reaper`, `find_child_reaper`.
//!
//! When a thread group dies its children go to, in order: (a) a live thread of the same
//! group (only a thread exit, handled by [`pass_to_live_thread`]), (b) the nearest
//! ancestor in the same namespace level that is a child subreaper and still has a live
//! thread, (c) the namespace's `child_reaper` (its init). When the dying group IS the
//! init of a (non-root) namespace, its children stay: the namespace is zapped and they
//! autoreap (the init's SIGCHLD becomes ignored).

use crate::exit::{PostExit, claim, do_notify_parent, thread_group_empty};
use crate::signal::SigChld;
use crate::sync::Ordering;
use crate::task::{TaskInner, ThreadGroup, ZOMBIE};
use std::sync::Arc;
use uproc_abi::Signal;
use uproc_pidns::PidNamespace;

/// The namespace's `child_reaper` task.
pub(crate) fn child_reaper(ns: &PidNamespace) -> Option<Arc<TaskInner>> {
    ns.child_reaper()
        .and_then(|a| a.downcast::<TaskInner>().ok())
}

/// A live thread of `g` (`find_alive_thread`).
fn alive_thread(g: &ThreadGroup) -> Option<Arc<TaskInner>> {
    let st = g.sig.lock();
    ThreadGroup::live_threads(&st).next()
}

/// A thread exited while its group lives: the children it forked now belong to another
/// live thread (what `__WNOTHREAD` waits see), and move to the end of the group's list,
/// after every child already in it. Takes the group's `children` lock, then each
/// child's siglock (rules 2-3); the children stay in the same group's list.
///
/// Also wakes a waiter of `t` itself (blocked in wait on another OS thread) under that
/// lock: it sees `exiting` and returns EINTR. The group's other waiters sleep on, as
/// in Linux, where a hand-over inside the process wakes nobody.
///
/// The heir is chosen under the `children` lock (then the siglock, rule 2): a thread
/// that began exiting before this lock was taken has already handed on its own
/// children under it, so it must not receive these; one that begins later hands these
/// on too, under the same lock, after this pass (a heir chosen before the lock could be
/// such an already-passed thread, and the children would keep a parent that no longer
/// exists).
pub(crate) fn pass_to_live_thread(t: &Arc<TaskInner>, post: &mut PostExit) {
    let mut ch = t.group().children.lock();
    t.group().wake_exiting_waiter(&ch);
    let Some(heir) = alive_thread(t.group()) else {
        return;
    };
    // Linux moves them to the tail of the heir's own list (`reparent_leader`'s
    // `list_move_tail`), so that a wait meets them after the heir's own children,
    // forked before or after. Here: to the tail of the one list, in their order, which
    // is that order for every thread's view of it (`wait_order`).
    let mut passed = Vec::new();
    let mut pdeath = Vec::new();
    ch.list.retain(|c| {
        let cg = c.0.group();
        let mut cs = cg.sig.lock();
        let is_mine = std::ptr::eq(cs.real_parent.as_ptr(), Arc::as_ptr(t));
        if is_mine {
            cg.set_real_parent(&mut cs, Arc::downgrade(&heir));
            pdeath_signals_of(&c.0, &cs, &mut pdeath);
            passed.push(c.clone());
        }
        !is_mine
    });
    ch.list.extend(passed);
    // The parent *thread* died: its children hear their parent-death signals even
    // though their process lives on in the heir (the `PR_SET_PDEATHSIG` gotcha), once
    // `exit_notify` dropped its locks (a fatal one ends the child, which takes them).
    if !pdeath.is_empty() {
        post.reparent_checks.get_or_insert_default().pdeath = pdeath;
    }
}

/// The parent-death signals of the threads of a child being handed on (`leader`; the
/// caller holds its siglock, `cs`, with its new `real_parent` written), read in the
/// hand-over as Linux reads `t->pdeath_signal` there: a signal set or cleared after it
/// counts for the next hand-over. One load per thread that never used its rare fields
/// (the leader the caller's own reference, no count taken); the rare lock nests inside
/// the siglock (as `TaskInner::managed`'s).
pub(crate) fn pdeath_signals_of(
    leader: &Arc<TaskInner>,
    cs: &crate::task::GroupState,
    out: &mut Vec<(Arc<TaskInner>, Signal)>,
) {
    let mut note = |th: &Arc<TaskInner>| {
        if th.rare_ever_used() {
            if let Some(sig) = th.rare.lock().boxed.as_ref().and_then(|r| r.pdeath_signal) {
                out.push((Arc::clone(th), sig));
            }
        }
    };
    note(leader);
    for th in cs.threads.iter().filter_map(std::sync::Weak::upgrade) {
        note(&th);
    }
}

/// `forget_original_parent`'s `group_send_sig_info(t->pdeath_signal, SEND_SIG_NOINFO,
/// t, PIDTYPE_TGID)`: each thread noted in the hand-over ([`pdeath_signals_of`]) sends
/// its signal to its own process, as from the exiting thread `father`. Called by
/// `exit_notify` with no lock held, before `father` becomes a zombie.
///
/// One kill walk ([`uproc_abi::walk`]): a bare child a signal kills ends once every
/// signal is sent, not inside the send. Its exit hands its own children on and sends
/// their signals in a walk of its own, whose ends join the same queue, so a chain of
/// such tasks of any length ends without recursion.
pub(crate) fn send_pdeath_signals(father: &Arc<TaskInner>, sigs: Vec<(Arc<TaskInner>, Signal)>) {
    if sigs.is_empty() {
        return;
    }
    uproc_abi::walk::walk(|| {
        for (th, sig) in sigs {
            tracing::debug!(pid = th.pid.numbers()[0].nr, %sig, "parent-death signal");
            let sender = crate::signal::Sender::Task(father);
            let _ = crate::signal::send_group(&th, sig, sender);
        }
    });
}

/// `find_new_reaper`: (b) then (c) above. Siglocks one at a time (rule 3); the caller
/// may hold the dying group's `children` lock.
fn find_new_reaper(t: &TaskInner, ns: &PidNamespace) -> Option<Arc<TaskInner>> {
    let (has_sub, mut p) = {
        let st = t.group().sig.lock();
        (st.has_child_subreaper, st.real_parent.upgrade())
    };
    let init = child_reaper(ns);
    if has_sub {
        let level = t.pid.level();
        while let Some(r) = p {
            if r.pid.level() != level {
                break;
            }
            let (is_sub, next) = {
                let st = r.group().sig.lock();
                (st.is_subreaper, st.real_parent.upgrade())
            };
            if is_sub {
                if let Some(live) = alive_thread(r.group()) {
                    return Some(live);
                }
            }
            if init
                .as_ref()
                .is_some_and(|i| std::ptr::eq(i.group(), r.group()))
            {
                break;
            }
            p = next;
        }
    }
    let init = init?;
    Some(alive_thread(init.group()).unwrap_or(init))
}

/// `forget_original_parent`: the last thread of `t`'s group exited; hand its children
/// to the new reaper, re-notifying (and maybe reaping) those already zombies, and wake
/// the group's waiters (see [`pass_to_live_thread`]).
///
/// Locks (the only place this crate holds two `children` locks, see THE LOCK ORDER in
/// the crate docs): the dying group D's `children` lock, held throughout; D's list is
/// marked closed in the same critical section, so no child attaches after the
/// hand-over. Then the reaper R's `children` lock (R is a live thread's group, a
/// subreaper ancestor of D, or D's namespace init), and each child's siglock, then
/// R's siglock through [`do_notify_parent`] (rule 3, one at a time). A child's
/// `real_parent`, `exit_signal` and `autoreap` change with both lists locked, so a
/// child exiting concurrently (which notifies under its parent's `children` lock,
/// re-checking `real_parent` once it holds it) notifies exactly one of D and R, and a
/// waiter on R never sees a child in flight. If R closed its own list meanwhile (it is
/// dying too and has or will hand its children on), the search starts again: R has no
/// live thread any more, so it is skipped; a namespace init is the exception and keeps
/// adopting (its orphans autoreap).
#[inline]
///
/// `childless`: the group never had a child on its list and cannot get one any more
/// (`GroupState::had_children`, read in the exit's last live-count hold): nothing to
/// close, hand over or wake (a waiter sleeps only while it has a child), so no lock.
pub(crate) fn forget_original_parent(t: &Arc<TaskInner>, post: &mut PostExit, childless: bool) {
    let g = t.group();
    let ns = t.active_ns();
    // Only a nested namespace's init is handled apart (the root's init hands its
    // children on like anyone).
    let is_init = ns.level() > 0 && group_is_init_of(t, ns);
    if is_init {
        // find_child_reaper -> zap_pid_ns_processes: the init keeps its children; they
        // autoreap from now on, and the zombies among them are reaped now.
        {
            let mut st = g.sig.lock();
            st.sigchld = SigChld::Ignore;
            st.zapping = true;
            t.flags.fetch_or(crate::task::ZAPPER, Ordering::AcqRel);
            st.shared_pending.set_chld_noop(false);
        }
        let mut ch = g.children.lock();
        g.close_children(&mut ch);
        g.notify_waiters(&ch);
        for c in ch.list.iter() {
            if claim(&c.0, &ch) {
                post.release.push(Arc::clone(&c.0));
            }
        }
        post.zap = true;
        return;
    }
    if childless {
        return;
    }
    let mut mine = g.children.lock();
    g.close_children(&mut mine);
    // A waiter of the exiting thread itself (blocked in wait on another OS thread)
    // sees `exiting` and returns EINTR: woken here, under the lock it sleeps on.
    g.notify_waiters(&mine);
    // Nothing to hand over: skip the reaper search (it has no side effects).
    if mine.list.is_empty() {
        return;
    }
    loop {
        let Some(reaper) = find_new_reaper(t, ns) else {
            debug_assert!(false, "every namespace has a child reaper");
            return;
        };
        if std::ptr::eq(reaper.group(), g) {
            return;
        }
        // D before R: R is an ancestor of D or its namespace's init.
        let mut theirs = reaper.group().children.lock();
        // R has children from here on, unless it died meanwhile: a dead R that never
        // had any may have skipped its hand-over (`GroupState::had_children`), so it
        // counts as closed.
        let reaper_dead = {
            let mut rs = reaper.group().sig.lock();
            rs.had_children = true;
            rs.nr_live == 0
        };
        if (reaper.group().children_closed(&theirs) || reaper_dead)
            && !is_child_reaper_of(&reaper, reaper.active_ns())
        {
            drop(theirs);
            continue;
        }
        // The thread chosen may have begun exiting since (`find_alive_thread` and
        // this hand-over are one `tasklist_lock` hold in Linux, two steps here): if
        // its own hand-over (`pass_to_live_thread`, under this lock) already ran, it
        // would never pass these children on, so they go to a thread still live now.
        // A thread that begins exiting after this check passes them on itself.
        // Without a live thread the group is dying and its `forget_original_parent`,
        // after this hold, hands them on with the rest of its list.
        let live;
        let reaper = if reaper.exiting.load(Ordering::Acquire) {
            live = alive_thread(reaper.group());
            live.as_ref().unwrap_or(&reaper)
        } else {
            &reaper
        };
        let adopt_autoreap = reaper.group().reaps_orphans();
        for c in mine.list.drain(..) {
            let cg = c.0.group();
            {
                let mut cs = cg.sig.lock();
                cg.set_real_parent(&mut cs, Arc::downgrade(reaper));
                // `reparent_leader`'s `kill_orphaned_pgrp(p, father)`: only a group with
                // a stopped member can need it; decided once the locks are dropped.
                let orphan_check = cs
                    .ids
                    .as_ref()
                    .is_some_and(|i| i.pgrp.has_stopped_members());
                let mut pdeath = Vec::new();
                pdeath_signals_of(&c.0, &cs, &mut pdeath);
                if orphan_check || !pdeath.is_empty() {
                    drop(cs);
                    // (It may hold the exit's own orphan check already.)
                    let checks = post.reparent_checks.get_or_insert_default();
                    if checks.father_ids.is_none() {
                        // Rule 3: the siglock inside the children lock; the exiting
                        // process, not yet published, cannot be released meanwhile.
                        checks.father_ids = g.sig.lock().ids.clone();
                    }
                    if orphan_check {
                        checks.children.push(Arc::clone(&c.0));
                    }
                    checks.pdeath.append(&mut pdeath);
                }
            }
            // reparent_leader: "We don't want people slaying init."
            c.0.exit_signal.store(Signal::CHLD.raw(), Ordering::Release);
            if adopt_autoreap {
                c.0.group().autoreap.store(true, Ordering::Release);
            }
            tracing::debug!(
                child = c.0.pid.numbers()[0].nr,
                reaper = reaper.pid.numbers()[0].nr,
                "reparent"
            );
            // The exit signal was just reset to SIGCHLD: nothing is left to send later.
            let mut none = None;
            // Already a zombie: a claim (under both lists' locks) decides against a
            // waiter of the old
            // parent. The new parent's waiters are woken below, once the list is
            // complete.
            if c.0.exit_state.load(Ordering::Acquire) == ZOMBIE
                && thread_group_empty(c.0.group())
                && do_notify_parent(&c.0, Some(reaper), &mut none)
                && claim(&c.0, &theirs)
            {
                post.release.push(Arc::clone(&c.0));
            }
            debug_assert!(
                none.is_none(),
                "a reparented child's exit signal is SIGCHLD"
            );
            theirs.list.push(c);
        }
        reaper.group().notify_waiters(&theirs);
        return;
    }
}

/// Whether the group whose last thread `t` is ends the init of `ns`, decided without
/// the namespace's reaper lookup when `t` is the group's leader: a namespace's
/// `child_reaper` is only ever its pid 1 (set at that fork's attach), and number 1 is
/// never handed out again once the namespace's init died (the namespace is closed).
/// The lookup is a read lock and a `Weak::upgrade` on cache lines every exit in the
/// namespace would otherwise share; a non-leader thread ending its group (rare) still
/// asks the namespace.
pub(crate) fn group_is_init_of(t: &TaskInner, ns: &PidNamespace) -> bool {
    if t.leader {
        return t.pid.nr() == 1 && std::ptr::eq(Arc::as_ptr(t.pid.ns()), ns);
    }
    is_child_reaper_of(t, ns)
}

/// Whether `t`'s group is the init of `ns`.
fn is_child_reaper_of(t: &TaskInner, ns: &PidNamespace) -> bool {
    child_reaper(ns).is_some_and(|r| std::ptr::eq(r.group(), t.group()))
}
