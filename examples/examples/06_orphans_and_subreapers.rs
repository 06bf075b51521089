//! # 06 — orphans and subreapers
//!
//! When a parent exits before its children, the children are *orphans* and get a new
//! parent: the nearest ancestor marked as a *child subreaper*
//! (`prctl(PR_SET_CHILD_SUBREAPER)`, what service managers use), or else the
//! namespace's init. uproc's init reaps the orphans it adopts (the runtime's
//! `reap_orphans`, on by default), so they never linger as zombies.
//!
//! A child that must not outlive its parent asks for a *parent-death signal*
//! (`prctl(PR_SET_PDEATHSIG)`): it gets that signal when its parent dies (when the
//! parent *thread* exits, in fact), and a child with SIGKILL there dies with it.
//!
//! This example drives tasks directly through the `Task` API (fork/exit/wait, no body),
//! which is how an emulator or a runtime embeds uproc.

use uproc::{CloneArgs, Runtime, Signal, TaskState, WaitId, WaitOptions};
use uproc_examples::{Lesson, ensure, eventually};

/// Runs the example, checks what it observes, and returns a one-line summary.
pub fn check() -> Lesson {
    let rt = Runtime::builder().build()?;
    let init = rt.init();
    let fork = |t: &uproc::Task| t.fork(&CloneArgs::default());

    // A supervisor that adopts its descendants' orphans.
    let sup = fork(&init)?;
    sup.set_child_subreaper(true);

    // supervisor -> parent -> grandchild; then the parent exits (and is reaped).
    let parent = fork(&sup)?;
    let grandchild = fork(&parent)?;
    parent.exit(0);
    sup.wait(WaitId::Pid(sup.pid_of(&parent)), WaitOptions::EXITED)?;

    // The orphan went to the subreaper, not to init.
    ensure!(
        grandchild.ppid() == sup.pid(),
        "orphan's ppid {} (want the subreaper {})",
        grandchild.ppid(),
        sup.pid()
    );

    // The subreaper now waits for it like for its own child.
    grandchild.exit(7);
    let info = sup
        .wait(WaitId::All, WaitOptions::EXITED)?
        .ok_or("no child reported")?;
    ensure!(
        info.pid == sup.pid_of(&grandchild),
        "waited for pid {}",
        info.pid
    );
    ensure!(info.status.exited() == Some(7), "status {}", info.status);

    // Without a subreaper in the chain, the orphan goes to init, which reaps it.
    let parent2 = fork(&init)?;
    let orphan = fork(&parent2)?;
    parent2.exit(0);
    init.wait(WaitId::Pid(parent2.pid()), WaitOptions::EXITED)?;
    ensure!(orphan.ppid() == 1, "the orphan's new parent is init");
    orphan.exit(0);
    ensure!(
        eventually(|| orphan.state() == TaskState::Dead),
        "init did not reap the orphan"
    );

    // A worker that dies with its supervisor: SIGKILL when its parent goes.
    let worker = fork(&sup)?;
    worker.set_pdeath_signal(Signal::KILL);
    ensure!(
        worker.pdeath_signal() == Some(Signal::KILL),
        "PR_GET_PDEATHSIG"
    );

    sup.exit(0);
    init.wait(WaitId::Pid(sup.pid()), WaitOptions::EXITED)?;
    ensure!(
        worker.exit_status().and_then(|s| s.signaled()) == Some(Signal::KILL),
        "the worker outlived its supervisor: {:?}",
        worker.state()
    );
    ensure!(
        eventually(|| worker.state() == TaskState::Dead),
        "init did not reap the worker"
    );
    ensure!(rt.ps().len() == 1, "leftover tasks: {:?}", rt.ps());

    Ok(format!(
        "orphan adopted by subreaper {} and reaped with {}; another reaped by init; \
         a worker killed by its parent's death",
        sup.pid(),
        info.status
    ))
}

fn main() {
    uproc_examples::main(check);
}
