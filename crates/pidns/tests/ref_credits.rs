//! A namespace's reference-count credits (`Scalable`): the pids whose innermost
//! namespace it is take their namespace reference from per-thread credits while a
//! guard is open (`get_pid_ns`/`put_pid_ns` without the shared count): the runtime's
//! for its root namespace, a nested namespace's init's for that one. The namespace
//! must still live exactly as long as with plain `Arc`s: while any pid or handle
//! holds it, and not a moment longer once the guard is closed.

mod common;

use common::root_with_init;
use std::sync::{Arc, Weak};
use uproc_abi::Profile;
use uproc_pidns::{Pid, PidNamespace, alloc_pid, free_pid};

/// A root namespace of `profile`, with its init's pid (kept by the caller).
fn root(profile: Profile) -> (Arc<PidNamespace>, Arc<Pid>) {
    root_with_init(profile, 32768)
}

/// Forks and frees `n` pids on each of `threads` threads, keeping every `keep`th pid
/// alive (returned), as a runtime's workers do.
fn churn(ns: &Arc<PidNamespace>, threads: usize, n: usize, keep: usize) -> Vec<Arc<Pid>> {
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut kept = Vec::new();
                    for i in 0..n {
                        let pid = alloc_pid(ns, &[], false).expect("a free number");
                        free_pid(&pid);
                        if i % keep == 0 {
                            kept.push(pid);
                        }
                    }
                    kept
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn only_a_scalable_namespace_opens_credits_and_only_once() {
    for p in Profile::ALL {
        let (ns, _init) = root(*p);
        let guard = ns.pid_ref_credits();
        assert_eq!(guard.is_some(), *p == Profile::Scalable, "{p}");
        assert!(ns.pid_ref_credits().is_none(), "{p}: one guard at a time");
        let child = ns.new_child().unwrap();
        let child_guard = child.pid_ref_credits();
        assert_eq!(
            child_guard.is_some(),
            *p == Profile::Scalable,
            "{p}: nested"
        );
        assert!(
            child.pid_ref_credits().is_none(),
            "{p}: one guard at a time"
        );
        drop((guard, child_guard));
        // Closed again: a new guard may open them.
        assert_eq!(
            ns.pid_ref_credits().is_some(),
            *p == Profile::Scalable,
            "{p}"
        );
    }
}

#[test]
fn pids_keep_the_namespace_alive_and_the_closed_guard_frees_it_with_the_last_one() {
    let (ns, init) = root(Profile::Scalable);
    let weak: Weak<PidNamespace> = Arc::downgrade(&ns);
    let guard = ns.pid_ref_credits().expect("Scalable root");
    // Dropped pids leave credits in the threads' shards; kept ones hold references.
    let mut kept = churn(&ns, 4, 1000, 97);
    assert!(!kept.is_empty());
    free_pid(&init);
    kept.push(init);
    drop(ns);
    // The guard and the kept pids still hold the namespace.
    assert!(weak.upgrade().is_some());
    drop(guard);
    // Credits are back on the count: only the kept pids hold it now.
    assert!(
        weak.upgrade().is_some(),
        "a freed pid still reads its namespace"
    );
    assert!(kept.iter().all(|p| p.ns().level() == 0));
    drop(kept);
    assert!(
        weak.upgrade().is_none(),
        "the namespace outlived its last reference: a credit leaked"
    );
}

#[test]
fn a_pid_dropped_on_a_thread_that_never_forked_counts_plainly() {
    let (ns, init) = root(Profile::Scalable);
    let weak = Arc::downgrade(&ns);
    let guard = ns.pid_ref_credits().unwrap();
    let mut pids = churn(&ns, 1, 300, 1);
    free_pid(&init);
    pids.push(init);
    // Another thread (its own shard, no credits yet) drops them: more than a shard
    // keeps, so the rest go off the count directly.
    std::thread::spawn(move || drop(pids)).join().unwrap();
    drop((guard, ns));
    assert!(weak.upgrade().is_none());
}

/// The same for a nested namespace and its pids of three levels, churned on four
/// threads: only the innermost level counts its namespace (the outer ones borrow), and
/// it takes that count from the credits of the innermost namespace's guard.
#[test]
fn a_nested_namespaces_credits_balance_and_free_it_with_its_last_pid() {
    let (root, root_init) = root(Profile::Scalable);
    let child = root.new_child().unwrap();
    let child_init = alloc_pid(&child, &[], false).unwrap();
    child.set_child_reaper(Some(common::any_reaper()));
    let ns = child.new_child().unwrap();
    let init = alloc_pid(&ns, &[], false).unwrap();
    ns.set_child_reaper(Some(common::any_reaper()));
    let weak: Weak<PidNamespace> = Arc::downgrade(&ns);
    let guard = ns.pid_ref_credits().expect("Scalable nested");
    let plain = Arc::strong_count(&ns);
    let mut kept = churn(&ns, 4, 1000, 97);
    assert!(kept.iter().all(|p| p.numbers().len() == 3));
    // Every kept pid holds its count, from a credit: the shared count moved only by
    // the threads' bursts (64 at a time), never once per pid.
    assert_eq!(
        (Arc::strong_count(&ns) - plain) % 64,
        0,
        "no pid counted the namespace plainly"
    );
    free_pid(&init);
    kept.push(init);
    drop(ns);
    assert!(weak.upgrade().is_some());
    drop(guard);
    assert!(weak.upgrade().is_some(), "its pids still hold it");
    drop(kept);
    assert!(
        weak.upgrade().is_none(),
        "the namespace outlived its last reference: a credit leaked"
    );
    for pid in [child_init, root_init] {
        free_pid(&pid);
    }
}
