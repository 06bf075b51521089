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

use uproc::Profile;
use uproc_benches::load::{ForkShape, Setup, cycle_none};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Optional shape flags first (as `threadspawn` spells them), then PROFILE N.
    let mut shape = ForkShape::default();
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--pidfd" => shape.pidfd = true,
            "--cgroup" => shape.cgroup = true,
            "--levels" => match it.next().and_then(|l| l.parse().ok()) {
                Some(l) if l <= 32 => shape.levels = l,
                _ => usage(),
            },
            _ => rest.push(a),
        }
    }
    let profile: Option<Profile> = rest.first().and_then(|p| p.parse().ok());
    let n: Option<u64> = rest.get(1).and_then(|n| n.parse().ok());
    let (Some(profile), Some(n), 2) = (profile, n, rest.len()) else {
        usage()
    };
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

fn usage() -> ! {
    eprintln!("usage: lifecycles [--pidfd] [--cgroup] [--levels L] linux618|linux70|scalable N");
    std::process::exit(2);
}
