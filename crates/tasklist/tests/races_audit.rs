//! A red-team pass over the concurrent life cycle: two to four threads attack one
//! window each round, under every lock profile (`Scalable`, with no global lock, is
//! where the races live), and each round ends with the invariants at rest checked:
//! every child reaped exactly once, no pid leaked or live twice, charges, pidfs index
//! entries and cgroup membership balanced, no zombie nobody can reap, and `wait`
//! returning ECHILD only when there really is no child.
//!
//! `UPROC_RACE_ITERS` sets the rounds per case (the defaults keep the whole file at a
//! few seconds in a debug build).

mod common;
use common::*;
use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use uproc_abi::{CloneFlags, Errno, Profile, Signal, WaitOptions};
use uproc_tasklist::{CloneArgs, System, Task, TaskState, WaitId};

/// A system under `prof`, its init, and what it holds before the test.
fn fresh(prof: Profile) -> (std::sync::Arc<System>, Task, Baseline) {
    let sys = system_with(prof);
    let base = Baseline::of(&sys);
    (sys.clone(), sys.init(), base)
}

/// A start delay for side `side` in round `r`, spread over `0..width` spins, so that
/// each side's window is swept across the others' paths.
fn jitter(r: usize, side: usize, width: usize) -> usize {
    let mut x = (r as u64 ^ ((side as u64 + 1) << 40)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 29;
    (x % width as u64) as usize
}

/// The spread of the start delays: a debug build's paths are longer.
const WIDTH: usize = if cfg!(debug_assertions) { 3000 } else { 600 };

/// Reaps with `WNOHANG` until ECHILD; every reaped pid is pushed to `out`. Fails
/// (instead of hanging) when a child stays unreapable for ten seconds.
fn drain(reaper: &Task, out: &Mutex<Vec<i32>>, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match reaper.wait(WaitId::All, WaitOptions::EXITED | WaitOptions::NOHANG) {
            Ok(Some(info)) => out.lock().unwrap().push(info.pid),
            Ok(None) => {
                assert!(
                    Instant::now() < deadline,
                    "{what}: a child is never reapable (a zombie nobody can reap, or a \
                     lost notification)"
                );
                std::thread::yield_now();
            }
            Err(Errno::ECHILD) => return,
            Err(e) => panic!("{what}: wait gave {e}"),
        }
    }
}

/// Reaps with blocking waits until ECHILD; every reaped pid is pushed to `out`. A lost
/// wake-up hangs here: run it under a [`Watchdog`].
fn drain_blocking(reaper: &Task, out: &Mutex<Vec<i32>>, what: &str) {
    loop {
        match reaper.wait(WaitId::All, WaitOptions::EXITED) {
            Ok(Some(info)) => out.lock().unwrap().push(info.pid),
            Ok(None) => panic!("{what}: a blocking wait returned nothing"),
            Err(Errno::ECHILD) => return,
            Err(e) => panic!("{what}: wait gave {e}"),
        }
    }
}

/// Aborts the test binary when a test makes no progress for 30 seconds (a blocking wait
/// that lost its wake-up): a failure with a message instead of a hung CI job.
struct Watchdog {
    progress: std::sync::Arc<AtomicUsize>,
    stop: std::sync::Arc<AtomicBool>,
}

impl Watchdog {
    fn arm(what: String) -> Watchdog {
        let progress = std::sync::Arc::new(AtomicUsize::new(0));
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let (p, st) = (progress.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut last = (p.load(Ordering::Relaxed), Instant::now());
            while !st.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                let now = p.load(Ordering::Relaxed);
                if now != last.0 {
                    last = (now, Instant::now());
                } else if last.1.elapsed() > Duration::from_secs(30) {
                    eprintln!("{what}: no progress for 30 s (a lost wake-up?): aborting");
                    std::process::abort();
                }
            }
        });
        Watchdog { progress, stop }
    }

    fn tick(&self) {
        self.progress.fetch_add(1, Ordering::Relaxed);
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// `parties` sides meet here (each returns once all arrived, or after a second, so that a
/// stalled side cannot hang the round): from this point both are running, and the
/// calls that follow on each side really overlap instead of one side finishing before
/// the scheduler gets to the other.
fn meet(arrived: &AtomicUsize, parties: usize) {
    arrived.fetch_add(1, Ordering::AcqRel);
    let start = Instant::now();
    let mut spins = 0u32;
    while arrived.load(Ordering::Acquire) < parties && start.elapsed() < Duration::from_secs(1) {
        spins += 1;
        if spins < 200 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

/// How often a racing call went each way: evidence that the rounds hit the window.
#[derive(Default)]
struct Overlap {
    before: AtomicUsize,
    after: AtomicUsize,
}

impl Overlap {
    /// The call got in before the other side's effect (`true`) or after it.
    fn note(&self, before: bool) {
        let c = if before { &self.before } else { &self.after };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// Reports both counts (`--nocapture` shows them): a test whose race goes one way
    /// only never hit its window. Not asserted: on a loaded machine one way may win a
    /// whole run, and a test must not fail for that.
    fn report(&self, what: &str) {
        let (b, a) = (
            self.before.load(Ordering::Relaxed),
            self.after.load(Ordering::Relaxed),
        );
        eprintln!("{what}: {b} calls got in before, {a} after");
    }
}

fn sorted(mut v: Vec<i32>) -> Vec<i32> {
    v.sort_unstable();
    v
}

// ---------------------------------------------------------------------------------
// 1. A parent exiting while its children fork, exit and are reaped by the new reaper.
// ---------------------------------------------------------------------------------

struct Family {
    p: Task,
    c0: Task,
    /// Every task forked this round, as the reaper numbers it.
    forked: Mutex<Vec<(Task, i32)>>,
    reaped: Mutex<Vec<i32>>,
    /// Where the forks and P's death meet.
    meet: AtomicUsize,
}

#[test]
fn a_dying_parent_hands_every_child_to_its_reaper_which_reaps_each_exactly_once() {
    let iters = race_iterations(20_000, 400);
    let overlap = Overlap::default();
    for &prof in Profile::ALL {
        for ns_init in [false, true] {
            let what = format!(
                "{prof}/reaper={}",
                if ns_init { "ns init" } else { "subreaper" }
            );
            let (sys, init, base) = fresh(prof);
            let dog = Watchdog::arm(what.clone());
            let reaper = if ns_init {
                fork_flags(&init, CloneFlags::NEWPID)
            } else {
                let s = fork(&init);
                s.set_child_subreaper(true);
                s
            };
            race(
                iters,
                |_| {
                    let p = fork(&reaper);
                    let c0 = fork(&p);
                    let forked = vec![
                        (p.clone(), reaper.pid_of(&p)),
                        (c0.clone(), reaper.pid_of(&c0)),
                    ];
                    Family {
                        p,
                        c0,
                        forked: Mutex::new(forked),
                        reaped: Mutex::new(Vec::new()),
                        meet: AtomicUsize::new(0),
                    }
                },
                &[
                    // The children fork (plainly from P, and CLONE_PARENT siblings of c0,
                    // which attach to whoever is c0's parent now) and exit; c0 last.
                    &|f: &Family, r| {
                        let mut alive = Vec::new();
                        for k in 0..4 {
                            if k == r % 4 {
                                meet(&f.meet, 2);
                            }
                            let plain = (r + k) % 2 == 0;
                            let res = if plain {
                                f.p.fork(&CloneArgs::default())
                            } else {
                                f.c0.fork(&CloneArgs {
                                    flags: CloneFlags::PARENT,
                                    ..Default::default()
                                })
                            };
                            match res {
                                Ok(c) => {
                                    f.forked
                                        .lock()
                                        .unwrap()
                                        .push((c.clone(), reaper.pid_of(&c)));
                                    if plain {
                                        overlap.note(true);
                                    }
                                    if k % 2 == 0 {
                                        c.exit(k as i32);
                                    } else {
                                        alive.push(c);
                                    }
                                }
                                // P is dying (EINTR) or gone (ESRCH).
                                Err(Errno::EINTR | Errno::ESRCH) => overlap.note(false),
                                Err(e) => panic!("{what}: fork gave {e}"),
                            }
                        }
                        for c in alive {
                            c.exit(9);
                        }
                        f.c0.exit(99);
                    },
                    // P dies among the forks: after a few, racing the next.
                    &|f: &Family, r| {
                        meet(&f.meet, 2);
                        stagger(jitter(r, 1, WIDTH / 8));
                        if r % 2 == 0 {
                            f.p.exit(5);
                        } else {
                            reaper.kill(reaper.pid_of(&f.p), Signal::KILL).unwrap();
                        }
                    },
                    // The reaper waits all along: P's zombie, then what P handed on.
                    // The reaper always has a child until c0 (the last to exit) is
                    // reaped, so an ECHILD earlier is a child lost in flight.
                    &|f: &Family, r| {
                        stagger(jitter(r, 2, WIDTH));
                        if r % 2 == 0 {
                            drain(&reaper, &f.reaped, &what);
                        } else {
                            drain_blocking(&reaper, &f.reaped, &what);
                        }
                    },
                ],
                |f, r| {
                    dog.tick();
                    let forked = f.forked.into_inner().unwrap();
                    let want = sorted(forked.iter().map(|(_, nr)| *nr).collect());
                    let got = sorted(f.reaped.into_inner().unwrap());
                    assert_eq!(
                        got, want,
                        "{what} round {r}: the reaper reaps P and every child exactly once, \
                         and wait gives ECHILD only after the last"
                    );
                    for (t, _) in &forked {
                        assert_eq!(t.state(), TaskState::Dead, "{what}: reaped");
                    }
                },
            );
            reaper.exit(0);
            reap(&init, &reaper);
            base.check(&sys, &what);
        }
    }
    overlap.report("a parent's death among its forks");
}

struct Chain {
    s: Task,
    p: Task,
    /// A child of `p` whose leader exits before its other thread (a delayed zombie).
    c: Task,
    c_thread: Task,
    /// A child of `c`.
    g: Task,
    /// Tasks that must end reaped, with their numbers as `s` sees them.
    all: Mutex<Vec<(Task, i32)>>,
    reaped: Mutex<Vec<i32>>,
    /// Where the racing sides meet before they go.
    meet: AtomicUsize,
}

#[test]
fn a_delayed_zombie_leader_and_its_children_survive_two_dying_ancestors() {
    let iters = race_iterations(20_000, 300);
    for &prof in Profile::ALL {
        let what = prof.to_string();
        let dog = Watchdog::arm(what.clone());
        let (sys, init, base) = fresh(prof);
        race(
            iters,
            |_| {
                let s = fork(&init);
                s.set_child_subreaper(true);
                let p = fork(&s);
                let c = fork(&p);
                let c_thread = thread(&c);
                let g = fork(&c);
                let all = [&p, &c, &g].map(|t| (t.clone(), s.pid_of(t))).to_vec();
                Chain {
                    s,
                    p,
                    c,
                    c_thread,
                    g,
                    all: Mutex::new(all),
                    reaped: Mutex::new(Vec::new()),
                    meet: AtomicUsize::new(0),
                }
            },
            &[
                // The grandchild forks a sibling (CLONE_PARENT: to whoever is its
                // parent now) and everyone below P ends, the leader of c first.
                &|ch: &Chain, r| {
                    meet(&ch.meet, 3);
                    stagger(jitter(r, 0, WIDTH / 8));
                    match ch.g.fork(&CloneArgs {
                        flags: CloneFlags::PARENT,
                        ..Default::default()
                    }) {
                        Ok(sib) => {
                            ch.all
                                .lock()
                                .unwrap()
                                .push((sib.clone(), ch.s.pid_of(&sib)));
                            sib.exit(3);
                        }
                        Err(Errno::EINTR | Errno::ESRCH) => {}
                        Err(e) => panic!("{what}: CLONE_PARENT fork gave {e}"),
                    }
                    ch.g.exit(4);
                    ch.c.exit(1);
                    ch.c_thread.exit(2);
                },
                &|ch: &Chain, r| {
                    meet(&ch.meet, 3);
                    stagger(jitter(r, 1, WIDTH / 8));
                    ch.p.exit(0);
                },
                // The subreaper reaps what comes to it, or dies itself (its adoptees
                // then go on to init, which reaps orphans).
                &|ch: &Chain, r| {
                    meet(&ch.meet, 3);
                    stagger(jitter(r, 2, WIDTH / 8));
                    match r % 3 {
                        0 => ch.s.exit(0),
                        1 => drain(&ch.s, &ch.reaped, &what),
                        _ => drain_blocking(&ch.s, &ch.reaped, &what),
                    }
                },
            ],
            |ch, r| {
                dog.tick();
                let all = ch.all.into_inner().unwrap();
                if r % 3 != 0 {
                    let want = sorted(all.iter().map(|(_, nr)| *nr).collect());
                    assert_eq!(
                        sorted(ch.reaped.into_inner().unwrap()),
                        want,
                        "{what} round {r}: the subreaper reaps each descendant exactly once"
                    );
                    ch.s.exit(0);
                }
                for (t, nr) in &all {
                    assert_eq!(
                        t.state(),
                        TaskState::Dead,
                        "{what} round {r}: {nr} is a zombie nobody reaps"
                    );
                }
                reap(&init, &ch.s);
            },
        );
        base.check(&sys, &what);
    }
}

struct Threaded {
    p: Task,
    t: Task,
    /// Forked by the thread `t`, not the leader.
    c: Task,
    reaped: Mutex<Vec<i32>>,
}

#[test]
fn children_of_a_thread_reach_the_reaper_when_their_whole_group_dies_at_once() {
    let iters = race_iterations(20_000, 800);
    for &prof in Profile::ALL {
        let what = prof.to_string();
        let dog = Watchdog::arm(what.clone());
        let (sys, init, base) = fresh(prof);
        let reaper = fork(&init);
        reaper.set_child_subreaper(true);
        race(
            iters,
            |_| {
                let p = fork(&reaper);
                let t = thread(&p);
                let c = fork(&t);
                Threaded {
                    p,
                    t,
                    c,
                    reaped: Mutex::new(Vec::new()),
                }
            },
            &[
                &|th: &Threaded, r| {
                    stagger(jitter(r, 0, WIDTH));
                    th.t.exit(0);
                },
                &|th: &Threaded, r| {
                    stagger(jitter(r, 1, WIDTH));
                    th.p.exit(0);
                },
                &|th: &Threaded, r| {
                    stagger(jitter(r, 2, WIDTH));
                    th.c.exit(2);
                },
                &|th: &Threaded, r| {
                    if r % 2 == 0 {
                        drain(&reaper, &th.reaped, &what);
                    } else {
                        drain_blocking(&reaper, &th.reaped, &what);
                    }
                },
            ],
            |th, r| {
                dog.tick();
                let want = sorted(vec![reaper.pid_of(&th.p), reaper.pid_of(&th.c)]);
                assert_eq!(
                    sorted(th.reaped.into_inner().unwrap()),
                    want,
                    "{what} round {r}: the leader and the thread's child, each once"
                );
                for t in [&th.p, &th.t, &th.c] {
                    assert_eq!(t.state(), TaskState::Dead, "{what} round {r}");
                }
            },
        );
        reaper.exit(0);
        reap(&init, &reaper);
        base.check(&sys, &what);
    }
}

struct Ignoring {
    p: Task,
    c: Task,
    waited: Mutex<Option<Result<Option<uproc_tasklist::WaitInfo>, Errno>>>,
}

#[test]
fn a_waiter_asleep_while_sigchld_becomes_ignored_and_its_child_exits_never_hangs() {
    let iters = race_iterations(20_000, 500);
    for &prof in Profile::ALL {
        let what = prof.to_string();
        let dog = Watchdog::arm(what.clone());
        let (sys, init, base) = fresh(prof);
        race(
            iters,
            |_| {
                let p = fork(&init);
                let c = fork(&p);
                Ignoring {
                    p,
                    c,
                    waited: Mutex::new(None),
                }
            },
            &[
                &|i: &Ignoring, _| {
                    *i.waited.lock().unwrap() = Some(i.p.wait(WaitId::All, WaitOptions::EXITED));
                },
                &|i: &Ignoring, r| {
                    stagger(jitter(r, 1, WIDTH));
                    i.p.set_sigchld(uproc_tasklist::SigChld::Ignore);
                },
                &|i: &Ignoring, r| {
                    stagger(jitter(r, 2, WIDTH));
                    i.c.exit(5);
                },
            ],
            |i, r| {
                dog.tick();
                match i.waited.into_inner().unwrap().expect("wait ran") {
                    // Reaped by the wait (it was a zombie before SIGCHLD was ignored).
                    Ok(Some(info)) => assert_eq!(info.status.exited(), Some(5), "{what}"),
                    // Autoreaped: the wait saw no child left.
                    Err(Errno::ECHILD) => {}
                    other => panic!("{what} round {r}: wait gave {other:?}"),
                }
                assert_eq!(
                    i.c.state(),
                    TaskState::Dead,
                    "{what} round {r}: reaped once"
                );
                i.p.exit(0);
                reap(&init, &i.p);
            },
        );
        base.check(&sys, &what);
    }
}

// ---------------------------------------------------------------------------------
// 2. setpgid / setsid / exit racing kill(-pgid) and kill(-1).
// ---------------------------------------------------------------------------------

struct Group {
    leader: Task,
    pgid: i32,
    members: Vec<Task>,
    newcomer: Task,
    forked: Mutex<Option<Result<Task, Errno>>>,
    /// Where the racing sides meet before they go.
    meet: AtomicUsize,
}

#[test]
fn a_group_kill_reaches_every_member_that_stays_while_members_move_and_fork() {
    let iters = race_iterations(20_000, 400);
    let overlap = Overlap::default();
    for &prof in Profile::ALL {
        for everyone in [false, true] {
            let what = format!(
                "{prof}/{}",
                if everyone { "kill(-1)" } else { "kill(-pgid)" }
            );
            let (sys, init, base) = fresh(prof);
            race(
                iters,
                |_| {
                    let leader = fork(&init);
                    leader.setpgid(0, 0).unwrap();
                    let pgid = leader.getpgid();
                    let members: Vec<Task> = (0..4).map(|_| fork(&leader)).collect();
                    let newcomer = fork(&leader);
                    newcomer.setpgid(0, 0).unwrap();
                    Group {
                        leader,
                        pgid,
                        members,
                        newcomer,
                        forked: Mutex::new(None),
                        meet: AtomicUsize::new(0),
                    }
                },
                &[
                    &|g: &Group, r| {
                        meet(&g.meet, 3);
                        stagger(jitter(r, 0, WIDTH / 8));
                        let target = if everyone { -1 } else { -g.pgid };
                        init.kill(target, Signal::KILL)
                            .unwrap_or_else(|e| panic!("{what}: the group has members: {e}"));
                    },
                    // Member 0 leaves the group (or dies), or the newcomer joins it.
                    &|g: &Group, r| {
                        meet(&g.meet, 3);
                        stagger(jitter(r, 1, WIDTH / 8));
                        let m = &g.members[0];
                        let res = match r % 4 {
                            0 => m.setpgid(0, 0),
                            1 => m.setsid().map(|_| ()),
                            2 => {
                                m.exit(0);
                                Ok(())
                            }
                            _ => g.leader.setpgid(g.leader.pid_of(&g.newcomer), g.pgid),
                        };
                        // ESRCH: the caller (or the newcomer) was killed first.
                        assert!(
                            matches!(res, Ok(()) | Err(Errno::ESRCH)),
                            "{what}: moving a member gave {res:?}"
                        );
                    },
                    // Member 1 forks: its child joins the group (and the system).
                    &|g: &Group, r| {
                        meet(&g.meet, 3);
                        // Spread over the kill's walk, which takes longer than the fork.
                        stagger(jitter(r, 2, WIDTH * 2));
                        let mut args = CloneArgs::default();
                        args.flags.set(CloneFlags::PARENT, r % 3 == 0);
                        *g.forked.lock().unwrap() = Some(g.members[1].fork(&args));
                    },
                ],
                |g, r| {
                    for (i, t) in [&g.leader, &g.members[1], &g.members[2], &g.members[3]]
                        .into_iter()
                        .enumerate()
                    {
                        assert!(
                            !t.is_alive(),
                            "{what} round {r}: member {i} was in the group all along and \
                             escaped the kill"
                        );
                    }
                    if everyone {
                        assert!(!g.members[0].is_alive(), "{what}: kill(-1) reaches a mover");
                        assert!(!g.newcomer.is_alive(), "{what}: kill(-1) reaches everyone");
                    }
                    let forked = g.forked.into_inner().unwrap().expect("fork ran");
                    overlap.note(forked.is_ok());
                    match forked {
                        Ok(c) => {
                            assert!(
                                !c.is_alive(),
                                "{what} round {r}: a child forked by a member before the \
                                 kill finished escaped it (it fails with EINTR or dies)"
                            );
                        }
                        Err(e) => assert!(
                            e == Errno::EINTR || e == Errno::ESRCH,
                            "{what}: fork gave {e}"
                        ),
                    }
                    for t in [&g.members[0], &g.newcomer] {
                        if t.is_alive() {
                            t.exit(0);
                        }
                    }
                    reap(&init, &g.leader);
                },
            );
            base.check(&sys, &what);
        }
    }
    overlap.report("a group kill among a member's fork");
}

struct Chained {
    m: Task,
    pgid: i32,
    /// Every task the chain forked, in order.
    forked: Mutex<Vec<Task>>,
    /// Links forked so far.
    started: AtomicUsize,
}

#[test]
fn a_chain_of_forks_racing_a_group_kill_never_escapes_it() {
    let iters = race_iterations(2_000, 40);
    // Long enough to outrun a few walks over the pids in a debug build.
    let chain: usize = std::env::var("UPROC_CHAIN")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    for &prof in Profile::ALL {
        for everyone in [false, true] {
            let what = format!(
                "{prof}/{}",
                if everyone { "kill(-1)" } else { "kill(-pgid)" }
            );
            let (sys, init, base) = fresh(prof);
            let escaped = AtomicUsize::new(0);
            // Bystanders (outside the group) make each walk over the pids long, so
            // that the chain can outrun a bounded number of walks.
            let bystanders: Vec<Task> = if everyone {
                Vec::new()
            } else {
                (0..1000).map(|_| fork(&init)).collect()
            };
            race(
                iters,
                |_| {
                    let m = fork(&init);
                    m.setpgid(0, 0).unwrap();
                    Chained {
                        pgid: m.getpgid(),
                        m,
                        forked: Mutex::new(Vec::new()),
                        started: AtomicUsize::new(0),
                    }
                },
                &[
                    // The kill lands while the chain runs.
                    &|c: &Chained, r| {
                        let start = Instant::now();
                        while c.started.load(Ordering::Acquire) < 1 + r % 8
                            && start.elapsed() < Duration::from_secs(1)
                        {
                            std::hint::spin_loop();
                        }
                        let target = if everyone { -1 } else { -c.pgid };
                        init.kill(target, Signal::KILL).unwrap();
                    },
                    // Each new child forks the next at once (each one is a member of
                    // the group from its attach on).
                    &|c: &Chained, r| {
                        let mut cur = c.m.clone();
                        // Every other round, CLONE_PARENT links: each a sibling of the
                        // last, so a child of the target's parent.
                        let mut args = CloneArgs::default();
                        args.flags.set(CloneFlags::PARENT, r % 2 == 0);
                        for _ in 0..chain {
                            match cur.fork(&args) {
                                Ok(next) => {
                                    c.started.fetch_add(1, Ordering::Release);
                                    c.forked.lock().unwrap().push(next.clone());
                                    cur = next;
                                }
                                Err(Errno::EINTR | Errno::ESRCH) => break,
                                Err(e) => panic!("{what}: fork gave {e}"),
                            }
                        }
                    },
                ],
                |c, r| {
                    assert!(!c.m.is_alive(), "{what}: the target died");
                    let forked = c.forked.into_inner().unwrap();
                    if std::env::var("UPROC_CHAIN_DEBUG").is_ok() {
                        eprintln!("{what} round {r}: chain of {}", forked.len());
                    }
                    let alive: Vec<usize> = (0..forked.len())
                        .filter(|&i| forked[i].is_alive())
                        .collect();
                    if !alive.is_empty() {
                        escaped.fetch_add(1, Ordering::Relaxed);
                        eprintln!(
                            "{what} round {r}: of a chain of {} forks, links {alive:?} \
                             escaped the kill",
                            forked.len()
                        );
                    }
                    for t in forked.iter().rev() {
                        if t.is_alive() {
                            t.exit(0);
                        }
                    }
                    reap(&init, &c.m);
                    if r % 2 == 0 {
                        // Siblings of the target: init's own children.
                        for t in &forked {
                            reap(&init, t);
                        }
                    }
                },
            );
            assert_eq!(
                escaped.load(Ordering::Relaxed),
                0,
                "{what}: Linux holds tasklist_lock over the whole walk: every child forked \
                 before it is killed, every fork after it fails (its parent is dying)"
            );
            for b in bystanders {
                assert!(b.is_alive(), "{what}: a bystander was killed");
                b.exit(0);
                reap(&init, &b);
            }
            base.check(&sys, &what);
        }
    }
}

struct Joining {
    leader: Task,
    pgid: i32,
    x: Task,
    joined: Mutex<Option<Result<(), Errno>>>,
    /// Where the racing sides meet before they go.
    meet: AtomicUsize,
}

#[test]
fn joining_a_process_group_whose_last_member_is_reaped_meanwhile_is_all_or_nothing() {
    let iters = race_iterations(20_000, 1_000);
    let overlap = Overlap::default();
    for &prof in Profile::ALL {
        let what = prof.to_string();
        let (sys, init, base) = fresh(prof);
        race(
            iters,
            |_| {
                let leader = fork(&init);
                leader.setpgid(0, 0).unwrap();
                Joining {
                    pgid: leader.getpgid(),
                    leader,
                    x: fork(&init),
                    joined: Mutex::new(None),
                    meet: AtomicUsize::new(0),
                }
            },
            &[
                &|j: &Joining, r| {
                    meet(&j.meet, 2);
                    stagger(jitter(r, 0, WIDTH / 8));
                    *j.joined.lock().unwrap() = Some(init.setpgid(init.pid_of(&j.x), j.pgid));
                },
                &|j: &Joining, r| {
                    meet(&j.meet, 2);
                    stagger(jitter(r, 1, WIDTH / 8));
                    j.leader.exit(0);
                    reap(&init, &j.leader);
                },
            ],
            |j, r| {
                let joined = j.joined.into_inner().unwrap().expect("setpgid ran");
                overlap.note(joined.is_ok());
                match joined {
                    Ok(()) => {
                        assert_eq!(j.x.getpgid(), j.pgid, "{what} round {r}: joined");
                        // The group lives on in its new member: its number stays taken
                        // and a group kill reaches it.
                        assert!(
                            sys.root_ns().find_pid(j.pgid).is_some(),
                            "{what} round {r}: a process group's id stays allocated while \
                             it has a member"
                        );
                        assert_eq!(init.kill(-j.pgid, Signal::KILL), Ok(()), "{what}");
                        assert!(!j.x.is_alive(), "{what} round {r}: kill(-pgid) reached it");
                    }
                    Err(Errno::EPERM) => {
                        assert_eq!(j.x.getpgid(), init.getpgid(), "{what}: unchanged");
                        assert_eq!(
                            init.kill(-j.pgid, Signal::KILL),
                            Err(Errno::ESRCH),
                            "{what} round {r}: the group is gone"
                        );
                        j.x.exit(0);
                    }
                    Err(e) => panic!("{what}: setpgid gave {e}"),
                }
                reap(&init, &j.x);
                assert!(
                    sys.root_ns().find_pid(j.pgid).is_none(),
                    "{what} round {r}: the group's id is freed with its last member"
                );
            },
        );
        base.check(&sys, &what);
    }
    overlap.report("setpgid among the last member's reap");
}

struct Marking {
    s: Task,
    p: Task,
    chain: Mutex<Vec<Task>>,
}

#[test]
fn a_subreaper_marking_racing_a_chain_of_forks_marks_every_descendant() {
    let iters = race_iterations(5_000, 150);
    for &prof in Profile::ALL {
        let what = prof.to_string();
        let (sys, init, base) = fresh(prof);
        race(
            iters,
            |_| {
                let s = fork(&init);
                let p = fork(&s);
                Marking {
                    s,
                    p,
                    chain: Mutex::new(Vec::new()),
                }
            },
            &[
                // The marking walk starts while the chain grows.
                &|m: &Marking, r| {
                    let start = Instant::now();
                    while m.chain.lock().unwrap().len() < r % 30
                        && start.elapsed() < Duration::from_secs(1)
                    {
                        std::hint::spin_loop();
                    }
                    m.s.set_child_subreaper(true);
                },
                // Each link forks the next at once.
                &|m: &Marking, _| {
                    let mut cur = m.p.clone();
                    for _ in 0..40 {
                        let next = fork(&cur);
                        m.chain.lock().unwrap().push(next.clone());
                        cur = next;
                    }
                },
            ],
            |m, r| {
                // Every link but the last dies, top down: each orphan must go to the
                // subreaper (every descendant was marked or forked from a marked one).
                let chain = m.chain.into_inner().unwrap();
                m.p.exit(0);
                for t in &chain[..chain.len() - 1] {
                    t.exit(0);
                }
                for t in &chain {
                    let parent = t.parent().expect("a parent");
                    assert!(
                        parent == m.s,
                        "{what} round {r}: an orphan passed its subreaper by (went to pid {})",
                        parent.pid()
                    );
                }
                chain.last().unwrap().exit(0);
                loop {
                    match m.s.wait(WaitId::All, WaitOptions::EXITED) {
                        Ok(Some(_)) => {}
                        Err(Errno::ECHILD) => break,
                        other => panic!("{what}: {other:?}"),
                    }
                }
                for t in chain.iter().chain([&m.p]) {
                    assert_eq!(t.state(), TaskState::Dead, "{what} round {r}: reaped by S");
                }
                m.s.exit(0);
                reap(&init, &m.s);
            },
        );
        base.check(&sys, &what);
    }
}

// ---------------------------------------------------------------------------------
// 3. cgroup.procs migration racing forks, exits, cgroup.kill and rmdir.
// ---------------------------------------------------------------------------------

struct Moving {
    a: uproc_cgroup::Cgroup,
    p: Task,
    tgid: String,
    thread: Task,
    forked: Mutex<Vec<Task>>,
    moved: Mutex<Option<Result<(), Errno>>>,
    /// Where the racing sides meet before they go.
    meet: AtomicUsize,
}

/// The tgids `cgroup.procs` of `cg` lists.
fn procs(cg: &uproc_cgroup::Cgroup) -> Vec<String> {
    let s = cg.read("cgroup.procs").expect("cgroup.procs is readable");
    s.lines().map(str::to_owned).collect()
}

#[test]
fn a_group_migration_racing_forks_exits_and_cgroup_kill_never_splits_or_leaks() {
    let iters = race_iterations(20_000, 400);
    for &prof in Profile::ALL {
        let what = prof.to_string();
        let (sys, init, base) = fresh(prof);
        let b = sys.cgroup_root().mkdir("b").unwrap();
        race(
            iters,
            |r| {
                let a = sys.cgroup_root().mkdir(&format!("a{r}")).unwrap();
                let p = fork(&init);
                a.attach(&p).unwrap();
                let thread = fork_flags(&p, CloneFlags::NEW_THREAD);
                Moving {
                    tgid: p.nspid()[0].to_string(),
                    a,
                    p,
                    thread,
                    forked: Mutex::new(Vec::new()),
                    moved: Mutex::new(None),
                    meet: AtomicUsize::new(0),
                }
            },
            &[
                &|m: &Moving, r| {
                    meet(&m.meet, 3);
                    stagger(jitter(r, 0, WIDTH / 8));
                    *m.moved.lock().unwrap() = Some(b.write("cgroup.procs", &m.tgid));
                },
                // The group grows (a thread, a child process) and a thread exits.
                &|m: &Moving, r| {
                    meet(&m.meet, 3);
                    stagger(jitter(r, 1, WIDTH / 8));
                    for flags in [CloneFlags::NEW_THREAD, CloneFlags::empty()] {
                        match m.p.fork(&CloneArgs {
                            flags,
                            ..Default::default()
                        }) {
                            Ok(t) => m.forked.lock().unwrap().push(t),
                            Err(Errno::EINTR | Errno::ESRCH) => {}
                            Err(e) => panic!("{what}: fork gave {e}"),
                        }
                    }
                    if r % 2 == 0 {
                        m.thread.exit(0);
                    }
                },
                // The old cgroup is killed (every other round).
                &|m: &Moving, r| {
                    meet(&m.meet, 3);
                    stagger(jitter(r, 2, WIDTH / 8));
                    if r % 2 == 1 {
                        m.a.write("cgroup.kill", "1").unwrap();
                    }
                },
            ],
            |m, r| {
                let killed = r % 2 == 1;
                let moved = m.moved.into_inner().unwrap().expect("migration ran");
                assert!(
                    matches!(moved, Ok(()) | Err(Errno::ESRCH)),
                    "{what}: cgroup.procs write gave {moved:?}"
                );
                let forked = m.forked.into_inner().unwrap();
                let group: Vec<&Task> = [&m.p, &m.thread]
                    .into_iter()
                    .chain(forked.iter().filter(|t| !t.is_thread_group_leader()))
                    .collect();
                for t in group.iter().filter(|t| t.is_alive()) {
                    assert_eq!(
                        t.cgroup(),
                        m.p.cgroup(),
                        "{what} round {r}: a thread group is never split across cgroups"
                    );
                }
                if killed {
                    // The kill ran on `a` while P was there or after it left: P and
                    // its threads (a thread forked meanwhile included) live only in
                    // `b`. (A child process whose fork began after the kill did may
                    // rightly outlive it in `a`, as in Linux: it is not checked.)
                    for t in group.iter().copied() {
                        assert!(
                            !(t.is_alive() && t.cgroup() == m.a),
                            "{what} round {r}: a task in the killed cgroup outlived \
                             cgroup.kill (leader {}, P {}, migration {moved:?}, P in {})",
                            t.is_thread_group_leader(),
                            *t == m.p,
                            m.p.cgroup().path()
                        );
                    }
                }
                // Membership agrees with the tasks: every live task of `a` is listed.
                let listed = procs(&m.a);
                for t in [&m.p].into_iter().chain(forked.iter()) {
                    if t.is_alive() && t.cgroup() == m.a && t.is_thread_group_leader() {
                        assert!(
                            listed.contains(&t.nspid()[0].to_string()),
                            "{what} round {r}: a live member missing from cgroup.procs"
                        );
                    }
                }
                // Tear down: everything dies and is reaped, then `a` is empty.
                if m.p.is_alive() {
                    init.kill(init.pid_of(&m.p), Signal::KILL).unwrap();
                }
                for c in forked.iter().filter(|t| t.is_thread_group_leader()) {
                    if c.is_alive() {
                        c.exit(0);
                    }
                }
                reap(&init, &m.p);
                // P's children went to init (autoreaped).
                for t in forked.iter().chain([&m.thread]) {
                    assert_eq!(t.state(), TaskState::Dead, "{what}: every task reaped");
                }
                assert!(!m.a.is_populated(), "{what} round {r}: nothing left in a");
                assert!(
                    procs(&m.a).is_empty(),
                    "{what} round {r}: cgroup.procs empty"
                );
                assert_eq!(m.a.pids_current(), 0, "{what} round {r}: a's charges");
                m.a.rmdir().expect("an empty cgroup is removable");
            },
        );
        assert_eq!(b.pids_current(), 0, "{what}: b's charges");
        assert!(!b.is_populated(), "{what}: b is empty");
        b.rmdir().unwrap();
        base.check(&sys, &what);
    }
}

/// The tasks of `all` that are charged to `cg` right now (live or zombie, not reaped).
fn charged_to(all: &[Task], cg: &uproc_cgroup::Cgroup) -> u64 {
    all.iter()
        .filter(|t| t.state() != TaskState::Dead && t.cgroup() == *cg)
        .count() as u64
}

#[test]
fn charges_and_listings_balance_while_groups_migrate_fork_threads_and_exit() {
    let rounds = race_iterations(20_000, 1_500);
    for &prof in Profile::ALL {
        let what = prof.to_string();
        let (sys, init, base) = fresh(prof);
        let a = sys.cgroup_root().mkdir("a").unwrap();
        let b = sys.cgroup_root().mkdir("b").unwrap();
        let workers: Vec<Task> = (0..3).map(|_| fork(&init)).collect();
        for w in &workers {
            a.attach(w).unwrap();
        }
        let tgids: Vec<String> = workers.iter().map(|w| w.nspid()[0].to_string()).collect();
        let stop = AtomicBool::new(false);
        let kept: Mutex<Vec<Task>> = Mutex::new(Vec::new());
        std::thread::scope(|sc| {
            // Stops the mover however the scope's body ends: a forker's panic, re-raised
            // by its join below, then fails the test instead of hanging it.
            let _stop_mover = StopOnDrop(&stop);
            let mover = sc.spawn(|| {
                let mut i = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    let to = if i % 2 == 0 { &b } else { &a };
                    to.write("cgroup.procs", &tgids[i % tgids.len()])
                        .unwrap_or_else(|e| panic!("{what}: cgroup.procs write gave {e}"));
                    i += 1;
                }
            });
            let forkers: Vec<_> = workers
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    let (kept, what) = (&kept, &what);
                    sc.spawn(move || {
                        let mut threads: Vec<Task> = Vec::new();
                        for k in 0..rounds {
                            match (k + i) % 4 {
                                0 => threads.push(thread(w)),
                                1 => {
                                    if let Some(t) = threads.pop() {
                                        t.exit(0);
                                    }
                                }
                                2 => {
                                    let c = fork(w);
                                    c.exit(1);
                                    reap(w, &c);
                                }
                                _ => {
                                    // A child kept (its cgroup is its parent's at fork).
                                    if k % 64 == 3 {
                                        kept.lock().unwrap().push(fork(w));
                                    }
                                }
                            }
                            // Read with the group's migration held off: two plain
                            // reads straddle a move of the group now and then.
                            uproc_cgroup::Attachable::with_threadgroup_locked(w, &mut |links| {
                                let cg = w.cgroup();
                                for t in &threads {
                                    assert_eq!(
                                        t.cgroup(),
                                        cg,
                                        "{what}: a thread group split across cgroups"
                                    );
                                }
                                for l in links {
                                    assert_eq!(l.cgroup(), cg, "{what}: a live thread's link");
                                }
                                Ok(())
                            })
                            .unwrap();
                        }
                        threads
                    })
                })
                .collect();
            let threads: Vec<Task> = forkers
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect();
            stop.store(true, Ordering::Relaxed);
            mover.join().unwrap();
            // At rest: each cgroup's charge is the tasks it holds, and cgroup.procs
            // lists exactly its live processes.
            let kept = kept.lock().unwrap().clone();
            let all: Vec<Task> = workers
                .iter()
                .chain(&threads)
                .chain(&kept)
                .cloned()
                .collect();
            for cg in [&a, &b] {
                assert_eq!(
                    cg.pids_current(),
                    charged_to(&all, cg),
                    "{what}: {}'s pids.current is the tasks charged to it",
                    cg.path()
                );
                let mut listed = procs(cg);
                listed.sort();
                let mut want: Vec<String> = workers
                    .iter()
                    .chain(&kept)
                    .filter(|t| t.cgroup() == *cg)
                    .map(|t| t.nspid()[0].to_string())
                    .collect();
                want.sort();
                assert_eq!(listed, want, "{what}: {}'s cgroup.procs", cg.path());
                assert_eq!(cg.is_populated(), !want.is_empty(), "{what}: populated");
            }
            for t in threads {
                t.exit(0);
            }
            for c in kept {
                c.exit(0);
            }
        });
        for w in &workers {
            w.exit(0);
            reap(&init, w);
        }
        for cg in [a, b] {
            assert_eq!(cg.pids_current(), 0, "{what}: charges at rest");
            assert!(!cg.is_populated(), "{what}: empty at rest");
            cg.rmdir().expect("an empty cgroup is removable");
        }
        base.check(&sys, &what);
    }
}

struct Removal {
    a: uproc_cgroup::Cgroup,
    p: Task,
    forked: Mutex<Option<Result<Task, Errno>>>,
    moved: Mutex<Option<Result<(), Errno>>>,
    removed: Mutex<Option<Result<(), Errno>>>,
    /// Where the racing sides meet before they go.
    meet: AtomicUsize,
}

#[test]
fn rmdir_racing_a_fork_into_the_cgroup_and_a_migration_is_ebusy_exactly_when_populated() {
    let iters = race_iterations(20_000, 800);
    let overlap = Overlap::default();
    for &prof in Profile::ALL {
        let what = prof.to_string();
        let (sys, init, base) = fresh(prof);
        race(
            iters,
            |r| {
                let a = sys.cgroup_root().mkdir(&format!("a{r}")).unwrap();
                Removal {
                    a,
                    p: fork(&init),
                    forked: Mutex::new(None),
                    moved: Mutex::new(None),
                    removed: Mutex::new(None),
                    meet: AtomicUsize::new(0),
                }
            },
            &[
                &|m: &Removal, r| {
                    meet(&m.meet, 3);
                    stagger(jitter(r, 0, WIDTH / 8));
                    *m.removed.lock().unwrap() = Some(m.a.rmdir());
                },
                &|m: &Removal, r| {
                    meet(&m.meet, 3);
                    stagger(jitter(r, 1, WIDTH / 8));
                    let res = if r % 2 == 0 {
                        m.p.fork(&into_cgroup(&m.a))
                    } else {
                        let mut a = CloneArgs::default();
                        a.flags.set(CloneFlags::NEW_THREAD, r % 4 == 1);
                        m.p.fork(&a)
                    };
                    *m.forked.lock().unwrap() = Some(res);
                },
                &|m: &Removal, r| {
                    meet(&m.meet, 3);
                    stagger(jitter(r, 2, WIDTH / 8));
                    if r % 2 == 1 {
                        *m.moved.lock().unwrap() = Some(m.a.attach(&m.p));
                    }
                },
            ],
            |m, r| {
                let removed = m.removed.into_inner().unwrap().expect("rmdir ran");
                overlap.note(removed.is_ok());
                let forked = m.forked.into_inner().unwrap().expect("fork ran");
                let moved = m.moved.into_inner().unwrap();
                let mut in_a = 0;
                if let Ok(c) = &forked {
                    in_a += usize::from(c.cgroup() == m.a);
                }
                in_a += usize::from(m.p.cgroup() == m.a);
                match removed {
                    Ok(()) => {
                        assert_eq!(
                            in_a, 0,
                            "{what} round {r}: rmdir succeeded but a task is in the removed \
                             cgroup (fork {forked:?}, attach {moved:?})"
                        );
                        assert!(m.a.is_removed());
                    }
                    Err(Errno::EBUSY) => {
                        assert!(
                            in_a > 0 && m.a.is_populated(),
                            "{what} round {r}: rmdir gave EBUSY but nothing is in the cgroup \
                             (fork {forked:?}, attach {moved:?})"
                        );
                    }
                    Err(e) => panic!("{what}: rmdir gave {e}"),
                }
                if let Err(e) = &forked {
                    assert_eq!(*e, Errno::ENOENT, "{what}: a fork into a removed cgroup");
                }
                if let Some(Err(e)) = moved {
                    assert_eq!(e, Errno::ENOENT, "{what}: an attach to a removed cgroup");
                }
                if let Ok(c) = forked {
                    c.exit(0);
                    if c.is_thread_group_leader() {
                        reap(&m.p, &c);
                    }
                }
                m.p.exit(0);
                reap(&init, &m.p);
                assert_eq!(m.a.pids_current(), 0, "{what} round {r}: charges");
                if !m.a.is_removed() {
                    m.a.rmdir().expect("empty now");
                }
            },
        );
        base.check(&sys, &what);
    }
    overlap.report("rmdir among a fork and an attach");
}

struct LastExit {
    a: uproc_cgroup::Cgroup,
    p: Task,
    c: Task,
    removed: Mutex<Option<Result<(), Errno>>>,
    /// Where the racing sides meet before they go.
    meet: AtomicUsize,
}

#[test]
fn rmdir_racing_the_exit_of_the_last_member_succeeds_once_it_is_a_zombie() {
    let iters = race_iterations(20_000, 800);
    let overlap = Overlap::default();
    for &prof in Profile::ALL {
        let what = prof.to_string();
        let (sys, init, base) = fresh(prof);
        race(
            iters,
            |r| {
                let a = sys.cgroup_root().mkdir(&format!("z{r}")).unwrap();
                let p = fork(&init);
                let c = p.fork(&into_cgroup(&a)).unwrap();
                LastExit {
                    a,
                    p,
                    c,
                    removed: Mutex::new(None),
                    meet: AtomicUsize::new(0),
                }
            },
            &[
                &|l: &LastExit, r| {
                    meet(&l.meet, 2);
                    stagger(jitter(r, 0, WIDTH / 8));
                    l.c.exit(0);
                },
                &|l: &LastExit, r| {
                    meet(&l.meet, 2);
                    stagger(jitter(r, 1, WIDTH / 8));
                    *l.removed.lock().unwrap() = Some(l.a.rmdir());
                },
            ],
            |l, r| {
                let removed = l.removed.into_inner().unwrap().expect("rmdir ran");
                overlap.note(removed.is_err());
                assert!(
                    matches!(removed, Ok(()) | Err(Errno::EBUSY)),
                    "{what}: rmdir gave {removed:?}"
                );
                // The member is a zombie now: the cgroup is no longer populated (a
                // zombie leaves cgroup.procs at its exit, as in Linux) and removable.
                assert!(
                    !l.a.is_populated(),
                    "{what} round {r}: a zombie does not populate"
                );
                if removed.is_err() {
                    assert!(procs(&l.a).is_empty(), "{what} round {r}: nor is it listed");
                    l.a.rmdir()
                        .unwrap_or_else(|e| panic!("{what} round {r}: rmdir after the exit: {e}"));
                }
                reap(&l.p, &l.c);
                assert_eq!(l.a.pids_current(), 0, "{what} round {r}: uncharged at reap");
                l.p.exit(0);
                reap(&init, &l.p);
            },
        );
        base.check(&sys, &what);
    }
    overlap.report("rmdir among the last exit");
}

// ---------------------------------------------------------------------------------
// 4. A namespace init dying while forks into its namespace run (nested, set_tid).
// ---------------------------------------------------------------------------------

struct Nest {
    /// Init of the outer namespace (level 1), a child of the runtime init.
    n1: Task,
    /// Init of the inner namespace (level 2), a child of `n1`.
    n2: Task,
    /// A member of the inner namespace.
    x: Task,
    /// Forks into the inner namespace from the root level.
    outsider: Task,
    forked: Mutex<Vec<Task>>,
    /// Where the forks and the init's death meet.
    meet: AtomicUsize,
}

#[test]
fn a_dying_namespace_init_leaves_nothing_alive_and_is_reapable_exactly_when_empty() {
    let iters = race_iterations(10_000, 250);
    let overlap = Overlap::default();
    for &prof in Profile::ALL {
        for outer_dies in [false, true] {
            let what = format!(
                "{prof}/{}",
                if outer_dies {
                    "outer init dies"
                } else {
                    "inner init dies"
                }
            );
            let (sys, init, base) = fresh(prof);
            race(
                iters,
                |_| {
                    let n1 = fork_flags(&init, CloneFlags::NEWPID);
                    let n2 = fork_flags(&n1, CloneFlags::NEWPID);
                    let x = fork(&n2);
                    let outsider = fork(&init);
                    outsider.set_cap_checkpoint_restore(true);
                    outsider.setns_pid(&n2.pid_ns()).unwrap();
                    Nest {
                        n1,
                        n2,
                        x,
                        outsider,
                        forked: Mutex::new(Vec::new()),
                        meet: AtomicUsize::new(0),
                    }
                },
                &[
                    // The init dies among the forks: after a few, racing the next.
                    &|n: &Nest, r| {
                        meet(&n.meet, 2);
                        stagger(jitter(r, 0, WIDTH / 8));
                        if outer_dies {
                            init.kill(init.pid_of(&n.n1), Signal::KILL).unwrap();
                        } else {
                            n.n1.kill(n.n1.pid_of(&n.n2), Signal::KILL).unwrap();
                        }
                    },
                    // Forks into the inner namespace from outside: plain and with a
                    // chosen number there.
                    &|n: &Nest, r| {
                        for k in 0..4 {
                            if k == r % 4 {
                                meet(&n.meet, 2);
                            }
                            let set_tid = if k == 1 {
                                vec![20_000 + r as i32 % 1000]
                            } else {
                                vec![]
                            };
                            match n.outsider.fork(&CloneArgs {
                                set_tid,
                                ..Default::default()
                            }) {
                                Ok(c) => {
                                    overlap.note(true);
                                    n.forked.lock().unwrap().push(c);
                                }
                                Err(Errno::ENOMEM) => overlap.note(false),
                                Err(e) => panic!("{what}: fork into the namespace gave {e}"),
                            }
                        }
                    },
                    // A member forks inside it.
                    &|n: &Nest, r| {
                        stagger(jitter(r, 2, WIDTH));
                        match n.x.fork(&CloneArgs::default()) {
                            Ok(c) => n.forked.lock().unwrap().push(c),
                            Err(Errno::ENOMEM | Errno::EINTR | Errno::ESRCH) => {}
                            Err(e) => panic!("{what}: fork inside the namespace gave {e}"),
                        }
                    },
                ],
                |n, r| {
                    let forked = n.forked.into_inner().unwrap();
                    let ns2 = n.n2.pid_ns();
                    let ns1 = n.n1.pid_ns();
                    for t in forked.iter().chain([&n.x, &n.n2]) {
                        assert!(
                            !t.is_alive(),
                            "{what} round {r}: a task outlived its namespace"
                        );
                    }
                    assert!(!ns2.is_adding(), "{what}: the inner namespace is closed");
                    assert_eq!(
                        n.outsider.fork(&CloneArgs::default()).map(|_| ()),
                        Err(Errno::ENOMEM),
                        "{what}: a fork into a dead namespace"
                    );
                    // The outsider's children are zombies only it can reap: the dead
                    // init (and, when it died, the outer one) waits for them.
                    let outsiders: Vec<&Task> = forked
                        .iter()
                        .filter(|c| c.parent().is_some_and(|p| p == n.outsider))
                        .collect();
                    let (dead_init, its_parent) = if outer_dies {
                        (&n.n1, &init)
                    } else {
                        (&n.n2, &n.n1)
                    };
                    let dead_nr = its_parent.pid_of(dead_init);
                    let opts = WaitOptions::EXITED | WaitOptions::NOHANG;
                    if !outsiders.is_empty() {
                        assert_eq!(
                            its_parent
                                .wait(WaitId::Pid(dead_nr), opts)
                                .map(|i| i.is_some()),
                            Ok(false),
                            "{what} round {r}: the dead init is reaped only once its \
                             namespace is empty ({} zombies left)",
                            outsiders.len()
                        );
                    }
                    for c in &outsiders {
                        reap(&n.outsider, c);
                    }
                    let info = its_parent.wait(WaitId::Pid(dead_nr), opts);
                    assert!(
                        matches!(info, Ok(Some(_))),
                        "{what} round {r}: the dead init is reapable once its namespace is \
                         empty: {info:?}"
                    );
                    if !outer_dies {
                        n.n1.exit(0);
                        reap(&init, &n.n1);
                    }
                    for t in forked.iter().chain([&n.x, &n.n2, &n.n1]) {
                        assert_eq!(t.state(), TaskState::Dead, "{what} round {r}: reaped");
                    }
                    assert_eq!(ns2.nr_allocated(), 0, "{what} round {r}: inner pids");
                    assert_eq!(ns1.nr_allocated(), 0, "{what} round {r}: outer pids");
                    n.outsider.exit(0);
                    reap(&init, &n.outsider);
                },
            );
            base.check(&sys, &what);
        }
    }
    overlap.report("an init's death among forks into its namespace");
}

struct Draining {
    n: Task,
    outsider: Task,
    zombies: Vec<Task>,
    member: Task,
}

#[test]
fn a_dead_init_s_parent_asleep_in_wait_wakes_when_the_last_zombie_is_reaped() {
    let iters = race_iterations(10_000, 300);
    for &prof in Profile::ALL {
        let what = prof.to_string();
        let dog = Watchdog::arm(what.clone());
        let (sys, init, base) = fresh(prof);
        let outsider = fork(&init);
        race(
            iters,
            |_| {
                let n = fork_flags(&init, CloneFlags::NEWPID);
                let member = fork(&n);
                outsider.setns_pid(&n.pid_ns()).unwrap();
                // Children of the outsider inside the namespace: after the zap, zombies
                // only the outsider can reap.
                let zombies: Vec<Task> = (0..3).map(|_| fork(&outsider)).collect();
                init.kill(init.pid_of(&n), Signal::KILL).unwrap();
                Draining {
                    n,
                    outsider: outsider.clone(),
                    zombies,
                    member,
                }
            },
            &[
                // The parent sleeps in wait for the dead init.
                &|d: &Draining, _| {
                    let info = init
                        .wait(WaitId::Pid(init.pid_of(&d.n)), WaitOptions::EXITED)
                        .unwrap_or_else(|e| panic!("{what}: waiting for the dead init: {e}"));
                    assert!(info.is_some());
                },
                // The outsider reaps the last zombies meanwhile.
                &|d: &Draining, r| {
                    stagger(jitter(r, 1, WIDTH));
                    for z in &d.zombies {
                        reap(&d.outsider, z);
                    }
                },
            ],
            |d, r| {
                dog.tick();
                for t in d.zombies.iter().chain([&d.n, &d.member]) {
                    assert_eq!(t.state(), TaskState::Dead, "{what} round {r}: reaped");
                }
                assert_eq!(d.n.pid_ns().nr_allocated(), 0, "{what} round {r}: empty");
            },
        );
        outsider.exit(0);
        reap(&init, &outsider);
        base.check(&sys, &what);
    }
}

// ---------------------------------------------------------------------------------
// 5. pidfds racing the reap and the reuse of the number.
// ---------------------------------------------------------------------------------

struct Reuse {
    child: Task,
    code: i32,
    fd: uproc_pidfs::PidFd,
    /// The task forked after the child was reaped that reused its number, if any.
    after: Mutex<Vec<Task>>,
    /// The status the pidfd's waitid / info reported, if any.
    seen: Mutex<Vec<uproc_abi::WaitStatus>>,
    /// The reusing side is done.
    done: AtomicBool,
}

#[test]
fn a_pidfd_never_reaches_the_task_that_reused_its_number() {
    for &prof in Profile::ALL {
        // Scalable's rounds are long (a number comes back after hundreds of forks).
        let iters = if prof == Profile::Scalable {
            race_iterations(2_000, 100)
        } else {
            race_iterations(20_000, 1_500)
        };
        let what = prof.to_string();
        let (sys, init, base) = fresh(prof);
        // A namespace with few numbers, so that they come round again quickly: once
        // its cursor passed 300, automatic allocation hands out only 300..310.
        let n = fork_flags(&init, CloneFlags::NEWPID);
        n.pid_ns().set_pid_max(310).unwrap();
        let reused = AtomicUsize::new(0);
        race(
            iters,
            |r| {
                let child = fork(&n);
                let fd = n
                    .pidfd_open(n.pid_of(&child), uproc_abi::PidfdFlags::empty())
                    .unwrap();
                Reuse {
                    child,
                    code: (r % 200) as i32,
                    fd,
                    after: Mutex::new(Vec::new()),
                    seen: Mutex::new(Vec::new()),
                    done: AtomicBool::new(false),
                }
            },
            &[
                // The child exits, its parent reaps it by number, then forks until the
                // number comes back (or a few times).
                &|s: &Reuse, r| {
                    stagger(jitter(r, 0, WIDTH));
                    s.child.exit(s.code);
                    let nr = n.pid_of(&s.child);
                    match n.wait(WaitId::Pid(nr), WaitOptions::EXITED) {
                        Ok(Some(info)) => s.seen.lock().unwrap().push(info.status),
                        // The pidfd side reaped it first.
                        Err(Errno::ECHILD) => {}
                        other => panic!("{what}: wait gave {other:?}"),
                    }
                    // Linux's cursor brings it back within the ten numbers; Scalable's
                    // FIFO only after every other free number went round.
                    for _ in 0..400 {
                        let c = fork(&n);
                        if n.pid_of(&c) == nr {
                            s.after.lock().unwrap().push(c);
                            break;
                        }
                        c.exit(0);
                        reap(&n, &c);
                    }
                    s.done.store(true, Ordering::Release);
                },
                // The pidfd is used all along: signals, poll, waitid(P_PIDFD).
                &|s: &Reuse, r| {
                    stagger(jitter(r, 1, WIDTH));
                    let mut after_done = 0;
                    for k in 0.. {
                        if s.done.load(Ordering::Acquire) {
                            after_done += 1;
                            if after_done > 3 {
                                break;
                            }
                        }
                        let sig = if k % 2 == 0 {
                            Signal::KILL
                        } else {
                            Signal::TERM
                        };
                        match s.fd.send_signal(sig) {
                            Ok(()) | Err(Errno::ESRCH) => {}
                            Err(e) => panic!("{what}: pidfd_send_signal gave {e}"),
                        }
                        if k == 0 && r % 4 == 0 {
                            // Asleep on the pidfd while the child exits (and is reaped):
                            // the exit wakes it.
                            assert!(
                                s.fd.wait_readable(Duration::from_secs(10)),
                                "{what} round {r}: a pidfd waiter missed the exit"
                            );
                        }
                        let _ = s.fd.poll();
                        match n.wait(
                            WaitId::PidFd(&s.fd),
                            WaitOptions::EXITED | WaitOptions::NOHANG,
                        ) {
                            Ok(Some(info)) => {
                                s.seen.lock().unwrap().push(info.status);
                            }
                            Ok(None) | Err(Errno::ECHILD) => {}
                            Err(e) => panic!("{what}: waitid(P_PIDFD) gave {e}"),
                        }
                    }
                },
            ],
            |s, r| {
                let after = s.after.into_inner().unwrap();
                let nr = n.pid_of(&s.child);
                for t in &after {
                    if n.pid_of(t) == nr {
                        reused.fetch_add(1, Ordering::Relaxed);
                    }
                    assert!(
                        t.is_alive(),
                        "{what} round {r}: a signal through a pidfd reached the task that \
                         reused its number"
                    );
                    assert!(
                        t.pending_signals().is_empty(),
                        "{what} round {r}: stray signal"
                    );
                }
                let seen = s.seen.into_inner().unwrap();
                assert_eq!(
                    seen.len(),
                    1,
                    "{what} round {r}: reaped exactly once: {seen:?}"
                );
                let status = seen[0];
                assert!(
                    status.exited() == Some(s.code) || status.is_signaled(),
                    "{what} round {r}: the status is the child's own: {status:?}"
                );
                assert_eq!(
                    s.fd.exit_status(),
                    Some(status),
                    "{what} round {r}: the pidfd reports the status the reap returned"
                );
                assert!(s.fd.poll().hangup, "{what}: reaped: EPOLLHUP");
                assert_eq!(s.fd.send_signal(Signal::KILL), Err(Errno::ESRCH));
                for t in after {
                    t.exit(1);
                    reap(&n, &t);
                }
            },
        );
        eprintln!(
            "{what}: the number came back in {} rounds of {iters}",
            reused.load(Ordering::Relaxed)
        );
        assert!(
            reused.load(Ordering::Relaxed) > 0,
            "{what}: the test reused no number (it tested nothing)"
        );
        n.exit(0);
        reap(&init, &n);
        base.check(&sys, &what);
    }
}

struct Opening {
    p: Task,
    child: Task,
    nr: i32,
    opened: Mutex<Option<Result<uproc_pidfs::PidFd, Errno>>>,
    /// Where the racing sides meet before they go.
    meet: AtomicUsize,
}

#[test]
fn pidfd_open_racing_the_reap_leaks_no_index_entry_and_never_names_a_stranger() {
    let iters = race_iterations(20_000, 800);
    let overlap = Overlap::default();
    for &prof in Profile::ALL {
        let what = prof.to_string();
        let (sys, init, base) = fresh(prof);
        let p = fork(&init);
        race(
            iters,
            |_| {
                let child = fork(&p);
                Opening {
                    nr: p.pid_of(&child),
                    p: p.clone(),
                    child,
                    opened: Mutex::new(None),
                    meet: AtomicUsize::new(0),
                }
            },
            &[
                &|o: &Opening, r| {
                    meet(&o.meet, 2);
                    stagger(jitter(r, 0, WIDTH / 8));
                    o.child.exit(3);
                    reap(&o.p, &o.child);
                },
                &|o: &Opening, r| {
                    meet(&o.meet, 2);
                    // Spread over the exit and the reap, which take longer than the open.
                    stagger(jitter(r, 1, WIDTH * 2));
                    let fd = o.p.pidfd_open(o.nr, uproc_abi::PidfdFlags::empty());
                    *o.opened.lock().unwrap() = Some(fd);
                },
            ],
            |o, r| {
                let opened = o.opened.into_inner().unwrap().expect("pidfd_open ran");
                overlap.note(opened.is_ok());
                match opened {
                    Ok(fd) => {
                        assert!(
                            std::sync::Arc::ptr_eq(fd.pid(), o.child.struct_pid()),
                            "{what} round {r}: the pidfd names the child"
                        );
                        assert_eq!(
                            fd.exit_status().and_then(|s| s.exited()),
                            Some(3),
                            "{what} round {r}: a pidfd opened before the reap reports it"
                        );
                        assert!(fd.poll().hangup, "{what} round {r}: reaped");
                    }
                    Err(e) => assert_eq!(e, Errno::ESRCH, "{what}: pidfd_open"),
                }
            },
        );
        p.exit(0);
        reap(&init, &p);
        base.check(&sys, &what);
    }
    overlap.report("pidfd_open among the reap");
}

// ---------------------------------------------------------------------------------
// 6. pid_max lowered while forks run; a tiny namespace filled by four threads.
// ---------------------------------------------------------------------------------

/// A counting semaphore of the test's own (not the crate's).
struct Permits {
    left: Mutex<usize>,
}

impl Permits {
    /// Takes a permit; the permits left after it, or `None` if there was none.
    fn try_take(&self) -> Option<usize> {
        let mut n = self.left.lock().unwrap();
        if *n == 0 {
            return None;
        }
        *n -= 1;
        Some(*n)
    }

    fn give(&self) {
        *self.left.lock().unwrap() += 1;
    }
}

#[test]
fn a_full_tiny_namespace_gives_eagain_only_when_truly_full() {
    let rounds = race_iterations(20_000, 2_000);
    for &prof in Profile::ALL {
        let what = prof.to_string();
        let (sys, init, base) = fresh(prof);
        let n = fork_flags(&init, CloneFlags::NEWPID);
        let ns = n.pid_ns();
        // Once the cursor passed 300 (RESERVED_PIDS), automatic allocation hands out
        // only 300..400: a hundred numbers, none held by the init or the workers.
        ns.set_pid_max(400).unwrap();
        let workers: Vec<Task> = (0..4).map(|_| fork(&n)).collect();
        let free = 100;
        let permits = Permits {
            left: Mutex::new(free - 1),
        };
        let eagain = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        std::thread::scope(|sc| {
            for (i, w) in workers.iter().enumerate() {
                let (permits, eagain, peak, what) = (&permits, &eagain, &peak, &what);
                sc.spawn(move || {
                    let mut held: std::collections::VecDeque<Task> = Default::default();
                    let mut x = i as u64 + 1;
                    for _ in 0..rounds {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let taken = if held.len() < 40 {
                            permits.try_take()
                        } else {
                            None
                        };
                        if let Some(left) = taken {
                            match w.fork(&CloneArgs::default()) {
                                Ok(c) => held.push_back(c),
                                Err(Errno::EAGAIN) => {
                                    eagain.fetch_add(1, Ordering::Relaxed);
                                    permits.give();
                                }
                                Err(e) => panic!("{what}: fork gave {e}"),
                            }
                            // Numbers held beyond the init and the workers.
                            peak.fetch_max(free - 1 - left, Ordering::Relaxed);
                        } else if let Some(c) = held.pop_front() {
                            c.exit(0);
                            reap(w, &c);
                            permits.give();
                        } else {
                            std::thread::yield_now();
                        }
                        if x % 5 == 0 {
                            if let Some(c) = held.pop_back() {
                                c.exit(1);
                                reap(w, &c);
                                permits.give();
                            }
                        }
                    }
                    for c in held {
                        c.exit(0);
                        reap(w, &c);
                        permits.give();
                    }
                });
            }
        });
        eprintln!(
            "{what}: {free} free numbers, at most {} held at once, {} EAGAIN",
            peak.load(Ordering::Relaxed),
            eagain.load(Ordering::Relaxed)
        );
        assert_eq!(
            eagain.load(Ordering::Relaxed),
            0,
            "{what}: EAGAIN while a number was free (the test never holds more than free - 1)"
        );
        assert!(
            peak.load(Ordering::Relaxed) >= 40,
            "{what}: at least one worker filled its share (else the test tested nothing)"
        );
        assert_eq!(
            ns.nr_allocated(),
            5,
            "{what}: only the init and workers hold numbers"
        );
        for w in &workers {
            w.exit(0);
            reap(&n, w);
        }
        n.exit(0);
        reap(&init, &n);
        base.check(&sys, &what);
    }
}

struct Lowering {
    lowered: AtomicBool,
    /// (forked after the new limit was in place, the number in the lowered namespace).
    got: Mutex<Vec<(bool, i32)>>,
    /// Forks done so far.
    forked: AtomicUsize,
}

#[test]
fn forks_that_start_after_pid_max_was_lowered_stay_below_it() {
    let iters = race_iterations(5_000, 300);
    for &prof in Profile::ALL {
        let what = prof.to_string();
        let (sys, init, base) = fresh(prof);
        // The namespace whose limit goes down, and one nested in it: its tasks have a
        // number at the lowered level too, bound by that level's limit.
        let n = fork_flags(&init, CloneFlags::NEWPID);
        let ns = n.pid_ns();
        let nested = fork_flags(&n, CloneFlags::NEWPID);
        let high = AtomicUsize::new(0);
        race(
            iters,
            |_| {
                ns.set_pid_max(2000).unwrap();
                // Numbers above the coming limit are handed out again (past 300 the
                // automatic allocation stays above RESERVED_PIDS).
                for _ in 0..8 {
                    let c = fork(&n);
                    c.exit(0);
                    reap(&n, &c);
                }
                Lowering {
                    lowered: AtomicBool::new(false),
                    got: Mutex::new(Vec::new()),
                    forked: AtomicUsize::new(0),
                }
            },
            &[
                // Lands among the forks: after a few, racing the next.
                &|l: &Lowering, r| {
                    let start = Instant::now();
                    while l.forked.load(Ordering::Acquire) < r % 6
                        && start.elapsed() < Duration::from_secs(1)
                    {
                        std::hint::spin_loop();
                    }
                    stagger(jitter(r, 0, WIDTH / 4));
                    ns.set_pid_max(301).unwrap();
                    l.lowered.store(true, Ordering::SeqCst);
                },
                &|l: &Lowering, r| {
                    for k in 0..6 {
                        let parent = if (r + k) % 2 == 0 { &n } else { &nested };
                        let after = l.lowered.load(Ordering::SeqCst);
                        let c = fork(parent);
                        l.got.lock().unwrap().push((after, n.pid_of(&c)));
                        l.forked.fetch_add(1, Ordering::Release);
                        c.exit(0);
                        reap(parent, &c);
                    }
                },
            ],
            |l, r| {
                for (after, nr) in l.got.into_inner().unwrap() {
                    assert!(nr > 1 && nr < 2000, "{what}: {nr} in range");
                    if nr >= 301 {
                        high.fetch_add(1, Ordering::Relaxed);
                    }
                    if after {
                        assert!(
                            nr < 301,
                            "{what} round {r}: a fork started after pid_max was lowered to \
                             301 got {nr}"
                        );
                    }
                }
            },
        );
        assert!(
            high.load(Ordering::Relaxed) > 0,
            "{what}: no fork got a number above the lowered limit (the test tested nothing)"
        );
        nested.exit(0);
        reap(&n, &nested);
        n.exit(0);
        reap(&init, &n);
        base.check(&sys, &what);
    }
}

// ---------------------------------------------------------------------------------
// The pids of a namespace at rest: no number live twice.
// ---------------------------------------------------------------------------------

#[test]
fn concurrent_life_cycles_never_publish_a_number_twice() {
    let rounds = race_iterations(20_000, 3_000);
    for &prof in Profile::ALL {
        let what = prof.to_string();
        let (sys, init, base) = fresh(prof);
        let n = fork_flags(&init, CloneFlags::NEWPID);
        let ns = n.pid_ns();
        ns.set_pid_max(450).unwrap();
        let workers: Vec<Task> = (0..3).map(|_| fork(&n)).collect();
        let live: Mutex<HashSet<i32>> = Mutex::new(HashSet::new());
        std::thread::scope(|sc| {
            for (k, w) in workers.iter().enumerate() {
                let (live, ns, what, n) = (&live, &ns, &what, &n);
                sc.spawn(move || {
                    let mut held = Vec::new();
                    for i in 0..rounds {
                        // Every fourth fork names its number (set_tid), racing the
                        // automatic allocations and frees of the others.
                        let c = if i % 4 == 1 {
                            let want = 2 + ((i * 37 + k * 101) % 440) as i32;
                            match w.fork(&CloneArgs {
                                set_tid: vec![want],
                                ..Default::default()
                            }) {
                                Ok(c) => {
                                    assert_eq!(n.pid_of(&c), want, "{what}: set_tid");
                                    c
                                }
                                Err(Errno::EEXIST) => continue,
                                Err(e) => panic!("{what}: set_tid fork gave {e}"),
                            }
                        } else {
                            fork(w)
                        };
                        let nr = n.pid_of(&c);
                        assert!(
                            live.lock().unwrap().insert(nr),
                            "{what}: number {nr} handed out while still live"
                        );
                        let found = ns.find_pid(nr).expect("find_pid finds a live task");
                        assert!(
                            std::sync::Arc::ptr_eq(&found, c.struct_pid()),
                            "{what}: find_pid({nr}) names another task"
                        );
                        held.push((c, nr));
                        if i % 3 != 0 {
                            let (c, nr) = held.swap_remove(i % held.len());
                            c.exit(0);
                            // Off the live set before the number can come back.
                            live.lock().unwrap().remove(&nr);
                            reap(w, &c);
                        }
                        if held.len() > 40 {
                            for (c, nr) in held.drain(..) {
                                c.exit(0);
                                live.lock().unwrap().remove(&nr);
                                reap(w, &c);
                            }
                        }
                    }
                    for (c, nr) in held {
                        c.exit(0);
                        live.lock().unwrap().remove(&nr);
                        reap(w, &c);
                    }
                });
            }
        });
        assert_eq!(
            ns.nr_allocated(),
            4,
            "{what}: at rest, the init and its workers"
        );
        for w in &workers {
            w.exit(0);
            reap(&n, w);
        }
        n.exit(0);
        reap(&init, &n);
        base.check(&sys, &what);
    }
}

// ---------------------------------------------------------------------------------
// A namespace init's death racing the forks of a member into namespaces nested in it.
// ---------------------------------------------------------------------------------

/// Tasks a kill or a zap kills before the forker of the two tests below.
const BYSTANDERS: usize = 16;

struct Nested {
    /// The init that dies.
    o: Task,
    /// A member of its namespace, forking children that are inits of namespaces nested
    /// in it (`CLONE_NEWPID`), or members of one (`unshare_pid_ns`, then plain forks).
    f: Task,
    forked: Mutex<Vec<Task>>,
    meet: AtomicUsize,
}

/// Linux's zap walks the dying namespace under `tasklist_lock` and `copy_process`
/// attaches under it with a fatal-signal check: every task with a number in the dying
/// namespace dies, whatever namespace it is the init or a member of, and the init
/// becomes reapable once its namespace is empty.
#[test]
fn a_dying_namespace_init_kills_every_nested_namespace_its_members_fork_into() {
    let iters = race_iterations(2_000, 100);
    for &prof in Profile::ALL {
        for unshare in [false, true] {
            let how = if unshare { "unshare + fork" } else { "NEWPID" };
            let what = format!("{prof}/{how}");
            let (sys, init, base) = fresh(prof);
            let reaped = Mutex::new(Vec::new());
            race(
                iters,
                |_| {
                    let o = fork_flags(&init, CloneFlags::NEWPID);
                    // Bystanders the zap kills before the forker (lower numbers): they
                    // widen the window between its walk and the forker's SIGKILL.
                    for _ in 0..BYSTANDERS {
                        fork(&o);
                    }
                    let f = fork(&o);
                    if unshare {
                        f.unshare_pid_ns().unwrap();
                    }
                    Nested {
                        o,
                        f,
                        forked: Mutex::new(Vec::new()),
                        meet: AtomicUsize::new(0),
                    }
                },
                &[
                    &|n: &Nested, r| {
                        meet(&n.meet, 2);
                        stagger(jitter(r, 0, WIDTH / 4));
                        n.o.exit(0);
                    },
                    &|n: &Nested, _| {
                        meet(&n.meet, 2);
                        let flags = if unshare {
                            CloneFlags::empty()
                        } else {
                            CloneFlags::NEWPID
                        };
                        for _ in 0..64 {
                            let args = CloneArgs {
                                flags,
                                ..Default::default()
                            };
                            match n.f.fork(&args) {
                                Ok(c) => n.forked.lock().unwrap().push(c),
                                Err(Errno::EINTR | Errno::ENOMEM | Errno::ESRCH) => break,
                                Err(e) => panic!("{what}: fork gave {e}"),
                            }
                        }
                    },
                ],
                |n, r| {
                    let forked = n.forked.into_inner().unwrap();
                    for c in forked.iter().chain([&n.f]) {
                        assert!(
                            !c.is_alive(),
                            "{what} round {r}: a task with a number in the dead namespace \
                             survived its zap (nspid {:?})",
                            c.nspid()
                        );
                    }
                    // The dead init is reapable once its namespace is empty: drain
                    // fails if it never is.
                    drain(&init, &reaped, &what);
                    assert_eq!(n.o.state(), TaskState::Dead, "{what} round {r}: reaped");
                },
            );
            base.check(&sys, &what);
        }
    }
}

// ---------------------------------------------------------------------------------
// cgroup.kill racing the forks of a member.
// ---------------------------------------------------------------------------------

struct Killed {
    f: Task,
    forked: Mutex<Vec<Task>>,
    meet: AtomicUsize,
}

/// A child forked by a member while `cgroup.kill` runs either is collected and killed,
/// or links itself while the kill is in flight or after it ended and is killed by its
/// post_fork: when the kill and the forks have returned, no child is alive (the
/// snapshot-then-kill alone let children linked after the snapshot, of a parent killed
/// after its fork's fatal-signal check, escape).
#[test]
fn no_child_of_a_member_forked_during_cgroup_kill_survives_it() {
    let iters = race_iterations(2_000, 100);
    let overlap = Overlap::default();
    for &prof in Profile::ALL {
        let what = format!("{prof}");
        let (sys, init, base) = fresh(prof);
        let cg = sys.cgroup_root().mkdir("k").unwrap();
        let reaped = Mutex::new(Vec::new());
        race(
            iters,
            |_| {
                let into = into_cgroup(&cg);
                // Members linked before the forker, which the kill kills first: they
                // widen the window between its collection and the forker's SIGKILL.
                for _ in 0..BYSTANDERS {
                    init.fork(&into).unwrap();
                }
                Killed {
                    f: init.fork(&into).unwrap(),
                    forked: Mutex::new(Vec::new()),
                    meet: AtomicUsize::new(0),
                }
            },
            &[
                &|k: &Killed, r| {
                    meet(&k.meet, 2);
                    stagger(jitter(r, 0, WIDTH / 4));
                    cg.kill().unwrap();
                },
                &|k: &Killed, _| {
                    meet(&k.meet, 2);
                    for _ in 0..64 {
                        match k.f.fork(&CloneArgs::default()) {
                            Ok(c) => k.forked.lock().unwrap().push(c),
                            Err(Errno::EINTR | Errno::ESRCH) => break,
                            Err(e) => panic!("{what}: fork gave {e}"),
                        }
                    }
                },
            ],
            |k, r| {
                let forked = k.forked.into_inner().unwrap();
                overlap.note(forked.len() < 64);
                assert!(!k.f.is_alive(), "{what} round {r}: the member survived");
                for c in &forked {
                    assert!(
                        !c.is_alive(),
                        "{what} round {r}: a child forked during cgroup.kill survived it \
                         ({} children)",
                        forked.len()
                    );
                }
                drain(&init, &reaped, &what);
                assert_eq!(cg.pids_current(), 0, "{what} round {r}: charges at rest");
            },
        );
        cg.rmdir().unwrap();
        base.check(&sys, &what);
    }
    overlap.report("cgroup.kill among a member's forks");
}

// ---- cgroup.kill vs a migration inside the killed subtree ---------------------------

/// A task that stays inside a killed subtree while the kill runs (it moves from the
/// last of `a`'s children, up to `a` itself) is killed: Linux's `cgroup_kill_write`
/// and every migration hold `cgroup_mutex`, so the kill's collection finds the task
/// where it was or where it went, never between the two. Under `Scalable` the
/// collection took one cgroup's member locks at a time and the migration no
/// subtree-wide lock: about one round in a hundred, the task was gone from `a/c7` when
/// the walk got there and not yet in `a` when it collected `a`.
#[test]
fn a_task_migrating_inside_a_killed_subtree_is_killed() {
    use std::sync::Barrier;
    let rounds = race_iterations(2000, 150);
    for &p in Profile::ALL {
        let sys = system_with(p);
        let init = sys.init();
        for r in 0..rounds {
            let a = sys.cgroup_root().mkdir(&format!("a{r}")).unwrap();
            let mut kids = Vec::new();
            let mut fill = Vec::new();
            for i in 0..8 {
                let c = a.mkdir(&format!("c{i}")).unwrap();
                // Members everywhere widen the collection's window.
                for _ in 0..3 {
                    let t = fork(&init);
                    c.attach(&t).unwrap();
                    fill.push(t);
                }
                kids.push(c);
            }
            let victim = fork(&init);
            kids.last().unwrap().attach(&victim).unwrap();
            let bar = Barrier::new(2);
            std::thread::scope(|s| {
                s.spawn(|| {
                    bar.wait();
                    a.kill().unwrap();
                });
                s.spawn(|| {
                    bar.wait();
                    stagger((r * 37) % 4000);
                    a.attach(&victim).unwrap();
                });
            });
            assert!(
                !victim.is_alive(),
                "{p}: round {r}: a task in {} survived the kill of {}",
                victim.cgroup().path(),
                a.path()
            );
            for t in fill.iter().chain([&victim]) {
                assert!(!t.is_alive(), "{p}: every member was killed");
                reap(&init, t);
            }
            for c in kids {
                c.rmdir().unwrap();
            }
            a.rmdir().unwrap();
        }
        assert_at_rest(&sys);
    }
}

/// A live task's plain fork racing its own migration out of `y` and the rmdir of `y`
/// forks into `y` (the rmdir is then EBUSY) or into `x`, never ENOENT: Linux's fork
/// holds `cgroup_threadgroup_rwsem` from `cgroup_css_set_fork` to post_fork against
/// the migration. Here the fork read its cgroup, the migration moved the task and the
/// rmdir removed `y` before the charge, which found `y` removed (about one round in a
/// hundred under `Linux*`); the charge now retries in the task's current cgroup.
#[test]
fn a_fork_racing_its_own_migration_and_the_old_cgroup_s_rmdir_never_fails() {
    struct Round {
        y: uproc_cgroup::Cgroup,
        t: Task,
        child: Mutex<Option<Result<Task, Errno>>>,
        rmdir: Mutex<Option<Result<(), Errno>>>,
    }
    let rounds = race_iterations(20000, 2000);
    for &p in Profile::ALL {
        let sys = system_with(p);
        let init = sys.init();
        let x = sys.cgroup_root().mkdir("x").unwrap();
        let t = fork(&init);
        let bal = Balance::with_jitter(64);
        race(
            rounds,
            |r| {
                let y = sys.cgroup_root().mkdir(&format!("y{r}")).unwrap();
                y.attach(&t).unwrap();
                Round {
                    y,
                    t: t.clone(),
                    child: Mutex::new(None),
                    rmdir: Mutex::new(None),
                }
            },
            &[
                &|s: &Round, r| {
                    stagger(bal.delays(r).0);
                    *s.child.lock().unwrap() = Some(s.t.fork(&Default::default()));
                },
                &|s: &Round, r| {
                    stagger(bal.delays(r).1);
                    x.attach(&s.t).unwrap();
                    *s.rmdir.lock().unwrap() = Some(s.y.rmdir());
                },
            ],
            |s, r| {
                let child = s.child.into_inner().unwrap().unwrap();
                let rmdir = s.rmdir.into_inner().unwrap().unwrap();
                let c = child.unwrap_or_else(|e| panic!("{p}: round {r}: the fork gave {e}"));
                bal.a_was_first(c.cgroup() == s.y);
                assert!(
                    c.cgroup() == s.y || c.cgroup() == x,
                    "{p}: forked into y or x"
                );
                c.exit(0);
                reap(&s.t, &c);
                if rmdir.is_err() {
                    assert_eq!(rmdir, Err(Errno::EBUSY), "{p}: y held the child");
                    s.y.rmdir().unwrap();
                }
            },
        );
        t.exit(0);
        reap(&init, &t);
        x.rmdir().unwrap();
        assert_at_rest(&sys);
    }
}

// ---------------------------------------------------------------------------------
// An orphan handed to a reaper thread that is exiting at that moment.
// ---------------------------------------------------------------------------------

/// R: a subreaper whose leader exited, living on in `rt1` and `rt2`; `d` (with child
/// `c`) and `d2` (with many children, whose hand-over holds R's `children` lock long)
/// are R's children.
struct StaleHeir {
    r: Task,
    rt1: Mutex<Option<Task>>,
    rt2: Task,
    d: Task,
    c: Task,
    d2: Task,
    kids: Vec<Task>,
    x: Mutex<Option<Result<Task, Errno>>>,
}

/// `d`'s exit picks `rt1` as `c`'s new parent, then waits for R's `children` lock
/// (held by `d2`'s long hand-over) while `rt1` exits and hands its own children to
/// `rt2` under that lock; a `CLONE_PARENT` fork by `c` may join in. `c` (and its
/// sibling `x`) must end up with a live thread of R as parent: `getppid` is R's tgid
/// and R reaps them. (Under `Scalable` `c` used to keep `rt1`, already gone, as its
/// parent: ppid 0, its exit autoreaped unseen, ~3% of rounds in a release build.)
/// When `d` and `rt1` start (spins), so that both reach R's `children` lock while `d2`
/// holds it (tuned on the 2-core development machine: the old code failed within 150
/// debug rounds and 2,000 release rounds).
const HEIR_BASE: usize = if cfg!(debug_assertions) { 0 } else { 2 * WIDTH };
const HEIR_SPREAD: usize = if cfg!(debug_assertions) {
    2 * WIDTH
} else {
    5 * WIDTH
};

#[test]
fn an_orphan_handed_to_a_reaper_thread_that_is_exiting_goes_to_a_live_thread() {
    const KIDS: usize = 600;
    let iters = race_iterations(2_000, 100);
    for &prof in Profile::ALL {
        let what = prof.to_string();
        let dog = Watchdog::arm(what.clone());
        let (sys, init, base) = fresh(prof);
        race(
            iters,
            |_| {
                let r = fork(&init);
                r.set_child_subreaper(true);
                let rt1 = thread(&r);
                let rt2 = thread(&r);
                let d = fork(&r);
                let c = fork(&d);
                let d2 = fork(&r);
                let kids = (0..KIDS).map(|_| fork(&d2)).collect();
                r.exit(0);
                StaleHeir {
                    r,
                    rt1: Mutex::new(Some(rt1)),
                    rt2,
                    d,
                    c,
                    d2,
                    kids,
                    x: Mutex::new(None),
                }
            },
            &[
                &|s: &StaleHeir, _| s.d2.exit(0),
                &|s: &StaleHeir, r| {
                    stagger(HEIR_BASE + jitter(r, 1, HEIR_SPREAD));
                    s.d.exit(0);
                },
                &|s: &StaleHeir, r| {
                    stagger(HEIR_BASE + jitter(r, 2, HEIR_SPREAD));
                    let t = s.rt1.lock().unwrap().take().unwrap();
                    t.exit(0);
                },
                &|s: &StaleHeir, r| {
                    stagger(jitter(r, 3, WIDTH));
                    if r % 2 == 0 {
                        let args = CloneArgs {
                            flags: CloneFlags::PARENT,
                            ..Default::default()
                        };
                        *s.x.lock().unwrap() = Some(s.c.fork(&args));
                    }
                },
            ],
            |s, r| {
                dog.tick();
                let rpid = s.r.pid();
                let mut live = vec![s.c.clone()];
                if let Some(Ok(x)) = s.x.into_inner().unwrap() {
                    live.push(x);
                }
                for t in &live {
                    assert_eq!(t.ppid(), rpid, "{what} round {r}: adopted by R");
                    assert_eq!(
                        t.parent().map(|p| p.pid()),
                        Some(rpid),
                        "{what} round {r}: a live thread of R is the parent"
                    );
                }
                for t in live.iter().chain(&s.kids) {
                    t.exit(7);
                }
                let reaped = Mutex::new(Vec::new());
                drain(&s.rt2, &reaped, &what);
                let mut want: Vec<i32> = [&s.d, &s.d2]
                    .into_iter()
                    .chain(&live)
                    .chain(&s.kids)
                    .map(|t| s.rt2.pid_of(t))
                    .collect();
                want.sort_unstable();
                assert_eq!(
                    sorted(reaped.into_inner().unwrap()),
                    want,
                    "{what} round {r}: R reaps every child, each once"
                );
                s.rt2.exit(0);
                reap(&init, &s.r);
            },
        );
        base.check(&sys, &what);
    }
}

// ---------------------------------------------------------------------------------
// The reap's order: what a task's disappearance tells an observer.
// ---------------------------------------------------------------------------------

/// `rounds` times: `par` forks a child with a pidfd (`init`'s), the child exits with 7,
/// and `par` reaps it on another thread (after a jitter) while `observe(round, the
/// child's number, its pidfd)` runs on this one.
fn observe_reaps(
    init: &Task,
    par: &Task,
    rounds: usize,
    observe: impl Fn(usize, i32, &uproc_pidfs::PidFd),
) {
    for r in 0..rounds {
        let c = fork(par);
        let cpid = init.pid_of(&c);
        let pfd = init
            .pidfd_open(cpid, uproc_abi::PidfdFlags::empty())
            .unwrap();
        c.exit(7);
        std::thread::scope(|sc| {
            sc.spawn(|| {
                stagger(jitter(r, 0, 64));
                reap(par, &c)
            });
            observe(r, cpid, &pfd);
        });
    }
}

/// Once `kill(pid, 0)` or `pidfd_send_signal(pidfd, 0)` says ESRCH, the reap is past
/// the pidfs exit record and the pids uncharge: Linux's `release_task` runs
/// `pidfs_exit` and `cgroup_release` before `__unhash_process`. So the pidfd reports
/// the exit, `pids.current` no longer counts the task, and a fork into the cgroup it
/// filled succeeds. (`Scalable`'s reap, which unlinks the child in the waiter's own
/// list hold, used to unhash first: `pids.current` still counted the task in about
/// half the rounds, the exit record was missing in about two thirds.)
#[test]
fn a_task_gone_to_kill_and_pidfd_is_uncharged_and_has_its_exit_recorded() {
    let rounds = race_iterations(4000, 400);
    for &p in Profile::ALL {
        let (sys, init, base) = fresh(p);
        let k = sys.cgroup_root().mkdir("k").unwrap();
        k.set_pids_max(uproc_cgroup::Limit::Value(2)).unwrap();
        let into = into_cgroup(&k);
        let par = init.fork(&into).unwrap();
        // `par` and its child fill `k`.
        observe_reaps(&init, &par, rounds, |r, cpid, pfd| {
            // By number for one half of the rounds, by pidfd for the other.
            if r % 2 == 0 {
                while init.kill(cpid, Signal::PROBE).is_ok() {}
            } else {
                while pfd.send_signal(Signal::PROBE).is_ok() {}
            }
            let info = pfd.info(uproc_abi::InfoMask::EXIT).unwrap();
            assert!(
                info.mask.contains(uproc_abi::InfoMask::EXIT),
                "{p}: round {r}: ESRCH, but the pidfd has no exit record: {info:?}"
            );
            assert_eq!(info.exit_code, 7 << 8, "{p}: round {r}");
            assert_eq!(
                k.pids_current(),
                1,
                "{p}: round {r}: ESRCH, but `pids.current` still counts the task"
            );
            let t = init
                .fork(&into)
                .unwrap_or_else(|e| panic!("{p}: round {r}: a fork into the freed slot gave {e}"));
            t.exit(0);
            reap(&init, &t);
        });
        par.exit(0);
        reap(&init, &par);
        k.rmdir().unwrap();
        base.check(&sys, &format!("{p}"));
    }
}

/// `PIDFD_GET_INFO(PID | EXIT)` while the task is reaped answers with `PID` (found
/// before the reap unhashed it) or `EXIT` (recorded before the unhash), never with
/// neither: the task is looked up first and its exit record read after. (The record
/// was read first: a reap completing between the two reads left an empty answer, in
/// every profile.)
#[test]
fn pidfd_info_racing_the_reap_reports_the_task_or_its_exit() {
    let rounds = race_iterations(4000, 400);
    for &p in Profile::ALL {
        let (sys, init, base) = fresh(p);
        let par = fork(&init);
        observe_reaps(&init, &par, rounds, |r, _, pfd| {
            let mask = uproc_abi::InfoMask::PID | uproc_abi::InfoMask::EXIT;
            loop {
                let info = pfd
                    .info(mask)
                    .unwrap_or_else(|e| panic!("{p}: round {r}: info gave {e}"));
                assert!(
                    info.mask.intersects(mask),
                    "{p}: round {r}: neither the task nor its exit: {info:?}"
                );
                if info.mask.contains(uproc_abi::InfoMask::EXIT) {
                    break;
                }
            }
        });
        par.exit(0);
        reap(&init, &par);
        base.check(&sys, &format!("{p}"));
    }
}

// ---------------------------------------------------------------------------------
// A CLONE_PARENT child's exit signal against its caller's reparent.
// ---------------------------------------------------------------------------------

/// `c` (forked by `p` with exit signal SIGUSR1) forks `d` with `CLONE_PARENT` while `p`
/// exits and `c` is handed to the subreaper `s` with SIGCHLD as its new exit signal.
/// Linux copies `d`'s exit signal from `c`'s leader inside the attach's
/// `tasklist_lock` hold: `d` either joins `p` with SIGUSR1 and is reparented to `s`
/// with SIGCHLD, or joins `s` after `c`'s reparent, with its SIGCHLD. Either way `s`
/// only ever gets SIGCHLD. (The signal was read before the attach, in every profile:
/// `d` could join `s` with SIGUSR1, which killed it. This test hit that under
/// `Scalable` within a few hundred rounds; a probe with a wider sweep hit it in about
/// one round in ten under `Linux70` too.)
#[test]
fn a_clone_parent_child_racing_its_callers_reparent_exits_with_sigchld() {
    let rounds = race_iterations(10000, 1500);
    for &p in Profile::ALL {
        let (sys, init, base) = fresh(p);
        for r in 0..rounds {
            let s = fork(&init);
            s.set_child_subreaper(true);
            let par = fork(&s);
            let c = par
                .fork(&CloneArgs {
                    exit_signal: Some(Signal::USR1),
                    ..Default::default()
                })
                .unwrap();
            // Two sweeps of different strides: every pair of start offsets in turn.
            let d = std::thread::scope(|sc| {
                let d = sc.spawn(|| {
                    stagger(r % 200);
                    fork_flags(&c, CloneFlags::PARENT)
                });
                sc.spawn(|| {
                    stagger(r * 7 % 200);
                    par.exit(0);
                });
                d.join().unwrap()
            });
            d.exit(0);
            c.exit(0);
            assert!(
                s.is_alive(),
                "{p}: round {r}: the subreaper got {:?} from its adopted children",
                s.pending_signals()
            );
            // `par`, `c` and `d`, all `s`'s now.
            for _ in 0..3 {
                let got = s.wait(WaitId::All, WaitOptions::EXITED | WaitOptions::ALL);
                assert!(matches!(got, Ok(Some(_))), "{p}: round {r}: {got:?}");
            }
            s.exit(0);
            reap(&init, &s);
        }
        base.check(&sys, &format!("{p}"));
    }
}

// ---------------------------------------------------------------------------------
// A migration into a cgroup that a `cgroup.kill` is signalling.
// ---------------------------------------------------------------------------------

/// `cgroup.kill` holds `cgroup_mutex` through its whole walk in Linux, and a write to
/// `cgroup.procs` takes it too: a process moved in while the kill signals waits for the
/// kill to end, and then neither it nor a child it forks is the kill's. Here the kill
/// is held in its signalling phase by a victim's hook; the migration must not return
/// before the hook lets the kill end. (It returned at once, and the moved process's
/// next fork read the kill as its own: the child was SIGKILLed, the parent lived.)
#[test]
fn a_migration_into_a_cgroup_being_killed_waits_for_the_kill() {
    for &p in Profile::ALL {
        let (sys, init, base) = fresh(p);
        let a = sys.cgroup_root().mkdir("a").unwrap();
        let v = init.fork(&into_cgroup(&a)).unwrap();
        let (entered_tx, entered_rx) = std::sync::mpsc::channel::<()>();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let (entered_tx, go_rx) = (Mutex::new(entered_tx), Mutex::new(go_rx));
        v.set_signal_hook(Some(std::sync::Arc::new(move |sig: Signal| {
            if sig == Signal::KILL {
                entered_tx.lock().unwrap().send(()).unwrap();
                go_rx.lock().unwrap().recv().unwrap();
            }
        })));
        let mover = fork(&init);
        let moved = AtomicBool::new(false);
        std::thread::scope(|sc| {
            let killer = sc.spawn(|| a.write("cgroup.kill", "1"));
            entered_rx.recv().unwrap();
            let migration = sc.spawn(|| {
                let r = a.write("cgroup.procs", &init.pid_of(&mover).to_string());
                moved.store(true, Ordering::SeqCst);
                r
            });
            std::thread::sleep(Duration::from_millis(100));
            let early = moved.load(Ordering::SeqCst);
            // Let the kill end before any assertion: a failure must not leave the
            // scope waiting for the held hook.
            go_tx.send(()).unwrap();
            killer.join().unwrap().unwrap();
            migration.join().unwrap().unwrap();
            assert!(
                !early,
                "{p}: the migration returned while the kill was signalling"
            );
        });
        assert_eq!(mover.cgroup(), a, "{p}: moved once the kill ended");
        let c = fork(&mover);
        assert!(
            mover.is_alive() && c.is_alive(),
            "{p}: neither is the kill's"
        );
        v.exit_signaled(Signal::KILL);
        reap(&init, &v);
        c.exit(0);
        reap(&mover, &c);
        mover.exit(0);
        reap(&init, &mover);
        a.rmdir().unwrap();
        base.check(&sys, &format!("{p}"));
    }
}

/// A signal hook that the kill itself runs (on the kill's thread) and that moves a
/// process into the cgroup being killed does not wait for that kill, which would be
/// waiting for the hook: the migration goes through at once (the moved process was
/// not collected, so it survives), and the kill ends.
#[test]
fn a_migration_made_by_the_kill_s_own_hook_does_not_wait_for_it() {
    for &p in Profile::ALL {
        let (sys, init, base) = fresh(p);
        let a = sys.cgroup_root().mkdir("a").unwrap();
        let v = init.fork(&into_cgroup(&a)).unwrap();
        let mover = fork(&init);
        let mover_nr = init.pid_of(&mover).to_string();
        let moved = std::sync::Arc::new(Mutex::new(None));
        let (hook_a, hook_moved) = (a.clone(), moved.clone());
        v.set_signal_hook(Some(std::sync::Arc::new(move |sig: Signal| {
            if sig == Signal::KILL {
                let r = hook_a.write("cgroup.procs", &mover_nr);
                *hook_moved.lock().unwrap() = Some(r);
            }
        })));
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let killer_a = a.clone();
        std::thread::spawn(move || done_tx.send(killer_a.write("cgroup.kill", "1")));
        let killed = done_rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("{p}: the kill waited for its own hook's migration"));
        assert_eq!(killed, Ok(()), "{p}");
        assert_eq!(
            *moved.lock().unwrap(),
            Some(Ok(())),
            "{p}: the hook moved it"
        );
        assert_eq!(mover.cgroup(), a, "{p}");
        assert!(mover.is_alive(), "{p}: not collected by the kill");
        v.set_signal_hook(None);
        v.exit_signaled(Signal::KILL);
        reap(&init, &v);
        mover.exit(0);
        reap(&init, &mover);
        a.rmdir().unwrap();
        base.check(&sys, &format!("{p}"));
    }
}

/// A leader's own exit racing another thread's `exit_group`: the group's code is what
/// the wait reports whenever the group exit came (Linux's `wait_task_zombie` reads
/// `group_exit_code` under `SIGNAL_GROUP_EXIT`), even when the thread was released
/// before the leader's exit finished (the leader read its own code first).
#[test]
fn a_leader_exit_racing_a_thread_exit_group_reports_the_group_code() {
    for &p in Profile::ALL {
        leader_exit_racing_exit_group(p);
    }
}

fn leader_exit_racing_exit_group(p: Profile) {
    let (sys, init, base) = fresh(p);
    race(
        race_iterations(50_000, 20_000),
        |_| {
            let p = fork(&init);
            let t = thread(&p);
            (p, t)
        },
        &[
            &|s: &(Task, Task), r| {
                stagger(r % 40);
                s.0.exit(3);
            },
            &|s: &(Task, Task), r| {
                stagger((r * 3) % 40);
                s.1.exit_group(4);
            },
        ],
        |s, r| {
            let info = reap(&init, &s.0);
            assert_eq!(info.status.exited(), Some(4), "{p}: round {r}");
        },
    );
    base.check(&sys, &format!("{p}"));
}
