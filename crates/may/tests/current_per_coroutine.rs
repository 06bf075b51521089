//! `uproc::current()` inside may coroutines: right after every yield, for 10,000
//! coroutine tasks on two workers (coroutines interleave on a worker and may move
//! between workers).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use uproc::{ChildSet, Runtime, Signal, Spawn};
use uproc_may::MayExecutor;

mod common;
use common::within_deadline;

const TASKS: usize = 10_000;
const YIELDS: usize = 4;

fn runtime() -> Runtime {
    may::config().set_workers(2);
    Runtime::builder()
        .executor(MayExecutor::new())
        .build()
        .expect("runtime")
}

#[test]
fn ten_thousand_coroutines_see_their_own_task_after_every_yield() {
    let rt = runtime();
    // A global step counter: a body that sees it move by more than its own step across
    // a yield knows another coroutine ran in between (the interleaving under test).
    let steps = Arc::new(AtomicUsize::new(0));
    let interleaved = Arc::new(AtomicUsize::new(0));
    let mut set = ChildSet::new();
    for i in 0..TASKS {
        let (steps, interleaved) = (Arc::clone(&steps), Arc::clone(&interleaved));
        set.spawn(&rt, Spawn::new().name("co"), move |cx| {
            for _ in 0..YIELDS {
                let me = uproc::current().expect("current() inside a coroutine body");
                if me.task() != cx.task() {
                    return 100; // another task's context: the bug
                }
                let before = steps.fetch_add(1, Ordering::SeqCst);
                may::coroutine::yield_now();
                if steps.load(Ordering::SeqCst) > before + 1 {
                    interleaved.fetch_add(1, Ordering::Relaxed);
                }
            }
            match uproc::current() {
                Some(me) if me.task() == cx.task() => (i % 100) as i32,
                _ => 101,
            }
        })
        .expect("spawn");
    }
    let mut sum = 0usize;
    while let Some((_pid, status)) = set.wait_next() {
        let code = status.expect("reaped").exited().expect("exited normally");
        assert!(
            code < 100,
            "a coroutine saw the wrong current() (code {code})"
        );
        sum += code as usize;
    }
    assert_eq!(sum, (0..TASKS).map(|i| i % 100).sum::<usize>());
    assert_eq!(steps.load(Ordering::SeqCst), TASKS * YIELDS);
    assert!(
        interleaved.load(Ordering::Relaxed) > 0,
        "no coroutine was ever interleaved with another: the test proved nothing"
    );
    assert_eq!(rt.ps().len(), 1, "every task reaped");
    assert_eq!(rt.init().pid_ns().nr_allocated(), 1, "every pid freed");
}

#[test]
fn current_is_none_in_a_coroutine_outside_any_body() {
    let _rt = runtime();
    // A plain coroutine (not a task body) on the registered runtime sees no task.
    let h = may::go!(|| uproc::current().is_none());
    assert!(h.join().expect("coroutine"), "current() outside a body");
}

#[test]
fn bodies_exit_panic_and_die_of_signals_as_on_threads() {
    let rt = runtime();
    let exited = rt.spawn(Spawn::new(), |cx| cx.exit(3)).unwrap();
    let panicked = rt.spawn(Spawn::new(), |_| panic!("boom")).unwrap();
    let killed = rt
        .spawn(Spawn::new(), |cx| {
            while cx.signal_pending().is_none() {
                may::coroutine::yield_now();
            }
            0
        })
        .unwrap();
    killed.kill().unwrap();
    assert_eq!(exited.wait().unwrap().exited(), Some(3));
    assert_eq!(panicked.wait().unwrap().signaled(), Some(Signal::ABRT));
    assert_eq!(killed.wait().unwrap().signaled(), Some(Signal::KILL));
    assert_eq!(rt.ps().len(), 1);
}

#[test]
fn grandchildren_are_parented_to_the_coroutine_task_and_waited_from_it() {
    let rt = runtime();
    let parent = rt
        .spawn(Spawn::new().name("parent"), |cx| {
            let me = cx.task().clone();
            let kids: Vec<_> = (0..50)
                .map(|i| {
                    let me = me.clone();
                    cx.spawn(Spawn::new(), move |g| {
                        may::coroutine::yield_now();
                        if g.task().ppid() == me.pid() { i } else { 100 }
                    })
                    .unwrap()
                })
                .collect();
            // Waits from a coroutine: each parks this coroutine until that child exits.
            let sum: i32 = kids
                .into_iter()
                .map(|k| k.wait().unwrap().exited().unwrap())
                .sum();
            (sum == (0..50).sum::<i32>()) as i32
        })
        .unwrap();
    let code = within_deadline("waits from a coroutine", move || {
        parent.wait().unwrap().exited()
    });
    assert_eq!(code, Some(1));
    assert_eq!(rt.ps().len(), 1);
}
