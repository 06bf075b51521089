//! Concurrent alloc/free: no number is live twice, and counts balance at rest.

mod common;

use common::{root_with_init, spawn_init};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use uproc_abi::{Errno, Profile};
use uproc_pidns::{Pid, PidNamespace, alloc_pid, free_pid};

const THREADS: usize = 4;
const ITERS: usize = 20_000;
const PID_MAX: i32 = 1024;
/// Pids each thread keeps alive at most (so numbers are recycled under contention).
const WINDOW: usize = 24;

/// `live[level][nr]`: whether a pid with that number at that level is live.
type Live = [Vec<AtomicBool>; 2];

fn mark(live: &Live, pid: &Pid, on: bool) {
    for (level, up) in pid.numbers().iter().enumerate() {
        let was = live[level][up.nr as usize].swap(on, Ordering::SeqCst);
        assert_ne!(
            was,
            on,
            "number {} at level {level} {} twice: Linux never hands out a live number",
            up.nr,
            if on { "allocated" } else { "freed" }
        );
    }
}

fn worker(ns: &Arc<PidNamespace>, live: &Live, seed: u64) -> usize {
    let mut held: Vec<Arc<Pid>> = Vec::with_capacity(WINDOW);
    let mut rng = seed;
    let mut full = 0;
    for _ in 0..ITERS {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        if held.len() < WINDOW && (held.is_empty() || rng % 3 != 0) {
            match alloc_pid(ns, &[], false) {
                Ok(pid) => {
                    mark(live, &pid, true);
                    held.push(pid);
                }
                Err(e) => {
                    assert_eq!(e, Errno::EAGAIN, "only a full namespace may refuse");
                    full += 1;
                }
            }
        } else {
            let pid = held.swap_remove(rng as usize % held.len());
            // Clear the mark before the number can be handed out again.
            mark(live, &pid, false);
            free_pid(&pid);
        }
    }
    for pid in held {
        mark(live, &pid, false);
        free_pid(&pid);
    }
    full
}

#[test]
fn concurrent_alloc_free_never_duplicates_and_balances() {
    for &p in Profile::ALL {
        let (root_ns, _init) = root_with_init(p, PID_MAX);
        let child = root_ns.new_child().unwrap();
        // A new namespace reads PID_MAX_LIMIT; bound this one too, so both levels recycle.
        child.set_pid_max(PID_MAX).unwrap();
        let child_init = spawn_init(&child);
        let live: Arc<Live> = Arc::new(std::array::from_fn(|_| {
            (0..PID_MAX).map(|_| AtomicBool::new(false)).collect()
        }));
        mark(&live, &child_init, true);
        let barrier = Arc::new(Barrier::new(THREADS));
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                // Half the threads fork into the root, half into the child (two levels).
                let ns = if t % 2 == 0 {
                    Arc::clone(&root_ns)
                } else {
                    Arc::clone(&child)
                };
                let (live, barrier) = (Arc::clone(&live), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    barrier.wait();
                    worker(&ns, &live, 0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1))
                })
            })
            .collect();
        for h in handles {
            h.join().expect("worker panicked");
        }
        assert_eq!(
            (root_ns.nr_allocated(), child.nr_allocated()),
            (2, 1),
            "{p}: at rest only the two inits hold numbers"
        );
        assert_eq!(root_ns.pids().len(), 2);
        assert_eq!(child.pids().len(), 1);
        let still_live = live
            .iter()
            .flatten()
            .filter(|b| b.load(Ordering::SeqCst))
            .count();
        assert_eq!(still_live, 2, "{p}: the child init's two numbers");
        assert!(root_ns.find_pid(child_init.nr_in(&root_ns)).is_some());
    }
}
