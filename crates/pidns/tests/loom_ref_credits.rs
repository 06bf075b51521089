//! Loom models of a root namespace's reference-count credits (`Scalable`): root-level
//! pids take their namespace reference from a per-thread shard of credits at fork and
//! give it back at drop; the runtime's guard closes the shards and puts their credits
//! back. Whatever the interleaving, no count is lost or invented: once every pid is
//! dropped and the guard closed, the strong count is the owners' again. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p uproc-pidns --test loom_ref_credits --release`.
#![cfg(loom)]

use loom::thread;
use uproc_pidns::loom_model::{Credits, set_thread_shard};

/// The runtime's own reference: what stays once everything else is gone.
const OWNER: u64 = 1;

/// A thread on `shard` forks `n` pids (each takes a reference), then drops them.
fn fork_and_drop(c: &Credits, shard: usize, n: usize) {
    set_thread_shard(shard);
    for _ in 0..n {
        c.get();
    }
    for _ in 0..n {
        c.put();
    }
}

/// Two forking threads on their own shards race the guard's close: every count taken
/// is given back exactly once, through a credit the close collects or a plain drop.
#[test]
fn forks_on_two_shards_racing_the_close_balance() {
    loom::model(|| {
        let c = Credits::new(OWNER);
        assert!(c.open());
        let (a, b) = (c.clone(), c.clone());
        let ta = thread::spawn(move || fork_and_drop(&a, 0, 2));
        let tb = thread::spawn(move || fork_and_drop(&b, 1, 1));
        set_thread_shard(0);
        c.close();
        ta.join().unwrap();
        tb.join().unwrap();
        assert_eq!(c.strong(), OWNER, "a count leaked or was put twice");
    });
}

/// Two threads share one shard (more threads than shards): their compare-exchanges on
/// the one word never lose a credit, with or without the close in between.
#[test]
fn two_threads_on_one_shard_racing_the_close_balance() {
    loom::model(|| {
        let c = Credits::new(OWNER);
        assert!(c.open());
        let a = c.clone();
        let t = thread::spawn(move || fork_and_drop(&a, 0, 1));
        fork_and_drop(&c, 0, 1);
        c.close();
        t.join().unwrap();
        assert_eq!(c.strong(), OWNER);
    });
}

/// A pid taken before the close and dropped after it on another thread: its count
/// goes off the strong count plainly (the shard is closed), not into a credit that
/// nobody would collect.
#[test]
fn a_pid_dropped_after_the_close_is_put_plainly() {
    loom::model(|| {
        let c = Credits::new(OWNER);
        assert!(c.open());
        set_thread_shard(0);
        c.get();
        let a = c.clone();
        let t = thread::spawn(move || {
            set_thread_shard(1);
            a.put();
        });
        c.close();
        t.join().unwrap();
        assert_eq!(c.strong(), OWNER);
        // Closed: a second guard may open them again.
        assert!(c.open());
        c.close();
        assert_eq!(c.strong(), OWNER);
    });
}
