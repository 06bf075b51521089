//! Pid namespaces and pid numbers: Linux's `kernel/pid.c` and `kernel/pid_namespace.c`
//! for userspace tasks.
//!
//! # What this crate owns
//!
//! - [`PidNamespace`]: a tree of namespaces (level 0 is a runtime's root), each with its
//!   own `pid_max` (`PID_MAX_LIMIT` for a new namespace; ancestors' limits still bound
//!   the outer levels' numbers), cyclic cursor, `pid_allocated` count and `PIDNS_ADDING` state.
//! - [`Pid`] (`struct pid`): one number per level, outermost to innermost, shared by
//!   `Arc`. It outlives its numbers: [`free_pid`] returns them for reuse while handles
//!   keep the object, so an old handle can never name a new task.
//! - [`alloc_pid`] / [`free_pid`], with Linux's numbering (next after the last, wrap to
//!   300 once the cursor passed 300, `set_tid`, the init-first rule) and error codes.
//! - [`PidMap`]: what all namespaces of one runtime share: the [`Profile`] and the named
//!   global `pidmap_lock`, plus the hooks pidfs installs.
//!
//! # Locks, and who touches what
//!
//! | field | written under | read under |
//! |---|---|---|
//! | a namespace's idr, cursor, `pid_allocated`, `PIDNS_ADDING` | `pidmap_lock` + that namespace's state lock (write) | the state lock (read): `find_pid` never takes `pidmap_lock`, as Linux's RCU lookup does not |
//! | `pid_max` | relaxed atomic (Linux: `proc_dointvec`, no lock) | snapshot before `pidmap_lock` |
//! | `Pid::numbers` | private to `alloc_pid` until published; immutable after | anyone |
//! | `Pid::ino` | pidfs, once, before the pid escapes `alloc_pid` | anyone |
//! | `Pid::task_slot` | tasklist, under its tasklist lock | anyone |
//!
//! The per-namespace state lock nests inside `pidmap_lock` and is never held while
//! calling out of this crate, except that `Linux618` calls pidfs's hooks with
//! `pidmap_lock` held, as 6.18 did (pidfs must not take `pidmap_lock` in them).
//!
//! # Invariants
//!
//! - A number is in one of three states in its namespace: free, reserved (bit set, no
//!   entry: invisible to `find_pid`), published. All levels of one pid are published
//!   together, so a lookup never finds a pid that is missing a level.
//! - `nr_allocated()` counts reserved + published numbers; at rest it equals the number
//!   of pids not yet freed that have a number in that namespace. (Linux's
//!   `pid_allocated` counts published pids only; the two differ only while an
//!   `alloc_pid` is between reserve and publish or rollback.)
//! - The cyclic cursor only moves forward (mod wrap) except while a namespace still waits
//!   for its first process, when it is reset so that process gets 1.
//!
//! # Profiles
//!
//! See [`alloc_pid`]'s module table: `Linux618` takes `pidmap_lock` once per level to
//! reserve plus once to publish (2 for a single-level fork), `Linux70` once. Freeing
//! takes it once in both. A future profile plugs into `alloc.rs` without changing
//! callers.
#![forbid(unsafe_code)]

mod alloc;
mod idr;
mod namespace;
mod pid;

pub use alloc::{alloc_pid, free_pid};
pub use namespace::{PidMap, PidNamespace, PidfsHooks, ReaperWakeup};
pub use pid::{Attachment, Pid, Upid};
pub use uproc_abi::Profile;

/// Numbers below this are not reused once the cursor has passed it (`RESERVED_PIDS`).
pub const RESERVED_PIDS: i32 = 300;
/// Default `pid_max` (`PID_MAX_DEFAULT`).
pub const PID_MAX_DEFAULT: i32 = 0x8000;
/// The largest `pid_max` (`PID_MAX_LIMIT` on 64-bit).
pub const PID_MAX_LIMIT: i32 = 4 * 1024 * 1024;
/// The smallest `pid_max` a namespace accepts (`pid_max_min` = `RESERVED_PIDS + 1`).
pub const PID_MAX_MIN: i32 = RESERVED_PIDS + 1;
/// The deepest namespace level (`MAX_PID_NS_LEVEL`): level 33 fails with ENOSPC.
pub const MAX_PID_NS_LEVEL: u32 = 32;
