//! Every synchronisation primitive the lock-free parts of the crate use, in one place.
//!
//! Under `cfg(loom)` the atomics come from [loom], so `tests/loom_pids.rs` can explore
//! every interleaving of the hierarchical pids charge (crossbeam-epoch's `primitive`
//! module and sharded-slab's `sync.rs` do the same). `Arc`/`Weak` always come from
//! `std`: loom's `Arc` has no `Weak`, and the tree's ownership rules (children never
//! own parents' handles, members are held weakly) need one. The mutexes are
//! `parking_lot`'s (and the named [`uproc_abi::lockstat::NamedMutex`]); the loom model
//! never takes them, because it checks the part that has no lock.
//!
//! [loom]: https://docs.rs/loom

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering, fence};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering, fence};

pub(crate) use std::sync::{Arc, Weak};
