//! The smol executor (feature `smol`): the async side of uproc on a runtime that is
//! not tokio.
//!
//! [`SmolExecutor`] runs async bodies ([`Runtime::spawn_async`](crate::Runtime::spawn_async))
//! as smol tasks, on a `smol::Executor` you drive or on smol's global executor, and
//! synchronous bodies on smol's blocking thread pool (`smol::unblock`). Nothing in it
//! is smol-specific beyond spawning: a [`Child`](crate::Child), a
//! [`ChildSet`](crate::ChildSet)'s `join_next` and [`PidFd::readable`](crate::PidFd::readable)
//! are plain futures, woken by the task's exit, that any executor can await.
//!
//! ```
//! use std::sync::{Arc, Weak};
//! use uproc::{Runtime, Spawn, smol::SmolExecutor};
//!
//! let ex = Arc::new(smol::Executor::new());
//! let rt = Runtime::builder().executor(SmolExecutor::new(&ex)).build()?;
//! let status = smol::block_on(ex.run(async {
//!     let child = rt.spawn_async(Spawn::new(), |cx| async move {
//!         smol::future::yield_now().await;
//!         (uproc::current().unwrap().pid() == cx.pid()) as i32
//!     })?;
//!     child.await
//! }))?;
//! assert_eq!(status.exited(), Some(1));
//! # Ok::<(), uproc::Errno>(())
//! ```

use crate::executor::{AsyncJob, Executor};
use std::fmt;
use std::sync::{Arc, Weak};

/// Runs async bodies as smol tasks and synchronous bodies on smol's blocking pool.
///
/// It holds a `smol::Executor` weakly, as a tokio `Handle` refers to a tokio runtime:
/// the caller owns the executor. (A strong reference would make a cycle: the executor
/// holds the tasks, a task holds its runtime, the runtime holds this.) When the
/// executor is dropped with tasks unfinished, their bodies are dropped and those tasks
/// end killed by `SIGKILL`; an async body spawned after it is gone is killed at once
/// (a synchronous one still runs, on smol's global blocking pool). Both are what any
/// executor that drops a job does.
#[derive(Clone, Default)]
pub struct SmolExecutor {
    /// `None`: smol's global executor (`smol::spawn`).
    executor: Option<Weak<smol::Executor<'static>>>,
}

impl SmolExecutor {
    /// Spawns async bodies on `executor`; the caller runs it (`executor.run(..)` on one
    /// or more threads), as usual with smol.
    pub fn new(executor: &Arc<smol::Executor<'static>>) -> SmolExecutor {
        SmolExecutor {
            executor: Some(Arc::downgrade(executor)),
        }
    }

    /// Spawns async bodies on smol's global executor (`smol::spawn`), which runs on
    /// threads of its own (`SMOL_THREADS`, default one).
    pub fn global() -> SmolExecutor {
        SmolExecutor { executor: None }
    }
}

impl Executor for SmolExecutor {
    fn execute(&self, job: Box<dyn FnOnce() + Send>) {
        smol::unblock(job).detach();
    }

    fn runs_futures(&self) -> bool {
        true
    }

    fn execute_async(&self, job: AsyncJob) {
        match &self.executor {
            None => smol::spawn(job).detach(),
            Some(weak) => match weak.upgrade() {
                Some(ex) => ex.spawn(job).detach(),
                None => {
                    tracing::warn!(target: "uproc", "SmolExecutor: the smol executor is gone; task killed");
                    drop(job);
                }
            },
        }
    }
}

impl fmt::Debug for SmolExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmolExecutor")
            .field("global", &self.executor.is_none())
            .finish()
    }
}
