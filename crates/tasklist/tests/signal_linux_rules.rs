//! Three rules of Linux's signal delivery, under every profile:
//!
//! - SIGTSTP, SIGTTIN and SIGTTOU (default action) to a process in an orphaned process
//!   group are discarded (`get_signal`: `is_current_pgrp_orphaned`, i.e.
//!   `will_become_orphaned_pgrp(pgrp, NULL)` in `kernel/exit.c`); SIGSTOP still stops.
//! - A thread-directed signal (`tgkill`, `pidfd_send_signal(PIDFD_SIGNAL_THREAD)`) to an
//!   exiting thread, such as a leader that exited while its threads run, does nothing
//!   and is not left pending (`complete_signal`: `wants_signal` is false for a
//!   `PF_EXITING` thread, and a `PIDTYPE_PID` signal is not passed on to another
//!   thread). SIGCONT still continues the group (`prepare_signal` acts at send time).
//! - A stop signal to a stopped process stays queued until SIGCONT flushes it; a fatal
//!   one acts when SIGCONT wakes the process, the thread's own before the group's.

#[macro_use]
mod common;
use common::*;
use std::sync::{Arc, Mutex};
use uproc_abi::{CloneFlags, PidfdFlags, PidfdSignalFlags, Signal, WaitOptions};
use uproc_tasklist::{CloneArgs, Task, TaskState, WaitId};

const TTY_STOPS: [Signal; 3] = [Signal::TSTP, Signal::TTIN, Signal::TTOU];

/// One way of sending a signal to the process under test, and its name.
type SendWay<'a> = (&'static str, Box<dyn Fn(Signal) + 'a>);

/// The stop `parent` sees for `child` (WNOHANG; consumes the report).
fn stop_report(parent: &Task, child: &Task) -> Option<Signal> {
    parent
        .wait(
            WaitId::Pid(parent.pid_of(child)),
            WaitOptions::STOPPED | WaitOptions::NOHANG,
        )
        .expect("child is waitable")
        .and_then(|i| i.status.stopped())
}

/// Whether `parent` sees `child` continued (WNOHANG; consumes the report).
fn continued(parent: &Task, child: &Task) -> bool {
    parent
        .wait(
            WaitId::Pid(parent.pid_of(child)),
            WaitOptions::CONTINUED | WaitOptions::NOHANG,
        )
        .expect("child is waitable")
        .is_some_and(|i| i.status.continued())
}

/// Every way `sender` can send a signal that reaches `target` (a single-threaded
/// process that leads its own process group): kill, kill(-pgid), tgkill, a pidfd and,
/// with `minus_one`, kill(-1) (the caller must then see no other process but init).
fn senders<'a>(sender: &'a Task, target: &'a Task, minus_one: bool) -> Vec<SendWay<'a>> {
    let nr = sender.pid_of(target);
    let mut v: Vec<SendWay<'a>> = vec![
        ("kill(pid)", Box::new(move |s| sender.kill(nr, s).unwrap())),
        (
            "kill(-pgid)",
            Box::new(move |s| sender.kill(-nr, s).unwrap()),
        ),
        (
            "tgkill",
            Box::new(move |s| sender.tgkill(nr, nr, s).unwrap()),
        ),
        (
            "pidfd_send_signal",
            Box::new(move |s| {
                let fd = sender.pidfd_open(nr, PidfdFlags::empty()).unwrap();
                fd.send_signal(s).unwrap()
            }),
        ),
    ];
    if minus_one {
        v.push(("kill(-1)", Box::new(move |s| sender.kill(-1, s).unwrap())));
    }
    v
}

/// `c` (whose parent is `parent`) ignores SIGTSTP/SIGTTIN/SIGTTOU from every sender,
/// and SIGSTOP still stops it.
fn assert_tty_stops_discarded(parent: &Task, c: &Task, sends: &[SendWay<'_>]) {
    for (how, send) in sends {
        for sig in TTY_STOPS {
            send(sig);
            assert_eq!(
                c.state(),
                TaskState::Running,
                "{how} {sig}: orphaned group: discarded"
            );
            assert_eq!(
                stop_report(parent, c),
                None,
                "{how} {sig}: nothing to wait for"
            );
            assert!(
                c.pending_signals().is_empty(),
                "{how} {sig}: nothing left pending"
            );
        }
        send(Signal::STOP);
        assert_eq!(c.state(), TaskState::Stopped, "{how}: SIGSTOP still stops");
        assert_eq!(stop_report(parent, c), Some(Signal::STOP), "{how}");
        send(Signal::CONT);
        assert_eq!(c.state(), TaskState::Running, "{how}");
        assert!(continued(parent, c), "{how}");
    }
}

/// `c` stops on each of SIGTSTP/SIGTTIN/SIGTTOU from every sender, and continues.
fn assert_tty_stops_stop(parent: &Task, c: &Task, sends: &[SendWay<'_>]) {
    for (how, send) in sends {
        for sig in TTY_STOPS {
            send(sig);
            assert_eq!(
                c.state(),
                TaskState::Stopped,
                "{how} {sig}: group not orphaned: it stops"
            );
            assert_eq!(stop_report(parent, c), Some(sig), "{how} {sig}");
            send(Signal::CONT);
            assert_eq!(c.state(), TaskState::Running, "{how} {sig}");
            assert!(continued(parent, c), "{how} {sig}");
        }
    }
}

/// The repro: a session leader's group is orphaned (its parent is in another
/// session), so job-control stops are discarded whatever way they are sent.
fn tty_stops_to_an_orphaned_session_leader_are_discarded() {
    let sys = system();
    let init = sys.init();
    let a = fork(&init);
    let c = fork(&a);
    c.setsid().unwrap();
    assert_tty_stops_discarded(&a, &c, &senders(&a, &c, true));
    // A managed task likewise: the hook is never called for a stop signal.
    c.set_signal_hook(Some(Arc::new(|_| panic!("no hook for stop signals"))));
    a.kill(a.pid_of(&c), Signal::TSTP).unwrap();
    assert_eq!(c.state(), TaskState::Running, "managed: discarded too");
    c.set_signal_hook(None);
    c.exit(0);
    reap(&a, &c);
    a.exit(0);
    reap(&init, &a);
    assert_at_rest(&sys);
}

/// A child moved into a group of its own by `setpgid` under a parent of the same
/// session but another group: the group is not orphaned, job-control stops stop it.
fn tty_stops_to_a_group_with_a_parent_in_the_session_stop_it() {
    let sys = system();
    let init = sys.init();
    let a = fork(&init);
    let c = fork(&a);
    a.setpgid(a.pid_of(&c), 0).unwrap();
    assert_eq!(c.getsid(), a.getsid());
    assert_ne!(c.getpgid(), a.getpgid());
    assert_tty_stops_stop(&a, &c, &senders(&a, &c, true));
    c.exit(0);
    reap(&a, &c);
    a.exit(0);
    reap(&init, &a);
    assert_at_rest(&sys);
}

/// Members whose parent is the runtime init (the global init) do not keep a group
/// from being orphaned: a child of init in init's group or in a group of its own, and
/// that child's own children in its group, discard job-control stops. A namespace init
/// is no global init: a child it moved into a group of its own is not orphaned.
fn members_whose_parent_is_the_runtime_init_are_skipped() {
    let sys = system();
    let init = sys.init();
    // In init's own group (a plain fork of init).
    let c = fork(&init);
    assert_eq!(c.getpgid(), init.getpgid());
    assert_tty_stops_discarded(&init, &c, &senders(&init, &c, false)[..1]);
    // In a group of its own, in init's session.
    let d = fork(&init);
    init.setpgid(init.pid_of(&d), 0).unwrap();
    assert_eq!(d.getsid(), init.getsid());
    assert_tty_stops_discarded(&init, &d, &senders(&init, &d, false));
    // d's child in d's group: d's parent is init (skipped), e's parent is in the group.
    let e = fork(&d);
    assert_eq!(e.getpgid(), d.getpgid());
    let to_e = |s| d.kill(d.pid_of(&e), s).unwrap();
    let sends: Vec<SendWay<'_>> = vec![("kill(pid)", Box::new(to_e))];
    assert_tty_stops_discarded(&d, &e, &sends);
    // A namespace init's child in a group of its own: its parent counts.
    let n = fork_flags(&init, CloneFlags::NEWPID);
    let b = fork(&n);
    n.setpgid(n.pid_of(&b), 0).unwrap();
    assert_tty_stops_stop(&n, &b, &senders(&init, &b, false));
    for (p, t) in [(&init, &c), (&d, &e), (&n, &b)] {
        t.exit(0);
        reap(p, t);
    }
    d.exit(0);
    reap(&init, &d);
    n.exit(0);
    reap(&init, &n);
    assert_at_rest(&sys);
}

/// A zombie member with no other threads is skipped (its parent no longer keeps the
/// group from being orphaned); a leader that exited while a thread runs is not.
fn zombie_members_are_skipped_unless_threads_remain() {
    let sys = system();
    let init = sys.init();
    let a = fork(&init);
    a.setsid().unwrap();
    // b leads group B of a's session; c is b's child in B.
    let b = fork(&a);
    a.setpgid(a.pid_of(&b), 0).unwrap();
    let c = fork(&b);
    assert_eq!(c.getpgid(), b.getpgid());
    let to_c = |s| a.kill(a.pid_of(&c), s).unwrap();
    let sends: Vec<SendWay<'_>> = vec![("kill(pid)", Box::new(to_c))];
    assert_tty_stops_stop(&b, &c, &sends);
    // b exits and stays a zombie (a does not wait): c goes to init (skipped), b is a
    // zombie with no thread left (skipped): B is orphaned now.
    b.exit(0);
    assert_eq!(b.state(), TaskState::Zombie);
    assert_eq!(c.ppid(), 1);
    assert_tty_stops_discarded(&init, &c, &sends);

    // b2 leads group B2 of a's session and has a thread; c2 is b2's child in B2.
    let b2 = fork(&a);
    a.setpgid(a.pid_of(&b2), 0).unwrap();
    let t = thread(&b2);
    let c2 = fork(&b2);
    b2.exit(0); // the leader exits like pthread_exit: t runs, c2 goes to t
    assert_eq!(b2.state(), TaskState::Zombie);
    assert!(t.is_alive());
    let to_c2 = |s| a.kill(a.pid_of(&c2), s).unwrap();
    let sends: Vec<SendWay<'_>> = vec![("kill(pid)", Box::new(to_c2))];
    // b2 still counts (a zombie with threads left), and its parent a is in another
    // group of the session.
    assert_tty_stops_stop(&t, &c2, &sends);
    // Its last thread gone, b2 is skipped: B2 is orphaned.
    t.exit(0);
    assert_tty_stops_discarded(&init, &c2, &sends);

    for z in [&c, &c2] {
        z.exit(0);
    }
    reap(&a, &b);
    reap(&a, &b2);
    a.exit(0);
    reap(&init, &a);
    assert_at_rest(&sys);
}

/// tgkill of SIGKILL, SIGTERM or SIGSTOP to a leader that exited while its thread
/// runs: Ok, and nothing happens to the group, nor is anything left pending (measured
/// on Linux 6.18: SigPnd and ShdPnd of both threads stay empty). A pidfd's
/// thread-scoped send is the same.
fn thread_directed_signals_to_a_zombie_leader_do_nothing() {
    let sys = system();
    let init = sys.init();
    let c = fork(&init);
    let t = thread(&c);
    c.exit(0);
    let tg = init.pid_of(&c);
    let nothing = WaitOptions::EXITED | WaitOptions::STOPPED | WaitOptions::NOHANG;
    for sig in [Signal::KILL, Signal::TERM, Signal::STOP] {
        assert_eq!(init.tgkill(tg, tg, sig), Ok(()), "{sig}");
        assert_eq!(t.state(), TaskState::Running, "{sig}: the thread runs on");
        assert!(t.is_alive(), "{sig}");
        assert_eq!(c.state(), TaskState::Zombie, "{sig}");
        assert_eq!(init.wait(WaitId::Pid(tg), nothing), Ok(None), "{sig}");
    }
    let fd = init.pidfd_open(tg, PidfdFlags::empty()).unwrap();
    for sig in [Signal::KILL, Signal::TSTP] {
        fd.send_signal_with(sig, PidfdSignalFlags::THREAD).unwrap();
        assert_eq!(t.state(), TaskState::Running, "pidfd {sig}");
        assert_eq!(init.wait(WaitId::Pid(tg), nothing), Ok(None), "pidfd {sig}");
    }
    assert!(
        c.pending_signals().is_empty(),
        "nothing on the exited leader's own set"
    );
    assert!(t.pending_signals().is_empty(), "not on the live thread's");
    assert!(!t.fatal_signal_pending());

    // SIGCONT through the zombie leader still continues a stopped group
    // (`prepare_signal` acts before the target is chosen).
    init.kill(tg, Signal::STOP).unwrap();
    assert_eq!(
        t.state(),
        TaskState::Stopped,
        "kill(tgid) picks a live thread"
    );
    assert_eq!(stop_report(&init, &c), Some(Signal::STOP));
    init.tgkill(tg, tg, Signal::CONT).unwrap();
    assert_eq!(t.state(), TaskState::Running, "tgkill SIGCONT continues");
    assert!(continued(&init, &c));
    assert!(c.pending_signals().is_empty());

    // Group-directed: acts through the live thread.
    init.kill(tg, Signal::TERM).unwrap();
    assert!(!t.is_alive(), "kill(tgid) ends the group");
    assert_eq!(reap(&init, &c).status.signaled(), Some(Signal::TERM));
    assert_at_rest(&sys);
}

/// A managed thread of a group whose leader exited: a thread-directed SIGKILL to the
/// leader calls no hook; a group-directed one does.
fn thread_directed_kill_of_a_zombie_leader_calls_no_hook() {
    let sys = system();
    let init = sys.init();
    let c = fork(&init);
    let t = thread(&c);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    t.set_signal_hook(Some(Arc::new(move |sig| s.lock().unwrap().push(sig))));
    c.exit(0);
    let tg = init.pid_of(&c);
    init.tgkill(tg, tg, Signal::KILL).unwrap();
    init.tgkill(tg, tg, Signal::TERM).unwrap();
    assert!(seen.lock().unwrap().is_empty(), "no hook call");
    assert!(!t.fatal_signal_pending());
    init.kill(tg, Signal::KILL).unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![Signal::KILL]);
    assert!(t.fatal_signal_pending());
    t.exit_signaled(Signal::KILL);
    assert_eq!(reap(&init, &c).status.signaled(), Some(Signal::KILL));
    assert_at_rest(&sys);
}

/// tgkill to a live thread of a group whose leader exited still acts on the group:
/// SIGSTOP stops it, SIGKILL ends it.
fn thread_directed_signals_to_a_live_thread_still_act() {
    let sys = system();
    let init = sys.init();
    let c = fork(&init);
    let t = thread(&c);
    c.exit(0);
    let (tg, tid) = (init.pid_of(&c), init.pid_of(&t));
    init.tgkill(tg, tid, Signal::STOP).unwrap();
    assert_eq!(t.state(), TaskState::Stopped);
    assert_eq!(stop_report(&init, &c), Some(Signal::STOP));
    init.tgkill(tg, tid, Signal::CONT).unwrap();
    assert_eq!(t.state(), TaskState::Running);
    init.tgkill(tg, tid, Signal::KILL).unwrap();
    assert!(
        !t.is_alive(),
        "a fatal signal to a live thread kills the group"
    );
    assert_eq!(reap(&init, &c).status.signaled(), Some(Signal::KILL));
    assert_at_rest(&sys);
}

/// The state and, once it died, the fatal signal of `t`.
fn fate(t: &Task) -> (TaskState, Option<Signal>) {
    (t.state(), t.exit_status().and_then(|s| s.signaled()))
}

/// A session leader `sl` (a child of `init`), its child `pp`, and `pp`'s child `c`
/// leading a process group of its own: `pp` is the group's one link to the session, so
/// `pp`'s exit orphans it.
fn group_under_a_session_member(init: &Task) -> (Task, Task, Task) {
    let sl = fork(init);
    sl.setsid().unwrap();
    let pp = fork(&sl);
    let c = fork(&pp);
    c.setpgid(0, 0).unwrap();
    (sl, pp, c)
}

/// `kill_orphaned_pgrp`, the reparent half (`reparent_leader`): when `pp` exits, its
/// child `c` (leader of its own group, in `pp`'s session) goes to init, and `c`'s group
/// has no link to its session any more; with a stopped member it gets SIGHUP then
/// SIGCONT, and the stopped `c` dies of the SIGHUP (Linux 6.18: killed by signal 1).
/// Not stopped, or with another member whose parent is still in the session, nothing.
fn a_reparent_that_orphans_a_stopped_group_sends_it_sighup_and_sigcont() {
    for (stop, linked) in [(true, false), (false, false), (true, true)] {
        let sys = system_without_orphan_reaping();
        let init = sys.init();
        let (sl, pp, c) = group_under_a_session_member(&init);
        // A second member of c's group whose parent (sl) stays in the session.
        let other = linked.then(|| {
            let o = fork(&sl);
            sl.setpgid(sl.pid_of(&o), sl.pid_of(&c)).unwrap();
            o
        });
        if stop {
            init.kill(init.pid_of(&c), Signal::STOP).unwrap();
            assert_eq!(c.state(), TaskState::Stopped);
        }
        pp.exit(0);
        reap(&sl, &pp);
        let want = if stop && !linked {
            (TaskState::Zombie, Some(Signal::HUP))
        } else if stop {
            (TaskState::Stopped, None)
        } else {
            (TaskState::Running, None)
        };
        assert_eq!(fate(&c), want, "stopped {stop}, linked {linked}");
        for t in other.iter().chain([&c]) {
            if t.state() != TaskState::Zombie {
                init.kill(init.pid_of(t), Signal::KILL).unwrap();
            }
        }
        if let Some(o) = &other {
            reap(&sl, o);
        }
        reap(&init, &c);
        sl.exit(0);
        reap(&init, &sl);
        assert_at_rest(&sys);
    }
}

/// The orphaned group's SIGHUP goes to its stopped members only, the SIGCONT to all:
/// measured on Linux 6.18 (a member sleeping with SIGHUP blocked, or with a handler
/// for it, gets no SIGHUP; a stopped one does, and dies of it). POSIX words both as
/// sent to every member.
fn an_orphaned_groups_sighup_goes_to_its_stopped_members_only() {
    let sys = system_without_orphan_reaping();
    let init = sys.init();
    let (sl, pp, c) = group_under_a_session_member(&init);
    let running = fork(&pp);
    pp.setpgid(pp.pid_of(&running), pp.pid_of(&c)).unwrap();
    let stopped_too = fork(&pp);
    pp.setpgid(pp.pid_of(&stopped_too), pp.pid_of(&c)).unwrap();
    for t in [&c, &stopped_too] {
        init.kill(init.pid_of(t), Signal::STOP).unwrap();
        assert_eq!(t.state(), TaskState::Stopped);
    }
    pp.exit(0);
    reap(&sl, &pp);
    for t in [&c, &stopped_too] {
        assert_eq!(fate(t), (TaskState::Zombie, Some(Signal::HUP)));
    }
    assert_eq!(fate(&running), (TaskState::Running, None), "no SIGHUP");
    assert!(
        running.pending_signals().is_empty(),
        "and the SIGCONT was ignored"
    );
    init.kill(init.pid_of(&running), Signal::KILL).unwrap();
    for t in [&c, &running, &stopped_too] {
        reap(&init, t);
    }
    sl.exit(0);
    reap(&init, &sl);
    assert_at_rest(&sys);
}

/// `kill_orphaned_pgrp`, the exit half (`exit_notify`): `a` leads its own group under
/// a parent of the same session (`sl`); when `a` exits, its child `b` (in `a`'s group,
/// now init's) leaves the group without a link: stopped, `b` gets SIGHUP and SIGCONT
/// and dies. `a`'s exit with `b` running, or with `a` in its parent's group, sends
/// nothing.
fn an_exit_that_orphans_its_stopped_group_sends_it_sighup_and_sigcont() {
    for (stop, own_group) in [(true, true), (false, true), (true, false)] {
        let sys = system_without_orphan_reaping();
        let init = sys.init();
        let sl = fork(&init);
        sl.setsid().unwrap();
        let a = fork(&sl);
        if own_group {
            a.setpgid(0, 0).unwrap();
        }
        let b = fork(&a);
        if stop {
            init.kill(init.pid_of(&b), Signal::STOP).unwrap();
        }
        a.exit(0);
        reap(&sl, &a);
        let want = match (stop, own_group) {
            (true, true) => (TaskState::Zombie, Some(Signal::HUP)),
            (true, false) => (TaskState::Stopped, None),
            (false, _) => (TaskState::Running, None),
        };
        assert_eq!(fate(&b), want, "stopped {stop}, own group {own_group}");
        if b.state() != TaskState::Zombie {
            init.kill(init.pid_of(&b), Signal::KILL).unwrap();
        }
        reap(&init, &b);
        sl.exit(0);
        reap(&init, &sl);
        assert_at_rest(&sys);
    }
}

/// `kill(-pgid)` reaches a process whose leader exited while its thread runs: the
/// leader is still attached to its process group until it is released, and a
/// group-directed signal to it acts through the live thread (measured on Linux 6.18:
/// SIGTERM ends the process, SIGSTOP stops it and `waitpid(WUNTRACED)` reports it).
fn kill_pgrp_reaches_a_process_whose_leader_exited() {
    let sys = system();
    let init = sys.init();
    for sig in [Signal::TERM, Signal::STOP] {
        let c = fork(&init);
        let pg = init.pid_of(&c);
        c.setpgid(0, 0).unwrap();
        let t = thread(&c);
        c.exit(0);
        assert_eq!(init.kill(-pg, sig), Ok(()), "{sig}");
        if sig == Signal::TERM {
            assert!(!t.is_alive(), "the live thread ends");
            assert_eq!(reap(&init, &c).status.signaled(), Some(Signal::TERM));
        } else {
            assert_eq!(t.state(), TaskState::Stopped);
            assert_eq!(stop_report(&init, &c), Some(Signal::STOP));
            init.kill(-pg, Signal::KILL).unwrap();
            assert_eq!(reap(&init, &c).status.signaled(), Some(Signal::KILL));
        }
    }
    assert_at_rest(&sys);
}

/// A stop signal to a process that is stopped already stays queued until SIGCONT
/// flushes it, SIGSTOP and SIGTSTP alike, of an orphaned process group too (the orphan
/// rule applies where a running thread would dequeue it). Measured on Linux 6.18:
/// `ShdPnd` of a stopped process shows them (`0x80000` after SIGTSTP, `0xc0000` after
/// SIGSTOP too) and is empty after SIGCONT; a running one shows none (found by
/// `tests/kernel_lifecycle.rs`).
fn stop_signals_to_a_stopped_process_stay_queued_until_sigcont() {
    let sys = system();
    let init = sys.init();
    let a = fork(&init);
    // In a group of its own under a parent of the same session: not orphaned.
    let c = fork(&a);
    a.setpgid(a.pid_of(&c), 0).unwrap();
    // A session leader under a parent of another session: orphaned.
    let orphaned = fork(&a);
    orphaned.setsid().unwrap();
    for (who, sender) in [("not orphaned", &a), ("orphaned", &a)] {
        let target = if who == "orphaned" { &orphaned } else { &c };
        let pid = sender.pid_of(target);
        sender.kill(pid, Signal::STOP).unwrap();
        assert_eq!(stop_report(sender, target), Some(Signal::STOP), "{who}");
        assert!(
            target.pending_signals().is_empty(),
            "{who}: the first stop acted"
        );
        sender.kill(pid, Signal::TSTP).unwrap();
        assert_eq!(target.pending_signals(), vec![Signal::TSTP], "{who}");
        sender.kill(pid, Signal::STOP).unwrap();
        assert_eq!(
            target.pending_signals(),
            vec![Signal::STOP, Signal::TSTP],
            "{who}: queued, not acted on"
        );
        assert_eq!(stop_report(sender, target), None, "{who}: no second report");
        sender.kill(pid, Signal::CONT).unwrap();
        assert_eq!(target.state(), TaskState::Running, "{who}");
        assert!(
            target.pending_signals().is_empty(),
            "{who}: SIGCONT flushed them"
        );
        assert!(continued(sender, target), "{who}");
        // Running: a stop signal acts (or, orphaned, SIGTSTP is discarded) at once.
        sender.kill(pid, Signal::TSTP).unwrap();
        assert!(target.pending_signals().is_empty(), "{who}");
        let want = if who == "orphaned" {
            TaskState::Running
        } else {
            TaskState::Stopped
        };
        assert_eq!(target.state(), want, "{who}");
        sender.kill(pid, Signal::KILL).unwrap();
        reap(sender, target);
    }
    a.exit(0);
    reap(&init, &a);
    assert_at_rest(&sys);
}

/// What a stopped process with several fatal signals queued dies of when continued:
/// the woken thread's `dequeue_signal` takes its own set before the group's, and
/// `next_signal` the synchronous signals (SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE,
/// SIGSYS) before the lowest-numbered. Measured on Linux 6.18 (the same five cases):
/// HUP+SEGV by kill dies of SEGV, TERM+USR1 of USR1, HUP by kill + USR1 by tgkill of
/// USR1, SEGV by kill + USR1 by tgkill of USR1, INT+SYS of SYS (found by
/// `tests/kernel_lifecycle.rs`: uproc took the lowest-numbered of all).
fn a_continued_process_dies_of_what_its_thread_dequeues_first() {
    let sys = system();
    let init = sys.init();
    let cases: [(&[Signal], &[Signal], Signal); 5] = [
        (&[Signal::HUP, Signal::SEGV], &[], Signal::SEGV),
        (&[Signal::USR1, Signal::TERM], &[], Signal::USR1),
        (&[Signal::HUP], &[Signal::USR1], Signal::USR1),
        (&[Signal::SEGV], &[Signal::USR1], Signal::USR1),
        (&[Signal::INT, Signal::SYS], &[], Signal::SYS),
    ];
    // With several threads, which one dequeues first is the scheduler's choice on
    // Linux (seen both ways); uproc's is the leader, whose own set is empty here, so
    // the group's SIGHUP comes before the second thread's own SIGUSR1.
    let c = fork(&init);
    let t = thread(&c);
    let pid = init.pid_of(&c);
    init.kill(pid, Signal::STOP).unwrap();
    init.tgkill(pid, init.pid_of(&t), Signal::USR1).unwrap();
    init.kill(pid, Signal::HUP).unwrap();
    init.kill(pid, Signal::CONT).unwrap();
    assert!(!t.is_alive());
    assert_eq!(reap(&init, &c).status.signaled(), Some(Signal::HUP));
    for (by_kill, by_tgkill, dies_of) in cases {
        let c = fork(&init);
        let pid = init.pid_of(&c);
        init.kill(pid, Signal::STOP).unwrap();
        for &sig in by_kill {
            init.kill(pid, sig).unwrap();
        }
        for &sig in by_tgkill {
            init.tgkill(pid, pid, sig).unwrap();
        }
        assert_eq!(c.state(), TaskState::Stopped, "{by_kill:?} {by_tgkill:?}");
        init.kill(pid, Signal::CONT).unwrap();
        assert_eq!(
            reap(&init, &c).status.signaled(),
            Some(dies_of),
            "kill {by_kill:?}, tgkill {by_tgkill:?}"
        );
    }
    assert_at_rest(&sys);
}

/// Linux's kills of many processes (`kill(-pgid)`, `kill(-1)`, `cgroup.kill`, a
/// namespace init's death) queue SIGKILL on every victim in one walk before any of them
/// exits, and `prepare_signal` drops later signals to a dying process. So a parent and
/// its child killed together: the child's SIGCHLD is not left pending on the parent,
/// and the child dies of SIGKILL, never of the parent-death signal its parent's exit
/// sends it (measured on Linux 6.18: the zombie parent shows `ShdPnd` 0x100 alone,
/// both "killed by 9"). uproc used to end each bare victim before signalling the next,
/// so the outcome followed the victims' numbering order.
fn a_kill_of_many_signals_every_victim_before_any_dies() {
    /// A parent and its child with a parent-death signal.
    fn family(parent: &Task, args: CloneArgs) -> (Task, Task) {
        let a = parent.fork(&args).unwrap();
        let b = fork(&a);
        b.set_pdeath_signal(Signal::USR1);
        (a, b)
    }
    fn check(init: &Task, a: &Task, b: &Task, what: &str) {
        assert!(
            !a.pending_signals().contains(&Signal::CHLD),
            "{what}: the dying parent took its child's SIGCHLD: {:?}",
            a.pending_signals()
        );
        for t in [a, b] {
            assert_eq!(
                t.exit_status().and_then(|s| s.signaled()),
                Some(Signal::KILL),
                "{what}"
            );
        }
        let opts = WaitOptions::EXITED | WaitOptions::NOHANG;
        while let Ok(Some(_)) = init.wait(WaitId::All, opts) {}
    }
    let sys = system_without_orphan_reaping();
    let init = sys.init();
    init.set_cap_checkpoint_restore(true);
    let high = || CloneArgs {
        set_tid: vec![5000],
        ..Default::default()
    };
    // kill(-pgid), the parent numbered above its child (`set_tid`; the child takes
    // the next free number, a low one): the walk, in number order, meets it first.
    let (a, b) = family(&init, high());
    a.setpgid(0, 0).unwrap();
    a.setpgid(a.pid_of(&b), a.pid_of(&a)).unwrap();
    assert!(init.pid_of(&b) < init.pid_of(&a));
    init.kill(-init.pid_of(&a), Signal::KILL).unwrap();
    check(&init, &a, &b, "kill(-pgid)");
    // kill(-1), in the usual numbering too.
    for args in [high(), CloneArgs::default()] {
        let (a, b) = family(&init, args);
        init.kill(-1, Signal::KILL).unwrap();
        check(&init, &a, &b, "kill(-1)");
    }
    // cgroup.kill.
    let cg = sys.cgroup_root().mkdir("doomed").unwrap();
    let (a, b) = family(&init, into_cgroup(&cg));
    cg.write("cgroup.kill", "1").unwrap();
    check(&init, &a, &b, "cgroup.kill");
    // The victims die parents first, whatever their numbers (Linux leaves the order to
    // its scheduler; here it is the same under every profile): the child, numbered
    // below its parent, is handed to init before it dies, so init reaps it rather
    // than its parent, which ignores SIGCHLD, autoreaping it.
    let (a, b) = family(&init, high());
    a.set_sigchld(uproc_tasklist::SigChld::Ignore);
    a.setpgid(0, 0).unwrap();
    a.setpgid(a.pid_of(&b), a.pid_of(&a)).unwrap();
    init.kill(-init.pid_of(&a), Signal::KILL).unwrap();
    let opts = WaitOptions::EXITED | WaitOptions::NOHANG;
    let got = init
        .wait(WaitId::Pid(init.pid_of(&b)), opts)
        .unwrap()
        .unwrap();
    assert_eq!(
        got.status.signaled(),
        Some(Signal::KILL),
        "init reaps the child"
    );
    check(&init, &a, &b, "parents first");
    // A namespace init's death: its child A and grandchild B die in the zap.
    let n = fork_flags(&init, CloneFlags::NEWPID);
    let (a, b) = family(&n, CloneArgs::default());
    n.exit(0);
    for t in [&a, &b] {
        assert_eq!(
            t.exit_status().and_then(|s| s.signaled()),
            Some(Signal::KILL),
            "zap"
        );
    }
    reap(&init, &n);
    assert_at_rest(&sys);
}

/// User code that a kill walk calls (a managed task's signal hook) runs after the
/// walk, as a Linux handler runs in its task's own context, and outside it: a kill it
/// makes ends its bare victim before it returns, and a blocking wait for that victim
/// returns. A hook of a child told of its parent's death finds the parent a zombie
/// (Linux queues the signal in the hold that makes it one), and a blocking wait for it
/// from the hook returns.
fn hooks_run_after_the_walk_and_outside_it() {
    let sys = system_without_orphan_reaping();
    let init = sys.init();
    let x = fork(&init);
    let m = fork(&init);
    m.setpgid(0, 0).unwrap();
    let seen = Arc::new(Mutex::new(None));
    {
        let (init2, x2, seen2) = (init.clone(), x.clone(), seen.clone());
        let xpid = init.pid_of(&x);
        m.set_signal_hook(Some(Arc::new(move |_| {
            init2.kill(xpid, Signal::KILL).unwrap();
            let alive = x2.is_alive();
            let waited = init2.wait(WaitId::Pid(xpid), WaitOptions::EXITED);
            seen2.lock().unwrap().get_or_insert((alive, waited.is_ok()));
        })));
    }
    init.kill(-init.pid_of(&m), Signal::KILL).unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        Some((false, true)),
        "(x alive, x reaped)"
    );
    m.exit_signaled(Signal::KILL);
    reap(&init, &m);
    // The parent-death signal's handler: its parent is a zombie, a blocking wait
    // for it returns.
    let f = fork(&init);
    let c = fork(&f);
    c.set_pdeath_signal(Signal::USR1);
    let reaped = Arc::new(Mutex::new(None));
    {
        let (init2, reaped2, fnr) = (init.clone(), reaped.clone(), init.pid_of(&f));
        c.set_signal_hook(Some(Arc::new(move |_| {
            let got = init2.wait(WaitId::Pid(fnr), WaitOptions::EXITED);
            reaped2
                .lock()
                .unwrap()
                .get_or_insert(got.map(|w| w.map(|i| i.pid)));
        })));
    }
    let fnr = init.pid_of(&f);
    f.exit(0);
    assert_eq!(*reaped.lock().unwrap(), Some(Ok(Some(fnr))));
    c.exit_signaled(Signal::USR1);
    let opts = WaitOptions::EXITED | WaitOptions::NOHANG;
    while let Ok(Some(_)) = init.wait(WaitId::All, opts) {}
    assert_at_rest(&sys);
}

/// A core-dumping signal that no thread has acted on starts no group exit in Linux, so
/// a SIGCHLD to that process is still queued (measured on 6.18: the zombie parent
/// shows `ShdPnd` 0x10000, killed by SIGQUIT); once a fatal signal that does not dump
/// core decided it, the SIGCHLD is dropped.
fn sigchld_to_a_parent_whose_core_signal_waits_is_queued() {
    let sys = system();
    let init = sys.init();
    for (sig, queued) in [(Signal::QUIT, true), (Signal::TERM, false)] {
        let p = init.fork_managed(&CloneArgs::default()).unwrap();
        let c = fork(&p);
        init.kill(init.pid_of(&p), sig).unwrap();
        c.exit(0);
        assert_eq!(p.pending_signals().contains(&Signal::CHLD), queued, "{sig}");
        p.exit_signaled(sig);
        reap(&init, &p);
    }
    assert_at_rest(&sys);
}

/// The victims of one kill die parents first at any depth (a child numbered below its
/// parent, 40 generations down, is handed to init alive rather than autoreaped by its
/// parent, which ignores SIGCHLD), so every profile gives one outcome.
fn a_kill_walk_orders_deep_trees_parents_first() {
    let sys = system_without_orphan_reaping();
    let init = sys.init();
    init.set_cap_checkpoint_restore(true);
    let top = fork(&init);
    top.setpgid(0, 0).unwrap();
    let mut chain = vec![top.clone()];
    for depth in 1..40 {
        let parent = chain.last().unwrap();
        parent.set_cap_checkpoint_restore(true);
        // Each parent numbered high, its child low.
        let args = if depth == 39 {
            CloneArgs::default()
        } else {
            CloneArgs {
                set_tid: vec![20_000 + depth],
                ..Default::default()
            }
        };
        chain.push(parent.fork(&args).unwrap());
    }
    let (parent, child) = (&chain[38], &chain[39]);
    parent.set_sigchld(uproc_tasklist::SigChld::Ignore);
    assert!(init.pid_of(child) < init.pid_of(parent));
    init.kill(-init.pid_of(&top), Signal::KILL).unwrap();
    let opts = WaitOptions::EXITED | WaitOptions::NOHANG;
    let got = init.wait(WaitId::Pid(init.pid_of(child)), opts);
    assert!(
        matches!(got, Ok(Some(_))),
        "init reaps the deepest child: {got:?}"
    );
    while let Ok(Some(_)) = init.wait(WaitId::All, opts) {}
    assert_at_rest(&sys);
}

/// Siblings killed by one walk die in fork order, whatever their numbers, so the
/// outcome is the same under every profile (Linux leaves it to the scheduler: its P
/// died of either exit signal, mostly the first-forked child's): P, not a victim, dies
/// of the exit signal of its child forked first.
fn siblings_killed_together_die_in_fork_order() {
    let sys = system();
    let init = sys.init();
    init.set_cap_checkpoint_restore(true);
    let p = fork(&init);
    p.set_cap_checkpoint_restore(true);
    // A forked first, numbered high; B after it, numbered low.
    let a = p
        .fork(&CloneArgs {
            exit_signal: Some(Signal::USR1),
            set_tid: vec![20_000],
            ..Default::default()
        })
        .unwrap();
    let b = p
        .fork(&CloneArgs {
            exit_signal: Some(Signal::TERM),
            ..Default::default()
        })
        .unwrap();
    assert!(init.pid_of(&b) < init.pid_of(&a));
    p.kill(-1, Signal::KILL).unwrap();
    assert_eq!(
        p.exit_status().and_then(|s| s.signaled()),
        Some(Signal::USR1)
    );
    let opts = WaitOptions::EXITED | WaitOptions::ALL | WaitOptions::NOHANG;
    while let Ok(Some(_)) = init.wait(WaitId::All, opts) {}
    assert_at_rest(&sys);
}

every_profile!(
    siblings_killed_together_die_in_fork_order,
    hooks_run_after_the_walk_and_outside_it,
    sigchld_to_a_parent_whose_core_signal_waits_is_queued,
    a_kill_walk_orders_deep_trees_parents_first,
    a_kill_of_many_signals_every_victim_before_any_dies,
    a_continued_process_dies_of_what_its_thread_dequeues_first,
    stop_signals_to_a_stopped_process_stay_queued_until_sigcont,
    kill_pgrp_reaches_a_process_whose_leader_exited,
    a_reparent_that_orphans_a_stopped_group_sends_it_sighup_and_sigcont,
    an_orphaned_groups_sighup_goes_to_its_stopped_members_only,
    an_exit_that_orphans_its_stopped_group_sends_it_sighup_and_sigcont,
    tty_stops_to_an_orphaned_session_leader_are_discarded,
    tty_stops_to_a_group_with_a_parent_in_the_session_stop_it,
    members_whose_parent_is_the_runtime_init_are_skipped,
    zombie_members_are_skipped_unless_threads_remain,
    thread_directed_signals_to_a_zombie_leader_do_nothing,
    thread_directed_kill_of_a_zombie_leader_calls_no_hook,
    thread_directed_signals_to_a_live_thread_still_act,
);
