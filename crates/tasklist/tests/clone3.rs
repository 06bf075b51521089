//! clone3 flag validation, set_tid, CLONE_PIDFD, CLONE_INTO_CGROUP and the unwinding of
//! failed forks (selftests: `clone3/clone3.c`, `clone3/clone3_set_tid.c`,
//! `cgroup/test_pids.c`).

#[macro_use]
mod common;
use common::*;
use std::sync::Arc;
use uproc_abi::{CloneFlags, Errno, Profile, Signal, WaitOptions};
use uproc_cgroup::Limit;
use uproc_tasklist::{CloneArgs, Task, TaskState, WaitId};

fn args(flags: CloneFlags) -> CloneArgs {
    CloneArgs {
        flags,
        ..Default::default()
    }
}

/// Forking with `a` fails with `e` and leaves nothing behind.
fn fails(parent: &Task, a: &CloneArgs, e: Errno, why: &str) {
    let sys = parent.system().expect("the runtime is alive");
    let before = (
        sys.root_ns().nr_allocated(),
        sys.pidfs().index_len(),
        sys.nr_tasks(),
    );
    let children = parent.wait(
        WaitId::All,
        WaitOptions::EXITED | WaitOptions::NOHANG | WaitOptions::NOWAIT,
    );
    assert_eq!(parent.fork(a).map(|_| ()), Err(e), "{why}");
    let after = (
        sys.root_ns().nr_allocated(),
        sys.pidfs().index_len(),
        sys.nr_tasks(),
    );
    assert_eq!(
        before, after,
        "a failed fork leaks no pid, index entry or task ({why})"
    );
    assert_eq!(
        parent.wait(
            WaitId::All,
            WaitOptions::EXITED | WaitOptions::NOHANG | WaitOptions::NOWAIT
        ),
        children,
        "a failed fork adds no child"
    );
}

fn invalid_flag_combinations_are_einval() {
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    let unknown = CloneFlags::from_bits_retain(1 << 60);
    fails(
        &p,
        &args(unknown),
        Errno::EINVAL,
        "unknown clone3 flag bits",
    );
    fails(
        &p,
        &args(CloneFlags::THREAD | CloneFlags::NEWPID),
        Errno::EINVAL,
        "THREAD|NEWPID",
    );
    fails(
        &p,
        &args(CloneFlags::SIGHAND),
        Errno::EINVAL,
        "SIGHAND without VM",
    );
    fails(
        &p,
        &args(CloneFlags::AUTOREAP | CloneFlags::THREAD),
        Errno::EINVAL,
        "AUTOREAP|THREAD",
    );
    fails(
        &p,
        &args(CloneFlags::AUTOREAP | CloneFlags::PARENT),
        Errno::EINVAL,
        "AUTOREAP|PARENT",
    );
    let mut a = args(CloneFlags::AUTOREAP);
    a.exit_signal = Some(Signal::CHLD);
    fails(&p, &a, Errno::EINVAL, "AUTOREAP with an exit_signal");
    let mut a = args(CloneFlags::NEW_THREAD);
    a.exit_signal = Some(Signal::USR1);
    fails(
        &p,
        &a,
        Errno::EINVAL,
        "exit_signal with THREAD (clone3_args_valid)",
    );
    let mut a = args(CloneFlags::PARENT);
    a.exit_signal = Some(Signal::CHLD);
    fails(
        &p,
        &a,
        Errno::EINVAL,
        "exit_signal with PARENT (clone3_args_valid)",
    );
    fails(
        &p,
        &args(CloneFlags::INTO_CGROUP),
        Errno::EINVAL,
        "INTO_CGROUP without a cgroup",
    );
    let a = CloneArgs {
        cgroup: Some(sys.cgroup_root()),
        ..Default::default()
    };
    fails(&p, &a, Errno::EINVAL, "a cgroup without INTO_CGROUP");
    let a = CloneArgs {
        set_tid: vec![1; 33],
        ..Default::default()
    };
    fails(&p, &a, Errno::EINVAL, "set_tid longer than 32");
    fails(
        &init,
        &args(CloneFlags::PARENT),
        Errno::EINVAL,
        "CLONE_PARENT from an init",
    );
    // exit_signal 0 is "none", allowed with AUTOREAP.
    let mut a = args(CloneFlags::AUTOREAP);
    a.exit_signal = Some(Signal::PROBE);
    let c = p.fork(&a).unwrap();
    c.exit(0);
    assert_eq!(c.state(), TaskState::Dead);
    p.exit(0);
    reap(&init, &p);
}

fn namespace_init_cannot_clone_parent() {
    let sys = system();
    let init = sys.init();
    let ns_init = fork_flags(&init, CloneFlags::NEWPID);
    fails(
        &ns_init,
        &args(CloneFlags::PARENT),
        Errno::EINVAL,
        "CLONE_PARENT from a namespace init",
    );
    ns_init.exit(0);
    reap(&init, &ns_init);
}

fn thread_or_newpid_after_unshare_is_einval() {
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    p.unshare_pid_ns().unwrap();
    assert_eq!(
        p.unshare_pid_ns(),
        Err(Errno::EINVAL),
        "second unshare: copy_pid_ns EINVAL"
    );
    fails(
        &p,
        &args(CloneFlags::NEW_THREAD),
        Errno::EINVAL,
        "THREAD into another pid namespace",
    );
    fails(
        &p,
        &args(CloneFlags::NEWPID),
        Errno::EINVAL,
        "NEWPID after unshare",
    );
    let c = fork(&p);
    assert_eq!(
        c.pid(),
        1,
        "first child of the unshared namespace is its init"
    );
    assert_eq!(p.pid_of(&c), c.nspid()[0]);
    c.exit(0);
    reap(&p, &c);
    p.exit(0);
    reap(&init, &p);
}

fn set_tid_needs_cap_and_picks_the_number() {
    let sys = system();
    let init = sys.init();
    let a = CloneArgs {
        set_tid: vec![777],
        ..Default::default()
    };
    init.set_cap_checkpoint_restore(false);
    fails(
        &init,
        &a,
        Errno::EPERM,
        "set_tid without CAP_CHECKPOINT_RESTORE",
    );
    init.set_cap_checkpoint_restore(true);
    let c = init.fork(&a).unwrap();
    assert_eq!(c.pid(), 777);
    fails(&init, &a, Errno::EEXIST, "set_tid of a number in use");
    let b = CloneArgs {
        set_tid: vec![1, 2],
        ..Default::default()
    };
    fails(&init, &b, Errno::EINVAL, "more set_tid entries than levels");
    let n = init
        .fork(&CloneArgs {
            flags: CloneFlags::NEWPID,
            set_tid: vec![1, 900],
            ..Default::default()
        })
        .unwrap();
    assert_eq!(n.nspid(), vec![900, 1]);
    init.set_cap_checkpoint_restore(false);
    c.exit(0);
    reap(&init, &c);
    n.exit(0);
    reap(&init, &n);
}

fn clone_pidfd_refers_to_the_child() {
    let sys = system();
    let init = sys.init();
    let c = fork_flags(&init, CloneFlags::PIDFD);
    let fd = c.pidfd().expect("CLONE_PIDFD gives a pidfd");
    assert!(Arc::ptr_eq(fd.pid(), c.struct_pid()));
    assert!(!fd.poll().readable);
    c.exit(2);
    assert!(fd.poll().readable, "exited child: pidfd readable");
    let info = init
        .wait(WaitId::PidFd(&fd), WaitOptions::EXITED)
        .unwrap()
        .unwrap();
    assert_eq!(info.status.exited(), Some(2));
    assert_eq!(
        fd.exit_status().and_then(|s| s.exited()),
        Some(2),
        "exit info after reap"
    );
    assert!(fork_flags(&init, CloneFlags::empty()).pidfd().is_none());
}

fn into_cgroup_and_pids_limit_failures_leak_nothing() {
    let sys = system();
    let init = sys.init();
    let cg = sys.cgroup_root().mkdir("jobs").unwrap();
    cg.set_pids_max(Limit::Value(1)).unwrap();
    let a = CloneArgs {
        flags: CloneFlags::INTO_CGROUP | CloneFlags::PIDFD,
        cgroup: Some(cg.clone()),
        ..Default::default()
    };
    let c = init.fork(&a).unwrap();
    assert_eq!(c.cgroup(), cg);
    assert_eq!(cg.pids_current(), 1);
    fails(&init, &a, Errno::EAGAIN, "pids.max reached");
    fails(
        &c,
        &CloneArgs::default(),
        Errno::EAGAIN,
        "a child of a task in a full cgroup",
    );
    assert_eq!(cg.pids_current(), 1, "the failed forks were uncharged");
    c.exit(0);
    assert_eq!(
        cg.pids_current(),
        1,
        "a zombie still counts in pids.current"
    );
    reap(&init, &c);
    assert_eq!(cg.pids_current(), 0, "uncharged at reap");
    let c = init.fork(&a).unwrap();
    c.exit(0);
    reap(&init, &c);
    cg.rmdir().unwrap();
}

/// `CLONE_THREAD | CLONE_INTO_CGROUP`: a thread joins its group's cgroup or none
/// (`cgroup_attach_permissions` with `threadgroup = false`: EOPNOTSUPP for another
/// domain cgroup), so a thread group is never split; into its own cgroup it forks. A
/// removed target fails as for a process (ENOENT). Nothing charged or leaked.
fn thread_into_another_cgroup_is_eopnotsupp() {
    let sys = system();
    let init = sys.init();
    let home = sys.cgroup_root().mkdir("home").unwrap();
    let other = sys.cgroup_root().mkdir("other").unwrap();
    let gone = sys.cgroup_root().mkdir("gone").unwrap();
    gone.rmdir().unwrap();
    let into = |cg: &uproc_cgroup::Cgroup, flags| CloneArgs {
        flags: CloneFlags::INTO_CGROUP | flags,
        cgroup: Some(cg.clone()),
        ..Default::default()
    };
    let p = init.fork(&into(&home, CloneFlags::empty())).unwrap();
    for flags in [
        CloneFlags::NEW_THREAD,
        CloneFlags::NEW_THREAD | CloneFlags::PIDFD,
    ] {
        fails(
            &p,
            &into(&other, flags),
            Errno::EOPNOTSUPP,
            "thread elsewhere",
        );
        fails(
            &p,
            &into(&sys.cgroup_root(), flags),
            Errno::EOPNOTSUPP,
            "to the root",
        );
        fails(&p, &into(&gone, flags), Errno::ENOENT, "removed");
    }
    assert_eq!((home.pids_current(), other.pids_current()), (1, 0));
    let t = p.fork(&into(&home, CloneFlags::NEW_THREAD)).unwrap();
    assert_eq!(t.cgroup(), home, "into its group's own cgroup");
    assert_eq!(home.pids_current(), 2);
    // A process may go anywhere.
    let c = p.fork(&into(&other, CloneFlags::empty())).unwrap();
    assert_eq!(c.cgroup(), other);
    c.exit(0);
    reap(&p, &c);
    t.exit(0);
    p.exit(0);
    reap(&init, &p);
    assert_eq!((home.pids_current(), other.pids_current()), (0, 0));
    assert_at_rest(&sys);
}

fn fatal_signal_pending_on_parent_is_eintr() {
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    let called = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let c2 = called.clone();
    p.set_signal_hook(Some(Arc::new(move |s| {
        assert_eq!(s, Signal::KILL);
        c2.store(true, std::sync::atomic::Ordering::SeqCst);
    })));
    init.kill(init.pid_of(&p), Signal::KILL).unwrap();
    assert!(
        called.load(std::sync::atomic::Ordering::SeqCst),
        "the hook was called"
    );
    assert!(p.fatal_signal_pending());
    fails(
        &p,
        &CloneArgs::default(),
        Errno::EINTR,
        "fatal_signal_pending(current) at attach",
    );
    fails(
        &p,
        &args(CloneFlags::NEW_THREAD),
        Errno::EINTR,
        "the same for a thread",
    );
    p.exit_signaled(Signal::KILL);
    assert_eq!(reap(&init, &p).status.signaled(), Some(Signal::KILL));
    assert_eq!(
        p.fork(&CloneArgs::default()).map(|_| ()),
        Err(Errno::ESRCH),
        "an exited task cannot fork"
    );
}

fn fork_into_closed_namespace_is_enomem() {
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    p.unshare_pid_ns().unwrap();
    let ns_init = fork(&p);
    let ns = p.pid_ns_for_children();
    ns_init.exit(0);
    assert!(!ns.is_adding());
    fails(
        &p,
        &CloneArgs::default(),
        Errno::ENOMEM,
        "the namespace's init died",
    );
    reap(&p, &ns_init);
    p.exit(0);
    reap(&init, &p);
}

/// A fork that got its number before the init died must fail at attach (ENOMEM), and
/// either way nothing leaks.
fn closed_namespace_race_fails_forks_cleanly() {
    for round in 0..20 {
        let sys = system();
        let init = sys.init();
        let ns_init = fork_flags(&init, CloneFlags::NEWPID);
        let n2 = ns_init.clone();
        let forker = std::thread::spawn(move || {
            let mut ok = 0;
            loop {
                match n2.fork(&CloneArgs::default()) {
                    Ok(c) => {
                        ok += 1;
                        c.exit(0);
                    }
                    Err(Errno::ENOMEM) | Err(Errno::ESRCH) | Err(Errno::EINTR) => return ok,
                    Err(e) => panic!("unexpected fork error {e:?}"),
                }
            }
        });
        std::thread::sleep(std::time::Duration::from_micros(200 * (round % 5)));
        init.kill(init.pid_of(&ns_init), Signal::KILL).unwrap();
        forker.join().unwrap();
        reap(&init, &ns_init);
        assert_eq!(
            ns_init.pid_ns().nr_allocated(),
            0,
            "the closed namespace is empty"
        );
        assert_at_rest(&sys);
        assert_eq!(sys.nr_tasks(), 1, "only the runtime init is left");
    }
}

#[test]
fn runtime_init_holds_cap_checkpoint_restore_and_children_inherit_it() {
    for &p in Profile::ALL {
        let sys = system_with(p);
        let init = sys.init();
        let with_tid = |n: i32| CloneArgs {
            set_tid: vec![n],
            ..Default::default()
        };
        let c = init
            .fork(&with_tid(500))
            .expect("Linux's root init holds CAP_CHECKPOINT_RESTORE: set_tid works");
        assert_eq!(c.pid(), 500);
        let g = c
            .fork(&with_tid(501))
            .expect("a child inherits the capability");
        assert_eq!(g.pid(), 501);
        c.set_cap_checkpoint_restore(false);
        fails(
            &c,
            &with_tid(502),
            Errno::EPERM,
            "dropped: set_tid is EPERM",
        );
        let gg = fork(&c);
        fails(
            &gg,
            &with_tid(503),
            Errno::EPERM,
            "a child of a task without it inherits nothing",
        );
        for (parent, child) in [(&c, &gg), (&c, &g), (&init, &c)] {
            child.exit(0);
            reap(parent, child);
        }
        assert_at_rest(&sys);
    }
}

#[test]
fn set_tid_other_than_1_in_a_namespace_without_init_is_einval_before_eperm() {
    for &p in Profile::ALL {
        let sys = system_with(p);
        let init = sys.init();
        init.set_cap_checkpoint_restore(false);
        init.unshare_pid_ns().unwrap();
        fails(
            &init,
            &CloneArgs {
                set_tid: vec![5],
                ..Default::default()
            },
            Errno::EINVAL,
            "Linux checks \"the first pid must be 1\" before the capability",
        );
        fails(
            &init,
            &CloneArgs {
                set_tid: vec![1],
                ..Default::default()
            },
            Errno::EPERM,
            "set_tid [1] without the capability",
        );
        assert_eq!(
            init.pid_ns_for_children().nr_allocated(),
            0,
            "{p}: nothing leaked"
        );
        assert_at_rest(&sys);
    }
}

fn clone_thread_without_sighand_and_sighand_without_vm_are_einval() {
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    for (flags, why) in [
        (
            CloneFlags::THREAD,
            "THREAD without SIGHAND: thread groups share signal handlers",
        ),
        (
            CloneFlags::THREAD | CloneFlags::VM,
            "THREAD|VM without SIGHAND",
        ),
        (
            CloneFlags::THREAD | CloneFlags::SIGHAND,
            "SIGHAND without VM: shared handlers imply a shared VM",
        ),
        (CloneFlags::SIGHAND, "SIGHAND without VM, no THREAD"),
    ] {
        fails(&p, &args(flags), Errno::EINVAL, why);
    }
    let t = fork_flags(&p, CloneFlags::NEW_THREAD);
    assert_eq!(t.tgid(), p.pid(), "THREAD|SIGHAND|VM makes a thread");
    let shared = fork_flags(&p, CloneFlags::SIGHAND | CloneFlags::VM);
    assert_ne!(
        shared.tgid(),
        p.pid(),
        "SIGHAND|VM without THREAD is a process"
    );
    shared.exit(0);
    reap(&p, &shared);
    p.exit_group(0);
    reap(&init, &p);
    assert_at_rest(&sys);
}

/// The flags for state uproc does not model are accepted as Linux accepts them (the
/// set `pthread_create` passes makes a thread, `posix_spawn`'s `VM|VFORK` a process);
/// the other namespaces' flags, `DETACHED` and the exit-signal byte are EINVAL;
/// `CLEAR_SIGHAND` is EINVAL with `SIGHAND` and resets `SA_NOCLDWAIT`, not `SIG_IGN`.
fn flags_for_unmodelled_state_are_accepted_and_checked() {
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    let pthread = CloneFlags::VM
        | CloneFlags::FS
        | CloneFlags::FILES
        | CloneFlags::SIGHAND
        | CloneFlags::THREAD
        | CloneFlags::SYSVSEM
        | CloneFlags::SETTLS
        | CloneFlags::PARENT_SETTID
        | CloneFlags::CHILD_CLEARTID;
    let t = fork_flags(&p, pthread);
    assert_eq!(t.tgid(), p.pid(), "pthread_create's flags make a thread");
    let spawned = fork_flags(&p, CloneFlags::VM | CloneFlags::VFORK);
    assert_eq!(spawned.ppid(), p.pid(), "posix_spawn's flags make a child");
    assert!(spawned.is_alive(), "and the caller is not suspended");
    for f in [
        CloneFlags::IO,
        CloneFlags::PTRACE | CloneFlags::UNTRACED,
        CloneFlags::CHILD_SETTID,
    ] {
        let c = fork_flags(&p, f);
        c.exit(0);
        reap(&p, &c);
    }
    let newns = CloneFlags::from_bits_retain(libc::CLONE_NEWNS as u64);
    let detached = CloneFlags::from_bits_retain(0x0040_0000);
    let low_byte = CloneFlags::from_bits_retain(libc::SIGCHLD as u64);
    for (flags, why) in [
        (newns, "no mount namespaces"),
        (detached, "CLONE_DETACHED: clone3_args_valid"),
        (low_byte, "the exit signal has its own field in clone3"),
        (
            CloneFlags::SIGHAND | CloneFlags::VM | CloneFlags::CLEAR_SIGHAND,
            "shared handlers cannot be reset for one",
        ),
    ] {
        fails(&p, &args(flags), Errno::EINVAL, why);
    }
    for (d, after) in [
        (
            uproc_tasklist::SigChld::NoCldWait,
            uproc_tasklist::SigChld::Default,
        ),
        (
            uproc_tasklist::SigChld::Ignore,
            uproc_tasklist::SigChld::Ignore,
        ),
    ] {
        p.set_sigchld(d);
        let c = fork_flags(&p, CloneFlags::CLEAR_SIGHAND);
        let kept = fork(&p);
        assert_eq!(c.sigchld(), after, "{d:?} with CLEAR_SIGHAND");
        assert_eq!(kept.sigchld(), d, "{d:?} without");
        p.set_sigchld(uproc_tasklist::SigChld::Default);
        for x in [c, kept] {
            x.exit(0);
            reap(&p, &x);
        }
    }
    spawned.exit(0);
    reap(&p, &spawned);
    t.exit(0);
    p.exit(0);
    reap(&init, &p);
    assert_at_rest(&sys);
}

every_profile!(
    invalid_flag_combinations_are_einval,
    namespace_init_cannot_clone_parent,
    thread_or_newpid_after_unshare_is_einval,
    set_tid_needs_cap_and_picks_the_number,
    clone_pidfd_refers_to_the_child,
    into_cgroup_and_pids_limit_failures_leak_nothing,
    thread_into_another_cgroup_is_eopnotsupp,
    fatal_signal_pending_on_parent_is_eintr,
    fork_into_closed_namespace_is_enomem,
    closed_namespace_race_fails_forks_cleanly,
    clone_thread_without_sighand_and_sighand_without_vm_are_einval,
    flags_for_unmodelled_state_are_accepted_and_checked,
);
