//! `Shared<T>`: the count that keeps a spawned task's [`Tracker`](crate::child::Tracker)
//! alive, an `Arc` without its weak count and born with as many handles as the spawn
//! hands out.
//!
//! A spawn makes two handles on its tracker at once (the `Child` and the job's guard).
//! With `Arc` that was `Arc::new` and a clone, and the last drop also released the weak
//! count: two read-modify-writes on top of one per handle dropped. The tracker is built
//! in place as an [`Unshared`] (the allocation, no handle yet) and
//! [`share`](Unshared::share) writes the count once, before anyone else can see it (a
//! plain store, no RMW). A tracker has no weak handles: the per-task signal hook of a
//! parked async body holds a strong one, a cycle the task's exit breaks (the task list
//! drops the hook at `do_exit`, and every spawned task exits through its job, or its
//! guard's drop, while the job still holds its own handle).
//!
//! Clone is `fetch_add(Relaxed)`, drop is `fetch_sub(Release)` and, for the last
//! handle, an `Acquire` fence before the value is dropped: std's `Arc` protocol, so
//! every use through any handle happens-before the drop. `tests/loom_shared.rs` checks
//! it (and fails with a `Relaxed` decrement or without the fence); the types are `pub`
//! only so that test can reach them through `loom_model` (a `cfg(loom)` build).
#![cfg_attr(not(loom), allow(unreachable_pub))]
#![allow(unsafe_code)]

use crate::sync::{AtomicUsize, Ordering, fence};
use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;
use std::ptr::NonNull;

/// A counted handle on a `T` (see the module docs).
pub struct Shared<T> {
    ptr: NonNull<Inner<T>>,
    _owns: PhantomData<Inner<T>>,
}

struct Inner<T> {
    count: AtomicUsize,
    value: T,
}

// SAFETY: as `Arc<T>`: handles on other threads share `&T` (so `T: Sync`) and the last
// one drops the `T` wherever it is (so `T: Send`); the count is atomic.
unsafe impl<T: Send + Sync> Send for Shared<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for Shared<T> {}

/// A `T` allocated where its [`Shared`] handles will point, before any exists: the
/// spawn builds the tracker in place once and decides later how many handles to make
/// ([`share`](Unshared::share)), with no move of the value in between.
pub struct Unshared<T> {
    inner: NonNull<Inner<T>>,
    _owns: PhantomData<Inner<T>>,
}

// SAFETY: an `Unshared` owns its value alone, as a `Box` would.
unsafe impl<T: Send> Send for Unshared<T> {}
// SAFETY: as above: `&Unshared` only gives `&T`.
unsafe impl<T: Sync> Sync for Unshared<T> {}

impl<T> Unshared<T> {
    /// Allocates `value`, not shared yet (in a block this thread's cache kept, when it
    /// has one of the right layout: `block_cache.rs`).
    #[inline(always)]
    pub fn new(value: T) -> Unshared<T> {
        let block = crate::block_cache::alloc(std::alloc::Layout::new::<Inner<T>>());
        let inner = block.cast::<Inner<T>>();
        // SAFETY: a fresh block of `Inner<T>`'s layout, owned by nothing else.
        unsafe {
            inner.as_ptr().write(Inner {
                count: AtomicUsize::new(0),
                value,
            });
        }
        Unshared {
            inner,
            _owns: PhantomData,
        }
    }

    fn inner(&self) -> &Inner<T> {
        // SAFETY: the block holds a live `Inner<T>` until this `Unshared` is dropped or
        // shared.
        unsafe { self.inner.as_ref() }
    }

    /// `N` handles on the allocation, its count written once: nobody else can see it
    /// yet, so this is a plain store, not a read-modify-write.
    pub fn share<const N: usize>(self) -> [Shared<T>; N] {
        const { assert!(N > 0, "at least one handle") };
        // A relaxed store: the handles reach other threads only through something that
        // publishes them (a spawn, a channel), as an `Arc`'s initial count does.
        self.inner().count.store(N, Ordering::Relaxed);
        let ptr = self.inner;
        // The handles own the value now.
        std::mem::forget(self);
        std::array::from_fn(|_| Shared {
            ptr,
            _owns: PhantomData,
        })
    }
}

impl<T> Deref for Unshared<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.inner().value
    }
}

impl<T> Drop for Unshared<T> {
    fn drop(&mut self) {
        // SAFETY: never shared, so this is the only owner of a live `Inner<T>` in a
        // block from `block_cache::alloc` of its layout.
        unsafe { free(self.inner) };
    }
}

/// Drops the `Inner<T>` in place and gives its block back to the cache.
///
/// # Safety
/// `inner` holds a live `Inner<T>` in a block from `block_cache::alloc` of its layout,
/// and nothing uses it afterwards.
unsafe fn free<T>(inner: NonNull<Inner<T>>) {
    // SAFETY: the caller's obligation: a live value that nobody else can reach.
    unsafe { inner.as_ptr().drop_in_place() };
    // SAFETY: the block came from `block_cache::alloc` with this layout; its value is
    // dropped and nothing uses it.
    unsafe { crate::block_cache::dealloc(inner.cast(), std::alloc::Layout::new::<Inner<T>>()) };
}

impl<T> Shared<T> {
    /// Gives up this handle but keeps its count taken: a *prepaid* count, which
    /// [`reclaim`](Shared::reclaim) turns back into a handle later without a
    /// read-modify-write (a spawn pays the async body's handle with the others, and
    /// makes it only if the body starts).
    pub fn prepay(self) {
        std::mem::forget(self);
    }

    /// A handle for a count [`prepay`](Shared::prepay) kept, on the same allocation as
    /// `this`.
    ///
    /// # Safety
    /// A prepaid count on this allocation exists and is reclaimed at most once: the
    /// caller's own bookkeeping says which (the facade: a flag only the job touches).
    pub unsafe fn reclaim(this: &Shared<T>) -> Shared<T> {
        Shared {
            ptr: this.ptr,
            _owns: PhantomData,
        }
    }

    fn inner(&self) -> &Inner<T> {
        // SAFETY: this handle holds one count, so the allocation is alive until it is
        // dropped.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Shared<T> {
        // Relaxed, as `Arc::clone`: the new handle comes from an existing one, which
        // keeps the value alive meanwhile; nothing is published by the increment.
        let old = self.inner().count.fetch_add(1, Ordering::Relaxed);
        if old > isize::MAX as usize {
            std::process::abort(); // counts cannot overflow in practice (as `Arc`)
        }
        Shared {
            ptr: self.ptr,
            _owns: PhantomData,
        }
    }
}

impl<T> Drop for Shared<T> {
    fn drop(&mut self) {
        // Release: this handle's uses happen-before the last handle's drop of the value.
        if self.inner().count.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        // Acquire: pairs with every other handle's release decrement.
        fence(Ordering::Acquire);
        // SAFETY: the count reached zero: this was the last handle, no other can be
        // made (clones need a live handle), and `ptr` is the `Unshared`'s block.
        unsafe { free(self.ptr) };
    }
}

impl<T> Deref for Shared<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.inner().value
    }
}

impl<T: fmt::Debug> fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: fmt::Debug> fmt::Debug for Unshared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Unshared")
            .field(&self.inner().value)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize as Count;

    struct Noisy(Arc<Count>);

    impl Drop for Noisy {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn the_value_is_dropped_once_by_the_last_handle_or_by_an_unshared_drop() {
        std::thread::spawn(|| {
            let drops = Arc::new(Count::new(0));
            let [a, b] = Unshared::new(Noisy(drops.clone())).share();
            let c = a.clone();
            drop(a);
            drop(b);
            assert_eq!(drops.load(Ordering::Relaxed), 0, "a handle is left");
            drop(c);
            assert_eq!(drops.load(Ordering::Relaxed), 1);
            assert_eq!(crate::block_cache::cached(), 1, "its block kept");
            // The next one reuses the block; dropped unshared, it drops its value.
            let u = Unshared::new(Noisy(drops.clone()));
            assert_eq!(crate::block_cache::cached(), 0);
            drop(u);
            assert_eq!(drops.load(Ordering::Relaxed), 2);
            // A prepaid count reclaimed is a handle like any other.
            let [d, e] = Unshared::new(Noisy(drops.clone())).share();
            // SAFETY: the one prepaid count on this allocation, reclaimed once.
            let reclaimed = unsafe { Shared::reclaim(&d) };
            e.prepay();
            drop(d);
            drop(reclaimed);
            assert_eq!(drops.load(Ordering::Relaxed), 3);
        })
        .join()
        .unwrap();
    }
}
