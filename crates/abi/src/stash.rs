//! `Stash<T, N>`: a fixed-capacity stack with no allocation, for the per-thread caches
//! of freed blocks (`uproc-pidns`'s pid cache, `uproc-tasklist`'s task cache, the
//! facade's tracker blocks), and [`LocalStash`], the same stack as a `thread_local!`
//! keeps it: its own interior mutability, without `RefCell`'s borrow flag.

use core::cell::UnsafeCell;
use core::fmt;
use core::mem::MaybeUninit;

/// At most `N` items, last in first out.
///
/// The items live in `[MaybeUninit<T>; N]` below `len`, not in `[Option<T>; N]`: a push
/// is then a bounds check and a write (an `Option` slot's assignment first drops the
/// `None` it overwrites, a tag test on the fork path), a pop a check and a read (no tag
/// test, no `take` writing `None` back). Measured with callgrind (`lifecycles scalable`,
/// two pushes and two pops per life cycle): see `crates/tasklist/IMPLEMENTATION.md`.
pub struct Stash<T, const N: usize> {
    /// `items[..len]` are initialised, the rest are not.
    items: [MaybeUninit<T>; N],
    len: usize,
}

impl<T, const N: usize> Stash<T, N> {
    /// An empty stash (usable in a `const` `thread_local!` initialiser).
    pub const fn new() -> Self {
        Stash {
            items: [const { MaybeUninit::uninit() }; N],
            len: 0,
        }
    }

    /// Pushes `item`, or hands it back when the stash is full.
    #[inline]
    pub fn push(&mut self, item: T) -> Result<(), T> {
        let Some(slot) = self.items.get_mut(self.len) else {
            return Err(item);
        };
        slot.write(item);
        self.len += 1;
        Ok(())
    }

    /// Pops the last item pushed if `keep` accepts it (else leaves it there).
    #[inline]
    pub fn pop_if(&mut self, keep: impl FnOnce(&T) -> bool) -> Option<T> {
        let last = self.len.checked_sub(1)?;
        // SAFETY: `last < len`, and `items[..len]` are initialised (the type's
        // invariant: `push` writes `items[len]` before it counts it, pops uncount an item
        // before reading it out).
        #[allow(unsafe_code)]
        let top = unsafe { self.items.get_unchecked(last).assume_init_ref() };
        if !keep(top) {
            return None;
        }
        self.len = last;
        // SAFETY: `items[last]` is initialised (above) and no longer counted: it is read
        // out exactly once, here, and never read again until a push writes it anew.
        #[allow(unsafe_code)]
        Some(unsafe { self.items.get_unchecked(last).assume_init_read() })
    }

    /// Pops the last item pushed.
    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        self.pop_if(|_| true)
    }

    /// How many items it holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<T, const N: usize> Drop for Stash<T, N> {
    fn drop(&mut self) {
        let live = self.len;
        // Uncounted first: a panicking item drop then leaks the rest instead of dropping
        // any twice.
        self.len = 0;
        for item in &mut self.items[..live] {
            // SAFETY: `items[..live]` were initialised (the invariant) and are dropped
            // once each, here; `len` is already 0, so nothing reads them again.
            #[allow(unsafe_code)]
            unsafe {
                item.assume_init_drop();
            }
        }
    }
}

impl<T, const N: usize> fmt::Debug for Stash<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stash")
            .field("len", &self.len)
            .field("capacity", &N)
            .finish()
    }
}

impl<T, const N: usize> Default for Stash<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

/// A [`Stash`] for a `thread_local!`: `push`, `pop` and `len` through `&self`.
///
/// A `RefCell<Stash>` costs each access a borrow flag's check, set and reset (four
/// instructions; a fork and its reap make four such accesses, a tokio spawn six). This
/// cell needs none, because nothing can reach the stash while one of its methods runs:
/// it is not `Sync` (one thread only), and no method runs code that is not the stash's
/// own: an item is moved in or out, never dropped or inspected by a caller's closure
/// (a full stash hands the pushed item back; there is no `pop_if` here). Measured in
/// `crates/tasklist/IMPLEMENTATION.md` ("The per-thread stashes").
pub struct LocalStash<T, const N: usize>(UnsafeCell<Stash<T, N>>);

impl<T, const N: usize> LocalStash<T, N> {
    /// An empty stash (usable in a `const` `thread_local!` initialiser).
    pub const fn new() -> Self {
        LocalStash(UnsafeCell::new(Stash::new()))
    }

    /// The stash, for the length of one method that runs none of its caller's code.
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    fn get(&self) -> &mut Stash<T, N> {
        // SAFETY: `LocalStash` is not `Sync` (an `UnsafeCell`), so only the owning
        // thread holds a `&self`; every caller of `get` (the methods below) uses the
        // reference only within its own body, which moves an item in or out and reads
        // the length, running no code that could call back into this stash (no drop,
        // no closure of the caller): no two of these references are ever alive at once.
        #[allow(unsafe_code)]
        unsafe {
            &mut *self.0.get()
        }
    }

    /// Pushes `item`, or hands it back when the stash is full.
    #[inline]
    pub fn push(&self, item: T) -> Result<(), T> {
        self.get().push(item)
    }

    /// Pops the last item pushed.
    #[inline]
    pub fn pop(&self) -> Option<T> {
        self.get().pop()
    }

    /// How many items it holds.
    pub fn len(&self) -> usize {
        self.get().len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T, const N: usize> Default for LocalStash<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, const N: usize> fmt::Debug for LocalStash<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The length is read first: the formatter writes to the caller's writer, which
        // must not run while the stash is borrowed (it could reach this stash again).
        let len = self.len();
        f.debug_struct("LocalStash")
            .field("len", &len)
            .field("capacity", &N)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::{LocalStash, Stash};

    #[test]
    fn last_in_first_out_bounded_and_filtered() {
        let mut s: Stash<u32, 2> = Stash::new();
        assert!(s.is_empty() && s.pop().is_none());
        assert_eq!(s.push(1), Ok(()));
        assert_eq!(s.push(2), Ok(()));
        assert_eq!(s.push(3), Err(3), "full: handed back");
        assert_eq!(s.pop_if(|&x| x == 1), None, "the last is 2: left there");
        assert_eq!(s.len(), 2);
        assert_eq!(s.pop(), Some(2));
        assert_eq!(s.pop(), Some(1));
        assert!(s.pop().is_none());
    }

    #[test]
    fn dropping_the_stash_drops_exactly_the_items_it_holds() {
        use std::rc::Rc;
        let item = Rc::new(());
        let mut s: Stash<Rc<()>, 3> = Stash::new();
        assert!(s.push(item.clone()).is_ok());
        assert!(s.push(item.clone()).is_ok());
        let popped = s.pop();
        assert_eq!(
            Rc::strong_count(&item),
            3,
            "two pushed, one of them popped and held"
        );
        drop(s);
        assert_eq!(
            Rc::strong_count(&item),
            2,
            "the one left in the stash was dropped"
        );
        drop(popped);
        assert_eq!(Rc::strong_count(&item), 1);
        assert!(format!("{:?}", Stash::<Rc<()>, 3>::new()).contains("capacity: 3"));
    }

    #[test]
    fn the_local_stash_is_the_same_stack_through_a_shared_reference() {
        let s: LocalStash<String, 2> = LocalStash::new();
        assert!(s.is_empty() && s.pop().is_none());
        assert_eq!(s.push("a".into()), Ok(()));
        assert_eq!(s.push("b".into()), Ok(()));
        assert_eq!(
            s.push("c".into()),
            Err("c".to_string()),
            "full: handed back"
        );
        assert_eq!(s.len(), 2);
        assert_eq!(s.pop().as_deref(), Some("b"));
        assert!(format!("{s:?}").contains("len: 1"));
        // The one left is dropped with the stash (Miri checks it is freed once).
    }
}
