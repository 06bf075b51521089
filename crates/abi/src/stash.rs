//! `Stash<T, N>`: a fixed-capacity stack with no allocation, for the per-thread caches
//! of freed blocks (`uproc-pidns`'s pid cache, the facade's tracker blocks). Plain
//! data: the caches keep one in a `thread_local!` `RefCell`, so only its thread
//! touches it.

/// At most `N` items, last in first out.
#[derive(Debug)]
pub struct Stash<T, const N: usize> {
    items: [Option<T>; N],
    len: usize,
}

impl<T, const N: usize> Stash<T, N> {
    /// An empty stash (usable in a `const` `thread_local!` initialiser).
    pub const fn new() -> Self {
        Stash {
            items: [const { None }; N],
            len: 0,
        }
    }

    /// Pushes `item`, or hands it back when the stash is full.
    #[inline]
    pub fn push(&mut self, item: T) -> Result<(), T> {
        if self.len == N {
            return Err(item);
        }
        self.items[self.len] = Some(item);
        self.len += 1;
        Ok(())
    }

    /// Pops the last item pushed if `keep` accepts it (else leaves it there).
    #[inline]
    pub fn pop_if(&mut self, keep: impl FnOnce(&T) -> bool) -> Option<T> {
        let last = self.len.checked_sub(1)?;
        if !self.items[last].as_ref().is_some_and(keep) {
            return None;
        }
        self.len = last;
        self.items[last].take()
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

impl<T, const N: usize> Default for Stash<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::Stash;

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
}
