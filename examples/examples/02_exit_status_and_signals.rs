//! # 02 — exit statuses and signals
//!
//! A task ends in one of two ways, and its parent sees which in the wait(2) status:
//! it *exits* with a code, or it is *killed by a signal*. This example produces both:
//! `cx.exit(3)`, a panic (uproc turns it into death by `SIGABRT`, and the runtime goes
//! on), `SIGKILL` delivered to a running body, and `SIGTERM` sent by number with
//! `kill(2)`.
//!
//! Signals reach a running body *cooperatively*: the body asks
//! `cx.signal_pending()`. If a fatal signal is pending when the body returns, the task
//! dies of it, whatever the body returned.

use std::sync::mpsc;
use uproc::{Errno, Runtime, Signal, Spawn, TaskCx};
use uproc_examples::{Lesson, ensure};

/// A body that says it runs, then works until a signal arrives (a real one would do
/// work in the loop), and says which signal it saw.
fn until_signalled(cx: &TaskCx, running: mpsc::Sender<()>, saw: mpsc::Sender<Signal>) -> i32 {
    let _ = running.send(());
    let sig = loop {
        if let Some(sig) = cx.signal_pending() {
            break sig;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    let _ = saw.send(sig);
    0 // ignored: the pending fatal signal decides the status
}

/// Spawns [`until_signalled`] and returns once its body runs, with its child handle
/// and where the signal it sees arrives (a signal sent before the body starts would
/// end the task before it ever ran).
fn spawn_running(rt: &Runtime) -> Result<(uproc::Child, mpsc::Receiver<Signal>), Errno> {
    let (running_tx, running) = mpsc::channel();
    let (saw_tx, saw) = mpsc::channel();
    let child = rt.spawn(Spawn::new(), move |cx| {
        until_signalled(cx, running_tx, saw_tx)
    })?;
    running.recv().expect("the body runs");
    Ok((child, saw))
}

/// Runs the example, checks what it observes, and returns a one-line summary.
pub fn check() -> Lesson {
    let rt = Runtime::builder().build()?;

    // 1. An early exit: `cx.exit(code)` unwinds the body (destructors run) and exits.
    let st_exit = rt.spawn(Spawn::new(), |cx| cx.exit(3))?.wait()?;
    ensure!(st_exit.exited() == Some(3), "exit(3) gave {st_exit}");

    // 2. A panic is contained: the task is killed by SIGABRT, as abort(3) would, and
    //    the runtime keeps working. (No core-dump bit: as under `ulimit -c 0`, unless
    //    the process was told it dumps core, `Task::set_dumps_core`.) We silence the
    //    default panic message for this demonstration only.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let st_panic = rt.spawn(Spawn::new(), |_| panic!("oops"))?.wait();
    std::panic::set_hook(hook);
    let st_panic = st_panic?;
    ensure!(
        st_panic.signaled() == Some(Signal::ABRT),
        "panic gave {st_panic}"
    );
    ensure!(!st_panic.core_dumped(), "no core limit, no core dumped");

    // 3. SIGKILL through the child's pidfd (`Child::kill`), to a body that runs: the
    //    body sees it pending and returns; the task dies of it.
    let (child, saw) = spawn_running(&rt)?;
    child.kill()?;
    let st_kill = child.wait()?;
    ensure!(
        st_kill.signaled() == Some(Signal::KILL),
        "kill gave {st_kill}"
    );
    ensure!(
        saw.recv().ok() == Some(Signal::KILL),
        "the body saw SIGKILL"
    );

    // 4. SIGTERM by pid number, as kill(2) does, sent by init to a running body.
    let (child, saw) = spawn_running(&rt)?;
    rt.init().kill(child.pid(), Signal::TERM)?;
    let st_term = child.wait()?;
    ensure!(
        st_term.signaled() == Some(Signal::TERM),
        "SIGTERM gave {st_term}"
    );
    ensure!(
        saw.recv().ok() == Some(Signal::TERM),
        "the body saw SIGTERM"
    );

    // The raw status words are Linux's: exited (code << 8), killed (signal | 0x80 core).
    ensure!(
        st_exit.raw() == 0x300,
        "raw exit status {:#x}",
        st_exit.raw()
    );
    ensure!(st_kill.raw() == 9, "raw kill status {:#x}", st_kill.raw());
    ensure!(rt.ps().len() == 1, "leftover tasks");

    Ok(format!(
        "statuses: {st_exit}, {st_panic}, {st_kill}, {st_term}"
    ))
}

fn main() {
    uproc_examples::main(check);
}
