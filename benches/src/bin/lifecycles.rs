//! `lifecycles PROFILE N [SAMPLE_ONE_IN]`: runs exactly N bookkeeping life cycles (fork, exit, reap) of
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

use uproc::{CloneArgs, Profile, Runtime};
use uproc_benches::load::cycle_none;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let profile = args.get(1).and_then(|p| p.parse::<Profile>().ok());
    let (Some(profile), Some(n)) = (profile, args.get(2).and_then(|n| n.parse::<u64>().ok()))
    else {
        eprintln!("usage: lifecycles PROFILE N [SAMPLE_ONE_IN]");
        std::process::exit(2);
    };
    // Optional third argument: time one lock acquisition in this many (0: counts only).
    if let Some(n) = args.get(3).and_then(|n| n.parse().ok()) {
        uproc_abi::lockstat::set_sample_one_in(n);
    }
    uproc_benches::init_tracing();
    let rt = Runtime::builder()
        .profile(profile)
        .build()
        .expect("runtime");
    let parent = rt
        .init()
        .fork(&CloneArgs::default())
        .expect("fork the parent");
    let args = CloneArgs::default();
    for i in 0..n {
        if let Err(e) = cycle_none(&parent, &args) {
            eprintln!("lifecycles: cycle {i}: {e}");
            std::process::exit(1);
        }
    }
}
