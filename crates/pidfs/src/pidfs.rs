//! [`Pidfs`]: one per runtime. The ino allocator and index, the pidfs hooks of
//! `alloc_pid` / `free_pid`, and the ways to make a [`PidFd`].

use crate::backend::PidfdBackend;
use crate::handle::FileHandle;
use crate::index::InoIndex;
use crate::pidfd::PidFd;
use crate::state::{PidState, Registration};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use uproc_abi::{Errno, OpenFlags, PidfdFlags, Profile, WaitStatus};
use uproc_pidns::{Pid, PidMap, PidNamespace, PidfsHooks};

/// Where pidfds find the task list. Shared by the [`Pidfs`] and every [`PidFd`] it made.
pub(crate) type BackendCell = OnceLock<Weak<dyn PidfdBackend>>;

/// `open_by_handle_at` flags accepted for pidfs handles besides `PIDFD_NONBLOCK` and
/// `PIDFD_THREAD` (`O_EXCL`): `O_WRONLY`, `O_RDWR`, `O_CLOEXEC` (`O_RDONLY` is 0).
const HANDLE_OPEN_EXTRA: u32 = OpenFlags::WRONLY
    .union(OpenFlags::RDWR)
    .union(OpenFlags::CLOEXEC)
    .bits();

/// One per runtime: the ino allocator, the ino -> [`Pid`] index and the backend link.
///
/// Implements [`PidfsHooks`] (assign ino + insert on `alloc_pid`, remove on
/// `free_pid`) and installs itself on the [`PidMap`] in [`Pidfs::new`].
///
/// # References
/// `fs/pidfs.c`: `pidfs_add_pid`, `pidfs_remove_pid`, `pidfd_prepare`,
/// `pidfs_export_operations`.
pub struct Pidfs {
    profile: Profile,
    /// The map, for `Linux618`'s `pidmap_lock`. Weak: the map owns the hooks (`self`).
    map: Weak<PidMap>,
    index: InoIndex,
    backend: Arc<BackendCell>,
    /// Whether this pidfs is its map's hooks (a second `Pidfs` on one map is not).
    installed: AtomicBool,
}

impl fmt::Debug for Pidfs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pidfs")
            .field("profile", &self.profile)
            .field("index_len", &self.index_len())
            .field("backend", &self.backend.get().is_some())
            .finish_non_exhaustive()
    }
}

impl Pidfs {
    /// The pidfs installed on `map` (the runtime of every pid made on it), borrowed:
    /// no reference count of the runtime or of the pidfs is touched, so a fork that
    /// needs it (`CLONE_PIDFD`) writes no line the runtime's other forks share.
    pub fn of_map(map: &uproc_pidns::PidMap) -> Option<&Pidfs> {
        map.pidfs_hooks()?.as_any().downcast_ref::<Pidfs>()
    }

    /// This pidfs's backend cell (its pidfds reach the task list through it).
    pub(crate) fn backend_cell(&self) -> &BackendCell {
        &self.backend
    }

    /// A pidfs for the runtime of `map`, installed as its pidfs hooks
    /// (`map.set_pidfs_hooks`). Install it before the first `alloc_pid`: pids allocated
    /// before get no inode number. A map accepts only one pidfs; a second one is
    /// returned uninstalled (its index stays empty).
    pub fn new(map: &Arc<PidMap>) -> Arc<Pidfs> {
        let profile = map.profile();
        let pidfs = Arc::new(Pidfs {
            profile,
            map: Arc::downgrade(map),
            index: match profile {
                Profile::Linux618 => InoIndex::ordered(),
                Profile::Linux70 | Profile::Scalable => InoIndex::sharded(),
            },
            backend: Arc::new(OnceLock::new()),
            installed: AtomicBool::new(false),
        });
        if map.set_pidfs_hooks(pidfs.clone()) {
            pidfs.installed.store(true, Ordering::Release);
        } else {
            tracing::warn!(
                "pidfs: the pid map already has pidfs hooks; this Pidfs is not installed"
            );
        }
        pidfs
    }

    /// Registers the task list. Only the first call takes effect (tasklist registers
    /// itself once per runtime).
    pub fn set_backend(&self, backend: Weak<dyn PidfdBackend>) {
        if self.backend.set(backend).is_err() {
            tracing::warn!("pidfs: backend already set; ignored");
        }
    }

    /// The lock profile (the map's).
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The pid with inode number `ino`, while its numbers are allocated.
    ///
    /// `Linux618` takes `pidmap_lock` (the tree lived under it, as in 6.x); `Linux70`
    /// and `Scalable` take one bucket lock of the hash table. `Scalable` indexes only
    /// pids that had a pidfd; for any other it walks the runtime's live pids (a slow
    /// path: such a pid has no pidfd a file handle could have come from).
    ///
    /// # References
    /// `pidfs_ino_get_pid` in `fs/pidfs.c`.
    pub fn find_by_ino(&self, ino: u64) -> Option<Arc<Pid>> {
        if ino == 0 {
            return None;
        }
        match self.profile {
            Profile::Linux618 => {
                let map = self.map.upgrade()?;
                map.with_pidmap_lock(|| self.index.find(ino))
            }
            Profile::Linux70 => self.index.find(ino),
            Profile::Scalable => self
                .index
                .find(ino)
                // A pid whose number was never read cannot be the one asked for.
                .or_else(|| {
                    self.walk_pids()?
                        .find_pid_where(|p| p.ino_if_assigned() == Some(ino))
                }),
        }
    }

    /// The pids [`find_by_ino`](Self::find_by_ino) finds: at rest, the pids allocated
    /// (since this pidfs was installed) and not yet freed. `Linux*`: the index's
    /// entries; `Scalable`: a walk of every live pid (see
    /// [`hashed_entries`](Self::hashed_entries) for its index proper).
    pub fn index_len(&self) -> usize {
        match self.profile {
            Profile::Linux618 | Profile::Linux70 => self.index.len(),
            Profile::Scalable => self.walk_pids().map_or(0, |map| {
                map.count_pids_where(|p| p.ino_if_assigned() != Some(0))
            }),
        }
    }

    /// Entries in the index's table itself: every allocated pid under the `Linux*`
    /// profiles, only the allocated pids that ever had a pidfd under `Scalable`.
    pub fn hashed_entries(&self) -> usize {
        self.index.len()
    }

    /// The map whose live pids `Scalable`'s slow paths walk, if this pidfs numbers them.
    fn walk_pids(&self) -> Option<Arc<PidMap>> {
        if !self.installed.load(Ordering::Acquire) {
            return None;
        }
        self.map.upgrade()
    }

    /// `Scalable`: the pid got a pidfd; it enters the index (once).
    fn index_registered(&self, pid: &Arc<Pid>) {
        if self.profile == Profile::Scalable {
            self.index.insert_registered(pid);
        }
    }

    /// `pidfd_open(2)`: unknown flags -> EINVAL; `nr <= 0` -> EINVAL; `nr` not found
    /// in `caller_ns` -> ESRCH; then [`Pidfs::pidfd_prepare`]'s checks.
    ///
    /// # References
    /// [pidfd_open(2)](https://man7.org/linux/man-pages/man2/pidfd_open.2.html),
    /// `SYSCALL_DEFINE2(pidfd_open)` in `kernel/pid.c`.
    pub fn pidfd_open(
        &self,
        caller_ns: &Arc<PidNamespace>,
        nr: i32,
        flags: PidfdFlags,
    ) -> Result<PidFd, Errno> {
        check_open_flags(flags)?;
        if nr <= 0 {
            return Err(Errno::EINVAL);
        }
        let pid = caller_ns.find_pid(nr).ok_or(Errno::ESRCH)?;
        self.pidfd_prepare(caller_ns, pid, flags)
    }

    /// `pidfd_prepare` for a pid already in hand: unknown flags -> EINVAL; pid marked
    /// dead or no task attached (reaped) -> ESRCH; not a thread-group leader and no
    /// `PIDFD_THREAD` -> ENOENT. `viewer_ns` is the namespace `info` and exit events
    /// report numbers in.
    ///
    /// # References
    /// `pidfd_prepare` and `pidfs_register_pid` in `kernel/fork.c`, `fs/pidfs.c`.
    pub fn pidfd_prepare(
        &self,
        viewer_ns: &Arc<PidNamespace>,
        pid: Arc<Pid>,
        flags: PidfdFlags,
    ) -> Result<PidFd, Errno> {
        check_open_flags(flags)?;
        // Race rule (see `state`): the slot exists before the backend is asked.
        let state = PidState::get_or_create(&pid).ok_or(Errno::ESRCH)?;
        let ts = match self.backend() {
            Some(b) => b.task_state(&pid),
            None => Default::default(),
        };
        if !ts.attached {
            return Err(Errno::ESRCH);
        }
        if !flags.contains(PidfdFlags::THREAD) && !ts.group_leader {
            return Err(Errno::ENOENT);
        }
        {
            let mut inner = state.inner.lock();
            if inner.registration == Registration::Dead || inner.reaped.is_some() {
                return Err(Errno::ESRCH);
            }
            inner.registration = Registration::Registered;
            if ts.exited && !inner.exited {
                // The exit's notification ran before the slot existed.
                inner.exited = true;
                inner.exit_status = inner.exit_status.or(ts.exit_status);
            }
        }
        self.index_registered(&pid);
        tracing::debug!(
            ino = pid.ino(),
            nr = pid.nr(),
            ?flags,
            "pidfs: pidfd opened"
        );
        Ok(PidFd::new(pid, flags, viewer_ns, state, &self.backend))
    }

    /// `pidfd_prepare(.., PIDFD_STALE)` for `CLONE_PIDFD`: the child has no task attached
    /// yet; the pid is registered (exit info will be recorded) without task checks.
    /// Flags other than `NONBLOCK`/`THREAD` are dropped (clone3 validated its own).
    pub fn pidfd_prepare_stale(
        &self,
        viewer_ns: &Arc<PidNamespace>,
        pid: Arc<Pid>,
        flags: PidfdFlags,
    ) -> PidFd {
        let flags = flags & PidfdFlags::all();
        let state = match PidState::get_or_create(&pid) {
            Some(s) => s,
            None => {
                // A fresh child cannot have been reaped; never reached in practice. Not
                // indexed: a reaped pid's entry would never be removed (`remove_pid`
                // skips a pid reaped before any pidfd).
                debug_assert!(false, "pidfd_prepare_stale on a dead pid");
                return PidFd::new(
                    pid,
                    flags,
                    viewer_ns,
                    crate::cache::new_state(PidState::detached()),
                    &self.backend,
                );
            }
        };
        {
            let mut inner = state.inner.lock();
            if inner.registration != Registration::Dead {
                inner.registration = Registration::Registered;
            }
        }
        self.index_registered(&pid);
        tracing::debug!(
            ino = pid.ino(),
            nr = pid.nr(),
            ?flags,
            "pidfs: pidfd opened (stale)"
        );
        PidFd::new(pid, flags, viewer_ns, state, &self.backend)
    }

    /// A pidfd for a pid already reaped with `status` (its cgroup at exit `cgroupid`):
    /// what a `CLONE_PIDFD` pidfd of that task reads after the reap, for a holder of
    /// the task that asks for its pidfd only now. Readable and hung up,
    /// `PIDFD_INFO_EXIT` reports the status, signals get ESRCH; it is not indexed, so
    /// [`open_by_handle`](Pidfs::open_by_handle) of its handle is ESTALE, as for any
    /// reaped pid. Flags other than `NONBLOCK`/`THREAD` are dropped.
    ///
    /// # References
    /// `pidfs_exit` in `fs/pidfs.c` (the exit info a pidfd keeps after the reap).
    pub fn pidfd_reaped(
        &self,
        viewer_ns: &Arc<PidNamespace>,
        pid: Arc<Pid>,
        flags: PidfdFlags,
        status: WaitStatus,
        cgroupid: u64,
    ) -> PidFd {
        tracing::debug!(
            ino = pid.ino(),
            nr = pid.nr(),
            ?flags,
            "pidfs: pidfd of a reaped pid"
        );
        let state = crate::cache::new_state(PidState::reaped(status, cgroupid));
        let flags = flags & PidfdFlags::all();
        PidFd::new(pid, flags, viewer_ns, state, &self.backend)
    }

    /// A handle that names `pid` for `waitid(P_PIDFD)` and nothing else, for a holder
    /// that learns of the task's exit by its own means (a runtime's child handle woken
    /// by the job that ran the task) and only needs a wait that cannot hit a recycled
    /// number. It is not registered: no per-pid state, no index entry, no exit info,
    /// and it is never readable (its wait queue is a per-thread one that no exit
    /// wakes), so it must never be handed to anyone who polls or reads it; open a real
    /// pidfd ([`pidfd_prepare`](Pidfs::pidfd_prepare)) for that. It costs one small
    /// allocation, where a registered pidfd also makes the pid's state, enters the
    /// index, and is notified at exit and reap. Numbers it would report are those of
    /// the pid's own namespace.
    pub fn pidfd_wait_only(&self, pid: Arc<Pid>) -> PidFd {
        thread_local! {
            /// The state every wait-only handle made on this thread points at: never
            /// registered with a pid, so no notification ever reaches it.
            static UNREGISTERED: Arc<PidState> = Arc::new(PidState::unregistered());
        }
        let state = UNREGISTERED.with(Arc::clone);
        let viewer = Arc::clone(pid.ns());
        PidFd::new(pid, PidfdFlags::empty(), &viewer, state, &self.backend)
    }

    /// `open_by_handle_at(2)` on a pidfs handle.
    ///
    /// Errors, in order: flags other than `NONBLOCK`, `THREAD` (`O_EXCL`), `O_CLOEXEC`,
    /// `O_RDWR`, `O_WRONLY` -> EINVAL; no pid with that
    /// ino in the index, the pid never had a pidfd (no state, or marked dead), was already
    /// reaped, or is invisible from `caller_ns` (`pid_vnr == 0`) -> ESTALE: Linux's
    /// `pidfs_fh_to_dentry` returns no dentry for all of them, which
    /// `exportfs_decode_fh` reports as ESTALE. A zombie decodes fine. The result's flags
    /// keep `NONBLOCK` and `THREAD` only.
    ///
    /// # References
    /// `pidfs_fh_to_dentry`, `pidfs_export_permission`, `pidfs_export_open` in
    /// `fs/pidfs.c`; [open_by_handle_at(2)](https://man7.org/linux/man-pages/man2/open_by_handle_at.2.html).
    pub fn open_by_handle(
        &self,
        caller_ns: &Arc<PidNamespace>,
        handle: &FileHandle,
        flags: PidfdFlags,
    ) -> Result<PidFd, Errno> {
        let allowed = PidfdFlags::all().bits() | HANDLE_OPEN_EXTRA;
        if flags.bits() & !allowed != 0 {
            return Err(Errno::EINVAL);
        }
        // `Scalable` indexes every pid that ever had a pidfd, the only ones a handle can
        // open: a miss is ESTALE without walking the live pids.
        let pid = match self.profile {
            Profile::Scalable => self.index.find(handle.ino()),
            Profile::Linux618 | Profile::Linux70 => self.find_by_ino(handle.ino()),
        }
        .ok_or(Errno::ESTALE)?;
        let state = PidState::get_existing(&pid).ok_or(Errno::ESTALE)?;
        {
            let inner = state.inner.lock();
            if inner.registration != Registration::Registered || inner.reaped.is_some() {
                return Err(Errno::ESTALE);
            }
        }
        if pid.nr_in(caller_ns) == 0 {
            return Err(Errno::ESTALE);
        }
        let flags = flags & PidfdFlags::all();
        tracing::debug!(
            ino = pid.ino(),
            nr = pid.nr(),
            ?flags,
            "pidfs: pidfd opened by handle"
        );
        Ok(PidFd::new(pid, flags, caller_ns, state, &self.backend))
    }

    fn backend(&self) -> Option<Arc<dyn PidfdBackend>> {
        self.backend.get().and_then(Weak::upgrade)
    }
}

fn check_open_flags(flags: PidfdFlags) -> Result<(), Errno> {
    if PidfdFlags::all().contains(flags) {
        Ok(())
    } else {
        Err(Errno::EINVAL)
    }
}

impl PidfsHooks for Pidfs {
    /// `pidfs_add_pid`: assign the next ino and insert into the index. `Linux618`: called
    /// with `pidmap_lock` held (the index mutex nests inside it); `Linux70`: after it;
    /// `Scalable`: with no global lock anywhere.
    ///
    /// `Scalable` assigns the ino only: the pid enters the index with its first pidfd.
    /// (`alloc_pid` does not call it under `Scalable`: the ino comes from
    /// [`next_ino`](PidfsHooks::next_ino) on first read.)
    fn add_pid(&self, pid: &Arc<Pid>) -> Result<(), Errno> {
        let ino = if self.profile == Profile::Scalable {
            self.index.assign_ino(pid)
        } else {
            self.index.add(pid)
        };
        tracing::trace!(ino, nr = pid.nr(), "pidfs: ino assigned");
        Ok(())
    }

    /// `pidfs_remove_pid`: drop the index entry (from `free_pid`). `Scalable`: one
    /// flag read for a pid reaped before it ever had a pidfd (the common case), one
    /// flag update for one freed before its reap.
    fn remove_pid(&self, pid: &Pid) {
        if self.profile == Profile::Scalable {
            self.index.remove_registered(pid);
        } else {
            self.index.remove(pid.ino());
        }
    }

    /// The pid's state at the pid's drop: kept for the next one when no pidfd or poll
    /// future holds it any more (`PidState::recycle`, in `cache.rs`).
    fn release_state(&self, state: uproc_pidns::Attachment) {
        if let Ok(state) = state.downcast::<PidState>() {
            <PidState as uproc_abi::arc_cache::Recycle>::recycle(state);
        }
    }

    /// `Scalable`'s `pidfs_alloc_ino`, on the first read of a pid's ino: the next
    /// number of this thread's batch. Under the `Linux*` profiles every pid was
    /// numbered by `add_pid`; 0 there (never asked).
    fn next_ino(&self) -> u64 {
        if self.profile == Profile::Scalable {
            self.index.next_ino()
        } else {
            0
        }
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
