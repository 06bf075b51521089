//! `spawncycles PROFILE BODY N`: runs exactly N life cycles of one parent under PROFILE
//! with BODY (`none`, `tokio`, `thread`, or `bare`: a plain `tokio::spawn(async {})`
//! awaited, no uproc at all), for instruction counting of what the facade adds:
//!
//! ```sh
//! cargo build --release -p uproc-benches --bin spawncycles
//! for n in 10000 20000; do
//!   valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/spawncycles scalable tokio $n 2>&1 | grep refs
//! done   # (refs at 20000 - refs at 10000) / 10000 = instructions per life cycle
//! ```
//!
//! The tokio bodies run as `threadspawn --body tokio` runs them: in one task of a
//! one-worker multi-thread runtime.

use uproc::Profile;
use uproc_benches::load::{Setup, cycle_none, cycle_thread, cycle_tokio};

fn main() {
    let mut args = std::env::args().skip(1);
    let profile: Option<Profile> = args.next().and_then(|p| p.parse().ok());
    let body = args.next();
    let n: Option<u64> = args.next().and_then(|n| n.parse().ok());
    let (Some(profile), Some(body), Some(n)) = (profile, body, n) else {
        eprintln!("usage: spawncycles linux618|linux70|scalable none|tokio|thread|bare N");
        std::process::exit(2);
    };
    let setup = Setup::new(profile, Default::default(), 1).expect("a runtime and a parent");
    let (rt, parent, args) = (
        setup.rt.clone(),
        setup.parents[0].clone(),
        setup.args.clone(),
    );
    let tokio_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .expect("a tokio runtime");
    let result = match body.as_str() {
        "none" => (0..n).try_for_each(|_| cycle_none(&parent, &args)),
        "thread" => (0..n).try_for_each(|_| cycle_thread(&rt, &parent, &args)),
        "tokio" => tokio_rt
            .block_on(tokio_rt.spawn(async move {
                for _ in 0..n {
                    cycle_tokio(&rt, &parent, &args).await?;
                }
                Ok(())
            }))
            .unwrap_or_else(|e| Err(e.to_string())),
        "bare" => tokio_rt
            .block_on(tokio_rt.spawn(async move {
                for _ in 0..n {
                    tokio::spawn(async {}).await.map_err(|e| e.to_string())?;
                }
                Ok(())
            }))
            .unwrap_or_else(|e| Err(e.to_string())),
        other => Err(format!("unknown body {other}")),
    };
    if let Err(e) = result {
        eprintln!("spawncycles: {e}");
        std::process::exit(1);
    }
}
