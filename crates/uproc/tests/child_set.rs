//! `ChildSet`: children reaped in exit order, by future or blocking wait, woken per pid;
//! `abort_all`; detach on drop; errors leave nothing behind (the facade's analogue of
//! the kernel's `waitid(P_ALL)` selftests).

mod common;

use common::gated;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use uproc::{ChildSet, Errno, Runtime, Signal, Spawn};

#[test]
fn wait_next_returns_children_in_exit_order_with_their_pids() {
    let rt = Runtime::new().unwrap();
    let mut set = ChildSet::new();
    let mut gates = Vec::new();
    let mut pids = Vec::new();
    for code in 0..5 {
        let (child, gate) = gated(&rt, code);
        pids.push(set.insert(child));
        gates.push(gate);
    }
    assert_eq!(set.len(), 5);
    // Release in the order 3, 0, 4, 1, 2: wait_next follows.
    for i in [3, 0, 4, 1, 2] {
        gates[i].send(()).unwrap();
        let (pid, status) = set.wait_next().expect("a member is left");
        assert_eq!(pid, pids[i], "the child that exited is the one returned");
        assert_eq!(status.unwrap().exited(), Some(i as i32));
    }
    assert!(set.is_empty());
    assert!(
        set.wait_next().is_none(),
        "an empty set returns None at once"
    );
    assert_eq!(rt.ps().len(), 1, "every member reaped");
}

#[test]
fn join_next_is_pending_until_a_member_exits_and_only_that_exit_wakes_it() {
    let rt = Runtime::new().unwrap();
    let mut set = ChildSet::new();
    let (a, gate_a) = gated(&rt, 1);
    let (b, gate_b) = gated(&rt, 2);
    let pid_a = set.insert(a);
    set.insert(b);
    // A waker that counts its wake-ups.
    let counter = std::sync::Arc::new(Counter::default());
    let waker = Waker::from(std::sync::Arc::clone(&counter));
    let mut cx = Context::from_waker(&waker);
    {
        let mut next = pin!(set.join_next());
        assert!(
            next.as_mut().poll(&mut cx).is_pending(),
            "nobody exited yet"
        );
        assert_eq!(counter.get(), 0, "no wake-up while both run");
        gate_a.send(()).unwrap();
        assert!(
            common::wait_until(10, || counter.get() > 0),
            "a's exit wakes the set"
        );
        match next.as_mut().poll(&mut cx) {
            Poll::Ready(Some((pid, status))) => {
                assert_eq!(pid, pid_a);
                assert_eq!(status.unwrap().exited(), Some(1));
            }
            other => panic!("a is reaped after its wake-up: {other:?}"),
        }
    }
    assert_eq!(set.len(), 1, "b is still in the set");
    set.abort_all();
    // b's body returns once released; the SIGKILL pending by then decides its status.
    gate_b.send(()).unwrap();
    let (_, status) = set.wait_next().unwrap();
    assert_eq!(status.unwrap().signaled(), Some(Signal::KILL));
}

#[derive(Default)]
struct Counter(std::sync::atomic::AtomicUsize);

impl Counter {
    fn get(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl std::task::Wake for Counter {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn abort_all_kills_every_running_member_and_spares_the_exited() {
    let rt = Runtime::new().unwrap();
    let mut set = ChildSet::new();
    for _ in 0..10 {
        set.spawn(&rt, Spawn::new(), |cx| {
            while cx.signal_pending().is_none() {
                std::thread::yield_now();
            }
            0
        })
        .unwrap();
    }
    let done = set.spawn(&rt, Spawn::new(), |_| 5).unwrap();
    // Reap the one that exits by itself first: it is not affected.
    let (pid, status) = set.wait_next().unwrap();
    assert_eq!((pid, status.unwrap().exited()), (done, Some(5)));
    set.abort_all();
    let mut killed = 0;
    while let Some((_, status)) = set.wait_next() {
        assert_eq!(status.unwrap().signaled(), Some(Signal::KILL));
        killed += 1;
    }
    assert_eq!(killed, 10);
    assert_eq!(rt.ps().len(), 1);
    set.abort_all(); // on an empty set: nothing to do
}

#[test]
fn dropping_the_set_detaches_its_members_which_are_reaped_when_they_end() {
    let rt = Runtime::new().unwrap();
    let mut set = ChildSet::new();
    let (child, gate) = gated(&rt, 0);
    set.insert(child);
    drop(set);
    assert_eq!(rt.ps().len(), 2, "still running");
    gate.send(()).unwrap();
    assert!(
        common::wait_until(10, || rt.ps().len() == 1),
        "a detached member is reaped when its body ends: no zombie"
    );
}

#[test]
fn a_failed_spawn_adds_nothing() {
    let rt = Runtime::builder().build().unwrap();
    let cg = rt.cgroup_root().mkdir("full").unwrap();
    cg.write("pids.max", "0").unwrap();
    let mut set = ChildSet::new();
    let r = set.spawn(&rt, Spawn::new().cgroup(&cg), |_| 0);
    assert_eq!(
        r.unwrap_err(),
        Errno::EAGAIN,
        "pids.max reached: fork fails"
    );
    assert!(set.is_empty());
    assert!(set.wait_next().is_none());
    assert_eq!(rt.ps().len(), 1);
}

#[test]
fn a_member_reparented_away_still_reports_its_status() {
    // The parent exits before its child: the child goes to init, which reaps it; the
    // set cannot reap it but reports how it ended, as Child::wait does.
    let rt = Runtime::new().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let parent = rt
        .spawn(Spawn::new(), move |cx| {
            let grandchild = cx
                .spawn(Spawn::new(), |g| {
                    while g.task().ppid() != 1 {
                        std::thread::yield_now();
                    }
                    9
                })
                .unwrap();
            tx.send(grandchild).unwrap();
            0
        })
        .unwrap();
    let grandchild = rx.recv().unwrap();
    let mut set = ChildSet::new();
    set.insert(grandchild);
    assert_eq!(parent.wait().unwrap().exited(), Some(0));
    let (_, status) = set.wait_next().unwrap();
    assert_eq!(status.unwrap().exited(), Some(9));
    assert!(common::wait_until(10, || rt.ps().len() == 1));
}

#[cfg(feature = "tokio")]
#[test]
fn join_next_on_tokio_with_async_members() {
    let tokio_rt = common::tokio_rt();
    let rt = Runtime::new().unwrap();
    let sum = tokio_rt.block_on(async {
        let mut set = ChildSet::new();
        for i in 0..1000 {
            set.spawn_async(&rt, Spawn::new(), move |_| async move {
                tokio::task::yield_now().await;
                i % 7
            })
            .unwrap();
        }
        let mut sum = 0;
        while let Some((_, status)) = set.join_next().await {
            sum += status.unwrap().exited().unwrap();
        }
        sum
    });
    assert_eq!(sum, (0..1000).map(|i| i % 7).sum::<i32>());
    assert_eq!(rt.ps().len(), 1);
}
