//! pidfd readiness: poll, blocking waits, futures and exit events (mirrors
//! selftests/pidfd/pidfd_poll_test.c and pidfd_wait.c).

mod common;

use common::{World, both};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;
use uproc_abi::{PidfdFlags, Profile, Signal, WaitStatus};
use uproc_pidfs::{PidFd, Readiness};
use uproc_pidns::Pid;

const LONG: Duration = Duration::from_secs(30);

#[derive(Default)]
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counting() -> (Arc<CountingWaker>, Waker) {
    let c = Arc::new(CountingWaker::default());
    (c.clone(), Waker::from(c))
}

fn poll_once<F: Future + Unpin>(f: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(waker))
}

#[test]
fn running_task_is_not_readable() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        assert_eq!(
            fd.poll(),
            Readiness::default(),
            "Linux: pidfd_poll of a running task is 0"
        );
        assert!(
            !fd.wait_readable(Duration::from_millis(20)),
            "times out while the task runs"
        );
    });
}

#[test]
fn exited_task_is_readable_without_hangup() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        w.exit(&pid, WaitStatus::exited_with(0));
        assert_eq!(
            fd.poll(),
            Readiness {
                readable: true,
                hangup: false
            },
            "Linux: zombie -> EPOLLIN"
        );
        assert!(fd.wait_readable(Duration::ZERO));
    });
}

#[test]
fn reaped_task_is_readable_with_hangup() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        w.kill_and_reap(&pid, WaitStatus::exited_with(0));
        assert_eq!(
            fd.poll(),
            Readiness {
                readable: true,
                hangup: true
            },
            "Linux: reaped -> EPOLLIN | EPOLLHUP"
        );
    });
}

#[test]
fn delayed_group_leader_is_not_readable_until_its_threads_exit() {
    both(|p| {
        let w = World::new(p);
        let leader = w.spawn();
        let thread = w.spawn_thread(&leader);
        let fd = w.open(&leader);
        let tfd = w
            .pidfs
            .pidfd_prepare(&w.root, leader.clone(), PidfdFlags::THREAD)
            .unwrap();
        w.exit_delayed_leader(&leader, WaitStatus::exited_with(0));
        assert!(
            !fd.poll().readable,
            "Linux: a leader with live threads does not make its pidfd readable"
        );
        assert!(
            !tfd.poll().readable,
            "not even a PIDFD_THREAD pidfd of the leader"
        );
        w.exit(&thread, WaitStatus::exited_with(0));
        assert!(
            !fd.poll().readable,
            "a sub-thread's exit notifies its own pid only"
        );
        w.exit(&leader, WaitStatus::exited_with(0));
        assert!(
            fd.poll().readable && tfd.poll().readable,
            "readable once the group is empty"
        );
    });
}

#[test]
fn pidfd_to_an_already_delayed_leader_is_not_readable() {
    both(|p| {
        let w = World::new(p);
        let leader = w.spawn();
        let _thread = w.spawn_thread(&leader);
        w.exit_delayed_leader(&leader, WaitStatus::exited_with(0));
        let fd = w.open(&leader);
        assert!(!fd.poll().readable);
    });
}

/// A thread blocks in `wait_readable` on a fresh pid's pidfd; once it sleeps, `event`
/// runs; the sleeper must be woken by it, not by its timeout.
fn blocked_waiter_woken_by(event: impl Fn(&World, &Arc<Pid>, &PidFd)) {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        let fd2 = fd.clone();
        let t = std::thread::spawn(move || fd2.wait_readable(LONG));
        while fd.waiter_counts().0 == 0 {
            std::thread::yield_now();
        }
        event(&w, &pid, &fd);
        assert!(
            t.join().unwrap(),
            "the blocked waiter is woken by the event, not by its timeout"
        );
        assert_eq!(fd.waiter_counts(), (0, 0));
    });
}

#[test]
fn wait_readable_is_woken_by_the_exit() {
    blocked_waiter_woken_by(|_, _, fd| fd.send_signal(Signal::KILL).unwrap());
}

/// 10,000 rounds: a waiter thread blocks on the pidfd, the test kills through the pidfd,
/// the waiter must be woken (a 30 s timeout would fail the round), then reap.
fn blocking_rounds(p: Profile, rounds: usize) {
    let w = World::new(p);
    let (tx, rx) = crossbeam_channel::bounded::<PidFd>(1);
    let (done_tx, done_rx) = crossbeam_channel::bounded::<bool>(1);
    let waiter = std::thread::spawn(move || {
        for fd in rx {
            done_tx.send(fd.wait_readable(LONG)).unwrap();
        }
    });
    for _ in 0..rounds {
        let pid = w.spawn();
        let fd = w.open(&pid);
        tx.send(fd.clone()).unwrap();
        while fd.waiter_counts().0 == 0 {
            std::thread::yield_now();
        }
        fd.send_signal(Signal::KILL).unwrap();
        assert!(done_rx.recv().unwrap(), "woken by the kill, not timed out");
        w.reap(&pid, WaitStatus::signaled_by(Signal::KILL, false), 7);
        assert_eq!(
            fd.poll(),
            Readiness {
                readable: true,
                hangup: true
            }
        );
    }
    drop(tx);
    waiter.join().unwrap();
    assert_eq!(w.pidfs.index_len(), 0, "every pid freed");
}

#[test]
fn ten_thousand_blocking_rounds_linux618() {
    blocking_rounds(Profile::Linux618, 10_000);
}

#[test]
fn ten_thousand_blocking_rounds_linux70() {
    blocking_rounds(Profile::Linux70, 10_000);
}

/// Counts how often the wrapped future is polled: a polling loop would show up here.
struct Counted<F> {
    inner: F,
    polls: Arc<AtomicUsize>,
}

impl<F: Future + Unpin> Future for Counted<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.polls.fetch_add(1, Ordering::SeqCst);
        Pin::new(&mut self.inner).poll(cx)
    }
}

fn async_rounds(p: Profile, rounds: usize) {
    let w = World::new(p);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        for _ in 0..rounds {
            let pid = w.spawn();
            let fd = w.open(&pid);
            let polls = Arc::new(AtomicUsize::new(0));
            let fut = Counted {
                inner: fd.readable(),
                polls: polls.clone(),
            };
            let task = tokio::spawn(async move { tokio::time::timeout(LONG, fut).await });
            while fd.waiter_counts().1 == 0 {
                tokio::task::yield_now().await;
            }
            fd.send_signal(Signal::KILL).unwrap();
            assert!(
                task.await.unwrap().is_ok(),
                "readable().await woken by the kill, not timed out"
            );
            assert_eq!(
                polls.load(Ordering::SeqCst),
                2,
                "polled once pending, once ready: no polling loop"
            );
            w.reap(&pid, WaitStatus::signaled_by(Signal::KILL, false), 7);
        }
    });
    assert_eq!(w.pidfs.index_len(), 0);
}

#[test]
fn ten_thousand_async_rounds_linux618() {
    async_rounds(Profile::Linux618, 10_000);
}

#[test]
fn ten_thousand_async_rounds_linux70() {
    async_rounds(Profile::Linux70, 10_000);
}

#[test]
fn exit_wakes_only_the_target_pids_wakers() {
    both(|p| {
        let w = World::new(p);
        let a = w.spawn();
        let b = w.spawn();
        let (fa, fb) = (w.open(&a), w.open(&b));
        let (ca, wa) = counting();
        let mut others = Vec::new();
        let mut fut_a = fa.readable();
        assert!(poll_once(&mut fut_a, &wa).is_pending());
        for _ in 0..8 {
            let (c, wk) = counting();
            let mut f = fb.readable();
            assert!(poll_once(&mut f, &wk).is_pending());
            others.push((c, f));
        }
        assert_eq!(fb.waiter_counts().1, 8);
        w.exit(&a, WaitStatus::exited_with(0));
        assert_eq!(
            ca.0.load(Ordering::SeqCst),
            1,
            "the target's waker is woken once"
        );
        for (c, _) in &others {
            assert_eq!(
                c.0.load(Ordering::SeqCst),
                0,
                "no other pid's waiter is woken"
            );
        }
        assert_eq!(
            fb.waiter_counts().1,
            8,
            "other pids keep their registrations"
        );
        assert!(poll_once(&mut fut_a, &wa).is_ready());
        assert_eq!(fa.waiter_counts().1, 0);
    });
}

#[test]
fn repolling_replaces_the_futures_waker() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        let (c1, w1) = counting();
        let (c2, w2) = counting();
        let mut f = fd.readable();
        assert!(poll_once(&mut f, &w1).is_pending());
        assert!(poll_once(&mut f, &w1).is_pending());
        assert!(poll_once(&mut f, &w2).is_pending());
        assert_eq!(
            fd.waiter_counts().1,
            1,
            "one entry per future, whatever its poll count"
        );
        w.exit(&pid, WaitStatus::exited_with(0));
        assert_eq!(
            c1.0.load(Ordering::SeqCst),
            0,
            "the replaced waker is not woken"
        );
        assert_eq!(c2.0.load(Ordering::SeqCst), 1, "the latest waker is woken");
    });
}

#[test]
fn dropping_a_pending_future_unregisters_it() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        let (_c, wk) = counting();
        let mut f = fd.readable();
        assert!(poll_once(&mut f, &wk).is_pending());
        assert_eq!(fd.waiter_counts().1, 1);
        drop(f);
        assert_eq!(fd.waiter_counts().1, 0);
    });
}

#[test]
fn future_on_an_exited_pid_is_ready_at_once() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        w.exit(&pid, WaitStatus::exited_with(0));
        let (c, wk) = counting();
        let mut f = fd.readable();
        assert!(poll_once(&mut f, &wk).is_ready());
        assert_eq!(c.0.load(Ordering::SeqCst), 0);
        assert_eq!(
            fd.waiter_counts().1,
            0,
            "a ready future leaves nothing registered"
        );
    });
}

#[test]
fn reap_without_a_prior_notify_wakes_waiters() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        let (c, wk) = counting();
        let mut f = fd.readable();
        assert!(poll_once(&mut f, &wk).is_pending());
        // Reaped without a readable-making notification (e.g. autoreap path).
        w.reap(&pid, WaitStatus::exited_with(0), 7);
        assert_eq!(
            c.0.load(Ordering::SeqCst),
            1,
            "pidfs_exit wakes the pid's waiters"
        );
        assert!(poll_once(&mut f, &wk).is_ready());
    });
}

#[test]
fn subscriber_gets_one_event_at_exit() {
    both(|p| {
        let w = World::new(p);
        let a = w.spawn();
        let b = w.spawn();
        let (fa, fb) = (w.open(&a), w.open(&b));
        let (ra, rb) = (fa.subscribe(), fb.subscribe());
        assert!(ra.try_recv().is_err(), "nothing before the exit");
        w.exit(&a, WaitStatus::exited_with(3));
        let ev = ra.try_recv().expect("the exit sends an event");
        assert_eq!(
            (ev.ino, ev.pid, ev.status),
            (fa.ino(), a.nr(), WaitStatus::exited_with(3))
        );
        assert!(
            rb.try_recv().is_err(),
            "another pid's subscriber gets nothing"
        );
        w.reap(&a, WaitStatus::exited_with(3), 7);
        assert!(
            ra.try_recv().is_err(),
            "one event per exit, not a second at reap"
        );
    });
}

#[test]
fn subscriber_after_exit_gets_the_event_at_once() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        w.kill_and_reap(&pid, WaitStatus::exited_with(8));
        let ev = fd
            .subscribe()
            .try_recv()
            .expect("already exited: sent at once");
        assert_eq!(ev.status, WaitStatus::exited_with(8));
    });
}

#[test]
fn subscriber_event_reports_the_viewers_number() {
    both(|p| {
        let w = World::new(p);
        let parent = w.spawn();
        let ns = w.root.new_child().unwrap();
        let init = w.spawn_in(&ns, Some(&parent));
        let inner = w.pidfs.pidfd_open(&ns, 1, PidfdFlags::empty()).unwrap();
        let outer = w
            .pidfs
            .pidfd_open(&w.root, init.nr_in(&w.root), PidfdFlags::empty())
            .unwrap();
        let (ri, ro) = (inner.subscribe(), outer.subscribe());
        w.exit(&init, WaitStatus::exited_with(0));
        assert_eq!(ri.try_recv().unwrap().pid, 1);
        assert_eq!(ro.try_recv().unwrap().pid, init.nr_in(&w.root));
    });
}

#[test]
fn dropped_subscriber_does_not_disturb_the_exit() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        drop(fd.subscribe());
        let r = fd.subscribe();
        w.exit(&pid, WaitStatus::exited_with(1));
        assert!(r.try_recv().is_ok());
    });
}

#[test]
fn ten_thousand_blocking_rounds_scalable() {
    blocking_rounds(Profile::Scalable, 10_000);
}

#[test]
fn ten_thousand_async_rounds_scalable() {
    async_rounds(Profile::Scalable, 10_000);
}

#[test]
fn subscriber_between_exit_and_reap_gets_exactly_one_event() {
    // The exit found nobody waiting, so it sent nothing and recorded no event; the
    // subscriber that comes next gets the status at once and the reap sends no second.
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        w.exit(&pid, WaitStatus::exited_with(5));
        let rx = fd.subscribe();
        let ev = rx.try_recv().expect("already exited: sent at once");
        assert_eq!(ev.status, WaitStatus::exited_with(5));
        w.reap(&pid, WaitStatus::exited_with(5), 7);
        assert!(rx.try_recv().is_err(), "one event in all, none at the reap");
        assert_eq!(fd.exit_status(), Some(WaitStatus::exited_with(5)));
        assert_eq!(fd.waiter_counts(), (0, 0));
    });
}

#[test]
fn wait_readable_asleep_is_woken_by_a_reap_alone() {
    // A reap with no exit notification before it (the autoreap path) must wake a
    // blocked waiter: the reap counts the sleepers under the slot lock before it
    // decides to signal the condition variable.
    blocked_waiter_woken_by(|w, pid, _| w.reap(pid, WaitStatus::exited_with(0), 7));
}
