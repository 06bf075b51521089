//! The ino allocator and the ino -> pid index (pidfs_add_pid / pidfs_remove_pid).

mod common;

use common::{World, both};
use proptest::prelude::*;
use std::collections::HashSet;
use std::sync::Arc;
use uproc_abi::{Errno, PidfdFlags, Profile, Signal, WaitStatus, lockstat};
use uproc_pidfs::{FileHandle, Pidfs};
use uproc_pidns::{PidMap, PidNamespace, alloc_pid, free_pid};

#[test]
fn first_ino_is_one() {
    both(|p| {
        let w = World::new(p);
        let pid = w.alloc_in(&w.root.clone());
        assert_eq!(pid.ino(), 1, "Linux: inode numbers start at 1");
    });
}

#[test]
fn inos_are_unique_and_never_reused_across_10k_alloc_free() {
    both(|p| {
        let w = World::new(p);
        let keep = w.alloc_in(&w.root.clone());
        let mut seen = HashSet::from([keep.ino()]);
        let mut last = keep.ino();
        for _ in 0..10_000 {
            let pid = alloc_pid(&w.root, &[], false).unwrap();
            assert_ne!(pid.ino(), 0, "every pid gets an ino when published");
            assert!(seen.insert(pid.ino()), "ino {} reused", pid.ino());
            if p == Profile::Linux618 {
                assert!(
                    pid.ino() > last,
                    "Linux618: one global counter, in creation order"
                );
            }
            last = pid.ino();
            free_pid(&pid);
        }
        assert_eq!(w.pidfs.index_len(), 1);
    });
}

#[test]
fn inos_are_unique_across_threads() {
    both(|p| {
        let w = Arc::new(World::new(p));
        // Read before the threads start: under `Scalable` the number is assigned on
        // first read, so this is what makes it the first pid's.
        let first = w.alloc_in(&w.root.clone());
        assert_eq!(first.ino(), 1);
        let all: Vec<Vec<u64>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    let w = w.clone();
                    s.spawn(move || {
                        (0..2_000)
                            .map(|_| {
                                let pid = alloc_pid(&w.root, &[], false).unwrap();
                                let ino = pid.ino();
                                free_pid(&pid);
                                ino
                            })
                            .collect()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let total: usize = all.iter().map(Vec::len).sum();
        let set: HashSet<u64> = all.into_iter().flatten().collect();
        assert_eq!(set.len(), total, "no two pids share an ino");
        assert!(!set.contains(&1), "1 went to the first pid");
    });
}

#[test]
fn find_by_ino_finds_published_pids_only() {
    both(|p| {
        let w = World::new(p);
        let pid = w.alloc_in(&w.root.clone());
        let found = w
            .pidfs
            .find_by_ino(pid.ino())
            .expect("published pid is indexed");
        assert!(Arc::ptr_eq(&found, &pid));
        assert!(
            w.pidfs.find_by_ino(0).is_none(),
            "ino 0 means never published"
        );
        assert!(w.pidfs.find_by_ino(pid.ino() + 1000).is_none());
        let other = alloc_pid(&w.root, &[], false).unwrap();
        free_pid(&other);
        assert!(
            w.pidfs.find_by_ino(other.ino()).is_none(),
            "free_pid removes the entry"
        );
    });
}

#[test]
fn index_holds_only_allocated_pids_after_churn() {
    both(|p| {
        let w = Arc::new(World::new(p));
        w.alloc_in(&w.root.clone());
        let kept: Vec<Vec<Arc<uproc_pidns::Pid>>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4u64)
                .map(|t| {
                    let w = w.clone();
                    s.spawn(move || {
                        let mut kept = Vec::new();
                        let mut live = Vec::new();
                        for i in 0..3_000u64 {
                            live.push(alloc_pid(&w.root, &[], false).unwrap());
                            if (i * 7 + t) % 3 != 0 {
                                let victim = live.swap_remove(((i * 31) as usize) % live.len());
                                free_pid(&victim);
                            }
                            if live.len() > 50 {
                                kept.push(live.pop().unwrap());
                            }
                        }
                        kept.extend(live);
                        kept
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let kept: Vec<_> = kept.into_iter().flatten().collect();
        assert_eq!(
            w.pidfs.index_len(),
            kept.len() + 1,
            "at rest: exactly the pids still allocated"
        );
        assert_eq!(w.pidfs.index_len(), w.root.nr_allocated());
        for pid in &kept {
            assert!(Arc::ptr_eq(&w.pidfs.find_by_ino(pid.ino()).unwrap(), pid));
        }
        for pid in &kept {
            free_pid(pid);
        }
        assert_eq!(w.pidfs.index_len(), 1);
    });
}

#[test]
fn two_runtimes_number_independently() {
    both(|p| {
        let a = World::new(p);
        let b = World::new(p);
        let pa = a.alloc_in(&a.root.clone());
        let pb = b.alloc_in(&b.root.clone());
        assert_eq!((pa.ino(), pb.ino()), (1, 1), "each runtime starts at 1");
        let mut sa = HashSet::new();
        let mut sb = HashSet::new();
        for _ in 0..300 {
            let x = alloc_pid(&a.root, &[], false).unwrap();
            let y = alloc_pid(&b.root, &[], false).unwrap();
            assert!(sa.insert(x.ino()) && sb.insert(y.ino()));
            free_pid(&x);
            free_pid(&y);
        }
        assert!(!sa.contains(&1) && !sb.contains(&1));
    });
}

#[test]
fn nested_namespace_pid_gets_one_ino() {
    both(|p| {
        let w = World::new(p);
        w.alloc_in(&w.root.clone());
        let ns = w.root.new_child().unwrap();
        let inner = w.alloc_in(&ns);
        assert_eq!(w.pidfs.index_len(), 2, "one entry per pid, not per level");
        assert!(Arc::ptr_eq(
            &w.pidfs.find_by_ino(inner.ino()).unwrap(),
            &inner
        ));
    });
}

#[test]
fn second_pidfs_on_a_map_is_not_installed() {
    let map = PidMap::new(Profile::Linux70);
    let first = Pidfs::new(&map);
    let second = Pidfs::new(&map);
    let root = PidNamespace::new_root(&map, 1000).unwrap();
    let pid = alloc_pid(&root, &[], false).unwrap();
    assert_eq!(first.index_len(), 1);
    assert_eq!(second.index_len(), 0);
    assert!(first.find_by_ino(pid.ino()).is_some());
}

/// A pidfd reaches the task list through the pidfs that made it: the map's installed
/// one (found through the pid's map, `Pidfs::of_map`) or, for a pidfs that is not
/// installed, its own backend; and it reports numbers in the namespace it was opened
/// from, whether or not that namespace is one of the pid's.
#[test]
fn a_pidfd_uses_the_backend_of_the_pidfs_that_made_it() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        assert!(std::ptr::eq(Pidfs::of_map(&w.map).unwrap(), &*w.pidfs));
        let second = Pidfs::new(&w.map);
        let fake2 = Arc::new(common::Fake::default());
        let backend2: Arc<dyn uproc_pidfs::PidfdBackend> = fake2.clone();
        second.set_backend(Arc::downgrade(&backend2));
        let task = w.fake.tasks.lock().get(&pid.ino()).cloned().unwrap();
        fake2.tasks.lock().insert(pid.ino(), task);

        let installed = w.open(&pid);
        let other = second
            .pidfd_prepare(&w.root, pid.clone(), PidfdFlags::empty())
            .unwrap();
        installed.send_signal(Signal::USR1).unwrap();
        other.send_signal(Signal::USR2).unwrap();
        let sigs =
            |f: &common::Fake| -> Vec<Signal> { f.signals.lock().iter().map(|s| s.1).collect() };
        assert_eq!(
            sigs(&w.fake),
            vec![Signal::USR1],
            "installed pidfs's backend"
        );
        assert_eq!(
            sigs(&fake2),
            vec![Signal::USR2],
            "the other pidfs's own backend"
        );

        // A viewer that is not one of the pid's namespaces: numbers read 0 there.
        let child_ns = w.root.new_child().unwrap();
        let blind = w
            .pidfs
            .pidfd_prepare(&child_ns, pid.clone(), PidfdFlags::empty())
            .unwrap();
        assert!(Arc::ptr_eq(blind.viewer_ns(), &child_ns));
        assert_eq!(blind.info(uproc_abi::InfoMask::PID), Err(Errno::EREMOTE));
        assert!(Arc::ptr_eq(installed.viewer_ns(), &w.root));
        w.kill_and_reap(&pid, WaitStatus::exited_with(0));
    });
}

#[test]
fn pidmap_lock_acquisitions_per_life_cycle() {
    const { assert!(lockstat::ENABLED, "tests run with uproc-abi/lockstat") };
    // Scalable: no pidmap_lock at all (numbers from per-thread batches, inos from
    // per-thread batches, a bucket lock of the sharded index).
    for (p, expected) in [
        (Profile::Linux618, 3),
        (Profile::Linux70, 2),
        (Profile::Scalable, 0),
    ] {
        let w = World::new(p);
        w.alloc_in(&w.root.clone());
        let before = w.map.pidmap_lock_stat().write;
        let pid = alloc_pid(&w.root, &[], false).unwrap();
        assert_eq!(
            w.pidfs.index_len(),
            2,
            "indexed by the time alloc_pid returns"
        );
        free_pid(&pid);
        assert_eq!(w.pidfs.index_len(), 1);
        let after = w.map.pidmap_lock_stat().write;
        assert_eq!(
            after - before,
            expected,
            "{p:?}: alloc + free take pidmap_lock {expected} times, pidfs adds none"
        );
        // Linux618 readers take pidmap_lock (6.x); Linux70 readers take a bucket lock.
        w.pidfs.find_by_ino(1);
        let reader = w.map.pidmap_lock_stat().write - after;
        assert_eq!(reader, if p == Profile::Linux618 { 1 } else { 0 });
    }
}

#[derive(Debug, Clone)]
enum Op {
    Alloc,
    Free(usize),
    Find(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Alloc),
        2 => any::<usize>().prop_map(Op::Free),
        1 => any::<usize>().prop_map(Op::Find),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Against a reference model: the index holds exactly the live pids, every ino is
    /// new, and freed inos are never found again.
    #[test]
    fn index_matches_a_reference_model(ops in proptest::collection::vec(op(), 1..200), profile in 0..Profile::ALL.len()) {
        let p = Profile::ALL[profile];
        let w = World::new(p);
        let mut live = vec![w.alloc_in(&w.root.clone())];
        let mut freed = Vec::new();
        let mut seen = HashSet::from([live[0].ino()]);
        for op in ops {
            match op {
                Op::Alloc => {
                    let pid = alloc_pid(&w.root, &[], false).unwrap();
                    prop_assert!(seen.insert(pid.ino()));
                    live.push(pid);
                }
                Op::Free(i) if live.len() > 1 => {
                    let pid = live.swap_remove(1 + i % (live.len() - 1));
                    free_pid(&pid);
                    freed.push(pid.ino());
                }
                Op::Find(i) => {
                    let pid = &live[i % live.len()];
                    prop_assert!(Arc::ptr_eq(&w.pidfs.find_by_ino(pid.ino()).unwrap(), pid));
                }
                Op::Free(_) => {}
            }
            prop_assert_eq!(w.pidfs.index_len(), live.len());
        }
        for ino in freed {
            prop_assert!(w.pidfs.find_by_ino(ino).is_none());
        }
    }
}

#[test]
fn scalable_indexes_only_pids_that_had_a_pidfd_and_finds_the_others_by_walking() {
    let w = World::new(Profile::Scalable);
    let init = w.spawn();
    let plain: Vec<_> = (0..20).map(|_| w.spawn()).collect();
    assert_eq!(w.pidfs.hashed_entries(), 0, "a fork adds no index entry");
    assert_eq!(w.pidfs.index_len(), 21, "every allocated pid is findable");
    for pid in &plain {
        let found = w.pidfs.find_by_ino(pid.ino()).expect("found by the walk");
        assert!(Arc::ptr_eq(&found, pid));
    }
    // A handle for a pid that never had a pidfd: ESTALE, as Linux.
    let h = FileHandle::from_bytes(FileHandle::TYPE_KERNFS, &plain[0].ino().to_le_bytes()).unwrap();
    assert_eq!(w.open_handle(&h).unwrap_err(), Errno::ESTALE);

    let fd = w.open(&plain[1]);
    let again = w.open(&plain[1]);
    assert_eq!(
        w.pidfs.hashed_entries(),
        1,
        "the first pidfd indexes the pid, once"
    );
    let h = FileHandle::from_bytes(FileHandle::TYPE_KERNFS, &fd.ino().to_le_bytes()).unwrap();
    let by_handle = w.open_handle(&h).expect("a pidfd'd pid opens by handle");
    assert_eq!(by_handle.ino(), fd.ino());
    drop((again, by_handle));

    w.kill_and_reap(&plain[1], WaitStatus::exited_with(0));
    assert_eq!(w.pidfs.hashed_entries(), 0, "free_pid drops the entry");
    assert!(w.pidfs.find_by_ino(fd.ino()).is_none(), "freed: not found");
    assert_eq!(w.open_handle(&h).unwrap_err(), Errno::ESTALE);
    // A pidfd made while the pid is being freed never leaves an entry behind.
    let late = plain[2].clone();
    let stale = w
        .pidfs
        .pidfd_prepare_stale(&w.root, late.clone(), PidfdFlags::empty());
    free_pid(&late);
    assert_eq!(w.pidfs.hashed_entries(), 0);
    w.pidfs
        .pidfd_prepare_stale(&w.root, late.clone(), PidfdFlags::empty());
    assert_eq!(
        w.pidfs.hashed_entries(),
        0,
        "a registration after the free adds nothing"
    );
    drop((stale, init));
}

/// Threads register pidfds while others free the same pids: at rest no entry outlives
/// its pid, and every pid still allocated that had a pidfd has exactly one.
#[test]
fn scalable_registration_racing_the_free_leaves_no_stale_entry() {
    let w = Arc::new(World::new(Profile::Scalable));
    let _init = w.spawn();
    for round in 0..200 {
        let pids: Vec<_> = (0..8).map(|_| w.spawn()).collect();
        std::thread::scope(|s| {
            let (a, b) = pids.split_at(4);
            for half in [a, b] {
                let w = &w;
                s.spawn(move || {
                    for pid in half {
                        let _ =
                            w.pidfs
                                .pidfd_prepare_stale(&w.root, pid.clone(), PidfdFlags::empty());
                    }
                });
            }
            s.spawn(|| {
                for pid in pids.iter().rev().step_by(2) {
                    free_pid(pid);
                }
            });
        });
        let live = pids.iter().filter(|p| !p.is_freed()).count();
        assert_eq!(
            w.pidfs.hashed_entries(),
            live,
            "round {round}: one entry per live pidfd'd pid"
        );
        for pid in pids.iter().filter(|p| !p.is_freed()) {
            free_pid(pid);
        }
        assert_eq!(w.pidfs.hashed_entries(), 0, "round {round}");
    }
}

/// `Scalable` numbers a pid when its ino is first read: not at fork, unique, the same
/// for every reader (first reads racing agree), and lookups by number assign none.
#[test]
fn scalable_ino_is_assigned_on_first_read() {
    let w = World::new(Profile::Scalable);
    let a = w.alloc_in(&w.root.clone());
    let b = alloc_pid(&w.root, &[], false).unwrap();
    let c = alloc_pid(&w.root, &[], false).unwrap();
    for p in [&a, &b, &c] {
        assert_eq!(p.ino_if_assigned(), None, "a fork makes no ino");
    }
    // A lookup by number walks the live pids without numbering them.
    assert!(w.pidfs.find_by_ino(1).is_none());
    assert_eq!(
        w.pidfs.index_len(),
        3,
        "every live pid is one pidfs numbers"
    );
    assert_eq!(a.ino_if_assigned(), None);
    // First read: the thread's next number; later reads: the same one.
    assert_eq!(c.ino(), 1);
    assert_eq!(c.ino_if_assigned(), Some(1));
    assert_eq!(a.ino(), 2);
    assert_eq!(c.ino(), 1);
    assert!(Arc::ptr_eq(&w.pidfs.find_by_ino(2).unwrap(), &a));
    assert_eq!(b.ino_if_assigned(), None);
    // First reads racing on one pid agree on one number.
    let seen: Vec<u64> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4).map(|_| s.spawn(|| b.ino())).collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(seen.iter().all(|&i| i == seen[0] && i != 0), "{seen:?}");
    assert!(![1, 2].contains(&seen[0]), "a number given twice: {seen:?}");
    for p in [&a, &b, &c] {
        free_pid(p);
    }
    assert_eq!(w.pidfs.index_len(), 0);
}

/// A pid allocated before pidfs was installed is never numbered, under every profile.
#[test]
fn pid_allocated_before_pidfs_has_no_ino() {
    for &p in Profile::ALL {
        let map = PidMap::new(p);
        let root = PidNamespace::new_root(&map, uproc_pidns::PID_MAX_DEFAULT).unwrap();
        let early = alloc_pid(&root, &[], false).unwrap();
        let _pidfs = Pidfs::new(&map);
        assert_eq!(early.ino(), 0, "{p:?}");
        assert_eq!(early.ino_if_assigned(), Some(0), "{p:?}");
        free_pid(&early);
    }
}
