//! Loom models of the `Scalable` number pool: per-thread batches over a shared FIFO,
//! exact claims racing with batch pops, the exhaustion scan stealing a cached number
//! and never giving up while a number is free (its deciding pass holding back the
//! release of a number it marked), and a slot's publish vs. lookup vs. removal across a
//! number's reuse, and lookups racing with the owner's clear (the slot's count outlives
//! every lookup that read its pointer). Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p uproc-pidns --test loom_pool --release`.
#![cfg(loom)]

use loom::thread;
use uproc_pidns::loom_model::Pool;

/// Two threads allocate from one pool of three numbers with batches of two: they never
/// get the same number, whoever refills first.
#[test]
fn concurrent_batches_never_share_a_number() {
    loom::model(|| {
        let pool = Pool::new(4, 2);
        let p2 = pool.clone();
        let t = thread::spawn(move || p2.alloc(4));
        let mine = pool.alloc(4).expect("three numbers for two forks");
        let theirs = t.join().unwrap().expect("three numbers for two forks");
        assert_ne!(mine, theirs, "a number live twice");
    });
}

/// `set_tid` claims number 1 while another thread pops it from its freshly refilled
/// batch: exactly one of them owns it, and the popper falls back to another number.
#[test]
fn exact_claim_races_with_a_batch_pop() {
    loom::model(|| {
        let pool = Pool::new(4, 2);
        let p2 = pool.clone();
        let t = thread::spawn(move || p2.alloc(4));
        let claimed = pool.claim(1);
        let popped = t.join().unwrap().expect("a free number is left");
        assert!(!(claimed && popped == 1), "1 owned twice");
        assert!(
            claimed || popped == 1,
            "1 was free: the claim fails only if popped"
        );
    });
}

/// The pool is dry and the other thread's batch holds the last free number: the
/// exhaustion scan claims it (pid_max stays exact), and the other thread, which owns
/// one number already, then finds its cached entry stale.
#[test]
fn exhaustion_scan_steals_a_cached_number() {
    loom::model(|| {
        let pool = Pool::new(3, 2); // numbers 1 and 2
        let p2 = pool.clone();
        let first = p2.alloc(3).expect("fresh pool");
        let t = thread::spawn(move || p2.alloc(3));
        let mine = pool.alloc(3);
        let theirs = t.join().unwrap();
        let got: Vec<i32> = [mine, theirs].into_iter().flatten().collect();
        assert_eq!(got.len(), 1, "one number was left for two forks");
        assert_ne!(got[0], first, "a number live twice");
    });
}

/// A number is published, looked up, removed and released by one thread, then
/// reused by another: a lookup never sees the old owner's value after the new owner
/// published, and the old owner's clear never wipes the new owner's publication.
#[test]
fn publish_lookup_remove_across_reuse() {
    loom::model(|| {
        let pool = Pool::new(2, 1); // one number: 1
        let nr = pool.alloc(2).expect("fresh pool");
        pool.publish(nr, 10);
        let p2 = pool.clone();
        let t = thread::spawn(move || {
            // The reader: whatever it sees is a complete publication.
            let v = p2.find(1);
            assert!(matches!(v, None | Some(10) | Some(20)), "{v:?}");
            v
        });
        pool.unpublish_release(nr);
        let again = pool.alloc(2).expect("released");
        assert_eq!(again, 1);
        pool.publish(again, 20);
        assert_eq!(pool.find(1), Some(20));
        let _ = t.join().unwrap();
    });
}

/// A release on one thread races with an allocation on another that needs the released
/// number: the allocation either sees it free (through the scan) or reports the pool
/// full; never both owners.
#[test]
fn release_races_with_allocation_of_the_last_number() {
    loom::model(|| {
        let pool = Pool::new(2, 1); // one number: 1
        let nr = pool.alloc(2).expect("fresh pool");
        let p2 = pool.clone();
        let t = thread::spawn(move || p2.alloc(2));
        pool.release(nr);
        match t.join().unwrap() {
            Some(n) => {
                assert_eq!(n, 1);
                assert!(!pool.claim(1), "owned by the other thread");
            }
            None => assert!(pool.claim(1), "released and not taken: free"),
        }
    });
}

/// The pool is dry: this thread owns 1 and its batch holds the last free number, 2. A
/// scanner looks for a number while this thread frees 1 (behind the scan) and then takes
/// 2 (ahead of it). A number was free at every moment, so the scanner must not report
/// the pool full, whichever numbers it reads before and after the free and the take
/// (Linux: EAGAIN only when every number is in use at once).
#[test]
fn scan_sees_a_release_behind_it_while_a_number_ahead_is_taken() {
    loom::model(|| {
        let pool = Pool::new(3, 2); // numbers 1 and 2
        let first = pool.alloc(3).expect("fresh pool");
        assert_eq!(first, 1, "the batch is [1, 2]");
        let p2 = pool.clone();
        let scanner = thread::spawn(move || p2.alloc(3));
        pool.release(first);
        let mine = pool.alloc(3).expect("1 was released and 2 is in the batch");
        let theirs = scanner
            .join()
            .unwrap()
            .expect("a number was free at every moment: the scan must find one");
        assert_ne!(mine, theirs, "a number live twice");
    });
}

/// The same race with three threads, as a fork and a reap on two other workers make it:
/// this thread owns 1 and caches 2; a reaper frees 1 and then signals it; only then
/// does this thread fork (taking 2). The scanner running meanwhile must still find one.
#[test]
fn scan_sees_a_release_on_one_thread_and_a_take_on_another() {
    use loom::sync::Arc;
    use loom::sync::atomic::{AtomicBool, Ordering};
    loom::model(|| {
        let pool = Pool::new(3, 2); // numbers 1 and 2
        let first = pool.alloc(3).expect("fresh pool");
        assert_eq!(first, 1, "the batch is [1, 2]");
        let freed = Arc::new(AtomicBool::new(false));
        let scanner = {
            let pool = pool.clone();
            thread::spawn(move || pool.alloc(3))
        };
        let reaper = {
            let (pool, freed) = (pool.clone(), freed.clone());
            thread::spawn(move || {
                pool.release(first);
                freed.store(true, Ordering::Release);
            })
        };
        while !freed.load(Ordering::Acquire) {
            thread::yield_now();
        }
        let mine = pool.alloc(3).expect("1 was released and 2 is in the batch");
        reaper.join().unwrap();
        let theirs = scanner
            .join()
            .unwrap()
            .expect("a number was free at every moment: the scan must find one");
        assert_ne!(mine, theirs, "a number live twice");
    });
}

/// The deciding pass alone, against the same race: this thread owns 1 and caches 2, then
/// frees 1 and takes 2 while the pass runs. The pass marks 1 if it sees it in use, and
/// the free of a marked number waits for the pass (pool lock), so 2 is still free when
/// the pass reaches it. A free that ignored the mark would let the pass report the pool
/// full.
#[test]
fn deciding_pass_holds_back_the_release_of_a_number_it_marked() {
    loom::model(|| {
        let pool = Pool::new(3, 2); // numbers 1 and 2
        let first = pool.alloc(3).expect("fresh pool");
        assert_eq!(first, 1, "the batch is [1, 2]");
        let p2 = pool.clone();
        let pass = thread::spawn(move || p2.scan_exact(3));
        pool.release(first);
        let mine = pool.alloc(3).expect("1 was released and 2 is in the batch");
        let theirs = pass
            .join()
            .unwrap()
            .expect("a number was free at every moment: the pass must find one");
        assert_ne!(mine, theirs, "a number live twice");
    });
}

/// A lookup races with the owner's clear and release, and nothing else keeps the
/// value: the lookup's strong count is taken before the slot's own is dropped (loom
/// checks the accesses to the slot's count), and a lookup that starts after the
/// clear-and-release completed finds nothing.
#[test]
fn lookup_races_with_clear_and_release() {
    use loom::sync::Arc;
    use loom::sync::atomic::{AtomicBool, Ordering};
    loom::model(|| {
        let pool = Pool::new(2, 1); // one number: 1
        let nr = pool.alloc(2).expect("fresh pool");
        pool.publish(nr, 10);
        let cleared = Arc::new(AtomicBool::new(false));
        let (p2, c2) = (pool.clone(), cleared.clone());
        let t = thread::spawn(move || {
            let after_clear = c2.load(Ordering::Acquire);
            let v = p2.find(1);
            assert!(matches!(v, None | Some(10)), "{v:?}");
            if after_clear {
                assert_eq!(v, None, "a lookup after the clear returned the value");
            }
        });
        pool.unpublish_release(nr);
        cleared.store(true, Ordering::Release);
        assert_eq!(pool.find(1), None);
        t.join().unwrap();
    });
}

/// Two lookups in the number's state byte at once while the owner clears: the
/// release waits for both, whichever leaves last.
#[test]
fn two_lookups_race_with_clear() {
    loom::model(|| {
        let pool = Pool::new(2, 1); // one number: 1
        let nr = pool.alloc(2).expect("fresh pool");
        pool.publish(nr, 10);
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let p = pool.clone();
                thread::spawn(move || {
                    let v = p.find(1);
                    assert!(matches!(v, None | Some(10)), "{v:?}");
                })
            })
            .collect();
        pool.unpublish_release(nr);
        for r in readers {
            r.join().unwrap();
        }
        assert_eq!(pool.find(1), None);
    });
}
