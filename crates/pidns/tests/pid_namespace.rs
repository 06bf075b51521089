//! The namespace tree, `struct pid` lifetime and visibility (kernel/pid_namespace.c,
//! `pid_nr_ns`, `disable_pid_allocation`; selftests `pid_namespace/`).

mod common;

use common::{alloc, root_with_init, spawn_init};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use uproc_abi::{Errno, Profile};
use uproc_pidns::{MAX_PID_NS_LEVEL, PidNamespace, alloc_pid, free_pid};

#[test]
fn level_32_is_allowed_and_level_33_is_enospc() {
    for &p in Profile::ALL {
        let (root_ns, _init) = root_with_init(p, 32768);
        let mut ns = root_ns;
        for level in 1..=MAX_PID_NS_LEVEL {
            ns = ns.new_child().expect("levels up to 32 exist");
            assert_eq!(ns.level(), level);
        }
        assert_eq!(
            ns.new_child().unwrap_err(),
            Errno::ENOSPC,
            "{p}: Linux refuses a pid namespace deeper than MAX_PID_NS_LEVEL (32)"
        );
        let deepest = alloc_pid(&ns, &[], false).unwrap();
        assert_eq!(deepest.level(), 32);
        assert_eq!(deepest.numbers().len(), 33);
        assert_eq!(deepest.nr(), 1);
        assert!(Arc::ptr_eq(deepest.ns(), &ns));
    }
}

#[test]
fn closed_namespace_alloc_is_enomem_and_changes_nothing() {
    for &p in Profile::ALL {
        let (root_ns, _init) = root_with_init(p, 32768);
        let child = root_ns.new_child().unwrap();
        let child_init = spawn_init(&child);
        let other = alloc(&child);
        assert!(child.is_adding());
        child.disable_pid_allocation();
        assert!(!child.is_adding());
        let before = (root_ns.nr_allocated(), child.nr_allocated());
        assert_eq!(
            alloc_pid(&child, &[], false).unwrap_err(),
            Errno::ENOMEM,
            "{p}: Linux keeps ENOMEM for a namespace whose init died"
        );
        assert_eq!(alloc_pid(&child, &[9], true).unwrap_err(), Errno::ENOMEM);
        assert_eq!((root_ns.nr_allocated(), child.nr_allocated()), before);
        // Earlier errors win over ENOMEM (it is checked last).
        assert_eq!(alloc_pid(&child, &[2], true).unwrap_err(), Errno::EEXIST);
        // The parent still allocates; the two ENOMEM forks reserved (and released) root
        // numbers 4 and 5 before the PIDNS_ADDING check, so its cursor moved past them.
        assert_eq!(
            alloc(&root_ns).nr(),
            6,
            "{p}: Linux checks PIDNS_ADDING after reserving"
        );
        free_pid(&other);
        free_pid(&child_init);
        assert_eq!(child.nr_allocated(), 0);
    }
}

#[test]
fn free_pid_returns_numbers_at_every_level_while_pid_object_lives() {
    for &p in Profile::ALL {
        let (root_ns, _init) = root_with_init(p, 32768);
        let child = root_ns.new_child().unwrap();
        let pid = spawn_init(&child);
        let handle = Arc::clone(&pid);
        assert_eq!(pid.nspid(), vec![2, 1]);
        free_pid(&pid);
        drop(pid);
        assert!(handle.is_freed());
        assert_eq!(
            handle.nr_in(&root_ns),
            2,
            "{p}: struct pid keeps its numbers"
        );
        assert_eq!(handle.nr_in(&child), 1);
        assert!(
            root_ns.find_pid(2).is_none(),
            "{p}: find_pid no longer finds it"
        );
        assert!(child.find_pid(1).is_none());
        assert_eq!((root_ns.nr_allocated(), child.nr_allocated()), (1, 0));
        // Both numbers are free for a new pid (set_tid proves it without a wrap).
        let reuse = alloc_pid(&child, &[1, 2], true).unwrap();
        assert_eq!(reuse.nspid(), vec![2, 1]);
        assert!(
            !Arc::ptr_eq(&reuse, &handle),
            "{p}: a new struct pid, never the old one"
        );
        assert!(Arc::ptr_eq(&root_ns.find_pid(2).unwrap(), &reuse));
    }
}

#[test]
fn nr_in_is_zero_in_sibling_and_deeper_namespaces() {
    for &p in Profile::ALL {
        let (root_ns, init) = root_with_init(p, 32768);
        let a = root_ns.new_child().unwrap();
        let b = root_ns.new_child().unwrap();
        let a_deep = a.new_child().unwrap();
        let in_a = spawn_init(&a);
        let in_b = spawn_init(&b);
        assert_eq!(in_a.nr_in(&a), 1);
        assert_eq!(in_a.nr_in(&root_ns), 2);
        assert_eq!(
            in_a.nr_in(&b),
            0,
            "{p}: Linux: invisible from a sibling namespace"
        );
        assert_eq!(
            in_a.nr_in(&a_deep),
            0,
            "{p}: invisible from a deeper namespace"
        );
        assert_eq!(
            init.nr_in(&a),
            0,
            "{p}: the root's init is invisible from a child"
        );
        assert_eq!(in_b.nr_in(&a), 0);
        assert_eq!(in_a.nspid_from(&a), vec![1]);
        assert_eq!(in_a.nspid_from(&root_ns), vec![2, 1]);
        assert!(in_a.nspid_from(&b).is_empty());
        assert!(
            a.find_pid(3).is_none(),
            "{p}: b's pid (3 in the root) is not in a's idr"
        );
        assert!(root_ns.is_same_or_ancestor_of(&a_deep));
        assert!(a.is_same_or_ancestor_of(&a));
        assert!(!b.is_same_or_ancestor_of(&a_deep));
        assert!(!a_deep.is_same_or_ancestor_of(&a));
    }
}

#[test]
fn find_pid_never_sees_unpublished_or_foreign_numbers() {
    for &p in Profile::ALL {
        let (ns, init) = root_with_init(p, 32768);
        assert!(Arc::ptr_eq(&ns.find_pid(1).unwrap(), &init));
        for nr in [0, -1, 2, 32767, i32::MAX, i32::MIN] {
            assert!(ns.find_pid(nr).is_none(), "{p}: nothing published at {nr}");
        }
        let pids: Vec<i32> = [alloc(&ns), alloc(&ns)].iter().map(|p| p.nr()).collect();
        assert_eq!(pids, vec![2, 3]);
        let listed: Vec<i32> = ns.pids().iter().map(|p| p.nr()).collect();
        assert_eq!(
            listed,
            vec![1, 2, 3],
            "{p}: pids() walks ascending like idr_get_next"
        );
    }
}

#[test]
fn reaper_wakeup_fires_when_a_closed_namespace_is_down_to_2_or_1_pids() {
    for &p in Profile::ALL {
        let (root_ns, _init) = root_with_init(p, 32768);
        let wakes = Arc::new(AtomicUsize::new(0));
        let seen_ns = Arc::new(AtomicUsize::new(0));
        let child = root_ns.new_child().unwrap();
        let child_id = child.id() as usize;
        let (w, s) = (Arc::clone(&wakes), Arc::clone(&seen_ns));
        assert!(
            root_ns
                .map()
                .set_reaper_wakeup(Box::new(move |ns: &Arc<PidNamespace>| {
                    w.fetch_add(1, Ordering::SeqCst);
                    s.store(ns.id() as usize, Ordering::SeqCst);
                }))
        );
        let pids: Vec<_> = (0..4)
            .map(|i| {
                if i == 0 {
                    spawn_init(&child)
                } else {
                    alloc(&child)
                }
            })
            .collect();
        free_pid(&pids[3]);
        assert_eq!(
            wakes.load(Ordering::SeqCst),
            0,
            "{p}: no wakeup while the namespace is open"
        );
        child.disable_pid_allocation();
        free_pid(&pids[2]); // 2 left
        assert_eq!(
            wakes.load(Ordering::SeqCst),
            1,
            "{p}: Linux wakes the reaper at 2"
        );
        assert_eq!(seen_ns.load(Ordering::SeqCst), child_id);
        free_pid(&pids[1]); // 1 left
        assert_eq!(wakes.load(Ordering::SeqCst), 2, "{p}: and at 1");
        free_pid(&pids[0]); // 0 left: the reaper itself is gone
        assert_eq!(
            wakes.load(Ordering::SeqCst),
            2,
            "{p}: Linux wakes only on 2 and 1, not when the last pid goes"
        );
    }
}

#[test]
fn failed_alloc_in_a_closed_namespace_wakes_its_reaper_as_free_pid_does() {
    for &p in Profile::ALL {
        let (root_ns, _init) = root_with_init(p, 32768);
        let woken = Arc::new(AtomicUsize::new(0));
        let w = woken.clone();
        let child = root_ns.new_child().unwrap();
        let child_id = child.id();
        root_ns.map().set_reaper_wakeup(Box::new(move |ns| {
            if ns.id() == child_id {
                w.fetch_add(1, Ordering::SeqCst);
            }
        }));
        let _child_init = spawn_init(&child);
        child.disable_pid_allocation();
        assert_eq!(alloc_pid(&child, &[], false).unwrap_err(), Errno::ENOMEM);
        assert_eq!(
            woken.load(Ordering::SeqCst),
            1,
            "{p}: the rolled-back reservation was counted while it was visible; the \
             dead init that checked then must be woken, as free_pid wakes it"
        );
        assert_eq!(child.nr_allocated(), 1, "{p}: only the init's pid is left");
        assert_eq!(alloc_pid(&child, &[2], true).unwrap_err(), Errno::ENOMEM);
        assert_eq!(
            woken.load(Ordering::SeqCst),
            2,
            "{p}: set_tid rollbacks too"
        );
    }
}

#[test]
fn map_walk_finds_every_live_pid_of_every_namespace_through_the_roots() {
    for &p in Profile::ALL {
        let (root_ns, init) = root_with_init(p, 32768);
        let child = root_ns.new_child().unwrap();
        let child_init = spawn_init(&child);
        let inner = alloc(&child);
        let outer = alloc(&root_ns);
        let map = root_ns.map();
        assert_eq!(
            map.count_pids_where(|_| true),
            4,
            "{p}: every live pid once"
        );
        let found = map
            .find_pid_where(|pid| pid.level() == 1 && pid.nr() == inner.nr())
            .expect("a nested pid is found through its root-level number");
        assert!(Arc::ptr_eq(&found, &inner), "{p}");
        free_pid(&inner);
        assert!(
            map.find_pid_where(|pid| Arc::ptr_eq(pid.ns(), &child) && pid.nr() != 1)
                .is_none(),
            "{p}: a freed pid is not found"
        );
        assert_eq!(map.count_pids_where(|pid| pid.level() == 1), 1, "{p}");
        // A second root on the same map is walked too; a dropped one is not.
        let other_root = PidNamespace::new_root(map, 1000).unwrap();
        let other_init = alloc(&other_root);
        assert_eq!(map.count_pids_where(|_| true), 4, "{p}");
        assert!(
            map.find_pid_where(|pid| std::ptr::eq(pid, &*other_init))
                .is_some()
        );
        free_pid(&other_init);
        drop((other_init, other_root));
        assert_eq!(map.count_pids_where(|_| true), 3, "{p}");
        drop((outer, child_init, init));
    }
}
