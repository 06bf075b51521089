//! The `threadspawn` driver: which runs, in which order, and the checks that decide the
//! exit status.
//!
//! Runs are interleaved (repeat-major, then worker count, then subject) so that a slow
//! spell of the machine lands on every subject alike instead of on one row.

use crate::args::{Body, Options};
use crate::load::{Locks, expected_locks, measure};
use crate::peers;
use crate::report::{Report, Row, Subject};
use crate::run::Outcome;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The subjects of an invocation, in table order: each body under each profile, then
/// the peers.
pub fn subjects(o: &Options) -> Vec<Subject> {
    let mut v = Vec::new();
    for body in o.body_list() {
        for profile in o.profile_list() {
            v.push(Subject::Uproc { profile, body });
        }
    }
    if o.peers {
        v.extend([Subject::Pthread, Subject::StdThread, Subject::Tokio]);
    }
    v
}

/// Checks one bookkeeping-only run's exclusive lock counts against [`expected_locks`].
pub fn check_locks(subject: Subject, levels: u32, ops: u64, locks: &Locks) -> Result<(), String> {
    let Subject::Uproc {
        profile,
        body: Body::None,
    } = subject
    else {
        return Ok(());
    };
    // `locks` starts with the locks of `expected_locks`, in that order.
    let checked = expected_locks(profile, levels).into_iter().zip(&locks.0);
    let mut bad = Vec::new();
    for (want, got) in checked.filter(|(want, got)| !want.admits(got.write, ops)) {
        let (name, n, each) = (got.name, got.write, got.write as f64 / ops as f64);
        bad.push(format!(
            "{name}: {n} acquisitions for {ops} life cycles ({each:.3} each, expected {want:?})"
        ));
    }
    if bad.is_empty() {
        return Ok(());
    }
    let (who, bad) = (subject.label(), bad.join("; "));
    Err(format!(
        "{who} levels={levels}: lock counts differ from the expected: {bad}"
    ))
}

/// The cost of one `Instant::now()` (ns): the median gap between back-to-back reads,
/// which a sampled hold of an empty critical section also shows.
pub fn clock_ns() -> f64 {
    let gap = |_| Instant::now().elapsed().as_nanos() as f64;
    crate::report::median(&(0..20_001).map(gap).collect::<Vec<_>>())
}

/// A bar on stderr when the whole invocation takes more than a few seconds (and stderr
/// is a terminal); hidden otherwise.
fn progress_bar(runs: usize, seconds: f64) -> ProgressBar {
    let pb = ProgressBar::new(runs as u64); // drawn on stderr
    if runs as f64 * seconds < 3.0 {
        pb.set_draw_target(ProgressDrawTarget::hidden());
    }
    let style = ProgressStyle::with_template("{bar:30} {pos}/{len} runs, {elapsed} {msg}");
    pb.with_style(style.expect("a valid template"))
}

/// One run of `subject`: its outcome and (uproc) lock deltas.
fn run_one(subject: Subject, o: &Options, w: usize) -> Result<(Outcome, Option<Locks>), String> {
    let secs = o.seconds;
    Ok(match subject {
        Subject::Uproc { profile, body } => {
            let (outcome, locks) = measure(profile, body, o.shape, w, secs)?;
            (outcome, Some(locks))
        }
        Subject::Pthread => (peers::pthread(w, secs), None),
        Subject::StdThread => (peers::std_thread(w, secs), None),
        Subject::Tokio => (peers::tokio(w, secs), None),
    })
}

/// Runs every measurement `o` asks for, repeat-major so a slow spell of the machine
/// lands on every subject alike; each run is a `tracing` event and a progress bar step.
/// Returns the report and what went wrong (failed life cycles, unexpected lock counts).
pub fn measure_all(o: &Options) -> (Report, Vec<String>) {
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH);
    let started_unix = since_epoch.map_or(0, |d| d.as_secs());
    uproc_abi::lockstat::set_sample_one_in(o.sample_one_in);
    let clock_ns = clock_ns();
    let (subjects, workers) = (subjects(o), o.worker_list());
    let row = |subject, workers| {
        let locks = matches!(subject, Subject::Uproc { .. }).then(Locks::default);
        Row {
            subject,
            workers,
            rates: Vec::new(),
            ops: 0,
            locks,
        }
    };
    // In the order of the runs, sorted subject-major at the end.
    let mut rows: Vec<Row> = (workers.iter())
        .flat_map(|&w| subjects.iter().map(move |&s| row(s, w)))
        .collect();
    let mut problems = Vec::new();
    let pb = progress_bar(usize::from(o.repeats) * rows.len(), o.seconds);
    for rep in 1..=o.repeats {
        for r in rows.iter_mut() {
            let (subject, w) = (r.subject, r.workers);
            let label = format!("{} workers={w} repeat={rep}/{}", subject.label(), o.repeats);
            pb.set_message(label.clone());
            pb.inc(1);
            let (outcome, locks) = match run_one(subject, o, w) {
                Ok(r) => r,
                Err(e) => {
                    tracing::error!("{label}: {e}");
                    problems.push(format!("{label}: {e}"));
                    continue;
                }
            };
            let (ops, secs) = (outcome.ops, outcome.elapsed.as_secs_f64());
            let rate = ops as f64 / secs.max(1e-9); // all workers together
            tracing::info!(ops, secs, "{label}: {rate:.0} ops/s");
            let check = |l| check_locks(subject, o.shape.levels, ops, l);
            if let Some(f) = &outcome.failure {
                tracing::error!("{label}: FAILED: {f}");
                problems.push(format!("{label}: {f}"));
            } else if let Some(Err(e)) = locks.as_ref().map(check) {
                problems.push(format!("workers={w}: {e}"));
            }
            r.rates.push(rate);
            r.ops += ops;
            if let (Some(acc), Some(l)) = (r.locks.as_mut(), locks) {
                acc.add(&l.0);
            }
        }
    }
    pb.finish_and_clear();
    rows.retain(|r| !r.rates.is_empty());
    rows.sort_by_key(|r| subjects.iter().position(|s| *s == r.subject));
    let options = o.clone();
    let report = Report {
        options,
        rows,
        started_unix,
        clock_ns,
    };
    (report, problems)
}
