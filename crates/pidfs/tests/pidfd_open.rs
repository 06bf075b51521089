//! pidfd_open / pidfd_prepare rules (mirrors selftests/pidfd/pidfd_open_test.c).

mod common;

use common::{World, both};
use std::collections::HashSet;
use std::sync::Arc;
use uproc_abi::{Errno, PidfdFlags, WaitStatus};
use uproc_pidfs::{do_notify_pidfd, pidfs_exit};

#[test]
fn unknown_flags_are_einval() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let bad = PidfdFlags::from_bits_retain(1 << 20);
        assert_eq!(
            w.pidfs.pidfd_open(&w.root, pid.nr(), bad).unwrap_err(),
            Errno::EINVAL,
            "Linux: flags other than PIDFD_NONBLOCK|PIDFD_THREAD -> EINVAL"
        );
        let bad = PidfdFlags::NONBLOCK | PidfdFlags::from_bits_retain(libc_o_cloexec());
        assert_eq!(
            w.pidfs.pidfd_open(&w.root, pid.nr(), bad).unwrap_err(),
            Errno::EINVAL
        );
    });
}

fn libc_o_cloexec() -> u32 {
    uproc_abi::OpenFlags::CLOEXEC.bits()
}

#[test]
fn flags_are_checked_before_the_number() {
    both(|p| {
        let w = World::new(p);
        let bad = PidfdFlags::from_bits_retain(1 << 20);
        assert_eq!(
            w.pidfs.pidfd_open(&w.root, 12345, bad).unwrap_err(),
            Errno::EINVAL,
            "Linux checks flags first"
        );
    });
}

#[test]
fn nonpositive_pid_is_einval() {
    both(|p| {
        let w = World::new(p);
        w.spawn();
        for nr in [0, -1, i32::MIN] {
            assert_eq!(
                w.pidfs
                    .pidfd_open(&w.root, nr, PidfdFlags::empty())
                    .unwrap_err(),
                Errno::EINVAL,
                "Linux: pidfd_open(pid <= 0) -> EINVAL"
            );
        }
    });
}

#[test]
fn unknown_number_is_esrch() {
    both(|p| {
        let w = World::new(p);
        w.spawn();
        assert_eq!(
            w.pidfs
                .pidfd_open(&w.root, 4242, PidfdFlags::empty())
                .unwrap_err(),
            Errno::ESRCH,
            "Linux: number not found in caller's namespace -> ESRCH"
        );
    });
}

#[test]
fn number_of_a_parent_namespace_is_esrch_from_a_child_namespace() {
    both(|p| {
        let w = World::new(p);
        let outer = w.spawn();
        let child_ns = w.root.new_child().unwrap();
        let inner = w.spawn_in(&child_ns, Some(&outer));
        assert_eq!(inner.nr_in(&child_ns), 1);
        // outer's number (1 in root) is found in the child ns as its init, a different
        // process; an outer-only number is not found at all.
        let outer2 = w.spawn();
        assert_eq!(
            w.pidfs
                .pidfd_open(&child_ns, outer2.nr(), PidfdFlags::empty())
                .unwrap_err(),
            Errno::ESRCH,
            "Linux: a pid outside the caller's namespace is not found -> ESRCH"
        );
        let fd = w
            .pidfs
            .pidfd_open(&child_ns, 1, PidfdFlags::empty())
            .unwrap();
        assert!(Arc::ptr_eq(fd.pid(), &inner));
    });
}

#[test]
fn reaped_task_is_esrch() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        w.exit(&pid, WaitStatus::exited_with(0));
        // Reaped but numbers not yet freed: the pid is still findable, no task attached.
        pidfs_exit(&pid, WaitStatus::exited_with(0), 7);
        w.fake.tasks.lock().remove(&pid.ino());
        assert_eq!(
            w.pidfs
                .pidfd_open(&w.root, pid.nr(), PidfdFlags::empty())
                .unwrap_err(),
            Errno::ESRCH,
            "Linux: no task attached (reaped) -> ESRCH"
        );
    });
}

#[test]
fn pid_without_task_is_esrch() {
    both(|p| {
        let w = World::new(p);
        let pid = w.alloc_in(&w.root.clone());
        assert_eq!(
            w.pidfs
                .pidfd_prepare(&w.root, pid, PidfdFlags::empty())
                .unwrap_err(),
            Errno::ESRCH
        );
    });
}

#[test]
fn non_leader_thread_without_thread_flag_is_enoent() {
    both(|p| {
        let w = World::new(p);
        let leader = w.spawn();
        let thread = w.spawn_thread(&leader);
        assert_eq!(
            w.pidfs
                .pidfd_open(&w.root, thread.nr(), PidfdFlags::empty())
                .unwrap_err(),
            Errno::ENOENT,
            "Linux >= 6.15: non-leader without PIDFD_THREAD -> ENOENT"
        );
        let fd = w
            .pidfs
            .pidfd_open(&w.root, thread.nr(), PidfdFlags::THREAD)
            .expect("PIDFD_THREAD may name a non-leader thread");
        assert_eq!(fd.flags(), PidfdFlags::THREAD);
    });
}

#[test]
fn nonblock_flag_is_reported() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let nb = w
            .pidfs
            .pidfd_open(&w.root, pid.nr(), PidfdFlags::NONBLOCK)
            .unwrap();
        assert!(nb.is_nonblocking(), "PIDFD_NONBLOCK sets O_NONBLOCK");
        let b = w.open(&pid);
        assert!(!b.is_nonblocking());
    });
}

#[test]
fn two_opens_share_the_ino_but_not_the_file() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let a = w.open(&pid);
        let b = w.open(&pid);
        assert_eq!(a.ino(), b.ino(), "all pidfds of one pid share one inode");
        assert_ne!(a, b, "two opens are two open files");
        let c = a.clone();
        assert_eq!(a, c, "a clone is the same open file");
        assert_eq!(c.ino(), a.ino());
        #[allow(clippy::mutable_key_type)] // Hash/Eq go by identity, which never changes
        let set: HashSet<_> = [a.clone(), b, c].into_iter().collect();
        assert_eq!(set.len(), 2);
    });
}

#[test]
fn marked_dead_pid_cannot_get_a_pidfd() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        w.exit(&pid, WaitStatus::exited_with(1));
        // Reaped with no pidfd ever made: pidfs_exit marks it dead.
        pidfs_exit(&pid, WaitStatus::exited_with(1), 7);
        // Even if a (buggy) backend still reported a task, the dead mark wins.
        assert_eq!(
            w.pidfs
                .pidfd_prepare(&w.root, pid.clone(), PidfdFlags::empty())
                .unwrap_err(),
            Errno::ESRCH,
            "Linux: attr == PIDFS_PID_DEAD -> ESRCH"
        );
    });
}

#[test]
fn exit_before_the_first_open_is_seen() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        // do_notify_pidfd with no pidfd yet is a no-op; the backend knows it exited.
        w.exit(&pid, WaitStatus::exited_with(3));
        let fd = w
            .pidfs
            .pidfd_open(&w.root, pid.nr(), PidfdFlags::empty())
            .expect("a zombie can be opened");
        assert!(
            fd.poll().readable,
            "a pidfd to a zombie is readable at once"
        );
        assert!(!fd.poll().hangup);
        let rx = fd.subscribe();
        assert_eq!(rx.try_recv().unwrap().status, WaitStatus::exited_with(3));
    });
}

#[test]
fn exit_racing_with_the_first_open_is_not_lost() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        // The exit lands after the slot exists but before the backend answers.
        *w.fake.on_task_state.lock() = Some(Box::new(|pid| {
            do_notify_pidfd(pid, WaitStatus::exited_with(9));
        }));
        let fd = w.open(&pid);
        assert!(
            fd.poll().readable,
            "the racing exit is recorded in the slot"
        );
    });
}

#[test]
fn reap_racing_with_the_first_open_fails_it() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        w.exit(&pid, WaitStatus::exited_with(2));
        // The reap's pidfs_exit runs while the open is asking the backend (which still
        // saw the zombie): the open must not register a pid that will never get exit info.
        *w.fake.on_task_state.lock() = Some(Box::new(|pid| {
            pidfs_exit(pid, WaitStatus::exited_with(2), 7);
        }));
        assert_eq!(
            w.pidfs
                .pidfd_open(&w.root, pid.nr(), PidfdFlags::empty())
                .unwrap_err(),
            Errno::ESRCH
        );
    });
}

#[test]
fn stale_pidfd_needs_no_task_and_records_exit_info() {
    both(|p| {
        let w = World::new(p);
        let pid = w.alloc_in(&w.root.clone());
        let fd = w
            .pidfs
            .pidfd_prepare_stale(&w.root, pid.clone(), PidfdFlags::empty());
        assert_eq!(fd.ino(), pid.ino());
        w.attach(&pid, None, None);
        w.kill_and_reap(&pid, WaitStatus::exited_with(4));
        assert_eq!(fd.exit_status(), Some(WaitStatus::exited_with(4)));
        assert_eq!(
            fd.poll(),
            uproc_pidfs::Readiness {
                readable: true,
                hangup: true
            }
        );
    });
}

#[test]
fn a_wait_only_handle_registers_nothing_and_is_never_readable() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let index = w.pidfs.index_len();
        let fd = w.pidfs.pidfd_wait_only(pid.clone());
        assert!(Arc::ptr_eq(fd.pid(), &pid), "it names the pid object");
        assert_eq!(w.pidfs.index_len(), index, "no index entry");
        w.kill_and_reap(&pid, WaitStatus::exited_with(2));
        assert!(!fd.poll().readable, "no notification reaches it");
        assert_eq!(fd.exit_status(), None, "no exit info");
    });
}

#[test]
fn a_wait_only_handle_leaves_the_pids_real_pidfds_untouched() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let _wait_only = w.pidfs.pidfd_wait_only(pid.clone());
        let fd = w.open(&pid);
        w.kill_and_reap(&pid, WaitStatus::exited_with(4));
        assert!(fd.poll().readable && fd.poll().hangup);
        assert_eq!(fd.exit_status(), Some(WaitStatus::exited_with(4)));
    });
}

#[test]
fn a_pidfd_made_after_the_reap_reads_as_reaped() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let nr = pid.nr();
        w.kill_and_reap(&pid, WaitStatus::exited_with(6));
        assert_eq!(
            w.pidfs
                .pidfd_open(&w.root, nr, PidfdFlags::empty())
                .unwrap_err(),
            Errno::ESRCH,
            "by number: gone"
        );
        let index = w.pidfs.index_len();
        let fd = w.pidfs.pidfd_reaped(
            &w.root,
            pid.clone(),
            PidfdFlags::NONBLOCK | PidfdFlags::from_bits_retain(1 << 20),
            WaitStatus::exited_with(6),
            11,
        );
        assert_eq!(fd.flags(), PidfdFlags::NONBLOCK, "unknown flags dropped");
        assert!(fd.poll().readable && fd.poll().hangup);
        assert_eq!(fd.exit_status(), Some(WaitStatus::exited_with(6)));
        let info = fd.info(uproc_abi::InfoMask::EXIT).unwrap();
        assert_eq!(
            (info.exit_code, info.cgroupid),
            (WaitStatus::exited_with(6).raw(), 11)
        );
        assert_eq!(
            fd.send_signal(uproc_abi::Signal::KILL).unwrap_err(),
            Errno::ESRCH
        );
        let ev = fd
            .subscribe()
            .try_recv()
            .expect("exited: the event at once");
        assert_eq!(ev.status, WaitStatus::exited_with(6));
        assert_eq!(w.pidfs.index_len(), index, "not indexed");
        assert_eq!(w.open_handle(&fd.file_handle()).unwrap_err(), Errno::ESTALE);
    });
}
