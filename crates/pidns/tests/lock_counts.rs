//! `pidmap_lock` acquisitions per operation, per profile (feature `lockstat`, enabled for
//! the tests through the dev-dependency on `uproc-abi`). Counts are deterministic.

mod common;

use common::{alloc, root_with_init, spawn_init};
use std::sync::Arc;
use uproc_abi::Profile;
use uproc_pidns::{PidNamespace, alloc_pid, free_pid};

fn acquisitions(ns: &Arc<PidNamespace>) -> u64 {
    ns.map().pidmap_lock_stat().write
}

/// Lock acquisitions taken by `f`.
fn count<R>(ns: &Arc<PidNamespace>, f: impl FnOnce() -> R) -> (u64, R) {
    let before = acquisitions(ns);
    let r = f();
    (acquisitions(ns) - before, r)
}

/// `Scalable` never takes `pidmap_lock`; the Linux profiles take it once.
fn once_but_scalable(p: Profile) -> u64 {
    u64::from(p != Profile::Scalable)
}

#[test]
fn lockstat_is_compiled_in_for_tests() {
    // The dev-dependency on uproc-abi enables `lockstat`, so counts are real numbers.
    const { assert!(uproc_abi::lockstat::ENABLED) };
    let (ns, _init) = root_with_init(Profile::Linux70, 32768);
    assert_eq!(ns.map().pidmap_lock_stat().name, "pidmap_lock");
    assert!(acquisitions(&ns) > 0, "the init's allocation was counted");
}

#[test]
fn single_level_alloc_takes_pidmap_lock_twice_in_618_once_in_70() {
    for &p in Profile::ALL {
        let (ns, _init) = root_with_init(p, 32768);
        let (n, pid) = count(&ns, || alloc(&ns));
        let want = match p {
            Profile::Linux618 => 2, // reserve; publish
            Profile::Linux70 => 1,
            Profile::Scalable => 0,
        };
        assert_eq!(
            n, want,
            "{p}: pidmap_lock acquisitions for a single-level alloc_pid"
        );
        let (n, ()) = count(&ns, || free_pid(&pid));
        assert_eq!(
            n,
            once_but_scalable(p),
            "{p}: free_pid takes pidmap_lock once"
        );
    }
}

#[test]
fn nested_alloc_takes_one_per_level_plus_publish_in_618() {
    for &p in Profile::ALL {
        let (root_ns, _init) = root_with_init(p, 32768);
        let mut ns = Arc::clone(&root_ns);
        for level in 1..=3u64 {
            ns = ns.new_child().unwrap();
            let (n, pid) = count(&ns, || spawn_init(&ns));
            let want = match p {
                Profile::Linux618 => level + 2, // level + 1 reservations, 1 publish
                Profile::Linux70 => 1,
                Profile::Scalable => 0,
            };
            assert_eq!(
                n, want,
                "{p}: pidmap_lock acquisitions for alloc_pid at level {level}"
            );
            let (n, ()) = count(&ns, || free_pid(&pid));
            assert_eq!(
                n,
                once_but_scalable(p),
                "{p}: free_pid at level {level} takes pidmap_lock once"
            );
        }
    }
}

#[test]
fn failed_allocs_roll_back_under_one_more_acquisition_in_618_only() {
    for &p in Profile::ALL {
        let (root_ns, _init) = root_with_init(p, 32768);
        let child = root_ns.new_child().unwrap();
        let _child_init = spawn_init(&child);
        let taken = alloc(&root_ns).nr();
        // (what, set_tid, expected errno, 6.18 count, 7.0 count)
        let cases: [(&str, Vec<i32>, uproc_abi::Errno, u64, u64); 4] = [
            (
                "set_tid_size",
                vec![1, 2, 3],
                uproc_abi::Errno::EINVAL,
                0,
                0,
            ),
            ("validation", vec![0], uproc_abi::Errno::EINVAL, 1, 0),
            ("inner EEXIST", vec![1], uproc_abi::Errno::EEXIST, 2, 1),
            (
                "outer EEXIST",
                vec![9, taken],
                uproc_abi::Errno::EEXIST,
                3,
                1,
            ),
        ];
        for (what, set_tid, errno, n618, n70) in cases {
            let (n, r) = count(&child, || alloc_pid(&child, &set_tid, true));
            assert_eq!(r.unwrap_err(), errno, "{p}: {what}");
            let want = match p {
                Profile::Linux618 => n618,
                Profile::Linux70 => n70,
                Profile::Scalable => 0,
            };
            assert_eq!(
                n, want,
                "{p}: pidmap_lock acquisitions for a failed alloc ({what})"
            );
        }
        child.disable_pid_allocation();
        let (n, r) = count(&child, || alloc_pid(&child, &[], false));
        assert_eq!(r.unwrap_err(), uproc_abi::Errno::ENOMEM);
        let want = match p {
            Profile::Linux618 => 2 + 1 + 1,
            Profile::Linux70 => 1,
            Profile::Scalable => 0,
        };
        assert_eq!(
            n, want,
            "{p}: ENOMEM: reserve x2, publish-phase check, rollback (6.18)"
        );
    }
}

#[test]
fn validation_failures_take_no_lock_in_70() {
    let (ns, _init) = root_with_init(Profile::Linux70, 32768);
    let (n, r) = count(&ns, || alloc_pid(&ns, &[0], true));
    assert!(r.is_err());
    assert_eq!(
        n, 0,
        "Linux 7.0 validates set_tid before taking pidmap_lock"
    );
    let (n, r) = count(&ns, || alloc_pid(&ns, &[5, 6], true));
    assert!(r.is_err());
    assert_eq!(n, 0, "set_tid_size is checked before anything else");
}

#[test]
fn disable_pid_allocation_takes_pidmap_lock_once() {
    for &p in Profile::ALL {
        let (ns, _init) = root_with_init(p, 32768);
        let (n, ()) = count(&ns, || ns.disable_pid_allocation());
        assert_eq!(
            n,
            once_but_scalable(p),
            "{p}: disable_pid_allocation clears PIDNS_ADDING under pidmap_lock (Scalable: an atomic)"
        );
    }
}

/// `Scalable`: no `pidmap_lock` at all, and the per-namespace pool lock (counted with
/// the global locks) amortised over a batch: at most 2 acquisitions (a refill and a
/// flush) per 128 life cycles, whatever the number of levels.
#[test]
fn scalable_takes_no_pidmap_lock_and_amortises_the_pool_lock() {
    for levels in 0..=2u32 {
        let (root_ns, _init) = root_with_init(Profile::Scalable, 32768);
        let mut ns = Arc::clone(&root_ns);
        let mut inits = Vec::new();
        for _ in 0..levels {
            ns = ns.new_child().unwrap();
            inits.push(spawn_init(&ns));
        }
        let map = Arc::clone(ns.map());
        let pool_before = map.pool_lock_stat().write;
        const CYCLES: u64 = 6400;
        let (n, ()) = count(&ns, || {
            for _ in 0..CYCLES {
                let pid = alloc(&ns);
                free_pid(&pid);
            }
        });
        assert_eq!(n, 0, "levels {levels}: no pidmap_lock");
        let pool = map.pool_lock_stat();
        assert_eq!(pool.name, "pidns_pool_lock");
        let per_level = (pool.write - pool_before) as f64 / (CYCLES * u64::from(levels + 1)) as f64;
        assert!(
            pool.write > pool_before,
            "levels {levels}: refills are counted"
        );
        assert!(
            per_level <= 2.0 / 128.0 + 0.001,
            "levels {levels}: {per_level} pool-lock acquisitions per life cycle and level"
        );
    }
}

/// `Scalable`: `pidns_pool_lock` reports sampled hold and wait times with its count,
/// as every global lock does, summed over the namespaces' pools; a namespace dropped
/// keeps its share (the figures never go down, so a benchmark's deltas stay valid).
#[test]
fn scalable_pool_lock_stat_samples_and_outlives_its_namespaces() {
    let previous = uproc_abi::lockstat::set_sample_one_in(1);
    let (root_ns, _init) = root_with_init(Profile::Scalable, 32768);
    let map = Arc::clone(root_ns.map());
    let child = root_ns.new_child().unwrap();
    let child_init = spawn_init(&child);
    for _ in 0..20_000 {
        free_pid(&alloc(&child));
    }
    let with_child = map.pool_lock_stat();
    assert!(with_child.write > 0, "refills are counted");
    assert!(with_child.hold.samples > 0, "and timed: {with_child:?}");
    assert_eq!(with_child.hold.samples, with_child.wait.samples);
    free_pid(&child_init);
    drop((child_init, child));
    let after = map.pool_lock_stat();
    assert!(
        after.write >= with_child.write,
        "{after:?} vs {with_child:?}"
    );
    assert!(after.hold.samples >= with_child.hold.samples);
    assert!(after.hold.total_ns >= with_child.hold.total_ns);
    uproc_abi::lockstat::set_sample_one_in(previous);
}
