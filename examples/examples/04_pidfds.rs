//! # 04 — pidfds: a handle that cannot hit a recycled pid
//!
//! A pid *number* is reused once its task is reaped, so "kill 1234" can hit a
//! stranger. A *pidfd* holds the process itself: after the process is gone, the pidfd
//! answers `ESRCH`, even when a new task already carries the old number. This example
//! forces that recycling with `set_tid` (clone3's "give me this pid", which needs
//! `CAP_CHECKPOINT_RESTORE`), shows a signal sent by number landing on the stranger,
//! then waits for a task asynchronously through its pidfd.

use uproc::{CloneArgs, Errno, InfoMask, Runtime, Signal, Spawn};
use uproc_examples::{Lesson, ensure};

/// Runs the example, checks what it observes, and returns a one-line summary.
pub fn check() -> Lesson {
    let rt = Runtime::builder().build()?;
    let init = rt.init();

    // An old task and its pidfd. It exits and is reaped: its number is free again.
    let old = rt.spawn(Spawn::new().name("old"), |_| 0)?;
    let old_fd = old.pidfd();
    let nr = old.pid();
    old.wait()?;

    // A new task gets the very same number (set_tid forces it here; with enough
    // forks, cyclic allocation would get there too).
    init.set_cap_checkpoint_restore(true);
    let args = CloneArgs {
        set_tid: vec![nr],
        ..Default::default()
    };
    let new = rt.spawn(Spawn::new().name("new").args(args), |cx| {
        while cx.signal_pending().is_none() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        0
    })?;
    ensure!(
        new.pid() == nr,
        "the new task should have recycled pid {nr}"
    );

    // The old pidfd refuses: its process is gone. The new task is untouched.
    let via_old = old_fd.send_signal(Signal::KILL);
    ensure!(via_old == Err(Errno::ESRCH), "old pidfd: {via_old:?}");
    ensure!(new.try_wait()?.is_none(), "the new task must still run");
    // The old pidfd still knows how its own process ended (PIDFD_INFO_EXIT).
    let info = old_fd.info(InfoMask::EXIT)?;
    ensure!(
        info.mask.contains(InfoMask::EXIT),
        "exit info is kept after reap"
    );

    // Signalling by *number* hits the new task: the bug pidfds prevent. Code that
    // meant the old process but kept only its number sends SIGTERM to `nr`, and the
    // stranger that now carries the number dies of it.
    init.kill(nr, Signal::TERM)?;
    let hit = new.wait()?;
    ensure!(
        hit.signaled() == Some(Signal::TERM),
        "kill({nr}, SIGTERM) ended the new task: {hit}"
    );

    // Asynchronous wait: `.await` a Child (it awaits the pidfd becoming readable, then
    // reaps), or await `pidfd.readable()` yourself. No thread blocks.
    let tokio_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (code, readable) = tokio_rt.block_on(async {
        let a = rt.spawn_async(Spawn::new(), |_| async {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            7
        })?;
        let fd = a.pidfd();
        let b = rt.spawn(Spawn::new(), |_| 8)?;
        let b_fd = b.pidfd();
        b_fd.readable().await; // readable once b exits
        let readable = b_fd.poll().readable;
        let code_b = b.await?.exited();
        let code_a = a.await?.exited();
        Ok::<_, Errno>((code_a.zip(code_b), readable && fd.poll().hangup))
    })?;
    ensure!(code == Some((7, 8)), "async exit codes {code:?}");
    let (code_a, code_b) = code.unwrap_or_default();
    ensure!(
        readable,
        "pidfds poll readable at exit and hang up once reaped"
    );
    ensure!(rt.ps().len() == 1, "leftover tasks");

    Ok(format!(
        "pid {nr} recycled: the old pidfd gets ESRCH and spares the new task, kill({nr}, SIGTERM) by number kills it; async waits -> exit codes {code_a} and {code_b}"
    ))
}

fn main() {
    uproc_examples::main(check);
}
