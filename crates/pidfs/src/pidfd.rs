//! [`PidFd`]: an open pidfd, and what it answers (`info`, `poll`, signals, waits).

use crate::backend::{PidfdBackend, SignalScope};
use crate::handle::FileHandle;
use crate::pidfs::BackendCell;
use crate::readable::Readable;
use crate::state::{PidState, Subscriber};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use uproc_abi::arc_cache::CachedArc;
use uproc_abi::{Errno, InfoMask, PidfdFlags, PidfdSignalFlags, Signal, WaitStatus};
use uproc_pidns::{Pid, PidNamespace};

/// The `PIDFD_INFO_*` bits uproc implements (`PIDFD_INFO_SUPPORTED`). `COREDUMP` is not
/// modelled (uproc tasks do not dump core), so it is neither supported nor reported.
pub const PIDFD_INFO_SUPPORTED: InfoMask = InfoMask::PID
    .union(InfoMask::CREDS)
    .union(InfoMask::CGROUPID)
    .union(InfoMask::EXIT)
    .union(InfoMask::SUPPORTED_MASK);

/// The open file behind a pidfd: what `struct file` + its inode hold.
pub(crate) struct File {
    pid: Arc<Pid>,
    flags: PidfdFlags,
    /// The namespace numbers are reported in (the opener's).
    viewer: Viewer,
    /// The pid's state, shared with the pid's slot and its other pidfds: whichever
    /// of them lets go last keeps its allocation (`PidState::recycle`).
    pub(crate) state: CachedArc<PidState>,
    backend: Backend,
}

/// The viewer namespace, held without a reference count of its own when it is one of
/// the pid's namespaces (the usual case: the opener sees the pid): the pid's own
/// `Upid` holds it then. A pidfd made at fork (`CLONE_PIDFD`) would otherwise write the
/// namespace's count, a line every fork of the namespace shares.
enum Viewer {
    /// `pid.numbers()[level].ns`.
    Level(usize),
    Own(Arc<PidNamespace>),
}

/// The runtime's backend cell, likewise reached through the pid's map (its installed
/// pidfs, see [`crate::Pidfs::of_map`]) when the pidfd was made by that pidfs, rather
/// than by a count on the cell every pidfd of the runtime shares.
enum Backend {
    OfMap,
    Own(Arc<BackendCell>),
}

impl File {
    fn viewer(&self) -> &Arc<PidNamespace> {
        match &self.viewer {
            Viewer::Level(level) => &self.pid.numbers()[*level].ns,
            Viewer::Own(ns) => ns,
        }
    }

    fn backend_cell(&self) -> Option<&BackendCell> {
        match &self.backend {
            Backend::OfMap => crate::Pidfs::of_map(self.pid.ns().map()).map(|p| p.backend_cell()),
            Backend::Own(cell) => Some(cell),
        }
    }
}

/// A pidfd: names exactly one [`Pid`] object for ever, never a number, so it cannot hit a
/// recycled number.
///
/// `Clone` shares identity (a `dup` of the same open file); `PartialEq`/`Eq`/`Hash` go by
/// the open file. Two opens of one process are different `PidFd`s with the same
/// [`ino`](PidFd::ino).
///
/// # References
/// [pidfd_open(2)](https://man7.org/linux/man-pages/man2/pidfd_open.2.html),
/// `pidfs_alloc_file` / `pidfd_fops` in `fs/pidfs.c`.
#[derive(Clone)]
pub struct PidFd {
    /// Its drop is `fput`: the last handle's keeps the allocation for this thread's
    /// next pidfd (`File::recycle`, in `cache.rs`).
    file: CachedArc<File>,
}

/// `struct pidfd_info` as `PIDFD_GET_INFO` fills it.
///
/// # References
/// `pidfd_info` in `fs/pidfs.c`, `<linux/pidfd.h>`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PidfdInfo {
    /// The bits actually filled in.
    pub mask: InfoMask,
    /// `PIDFD_INFO_PID`: the pid as the pidfd's namespace sees it.
    pub pid: i32,
    /// `PIDFD_INFO_PID`: the thread-group id.
    pub tgid: i32,
    /// `PIDFD_INFO_PID`: the parent's pid (0 where invisible).
    pub ppid: i32,
    /// `PIDFD_INFO_CGROUPID` (live), or the cgroup at exit with `PIDFD_INFO_EXIT`.
    pub cgroupid: u64,
    /// `PIDFD_INFO_EXIT`: the wait-status word the task was reaped with.
    pub exit_code: i32,
    /// `PIDFD_INFO_SUPPORTED_MASK`: every bit this implementation knows.
    pub supported_mask: InfoMask,
    /// `PIDFD_INFO_CREDS`: real uid (0: uproc has no credentials).
    pub ruid: u32,
    /// `PIDFD_INFO_CREDS`: real gid (0).
    pub rgid: u32,
    /// `PIDFD_INFO_CREDS`: effective uid (0).
    pub euid: u32,
    /// `PIDFD_INFO_CREDS`: effective gid (0).
    pub egid: u32,
}

/// What `poll(2)` reports on a pidfd.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Readiness {
    /// `EPOLLIN | EPOLLRDNORM`: the task exited (and is not a delayed group leader).
    pub readable: bool,
    /// `EPOLLHUP`: the task was reaped.
    pub hangup: bool,
}

/// Sent once to each [`PidFd::subscribe`] receiver when the task exits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitEvent {
    /// The pid's inode number.
    pub ino: u64,
    /// The pid as the subscribing pidfd's namespace sees it.
    pub pid: i32,
    /// The status it exited with.
    pub status: WaitStatus,
}

impl PidFd {
    pub(crate) fn new(
        pid: Arc<Pid>,
        flags: PidfdFlags,
        viewer: &Arc<PidNamespace>,
        state: Arc<PidState>,
        backend: &Arc<BackendCell>,
    ) -> PidFd {
        let viewer = match pid
            .numbers()
            .iter()
            .position(|u| Arc::ptr_eq(&u.ns, viewer))
        {
            Some(level) => Viewer::Level(level),
            None => Viewer::Own(Arc::clone(viewer)),
        };
        let of_map = crate::Pidfs::of_map(pid.ns().map())
            .is_some_and(|p| std::ptr::eq(p.backend_cell(), Arc::as_ptr(backend)));
        let backend = if of_map {
            Backend::OfMap
        } else {
            Backend::Own(Arc::clone(backend))
        };
        PidFd {
            file: CachedArc::new(crate::cache::new_file(File {
                pid,
                flags,
                viewer,
                state: CachedArc::new(state),
                backend,
            })),
        }
    }

    /// The open file's `Arc` (for its counts and address; fields read through
    /// `self.file` directly).
    #[inline]
    pub(crate) fn file(&self) -> &Arc<File> {
        &self.file
    }

    fn backend(&self) -> Option<Arc<dyn PidfdBackend>> {
        self.file.backend_cell()?.get().and_then(Weak::upgrade)
    }

    /// The pid object this pidfd names.
    pub fn pid(&self) -> &Arc<Pid> {
        &self.file.pid
    }

    /// Whether this handle is the only one to its open file (no clone of it exists,
    /// nothing else can reach its pid through it): its weak count, then, after an
    /// `Acquire` fence, its strong count, each a relaxed read. The task list reads it
    /// when deciding whether a task that keeps its `CLONE_PIDFD` pidfd is reachable
    /// from outside (its task cache).
    #[inline]
    pub fn is_only_handle(&self) -> bool {
        if Arc::weak_count(self.file()) != 0 {
            return false;
        }
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        Arc::strong_count(self.file()) == 1
    }

    /// The namespace the pidfd reports numbers in (its opener's).
    pub fn viewer_ns(&self) -> &Arc<PidNamespace> {
        self.file.viewer()
    }

    /// The pidfd's flags (`PIDFD_NONBLOCK`, `PIDFD_THREAD`).
    pub fn flags(&self) -> PidfdFlags {
        self.file.flags
    }

    /// `PIDFD_NONBLOCK`: a wait through this pidfd returns EAGAIN when nothing is ready.
    pub fn is_nonblocking(&self) -> bool {
        self.file.flags.contains(PidfdFlags::NONBLOCK)
    }

    /// `pidfd_send_signal(pidfd, sig, NULL, 0)`: to the thread for a `PIDFD_THREAD`
    /// pidfd, else to the thread group. Succeeds silently on a zombie; ESRCH once reaped.
    ///
    /// The signal is sent as by a task of the namespace the pidfd was opened in (a
    /// pidfd has no caller of its own here): a namespace init drops SIGKILL and SIGSTOP
    /// through a pidfd opened inside its namespace, as Linux's init drops them from a
    /// sender inside, and takes them through one opened in an ancestor namespace.
    ///
    /// # References
    /// [pidfd_send_signal(2)](https://man7.org/linux/man-pages/man2/pidfd_send_signal.2.html)
    pub fn send_signal(&self, sig: Signal) -> Result<(), Errno> {
        self.send_signal_with(sig, PidfdSignalFlags::empty())
    }

    /// `pidfd_send_signal(pidfd, sig, NULL, flags)`: unknown bits or more than one scope
    /// -> EINVAL; no scope -> the pidfd's default; nothing attached (reaped) -> ESRCH.
    /// `PIDFD_SIGNAL_PROCESS_GROUP` signals the process group whose id is the pidfd's
    /// pid, whether or not its task is still there: ESRCH when no group has that id
    /// (the pidfd's task is no group leader).
    ///
    /// # References
    /// `SYSCALL_DEFINE4(pidfd_send_signal)` / `do_pidfd_send_signal` in `kernel/signal.c`.
    pub fn send_signal_with(&self, sig: Signal, flags: PidfdSignalFlags) -> Result<(), Errno> {
        if !PidfdSignalFlags::all().contains(flags) || flags.bits().count_ones() > 1 {
            return Err(Errno::EINVAL);
        }
        let scope = if flags == PidfdSignalFlags::THREAD {
            SignalScope::Thread
        } else if flags == PidfdSignalFlags::THREAD_GROUP {
            SignalScope::ThreadGroup
        } else if flags == PidfdSignalFlags::PROCESS_GROUP {
            SignalScope::ProcessGroup
        } else if self.file.flags.contains(PidfdFlags::THREAD) {
            SignalScope::Thread
        } else {
            SignalScope::ThreadGroup
        };
        match self.backend() {
            Some(b) => b.send_signal(&self.file.pid, sig, scope, self.file.viewer()),
            None => Err(Errno::ESRCH),
        }
    }

    /// `ioctl(pidfd, PIDFD_GET_INFO)`.
    ///
    /// - Unknown mask bits are ignored. The pid not visible from the pidfd's namespace
    ///   -> EREMOTE.
    /// - `EXIT` (if asked): only after reap; `exit_code` (wait status) and `cgroupid` at
    ///   exit (`CGROUPID` reported with it, asked or not). A zombie reports no `EXIT`.
    /// - Reaped: ESRCH unless `EXIT` was asked for; then only the exit snapshot.
    /// - Live or zombie: `PID` (pid, tgid, ppid in the pidfd's namespace), `CREDS` (all
    ///   0 in uproc) and `CGROUPID` (the live task's cgroup) always, as Linux fills
    ///   them unconditionally; pid or tgid reading 0 -> ESRCH.
    /// - `SUPPORTED_MASK` (if asked): [`PIDFD_INFO_SUPPORTED`].
    ///
    /// # References
    /// `pidfd_info` in `fs/pidfs.c`.
    pub fn info(&self, mask: InfoMask) -> Result<PidfdInfo, Errno> {
        let f: &File = &self.file;
        if f.pid.nr_in(f.viewer()) == 0 {
            return Err(Errno::EREMOTE);
        }
        let mut out = PidfdInfo::default();
        // The task first, its exit record after (`get_pid_task` before `exit_info`): a
        // reap records the exit before it unhashes the task (`pidfs_exit` comes first
        // in `release_task`), so a task the lookup missed has its record by the time
        // it is read, and a reap racing this call never leaves it with neither.
        let ids = self.backend().and_then(|b| b.task_ids(&f.pid, f.viewer()));
        let reaped = if mask.contains(InfoMask::EXIT) {
            f.state.inner.lock().reaped
        } else {
            None
        };
        match ids {
            None if !mask.contains(InfoMask::EXIT) => return Err(Errno::ESRCH),
            None => {}
            Some(ids) => {
                if ids.pid == 0 || ids.tgid == 0 {
                    return Err(Errno::ESRCH);
                }
                out.mask |= InfoMask::PID | InfoMask::CREDS;
                out.pid = ids.pid;
                out.tgid = ids.tgid;
                out.ppid = ids.ppid;
                // The live task's, unless the exit snapshot below replaces it.
                out.mask |= InfoMask::CGROUPID;
                out.cgroupid = ids.cgroupid;
            }
        }
        // Asked for and recorded: a task reaped after the lookup found it reports both
        // (as Linux, where the record is read whether or not the task was found).
        if let Some(exit) = reaped {
            out.mask |= InfoMask::EXIT | InfoMask::CGROUPID;
            out.exit_code = exit.status.raw();
            out.cgroupid = exit.cgroupid;
        }
        if mask.contains(InfoMask::SUPPORTED_MASK) {
            out.mask |= InfoMask::SUPPORTED_MASK;
            out.supported_mask = PIDFD_INFO_SUPPORTED;
        }
        Ok(out)
    }

    /// `pidfd_poll`: readable once the task exited (not while it is a group leader whose
    /// threads still run), readable + hangup once it is reaped.
    ///
    /// # References
    /// `pidfd_poll` in `fs/pidfs.c`.
    pub fn poll(&self) -> Readiness {
        let inner = self.file.state.inner.lock();
        Readiness {
            readable: inner.readable(),
            hangup: inner.reaped.is_some(),
        }
    }

    /// Blocks until the pidfd is readable or `timeout` passes; true if readable. Sleeps
    /// on this pid's condition variable (`wait_event` on `pid->wait_pidfd`), woken only
    /// by this pid's exit or reap: no polling.
    pub fn wait_readable(&self, timeout: Duration) -> bool {
        let state = &*self.file.state;
        let deadline = Instant::now().checked_add(timeout);
        let mut inner = state.inner.lock();
        while !inner.readable() {
            inner.blocked += 1;
            let timed_out = match deadline {
                Some(d) => state.cond.wait_until(&mut inner, d).timed_out(),
                None => {
                    state.cond.wait(&mut inner);
                    false
                }
            };
            inner.blocked -= 1;
            if timed_out {
                return inner.readable();
            }
        }
        true
    }

    /// A future that completes when the pidfd is readable. It registers its waker on
    /// this pid only; the exit wakes exactly the futures waiting on this pid.
    pub fn readable(&self) -> Readable {
        Readable::new(Arc::clone(&self.file.state))
    }

    /// A channel that receives one [`ExitEvent`] when the task exits, or at once if it
    /// already has: for runtimes that multiplex many pidfds on one receiver loop.
    ///
    /// Each call registers a sender on the pid until the task exits, when every
    /// registered sender sends its event (to a receiver still held) and is dropped.
    /// Dropping the receiver does not unregister it (a `crossbeam_channel` sender
    /// cannot tell that its receivers are gone without sending): subscribe once per
    /// pidfd and keep the receiver, rather than subscribing again and again to a task
    /// that lives on (each registration keeps a few hundred bytes until the exit).
    pub fn subscribe(&self) -> crossbeam_channel::Receiver<ExitEvent> {
        let (tx, rx) = crossbeam_channel::unbounded();
        let nr = self.file.pid.nr_in(self.file.viewer());
        let now = {
            let mut inner = self.file.state.inner.lock();
            match inner.event_status() {
                Some(status) => Some(status),
                None => {
                    inner.subscribers.push(Subscriber { tx: tx.clone(), nr });
                    None
                }
            }
        };
        if let Some(status) = now {
            // The receiver is alive (we hold it), so this cannot fail.
            let _ = tx.send(ExitEvent {
                ino: self.ino(),
                pid: nr,
                status,
            });
        }
        rx
    }

    /// The pid's inode number: equal for every pidfd of one process, never reused.
    pub fn ino(&self) -> u64 {
        self.file.pid.ino()
    }

    /// `name_to_handle_at(pidfd, "", AT_EMPTY_PATH)`: the handle naming this pid.
    pub fn file_handle(&self) -> FileHandle {
        FileHandle::new(self.ino())
    }

    /// The exit status recorded at reap (`PIDFD_INFO_EXIT`), `None` before.
    pub fn exit_status(&self) -> Option<WaitStatus> {
        self.file.state.inner.lock().reaped.map(|r| r.status)
    }

    /// Blocking waiters currently asleep in [`wait_readable`](PidFd::wait_readable) on
    /// this pid, and async wakers registered on it (for tests and diagnostics).
    pub fn waiter_counts(&self) -> (usize, usize) {
        let inner = self.file.state.inner.lock();
        (inner.blocked, inner.wakers.len())
    }
}

impl PartialEq for PidFd {
    fn eq(&self, other: &PidFd) -> bool {
        Arc::ptr_eq(self.file(), other.file())
    }
}

impl Eq for PidFd {}

impl Hash for PidFd {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (Arc::as_ptr(self.file()) as usize).hash(state);
    }
}

impl fmt::Debug for PidFd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PidFd")
            .field("ino", &self.ino())
            .field("nr", &self.file.pid.nr_in(self.file.viewer()))
            .field("flags", &self.file.flags)
            .finish_non_exhaustive()
    }
}
