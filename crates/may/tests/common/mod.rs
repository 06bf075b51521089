//! Shared by the test files.

use std::time::Duration;

/// Runs `f` on a helper thread; fails if it does not finish within 30 s (a coroutine
/// wait that blocked its worker thread would hang instead).
pub(crate) fn within_deadline<T: Send + 'static>(
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(f()).ok());
    rx.recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("{what}: no progress in 30 s: a worker thread was blocked"))
}
