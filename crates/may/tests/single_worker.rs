//! With may configured for ONE worker thread, a coroutine that waits for a child must
//! park itself and let the other coroutines of that worker run: if the wait blocked the
//! worker, the coroutine that releases the child could never run and the test would
//! hang (a watchdog turns that into a failure).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::thread::ThreadId;
use uproc::{ChildSet, Runtime, Spawn};
use uproc_may::MayExecutor;

mod common;
use common::within_deadline;

fn runtime() -> Runtime {
    static ONE_WORKER: Once = Once::new();
    ONE_WORKER.call_once(|| {
        may::config().set_workers(1);
    });
    Runtime::builder()
        .executor(MayExecutor::new())
        .build()
        .expect("runtime")
}

/// Which OS threads the bodies ran on.
#[derive(Clone, Default)]
struct Threads(Arc<Mutex<Vec<ThreadId>>>);

impl Threads {
    fn record(&self) {
        self.0.lock().unwrap().push(std::thread::current().id());
    }
    fn all_one(&self) -> bool {
        let v = self.0.lock().unwrap();
        v.len() >= 3 && v.iter().all(|t| *t == v[0])
    }
}

/// Body "waiter" forks "child", which blocks on a may channel; then the waiter waits for
/// the child with `wait` (`wait_next` if `use_set`). Body "releaser" sends on the channel
/// only once the waiter is (about to be) parked. Returns the waiter's exit code.
fn wait_while_another_coroutine_progresses(use_set: bool) -> (i32, Threads) {
    let rt = runtime();
    let threads = Threads::default();
    let (tx, rx) = may::sync::mpsc::channel::<i32>();
    let waiting = Arc::new(AtomicBool::new(false));

    let (t, w) = (threads.clone(), Arc::clone(&waiting));
    let waiter = rt
        .spawn(Spawn::new().name("waiter"), move |cx| {
            t.record();
            let t2 = t.clone();
            let child = cx
                .spawn(Spawn::new().name("child"), move |_| {
                    t2.record();
                    rx.recv().unwrap_or(-1) // parks this coroutine until the releaser sends
                })
                .unwrap();
            w.store(true, Ordering::SeqCst);
            let status = if use_set {
                let mut set = ChildSet::new();
                set.insert(child);
                set.wait_next().unwrap().1
            } else {
                child.wait()
            };
            status.unwrap().exited().unwrap_or(-2)
        })
        .unwrap();

    let t = threads.clone();
    let releaser = rt
        .spawn(Spawn::new().name("releaser"), move |_| {
            t.record();
            // Runs only while the waiter is parked (one worker: nothing runs in parallel).
            while !waiting.load(Ordering::SeqCst) {
                may::coroutine::yield_now();
            }
            for _ in 0..10 {
                may::coroutine::yield_now(); // let the waiter reach its wait and park
            }
            tx.send(42).unwrap();
            0
        })
        .unwrap();

    let code = within_deadline("child wait from a coroutine", move || {
        let code = waiter.wait().unwrap().exited().unwrap();
        assert_eq!(releaser.wait().unwrap().exited(), Some(0));
        code
    });
    assert_eq!(rt.ps().len(), 1, "every task reaped");
    (code, threads)
}

#[test]
fn child_wait_in_a_coroutine_parks_it_and_the_worker_runs_others() {
    let (code, threads) = wait_while_another_coroutine_progresses(false);
    assert_eq!(code, 42, "the waiter got the child's exit code");
    assert!(threads.all_one(), "one worker ran all three bodies");
}

#[test]
fn child_set_wait_next_in_a_coroutine_parks_it_and_the_worker_runs_others() {
    let (code, threads) = wait_while_another_coroutine_progresses(true);
    assert_eq!(code, 42);
    assert!(threads.all_one(), "one worker ran all three bodies");
}

#[test]
fn two_coroutines_on_one_worker_alternate_and_keep_their_current() {
    let rt = runtime();
    let turns = Arc::new(Mutex::new(Vec::new()));
    // may's barrier parks the first coroutine until the second arrives. (Spinning on
    // `yield_now` instead can starve the second: a yielding coroutine goes back to the
    // worker's local queue, ahead of one spawned from another thread.)
    let started = Arc::new(may::sync::Barrier::new(2));
    let kids: Vec<_> = (0..2)
        .map(|_| {
            let (turns, started) = (Arc::clone(&turns), Arc::clone(&started));
            rt.spawn(Spawn::new(), move |cx| {
                // Both bodies start before either takes turns.
                started.wait();
                for _ in 0..20 {
                    turns.lock().unwrap().push(cx.pid());
                    may::coroutine::yield_now();
                    if uproc::current().map(|c| c.pid()) != Some(cx.pid()) {
                        return 1;
                    }
                }
                0
            })
            .unwrap()
        })
        .collect();
    let codes = within_deadline("two coroutines", move || {
        kids.into_iter()
            .map(|k| k.wait().unwrap().exited().unwrap())
            .collect::<Vec<_>>()
    });
    assert_eq!(codes, [0, 0], "each saw its own task after every yield");
    let turns = turns.lock().unwrap();
    let switches = turns.windows(2).filter(|w| w[0] != w[1]).count();
    assert!(
        switches > 5,
        "the two bodies interleaved on the one worker: {turns:?}"
    );
}
