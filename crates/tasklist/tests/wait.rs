//! waitid(2)/wait4(2) rules (selftests: `pidfd/pidfd_wait.c`, `wait/`).

#[macro_use]
mod common;
use common::*;
use std::time::Duration;
use uproc_abi::{CloneFlags, Errno, Signal, WaitOptions, WaitStatus};
use uproc_tasklist::{ChildCode, CloneArgs, SigChld, TaskState, WaitId};

fn invalid_options_are_einval() {
    let sys = system();
    let init = sys.init();
    let c = fork(&init);
    let bogus = WaitOptions::from_bits_retain(0x10);
    assert_eq!(
        init.wait(WaitId::All, WaitOptions::EXITED | bogus),
        Err(Errno::EINVAL),
        "Linux: unknown waitid options -> EINVAL"
    );
    assert_eq!(
        init.wait(WaitId::All, WaitOptions::NOHANG),
        Err(Errno::EINVAL),
        "Linux: none of WEXITED|WSTOPPED|WCONTINUED -> EINVAL"
    );
    assert_eq!(
        init.wait(WaitId::Pid(0), WaitOptions::EXITED),
        Err(Errno::EINVAL),
        "P_PID 0 -> EINVAL"
    );
    assert_eq!(
        init.wait(WaitId::Pid(-3), WaitOptions::EXITED),
        Err(Errno::EINVAL),
        "P_PID < 0 -> EINVAL"
    );
    assert_eq!(
        init.wait(WaitId::Pgid(-1), WaitOptions::EXITED),
        Err(Errno::EINVAL),
        "P_PGID < 0 -> EINVAL"
    );
    c.exit(0);
    reap(&init, &c);
}

fn no_eligible_child_is_echild() {
    let sys = system();
    let init = sys.init();
    let c = fork(&init);
    assert_eq!(
        c.wait(WaitId::All, WaitOptions::EXITED),
        Err(Errno::ECHILD),
        "no children -> ECHILD"
    );
    assert_eq!(
        init.wait(WaitId::Pid(4000), WaitOptions::EXITED),
        Err(Errno::ECHILD),
        "unknown pid -> ECHILD"
    );
    let g = fork(&c);
    assert_eq!(
        init.wait(WaitId::Pid(init.pid_of(&g)), WaitOptions::EXITED),
        Err(Errno::ECHILD),
        "a grandchild is not a child -> ECHILD"
    );
    g.exit(0);
    reap(&c, &g);
    c.exit(0);
    reap(&init, &c);
}

fn nohang_returns_none_and_reap_reports_status() {
    let sys = system();
    let init = sys.init();
    let c = fork(&init);
    assert_eq!(
        init.wait(WaitId::All, WaitOptions::EXITED | WaitOptions::NOHANG),
        Ok(None)
    );
    c.exit(7);
    assert_eq!(c.state(), TaskState::Zombie);
    let info = init
        .wait(WaitId::All, WaitOptions::EXITED | WaitOptions::NOHANG)
        .unwrap()
        .expect("zombie is ready");
    assert_eq!(info.pid, init.pid_of(&c));
    assert_eq!(info.status.exited(), Some(7));
    assert_eq!(info.code, ChildCode::Exited);
    assert_eq!(c.state(), TaskState::Dead);
    assert_eq!(
        init.wait(WaitId::All, WaitOptions::EXITED),
        Err(Errno::ECHILD)
    );
    assert_at_rest(&sys);
}

fn nowait_leaves_the_zombie() {
    let sys = system();
    let init = sys.init();
    let c = fork(&init);
    c.exit(3);
    let pid = init.pid_of(&c);
    let a = init
        .wait(WaitId::Pid(pid), WaitOptions::EXITED | WaitOptions::NOWAIT)
        .unwrap()
        .unwrap();
    assert_eq!(a.status.exited(), Some(3));
    assert_eq!(
        c.state(),
        TaskState::Zombie,
        "WNOWAIT leaves the child waitable"
    );
    let b = reap(&init, &c);
    assert_eq!(a, b);
}

/// Only the thread that dumps core exits with the core bit: Linux adds 0x80 to the
/// dumping thread's code alone (`coredump_finish`), after the others have exited with
/// the plain signal, and a thread pidfd's `PIDFD_INFO_EXIT` shows each thread's own
/// code (measured on Linux 6.18: SIGQUIT by `tgkill` to the leader of a process with
/// a second thread, a core limit set: the process pidfd reports 0x83, the other
/// thread's 0x03; by `tgkill` to that thread, both 0x83). The process's status has
/// the bit either way.
fn only_the_thread_that_dumps_core_exits_with_the_core_bit() {
    let sys = system_without_orphan_reaping();
    let init = sys.init();
    for thread_dumps in [false, true] {
        let p = fork(&init);
        let t = thread(&p);
        p.set_dumps_core(true);
        let pfd = init
            .pidfd_open(init.pid_of(&p), uproc_abi::PidfdFlags::empty())
            .unwrap();
        let tfd = init
            .pidfd_open(init.pid_of(&t), uproc_abi::PidfdFlags::THREAD)
            .unwrap();
        let victim = if thread_dumps { &t } else { &p };
        init.tgkill(init.pid_of(&p), init.pid_of(victim), Signal::QUIT)
            .unwrap();
        let info = reap(&init, &p);
        assert!(info.status.core_dumped(), "the process dumped core");
        let code = |fd: &uproc_pidfs::PidFd| fd.info(uproc_abi::InfoMask::EXIT).unwrap().exit_code;
        assert_eq!(code(&pfd), 0x83, "thread dumps: {thread_dumps}");
        let want = if thread_dumps { 0x83 } else { 0x03 };
        assert_eq!(code(&tfd), want, "thread dumps: {thread_dumps}");
    }
    assert_at_rest(&sys);
}

fn killed_child_reports_signal_and_core() {
    let sys = system();
    let init = sys.init();
    let c = fork(&init);
    c.exit_signaled(Signal::ABRT);
    let info = reap(&init, &c);
    assert_eq!(info.status.signaled(), Some(Signal::ABRT));
    // Linux sets the core bit only when a core file was written: not under the
    // default `ulimit -c 0` (measured on 6.18: abort() gives CLD_KILLED, SIGQUIT a
    // status without WCOREDUMP; with `ulimit -c unlimited`, CLD_DUMPED and the bit).
    assert!(!info.status.core_dumped(), "no core limit, no core");
    assert_eq!(info.code, ChildCode::Killed);
    assert!(!init.dumps_core());
    // With a core limit (inherited at fork), a Core signal dumps core, sent or
    // reported; a Term signal does not.
    let dumper = fork(&init);
    dumper.set_dumps_core(true);
    for kill in [true, false] {
        let c = fork(&dumper);
        assert!(c.dumps_core(), "inherited");
        if kill {
            dumper.kill(dumper.pid_of(&c), Signal::QUIT).unwrap();
        } else {
            c.exit_signaled(Signal::ABRT);
        }
        let info = reap(&dumper, &c);
        assert!(info.status.core_dumped(), "kill {kill}");
        assert_eq!(info.code, ChildCode::Dumped);
    }
    let c = fork(&dumper);
    c.set_dumps_core(false);
    assert!(dumper.dumps_core(), "the child's own setting");
    c.exit_signaled(Signal::SEGV);
    assert_eq!(reap(&dumper, &c).code, ChildCode::Killed);
    let c = fork(&dumper);
    c.exit_signaled(Signal::TERM);
    assert_eq!(
        reap(&dumper, &c).code,
        ChildCode::Killed,
        "Term never dumps"
    );
    // A Core signal starts no group exit in Linux until it is acted on: a SIGKILL
    // before that is what the process dies of (measured on 6.18: SIGQUIT then SIGKILL
    // to a process that dequeued nothing gives "killed by 9"); after SIGTERM, a
    // SIGKILL changes nothing.
    for (first, died_of) in [(Signal::QUIT, Signal::KILL), (Signal::TERM, Signal::TERM)] {
        let c = dumper
            .fork_managed(&uproc_tasklist::CloneArgs::default())
            .unwrap();
        dumper.kill(dumper.pid_of(&c), first).unwrap();
        dumper.kill(dumper.pid_of(&c), Signal::KILL).unwrap();
        c.exit_signaled(Signal::KILL);
        let info = reap(&dumper, &c);
        assert_eq!(
            info.status.signaled(),
            Some(died_of),
            "{first} then SIGKILL"
        );
        assert_eq!(info.code, ChildCode::Killed);
    }
    // A fatal signal that comes before the Core signal is acted on is queued beside it
    // and the process dies of the one dequeued first: synchronous ones first, then the
    // lowest number (measured on 6.18, the target asleep: SIGQUIT then SIGHUP kills by
    // SIGHUP, then SIGINT by SIGINT, then SIGSEGV by SIGSEGV, with its core). Both stay
    // pending. Once the runtime acted on the first, later ones change nothing; after a
    // SIGKILL too.
    for (second, died_of, dumped) in [
        (Signal::HUP, Signal::HUP, false),
        (Signal::INT, Signal::INT, false),
        (Signal::SEGV, Signal::SEGV, true),
        (Signal::ABRT, Signal::QUIT, true),
        (Signal::USR1, Signal::QUIT, true),
    ] {
        let c = dumper
            .fork_managed(&uproc_tasklist::CloneArgs::default())
            .unwrap();
        dumper.kill(dumper.pid_of(&c), Signal::QUIT).unwrap();
        dumper.kill(dumper.pid_of(&c), second).unwrap();
        let pending = c.pending_signals();
        assert!(
            pending.contains(&Signal::QUIT) && pending.contains(&second),
            "{pending:?}"
        );
        // The runtime ends it with what it saw first; the group's decision stands.
        c.exit_signaled(Signal::QUIT);
        let info = reap(&dumper, &c);
        assert_eq!(
            info.status.signaled(),
            Some(died_of),
            "SIGQUIT then {second}"
        );
        assert_eq!(info.status.core_dumped(), dumped, "SIGQUIT then {second}");
    }
    let c = dumper
        .fork_managed(&uproc_tasklist::CloneArgs::default())
        .unwrap();
    let t = c
        .fork_managed(&uproc_tasklist::CloneArgs {
            flags: uproc_abi::CloneFlags::NEW_THREAD,
            ..Default::default()
        })
        .unwrap();
    dumper.kill(dumper.pid_of(&c), Signal::QUIT).unwrap();
    t.exit_signaled(Signal::QUIT);
    dumper.kill(dumper.pid_of(&c), Signal::HUP).unwrap();
    c.exit_signaled(Signal::KILL);
    let info = reap(&dumper, &c);
    assert_eq!(
        info.status.signaled(),
        Some(Signal::QUIT),
        "acted on: SIGHUP too late"
    );
    let c = dumper
        .fork_managed(&uproc_tasklist::CloneArgs::default())
        .unwrap();
    for sig in [Signal::QUIT, Signal::KILL, Signal::HUP] {
        dumper.kill(dumper.pid_of(&c), sig).unwrap();
    }
    c.exit_signaled(Signal::KILL);
    let info = reap(&dumper, &c);
    assert_eq!(
        info.status.signaled(),
        Some(Signal::KILL),
        "SIGKILL is final"
    );
    dumper.exit(0);
    reap(&init, &dumper);
    let c = fork(&init);
    init.kill(init.pid_of(&c), Signal::TERM).unwrap();
    let info = reap(&init, &c);
    assert_eq!(info.status, WaitStatus::signaled_by(Signal::TERM, false));
    assert_eq!(info.code, ChildCode::Killed);
}

fn stopped_and_continued_are_reported_once() {
    let sys = system();
    let init = sys.init();
    let c = fork(&init);
    let pid = init.pid_of(&c);
    init.kill(pid, Signal::STOP).unwrap();
    assert_eq!(c.state(), TaskState::Stopped);
    let o = WaitOptions::STOPPED | WaitOptions::NOHANG;
    let info = init
        .wait(WaitId::Pid(pid), o)
        .unwrap()
        .expect("stop is reported");
    assert_eq!(info.status.stopped(), Some(Signal::STOP));
    assert_eq!(info.code, ChildCode::Stopped);
    assert_eq!(
        init.wait(WaitId::Pid(pid), o),
        Ok(None),
        "a stop is reported once"
    );
    init.kill(pid, Signal::CONT).unwrap();
    assert_eq!(c.state(), TaskState::Running);
    let o = WaitOptions::CONTINUED | WaitOptions::NOHANG;
    let info = init
        .wait(WaitId::Pid(pid), o)
        .unwrap()
        .expect("continue is reported");
    assert!(info.status.continued());
    assert_eq!(info.code, ChildCode::Continued);
    assert_eq!(
        init.wait(WaitId::Pid(pid), o),
        Ok(None),
        "a continue is reported once"
    );
    c.exit(0);
    reap(&init, &c);
}

/// A leader that exited while its threads live (`DELAYED`) cannot be reaped, but its
/// group's stop and continue are reported through it (`wait_consider_task` falls
/// through to `wait_task_stopped` / `wait_task_continued`), once each.
fn stop_and_continue_of_a_group_with_an_exited_leader_are_reported() {
    let sys = system();
    let init = sys.init();
    let c = fork(&init);
    let th = thread(&c);
    c.exit(3); // the leader alone
    let pid = init.pid_of(&c);
    let exited = WaitOptions::EXITED | WaitOptions::NOHANG;
    assert_eq!(init.wait(WaitId::Pid(pid), exited), Ok(None), "held back");
    init.kill(pid, Signal::STOP).unwrap();
    let o = WaitOptions::STOPPED | WaitOptions::NOHANG;
    let info = init
        .wait(WaitId::Pid(pid), o)
        .unwrap()
        .expect("the group's stop is reported through its exited leader");
    assert_eq!(info.status.stopped(), Some(Signal::STOP));
    assert_eq!((info.pid, info.code), (pid, ChildCode::Stopped));
    assert_eq!(init.wait(WaitId::Pid(pid), o), Ok(None), "once");
    init.kill(pid, Signal::CONT).unwrap();
    let o = WaitOptions::CONTINUED | WaitOptions::NOHANG;
    let info = init
        .wait(WaitId::All, o | WaitOptions::NOWAIT)
        .unwrap()
        .expect("the continue too, NOWAIT leaving it");
    assert!(info.status.continued());
    let info = init.wait(WaitId::Pid(pid), o).unwrap().expect("then taken");
    assert_eq!((info.pid, info.code), (pid, ChildCode::Continued));
    assert_eq!(init.wait(WaitId::Pid(pid), o), Ok(None), "once");
    assert_eq!(
        init.wait(WaitId::Pid(pid), exited),
        Ok(None),
        "still held back"
    );
    th.exit(0);
    assert_eq!(
        reap(&init, &c).status.exited(),
        Some(0),
        "the last thread's code (`synchronize_group_exit`)"
    );
    assert_at_rest(&sys);
}

fn zombie_without_wexited_is_echild() {
    let sys = system();
    let init = sys.init();
    let c = fork(&init);
    c.exit(0);
    assert_eq!(
        init.wait(WaitId::All, WaitOptions::STOPPED | WaitOptions::NOHANG),
        Err(Errno::ECHILD),
        "Linux: wait_task_zombie without WEXITED leaves notask_error"
    );
    reap(&init, &c);
}

fn blocking_wait_is_woken_by_exit_from_another_thread() {
    let sys = system();
    let init = sys.init();
    let c = fork(&init);
    let c2 = c.clone();
    let h = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        c2.exit(9);
    });
    let info = init
        .wait(WaitId::All, WaitOptions::EXITED)
        .unwrap()
        .unwrap();
    assert_eq!(info.status.exited(), Some(9));
    h.join().unwrap();
}

fn blocking_wait_returns_eintr_on_fatal_signal() {
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    let c = fork(&p);
    p.set_signal_hook(Some(std::sync::Arc::new(|_| {})));
    let p2 = p.clone();
    let h = std::thread::spawn(move || p2.wait(WaitId::All, WaitOptions::EXITED));
    std::thread::sleep(Duration::from_millis(50));
    init.kill(init.pid_of(&p), Signal::KILL).unwrap();
    assert_eq!(
        h.join().unwrap(),
        Err(Errno::EINTR),
        "a fatal signal interrupts wait"
    );
    assert!(p.fatal_signal_pending());
    p.exit_signaled(Signal::KILL);
    reap(&init, &p);
    // c was orphaned to init, which reaps orphans.
    assert_eq!(c.state(), TaskState::Running);
    c.exit(0);
    assert_eq!(
        c.state(),
        TaskState::Dead,
        "orphans of the runtime init are reaped"
    );
}

fn threads_reap_each_others_children_unless_nothread() {
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    let t = thread(&p);
    let c = fork(&t);
    assert_eq!(c.ppid(), p.pid(), "ppid is the tgid");
    c.exit(1);
    assert_eq!(
        p.wait(
            WaitId::All,
            WaitOptions::EXITED | WaitOptions::NOTHREAD | WaitOptions::NOHANG
        ),
        Err(Errno::ECHILD),
        "__WNOTHREAD: only the caller's own children"
    );
    let info = p.wait(WaitId::All, WaitOptions::EXITED).unwrap().unwrap();
    assert_eq!(
        info.status.exited(),
        Some(1),
        "a thread's child is the group's"
    );
    t.exit(0);
    p.exit(0);
    reap(&init, &p);
    assert_at_rest(&sys);
}

fn wclone_selects_clone_children() {
    let sys = system();
    let init = sys.init();
    let c = init
        .fork(&CloneArgs {
            exit_signal: Some(Signal::USR1),
            ..Default::default()
        })
        .unwrap();
    c.exit(0);
    let pid = init.pid_of(&c);
    assert_eq!(
        init.wait(WaitId::Pid(pid), WaitOptions::EXITED),
        Err(Errno::ECHILD),
        "a clone child needs __WCLONE or __WALL"
    );
    let info = init
        .wait(WaitId::Pid(pid), WaitOptions::EXITED | WaitOptions::CLONE)
        .unwrap();
    assert!(info.is_some());
    let d = init.fork(&CloneArgs::default()).unwrap();
    d.exit(0);
    let pid = init.pid_of(&d);
    assert_eq!(
        init.wait(WaitId::Pid(pid), WaitOptions::EXITED | WaitOptions::CLONE),
        Err(Errno::ECHILD),
        "__WCLONE skips SIGCHLD children"
    );
    assert!(
        init.wait(WaitId::Pid(pid), WaitOptions::EXITED | WaitOptions::ALL)
            .unwrap()
            .is_some()
    );
}

fn wait_by_pgid() {
    let sys = system();
    let init = sys.init();
    let a = fork(&init);
    let b = fork(&init);
    init.setpgid(init.pid_of(&a), 0).unwrap();
    let pg = init.pid_of(&a);
    b.exit(2);
    a.exit(4);
    let info = init
        .wait(WaitId::Pgid(pg), WaitOptions::EXITED)
        .unwrap()
        .unwrap();
    assert_eq!(info.pid, pg);
    assert_eq!(
        init.wait(WaitId::Pgid(pg), WaitOptions::EXITED),
        Err(Errno::ECHILD),
        "the pgid names no child any more"
    );
    let info = init
        .wait(WaitId::Pgid(0), WaitOptions::EXITED)
        .unwrap()
        .unwrap();
    assert_eq!(info.pid, init.pid_of(&b), "pgid 0 is the caller's group");
    assert_at_rest(&sys);
}

fn ignore_sigchld_children_autoreap_and_wait_gets_echild() {
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    p.set_sigchld(SigChld::Ignore);
    let c = fork(&p);
    c.exit(0);
    assert_eq!(
        c.state(),
        TaskState::Dead,
        "SIG_IGN: the child is reaped at exit"
    );
    assert_eq!(p.wait(WaitId::All, WaitOptions::EXITED), Err(Errno::ECHILD));
    assert!(
        !p.pending_signals().contains(&Signal::CHLD),
        "SIG_IGN: no SIGCHLD queued"
    );
    p.exit(0);
    reap(&init, &p);
}

/// A forked child starts with its parent's SIGCHLD disposition (`copy_sighand`):
/// `SIG_IGN` and `SA_NOCLDWAIT` pass to children and grandchildren, whose own children
/// then autoreap; setting `Ignore` discards a SIGCHLD already pending, from the group's
/// set and each thread's (`do_sigaction`). Measured on Linux 6.18: a grandchild's wait
/// for its exited child under an inherited `SIG_IGN` or `SA_NOCLDWAIT` is ECHILD, and
/// `ShdPnd` loses a pending SIGCHLD when `SIG_IGN` is set (a handler with
/// `SA_NOCLDWAIT` keeps it). Found by `tests/kernel_lifecycle.rs`.
fn children_inherit_the_sigchld_disposition_and_ignore_flushes_it() {
    let sys = system();
    let init = sys.init();
    for d in [SigChld::Ignore, SigChld::NoCldWait] {
        let p = fork(&init);
        p.set_sigchld(d);
        let c = fork(&p);
        let g = fork(&c);
        g.exit(3);
        assert_eq!(
            g.state(),
            TaskState::Dead,
            "{d:?}: inherited, so autoreaped"
        );
        assert_eq!(
            c.wait(WaitId::All, WaitOptions::EXITED),
            Err(Errno::ECHILD),
            "{d:?}"
        );
        assert_eq!(
            c.pending_signals().contains(&Signal::CHLD),
            d == SigChld::NoCldWait,
            "{d:?}: SA_NOCLDWAIT still queues SIGCHLD, SIG_IGN does not"
        );
        // Back to the default for the child: its next child is a zombie again.
        c.set_sigchld(SigChld::Default);
        let g = fork(&c);
        g.exit(0);
        assert_eq!(g.state(), TaskState::Zombie, "{d:?}");
        reap(&c, &g);
        c.exit(0);
        assert_eq!(c.state(), TaskState::Dead, "{d:?}: p still autoreaps");
        p.exit(0);
        reap(&init, &p);
    }
    // A pending SIGCHLD, on the group and on a thread, goes when `Ignore` is set.
    let p = fork(&init);
    let t = thread(&p);
    let c = fork(&p);
    c.exit(0);
    init.tgkill(init.pid_of(&p), init.pid_of(&t), Signal::CHLD)
        .unwrap();
    assert!(p.pending_signals().contains(&Signal::CHLD));
    assert!(t.pending_signals().contains(&Signal::CHLD));
    p.set_sigchld(SigChld::NoCldWait);
    assert!(
        p.pending_signals().contains(&Signal::CHLD),
        "NoCldWait keeps it"
    );
    p.set_sigchld(SigChld::Ignore);
    assert!(
        !p.pending_signals().contains(&Signal::CHLD),
        "Ignore flushes it"
    );
    assert!(
        !t.pending_signals().contains(&Signal::CHLD),
        "every thread's too"
    );
    p.set_sigchld(SigChld::Default);
    reap(&p, &c);
    p.exit_group(0);
    reap(&init, &p);
    assert_at_rest(&sys);
}

fn sigchld_queued_on_parent_at_child_exit() {
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    let c = fork(&p);
    c.exit(0);
    assert!(p.pending_signals().contains(&Signal::CHLD));
    let _ = CloneFlags::empty();
    reap(&p, &c);
    p.exit(0);
    reap(&init, &p);
}

/// The reap takes the child off everything in one go: its parent's list (a second
/// wait is ECHILD), its pid (no lookup finds it), its process group (ESRCH to
/// `setpgid`; the group lives on in the sibling that shares it), the task count and the
/// pids charge; the numbers come back. A child forked by another thread of the group
/// and reaped by the leader leaves the same way.
fn reap_takes_the_child_off_everything() {
    let sys = system();
    let init = sys.init();
    let cg = sys.cgroup_root().mkdir("jobs").unwrap();
    let p = fork(&init);
    cg.attach(&p).unwrap();
    let t = thread(&p);
    let a = fork(&p);
    let b = fork(&t);
    p.setpgid(a.pid(), a.pid()).unwrap();
    p.setpgid(b.pid(), a.pid()).unwrap();
    let charged = cg.pids_current();
    assert_eq!(charged, 4, "p, its thread and two children");
    let tasks = sys.nr_tasks();
    let (a_nr, b_nr) = (a.pid(), b.pid());
    a.exit(3);
    let info = p
        .wait(WaitId::Pid(a_nr), WaitOptions::EXITED)
        .unwrap()
        .unwrap();
    assert_eq!(info.status.exited(), Some(3));
    assert_eq!(a.state(), TaskState::Dead);
    assert_eq!(
        p.wait(WaitId::Pid(a_nr), WaitOptions::EXITED | WaitOptions::NOHANG),
        Err(Errno::ECHILD),
        "off the parent's list"
    );
    assert!(sys.find_task(&p.pid_ns(), a_nr).is_none(), "off its pid");
    assert_eq!(p.setpgid(a_nr, a_nr), Err(Errno::ESRCH), "off its pid");
    assert_eq!(b.getpgid(), a_nr, "the group lives on in its other member");
    assert_eq!(cg.pids_current(), charged - 1, "uncharged");
    assert_eq!(sys.nr_tasks(), tasks - 1);
    // The thread's child, reaped by the leader (its real parent is the thread).
    b.exit(4);
    let info = p.wait(WaitId::All, WaitOptions::EXITED).unwrap().unwrap();
    assert_eq!((info.pid, info.status.exited()), (b_nr, Some(4)));
    assert_eq!(cg.pids_current(), charged - 2);
    assert!(sys.find_task(&p.pid_ns(), b_nr).is_none());
    t.exit(0);
    p.exit(0);
    reap(&init, &p);
    assert_at_rest(&sys);
}

/// `wait_task`: `P_PIDFD` without a pidfd. It reaps exactly the named child (never a
/// sibling, never a number a new child reused), keeps `wait`'s option checks, and is
/// ECHILD for a task that is not a child (a grandchild, a child already reaped) and
/// EINVAL for a task of another runtime.
fn wait_task_names_the_child_by_its_object() {
    let sys = system();
    let init = sys.init();
    let a = fork(&init);
    let b = fork(&init);
    assert_eq!(
        init.wait_task(&a, WaitOptions::NOHANG),
        Err(Errno::EINVAL),
        "none of WEXITED|WSTOPPED|WCONTINUED -> EINVAL"
    );
    assert_eq!(
        init.wait_task(
            &a,
            WaitOptions::EXITED | WaitOptions::from_bits_retain(0x10)
        ),
        Err(Errno::EINVAL),
        "unknown options -> EINVAL"
    );
    assert_eq!(
        init.wait_task(&a, WaitOptions::EXITED | WaitOptions::NOHANG),
        Ok(None),
        "running child, NOHANG -> nothing yet"
    );
    // A sibling's exit does not satisfy a wait for `a`.
    b.exit(2);
    assert_eq!(
        init.wait_task(&a, WaitOptions::EXITED | WaitOptions::NOHANG),
        Ok(None)
    );
    let g = fork(&a);
    assert_eq!(
        init.wait_task(&g, WaitOptions::EXITED),
        Err(Errno::ECHILD),
        "a grandchild is not a child"
    );
    g.exit(0);
    reap(&a, &g);
    a.exit(7);
    let nr = init.pid_of(&a);
    let info = init
        .wait_task(&a, WaitOptions::EXITED)
        .expect("a is a child")
        .expect("a exited");
    assert_eq!((info.pid, info.status.exited()), (nr, Some(7)));
    assert_eq!(a.state(), TaskState::Dead);
    assert_eq!(
        init.wait_task(&a, WaitOptions::EXITED | WaitOptions::NOHANG),
        Err(Errno::ECHILD),
        "reaped -> no longer a child"
    );
    // A child given `a`'s number (set_tid) is not `a`.
    let args = CloneArgs {
        set_tid: vec![nr],
        ..CloneArgs::default()
    };
    let reuse = init.fork(&args).expect("set_tid claims the freed number");
    assert_eq!(init.pid_of(&reuse), nr);
    reuse.exit(0);
    assert_eq!(
        init.wait_task(&a, WaitOptions::EXITED | WaitOptions::NOHANG),
        Err(Errno::ECHILD),
        "the number's new owner never matches the old task"
    );
    reap(&init, &reuse);
    reap(&init, &b);
    // Another runtime's task.
    let other = system();
    let stranger = fork(&other.init());
    assert_eq!(
        init.wait_task(&stranger, WaitOptions::EXITED),
        Err(Errno::EINVAL)
    );
    stranger.exit(0);
    reap(&other.init(), &stranger);
    assert_at_rest(&sys);
}

/// `__do_wait` walks the caller's own children first, then each other thread's in
/// thread-list order from the caller on (Linux 6.18, pthreads: the leader's
/// `waitid(P_ALL)` gets its own child although a thread's exited first; the thread's
/// gets its own).
fn a_wait_reports_the_calling_thread_s_children_first() {
    let sys = system();
    let init = sys.init();
    let l = fork(&init);
    let t1 = thread(&l);
    let t2 = thread(&l);
    let of_t2 = fork(&t2);
    let of_t1 = fork(&t1);
    let of_l = fork(&l);
    let of_t1_b = fork(&t1);
    for (c, code) in [(&of_t2, 3), (&of_t1, 2), (&of_l, 1), (&of_t1_b, 4)] {
        c.exit(code);
    }
    let next = |waiter: &uproc_tasklist::Task| {
        let info = waiter
            .wait(WaitId::All, WaitOptions::EXITED)
            .unwrap()
            .unwrap();
        info.status.exited().unwrap()
    };
    assert_eq!(next(&l), 1, "the leader's own child first");
    // t1: its own two in fork order, then (from t1 on, around the list) t2's.
    assert_eq!(next(&t1), 2);
    assert_eq!(next(&t1), 4);
    assert_eq!(next(&t1), 3, "then t2's child");
    // __WNOTHREAD still sees only the caller's.
    let again = fork(&t2);
    again.exit(5);
    assert_eq!(
        l.wait(WaitId::All, WaitOptions::EXITED | WaitOptions::NOTHREAD),
        Err(Errno::ECHILD)
    );
    // From the leader: t1 comes before t2 in the thread list; t2 is all there is.
    assert_eq!(next(&l), 5);
    for t in [&t1, &t2] {
        t.exit(0);
    }
    l.exit(0);
    reap(&init, &l);
}

every_profile!(
    only_the_thread_that_dumps_core_exits_with_the_core_bit,
    a_wait_reports_the_calling_thread_s_children_first,
    wait_task_names_the_child_by_its_object,
    invalid_options_are_einval,
    reap_takes_the_child_off_everything,
    no_eligible_child_is_echild,
    nohang_returns_none_and_reap_reports_status,
    nowait_leaves_the_zombie,
    killed_child_reports_signal_and_core,
    stopped_and_continued_are_reported_once,
    stop_and_continue_of_a_group_with_an_exited_leader_are_reported,
    zombie_without_wexited_is_echild,
    blocking_wait_is_woken_by_exit_from_another_thread,
    blocking_wait_returns_eintr_on_fatal_signal,
    threads_reap_each_others_children_unless_nothread,
    wclone_selects_clone_children,
    wait_by_pgid,
    ignore_sigchld_children_autoreap_and_wait_gets_echild,
    children_inherit_the_sigchld_disposition_and_ignore_flushes_it,
    sigchld_queued_on_parent_at_child_exit,
);
