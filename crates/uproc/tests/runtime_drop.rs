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
            // The executor threads that ran the bodies let go of their handles (the
            // runtime's, the task's and through it its pid and namespaces) just after
            // the waits returned, on their own schedule: each is given time to.
            let freed = |what: &str, gone: &dyn Fn() -> bool| {
                assert!(wait_until(10, gone), "{name}/{round}: {what} is freed");
            };
            freed("the System", &|| weak_sys.upgrade().is_none());
            freed("the root namespace", &|| weak_ns.upgrade().is_none());
            freed("init's pid", &|| weak_pid.upgrade().is_none());
            freed("the cgroup hierarchy", &|| weak_cg.upgrade().is_none());
            freed("init's task", &|| weak_init.upgrade().is_none());
        }
    }
}
