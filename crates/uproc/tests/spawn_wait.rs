//! Spawn and wait: exit codes, try_wait, `.await`, `current()`, `TaskCx::exit`,
//! children of bodies, and fork errors leaving nothing behind (mirrors the kernel's
//! `clone3` and `pidfd_wait` selftests at the facade level).

#[macro_use]
mod common;

use common::{builders, wait_until};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use uproc::{
    CloneArgs, CloneFlags, Errno, InfoMask, PidfdFlags, Readiness, Runtime, Signal, Spawn,
    TaskState, WaitOptions,
};

fn spawned_body_exit_code_is_the_wait_status_on_both_executors() {
    for (name, b, _g) in builders() {
        let rt = b.build().unwrap();
        let child = rt.spawn(Spawn::new(), |_| 42).unwrap();
        let pid = child.pid();
        assert!(pid > 1, "{name}: a child of init gets a pid after 1");
        let st = child.wait().unwrap();
        assert_eq!(
            st.exited(),
            Some(42),
            "{name}: WEXITSTATUS is the body's return"
        );
        assert_eq!(
            rt.ps().len(),
            1,
            "{name}: wait reaped the child; only init is left"
        );
        assert_eq!(
            rt.init().pid_ns().nr_allocated(),
            1,
            "{name}: the pid was freed at reap"
        );
    }
}

fn exit_code_keeps_only_the_low_byte() {
    let rt = common::builder().build().unwrap();
    let st = rt.spawn(Spawn::new(), |_| 256 + 3).unwrap().wait().unwrap();
    assert_eq!(st.exited(), Some(3), "Linux keeps code & 0xff");
}

fn try_wait_is_none_while_running_then_the_status() {
    let rt = common::builder().build().unwrap();
    let (child, tx) = common::gated(&rt, 5);
    assert_eq!(
        child.try_wait(),
        Ok(None),
        "WNOHANG on a running child returns nothing"
    );
    assert_eq!(child.task().state(), TaskState::Running);
    tx.send(()).unwrap();
    assert!(wait_until(10, || matches!(child.try_wait(), Ok(Some(_)))));
    assert_eq!(child.try_wait().unwrap().unwrap().exited(), Some(5));
    assert_eq!(child.task().state(), TaskState::Dead, "reaped by try_wait");
    // Later calls (and wait) repeat the status; nothing is reaped twice.
    assert_eq!(child.wait().unwrap().exited(), Some(5));
    assert_eq!(rt.ps().len(), 1);
}

fn wait_sleeps_on_the_tasks_pidfd_until_the_body_ends() {
    let rt = common::builder().build().unwrap();
    let (child, tx) = common::gated(&rt, 8);
    let fd = child.pidfd();
    let waiter = std::thread::spawn(move || child.wait());
    assert!(
        wait_until(10, || fd.waiter_counts().0 == 1),
        "the waiter is asleep on this pid's wait queue (pid->wait_pidfd)"
    );
    tx.send(()).unwrap();
    assert_eq!(waiter.join().unwrap().unwrap().exited(), Some(8));
    assert_eq!(fd.waiter_counts(), (0, 0), "nobody waits any more");
    assert!(fd.poll().hangup, "reaped by the wait");
}

fn child_await_reaps_without_blocking_a_runtime_thread() {
    let rt = common::builder().build().unwrap();
    let child = rt
        .spawn(Spawn::new(), |_| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            9
        })
        .unwrap();
    // A current-thread tokio runtime: a blocking wait inside it would deadlock nothing
    // here, but `.await` must complete through the pidfd wakeup alone.
    let st = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(async move { child.await })
        .unwrap();
    assert_eq!(st.exited(), Some(9));
    assert_eq!(rt.ps().len(), 1, "the await reaped the child");
}

fn current_is_none_outside_bodies_and_the_task_inside_on_both_executors() {
    assert!(
        uproc::current().is_none(),
        "no task body runs on the test thread"
    );
    for (name, b, _g) in builders() {
        let rt = b.build().unwrap();
        let child = rt
            .spawn(Spawn::new(), |cx| {
                let cur = uproc::current().expect("current() inside a body");
                (cur.task() == cx.task()) as i32
            })
            .unwrap();
        assert_eq!(
            child.wait().unwrap().exited(),
            Some(1),
            "{name}: current() is this task"
        );
    }
    assert!(uproc::current().is_none());
}

#[cfg(feature = "tokio")]
fn current_follows_an_async_body_across_awaits() {
    let t = common::tokio_rt();
    let rt = common::builder().build().unwrap();
    let st = t
        .block_on(async {
            let child = rt
                .spawn_async(Spawn::new(), |cx| async move {
                    let mut ok = 0;
                    for _ in 0..10 {
                        tokio::task::yield_now().await;
                        if uproc::current().map(|c| c.pid()) == Some(cx.pid()) {
                            ok += 1;
                        }
                    }
                    ok
                })
                .unwrap();
            assert!(uproc::current().is_none(), "not inside the body");
            child.await
        })
        .unwrap();
    assert_eq!(
        st.exited(),
        Some(10),
        "current() is the task after every await"
    );
}

fn cx_exit_ends_the_body_early_with_its_code() {
    for (name, b, _g) in builders() {
        let rt = b.build().unwrap();
        let ran_after = Arc::new(AtomicBool::new(false));
        let r = ran_after.clone();
        let child = rt
            .spawn(Spawn::new(), move |cx| {
                if cx.pid() > 0 {
                    cx.exit(17);
                }
                r.store(true, Ordering::SeqCst);
                0
            })
            .unwrap();
        assert_eq!(child.wait().unwrap().exited(), Some(17), "{name}: exit(17)");
        assert!(
            !ran_after.load(Ordering::SeqCst),
            "{name}: nothing runs after exit"
        );
    }
}

fn children_of_a_body_are_parented_to_it() {
    let rt = common::builder().build().unwrap();
    let child = rt
        .spawn(Spawn::new().name("parent"), |cx| {
            let me = cx.pid();
            let g = cx
                .spawn(Spawn::new().name("kid"), move |g| {
                    (g.task().ppid() == me) as i32
                })
                .unwrap();
            g.wait().unwrap().exited().unwrap()
        })
        .unwrap();
    assert_eq!(
        child.wait().unwrap().exited(),
        Some(1),
        "getppid() of the grandchild is the body's pid"
    );
    assert_eq!(rt.ps().len(), 1);
}

fn spawn_into_a_cgroup_at_pids_max_fails_with_eagain_and_leaks_nothing() {
    let rt = common::builder().build().unwrap();
    let cg = rt.cgroup_root().mkdir("full").unwrap();
    cg.write("pids.max", "0").unwrap();
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    let err = rt
        .spawn(Spawn::new().cgroup(&cg), move |_| {
            r.store(true, Ordering::SeqCst);
            0
        })
        .unwrap_err();
    assert_eq!(err, Errno::EAGAIN, "fork over pids.max returns EAGAIN");
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert!(
        !ran.load(Ordering::SeqCst),
        "the body of a failed fork never runs"
    );
    assert_eq!(rt.ps().len(), 1, "no task was created");
    assert_eq!(rt.init().pid_ns().nr_allocated(), 1, "no pid leaked");
    assert_eq!(cg.pids_current(), 0, "no charge leaked");
    assert!(
        cg.read("pids.events").unwrap().contains("max 1"),
        "the rejection is counted in pids.events"
    );
}

fn spawn_with_unknown_clone_flags_fails_with_einval_and_leaks_nothing() {
    let rt = common::builder().build().unwrap();
    let args = CloneArgs {
        flags: CloneFlags::from_bits_retain(1 << 60),
        ..Default::default()
    };
    assert_eq!(
        rt.spawn(Spawn::new().args(args), |_| 0).unwrap_err(),
        Errno::EINVAL
    );
    assert_eq!(rt.ps().len(), 1);
    assert_eq!(rt.init().pid_ns().nr_allocated(), 1);
}

fn builder_rejects_a_bad_pid_max_with_einval() {
    for bad in [0, -1, 300, uproc::PID_MAX_LIMIT + 1] {
        assert_eq!(
            common::builder().pid_max(bad).build().unwrap_err(),
            Errno::EINVAL,
            "pid_max {bad}"
        );
    }
    assert!(
        common::builder()
            .pid_max(uproc::PID_MAX_MIN)
            .build()
            .is_ok()
    );
}

#[cfg(feature = "tokio")]
fn spawn_async_without_a_tokio_runtime_fails_with_einval_before_forking() {
    let rt = common::builder().build().unwrap();
    let err = rt.spawn_async(Spawn::new(), |_| async { 0 }).unwrap_err();
    assert_eq!(err, Errno::EINVAL);
    assert_eq!(rt.ps().len(), 1, "nothing was forked");
}

/// With an executor that runs no futures, `spawn_async` runs the body on the tokio
/// runtime of the caller wherever the caller is in it: inside a task (multi-thread and
/// current-thread runtimes), in `block_on` outside any task, and in a `spawn_blocking`
/// closure; and it never spawns on a runtime the caller has left.
#[cfg(feature = "tokio")]
fn spawn_async_finds_the_callers_tokio_runtime_from_a_task_block_on_and_spawn_blocking() {
    let rt = common::builder().build().unwrap();
    let spawn_pid = |rt: &Runtime| {
        rt.spawn_async(Spawn::new(), |cx| async move {
            tokio::task::yield_now().await;
            cx.pid()
        })
        .unwrap()
    };
    let check = |st: uproc::WaitStatus, pid: i32| assert_eq!(st.exited(), Some(pid & 0xff));
    let multi = common::tokio_rt();
    let current = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    for t in [&multi, &current] {
        // Outside any task, in block_on.
        let child = t.block_on(async { spawn_pid(&rt) });
        let pid = child.pid();
        check(
            t.block_on(std::future::IntoFuture::into_future(child))
                .unwrap(),
            pid,
        );
        // Inside a task.
        let rt2 = rt.clone();
        let (st, pid) = t
            .block_on(t.spawn(async move {
                let child = spawn_pid(&rt2);
                let pid = child.pid();
                (child.await.unwrap(), pid)
            }))
            .unwrap();
        check(st, pid);
    }
    // In a blocking closure of the multi-thread runtime.
    let rt2 = rt.clone();
    let child = multi
        .block_on(async move { tokio::task::spawn_blocking(move || spawn_pid(&rt2)).await })
        .unwrap();
    let pid = child.pid();
    check(child.wait().unwrap(), pid);
    // Out of every runtime again: nothing to run a future on.
    assert_eq!(
        rt.spawn_async(Spawn::new(), |_| async { 0 }).unwrap_err(),
        Errno::EINVAL
    );
    assert_eq!(rt.ps().len(), 1, "every child was reaped");
}

fn runtime_is_a_cheap_handle_compared_by_identity() {
    let a = common::builder().build().unwrap();
    let b = common::builder().build().unwrap();
    assert_eq!(a.clone(), a);
    assert_ne!(a, b);
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Runtime>();
    send_sync::<uproc::TaskCx>();
    send_sync::<uproc::Child>();
}

#[test]
fn spawn_with_a_parent_of_another_runtime_is_einval() {
    let (a, b) = (Runtime::new().unwrap(), Runtime::new().unwrap());
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    let err = a
        .spawn(Spawn::new().parent(&b.init()), move |_| {
            r.store(true, Ordering::SeqCst);
            0
        })
        .map(|_| ())
        .unwrap_err();
    assert_eq!(err, Errno::EINVAL, "a parent of another runtime is EINVAL");
    assert!(!ran.load(Ordering::SeqCst), "no body ran");
    assert_eq!(a.ps().len(), 1, "nothing forked in the spawning runtime");
    assert_eq!(b.ps().len(), 1, "nothing forked in the parent's runtime");
}

fn a_pidfd_asked_for_after_the_reap_reads_as_the_clone_pidfd_one_would() {
    let rt = common::builder().build().unwrap();
    let child = rt.spawn(Spawn::new(), |_| 7).unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        std::thread::yield_now();
    };
    assert_eq!(status.exited(), Some(7));
    let index_before = rt.system().pidfs().index_len();
    let fd = child.pidfd();
    assert_eq!(
        fd.poll(),
        Readiness {
            readable: true,
            hangup: true
        },
        "reaped: readable and hung up"
    );
    assert_eq!(
        fd.exit_status(),
        Some(status),
        "PIDFD_INFO_EXIT is recorded"
    );
    let info = fd.info(InfoMask::EXIT).unwrap();
    assert!(info.mask.contains(InfoMask::EXIT));
    assert_eq!(info.exit_code, status.raw());
    assert_eq!(
        fd.info(InfoMask::PID).unwrap_err(),
        Errno::ESRCH,
        "no live ids"
    );
    assert_eq!(fd.send_signal(Signal::KILL).unwrap_err(), Errno::ESRCH);
    assert_eq!(
        rt.open_by_handle(&rt.init(), &fd.file_handle(), PidfdFlags::empty())
            .unwrap_err(),
        Errno::ESTALE,
        "a reaped pid's handle does not decode"
    );
    assert_eq!(
        rt.system().pidfs().index_len(),
        index_before,
        "a pidfd opened after the reap leaves no index entry"
    );
    assert_eq!(child.pidfd(), fd, "one pidfd per Child, opened once");
}

fn a_pidfd_asked_for_while_running_sees_the_exit_and_names_the_task() {
    let rt = common::builder().build().unwrap();
    let (child, tx) = common::gated(&rt, 3);
    let fd = child.pidfd();
    let opened = rt
        .system()
        .pidfs()
        .pidfd_open(&rt.init().pid_ns(), child.pid(), PidfdFlags::empty())
        .unwrap();
    assert_eq!(fd.ino(), opened.ino(), "the same process");
    assert!(!fd.poll().readable, "running");
    assert_eq!(fd.info(InfoMask::PID).unwrap().pid, child.pid());
    tx.send(()).unwrap();
    assert!(fd.wait_readable(std::time::Duration::from_secs(30)));
    let status = child.wait().unwrap();
    assert_eq!(status.exited(), Some(3));
    assert_eq!(fd.exit_status(), Some(status), "reaped: exit info recorded");
    assert!(fd.poll().hangup);
}

fn a_clone_pidfd_spawn_keeps_the_forks_pidfd() {
    let rt = common::builder().build().unwrap();
    let args = CloneArgs {
        flags: CloneFlags::PIDFD,
        ..CloneArgs::default()
    };
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let child = rt
        .spawn(Spawn::new().args(args), move |_| {
            rx.recv().unwrap();
            0
        })
        .unwrap();
    assert_eq!(
        Some(child.pidfd()),
        child.task().pidfd(),
        "CLONE_PIDFD asked: the Child's pidfd is the fork's"
    );
    tx.send(()).unwrap();
    assert_eq!(child.wait().unwrap().exited(), Some(0));
}

fn a_detached_child_reaped_by_another_waiter_leaves_its_child_handle_a_status() {
    // Another waiter of the parent reaps the task first: the Child's wait reports the
    // status pidfs recorded, and reaps nothing else (no recycled number is hit).
    let rt = common::builder().build().unwrap();
    let parent = rt.init();
    let child = rt.spawn(Spawn::new(), |_| 9).unwrap();
    let pid = child.pid();
    let info = loop {
        match parent.wait(
            uproc::WaitId::Pid(pid),
            WaitOptions::EXITED | WaitOptions::NOHANG,
        ) {
            Ok(Some(info)) => break info,
            Ok(None) => std::thread::yield_now(),
            Err(e) => panic!("wait: {e:?}"),
        }
    };
    assert_eq!(info.status.exited(), Some(9));
    let other = rt.spawn(Spawn::new(), |_| 1).unwrap();
    assert_eq!(
        child.try_wait().unwrap().and_then(|s| s.exited()),
        Some(9),
        "try_wait reads the other waiter's reap as a status, not ECHILD"
    );
    assert_eq!(child.wait().unwrap().exited(), Some(9));
    assert_eq!(
        other.wait().unwrap().exited(),
        Some(1),
        "the other child is untouched"
    );
    assert_eq!(rt.ps().len(), 1);
}

/// A spawned leader whose body ended while a thread it forked still runs: exited, not
/// reapable (a delayed group leader) until that thread is released.
fn leader_outlived_by_its_thread(rt: &Runtime) -> (uproc::Child, uproc::Task) {
    let (tx, rx) = std::sync::mpsc::channel();
    let child = rt
        .spawn(Spawn::new(), move |cx| {
            let thread = CloneArgs {
                flags: CloneFlags::THREAD | CloneFlags::SIGHAND | CloneFlags::VM,
                ..Default::default()
            };
            tx.send(cx.task().fork(&thread).unwrap()).unwrap();
            4
        })
        .unwrap();
    let thread = rx.recv().unwrap();
    assert!(
        wait_until(10, || child.task().state() == TaskState::Zombie),
        "the leader's body ended: exited, not released"
    );
    assert_eq!(
        child.try_wait(),
        Ok(None),
        "not reapable while its thread runs"
    );
    (child, thread)
}

fn a_wait_for_a_leader_outlived_by_its_thread_sleeps_until_it_is_reapable() {
    let rt = common::builder().build().unwrap();
    let (child, thread) = leader_outlived_by_its_thread(&rt);
    let fd = child.pidfd();
    let waiter = std::thread::spawn(move || child.wait());
    assert!(
        wait_until(10, || fd.waiter_counts().0 == 1),
        "the waiter is asleep on the pid's wait queue, not spinning"
    );
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(fd.waiter_counts().0, 1, "still asleep: nothing woke it");
    assert!(!waiter.is_finished());
    thread.exit(6);
    let st = waiter.join().unwrap().unwrap();
    assert_eq!(
        st.exited(),
        Some(6),
        "reaped once its thread was released, with the last thread's code (Linux's \
         `synchronize_group_exit`: the body's 4 was a thread exit)"
    );
    assert_eq!(rt.ps().len(), 1, "nothing left but init");
}

fn an_await_on_a_leader_outlived_by_its_thread_is_woken_once_when_it_is_reapable() {
    use std::future::{Future, IntoFuture};
    use std::sync::atomic::AtomicUsize;
    use std::task::{Context, Poll, Wake, Waker};
    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let rt = common::builder().build().unwrap();
    let (child, thread) = leader_outlived_by_its_thread(&rt);
    let fd = child.pidfd();
    let count = Arc::new(Count(AtomicUsize::new(0)));
    let waker = Waker::from(count.clone());
    let mut cx = Context::from_waker(&waker);
    let mut fut = std::pin::pin!(child.into_future());
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    assert_eq!(
        fd.waiter_counts().1,
        1,
        "registered on the pid's wait queue"
    );
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(
        count.0.load(Ordering::SeqCst),
        0,
        "no self-wake: the future is not polled in a loop"
    );
    thread.exit(6);
    assert!(wait_until(10, || count.0.load(Ordering::SeqCst) == 1));
    match fut.as_mut().poll(&mut cx) {
        Poll::Ready(st) => assert_eq!(st.unwrap().exited(), Some(6), "the last thread's code"),
        Poll::Pending => panic!("woken once the task was reapable, and reaped then"),
    }
    assert_eq!(rt.ps().len(), 1, "nothing left but init");
}

fn a_completed_await_leaves_its_child_the_same_status() {
    use std::future::IntoFuture;
    let rt = common::builder().build().unwrap();
    let child = rt.spawn(Spawn::new(), |_| 6).unwrap();
    let mut fut = Box::pin(child.into_future());
    let st = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(&mut fut)
        .unwrap();
    assert_eq!(st.exited(), Some(6));
    assert_eq!(rt.ps().len(), 1, "reaped by the await");
    assert_eq!(
        fut.child().try_wait(),
        Ok(Some(st)),
        "asked again, the child reports the status the await reaped"
    );
    assert_eq!(fut.child().pidfd().exit_status(), Some(st));
}

/// A `cgroup.procs` write of `0` moves the writer (`cgroup_procs_write_start`): the
/// task whose body runs on the writing thread; ESRCH where no body runs, or where the
/// body is another runtime's.
fn a_procs_write_of_zero_from_a_body_moves_its_task() {
    for (name, b, _g) in builders() {
        let rt = b.build().unwrap();
        let dst = rt.cgroup_root().mkdir("dst").unwrap();
        assert_eq!(
            dst.write("cgroup.procs", "0"),
            Err(Errno::ESRCH),
            "{name}: no body"
        );
        let other = common::builder().build().unwrap();
        let elsewhere = other.cgroup_root().mkdir("x").unwrap();
        let cg = dst.clone();
        let child = rt
            .spawn(Spawn::new(), move |cx| {
                assert_eq!(elsewhere.write("cgroup.procs", "0"), Err(Errno::ESRCH));
                cg.write("cgroup.procs", "0").unwrap();
                assert_eq!(cg.write("cgroup.threads", "0"), Ok(()), "already here");
                (cx.task().cgroup().path() == "/dst") as i32
            })
            .unwrap();
        let pid = child.pid();
        assert_eq!(
            child.wait().unwrap().exited(),
            Some(1),
            "{name}: moved itself"
        );
        assert!(!dst.read("cgroup.procs").unwrap().contains(&pid.to_string()));
        assert_eq!(dst.pids_current(), 0, "{name}: the charge went with it");
    }
}

every_profile!(
    spawned_body_exit_code_is_the_wait_status_on_both_executors,
    exit_code_keeps_only_the_low_byte,
    try_wait_is_none_while_running_then_the_status,
    wait_sleeps_on_the_tasks_pidfd_until_the_body_ends,
    child_await_reaps_without_blocking_a_runtime_thread,
    current_is_none_outside_bodies_and_the_task_inside_on_both_executors,
    #[cfg(feature = "tokio")]
    current_follows_an_async_body_across_awaits,
    cx_exit_ends_the_body_early_with_its_code,
    children_of_a_body_are_parented_to_it,
    spawn_into_a_cgroup_at_pids_max_fails_with_eagain_and_leaks_nothing,
    spawn_with_unknown_clone_flags_fails_with_einval_and_leaks_nothing,
    builder_rejects_a_bad_pid_max_with_einval,
    #[cfg(feature = "tokio")]
    spawn_async_without_a_tokio_runtime_fails_with_einval_before_forking,
    #[cfg(feature = "tokio")]
    spawn_async_finds_the_callers_tokio_runtime_from_a_task_block_on_and_spawn_blocking,
    runtime_is_a_cheap_handle_compared_by_identity,
    a_pidfd_asked_for_after_the_reap_reads_as_the_clone_pidfd_one_would,
    a_pidfd_asked_for_while_running_sees_the_exit_and_names_the_task,
    a_clone_pidfd_spawn_keeps_the_forks_pidfd,
    a_detached_child_reaped_by_another_waiter_leaves_its_child_handle_a_status,
    a_wait_for_a_leader_outlived_by_its_thread_sleeps_until_it_is_reapable,
    an_await_on_a_leader_outlived_by_its_thread_is_woken_once_when_it_is_reapable,
    a_completed_await_leaves_its_child_the_same_status,
    a_procs_write_of_zero_from_a_body_moves_its_task,
);
