//! The task life cycle for uproc: fork, exit, wait, reap, signals, reparenting.
//!
//! This crate is uproc's `kernel/fork.c`, `kernel/exit.c` and the task half of
//! `kernel/signal.c`: it owns [`Task`]s (threads), their thread groups (processes), the
//! parent/child tree, process groups and sessions, and the [`System`] that holds one
//! runtime's pid namespaces (`uproc-pidns`), pidfs (`uproc-pidfs`) and cgroup hierarchy
//! (`uproc-cgroup`) together.
//!
//! # Objects and who holds them
//!
//! - [`System`] (one per runtime, in an `Arc`) holds the runtime init, pid 1 of the root
//!   namespace. Tasks point back to it weakly.
//! - A process is a `ThreadGroup` (`signal_struct` + `sighand_struct`); each thread is a
//!   `TaskInner` (`task_struct`) behind a [`Task`] handle. Every thread holds its group
//!   strongly; the group holds its threads weakly; the group leader holds the other
//!   threads strongly (it is released last).
//! - A parent's group holds its children (child group leaders) strongly in its
//!   `children` list; a child holds its parent (`real_parent`) weakly. So there is no
//!   `Arc` cycle: once reaped (detached from its parent's list, its pid slot cleared) a
//!   task is freed as soon as the last user handle goes.
//! - A namespace's idr holds its published [`Pid`]s and each `Pid` holds its
//!   namespaces: that loop is cut by `free_pid`. Dropping the `System` frees every
//!   number still allocated, so the last handle of a runtime frees everything.
//! - A [`Pid`] names a task only weakly (`task_slot`); a namespace's `child_reaper` is
//!   weak too. pidfs's backend and cgroup's resolver are the `System`, weakly.
//!
//! # THE LOCK ORDER
//!
//! ```text
//! a group's threadgroup_rwsem (fork: read; cgroup migration: write)
//! tasklist_lock (NamedRwLock, global)
//!   -> a group's `children` lock (one; several only under tasklist_lock write)
//!     -> a group's siglock (`sig`)                    [leaf, except:]
//!       -> per-task leaf mutexes (hook, threads, name, ns_for_children), Pid::task_slot
//! ```
//!
//! 0. A group's `threadgroup_rwsem` (`cgroup_threadgroup_rwsem`, per group) is the
//!    outermost: a fork adding a task to a group holds it for reading from choosing the
//!    cgroup until `cgroup_post_fork` linked the task; a migration of the group
//!    (`cgroup.procs`, [`Cgroup::attach`](uproc_cgroup::Cgroup::attach)) holds it for
//!    writing, so a thread group is never split across cgroups. Nothing else takes it.
//! 1. `tasklist_lock` is taken before any lock of this crate (but the rwsem) and never
//!    while one is held. Write: fork's attach (1), `exit_notify` (1), `release_task` (1) — exactly
//!    three per life cycle of a plain child — plus the rare paths (setpgid, setsid, the
//!    end of a namespace init's zap). Read: slow paths only (kill -1, kill -pgid, the
//!    stop/continue parent notification, subreaper propagation, the zap's walk).
//! 2. A group's `children` list is modified only with `tasklist_lock` (write) AND that
//!    group's `children` lock held, so a waiter holding only its own group's lock sees a
//!    consistent list. Holding two or more `children` locks is allowed only under
//!    `tasklist_lock` (write), which makes their order free: every other holder of a
//!    `children` lock holds just that one and waits for no other children lock.
//! 3. The siglock is a leaf: while holding it nothing else is acquired but the per-task
//!    leaf mutexes. Siglocks are never nested in each other.
//! 4. The locks of other crates: `pidmap_lock` (inside `alloc_pid` / `free_pid` /
//!    `disable_pid_allocation`) is never taken under `tasklist_lock` in `Linux70` (the
//!    pids of a reap are freed after it is dropped); in `Linux618`, `free_pid` runs under
//!    `tasklist_lock` (write), as 6.18 did, so there `tasklist_lock -> pidmap_lock`.
//!    `css_set_lock` is never taken under any lock of this crate: `can_fork` before the
//!    attach, `post_fork` after it, `task_dead` before `exit_notify`, `release` before
//!    `release_task` locks; the cgroup crate may call [`CgroupMember`] methods (which
//!    take a siglock) under `css_set_lock`, so `css_set_lock -> siglock`. pidfs is called
//!    (`pidfd_prepare_stale`, `pidfs_exit`, `do_notify_pidfd`) with none of our locks
//!    held, and calls our [`PidfdBackend`] with none of its own.
//! 5. No user code (signal hooks, pidfd wakers) runs under any lock; no guard leaves
//!    the crate.
//!
//! Per life cycle (fork + exit + reap of a plain child) the named global locks are taken
//! exactly: `tasklist_lock` write 3; `pidmap_lock` 2 (`Linux70`: alloc, free) or 3
//! (`Linux618`: reserve, publish, free); `css_set_lock` 3 (can_fork, post_fork,
//! task_dead). Waiting never takes `tasklist_lock`.
//!
//! # Which lock protects which field
//!
//! | field | written under | read under |
//! |---|---|---|
//! | group `children` list | `tasklist_lock` (W) + `children` | `children` |
//! | `exit_state` | `tasklist_lock` (W), except the reaper's CAS ZOMBIE->DEAD | lock-free (Acquire) |
//! | `real_parent`, pgrp, session | `tasklist_lock` (W) + siglock | siglock |
//! | pending sets, group exit, stop state, SIGCHLD disposition, thread list | siglock | siglock |
//! | stop / continue reports | siglock (set), waiter's swap (consume) | lock-free |
//! | pgrp/session usage table | `tasklist_lock` (W) | `tasklist_lock` |
//! | `Pid::task_slot` | `tasklist_lock` (W) | its own RwLock |
//!
//! # Life cycle (kernel function each piece models)
//!
//! - [`Task::fork`] (`copy_process`, `fork.rs`): validate, `alloc_pid`, `CLONE_PIDFD`,
//!   `cgroup_can_fork`, attach under `tasklist_lock`, `cgroup_post_fork`; reverse unwind.
//! - [`Task::exit`] / [`Task::exit_group`] / [`Task::exit_signaled`] (`do_exit`,
//!   `do_group_exit`, `exit_notify`, `exit.rs`): reparent (`reparent.rs`,
//!   `forget_original_parent`), zombie / delayed zombie / autoreap, notify the parent and
//!   pidfs. A namespace init's death closes and kills its namespace
//!   (`zap_pid_ns_processes`); the init is reapable once the namespace is empty.
//! - [`Task::wait`] (`do_wait`, `wait.rs`) and `release_task` (`exit.rs`).
//! - [`Task::kill`], [`Task::tgkill`] (`kill_something_info`, `do_tkill`, `signal.rs`).
//! - [`Task::setpgid`], [`Task::setsid`] (`pgrp.rs`).
//!
//! ```
//! use uproc_abi::{WaitOptions, Signal};
//! use uproc_tasklist::{CloneArgs, System, SystemConfig, WaitId};
//!
//! let sys = System::new(SystemConfig::default())?;
//! let init = sys.init();
//! let child = init.fork(&CloneArgs::default())?;
//! init.kill(init.pid_of(&child), Signal::TERM)?;            // a bare task dies at once
//! let info = init.wait(WaitId::All, WaitOptions::EXITED)?.expect("blocking wait");
//! assert_eq!(info.status.signaled(), Some(Signal::TERM));
//! assert_eq!(sys.nr_tasks(), 1);                            // reaped: only init is left
//! # Ok::<(), uproc_abi::Errno>(())
//! ```
//!
//! Tasks are bookkeeping ("bare") unless a runtime installs a signal hook
//! ([`Task::set_signal_hook`], "managed"): a bare task dies at once from a fatal
//! signal; a managed one gets it pending and its hook called. See IMPLEMENTATION.md for
//! the diagrams.
#![forbid(unsafe_code)]

mod exit;
mod fork;
mod pgrp;
mod reparent;
mod signal;
mod sync;
mod system;
mod task;
mod wait;

pub use fork::CloneArgs;
pub use signal::SigChld;
pub use system::{System, SystemConfig};
pub use task::{Task, TaskState, WeakTask};
pub use wait::{ChildCode, WaitId, WaitInfo};

#[cfg(doc)]
use {uproc_cgroup::CgroupMember, uproc_pidfs::PidfdBackend, uproc_pidns::Pid};

/// The lock-free handoffs on their own, for `tests/loom_claim.rs` (loom cannot run the
/// rest of the crate: its locks are `parking_lot`'s).
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_model {
    use crate::sync::{AtomicI32, AtomicU8, Ordering};

    /// A child's `exit_state` and exit code as the exiting side publishes them.
    #[derive(Debug)]
    pub struct Child {
        state: AtomicU8,
        code: AtomicI32,
        stop: AtomicI32,
    }

    impl Default for Child {
        fn default() -> Self {
            Self::new()
        }
    }

    impl Child {
        /// A running child.
        pub fn new() -> Child {
            Child {
                state: AtomicU8::new(crate::task::RUNNING),
                code: AtomicI32::new(0),
                stop: AtomicI32::new(0),
            }
        }

        /// exit_notify: code first, then ZOMBIE with Release.
        pub fn exit(&self, code: i32) {
            self.code.store(code, Ordering::Release);
            self.state.store(crate::task::ZOMBIE, Ordering::Release);
        }

        /// A waiter's attempt: the code if it won the ZOMBIE -> DEAD claim.
        pub fn try_reap(&self) -> Option<i32> {
            if self.state.load(Ordering::Acquire) != crate::task::ZOMBIE {
                return None;
            }
            self.state
                .compare_exchange(
                    crate::task::ZOMBIE,
                    crate::task::DEAD,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .ok()
                .map(|_| self.code.load(Ordering::Acquire))
        }

        /// The stop report a signal sets.
        pub fn stop(&self, sig: i32) {
            self.stop.store(sig, Ordering::Release);
        }

        /// A waiter consumes the stop report (once).
        pub fn take_stop(&self) -> i32 {
            self.stop.swap(0, Ordering::AcqRel)
        }
    }
}
