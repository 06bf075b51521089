//! Running N workers for a fixed time: OS threads or tokio tasks.
//!
//! Both runners follow will-it-scale's shape: every worker is set up first, a barrier
//! releases them together, the main thread sleeps for the run's length, raises a stop
//! flag, and each worker finishes the life cycle it is in, so every counted operation is
//! a complete one (the lock counts divide exactly). The stop flag is read with a relaxed
//! load once per operation; it stays in every core's cache until it is written.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// What one run produced.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Complete operations, all workers together.
    pub ops: u64,
    /// From the release of the workers to the end of the last one.
    pub elapsed: Duration,
    /// The first failure a worker met, if any (that worker stopped there).
    pub failure: Option<String>,
}

/// Runs `workers` OS threads, each calling its own operation (made by `make(i)`) in a
/// loop for `seconds`.
pub fn run_threads<F>(workers: usize, seconds: f64, mut make: impl FnMut(usize) -> F) -> Outcome
where
    F: FnMut() -> Result<(), String> + Send + 'static,
{
    let stop = Arc::new(AtomicBool::new(false));
    let barrier = Arc::new(Barrier::new(workers + 1));
    let handles: Vec<_> = (0..workers)
        .map(|i| {
            let (mut op, stop, barrier) = (make(i), Arc::clone(&stop), Arc::clone(&barrier));
            std::thread::Builder::new()
                .name(format!("worker-{i}"))
                .spawn(move || {
                    barrier.wait();
                    crate::worker_loop!(sync stop, op())
                })
                .expect("spawning a benchmark worker thread")
        })
        .collect();
    barrier.wait();
    finish(seconds, &stop, handles.into_iter().map(|h| h.join().ok()))
}

/// Lets the just released workers run `secs`, raises `stop`, and sums the complete
/// operations `ends` yields (None: a worker panicked); the first failure is the run's.
fn finish(secs: f64, stop: &AtomicBool, ends: impl Iterator<Item = Option<Worker>>) -> Outcome {
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    let (mut ops, mut failure) = (0, None);
    for r in ends {
        let (n, f) = r.unwrap_or((0, Some("a worker panicked".to_string())));
        ops += n;
        failure = failure.or(f);
    }
    let elapsed = start.elapsed();
    Outcome {
        ops,
        elapsed,
        failure,
    }
}

/// What one worker returns: its complete operations and its failure, if any.
type Worker = (u64, Option<String>);

/// Runs `workers` tokio tasks on a multi-thread runtime of its own with `workers` worker
/// threads, shut down after the run. `make(i, stop)` builds worker `i`'s future, which
/// must loop until `stop` is raised (see [`worker_loop!`](crate::worker_loop)) and
/// return its complete operations and first failure.
pub fn run_tokio<Fut>(
    workers: usize,
    seconds: f64,
    mut make: impl FnMut(usize, Arc<AtomicBool>) -> Fut,
) -> Outcome
where
    Fut: Future<Output = Worker> + Send + 'static,
{
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("tokio-worker")
        .build()
        .expect("building a tokio runtime");
    let stop = Arc::new(AtomicBool::new(false));
    let barrier = Arc::new(tokio::sync::Barrier::new(workers + 1));
    let handles: Vec<_> = (0..workers)
        .map(|i| {
            let (fut, barrier) = (make(i, Arc::clone(&stop)), Arc::clone(&barrier));
            rt.spawn(async move {
                barrier.wait().await;
                fut.await
            })
        })
        .collect();
    rt.block_on(barrier.wait());
    let outcome = finish(
        seconds,
        &stop,
        handles.into_iter().map(|h| rt.block_on(h).ok()),
    );
    rt.shutdown_background();
    outcome
}

/// The body of an async worker: `$op` (an expression yielding a future of
/// `Result<(), String>`) awaited in a loop until `$stop` (an `Arc<AtomicBool>`) is
/// raised; evaluates to `(complete ops, first failure)`. `sync` before `$stop`: `$op`
/// is called, not awaited (the thread workers' loop).
#[macro_export]
macro_rules! worker_loop {
    ($stop:expr, $op:expr) => {
        $crate::worker_loop!(sync $stop, $op.await)
    };
    (sync $stop:expr, $op:expr) => {{
        let mut n = 0u64;
        let mut failure = None;
        while !$stop.load(::std::sync::atomic::Ordering::Relaxed) {
            if let Err(e) = $op {
                failure = Some(e);
                break;
            }
            n += 1;
        }
        (n, failure)
    }};
}
