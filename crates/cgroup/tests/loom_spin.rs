//! Loom model of the spin lock behind a link's state and an anchor's member set
//! (`uproc_abi::spin`, `crates/abi/src/spin.rs`): one exchange to take it, one `Release` store to give it back.
//! Two holders never overlap and each sees what the previous one wrote (loom's cell
//! reports a data race otherwise); `try_lock` never succeeds while it is held. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p uproc-cgroup --test loom_spin --release`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use uproc_cgroup::loom_model::Spin;

#[test]
fn holders_exclude_and_hand_over_what_they_wrote() {
    loom::model(|| {
        let spin = Arc::new(Spin::default());
        let other = {
            let spin = spin.clone();
            thread::spawn(move || spin.increment())
        };
        spin.increment();
        other.join().unwrap();
        assert_eq!(spin.value(), 2);
        assert!(!spin.is_locked());
    });
}

#[test]
fn try_lock_fails_only_while_held() {
    loom::model(|| {
        let spin = Arc::new(Spin::default());
        let other = {
            let spin = spin.clone();
            thread::spawn(move || spin.try_increment())
        };
        spin.increment();
        let took = other.join().unwrap();
        assert_eq!(spin.value(), 1 + u64::from(took));
        assert!(!spin.is_locked());
    });
}
