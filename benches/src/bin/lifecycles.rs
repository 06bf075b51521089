//! `lifecycles [--pidfd] [--cgroup] [--levels L] PROFILE N`: runs exactly N bookkeeping
//! life cycles (fork, exit, reap) of one parent under PROFILE, in the fork shape the
//! flags give (`threadspawn`'s: a pidfd per fork, a cgroup, a parent L namespaces
//! deep), for instruction counting. Instructions per life cycle are deterministic
//! where wall time is not:
//!
//! ```sh
//! cargo build --release -p uproc-benches --bin lifecycles
//! for n in 10000 20000; do
//!   valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/lifecycles linux70 $n 2>&1 | grep refs
//! done   # (refs at 20000 - refs at 10000) / 10000 = instructions per life cycle
//! ```

use clap::Parser;
use uproc::Profile;
use uproc_benches::load::{ForkShape, Setup, cycle_none};

/// `lifecycles [--pidfd] [--cgroup] [--levels L] PROFILE N`.
#[derive(Parser)]
struct Cli {
    /// The fork shape, as `threadspawn` takes it.
    #[command(flatten)]
    shape: ForkShape,
    /// linux618, linux70 or scalable.
    profile: Profile,
    /// Life cycles to run.
    n: u64,
}

fn main() {
    let Cli { shape, profile, n } = Cli::parse();
    // One parent (in the root namespace unless `--levels`), as `threadspawn` runs per
    // worker.
    let setup = Setup::new(profile, shape, 1).expect("a runtime and a parent");
    for i in 0..n {
        if let Err(e) = cycle_none(&setup.parents[0], &setup.args) {
            eprintln!("lifecycles: cycle {i}: {e}");
            std::process::exit(1);
        }
    }
}
