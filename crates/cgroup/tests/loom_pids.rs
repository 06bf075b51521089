//! Loom model of the hierarchical pids charge (`pids_try_charge`) with per-thread
//! charge credits and the exact path: two threads (credit shards 0 and 1; shard 2
//! holds credits parked by a thread that is gone), one or two levels. Run with
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
        let child = thread::spawn(move || c2.try_charge(0, 0));
        let in_parent = chain.try_charge(1, 1);
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
            chain.uncharge(0, 0);
        } else {
            chain.uncharge(1, 1);
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
        let worker = |c: Arc<Chain>, shard: usize| {
            move || {
                if c.try_charge(0, shard) {
                    assert!(c.current(0) <= 1 && c.current(1) <= 1);
                    c.uncharge(0, shard);
                }
            }
        };
        let t = thread::spawn(worker(chain.clone(), 0));
        worker(chain.clone(), 1)();
        t.join().unwrap();
        assert_eq!((chain.current(0), chain.current(1)), (0, 0));
        assert!(chain.peak(1) <= 1);
    });
}

/// A credit parked by one thread (its child reaped) races another thread's charge for
/// the last slot while the first thread spends its credit: exactly one wins, the
/// limit is never stepped over, and at rest `current` is exact and the spare credit
/// (if any) is all that is parked.
#[test]
fn a_parked_credit_and_a_shared_charge_race_for_the_last_slot() {
    loom::model(|| {
        let chain = Arc::new(Chain::new(&[1]));
        assert!(chain.try_charge(0, 0));
        chain.uncharge(0, 0);
        let c2 = chain.clone();
        let other = thread::spawn(move || c2.try_charge(0, 1));
        let own = chain.try_charge(0, 0);
        assert!(chain.current(0) <= 1, "above max");
        let other = other.join().unwrap();
        assert!(
            own ^ other,
            "exactly one fits under max 1 (own {own}, other {other})"
        );
        assert_eq!(chain.current(0), 1);
        assert_eq!(chain.peak(0), 1);
        chain.uncharge(0, if own { 0 } else { 1 });
        assert_eq!(chain.current(0), 0);
    });
}

/// Shard 2 parks `n` credits (a thread that forked `n` children and reaped them): the
/// counter is at `n` with nothing charged.
fn with_credits_parked_on_shard_2(chain: &Chain, n: usize) {
    for _ in 0..n {
        assert!(chain.try_charge(0, 2));
    }
    for _ in 0..n {
        chain.uncharge(0, 2);
    }
    assert_eq!(chain.current(0), 0);
}

/// The counter is at the limit (2) with both slots parked as credits on a third shard:
/// two threads charge at once, so one takes the credits back (the exact path) while
/// the other finds the counter full. The level always has room for both: neither may
/// fail. (Without the exact path's lock and closed shards, the second charger saw the
/// counter full while the first held the credits swapped out but not yet subtracted.)
#[test]
fn a_charge_racing_a_take_back_is_not_refused() {
    loom::model(|| {
        let chain = Arc::new(Chain::new(&[2]));
        with_credits_parked_on_shard_2(&chain, 2);
        let c2 = chain.clone();
        let other = thread::spawn(move || {
            let charged = c2.try_charge(0, 0);
            if charged {
                c2.uncharge(0, 0);
            }
            charged
        });
        let own = chain.try_charge(0, 1);
        let other = other.join().unwrap();
        assert!(own && other, "refused with room (own {own}, other {other})");
        assert_eq!(chain.current(0), 1, "exact at rest");
        assert!(chain.peak(0) <= 2, "peak above max");
        chain.uncharge(0, 1);
        assert_eq!(chain.current(0), 0);
    });
}

/// Max 2: one task is charged (thread A's), one slot is parked on shard 2. Thread B
/// charges the last slot (its charge finds the counter full and takes the credits
/// back); at the same time thread A's task is reaped (a credit parked on A's shard)
/// and A forks again. At most two tasks are ever charged, so neither fork may fail,
/// and at rest both are counted exactly.
#[test]
fn an_uncharge_racing_the_exact_path_leaves_room_for_the_next_charge() {
    loom::model(|| {
        let chain = Arc::new(Chain::new(&[2]));
        with_credits_parked_on_shard_2(&chain, 1);
        assert!(chain.try_charge(0, 0));
        let c2 = chain.clone();
        let last_slot = thread::spawn(move || c2.try_charge(0, 1));
        chain.uncharge(0, 0);
        let again = chain.try_charge(0, 0);
        let last_slot = last_slot.join().unwrap();
        assert!(
            again && last_slot,
            "refused with room (again {again}, last slot {last_slot})"
        );
        assert_eq!(chain.current(0), 2, "exact at rest");
        assert!(chain.peak(0) <= 2, "peak above max");
        chain.uncharge(0, 0);
        chain.uncharge(0, 1);
        assert_eq!(chain.current(0), 0);
    });
}

/// Max 3: thread B holds one charge and two slots are parked on shard 2, so the
/// counter is at the limit. Thread A forks (the exact path takes the two credits back)
/// while B's task is reaped and B forks again, its watermark update racing A's credits
/// in flight. At most two tasks are ever charged, so `pids.peak` must not say 3.
/// (Without the sequence lock around the credits in flight, B's update counted them as
/// tasks.)
#[test]
fn the_watermark_never_counts_credits_in_flight() {
    loom::model(|| {
        let chain = Arc::new(Chain::new(&[3]));
        with_credits_parked_on_shard_2(&chain, 2);
        assert!(chain.try_charge(0, 1));
        assert_eq!(chain.peak(0), 2, "the parked pair was charged once");
        let c2 = chain.clone();
        let a = thread::spawn(move || c2.try_charge(0, 0));
        chain.uncharge(0, 1);
        let again = chain.try_charge(0, 1);
        let a = a.join().unwrap();
        assert!(a && again, "refused with room (a {a}, again {again})");
        assert_eq!(chain.current(0), 2, "exact at rest");
        assert_eq!(chain.peak(0), 2, "at most two tasks were ever charged");
    });
}
