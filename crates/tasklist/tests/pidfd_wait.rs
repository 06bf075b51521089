//! Waiting through pidfds and pidfd readiness around exit and reap (selftests:
//! `pidfd/pidfd_wait.c`, `pidfd/pidfd_poll_test.c`).

#[macro_use]
mod common;
use common::*;
use std::time::Duration;
use uproc_abi::{CloneFlags, Errno, InfoMask, PidfdFlags, Signal, WaitOptions};
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

every_profile!(
    wait_through_pidfd_reaps_that_child,
    nonblocking_pidfd_gives_eagain_unless_nohang,
    pidfd_of_a_non_child_is_echild,
    pidfd_signal_and_info_through_backend,
    pidfd_blocking_readable_from_another_thread,
    thread_pidfd_readable_when_thread_exits,
);
