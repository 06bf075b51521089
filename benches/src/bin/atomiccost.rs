//! `atomiccost PROFILE N PAD`: times N bookkeeping life cycles (fork, exit, reap) of one
//! parent under PROFILE, each preceded by PAD uncontended atomic read-modify-writes on
//! cache lines of their own that only this thread writes, and prints the wall time per
//! life cycle.
//!
//! The marginal cost of one atomic *inside* the life cycle, on this machine, is the
//! difference of two runs' times over the difference of their pads;
//! `benches/atomic-cost.sh` alternates the runs and does the arithmetic. (A binary of
//! its own: the pad's loop in `lifecycles` would move that binary's instruction count,
//! which the documentation quotes.)

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use uproc::Profile;
use uproc_benches::load::{Setup, cycle_none};

/// One padding counter, alone on its line pair (adjacent-line prefetch included), so
/// the pad's atomics meet no other access.
#[repr(align(128))]
struct Line(AtomicU64);

/// Padding lines, used round-robin: consecutive pad atomics hit different lines, as
/// the life cycle's own atomics do.
const LINES: usize = 16;

fn main() {
    let mut args = std::env::args().skip(1);
    let profile: Option<Profile> = args.next().and_then(|p| p.parse().ok());
    let n: Option<u64> = args.next().and_then(|n| n.parse().ok());
    let pad: Option<usize> = args.next().and_then(|p| p.parse().ok());
    let (Some(profile), Some(n), Some(pad)) = (profile, n, pad) else {
        eprintln!("usage: atomiccost linux618|linux70|scalable N PAD");
        std::process::exit(2);
    };
    let lines: Vec<Line> = (0..LINES).map(|_| Line(AtomicU64::new(0))).collect();
    // One parent in the root namespace, plain forks: what `threadspawn` runs per worker.
    let setup = Setup::new(profile, Default::default(), 1).expect("a runtime and a parent");
    let start = Instant::now();
    for i in 0..n {
        for k in 0..pad {
            lines[k % LINES].0.fetch_add(1, Ordering::AcqRel);
        }
        if let Err(e) = cycle_none(&setup.parents[0], &setup.args) {
            eprintln!("atomiccost: cycle {i}: {e}");
            std::process::exit(1);
        }
    }
    let ns = start.elapsed().as_nanos() as f64 / n.max(1) as f64;
    // Every pad atomic ran (and none could be optimised away: their sum is read).
    let padded: u64 = lines.iter().map(|l| l.0.load(Ordering::Relaxed)).sum();
    assert_eq!(padded, n * pad as u64, "every pad atomic ran");
    println!("atomiccost {profile} n={n} pad={pad}: {ns:.1} ns per life cycle");
}
