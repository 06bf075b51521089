//! The tokio executor and async task bodies (feature `tokio`).
//!
//! Two ways to use tokio:
//!
//! - [`TokioExecutor`] as the runtime's [`Executor`]: synchronous bodies run on tokio's
//!   blocking pool (`spawn_blocking`), like the thread executor but with pooled threads.
//! - [`Runtime::spawn_async`]: the body is an `async` block that runs as a tokio task
//!   (cheap: 10,000 tasks are 10,000 futures, not threads). On `SIGKILL` the body's
//!   future is dropped at its next await point and the task ends killed by `SIGKILL`;
//!   other signals are seen through [`TaskCx::signal_pending`].

use crate::cx::{self, TaskCx};
use crate::executor::Executor;
use crate::runtime::Runtime;
use crate::spawn::{Child, KillFlag, Outcome, Spawn, launch};
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
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
}

/// An async body under uproc's rules: `current()` set while polled, dropped on SIGKILL,
/// panics contained.
struct Managed<Fut> {
    fut: Option<Pin<Box<Fut>>>,
    cx: TaskCx,
    kill: Arc<KillFlag>,
}

impl<Fut: Future<Output = i32>> Future for Managed<Fut> {
    type Output = Outcome;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome> {
        let this = &mut *self;
        if this.kill.register(cx.waker()) {
            // SIGKILL: drop the body here, at the await point it is parked on.
            this.fut = None;
            return Poll::Ready(Outcome::Killed);
        }
        let Some(fut) = this.fut.as_mut() else {
            return Poll::Ready(Outcome::Killed);
        };
        let _enter = cx::enter(&this.cx);
        let r = catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx)));
        match r {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(code)) => {
                this.fut = None;
                Poll::Ready(Outcome::Code(code))
            }
            Err(p) => {
                this.fut = None;
                Poll::Ready(Outcome::from_unwind(this.cx.task(), p))
            }
        }
    }
}

impl Runtime {
    /// Runs the async `body` as a new task, as a tokio task on the executor's runtime
    /// ([`TokioExecutor`]) or else the tokio runtime of the calling thread.
    ///
    /// Same life cycle as [`spawn`](Runtime::spawn): fork, run, exit with the returned
    /// code; a panic ends the task killed by `SIGABRT`. On `SIGKILL` the future is
    /// dropped at its next await point and the task ends killed by `SIGKILL`. `EINVAL`
    /// (checked before forking) when there is no tokio runtime to run on.
    ///
    /// ```
    /// use uproc::{Runtime, Spawn};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let rt = Runtime::builder().build()?;
    /// let child = rt.spawn_async(Spawn::new(), |cx| async move {
    ///     tokio::task::yield_now().await;
    ///     cx.pid()
    /// })?;
    /// let pid = child.pid();
    /// assert_eq!(child.await?.exited(), Some(pid));
    /// # Ok::<(), uproc::Errno>(())
    /// # }).unwrap();
    /// ```
    pub fn spawn_async<F, Fut>(&self, s: Spawn, body: F) -> Result<Child, Errno>
    where
        F: FnOnce(TaskCx) -> Fut + Send + 'static,
        Fut: Future<Output = i32> + Send + 'static,
    {
        let handle = self.tokio_handle().ok_or(Errno::EINVAL)?;
        let launched = launch(self, s)?;
        let (child, tcx, kill, complete) = launched.into_parts();
        let task = tcx.task().clone();
        drop(handle.spawn(async move {
            let alive = matches!(
                task.state(),
                uproc_tasklist::TaskState::Running | uproc_tasklist::TaskState::Stopped
            );
            let outcome = if alive {
                // Build the future with `current()` set, in case `body` reads it eagerly.
                let fut = {
                    let _enter = cx::enter(&tcx);
                    catch_unwind(AssertUnwindSafe(|| body(tcx.clone())))
                };
                match fut {
                    Ok(fut) => {
                        Managed {
                            fut: Some(Box::pin(fut)),
                            cx: tcx,
                            kill,
                        }
                        .await
                    }
                    Err(p) => Outcome::from_unwind(&task, p),
                }
            } else {
                Outcome::Killed
            };
            complete(outcome);
        }));
        Ok(child)
    }
}
