//! The `threadspawn` driver: which runs, in which order, and the checks that decide the
//! exit status.
//!
//! Runs are interleaved (repeat-major, then worker count, then subject) so that a slow
//! spell of the machine lands on every subject alike instead of on one row.

use crate::args::{Body, Options};
use crate::load::{
    ForkShape, LOCK_NAMES, LockCounts, SCALABLE_REFILL_SLACK, expected_locks, measure,
};
use crate::peers;
use crate::report::{Report, Row, Subject};
use std::time::{SystemTime, UNIX_EPOCH};

/// What went wrong in an invocation that measured: failed life cycles and lock counts
/// other than the expected ones.
#[derive(Clone, Debug, Default)]
pub struct Problems(pub Vec<String>);

/// The subjects of an invocation, in table order: each body under each profile, then
/// the peers.
pub fn subjects(o: &Options) -> Vec<Subject> {
    let mut v = Vec::new();
    for &body in &o.bodies {
        for &profile in &o.profiles {
            v.push(Subject::Uproc { profile, body });
        }
    }
    if o.peers {
        v.extend([Subject::Pthread, Subject::StdThread, Subject::Tokio]);
    }
    v
}

/// Checks one bookkeeping-only run's lock deltas against [`expected_locks`] exactly.
pub fn check_locks(
    subject: Subject,
    levels: u32,
    ops: u64,
    locks: &LockCounts,
) -> Result<(), String> {
    let Subject::Uproc {
        profile,
        body: Body::None,
    } = subject
    else {
        return Ok(());
    };
    let (pm, tl, css) = expected_locks(profile, levels);
    let want = [pm, tl, css];
    let mut bad = Vec::new();
    for (i, name) in LOCK_NAMES.iter().enumerate() {
        let got = locks.0[i].0;
        let bad_count = if profile == uproc_abi::Profile::Scalable {
            // An upper bound: refills are amortised (a few first batches per worker).
            got as f64 > (want[i] as f64 + SCALABLE_REFILL_SLACK) * ops as f64 + 16.0
        } else {
            got != want[i] * ops
        };
        if bad_count {
            bad.push(format!(
                "{name}: {got} acquisitions for {ops} life cycles ({:.3} each, expected {})",
                if ops > 0 {
                    got as f64 / ops as f64
                } else {
                    f64::NAN
                },
                want[i]
            ));
        }
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} levels={levels}: lock counts differ from Linux's: {}",
            subject.label(),
            bad.join("; ")
        ))
    }
}

/// Runs every measurement `o` asks for, handing a progress line per run to `progress`
/// (the binary prints them on stderr).
pub fn measure_all(o: &Options, progress: &mut dyn FnMut(&str)) -> (Report, Problems) {
    let started_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let subjects = subjects(o);
    let shape = ForkShape {
        levels: o.levels,
        pidfd: o.pidfd,
        cgroup: o.cgroup,
    };
    let mut rows: Vec<Row> = subjects
        .iter()
        .flat_map(|&subject| {
            o.workers.iter().map(move |&workers| Row {
                subject,
                workers,
                rates: Vec::new(),
                ops: 0,
                locks: matches!(subject, Subject::Uproc { .. }).then(LockCounts::default),
            })
        })
        .collect();
    let mut problems = Problems::default();
    let total = o.repeats * o.workers.len() * subjects.len();
    let mut k = 0;
    for rep in 0..o.repeats {
        for &workers in &o.workers {
            for &subject in &subjects {
                k += 1;
                let (outcome, locks) = match subject {
                    Subject::Uproc { profile, body } => {
                        match measure(profile, body, shape, workers, o.seconds) {
                            Ok(u) => (u.outcome, Some(u.locks)),
                            Err(e) => {
                                problems
                                    .0
                                    .push(format!("{} workers={workers}: {e}", subject.label()));
                                progress(&format!(
                                    "threadspawn: [{k}/{total}] {}: {e}",
                                    subject.label()
                                ));
                                continue;
                            }
                        }
                    }
                    Subject::Pthread => (peers::pthread(workers, o.seconds), None),
                    Subject::StdThread => (peers::std_thread(workers, o.seconds), None),
                    Subject::Tokio => (peers::tokio(workers, o.seconds), None),
                };
                let rate = outcome.ops_per_sec();
                progress(&format!(
                    "threadspawn: [{k}/{total}] {} workers={workers} repeat={}/{}: {rate:.0} ops/s ({} ops in {:.3} s){}",
                    subject.label(),
                    rep + 1,
                    o.repeats,
                    outcome.ops,
                    outcome.elapsed.as_secs_f64(),
                    outcome
                        .failure
                        .as_deref()
                        .map_or(String::new(), |f| format!(" FAILED: {f}"))
                ));
                if let Some(f) = &outcome.failure {
                    problems
                        .0
                        .push(format!("{} workers={workers}: {f}", subject.label()));
                }
                if let Some(l) = &locks {
                    if outcome.failure.is_none() {
                        if let Err(e) = check_locks(subject, o.levels, outcome.ops, l) {
                            problems.0.push(format!("workers={workers}: {e}"));
                        }
                    }
                }
                let row = rows
                    .iter_mut()
                    .find(|r| r.subject == subject && r.workers == workers)
                    .expect("a row for every subject and worker count");
                row.rates.push(rate);
                row.ops += outcome.ops;
                if let (Some(acc), Some(l)) = (row.locks.as_mut(), locks) {
                    acc.add(&l);
                }
            }
        }
    }
    rows.retain(|r| !r.rates.is_empty());
    (
        Report {
            options: o.clone(),
            rows,
            started_unix,
        },
        problems,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use uproc_abi::Profile;

    #[test]
    fn lock_check_is_exact_and_only_for_bookkeeping() {
        let s = Subject::Uproc {
            profile: Profile::Linux70,
            body: Body::None,
        };
        let good = LockCounts([(20, 0), (30, 7), (30, 0)]);
        assert!(check_locks(s, 0, 10, &good).is_ok());
        let bad = LockCounts([(21, 0), (30, 0), (30, 0)]);
        assert!(
            check_locks(s, 0, 10, &bad)
                .unwrap_err()
                .contains("pidmap_lock")
        );
        let old = Subject::Uproc {
            profile: Profile::Linux618,
            body: Body::None,
        };
        assert!(check_locks(old, 0, 10, &good).is_err());
        let old_ok = LockCounts([(50, 0), (30, 0), (30, 0)]);
        assert!(check_locks(old, 2, 10, &old_ok).is_ok());
        let thread = Subject::Uproc {
            profile: Profile::Linux70,
            body: Body::Thread,
        };
        assert!(check_locks(thread, 0, 10, &bad).is_ok());
    }
}
