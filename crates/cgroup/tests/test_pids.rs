//! The pids controller, mirroring tools/testing/selftests/cgroup/test_pids.c:
//! `pids.max` parsing, hierarchical `pids.current`, `pids.peak`, `pids.events` /
//! `pids.events.local` attribution, zombies, migration above the limit, a fork bomb,
//! concurrent charging, and a property test against a reference model.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use common::{FakeTask, Group, Rng, for_each_profile, fork};
use proptest::prelude::*;
use uproc_abi::{Errno, Profile};
use uproc_cgroup::{Cgroup, CgroupMember, Hierarchy, Limit, PID_MAX_LIMIT};

fn cg(p: Profile, name: &str) -> Cgroup {
    Hierarchy::new(p).root().mkdir(name).unwrap()
}

#[test]
fn pids_max_defaults_to_max() {
    for_each_profile(|p| {
        let a = cg(p, "a");
        assert_eq!(a.read("pids.max").unwrap(), "max\n");
        assert_eq!(a.pids_max(), None);
        assert_eq!(a.read("pids.current").unwrap(), "0\n");
        assert_eq!(a.read("pids.peak").unwrap(), "0\n");
        assert_eq!(a.read("pids.events").unwrap(), "max 0\n");
        assert_eq!(a.read("pids.events.local").unwrap(), "max 0\n");
    });
}

#[test]
fn pids_max_accepts_max_and_kstrtoll_base_0_integers() {
    for_each_profile(|p| {
        let a = cg(p, "a");
        for (text, read, typed) in [
            ("10", "10\n", Some(10)),
            ("10\n", "10\n", Some(10)),
            ("  7 \n", "7\n", Some(7)),
            ("0x10", "16\n", Some(16)),
            ("0X1f", "31\n", Some(31)),
            ("010", "8\n", Some(8)),
            ("+3", "3\n", Some(3)),
            ("0", "0\n", Some(0)),
            ("-0", "0\n", Some(0)),
            ("4194304", "4194304\n", Some(PID_MAX_LIMIT)),
            ("max", "max\n", None),
            ("max\n", "max\n", None),
            (" max ", "max\n", None),
            // strstrip uses the kernel's isspace: \v and \f are whitespace too
            ("5\x0b", "5\n", Some(5)),
            ("\x0c\t6\r", "6\n", Some(6)),
            ("\x0bmax\x0b", "max\n", None),
        ] {
            a.write("pids.max", text)
                .unwrap_or_else(|e| panic!("{text:?}: {e}"));
            assert_eq!(a.read("pids.max").unwrap(), read, "{text:?}");
            assert_eq!(a.pids_max(), typed, "{text:?}");
        }
    });
}

#[test]
fn pids_max_negative_or_above_pid_max_limit_is_einval() {
    for_each_profile(|p| {
        let a = cg(p, "a");
        a.write("pids.max", "5").unwrap();
        for bad in ["-1", "-0x10", "4194305", "0x400001", "9223372036854775807"] {
            assert_eq!(a.write("pids.max", bad), Err(Errno::EINVAL), "{bad:?}");
        }
        assert_eq!(
            a.set_pids_max(Limit::Value(PID_MAX_LIMIT + 1)),
            Err(Errno::EINVAL)
        );
        assert_eq!(a.pids_max(), Some(5), "a rejected write changes nothing");
    });
}

#[test]
fn pids_max_garbage_is_einval() {
    for_each_profile(|p| {
        let a = cg(p, "a");
        for bad in [
            "\n", "abc", "1 2", "1.5", "0x", "08", "Max", "maxx", "1k", "--1",
        ] {
            assert_eq!(a.write("pids.max", bad), Err(Errno::EINVAL), "{bad:?}");
        }
        assert_eq!(a.write("pids.max", ""), Ok(()), "zero bytes: no parse");
        assert_eq!(a.read("pids.max").unwrap(), "max\n");
    });
}

#[test]
fn pids_max_beyond_64_bits_is_erange_as_kstrtoll() {
    for_each_profile(|p| {
        let a = cg(p, "a");
        assert_eq!(
            a.write("pids.max", "99999999999999999999"),
            Err(Errno::ERANGE)
        );
        assert_eq!(
            a.write("pids.max", "-9223372036854775809"),
            Err(Errno::ERANGE)
        );
    });
}

#[test]
fn typed_and_text_limits_agree() {
    for_each_profile(|p| {
        let a = cg(p, "a");
        a.set_pids_max(Limit::Value(3)).unwrap();
        assert_eq!(a.read("pids.max").unwrap(), "3\n");
        a.set_pids_max(Limit::Max).unwrap();
        assert_eq!(a.read("pids.max").unwrap(), "max\n");
        assert_eq!("0x20".parse::<Limit>(), Ok(Limit::Value(32)));
        assert_eq!(Limit::Max.to_string(), "max");
        assert_eq!(
            a.hierarchy().root().set_pids_max(Limit::Value(1)),
            Err(Errno::ENOENT)
        );
    });
}

#[test]
fn root_keeps_no_pids_counter() {
    for_each_profile(|p| {
        let h = Hierarchy::new(p);
        let root = h.root();
        let t = fork(&root, 1).unwrap();
        assert_eq!(root.read("pids.current"), Err(Errno::ENOENT));
        assert_eq!(root.pids_current(), 0);
        assert_eq!(root.pids_max(), None);
        assert_eq!(root.pids_peak(), 0);
        t.exit_and_reap();
    });
}

#[test]
fn pids_current_is_hierarchical() {
    for_each_profile(|p| {
        let a = cg(p, "a");
        let b = a.mkdir("b").unwrap();
        let c = b.mkdir("c").unwrap();
        let t1 = fork(&c, 1).unwrap();
        let t2 = fork(&b, 2).unwrap();
        assert_eq!(
            (a.pids_current(), b.pids_current(), c.pids_current()),
            (2, 2, 1)
        );
        assert_eq!(a.read("pids.current").unwrap(), "2\n");
        t1.exit_and_reap();
        t2.exit_and_reap();
        assert_eq!(
            (a.pids_current(), b.pids_current(), c.pids_current()),
            (0, 0, 0)
        );
    });
}

#[test]
fn pids_max_two_with_two_members_rejects_the_third_fork_with_eagain() {
    for_each_profile(|p| {
        let a = cg(p, "a");
        a.write("pids.max", "2").unwrap();
        let t1 = fork(&a, 1).unwrap();
        let t2 = fork(&a, 2).unwrap();
        assert_eq!(
            a.can_fork().err(),
            Some(Errno::EAGAIN),
            "Linux: fork() fails with EAGAIN"
        );
        assert_eq!(
            a.read("pids.current").unwrap(),
            "2\n",
            "the rejected charge was reverted"
        );
        assert_eq!(a.read("pids.events").unwrap(), "max 1\n");
        assert_eq!(a.read("pids.events.local").unwrap(), "max 1\n");
        assert_eq!(a.pids_forkfail(), 1);
        t1.exit_and_reap();
        let t3 = fork(&a, 3).expect("room again after a reap");
        t2.exit_and_reap();
        t3.exit_and_reap();
    });
}

#[test]
fn pids_max_zero_forbids_every_fork_in_the_subtree() {
    for_each_profile(|p| {
        let a = cg(p, "a");
        let b = a.mkdir("b").unwrap();
        a.write("pids.max", "0").unwrap();
        assert_eq!(b.can_fork().err(), Some(Errno::EAGAIN));
        assert_eq!(a.can_fork().err(), Some(Errno::EAGAIN));
        assert_eq!((a.pids_current(), b.pids_current()), (0, 0));
    });
}

/// Forking cgroup F = /a/b/c, first over-limit level L = /a/b: events_local[MAX] of
/// L, events[MAX] of L and its ancestors (a), nothing in c's MAX counters.
#[test]
fn rejected_fork_is_attributed_to_the_over_limit_cgroup_and_its_ancestors() {
    for_each_profile(|p| {
        let a = cg(p, "a");
        let b = a.mkdir("b").unwrap();
        let c = b.mkdir("c").unwrap();
        b.write("pids.max", "2").unwrap();
        let _t1 = fork(&c, 1).unwrap();
        let _t2 = fork(&b, 2).unwrap();
        assert_eq!(c.can_fork().err(), Some(Errno::EAGAIN));
        assert_eq!(c.can_fork().err(), Some(Errno::EAGAIN));
        let show = |g: &Cgroup| {
            (
                g.read("pids.events").unwrap(),
                g.read("pids.events.local").unwrap(),
            )
        };
        assert_eq!(
            show(&c),
            ("max 0\n".into(), "max 0\n".into()),
            "c was not over its limit"
        );
        assert_eq!(show(&b), ("max 2\n".into(), "max 2\n".into()), "b is L");
        assert_eq!(
            show(&a),
            ("max 2\n".into(), "max 0\n".into()),
            "a is L's ancestor"
        );
        assert_eq!(
            (c.pids_forkfail(), b.pids_forkfail()),
            (2, 0),
            "FORKFAIL is F's"
        );
        // Now a itself is the over-limit level, for a fork from c.
        a.write("pids.max", "2").unwrap();
        b.write("pids.max", "max").unwrap();
        assert_eq!(c.can_fork().err(), Some(Errno::EAGAIN));
        assert_eq!(show(&b), ("max 2\n".into(), "max 2\n".into()));
        assert_eq!(show(&a), ("max 3\n".into(), "max 1\n".into()));
        assert_eq!(
            (a.pids_current(), b.pids_current(), c.pids_current()),
            (2, 2, 1)
        );
    });
}

#[test]
fn zombies_count_until_release_and_release_is_idempotent() {
    for_each_profile(|p| {
        let a = cg(p, "a");
        a.write("pids.max", "1").unwrap();
        let t = fork(&a, 1).unwrap();
        t.link().task_dead();
        assert_eq!(a.pids_current(), 1, "a zombie still counts");
        assert_eq!(a.can_fork().err(), Some(Errno::EAGAIN));
        t.link().release();
        t.link().release();
        assert_eq!(a.pids_current(), 0);
        assert!(!t.link().is_charged());
    });
}

#[test]
fn cancel_and_drop_of_a_fork_charge_uncharge() {
    for_each_profile(|p| {
        let a = cg(p, "a");
        let b = a.mkdir("b").unwrap();
        let c1 = b.can_fork().unwrap();
        assert_eq!(c1.cgroup(), &b);
        let c2 = b.can_fork().unwrap();
        assert_eq!((a.pids_current(), b.pids_current()), (2, 2));
        c1.cancel();
        drop(c2);
        assert_eq!((a.pids_current(), b.pids_current()), (0, 0));
        assert_eq!(b.pids_peak(), 2);
    });
}

#[test]
fn pids_peak_never_decreases() {
    for_each_profile(|p| {
        let a = cg(p, "a");
        let ts: Vec<_> = (0..3).map(|i| fork(&a, i).unwrap()).collect();
        assert_eq!(a.read("pids.peak").unwrap(), "3\n");
        for t in &ts {
            t.exit_and_reap();
        }
        assert_eq!(a.pids_peak(), 3);
        a.write("pids.max", "1").unwrap();
        assert_eq!(a.pids_peak(), 3);
    });
}

#[test]
fn migration_charges_destination_above_its_max() {
    for_each_profile(|p| {
        let h = Hierarchy::new(p);
        let src = h.root().mkdir("src").unwrap();
        let dst = h.root().mkdir("dst").unwrap();
        dst.write("pids.max", "1").unwrap();
        let _resident = fork(&dst, 1).unwrap();
        let group = Group(vec![fork(&src, 2).unwrap(), fork(&src, 3).unwrap()]);
        dst.attach(&group)
            .expect("migration never fails on pids.max");
        assert_eq!(
            dst.read("pids.current").unwrap(),
            "3\n",
            "current above max"
        );
        assert_eq!(dst.pids_max(), Some(1));
        assert_eq!(dst.pids_peak(), 3, "peak follows the migration charge");
        assert_eq!(src.pids_current(), 0);
        assert_eq!(dst.can_fork().err(), Some(Errno::EAGAIN));
        for t in &group.0 {
            t.exit_and_reap();
        }
        assert_eq!(
            dst.pids_current(),
            1,
            "release uncharges the current (new) cgroup"
        );
    });
}

/// A migration charges the destination's every level, then uncharges the source's
/// (`pids_can_attach`): a common ancestor's current is back where it was, but its peak
/// saw the +1 (Linux 6.18: moving one task from `a/b` to `a/c` raises `a`'s
/// `pids.peak` from 1 to 2; `b`'s and `c`'s stay 1).
#[test]
fn migration_within_a_subtree_raises_the_common_ancestor_s_peak() {
    for_each_profile(|p| {
        let a = cg(p, "a");
        let b = a.mkdir("b").unwrap();
        let c = a.mkdir("c").unwrap();
        let t = fork(&b, 1).unwrap();
        assert_eq!(a.pids_peak(), 1);
        c.attach(&t.link()).unwrap();
        assert_eq!(
            (a.pids_current(), b.pids_current(), c.pids_current()),
            (1, 0, 1)
        );
        assert_eq!(
            (a.pids_peak(), b.pids_peak(), c.pids_peak()),
            (2, 1, 1),
            "{p}: a saw the +1 before the -1"
        );
        assert!(a.is_populated() && c.is_populated() && !b.is_populated());
        a.attach(&t.link()).unwrap();
        assert_eq!((a.pids_current(), c.pids_current()), (1, 0));
        assert_eq!(
            a.pids_peak(),
            2,
            "{p}: into the ancestor itself: 1 + 1 again"
        );
        t.exit_and_reap();
        assert_eq!(a.pids_current(), 0);
    });
}

#[test]
fn fork_into_removed_cgroup_is_enoent() {
    for_each_profile(|p| {
        let a = cg(p, "a");
        a.rmdir().unwrap();
        assert_eq!(a.can_fork().err(), Some(Errno::ENOENT));
    });
}

/// 10,000 fork attempts under pids.max = 50; random subsets exit, get reaped, or fail
/// after can_fork. pids.current never exceeds 50 and everything drains to 0.
#[test]
fn fork_bomb_never_exceeds_pids_max_and_drains_to_zero() {
    for_each_profile(|p| {
        let a = cg(p, "a");
        let b = a.mkdir("b").unwrap();
        let c = b.mkdir("c").unwrap();
        b.write("pids.max", "50").unwrap();
        let targets = [b.clone(), c.clone()];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut live: Vec<Arc<FakeTask>> = Vec::new();
        let mut zombies: Vec<Arc<FakeTask>> = Vec::new();
        let (mut ok, mut rejected) = (0u64, 0u64);
        for i in 0..10_000 {
            let target = &targets[rng.below(2) as usize];
            match target.can_fork() {
                Ok(charge) => {
                    if rng.below(8) == 0 {
                        charge.cancel(); // the fork failed later (bad_fork_cancel_cgroup)
                    } else {
                        let t = Arc::new(FakeTask {
                            tgid: i,
                            tid: i,
                            leader: true,
                            die_on_kill: true,
                            kills: Default::default(),
                            threads_live: Default::default(),
                            link: Default::default(),
                        });
                        let pf =
                            charge.post_fork(Arc::downgrade(&(t.clone() as Arc<dyn CgroupMember>)));
                        assert!(!pf.killed);
                        *t.link.lock().unwrap() = Some(pf.link);
                        live.push(t);
                    }
                    ok += 1;
                }
                Err(e) => {
                    assert_eq!(e, Errno::EAGAIN);
                    rejected += 1;
                }
            }
            assert!(
                b.pids_current() <= 50,
                "pids.current {} > pids.max 50",
                b.pids_current()
            );
            if !live.is_empty() && rng.below(3) == 0 {
                let t = live.swap_remove(rng.below(live.len() as u64) as usize);
                t.link().task_dead();
                zombies.push(t);
            }
            if !zombies.is_empty() && rng.below(3) == 0 {
                let t = zombies.swap_remove(rng.below(zombies.len() as u64) as usize);
                t.link().release();
            }
            let charged = (live.len() + zombies.len()) as u64;
            assert_eq!(b.pids_current(), charged, "current = live + zombies");
            assert_eq!(a.pids_current(), charged);
        }
        assert!(
            rejected > 0 && ok > 50,
            "the bomb hit the limit ({ok} ok, {rejected} rejected)"
        );
        assert_eq!(b.pids_events(), rejected);
        assert_eq!(b.pids_events_local(), rejected);
        assert_eq!(a.pids_events(), rejected);
        assert_eq!(c.pids_events(), 0);
        assert_eq!(b.pids_forkfail() + c.pids_forkfail(), rejected);
        assert!(b.pids_peak() <= 50);
        for t in live.drain(..).chain(zombies.drain(..)) {
            t.exit_and_reap();
        }
        for g in [&a, &b, &c] {
            assert_eq!(g.pids_current(), 0, "{g:?} drained");
            assert!(!g.is_populated());
        }
        c.rmdir().unwrap();
        b.rmdir().unwrap();
    });
}

/// 4 threads fork/exit/reap concurrently in two sibling cgroups under a shared
/// parent limit while a fifth thread samples: no sample of any level is above that
/// level's max, and everything balances to 0.
#[test]
fn concurrent_charge_uncharge_never_exceeds_max_and_balances() {
    for_each_profile(|p| {
        let a = cg(p, "a");
        let x = a.mkdir("x").unwrap();
        let y = a.mkdir("y").unwrap();
        a.write("pids.max", "5").unwrap();
        x.write("pids.max", "3").unwrap();
        y.write("pids.max", "3").unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(AtomicU64::new(0));
        let sampler = {
            let (a, x, y, stop, samples) = (
                a.clone(),
                x.clone(),
                y.clone(),
                stop.clone(),
                samples.clone(),
            );
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    assert!(a.pids_current() <= 5, "a: {} > 5", a.pids_current());
                    assert!(x.pids_current() <= 3, "x: {} > 3", x.pids_current());
                    assert!(y.pids_current() <= 3, "y: {} > 3", y.pids_current());
                    samples.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        let all_rejected = Arc::new(AtomicU64::new(0));
        let workers: Vec<_> = (0..4)
            .map(|w| {
                let target = if w % 2 == 0 { x.clone() } else { y.clone() };
                let (samples, all_rejected) = (samples.clone(), all_rejected.clone());
                std::thread::spawn(move || {
                    // Race the sampler, not a sampler not yet scheduled (a loaded host).
                    while samples.load(Ordering::Relaxed) == 0 {
                        std::thread::yield_now();
                    }
                    let mut rng = Rng(w as u64 + 1);
                    let mut held = Vec::new();
                    let mut rejected = 0u64;
                    // 20,000 rounds, and on until some worker met a limit (the workers
                    // overlapped), for ten seconds at most.
                    let since = std::time::Instant::now();
                    let mut i = 0;
                    while i < 20_000
                        || (all_rejected.load(Ordering::Relaxed) == 0
                            && since.elapsed() < std::time::Duration::from_secs(10))
                    {
                        i += 1;
                        match target.can_fork() {
                            Ok(charge) if rng.below(4) == 0 => charge.cancel(),
                            Ok(charge) => {
                                let t = Arc::new(FakeTask {
                                    tgid: i,
                                    tid: i,
                                    leader: true,
                                    die_on_kill: false,
                                    kills: Default::default(),
                                    threads_live: Default::default(),
                                    link: Default::default(),
                                });
                                let weak = Arc::downgrade(&(t.clone() as Arc<dyn CgroupMember>));
                                held.push((t, charge.post_fork(weak).link));
                            }
                            Err(e) => {
                                assert_eq!(e, Errno::EAGAIN);
                                rejected += 1;
                                all_rejected.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        if held.len() > 2 || (!held.is_empty() && rng.below(2) == 0) {
                            let (_t, link) = held.swap_remove(0);
                            link.task_dead();
                            link.release();
                        }
                    }
                    for (_t, link) in held {
                        link.task_dead();
                        link.release();
                    }
                    rejected
                })
            })
            .collect();
        let rejected: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
        stop.store(true, Ordering::Relaxed);
        sampler.join().unwrap();
        assert!(samples.load(Ordering::Relaxed) > 0);
        assert!(rejected > 0, "the workers contended for the limits");
        assert_eq!(
            (a.pids_current(), x.pids_current(), y.pids_current()),
            (0, 0, 0)
        );
        assert!(a.pids_peak() <= 5 && x.pids_peak() <= 3 && y.pids_peak() <= 3);
        assert_eq!(
            a.pids_events_local() + x.pids_events_local() + y.pids_events_local(),
            rejected,
            "each rejection has exactly one over-limit cgroup"
        );
        assert_eq!(x.pids_forkfail() + y.pids_forkfail(), rejected);
        assert_eq!(
            a.pids_events(),
            rejected,
            "every rejection is at a or below it"
        );
        assert!(!a.is_populated());
    });
}

// ---- property test against a reference model -------------------------------------

#[derive(Clone, Debug)]
enum Op {
    Mkdir(usize),
    Fork(usize),
    Exit(usize),
    Reap(usize),
    SetMax(usize, Option<u8>),
    Migrate(usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => (0..8usize).prop_map(Op::Mkdir),
        4 => (0..8usize).prop_map(Op::Fork),
        1 => (0..16usize).prop_map(Op::Exit),
        2 => (0..16usize).prop_map(Op::Reap),
        1 => (0..8usize, proptest::option::of(0..4u8)).prop_map(|(c, m)| Op::SetMax(c, m)),
        1 => (0..16usize, 0..8usize).prop_map(|(t, c)| Op::Migrate(t, c)),
    ]
}

struct Model {
    cgroups: Vec<Cgroup>,
    parent: Vec<Option<usize>>,
    max: Vec<Option<u64>>,
    /// (task, cgroup index, linked) for charged tasks.
    tasks: Vec<(Arc<FakeTask>, usize, bool)>,
}

impl Model {
    fn in_subtree(&self, mut c: usize, of: usize) -> bool {
        loop {
            if c == of {
                return true;
            }
            match self.parent[c] {
                Some(p) => c = p,
                None => return false,
            }
        }
    }
    fn charged_in(&self, of: usize) -> u64 {
        self.tasks
            .iter()
            .filter(|(_, c, _)| self.in_subtree(*c, of))
            .count() as u64
    }
    fn fork_allowed(&self, c: usize) -> bool {
        let mut cur = Some(c);
        while let Some(i) = cur {
            if self.parent[i].is_some() {
                if let Some(m) = self.max[i] {
                    if self.charged_in(i) + 1 > m {
                        return false;
                    }
                }
            }
            cur = self.parent[i];
        }
        true
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn pids_current_equals_live_charges_in_subtree(ops in proptest::collection::vec(op(), 1..60)) {
        for &profile in Profile::ALL {
            let h = Hierarchy::new(profile);
            let mut m = Model { cgroups: vec![h.root()], parent: vec![None], max: vec![None], tasks: vec![] };
            let mut next_tgid = 1;
            for op in ops.clone() {
                match op {
                    Op::Mkdir(p) => {
                        let p = p % m.cgroups.len();
                        let name = format!("c{}", m.cgroups.len());
                        m.cgroups.push(m.cgroups[p].mkdir(&name).unwrap());
                        m.parent.push(Some(p));
                        m.max.push(None);
                    }
                    Op::Fork(c) => {
                        let c = c % m.cgroups.len();
                        let allowed = m.fork_allowed(c);
                        match fork(&m.cgroups[c], next_tgid) {
                            Ok(t) => { prop_assert!(allowed); m.tasks.push((t, c, true)); }
                            Err(e) => { prop_assert!(!allowed); prop_assert_eq!(e, Errno::EAGAIN); }
                        }
                        next_tgid += 1;
                    }
                    Op::Exit(t) if !m.tasks.is_empty() => {
                        let t = t % m.tasks.len();
                        m.tasks[t].0.link().task_dead();
                        m.tasks[t].2 = false;
                    }
                    Op::Reap(t) if !m.tasks.is_empty() => {
                        let t = t % m.tasks.len();
                        let (task, _, _) = m.tasks.swap_remove(t);
                        task.exit_and_reap();
                    }
                    Op::SetMax(c, max) => {
                        let c = c % m.cgroups.len();
                        let r = m.cgroups[c].set_pids_max(max.map_or(Limit::Max, |v| Limit::Value(v.into())));
                        if c == 0 { prop_assert_eq!(r, Err(Errno::ENOENT)); } else { r.unwrap(); m.max[c] = max.map(u64::from); }
                    }
                    Op::Migrate(t, c) if !m.tasks.is_empty() => {
                        let t = t % m.tasks.len();
                        let c = c % m.cgroups.len();
                        m.cgroups[c].attach(&m.tasks[t].0.link()).unwrap();
                        if m.tasks[t].2 { m.tasks[t].1 = c; }
                    }
                    _ => {}
                }
                for (i, g) in m.cgroups.iter().enumerate().skip(1) {
                    prop_assert_eq!(g.pids_current(), m.charged_in(i), "{:?}", g);
                    let linked = m.tasks.iter().any(|(_, c, l)| *l && m.in_subtree(*c, i));
                    prop_assert_eq!(g.is_populated(), linked, "{:?}", g);
                }
            }
            for (t, _, _) in m.tasks.drain(..) { t.exit_and_reap(); }
            for g in &m.cgroups { prop_assert_eq!(g.pids_current(), 0); prop_assert!(!g.is_populated()); }
        }
    }
}
