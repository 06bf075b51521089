//! Every synchronisation primitive the lock-free parts of the crate use, in one place.
//!
//! Under `cfg(loom)` the atomics come from [loom], so `tests/loom_pids.rs` can explore
//! every interleaving of the hierarchical pids charge (crossbeam-epoch's `primitive`
//! module and sharded-slab's `sync.rs` do the same). `Arc`/`Weak` always come from
//! `std`: loom's `Arc` has no `Weak`, and the tree's ownership rules (children never
//! own parents' handles, members are held weakly) need one. The mutexes are
//! `parking_lot`'s (and the named [`uproc_abi::lockstat::NamedMutex`]); the loom models
//! take none of them, except the pids controller's exact-path lock ([`Mutex`]), which
//! comes from loom under `cfg(loom)` because the model checks what it excludes.
//!
//! [loom]: https://docs.rs/loom

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU8, AtomicU32, AtomicU64, Ordering, fence,
};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU8, AtomicU32, AtomicU64, Ordering, fence,
};

pub(crate) use std::sync::{Arc, Weak};

#[cfg(not(loom))]
pub(crate) use parking_lot::Mutex;

/// loom's mutex with `parking_lot`'s signature (no poisoning), for the pids controller's
/// exact path.
#[cfg(loom)]
#[derive(Debug)]
pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

#[cfg(loom)]
impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Mutex<T> {
        Mutex(loom::sync::Mutex::new(value))
    }

    pub(crate) fn lock(&self) -> loom::sync::MutexGuard<'_, T> {
        self.0
            .lock()
            .expect("a loom model thread panicked holding the lock")
    }
}
