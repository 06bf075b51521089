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

use uproc::Profile;

/// A runtime builder under the current test's [`profile`].
pub fn builder() -> uproc::RuntimeBuilder {
    uproc::Runtime::builder().profile(profile())
}

thread_local! {
    /// The profile [`builder`] builds with, set by [`each_profile`].
    static PROFILE: std::cell::Cell<Profile> = std::cell::Cell::new(Profile::default());
}

/// The profile the current test iteration runs under.
pub fn profile() -> Profile {
    PROFILE.with(|p| p.get())
}

/// Runs `test` once under each profile of `profiles`; a failure names the profile.
pub fn each_profile_of(profiles: &[Profile], test: fn()) {
    struct Named(Profile);
    impl Drop for Named {
        fn drop(&mut self) {
            if std::thread::panicking() {
                eprintln!("(the failure above ran under profile {})", self.0);
            }
        }
    }
    for &p in profiles {
        PROFILE.with(|c| c.set(p));
        let named = Named(p);
        test();
        drop(named);
    }
    PROFILE.with(|c| c.set(Profile::default()));
}

/// Runs `test` under every profile (`Profile::ALL`).
pub fn each_profile(test: fn()) {
    each_profile_of(Profile::ALL, test);
}

/// The profiles that hand out pid numbers in Linux's order (lowest free number after
/// the last one given): tests that pin exact numbers run only under these.
pub const LINUX_NUMBERING: &[Profile] = &[Profile::Linux618, Profile::Linux70];

/// Declares each listed function (a test body, without `#[test]`) as a test run under
/// every profile; `f = linux_numbering` runs `f` under [`LINUX_NUMBERING`] only.
#[allow(unused_macros)]
macro_rules! every_profile {
    ($($(#[$m:meta])* $name:ident $(= $only:ident)?),* $(,)?) => {
        mod every_profile {
            $(
                $(#[$m])*
                #[test]
                fn $name() {
                    every_profile!(@run $($only)? super::$name);
                }
            )*
        }
    };
    (@run linux_numbering $f:path) => {
        crate::common::each_profile_of(crate::common::LINUX_NUMBERING, $f)
    };
    (@run $f:path) => {
        crate::common::each_profile($f)
    };
}
