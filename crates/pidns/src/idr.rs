//! `Idr`: one namespace's number -> pid map with a cyclic cursor (`struct idr` +
//! `idr_alloc_cyclic`).
//!
//! A bitmap answers "which numbers are taken" (reserved or published) and finds the next
//! free one a word at a time; a dense vector answers `find_pid`. A reserved number has its
//! bit set but no entry, so lookups never see a half-built pid.

use crate::Pid;
use std::sync::Arc;

#[derive(Debug, Default)]
pub(crate) struct Idr {
    /// Bit `n` set: number `n` is reserved or published.
    bits: Vec<u64>,
    /// `entries[n]`: the published pid with number `n`.
    entries: Vec<Option<Arc<Pid>>>,
    /// `idr_next`: where the next cyclic search starts.
    pub(crate) cursor: i32,
    /// `pid_allocated` without the `PIDNS_ADDING` bit: reserved + published numbers.
    pub(crate) allocated: usize,
}

impl Idr {
    pub(crate) fn is_taken(&self, nr: i32) -> bool {
        let (w, b) = (nr as usize / 64, nr as usize % 64);
        self.bits.get(w).is_some_and(|word| word & (1 << b) != 0)
    }

    fn set_bit(&mut self, nr: i32) {
        let (w, b) = (nr as usize / 64, nr as usize % 64);
        if self.bits.len() <= w {
            self.bits.resize(w + 1, 0);
        }
        self.bits[w] |= 1 << b;
    }

    /// First free number in `[from, end)`.
    fn next_free(&self, from: i32, end: i32) -> Option<i32> {
        if from >= end {
            return None;
        }
        let mut nr = from as usize;
        let end = end as usize;
        while nr < end {
            let (w, b) = (nr / 64, nr % 64);
            let Some(&word) = self.bits.get(w) else {
                return Some(nr as i32); // beyond the bitmap: all free
            };
            let free = !word & (u64::MAX << b);
            if free != 0 {
                let found = w * 64 + free.trailing_zeros() as usize;
                return (found < end).then_some(found as i32);
            }
            nr = (w + 1) * 64;
        }
        None
    }

    /// `idr_alloc(idr, NULL, nr, nr + 1)`: reserve exactly `nr`; false if taken.
    pub(crate) fn reserve_exact(&mut self, nr: i32) -> bool {
        if self.is_taken(nr) {
            return false;
        }
        self.set_bit(nr);
        self.allocated += 1;
        true
    }

    /// `idr_alloc_cyclic(idr, NULL, start, end)`: search from the cursor, wrap to
    /// `start` once; the cursor moves past the number found.
    pub(crate) fn reserve_cyclic(&mut self, start: i32, end: i32) -> Option<i32> {
        let from = self.cursor.max(start);
        let nr = self.next_free(from, end).or_else(|| {
            if from > start {
                self.next_free(start, end)
            } else {
                None
            }
        })?;
        self.set_bit(nr);
        self.allocated += 1;
        self.cursor = nr + 1;
        Some(nr)
    }

    /// `idr_replace(NULL -> pid)`: the publish point.
    pub(crate) fn publish(&mut self, nr: i32, pid: Arc<Pid>) {
        debug_assert!(self.is_taken(nr), "publishing an unreserved number");
        let i = nr as usize;
        if self.entries.len() <= i {
            // Grown 1024 slots at a time: a cyclic allocator climbs one number per
            // fork until it wraps, and a resize per publish cost ~40 instructions.
            self.entries.resize((i + 1).next_multiple_of(1024), None);
        }
        self.entries[i] = Some(pid);
    }

    /// `idr_remove`: frees a reserved or published number.
    pub(crate) fn remove(&mut self, nr: i32) -> Option<Arc<Pid>> {
        debug_assert!(self.is_taken(nr), "removing a free number");
        let (w, b) = (nr as usize / 64, nr as usize % 64);
        self.bits[w] &= !(1 << b);
        self.allocated -= 1;
        self.entries.get_mut(nr as usize).and_then(Option::take)
    }

    /// `idr_find`.
    pub(crate) fn find(&self, nr: i32) -> Option<&Arc<Pid>> {
        usize::try_from(nr)
            .ok()
            .and_then(|i| self.entries.get(i))
            .and_then(Option::as_ref)
    }

    /// Published pids in ascending number order (`idr_get_next` walk).
    pub(crate) fn published(&self) -> impl Iterator<Item = &Arc<Pid>> {
        self.entries.iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cyclic_search_wraps_once_and_moves_cursor() {
        let mut idr = Idr::default();
        assert_eq!(idr.reserve_cyclic(1, 5), Some(1));
        assert_eq!(idr.reserve_cyclic(1, 5), Some(2));
        assert!(idr.reserve_exact(4));
        assert_eq!(idr.reserve_cyclic(1, 5), Some(3));
        assert_eq!(idr.reserve_cyclic(1, 5), None, "1..5 is full");
        idr.remove(2);
        assert_eq!(idr.reserve_cyclic(1, 5), Some(2), "wraps to start");
        assert_eq!(idr.cursor, 3);
        assert_eq!(idr.allocated, 4);
    }

    #[test]
    fn next_free_crosses_words() {
        let mut idr = Idr::default();
        for n in 0..130 {
            assert!(idr.reserve_exact(n));
        }
        assert_eq!(idr.next_free(0, 200), Some(130));
        assert_eq!(idr.next_free(0, 130), None);
    }
}
