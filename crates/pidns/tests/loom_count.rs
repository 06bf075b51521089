//! Loom models of the `Scalable` allocation count: per-thread shards of
//! `pid_allocated` and the `PIDNS_ADDING` flag, whose `SeqCst` accesses order a fork against the
//! closing of its namespace and a free against the dead init's emptiness check. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p uproc-pidns --test loom_count --release`.
#![cfg(loom)]

use loom::thread;
use uproc_pidns::loom_model::{Pool, set_thread_shard};

/// `alloc_pid`'s tail in `Scalable`: publish, count in (then the flag check), or undo.
fn fork(pool: &Pool, value: u32) -> Result<i32, bool> {
    let nr = pool.alloc(pool_max()).expect("free numbers");
    pool.publish(nr, value);
    if pool.count_add() {
        return Ok(nr);
    }
    pool.unpublish_release(nr);
    Err(pool.count_sub())
}

fn pool_max() -> i32 {
    4
}

/// A fork races with `disable_pid_allocation` (the init's death) and the zap's walk:
/// either the fork fails with ENOMEM, or the walk and the count after the close both
/// see its pid. A pid the walk misses would escape the namespace's death.
#[test]
fn fork_racing_the_close_is_seen_by_the_walk_or_fails() {
    loom::model(|| {
        set_thread_shard(0);
        let pool = Pool::new(pool_max(), 2);
        let p2 = pool.clone();
        let t = thread::spawn(move || {
            set_thread_shard(1);
            fork(&p2, 7)
        });
        pool.close();
        let walk = pool.published();
        let count = pool.allocated();
        match t.join().unwrap() {
            Ok(_) => {
                assert_eq!(walk, vec![7], "a counted fork missed by the zap walk");
                assert_eq!(count, 1, "a counted fork missed by the count");
            }
            Err(_) => assert_eq!(pool.allocated(), 0, "the undo counted out"),
        }
    });
}

/// Two frees in a closed namespace holding the init and two more pids, on two shards:
/// the count ends at 1 and at least one free owes the dead init its wakeup.
#[test]
fn racing_frees_in_a_closed_namespace_never_lose_the_wakeup() {
    loom::model(|| {
        set_thread_shard(0);
        let pool = Pool::new(pool_max(), 2);
        for _ in 0..3 {
            assert!(pool.count_add());
        }
        pool.close();
        let p2 = pool.clone();
        let t = thread::spawn(move || {
            set_thread_shard(1);
            p2.count_sub()
        });
        let mine = pool.count_sub();
        let theirs = t.join().unwrap();
        assert!(mine || theirs, "the last free's wakeup was lost");
        assert_eq!(pool.allocated(), 1);
    });
}

/// A free races with the close: either the closer's own count (read after the close)
/// already sees the namespace down to its init, or the free sees it closed and wakes
/// the init. Otherwise the init would sleep forever. The freed pid was forked on the
/// closer's shard and is freed on another, as a reaping parent on another thread does.
#[test]
fn free_racing_the_close_is_seen_by_the_closer_or_wakes_it() {
    loom::model(|| {
        set_thread_shard(0);
        let pool = Pool::new(pool_max(), 2);
        assert!(pool.count_add()); // the init
        assert!(pool.count_add()); // a child
        let p2 = pool.clone();
        let t = thread::spawn(move || {
            set_thread_shard(1);
            p2.count_sub()
        });
        pool.close();
        let seen = pool.allocated();
        let woke = t.join().unwrap();
        assert!(seen == 1 || woke, "the dead init would sleep forever");
        assert_eq!(pool.allocated(), 1);
    });
}

/// An outer level counted without a check by a nested fork that then fails its
/// innermost check: every level's count returns to where it was.
#[test]
fn failed_nested_fork_counts_every_level_out() {
    loom::model(|| {
        set_thread_shard(0);
        let outer = Pool::new(pool_max(), 2);
        let inner = Pool::new(pool_max(), 2);
        assert_eq!(inner.allocated(), 0);
        let (o2, i2) = (outer.clone(), inner.clone());
        let t = thread::spawn(move || {
            set_thread_shard(1);
            o2.count_add_unchecked();
            if i2.count_add() {
                true
            } else {
                i2.count_sub();
                o2.count_sub();
                false
            }
        });
        inner.close();
        let ok = t.join().unwrap();
        assert_eq!(outer.allocated(), usize::from(ok));
        assert_eq!(inner.allocated(), usize::from(ok));
    });
}

/// A pid counted on one thread's shard is handed to another thread (as a child is
/// reaped by its parent elsewhere) and counted out on that thread's shard while a third
/// thread sums: the sum may run ahead (an add seen, its removal not yet) but never
/// behind. A sum that saw the removal without the add would read one pid fewer than
/// ever existed and let a dead init finish its zap while a task still lives.
#[test]
fn sum_never_sees_a_removal_without_its_add() {
    use loom::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc as StdArc;
    loom::model(|| {
        set_thread_shard(0);
        let pool = Pool::new(pool_max(), 2);
        assert!(pool.count_add()); // a task that stays: the count never drops below 1
        let handed = StdArc::new(loom::sync::Arc::new(AtomicBool::new(false)));
        let (p1, h1) = (pool.clone(), handed.clone());
        let forker = thread::spawn(move || {
            set_thread_shard(1);
            p1.count_add_unchecked();
            h1.store(true, Ordering::Release);
        });
        let (p2, h2) = (pool.clone(), handed.clone());
        let reaper = thread::spawn(move || {
            set_thread_shard(0);
            if h2.load(Ordering::Acquire) {
                p2.count_sub();
            }
        });
        let seen = pool.allocated();
        assert!(
            seen >= 1,
            "a sum below every count the namespace had: {seen}"
        );
        forker.join().unwrap();
        reaper.join().unwrap();
    });
}

/// A nested pid is freed (both levels counted out, then each level's check, as
/// `free_pid` does) while the outer namespace closes: the outer closer's own
/// count sees the removal, or the free owes the outer init its wakeup.
#[test]
fn multi_level_free_is_seen_by_the_closer_or_wakes_it() {
    loom::model(|| {
        set_thread_shard(0);
        let outer = Pool::new(pool_max(), 2);
        let inner = Pool::new(pool_max(), 2);
        assert!(outer.count_add()); // the outer init
        outer.count_add_unchecked(); // the nested pid's outer level
        assert!(inner.count_add()); // and its own level
        let (o2, i2) = (outer.clone(), inner.clone());
        let t = thread::spawn(move || {
            set_thread_shard(1);
            i2.count_sub_only();
            o2.count_sub_only();
            let _ = i2.owes_wakeup();
            o2.owes_wakeup()
        });
        outer.close();
        let seen = outer.allocated();
        let woke = t.join().unwrap();
        assert!(seen == 1 || woke, "the outer init would sleep forever");
    });
}
