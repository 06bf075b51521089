//! The Linux vocabulary every uproc crate speaks.
//!
//! This crate owns no state. It defines the values that cross uproc's API and that a
//! reader of the kernel recognises: [`Errno`] (error numbers, libc's values),
//! [`Signal`] and [`SigSet`], [`WaitStatus`] (the wait(2) status word), the flag sets of
//! clone3, waitid, pidfd_open, `PIDFD_GET_INFO` and pidfd_send_signal (Linux's bit
//! values, so unknown bits can be carried to the validation that rejects them), the
//! lock [`Profile`] a runtime imitates, [`lockstat`]: named global locks whose
//! acquisitions the benchmark counts, and [`spin`]: the one-atomic-a-round lock of the
//! short per-task and per-process critical sections (the siglock, a cgroup link's
//! state, a member set), [`arc_cache`]: the per-thread slab caches of emptied `Arc`
//! allocations that the pid and task objects of a life cycle are made in, and
//! [`hint`]: the branch hint that lays the life cycle's rare paths out of its hot code,
//! and [`walk`]: the queue that lets a kill of many processes signal every victim
//! before any of them dies.
//!
//! Everything here is plain data, a lock or a cache; the behaviour lives in `uproc-pidns`,
//! `uproc-pidfs`, `uproc-cgroup` and `uproc-tasklist`, and users reach it through the
//! `uproc` facade. The crate's `unsafe` code is [`spin::RawSpin`]'s
//! `lock_api::RawMutex` implementation, [`arc_cache`]'s in-place drop and write of a
//! unique `Arc`'s value, and [`stash`]'s uninitialised slots and flagless
//! thread-local cell, each with its safety argument.
#![deny(unsafe_code)]

pub mod arc_cache;
mod errno;
mod flags;
pub mod hint;
pub mod lockstat;
mod profile;
mod signal;
pub mod spin;
pub mod stash;
pub mod user;
mod wait;
pub mod walk;

pub use errno::Errno;
pub use flags::{CloneFlags, InfoMask, OpenFlags, PidfdFlags, PidfdSignalFlags, WaitOptions};
pub use profile::{ParseProfileError, Profile};
pub use signal::{DefaultAction, SIGRTMAX, SigSet, Signal};
pub use wait::WaitStatus;
