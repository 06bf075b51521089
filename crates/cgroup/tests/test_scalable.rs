//! Membership without `css_set_lock` (`Profile::Scalable`): no global lock on a
//! task's life cycle, and the races the lock used to settle (fork vs rmdir, fork vs
//! cgroup.kill, migration vs exit) still come out as Linux's rules say, checked by
//! multi-thread stress with invariants at rest.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use common::{FakeTask, Rng, fork, fork_child, fork_full, link_new_task};
use uproc_abi::{Errno, Profile};
use uproc_cgroup::{Hierarchy, Limit};

#[test]
fn a_life_cycle_takes_no_css_set_lock() {
    let h = Hierarchy::new(Profile::Scalable);
    let a = h.root().mkdir("a").unwrap();
    let b = a.mkdir("b").unwrap();
    let c = h.root().mkdir("c").unwrap();
    let before = h.css_set_lock_stat().write;
    for tgid in 0..1000 {
        let t = fork(&b, tgid).unwrap();
        if tgid % 10 == 0 {
            c.attach(&t.link()).unwrap();
        }
        t.exit_and_reap();
    }
    let t = fork(&b, 5000).unwrap();
    b.kill().unwrap();
    assert_eq!(t.kills(), 1);
    t.link().release();
    b.can_fork().unwrap().cancel();
    assert_eq!(b.read("cgroup.procs").unwrap(), "");
    b.rmdir().unwrap();
    assert_eq!(
        h.css_set_lock_stat().write - before,
        0,
        "fork, exit, reap, migration, kill, rmdir: no css_set_lock"
    );
    assert_eq!((a.pids_current(), c.pids_current()), (0, 0));
}

/// Forks race with rmdir of their cgroup: rmdir succeeds only when no fork is in
/// flight and nobody is linked; after it, every fork fails with ENOENT; nothing leaks.
#[test]
fn fork_racing_with_rmdir() {
    for round in 0..200 {
        let h = Hierarchy::new(Profile::Scalable);
        let a = h.root().mkdir("a").unwrap();
        let removed = Arc::new(AtomicBool::new(false));
        let start = Arc::new(Barrier::new(3));
        let forkers: Vec<_> = (0..2)
            .map(|t| {
                let (a, removed, start) = (a.clone(), removed.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    for i in 0..50 {
                        let seen_removed = removed.load(Ordering::SeqCst);
                        match fork(&a, t * 100 + i) {
                            Ok(task) => {
                                assert!(!seen_removed, "fork into a cgroup already removed");
                                task.exit_and_reap();
                            }
                            Err(e) => {
                                assert_eq!(e, Errno::ENOENT);
                                assert!(a.is_removed());
                            }
                        }
                    }
                })
            })
            .collect();
        start.wait();
        let mut gone = false;
        for _ in 0..100 {
            match a.rmdir() {
                Ok(()) => {
                    removed.store(true, Ordering::SeqCst);
                    gone = true;
                    break;
                }
                Err(e) => assert_eq!(e, Errno::EBUSY),
            }
            std::thread::yield_now();
        }
        for f in forkers {
            f.join().unwrap();
        }
        if !gone {
            a.rmdir().unwrap();
        }
        assert!(a.is_removed(), "round {round}");
        assert_eq!(a.pids_current(), 0);
        assert!(!a.is_populated());
        assert_eq!(a.can_fork().unwrap_err(), Errno::ENOENT);
        assert!(h.root().children().is_empty());
    }
}

/// Forks race with cgroup.kill: a task linked before the kill collected the members is
/// killed by it; one linked after is reported `killed` by post_fork if its can_fork
/// came before the kill. Either way no fork that overlapped a kill escapes both.
#[test]
fn fork_racing_with_kill_never_escapes() {
    let h = Hierarchy::new(Profile::Scalable);
    let a = h.root().mkdir("a").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let kills = Arc::new(AtomicU64::new(0));
    let killer = {
        let (a, stop, kills) = (a.clone(), stop.clone(), kills.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                a.kill().unwrap();
                kills.fetch_add(1, Ordering::SeqCst);
                std::thread::yield_now();
            }
        })
    };
    let mut escaped = 0;
    for tgid in 0..3000 {
        let charge = a.can_fork().unwrap();
        // Read after can_fork read kill_seq: kill number `before + 2` starts after
        // this read, so its bump comes after can_fork's read and it must either
        // collect the task or have post_fork report it killed (a kill that began
        // before can_fork read kill_seq may rightly miss a fork).
        let before = kills.load(Ordering::SeqCst);
        // Not dying on kill, so the kill count is observable afterwards.
        let (t, killed) = link_new_task(charge, tgid, tgid, true, false);
        while kills.load(Ordering::SeqCst) < before + 2 {
            std::thread::yield_now();
        }
        if !killed && t.kills() == 0 {
            escaped += 1;
        }
        t.exit_and_reap();
    }
    stop.store(true, Ordering::SeqCst);
    killer.join().unwrap();
    assert_eq!(escaped, 0, "a fork overlapping cgroup.kill survived it");
    assert_eq!(a.pids_current(), 0);
    assert!(!a.is_populated());
}

/// Four threads fork, exit, reap and migrate in a tree with binding limits while a
/// fifth kills: only EAGAIN ever refuses a fork, and at rest every counter is back to
/// zero, nothing is listed, and every cgroup can be removed.
#[test]
fn stress_fork_exit_migrate_kill_balances_at_rest() {
    const THREADS: usize = 4;
    let h = Hierarchy::new(Profile::Scalable);
    let top = h.root().mkdir("top").unwrap();
    top.set_pids_max(Limit::Value(24)).unwrap();
    let left = top.mkdir("left").unwrap();
    let right = top.mkdir("right").unwrap();
    left.set_pids_max(Limit::Value(10)).unwrap();
    let other = h.root().mkdir("other").unwrap();
    let cgs = [left.clone(), right.clone(), other.clone()];
    let stop = Arc::new(AtomicBool::new(false));
    let killer = {
        let (right, stop) = (right.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                right.kill().unwrap();
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        })
    };
    let barrier = Arc::new(Barrier::new(THREADS));
    let workers: Vec<_> = (0..THREADS)
        .map(|w| {
            let (cgs, barrier) = (cgs.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let mut rng = Rng(0x9E37_79B9 + w as u64);
                let mut held: Vec<Arc<FakeTask>> = Vec::new();
                for i in 0..4000 {
                    match rng.below(4) {
                        0 | 1 if held.len() < 16 => {
                            let cg = &cgs[rng.below(3) as usize];
                            match fork(cg, (w * 100_000 + i) as i32) {
                                Ok(t) => held.push(t),
                                Err(e) => assert_eq!(e, Errno::EAGAIN),
                            }
                        }
                        2 if !held.is_empty() => {
                            let t = held.swap_remove(rng.below(held.len() as u64) as usize);
                            t.exit_and_reap();
                        }
                        _ if !held.is_empty() => {
                            let t = &held[rng.below(held.len() as u64) as usize];
                            let to = &cgs[rng.below(3) as usize];
                            to.attach(&t.link()).unwrap();
                        }
                        _ => {}
                    }
                    // Killed tasks exit (task_dead) in their kill(); reap them.
                    held.retain(|t| {
                        if t.link().is_linked() {
                            true
                        } else {
                            t.link().release();
                            false
                        }
                    });
                }
                for t in held {
                    t.exit_and_reap();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    killer.join().unwrap();
    for cg in [&top, &left, &right, &other] {
        assert_eq!(cg.pids_current(), 0, "{cg:?}: charges balance at rest");
        assert!(!cg.is_populated(), "{cg:?}: nobody linked at rest");
        assert_eq!(cg.read("cgroup.procs").unwrap(), "", "{cg:?}");
    }
    for cg in [&left, &right, &other, &top] {
        cg.rmdir().unwrap();
    }
}

/// Concurrent forks in one cgroup never exceed its pids.max (no migration in): the
/// per-level charge refuses rather than overshoots.
#[test]
fn concurrent_forks_never_exceed_pids_max() {
    let h = Hierarchy::new(Profile::Scalable);
    let a = h.root().mkdir("a").unwrap();
    let b = a.mkdir("b").unwrap();
    a.set_pids_max(Limit::Value(5)).unwrap();
    let barrier = Arc::new(Barrier::new(4));
    let ts: Vec<_> = (0..4)
        .map(|w| {
            let (a, b, barrier) = (a.clone(), b.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let mut refused = 0;
                for i in 0..3000 {
                    let cg = if i % 2 == 0 { &a } else { &b };
                    match fork(cg, w * 10_000 + i) {
                        Ok(t) => {
                            assert!(a.pids_current() <= 5, "above pids.max");
                            t.exit_and_reap();
                        }
                        Err(e) => {
                            assert_eq!(e, Errno::EAGAIN);
                            refused += 1;
                        }
                    }
                }
                refused
            })
        })
        .collect();
    let refused: u64 = ts.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(a.pids_current(), 0);
    assert!(a.pids_peak() <= 5);
    assert_eq!(a.pids_events(), refused, "every refusal counted once");
}

/// Threads forking into one cgroup by name share its default anchor: every member is
/// listed once, populated is exact (computed), and a kill reaches every member.
#[test]
fn forks_from_many_threads_into_one_cgroup_are_all_listed_and_killed() {
    let h = Hierarchy::new(Profile::Scalable);
    let root = h.root();
    let a = root.mkdir("a").unwrap();
    let spawn_into = |cg: &uproc_cgroup::Cgroup, base: i32| {
        let cg = cg.clone();
        std::thread::spawn(move || {
            (0..100)
                .map(|i| fork_full(&cg, base + i, base + i, true, false).unwrap().0)
                .collect::<Vec<_>>()
        })
    };
    let in_root: Vec<Arc<FakeTask>> = (0..4)
        .map(|t| spawn_into(&root, t * 1000))
        .collect::<Vec<_>>()
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    let in_a: Vec<Arc<FakeTask>> = (0..4)
        .map(|t| spawn_into(&a, 10_000 + t * 1000))
        .collect::<Vec<_>>()
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    assert_eq!(root.read("cgroup.procs").unwrap().lines().count(), 400);
    assert_eq!(a.read("cgroup.procs").unwrap().lines().count(), 400);
    assert_eq!(a.pids_current(), 400);
    assert!(root.is_populated() && a.is_populated());
    a.kill().unwrap();
    assert!(
        in_a.iter().all(|t| t.kills() == 1),
        "the kill reached every shard"
    );
    for t in &in_a {
        t.exit_and_reap();
    }
    assert!(!a.is_populated());
    assert!(root.is_populated(), "the root's own members");
    for t in &in_root {
        t.exit_and_reap();
    }
    assert!(!root.is_populated());
    assert_eq!(root.read("cgroup.procs").unwrap(), "");
    a.rmdir().unwrap();
}

/// Parents on their own threads fork children into their own cgroup through their
/// links (one anchor per parent): every child is listed once and killed by
/// `cgroup.kill`, `pids.current` is exact at rest with credits parked on each thread,
/// rmdir is EBUSY while any anchor has a member, and once everything is reaped and
/// dropped nothing (no anchor) keeps the cgroup alive.
#[test]
fn parents_forking_through_their_own_anchors() {
    let h = Hierarchy::new(Profile::Scalable);
    let a = h.root().mkdir("a").unwrap();
    a.set_pids_max(Limit::Value(1000)).unwrap();
    let weak_a = a.downgrade();
    let parents: Vec<Arc<FakeTask>> = (0..4).map(|i| fork(&a, 1 + i).unwrap()).collect();
    let children: Vec<Arc<FakeTask>> = parents
        .iter()
        .enumerate()
        .map(|(p, parent)| {
            let parent = parent.clone();
            std::thread::spawn(move || {
                let base = 1000 * (p as i32 + 1);
                // Churn first (credits parked on this thread), then 50 kept.
                for i in 0..200 {
                    fork_child(&parent, base + 500 + i).unwrap().exit_and_reap();
                }
                (0..50)
                    .map(|i| fork_child(&parent, base + i).unwrap())
                    .collect::<Vec<_>>()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    assert_eq!(a.pids_current(), 4 + 200);
    assert!(a.pids_peak() <= 4 + 200 + 4, "peak {}", a.pids_peak());
    let listed: Vec<i32> = a
        .read("cgroup.procs")
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(listed.len(), 204);
    let mut unique = listed.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), 204, "each member listed once");
    a.kill().unwrap();
    assert!(children.iter().chain(&parents).all(|t| t.kills() == 1));
    assert!(!a.is_populated(), "every killed member died");
    assert_eq!(a.pids_current(), 204, "zombies stay charged");
    for t in children.iter().chain(&parents) {
        t.link().release();
    }
    assert_eq!(a.pids_current(), 0);
    a.rmdir().unwrap();
    // A dead parent's link cannot fork into its removed cgroup.
    assert_eq!(parents[0].link().can_fork().map(|_| ()), Err(Errno::ENOENT));
    drop((a, children, parents));
    assert!(
        weak_a.upgrade().is_none(),
        "no anchor keeps the cgroup alive"
    );
}

/// A parent moved to another cgroup forks its next child there (its children's
/// anchor follows it), and the old cgroup can be removed once empty.
#[test]
fn a_moved_parent_forks_into_its_new_cgroup() {
    let h = Hierarchy::new(Profile::Scalable);
    let (a, b) = (h.root().mkdir("a").unwrap(), h.root().mkdir("b").unwrap());
    let parent = fork(&a, 1).unwrap();
    let first = fork_child(&parent, 2).unwrap();
    assert_eq!(first.link().cgroup(), a);
    b.attach(&parent.link()).unwrap();
    let second = fork_child(&parent, 3).unwrap();
    assert_eq!(second.link().cgroup(), b);
    assert_eq!(b.read("cgroup.procs").unwrap(), "1\n3\n");
    assert_eq!(a.read("cgroup.procs").unwrap(), "2\n");
    assert_eq!(a.rmdir(), Err(Errno::EBUSY));
    first.exit_and_reap();
    a.rmdir().unwrap();
    assert_eq!((a.pids_current(), b.pids_current()), (0, 2));
}
