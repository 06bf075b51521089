//! Results of a `threadspawn` invocation, and their two forms: the table and JSON lines.
//!
//! Every figure is a median over repeats; ratios are taken between medians measured in
//! the same invocation, seconds apart, because absolute times on shared machines are
//! noise.

use crate::args::{Body, Options};
use crate::load::{LOCK_NAMES, LockCounts};
use std::fmt::Write as _;
use uproc_abi::Profile;

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
    /// The label in the table's first column.
    pub fn label(&self) -> String {
        match self {
            Subject::Uproc { profile, body } => format!("uproc {} body={}", profile, body.name()),
            Subject::Pthread => "pthread create+join".to_string(),
            Subject::StdThread => "std::thread spawn+join".to_string(),
            Subject::Tokio => "tokio spawn+await".to_string(),
        }
    }

    fn json_fields(&self) -> String {
        match self {
            Subject::Uproc { profile, body } => format!(
                "\"subject\":\"uproc\",\"profile\":\"{}\",\"body\":\"{}\"",
                profile,
                body.name()
            ),
            Subject::Pthread => "\"subject\":\"pthread\"".to_string(),
            Subject::StdThread => "\"subject\":\"std_thread\"".to_string(),
            Subject::Tokio => "\"subject\":\"tokio\"".to_string(),
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
    /// Lock acquisitions over all repeats (uproc rows only).
    pub locks: Option<LockCounts>,
}

impl Row {
    /// Median ops/s over the repeats (mean of the middle two for an even count).
    pub fn median(&self) -> f64 {
        median(&self.rates)
    }

    /// Slowest and fastest repeat.
    pub fn min_max(&self) -> (f64, f64) {
        let min = self.rates.iter().copied().fold(f64::INFINITY, f64::min);
        let max = self.rates.iter().copied().fold(0.0, f64::max);
        (min, max)
    }

    /// Nanoseconds one worker spends per life cycle: `workers / ops_per_s`.
    pub fn ns_per_op_per_worker(&self) -> f64 {
        let m = self.median();
        if m > 0.0 {
            self.workers as f64 * 1e9 / m
        } else {
            f64::NAN
        }
    }

    /// Acquisitions of lock `i` (in [`LOCK_NAMES`] order) per life cycle, `(write, read)`.
    pub fn per_cycle(&self, i: usize) -> Option<(f64, f64)> {
        let l = self.locks?;
        if self.ops == 0 {
            return None;
        }
        Some((
            l.0[i].0 as f64 / self.ops as f64,
            l.0[i].1 as f64 / self.ops as f64,
        ))
    }
}

/// The median of `v` (NaN when empty).
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
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

/// Everything one invocation measured, in the order the table prints it.
#[derive(Clone, Debug)]
pub struct Report {
    /// The options it ran with.
    pub options: Options,
    /// Rows, subject-major, workers ascending.
    pub rows: Vec<Row>,
    /// Seconds since the Unix epoch when it started.
    pub started_unix: u64,
}

/// `x` with `decimals` digits, or `missing` when it is absent or not finite.
fn finite_or(x: Option<f64>, decimals: usize, missing: &str) -> String {
    match x {
        Some(v) if v.is_finite() => format!("{v:.decimals$}"),
        _ => missing.to_string(),
    }
}

fn fmt_rate(x: f64) -> String {
    finite_or(Some(x), 0, "-")
}

fn fmt_ratio(x: Option<f64>) -> String {
    finite_or(x, 2, "-")
}

/// `YYYY-MM-DD HH:MM:SS UTC` for a Unix time (Howard Hinnant's civil-from-days).
pub fn utc(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

impl Report {
    fn row(&self, subject: Subject, workers: usize) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.subject == subject && r.workers == workers)
    }

    /// Median ops/s at `workers` divided by the same subject's median at one worker.
    pub fn scaling(&self, row: &Row) -> Option<f64> {
        let one = self.row(row.subject, 1)?;
        Some(row.median() / one.median())
    }

    fn ratio(&self, name: String, num: Subject, den: Subject) -> Option<Ratio> {
        let values: Vec<_> = self
            .options
            .workers
            .iter()
            .map(|&w| {
                let v = match (self.row(num, w), self.row(den, w)) {
                    (Some(a), Some(b)) => Some(a.median() / b.median()),
                    _ => None,
                };
                (w, v)
            })
            .collect();
        values
            .iter()
            .any(|(_, v)| v.is_some())
            .then_some(Ratio { name, values })
    }

    /// The ratios the issue asks for, where both sides were measured: Linux70 vs
    /// Linux618 per body, uproc bookkeeping (and every body) vs pthread, uproc's tokio
    /// body vs bare tokio, uproc's thread body vs std::thread.
    pub fn ratios(&self) -> Vec<Ratio> {
        let mut out = Vec::new();
        for &body in &self.options.bodies {
            let new = Subject::Uproc {
                profile: Profile::Linux70,
                body,
            };
            let old = Subject::Uproc {
                profile: Profile::Linux618,
                body,
            };
            out.extend(self.ratio(
                format!("linux70 / linux618 (body={})", body.name()),
                new,
                old,
            ));
        }
        for &body in &self.options.bodies {
            let peer = match body {
                Body::None => (Subject::Pthread, "pthread create+join"),
                Body::Thread => (Subject::StdThread, "std::thread spawn+join"),
                Body::Tokio => (Subject::Tokio, "tokio spawn+await"),
            };
            for &profile in &self.options.profiles {
                let s = Subject::Uproc { profile, body };
                out.extend(self.ratio(format!("{} / {}", s.label(), peer.1), s, peer.0));
                if body != Body::None {
                    out.extend(self.ratio(
                        format!("{} / pthread create+join", s.label()),
                        s,
                        Subject::Pthread,
                    ));
                }
            }
        }
        out
    }

    fn show_reads(&self) -> bool {
        self.rows
            .iter()
            .any(|r| r.locks.is_some_and(|l| l.0[1].1 > 0))
    }

    /// The human-readable table and ratios.
    pub fn table(&self) -> String {
        let o = &self.options;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "threadspawn  {}  nproc={}  seconds={} repeats={} levels={} pidfd={} cgroup={}",
            utc(self.started_unix),
            std::thread::available_parallelism().map_or(0, |n| n.get()),
            o.seconds,
            o.repeats,
            o.levels,
            o.pidfd,
            o.cgroup
        );
        let reads = self.show_reads();
        let mut header = format!(
            "{:<28} {:>7} {:>12} {:>25} {:>12} {:>8} {:>7} {:>9}",
            "subject", "workers", "ops/s", "min-max", "ns/op/wkr", "scaling", "pidmap", "tasklist"
        );
        if reads {
            let _ = write!(header, " {:>8}", "tl-read");
        }
        let _ = write!(header, " {:>8}", "css_set");
        let _ = writeln!(s, "{header}");
        let _ = writeln!(s, "{}", "-".repeat(header.len()));
        let mut last: Option<Subject> = None;
        for r in &self.rows {
            if last.is_some_and(|l| l != r.subject) {
                let _ = writeln!(s);
            }
            last = Some(r.subject);
            let (min, max) = r.min_max();
            let lock = |i: usize, read: bool| {
                r.per_cycle(i).map_or("-".to_string(), |(w, rd)| {
                    format!("{:.2}", if read { rd } else { w })
                })
            };
            let _ = write!(
                s,
                "{:<28} {:>7} {:>12} {:>25} {:>12.0} {:>8} {:>7} {:>9}",
                r.subject.label(),
                r.workers,
                fmt_rate(r.median()),
                format!("{}-{}", fmt_rate(min), fmt_rate(max)),
                r.ns_per_op_per_worker(),
                fmt_ratio(self.scaling(r)),
                lock(0, false),
                lock(1, false),
            );
            if reads {
                let _ = write!(s, " {:>8}", lock(1, true));
            }
            let _ = writeln!(s, " {:>8}", lock(2, false));
        }
        let ratios = self.ratios();
        if !ratios.is_empty() {
            let _ = writeln!(s);
            let mut h = format!("{:<62}", "ratio of median ops/s (>1: the first is faster)");
            for w in &o.workers {
                let _ = write!(h, " {:>9}", format!("{w}w"));
            }
            let _ = writeln!(s, "{h}");
            let _ = writeln!(s, "{}", "-".repeat(h.len()));
            for r in ratios {
                let _ = write!(s, "{:<62}", r.name);
                for (_, v) in &r.values {
                    let _ = write!(s, " {:>9}", fmt_ratio(*v));
                }
                let _ = writeln!(s);
            }
        }
        let _ = writeln!(
            s,
            "\nlock columns: acquisitions per life cycle (fork+exit+reap) of {} (tasklist = write{}).",
            LOCK_NAMES.join(", "),
            if reads { "; tl-read = read" } else { "" }
        );
        s
    }

    /// JSON lines: one `meta`, one `row` per row, one `ratio` per ratio and worker count.
    pub fn json_lines(&self) -> String {
        let o = &self.options;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{{\"type\":\"meta\",\"started_unix\":{},\"nproc\":{},\"seconds\":{},\"repeats\":{},\"levels\":{},\"pidfd\":{},\"cgroup\":{}}}",
            self.started_unix,
            std::thread::available_parallelism().map_or(0, |n| n.get()),
            o.seconds,
            o.repeats,
            o.levels,
            o.pidfd,
            o.cgroup
        );
        for r in &self.rows {
            let (min, max) = r.min_max();
            let _ = write!(
                s,
                "{{\"type\":\"row\",{},\"workers\":{},\"ops_per_s\":{},\"ops_per_s_min\":{},\"ops_per_s_max\":{},\"ns_per_op_per_worker\":{},\"scaling\":{},\"ops\":{}",
                r.subject.json_fields(),
                r.workers,
                json_num(r.median()),
                json_num(min),
                json_num(max),
                json_num(r.ns_per_op_per_worker()),
                json_opt(self.scaling(r)),
                r.ops
            );
            if r.locks.is_some() {
                let _ = write!(s, ",\"locks_per_cycle\":{{");
                for (i, name) in LOCK_NAMES.iter().enumerate() {
                    let (w, rd) = r.per_cycle(i).unwrap_or((f64::NAN, f64::NAN));
                    let sep = if i == 0 { "" } else { "," };
                    let _ = write!(
                        s,
                        "{sep}\"{name}\":{{\"write\":{},\"read\":{}}}",
                        json_num(w),
                        json_num(rd)
                    );
                }
                let _ = write!(s, "}}");
            }
            let _ = writeln!(s, "}}");
        }
        for r in self.ratios() {
            for (w, v) in &r.values {
                let _ = writeln!(
                    s,
                    "{{\"type\":\"ratio\",\"name\":\"{}\",\"workers\":{},\"value\":{}}}",
                    json_escape(&r.name),
                    w,
                    json_opt(*v)
                );
            }
        }
        s
    }
}

fn json_num(x: f64) -> String {
    finite_or(Some(x), 3, "null")
}

fn json_opt(x: Option<f64>) -> String {
    finite_or(x, 3, "null")
}

/// Escapes `s` for a JSON string body.
pub fn json_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
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

    #[test]
    fn json_escape_quotes_and_controls() {
        assert_eq!(json_escape("a\"b\\c\n"), "a\\\"b\\\\c\\u000a");
    }
}
