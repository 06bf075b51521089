//! Loom model of a link's phase in the root of a listing hierarchy (`Scalable`: the
//! root keeps no member set, so a listed link is linked, unlinked and moved out by
//! compare-exchange while the locked steps still run under the link's locks): post_fork
//! against an early exit and reap, exit against a migration out of the root, reap
//! against a migration, a migration into the root against an exit. Whatever the order,
//! every step decides on one phase, the link ends unlinked, and it is never left in a
//! member set after its exit. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p uproc-cgroup --test loom_phase --release`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;
use uproc_cgroup::loom_model::Phase;

#[test]
fn post_fork_against_an_early_exit_and_reap() {
    loom::model(|| {
        let link = Arc::new(Phase::prepared());
        // Raised by the exiting side before each step (`Release`): what post_fork found
        // must have come from a step that had begun.
        let steps = Arc::new(AtomicUsize::new(0));
        let (l2, s2) = (link.clone(), steps.clone());
        // The child is visible before post_fork: it may exit and be reaped first.
        let exiter = thread::spawn(move || {
            s2.store(1, Ordering::Release);
            l2.leave(false);
            s2.store(2, Ordering::Release);
            l2.leave(true);
        });
        let forked = link.post_fork();
        let seen = steps.load(Ordering::Acquire);
        match forked {
            Some(false) => assert!(seen >= 1, "found dead before any exit"),
            None => assert_eq!(seen, 2, "found released before any reap"),
            Some(true) => {}
        }
        exiter.join().unwrap();
        assert!(link.is_unlinked(), "exit and reap leave the link unlinked");
        assert!(!link.is_in_set());
        // Once post_fork ran, a later exit or reap finds nothing to do.
        link.leave(false);
        link.leave(true);
        assert!(link.is_unlinked() && !link.is_in_set());
    });
}

#[test]
fn post_fork_against_a_reap_without_exit() {
    loom::model(|| {
        let link = Arc::new(Phase::prepared());
        let l2 = link.clone();
        let reaper = thread::spawn(move || l2.leave(true));
        let forked = link.post_fork();
        reaper.join().unwrap();
        assert!(link.is_unlinked());
        // A reap before post_fork leaves it uncharged (None); after, it unlisted it.
        assert!(
            forked != Some(false),
            "no exit ran: post_fork never sees it dead"
        );
    });
}

#[test]
fn exit_against_migration_out_of_the_root() {
    loom::model(|| {
        let link = Arc::new(Phase::listed());
        let l2 = link.clone();
        let migrator = thread::spawn(move || l2.migrate_out());
        link.leave(false);
        let moved = migrator.join().unwrap();
        // Moved or not, the exit took it out: never a dead member in a set.
        assert!(link.is_unlinked());
        assert!(
            !link.is_in_set(),
            "a dead task left in a member set (moved: {moved})"
        );
        assert!(!link.is_linked());
    });
}

#[test]
fn reap_against_migration_out_of_the_root() {
    loom::model(|| {
        let link = Arc::new(Phase::listed());
        let l2 = link.clone();
        let migrator = thread::spawn(move || l2.migrate_out());
        link.leave(true);
        migrator.join().unwrap();
        assert!(link.is_unlinked());
        assert!(!link.is_in_set());
    });
}

#[test]
fn exit_against_migration_into_the_root() {
    loom::model(|| {
        let link = Arc::new(Phase::in_set());
        let l2 = link.clone();
        let migrator = thread::spawn(move || l2.migrate_in());
        link.leave(false);
        let moved = migrator.join().unwrap();
        assert!(link.is_unlinked(), "the exit unlinked it (moved: {moved})");
        assert!(!link.is_in_set());
        // A migration after the exit finds nothing to move.
        assert!(!link.migrate_in() && !link.migrate_out());
    });
}
