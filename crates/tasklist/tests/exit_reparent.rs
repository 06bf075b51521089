//! Exit, zombies, autoreap and reparenting (selftests: `exit/`, `prctl` subreaper,
//! `clone3` CLONE_AUTOREAP).

#[macro_use]
mod common;
use common::*;
use std::sync::Arc;
use uproc_abi::{CloneFlags, Errno, Signal, WaitOptions};
use uproc_tasklist::{CloneArgs, SigChld, Task, TaskState, WaitId};

fn exit_is_idempotent_and_zombie_until_reaped() {
    let sys = system();
    let init = sys.init();
    let c = fork(&init);
    c.exit(5);
    c.exit(6);
    assert_eq!(c.state(), TaskState::Zombie);
    assert_eq!(
        c.exit_status().unwrap().exited(),
        Some(5),
        "the second exit is a no-op"
    );
    assert_eq!(reap(&init, &c).status.exited(), Some(5));
    assert_eq!(c.state(), TaskState::Dead);
    assert_at_rest(&sys);
}

fn runtime_init_never_exits() {
    let sys = system();
    let init = sys.init();
    init.exit(0);
    init.exit_group(1);
    init.exit_signaled(Signal::KILL);
    assert_eq!(
        init.state(),
        TaskState::Running,
        "the runtime init ignores exit"
    );
    let c = fork(&init);
    c.exit(0);
    reap(&init, &c);
}

/// A thread of the runtime init that calls `exit_group` or reports a fatal signal
/// ends alone: the init lives on (it ignores both itself) and nothing is kept.
fn a_thread_of_the_runtime_init_ends_alone() {
    let sys = system();
    let init = sys.init();
    let before = sys.nr_tasks();
    for end in [
        (|t: &Task| t.exit_group(3)) as fn(&Task),
        |t| t.exit_signaled(Signal::ABRT),
        |t| t.exit_signaled(Signal::KILL),
    ] {
        let t = thread(&init);
        let pidfd = init
            .pidfd_open(init.pid_of(&t), uproc_abi::PidfdFlags::THREAD)
            .unwrap();
        end(&t);
        assert_eq!(
            t.state(),
            TaskState::Dead,
            "the thread ended and was released"
        );
        assert_eq!(init.state(), TaskState::Running);
        assert!(pidfd.poll().readable, "its thread pidfd says so");
        assert_eq!(sys.nr_tasks(), before);
    }
    let c = fork(&init);
    c.exit(0);
    reap(&init, &c);
    assert_at_rest(&sys);
}

fn orphans_go_to_runtime_init_which_reaps_them() {
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    let c = fork(&p);
    let weak = c.downgrade();
    p.exit(0);
    reap(&init, &p);
    assert_eq!(c.ppid(), 1, "orphan reparented to init");
    c.exit(0);
    assert_eq!(
        c.state(),
        TaskState::Dead,
        "init reaps orphans (reap_orphans)"
    );
    drop(c);
    assert!(weak.upgrade().is_none(), "the reaped orphan is freed");
    assert_at_rest(&sys);
}

fn without_reap_orphans_init_must_wait_for_orphans() {
    let sys = system_without_orphan_reaping();
    let init = sys.init();
    let p = fork(&init);
    let c = fork(&p);
    p.exit(0);
    reap(&init, &p);
    c.exit(3);
    assert_eq!(c.state(), TaskState::Zombie);
    assert_eq!(reap(&init, &c).status.exited(), Some(3));
}

fn orphans_go_to_the_nearest_subreaper() {
    let sys = system();
    let init = sys.init();
    let s = fork(&init);
    s.set_child_subreaper(true);
    let p = fork(&s);
    let q = fork(&p);
    let c = fork(&q);
    q.exit(0);
    reap(&p, &q);
    assert_eq!(c.ppid(), s.pid(), "orphan goes to the subreaper, not init");
    p.exit(0);
    reap(&s, &p);
    c.exit(8);
    assert_eq!(
        c.state(),
        TaskState::Zombie,
        "a subreaper does not autoreap"
    );
    assert_eq!(reap(&s, &c).status.exited(), Some(8));
    s.exit(0);
    reap(&init, &s);
    assert_at_rest(&sys);
}

fn subreaper_set_after_fork_still_adopts_descendants() {
    let sys = system();
    let init = sys.init();
    let s = fork(&init);
    let p = fork(&s);
    let c = fork(&p);
    s.set_child_subreaper(true);
    p.exit(0);
    reap(&s, &p);
    assert_eq!(
        c.ppid(),
        s.pid(),
        "has_child_subreaper propagated to existing descendants"
    );
    c.exit(0);
    reap(&s, &c);
}

fn dead_subreaper_is_skipped() {
    let sys = system();
    let init = sys.init();
    let s = fork(&init);
    s.set_child_subreaper(true);
    let p = fork(&s);
    let c = fork(&p);
    s.exit(0); // p goes to init
    reap(&init, &s);
    p.exit(0);
    assert_eq!(c.ppid(), 1, "no live subreaper: the namespace init");
    c.exit(0);
}

fn zombie_orphan_is_renotified_to_new_parent() {
    let sys = system();
    let init = sys.init();
    let s = fork(&init);
    s.set_child_subreaper(true);
    let p = fork(&s);
    let c = fork(&p);
    c.exit(4);
    assert_eq!(c.state(), TaskState::Zombie);
    p.exit(0);
    reap(&s, &p);
    assert_eq!(c.ppid(), s.pid());
    assert_eq!(
        reap(&s, &c).status.exited(),
        Some(4),
        "the adopted zombie is waitable"
    );
    // The same to the runtime init: reaped at once.
    let p = fork(&init);
    let c = fork(&p);
    c.exit(0);
    p.exit(0);
    assert_eq!(
        c.state(),
        TaskState::Dead,
        "zombie adopted by init is reaped"
    );
    reap(&init, &p);
    s.exit(0);
    reap(&init, &s);
    assert_at_rest(&sys);
}

fn zombie_leader_with_live_threads_is_not_reapable() {
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    let t = thread(&p);
    let fd = init
        .pidfd_open(init.pid_of(&p), Default::default())
        .unwrap();
    p.exit(3);
    assert_eq!(p.state(), TaskState::Zombie);
    assert_eq!(
        init.wait(WaitId::All, WaitOptions::EXITED | WaitOptions::NOHANG),
        Ok(None),
        "delay_group_leader: eligible but not ready"
    );
    assert!(
        !fd.poll().readable,
        "a delayed leader's pidfd is not readable"
    );
    t.exit(9);
    assert_eq!(t.state(), TaskState::Dead, "threads autoreap");
    assert!(
        fd.poll().readable,
        "last thread gone: the leader's pidfd is readable"
    );
    let info = init
        .wait(WaitId::All, WaitOptions::EXITED | WaitOptions::NOHANG)
        .unwrap()
        .unwrap();
    assert_eq!(
        info.status.exited(),
        Some(9),
        "no group exit: the last thread's code is the group's (`synchronize_group_exit`; \
         Linux 6.18 reports 0x900 to wait and in PIDFD_INFO_EXIT)"
    );
    let exit = fd.info(uproc_abi::InfoMask::EXIT).unwrap();
    assert_eq!(exit.exit_code, info.status.raw(), "pidfs records the same");
    assert_at_rest(&sys);
}

fn exit_group_ends_every_thread_with_group_code() {
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    let t1 = thread(&p);
    let t2 = thread(&t1);
    t2.exit_group(42);
    assert_eq!(t1.state(), TaskState::Dead);
    assert_eq!(t2.state(), TaskState::Dead);
    assert_eq!(reap(&init, &p).status.exited(), Some(42), "group exit code");
    assert_at_rest(&sys);
}

fn autoreap_when_parent_ignores_or_nocldwait() {
    let sys = system();
    let init = sys.init();
    for d in [SigChld::Ignore, SigChld::NoCldWait] {
        let p = fork(&init);
        p.set_sigchld(d);
        let c = fork(&p);
        c.exit(0);
        assert_eq!(c.state(), TaskState::Dead, "{d:?}: reaped at exit");
        assert_eq!(p.wait(WaitId::All, WaitOptions::EXITED), Err(Errno::ECHILD));
        assert_eq!(
            p.pending_signals().contains(&Signal::CHLD),
            d == SigChld::NoCldWait,
            "SA_NOCLDWAIT still sends SIGCHLD; SIG_IGN does not"
        );
        p.exit(0);
        reap(&init, &p);
    }
    assert_at_rest(&sys);
}

fn clone_autoreap_child_is_never_a_zombie_even_after_reparent() {
    let sys = system_without_orphan_reaping();
    let init = sys.init();
    let c = fork_flags(&init, CloneFlags::AUTOREAP);
    c.exit(0);
    assert_eq!(c.state(), TaskState::Dead, "CLONE_AUTOREAP: reaped at exit");
    let p = fork(&init);
    let c = fork_flags(&p, CloneFlags::AUTOREAP);
    let g = fork(&c);
    p.exit(0);
    reap(&init, &p);
    c.exit(0);
    assert_eq!(c.state(), TaskState::Dead, "autoreap survives reparenting");
    g.exit(0);
    assert_eq!(
        g.state(),
        TaskState::Zombie,
        "autoreap is not inherited by grandchildren"
    );
    reap(&init, &g);
    assert_at_rest(&sys);
}

fn reaped_tasks_are_freed() {
    let sys = system();
    let init = sys.init();
    let mut weaks = Vec::new();
    for _ in 0..10 {
        let c = fork(&init);
        let t = thread(&c);
        weaks.push(c.downgrade());
        weaks.push(t.downgrade());
        t.exit(0);
        c.exit(0);
        reap(&init, &c);
    }
    for w in weaks {
        assert!(w.upgrade().is_none(), "no Arc cycle keeps a reaped task");
    }
    assert_at_rest(&sys);
}

fn orphaned_thread_children_move_to_a_live_thread() {
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    let t = thread(&p);
    let c = fork(&t);
    t.exit(0);
    assert_eq!(c.ppid(), p.pid(), "the group keeps the child");
    c.exit(0);
    let info = p
        .wait(WaitId::All, WaitOptions::EXITED | WaitOptions::NOTHREAD)
        .unwrap()
        .unwrap();
    assert_eq!(
        info.pid,
        p.pid_of(&c),
        "the child passed to the live thread"
    );
    p.exit(0);
    reap(&init, &p);
}

fn clone_parent_makes_a_sibling() {
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    let s = p
        .fork(&CloneArgs {
            flags: CloneFlags::PARENT,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(s.ppid(), 1, "CLONE_PARENT: the caller's parent");
    s.exit(0);
    reap(&init, &s);
    p.exit(0);
    reap(&init, &p);
    let _ = Arc::strong_count(&sys);
}

fn parent_and_ppid_in_follow_reparenting() {
    let sys = system();
    let init = sys.init();
    let mid = fork(&init);
    let leaf = fork(&mid);
    assert_eq!(leaf.parent(), Some(mid.clone()));
    assert_eq!(leaf.ppid_in(sys.root_ns()), mid.pid());
    assert_eq!(init.parent(), None, "the runtime init has no parent");
    assert_eq!(init.ppid(), 0);
    mid.exit(0);
    assert_eq!(
        leaf.parent(),
        Some(init.clone()),
        "Linux: an orphan is adopted by the namespace's child_reaper"
    );
    assert_eq!(leaf.ppid(), 1);
    reap(&init, &mid);
    leaf.exit(0);
    assert_at_rest(&sys);
}

/// Forks a child of `parent` whose exit signal is `sig`.
fn fork_with_exit_signal(parent: &uproc_tasklist::Task, sig: Signal) -> uproc_tasklist::Task {
    parent
        .fork(&CloneArgs {
            exit_signal: Some(sig),
            ..Default::default()
        })
        .expect("fork with an exit signal")
}

/// Reaps a "clone" child (exit signal other than SIGCHLD) of `parent`.
fn reap_clone_child(
    parent: &uproc_tasklist::Task,
    c: &uproc_tasklist::Task,
) -> uproc_abi::WaitStatus {
    parent
        .wait(
            WaitId::Pid(parent.pid_of(c)),
            WaitOptions::EXITED | WaitOptions::ALL,
        )
        .expect("the child is waitable with __WALL")
        .expect("blocking wait")
        .status
}

#[test]
fn fatal_exit_signal_is_delivered_to_the_parent_and_ignored_by_an_init() {
    for &p in uproc_abi::Profile::ALL {
        let sys = system_with(p);
        let init = sys.init();
        // The runtime init ignores it, as an init ignores every signal without a handler.
        for sig in [Signal::KILL, Signal::TERM, Signal::USR1] {
            let c = fork_with_exit_signal(&init, sig);
            c.exit(0);
            assert_eq!(reap_clone_child(&init, &c).exited(), Some(0));
            assert!(!init.fatal_signal_pending(), "{p}: init ignores {sig}");
            let d = init
                .fork(&CloneArgs::default())
                .expect("init still forks (no EINTR)");
            d.exit(0);
            reap(&init, &d);
        }
        // Any other parent takes the default action: a fatal one ends it.
        for sig in [Signal::KILL, Signal::TERM, Signal::USR1] {
            let parent = fork(&init);
            let c = fork_with_exit_signal(&parent, sig);
            c.exit(0);
            assert!(
                !parent.is_alive(),
                "{p}: {sig} as exit signal kills the parent"
            );
            assert_eq!(
                reap(&init, &parent).status.signaled(),
                Some(sig),
                "{p}: the parent died of {sig}"
            );
        }
        // An ignored default action (SIGURG) leaves the parent as it was.
        let parent = fork(&init);
        let c = fork_with_exit_signal(&parent, Signal::URG);
        c.exit(0);
        assert!(parent.is_alive());
        assert_eq!(reap_clone_child(&parent, &c).exited(), Some(0));
        assert!(
            parent.pending_signals().is_empty(),
            "{p}: an ignored signal is not queued"
        );
        parent
            .fork(&CloneArgs::default())
            .expect("the parent still forks")
            .exit(0);
        parent.exit(0);
        reap(&init, &parent);
        // A namespace init ignores it too.
        let ns_init = fork_flags(&init, CloneFlags::NEWPID);
        let c = fork_with_exit_signal(&ns_init, Signal::KILL);
        c.exit(0);
        assert!(
            ns_init.is_alive(),
            "{p}: a namespace init ignores its child's SIGKILL"
        );
        assert_eq!(reap_clone_child(&ns_init, &c).exited(), Some(0));
        ns_init
            .fork(&CloneArgs::default())
            .expect("and still forks")
            .exit(0);
        ns_init.exit(0);
        reap(&init, &ns_init);
        while init.wait(
            WaitId::All,
            WaitOptions::EXITED | WaitOptions::ALL | WaitOptions::NOHANG,
        ) != Err(Errno::ECHILD)
        {}
        assert_at_rest(&sys);
    }
}

/// Which ready child a wait meets first once an exiting thread handed its children on:
/// Linux moves them to the tail of the heir thread's list (`list_move_tail`), after
/// the heir's own children, forked before or after (each order below measured on
/// Linux 6.18 with the same forks and exits).
fn children_handed_on_by_a_thread_come_after_the_heirs_own() {
    let first = |waiter: &Task, opts: WaitOptions| {
        let opts = opts | WaitOptions::EXITED | WaitOptions::NOHANG | WaitOptions::NOWAIT;
        waiter.wait(WaitId::All, opts).unwrap().unwrap().pid
    };
    // A thread forks B, the leader then forks A: the leader meets its own A first,
    // and still after the thread's exit put B on its list.
    let sys = system();
    let init = sys.init();
    let leader = fork(&init);
    let t = thread(&leader);
    let b = fork(&t);
    let a = fork(&leader);
    a.exit(1);
    b.exit(2);
    assert_eq!(first(&leader, WaitOptions::empty()), leader.pid_of(&a));
    t.exit(0);
    assert_eq!(
        first(&leader, WaitOptions::empty()),
        leader.pid_of(&a),
        "B comes after A"
    );
    // The leader forks A, a thread forks B, the leader exits as a thread: the thread's
    // own B comes first, A after it.
    let leader = fork(&init);
    let t = thread(&leader);
    let a = fork(&leader);
    let b = fork(&t);
    a.exit(1);
    b.exit(2);
    leader.exit(0);
    assert_eq!(first(&t, WaitOptions::NOTHREAD), t.pid_of(&b));
    // The leader forks A and C around a thread's B; the thread exits, then the
    // process: a subreaper meets them as A, C, B.
    let sub = fork(&init);
    sub.set_child_subreaper(true);
    let leader = fork(&sub);
    let t = thread(&leader);
    let a = fork(&leader);
    let b = fork(&t);
    let c = fork(&leader);
    t.exit(0);
    leader.exit(0);
    reap(&sub, &leader);
    for x in [&a, &b, &c] {
        x.exit(0);
    }
    let order: Vec<i32> = (0..3)
        .map(|_| {
            let opts = WaitOptions::EXITED | WaitOptions::NOHANG;
            sub.wait(WaitId::All, opts).unwrap().unwrap().pid
        })
        .collect();
    assert_eq!(order, [a, c, b].map(|x| sub.pid_of(&x)));
}

/// `PR_SET_PDEATHSIG`: the signal comes when the parent *thread* exits (its process
/// may live on in another thread), at each later hand-over too, as from the parent;
/// a fork does not inherit it; signal 0 clears it.
fn a_parent_death_signal_follows_the_parent_thread() {
    let sys = system_without_orphan_reaping();
    let init = sys.init();
    // The parent process dies: the child dies of its SIGUSR1.
    let p = fork(&init);
    let c = fork(&p);
    assert_eq!(c.pdeath_signal(), None);
    c.set_pdeath_signal(Signal::USR1);
    assert_eq!(c.pdeath_signal(), Some(Signal::USR1));
    let g = fork(&c);
    assert_eq!(g.pdeath_signal(), None, "not inherited");
    p.exit(0);
    reap(&init, &p);
    assert_eq!(
        c.exit_status().and_then(|s| s.signaled()),
        Some(Signal::USR1)
    );
    assert!(g.is_alive(), "its own child has none");
    // The parent thread exits, its process lives on: the signal comes all the same.
    let p = fork(&init);
    let t = thread(&p);
    let c = fork(&t);
    c.set_pdeath_signal(Signal::USR2);
    let cleared = fork(&t);
    cleared.set_pdeath_signal(Signal::USR2);
    cleared.set_pdeath_signal(Signal::new(0).unwrap());
    assert_eq!(cleared.pdeath_signal(), None);
    t.exit(0);
    assert!(p.is_alive());
    assert_eq!(
        c.exit_status().and_then(|s| s.signaled()),
        Some(Signal::USR2)
    );
    assert!(cleared.is_alive());
    // A signal the child only hears (SIGCHLD is ignored by default): it lives on and
    // hears it again at the next hand-over.
    cleared.set_pdeath_signal(Signal::CHLD);
    let t2 = thread(&p);
    let c2 = fork(&t2);
    c2.set_pdeath_signal(Signal::CONT);
    t2.exit(0);
    p.exit(0);
    assert!(
        cleared.is_alive() && c2.is_alive(),
        "SIGCHLD and SIGCONT kill no one"
    );
    for x in [&c, &cleared, &c2] {
        if x.is_alive() {
            x.exit(0);
        }
    }
    g.exit(0);
    // A namespace init child takes it as a signal from its parent's (ancestor)
    // namespace: SIGKILL kills it (and its namespace), SIGTERM is ignored.
    let p = fork(&init);
    let spared = fork_flags(&p, CloneFlags::NEWPID);
    spared.set_pdeath_signal(Signal::TERM);
    let killed = fork_flags(&p, CloneFlags::NEWPID);
    killed.set_pdeath_signal(Signal::KILL);
    p.exit(0);
    assert!(spared.is_alive(), "an init ignores SIGTERM from outside");
    assert_eq!(
        killed.exit_status().and_then(|s| s.signaled()),
        Some(Signal::KILL)
    );
    spared.exit(0);
    reap_every_zombie(&init);
    assert_at_rest(&sys);
}

/// Bare tasks killed by their parents' deaths, one generation after the other: the
/// sends loop instead of nesting (a 20,000-deep chain on a 512 KiB stack), and every
/// task dies.
fn a_chain_of_parent_death_kills_does_not_recurse() {
    let sys = system_without_orphan_reaping();
    let init = sys.init();
    let top = fork(&init);
    let mut chain = vec![top.clone()];
    for _ in 0..20_000 {
        let c = fork(chain.last().unwrap());
        c.set_pdeath_signal(Signal::KILL);
        chain.push(c);
    }
    let ended = std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(move || {
            top.exit(0);
            chain.iter().skip(1).all(|t| !t.is_alive())
        })
        .unwrap()
        .join()
        .expect("no stack overflow");
    assert!(ended, "every task of the chain died");
    reap_every_zombie(&init);
    assert_at_rest(&sys);
}

/// Linux sends a dying process's parent-death signals and its orphaned-group SIGHUPs
/// (`forget_original_parent`, `kill_orphaned_pgrp`) in the `tasklist_lock` hold that
/// makes it a zombie, before it, and the targets act on them later, in their own
/// context: a handler finds the parent a zombie (300 of 300 rounds on 6.18) and every
/// signal of the exit sent. Each child here records, from its signal hook, whether its
/// parent could be reaped then, and whether a sibling signalled after it has its signal.
fn exit_signals_are_sent_before_the_parent_is_reapable() {
    /// Installs a hook on `c` that records whether `waiter` could reap `dead` then,
    /// and whether `sibling` (if any) had its `sig` or was dead.
    fn probe(
        c: &Task,
        waiter: &Task,
        dead: &Task,
        sibling: Option<(Task, Signal)>,
    ) -> Arc<std::sync::Mutex<Option<(bool, bool)>>> {
        let seen = Arc::new(std::sync::Mutex::new(None));
        let (waiter, nr, seen2) = (waiter.clone(), waiter.pid_of(dead), seen.clone());
        c.set_signal_hook(Some(Arc::new(move |_sig| {
            let opts = WaitOptions::EXITED | WaitOptions::NOHANG | WaitOptions::NOWAIT;
            let reapable = waiter.wait(WaitId::Pid(nr), opts).unwrap().is_some();
            let sent = sibling
                .as_ref()
                .is_none_or(|(s, sig)| !s.is_alive() || s.pending_signals().contains(sig));
            seen2.lock().unwrap().get_or_insert((reapable, sent));
        })));
        seen
    }
    let sys = system_without_orphan_reaping();
    let init = sys.init();
    // Parent-death signals: c2's is sent after c1's, whose hook looks.
    let gp = fork(&init);
    let f = fork(&gp);
    let c1 = fork(&f);
    let c2 = fork(&f);
    c1.set_pdeath_signal(Signal::USR1);
    c2.set_pdeath_signal(Signal::USR2);
    let seen = probe(&c1, &gp, &f, Some((c2.clone(), Signal::USR2)));
    f.exit(0);
    assert_eq!(
        *seen.lock().unwrap(),
        Some((true, true)),
        "(f reapable, c2's signal sent) when c1's handler runs"
    );
    assert_eq!(
        c2.exit_status().and_then(|s| s.signaled()),
        Some(Signal::USR2)
    );
    reap(&gp, &f);
    c1.exit_signaled(Signal::USR1);
    // The reparent half of `kill_orphaned_pgrp`: pp's exit orphans c's own group.
    let sl = fork(&init);
    sl.setsid().unwrap();
    let pp = fork(&sl);
    let c = fork(&pp);
    c.setpgid(0, 0).unwrap();
    let reparented = probe(&c, &sl, &pp, None);
    init.kill(init.pid_of(&c), Signal::STOP).unwrap();
    // The exit half: pp2's exit orphans its own group, in which d is stopped.
    let pp2 = fork(&sl);
    pp2.setpgid(0, 0).unwrap();
    let d = fork(&pp2);
    let exited = probe(&d, &sl, &pp2, None);
    init.kill(init.pid_of(&d), Signal::STOP).unwrap();
    for (parent, seen) in [(&pp, &reparented), (&pp2, &exited)] {
        parent.exit(0);
        assert_eq!(
            *seen.lock().unwrap(),
            Some((true, true)),
            "the SIGHUP's handler after the zombie"
        );
        reap(&sl, parent);
    }
    for t in [&c, &d] {
        assert!(t.pending_signals().contains(&Signal::HUP), "SIGHUP pending");
        t.exit_signaled(Signal::HUP);
        reap(&init, t);
    }
    sl.exit(0);
    reap_every_zombie(&init);
    assert_at_rest(&sys);
}

/// A thread's exit hands its children to another thread of its process without
/// waking anyone (Linux's `forget_original_parent` notifies nobody for a hand-over
/// inside the process): a `__WNOTHREAD` waiter of the heir, asleep, does not wake to
/// find a zombie it was handed; it reports its own child when that one exits (then the
/// handed one). A waiter of the exiting thread itself returns EINTR.
fn a_hand_over_inside_the_process_wakes_no_waiter() {
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    let t = thread(&p);
    let own = fork(&p);
    let handed = fork(&t);
    handed.exit(7);
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = {
        let p = p.clone();
        std::thread::spawn(move || {
            let opts = WaitOptions::EXITED | WaitOptions::NOTHREAD;
            let info = p.wait(WaitId::All, opts).unwrap().unwrap();
            tx.send(info.pid).unwrap();
        })
    };
    // A second waiter, blocked as the thread that exits (on the leader's running
    // child).
    let (t2, nr) = (t.clone(), t.pid_of(&own));
    let eintr = std::thread::spawn(move || t2.wait(WaitId::Pid(nr), WaitOptions::EXITED));
    // Both waiters asleep before the thread exits (no way to observe it: time enough
    // on a loaded machine).
    std::thread::sleep(std::time::Duration::from_millis(300));
    t.exit(0);
    // (ESRCH: that waiter came after the exit, on a machine slower than the sleep.)
    let r = eintr.join().unwrap();
    assert!(matches!(r, Err(Errno::EINTR | Errno::ESRCH)), "{r:?}");
    assert!(
        rx.recv_timeout(std::time::Duration::from_millis(200))
            .is_err(),
        "the heir's waiter slept on"
    );
    own.exit(1);
    let first = rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
    assert_eq!(
        first,
        p.pid_of(&own),
        "its own child, not the handed zombie"
    );
    waiter.join().unwrap();
    let opts = WaitOptions::EXITED | WaitOptions::NOTHREAD | WaitOptions::NOHANG;
    assert_eq!(
        p.wait(WaitId::All, opts).unwrap().unwrap().pid,
        p.pid_of(&handed)
    );
    p.exit(0);
    reap(&init, &p);
    assert_at_rest(&sys);
}

/// Reaps every child of `t` that is a zombie now, whatever its exit signal.
fn reap_every_zombie(t: &Task) {
    let opts = WaitOptions::EXITED | WaitOptions::ALL | WaitOptions::NOHANG;
    while t.wait(WaitId::All, opts).is_ok_and(|w| w.is_some()) {}
}

every_profile!(
    exit_is_idempotent_and_zombie_until_reaped,
    runtime_init_never_exits,
    a_thread_of_the_runtime_init_ends_alone,
    orphans_go_to_runtime_init_which_reaps_them,
    without_reap_orphans_init_must_wait_for_orphans,
    orphans_go_to_the_nearest_subreaper,
    subreaper_set_after_fork_still_adopts_descendants,
    dead_subreaper_is_skipped,
    zombie_orphan_is_renotified_to_new_parent,
    zombie_leader_with_live_threads_is_not_reapable,
    exit_group_ends_every_thread_with_group_code,
    autoreap_when_parent_ignores_or_nocldwait,
    clone_autoreap_child_is_never_a_zombie_even_after_reparent,
    reaped_tasks_are_freed,
    orphaned_thread_children_move_to_a_live_thread,
    clone_parent_makes_a_sibling,
    parent_and_ppid_in_follow_reparenting,
    children_handed_on_by_a_thread_come_after_the_heirs_own,
    a_parent_death_signal_follows_the_parent_thread,
    a_chain_of_parent_death_kills_does_not_recurse,
    exit_signals_are_sent_before_the_parent_is_reapable,
    a_hand_over_inside_the_process_wakes_no_waiter,
);
