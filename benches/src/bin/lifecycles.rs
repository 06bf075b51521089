//! `lifecycles PROFILE N`: runs exactly N bookkeeping life cycles (fork, exit, reap) of
//! one parent under PROFILE, for instruction counting. Instructions per life cycle are
//! deterministic where wall time is not:
//!
//! ```sh
//! cargo build --release -p uproc-benches --bin lifecycles
//! for n in 10000 20000; do
//!   valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/lifecycles linux70 $n 2>&1 | grep refs
//! done   # (refs at 20000 - refs at 10000) / 10000 = instructions per life cycle
//! ```

use uproc::Profile;
use uproc_benches::load::{Setup, cycle_none};

fn main() {
    let mut args = std::env::args().skip(1);
    let profile: Option<Profile> = args.next().and_then(|p| p.parse().ok());
    let n: Option<u64> = args.next().and_then(|n| n.parse().ok());
    let (Some(profile), Some(n)) = (profile, n) else {
        eprintln!("usage: lifecycles linux618|linux70|scalable N");
        std::process::exit(2);
    };
    // One parent in the root namespace, plain forks: what `threadspawn` runs per worker.
    let setup = Setup::new(profile, Default::default(), 1).expect("a runtime and a parent");
    for i in 0..n {
        if let Err(e) = cycle_none(&setup.parents[0], &setup.args) {
            eprintln!("lifecycles: cycle {i}: {e}");
            std::process::exit(1);
        }
    }
}
