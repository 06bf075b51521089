//! The `threadspawn` driver: which runs, in which order, and the checks that decide the
//! exit status.
//!
//! Runs are interleaved (repeat-major, then worker count, then subject) so that a slow
//! spell of the machine lands on every subject alike instead of on one row.

use crate::args::{Body, Options};
use crate::load::{ForkShape, LOCK_NAMES, Locks, expected_locks, measure};
use crate::peers;
use crate::report::{Report, Row, Subject};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// What went wrong in an invocation that measured: failed life cycles and lock counts
/// other than the expected ones.
#[derive(Clone, Debug, Default)]
pub struct Problems(pub Vec<String>);

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
    let bad: Vec<String> = (LOCK_NAMES.iter().zip(expected_locks(profile, levels)))
        .zip(&locks.0)
        .filter(|((_, want), got)| !want.admits(got.write, ops))
        .map(|((name, want), got)| {
            let each = got.write as f64 / ops as f64;
            format!(
                "{name}: {} acquisitions for {ops} life cycles ({each:.3} each, expected {want})",
                got.write
            )
        })
        .collect();
    if bad.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{} levels={levels}: lock counts differ from the expected: {}",
        subject.label(),
        bad.join("; ")
    ))
}

/// The cost of one `Instant::now()` (ns): the median gap between back-to-back reads,
/// which a sampled hold of an empty critical section also shows.
pub fn clock_ns() -> f64 {
    let gaps: Vec<f64> = (0..20_001)
        .map(|_| {
            let t = Instant::now();
            t.elapsed().as_nanos() as f64
        })
        .collect();
    crate::report::median(&gaps)
}

/// A bar on stderr when the whole invocation takes more than a few seconds (and stderr
/// is a terminal); hidden otherwise.
fn progress_bar(runs: usize, seconds: f64) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(Some(runs as u64), ProgressDrawTarget::stderr());
    if runs as f64 * seconds < 3.0 {
        pb.set_draw_target(ProgressDrawTarget::hidden());
    }
    let style =
        ProgressStyle::with_template("{bar:30} {pos}/{len} runs, {elapsed}/~{duration} {msg}")
            .expect("a valid template");
    pb.set_style(style);
    pb
}

/// One run of `subject`: its outcome and (uproc) lock deltas.
fn run_one(
    subject: Subject,
    o: &Options,
    workers: usize,
) -> Result<(crate::run::Outcome, Option<Locks>), String> {
    let shape = ForkShape {
        levels: o.levels,
        pidfd: o.pidfd,
        cgroup: o.cgroup,
    };
    Ok(match subject {
        Subject::Uproc { profile, body } => {
            let u = measure(profile, body, shape, workers, o.seconds)?;
            (u.outcome, Some(u.locks))
        }
        Subject::Pthread => (peers::pthread(workers, o.seconds), None),
        Subject::StdThread => (peers::std_thread(workers, o.seconds), None),
        Subject::Tokio => (peers::tokio(workers, o.seconds), None),
    })
}

/// Runs every measurement `o` asks for, repeat-major so a slow spell of the machine
/// lands on every subject alike; each run is a `tracing` event and a progress bar step.
pub fn measure_all(o: &Options) -> (Report, Problems) {
    let started_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    uproc_abi::lockstat::set_sample_one_in(o.sample_one_in);
    let clock_ns = clock_ns();
    let (subjects, workers) = (subjects(o), o.worker_list());
    let mut rows: Vec<Row> = (subjects.iter())
        .flat_map(|&subject| {
            workers.iter().map(move |&workers| Row {
                subject,
                workers,
                rates: Vec::new(),
                ops: 0,
                locks: matches!(subject, Subject::Uproc { .. }).then(Locks::default),
            })
        })
        .collect();
    let mut problems = Problems::default();
    let pb = progress_bar(usize::from(o.repeats) * rows.len(), o.seconds);
    for rep in 1..=o.repeats {
        for &w in &workers {
            for &subject in &subjects {
                let label = format!("{} workers={w} repeat={rep}/{}", subject.label(), o.repeats);
                pb.set_message(label.clone());
                let (outcome, locks) = match run_one(subject, o, w) {
                    Ok(r) => r,
                    Err(e) => {
                        tracing::error!("{label}: {e}");
                        problems.0.push(format!("{label}: {e}"));
                        pb.inc(1);
                        continue;
                    }
                };
                let rate = outcome.ops_per_sec();
                tracing::info!(
                    ops = outcome.ops,
                    secs = outcome.elapsed.as_secs_f64(),
                    "{label}: {rate:.0} ops/s"
                );
                if let Some(f) = &outcome.failure {
                    tracing::error!("{label}: FAILED: {f}");
                    problems.0.push(format!("{label}: {f}"));
                } else if let Some(Err(e)) = locks
                    .as_ref()
                    .map(|l| check_locks(subject, o.levels, outcome.ops, l))
                {
                    problems.0.push(format!("workers={w}: {e}"));
                }
                let row = (rows.iter_mut())
                    .find(|r| r.subject == subject && r.workers == w)
                    .expect("a row for every subject and worker count");
                row.rates.push(rate);
                row.ops += outcome.ops;
                if let (Some(acc), Some(l)) = (row.locks.as_mut(), locks) {
                    acc.add(&l);
                }
                pb.inc(1);
            }
        }
    }
    pb.finish_and_clear();
    rows.retain(|r| !r.rates.is_empty());
    (
        Report {
            options: o.clone(),
            rows,
            started_unix,
            clock_ns,
        },
        problems,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use uproc_abi::Profile;

    fn locks(writes: [u64; 3]) -> Locks {
        let mut l = Locks::default();
        for (s, w) in l.0.iter_mut().zip(writes) {
            s.write = w;
            s.read = 7;
        }
        l
    }

    #[test]
    fn lock_check_is_exact_and_only_for_bookkeeping() {
        let s = |profile, body| Subject::Uproc { profile, body };
        let good = locks([20, 30, 30]);
        assert!(check_locks(s(Profile::Linux70, Body::None), 0, 10, &good).is_ok());
        let bad = locks([21, 30, 30]);
        let e = check_locks(s(Profile::Linux70, Body::None), 0, 10, &bad).unwrap_err();
        assert!(e.contains("pidmap_lock") && e.contains("expected 2"), "{e}");
        assert!(check_locks(s(Profile::Linux618, Body::None), 0, 10, &good).is_err());
        assert!(
            check_locks(
                s(Profile::Linux618, Body::None),
                2,
                10,
                &locks([50, 30, 30])
            )
            .is_ok()
        );
        assert!(check_locks(s(Profile::Linux70, Body::Thread), 0, 10, &bad).is_ok());
        assert!(check_locks(Subject::Pthread, 0, 10, &bad).is_ok());
    }

    #[test]
    fn a_bound_admits_up_to_its_value() {
        use crate::load::Expected::{AtMost, Exactly};
        assert!(AtMost(0.05).admits(0, 100) && AtMost(0.05).admits(5, 100));
        assert!(!AtMost(0.05).admits(6, 100));
        assert!(Exactly(2).admits(20, 10) && !Exactly(2).admits(19, 10));
        assert_eq!(format!("{} {}", AtMost(0.05), Exactly(3)), "<= 0.05 3");
    }
}
