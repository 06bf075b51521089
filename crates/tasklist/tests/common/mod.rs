//! Shared helpers for the behaviour tests.
#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;
use uproc_abi::Errno;
use uproc_abi::{CloneFlags, Profile, WaitOptions};
use uproc_tasklist::{CloneArgs, System, SystemConfig, Task, WaitId, WaitInfo};

/// A system under the current test's [`profile`].
pub fn system() -> Arc<System> {
    system_with(profile())
}

pub fn system_with(profile: Profile) -> Arc<System> {
    System::new(SystemConfig {
        profile,
        ..SystemConfig::default()
    })
    .expect("valid config")
}

/// A default system whose init leaves reparented orphans for the caller to wait for.
pub fn system_without_orphan_reaping() -> Arc<System> {
    System::new(SystemConfig {
        reap_orphans: false,
        profile: profile(),
        ..SystemConfig::default()
    })
    .expect("valid config")
}

pub fn fork(t: &Task) -> Task {
    t.fork(&CloneArgs::default()).expect("plain fork succeeds")
}

pub fn fork_flags(t: &Task, flags: CloneFlags) -> Task {
    t.fork(&CloneArgs {
        flags,
        ..Default::default()
    })
    .expect("fork succeeds")
}

/// A fork with `flags` expected to fail: its errno (`Ok(())` if it forked).
pub fn fork_errno(t: &Task, flags: CloneFlags) -> Result<(), Errno> {
    t.fork(&CloneArgs {
        flags,
        ..Default::default()
    })
    .map(|_| ())
}

/// `CLONE_INTO_CGROUP` into `cg`.
pub fn into_cgroup(cg: &uproc_cgroup::Cgroup) -> CloneArgs {
    CloneArgs {
        flags: CloneFlags::INTO_CGROUP,
        cgroup: Some(cg.clone()),
        ..Default::default()
    }
}

pub fn thread(t: &Task) -> Task {
    fork_flags(t, CloneFlags::NEW_THREAD)
}

pub fn reap(parent: &Task, child: &Task) -> WaitInfo {
    parent
        .wait(WaitId::Pid(parent.pid_of(child)), WaitOptions::EXITED)
        .expect("child is waitable")
        .expect("blocking wait returns Some")
}

/// Every pid of the root namespace belongs to a live or zombie task or is a pgrp/sid.
pub fn assert_at_rest(sys: &System) {
    let live = sys.nr_tasks();
    assert_eq!(
        sys.root_ns().nr_allocated(),
        live,
        "at rest every allocated pid belongs to an unreleased task"
    );
}

/// What a system holds with only its init: compared again at rest.
pub struct Baseline {
    tasks: usize,
    allocated: usize,
    pidfs: usize,
    hashed: usize,
}

impl Baseline {
    pub fn of(sys: &System) -> Baseline {
        Baseline {
            tasks: sys.nr_tasks(),
            allocated: sys.root_ns().nr_allocated(),
            pidfs: sys.pidfs().index_len(),
            hashed: sys.pidfs().hashed_entries(),
        }
    }

    /// Everything the test made is gone: tasks, pids, pidfs entries, charges, and init
    /// has no child (not even a zombie) left.
    pub fn check(&self, sys: &System, what: &str) {
        assert_eq!(sys.nr_tasks(), self.tasks, "{what}: a task is left behind");
        assert_eq!(
            sys.root_ns().nr_allocated(),
            self.allocated,
            "{what}: allocated pids == live tasks"
        );
        assert_eq!(
            sys.pidfs().index_len(),
            self.pidfs,
            "{what}: a pidfs index entry leaked"
        );
        assert_eq!(
            sys.pidfs().hashed_entries(),
            self.hashed,
            "{what}: an entry of the pidfs hash table leaked"
        );
        assert_eq!(sys.cgroup_root().pids_current(), 0, "{what}: pids charge");
        let init = sys.init();
        assert_eq!(
            init.wait(WaitId::All, WaitOptions::EXITED | WaitOptions::NOHANG),
            Err(Errno::ECHILD),
            "{what}: init has no child left"
        );
    }
}

/// Raises `flag` when dropped: a thread that loops `while !flag` beside workers in a
/// `std::thread::scope` must be stopped even when a worker (or the scope's own body)
/// panics, or the scope waits for it forever and the failure never prints.
pub struct StopOnDrop<'a>(pub &'a std::sync::atomic::AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Iterations of a race test: `UPROC_RACE_ITERS` if set, else `release` in an optimised
/// build and `debug` in a debug one (the window is hit often enough that the debug count
/// still catches the bug with high probability; the release count is the full hammer).
pub fn race_iterations(release: usize, debug: usize) -> usize {
    std::env::var("UPROC_RACE_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(debug_assertions) {
            debug
        } else {
            release
        })
}

/// Runs `a` and `b` at the same moment on two threads, `iters` rounds: `setup` builds
/// the round's state on the calling thread, both sides spin on a shared start counter
/// so they begin together, and `check` inspects the state once both have returned.
pub fn hammer<S: Send + Sync>(
    iters: usize,
    setup: impl FnMut(usize) -> S,
    a: impl Fn(&S) + Sync,
    b: impl Fn(&S) + Sync,
    mut check: impl FnMut(S),
) {
    let (a, b) = (|s: &S, _: usize| a(s), |s: &S, _: usize| b(s));
    race(iters, setup, &[&a, &b], |s, _| check(s));
}

/// One side of a [`race`]: the round's state and the round number.
pub type Side<'a, S> = dyn Fn(&S, usize) + Sync + 'a;

/// Runs every side of `sides` at the same moment on its own thread, `iters` rounds:
/// `setup` builds the round's state, the sides spin on a shared round counter so they
/// start together (each given the round number, to vary what it does), and `check`
/// inspects the state once all have returned.
pub fn race<S: Send + Sync>(
    iters: usize,
    mut setup: impl FnMut(usize) -> S,
    sides: &[&Side<'_, S>],
    mut check: impl FnMut(S, usize),
) {
    use std::sync::RwLock;
    use std::sync::atomic::{AtomicUsize, Ordering};
    const FAILED: usize = usize::MAX;
    let round = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let state: RwLock<Option<S>> = RwLock::new(None);
    let wait_for = |counter: &AtomicUsize, want: usize| {
        let mut spins = 0u32;
        while counter.load(Ordering::Acquire) < want {
            spins += 1;
            if spins < 200 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    };
    let n = sides.len();
    std::thread::scope(|sc| {
        for side in sides {
            let (round, done, state) = (&round, &done, &state);
            sc.spawn(move || {
                for r in 1..=iters {
                    wait_for(round, r);
                    if round.load(Ordering::Acquire) == FAILED {
                        return;
                    }
                    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        side(state.read().unwrap().as_ref().expect("round state"), r)
                    }));
                    if let Err(panic) = ran {
                        done.store(FAILED, Ordering::Release);
                        std::panic::resume_unwind(panic);
                    }
                    done.fetch_add(1, Ordering::AcqRel);
                }
            });
        }
        let driven = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            for r in 1..=iters {
                *state.write().unwrap() = Some(setup(r));
                round.store(r, Ordering::Release);
                wait_for(&done, n * r);
                assert_ne!(done.load(Ordering::Acquire), FAILED, "a side panicked");
                let s = state.write().unwrap().take().expect("round state");
                check(s, r);
            }
        }));
        if let Err(panic) = driven {
            round.store(FAILED, Ordering::Release);
            std::panic::resume_unwind(panic);
        }
    });
}

/// Spins for `n` rounds of `spin_loop`: a race test staggers one side by a varying
/// amount each round, so that the other side's window is swept rather than missed.
pub fn stagger(n: usize) {
    for _ in 0..n {
        std::hint::spin_loop();
    }
}

/// Steers the start offset of two racing sides towards the point where neither wins
/// every time (where the window is): `early()` says the first side got there first
/// this round, so it starts later next round, and the reverse; a small jitter sweeps
/// around the balance point.
/// The step grows while the same side keeps winning, so the balance point is found fast
/// whatever the two paths' lengths.
#[derive(Default)]
pub struct Balance {
    offset: std::sync::atomic::AtomicIsize,
    /// Consecutive rounds the same side was first (signed by the side).
    streak: std::sync::atomic::AtomicIsize,
    /// Half-width of the sweep around the balance point, in spins (default 8).
    jitter: usize,
}

impl Balance {
    /// A balance sweeping `jitter` spins either side of the balance point: for a
    /// window that lies well inside one side's path rather than at its end.
    pub fn with_jitter(jitter: usize) -> Balance {
        Balance {
            jitter,
            ..Balance::default()
        }
    }

    /// The spins for (side a, side b) in round `r`.
    pub fn delays(&self, r: usize) -> (usize, usize) {
        let half = if self.jitter == 0 { 8 } else { self.jitter };
        // A stride coprime with the width visits every offset.
        let jitter = ((r * 7919) % (2 * half + 1)) as isize - half as isize;
        let d = self.offset.load(std::sync::atomic::Ordering::Relaxed) + jitter;
        if d >= 0 {
            (d as usize, 0)
        } else {
            (0, d.unsigned_abs())
        }
    }

    /// Side a was first this round (`true`) or second (`false`).
    pub fn a_was_first(&self, first: bool) {
        use std::sync::atomic::Ordering;
        let dir: isize = if first { 1 } else { -1 };
        let prev = self.streak.load(Ordering::Relaxed);
        let streak = if prev.signum() == dir {
            prev + dir
        } else {
            dir
        };
        self.streak.store(streak, Ordering::Relaxed);
        let step = dir << streak.unsigned_abs().min(8);
        let o = self.offset.load(Ordering::Relaxed) + step / 2;
        // Bounded: a side starved by the scheduler must not drive the offset away.
        self.offset.store(o.clamp(-3000, 3000), Ordering::Relaxed);
    }
}

/// `tasklist_lock` write acquisitions per life cycle (fork, exit, reap): Linux's three,
/// none under `Scalable` (per-process locks only).
pub fn tasklist_writes_per_cycle(p: Profile) -> u64 {
    match p {
        Profile::Linux618 | Profile::Linux70 => 3,
        Profile::Scalable => 0,
    }
}

#[macro_use]
mod profiles;
pub use profiles::*;
