//! `cgroup.kill`, mirroring tools/testing/selftests/cgroup/test_kill.c: killing a
//! tree, the fork/kill race (`kill_seq`), and the file's value rules.

mod common;

use std::sync::Arc;

use common::{for_each_profile, fork, fork_full, fork_thread};
use uproc_abi::Errno;
use uproc_cgroup::{CgroupMember, Hierarchy};

/// test_cgkill_tree: a three-level tree with processes and threads on every level;
/// writing 1 to the top's cgroup.kill kills each process once, and every level then
/// reads "populated 0".
#[test]
fn kill_three_level_tree_kills_every_member_and_unpopulates() {
    for_each_profile(|p| {
        let h = Hierarchy::new(p);
        let bystander_cg = h.root().mkdir("other").unwrap();
        let a = h.root().mkdir("a").unwrap();
        let b1 = a.mkdir("b1").unwrap();
        let b2 = a.mkdir("b2").unwrap();
        let c = b1.mkdir("c").unwrap();
        let mut victims = Vec::new();
        let mut tgid = 100;
        for g in [&a, &b1, &b2, &c] {
            for _ in 0..3 {
                victims.push(fork(g, tgid).unwrap());
                victims.push(fork_thread(g, tgid, tgid + 1).unwrap());
                tgid += 2;
            }
        }
        let bystander = fork(&bystander_cg, 9).unwrap();
        assert_eq!(a.read("cgroup.events").unwrap(), "populated 1\nfrozen 0\n");
        a.write("cgroup.kill", "1\n").unwrap();
        for v in &victims {
            // Once per process: to its leader (the task list's group kill reaches
            // the threads), as the CSS_TASK_ITER_PROCS walk of `cgroup_kill` does.
            let want = usize::from(v.leader);
            assert_eq!(v.kills(), want, "SIGKILL delivered to {}", v.tid);
        }
        // The group kill's other half, which the fakes leave to the test.
        for v in victims.iter().filter(|v| !v.leader) {
            v.link().task_dead();
        }
        for v in &victims {
            assert!(!v.link().is_linked());
        }
        assert_eq!(bystander.kills(), 0, "outside the subtree");
        for g in [&a, &b1, &b2, &c] {
            assert_eq!(
                g.read("cgroup.events").unwrap(),
                "populated 0\nfrozen 0\n",
                "{g:?}"
            );
            assert_eq!(g.read("cgroup.procs").unwrap(), "");
        }
        assert_eq!(
            a.pids_current(),
            victims.len() as u64,
            "zombies until reaped"
        );
        for v in &victims {
            v.link().release();
        }
        assert_eq!(a.pids_current(), 0);
        for g in [&c, &b2, &b1, &a] {
            g.rmdir().unwrap();
        }
    });
}

/// A member whose kill() does not exit at once (the signal is pending) keeps the
/// cgroup populated until its task_dead.
#[test]
fn populated_stays_until_the_killed_task_is_dead() {
    for_each_profile(|p| {
        let a = Hierarchy::new(p).root().mkdir("a").unwrap();
        let (t, _) = fork_full(&a, 5, 5, true, false).unwrap();
        a.kill().unwrap();
        assert_eq!(t.kills(), 1);
        assert_eq!(a.read("cgroup.events").unwrap(), "populated 1\nfrozen 0\n");
        t.link().task_dead();
        assert_eq!(a.read("cgroup.events").unwrap(), "populated 0\nfrozen 0\n");
        t.link().release();
    });
}

/// test_cgkill_forkbomb's race: can_fork, then cgroup.kill, then post_fork: the child
/// was not a member when the kill collected members, so post_fork reports killed.
#[test]
fn fork_racing_with_kill_is_killed_at_post_fork() {
    for_each_profile(|p| {
        let h = Hierarchy::new(p);
        let a = h.root().mkdir("a").unwrap();
        let b = a.mkdir("b").unwrap();
        let sibling = h.root().mkdir("s").unwrap();

        let charge = b.can_fork().unwrap();
        a.kill().unwrap(); // on an ancestor of b
        let t: Arc<dyn CgroupMember> = Arc::new(common::FakeTask {
            tgid: 1,
            tid: 1,
            leader: true,
            die_on_kill: true,
            kills: Default::default(),
            threads_live: Default::default(),
            link: Default::default(),
        });
        let pf = charge.post_fork(Arc::downgrade(&t));
        assert!(pf.killed, "kill_seq moved between can_fork and post_fork");
        assert!(
            pf.link.is_linked(),
            "the child is linked, then SIGKILLed by the caller"
        );
        pf.link.task_dead();
        pf.link.release();

        // A kill elsewhere, or before can_fork, does not mark the fork.
        a.kill().unwrap();
        let charge = b.can_fork().unwrap();
        sibling.kill().unwrap();
        let pf = charge.post_fork(Arc::downgrade(&t));
        assert!(!pf.killed);
        // A later kill reaches the linked child normally.
        let (t2, killed) = fork_full(&b, 2, 2, true, true).unwrap();
        assert!(!killed);
        b.kill().unwrap();
        assert_eq!(t2.kills(), 1);
        pf.link.release();
        t2.link().release();
        assert_eq!(a.pids_current(), 0);
    });
}

#[test]
fn cgroup_kill_values_other_than_one_are_erange() {
    for_each_profile(|p| {
        let a = Hierarchy::new(p).root().mkdir("a").unwrap();
        let t = fork(&a, 3).unwrap();
        for v in ["0", "2", "-1", "0x2"] {
            assert_eq!(a.write("cgroup.kill", v), Err(Errno::ERANGE), "{v:?}");
        }
        assert_eq!(t.kills(), 0);
        for v in ["\n", "yes", "1x"] {
            assert_eq!(a.write("cgroup.kill", v), Err(Errno::EINVAL), "{v:?}");
        }
        assert_eq!(
            a.write("cgroup.kill", ""),
            Ok(()),
            "zero bytes kill nothing"
        );
        assert_eq!(t.kills(), 0);
        assert_eq!(
            a.write("cgroup.kill", "4294967297"),
            Err(Errno::ERANGE),
            "kstrtoint overflow"
        );
        a.write("cgroup.kill", " 1 ").unwrap();
        assert_eq!(t.kills(), 1);
        t.link().release();
    });
}

#[test]
fn kill_of_an_empty_cgroup_succeeds() {
    for_each_profile(|p| {
        let a = Hierarchy::new(p).root().mkdir("a").unwrap();
        a.kill().unwrap();
        assert!(!a.is_populated());
    });
}

#[test]
fn kill_runs_member_callbacks_without_any_cgroup_lock_held() {
    // The fake's kill() calls task_dead (css_set_lock) and reads cgroup files
    // (cgroup_mutex-free, css_set_lock): a deadlock here would hang the test.
    struct Reentrant {
        cg: uproc_cgroup::Cgroup,
        link: std::sync::Mutex<Option<Arc<uproc_cgroup::CssLink>>>,
    }
    impl CgroupMember for Reentrant {
        fn tgid(&self) -> i32 {
            1
        }
        fn is_group_leader(&self) -> bool {
            true
        }
        fn kill(&self) {
            let _ = self.cg.read("cgroup.procs");
            let _ = self.cg.mkdir("during-kill");
            if let Some(l) = self.link.lock().unwrap().clone() {
                l.task_dead();
            }
        }
    }
    for_each_profile(|p| {
        let a = Hierarchy::new(p).root().mkdir("a").unwrap();
        let m = Arc::new(Reentrant {
            cg: a.clone(),
            link: Default::default(),
        });
        let pf = a
            .can_fork()
            .unwrap()
            .post_fork(Arc::downgrade(&(m.clone() as Arc<dyn CgroupMember>)));
        *m.link.lock().unwrap() = Some(pf.link.clone());
        a.kill().unwrap();
        assert!(!pf.link.is_linked());
        assert_eq!(a.children().len(), 1);
        *m.link.lock().unwrap() = None;
    });
}

/// A fork that overlaps a `cgroup.kill` in any way comes out killed (Linux's
/// `CGRP_KILL` check at post_fork, and `kill_seq`): one that links its child while
/// the kill is in flight (after the kill's collection: the member's kill callback
/// forks), and one whose can_fork came during the kill and whose post_fork comes after
/// it ended (the kill killed its parent only after the fork's fatal-signal check). A
/// fork wholly after the kill is not marked.
#[test]
fn a_fork_overlapping_a_kill_is_killed_even_when_it_links_after_the_collection() {
    struct Forker {
        cg: uproc_cgroup::Cgroup,
        /// post_fork's `killed` of the fork made wholly inside the kill.
        inside: std::sync::Mutex<Option<(Arc<common::FakeTask>, bool)>>,
        /// A charge taken inside the kill, post_forked after it.
        pending: std::sync::Mutex<Option<uproc_cgroup::ForkCharge>>,
    }
    impl CgroupMember for Forker {
        fn tgid(&self) -> i32 {
            1
        }
        fn is_group_leader(&self) -> bool {
            true
        }
        fn kill(&self) {
            let linked = common::link_new_task(self.cg.can_fork().unwrap(), 2, 2, true, true);
            *self.inside.lock().unwrap() = Some(linked);
            *self.pending.lock().unwrap() = Some(self.cg.can_fork().unwrap());
        }
    }
    for_each_profile(|p| {
        let h = Hierarchy::new(p);
        let a = h.root().mkdir("a").unwrap();
        let b = a.mkdir("b").unwrap();
        let m = Arc::new(Forker {
            cg: b.clone(),
            inside: Default::default(),
            pending: Default::default(),
        });
        let pf = b
            .can_fork()
            .unwrap()
            .post_fork(Arc::downgrade(&(m.clone() as Arc<dyn CgroupMember>)));
        a.kill().unwrap(); // on an ancestor: b's forks are marked too
        let (inside, killed) = m.inside.lock().unwrap().take().expect("the kill ran");
        assert!(killed, "{p}: linked while the kill was in flight");
        assert!(
            inside.link().is_linked(),
            "linked, then SIGKILLed by its forker"
        );
        let charge = m.pending.lock().unwrap().take().expect("the kill ran");
        let (after, killed) = common::link_new_task(charge, 3, 3, true, true);
        assert!(killed, "{p}: can_fork during the kill, post_fork after it");
        let (later, killed) = common::fork_full(&b, 4, 4, true, true).unwrap();
        assert!(!killed, "{p}: a fork wholly after the kill");
        for t in [&inside, &after, &later] {
            t.exit_and_reap();
        }
        pf.link.task_dead();
        pf.link.release();
        assert_eq!(a.pids_current(), 0, "{p}: every charge given back");
    });
}

/// A member's kill callback that panics unwinds out of `Cgroup::kill`, and the kill
/// still ends: every level's in-flight mark is lowered on the way out, so a fork made
/// wholly after it is not marked killed (a mark left up would kill every later fork
/// of the subtree), and the cgroup can be killed and removed as usual.
#[test]
fn a_kill_whose_member_callback_panics_still_ends() {
    struct Panics;
    impl CgroupMember for Panics {
        fn tgid(&self) -> i32 {
            1
        }
        fn is_group_leader(&self) -> bool {
            true
        }
        fn kill(&self) {
            panic!("deliberate test panic in a kill callback");
        }
    }
    for_each_profile(|p| {
        let h = Hierarchy::new(p);
        let a = h.root().mkdir("a").unwrap();
        let b = a.mkdir("b").unwrap();
        let m: Arc<dyn CgroupMember> = Arc::new(Panics);
        let pf = b.can_fork().unwrap().post_fork(Arc::downgrade(&m));
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| a.kill()));
        assert!(
            unwound.is_err(),
            "{p}: the callback's panic reaches the caller"
        );
        for g in [&a, &b] {
            let (t, killed) = fork_full(g, 7, 7, true, true).unwrap();
            assert!(!killed, "{p}: {g:?}: a fork wholly after the unwound kill");
            t.exit_and_reap();
        }
        pf.link.task_dead();
        pf.link.release();
        a.kill().unwrap();
        b.rmdir().unwrap();
        a.rmdir().unwrap();
        assert_eq!(h.root().children().len(), 0, "{p}");
    });
}
