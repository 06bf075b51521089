//! pidfs for uproc: pid inode numbers, the ino index, exit info and [`PidFd`] handles.
//! Models Linux's `fs/pidfs.c` and the pidfd parts of `kernel/pid.c`,
//! `kernel/fork.c` and `kernel/signal.c`.
//!
//! # What this crate owns
//!
//! - [`Pidfs`], one per runtime: the inode-number allocator, the ino -> [`Pid`] index
//!   and the link to the task list ([`PidfdBackend`]). It is the runtime's
//!   [`PidfsHooks`](uproc_pidns::PidfsHooks): `alloc_pid` calls `add_pid` (assign the
//!   ino, insert; under `Scalable` the first read of [`Pid::ino`] calls `next_ino`
//!   instead), `free_pid` calls `remove_pid` (`pidfs_add_pid`, `pidfs_remove_pid`).
//! - The per-pid state (`pid->attr` + `pid->wait_pidfd`) in [`Pid::pidfs_slot`], and
//!   the dead mark (`PIDFS_PID_DEAD`) in [`Pid::pidfs_flags`]: registration, exited flag and status, exit info recorded at reap,
//!   and the waiters (a condvar for blocking waits, wakers for futures, channels for
//!   subscribers). See `state.rs` for the race rule between the first open and exit.
//! - [`PidFd`]: an open pidfd. It holds the `Arc<Pid>` and the shared per-pid state,
//!   never a number, so it cannot reach a process that later reuses the number.
//! - The pidfd caches (`cache.rs`): per thread, the allocations of closed pidfds'
//!   files and of dropped pids' states, for the next pidfd (Linux's slab caches for
//!   `struct file` and the pid's pidfs attributes).
//! - [`FileHandle`]: the 8-byte `FILEID_KERNFS` export format, and
//!   [`Pidfs::open_by_handle`].
//!
//! # Who holds what
//!
//! ```text
//!  PidMap --hooks--> Pidfs --index (Weak)--> Pid <--Arc-- PidFd --Arc--> PidState
//!    ^                 |                      |                            ^
//!    +------Weak-------+                      +--pidfs_slot (Arc)----------+
//! ```
//! The map owns the `Pidfs` (as its hooks), so `Pidfs` only holds a `Weak` map. The
//! index holds `Weak<Pid>`: it names pids, the namespaces' idrs and handles own them.
//! The per-pid state is owned by the pid's slot and by every pidfd, so exit info lives
//! as long as any handle does (`pid->attr` until the last `struct pid` reference).
//!
//! # Locks
//!
//! | data | protected by |
//! |---|---|
//! | `Linux618` counter + `BTreeMap` index | its own mutex, only ever taken with `pidmap_lock` held (the hooks run under it; `find_by_ino` takes it), i.e. "under `pidmap_lock`" |
//! | `Linux70` / `Scalable` hash index | one mutex per bucket (64 buckets), never under `pidmap_lock` (`Scalable` has none) |
//! | `Scalable`: whether a pid is in the index | bits `INDEXED` (set under its bucket lock by the first pidfd) and `REMOVED` (set by `remove_pid`) of [`Pid::pidfs_flags`], read-modify-writes |
//! | `Linux70` / `Scalable` ino numbers | [`InoCookie`]: per-thread batches of one atomic counter |
//! | per-pid state (flags, exit info, waiters) | the pid's state mutex (`wait_pidfd.lock`) |
//!
//! Order: `pidmap_lock` -> index mutex; the state mutex is a leaf. No lock is held while
//! calling the backend, waking a waker, dropping a waker or sending an event, and no
//! guard leaves the API.
//!
//! # Invariants
//!
//! - Every pid allocated after [`Pidfs::new`] gets an ino `>= 1`, unique within the
//!   `Pidfs`, never reused (under `Scalable`, when its ino is first read). [`Pidfs::find_by_ino`] finds exactly the pids allocated
//!   and not freed. The `Linux*` index holds every one of them; the `Scalable` index
//!   only those that ever had a pidfd (the only ones a file handle can open), and a
//!   lookup of any other walks the runtime's live pids.
//! - Exit info is recorded only for pids that had a pidfd; any other reaped pid is
//!   marked dead and can never get one (by number or by handle).
//! - Readiness is monotonic: not readable -> readable -> readable + hangup.
//!
//! # Profiles
//!
//! `Linux618`: ordered tree + global counter under `pidmap_lock` (a full alloc + free
//! takes `pidmap_lock` 3 times, the index updated inside). `Linux70`: batched cookies and
//! a sharded hash table, updated after `pidmap_lock` is dropped (2 times). `Scalable`:
//! the same batches, no `pidmap_lock` at all (its pid allocator has none), and the
//! table only for pids that get a pidfd: a fork makes no ino (the first read of
//! [`Pid::ino`] does), a free reads one flag byte (sets one bit if the pid was not
//! reaped first or had a pidfd), and neither touches shared memory of pidfs. See
//! `IMPLEMENTATION.md`.
#![forbid(unsafe_code)]

mod backend;
mod cache;
mod handle;
mod index;
mod ino;
mod pidfd;
mod pidfs;
mod readable;
mod state;
mod sync;

pub use backend::{PidTaskState, PidfdBackend, SignalScope, TaskIds};
pub use handle::FileHandle;
pub use ino::InoCookie;
pub use pidfd::{ExitEvent, PIDFD_INFO_SUPPORTED, PidFd, PidfdInfo, Readiness};
pub use pidfs::Pidfs;
pub use readable::Readable;
pub use state::{do_notify_pidfd, pidfs_exit};

#[cfg(doc)]
use uproc_pidns::Pid;
