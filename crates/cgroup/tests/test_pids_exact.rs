//! The pids controller refuses a fork only when some level really is full.
//!
//! Threads fork, exit and reap (or cancel forks) through the controller's fork path
//! while a test-level counting semaphore keeps at most `pids.max - 1` charges out: a
//! permit is taken before `can_fork` and given back after the uncharge returns. So
//! every level always has room, and ANY EAGAIN is a spurious one. The charges are
//! handed between threads (one thread forks, another reaps), so credits pile up on the
//! reapers' shards and the forkers keep finding the counter at the limit: the exact
//! path (taking every parked credit back) runs all the time, racing credit spends and
//! credit parks on the other threads.
//!
//! With `MAX - 1` permits no level ever holds more than `MAX - 1` charges, so no
//! level's `pids.peak` may pass `MAX`, whatever its own `pids.max` (one more than the
//! truth is left to the racy
//! watermark: a charge and an uncharge on two other shards can slip between the
//! shards a watermark update sums, as racing forks inflate Linux's). A watermark that
//! counted the exact path's credits in flight as tasks reached a child's own limit.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::{FakeTask, Group, Rng, for_each_profile, link_new_task};
use uproc_abi::Profile;
use uproc_cgroup::{Cgroup, ForkCharge, Hierarchy};

/// Worker threads.
const THREADS: usize = 4;
/// Operations (a fork or an exit + reap) per worker thread and run.
const OPS: usize = 50_000;
/// `pids.max` of the limited level.
const MAX: u64 = 6;

/// A counting semaphore: at most `n` charges out at once.
struct Permits(AtomicUsize);

impl Permits {
    fn try_take(&self) -> bool {
        self.0
            .fetch_update(Ordering::Acquire, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }

    fn give_back(&self) {
        self.0.fetch_add(1, Ordering::Release);
    }
}

/// One charge the test holds: a fork not finished yet (cancelled later), or a task
/// (exited and reaped later).
enum Charge {
    Forking(ForkCharge),
    Task(Arc<FakeTask>),
}

/// A charge and the index of the target cgroup it was forked into.
struct Held(usize, Charge);

impl Held {
    /// The uncharge: `cgroup_cancel_fork`, or `cgroup_exit` + `cgroup_release`.
    fn drop_charge(self) {
        match self.1 {
            Charge::Forking(charge) => charge.cancel(),
            Charge::Task(t) => t.exit_and_reap(),
        }
    }
}

/// What one run saw.
#[derive(Debug, Default)]
struct Outcome {
    forks: usize,
    migrations: usize,
    spurious_eagain: usize,
}

/// `THREADS` threads fork into `targets` (at random) and exit/reap whatever the test
/// holds (at random, usually another thread's fork), or migrate a task to the next
/// target when there are several, with at most `permits` (`<= MAX`) charges out.
/// Checks at rest that every level's `pids.current` is what the test holds and its
/// `pids.peak` is at most `permits + 1` (the limited parent's: `pids.max` plus the
/// migrations in flight), then drains.
fn run(limited: &Cgroup, targets: &[Cgroup], permits: u64, seed: u64) -> Outcome {
    assert_eq!(limited.pids_max(), Some(MAX));
    assert!(permits <= MAX, "a charge always has room");
    // The most charges a level holds, plus one for the racy watermark.
    let max_peak = permits + 1;
    let permits = Arc::new(Permits(AtomicUsize::new(permits as usize)));
    let held: Arc<Mutex<Vec<Held>>> = Arc::default();
    let workers: Vec<_> = (0..THREADS)
        .map(|w| {
            let (permits, held, targets) = (permits.clone(), held.clone(), targets.to_vec());
            std::thread::spawn(move || {
                let mut rng = Rng(seed + w as u64 * 0x9e37_79b9);
                let mut out = Outcome::default();
                for i in 0..OPS {
                    if rng.below(2) == 0 && permits.try_take() {
                        let t = rng.below(targets.len() as u64) as usize;
                        match targets[t].can_fork() {
                            Ok(charge) if rng.below(4) == 0 => {
                                held.lock().unwrap().push(Held(t, Charge::Forking(charge)));
                            }
                            Ok(charge) => {
                                let tgid = (w * OPS + i) as i32 + 1;
                                let (task, _) = link_new_task(charge, tgid, tgid, true, false);
                                held.lock().unwrap().push(Held(t, Charge::Task(task)));
                            }
                            Err(_) => {
                                out.spurious_eagain += 1;
                                permits.give_back();
                                continue;
                            }
                        }
                        out.forks += 1;
                    } else {
                        let one = {
                            let mut h = held.lock().unwrap();
                            let n = h.len() as u64;
                            (n > 0).then(|| h.swap_remove(rng.below(n) as usize))
                        };
                        if let Some(Held(from, Charge::Task(task))) = one
                            .as_ref()
                            .filter(|_| targets.len() > 1 && rng.below(4) == 0)
                        {
                            // Migrate it to the next target instead: the levels below
                            // the common ancestor (the limited parent) move; the
                            // ancestor's peak sees a +1, its counter nothing.
                            let to = (from + 1) % targets.len();
                            targets[to].attach(&Group(vec![task.clone()])).unwrap();
                            out.migrations += 1;
                            held.lock()
                                .unwrap()
                                .push(Held(to, Charge::Task(task.clone())));
                        } else if let Some(one) = one {
                            one.drop_charge();
                            permits.give_back();
                        } else {
                            std::thread::yield_now();
                        }
                    }
                }
                out
            })
        })
        .collect();
    let mut total = Outcome::default();
    for w in workers {
        let o = w.join().unwrap();
        total.forks += o.forks;
        total.migrations += o.migrations;
        total.spurious_eagain += o.spurious_eagain;
    }
    let held = std::mem::take(&mut *held.lock().unwrap());
    assert_eq!(limited.pids_current(), held.len() as u64, "exact at rest");
    // A migration's +1 before its -1 shows in the common ancestor's peak, as in
    // Linux (`pids_can_attach`): at most one per thread at a time.
    let migrating = if total.migrations > 0 {
        THREADS as u64
    } else {
        0
    };
    assert!(
        limited.pids_peak() <= MAX + migrating,
        "peak above pids.max {MAX} + {migrating} migrations in flight"
    );
    for (i, t) in targets.iter().enumerate() {
        let n = held.iter().filter(|h| h.0 == i).count() as u64;
        assert_eq!(t.pids_current(), n, "{t:?} exact at rest");
        assert!(t.pids_peak() <= max_peak, "{t:?}: peak above {max_peak}");
    }
    for h in held {
        h.drop_charge();
    }
    assert_eq!(limited.pids_current(), 0, "drained");
    for t in targets {
        assert_eq!(t.pids_current(), 0, "{t:?} drained");
    }
    total
}

fn check(profile: Profile, what: &str, limited: &Cgroup, targets: &[Cgroup], permits: u64) {
    let out = run(limited, targets, permits, 0x5eed ^ profile as u64);
    assert!(
        out.forks > OPS / 4,
        "{profile:?} {what}: the workers forked ({out:?})"
    );
    assert!(
        targets.len() == 1 || out.migrations > OPS / 100,
        "{profile:?} {what}: tasks moved between the children ({out:?})"
    );
    assert_eq!(
        out.spurious_eagain, 0,
        "{profile:?} {what}: EAGAIN although every level had room ({out:?})"
    );
    assert_eq!(
        limited.pids_events(),
        0,
        "{profile:?} {what}: no rejection counted"
    );
}

/// One cgroup with `pids.max` = MAX, forks and reaps from 4 threads.
#[test]
fn no_spurious_eagain_in_one_cgroup() {
    for_each_profile(|p| {
        let a = Hierarchy::new(p).root().mkdir("a").unwrap();
        a.write("pids.max", &MAX.to_string()).unwrap();
        check(p, "one level", &a, std::slice::from_ref(&a), MAX - 1);
    });
}

/// A parent with `pids.max` = MAX and two children (one without a limit, one with a
/// larger one).
fn limited_parent(p: Profile) -> (Cgroup, [Cgroup; 2]) {
    let parent = Hierarchy::new(p).root().mkdir("p").unwrap();
    parent.write("pids.max", &MAX.to_string()).unwrap();
    let x = parent.mkdir("x").unwrap();
    let y = parent.mkdir("y").unwrap();
    y.write("pids.max", &(MAX + 3).to_string()).unwrap();
    (parent, [x, y])
}

/// Forks into either child of a limited parent, and migrations between them.
#[test]
fn no_spurious_eagain_under_a_limited_parent() {
    for_each_profile(|p| {
        let (parent, children) = limited_parent(p);
        check(p, "two levels", &parent, &children, MAX - 1);
    });
}

/// The same with `MAX` permits: the parent is full whenever every permit holds a
/// charge, and a fork still always has room (its own permit is uncharged). A
/// migration between the children leaves the parent's counter alone; one that moved
/// it `+1` then `-1`, as Linux's `pids_can_attach` does, would refuse a fork racing it
/// while the parent holds `MAX - 1`.
#[test]
fn migrations_leave_the_limited_parent_alone() {
    for_each_profile(|p| {
        let (parent, children) = limited_parent(p);
        check(p, "two levels, full", &parent, &children, MAX);
    });
}
