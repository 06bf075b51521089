//! The cgroup core rules, mirroring tools/testing/selftests/cgroup/test_core.c: the
//! tree (mkdir, rmdir, ids, paths), the control files' errors, `cgroup.events`,
//! `cgroup.procs` / `cgroup.threads`, migration, `css_set_lock` counts, and freeing.

mod common;

use std::collections::HashSet;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Weak};

use common::{
    FakeTask, Group, InlineTask, Resolver, for_each_profile, fork, fork_child, fork_thread,
};
use uproc_abi::{Errno, Profile};
use uproc_cgroup::{Cgroup, Hierarchy, TaskResolver};

fn hier(p: Profile) -> Arc<Hierarchy> {
    Hierarchy::new(p)
}

/// What mkdir(2) gives for these names in cgroupfs (checked on Linux 6.18): the VFS
/// path walk decides before `cgroup_mkdir` runs.
#[test]
fn mkdir_bad_names_get_the_vfs_errors() {
    for_each_profile(|p| {
        let root = hier(p).root();
        for (bad, errno) in [
            ("", Errno::ENOENT),
            (".", Errno::EEXIST),
            ("..", Errno::EEXIST),
            ("/", Errno::EEXIST),
            ("//", Errno::EEXIST),
            ("nox/y", Errno::ENOENT),
            ("a\0b", Errno::EINVAL),
        ] {
            assert_eq!(root.mkdir(bad), Err(errno), "{p}: mkdir({bad:?})");
        }
        // No NAME_MAX in kernfs (Linux 6.18 made a 4,095-byte cgroup name).
        assert!(root.mkdir(&"x".repeat(255)).is_ok());
        assert!(root.mkdir(&"x".repeat(256)).is_ok());
        assert_eq!(
            root.mkdir(&"x".repeat(4095)).map(|c| c.path().len()),
            Ok(4096)
        );
        assert!(root.mkdir("...").is_ok(), "only . and .. are special");
        assert_eq!(
            root.children().len(),
            4,
            "{p}: a refused mkdir creates nothing"
        );
    });
}

/// A path: relative through existing cgroups, absolute from the hierarchy's root, with
/// `.`, `..` and repeated or trailing slashes resolved as the VFS does.
#[test]
fn mkdir_takes_a_path_resolved_as_the_vfs_does() {
    for_each_profile(|p| {
        let root = hier(p).root();
        let a = root.mkdir("a").unwrap();
        let b = root.mkdir("a/b").unwrap();
        assert_eq!((b.path(), b.parent()), ("/a/b".to_owned(), Some(a.clone())));
        assert_eq!(a.mkdir("./b//c/").unwrap().path(), "/a/b/c");
        assert_eq!(b.mkdir("../d").unwrap().path(), "/a/d");
        assert_eq!(
            b.mkdir("/e").unwrap().path(),
            "/e",
            "absolute: from the root"
        );
        assert_eq!(
            root.mkdir("../f").unwrap().path(),
            "/f",
            "the root's .. is itself"
        );
        assert_eq!(root.mkdir("a/b"), Err(Errno::EEXIST));
        assert_eq!(root.mkdir("a/b/.."), Err(Errno::EEXIST));
        assert_eq!(root.mkdir("a/x/y"), Err(Errno::ENOENT));
        assert_eq!(root.mkdir("a/pids.max/y"), Err(Errno::ENOTDIR));
        assert_eq!(root.mkdir("a/pids.max"), Err(Errno::EEXIST));
        assert_eq!(root.mkdir("a/new\nline"), Err(Errno::EINVAL));
        assert_eq!(
            root.mkdir(&format!("a/{}/y", "z".repeat(300))),
            Err(Errno::ENOENT),
            "a long name on the way is looked up like any"
        );
        let long = "a/".repeat(2048);
        assert_eq!(root.mkdir(&long), Err(Errno::ENAMETOOLONG), "PATH_MAX");
        b.rmdir().unwrap_err();
        assert_eq!(b.mkdir("g").unwrap().path(), "/a/b/g");
        a.rmdir().unwrap_err();
    });
}

#[test]
fn mkdir_name_with_a_newline_is_einval() {
    for &p in Profile::ALL {
        let root = Hierarchy::new(p).root();
        for bad in ["a\nb", "\n", "trailing\n", "\nleading"] {
            assert_eq!(
                root.mkdir(bad),
                Err(Errno::EINVAL),
                "{p}: cgroup_mkdir refuses {bad:?}: a newline would break /proc/PID/cgroup"
            );
        }
        assert!(
            root.children().is_empty(),
            "{p}: a refused mkdir creates nothing"
        );
        assert!(
            root.mkdir("a\tb").is_ok(),
            "{p}: other control characters are allowed"
        );
    }
}

#[test]
fn mkdir_existing_name_is_eexist() {
    for_each_profile(|p| {
        let root = hier(p).root();
        let a = root.mkdir("a").unwrap();
        assert_eq!(root.mkdir("a"), Err(Errno::EEXIST));
        assert_eq!(
            a.mkdir("pids.max"),
            Err(Errno::EEXIST),
            "a control file has that name"
        );
        assert_eq!(root.mkdir("cgroup.procs"), Err(Errno::EEXIST));
        assert!(
            root.mkdir("pids.max").is_ok(),
            "the root has no pids.max file"
        );
        // cgroupfs files uproc does not model take their names too (ENOENT to read).
        for name in [
            "cgroup.controllers",
            "cgroup.stat",
            "cpu.stat",
            "memory.pressure",
        ] {
            assert_eq!(root.mkdir(name), Err(Errno::EEXIST), "{name} on the root");
            assert_eq!(a.mkdir(name), Err(Errno::EEXIST), "{name}");
            assert_eq!(a.read(name), Err(Errno::ENOENT), "{name} is not modelled");
        }
        assert_eq!(a.mkdir("cgroup.freeze"), Err(Errno::EEXIST));
        assert!(
            root.mkdir("cgroup.freeze").is_ok(),
            "cgroup.freeze is not on the root"
        );
        assert_eq!(
            root.children().len(),
            3,
            "a, pids.max, cgroup.freeze: no other"
        );
    });
}

#[test]
fn mkdir_in_removed_cgroup_is_enoent() {
    for_each_profile(|p| {
        let a = hier(p).root().mkdir("a").unwrap();
        a.rmdir().unwrap();
        assert_eq!(a.mkdir("b"), Err(Errno::ENOENT));
        assert_eq!(
            a.mkdir("../b"),
            Err(Errno::ENOENT),
            "nothing is found from there"
        );
        let b = a
            .mkdir("/b")
            .expect("an absolute path does not start there");
        assert_eq!(b.path(), "/b");
    });
}

#[test]
fn rmdir_root_is_ebusy() {
    for_each_profile(|p| {
        assert_eq!(hier(p).root().rmdir(), Err(Errno::EBUSY));
    });
}

#[test]
fn rmdir_with_children_is_ebusy() {
    for_each_profile(|p| {
        let a = hier(p).root().mkdir("a").unwrap();
        let b = a.mkdir("b").unwrap();
        assert_eq!(a.rmdir(), Err(Errno::EBUSY));
        b.rmdir().unwrap();
        a.rmdir().unwrap();
        assert_eq!(a.rmdir(), Err(Errno::ENOENT), "already removed");
    });
}

#[test]
fn rmdir_with_live_member_is_ebusy_but_zombies_do_not_count() {
    for_each_profile(|p| {
        let a = hier(p).root().mkdir("a").unwrap();
        let t = fork(&a, 10).unwrap();
        assert_eq!(a.rmdir(), Err(Errno::EBUSY), "populated cgroup");
        t.link().task_dead();
        assert_eq!(a.pids_current(), 1, "the zombie is still charged");
        a.rmdir()
            .expect("a zombie does not keep a cgroup populated");
        assert!(a.is_removed());
        assert_eq!(
            a.read("pids.current"),
            Err(Errno::ENOENT),
            "directory is gone"
        );
        t.link().release();
        assert_eq!(a.pids_current(), 0, "reap drains the removed cgroup");
    });
}

#[test]
fn rmdir_during_fork_is_ebusy() {
    for_each_profile(|p| {
        let a = hier(p).root().mkdir("a").unwrap();
        let charge = a.can_fork().unwrap();
        assert_eq!(
            a.rmdir(),
            Err(Errno::EBUSY),
            "a fork is between can_fork and post_fork"
        );
        charge.cancel();
        a.rmdir().unwrap();
        assert_eq!(
            a.can_fork().err(),
            Some(Errno::ENOENT),
            "fork into a removed cgroup"
        );
    });
}

#[test]
fn paths_ids_names_parents_children() {
    for_each_profile(|p| {
        let h = hier(p);
        let root = h.root();
        assert_eq!(
            (root.path(), root.id(), root.name()),
            ("/".into(), 1, "".into())
        );
        assert_eq!(root.parent(), None);
        let jobs = root.mkdir("jobs").unwrap();
        let b = jobs.mkdir("b").unwrap();
        let a = jobs.mkdir("a").unwrap();
        assert_eq!(a.path(), "/jobs/a");
        assert_eq!(a.name(), "a");
        assert_eq!(a.parent(), Some(jobs.clone()));
        assert_eq!(
            jobs.children(),
            vec![a.clone(), b.clone()],
            "sorted by name"
        );
        assert_eq!(h.find_by_id(a.id()), Some(a.clone()));
        assert_eq!(h.find_by_id(1), Some(root.clone()));
        let ids: HashSet<u64> = [root.id(), jobs.id(), a.id(), b.id()].into();
        assert_eq!(ids.len(), 4);
        let old = a.id();
        a.rmdir().unwrap();
        assert_eq!(h.find_by_id(old), None);
        assert_eq!(jobs.children(), vec![b.clone()]);
        let again = jobs.mkdir("a").unwrap();
        assert!(again.id() > old, "ids are never reused");
        assert_ne!(again, a, "identity, not name");
        assert_eq!(format!("{again:?}"), "Cgroup(\"/jobs/a\")");
        assert!(Arc::ptr_eq(&a.hierarchy(), &h));
        assert_eq!(h.profile(), p);
    });
}

#[test]
fn unknown_file_is_enoent() {
    for_each_profile(|p| {
        let a = hier(p).root().mkdir("a").unwrap();
        assert_eq!(a.read("nope"), Err(Errno::ENOENT));
        assert_eq!(a.write("nope", "1"), Err(Errno::ENOENT));
        assert_eq!(a.read("memory.max"), Err(Errno::ENOENT));
    });
}

#[test]
fn root_has_no_pids_events_kill_or_type_files() {
    for_each_profile(|p| {
        let root = hier(p).root();
        for f in [
            "pids.max",
            "pids.current",
            "pids.peak",
            "pids.events",
            "pids.events.local",
            "cgroup.events",
            "cgroup.kill",
            "cgroup.type",
        ] {
            assert_eq!(root.read(f), Err(Errno::ENOENT), "{f} is not on the root");
        }
        assert_eq!(root.write("pids.max", "5"), Err(Errno::ENOENT));
        assert_eq!(root.kill(), Err(Errno::ENOENT));
        assert_eq!(root.read("cgroup.procs").unwrap(), "");
    });
}

/// As root (uproc's caller), opening a file the wrong way succeeds and the operation
/// fails with EINVAL (Linux 6.18: `cgroup_file_write` / `cgroup_seqfile_show` have no
/// handler); a write of nothing succeeds on any file and changes nothing.
#[test]
fn the_wrong_direction_is_einval_and_an_empty_write_is_a_no_op() {
    for_each_profile(|p| {
        let a = hier(p).root().mkdir("a").unwrap();
        for f in [
            "pids.current",
            "pids.peak",
            "pids.events",
            "pids.events.local",
            "cgroup.events",
        ] {
            assert_eq!(a.write(f, "1"), Err(Errno::EINVAL), "{p}: {f} is read-only");
            assert_eq!(a.write(f, ""), Ok(()), "{p}: {f}: zero bytes");
        }
        assert_eq!(a.read("cgroup.kill"), Err(Errno::EINVAL), "{p}: write-only");
        a.write("pids.max", "3").unwrap();
        for f in [
            "cgroup.kill",
            "cgroup.procs",
            "cgroup.threads",
            "cgroup.type",
            "pids.max",
        ] {
            assert_eq!(a.write(f, ""), Ok(()), "{p}: {f}: zero bytes");
            assert_eq!(a.write(f, " "), Err(Errno::EINVAL), "{p}: {f}: one space");
        }
        assert_eq!(a.read("pids.max").unwrap(), "3\n", "{p}: nothing changed");
        assert_eq!(
            a.write("nope", ""),
            Err(Errno::ENOENT),
            "{p}: still no such file"
        );
        a.rmdir().unwrap();
        assert_eq!(a.write("pids.max", ""), Err(Errno::ENOENT), "{p}: removed");
    });
}

/// A write longer than a page is E2BIG on every file, before its handler reads it
/// (`kernfs_fop_write_iter` against the files' `atomic_write_len`): a padded limit
/// is not set, a padded kill kills nothing. A page exactly still reaches the handler.
/// (Both were taken: the limit set to 5, the subtree killed.)
#[test]
fn a_write_longer_than_a_page_is_e2big() {
    for_each_profile(|p| {
        let a = hier(p).root().mkdir("a").unwrap();
        let padded = |v: &str, pad: usize| format!("{}{v}", " ".repeat(pad));
        for f in ["pids.max", "cgroup.kill", "cgroup.procs", "pids.current"] {
            assert_eq!(
                a.write(f, &padded("5", 4096)),
                Err(Errno::E2BIG),
                "{p}: {f}: 4097 bytes"
            );
        }
        assert_eq!(a.read("pids.max").unwrap(), "max\n", "{p}: nothing set");
        a.write("pids.max", &padded("5", 4095)).unwrap();
        assert_eq!(a.read("pids.max").unwrap(), "5\n", "{p}: a page is taken");
    });
}

/// The handlers read the written page as a C string: a NUL ends the value (measured
/// on Linux 6.18: `"5\0x"` to `pids.max` sets 5, `"max\0"` sets max, `"1\0junk"` to
/// `cgroup.kill` kills, `"2\0"` is ERANGE and `"\0"` alone EINVAL).
#[test]
fn a_nul_ends_a_written_value() {
    for_each_profile(|p| {
        let a = hier(p).root().mkdir("a").unwrap();
        a.write("pids.max", "5\0x").unwrap();
        assert_eq!(a.read("pids.max").unwrap(), "5\n", "{p}");
        a.write("pids.max", "max\0").unwrap();
        assert_eq!(a.read("pids.max").unwrap(), "max\n", "{p}");
        assert_eq!(a.write("pids.max", "\0"), Err(Errno::EINVAL), "{p}");
        assert_eq!(a.write("cgroup.kill", "2\0"), Err(Errno::ERANGE), "{p}");
        assert_eq!(a.write("cgroup.kill", "\0"), Err(Errno::EINVAL), "{p}");
        a.write("cgroup.kill", "1\0junk").unwrap();
        assert_eq!(a.write("cgroup.procs", "\0 1"), Err(Errno::EINVAL), "{p}");
    });
}

#[test]
fn cgroup_type_reads_domain() {
    for_each_profile(|p| {
        let a = hier(p).root().mkdir("a").unwrap();
        assert_eq!(a.read("cgroup.type").unwrap(), "domain\n");
        assert_eq!(a.write("cgroup.type", "threaded\n"), Err(Errno::EOPNOTSUPP));
        assert_eq!(a.write("cgroup.type", "bogus"), Err(Errno::EINVAL));
    });
}

#[test]
fn removed_cgroup_files_are_enoent() {
    for_each_profile(|p| {
        let a = hier(p).root().mkdir("a").unwrap();
        a.rmdir().unwrap();
        assert_eq!(a.read("pids.max"), Err(Errno::ENOENT));
        assert_eq!(a.write("pids.max", "3"), Err(Errno::ENOENT));
        assert_eq!(a.read("cgroup.events"), Err(Errno::ENOENT));
        assert_eq!(a.kill(), Err(Errno::ENOENT));
    });
}

#[test]
fn cgroup_events_follow_populated_through_the_subtree() {
    for_each_profile(|p| {
        let a = hier(p).root().mkdir("a").unwrap();
        let b = a.mkdir("b").unwrap();
        assert_eq!(a.read("cgroup.events").unwrap(), "populated 0\nfrozen 0\n");
        let t = fork(&b, 7).unwrap();
        assert_eq!(a.read("cgroup.events").unwrap(), "populated 1\nfrozen 0\n");
        assert_eq!(b.read("cgroup.events").unwrap(), "populated 1\nfrozen 0\n");
        assert!(a.hierarchy().root().is_populated());
        t.link().task_dead();
        assert_eq!(a.read("cgroup.events").unwrap(), "populated 0\nfrozen 0\n");
        assert_eq!(b.read("cgroup.events").unwrap(), "populated 0\nfrozen 0\n");
        assert!(!a.hierarchy().root().is_populated());
        t.link().release();
    });
}

#[test]
fn cgroup_procs_lists_leaders_and_threads_lists_every_member() {
    for_each_profile(|p| {
        let a = hier(p).root().mkdir("a").unwrap();
        let p1 = fork(&a, 100).unwrap();
        let t1 = fork_thread(&a, 100, 101).unwrap();
        let p2 = fork(&a, 200).unwrap();
        assert_eq!(a.read("cgroup.procs").unwrap(), "100\n200\n");
        assert_eq!(a.read("cgroup.threads").unwrap(), "100\n101\n200\n");
        // The leader of 100 dies while its thread lives: the group is still listed
        // once (after the live leaders, as the dying list comes last).
        p1.die_before_threads();
        assert_eq!(a.read("cgroup.procs").unwrap(), "200\n100\n");
        assert_eq!(a.read("cgroup.threads").unwrap(), "101\n200\n");
        // The thread dies too: a dying leader with no live thread is not listed.
        t1.link().task_dead();
        p1.threads_live.store(false, SeqCst);
        assert_eq!(a.read("cgroup.procs").unwrap(), "200\n");
        p2.link().task_dead();
        assert_eq!(a.read("cgroup.procs").unwrap(), "");
        for t in [&p1, &t1, &p2] {
            t.link().release();
        }
        assert_eq!(a.pids_current(), 0);
    });
}

/// A live thread whose leader died in another cgroup is that cgroup's process, not
/// its own cgroup's (`css_task_iter` with CSS_TASK_ITER_PROCS; a migration skips the
/// dying leader, charge included): `cgroup.procs` and `cgroup.kill` follow the leader.
#[test]
fn a_dying_leader_keeps_its_process_in_its_cgroup() {
    for_each_profile(|p| {
        let h = hier(p);
        let a = h.root().mkdir("a").unwrap();
        let b = h.root().mkdir("b").unwrap();
        let leader = fork(&a, 100).unwrap();
        let thread = fork_thread(&a, 100, 101).unwrap();
        leader.die_before_threads();
        assert!(a.is_populated(), "{p:?}: the thread keeps a populated");
        b.attach(&Group(vec![leader.clone(), thread.clone()]))
            .unwrap();
        assert_eq!(leader.link().cgroup(), a, "{p:?}: a dying leader stays");
        assert_eq!(thread.link().cgroup(), b);
        assert_eq!((a.pids_current(), b.pids_current()), (1, 1));
        assert_eq!(a.read("cgroup.procs").unwrap(), "100\n", "{p:?}");
        assert_eq!(a.read("cgroup.threads").unwrap(), "", "{p:?}");
        assert_eq!(b.read("cgroup.procs").unwrap(), "", "{p:?}");
        assert_eq!(b.read("cgroup.threads").unwrap(), "101\n", "{p:?}");
        assert!(!a.is_populated() && b.is_populated(), "{p:?}");
        // Killing the thread's cgroup spares its process; killing the leader's kills
        // the group (through the leader: one kill, not one per thread).
        b.kill().unwrap();
        assert_eq!((leader.kills(), thread.kills()), (0, 0), "{p:?}");
        a.kill().unwrap();
        assert_eq!((leader.kills(), thread.kills()), (1, 0), "{p:?}");
        h.root().mkdir("c").unwrap().kill().unwrap();
        assert_eq!(leader.kills(), 1, "{p:?}: another cgroup's kill");
        // The leader's reap takes it off the list even while the thread lives.
        leader.link().release();
        assert_eq!(a.read("cgroup.procs").unwrap(), "", "{p:?}");
        a.kill().unwrap();
        assert_eq!(leader.kills(), 1, "{p:?}: released, not killed again");
        assert_eq!((a.pids_current(), b.pids_current()), (0, 1));
        a.rmdir().unwrap();
        thread.exit_and_reap();
        assert_eq!(b.pids_current(), 0);
        assert_eq!(b.read("cgroup.procs").unwrap(), "");
    });
}

/// A parked leader's entry goes with its link when the task is dropped unreleased,
/// and a subtree kill finds dying leaders in descendants.
#[test]
fn dying_leaders_in_a_subtree_and_dropped_unreleased() {
    for_each_profile(|p| {
        let h = hier(p);
        let a = h.root().mkdir("a").unwrap();
        let b = a.mkdir("b").unwrap();
        let leader = fork(&b, 7).unwrap();
        let thread = fork_thread(&b, 7, 8).unwrap();
        leader.die_before_threads();
        a.kill().unwrap();
        assert_eq!((leader.kills(), thread.kills()), (1, 0), "{p:?}");
        assert_eq!(b.read("cgroup.procs").unwrap(), "7\n");
        assert_eq!(a.read("cgroup.procs").unwrap(), "", "{p:?}: not a's own");
        // Its link dropped without a release (the task itself still alive, its
        // thread too): the entry went with the link, and so did its charge.
        *leader.link.lock().unwrap() = None;
        assert_eq!(b.read("cgroup.procs").unwrap(), "", "{p:?}");
        assert_eq!(b.pids_current(), 1, "{p:?}: the thread's charge only");
        a.kill().unwrap();
        assert_eq!(leader.kills(), 1, "{p:?}: no longer a victim");
        thread.exit_and_reap();
        assert_eq!(b.pids_current(), 0);
    });
}

/// A member that keeps `CgroupMember::group_has_live_threads`' default (false): a
/// task list that parks its exited leaders without saying whether their group lives
/// on gets Linux's view of a process whose threads are all gone. Parked, the leader is
/// neither listed nor killed; its release still takes the entry and the charge.
#[test]
fn a_parked_leader_of_a_member_without_live_thread_answer_is_not_listed() {
    #[derive(Debug)]
    struct Plain {
        kills: std::sync::atomic::AtomicUsize,
    }
    impl uproc_cgroup::CgroupMember for Plain {
        fn tgid(&self) -> i32 {
            50
        }
        fn is_group_leader(&self) -> bool {
            true
        }
        fn kill(&self) {
            self.kills.fetch_add(1, SeqCst);
        }
    }
    for_each_profile(|p| {
        let h = hier(p);
        let a = h.root().mkdir("a").unwrap();
        let task = Arc::new(Plain {
            kills: Default::default(),
        });
        let weak = Arc::downgrade(&task) as Weak<dyn uproc_cgroup::CgroupMember>;
        let link = a.can_fork().unwrap().post_fork(weak.clone()).link;
        assert_eq!(a.read("cgroup.procs").unwrap(), "50\n", "{p:?}: live");
        link.task_dead_leader(weak);
        assert_eq!(
            a.read("cgroup.procs").unwrap(),
            "",
            "{p:?}: parked, not listed"
        );
        assert_eq!(a.pids_current(), 1, "{p:?}: charged until the release");
        a.kill().unwrap();
        assert_eq!(task.kills.load(SeqCst), 0, "{p:?}: not a kill target");
        link.release();
        assert_eq!(a.pids_current(), 0, "{p:?}");
        assert_eq!(a.read("cgroup.procs").unwrap(), "");
        a.rmdir().unwrap();
    });
}

#[test]
fn cgroup_procs_write_moves_the_whole_thread_group() {
    for_each_profile(|p| {
        let h = hier(p);
        let resolver = Arc::new(Resolver::default());
        let weak: Weak<dyn TaskResolver> = Arc::downgrade(&resolver) as Weak<dyn TaskResolver>;
        h.set_resolver(weak);
        let a = h.root().mkdir("a").unwrap();
        let b = h.root().mkdir("b").unwrap();
        let leader = fork(&a, 300).unwrap();
        let thread = fork_thread(&a, 300, 301).unwrap();
        let other = fork(&a, 400).unwrap();
        for t in [&leader, &thread, &other] {
            resolver.add(t);
        }
        b.write("cgroup.procs", "301\n")
            .expect("a thread's pid moves its group");
        assert_eq!(b.read("cgroup.procs").unwrap(), "300\n");
        assert_eq!(a.read("cgroup.procs").unwrap(), "400\n");
        assert_eq!((a.pids_current(), b.pids_current()), (1, 2));
        assert_eq!(leader.link().cgroup(), b);
        assert_eq!(thread.link().cgroup(), b);
        b.write("cgroup.procs", "0x190").unwrap(); // 400, kstrtoint base 0
        assert_eq!(a.read("cgroup.procs").unwrap(), "");
        assert!(!a.is_populated());
    });
}

/// `cgroup.threads` through a resolver that keeps `TaskResolver::thread_link`'s
/// default: a live thread is judged by its group's cgroup, and a group with no live
/// thread left (a zombie) is not found.
#[test]
fn cgroup_threads_write_with_the_default_thread_link() {
    for_each_profile(|p| {
        let h = hier(p);
        let resolver = Arc::new(Resolver::default());
        h.set_resolver(Arc::downgrade(&resolver) as Weak<dyn TaskResolver>);
        let a = h.root().mkdir("a").unwrap();
        let b = h.root().mkdir("b").unwrap();
        let leader = fork(&a, 300).unwrap();
        let thread = fork_thread(&a, 300, 301).unwrap();
        resolver.add(&leader);
        resolver.add(&thread);
        assert_eq!(
            a.write("cgroup.threads", "301"),
            Ok(()),
            "{p}: already here"
        );
        assert_eq!(
            b.write("cgroup.threads", "301"),
            Err(Errno::EOPNOTSUPP),
            "{p}: elsewhere"
        );
        assert_eq!(thread.link().cgroup(), a, "{p}: nothing moved");
        leader.link().task_dead();
        thread.link().task_dead();
        assert_eq!(
            a.write("cgroup.threads", "300"),
            Err(Errno::ESRCH),
            "{p}: no live link to judge by"
        );
    });
}

#[test]
fn cgroup_procs_write_errors() {
    for_each_profile(|p| {
        let h = hier(p);
        let a = h.root().mkdir("a").unwrap();
        assert_eq!(
            a.write("cgroup.procs", "5"),
            Err(Errno::ESRCH),
            "no resolver registered"
        );
        let resolver = Arc::new(Resolver::default());
        h.set_resolver(Arc::downgrade(&resolver) as Weak<dyn TaskResolver>);
        assert_eq!(
            a.write("cgroup.procs", "5"),
            Err(Errno::ESRCH),
            "no such pid"
        );
        assert_eq!(a.write("cgroup.procs", "abc"), Err(Errno::EINVAL));
        assert_eq!(a.write("cgroup.procs", "-1"), Err(Errno::EINVAL));
        assert_eq!(a.write("cgroup.procs", "\n"), Err(Errno::EINVAL));
        assert_eq!(
            a.write("cgroup.procs", ""),
            Ok(()),
            "zero bytes: no handler runs"
        );
        let t = fork(&h.root(), 9).unwrap();
        resolver.add(&t);
        a.rmdir().unwrap();
        assert_eq!(
            a.write("cgroup.procs", "9"),
            Err(Errno::ENOENT),
            "removed cgroup"
        );
        drop(resolver);
        let b = h.root().mkdir("b").unwrap();
        assert_eq!(
            b.write("cgroup.procs", "9"),
            Err(Errno::ESRCH),
            "resolver dropped"
        );
    });
}

#[test]
fn attach_to_removed_cgroup_is_enoent() {
    for_each_profile(|p| {
        let h = hier(p);
        let a = h.root().mkdir("a").unwrap();
        let b = h.root().mkdir("b").unwrap();
        let t = fork(&a, 1).unwrap();
        b.rmdir().unwrap();
        assert_eq!(b.attach(&Group(vec![t.clone()])), Err(Errno::ENOENT));
        assert_eq!(t.link().cgroup(), a);
    });
}

#[test]
fn attach_link_of_another_hierarchy_is_einval() {
    for_each_profile(|p| {
        let a = hier(p).root().mkdir("a").unwrap();
        let other = hier(p).root().mkdir("a").unwrap();
        let t = fork(&other, 1).unwrap();
        assert_eq!(a.attach(&t.link()), Err(Errno::EINVAL));
    });
}

#[test]
fn dead_threads_stay_behind_on_migration() {
    for_each_profile(|p| {
        let h = hier(p);
        let a = h.root().mkdir("a").unwrap();
        let b = h.root().mkdir("b").unwrap();
        let leader = fork(&a, 50).unwrap();
        let thread = fork_thread(&a, 50, 51).unwrap();
        thread.link().task_dead(); // a zombie thread, not yet reaped
        b.attach(&vec![leader.link(), thread.link()]).unwrap();
        assert_eq!(
            thread.link().cgroup(),
            a,
            "PF_EXITING tasks are not migrated"
        );
        assert_eq!((a.pids_current(), b.pids_current()), (1, 1));
        thread.link().release();
        assert_eq!(
            a.pids_current(),
            0,
            "release uncharges the task's current cgroup"
        );
    });
}

#[test]
fn css_set_lock_is_taken_exactly_three_times_per_life_cycle() {
    for &profile in Profile::ALL {
        // Scalable never takes css_set_lock: every count below is 0 there.
        let once = u64::from(profile != Profile::Scalable);
        let h = Hierarchy::new(profile);
        let a = h.root().mkdir("a").unwrap();
        let b = a.mkdir("b").unwrap();
        let before = h.css_set_lock_stat();
        assert_eq!(before.name, "css_set_lock");
        let t = fork(&b, 1).unwrap(); // can_fork + post_fork
        t.link().task_dead(); // task_dead
        t.link().task_dead(); // idempotent, no lock
        t.link().release(); // already unlinked: no lock
        t.link().release();
        let after = h.css_set_lock_stat();
        assert_eq!(
            after.write - before.write,
            3 * once,
            "{profile}: can_fork, post_fork, task_dead"
        );

        // cancel takes no lock; a failed charge still pinned once.
        let before = h.css_set_lock_stat().write;
        b.can_fork().unwrap().cancel();
        assert_eq!(h.css_set_lock_stat().write - before, once);

        // release of a task never declared dead unlinks it first: one acquisition.
        let t = fork(&b, 2).unwrap();
        let before = h.css_set_lock_stat().write;
        t.link().release();
        assert!(!t.link().is_linked());
        assert_eq!(h.css_set_lock_stat().write - before, once);

        // migration and kill: one each.
        let t = fork(&b, 3).unwrap();
        let before = h.css_set_lock_stat().write;
        a.attach(&t.link()).unwrap();
        assert_eq!(h.css_set_lock_stat().write - before, once);
        // dropping a live link unlinks it (one acquisition) and uncharges.
        let quiet = fork(&a, 4).unwrap();
        let before = h.css_set_lock_stat().write;
        drop(quiet.link.lock().unwrap().take());
        assert_eq!(h.css_set_lock_stat().write - before, once);
        assert_eq!(a.pids_current(), 1, "only t is left in a");
        // kill: one; the victim's exit (task_dead from its kill()): one more.
        let before = h.css_set_lock_stat().write;
        a.kill().unwrap();
        assert_eq!(t.kills(), 1);
        assert_eq!(
            h.css_set_lock_stat().write - before,
            2 * once,
            "kill, then the victim's task_dead"
        );
        t.link().release();
        assert_eq!(
            h.css_set_lock_stat().write - before,
            2 * once,
            "release of a dead task takes no lock"
        );
    }
}

#[test]
fn dropped_link_and_charge_leave_no_trace() {
    for_each_profile(|p| {
        let h = hier(p);
        let a = h.root().mkdir("a").unwrap();
        let t = fork(&a, 1).unwrap();
        let link = t.link.lock().unwrap().take().unwrap();
        drop(link); // the task list forgot exit and reap
        assert!(!a.is_populated());
        assert_eq!(a.pids_current(), 0);
        drop(a.can_fork().unwrap()); // Drop = cancel
        assert_eq!(a.pids_current(), 0);
        a.rmdir().unwrap();
    });
}

#[test]
fn removed_cgroup_is_freed_with_its_last_handle() {
    for_each_profile(|p| {
        let h = hier(p);
        let a = h.root().mkdir("a").unwrap();
        let b = a.mkdir("b").unwrap();
        let t = fork(&b, 1).unwrap();
        let weak_b = b.downgrade();
        let weak_a = a.downgrade();
        t.link().task_dead();
        b.rmdir().unwrap();
        drop(b);
        assert!(
            weak_b.upgrade().is_some(),
            "the zombie's link still holds b"
        );
        t.link().release();
        drop(t);
        assert!(weak_b.upgrade().is_none(), "b freed with its last link");
        a.rmdir().unwrap();
        drop(a);
        assert!(weak_a.upgrade().is_none(), "a freed with its last handle");
    });
}

#[test]
fn whole_hierarchy_is_freed_when_everything_is_dropped() {
    for_each_profile(|p| {
        let h = hier(p);
        let weak_h = Arc::downgrade(&h);
        let a = h.root().mkdir("a").unwrap();
        let b = a.mkdir("b").unwrap();
        let c = b.mkdir("c").unwrap();
        let weak_c = c.downgrade();
        let resolver = Arc::new(Resolver::default());
        h.set_resolver(Arc::downgrade(&resolver) as Weak<dyn TaskResolver>);
        let t = fork(&c, 1).unwrap();
        resolver.add(&t);
        let charge = b.can_fork().unwrap();
        drop((h, a, b, c, charge));
        assert!(
            weak_h.upgrade().is_some(),
            "the live task's link holds the hierarchy"
        );
        drop(resolver);
        let weak_t: Weak<FakeTask> = Arc::downgrade(&t);
        drop(t);
        assert!(
            weak_t.upgrade().is_none(),
            "cgroup never holds a member strongly"
        );
        assert!(weak_c.upgrade().is_none());
        assert!(
            weak_h.upgrade().is_none(),
            "no reference cycle keeps the tree alive"
        );
    });
}

#[test]
#[allow(clippy::mutable_key_type)] // Cgroup hashes by pointer identity, not by contents
fn cgroup_handles_hash_and_compare_by_identity() {
    for_each_profile(|p| {
        let h = hier(p);
        let a = h.root().mkdir("a").unwrap();
        let set: HashSet<Cgroup> = [a.clone(), h.find_by_id(a.id()).unwrap(), h.root()].into();
        assert_eq!(set.len(), 2);
    });
}

/// Two parents alternate forks into one cgroup through their own links: under the
/// Linux profiles `cgroup.procs` lists the children in fork order across the parents'
/// anchors (one runtime-wide link order, the moved parents first at their own serials);
/// under every profile each is listed once.
#[test]
fn children_of_two_parents_are_listed_in_fork_order() {
    for_each_profile(|p| {
        let h = hier(p);
        let a = h.root().mkdir("a").unwrap();
        let b = h.root().mkdir("b").unwrap();
        let (p1, p2) = (fork(&b, 1).unwrap(), fork(&b, 2).unwrap());
        a.attach(&p1.link()).unwrap();
        a.attach(&p2.link()).unwrap();
        let mut kids = Vec::new();
        for i in 0..6 {
            let parent = if i % 2 == 0 { &p1 } else { &p2 };
            kids.push(fork_child(parent, 10 + i).unwrap());
        }
        let procs = a.read("cgroup.procs").unwrap();
        let mut listed: Vec<i32> = procs.lines().map(|l| l.parse().unwrap()).collect();
        if p != Profile::Scalable {
            assert_eq!(listed, vec![1, 2, 10, 11, 12, 13, 14, 15], "{p:?}");
        }
        listed.sort_unstable();
        assert_eq!(listed, vec![1, 2, 10, 11, 12, 13, 14, 15], "{p:?}");
        assert_eq!(a.pids_current(), 8);
        for t in kids.iter().chain([&p1, &p2]) {
            t.exit_and_reap();
        }
        assert_eq!(a.pids_current(), 0);
        assert!(!a.is_populated());
        a.rmdir().unwrap();
    });
}

/// A parent that forked in `a` and moved to `b` does not keep `a` in memory: once its
/// child is reaped and `a` removed and dropped, `a` is freed (the parent's anchor for
/// its children in `a` went with the move).
#[test]
fn a_moved_parent_does_not_keep_its_old_cgroup_alive() {
    for_each_profile(|p| {
        let h = hier(p);
        let (a, b) = (h.root().mkdir("a").unwrap(), h.root().mkdir("b").unwrap());
        let parent = fork(&a, 1).unwrap();
        let child = fork_child(&parent, 2).unwrap();
        b.attach(&parent.link()).unwrap();
        child.exit_and_reap();
        drop(child);
        a.rmdir().unwrap();
        let weak_a = a.downgrade();
        drop(a);
        assert!(weak_a.upgrade().is_none(), "{p:?}: a freed");
        // The parent forks in its new cgroup.
        let next = fork_child(&parent, 3).unwrap();
        assert_eq!(next.link().cgroup(), b);
        next.exit_and_reap();
        parent.exit_and_reap();
        assert_eq!(b.pids_current(), 0);
    });
}

#[test]
fn an_inline_link_migrates_through_its_member_and_its_drop_unlinks_and_uncharges() {
    use uproc_cgroup::{CgroupMember, LinkRef};
    for_each_profile(|p| {
        let h = hier(p);
        let a = h.root().mkdir("a").unwrap();
        let b = h.root().mkdir("b").unwrap();
        let charge = a.can_fork().unwrap();
        let t = Arc::new(InlineTask {
            tgid: 42,
            link: charge.prepare_link(),
        });
        // Prepared, not linked: neither listed nor charged to the link yet (the charge
        // is the ForkCharge's until post_fork_link).
        assert!(!t.link.is_linked() && !t.link.is_charged());
        let member: Weak<dyn CgroupMember> = Arc::downgrade(&t) as Weak<InlineTask>;
        assert!(!charge.post_fork_link(&t.link, member));
        assert!(t.link.is_linked() && t.link.is_charged());
        assert_eq!(a.read("cgroup.procs").unwrap(), "42\n");
        // Migration reaches the link through the member.
        let r = LinkRef::of_member(t.clone()).expect("holds its link inline");
        b.attach(&r).unwrap();
        assert_eq!(a.read("cgroup.procs").unwrap(), "");
        assert_eq!(b.read("cgroup.procs").unwrap(), "42\n");
        assert_eq!((a.pids_current(), b.pids_current()), (0, 1));
        assert_eq!(r.cgroup(), b);
        drop(r);
        // cgroup.kill reaches it, and its kill unlinks it.
        b.kill().unwrap();
        assert!(!t.link.is_linked());
        assert_eq!(b.read("cgroup.events").unwrap(), "populated 0\nfrozen 0\n");
        assert_eq!(b.pids_current(), 1, "a dead, unreaped task still counts");
        // The member's drop releases its inline link: nothing leaks.
        drop(t);
        assert_eq!(b.pids_current(), 0);
        b.rmdir().unwrap();
    });
}

#[test]
fn of_member_refuses_a_member_without_an_inline_link() {
    let t = fork(&hier(Profile::Scalable).root(), 7).unwrap();
    assert!(uproc_cgroup::LinkRef::of_member(t.clone()).is_none());
    t.exit_and_reap();
}

#[test]
fn dropping_a_linked_inline_member_unlinks_and_uncharges_it() {
    use uproc_cgroup::CgroupMember;
    for_each_profile(|p| {
        let a = hier(p).root().mkdir("a").unwrap();
        let charge = a.can_fork().unwrap();
        let t = Arc::new(InlineTask {
            tgid: 5,
            link: charge.prepare_link(),
        });
        let member: Weak<dyn CgroupMember> = Arc::downgrade(&t) as Weak<InlineTask>;
        let _ = charge.post_fork_link(&t.link, member);
        assert_eq!(a.read("cgroup.events").unwrap(), "populated 1\nfrozen 0\n");
        drop(t);
        assert_eq!(a.read("cgroup.events").unwrap(), "populated 0\nfrozen 0\n");
        assert_eq!(a.read("cgroup.procs").unwrap(), "");
        assert_eq!(a.pids_current(), 0);
        a.rmdir().unwrap();
    });
}

/// The task list makes a task visible before post_fork links it: an exit (task_dead)
/// or a reap (release) can come first. Whatever came first, post_fork does what is left
/// and the counts come out right (the task list does not redo them after post_fork);
/// a repeated task_dead or release finds nothing to do.
#[test]
fn exit_or_reap_before_post_fork_leaves_nothing_behind() {
    use uproc_cgroup::CgroupMember;
    for_each_profile(|p| {
        let h = hier(p);
        let a = h.root().mkdir("a").unwrap();
        a.write("pids.max", "2").unwrap();
        for root in [false, true] {
            let cg = if root { h.root() } else { a.clone() };
            // task_dead first: post_fork hands the charge over without linking.
            let charge = cg.can_fork().unwrap();
            let t = Arc::new(InlineTask {
                tgid: 50,
                link: charge.prepare_link(),
            });
            t.link.task_dead();
            assert!(!t.link.is_linked() && !t.link.is_charged());
            let member: Weak<dyn CgroupMember> = Arc::downgrade(&t) as Weak<InlineTask>;
            assert!(!charge.post_fork_link(&t.link, member));
            assert!(!t.link.is_linked(), "{p:?}: a dead task is never linked");
            assert!(t.link.is_charged(), "{p:?}: a zombie still counts");
            assert_eq!(cg.read("cgroup.procs").unwrap(), "");
            assert!(!cg.is_populated());
            if !root {
                assert_eq!(a.pids_current(), 1);
            }
            t.link.task_dead();
            t.link.release();
            assert!(!t.link.is_charged());
            if !root {
                assert_eq!(a.pids_current(), 0);
            }
            t.link.release();
            drop(t);
            // release first (its task_dead included): post_fork uncharges.
            let charge = cg.can_fork().unwrap();
            let t = Arc::new(InlineTask {
                tgid: 51,
                link: charge.prepare_link(),
            });
            t.link.release();
            let member: Weak<dyn CgroupMember> = Arc::downgrade(&t) as Weak<InlineTask>;
            assert!(!charge.post_fork_link(&t.link, member));
            assert!(!t.link.is_linked() && !t.link.is_charged(), "{p:?}");
            t.link.task_dead();
            t.link.release();
            assert_eq!(cg.read("cgroup.procs").unwrap(), "");
            if !root {
                assert_eq!(a.pids_current(), 0, "{p:?}: the fork's charge went back");
            }
            drop(t);
        }
        // Nothing left: not a member, not a fork in flight.
        a.rmdir().unwrap();
    });
}

/// post_fork racing the child's exit and reap on other threads: at rest the child is
/// linked nowhere and charged nowhere, whatever the order.
#[test]
fn post_fork_racing_exit_and_reap_balances() {
    use uproc_cgroup::CgroupMember;
    for_each_profile(|p| {
        let a = hier(p).root().mkdir("a").unwrap();
        a.write("pids.max", "4").unwrap();
        for i in 0..300 {
            let charge = a.can_fork().unwrap();
            let t = Arc::new(InlineTask {
                tgid: 100 + i,
                link: charge.prepare_link(),
            });
            let barrier = Arc::new(std::sync::Barrier::new(2));
            let (t2, b2) = (t.clone(), barrier.clone());
            let exiter = std::thread::spawn(move || {
                b2.wait();
                t2.link.task_dead();
                t2.link.release();
            });
            barrier.wait();
            let member: Weak<dyn CgroupMember> = Arc::downgrade(&t) as Weak<InlineTask>;
            let _ = charge.post_fork_link(&t.link, member);
            // The task list's re-check after linking.
            t.link.task_dead();
            t.link.release();
            exiter.join().unwrap();
            assert!(!t.link.is_linked() && !t.link.is_charged(), "{p:?}");
            assert_eq!(a.pids_current(), 0, "{p:?}: round {i}");
            assert_eq!(a.read("cgroup.procs").unwrap(), "");
        }
        a.rmdir().unwrap();
    });
}

/// A fork refused by the pids controller, or dropped without post_fork, leaves no
/// trace that keeps rmdir off (its hold on the cgroup goes with it), and a fork through
/// a parent's own link is EBUSY for rmdir until it is linked.
#[test]
fn refused_and_dropped_forks_leave_rmdir_free() {
    for_each_profile(|p| {
        let a = hier(p).root().mkdir("a").unwrap();
        a.write("pids.max", "1").unwrap();
        let parent = fork(&a, 1).unwrap();
        assert_eq!(a.can_fork().err(), Some(Errno::EAGAIN));
        assert_eq!(parent.link().can_fork().err(), Some(Errno::EAGAIN));
        a.write("pids.max", "max").unwrap();
        let through_parent = parent.link().can_fork().unwrap();
        parent.exit_and_reap();
        assert_eq!(
            a.rmdir(),
            Err(Errno::EBUSY),
            "{p:?}: the parent's fork in flight"
        );
        drop(through_parent);
        assert!(!a.is_populated());
        a.rmdir().unwrap();
        assert_eq!(a.pids_current(), 0);
    });
}
