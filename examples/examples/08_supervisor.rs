//! # 08 — a supervisor that restarts failed children
//!
//! A supervisor (think systemd, or an Erlang supervisor) starts workers, learns when
//! one ends, and restarts it if it failed. It keeps them in a `ChildSet` (uproc's
//! `JoinSet`): `wait_next()` sleeps until *some* worker exits and reaps it, woken by
//! that worker's own exit (each child's pidfd wakes only its waiter), so one thread
//! watches any number of workers without polling. In async code, `join_next().await`
//! does the same; `abort_all()` ends them all with SIGKILL.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use uproc::{ChildSet, Runtime, Signal, Spawn};
use uproc_examples::{Lesson, ensure};

/// Starts worker `id` in `set`: it fails (exit 1) until it has been started `id + 1`
/// times. Returns its pid.
fn start(
    rt: &Runtime,
    set: &mut ChildSet,
    id: usize,
    starts: Arc<AtomicU32>,
) -> Result<i32, uproc::Errno> {
    set.spawn(rt, Spawn::new().name(&format!("worker{id}")), move |_| {
        let n = starts.fetch_add(1, SeqCst) + 1;
        if n as usize > id { 0 } else { 1 }
    })
}

/// Runs the example, checks what it observes, and returns a one-line summary.
pub fn check() -> Lesson {
    let rt = Runtime::builder().build()?;
    let counters: Vec<Arc<AtomicU32>> = (0..3).map(|_| Arc::new(AtomicU32::new(0))).collect();

    // pid -> worker id, for the workers in the set.
    let mut set = ChildSet::new();
    let mut workers: HashMap<i32, usize> = HashMap::new();
    for (id, c) in counters.iter().enumerate() {
        workers.insert(start(&rt, &mut set, id, Arc::clone(c))?, id);
    }

    let mut restarts = 0;
    // Reap whichever worker exits next, until none is left.
    while let Some((pid, status)) = set.wait_next() {
        let status = status?;
        let id = workers.remove(&pid).ok_or("unknown worker")?;
        if status.exited() != Some(0) {
            restarts += 1;
            workers.insert(start(&rt, &mut set, id, Arc::clone(&counters[id]))?, id);
        }
    }

    // worker0 succeeded at once, worker1 after 1 restart, worker2 after 2.
    let starts: Vec<u32> = counters.iter().map(|c| c.load(SeqCst)).collect();
    ensure!(starts == [1, 2, 3], "starts per worker {starts:?}");
    ensure!(restarts == 3, "restarts {restarts}");
    ensure!(workers.is_empty(), "every worker accounted for");

    // Shutdown: workers that never end on their own are stopped with abort_all.
    for _ in 0..3 {
        set.spawn(&rt, Spawn::new().name("daemon"), |cx| {
            while cx.signal_pending().is_none() {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            0
        })?;
    }
    set.abort_all();
    let mut killed = 0;
    while let Some((_, status)) = set.wait_next() {
        ensure!(status?.signaled() == Some(Signal::KILL), "daemon killed");
        killed += 1;
    }
    ensure!(rt.ps().len() == 1, "leftover tasks");
    Ok(format!(
        "3 workers supervised in a ChildSet: {restarts} restarts, starts per worker {}; {killed} daemons stopped by abort_all",
        starts
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join("/")
    ))
}

fn main() {
    uproc_examples::main(check);
}
