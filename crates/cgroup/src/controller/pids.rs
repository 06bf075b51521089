//! The pids controller: a hierarchical counter with a limit per cgroup
//! (`kernel/cgroup/pids.c`).
//!
//! Every non-root cgroup owns one [`PidsCounter`]. A task is counted in its cgroup and
//! in every ancestor below the root; the root keeps no counter. The charge walks from
//! the task's cgroup upwards with one atomic read-modify-write per level and reverts
//! the levels already charged when a level is full ([`try_charge`], modelling
//! `pids_try_charge`). `pids.max` is read racily, as Linux does. A thread's charges
//! and uncharges go through its own credit shard of each level; only a charge that
//! finds a level's counter at the limit takes that level's lock (the exact path), so a
//! fork is refused only when the level really is full.
//!
//! See `IMPLEMENTATION.md` beside the crate for why each level uses a compare-exchange
//! that refuses to step over the limit rather than Linux's `atomic64_add_return` plus
//! revert, how the exact path decides, and the memory orderings.

use core::fmt;
use core::str::FromStr;

use uproc_abi::Errno;

use crate::sync::{AtomicI64, AtomicU64, Mutex, Ordering, fence};

/// `PID_MAX_LIMIT` on 64-bit Linux: the largest value `pids.max` accepts.
pub const PID_MAX_LIMIT: u64 = 4 * 1024 * 1024;

/// `PIDS_MAX` (`PID_MAX_LIMIT + 1`): the stored limit that means "max".
pub(crate) const PIDS_MAX: i64 = PID_MAX_LIMIT as i64 + 1;

/// A `pids.max` value: no limit, or at most that many tasks in the subtree.
///
/// Parses and prints as cgroupfs does (`"max"`, `"50"`, `"0x10"`):
///
/// ```
/// use uproc_cgroup::Limit;
/// assert_eq!("max\n".parse::<Limit>(), Ok(Limit::Max));
/// assert_eq!(" 0x10 ".parse::<Limit>(), Ok(Limit::Value(16)));
/// assert_eq!(Limit::Value(3).to_string(), "3");
/// assert!("4194305".parse::<Limit>().is_err()); // above PID_MAX_LIMIT: EINVAL
/// ```
///
/// # References
/// `pids_max_write` / `pids_max_show` in `kernel/cgroup/pids.c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Limit {
    /// `"max"`: no limit of its own (ancestors' limits still apply).
    Max,
    /// At most this many tasks (0 ..= [`PID_MAX_LIMIT`]); `Value(0)` forbids every fork.
    Value(u64),
}

impl Limit {
    /// The value Linux stores in `pids->limit` (`PIDS_MAX` for "max"); EINVAL when out
    /// of range.
    pub(crate) fn to_raw(self) -> Result<i64, Errno> {
        match self {
            Limit::Max => Ok(PIDS_MAX),
            Limit::Value(n) if n <= PID_MAX_LIMIT => Ok(n as i64),
            Limit::Value(_) => Err(Errno::EINVAL),
        }
    }

    fn from_raw(raw: i64) -> Limit {
        if raw >= PIDS_MAX {
            Limit::Max
        } else {
            Limit::Value(raw as u64)
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::Max => f.write_str("max"),
            Limit::Value(n) => write!(f, "{n}"),
        }
    }
}

impl FromStr for Limit {
    type Err = Errno;

    /// `pids_max_write`: strip surrounding whitespace; `"max"`, or `kstrtoll(buf, 0)`
    /// with `0 <= n < PIDS_MAX`. Negative or too large: EINVAL; unparsable: EINVAL;
    /// beyond `i64`: ERANGE (kstrtoll's overflow error).
    fn from_str(s: &str) -> Result<Limit, Errno> {
        let s = crate::files::strstrip(s);
        if s == "max" {
            return Ok(Limit::Max);
        }
        let n = crate::files::kstrtoll(s)?;
        if !(0..PIDS_MAX).contains(&n) {
            return Err(Errno::EINVAL);
        }
        Ok(Limit::Value(n as u64))
    }
}

/// Charge-credit shards per level: a thread parks the charges it uncharges in
/// shard (thread index % this) and spends them on its next forks. A power of two, so
/// a shard index is masked rather than bounds-checked. (The loom model names shards
/// 0 to 2 and explores fewer.)
#[cfg(not(loom))]
pub(crate) const CREDIT_SHARDS: usize = 8;
#[cfg(loom)]
pub(crate) const CREDIT_SHARDS: usize = 4;
const _: () = assert!(CREDIT_SHARDS.is_power_of_two());

/// Agreeing readings [`PidsCounter::settled_current`] tries for before it takes the
/// exact path's lock (which bounds the loop).
const SETTLE_TRIES: usize = 4;

/// The most charges one shard parks; beyond, an uncharge goes to the shared counter.
const CREDIT_CAP: i64 = 32;

/// A shard the exact path has closed: its credits are back in the counter, and until
/// it reopens (0) no credit is spent from it or parked in it.
const CLOSED: i64 = -1;

/// One shard's parked charges, on its own cache lines.
#[repr(align(128))]
struct Credit(AtomicI64);

/// One cgroup's pids state (`struct pids_cgroup`).
///
/// The counters are atomics, mostly `Relaxed` (see `IMPLEMENTATION.md`).
///
/// `pids.current` = `counter` - the credits parked in the shards. An uncharge parks
/// its charge in the calling thread's shard instead of lowering the shared counter,
/// and the thread's next charge spends it without touching the counter: a worker
/// that forks, exits and reaps writes only its own shard's line. A credit is spent
/// only while `counter <= limit`, so `current + 1 <= counter <= limit`: the limit is
/// never stepped over. A charge the counter refuses takes the level's `exact` lock,
/// closes every shard (their credits go back into the counter, and no credit is spent
/// or parked until they reopen), and tries the counter again: with no credit anywhere
/// the counter is `pids.current`, so EAGAIN means the level was full at that moment.
pub(crate) struct PidsCounter {
    /// `pids->counter`, plus the credits parked in `credits`.
    counter: AtomicI64,
    /// `pids->limit`: `PIDS_MAX` means "max". Written without a lock.
    limit: AtomicI64,
    /// `pids->watermark`: the highest `pids.current` a successful charge produced.
    peak: AtomicI64,
    /// `events[PIDCG_MAX]`: rejections whose over-limit cgroup is this one or below.
    events_max: AtomicU64,
    /// `events_local[PIDCG_MAX]`: rejections whose over-limit cgroup is exactly this one.
    events_local_max: AtomicU64,
    /// `events_local[PIDCG_FORKFAIL]`: forks started here that were rejected (anywhere).
    forkfail: AtomicU64,
    /// Serialises the exact path (the shards' closing, the decision, their reopening).
    /// Taken only by a charge that found `counter` at the limit, and by a reading of
    /// `pids.current` that raced one.
    exact: Mutex<()>,
    /// Odd while the exact path has credits in flight (swapped out of the shards, not
    /// yet subtracted from `counter`): a sequence lock for the readers of
    /// `pids.current` (the file, the watermark). Written only by the exact path.
    moving: AtomicU64,
    /// Charges counted in `counter` that no task holds, parked per thread shard
    /// ([`CLOSED`] while the exact path holds them).
    credits: [Credit; CREDIT_SHARDS],
}

impl PidsCounter {
    /// A counter at 0 with limit "max" (`pids_css_alloc`).
    pub(crate) fn new() -> PidsCounter {
        PidsCounter {
            counter: AtomicI64::new(0),
            limit: AtomicI64::new(PIDS_MAX),
            peak: AtomicI64::new(0),
            events_max: AtomicU64::new(0),
            events_local_max: AtomicU64::new(0),
            forkfail: AtomicU64::new(0),
            exact: Mutex::new(()),
            moving: AtomicU64::new(0),
            credits: core::array::from_fn(|_| Credit(AtomicI64::new(0))),
        }
    }

    /// `pids.current`: the counter less the parked credits (exact at rest; a reader
    /// racing a fork may be off by the charges in flight, as with Linux's counter).
    pub(crate) fn current(&self) -> u64 {
        self.settled_current().max(0) as u64
    }

    /// The counter less the parked credits, never counting credits the exact path has
    /// in flight: read between two equal even values of `moving` (a sequence lock), or
    /// else under the exact path's lock, once it has finished. Racing charges and
    /// uncharges elsewhere can still move it by one each while the shards are summed.
    ///
    /// Outside loom the shards are summed twice and a reading counts only if both sums
    /// agree (up to [`SETTLE_TRIES`] times, then the lock): one pass reads the shards one
    /// by one, so a credit spent on a shard it has not read yet while another is parked
    /// on one it has read makes it read high, and with several racing threads, or a
    /// reader preempted mid-pass, by more than one; `pids.peak` would keep that for good.
    /// The second pass only rejects readings (every one it lets through is what one
    /// pass returns), so `tests/loom_pids.rs` models one pass, which keeps its
    /// exploration small enough for CI.
    fn settled_current(&self) -> i64 {
        for _ in 0..SETTLE_TRIES {
            let before = self.moving.load(Ordering::Acquire);
            if before % 2 != 0 {
                break;
            }
            let current = self.counter.load(Ordering::Relaxed) - self.credits_parked();
            let agreed = cfg!(loom)
                || current == self.counter.load(Ordering::Relaxed) - self.credits_parked();
            fence(Ordering::Acquire);
            if agreed && self.moving.load(Ordering::Relaxed) == before {
                return current;
            }
            if cfg!(loom) {
                break;
            }
        }
        let _exact = self.exact.lock();
        self.counter.load(Ordering::Relaxed) - self.credits_parked()
    }

    /// Shard `shard`'s credits (any index: it is masked).
    #[inline]
    fn credit(&self, shard: usize) -> &AtomicI64 {
        &self.credits[shard & (CREDIT_SHARDS - 1)].0
    }

    /// The credits parked now (a closed shard holds none).
    fn credits_parked(&self) -> i64 {
        self.credits
            .iter()
            .map(|c| c.0.load(Ordering::Relaxed).max(0))
            .sum()
    }

    /// `pids.max`.
    pub(crate) fn limit(&self) -> Limit {
        Limit::from_raw(self.limit.load(Ordering::Relaxed))
    }

    /// `pids_max_write`: a plain store, no lock; racing forks may see the old limit.
    pub(crate) fn set_limit(&self, limit: Limit) -> Result<(), Errno> {
        self.limit.store(limit.to_raw()?, Ordering::Relaxed);
        Ok(())
    }

    /// `pids.peak`.
    pub(crate) fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed).max(0) as u64
    }

    /// `pids.events`' "max" count.
    pub(crate) fn events_max(&self) -> u64 {
        self.events_max.load(Ordering::Relaxed)
    }

    /// `pids.events.local`'s "max" count.
    pub(crate) fn events_local_max(&self) -> u64 {
        self.events_local_max.load(Ordering::Relaxed)
    }

    /// Forks started in this cgroup that the controller rejected.
    pub(crate) fn forkfail(&self) -> u64 {
        self.forkfail.load(Ordering::Relaxed)
    }

    /// One level of `pids_try_charge`: add 1 unless that would step over the limit.
    /// `shard` is the calling thread's credit shard.
    ///
    /// A parked credit is spent first (one compare-exchange on the thread's own line;
    /// `Release`, so what the spender saw uncharged before is seen by an exact path
    /// that closes this shard later). Otherwise a compare-exchange loop on the counter
    /// instead of Linux's `atomic64_add_return` + revert: the counter never holds a
    /// value above the limit that a concurrent reader (or a concurrent charge at the
    /// same level) could see. When the counter is at the limit, the exact path decides.
    /// Returns false when full.
    #[inline]
    pub(crate) fn try_charge_one(&self, shard: usize) -> bool {
        let credit = self.credit(shard);
        let parked = credit.load(Ordering::Relaxed);
        if parked > 0 {
            let counter = self.counter.load(Ordering::Relaxed);
            if counter <= self.limit.load(Ordering::Relaxed)
                && credit
                    .compare_exchange(parked, parked - 1, Ordering::Release, Ordering::Relaxed)
                    .is_ok()
            {
                // current <= counter: the watermark needs a look only below it.
                if counter > self.peak.load(Ordering::Relaxed) {
                    self.update_peak(self.settled_current());
                }
                return true;
            }
        }
        if self.try_add().is_some() {
            self.update_peak(self.settled_current());
            return true;
        }
        self.charge_exactly()
    }

    /// The shared counter's compare-exchange loop: the new value, or `None` when it is
    /// at the limit. The caller updates the watermark.
    fn try_add(&self) -> Option<i64> {
        let limit = self.limit.load(Ordering::Relaxed);
        let mut cur = self.counter.load(Ordering::Relaxed);
        loop {
            let new = cur + 1;
            if new > limit {
                return None;
            }
            match self
                .counter
                .compare_exchange_weak(cur, new, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Some(new),
                Err(seen) => cur = seen,
            }
        }
    }

    /// The exact path, for a charge that found the counter at the limit: under the
    /// level's lock, close every shard (its credits leave the counter), try the
    /// counter once more, reopen the shards.
    ///
    /// While every shard is closed no credit is parked, spent or in flight (the lock
    /// keeps out every other taker), so the counter is `pids.current`: the
    /// compare-exchange loop refuses only if the level is full at the moment it reads
    /// the counter. Uncharges meanwhile go straight to the counter and make room
    /// at once; charges that find the counter full wait for the lock.
    #[cold]
    #[inline(never)]
    fn charge_exactly(&self) -> bool {
        let _exact = self.exact.lock();
        // A sequence-lock write section around the credits in flight.
        let moving = self.moving.load(Ordering::Relaxed);
        self.moving.store(moving + 1, Ordering::Relaxed);
        fence(Ordering::Release);
        let mut taken = 0;
        for c in self.credits.iter() {
            // `Acquire`: a spend's `Release` (see `try_charge_one`).
            let parked = c.0.swap(CLOSED, Ordering::Acquire);
            debug_assert!(parked >= 0, "a shard closed outside the exact path");
            taken += parked;
        }
        if taken > 0 {
            self.counter.fetch_sub(taken, Ordering::Relaxed);
        }
        self.moving.store(moving + 2, Ordering::Release);
        // Every shard closed, nothing in flight: the counter is `pids.current`.
        let charged = self.try_add();
        if let Some(new) = charged {
            self.update_peak(new);
        }
        for c in self.credits.iter() {
            c.0.store(0, Ordering::Relaxed);
        }
        charged.is_some()
    }

    /// One level of `pids_charge`: add 1 regardless of the limit (migration).
    #[inline]
    pub(crate) fn charge_one(&self) {
        self.counter.fetch_add(1, Ordering::Relaxed);
        self.update_peak(self.settled_current());
    }

    /// One level of `pids_cancel` / `pids_uncharge`: the charge is parked in the
    /// calling thread's shard (`shard`), or leaves the counter when the shard is full,
    /// closed by the exact path, or just changed by another thread on the same shard.
    #[inline]
    pub(crate) fn uncharge_one(&self, shard: usize) {
        let credit = self.credit(shard);
        let parked = credit.load(Ordering::Relaxed);
        // A compare-exchange, not an add: a closed shard (< 0) must stay closed.
        if (0..CREDIT_CAP).contains(&parked)
            && credit
                .compare_exchange(parked, parked + 1, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            return;
        }
        let old = self.counter.fetch_sub(1, Ordering::Relaxed);
        debug_assert!(old > 0, "pids uncharge below zero");
    }

    /// One level of a migration's uncharge: straight off the counter (the charge was
    /// made by whoever forked the task, not by this thread).
    #[inline]
    pub(crate) fn uncharge_shared(&self) {
        let old = self.counter.fetch_sub(1, Ordering::Relaxed);
        debug_assert!(old > 0, "pids uncharge below zero");
    }

    /// `pids_update_watermark`: racy high-water mark, never decreases.
    #[inline]
    fn update_peak(&self, new: i64) {
        if new > self.peak.load(Ordering::Relaxed) {
            self.peak.fetch_max(new, Ordering::Relaxed);
        }
    }

    /// The forking cgroup's half of `pids_event`; returns true the first time (Linux
    /// logs only then).
    pub(crate) fn note_forkfail(&self) -> bool {
        self.forkfail.fetch_add(1, Ordering::Relaxed) == 0
    }

    fn note_max_local(&self) {
        self.events_local_max.fetch_add(1, Ordering::Relaxed);
    }

    fn note_max(&self) {
        self.events_max.fetch_add(1, Ordering::Relaxed);
    }
}

impl fmt::Debug for PidsCounter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PidsCounter")
            .field("current", &self.current())
            .field("max", &self.limit())
            .field("peak", &self.peak())
            .finish_non_exhaustive()
    }
}

/// `pids_try_charge`: charge one task to every level of `levels` (the forking cgroup's
/// counter first, then each ancestor's, root excluded).
///
/// On the first full level, every level already charged is uncharged again and the
/// index of the full level (`L`, "over limit") is returned; nothing stays charged.
#[inline]
pub(crate) fn try_charge<'a, I>(levels: I) -> Result<(), usize>
where
    I: Iterator<Item = &'a PidsCounter> + Clone,
{
    try_charge_with(levels, credit_shard)
}

/// [`try_charge`] with the credit shard named (the loom model's threads share one OS
/// thread).
#[cfg(loom)]
pub(crate) fn try_charge_on<'a, I>(levels: I, shard: usize) -> Result<(), usize>
where
    I: Iterator<Item = &'a PidsCounter> + Clone,
{
    try_charge_with(levels, || shard)
}

/// [`try_charge`] on the shard `shard` names, looked up only if there is a level (the
/// root keeps no counter: a fork into it looks up no shard).
#[inline]
fn try_charge_with<'a, I>(levels: I, shard: impl FnOnce() -> usize) -> Result<(), usize>
where
    I: Iterator<Item = &'a PidsCounter> + Clone,
{
    let mut above = levels.clone();
    let Some(first) = above.next() else {
        return Ok(());
    };
    let shard = shard();
    if !first.try_charge_one(shard) {
        return Err(0);
    }
    for (i, p) in above.enumerate() {
        if !p.try_charge_one(shard) {
            for q in levels.take(i + 1) {
                q.uncharge_one(shard);
            }
            return Err(i + 1);
        }
    }
    Ok(())
}

/// `pids_uncharge`: one task leaves every level of `levels` (cancel, release).
#[inline]
pub(crate) fn uncharge<'a, I>(levels: I)
where
    I: Iterator<Item = &'a PidsCounter>,
{
    uncharge_with(levels, credit_shard)
}

/// [`uncharge`] with the credit shard named.
#[cfg(loom)]
pub(crate) fn uncharge_on<'a, I>(levels: I, shard: usize)
where
    I: Iterator<Item = &'a PidsCounter>,
{
    uncharge_with(levels, || shard)
}

/// [`uncharge`] on the shard `shard` names, looked up only if there is a level.
#[inline]
fn uncharge_with<'a, I>(mut levels: I, shard: impl FnOnce() -> usize)
where
    I: Iterator<Item = &'a PidsCounter>,
{
    let Some(first) = levels.next() else {
        return;
    };
    let shard = shard();
    first.uncharge_one(shard);
    for p in levels {
        p.uncharge_one(shard);
    }
}

/// A migration's source side: one task leaves every level, off the counters.
pub(crate) fn uncharge_shared<'a, I>(levels: I)
where
    I: Iterator<Item = &'a PidsCounter>,
{
    for p in levels {
        p.uncharge_shared();
    }
}

/// `pids_charge`: one task enters every level unconditionally (migration).
pub(crate) fn charge<'a, I>(levels: I)
where
    I: Iterator<Item = &'a PidsCounter>,
{
    for p in levels {
        p.charge_one();
    }
}

/// The watermark half of `pids_charge` on levels a migration charges and at once
/// uncharges (its common ancestors): each peak records one task more than the level
/// holds; the counter does not move.
pub(crate) fn peak_one_more<'a, I>(levels: I)
where
    I: Iterator<Item = &'a PidsCounter>,
{
    for p in levels {
        p.update_peak(p.settled_current() + 1);
    }
}

/// Hands each thread the next credit shard, round robin.
static NEXT_CREDIT_SHARD: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A thread that has no credit shard yet.
const NO_SHARD: usize = usize::MAX;

std::thread_local! {
    /// This thread's credit shard (round robin over threads), assigned at its first
    /// charge or uncharge. Constant-initialised with no destructor: reading it is one
    /// thread-local load, no lazy-initialisation state.
    static CREDIT_SHARD: core::cell::Cell<usize> = const { core::cell::Cell::new(NO_SHARD) };
}

/// The calling thread's credit shard.
#[inline]
fn credit_shard() -> usize {
    CREDIT_SHARD.with(|s| match s.get() {
        NO_SHARD => assign_credit_shard(s),
        shard => shard,
    })
}

#[cold]
fn assign_credit_shard(slot: &core::cell::Cell<usize>) -> usize {
    let shard =
        NEXT_CREDIT_SHARD.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % CREDIT_SHARDS;
    slot.set(shard);
    shard
}

/// `pids_event` on the default hierarchy (no `pids_localevents`): the forking cgroup's
/// FORKFAIL count (done by the caller, which knows the path to log), then
/// `events_local[MAX]` of the over-limit level and `events[MAX]` of it and every
/// ancestor below the root. `over_limit` starts at the over-limit level.
pub(crate) fn note_max_event<'a, I>(mut over_limit: I)
where
    I: Iterator<Item = &'a PidsCounter>,
{
    if let Some(l) = over_limit.next() {
        l.note_max_local();
        l.note_max();
    }
    for p in over_limit {
        p.note_max();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn full_level_reverts_lower_levels() {
        let (a, b) = (PidsCounter::new(), PidsCounter::new());
        b.set_limit(Limit::Value(1)).unwrap();
        assert_eq!(try_charge([&a, &b].into_iter()), Ok(()));
        assert_eq!(try_charge([&a, &b].into_iter()), Err(1));
        // The revert of level 0 parked a credit: still exact.
        assert_eq!((a.current(), b.current()), (1, 1));
        // As in Linux, a level's watermark moves as soon as that level passes, even if
        // a level above then rejects the fork.
        assert_eq!((a.peak(), b.peak()), (2, 1));
        uncharge([&a, &b].into_iter());
        assert_eq!((a.current(), b.current()), (0, 0));
    }

    #[test]
    fn migration_charge_ignores_limit_and_moves_peak() {
        let a = PidsCounter::new();
        a.set_limit(Limit::Value(0)).unwrap();
        charge([&a].into_iter());
        assert_eq!((a.current(), a.peak()), (1, 1));
        assert!(!a.try_charge_one(0));
    }

    #[test]
    fn credits_are_spent_and_taken_back_exactly() {
        let a = PidsCounter::new();
        a.set_limit(Limit::Value(2)).unwrap();
        // Two charges on shard 0, both uncharged there: parked, not in current.
        assert!(a.try_charge_one(0) && a.try_charge_one(0));
        a.uncharge_one(0);
        a.uncharge_one(0);
        assert_eq!((a.current(), a.peak()), (0, 2));
        // Shard 1 has no credit and the counter is at the limit: it takes shard 0's
        // credits back and charges, up to the limit and no further.
        assert!(a.try_charge_one(1) && a.try_charge_one(1));
        assert!(!a.try_charge_one(1) && !a.try_charge_one(0));
        assert_eq!((a.current(), a.peak()), (2, 2));
        // A lowered limit stops a thread's own credit too.
        a.uncharge_one(1);
        a.set_limit(Limit::Value(0)).unwrap();
        assert!(!a.try_charge_one(1));
        assert_eq!(a.current(), 1);
        a.uncharge_one(0);
        assert_eq!(a.current(), 0);
    }

    #[test]
    fn peak_follows_current_not_the_parked_credits() {
        let a = PidsCounter::new();
        assert!(a.try_charge_one(0));
        a.uncharge_one(0);
        // Counter 1 with one credit parked on shard 0: shard 1's charge is current 1.
        assert!(a.try_charge_one(1));
        assert_eq!((a.current(), a.peak()), (1, 1));
        // Shard 0 spends its credit: current 2, and the watermark follows.
        assert!(a.try_charge_one(0));
        assert_eq!((a.current(), a.peak()), (2, 2));
    }

    #[test]
    fn a_full_shard_uncharges_the_counter() {
        let a = PidsCounter::new();
        for _ in 0..CREDIT_CAP + 5 {
            assert!(a.try_charge_one(0));
        }
        assert_eq!(a.current(), (CREDIT_CAP + 5) as u64);
        for _ in 0..CREDIT_CAP + 5 {
            a.uncharge_one(0);
        }
        assert_eq!(a.current(), 0);
        assert_eq!(a.credits_parked(), CREDIT_CAP);
    }

    #[test]
    fn the_exact_path_takes_every_shards_credits_back_and_reopens_them() {
        let a = PidsCounter::new();
        a.set_limit(Limit::Value(3)).unwrap();
        // Three charges on three shards, reaped there: counter 3 = limit, current 0.
        for shard in 0..3 {
            assert!(a.try_charge_one(shard));
        }
        for shard in 0..3 {
            a.uncharge_one(shard);
        }
        assert_eq!((a.counter.load(Ordering::Relaxed), a.current()), (3, 0));
        // Shard 3 has no credit and the counter is full: the exact path.
        assert!(a.try_charge_one(3));
        assert_eq!((a.counter.load(Ordering::Relaxed), a.current()), (1, 1));
        assert!(a.credits.iter().all(|c| c.0.load(Ordering::Relaxed) == 0));
        // Really full now: refused, and nothing changes.
        assert!(a.try_charge_one(3) && a.try_charge_one(4));
        assert!(!a.try_charge_one(5) && !a.try_charge_one(0));
        assert_eq!((a.current(), a.peak()), (3, 3));
        assert!(a.credits.iter().all(|c| c.0.load(Ordering::Relaxed) == 0));
    }

    #[test]
    fn a_closed_shard_takes_no_credit_and_gives_none() {
        let a = PidsCounter::new();
        assert!(a.try_charge_one(0) && a.try_charge_one(0));
        // What the exact path does to a shard while it decides.
        a.credits[0].0.store(CLOSED, Ordering::Relaxed);
        assert_eq!(a.current(), 2, "a closed shard counts as no credit");
        // A park goes to the counter and leaves the shard closed.
        a.uncharge_one(0);
        assert_eq!(a.credits[0].0.load(Ordering::Relaxed), CLOSED);
        assert_eq!((a.counter.load(Ordering::Relaxed), a.current()), (1, 1));
        // A charge spends nothing from it: it goes to the counter.
        assert!(a.try_charge_one(0));
        assert_eq!(a.credits[0].0.load(Ordering::Relaxed), CLOSED);
        assert_eq!((a.counter.load(Ordering::Relaxed), a.current()), (2, 2));
        a.credits[0].0.store(0, Ordering::Relaxed);
        a.uncharge_one(0);
        a.uncharge_one(0);
        assert_eq!((a.current(), a.credits_parked()), (0, 2));
    }

    #[test]
    fn limit_range() {
        let a = PidsCounter::new();
        assert_eq!(a.set_limit(Limit::Value(PID_MAX_LIMIT)), Ok(()));
        assert_eq!(a.limit(), Limit::Value(PID_MAX_LIMIT));
        assert_eq!(
            a.set_limit(Limit::Value(PID_MAX_LIMIT + 1)),
            Err(Errno::EINVAL)
        );
        assert_eq!(a.set_limit(Limit::Max), Ok(()));
        assert_eq!(a.limit(), Limit::Max);
    }
}
