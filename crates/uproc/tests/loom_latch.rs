//! Loom model of `ExitLatch`, the handshake between a spawned task's job and its
//! `Child`: a detached task is reaped exactly once, and an awaiting future is never
//! left asleep after the exit.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p uproc --test loom_latch --release`.
#![cfg(loom)]

mod loom_common;

use loom::sync::Arc;
use loom::thread;
use loom_common::CountWake;
use uproc::loom_model::ExitLatch;

#[test]
fn detached_task_is_reaped_exactly_once() {
    loom::model(|| {
        let latch = Arc::new(ExitLatch::new());
        let l2 = latch.clone();
        let job = thread::spawn(move || l2.exit());
        let child_dropped = latch.detach();
        let job_reaps = job.join().unwrap();
        assert!(
            child_dropped ^ job_reaps,
            "exactly one side reaps (child: {child_dropped}, job: {job_reaps})"
        );
    });
}

#[test]
fn awaiting_future_sees_exit_or_is_woken() {
    loom::model(|| {
        let latch = Arc::new(ExitLatch::new());
        let l2 = latch.clone();
        let job = thread::spawn(move || {
            assert!(!l2.exit(), "nobody detached");
        });
        let (count, waker) = CountWake::new();
        let ready = latch.exited_or_register(&waker);
        job.join().unwrap();
        assert!(
            ready || count.wakes() == 1,
            "a registered future that did not see the exit must have been woken"
        );
    });
}
