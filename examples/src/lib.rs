//! The uproc tutorial.
//!
//! The lessons live in `examples/examples/NN_name.rs`, numbered in reading order; each
//! is a standalone program that checks its own results and exits non-zero if they are
//! wrong (`cargo run -p uproc-examples --example 01_spawn_and_wait`). The `tour` binary
//! runs them all (`cargo run -p uproc-examples --bin tour`). See `examples/README.md`.
//!
//! This library is the scaffolding the lessons share, so that each lesson's file holds
//! only what it teaches: a lesson is a `pub fn check() -> Lesson` that returns a
//! one-line summary of what it showed, uses [`ensure!`] for its checks, and has
//! `fn main() { uproc_examples::main(check) }`. The tour includes every lesson file as a
//! module and calls the same `check`.
#![forbid(unsafe_code)]

use std::error::Error;
use std::time::{Duration, Instant};

/// Why a lesson failed: any error (an [`uproc::Errno`], a failed [`ensure!`], ...).
pub type Failure = Box<dyn Error>;

/// What a lesson's `check` returns: the one-line summary of what it showed.
pub type Lesson = Result<String, Failure>;

/// Fails the lesson (returns `Err` with the formatted message) when `cond` is false.
///
/// ```
/// use uproc_examples::{Lesson, ensure};
/// fn check(pid: i32) -> Lesson {
///     ensure!(pid == 1, "init must be pid 1, was {pid}");
///     Ok("init is pid 1".into())
/// }
/// assert!(check(1).is_ok());
/// assert_eq!(check(2).unwrap_err().to_string(), "init must be pid 1, was 2");
/// ```
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !($cond) {
            return Err(format!($($msg)+).into());
        }
    };
}

/// Installs a `tracing` subscriber that prints to stderr what `RUST_LOG` selects
/// (nothing when it is unset), e.g. `RUST_LOG=uproc=debug` for the facade's spawns,
/// kills and reaps inside `task{pid=..}` spans, `RUST_LOG=uproc=debug,uproc_tasklist=debug`
/// for fork/exit/reap too. The lessons' `main` and the tour call it.
pub fn init_tracing() {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    use tracing_subscriber::filter::LevelFilter;
    use tracing_subscriber::fmt::format::FmtSpan;
    let filter = EnvFilter::builder()
        .with_default_directive(LevelFilter::OFF.into())
        .from_env_lossy();
    // Fails only if a subscriber is already installed, which is then kept.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        // One line when a `task` span ends (with its busy/idle time); events inside a
        // body are prefixed with the span, `task{pid=7}:`.
        .with_span_events(FmtSpan::CLOSE)
        .try_init();
}

/// The `main` of every lesson: installs the `RUST_LOG` subscriber ([`init_tracing`]),
/// runs `check` and prints its summary, or prints why it failed and exits with
/// status 1 (what CI looks at).
pub fn main(check: fn() -> Lesson) {
    init_tracing();
    match check() {
        Ok(summary) => println!("{summary}"),
        Err(e) => {
            eprintln!("FAILED: {e}");
            std::process::exit(1);
        }
    }
}

/// Whether `cond` comes to hold within ten seconds, checked every millisecond: for
/// state another thread changes without an event to wait on (a lesson's fork bomb
/// settling, init reaping an orphan in the background).
pub fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(10);
    while !cond() {
        if Instant::now() > end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}
