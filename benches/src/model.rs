//! The lock-budget model: from one measured row, the throughput ceiling of each global
//! lock and a prediction of ops/s at any number of workers.
//!
//! A life cycle is a closed loop: `parallel_ns` of work that any number of workers can do
//! at once, and for each global lock its hold time per life cycle, which only one worker
//! at a time can spend. That is a closed queueing network with one delay station (the
//! parallel work; one core per worker assumed) and one FCFS single-server station per
//! lock, which exact Mean Value Analysis (Reiser and Lavenberg, 1980) solves worker count
//! by worker count. Its limits are the operational bounds: `N / (parallel + holds)` when
//! nothing queues, and `1 / hold` of the busiest lock (that lock's ceiling) once it is
//! saturated. benches/IMPLEMENTATION.md derives it and says what it leaves out.

/// What the model needs, per life cycle, in ns.
#[derive(Clone, Debug, PartialEq)]
pub struct Demands {
    /// Work outside every global lock (including time spent on other locks' reads).
    pub parallel_ns: f64,
    /// Hold time per life cycle of each global lock (mean hold x acquisitions).
    pub holds_ns: Vec<f64>,
}

/// The throughput ceiling a lock held `hold_ns` per life cycle imposes on any number of
/// cores: `1 / hold`, in ops/s (infinite for a lock never held).
pub fn ceiling(hold_ns: f64) -> f64 {
    if hold_ns > 0.0 {
        1e9 / hold_ns
    } else {
        f64::INFINITY
    }
}

/// The index of the lock with the lowest ceiling (the most held per life cycle), if any
/// lock is held at all.
pub fn binding(d: &Demands) -> Option<usize> {
    (d.holds_ns.iter().enumerate())
        .filter(|(_, h)| **h > 0.0)
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(i, _)| i)
}

/// Predicted ops/s for 1..=`max_workers` workers (index 0 = one worker), by exact MVA.
pub fn predict(d: &Demands, max_workers: usize) -> Vec<f64> {
    let mut queue = vec![0.0; d.holds_ns.len()];
    let mut out = Vec::with_capacity(max_workers);
    for n in 1..=max_workers {
        // Residence at each lock: its hold, plus the holds of those found queued there.
        let residence: Vec<f64> = (d.holds_ns.iter().zip(&queue))
            .map(|(h, q)| h * (1.0 + q))
            .collect();
        let cycle_ns = d.parallel_ns + residence.iter().sum::<f64>();
        let x = n as f64 / cycle_ns; // life cycles per ns
        for (q, r) in queue.iter_mut().zip(&residence) {
            *q = x * r;
        }
        out.push(x * 1e9);
    }
    out
}

/// `(predicted - measured) / measured`, in percent.
pub fn error_pct(predicted: f64, measured: f64) -> f64 {
    (predicted - measured) / measured * 100.0
}
