//! A red-team pass over the facade's concurrent life cycle, under every lock profile:
//! children killed while they start and while their parent exits, a `ChildSet` joined
//! while its members are killed from another thread, a runtime dropped while its tasks
//! run. Each case checks that every task ends exactly once with the status its story
//! allows, and that nothing is left at rest (no zombie, no pid, no runtime object).
//!
//! `UPROC_RACE_ITERS` scales the rounds (the defaults keep the file at a few seconds in
//! a debug build).

mod common;
use common::wait_until;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use uproc::{ChildSet, Errno, Profile, Runtime, Signal, Spawn, WaitStatus};

/// Rounds: `UPROC_RACE_ITERS` if set, else `debug` (or ten times it when optimised).
fn rounds(debug: usize) -> usize {
    std::env::var("UPROC_RACE_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(debug_assertions) {
            debug
        } else {
            debug * 10
        })
}

/// What a body that runs until a signal reaches it returns when none ever does: a task
/// that escaped the kill ends with this code instead of hanging the test.
const ESCAPED: i32 = 77;

/// A body that runs until a signal is pending (or gives up after ten seconds).
fn until_signalled(cx: &uproc::TaskCx) -> i32 {
    let end = Instant::now() + Duration::from_secs(10);
    while cx.signal_pending().is_none() {
        if Instant::now() > end {
            return ESCAPED;
        }
        std::thread::yield_now();
    }
    0
}

/// At rest: only init is left, and init has no zombie to reap.
fn assert_at_rest(rt: &Runtime, what: &str) {
    assert!(
        wait_until(10, || rt.ps().len() == 1),
        "{what}: only init is left at rest: {:?}",
        rt.ps()
    );
    let sys = rt.system();
    // A release may still be finishing on the thread that reaped (a worker thread of
    // the runtime, after the task left `ps`): the counts settle right after it.
    wait_until(10, || {
        sys.root_ns().nr_allocated() == 1 && sys.cgroup_root().pids_current() == 0
    });
    assert_eq!(sys.root_ns().nr_allocated(), 1, "{what}: allocated pids");
    assert_eq!(sys.cgroup_root().pids_current(), 0, "{what}: pids charge");
    assert_eq!(
        rt.init().wait(
            uproc::WaitId::All,
            uproc::WaitOptions::EXITED | uproc::WaitOptions::NOHANG
        ),
        Err(Errno::ECHILD),
        "{what}: init has no child left"
    );
}

fn killed(status: WaitStatus) -> bool {
    status.signaled() == Some(Signal::KILL)
}

#[test]
fn a_child_killed_while_it_starts_ends_killed_once_and_never_runs_past_the_kill() {
    let n = rounds(150);
    for &prof in Profile::ALL {
        let what = prof.to_string();
        let rt = Runtime::builder().profile(prof).build().unwrap();
        // Bodies that ran before the kill reached them, and ones that never ran.
        let (ran, not_run) = (AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|sc| {
            for side in 0..2 {
                let (rt, ran, not_run, what) = (&rt, &ran, &not_run, &what);
                sc.spawn(move || {
                    for i in 0..n {
                        let started = Arc::new(AtomicBool::new(false));
                        let s2 = started.clone();
                        let child = rt
                            .spawn(Spawn::new(), move |cx| {
                                s2.store(true, Ordering::SeqCst);
                                until_signalled(cx)
                            })
                            .unwrap();
                        // Kill at once (racing the job's start), or a little later.
                        if (i + side) % 3 != 0 {
                            std::thread::yield_now();
                        }
                        child.kill().expect("not reaped yet: the kill reaches it");
                        let pidfd = child.pidfd();
                        let status = child.wait().expect("the child is ours to wait for");
                        assert!(
                            killed(status),
                            "{what}: a child killed before it ended ends killed: {status:?}"
                        );
                        assert_eq!(pidfd.exit_status(), Some(status), "{what}: pidfd's status");
                        assert_eq!(pidfd.send_signal(Signal::KILL), Err(Errno::ESRCH));
                        let counter = if started.load(Ordering::SeqCst) {
                            ran
                        } else {
                            not_run
                        };
                        counter.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        });
        eprintln!(
            "{what}: {} bodies ran until the kill, {} were killed before they started",
            ran.load(Ordering::Relaxed),
            not_run.load(Ordering::Relaxed)
        );
        assert_at_rest(&rt, &what);
    }
}

#[test]
fn a_process_group_kill_racing_its_parent_exit_ends_every_member_killed() {
    let n = rounds(60);
    for &prof in Profile::ALL {
        let what = prof.to_string();
        let rt = Runtime::builder().profile(prof).build().unwrap();
        let init = rt.init();
        for round in 0..n {
            let (tx, rx) = std::sync::mpsc::channel::<uproc::Child>();
            let (pg_tx, pg_rx) = std::sync::mpsc::channel::<i32>();
            let parent = rt
                .spawn(Spawn::new(), move |cx| {
                    cx.task().setpgid(0, 0).unwrap();
                    pg_tx.send(cx.task().getpgid()).unwrap();
                    // Children until the kill reaches this task (EINTR), at most four;
                    // then exit at once: they are orphaned as the kill runs.
                    for _ in 0..4 {
                        match cx.spawn(Spawn::new(), until_signalled) {
                            Ok(c) => tx.send(c).unwrap(),
                            Err(Errno::EINTR) => break,
                            Err(e) => panic!("spawn gave {e}"),
                        }
                    }
                    0
                })
                .unwrap();
            let pgid = pg_rx.recv().unwrap();
            if round % 2 == 0 {
                std::thread::yield_now();
            }
            init.kill(-pgid, Signal::KILL)
                .unwrap_or_else(|e| panic!("{what}: the group has a member: {e}"));
            let ps = parent.wait().unwrap();
            assert!(
                ps.exited() == Some(0) || killed(ps),
                "{what}: the parent exits or is killed: {ps:?}"
            );
            let kids: Vec<uproc::Child> = rx.iter().collect();
            for c in kids {
                let st = c.wait().expect("an orphan's status is still reported");
                assert!(
                    killed(st),
                    "{what} round {round}: a member of the group, forked before the kill \
                     or refused after it, is killed: {st:?}"
                );
            }
        }
        assert_at_rest(&rt, &what);
    }
}

#[test]
fn a_child_set_joined_while_its_members_are_killed_reports_each_once() {
    let n = rounds(40);
    for &prof in Profile::ALL {
        let what = prof.to_string();
        let rt = Runtime::builder().profile(prof).build().unwrap();
        for round in 0..n {
            let mut set = ChildSet::new();
            let mut fds = Vec::new();
            let mut want = std::collections::HashMap::new();
            for k in 0..6 {
                let pid = if k % 3 == 2 {
                    // Ends by itself, maybe before, maybe after a kill.
                    set.spawn(&rt, Spawn::new(), move |_| k)
                } else {
                    set.spawn(&rt, Spawn::new(), until_signalled)
                }
                .unwrap();
                want.insert(pid, k);
                let pidfd = rt
                    .init()
                    .pidfd_open(pid, uproc::PidfdFlags::empty())
                    .unwrap();
                fds.push(pidfd);
            }
            let killer = std::thread::spawn(move || {
                for (i, fd) in fds.iter().enumerate() {
                    if (i + round) % 2 == 0 {
                        std::thread::yield_now();
                    }
                    match fd.send_signal(Signal::KILL) {
                        Ok(()) | Err(Errno::ESRCH) => {}
                        Err(e) => panic!("pidfd_send_signal gave {e}"),
                    }
                }
            });
            let mut seen = std::collections::HashSet::new();
            while let Some((pid, status)) = set.wait_next() {
                let status = status.expect("a member's status");
                assert!(seen.insert(pid), "{what}: member {pid} reported twice");
                let k = want[&pid];
                if k % 3 == 2 {
                    assert!(
                        status.exited() == Some(k) || killed(status),
                        "{what}: {status:?}"
                    );
                } else {
                    assert!(killed(status), "{what} round {round}: {status:?}");
                }
            }
            killer.join().unwrap();
            assert_eq!(seen.len(), want.len(), "{what}: every member reported");
            assert!(set.is_empty());
        }
        assert_at_rest(&rt, &what);
    }
}

#[test]
fn a_runtime_dropped_while_its_tasks_run_frees_everything_once_they_end() {
    let n = rounds(40);
    for &prof in Profile::ALL {
        for round in 0..n {
            let what = format!("{prof} round {round}");
            let rt = Runtime::builder().profile(prof).build().unwrap();
            let weak_sys = Arc::downgrade(rt.system());
            let weak_ns = Arc::downgrade(rt.system().root_ns());
            let started = Arc::new(AtomicUsize::new(0));
            let ended = Arc::new(AtomicUsize::new(0));
            let go = Arc::new(AtomicBool::new(false));
            let mut weak_tasks = Vec::new();
            let held = Arc::new(Mutex::new(Vec::new()));
            for k in 0..4 {
                let (started, ended) = (started.clone(), ended.clone());
                let (go, held) = (go.clone(), held.clone());
                let child = rt
                    .spawn(Spawn::new(), move |cx| {
                        started.fetch_add(1, Ordering::SeqCst);
                        // A grandchild, detached, and one handed out.
                        if let Ok(g) = cx.spawn(Spawn::new(), until_signalled) {
                            held.lock().unwrap().push(g);
                        }
                        while !go.load(Ordering::SeqCst) && cx.signal_pending().is_none() {
                            std::thread::yield_now();
                        }
                        ended.fetch_add(1, Ordering::SeqCst);
                        k
                    })
                    .unwrap();
                weak_tasks.push(child.task().downgrade());
                if k % 2 == 0 {
                    child.kill().unwrap();
                }
                // Every Child dropped unwaited: detached.
            }
            drop(rt);
            go.store(true, Ordering::SeqCst);
            // Each child ends (killed before it started, or its body returns) and,
            // detached, is reaped.
            let reaped = |w: &uproc::WeakTask| {
                w.upgrade()
                    .is_none_or(|t| t.state() == uproc::TaskState::Dead)
            };
            assert!(
                wait_until(10, || weak_tasks.iter().all(reaped)),
                "{what}: every child ends and is reaped"
            );
            assert_eq!(
                ended.load(Ordering::SeqCst),
                started.load(Ordering::SeqCst),
                "{what}: every body that started ended"
            );
            // The grandchildren handed out end when killed through their handles.
            let grandchildren: Vec<uproc::Child> = held.lock().unwrap().drain(..).collect();
            for g in grandchildren {
                match g.kill() {
                    Ok(()) | Err(Errno::ESRCH) => {}
                    Err(e) => panic!("{what}: {e}"),
                }
                let st = g.wait().expect("status");
                assert!(killed(st), "{what}: {st:?}");
            }
            assert!(
                wait_until(10, || weak_tasks.iter().all(|w| w.upgrade().is_none())),
                "{what}: every task is freed"
            );
            assert!(
                wait_until(10, || weak_sys.upgrade().is_none()),
                "{what}: the System is freed once its last task ended"
            );
            assert!(
                wait_until(10, || weak_ns.upgrade().is_none()),
                "{what}: namespace"
            );
        }
    }
}

/// An executor of the test's own: a thread per job, and a thread per async body that
/// polls it to the end (parking between polls). Every `drop_every`-th job (of either
/// kind) is dropped unrun, as an executor shutting down would.
#[derive(Clone)]
struct ParkExecutor {
    drop_every: usize,
    seen: Arc<AtomicUsize>,
}

impl ParkExecutor {
    fn new(drop_every: usize) -> ParkExecutor {
        ParkExecutor {
            drop_every,
            seen: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Whether this job is dropped unrun.
    fn refuse(&self) -> bool {
        let n = self.seen.fetch_add(1, Ordering::Relaxed) + 1;
        self.drop_every != 0 && n % self.drop_every == 0
    }
}

/// Wakes a parked thread.
struct Unpark(std::thread::Thread);

impl std::task::Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

impl uproc::Executor for ParkExecutor {
    fn execute(&self, job: Box<dyn FnOnce() + Send>) {
        if self.refuse() {
            return; // dropped unrun
        }
        std::thread::spawn(job);
    }

    fn runs_futures(&self) -> bool {
        true
    }

    fn execute_async(&self, mut job: uproc::AsyncJob) {
        if self.refuse() {
            return;
        }
        std::thread::spawn(move || {
            let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
            let mut cx = std::task::Context::from_waker(&waker);
            while job.as_mut().poll(&mut cx).is_pending() {
                std::thread::park();
            }
        });
    }
}

#[test]
fn async_children_killed_while_they_start_or_wait_end_killed_and_leave_nothing() {
    let n = rounds(100);
    for &prof in Profile::ALL {
        let what = prof.to_string();
        let exec = ParkExecutor::new(0);
        let rt = Runtime::builder()
            .profile(prof)
            .executor(exec)
            .build()
            .unwrap();
        let polled = Arc::new(AtomicUsize::new(0));
        std::thread::scope(|sc| {
            for side in 0..2 {
                let (rt, what, polled) = (&rt, &what, polled.clone());
                sc.spawn(move || {
                    for i in 0..n {
                        let polled = polled.clone();
                        let child = rt
                            .spawn_async(Spawn::new(), move |_| async move {
                                polled.fetch_add(1, Ordering::Relaxed);
                                // Parked until the kill drops it at this await.
                                std::future::pending::<()>().await;
                                ESCAPED
                            })
                            .unwrap();
                        if (i + side) % 2 == 0 {
                            std::thread::yield_now();
                        }
                        child.kill().expect("not reaped yet");
                        let st = child.wait().expect("ours to wait for");
                        assert!(killed(st), "{what}: an async body killed: {st:?}");
                    }
                });
            }
        });
        eprintln!(
            "{what}: {} of {} async bodies were polled before the kill",
            polled.load(Ordering::Relaxed),
            2 * n
        );
        assert_at_rest(&rt, &what);
    }
}

#[test]
fn jobs_an_executor_drops_unrun_end_killed_and_their_set_still_joins_them_all() {
    let n = rounds(30);
    for &prof in Profile::ALL {
        let what = prof.to_string();
        let rt = Runtime::builder()
            .profile(prof)
            .executor(ParkExecutor::new(3))
            .build()
            .unwrap();
        for round in 0..n {
            let mut set = ChildSet::new();
            let mut want = std::collections::HashMap::new();
            for k in 0..6 {
                let pid = if k % 2 == 0 {
                    set.spawn(&rt, Spawn::new(), move |_| k)
                } else {
                    set.spawn_async(&rt, Spawn::new(), move |_| async move { k })
                }
                .unwrap();
                want.insert(pid, k);
            }
            let mut seen = 0;
            while let Some((pid, status)) = set.wait_next() {
                let status = status.expect("a member's status");
                let k = want.remove(&pid).expect("reported once, and a member");
                assert!(
                    status.exited() == Some(k) || killed(status),
                    "{what} round {round}: a body that ran returns its code, one dropped \
                     unrun ends killed: {status:?}"
                );
                seen += 1;
            }
            assert_eq!(seen, 6, "{what}: every member joined");
        }
        assert_at_rest(&rt, &what);
    }
}

#[test]
fn waiting_for_a_child_while_its_parent_exits_and_its_adopter_reaps_it_returns_its_status() {
    let n = rounds(60);
    for &prof in Profile::ALL {
        let what = prof.to_string();
        let rt = Runtime::builder().profile(prof).build().unwrap();
        for round in 0..n {
            let (tx, rx) = std::sync::mpsc::channel::<uproc::Child>();
            let go = Arc::new(AtomicBool::new(false));
            let go2 = go.clone();
            let parent = rt
                .spawn(Spawn::new(), move |cx| {
                    let c = cx.spawn(Spawn::new(), until_signalled).unwrap();
                    tx.send(c).unwrap();
                    while !go2.load(Ordering::SeqCst) {
                        std::thread::yield_now();
                    }
                    0
                })
                .unwrap();
            let child = rx.recv().unwrap();
            let killer = child.pidfd();
            // Asleep in wait while the parent exits (the child moves to init, which
            // reaps it) and the child is killed, in either order.
            let (done_tx, done_rx) = std::sync::mpsc::channel();
            let waiter = std::thread::spawn(move || {
                done_tx.send(child.wait()).unwrap();
            });
            if round % 2 == 0 {
                go.store(true, Ordering::SeqCst);
                killer.send_signal(Signal::KILL).unwrap();
            } else {
                killer.send_signal(Signal::KILL).unwrap();
                go.store(true, Ordering::SeqCst);
            }
            let st = done_rx
                .recv_timeout(Duration::from_secs(20))
                .unwrap_or_else(|_| panic!("{what} round {round}: Child::wait hangs"))
                .expect("the status, reaped by the parent or by init");
            assert!(killed(st), "{what} round {round}: {st:?}");
            waiter.join().unwrap();
            assert_eq!(parent.wait().unwrap().exited(), Some(0), "{what}");
        }
        assert_at_rest(&rt, &what);
    }
}
