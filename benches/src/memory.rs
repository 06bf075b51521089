//! Memory mode: bytes per live task.
//!
//! One parent (forked from `rt.init()`) forks `count` children that stay alive (not
//! exited, so not zombies either) under a runtime with `pid_max` 4194304
//! (`PID_MAX_LIMIT`); the resident set size is read from `/proc/self/statm` before and
//! after. The delta covers everything a live task costs: the task object, its `struct
//! pid`, the pid's idr entry, its place in the parent's child list, pidfs and cgroup
//! membership. The benchmark's own handle array is touched before the first reading, so
//! it is not counted.
//!
//! Freed memory stays in the allocator, so a second measurement in the same process
//! would reuse it and read low: the binary measures each profile in a fresh process.

use crate::errno;
use std::time::Instant;
use uproc::{CloneArgs, Runtime, Task};
use uproc_abi::Profile;
use uproc_pidns::PID_MAX_LIMIT;

/// What one memory measurement found.
#[derive(Clone, Debug, serde::Serialize)]
pub struct MemoryOutcome {
    /// The profile measured.
    pub profile: &'static str,
    /// Live tasks held.
    pub count: usize,
    /// Resident bytes before the forks.
    pub rss_before: u64,
    /// Resident bytes with every task alive.
    pub rss_after: u64,
    /// `(rss_after - rss_before) / count`.
    pub bytes_per_task: f64,
    /// Nanoseconds per fork while filling.
    pub ns_per_fork: f64,
}

impl MemoryOutcome {
    /// One human-readable line.
    pub fn line(&self) -> String {
        let mib = |b: u64| b as f64 / 1048576.0;
        let (before, after) = (mib(self.rss_before), mib(self.rss_after));
        let mut s = format!("taskmem {:<9} {:>9} live tasks: ", self.profile, self.count);
        s += &format!("RSS {before:>8.1} MiB -> {after:>8.1} MiB, ");
        let (per_task, per_fork) = (self.bytes_per_task, self.ns_per_fork);
        s + &format!("{per_task:>7.1} bytes/task, {per_fork:>6.0} ns/fork")
    }
}

/// The resident set size of this process in bytes, from `/proc/self/statm`.
///
/// # References
/// [proc_pid_statm(5)](https://man7.org/linux/man-pages/man5/proc_pid_statm.5.html)
pub fn rss_bytes() -> Result<u64, String> {
    let s = std::fs::read_to_string("/proc/self/statm");
    let s = s.map_err(|e| format!("reading /proc/self/statm: {e}"))?;
    let pages: Option<u64> = s.split_whitespace().nth(1).and_then(|v| v.parse().ok());
    let pages = pages.ok_or_else(|| format!("unexpected /proc/self/statm: {s:?}"))?;
    // SAFETY: sysconf has no preconditions; _SC_PAGESIZE is a valid name.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Ok(pages * if page > 0 { page as u64 } else { 4096 })
}

/// Holds `count` live tasks under `profile` and measures their resident cost.
///
/// The tasks are deliberately left alive when this returns (their handles are leaked):
/// the caller is a process that prints the result and exits, and tearing down a million
/// tasks would only measure teardown.
pub fn measure_memory(profile: Profile, count: usize) -> Result<MemoryOutcome, String> {
    let builder = Runtime::builder().profile(profile).pid_max(PID_MAX_LIMIT);
    let rt = builder.build().map_err(errno("Runtime::build"))?;
    let parent = rt.init().fork(&CloneArgs::default());
    let parent = parent.map_err(errno("fork(parent)"))?;
    // Touch the handle array first, so its pages are in the baseline.
    let mut tasks: Vec<Option<Task>> = vec![None; count];
    let (args, rss_before, start) = (CloneArgs::default(), rss_bytes()?, Instant::now());
    for (i, slot) in tasks.iter_mut().enumerate() {
        let child = parent.fork(&args);
        *slot = Some(child.map_err(|e| format!("fork (live task {i}): {e}"))?);
    }
    let ns_per_fork = start.elapsed().as_nanos() as f64 / count as f64;
    let rss_after = rss_bytes()?;
    std::mem::forget((tasks, parent, rt));
    let bytes_per_task = rss_after.saturating_sub(rss_before) as f64 / count as f64;
    let profile = profile.name();
    Ok(MemoryOutcome {
        profile,
        count,
        rss_before,
        rss_after,
        bytes_per_task,
        ns_per_fork,
    })
}
