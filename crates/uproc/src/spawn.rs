//! `Spawn` (what to create), `Child` (the handle), and the machinery that runs a body as
//! a task: fork, signal hook, executor job, exit, and reaping of detached children.
//!
//! # Who reaps a spawned task
//!
//! A spawned task is an ordinary child of its parent (by default `rt.init()`): it
//! becomes a zombie when its body ends, until it is reaped. [`Child::wait`],
//! [`Child::try_wait`] and `.await` reap it through its parent
//! (`waitid(P_PIDFD, ..)` from the parent). A [`Child`] dropped unwaited **detaches**
//! the task (tokio's detached-task rule): a per-task flag word records "detached" and
//! "body finished"; whichever of the two events comes second reaps the zombie, so no
//! zombie and no pid outlives its use. If the parent exited meanwhile, the task was
//! reparented up the reaper chain and is no longer ours to reap: init reaps it
//! (`reap_orphans`) or the subreaper that adopted it does.

use crate::cx::{self, ExitRequest, TaskCx, fatal_pending};
use crate::runtime::Runtime;
use parking_lot::Mutex;
use std::any::Any;
use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use uproc_abi::{CloneFlags, Errno, PidfdFlags, Signal, WaitOptions, WaitStatus};
use uproc_cgroup::Cgroup;
use uproc_pidfs::PidFd;
use uproc_tasklist::{CloneArgs, Task, WaitId};

/// What [`Runtime::spawn`](crate::Runtime::spawn) creates: parent, name, namespace,
/// cgroup and raw [`CloneArgs`]. A builder; every method consumes and returns it.
///
/// ```
/// use uproc::{CloneArgs, Runtime, Spawn};
/// let rt = Runtime::builder().build()?;
/// let jobs = rt.cgroup_root().mkdir("jobs")?;
/// let s = Spawn::new()
///     .parent(&rt.init())
///     .name("worker")
///     .cgroup(&jobs)
///     .args(CloneArgs::default());
/// let child = rt.spawn(s, |cx| {
///     assert_eq!(cx.task().cgroup().path(), "/jobs");
///     assert_eq!(cx.task().name(), "worker");
///     0
/// })?;
/// assert_eq!(child.wait()?.exited(), Some(0));
/// # Ok::<(), uproc::Errno>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Spawn {
    parent: Option<Task>,
    name: Option<String>,
    new_pid_ns: bool,
    cgroup: Option<Cgroup>,
    args: CloneArgs,
}

impl Spawn {
    /// Default: parent `rt.init()` (or the spawning task for [`TaskCx::spawn`]), the
    /// parent's name, namespace and cgroup, `CloneArgs::default()`.
    pub fn new() -> Spawn {
        Spawn::default()
    }

    /// Forks from `t` instead of the default parent.
    pub fn parent(mut self, t: &Task) -> Spawn {
        self.parent = Some(t.clone());
        self
    }

    /// Names the task (`comm`, what [`ps`](crate::Runtime::ps) shows; Linux keeps 15
    /// bytes, the task list decides).
    pub fn name(mut self, n: &str) -> Spawn {
        self.name = Some(n.to_owned());
        self
    }

    /// Starts the task as pid 1 of a new pid namespace (`CLONE_NEWPID`).
    pub fn new_pid_ns(mut self) -> Spawn {
        self.new_pid_ns = true;
        self
    }

    /// Starts the task in `cg` (`CLONE_INTO_CGROUP`); `EAGAIN` if its pids.max is reached.
    pub fn cgroup(mut self, cg: &Cgroup) -> Spawn {
        self.cgroup = Some(cg.clone());
        self
    }

    /// Raw clone3 arguments. [`new_pid_ns`](Spawn::new_pid_ns) and
    /// [`cgroup`](Spawn::cgroup) are added on top whatever the call order;
    /// `CLONE_PIDFD` is always added (except with `CLONE_THREAD`, where a thread pidfd
    /// is opened instead).
    pub fn args(mut self, a: CloneArgs) -> Spawn {
        self.args = a;
        self
    }

    pub(crate) fn default_parent(mut self, t: &Task) -> Spawn {
        if self.parent.is_none() {
            self.parent = Some(t.clone());
        }
        self
    }
}

/// The signal hook's side of a task: set when `SIGKILL` arrives, wakes an async body.
#[derive(Default)]
pub(crate) struct KillFlag {
    killed: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl KillFlag {
    /// Called by the task list's signal hook, outside every task-list lock.
    fn raise(&self, sig: Signal) {
        tracing::debug!(target: "uproc", signal = %sig, "signal hook");
        if sig == Signal::KILL {
            self.killed.store(true, Ordering::Release);
            let w = self.waker.lock().take();
            if let Some(w) = w {
                w.wake();
            }
        }
    }

    pub(crate) fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    /// Registers the waker to wake on `SIGKILL`; returns whether it already came.
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub(crate) fn register(&self, w: &Waker) -> bool {
        let mut slot = self.waker.lock();
        match &*slot {
            Some(old) if old.will_wake(w) => {}
            _ => *slot = Some(w.clone()),
        }
        drop(slot);
        self.is_killed()
    }
}

/// How a body ended.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Outcome {
    /// Returned (or called `cx.exit`) with this code.
    Code(i32),
    /// Panicked: killed by SIGABRT.
    Panicked,
    /// Dropped on SIGKILL (async bodies), or never run.
    Killed,
}

impl Outcome {
    /// The outcome of a body that unwound with `payload`.
    pub(crate) fn from_unwind(task: &Task, payload: Box<dyn Any + Send>) -> Outcome {
        if let Some(ExitRequest(code)) = payload.downcast_ref::<ExitRequest>() {
            return Outcome::Code(*code);
        }
        let msg = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("<non-string panic payload>");
        tracing::error!(target: "uproc", pid = task.pid(), panic = msg, "task body panicked; task killed by SIGABRT");
        Outcome::Panicked
    }
}

const DETACHED: u8 = 1;
const EXITED: u8 = 2;

/// State shared by a [`Child`] and its job.
pub(crate) struct Tracker {
    task: Task,
    parent: Task,
    pidfd: PidFd,
    flags: AtomicU8,
    status: OnceLock<WaitStatus>,
}

/// What a non-blocking reap attempt found.
enum Reap {
    Done(WaitStatus),
    NotYet,
    /// Not (or no longer) the parent's child, and no exit recorded yet.
    NotOurs,
}

impl Tracker {
    fn try_reap(&self) -> Result<Reap, Errno> {
        if let Some(s) = self.status.get() {
            return Ok(Reap::Done(*s));
        }
        let opts = WaitOptions::EXITED | WaitOptions::NOHANG | WaitOptions::ALL;
        match self.parent.wait(WaitId::PidFd(&self.pidfd), opts) {
            Ok(Some(info)) => Ok(Reap::Done(*self.status.get_or_init(|| info.status))),
            Ok(None) => Ok(Reap::NotYet),
            Err(Errno::ECHILD) => match self.pidfd.exit_status() {
                // Reaped by someone else (reparented, autoreaped): pidfs kept the status.
                Some(s) => Ok(Reap::Done(*self.status.get_or_init(|| s))),
                None => Ok(Reap::NotOurs),
            },
            Err(e) => Err(e),
        }
    }

    fn wait_blocking(&self) -> Result<WaitStatus, Errno> {
        let mut not_ours = 0u32;
        loop {
            match self.try_reap()? {
                Reap::Done(s) => return Ok(s),
                Reap::NotYet => {
                    self.pidfd.wait_readable(Duration::from_millis(100));
                }
                Reap::NotOurs => {
                    // Adopted by a reaper: wait for it to exit, then give its reaper a
                    // moment to record the status; then it is not ours to wait for.
                    if !self.pidfd.poll().readable {
                        self.pidfd.wait_readable(Duration::from_millis(100));
                        continue;
                    }
                    not_ours += 1;
                    if not_ours > 200 {
                        return Err(Errno::ECHILD);
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
    }

    /// The job's last step: report the exit, then reap if the `Child` is gone.
    fn finish(self: &Arc<Self>, outcome: Outcome) {
        let t = &self.task;
        match outcome {
            Outcome::Code(code) => match fatal_pending(t) {
                Some(sig) => t.exit_signaled(sig),
                None => t.exit(code),
            },
            Outcome::Panicked => t.exit_signaled(Signal::ABRT),
            Outcome::Killed => t.exit_signaled(Signal::KILL),
        }
        t.set_signal_hook(None);
        let prev = self.flags.fetch_or(EXITED, Ordering::AcqRel);
        if prev & DETACHED != 0 {
            self.reap_detached();
        }
    }

    fn detach(self: &Arc<Self>) {
        let prev = self.flags.fetch_or(DETACHED, Ordering::AcqRel);
        if prev & EXITED != 0 {
            self.reap_detached();
        }
    }

    fn reap_detached(self: &Arc<Self>) {
        match self.try_reap() {
            Ok(Reap::Done(s)) => {
                tracing::trace!(target: "uproc", pid = self.task.pid(), status = %s, "detached task reaped")
            }
            Ok(Reap::NotYet) => {
                // A leader whose threads still run is not reapable yet: wait for it on
                // a helper thread (rare: only bodies that fork CLONE_THREAD tasks).
                let me = Arc::clone(self);
                let spawned = std::thread::Builder::new()
                    .name("uproc-reaper".into())
                    .spawn(move || {
                        let _ = me.wait_blocking();
                    });
                if let Err(e) = spawned {
                    tracing::error!(target: "uproc", error = %e, "cannot start reaper thread; zombie kept");
                }
            }
            Ok(Reap::NotOurs) | Err(_) => {}
        }
    }
}

/// Ends the task if the job is dropped without running (executor shut down).
struct JobGuard {
    tracker: Option<Arc<Tracker>>,
}

impl JobGuard {
    fn complete(mut self, outcome: Outcome) {
        if let Some(t) = self.tracker.take() {
            t.finish(outcome);
        }
    }
}

impl Drop for JobGuard {
    fn drop(&mut self) {
        if let Some(t) = self.tracker.take() {
            tracing::warn!(target: "uproc", pid = t.task.pid(), "job dropped without running; task killed");
            t.finish(Outcome::Killed);
        }
    }
}

/// A forked task waiting for its body to be started.
pub(crate) struct Launched {
    pub(crate) cx: TaskCx,
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub(crate) kill: Arc<KillFlag>,
    guard: JobGuard,
    child: Child,
}

impl Launched {
    /// The sync runner: run `body` here with `current()` set, then finish.
    pub(crate) fn into_sync_job<F>(self, body: F) -> (Child, Box<dyn FnOnce() + Send>)
    where
        F: FnOnce(&TaskCx) -> i32 + Send + 'static,
    {
        let Launched {
            cx, guard, child, ..
        } = self;
        let job = Box::new(move || {
            let task = cx.task().clone();
            let outcome = if task.state() == uproc_tasklist::TaskState::Running
                || task.state() == uproc_tasklist::TaskState::Stopped
            {
                let _enter = cx::enter(&cx);
                match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&cx))) {
                    Ok(code) => Outcome::Code(code),
                    Err(p) => Outcome::from_unwind(&task, p),
                }
            } else {
                // Killed between fork and start (before the hook was installed).
                Outcome::Killed
            };
            guard.complete(outcome);
        });
        (child, job)
    }

    /// For the async runner: the pieces, and a completion callback.
    #[cfg(feature = "tokio")]
    pub(crate) fn into_parts(self) -> (Child, TaskCx, Arc<KillFlag>, impl FnOnce(Outcome) + Send) {
        let Launched {
            cx,
            kill,
            guard,
            child,
        } = self;
        (child, cx, kill, move |o| guard.complete(o))
    }
}

/// fork + name + signal hook + pidfd: everything but running the body.
pub(crate) fn launch(rt: &Runtime, s: Spawn) -> Result<Launched, Errno> {
    let parent = s.parent.unwrap_or_else(|| rt.init());
    let mut args = s.args;
    let thread = args.flags.contains(CloneFlags::THREAD);
    if !thread {
        args.flags |= CloneFlags::PIDFD;
    }
    if s.new_pid_ns {
        args.flags |= CloneFlags::NEWPID;
    }
    if let Some(cg) = s.cgroup {
        args.flags |= CloneFlags::INTO_CGROUP;
        args.cgroup = Some(cg);
    }
    let task = parent.fork(&args)?;
    if let Some(n) = &s.name {
        task.set_name(n);
    }
    let kill = Arc::new(KillFlag::default());
    let k = Arc::clone(&kill);
    task.set_signal_hook(Some(Arc::new(move |sig| k.raise(sig))));
    let pidfd = match task.pidfd() {
        Some(fd) => fd,
        None => {
            let flags = if thread {
                PidfdFlags::THREAD
            } else {
                PidfdFlags::empty()
            };
            rt.system().pidfs().pidfd_prepare_stale(
                &parent.pid_ns(),
                Arc::clone(task.struct_pid()),
                flags,
            )
        }
    };
    tracing::debug!(target: "uproc", pid = task.pid(), ppid = task.ppid(), "spawn");
    let tracker = Arc::new(Tracker {
        task: task.clone(),
        parent,
        pidfd,
        flags: AtomicU8::new(0),
        status: OnceLock::new(),
    });
    Ok(Launched {
        cx: TaskCx::new(rt.clone(), task),
        kill,
        guard: JobGuard {
            tracker: Some(Arc::clone(&tracker)),
        },
        child: Child {
            tracker,
            handled: false,
        },
    })
}

/// The handle [`Runtime::spawn`](crate::Runtime::spawn) returns: wait for, poll, or kill
/// the task, or `.await` its exit status.
///
/// Dropping it unwaited **detaches** the task: it is reaped as soon as its body ends
/// (see the module docs), so no zombie outlives it.
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
    tracker: Arc<Tracker>,
    handled: bool,
}

impl Child {
    /// The task's pid as its parent sees it.
    pub fn pid(&self) -> i32 {
        self.tracker.parent.pid_of(&self.tracker.task)
    }

    /// The task.
    pub fn task(&self) -> &Task {
        &self.tracker.task
    }

    /// The task's pidfd (the `CLONE_PIDFD` handle): it names this task forever, never a
    /// recycled number.
    pub fn pidfd(&self) -> PidFd {
        self.tracker.pidfd.clone()
    }

    /// Waits for the task to exit and reaps it: `waitid(P_PIDFD, fd, WEXITED)` from the
    /// parent. Blocks this thread (use `.await` in async code).
    ///
    /// If the parent exited first, the task was reparented and reaped by its new
    /// reaper; the status then comes from the pidfd's exit info. `ECHILD` if a
    /// subreaper adopted it and did not reap it.
    ///
    /// # References
    /// [waitid(2)](https://man7.org/linux/man-pages/man2/waitid.2.html) with `P_PIDFD`.
    pub fn wait(mut self) -> Result<WaitStatus, Errno> {
        self.handled = true;
        self.tracker.wait_blocking()
    }

    /// Reaps the task if it has exited: `waitid(.., WEXITED | WNOHANG)`. `Ok(None)`
    /// while it runs. After `Some`, later calls return the same status.
    pub fn try_wait(&self) -> Result<Option<WaitStatus>, Errno> {
        match self.tracker.try_reap()? {
            Reap::Done(s) => Ok(Some(s)),
            Reap::NotYet | Reap::NotOurs => Ok(None),
        }
    }

    /// Sends `SIGKILL` through the pidfd (`pidfd_send_signal`). A sync body sees it in
    /// [`TaskCx::signal_pending`]; an async body is dropped at its next await point.
    /// `ESRCH` once the task was reaped.
    ///
    /// # References
    /// [pidfd_send_signal(2)](https://man7.org/linux/man-pages/man2/pidfd_send_signal.2.html)
    pub fn kill(&self) -> Result<(), Errno> {
        tracing::debug!(target: "uproc", pid = self.tracker.task.pid(), "Child::kill");
        self.tracker.pidfd.send_signal(Signal::KILL)
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if !self.handled {
            self.tracker.detach();
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

/// The future of `child.await`: waits for the pidfd to become readable (no thread is
/// blocked), then reaps with `WNOHANG`.
pub struct ChildFuture {
    child: Child,
    readable: Option<Pin<Box<uproc_pidfs::Readable>>>,
    spins: u32,
    done: bool,
}

impl Drop for ChildFuture {
    /// A future dropped before completion detaches the task, as a dropped `Child` does.
    fn drop(&mut self) {
        if !self.done {
            self.child.tracker.detach();
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
        loop {
            if let Some(r) = this.readable.as_mut() {
                match r.as_mut().poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(()) => this.readable = None,
                }
            }
            match this.child.tracker.try_reap() {
                Err(e) => {
                    this.done = true;
                    return Poll::Ready(Err(e));
                }
                Ok(Reap::Done(s)) => {
                    this.done = true;
                    return Poll::Ready(Ok(s));
                }
                Ok(Reap::NotYet) | Ok(Reap::NotOurs) => {}
            }
            if !this.child.tracker.pidfd.poll().readable {
                this.readable = Some(Box::pin(this.child.tracker.pidfd.readable()));
                continue;
            }
            // Exited but not reapable yet (a reaper is recording the status): yield.
            this.spins += 1;
            if this.spins > 10_000 {
                this.done = true;
                return Poll::Ready(Err(Errno::ECHILD));
            }
            cx.waker().wake_by_ref();
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
            readable: None,
            spins: 0,
            done: false,
        }
    }
}
