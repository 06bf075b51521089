//! The synchronisation primitives of the facade's lock-free protocols
//! ([`ExitLatch`](crate::latch::ExitLatch), [`KillFlag`](crate::kill::KillFlag),
//! [`StatusSlot`](crate::status::StatusSlot), the `ChildSet` ready queue, a runtime's
//! [`UserList`](crate::users::UserList)), swapped for
//! loom's under `cfg(loom)` so they can be model-checked (`tests/loom_*.rs`).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};

/// A mutex with parking_lot's shape (`lock()` returns the guard) on both backends.
#[derive(Debug, Default)]
pub(crate) struct Mutex<T>(
    #[cfg(not(loom))] parking_lot::Mutex<T>,
    #[cfg(loom)] loom::sync::Mutex<T>,
);

impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Self {
        #[cfg(not(loom))]
        return Mutex(parking_lot::Mutex::new(value));
        #[cfg(loom)]
        return Mutex(loom::sync::Mutex::new(value));
    }

    #[cfg(not(loom))]
    pub(crate) fn lock(&self) -> parking_lot::MutexGuard<'_, T> {
        self.0.lock()
    }

    #[cfg(loom)]
    pub(crate) fn lock(&self) -> loom::sync::MutexGuard<'_, T> {
        self.0
            .lock()
            .expect("loom mutex is never poisoned in the models")
    }
}
