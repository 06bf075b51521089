//! Loom models of a pid's task slot: the attach (one write of the `Weak`, then a
//! `Release` store of the state), lookups (an `Acquire` load, then the `Weak`'s
//! upgrade) and the release's detach (a store) racing each other, and the slot's drop
//! after them. loom checks every access to the slot's value against those orderings
//! (a lookup that read the value before the attach's write was visible is a data race
//! it reports); the assertions check that a lookup finds nothing or the task, and never
//! the task once the detach is known to have happened.
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p uproc-pidns --test loom_task_slot --release`.
#![cfg(loom)]
#![allow(unsafe_code)]

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;
use std::any::Any;
use std::sync::Arc;
use uproc_pidns::loom_model::task_slot;

type Task = Arc<dyn Any + Send + Sync>;

fn seen(slot: &uproc_pidns::TaskSlot) -> Option<u32> {
    slot.get().map(|a| *a.downcast::<u32>().unwrap())
}

/// The attach publishes while a lookup reads: the lookup finds nothing or the task
/// (complete: loom flags a read of the value unordered with its write).
#[test]
fn lookup_races_with_attach() {
    loom::model(|| {
        let slot = Arc::new(task_slot());
        let task: Task = Arc::new(7u32);
        let s2 = slot.clone();
        let t = thread::spawn(move || seen(&s2));
        // SAFETY: the slot's one attach; no other thread attaches it.
        unsafe { slot.attach(Arc::downgrade(&task)) };
        let got = t.join().unwrap();
        assert!(matches!(got, None | Some(7)), "{got:?}");
        assert_eq!(seen(&slot), Some(7));
    });
}

/// The release detaches while lookups read; a lookup that starts after the detach
/// (it read the flag set after it) never returns the task. The slot is dropped last,
/// after both lookups: its drop of the `Weak` is ordered after their reads.
#[test]
fn lookups_race_with_the_detach() {
    loom::model(|| {
        let slot = Arc::new(task_slot());
        let task: Task = Arc::new(7u32);
        // SAFETY: the slot's one attach, before any other thread exists.
        unsafe { slot.attach(Arc::downgrade(&task)) };
        let detached = Arc::new(AtomicBool::new(false));
        let (s2, d2) = (slot.clone(), detached.clone());
        let t = thread::spawn(move || {
            let after = d2.load(Ordering::Acquire);
            let got = seen(&s2);
            if after {
                assert!(got.is_none(), "a lookup after the detach found the task");
            }
            assert!(matches!(got, None | Some(7)), "{got:?}");
        });
        slot.detach();
        detached.store(true, Ordering::Release);
        assert!(seen(&slot).is_none());
        t.join().unwrap();
        drop(slot);
        drop(task);
    });
}

/// Attach, a lookup on another thread, and the task's last strong count dropped
/// there too: the lookup finds the task alive or nothing, never a dangling `Weak`,
/// and the slot (dropped on whichever thread lets it go last) frees the `Weak` once.
#[test]
fn lookup_races_with_the_task_s_end() {
    loom::model(|| {
        let slot = Arc::new(task_slot());
        let task: Task = Arc::new(7u32);
        // SAFETY: the slot's one attach, before any other thread exists.
        unsafe { slot.attach(Arc::downgrade(&task)) };
        let s2 = slot.clone();
        let t = thread::spawn(move || {
            let got = seen(&s2);
            assert!(matches!(got, None | Some(7)), "{got:?}");
            drop(s2);
        });
        slot.detach();
        drop(task);
        drop(slot);
        t.join().unwrap();
    });
}
