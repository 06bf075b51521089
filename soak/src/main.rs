//! `soak`: stress and soak runs of the whole life cycle, per lock profile, with
//! invariants checked at rest. Not a timed test: it prints what it measured and exits
//! non-zero when an invariant broke.
//!
//! ```sh
//! cargo run --release -p uproc-soak --bin soak -- --quick          # seconds
//! cargo run --release -p uproc-soak --bin soak                     # full sizes
//! cargo run --release -p uproc-soak --bin soak -- --stress-ops 1000000 \
//!     --cycles 10000000 --waiter-rounds 200000 --profile linux70
//! ```
//!
//! Three parts, each under every profile (or the one `--profile` names), in this order:
//! - **soak**: `--cycles` plain life cycles (fork, exit, reap; every 16th with a pidfd,
//!   every 256th into a new namespace) with the resident set sampled from
//!   `/proc/self/statm`; after a warm-up (10% of the run, and at least three passes over
//!   the namespace's `pid_max` numbers) it must stay within 5%.
//! - **stress**: 4 threads, each owning one parent process, run `--stress-ops` mixed
//!   operations each (fork, fork into a new pid namespace, threads, SIGKILL/SIGTERM to
//!   own and other threads' children, exits, dropped handles, namespace-init deaths,
//!   `cgroup.kill` of the children's cgroup, forks refused at its `pids.max` of 32,
//!   non-blocking waits; then `kill(-1, SIGKILL)` and blocking waits). At rest: one
//!   task (the runtime init), one allocated pid, no pidfs index entry but init's, no
//!   cgroup charge, every cgroup removable, and every pid namespace the run made
//!   freed (none kept by a reference or a reference credit left behind).
//! - **autoreap waiters**: for each autoreap path (SIG_IGN, SA_NOCLDWAIT,
//!   CLONE_AUTOREAP, threads) a waiter polls `wait(WEXITED|WNOHANG)` while another
//!   thread forks and ends `--waiter-rounds` children that must autoreap: the waiter
//!   must never see one (Linux: ECHILD or nothing).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;
use uproc::{
    Cgroup, CloneArgs, CloneFlags, Errno, PidNamespace, Profile, SigChld, Signal, System,
    SystemConfig, Task, WaitId, WaitOptions, WeakTask,
};

/// Sizes from the command line.
#[derive(Clone, Debug)]
struct Sizes {
    profiles: Vec<Profile>,
    stress_ops: u64,
    cycles: u64,
    waiter_rounds: u64,
}

fn parse_args() -> Sizes {
    let mut s = Sizes {
        profiles: Profile::ALL.to_vec(),
        stress_ops: 1_000_000,
        cycles: 10_000_000,
        waiter_rounds: 200_000,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    let usage = || -> ! {
        eprintln!(
            "usage: soak [--quick] [--profile P] [--stress-ops N] [--cycles N] [--waiter-rounds N]"
        );
        std::process::exit(2)
    };
    while i < args.len() {
        let num = |i: usize| -> u64 {
            args.get(i + 1)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| usage())
        };
        match args[i].as_str() {
            "--quick" => {
                s.stress_ops = 20_000;
                s.cycles = 200_000;
                s.waiter_rounds = 5_000;
                i += 1;
            }
            "--profile" => {
                let p = args
                    .get(i + 1)
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| usage());
                s.profiles = vec![p];
                i += 2;
            }
            "--stress-ops" => {
                s.stress_ops = num(i);
                i += 2;
            }
            "--cycles" => {
                s.cycles = num(i);
                i += 2;
            }
            "--waiter-rounds" => {
                s.waiter_rounds = num(i);
                i += 2;
            }
            _ => usage(),
        }
    }
    s
}

/// Raises its flag when dropped, unwinding included: stops a thread that loops until
/// the flag beside a scope body that may panic.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// xorshift64*: a fast, seedable generator (no dependency).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn system(profile: Profile) -> Arc<System> {
    System::new(SystemConfig {
        profile,
        ..SystemConfig::default()
    })
    .expect("runtime")
}

/// Resident set in bytes, from `/proc/self/statm` (second field, in pages).
fn rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// Reaps every child of `p` (blocking until none is left: ECHILD).
fn reap_all(p: &Task) -> u64 {
    let mut n = 0;
    loop {
        match p.wait(WaitId::All, WaitOptions::EXITED | WaitOptions::ALL) {
            Ok(Some(_)) => n += 1,
            Ok(None) => unreachable!("a blocking wait returns a child or an error"),
            Err(Errno::ECHILD) => return n,
            Err(e) => panic!("reaping: {e}"),
        }
    }
}

/// The invariants at rest: only the runtime init is left, holding the only pid.
fn check_at_rest(sys: &System, what: &str) -> Result<(), String> {
    let tasks = sys.nr_tasks();
    let pids = sys.root_ns().nr_allocated();
    let index = sys.pidfs().index_len();
    let charged: u64 = sys
        .cgroup_root()
        .children()
        .iter()
        .map(|c| c.pids_current())
        .sum();
    if tasks != 1 || pids != 1 || index > 1 || charged != 0 {
        return Err(format!(
            "{what}: at rest {tasks} tasks, {pids} pids, {index} pidfs entries, {charged} charged"
        ));
    }
    Ok(())
}

/// Counters of what the stress did.
#[derive(Default)]
struct Counts {
    forks: AtomicU64,
    fork_errors: AtomicU64,
    pids_max_hits: AtomicU64,
    cgroup_kills: AtomicU64,
    kills: AtomicU64,
    ns_init_deaths: AtomicU64,
    dropped: AtomicU64,
    reaped: AtomicU64,
    /// The pid namespaces the forks made, to check at rest that each was freed; the
    /// freed ones are pruned as it grows.
    namespaces: Mutex<Vec<Weak<PidNamespace>>>,
}

impl Counts {
    fn made_namespace(&self, ns: &Arc<PidNamespace>) {
        let mut all = self.namespaces.lock().expect("namespaces");
        if all.len() == all.capacity() && all.len() >= 1024 {
            all.retain(|w| w.strong_count() > 0);
        }
        all.push(Arc::downgrade(ns));
    }

    /// How many of the namespaces the run made are still alive.
    fn live_namespaces(&self) -> usize {
        let all = self.namespaces.lock().expect("namespaces");
        all.iter().filter(|w| w.strong_count() > 0).count()
    }
}

fn stress(profile: Profile, ops: u64) -> Result<String, String> {
    let sys = system(profile);
    let init = sys.init();
    let shared: Arc<Mutex<Vec<WeakTask>>> = Arc::default();
    let counts = Arc::new(Counts::default());
    let start = Instant::now();
    // Each worker: its parent in cgroup w<i>, the parent's children in w<i>/children
    // with pids.max 32 (forks beyond fail with EAGAIN; cgroup.kill ends them all).
    let root = sys.cgroup_root();
    let mut workers = Vec::new();
    for i in 0..4 {
        let w = root
            .mkdir(&format!("w{i}"))
            .map_err(|e| format!("mkdir: {e}"))?;
        let children = w.mkdir("children").map_err(|e| format!("mkdir: {e}"))?;
        children
            .write("pids.max", "32")
            .map_err(|e| format!("pids.max: {e}"))?;
        let parent = init
            .fork(&CloneArgs {
                flags: CloneFlags::INTO_CGROUP,
                cgroup: Some(w.clone()),
                ..CloneArgs::default()
            })
            .map_err(|e| format!("parent: {e}"))?;
        workers.push((parent, w, children));
    }
    std::thread::scope(|s| {
        for (i, (parent, _, children)) in workers.iter().enumerate() {
            let shared = shared.clone();
            let counts = counts.clone();
            s.spawn(move || stress_worker(parent, children, i as u64, ops, &shared, &counts));
        }
    });
    let parents: Vec<Task> = workers.iter().map(|w| w.0.clone()).collect();
    // Tasks whose handles were dropped still live: one kill(-1, SIGKILL) from the
    // runtime init ends every process but init (the parents too, whose children then
    // go to init and autoreap); the parents are init's own to reap.
    init.kill(-1, Signal::KILL)
        .map_err(|e| format!("{profile} stress: kill(-1): {e}"))?;
    for p in &parents {
        counts.reaped.fetch_add(reap_all(p), Ordering::Relaxed);
        let got = init.wait(WaitId::Pid(p.pid()), WaitOptions::EXITED);
        if !matches!(got, Ok(Some(_))) {
            return Err(format!("{profile} stress: reaping a parent: {got:?}"));
        }
    }
    drop(shared);
    check_at_rest(&sys, &format!("{profile} stress"))?;
    let live = counts.live_namespaces();
    if live != 0 {
        return Err(format!(
            "{profile} stress: at rest {live} of the run's pid namespaces still alive"
        ));
    }
    for (_, w, children) in workers {
        children
            .rmdir()
            .and_then(|()| w.rmdir())
            .map_err(|e| format!("{profile} stress: rmdir of an empty cgroup: {e}"))?;
    }
    let c = &counts;
    Ok(format!(
        "{profile} stress: 4 x {ops} ops in {:.1}s: {} forks ({} refused, {} of them at pids.max), {} kills, {} cgroup.kill writes, {} namespace-init deaths, {} handles dropped unreaped, {} reaped by waits; at rest: 1 task, 1 pid, 0 charged, every cgroup removable, every namespace freed",
        start.elapsed().as_secs_f64(),
        c.forks.load(Ordering::Relaxed),
        c.fork_errors.load(Ordering::Relaxed),
        c.pids_max_hits.load(Ordering::Relaxed),
        c.kills.load(Ordering::Relaxed),
        c.cgroup_kills.load(Ordering::Relaxed),
        c.ns_init_deaths.load(Ordering::Relaxed),
        c.dropped.load(Ordering::Relaxed),
        c.reaped.load(Ordering::Relaxed),
    ))
}

fn stress_worker(
    parent: &Task,
    children: &Cgroup,
    seed: u64,
    ops: u64,
    shared: &Mutex<Vec<WeakTask>>,
    c: &Counts,
) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (seed + 1).wrapping_mul(0xff51_afd7_ed55_8ccd));
    let mut held: Vec<Task> = Vec::new();
    for _ in 0..ops {
        match rng.below(16) {
            0..=4 => {
                // fork: plain, into a new namespace, or a thread / grandchild of a held task
                let (forker, flags) = match rng.below(6) {
                    0 => (parent.clone(), CloneFlags::NEWPID | CloneFlags::INTO_CGROUP),
                    1 if !held.is_empty() => (
                        held[rng.below(held.len())].clone(),
                        CloneFlags::THREAD | CloneFlags::SIGHAND | CloneFlags::VM,
                    ),
                    2 if !held.is_empty() => {
                        (held[rng.below(held.len())].clone(), CloneFlags::empty())
                    }
                    _ => (parent.clone(), CloneFlags::INTO_CGROUP),
                };
                let cgroup = flags
                    .contains(CloneFlags::INTO_CGROUP)
                    .then(|| children.clone());
                match forker.fork(&CloneArgs {
                    flags,
                    cgroup,
                    ..CloneArgs::default()
                }) {
                    Ok(t) => {
                        c.forks.fetch_add(1, Ordering::Relaxed);
                        if flags.contains(CloneFlags::NEWPID) {
                            c.made_namespace(&t.pid_ns());
                        }
                        if held.len() < 64 {
                            shared.lock().expect("pool").push(t.downgrade());
                            held.push(t);
                        } else {
                            t.exit(0);
                        }
                    }
                    Err(e) => {
                        c.fork_errors.fetch_add(1, Ordering::Relaxed);
                        if e == Errno::EAGAIN {
                            c.pids_max_hits.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
            5 | 6 if !held.is_empty() => {
                let t = held.swap_remove(rng.below(held.len()));
                let sig = if rng.below(2) == 0 {
                    Signal::KILL
                } else {
                    Signal::TERM
                };
                if t.pid() == 1 {
                    c.ns_init_deaths.fetch_add(1, Ordering::Relaxed);
                }
                let _ = parent.kill(parent.pid_of(&t), sig);
                c.kills.fetch_add(1, Ordering::Relaxed);
            }
            7 => {
                // another thread's child (or an already reaped one)
                let victim = {
                    let mut pool = shared.lock().expect("pool");
                    if pool.is_empty() {
                        None
                    } else {
                        let i = rng.below(pool.len());
                        pool.swap_remove(i).upgrade()
                    }
                };
                if let Some(v) = victim {
                    let _ = parent.kill(parent.pid_of(&v), Signal::KILL);
                    c.kills.fetch_add(1, Ordering::Relaxed);
                }
            }
            8 | 9 if !held.is_empty() => {
                let t = held.swap_remove(rng.below(held.len()));
                if rng.below(2) == 0 {
                    t.exit_group(rng.below(256) as i32);
                } else {
                    t.exit(1);
                }
            }
            10 if !held.is_empty() => {
                // dropped handle: the task lives on (or stays a zombie) without it
                drop(held.swap_remove(rng.below(held.len())));
                c.dropped.fetch_add(1, Ordering::Relaxed);
            }
            11..=13 => {
                let opts = WaitOptions::EXITED | WaitOptions::NOHANG | WaitOptions::ALL;
                if let Ok(Some(_)) = parent.wait(WaitId::All, opts) {
                    c.reaped.fetch_add(1, Ordering::Relaxed);
                }
            }
            _ if rng.below(8) == 0 => {
                // cgroup.kill: every child of this worker (not the parent) dies at once
                if children.write("cgroup.kill", "1").is_ok() {
                    c.cgroup_kills.fetch_add(1, Ordering::Relaxed);
                }
            }
            _ => {
                shared
                    .lock()
                    .expect("pool")
                    .retain(|w| w.upgrade().is_some_and(|t| t.is_alive()));
            }
        }
    }
    for t in held.drain(..) {
        let _ = parent.kill(parent.pid_of(&t), Signal::KILL);
        t.exit_group(0);
    }
}

fn soak(profile: Profile, cycles: u64) -> Result<String, String> {
    let sys = system(profile);
    let init = sys.init();
    let parent = init.fork(&CloneArgs::default()).expect("parent");
    let samples = 20;
    let every = (cycles / samples).max(1);
    // Warm-up: 10% of the run, and at least three passes over the root namespace's
    // numbers. Numbers are handed out in cyclic (`Linux*`) or least-recently-freed
    // (`Scalable`) order, so the first passes touch every entry of the number table
    // and the per-number state one after the other, and the resident set grows until
    // they end (under `Scalable` the plateau comes after about two passes): a growth
    // that stops there is not a leak, and a base taken before it reads as drift.
    let warm = (cycles / 10).max(3 * sys.root_ns().pid_max() as u64);
    if cycles < warm + 2 * every {
        return Err(format!(
            "{profile} soak: {cycles} life cycles leave no sample after the warm-up of {warm}: \
             ask for more (--cycles)"
        ));
    }
    let mut base = None;
    let mut worst: f64 = 0.0;
    let mut rss = Vec::new();
    let start = Instant::now();
    for i in 0..cycles {
        let flags = if i % 256 == 255 {
            CloneFlags::NEWPID
        } else if i % 16 == 15 {
            CloneFlags::PIDFD
        } else {
            CloneFlags::empty()
        };
        let child = parent
            .fork(&CloneArgs {
                flags,
                ..CloneArgs::default()
            })
            .map_err(|e| format!("{profile} soak: fork {i}: {e}"))?;
        child.exit((i % 256) as i32);
        let got = parent.wait(WaitId::Pid(parent.pid_of(&child)), WaitOptions::EXITED);
        match got {
            Ok(Some(info)) if info.status.exited() == Some((i % 256) as i32) => {}
            other => return Err(format!("{profile} soak: cycle {i}: {other:?}")),
        }
        if (i + 1) % every == 0 {
            let r = rss_bytes();
            rss.push(r / 1024);
            if i >= warm {
                let b = *base.get_or_insert(r);
                worst = worst.max((r as f64 - b as f64).abs() / b as f64);
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    parent.exit(0);
    let _ = init.wait(WaitId::Pid(parent.pid()), WaitOptions::EXITED);
    check_at_rest(&sys, &format!("{profile} soak"))?;
    let line = format!(
        "{profile} soak: {cycles} life cycles in {secs:.1}s ({:.0}/s); RSS KiB samples {:?}; worst drift after warm-up {:.2}%",
        cycles as f64 / secs,
        rss,
        worst * 100.0
    );
    if worst > 0.05 {
        return Err(format!("{line}: above 5%"));
    }
    Ok(line)
}

/// The autoreap paths a waiter must never see.
#[derive(Clone, Copy, Debug)]
enum Path {
    SigIgn,
    NoCldWait,
    CloneAutoreap,
    Threads,
}

fn autoreap_waiters(profile: Profile, rounds: u64) -> Result<String, String> {
    let mut lines = Vec::new();
    let mut failed = false;
    for path in [
        Path::SigIgn,
        Path::NoCldWait,
        Path::CloneAutoreap,
        Path::Threads,
    ] {
        let sys = system(profile);
        let init = sys.init();
        let parent = init.fork(&CloneArgs::default()).expect("parent");
        match path {
            Path::SigIgn => parent.set_sigchld(SigChld::Ignore),
            Path::NoCldWait => parent.set_sigchld(SigChld::NoCldWait),
            _ => {}
        }
        let done = AtomicBool::new(false);
        let seen = AtomicU64::new(0);
        let polls = AtomicU64::new(0);
        std::thread::scope(|s| {
            // Stops the waiter however this body ends: a failed fork's panic then ends
            // the run with its message instead of hanging it.
            let _stop_waiter = StopOnDrop(&done);
            s.spawn(|| {
                let opts = WaitOptions::EXITED | WaitOptions::NOHANG | WaitOptions::ALL;
                while !done.load(Ordering::Acquire) {
                    polls.fetch_add(1, Ordering::Relaxed);
                    if let Ok(Some(_)) = parent.wait(WaitId::All, opts) {
                        seen.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
            // Fork only once the waiter polls: on a loaded machine the forks could
            // otherwise all be done before the waiter first ran, a race never raced.
            while polls.load(Ordering::Relaxed) == 0 {
                std::thread::yield_now();
            }
            let flags = match path {
                Path::CloneAutoreap => CloneFlags::AUTOREAP,
                Path::Threads => CloneFlags::THREAD | CloneFlags::SIGHAND | CloneFlags::VM,
                _ => CloneFlags::empty(),
            };
            for _ in 0..rounds {
                let child = parent
                    .fork(&CloneArgs {
                        flags,
                        ..CloneArgs::default()
                    })
                    .expect("fork");
                child.exit(0);
            }
            done.store(true, Ordering::Release);
        });
        let seen = seen.load(Ordering::Relaxed);
        let leftover = parent.wait(
            WaitId::All,
            WaitOptions::EXITED | WaitOptions::NOHANG | WaitOptions::ALL,
        );
        parent.exit(0);
        let _ = init.wait(WaitId::Pid(parent.pid()), WaitOptions::EXITED);
        let rest = check_at_rest(&sys, &format!("{profile} {path:?}"));
        failed |= seen != 0 || rest.is_err() || leftover != Err(Errno::ECHILD);
        lines.push(format!(
            "{profile} autoreap {path:?}: {rounds} children, {} waiter polls, {seen} seen by the waiter (must be 0), afterwards {leftover:?}{}",
            polls.load(Ordering::Relaxed),
            rest.err().map(|e| format!("; {e}")).unwrap_or_default()
        ));
    }
    let text = lines.join("\n");
    if failed { Err(text) } else { Ok(text) }
}

fn main() {
    let sizes = parse_args();
    println!("soak sizes: {sizes:?}");
    let mut failures = 0;
    for &profile in &sizes.profiles {
        // The soak first: its RSS samples then start from a small heap, not from the
        // stress run's high-water mark.
        for r in [
            soak(profile, sizes.cycles),
            stress(profile, sizes.stress_ops),
            autoreap_waiters(profile, sizes.waiter_rounds),
        ] {
            match r {
                Ok(line) => println!("{line}"),
                Err(e) => {
                    failures += 1;
                    println!("FAIL {e}");
                }
            }
        }
    }
    if failures > 0 {
        println!("{failures} part(s) failed");
        std::process::exit(1);
    }
    println!("all parts passed");
}
