//! Loom model of `StatusSlot`, the exit status recorded once for every handle of a
//! reaped task: two racing records (a `Child::try_wait` on one thread, the detached
//! reap on another) agree on one status, and every later read returns it.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p uproc --test loom_status --release`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use uproc::loom_model::StatusSlot;
use uproc::{Signal, WaitStatus};

#[test]
fn racing_records_agree_on_the_first_status() {
    loom::model(|| {
        let slot = Arc::new(StatusSlot::default());
        let other = slot.clone();
        let exited = WaitStatus::exited_with(0);
        let killed = WaitStatus::signaled_by(Signal::KILL, false);
        let t = thread::spawn(move || other.set_once(killed));
        let here = slot.set_once(exited);
        let there = t.join().unwrap();
        assert_eq!(here, there, "both records return the same status");
        assert_eq!(slot.get(), Some(here), "and it is the one kept");
    });
}
