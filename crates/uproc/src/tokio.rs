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

use crate::child::Child;
use crate::cx::{self, TaskCx};
use crate::executor::Executor;
use crate::runtime::Runtime;
use crate::spawn::{Outcome, Spawn, launch, may_start, task_span};
use std::future::{Future, poll_fn};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::{Pin, pin};
use std::task::{Context, Poll, Waker};
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

/// Polls an async body under uproc's rules: `current()` set while it is polled, dropped
/// (in place: `Pin::set`) at its next poll after `SIGKILL`, panics contained.
///
/// The kill flag learns the task's waker once (tokio gives a task one waker for its
/// life; a different one is registered again), so a poll costs one waker comparison
/// and one atomic load on top of the body's own poll: no lock, no allocation.
fn poll_managed<Fut: Future<Output = i32>>(
    tcx: &TaskCx,
    span: &tracing::Span,
    mut fut: Pin<&mut Option<Fut>>,
    registered: &mut Option<Waker>,
    cx: &mut Context<'_>,
) -> Poll<Outcome> {
    let kill = &tcx.tracker().kill;
    if !registered.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
        kill.register(cx.waker());
        *registered = Some(cx.waker().clone());
    }
    if kill.is_killed() {
        // SIGKILL: drop the body here, at the await point it is parked on.
        fut.set(None);
        return Poll::Ready(Outcome::Killed);
    }
    let Some(body) = fut.as_mut().as_pin_mut() else {
        return Poll::Ready(Outcome::Killed);
    };
    let _span = span.enter();
    let _enter = cx::enter(tcx);
    let outcome = match catch_unwind(AssertUnwindSafe(|| body.poll(cx))) {
        Ok(Poll::Pending) => return Poll::Pending,
        Ok(Poll::Ready(code)) => Outcome::Code(code),
        Err(p) => Outcome::from_unwind(tcx.task(), p),
    };
    fut.set(None);
    Poll::Ready(outcome)
}

/// Builds the body's future (with `current()` set, in case `body` reads it eagerly)
/// and runs it to its outcome. The future lives in place in the tokio task: no box.
async fn run_body<F, Fut>(tcx: &TaskCx, body: F) -> Outcome
where
    F: FnOnce(TaskCx) -> Fut,
    Fut: Future<Output = i32>,
{
    if !may_start(tcx.task()) {
        return Outcome::NotRun;
    }
    let span = task_span(tcx.task());
    let fut = {
        let _span = span.enter();
        let _enter = cx::enter(tcx);
        catch_unwind(AssertUnwindSafe(|| body(tcx.clone())))
    };
    match fut {
        Ok(fut) => {
            let mut fut = pin!(Some(fut));
            let mut registered = None;
            poll_fn(|cx| poll_managed(tcx, &span, fut.as_mut(), &mut registered, cx)).await
        }
        Err(p) => Outcome::from_unwind(tcx.task(), p),
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
        let (child, guard) = launch(self, s)?.split();
        // The guard ends the task as killed if tokio drops this task unfinished
        // (runtime shutdown).
        drop(handle.spawn(async move {
            let outcome = run_body(guard.cx(), body).await;
            guard.complete(outcome);
        }));
        Ok(child)
    }
}
