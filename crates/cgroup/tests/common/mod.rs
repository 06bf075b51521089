//! Tiny fakes of what the task list provides: a task ([`FakeTask`]), a thread group
//! ([`Group`]), and a pid resolver ([`Resolver`]).
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use uproc_abi::{Errno, Profile};
use uproc_cgroup::{Attachable, Cgroup, CgroupMember, CssLink, ForkCharge, LinkRef, TaskResolver};

/// A task: its numbers, its link, how often it was killed, and whether a kill makes
/// it exit at once (call task_dead, as the task list will).
#[derive(Debug)]
pub struct FakeTask {
    pub tgid: i32,
    pub tid: i32,
    pub leader: bool,
    pub die_on_kill: bool,
    pub kills: AtomicUsize,
    /// What `group_has_live_threads` answers (the test says when its threads die).
    pub threads_live: AtomicBool,
    pub link: Mutex<Option<Arc<CssLink>>>,
}

impl CgroupMember for FakeTask {
    fn tgid(&self) -> i32 {
        self.tgid
    }
    fn is_group_leader(&self) -> bool {
        self.leader
    }
    fn kill(&self) {
        self.kills.fetch_add(1, Ordering::SeqCst);
        if self.die_on_kill {
            let link = self.link.lock().unwrap().clone();
            if let Some(l) = link {
                l.task_dead();
            }
        }
    }
    fn tid(&self) -> i32 {
        self.tid
    }
    fn group_has_live_threads(&self) -> bool {
        self.threads_live.load(Ordering::SeqCst)
    }
}

impl FakeTask {
    pub fn link(&self) -> Arc<CssLink> {
        self.link.lock().unwrap().clone().expect("forked")
    }
    pub fn kills(&self) -> usize {
        self.kills.load(Ordering::SeqCst)
    }
    /// A leader's exit while threads of its group live (`task_dead_leader`).
    pub fn die_before_threads(self: &Arc<Self>) {
        self.threads_live.store(true, Ordering::SeqCst);
        let weak: Weak<dyn CgroupMember> = Arc::downgrade(self) as Weak<dyn CgroupMember>;
        self.link().task_dead_leader(weak);
    }
    /// exit + reap.
    pub fn exit_and_reap(&self) {
        let l = self.link();
        l.task_dead();
        l.release();
    }
}

/// fork(): can_fork, post_fork, keep the link. Returns the task and post_fork's `killed`.
pub fn fork_full(
    cg: &Cgroup,
    tgid: i32,
    tid: i32,
    leader: bool,
    die_on_kill: bool,
) -> Result<(Arc<FakeTask>, bool), Errno> {
    Ok(link_new_task(
        cg.can_fork()?,
        tgid,
        tid,
        leader,
        die_on_kill,
    ))
}

/// A child of `parent` forked into the parent's own cgroup (`CssLink::can_fork`: the
/// parent's anchor), a leader that exits when killed.
pub fn fork_child(parent: &FakeTask, tgid: i32) -> Result<Arc<FakeTask>, Errno> {
    let charge = parent.link().can_fork()?;
    Ok(link_new_task(charge, tgid, tgid, true, true).0)
}

/// post_fork of a new task onto `charge`; returns it and post_fork's `killed`.
pub fn link_new_task(
    charge: ForkCharge,
    tgid: i32,
    tid: i32,
    leader: bool,
    die_on_kill: bool,
) -> (Arc<FakeTask>, bool) {
    let task = Arc::new(FakeTask {
        tgid,
        tid,
        leader,
        die_on_kill,
        kills: AtomicUsize::new(0),
        threads_live: AtomicBool::new(false),
        link: Mutex::new(None),
    });
    let weak: Weak<dyn CgroupMember> = Arc::downgrade(&task) as Weak<dyn CgroupMember>;
    let pf = charge.post_fork(weak);
    *task.link.lock().unwrap() = Some(pf.link);
    (task, pf.killed)
}

/// A process (thread-group leader) that exits when killed.
pub fn fork(cg: &Cgroup, tgid: i32) -> Result<Arc<FakeTask>, Errno> {
    fork_full(cg, tgid, tgid, true, true).map(|(t, _)| t)
}

/// A thread of `tgid` with its own `tid`.
pub fn fork_thread(cg: &Cgroup, tgid: i32, tid: i32) -> Result<Arc<FakeTask>, Errno> {
    fork_full(cg, tgid, tid, false, true).map(|(t, _)| t)
}

/// A thread group, attachable as a whole.
#[derive(Debug)]
pub struct Group(pub Vec<Arc<FakeTask>>);

impl Attachable for Group {
    fn css_links(&self) -> Vec<LinkRef> {
        self.0
            .iter()
            .map(|t| t.link())
            .filter(|l| l.is_linked())
            .map(LinkRef::from)
            .collect()
    }
}

/// Finds thread groups by tgid among the tasks it was told about.
#[derive(Debug, Default)]
pub struct Resolver {
    pub tasks: Mutex<Vec<Arc<FakeTask>>>,
}

impl Resolver {
    pub fn add(&self, t: &Arc<FakeTask>) {
        self.tasks.lock().unwrap().push(t.clone());
    }
}

impl TaskResolver for Resolver {
    fn thread_group_links(&self, pid: i32) -> Result<Vec<LinkRef>, Errno> {
        let tasks = self.tasks.lock().unwrap();
        if !tasks
            .iter()
            .any(|t| t.tid == pid || (t.leader && t.tgid == pid))
        {
            return Err(Errno::ESRCH);
        }
        let tgid = tasks.iter().find(|t| t.tid == pid).map_or(pid, |t| t.tgid);
        Ok(tasks
            .iter()
            .filter(|t| t.tgid == tgid)
            .map(|t| t.link())
            .filter(|l| l.is_linked())
            .map(LinkRef::from)
            .collect())
    }
}

/// A tiny deterministic PRNG (xorshift64*), so the stress tests replay.
#[derive(Debug)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Runs `f` under every lock profile: the rules checked hold in all of them.
pub fn for_each_profile(f: impl Fn(Profile)) {
    for &p in Profile::ALL {
        f(p);
    }
}

/// A member that holds its link inline (as the task list does): built by
/// `prepare_link` into the member, found through `CgroupMember::css`.
pub struct InlineTask {
    pub tgid: i32,
    pub link: uproc_cgroup::CssLink,
}

impl uproc_cgroup::CgroupMember for InlineTask {
    fn tgid(&self) -> i32 {
        self.tgid
    }
    fn is_group_leader(&self) -> bool {
        true
    }
    fn kill(&self) {
        self.link.task_dead();
    }
    fn css(&self) -> Option<&uproc_cgroup::CssLink> {
        Some(&self.link)
    }
}
