//! The uproc side of `threadspawn`: one runtime per run, one parent task per worker,
//! and the life cycle each worker loops.
//!
//! Setup mirrors will-it-scale's separate processes: every worker gets its own parent
//! task, forked from `rt.init()` (or from the init of a nested pid namespace with
//! `--levels`), so workers never reap each other's children and each parent's child
//! list holds at most one task. Teardown exits and reaps every task setup created,
//! innermost first, so a run leaves no task, pid or charge behind.

use crate::args::Body;
use crate::errno;
use crate::run::Outcome;
use uproc::{CloneArgs, CloneFlags, Errno, Runtime, Spawn, Task, WaitId, WaitOptions};
use uproc_abi::Profile;
use uproc_abi::lockstat::LockStat;

/// How each fork is made, whatever the body; `threadspawn`'s options of the same names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::Args)]
pub struct ForkShape {
    /// Depth of the pid namespace the workers' parents live in (0 = root), up to 32
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=32))]
    pub levels: u32,
    /// CLONE_PIDFD on every fork
    #[arg(long)]
    pub pidfd: bool,
    /// Parents and children in a cgroup with a (non-binding) pids.max
    #[arg(long)]
    pub cgroup: bool,
}

/// The global locks every profile reports, first in every table (`pidns_pool_lock`:
/// `Scalable`'s per-namespace pool lock, global since any fork may take it).
pub const LOCK_NAMES: [&str; 4] = [
    "pidmap_lock",
    "tasklist_lock",
    "css_set_lock",
    "pidns_pool_lock",
];

/// Counts and sampled times of each global lock: [`LOCK_NAMES`], then any other.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Locks(pub Vec<LockStat>);

impl Default for Locks {
    fn default() -> Self {
        Locks(LOCK_NAMES.map(LockStat::zero).to_vec())
    }
}

impl Locks {
    /// The lock called `name`, added (never taken) if missing.
    pub fn entry(&mut self, name: &'static str) -> &mut LockStat {
        let found = self.0.iter().position(|s| s.name == name);
        let i = found.unwrap_or_else(|| {
            self.0.push(LockStat::zero(name));
            self.0.len() - 1
        });
        &mut self.0[i]
    }

    /// `self - before`, lock by lock.
    pub fn since(&self, before: &Locks) -> Locks {
        let mut d = self.clone();
        for b in &before.0 {
            let a = d.entry(b.name);
            *a = a.since(b);
        }
        d
    }

    /// Adds `stats` (a runtime's `lock_stats()`, say) lock by lock, by name.
    pub fn add(&mut self, stats: &[LockStat]) {
        stats.iter().for_each(|s| self.entry(s.name).add(s));
    }
}

/// How many exclusive acquisitions of a lock one life cycle must take.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Expected {
    /// Exactly this many, every life cycle (a deterministic path).
    Exactly(u64),
    /// At most this many on average (amortised work such as batched refills).
    AtMost(f64),
}

impl Expected {
    /// Whether `got` acquisitions over `ops` life cycles agree.
    pub fn admits(self, got: u64, ops: u64) -> bool {
        match self {
            Expected::Exactly(n) => got == n * ops,
            Expected::AtMost(x) => got as f64 <= x * ops as f64,
        }
    }
}

/// THE EXPECTED-COUNT TABLE: the exclusive acquisitions of `pidmap_lock`,
/// `tasklist_lock`, `css_set_lock` and `pidns_pool_lock` ([`LOCK_NAMES`] order) that one bookkeeping-only
/// life cycle (fork + exit + reap) takes under `profile`, checked by `threadspawn` for
/// `--body none` (exit status 1 on a mismatch). A new profile adds its row here.
///
/// `Linux618` takes `pidmap_lock` once per namespace level to reserve, once to publish
/// and once to free (3 at level 0); `Linux70` once to allocate every level and once to
/// free. Both take `tasklist_lock` once on clone and twice on exit/reap, and
/// `css_set_lock` at `can_fork`, `post_fork` and `task_dead`. `Scalable` takes only
/// `pidns_pool_lock`, once per 128 numbers and level (a bound, not an exact count).
///
/// # References
/// `alloc_pid`/`free_pid` in `kernel/pid.c`; `copy_process`, `exit_notify`,
/// `release_task`; `cgroup_can_fork`, `cgroup_post_fork`, `cgroup_task_dead`.
pub fn expected_locks(profile: Profile, levels: u32) -> [Expected; 4] {
    use Expected::{AtMost, Exactly};
    let linux = |pidmap| [Exactly(pidmap), Exactly(3), Exactly(3), Exactly(0)];
    match profile {
        Profile::Linux618 => linux(u64::from(levels) + 3),
        Profile::Linux70 => linux(2),
        Profile::Scalable => [Exactly(0), Exactly(0), Exactly(0), AtMost(0.05)],
    }
}

/// One runtime set up for a run: the namespace holders and one parent per worker.
#[derive(Debug)]
pub struct Setup {
    /// The runtime under test.
    pub rt: Runtime,
    /// The init of each nested namespace, outermost first (empty at level 0).
    holders: Vec<Task>,
    /// One parent per worker.
    pub parents: Vec<Task>,
    /// The cgroup of `--cgroup`.
    cgroup: Option<uproc::Cgroup>,
    /// What every worker's fork passes.
    pub args: CloneArgs,
}

impl Setup {
    /// A fresh runtime under `profile` with `workers` parents shaped by `shape`.
    pub fn new(profile: Profile, shape: ForkShape, workers: usize) -> Result<Setup, String> {
        let rt = Runtime::builder().profile(profile).build();
        let rt = rt.map_err(errno("Runtime::build"))?;
        let (mut top, mut holders, mut newpid) = (rt.init(), Vec::new(), CloneArgs::default());
        newpid.flags = CloneFlags::NEWPID;
        for _ in 0..shape.levels {
            top = top.fork(&newpid).map_err(errno("fork(CLONE_NEWPID)"))?;
            holders.push(top.clone());
        }
        let mut cgroup = None;
        if shape.cgroup {
            let cg = rt.cgroup_root().mkdir("threadspawn");
            let cg = cg.map_err(errno("mkdir threadspawn"))?;
            // Each parent and its one child at a time, plus room: never binding.
            let written = cg.write("pids.max", &(2 * workers + 16).to_string());
            written.map_err(errno("write pids.max"))?;
            cgroup = Some(cg);
        }
        let mut parents = Vec::with_capacity(workers);
        for _ in 0..workers {
            let p = top.fork(&CloneArgs::default());
            let p = p.map_err(errno("fork(parent)"))?;
            if let Some(cg) = &cgroup {
                cg.attach(&p).map_err(errno("cgroup attach"))?;
            }
            parents.push(p);
        }
        let mut args = CloneArgs::default();
        args.flags.set(CloneFlags::PIDFD, shape.pidfd);
        Ok(Setup {
            rt,
            holders,
            parents,
            cgroup,
            args,
        })
    }

    /// The runtime's global lock counts now.
    pub fn lock_counts(&self) -> Locks {
        let mut locks = Locks::default();
        locks.add(&self.rt.lock_stats());
        locks
    }

    /// Exits and reaps every parent, then every namespace holder, innermost first, and
    /// removes the cgroup.
    pub fn teardown(self) -> Result<(), String> {
        let mut chain = vec![self.rt.init()];
        chain.extend(self.holders.iter().cloned());
        let top = chain.last().expect("init at least");
        self.parents.iter().try_for_each(|p| reap(top, p))?;
        chain
            .windows(2)
            .rev()
            .try_for_each(|w| reap(&w[0], &w[1]))?;
        if let Some(cg) = self.cgroup {
            cg.rmdir().map_err(errno("rmdir threadspawn"))?;
        }
        Ok(())
    }
}

/// `child` exits with 0 and `parent` reaps it, checking what `wait` reports.
fn reap(parent: &Task, child: &Task) -> Result<(), String> {
    exit_and_reap(parent, child, parent.pid_of(child))
}

/// `child`, whose pid in `parent`'s namespace is `pid`, exits with 0; `parent` reaps it.
#[inline]
fn exit_and_reap(parent: &Task, child: &Task, pid: i32) -> Result<(), String> {
    child.exit(0);
    match parent.wait(WaitId::Pid(pid), WaitOptions::EXITED) {
        Ok(Some(info)) if info.pid == pid && info.status.exited() == Some(0) => Ok(()),
        Ok(other) => Err(format!("wait({pid}) returned {other:?}")),
        Err(e) => Err(errno("wait")(e)),
    }
}

/// A spawned child's end: status 0 or what went wrong.
fn exited_0(what: &str, st: Result<uproc::WaitStatus, Errno>) -> Result<(), String> {
    match st {
        Ok(st) if st.exited() == Some(0) => Ok(()),
        Ok(st) => Err(crate::failure(
            what,
            &format_args!("the child ended with {st:?}"),
        )),
        Err(e) => Err(errno(what)(e)),
    }
}

/// The bookkeeping-only life cycle: `parent` forks a child, the child exits, `parent`
/// reaps it. No body runs.
#[inline]
pub fn cycle_none(parent: &Task, args: &CloneArgs) -> Result<(), String> {
    let child = parent.fork(args).map_err(errno("fork"))?;
    if args.flags.contains(CloneFlags::PIDFD) && child.pidfd().is_none() {
        return Err("fork(CLONE_PIDFD) returned no pidfd".to_string());
    }
    // The child is in its parent's namespace: its own pid is the one the parent sees.
    exit_and_reap(parent, &child, child.pid())
}

/// The life cycle with an empty body on the thread executor: `Runtime::spawn` as a
/// child of `parent`, then `Child::wait`.
#[inline]
pub fn cycle_thread(rt: &Runtime, parent: &Task, args: &CloneArgs) -> Result<(), String> {
    let spawn = Spawn::new().parent(parent).args(args.clone());
    let child = rt.spawn(spawn, |_cx| 0).map_err(errno("spawn"))?;
    exited_0("Child::wait", child.wait())
}

/// The life cycle with an empty async body on tokio: `Runtime::spawn_async` as a child
/// of `parent`, awaited.
pub async fn cycle_tokio(rt: &Runtime, parent: &Task, args: &CloneArgs) -> Result<(), String> {
    let spawn = Spawn::new().parent(parent).args(args.clone());
    let child = rt.spawn_async(spawn, |_cx| async move { 0 });
    exited_0("Child.await", child.map_err(errno("spawn_async"))?.await)
}

/// Sets up a runtime, runs `workers` workers looping the `body` life cycle for
/// `seconds`, and tears it down: the run's outcome and its lock deltas over the measured
/// part (setup and teardown excluded).
pub fn measure(
    profile: Profile,
    body: Body,
    shape: ForkShape,
    workers: usize,
    seconds: f64,
) -> Result<(Outcome, Locks), String> {
    let setup = Setup::new(profile, shape, workers)?;
    let (rt, args) = (&setup.rt, &setup.args);
    let worker = |i: usize| (rt.clone(), setup.parents[i].clone(), args.clone());
    let before = setup.lock_counts();
    let outcome = if body == Body::Tokio {
        crate::run::run_tokio(workers, seconds, |i, stop| {
            let (rt, parent, args) = worker(i);
            async move { crate::worker_loop!(stop, cycle_tokio(&rt, &parent, &args)) }
        })
    } else {
        crate::run::run_threads(workers, seconds, |i| {
            let (rt, parent, args) = worker(i);
            move || match body {
                Body::Thread => cycle_thread(&rt, &parent, &args),
                _ => cycle_none(&parent, &args),
            }
        })
    };
    let locks = setup.lock_counts().since(&before);
    setup.teardown()?;
    Ok((outcome, locks))
}
