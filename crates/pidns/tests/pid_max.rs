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
        assert_eq!(ns.new_child().unwrap().pid_max(), 32768);
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
fn child_namespace_inherits_pid_max_at_creation() {
    for &p in Profile::ALL {
        let root_ns = root(p, 32768);
        root_ns.set_pid_max(5000).unwrap();
        let child = root_ns.new_child().unwrap();
        assert_eq!(
            child.pid_max(),
            5000,
            "{p}: create_pid_namespace copies the parent's pid_max"
        );
        let grandchild = child.new_child().unwrap();
        assert_eq!(grandchild.pid_max(), 5000);
        child.set_pid_max(400).unwrap();
        assert_eq!(
            root_ns.pid_max(),
            5000,
            "{p}: a child's write does not reach the parent"
        );
        assert_eq!(
            grandchild.pid_max(),
            5000,
            "{p}: an existing child keeps its copy"
        );
        assert_eq!(child.new_child().unwrap().pid_max(), 400);
        root_ns.set_pid_max(301).unwrap();
        assert_eq!(child.pid_max(), 400);
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
        assert_eq!(
            alloc(&ns).nr(),
            321,
            "{p}: raising it again continues at the cursor"
        );
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
