//! # 03 — pid namespaces: a container's init is pid 1
//!
//! `Spawn::new_pid_ns()` starts a task as pid 1 of a new pid namespace, like a
//! container runtime does with `CLONE_NEWPID`. Inside, numbering starts again at 1;
//! outside, the same tasks have ordinary pids. A task has one number per namespace
//! level: its `NSpid` line (outermost first), as in `/proc/PID/status`.

use std::sync::mpsc::channel;
use uproc::{Runtime, Spawn};
use uproc_examples::{Lesson, ensure};

/// Runs the example, checks what it observes, and returns a one-line summary.
pub fn check() -> Lesson {
    let rt = Runtime::builder().build()?;
    let (report_tx, report_rx) = channel();

    // The container's init: pid 1 in its namespace. Its parent (our init) lives in the
    // outer namespace, so from inside, getppid() is 0: the parent is invisible.
    let container = rt.spawn(Spawn::new().name("container").new_pid_ns(), move |cx| {
        let me = (cx.pid(), cx.task().ppid());
        // A process inside the container: pid 2 there.
        let app = cx
            .spawn(Spawn::new().name("app"), |app| app.pid())
            .expect("fork inside the namespace");
        let app_nspid = app.task().nspid();
        // What `ps` shows from inside the container: only its own tasks (app is
        // listed until it is reaped, running or zombie).
        let inside = cx.runtime().ps_in(&cx.task().pid_ns()).len();
        let app_status = app.wait().expect("wait for app");
        report_tx.send((me, app_nspid, app_status, inside)).unwrap();
        0
    })?;
    let outer_pid = container.pid();
    let ((pid, ppid), app_nspid, app_status, inside) = report_rx.recv()?;
    container.wait()?;

    ensure!(
        pid == 1,
        "the container's init must be pid 1 inside, was {pid}"
    );
    ensure!(
        ppid == 0,
        "its parent is invisible inside the namespace (ppid {ppid})"
    );
    ensure!(
        outer_pid > 1,
        "outside, the container's init has an ordinary pid"
    );
    // NSpid: [number in the root namespace, number in the container].
    ensure!(
        app_nspid.len() == 2 && app_nspid[1] == 2,
        "app NSpid {app_nspid:?}"
    );
    ensure!(
        app_status.exited() == Some(2),
        "app's body returned its own pid (2)"
    );
    ensure!(
        inside == 2,
        "ps inside the container saw {inside} tasks (want: init + app)"
    );
    ensure!(rt.ps().len() == 1, "everything was reaped");

    Ok(format!(
        "container init is pid {outer_pid} outside, 1 inside (ppid 0); app NSpid {app_nspid:?}"
    ))
}

fn main() {
    uproc_examples::main(check);
}
