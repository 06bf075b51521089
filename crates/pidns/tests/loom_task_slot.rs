//! Loom models of a pid's task slot: the attach (a write), lookups (reads that upgrade
//! the `Weak`) and the release's clear (a write) racing each other. loom checks every
//! access to the slot's value against the lock's orderings; the assertions check that
//! a lookup never sees a half-written value and never finds the task after the clear.
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p uproc-pidns --test loom_task_slot --release`.
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;
use std::any::Any;
use std::sync::Arc;
use uproc_pidns::loom_model::task_slot;

type Task = Arc<dyn Any + Send + Sync>;

fn lookup(slot: &uproc_pidns::TaskSlot) -> Option<Task> {
    slot.read().as_ref().and_then(std::sync::Weak::upgrade)
}

/// The attach publishes while a lookup reads: the lookup finds nothing or the task.
#[test]
fn lookup_races_with_attach() {
    loom::model(|| {
        let slot = Arc::new(task_slot());
        let task: Task = Arc::new(7u32);
        let s2 = slot.clone();
        let t = thread::spawn(move || lookup(&s2).map(|a| *a.downcast::<u32>().unwrap()));
        *slot.write() = Some(Arc::downgrade(&task));
        let seen = t.join().unwrap();
        assert!(matches!(seen, None | Some(7)), "{seen:?}");
        assert_eq!(
            lookup(&slot).map(|a| *a.downcast::<u32>().unwrap()),
            Some(7)
        );
    });
}

/// The release clears while a lookup reads; a lookup that starts after the clear
/// finished (the flag) never returns the task.
#[test]
fn lookups_race_with_the_clear() {
    loom::model(|| {
        let slot = Arc::new(task_slot());
        let task: Task = Arc::new(7u32);
        *slot.write() = Some(Arc::downgrade(&task));
        let cleared = Arc::new(AtomicBool::new(false));
        let (s2, c2) = (slot.clone(), cleared.clone());
        let t = thread::spawn(move || {
            let after_clear = c2.load(Ordering::Acquire);
            let seen = lookup(&s2);
            if after_clear {
                assert!(seen.is_none(), "a lookup after the clear found the task");
            }
        });
        *slot.write() = None;
        cleared.store(true, Ordering::Release);
        assert!(lookup(&slot).is_none());
        t.join().unwrap();
        drop(task);
    });
}
