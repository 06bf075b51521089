//! # 11 — the same body on any executor
//!
//! uproc does not schedule: an executor runs the bodies. The *same* body runs here on
//! four of them, each for 1,000 tasks, timed side by side:
//!
//! - OS threads (`ThreadExecutor`, the default: one thread per task, as Linux does),
//! - may stackful coroutines (`uproc_may::MayExecutor`),
//! - tokio tasks (`TokioExecutor` + `spawn_async`),
//! - smol tasks (`SmolExecutor` + `spawn_async`).
//!
//! The body is a plain function of the task's context; the async executors wrap it
//! in an `async` block. Each run waits for its tasks with a `ChildSet`: blocking
//! `wait_next` for threads and coroutines, `join_next().await` for tokio and smol. Your
//! own runtime plugs in the same way: implement `uproc::Executor` (see its docs).

use std::sync::Arc;
use std::time::{Duration, Instant};
use uproc::smol::SmolExecutor;
use uproc::tokio::TokioExecutor;
use uproc::{ChildSet, Errno, Runtime, Spawn, TaskCx, ThreadExecutor};
use uproc_examples::{Failure, Lesson, ensure};
use uproc_may::MayExecutor;

const TASKS: i32 = 1_000;

/// The body every executor runs: checks `current()` and exits with its pid mod 256.
fn body(cx: &TaskCx) -> i32 {
    match uproc::current() {
        Some(me) if me.task() == cx.task() => cx.pid() % 256,
        _ => 256 + 1, // exit codes are 8 bits: seen as 1, which the sum check catches
    }
}

/// Sums the exit codes of a set's members as they are reaped; checks every pid's
/// code matches the body's rule.
fn record(
    pid: i32,
    status: Result<uproc::WaitStatus, Errno>,
    sum: &mut i64,
) -> Result<(), Failure> {
    let code = status?.exited().ok_or("a task was killed")?;
    ensure!(code == pid % 256, "task {pid} exited {code}");
    *sum += i64::from(code);
    Ok(())
}

/// Spawns TASKS synchronous bodies on `rt` and waits for them (blocking).
fn run_sync(rt: &Runtime) -> Result<i64, Failure> {
    let mut set = ChildSet::new();
    for _ in 0..TASKS {
        set.spawn(rt, Spawn::new().name("job"), body)?;
    }
    let mut sum = 0;
    while let Some((pid, status)) = set.wait_next() {
        record(pid, status, &mut sum)?;
    }
    Ok(sum)
}

/// Spawns TASKS async bodies on `rt` and awaits them.
async fn run_async(rt: &Runtime) -> Result<i64, Failure> {
    let mut set = ChildSet::new();
    for _ in 0..TASKS {
        set.spawn_async(rt, Spawn::new().name("job"), |cx| async move { body(&cx) })?;
    }
    let mut sum = 0;
    while let Some((pid, status)) = set.join_next().await {
        record(pid, status, &mut sum)?;
    }
    Ok(sum)
}

/// One round's sum of exit codes and time, or why it failed.
type Round = Result<(i64, Duration), Failure>;

/// Runs one executor's round: a fresh runtime (so every run allocates the same pids),
/// the run, the leak checks, and the time.
fn timed(rt: Runtime, run: impl FnOnce(&Runtime) -> Result<i64, Failure>) -> Round {
    let start = Instant::now();
    let sum = run(&rt)?;
    let elapsed = start.elapsed();
    ensure!(rt.ps().len() == 1, "every task reaped");
    ensure!(rt.init().pid_ns().nr_allocated() == 1, "every pid freed");
    Ok((sum, elapsed))
}

/// Runs the example, checks what it observes, and returns a one-line summary.
pub fn check() -> Lesson {
    let tokio_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()?;
    let smol_ex = Arc::new(smol::Executor::new());
    may::config().set_workers(2); // no effect if may already started

    let rounds: [(&str, Round); 4] = [
        (
            "threads",
            timed(
                Runtime::builder().executor(ThreadExecutor::new()).build()?,
                run_sync,
            ),
        ),
        (
            "may",
            timed(
                Runtime::builder().executor(MayExecutor::new()).build()?,
                run_sync,
            ),
        ),
        (
            "tokio",
            timed(
                Runtime::builder()
                    .executor(TokioExecutor::new(tokio_rt.handle().clone()))
                    .build()?,
                |rt| tokio_rt.block_on(run_async(rt)),
            ),
        ),
        (
            "smol",
            timed(
                Runtime::builder()
                    .executor(SmolExecutor::new(&smol_ex))
                    .build()?,
                |rt| smol::block_on(smol_ex.run(run_async(rt))),
            ),
        ),
    ];

    // Every round forks the same pids 2..=TASKS+1 in a fresh runtime: same sum.
    let expected: i64 = (2..TASKS + 2).map(|p| i64::from(p % 256)).sum();
    let mut shown = Vec::new();
    for (name, round) in rounds {
        let (sum, elapsed) = round?;
        ensure!(
            sum == expected,
            "{name}: sum of exit codes {sum}, want {expected}"
        );
        shown.push(format!("{name} {} ms", elapsed.as_millis()));
    }
    Ok(format!(
        "the same body as {TASKS} tasks on each executor: {}",
        shown.join(", ")
    ))
}

fn main() {
    uproc_examples::main(check);
}
