//! `NumberPool`: one namespace's numbers under the `Scalable` profile: a FIFO pool of
//! free numbers behind a per-namespace lock, per-thread batches in front of it, a
//! per-number state byte that arbitrates every claim, and a table of lock-free lookup
//! slots.
//!
//! ```text
//!                      per namespace (NumberPool)
//!   ┌───────────────────────────────────────────────────────────────────────┐
//!   │ pool lock (counted): fresh cursor [fresh_next, pid_max) ++ FIFO queue │
//!   │   front = least recently freed                        back = newest  │
//!   └───────────▲ refill: take `batch` from the front ──────────┬──────────┘
//!               │ flush: append a full free batch to the back   │
//!   thread A: alloc batch [12 13 14 ..]  free batch [7 3 ..]    │ (one lock per
//!   thread B: alloc batch [76 77 ..]     free batch [..]        ▼  `batch` ops)
//!
//!   chunks (4096 numbers each, allocated on first use):
//!     state[nr]: OWNED | MARKED | readers | entries out (AtomicU8; the arbiter of
//!                ownership, and of a lookup against the owner's release)
//!     slot[nr]:  AtomicPtr<Pid> holding one strong count (no lock; see below)
//!   count: per-thread shards of pid_allocated + the PIDNS_ADDING flag (count.rs)
//! ```
//!
//! # Ownership of a number
//!
//! A number's state byte holds an `OWNED` bit (a pid has it) and the count of its
//! *entries* that are out: in the fresh range, the queue, an alloc batch or a free
//! batch. Every transition is a compare-exchange on that byte, so exactly one thread
//! wins each number:
//!
//! - popping an entry: if it is the number's last entry and nobody owns the number, the
//!   popper owns it (`1 -> OWNED`); otherwise the entry is dropped (count - 1);
//! - a direct claim (`set_tid`, the init-first rule, the exhaustion scan): set `OWNED`
//!   if clear, leaving the entries where they are;
//! - a release: clear `OWNED` and add one entry (count + 1) at the back of the FIFO,
//!   through the releasing thread's free batch;
//! - an exhaustion scan's deciding pass (under the pool lock): set `MARKED` on an owned
//!   number; the owner's release then takes the pool lock too, and clears it.
//!
//! So a number is never live twice, and a number freed is handed out again only when
//! its newest entry comes out of the pool: the older ones (left behind by a direct
//! claim) are dropped on the way. The count is capped at [`MAX_ENTRIES`]: a number
//! claimed directly again and again while its entries are out stops getting new ones,
//! which bounds the pool's size whatever `set_tid` does (and only that number loses its
//! place in the order).
//!
//! # Exhaustion: EAGAIN is exact
//!
//! When the thread's batch and the shared pool have nothing below `pid_max`, the free
//! numbers (if any) sit in other threads' batches, and [`NumberPool::scan`] claims one
//! directly. Its first pass only reads, and failing proves nothing: a number freed
//! behind it while the last free number ahead of it was taken lets it see every number
//! in use although one was free at every moment. The deciding pass holds the pool lock
//! and marks every owned number it passes; a marked number's release takes the pool
//! lock, so every number the pass marked stays owned until the pass has ended. Finding
//! none free then means that every number was owned at the moment the pass ended: the
//! moment Linux's `idr_alloc_cyclic` would have seen a full bitmap. The mark is read
//! from the value the release's compare-exchange checks anyway: the common free path
//! reads nothing more and writes nothing more.

//! # Memory orderings
//!
//! Claims and releases are `AcqRel` compare-exchanges: the new owner's
//! claim reads from the old owner's release, so the old owner's slot clear
//! (`slot = None`, done before the release) happens-before the new owner's publish.
//! A scan's mark is a
//! `Relaxed` compare-exchange: what it must achieve is coherence alone (a release
//! that expected the unmarked value fails and re-reads), and the pool lock orders the
//! marked release after the scan. See `count.rs` for how the count's
//! `SeqCst` accesses order a publish against `disable_pid_allocation`.
//!
//! # Lookup slots: publish, lookup and clear without a lock
//!
//! A slot is a pointer that holds one strong count of the published `Pid`
//! ([`Slot`]). Only the number's owner writes it: publish is an `Arc::clone` and a
//! `Release` store, clear a load and a store; neither is a read-modify-write of the
//! slot. What a lock-free reader needs is that the count it is about to take still
//! exists when it takes it. The number's state byte (already changed by the owner's
//! release) carries that:
//!
//! - a lookup (`find_pid`, the zap walk) adds one to the byte's `READERS` field with an
//!   `Acquire` compare-exchange, only while `OWNED` is set (a free number publishes
//!   nothing), reads the pointer (`Acquire`, pairing with the publish), takes its own
//!   count, and leaves with a `Release` decrement;
//! - the owner's release clears the slot first, then waits until its
//!   compare-exchange finds no reader, and drops the slot's count only after it.
//!
//! All of these are read-modify-writes of one byte, so they are totally ordered: a
//! reader registered before the release is waited for (its decrement, read by the
//! release, orders its count before the drop); a reader registered after it finds the
//! number free, or owned by a later claim, which read from the release, so the reader
//! sees the cleared pointer (or the next owner's). A lookup never returns a pid after
//! its free completed, and never touches a pid whose count may be gone. The only cost
//! left to the fork and the free is the slot's own count: one `Arc::clone` at publish,
//! one decrement at clear. Readers are rare; a release that meets one spins a few
//! times and then yields (`tests/loom_pool.rs` models publish vs. lookup vs. clear).
//!
//! # Reuse distance
//!
//! A released number goes to the back of the FIFO (through its thread's free batch).
//! Everything in the pool when it was released is ahead of it and leaves the pool
//! first: handed out, or taken into some thread's allocation batch; fresh numbers
//! (never used) count as released before any other. So at least that many allocations
//! (the free numbers not sitting in some thread's cache) happen before it is handed
//! out again, less those still sitting unallocated in another thread's batch by then
//! (at most `MAX_BATCH - 1` per thread holding a batch: a thread that took a batch
//! after the release and forks no more keeps them out of the count). A thread's own
//! batch is no slack: it hands out all of it before it takes the next one. Only a
//! direct claim (`set_tid`, or the exhaustion scan when the pool is dry) can take a
//! number out of order. A marked number's release changes its state under
//! the pool lock, and its entry then goes the same way as any other.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::AtomicU64 as StdAtomicU64;
use std::sync::{Arc, Weak};

use crate::chunks::{Chunk, Chunks};
use crate::count::AllocCount;
use crate::sync::{AtomicU8, Ordering, PoolGuard, PoolLock, Slot, backoff, thread_local};
use uproc_abi::lockstat::LockStat;

/// Numbers per chunk of the table (allocated on first use).
pub(crate) const CHUNK: usize = if cfg!(loom) { 4 } else { 4096 };
/// The largest batch a thread caches (alloc side and free side each).
pub(crate) const MAX_BATCH: usize = 128;
/// How many namespaces a thread keeps batches for; a thread that alternates between
/// more returns the least recently used one's numbers to its pool.
const CACHED: usize = 8;

/// State bit: a pid owns the number.
const OWNED: u8 = 0x80;
/// State bit, only with `OWNED`: an exhaustion scan saw the number in use, so its
/// release must take the pool lock (which the scan holds until it has decided).
const MARKED: u8 = 0x40;
/// State bits, only with `OWNED`: how many lookups are reading the number's slot
/// (at most 7; an eighth waits for one to leave). The owner's release waits for none.
const READERS: u8 = 0x38;
/// One lookup in [`READERS`].
const READER: u8 = 0x08;
/// State bits: how many entries of the number are out (in the pool or a batch).
const ENTRIES: u8 = 0x07;
/// The most entries one number may have out (bounds the pool whatever `set_tid` does).
const MAX_ENTRIES: u8 = 4;
/// A number never handed out: free, its one entry in the fresh range.
pub(crate) const FRESH: u8 = 1;

static NEXT_POOL_ID: StdAtomicU64 = StdAtomicU64::new(1);

/// The part behind the pool lock.
struct Shared {
    /// Numbers `>= fresh_next` were never handed out: the oldest entries of the FIFO.
    fresh_next: i32,
    /// Released numbers, least recently released at the front.
    queue: VecDeque<i32>,
}

/// One namespace's numbers under `Scalable`. `T` is what a slot publishes (`Pid`; a
/// plain value in the loom model).
pub(crate) struct NumberPool<T> {
    id: u64,
    batch: usize,
    /// Numbers the table can hold: `PID_MAX_LIMIT` (or the model's bound).
    limit: i32,
    chunks: Chunks<T>,
    /// Shared with the runtime's [`PoolLockStats`] (feature `lockstat`), which reads
    /// its counters and sampled times while the pool lives and folds them in after.
    shared: Arc<PoolLock<Shared>>,
    /// `pid_allocated` (published pids) and `PIDNS_ADDING`, sharded per thread.
    pub(crate) count: AllocCount,
}

/// What a thread's cache needs of a pool it keeps numbers for: give them back.
trait Flush: Send + Sync {
    fn flush(&self, entry: &mut Entry);
}

/// One thread's batches for one pool.
struct Entry {
    id: u64,
    pool: Weak<dyn Flush>,
    alloc: [i32; MAX_BATCH],
    head: usize,
    len: usize,
    free: [i32; MAX_BATCH],
    free_len: usize,
}

#[derive(Default)]
struct Caches {
    entries: Vec<Entry>,
    /// The entry used last: a thread forking in one namespace finds it first try.
    last: usize,
}

impl Caches {
    /// The index of pool `id`'s entry, if it is the one used last; with `SCAN`, else
    /// by a scan of the others (at most [`CACHED`]), which then becomes the last used.
    /// A fork into a nested namespace uses one pool per level in turn, so "the last
    /// one" alone would miss on every level but one and send each to the general
    /// path; a root-namespace fork uses one pool and never scans (`SCAN` false keeps
    /// its path a single compare).
    #[inline(always)]
    fn index_of<const SCAN: bool>(&mut self, id: u64) -> Option<usize> {
        let last = self.last;
        if self.entries.get(last).is_some_and(|e| e.id == id) {
            return Some(last);
        }
        if !SCAN {
            return None;
        }
        let i = self.entries.iter().position(|e| e.id == id)?;
        self.last = i;
        Some(i)
    }
}

impl Drop for Caches {
    fn drop(&mut self) {
        // A thread that ends gives its numbers back; a pool already gone needs nothing.
        for e in &mut self.entries {
            if let Some(pool) = e.pool.upgrade() {
                pool.flush(e);
            }
        }
    }
}

#[cfg(not(loom))]
thread_local! {
    // Const-initialised: no lazy-initialisation check on the fork and free paths.
    static CACHES: RefCell<Caches> = const {
        RefCell::new(Caches {
            entries: Vec::new(),
            last: 0,
        })
    };
}
#[cfg(loom)]
thread_local! {
    static CACHES: RefCell<Caches> = RefCell::new(Caches::default());
}

impl<T: Send + Sync + 'static> NumberPool<T> {
    /// A pool for numbers `1..limit`, taking `batch` numbers per refill.
    pub(crate) fn new(limit: i32, batch: usize, stats: &PoolLockStats) -> Arc<Self> {
        // Under loom every chunk exists from the start: the models' pools are tiny, and
        // they explore the numbers' protocol, not a chunk's first use.
        let chunks = Chunks::new(limit as usize, cfg!(loom));
        let shared = Arc::new(PoolLock::new(Shared {
            fresh_next: 1,
            queue: VecDeque::new(),
        }));
        stats.register(&shared);
        Arc::new(NumberPool {
            id: NEXT_POOL_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            batch: batch.clamp(1, MAX_BATCH),
            limit,
            chunks,
            shared,
            count: AllocCount::new(),
        })
    }

    /// The chunk holding `nr`: one acquire load once it exists (every call on the fork
    /// and free paths), the allocation out of line.
    #[inline(always)]
    fn chunk(&self, nr: i32) -> &Chunk<T> {
        self.chunks.get_or_make(nr as usize)
    }

    #[inline]
    fn state(&self, nr: i32) -> &AtomicU8 {
        &self.chunk(nr).state[nr as usize % CHUNK]
    }

    fn lock(&self) -> PoolGuard<'_, Shared> {
        self.shared.lock()
    }

    /// Acquisitions of this namespace's pool lock (feature `lockstat`).
    pub(crate) fn lock_acquisitions(&self) -> u64 {
        self.shared.acquisitions()
    }

    /// Consumes one entry of `nr`: true if the caller now owns the number (it was the
    /// number's last outstanding entry and nobody owned it), false if the entry was an
    /// old one or the number is owned (claimed directly): it is dropped.
    fn take_entry(&self, nr: i32) -> bool {
        let st = self.state(nr);
        let mut cur = st.load(Ordering::Relaxed);
        loop {
            debug_assert!(cur & ENTRIES != 0, "an entry of a number with none");
            let take = cur == 1;
            let to = if take { OWNED } else { cur - 1 };
            match st.compare_exchange(cur, to, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return take,
                Err(seen) => cur = seen,
            }
        }
    }

    /// Claims exactly `nr` (`set_tid`, the init-first rule, the exhaustion scan): false
    /// if it is in use. Its entries stay where they are, now stale.
    pub(crate) fn claim(&self, nr: i32) -> bool {
        debug_assert!(nr > 0 && nr < self.limit);
        let st = self.state(nr);
        let mut cur = st.load(Ordering::Relaxed);
        while cur & OWNED == 0 {
            match st.compare_exchange(cur, cur | OWNED, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(seen) => cur = seen,
            }
        }
        false
    }

    /// `free_pid`'s half for one level: clears `nr`'s slot, then gives the number
    /// back, with one chunk lookup for both.
    #[inline(always)]
    pub(crate) fn unpublish_release(self: &Arc<Self>, nr: i32) {
        self.unpublish_release_in::<false>(nr);
    }

    /// [`unpublish_release`](Self::unpublish_release) for one level of a nested pid,
    /// whose levels' pools take turns in this thread's cache.
    #[inline(always)]
    pub(crate) fn unpublish_release_among(self: &Arc<Self>, nr: i32) {
        self.unpublish_release_in::<true>(nr);
    }

    #[inline(always)]
    fn unpublish_release_in<const SCAN: bool>(self: &Arc<Self>, nr: i32) {
        let chunk = self.chunk(nr);
        let i = nr as usize % CHUNK;
        // The slot's count is kept until the release saw no lookup reading the slot.
        let published = chunk.slot[i].take();
        self.release_state::<SCAN>(&chunk.state[i], nr);
        chunk.slot[i].drop_taken(published);
    }

    /// Gives back a number the caller owns (a failed fork's rollback). The caller
    /// cleared the slot first, if it was published.
    pub(crate) fn release(self: &Arc<Self>, nr: i32) {
        self.release_state::<true>(self.state(nr), nr);
    }

    /// [`release`](Self::release) with the number's state byte already looked up.
    #[inline(always)]
    fn release_state<const SCAN: bool>(self: &Arc<Self>, st: &AtomicU8, nr: i32) {
        let push = match Self::clear_owned(st, true) {
            Some(push) => push,
            // An exhaustion scan saw this number in use: release it under the pool lock,
            // after the scan decided.
            None => self.clear_marked(st),
        };
        if !push {
            return;
        }
        // The common case, inline: room in this thread's entry for this pool (the last
        // used; with `SCAN`, any).
        let pushed = CACHES.try_with(|c| {
            let mut c = c.borrow_mut();
            let batch = self.batch;
            let Some(i) = c.index_of::<SCAN>(self.id) else {
                return false;
            };
            let e = &mut c.entries[i];
            if e.free_len < batch {
                e.free[e.free_len] = nr;
                e.free_len += 1;
                true
            } else {
                false
            }
        });
        if !matches!(pushed, Ok(true)) {
            self.push_free_slow(nr);
        }
    }

    /// [`release_state`](Self::release_state)'s state change for a number an
    /// exhaustion scan marked: under the pool lock, so no scan holding it can miss the
    /// release. The entry then goes the usual way (this thread's free batch), so the
    /// reuse distance is the same as for any free.
    #[cold]
    #[inline(never)]
    fn clear_marked(&self, st: &AtomicU8) -> bool {
        let _after_the_scan = self.lock();
        Self::clear_owned(st, false).expect("a release clears any state")
    }

    /// A release's state change: clears `OWNED` (and `MARKED`) and adds an entry, unless
    /// the number already has the most entries it may (re-claimed directly again and
    /// again while its old entries were out: then it keeps its place behind them).
    /// Returns whether an entry must be pushed; `None`, changing nothing, if
    /// `unmarked_only` and the number is marked. The mark is read from the value the
    /// compare-exchange checks anyway, so testing it costs the fast path no access.
    #[inline(always)]
    fn clear_owned(st: &AtomicU8, unmarked_only: bool) -> Option<bool> {
        let mut cur = st.load(Ordering::Relaxed);
        let mut spins = 0;
        loop {
            debug_assert!(cur & OWNED != 0, "releasing a free number");
            if unmarked_only && cur & MARKED != 0 {
                return None;
            }
            if cur & READERS != 0 {
                // A lookup is between reading the slot and taking its count: the slot's
                // count (held by the caller) must outlive it.
                backoff(&mut spins);
                cur = st.load(Ordering::Relaxed);
                continue;
            }
            let push = cur & ENTRIES < MAX_ENTRIES;
            let to = (cur & ENTRIES) + u8::from(push);
            match st.compare_exchange(cur, to, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return Some(push),
                Err(seen) => cur = seen,
            }
        }
    }

    /// [`release_state`](Self::release_state)'s general path: a full free batch goes
    /// to the pool first, another pool's entry is looked up or created, or, with no
    /// thread cache, the number goes straight to the pool.
    #[cold]
    #[inline(never)]
    fn push_free_slow(self: &Arc<Self>, nr: i32) {
        // The new entry goes to the back of the FIFO through this thread's free batch.
        let cached = CACHES.try_with(|c| {
            let mut c = c.borrow_mut();
            let e = self.entry(&mut c);
            if e.free_len == self.batch {
                let mut sh = self.lock();
                sh.queue.extend(&e.free[..e.free_len]);
                e.free_len = 0;
            }
            e.free[e.free_len] = nr;
            e.free_len += 1;
        });
        if cached.is_err() {
            // Thread-local storage already torn down: straight to the pool.
            self.lock().queue.push_back(nr);
        }
    }

    /// A number `< pid_max` for a new pid, in pool order; `None` when every number
    /// below `pid_max` is in use (other threads' cached numbers included).
    #[inline(always)]
    pub(crate) fn alloc(self: &Arc<Self>, pid_max: i32) -> Option<i32> {
        self.alloc_in::<false>(pid_max)
    }

    /// [`alloc`](Self::alloc) for one level of a nested pid, whose levels' pools take
    /// turns in this thread's cache.
    #[inline(always)]
    pub(crate) fn alloc_among(self: &Arc<Self>, pid_max: i32) -> Option<i32> {
        self.alloc_in::<true>(pid_max)
    }

    #[inline(always)]
    fn alloc_in<const SCAN: bool>(self: &Arc<Self>, pid_max: i32) -> Option<i32> {
        let pid_max = pid_max.min(self.limit);
        // The common case, inline: this thread's last-used entry is this pool's and its
        // batch's next number is below `pid_max` and free. Anything else (an empty
        // batch, a lowered `pid_max`, a stale entry, another pool's entry) takes the
        // general path, which sees the same batch state.
        let fast = CACHES.try_with(|c| {
            let mut c = c.borrow_mut();
            let i = c.index_of::<SCAN>(self.id)?;
            let e = &mut c.entries[i];
            let nr = *e.alloc[..e.len].get(e.head)?;
            if nr >= pid_max {
                return None;
            }
            e.head += 1;
            // A stale entry is consumed (dropped) either way; the general path goes on
            // with the next one.
            self.take_entry(nr).then_some(nr)
        });
        match fast {
            Ok(Some(nr)) => Some(nr),
            _ => self.alloc_slow(pid_max),
        }
    }

    /// [`alloc`](Self::alloc)'s general path: refills, evictions, a lowered
    /// `pid_max`, stale entries, no thread cache, the exhaustion scan.
    #[cold]
    #[inline(never)]
    fn alloc_slow(self: &Arc<Self>, pid_max: i32) -> Option<i32> {
        let cached = CACHES.try_with(|c| {
            let mut c = c.borrow_mut();
            let e = self.entry(&mut c);
            loop {
                if e.head == e.len && !self.refill(e, pid_max) {
                    return None;
                }
                let nr = e.alloc[e.head];
                e.head += 1;
                if nr >= pid_max {
                    // pid_max was lowered after this batch was filled: keep the entry
                    // for when it is raised again.
                    self.lock().queue.push_back(nr);
                    continue;
                }
                if self.take_entry(nr) {
                    return Some(nr);
                }
            }
        });
        match cached {
            Ok(Some(nr)) => return Some(nr),
            Ok(None) => {}
            Err(_) => {
                if let Some(nr) = self.alloc_uncached(pid_max) {
                    return Some(nr);
                }
            }
        }
        self.scan(pid_max)
    }

    /// [`alloc`](Self::alloc) without a thread cache (thread-local storage already torn
    /// down): one entry at a time, straight from the front of the pool.
    #[cold]
    fn alloc_uncached(&self, pid_max: i32) -> Option<i32> {
        loop {
            let nr = {
                let mut sh = self.lock();
                if sh.fresh_next < pid_max {
                    sh.fresh_next += 1;
                    sh.fresh_next - 1
                } else {
                    let pos = sh.queue.iter().position(|&nr| nr < pid_max)?;
                    sh.queue.remove(pos).expect("position is in range")
                }
            };
            if self.take_entry(nr) {
                return Some(nr);
            }
        }
    }

    /// The pool is dry: claim any free number below `pid_max` directly, wherever its
    /// entry is (another thread's batch, typically). `pid_max` stays exact: this fails
    /// only when, at one moment, every number below it was in use.
    ///
    /// A first pass only reads (and claims the first free number it meets). It cannot
    /// conclude anything from finding none: a number freed behind it while the last free
    /// one ahead of it was taken makes it see every number in use, although one was free
    /// at every moment. So a second pass decides, under the pool lock, marking every
    /// number it finds in use ([`MARKED`]): a marked number can only be released under
    /// the pool lock ([`clear_marked`](Self::clear_marked)), so every number it
    /// marked is still in use when it finishes. If it found none free, that moment is
    /// the one at which every number was in use.
    #[cold]
    #[inline(never)]
    pub(crate) fn scan(&self, pid_max: i32) -> Option<i32> {
        let pid_max = pid_max.min(self.limit);
        let optimistic = (1..pid_max)
            .find(|&nr| self.state(nr).load(Ordering::Relaxed) & OWNED == 0 && self.claim(nr));
        optimistic.or_else(|| self.scan_exact(pid_max))
    }

    /// [`scan`](Self::scan)'s deciding pass, under the pool lock.
    pub(crate) fn scan_exact(&self, pid_max: i32) -> Option<i32> {
        let _decide = self.lock();
        (1..pid_max).find(|&nr| {
            let st = self.state(nr);
            let mut cur = st.load(Ordering::Relaxed);
            loop {
                let to = if cur & OWNED == 0 {
                    cur | OWNED // free: claim it
                } else if cur & MARKED == 0 {
                    cur | MARKED // in use: its release now waits for this lock
                } else {
                    return false; // in use and marked (by an earlier scan)
                };
                // Marking needs no ordering: a release's compare-exchange that expected
                // the unmarked value fails (coherence) and sees the mark on its retry.
                let ord = if to & MARKED != 0 {
                    Ordering::Relaxed
                } else {
                    Ordering::AcqRel
                };
                match st.compare_exchange(cur, to, ord, Ordering::Relaxed) {
                    Ok(_) => return to & MARKED == 0,
                    Err(seen) => cur = seen,
                }
            }
        })
    }

    /// Under the pool lock: appends `e`'s free batch to the back of the FIFO and fills
    /// its alloc batch from the front. False if nothing below `pid_max` was left.
    fn refill(&self, e: &mut Entry, pid_max: i32) -> bool {
        let mut sh = self.lock();
        sh.queue.extend(&e.free[..e.free_len]);
        e.free_len = 0;
        let sh = &mut *sh;
        // Fresh numbers first, as one run (a loop the compiler vectorises).
        let batch = self.batch.min(MAX_BATCH);
        let n_fresh = usize::try_from(pid_max.saturating_sub(sh.fresh_next))
            .unwrap_or(0)
            .min(batch);
        let first = sh.fresh_next;
        for (nr, slot) in (first..).zip(&mut e.alloc[..n_fresh]) {
            *slot = nr;
        }
        sh.fresh_next += n_fresh as i32;
        let mut n = n_fresh;
        // Then the queue's front, drained in runs. Entries at or above a lowered
        // pid_max rotate to the back, each seen once (`budget`: the entries that were
        // in the queue before this refill).
        let mut budget = sh.queue.len();
        let mut rotated = [0i32; MAX_BATCH];
        while n < batch && budget > 0 {
            let take = (batch - n).min(budget);
            budget -= take;
            // Copied out of the ring (at most two slices) and then cut off its front,
            // which for `i32` entries is a move of the ring's head: `drain`'s iterator
            // cost about 13 instructions a number, every refill once the numbers wrap.
            let dst = &mut e.alloc[n..n + take];
            let (front, back) = sh.queue.as_slices();
            let from_front = take.min(front.len());
            dst[..from_front].copy_from_slice(&front[..from_front]);
            dst[from_front..].copy_from_slice(&back[..take - from_front]);
            sh.queue.drain(..take);
            if dst.iter().any(|&nr| nr >= pid_max) {
                // A lowered pid_max (rare): those entries rotate to the back, in order.
                let (mut kept, mut r) = (0, 0);
                for i in 0..take {
                    let nr = dst[i];
                    if nr >= pid_max {
                        rotated[r] = nr;
                        r += 1;
                    } else {
                        dst[kept] = nr;
                        kept += 1;
                    }
                }
                sh.queue.extend(&rotated[..r]);
                n += kept;
            } else {
                n += take;
            }
        }
        e.head = 0;
        e.len = n;
        n > 0
    }

    /// This thread's entry for this pool, created (evicting the oldest) if needed.
    #[inline]
    fn entry<'c>(self: &Arc<Self>, c: &'c mut Caches) -> &'c mut Entry {
        if let Some(i) = c.index_of::<true>(self.id) {
            return &mut c.entries[i];
        }
        self.entry_slow(c)
    }

    /// [`entry`](Self::entry) for a pool this thread keeps no entry for: a new one
    /// (the oldest entry's numbers go back to its pool when all [`CACHED`] are taken).
    #[cold]
    fn entry_slow<'c>(self: &Arc<Self>, c: &'c mut Caches) -> &'c mut Entry {
        if c.entries.len() == CACHED {
            let mut old = c.entries.remove(0);
            if let Some(pool) = old.pool.upgrade() {
                pool.flush(&mut old);
            }
        }
        let weak: Weak<dyn Flush> = Arc::downgrade(self) as Weak<dyn Flush>;
        c.entries.push(Entry::new(self.id, weak));
        c.last = c.entries.len() - 1;
        c.entries.last_mut().expect("just pushed")
    }

    /// `find_pid`'s read: the object published under `nr`, without a lock.
    #[inline]
    pub(crate) fn find(&self, nr: i32) -> Option<Arc<T>> {
        if nr <= 0 || nr >= self.limit {
            return None;
        }
        let chunk = self.chunks.get(nr as usize)?;
        let i = nr as usize % CHUNK;
        Self::read_slot(&chunk.state[i], &chunk.slot[i])
    }

    /// A lookup of one number's slot: registers as a reader in its state byte if the
    /// number is owned (a free number publishes nothing), reads the slot, leaves.
    ///
    /// Orderings: the registration is an `Acquire` read-modify-write, so if it reads a
    /// later owner's claim it also sees the earlier owner's slot clear (sequenced
    /// before that owner's `AcqRel` release, which the claim read from): no pointer of
    /// a released number is read after its count may be gone. The leaving is a
    /// `Release` decrement, read by the owner's release (its compare-exchange fails
    /// until it reads no reader), so this reader's strong count is taken before the
    /// slot's own is dropped.
    #[allow(unsafe_code)]
    fn read_slot(st: &AtomicU8, slot: &Slot<T>) -> Option<Arc<T>> {
        let mut cur = st.load(Ordering::Relaxed);
        let mut spins = 0;
        loop {
            if cur & OWNED == 0 {
                return None;
            }
            if cur & READERS == READERS {
                backoff(&mut spins);
                cur = st.load(Ordering::Relaxed);
                continue;
            }
            match st.compare_exchange(cur, cur + READER, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => break,
                Err(seen) => cur = seen,
            }
        }
        // SAFETY: registered above (an `Acquire` read-modify-write that found the number
        // owned) until the decrement below.
        let found = unsafe { slot.load_registered() };
        st.fetch_sub(READER, Ordering::Release);
        found
    }

    /// Publishes `value` under `nr`, which the caller owns.
    #[inline(always)]
    pub(crate) fn publish(&self, nr: i32, value: Arc<T>) {
        self.chunk(nr).slot[nr as usize % CHUNK].publish(value);
    }

    /// Every published object, ascending by number.
    pub(crate) fn published(&self) -> Vec<Arc<T>> {
        let mut out = Vec::new();
        for c in self.chunks.iter() {
            // Only owned numbers can be published: one atomic load skips the others
            // without a read-modify-write.
            let owned = c
                .state
                .iter()
                .zip(c.slot.iter())
                .filter(|(st, _)| st.load(Ordering::Relaxed) & OWNED != 0);
            out.extend(owned.filter_map(|(st, slot)| Self::read_slot(st, slot)));
        }
        out
    }

    /// Published numbers (`pid_allocated` without the flag): a snapshot when the
    /// counters hold still between two collects, else the bound of
    /// [`AllocCount::snapshot_sum`](crate::count::AllocCount::snapshot_sum).
    pub(crate) fn allocated(&self) -> usize {
        usize::try_from(self.count.snapshot_sum()).unwrap_or(0)
    }

    /// Free numbers below `pid_max` whose every outstanding entry is in the shared pool
    /// (none in a thread's batch): what a number released now has ahead of it (see
    /// "Reuse distance" above). Walks the pool: for tests and diagnostics.
    pub(crate) fn pool_len(&self, pid_max: i32) -> usize {
        self.free_numbers_split(pid_max).0
    }

    /// Free numbers below `pid_max` with an entry in some thread's batch (allocation or
    /// free batch): the slack of the reuse distance. For tests and diagnostics.
    pub(crate) fn batched_len(&self, pid_max: i32) -> usize {
        self.free_numbers_split(pid_max).1
    }

    /// (free numbers with every entry in the shared pool, free numbers with an entry in
    /// a thread's batch), below `pid_max`, under the pool lock.
    fn free_numbers_split(&self, pid_max: i32) -> (usize, usize) {
        let pid_max = pid_max.min(self.limit);
        let sh = self.lock();
        let mut in_pool: std::collections::HashMap<i32, u8> = Default::default();
        for &nr in sh.queue.iter().filter(|&&nr| nr < pid_max) {
            *in_pool.entry(nr).or_default() += 1;
        }
        for nr in sh.fresh_next..pid_max {
            *in_pool.entry(nr).or_default() += 1;
        }
        let pooled = in_pool
            .iter()
            .filter(|&(&nr, &n)| {
                let st = self.state(nr).load(Ordering::Acquire);
                st & OWNED == 0 && st & ENTRIES == n
            })
            .count();
        // A number taken into a batch was handed out of the fresh range first, so every
        // such number lies below `fresh_next` (number 0 is never handed out).
        let batched = (1..sh.fresh_next.min(pid_max))
            .filter(|&nr| {
                let st = self.state(nr).load(Ordering::Acquire);
                st & OWNED == 0 && st & ENTRIES > in_pool.get(&nr).copied().unwrap_or(0)
            })
            .count();
        (pooled, batched)
    }
}

impl<T> Drop for NumberPool<T> {
    fn drop(&mut self) {
        if PoolLockStats::KEEPS_LOCKS {
            // The lock outlives the pool in the runtime's statistics until they fold it
            // in: it must not keep the pool's numbers alive with it.
            self.shared.lock().queue = VecDeque::new();
        }
    }
}

/// The lock statistics of every number pool of a runtime (feature `lockstat`): the
/// pools' locks are per namespace, but every fork of a namespace takes its pool's, so
/// they are reported as one global lock, `pidns_pool_lock`: acquisitions and sampled
/// hold and wait times summed over the pools alive and those already dropped.
///
/// Each pool's lock is shared (`Arc`) with this registry, so its figures stay readable
/// until the registry sees it is the last holder and folds them into `retired`: the sum
/// never goes down when a namespace is dropped. Pools are registered and folded on the
/// slow paths only (namespace creation, a statistics read).
pub(crate) struct PoolLockStats {
    locks: std::sync::Mutex<PoolLocks>,
}

struct PoolLocks {
    live: Vec<Arc<dyn LockSource>>,
    retired: LockStat,
}

/// A pool lock as the registry sees it: its figures so far.
trait LockSource: Send + Sync {
    fn stat(&self) -> LockStat;
}

impl<S: Send> LockSource for PoolLock<S> {
    fn stat(&self) -> LockStat {
        PoolLock::stat(self)
    }
}

impl PoolLockStats {
    /// The pools' locks are kept (and their figures summed) only when lockstat counts
    /// anything; loom's locks have no figures.
    const KEEPS_LOCKS: bool = uproc_abi::lockstat::ENABLED && !cfg!(loom);

    /// An empty registry.
    pub(crate) fn new() -> PoolLockStats {
        PoolLockStats {
            locks: std::sync::Mutex::new(PoolLocks {
                live: Vec::new(),
                retired: LockStat::zero("pidns_pool_lock"),
            }),
        }
    }

    fn register<S: Send + 'static>(&self, lock: &Arc<PoolLock<S>>) {
        if Self::KEEPS_LOCKS {
            let mut l = self.locks.lock().unwrap_or_else(|e| e.into_inner());
            l.fold_dropped();
            l.live.push(Arc::clone(lock) as Arc<dyn LockSource>);
        }
    }

    /// Every pool lock's acquisitions and samples, summed.
    pub(crate) fn stat(&self) -> LockStat {
        let mut l = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        l.fold_dropped();
        let mut sum = l.retired.clone();
        for lock in &l.live {
            sum.add(&lock.stat());
        }
        sum
    }
}

impl PoolLocks {
    /// Folds the locks whose pool is gone (the registry holds the last handle: nobody
    /// can take them any more) into `retired`.
    fn fold_dropped(&mut self) {
        let retired = &mut self.retired;
        self.live.retain(|lock| {
            let gone = Arc::strong_count(lock) == 1;
            if gone {
                retired.add(&lock.stat());
            }
            !gone
        });
    }
}

impl std::fmt::Debug for PoolLockStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolLockStats").finish_non_exhaustive()
    }
}

impl<T: Send + Sync + 'static> Flush for NumberPool<T> {
    fn flush(&self, e: &mut Entry) {
        let mut sh = self.lock();
        // Unused alloc entries were at the front: they go back there, in order.
        for &nr in e.alloc[e.head..e.len].iter().rev() {
            sh.queue.push_front(nr);
        }
        sh.queue.extend(&e.free[..e.free_len]);
        e.head = 0;
        e.len = 0;
        e.free_len = 0;
    }
}

impl Entry {
    fn new(id: u64, pool: Weak<dyn Flush>) -> Entry {
        Entry {
            id,
            pool,
            alloc: [0; MAX_BATCH],
            head: 0,
            len: 0,
            free: [0; MAX_BATCH],
            free_len: 0,
        }
    }
}

impl<T> std::fmt::Debug for NumberPool<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NumberPool")
            .field("id", &self.id)
            .field("batch", &self.batch)
            .finish_non_exhaustive()
    }
}
