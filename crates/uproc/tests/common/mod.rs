//! Helpers shared by the behaviour tests (included with `mod common;`).
#![allow(dead_code, unreachable_pub)]

use std::time::{Duration, Instant};

/// Polls `cond` until it holds or `secs` pass; returns whether it held.
pub fn wait_until(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    cond()
}

/// Spawns a body that waits for a message on the returned sender, then exits `code`.
pub fn gated(rt: &uproc::Runtime, code: i32) -> (uproc::Child, std::sync::mpsc::Sender<()>) {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let child = rt
        .spawn(uproc::Spawn::new(), move |_| {
            rx.recv().unwrap();
            code
        })
        .unwrap();
    (child, tx)
}

/// A multi-thread tokio runtime for the async tests.
#[cfg(feature = "tokio")]
pub fn tokio_rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Both executors, by name, as runtime builders.
pub fn builders() -> Vec<(&'static str, uproc::RuntimeBuilder, Option<TokioGuard>)> {
    #[allow(unused_mut)]
    let mut v = vec![("thread", builder(), None)];
    #[cfg(feature = "tokio")]
    {
        let t = tokio_rt();
        let exec = uproc::tokio::TokioExecutor::new(t.handle().clone());
        v.push(("tokio", builder().executor(exec), Some(TokioGuard(t))));
    }
    v
}

/// Keeps a tokio runtime alive for a test.
#[cfg(feature = "tokio")]
#[derive(Debug)]
pub struct TokioGuard(pub tokio::runtime::Runtime);
/// Placeholder without the tokio feature.
#[cfg(not(feature = "tokio"))]
#[derive(Debug)]
pub struct TokioGuard;

/// A runtime builder under the current test's [`profile`].
pub fn builder() -> uproc::RuntimeBuilder {
    uproc::Runtime::builder().profile(profile())
}

#[macro_use]
#[path = "../../../tasklist/tests/common/profiles.rs"]
mod profiles;
pub use profiles::*;
