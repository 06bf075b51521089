//! What the `Executor` trait promises an implementer and a user: jobs an executor drops
//! end their tasks as killed; `spawn_async` asks `runs_futures` before forking; the
//! coroutine hooks decide where `current()` lives.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Waker;
use uproc::{
    AsyncJob, CoroutineHooks, CurrentSlot, Errno, Executor, Runtime, Signal, Spawn,
    register_coroutine_hooks,
};

/// Claims to run futures but keeps the default `execute_async`, which drops the job.
struct DropsFutures;

impl Executor for DropsFutures {
    fn execute(&self, job: Box<dyn FnOnce() + Send>) {
        job();
    }
    fn runs_futures(&self) -> bool {
        true
    }
}

#[test]
fn an_async_job_the_executor_drops_ends_the_task_killed_and_leaks_nothing() {
    let rt = Runtime::builder().executor(DropsFutures).build().unwrap();
    let child = rt.spawn_async(Spawn::new(), |_| async { 0 }).unwrap();
    assert_eq!(child.wait().unwrap().signaled(), Some(Signal::KILL));
    assert_eq!(rt.ps().len(), 1);
    assert_eq!(rt.init().pid_ns().nr_allocated(), 1);
}

/// Keeps async jobs for the test to run by hand.
#[derive(Clone, Default)]
struct Queue(Arc<Mutex<Vec<AsyncJob>>>);

impl Executor for Queue {
    fn execute(&self, job: Box<dyn FnOnce() + Send>) {
        job();
    }
    fn runs_futures(&self) -> bool {
        true
    }
    fn execute_async(&self, job: AsyncJob) {
        self.0.lock().unwrap().push(job);
    }
}

#[test]
fn spawn_async_hands_the_job_to_execute_async_and_a_kill_before_the_first_poll_wins() {
    let q = Queue::default();
    let rt = Runtime::builder().executor(q.clone()).build().unwrap();
    let child = rt
        .spawn_async(Spawn::new(), |_| async {
            panic!("a killed task never runs its body")
        })
        .unwrap();
    assert_eq!(q.0.lock().unwrap().len(), 1, "one job per task");
    child.kill().unwrap();
    let mut job = q.0.lock().unwrap().pop().unwrap();
    let mut cx = std::task::Context::from_waker(Waker::noop());
    assert!(job.as_mut().poll(&mut cx).is_ready());
    assert_eq!(child.wait().unwrap().signaled(), Some(Signal::KILL));
}

/// Runs the job `q` holds to its end with a no-op waker (its body never waits).
fn run_queued(q: &Queue) {
    let mut job = q.0.lock().unwrap().pop().expect("a queued job");
    let mut cx = std::task::Context::from_waker(Waker::noop());
    assert!(job.as_mut().poll(&mut cx).is_ready());
}

#[test]
fn an_async_body_polled_inside_another_ones_poll_is_current_there_and_gives_it_back() {
    let q = Queue::default();
    let rt = Runtime::builder().executor(q.clone()).build().unwrap();
    let (q2, rt2) = (q.clone(), rt.clone());
    let outer = rt
        .spawn_async(Spawn::new(), move |cx| async move {
            let me = Some(cx.pid());
            let seen = || uproc::current().map(|c| c.pid());
            // A second job polled to its end inside this body's poll: while it runs,
            // `current()` is that task; after it, this one again.
            let inner = rt2
                .spawn_async(Spawn::new(), |icx| async move {
                    (uproc::current().map(|c| c.pid()) == Some(icx.pid())) as i32
                })
                .unwrap();
            run_queued(&q2);
            let inner_saw_itself = inner.wait().unwrap().exited() == Some(1);
            let back_after_inner = seen() == me;
            // One whose body panics: contained, and this task is current again.
            let panics = rt2
                .spawn_async(Spawn::new(), |_| async { panic!("inner body panics") })
                .unwrap();
            run_queued(&q2);
            let panicked = panics.wait().unwrap().signaled() == Some(Signal::ABRT);
            let back_after_panic = seen() == me;
            i32::from(inner_saw_itself)
                | i32::from(back_after_inner) << 1
                | i32::from(panicked) << 2
                | i32::from(back_after_panic) << 3
        })
        .unwrap();
    run_queued(&q);
    assert_eq!(outer.wait().unwrap().exited(), Some(0b1111));
    assert!(uproc::current().is_none(), "nothing is left current");
    assert_eq!(rt.ps().len(), 1, "every task was reaped");
}

#[test]
fn spawn_async_is_einval_before_forking_without_a_future_executor() {
    // Runs without the tokio feature's fallback only when no tokio runtime is current:
    // this test thread is in none.
    let rt = Runtime::new().unwrap();
    let err = rt.spawn_async(Spawn::new(), |_| async { 0 }).unwrap_err();
    assert_eq!(err, Errno::EINVAL);
    assert_eq!(rt.ps().len(), 1, "nothing forked");
}

thread_local! {
    /// A stand-in for "this thread is running one of the fake runtime's coroutines".
    static IN_FAKE: Cell<bool> = const { Cell::new(false) };
}

/// Hooks whose "coroutines" are threads with `IN_FAKE` set, each with a slot of its
/// own (`FAKE_SLOT`, distinct from uproc's thread-local), counting how often uproc
/// asked for it, so the test can tell which storage `current()` read.
struct FakeHooks {
    slot_calls: AtomicUsize,
}

thread_local! {
    static FAKE_SLOT: CurrentSlot = const { CurrentSlot::new() };
}

impl CoroutineHooks for FakeHooks {
    fn in_coroutine(&self) -> bool {
        IN_FAKE.with(Cell::get)
    }
    fn current_slot(&self, f: &mut dyn FnMut(&CurrentSlot)) {
        self.slot_calls.fetch_add(1, Ordering::SeqCst);
        FAKE_SLOT.with(|s| f(s));
    }
    fn waker(&self) -> Waker {
        Waker::noop().clone()
    }
    fn park(&self) {
        std::thread::yield_now();
    }
}

static FAKE: FakeHooks = FakeHooks {
    slot_calls: AtomicUsize::new(0),
};

#[test]
fn registered_hooks_decide_where_current_lives_and_registering_twice_is_harmless() {
    register_coroutine_hooks(&FAKE);
    register_coroutine_hooks(&FAKE);
    let rt = Runtime::new().unwrap();
    // Outside a fake coroutine: uproc's thread-local, and no hook call.
    let calls = || FAKE.slot_calls.load(Ordering::SeqCst);
    let before = calls();
    let child = rt
        .spawn(Spawn::new(), |cx| {
            (uproc::current().map(|c| c.pid()) == Some(cx.pid())) as i32
        })
        .unwrap();
    assert_eq!(child.wait().unwrap().exited(), Some(1));
    assert_eq!(calls(), before, "no hook call outside a coroutine");
    // Inside one, current() reads the hooks' slot: empty here, since the job entered
    // the body (through the thread-local) before this thread "became" a coroutine.
    let child = rt
        .spawn(Spawn::new(), move |_| {
            IN_FAKE.with(|f| f.set(true));
            let c0 = FAKE.slot_calls.load(Ordering::SeqCst);
            let seen = uproc::current();
            let c1 = FAKE.slot_calls.load(Ordering::SeqCst);
            IN_FAKE.with(|f| f.set(false));
            (seen.is_none() && c1 == c0 + 1) as i32
        })
        .unwrap();
    assert_eq!(
        child.wait().unwrap().exited(),
        Some(1),
        "current() in a coroutine reads the coroutine's slot, once"
    );
}
