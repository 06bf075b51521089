//! # 01 — spawn a task and wait for it
//!
//! The smallest uproc program: build a runtime, run a closure as a task (a "process"
//! with a pid, a parent and an exit status), and wait for it. Waiting *reaps* the
//! task: its pid number goes back to the pool, exactly like `waitpid(2)` in Linux.
//!
//! Run it: `cargo run -p uproc-examples --example 01_spawn_and_wait`

use uproc::{Runtime, Spawn};
use uproc_examples::{Lesson, ensure};

/// Runs the example, checks what it observes, and returns a one-line summary.
pub fn check() -> Lesson {
    // A runtime is one simulated kernel: a root pid namespace with its init (pid 1),
    // a cgroup tree, and an executor that runs task bodies (one OS thread per task by
    // default).
    let rt = Runtime::builder().build()?;
    ensure!(rt.init().pid() == 1, "init must be pid 1");

    // `spawn` forks a child of init and runs the closure as its body. The closure's
    // return value is the exit code, like the return value of `main` in C.
    let child = rt.spawn(Spawn::new().name("hello"), |cx| {
        // Inside the body, `cx` describes the task we run as.
        if cx.task().ppid() != 1 {
            return 1; // our parent should be init
        }
        42
    })?;
    let first_pid = child.pid(); // the pid as the parent (init) sees it

    // `wait` blocks until the task exits, reaps it, and returns the wait(2) status.
    let status = child.wait()?;
    ensure!(
        status.exited() == Some(42),
        "expected exit code 42, got {status}"
    );

    // Several tasks at once: each gets the next pid (Linux allocates cyclically).
    let children: Vec<_> = (0..3)
        .map(|i| rt.spawn(Spawn::new().name("worker"), move |_| i))
        .collect::<Result<_, _>>()?;
    let pids: Vec<i32> = children.iter().map(|c| c.pid()).collect();
    let mut codes = Vec::new();
    for c in children {
        codes.push(c.wait()?.exited().ok_or("a worker did not exit normally")?);
    }
    ensure!(codes == [0, 1, 2], "exit codes {codes:?}");
    ensure!(
        pids.windows(2).all(|w| w[1] == w[0] + 1),
        "pids {pids:?} are not sequential"
    );

    // Everything was reaped: only init is left, and only its pid is allocated.
    ensure!(rt.ps().len() == 1, "leftover tasks: {:?}", rt.ps());
    ensure!(rt.init().pid_ns().nr_allocated() == 1, "pids leaked");

    Ok(format!(
        "hello (pid {first_pid}) exited 42; workers {pids:?} exited {codes:?}; only init left"
    ))
}

fn main() {
    uproc_examples::main(check);
}
