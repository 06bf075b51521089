//! The `Scalable` number pool: what it keeps of Linux (no number live twice, `pid_max`
//! exact, `set_tid`'s errors, reserve-then-publish) and what it promises instead of
//! Linux's cyclic order (the reuse distance: a freed number waits behind every free
//! number in the shared pool, less what other threads' batches take of them).
// The model checks `contains_key` first and inserts later, with assertions between.
#![allow(clippy::map_entry)]

mod common;

use common::{alloc, root_with_init};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use uproc_abi::{Errno, Profile};
use uproc_pidns::{Pid, alloc_pid, free_pid};

#[derive(Clone, Debug)]
enum Op {
    Alloc,
    /// Free the live pid at this index (mod the live count).
    Free(usize),
    SetTid(i32),
    SetPidMax(i32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => Just(Op::Alloc),
        4 => any::<usize>().prop_map(Op::Free),
        1 => (1..340i32).prop_map(Op::SetTid),
        1 => (301..340i32).prop_map(Op::SetPidMax),
    ]
}

/// One pending reuse-distance check: a number freed when `bound` free numbers waited
/// in the shared pool; `allocs` allocations since.
struct Pending {
    bound: usize,
    allocs: usize,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// No number live twice; EAGAIN exactly when every number below `pid_max` is live;
    /// `set_tid` EEXIST exactly when live; `nr_allocated` exact; and a freed number is
    /// not handed out again before `pool_len()` (at its free) other allocations.
    #[test]
    fn no_number_live_twice_pid_max_exact_and_reuse_distance(
        ops in proptest::collection::vec(op(), 1..600)
    ) {
        let (ns, init) = root_with_init(Profile::Scalable, 320);
        let mut live: BTreeMap<i32, Arc<Pid>> = BTreeMap::new();
        live.insert(1, init);
        let mut pending: HashMap<i32, Pending> = HashMap::new();
        for op in ops {
            match op {
                Op::Alloc => {
                    let pid_max = ns.pid_max();
                    let in_use = live.range(..pid_max).count();
                    match alloc_pid(&ns, &[], false) {
                        Ok(pid) => {
                            let nr = pid.nr();
                            prop_assert!((1..pid_max).contains(&nr), "{nr} outside 1..{pid_max}");
                            prop_assert!(!live.contains_key(&nr), "{nr} handed out while live");
                            for p in pending.values_mut() {
                                p.allocs += 1;
                            }
                            if let Some(p) = pending.remove(&nr) {
                                prop_assert!(
                                    p.allocs > p.bound,
                                    "{nr} reused after {} allocations; {} free numbers were ahead of it",
                                    p.allocs - 1, p.bound
                                );
                            }
                            live.insert(nr, pid);
                        }
                        Err(e) => {
                            prop_assert_eq!(e, Errno::EAGAIN);
                            prop_assert_eq!(
                                in_use, (pid_max - 1) as usize,
                                "EAGAIN with a free number below pid_max {}", pid_max
                            );
                        }
                    }
                }
                Op::Free(i) if !live.is_empty() => {
                    let nr = *live.keys().nth(i % live.len()).expect("in range");
                    if nr == 1 {
                        continue; // keep the init
                    }
                    let pid = live.remove(&nr).expect("live");
                    free_pid(&pid);
                    let bound = ns.pool_len().expect("Scalable has a pool");
                    pending.insert(nr, Pending { bound, allocs: 0 });
                }
                Op::Free(_) => {}
                Op::SetTid(nr) => {
                    let r = alloc_pid(&ns, &[nr], true);
                    if nr >= ns.pid_max() {
                        prop_assert_eq!(r.unwrap_err(), Errno::EINVAL);
                    } else if live.contains_key(&nr) {
                        prop_assert_eq!(r.unwrap_err(), Errno::EEXIST);
                    } else {
                        let pid = r.expect("a free number can be claimed");
                        prop_assert_eq!(pid.nr(), nr);
                        // A direct claim is an allocation, but the number itself is
                        // exempt from the FIFO order.
                        for p in pending.values_mut() {
                            p.allocs += 1;
                        }
                        pending.remove(&nr);
                        live.insert(nr, pid);
                    }
                }
                Op::SetPidMax(v) => {
                    ns.set_pid_max(v).expect("valid pid_max");
                    // The distance is promised for a fixed pid_max.
                    pending.clear();
                }
            }
            prop_assert_eq!(ns.nr_allocated(), live.len());
        }
        for (nr, pid) in &live {
            let found = ns.find_pid(*nr).expect("live pids are found");
            prop_assert!(Arc::ptr_eq(&found, pid));
        }
    }
}

#[test]
fn a_freed_number_waits_behind_every_free_number() {
    let (ns, _init) = root_with_init(Profile::Scalable, 400);
    let pids: Vec<_> = (0..100).map(|_| alloc(&ns)).collect();
    let first = pids[0].nr();
    free_pid(&pids[0]);
    // 399 - 1 (init) - 100 allocated = 298 never used, plus nothing freed yet.
    let ahead = ns.pool_len().unwrap();
    assert!(
        ahead >= 298 - 128,
        "only this thread's batch is outside the pool"
    );
    let mut seen = 0;
    loop {
        let pid = alloc(&ns);
        seen += 1;
        if pid.nr() == first {
            break;
        }
        assert!(seen < 1000, "{first} never came back");
    }
    assert!(
        seen > ahead,
        "{first} came back after {seen} allocations, {ahead} were ahead"
    );
}

/// A full namespace's EAGAIN marks every number in use (their frees then take the pool
/// lock): a number freed after it still waits behind every free number in the pool.
#[test]
fn a_number_freed_after_eagain_keeps_the_reuse_distance() {
    let (ns, _init) = root_with_init(Profile::Scalable, 400);
    let held: Vec<_> = (2..=399).map(|_| alloc(&ns)).collect();
    assert_eq!(alloc_pid(&ns, &[], false).unwrap_err(), Errno::EAGAIN);
    let mut pending = Vec::new();
    for p in &held[..50] {
        free_pid(p);
        pending.push((p.nr(), ns.pool_len().unwrap(), 0usize));
    }
    let mut again = Vec::new();
    while !pending.is_empty() {
        let p = alloc(&ns);
        for (_, _, allocs) in &mut pending {
            *allocs += 1;
        }
        if let Some(i) = pending.iter().position(|&(nr, _, _)| nr == p.nr()) {
            let (nr, ahead, allocs) = pending.swap_remove(i);
            assert!(
                allocs > ahead,
                "{nr} came back after {allocs} allocations, {ahead} were ahead of it"
            );
        }
        again.push(p);
    }
    assert_eq!(alloc_pid(&ns, &[], false).unwrap_err(), Errno::EAGAIN);
    assert_eq!(ns.nr_allocated(), 399);
}

#[test]
fn numbers_below_300_are_reused_and_eagain_only_when_full() {
    // Linux refuses once its cursor passed 300 although 2..=299 are free; Scalable
    // hands out any free number and fails only when none is left.
    let (ns, _init) = root_with_init(Profile::Scalable, 400);
    let mut held: Vec<_> = (2..=399).map(|_| alloc(&ns)).collect();
    assert_eq!(
        alloc_pid(&ns, &[], false).unwrap_err(),
        Errno::EAGAIN,
        "1..=399 in use"
    );
    assert_eq!(
        ns.nr_allocated(),
        399,
        "the failed fork left nothing behind"
    );
    let low = held.iter().position(|p| p.nr() == 5).unwrap();
    free_pid(&held.swap_remove(low));
    let again = alloc(&ns);
    assert_eq!(again.nr(), 5, "the only free number");
    held.push(again);
    assert_eq!(alloc_pid(&ns, &[], false).unwrap_err(), Errno::EAGAIN);
}

#[test]
fn set_tid_claims_a_number_sitting_in_a_batch_and_it_is_skipped() {
    let (ns, _init) = root_with_init(Profile::Scalable, 32768);
    // This thread's batch now holds the next numbers of the pool.
    let a = alloc(&ns);
    let next = a.nr() + 1;
    let claimed = alloc_pid(&ns, &[next], true).expect("free, although cached");
    assert_eq!(claimed.nr(), next);
    assert_eq!(alloc_pid(&ns, &[next], true).unwrap_err(), Errno::EEXIST);
    let b = alloc(&ns);
    assert_ne!(b.nr(), next, "the cached entry was stale and skipped");
    // Freeing the claimed number does not leave two entries of it in the pool.
    free_pid(&claimed);
    let mut seen = HashMap::new();
    let mut held = Vec::new();
    while let Ok(p) = alloc_pid(&ns, &[], false) {
        assert!(seen.insert(p.nr(), ()).is_none(), "{} twice", p.nr());
        held.push(p);
    }
    assert_eq!(
        ns.nr_allocated(),
        32767,
        "every number handed out exactly once"
    );
}

#[test]
fn lowering_pid_max_is_honoured_for_cached_and_pooled_numbers() {
    let (ns, _init) = root_with_init(Profile::Scalable, 1000);
    let high: Vec<_> = (0..700).map(|_| alloc(&ns)).collect();
    for p in &high {
        free_pid(p);
    }
    ns.set_pid_max(301).unwrap();
    let mut held = Vec::new();
    while let Ok(p) = alloc_pid(&ns, &[], false) {
        assert!(p.nr() < 301, "{} handed out above pid_max 301", p.nr());
        held.push(p);
    }
    assert_eq!(held.len(), 299, "2..=300: every number below the new limit");
    ns.set_pid_max(1000).unwrap();
    let more: Vec<_> = (0..699).map(|_| alloc(&ns)).collect();
    assert!(more.iter().all(|p| p.nr() >= 301));
    assert_eq!(
        alloc_pid(&ns, &[], false).unwrap_err(),
        Errno::EAGAIN,
        "numbers set aside above the lowered limit came back when it was raised"
    );
}

#[test]
fn numbers_cached_by_another_thread_are_drained_before_eagain() {
    let (ns, _init) = root_with_init(Profile::Scalable, 400);
    let (ready_tx, ready_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let other_ns = Arc::clone(&ns);
    let other = std::thread::spawn(move || {
        // Fill this thread's batches: one pid kept, a few freed into its free batch.
        let kept = alloc(&other_ns);
        for _ in 0..5 {
            free_pid(&alloc(&other_ns));
        }
        ready_tx.send(kept.nr()).unwrap();
        done_rx.recv().unwrap();
        kept
    });
    let kept_nr = ready_rx.recv().unwrap();
    let mut held = Vec::new();
    while let Ok(p) = alloc_pid(&ns, &[], false) {
        assert_ne!(p.nr(), kept_nr);
        held.push(p);
    }
    assert_eq!(
        held.len(),
        399 - 2,
        "every number but the init's and the other thread's live one, cached or not"
    );
    done_tx.send(()).unwrap();
    let kept = other.join().unwrap();
    // Freed on a thread that ends, so its free batch goes back to the pool too.
    std::thread::spawn(move || {
        free_pid(&kept);
        for p in &held {
            free_pid(p);
        }
    })
    .join()
    .unwrap();
    assert_eq!(ns.nr_allocated(), 1);
    assert_eq!(
        ns.pool_len(),
        Some(398),
        "the ended thread's batches went back to the pool"
    );
}

#[test]
fn nested_levels_take_a_number_from_each_level_pool() {
    let (root_ns, _init) = root_with_init(Profile::Scalable, 32768);
    let child = root_ns.new_child().unwrap();
    let c_init = alloc_pid(&child, &[], false).unwrap();
    assert_eq!(c_init.nr(), 1, "a namespace's first pid is 1");
    child.set_child_reaper(Some(common::any_reaper()));
    let p = alloc(&child);
    let [outer, inner] = [p.numbers()[0].nr, p.numbers()[1].nr];
    assert!(Arc::ptr_eq(&root_ns.find_pid(outer).unwrap(), &p));
    assert!(Arc::ptr_eq(&child.find_pid(inner).unwrap(), &p));
    assert_eq!((root_ns.nr_allocated(), child.nr_allocated()), (3, 2));
    free_pid(&p);
    assert!(root_ns.find_pid(outer).is_none() && child.find_pid(inner).is_none());
    assert_eq!((root_ns.nr_allocated(), child.nr_allocated()), (2, 1));
}

/// Four threads fork and free in a namespace small enough that the pool runs dry and
/// the exhaustion scan steals cached numbers, while a reader looks numbers up: no number
/// is live twice, a lookup only ever finds a complete pid carrying that number, and at
/// rest every count balances.
///
/// The threads first fill the namespace together (90 each, 360 asked of 299 numbers,
/// nothing freed): whatever the scheduling, some fork meets a full namespace, and since
/// nothing is freed before they meet again, EAGAIN is exact only if they then hold all
/// 299 numbers between them, other threads' cached ones included. Only after that do
/// they fork and free at random (overlapping or not, as the scheduler has it).
#[test]
fn stress_small_namespace_with_lookups() {
    const THREADS: usize = 4;
    const PID_MAX: i32 = 301;
    let (ns, _init) = root_with_init(Profile::Scalable, PID_MAX);
    let live: Arc<Vec<AtomicBool>> =
        Arc::new((0..PID_MAX).map(|_| AtomicBool::new(false)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let barrier = Arc::new(Barrier::new(THREADS + 1));
    let reader = {
        let (ns, stop, barrier) = (ns.clone(), stop.clone(), barrier.clone());
        std::thread::spawn(move || {
            barrier.wait();
            let mut found = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for nr in 1..PID_MAX {
                    if let Some(p) = ns.find_pid(nr) {
                        assert_eq!(p.nr(), nr, "find_pid returned a pid of another number");
                        found += 1;
                    }
                }
            }
            found
        })
    };
    let filled = Arc::new(Barrier::new(THREADS));
    let held_total = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (ns, live, barrier) = (ns.clone(), live.clone(), barrier.clone());
            let (filled, held_total) = (filled.clone(), held_total.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let mut held: Vec<Arc<Pid>> = Vec::new();
                let mut full = 0;
                // One fork: the new pid is held (never live twice), or EAGAIN is counted.
                let mut fork = |held: &mut Vec<Arc<Pid>>| match alloc_pid(&ns, &[], false) {
                    Ok(p) => {
                        let twice = live[p.nr() as usize].swap(true, Ordering::SeqCst);
                        assert!(!twice, "{} live twice", p.nr());
                        held.push(p);
                        true
                    }
                    Err(e) => {
                        assert_eq!(e, Errno::EAGAIN);
                        full += 1;
                        false
                    }
                };
                // Fill: fork until 90 are held or the namespace is full; nobody frees.
                while held.len() < 90 && fork(&mut held) {}
                held_total.fetch_add(held.len(), Ordering::SeqCst);
                filled.wait();
                assert_eq!(
                    held_total.load(Ordering::SeqCst),
                    (PID_MAX - 2) as usize,
                    "EAGAIN while a number was free (pid_max must be exact)"
                );
                for i in 0..20_000usize {
                    if held.len() < 90 && (i + t) % 3 != 0 {
                        fork(&mut held);
                    } else if let Some(p) = held.pop() {
                        live[p.nr() as usize].store(false, Ordering::SeqCst);
                        free_pid(&p);
                    }
                }
                for p in held {
                    live[p.nr() as usize].store(false, Ordering::SeqCst);
                    free_pid(&p);
                }
                full
            })
        })
        .collect();
    let full: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
    stop.store(true, Ordering::Relaxed);
    let _found = reader.join().unwrap();
    assert!(
        full > 0,
        "360 forks asked of 299 numbers: some met a full namespace"
    );
    assert_eq!(ns.nr_allocated(), 1, "only the init is left");
    assert_eq!(ns.pids().len(), 1);
    assert_eq!(
        ns.pool_len(),
        Some(299),
        "every number but the init's is back in the pool once the threads ended"
    );
    // And all of them can be handed out again, each once.
    let all: Vec<_> = (0..299).map(|_| alloc(&ns)).collect();
    let mut nrs: Vec<i32> = all.iter().map(|p| p.nr()).collect();
    nrs.sort_unstable();
    assert_eq!(nrs, (2..PID_MAX).collect::<Vec<_>>());
}

/// A new namespace's own pid_max is PID_MAX_LIMIT, but it can never hold more live pids
/// than its tightest ancestor allows: its pool stays below that bound (so it does not
/// walk, and build lookup slots for, 4M numbers), and EAGAIN stays exact.
#[test]
fn nested_pool_stays_below_the_tightest_ancestor_limit() {
    let (root_ns, _init) = root_with_init(Profile::Scalable, 400);
    let child = root_ns.new_child().unwrap();
    let c_init = alloc_pid(&child, &[], false).unwrap();
    child.set_child_reaper(Some(common::any_reaper()));
    for _ in 0..5_000 {
        let p = alloc(&child);
        assert!(
            p.nr() < 400,
            "{} in the child: beyond the root's pid_max",
            p.nr()
        );
        free_pid(&p);
    }
    // set_tid may still use the child's own, larger range.
    let high = alloc_pid(&child, &[100_000, 0][..1], true).unwrap();
    assert_eq!(high.nr(), 100_000);
    // Fill the root: 1 (root init) + 1 (child init) + high + the rest.
    let mut held = Vec::new();
    loop {
        match alloc_pid(&child, &[], false) {
            Ok(p) => held.push(p),
            Err(e) => {
                assert_eq!(e, Errno::EAGAIN);
                break;
            }
        }
    }
    assert_eq!(
        root_ns.nr_allocated(),
        399,
        "the root is full, not the child's pool"
    );
    drop(c_init);
}

/// The reuse distance's one slack: a batch another thread takes after the free. Thread
/// A frees a number when `pool_len()` numbers wait in the pool; thread B then takes a
/// batch of 128 of them to hand out one, and forks no more. A reaches its number after
/// every other number of the pool but B's 127, so it comes back after at least
/// `pool_len() - 127` allocations: the documented `pool_len() - H`, with `H` (what
/// B's batch still holds) bounded by `batched_len()`. (A red-team probe found the
/// claim of a full `pool_len()` broken by exactly this: 744 allocations where
/// `pool_len()` had said 871.)
#[test]
fn another_threads_batch_is_the_only_slack_of_the_reuse_distance() {
    let (ns, _init) = root_with_init(Profile::Scalable, 1000);
    let (to_a, a_rx) = mpsc::channel::<()>();
    let (from_a, main_rx) = mpsc::channel::<(i32, usize)>();
    let a = std::thread::spawn({
        let ns = ns.clone();
        move || {
            // This thread's first batch (2..=128; 1 is the init's), used up exactly.
            let mine: Vec<_> = (0..127).map(|_| alloc(&ns)).collect();
            let x = mine[0].nr();
            free_pid(&mine[0]);
            from_a.send((x, ns.pool_len().unwrap())).unwrap();
            a_rx.recv().unwrap();
            let mut held = Vec::new();
            loop {
                let p = alloc(&ns);
                if p.nr() == x {
                    let slack = ns.batched_len().unwrap();
                    return (held.len(), slack, held, mine, p);
                }
                held.push(p);
                assert!(held.len() < 1000, "{x} never came back");
            }
        }
    });
    let (x, bound) = main_rx.recv().unwrap();
    let (b_tx, b_rx) = mpsc::channel();
    let (b_done_tx, b_done_rx) = mpsc::channel::<()>();
    let b = std::thread::spawn({
        let ns = ns.clone();
        move || {
            b_tx.send(alloc(&ns)).unwrap();
            b_done_rx.recv().unwrap();
        }
    });
    let b_pid = b_rx.recv().unwrap();
    assert!(
        ns.batched_len().unwrap() >= 127,
        "B's batch holds the 127 numbers it has not handed out"
    );
    to_a.send(()).unwrap();
    let (by_a, slack, held, mine, again) = a.join().unwrap();
    b_done_tx.send(()).unwrap();
    b.join().unwrap();
    // B's one allocation and A's.
    let between = by_a + 1;
    assert!(
        between + 127 >= bound,
        "{x} came back after {between} allocations; {bound} were ahead of it, B holds 127"
    );
    assert!(
        between + slack >= bound,
        "{x} came back after {between} allocations; {bound} were ahead, {slack} batched"
    );
    for p in held.iter().chain(&mine[1..]).chain([&again, &b_pid]) {
        free_pid(p);
    }
}

/// The reuse distance with three forking threads, their operations serialised in a
/// random order (so each thread keeps its own batches): a number freed when
/// `pool_len()` numbers waited in the pool comes back only after at least that many
/// allocations less what the other two threads' batches may hold (127 each), and less
/// than `batched_len()` at its return.
#[test]
fn reuse_distance_with_three_threads_has_at_most_their_batches_as_slack() {
    struct St {
        live: Vec<Arc<Pid>>,
        /// Freed number -> (`pool_len()` at the free, allocations before it).
        pending: HashMap<i32, (usize, usize)>,
        allocs: usize,
        reused: usize,
        rng: u64,
        steps: usize,
    }
    for pid_max in [1000, 500] {
        let (ns, _init) = root_with_init(Profile::Scalable, pid_max);
        let st = std::sync::Mutex::new(St {
            live: Vec::new(),
            pending: HashMap::new(),
            allocs: 0,
            reused: 0,
            rng: 0x2545_F491_4F6C_DD1D,
            steps: 0,
        });
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    loop {
                        let mut g = st.lock().unwrap();
                        if g.steps >= 5_000 {
                            break;
                        }
                        g.steps += 1;
                        g.rng ^= g.rng << 13;
                        g.rng ^= g.rng >> 7;
                        g.rng ^= g.rng << 17;
                        let r = g.rng;
                        if g.live.len() < 200 && (g.live.is_empty() || r % 2 == 0) {
                            let p = alloc(&ns);
                            g.allocs += 1;
                            if let Some((bound, at)) = g.pending.remove(&p.nr()) {
                                let between = g.allocs - 1 - at;
                                let slack = ns.batched_len().unwrap();
                                assert!(
                                    between + 2 * 127 >= bound && between + slack >= bound,
                                    "pid_max {pid_max}: {} back after {between} allocations; \
                                     {bound} were ahead of it, {slack} batched now",
                                    p.nr()
                                );
                                g.reused += 1;
                            }
                            g.live.push(p);
                        } else if !g.live.is_empty() {
                            let i = (r >> 8) as usize % g.live.len();
                            let p = g.live.swap_remove(i);
                            free_pid(&p);
                            let entry = (ns.pool_len().unwrap(), g.allocs);
                            g.pending.insert(p.nr(), entry);
                        }
                    }
                });
            }
        });
        let g = st.into_inner().unwrap();
        assert!(g.reused > 50, "pid_max {pid_max}: only {} reuses", g.reused);
        for p in &g.live {
            free_pid(p);
        }
    }
}
