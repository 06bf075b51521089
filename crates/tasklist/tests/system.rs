//! The runtime object: construction, introspection (`/proc/PID/status`), and the
//! interfaces cgroup calls back through (selftests: `proc/`, `cgroup/test_core.c`).

#[macro_use]
mod common;
use common::*;
use uproc_abi::{CloneFlags, Errno, Signal};
use uproc_tasklist::{System, SystemConfig, TaskState};

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

every_profile!(
    pid_max_out_of_range_is_einval,
    pid_namespace_full_is_eagain_and_leaks_nothing,
    status_lines_like_proc,
    tasks_and_find_task,
    cgroup_attach_procs_and_kill_reach_tasks,
);
