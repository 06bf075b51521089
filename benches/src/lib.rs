//! The `threadspawn` harness: uproc's fork/exit/reap life cycle measured under each lock
//! profile, beside its peers, in one process and one run.
//!
//! # What this package owns
//!
//! Nothing that uproc depends on: it is a consumer of the `uproc` facade (compiled with
//! the `lockstat` feature, so every named global lock counts its acquisitions) and of
//! `uproc-pidns` for the pid micro-benchmarks. The pieces:
//!
//! - [`args`]: the command line of `threadspawn` (clap derive).
//! - [`run`]: N workers (OS threads or tokio tasks) looping one operation for a fixed
//!   time, released together by a barrier, stopped by a flag; every counted operation
//!   is complete.
//! - [`load`]: one uproc runtime per run with one parent task per worker (as
//!   will-it-scale uses one process per worker), optionally in a nested pid namespace
//!   and a pids-limited cgroup; the three life cycles (bookkeeping only, thread body,
//!   tokio body); the lock counts Linux takes per life cycle ([`load::expected_locks`]).
//! - [`peers`]: `pthread_create`+`pthread_join` (will-it-scale's `threadspawn1`, the
//!   kernel's own cost), `std::thread` spawn+join, tokio spawn+await.
//! - [`report`]: medians, scaling against one worker, ratios between subjects, the lock
//!   budget (sampled hold times per life cycle, ceilings, binding lock), the tables and
//!   JSON lines (serde_json).
//! - [`model`]: exact Mean Value Analysis of a life cycle as a closed queueing network,
//!   which predicts ops/s at 1..64 workers from the parallel work and lock holds.
//! - [`plot`]: the SVG chart of `--plot` (plotters).
//! - [`threadspawn`]: the order of runs and the checks that decide the exit status.
//! - [`memory`]: bytes per live task (RSS delta over a million live tasks).
//!
//! # Who holds what
//!
//! A run's [`load::Setup`] holds the `uproc::Runtime`, the namespace holders and the
//! parents; each worker thread holds clones of its own parent and of the runtime handle.
//! After the workers are joined the setup exits and reaps every task it created, so
//! consecutive runs never share a runtime, pid numbers, or allocator-warm task objects
//! of another profile.
//!
//! # The lock counts are a correctness check, not a timing
//!
//! The lock columns are `lock_stats()` deltas over the measured part of a run divided by
//! its life cycles. For the bookkeeping-only body they are deterministic, and the binary
//! exits non-zero unless they agree with [`load::expected_locks`] (exact counts for the
//! `Linux*` profiles, a bound for amortised ones). Timings are never asserted anywhere.
//!
//! # References
//! will-it-scale's `tests/threadspawn1.c`; `copy_process`, `do_exit`, `release_task`
//! in the kernel; docs/linux-semantics.md section 6 for the published figures.

pub mod args;
pub mod load;
pub mod memory;
pub mod model;
pub mod peers;
pub mod plot;
pub mod report;
pub mod run;
pub mod threadspawn;

/// Installs a `tracing` subscriber on stderr filtered by `RUST_LOG` (default `warn`), so
/// uproc's own spans and events and the harness's per-run events can be seen.
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
