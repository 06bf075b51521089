//! Calls made through the handle of a task that was already reaped (`release_task`
//! ran): Linux never runs them (a reaped task makes no system call), so each one is
//! ESRCH or a harmless no-op, and none of them may touch the accounting the release
//! already undid.

mod common;
use common::*;
use std::sync::Arc;
use uproc_abi::{Errno, PidfdFlags, Profile, Signal, WaitOptions};
use uproc_tasklist::{CloneArgs, SigChld, Task, TaskState, WaitId};

/// A child of init, forked, made a process-group leader (so its pid is a pgrp in use by
/// others too), exited and reaped.
fn reaped_child(init: &Task) -> Task {
    let c = fork(init);
    c.exit(0);
    reap(init, &c);
    assert_eq!(c.state(), TaskState::Dead);
    c
}

#[test]
fn setpgid_and_setsid_through_a_reaped_task_are_esrch() {
    for &p in Profile::ALL {
        let sys = system_with(p);
        let init = sys.init();
        let sid = init.getsid();
        // A reaped session leader whose session is still used by its child.
        let leader = fork(&init);
        leader.setsid().unwrap();
        let member = fork(&leader);
        leader.exit(0);
        reap(&init, &leader);
        for _ in 0..3 {
            assert_eq!(
                leader.setsid(),
                Err(Errno::ESRCH),
                "{p}: a reaped caller gets ESRCH"
            );
            assert_eq!(
                leader.setpgid(0, 0),
                Err(Errno::ESRCH),
                "{p}: setpgid(0, 0) too"
            );
        }
        let plain = reaped_child(&init);
        assert_eq!(plain.setsid(), Err(Errno::ESRCH), "{p}");
        assert_eq!(plain.setpgid(0, 0), Err(Errno::ESRCH), "{p}");
        assert_eq!(plain.setpgid(0, init.getpgid()), Err(Errno::ESRCH), "{p}");
        // The accounting is intact: init's session, the orphan's session, no leak.
        assert_eq!(init.getsid(), sid, "{p}: init's session untouched");
        assert_eq!(
            member.getsid(),
            leader.pid(),
            "{p}: the member keeps its session"
        );
        let c = fork(&init);
        assert_eq!(
            c.getsid(),
            sid,
            "{p}: a new child still joins init's session"
        );
        for t in [&c, &member] {
            t.exit(0);
        }
        reap(&init, &c);
        // The orphan was reparented to init, which reaps it.
        while init.wait(WaitId::All, WaitOptions::EXITED | WaitOptions::NOHANG)
            != Err(Errno::ECHILD)
        {}
        assert_at_rest(&sys);
        assert_eq!(sys.nr_tasks(), 1, "{p}: only init is left");
    }
}

#[test]
fn every_task_method_on_a_released_task_is_esrch_or_a_harmless_no_op() {
    for &p in Profile::ALL {
        let sys = system_with(p);
        let init = sys.init();
        let t = reaped_child(&init);
        let nr = t.pid();
        // ESRCH: the calls that act.
        assert_eq!(t.fork(&CloneArgs::default()).map(|_| ()), Err(Errno::ESRCH));
        assert_eq!(t.setsid(), Err(Errno::ESRCH));
        assert_eq!(t.setpgid(0, 0), Err(Errno::ESRCH));
        assert_eq!(t.kill(1, Signal::TERM), Err(Errno::ESRCH));
        assert_eq!(t.kill(-1, Signal::KILL), Err(Errno::ESRCH));
        assert_eq!(t.kill(0, Signal::KILL), Err(Errno::ESRCH));
        assert_eq!(t.tgkill(1, 1, Signal::TERM), Err(Errno::ESRCH));
        assert_eq!(t.unshare_pid_ns(), Err(Errno::ESRCH));
        assert_eq!(t.setns_pid(sys.root_ns()), Err(Errno::ESRCH));
        assert_eq!(
            t.pidfd_open(1, PidfdFlags::empty()).map(|_| ()),
            Err(Errno::ESRCH)
        );
        assert_eq!(
            t.wait(WaitId::All, WaitOptions::EXITED | WaitOptions::NOHANG),
            Err(Errno::ECHILD),
            "a reaped task has no children"
        );
        // No-ops: exits, signal state, settings.
        t.exit(3);
        t.exit_group(4);
        t.exit_signaled(Signal::KILL);
        assert_eq!(
            t.exit_status().and_then(|s| s.exited()),
            Some(0),
            "exit is idempotent"
        );
        let hook_ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = hook_ran.clone();
        let hook_holds_task = t.clone();
        t.set_signal_hook(Some(Arc::new(move |_| {
            let _ = &hook_holds_task;
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        })));
        assert_eq!(
            Arc::strong_count(&hook_ran),
            1,
            "a hook given to an exited task is dropped at once (it would never be)"
        );
        t.set_child_subreaper(true);
        t.set_sigchld(SigChld::Ignore);
        t.set_cap_checkpoint_restore(false);
        t.set_name("ghost");
        assert_eq!(t.dequeue_signal(), None);
        assert!(!t.fatal_signal_pending());
        assert!(t.pending_signals().is_empty());
        // Reads: the last known values.
        assert_eq!(t.state(), TaskState::Dead);
        assert!(!t.is_alive());
        assert_eq!(t.pid(), nr);
        assert_eq!(t.nspid(), vec![nr]);
        assert_eq!(t.tgid(), nr);
        assert!(t.status().contains("X (dead)"));
        let _ = (
            t.getpgid(),
            t.getsid(),
            t.ppid(),
            t.parent(),
            t.pidfd(),
            t.cgroup(),
        );
        assert_eq!(init.pid_of(&t), nr, "a handle keeps its numbers");
        // Nothing of it came back, and the runtime is intact.
        assert_eq!(sys.nr_tasks(), 1, "{p}");
        assert_at_rest(&sys);
        assert!(sys.find_task(sys.root_ns(), nr).is_none());
        let c = fork(&init);
        c.exit(0);
        reap(&init, &c);
        assert_at_rest(&sys);
    }
}
