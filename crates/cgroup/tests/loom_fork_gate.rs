//! Loom model of the `Scalable` fork gate (an entry reserved in the anchor's member
//! set under its lock at can_fork, rmdir deciding under every anchor's lock): a
//! fork racing rmdir of its cgroup either links into a cgroup rmdir then refuses to
//! remove (EBUSY), or is refused (ENOENT) by a cgroup already removed; never both a
//! removed cgroup and a member linked into it. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p uproc-cgroup --test loom_fork_gate --release`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use uproc_cgroup::loom_model::Gate;

#[test]
fn rmdir_never_removes_a_cgroup_a_fork_links_into() {
    loom::model(|| {
        let gate = Arc::new(Gate::default());
        let g2 = gate.clone();
        let forker = thread::spawn(move || {
            let forked = g2.fork(0);
            // Refused (ENOENT) only once rmdir has removed the cgroup.
            assert!(
                forked || g2.is_removed(),
                "ENOENT from a cgroup not removed"
            );
            forked
        });
        let removed = gate.rmdir();
        let forked = forker.join().unwrap();
        assert!(!(removed && forked), "a fork linked into a removed cgroup");
        assert_eq!(gate.populated(), u64::from(forked));
        if !removed {
            // rmdir lost only to the fork (EBUSY), never spuriously.
            assert!(forked);
        }
    });
}

#[test]
fn two_forks_and_rmdir() {
    loom::model(|| {
        let gate = Arc::new(Gate::default());
        let (a, b) = (gate.clone(), gate.clone());
        // Two forking parents, each through its own anchor.
        let fa = thread::spawn(move || a.fork(0));
        let fb = thread::spawn(move || b.fork(1));
        let removed = gate.rmdir();
        let (a_forked, b_forked) = (fa.join().unwrap(), fb.join().unwrap());
        // A fork that saw rmdir deciding waited for the decision: refused only if the
        // cgroup is removed (rmdir failing on the other fork lets it through).
        assert!(
            (a_forked && b_forked) || removed,
            "ENOENT from a cgroup not removed"
        );
        let forked = u64::from(a_forked) + u64::from(b_forked);
        assert_eq!(gate.populated(), forked);
        assert!(
            !(removed && forked > 0),
            "a fork linked into a removed cgroup"
        );
        // Once closed, the gate stays closed.
        if removed {
            assert!(!gate.fork(0) && !gate.fork(1));
        }
    });
}
