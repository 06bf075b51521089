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
//! - [`Spawn`] + [`Runtime::spawn`] / `Runtime::spawn_async`: fork a task **and** run a
//!   body for it. The body gets a [`TaskCx`]; its return value is the exit code.
//!   [`current()`] returns the context inside any body.
//! - [`Child`]: the handle of a spawned task: `wait`, `try_wait`, `kill`, `pidfd`, and
//!   `.await`.
//! - [`ChildSet`]: many children, each reaped as it becomes ready (`join_next().await`,
//!   blocking `wait_next`, `abort_all`), in the spirit of tokio's `JoinSet`.
//! - [`Task`]: the embedding API, process-level and close to the syscalls: `fork`,
//!   `exit`, `wait`, `kill`, `pidfd_open`, `setpgid`, `unshare_pid_ns`, ... A task
//!   forked directly has no body: the caller drives it.
//! - [`PidFd`]: a handle on a process that holds the process, never its number.
//! - [`Cgroup`]: `mkdir`, `write("pids.max", "10")`, `attach`, `kill`, `read`.
//!
//! ## Executors
//!
//! uproc does not schedule: `spawn` forks the task (the process-model part: pid,
//! parent, cgroup charge) and hands one *job* to an [`Executor`]: "run this
//! body, then exit the task with what it returned, and reap it if its `Child` is gone".
//!
//! - [`ThreadExecutor`] (the default): one OS thread per body, the 1:1 model Linux
//!   itself uses; [`ThreadExecutor::stack_size`] sets the threads' stacks.
//! - `tokio::TokioExecutor` (feature `tokio`): synchronous bodies on tokio's blocking
//!   pool, async bodies as tokio tasks.
//! - `smol::SmolExecutor` (feature `smol`): synchronous bodies on smol's blocking pool,
//!   async bodies as smol tasks.
//! - `uproc_may::MayExecutor` (the `uproc-may` crate): every body a `may` stackful
//!   coroutine, thousands per worker thread.
//! - Your own: implement [`Executor`] for any other green-thread runtime: `execute`
//!   for synchronous bodies, `execute_async` if it runs futures, `coroutine_hooks` if
//!   its units share OS threads and yield mid-body (the trait docs say why). A job may
//!   run on any thread, at any later time; if the executor drops it unrun (shutdown,
//!   no thread), the task ends killed by `SIGKILL`, and an async body an executor
//!   drops unfinished ends the same way. Nothing leaks either way.
//!
//! [`Runtime::spawn_async`] runs an `async` body on the executor if it runs futures,
//! else (feature `tokio`) on the caller's tokio runtime: 10,000 tasks are 10,000
//! futures. [`Child`], [`ChildSet::join_next`] and [`PidFd::readable`] are plain
//! futures woken by the task's exit: any executor, or none, can await them.
//!
//! [`current()`] works on every executor: it is set while the body runs (for an async
//! body, while its future is polled, on whichever thread polls it, and while a killed
//! body's future is dropped; in a stackful
//! coroutine, in the coroutine's own storage, so it stays right across yields and
//! moves between worker threads).
//!
//! ## Managed and bare tasks: how signals arrive
//!
//! A task spawned with a body is **managed**: it is forked managed
//! ([`Task::fork_managed`]: no signal hook to install), and an async body that parks
//! installs a hook of its own ([`Task::set_signal_hook`]) so that a `SIGKILL` can wake
//! it. A fatal signal then does not end the task at once (its body is Rust code that
//! cannot be stopped from outside): it is made pending, and the body ends
//! cooperatively.
//!
//! - A synchronous body polls [`TaskCx::signal_pending`]. When it returns, a pending
//!   fatal signal decides the status (killed by `SIGTERM`, ...) whatever it returned.
//! - An async body is dropped at its next await point on `SIGKILL` (the hook wakes
//!   it); it sees other signals through `signal_pending`, as a sync body does.
//! - A `SIGKILL` after another fatal signal still drops a parked async body (the
//!   status stays the first fatal signal's, unless that one dumps core: Linux dies
//!   of the SIGKILL then).
//! - Blocking waits inside a body ([`Child::wait`], [`ChildSet::wait_next`]) are not
//!   interrupted by a fatal signal to the waiting body (in Linux a killed waiter dies
//!   at once): poll [`Child::try_wait`] with [`TaskCx::signal_pending`], or `.await`
//!   in an async body, which `SIGKILL` drops.
//! - Stop signals are bookkeeping only: `SIGSTOP` makes the task read as stopped
//!   (`ps`, the parent's `WUNTRACED` wait) but cannot pause its body, which may even
//!   return meanwhile.
//! - A task killed before its job starts never runs its body.
//! - A panic ends the task as killed by `SIGABRT` (core bit only in a process that
//!   dumps core, [`Task::set_dumps_core`]), and the runtime goes
//!   on. [`TaskCx::exit`] ends a body early by unwinding (no panic message). Both need
//!   `panic = "unwind"`.
//!
//! A task forked directly ([`Task::fork`]) is **bare**: no hook, so a fatal signal ends
//! it at once, as in Linux; the caller that drives it observes the exit.
//!
//! ## Handles, waiting and detach-on-drop
//!
//! - [`Child::wait`] blocks until the task exits and reaps it (`waitid(P_PIDFD)` from
//!   its parent), asleep on the task's own pidfd wait queue: no polling, no timer.
//!   `child.await` does the same without blocking a thread: the job that runs the body
//!   wakes it right after the exit.
//! - A [`Child`] (or its unfinished `.await`) dropped unwaited **detaches** the task
//!   (tokio's rule for detached tasks): the task is reaped as soon as its body ends, so
//!   no zombie or pid outlives its use.
//! - If the parent exits first, the task is reparented to the nearest subreaper, or
//!   to init, which reaps the orphans it adopts ([`RuntimeBuilder::reap_orphans`], on by
//!   default). The `Child` can no longer reap it; waiting returns its exit status once
//!   it has exited and the adopter reaps it. Tasks a caller forks from `rt.init()`
//!   stay the caller's to wait for, as with any parent.
//! - [`Child::kill`] and every [`PidFd`] name the task itself, never its number: a
//!   handle can never signal or wait for a task that reused the number.
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
//! | `Scalable` | no global lock on fork/exit/reap: pid numbers from per-thread batches, per-cgroup membership, and per-process locks (the parent's children list, each process's signal lock) instead of `tasklist_lock`; the same observable rules, except the order in which pid numbers are handed out |
//!
//! Lock acquisitions per fork + exit + reap of a plain child:
//!
//! | profile | `pidmap_lock` | `tasklist_lock` | `css_set_lock` |
//! |---|---|---|---|
//! | `Linux618` | 3 | 3 | 3 |
//! | `Linux70` | 2 | 3 | 3 |
//! | `Scalable` | 0 (a per-namespace pool lock refills batches, amortised) | 0 | 0 |
//!
//! ## Tracing
//!
//! Nothing here prints; everything observable goes through [`tracing`] (cheap when no
//! subscriber is installed). Filter by target, e.g.
//! `RUST_LOG=uproc=debug,uproc_tasklist=debug`; the tutorial's examples and tour install
//! a subscriber that honours `RUST_LOG`. The `task` span is entered around bodies on
//! threads and around each poll of async bodies, not across bodies that run as
//! stackful coroutines (tracing's entered-span stack is per OS thread). `pid` fields are numbers in the root
//! namespace, in every crate.
//!
//! The facade (target `uproc`):
//!
//! | kind | level | name or message | fields | when |
//! |---|---|---|---|---|
//! | span | debug | `task` | `pid` | around every body (each poll of an async one): the body's own events nest in it |
//! | event | debug | `runtime built` | `profile`, `pid_max` | [`RuntimeBuilder::build`] |
//! | event | debug | `spawn` | `pid`, `ppid`, `name` | a task was forked for a body, before the body starts |
//! | event | debug | `signal hook` | `signal`, `pid` | a fatal signal reached a task whose async body is parked (the hook that wakes it) |
//! | event | debug | `Child::kill` | `pid` | [`Child::kill`] |
//! | event | error | `task body panicked; task killed by SIGABRT` | `pid`, `panic` | a body panicked |
//! | event | warn | `job dropped without running; task killed` | `pid` | an executor dropped a job |
//! | event | error | `ThreadExecutor: thread creation failed; task killed` | `error` | no thread for a body |
//! | event | trace | `detached task reaped` | `pid`, `status` | a detached task was reaped |
//! | event | error | `cannot start reaper thread; zombie kept` | `pid`, `error` | a detached leader whose threads run needs a helper thread and none could start |
//!
//! The sub-crates (their `target` is their module path, e.g. `uproc_tasklist::fork`):
//!
//! | crate | level | message | fields | when |
//! |---|---|---|---|---|
//! | tasklist | debug | `fork` | `pid`, `ppid`, `thread` | every successful fork (`copy_process`) |
//! | tasklist | warn | `fork rejected: pids.max reached` | `cgroup` | a pids limit hit at fork |
//! | tasklist | warn | `fork rejected: pid namespace full` | `level` | `alloc_pid` found no free number |
//! | tasklist | debug | `exit` | `pid`, `status`, `group_dead` | `do_exit` |
//! | tasklist | debug | `reap` | `pid` | `release_task` |
//! | tasklist | debug | `reparent` | `child`, `reaper` | an orphan got a new parent (`forget_original_parent`) |
//! | tasklist | debug | `namespace init died: killing the namespace` | `level` | `zap_pid_ns_processes` |
//! | tasklist | debug | `kill` | `target_pid`, `sig` | every signal sent |
//! | tasklist | debug | `system created` / `system dropped` | `profile`, `pid_max` | a task list was built / dropped |
//! | tasklist | debug | `namespace empty: its init is reapable` | `level` | a dead namespace init's zap ended |
//! | tasklist | debug | `parent-death signal` | `pid`, `sig` | a parent-death signal (`PR_SET_PDEATHSIG`) sent |
//! | tasklist | debug | `process group orphaned with a stopped member: SIGHUP, SIGCONT` | `pgrp` | `kill_orphaned_pgrp` |
//! | tasklist | debug / trace | `group kill walked again` / `fork waits for a group kill in flight` | `walks`, `targets` | `Scalable`'s group kills against forks |
//! | tasklist | warn | `exit of the runtime init ignored: it never exits` (also `exit_group`) | | the runtime init asked to exit |
//! | tasklist | error | `signal hook panicked; contained` / `signal hook's drop panicked; contained` | `sig`, `panic` | user code in a hook panicked |
//! | pidns | debug | `alloc_pid: namespace full` | `level`, `pid_max` | no free pid number |
//! | pidfs | debug | `pidfs: pidfd opened` (`(stale)`, `by handle`) | `ino`, `nr`, `flags` | a pidfd was made |
//! | pidfs | debug | `pidfs: pidfd of a reaped pid` | `ino`, `nr`, `flags` | a `Child`'s pidfd first asked for after its reap |
//! | pidfs | debug | `pidfs: do_notify_pidfd` | `ino`, `nr`, `status` | a task's pidfds became readable (exit) |
//! | pidfs | debug | `pidfs: exit` / `pidfs: exit, marked dead` | `ino`, `nr`, `status`, `cgroupid` | reap: exit info recorded, or the pid marked dead |
//! | pidfs | trace | `pidfs: ino assigned` | `ino`, `nr` | a pid's inode number first read |
//! | pidfs | error | `pidfd waker panicked; contained` | `ino`, `panic` | user code in a pidfd waker panicked |
//! | pidfs | warn | `pidfs: backend already set; ignored` / `pidfs: the pid map already has pidfs hooks; this Pidfs is not installed` | | a second pidfs for one runtime |
//! | pidns | debug | `free_pid: first process failed, namespace closed` | `level` | a namespace's first process failed after its pid was allocated |
//! | cgroup | info, then debug | `fork rejected by pids controller in <path>` | `path` | a pids.max hit (info the first time, as Linux logs once) |
//! | cgroup | info | `cgroup.kill` | `path`, `tasks` | a `cgroup.kill` write |
//! | cgroup | debug | `fork raced with cgroup.kill: child killed` | `path` | a child linked while a kill ran |
//! | cgroup | debug | `cgroup created` / `cgroup removed` / `pids.max set` / `tasks migrated` | `path`, ... | control operations |
//!
//! ## Introspection
//!
//! [`Runtime::ps`] lists tasks as [`ProcInfo`] (pid, ppid, tgid, state, cgroup, name,
//! NSpid) from the root namespace, [`Runtime::ps_in`] from any namespace (a namespace
//! init's parent reads 0 there), and [`Runtime::pstree`] renders the tree (`pstree -pn`
//! style, see [`ps::pstree`]). Listing reads the task list only, as reading `/proc`
//! does: it opens no pidfd. [`Task::status`] prints `/proc/PID/status` lines.
//!
//! ## The tutorial
//!
//! The `examples/` package of the repository teaches uproc in reading order; each
//! example checks its own results, and `cargo run -p uproc-examples --bin tour` runs
//! them all:
//!
//! | example | teaches |
//! |---|---|
//! | `01_spawn_and_wait` | a runtime, a body as a task, waiting for its exit code |
//! | `02_exit_status_and_signals` | exited vs killed: `cx.exit`, a panic as SIGABRT, SIGKILL, SIGTERM |
//! | `03_pid_namespaces` | a container-like init is pid 1; NSpid; `ps` from inside |
//! | `04_pidfds` | a recycled pid cannot be hit through an old pidfd; async waits |
//! | `05_cgroup_limits` | a fork bomb contained by `pids.max`, ended by `cgroup.kill` |
//! | `06_orphans_and_subreapers` | orphans go to the nearest subreaper, else to init; a parent-death signal |
//! | `07_tokio_10k_tasks` | 10,000 async tasks as processes on tokio |
//! | `08_supervisor` | restarting failed children, waiting on a `ChildSet` |
//! | `09_lock_profiles` | one workload under each lock profile, with lock counts |
//! | `10_green_threads_may` | 10,000 may coroutines as processes, a pid namespace per group |
//! | `11_any_executor` | the same body on threads, may, tokio and smol, timed |
//!
//! ## Inside the facade: who holds what
//!
//! ```text
//!  Child ──Shared──┐                   ┌── Task (the task list's) ── parked body's hook ─┐
//!  TaskCx ─Shared──┼─> Tracker { rt, task, parent, pidfd, latch, status, kill } <────────┘
//!  JobGuard ─Shared┘      (the job: runs the body, exits the task, reaps if detached)
//! ```
//!
//! One `Tracker` per spawned task holds what its handles share. A task is managed from
//! its fork with no signal hook (`Task::fork_managed`: a fatal signal is made pending
//! for its body to read); an async body that parks installs a hook of its own, which
//! holds the tracker until the task exits (the task list drops a hook at exit, and the
//! job, which exits the task, holds the tracker anyway until then). `rt` is the spawning thread's
//! share of the runtime (one per thread, made on its first spawn), so that spawning
//! writes no count that other worker threads write too. `flags` (atomic) records
//! "detached" and "exited", and whose an awaiting `Child`'s waker cell is; the side that
//! sets the second of "detached" and "exited" reaps. One leaf mutex: `kill`'s waker
//! slot (a parked async body's waker, for `SIGKILL`); no other lock is taken under it,
//! and wakers are woken and dropped after it is released. `status` is set once, at
//! reap (by any handle that may ask again: the `.await` that consumes the `Child` does
//! not record it, a later `child().try_wait()` reads it from the reaped task). The handles count the tracker with a `Shared` (an `Arc` without a weak count,
//! its first handles made at once). See the crate's
//! `IMPLEMENTATION.md` for the protocol and the alternatives rejected.
//!
//! ## Cargo features
//!
//! - `tokio`: `tokio::TokioExecutor`, and `spawn_async` falls back to the caller's
//!   tokio runtime.
//! - `smol`: `smol::SmolExecutor`.
//! - `lockstat`: count global lock acquisitions ([`Runtime::lock_stats`]).
#![deny(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod async_body;
mod block_cache;
mod child;
mod child_set;
mod coroutine;
mod cx;
mod executor;
mod kill;
mod latch;
pub mod ps;
mod runtime;
mod shared;
#[cfg(feature = "smol")]
#[cfg_attr(docsrs, doc(cfg(feature = "smol")))]
pub mod smol;
mod spawn;
mod status;
mod sync;
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub mod tokio;
mod users;

pub use child::{Child, ChildFuture};
pub use child_set::{ChildSet, JoinNext};
pub use coroutine::{CoroutineHooks, CurrentSlot, register_coroutine_hooks};
pub use cx::{TaskCx, current};
pub use executor::{AsyncJob, Executor, ThreadExecutor};
pub use ps::ProcInfo;
pub use runtime::{Runtime, RuntimeBuilder};
pub use spawn::Spawn;

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

/// The facade's lock-free handshake, exposed for the loom model only.
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_model {
    pub use crate::child_set::{MemberWaker, Ready};
    pub use crate::kill::KillFlag;
    pub use crate::latch::ExitLatch;
    pub use crate::shared::{Shared, Unshared};
    pub use crate::status::StatusSlot;
    pub use crate::users::UserList;
}
