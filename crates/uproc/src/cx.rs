//! `TaskCx`: what a body knows about the task it runs as, and [`current()`].
//!
//! `current()` reads a slot: the calling coroutine's, or the thread's (`CURRENT`). A
//! body's runner fills it around the body: [`enter`] clones the context into it (sync
//! bodies, coroutines); [`lend`] *moves* the job's own context into the thread's slot
//! around each poll of an async body and back after, so that a poll costs no count on
//! the tracker (two read-modify-writes less per poll). Both restore what the slot held
//! before, so bodies polled inside other bodies' polls nest.

use crate::child::{Child, Tracker};
use crate::coroutine::{self, CurrentSlot};
use crate::runtime::Runtime;
use crate::shared::Shared;
use crate::spawn::Spawn;
use std::fmt;
use uproc_abi::{DefaultAction, Errno, Signal};
use uproc_tasklist::Task;

/// The context handed to a task body, and returned by [`current()`] while one runs.
///
/// Cheap to clone (one count increment), `Send + Sync`. It names the [`Task`] the body runs as
/// and the [`Runtime`] it belongs to; children spawned through it are parented to this
/// task by default.
///
/// ```
/// use uproc::{Runtime, Spawn};
/// let rt = Runtime::builder().build()?;
/// let child = rt.spawn(Spawn::new().name("parent"), |cx| {
///     // A grandchild: its parent is this task, not init.
///     let me = cx.task().clone();
///     let grandchild = cx.spawn(Spawn::new(), move |g| {
///         (g.task().ppid() == me.pid()) as i32
///     }).unwrap();
///     grandchild.wait().unwrap().exited().unwrap()
/// })?;
/// assert_eq!(child.wait()?.exited(), Some(1));
/// # Ok::<(), uproc::Errno>(())
/// ```
#[derive(Clone)]
pub struct TaskCx {
    /// The task's shared facade state (runtime, task, parent, pidfd, kill flag): the
    /// context is one of the handles on it, with the `Child` and the job.
    tracker: Shared<Tracker>,
}

/// The unwinding payload of [`TaskCx::exit`]; caught by the body runner. Never seen by
/// users (it is not a panic: `resume_unwind` skips the panic hook).
pub(crate) struct ExitRequest(pub(crate) i32);

impl TaskCx {
    pub(crate) fn from_tracker(tracker: Shared<Tracker>) -> TaskCx {
        TaskCx { tracker }
    }

    pub(crate) fn tracker(&self) -> &Shared<Tracker> {
        &self.tracker
    }

    /// The task this body runs as.
    pub fn task(&self) -> &Task {
        &self.tracker.task
    }

    /// The runtime the task belongs to.
    pub fn runtime(&self) -> &Runtime {
        self.tracker.runtime()
    }

    /// The task's pid in its own (innermost) pid namespace: `getpid(2)`.
    ///
    /// # References
    /// [getpid(2)](https://man7.org/linux/man-pages/man2/getpid.2.html)
    pub fn pid(&self) -> i32 {
        self.tracker.task.pid()
    }

    /// The first pending signal, fatal ones first (the signal the task will die of:
    /// `SIGTERM` for a task hit by SIGTERM, though uproc marks `SIGKILL` pending for
    /// every fatal signal; `SIGHUP` for one hit by `SIGQUIT` and then `SIGHUP` before
    /// it ended, as in Linux, where a core-dumping signal waits to be dequeued): how a
    /// synchronous body learns that it was asked to stop. Signals are delivered cooperatively: the body keeps running until it
    /// returns; if a fatal signal is still pending then, the task ends as killed by it
    /// whatever the body returned.
    ///
    /// SIGCHLD is never reported: with its default disposition Linux discards it, so
    /// a body that reaps children of its own still reads `None` here until something
    /// else is sent (its children's exits are what [`Child::wait`](crate::Child::wait)
    /// and [`ChildSet`](crate::ChildSet) report).
    ///
    /// # References
    /// `signal_pending()` / `fatal_signal_pending()` in `include/linux/sched/signal.h`.
    pub fn signal_pending(&self) -> Option<Signal> {
        first_pending(&self.tracker.task)
    }

    /// Spawns a child task parented to this task (unless `spawn` names another parent)
    /// and runs `body` on the runtime's executor. See
    /// [`Runtime::spawn`](crate::Runtime::spawn).
    pub fn spawn<F>(&self, spawn: Spawn, body: F) -> Result<Child, Errno>
    where
        F: FnOnce(&TaskCx) -> i32 + Send + 'static,
    {
        self.tracker
            .runtime()
            .spawn(spawn.default_parent(&self.tracker.task), body)
    }

    /// Spawns an async child parented to this task. See
    /// [`Runtime::spawn_async`](crate::Runtime::spawn_async).
    pub fn spawn_async<F, Fut>(&self, spawn: Spawn, body: F) -> Result<Child, Errno>
    where
        F: FnOnce(TaskCx) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = i32> + Send + 'static,
    {
        self.tracker
            .runtime()
            .spawn_async(spawn.default_parent(&self.tracker.task), body)
    }

    /// Ends the task now with exit code `code`, as `exit(3)` does: the body is unwound
    /// (destructors run) and the task exits as if the body had returned `code`.
    ///
    /// This unwinds with a private payload through `std::panic::resume_unwind`, which
    /// does not run the panic hook, so nothing is printed; it needs `panic = "unwind"`
    /// (the default), as panic containment does. Call it only from the body's own
    /// thread (inside an async body: from the body's future); elsewhere the unwind
    /// simply propagates like any other.
    ///
    /// # References
    /// [exit(3)](https://man7.org/linux/man-pages/man3/exit.3.html)
    pub fn exit(&self, code: i32) -> ! {
        std::panic::resume_unwind(Box::new(ExitRequest(code)))
    }
}

impl fmt::Debug for TaskCx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskCx")
            .field("task", &self.tracker.task)
            .finish_non_exhaustive()
    }
}

/// Whether a pending `sig` ends the task when nobody handles it (`sig_fatal`).
pub(crate) fn is_fatal(sig: Signal) -> bool {
    sig == Signal::KILL
        || matches!(
            sig.default_action(),
            DefaultAction::Term | DefaultAction::Core
        )
}

/// The first pending signal, the one ending the task first.
///
/// The task list marks `SIGKILL` pending on every thread when *any* fatal signal hits
/// the group (so that the runtime learns of it), and decides the signal the process
/// dies of ([`Task::dying_of`]: the first fatal one, unless a core-dumping one was
/// overtaken, as in Linux). So that signal comes first; else a fatal signal other than
/// `SIGKILL` in the set; else `SIGKILL`; else the first pending one.
pub(crate) fn first_pending(task: &Task) -> Option<Signal> {
    if let Some(sig) = task.dying_of() {
        return Some(sig);
    }
    let pending = task.pending_signals();
    pending
        .iter()
        .copied()
        .find(|s| *s != Signal::KILL && is_fatal(*s))
        .or_else(|| pending.contains(&Signal::KILL).then_some(Signal::KILL))
        // SIGCHLD is left out: the task list queues it for the parent's wait (Linux's
        // default disposition discards it at once), and a child's exit is no request
        // to stop.
        .or_else(|| pending.iter().copied().find(|s| *s != Signal::CHLD))
}

/// The first pending fatal signal, if any.
#[inline]
pub(crate) fn fatal_pending(task: &Task) -> Option<Signal> {
    // Fast path (every body end), inlined: any fatal signal marks SIGKILL pending on
    // the thread (`complete_signal`), so without it nothing fatal is pending and the
    // pending sets need not be read.
    if !task.fatal_signal_pending() {
        return None;
    }
    first_fatal(task)
}

/// [`fatal_pending`] once `SIGKILL` is pending: out of line, so the fast path's
/// callers carry none of it.
#[cold]
#[inline(never)]
fn first_fatal(task: &Task) -> Option<Signal> {
    first_pending(task).filter(|s| is_fatal(*s))
}

thread_local! {
    /// The current task of code that runs on this OS thread outside any coroutine.
    static CURRENT: CurrentSlot = const { CurrentSlot::new() };
}

/// Calls `f` with the slot of the caller: its coroutine's when it runs in a coroutine
/// of a registered [`CoroutineHooks`](crate::CoroutineHooks) runtime, else its
/// thread's. `None` while the thread's storage is being destroyed.
fn with_slot<R>(f: impl FnOnce(&CurrentSlot) -> R) -> Option<R> {
    match coroutine::active() {
        Some(hooks) => {
            let mut f = Some(f);
            let mut out = None;
            hooks.current_slot(&mut |slot| {
                if let Some(f) = f.take() {
                    out = Some(f(slot));
                }
            });
            out
        }
        None => CURRENT.try_with(f).ok(),
    }
}

/// The context of the task whose body is running here, or `None` outside any body.
///
/// "Here" is the calling coroutine when the caller runs in a coroutine of a stackful
/// runtime whose [`CoroutineHooks`](crate::CoroutineHooks) are registered (the `may`
/// executor's are), else the calling OS thread. On the thread executor the context is
/// set for the whole body; in a coroutine, for the whole body too, and it follows the
/// coroutine across yields and across worker threads; for an async body it is set while
/// the body's future is being polled, so it behaves like a task-local: correct after
/// every `.await`, whichever worker thread resumes the future.
///
/// ```
/// use uproc::{Runtime, Spawn};
/// assert!(uproc::current().is_none());
/// let rt = Runtime::builder().build()?;
/// let child = rt.spawn(Spawn::new(), |cx| {
///     let me = uproc::current().expect("inside a body");
///     (me.pid() == cx.pid()) as i32
/// })?;
/// assert_eq!(child.wait()?.exited(), Some(1));
/// # Ok::<(), uproc::Errno>(())
/// ```
pub fn current() -> Option<TaskCx> {
    with_slot(CurrentSlot::get).flatten()
}

/// Makes `cx` current until the guard is dropped (then restores the previous one).
///
/// The guard must be dropped on the coroutine (or thread) that created it, which every
/// user does: it lives on the body's stack, around the body or one poll.
pub(crate) struct Enter {
    prev: Option<TaskCx>,
}

pub(crate) fn enter(cx: &TaskCx) -> Enter {
    let prev = with_slot(|s| s.replace(Some(cx.clone()))).flatten();
    Enter { prev }
}

impl Drop for Enter {
    fn drop(&mut self) {
        let prev = self.prev.take();
        with_slot(|s| s.replace(prev));
    }
}

/// Makes the context in `home` current by *moving* it into the thread's slot until the
/// guard is dropped, which moves it back: [`enter`] without the clone and the drop of a
/// `TaskCx` (two read-modify-writes on the tracker's count per poll of an async body).
///
/// Only the thread's own slot is lent to (outside every coroutine, the case of the
/// async executors): it lives as long as its thread, so the context always comes back
/// to the guard that lent it. In a coroutine, and while `home` is empty (lent already,
/// by an outer guard of the same job), this falls back to [`enter`].
pub(crate) enum Lend<'a> {
    /// The context is in the thread's slot; `prev` is what the slot held before.
    Lent {
        home: &'a mut Option<TaskCx>,
        prev: Option<TaskCx>,
    },
    /// Made current by a clone (a coroutine), or nothing to make current.
    Entered { _enter: Option<Enter> },
}

#[inline]
pub(crate) fn lend(home: &mut Option<TaskCx>) -> Lend<'_> {
    if coroutine::active().is_some() || home.is_none() {
        return Lend::Entered {
            _enter: home.as_ref().map(enter),
        };
    }
    let mut cx = home.take();
    let prev = CURRENT.try_with(|s| s.replace(cx.take())).ok().flatten();
    if cx.is_some() {
        // The thread's storage is being destroyed: nothing to lend to.
        *home = cx;
        return Lend::Entered { _enter: None };
    }
    Lend::Lent { home, prev }
}

impl Drop for Lend<'_> {
    #[inline]
    fn drop(&mut self) {
        if let Lend::Lent { home, prev } = self {
            let mut prev = prev.take();
            let back = CURRENT
                .try_with(|s| s.replace(prev.take()))
                .expect("the thread's slot outlives a poll that lent to it");
            debug_assert!(back.is_some(), "the lent context comes back");
            **home = back;
        }
    }
}
