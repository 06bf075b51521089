//! Results of a `threadspawn` invocation and their forms: the tables (throughput, lock
//! budget, ceilings, prediction) and JSON lines.
//!
//! Every figure is a median over repeats; ratios are taken between medians measured in
//! the same invocation, seconds apart, because absolute times on shared machines are
//! noise. Lock times are sampled (see `uproc_abi::lockstat`) and corrected by the cost
//! of the clock read itself, measured back to back at start-up.

use crate::args::{Body, Options};
use crate::load::{LOCK_NAMES, Locks};
use crate::model::{self, Demands};
use serde::Serialize;
use serde_json::json;
use std::fmt::Write as _;
use uproc_abi::Profile;

/// The kernel's published threadspawn1 figures on 20 processes: Linux 6.18 (two
/// `pidmap_lock` acquisitions per `alloc_pid`) and the range reported for 7.0 (one).
pub const KERNEL_20: (f64, f64, f64) = (465e3, 510e3, 560e3);

/// The worker count of the kernel's figures, where the prediction is compared with them.
pub const KERNEL_WORKERS: usize = 20;

/// Sampled holds at or above this (ns) are left out of the budget and counted as
/// `long_holds`: the kernel holds these locks with preemption off, so a userspace holder
/// descheduled by the machine's other load is not the lock's work.
pub const LONG_HOLD_NS: u64 = 10_000;

/// What one table row measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subject {
    /// uproc's life cycle under a profile, with a body kind.
    Uproc {
        /// The lock profile.
        profile: Profile,
        /// What runs between fork and exit.
        body: Body,
    },
    /// The kernel: `pthread_create` + `pthread_join`.
    Pthread,
    /// `std::thread::spawn` + `join`.
    StdThread,
    /// `tokio::spawn` + `.await`.
    Tokio,
}

impl Subject {
    /// The label in the tables' first column.
    pub fn label(&self) -> String {
        match self {
            Subject::Uproc { profile, body } => format!("uproc {profile} body={}", body.name()),
            Subject::Pthread => "pthread create+join".into(),
            Subject::StdThread => "std::thread spawn+join".into(),
            Subject::Tokio => "tokio spawn+await".into(),
        }
    }

    fn json(&self) -> serde_json::Value {
        match self {
            Subject::Uproc { profile, body } => {
                json!({"subject": "uproc", "profile": profile.name(), "body": body})
            }
            Subject::Pthread => json!({"subject": "pthread"}),
            Subject::StdThread => json!({"subject": "std_thread"}),
            Subject::Tokio => json!({"subject": "tokio"}),
        }
    }
}

/// All runs of one subject at one worker count.
#[derive(Clone, Debug)]
pub struct Row {
    /// What was measured.
    pub subject: Subject,
    /// Worker count.
    pub workers: usize,
    /// ops/s of each repeat.
    pub rates: Vec<f64>,
    /// Complete life cycles over all repeats.
    pub ops: u64,
    /// Lock counts and sampled times over all repeats (uproc rows only).
    pub locks: Option<Locks>,
}

/// One lock's budget in one row: per life cycle, and per sampled acquisition.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LockBudget {
    /// Exclusive acquisitions per life cycle.
    pub write: f64,
    /// Shared acquisitions per life cycle.
    pub read: f64,
    /// Sampled exclusive acquisitions the times come from.
    pub samples: u64,
    /// Sampled holds of [`LONG_HOLD_NS`] or more, left out of `hold_ns_mean`.
    pub long_holds: u64,
    /// Mean (below [`LONG_HOLD_NS`]), median and 99th percentile hold per acquisition,
    /// ns, one clock read taken off.
    pub hold_ns_mean: f64,
    /// See `hold_ns_mean`.
    pub hold_ns_p50: f64,
    /// See `hold_ns_mean`.
    pub hold_ns_p99: f64,
    /// `hold_ns_mean x write`: ns this lock is held per life cycle.
    pub hold_ns_per_cycle: f64,
    /// Mean wait x write: ns spent waiting for it per life cycle.
    pub wait_ns_per_cycle: f64,
    /// `1 / hold_ns_per_cycle`, ops/s: the most any number of cores can do.
    pub ceiling_ops_per_s: f64,
}

impl Row {
    /// Median ops/s over the repeats (mean of the middle two for an even count).
    pub fn median(&self) -> f64 {
        median(&self.rates)
    }

    /// Slowest and fastest repeat.
    pub fn min_max(&self) -> (f64, f64) {
        let min = self.rates.iter().copied().fold(f64::INFINITY, f64::min);
        (min, self.rates.iter().copied().fold(0.0, f64::max))
    }

    /// Nanoseconds one worker spends per life cycle: `workers / ops_per_s`.
    pub fn ns_per_op_per_worker(&self) -> f64 {
        self.workers as f64 * 1e9 / self.median()
    }

    /// The budget of each of [`LOCK_NAMES`], with `clock_ns` (one clock read) taken off
    /// every sampled hold. None for peers and rows without a life cycle.
    pub fn budgets(&self, clock_ns: f64) -> Option<Vec<LockBudget>> {
        let locks = self.locks.as_ref().filter(|_| self.ops > 0)?;
        let per = |n: u64| n as f64 / self.ops as f64;
        let net = |ns: f64| (ns - clock_ns).max(0.0);
        Some(
            (locks.0.iter())
                .map(|s| {
                    let (mean, long_holds) = s.hold.mean_below_ns(LONG_HOLD_NS);
                    let mean = net(mean);
                    let hold = mean * per(s.write);
                    LockBudget {
                        write: per(s.write),
                        read: per(s.read),
                        samples: s.hold.samples,
                        long_holds,
                        hold_ns_mean: mean,
                        hold_ns_p50: net(s.hold.quantile_ns(0.5)),
                        hold_ns_p99: net(s.hold.quantile_ns(0.99)),
                        hold_ns_per_cycle: hold,
                        wait_ns_per_cycle: s.wait.mean_ns() * per(s.write),
                        ceiling_ops_per_s: model::ceiling(hold),
                    }
                })
                .collect(),
        )
    }

    /// The model's inputs measured in this row: hold per life cycle of each lock, and
    /// the rest of a worker's cycle time (`ns/op/wkr` less holds and waits) as the
    /// parallel work. None without sampled times.
    pub fn demands(&self, clock_ns: f64) -> Option<Demands> {
        let b = self.budgets(clock_ns)?;
        if b.iter()
            .any(|l| l.write > 0.0 && !l.hold_ns_mean.is_finite())
        {
            return None;
        }
        let hold = |l: &LockBudget| {
            if l.write > 0.0 {
                l.hold_ns_per_cycle
            } else {
                0.0
            }
        };
        let wait = |l: &LockBudget| {
            if l.write > 0.0 {
                l.wait_ns_per_cycle
            } else {
                0.0
            }
        };
        let locked: f64 = b.iter().map(|l| hold(l) + wait(l)).sum();
        Some(Demands {
            parallel_ns: (self.ns_per_op_per_worker() - locked).max(0.0),
            holds_ns: b.iter().map(hold).collect(),
        })
    }
}

/// The median of `v` (NaN when empty).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// One ratio line: a name and its value at each worker count (None: not measured).
#[derive(Clone, Debug)]
pub struct Ratio {
    /// What is divided by what.
    pub name: String,
    /// `(workers, value)`.
    pub values: Vec<(usize, Option<f64>)>,
}

/// Ceilings of a newer profile over an older one's.
#[derive(Clone, Debug, Serialize)]
pub struct CeilingRatio {
    /// `ceiling ratio NEW / OLD (body=B)`.
    pub name: String,
    /// Per lock, [`LOCK_NAMES`] order.
    pub per_lock: Vec<f64>,
    /// Of the binding locks' ceilings.
    pub binding: f64,
}

/// A uproc subject's prediction: the inputs' row, and ops/s at 1..=`predict_to` workers.
#[derive(Clone, Debug)]
pub struct Prediction {
    /// Whose.
    pub subject: Subject,
    /// The worker count of the row the inputs come from (the most workers measured).
    pub from_workers: usize,
    /// Those inputs.
    pub demands: Demands,
    /// Predicted ops/s; index 0 is one worker.
    pub ops_per_s: Vec<f64>,
}

impl Prediction {
    /// Predicted ops/s at `workers` (None beyond the curve).
    pub fn at(&self, workers: usize) -> Option<f64> {
        self.ops_per_s.get(workers.checked_sub(1)?).copied()
    }
}

/// Everything one invocation measured, in the order the table prints it.
#[derive(Clone, Debug)]
pub struct Report {
    /// The options it ran with.
    pub options: Options,
    /// Rows, subject-major, workers ascending.
    pub rows: Vec<Row>,
    /// Seconds since the Unix epoch when it started.
    pub started_unix: u64,
    /// The cost of one clock read (ns), taken off every sampled hold.
    pub clock_ns: f64,
}

/// `x` with `decimals` digits, or `-` when it is absent or not finite.
fn fmt(x: Option<f64>, decimals: usize) -> String {
    match x {
        Some(v) if v.is_finite() => format!("{v:.decimals$}"),
        _ => "-".into(),
    }
}

/// `YYYY-MM-DD HH:MM:SS UTC` for a Unix time (Howard Hinnant's civil-from-days).
pub fn utc(unix: u64) -> String {
    let (days, secs) = ((unix / 86_400) as i64, unix % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let (h, mi, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    format!("{y:04}-{m:02}-{d:02} {h:02}:{mi:02}:{s:02} UTC")
}

/// Worker counts the prediction table shows (those within `--predict-to`).
const PREDICT_AT: [usize; 8] = [1, 2, 4, 8, 16, 20, 32, 64];

impl Report {
    /// The row of `subject` at `workers`.
    pub fn row(&self, subject: Subject, workers: usize) -> Option<&Row> {
        (self.rows.iter()).find(|r| r.subject == subject && r.workers == workers)
    }

    /// Median ops/s at `workers` divided by the same subject's median at one worker.
    pub fn scaling(&self, row: &Row) -> Option<f64> {
        Some(row.median() / self.row(row.subject, 1)?.median())
    }

    /// The uproc subjects measured, in table order.
    pub fn uproc_subjects(&self) -> Vec<Subject> {
        let mut v: Vec<Subject> = Vec::new();
        for r in &self.rows {
            if matches!(r.subject, Subject::Uproc { .. }) && !v.contains(&r.subject) {
                v.push(r.subject);
            }
        }
        v
    }

    /// Each uproc subject's prediction, from its row at the most workers measured.
    pub fn predictions(&self) -> Vec<Prediction> {
        let to = usize::from(self.options.predict_to);
        (self.uproc_subjects().into_iter())
            .filter_map(|subject| {
                let row = (self.rows.iter().rev()).find(|r| r.subject == subject)?;
                let demands = row.demands(self.clock_ns)?;
                let ops_per_s = model::predict(&demands, to);
                Some(Prediction {
                    subject,
                    from_workers: row.workers,
                    demands,
                    ops_per_s,
                })
            })
            .collect()
    }

    /// The model at `row`'s worker count from `row`'s own inputs, and from the inputs of
    /// the same subject's one-worker row: `(predicted, predicted from 1 worker)`.
    pub fn validation(&self, row: &Row) -> (Option<f64>, Option<f64>) {
        let at = |d: Demands| model::predict(&d, row.workers).pop();
        let one = self
            .row(row.subject, 1)
            .and_then(|r| r.demands(self.clock_ns));
        (row.demands(self.clock_ns).and_then(at), one.and_then(at))
    }

    fn ratio(&self, name: String, num: Subject, den: Subject) -> Option<Ratio> {
        let values: Vec<_> = (self.options.worker_list().into_iter())
            .map(|w| match (self.row(num, w), self.row(den, w)) {
                (Some(a), Some(b)) => (w, Some(a.median() / b.median())),
                _ => (w, None),
            })
            .collect();
        values
            .iter()
            .any(|(_, v)| v.is_some())
            .then_some(Ratio { name, values })
    }

    /// Every newer profile against the oldest measured, per body; each uproc body
    /// against its peer (and every body against pthread).
    pub fn ratios(&self) -> Vec<Ratio> {
        let (profiles, bodies) = (self.options.profile_list(), self.options.body_list());
        let mut out = Vec::new();
        for &body in &bodies {
            for &new in profiles.iter().skip(1) {
                let s = |profile| Subject::Uproc { profile, body };
                let name = format!("{new} / {} (body={})", profiles[0], body.name());
                out.extend(self.ratio(name, s(new), s(profiles[0])));
            }
        }
        for &body in &bodies {
            let peer = match body {
                Body::None => Subject::Pthread,
                Body::Thread => Subject::StdThread,
                Body::Tokio => Subject::Tokio,
            };
            for &profile in &profiles {
                let s = Subject::Uproc { profile, body };
                out.extend(self.ratio(format!("{} / {}", s.label(), peer.label()), s, peer));
                if body != Body::None {
                    let name = format!("{} / {}", s.label(), Subject::Pthread.label());
                    out.extend(self.ratio(name, s, Subject::Pthread));
                }
            }
        }
        out
    }

    /// Per uproc subject (from its row at the most workers measured): the lock with the
    /// lowest ceiling, and that ceiling.
    pub fn binding(&self) -> Vec<(Subject, &'static str, f64)> {
        (self.predictions().iter())
            .filter_map(|p| {
                let i = model::binding(&p.demands)?;
                Some((
                    p.subject,
                    LOCK_NAMES[i],
                    model::ceiling(p.demands.holds_ns[i]),
                ))
            })
            .collect()
    }

    /// Each newer profile's ceilings over the oldest measured profile's, per body: per
    /// lock and for the binding lock (>1: the newer profile allows more ops/s).
    pub fn ceiling_ratios(&self) -> Vec<CeilingRatio> {
        let preds = self.predictions();
        let profiles = self.options.profile_list();
        let mut out = Vec::new();
        for body in self.options.body_list() {
            let find = |profile| {
                preds
                    .iter()
                    .find(|p| p.subject == Subject::Uproc { profile, body })
            };
            let Some(old) = find(profiles[0]) else {
                continue;
            };
            for &new in &profiles[1..] {
                let Some(newp) = find(new) else { continue };
                let ceil = |d: &Demands| {
                    d.holds_ns
                        .iter()
                        .map(|h| model::ceiling(*h))
                        .collect::<Vec<_>>()
                };
                let bind = |d: &Demands| {
                    model::binding(d).map_or(f64::INFINITY, |i| model::ceiling(d.holds_ns[i]))
                };
                let (cn, co) = (ceil(&newp.demands), ceil(&old.demands));
                out.push(CeilingRatio {
                    name: format!(
                        "ceiling ratio {new} / {} (body={})",
                        profiles[0],
                        body.name()
                    ),
                    per_lock: cn.iter().zip(&co).map(|(n, o)| n / o).collect(),
                    binding: bind(&newp.demands) / bind(&old.demands),
                });
            }
        }
        out
    }

    fn header(&self) -> String {
        let o = &self.options;
        format!(
            "threadspawn  {}  nproc={}  seconds={} repeats={} levels={} pidfd={} cgroup={} sample_one_in={} clock_ns={:.0}",
            utc(self.started_unix),
            std::thread::available_parallelism().map_or(0, |n| n.get()),
            o.seconds,
            o.repeats,
            o.levels,
            o.pidfd,
            o.cgroup,
            o.sample_one_in,
            self.clock_ns
        )
    }

    /// The human-readable tables.
    pub fn table(&self) -> String {
        let mut s = self.header();
        s.push('\n');
        let reads = (self.rows.iter()).any(|r| r.locks.as_ref().is_some_and(|l| l.0[1].read > 0));
        let mut h = format!(
            "{:<28} {:>7} {:>11} {:>23} {:>9} {:>7} {:>11} {:>7} {:>6} {:>8}",
            "subject",
            "workers",
            "ops/s",
            "min-max",
            "ns/op/wkr",
            "scaling",
            "predicted*",
            "err%",
            "pidmap",
            "tasklist"
        );
        if reads {
            h += &format!(" {:>7}", "tl-read");
        }
        let _ = writeln!(s, "{h} {:>7}\n{}", "css_set", "-".repeat(h.len() + 8));
        let mut last = None;
        for r in &self.rows {
            if last.is_some_and(|l| l != r.subject) {
                s.push('\n');
            }
            last = Some(r.subject);
            let (min, max) = r.min_max();
            let per = |i: usize, read: bool| {
                let n = |l: &Locks| if read { l.0[i].read } else { l.0[i].write };
                fmt(r.locks.as_ref().map(|l| n(l) as f64 / r.ops as f64), 2)
            };
            let (pred, _) = self.validation(r);
            let _ = write!(
                s,
                "{:<28} {:>7} {:>11} {:>23} {:>9} {:>7} {:>11} {:>7} {:>6} {:>8}",
                r.subject.label(),
                r.workers,
                fmt(Some(r.median()), 0),
                format!("{}-{}", fmt(Some(min), 0), fmt(Some(max), 0)),
                fmt(Some(r.ns_per_op_per_worker()), 0),
                fmt(self.scaling(r), 2),
                fmt(pred, 0),
                fmt(pred.map(|p| model::error_pct(p, r.median())), 1),
                per(0, false),
                per(1, false),
            );
            if reads {
                let _ = write!(s, " {:>7}", per(1, true));
            }
            let _ = writeln!(s, " {:>7}", per(2, false));
        }
        self.ratio_table(&mut s);
        self.budget_table(&mut s);
        self.prediction_table(&mut s);
        s
    }

    fn ratio_table(&self, s: &mut String) {
        let ratios = self.ratios();
        if ratios.is_empty() {
            return;
        }
        let mut h = format!(
            "\n{:<62}",
            "ratio of median ops/s (>1: the first is faster)"
        );
        for w in self.options.worker_list() {
            let _ = write!(h, " {:>9}", format!("{w}w"));
        }
        let _ = writeln!(s, "{h}\n{}", "-".repeat(h.len() - 1));
        for r in ratios {
            let _ = write!(s, "{:<62}", r.name);
            for (_, v) in &r.values {
                let _ = write!(s, " {:>9}", fmt(*v, 2));
            }
            s.push('\n');
        }
    }

    fn budget_table(&self, s: &mut String) {
        let h = format!(
            "{:<28} {:>7} {:<14} {:>6} {:>8} {:>5} {:>7} {:>7} {:>7} {:>9} {:>9} {:>12}",
            "lock budget",
            "workers",
            "lock",
            "acq",
            "samples",
            "long",
            "mean",
            "p50",
            "p99",
            "hold/op",
            "wait/op",
            "ceiling"
        );
        let _ = writeln!(s, "\n{h}\n{}", "-".repeat(h.len()));
        for r in &self.rows {
            for (name, b) in LOCK_NAMES
                .iter()
                .zip(r.budgets(self.clock_ns).unwrap_or_default())
            {
                let _ = writeln!(
                    s,
                    "{:<28} {:>7} {:<14} {:>6.2} {:>8} {:>5} {:>7} {:>7} {:>7} {:>9} {:>9} {:>12}",
                    r.subject.label(),
                    r.workers,
                    name,
                    b.write,
                    b.samples,
                    b.long_holds,
                    fmt(Some(b.hold_ns_mean), 0),
                    fmt(Some(b.hold_ns_p50), 0),
                    fmt(Some(b.hold_ns_p99), 0),
                    fmt(Some(b.hold_ns_per_cycle), 0),
                    fmt(Some(b.wait_ns_per_cycle), 0),
                    fmt(Some(b.ceiling_ops_per_s), 0),
                );
            }
        }
        let bind = self.binding();
        for &(subject, lock, ceiling) in &bind {
            let _ = writeln!(
                s,
                "binding lock: {:<28} {lock:<14} ceiling {ceiling:.0} ops/s",
                subject.label()
            );
        }
        for c in self.ceiling_ratios() {
            let per_lock: Vec<String> = (LOCK_NAMES.iter().zip(&c.per_lock))
                .map(|(n, r)| format!("{n} {}", fmt(Some(*r), 2)))
                .collect();
            let _ = writeln!(
                s,
                "{}: binding {:.2}; per lock: {}",
                c.name,
                c.binding,
                per_lock.join(", ")
            );
        }
        let _ = writeln!(
            s,
            "(acq: exclusive acquisitions per life cycle; mean/p50/p99: sampled hold per acquisition, ns, one clock read ({:.0} ns) taken off; hold/op, wait/op: ns per life cycle; ceiling = 1e9 / hold/op, ops/s on any number of cores)",
            self.clock_ns
        );
    }

    fn prediction_table(&self, s: &mut String) {
        let preds = self.predictions();
        if preds.is_empty() {
            return;
        }
        let ws: Vec<usize> = (PREDICT_AT.iter().copied())
            .filter(|&w| w <= usize::from(self.options.predict_to))
            .collect();
        let mut h = format!("\n{:<28} {:>6}", "PREDICTION* (model) ops/s", "from");
        for w in &ws {
            let _ = write!(h, " {:>10}", format!("{w}w"));
        }
        let _ = writeln!(s, "{h}\n{}", "-".repeat(h.len() - 1));
        for p in &preds {
            let _ = write!(
                s,
                "{:<28} {:>6}",
                p.subject.label(),
                format!("{}w", p.from_workers)
            );
            for &w in &ws {
                let _ = write!(s, " {:>10}", fmt(p.at(w), 0));
            }
            s.push('\n');
        }
        for r in &self.rows {
            if let (_, Some(from1)) = self.validation(r) {
                if r.workers > 1 {
                    let e = model::error_pct(from1, r.median());
                    let _ = writeln!(
                        s,
                        "prediction* of {} at {}w from its 1-worker inputs: {from1:.0} ops/s ({e:+.1}% vs measured)",
                        r.subject.label(),
                        r.workers
                    );
                }
            }
        }
        self.kernel_comparison(s, &preds);
        let _ = writeln!(
            s,
            "* predictions, not measurements: exact MVA over the lock holds and parallel work measured at the `from` worker count, one core per worker (benches/IMPLEMENTATION.md). err% = (predicted - measured) / measured at the row's own inputs."
        );
    }

    fn kernel_comparison(&self, s: &mut String, preds: &[Prediction]) {
        let at = |p: Profile| {
            (preds.iter())
                .find(|x| {
                    x.subject
                        == Subject::Uproc {
                            profile: p,
                            body: Body::None,
                        }
                })
                .and_then(|x| x.at(KERNEL_WORKERS))
        };
        let (Some(old), Some(new)) = (at(Profile::Linux618), at(Profile::Linux70)) else {
            return;
        };
        let (k618, k70lo, k70hi) = KERNEL_20;
        let _ = writeln!(
            s,
            "at {KERNEL_WORKERS} workers: PREDICTION* uproc body=none linux618 {old:.0} -> linux70 {new:.0} ops/s (x{:.2}); kernel threadspawn1 on {KERNEL_WORKERS} processes, measured by its developers: {k618:.0} -> {k70lo:.0}-{k70hi:.0} (x{:.2}-{:.2})",
            new / old,
            k70lo / k618,
            k70hi / k618
        );
    }

    /// JSON lines: `meta`, one `row` per row (with its lock budget and prediction),
    /// `ratio` per ratio and worker count, `prediction` per subject and worker count.
    pub fn json_lines(&self) -> String {
        let o = &self.options;
        let mut lines = vec![json!({
            "type": "meta", "started_unix": self.started_unix,
            "nproc": std::thread::available_parallelism().map_or(0, |n| n.get()),
            "seconds": o.seconds, "repeats": o.repeats, "levels": o.levels, "pidfd": o.pidfd,
            "cgroup": o.cgroup, "sample_one_in": o.sample_one_in, "clock_ns": self.clock_ns,
        })];
        for r in &self.rows {
            let (min, max) = r.min_max();
            let (pred, from1) = self.validation(r);
            let mut v = r.subject.json();
            let m = v.as_object_mut().expect("an object");
            let fields = json!({
                "type": "row", "workers": r.workers, "ops_per_s": r.median(),
                "ops_per_s_min": min, "ops_per_s_max": max,
                "ns_per_op_per_worker": r.ns_per_op_per_worker(), "scaling": self.scaling(r),
                "ops": r.ops, "predicted_ops_per_s": pred,
                "prediction_error_pct": pred.map(|p| model::error_pct(p, r.median())),
                "predicted_from_1_worker_ops_per_s": from1,
                "parallel_ns_per_cycle": r.demands(self.clock_ns).map(|d| d.parallel_ns),
            });
            m.extend(fields.as_object().expect("an object").clone());
            if let Some(b) = r.budgets(self.clock_ns) {
                let locks = LOCK_NAMES
                    .iter()
                    .zip(b)
                    .map(|(n, b)| (n.to_string(), json!(b)));
                m.insert("locks_per_cycle".into(), locks.collect());
            }
            lines.push(v);
        }
        for r in self.ratios() {
            for (w, v) in r.values {
                lines.push(json!({"type": "ratio", "name": r.name, "workers": w, "value": v}));
            }
        }
        for c in self.ceiling_ratios() {
            let mut v = json!(c);
            v["type"] = json!("ceiling_ratio");
            lines.push(v);
        }
        for p in self.predictions() {
            for (i, x) in p.ops_per_s.iter().enumerate() {
                let mut v = p.subject.json();
                let m = v.as_object_mut().expect("an object");
                m.insert("type".into(), json!("prediction"));
                m.insert("workers".into(), json!(i + 1));
                m.insert("predicted_ops_per_s".into(), json!(x));
                m.insert("from_workers".into(), json!(p.from_workers));
                lines.push(v);
            }
        }
        lines.iter().map(|l| format!("{l}\n")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_utc() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_700_000_000), "2023-11-14 22:13:20 UTC");
    }
}
