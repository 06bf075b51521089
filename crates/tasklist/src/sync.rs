//! The synchronisation primitives of this crate, in one place.
//!
//! Locks are `parking_lot`'s but for the per-process and per-task leaf locks (the
//! siglock, the `children` list, a task's `rare` slot), spin locks (the named global
//! locks come from `uproc_abi::lockstat`).
//! The atomics that carry lock-free state between a task and its parent (`exit_state`,
//! the stop/continue reports) come from here so that a `cfg(loom)` build swaps them
//! for loom's.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicPtr, AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering, fence,
};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicI32, AtomicPtr, AtomicU8, AtomicU16, AtomicU32, AtomicU64, AtomicUsize,
    Ordering, fence,
};

pub(crate) use parking_lot::{Condvar, Mutex, RwLock};
/// The type of the siglock, the `children` lists and a task's `rare` slot: one atomic a
/// round (`uproc_abi::spin`), for the short critical sections every life cycle takes
/// several of (Linux's `sighand->siglock` is a spinlock too).
pub(crate) use uproc_abi::spin::{SpinGuard, SpinMutex};
