//! What `free_pid` asks of pidfs: under the `Linux*` profiles every freed pid's index
//! entry is removed (`add_pid` made one for each); under `Scalable` the call is skipped
//! exactly when the pid's flags say pidfs keeps nothing for it (`PIDFS_DEAD` without
//! `PIDFS_OPENED`: reaped before any pidfd was asked for). And what the pid's drop
//! hands pidfs: the value of its pidfs slot, once, and nothing for a pid without one.

mod common;

use std::any::Any;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::{root, spawn_init};
use uproc_abi::{Errno, Profile};
use uproc_pidns::{PIDFS_DEAD, PIDFS_OPENED, Pid, PidfsHooks, alloc_pid, free_pid};

/// Hooks that record which pids `free_pid` asked to remove.
#[derive(Default)]
struct Recording {
    removed: Mutex<Vec<i32>>,
    next_ino: AtomicUsize,
    /// The slot values `release_state` got (each a `usize` here).
    released: Mutex<Vec<usize>>,
}

impl PidfsHooks for Recording {
    fn add_pid(&self, pid: &Arc<Pid>) -> Result<(), Errno> {
        pid.set_ino(self.next_ino.fetch_add(1, Ordering::Relaxed) as u64 + 1);
        Ok(())
    }
    fn remove_pid(&self, pid: &Pid) {
        self.removed.lock().unwrap().push(pid.nr());
    }
    fn release_state(&self, state: uproc_pidns::Attachment) {
        let v = *state.downcast_ref::<usize>().expect("the test's usize");
        self.released.lock().unwrap().push(v);
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A root namespace of `profile` whose map's pidfs hooks record what they are asked,
/// with its init.
fn recorded_root(profile: Profile) -> (Arc<uproc_pidns::PidNamespace>, Arc<Recording>, Arc<Pid>) {
    let ns = root(profile, 4096);
    let hooks = Arc::new(Recording::default());
    assert!(ns.map().set_pidfs_hooks(hooks.clone()));
    let init = spawn_init(&ns);
    (ns, hooks, init)
}

#[test]
fn free_pid_skips_pidfs_only_for_a_pid_it_never_opened() {
    for profile in Profile::ALL {
        let (ns, hooks, _init) = recorded_root(*profile);
        let mut expect = Vec::new();
        for flags in [0, PIDFS_DEAD, PIDFS_OPENED, PIDFS_DEAD | PIDFS_OPENED] {
            let pid = alloc_pid(&ns, &[], false).expect("alloc_pid");
            pid.pidfs_flags().fetch_or(flags, Ordering::AcqRel);
            if *profile != Profile::Scalable || flags & (PIDFS_DEAD | PIDFS_OPENED) != PIDFS_DEAD {
                expect.push(pid.nr());
            }
            free_pid(&pid);
        }
        assert_eq!(*hooks.removed.lock().unwrap(), expect, "{profile:?}");
    }
}

#[test]
fn the_pids_drop_hands_its_pidfs_state_to_the_hooks_once() {
    for profile in Profile::ALL {
        let (ns, hooks, _init) = recorded_root(*profile);
        // A pid without pidfs state: nothing is handed over.
        let plain = alloc_pid(&ns, &[], false).expect("alloc_pid");
        free_pid(&plain);
        drop(plain);
        assert!(hooks.released.lock().unwrap().is_empty(), "{profile:?}");
        // A pid with state: handed over when the last holder drops the pid (not at
        // `free_pid`: a pidfd may outlive the numbers), the state still alive.
        let pid = alloc_pid(&ns, &[], false).expect("alloc_pid");
        let state: uproc_pidns::Attachment = Arc::new(41usize);
        pid.pidfs_slot().get_or_init(|| state.clone());
        let holder = pid.clone();
        free_pid(&pid);
        drop(pid);
        assert!(
            hooks.released.lock().unwrap().is_empty(),
            "{profile:?}: held"
        );
        drop(holder);
        assert_eq!(*hooks.released.lock().unwrap(), [41], "{profile:?}");
        assert_eq!(
            Arc::strong_count(&state),
            1,
            "{profile:?}: the hooks dropped theirs"
        );
    }
}

#[test]
fn without_pidfs_hooks_the_pids_drop_drops_its_state() {
    for profile in Profile::ALL {
        let ns = root(*profile, 4096);
        let _init = spawn_init(&ns);
        let pid = alloc_pid(&ns, &[], false).expect("alloc_pid");
        let state: uproc_pidns::Attachment = Arc::new(42usize);
        pid.pidfs_slot().get_or_init(|| state.clone());
        assert_eq!(Arc::strong_count(&state), 2);
        free_pid(&pid);
        drop(pid);
        assert_eq!(
            Arc::strong_count(&state),
            1,
            "{profile:?}: dropped, not kept"
        );
    }
}
