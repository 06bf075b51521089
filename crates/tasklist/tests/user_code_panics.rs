//! User code the life cycle calls (signal hooks, pidfd wakers) panicking: the panic is
//! contained and the kill, exit, zap or release that called it finishes for every
//! target, as Linux's, which runs no user code there, always does.

#[macro_use]
mod common;
use common::*;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Wake, Waker};
use uproc_abi::{CloneFlags, Signal};
use uproc_tasklist::{CloneArgs, System, Task, TaskState};

/// The panic hook prints nothing for the panics these tests make on purpose.
fn quiet() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<&str>() != Some(&"deliberate") {
                prev(info);
            }
        }));
    });
}

fn panicking_hook(t: &Task) {
    t.set_signal_hook(Some(Arc::new(|_| panic!("deliberate"))));
}

/// A hook that counts its calls and does nothing else (its task stays alive until
/// its "runtime" ends it).
fn counting_hook(t: &Task, calls: &Arc<AtomicUsize>) {
    let calls = calls.clone();
    t.set_signal_hook(Some(Arc::new(move |_| {
        calls.fetch_add(1, Ordering::SeqCst);
    })));
}

fn kill_with_a_panicking_hook_still_ends_the_bare_threads() {
    quiet();
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    let bare = thread(&p);
    panicking_hook(&p);
    assert_eq!(init.kill(init.pid_of(&p), Signal::KILL), Ok(()));
    assert_eq!(bare.state(), TaskState::Dead, "the bare thread ended");
    assert!(p.fatal_signal_pending());
    p.exit(0);
    assert!(reap(&init, &p).status.signaled() == Some(Signal::KILL));
    assert_at_rest(&sys);
}

fn exit_group_with_a_panicking_hook_still_exits_the_caller() {
    quiet();
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    let hooked = thread(&p);
    panicking_hook(&hooked);
    p.exit_group(3);
    assert!(!p.is_alive(), "the caller exited");
    hooked.exit(0);
    assert_eq!(reap(&init, &p).status.exited(), Some(3));
    assert_at_rest(&sys);
}

fn pgrp_and_cgroup_kills_with_a_panicking_hook_reach_every_member() {
    quiet();
    let sys = system();
    let init = sys.init();
    let cg = sys.cgroup_root().mkdir("k").unwrap();
    for by_cgroup in [false, true] {
        let leader = init.fork(&into_cgroup(&cg)).unwrap();
        leader.setpgid(0, 0).unwrap();
        let calls = Arc::new(AtomicUsize::new(0));
        let members: Vec<Task> = (0..4).map(|_| fork(&leader)).collect();
        panicking_hook(&members[0]);
        counting_hook(&members[1], &calls);
        counting_hook(&members[2], &calls);
        if by_cgroup {
            cg.write("cgroup.kill", "1").unwrap();
        } else {
            init.kill(-init.pid_of(&leader), Signal::KILL).unwrap();
        }
        assert_eq!(calls.load(Ordering::SeqCst), 2, "every other hook heard it");
        assert_eq!(members[3].state(), TaskState::Dead, "the bare member died");
        assert_eq!(leader.state(), TaskState::Zombie);
        for m in &members[..3] {
            m.exit(0);
        }
        reap(&init, &leader);
    }
    assert_eq!(cg.read("cgroup.procs").unwrap(), "");
    assert_at_rest(&sys);
}

fn a_namespace_zap_with_a_panicking_hook_still_empties_the_namespace() {
    quiet();
    let sys = system();
    let init = sys.init();
    let ns_init = fork_flags(&init, CloneFlags::NEWPID);
    let hooked = fork(&ns_init);
    panicking_hook(&hooked);
    let bare = fork(&ns_init);
    ns_init.exit(0);
    assert_eq!(
        bare.state(),
        TaskState::Dead,
        "the zap reached the bare member"
    );
    assert!(hooked.fatal_signal_pending());
    hooked.exit(0);
    assert_eq!(reap(&init, &ns_init).status.exited(), Some(0));
    assert_at_rest(&sys);
}

struct PanickingWaker;

impl Wake for PanickingWaker {
    fn wake(self: Arc<Self>) {
        panic!("deliberate");
    }
}

/// Registers a waker that panics on the task's pidfd.
fn arm(t: &Task) -> impl Future + use<> {
    let mut readable = Box::pin(t.pidfd().expect("forked with CLONE_PIDFD").readable());
    let waker = Waker::from(Arc::new(PanickingWaker));
    assert!(
        readable
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending()
    );
    readable
}

fn counts(sys: &System, cg: &uproc_cgroup::Cgroup) -> (usize, usize, u64) {
    (
        sys.nr_tasks(),
        sys.root_ns().nr_allocated(),
        cg.pids_current(),
    )
}

fn a_panicking_pidfd_waker_does_not_stop_the_release() {
    quiet();
    let sys = system();
    let init = sys.init();
    let cg = sys.cgroup_root().mkdir("w").unwrap();
    let before = counts(&sys, &cg);
    // A self-reaping child is released by its own exit, after the wake-up.
    let mut args = into_cgroup(&cg);
    args.flags |= CloneFlags::AUTOREAP | CloneFlags::PIDFD;
    let c = init.fork(&args).unwrap();
    let _armed = arm(&c);
    c.exit(0);
    assert_eq!(c.state(), TaskState::Dead);
    drop(c);
    assert_eq!(
        counts(&sys, &cg),
        before,
        "released: no task, pid or charge kept"
    );
    // So is a thread; its process then becomes reapable.
    let p = init.fork(&into_cgroup(&cg)).unwrap();
    let t = p
        .fork(&CloneArgs {
            flags: CloneFlags::NEW_THREAD | CloneFlags::PIDFD,
            ..Default::default()
        })
        .unwrap();
    let _armed = arm(&t);
    t.exit(0);
    assert_eq!(t.state(), TaskState::Dead);
    p.exit(4);
    assert_eq!(reap(&init, &p).status.exited(), Some(4));
    drop((p, t));
    assert_eq!(counts(&sys, &cg), before);
    assert_at_rest(&sys);
}

struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("deliberate");
        }
    }
}

/// A runtime's usual hook: it ends its task at once, from the hook, so the copy the
/// kill holds is the last one; the values it captured panic when dropped.
fn self_ending_hook(t: &Task) {
    let me = t.downgrade();
    let guard = PanicsOnDrop;
    t.set_signal_hook(Some(Arc::new(move |sig| {
        let _kept = &guard;
        if let Some(me) = me.upgrade() {
            me.exit_signaled(sig);
        }
    })));
}

fn kills_finish_when_a_hooks_last_drop_panics() {
    quiet();
    let sys = system();
    let init = sys.init();
    let p = fork(&init);
    self_ending_hook(&p);
    assert_eq!(init.kill(init.pid_of(&p), Signal::KILL), Ok(()));
    assert_eq!(reap(&init, &p).status.signaled(), Some(Signal::KILL));
    // A group kill and a namespace zap go on to every other member.
    let leader = fork(&init);
    leader.setpgid(0, 0).unwrap();
    let members: Vec<Task> = (0..3).map(|_| fork(&leader)).collect();
    self_ending_hook(&members[0]);
    init.kill(-init.pid_of(&leader), Signal::KILL).unwrap();
    assert!(members.iter().chain([&leader]).all(|m| !m.is_alive()));
    reap(&init, &leader);
    let ns_init = fork_flags(&init, CloneFlags::NEWPID);
    let m = fork(&ns_init);
    self_ending_hook(&m);
    let bare = fork(&ns_init);
    ns_init.exit(0);
    assert!(!m.is_alive() && !bare.is_alive());
    reap(&init, &ns_init);
    assert_at_rest(&sys);
}

/// A managed task that a fatal signal found managed, made bare afterwards
/// (`set_signal_hook(None)`), is ended by the next SIGKILL, as a bare task is at once.
fn a_task_made_bare_after_its_fatal_signal_dies_of_the_next_sigkill() {
    let sys = system();
    let init = sys.init();
    let cg = sys.cgroup_root().mkdir("k").unwrap();
    for how in 0..3 {
        let p = init.fork_managed(&into_cgroup(&cg)).unwrap();
        init.kill(init.pid_of(&p), Signal::TERM).unwrap();
        assert!(p.fatal_signal_pending());
        p.set_signal_hook(None);
        assert!(p.is_alive(), "nothing ends it yet");
        match how {
            0 => init.kill(init.pid_of(&p), Signal::KILL).unwrap(),
            1 => cg.write("cgroup.kill", "1").unwrap(),
            _ => init.kill(-1, Signal::KILL).unwrap(),
        }
        assert!(!p.is_alive(), "kill {how}");
        assert_eq!(
            reap(&init, &p).status.signaled(),
            Some(Signal::TERM),
            "the first fatal signal's status"
        );
    }
    assert_at_rest(&sys);
}

every_profile!(
    kill_with_a_panicking_hook_still_ends_the_bare_threads,
    exit_group_with_a_panicking_hook_still_exits_the_caller,
    pgrp_and_cgroup_kills_with_a_panicking_hook_reach_every_member,
    a_namespace_zap_with_a_panicking_hook_still_empties_the_namespace,
    a_panicking_pidfd_waker_does_not_stop_the_release,
    kills_finish_when_a_hooks_last_drop_panics,
    a_task_made_bare_after_its_fatal_signal_dies_of_the_next_sigkill,
);
