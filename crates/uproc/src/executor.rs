//! Executors: where task bodies run.
//!
//! uproc does not schedule anything itself. [`Runtime::spawn`](crate::Runtime::spawn)
//! forks the task (the process-model part: pid, parent, cgroup charge, pidfd) and then
//! hands one job to an [`Executor`]: "run this body, then exit the task with what it
//! returned". The default is [`ThreadExecutor`], one OS thread per task (the 1:1 model
//! Linux itself uses); the `tokio` feature adds
//! [`TokioExecutor`](crate::tokio::TokioExecutor), the `smol` feature `SmolExecutor`,
//! and the `uproc-may` crate an executor of `may` stackful coroutines. Any other
//! green-thread runtime plugs in by implementing the trait: [`execute`](Executor::execute)
//! alone for a runtime whose units own their stack and may block (threads, coroutines),
//! plus [`execute_async`](Executor::execute_async) for one that runs futures, plus
//! [`coroutine_hooks`](Executor::coroutine_hooks) for one whose units share OS threads
//! and yield in the middle of a body.

use crate::coroutine::CoroutineHooks;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// The job of an async body ([`Runtime::spawn_async`](crate::Runtime::spawn_async)):
/// a future that polls the body, exits the task and reaps it if detached. Dropping it
/// unfinished ends the task as killed by `SIGKILL`.
pub type AsyncJob = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Something that runs jobs: one job per spawned task.
///
/// Three capabilities, the first required:
///
/// - **synchronous bodies** ([`execute`](Self::execute)): the job is a closure that
///   runs the body to its end; it may block (`Child::wait`, a lock), so it needs a
///   thread or a stackful coroutine of its own.
/// - **async bodies** ([`runs_futures`](Self::runs_futures) and
///   [`execute_async`](Self::execute_async)): the job is a future the executor spawns
///   as one of its tasks. Without them `spawn_async` fails with `EINVAL` (or, with the
///   `tokio` feature, falls back to the caller's tokio runtime).
/// - **stackful coroutines** ([`coroutine_hooks`](Self::coroutine_hooks)): an executor
///   whose units share OS threads and can yield in the middle of a body (many
///   coroutines per worker thread, migrating between workers) must say how to find the
///   running coroutine, store its current task and park it. Then
///   [`current()`](crate::current) is per coroutine (not per thread, which would let a
///   coroutine see the task of another that ran on its thread before it, or lose its
///   own after moving to another worker), and `Child::wait` /
///   `ChildSet::wait_next` from a coroutine park that coroutine instead of blocking
///   its worker thread (which would stall every coroutine queued on it). An executor
///   of threads or of futures leaves it `None`: a thread-local set around the body
///   (or around each poll) is right for them, and their waits block nobody else.
///
/// A job is self-contained: it runs the body, reports the exit to the task list, and
/// reaps the task if its [`Child`](crate::Child) handle was dropped. An executor may run
/// it on any thread, at any later time. If an executor drops a job without running it
/// (shutdown, resource exhaustion), the task is ended as killed by `SIGKILL`, so
/// nothing leaks either way.
///
/// ```
/// use uproc::{Executor, Runtime, Spawn};
///
/// /// Runs every body on the caller's thread, at once (a toy: `spawn` blocks).
/// struct Inline;
/// impl Executor for Inline {
///     fn execute(&self, job: Box<dyn FnOnce() + Send>) {
///         job()
///     }
/// }
///
/// let rt = Runtime::builder().executor(Inline).build()?;
/// let child = rt.spawn(Spawn::new(), |_| 5)?;
/// assert_eq!(child.wait()?.exited(), Some(5));
/// # Ok::<(), uproc::Errno>(())
/// ```
pub trait Executor: Send + Sync + 'static {
    /// Runs `job` (now or later, on any thread). Must not run it more than once, which
    /// `FnOnce` already guarantees.
    fn execute(&self, job: Box<dyn FnOnce() + Send>);

    /// Whether [`execute_async`](Self::execute_async) runs futures (default `false`).
    /// `spawn_async` asks before forking, so that an executor without futures makes it
    /// fail with `EINVAL` and create nothing.
    fn runs_futures(&self) -> bool {
        false
    }

    /// Spawns `job` as a task of the executor's async runtime, to be polled to its end
    /// (from any thread). Called only when [`runs_futures`](Self::runs_futures) is
    /// true. The default drops the job, which ends the task as killed.
    fn execute_async(&self, job: AsyncJob) {
        drop(job);
    }

    /// The executor's stackful-coroutine hooks, if its units share OS threads (see the
    /// trait docs; default `None`). Building a runtime registers them process-wide
    /// ([`register_coroutine_hooks`](crate::register_coroutine_hooks)).
    fn coroutine_hooks(&self) -> Option<&'static dyn CoroutineHooks> {
        None
    }
}

/// The default executor: one `std::thread` per task (the 1:1 model).
///
/// Each body gets its own OS thread, so a blocking body blocks nobody else. Thread
/// creation failure drops the job, which ends the task as killed by `SIGKILL` (and logs
/// a `tracing` error).
#[derive(Clone, Debug, Default)]
pub struct ThreadExecutor {
    stack_size: Option<usize>,
}

impl ThreadExecutor {
    /// A thread-per-task executor with the platform's default stack size.
    pub fn new() -> ThreadExecutor {
        ThreadExecutor::default()
    }

    /// Sets the stack size of each task's thread, in bytes.
    pub fn stack_size(mut self, bytes: usize) -> ThreadExecutor {
        self.stack_size = Some(bytes);
        self
    }
}

impl Executor for ThreadExecutor {
    fn execute(&self, job: Box<dyn FnOnce() + Send>) {
        let mut b = std::thread::Builder::new();
        if let Some(sz) = self.stack_size {
            b = b.stack_size(sz);
        }
        if let Err(e) = b.spawn(job) {
            // The closure (and with it the job's exit guard) is dropped by `spawn`'s
            // failure path, which ends the task as killed.
            tracing::error!(target: "uproc", error = %e, "ThreadExecutor: thread creation failed; task killed");
        }
    }
}

/// A type-erased executor with a `Debug` that names nothing secret.
pub(crate) struct DynExecutor(pub(crate) Box<dyn Executor>);

impl fmt::Debug for DynExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("dyn Executor")
    }
}
