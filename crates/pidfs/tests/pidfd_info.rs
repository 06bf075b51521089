//! PIDFD_GET_INFO (mirrors selftests/pidfd/pidfd_info_test.c).

mod common;

use common::{World, both};
use uproc_abi::{Errno, InfoMask, PidfdFlags, WaitStatus};
use uproc_pidfs::{PIDFD_INFO_SUPPORTED, pidfs_exit};

#[test]
fn pid_fields_are_in_the_openers_namespace() {
    both(|p| {
        let w = World::new(p);
        let parent = w.spawn();
        let ns = w.root.new_child().unwrap();
        let init = w.spawn_in(&ns, Some(&parent));
        let child = w.spawn_in(&ns, Some(&init));
        let outer = w
            .pidfs
            .pidfd_open(&w.root, child.nr_in(&w.root), PidfdFlags::empty())
            .unwrap();
        let inner = w
            .pidfs
            .pidfd_open(&ns, child.nr_in(&ns), PidfdFlags::empty())
            .unwrap();
        let i = outer.info(InfoMask::PID).unwrap();
        assert_eq!(
            (i.pid, i.tgid, i.ppid),
            (
                child.nr_in(&w.root),
                child.nr_in(&w.root),
                init.nr_in(&w.root)
            )
        );
        assert!(
            i.mask.contains(InfoMask::PID | InfoMask::CREDS),
            "Linux always fills PID and CREDS for a live task"
        );
        let i = inner.info(InfoMask::PID).unwrap();
        assert_eq!(
            (i.pid, i.tgid, i.ppid),
            (2, 2, 1),
            "numbers as the opener's namespace sees them"
        );
        // The init's parent lives outside its namespace: ppid reads 0.
        let fd = w.pidfs.pidfd_open(&ns, 1, PidfdFlags::empty()).unwrap();
        assert_eq!(fd.info(InfoMask::PID).unwrap().ppid, 0);
    });
}

#[test]
fn thread_reports_its_group_tgid() {
    both(|p| {
        let w = World::new(p);
        let leader = w.spawn();
        let t = w.spawn_thread(&leader);
        let fd = w.open_thread(&t);
        let i = fd.info(InfoMask::PID).unwrap();
        assert_eq!((i.pid, i.tgid), (t.nr(), leader.nr()));
    });
}

#[test]
fn cgroupid_is_reported_whatever_the_mask() {
    // Linux's `pidfd_info` fills the cgroup id unconditionally (checked on 6.18: a live
    // task asked for nothing reads mask PID | CREDS | CGROUPID; a reaped one asked for
    // EXIT reads EXIT | CGROUPID).
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        w.with_task(&pid, |t| t.cgroupid = 99);
        let fd = w.open(&pid);
        for asked in [InfoMask::CGROUPID, InfoMask::PID, InfoMask::empty()] {
            let i = fd.info(asked).unwrap();
            assert_eq!(
                i.mask,
                InfoMask::PID | InfoMask::CREDS | InfoMask::CGROUPID,
                "asked {asked:?}"
            );
            assert_eq!(i.cgroupid, 99);
        }
        w.exit(&pid, WaitStatus::exited_with(3));
        w.reap(&pid, WaitStatus::exited_with(3), 99);
        let i = fd.info(InfoMask::EXIT).unwrap();
        assert_eq!(i.mask, InfoMask::EXIT | InfoMask::CGROUPID);
        assert_eq!(i.cgroupid, 99, "the cgroup at exit");
    });
}

#[test]
fn zombie_reports_no_exit() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        w.exit(&pid, WaitStatus::exited_with(5));
        let i = fd.info(InfoMask::PID | InfoMask::EXIT).unwrap();
        assert!(
            !i.mask.contains(InfoMask::EXIT),
            "Linux: EXIT only after reap, not for a zombie"
        );
        assert!(
            i.mask.contains(InfoMask::PID),
            "a zombie still has its PID info"
        );
        assert_eq!(i.exit_code, 0);
        assert_eq!(fd.exit_status(), None);
    });
}

#[test]
fn reaped_without_exit_is_esrch() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        w.kill_and_reap(&pid, WaitStatus::exited_with(5));
        assert_eq!(
            fd.info(InfoMask::PID).unwrap_err(),
            Errno::ESRCH,
            "Linux: task gone and EXIT not requested -> ESRCH"
        );
        assert_eq!(
            fd.info(InfoMask::CGROUPID | InfoMask::SUPPORTED_MASK)
                .unwrap_err(),
            Errno::ESRCH
        );
    });
}

#[test]
fn reaped_with_exit_gives_only_the_snapshot() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        let st = uproc_abi::WaitStatus::signaled_by(uproc_abi::Signal::KILL, false);
        w.exit(&pid, st);
        w.reap(&pid, st, 1234);
        let i = fd.info(InfoMask::PID | InfoMask::EXIT).unwrap();
        assert_eq!(
            i.mask,
            InfoMask::EXIT | InfoMask::CGROUPID,
            "only the exit snapshot (with its cgroup), no PID/CREDS"
        );
        assert_eq!(i.exit_code, st.raw(), "exit_code is the wait status word");
        assert_eq!(i.cgroupid, 1234, "the cgroup at exit");
        assert_eq!((i.pid, i.tgid, i.ppid), (0, 0, 0));
        let i = fd
            .info(InfoMask::EXIT | InfoMask::CGROUPID | InfoMask::SUPPORTED_MASK)
            .unwrap();
        assert_eq!(
            i.mask,
            InfoMask::EXIT | InfoMask::CGROUPID | InfoMask::SUPPORTED_MASK
        );
        assert_eq!(i.supported_mask, PIDFD_INFO_SUPPORTED);
    });
}

#[test]
fn reaped_exit_info_survives_free_pid_while_handle_lives() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        w.kill_and_reap(&pid, WaitStatus::exited_with(42));
        assert!(pid.is_freed());
        drop(pid);
        assert_eq!(
            fd.info(InfoMask::EXIT).unwrap().exit_code,
            WaitStatus::exited_with(42).raw()
        );
    });
}

#[test]
fn supported_mask_lists_known_bits() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        let i = fd.info(InfoMask::SUPPORTED_MASK).unwrap();
        assert!(i.mask.contains(InfoMask::SUPPORTED_MASK));
        assert_eq!(i.supported_mask, PIDFD_INFO_SUPPORTED);
        assert!(i.supported_mask.contains(
            InfoMask::PID | InfoMask::CGROUPID | InfoMask::EXIT | InfoMask::SUPPORTED_MASK
        ));
        let i = fd.info(InfoMask::PID).unwrap();
        assert!(!i.mask.contains(InfoMask::SUPPORTED_MASK));
        assert_eq!(i.supported_mask, InfoMask::empty());
    });
}

#[test]
fn unknown_mask_bits_are_ignored() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        let i = fd
            .info(InfoMask::PID | InfoMask::from_bits_retain(1 << 40))
            .unwrap();
        assert_eq!(i.pid, pid.nr(), "Linux ignores mask bits it does not know");
        assert!(!i.mask.contains(InfoMask::from_bits_retain(1 << 40)));
    });
}

#[test]
fn pid_outside_the_viewers_hierarchy_is_eremote() {
    both(|p| {
        let w = World::new(p);
        let parent = w.spawn();
        let a = w.root.new_child().unwrap();
        let b = w.root.new_child().unwrap();
        let in_a = w.spawn_in(&a, Some(&parent));
        w.spawn_in(&b, Some(&parent));
        let fd = w
            .pidfs
            .pidfd_prepare(&b, in_a.clone(), PidfdFlags::empty())
            .unwrap();
        assert_eq!(
            fd.info(InfoMask::PID).unwrap_err(),
            Errno::EREMOTE,
            "Linux (newest): pid not in the caller's pid-ns hierarchy -> EREMOTE"
        );
    });
}

#[test]
fn tgid_reading_zero_is_esrch() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        w.with_task(&pid, |t| t.hide_tgid = true);
        assert_eq!(
            fd.info(InfoMask::PID).unwrap_err(),
            Errno::ESRCH,
            "Linux: pid or tgid reads 0 -> ESRCH"
        );
    });
}

#[test]
fn reaped_but_exit_info_missing_gives_empty_answer_with_exit() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        // Detached before pidfs_exit ran: no task, no exit info yet.
        w.fake.tasks.lock().remove(&pid.ino());
        let i = fd.info(InfoMask::EXIT).unwrap();
        assert_eq!(i.mask, InfoMask::empty());
        assert_eq!(fd.info(InfoMask::PID).unwrap_err(), Errno::ESRCH);
        pidfs_exit(&pid, WaitStatus::exited_with(1), 3);
        assert_eq!(
            fd.info(InfoMask::EXIT).unwrap().mask,
            InfoMask::EXIT | InfoMask::CGROUPID
        );
    });
}
