//! # uproc-may: task bodies as `may` stackful coroutines
//!
//! [`MayExecutor`] is a uproc [`Executor`] that runs each task body as a coroutine of
//! [`may`], a stackful-coroutine runtime: a body is ordinary blocking-style Rust code
//! with a stack of its own (tens of KiB, not an OS thread), so ten thousand tasks are
//! ten thousand coroutines multiplexed on a few worker threads.
//!
//! ```
//! use uproc::{Runtime, Spawn};
//! use uproc_may::MayExecutor;
//!
//! let rt = Runtime::builder().executor(MayExecutor::new()).build()?;
//! let child = rt.spawn(Spawn::new().name("co"), |cx| {
//!     may::coroutine::yield_now();                    // another coroutine may run here
//!     let me = uproc::current().expect("in a body");  // still this task
//!     (me.pid() == cx.pid()) as i32
//! })?;
//! assert_eq!(child.wait()?.exited(), Some(1));
//! # Ok::<(), uproc::Errno>(())
//! ```
//!
//! ## What changes when bodies share OS threads
//!
//! Two things a thread-per-task executor gets for free need help here, and the
//! executor provides it through [`CoroutineHooks`] ([`HOOKS`]), which building a
//! runtime on it registers with uproc:
//!
//! - **[`uproc::current()`] per coroutine.** A coroutine can yield anywhere (a may
//!   channel, sleep, a child wait) and another coroutine runs on its worker; with
//!   work stealing it can resume on another worker. uproc's thread-local "current
//!   task" would then be wrong for both. The hooks give uproc a coroutine-local
//!   [`CurrentSlot`] (`may::coroutine_local!`), which travels with the coroutine.
//! - **Waits park the coroutine, not the worker.** [`Child::wait`](uproc::Child::wait)
//!   and [`ChildSet::wait_next`](uproc::ChildSet::wait_next) called from a coroutine
//!   await the child's exit future with a waker that unparks the coroutine
//!   (`Coroutine::unpark`) and park it (`may::coroutine::park`) in between, so the
//!   other coroutines of that worker keep running. Outside coroutines they block the
//!   thread as usual.
//!
//! Coroutines that this executor did not spawn (your own `go!`s) get the same
//! behaviour once the hooks are registered: build a runtime on a `MayExecutor`, or
//! call `uproc::register_coroutine_hooks(&uproc_may::HOOKS)`.
//!
//! ## What a body must not do
//!
//! may's rule for all coroutine code applies to bodies: do not keep a reference into
//! thread-local storage across a point where the coroutine can be suspended (a may
//! blocking call, a child wait), since the coroutine may resume on another thread; and
//! do not block the worker thread with OS-level waits (`std::sync::Mutex` contention,
//! `std::thread::sleep`, [`PidFd::wait_readable`](uproc::PidFd::wait_readable)) where a
//! may primitive or a child wait would park only the coroutine. The facade keeps the
//! first rule itself: its `task` tracing span is not held entered across a body that
//! runs in a coroutine, since tracing keeps the entered span stack per thread.
//!
//! ## Bodies that sleep
//!
//! may 0.3.51 frees a finished coroutine's state when nothing else holds it, and a
//! coroutine whose sleep timer fires at once can finish on one worker while the worker
//! that registered the timer still writes to that state: a detached coroutine that
//! sleeps can corrupt the heap (plain may shows it too). The executor therefore keeps
//! each body coroutine's join handle until a while after the coroutine was seen done,
//! so bodies may use `may::coroutine::sleep` and other timers freely
//! (`tests/sleeping_bodies.rs`). Coroutines you spawn yourself and detach are yours to
//! keep the same way.
//!
//! ## Configuration
//!
//! may's scheduler is process-wide and configured before its first use:
//! `may::config().set_workers(n)` (default: one worker per CPU) and
//! `.set_stack_size(words)` (default 0x1000 words, 32 KiB). [`MayExecutor::stack_size`]
//! sets the stack of task bodies only; a size other than may's configured one costs a
//! fresh stack per coroutine instead of one from may's pool.
#![deny(unsafe_code)]

use std::sync::{Arc, Mutex};
use std::task::{Wake, Waker};
use std::time::{Duration, Instant};
use uproc::{CoroutineHooks, CurrentSlot, Executor};

may::coroutine_local!(static SLOT: CurrentSlot = CurrentSlot::new());

/// Runs every task body as a `may` coroutine. See the crate docs.
#[derive(Clone, Debug, Default)]
pub struct MayExecutor {
    /// Stack size of body coroutines in machine words (may's unit); `None`: may's.
    stack_words: Option<usize>,
}

impl MayExecutor {
    /// An executor on may's process-wide scheduler, with may's default stack size.
    pub fn new() -> MayExecutor {
        MayExecutor::default()
    }

    /// Sets the stack size of body coroutines, in machine words (may counts stacks in
    /// `usize` words: 0x1000 words are 32 KiB on 64-bit targets).
    pub fn stack_size(mut self, words: usize) -> MayExecutor {
        self.stack_words = Some(words);
        self
    }
}

impl Executor for MayExecutor {
    fn execute(&self, job: Box<dyn FnOnce() + Send>) {
        let mut builder = may::coroutine::Builder::new();
        if let Some(words) = self.stack_words {
            builder = builder.stack_size(words);
        }
        #[allow(unsafe_code)] // the crate's one unsafe block
        // SAFETY: may makes spawning unsafe for two hazards of code running on a
        // coroutine. (1) Thread-local storage across a suspension point: the coroutine
        // can resume on another worker, or another coroutine can run on this one in
        // between, so a thread-local reached before the suspension is not the one
        // meant after it. uproc's part of `job` (run the body with `current()` set,
        // exit, reap) reaches thread-locals only in calls that complete before any
        // suspension: `current()` and its guard use `SLOT`, coroutine-local storage,
        // through `HOOKS` (registered when the runtime was built on this executor);
        // the `task` tracing span is not held entered in a coroutine; and the only
        // suspension point uproc adds, `HOOKS.park()` inside a child wait, is reached
        // with no thread-local borrowed. (2) Stack overflow: the `generator` crate
        // under may puts a guard page below every coroutine stack and aborts on a hit,
        // a crash rather than silent corruption. The body itself is the caller's code,
        // held to may's rule for coroutine code (the crate docs say so), the same
        // contract may's own safe `go!` macro offers.
        let spawned = unsafe { builder.spawn(job) };
        match spawned {
            // The job reports the exit itself; the handle is only kept (see `keep`).
            Ok(handle) => keep(handle),
            Err(e) => {
                // `spawn` dropped the job, which ended the task as killed.
                tracing::error!(target: "uproc_may", error = %e, "coroutine spawn failed; task killed");
            }
        }
    }

    fn coroutine_hooks(&self) -> Option<&'static dyn CoroutineHooks> {
        Some(&HOOKS)
    }
}

/// Join handles of body coroutines, kept past their coroutine's end: may 0.3.51 frees
/// a coroutine's state when the coroutine finishes and nothing else holds it, while a
/// worker that has just registered the coroutine's sleep timer may still be writing to
/// it (`Sleep::subscribe` racing `Done::subscribe` when the timer fires at once:
/// AddressSanitizer showed the heap use-after-free, and plain may coroutines that sleep
/// and are detached crash the same way, about once in 30 runs of
/// `tests/sleeping_bodies.rs`'s shape). A handle holds that state, so it is dropped
/// only once its coroutine has been seen done at an earlier pass ([`GRACE`] ago at
/// least). Pruned when the list has doubled since the last pass: amortised O(1) per
/// spawn.
struct Kept {
    /// Each handle, and when its coroutine was first seen done.
    handles: Vec<(may::coroutine::JoinHandle<()>, Option<Instant>)>,
    /// Prune when `handles` reaches this length.
    prune_at: usize,
}

/// How long a finished coroutine's handle outlives the moment it was seen done.
const GRACE: Duration = Duration::from_millis(100);

static KEPT: Mutex<Kept> = Mutex::new(Kept {
    handles: Vec::new(),
    prune_at: 64,
});

/// Keeps `handle` (see [`Kept`]).
fn keep(handle: may::coroutine::JoinHandle<()>) {
    let mut kept = KEPT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    kept.handles.push((handle, None));
    if kept.handles.len() >= kept.prune_at {
        let now = Instant::now();
        kept.handles.retain_mut(|(h, seen)| {
            if !h.is_done() {
                return true;
            }
            match seen {
                None => {
                    *seen = Some(now);
                    true
                }
                Some(at) => now.duration_since(*at) < GRACE,
            }
        });
        kept.prune_at = (kept.handles.len() * 2).max(64);
    }
}

/// may's [`CoroutineHooks`]: coroutine-local [`CurrentSlot`], unpark/park.
///
/// Register it with `uproc::register_coroutine_hooks(&uproc_may::HOOKS)` when
/// coroutines of your own (not bodies of a [`MayExecutor`]) read `uproc::current()`
/// or wait for children; building a runtime on a `MayExecutor` does it already.
pub static HOOKS: MayHooks = MayHooks { _private: () };

/// The type of [`HOOKS`].
#[derive(Debug)]
pub struct MayHooks {
    _private: (),
}

impl CoroutineHooks for MayHooks {
    fn in_coroutine(&self) -> bool {
        may::coroutine::is_coroutine()
    }

    fn current_slot(&self, f: &mut dyn FnMut(&CurrentSlot)) {
        SLOT.with(|slot| f(slot));
    }

    fn waker(&self) -> Waker {
        Waker::from(Arc::new(Unpark(may::coroutine::current())))
    }

    fn park(&self) {
        may::coroutine::park();
    }
}

/// Wakes a coroutine parked by [`MayHooks::park`].
struct Unpark(may::coroutine::Coroutine);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}
