//! Loom model of the lock-free `started` handshake between a fork finishing its child
//! and a fatal signal marking the child's group: one of the two always ends the child
//! (the fork when it sees SIGKILL, the signal when it sees the child started). Each
//! side's `SeqCst` fence is the key ordering: without either, both may miss.
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p uproc-tasklist --test loom_start --release`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use uproc_tasklist::loom_model::start::Child;

#[test]
fn a_fatal_signal_racing_the_fork_is_acted_on() {
    loom::model(|| {
        let child = Arc::new(Child::default());
        let signal = {
            let child = child.clone();
            thread::spawn(move || child.signal_marks())
        };
        let fork_ends_it = child.fork_finishes();
        let signal_ends_it = signal.join().unwrap();
        assert!(
            fork_ends_it || signal_ends_it,
            "neither the fork nor the signal ended the marked child"
        );
    });
}
