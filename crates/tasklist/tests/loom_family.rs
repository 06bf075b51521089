//! Loom model of the per-process locking (`Scalable`): a parent's exit (closing and
//! handing on its children list) races its child's exit, a waiter of the new parent,
//! a fork into the dying parent and the death of the reaper itself. Every child ends
//! on exactly one list (its current parent's), is notified to each parent exactly as
//! Linux does (its own exit notifies the parent of the moment; a reparented zombie is
//! re-notified), is reaped once, and no fork attaches to a closed list.
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p uproc-tasklist --test loom_family --release`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use uproc_tasklist::loom_model::family::World;

const INIT: usize = 0;

#[test]
fn exit_vs_reparent_vs_wait_notifies_and_reaps_once() {
    loom::model(|| {
        // init(0) <- P(1) <- C(2); P's reaper is init.
        let w = Arc::new(World::new(&[(0, 0, false), (0, 0, true), (1, 0, true)]));
        let p = {
            let w = w.clone();
            thread::spawn(move || w.exit(1))
        };
        let c = {
            let w = w.clone();
            thread::spawn(move || w.exit(2))
        };
        let mut reaped = Vec::new();
        reaped.extend(w.try_wait(INIT));
        p.join().unwrap();
        c.join().unwrap();
        while let Some(x) = w.try_wait(INIT) {
            reaped.push(x);
        }
        reaped.sort();
        assert_eq!(
            reaped,
            vec![1, 2],
            "init reaps P and the adopted C, once each"
        );
        let n = |g: usize| {
            w.groups[g]
                .notified
                .load(loom::sync::atomic::Ordering::Acquire)
        };
        assert_eq!(n(INIT), 2, "init hears of P, and of C exactly once");
        assert!(n(1) <= 1, "P heard of C at most once (if C died first)");
        assert!(w.lists_holding(2).is_empty() && w.lists_holding(1).is_empty());
        assert_eq!(*w.groups[2].parent.lock().unwrap(), INIT);
    });
}

#[test]
fn fork_into_a_dying_parent_is_handed_on_or_refused() {
    loom::model(|| {
        // init(0) <- P(1) <- C(2); D(3) is being forked by a thread of P.
        let w = Arc::new(World::new(&[
            (0, 0, false),
            (0, 0, true),
            (1, 0, true),
            (3, 0, false),
        ]));
        let p = {
            let w = w.clone();
            thread::spawn(move || w.exit(1))
        };
        let attached = w.fork(1, 3);
        p.join().unwrap();
        assert!(
            w.groups[1].children.lock().unwrap().list.is_empty(),
            "P's list was emptied"
        );
        for c in [2, 3] {
            let held = w.lists_holding(c);
            if c == 3 && !attached {
                assert!(held.is_empty(), "a refused fork is on no list");
            } else {
                assert_eq!(held, vec![INIT], "child {c} was handed on to init");
            }
        }
    });
}

#[test]
fn reparent_to_a_dying_reaper_moves_on_to_its_reaper() {
    loom::model(|| {
        // init(0) <- R(1, a subreaper) <- P(2, reaper R) <- C(3).
        let w = Arc::new(World::new(&[
            (0, 0, false),
            (0, 0, true),
            (1, 1, true),
            (2, 1, true),
        ]));
        let r = {
            let w = w.clone();
            thread::spawn(move || w.exit(1))
        };
        w.exit(2);
        r.join().unwrap();
        // Whatever the order, C ends on init's list, once, and no list is stranded.
        assert_eq!(w.lists_holding(3), vec![INIT], "C ends with init");
        assert_eq!(*w.groups[3].parent.lock().unwrap(), INIT);
        let p_at = w.lists_holding(2);
        assert_eq!(p_at, vec![INIT], "the zombie P ends with init too");
        assert!(w.groups[1].children.lock().unwrap().list.is_empty());
        assert!(w.groups[2].children.lock().unwrap().list.is_empty());
    });
}

#[test]
fn fork_into_a_childless_dying_parent_is_handed_on_or_refused() {
    loom::model(|| {
        // init(0) <- P(1), no child; D(2) is being forked by a thread of P while P's
        // last thread exits (skipping the hand-over when P never had a child).
        let w = Arc::new(World::new(&[(0, 0, false), (0, 0, true), (2, 0, false)]));
        let p = {
            let w = w.clone();
            thread::spawn(move || w.exit(1))
        };
        let attached = w.fork(1, 2);
        p.join().unwrap();
        let held = w.lists_holding(2);
        if attached {
            assert_eq!(held, vec![INIT], "D was handed on to init");
        } else {
            assert!(held.is_empty(), "a refused fork is on no list");
        }
    });
}

#[test]
fn adoption_by_a_childless_dying_reaper_moves_on() {
    loom::model(|| {
        // init(0) <- R(1, a subreaper, no child of its own on its list);
        // P(2, parent init, reaper R) <- C(3). P's death hands C to R while R dies.
        let w = Arc::new(World::new(&[
            (0, 0, false),
            (0, 0, true),
            (0, 1, true),
            (2, 0, true),
        ]));
        let r = {
            let w = w.clone();
            thread::spawn(move || w.exit(1))
        };
        w.exit(2);
        r.join().unwrap();
        assert_eq!(w.lists_holding(3), vec![INIT], "C ends with init, once");
        assert!(w.groups[1].children.lock().unwrap().list.is_empty());
    });
}
