//! The uproc tutorial.
//!
//! The lessons live in `examples/examples/NN_name.rs`, numbered in reading order; each
//! is a standalone program that checks its own results and exits non-zero if they are
//! wrong (`cargo run -p uproc-examples --example 01_spawn_and_wait`). The `tour` binary
//! runs them all (`cargo run -p uproc-examples --bin tour`). See `examples/README.md`.
#![forbid(unsafe_code)]
