//! Global lock acquisitions per life cycle, as Linux takes them (`alloc_pid`,
//! `copy_process`, `release_task`, `cgroup_can_fork`/`post_fork`/`task_dead`).

mod common;
use common::*;
use uproc_abi::lockstat::{ENABLED, LockStat};
use uproc_abi::{CloneFlags, Profile, Signal, WaitOptions};
use uproc_tasklist::{SigChld, System, WaitId};

fn stats(sys: &System) -> [LockStat; 3] {
    let v = sys.lock_stats();
    assert_eq!(v[0].name, "pidmap_lock");
    assert_eq!(v[1].name, "tasklist_lock");
    assert_eq!(v[2].name, "css_set_lock");
    [v[0].clone(), v[1].clone(), v[2].clone()]
}

/// (pidmap, tasklist write, tasklist read, css_set) taken by `f`.
fn delta(sys: &System, f: impl FnOnce()) -> (u64, u64, u64, u64) {
    let a = stats(sys);
    f();
    let b = stats(sys);
    (
        b[0].write - a[0].write,
        b[1].write - a[1].write,
        b[1].read - a[1].read,
        b[2].write - a[2].write,
    )
}

fn pidmap_per_cycle(p: Profile) -> u64 {
    match p {
        Profile::Linux618 => 3,
        Profile::Linux70 => 2,
    }
}

#[test]
fn plain_fork_exit_reap_takes_each_lock_exactly() {
    const { assert!(ENABLED, "tests run with the lockstat feature") };
    for &p in Profile::ALL {
        let sys = system_with(p);
        let init = sys.init();
        let d = delta(&sys, || {
            let c = fork(&init);
            c.exit(0);
            reap(&init, &c);
        });
        assert_eq!(
            d,
            (pidmap_per_cycle(p), 3, 0, 3),
            "{p}: pidmap, tasklist W, tasklist R, css_set"
        );
        // The split: 1 tasklist write on fork, 1 on exit, 1 on reap.
        let c = fork(&init);
        assert_eq!(
            delta(&sys, || c.exit(0)).1,
            1,
            "{p}: exit_notify takes tasklist_lock once"
        );
        assert_eq!(
            delta(&sys, || {
                reap(&init, &c);
            })
            .1,
            1,
            "{p}: release_task takes it once"
        );
        let d = delta(&sys, || {
            let _ = init.wait(WaitId::All, WaitOptions::EXITED | WaitOptions::NOHANG);
        });
        assert_eq!(d, (0, 0, 0, 0), "{p}: waiting takes no global lock");
    }
}

#[test]
fn thread_and_autoreap_and_killed_cycles_take_the_same() {
    for &p in Profile::ALL {
        let sys = system_with(p);
        let init = sys.init();
        let d = delta(&sys, || {
            let t = thread(&init);
            t.exit(0);
        });
        assert_eq!(d, (pidmap_per_cycle(p), 3, 0, 3), "{p}: thread life cycle");
        let d = delta(&sys, || {
            let c = fork_flags(&init, CloneFlags::AUTOREAP);
            c.exit(0);
        });
        assert_eq!(
            d,
            (pidmap_per_cycle(p), 3, 0, 3),
            "{p}: autoreap life cycle"
        );
        let q = fork(&init);
        q.set_sigchld(SigChld::Ignore);
        let d = delta(&sys, || {
            let c = fork(&q);
            c.exit(0);
        });
        assert_eq!(
            d,
            (pidmap_per_cycle(p), 3, 0, 3),
            "{p}: SIG_IGN parent life cycle"
        );
        let d = delta(&sys, || {
            let c = fork(&init);
            init.kill(init.pid_of(&c), Signal::KILL).unwrap();
            reap(&init, &c);
        });
        assert_eq!(
            d,
            (pidmap_per_cycle(p), 3, 0, 3),
            "{p}: SIGKILL by pid takes no extra lock"
        );
    }
}
