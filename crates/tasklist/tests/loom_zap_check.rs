//! Loom model of the namespace-init re-check after a reap under `Scalable`: the reap of
//! a namespace's last pid but its init's, racing the init's death, skips the runtime's
//! re-check only when it does not see the namespace closed, and then the init's own
//! re-check counts the pid as freed: one of the two always sees the namespace empty.
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p uproc-tasklist --test loom_zap_check --release`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use uproc_tasklist::loom_model::zap_check::Namespace;

#[test]
fn a_reap_that_skips_the_recheck_is_counted_by_the_dying_init() {
    loom::model(|| {
        let ns = Arc::new(Namespace::default());
        let z = {
            let ns = ns.clone();
            thread::spawn(move || ns.zap())
        };
        let reaper_rechecks = ns.reap();
        let init_counts = z.join().unwrap();
        assert!(
            reaper_rechecks || init_counts == 1,
            "the reaper skipped the re-check and the init counted {init_counts} pids"
        );
    });
}

/// Two reapers free the namespace's last two pids but the init's while the zap queues
/// the init: with two raises of the flag before one take, the taker must still count
/// both frees (the raise is a read-modify-write; a plain release store fails this).
#[test]
fn every_free_before_a_raise_is_seen_by_the_take() {
    use uproc_tasklist::loom_model::zap_check::Runtime;
    loom::model(|| {
        let rt = Arc::new(Runtime::new());
        let reapers: Vec<_> = (0..2)
            .map(|i| {
                let rt = rt.clone();
                thread::spawn(move || rt.reap(i))
            })
            .collect();
        rt.zap();
        for r in reapers {
            r.join().unwrap();
        }
        assert!(
            rt.finished(),
            "the namespace emptied and nobody finished its init"
        );
    });
}
