//! Group signals (`kill(-pgid)`, `kill(-1)`) against fork bombs, under every profile.
//!
//! Linux holds `tasklist_lock` (read) over the whole walk of a group kill and attaches
//! a child under the write lock, failing the fork with EINTR once the parent is marked:
//! no child of a doomed process escapes, however fast the processes fork. Several
//! threads fork here as fast as they can (a shared tip that every thread forks from,
//! per-thread chains where each child forks the next, chains of alternating plain and
//! `CLONE_PARENT` forks, chains through threads, chains whose links exit as soon as
//! they forked the next) while another thread sends the group signal. Once the call
//! has returned and every fork in flight has returned, every process of the target set
//! is dead and reapable, and the runtime is back to its baseline. SIGSTOP and SIGCONT sent into a group being forked into reach every member
//! that existed when the call was made, and a child forked during the call is stopped
//! only if the process that forked it is (otherwise its fork linearises after the call).
//!
//! `UPROC_RACE_ITERS` sets the rounds per configuration.

mod common;

use common::*;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use uproc_abi::{CloneFlags, Errno, Profile, Signal, WaitOptions};
use uproc_tasklist::{CloneArgs, Task, TaskState, WaitId};

/// How the bomb's threads fork.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bomb {
    /// Every thread forks from the newest member any thread made (plain forks).
    SharedTip,
    /// Each thread's new child forks the next (plain forks).
    Chain,
    /// Each thread's chain alternates plain and `CLONE_PARENT` forks (a child of the
    /// caller, then a sibling of it, ...).
    ParentChain,
    /// Each thread's chain goes through threads: a process forks a thread, the thread
    /// forks the next process.
    ThreadChain,
    /// A chain whose links exit once they forked the next (as a daemon forks and
    /// exits): the bomb holds a few processes at a time, so a walk over the pids stays
    /// short, and the chain runs for as long as no walk catches its tip.
    Hop,
    /// [`Bomb::Hop`] with alternating plain and `CLONE_PARENT` forks.
    ParentHop,
}

const BOMBS: [Bomb; 6] = [
    Bomb::SharedTip,
    Bomb::Chain,
    Bomb::ParentChain,
    Bomb::ThreadChain,
    Bomb::Hop,
    Bomb::ParentHop,
];

impl Bomb {
    /// Whether each link exits once it forked the next.
    fn hops(self) -> bool {
        matches!(self, Bomb::Hop | Bomb::ParentHop)
    }
}

/// Forking threads per bomb.
const FORKERS: usize = 3;

/// A bound on each forking thread's forks per phase, so that an escaped bomb ends
/// before it fills the pid space (a hopping bomb frees its pids as it goes).
fn max_forks(bomb: Bomb) -> usize {
    if bomb.hops() { 30_000 } else { 4_000 }
}

/// One fork of the bomb: the task that forked and the child.
struct Forked {
    by: Task,
    child: Task,
}

/// The bomb of one round: its first member (a process-group leader) and everything
/// its threads forked, per thread in fork order.
struct Round {
    leader: Task,
    pgid: i32,
    tip: Mutex<Task>,
    forked: Vec<Mutex<Vec<Forked>>>,
    forks: AtomicUsize,
    stop: AtomicBool,
}

impl Round {
    fn new(init: &Task) -> Round {
        let leader = init.fork(&CloneArgs::default()).expect("fork the leader");
        leader.setpgid(0, 0).expect("a new process group");
        Round {
            pgid: leader.getpgid(),
            tip: Mutex::new(leader.clone()),
            leader,
            forked: (0..FORKERS).map(|_| Mutex::new(Vec::new())).collect(),
            forks: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
        }
    }

    /// Every member the bomb made, and its leader.
    fn members(&self) -> Vec<Task> {
        let mut all = vec![self.leader.clone()];
        for f in &self.forked {
            all.extend(f.lock().unwrap().iter().map(|f| f.child.clone()));
        }
        all
    }

    /// Forking thread `i`: forks as fast as it can until [`Round::stop`] (or its
    /// bound), from where it left off. A fork that fails (the forker is dying, or
    /// was reaped) leaves the thread retrying from its chain's newest member.
    fn run_forker(&self, i: usize, bomb: Bomb) {
        let mut cur = self.forked[i]
            .lock()
            .unwrap()
            .last()
            .map_or_else(|| self.leader.clone(), |f| f.child.clone());
        let mut step = self.forked[i].lock().unwrap().len();
        let plain = CloneArgs::default();
        let parent = CloneArgs {
            flags: CloneFlags::PARENT,
            ..CloneArgs::default()
        };
        let thread = CloneArgs {
            flags: CloneFlags::NEW_THREAD,
            ..CloneArgs::default()
        };
        let mut made = 0;
        while !self.stop.load(Ordering::Acquire) && made < max_forks(bomb) {
            let by = match bomb {
                Bomb::SharedTip => self.tip.lock().unwrap().clone(),
                _ => cur.clone(),
            };
            let args = match bomb {
                Bomb::SharedTip | Bomb::Chain | Bomb::Hop => &plain,
                Bomb::ParentChain | Bomb::ParentHop if step % 2 == 1 => &parent,
                Bomb::ParentChain | Bomb::ParentHop => &plain,
                // A process forks a thread, the thread forks the next process.
                Bomb::ThreadChain if by.is_thread_group_leader() => &thread,
                Bomb::ThreadChain => &plain,
            };
            match by.fork(args) {
                Ok(child) => {
                    made += 1;
                    step += 1;
                    self.forks.fetch_add(1, Ordering::Release);
                    if bomb == Bomb::SharedTip {
                        *self.tip.lock().unwrap() = child.clone();
                    }
                    cur = child.clone();
                    // The leader stays: every thread's chain starts from it.
                    if bomb.hops() && by != self.leader {
                        by.exit(0);
                    }
                    self.forked[i].lock().unwrap().push(Forked { by, child });
                }
                Err(Errno::EINTR | Errno::ESRCH) => std::thread::yield_now(),
                // The pid space is full: an escaped bomb (the check reports it).
                Err(Errno::EAGAIN) => break,
                Err(e) => panic!("{bomb:?}: fork gave {e}"),
            }
        }
    }

    /// Runs the forking threads and, on this thread, `signal` once the bomb has made
    /// `after` forks; stops the forkers once `signal` has returned and joins them.
    fn race(&self, bomb: Bomb, after: usize, signal: impl FnOnce()) {
        std::thread::scope(|sc| {
            for i in 0..FORKERS {
                sc.spawn(move || self.run_forker(i, bomb));
            }
            let start = Instant::now();
            while self.forks.load(Ordering::Acquire) < after
                && start.elapsed() < Duration::from_secs(2)
            {
                std::hint::spin_loop();
            }
            let at_signal = self.forks.load(Ordering::Acquire);
            signal();
            self.stop.store(true, Ordering::Release);
            if std::env::var_os("UPROC_GROUP_KILL_DEBUG").is_some() {
                eprintln!(
                    "{bomb:?}: signal after {at_signal} forks ({after} wanted), returned \
                     after {}, {:?} in",
                    self.forks.load(Ordering::Acquire),
                    start.elapsed()
                );
            }
        });
        self.stop.store(false, Ordering::Release);
    }

    /// Ends whatever is still alive (escaped the kill under test) with the forkers
    /// stopped, and reaps everything: `init` waits for its own children, the
    /// orphans it adopted are reaped as they die.
    fn finish(self, init: &Task, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.members().iter().any(Task::is_alive) {
            assert!(
                Instant::now() < deadline,
                "{what}: a member outlives SIGKILL"
            );
            let _ = init.kill(-1, Signal::KILL);
        }
        loop {
            match init.wait(WaitId::All, WaitOptions::EXITED | WaitOptions::NOHANG) {
                Ok(Some(_)) => {}
                Ok(None) => {
                    assert!(
                        Instant::now() < deadline,
                        "{what}: a child of init is not reapable"
                    );
                    std::thread::yield_now();
                }
                Err(Errno::ECHILD) => break,
                Err(e) => panic!("{what}: wait gave {e}"),
            }
        }
        for t in self.members() {
            assert_eq!(t.state(), TaskState::Dead, "{what}: a member is not reaped");
        }
    }
}

/// How many forks the bomb makes before the signal in round `r`: from a few (the
/// bomb's first links are in flight) to a few hundred.
fn forks_before(r: usize) -> usize {
    1 + (r * 37) % 400
}

/// A fork bomb raced by `kill(-pgid, SIGKILL)` or `kill(-1, SIGKILL)`: once the call
/// and every fork in flight have returned, no member of the bomb is alive, each is
/// reapable, and the runtime is back to its baseline.
fn bombs_never_escape(prof: Profile, everyone: bool) {
    let rounds = race_iterations(60, 12);
    for bomb in BOMBS {
        let what = format!(
            "{prof}/{bomb:?}/{}",
            if everyone { "kill(-1)" } else { "kill(-pgid)" }
        );
        let sys = system_with(prof);
        let init = sys.init();
        let base = Baseline::of(&sys);
        let mut escapes = Vec::new();
        for r in 0..rounds {
            let round = Round::new(&init);
            let target = if everyone { -1 } else { -round.pgid };
            round.race(bomb, forks_before(r), || {
                init.kill(target, Signal::KILL)
                    .expect("the group has members");
            });
            let members = round.members();
            let alive = members.iter().filter(|t| t.is_alive()).count();
            if std::env::var_os("UPROC_GROUP_KILL_DEBUG").is_some() {
                eprintln!("{what} round {r}: {} members, {alive} alive", members.len());
            }
            if alive > 0 {
                escapes.push(format!(
                    "round {r}: {alive} of {} members alive",
                    members.len()
                ));
            }
            round.finish(&init, &what);
            base.check(&sys, &what);
        }
        assert!(
            escapes.is_empty(),
            "{what}: processes escaped SIGKILL in {} of {rounds} rounds: {escapes:?}",
            escapes.len()
        );
    }
}

#[test]
fn fork_bombs_never_escape_kill_pgid() {
    for &prof in Profile::ALL {
        bombs_never_escape(prof, false);
    }
}

#[test]
fn fork_bombs_never_escape_kill_minus_one() {
    for &prof in Profile::ALL {
        bombs_never_escape(prof, true);
    }
}

/// Whether `t`'s process is stopped (a reaped or dead task reads as not stopped).
fn stopped(t: &Task) -> bool {
    t.state() == TaskState::Stopped
}

/// SIGSTOP, then SIGCONT, to a process group being forked into: every member that
/// existed when the call was made gets it; a child forked during the call is stopped
/// only if the process that forked it is (else its fork linearises after the call);
/// after SIGCONT nothing is stopped.
#[test]
fn stop_and_continue_reach_every_member_of_a_group_being_forked_into() {
    let rounds = race_iterations(30, 6);
    for &prof in Profile::ALL {
        // A hopping bomb's links exit on their own: "stopped" is about the others.
        for bomb in BOMBS.into_iter().filter(|b| !b.hops()) {
            let what = format!("{prof}/{bomb:?}");
            let sys = system_with(prof);
            let init = sys.init();
            let base = Baseline::of(&sys);
            for r in 0..rounds {
                let round = Round::new(&init);
                let before = Mutex::new(Vec::new());
                round.race(bomb, forks_before(r), || {
                    *before.lock().unwrap() = round.members();
                    init.kill(-round.pgid, Signal::STOP).expect("members");
                });
                for t in before.into_inner().unwrap() {
                    assert!(
                        stopped(&t),
                        "{what} round {r}: pid {} existed before SIGSTOP and runs",
                        t.pid()
                    );
                }
                for f in round.forked.iter().flat_map(|f| {
                    let f = f.lock().unwrap();
                    f.iter()
                        .map(|f| (f.by.clone(), f.child.clone()))
                        .collect::<Vec<_>>()
                }) {
                    let (by, child) = f;
                    assert!(
                        !stopped(&child) || stopped(&by),
                        "{what} round {r}: pid {} is stopped but its forker {} runs",
                        child.pid(),
                        by.pid()
                    );
                }
                // The bomb goes on from where it was (its members are stopped, not
                // dead: bookkeeping tasks still fork), and SIGCONT races it.
                round.race(
                    bomb,
                    round.forks.load(Ordering::Acquire) + forks_before(r),
                    || {
                        init.kill(-round.pgid, Signal::CONT).expect("members");
                    },
                );
                for t in round.members() {
                    assert!(
                        !stopped(&t),
                        "{what} round {r}: pid {} still stopped after SIGCONT",
                        t.pid()
                    );
                }
                round.finish(&init, &what);
                base.check(&sys, &what);
            }
        }
    }
}

/// A fork that attaches while a group kill of an unrelated group is in flight returns
/// normally once the kill is over: its child lives, and its own fork works.
#[test]
fn forks_outside_the_target_survive_a_concurrent_group_kill() {
    for &prof in Profile::ALL {
        let sys = system_with(prof);
        let init = sys.init();
        let base = Baseline::of(&sys);
        let outsider = fork(&init);
        let round = Round::new(&init);
        let made = AtomicUsize::new(0);
        let kept = Mutex::new(Vec::new());
        std::thread::scope(|sc| {
            sc.spawn(|| {
                let mut cur = outsider.clone();
                for _ in 0..200 {
                    cur = fork(&cur);
                    kept.lock().unwrap().push(cur.clone());
                    made.fetch_add(1, Ordering::Release);
                }
            });
            round.race(Bomb::Chain, 50, || {
                init.kill(-round.pgid, Signal::KILL).expect("members");
            });
        });
        assert!(
            round.members().iter().all(|t| !t.is_alive()),
            "{prof}: the target died"
        );
        let kept = kept.lock().unwrap().clone();
        assert_eq!(kept.len(), 200, "{prof}: every outside fork succeeded");
        assert!(
            kept.iter().all(Task::is_alive) && outsider.is_alive(),
            "{prof}: a process outside the group was killed"
        );
        init.kill(-1, Signal::KILL).unwrap();
        round.finish(&init, &prof.to_string());
        base.check(&sys, &prof.to_string());
    }
}

/// A signal hook that forks (a managed runtime asking its supervisor, outside the
/// group, for a helper on SIGTERM) runs among the group kill's actions: the kill has
/// ended by then, so the fork does not wait for the very kill that called it.
#[test]
fn a_hook_that_forks_during_its_group_kill_does_not_wait_for_it() {
    for &prof in Profile::ALL {
        let sys = system_with(prof);
        let init = sys.init();
        let base = Baseline::of(&sys);
        let round = Round::new(&init);
        let managed = fork(&round.leader);
        let helpers = std::sync::Arc::new(Mutex::new(Vec::new()));
        {
            let (forker, helpers) = (init.clone(), helpers.clone());
            managed.set_signal_hook(Some(std::sync::Arc::new(move |sig| {
                if sig == Signal::TERM {
                    helpers.lock().unwrap().push(fork(&forker));
                }
            })));
        }
        // On its own (unjoined) thread, so that a kill stuck on its hook's fork fails
        // the test rather than hanging it.
        let (done, finished) = std::sync::mpsc::channel();
        let (killer, pgid) = (init.clone(), round.pgid);
        std::thread::spawn(move || done.send(killer.kill(-pgid, Signal::TERM)));
        let sent = finished
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("{prof}: the kill waits for its own hook's fork"));
        assert_eq!(sent, Ok(()), "{prof}: the group had members");
        let helpers = helpers.lock().unwrap().clone();
        assert_eq!(
            helpers.len(),
            1,
            "{prof}: the hook ran once and its fork succeeded"
        );
        assert!(
            helpers[0].is_alive(),
            "{prof}: a child outside the group lives"
        );
        assert!(
            !round.leader.is_alive(),
            "{prof}: the bare leader died of SIGTERM"
        );
        assert!(
            managed.fatal_signal_pending(),
            "{prof}: the managed task has it pending"
        );
        managed.exit_signaled(Signal::TERM);
        helpers[0].exit(0);
        round.forked[0].lock().unwrap().extend([
            Forked {
                by: round.leader.clone(),
                child: managed.clone(),
            },
            Forked {
                by: init.clone(),
                child: helpers[0].clone(),
            },
        ]);
        round.finish(&init, &prof.to_string());
        base.check(&sys, &prof.to_string());
    }
}

/// Two groups bombed at once, each killed by its own thread: the kills are in flight
/// together, a fork attached during both waits for both, and neither bomb escapes.
#[test]
fn concurrent_group_kills_of_two_bombs_both_hold() {
    let rounds = race_iterations(20, 4);
    for &prof in Profile::ALL {
        for bomb in [Bomb::Hop, Bomb::ParentHop, Bomb::Chain] {
            let what = format!("{prof}/{bomb:?}/two kills");
            let sys = system_with(prof);
            let init = sys.init();
            let base = Baseline::of(&sys);
            for r in 0..rounds {
                let (a, b) = (Round::new(&init), Round::new(&init));
                std::thread::scope(|sc| {
                    for round in [&a, &b] {
                        let init = &init;
                        sc.spawn(move || {
                            round.race(bomb, forks_before(r), || {
                                init.kill(-round.pgid, Signal::KILL).expect("members");
                            });
                        });
                    }
                });
                for round in [&a, &b] {
                    let alive = round.members().iter().filter(|t| t.is_alive()).count();
                    assert_eq!(alive, 0, "{what} round {r}: members escaped");
                }
                a.finish(&init, &what);
                b.finish(&init, &what);
                base.check(&sys, &what);
            }
        }
    }
}
