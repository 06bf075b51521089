//! Cyclic numbering of `alloc_pid` (kernel/pid.c `alloc_pid` + `idr_alloc_cyclic`), in
//! both lock profiles.

mod common;

use common::{LINUX_NUMBERING, alloc, root, root_with_init, spawn_init};
use uproc_abi::{Errno, Profile};
use uproc_pidns::{alloc_pid, free_pid};

#[test]
fn fresh_namespace_gives_1_2_3() {
    for &p in Profile::ALL {
        let ns = root(p, 32768);
        let one = spawn_init(&ns);
        let (two, three) = (alloc(&ns), alloc(&ns));
        assert_eq!(
            [one.nr(), two.nr(), three.nr()],
            [1, 2, 3],
            "{p}: Linux numbers a fresh namespace 1, 2, 3"
        );
        assert_eq!(ns.nr_allocated(), 3);
    }
}

#[test]
fn freed_pid_not_reused_before_wrap() {
    for &p in Profile::ALL {
        let (ns, _init) = root_with_init(p, 32768);
        let two = alloc(&ns);
        assert_eq!(two.nr(), 2);
        free_pid(&two);
        let next = alloc(&ns);
        assert_eq!(
            next.nr(),
            3,
            "{p}: Linux hands out the number after the last one, not the lowest free"
        );
        let mut held = vec![next];
        for want in 4..=10 {
            let pid = alloc(&ns);
            assert_eq!(
                pid.nr(),
                want,
                "{p}: a freed 2 is not reused before the cursor wraps"
            );
            held.push(pid);
        }
    }
}

#[test]
fn pid_max_400_after_399_comes_300() {
    // Pins Linux's wrap order: `Scalable` hands numbers out in pool order instead
    // (tests/scalable_pool.rs), and never reports EAGAIN while any number is free.
    for &p in LINUX_NUMBERING {
        let (ns, _init) = root_with_init(p, 400);
        let mut held = Vec::new();
        for want in 2..=399 {
            let pid = alloc(&ns);
            assert_eq!(pid.nr(), want);
            held.push(pid);
        }
        // Free 2..=300 (index 0 holds 2).
        for pid in held.drain(..299) {
            free_pid(&pid);
        }
        let wrapped = alloc(&ns);
        assert_eq!(
            wrapped.nr(),
            300,
            "{p}: Linux wraps to RESERVED_PIDS (300) once the cursor passed 300, numbers end at pid_max - 1"
        );
    }
}

#[test]
fn numbers_below_300_never_auto_allocated_once_cursor_passed_300() {
    // Pins Linux's wrap order: `Scalable` hands numbers out in pool order instead
    // (tests/scalable_pool.rs), and never reports EAGAIN while any number is free.
    for &p in LINUX_NUMBERING {
        let (ns, _init) = root_with_init(p, 400);
        let mut held: Vec<_> = (2..=399).map(|_| alloc(&ns)).collect();
        // 2..=300 free again; 301..=399 taken.
        for pid in held.drain(..299) {
            free_pid(&pid);
        }
        assert_eq!(alloc(&ns).nr(), 300, "{p}: the wrap lands on 300");
        // Keep 300 (the temporary above was dropped, not freed: its number stays taken).
        assert_eq!(
            alloc_pid(&ns, &[], false).unwrap_err(),
            Errno::EAGAIN,
            "{p}: Linux reports EAGAIN although 2..=299 are free: automatic allocation never goes below 300 again"
        );
        assert_eq!(
            ns.nr_allocated(),
            1 + 99 + 1,
            "{p}: the failed fork left nothing behind"
        );
        let explicit = alloc_pid(&ns, &[5], true).expect("set_tid may still claim a low number");
        assert_eq!(explicit.nr(), 5);
    }
}

#[test]
fn floor_is_1_while_cursor_is_exactly_300() {
    for &p in Profile::ALL {
        let (ns, _init) = root_with_init(p, 1000);
        let mut held: Vec<_> = (2..=299).map(|_| alloc(&ns)).collect(); // cursor = 300
        ns.set_pid_max(301).unwrap();
        let _at_300 = alloc_pid(&ns, &[300], true).unwrap(); // set_tid does not move the cursor
        free_pid(&held.remove(0)); // 2 is free
        let pid = alloc(&ns);
        assert_eq!(
            pid.nr(),
            2,
            "{p}: Linux keys the 300 floor on cursor > 300; at exactly 300 it wraps to 1"
        );
    }
}

#[test]
fn full_namespace_gives_eagain_and_changes_nothing() {
    for &p in Profile::ALL {
        let (ns, _init) = root_with_init(p, 301);
        let _held: Vec<_> = (2..=300).map(|_| alloc(&ns)).collect();
        assert_eq!(ns.nr_allocated(), 300);
        assert_eq!(
            alloc_pid(&ns, &[], false).unwrap_err(),
            Errno::EAGAIN,
            "{p}: Linux turns idr ENOSPC into EAGAIN"
        );
        assert_eq!(
            ns.nr_allocated(),
            300,
            "{p}: a failed alloc leaks no number"
        );
        assert_eq!(ns.pids().len(), 300);
    }
}

#[test]
fn nested_exhaustion_at_outer_level_releases_inner_but_keeps_inner_cursor() {
    for &p in Profile::ALL {
        let (root_ns, _init) = root_with_init(p, 400);
        let child = root_ns.new_child().unwrap();
        let child_init = spawn_init(&child);
        assert_eq!(child_init.nspid(), vec![2, 1]);
        let mut held = Vec::new();
        while let Ok(pid) = alloc_pid(&root_ns, &[], false) {
            held.push(pid);
        }
        assert_eq!(root_ns.nr_allocated(), 399);
        assert_eq!(
            alloc_pid(&child, &[], false).unwrap_err(),
            Errno::EAGAIN,
            "{p}: Linux fails the fork with EAGAIN when an outer level is full"
        );
        assert_eq!(
            child.nr_allocated(),
            1,
            "{p}: the inner reservation was released"
        );
        assert!(
            child.find_pid(2).is_none(),
            "{p}: no half-built pid is visible"
        );
        // Make room in the root and fork again: the inner cursor stayed past 2.
        let freed_nr = held[340].nr();
        free_pid(&held.swap_remove(340));
        let pid = alloc(&child);
        assert_eq!(
            pid.nspid(),
            vec![freed_nr, 3],
            "{p}: Linux does not rewind the inner cursor after an outer failure"
        );
    }
}

#[test]
fn nr_allocated_counts_every_level() {
    for &p in Profile::ALL {
        let (root_ns, _init) = root_with_init(p, 32768);
        let child = root_ns.new_child().unwrap();
        let grandchild = child.new_child().unwrap();
        let a = spawn_init(&child);
        let b = alloc(&child);
        let c = spawn_init(&grandchild);
        assert_eq!(c.nspid(), vec![4, 3, 1]);
        let counts = || {
            [
                root_ns.nr_allocated(),
                child.nr_allocated(),
                grandchild.nr_allocated(),
            ]
        };
        assert_eq!(counts(), [4, 3, 1], "{p}: one number per level per pid");
        free_pid(&b);
        assert_eq!(counts(), [3, 2, 1]);
        free_pid(&c);
        free_pid(&a);
        assert_eq!(counts(), [1, 0, 0]);
        assert_eq!(root_ns.pids().len(), 1);
    }
}

#[test]
fn failed_alloc_changes_nothing() {
    for &p in Profile::ALL {
        let (root_ns, _init) = root_with_init(p, 500);
        let child = root_ns.new_child().unwrap();
        let _child_init = spawn_init(&child);
        let taken = alloc(&root_ns).nr();
        let before = (root_ns.nr_allocated(), child.nr_allocated());
        let errors = [
            (vec![5, taken], Errno::EEXIST), // inner reserved, outer in use
            (vec![5, 0], Errno::EINVAL),
            (vec![5, 500], Errno::EINVAL),
            (vec![5, 6, 7], Errno::EINVAL),
        ];
        for (set_tid, want) in errors {
            assert_eq!(
                alloc_pid(&child, &set_tid, true).unwrap_err(),
                want,
                "{p}: set_tid {set_tid:?}"
            );
            assert_eq!(
                (root_ns.nr_allocated(), child.nr_allocated()),
                before,
                "{p}: Linux rolls back every level on failure ({set_tid:?})"
            );
            assert!(
                child.find_pid(5).is_none(),
                "{p}: inner 5 must not be visible"
            );
        }
        assert_eq!(
            alloc_pid(&child, &[5], true).unwrap().nr(),
            5,
            "{p}: 5 is free again"
        );
    }
}
