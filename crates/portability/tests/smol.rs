//! uproc on smol, in a build without tokio (see the crate docs).

use std::sync::Arc;
use uproc::smol::SmolExecutor;
use uproc::{ChildSet, Runtime, Signal, Spawn};
use uproc_portability::{assert_observed, exercise};

#[test]
fn child_pidfd_and_child_set_futures_complete_on_smol() {
    let rt = Runtime::new().unwrap();
    let observed = smol::block_on(exercise(&rt)).expect("scenario");
    assert_observed(&observed);
}

#[test]
fn spawn_async_runs_bodies_on_a_smol_executor_with_current_set() {
    let ex = Arc::new(smol::Executor::new());
    let rt = Runtime::builder()
        .executor(SmolExecutor::new(&ex))
        .build()
        .unwrap();
    let codes = smol::block_on(ex.run(async {
        let mut set = ChildSet::new();
        for i in 0..200 {
            set.spawn_async(&rt, Spawn::new(), move |cx| async move {
                smol::future::yield_now().await;
                match uproc::current() {
                    Some(me) if me.task() == cx.task() => i % 50,
                    _ => 100,
                }
            })
            .unwrap();
        }
        let mut codes = Vec::new();
        while let Some((_pid, status)) = set.join_next().await {
            codes.push(status.unwrap().exited().unwrap());
        }
        codes
    }));
    assert_eq!(codes.len(), 200);
    assert!(
        codes.iter().all(|c| *c < 100),
        "current() was right after a yield"
    );
    assert_eq!(codes.iter().sum::<i32>(), (0..200).map(|i| i % 50).sum());
    assert_eq!(rt.ps().len(), 1);
}

#[test]
fn sigkill_drops_an_async_body_on_smol() {
    let rt = Runtime::builder()
        .executor(SmolExecutor::global())
        .build()
        .unwrap();
    let child = rt
        .spawn_async(Spawn::new(), |_| std::future::pending::<i32>())
        .unwrap();
    child.kill().unwrap();
    let status = smol::block_on(std::future::IntoFuture::into_future(child)).unwrap();
    assert_eq!(status.signaled(), Some(Signal::KILL));
    assert_eq!(rt.ps().len(), 1);
}

#[test]
fn sync_bodies_run_on_smols_blocking_pool() {
    let rt = Runtime::builder()
        .executor(SmolExecutor::global())
        .build()
        .unwrap();
    let child = rt.spawn(Spawn::new(), |cx| cx.pid()).unwrap();
    let pid = child.pid();
    assert_eq!(child.wait().unwrap().exited(), Some(pid));
}

#[test]
fn a_dropped_smol_executor_kills_its_unfinished_bodies() {
    let ex = Arc::new(smol::Executor::new());
    let rt = Runtime::builder()
        .executor(SmolExecutor::new(&ex))
        .build()
        .unwrap();
    let child = rt.spawn_async(Spawn::new(), |_| async { 0 }).unwrap();
    drop(ex); // never run: the job is dropped with the executor
    assert_eq!(child.wait().unwrap().signaled(), Some(Signal::KILL));
    // A body spawned once the executor is gone is killed at once, leaking nothing.
    let late = rt.spawn_async(Spawn::new(), |_| async { 0 }).unwrap();
    assert_eq!(late.wait().unwrap().signaled(), Some(Signal::KILL));
    assert_eq!(rt.ps().len(), 1);
}
