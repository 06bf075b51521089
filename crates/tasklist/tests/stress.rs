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
    };
    // A fork that fails at attach takes the pidmap_lock as a full cycle does (alloc +
    // free), tasklist_lock once and css_set_lock once (can_fork).
    assert_eq!(
        after[0].write - before[0].write,
        pidmap * (forks + eintr),
        "{profile}: pidmap_lock per life cycle"
    );
    assert_eq!(
        after[1].write - before[1].write,
        3 * forks + eintr,
        "{profile}: tasklist_lock write 3 per life cycle"
    );
    // Each stop or continue notifies the parent under tasklist_lock (read), unless the
    // other worker's SIGKILL got there first (a dying group takes no stop).
    let reads = after[1].read - before[1].read;
    assert!(
        reads <= 2 * stopcont && reads + 200 >= 2 * stopcont,
        "{profile}: tasklist_lock read only for stop/continue notifications ({reads} vs {stopcont} pairs)"
    );
    assert_eq!(
        after[2].write - before[2].write,
        3 * forks + eintr,
        "{profile}: css_set_lock 3 per life cycle"
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
