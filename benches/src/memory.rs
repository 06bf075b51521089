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

use std::time::Instant;
use uproc::{CloneArgs, Runtime, Task};
use uproc_abi::Profile;

/// What one memory measurement found.
#[derive(Clone, Debug)]
pub struct MemoryOutcome {
    /// The profile measured.
    pub profile: Profile,
    /// Live tasks held.
    pub count: usize,
    /// Resident bytes before the forks.
    pub rss_before: u64,
    /// Resident bytes with every task alive.
    pub rss_after: u64,
    /// Nanoseconds per fork while filling.
    pub ns_per_fork: f64,
}

impl MemoryOutcome {
    /// `(rss_after - rss_before) / count`.
    pub fn bytes_per_task(&self) -> f64 {
        self.rss_after.saturating_sub(self.rss_before) as f64 / self.count as f64
    }

    /// One human-readable line.
    pub fn line(&self) -> String {
        format!(
            "taskmem {:<9} {:>9} live tasks: RSS {:>8.1} MiB -> {:>8.1} MiB, {:>7.1} bytes/task, {:>6.0} ns/fork",
            self.profile.name(),
            self.count,
            self.rss_before as f64 / 1048576.0,
            self.rss_after as f64 / 1048576.0,
            self.bytes_per_task(),
            self.ns_per_fork
        )
    }

    /// One JSON line.
    pub fn json(&self) -> String {
        serde_json::json!({
            "type": "memory", "profile": self.profile.name(), "count": self.count,
            "rss_before": self.rss_before, "rss_after": self.rss_after,
            "bytes_per_task": self.bytes_per_task(), "ns_per_fork": self.ns_per_fork,
        })
        .to_string()
    }
}

/// The resident set size of this process in bytes, from `/proc/self/statm`.
///
/// # References
/// [proc_pid_statm(5)](https://man7.org/linux/man-pages/man5/proc_pid_statm.5.html)
pub fn rss_bytes() -> Result<u64, String> {
    let s = std::fs::read_to_string("/proc/self/statm")
        .map_err(|e| format!("reading /proc/self/statm: {e}"))?;
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("unexpected /proc/self/statm: {s:?}"))?;
    // SAFETY: sysconf has no preconditions; _SC_PAGESIZE is a valid name.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let page = if page > 0 { page as u64 } else { 4096 };
    Ok(pages * page)
}

/// Holds `count` live tasks under `profile` and measures their resident cost.
///
/// The tasks are deliberately left alive when this returns (their handles are leaked):
/// the caller is a process that prints the result and exits, and tearing down a million
/// tasks would only measure teardown.
pub fn measure_memory(profile: Profile, count: usize) -> Result<MemoryOutcome, String> {
    let rt = Runtime::builder()
        .profile(profile)
        .pid_max(uproc_pidns::PID_MAX_LIMIT)
        .build()
        .map_err(|e| format!("Runtime::build: {e}"))?;
    let parent = rt
        .init()
        .fork(&CloneArgs::default())
        .map_err(|e| format!("fork(parent): {e}"))?;
    // Touch the handle array first, so its pages are in the baseline.
    let mut tasks: Vec<Option<Task>> = vec![None; count];
    let args = CloneArgs::default();
    let rss_before = rss_bytes()?;
    let start = Instant::now();
    for (i, slot) in tasks.iter_mut().enumerate() {
        *slot = Some(
            parent
                .fork(&args)
                .map_err(|e| format!("fork (live task {i}): {e}"))?,
        );
    }
    let ns_per_fork = start.elapsed().as_nanos() as f64 / count as f64;
    let rss_after = rss_bytes()?;
    std::mem::forget(tasks);
    std::mem::forget(parent);
    std::mem::forget(rt);
    Ok(MemoryOutcome {
        profile,
        count,
        rss_before,
        rss_after,
        ns_per_fork,
    })
}
