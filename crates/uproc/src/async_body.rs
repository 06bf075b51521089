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
//! place (its slot set to `None`) at its next poll, which the signal hook's wake
//! brings about, under the same lend (its locals' destructors see `current()`, as a
//! sync body's do), and the task ends killed by `SIGKILL`; an executor that drops the
//! job unfinished (shutting down) drops the future with the job, outside the task's
//! context, and the task ends killed by `SIGKILL`; a panic ends it killed by
//! `SIGABRT`.
//!
//! [`TokioExecutor`]: crate::tokio::TokioExecutor
//! [`Executor::runs_futures`]: crate::Executor::runs_futures
//! [`Executor::execute_async`]: crate::Executor::execute_async
//! [`AsyncJob`]: crate::AsyncJob

use crate::child::{Child, Tracker};
use crate::cx::{self, TaskCx};
use crate::runtime::Runtime;
use crate::spawn::{JobGuard, Launched, Outcome, Spawn, contained, launch, may_start, task_span};
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use uproc_abi::Errno;

/// The job of an async body: builds the body's future (with `current()` set, in case
/// the body reads it eagerly), polls it under uproc's rules and completes the task.
///
/// One hand-written future, not an `async` block around an `async fn` around a
/// `poll_fn`: three state machines, each with its own state word, prologue and moves
/// on every poll. The first poll builds the body and polls it under one
/// [`cx::lend`] (not one for the build and one for the poll). The body's future lives
/// in place in the job (and so in the tokio task): no box.
///
/// Field order is drop order. A job dropped unfinished (an executor shut down) ends
/// its task as killed (the guard's drop): once the body runs, its future goes first,
/// so its destructors run while the task is alive, as a sync body's locals do; a job
/// never polled ends the task and then drops the closure, the order of the `async`
/// block this replaces (its captures dropped in capture order, the guard first).
pub(crate) struct Job<F, Fut> {
    /// The body's future once built, until it completes or is dropped on `SIGKILL`.
    /// Structurally pinned: it never moves (it leaves only by being dropped in place).
    /// The other fields are never pinned.
    fut: Option<Fut>,
    /// The `uproc::task` span, boxed only when a subscriber wants it: a disabled span
    /// is still a 40-byte value every move of the job would copy.
    span: Option<Box<tracing::Span>>,
    /// The waker the kill flag knows, once the body has parked.
    registered: Option<Waker>,
    /// Its context is lent to the thread's slot around each poll ([`cx::lend`]), so
    /// that `current()` costs no count on the tracker.
    guard: JobGuard,
    /// The closure that builds the body's future, until the first poll.
    body: Option<F>,
}

impl<F, Fut> Job<F, Fut>
where
    F: FnOnce(TaskCx) -> Fut,
    Fut: Future<Output = i32>,
{
    /// Runs the body under uproc's rules: `current()` set while it is built and
    /// polled, dropped (in place) at its next poll after `SIGKILL`, panics contained.
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
    #[inline]
    fn run(&mut self, cx: &mut Context<'_>) -> Poll<Outcome> {
        // At the first poll: the closure, and the body's own handle, from the count
        // prepaid at the split (no increment; not carried in the job either, whose every
        // move into its tokio task would copy it), taken before the lend, which moves
        // the guard's context out.
        let mut start = None;
        if self.fut.is_some() {
            if self.guard.cx().tracker().kill.is_killed() {
                // SIGKILL: drop the body here, at the await point it is parked on (a
                // panic of that drop changes nothing: the task is dead of SIGKILL).
                self.drop_parked_body();
                return Poll::Ready(Outcome::Killed);
            }
        } else if let Some(body) = self.body.take() {
            let tcx = self.guard.cx();
            if !may_start(tcx.task()) {
                // The unrun closure is dropped before the task exits.
                drop(body);
                return Poll::Ready(Outcome::NotRun);
            }
            // Stored only when enabled: the slot is empty, and assigning it would call
            // the drop of its old value.
            let span = task_span(tcx.task());
            if !span.is_disabled() {
                self.span = Some(Box::new(span));
            }
            let arg = Tracker::take_body_cx(tcx.tracker()).unwrap_or_else(|| tcx.clone());
            start = Some((body, arg));
        } else {
            return Poll::Ready(Outcome::Killed);
        }
        let polled = {
            let _span = self.span.as_deref().map(tracing::Span::enter);
            let _lent = cx::lend(self.guard.home());
            let slot = &mut self.fut;
            catch_unwind(AssertUnwindSafe(|| {
                let fut = match start {
                    Some((body, arg)) => slot.insert(body(arg)),
                    None => slot.as_mut().expect("a running body's future"),
                };
                // SAFETY: `fut` lives in a pinned job (`Job::poll`) and is pinned
                // structurally: it is never moved out of its slot, which it leaves only
                // by being dropped in place (`drop_body`, or the job's drop).
                #[allow(unsafe_code)]
                let fut = unsafe { Pin::new_unchecked(fut) };
                fut.poll(cx)
            }))
        };
        let outcome = match polled {
            Ok(Poll::Pending) => {
                self.park(cx);
                return Poll::Pending;
            }
            Ok(Poll::Ready(code)) => Outcome::Code(code),
            Err(p) => Outcome::from_unwind(self.guard.cx().task(), p),
        };
        // The body's destructors are part of the body, as the locals of a sync body
        // are: a panic there ends a task that returned as killed by SIGABRT.
        Poll::Ready(match (self.drop_body(), outcome) {
            (true, Outcome::Code(_)) => Outcome::Panicked,
            (_, outcome) => outcome,
        })
    }

    /// The body returned `Pending`: make sure `SIGKILL` can wake it.
    #[inline]
    fn park(&mut self, cx: &Context<'_>) {
        if self
            .registered
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            return;
        }
        let tcx = self.guard.cx();
        if self.registered.is_none() {
            // The first park: a hook that can wake this body on SIGKILL.
            Tracker::hook_for_parked_body(tcx.tracker());
        }
        let kill = &tcx.tracker().kill;
        kill.register(cx.waker());
        self.registered = Some(cx.waker().clone());
        if kill.is_killed() {
            // Killed while the body ran, before the hook could find this waker: come
            // back at once to drop it.
            cx.waker().wake_by_ref();
        }
    }

    /// Drops the body's future in place, containing a panic of its `Drop` (true when
    /// one happened). The slot is `None` afterwards either way: an assignment whose
    /// drop of the old value unwinds still writes the new one.
    fn drop_body(&mut self) -> bool {
        drop_in_slot(&mut self.fut)
    }

    /// [`drop_body`](Self::drop_body) of a body parked at an await point and killed,
    /// under its task's context and span as its polls were: its locals' destructors see
    /// `current()` and log in the task's span, as a sync body's locals do when they
    /// drop. (A body that completed has no locals left to drop: that path lends
    /// nothing. A job an executor drops unfinished drops its body with its other fields,
    /// outside the context: a `Drop` of the job that lent it cost the tokio life cycle
    /// ~40 instructions, in tokio's `set_stage`, on every spawn: `spawncycles scalable
    /// tokio` 4,047 -> 4,087.) Out of line: a rare path.
    #[cold]
    #[inline(never)]
    fn drop_parked_body(&mut self) {
        let _span = self.span.as_deref().map(tracing::Span::enter);
        let _lent = cx::lend(self.guard.home());
        drop_in_slot(&mut self.fut);
    }
}

/// Drops a pinned body's future in place (see [`Job::drop_body`]).
fn drop_in_slot<Fut>(slot: &mut Option<Fut>) -> bool {
    // Dropping in place is what pinning allows: the future is not moved.
    contained(|| *slot = None)
}

impl<F, Fut> Future for Job<F, Fut>
where
    F: FnOnce(TaskCx) -> Fut,
    Fut: Future<Output = i32>,
{
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: only `fut` is pinned structurally, and `run` never moves it (see
        // there); `Job` has no `Drop` and no `Unpin` impl of its own (the auto one needs
        // `Fut: Unpin`), and the other fields are never handed out pinned.
        #[allow(unsafe_code)]
        let this = unsafe { self.get_unchecked_mut() };
        match this.run(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(outcome) => {
                // The span closes and the parked waker goes before the task exits, as
                // when they were locals of the body's runner.
                // (Checked first: a drop of `None` is still a call.)
                if this.span.is_some() {
                    this.span = None;
                }
                if this.registered.is_some() {
                    this.registered = None;
                }
                this.guard.complete(outcome);
                Poll::Ready(())
            }
        }
    }
}

impl Launched {
    /// The async runner: the future that runs `body` as this task and completes the
    /// job. The job's guard ends the task as killed if the future is dropped unfinished
    /// (an executor shut down).
    #[inline]
    pub(crate) fn into_async_job<F, Fut>(self, body: F) -> (Child, Job<F, Fut>)
    where
        F: FnOnce(TaskCx) -> Fut + Send + 'static,
        Fut: Future<Output = i32> + Send + 'static,
    {
        let (child, guard) = self.split_async();
        let job = Job {
            fut: None,
            span: None,
            registered: None,
            guard,
            body: Some(body),
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
