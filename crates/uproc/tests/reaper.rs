//! Reaping: orphans reaped by init (`reap_orphans`) or kept for the caller, and the
//! detached-child rule at scale: nothing left at rest (mirrors the kernel's
//! `prctl`/`pid_namespace` reaper selftests at the facade level).

#[macro_use]
mod common;

use common::wait_until;
use std::sync::mpsc::channel;
use uproc::{CloneArgs, Errno, Runtime, Spawn, Task, TaskState, WaitId, WaitOptions};

/// init -> p -> g, then p exits and init reaps it: g is an orphan (reparented to init).
fn orphan_of_init(rt: &Runtime) -> (Task, Task) {
    let init = rt.init();
    let p = init.fork(&CloneArgs::default()).unwrap();
    let g = p.fork(&CloneArgs::default()).unwrap();
    p.exit(0);
    init.wait(WaitId::Pid(p.pid()), WaitOptions::EXITED)
        .unwrap();
    (init, g)
}

fn orphans_reparented_to_init_are_reaped_automatically() {
    let rt = common::builder().reap_orphans(true).build().unwrap();
    let (init, g) = orphan_of_init(&rt);
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

fn orphans_stay_zombies_for_the_caller_when_reap_orphans_is_off() {
    let rt = common::builder().reap_orphans(false).build().unwrap();
    let (init, g) = orphan_of_init(&rt);
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

fn a_spawned_orphan_is_reaped_by_init_and_its_child_handle_still_reports_the_status() {
    let rt = common::builder().build().unwrap();
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

/// A subreaper body that forks a parent, whose body forks the returned grandchild and
/// exits: the grandchild is adopted by the subreaper. The grandchild exits with 6 when
/// `go` is sent; the subreaper reaps it when `reap` is sent and reports what its own
/// wait saw on `reaped`.
struct Adoption {
    sub: uproc::Child,
    orphan: uproc::Child,
    go: std::sync::mpsc::Sender<()>,
    reap: std::sync::mpsc::Sender<()>,
    reaped: std::sync::mpsc::Receiver<uproc::WaitStatus>,
}

fn adoption(rt: &Runtime) -> Adoption {
    let (orphan_tx, orphan_rx) = channel();
    let (go, go_rx) = channel::<()>();
    let (reap, reap_rx) = channel::<()>();
    let (reaped_tx, reaped) = channel();
    let sub = rt
        .spawn(Spawn::new().name("subreaper"), move |cx| {
            cx.task().set_child_subreaper(true);
            let parent = cx
                .spawn(Spawn::new().name("parent"), move |cx| {
                    let g = cx
                        .spawn(Spawn::new().name("orphan"), move |_| {
                            go_rx.recv().unwrap();
                            6
                        })
                        .unwrap();
                    orphan_tx.send(g).unwrap();
                    0
                })
                .unwrap();
            assert_eq!(parent.wait().unwrap().exited(), Some(0));
            // The subreaper reaps its adopted orphan, as a service manager does.
            reap_rx.recv().unwrap();
            let info = cx
                .task()
                .wait(WaitId::All, WaitOptions::EXITED)
                .unwrap()
                .unwrap();
            reaped_tx.send(info.status).unwrap();
            0
        })
        .unwrap();
    let orphan = orphan_rx.recv().unwrap();
    assert!(
        wait_until(5, || orphan.task().ppid() == sub.pid()),
        "the orphan is reparented to the nearest subreaper"
    );
    Adoption {
        sub,
        orphan,
        go,
        reap,
        reaped,
    }
}

fn a_child_adopted_by_a_subreaper_wakes_at_its_exit_with_the_status_and_leaves_the_reap_to_the_adopter()
 {
    let rt = common::builder().build().unwrap();
    let a = adoption(&rt);
    let fd = a.orphan.pidfd();
    let orphan = a.orphan.task().clone();
    let waiter = std::thread::spawn(move || a.orphan.wait());
    assert!(
        wait_until(5, || fd.waiter_counts().0 == 1),
        "Child::wait sleeps on the orphan's own pidfd wait queue"
    );
    a.go.send(()).unwrap();
    let st = waiter.join().unwrap().unwrap();
    assert_eq!(
        st.exited(),
        Some(6),
        "the adopted child's real exit status, not ECHILD"
    );
    assert_eq!(
        (orphan.state(), orphan.ppid()),
        (TaskState::Zombie, a.sub.pid()),
        "only its new parent may reap it: still the subreaper's zombie"
    );
    a.reap.send(()).unwrap();
    assert_eq!(
        a.reaped.recv().unwrap().exited(),
        Some(6),
        "the subreaper reaps it with the same status"
    );
    assert_eq!(a.sub.wait().unwrap().exited(), Some(0));
    assert_eq!(orphan.state(), TaskState::Dead);
    assert_eq!(rt.ps().len(), 1, "nothing left");
}

fn waiting_for_an_adopted_child_its_adopter_already_reaped_returns_the_pidfs_exit_info() {
    let rt = common::builder().build().unwrap();
    let a = adoption(&rt);
    a.go.send(()).unwrap();
    a.reap.send(()).unwrap();
    assert_eq!(a.reaped.recv().unwrap().exited(), Some(6));
    assert!(a.orphan.pidfd().poll().hangup, "reaped by its adopter");
    assert_eq!(
        a.orphan.try_wait().unwrap().map(|s| s.exited()),
        Some(Some(6)),
        "try_wait: the status from the pidfd's exit info (PIDFD_INFO_EXIT)"
    );
    assert_eq!(a.orphan.wait().unwrap().exited(), Some(6));
    assert_eq!(a.sub.wait().unwrap().exited(), Some(0));
}

#[cfg(feature = "tokio")]
fn awaiting_a_child_adopted_by_a_subreaper_returns_its_status() {
    let t = common::tokio_rt();
    let rt = common::builder().build().unwrap();
    let Adoption {
        sub,
        orphan,
        go,
        reap,
        reaped,
    } = adoption(&rt);
    let st = t.block_on(async move {
        let orphan = tokio::spawn(orphan.into_future());
        tokio::task::yield_now().await;
        go.send(()).unwrap();
        orphan.await.unwrap()
    });
    assert_eq!(
        st.unwrap().exited(),
        Some(6),
        "the real status through .await"
    );
    reap.send(()).unwrap();
    assert_eq!(reaped.recv().unwrap().exited(), Some(6));
    assert_eq!(sub.wait().unwrap().exited(), Some(0));
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

fn dropped_children_are_reaped_so_nothing_is_left_at_rest_thread_executor() {
    let rt = common::builder().build().unwrap();
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
fn dropped_async_children_are_reaped_so_nothing_is_left_at_rest_tokio() {
    let t = common::tokio_rt();
    let rt = common::builder()
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

fn a_child_dropped_after_exit_is_reaped_at_drop() {
    let rt = common::builder().build().unwrap();
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

/// A task spawned with `CLONE_PARENT` is its spawner's sibling: its `Child` reaps it
/// as that real parent (here init, which reaps no direct child of its own accord),
/// waited or dropped unwaited. (The `Child` waited as the spawner, got ECHILD and
/// reported the status from pidfs: both tasks stayed zombies under init for good.)
fn a_clone_parent_child_is_reaped_through_its_real_parent() {
    let rt = common::builder().build().unwrap();
    let args = CloneArgs {
        flags: uproc::CloneFlags::PARENT,
        ..Default::default()
    };
    let a = rt
        .spawn(Spawn::new(), move |cx| {
            let g = cx.spawn(Spawn::new().args(args.clone()), |_| 5).unwrap();
            assert_eq!(g.task().ppid(), 1, "init's child");
            let task = g.task().clone();
            assert_eq!(g.wait().unwrap().exited(), Some(5));
            assert_eq!(task.state(), TaskState::Dead, "reaped by the wait");
            drop(cx.spawn(Spawn::new().args(args), |_| 6).unwrap());
            0
        })
        .unwrap();
    assert_eq!(a.wait().unwrap().exited(), Some(0));
    assert!(
        wait_until(10, || rt.ps().len() == 1),
        "the detached CLONE_PARENT child is reaped too: {:?}",
        rt.ps()
    );
}

every_profile!(
    a_clone_parent_child_is_reaped_through_its_real_parent,
    orphans_reparented_to_init_are_reaped_automatically,
    orphans_stay_zombies_for_the_caller_when_reap_orphans_is_off,
    a_spawned_orphan_is_reaped_by_init_and_its_child_handle_still_reports_the_status,
    a_child_adopted_by_a_subreaper_wakes_at_its_exit_with_the_status_and_leaves_the_reap_to_the_adopter,
    waiting_for_an_adopted_child_its_adopter_already_reaped_returns_the_pidfs_exit_info,
    #[cfg(feature = "tokio")]
    awaiting_a_child_adopted_by_a_subreaper_returns_its_status,
    dropped_children_are_reaped_so_nothing_is_left_at_rest_thread_executor,
    #[cfg(feature = "tokio")]
    dropped_async_children_are_reaped_so_nothing_is_left_at_rest_tokio,
    a_child_dropped_after_exit_is_reaped_at_drop,
);
