//! Dropping the last handle of a runtime frees everything it built: the System, its
//! namespaces, pids and tasks (no `Arc` cycle through a namespace, a pid or a cgroup).

mod common;

use common::wait_until;
use std::sync::Arc;
use uproc::{Profile, Runtime, Spawn, Task};

#[test]
fn dropping_the_last_runtime_handle_frees_system_namespaces_pids_and_tasks() {
    for &name in Profile::ALL {
        for round in 0..200 {
            let rt = Runtime::builder().profile(name).build().unwrap();
            let child = rt.spawn(Spawn::new(), |_| 7).unwrap();
            assert_eq!(child.wait().unwrap().exited(), Some(7));
            let nested = rt.spawn(Spawn::new().new_pid_ns(), |_| 0).unwrap();
            assert_eq!(nested.wait().unwrap().exited(), Some(0));
            let init: Task = rt.init();
            let weak_sys = Arc::downgrade(rt.system());
            let weak_ns = Arc::downgrade(rt.system().root_ns());
            let weak_pid = Arc::downgrade(init.struct_pid());
            let weak_cg = Arc::downgrade(rt.system().cgroups());
            let weak_init = init.downgrade();
            drop((rt, init));
            // The executor threads that ran the bodies let go of their handles (the
            // runtime's, the task's and through it its pid and namespaces) just after
            // the waits returned, on their own schedule: each is given time to.
            let freed = |what: &str, gone: &dyn Fn() -> bool| {
                assert!(wait_until(10, gone), "{name}/{round}: {what} is freed");
            };
            freed("the System", &|| weak_sys.upgrade().is_none());
            freed("the root namespace", &|| weak_ns.upgrade().is_none());
            freed("init's pid", &|| weak_pid.upgrade().is_none());
            freed("the cgroup hierarchy", &|| weak_cg.upgrade().is_none());
            freed("init's task", &|| weak_init.upgrade().is_none());
        }
    }
}

/// What the per-thread shares of a runtime must never do: keep it alive once the user
/// handles, the children and the running bodies are all gone.
fn assert_freed(what: &str, weak_sys: &std::sync::Weak<uproc::System>) {
    assert!(
        wait_until(10, || weak_sys.upgrade().is_none()),
        "{what}: the System is freed"
    );
}

#[test]
fn a_body_outliving_every_runtime_handle_can_still_spawn_and_then_frees_the_runtime() {
    let rt = Runtime::builder().build().unwrap();
    let weak_sys = Arc::downgrade(rt.system());
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let child = rt
        .spawn(Spawn::new(), move |cx| {
            wait.recv().unwrap();
            // Every user handle is gone: the task's own share keeps the runtime.
            let rt2 = cx.runtime().clone();
            let grandchild = cx.spawn(Spawn::new(), |_| 4).unwrap();
            (grandchild.wait().unwrap().exited() == Some(4) && rt2.ps().len() == 2) as i32
        })
        .unwrap();
    drop(rt);
    go.send(()).unwrap();
    assert_eq!(child.wait().unwrap().exited(), Some(1));
    assert_freed("after a late spawn", &weak_sys);
}

#[test]
fn runtimes_spawned_on_alternately_from_many_threads_are_each_freed() {
    let a = Runtime::builder().build().unwrap();
    let b = Runtime::builder().build().unwrap();
    let (wa, wb) = (Arc::downgrade(a.system()), Arc::downgrade(b.system()));
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for i in 0..50 {
                    let rt = if i % 2 == 0 { &a } else { &b };
                    let child = rt.spawn(Spawn::new(), move |_| i).unwrap();
                    assert_eq!(child.wait().unwrap().exited(), Some(i));
                    // Detached children too: reaped by their jobs, on their threads.
                    drop(rt.spawn(Spawn::new(), |_| 0).unwrap());
                }
            });
        }
    });
    assert!(wait_until(10, || a.ps().len() == 1 && b.ps().len() == 1));
    drop((a, b));
    assert_freed("runtime a", &wa);
    assert_freed("runtime b", &wb);
}

#[test]
fn a_runtime_cloned_from_a_bodys_context_is_a_user_handle() {
    let rt = Runtime::builder().build().unwrap();
    let weak_sys = Arc::downgrade(rt.system());
    let child = rt.spawn(Spawn::new(), |cx| {
        let kept = cx.runtime().clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            // Still a working runtime after the spawner and the body are gone.
            let c = kept.spawn(Spawn::new(), |_| 2).unwrap();
            assert_eq!(c.wait().unwrap().exited(), Some(2));
        });
        0
    });
    assert_eq!(child.unwrap().wait().unwrap().exited(), Some(0));
    drop(rt);
    assert_freed("after the clone's thread ends", &weak_sys);
}

/// An executor that keeps async jobs for the test to run or drop.
#[derive(Clone, Default)]
struct Held(Arc<std::sync::Mutex<Vec<uproc::AsyncJob>>>);

impl uproc::Executor for Held {
    fn execute(&self, job: Box<dyn FnOnce() + Send>) {
        job()
    }
    fn runs_futures(&self) -> bool {
        true
    }
    fn execute_async(&self, job: uproc::AsyncJob) {
        self.0.lock().unwrap().push(job);
    }
}

#[test]
fn async_jobs_run_parked_and_killed_or_dropped_unrun_leave_no_count_on_the_runtime() {
    use std::task::{Context, Waker};
    let held = Held::default();
    let rt = Runtime::builder().executor(held.clone()).build().unwrap();
    let weak_sys = Arc::downgrade(rt.system());
    let mut cx = Context::from_waker(Waker::noop());
    // Run to its end in one poll: the body's context came from the prepaid count.
    let done = rt.spawn_async(Spawn::new(), |_| async { 3 }).unwrap();
    let mut job = held.0.lock().unwrap().pop().unwrap();
    assert!(job.as_mut().poll(&mut cx).is_ready());
    drop(job);
    assert_eq!(done.wait().unwrap().exited(), Some(3));
    // Parked (its own hook installed), then killed: dropped at the next poll.
    let parked = rt
        .spawn_async(Spawn::new(), |_| std::future::pending::<i32>())
        .unwrap();
    let mut job = held.0.lock().unwrap().pop().unwrap();
    assert!(job.as_mut().poll(&mut cx).is_pending());
    parked.kill().unwrap();
    assert!(job.as_mut().poll(&mut cx).is_ready());
    drop(job);
    assert_eq!(parked.wait().unwrap().signaled(), Some(uproc::Signal::KILL));
    // Dropped unrun: the body's prepaid context count goes with the job.
    let unrun = rt.spawn_async(Spawn::new(), |_| async { 0 }).unwrap();
    drop(held.0.lock().unwrap().pop().unwrap());
    assert_eq!(unrun.wait().unwrap().signaled(), Some(uproc::Signal::KILL));
    drop(rt);
    drop(held);
    assert_freed(
        "after async jobs run, parked and killed, or dropped",
        &weak_sys,
    );
}
