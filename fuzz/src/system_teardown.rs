//! The end of every run of a model that drives a whole `System`, included by those
//! models with `#[path]`: end every process, reap everything, check that nothing is
//! left, then free the runtime init's pid.
//!
//! That last step works around a leak of uproc: a dropped `System` keeps its root
//! namespace alive (the namespace's table holds init's `Pid`, which holds the
//! namespace), about 12 KB each time. A fuzzer builds and drops thousands of runtimes
//! a second and would reach its memory limit within seconds. Freeing init's pid breaks
//! the cycle; once the leak is fixed this step goes.
#![allow(dead_code)]

use uproc_abi::{Signal, WaitOptions};
use uproc_tasklist::{System, Task, WaitId};

/// Ends every task, reaps them all and checks the runtime is back to its init alone:
/// one task, one allocated pid, no pidfs index entry but init's. `threads` are handles
/// of any threads of init's own process (`kill(-1)` spares the caller's process).
pub(crate) fn teardown(sys: &System, threads: &[Task]) -> Result<(), String> {
    let init = sys.init();
    for t in threads {
        t.exit(0);
    }
    let _ = init.kill(-1, Signal::KILL);
    let opts = WaitOptions::EXITED | WaitOptions::ALL | WaitOptions::NOHANG;
    let mut left = 10_000;
    while let Ok(Some(_)) = init.wait(WaitId::All, opts) {
        left -= 1;
        if left == 0 {
            return Err("teardown: init keeps finding children to reap".into());
        }
    }
    let (tasks, pids) = (sys.nr_tasks(), sys.root_ns().nr_allocated());
    if tasks != 1 || pids != 1 || sys.pidfs().index_len() > 1 {
        return Err(format!(
            "at rest after killing and reaping everything: {tasks} tasks, {pids} pids, {} pidfs entries",
            sys.pidfs().index_len()
        ));
    }
    free_init_pid(sys);
    Ok(())
}

/// Frees the runtime init's pid once it is the only task left (see the module essay:
/// the workaround for the leak of a dropped `System`).
pub(crate) fn free_init_pid(sys: &System) {
    if sys.nr_tasks() == 1 && sys.root_ns().nr_allocated() == 1 {
        uproc_pidns::free_pid(sys.init().struct_pid());
    }
}
