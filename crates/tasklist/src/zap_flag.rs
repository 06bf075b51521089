//! The runtime's "a closed namespace may have emptied" flag (`zap_check`).
//!
//! A namespace init whose namespace still has other pids stays a non-reapable zombie
//! (`zap_pid_ns_processes`); whoever frees one of those pids must make some thread run
//! the init's re-check (`try_finish_zap`) *after* that free is visible to it. Two kinds
//! of thread raise the flag — the free that found the closed namespace down to 2 or 1
//! pids (the reaper wakeup of `free_pid`), and the zap itself once the init is queued —
//! and whoever sees it raised takes it ([`ZapFlag::take`]) and re-checks every queued
//! init.
//!
//! Why raising is a read-modify-write: the thread that takes the flag must see every
//! free made before any raise it consumes. A plain `store(true, Release)` heads its own
//! release sequence and ends the previous one: with two raises (a reaper's, then the
//! zap's) before one take, the take would synchronise with the zap's raise alone, could
//! count the namespace without the reaper's free, and the reaper — seeing the flag
//! already taken — would skip its own re-check: the init stays a zombie forever. A
//! `fetch_or` continues every earlier raise's release sequence, so the take
//! synchronises with all of them (`tests/loom_zap_check.rs` fails with a plain store).
//! Only the slow paths raise it; the common reap only loads it.

// `pub` for the loom model (`loom_model::zap_check`), crate-private otherwise.
#![cfg_attr(not(loom), allow(unreachable_pub))]

use crate::sync::{AtomicBool, Ordering};

/// See the module essay.
#[derive(Debug, Default)]
pub struct ZapFlag(AtomicBool);

impl ZapFlag {
    /// Some closed namespace may have emptied: everything this thread did before (its
    /// frees) is visible to the thread that takes the flag.
    pub fn raise(&self) {
        self.0.fetch_or(true, Ordering::AcqRel);
    }

    /// Whether the flag is raised (a plain load: the common reap reads the line and
    /// never writes it).
    #[inline]
    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// Takes the flag: true if it was raised, and then every raise it consumed
    /// happened before this returns.
    pub fn take(&self) -> bool {
        self.0.swap(false, Ordering::AcqRel)
    }
}
