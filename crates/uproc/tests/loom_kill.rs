//! Loom model of `KillFlag`, the way a `SIGKILL` reaches a parked async body: the job
//! registers its waker when the body parks and then checks the flag; the signal hook
//! sets the flag and then takes the waker. A kill is never lost: the job either sees
//! the flag or is woken.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p uproc --test loom_kill --release`.
#![cfg(loom)]

mod loom_common;

use loom::sync::Arc;
use loom::thread;
use loom_common::CountWake;
use uproc::Signal;
use uproc::loom_model::KillFlag;

#[test]
fn a_kill_racing_the_registration_is_seen_or_wakes_the_job() {
    loom::model(|| {
        let flag = Arc::new(KillFlag::default());
        let hook = flag.clone();
        let signal = thread::spawn(move || hook.raise(Signal::KILL));
        // The job, after a poll that returned Pending.
        let (count, waker) = CountWake::new();
        flag.register(&waker);
        let seen = flag.is_killed();
        signal.join().unwrap();
        assert!(
            seen || count.wakes() == 1,
            "the job missed the kill: it saw no flag and was not woken"
        );
        assert!(flag.is_killed(), "the flag stays set");
    });
}

#[test]
fn other_signals_neither_set_the_flag_nor_wake() {
    loom::model(|| {
        let flag = Arc::new(KillFlag::default());
        let hook = flag.clone();
        let (count, waker) = CountWake::new();
        flag.register(&waker);
        thread::spawn(move || hook.raise(Signal::TERM))
            .join()
            .unwrap();
        assert!(!flag.is_killed());
        assert_eq!(count.wakes(), 0);
    });
}
