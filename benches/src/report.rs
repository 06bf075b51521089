//! Results of a `threadspawn` invocation and their forms: the tables (throughput, lock
//! budget, ceilings, prediction) and JSON lines.
//!
//! Every figure is a median over repeats; ratios are taken between medians measured in
//! the same invocation, seconds apart, because absolute times on shared machines are
//! noise. Lock times are sampled (see `uproc_abi::lockstat`) and corrected by the cost
//! of the clock read itself, measured back to back at start-up.

use crate::args::{Body, Options};
use crate::load::Locks;
use crate::model::{self, Demands};
use serde::Serialize;
use serde_json::{Value, json};
use uproc_abi::Profile;

/// The kernel's published threadspawn1 figures on 20 processes: Linux 6.18 (two
/// `pidmap_lock` acquisitions per `alloc_pid`) and the range reported for 7.0 (one).
pub const KERNEL_20: (f64, f64, f64) = (465e3, 510e3, 560e3);

/// The worker count of the kernel's figures, where the prediction is compared with them.
pub const KERNEL_WORKERS: usize = 20;

/// Sampled holds at or above this (ns) are left out of the budget and counted as
/// `long_holds`: the kernel holds these locks with preemption off, so a userspace holder
/// descheduled by the machine's other load is not the lock's work. Waits this long
/// (`long_waits`: behind such a holder; a queue of sub-microsecond holds cannot make
/// one) are left out of `wait_ns_per_cycle` alike; both stay in the parallel work.
pub const LONG_HOLD_NS: u64 = 10_000; // BUDGET_NOTE says so too

/// What one table row measures; in JSON, `"subject"` (`uproc`, `pthread`, `std_thread`,
/// `tokio`) and for uproc `"profile"` and `"body"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "subject", rename_all = "snake_case")]
pub enum Subject {
    /// uproc's life cycle under a profile, with a body kind.
    Uproc {
        /// The lock profile.
        #[serde(serialize_with = "profile_name")]
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
}

fn profile_name<S: serde::Serializer>(p: &Profile, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(p.name())
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
    /// The lock's name (the key of its object in JSON).
    #[serde(skip)]
    pub lock: &'static str,
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
    /// Sampled waits of [`LONG_HOLD_NS`] or more, left out of `wait_ns_per_cycle`.
    pub long_waits: u64,
    /// Sampled waits below [`LONG_HOLD_NS`] per acquisition x write: ns spent queueing
    /// for the lock per life cycle.
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

    /// The budget of each global lock, with `clock_ns` (one clock read) taken off
    /// every sampled hold. None for peers and rows without a life cycle.
    pub fn budgets(&self, clock_ns: f64) -> Option<Vec<LockBudget>> {
        let locks = self.locks.as_ref().filter(|_| self.ops > 0)?;
        let per = |n: u64| n as f64 / self.ops as f64;
        let net = |ns: f64| (ns - clock_ns).max(0.0);
        let budget = |s: &uproc_abi::lockstat::LockStat| {
            let (mean, long_holds) = s.hold.mean_below_ns(LONG_HOLD_NS);
            let (wait, long_waits) = s.wait.mean_below_ns(LONG_HOLD_NS);
            // Per life cycle, from per exclusive acquisition (0 for a lock never taken).
            let per_cycle = |ns: f64| if s.write > 0 { ns * per(s.write) } else { 0.0 };
            let (mean, short) = (net(mean), s.wait.samples - long_waits);
            let hold = per_cycle(mean);
            // The short waits' mean over all sampled waits; 0 without short waits (their
            // mean is then NaN, and `NaN.max(0.0)` is 0).
            let short_wait = (wait * short as f64 / s.wait.samples as f64).max(0.0);
            LockBudget {
                lock: s.name,
                write: per(s.write),
                read: per(s.read),
                samples: s.hold.samples,
                long_holds,
                hold_ns_mean: mean,
                hold_ns_p50: net(s.hold.quantile_ns(0.5)),
                hold_ns_p99: net(s.hold.quantile_ns(0.99)),
                hold_ns_per_cycle: hold,
                long_waits,
                wait_ns_per_cycle: per_cycle(short_wait),
                ceiling_ops_per_s: model::ceiling(hold),
            }
        };
        Some(locks.0.iter().map(budget).collect())
    }

    /// The model's inputs measured in this row: hold per life cycle of each lock, and
    /// the rest of a worker's cycle time (`ns/op/wkr` less holds and waits) as the
    /// parallel work. None without sampled times for a lock that was taken.
    pub fn demands(&self, clock_ns: f64) -> Option<Demands> {
        let b = self.budgets(clock_ns)?;
        let held = |l: &LockBudget| l.hold_ns_per_cycle + l.wait_ns_per_cycle;
        let locked: f64 = b.iter().map(held).sum();
        locked.is_finite().then(|| Demands {
            parallel_ns: (self.ns_per_op_per_worker() - locked).max(0.0),
            holds_ns: b.iter().map(|l| l.hold_ns_per_cycle).collect(),
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
pub type Ratio = (String, Vec<Option<f64>>);

/// A uproc subject's prediction: the inputs' row, and ops/s at 1..=`predict_to` workers.
#[derive(Clone, Debug)]
pub struct Prediction {
    /// Whose.
    pub subject: Subject,
    /// The worker count of the row the inputs come from (the most workers measured).
    pub from_workers: usize,
    /// Those inputs (`holds_ns` in `locks` order).
    pub demands: Demands,
    /// The locks' names.
    pub locks: Vec<&'static str>,
    /// Predicted ops/s; index 0 is one worker.
    pub ops_per_s: Vec<f64>,
}

impl Prediction {
    /// The hold per life cycle of `lock` among the inputs (None: not among them).
    pub fn hold(&self, lock: &str) -> Option<f64> {
        let i = self.locks.iter().position(|l| *l == lock)?;
        Some(self.demands.holds_ns[i])
    }

    /// The ceiling of the binding lock (infinite when no lock is held).
    pub fn binding_ceiling(&self) -> f64 {
        let d = &self.demands;
        model::binding(d).map_or(f64::INFINITY, |i| model::ceiling(d.holds_ns[i]))
    }

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
    let x = x.filter(|v| v.is_finite());
    x.map_or("-".into(), |v| format!("{v:.decimals$}"))
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

const BUDGET_NOTE: &str = "acq: exclusive acquisitions per life cycle; samples: timed ones; \
long, long-w: holds and waits of 10 us or more, left out (a preempted holder); mean/p50/p99: \
hold per acquisition, ns; hold/op, wait/op: ns per life cycle; ceiling = 1e9 / hold/op: \
ops/s on any number of cores; one clock read taken off every sampled hold";

const PREDICTION_NOTE: &str = "* predictions, not measurements: exact MVA over the lock \
holds and parallel work measured at the `inputs` worker count, one core per worker \
(benches/IMPLEMENTATION.md); err% = (predicted - measured) / measured at the row's own inputs";

/// Worker counts the prediction table shows (those within `--predict-to`).
const PREDICT_AT: [usize; 8] = [1, 2, 4, 8, 16, 20, 32, 64];

impl Report {
    /// The rows of `subject`, workers ascending.
    pub fn rows_of(&self, subject: Subject) -> impl DoubleEndedIterator<Item = &Row> {
        self.rows.iter().filter(move |r| r.subject == subject)
    }

    /// The row of `subject` at `workers`.
    pub fn row(&self, subject: Subject, workers: usize) -> Option<&Row> {
        self.rows_of(subject).find(|r| r.workers == workers)
    }

    /// The uproc subjects measured, in table order.
    pub fn uproc_subjects(&self) -> Vec<Subject> {
        let subjects = self.rows.iter().map(|r| r.subject);
        crate::dedup(subjects.filter(|s| matches!(s, Subject::Uproc { .. })))
    }

    /// Each uproc subject's prediction, from its row at the most workers measured.
    pub fn predictions(&self) -> Vec<Prediction> {
        let to = usize::from(self.options.predict_to);
        (self.uproc_subjects().into_iter())
            .filter_map(|subject| {
                let row = self.rows_of(subject).next_back()?;
                let demands = row.demands(self.clock_ns)?;
                let (ops_per_s, from_workers) = (model::predict(&demands, to), row.workers);
                let locks = row.budgets(self.clock_ns)?.iter().map(|b| b.lock).collect();
                Some(Prediction {
                    subject,
                    from_workers,
                    demands,
                    locks,
                    ops_per_s,
                })
            })
            .collect()
    }

    /// The model at `row`'s worker count from `row`'s own inputs, and from the inputs of
    /// the same subject's one-worker row: `(predicted, predicted from 1 worker)`.
    pub fn validation(&self, row: &Row) -> (Option<f64>, Option<f64>) {
        let at = |r: &Row| model::predict(&r.demands(self.clock_ns)?, row.workers).pop();
        (at(row), self.row(row.subject, 1).and_then(at))
    }

    fn ratio(&self, name: String, num: Subject, den: Subject) -> Option<Ratio> {
        let at = |w| Some(self.row(num, w)?.median() / self.row(den, w)?.median());
        let values: Vec<_> = self.options.worker_list().into_iter().map(at).collect();
        values.iter().any(Option::is_some).then_some((name, values))
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
            let pthread = (body != Body::None).then_some(Subject::Pthread);
            for &profile in &profiles {
                let s = Subject::Uproc { profile, body };
                for den in std::iter::once(peer).chain(pthread) {
                    out.extend(self.ratio(format!("{} / {}", s.label(), den.label()), s, den));
                }
            }
        }
        out
    }

    /// Each later profile's ceilings over the first profile's, per body, as objects:
    /// `name` (`ceiling ratio NEW / OLD`), `per_lock` (lock name: ratio) and `binding` (of
    /// the binding locks' ceilings); >1: the later profile allows more ops/s.
    pub fn ceiling_ratios(&self) -> Vec<Value> {
        let preds = self.predictions();
        let pairs = preds.iter().filter_map(|new| {
            let (Subject::Uproc { body, .. }, profile) = (new.subject, Profile::ALL[0]) else {
                return None;
            };
            let oldest = Subject::Uproc { profile, body };
            let old = preds.iter().find(|o| o.subject == oldest)?;
            (old.subject != new.subject).then_some((old, new))
        });
        let ratio = |(old, new): (&Prediction, &Prediction)| {
            let per_lock = (new.locks.iter().zip(&new.demands.holds_ns))
                .map(|(lock, n)| (lock.to_string(), json!(old.hold(lock).map(|o| o / n))));
            let (new_label, old_label) = (new.subject.label(), old.subject.label());
            json!({"name": format!("ceiling ratio {new_label} / {old_label}"),
                "per_lock": per_lock.collect::<serde_json::Map<_, _>>(),
                "binding": new.binding_ceiling() / old.binding_ceiling()})
        };
        pairs.map(ratio).collect()
    }

    /// One JSON object per fact: `meta`; `row` per row (its lock budget, the model's
    /// prediction at its worker count); `ratio` per ratio and worker count;
    /// `ceiling_ratio`; `prediction` per uproc subject and worker count.
    pub fn values(&self) -> Vec<Value> {
        let (o, clock_ns) = (&self.options, self.clock_ns);
        let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
        let mut lines = vec![json!({
            "type": "meta", "started_unix": self.started_unix, "nproc": nproc, "seconds": o.seconds,
            "repeats": o.repeats, "levels": o.shape.levels, "pidfd": o.shape.pidfd,
            "cgroup": o.shape.cgroup, "sample_one_in": o.sample_one_in, "clock_ns": clock_ns,
        })];
        for r in &self.rows {
            let ((min, max), (pred, from1)) = (r.min_max(), self.validation(r));
            // The median over the same subject's median at one worker.
            let scaling = self.row(r.subject, 1).map(|one| r.median() / one.median());
            let budgets = r.budgets(clock_ns).map(|b| {
                let named = b.iter().map(|b| (b.lock.to_string(), json!(b)));
                named.collect::<serde_json::Map<_, _>>()
            });
            let fields = json!({
                "label": r.subject.label(), "workers": r.workers,
                "ops_per_s": r.median(), "ops_per_s_min": min, "ops_per_s_max": max,
                "ns_per_op_per_worker": r.ns_per_op_per_worker(), "scaling": scaling,
                "ops": r.ops, "predicted_ops_per_s": pred,
                "prediction_error_pct": pred.map(|p| model::error_pct(p, r.median())),
                "predicted_from_1_worker_ops_per_s": from1,
                "parallel_ns_per_cycle": r.demands(clock_ns).map(|d| d.parallel_ns),
                "locks_per_cycle": budgets,
            });
            lines.push(typed("row", [json!(r.subject), fields]));
        }
        for (name, values) in self.ratios() {
            for (w, v) in o.worker_list().into_iter().zip(values) {
                lines.push(json!({"type": "ratio", "name": name, "workers": w, "value": v}));
            }
        }
        let ceilings = self.ceiling_ratios().into_iter();
        lines.extend(ceilings.map(|c| typed("ceiling_ratio", [c])));
        for p in self.predictions() {
            lines.extend(p.ops_per_s.iter().enumerate().map(|(i, x)| {
                let fields = json!({"workers": i + 1, "predicted_ops_per_s": x,
                    "from_workers": p.from_workers});
                typed("prediction", [json!(p.subject), fields])
            }));
        }
        lines
    }

    /// [`Report::values`] as JSON lines.
    pub fn json_lines(&self) -> String {
        self.values().iter().map(|l| format!("{l}\n")).collect()
    }

    /// The human-readable tables, drawn from [`Report::values`]: throughput (with the
    /// prediction at each row), ratios, lock budget with ceilings, prediction.
    pub fn table(&self) -> String {
        let values = self.values();
        let of = |t: &'static str| values.iter().filter(move |v| v["type"] == t);
        let mut s = format!("threadspawn  {}", utc(self.started_unix));
        for k in "nproc seconds repeats levels pidfd cgroup sample_one_in".split(' ') {
            s += &format!("  {k}={}", values[0][k]);
        }
        s += &format!("  clock_ns={:.0}\n", self.clock_ns);
        let reads = of("row").any(|r| r.pointer(TL_READ).and_then(Value::as_f64) > Some(0.0));
        let (main, budget) = (columns(MAIN), &columns(BUDGET));
        let cols = &main[..main.len() - usize::from(!reads)];
        let mut rows: Vec<Vec<String>> = Vec::new();
        for r in of("row") {
            if rows.last().is_some_and(|l| l[0] != r["label"]) {
                rows.push(Vec::new());
            }
            rows.push(cells(r, cols));
        }
        s += &grid(cols.iter().map(|c| c.0), rows);
        let ratios = self.ratios().into_iter().map(|(name, values)| {
            [vec![name], values.iter().map(|v| fmt(*v, 2)).collect()].concat()
        });
        let head = vec!["ratio of median ops/s (>1: the first is faster)".into()];
        s += &by_workers(head, &self.options.worker_list(), ratios.collect());
        let rows = of("row").flat_map(|r| {
            let locks = r["locks_per_cycle"].as_object().into_iter().flatten();
            locks.map(move |(lock, l)| {
                let at = json!({"label": r["label"], "workers": r["workers"], "lock": lock});
                cells(&merge([at, l.clone()]), budget)
            })
        });
        let head = std::iter::once("lock budget").chain(budget[1..].iter().map(|c| c.0));
        s += &format!("\n{}", grid(head, rows.collect()));
        for p in self.predictions() {
            if let Some(i) = model::binding(&p.demands) {
                let (who, w, c) = (p.subject.label(), p.from_workers, p.binding_ceiling());
                let lock = p.locks[i];
                s += &format!("binding lock of {who} ({w}w): {lock} ({c:.0} ops/s)\n");
            }
        }
        for c in of("ceiling_ratio") {
            let ratio = |r: &Value| fmt(r.as_f64(), 2);
            let per_lock = c["per_lock"].as_object().into_iter().flatten();
            let each: Vec<_> = per_lock.map(|(n, r)| format!("{n} {}", ratio(r))).collect();
            let (name, each) = (c["name"].as_str().unwrap_or(""), each.join(", "));
            let binding = ratio(&c["binding"]);
            s += &format!("{name}: binding {binding}; per lock: {each}\n");
        }
        s += &format!("({BUDGET_NOTE}: {:.0} ns)\n", self.clock_ns);
        s + &self.prediction_table()
    }

    fn prediction_table(&self) -> String {
        let preds = self.predictions();
        let to = usize::from(self.options.predict_to);
        let ws: Vec<usize> = PREDICT_AT.into_iter().filter(|&w| w <= to).collect();
        let rows = preds.iter().map(|p| {
            let head = vec![p.subject.label(), format!("{}w", p.from_workers)];
            [head, ws.iter().map(|&w| fmt(p.at(w), 0)).collect()].concat()
        });
        let head = vec!["PREDICTION* (model), ops/s".into(), "inputs".into()];
        let mut s = by_workers(head, &ws, rows.collect());
        if preds.is_empty() {
            return s;
        }
        for r in self.rows.iter().filter(|r| r.workers > 1) {
            if let (_, Some(x)) = self.validation(r) {
                let (who, w, e) = (r.subject.label(), r.workers, r.median());
                let e = model::error_pct(x, e);
                s += &format!("prediction* of {who} at {w}w from its 1-worker inputs: ");
                s += &format!("{x:.0} ops/s ({e:+.1}% vs measured)\n");
            }
        }
        let body = Body::None;
        let at = |profile| {
            let subject = Subject::Uproc { profile, body };
            let prediction = preds.iter().find(|p| p.subject == subject)?;
            prediction.at(KERNEL_WORKERS)
        };
        if let (Some(old), Some(new)) = (at(Profile::Linux618), at(Profile::Linux70)) {
            let ((k618, lo, hi), n, x) = (KERNEL_20, KERNEL_WORKERS, new / old);
            let (x_lo, x_hi) = (lo / k618, hi / k618);
            s += &format!("at {n} workers: PREDICTION* uproc body=none linux618 {old:.0} -> ");
            s += &format!("linux70 {new:.0} ops/s (x{x:.2}); kernel threadspawn1 on ");
            s += &format!("{n} processes, as published: {k618:.0} -> {lo:.0}-{hi:.0} ");
            s += &format!("(x{x_lo:.2}-{x_hi:.2})\n");
        }
        s + PREDICTION_NOTE + "\n"
    }
}

/// A table whose first columns are `head` and then one per worker count of `workers`
/// (`2w`), after a blank line; nothing without rows.
fn by_workers(head: Vec<String>, workers: &[usize], rows: Vec<Vec<String>>) -> String {
    let head = [head, workers.iter().map(|w| format!("{w}w")).collect()].concat();
    if rows.is_empty() {
        return String::new();
    }
    format!("\n{}", grid(head, rows))
}

/// A table column: header, JSON pointer into a row (or lock) object, decimals.
type Col = (&'static str, &'static str, usize);

const TL_READ: &str = "/locks_per_cycle/tasklist_lock/read";

/// The throughput table's columns as `header=pointer:decimals`; the last one only when
/// read acquisitions happened.
const MAIN: &str = "subject=/label:0 workers=/workers:0 ops/s=/ops_per_s:0 \
    min=/ops_per_s_min:0 max=/ops_per_s_max:0 ns/op/wkr=/ns_per_op_per_worker:0 \
    scaling=/scaling:2 predicted*=/predicted_ops_per_s:0 err%=/prediction_error_pct:1 \
    pidmap=/locks_per_cycle/pidmap_lock/write:2 tasklist=/locks_per_cycle/tasklist_lock/write:2 \
    css_set=/locks_per_cycle/css_set_lock/write:2 pool=/locks_per_cycle/pidns_pool_lock/write:3 \
    tl-read=/locks_per_cycle/tasklist_lock/read:2";

/// The lock budget table's columns, per lock object with its row's label and workers
/// and its own name (the first header is `lock budget` in the table).
const BUDGET: &str = "subject=/label:0 workers=/workers:0 lock=/lock:0 acq=/write:2 \
    samples=/samples:0 long=/long_holds:0 mean=/hold_ns_mean:0 p50=/hold_ns_p50:0 \
    p99=/hold_ns_p99:0 hold/op=/hold_ns_per_cycle:0 wait/op=/wait_ns_per_cycle:0 \
    long-w=/long_waits:0 ceiling=/ceiling_ops_per_s:0";

/// Parses a column spec such as `MAIN` (the throughput table's).
pub fn columns(spec: &'static str) -> Vec<Col> {
    let col = |c: &'static str| {
        let (head, rest) = c.split_once('=')?;
        let (ptr, decimals) = rest.rsplit_once(':')?;
        Some((head, ptr, decimals.parse().ok()?))
    };
    let specs = spec.split_whitespace();
    specs.map(|c| col(c).expect("a valid column")).collect()
}

/// `v`'s cells for `cols`: strings as they are, numbers rounded, absent or null as `-`.
fn cells(v: &Value, cols: &[Col]) -> Vec<String> {
    let cell = |(_, ptr, d): &Col| match v.pointer(ptr) {
        Some(Value::String(s)) => s.clone(),
        x => fmt(x.and_then(Value::as_f64), *d),
    };
    cols.iter().map(cell).collect()
}

/// The fields of the objects in `parts`, in order, in one object.
pub fn merge(parts: impl IntoIterator<Item = Value>) -> Value {
    let fields = parts.into_iter().filter_map(|p| p.as_object().cloned());
    Value::Object(fields.flatten().collect())
}

/// One JSON line's object: `"type": kind` first, then the fields of `parts` in order.
pub fn typed(kind: &str, parts: impl IntoIterator<Item = Value>) -> Value {
    merge(std::iter::once(json!({ "type": kind })).chain(parts))
}

/// A text table: the first column left-aligned, the others right-aligned, each as wide as
/// its widest cell; an empty row is a blank line.
pub fn grid<H: AsRef<str>>(head: impl IntoIterator<Item = H>, rows: Vec<Vec<String>>) -> String {
    let head: Vec<String> = head.into_iter().map(|h| h.as_ref().to_string()).collect();
    let mut width: Vec<usize> = head.iter().map(String::len).collect();
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cells: &Vec<String>| {
        let first = cells.first().map_or("", String::as_str);
        let mut l = format!("{first:<w$}", w = width[0]);
        for (c, w) in cells.iter().zip(&width).skip(1) {
            l += &format!(" {c:>w$}");
        }
        // An empty row is padding only.
        l.trim_end().to_string() + "\n"
    };
    let mut s = line(&head);
    s += &format!("{}\n", "-".repeat(s.len() - 1));
    s + &rows.iter().map(line).collect::<String>()
}
