//! Pid namespaces: nested numbers, visibility, unshare/setns, and the death of a
//! namespace init (selftests: `pid_namespace/`, `clone3/clone3_set_tid.c`).

#[macro_use]
mod common;
use common::*;
use std::sync::Arc;
use uproc_abi::{CloneFlags, Errno, PidfdFlags, Profile, Signal, WaitOptions};
use uproc_tasklist::{CloneArgs, System, SystemConfig, TaskState, WaitId};

fn newpid_child_is_pid_1_with_nested_numbers() {
    let sys = system();
    let init = sys.init();
    let n = fork_flags(&init, CloneFlags::NEWPID);
    assert_eq!(n.pid(), 1);
    assert_eq!(n.nspid().len(), 2);
    assert_eq!(n.nspid()[1], 1);
    assert_eq!(init.pid_of(&n), n.nspid()[0]);
    assert_eq!(
        n.ppid(),
        0,
        "the parent of a namespace init is invisible to it"
    );
    let c = fork(&n);
    assert_eq!(c.pid(), 2);
    assert_eq!(c.ppid(), 1);
    assert_eq!(c.pid_of(&init), 0, "the outer init is invisible inside");
    assert_eq!(n.pid_ns().level(), 1);
    assert!(c.status().contains("NSpid:\t"), "status has NSpid");
    c.exit(0);
    reap(&n, &c);
    n.exit(0);
    reap(&init, &n);
    assert_at_rest(&sys);
}

fn unshare_and_setns() {
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    p.unshare_pid_ns().unwrap();
    let ns = p.pid_ns_for_children();
    assert_eq!(ns.level(), 1);
    assert_eq!(p.pid_ns().level(), 0, "unshare does not move the caller");
    let q = fork(&init);
    assert_eq!(
        q.setns_pid(&ns),
        Err(Errno::ENOENT),
        "no init yet: Linux's pid_for_children cannot be opened"
    );
    assert_eq!(
        p.setns_pid(&ns),
        Err(Errno::ENOENT),
        "not even by the task that unshared it"
    );
    assert!(Arc::ptr_eq(&p.pid_ns_for_children(), &ns), "unchanged");
    let deeper_parent = fork_flags(&init, CloneFlags::NEWPID);
    assert_eq!(
        deeper_parent.setns_pid(&ns),
        Err(Errno::EINVAL),
        "a sibling namespace is not a descendant of the active one"
    );
    assert_eq!(
        deeper_parent.setns_pid(&sys.root_ns().clone()),
        Err(Errno::EINVAL),
        "an ancestor namespace"
    );
    // p forks into ns, which has no init yet: its child becomes the init.
    let i = fork(&p);
    assert_eq!(i.pid(), 1);
    assert_eq!(
        q.setns_pid(&ns),
        Ok(()),
        "a descendant namespace is allowed"
    );
    let c = fork(&q);
    assert_eq!(c.pid(), 2, "q's child joins the same namespace");
    for (parent, t) in [(&q, &c), (&p, &i)] {
        t.exit(0);
        reap(parent, t);
    }
    for t in [&p, &q, &deeper_parent] {
        t.exit(0);
        reap(&init, t);
    }
}

/// `setns(pidfd, CLONE_NEWPID)`: the namespace of the pidfd's thread, ESRCH once that
/// thread has begun its exit (Linux reads it from the `nsproxy` `do_exit` drops),
/// EINVAL outside the caller's namespace tree; measured on Linux 6.18 by the test
/// against the running kernel.
fn setns_through_a_pidfd() {
    let sys = system();
    let init = sys.init();
    let n = fork_flags(&init, CloneFlags::NEWPID);
    let member = fork(&n);
    let p = fork(&init);
    let fd = p
        .pidfd_open(p.pid_of(&member), PidfdFlags::empty())
        .unwrap();
    p.setns_pidfd(&fd).unwrap();
    assert!(Arc::ptr_eq(&p.pid_ns_for_children(), &n.pid_ns()));
    assert_eq!(
        fork_errno(&p, CloneFlags::NEW_THREAD),
        Err(Errno::EINVAL),
        "no thread whose namespace differs from its group's"
    );
    assert_eq!(
        fork_errno(&p, CloneFlags::NEWPID),
        Err(Errno::EINVAL),
        "CLONE_NEWPID only from the active namespace (copy_pid_ns)"
    );
    let c = fork(&p);
    assert_eq!(c.pid_ns().level(), 1);
    assert_eq!(c.ppid(), 0, "its parent is outside its namespace");
    assert_eq!(p.pid_of(&c), c.nspid()[0]);
    // Back: a pidfd of p itself (its active namespace) undoes the change.
    let own = init
        .pidfd_open(init.pid_of(&p), PidfdFlags::empty())
        .unwrap();
    p.setns_pidfd(&own).unwrap();
    assert!(Arc::ptr_eq(&p.pid_ns_for_children(), &p.pid_ns()));

    // From inside, a pidfd of the outside is EINVAL (an ancestor namespace).
    let outer = member
        .pidfd_open(member.pid_of(&n), PidfdFlags::empty())
        .unwrap();
    assert_eq!(
        member.setns_pidfd(&outer),
        Ok(()),
        "its own namespace: fine"
    );
    let of_p = init
        .pidfd_open(init.pid_of(&p), PidfdFlags::empty())
        .unwrap();
    assert_eq!(member.setns_pidfd(&of_p), Err(Errno::EINVAL));

    // A zombie, and a leader whose thread still runs, have begun their exits: ESRCH,
    // before the namespace check.
    let z = fork(&n);
    let zfd = init
        .pidfd_open(init.pid_of(&z), PidfdFlags::empty())
        .unwrap();
    z.exit(0);
    assert_eq!(z.state(), TaskState::Zombie);
    assert_eq!(p.setns_pidfd(&zfd), Err(Errno::ESRCH));
    assert_eq!(
        member.setns_pidfd(&of_p),
        Err(Errno::EINVAL),
        "p still lives"
    );
    let l = fork(&n);
    let t = thread(&l);
    let lfd = init
        .pidfd_open(init.pid_of(&l), PidfdFlags::empty())
        .unwrap();
    let tfd = init
        .pidfd_open(init.pid_of(&t), PidfdFlags::THREAD)
        .unwrap();
    l.exit(0);
    assert_eq!(
        p.setns_pidfd(&lfd),
        Err(Errno::ESRCH),
        "the leader thread exited"
    );
    assert_eq!(
        p.setns_pidfd(&tfd),
        Ok(()),
        "its live thread names the namespace"
    );
    assert!(Arc::ptr_eq(&p.pid_ns_for_children(), &n.pid_ns()));
    t.exit(0);
    reap(&n, &z);
    reap(&n, &l);
    assert_eq!(p.setns_pidfd(&zfd), Err(Errno::ESRCH), "reaped");
    // Nothing changed by the failures: p's children still go to n's namespace.
    let c2 = fork(&p);
    assert!(Arc::ptr_eq(&c2.pid_ns(), &n.pid_ns()));
    // A pidfd of another runtime's task names no namespace of this one: EINVAL.
    let other = system();
    let stranger = fork(&other.init());
    let sfd = other
        .init()
        .pidfd_open(other.init().pid_of(&stranger), PidfdFlags::empty())
        .unwrap();
    assert_eq!(p.setns_pidfd(&sfd), Err(Errno::EINVAL));
    for (parent, t) in [(&p, &c), (&p, &c2), (&n, &member)] {
        t.exit(0);
        reap(parent, t);
    }
    for t in [&p, &n] {
        t.exit(0);
        reap(&init, t);
    }
    assert_eq!(
        p.setns_pidfd(&own),
        Err(Errno::ESRCH),
        "a reaped caller makes no more calls"
    );
    stranger.exit(0);
    reap(&other.init(), &stranger);
    drop((fd, own, outer, of_p, zfd, lfd, tfd, sfd));
    assert_at_rest(&other);
    assert_at_rest(&sys);
}

fn level_33_is_enospc() {
    let sys = system();
    let init = sys.init();
    let mut chain = vec![];
    let mut cur = init.clone();
    for _ in 0..32 {
        cur = fork_flags(&cur, CloneFlags::NEWPID);
        chain.push(cur.clone());
    }
    assert_eq!(cur.pid_ns().level(), 32);
    assert_eq!(
        cur.fork(&CloneArgs {
            flags: CloneFlags::NEWPID,
            ..Default::default()
        })
        .map(|_| ()),
        Err(Errno::ENOSPC),
        "MAX_PID_NS_LEVEL is 32"
    );
    assert_eq!(cur.unshare_pid_ns(), Err(Errno::ENOSPC));
    // The outermost init's death takes everything down.
    init.kill(init.pid_of(&chain[0]), Signal::KILL).unwrap();
    reap(&init, &chain[0]);
    for t in &chain {
        assert_eq!(t.state(), TaskState::Dead);
    }
    assert_at_rest(&sys);
}

fn init_ignores_signals_from_inside_but_not_sigkill_from_outside() {
    let sys = system();
    let init = sys.init();
    let n = fork_flags(&init, CloneFlags::NEWPID);
    let c = fork(&n);
    for sig in [Signal::KILL, Signal::TERM, Signal::STOP, Signal::USR1] {
        assert_eq!(
            c.kill(1, sig),
            Ok(()),
            "SIGNAL_UNKILLABLE drops it silently"
        );
        assert_eq!(
            n.state(),
            TaskState::Running,
            "{sig} from inside does not affect the init"
        );
    }
    assert_eq!(
        n.kill(1, Signal::KILL),
        Ok(()),
        "the init signalling itself is ignored too"
    );
    assert_eq!(n.state(), TaskState::Running);
    init.kill(init.pid_of(&n), Signal::TERM).unwrap();
    assert_eq!(
        n.state(),
        TaskState::Running,
        "only SIGKILL/SIGSTOP are forced from outside"
    );
    init.kill(init.pid_of(&n), Signal::STOP).unwrap();
    assert_eq!(
        n.state(),
        TaskState::Stopped,
        "SIGSTOP from an ancestor namespace reaches it"
    );
    c.kill(1, Signal::CONT).unwrap();
    assert_eq!(n.state(), TaskState::Running, "SIGCONT continues it");
    init.kill(init.pid_of(&n), Signal::KILL).unwrap();
    assert_eq!(
        c.state(),
        TaskState::Dead,
        "the namespace is killed with its init"
    );
    assert_eq!(reap(&init, &n).status.signaled(), Some(Signal::KILL));
    // The runtime init can never be killed.
    assert_eq!(init.kill(1, Signal::KILL), Ok(()));
    assert_eq!(init.state(), TaskState::Running);
}

/// `pidfd_send_signal` follows the same rule, with the pidfd's namespace (the one it was
/// opened in) as the sender's: SIGKILL/SIGSTOP through a pidfd opened inside the
/// init's namespace are dropped, through one opened from an ancestor they act.
fn init_ignores_sigkill_through_a_pidfd_opened_inside() {
    let sys = system();
    let init = sys.init();
    let n = fork_flags(&init, CloneFlags::NEWPID);
    let c = fork(&n);
    let nested = fork_flags(&c, CloneFlags::NEWPID);
    let none = uproc_abi::PidfdFlags::empty();
    let inside = c.pidfd_open(1, none).unwrap();
    for sig in [Signal::KILL, Signal::STOP, Signal::TERM] {
        assert_eq!(inside.send_signal(sig), Ok(()), "dropped silently");
        assert_eq!(n.state(), TaskState::Running, "{sig} from inside ignored");
    }
    // From the init's namespace into a child namespace: an ancestor's pidfd.
    let of_nested = c.pidfd_open(c.pid_of(&nested), none).unwrap();
    of_nested.send_signal(Signal::STOP).unwrap();
    assert_eq!(
        nested.state(),
        TaskState::Stopped,
        "SIGSTOP from an ancestor"
    );
    of_nested.send_signal(Signal::KILL).unwrap();
    assert_eq!(
        nested.state(),
        TaskState::Zombie,
        "SIGKILL from an ancestor"
    );
    reap(&c, &nested);
    let outside = init.pidfd_open(init.pid_of(&n), none).unwrap();
    outside.send_signal(Signal::TERM).unwrap();
    assert_eq!(n.state(), TaskState::Running, "only KILL/STOP are forced");
    outside.send_signal(Signal::KILL).unwrap();
    assert_eq!(n.state(), TaskState::Zombie, "the init dies of it");
    assert_eq!(c.state(), TaskState::Dead, "and its namespace with it");
    reap(&init, &n);
    assert_at_rest(&sys);
}

fn init_death_kills_the_namespace_and_is_reaped_last() {
    let sys = system();
    let init = sys.init();
    let n = fork_flags(&init, CloneFlags::NEWPID);
    let ns = n.pid_ns();
    let a = fork(&n);
    let b = fork(&a);
    let t = thread(&b);
    let z = fork(&n);
    z.exit(1); // a zombie child of the init
    // A managed task survives until its runtime acts on the SIGKILL.
    let m = fork(&a);
    let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let h2 = hits.clone();
    m.set_signal_hook(Some(Arc::new(move |s| {
        assert_eq!(s, Signal::KILL);
        h2.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    })));
    // A task outside the namespace that forked into it (setns) keeps its child.
    let outside = fork(&init);
    outside.setns_pid(&ns).unwrap();
    let o = fork(&outside);
    assert_eq!(o.pid_ns().level(), 1);

    n.exit(0);
    assert!(!ns.is_adding(), "disable_pid_allocation");
    assert_eq!(
        n.fork(&CloneArgs::default()).map(|_| ()),
        Err(Errno::ESRCH),
        "the dead init cannot fork"
    );
    assert_eq!(
        outside.fork(&CloneArgs::default()).map(|_| ()),
        Err(Errno::ENOMEM),
        "fork into the closed namespace"
    );
    for x in [&a, &b, &t, &z] {
        assert_eq!(
            x.state(),
            TaskState::Dead,
            "bare tasks die at once and autoreap"
        );
    }
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the managed task's hook ran"
    );
    assert!(m.fatal_signal_pending());
    assert_eq!(
        n.state(),
        TaskState::Running,
        "Linux: the init sleeps in do_exit until its namespace is empty"
    );
    assert_eq!(
        init.wait(WaitId::All, WaitOptions::EXITED | WaitOptions::NOHANG),
        Ok(None),
        "the init is not reapable while its namespace has tasks"
    );
    m.exit_signaled(Signal::KILL);
    assert_eq!(
        m.state(),
        TaskState::Dead,
        "the init's SIGCHLD is ignored: orphans autoreap"
    );
    assert_eq!(
        init.wait(WaitId::All, WaitOptions::EXITED | WaitOptions::NOHANG),
        Ok(None),
        "o is not reaped yet: its parent is outside"
    );
    assert_eq!(o.state(), TaskState::Zombie, "o was killed too");
    assert_eq!(n.state(), TaskState::Running, "o's number is still in use");
    reap(&outside, &o);
    assert_eq!(n.state(), TaskState::Zombie, "the namespace is empty");
    let info = reap(&init, &n);
    assert_eq!(info.status.exited(), Some(0));
    assert_eq!(ns.nr_allocated(), 0);
    outside.exit(0);
    reap(&init, &outside);
    assert_at_rest(&sys);
}

/// A process group id is a number in use (`PIDTYPE_PGID` keeps the pid attached): a
/// process outside a namespace that joined a group led by a member keeps that number
/// allocated after the member is reaped, so the namespace's dead init waits in its
/// exit (shown running, not reapable) until the outsider leaves the group. Measured
/// on Linux 6.18 by the test against the running kernel.
fn init_waits_while_an_outsider_holds_a_member_group() {
    let sys = system();
    let init = sys.init();
    let n = fork_flags(&init, CloneFlags::NEWPID);
    let member = fork(&n);
    member.setpgid(0, 0).unwrap();
    let outsider = fork(&init);
    let group = init.pid_of(&member);
    init.setpgid(init.pid_of(&outsider), group).unwrap();
    assert_eq!(outsider.getpgid(), group);
    n.exit(0);
    assert_eq!(member.state(), TaskState::Dead, "killed and autoreaped");
    assert_eq!(
        n.pid_ns().nr_allocated(),
        2,
        "the init's number and the group's"
    );
    assert_eq!(n.state(), TaskState::Running, "still in its exit");
    assert_eq!(
        init.wait(WaitId::All, WaitOptions::EXITED | WaitOptions::NOHANG),
        Ok(None),
        "not reapable while the group's number is in use"
    );
    assert_eq!(
        init.kill(-group, Signal::KILL),
        Ok(()),
        "the group is still there (its one member outside)"
    );
    assert_eq!(outsider.state(), TaskState::Zombie);
    assert_eq!(
        n.state(),
        TaskState::Running,
        "a zombie member still holds it"
    );
    reap(&init, &outsider);
    assert_eq!(n.state(), TaskState::Zombie, "the namespace emptied");
    let info = reap(&init, &n);
    assert_eq!(info.status.exited(), Some(0));
    assert_at_rest(&sys);
}

/// Of a namespace init with threads, the thread whose exit ended the process is the
/// one that waits for the namespace to empty (running); a leader that exited before it
/// is a zombie meanwhile (measured on Linux 6.18 by the test against the running
/// kernel: `/proc` shows the leader `Z` and that thread `S`).
fn the_last_thread_of_an_init_waits_for_its_namespace() {
    let sys = system();
    let init = sys.init();
    let n = fork_flags(&init, CloneFlags::NEWPID);
    let last = thread(&n);
    let member = fork(&n);
    member.setpgid(0, 0).unwrap();
    let outsider = fork(&init);
    let group = init.pid_of(&member);
    init.setpgid(init.pid_of(&outsider), group).unwrap();
    n.exit(0);
    assert_eq!(
        n.state(),
        TaskState::Zombie,
        "a zombie leader, its thread alive"
    );
    assert_eq!(
        member.state(),
        TaskState::Running,
        "the thread reaps for the init"
    );
    last.exit(3);
    assert_eq!(member.state(), TaskState::Dead, "killed and autoreaped");
    assert_eq!(last.state(), TaskState::Running, "in its exit, waiting");
    assert_eq!(n.state(), TaskState::Zombie);
    assert_eq!(
        init.wait(WaitId::All, WaitOptions::EXITED | WaitOptions::NOHANG),
        Ok(None),
        "not reapable while the namespace holds a number"
    );
    init.kill(init.pid_of(&outsider), Signal::KILL).unwrap();
    reap(&init, &outsider);
    assert_eq!(last.state(), TaskState::Dead, "the namespace emptied");
    assert_eq!(n.state(), TaskState::Zombie);
    let info = reap(&init, &n);
    assert_eq!(info.status.exited(), Some(3), "the last thread's code");
    assert_at_rest(&sys);
}

fn init_with_threads_dies_when_its_last_thread_does() {
    let sys = system();
    let init = sys.init();
    let n = fork_flags(&init, CloneFlags::NEWPID);
    let t = thread(&n);
    let c = fork(&n);
    n.exit(0);
    assert_eq!(
        c.state(),
        TaskState::Running,
        "a live thread keeps the init alive"
    );
    assert!(n.pid_ns().is_adding());
    let c2 = fork(&t);
    assert_eq!(c2.ppid(), 1);
    t.exit(0);
    assert_eq!(c.state(), TaskState::Dead);
    assert_eq!(c2.state(), TaskState::Dead);
    reap(&init, &n);
    assert_at_rest(&sys);
}

fn orphans_inside_a_namespace_go_to_its_init() {
    let sys = system();
    let init = sys.init();
    let n = fork_flags(&init, CloneFlags::NEWPID);
    let p = fork(&n);
    let c = fork(&p);
    p.exit(0);
    reap(&n, &p);
    assert_eq!(c.ppid(), 1, "the namespace init adopts");
    c.exit(6);
    assert_eq!(
        c.state(),
        TaskState::Zombie,
        "a namespace init is not the runtime init: no autoreap"
    );
    assert_eq!(reap(&n, &c).status.exited(), Some(6));
    n.exit(0);
    reap(&init, &n);
}

#[test]
fn dying_namespace_init_reaps_children_of_every_exit_signal() {
    for &p in uproc_abi::Profile::ALL {
        let sys = system_with(p);
        let init = sys.init();
        for exit_signal in [Signal::USR1, Signal::PROBE, Signal::CHLD] {
            let n = fork_flags(&init, CloneFlags::NEWPID);
            let with = |sig: Signal| CloneArgs {
                exit_signal: Some(sig),
                ..Default::default()
            };
            // One still running when the init dies, one already a zombie.
            let running = n.fork(&with(exit_signal)).unwrap();
            let zombie = n.fork(&with(exit_signal)).unwrap();
            zombie.exit(3);
            let grandchild = fork(&running);
            n.exit(0);
            for t in [&running, &zombie, &grandchild] {
                assert_eq!(
                    t.state(),
                    TaskState::Dead,
                    "{p}/{exit_signal}: zap_pid_ns_processes reaps every child (__WALL)"
                );
            }
            assert_eq!(
                n.pid_ns().nr_allocated(),
                1,
                "{p}/{exit_signal}: only the init is left"
            );
            let info = init
                .wait(
                    WaitId::Pid(init.pid_of(&n)),
                    WaitOptions::EXITED | WaitOptions::NOHANG,
                )
                .unwrap();
            assert_eq!(
                info.map(|i| i.status.exited()),
                Some(Some(0)),
                "{p}/{exit_signal}: the init is reapable once its namespace is empty"
            );
        }
        assert_at_rest(&sys);
    }
}

/// `task_pgrp_nr_ns`/`task_session_nr_ns`: a namespace init's group and session are
/// its parent's, outside its namespace: invisible (0) inside, numbered outside; once it
/// leads a group of its own, its number in each namespace.
fn pgid_and_sid_in_each_namespace() {
    let sys = system();
    let init = sys.init();
    let root = sys.root_ns().clone();
    let outer = fork(&init);
    outer.setsid().unwrap();
    let n = fork_flags(&outer, CloneFlags::NEWPID);
    let inner = n.pid_ns();
    assert_eq!(n.pgid_in(&root), outer.pid());
    assert_eq!(n.sid_in(&root), outer.pid());
    assert_eq!(n.pgid_in(&inner), 0, "the group's leader is outside");
    assert_eq!(n.getpgid(), 0);
    assert_eq!(n.getsid(), 0);
    let c = fork(&n);
    assert_eq!((c.pgid_in(&root), c.pgid_in(&inner)), (outer.pid(), 0));
    c.setpgid(0, 0).unwrap();
    assert_eq!(
        c.pgid_in(&inner),
        c.pid(),
        "its own group, by its inner number"
    );
    assert_eq!(c.pgid_in(&root), init.pid_of(&c), "and by its outer one");
    assert_eq!(c.getpgid(), c.pid());
    assert_eq!(c.sid_in(&root), outer.pid(), "still the outer session");
    assert_eq!(c.sid_in(&inner), 0);
    c.exit(0);
    assert_eq!(
        c.pgid_in(&inner),
        c.pid(),
        "a zombie keeps its group until reaped"
    );
    reap(&n, &c);
    assert_eq!((c.pgid_in(&root), c.sid_in(&root)), (0, 0), "reaped: none");
    n.exit(0);
    reap(&outer, &n);
    outer.exit(0);
    reap(&init, &outer);
    assert_at_rest(&sys);
}

/// A nested namespace is freed when its last user goes, under every profile: its init
/// dead and reaped, the last pid and handle dropped. (Under `Scalable` its init holds
/// the per-thread credits of the namespace's reference count open, and they go back
/// with the init's task.) While the init lives, forks into the namespace and their
/// reaps do not write its shared reference count under `Scalable`: they take and give
/// back their thread's credits.
fn a_nested_namespace_goes_with_its_last_user() {
    let sys = system();
    let init = sys.init();
    let n = fork_flags(&init, CloneFlags::NEWPID);
    let ns = n.pid_ns();
    assert_eq!(ns.level(), 1);
    let weak = Arc::downgrade(&ns);
    // Warm up (the first take refills this thread's credits in one burst).
    let c = fork(&n);
    c.exit(0);
    reap(&n, &c);
    drop(c);
    let before = Arc::strong_count(&ns);
    let children: Vec<_> = (0..10).map(|_| fork(&n)).collect();
    let with_ten = Arc::strong_count(&ns);
    if profile() == Profile::Scalable {
        assert_eq!(with_ten, before, "ten forks took their thread's credits");
    } else {
        assert_eq!(with_ten, before + 10, "each pid holds its namespace");
    }
    for c in children {
        c.exit(0);
        reap(&n, &c);
    }
    assert_eq!(Arc::strong_count(&ns), before, "the reaps gave them back");
    drop(ns);
    // A member still forked when the init dies: killed, reaped by the init.
    let member = fork(&n);
    n.exit(0);
    reap(&init, &n);
    assert!(
        weak.upgrade().is_some(),
        "a handle of a member still names it"
    );
    drop((n, member));
    assert!(weak.upgrade().is_none(), "{:?}: freed", profile());
    assert_at_rest(&sys);
}

/// A runtime dropped while a nested namespace's init still lives frees the namespace
/// with everything else.
fn a_nested_namespace_goes_with_its_runtime() {
    let weak = {
        let sys = system();
        let init = sys.init();
        let n = fork_flags(&init, CloneFlags::NEWPID);
        let kids: Vec<_> = (0..3).map(|_| fork(&n)).collect();
        let weak = Arc::downgrade(&n.pid_ns());
        drop((kids, n, init));
        drop(sys);
        weak
    };
    assert!(weak.upgrade().is_none(), "{:?}: freed", profile());
}

/// After `unshare(CLONE_NEWPID)`, a first fork that fails after its pid was allocated
/// (here the pids limit) closes the new namespace: later forks fail with ENOMEM
/// (`free_pid`'s `case PIDNS_ADDING`; measured on Linux 6.18). One that fails inside
/// `alloc_pid` (the pid namespace full) leaves it open, its next fork pid 1. (uproc
/// gave the next fork pid 1 in both cases.)
fn a_first_fork_failing_after_alloc_pid_closes_the_unshared_namespace() {
    let sys = system();
    let init = sys.init();
    let full = sys.cgroup_root().mkdir("full").unwrap();
    full.set_pids_max(uproc_cgroup::Limit::Value(0)).unwrap();
    let into_full = into_cgroup(&full);
    let a = fork(&init);
    a.unshare_pid_ns().unwrap();
    assert_eq!(a.fork(&into_full).err(), Some(Errno::EAGAIN));
    assert_eq!(
        a.fork(&CloneArgs::default()).err(),
        Some(Errno::ENOMEM),
        "the namespace closed with its first process"
    );
    a.exit(0);
    reap(&init, &a);
    // A failure inside alloc_pid: the root namespace is full (pid_max 301: 1 is init,
    // `b` and the held forks take the rest).
    let sys = System::new(SystemConfig {
        pid_max: 301,
        profile: profile(),
        ..SystemConfig::default()
    })
    .unwrap();
    let init = sys.init();
    let b = fork(&init);
    b.unshare_pid_ns().unwrap();
    let mut held = Vec::new();
    while let Ok(t) = init.fork(&CloneArgs::default()) {
        held.push(t);
    }
    assert_eq!(b.fork(&CloneArgs::default()).err(), Some(Errno::EAGAIN));
    let t = held.pop().unwrap();
    t.exit(0);
    reap(&init, &t);
    let first = b.fork(&CloneArgs::default()).expect("still open");
    assert_eq!(first.nspid().last(), Some(&1), "its first process is pid 1");
    first.exit(0);
    reap(&b, &first);
    for t in held {
        t.exit(0);
        reap(&init, &t);
    }
    b.exit(0);
    reap(&init, &b);
}

/// A killed namespace init waits in its exit for its namespace to empty; Linux's
/// `exit_notify` asks whether its exit orphaned its process group only after that
/// (`kill_orphaned_pgrp` after `zap_pid_ns_processes` returns), and until then the
/// init, not yet a zombie, still links its group to its session. Setup (each case
/// measured on Linux 6.18): M leads a session; X, M's first child after
/// `unshare(CLONE_NEWPID)`, is the namespace's init and leads group G; Z (M's child in
/// X's namespace) keeps the zap waiting until M reaps it; O, in G, was forked by Q,
/// M's child in G, which exited: O's parent is the runtime init, outside the session.
fn a_dying_inits_group_is_judged_orphaned_when_its_zap_ends() {
    // O is stopped by SIGSTOP before the kill, or by SIGTSTP during the zap (which a
    // group still linked does not discard). `extra`: E, M's child, is in G too and
    // dies during the zap (Linux sends nothing then: X still links G).
    for (stop_before, extra) in [(true, false), (false, false), (false, true)] {
        let sys = system_without_orphan_reaping();
        let init = sys.init();
        let m = fork(&init);
        m.setsid().unwrap();
        let q = fork(&m);
        let e = fork(&m);
        m.unshare_pid_ns().unwrap();
        let x = fork(&m);
        let z = fork(&m);
        let xp = m.pid_of(&x);
        m.setpgid(xp, 0).unwrap();
        m.setpgid(m.pid_of(&q), xp).unwrap();
        if extra {
            m.setpgid(m.pid_of(&e), xp).unwrap();
        }
        let o = fork(&q);
        let sig = if stop_before {
            Signal::STOP
        } else {
            Signal::TSTP
        };
        if stop_before {
            m.kill(m.pid_of(&o), sig).unwrap();
        }
        q.exit(0);
        reap(&m, &q);
        m.kill(xp, Signal::KILL).unwrap();
        assert_eq!(z.state(), TaskState::Zombie, "killed by the zap");
        assert_eq!(x.state(), TaskState::Running, "X waits for M to reap Z");
        if !stop_before {
            m.kill(m.pid_of(&o), sig).unwrap();
        }
        if extra {
            m.kill(m.pid_of(&e), Signal::KILL).unwrap();
            reap(&m, &e);
        }
        assert_eq!(
            o.state(),
            TaskState::Stopped,
            "G still linked: no SIGHUP yet"
        );
        reap(&m, &z);
        assert_eq!(x.state(), TaskState::Zombie);
        assert_eq!(
            o.exit_status().and_then(|s| s.signaled()),
            Some(Signal::HUP),
            "the zap ended: G is orphaned with a stopped member"
        );
        init.wait(WaitId::Pid(init.pid_of(&o)), WaitOptions::EXITED)
            .unwrap();
        if !extra {
            e.exit(0);
            reap(&m, &e);
        }
        reap(&m, &x);
    }
}

/// The thread that ended a namespace init's process waits for the namespace to empty
/// attached, as Linux's sleeps in `do_exit` with its tid hashed (measured on 6.18:
/// `kill(tid)`, `tgkill` and `pidfd_open(tid, PIDFD_THREAD)` succeed meanwhile), also
/// when it is not the leader; its release and the init's reportable zombie follow
/// when the namespace empties.
fn the_non_leader_thread_that_ends_an_init_waits_attached() {
    let sys = system_without_orphan_reaping();
    let init = sys.init();
    let p = fork(&init);
    p.unshare_pid_ns().unwrap();
    let n = fork(&p);
    let t = fork_flags(&n, CloneFlags::NEW_THREAD);
    let m = fork(&p);
    n.exit(0);
    t.exit_group(6);
    assert_eq!(m.state(), TaskState::Zombie, "killed, p's to reap");
    assert_eq!(t.state(), TaskState::Running, "waits for its namespace");
    let (tid, tgid) = (p.pid_of(&t), p.pid_of(&n));
    for sig in [Signal::new(0).unwrap(), Signal::TERM, Signal::TTIN] {
        assert_eq!(p.kill(tid, sig), Ok(()), "kill(tid, {sig})");
        assert_eq!(p.kill(tgid, sig), Ok(()), "kill(tgid, {sig})");
        assert_eq!(p.tgkill(tgid, tid, sig), Ok(()), "tgkill {sig}");
    }
    let fd = p
        .pidfd_open(tid, PidfdFlags::THREAD)
        .expect("the thread is found");
    assert!(!fd.poll().readable, "not exited yet");
    let opts = WaitOptions::EXITED | WaitOptions::NOHANG;
    assert_eq!(
        p.wait(WaitId::Pid(tgid), opts),
        Ok(None),
        "not reapable yet"
    );
    reap(&p, &m);
    assert_eq!(t.state(), TaskState::Dead, "released with the zap's end");
    assert!(fd.poll().readable);
    assert_eq!(p.kill(tid, Signal::new(0).unwrap()), Err(Errno::ESRCH));
    assert_eq!(reap(&p, &n).status.exited(), Some(6));
    p.exit(0);
    reap(&init, &p);
    assert_at_rest(&sys);
}

every_profile!(
    a_first_fork_failing_after_alloc_pid_closes_the_unshared_namespace,
    pgid_and_sid_in_each_namespace,
    a_nested_namespace_goes_with_its_last_user,
    a_nested_namespace_goes_with_its_runtime,
    init_ignores_sigkill_through_a_pidfd_opened_inside,
    newpid_child_is_pid_1_with_nested_numbers,
    unshare_and_setns,
    setns_through_a_pidfd,
    level_33_is_enospc,
    init_ignores_signals_from_inside_but_not_sigkill_from_outside,
    init_death_kills_the_namespace_and_is_reaped_last,
    init_with_threads_dies_when_its_last_thread_does,
    init_waits_while_an_outsider_holds_a_member_group,
    the_last_thread_of_an_init_waits_for_its_namespace,
    orphans_inside_a_namespace_go_to_its_init,
    a_dying_inits_group_is_judged_orphaned_when_its_zap_ends,
    the_non_leader_thread_that_ends_an_init_waits_attached,
);
