//! The `threadspawn` harness: uproc's fork/exit/reap life cycle measured under each lock
//! profile, beside its peers, in one process and one run.
//!
//! # What this package owns
//!
//! Nothing that uproc depends on: it consumes the `uproc` facade compiled with the
//! `lockstat` feature (every named global lock counts its acquisitions and samples its
//! hold times). [`args`] is the command line; [`run`] runs N workers (threads or tokio
//! tasks) for a fixed time, every counted operation complete; [`load`] sets up one
//! runtime per run with one parent per worker (as will-it-scale uses one process per
//! worker), runs the three life cycles and holds the expected lock counts
//! ([`load::expected_locks`]); [`peers`] are pthread, std::thread and tokio; [`report`]
//! turns runs into medians, ratios, the lock budget (ceilings, binding lock), tables and
//! JSON lines; [`model`] predicts ops/s at 1..64 workers; [`plot`] draws the SVG chart;
//! [`threadspawn`] orders the runs and decides the exit status; [`memory`] measures
//! bytes per live task.
//!
//! A run's [`load::Setup`] holds the runtime, the namespace holders and the parents;
//! after the workers are joined it exits and reaps every task it created, so runs never
//! share a runtime, pid numbers, or allocator-warm objects of another profile.
//!
//! The lock columns are `lock_stats()` deltas over the measured part of a run divided by
//! its life cycles. For the bookkeeping-only body they are deterministic, and the binary
//! exits non-zero unless they agree with [`load::expected_locks`] (exact counts for the
//! `Linux*` profiles, a bound for amortised ones). Timings are never asserted.
//!
//! # References
//! will-it-scale's `tests/threadspawn1.c`; `copy_process`, `do_exit`, `release_task`
//! in the kernel.

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

/// `v` without repeats, in first-seen order.
pub fn dedup<T: PartialEq>(v: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    v.into_iter().for_each(|x| {
        if !out.contains(&x) {
            out.push(x)
        }
    });
    out
}

/// `map_err`'s argument for a uproc call: its `Errno` as `what: error`.
pub fn errno(what: &str) -> impl FnOnce(uproc::Errno) -> String + '_ {
    move |e| failure(what, &e)
}

/// A failed call's message, out of line: the measured loops carry no formatting code
/// between their instructions.
#[cold]
#[inline(never)]
pub fn failure(what: &str, e: &dyn std::fmt::Display) -> String {
    format!("{what}: {e}")
}
