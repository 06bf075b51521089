//! The end of every run of a model that drives a whole `System`, included by those
//! models with `#[path]`: end every process, reap everything, and check that nothing
//! is left but the runtime init (no task, pid number or pidfs entry leaked).
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
    Ok(())
}
