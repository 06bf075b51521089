//! `ArcCache<T, N>`: a thread's emptied `Arc` allocations, for the slab caches of the
//! objects every life cycle makes and frees (`uproc-pidns`'s pid cache, the task
//! cache of `uproc-tasklist`).
//!
//! Linux allocates `struct pid` and `task_struct` from slab caches (`kmem_cache_alloc`
//! / `kmem_cache_free`), whose per-CPU free lists make an allocation and a free a few
//! instructions each. Here such an object is an `Arc<T>` from the global allocator: a
//! plain drop of its last reference costs two atomics (the strong and the weak count)
//! and a `free`, the next one a `malloc`, about 140 instructions of glibc per object
//! per life cycle. So the last reference's holder *empties* the allocation instead:
//!
//! ```text
//!  put(last Arc<T>) ──► Arc::get_mut: unique? ─ no ──► plain drop (others hold it)
//!                            │ yes
//!                            ▼
//!      drop the T in place (its drop runs now, as any last drop's would) and keep
//!      the ArcInner as Arc<MaybeUninit<T>>: counts 1/1, value dead
//!                            │
//!   the thread's cache of N ◄┘ (full, or the thread's cache gone: freed)
//!          │
//!          ▼
//!  pop() ──► an Emptied<T> to write the next T into (else Emptied::new)
//! ```
//!
//! Who may touch what: each user keeps its cache in a `thread_local!` (the cache is a
//! [`LocalStash`], its own interior mutability), so only the owning thread reads or
//! writes it. An entry is an [`Emptied`], a unique
//! `Arc<MaybeUninit<T>>` (no other `Arc`, no `Weak` but one its user keeps beside it
//! and does not upgrade, see [`empty_sole_owner`]), so nothing else can reach it;
//! dropping one (the cache full, the thread ending) frees the allocation without
//! dropping the dead value again (`MaybeUninit` drops nothing). Nothing observable
//! changes: the `T`'s drop runs at the moment the last drop would have run it.
//!
//! A handle type whose drop should put its `Arc` (pidfs's pidfd, whose open file is
//! kept this way) holds it as a [`CachedArc`]: an `Arc` whose drop calls
//! [`Recycle::recycle`], so the handle needs no `Drop` and no `unsafe` of its own.
#![allow(unsafe_code)]

use std::mem::MaybeUninit;
use std::sync::Arc;

use crate::stash::LocalStash;

/// A unique allocation for a `T` whose value is not (or no longer) there: an emptied
/// one from [`empty_if_unique`], or a new one. Not `Clone`: its `Arc` is the only
/// handle to the allocation (no other `Arc`, and no `Weak` but those
/// [`empty_sole_owner`]'s caller keeps beside it, which nothing upgrades before the
/// next value is written), which is what lets [`fill`](Emptied::fill) write without an
/// atomic.
#[derive(Debug)]
pub struct Emptied<T>(Arc<MaybeUninit<T>>);

impl<T> Emptied<T> {
    /// A new allocation (`Arc::new_uninit`: its counts are written plainly).
    #[inline]
    pub fn new() -> Self {
        Emptied(Arc::new_uninit())
    }

    /// Where the value will live: the address the filled `Arc` will point at, known
    /// before the value is built (the address of a task's leader, for its group).
    #[inline]
    pub fn as_ptr(&self) -> *const T {
        Arc::as_ptr(&self.0).cast::<T>()
    }

    /// Writes `value` in: the `Arc` of a new `T`.
    #[inline]
    pub fn fill(self, value: T) -> Arc<T> {
        let at = Arc::as_ptr(&self.0).cast_mut();
        // SAFETY: `self.0` is the only handle to its allocation (the type's invariant:
        // made unique by `Arc::new_uninit` or checked unique by `empty_if_unique`, and
        // never cloned), so nothing else reads or writes it; `Arc::as_ptr` keeps the
        // allocation's write provenance (what `Arc::get_mut` itself writes through),
        // and `MaybeUninit` has no drop to skip. After the write the value is
        // initialised, so `assume_init` is sound.
        unsafe {
            at.write(MaybeUninit::new(value));
            self.0.assume_init()
        }
    }
}

impl<T> Emptied<T> {
    /// A new allocation with one `Weak` counted besides its `Arc`, for a user that
    /// keeps a `Weak` with each of its emptied allocations ([`empty_sole_owner`]'s
    /// `kept_weaks`) as a count rather than a value: that count is the caller's, to be
    /// taken back with `Weak::<T>::from_raw(self.as_ptr())` (the pointer is the one
    /// `Weak::into_raw` gave for it). One atomic, on the allocation no one else sees.
    #[inline]
    pub fn new_with_kept_weak() -> Self {
        let arc = Arc::new_uninit();
        let _ = std::sync::Weak::into_raw(Arc::downgrade(&arc));
        Emptied(arc)
    }
}

impl<T> Default for Emptied<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// What a [`CachedArc`]'s drop does with its `Arc`: typically [`empty_if_unique`]
/// into a thread's [`ArcCache`] (the last handle), else a plain drop.
pub trait Recycle: Sized {
    /// Lets go of `arc`, one handle of a [`CachedArc`] being dropped.
    fn recycle(arc: Arc<Self>);
}

/// An `Arc<T>` whose drop hands it to [`T::recycle`](Recycle::recycle) instead of
/// dropping it: a handle type whose last drop should keep the allocation (pidfs's open
/// file behind a pidfd) can hold one and need no `Drop` or `unsafe` of its own. It
/// has `Arc`'s size and niche (an `Option<CachedArc<T>>` is one pointer), and derefs
/// to the `Arc`.
pub struct CachedArc<T: Recycle>(std::mem::ManuallyDrop<Arc<T>>);

impl<T: Recycle> CachedArc<T> {
    /// Wraps `arc`.
    #[inline]
    pub fn new(arc: Arc<T>) -> Self {
        CachedArc(std::mem::ManuallyDrop::new(arc))
    }
}

impl<T: Recycle> std::ops::Deref for CachedArc<T> {
    type Target = Arc<T>;

    #[inline]
    fn deref(&self) -> &Arc<T> {
        &self.0
    }
}

impl<T: Recycle> Clone for CachedArc<T> {
    #[inline]
    fn clone(&self) -> Self {
        CachedArc::new(Arc::clone(&self.0))
    }
}

impl<T: Recycle + std::fmt::Debug> std::fmt::Debug for CachedArc<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self.0, f)
    }
}

impl<T: Recycle> Drop for CachedArc<T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the `Arc` is taken out once, here, in the drop; the `ManuallyDrop`
        // keeps the field's own drop from running on the moved-out value, and nothing
        // reads the field afterwards.
        let arc = unsafe { std::mem::ManuallyDrop::take(&mut self.0) };
        T::recycle(arc);
    }
}

/// Up to `N` emptied allocations of `T` (see the module docs).
#[derive(Debug)]
pub struct ArcCache<T, const N: usize>(LocalStash<Emptied<T>, N>);

impl<T, const N: usize> ArcCache<T, N> {
    /// An empty cache (usable in a `const` `thread_local!` initialiser).
    pub const fn new() -> Self {
        ArcCache(LocalStash::new())
    }

    /// An allocation to write the next `T` into, if the cache keeps one.
    #[inline]
    pub fn pop(&self) -> Option<Emptied<T>> {
        self.0.pop()
    }

    /// Keeps an emptied allocation, or hands it back when the cache is full.
    #[inline]
    pub fn push(&self, emptied: Emptied<T>) -> Result<(), Emptied<T>> {
        self.0.push(emptied)
    }

    /// How many emptied allocations it holds.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<T, const N: usize> Default for ArcCache<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

/// Drops the value of `arc` in place when `arc` is its only handle (no other `Arc`,
/// no `Weak`) and returns the emptied allocation; otherwise drops `arc` plainly (the
/// others keep the value, or the last `Arc` drops it while a `Weak` holds the
/// allocation) and returns `None`.
#[inline]
pub fn empty_if_unique<T>(mut arc: Arc<T>) -> Option<Emptied<T>> {
    Arc::get_mut(&mut arc)?;
    // SAFETY: `Arc::get_mut` succeeded, so `arc` is the only `Arc` and no `Weak`
    // exists, and none can be made but from `arc`, which this call owns.
    Some(unsafe { empty_unique(arc) })
}

/// Drops the value of `arc` in place and returns the emptied allocation, when the
/// caller knows without asking that `arc` is its only handle: [`empty_if_unique`]
/// without `Arc::get_mut`'s compare-exchange on the weak count (an object reachable
/// only through another one the caller has proved unreachable: the pid of a task
/// recycled by the task cache).
///
/// # Safety
///
/// `arc` is the only `Arc` of its value and no `Weak` to it exists, and nobody can make
/// one while this call runs: the caller read both counts (strong 1, weak 0) after an
/// `Acquire` fence that follows every other holder's last use, and nothing outside the
/// caller can reach the value since. (A count read too early, or a value still
/// reachable, would drop a value others use.)
#[inline]
pub unsafe fn empty_unique<T>(arc: Arc<T>) -> Emptied<T> {
    debug_assert_eq!(
        (Arc::strong_count(&arc), Arc::weak_count(&arc)),
        (1, 0),
        "empty_unique: not the only handle"
    );
    let raw = Arc::into_raw(arc).cast_mut();
    // SAFETY: by the caller's contract `arc` was the only handle and none can be made,
    // so dropping the value in place is the drop the last `Arc` would have run, and
    // the rebuilt `Arc` (of `MaybeUninit<T>`, `T`'s layout, so `Arc::from_raw` may take
    // the pointer as one) is the allocation's one handle; the dead value is never read
    // as a `T` again (`MaybeUninit` drops nothing).
    unsafe {
        raw.drop_in_place();
        Emptied(Arc::from_raw(raw.cast::<MaybeUninit<T>>().cast_const()))
    }
}

/// Drops the value of `arc` in place and returns the emptied allocation, for a value
/// that holds weak references to itself (a task whose pid's task slot names it), which
/// [`empty_if_unique`] would refuse. `None` (the allocation left to the weak references
/// that outlived the value's drop, freed with the last of them) if a weak reference
/// other than the `kept_weaks` the caller holds survived the drop after all.
///
/// `kept_weaks`: `Weak`s to the value that the caller took out of it before the call
/// (so that the value's drop does not drop them) and keeps beside the returned
/// allocation, to hand to the next value written there instead of making new ones
/// (the task cache keeps the pid task slot's `Weak`: one atomic less at the reap, one
/// less at the next fork). The returned [`Emptied`] then has those `Weak`s besides its
/// `Arc`; they must not be upgraded before [`Emptied::fill`] has written the next
/// value (an upgrade would hand out the dead one), and must be dropped with the
/// allocation if it is never filled.
///
/// # Safety
///
/// The caller read `Arc::strong_count(&arc) == 1` (no other `Arc` exists, and none can
/// be made but from `arc`), and no `Weak` to the value can be upgraded by anyone while
/// this call runs: those the value owns are reachable only through it, the
/// `kept_weaks` only through the caller, and any other is left untouched until the call
/// returns. (A `Weak` upgraded while the value is dropped in place would hand out the
/// dying value: the strong count stays 1 here, where a plain drop makes it 0 first.)
#[inline]
pub unsafe fn empty_sole_owner<T>(arc: Arc<T>, kept_weaks: usize) -> Option<Emptied<T>> {
    // The counts were read with relaxed loads: this fence makes every other holder's
    // last use of the value (each released its `Arc` or `Weak` with a `Release`
    // decrement) happen before the drop below, as `Arc`'s own drop does.
    std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
    let raw = Arc::into_raw(arc).cast_mut();
    // SAFETY: by the caller's contract `arc` was the only `Arc` and no `Weak` can be
    // upgraded meanwhile, so nothing else reads the value: dropping it in place is the
    // drop the last `Arc` would have run. `MaybeUninit<T>` has `T`'s layout, so
    // `Arc::from_raw` may take the pointer as one; the dead value is never read as a
    // `T` again (`MaybeUninit` drops nothing).
    let emptied = unsafe {
        raw.drop_in_place();
        Arc::from_raw(raw.cast::<MaybeUninit<T>>().cast_const())
    };
    // The value's drop dropped its own weak references; any that remains but the
    // caller's keeps the allocation, which is then not this thread's to reuse.
    if Arc::weak_count(&emptied) == kept_weaks {
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        Some(Emptied(emptied))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::{
        ArcCache, CachedArc, Emptied, Recycle, empty_if_unique, empty_sole_owner, empty_unique,
    };
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counted<'a>(&'a AtomicUsize, u32);

    impl Drop for Counted<'_> {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn a_unique_arc_is_emptied_and_refilled_in_place() {
        let drops = AtomicUsize::new(0);
        let a = Arc::new(Counted(&drops, 1));
        let at = Arc::as_ptr(&a).cast::<u8>();
        let emptied = empty_if_unique(a).expect("unique");
        assert_eq!(
            drops.load(Ordering::Relaxed),
            1,
            "the value dropped at once"
        );
        let cache: ArcCache<Counted<'_>, 1> = ArcCache::new();
        assert!(cache.push(emptied).is_ok());
        assert!(cache.push(Emptied::new()).is_err(), "bounded");
        let slot = cache.pop().expect("kept");
        assert_eq!(slot.as_ptr().cast::<u8>(), at);
        let b = slot.fill(Counted(&drops, 2));
        assert_eq!(Arc::as_ptr(&b).cast::<u8>(), at, "the same allocation");
        assert_eq!((b.1, Arc::strong_count(&b), Arc::weak_count(&b)), (2, 1, 0));
        drop(b);
        assert_eq!(drops.load(Ordering::Relaxed), 2);
        assert!(cache.is_empty());
    }

    /// A value holding a `Weak` to itself, as a task does through its pid.
    struct SelfRef<'a>(
        &'a AtomicUsize,
        std::sync::Mutex<Option<std::sync::Weak<SelfRef<'a>>>>,
    );

    impl Drop for SelfRef<'_> {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn a_sole_owner_with_its_own_weak_is_emptied() {
        let drops = AtomicUsize::new(0);
        let a = Arc::new(SelfRef(&drops, std::sync::Mutex::new(None)));
        *a.1.lock().unwrap() = Some(Arc::downgrade(&a));
        let at = Arc::as_ptr(&a).cast::<u8>();
        assert!(empty_if_unique(Arc::clone(&a)).is_none() && Arc::strong_count(&a) == 1);
        assert_eq!((Arc::strong_count(&a), Arc::weak_count(&a)), (1, 1));
        // SAFETY: `a` is the only `Arc`; its one `Weak` lives inside the value.
        let e = unsafe { empty_sole_owner(a, 0) }.expect("its own weak went with the value");
        assert_eq!(drops.load(Ordering::Relaxed), 1);
        assert_eq!(e.as_ptr().cast::<u8>(), at);
        let b = e.fill(SelfRef(&drops, std::sync::Mutex::new(None)));
        assert_eq!((Arc::strong_count(&b), Arc::weak_count(&b)), (1, 0));
    }

    #[test]
    fn a_known_unique_arc_is_emptied_without_the_check() {
        let drops = AtomicUsize::new(0);
        let a = Arc::new(Counted(&drops, 1));
        let at = Arc::as_ptr(&a).cast::<u8>();
        // SAFETY: `a` is the only handle and no `Weak` exists.
        let e = unsafe { empty_unique(a) };
        assert_eq!(
            drops.load(Ordering::Relaxed),
            1,
            "the value dropped at once"
        );
        let b = e.fill(Counted(&drops, 2));
        assert_eq!(Arc::as_ptr(&b).cast::<u8>(), at);
        assert_eq!((b.1, Arc::strong_count(&b), Arc::weak_count(&b)), (2, 1, 0));
    }

    #[test]
    fn a_kept_weak_goes_with_the_allocation_to_the_next_value() {
        let drops = AtomicUsize::new(0);
        let a = Arc::new(SelfRef(&drops, std::sync::Mutex::new(None)));
        *a.1.lock().unwrap() = Some(Arc::downgrade(&a));
        let at = Arc::as_ptr(&a).cast::<u8>();
        // Taken out of the value before its drop: the value's drop drops no `Weak`.
        let kept = a.1.lock().unwrap().take().expect("its own weak");
        // SAFETY: `a` is the only `Arc`; the one `Weak` is `kept`, held here and not
        // upgraded until the next value is written.
        let e = unsafe { empty_sole_owner(a, 1) }.expect("only the kept weak is left");
        assert_eq!(drops.load(Ordering::Relaxed), 1);
        let b = e.fill(SelfRef(&drops, std::sync::Mutex::new(None)));
        assert_eq!(Arc::as_ptr(&b).cast::<u8>(), at);
        assert_eq!((Arc::strong_count(&b), Arc::weak_count(&b)), (1, 1));
        // The kept `Weak` names the new value.
        let up = kept.upgrade().expect("the new value");
        assert!(Arc::ptr_eq(&up, &b));
        drop(up);
        drop(b);
        assert_eq!(drops.load(Ordering::Relaxed), 2);
        assert!(kept.upgrade().is_none(), "gone with its last Arc");
        // A kept `Weak` whose allocation is never filled again frees it with its own
        // drop (Miri checks the allocation is freed once).
        let c = Arc::new(Counted(&drops, 3));
        let kept = Arc::downgrade(&c);
        // SAFETY: `c` is the only `Arc`; `kept` is held here and not upgraded.
        let e = unsafe { empty_sole_owner(c, 1) }.expect("only the kept weak is left");
        drop(e);
        drop(kept);
        assert_eq!(drops.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn a_weak_beyond_the_kept_ones_keeps_the_allocation() {
        let drops = AtomicUsize::new(0);
        let a = Arc::new(Counted(&drops, 1));
        let kept = Arc::downgrade(&a);
        let outside = Arc::downgrade(&a);
        // SAFETY: `a` is the only `Arc`; both `Weak`s are held here, untouched.
        assert!(unsafe { empty_sole_owner(a, 1) }.is_none());
        assert_eq!(drops.load(Ordering::Relaxed), 1);
        assert!(outside.upgrade().is_none() && kept.upgrade().is_none());
    }

    #[test]
    fn a_weak_outliving_the_value_keeps_the_allocation() {
        let drops = AtomicUsize::new(0);
        let a = Arc::new(Counted(&drops, 1));
        let outside = Arc::downgrade(&a);
        // SAFETY: `a` is the only `Arc`; the one `Weak` is held here and not touched
        // until the call returns.
        assert!(unsafe { empty_sole_owner(a, 0) }.is_none());
        assert_eq!(drops.load(Ordering::Relaxed), 1, "dropped once");
        assert!(
            outside.upgrade().is_none(),
            "the value is gone for the Weak too"
        );
        drop(outside); // frees the allocation
    }

    #[test]
    fn a_shared_arc_is_left_to_its_other_handles() {
        let drops = AtomicUsize::new(0);
        let a = Arc::new(Counted(&drops, 1));
        let other = a.clone();
        assert!(empty_if_unique(a).is_none());
        assert_eq!(
            (drops.load(Ordering::Relaxed), Arc::strong_count(&other)),
            (0, 1)
        );
        let weak = Arc::downgrade(&other);
        assert!(empty_if_unique(other).is_none(), "a Weak still names it");
        assert_eq!(
            drops.load(Ordering::Relaxed),
            1,
            "the last Arc dropped it plainly"
        );
        assert!(weak.upgrade().is_none());
    }

    /// A value whose `CachedArc` handles report to a per-thread log how each was let go.
    struct Logged(u32);

    std::thread_local! {
        static RECYCLED: std::cell::RefCell<Vec<(u32, usize)>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }

    impl Recycle for Logged {
        fn recycle(arc: Arc<Logged>) {
            RECYCLED.with(|r| r.borrow_mut().push((arc.0, Arc::strong_count(&arc))));
        }
    }

    #[test]
    fn a_cached_arc_hands_each_handle_to_recycle_once_and_is_one_word() {
        assert_eq!(
            size_of::<Option<CachedArc<Logged>>>(),
            size_of::<usize>(),
            "Arc's niche is kept"
        );
        let a = CachedArc::new(Arc::new(Logged(7)));
        let b = a.clone();
        assert!(Arc::ptr_eq(&a, &b), "a clone shares the value");
        assert_eq!(Arc::strong_count(&a), 2);
        drop(a);
        drop(b);
        // Each drop handed its `Arc` over exactly once: first with the other still
        // alive (count 2), then the last one (count 1).
        assert_eq!(RECYCLED.with(|r| r.take()), [(7, 2), (7, 1)]);
    }
}
