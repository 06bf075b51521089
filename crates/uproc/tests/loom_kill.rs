//! Loom model of `KillFlag`, the way a `SIGKILL` reaches a parked async body: the job
//! registers its waker when the body parks and then checks the flag; the signal hook
//! sets the flag and then takes the waker. A kill is never lost: the job either sees
//! the flag or is woken.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p uproc --test loom_kill --release`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;
use std::task::{Wake, Waker};
use uproc::Signal;
use uproc::loom_model::KillFlag;

struct CountWake(AtomicUsize);

impl Wake for CountWake {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_kill_racing_the_registration_is_seen_or_wakes_the_job() {
    loom::model(|| {
        let flag = Arc::new(KillFlag::default());
        let hook = flag.clone();
        let signal = thread::spawn(move || hook.raise(Signal::KILL));
        // The job, after a poll that returned Pending.
        let count = std::sync::Arc::new(CountWake(AtomicUsize::new(0)));
        flag.register(&Waker::from(count.clone()));
        let seen = flag.is_killed();
        signal.join().unwrap();
        assert!(
            seen || count.0.load(Ordering::SeqCst) == 1,
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
        let count = std::sync::Arc::new(CountWake(AtomicUsize::new(0)));
        flag.register(&Waker::from(count.clone()));
        thread::spawn(move || hook.raise(Signal::TERM))
            .join()
            .unwrap();
        assert!(!flag.is_killed());
        assert_eq!(count.0.load(Ordering::SeqCst), 0);
    });
}
