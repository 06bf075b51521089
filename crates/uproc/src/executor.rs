//! Executors: where task bodies run.
//!
//! uproc does not schedule anything itself. [`Runtime::spawn`](crate::Runtime::spawn)
//! forks the task (the process-model part: pid, parent, cgroup charge, pidfd) and then
//! hands one job to an [`Executor`]: "run this body, then exit the task with what it
//! returned". The default is [`ThreadExecutor`], one OS thread per task (the 1:1 model
//! Linux itself uses); the `tokio` feature adds
//! [`TokioExecutor`](crate::tokio::TokioExecutor). Any other green-thread runtime plugs
//! in by implementing the trait.

use std::fmt;

/// Something that runs jobs: one job per spawned task.
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
