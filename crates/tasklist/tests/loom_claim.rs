//! Loom model of the zombie claim (a load and a store under the list's lock, the lock
//! every transition of a leader's `exit_state` is made under) and the lock-free stop
//! report: two waiters racing for one zombie reap it exactly once and see its exit
//! code (without the lock both may win); a stop is reported once.
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p uproc-tasklist --test loom_claim --release`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use uproc_tasklist::loom_model::Child;

#[test]
fn zombie_is_reaped_exactly_once_with_its_code() {
    loom::model(|| {
        let c = Arc::new(Child::new());
        let e = {
            let c = c.clone();
            thread::spawn(move || c.exit(7))
        };
        let w = {
            let c = c.clone();
            thread::spawn(move || c.try_reap())
        };
        let mine = c.try_reap();
        e.join().unwrap();
        let theirs = w.join().unwrap();
        let late = c.try_reap();
        let wins: Vec<i32> = [mine, theirs, late].into_iter().flatten().collect();
        assert_eq!(wins, vec![7], "one reaper wins, and it sees the exit code");
    });
}

#[test]
fn stop_is_reported_once() {
    loom::model(|| {
        let c = Arc::new(Child::new());
        c.stop(19);
        let w = {
            let c = c.clone();
            thread::spawn(move || c.take_stop())
        };
        let a = c.take_stop();
        let b = w.join().unwrap();
        assert_eq!(a + b, 19, "exactly one waiter gets the stop");
        assert!(a == 0 || b == 0);
    });
}
