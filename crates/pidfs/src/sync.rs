//! The lock-free primitives of the ino allocator: std's, or loom's under `cfg(loom)` so
//! `tests/loom_ino.rs` can explore every interleaving of the batch refill.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::thread_local;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(loom)]
pub(crate) use loom::thread_local;
