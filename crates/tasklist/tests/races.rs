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
