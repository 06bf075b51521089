//! Two threads x many fork/exit/reap cycles with random kills (through pidfds, from the
//! other thread), threads and waits; then the invariants at rest.
//!
//! Cycles per thread: 100k (about 4 s for both profiles in a debug build on the
//! two-core development machine); `UPROC_STRESS_CYCLES` overrides.

mod common;
use common::*;
use std::sync::{Arc, Mutex};
use uproc_abi::{CloneFlags, Profile, Signal, WaitOptions};
use uproc_pidfs::PidFd;
use uproc_tasklist::{CloneArgs, SigChld, System, Task, TaskState, WaitId, WeakTask};

fn cycles() -> u64 {
    std::env::var("UPROC_STRESS_CYCLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000)
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[derive(Default)]
struct Counts {
    /// Tasks forked (each goes through a full life cycle).
    forks: u64,
    /// Thread forks that failed at attach (EINTR: the group was killed meanwhile).
    eintr: u64,
    /// SIGSTOP+SIGCONT pairs (each notifies the parent under tasklist_lock read).
    stopcont: u64,
    weaks: Vec<WeakTask>,
}

/// One worker: its own parent process, `n` cycles.
fn worker(
    init: Task,
    seed: u64,
    n: u64,
    mine: Arc<Mutex<Option<PidFd>>>,
    theirs: Arc<Mutex<Option<PidFd>>>,
) -> Counts {
    let mut rng = Rng(seed);
    let parent = fork(&init);
    let mut k = Counts {
        forks: 1,
        weaks: vec![parent.downgrade()],
        ..Default::default()
    };
    for i in 0..n {
        let r = rng.next();
        let flags = match r % 8 {
            0 => CloneFlags::PIDFD,
            1 => CloneFlags::AUTOREAP,
            _ => CloneFlags::empty(),
        };
        let c = parent
            .fork(&CloneArgs {
                flags,
                ..Default::default()
            })
            .expect("fork");
        k.forks += 1;
        if i % 97 == 0 {
            k.weaks.push(c.downgrade());
        }
        if let Some(fd) = c.pidfd() {
            *mine.lock().unwrap() = Some(fd);
        }
        // Sometimes kill the other worker's latest child through its pidfd.
        if r % 5 == 0 {
            if let Some(fd) = theirs.lock().unwrap().take() {
                let _ = fd.send_signal(Signal::KILL);
            }
        }
        match (r >> 8) % 6 {
            0 => match c.fork(&CloneArgs {
                flags: CloneFlags::NEW_THREAD,
                ..Default::default()
            }) {
                Ok(t) => {
                    k.forks += 1;
                    t.exit_group(3);
                }
                // Killed by the other worker meanwhile.
                Err(uproc_abi::Errno::EINTR) => k.eintr += 1,
                Err(uproc_abi::Errno::ESRCH) => {}
                Err(e) => panic!("thread fork: {e:?}"),
            },
            1 => parent.kill(parent.pid_of(&c), Signal::KILL).unwrap(),
            2 => {
                parent.kill(parent.pid_of(&c), Signal::STOP).unwrap();
                parent.kill(parent.pid_of(&c), Signal::CONT).unwrap();
                k.stopcont += 1;
                c.exit(1);
            }
            _ => c.exit((r & 0xff) as i32),
        }
        if flags.contains(CloneFlags::AUTOREAP) {
            assert_eq!(c.state(), TaskState::Dead, "autoreap");
            continue;
        }
        let info = if (r >> 16) % 2 == 0 {
            parent.wait(WaitId::Pid(parent.pid_of(&c)), WaitOptions::EXITED)
        } else {
            parent.wait(WaitId::All, WaitOptions::EXITED)
        };
        let info = info.expect("the child is waitable").expect("blocking wait");
        assert!(info.status.exited().is_some() || info.status.signaled().is_some());
        // Stop/continue reports left behind are consumed with the zombie.
        assert_eq!(c.state(), TaskState::Dead);
    }
    parent.set_sigchld(SigChld::Default);
    parent.exit(0);
    reap(&init, &parent);
    k
}

fn run(profile: Profile) {
    let sys: Arc<System> = system_with(profile);
    let init = sys.init();
    let n = cycles();
    let before = sys.lock_stats();
    let a: Arc<Mutex<Option<PidFd>>> = Arc::default();
    let b: Arc<Mutex<Option<PidFd>>> = Arc::default();
    let hs: Vec<_> = [(1u64, a.clone(), b.clone()), (2, b.clone(), a.clone())]
        .into_iter()
        .map(|(seed, m, t)| {
            let init = init.clone();
            std::thread::spawn(move || {
                worker(init, seed.wrapping_mul(0x9E37_79B9_7F4A_7C15), n, m, t)
            })
        })
        .collect();
    let mut forks = 0;
    let mut eintr = 0;
    let mut stopcont = 0;
    let mut weaks = Vec::new();
    for h in hs {
        let k = h.join().unwrap();
        forks += k.forks;
        eintr += k.eintr;
        stopcont += k.stopcont;
        weaks.extend(k.weaks);
    }
    *a.lock().unwrap() = None;
    *b.lock().unwrap() = None;
    let after = sys.lock_stats();
    // At rest.
    assert_eq!(sys.nr_tasks(), 1, "{profile}: only init is left; no zombie");
    assert_eq!(
        sys.root_ns().nr_allocated(),
        1,
        "{profile}: allocated pids == live tasks"
    );
    assert_eq!(
        sys.pidfs().index_len(),
        1,
        "{profile}: pidfs index holds only init's pid"
    );
    assert_eq!(sys.cgroup_root().pids_current(), 0);
    for w in &weaks {
        assert!(
            w.upgrade().is_none(),
            "{profile}: every reaped task is freed"
        );
    }
    let pidmap = match profile {
        Profile::Linux618 => 3,
        Profile::Linux70 => 2,
        Profile::Scalable => 0,
    };
    // A fork that fails at attach takes the pidmap_lock as a full cycle does (alloc +
    // free), tasklist_lock once and css_set_lock once (can_fork). `Scalable` refills
    // per-thread number batches now and then (amortised: at most one per 20 cycles).
    let pidmap_taken = after[0].write - before[0].write;
    if profile == Profile::Scalable {
        assert!(
            pidmap_taken <= (forks + eintr) / 20 + 4,
            "{profile}: pidmap_lock refills amortised ({pidmap_taken} for {forks} cycles)"
        );
    } else {
        assert_eq!(
            pidmap_taken,
            pidmap * (forks + eintr),
            "{profile}: pidmap_lock per life cycle"
        );
    }
    let tl = tasklist_writes_per_cycle(profile);
    assert_eq!(
        after[1].write - before[1].write,
        tl * forks + tl.min(1) * eintr,
        "{profile}: tasklist_lock write {tl} per life cycle"
    );
    // Each stop or continue notifies the parent under tasklist_lock (read), unless the
    // other worker's SIGKILL got there first (a dying group takes no stop); never under
    // `Scalable`.
    let reads = after[1].read - before[1].read;
    let expected = tl.min(1) * 2 * stopcont;
    assert!(
        reads <= expected && reads + 200 >= expected,
        "{profile}: tasklist_lock read only for stop/continue notifications ({reads} vs {stopcont} pairs)"
    );
    let css = if profile == Profile::Scalable { 0 } else { 1 };
    assert_eq!(
        after[2].write - before[2].write,
        css * (3 * forks + eintr),
        "{profile}: css_set_lock 3 per life cycle (none under Scalable)"
    );
}

#[test]
fn stress_linux70() {
    run(Profile::Linux70);
}

#[test]
fn stress_linux618() {
    run(Profile::Linux618);
}

#[test]
fn stress_scalable() {
    run(Profile::Scalable);
}

/// One reparenting worker: per round, a (sometimes subreaper) holder S, a parent P under
/// it, P's children and a grandchild. The children go to the other worker, which forks
/// `CLONE_PARENT` siblings from them and ends them while this one ends P: their exits
/// race P's reparenting of them (to S or to the runtime init). S then reaps until
/// ECHILD: a child in flight between P and S would make it return early and leave a
/// zombie behind, which the at-rest checks catch.
fn reparent_worker(
    init: Task,
    seed: u64,
    rounds: u64,
    tx: std::sync::mpsc::Sender<Task>,
    rx: std::sync::mpsc::Receiver<Task>,
) -> Vec<WeakTask> {
    let mut rng = Rng(seed);
    let mut weaks = Vec::new();
    for _ in 0..rounds {
        let r = rng.next();
        let s = fork(&init);
        let subreaper = r % 2 == 0;
        s.set_child_subreaper(subreaper);
        let p = fork(&s);
        let kids: Vec<Task> = (0..3).map(|_| fork(&p)).collect();
        let g = fork(&kids[0]);
        weaks.extend([s.downgrade(), p.downgrade(), g.downgrade()]);
        for k in kids.iter().chain([&g]) {
            tx.send(k.clone()).expect("the other worker lives");
        }
        drop(kids);
        if (r >> 4) % 2 == 0 {
            p.exit(0);
        } else {
            s.kill(s.pid_of(&p), Signal::KILL).expect("p is s's child");
        }
        // The other worker's four tasks.
        for i in 0..4 {
            let k = rx.recv().expect("the other worker lives");
            weaks.push(k.downgrade());
            if (r >> (8 + i)) % 2 == 0 {
                // Under init already: the sibling is init's own child for sure.
                let k_under_init = k.parent().is_some_and(|x| x == init);
                if let Ok(sib) = k.fork(&CloneArgs {
                    flags: CloneFlags::PARENT,
                    ..Default::default()
                }) {
                    weaks.push(sib.downgrade());
                    // A sibling forked after `k` moved to the runtime init is init's
                    // own child (init never exits, so this cannot change): nobody else
                    // reaps it. One forked under P or S moves with the others; if it
                    // moved to init before this read, it is an orphan init adopted,
                    // which autoreaps at its exit (`reap_orphans`). Waited for by its
                    // task, not its number: an autoreaped sibling's number may already
                    // name another child of init.
                    let init_child = sib.parent().is_some_and(|x| x == init);
                    sib.exit(7);
                    if init_child {
                        match init.wait_task(&sib, WaitOptions::EXITED) {
                            Ok(Some(info)) => assert_eq!(info.status.exited(), Some(7)),
                            Err(uproc_abi::Errno::ECHILD) if !k_under_init => assert_eq!(
                                sib.state(),
                                TaskState::Dead,
                                "ECHILD only for an adopted orphan, autoreaped"
                            ),
                            other => panic!("init.wait_task(sib): {other:?}"),
                        }
                    }
                }
            }
            k.exit(i);
        }
        // S reaps P and every adopted descendant, until none is left.
        loop {
            match s.wait(WaitId::All, WaitOptions::EXITED) {
                Ok(Some(_)) => {}
                Err(uproc_abi::Errno::ECHILD) => break,
                other => panic!("s.wait: {other:?}"),
            }
        }
        s.exit(0);
        reap(&init, &s);
    }
    weaks
}

fn run_reparent(profile: Profile) {
    let sys: Arc<System> = system_with(profile);
    let init = sys.init();
    let rounds = cycles() / 50;
    let (tx_a, rx_a) = std::sync::mpsc::channel();
    let (tx_b, rx_b) = std::sync::mpsc::channel();
    let hs: Vec<_> = [(1u64, tx_a, rx_b), (2, tx_b, rx_a)]
        .into_iter()
        .map(|(seed, tx, rx)| {
            let init = init.clone();
            std::thread::spawn(move || {
                reparent_worker(
                    init,
                    seed.wrapping_mul(0x9E37_79B9_7F4A_7C15),
                    rounds,
                    tx,
                    rx,
                )
            })
        })
        .collect();
    let weaks: Vec<WeakTask> = hs.into_iter().flat_map(|h| h.join().unwrap()).collect();
    assert_eq!(sys.nr_tasks(), 1, "{profile}: only init is left; no zombie");
    assert_eq!(
        sys.root_ns().nr_allocated(),
        1,
        "{profile}: allocated pids == live tasks"
    );
    assert_eq!(sys.pidfs().index_len(), 1, "{profile}: pidfs index");
    assert_eq!(sys.cgroup_root().pids_current(), 0, "{profile}: charges");
    assert!(
        init.wait(WaitId::All, WaitOptions::EXITED | WaitOptions::NOHANG)
            .is_err_and(|e| e == uproc_abi::Errno::ECHILD),
        "{profile}: init has no child left"
    );
    for w in &weaks {
        assert!(
            w.upgrade().is_none(),
            "{profile}: every reaped task is freed"
        );
    }
}

#[test]
fn stress_reparent_every_profile() {
    for &p in Profile::ALL {
        run_reparent(p);
    }
}
