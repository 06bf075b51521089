//! # 10 — 10,000 green threads as processes, on may
//!
//! `may` runs stackful coroutines: each body is ordinary blocking-style code with a
//! small stack of its own, and thousands share a few worker threads. With
//! `uproc_may::MayExecutor`, every body is such a coroutine *and* a process: a pid, a
//! parent, an exit status, a pidfd.
//!
//! Here ten "containers" each start as pid 1 of their own pid namespace and fork
//! 1,000 members; each member yields to the others a few times (checking after every
//! yield that `uproc::current()` still names *its* task, though other coroutines ran
//! on its worker meanwhile) and exits. Each container waits for its members through
//! their pidfds from inside its coroutine (`ChildSet::wait_next`): the wait parks the
//! coroutine, not the worker thread, so the members keep running on the same workers.

use std::time::Instant;
use uproc::{ChildSet, Runtime, Spawn};
use uproc_examples::{Lesson, ensure};
use uproc_may::MayExecutor;

const GROUPS: i32 = 10;
const MEMBERS: i32 = 1_000;

/// A member: yields three times, checking `current()` after each, and checks that it
/// lives in the container's namespace; exits 0 if all was right, else 1.
fn member(cx: &uproc::TaskCx) -> i32 {
    for _ in 0..3 {
        may::coroutine::yield_now();
        match uproc::current() {
            Some(me) if me.task() == cx.task() => {}
            _ => return 1,
        }
    }
    let nspid = cx.task().nspid(); // [root pid, pid in the container]
    (nspid.len() != 2 || nspid[1] != cx.pid()) as i32
}

/// A container's init: forks the members, waits for all of them, and exits 0 if each
/// exited 0 and the pids it saw were distinct and within 2..=MEMBERS+1.
fn container(cx: &uproc::TaskCx) -> i32 {
    if cx.pid() != 1 {
        return 1;
    }
    let mut set = ChildSet::new();
    for _ in 0..MEMBERS {
        // `cx.spawn` would do the same: a child of this task, in its namespace.
        let s = Spawn::new().name("member").parent(cx.task());
        if set.spawn(cx.runtime(), s, member).is_err() {
            return 2;
        }
    }
    let mut seen = vec![false; MEMBERS as usize + 2];
    // Each wait parks this coroutine until some member exits: pidfd wake-ups.
    while let Some((pid, status)) = set.wait_next() {
        let ok = status.ok().and_then(|s| s.exited()) == Some(0);
        match usize::try_from(pid) {
            Ok(p @ 2..) if ok && p < seen.len() && !seen[p] => seen[p] = true,
            _ => return 3,
        }
    }
    0
}

/// Runs the example, checks what it observes, and returns a one-line summary.
pub fn check() -> Lesson {
    // may's scheduler is process-wide, configured before its first use.
    may::config().set_workers(2);
    let rt = Runtime::builder().executor(MayExecutor::new()).build()?;

    let start = Instant::now();
    let mut containers = ChildSet::new();
    for _ in 0..GROUPS {
        containers.spawn(&rt, Spawn::new().name("container").new_pid_ns(), container)?;
    }
    let mut codes = Vec::new();
    while let Some((_pid, status)) = containers.wait_next() {
        codes.push(status?.exited().ok_or("a container was killed")?);
    }
    let elapsed = start.elapsed();

    ensure!(
        codes.iter().all(|c| *c == 0),
        "container exit codes {codes:?} (1: not pid 1, 2: fork failed, 3: a member saw the wrong task or pid)"
    );
    ensure!(rt.ps().len() == 1, "every task reaped");
    ensure!(rt.init().pid_ns().nr_allocated() == 1, "every pid freed");
    let tasks = GROUPS * (MEMBERS + 1);
    Ok(format!(
        "{tasks} tasks as may coroutines on {} workers in {GROUPS} pid namespaces (pids 1..={} in each), waited from coroutines, in {} ms",
        may::config().get_workers(),
        MEMBERS + 1,
        elapsed.as_millis()
    ))
}

fn main() {
    uproc_examples::main(check);
}
