//! Per-namespace `pid_max` (`/proc/sys/kernel/pid_max`, per namespace since 6.14;
//! selftest `pid_namespace/pid_max.c`).

mod common;

use common::{alloc, root, root_with_init, spawn_init};
use uproc_abi::{Errno, Profile};
use uproc_pidns::{PID_MAX_DEFAULT, PID_MAX_LIMIT, PID_MAX_MIN, PidMap, PidNamespace, alloc_pid};

#[test]
fn constants_match_linux() {
    assert_eq!(PID_MAX_DEFAULT, 32768, "Linux: PID_MAX_DEFAULT = 0x8000");
    assert_eq!(
        PID_MAX_LIMIT, 4_194_304,
        "Linux: PID_MAX_LIMIT = 4M on 64-bit"
    );
    assert_eq!(PID_MAX_MIN, 301, "Linux: pid_max_min = RESERVED_PIDS + 1");
}

#[test]
fn default_root_has_pid_max_32768() {
    for &p in Profile::ALL {
        let ns = root(p, PID_MAX_DEFAULT);
        assert_eq!(ns.pid_max(), 32768);
        assert_eq!(
            ns.new_child().unwrap().pid_max(),
            PID_MAX_LIMIT,
            "{p}: a new namespace starts at PID_MAX_LIMIT"
        );
    }
}

#[test]
fn set_pid_max_outside_301_to_4194304_is_einval() {
    for &p in Profile::ALL {
        let ns = root(p, 32768);
        for bad in [300, 0, -1, i32::MIN, PID_MAX_LIMIT + 1, i32::MAX] {
            assert_eq!(
                ns.set_pid_max(bad),
                Err(Errno::EINVAL),
                "{p}: proc_dointvec_minmax rejects {bad}"
            );
            assert_eq!(ns.pid_max(), 32768, "{p}: a rejected write changes nothing");
            assert_eq!(
                PidNamespace::new_root(&PidMap::new(p), bad).unwrap_err(),
                Errno::EINVAL
            );
        }
        for good in [301, PID_MAX_LIMIT, 1000] {
            assert_eq!(ns.set_pid_max(good), Ok(()));
            assert_eq!(ns.pid_max(), good);
        }
    }
}

#[test]
fn new_namespace_pid_max_reads_pid_max_limit_and_the_parent_limit_bounds_outer_levels() {
    for &p in Profile::ALL {
        let (root_ns, _init) = root_with_init(p, 32768);
        root_ns.set_pid_max(400).unwrap();
        let child = root_ns.new_child().unwrap();
        assert_eq!(
            child.pid_max(),
            PID_MAX_LIMIT,
            "{p}: since \"pid: Do not set pid_max in new pid namespaces\" a new namespace \
             reads 4194304, not its parent's value"
        );
        let grandchild = child.new_child().unwrap();
        assert_eq!(grandchild.pid_max(), PID_MAX_LIMIT);
        let other = root_ns.new_child().unwrap();
        let other_child = other.new_child().unwrap();
        other.set_pid_max(500).unwrap();
        assert_eq!(
            root_ns.pid_max(),
            400,
            "{p}: a child's write does not reach the parent"
        );
        assert_eq!(
            other_child.pid_max(),
            PID_MAX_LIMIT,
            "{p}: nor its own children"
        );
        assert_eq!(
            other.new_child().unwrap().pid_max(),
            PID_MAX_LIMIT,
            "{p}: not copied"
        );
        // The child's own level may use numbers up to its own (higher) limit ...
        let _child_init = spawn_init(&child);
        let high = alloc_pid(&child, &[3000], true).expect("the child's level is not bound by 400");
        assert_eq!(high.nr(), 3000);
        // ... but every pid of the child also needs a number below 400 in the root.
        assert_eq!(
            alloc_pid(&child, &[3001, 400], true).unwrap_err(),
            Errno::EINVAL,
            "{p}: the root level's number is checked against the root's pid_max"
        );
        let mut held = Vec::new();
        while let Ok(pid) = alloc_pid(&child, &[], false) {
            assert!(
                pid.nspid()[0] < 400,
                "{p}: outer numbers stay below the root's pid_max"
            );
            held.push(pid);
        }
        assert_eq!(
            alloc_pid(&child, &[], false).unwrap_err(),
            Errno::EAGAIN,
            "{p}: the root level is full at 400: the parent's limit bounds the child"
        );
        assert_eq!(
            root_ns.nr_allocated(),
            399,
            "{p}: numbers 1..=399 of the root are all used"
        );
        assert!(child.nr_allocated() < 400);
    }
}

#[test]
fn lowering_pid_max_keeps_high_numbers_and_wraps() {
    for &p in Profile::ALL {
        let (ns, _init) = root_with_init(p, 1000);
        let high = alloc_pid(&ns, &[900], true).unwrap();
        let _low: Vec<_> = (2..=320).map(|_| alloc(&ns)).collect(); // cursor 321
        ns.set_pid_max(320).unwrap();
        assert!(
            ns.find_pid(900).is_some_and(|p| p.nr() == 900),
            "{p}: existing pids stay"
        );
        assert_eq!(high.nr(), 900);
        assert_eq!(
            alloc_pid(&ns, &[], false).unwrap_err(),
            Errno::EAGAIN,
            "{p}: cursor past the new pid_max wraps to 300, and 300..320 are taken"
        );
        ns.set_pid_max(400).unwrap();
        let next = alloc(&ns).nr();
        if p == Profile::Scalable {
            // Pool order, not a cursor: any number of the raised range.
            assert!(
                (321..400).contains(&next),
                "{p}: {next} after raising pid_max"
            );
        } else {
            assert_eq!(next, 321, "{p}: raising it again continues at the cursor");
        }
    }
}

#[test]
fn nested_levels_use_their_own_pid_max() {
    for &p in Profile::ALL {
        let (root_ns, _init) = root_with_init(p, 32768);
        let child = root_ns.new_child().unwrap();
        child.set_pid_max(301).unwrap();
        let _child_init = spawn_init(&child);
        let held: Vec<_> = (2..=300).map(|_| alloc(&child)).collect();
        assert_eq!(held.last().unwrap().nspid(), vec![301, 300]);
        assert_eq!(
            alloc_pid(&child, &[], false).unwrap_err(),
            Errno::EAGAIN,
            "{p}: the child's level is full at its own pid_max"
        );
        assert_eq!(
            alloc(&root_ns).nr(),
            302,
            "{p}: the root level is not limited by the child"
        );
    }
}

/// A nested namespace's own `pid_max` is `PID_MAX_LIMIT`: when every number below its
/// ancestor's (lower) limit is in use there but the ancestor still has free numbers, the
/// fork succeeds with a number above that limit in the nested namespace, as Linux's
/// cursor goes on past it. (Under `Scalable` the nested pool normally stays below the
/// ancestor's limit; it goes beyond it only then.)
#[test]
fn nested_level_full_below_the_parent_limit_goes_on_to_its_own() {
    for &p in Profile::ALL {
        let (root_ns, _init) = root_with_init(p, 1000);
        let child = root_ns.new_child().unwrap();
        let _c_init = spawn_init(&child);
        // Child numbers 2..=300 with root numbers 500..=798 (clone3 set_tid per level).
        let _held: Vec<_> = (2..=300)
            .map(|nr| alloc_pid(&child, &[nr, nr + 498], true).expect("both numbers free"))
            .collect();
        root_ns.set_pid_max(301).unwrap();
        // The child now uses every number below 301, the root few of its numbers below 301.
        let pid = alloc_pid(&child, &[], false)
            .unwrap_or_else(|e| panic!("{p}: {e:?}: the root has free numbers below 301"));
        let [outer, inner] = pid.numbers() else {
            panic!("two levels")
        };
        assert!(outer.nr < 301, "{p}: root number {} >= pid_max", outer.nr);
        assert!(inner.nr >= 301, "{p}: child number {} was in use", inner.nr);
    }
}
