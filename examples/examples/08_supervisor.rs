//! # 08 — a supervisor that restarts failed children
//!
//! A supervisor (think systemd, or an Erlang supervisor) starts workers, learns when
//! one ends, and restarts it if it failed. It learns through pidfds: each worker's
//! pidfd delivers an `ExitEvent` on a channel when the worker exits (`subscribe()`),
//! so one thread can watch many workers with a channel `Select`, without polling.

use crossbeam_channel::{Receiver, Select};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use uproc::{Child, ExitEvent, Runtime, Spawn};
use uproc_examples::{Lesson, ensure};

/// Starts worker `id`: it fails (exit 1) until it has been started `id + 1` times.
fn start(
    rt: &Runtime,
    id: usize,
    starts: Arc<AtomicU32>,
) -> Result<(Child, Receiver<ExitEvent>), uproc::Errno> {
    let child = rt.spawn(Spawn::new().name(&format!("worker{id}")), move |_| {
        let n = starts.fetch_add(1, SeqCst) + 1;
        if n as usize > id { 0 } else { 1 }
    })?;
    let events = child.pidfd().subscribe();
    Ok((child, events))
}

/// Runs the example, checks what it observes, and returns a one-line summary.
pub fn check() -> Lesson {
    let rt = Runtime::builder().build()?;
    let counters: Vec<Arc<AtomicU32>> = (0..3).map(|_| Arc::new(AtomicU32::new(0))).collect();

    // worker id -> (its Child, its exit-event channel)
    let mut running: HashMap<usize, (Child, Receiver<ExitEvent>)> = HashMap::new();
    for (id, c) in counters.iter().enumerate() {
        running.insert(id, start(&rt, id, Arc::clone(c))?);
    }

    let mut restarts = 0;
    while !running.is_empty() {
        // Wait for any worker's exit event.
        let ids: Vec<usize> = running.keys().copied().collect();
        let mut sel = Select::new();
        for id in &ids {
            sel.recv(&running[id].1);
        }
        let op = sel.select();
        let id = ids[op.index()];
        let ev = op.recv(&running[&id].1)?;
        // Reap it (the event says it exited; wait() collects the zombie).
        let (child, _) = running.remove(&id).ok_or("unknown worker")?;
        let status = child.wait()?;
        ensure!(
            status == ev.status,
            "event and wait disagree: {} vs {status}",
            ev.status
        );
        if status.exited() != Some(0) {
            restarts += 1;
            running.insert(id, start(&rt, id, Arc::clone(&counters[id]))?);
        }
    }

    // worker0 succeeded at once, worker1 after 1 restart, worker2 after 2.
    let starts: Vec<u32> = counters.iter().map(|c| c.load(SeqCst)).collect();
    ensure!(starts == [1, 2, 3], "starts per worker {starts:?}");
    ensure!(restarts == 3, "restarts {restarts}");
    ensure!(rt.ps().len() == 1, "leftover tasks");
    Ok(format!(
        "3 workers supervised via pidfd exit events: {restarts} restarts, starts per worker {starts:?}"
    ))
}

fn main() {
    uproc_examples::main(check);
}
