//! The number pool's table of chunks: `CHUNK` numbers' state bytes and lookup slots per
//! chunk, each chunk allocated on its first use, found from a number with one load.
//!
//! ```text
//!   table: [AtomicPtr<Chunk>; limit / CHUNK]      (null until the chunk is made)
//!            │
//!            ▼
//!   Chunk:  state ──► [AtomicU8; CHUNK]     slot ──► [Slot; CHUNK]
//!           nr % CHUNK indexes both arrays
//! ```
//!
//! Who touches what: any thread reads the table (every claim, release, publish and
//! lookup of a number goes through it); a chunk's pointer is written once, null to
//! the chunk, by whichever thread first needs it (a compare-exchange: a loser frees
//! its own chunk and uses the winner's); chunks are freed only by the table's drop,
//! when nothing can reach the pool any more. So a chunk, once seen, lives as long as
//! the `&self` it was reached through.
//!
//! Why not `OnceLock<Box<Chunk>>` per entry (the first version): its `get` reads the
//! once-state, then the chunk's pointer; here the pointer's load is the check.
//! `lifecycles scalable` 1,595 -> 1,586 instructions per life cycle (three lookups
//! each). The arrays stay in boxes of their own (built on the heap: a 4096-entry array
//! would not fit a small coroutine's stack): a chunk with both arrays inline, written
//! in place, saved their pointer's load but measured one instruction more per life
//! cycle, and its one 36 KiB allocation instead of three moved glibc's heap so that
//! the `malloc` and `free` of tokio's task cell took ~90 instructions more per spawn
//! (`spawncycles scalable tokio` 4,059 against 4,149).

use std::marker::PhantomData;

use crate::pool::{CHUNK, FRESH};
use crate::sync::{AtomicPtr, AtomicU8, Ordering, Slot};

/// `CHUNK` numbers' state bytes and lookup slots. Fixed-size arrays: an index
/// `nr % CHUNK` needs no bounds check on the fork and free paths.
pub(crate) struct Chunk<T> {
    pub(crate) state: Box<[AtomicU8; CHUNK]>,
    pub(crate) slot: Box<[Slot<T>; CHUNK]>,
}

/// `CHUNK` values built on the heap (a 4096-entry array would not fit every stack).
fn boxed_array<V>(f: impl FnMut(usize) -> V) -> Box<[V; CHUNK]> {
    let v: Box<[V]> = (0..CHUNK).map(f).collect();
    match v.try_into() {
        Ok(a) => a,
        Err(_) => unreachable!("CHUNK values were collected"),
    }
}

impl<T> Chunk<T> {
    fn new() -> Box<Chunk<T>> {
        Box::new(Chunk {
            state: boxed_array(|_| AtomicU8::new(FRESH)),
            slot: boxed_array(|_| Slot::empty()),
        })
    }
}

/// The table: `limit / CHUNK` (rounded up) entries, each null or a chunk.
pub(crate) struct Chunks<T> {
    table: Box<[AtomicPtr<Chunk<T>>]>,
    /// The table owns its chunks: it is `Send`/`Sync` only where they are (an
    /// `AtomicPtr` alone would be both whatever `T` is).
    _owns: PhantomData<Box<Chunk<T>>>,
}

impl<T> Chunks<T> {
    /// A table for numbers `0..limit`, every chunk still to be made (`made`: every
    /// chunk made now: the loom models' pools are tiny, and they explore the numbers'
    /// protocol rather than a chunk's first use, which the unit tests below race).
    pub(crate) fn new(limit: usize, made: bool) -> Chunks<T> {
        let table = (0..limit.div_ceil(CHUNK))
            .map(|_| {
                let chunk = if made {
                    Box::into_raw(Chunk::new())
                } else {
                    std::ptr::null_mut()
                };
                AtomicPtr::new(chunk)
            })
            .collect();
        Chunks {
            table,
            _owns: PhantomData,
        }
    }

    /// The chunk holding `nr` (below the table's limit), made if it was not: one
    /// `Acquire` load once it exists.
    #[inline(always)]
    #[allow(unsafe_code)]
    pub(crate) fn get_or_make(&self, nr: usize) -> &Chunk<T> {
        let entry = &self.table[nr / CHUNK];
        let p = entry.load(Ordering::Acquire);
        if p.is_null() {
            return Self::make(entry);
        }
        // SAFETY: a non-null entry came from `Box::into_raw` of a fully written chunk,
        // published with `Release` (`make`) and read here with `Acquire`; chunks are
        // freed only by the table's drop, which cannot run while `&self` is borrowed.
        unsafe { &*p }
    }

    /// The chunk holding `nr`, if it was made (`None` also for `nr` beyond the table).
    #[inline]
    #[allow(unsafe_code)]
    pub(crate) fn get(&self, nr: usize) -> Option<&Chunk<T>> {
        let p = self.table.get(nr / CHUNK)?.load(Ordering::Acquire);
        // SAFETY: as in `get_or_make`.
        (!p.is_null()).then(|| unsafe { &*p })
    }

    /// Every chunk made so far, in number order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Chunk<T>> {
        (0..self.table.len()).filter_map(|i| self.get(i * CHUNK))
    }

    /// [`get_or_make`](Self::get_or_make)'s first use of a chunk: makes it and
    /// publishes it, or, if another thread published one first, frees its own and
    /// takes that one.
    #[cold]
    #[inline(never)]
    #[allow(unsafe_code)]
    fn make(entry: &AtomicPtr<Chunk<T>>) -> &Chunk<T> {
        let mine = Box::into_raw(Chunk::new());
        match entry.compare_exchange(
            std::ptr::null_mut(),
            mine,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            // SAFETY: just published (`Release`), never freed before the table's drop.
            Ok(_) => unsafe { &*mine },
            Err(theirs) => {
                // SAFETY: `mine` came from `Box::into_raw` above and was never
                // published: this is its only owner. `theirs` is another thread's
                // published chunk, alive as in `get_or_make`.
                unsafe {
                    drop(Box::from_raw(mine));
                    &*theirs
                }
            }
        }
    }
}

impl<T> Drop for Chunks<T> {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        for entry in self.table.iter() {
            let p = entry.load(Ordering::Acquire);
            if !p.is_null() {
                // SAFETY: `&mut self`: nothing can reach the table any more; a non-null
                // entry owns the chunk from `Box::into_raw`, freed once, here (its
                // slots give back the counts of objects still published).
                drop(unsafe { Box::from_raw(p) });
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{CHUNK, Chunks, FRESH};
    use crate::sync::Ordering;
    use std::sync::Arc;

    #[test]
    fn a_chunk_is_made_once_on_first_use_with_fresh_numbers_and_empty_slots() {
        let chunks: Chunks<u32> = Chunks::new(2 * CHUNK + 1, false);
        assert!(chunks.get(CHUNK).is_none(), "not made yet");
        assert!(chunks.get(3 * CHUNK).is_none(), "beyond the table");
        let c = chunks.get_or_make(CHUNK + 5);
        assert!(c.state.iter().all(|s| s.load(Ordering::Relaxed) == FRESH));
        // SAFETY: (a test) nothing is published, so no reader registration is needed
        // to read an empty slot.
        #[allow(unsafe_code)]
        let empty = c
            .slot
            .iter()
            .all(|s| unsafe { s.load_registered() }.is_none());
        assert!(empty);
        assert!(
            std::ptr::eq(c, chunks.get_or_make(2 * CHUNK - 1)),
            "same chunk"
        );
        assert!(std::ptr::eq(c, chunks.get(CHUNK).expect("made")));
        assert_eq!(chunks.iter().count(), 1);
    }

    #[test]
    fn racing_first_uses_agree_on_one_chunk_and_free_the_other() {
        let chunks: Arc<Chunks<u32>> = Arc::new(Chunks::new(CHUNK, false));
        let seen: Vec<usize> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(|| std::ptr::from_ref(chunks.get_or_make(1)) as usize))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(seen.windows(2).all(|w| w[0] == w[1]), "{seen:?}");
        // A published object's count goes back when the table is dropped.
        let value = Arc::new(7u32);
        chunks.get_or_make(2).slot[2].publish(Arc::clone(&value));
        assert_eq!(Arc::strong_count(&value), 2);
        drop(chunks);
        assert_eq!(Arc::strong_count(&value), 1);
    }
}
