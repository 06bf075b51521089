//! Per-thread credits of a namespace's reference count (`Scalable`): the
//! `get_pid_ns`/`put_pid_ns` of every `alloc_pid` and `Pid` drop (of the pid's
//! innermost level) without a write to the one line every fork into the namespace
//! shares, while a guard holds them open: the runtime's for its root namespace, a
//! nested namespace's init task's for that namespace.
//!
//! Every `Pid` keeps its namespace alive with an `Arc<PidNamespace>`, as `struct pid`
//! holds a reference on its `pid_namespace` in Linux. Cloning that `Arc` at each fork
//! and dropping it with each `Pid` is two atomic read-modify-writes on the namespace's
//! strong count, which all workers forking in the namespace share: on the 2-core
//! machine of the benchmark it was the one remaining shared line of the `Scalable`
//! life cycle, and removing it took two workers from 1.23x to 1.83x one worker's rate.
//!
//! A *credit* is one strong count of the namespace that a shard holds instead of a
//! `Pid`. Shards are per thread (the same assignment as the allocation count,
//! [`crate::count`]), each alone on its cache-line pair:
//!
//! ```text
//!   shard[0].word   shard[1].word   ...   shard[15].word      (128-byte lines)
//!   | CLOSED | credits (u63) |
//!
//!   alloc_pid:  credits > 0 ?  credits -= 1, the Pid owns that count   (own line)
//!               credits == 0 ? strong += BATCH (burst on one line), credits += BATCH-1
//!   Pid drop:   credits < HIGH ? credits += 1, the count moves to the shard (own line)
//!               else / CLOSED  : a plain Arc drop
//!   close:      each shard: word = CLOSED, strong -= the credits it held
//! ```
//!
//! Invariant: `strong count = plain Arcs + Arcs held by Pids + sum of credits`. Credits
//! are real counts, so the namespace cannot be freed while a shard holds one; they are
//! given back when the [`PidRefCredits`] guard its owner (the runtime) holds is
//! dropped. A namespace nobody opened credits on has every shard `CLOSED` and behaves
//! exactly as a plain `Arc` does.
//!
//! Memory orderings: a given-back credit carries its `Pid`'s uses of the namespace;
//! whoever drops the last count must see them, as `Arc`'s own release decrement and
//! acquire fence ensure for a plain drop. Each operation on a shard word is an
//! `AcqRel` read-modify-write, so the closer's swap acquires every give-back before
//! it, and its decrements (release, in `Arc`) pass them on to the final drop. Only one
//! word is involved, so no fence is needed: a give-back that loses to the close sees
//! `CLOSED` in its compare-exchange and drops its `Arc` itself.
//!
//! `tests/loom_ref_credits.rs` checks the counting (no credit lost or invented) under
//! every interleaving of takes, give-backs, refills and the close.

use crate::sync::{AtomicU64, Ordering};

/// The shard is closed: no take, give or refill; the `Arc` is used plainly.
const CLOSED: u64 = 1 << 63;
/// Strong counts added at once when a shard runs dry.
const BATCH: u64 = if cfg!(loom) { 2 } else { 64 };
/// A shard holding this many credits hands further give-backs to the `Arc`: a thread
/// that only drops `Pid`s (a reaper forking nothing) does not hoard counts.
const HIGH: u64 = 4 * BATCH;

#[repr(align(128))]
struct Shard {
    word: AtomicU64,
}

/// The credit shards of one namespace.
pub(crate) struct RefCredits {
    shards: Box<[Shard; crate::count::SHARDS]>,
}

impl RefCredits {
    /// Every shard closed: a plain `Arc` until [`open`](Self::open).
    pub(crate) fn new() -> RefCredits {
        RefCredits {
            shards: Box::new(std::array::from_fn(|_| Shard {
                word: AtomicU64::new(CLOSED),
            })),
        }
    }

    #[inline]
    fn mine(&self) -> &Shard {
        &self.shards[crate::count::my_shard() % crate::count::SHARDS]
    }

    /// Opens every shard with no credits. False if any was open already (one owner).
    pub(crate) fn open(&self) -> bool {
        let mut opened = true;
        for s in self.shards.iter() {
            opened &= s
                .word
                .compare_exchange(CLOSED, 0, Ordering::AcqRel, Ordering::Acquire)
                .is_ok();
        }
        opened
    }

    /// Takes one credit from this thread's shard: true if one was there (the caller
    /// now owns that strong count); false if the shard is empty or closed.
    #[inline]
    fn try_take(&self) -> bool {
        let s = self.mine();
        let mut w = s.word.load(Ordering::Acquire);
        loop {
            if w & CLOSED != 0 || w == 0 {
                return false;
            }
            match s
                .word
                .compare_exchange_weak(w, w - 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return true,
                Err(now) => w = now,
            }
        }
    }

    /// Whether this thread's shard is open (a refill would be kept).
    #[inline]
    fn is_open_here(&self) -> bool {
        self.mine().word.load(Ordering::Acquire) & CLOSED == 0
    }

    /// `get_pid_ns`: makes the caller the owner of one more strong count, from this
    /// thread's credits when it can. `inc(n)` adds `n` counts to the shared strong
    /// count; `dec(n)` removes `n` the caller owns (it holds one more besides, so the
    /// count never reaches zero there). Dry: one burst of `BATCH` increments on the
    /// shared line, once per `BATCH` takes.
    #[inline]
    pub(crate) fn acquire(&self, inc: impl Fn(u64), dec: impl Fn(u64)) {
        if !self.try_take() {
            self.acquire_dry(inc, dec);
        }
    }

    /// [`acquire`](Self::acquire) with no credit in this thread's shard: out of line,
    /// so the common case inlines into `alloc_pid`.
    #[cold]
    #[inline(never)]
    fn acquire_dry(&self, inc: impl Fn(u64), dec: impl Fn(u64)) {
        if !self.is_open_here() {
            inc(1);
            return;
        }
        inc(BATCH);
        if !self.refill(BATCH - 1) {
            dec(BATCH - 1);
        }
    }

    /// Adds `n` credits the caller holds as strong counts to this thread's shard: true
    /// if kept; false if the shard closed meanwhile (the caller still owns them).
    fn refill(&self, n: u64) -> bool {
        let s = self.mine();
        let mut w = s.word.load(Ordering::Acquire);
        loop {
            if w & CLOSED != 0 {
                return false;
            }
            match s
                .word
                .compare_exchange_weak(w, w + n, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return true,
                Err(now) => w = now,
            }
        }
    }

    /// `put_pid_ns`: gives one strong count the caller owns to this thread's shard:
    /// true if kept; false if the shard is closed or full (the caller drops it plainly).
    #[inline]
    pub(crate) fn try_give(&self) -> bool {
        let s = self.mine();
        let mut w = s.word.load(Ordering::Acquire);
        loop {
            if w & CLOSED != 0 || w >= HIGH {
                return false;
            }
            match s
                .word
                .compare_exchange_weak(w, w + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return true,
                Err(now) => w = now,
            }
        }
    }

    /// Closes every shard: returns the credits they held, strong counts the caller
    /// now owns and must put back.
    pub(crate) fn close(&self) -> u64 {
        self.shards
            .iter()
            .map(|s| s.word.swap(CLOSED, Ordering::AcqRel) & !CLOSED)
            .sum()
    }
}

/// The guard of a namespace's credits: while it lives, the pids whose innermost
/// namespace it is take and give back their namespace reference through per-thread
/// credits; dropping it gives every credit back to the namespace's strong count. The
/// runtime holds one for its root namespace and a nested namespace's init task one for
/// its namespace (`Scalable`), so the namespace is freed, as with a plain `Arc`, once
/// that owner and the last `Pid` are gone.
#[must_use = "dropping the guard closes the credits again"]
pub struct PidRefCredits {
    ns: std::sync::Arc<crate::PidNamespace>,
}

impl PidRefCredits {
    pub(crate) fn new(ns: std::sync::Arc<crate::PidNamespace>) -> PidRefCredits {
        PidRefCredits { ns }
    }
}

impl std::fmt::Debug for PidRefCredits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PidRefCredits")
            .field("ns", &self.ns)
            .finish()
    }
}

impl Drop for PidRefCredits {
    fn drop(&mut self) {
        self.ns.close_ref_credits();
    }
}
