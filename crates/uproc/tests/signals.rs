//! Signals and bodies: panic containment, SIGKILL of a sync body (cooperative) and of an
//! async body (dropped at its next await), fatal signals pending at return (mirrors the
//! kernel's `pidfd_test` signal cases at the facade level).

#[macro_use]
mod common;

use common::builders;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc::channel;
use uproc::{Signal, Spawn};

fn a_panicking_body_ends_killed_by_sigabrt_and_the_runtime_goes_on() {
    for (name, b, _g) in builders() {
        let rt = b.build().unwrap();
        let st = rt
            .spawn(Spawn::new(), |_| panic!("deliberate test panic"))
            .unwrap()
            .wait()
            .unwrap();
        assert_eq!(
            st.signaled(),
            Some(Signal::ABRT),
            "{name}: abort() kills with SIGABRT"
        );
        assert!(
            !st.core_dumped(),
            "{name}: no core file without a core limit (the init's default)"
        );
        // The runtime keeps working.
        let st = rt.spawn(Spawn::new(), |_| 4).unwrap().wait().unwrap();
        assert_eq!(st.exited(), Some(4), "{name}: the next spawn works");
        assert_eq!(rt.ps().len(), 1);
    }
}

/// A value whose `Drop` panics: a panic payload of it, or a body holding it.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic!("deliberate test panic in Drop");
    }
}

/// `std::panic::panic_any(PanicsOnDrop)`: the payload's own drop panics a second time,
/// and the crash is still the body's (Linux: one abort, one SIGABRT).
fn a_panic_payload_whose_drop_panics_still_ends_the_task_by_sigabrt() {
    for (name, b, _g) in builders() {
        let rt = b.build().unwrap();
        let st = rt
            .spawn(Spawn::new(), |_| std::panic::panic_any(PanicsOnDrop))
            .unwrap()
            .wait()
            .unwrap();
        assert_eq!(st.signaled(), Some(Signal::ABRT), "{name}");
        let st = rt.spawn(Spawn::new(), |_| 5).unwrap().wait().unwrap();
        assert_eq!(st.exited(), Some(5), "{name}: the runtime goes on");
        assert_eq!(rt.ps().len(), 1, "{name}: nothing is left behind");
    }
}

/// A sync body whose captured value panics when the call drops it crashed in its own
/// code: SIGABRT, not the exit code it was about to return.
fn a_sync_body_whose_captures_panic_on_drop_ends_by_sigabrt() {
    for (name, b, _g) in builders() {
        let rt = b.build().unwrap();
        let held = PanicsOnDrop;
        let st = rt
            .spawn(Spawn::new(), move |_| {
                let _held = held;
                3
            })
            .unwrap()
            .wait()
            .unwrap();
        assert_eq!(st.signaled(), Some(Signal::ABRT), "{name}");
    }
}

fn sigkill_reaches_a_sync_body_through_signal_pending_and_ends_it_killed() {
    for (name, b, _g) in builders() {
        let rt = b.build().unwrap();
        let (tx, rx) = channel();
        let seen = Arc::new(AtomicI32::new(0));
        let s = seen.clone();
        let child = rt
            .spawn(Spawn::new(), move |cx| {
                tx.send(()).unwrap();
                loop {
                    if let Some(sig) = cx.signal_pending() {
                        s.store(sig.raw(), Ordering::SeqCst);
                        return 0; // returns normally, but SIGKILL is pending
                    }
                    std::thread::yield_now();
                }
            })
            .unwrap();
        rx.recv().unwrap();
        child.kill().unwrap();
        let st = child.wait().unwrap();
        assert_eq!(
            seen.load(Ordering::SeqCst),
            Signal::KILL.raw(),
            "{name}: body saw SIGKILL"
        );
        assert_eq!(
            st.signaled(),
            Some(Signal::KILL),
            "{name}: a SIGKILLed task reports WTERMSIG 9"
        );
    }
}

fn sigterm_pending_when_the_body_returns_ends_the_task_killed_by_sigterm() {
    let rt = common::builder().build().unwrap();
    let (tx, rx) = channel();
    let child = rt
        .spawn(Spawn::new(), move |cx| {
            tx.send(()).unwrap();
            while cx.signal_pending() != Some(Signal::TERM) {
                std::thread::yield_now();
            }
            0
        })
        .unwrap();
    rx.recv().unwrap();
    rt.init().kill(child.pid(), Signal::TERM).unwrap();
    assert_eq!(
        child.wait().unwrap().signaled(),
        Some(Signal::TERM),
        "SIGTERM's default action terminates"
    );
}

/// Two fatal signals to a running body before it looks: a core-dumping first one
/// starts no group exit in Linux until a thread dequeues it, so the process dies of
/// whichever is dequeued first (the thread's own set, then the shared one; the
/// synchronous signals, then the lowest number); a first one that does not dump core
/// decides at once. Measured on Linux 6.18 with the target asleep. The body sees the
/// signal it dies of through `signal_pending`.
fn two_fatal_signals_end_a_body_as_linux_dequeues_them() {
    let cases = [
        (Signal::SEGV, false, Signal::HUP, Signal::SEGV),
        (Signal::QUIT, false, Signal::HUP, Signal::HUP),
        (Signal::QUIT, true, Signal::HUP, Signal::QUIT),
        (Signal::USR1, false, Signal::HUP, Signal::USR1),
        (Signal::QUIT, false, Signal::SEGV, Signal::SEGV),
        (Signal::QUIT, false, Signal::INT, Signal::INT),
        (Signal::ABRT, false, Signal::TERM, Signal::ABRT),
    ];
    let rt = common::builder().build().unwrap();
    for (first, by_tgkill, second, dies_of) in cases {
        let (ready_tx, ready) = channel();
        let (go_tx, go) = channel::<()>();
        let (saw_tx, saw) = channel();
        let child = rt
            .spawn(Spawn::new(), move |cx| {
                ready_tx.send(()).unwrap();
                go.recv().unwrap();
                saw_tx.send(cx.signal_pending()).unwrap();
                0
            })
            .unwrap();
        ready.recv().unwrap();
        let (init, pid) = (rt.init(), child.pid());
        if by_tgkill {
            init.tgkill(pid, pid, first).unwrap();
        } else {
            init.kill(pid, first).unwrap();
        }
        init.kill(pid, second).unwrap();
        go_tx.send(()).unwrap();
        let what = format!("{first} then {second}");
        assert_eq!(saw.recv().unwrap(), Some(dies_of), "{what}");
        assert_eq!(child.wait().unwrap().signaled(), Some(dies_of), "{what}");
    }
}

fn kill_after_reap_is_esrch() {
    let rt = common::builder().build().unwrap();
    let child = rt.spawn(Spawn::new(), |_| 0).unwrap();
    let fd = child.pidfd();
    child.wait().unwrap();
    assert_eq!(
        fd.send_signal(Signal::KILL),
        Err(uproc::Errno::ESRCH),
        "pidfd_send_signal on a reaped task"
    );
}

/// Records, when dropped, the pid `uproc::current()` names then (0: none).
#[cfg(feature = "tokio")]
struct CurrentAtDrop(Arc<std::sync::atomic::AtomicI32>);

#[cfg(feature = "tokio")]
impl Drop for CurrentAtDrop {
    fn drop(&mut self) {
        let pid = uproc::current().map_or(0, |c| c.pid());
        self.0.store(pid, Ordering::SeqCst);
    }
}

/// SIGKILL drops a parked async body at its await point, with `current()` naming the
/// task while its locals drop, as for a sync body's locals. (The drop ran outside the
/// task's context: `current()` was `None` there.)
#[cfg(feature = "tokio")]
fn sigkill_drops_an_async_body_at_its_next_await_point() {
    use std::sync::atomic::{AtomicBool, AtomicI32};
    let t = common::tokio_rt();
    let rt = common::builder().build().unwrap();
    let dropped_as = Arc::new(AtomicI32::new(-1));
    let after_await = Arc::new(AtomicBool::new(false));
    let (d, a) = (dropped_as.clone(), after_await.clone());
    let (st, pid) = t.block_on(async move {
        let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
        let (_never_tx, never_rx) = tokio::sync::oneshot::channel::<()>();
        let child = rt
            .spawn_async(Spawn::new(), move |_cx| async move {
                let _guard = CurrentAtDrop(d);
                started_tx.send(()).unwrap();
                let _ = never_rx.await; // parked here forever
                a.store(true, Ordering::SeqCst);
                0
            })
            .unwrap();
        let pid = child.task().pid();
        started_rx.await.unwrap();
        child.kill().unwrap();
        (child.await.unwrap(), pid)
    });
    assert_eq!(
        st.signaled(),
        Some(Signal::KILL),
        "the task ends killed by SIGKILL"
    );
    assert_eq!(
        dropped_as.load(Ordering::SeqCst),
        pid,
        "the body's future was dropped, with current() naming its task"
    );
    assert!(
        !after_await.load(Ordering::SeqCst),
        "the body never ran past the await"
    );
}

/// Runs `body` as an async task of a fresh runtime (it gets the runtime's init and its
/// context), calls `after_spawn` with init and the child, then awaits the child (at
/// most a minute: a lost wake-up fails instead of hanging).
#[cfg(feature = "tokio")]
fn await_async_body<Fut>(
    body: impl FnOnce(uproc::Task, uproc::TaskCx) -> Fut + Send + 'static,
    after_spawn: impl FnOnce(&uproc::Task, &uproc::Child),
) -> uproc::WaitStatus
where
    Fut: std::future::Future<Output = i32> + Send + 'static,
{
    let t = common::tokio_rt();
    let rt = common::builder().build().unwrap();
    let init = rt.init();
    t.block_on(async move {
        let for_body = init.clone();
        let child = rt
            .spawn_async(Spawn::new(), move |cx| body(for_body, cx))
            .unwrap();
        after_spawn(&init, &child);
        let limit = std::time::Duration::from_secs(60);
        tokio::time::timeout(limit, child)
            .await
            .expect("the child ends: no wake-up is lost")
    })
    .unwrap()
}

/// A SIGKILL that lands while the body's first poll runs, before the body parks for
/// the first time, still drops the body: the waker the kill flag learns after that poll
/// is checked against the flag, so the kill is not lost.
#[cfg(feature = "tokio")]
fn sigkill_during_the_first_poll_drops_an_async_body_that_then_parks() {
    let st = await_async_body(
        |init, cx| async move {
            // Kill this task from inside its first poll, then park forever.
            init.kill(init.pid_of(cx.task()), Signal::KILL).unwrap();
            std::future::pending::<()>().await;
            0
        },
        |_, _| {},
    );
    assert_eq!(st.signaled(), Some(Signal::KILL));
}

#[cfg(feature = "tokio")]
fn a_panicking_async_body_ends_killed_by_sigabrt() {
    let t = common::tokio_rt();
    let rt = common::builder().build().unwrap();
    let st = t
        .block_on(async {
            let child = rt
                .spawn_async(Spawn::new(), |_| async {
                    tokio::task::yield_now().await;
                    panic!("deliberate async test panic")
                })
                .unwrap();
            child.await
        })
        .unwrap();
    assert_eq!(st.signaled(), Some(Signal::ABRT));
    assert_eq!(rt.ps().len(), 1, "the runtime is clean and usable");
}

/// A future that completes with `code` after one `Pending` and panics when dropped.
#[cfg(feature = "tokio")]
struct ReadyThenPanicOnDrop {
    code: i32,
    polled: bool,
}

#[cfg(feature = "tokio")]
impl std::future::Future for ReadyThenPanicOnDrop {
    type Output = i32;
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<i32> {
        if self.polled {
            return std::task::Poll::Ready(self.code);
        }
        self.polled = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

#[cfg(feature = "tokio")]
impl Drop for ReadyThenPanicOnDrop {
    fn drop(&mut self) {
        panic!("deliberate async test panic in Drop");
    }
}

/// The async counterparts: a payload whose drop panics, and a future whose own drop
/// panics after it completed (its destructors are the body's code: SIGABRT) or when
/// SIGKILL drops it at an await point (still SIGKILL). The panics stay inside the
/// task: the tokio task completes, the runtime goes on.
#[cfg(feature = "tokio")]
fn async_bodies_whose_drops_panic_end_as_linux_says() {
    let t = common::tokio_rt();
    let rt = common::builder().build().unwrap();
    t.block_on(async {
        let st = rt
            .spawn_async(Spawn::new(), |_| async {
                tokio::task::yield_now().await;
                std::panic::panic_any(PanicsOnDrop)
            })
            .unwrap()
            .await
            .unwrap();
        assert_eq!(
            st.signaled(),
            Some(Signal::ABRT),
            "a payload that panics on drop"
        );
        let st = rt
            .spawn_async(Spawn::new(), |_| ReadyThenPanicOnDrop {
                code: 2,
                polled: false,
            })
            .unwrap()
            .await
            .unwrap();
        assert_eq!(
            st.signaled(),
            Some(Signal::ABRT),
            "a future that panics on drop"
        );
        let init = rt.init();
        let child = rt
            .spawn_async(Spawn::new(), |_| async {
                let _held = PanicsOnDrop;
                std::future::pending::<i32>().await
            })
            .unwrap();
        tokio::task::yield_now().await;
        init.kill(child.pid(), Signal::KILL).unwrap();
        let st = child.await.unwrap();
        assert_eq!(
            st.signaled(),
            Some(Signal::KILL),
            "killed, then its drop panicked"
        );
        let st = rt
            .spawn_async(Spawn::new(), |_| async { 6 })
            .unwrap()
            .await
            .unwrap();
        assert_eq!(st.exited(), Some(6), "the runtime goes on");
    });
    assert_eq!(rt.ps().len(), 1, "nothing is left behind");
}

#[cfg(feature = "tokio")]
fn an_async_body_sees_sigterm_through_signal_pending() {
    let st = await_async_body(
        |_, cx| async move {
            while cx.signal_pending().is_none() {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            0
        },
        |init, child| init.kill(child.pid(), Signal::TERM).unwrap(),
    );
    assert_eq!(
        st.signaled(),
        Some(Signal::TERM),
        "SIGTERM is cooperative, then fatal at return"
    );
}

/// A body that reaped a child of its own reads no signal: SIGCHLD (queued for the
/// parent's wait, discarded by Linux's default disposition) is no request to stop.
fn a_reaped_child_s_sigchld_is_not_reported_by_signal_pending() {
    for (name, b, _g) in builders() {
        let rt = b.build().unwrap();
        let st = rt
            .spawn(Spawn::new(), |cx| {
                let child = cx.spawn(Spawn::new(), |_| 0).unwrap();
                assert_eq!(child.wait().unwrap().exited(), Some(0));
                match cx.signal_pending() {
                    None => 0,
                    Some(s) => s.raw(),
                }
            })
            .unwrap()
            .wait()
            .unwrap();
        assert_eq!(
            st.exited(),
            Some(0),
            "{name}: no signal pending after the reap"
        );
    }
}

/// SIGTERM asks an async body to end (it sees it through `signal_pending` and may go
/// on); a SIGKILL after it still drops the body at its await point, whether both came
/// while the body was parked or before it first parked, and by any route (`kill` by
/// number, a pidfd, `Child::kill`). The status is the first fatal signal's, as in
/// Linux.
#[cfg(feature = "tokio")]
fn sigkill_after_sigterm_still_drops_a_parked_async_body() {
    // Both while parked.
    let st = await_async_body(
        |_, _| async move {
            std::future::pending::<()>().await;
            0
        },
        |_, child| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            child.pidfd().send_signal(Signal::TERM).unwrap();
            child.kill().unwrap();
        },
    );
    assert_eq!(
        st.signaled(),
        Some(Signal::TERM),
        "parked: the first fatal signal"
    );
    // Both before the first park (from inside the first poll).
    let st = await_async_body(
        |init, cx| async move {
            let me = init.pid_of(cx.task());
            init.kill(me, Signal::TERM).unwrap();
            init.kill(me, Signal::KILL).unwrap();
            std::future::pending::<()>().await;
            0
        },
        |_, _| {},
    );
    assert_eq!(st.signaled(), Some(Signal::TERM), "before the first park");
    // SIGTERM alone leaves a parked body parked: only its own check would end it.
    let st = await_async_body(
        |_, cx| async move {
            while cx.signal_pending() != Some(Signal::TERM) {
                tokio::task::yield_now().await;
            }
            7
        },
        |_, child| child.pidfd().send_signal(Signal::TERM).unwrap(),
    );
    assert_eq!(
        st.signaled(),
        Some(Signal::TERM),
        "the body saw SIGTERM and ended"
    );
}

/// A sync body killed before its job starts never runs; its captured values are
/// dropped by the job, and a `Drop` of theirs that panics stays inside the job (the
/// executor running it sees no panic), the task ending killed by SIGKILL.
fn an_unrun_body_whose_captures_panic_on_drop_does_not_panic_the_executor() {
    use std::sync::Mutex;
    struct PanicOnDrop;
    impl Drop for PanicOnDrop {
        fn drop(&mut self) {
            panic!("drop of an unrun body's capture");
        }
    }
    type Job = Box<dyn FnOnce() + Send>;
    #[derive(Clone, Default)]
    struct Queue(Arc<Mutex<Vec<Job>>>);
    impl uproc::Executor for Queue {
        fn execute(&self, job: Job) {
            self.0.lock().unwrap().push(job);
        }
    }
    let q = Queue::default();
    let rt = common::builder().executor(q.clone()).build().unwrap();
    let g = PanicOnDrop;
    let ran = Arc::new(AtomicI32::new(0));
    let r = ran.clone();
    let child = rt
        .spawn(Spawn::new(), move |_| {
            let _g = &g;
            r.store(1, Ordering::SeqCst);
            0
        })
        .unwrap();
    child.kill().unwrap();
    let job = q.0.lock().unwrap().pop().expect("one job queued");
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    assert!(run.is_ok(), "the capture's panic stays in the job");
    assert_eq!(ran.load(Ordering::SeqCst), 0, "the body never ran");
    assert_eq!(child.wait().unwrap().signaled(), Some(Signal::KILL));
}

every_profile!(
    two_fatal_signals_end_a_body_as_linux_dequeues_them,
    a_reaped_child_s_sigchld_is_not_reported_by_signal_pending,
    a_panic_payload_whose_drop_panics_still_ends_the_task_by_sigabrt,
    a_sync_body_whose_captures_panic_on_drop_ends_by_sigabrt,
    #[cfg(feature = "tokio")]
    async_bodies_whose_drops_panic_end_as_linux_says,
    a_panicking_body_ends_killed_by_sigabrt_and_the_runtime_goes_on,
    sigkill_reaches_a_sync_body_through_signal_pending_and_ends_it_killed,
    sigterm_pending_when_the_body_returns_ends_the_task_killed_by_sigterm,
    kill_after_reap_is_esrch,
    #[cfg(feature = "tokio")]
    sigkill_drops_an_async_body_at_its_next_await_point,
    #[cfg(feature = "tokio")]
    sigkill_during_the_first_poll_drops_an_async_body_that_then_parks,
    #[cfg(feature = "tokio")]
    a_panicking_async_body_ends_killed_by_sigabrt,
    #[cfg(feature = "tokio")]
    an_async_body_sees_sigterm_through_signal_pending,
    #[cfg(feature = "tokio")]
    sigkill_after_sigterm_still_drops_a_parked_async_body,
    an_unrun_body_whose_captures_panic_on_drop_does_not_panic_the_executor,
);
