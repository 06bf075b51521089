//! `Runtime` and `RuntimeBuilder`: one simulated "kernel" plus the executor its task
//! bodies run on, and the per-thread shares of a runtime its spawned tasks hold.
//!
//! # Per-thread shares: no shared count touched per spawn
//!
//! A spawned task's tracker must keep its runtime alive (its body may call
//! `cx.runtime()` or spawn after the user dropped every handle). Cloning the
//! `Runtime` for each tracker would cost two read-modify-writes per spawn on the one
//! count every worker thread shares. Instead each thread that spawns gets one
//! [`RtShare`] (a `Runtime` handle of its own, made once), and trackers clone *that*:
//! its count lives on a line only the spawning thread writes in the common case.
//!
//! ```text
//!  user handles: Runtime { user: true }  --count-->  RtInner.shares (a UserList)
//!  RtInner.shares: [Arc<RtShare>, ...]   (one per thread that spawned, while users > 0)
//!  thread-locals LAST: Weak<RtShare>     (the fast path: upgrade, no shared line)
//!                SHARES: [Weak<RtShare>] (one per runtime the thread spawned on)
//!  Tracker.rt: Arc<RtShare>  --> RtShare { rt: Runtime { user: false } } --> RtInner
//! ```
//!
//! The shares must not keep the runtime alive once nothing else does: the list counts
//! the user handles only (every `Runtime` a caller holds, clones included); when the
//! last one is dropped, the list is emptied, and the shares live on only as long as
//! the trackers (running or unwaited tasks) that hold them. A share is listed only
//! while there are users, decided under the list's mutex, so a share made while the
//! last user handle goes away is never left listed (where it would hold the runtime
//! forever): the protocol and its loom model are in `users.rs`.

use crate::child::Child;
use crate::cx::TaskCx;
use crate::executor::{DynExecutor, Executor, ThreadExecutor};
use crate::spawn::{Spawn, launch};
use crate::users::UserList;
use std::cell::RefCell;
use std::fmt;
use std::sync::{Arc, Weak};
use uproc_abi::lockstat::LockStat;
use uproc_abi::{Errno, PidfdFlags, Profile};
use uproc_cgroup::Cgroup;
use uproc_pidfs::{FileHandle, PidFd};
use uproc_pidns::{PID_MAX_DEFAULT, PID_MAX_LIMIT, PID_MAX_MIN};
use uproc_tasklist::{System, SystemConfig, Task};

/// A uproc runtime: a root pid namespace with its init (pid 1), pidfs, a cgroup
/// hierarchy, the task list, and an [`Executor`] for task bodies.
///
/// A cheap handle (`Arc`): clones share the runtime; `==` compares identity.
/// `Send + Sync`. The runtime lives as long as any handle, task context or child does.
///
/// ```
/// use uproc::{Profile, Runtime};
/// let rt = Runtime::builder().profile(Profile::Linux618).pid_max(1000).build()?;
/// assert_eq!(rt.init().pid(), 1);
/// assert_eq!(rt.profile(), Profile::Linux618);
/// assert_eq!(rt.clone(), rt);
/// assert_eq!(Runtime::builder().pid_max(10).build().unwrap_err(), uproc::Errno::EINVAL);
/// # Ok::<(), uproc::Errno>(())
/// ```
pub struct Runtime {
    inner: Arc<RtInner>,
    /// Whether this handle counts in `RtInner::users`: every handle a caller holds
    /// does; the one inside an [`RtShare`] does not (see the module docs).
    user: bool,
}

struct RtInner {
    system: Arc<System>,
    executor: DynExecutor,
    #[cfg(feature = "tokio")]
    tokio: Option<::tokio::runtime::Handle>,
    /// The user handles alive, and the per-thread shares listed while there are any
    /// (one per thread that spawned).
    shares: UserList<Arc<RtShare>>,
}

/// One thread's share of a runtime: what a spawned task's tracker holds instead of a
/// `Runtime` clone, so that spawning touches no count other threads write.
pub(crate) struct RtShare {
    rt: Runtime,
    /// Dead once the thread that made the share ended: the runtime's list then drops
    /// the share at its next prune (the trackers holding it keep it alive as needed).
    thread: Weak<()>,
    /// The runtime's init, the default parent: a spawn from it borrows this handle and
    /// its tracker holds none, so that default-parent spawns do not write init's count,
    /// which every worker would share.
    pub(crate) init: Task,
}

impl RtShare {
    /// The runtime this share keeps alive.
    pub(crate) fn runtime(&self) -> &Runtime {
        &self.rt
    }
}

thread_local! {
    /// This thread's share of the runtime it last spawned on: the fast path (weak:
    /// the thread keeps no runtime alive; the runtime's list keeps the shares).
    static LAST: RefCell<Weak<RtShare>> = const { RefCell::new(Weak::new()) };
    /// This thread's shares of every runtime it spawned on, for the slow path.
    static SHARES: RefCell<Vec<Weak<RtShare>>> = const { RefCell::new(Vec::new()) };
    /// Alive as long as this thread: its shares hold it weakly.
    static THREAD: Arc<()> = Arc::new(());
}

impl Clone for Runtime {
    /// Another user handle (even when cloned from the one `TaskCx::runtime` lends).
    fn clone(&self) -> Runtime {
        self.inner.shares.add_user();
        Runtime {
            inner: Arc::clone(&self.inner),
            user: true,
        }
    }
}

impl Drop for Runtime {
    /// The last user handle empties the shares list, so that the shares (and through
    /// them the runtime) live only as long as the trackers that hold them.
    fn drop(&mut self) {
        if self.user {
            // Dropped outside the list's mutex; `self.inner` outlives this call, so
            // the runtime is not freed here.
            drop(self.inner.shares.drop_user());
        }
    }
}

impl PartialEq for Runtime {
    fn eq(&self, other: &Runtime) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for Runtime {}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("profile", &self.profile())
            .field("tasks", &self.inner.system.nr_tasks())
            .field("executor", &self.inner.executor)
            .finish()
    }
}

/// Configures a [`Runtime`]: `Runtime::builder().profile(..).pid_max(..).build()`.
pub struct RuntimeBuilder {
    profile: Profile,
    pid_max: i32,
    reap_orphans: bool,
    executor: Option<Box<dyn Executor>>,
    #[cfg(feature = "tokio")]
    tokio: Option<::tokio::runtime::Handle>,
}

impl fmt::Debug for RuntimeBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeBuilder")
            .field("profile", &self.profile)
            .field("pid_max", &self.pid_max)
            .field("reap_orphans", &self.reap_orphans)
            .field("custom_executor", &self.executor.is_some())
            .finish()
    }
}

impl RuntimeBuilder {
    /// The lock profile (default [`Profile::Linux70`]).
    pub fn profile(mut self, p: Profile) -> Self {
        self.profile = p;
        self
    }

    /// The root namespace's `pid_max` (default 32768; `build` fails with `EINVAL`
    /// outside `301..=4194304`, as `/proc/sys/kernel/pid_max` does).
    pub fn pid_max(mut self, n: i32) -> Self {
        self.pid_max = n;
        self
    }

    /// Whether init reaps the orphans reparented to it (default `true`). With `false`
    /// they stay zombies until the caller waits for them from `rt.init()`.
    pub fn reap_orphans(mut self, on: bool) -> Self {
        self.reap_orphans = on;
        self
    }

    /// The executor task bodies run on (default [`ThreadExecutor`]). The last one given
    /// wins, for async bodies too.
    pub fn executor<E: Executor>(mut self, e: E) -> Self {
        #[cfg(feature = "tokio")]
        {
            // A tokio executor given before this one is replaced, its handle with it.
            self.tokio = None;
            let any: &dyn std::any::Any = &e;
            if let Some(t) = any.downcast_ref::<crate::tokio::TokioExecutor>() {
                self.tokio = Some(t.handle().clone());
            }
        }
        self.executor = Some(Box::new(e));
        self
    }

    /// Creates the runtime: the root namespace, init (pid 1, in the root cgroup), pidfs
    /// and the cgroup hierarchy. `EINVAL` for a bad `pid_max`.
    pub fn build(self) -> Result<Runtime, Errno> {
        if !(PID_MAX_MIN..=PID_MAX_LIMIT).contains(&self.pid_max) {
            return Err(Errno::EINVAL);
        }
        let system = System::new(SystemConfig {
            profile: self.profile,
            pid_max: self.pid_max,
            reap_orphans: self.reap_orphans,
        })?;
        // Linux's `current` where a call names no task (a `cgroup.procs` write of 0):
        // the task whose body runs on the calling thread. (A fresh system: set once.)
        let _fresh = system.set_current(|| crate::cx::current().map(|cx| cx.task().clone()));
        let executor = self
            .executor
            .unwrap_or_else(|| Box::new(ThreadExecutor::new()));
        if let Some(hooks) = executor.coroutine_hooks() {
            crate::coroutine::register_coroutine_hooks(hooks);
        }
        tracing::debug!(target: "uproc", profile = %self.profile, pid_max = self.pid_max, "runtime built");
        Ok(Runtime {
            inner: Arc::new(RtInner {
                system,
                executor: DynExecutor(executor),
                #[cfg(feature = "tokio")]
                tokio: self.tokio,
                shares: UserList::new(),
            }),
            user: true,
        })
    }
}

impl Runtime {
    /// A builder with the defaults: `Linux70`, `pid_max` 32768, `reap_orphans(true)`,
    /// [`ThreadExecutor`].
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder {
            profile: Profile::default(),
            pid_max: PID_MAX_DEFAULT,
            reap_orphans: true,
            executor: None,
            #[cfg(feature = "tokio")]
            tokio: None,
        }
    }

    /// A runtime with every default.
    pub fn new() -> Result<Runtime, Errno> {
        Runtime::builder().build()
    }

    /// Pid 1 of the root namespace: the parent of spawned tasks by default and the
    /// reaper of orphans.
    pub fn init(&self) -> Task {
        self.inner.system.init()
    }

    /// The root of the cgroup hierarchy (`/`).
    pub fn cgroup_root(&self) -> Cgroup {
        self.inner.system.cgroup_root()
    }

    /// `open_by_handle_at(2)` for a pidfs file handle, as `caller` (whose namespace
    /// decides visibility).
    ///
    /// # References
    /// [open_by_handle_at(2)](https://man7.org/linux/man-pages/man2/open_by_handle_at.2.html)
    pub fn open_by_handle(
        &self,
        caller: &Task,
        h: &FileHandle,
        flags: PidfdFlags,
    ) -> Result<PidFd, Errno> {
        self.inner.system.open_by_handle(caller, h, flags)
    }

    /// Runs `body` as a new task: fork from the [`Spawn`]'s parent (default
    /// [`init`](Runtime::init)) with its clone arguments, managed
    /// ([`Task::fork_managed`](uproc_tasklist::Task::fork_managed): a fatal signal is
    /// made pending for the body), and hand the body to the executor. When the body returns `code`, the task exits with
    /// it, unless a fatal signal is pending (then it ends killed by that signal). A
    /// panic ends the task as killed by `SIGABRT`. The return is a thread's exit, not
    /// `exit_group`: a thread the body forked and left running ends the process later,
    /// and (as in Linux) the last thread's code is then what the parent reaps.
    ///
    /// Errors are fork's (`EAGAIN` over a pids.max, `ENOMEM` in a dead namespace,
    /// `EINVAL` for bad flags, ...); on error the body is dropped unrun and nothing
    /// was created.
    ///
    /// # References
    /// [clone3(2)](https://man7.org/linux/man-pages/man2/clone3.2.html)
    pub fn spawn<F>(&self, s: Spawn, body: F) -> Result<Child, Errno>
    where
        F: FnOnce(&TaskCx) -> i32 + Send + 'static,
    {
        let launched = launch(self, s)?;
        let (child, job) = launched.into_sync_job(body);
        self.inner.executor.0.execute(job);
        Ok(child)
    }

    /// `ps`: every task not yet reaped, as the root namespace sees it, in pid order.
    pub fn ps(&self) -> Vec<crate::ProcInfo> {
        crate::ps::ps_in(self, self.inner.system.root_ns())
    }

    /// `ps` from inside `ns`: only the tasks visible there, numbered as `ns` sees them.
    pub fn ps_in(&self, ns: &Arc<uproc_pidns::PidNamespace>) -> Vec<crate::ProcInfo> {
        crate::ps::ps_in(self, ns)
    }

    /// `pstree -pn`: the task tree as text. See [`pstree`](crate::ps::pstree).
    pub fn pstree(&self) -> String {
        crate::ps::pstree(&self.ps())
    }

    /// The lock profile.
    pub fn profile(&self) -> Profile {
        self.inner.system.profile()
    }

    /// Acquisitions of the global locks (`pidmap_lock`, `tasklist_lock`,
    /// `css_set_lock`, and `Scalable`'s per-namespace `pidns_pool_lock` summed); zeros
    /// unless the `lockstat` feature is on.
    pub fn lock_stats(&self) -> Vec<LockStat> {
        self.inner.system.lock_stats()
    }

    /// The task list underneath (the "kernel"), for what the facade does not wrap.
    pub fn system(&self) -> &Arc<System> {
        &self.inner.system
    }

    /// This thread's share of the runtime, for a tracker to hold: an upgrade of the
    /// thread-local weak handle, a count no other thread writes (see the module docs).
    #[inline(always)]
    pub(crate) fn share(&self) -> Arc<RtShare> {
        let cached = LAST.try_with(|s| s.borrow().upgrade()).ok().flatten();
        match cached {
            Some(share) if Arc::ptr_eq(&share.rt.inner, &self.inner) => share,
            _ => self.share_slow(),
        }
    }

    /// The first spawn of this thread on this runtime, or one after spawning on
    /// another: find the thread's share of it, or make and list one.
    #[cold]
    fn share_slow(&self) -> Arc<RtShare> {
        let mine = |s: &Arc<RtShare>| Arc::ptr_eq(&s.rt.inner, &self.inner);
        let found = SHARES.try_with(|cache| {
            let mut cache = cache.borrow_mut();
            cache.retain(|w| w.strong_count() > 0);
            cache.iter().find_map(|w| w.upgrade().filter(|s| mine(s)))
        });
        let remember = |share: &Arc<RtShare>| {
            let _ = LAST.try_with(|last| *last.borrow_mut() = Arc::downgrade(share));
        };
        let thread = match found {
            Ok(Some(share)) => {
                remember(&share);
                return share;
            }
            Ok(None) => THREAD.try_with(Arc::downgrade).unwrap_or_default(),
            Err(_) => Weak::new(),
        };
        let share = Arc::new(RtShare {
            rt: self.uncounted(),
            thread,
            init: self.init(),
        });
        // Listed only while a user handle exists (see `users.rs`); the shares of ended
        // threads pruned meanwhile are dropped here, outside the list's mutex (the
        // caller's handle keeps the runtime itself alive).
        let pruned = self
            .inner
            .shares
            .list_if_used(Arc::clone(&share), |s| s.thread.strong_count() == 0);
        drop(pruned);
        let _ = SHARES.try_with(|cache| cache.borrow_mut().push(Arc::downgrade(&share)));
        remember(&share);
        share
    }

    /// A handle that does not count as a user's.
    fn uncounted(&self) -> Runtime {
        Runtime {
            inner: Arc::clone(&self.inner),
            user: false,
        }
    }

    /// The executor task bodies run on.
    pub(crate) fn executor(&self) -> &dyn Executor {
        &*self.inner.executor.0
    }

    /// The tokio runtime of the executor, when it is a `TokioExecutor`.
    #[cfg(feature = "tokio")]
    pub(crate) fn executor_tokio_handle(&self) -> Option<&::tokio::runtime::Handle> {
        self.inner.tokio.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::Runtime;
    use crate::Spawn;

    #[test]
    fn the_share_list_keeps_about_the_live_threads_not_every_thread_that_spawned() {
        let rt = Runtime::new().unwrap();
        for _ in 0..200 {
            std::thread::scope(|s| {
                s.spawn(|| {
                    let child = rt.spawn(Spawn::new(), |_| 0).unwrap();
                    assert_eq!(child.wait().unwrap().exited(), Some(0));
                });
            });
        }
        let listed = rt.inner.shares.len();
        assert!(
            listed <= 16,
            "{listed} shares listed after 200 threads that each spawned once and ended"
        );
        // The spawning thread of the next spawn finds its own share again.
        let c = rt.spawn(Spawn::new(), |_| 1).unwrap();
        assert_eq!(c.wait().unwrap().exited(), Some(1));
        let c = rt.spawn(Spawn::new(), |_| 2).unwrap();
        assert_eq!(c.wait().unwrap().exited(), Some(2));
        assert!(rt.inner.shares.len() <= listed + 1, "one share per thread");
    }
}
