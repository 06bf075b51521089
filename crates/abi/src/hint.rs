//! Branch hints for the life cycle's hot functions, on stable Rust.
//!
//! Without a profile, the compiler lays a function's blocks out in source order and
//! treats both sides of a branch alike, so every error return, race retry and rare
//! case sits between the instructions every life cycle runs: the hot path spans about
//! twice the 64-byte code lines its instructions need (`benches/icache.sh`), jumps
//! over the rare code, and keeps registers free for it. Laying the rare branches of
//! the fork and the exit out of line took ~50 instructions off the life cycle
//! (crates/tasklist/IMPLEMENTATION.md, "Rare branches out of line"); what the lines
//! themselves cost in instruction-cache misses is measured in benches/IMPLEMENTATION.md,
//! "Code that does not fit" (less than their count suggests).
//!
//! [`cold_path`] tells the compiler which side is rare: a block that calls it, and
//! every block only it leads to, is placed after the function's hot code. The call
//! itself stays (it is what carries the hint through inlining) and costs a call and a
//! return on the rare side only. `std::hint::cold_path` does the same without the
//! call, from Rust 1.95 on; this crate supports 1.85.

/// Marks the branch that calls it as rarely taken (an error, a lost race, a rare
/// state): the compiler moves it, and what only it leads to, out of the hot code.
///
/// Only for branches rare in every use of the library, not only in the benchmarks: a
/// managed-mode hook or a process with children is common for some embeddings, and is
/// not marked.
#[cold]
#[inline(never)]
pub fn cold_path() {}
