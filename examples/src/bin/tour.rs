//! The tour: runs every tutorial example in reading order and prints one line each.
//!
//! `cargo run -p uproc-examples --bin tour` — exits non-zero if any example fails.
//! `RUST_LOG=uproc=debug` (or any `tracing` filter) prints the spans and events the
//! examples cause, on stderr.

use std::time::Instant;
use uproc_examples::Lesson;

macro_rules! examples {
    ($($modname:ident => $file:literal,)*) => {
        $(
            #[allow(dead_code, unreachable_pub)]
            #[path = $file]
            mod $modname;
        )*
        /// (name, check function) in reading order.
        const EXAMPLES: &[(&str, fn() -> Lesson)] = &[
            $((stringify!($modname), $modname::check),)*
        ];
    };
}

examples! {
    ex01_spawn_and_wait => "../../examples/01_spawn_and_wait.rs",
    ex02_exit_status_and_signals => "../../examples/02_exit_status_and_signals.rs",
    ex03_pid_namespaces => "../../examples/03_pid_namespaces.rs",
    ex04_pidfds => "../../examples/04_pidfds.rs",
    ex05_cgroup_limits => "../../examples/05_cgroup_limits.rs",
    ex06_orphans_and_subreapers => "../../examples/06_orphans_and_subreapers.rs",
    ex07_tokio_10k_tasks => "../../examples/07_tokio_10k_tasks.rs",
    ex08_supervisor => "../../examples/08_supervisor.rs",
    ex09_lock_profiles => "../../examples/09_lock_profiles.rs",
    ex10_green_threads_may => "../../examples/10_green_threads_may.rs",
    ex11_any_executor => "../../examples/11_any_executor.rs",
}

/// Printed after a tour that passed: where a reader goes from here.
const WHERE_NEXT: &str = "\
where next:
  - read one example:   examples/examples/NN_name.rs (each checks what it prints)
  - run one example:    cargo run -p uproc-examples --example 10_green_threads_may
  - watch it happen:    RUST_LOG=uproc=debug cargo run --release -p uproc-examples --bin tour
  - the API:            cargo doc -p uproc --all-features --open (start at the crate page)
  - your own runtime:   implement uproc::Executor (execute, execute_async, coroutine_hooks)
  - the numbers:        benches/README.md (threadspawn, lock counts per profile)";

fn main() {
    uproc_examples::init_tracing();
    let start = Instant::now();
    let mut failed = 0;
    for (name, check) in EXAMPLES {
        let name = name.trim_start_matches("ex");
        let t = Instant::now();
        // A panic inside an example counts as its failure, not the tour's end.
        let result =
            std::panic::catch_unwind(check).unwrap_or_else(|_| Err("the example panicked".into()));
        let ms = t.elapsed().as_millis();
        match result {
            Ok(shown) => println!("OK     {name} ({ms} ms): {shown}"),
            Err(e) => {
                failed += 1;
                println!("FAILED {name} ({ms} ms): {e}");
            }
        }
    }
    println!(
        "tour: {} of {} examples OK in {} ms",
        EXAMPLES.len() - failed,
        EXAMPLES.len(),
        start.elapsed().as_millis()
    );
    if failed > 0 {
        std::process::exit(1);
    }
    println!("\n{WHERE_NEXT}");
}
