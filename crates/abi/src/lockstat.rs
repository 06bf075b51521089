//! Named global locks whose acquisitions can be counted.
//!
//! Linux's clone/exit path serialises on a handful of global locks (`pidmap_lock`,
//! `tasklist_lock`, `css_set_lock`). uproc gives each of them one value of
//! [`NamedMutex`] or [`NamedRwLock`] per runtime, so that the benchmark can print how many
//! times each was taken per life cycle. Those counts are deterministic, unlike timings.
//!
//! Counting is compiled in with the cargo feature `lockstat`; without it
//! [`NamedMutex::acquisitions`] reads 0 and the lock is a bare `parking_lot` lock.
//! The counter is a relaxed `fetch_add` on a line the lock's own cache line already
//! drags across cores, so it does not change what it measures by much.
//!
//! No guard escapes uproc's public API: these types are `pub` only so the sub-crates
//! can share them.

use core::fmt;
#[cfg(feature = "lockstat")]
use core::sync::atomic::{AtomicU64, Ordering};

/// One named lock's acquisition count, as the benchmark prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockStat {
    /// The kernel's name for the lock (`"pidmap_lock"`).
    pub name: &'static str,
    /// Exclusive acquisitions (for a mutex, all of them).
    pub write: u64,
    /// Shared acquisitions (rwlocks only).
    pub read: u64,
}

#[derive(Default)]
struct Counter {
    #[cfg(feature = "lockstat")]
    n: AtomicU64,
}

impl Counter {
    /// Counts an acquisition that may race with others (shared rwlock readers).
    #[inline]
    fn bump(&self) {
        #[cfg(feature = "lockstat")]
        self.n.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts an exclusive acquisition: the lock holder is the only writer, so a plain
    /// load and store suffice (no read-modify-write on the hot path). Readers of the
    /// count may see a slightly stale value, never a lost increment.
    #[inline]
    fn bump_exclusive(&self) {
        #[cfg(feature = "lockstat")]
        self.n
            .store(self.n.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    fn get(&self) -> u64 {
        #[cfg(feature = "lockstat")]
        return self.n.load(Ordering::Relaxed);
        #[cfg(not(feature = "lockstat"))]
        0
    }
}

/// A global mutex with a kernel name and (feature `lockstat`) an acquisition counter.
pub struct NamedMutex<T> {
    name: &'static str,
    count: Counter,
    inner: parking_lot::Mutex<T>,
}

impl<T> NamedMutex<T> {
    /// A new lock called `name` protecting `value`.
    pub fn new(name: &'static str, value: T) -> Self {
        NamedMutex {
            name,
            count: Counter::default(),
            inner: parking_lot::Mutex::new(value),
        }
    }

    /// Takes the lock, counting the acquisition.
    #[inline]
    pub fn lock(&self) -> parking_lot::MutexGuard<'_, T> {
        let g = self.inner.lock();
        self.count.bump_exclusive();
        g
    }

    /// The lock's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Acquisitions so far (0 without the `lockstat` feature).
    pub fn acquisitions(&self) -> u64 {
        self.count.get()
    }

    /// The name and count as a [`LockStat`].
    pub fn stat(&self) -> LockStat {
        LockStat {
            name: self.name,
            write: self.acquisitions(),
            read: 0,
        }
    }
}

impl<T> fmt::Debug for NamedMutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamedMutex")
            .field("name", &self.name)
            .field("acquisitions", &self.acquisitions())
            .finish_non_exhaustive()
    }
}

/// A global reader-writer lock with a kernel name and separate read/write counters.
pub struct NamedRwLock<T> {
    name: &'static str,
    writes: Counter,
    reads: Counter,
    inner: parking_lot::RwLock<T>,
}

impl<T> NamedRwLock<T> {
    /// A new lock called `name` protecting `value`.
    pub fn new(name: &'static str, value: T) -> Self {
        NamedRwLock {
            name,
            writes: Counter::default(),
            reads: Counter::default(),
            inner: parking_lot::RwLock::new(value),
        }
    }

    /// Takes the lock exclusively (`write_lock_irq`), counting it.
    #[inline]
    pub fn write(&self) -> parking_lot::RwLockWriteGuard<'_, T> {
        let g = self.inner.write();
        self.writes.bump_exclusive();
        g
    }

    /// Takes the lock shared (`read_lock`), counting it separately.
    #[inline]
    pub fn read(&self) -> parking_lot::RwLockReadGuard<'_, T> {
        let g = self.inner.read();
        self.reads.bump();
        g
    }

    /// The lock's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The name and both counts (0 without the `lockstat` feature).
    pub fn stat(&self) -> LockStat {
        LockStat {
            name: self.name,
            write: self.writes.get(),
            read: self.reads.get(),
        }
    }
}

impl<T> fmt::Debug for NamedRwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamedRwLock")
            .field("stat", &self.stat())
            .finish_non_exhaustive()
    }
}

/// Whether acquisition counting is compiled in.
pub const ENABLED: bool = cfg!(feature = "lockstat");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_when_enabled() {
        let m = NamedMutex::new("pidmap_lock", 0u32);
        *m.lock() += 1;
        *m.lock() += 1;
        assert_eq!(*m.lock(), 2);
        assert_eq!(m.acquisitions(), if ENABLED { 3 } else { 0 });
        let rw = NamedRwLock::new("tasklist_lock", ());
        drop(rw.write());
        drop(rw.read());
        drop(rw.read());
        let s = rw.stat();
        assert_eq!((s.write, s.read), if ENABLED { (1, 2) } else { (0, 0) });
        assert_eq!(s.name, "tasklist_lock");
    }
}
