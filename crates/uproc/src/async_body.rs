//! Async bodies: [`Runtime::spawn_async`] on any executor that runs futures.
//!
//! An async body is a future; its *job* is a future too: it builds the body's future
//! (with [`current()`](crate::current) set, in case the body reads it eagerly), polls it
//! under uproc's rules (below), exits the task with the outcome and reaps it if its
//! `Child` is gone. Where that job runs:
//!
//! - on a tokio runtime (feature `tokio`): the executor's ([`TokioExecutor`]) or, when
//!   the executor runs no futures, the caller's; the body's future lives in place in
//!   the tokio task, with no box;
//! - on any other executor whose [`Executor::runs_futures`] is true (the `smol`
//!   feature's `SmolExecutor`, your own): boxed as an [`AsyncJob`] and handed to
//!   [`Executor::execute_async`].
//!
//! The rules, identical on every executor: `current()` is set while the body's future
//! is polled (on whichever thread polls it; the job lends its own context to the
//! thread's slot for the poll, see `cx::lend`); on `SIGKILL` the future is dropped in
//! place (`Pin::set`) at its next poll, which the signal hook's wake brings about, and
//! the task ends killed by `SIGKILL`; a panic ends it killed by `SIGABRT`.
//!
//! [`TokioExecutor`]: crate::tokio::TokioExecutor
//! [`Executor::runs_futures`]: crate::Executor::runs_futures
//! [`Executor::execute_async`]: crate::Executor::execute_async
//! [`AsyncJob`]: crate::AsyncJob

use crate::child::{Child, Tracker};
use crate::cx::{self, TaskCx};
use crate::runtime::Runtime;
use crate::spawn::{JobGuard, Launched, Outcome, Spawn, contained, launch, may_start, task_span};
use std::any::Any;
use std::future::{Future, poll_fn};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::{Pin, pin};
use std::task::{Context, Poll, Waker};
use uproc_abi::Errno;

/// What the job keeps between polls of the body, besides the body itself. One struct
/// so that the polling closure captures two references, not four: the job is moved
/// several times on its way into a tokio task, and each move copies it.
struct Managed<'a> {
    /// The job's guard: its context is lent to the thread's slot around each poll
    /// ([`cx::lend`]), so that `current()` costs no count on the tracker.
    guard: &'a mut JobGuard,
    /// The `uproc::task` span, boxed only when a subscriber wants it: a disabled span
    /// is still a 40-byte value every move would copy.
    span: Option<Box<tracing::Span>>,
    /// The waker the kill flag knows, once the body has parked.
    registered: Option<Waker>,
}

/// How one poll of the body ended, before the context is back with the job.
enum Polled {
    Pending,
    Done(i32),
    Unwound(Box<dyn Any + Send>),
}

impl Managed<'_> {
    /// Polls an async body under uproc's rules: `current()` set while it is polled,
    /// dropped (in place: `Pin::set`) at its next poll after `SIGKILL`, panics
    /// contained.
    ///
    /// The kill flag learns the task's waker only when the body returns `Pending` (a
    /// body that completes in its first poll never touches the waker slot), and only
    /// once (tokio gives a task one waker for its life; a different one is registered
    /// again). So a poll costs one atomic load on top of the body's own poll, plus one
    /// waker comparison when the body parks: no lock, no allocation, no count.
    ///
    /// A kill that lands before the waker is registered is caught by the load after
    /// the registration: `raise` sets the flag before it takes the slot's lock, so
    /// either that load sees the flag or `raise` finds the waker (the pairing of
    /// [`KillFlag::register`]).
    ///
    /// [`KillFlag::register`]: crate::kill::KillFlag::register
    fn poll<Fut: Future<Output = i32>>(
        &mut self,
        mut fut: Pin<&mut Option<Fut>>,
        cx: &mut Context<'_>,
    ) -> Poll<Outcome> {
        if self.guard.cx().tracker().kill.is_killed() {
            // SIGKILL: drop the body here, at the await point it is parked on (a
            // panic of that drop changes nothing: the task is dead of SIGKILL).
            drop_body(fut);
            return Poll::Ready(Outcome::Killed);
        }
        let Some(body) = fut.as_mut().as_pin_mut() else {
            return Poll::Ready(Outcome::Killed);
        };
        let polled = {
            let _span = self.span.as_deref().map(tracing::Span::enter);
            let _lent = cx::lend(self.guard.home());
            match catch_unwind(AssertUnwindSafe(|| body.poll(cx))) {
                Ok(Poll::Pending) => Polled::Pending,
                Ok(Poll::Ready(code)) => Polled::Done(code),
                Err(p) => Polled::Unwound(p),
            }
        };
        let tcx = self.guard.cx();
        let outcome = match polled {
            Polled::Done(code) => Outcome::Code(code),
            Polled::Unwound(p) => Outcome::from_unwind(tcx.task(), p),
            Polled::Pending => {
                if !self
                    .registered
                    .as_ref()
                    .is_some_and(|w| w.will_wake(cx.waker()))
                {
                    if self.registered.is_none() {
                        // The first park: a hook that can wake this body on SIGKILL.
                        Tracker::hook_for_parked_body(tcx.tracker());
                    }
                    let kill = &tcx.tracker().kill;
                    kill.register(cx.waker());
                    self.registered = Some(cx.waker().clone());
                    if kill.is_killed() {
                        // Killed while the body ran, before the hook could find this
                        // waker: come back at once to drop it.
                        cx.waker().wake_by_ref();
                    }
                }
                return Poll::Pending;
            }
        };
        // The body's destructors are part of the body, as the locals of a sync body
        // are: a panic there ends a task that returned as killed by SIGABRT.
        let outcome = match (drop_body(fut), outcome) {
            (true, Outcome::Code(_)) => Outcome::Panicked,
            (_, outcome) => outcome,
        };
        Poll::Ready(outcome)
    }
}

/// Drops the body's future in place, containing a panic of its `Drop` (true when one
/// happened). The slot is `None` afterwards either way: an assignment whose drop of
/// the old value unwinds still writes the new one.
fn drop_body<Fut>(mut fut: Pin<&mut Option<Fut>>) -> bool {
    contained(|| fut.set(None))
}

/// Builds the body's future (with `current()` set, in case `body` reads it eagerly)
/// and runs it to its outcome. The future lives in place in the tokio task: no box.
async fn run_body<F, Fut>(guard: &mut JobGuard, body: F) -> Outcome
where
    F: FnOnce(TaskCx) -> Fut,
    Fut: Future<Output = i32>,
{
    let tcx = guard.cx();
    if !may_start(tcx.task()) {
        return Outcome::NotRun;
    }
    let span = Some(task_span(tcx.task()))
        .filter(|s| !s.is_disabled())
        .map(Box::new);
    // The body's own handle, from the count prepaid at the split (no increment; not
    // carried in the job future either, whose every move into its tokio task would
    // copy it).
    let arg = Tracker::take_body_cx(tcx.tracker()).unwrap_or_else(|| tcx.clone());
    let fut = {
        let _span = span.as_deref().map(tracing::Span::enter);
        let _lent = cx::lend(guard.home());
        catch_unwind(AssertUnwindSafe(|| body(arg)))
    };
    match fut {
        Ok(fut) => {
            let mut fut = pin!(Some(fut));
            let mut managed = Managed {
                guard,
                span,
                registered: None,
            };
            poll_fn(|cx| managed.poll(fut.as_mut(), cx)).await
        }
        Err(p) => Outcome::from_unwind(guard.cx().task(), p),
    }
}

impl Launched {
    /// The async runner: the future that runs `body` as this task and completes the
    /// job. The job's guard ends the task as killed if the future is dropped unfinished
    /// (an executor shut down).
    pub(crate) fn into_async_job<F, Fut>(
        self,
        body: F,
    ) -> (Child, impl Future<Output = ()> + Send + 'static)
    where
        F: FnOnce(TaskCx) -> Fut + Send + 'static,
        Fut: Future<Output = i32> + Send + 'static,
    {
        let (child, mut guard) = self.split_async();
        let job = async move {
            let outcome = run_body(&mut guard, body).await;
            guard.complete(outcome);
        };
        (child, job)
    }
}

impl Runtime {
    /// Runs the async `body` as a new task, on the executor if it runs futures
    /// ([`TokioExecutor`](crate::tokio::TokioExecutor), `SmolExecutor`, your own
    /// [`Executor::execute_async`](crate::Executor::execute_async)), else (feature
    /// `tokio`) on the tokio runtime of the calling thread.
    ///
    /// Same life cycle as [`spawn`](Runtime::spawn): fork, run, exit with the returned
    /// code; a panic ends the task killed by `SIGABRT`. On `SIGKILL` the future is
    /// dropped at its next await point and the task ends killed by `SIGKILL`. `EINVAL`
    /// (checked before forking: nothing is created) when there is nothing to run a
    /// future on.
    ///
    /// ```
    /// use std::future::Future;
    /// use std::pin::Pin;
    /// use std::sync::{Arc, Mutex};
    /// use uproc::{AsyncJob, Executor, Runtime, Spawn};
    ///
    /// /// A toy executor that keeps async jobs for the caller to run.
    /// #[derive(Clone, Default)]
    /// struct Queue(Arc<Mutex<Vec<AsyncJob>>>);
    /// impl Executor for Queue {
    ///     fn execute(&self, job: Box<dyn FnOnce() + Send>) { job() }
    ///     fn runs_futures(&self) -> bool { true }
    ///     fn execute_async(&self, job: AsyncJob) { self.0.lock().unwrap().push(job) }
    /// }
    ///
    /// let queue = Queue::default();
    /// let rt = Runtime::builder().executor(queue.clone()).build()?;
    /// let child = rt.spawn_async(Spawn::new(), |cx| async move { cx.pid() })?;
    /// let pid = child.pid();
    /// // Run the queued job to its end (it never waits, so one poll does).
    /// let mut job = queue.0.lock().unwrap().pop().unwrap();
    /// let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    /// assert!(job.as_mut().poll(&mut cx).is_ready());
    /// assert_eq!(child.wait()?.exited(), Some(pid));
    ///
    /// // The default executor (threads) runs no futures, and this thread is in no
    /// // tokio runtime.
    /// let threads = Runtime::new()?;
    /// assert_eq!(threads.spawn_async(Spawn::new(), |_| async { 0 }).unwrap_err(), uproc::Errno::EINVAL);
    /// assert_eq!(threads.ps().len(), 1); // nothing was forked
    /// # Ok::<(), uproc::Errno>(())
    /// ```
    pub fn spawn_async<F, Fut>(&self, s: Spawn, body: F) -> Result<Child, Errno>
    where
        F: FnOnce(TaskCx) -> Fut + Send + 'static,
        Fut: Future<Output = i32> + Send + 'static,
    {
        #[cfg(feature = "tokio")]
        if let Some(handle) = self.executor_tokio_handle() {
            return crate::tokio::spawn_in_place(
                crate::tokio::CallerRuntime::Handle(handle),
                self,
                s,
                body,
            );
        }
        let executor = self.executor();
        if executor.runs_futures() {
            let (child, job) = launch(self, s)?.into_async_job(body);
            executor.execute_async(Box::pin(job));
            return Ok(child);
        }
        #[cfg(feature = "tokio")]
        if let Some(on) = crate::tokio::CallerRuntime::find() {
            return crate::tokio::spawn_in_place(on, self, s, body);
        }
        Err(Errno::EINVAL)
    }
}
