//! # uproc: processes for green threads
//!
//! uproc gives the tasks of a Rust program (threads, tokio tasks, the jobs of a runner,
//! the processes of a kernel emulator) the life cycle of Linux processes: pid numbers in
//! nested pid namespaces, pidfds that can never hit a recycled pid, a parent/child tree
//! with zombies, reaping, reparenting and subreapers, signals, and cgroups with a pids
//! limit. It costs a few atomic operations and lock acquisitions per task, not a system
//! call: nothing here touches the real kernel.
//!
//! This crate is the facade: it re-exports the types of the sub-crates (`uproc-abi`,
//! `uproc-pidns`, `uproc-pidfs`, `uproc-cgroup`, `uproc-tasklist`) and adds what a user
//! of a task runtime touches: a [`Runtime`], [`spawn`](Runtime::spawn) of a body as a
//! task on an [`Executor`], the [`TaskCx`] a body sees, the [`Child`] handle, and
//! introspection ([`ps`](Runtime::ps), [`pstree`](Runtime::pstree)).
//!
//! ```
//! use uproc::{Runtime, Signal, Spawn};
//!
//! let rt = Runtime::builder().build()?;               // init is pid 1
//! let child = rt.spawn(Spawn::new().name("hello"), |cx| {
//!     assert_eq!(cx.task().ppid(), 1);                 // forked from init
//!     7                                                // the exit code
//! })?;
//! assert_eq!(child.wait()?.exited(), Some(7));         // reaped: pid freed
//!
//! // A panic is contained: the task dies of SIGABRT, the runtime goes on.
//! let child = rt.spawn(Spawn::new(), |_| panic!("boom"))?;
//! assert_eq!(child.wait()?.signaled(), Some(Signal::ABRT));
//! assert_eq!(rt.ps().len(), 1);                        // only init is left
//! # Ok::<(), uproc::Errno>(())
//! ```
//!
//! ## The pieces
//!
//! - [`Runtime`]: one simulated kernel (root pid namespace, init, pidfs, cgroup
//!   hierarchy, task list) plus an executor. Built with [`Runtime::builder`]: lock
//!   [`Profile`], root `pid_max`, whether init reaps orphans, executor.
//! - [`Task`]: the embedding API, process-level and close to the syscalls: `fork`,
//!   `exit`, `wait`, `kill`, `pidfd_open`, `setpgid`, `unshare_pid_ns`, ... A task
//!   forked directly has no body: the caller drives it.
//! - [`Spawn`] + [`Runtime::spawn`]: fork a task **and** run a body for it. The body
//!   gets a [`TaskCx`]; its return value is the exit code. [`current()`] returns the
//!   context inside any body.
//! - [`Child`]: `wait`, `try_wait`, `kill`, `pidfd`, and `.await`.
//! - [`PidFd`]: a handle on a process that holds the process, never its number.
//! - [`Cgroup`]: `mkdir`, `write("pids.max", "10")`, `attach`, `kill`, `read`.
//!
//! ## Profiles
//!
//! The same semantics run under different locking, modelled on Linux versions, so the
//! benchmark can compare them ([`Runtime::lock_stats`] counts the global lock
//! acquisitions with the `lockstat` feature):
//!
//! | [`Profile`] | models |
//! |---|---|
//! | `Linux618` | Linux before Dec 2025: `pidmap_lock` taken twice per fork, pid freed under `tasklist_lock` |
//! | `Linux70` (default) | Linux 7.0: `pidmap_lock` once per fork, pidfs index outside it, pid freed after `tasklist_lock` |
//!
//! ## Executors
//!
//! uproc does not schedule: it hands each body to an [`Executor`]. The default
//! [`ThreadExecutor`] runs each body on its own OS thread (the 1:1 model). With the
//! `tokio` feature, `tokio::TokioExecutor` runs synchronous bodies on tokio's blocking
//! pool and `Runtime::spawn_async` runs `async` bodies as tokio tasks (10,000 tasks are
//! 10,000 futures). Any other green-thread runtime plugs in through the one-method
//! [`Executor`] trait.
//!
//! ## Rules that go beyond Linux, because this is a library
//!
//! - A [`PidFd`] holds the pid object, never a number: an old handle can never signal
//!   or wait for a task that reused the number.
//! - Dropping handles never leaks. Orphans go up the reaper chain, and init reaps the
//!   orphans reparented to it ([`RuntimeBuilder::reap_orphans`], on by default). Tasks
//!   a caller forks from `rt.init()` stay the caller's to wait for, as with any parent.
//!   A [`Child`] dropped unwaited is **detached**: the task is reaped when its body
//!   ends (tokio's detached-task rule), so no zombie or pid outlives its use.
//! - A panic in a body ends that task as killed by `SIGABRT` (the runtime goes on).
//!   Signals reach a running body cooperatively: a synchronous body polls
//!   [`TaskCx::signal_pending`]; if a fatal signal is pending when it returns, the task
//!   ends killed by it. An async body is dropped at its next await point on `SIGKILL`.
//! - [`TaskCx::exit`] ends a body early by unwinding (no panic message); panic
//!   containment and `exit` need `panic = "unwind"`.
//!
//! ## Tracing
//!
//! Nothing here prints; everything observable goes through [`tracing`] events (cheap
//! when no subscriber is installed; filter by target, e.g.
//! `RUST_LOG=uproc=debug,uproc_tasklist=debug`). The events, by where they come from:
//!
//! | target | level | message (fields) | when |
//! |---|---|---|---|
//! | `uproc` | debug | `spawn` (pid, ppid) | [`Runtime::spawn`] forked a task, before its body starts |
//! | `uproc` | debug | `Child::kill` (pid) / `signal hook` (signal) | SIGKILL sent through a `Child`; a fatal signal reached a running body |
//! | `uproc` | error | `task body panicked; task killed by SIGABRT` (pid, panic) | a body panicked |
//! | `uproc` | warn | `job dropped without running; task killed` (pid) | an executor dropped a job (shutdown) |
//! | `uproc` | trace | `detached task reaped` (pid, status) | a dropped `Child`'s task was reaped |
//! | `uproc_tasklist::fork` | debug | fork (pid, flags) | every successful fork (`copy_process`) |
//! | `uproc_tasklist::fork` | warn | `fork rejected: pids.max reached` (cgroup) | a limit hit |
//! | `uproc_tasklist::exit` | debug | `exit` (pid, status, group_dead), `reap` (pid) | `do_exit` and `release_task` |
//! | `uproc_tasklist::exit` | debug | `namespace init died: killing the namespace` (level) | `zap_pid_ns_processes` |
//! | `uproc_tasklist::signal` | debug | `kill` (target_pid, sig) | every signal sent |
//! | `uproc_tasklist::reparent` | debug | reparenting of orphans | `forget_original_parent` |
//! | `uproc_cgroup::membership` | info/debug | `fork rejected by pids controller in <path>` | a pids.max hit (info the first time, as Linux logs once) |
//! | `uproc_cgroup::membership` | info | `cgroup.kill` (path, tasks) | a `cgroup.kill` write |
//! | `uproc_pidfs::state` | debug | `pidfs: do_notify_pidfd`, `pidfs: exit` (ino, nr, status) | pidfd readiness at exit and reap |
//!
//! The sub-crates' messages are theirs; their `target` is their module path.
//!
//! ## Introspection
//!
//! [`Runtime::ps`] lists tasks as [`ProcInfo`] (pid, ppid, tgid, state, cgroup, name,
//! NSpid) from the root namespace, [`Runtime::ps_in`] from any namespace, and
//! [`Runtime::pstree`] renders the tree (`pstree -p` style, see [`ps::pstree`]).
//! [`Task::status`] prints `/proc/PID/status` lines.
//!
//! ## Cargo features
//!
//! - `tokio`: [`tokio::TokioExecutor`](crate::tokio) and `Runtime::spawn_async`.
//! - `lockstat`: count global lock acquisitions ([`Runtime::lock_stats`]).
#![forbid(unsafe_code)]

mod cx;
mod executor;
pub mod ps;
mod runtime;
mod spawn;
#[cfg(feature = "tokio")]
pub mod tokio;

pub use cx::{TaskCx, current};
pub use executor::{Executor, ThreadExecutor};
pub use ps::ProcInfo;
pub use runtime::{Runtime, RuntimeBuilder};
pub use spawn::{Child, ChildFuture, Spawn};

pub use uproc_abi::lockstat::LockStat;
pub use uproc_abi::{
    CloneFlags, DefaultAction, Errno, InfoMask, PidfdFlags, PidfdSignalFlags, Profile, SigSet,
    Signal, WaitOptions, WaitStatus,
};
pub use uproc_cgroup::{Cgroup, Limit};
pub use uproc_pidfs::{ExitEvent, FileHandle, PidFd, PidfdInfo, Readable, Readiness};
pub use uproc_pidns::{
    MAX_PID_NS_LEVEL, PID_MAX_DEFAULT, PID_MAX_LIMIT, PID_MAX_MIN, Pid, PidNamespace, RESERVED_PIDS,
};
pub use uproc_tasklist::{
    ChildCode, CloneArgs, SigChld, System, SystemConfig, Task, TaskState, WaitId, WaitInfo,
    WeakTask,
};

/// The lock-statistics vocabulary (`LockStat`, whether counting is compiled in).
pub mod lockstat {
    pub use uproc_abi::lockstat::{ENABLED, LockStat};
}
