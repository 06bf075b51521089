//! # 07 — 10,000 tasks as processes on tokio
//!
//! With the `tokio` feature, `spawn_async` runs an `async` body as a tokio task: each
//! of the 10,000 tasks below has a pid, a parent, an exit status and a pidfd, yet
//! costs a future, not a thread. `child.await` waits through the pidfd (no blocked
//! thread) and reaps.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};
use uproc::{Runtime, Spawn, tokio::TokioExecutor};
use uproc_examples::{Failure, Lesson, ensure};

const TASKS: i32 = 10_000;

/// Runs the example, checks what it observes, and returns a one-line summary.
pub fn check() -> Lesson {
    let tokio_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    // The tokio executor also runs synchronous bodies on tokio's blocking pool.
    let rt = Runtime::builder()
        .executor(TokioExecutor::new(tokio_rt.handle().clone()))
        .build()?;

    // The most jobs inside their body at once, counted by the jobs themselves as they
    // enter and leave it (init is not a job).
    let (alive, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let start = Instant::now();
    let sum = tokio_rt.block_on(async {
        let mut children = Vec::with_capacity(TASKS as usize);
        for i in 0..TASKS {
            // Each body sleeps a little (so they overlap), then exits with i % 256.
            let (alive, peak) = (Arc::clone(&alive), Arc::clone(&peak));
            children.push(
                rt.spawn_async(Spawn::new().name("job"), move |_cx| async move {
                    peak.fetch_max(alive.fetch_add(1, Relaxed) + 1, Relaxed);
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    alive.fetch_sub(1, Relaxed);
                    i % 256
                })?,
            );
        }
        let mut sum = 0i64;
        for c in children {
            sum += i64::from(c.await?.exited().ok_or("a job did not exit")?);
        }
        Ok::<_, Failure>(sum)
    })?;
    let elapsed = start.elapsed();
    let peak = peak.load(Relaxed);
    ensure!(
        (1..=TASKS as usize).contains(&peak),
        "peak of {peak} jobs alive at once"
    );

    let expected: i64 = (0..TASKS).map(|i| i64::from(i % 256)).sum();
    ensure!(sum == expected, "sum of exit codes {sum}, want {expected}");
    ensure!(rt.ps().len() == 1, "all 10,000 were reaped");
    ensure!(
        rt.init().pid_ns().nr_allocated() == 1,
        "all pids were freed"
    );

    Ok(format!(
        "{TASKS} async tasks spawned, awaited and reaped in {} ms (up to {peak} jobs alive at once)",
        elapsed.as_millis()
    ))
}

fn main() {
    uproc_examples::main(check);
}
