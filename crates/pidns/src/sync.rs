//! The synchronisation primitives of the `Scalable` number pool ([`crate::pool`]): std's
//! and `parking_lot`'s, or loom's under `cfg(loom)` so `tests/loom_pool.rs` can explore
//! every interleaving of batch refill, exact claims, release, publish and lookup, and
//! of the sharded allocation count against the closing of a namespace.
//!
//! The rest of the crate (the `Linux618`/`Linux70` idr under `pidmap_lock`) is not
//! modelled: its locks are `parking_lot`'s and it has no lock-free part of its own.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicU64, Ordering, fence};
#[cfg(loom)]
pub(crate) use loom::thread_local;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicU64, Ordering, fence};
#[cfg(not(loom))]
pub(crate) use std::thread_local;

use std::marker::PhantomData;
use std::sync::Arc;

/// One lookup slot of the number table: a pointer to the published object with that
/// number (null when none), which holds one strong count of it.
///
/// The slot has no lock of its own. Only the number's current owner writes it (publish,
/// then clear), with plain stores; a lookup announces itself as a reader in the
/// number's state byte before it reads the pointer and takes its own strong count, and
/// the owner's release of the number waits for the readers to leave before the slot's
/// count is dropped (the pool's module essay, "Lookup slots"). So a fork publishes
/// with one `Arc::clone` and a free clears with one strong-count decrement: no lock
/// round trip on either side. (A word-sized `RwLock` per slot cost a lock and an
/// unlock on each side; `arc-swap`'s `ArcSwapOption` walked the debt list of every
/// thread that ever loaded, about 380 instructions per store.)
pub(crate) struct Slot<T> {
    ptr: AtomicPtr<T>,
    /// Under loom: stands for the slot's strong count, so the model checks that every
    /// lookup's increment happens-before the owner drops the count (a lookup touches it
    /// with `with`, the drop with `with_mut`; loom reports two unordered accesses).
    #[cfg(loom)]
    count: loom::cell::UnsafeCell<()>,
    /// The slot owns a strong count of `T`: it is `Send`/`Sync` only where `Arc<T>` is.
    _owns: PhantomData<Arc<T>>,
}

#[cfg(loom)]
#[allow(unsafe_code)]
// SAFETY: (loom only) the loom cell holds `()` and only records accesses for the
// model; the slot shares nothing else than what `AtomicPtr` and `Arc<T>` share.
unsafe impl<T: Send + Sync> Sync for Slot<T> {}

impl<T> Slot<T> {
    /// An empty slot.
    pub(crate) fn empty() -> Slot<T> {
        Slot {
            ptr: AtomicPtr::new(std::ptr::null_mut()),
            #[cfg(loom)]
            count: loom::cell::UnsafeCell::new(()),
            _owns: PhantomData,
        }
    }

    /// Publishes `value` in an empty slot. Only the number's owner calls it; the
    /// `Release` store makes the object's contents visible to a lookup that reads the
    /// pointer (`Acquire`).
    #[inline(always)]
    pub(crate) fn publish(&self, value: Arc<T>) {
        debug_assert!(
            self.ptr.load(Ordering::Relaxed).is_null(),
            "slot published twice"
        );
        self.ptr
            .store(Arc::into_raw(value).cast_mut(), Ordering::Release);
    }

    /// Empties the slot and hands its strong count to the caller, who must keep it
    /// until the number's release has seen no reader (only then is no lookup between
    /// reading the old pointer and taking its own count), then give it to
    /// [`drop_taken`](Self::drop_taken). Only the number's owner calls it, so a load
    /// and a store suffice.
    #[inline(always)]
    #[allow(unsafe_code)]
    pub(crate) fn take(&self) -> Option<Arc<T>> {
        let p = self.ptr.load(Ordering::Relaxed);
        if p.is_null() {
            return None;
        }
        self.ptr.store(std::ptr::null_mut(), Ordering::Relaxed);
        // SAFETY: a non-null pointer came from `Arc::into_raw` in `publish` and carries
        // the slot's strong count; the owner is the only writer, so this count is taken
        // out of the slot exactly once (the store above empties it first).
        Some(unsafe { Arc::from_raw(p) })
    }

    /// A lookup's read: the published object, with a strong count of its own.
    ///
    /// # Safety
    /// The caller is registered as a reader in the number's state byte (an `Acquire`
    /// read-modify-write that found the number owned) and stays registered until this
    /// returns: the owner's release, which the slot's strong count outlives, waits for
    /// that registration to end.
    #[inline]
    #[allow(unsafe_code)]
    pub(crate) unsafe fn load_registered(&self) -> Option<Arc<T>> {
        let p = self.ptr.load(Ordering::Acquire);
        if p.is_null() {
            return None;
        }
        // SAFETY: the pointer came from `Arc::into_raw` and the slot still holds its
        // strong count: the count is dropped only after the number's release, which
        // cannot happen while the caller is registered (this function's contract). So
        // the object is alive, and a count taken now is a valid one.
        unsafe {
            #[cfg(loom)]
            self.count.with(|_| ());
            Arc::increment_strong_count(p);
            Some(Arc::from_raw(p))
        }
    }

    /// Drops the count [`take`](Self::take) handed out, once the number's release saw
    /// no reader.
    #[inline(always)]
    pub(crate) fn drop_taken(&self, taken: Option<Arc<T>>) {
        #[cfg(loom)]
        if taken.is_some() {
            self.count.with_mut(|_| ());
        }
        drop(taken);
    }
}

impl<T> Drop for Slot<T> {
    /// The pool is gone (nobody can look up or release any more): a slot still
    /// publishing an object (a pid never freed) gives its strong count back.
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        let p = self.ptr.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: `&mut self`: no reader or owner can reach the slot any more, and
            // the pointer still carries the slot's strong count from `publish`.
            drop(unsafe { Arc::from_raw(p) });
        }
    }
}

/// A short wait for another thread to leave a word it holds for a few instructions (a
/// release waiting on a lookup, a task slot's writer on a reader): spin, then let the
/// other thread run. Under loom, yields at once.
#[inline]
pub(crate) fn backoff(spins: &mut u32) {
    #[cfg(loom)]
    {
        let _ = spins;
        loom::thread::yield_now();
    }
    #[cfg(not(loom))]
    {
        *spins += 1;
        if *spins < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
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
