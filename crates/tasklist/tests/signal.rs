//! kill(2), tgkill(2), default actions, managed-mode hooks (selftests: `pidfd/pidfd_test.c`
//! signal parts, `signal/`).

#[macro_use]
mod common;
use common::*;
use std::sync::{Arc, Mutex};
use uproc_abi::{Errno, Signal, WaitOptions};
use uproc_tasklist::{CloneArgs, SigChld, TaskState, WaitId};

fn kill_errors_and_probe() {
    let sys = system();
    let init = sys.init();
    let c = fork(&init);
    assert_eq!(
        init.kill(4000, Signal::TERM),
        Err(Errno::ESRCH),
        "no such pid"
    );
    assert_eq!(
        init.kill(-4000, Signal::TERM),
        Err(Errno::ESRCH),
        "no such process group"
    );
    assert_eq!(
        init.kill(i32::MIN, Signal::TERM),
        Err(Errno::ESRCH),
        "INT_MIN"
    );
    assert_eq!(Signal::new(65), Err(Errno::EINVAL), "invalid signal number");
    assert_eq!(
        init.kill(init.pid_of(&c), Signal::PROBE),
        Ok(()),
        "signal 0 probes"
    );
    assert_eq!(c.state(), TaskState::Running, "the probe does nothing");
    c.exit(0);
    assert_eq!(
        init.kill(init.pid_of(&c), Signal::KILL),
        Ok(()),
        "a zombie is signalled silently"
    );
    let pid = init.pid_of(&c);
    reap(&init, &c);
    assert_eq!(
        init.kill(pid, Signal::PROBE),
        Err(Errno::ESRCH),
        "reaped: ESRCH"
    );
}

fn bare_task_dies_at_once_from_default_term_and_core_signals() {
    let sys = system();
    let init = sys.init();
    for sig in [
        Signal::KILL,
        Signal::TERM,
        Signal::SEGV,
        Signal::USR1,
        Signal::new(40).unwrap(),
    ] {
        let c = fork(&init);
        let t = thread(&c);
        init.kill(init.pid_of(&c), sig).unwrap();
        assert_eq!(t.state(), TaskState::Dead, "{sig}: every thread ends");
        let info = reap(&init, &c);
        assert_eq!(info.status.signaled(), Some(sig));
        assert!(
            !info.status.core_dumped(),
            "{sig}: no core without a core limit"
        );
    }
    assert_at_rest(&sys);
}

fn ignored_by_default_signals_are_dropped() {
    let sys = system();
    let init = sys.init();
    let c = fork(&init);
    for sig in [Signal::URG, Signal::WINCH] {
        init.kill(init.pid_of(&c), sig).unwrap();
    }
    assert_eq!(c.state(), TaskState::Running);
    assert!(
        c.pending_signals().is_empty(),
        "default-ignored signals are discarded"
    );
    c.set_sigchld(SigChld::Ignore);
    init.kill(init.pid_of(&c), Signal::CHLD).unwrap();
    assert!(c.pending_signals().is_empty(), "SIGCHLD ignored");
    c.set_sigchld(SigChld::Default);
    init.kill(init.pid_of(&c), Signal::CHLD).unwrap();
    assert_eq!(c.pending_signals(), vec![Signal::CHLD]);
    assert_eq!(c.dequeue_signal(), Some(Signal::CHLD));
    assert!(c.pending_signals().is_empty());
    c.exit(0);
    reap(&init, &c);
}

fn stop_and_continue_both_modes() {
    let sys = system();
    let init = sys.init();
    // c leads a process group of its own whose parent is in another group of the same
    // session: not orphaned, so SIGTSTP/SIGTTIN/SIGTTOU stop it too (to an orphaned
    // group, such as a child of init, they are discarded: `tests/signal_linux_rules.rs`).
    let a = fork(&init);
    let c = fork(&a);
    a.setpgid(a.pid_of(&c), 0).unwrap();
    c.set_signal_hook(Some(Arc::new(|_| {
        panic!("stop signals do not call the hook")
    })));
    for sig in [Signal::STOP, Signal::TSTP, Signal::TTIN, Signal::TTOU] {
        a.kill(a.pid_of(&c), sig).unwrap();
        assert_eq!(c.state(), TaskState::Stopped, "{sig} stops");
        let info = a
            .wait(WaitId::All, WaitOptions::STOPPED | WaitOptions::NOHANG)
            .unwrap()
            .unwrap();
        assert_eq!(info.status.stopped(), Some(sig));
        a.kill(a.pid_of(&c), Signal::CONT).unwrap();
        assert_eq!(c.state(), TaskState::Running);
    }
    c.set_signal_hook(None);
    a.kill(a.pid_of(&c), Signal::STOP).unwrap();
    a.kill(a.pid_of(&c), Signal::KILL).unwrap();
    assert_eq!(
        reap(&a, &c).status.signaled(),
        Some(Signal::KILL),
        "SIGKILL ends a stopped task"
    );
    a.exit(0);
    reap(&init, &a);
}

fn managed_task_gets_hook_and_pending_set() {
    let sys = system();
    let init = sys.init();
    let c = fork(&init);
    let t = thread(&c);
    let seen = Arc::new(Mutex::new(Vec::new()));
    for task in [&c, &t] {
        let s = seen.clone();
        task.set_signal_hook(Some(Arc::new(move |sig| s.lock().unwrap().push(sig))));
    }
    init.kill(init.pid_of(&c), Signal::TERM).unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        vec![Signal::TERM, Signal::TERM],
        "one hook call per thread"
    );
    assert_eq!(
        c.state(),
        TaskState::Running,
        "a managed task lives until its runtime acts"
    );
    assert!(c.fatal_signal_pending() && t.fatal_signal_pending());
    assert_eq!(
        c.pending_signals(),
        vec![Signal::KILL, Signal::TERM],
        "thread SIGKILL + shared SIGTERM"
    );
    init.kill(init.pid_of(&c), Signal::USR1).unwrap();
    assert_eq!(
        seen.lock().unwrap().len(),
        2,
        "a dying group takes no more signals"
    );
    t.exit(0);
    c.exit_signaled(Signal::TERM);
    assert_eq!(reap(&init, &c).status.signaled(), Some(Signal::TERM));
}

fn kill_process_group_and_zero_and_minus_one() {
    let sys = system();
    let init = sys.init();
    let leader = fork(&init);
    let p = init.pid_of(&leader);
    init.setpgid(p, 0).unwrap();
    let a = fork(&leader);
    let b = fork(&leader);
    assert_eq!(a.getpgid(), leader.getpgid());
    let outsider = fork(&init);
    init.kill(-p, Signal::KILL).unwrap();
    for t in [&a, &b] {
        assert_eq!(
            t.exit_status().and_then(|s| s.signaled()),
            Some(Signal::KILL)
        );
        assert_eq!(
            t.state(),
            TaskState::Dead,
            "orphaned by the leader's death, reaped by init"
        );
    }
    assert_eq!(outsider.state(), TaskState::Running);
    reap(&init, &leader);
    assert_eq!(
        init.kill(-p, Signal::KILL),
        Err(Errno::ESRCH),
        "the group is gone"
    );

    // kill(0): the caller's process group, caller included.
    let g = fork(&init);
    let gp = init.pid_of(&g);
    init.setpgid(gp, 0).unwrap();
    let m = fork(&g);
    g.kill(0, Signal::TERM).unwrap();
    assert!(
        m.exit_status().is_some(),
        "kill(0) reaches the caller's group"
    );
    assert_eq!(g.state(), TaskState::Zombie, "kill(0) includes the caller");
    reap(&init, &g);

    // kill(-1): everything visible but init and the caller.
    let x = fork(&init);
    x.kill(-1, Signal::KILL).unwrap();
    assert_eq!(outsider.state(), TaskState::Zombie);
    assert_eq!(x.state(), TaskState::Running, "kill(-1) skips the caller");
    assert_eq!(init.state(), TaskState::Running, "and init");
    reap(&init, &outsider);
    assert_eq!(
        x.kill(-1, Signal::KILL),
        Err(Errno::ESRCH),
        "nothing left to signal"
    );
    x.exit(0);
    reap(&init, &x);
    assert_at_rest(&sys);
}

fn tgkill_rules() {
    let sys = system();
    let init = sys.init();
    let c = fork(&init);
    let t = thread(&c);
    let tg = init.pid_of(&c);
    let tid = init.pid_of(&t);
    assert_eq!(init.tgkill(0, tid, Signal::USR1), Err(Errno::EINVAL));
    assert_eq!(init.tgkill(tg, -1, Signal::USR1), Err(Errno::EINVAL));
    assert_eq!(
        init.tgkill(tg + 1000, tid, Signal::USR1),
        Err(Errno::ESRCH),
        "wrong tgid"
    );
    assert_eq!(
        init.tgkill(tg, 5000, Signal::USR1),
        Err(Errno::ESRCH),
        "no such tid"
    );
    assert_eq!(init.tgkill(tg, tid, Signal::PROBE), Ok(()));
    c.set_sigchld(SigChld::Default);
    init.tgkill(tg, tid, Signal::CHLD).unwrap();
    assert_eq!(
        t.pending_signals(),
        vec![Signal::CHLD],
        "thread-directed: the thread's own set"
    );
    assert!(c.pending_signals().is_empty(), "not the other threads'");
    init.tgkill(tg, tid, Signal::KILL).unwrap();
    assert_eq!(
        c.state(),
        TaskState::Zombie,
        "a fatal signal to a thread kills the group"
    );
    reap(&init, &c);
}

fn setpgid_and_setsid_rules() {
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    let c = fork(&p);
    assert_eq!(p.setpgid(0, -1), Err(Errno::EINVAL));
    // A zero pgid becomes `pid` before the `pgid < 0` check, as in Linux.
    assert_eq!(p.setpgid(-5, 0), Err(Errno::EINVAL), "pgid = pid = -5");
    assert_eq!(p.setpgid(-5, 7), Err(Errno::ESRCH), "no pid -5");
    assert_eq!(p.setpgid(4000, 0), Err(Errno::ESRCH), "not self or child");
    assert_eq!(
        c.setpgid(c.ppid(), 0),
        Err(Errno::ESRCH),
        "a parent is not a child"
    );
    assert_eq!(
        p.setpgid(p.pid_of(&c), 4000),
        Err(Errno::EPERM),
        "no such group in the session"
    );
    let sid = c.setsid().unwrap();
    assert_eq!(sid, c.pid());
    assert_eq!(c.getsid(), c.pid());
    assert_eq!(c.getpgid(), c.pid());
    assert_eq!(c.setsid(), Err(Errno::EPERM), "already a group leader");
    assert_eq!(
        p.setpgid(p.pid_of(&c), 0),
        Err(Errno::EPERM),
        "child in another session / session leader"
    );
    // The session id outlives the session leader while members use it.
    let m = fork(&c);
    let sid_pid = c.struct_pid().clone();
    c.exit(0);
    reap(&p, &c);
    assert!(!sid_pid.is_freed(), "a pid used as sid stays allocated");
    assert_eq!(m.getsid(), sid);
    m.exit(0);
    assert!(sid_pid.is_freed(), "freed with its last user");
    p.exit(0);
    reap(&init, &p);
    assert_at_rest(&sys);
}

#[test]
fn fatal_signal_to_a_stopped_process_waits_for_sigcont_only_sigkill_wakes_it() {
    for &p in uproc_abi::Profile::ALL {
        let sys = system_with(p);
        let init = sys.init();
        let exited = WaitOptions::EXITED | WaitOptions::NOHANG;
        // Bare: SIGTERM stays pending while stopped.
        let c = fork(&init);
        let nr = init.pid_of(&c);
        init.kill(nr, Signal::STOP).unwrap();
        init.kill(nr, Signal::TERM).unwrap();
        init.kill(nr, Signal::QUIT).unwrap();
        assert_eq!(
            c.state(),
            TaskState::Stopped,
            "{p}: Linux: only SIGKILL wakes a stopped group"
        );
        assert!(c.is_alive());
        assert_eq!(
            init.wait(WaitId::All, exited),
            Ok(None),
            "{p}: WNOHANG sees no exit"
        );
        assert!(
            c.pending_signals().contains(&Signal::TERM),
            "{p}: SIGTERM is pending"
        );
        init.kill(nr, Signal::CONT).unwrap();
        assert!(
            !c.is_alive(),
            "{p}: after SIGCONT it dies of the pending signal"
        );
        assert_eq!(
            reap(&init, &c).status.signaled(),
            Some(Signal::QUIT),
            "{p}: the lowest-numbered pending fatal signal (SIGQUIT = 3) is taken first"
        );
        // Thread-directed: tgkill of a stopped thread.
        let c = fork(&init);
        let t = thread(&c);
        let nr = init.pid_of(&c);
        // (SIGSTOP: a child of init is in an orphaned group, which discards SIGTSTP.)
        init.kill(nr, Signal::STOP).unwrap();
        init.tgkill(nr, init.pid_of(&t), Signal::USR1).unwrap();
        assert_eq!(c.state(), TaskState::Stopped, "{p}");
        assert!(t.is_alive() && c.is_alive());
        init.kill(nr, Signal::CONT).unwrap();
        assert_eq!(reap(&init, &c).status.signaled(), Some(Signal::USR1), "{p}");
        // SIGKILL does wake it.
        let c = fork(&init);
        let nr = init.pid_of(&c);
        init.kill(nr, Signal::STOP).unwrap();
        init.kill(nr, Signal::TERM).unwrap();
        init.kill(nr, Signal::KILL).unwrap();
        assert_eq!(reap(&init, &c).status.signaled(), Some(Signal::KILL), "{p}");
        // Managed: the hook is not called until SIGCONT.
        let seen = Arc::new(Mutex::new(Vec::new()));
        let c = fork(&init);
        let s = seen.clone();
        c.set_signal_hook(Some(Arc::new(move |sig| s.lock().unwrap().push(sig))));
        let nr = init.pid_of(&c);
        init.kill(nr, Signal::STOP).unwrap();
        init.kill(nr, Signal::TERM).unwrap();
        assert!(
            seen.lock().unwrap().is_empty(),
            "{p}: a stopped task's hook waits"
        );
        assert!(!c.fatal_signal_pending());
        init.kill(nr, Signal::CONT).unwrap();
        assert_eq!(
            *seen.lock().unwrap(),
            vec![Signal::TERM],
            "{p}: SIGCONT lets it act"
        );
        assert!(c.fatal_signal_pending());
        c.exit_signaled(Signal::TERM);
        assert_eq!(reap(&init, &c).status.signaled(), Some(Signal::TERM));
        // Continuing without a pending fatal signal leaves it running.
        let c = fork(&init);
        let nr = init.pid_of(&c);
        init.kill(nr, Signal::STOP).unwrap();
        init.kill(nr, Signal::CONT).unwrap();
        assert!(c.is_alive());
        c.exit(0);
        reap(&init, &c);
        assert_at_rest(&sys);
    }
}

/// `kill(-1, SIGKILL)` racing a process that forks as fast as it can: every child the
/// process managed to attach dies too (a child attached during the walk is found, or
/// the fork fails on the pending signal); nothing survives the kill.
fn kill_minus_one_reaches_children_forked_during_the_walk() {
    for _ in 0..race_iterations(200, 20) {
        let sys = system();
        let init = sys.init();
        let p = fork(&init);
        let forker = {
            let p = p.clone();
            std::thread::spawn(move || {
                let mut kids = Vec::new();
                while let Ok(c) = p.fork(&uproc_tasklist::CloneArgs::default()) {
                    kids.push(c);
                }
                kids
            })
        };
        while sys.nr_tasks() < 3 {
            std::thread::yield_now();
        }
        init.kill(-1, Signal::KILL).unwrap();
        let kids = forker.join().unwrap();
        assert!(!kids.is_empty());
        for k in &kids {
            assert!(
                !k.is_alive(),
                "{}: a child forked during kill(-1) survived",
                profile()
            );
        }
        reap(&init, &p);
        assert_eq!(
            sys.nr_tasks(),
            1,
            "the killed children were autoreaped by init"
        );
    }
}

/// An exit's SIGCHLD to a parent that has one pending already changes nothing (the
/// exit skips the parent's siglock), but only while that is so: after the parent
/// dequeues it the next exit queues it again (a child of another thread too), after
/// `SIG_IGN` or `SA_NOCLDWAIT` the next child autoreaps, and a dying namespace init
/// whose SIGCHLD was pending still reaps every child.
fn sigchld_after_one_already_pending() {
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    let (a, b) = (fork(&p), fork(&p));
    a.exit(0);
    assert_eq!(p.pending_signals(), vec![Signal::CHLD]);
    b.exit(0);
    assert_eq!(p.pending_signals(), vec![Signal::CHLD], "still one SIGCHLD");
    assert_eq!(
        (a.state(), b.state()),
        (TaskState::Zombie, TaskState::Zombie)
    );
    // Dequeued: the next exit, of a child of another thread, queues it again.
    assert_eq!(p.dequeue_signal(), Some(Signal::CHLD));
    assert!(p.pending_signals().is_empty());
    let t = thread(&p);
    let c = fork(&t);
    c.exit(0);
    assert_eq!(p.pending_signals(), vec![Signal::CHLD], "queued again");
    assert_eq!(c.state(), TaskState::Zombie);
    // Ignored with SIGCHLD pending: the next child autoreaps.
    p.set_sigchld(SigChld::Ignore);
    let d = fork(&p);
    d.exit(0);
    assert_eq!(d.state(), TaskState::Dead, "SIG_IGN: autoreaped");
    p.set_sigchld(SigChld::Default);
    let e = fork(&p);
    e.exit(0);
    assert_eq!(e.state(), TaskState::Zombie, "default again: a zombie");
    p.set_sigchld(SigChld::NoCldWait);
    let f = fork(&p);
    f.exit(0);
    assert_eq!(f.state(), TaskState::Dead, "SA_NOCLDWAIT: autoreaped");
    p.set_sigchld(SigChld::Default);
    for z in [&a, &b, &c, &e] {
        assert_eq!(reap(&p, z).status.exited(), Some(0));
    }
    // A namespace init with SIGCHLD pending dies: its last child, killed by the zap,
    // is reaped by the init (it autoreaps), which then becomes reapable itself.
    let n = fork_flags(&p, uproc_abi::CloneFlags::NEWPID);
    let (k1, k2) = (fork(&n), fork(&n));
    k1.exit(0);
    assert_eq!(n.pending_signals(), vec![Signal::CHLD]);
    let k3 = fork(&n);
    k3.exit(0);
    assert_eq!(k3.state(), TaskState::Zombie);
    n.exit(0);
    assert_eq!(k2.state(), TaskState::Dead, "the zap killed and reaped it");
    assert_eq!((k1.state(), k3.state()), (TaskState::Dead, TaskState::Dead));
    assert_eq!(reap(&p, &n).status.exited(), Some(0));
    t.exit(0);
    p.exit(0);
    reap(&init, &p);
    assert_at_rest(&sys);
}

/// `fork_managed`: managed from the fork with no hook. A fatal signal is made pending
/// and acted on by nobody (the runtime's body reads it); a hook installed later is
/// called; `set_signal_hook(None)` makes the task bare; a group exit marks its
/// hookless thread and leaves it to its runtime, as it does a hooked one.
fn fork_managed_makes_a_task_managed_without_a_hook() {
    let sys = system();
    let init = sys.init();
    let args = CloneArgs::default();
    let c = init.fork_managed(&args).expect("fork_managed");
    init.kill(init.pid_of(&c), Signal::TERM).unwrap();
    assert_eq!(c.state(), TaskState::Running, "made pending, not acted on");
    assert!(c.fatal_signal_pending());
    assert_eq!(c.pending_signals(), vec![Signal::KILL, Signal::TERM]);
    c.exit_signaled(Signal::TERM);
    assert_eq!(reap(&init, &c).status.signaled(), Some(Signal::TERM));

    // A hook installed afterwards is called, as on any managed task.
    let c = init.fork_managed(&args).expect("fork_managed");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    c.set_signal_hook(Some(Arc::new(move |sig| s.lock().unwrap().push(sig))));
    init.kill(init.pid_of(&c), Signal::KILL).unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![Signal::KILL]);
    assert_eq!(c.state(), TaskState::Running);
    c.exit_signaled(Signal::KILL);
    reap(&init, &c);

    // Removing the hook (there is none) makes it bare: it dies at once.
    let c = init.fork_managed(&args).expect("fork_managed");
    c.set_signal_hook(None);
    init.kill(init.pid_of(&c), Signal::TERM).unwrap();
    assert_eq!(
        c.exit_status().and_then(|s| s.signaled()),
        Some(Signal::TERM),
        "bare now: ended by the signal itself"
    );
    reap(&init, &c);

    // A group exit: a bare thread exits with the group, a hookless managed one is
    // marked and left to its runtime.
    let p = fork(&init);
    let managed = p
        .fork_managed(&CloneArgs {
            flags: uproc_abi::CloneFlags::NEW_THREAD,
            ..CloneArgs::default()
        })
        .expect("a managed thread");
    let bare = thread(&p);
    p.exit_group(3);
    assert!(
        bare.exit_status().is_some(),
        "the bare thread exited with the group"
    );
    assert!(
        managed.exit_status().is_none(),
        "the managed one waits for its runtime"
    );
    assert!(managed.fatal_signal_pending());
    managed.exit_signaled(Signal::KILL);
    assert_eq!(reap(&init, &p).status.exited(), Some(3));

    // Its errors are fork's, and a failed one leaves nothing behind.
    let bad = CloneArgs {
        flags: uproc_abi::CloneFlags::THREAD,
        ..CloneArgs::default()
    };
    assert_eq!(init.fork_managed(&bad).err(), Some(Errno::EINVAL));
    assert_at_rest(&sys);
}

/// `next_signal`: a synchronous signal (SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE,
/// SIGSYS) is dequeued before any lower-numbered one, in the thread's own set and in
/// the group's; otherwise the lowest-numbered first; the thread's set before the
/// group's. (The lowest was taken first: SIGHUP before SIGSEGV.)
fn dequeue_takes_synchronous_signals_first() {
    let sys = system();
    let init = sys.init();
    let c = init.fork_managed(&CloneArgs::default()).unwrap();
    let t = thread(&c);
    let pid = init.pid_of(&c);
    // Stopped, so that the fatal signals stay queued instead of ending the group.
    init.kill(pid, Signal::STOP).unwrap();
    for sig in [Signal::HUP, Signal::SEGV, Signal::INT, Signal::FPE] {
        init.kill(pid, sig).unwrap();
    }
    let tid = init.pid_of(&t);
    for sig in [Signal::USR1, Signal::SYS] {
        init.tgkill(pid, tid, sig).unwrap();
    }
    let mut from_t = Vec::new();
    while let Some(sig) = t.dequeue_signal() {
        from_t.push(sig);
    }
    assert_eq!(
        from_t,
        [
            // The thread's own set, synchronous first.
            Signal::SYS,
            Signal::USR1,
            // The group's: SIGFPE (8) and SIGSEGV (11) before SIGHUP (1) and SIGINT (2).
            Signal::FPE,
            Signal::SEGV,
            Signal::HUP,
            Signal::INT,
        ]
    );
    assert_eq!(c.dequeue_signal(), None, "the group's set is empty");
}

/// A group exit cancels a stop or continue no waiter has collected
/// (`SIGNAL_GROUP_EXIT` replaces the `SIGNAL_STOP_*` flags that `task_stopped_code`
/// and `wait_task_continued` test): a managed task killed while stopped, or continued
/// and then killed, reports neither while its body runs on, and its exit once it ends.
/// (The stop and the continue were still reported after the fatal signal.)
fn a_dying_group_reports_no_stop_or_continue() {
    let sys = system();
    let init = sys.init();
    let none = WaitOptions::NOHANG;
    for continued in [false, true] {
        let c = init.fork_managed(&CloneArgs::default()).unwrap();
        let pid = init.pid_of(&c);
        init.kill(pid, Signal::STOP).unwrap();
        if continued {
            init.kill(pid, Signal::CONT).unwrap();
        }
        init.kill(
            pid,
            if continued {
                Signal::TERM
            } else {
                Signal::KILL
            },
        )
        .unwrap();
        assert!(c.fatal_signal_pending(), "continued = {continued}: dying");
        let any = WaitOptions::STOPPED | WaitOptions::CONTINUED | none;
        assert_eq!(
            init.wait(WaitId::Pid(pid), any),
            Ok(None),
            "continued = {continued}: a dying group reports neither"
        );
        assert_eq!(c.state(), TaskState::Running);
        c.exit_signaled(if continued {
            Signal::TERM
        } else {
            Signal::KILL
        });
        let info = init
            .wait(WaitId::Pid(pid), WaitOptions::EXITED | any)
            .unwrap()
            .expect("the exit is reported");
        assert!(info.status.signaled().is_some(), "{info:?}");
    }
    // `exit_group` from the body of a stopped group (its body runs on in uproc): the
    // stop report goes with it.
    let c = init.fork_managed(&CloneArgs::default()).unwrap();
    let t = thread(&c);
    let pid = init.pid_of(&c);
    init.kill(pid, Signal::STOP).unwrap();
    t.exit_group(3);
    let info = init
        .wait(
            WaitId::Pid(pid),
            WaitOptions::STOPPED | WaitOptions::EXITED | none,
        )
        .unwrap();
    assert!(
        info.is_none_or(|i| i.status.exited() == Some(3)),
        "no stop after exit_group: {info:?}"
    );
    c.exit(0);
    let info = reap(&init, &c);
    assert_eq!(info.status.exited(), Some(3));
}

every_profile!(
    dequeue_takes_synchronous_signals_first,
    a_dying_group_reports_no_stop_or_continue,
    sigchld_after_one_already_pending,
    kill_errors_and_probe,
    bare_task_dies_at_once_from_default_term_and_core_signals,
    ignored_by_default_signals_are_dropped,
    stop_and_continue_both_modes,
    managed_task_gets_hook_and_pending_set,
    fork_managed_makes_a_task_managed_without_a_hook,
    kill_process_group_and_zero_and_minus_one,
    tgkill_rules,
    setpgid_and_setsid_rules,
    kill_minus_one_reaches_children_forked_during_the_walk,
);

/// `fatal_signal_pending` (read without the siglock) is exactly "SIGKILL in the
/// thread's pending set or in its group's shared one", for the leader and for another
/// thread, through every dequeue.
#[test]
fn fatal_signal_pending_follows_the_group_sigkill_exactly() {
    for &prof in uproc_abi::Profile::ALL {
        let sys = system_with(prof);
        let init = sys.init();
        let p = fork(&init);
        let t = thread(&p);
        let hook: Arc<dyn Fn(Signal) + Send + Sync> = Arc::new(|_| {});
        p.set_signal_hook(Some(hook.clone()));
        t.set_signal_hook(Some(hook));
        assert!(!p.fatal_signal_pending() && !t.fatal_signal_pending());
        init.kill(init.pid_of(&p), Signal::KILL).unwrap();
        assert!(p.fatal_signal_pending(), "{prof}: the leader sees SIGKILL");
        assert!(t.fatal_signal_pending(), "{prof}: the thread sees SIGKILL");
        // The thread's own bit first, then the group's: pending until both are gone.
        assert_eq!(t.dequeue_signal(), Some(Signal::KILL));
        assert!(
            t.fatal_signal_pending(),
            "{prof}: the group's SIGKILL is still pending for the thread"
        );
        assert_eq!(
            t.dequeue_signal(),
            Some(Signal::KILL),
            "{prof}: the group's"
        );
        assert!(
            !t.fatal_signal_pending(),
            "{prof}: none left for the thread"
        );
        assert!(
            p.fatal_signal_pending(),
            "{prof}: the leader's own SIGKILL is still pending"
        );
        assert_eq!(p.dequeue_signal(), Some(Signal::KILL));
        assert!(
            !p.fatal_signal_pending(),
            "{prof}: none left for the leader"
        );
        p.exit_signaled(Signal::KILL);
        t.exit_signaled(Signal::KILL);
        reap(&init, &p);
        assert_at_rest(&sys);
    }
}
