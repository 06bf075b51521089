//! Dropping the last handle of a runtime frees everything it built: the System, its
//! namespaces, pids and tasks (no `Arc` cycle through a namespace, a pid or a cgroup).

mod common;

use common::wait_until;
use std::sync::Arc;
use uproc::{Profile, Runtime, Spawn, Task};

#[test]
fn dropping_the_last_runtime_handle_frees_system_namespaces_pids_and_tasks() {
    for &name in Profile::ALL {
        for round in 0..200 {
            let rt = Runtime::builder().profile(name).build().unwrap();
            let child = rt.spawn(Spawn::new(), |_| 7).unwrap();
            assert_eq!(child.wait().unwrap().exited(), Some(7));
            let nested = rt.spawn(Spawn::new().new_pid_ns(), |_| 0).unwrap();
            assert_eq!(nested.wait().unwrap().exited(), Some(0));
            let init: Task = rt.init();
            let weak_sys = Arc::downgrade(rt.system());
            let weak_ns = Arc::downgrade(rt.system().root_ns());
            let weak_pid = Arc::downgrade(init.struct_pid());
            let weak_cg = Arc::downgrade(rt.system().cgroups());
            let weak_init = init.downgrade();
            drop((rt, init));
            // The executor thread that ran the last body lets go of its runtime handle
            // just after the wait returned.
            assert!(
                wait_until(10, || weak_sys.upgrade().is_none()),
                "{name}/{round}: the System is freed"
            );
            assert!(
                weak_ns.upgrade().is_none(),
                "{name}/{round}: the root namespace is freed"
            );
            assert!(
                weak_pid.upgrade().is_none(),
                "{name}/{round}: init's pid is freed"
            );
            assert!(
                weak_cg.upgrade().is_none(),
                "{name}/{round}: the cgroups are freed"
            );
            assert!(
                weak_init.upgrade().is_none(),
                "{name}/{round}: init's task is freed"
            );
        }
    }
}
