//! Waiting through pidfds and pidfd readiness around exit and reap (selftests:
//! `pidfd/pidfd_wait.c`, `pidfd/pidfd_poll_test.c`).

#[macro_use]
mod common;
use common::*;
use std::time::Duration;
use uproc_abi::{CloneFlags, Errno, InfoMask, PidfdFlags, PidfdSignalFlags, Signal, WaitOptions};
use uproc_tasklist::{CloneArgs, TaskState, WaitId};

fn wait_through_pidfd_reaps_that_child() {
    let sys = system();
    let init = sys.init();
    let a = fork(&init);
    let b = fork(&init);
    let fd = init
        .pidfd_open(init.pid_of(&b), PidfdFlags::empty())
        .unwrap();
    a.exit(1);
    b.exit(2);
    let info = init
        .wait(WaitId::PidFd(&fd), WaitOptions::EXITED)
        .unwrap()
        .unwrap();
    assert_eq!(info.pid, init.pid_of(&b));
    assert_eq!(info.status.exited(), Some(2));
    assert_eq!(
        a.state(),
        TaskState::Zombie,
        "only the pidfd's child was reaped"
    );
    assert_eq!(
        init.wait(WaitId::PidFd(&fd), WaitOptions::EXITED),
        Err(Errno::ECHILD),
        "already reaped"
    );
    let r = fd.poll();
    assert!(r.readable && r.hangup, "reaped: readable + hangup");
    assert_eq!(
        fd.send_signal(Signal::KILL),
        Err(Errno::ESRCH),
        "ESRCH once reaped"
    );
    reap(&init, &a);
}

fn nonblocking_pidfd_gives_eagain_unless_nohang() {
    let sys = system();
    let init = sys.init();
    let c = fork(&init);
    let fd = init
        .pidfd_open(init.pid_of(&c), PidfdFlags::NONBLOCK)
        .unwrap();
    assert_eq!(
        init.wait(WaitId::PidFd(&fd), WaitOptions::EXITED),
        Err(Errno::EAGAIN),
        "PIDFD_NONBLOCK: nothing ready -> EAGAIN"
    );
    assert_eq!(
        init.wait(
            WaitId::PidFd(&fd),
            WaitOptions::EXITED | WaitOptions::NOHANG
        ),
        Ok(None),
        "with WNOHANG: 0"
    );
    c.exit(0);
    assert!(
        init.wait(WaitId::PidFd(&fd), WaitOptions::EXITED)
            .unwrap()
            .is_some()
    );
}

fn pidfd_of_a_non_child_is_echild() {
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    let c = fork(&p);
    let fd = init
        .pidfd_open(init.pid_of(&c), PidfdFlags::empty())
        .unwrap();
    c.exit(0);
    assert_eq!(
        init.wait(WaitId::PidFd(&fd), WaitOptions::EXITED),
        Err(Errno::ECHILD)
    );
    assert!(fd.poll().readable, "an exited non-child is still readable");
    reap(&p, &c);
    p.exit(0);
    reap(&init, &p);
}

fn pidfd_signal_and_info_through_backend() {
    let sys = system();
    let init = sys.init();
    let c = fork_flags(&init, CloneFlags::PIDFD);
    let fd = c.pidfd().unwrap();
    let info = fd.info(InfoMask::PID | InfoMask::CGROUPID).unwrap();
    assert_eq!(info.pid, init.pid_of(&c));
    assert_eq!(info.ppid, 1);
    assert_eq!(info.cgroupid, sys.cgroup_root().id());
    fd.send_signal(Signal::TERM).unwrap();
    assert_eq!(
        c.state(),
        TaskState::Zombie,
        "pidfd_send_signal reached the task"
    );
    assert!(fd.wait_readable(Duration::from_secs(5)));
    assert_eq!(
        fd.send_signal(Signal::KILL),
        Ok(()),
        "a zombie: success, silently"
    );
    reap(&init, &c);
    let info = fd.info(InfoMask::EXIT).unwrap();
    assert!(info.mask.contains(InfoMask::EXIT));
    assert_eq!(
        info.exit_code,
        uproc_abi::WaitStatus::signaled_by(Signal::TERM, false).raw()
    );
}

fn pidfd_blocking_readable_from_another_thread() {
    let sys = system();
    let init = sys.init();
    let c = init
        .fork(&CloneArgs {
            flags: CloneFlags::PIDFD,
            ..Default::default()
        })
        .unwrap();
    let fd = c.pidfd().unwrap();
    let c2 = c.clone();
    let h = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        c2.exit(0);
    });
    assert!(
        fd.wait_readable(Duration::from_secs(10)),
        "do_notify_pidfd wakes the waiter"
    );
    h.join().unwrap();
    reap(&init, &c);
}

fn thread_pidfd_readable_when_thread_exits() {
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    let t = thread(&p);
    assert_eq!(
        init.pidfd_open(init.pid_of(&t), PidfdFlags::empty())
            .map(|_| ()),
        Err(Errno::ENOENT),
        "a thread needs PIDFD_THREAD"
    );
    let fd = init
        .pidfd_open(init.pid_of(&t), PidfdFlags::THREAD)
        .unwrap();
    t.exit(0);
    assert!(fd.poll().readable);
    p.exit(0);
    reap(&init, &p);
}

/// `PIDFD_SIGNAL_PROCESS_GROUP` signals the group whose id is the pidfd's pid
/// (`kill_pgrp_info(sig, &kinfo, pid)`), checked on Linux 6.18: a pidfd of a member
/// that leads no group is ESRCH (not its leader's group), and one of a reaped leader
/// still reaches the group its number names.
fn pidfd_process_group_signal_names_the_group_with_the_pidfd_s_pid() {
    // The orphaned c stays a zombie for init to reap by hand.
    let sys = system_without_orphan_reaping();
    let init = sys.init();
    let a = fork(&init);
    a.setpgid(0, 0).unwrap();
    let b = fork(&a);
    let c = fork(&a);
    let of = |t: &uproc_tasklist::Task| {
        init.pidfd_open(init.pid_of(t), PidfdFlags::empty())
            .unwrap()
    };
    let (fa, fb) = (of(&a), of(&b));
    assert_eq!(
        fb.send_signal_with(Signal::PROBE, PidfdSignalFlags::PROCESS_GROUP),
        Err(Errno::ESRCH),
        "b leads no group"
    );
    assert_eq!(
        fb.send_signal_with(Signal::TERM, PidfdSignalFlags::PROCESS_GROUP),
        Err(Errno::ESRCH)
    );
    assert_eq!(a.state(), TaskState::Running, "a's group was not signalled");
    // a exits and is reaped; b and c keep its group.
    b.exit(0);
    reap(&a, &b);
    a.exit(0);
    reap(&init, &a);
    assert_eq!(fa.send_signal(Signal::PROBE), Err(Errno::ESRCH), "no task");
    fa.send_signal_with(Signal::KILL, PidfdSignalFlags::PROCESS_GROUP)
        .expect("the group lives on under the reaped leader's pid");
    assert_eq!(c.state(), TaskState::Zombie, "c, in that group, was killed");
    assert_eq!(
        c.exit_status().and_then(|s| s.signaled()),
        Some(Signal::KILL)
    );
    reap(&init, &c);
    assert_eq!(
        fa.send_signal_with(Signal::PROBE, PidfdSignalFlags::PROCESS_GROUP),
        Err(Errno::ESRCH),
        "the group is gone with its last member"
    );
}

every_profile!(
    pidfd_process_group_signal_names_the_group_with_the_pidfd_s_pid,
    wait_through_pidfd_reaps_that_child,
    nonblocking_pidfd_gives_eagain_unless_nohang,
    pidfd_of_a_non_child_is_echild,
    pidfd_signal_and_info_through_backend,
    pidfd_blocking_readable_from_another_thread,
    thread_pidfd_readable_when_thread_exits,
);
