//! `PidNamespace` and `PidMap`: the namespace tree and the runtime-wide state its
//! allocator shares.

use crate::idr::Idr;
use crate::pid::{Attachment, Pid};
use crate::pool::{MAX_BATCH, NumberPool, PoolLockStats};
use crate::ref_credits::{PidRefCredits, RefCredits};
use crate::{MAX_PID_NS_LEVEL, PID_MAX_LIMIT, PID_MAX_MIN};
use parking_lot::RwLock;
use std::any::Any;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use uproc_abi::lockstat::{LockStat, NamedMutex};
use uproc_abi::{Errno, Profile};

/// What pidfs hooks into pid allocation and freeing (`pidfs_add_pid`,
/// `pidfs_remove_pid`). Installed once per runtime with [`PidMap::set_pidfs_hooks`].
///
/// Under `Linux618` both are called with `pidmap_lock` held (the pidfs tree lived under
/// it); under `Linux70` after the lock is dropped.
pub trait PidfsHooks: Send + Sync + 'static {
    /// Assign the pid its inode number and insert it into the index. An error makes
    /// `alloc_pid` free the pid and fail with that error.
    fn add_pid(&self, pid: &Arc<Pid>) -> Result<(), Errno>;
    /// Remove the pid from the index (its numbers are being freed).
    fn remove_pid(&self, pid: &Pid);
    /// `Scalable`: the next inode number, for a pid whose number is read for the first
    /// time ([`Pid::ino`]). Under `Scalable`, `alloc_pid` does not call
    /// [`add_pid`](Self::add_pid): most pids never get a pidfd, so their number is not
    /// made at fork. The default numbers nothing (0).
    fn next_ino(&self) -> u64 {
        0
    }
    /// The pid's pidfs state (the value of its [`pidfs_slot`](Pid::pidfs_slot)), let
    /// go of by the pid's drop: pidfs keeps the allocation for the next state when
    /// this was its last handle. The default drops it.
    fn release_state(&self, state: Attachment) {
        drop(state);
    }
    /// The hooks' owner, for a caller that holds a pid and needs the concrete pidfs
    /// of its runtime without a reference count ([`PidMap::pidfs_hooks`]).
    fn as_any(&self) -> &dyn Any;
}

/// Called after `free_pid` when a closed namespace is down to its last one or two pids:
/// the kernel wakes the dying init sleeping in `zap_pid_ns_processes`.
pub type ReaperWakeup = dyn Fn(&Arc<PidNamespace>) + Send + Sync;

/// The state every namespace of one runtime shares: the profile and the global
/// `pidmap_lock` (Linux has one for the whole machine; uproc has one per runtime).
pub struct PidMap {
    profile: Profile,
    pub(crate) pidmap_lock: NamedMutex<()>,
    pub(crate) pidfs: OnceLock<Arc<dyn PidfsHooks>>,
    pub(crate) wakeup: OnceLock<Box<ReaperWakeup>>,
    /// `Scalable`: acquisitions and sampled hold/wait times of every namespace's pool
    /// lock, summed (feature `lockstat`). Each namespace's lock is its own; the sum is
    /// what a fork pays.
    pool_locks: PoolLockStats,
    /// The root namespaces made on this map: every pid of the runtime has a number in
    /// one of them, so walking them finds every pid (slow paths only).
    roots: parking_lot::Mutex<Vec<Weak<PidNamespace>>>,
}

impl PidMap {
    /// A fresh map for a runtime running under `profile`.
    pub fn new(profile: Profile) -> Arc<PidMap> {
        Arc::new(PidMap {
            profile,
            pidmap_lock: NamedMutex::new("pidmap_lock", ()),
            pidfs: OnceLock::new(),
            wakeup: OnceLock::new(),
            pool_locks: PoolLockStats::new(),
            roots: parking_lot::Mutex::new(Vec::new()),
        })
    }

    /// The first published pid of the runtime (any namespace) for which `pred` holds,
    /// walking every root namespace's pids in ascending number. A walk of every live
    /// pid: for slow paths (pidfs's lookup of a pid by inode number when its index has
    /// no entry), never for a fork or a free.
    pub fn find_pid_where(&self, mut pred: impl FnMut(&Pid) -> bool) -> Option<Arc<Pid>> {
        self.live_roots()
            .iter()
            .find_map(|ns| ns.pids().into_iter().find(|p| pred(p)))
    }

    /// How many published pids of the runtime (any namespace) `pred` holds for: the same
    /// walk as [`find_pid_where`](Self::find_pid_where).
    pub fn count_pids_where(&self, mut pred: impl FnMut(&Pid) -> bool) -> usize {
        self.live_roots()
            .iter()
            .map(|ns| ns.pids().iter().filter(|p| pred(p)).count())
            .sum()
    }

    fn live_roots(&self) -> Vec<Arc<PidNamespace>> {
        self.roots.lock().iter().filter_map(Weak::upgrade).collect()
    }

    /// `Scalable`: acquisitions of the per-namespace number-pool locks (batch refills
    /// and flushes), summed over every namespace of the runtime, under the name
    /// `pidns_pool_lock` (feature `lockstat`; 0 under the other profiles). They are
    /// taken by forks of a namespace, so they count with the global locks.
    pub fn pool_lock_stat(&self) -> LockStat {
        self.pool_locks.stat()
    }

    /// The lock profile.
    #[inline]
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// Acquisitions of `pidmap_lock` (feature `lockstat`).
    pub fn pidmap_lock_stat(&self) -> LockStat {
        self.pidmap_lock.stat()
    }

    /// Runs `f` with `pidmap_lock` held. For pidfs's `Linux618` index readers, which
    /// Linux also put under this lock; no guard leaves the closure.
    pub fn with_pidmap_lock<R>(&self, f: impl FnOnce() -> R) -> R {
        let _g = self.pidmap_lock.lock();
        f()
    }

    /// Installs pidfs's hooks. Only the first call takes effect (returns false after).
    pub fn set_pidfs_hooks(&self, hooks: Arc<dyn PidfsHooks>) -> bool {
        self.pidfs.set(hooks).is_ok()
    }

    /// The installed pidfs hooks, borrowed (no reference count touched).
    pub fn pidfs_hooks(&self) -> Option<&dyn PidfsHooks> {
        self.pidfs.get().map(|h| &**h)
    }

    /// Installs the reaper wakeup. Only the first call takes effect.
    pub fn set_reaper_wakeup(&self, f: Box<ReaperWakeup>) -> bool {
        self.wakeup.set(f).is_ok()
    }
}

impl fmt::Debug for PidMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PidMap")
            .field("profile", &self.profile)
            .field("pidmap_lock", &self.pidmap_lock)
            .finish_non_exhaustive()
    }
}

/// Per-namespace allocator state, mutated only with `pidmap_lock` held (and this lock
/// for writing); `find_pid` takes only this lock for reading (Linux: RCU).
#[derive(Debug)]
pub(crate) struct NsState {
    pub(crate) idr: Idr,
    /// `PIDNS_ADDING`: cleared by `disable_pid_allocation` when the init dies.
    pub(crate) adding: bool,
}

/// A pid namespace (`struct pid_namespace`). Level 0 is the runtime's root namespace.
///
/// # References
/// [pid_namespaces(7)](https://man7.org/linux/man-pages/man7/pid_namespaces.7.html),
/// `kernel/pid_namespace.c`.
pub struct PidNamespace {
    id: u64,
    level: u32,
    parent: Option<Arc<PidNamespace>>,
    map: Arc<PidMap>,
    pid_max: AtomicI32,
    pub(crate) state: RwLock<NsState>,
    /// `NsState::adding`, mirrored: written with it (under `pidmap_lock` and the state
    /// write lock), read without a lock by [`is_adding`](Self::is_adding) and by
    /// `alloc_pid` (which holds `pidmap_lock`, so the flag cannot change under it).
    /// It only ever goes from true to false.
    pub(crate) adding: AtomicBool,
    has_reaper: AtomicBool,
    reaper: RwLock<Option<Weak<dyn Any + Send + Sync>>>,
    /// `Scalable` only: the number pool, per-thread batches and lookup slots that
    /// replace the idr (which stays empty).
    pub(crate) pool: Option<Arc<NumberPool<Pid>>>,
    /// `Scalable` only: per-thread credits of this namespace's strong count, which
    /// the pids whose innermost namespace this is take and give back instead of
    /// cloning and dropping the `Arc`, while a guard holds them open (see
    /// [`pid_ref_credits`](Self::pid_ref_credits)).
    ref_credits: Option<RefCredits>,
}

static NEXT_NS_ID: AtomicU64 = AtomicU64::new(1);

impl PidNamespace {
    fn build(
        map: Arc<PidMap>,
        parent: Option<Arc<PidNamespace>>,
        level: u32,
        pid_max: i32,
    ) -> Arc<Self> {
        Arc::new(PidNamespace {
            id: NEXT_NS_ID.fetch_add(1, Ordering::Relaxed),
            level,
            parent,
            pid_max: AtomicI32::new(pid_max),
            state: RwLock::new(NsState {
                idr: Idr::default(),
                adding: true,
            }),
            adding: AtomicBool::new(true),
            has_reaper: AtomicBool::new(false),
            reaper: RwLock::new(None),
            pool: (map.profile() == Profile::Scalable)
                .then(|| NumberPool::new(PID_MAX_LIMIT, MAX_BATCH, &map.pool_locks)),
            ref_credits: (map.profile() == Profile::Scalable).then(RefCredits::new),
            map,
        })
    }

    /// The root namespace of a runtime, with `pid_max` in `[301, 4194304]` (else EINVAL).
    pub fn new_root(map: &Arc<PidMap>, pid_max: i32) -> Result<Arc<Self>, Errno> {
        check_pid_max(pid_max)?;
        let root = Self::build(map.clone(), None, 0, pid_max);
        let mut roots = map.roots.lock();
        roots.retain(|r| r.strong_count() > 0);
        roots.push(Arc::downgrade(&root));
        drop(roots);
        Ok(root)
    }

    /// Opens per-thread credits of this namespace's reference count for the pids whose
    /// innermost namespace it is (`Scalable`; `None` otherwise, or if a guard is open
    /// already). While the guard lives, `alloc_pid` and the drop of a `Pid` take and
    /// give back the pid's reference to the namespace (Linux: `get_pid_ns` /
    /// `put_pid_ns`) on a line of the calling thread's own, instead of the strong count
    /// every fork into the namespace shares. Dropping the guard gives the credits back:
    /// the namespace is then freed, as with plain `Arc`s, when its last reference goes.
    /// The guard holds the namespace, so its owner must be something that outlives the
    /// namespace's use anyway: the runtime for its root namespace, a nested
    /// namespace's init task (which holds its own pid, and so the namespace) for that
    /// namespace.
    pub fn pid_ref_credits(self: &Arc<Self>) -> Option<PidRefCredits> {
        let credits = self.ref_credits.as_ref()?;
        if credits.open() {
            Some(PidRefCredits::new(self.clone()))
        } else {
            // Another guard owns them; undo nothing (its shards stay as they were).
            None
        }
    }

    /// The guard's drop: closes the shards and puts their credits back.
    #[allow(unsafe_code)]
    pub(crate) fn close_ref_credits(self: &Arc<Self>) {
        let Some(credits) = &self.ref_credits else {
            return;
        };
        for _ in 0..credits.close() {
            // SAFETY: each credit is a strong count of this namespace that the closed
            // shard handed to us; `self` is another one (the guard's), so the count
            // stays above zero and the pointer valid during the loop.
            unsafe { Arc::decrement_strong_count(Arc::as_ptr(self)) };
        }
    }

    /// `get_pid_ns` for a new `Pid` whose innermost namespace this is: a strong
    /// reference to this namespace, from this thread's credits when they are open.
    #[allow(unsafe_code)]
    #[inline(always)]
    pub(crate) fn get_for_pid(self: &Arc<Self>) -> Arc<Self> {
        let Some(credits) = &self.ref_credits else {
            return Arc::clone(self);
        };
        let ptr = Arc::as_ptr(self);
        credits.acquire(
            // SAFETY: `self` is a live `Arc`, so the count is at least one.
            |n| (0..n).for_each(|_| unsafe { Arc::increment_strong_count(ptr) }),
            // SAFETY: the caller owns these `n` counts and `self` is one more: the
            // count stays above zero.
            |n| (0..n).for_each(|_| unsafe { Arc::decrement_strong_count(ptr) }),
        );
        // SAFETY: we own one strong count of this namespace (a credit taken, or the
        // last of the burst above); `from_raw` turns it into the `Arc` that carries it,
        // with the pointer `Arc::as_ptr` gave.
        unsafe { Arc::from_raw(Arc::as_ptr(self)) }
    }

    /// Whether this namespace has reference credits (`Scalable`), open or not: a
    /// nested pid's numbers then go through the out-of-line credit paths below, and
    /// the locked profiles' nested pids keep their plain clone and drop inline.
    #[inline(always)]
    pub(crate) fn has_ref_credits(&self) -> bool {
        self.ref_credits.is_some()
    }

    /// [`get_for_pid`](Self::get_for_pid) for a nested pid's innermost level, out of
    /// line: the root-level fork keeps the one inlined copy.
    #[inline(never)]
    pub(crate) fn get_for_nested_pid(self: &Arc<Self>) -> Arc<Self> {
        self.get_for_pid()
    }

    /// [`put_for_pid`](Self::put_for_pid) for a nested pid's innermost level, out of
    /// line (as [`get_for_nested_pid`](Self::get_for_nested_pid)).
    #[inline(never)]
    pub(crate) fn put_for_nested_pid(this: Arc<Self>) {
        Self::put_for_pid(this);
    }

    /// `put_pid_ns` for a dropped `Pid` whose innermost namespace this is: its
    /// reference goes to this thread's credits when they are open and not full, else
    /// it is dropped plainly.
    #[inline]
    pub(crate) fn put_for_pid(this: Arc<Self>) {
        if this.ref_credits.as_ref().is_some_and(RefCredits::try_give) {
            // The strong count now belongs to the shard: not decremented.
            std::mem::forget(this);
        }
    }

    /// `create_pid_namespace`: a child namespace. Level 33 and deeper fail with ENOSPC.
    ///
    /// Its `pid_max` reads `PID_MAX_LIMIT` (4194304), not the parent's value, as Linux
    /// does since "pid: Do not set pid_max in new pid namespaces": the limit is
    /// hierarchical in effect, because a pid needs a number below each ancestor's own
    /// `pid_max` too.
    pub fn new_child(self: &Arc<Self>) -> Result<Arc<Self>, Errno> {
        let level = self.level + 1;
        if level > MAX_PID_NS_LEVEL {
            return Err(Errno::ENOSPC);
        }
        Ok(Self::build(
            self.map.clone(),
            Some(self.clone()),
            level,
            PID_MAX_LIMIT,
        ))
    }

    /// A process-unique id (the nsfs inode number's role).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Depth: 0 for the root namespace.
    #[inline]
    pub fn level(&self) -> u32 {
        self.level
    }

    /// The parent namespace.
    #[inline]
    pub fn parent(&self) -> Option<&Arc<PidNamespace>> {
        self.parent.as_ref()
    }

    /// The runtime-wide map (profile, `pidmap_lock`).
    #[inline]
    pub fn map(&self) -> &Arc<PidMap> {
        &self.map
    }

    /// `/proc/sys/kernel/pid_max` of this namespace: numbers are `< pid_max`.
    #[inline]
    pub fn pid_max(&self) -> i32 {
        self.pid_max.load(Ordering::Relaxed)
    }

    /// Writes this namespace's `pid_max`: `[301, 4194304]`, else EINVAL. Numbers already
    /// handed out above the new limit stay valid.
    pub fn set_pid_max(&self, pid_max: i32) -> Result<(), Errno> {
        check_pid_max(pid_max)?;
        self.pid_max.store(pid_max, Ordering::Relaxed);
        Ok(())
    }

    /// `find_pid_ns`: the published pid with number `nr` here.
    ///
    /// `Scalable` reads one lock-free slot of the namespace's number table; the other
    /// profiles take the namespace's state lock for reading (Linux: RCU).
    #[inline]
    pub fn find_pid(&self, nr: i32) -> Option<Arc<Pid>> {
        if let Some(pool) = &self.pool {
            return pool.find(nr);
        }
        self.state.read().idr.find(nr).cloned()
    }

    /// `pid_allocated` (without the flag): numbers reserved or in use here. (`Scalable`
    /// counts a number from its publication, the others from its reservation; at rest
    /// both equal the pids not yet freed.) `Scalable` sums per-thread counters: the
    /// value is exact at one moment of the call when two collects of the counters
    /// agree (always at rest); while other threads fork and free without pause it is
    /// never below the pids counted in, and above by at most the frees that ran during
    /// the call's last collect.
    pub fn nr_allocated(&self) -> usize {
        if let Some(pool) = &self.pool {
            return pool.allocated();
        }
        self.state.read().idr.allocated
    }

    /// Every published pid, ascending by number (what `find_ge_pid` walks).
    pub fn pids(&self) -> Vec<Arc<Pid>> {
        if let Some(pool) = &self.pool {
            return pool.published();
        }
        self.state.read().idr.published().cloned().collect()
    }

    /// `Scalable` only (`None` otherwise): free numbers below `pid_max` waiting in the
    /// shared pool, i.e. not held in any thread's batch: what a number freed now has
    /// ahead of it. Each of them leaves the pool before that number does, handed out or
    /// taken into some thread's batch, so the number is handed out again only after at
    /// least `pool_len()` - *H* other allocations, where *H* is what the other threads'
    /// batches hold when it comes back ([`batched_len`](Self::batched_len) then bounds
    /// it: at most 127 per thread holding an allocation batch; none when one thread
    /// forks). Lowering `pid_max` meanwhile drops the numbers above it from the count.
    /// Walks the pool under its lock: for tests and diagnostics, not for a hot path.
    pub fn pool_len(&self) -> Option<usize> {
        self.pool.as_ref().map(|p| p.pool_len(self.pid_max()))
    }

    /// `Scalable` only (`None` otherwise): free numbers below `pid_max` with an entry
    /// in some thread's batch (numbers a thread took to hand out, or freed numbers it
    /// has yet to give back): the slack of [`pool_len`](Self::pool_len)'s reuse
    /// distance. Walks every number handed out so far: for tests and diagnostics.
    pub fn batched_len(&self) -> Option<usize> {
        self.pool.as_ref().map(|p| p.batched_len(self.pid_max()))
    }

    /// `Scalable` only: acquisitions of this namespace's pool lock (feature `lockstat`).
    pub fn pool_lock_acquisitions(&self) -> u64 {
        self.pool.as_ref().map_or(0, |p| p.lock_acquisitions())
    }

    /// Whether `self` is `other` or one of its ancestors (so `other`'s pids are visible
    /// from `self`).
    pub fn is_same_or_ancestor_of(&self, other: &PidNamespace) -> bool {
        let mut cur = Some(other);
        while let Some(ns) = cur {
            if ns.level < self.level {
                return false;
            }
            if std::ptr::eq(ns, self) {
                return true;
            }
            cur = ns.parent.as_deref();
        }
        false
    }

    /// `disable_pid_allocation`: the init died; `alloc_pid` here fails with ENOMEM.
    ///
    /// `Scalable` clears the namespace's `PIDNS_ADDING` flag without `pidmap_lock`,
    /// (`SeqCst`, then a read of its count): every `alloc_pid` that saw the flag set had
    /// published and counted its pid before, so a walk of [`pids`](Self::pids) after
    /// this returns sees it.
    pub fn disable_pid_allocation(&self) {
        if let Some(pool) = &self.pool {
            pool.count.close();
            self.state.write().adding = false;
            self.adding.store(false, Ordering::Release);
            return;
        }
        let _g = self.map.pidmap_lock.lock();
        self.state.write().adding = false;
        self.adding.store(false, Ordering::Release);
    }

    /// Whether the namespace still accepts new pids (`PIDNS_ADDING`).
    pub fn is_adding(&self) -> bool {
        self.adding.load(Ordering::Acquire)
    }

    /// Sets `child_reaper` (the init). With `None`, the namespace is "reaper-less" again
    /// only for [`child_reaper`](Self::child_reaper); allocation keeps treating it as
    /// having had an init.
    pub fn set_child_reaper(&self, reaper: Option<Weak<dyn Any + Send + Sync>>) {
        if reaper.is_some() {
            self.has_reaper.store(true, Ordering::Release);
        }
        *self.reaper.write() = reaper;
    }

    /// The current `child_reaper`, if set and alive.
    pub fn child_reaper(&self) -> Option<Attachment> {
        self.reaper.read().as_ref().and_then(Weak::upgrade)
    }

    /// Whether an init was ever installed (`ns->child_reaper != NULL`).
    #[inline]
    pub fn has_child_reaper(&self) -> bool {
        self.has_reaper.load(Ordering::Acquire)
    }
}

impl fmt::Debug for PidNamespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PidNamespace")
            .field("id", &self.id)
            .field("level", &self.level)
            .field("pid_max", &self.pid_max())
            .field("nr_allocated", &self.nr_allocated())
            .finish_non_exhaustive()
    }
}

fn check_pid_max(pid_max: i32) -> Result<(), Errno> {
    if (PID_MAX_MIN..=PID_MAX_LIMIT).contains(&pid_max) {
        Ok(())
    } else {
        Err(Errno::EINVAL)
    }
}
