//! [`Child`] (the handle of a spawned task), `.await` on it ([`ChildFuture`]), and the
//! per-task [`Tracker`] that decides who reaps.
//!
//! # Who reaps a spawned task
//!
//! A spawned task is an ordinary child of its parent (by default `rt.init()`): it
//! becomes a zombie when its body ends, until it is reaped. [`Child::wait`],
//! [`Child::try_wait`] and `.await` reap it through its parent
//! (`waitid(P_PIDFD, fd, WEXITED | WNOHANG)` from the parent). A [`Child`] dropped
//! unwaited **detaches** the task (tokio's detached-task rule): a per-task flag word
//! records "detached" and "body finished"; whichever of the two events comes second
//! reaps the zombie, so no zombie and no pid outlives its use.
//!
//! If the parent exited first, the task was reparented up the reaper chain and is no
//! longer this `Child`'s to reap: init reaps it (`reap_orphans`) or the subreaper that
//! adopted it does. Waiting then reports its exit status once it has exited (the status
//! pidfs records at reap, `PIDFD_INFO_EXIT`, or before that the task's own final
//! status) and leaves the reap to the adopter.
//!
//! # How a wait sleeps
//!
//! Every wait is event-driven; nothing sleeps on a timer. A blocking wait sleeps on the
//! task's own pidfd wait queue (`pid->wait_pidfd`: [`PidFd::wait_readable`] with no
//! deadline), which only this task's exit or reap wakes, then reaps with `WNOHANG`.
//! `.await` is woken by the job that runs the body, right after it exits the task
//! (one waker slot in the tracker, as a `JoinHandle` has), then reaps; if the task is
//! not reapable then, it registers its waker on the pidfd's queue
//! ([`PidFd::readable`]). Sleeping in
//! the parent's own `wait` instead would wake on every child of the parent (init has
//! them all), and a waiter that loses a race for the zombie to another waiter of the
//! parent would sleep there until some other child changes state.

use crate::coroutine;
use crate::cx::TaskCx;
use crate::kill::KillFlag;
use crate::latch::ExitLatch;
use crate::runtime::{RtShare, Runtime};
use crate::shared::{Shared, Unshared};
use crate::spawn::{Outcome, root_pid};
use crate::status::StatusSlot;
use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use uproc_abi::{Errno, PidfdFlags, Signal, WaitOptions, WaitStatus};
use uproc_pidfs::{PidFd, Readable};
use uproc_tasklist::{Task, WaitId};

/// Everything the handles of one spawned task share: the body's context (runtime and
/// task), the parent that reaps it, its pidfd, the detach flags, the status once
/// reaped, and the kill flag the signal hook raises. One allocation per task; the
/// [`TaskCx`], the [`Child`] and the job's guard are `Arc`s of it.
pub(crate) struct Tracker {
    /// The spawning thread's share of the runtime (not a `Runtime` clone: see
    /// `runtime.rs`).
    rt: Arc<RtShare>,
    pub(crate) task: Task,
    /// The parent the spawn forked from; `None`: the runtime's init, borrowed from `rt`
    /// (no count on init's handle, which every worker's default spawns would share).
    parent: Option<Task>,
    /// The task's pidfd: the `CLONE_PIDFD` one if the spawn asked for it, else opened
    /// on first use (a sleeping wait, a kill, [`Child::pidfd`]), so that a task that is
    /// only spawned and awaited pays for no pidfd (see IMPLEMENTATION.md).
    pidfd: OnceLock<PidFd>,
    latch: ExitLatch,
    /// The async body's context is paid for (a count taken at the split) but not made
    /// yet. Only the job reads and writes it (load and store, no RMW).
    body_cx_prepaid: AtomicBool,
    status: StatusSlot,
    pub(crate) kill: KillFlag,
}

/// Who asks [`Tracker::try_reap_as`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Handle {
    /// A `Child` (or a helper) that may ask again, or share the status with others.
    Shared,
    /// The `ChildFuture` that owns the `Child` and completes with this reap.
    Consumed,
}

/// What a non-blocking reap attempt found.
enum Reap {
    /// Reaped (by us, or the status of a task reaped or adopted elsewhere).
    Done(WaitStatus),
    /// Still the parent's child and not reapable: running, or a zombie another waiter
    /// of the parent claimed a moment ago.
    NotYet,
    /// Not (or no longer) the parent's child, and not exited yet.
    NotOurs,
}

impl Tracker {
    /// Inlined into `launch`, its one caller: the fields are written once, in place.
    #[inline(always)]
    pub(crate) fn new(
        rt: Arc<RtShare>,
        task: Task,
        parent: Option<Task>,
        pidfd: Option<PidFd>,
    ) -> Unshared<Tracker> {
        Unshared::new(Tracker {
            rt,
            task,
            parent,
            // Built filled (no `set`, whose `Result` is one more drop to run).
            pidfd: match pidfd {
                Some(fd) => OnceLock::from(fd),
                None => OnceLock::new(),
            },
            latch: ExitLatch::new(),
            body_cx_prepaid: AtomicBool::new(false),
            status: StatusSlot::default(),
            kill: KillFlag::default(),
        })
    }

    /// The runtime the task belongs to.
    pub(crate) fn runtime(&self) -> &Runtime {
        self.rt.runtime()
    }

    /// Marks a count taken for the async body's context ([`Shared::prepay`]); the job
    /// makes the context with [`take_body_cx`](Self::take_body_cx), or releases the
    /// count there when the body never starts.
    pub(crate) fn prepay_body_cx(handle: Shared<Tracker>) {
        handle.body_cx_prepaid.store(true, Ordering::Relaxed);
        handle.prepay();
    }

    /// The async body's context from the prepaid count, if there is one (then only
    /// once). Called by the job only.
    #[allow(unsafe_code)]
    pub(crate) fn take_body_cx(this: &Shared<Tracker>) -> Option<TaskCx> {
        if !this.body_cx_prepaid.load(Ordering::Relaxed) {
            return None;
        }
        this.body_cx_prepaid.store(false, Ordering::Relaxed);
        // SAFETY: the flag was set when the count was prepaid (`prepay_body_cx`) and is
        // cleared here before the one reclaim; only the job, one poll at a time, reads
        // or writes it.
        Some(TaskCx::from_tracker(unsafe { Shared::reclaim(this) }))
    }

    /// The task's parent when it was spawned, which reaps it: the task the spawn forked
    /// from, or under `CLONE_PARENT` that task's parent.
    fn parent(&self) -> &Task {
        self.parent.as_ref().unwrap_or(&self.rt.init)
    }

    /// The task's pidfd, opened on first use as its parent would open it
    /// (`pidfd_prepare`; `PIDFD_THREAD` for a thread). A task already reaped gets what
    /// its `CLONE_PIDFD` pidfd would read by now: readable, hung up, its exit status
    /// recorded, signals ESRCH.
    fn pidfd(&self) -> &PidFd {
        self.pidfd.get_or_init(|| {
            let pidfs = self.runtime().system().pidfs();
            let viewer = self.parent().pid_ns();
            let pid = Arc::clone(self.task.struct_pid());
            let flags = if self.task.is_thread_group_leader() {
                PidfdFlags::empty()
            } else {
                PidfdFlags::THREAD
            };
            match pidfs.pidfd_prepare(&viewer, Arc::clone(&pid), flags) {
                Ok(fd) => fd,
                Err(_) => {
                    // No task attached to the pid any more: reaped (by another waiter
                    // of the parent, or by its adopter), so its final status is set.
                    let status = self.task.exit_status().unwrap_or_else(|| {
                        unreachable!("a pid with no task attached belongs to an exited task")
                    });
                    pidfs.pidfd_reaped(&viewer, pid, flags, status, self.task.cgroup().id())
                }
            }
        })
    }

    /// `waitid(P_PIDFD, .., WEXITED | WNOHANG)` from the parent. Without an opened
    /// pidfd the wait names the task by its object ([`Task::wait_task`]): the same
    /// match on the pid object, never on a number that may have been recycled, with no
    /// handle made and no shared count touched.
    fn wait_nohang(&self) -> Result<Option<WaitStatus>, Errno> {
        let opts = WaitOptions::EXITED | WaitOptions::NOHANG | WaitOptions::ALL;
        let info = match self.pidfd.get() {
            Some(fd) => self.parent().wait(WaitId::PidFd(fd), opts),
            None => self.parent().wait_task(&self.task, opts),
        };
        info.map(|i| i.map(|i| i.status))
    }

    fn record(&self, s: WaitStatus) -> WaitStatus {
        self.status.set_once(s)
    }

    fn try_reap(&self) -> Result<Reap, Errno> {
        self.try_reap_as(Handle::Shared)
    }

    /// [`try_reap`](Self::try_reap) for the caller `who`. A reap of ours is recorded for
    /// later calls, except by the `.await` that consumes the last `Child`: after it only
    /// its own `child().try_wait()` can ask again, and that reads the same status from
    /// the reaped task (`status_elsewhere`), so the record (a `compare_exchange`) would
    /// buy nothing on every awaited spawn.
    #[inline]
    fn try_reap_as(&self, who: Handle) -> Result<Reap, Errno> {
        if let Some(s) = self.status.get() {
            return Ok(Reap::Done(s));
        }
        match self.wait_nohang() {
            Ok(Some(status)) if who == Handle::Consumed => Ok(Reap::Done(status)),
            Ok(Some(status)) => Ok(Reap::Done(self.record(status))),
            Ok(None) => Ok(Reap::NotYet),
            Err(Errno::ECHILD) => match self.status_elsewhere() {
                Some(s) => Ok(Reap::Done(self.record(s))),
                None => Ok(Reap::NotOurs),
            },
            Err(e) => Err(e),
        }
    }

    /// The status of a task that is not the parent's to reap (reparented when the
    /// parent exited, or reaped by another waiter): the exit info pidfs recorded at
    /// reap, or, once the pidfd is readable (the task exited), the task's final status
    /// (the same one its reaper gets).
    fn status_elsewhere(&self) -> Option<WaitStatus> {
        let pidfd = self.pidfd();
        pidfd.exit_status().or_else(|| {
            if pidfd.poll().readable {
                self.task.exit_status()
            } else {
                None
            }
        })
    }

    /// `Child::wait`. See the module docs: sleeps on this pid's own wait queue until
    /// the task exits, then reaps it (or reports it, if it is no longer ours).
    fn wait_blocking(&self) -> Result<WaitStatus, Errno> {
        // While the job has not reported the exit, the task is (almost always) still
        // running: sleep first instead of scanning the parent's children for a zombie
        // that is not there yet. The sleep returns at once if the task did exit.
        let mut exited = false;
        if !self.latch.is_exited() && self.status.get().is_none() {
            exited = self.pidfd().wait_readable(Duration::MAX);
        }
        loop {
            match self.try_reap()? {
                Reap::Done(s) => return Ok(s),
                Reap::NotYet | Reap::NotOurs if !exited => {
                    // Returns at once if the task already exited. No deadline
                    // (`Duration::MAX` overflows it, so the condvar wait is untimed):
                    // `do_notify_pidfd` at exit is the only wake-up.
                    exited = self.pidfd().wait_readable(Duration::MAX);
                }
                Reap::NotYet | Reap::NotOurs => {
                    // Exited (the pidfd is readable) but not reapable yet: its pidfd
                    // has nothing more to report, so sleep where the event that makes
                    // it reapable lands.
                    if let Some(s) = self.wait_reapable()? {
                        return Ok(s);
                    }
                }
            }
        }
    }

    /// The rare end of [`wait_blocking`](Self::wait_blocking): the task exited but its
    /// parent cannot reap it yet (a leader still waiting for its threads, or a zombie
    /// another waiter of the parent claimed and is releasing). Sleeps in the parent's
    /// own blocking `waitid(P_PIDFD, WEXITED)` on `wait_chldexit`, which the task's
    /// becoming reportable wakes (its parent's notification); it reaps the task then,
    /// or returns ECHILD at once for a task claimed by someone else (the caller's next
    /// try reads the status they recorded). `None`: try again.
    ///
    /// A parent that is exiting (or has a fatal signal pending) cannot sleep in its
    /// wait (EINTR): then sleep until that parent's exit, which hands the task on to a
    /// live thread of its process or to a reaper (and so makes the next try conclude).
    fn wait_reapable(&self) -> Result<Option<WaitStatus>, Errno> {
        let opts = WaitOptions::EXITED | WaitOptions::ALL;
        match self.parent().wait_task(&self.task, opts) {
            Ok(Some(info)) => Ok(Some(self.record(info.status))),
            Ok(None) | Err(Errno::ECHILD) => Ok(None),
            Err(Errno::EINTR) => {
                if let Some(waiter) = self.heir() {
                    return match waiter.wait_task(&self.task, opts) {
                        Ok(Some(info)) => Ok(Some(self.record(info.status))),
                        Ok(None) | Err(Errno::ECHILD | Errno::EINTR) => Ok(None),
                        Err(e) => Err(e),
                    };
                }
                let pidfs = self.runtime().system().pidfs();
                let flags = if self.parent().is_thread_group_leader() {
                    PidfdFlags::empty()
                } else {
                    PidfdFlags::THREAD
                };
                let viewer = self.parent().pid_ns();
                let pid = Arc::clone(self.parent().struct_pid());
                if let Ok(fd) = pidfs.pidfd_prepare(&viewer, pid, flags) {
                    fd.wait_readable(Duration::MAX);
                }
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// When the named parent thread has exited while its process lives on, the task's
    /// parent is now another thread of that process (`forget_original_parent` passes
    /// the children on), which may reap it as the named one could (any thread of the
    /// parent process waits for its children). `None` otherwise.
    fn heir(&self) -> Option<Task> {
        if self.parent().is_alive() {
            return None;
        }
        let now = self.task.parent()?;
        (now != *self.parent()
            && now.is_alive()
            && now.tgid() == self.parent().tgid()
            && Arc::ptr_eq(&now.pid_ns(), &self.parent().pid_ns()))
        .then_some(now)
    }

    /// Called by the job when its async body first parks: gives the task (managed
    /// since its fork, with no hook) a signal hook that raises this tracker's kill
    /// flag, which wakes the parked body on `SIGKILL`. A body that never parks (most)
    /// never pays for it.
    ///
    /// A kill that landed before this hook was in place was only made pending, so it
    /// is read from the task afterwards: the task list marks `SIGKILL` pending (and
    /// queues the group's fatal signal) before it reads a task's hook, under the
    /// hook's own lock, which `set_signal_hook` takes too. So either the signaller read
    /// this hook (and calls it), or its marks are visible here. A group that dies of
    /// `SIGKILL` itself (no other fatal signal queued) is what the hook would have been
    /// called with `SIGKILL` for.
    ///
    /// The hook holds the tracker strongly (a tracker has no weak handles): the task
    /// list drops the hook when the task exits, which every spawned task does through
    /// its job while the job still holds a handle, so the hook is never the last one.
    pub(crate) fn hook_for_parked_body(this: &Shared<Tracker>) {
        let t = this.clone();
        this.task.set_signal_hook(Some(Arc::new(move |sig: Signal| {
            tracing::debug!(target: "uproc", pid = root_pid(&t.task), signal = %sig, "signal hook");
            t.kill.raise(sig);
        })));
        // A SIGKILL sent before the hook was in place (a fatal signal before it only
        // asked the body to end; `sigkill_sent` tells the two apart).
        if this.task.fatal_signal_pending() && this.task.sigkill_sent() {
            this.kill.raise(Signal::KILL);
        }
    }

    /// The job's last step: exit the task, wake an awaiting `ChildFuture`, or reap the
    /// task if the `Child` is gone.
    pub(crate) fn finish(this: &Shared<Tracker>, outcome: Outcome) {
        // The task list drops the signal hook at exit.
        outcome.exit(&this.task);
        if this.latch.exit() {
            Tracker::reap_detached(this);
        }
    }

    fn detach(this: &Shared<Tracker>) {
        if this.latch.detach() {
            Tracker::reap_detached(this);
        }
    }

    /// Runs [`wait_blocking`](Self::wait_blocking) on a helper thread, then wakes `w`:
    /// for a `ChildFuture` whose task exited but is not reapable yet (rare). The wait
    /// records the status, which the woken future then reads. False if no thread
    /// could be started.
    fn wait_on_helper(this: &Shared<Tracker>, w: Waker) -> bool {
        let me = this.clone();
        let spawned = std::thread::Builder::new()
            .name("uproc-waiter".into())
            .spawn(move || {
                let _ = me.wait_blocking();
                w.wake();
            });
        if let Err(e) = &spawned {
            tracing::error!(target: "uproc", pid = root_pid(&this.task), error = %e, "cannot start waiter thread");
        }
        spawned.is_ok()
    }

    fn reap_detached(this: &Shared<Tracker>) {
        match this.try_reap() {
            Ok(Reap::Done(s)) => {
                tracing::trace!(target: "uproc", pid = root_pid(&this.task), status = %s, "detached task reaped")
            }
            Ok(Reap::NotYet) => {
                // A leader whose threads still run is not reapable yet: wait for it on
                // a helper thread (rare: only bodies that fork CLONE_THREAD tasks).
                let me = this.clone();
                let spawned = std::thread::Builder::new()
                    .name("uproc-reaper".into())
                    .spawn(move || {
                        let _ = me.wait_blocking();
                    });
                if let Err(e) = spawned {
                    tracing::error!(target: "uproc", pid = root_pid(&this.task), error = %e, "cannot start reaper thread; zombie kept");
                }
            }
            Ok(Reap::NotOurs) | Err(_) => {}
        }
    }
}

/// The handle [`Runtime::spawn`](crate::Runtime::spawn) returns: wait for, poll, or kill
/// the task, or `.await` its exit status.
///
/// Dropping it unwaited **detaches** the task: it is reaped as soon as its body ends
/// (see the crate docs), so no zombie outlives it.
///
/// ```
/// use uproc::{Runtime, Spawn, Signal};
/// let rt = Runtime::builder().build()?;
/// let child = rt.spawn(Spawn::new(), |cx| {
///     while cx.signal_pending().is_none() {
///         std::thread::yield_now();
///     }
///     0
/// })?;
/// child.kill()?;
/// assert_eq!(child.wait()?.signaled(), Some(Signal::KILL));
/// # Ok::<(), uproc::Errno>(())
/// ```
pub struct Child {
    tracker: Shared<Tracker>,
    handled: bool,
}

impl Child {
    pub(crate) fn new(tracker: Shared<Tracker>) -> Child {
        Child {
            tracker,
            handled: false,
        }
    }

    /// The task's pid as its parent sees it.
    pub fn pid(&self) -> i32 {
        self.tracker.parent().pid_of(&self.tracker.task)
    }

    /// The task.
    pub fn task(&self) -> &Task {
        &self.tracker.task
    }

    /// The task's pidfd: it names this task forever, never a recycled number. The
    /// `CLONE_PIDFD` handle if the spawn's flags asked for one; otherwise opened on the
    /// first call (as the parent's `pidfd_open` would, `PIDFD_THREAD` for a thread),
    /// and once the task was reaped, one that reads as its `CLONE_PIDFD` pidfd would by
    /// then: readable and hung up, `PIDFD_INFO_EXIT` set, signals ESRCH. Every call
    /// returns the same pidfd.
    pub fn pidfd(&self) -> PidFd {
        self.tracker.pidfd().clone()
    }

    /// Waits for the task to exit and reaps it: `waitid(P_PIDFD, fd, WEXITED)` from the
    /// parent. Blocks this thread, asleep on the task's own pidfd wait queue until it
    /// exits (use `.await` in async code).
    ///
    /// If the parent exited first, the task was reparented to a reaper (init or a
    /// subreaper) and is not this handle's to reap: `wait` returns the task's exit
    /// status once it has exited, and the adopter reaps it. Likewise, if another waiter
    /// of the parent (a `wait(-1)` through [`Task::wait`](crate::Task::wait), a
    /// [`ChildSet`](crate::ChildSet)) reaped it first, `wait` returns the status that
    /// reap recorded rather than `ECHILD`: the handle names the task, not a slot in the
    /// parent's child list.
    ///
    /// # References
    /// [waitid(2)](https://man7.org/linux/man-pages/man2/waitid.2.html) with `P_PIDFD`.
    ///
    /// Called from a coroutine of a stackful runtime whose
    /// [`CoroutineHooks`](crate::CoroutineHooks) are registered (the `may` executor's),
    /// it parks that coroutine, not its worker thread: it awaits the child as `.await`
    /// does, and the exit unparks it.
    pub fn wait(mut self) -> Result<WaitStatus, Errno> {
        if coroutine::active().is_some() {
            return coroutine::block_on(self.into_future());
        }
        self.handled = true;
        self.tracker.wait_blocking()
    }

    /// Reaps the task if it has exited: `waitid(.., WEXITED | WNOHANG)`. `Ok(None)`
    /// while it runs. After `Some`, later calls return the same status. A task
    /// reaped by another waiter of the parent, or by the reaper it was handed to, reads
    /// as `Some` with the status that reap recorded (as [`wait`](Self::wait) does).
    pub fn try_wait(&self) -> Result<Option<WaitStatus>, Errno> {
        match self.tracker.try_reap()? {
            Reap::Done(s) => Ok(Some(s)),
            Reap::NotYet | Reap::NotOurs => Ok(None),
        }
    }

    /// Sends `SIGKILL` through the pidfd (`pidfd_send_signal`). A sync body sees it in
    /// [`TaskCx::signal_pending`](crate::TaskCx::signal_pending); an async body is
    /// dropped at its next await point. `ESRCH` once the task was reaped.
    ///
    /// # References
    /// [pidfd_send_signal(2)](https://man7.org/linux/man-pages/man2/pidfd_send_signal.2.html)
    pub fn kill(&self) -> Result<(), Errno> {
        tracing::debug!(target: "uproc", pid = root_pid(&self.tracker.task), "Child::kill");
        self.tracker.pidfd().send_signal(Signal::KILL)
    }
}

impl Child {
    /// Whether the job reported the exit; if not, `w` is woken when it does. The
    /// `Child` is its latch's one registrant: not `Clone`, and `&mut` here.
    #[allow(unsafe_code)]
    fn exited_or_register(&mut self, w: &Waker) -> bool {
        // SAFETY: one registrant per latch, calls never overlap: only this task's one
        // `Child` registers, through `&mut self`.
        unsafe { self.tracker.latch.exited_or_register(w) }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if !self.handled {
            Tracker::detach(&self.tracker);
        }
    }
}

impl fmt::Debug for Child {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Child")
            .field("task", &self.tracker.task)
            .field("status", &self.tracker.status.get())
            .finish_non_exhaustive()
    }
}

/// The future of `child.await`: no thread is blocked and nothing polls on a timer.
///
/// It first waits for the job that runs the body to report the exit (the job wakes it
/// right after `do_exit`, as a tokio `JoinHandle` is woken), then reaps with `WNOHANG`.
/// If the task is not reapable then (a leader whose threads still run, or a task
/// adopted by another reaper), it registers its waker on the task's pidfd
/// ([`PidFd::readable`]) and reaps when the task list reports the exit.
pub struct ChildFuture {
    child: Child,
    /// The job reported the exit (or the task must be watched through its pidfd).
    job_done: bool,
    readable: Option<Readable>,
    done: bool,
    /// A helper thread waits for the task to become reapable (see `poll`).
    helper: bool,
}

impl ChildFuture {
    /// The child this future waits for.
    pub fn child(&self) -> &Child {
        &self.child
    }
}

impl Drop for ChildFuture {
    /// A future dropped before completion detaches the task, as a dropped `Child` does.
    fn drop(&mut self) {
        if !self.done {
            Tracker::detach(&self.child.tracker);
        }
    }
}

impl fmt::Debug for ChildFuture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildFuture")
            .field("child", &self.child)
            .finish_non_exhaustive()
    }
}

impl Future for ChildFuture {
    type Output = Result<WaitStatus, Errno>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if !this.job_done {
            if !this.child.exited_or_register(cx.waker()) {
                return Poll::Pending;
            }
            this.job_done = true;
        }
        if this.readable.is_some() {
            return this.poll_pidfd(cx, false);
        }
        // The common case, inlined: the job reported the exit and the task is reapable.
        match this.child.tracker.try_reap_as(Handle::Consumed) {
            Err(e) => {
                this.done = true;
                Poll::Ready(Err(e))
            }
            Ok(Reap::Done(s)) => {
                this.done = true;
                Poll::Ready(Ok(s))
            }
            Ok(Reap::NotYet | Reap::NotOurs) => this.poll_pidfd(cx, true),
        }
    }
}

impl ChildFuture {
    /// The rest of [`poll`](Future::poll), out of line: the task is not reapable once
    /// its job reported the exit (`tried`: the reap was just tried, with no pidfd
    /// watched yet), or the pidfd is watched already.
    #[cold]
    #[inline(never)]
    fn poll_pidfd(&mut self, cx: &mut Context<'_>, tried: bool) -> Poll<Result<WaitStatus, Errno>> {
        let tracker = &self.child.tracker;
        if tried {
            // Sleep until the exit wakes this pid's waiters (`Readable` checks
            // readiness under the pidfs lock as it registers: no lost wake-up).
            self.readable = Some(tracker.pidfd().readable());
        }
        loop {
            // Whether the pidfd reported the exit during this poll.
            let exited = match self.readable.as_mut() {
                Some(r) => match Pin::new(r).poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(()) => {
                        self.readable = None;
                        true
                    }
                },
                None => false,
            };
            match tracker.try_reap_as(Handle::Consumed) {
                Err(e) => {
                    self.done = true;
                    return Poll::Ready(Err(e));
                }
                Ok(Reap::Done(s)) => {
                    self.done = true;
                    return Poll::Ready(Ok(s));
                }
                Ok(Reap::NotYet | Reap::NotOurs) => {}
            }
            if !exited {
                // As above: watch the pidfd.
                self.readable = Some(tracker.pidfd().readable());
                continue;
            }
            // Exited but not reapable yet (see `Tracker::wait_reapable`): nothing a
            // future can register on reports the moment it becomes reapable, so a
            // helper thread sleeps in the parent's blocking wait (rare: a leader whose
            // threads outlive it) and wakes this future when it is done.
            if !self.helper {
                self.helper = Tracker::wait_on_helper(tracker, cx.waker().clone());
                if !self.helper {
                    // No thread to spare: try again later.
                    cx.waker().wake_by_ref();
                }
            }
            return Poll::Pending;
        }
    }
}

impl IntoFuture for Child {
    type Output = Result<WaitStatus, Errno>;
    type IntoFuture = ChildFuture;

    /// `child.await`: the exit status, reaping the task.
    fn into_future(mut self) -> ChildFuture {
        self.handled = true;
        ChildFuture {
            child: self,
            job_done: false,
            readable: None,
            done: false,
            helper: false,
        }
    }
}
