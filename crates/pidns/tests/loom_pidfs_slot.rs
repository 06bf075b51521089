//! Loom models of a pid's pidfs slot: two first opens initialising it at once (one
//! value wins, both see it) while a reader (an exit's notification) looks. loom checks
//! every access to the slot's value against the orderings (a read of the value not
//! ordered after its write is a data race it reports); the assertions check that every
//! caller sees the one value kept, and a reader nothing or that value.
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p uproc-pidns --test loom_pidfs_slot --release`.
#![cfg(loom)]

use loom::thread;
use std::any::Any;
use std::sync::Arc;
use uproc_pidns::PidfsSlot;
use uproc_pidns::loom_model::pidfs_slot;

type Value = Arc<dyn Any + Send + Sync>;

fn value_of(v: &Value) -> u32 {
    *v.downcast_ref::<u32>().expect("a u32")
}

fn init(slot: &PidfsSlot, n: u32) -> u32 {
    value_of(slot.get_or_init(|| Arc::new(n)))
}

#[test]
fn racing_initialisers_agree_and_a_reader_sees_nothing_or_the_winner() {
    loom::model(|| {
        let slot = Arc::new(pidfs_slot());
        let (s1, s2) = (slot.clone(), slot.clone());
        let a = thread::spawn(move || init(&s1, 1));
        let reader = thread::spawn(move || s2.get().map(value_of));
        let b = init(&slot, 2);
        let a = a.join().unwrap();
        let seen = reader.join().unwrap();
        assert_eq!(a, b, "both initialisers return the value kept");
        assert!(matches!(seen, None) || seen == Some(a), "{seen:?} vs {a}");
        assert_eq!(slot.get().map(value_of), Some(a));
    });
}

#[test]
fn a_set_value_is_never_replaced() {
    loom::model(|| {
        let slot = Arc::new(pidfs_slot());
        assert_eq!(init(&slot, 1), 1);
        let s1 = slot.clone();
        let t = thread::spawn(move || init(&s1, 2));
        assert_eq!(init(&slot, 3), 1);
        assert_eq!(t.join().unwrap(), 1);
    });
}
