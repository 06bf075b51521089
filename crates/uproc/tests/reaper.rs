//! Reaping: orphans reaped by init (`reap_orphans`) or kept for the caller, and the
//! detached-child rule at scale: nothing left at rest (mirrors the kernel's
//! `prctl`/`pid_namespace` reaper selftests at the facade level).

mod common;

use common::wait_until;
use uproc::{CloneArgs, Errno, Runtime, Spawn, TaskState, WaitId, WaitOptions};

#[test]
fn orphans_reparented_to_init_are_reaped_automatically() {
    let rt = Runtime::builder().reap_orphans(true).build().unwrap();
    let init = rt.init();
    let p = init.fork(&CloneArgs::default()).unwrap();
    let g = p.fork(&CloneArgs::default()).unwrap();
    p.exit(0);
    init.wait(WaitId::Pid(p.pid()), WaitOptions::EXITED)
        .unwrap();
    assert_eq!(
        g.ppid(),
        1,
        "an orphan is reparented to its namespace's init"
    );
    g.exit(3);
    assert!(
        wait_until(5, || g.state() == TaskState::Dead),
        "init reaps the orphan"
    );
    assert_eq!(rt.ps().len(), 1);
    assert_eq!(init.pid_ns().nr_allocated(), 1);
}

#[test]
fn orphans_stay_zombies_for_the_caller_when_reap_orphans_is_off() {
    let rt = Runtime::builder().reap_orphans(false).build().unwrap();
    let init = rt.init();
    let p = init.fork(&CloneArgs::default()).unwrap();
    let g = p.fork(&CloneArgs::default()).unwrap();
    p.exit(0);
    init.wait(WaitId::Pid(p.pid()), WaitOptions::EXITED)
        .unwrap();
    g.exit(3);
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(g.state(), TaskState::Zombie, "nobody reaps it");
    let ps = rt.ps();
    let z = ps
        .iter()
        .find(|p| p.pid == g.pid())
        .expect("the zombie is listed");
    assert_eq!((z.ppid, z.state), (1, TaskState::Zombie));
    let info = init
        .wait(WaitId::Pid(g.pid()), WaitOptions::EXITED)
        .unwrap()
        .unwrap();
    assert_eq!(
        info.status.exited(),
        Some(3),
        "the caller reaps it from init"
    );
    assert_eq!(rt.ps().len(), 1);
}

#[test]
fn a_spawned_orphan_is_reaped_by_init_and_its_child_handle_still_reports_the_status() {
    let rt = Runtime::new().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let parent = rt
        .spawn(Spawn::new().name("parent"), move |cx| {
            let g = cx
                .spawn(Spawn::new().name("orphan"), move |_| {
                    go_rx.recv().unwrap();
                    6
                })
                .unwrap();
            tx.send(g).unwrap();
            0
        })
        .unwrap();
    let g = rx.recv().unwrap();
    assert_eq!(parent.wait().unwrap().exited(), Some(0));
    assert_eq!(g.task().ppid(), 1, "reparented to init");
    go_tx.send(()).unwrap();
    assert_eq!(
        g.wait().unwrap().exited(),
        Some(6),
        "status from the pidfd's exit info"
    );
    assert!(wait_until(5, || rt.ps().len() == 1));
}

/// Spawns `n` short tasks and drops every `Child`; retries on EAGAIN (pid space full
/// while earlier tasks are still finishing).
fn spawn_detached(rt: &Runtime, n: usize, spawn: impl Fn(&Runtime) -> Result<uproc::Child, Errno>) {
    let mut done = 0;
    while done < n {
        match spawn(rt) {
            Ok(c) => {
                drop(c);
                done += 1;
            }
            Err(Errno::EAGAIN) => std::thread::yield_now(),
            Err(e) => panic!("spawn failed: {e}"),
        }
    }
}

/// Debug builds run 20k (a thread per task is slow unoptimised); release runs 100k.
const SCALE: usize = if cfg!(debug_assertions) {
    20_000
} else {
    100_000
};

#[test]
fn dropped_children_are_reaped_so_nothing_is_left_at_rest_thread_executor() {
    let rt = Runtime::new().unwrap();
    spawn_detached(&rt, SCALE, |rt| rt.spawn(Spawn::new(), |_| 0));
    assert!(
        wait_until(60, || rt.ps().len() == 1
            && rt.init().pid_ns().nr_allocated() == 1),
        "every detached task is reaped when it exits; left: {} tasks, {} pids",
        rt.ps().len(),
        rt.init().pid_ns().nr_allocated()
    );
    // At rest: the reaper threads have also freed the pid numbers (free_pid runs just
    // after the task leaves the task list, so the two are checked together above).
    assert_eq!(
        rt.init().pid_ns().nr_allocated(),
        1,
        "only init's pid is allocated"
    );
    assert_eq!(rt.system().nr_tasks(), 1);
}

#[cfg(feature = "tokio")]
#[test]
fn dropped_async_children_are_reaped_so_nothing_is_left_at_rest_tokio() {
    let t = common::tokio_rt();
    let rt = Runtime::builder()
        .executor(uproc::tokio::TokioExecutor::new(t.handle().clone()))
        .build()
        .unwrap();
    spawn_detached(&rt, SCALE, |rt| {
        rt.spawn_async(Spawn::new(), |_| async {
            tokio::task::yield_now().await;
            0
        })
    });
    assert!(
        wait_until(60, || rt.ps().len() == 1
            && rt.init().pid_ns().nr_allocated() == 1),
        "every detached async task is reaped; left: {} tasks, {} pids",
        rt.ps().len(),
        rt.init().pid_ns().nr_allocated()
    );
    assert_eq!(rt.init().pid_ns().nr_allocated(), 1);
}

#[test]
fn a_child_dropped_after_exit_is_reaped_at_drop() {
    let rt = Runtime::new().unwrap();
    let child = rt.spawn(Spawn::new(), |_| 0).unwrap();
    let task = child.task().clone();
    assert!(
        wait_until(5, || task.state() == TaskState::Zombie),
        "exited, not reaped"
    );
    drop(child);
    assert_eq!(
        task.state(),
        TaskState::Dead,
        "drop reaps an exited detached child at once"
    );
    assert_eq!(rt.ps().len(), 1);
}
