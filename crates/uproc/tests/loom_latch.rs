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
        // SAFETY: this thread is the latch's one registrant.
        let ready = unsafe { latch.exited_or_register(&waker) };
        job.join().unwrap();
        assert!(
            ready || count.wakes() == 1,
            "a registered future that did not see the exit must have been woken"
        );
    });
}

#[test]
fn a_replaced_waker_is_the_one_woken_and_the_exit_is_seen_once() {
    loom::model(|| {
        let latch = Arc::new(ExitLatch::new());
        let l2 = latch.clone();
        let job = thread::spawn(move || {
            assert!(!l2.exit(), "nobody detached");
            assert!(!l2.exit(), "a second exit does nothing");
        });
        let (first, w1) = CountWake::new();
        let (second, w2) = CountWake::new();
        // SAFETY: this thread is the latch's one registrant.
        let ready = unsafe { latch.exited_or_register(&w1) || latch.exited_or_register(&w2) };
        job.join().unwrap();
        assert!(
            ready || second.wakes() == 1,
            "the waker registered last is woken unless the exit was seen"
        );
        assert!(
            first.wakes() + second.wakes() <= 1,
            "one exit, at most one wake"
        );
        assert!(latch.is_exited());
    });
}
