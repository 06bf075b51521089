//! Named global locks whose acquisitions are counted and whose hold and wait times are
//! sampled.
//!
//! Linux's clone/exit path serialises on a handful of global locks (`pidmap_lock`,
//! `tasklist_lock`, `css_set_lock`). uproc gives each of them one value of
//! [`NamedMutex`] or [`NamedRwLock`] per runtime, so that the benchmark can print how many
//! times each was taken per life cycle (deterministic, unlike timings) and for how long
//! it was held: the lock budget that bounds throughput on any number of cores.
//!
//! Everything is compiled in with the cargo feature `lockstat`; without it the counts
//! read 0, the guards are bare `parking_lot` guards behind a newtype, and nothing is
//! timed.
//!
//! # Cost
//!
//! Counting an exclusive acquisition is a load and a store under the lock (the holder is
//! the only writer). Timing is sampled: reading the clock costs about as much as a whole
//! short critical section, so only one exclusive acquisition in [`sample_one_in`] on
//! average (default [`DEFAULT_SAMPLE_ONE_IN`]) reads it: each thread counts down a gap
//! drawn at random (xorshift, uniform around the period) so that a fixed pattern of call
//! sites per life cycle cannot alias with it; the common case is a decrement.
//! A sampled acquisition first tries the lock: if that succeeds its wait is exactly 0
//! (no clock read is spent on it); otherwise the clock is read around the blocking
//! `lock`. Hold time runs from the acquisition to the guard's drop, recorded (still under
//! the lock) into a log-linear [`Histogram`]. Shared (read) acquisitions are counted,
//! never timed: their timing would need read-modify-writes on a shared line.
//!
//! No guard escapes uproc's public API: these types are `pub` only so the sub-crates
//! can share them.

use core::fmt;
use core::ops::{Deref, DerefMut};
#[cfg(feature = "lockstat")]
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
#[cfg(feature = "lockstat")]
use std::time::Instant;

/// Histogram buckets: values below 16 ns exactly, then 8 sub-buckets per power of two
/// up to 2^40 ns (about 18 minutes; longer holds land in the last bucket).
pub const BUCKETS: usize = 16 + 37 * 8;

/// The bucket a value (ns) falls in.
pub fn bucket_of(ns: u64) -> usize {
    if ns < 16 {
        return ns as usize;
    }
    let e = 63 - ns.leading_zeros() as usize; // >= 4
    (16 + (e - 4) * 8 + ((ns >> (e - 3)) & 7) as usize).min(BUCKETS - 1)
}

/// The smallest value (ns) of bucket `b`.
pub fn bucket_low(b: usize) -> u64 {
    if b < 16 {
        return b as u64;
    }
    let (e, sub) = ((b - 16) / 8 + 4, (b - 16) % 8);
    (8 + sub as u64) << (e - 3)
}

/// Sampled durations of one lock: count, sum and a log-linear histogram (a relative
/// error of at most 1/16 on quantiles above 16 ns).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Histogram {
    /// Sampled acquisitions.
    pub samples: u64,
    /// Sum of the sampled durations, ns.
    pub total_ns: u64,
    /// Samples per bucket ([`bucket_of`]).
    pub buckets: Vec<u64>,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            samples: 0,
            total_ns: 0,
            buckets: vec![0; BUCKETS],
        }
    }
}

impl Histogram {
    /// Mean duration in ns (NaN without samples).
    pub fn mean_ns(&self) -> f64 {
        self.total_ns as f64 / self.samples as f64
    }

    /// The `q` quantile (0..=1) in ns: the middle of the bucket holding it (NaN without
    /// samples).
    pub fn quantile_ns(&self, q: f64) -> f64 {
        let rank = (q.clamp(0.0, 1.0) * self.samples as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (b, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank && n > 0 {
                let (lo, hi) = (bucket_low(b), bucket_low(b + 1));
                return if b < 16 {
                    lo as f64
                } else {
                    (lo + hi) as f64 / 2.0
                };
            }
        }
        f64::NAN
    }

    /// The mean of the samples in buckets below `cutoff_ns`'s (each counted at its
    /// bucket's middle, so within 1/16), and how many samples were left out. A hold
    /// thousands of times the usual one is a preempted holder, not work under the lock.
    pub fn mean_below_ns(&self, cutoff_ns: u64) -> (f64, u64) {
        let first_out = bucket_of(cutoff_ns);
        let (mut n, mut sum) = (0u64, 0.0);
        for (b, &k) in self.buckets.iter().enumerate().take(first_out) {
            let mid = if b < 16 {
                b as f64
            } else {
                (bucket_low(b) + bucket_low(b + 1)) as f64 / 2.0
            };
            n += k;
            sum += mid * k as f64;
        }
        (sum / n as f64, self.samples - n)
    }

    /// `self - before`, bucket by bucket (the samples taken in between).
    pub fn since(&self, before: &Histogram) -> Histogram {
        Histogram {
            samples: self.samples.wrapping_sub(before.samples),
            total_ns: self.total_ns.wrapping_sub(before.total_ns),
            buckets: (self.buckets.iter().zip(&before.buckets))
                .map(|(a, b)| a.wrapping_sub(*b))
                .collect(),
        }
    }

    /// Adds `other`'s samples.
    pub fn add(&mut self, other: &Histogram) {
        self.samples += other.samples;
        self.total_ns += other.total_ns;
        self.buckets.resize(BUCKETS, 0);
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
    }

    /// Records one duration (tests and offline use; the locks record through their own
    /// atomic copy).
    pub fn record(&mut self, ns: u64) {
        self.samples += 1;
        self.total_ns += ns;
        self.buckets[bucket_of(ns)] += 1;
    }
}

/// One named lock's acquisition counts and sampled times, as the benchmark prints them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockStat {
    /// The kernel's name for the lock (`"pidmap_lock"`).
    pub name: &'static str,
    /// Exclusive acquisitions (for a mutex, all of them).
    pub write: u64,
    /// Shared acquisitions (rwlocks only).
    pub read: u64,
    /// Sampled hold times of exclusive acquisitions.
    pub hold: Histogram,
    /// Sampled wait times of the same acquisitions (0 when the lock was free).
    pub wait: Histogram,
}

impl LockStat {
    /// A lock called `name` never taken.
    pub fn zero(name: &'static str) -> LockStat {
        let (hold, wait) = (Histogram::default(), Histogram::default());
        LockStat {
            name,
            write: 0,
            read: 0,
            hold,
            wait,
        }
    }

    /// `self - before`: what happened in between (same lock, later reading).
    pub fn since(&self, before: &LockStat) -> LockStat {
        LockStat {
            name: self.name,
            write: self.write.wrapping_sub(before.write),
            read: self.read.wrapping_sub(before.read),
            hold: self.hold.since(&before.hold),
            wait: self.wait.since(&before.wait),
        }
    }

    /// Adds `other`'s counts and samples.
    pub fn add(&mut self, other: &LockStat) {
        self.write += other.write;
        self.read += other.read;
        self.hold.add(&other.hold);
        self.wait.add(&other.wait);
    }
}

/// Whether counting and timing are compiled in.
pub const ENABLED: bool = cfg!(feature = "lockstat");

/// One exclusive acquisition in this many is timed, unless [`set_sample_one_in`] says
/// otherwise.
pub const DEFAULT_SAMPLE_ONE_IN: u64 = 64;

#[cfg(feature = "lockstat")]
static SAMPLE_ONE_IN: AtomicU64 = AtomicU64::new(DEFAULT_SAMPLE_ONE_IN);

/// Times one exclusive acquisition in `n` on average, process-wide; 0 turns timing off
/// (counting goes on). Each thread picks the change up at its next draw (within the old
/// period, or 1024 acquisitions when timing was off). Returns the previous setting.
pub fn set_sample_one_in(n: u64) -> u64 {
    #[cfg(feature = "lockstat")]
    return SAMPLE_ONE_IN.swap(n, Relaxed);
    #[cfg(not(feature = "lockstat"))]
    {
        let _ = n;
        0
    }
}

/// The current sampling period (0: timing off, or the feature is off).
pub fn sample_one_in() -> u64 {
    #[cfg(feature = "lockstat")]
    return SAMPLE_ONE_IN.load(Relaxed);
    #[cfg(not(feature = "lockstat"))]
    0
}

#[cfg(feature = "lockstat")]
thread_local! {
    /// Exclusive acquisitions until this thread's next timed one (0: not drawn yet).
    static COUNTDOWN: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
    /// This thread's xorshift64 state (0: not seeded yet).
    static RNG: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
}

/// Whether this acquisition is timed: a per-thread countdown, so the common case is a
/// decrement and a branch.
#[cfg(feature = "lockstat")]
#[inline(always)]
fn sample_this() -> bool {
    COUNTDOWN.with(|c| {
        let n = c.get();
        if n > 1 {
            c.set(n - 1);
            return false;
        }
        redraw(c, n)
    })
}

/// The countdown ran out (`n == 1`: this acquisition is timed) or was never drawn
/// (`n == 0`). Gaps are uniform in `1..2 * period` (mean `period`), so that a fixed
/// sequence of call sites per life cycle cannot alias with them.
#[cfg(feature = "lockstat")]
#[cold]
#[inline(never)]
fn redraw(c: &core::cell::Cell<u64>, n: u64) -> bool {
    let period = SAMPLE_ONE_IN.load(Relaxed);
    let gap = || {
        let x = RNG.with(|r| {
            // Seeded from the thread-local's address: distinct per thread, never 0.
            let mut x = if r.get() == 0 {
                (r as *const _ as u64) | 1
            } else {
                r.get()
            };
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            r.set(x);
            x
        });
        if period == 0 {
            1024
        } else {
            1 + x % (2 * period - 1)
        }
    };
    let n = if n == 0 { gap() } else { n };
    if n > 1 {
        c.set(n - 1);
        return false;
    }
    c.set(gap());
    period != 0
}

/// The live counters behind a [`LockStat`]. Exclusive fields are written only by the
/// lock holder (load + store, no read-modify-write); `reads` by any reader (`fetch_add`).
#[derive(Default)]
struct Counters {
    #[cfg(feature = "lockstat")]
    live: Live,
}

#[cfg(feature = "lockstat")]
struct Live {
    writes: AtomicU64,
    reads: AtomicU64,
    hold: AtomicHistogram,
    wait: AtomicHistogram,
}

#[cfg(feature = "lockstat")]
impl Default for Live {
    fn default() -> Self {
        Live {
            writes: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            hold: AtomicHistogram::default(),
            wait: AtomicHistogram::default(),
        }
    }
}

#[cfg(feature = "lockstat")]
struct AtomicHistogram {
    samples: AtomicU64,
    total_ns: AtomicU64,
    buckets: Box<[AtomicU64]>,
}

#[cfg(feature = "lockstat")]
impl Default for AtomicHistogram {
    fn default() -> Self {
        AtomicHistogram {
            samples: AtomicU64::new(0),
            total_ns: AtomicU64::new(0),
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

#[cfg(feature = "lockstat")]
fn bump_exclusive(a: &AtomicU64, by: u64) {
    a.store(a.load(Relaxed).wrapping_add(by), Relaxed);
}

#[cfg(feature = "lockstat")]
impl AtomicHistogram {
    /// Only under the lock this histogram belongs to.
    fn record_exclusive(&self, ns: u64) {
        bump_exclusive(&self.samples, 1);
        bump_exclusive(&self.total_ns, ns);
        bump_exclusive(&self.buckets[bucket_of(ns)], 1);
    }

    fn snapshot(&self) -> Histogram {
        Histogram {
            samples: self.samples.load(Relaxed),
            total_ns: self.total_ns.load(Relaxed),
            buckets: self.buckets.iter().map(|b| b.load(Relaxed)).collect(),
        }
    }
}

impl Counters {
    fn stat(&self, name: &'static str) -> LockStat {
        #[cfg(feature = "lockstat")]
        return LockStat {
            name,
            write: self.live.writes.load(Relaxed),
            read: self.live.reads.load(Relaxed),
            hold: self.live.hold.snapshot(),
            wait: self.live.wait.snapshot(),
        };
        #[cfg(not(feature = "lockstat"))]
        LockStat::zero(name)
    }
}

/// What an exclusive guard remembers to record its hold time on drop.
struct Timed<'a> {
    #[cfg(feature = "lockstat")]
    sample: Option<(&'a Counters, Instant)>,
    #[cfg(not(feature = "lockstat"))]
    _lock: core::marker::PhantomData<&'a ()>,
}

impl<'a> Timed<'a> {
    /// Takes an exclusive lock through `try_acquire`/`acquire`, counting it and, when
    /// sampled, timing its wait and starting its hold clock.
    #[inline(always)]
    fn acquire<G>(
        counters: &'a Counters,
        try_acquire: impl FnOnce() -> Option<G>,
        acquire: impl FnOnce() -> G,
    ) -> (G, Timed<'a>) {
        #[cfg(feature = "lockstat")]
        {
            let (g, timed) = if sample_this() {
                Timed::sampled(counters, try_acquire, acquire)
            } else {
                (acquire(), Timed { sample: None })
            };
            bump_exclusive(&counters.live.writes, 1);
            (g, timed)
        }
        #[cfg(not(feature = "lockstat"))]
        {
            let _ = (counters, try_acquire);
            let _lock = core::marker::PhantomData;
            (acquire(), Timed { _lock })
        }
    }

    /// A timed acquisition: a wait of exactly 0 when the lock was free, the clock read
    /// around the blocking acquisition otherwise.
    #[cfg(feature = "lockstat")]
    #[cold]
    #[inline(never)]
    fn sampled<G>(
        counters: &'a Counters,
        try_acquire: impl FnOnce() -> Option<G>,
        acquire: impl FnOnce() -> G,
    ) -> (G, Timed<'a>) {
        let (g, wait_ns) = match try_acquire() {
            Some(g) => (g, 0),
            None => {
                let t0 = Instant::now();
                let g = acquire();
                (g, t0.elapsed().as_nanos() as u64)
            }
        };
        counters.live.wait.record_exclusive(wait_ns);
        (
            g,
            Timed {
                sample: Some((counters, Instant::now())),
            },
        )
    }
}

impl fmt::Debug for Timed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        #[cfg(feature = "lockstat")]
        return write!(f, "sampled: {}", self.sample.is_some());
        #[cfg(not(feature = "lockstat"))]
        f.write_str("untimed")
    }
}

impl Drop for Timed<'_> {
    #[inline]
    fn drop(&mut self) {
        // Runs before the guard field after it in the owning struct: still under the lock.
        #[cfg(feature = "lockstat")]
        if let Some((c, t)) = self.sample.take() {
            c.live.hold.record_exclusive(t.elapsed().as_nanos() as u64);
        }
    }
}

/// The guard of a [`NamedMutex`]: derefs to the data; records a sampled hold on drop.
pub struct NamedMutexGuard<'a, T> {
    // Field order matters: `timed` drops (and records) before `guard` unlocks.
    timed: Timed<'a>,
    guard: parking_lot::MutexGuard<'a, T>,
}

/// The exclusive guard of a [`NamedRwLock`]: derefs to the data; records a sampled hold
/// on drop.
pub struct NamedRwLockWriteGuard<'a, T> {
    timed: Timed<'a>,
    guard: parking_lot::RwLockWriteGuard<'a, T>,
}

macro_rules! guard_impls {
    ($guard:ident) => {
        impl<T> Deref for $guard<'_, T> {
            type Target = T;
            #[inline]
            fn deref(&self) -> &T {
                &self.guard
            }
        }
        impl<T> DerefMut for $guard<'_, T> {
            #[inline]
            fn deref_mut(&mut self) -> &mut T {
                &mut self.guard
            }
        }
        impl<T: fmt::Debug> fmt::Debug for $guard<'_, T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($guard))
                    .field("data", &*self.guard)
                    .field("timed", &self.timed)
                    .finish()
            }
        }
    };
}
guard_impls!(NamedMutexGuard);
guard_impls!(NamedRwLockWriteGuard);

/// A global mutex with a kernel name, an acquisition counter and sampled hold/wait
/// times (feature `lockstat`).
pub struct NamedMutex<T> {
    name: &'static str,
    counters: Counters,
    inner: parking_lot::Mutex<T>,
}

impl<T> NamedMutex<T> {
    /// A new lock called `name` protecting `value`.
    pub fn new(name: &'static str, value: T) -> Self {
        NamedMutex {
            name,
            counters: Counters::default(),
            inner: parking_lot::Mutex::new(value),
        }
    }

    /// Takes the lock, counting (and maybe timing) the acquisition.
    #[inline]
    pub fn lock(&self) -> NamedMutexGuard<'_, T> {
        let (guard, timed) = Timed::acquire(
            &self.counters,
            || self.inner.try_lock(),
            || self.inner.lock(),
        );
        NamedMutexGuard { timed, guard }
    }

    /// The lock's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Acquisitions so far (0 without the `lockstat` feature).
    pub fn acquisitions(&self) -> u64 {
        self.stat().write
    }

    /// The name, count and sampled times as a [`LockStat`].
    pub fn stat(&self) -> LockStat {
        self.counters.stat(self.name)
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

/// A global reader-writer lock with a kernel name, separate read/write counters and
/// sampled hold/wait times of its exclusive acquisitions.
pub struct NamedRwLock<T> {
    name: &'static str,
    counters: Counters,
    inner: parking_lot::RwLock<T>,
}

impl<T> NamedRwLock<T> {
    /// A new lock called `name` protecting `value`.
    pub fn new(name: &'static str, value: T) -> Self {
        NamedRwLock {
            name,
            counters: Counters::default(),
            inner: parking_lot::RwLock::new(value),
        }
    }

    /// Takes the lock exclusively (`write_lock_irq`), counting (and maybe timing) it.
    #[inline]
    pub fn write(&self) -> NamedRwLockWriteGuard<'_, T> {
        let (guard, timed) = Timed::acquire(
            &self.counters,
            || self.inner.try_write(),
            || self.inner.write(),
        );
        NamedRwLockWriteGuard { timed, guard }
    }

    /// Takes the lock shared (`read_lock`), counting it separately (never timed).
    #[inline]
    pub fn read(&self) -> parking_lot::RwLockReadGuard<'_, T> {
        let g = self.inner.read();
        #[cfg(feature = "lockstat")]
        self.counters.live.reads.fetch_add(1, Relaxed);
        g
    }

    /// The lock's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The name, both counts and the sampled times (0 without the `lockstat` feature).
    pub fn stat(&self) -> LockStat {
        self.counters.stat(self.name)
    }
}

impl<T> fmt::Debug for NamedRwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamedRwLock")
            .field("name", &self.name)
            .field("write", &self.stat().write)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tests that change the process-wide sampling period take this first.
    #[cfg(feature = "lockstat")]
    static PERIOD: std::sync::Mutex<()> = std::sync::Mutex::new(());

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

    #[test]
    fn buckets_are_contiguous_and_monotone() {
        for b in 0..BUCKETS - 1 {
            assert!(bucket_low(b) < bucket_low(b + 1), "{b}");
            assert_eq!(bucket_of(bucket_low(b)), b);
            assert_eq!(bucket_of(bucket_low(b + 1) - 1), b);
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn quantiles_within_a_sixteenth() {
        let mut h = Histogram::default();
        for ns in 1..=1000 {
            h.record(ns);
        }
        assert_eq!(h.mean_ns(), 500.5);
        for (q, want) in [(0.5, 500.0), (0.99, 990.0), (0.01, 10.0)] {
            let got = h.quantile_ns(q);
            assert!((got - want).abs() <= want / 16.0, "q{q}: {got} vs {want}");
        }
        let (trimmed, out) = h.mean_below_ns(512);
        assert_eq!(out, 1000 - 511, "512..=1000 left out");
        assert!((trimmed - 256.0).abs() < 256.0 / 16.0, "{trimmed}");
        let d = h.since(&Histogram::default());
        assert_eq!(d, h);
        assert!(Histogram::default().quantile_ns(0.5).is_nan());
    }

    /// Every exclusive acquisition is timed at a period of 1; the holds recorded are the
    /// ones slept through (at least), and uncontended waits are exactly 0.
    #[test]
    #[cfg(feature = "lockstat")]
    fn sampled_holds_cover_the_critical_section() {
        let m = NamedMutex::new("css_set_lock", ());
        let _serial = PERIOD.lock().unwrap();
        let before = m.stat();
        let old = set_sample_one_in(1);
        for _ in 0..3 {
            let _g = m.lock();
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        set_sample_one_in(old);
        let s = m.stat();
        let hold = s.hold.since(&before.hold);
        assert_eq!(hold.samples, 3);
        assert!(
            hold.quantile_ns(0.0) >= 2_000_000.0 * 15.0 / 16.0,
            "{hold:?}"
        );
        assert_eq!(s.wait.since(&before.wait).total_ns, 0);
    }

    #[test]
    #[cfg(feature = "lockstat")]
    fn contended_waits_are_timed() {
        let m = std::sync::Arc::new(NamedMutex::new("pidmap_lock", ()));
        let _serial = PERIOD.lock().unwrap();
        let old = set_sample_one_in(1);
        let g = m.lock();
        let m2 = m.clone();
        let t = std::thread::spawn(move || drop(m2.lock()));
        std::thread::sleep(std::time::Duration::from_millis(20));
        drop(g);
        t.join().unwrap();
        set_sample_one_in(old);
        let w = m.stat().wait;
        assert_eq!(w.samples, 2);
        assert!(w.total_ns >= 10_000_000, "{w:?}");
    }
}
