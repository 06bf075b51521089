//! # uproc-portability: uproc's futures on any executor
//!
//! uproc's async side is not tied to one runtime: [`Child`](uproc::Child) (via
//! `.await`), [`ChildSet::join_next`](uproc::ChildSet::join_next) and
//! [`PidFd::readable`](uproc::PidFd::readable) are plain [`Future`]s, woken by the
//! task's exit (its exit latch or its pidfd wait queue), with no timer and no reactor.
//! This crate holds one scenario, [`exercise`], that awaits all of them, and its tests
//! run it three ways:
//!
//! - on smol (`tests/smol.rs`), in a build with no tokio at all: this package depends
//!   on tokio only behind its `tokio` feature, off by default, and CI checks the
//!   dependency tree;
//! - on tokio (`tests/tokio.rs`, feature `tokio`);
//! - on [`block_on`] (`tests/block_on.rs`): twenty lines that park the calling thread
//!   between polls, no runtime at all.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use uproc::{ChildSet, Errno, Runtime, Signal, Spawn, WaitStatus};

/// Runs `fut` on the calling thread: poll, park until woken, poll again. No runtime,
/// no timer, no I/O driver: it works only because every uproc future is woken by the
/// event it waits for.
pub fn block_on<F: Future>(fut: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(fut);
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

/// What [`exercise`] observed.
#[derive(Debug, PartialEq, Eq)]
pub struct Observed {
    /// `pidfd.readable().await` completed, and the pidfd then polled readable.
    pub readable_then_polled_readable: bool,
    /// The status of the `.await`ed child (it exits 7).
    pub awaited: WaitStatus,
    /// The pidfd hung up once the child was reaped.
    pub hangup_after_reap: bool,
    /// The `ChildSet` members' exit codes, in the order `join_next` returned them
    /// (children released one by one, in reverse spawn order: 3, 2, 1).
    pub set_order: Vec<i32>,
    /// The status of a set member ended by `abort_all`.
    pub aborted: WaitStatus,
    /// Tasks left besides init.
    pub leftover: usize,
}

/// Awaits a `Child`, a `PidFd::readable()` and a `ChildSet::join_next()` on whatever
/// executor polls it. The task bodies are synchronous (they run on `rt`'s executor);
/// the children that the awaits wait for are released from plain threads, so the
/// wake-ups come from outside the polling executor.
pub async fn exercise(rt: &Runtime) -> Result<Observed, Errno> {
    // A child that exits when released; its pidfd becomes readable at the exit.
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let child = rt.spawn(Spawn::new().name("awaited"), move |_| {
        let _ = rx.recv();
        7
    })?;
    let fd = child.pidfd();
    let release = std::thread::spawn(move || tx.send(()));
    fd.readable().await;
    let readable_then_polled_readable = fd.poll().readable;
    let awaited = child.await?;
    let hangup_after_reap = fd.poll().hangup;
    let _ = release.join();

    // A set of three, released in reverse order: join_next follows the exits.
    let mut set = ChildSet::new();
    let mut gates = Vec::new();
    for code in 1..=3 {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        set.spawn(rt, Spawn::new().name("member"), move |_| {
            let _ = rx.recv();
            code
        })?;
        gates.push(tx);
    }
    let mut set_order = Vec::new();
    while let Some(gate) = gates.pop() {
        let released = std::thread::spawn(move || gate.send(()));
        let (_pid, status) = set.join_next().await.ok_or(Errno::ECHILD)?;
        set_order.push(status?.exited().unwrap_or(-1));
        let _ = released.join();
    }

    // abort_all: SIGKILL reaches a body that waits for it.
    set.spawn(rt, Spawn::new().name("doomed"), |cx| {
        while cx.signal_pending() != Some(Signal::KILL) {
            std::thread::yield_now();
        }
        0
    })?;
    set.abort_all();
    let (_pid, aborted) = set.join_next().await.ok_or(Errno::ECHILD)?;
    let aborted = aborted?;
    if set.join_next().await.is_some() {
        return Err(Errno::EINVAL); // the set must be empty now
    }
    Ok(Observed {
        readable_then_polled_readable,
        awaited,
        hangup_after_reap,
        set_order,
        aborted,
        leftover: rt.ps().len() - 1,
    })
}

/// Checks what every executor must observe.
pub fn assert_observed(o: &Observed) {
    assert!(
        o.readable_then_polled_readable,
        "readable() completes at the exit"
    );
    assert_eq!(
        o.awaited.exited(),
        Some(7),
        "child.await returns the exit status"
    );
    assert!(
        o.hangup_after_reap,
        "the pidfd hangs up once the child is reaped"
    );
    assert_eq!(
        o.set_order,
        [3, 2, 1],
        "join_next returns children in exit order"
    );
    assert_eq!(
        o.aborted.signaled(),
        Some(Signal::KILL),
        "abort_all kills with SIGKILL"
    );
    assert_eq!(o.leftover, 0, "every child reaped");
}
