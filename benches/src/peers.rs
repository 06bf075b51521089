//! The peers uproc is measured against, in the same process and run: the real kernel's
//! `pthread_create` + `pthread_join` (will-it-scale's `threadspawn1` itself), Rust's
//! `std::thread::spawn` + `join`, and tokio's `spawn` + `.await`.
//!
//! Each has the same shape as the uproc loop: N workers, each creating one empty unit of
//! execution and waiting for its end, over and over.

use crate::run::{Outcome, run_threads, run_tokio};
use core::ffi::c_void;
use std::mem::MaybeUninit;
use std::ptr::{null, null_mut};

extern "C" fn empty_start(_arg: *mut c_void) -> *mut c_void {
    std::ptr::null_mut()
}

/// One `pthread_create` of an empty thread and its `pthread_join`, default attributes,
/// as will-it-scale's `threadspawn1` does.
///
/// # References
/// [pthread_create(3)](https://man7.org/linux/man-pages/man3/pthread_create.3.html),
/// [pthread_join(3)](https://man7.org/linux/man-pages/man3/pthread_join.3.html).
pub fn pthread_cycle() -> Result<(), String> {
    let mut tid = MaybeUninit::<libc::pthread_t>::uninit();
    // SAFETY: `tid` is valid for writes; a null attr means default attributes;
    // `empty_start` has the C signature pthread_create expects and ignores its (null)
    // argument, so no data is shared with the new thread.
    let rc = unsafe { libc::pthread_create(tid.as_mut_ptr(), null(), empty_start, null_mut()) };
    pthread_result("pthread_create", rc)?;
    // SAFETY: pthread_create returned 0, so it initialised `tid` with a joinable thread,
    // which is joined exactly once, here; a null retval pointer discards the result.
    let rc = unsafe { libc::pthread_join(tid.assume_init(), null_mut()) };
    pthread_result("pthread_join", rc)
}

/// A pthread function's return value (0 or an error number) as a `Result`.
fn pthread_result(what: &str, rc: libc::c_int) -> Result<(), String> {
    match rc {
        0 => Ok(()),
        _ => Err(format!("{what}: {}", std::io::Error::from_raw_os_error(rc))),
    }
}

/// `workers` threads looping [`pthread_cycle`] for `seconds`.
pub fn pthread(workers: usize, seconds: f64) -> Outcome {
    run_threads(workers, seconds, |_| pthread_cycle)
}

/// `workers` threads looping `std::thread::spawn(|| {}).join()` for `seconds`.
pub fn std_thread(workers: usize, seconds: f64) -> Outcome {
    run_threads(workers, seconds, |_| {
        || {
            std::thread::Builder::new()
                .spawn(|| {})
                .map_err(|e| format!("std::thread::spawn: {e}"))?
                .join()
                .map_err(|_| "an empty std thread panicked".to_string())
        }
    })
}

/// A tokio multi-thread runtime with `workers` worker threads, `workers` tasks each
/// looping `tokio::spawn(async {}).await` for `seconds`.
pub fn tokio(workers: usize, seconds: f64) -> Outcome {
    run_tokio(workers, seconds, |_, stop| async move {
        crate::worker_loop!(stop, async {
            tokio::spawn(async {})
                .await
                .map_err(|e| format!("tokio::spawn: {e}"))
        })
    })
}
