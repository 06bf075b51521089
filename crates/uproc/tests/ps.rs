//! Introspection: `ps`, `ps_in` a namespace, `pstree`, `/proc/PID/status` (mirrors what
//! `procps` reads from `/proc`).

#[macro_use]
mod common;

use std::sync::mpsc::channel;
use uproc::{
    CloneArgs, CloneFlags, Errno, FileHandle, PidfdFlags, Spawn, TaskState, WaitId, WaitOptions,
};

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

fn ps_in_a_nested_namespace_numbers_tasks_as_it_sees_them() {
    let rt = common::builder().build().unwrap();
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

fn ps_opens_no_pidfd_for_the_tasks_it_lists() {
    let rt = common::builder().build().unwrap();
    let init = rt.init();
    // Two bare tasks (forked without CLONE_PIDFD): nothing has registered them with pidfs.
    let listed = init.fork(&CloneArgs::default()).unwrap();
    let opened = init.fork(&CloneArgs::default()).unwrap();
    let _fd = init.pidfd_open(opened.pid(), PidfdFlags::empty()).unwrap();
    assert_eq!(rt.ps().len(), 3);
    assert_eq!(rt.ps_in(&init.pid_ns()).len(), 3);
    let handle = |t: &uproc::Task| {
        FileHandle::from_bytes(FileHandle::TYPE_KERNFS, &t.struct_pid().ino().to_le_bytes())
            .unwrap()
    };
    assert_eq!(
        rt.open_by_handle(&init, &handle(&listed), PidfdFlags::empty())
            .unwrap_err(),
        Errno::ESTALE,
        "reading /proc makes no pidfd: a pid that never had one does not decode"
    );
    assert!(
        rt.open_by_handle(&init, &handle(&opened), PidfdFlags::empty())
            .is_ok(),
        "a pid that had a pidfd decodes (the control)"
    );
    for t in [&listed, &opened] {
        t.exit(0);
        init.wait(WaitId::Pid(t.pid()), WaitOptions::EXITED)
            .unwrap();
    }
}

fn ps_numbers_a_thread_and_its_parent_as_each_namespace_sees_them() {
    let rt = common::builder().build().unwrap();
    let init = rt.init();
    let cinit = init
        .fork(&CloneArgs {
            flags: CloneFlags::NEWPID,
            ..Default::default()
        })
        .unwrap();
    let thread = cinit
        .fork(&CloneArgs {
            flags: CloneFlags::THREAD | CloneFlags::SIGHAND | CloneFlags::VM,
            ..Default::default()
        })
        .unwrap();
    let kid = cinit.fork(&CloneArgs::default()).unwrap();
    let ids = |ps: &[uproc::ProcInfo], t: &uproc::Task, ns: &uproc::PidNamespace| {
        let nr = t.struct_pid().nr_in(ns);
        let p = ps.iter().find(|p| p.pid == nr).expect("listed");
        (p.pid, p.tgid, p.ppid)
    };
    let inside = rt.ps_in(&cinit.pid_ns());
    let ns = cinit.pid_ns();
    assert_eq!(
        inside.len(),
        3,
        "the container's init, its thread, its child"
    );
    assert_eq!(
        ids(&inside, &cinit, &ns),
        (1, 1, 0),
        "a namespace init's parent is invisible inside: PPid 0"
    );
    assert_eq!(
        ids(&inside, &thread, &ns),
        (2, 1, 0),
        "a thread: its own pid, its leader's tgid, the group's parent (invisible)"
    );
    assert_eq!(ids(&inside, &kid, &ns), (3, 3, 1), "the child of pid 1");
    let root = init.pid_ns();
    let outside = rt.ps();
    let c = cinit.struct_pid().nr_in(&root);
    assert_eq!(
        ids(&outside, &cinit, &root),
        (c, c, 1),
        "from the root the container init is an ordinary child of init"
    );
    assert_eq!(
        ids(&outside, &thread, &root),
        (thread.struct_pid().nr_in(&root), c, 1)
    );
    assert_eq!(ids(&outside, &kid, &root).2, c);
    kid.exit(0);
    cinit
        .wait(WaitId::Pid(kid.pid()), WaitOptions::EXITED)
        .unwrap();
    thread.exit(0);
    cinit.exit(0);
    init.wait(WaitId::Pid(c), WaitOptions::EXITED).unwrap();
    assert_eq!(rt.ps().len(), 1);
}

/// A zombie left in a cgroup that was then removed shows its path with " (deleted)",
/// as `/proc/PID/cgroup` does on the default hierarchy (`proc_cgroup_show`).
fn ps_marks_the_removed_cgroup_of_a_zombie_deleted() {
    let rt = common::builder().build().unwrap();
    let cg = rt.cgroup_root().mkdir("gone").unwrap();
    let init = rt.init();
    let z = init
        .fork(&CloneArgs {
            flags: CloneFlags::INTO_CGROUP,
            cgroup: Some(cg.clone()),
            ..Default::default()
        })
        .unwrap();
    z.exit(0);
    cg.rmdir()
        .expect("a zombie does not keep its cgroup populated");
    let ps = rt.ps();
    let shown = ps.iter().find(|p| p.pid == z.pid()).expect("the zombie");
    assert_eq!(shown.state, TaskState::Zombie);
    assert_eq!(shown.cgroup, "/gone (deleted)");
    init.wait(WaitId::Pid(z.pid()), WaitOptions::EXITED)
        .unwrap();
}

every_profile!(
    ps_marks_the_removed_cgroup_of_a_zombie_deleted,
    ps_shows_a_running_task_with_its_ppid_cgroup_and_name,
    ps_in_a_nested_namespace_numbers_tasks_as_it_sees_them,
    pstree_renders_siblings_with_box_drawing,
    ps_opens_no_pidfd_for_the_tasks_it_lists,
    ps_numbers_a_thread_and_its_parent_as_each_namespace_sees_them,
);

/// A process list of `n` entries: pid `i + 1`'s parent is `parent(i)` (0: a root).
fn listing(n: usize, mut parent: impl FnMut(usize) -> i32) -> Vec<uproc::ProcInfo> {
    (0..n)
        .map(|i| uproc::ProcInfo {
            pid: i as i32 + 1,
            ppid: parent(i),
            tgid: i as i32 + 1,
            state: TaskState::Running,
            cgroup: "/".into(),
            name: format!("t{}", i % 7),
            nspid: vec![i as i32 + 1],
        })
        .collect()
}

/// `pstree`'s layout, drawn recursively: the reference the renderer must match.
fn reference(procs: &[uproc::ProcInfo]) -> String {
    fn block(p: &uproc::ProcInfo, procs: &[uproc::ProcInfo]) -> Vec<String> {
        let label = format!("{}({})", p.name, p.pid);
        let mut kids: Vec<_> = procs.iter().filter(|k| k.ppid == p.pid).collect();
        kids.sort_by_key(|k| k.pid);
        if kids.is_empty() {
            return vec![label];
        }
        let pad = " ".repeat(label.chars().count());
        let n = kids.len();
        let mut lines = Vec::new();
        for (i, k) in kids.into_iter().enumerate() {
            let (first, rest) = match (n, i) {
                (1, _) => ("───", "   "),
                (_, 0) => ("─┬─", " │ "),
                (_, i) if i == n - 1 => (" └─", "   "),
                _ => (" ├─", " │ "),
            };
            for (j, line) in block(k, procs).into_iter().enumerate() {
                let head = if i == 0 && j == 0 { &label } else { &pad };
                let conn = if j == 0 { first } else { rest };
                lines.push(format!("{head}{conn}{line}"));
            }
        }
        lines
    }
    let mut out = String::new();
    for r in procs.iter().filter(|p| p.ppid == 0) {
        for line in block(r, procs) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// Random forests (each process's parent an earlier one, or none): the layout is
/// `pstree`'s, as the recursive reference draws it.
#[test]
fn pstree_matches_the_recursive_layout_on_random_forests() {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for n in [1, 2, 3, 5, 8, 13, 40, 200] {
        for round in 0..20 {
            let procs = listing(n, |i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Roots now and then; chains and wide nodes both.
                match x % 10 {
                    _ if i == 0 => 0,
                    0 => 0,
                    1..=4 => i as i32,
                    _ => ((x >> 8) % i as u64) as i32 + 1,
                }
            });
            assert_eq!(
                uproc::ps::pstree(&procs),
                reference(&procs),
                "n = {n}, round {round}: {procs:?}"
            );
        }
    }
}

/// A chain as deep as the default `pid_max` allows draws as one line without
/// overflowing the stack (the recursive renderer aborted the process at 32,000 in a
/// release build, and built the line once per level).
#[test]
fn pstree_draws_a_chain_as_deep_as_pid_max_as_one_line() {
    let depth = 32_767;
    let procs = listing(depth, |i| i as i32);
    let tree = uproc::ps::pstree(&procs);
    assert_eq!(tree.lines().count(), 1);
    assert!(tree.starts_with("t0(1)───t1(2)───t2(3)"));
    assert!(tree.ends_with(&format!("───t{}({depth})\n", (depth - 1) % 7)));
}
