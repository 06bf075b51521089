//! Executors: what happens to a task whose job is dropped, deferred or cannot start
//! (there is no kernel selftest for this; it is uproc's contract with the runtime
//! that schedules bodies: a task always ends, and ends reaped).

#[macro_use]
mod common;

use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use uproc::{Executor, Runtime, Signal, Spawn, TaskState, ThreadExecutor};

type Job = Box<dyn FnOnce() + Send>;

/// Drops every job it is given, as an executor that is shutting down does.
struct Dropping;

impl Executor for Dropping {
    fn execute(&self, job: Job) {
        drop(job);
    }
}

/// Keeps jobs until the test runs or drops them.
#[derive(Clone, Default)]
struct Deferred(Arc<Mutex<Vec<Job>>>);

impl Executor for Deferred {
    fn execute(&self, job: Job) {
        self.0.lock().push(job);
    }
}

impl Deferred {
    fn run_all(&self) {
        let jobs = std::mem::take(&mut *self.0.lock());
        for job in jobs {
            job();
        }
    }

    fn drop_all(&self) {
        drop(std::mem::take(&mut *self.0.lock()));
    }
}

/// Spawns a body that records that it ran.
fn spawn_recording(rt: &Runtime) -> (uproc::Child, Arc<AtomicBool>) {
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    let child = rt
        .spawn(Spawn::new(), move |_| {
            r.store(true, Ordering::SeqCst);
            0
        })
        .unwrap();
    (child, ran)
}

fn a_job_the_executor_drops_unrun_ends_the_task_killed_by_sigkill() {
    let rt = common::builder().executor(Dropping).build().unwrap();
    let (child, ran) = spawn_recording(&rt);
    assert_eq!(
        child.wait().unwrap().signaled(),
        Some(Signal::KILL),
        "a task whose body can never run ends as killed, not as a leak"
    );
    assert!(!ran.load(Ordering::SeqCst), "the body never ran");
    assert_eq!(rt.ps().len(), 1);
    assert_eq!(rt.init().pid_ns().nr_allocated(), 1, "its pid was freed");
}

fn a_detached_task_whose_job_is_dropped_later_is_reaped_then() {
    let exec = Deferred::default();
    let rt = common::builder().executor(exec.clone()).build().unwrap();
    let child = rt.spawn(Spawn::new(), |_| 0).unwrap();
    let task = child.task().clone();
    drop(child);
    assert_eq!(task.state(), TaskState::Running, "its job has not run yet");
    exec.drop_all();
    assert_eq!(
        task.state(),
        TaskState::Dead,
        "the dropped job killed the task and, its Child being gone, reaped it"
    );
    assert_eq!(rt.ps().len(), 1);
}

fn a_task_killed_before_its_job_starts_never_runs_its_body() {
    let exec = Deferred::default();
    let rt = common::builder().executor(exec.clone()).build().unwrap();
    let (child, ran) = spawn_recording(&rt);
    child.kill().unwrap();
    exec.run_all();
    assert_eq!(child.wait().unwrap().signaled(), Some(Signal::KILL));
    assert!(
        !ran.load(Ordering::SeqCst),
        "a process killed before it runs never executes user code"
    );
}

fn a_task_hit_by_sigterm_before_its_job_starts_dies_of_sigterm() {
    let exec = Deferred::default();
    let rt = common::builder().executor(exec.clone()).build().unwrap();
    let child = rt.spawn(Spawn::new(), |_| 0).unwrap();
    rt.init().kill(child.pid(), Signal::TERM).unwrap();
    exec.run_all();
    assert_eq!(
        child.wait().unwrap().signaled(),
        Some(Signal::TERM),
        "the fatal signal it got is the one it dies of"
    );
}

fn thread_executor_stack_size_sets_the_stack_of_each_body_thread() {
    const STACK: usize = 16 << 20;
    let rt = common::builder()
        .executor(ThreadExecutor::new().stack_size(STACK))
        .build()
        .unwrap();
    // 8 MiB of locals: more than a default thread stack (2 MiB), so this body only
    // survives on the 16 MiB stack asked for (else the test process would crash).
    let child = rt
        .spawn(Spawn::new(), |_| {
            let big = [1u8; 8 << 20];
            i32::from(std::hint::black_box(&big)[(8 << 20) - 1])
        })
        .unwrap();
    assert_eq!(child.wait().unwrap().exited(), Some(1));
}

fn thread_executor_failing_to_create_a_thread_ends_the_task_killed() {
    // No system can map a stack of a quarter of the address space.
    let rt = common::builder()
        .executor(ThreadExecutor::new().stack_size(1 << 62))
        .build()
        .unwrap();
    let child = rt.spawn(Spawn::new(), |_| 0).unwrap();
    assert_eq!(
        child.wait().unwrap().signaled(),
        Some(Signal::KILL),
        "the job dropped by the failed thread creation ends the task"
    );
    assert_eq!(rt.ps().len(), 1);
}

#[cfg(feature = "tokio")]
fn async_bodies_dropped_by_a_tokio_shutdown_end_killed_and_are_reaped() {
    let t = common::tokio_rt();
    let rt = common::builder()
        .executor(uproc::tokio::TokioExecutor::new(t.handle().clone()))
        .build()
        .unwrap();
    let parked = rt
        .spawn_async(Spawn::new(), |_| std::future::pending::<i32>())
        .unwrap();
    let detached = rt
        .spawn_async(Spawn::new(), |_| std::future::pending::<i32>())
        .unwrap();
    let detached_task = detached.task().clone();
    drop(detached);
    drop(t); // shutdown: tokio drops every unfinished task, run or not
    assert_eq!(
        parked.wait().unwrap().signaled(),
        Some(Signal::KILL),
        "a body the runtime dropped ends as killed"
    );
    assert_eq!(
        detached_task.state(),
        TaskState::Dead,
        "and a detached one is reaped"
    );
    assert_eq!(rt.ps().len(), 1);
}

/// The last executor given to the builder wins, for async bodies too: a tokio executor
/// replaced by a thread executor no longer runs them (outside a tokio runtime that is
/// EINVAL, nothing forked), and one replaced by a smol executor leaves them to smol.
#[cfg(feature = "tokio")]
fn a_replaced_tokio_executor_runs_no_async_body() {
    let t = common::tokio_rt();
    let rt = common::builder()
        .executor(uproc::tokio::TokioExecutor::new(t.handle().clone()))
        .executor(uproc::ThreadExecutor::new())
        .build()
        .unwrap();
    assert_eq!(
        rt.spawn_async(Spawn::new(), |_| async { 0 }).unwrap_err(),
        uproc::Errno::EINVAL
    );
    assert_eq!(rt.ps().len(), 1, "nothing forked");
    #[cfg(feature = "smol")]
    {
        let ex = Arc::new(smol::Executor::new());
        let rt = common::builder()
            .executor(uproc::tokio::TokioExecutor::new(t.handle().clone()))
            .executor(uproc::smol::SmolExecutor::new(&ex))
            .build()
            .unwrap();
        let child = rt
            .spawn_async(Spawn::new(), |_| async {
                i32::from(tokio::runtime::Handle::try_current().is_ok())
            })
            .unwrap();
        let st = smol::block_on(ex.run(std::future::IntoFuture::into_future(child))).unwrap();
        assert_eq!(st.exited(), Some(0), "the body ran on smol, outside tokio");
    }
}

every_profile!(
    a_job_the_executor_drops_unrun_ends_the_task_killed_by_sigkill,
    a_detached_task_whose_job_is_dropped_later_is_reaped_then,
    a_task_killed_before_its_job_starts_never_runs_its_body,
    a_task_hit_by_sigterm_before_its_job_starts_dies_of_sigterm,
    thread_executor_stack_size_sets_the_stack_of_each_body_thread,
    thread_executor_failing_to_create_a_thread_ends_the_task_killed,
    #[cfg(feature = "tokio")]
    async_bodies_dropped_by_a_tokio_shutdown_end_killed_and_are_reaped,
    #[cfg(feature = "tokio")]
    a_replaced_tokio_executor_runs_no_async_body,
);
