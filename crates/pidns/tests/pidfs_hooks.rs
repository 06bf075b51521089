//! What `free_pid` asks of pidfs: under the `Linux*` profiles every freed pid's index
//! entry is removed (`add_pid` made one for each); under `Scalable` the call is skipped
//! exactly when the pid's flags say pidfs keeps nothing for it (`PIDFS_DEAD` without
//! `PIDFS_OPENED`: reaped before any pidfd was asked for).

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
}

impl PidfsHooks for Recording {
    fn add_pid(&self, pid: &Arc<Pid>) -> Result<(), Errno> {
        pid.set_ino(self.next_ino.fetch_add(1, Ordering::Relaxed) as u64 + 1);
        Ok(())
    }
    fn remove_pid(&self, pid: &Pid) {
        self.removed.lock().unwrap().push(pid.nr());
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[test]
fn free_pid_skips_pidfs_only_for_a_pid_it_never_opened() {
    for profile in Profile::ALL {
        let ns = root(*profile, 4096);
        let hooks = Arc::new(Recording::default());
        assert!(ns.map().set_pidfs_hooks(hooks.clone()));
        let _init = spawn_init(&ns);
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
