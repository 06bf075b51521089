//! Shared helpers for the behaviour tests.
#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;
use uproc_abi::{CloneFlags, Profile, WaitOptions};
use uproc_tasklist::{CloneArgs, System, SystemConfig, Task, WaitId, WaitInfo};

pub fn system() -> Arc<System> {
    System::new(SystemConfig::default()).expect("default config is valid")
}

pub fn system_with(profile: Profile) -> Arc<System> {
    System::new(SystemConfig {
        profile,
        ..SystemConfig::default()
    })
    .expect("valid config")
}

/// A default system whose init leaves reparented orphans for the caller to wait for.
pub fn system_without_orphan_reaping() -> Arc<System> {
    System::new(SystemConfig {
        reap_orphans: false,
        ..SystemConfig::default()
    })
    .expect("valid config")
}

pub fn fork(t: &Task) -> Task {
    t.fork(&CloneArgs::default()).expect("plain fork succeeds")
}

pub fn fork_flags(t: &Task, flags: CloneFlags) -> Task {
    t.fork(&CloneArgs {
        flags,
        ..Default::default()
    })
    .expect("fork succeeds")
}

pub fn thread(t: &Task) -> Task {
    fork_flags(t, CloneFlags::NEW_THREAD)
}

pub fn reap(parent: &Task, child: &Task) -> WaitInfo {
    parent
        .wait(WaitId::Pid(parent.pid_of(child)), WaitOptions::EXITED)
        .expect("child is waitable")
        .expect("blocking wait returns Some")
}

/// Every pid of the root namespace belongs to a live or zombie task or is a pgrp/sid.
pub fn assert_at_rest(sys: &System) {
    let live = sys.nr_tasks();
    assert_eq!(
        sys.root_ns().nr_allocated(),
        live,
        "at rest every allocated pid belongs to an unreleased task"
    );
}

/// Iterations of a race test: `UPROC_RACE_ITERS` if set, else `release` in an optimised
/// build and `debug` in a debug one (the window is hit often enough that the debug count
/// still catches the bug with high probability; the release count is the full hammer).
pub fn race_iterations(release: usize, debug: usize) -> usize {
    std::env::var("UPROC_RACE_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(debug_assertions) {
            debug
        } else {
            release
        })
}
