//! The synchronisation primitives of the `Scalable` number pool ([`crate::pool`]): std's
//! and `parking_lot`'s, or loom's under `cfg(loom)` so `tests/loom_pool.rs` can explore
//! every interleaving of batch refill, exact claims, release, publish and lookup, and
//! of the sharded allocation count against the closing of a namespace.
//!
//! The rest of the crate (the `Linux618`/`Linux70` idr under `pidmap_lock`) is not
//! modelled: its locks are `parking_lot`'s and it has no lock-free part of its own.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering, fence};
#[cfg(loom)]
pub(crate) use loom::thread_local;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::thread_local;

use std::sync::Arc;

/// One lookup slot of the number table: the published object with that number, if any.
///
/// A word-sized reader-writer lock of its own per number (`parking_lot`'s; loom's under
/// loom). It is never shared between forks: only the number's current owner writes it
/// (publish, then clear), and lookups of one number are rare, so it is uncontended and
/// costs one compare-exchange and one release per access. `arc-swap`'s `ArcSwapOption`
/// was measured in its place: lock-free reads, but each store walks the debt list of
/// every thread that ever loaded (`pay_all`), about 380 instructions per store here, two
/// stores per life cycle, against about 20 for this lock.
pub(crate) struct Slot<T> {
    #[cfg(not(loom))]
    inner: parking_lot::RwLock<Option<Arc<T>>>,
    #[cfg(loom)]
    inner: loom::sync::RwLock<Option<Arc<T>>>,
}

impl<T> Slot<T> {
    /// An empty slot.
    pub(crate) fn empty() -> Slot<T> {
        Slot {
            #[cfg(not(loom))]
            inner: parking_lot::RwLock::new(None),
            #[cfg(loom)]
            inner: loom::sync::RwLock::new(None),
        }
    }

    /// The published object (an owned handle).
    #[inline]
    pub(crate) fn load_full(&self) -> Option<Arc<T>> {
        #[cfg(not(loom))]
        return self.inner.read().clone();
        #[cfg(loom)]
        return self.inner.read().expect("slot lock").clone();
    }

    /// Publishes `value` (or clears the slot with `None`).
    #[inline(always)]
    pub(crate) fn store(&self, value: Option<Arc<T>>) {
        #[cfg(not(loom))]
        {
            // The old value is dropped after the lock is released.
            let _old = std::mem::replace(&mut *self.inner.write(), value);
        }
        #[cfg(loom)]
        {
            *self.inner.write().expect("slot lock") = value;
        }
    }
}

/// The per-namespace pool lock: a counted [`NamedMutex`](uproc_abi::lockstat::NamedMutex)
/// (lockstat reports it with the runtime's global locks), or a loom mutex.
pub(crate) struct PoolLock<T> {
    #[cfg(not(loom))]
    inner: uproc_abi::lockstat::NamedMutex<T>,
    #[cfg(loom)]
    inner: loom::sync::Mutex<T>,
}

/// The guard of a [`PoolLock`].
#[cfg(not(loom))]
pub(crate) type PoolGuard<'a, T> = uproc_abi::lockstat::NamedMutexGuard<'a, T>;
/// The guard of a [`PoolLock`].
#[cfg(loom)]
pub(crate) type PoolGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

impl<T> PoolLock<T> {
    pub(crate) fn new(value: T) -> PoolLock<T> {
        PoolLock {
            #[cfg(not(loom))]
            inner: uproc_abi::lockstat::NamedMutex::new("pidns_pool_lock", value),
            #[cfg(loom)]
            inner: loom::sync::Mutex::new(value),
        }
    }

    pub(crate) fn lock(&self) -> PoolGuard<'_, T> {
        #[cfg(not(loom))]
        return self.inner.lock();
        #[cfg(loom)]
        return self.inner.lock().expect("pool lock");
    }

    /// Acquisitions so far (0 without the `lockstat` feature, and under loom).
    pub(crate) fn acquisitions(&self) -> u64 {
        #[cfg(not(loom))]
        return self.inner.acquisitions();
        #[cfg(loom)]
        return 0;
    }

    /// Acquisitions and sampled hold/wait times (zeros without the `lockstat` feature,
    /// and under loom).
    pub(crate) fn stat(&self) -> uproc_abi::lockstat::LockStat {
        #[cfg(not(loom))]
        return self.inner.stat();
        #[cfg(loom)]
        return uproc_abi::lockstat::LockStat::zero("pidns_pool_lock");
    }
}
