//! Global lock acquisitions per life cycle, as Linux takes them (`Linux*`), and none on
//! the fork/exit/reap path but amortised pool refills (`Scalable`).

mod common;
use common::*;
use uproc_abi::lockstat::{ENABLED, LockStat};
use uproc_abi::{CloneFlags, Profile, Signal, WaitOptions};
use uproc_tasklist::{SigChld, System, WaitId};

fn stats(sys: &System) -> [LockStat; 4] {
    let v = sys.lock_stats();
    assert_eq!(v[0].name, "pidmap_lock");
    assert_eq!(v[1].name, "tasklist_lock");
    assert_eq!(v[2].name, "css_set_lock");
    assert_eq!(v[3].name, "pidns_pool_lock");
    [v[0].clone(), v[1].clone(), v[2].clone(), v[3].clone()]
}

/// (pidmap, tasklist write, tasklist read, css_set) taken by `f`, plus the number-pool
/// lock refills (`Scalable`'s only global lock, amortised).
fn delta_with_pool(sys: &System, f: impl FnOnce()) -> ((u64, u64, u64, u64), u64) {
    let a = stats(sys);
    f();
    let b = stats(sys);
    (
        (
            b[0].write - a[0].write,
            b[1].write - a[1].write,
            b[1].read - a[1].read,
            b[2].write - a[2].write,
        ),
        b[3].write + b[3].read - a[3].write - a[3].read,
    )
}

/// (pidmap, tasklist write, tasklist read, css_set) taken by `f`.
fn delta(sys: &System, f: impl FnOnce()) -> (u64, u64, u64, u64) {
    delta_with_pool(sys, f).0
}

/// The named global locks one life cycle takes under `p`: `(pidmap_lock, tasklist_lock
/// write, tasklist_lock read, css_set_lock)`. `Scalable`'s `pidmap_lock` count is the
/// amortised refill of per-thread number batches, checked by [`assert_cycles`] as a
/// bound instead; it takes no `css_set_lock` (per-cgroup membership).
fn per_cycle(p: Profile) -> (u64, u64, u64, u64) {
    match p {
        Profile::Linux618 => (3, 3, 0, 3),
        Profile::Linux70 => (2, 3, 0, 3),
        Profile::Scalable => (0, 0, 0, 0),
    }
}

/// Runs `cycles` life cycles (`one`) under `p` and checks the lock counts: exact for the
/// `Linux*` profiles; for `Scalable`, no `tasklist_lock` at all and at most one pool
/// refill per 20 life cycles (plus one, as a refill may fall in any window).
fn assert_cycles(sys: &System, p: Profile, cycles: u64, what: &str, mut one: impl FnMut()) {
    let (d, pool) = delta_with_pool(sys, || (0..cycles).for_each(|_| one()));
    let (pm, tw, tr, css) = per_cycle(p);
    let want = (pm * cycles, tw * cycles, tr * cycles, css * cycles);
    if p == Profile::Scalable {
        assert!(
            d.0 + pool <= cycles / 20 + 1,
            "{p}: {what}: pidmap_lock {} + pool refills {pool} in {cycles} cycles",
            d.0
        );
        assert_eq!(
            (d.1, d.2, d.3),
            (want.1, want.2, want.3),
            "{p}: {what}: tasklist W, R, css_set"
        );
    } else {
        assert_eq!(
            (d, pool),
            (want, 0),
            "{p}: {what}: pidmap, tasklist W, tasklist R, css_set; no pool lock"
        );
    }
}

#[test]
fn plain_fork_exit_reap_takes_each_lock_exactly() {
    const { assert!(ENABLED, "tests run with the lockstat feature") };
    for &p in Profile::ALL {
        let sys = system_with(p);
        let init = sys.init();
        for cycles in [1, 1000] {
            assert_cycles(&sys, p, cycles, "plain life cycle", || {
                let c = fork(&init);
                c.exit(0);
                reap(&init, &c);
            });
        }
        // The split (Linux*): 1 tasklist write on fork, 1 on exit, 1 on reap.
        let tl = per_cycle(p).1 / 3;
        let c = fork(&init);
        assert_eq!(
            delta(&sys, || c.exit(0)).1,
            tl,
            "{p}: exit_notify takes tasklist_lock once (Linux*), never (Scalable)"
        );
        assert_eq!(
            delta(&sys, || {
                reap(&init, &c);
            })
            .1,
            tl,
            "{p}: release_task takes it once (Linux*), never (Scalable)"
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
        assert_cycles(&sys, p, 100, "thread life cycle", || {
            let t = thread(&init);
            t.exit(0);
        });
        assert_cycles(&sys, p, 100, "autoreap life cycle", || {
            let c = fork_flags(&init, CloneFlags::AUTOREAP);
            c.exit(0);
        });
        let q = fork(&init);
        q.set_sigchld(SigChld::Ignore);
        assert_cycles(&sys, p, 100, "SIG_IGN parent life cycle", || {
            let c = fork(&q);
            c.exit(0);
        });
        assert_cycles(&sys, p, 100, "SIGKILL by pid takes no extra lock", || {
            let c = fork(&init);
            init.kill(init.pid_of(&c), Signal::KILL).unwrap();
            reap(&init, &c);
        });
        // A process tree: reparenting of grandchildren to the runtime init, which
        // reaps them, takes no global lock either under `Scalable`.
        if p == Profile::Scalable {
            let d = delta(&sys, || {
                for _ in 0..100 {
                    let c = fork(&init);
                    let g = fork(&c);
                    c.exit(0);
                    reap(&init, &c);
                    g.exit(0); // autoreaped by the runtime init
                }
            });
            assert_eq!(
                (d.1, d.2),
                (0, 0),
                "{p}: reparenting takes no tasklist_lock"
            );
        }
    }
}
