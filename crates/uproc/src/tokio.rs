//! The tokio executor and async task bodies (feature `tokio`).
//!
//! Two ways to use tokio:
//!
//! - [`TokioExecutor`] as the runtime's [`Executor`]: synchronous bodies run on tokio's
//!   blocking pool (`spawn_blocking`), like the thread executor but with pooled threads.
//! - [`Runtime::spawn_async`]: the body is an `async` block that runs as a tokio task
//!   (cheap: 10,000 tasks are 10,000 futures, not threads). On `SIGKILL` the body's
//!   future is dropped at its next await point and the task ends killed by `SIGKILL`;
//!   other signals are seen through [`TaskCx::signal_pending`]. It runs on the
//!   executor's tokio runtime when the executor is a [`TokioExecutor`], else on the
//!   tokio runtime of the calling thread (when the executor runs no futures itself).
//!
//! ```
//! use uproc::{Runtime, Spawn};
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let rt = Runtime::builder().build()?;       // thread executor: no futures of its own
//! let child = rt.spawn_async(Spawn::new(), |cx| async move {
//!     tokio::task::yield_now().await;
//!     cx.pid()
//! })?;                                          // so it runs on this tokio runtime
//! let pid = child.pid();
//! assert_eq!(child.await?.exited(), Some(pid));
//! # Ok::<(), uproc::Errno>(())
//! # }).unwrap();
//! ```

use crate::child::Child;
use crate::cx::TaskCx;
use crate::executor::{AsyncJob, Executor};
use crate::runtime::Runtime;
use crate::spawn::{Spawn, launch};
use std::future::Future;
use tokio::runtime::Handle;
use uproc_abi::Errno;

/// Runs jobs (synchronous bodies) on a tokio runtime's blocking pool.
///
/// Setting it as the runtime's executor also makes its runtime the one
/// [`Runtime::spawn_async`] spawns on.
///
/// ```
/// use uproc::{Runtime, Spawn, tokio::TokioExecutor};
/// let tokio_rt = tokio::runtime::Runtime::new().unwrap();
/// let rt = Runtime::builder()
///     .executor(TokioExecutor::new(tokio_rt.handle().clone()))
///     .build()?;
/// let child = rt.spawn(Spawn::new(), |_| 3)?;
/// assert_eq!(child.wait()?.exited(), Some(3));
/// # Ok::<(), uproc::Errno>(())
/// ```
#[derive(Clone, Debug)]
pub struct TokioExecutor {
    handle: Handle,
}

impl TokioExecutor {
    /// An executor on the runtime behind `handle`.
    pub fn new(handle: Handle) -> TokioExecutor {
        TokioExecutor { handle }
    }

    /// An executor on the tokio runtime this thread is in, if any.
    pub fn try_current() -> Option<TokioExecutor> {
        Handle::try_current().ok().map(TokioExecutor::new)
    }

    /// The tokio runtime handle.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }
}

impl Executor for TokioExecutor {
    fn execute(&self, job: Box<dyn FnOnce() + Send>) {
        drop(self.handle.spawn_blocking(job));
    }

    fn runs_futures(&self) -> bool {
        true
    }

    fn execute_async(&self, job: AsyncJob) {
        drop(self.handle.spawn(job));
    }
}

/// The tokio runtime an async body is spawned on.
pub(crate) enum CallerRuntime<'a> {
    /// The executor's runtime, or the one the calling thread is in (a handle clone).
    Handle(&'a Handle),
    /// The runtime of the tokio task that calls `spawn_async`: spawned through
    /// `tokio::spawn`, which reaches the runtime through the thread's context, with no
    /// handle clone (two atomic read-modify-writes on a line every worker shares).
    CurrentTask,
    /// Out of any task but inside a runtime's context (`block_on`, a runtime's own
    /// threads): a handle of it.
    Entered(Handle),
}

impl CallerRuntime<'static> {
    /// The runtime of the calling thread, if any. A tokio task is only ever polled by
    /// its runtime, which has entered its context on the polling thread, so inside one
    /// (`tokio::task::try_id` is `Some`) `tokio::spawn` finds that runtime.
    pub(crate) fn find() -> Option<CallerRuntime<'static>> {
        if ::tokio::task::try_id().is_some() {
            return Some(CallerRuntime::CurrentTask);
        }
        Handle::try_current().ok().map(CallerRuntime::Entered)
    }
}

/// `spawn_async` on a tokio runtime: the body's future lives in place in the tokio
/// task (no box), which is why tokio gets this path rather than
/// [`Executor::execute_async`]. Inlined into `spawn_async`, as `launch` is into it:
/// each call would copy the 112-byte `Spawn` on its way.
#[inline(always)]
pub(crate) fn spawn_in_place<F, Fut>(
    on: CallerRuntime<'_>,
    rt: &Runtime,
    s: Spawn,
    body: F,
) -> Result<Child, Errno>
where
    F: FnOnce(TaskCx) -> Fut + Send + 'static,
    Fut: Future<Output = i32> + Send + 'static,
{
    let (child, job) = launch(rt, s)?.into_async_job(body);
    // The job's guard ends the task as killed if tokio drops this task unfinished
    // (runtime shutdown).
    drop(match on {
        CallerRuntime::Handle(handle) => handle.spawn(job),
        CallerRuntime::CurrentTask => ::tokio::spawn(job),
        CallerRuntime::Entered(handle) => handle.spawn(job),
    });
    Ok(child)
}
