//! Helpers shared by the behaviour tests.
#![allow(dead_code)]

use std::any::Any;
use std::sync::{Arc, Weak};
use uproc_abi::Profile;
use uproc_pidns::{Pid, PidMap, PidNamespace, alloc_pid};

/// Some `child_reaper` (the allocator only cares that one was installed).
pub(crate) fn any_reaper() -> Weak<dyn Any + Send + Sync> {
    Weak::<()>::new()
}

/// A root namespace under `profile` with `pid_max`, no pid allocated yet.
pub(crate) fn root(profile: Profile, pid_max: i32) -> Arc<PidNamespace> {
    PidNamespace::new_root(&PidMap::new(profile), pid_max).expect("valid pid_max")
}

/// Allocates the first pid (1) of `ns` and installs it as init, as `copy_process` does.
pub(crate) fn spawn_init(ns: &Arc<PidNamespace>) -> Arc<Pid> {
    let init = alloc_pid(ns, &[], false).expect("first pid of a namespace");
    assert_eq!(init.nr(), 1, "Linux: the first pid of a namespace is 1");
    ns.set_child_reaper(Some(any_reaper()));
    init
}

/// A root namespace with its init (pid 1) already running.
pub(crate) fn root_with_init(profile: Profile, pid_max: i32) -> (Arc<PidNamespace>, Arc<Pid>) {
    let ns = root(profile, pid_max);
    let init = spawn_init(&ns);
    (ns, init)
}

/// Allocates one pid in `ns` without set_tid, panicking on error.
pub(crate) fn alloc(ns: &Arc<PidNamespace>) -> Arc<Pid> {
    alloc_pid(ns, &[], false).expect("alloc_pid")
}

/// The profiles that hand out numbers in Linux's exact cyclic order. Tests that pin a
/// number sequence (cursor, wrap to 300) run under these only: `Scalable` keeps every
/// other rule but hands numbers out least recently freed first, through per-thread
/// batches.
pub(crate) const LINUX_NUMBERING: &[Profile] = &[Profile::Linux618, Profile::Linux70];
