//! Introspection: `ps`, `ps_in` a namespace, `pstree`, `/proc/PID/status` (mirrors what
//! `procps` reads from `/proc`).

mod common;

use std::sync::mpsc::channel;
use uproc::{Runtime, Spawn, TaskState};

#[test]
fn ps_shows_a_running_task_with_its_ppid_cgroup_and_name() {
    for (name, b, _g) in common::builders() {
        let rt = b.build().unwrap();
        let cg = rt.cgroup_root().mkdir("jobs").unwrap();
        let (tx, rx) = channel::<()>();
        let (up_tx, up_rx) = channel::<()>();
        let child = rt
            .spawn(Spawn::new().name("worker").cgroup(&cg), move |_| {
                up_tx.send(()).unwrap();
                rx.recv().unwrap();
                0
            })
            .unwrap();
        up_rx.recv().unwrap();
        let ps = rt.ps();
        assert_eq!(ps.len(), 2, "{name}: init and the worker");
        assert_eq!(ps[0].pid, 1);
        let w = &ps[1];
        assert_eq!(w.pid, child.pid());
        assert_eq!(w.ppid, 1, "{name}: forked from init");
        assert_eq!(w.tgid, w.pid, "{name}: a process leads its thread group");
        assert_eq!(w.state, TaskState::Running);
        assert_eq!(w.cgroup, "/jobs");
        assert_eq!(w.name, "worker");
        assert_eq!(w.nspid, vec![w.pid]);
        let status = child.task().status();
        assert!(status.contains("Name:\tworker"), "{name}: {status}");
        assert!(status.contains("PPid:\t1"), "{name}: {status}");
        tx.send(()).unwrap();
        child.wait().unwrap();
    }
}

#[test]
fn ps_in_a_nested_namespace_numbers_tasks_as_it_sees_them() {
    let rt = Runtime::new().unwrap();
    let (tx, rx) = channel();
    let (go_tx, go_rx) = channel::<()>();
    let container = rt
        .spawn(Spawn::new().name("cinit").new_pid_ns(), move |cx| {
            let (up_tx, up_rx) = channel::<()>();
            let (stop_tx, stop_rx) = channel::<()>();
            let kid = cx
                .spawn(Spawn::new().name("app"), move |_| {
                    up_tx.send(()).unwrap();
                    stop_rx.recv().unwrap();
                    0
                })
                .unwrap();
            up_rx.recv().unwrap();
            tx.send(cx.task().clone()).unwrap();
            go_rx.recv().unwrap();
            stop_tx.send(()).unwrap();
            kid.wait().unwrap();
            0
        })
        .unwrap();
    let cinit = rx.recv().unwrap();
    let inside = rt.ps_in(&cinit.pid_ns());
    assert_eq!(
        inside.len(),
        2,
        "only the namespace's tasks are visible inside it"
    );
    assert_eq!(
        (inside[0].pid, inside[0].ppid, inside[0].name.as_str()),
        (1, 0, "cinit"),
        "the container's init is pid 1, its parent invisible (ppid 0)"
    );
    assert_eq!(
        (inside[1].pid, inside[1].ppid, inside[1].name.as_str()),
        (2, 1, "app")
    );
    assert_eq!(inside[1].nspid, vec![2]);
    let outside = rt.ps();
    let app = outside.iter().find(|p| p.name == "app").unwrap();
    assert_eq!(
        app.nspid.len(),
        2,
        "NSpid: root number, then the container's"
    );
    assert_eq!(app.nspid[1], 2);
    assert_eq!(
        app.ppid,
        container.pid(),
        "seen from the root, app's parent is the container init"
    );
    let tree = rt.pstree();
    assert!(
        tree.contains(&format!("cinit({})───app({})", container.pid(), app.pid)),
        "{tree}"
    );
    go_tx.send(()).unwrap();
    assert_eq!(container.wait().unwrap().exited(), Some(0));
    assert_eq!(rt.ps().len(), 1);
}

#[test]
fn pstree_renders_siblings_with_box_drawing() {
    let procs = |v: &[(i32, i32, &str)]| {
        v.iter()
            .map(|&(pid, ppid, name)| uproc::ProcInfo {
                pid,
                ppid,
                tgid: pid,
                state: TaskState::Running,
                cgroup: "/".into(),
                name: name.into(),
                nspid: vec![pid],
            })
            .collect::<Vec<_>>()
    };
    let t = uproc::ps::pstree(&procs(&[
        (1, 0, "init"),
        (2, 1, "a"),
        (3, 1, "b"),
        (4, 2, "c"),
        (5, 2, "d"),
        (6, 1, "e"),
    ]));
    assert_eq!(
        t,
        "init(1)─┬─a(2)─┬─c(4)\n        │      └─d(5)\n        ├─b(3)\n        └─e(6)\n"
    );
    assert_eq!(uproc::ps::pstree(&procs(&[(1, 0, "init")])), "init(1)\n");
}
