//! The pids controller: a hierarchical counter with a limit per cgroup
//! (`kernel/cgroup/pids.c`).
//!
//! Every non-root cgroup owns one [`PidsCounter`]. A task is counted in its cgroup and
//! in every ancestor below the root; the root keeps no counter. The charge walks from
//! the task's cgroup upwards with one atomic read-modify-write per level and reverts
//! the levels already charged when a level is full ([`try_charge`], modelling
//! `pids_try_charge`). No lock is taken: `pids.max` is read racily, as Linux does.
//!
//! See `IMPLEMENTATION.md` beside the crate for why each level uses a compare-exchange
//! that refuses to step over the limit rather than Linux's `atomic64_add_return` plus
//! revert, and why `Relaxed` suffices.

use core::fmt;
use core::str::FromStr;

use uproc_abi::Errno;

use crate::sync::{AtomicI64, AtomicU64, Ordering};

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

/// One cgroup's pids state (`struct pids_cgroup`).
///
/// All fields are atomics touched with `Relaxed` ordering: each is an independent
/// counter whose only invariant is about its own modification order (see
/// `IMPLEMENTATION.md`).
pub(crate) struct PidsCounter {
    /// `pids->counter`: tasks charged in this subtree (live, zombie, or mid-fork).
    counter: AtomicI64,
    /// `pids->limit`: `PIDS_MAX` means "max". Written without a lock.
    limit: AtomicI64,
    /// `pids->watermark`: the highest `counter` a successful charge produced.
    peak: AtomicI64,
    /// `events[PIDCG_MAX]`: rejections whose over-limit cgroup is this one or below.
    events_max: AtomicU64,
    /// `events_local[PIDCG_MAX]`: rejections whose over-limit cgroup is exactly this one.
    events_local_max: AtomicU64,
    /// `events_local[PIDCG_FORKFAIL]`: forks started here that were rejected (anywhere).
    forkfail: AtomicU64,
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
        }
    }

    /// `pids.current`.
    pub(crate) fn current(&self) -> u64 {
        let c = self.counter.load(Ordering::Relaxed);
        debug_assert!(
            c >= 0,
            "pids counter went negative: an uncharge without a charge"
        );
        c.max(0) as u64
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
    ///
    /// A compare-exchange loop instead of Linux's `atomic64_add_return` + revert: the
    /// counter never holds a value above the limit that a concurrent reader (or a
    /// concurrent charge at the same level) could see. Returns false when full.
    #[inline]
    pub(crate) fn try_charge_one(&self) -> bool {
        let limit = self.limit.load(Ordering::Relaxed);
        let mut cur = self.counter.load(Ordering::Relaxed);
        loop {
            let new = cur + 1;
            if new > limit {
                return false;
            }
            match self
                .counter
                .compare_exchange_weak(cur, new, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => {
                    self.update_peak(new);
                    return true;
                }
                Err(seen) => cur = seen,
            }
        }
    }

    /// One level of `pids_charge`: add 1 regardless of the limit (migration).
    #[inline]
    pub(crate) fn charge_one(&self) {
        let new = self.counter.fetch_add(1, Ordering::Relaxed) + 1;
        self.update_peak(new);
    }

    /// One level of `pids_cancel` / `pids_uncharge`.
    #[inline]
    pub(crate) fn uncharge_one(&self) {
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
pub(crate) fn try_charge<'a, I>(levels: I) -> Result<(), usize>
where
    I: Iterator<Item = &'a PidsCounter> + Clone,
{
    for (i, p) in levels.clone().enumerate() {
        if !p.try_charge_one() {
            for q in levels.take(i) {
                q.uncharge_one();
            }
            return Err(i);
        }
    }
    Ok(())
}

/// `pids_uncharge`: one task leaves every level of `levels`.
pub(crate) fn uncharge<'a, I>(levels: I)
where
    I: Iterator<Item = &'a PidsCounter>,
{
    for p in levels {
        p.uncharge_one();
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
        assert!(!a.try_charge_one());
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
