//! clone3's `set_tid` through `alloc_pid` (selftest `clone3/clone3_set_tid.c`, and
//! `pid_namespace/pidns_init_via_setns.c` for the init-first rule).

mod common;

use common::{alloc, root, root_with_init, spawn_init};
use uproc_abi::{Errno, Profile};
use uproc_pidns::{alloc_pid, free_pid};

#[test]
fn three_level_set_tid_gives_nspid_n_42_1() {
    for &p in Profile::ALL {
        let (root_ns, _init) = root_with_init(p, 32768);
        let l1 = root_ns.new_child().unwrap();
        let _l1_init = spawn_init(&l1);
        let l2 = l1.new_child().unwrap();
        let pid = alloc_pid(&l2, &[1, 42, 1000], true).expect("set_tid [1, 42, 1000]");
        assert_eq!(
            pid.nspid(),
            vec![1000, 42, 1],
            "{p}: set_tid[0] is the innermost level; NSpid prints outermost first"
        );
        assert_eq!(pid.nr_in(&l1), 42);
        assert!(std::sync::Arc::ptr_eq(&l2.find_pid(1).unwrap(), &pid));
        assert!(std::sync::Arc::ptr_eq(&l1.find_pid(42).unwrap(), &pid));
        assert!(std::sync::Arc::ptr_eq(
            &root_ns.find_pid(1000).unwrap(),
            &pid
        ));
    }
}

#[test]
fn partial_set_tid_allocates_outer_levels_cyclically() {
    for &p in Profile::ALL {
        let (root_ns, _init) = root_with_init(p, 32768);
        let l1 = root_ns.new_child().unwrap();
        let pid = alloc_pid(&l1, &[1], true).unwrap();
        assert_eq!(
            pid.nspid(),
            vec![2, 1],
            "{p}: levels beyond set_tid_size are automatic"
        );
    }
}

#[test]
fn set_tid_longer_than_level_plus_one_is_einval() {
    for &p in Profile::ALL {
        let (root_ns, _init) = root_with_init(p, 32768);
        assert_eq!(
            alloc_pid(&root_ns, &[7, 8], true).unwrap_err(),
            Errno::EINVAL
        );
        let l1 = root_ns.new_child().unwrap();
        assert_eq!(
            alloc_pid(&l1, &[1, 7, 8], true).unwrap_err(),
            Errno::EINVAL,
            "{p}: Linux rejects set_tid_size > level + 1 before anything else"
        );
        // Checked even before the capability.
        assert_eq!(
            alloc_pid(&l1, &[1, 7, 8], false).unwrap_err(),
            Errno::EINVAL
        );
        assert_eq!((root_ns.nr_allocated(), l1.nr_allocated()), (1, 0));
    }
}

#[test]
fn set_tid_below_1_is_einval() {
    for &p in Profile::ALL {
        let (ns, _init) = root_with_init(p, 32768);
        for tid in [0, -1, i32::MIN] {
            assert_eq!(
                alloc_pid(&ns, &[tid], true).unwrap_err(),
                Errno::EINVAL,
                "{p}: Linux rejects set_tid {tid} < 1"
            );
        }
        assert_eq!(ns.nr_allocated(), 1);
    }
}

#[test]
fn set_tid_at_or_above_pid_max_is_einval() {
    for &p in Profile::ALL {
        let (ns, _init) = root_with_init(p, 500);
        assert_eq!(
            alloc_pid(&ns, &[500], true).unwrap_err(),
            Errno::EINVAL,
            "{p}: numbers are < pid_max"
        );
        assert_eq!(
            alloc_pid(&ns, &[i32::MAX], true).unwrap_err(),
            Errno::EINVAL
        );
        assert_eq!(alloc_pid(&ns, &[499], true).unwrap().nr(), 499);
        // Each level is checked against its own pid_max.
        let child = ns.new_child().unwrap();
        child.set_pid_max(400).unwrap();
        assert_eq!(
            alloc_pid(&child, &[1, 450], true).unwrap().nspid(),
            vec![450, 1]
        );
        child.set_child_reaper(Some(common::any_reaper()));
        assert_eq!(
            alloc_pid(&child, &[450], true).unwrap_err(),
            Errno::EINVAL,
            "{p}: the child's pid_max (400) bounds its own level"
        );
    }
}

#[test]
fn set_tid_without_checkpoint_restore_is_eperm() {
    for &p in Profile::ALL {
        let (ns, _init) = root_with_init(p, 32768);
        assert_eq!(
            alloc_pid(&ns, &[77], false).unwrap_err(),
            Errno::EPERM,
            "{p}: Linux requires CAP_CHECKPOINT_RESTORE for set_tid"
        );
        assert!(ns.find_pid(77).is_none());
        assert_eq!(ns.nr_allocated(), 1);
        // A range error is reported before the capability.
        assert_eq!(alloc_pid(&ns, &[0], false).unwrap_err(), Errno::EINVAL);
        // Without set_tid no capability is needed.
        assert_eq!(alloc_pid(&ns, &[], false).unwrap().nr(), 2);
    }
}

#[test]
fn set_tid_in_use_is_eexist() {
    for &p in Profile::ALL {
        let (ns, _init) = root_with_init(p, 32768);
        let two = alloc(&ns);
        assert_eq!(
            alloc_pid(&ns, &[2], true).unwrap_err(),
            Errno::EEXIST,
            "{p}: Linux reports a taken set_tid as EEXIST"
        );
        // The capability check comes first.
        assert_eq!(alloc_pid(&ns, &[2], false).unwrap_err(), Errno::EPERM);
        assert_eq!(ns.nr_allocated(), 2);
        free_pid(&two);
        assert_eq!(
            alloc_pid(&ns, &[2], true).unwrap().nr(),
            2,
            "{p}: free again"
        );
    }
}

#[test]
fn set_tid_does_not_move_the_cursor() {
    for &p in Profile::ALL {
        let (ns, _init) = root_with_init(p, 32768);
        let _a = alloc_pid(&ns, &[100], true).unwrap();
        assert_eq!(
            alloc(&ns).nr(),
            2,
            "{p}: idr_alloc with a fixed tid leaves idr_next alone"
        );
        let _b = alloc_pid(&ns, &[3], true).unwrap();
        assert_eq!(
            alloc(&ns).nr(),
            4,
            "{p}: the cyclic search skips a taken number"
        );
    }
}

#[test]
fn first_pid_of_init_less_namespace_must_be_1() {
    for &p in Profile::ALL {
        let (root_ns, _init) = root_with_init(p, 32768);
        let child = root_ns.new_child().unwrap();
        assert_eq!(
            alloc_pid(&child, &[5], true).unwrap_err(),
            Errno::EINVAL,
            "{p}: Linux: PID 1 (init) must be created first"
        );
        assert_eq!((root_ns.nr_allocated(), child.nr_allocated()), (1, 0));
        let first = alloc_pid(&child, &[1], true).unwrap();
        assert_eq!(first.nspid(), vec![2, 1]);
        // Until the init is installed as child_reaper, any other number is refused.
        assert_eq!(
            alloc_pid(&child, &[], false).unwrap_err(),
            Errno::EINVAL,
            "{p}: an automatic number other than 1 in a reaper-less namespace is EINVAL"
        );
        assert_eq!(
            child.nr_allocated(),
            1,
            "{p}: the refused number was released"
        );
        child.set_child_reaper(Some(common::any_reaper()));
        // The refused attempt consumed 2 (the cursor is not rewound once a pid exists);
        // it failed at the inner level, so the root never saw it.
        assert_eq!(alloc(&child).nspid(), vec![3, 3]);
    }
}

#[test]
fn a_first_process_failing_after_alloc_pid_closes_the_namespace_an_alloc_failure_does_not() {
    for &p in Profile::ALL {
        // The first pid was allocated, then freed (copy_process failed after
        // alloc_pid): `free_pid`'s `case PIDNS_ADDING` closes the namespace, as Linux
        // does (measured on 6.18: the next `fork()` after such a failure is ENOMEM).
        let ns = root(p, 32768);
        let first = alloc(&ns);
        assert_eq!(first.nr(), 1);
        free_pid(&first);
        assert!(!ns.is_adding(), "{p}: closed");
        assert_eq!(
            alloc_pid(&ns, &[], false).unwrap_err(),
            Errno::ENOMEM,
            "{p}: no fork after the first process failed"
        );
        assert_eq!(ns.nr_allocated(), 0, "{p}: and nothing leaked");
        // Once an init attached, freeing every pid does not close it (only the
        // init's death does).
        let ns = root(p, 32768);
        let init = alloc(&ns);
        ns.set_child_reaper(Some(common::any_reaper()));
        free_pid(&init);
        assert!(ns.is_adding(), "{p}: an init attached, still open");

        // The first fork into a child namespace failed at the outer level (EAGAIN).
        let (root_ns, _init) = root_with_init(p, 301);
        let child = root_ns.new_child().unwrap();
        let mut held: Vec<_> = (2..=300).map(|_| alloc(&root_ns)).collect();
        assert_eq!(alloc_pid(&child, &[], false).unwrap_err(), Errno::EAGAIN);
        assert_eq!(child.nr_allocated(), 0);
        free_pid(&held.pop().unwrap());
        let init = alloc(&child);
        assert_eq!(
            init.nspid(),
            vec![300, 1],
            "{p}: the failed first fork does not push the next one past 1"
        );
    }
}

#[test]
fn set_tid_other_than_1_without_init_is_einval_before_the_capability() {
    for &p in Profile::ALL {
        let (root_ns, _init) = root_with_init(p, 32768);
        let l1 = root_ns.new_child().unwrap();
        assert_eq!(
            alloc_pid(&l1, &[5], false).unwrap_err(),
            Errno::EINVAL,
            "{p}: Linux's alloc_pid checks \"PID 1 must be created first\" before \
             checkpoint_restore_ns_capable"
        );
        assert_eq!(
            alloc_pid(&l1, &[1], false).unwrap_err(),
            Errno::EPERM,
            "{p}: set_tid [1] is allowed by the init-first rule, then needs the capability"
        );
        assert_eq!(l1.nr_allocated(), 0, "{p}: nothing stays reserved");
        assert_eq!(root_ns.nr_allocated(), 1, "{p}: nothing stays reserved");
    }
}
