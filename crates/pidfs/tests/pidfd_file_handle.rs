//! pidfs file handles (mirrors selftests/pidfd/pidfd_file_handle_test.c).

mod common;

use common::{World, both};
use std::sync::Arc;
use uproc_abi::{Errno, OpenFlags, PidfdFlags, WaitStatus};
use uproc_pidfs::{FileHandle, pidfs_exit};

/// A pidfs handle naming `ino`.
fn handle(ino: u64) -> FileHandle {
    FileHandle::from_bytes(FileHandle::TYPE_KERNFS, &ino.to_le_bytes()).unwrap()
}

fn raw(bits: u32) -> PidfdFlags {
    PidfdFlags::from_bits_retain(bits)
}

#[test]
fn handle_is_eight_le_bytes_of_the_ino_with_type_kernfs() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        let h = fd.file_handle();
        assert_eq!(h.handle_type(), 0xfe, "FILEID_KERNFS");
        assert_eq!(h.ino(), fd.ino());
        assert_eq!(h.to_bytes(), fd.ino().to_le_bytes());
        assert_eq!(FileHandle::from_bytes(0xfe, &h.to_bytes()).unwrap(), h);
    });
}

#[test]
fn malformed_handles_are_einval() {
    let good = 5u64.to_le_bytes();
    assert_eq!(
        FileHandle::from_bytes(1, &good).unwrap_err(),
        Errno::EINVAL,
        "wrong handle type"
    );
    assert_eq!(
        FileHandle::from_bytes(0xfe, &good[..4]).unwrap_err(),
        Errno::EINVAL,
        "short handle"
    );
    assert_eq!(
        FileHandle::from_bytes(0xfe, &[0; 9]).unwrap_err(),
        Errno::EINVAL,
        "long handle"
    );
    assert_eq!(
        FileHandle::from_bytes(0xfe, &[]).unwrap_err(),
        Errno::EINVAL
    );
    assert_eq!(
        FileHandle::from_bytes(0xfe, &0u64.to_le_bytes()).unwrap_err(),
        Errno::EINVAL,
        "ino 0 is never published"
    );
}

#[test]
fn live_task_reopens_with_the_same_ino() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        let again = w.open_handle(&fd.file_handle()).unwrap();
        assert_eq!(again.ino(), fd.ino());
        assert!(Arc::ptr_eq(again.pid(), &pid));
        assert_ne!(again, fd, "a new open file");
    });
}

#[test]
fn zombie_still_decodes() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        w.exit(&pid, WaitStatus::exited_with(0));
        let again = w.open_handle(&fd.file_handle());
        assert!(
            again.is_ok(),
            "Linux: a zombie (exited, not reaped) still decodes"
        );
        assert!(again.unwrap().poll().readable);
    });
}

#[test]
fn reaped_task_does_not_decode() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        w.exit(&pid, WaitStatus::exited_with(0));
        // Reaped, numbers not yet freed (still in the index).
        pidfs_exit(&pid, WaitStatus::exited_with(0), 7);
        assert_eq!(
            w.open_handle(&fd.file_handle()).unwrap_err(),
            Errno::ESTALE,
            "Linux: PIDFS_ATTR_BIT_EXIT set -> no fd"
        );
        w.fake.tasks.lock().remove(&pid.ino());
        uproc_pidns::free_pid(&pid);
        assert_eq!(
            w.open_handle(&fd.file_handle()).unwrap_err(),
            Errno::ESTALE,
            "freed: the ino is gone from the index"
        );
    });
}

#[test]
fn unknown_ino_is_estale() {
    both(|p| {
        let w = World::new(p);
        w.spawn();
        let h = handle(999_999u64);
        assert_eq!(w.open_handle(&h).unwrap_err(), Errno::ESTALE);
    });
}

#[test]
fn pid_that_never_had_a_pidfd_does_not_decode() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let h = handle(pid.ino());
        assert_eq!(
            w.open_handle(&h).unwrap_err(),
            Errno::ESTALE,
            "Linux: attr == NULL -> no fd"
        );
    });
}

#[test]
fn marked_dead_pid_does_not_decode() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        w.exit(&pid, WaitStatus::exited_with(0));
        pidfs_exit(&pid, WaitStatus::exited_with(0), 7);
        let h = handle(pid.ino());
        assert_eq!(
            w.open_handle(&h).unwrap_err(),
            Errno::ESTALE,
            "Linux: attr == PIDFS_PID_DEAD -> no fd"
        );
    });
}

#[test]
fn failed_open_does_not_make_a_pid_decodable() {
    both(|p| {
        let w = World::new(p);
        let leader = w.spawn();
        let t = w.spawn_thread(&leader);
        assert_eq!(
            w.pidfs
                .pidfd_open(&w.root, t.nr(), PidfdFlags::empty())
                .unwrap_err(),
            Errno::ENOENT
        );
        let h = handle(t.ino());
        assert_eq!(
            w.pidfs
                .open_by_handle(&w.root, &h, PidfdFlags::THREAD)
                .unwrap_err(),
            Errno::ESTALE
        );
    });
}

#[test]
fn pid_invisible_from_the_caller_does_not_decode() {
    both(|p| {
        let w = World::new(p);
        let parent = w.spawn();
        let a = w.root.new_child().unwrap();
        let b = w.root.new_child().unwrap();
        let in_a = w.spawn_in(&a, Some(&parent));
        w.spawn_in(&b, Some(&parent));
        let fd = w.open(&in_a);
        assert_eq!(
            w.pidfs
                .open_by_handle(&b, &fd.file_handle(), PidfdFlags::empty())
                .unwrap_err(),
            Errno::ESTALE,
            "Linux: pid_vnr(pid) == 0 -> no fd"
        );
        assert_eq!(
            w.pidfs
                .open_by_handle(&a, &w.open(&parent).file_handle(), PidfdFlags::empty())
                .unwrap_err(),
            Errno::ESTALE,
            "an ancestor's pid is invisible from a child namespace"
        );
        assert!(
            w.pidfs
                .open_by_handle(&a, &fd.file_handle(), PidfdFlags::empty())
                .is_ok()
        );
        assert!(w.open_handle(&fd.file_handle()).is_ok());
    });
}

#[test]
fn open_flags_are_validated() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let h = w.open(&pid).file_handle();
        for ok in [
            OpenFlags::empty(),
            OpenFlags::WRONLY,
            OpenFlags::RDWR,
            OpenFlags::CLOEXEC,
            OpenFlags::NONBLOCK | OpenFlags::CLOEXEC | OpenFlags::RDWR,
            OpenFlags::EXCL,
        ] {
            assert!(
                w.pidfs.open_by_handle(&w.root, &h, raw(ok.bits())).is_ok(),
                "{ok:?} is allowed"
            );
        }
        let o_creat = 0o100;
        let o_trunc = 0o1000;
        for bad in [o_creat, o_trunc, 1 << 30] {
            assert_eq!(
                w.pidfs.open_by_handle(&w.root, &h, raw(bad)).unwrap_err(),
                Errno::EINVAL,
                "Linux: open flags outside O_RDWR|O_WRONLY|O_NONBLOCK|O_CLOEXEC|O_EXCL -> EINVAL"
            );
        }
        // Flags are checked before the handle is decoded.
        let unknown = handle(777_777u64);
        assert_eq!(
            w.pidfs
                .open_by_handle(&w.root, &unknown, raw(o_creat))
                .unwrap_err(),
            Errno::EINVAL
        );
    });
}

#[test]
fn excl_and_nonblock_become_pidfd_flags() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let h = w.open(&pid).file_handle();
        let bits = OpenFlags::EXCL | OpenFlags::NONBLOCK | OpenFlags::CLOEXEC | OpenFlags::RDWR;
        let fd = w
            .pidfs
            .open_by_handle(&w.root, &h, raw(bits.bits()))
            .unwrap();
        assert_eq!(
            fd.flags(),
            PidfdFlags::THREAD | PidfdFlags::NONBLOCK,
            "O_EXCL == PIDFD_THREAD, O_NONBLOCK == PIDFD_NONBLOCK"
        );
        assert!(fd.is_nonblocking());
    });
}
