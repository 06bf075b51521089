//! `Spawn` (what to create) and the machinery that runs a body as a task: fork, signal
//! hook, executor job, exit. The handle and the reaping live in `child.rs`.
//!
//! # One allocation of facade state per task
//!
//! `launch` forks the task managed from its creation (`Task::fork_managed`: a fatal
//! signal is made pending for the body to notice, with no hook to install or call),
//! and builds everything its handles share in one [`Tracker`], in place and not yet
//! shared; the split makes the [`Child`] and the job's [`JobGuard`] at once (`Shared`,
//! one count store), and the body's [`TaskCx`] is a third handle. Only an async body
//! that parks installs a signal hook, one that can wake it (see
//! `Tracker::hook_for_parked_body`).

use crate::child::{Child, Tracker};
use crate::coroutine;
use crate::cx::{self, ExitRequest, TaskCx, fatal_pending};
use crate::runtime::Runtime;
use crate::shared::Unshared;
use std::any::Any;
use uproc_abi::hint::cold_path;
use uproc_abi::{CloneFlags, Errno, Signal};
use uproc_cgroup::Cgroup;
use uproc_tasklist::{CloneArgs, Task};

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
    #[inline]
    pub fn new() -> Spawn {
        Spawn::default()
    }

    /// Forks from `t` instead of the default parent. A task of another runtime makes
    /// the spawn fail with EINVAL.
    #[inline]
    pub fn parent(mut self, t: &Task) -> Spawn {
        self.parent = Some(t.clone());
        self
    }

    /// Names the task (`comm`, what [`ps`](crate::Runtime::ps) shows; Linux keeps 15
    /// bytes, the task list decides).
    #[inline]
    pub fn name(mut self, n: &str) -> Spawn {
        self.name = Some(n.to_owned());
        self
    }

    /// Starts the task as pid 1 of a new pid namespace (`CLONE_NEWPID`).
    #[inline]
    pub fn new_pid_ns(mut self) -> Spawn {
        self.new_pid_ns = true;
        self
    }

    /// Starts the task in `cg` (`CLONE_INTO_CGROUP`); `EAGAIN` if its pids.max is reached.
    #[inline]
    pub fn cgroup(mut self, cg: &Cgroup) -> Spawn {
        self.cgroup = Some(cg.clone());
        self
    }

    /// Raw clone3 arguments. [`new_pid_ns`](Spawn::new_pid_ns) and
    /// [`cgroup`](Spawn::cgroup) are added on top whatever the call order.
    /// [`Child::pidfd`] is the `CLONE_PIDFD` handle when these flags ask for one;
    /// otherwise the `Child` opens the task's pidfd when first asked for it (a
    /// `PIDFD_THREAD` one for a thread): it names the same task and reads the same,
    /// also once the task was reaped.
    #[inline]
    pub fn args(mut self, a: CloneArgs) -> Spawn {
        self.args = a;
        self
    }

    #[inline]
    pub(crate) fn default_parent(mut self, t: &Task) -> Spawn {
        if self.parent.is_none() {
            self.parent = Some(t.clone());
        }
        self
    }
}

/// How a body ended.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Outcome {
    /// Returned (or called `cx.exit`) with this code.
    Code(i32),
    /// Panicked: killed by SIGABRT.
    Panicked,
    /// Dropped on SIGKILL (async bodies), or its job was dropped unrun.
    Killed,
    /// Not started: the task had already exited, or a fatal signal was pending when
    /// its job began (a process killed before it runs never runs user code).
    NotRun,
}

impl Outcome {
    /// The outcome of a body that unwound with `payload`.
    pub(crate) fn from_unwind(task: &Task, payload: Box<dyn Any + Send>) -> Outcome {
        if let Some(ExitRequest(code)) = payload.downcast_ref::<ExitRequest>() {
            return Outcome::Code(*code);
        }
        let msg = uproc_abi::user::panic_message(&*payload);
        tracing::error!(target: "uproc", pid = root_pid(task), panic = msg, "task body panicked; task killed by SIGABRT");
        // The payload is the body's value too: a `Drop` of it that panics is the same
        // crash, not a second one that escapes the job.
        contained(move || drop(payload));
        Outcome::Panicked
    }

    /// Ends `t` as this outcome says (`do_exit` / `do_group_exit`).
    pub(crate) fn exit(self, t: &Task) {
        match self {
            Outcome::Code(code) => match fatal_pending(t) {
                Some(sig) => t.exit_signaled(sig),
                None => t.exit(code),
            },
            Outcome::Panicked => t.exit_signaled(Signal::ABRT),
            Outcome::Killed => t.exit_signaled(Signal::KILL),
            Outcome::NotRun => t.exit_signaled(fatal_pending(t).unwrap_or(Signal::KILL)),
        }
    }
}

/// Runs `f` (a drop of the body's values) and contains its panic
/// ([`uproc_abi::user::contain`]): true when one happened.
pub(crate) fn contained(f: impl FnOnce()) -> bool {
    uproc_abi::user::contain(f).is_err()
}

/// The task's number in the root namespace: the `pid` field of every tracing event
/// (the task list's events use the same numbering).
pub(crate) fn root_pid(t: &Task) -> i32 {
    t.struct_pid().numbers()[0].nr
}

/// The span a body runs in: `uproc::task{pid}` at debug level (disabled, it costs one
/// callsite check), so a body's own events say which task they come from.
pub(crate) fn task_span(t: &Task) -> tracing::Span {
    tracing::debug_span!(target: "uproc", "task", pid = root_pid(t))
}

/// Whether a job may start its body: the task is alive and no fatal signal is pending.
pub(crate) fn may_start(task: &Task) -> bool {
    task.is_alive() && !task.fatal_signal_pending()
}

/// The job's handle on its task: ends the task if the job is dropped without having
/// completed (an executor shut down or refused it), so nothing leaks either way.
#[derive(Debug)]
pub(crate) struct JobGuard {
    cx: Option<TaskCx>,
}

impl JobGuard {
    /// The context of the task this job runs.
    pub(crate) fn cx(&self) -> &TaskCx {
        self.cx
            .as_ref()
            .expect("a JobGuard holds its context until it completes")
    }

    /// Where the context lives, for [`cx::lend`] to move it out and back around a poll
    /// of an async body.
    pub(crate) fn home(&mut self) -> &mut Option<TaskCx> {
        &mut self.cx
    }

    /// The job's last step: exit the task as `outcome` says, then reap it if its
    /// `Child` is gone. The guard is empty afterwards (its drop does nothing).
    pub(crate) fn complete(&mut self, outcome: Outcome) {
        if let Some(cx) = self.cx.take() {
            Tracker::finish(cx.tracker(), outcome);
            // A body that never started leaves its prepaid context count.
            drop(Tracker::take_body_cx(cx.tracker()));
        }
    }
}

impl Drop for JobGuard {
    /// Inlined down to one check: a job that completed (every job, but for an executor
    /// shut down) left its guard empty.
    #[inline]
    fn drop(&mut self) {
        self.end_unfinished();
    }
}

impl JobGuard {
    /// What the guard's drop does, ahead of it: ends the task as killed unless the job
    /// completed. The guard is empty afterwards.
    #[inline]
    pub(crate) fn end_unfinished(&mut self) {
        if let Some(cx) = self.cx.take() {
            JobGuard::dropped_unrun(cx);
        }
    }

    /// The job was dropped without completing: the task ends killed.
    #[cold]
    #[inline(never)]
    fn dropped_unrun(cx: TaskCx) {
        tracing::warn!(target: "uproc", pid = root_pid(cx.task()), "job dropped without running; task killed");
        Tracker::finish(cx.tracker(), Outcome::Killed);
        drop(Tracker::take_body_cx(cx.tracker()));
    }
}

/// A forked task waiting for its body to be started: its tracker, not shared yet.
pub(crate) struct Launched {
    tracker: Unshared<Tracker>,
}

impl Launched {
    /// The handle for the caller and the guard for the job.
    pub(crate) fn split(self) -> (Child, JobGuard) {
        let [child, guard] = self.tracker.share();
        let guard = JobGuard {
            cx: Some(TaskCx::from_tracker(guard)),
        };
        (Child::new(child), guard)
    }

    /// [`split`](Self::split) for an async job: a third count is taken with the
    /// other two, prepaid for the body's context ([`Tracker::take_body_cx`]).
    pub(crate) fn split_async(self) -> (Child, JobGuard) {
        let [child, guard, body] = self.tracker.share();
        Tracker::prepay_body_cx(body);
        let guard = JobGuard {
            cx: Some(TaskCx::from_tracker(guard)),
        };
        (Child::new(child), guard)
    }

    /// The sync runner: run `body` here with `current()` set, then exit.
    pub(crate) fn into_sync_job<F>(self, body: F) -> (Child, Box<dyn FnOnce() + Send>)
    where
        F: FnOnce(&TaskCx) -> i32 + Send + 'static,
    {
        let (child, mut guard) = self.split();
        let job = Box::new(move || {
            let cx = guard.cx();
            let outcome = if may_start(cx.task()) {
                // Tracing keeps the entered span stack per OS thread: a coroutine that
                // yields (and maybe moves) must not hold a span entered across the body.
                let _span = coroutine::active()
                    .is_none()
                    .then(|| task_span(cx.task()).entered());
                let _enter = cx::enter(cx);
                match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(cx))) {
                    Ok(code) => Outcome::Code(code),
                    Err(p) => Outcome::from_unwind(cx.task(), p),
                }
            } else {
                // Killed before it started: the body's captured values go now, before
                // the exit, and a `Drop` of theirs that panics stays inside the job
                // (the task is dead of its signal already).
                contained(|| drop(body));
                Outcome::NotRun
            };
            guard.complete(outcome);
        });
        (child, job)
    }
}

/// fork (managed) + name + pidfd: everything but running the body. Inlined into
/// its callers: a call would copy the 112-byte `Spawn`.
#[inline(always)]
pub(crate) fn launch(rt: &Runtime, mut s: Spawn) -> Result<Launched, Errno> {
    // A task of another runtime would fork there while the body's context reports
    // this one.
    if s.parent
        .as_ref()
        .is_some_and(|p| !p.belongs_to(rt.system()))
    {
        cold_path();
        return Err(Errno::EINVAL);
    }
    // The flags go into the builder's own arguments, in place: moving them out would
    // copy them.
    if s.new_pid_ns {
        s.args.flags |= CloneFlags::NEWPID;
    }
    if let Some(cg) = s.cgroup.take() {
        s.args.flags |= CloneFlags::INTO_CGROUP;
        s.args.cgroup = Some(cg);
    }
    // This thread's share of the runtime: the tracker's runtime handle and init (the
    // default parent, borrowed: no count taken on it).
    let share = rt.share();
    let parent = s.parent.as_ref().unwrap_or(&share.init);
    // Managed mode from the fork on: a fatal signal is made pending, and the body (or
    // its runner, before it starts) ends the task when it sees it. An async body that
    // parks installs a hook that can wake it (`Tracker::hook_for_parked_body`).
    let task = parent.fork_managed(&s.args).inspect_err(|_| cold_path())?;
    if let Some(n) = &s.name {
        task.set_name(n);
    }
    // The `Child` opens the task's pidfd when first asked for it (a wait that sleeps,
    // a kill, `Child::pidfd`), unless the caller asked for `CLONE_PIDFD` (see
    // IMPLEMENTATION.md).
    let pidfd = task.pidfd();
    tracing::debug!(
        target: "uproc",
        pid = root_pid(&task),
        ppid = root_pid(parent),
        name = s.name.as_deref(),
        "spawn"
    );
    // `CLONE_PARENT`: the task is its parent's sibling, and that parent's parent alone
    // can reap it (the caller gets ECHILD, as in Linux): the `Child` waits as the task's
    // real parent, or the task would stay a zombie that no handle reaps.
    let reaper = if s.args.flags.contains(CloneFlags::PARENT) {
        cold_path();
        task.parent()
    } else {
        s.parent
    };
    let tracker = Tracker::new(share, task, reaper, pidfd);
    Ok(Launched { tracker })
}
