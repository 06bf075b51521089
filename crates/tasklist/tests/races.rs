//! Races that must have no window (each decided in one critical section, as Linux
//! decides it under `tasklist_lock` or the siglock). Each test hammers its window in
//! both profiles; `UPROC_RACE_ITERS` sets the iteration count (default 100k per case
//! in release builds, fewer in debug ones).

mod common;
use common::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use uproc_abi::{CloneFlags, Errno, Profile, WaitOptions};
use uproc_tasklist::{CloneArgs, SigChld, Task, TaskState, WaitId};

/// A parent whose children autoreap in one of the three ways Linux has.
fn autoreaping_parent(init: &Task, how: usize) -> (Task, CloneArgs) {
    let p = fork(init);
    let mut args = CloneArgs::default();
    match how {
        0 => p.set_sigchld(SigChld::Ignore),
        1 => p.set_sigchld(SigChld::NoCldWait),
        _ => args.flags = CloneFlags::AUTOREAP,
    }
    (p, args)
}

#[test]
fn autoreaped_child_is_never_seen_by_a_concurrent_waiter() {
    let iters = race_iterations(100_000, 20_000);
    let mut seen = Vec::new();
    for &prof in Profile::ALL {
        for how in 0..3 {
            let sys = system_with(prof);
            let init = sys.init();
            let (parent, args) = autoreaping_parent(&init, how);
            let stop = Arc::new(AtomicBool::new(false));
            let reaped = Arc::new(AtomicUsize::new(0));
            let waiter = {
                let (parent, stop, reaped) = (parent.clone(), stop.clone(), reaped.clone());
                std::thread::spawn(move || {
                    let opts = WaitOptions::EXITED | WaitOptions::NOHANG | WaitOptions::ALL;
                    while !stop.load(Ordering::Relaxed) {
                        match parent.wait(WaitId::All, opts) {
                            Ok(Some(_)) => {
                                reaped.fetch_add(1, Ordering::Relaxed);
                            }
                            Ok(None) | Err(Errno::ECHILD) => {}
                            Err(e) => panic!("unexpected wait error {e}"),
                        }
                    }
                })
            };
            for _ in 0..iters {
                let c = parent.fork(&args).expect("fork");
                c.exit(0);
                assert_eq!(
                    c.state(),
                    TaskState::Dead,
                    "{prof}/{how}: autoreaped at exit"
                );
            }
            stop.store(true, Ordering::Relaxed);
            waiter.join().unwrap();
            let n = reaped.load(Ordering::Relaxed);
            if n > 0 {
                seen.push(format!("{prof}/{how}: {n} of {iters}"));
            }
            parent.exit(0);
            reap(&init, &parent);
            assert_at_rest(&sys);
        }
    }
    assert!(
        seen.is_empty(),
        "Linux decides \"dead, not zombie\" with the notification; a waiter never reaps an \
         autoreaped child (it gets ECHILD), but waiters reaped: {seen:?}"
    );
}

#[test]
fn thread_forked_while_its_group_dies_fails_with_eintr_or_dies_with_the_group() {
    let iters = race_iterations(100_000, 4_000);
    for &prof in Profile::ALL {
        for by_exit_group in [false, true] {
            let sys = system_with(prof);
            let init = sys.init();
            let escaped = AtomicUsize::new(0);
            let forked = AtomicUsize::new(0);
            let balance = Balance::default();
            hammer(
                iters,
                |r| (fork(&init), std::sync::Mutex::new(None), balance.delays(r)),
                |(p, out, (delay, _))| {
                    stagger(*delay);
                    let r = p.fork(&CloneArgs {
                        flags: CloneFlags::NEW_THREAD,
                        ..Default::default()
                    });
                    *out.lock().unwrap() = Some(r);
                },
                |(p, _, (_, delay))| {
                    stagger(*delay);
                    if by_exit_group {
                        p.exit_group(7);
                    } else {
                        init.kill(init.pid_of(p), uproc_abi::Signal::KILL).unwrap();
                    }
                },
                |(p, out, _)| {
                    let result = out.into_inner().unwrap().expect("fork ran");
                    // The fork got past its check before the group died: start it later.
                    balance.a_was_first(result.is_ok());
                    match result {
                        Ok(t) => {
                            forked.fetch_add(1, Ordering::Relaxed);
                            if t.is_alive() {
                                escaped.fetch_add(1, Ordering::Relaxed);
                                t.exit(0); // let the leader finish so the test can go on
                            }
                        }
                        // EINTR: the group is dying; ESRCH: the (bare) caller is dead.
                        Err(e) => assert!(
                            e == Errno::EINTR || e == Errno::ESRCH,
                            "{prof}: a fork into a dying group gave {e}"
                        ),
                    }
                    let info = init
                        .wait(
                            WaitId::Pid(init.pid_of(&p)),
                            WaitOptions::EXITED | WaitOptions::NOHANG,
                        )
                        .unwrap();
                    assert!(
                        info.is_some(),
                        "{prof}: the dead group's leader is reapable"
                    );
                },
            );
            eprintln!(
                "{prof} exit_group={by_exit_group}: {} forks succeeded, {} escaped",
                forked.load(Ordering::Relaxed),
                escaped.load(Ordering::Relaxed)
            );
            assert_eq!(
                escaped.load(Ordering::Relaxed),
                0,
                "{prof} (exit_group: {by_exit_group}): Linux checks \"group is dying\" and \
                 inserts the thread under one siglock hold: no thread outlives its group \
                 ({} forks succeeded)",
                forked.load(Ordering::Relaxed)
            );
            assert_at_rest(&sys);
        }
    }
}

#[test]
fn migration_racing_a_thread_fork_moves_the_whole_thread_group() {
    let iters = race_iterations(100_000, 4_000);
    for &prof in Profile::ALL {
        let sys = system_with(prof);
        let init = sys.init();
        let a = sys.cgroup_root().mkdir("a").unwrap();
        let b = sys.cgroup_root().mkdir("b").unwrap();
        let p = fork(&init);
        let tgid = p.nspid()[0].to_string();
        let split = AtomicUsize::new(0);
        let order = AtomicUsize::new(0);
        let balance = Balance::with_jitter(if cfg!(debug_assertions) { 600 } else { 150 });
        hammer(
            iters,
            |r| {
                a.attach(&p).unwrap();
                (
                    std::sync::Mutex::new(None),
                    [AtomicUsize::new(0), AtomicUsize::new(0)],
                    balance.delays(r),
                    r,
                )
            },
            |(out, done, (delay, _), _)| {
                stagger(*delay);
                let t = p
                    .fork(&CloneArgs {
                        flags: CloneFlags::NEW_THREAD,
                        ..Default::default()
                    })
                    .expect("thread fork");
                done[0].store(order.fetch_add(1, Ordering::SeqCst), Ordering::Relaxed);
                *out.lock().unwrap() = Some(t);
            },
            |(_, done, (_, delay), r)| {
                stagger(*delay);
                if r % 2 == 0 {
                    b.write("cgroup.procs", &tgid).expect("cgroup.procs write");
                } else {
                    b.attach(&p).expect("attach");
                }
                done[1].store(order.fetch_add(1, Ordering::SeqCst), Ordering::Relaxed);
            },
            |(out, done, _, _)| {
                balance
                    .a_was_first(done[0].load(Ordering::Relaxed) < done[1].load(Ordering::Relaxed));
                let t = out.into_inner().unwrap().expect("forked");
                if t.cgroup() != p.cgroup() {
                    split.fetch_add(1, Ordering::Relaxed);
                }
                t.exit(0);
            },
        );
        assert_eq!(
            split.load(Ordering::Relaxed),
            0,
            "{prof}: fork and migration exclude each other (cgroup_threadgroup_rwsem): a \
             thread forked during a cgroup.procs write moves with its group"
        );
        p.exit(0);
        reap(&init, &p);
        a.rmdir().expect("the old cgroup is empty: rmdir succeeds");
        assert_at_rest(&sys);
    }
}

#[test]
fn fork_into_a_closing_namespace_never_strands_its_dead_init() {
    let iters = race_iterations(100_000, 10_000);
    for &prof in Profile::ALL {
        let sys = system_with(prof);
        let init = sys.init();
        // Forks into the namespace from outside it, so the zap does not kill the forker;
        // its children autoreap.
        let outsider = fork(&init);
        outsider.set_sigchld(SigChld::Ignore);
        let stranded = AtomicUsize::new(0);
        // Each round's namespace must be freed once its init is reaped and the
        // outsider moved on (the per-thread reference credits its init held open
        // under `Scalable` included), whatever the fork racing the close did.
        let mut previous: Option<std::sync::Weak<uproc_pidns::PidNamespace>> = None;
        let mut kept_alive = 0;
        // The window (the dead init's emptiness check) lies after the point the balance
        // finds (the namespace closing): sweep widely around it.
        let balance = Balance::with_jitter(if cfg!(debug_assertions) { 600 } else { 150 });
        hammer(
            iters,
            |r| {
                let n = fork_flags(&init, CloneFlags::NEWPID);
                outsider.setns_pid(&n.pid_ns()).unwrap();
                let this = Arc::downgrade(&n.pid_ns());
                if previous
                    .replace(this)
                    .is_some_and(|w| w.upgrade().is_some())
                {
                    kept_alive += 1;
                }
                (n, std::sync::Mutex::new(None), balance.delays(r))
            },
            |(_, out, (delay, _))| {
                stagger(*delay);
                *out.lock().unwrap() = Some(outsider.fork(&CloneArgs::default()));
            },
            |(n, _, (_, delay))| {
                stagger(*delay);
                n.exit(0);
            },
            |(n, out, _)| {
                let forked = out.into_inner().unwrap().expect("fork ran");
                balance.a_was_first(forked.is_ok());
                match forked {
                    Ok(c) => assert_eq!(c.state(), TaskState::Dead, "{prof}: killed by the zap"),
                    Err(e) => assert_eq!(e, Errno::ENOMEM, "{prof}: the namespace is closed"),
                }
                let info = init
                    .wait(
                        WaitId::Pid(init.pid_of(&n)),
                        WaitOptions::EXITED | WaitOptions::NOHANG,
                    )
                    .unwrap();
                if info.is_none() {
                    // A blocking wait for it would hang; the runtime is left as it is.
                    stranded.fetch_add(1, Ordering::Relaxed);
                }
            },
        );
        assert_eq!(
            stranded.load(Ordering::Relaxed),
            0,
            "{prof}: a fork that finds the namespace closed must wake its dead init \
             (the init stays an unreapable zombie of an empty namespace otherwise)"
        );
        outsider.exit(0);
        reap(&init, &outsider);
        assert_at_rest(&sys);
        drop(outsider);
        if previous.is_some_and(|w| w.upgrade().is_some()) {
            kept_alive += 1;
        }
        assert_eq!(
            kept_alive, 0,
            "{prof}: a closed namespace outlived its last user"
        );
    }
}

#[test]
fn kill_minus_one_racing_a_fork_leaves_no_child_alive() {
    let iters = race_iterations(100_000, 4_000);
    let mut escaped = Vec::new();
    // A CLONE_PARENT child attaches under its grandparent's lock (init's here), not the
    // target's: the walk's barrier must wait for that attach too.
    let cases = [(false, false), (true, false), (false, true), (true, true)];
    for &prof in Profile::ALL {
        for (by_pgrp, clone_parent) in cases {
            let sys = system_with(prof);
            let init = sys.init();
            let balance = Balance::default();
            let n = AtomicUsize::new(0);
            hammer(
                iters,
                |r| (fork(&init), std::sync::Mutex::new(None), balance.delays(r)),
                |(p, out, (delay, _))| {
                    stagger(*delay);
                    let mut args = CloneArgs::default();
                    args.flags.set(CloneFlags::PARENT, clone_parent);
                    *out.lock().unwrap() = Some(p.fork(&args));
                },
                |(p, _, (_, delay))| {
                    stagger(*delay);
                    if by_pgrp {
                        // p is in init's process group: kill(0) from init.
                        let _ = init.kill(0, uproc_abi::Signal::KILL);
                    } else {
                        init.kill(-1, uproc_abi::Signal::KILL).unwrap();
                    }
                    let _ = p;
                },
                |(p, out, _)| {
                    let forked = out.into_inner().unwrap().expect("fork ran");
                    balance.a_was_first(forked.is_ok());
                    if let Ok(c) = &forked {
                        if c.is_alive() {
                            n.fetch_add(1, Ordering::Relaxed);
                            c.exit(0);
                        }
                    }
                    assert!(!p.is_alive(), "{prof}: the target died");
                    reap(&init, &p);
                    if let (Ok(c), true) = (forked, clone_parent) {
                        // init's child, not p's.
                        reap(&init, &c);
                    }
                },
            );
            if n.load(Ordering::Relaxed) > 0 {
                escaped.push(format!(
                    "{prof}/pgrp={by_pgrp}/clone_parent={clone_parent}: {}",
                    n.load(Ordering::Relaxed)
                ));
            }
        }
    }
    assert!(
        escaped.is_empty(),
        "Linux holds tasklist_lock over kill(-1)'s whole loop: a fork either attached its \
         child before (killed too) or fails with EINTR; children escaped: {escaped:?}"
    );
}

/// A migration that finds a new process between its fork's attach and the end of its
/// `cgroup_post_fork` (the fork takes no lock on the new group) waits for the link and
/// moves it: once the migration returned, the child is in the destination, its link,
/// listing and charge with it.
#[test]
fn migration_racing_a_process_fork_moves_the_new_process() {
    let iters = race_iterations(20_000, 1_000);
    for &prof in Profile::ALL {
        let sys = system_with(prof);
        let init = sys.init();
        let a = sys.cgroup_root().mkdir("a").unwrap();
        let b = sys.cgroup_root().mkdir("b").unwrap();
        let p = fork(&init);
        a.attach(&p).unwrap();
        let ns = init.pid_ns();
        let moved = AtomicUsize::new(0);
        let last = std::sync::atomic::AtomicI32::new(p.pid());
        hammer(
            iters,
            |_| (std::sync::Mutex::new(None), AtomicBool::new(false)),
            |(out, _)| {
                let c = fork(&p);
                *out.lock().unwrap() = Some(c);
            },
            |(_, migrated)| {
                // The child, as soon as its pid finds it (from the attach on): first at
                // the number after the last child's (where the forker's numbers usually
                // continue), polled tightly, then anywhere in the namespace.
                let guess = last.load(Ordering::Acquire) + 1;
                for i in 0..4_000 {
                    let found = if i < 3_000 {
                        sys.find_task(&ns, guess).filter(|t| t != &p && t != &init)
                    } else {
                        ns.pids()
                            .iter()
                            .map(|pid| pid.nr())
                            .filter(|&nr| nr != init.pid() && nr != p.pid())
                            .find_map(|nr| sys.find_task(&ns, nr))
                    };
                    if let Some(c) = found {
                        b.attach(&c).expect("migration of the new process");
                        migrated.store(true, Ordering::Release);
                        return;
                    }
                    std::hint::spin_loop();
                }
            },
            |(out, migrated)| {
                let c = out.into_inner().unwrap().expect("forked");
                last.store(c.nspid()[0], Ordering::Release);
                let nr = c.nspid()[0].to_string();
                let (home, other) = if migrated.load(Ordering::Acquire) {
                    moved.fetch_add(1, Ordering::Relaxed);
                    (&b, &a)
                } else {
                    (&a, &b)
                };
                assert_eq!(
                    c.cgroup().path(),
                    home.path(),
                    "{prof}: the child is where the last migration put it"
                );
                let listed = |cg: &uproc_cgroup::Cgroup| {
                    cg.read("cgroup.procs")
                        .unwrap()
                        .lines()
                        .any(|l| l == nr.as_str())
                };
                assert!(listed(home) && !listed(other), "{prof}: listed where it is");
                let current = |cg: &uproc_cgroup::Cgroup| {
                    cg.read("pids.current")
                        .unwrap()
                        .trim()
                        .parse::<u64>()
                        .unwrap()
                };
                assert_eq!(
                    current(&a) + current(&b),
                    2,
                    "{prof}: p and the child charged"
                );
                c.exit(0);
                reap(&p, &c);
                assert_eq!(current(&a), 1, "{prof}: the child's charge went with it");
                assert_eq!(current(&b), 0, "{prof}: the child's charge went with it");
            },
        );
        assert!(
            moved.load(Ordering::Relaxed) > 0,
            "{prof}: the migration never ran"
        );
        p.exit(0);
        reap(&init, &p);
        a.rmdir().expect("a is empty");
        b.rmdir().expect("b is empty");
        assert_at_rest(&sys);
    }
}

/// A process that never had a child skips the hand-over at its death (no lock on its
/// own list): a fork by one of its threads racing the group's exit is either refused
/// (EINTR, or ESRCH when its thread already exited) or attached early enough to be
/// handed on to init like any orphan, never left on the dead group's list.
#[test]
fn a_fork_racing_the_exit_of_its_childless_group_is_handed_on_or_refused() {
    let iters = race_iterations(20_000, 2_000);
    for &prof in Profile::ALL {
        let sys = system_with(prof);
        let init = sys.init();
        let (attached, refused) = (AtomicUsize::new(0), AtomicUsize::new(0));
        hammer(
            iters,
            |_| {
                let p = fork(&init);
                let t = thread(&p);
                (p, t, std::sync::Mutex::new(None))
            },
            |(_, t, out)| {
                *out.lock().unwrap() = Some(t.fork(&CloneArgs::default()));
            },
            |(p, _, _)| p.exit_group(0),
            |(p, _, out)| {
                match out.into_inner().unwrap().expect("the fork ran") {
                    Ok(c) => {
                        attached.fetch_add(1, Ordering::Relaxed);
                        assert_eq!(
                            c.parent().as_ref(),
                            Some(&init),
                            "{prof}: the child was handed on to init"
                        );
                        c.exit(0);
                        if c.state() != TaskState::Dead {
                            reap(&init, &c);
                        }
                    }
                    Err(e) => {
                        refused.fetch_add(1, Ordering::Relaxed);
                        // ESRCH: the forking thread had exited before its fork began.
                        assert!(
                            matches!(e, Errno::EINTR | Errno::ESRCH),
                            "{prof}: a fork of a dying group: {e:?}"
                        );
                    }
                }
                reap(&init, &p);
            },
        );
        assert!(
            attached.load(Ordering::Relaxed) > 0 || refused.load(Ordering::Relaxed) > 0,
            "{prof}: no fork ran"
        );
        assert_at_rest(&sys);
    }
}

/// A leader's exit racing a `cgroup.procs` write that moves its process: whichever
/// comes first, the leader is listed (once) by the cgroup it died in and by no other,
/// its live thread ends up where the write sent it, and nothing stays listed or
/// charged once the thread has exited and the leader is reaped (the dying-leader list
/// of `CssLink::task_dead_leader` against the migration's skipping of dead links).
#[test]
fn a_leader_exit_racing_the_migration_of_its_process_is_listed_where_it_died() {
    let iters = race_iterations(20_000, 2_000);
    for &prof in Profile::ALL {
        let sys = system_with(prof);
        let init = sys.init();
        let a = sys.cgroup_root().mkdir("a").unwrap();
        let b = sys.cgroup_root().mkdir("b").unwrap();
        let lines = |cg: &uproc_cgroup::Cgroup, file: &str| -> Vec<i32> {
            cg.read(file)
                .unwrap()
                .lines()
                .map(|l| l.parse().unwrap())
                .collect()
        };
        let mut died_in_b = 0;
        hammer(
            iters,
            |_| {
                let p = fork(&init);
                a.attach(&p).unwrap();
                let t = thread(&p);
                (p, t)
            },
            |(p, _)| p.exit(0),
            |(p, _)| {
                b.write("cgroup.procs", &init.pid_of(p).to_string())
                    .expect("cgroup.procs write")
            },
            |(p, t)| {
                let (lnr, tnr) = (init.pid_of(&p), init.pid_of(&t));
                let (here, other) = if p.cgroup() == a { (&a, &b) } else { (&b, &a) };
                died_in_b += usize::from(p.cgroup() == b);
                assert_eq!(t.cgroup(), b, "{prof}: the live thread moved");
                assert_eq!(lines(here, "cgroup.procs"), vec![lnr], "{prof}");
                assert!(!lines(other, "cgroup.procs").contains(&lnr), "{prof}");
                assert_eq!(lines(&b, "cgroup.threads"), vec![tnr], "{prof}");
                assert!(lines(&a, "cgroup.threads").is_empty(), "{prof}");
                t.exit(0);
                reap(&init, &p);
                for cg in [&a, &b] {
                    assert!(lines(cg, "cgroup.procs").is_empty(), "{prof}");
                    assert_eq!(cg.pids_current(), 0, "{prof}: nothing stays charged");
                }
            },
        );
        // Both orders happen on any machine with two cores; neither is required.
        eprintln!("{prof}: the leader died in b in {died_in_b} of {iters} rounds");
        a.rmdir().unwrap();
        b.rmdir().unwrap();
        assert_at_rest(&sys);
    }
}

/// The task cache recycles a reaped task's allocation for the next fork of the same
/// thread once nothing outside the task can reach it. Lookups by number (the pid
/// table, then the pid's task slot) and through pidfds race a loop that forks, exits,
/// reaps and drops; a lookup that returned a task must see that task, never a later
/// fork written into the same allocation: the task it got names the number it looked
/// up (in its own state, whatever that is), and a pidfd's task is the pidfd's pid's.
#[test]
fn lookups_racing_the_task_cache_never_see_a_recycled_task() {
    let iters = race_iterations(200_000, 20_000);
    for &prof in Profile::ALL {
        let sys = system_with(prof);
        let init = sys.init();
        let ns = Arc::clone(sys.root_ns());
        let stop = Arc::new(AtomicBool::new(false));
        // Lookups that returned a task, per looker: a race the loop ran without either
        // looker finding anything would check nothing.
        let found: Arc<[AtomicUsize; 2]> = Arc::new(Default::default());
        let started = Arc::new(AtomicUsize::new(0));
        // The number of the child in its life cycle now (0: none yet).
        let current = Arc::new(std::sync::atomic::AtomicI32::new(0));
        let lookers: Vec<_> = (0..2)
            .map(|k| {
                let (sys, ns, init) = (Arc::clone(&sys), Arc::clone(&ns), init.clone());
                let (stop, found, current) = (stop.clone(), found.clone(), current.clone());
                let started = started.clone();
                std::thread::spawn(move || {
                    started.fetch_add(1, Ordering::Relaxed);
                    let found = &found[k];
                    while !stop.load(Ordering::Relaxed) {
                        let nr = current.load(Ordering::Relaxed);
                        if nr == 0 {
                            std::hint::spin_loop();
                            continue;
                        }
                        if k == 0 {
                            if let Some(t) = sys.find_task(&ns, nr) {
                                found.fetch_add(1, Ordering::Relaxed);
                                // Whatever it became meanwhile, it is the task of nr.
                                assert_eq!(t.nspid(), vec![nr], "{prof}: a recycled task");
                                drop(t);
                            }
                        } else if let Ok(fd) = init.pidfd_open(nr, uproc_abi::PidfdFlags::empty()) {
                            found.fetch_add(1, Ordering::Relaxed);
                            match fd.send_signal(uproc_abi::Signal::CONT) {
                                Ok(()) | Err(Errno::ESRCH) => {}
                                Err(e) => panic!("{prof}: {e}"),
                            }
                            assert_eq!(fd.pid().nr(), nr, "{prof}");
                        }
                    }
                })
            })
            .collect();
        let with_pidfd = CloneArgs {
            flags: CloneFlags::PIDFD,
            ..CloneArgs::default()
        };
        // A loaded host (the suite runs its tests side by side on two cores) may not run
        // a looker for the whole of a short loop: start once both run, and go on past
        // `iters` until each has found a task, for ten seconds at most.
        while started.load(Ordering::Relaxed) < 2 {
            std::thread::yield_now();
        }
        let since = std::time::Instant::now();
        let mut i = 0;
        while i < iters
            || (found.iter().any(|f| f.load(Ordering::Relaxed) == 0)
                && since.elapsed() < std::time::Duration::from_secs(10))
        {
            i += 1;
            let args = if i % 3 == 0 {
                &with_pidfd
            } else {
                &CloneArgs::default()
            };
            let c = init.fork(args).expect("fork");
            current.store(c.pid(), Ordering::Relaxed);
            c.exit(0);
            reap(&init, &c);
            // The last handle: its allocation goes to this thread's cache when nothing
            // else reaches the task, and the next fork takes it.
            drop(c);
        }
        stop.store(true, Ordering::Relaxed);
        for l in lookers {
            l.join().unwrap();
        }
        let found = found.each_ref().map(|f| f.load(Ordering::Relaxed));
        assert!(
            found.iter().all(|&f| f > 0),
            "{prof}: each looker found tasks in {i} life cycles: {found:?}"
        );
        assert_at_rest(&sys);
    }
}
