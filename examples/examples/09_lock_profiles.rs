//! # 09 — lock profiles: the same workload under Linux 6.18, Linux 7.0 and `Scalable`
//!
//! Linux's fork/exit path serialises on global locks: `pidmap_lock` (pid numbers),
//! `tasklist_lock` (the process tree), `css_set_lock` (cgroup membership). uproc
//! implements the same life cycle under several *profiles* and counts every acquisition
//! (feature `lockstat`, enabled for these examples). Counts, unlike timings, are exact:
//! here is what one fork + exit + reap costs in global lock acquisitions under each
//! profile, side by side.
//!
//! - `Linux618` and `Linux70` take the locks where those kernels take them.
//! - `Scalable` keeps every observable rule (errno, wait, reparenting, signals) but
//!   takes no `tasklist_lock` at all on this path: a child's exit, its parent's wait and
//!   the reparenting of orphans agree through per-process locks (the parent's children
//!   list, each process's signal lock); pid numbers come from per-thread batches, so
//!   `pidmap_lock` is only taken to refill a batch now and then; cgroup membership is
//!   kept per cgroup, without `css_set_lock`.

use uproc::{CloneArgs, Profile, Runtime, WaitId, WaitOptions};
use uproc_examples::{Failure, Lesson, ensure};

const CYCLES: u64 = 1_000;

/// Acquisitions (write + read) of each named lock per life cycle while `work` runs
/// `CYCLES` times.
fn per_cycle(
    profile: Profile,
    work: impl Fn(&uproc::Task) -> Result<(), Failure>,
) -> Result<Vec<(&'static str, f64)>, Failure> {
    let rt = Runtime::builder().profile(profile).build()?;
    let init = rt.init();
    let before = rt.lock_stats();
    for _ in 0..CYCLES {
        work(&init)?;
    }
    let after = rt.lock_stats();
    Ok(after
        .iter()
        .zip(&before)
        .map(|(a, b)| {
            (
                a.name,
                (a.write + a.read - b.write - b.read) as f64 / CYCLES as f64,
            )
        })
        .collect())
}

/// fork(2), _exit(2), waitpid(2).
fn life_cycle(init: &uproc::Task) -> Result<(), Failure> {
    let child = init.fork(&CloneArgs::default())?;
    child.exit(0); // now a zombie
    init.wait(WaitId::Pid(child.pid()), WaitOptions::EXITED)?; // reap
    Ok(())
}

/// A parent dies before its child: the child is reparented to the runtime init, which
/// reaps orphans itself.
fn orphan(init: &uproc::Task) -> Result<(), Failure> {
    let parent = init.fork(&CloneArgs::default())?;
    let child = parent.fork(&CloneArgs::default())?;
    parent.exit(0); // `child` moves to init
    init.wait(WaitId::Pid(parent.pid()), WaitOptions::EXITED)?;
    child.exit(0); // reaped at once by init
    Ok(())
}

/// Runs the example, checks what it observes, and returns a one-line summary.
pub fn check() -> Lesson {
    ensure!(
        uproc::lockstat::ENABLED,
        "build with the `lockstat` feature to count locks"
    );
    let mut lines = Vec::new();
    for &p in Profile::ALL {
        let counts = per_cycle(p, life_cycle)?;
        let get = |n: &str| counts.iter().find(|(name, _)| *name == n).map(|c| c.1);
        let (pidmap, tasklist, css) = (
            get("pidmap_lock").ok_or("no pidmap_lock stat")?,
            get("tasklist_lock").ok_or("no tasklist_lock stat")?,
            get("css_set_lock").ok_or("no css_set_lock stat")?,
        );
        match p {
            // 6.18 takes pidmap_lock twice to allocate (reserve, then publish) and once
            // to free; 7.0 allocates under a single acquisition. Both take
            // tasklist_lock at fork, exit and reap, and css_set_lock three times.
            Profile::Linux618 | Profile::Linux70 => {
                let want = if p == Profile::Linux618 { 3.0 } else { 2.0 };
                ensure!(pidmap == want, "{p}: pidmap_lock {pidmap} per life cycle");
                ensure!(
                    tasklist == 3.0,
                    "{p}: tasklist_lock {tasklist} per life cycle"
                );
                ensure!(css == 3.0, "{p}: css_set_lock {css} per life cycle");
            }
            Profile::Scalable => {
                ensure!(tasklist == 0.0, "{p}: tasklist_lock taken on the hot path");
                ensure!(
                    pidmap <= 0.05,
                    "{p}: pidmap_lock refills not amortised: {pidmap}"
                );
                ensure!(
                    css == 0.0,
                    "{p}: css_set_lock {css} (membership is per cgroup)"
                );
                let orphans = per_cycle(p, orphan)?;
                ensure!(
                    orphans
                        .iter()
                        .any(|(n, c)| *n == "tasklist_lock" && *c == 0.0),
                    "{p}: reparenting took tasklist_lock: {orphans:?}"
                );
            }
        }
        let shown: Vec<String> = counts.iter().map(|(n, c)| format!("{n} {c:.2}")).collect();
        lines.push(format!("{p}: {}", shown.join(", ")));
    }
    Ok(format!("per fork+exit+reap: {}", lines.join(" | ")))
}

fn main() {
    uproc_examples::main(check);
}
