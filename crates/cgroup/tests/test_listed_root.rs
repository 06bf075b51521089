//! The root cgroup of a hierarchy whose resolver lists every member
//! (`Hierarchy::set_listing_resolver`, the task list's way). Under `Scalable` the root
//! keeps no member set for the tasks forked into it through `post_fork_inline`: they
//! are *listed*, linked and unlinked by one compare-exchange, and `cgroup.procs` of the
//! root asks the resolver. Every profile must show the same files, counts and errors;
//! only the way there differs.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex, Weak};

use common::InlineTask as Task;
use uproc_abi::{Errno, Profile};
use uproc_cgroup::{Cgroup, CgroupMember, Hierarchy, LinkRef, MigrateFn, TaskResolver};

/// The task list's stand-in: it knows every task it made (weakly) and lists them all.
#[derive(Default)]
struct Tasks {
    all: Mutex<Vec<Weak<Task>>>,
    /// A resolver that "forgets" to list: shows that listed links are found only
    /// through it.
    blind: AtomicBool,
}

impl TaskResolver for Tasks {
    fn thread_group_links(&self, pid: i32) -> Result<Vec<LinkRef>, Errno> {
        let t = self
            .live()
            .into_iter()
            .find(|t| t.tgid == pid)
            .ok_or(Errno::ESRCH)?;
        Ok(vec![LinkRef::Inline(t)])
    }

    fn with_thread_group(&self, pid: i32, f: &mut MigrateFn<'_>) -> Result<(), Errno> {
        f(&self.thread_group_links(pid)?)
    }

    fn members(&self) -> Vec<Arc<dyn CgroupMember>> {
        if self.blind.load(Ordering::SeqCst) {
            return Vec::new();
        }
        self.live()
            .into_iter()
            .map(|t| t as Arc<dyn CgroupMember>)
            .collect()
    }
}

impl Tasks {
    fn live(&self) -> Vec<Arc<Task>> {
        self.all
            .lock()
            .unwrap()
            .iter()
            .filter_map(Weak::upgrade)
            .collect()
    }

    /// fork into `cg`: can_fork, the link built into the task, post_fork_inline. Odd
    /// tgids build the link with `ForkCharge::take_link` (the task list's way, which
    /// moves a listed root charge's anchor count into the link), even ones with
    /// `prepare_link`: every test here runs both.
    fn fork(&self, cg: &Cgroup, tgid: i32) -> Result<Arc<Task>, Errno> {
        let mut charge = cg.can_fork()?;
        if tgid % 2 == 1 {
            let link = charge.take_link();
            let t = Arc::new(Task { tgid, link });
            self.list(&t);
            assert!(!charge.post_fork_inline(&t), "no cgroup.kill raced");
            return Ok(t);
        }
        let t = Arc::new(Task {
            tgid,
            link: charge.prepare_link(),
        });
        self.list(&t);
        assert!(!charge.post_fork_inline(&t), "no cgroup.kill raced");
        Ok(t)
    }

    /// Makes `t` visible (listed by the resolver) before post_fork, as the task list's
    /// tasks are.
    fn list(&self, t: &Arc<Task>) {
        let mut all = self.all.lock().unwrap();
        if all.len() > 256 {
            all.retain(|w| w.strong_count() > 0);
        }
        all.push(Arc::downgrade(t));
    }
}

fn setup(p: Profile) -> (Arc<Hierarchy>, Arc<Tasks>) {
    let h = Hierarchy::new(p);
    let tasks = Arc::new(Tasks::default());
    h.set_listing_resolver(Arc::downgrade(&tasks) as Weak<dyn TaskResolver>);
    (h, tasks)
}

fn procs(cg: &Cgroup) -> Vec<i32> {
    let mut v: Vec<i32> = cg
        .read("cgroup.procs")
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    v.sort_unstable();
    v
}

fn exit_and_reap(t: &Task) {
    t.link.task_dead();
    t.link.release();
}

#[test]
fn root_members_are_listed_and_leave_at_exit() {
    for &p in Profile::ALL.iter() {
        let (h, tasks) = setup(p);
        let root = h.root();
        let ts: Vec<_> = (10..15).map(|i| tasks.fork(&root, i).unwrap()).collect();
        assert_eq!(procs(&root), vec![10, 11, 12, 13, 14], "{p:?}");
        assert_eq!(root.read("cgroup.threads").unwrap().lines().count(), 5);
        assert!(root.is_populated());
        assert!(ts.iter().all(|t| t.link.is_linked() && t.link.is_charged()));
        assert_eq!(ts[0].link.cgroup(), root);
        // An exit unlinks (a zombie is no member but still charged); the reap uncharges.
        ts[1].link.task_dead();
        assert!(!ts[1].link.is_linked() && ts[1].link.is_charged());
        assert_eq!(procs(&root), vec![10, 12, 13, 14], "{p:?}");
        ts[1].link.release();
        assert!(!ts[1].link.is_charged());
        // Repeated steps find nothing to do.
        exit_and_reap(&ts[1]);
        for t in &ts {
            exit_and_reap(t);
        }
        assert_eq!(procs(&root), Vec::<i32>::new(), "{p:?}");
        assert!(!root.is_populated());
    }
}

/// Under `Scalable` the root's members are found only through the resolver (they are
/// in no member set); under the Linux profiles the root keeps its sets as Linux does.
#[test]
fn scalable_root_lists_through_the_resolver_only() {
    for &p in Profile::ALL.iter() {
        let (h, tasks) = setup(p);
        let root = h.root();
        let t = tasks.fork(&root, 7).unwrap();
        tasks.blind.store(true, Ordering::SeqCst);
        let seen = procs(&root);
        if p == Profile::Scalable {
            assert_eq!(seen, Vec::<i32>::new(), "listed, in no member set");
        } else {
            assert_eq!(seen, vec![7], "{p:?}: in the root's member set");
        }
        tasks.blind.store(false, Ordering::SeqCst);
        assert_eq!(procs(&root), vec![7]);
        exit_and_reap(&t);
    }
}

/// `post_fork_inline` needs a member that holds its link inline: a member without one
/// is a caller's bug, and it panics (documented) instead of linking nothing.
#[test]
#[should_panic(expected = "a member that holds its link inline")]
fn post_fork_inline_refuses_a_member_without_an_inline_link() {
    struct Apart;
    impl CgroupMember for Apart {
        fn tgid(&self) -> i32 {
            1
        }
        fn is_group_leader(&self) -> bool {
            true
        }
        fn kill(&self) {}
    }
    let (h, _tasks) = setup(Profile::Scalable);
    let charge = h.root().can_fork().unwrap();
    let _ = charge.post_fork_inline(&Arc::new(Apart));
}

/// A plain resolver (`set_resolver`) lists nothing: the root keeps member sets.
#[test]
fn without_a_listing_resolver_the_root_keeps_its_sets() {
    for &p in Profile::ALL.iter() {
        let h = Hierarchy::new(p);
        let tasks = Arc::new(Tasks::default());
        tasks.blind.store(true, Ordering::SeqCst);
        h.set_resolver(Arc::downgrade(&tasks) as Weak<dyn TaskResolver>);
        let t = tasks.fork(&h.root(), 3).unwrap();
        assert_eq!(procs(&h.root()), vec![3], "{p:?}");
        exit_and_reap(&t);
        assert_eq!(procs(&h.root()), Vec::<i32>::new());
    }
}

#[test]
fn listed_tasks_migrate_out_and_back_with_their_charge() {
    for &p in Profile::ALL.iter() {
        let (h, tasks) = setup(p);
        let root = h.root();
        let a = root.mkdir("a").unwrap();
        let t = tasks.fork(&root, 20).unwrap();
        let u = tasks.fork(&root, 21).unwrap();
        // Out of the root by a cgroup.procs write (the resolver finds the link).
        a.write("cgroup.procs", "20").unwrap();
        assert_eq!((procs(&root), procs(&a)), (vec![21], vec![20]), "{p:?}");
        assert_eq!(a.pids_current(), 1);
        assert_eq!(t.link.cgroup(), a);
        assert_eq!(t.link.cgroup_id(), a.id());
        // And back, through the member's link.
        root.attach(&LinkRef::Inline(t.clone())).unwrap();
        assert_eq!((procs(&root), procs(&a)), (vec![20, 21], vec![]), "{p:?}");
        assert_eq!(a.pids_current(), 0);
        assert_eq!(t.link.cgroup(), root);
        // Out again, killed there with the cgroup: the kill reaches a member moved in.
        a.attach(&LinkRef::Inline(t.clone())).unwrap();
        a.kill().unwrap();
        assert!(!t.link.is_linked(), "{p:?}: cgroup.kill reached it");
        assert_eq!(a.pids_current(), 1, "a dead, unreaped task still counts");
        // A dead task is not moved (it stays where its charge is).
        root.attach(&LinkRef::Inline(t.clone())).unwrap();
        assert_eq!(a.pids_current(), 1);
        t.link.release();
        assert_eq!(a.pids_current(), 0);
        a.rmdir().unwrap();
        // A migration into a removed cgroup is ENOENT and moves nothing.
        assert_eq!(a.attach(&LinkRef::Inline(u.clone())), Err(Errno::ENOENT));
        assert_eq!(procs(&root), vec![21]);
        exit_and_reap(&u);
    }
}

/// The exit and the reap may come before post_fork (the task is visible first); a
/// listed link then ends unlinked and uncharged all the same.
#[test]
fn exit_or_reap_before_post_fork_inline() {
    for &p in Profile::ALL.iter() {
        let (h, _tasks) = setup(p);
        let root = h.root();
        for (exit_first, reap_first) in [(true, false), (true, true), (false, true)] {
            let charge = root.can_fork().unwrap();
            let t = Arc::new(Task {
                tgid: 9,
                link: charge.prepare_link(),
            });
            if exit_first {
                t.link.task_dead();
            }
            if reap_first {
                t.link.release();
            }
            assert!(!charge.post_fork_inline(&t));
            assert!(!t.link.is_linked(), "{p:?}: not linked after an early exit");
            assert_eq!(t.link.is_charged(), !reap_first, "{p:?}: a zombie counts");
            exit_and_reap(&t);
            assert!(!t.link.is_charged());
            assert_eq!(procs(&root), Vec::<i32>::new());
        }
    }
}

#[test]
fn dropping_a_listed_member_leaves_nothing() {
    for &p in Profile::ALL.iter() {
        let (h, tasks) = setup(p);
        let root = h.root();
        let a = root.mkdir("a").unwrap();
        let t = tasks.fork(&root, 4).unwrap();
        drop(t);
        assert_eq!(procs(&root), Vec::<i32>::new());
        // Moved out and dropped linked: its drop unlinks and uncharges it there.
        let u = tasks.fork(&root, 5).unwrap();
        a.attach(&LinkRef::Inline(u.clone())).unwrap();
        drop(u);
        assert_eq!((a.pids_current(), procs(&a)), (0, vec![]), "{p:?}");
        a.rmdir().unwrap();
    }
}

/// Forks, exits and reaps in the root on three threads (each keeping a few tasks
/// alive) while a fourth moves tasks between the root and `a` by `cgroup.procs`
/// writes: no task is ever left linked after its exit, counts balance at rest, and `a`
/// can be removed.
#[test]
fn stress_listed_root_against_migrations() {
    use std::collections::VecDeque;
    for &p in Profile::ALL.iter() {
        let (h, tasks) = setup(p);
        let root = h.root();
        let a = root.mkdir("a").unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let start = Arc::new(Barrier::new(4));
        let mut workers = Vec::new();
        for w in 0..3 {
            let (tasks, root, start, stop) =
                (tasks.clone(), root.clone(), start.clone(), stop.clone());
            workers.push(std::thread::spawn(move || {
                let end = |t: Arc<Task>| {
                    t.link.task_dead();
                    assert!(!t.link.is_linked(), "{p:?}: linked after its exit");
                    t.link.release();
                    assert!(!t.link.is_charged());
                };
                start.wait();
                let mut live = VecDeque::new();
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    live.push_back(tasks.fork(&root, 1_000_000 * (w + 1) + i).unwrap());
                    if live.len() > 6 {
                        end(live.pop_front().unwrap());
                    }
                    if i % 3 == 0 {
                        std::thread::yield_now();
                    }
                }
                live.into_iter().for_each(end);
            }));
        }
        let mover = {
            let (a, root, start) = (a.clone(), root.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let (mut out, mut back) = (0u64, 0u64);
                // 300 rounds, and on until a task went each way (the workers may start
                // late); ten seconds without one is a failure below.
                let since = std::time::Instant::now();
                let mut rounds = 0;
                while (rounds < 300 || out == 0 || back == 0)
                    && since.elapsed() < std::time::Duration::from_secs(10)
                {
                    rounds += 1;
                    for pid in procs(&root).into_iter().rev().take(4) {
                        out += u64::from(a.write("cgroup.procs", &pid.to_string()).is_ok());
                    }
                    for pid in procs(&a).into_iter().take(4) {
                        back += u64::from(root.write("cgroup.procs", &pid.to_string()).is_ok());
                    }
                }
                (out, back)
            })
        };
        let (out, back) = mover.join().unwrap();
        stop.store(true, Ordering::Relaxed);
        for w in workers {
            w.join().unwrap();
        }
        // Every worker keeps live tasks in the root: the mover found some to move.
        assert!(out > 0 && back > 0, "{p:?}: moved out {out}, back {back}");
        assert_eq!(procs(&root), Vec::<i32>::new(), "{p:?}");
        assert_eq!((procs(&a), a.pids_current()), (vec![], 0), "{p:?}");
        assert!(!a.is_populated());
        a.rmdir().unwrap();
    }
}
