//! Bodies that suspend on a may timer (`may::coroutine::sleep`) while a plain thread
//! waits for them with `ChildSet::wait_next` end cleanly. may frees a finished
//! coroutine's state while the worker that registered its timer may still write to it
//! (AddressSanitizer: heap use-after-free between `Sleep::subscribe` and
//! `Done::subscribe`); with the body coroutines detached, this crashed the process in
//! about three runs of four on a 2-core machine (heap-check aborts, SIGSEGV, hangs, or
//! a live task's pid found unattached). The executor now keeps each body's join handle
//! past its end (`Kept` in the crate): 0 failures in 50 runs.

use std::time::Duration;
use uproc::{ChildSet, Runtime, Spawn};
use uproc_may::MayExecutor;

mod common;
use common::within_deadline;

#[test]
fn thirty_sleeping_bodies_waited_for_by_a_thread_end_cleanly() {
    within_deadline("sleeping bodies", || {
        for _ in 0..8 {
            let rt = Runtime::builder()
                .executor(MayExecutor::new())
                .build()
                .expect("runtime");
            let mut set = ChildSet::new();
            for i in 0..30 {
                set.spawn(&rt, Spawn::new(), move |_| {
                    may::coroutine::sleep(Duration::from_millis(i as u64 % 5));
                    i
                })
                .expect("spawn");
            }
            let mut sum = 0;
            while let Some((_, status)) = set.wait_next() {
                sum += status.expect("a status").exited().expect("exited");
            }
            assert_eq!(sum, (0..30).sum::<i32>());
            assert_eq!(rt.ps().len(), 1, "only init is left");
        }
    });
}
