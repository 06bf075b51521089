//! Loom model of the lock-free hierarchical pids charge (`pids_try_charge`): two
//! threads, two levels. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p uproc-cgroup --test loom_pids --release`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use uproc_cgroup::loom_model::Chain;

/// Level 0 = child (max 2), level 1 = parent (max 1). One thread forks in the child
/// (both levels), the other in the parent (level 1 only). Exactly one can win the
/// parent's single slot; the loser leaves nothing behind; counts are exact.
#[test]
fn racing_charges_never_exceed_max_and_revert_exactly() {
    loom::model(|| {
        let chain = Arc::new(Chain::new(&[2, 1]));
        let c2 = chain.clone();
        let child = thread::spawn(move || c2.try_charge(0));
        let in_parent = chain.try_charge(1);
        assert!(chain.current(1) <= 1, "parent above its max");
        let in_child = child.join().unwrap();
        assert!(
            in_child ^ in_parent,
            "exactly one fits under the parent's max of 1"
        );
        assert_eq!(chain.current(1), 1);
        assert_eq!(
            chain.current(0),
            u64::from(in_child),
            "a failed charge reverted level 0"
        );
        assert!(chain.peak(0) <= 1 && chain.peak(1) <= 1, "peak above max");
        if in_child {
            chain.uncharge(0);
        } else {
            chain.uncharge(1);
        }
        assert_eq!((chain.current(0), chain.current(1)), (0, 0));
    });
}

/// Both threads charge and uncharge through both levels (max 1 each) and observe the
/// counters in between: no observation is above max, and both levels balance to 0.
#[test]
fn charge_uncharge_balances_to_zero() {
    loom::model(|| {
        let chain = Arc::new(Chain::new(&[1, 1]));
        let worker = |c: Arc<Chain>| {
            move || {
                if c.try_charge(0) {
                    assert!(c.current(0) <= 1 && c.current(1) <= 1);
                    c.uncharge(0);
                }
            }
        };
        let t = thread::spawn(worker(chain.clone()));
        worker(chain.clone())();
        t.join().unwrap();
        assert_eq!((chain.current(0), chain.current(1)), (0, 0));
        assert!(chain.peak(1) <= 1);
    });
}
