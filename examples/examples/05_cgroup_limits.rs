//! # 05 — cgroup limits: containing a fork bomb
//!
//! A fork bomb is a task that forks copies of itself that fork copies of themselves.
//! The cgroup `pids` controller stops it: `pids.max` caps the number of tasks in a
//! cgroup (and its descendants); a fork beyond it fails with `EAGAIN`, and
//! `pids.events` counts the rejections. `cgroup.kill` then ends every task inside.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;
use uproc::{Errno, Runtime, Signal, Spawn, TaskCx};
use uproc_examples::{Lesson, ensure, eventually};

/// What the bomb's tasks report.
#[derive(Default)]
struct Stats {
    rejected: AtomicUsize, // forks that failed with EAGAIN
    settled: AtomicUsize,  // tasks done forking
}

/// The bomb: fork two copies of yourself, then idle until killed.
fn bomb(cx: &TaskCx, stats: Arc<Stats>) -> i32 {
    let mut kids = Vec::new();
    for _ in 0..2 {
        let s = Arc::clone(&stats);
        match cx.spawn(Spawn::new().name("bomb"), move |cx| bomb(cx, s)) {
            Ok(child) => kids.push(child),
            Err(Errno::EAGAIN) => {
                stats.rejected.fetch_add(1, SeqCst);
            }
            Err(_) => return 1,
        }
    }
    stats.settled.fetch_add(1, SeqCst);
    while cx.signal_pending().is_none() {
        std::thread::sleep(Duration::from_millis(1));
    }
    0
}

/// Runs the example, checks what it observes, and returns a one-line summary.
pub fn check() -> Lesson {
    let rt = Runtime::builder().build()?;
    // A cgroup for the bomb, limited to 10 tasks (like `echo 10 > pids.max`).
    let jail = rt.cgroup_root().mkdir("jail")?;
    jail.write("pids.max", "10")?;

    let stats = Arc::new(Stats::default());
    let s = Arc::clone(&stats);
    let first = rt.spawn(Spawn::new().name("bomb").cgroup(&jail), move |cx| {
        bomb(cx, s)
    })?;

    // Ten tasks fit; each makes 2 fork attempts: 20 attempts, 9 succeed, 11 fail.
    ensure!(
        eventually(|| stats.settled.load(SeqCst) == 10),
        "bomb did not settle"
    );
    let current = jail.read("pids.current")?;
    let events = jail.read("pids.events")?;
    ensure!(current.trim() == "10", "pids.current = {current}");
    ensure!(
        stats.rejected.load(SeqCst) == 11,
        "rejections {}",
        stats.rejected.load(SeqCst)
    );
    ensure!(events.contains("max 11"), "pids.events = {events:?}");

    // Defuse: cgroup.kill sends SIGKILL to every task in the cgroup.
    jail.write("cgroup.kill", "1")?;
    let st = first.wait()?;
    ensure!(
        st.signaled() == Some(Signal::KILL),
        "the first bomb ended {st}"
    );
    // Orphaned bombs go to init, which reaps them; the charge drops back to 0.
    ensure!(
        eventually(|| jail.pids_current() == 0),
        "pids.current stuck at {}",
        jail.pids_current()
    );
    ensure!(eventually(|| rt.ps().len() == 1), "leftover tasks");
    jail.rmdir()?;

    Ok(format!(
        "fork bomb held at pids.max=10: 11 forks got EAGAIN (pids.events: {}), cgroup.kill cleaned up",
        events.trim().replace('\n', ", ")
    ))
}

fn main() {
    uproc_examples::main(check);
}
