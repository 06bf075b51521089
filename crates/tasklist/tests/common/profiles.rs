//! Running a behaviour test under every lock profile: the test helpers (`system()`,
//! `builder()`) build with [`profile`], which [`each_profile`] sets for each run. Shared
//! by the tasklist and uproc test suites (included by path).
#![allow(dead_code, unreachable_pub)]

use uproc_abi::Profile;

thread_local! {
    /// The profile the test helpers build with, set by [`each_profile`].
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
