//! The runtime object: construction, introspection (`/proc/PID/status`), and the
//! interfaces cgroup calls back through (selftests: `proc/`, `cgroup/test_core.c`).

#[macro_use]
mod common;
use common::*;
use std::sync::Arc;
use uproc_abi::{CloneFlags, Errno, Profile, Signal};
use uproc_cgroup::Cgroup;
use uproc_tasklist::{CloneArgs, System, SystemConfig, Task, TaskState};

fn pid_max_out_of_range_is_einval() {
    for bad in [0, 300, 4_194_305] {
        assert_eq!(
            System::new(SystemConfig {
                pid_max: bad,
                profile: profile(),
                ..Default::default()
            })
            .map(|_| ()),
            Err(Errno::EINVAL),
            "pid_max {bad} is outside [301, 4194304]"
        );
    }
    let sys = System::new(SystemConfig {
        pid_max: 301,
        profile: profile(),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(sys.init().pid(), 1);
    assert_eq!(sys.init().name(), "init");
    assert_eq!(sys.root_ns().pid_max(), 301);
}

fn pid_namespace_full_is_eagain_and_leaks_nothing() {
    let sys = System::new(SystemConfig {
        pid_max: 301,
        profile: profile(),
        ..Default::default()
    })
    .unwrap();
    let init = sys.init();
    let mut kids = Vec::new();
    loop {
        match init.fork(&Default::default()) {
            Ok(c) => kids.push(c),
            Err(e) => {
                assert_eq!(e, Errno::EAGAIN, "alloc_pid: namespace full");
                break;
            }
        }
    }
    assert_eq!(kids.len(), 299, "numbers 2..=300");
    assert_at_rest(&sys);
    for c in &kids {
        c.exit(0);
        reap(&init, c);
    }
    assert_at_rest(&sys);
}

fn status_lines_like_proc() {
    let sys = system();
    let init = sys.init();
    let n = fork_flags(&init, CloneFlags::NEWPID);
    n.set_name("a-very-long-task-name");
    assert_eq!(n.name(), "a-very-long-tas", "comm is 15 bytes");
    let c = fork(&n);
    assert_eq!(c.name(), n.name(), "the name is inherited");
    let root_pid = init.pid_of(&c);
    let want = format!(
        "Name:\ta-very-long-tas\nState:\tR (running)\nTgid:\t{root_pid}\nPid:\t{root_pid}\nPPid:\t{}\nNSpid:\t{root_pid}\t2\n",
        init.pid_of(&n)
    );
    assert_eq!(c.status(), want);
    init.kill(init.pid_of(&c), Signal::STOP).unwrap();
    assert!(c.status().contains("State:\tT (stopped)"));
    c.exit(0);
    assert!(c.status().contains("State:\tZ (zombie)"));
    reap(&n, &c);
    assert!(c.status().contains("State:\tX (dead)"));
    // PR_SET_NAME copies a C string; `/proc/PID/status` escapes a newline and a
    // backslash (measured on Linux 6.18: "a\\b\nc\td" shows as `a\\b\nc<TAB>d`).
    n.set_name("ab\0cd");
    assert_eq!(n.name(), "ab");
    n.set_name("a\\b\nc\td");
    assert_eq!(n.name(), "a\\b\nc\td");
    let status = n.status();
    assert!(
        status.starts_with("Name:\ta\\\\b\\nc\td\nState:\t"),
        "{status}"
    );
    assert_eq!(status.lines().count(), 6, "{status}");
    n.exit(0);
    reap(&init, &n);
}

fn tasks_and_find_task() {
    let sys = system();
    let init = sys.init();
    let a = fork(&init);
    let t = thread(&a);
    let b = fork(&init);
    let all = sys.tasks();
    assert_eq!(
        all,
        vec![init.clone(), a.clone(), t.clone(), b.clone()],
        "root-ns pid order"
    );
    assert_eq!(sys.nr_tasks(), 4);
    assert_eq!(sys.find_task(sys.root_ns(), a.pid()), Some(a.clone()));
    assert_eq!(sys.find_task(sys.root_ns(), 999), None);
    assert_eq!(t.tgid(), a.pid());
    assert!(!t.is_thread_group_leader());
    a.exit_group(0);
    reap(&init, &a);
    assert_eq!(sys.find_task(sys.root_ns(), a.pid()), None, "reaped: gone");
    b.exit(0);
    reap(&init, &b);
    assert_eq!(sys.tasks(), vec![init]);
}

fn cgroup_attach_procs_and_kill_reach_tasks() {
    let sys = system();
    let init = sys.init();
    let cg = sys.cgroup_root().mkdir("box").unwrap();
    let a = fork(&init);
    let t = thread(&a);
    cg.attach(&a).unwrap();
    assert_eq!(a.cgroup(), cg);
    assert_eq!(t.cgroup(), cg, "attach moves every thread");
    let b = fork(&init);
    cg.write("cgroup.procs", &b.pid().to_string()).unwrap();
    assert_eq!(
        b.cgroup(),
        cg,
        "cgroup.procs resolves the pid through tasklist"
    );
    assert_eq!(cg.write("cgroup.procs", "4000"), Err(Errno::ESRCH));
    let c = fork(&b);
    assert_eq!(c.cgroup(), cg, "children start in the parent's cgroup");
    cg.kill().unwrap();
    for x in [&a, &b] {
        assert_eq!(x.state(), TaskState::Zombie, "cgroup.kill SIGKILLs members");
    }
    assert_eq!(t.state(), TaskState::Dead);
    assert_eq!(
        c.state(),
        TaskState::Dead,
        "killed, orphaned, reaped by init"
    );
    assert!(!cg.is_populated());
    assert_eq!(cg.pids_current(), 2, "zombies stay charged");
    reap(&init, &a);
    reap(&init, &b);
    assert_eq!(cg.pids_current(), 0);
    cg.rmdir().unwrap();
}

#[test]
fn dropping_the_last_system_handle_frees_namespaces_pids_and_tasks() {
    use std::sync::Weak;
    for &p in uproc_abi::Profile::ALL {
        for round in 0..500 {
            let sys = system_with(p);
            let init = sys.init();
            // Leave things behind: a running child, a zombie, a nested namespace with
            // its own init and child, a process group, a thread.
            let running = fork(&init);
            let zombie = fork(&init);
            zombie.exit(1);
            let n = fork_flags(&init, uproc_abi::CloneFlags::NEWPID);
            let inner = fork(&n);
            let t = thread(&running);
            running.setpgid(0, 0).unwrap();
            let weak = (
                Arc::downgrade(sys.root_ns()),
                Arc::downgrade(&n.pid_ns()),
                Arc::downgrade(sys.pidfs()),
                Arc::downgrade(sys.cgroups()),
                Arc::downgrade(init.struct_pid()),
                Arc::downgrade(inner.struct_pid()),
                [
                    init.downgrade(),
                    running.downgrade(),
                    zombie.downgrade(),
                    n.downgrade(),
                ],
                Arc::downgrade(&sys),
            );
            // One handle outlives the runtime: its calls fail, it frees nothing else.
            let survivor = inner;
            drop((sys, init, running, zombie, n, t));
            assert!(
                weak.7.upgrade().is_none(),
                "{p}/{round}: the System is freed"
            );
            assert_eq!(
                survivor.fork(&CloneArgs::default()).map(|_| ()),
                Err(uproc_abi::Errno::ESRCH),
                "{p}: a task of a dropped runtime cannot fork"
            );
            assert_eq!(survivor.nspid().len(), 2, "{p}: its numbers stay readable");
            assert!(survivor.system().is_none(), "{p}: no runtime, and no panic");
            drop(survivor);
            let dead = |w: &Weak<_>| w.upgrade().is_none();
            assert!(dead(&weak.0), "{p}/{round}: the root namespace is freed");
            assert!(dead(&weak.1), "{p}/{round}: the nested namespace is freed");
            assert!(weak.2.upgrade().is_none(), "{p}/{round}: pidfs is freed");
            assert!(
                weak.3.upgrade().is_none(),
                "{p}/{round}: the cgroup hierarchy is freed"
            );
            assert!(
                weak.4.upgrade().is_none(),
                "{p}/{round}: init's pid is freed"
            );
            assert!(
                weak.5.upgrade().is_none(),
                "{p}/{round}: a nested pid is freed"
            );
            for t in &weak.6 {
                assert!(t.upgrade().is_none(), "{p}/{round}: every task is freed");
            }
        }
    }
}

#[test]
fn objects_of_another_runtime_are_einval() {
    for &p in uproc_abi::Profile::ALL {
        let (a, b) = (system_with(p), system_with(p));
        let (ia, ib) = (a.init(), b.init());
        let cg_b = b.cgroup_root().mkdir("x").unwrap();
        // A live task of runtime a, attached to a cgroup of runtime b.
        let live = fork(&ia);
        assert_eq!(
            cg_b.attach(&live),
            Err(Errno::EINVAL),
            "{p}: live task of another runtime"
        );
        // ... and once it has died (no css links left to compare).
        let dead = fork(&ia);
        dead.exit(0);
        reap(&ia, &dead);
        assert_eq!(
            cg_b.attach(&dead),
            Err(Errno::EINVAL),
            "{p}: dead task of another runtime"
        );
        let zombie = fork(&ia);
        zombie.exit(0);
        assert_eq!(
            cg_b.attach(&zombie),
            Err(Errno::EINVAL),
            "{p}: zombie of another runtime"
        );
        // The same calls within one runtime work.
        let cg_a = a.cgroup_root().mkdir("x").unwrap();
        assert_eq!(cg_a.attach(&live), Ok(()));
        assert_eq!(
            cg_a.attach(&dead),
            Ok(()),
            "{p}: a dead task of this runtime moves nothing"
        );
        // A pidfd of another runtime.
        let fd = ia
            .pidfd_open(ia.pid_of(&zombie), uproc_abi::PidfdFlags::empty())
            .unwrap();
        assert_eq!(
            ib.wait(
                uproc_tasklist::WaitId::PidFd(&fd),
                uproc_abi::WaitOptions::EXITED
            ),
            Err(Errno::EINVAL),
            "{p}: waitid(P_PIDFD) with another runtime's pidfd"
        );
        // A file handle opened as a caller of another runtime.
        assert_eq!(
            b.open_by_handle(&ia, &fd.file_handle(), uproc_abi::PidfdFlags::empty())
                .map(|_| ()),
            Err(Errno::EINVAL),
            "{p}: open_by_handle_at with a caller of another runtime"
        );
        // setns to another runtime's namespace, CLONE_INTO_CGROUP of another runtime.
        assert_eq!(ia.setns_pid(b.root_ns()), Err(Errno::EINVAL));
        assert_eq!(
            ia.fork(&into_cgroup(&cg_b)).map(|_| ()),
            Err(Errno::EINVAL),
            "{p}: CLONE_INTO_CGROUP with another runtime's cgroup"
        );
        assert!(live.belongs_to(&a) && !live.belongs_to(&b));
        reap(&ia, &zombie);
        live.exit(0);
        reap(&ia, &live);
        assert_at_rest(&a);
        assert_at_rest(&b);
    }
}

/// A runtime dropped while a reaped process's pid is still another process's
/// process-group id: the drop returns that number with every other, and the group's
/// last user, torn down with the task tree afterwards, frees nothing twice.
fn dropping_the_runtime_with_a_pgrp_id_of_a_reaped_leader() {
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    let a = fork(&p);
    let b = fork(&p);
    p.setpgid(a.pid(), a.pid()).unwrap();
    p.setpgid(b.pid(), a.pid()).unwrap();
    a.exit(3);
    reap(&p, &a);
    assert_eq!(b.getpgid(), a.pid(), "the group outlives its leader");
    let pid = a.struct_pid().clone();
    assert!(!pid.is_freed(), "still b's process-group id");
    drop(sys);
    assert!(pid.is_freed(), "returned by the runtime's drop");
    drop((init, p, a, b));
}

/// A task's css link lives inside the task: a runtime dropped with tasks still linked
/// (running, a thread, a zombie) leaves their cgroup neither populated nor charged once
/// the tasks are freed (the link's drop unlinks and uncharges).
fn a_dropped_runtime_leaves_its_cgroups_unpopulated_and_uncharged() {
    let sys = system();
    let init = sys.init();
    let cg = sys.cgroup_root().mkdir("box").unwrap();
    let a = fork(&init);
    let t = thread(&a);
    cg.attach(&a).unwrap();
    let z = fork(&a);
    z.exit(0);
    assert_eq!(z.cgroup(), cg, "forked in its parent's cgroup");
    assert_eq!(cg.pids_current(), 3);
    assert!(cg.is_populated());
    let weak = [a.downgrade(), t.downgrade(), z.downgrade()];
    drop((sys, init, a, t, z));
    for w in &weak {
        assert!(w.upgrade().is_none(), "every task is freed");
    }
    assert!(!cg.is_populated(), "unlinked by the links' drop");
    assert_eq!(cg.read("cgroup.procs").unwrap(), "");
    assert_eq!(cg.pids_current(), 0, "uncharged by the links' drop");
}

/// The root cgroup lists every process of the runtime (under `Scalable` through the
/// task list, the root keeping no member set): the init, children of children, a
/// process in a nested pid namespace (by its root number), each thread once in
/// `cgroup.threads`; not a zombie, not a task moved out, again a task moved back.
fn root_cgroup_procs_lists_every_process() {
    let sys = system();
    let init = sys.init();
    let root = sys.cgroup_root();
    let lines = |file: &str| -> Vec<i32> {
        let mut v: Vec<i32> = root
            .read(file)
            .unwrap()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        v.sort_unstable();
        v
    };
    let a = fork(&init);
    let b = fork(&a);
    let t = thread(&b);
    let ns_init = fork_flags(&init, CloneFlags::NEWPID);
    let in_ns = fork(&ns_init);
    let root_nr = |x: &Task| init.pid_of(x);
    let mut want = vec![
        init.pid(),
        root_nr(&a),
        root_nr(&b),
        root_nr(&ns_init),
        root_nr(&in_ns),
    ];
    want.sort_unstable();
    assert_eq!(lines("cgroup.procs"), want);
    let mut threads = want.clone();
    threads.push(root_nr(&t));
    threads.sort_unstable();
    assert_eq!(lines("cgroup.threads"), threads);
    assert!(root.is_populated());
    // Moved out: listed in its cgroup only; moved back: in the root again.
    let boxed = root.mkdir("box").unwrap();
    boxed.attach(&a).unwrap();
    assert!(!lines("cgroup.procs").contains(&root_nr(&a)));
    assert_eq!(
        boxed.read("cgroup.procs").unwrap(),
        format!("{}\n", root_nr(&a))
    );
    root.write("cgroup.procs", &root_nr(&a).to_string())
        .unwrap();
    assert_eq!(a.cgroup(), root);
    assert_eq!(boxed.read("cgroup.procs").unwrap(), "");
    assert_eq!(lines("cgroup.procs"), want);
    // A zombie is no member; nor, once reaped, anything of it.
    in_ns.exit(0);
    assert!(!lines("cgroup.procs").contains(&root_nr(&in_ns)));
    reap(&ns_init, &in_ns);
    t.exit(0);
    assert!(!lines("cgroup.threads").contains(&root_nr(&t)));
    for (parent, child) in [(&init, &ns_init), (&a, &b), (&init, &a)] {
        child.exit(0);
        reap(parent, child);
    }
    assert_eq!(lines("cgroup.procs"), vec![init.pid()]);
    boxed.rmdir().unwrap();
}

/// Cgroups `a` and `b` below the root, and a child of init with one thread, both in
/// `a`.
fn process_with_a_thread_in_a(sys: &System) -> (Cgroup, Cgroup, Task, Task) {
    let root = sys.cgroup_root();
    let a = root.mkdir("a").unwrap();
    let b = root.mkdir("b").unwrap();
    let leader = fork(&sys.init());
    a.attach(&leader).unwrap();
    let t = thread(&leader);
    (a, b, leader, t)
}

/// `cgroup.threads` moves one thread, which Linux allows only inside one threaded
/// subtree (`cgroup_attach_permissions`: EOPNOTSUPP across domains). uproc has no
/// threaded cgroups: a write naming a thread already in the cgroup is a no-op, one
/// elsewhere is EOPNOTSUPP and moves nothing (neither the thread nor its group);
/// `cgroup.procs` still moves the whole group.
fn cgroup_threads_never_splits_a_thread_group() {
    let sys = system();
    let init = sys.init();
    let root = sys.cgroup_root();
    let (a, b, leader, t) = process_with_a_thread_in_a(&sys);
    let (lnr, tnr) = (init.pid_of(&leader), init.pid_of(&t));
    let both = format!("{lnr}\n{tnr}\n");
    assert_eq!(a.read("cgroup.threads").unwrap(), both);
    for nr in [lnr, tnr] {
        assert_eq!(
            a.write("cgroup.threads", &nr.to_string()),
            Ok(()),
            "already here"
        );
        assert_eq!(
            b.write("cgroup.threads", &nr.to_string()),
            Err(Errno::EOPNOTSUPP),
            "another domain"
        );
        assert_eq!(
            root.write("cgroup.threads", &nr.to_string()),
            Err(Errno::EOPNOTSUPP),
            "the root is a domain of its own"
        );
    }
    assert_eq!(a.read("cgroup.threads").unwrap(), both, "nothing moved");
    assert_eq!(b.read("cgroup.threads").unwrap(), "");
    assert_eq!(
        (a.pids_current(), b.pids_current()),
        (2, 0),
        "no charge moved"
    );
    assert_eq!(leader.cgroup(), a);
    assert_eq!(t.cgroup(), a);
    // The usual errors come first, as in `__cgroup_procs_write`.
    assert_eq!(b.write("cgroup.threads", "99999"), Err(Errno::ESRCH));
    assert_eq!(b.write("cgroup.threads", "-1"), Err(Errno::EINVAL));
    assert_eq!(b.write("cgroup.threads", "x"), Err(Errno::EINVAL));
    // cgroup.procs with the thread's tid moves the whole group.
    b.write("cgroup.procs", &tnr.to_string()).unwrap();
    assert_eq!(b.read("cgroup.threads").unwrap(), both);
    assert_eq!((a.pids_current(), b.pids_current()), (0, 2));
    t.exit(0);
    leader.exit(0);
    reap(&init, &leader);
    assert_eq!(b.pids_current(), 0);
}

/// A `cgroup.threads` write judges the named thread's own cgroup, a zombie's too
/// (checked on Linux 6.18): a zombie in another cgroup is EOPNOTSUPP, one here a no-op;
/// a zombie leader left behind when `cgroup.procs` moved its live thread is elsewhere
/// from where the thread went.
fn cgroup_threads_judges_a_zombie_by_its_own_cgroup() {
    let sys = system();
    let init = sys.init();
    let root = sys.cgroup_root();
    let a = root.mkdir("a").unwrap();
    let b = root.mkdir("b").unwrap();
    let z = fork(&init);
    a.attach(&z).unwrap();
    z.exit(0);
    let znr = init.pid_of(&z);
    assert_eq!(
        b.write("cgroup.threads", &znr.to_string()),
        Err(Errno::EOPNOTSUPP)
    );
    assert_eq!(a.write("cgroup.threads", &znr.to_string()), Ok(()));
    assert_eq!(
        (a.pids_current(), b.pids_current()),
        (1, 0),
        "nothing moved"
    );
    reap(&init, &z);
    // A zombie leader whose live thread went elsewhere.
    let leader = fork(&init);
    a.attach(&leader).unwrap();
    let t = thread(&leader);
    leader.exit(0);
    let (lnr, tnr) = (init.pid_of(&leader), init.pid_of(&t));
    b.write("cgroup.procs", &lnr.to_string()).unwrap();
    assert_eq!(t.cgroup(), b, "the live thread moved");
    assert_eq!(b.write("cgroup.threads", &tnr.to_string()), Ok(()));
    assert_eq!(
        b.write("cgroup.threads", &lnr.to_string()),
        Err(Errno::EOPNOTSUPP),
        "the zombie leader stayed in a"
    );
    assert_eq!(a.write("cgroup.threads", &lnr.to_string()), Ok(()));
    t.exit(0);
    reap(&init, &leader);
    assert_eq!((a.pids_current(), b.pids_current()), (0, 0));
}

/// A process moved into a cgroup comes last in its `cgroup.procs`, as
/// `cgroup_migrate_execute` splices it onto the tail of the css_set's list (measured on
/// Linux 6.18: forked into b, a, b, then the second moved into b, b lists 1, 3, 2; the
/// first moved out and back comes last again). The `Linux*` profiles' one joining
/// order; `Scalable` lists by forking parent (a documented difference).
#[test]
fn a_moved_process_comes_last_in_cgroup_procs() {
    for p in [Profile::Linux618, Profile::Linux70] {
        let sys = system_with(p);
        let init = sys.init();
        let a = sys.cgroup_root().mkdir("a").unwrap();
        let b = sys.cgroup_root().mkdir("b").unwrap();
        let p1 = init.fork(&into_cgroup(&b)).unwrap();
        let p2 = init.fork(&into_cgroup(&a)).unwrap();
        let p3 = init.fork(&into_cgroup(&b)).unwrap();
        let nr = |t: &Task| init.pid_of(t);
        let listed = |ts: &[&Task]| {
            ts.iter()
                .map(|t| format!("{}\n", nr(t)))
                .collect::<String>()
        };
        b.write("cgroup.procs", &nr(&p2).to_string()).unwrap();
        assert_eq!(
            b.read("cgroup.procs").unwrap(),
            listed(&[&p1, &p3, &p2]),
            "{p}"
        );
        a.write("cgroup.procs", &nr(&p1).to_string()).unwrap();
        b.write("cgroup.procs", &nr(&p1).to_string()).unwrap();
        assert_eq!(
            b.read("cgroup.procs").unwrap(),
            listed(&[&p3, &p2, &p1]),
            "{p}"
        );
        for t in [&p1, &p2, &p3] {
            t.exit(0);
            reap(&init, t);
        }
        assert_at_rest(&sys);
    }
}

/// A leader that exits before its thread stays, dying, in its cgroup: a migration of
/// the group moves only the live thread, and the process is still the leader's
/// cgroup's. Measured on Linux 6.18 (a C program: `pthread_exit` in `main` with a
/// thread left, then a `cgroup.procs` write): `cgroup.procs` lists the tgid where the
/// leader died and not where the thread went, `cgroup.threads` the reverse; only the
/// thread's cgroup is populated; and neither cgroup's `cgroup.kill` kills the thread
/// (the walk signals the dead leader alone, which takes nothing). The root's listing,
/// whatever the profile keeps it in, does the same.
fn cgroup_procs_and_kill_follow_a_dying_leader() {
    let sys = system();
    let init = sys.init();
    let root = sys.cgroup_root();
    let (a, b, leader, t) = process_with_a_thread_in_a(&sys);
    let (lnr, tnr) = (init.pid_of(&leader), init.pid_of(&t));
    leader.exit(0);
    assert_eq!(leader.state(), TaskState::Zombie);
    assert_eq!(a.read("cgroup.procs").unwrap(), format!("{lnr}\n"));
    assert_eq!(a.read("cgroup.threads").unwrap(), format!("{tnr}\n"));
    b.write("cgroup.procs", &lnr.to_string()).unwrap();
    assert_eq!((leader.cgroup(), t.cgroup()), (a.clone(), b.clone()));
    assert_eq!(a.read("cgroup.procs").unwrap(), format!("{lnr}\n"));
    assert_eq!(a.read("cgroup.threads").unwrap(), "");
    assert_eq!(
        b.read("cgroup.procs").unwrap(),
        "",
        "the leader is not here"
    );
    assert_eq!(b.read("cgroup.threads").unwrap(), format!("{tnr}\n"));
    assert!(!a.is_populated() && b.is_populated());
    assert_eq!((a.pids_current(), b.pids_current()), (1, 1));
    b.kill().unwrap();
    assert_eq!(t.state(), TaskState::Running, "its process is a's");
    a.kill().unwrap();
    assert_eq!(
        t.state(),
        TaskState::Running,
        "a SIGKILL to the dead leader only"
    );
    assert!(!t.fatal_signal_pending());
    assert_eq!(leader.state(), TaskState::Zombie);
    // Unmoved, the same: the thread in the leader's cgroup survives its kill.
    let c = root.mkdir("c").unwrap();
    let (l2, t2) = {
        let l = fork(&init);
        c.attach(&l).unwrap();
        let t = thread(&l);
        l.exit(0);
        (l, t)
    };
    c.kill().unwrap();
    assert_eq!(
        t2.state(),
        TaskState::Running,
        "cgroup.kill of its own cgroup"
    );
    assert_eq!(
        c.read("cgroup.procs").unwrap(),
        format!("{}\n", init.pid_of(&l2))
    );
    init.kill(init.pid_of(&l2), Signal::KILL).unwrap();
    assert_eq!(
        t2.state(),
        TaskState::Dead,
        "kill(tgid) reaches the live thread"
    );
    assert_eq!(c.read("cgroup.procs").unwrap(), "");
    reap(&init, &l2);
    c.rmdir().unwrap();
    t.exit(0);
    assert_eq!(a.read("cgroup.procs").unwrap(), "", "no live thread left");
    reap(&init, &leader);
    assert_eq!((a.pids_current(), b.pids_current()), (0, 0));
    a.rmdir().unwrap();

    // In the root.
    let lines = |f: &str| -> Vec<i32> {
        root.read(f)
            .unwrap()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect()
    };
    let leader = fork(&init);
    let t = thread(&leader);
    let (lnr, tnr) = (init.pid_of(&leader), init.pid_of(&t));
    leader.exit(0);
    b.write("cgroup.procs", &tnr.to_string()).unwrap();
    assert_eq!((leader.cgroup(), t.cgroup()), (root.clone(), b.clone()));
    assert_eq!(
        lines("cgroup.procs").iter().filter(|&&n| n == lnr).count(),
        1
    );
    assert!(!lines("cgroup.threads").contains(&lnr));
    assert!(!lines("cgroup.threads").contains(&tnr));
    assert_eq!(b.read("cgroup.procs").unwrap(), "");
    b.kill().unwrap();
    assert_eq!(t.state(), TaskState::Running);
    t.exit(0);
    assert!(!lines("cgroup.procs").contains(&lnr), "no live thread left");
    reap(&init, &leader);
    assert!(!lines("cgroup.procs").contains(&lnr));
    b.rmdir().unwrap();
    assert_at_rest(&sys);
}

/// Dropping a runtime with a chain of live tasks as deep as `pid_max` allows (each
/// the only child of the one before, held by its parent's children list alone) does
/// not overflow the stack: each list's drop hands its tasks to the loop of the first
/// one instead of recursing. (It recursed ~20 frames per level: a debug build
/// overflowed the main thread's stack at 10,000 levels.) Run on a thread with a small
/// stack, so that any recursion per level shows.
/// `cgroup.procs`/`cgroup.threads` writes of `0` name Linux's `current`, which the
/// embedding runtime supplies once (`System::set_current`); without one, or with a
/// task of another runtime, ESRCH.
fn a_procs_write_of_zero_moves_the_current_task() {
    let sys = system();
    let init = sys.init();
    let cg = sys.cgroup_root().mkdir("a").unwrap();
    let c = fork(&init);
    let t = thread(&c);
    assert_eq!(
        cg.write("cgroup.procs", "0"),
        Err(Errno::ESRCH),
        "no current()"
    );
    let current = Arc::new(std::sync::Mutex::new(None::<Task>));
    let now = current.clone();
    sys.set_current(move || now.lock().unwrap().clone())
        .unwrap();
    assert_eq!(sys.set_current(|| None), Err(Errno::EBUSY), "set once");
    assert_eq!(
        cg.write("cgroup.procs", "0"),
        Err(Errno::ESRCH),
        "current() is None"
    );
    *current.lock().unwrap() = Some(t.clone());
    cg.write("cgroup.procs", "0").unwrap();
    assert_eq!(c.cgroup().path(), "/a", "the writer's whole process moved");
    assert_eq!(t.cgroup().path(), "/a");
    let other = system();
    *current.lock().unwrap() = Some(other.init());
    assert_eq!(
        cg.write("cgroup.procs", "0"),
        Err(Errno::ESRCH),
        "another runtime's"
    );
    *current.lock().unwrap() = Some(t.clone());
    assert_eq!(
        sys.cgroup_root().write("cgroup.threads", "0"),
        Err(Errno::EOPNOTSUPP)
    );
    t.exit(0);
    c.exit(0);
    reap(&init, &c);
}

fn dropping_the_runtime_with_a_deep_chain_of_live_tasks_does_not_recurse() {
    let prof = profile();
    let dropped = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            let sys = system_with(prof);
            let mut t = sys.init();
            for _ in 0..32_000 {
                t = fork(&t);
            }
            let weak = t.downgrade();
            drop(t);
            drop(sys);
            weak.upgrade().is_none()
        })
        .unwrap()
        .join()
        .expect("no stack overflow");
    assert!(dropped, "the deepest task is freed with its runtime");
}

every_profile!(
    dropping_the_runtime_with_a_deep_chain_of_live_tasks_does_not_recurse,
    cgroup_procs_and_kill_follow_a_dying_leader,
    cgroup_threads_never_splits_a_thread_group,
    cgroup_threads_judges_a_zombie_by_its_own_cgroup,
    a_dropped_runtime_leaves_its_cgroups_unpopulated_and_uncharged,
    pid_max_out_of_range_is_einval,
    dropping_the_runtime_with_a_pgrp_id_of_a_reaped_leader,
    pid_namespace_full_is_eagain_and_leaks_nothing,
    status_lines_like_proc,
    tasks_and_find_task,
    cgroup_attach_procs_and_kill_reach_tasks,
    root_cgroup_procs_lists_every_process,
    a_procs_write_of_zero_moves_the_current_task,
);
