//! # 09 — lock profiles: the same workload under Linux 6.18 and 7.0 locking
//!
//! Linux's fork/exit path serialises on global locks: `pidmap_lock` (pid numbers),
//! `tasklist_lock` (the process tree), `css_set_lock` (cgroup membership). uproc
//! implements the same life cycle under several *profiles* that take these locks the
//! way a given kernel does, and counts every acquisition (feature `lockstat`, enabled
//! for these examples). Counts, unlike timings, are exact: here is what one
//! fork + exit + reap costs in global lock acquisitions under each profile.

use uproc::{CloneArgs, Profile, Runtime, WaitId, WaitOptions};
use uproc_examples::{Failure, Lesson, ensure};

const CYCLES: u64 = 1_000;

/// Acquisitions (write + read) of each named lock during `CYCLES` fork/exit/reap cycles.
fn count(profile: Profile) -> Result<Vec<(&'static str, u64)>, Failure> {
    let rt = Runtime::builder().profile(profile).build()?;
    let init = rt.init();
    let before = rt.lock_stats();
    for _ in 0..CYCLES {
        let child = init.fork(&CloneArgs::default())?; // fork(2)
        child.exit(0); // _exit(2): now a zombie
        init.wait(WaitId::Pid(child.pid()), WaitOptions::EXITED)?; // waitpid(2): reap
    }
    let after = rt.lock_stats();
    Ok(after
        .iter()
        .zip(&before)
        .map(|(a, b)| (a.name, a.write + a.read - b.write - b.read))
        .collect())
}

/// Runs the example, checks what it observes, and returns a one-line summary.
pub fn check() -> Lesson {
    ensure!(
        uproc::lockstat::ENABLED,
        "build with the `lockstat` feature to count locks"
    );
    let mut lines = Vec::new();
    let mut pidmap = Vec::new();
    for &p in Profile::ALL {
        let counts = count(p)?;
        let get = |n: &str| counts.iter().find(|(name, _)| *name == n).map(|c| c.1);
        pidmap.push(get("pidmap_lock").ok_or("no pidmap_lock stat")?);
        // Linux takes css_set_lock 3 times per life cycle; Scalable never does.
        let css = if p == Profile::Scalable {
            0
        } else {
            3 * CYCLES
        };
        ensure!(
            get("css_set_lock") == Some(css),
            "{p}: css_set_lock taken {css} times in {CYCLES} life cycles"
        );
        let shown: Vec<String> = counts
            .iter()
            .map(|(n, c)| format!("{n} {:.1}", *c as f64 / CYCLES as f64))
            .collect();
        lines.push(format!("{p}: {}", shown.join(", ")));
    }
    // 6.18 takes pidmap_lock twice to allocate (reserve, then publish) and once to
    // free; 7.0 allocates under a single acquisition.
    ensure!(
        pidmap[0] > pidmap[1],
        "Linux618 should take pidmap_lock more often than Linux70: {pidmap:?}"
    );
    Ok(format!("per fork+exit+reap: {}", lines.join(" | ")))
}

fn main() {
    uproc_examples::main(check);
}
