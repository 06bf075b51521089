//! Shared helpers for the behaviour tests.
#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;
use uproc_abi::{CloneFlags, Profile, WaitOptions};
use uproc_tasklist::{CloneArgs, System, SystemConfig, Task, WaitId, WaitInfo};

/// A system under the current test's [`profile`].
pub fn system() -> Arc<System> {
    system_with(profile())
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
        profile: profile(),
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

/// `tasklist_lock` write acquisitions per life cycle (fork, exit, reap): Linux's three,
/// none under `Scalable` (per-process locks only).
pub fn tasklist_writes_per_cycle(p: Profile) -> u64 {
    match p {
        Profile::Linux618 | Profile::Linux70 => 3,
        Profile::Scalable => 0,
    }
}

thread_local! {
    /// The profile [`system`] and friends build with, set by [`each_profile`].
    static PROFILE: std::cell::Cell<Profile> = std::cell::Cell::new(Profile::default());
}

/// The profile the current test iteration runs under.
pub fn profile() -> Profile {
    PROFILE.with(|p| p.get())
}

/// Runs `test` once under each profile of `profiles`; a failure names the profile.
pub fn each_profile_of(profiles: &[Profile], test: fn()) {
    struct Named(Profile);
    impl Drop for Named {
        fn drop(&mut self) {
            if std::thread::panicking() {
                eprintln!("(the failure above ran under profile {})", self.0);
            }
        }
    }
    for &p in profiles {
        PROFILE.with(|c| c.set(p));
        let named = Named(p);
        test();
        drop(named);
    }
    PROFILE.with(|c| c.set(Profile::default()));
}

/// Runs `test` under every profile (`Profile::ALL`).
pub fn each_profile(test: fn()) {
    each_profile_of(Profile::ALL, test);
}

/// The profiles that hand out pid numbers in Linux's order (lowest free number after
/// the last one given): tests that pin exact numbers run only under these.
pub const LINUX_NUMBERING: &[Profile] = &[Profile::Linux618, Profile::Linux70];

/// Declares each listed function (a test body, without `#[test]`) as a test run under
/// every profile; `f = linux_numbering` runs `f` under [`LINUX_NUMBERING`] only.
#[allow(unused_macros)]
macro_rules! every_profile {
    ($($(#[$m:meta])* $name:ident $(= $only:ident)?),* $(,)?) => {
        mod every_profile {
            $(
                $(#[$m])*
                #[test]
                fn $name() {
                    every_profile!(@run $($only)? super::$name);
                }
            )*
        }
    };
    (@run linux_numbering $f:path) => {
        crate::common::each_profile_of(crate::common::LINUX_NUMBERING, $f)
    };
    (@run $f:path) => {
        crate::common::each_profile($f)
    };
}
