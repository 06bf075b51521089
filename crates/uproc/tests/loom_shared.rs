//! Loom model of `Shared`, the count on a spawned task's tracker: born with all its
//! handles, each dropped on its own thread, the value is dropped exactly once and after
//! every handle's last use (each handle's writes are visible to the drop).
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p uproc --test loom_shared --release`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;
use uproc::loom_model::{Shared, Unshared};

/// The shared value: each handle records a use (relaxed, as plain field writes would
/// be), and the drop checks it sees all of them.
struct Value {
    uses: AtomicUsize,
    drops: Arc<AtomicUsize>,
}

impl Drop for Value {
    fn drop(&mut self) {
        assert_eq!(
            self.uses.load(Ordering::Relaxed),
            3,
            "the drop sees every handle's use"
        );
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn the_last_of_three_handles_drops_the_value_once_after_every_use() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let [a, b, c] = Unshared::new(Value {
            uses: AtomicUsize::new(0),
            drops: drops.clone(),
        })
        .share();
        let use_and_drop = |h: Shared<Value>| {
            h.uses.fetch_add(1, Ordering::Relaxed);
            drop(h);
        };
        let t1 = thread::spawn(move || use_and_drop(a));
        let t2 = thread::spawn(move || {
            let clone = b.clone();
            drop(b);
            use_and_drop(clone)
        });
        use_and_drop(c);
        t1.join().unwrap();
        t2.join().unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), 1, "dropped exactly once");
    });
}

#[test]
fn a_prepaid_count_reclaimed_on_another_thread_counts_as_a_handle() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let [a, b, prepaid] = Unshared::new(Value {
            uses: AtomicUsize::new(0),
            drops: drops.clone(),
        })
        .share();
        prepaid.prepay();
        let use_and_drop = |h: Shared<Value>| {
            h.uses.fetch_add(1, Ordering::Relaxed);
            drop(h);
        };
        let t1 = thread::spawn(move || use_and_drop(a));
        let t2 = thread::spawn(move || {
            // SAFETY: the one prepaid count above, reclaimed once.
            let reclaimed = unsafe { Shared::reclaim(&b) };
            use_and_drop(reclaimed);
            use_and_drop(b);
        });
        t1.join().unwrap();
        t2.join().unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), 1, "dropped exactly once");
    });
}
