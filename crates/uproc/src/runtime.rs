//! `Runtime` and `RuntimeBuilder`: one simulated "kernel" plus the executor its task
//! bodies run on.

use crate::child::Child;
use crate::cx::TaskCx;
use crate::executor::{DynExecutor, Executor, ThreadExecutor};
use crate::spawn::{Spawn, launch};
use std::fmt;
use std::sync::Arc;
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
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<RtInner>,
}

struct RtInner {
    system: Arc<System>,
    executor: DynExecutor,
    #[cfg(feature = "tokio")]
    tokio: Option<::tokio::runtime::Handle>,
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

    /// The executor task bodies run on (default [`ThreadExecutor`]).
    pub fn executor<E: Executor>(mut self, e: E) -> Self {
        #[cfg(feature = "tokio")]
        {
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
            }),
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
    /// [`init`](Runtime::init)) with its clone arguments, install the signal hook, and hand the body to the executor. When the body returns
    /// `code`, the task exits with it, unless a fatal signal is pending (then it ends
    /// killed by that signal). A panic ends the task as killed by `SIGABRT`.
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

    /// `pstree -p`: the task tree as text. See [`pstree`](crate::ps::pstree).
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
