//! Stackful coroutines: where `current()` lives and how a wait parks when task bodies
//! share OS threads.
//!
//! On the thread executor a body owns its OS thread, and on an async executor a body
//! is a future whose polls never block: for both, a thread-local "current task" set
//! around the body (or around each poll) is right, and a blocking wait blocks only the
//! body that asked. A *stackful* green-thread runtime (`may`, fibers) breaks both: many
//! coroutines run on one OS thread, each can yield in the middle of a body, and a
//! work-stealing scheduler resumes it on another thread. A thread-local would then name
//! whichever coroutine last set it, and a wait on a condition variable would stall
//! every coroutine of that worker.
//!
//! Such a runtime therefore lends uproc three things through [`CoroutineHooks`]
//! ([`Executor::coroutine_hooks`](crate::Executor::coroutine_hooks)): whether the
//! calling code is one of its coroutines, a per-coroutine [`CurrentSlot`] (its
//! coroutine-local storage), and a way to park the calling coroutine until a
//! [`Waker`] it handed out is woken. Building a [`Runtime`](crate::Runtime) on such an
//! executor registers its hooks here, process-wide, because [`current()`](crate::current)
//! and [`Child::wait`](crate::Child::wait) are called without a runtime at hand;
//! [`register_coroutine_hooks`] does it for code that waits from coroutines of a
//! runtime that is not the executor.
//!
//! Who touches what: `REGISTRY` is appended to (under its mutex, rarely: once per
//! distinct hooks value) and read by [`active`] on every `current()` and every entry
//! into a body; `ANY` lets that read cost one relaxed load while nothing is registered.

use crate::cx::TaskCx;
use parking_lot::RwLock;
use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;

/// What a stackful-coroutine runtime lends uproc so that [`current()`](crate::current)
/// and blocking waits are per coroutine, not per OS thread.
///
/// uproc calls [`current_slot`](Self::current_slot), [`waker`](Self::waker) and
/// [`park`](Self::park) only from code for which [`in_coroutine`](Self::in_coroutine)
/// returned true just before, on the same coroutine.
///
/// ```
/// use std::task::Waker;
/// use uproc::{CoroutineHooks, CurrentSlot};
///
/// /// A runtime with no coroutines at all: uproc falls back to its thread-local.
/// struct NoCoroutines;
/// impl CoroutineHooks for NoCoroutines {
///     fn in_coroutine(&self) -> bool { false }
///     fn current_slot(&self, _f: &mut dyn FnMut(&CurrentSlot)) { unreachable!() }
///     fn waker(&self) -> Waker { unreachable!() }
///     fn park(&self) { unreachable!() }
/// }
/// static HOOKS: NoCoroutines = NoCoroutines;
/// uproc::register_coroutine_hooks(&HOOKS);
/// assert!(uproc::current().is_none());
/// ```
pub trait CoroutineHooks: Send + Sync + 'static {
    /// Whether the calling code runs inside one of this runtime's coroutines.
    fn in_coroutine(&self) -> bool;

    /// Calls `f` with the calling coroutine's own slot: a [`CurrentSlot`] kept in
    /// coroutine-local storage, created empty on first use and dropped with the
    /// coroutine. It must follow the coroutine when it moves between OS threads.
    fn current_slot(&self, f: &mut dyn FnMut(&CurrentSlot));

    /// A waker that makes the calling coroutine runnable again (unparks it).
    fn waker(&self) -> Waker;

    /// Suspends the calling coroutine, not its OS thread, until a waker from
    /// [`waker`](Self::waker) is woken; returns at once if it was woken since the
    /// last `park` (a token, as `std::thread::park` has). Spurious returns are allowed.
    fn park(&self);
}

/// The "current task" of one coroutine (or of one OS thread): what
/// [`current()`](crate::current) returns there. Opaque: a [`CoroutineHooks`]
/// implementation only stores one per coroutine.
pub struct CurrentSlot {
    cx: RefCell<Option<TaskCx>>,
}

impl CurrentSlot {
    /// An empty slot (no task current).
    pub const fn new() -> CurrentSlot {
        CurrentSlot {
            cx: RefCell::new(None),
        }
    }

    #[inline]
    pub(crate) fn get(&self) -> Option<TaskCx> {
        self.cx.borrow().clone()
    }

    #[inline]
    pub(crate) fn replace(&self, cx: Option<TaskCx>) -> Option<TaskCx> {
        self.cx.replace(cx)
    }
}

impl Default for CurrentSlot {
    fn default() -> CurrentSlot {
        CurrentSlot::new()
    }
}

impl fmt::Debug for CurrentSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pid = self
            .cx
            .try_borrow()
            .ok()
            .and_then(|c| c.as_ref().map(TaskCx::pid));
        f.debug_struct("CurrentSlot").field("pid", &pid).finish()
    }
}

static ANY: AtomicBool = AtomicBool::new(false);
static REGISTRY: RwLock<Vec<&'static dyn CoroutineHooks>> = RwLock::new(Vec::new());

/// Makes `hooks` known to [`current()`](crate::current), [`Child::wait`](crate::Child::wait)
/// and [`ChildSet::wait_next`](crate::ChildSet::wait_next) for the rest of the process.
/// Registering the same `&'static` value again does nothing.
///
/// [`RuntimeBuilder::build`](crate::RuntimeBuilder::build) calls it for the executor's
/// hooks; call it yourself when coroutines of a runtime that is not the executor wait
/// for children (so that such a wait parks the coroutine, not its worker thread).
pub fn register_coroutine_hooks(hooks: &'static dyn CoroutineHooks) {
    let mut list = REGISTRY.write();
    let addr = |h: &&'static dyn CoroutineHooks| *h as *const dyn CoroutineHooks as *const ();
    if !list.iter().any(|h| addr(h) == addr(&hooks)) {
        list.push(hooks);
        ANY.store(true, Ordering::Release);
    }
}

/// The hooks of the coroutine the caller runs in, if it runs in one.
///
/// Asked around every body and every poll of an async body: inlined, so that a
/// process with no coroutine runtime registered pays one load for it.
#[inline]
pub(crate) fn active() -> Option<&'static dyn CoroutineHooks> {
    if !ANY.load(Ordering::Acquire) {
        return None;
    }
    active_registered()
}

/// [`active`] once some coroutine runtime is registered: asks each one.
#[cold]
fn active_registered() -> Option<&'static dyn CoroutineHooks> {
    REGISTRY.read().iter().copied().find(|h| h.in_coroutine())
}

/// Runs `fut` to completion on the calling coroutine (parked between polls) or, outside
/// any coroutine, on the calling thread (parked with `std::thread::park`).
pub(crate) fn block_on<F: Future>(fut: F) -> F::Output {
    match active() {
        Some(hooks) => poll_until_ready(fut, &hooks.waker(), || hooks.park()),
        None => poll_until_ready(
            fut,
            &Waker::from(Arc::new(ThreadWaker(std::thread::current()))),
            std::thread::park,
        ),
    }
}

fn poll_until_ready<F: Future>(fut: F, waker: &Waker, mut park: impl FnMut()) -> F::Output {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(waker);
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
        park();
    }
}

/// Wakes a thread parked in [`block_on`].
struct ThreadWaker(Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}
