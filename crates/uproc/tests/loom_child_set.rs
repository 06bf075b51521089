//! Loom model of the `ChildSet` ready queue: a member's exit is never lost between its
//! wake-up (which skips the queue when the member is queued already) and the set's
//! poll of that member.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p uproc --test loom_child_set --release`.
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;
use std::sync::Arc;
use std::task::Wake;
use uproc::loom_model::{MemberWaker, Ready};

#[test]
fn an_exit_is_seen_by_the_poll_or_queues_the_member_again() {
    loom::model(|| {
        let ready = Arc::new(Ready::default());
        // Inserted: queued for its first poll.
        let member = MemberWaker::new_queued(0, &ready);
        let exited = Arc::new(AtomicBool::new(false));

        // The job ends the task (the exit latch's RMW), then wakes the member.
        let (m2, e2) = (Arc::clone(&member), Arc::clone(&exited));
        let job = thread::spawn(move || {
            e2.store(true, Ordering::Release);
            m2.wake_by_ref();
        });

        // join_next: pops the member, clears its flag, polls it (reads the exit).
        assert_eq!(ready.pop(), Some(0));
        member.clear();
        let poll_saw_exit = exited.load(Ordering::Acquire);
        job.join().unwrap();

        assert!(
            poll_saw_exit || ready.is_queued(0),
            "the exit was neither seen by the poll nor queued for the next one"
        );
    });
}
