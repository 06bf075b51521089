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

/// `open_by_handle_at`'s answers to malformed handles, measured on Linux 6.18 with a
/// pidfs handle: EINVAL only for what `handle_to_path` rejects (no bytes, more than
/// 128, a negative type, unknown flag bits in the type); a handle that decodes to no
/// pid (another type, under 8 bytes, inode 0) is ESTALE; bytes past the eighth and the
/// `FILEID_IS_CONNECTABLE` flag are ignored. (Every one of these was EINVAL.)
#[test]
fn malformed_handles_get_linux_s_errors() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        let ino = fd.ino().to_le_bytes();
        let open = |ty: i32, bytes: &[u8]| {
            FileHandle::from_bytes(ty, bytes)
                .and_then(|h| w.pidfs.open_by_handle(&w.root, &h, PidfdFlags::empty()))
                .map(|f| f.ino())
        };
        for (ty, bytes, what) in [
            (0xfe, &[][..], "no bytes"),
            (0xfe, &[0u8; 129][..], "more than MAX_HANDLE_SZ"),
            (-1, &ino[..], "a negative type"),
            (0xfe | 0x0004_0000, &ino[..], "an unknown flag bit"),
        ] {
            assert_eq!(open(ty, bytes), Err(Errno::EINVAL), "{p}: {what}");
        }
        let long: Vec<u8> = ino.iter().copied().chain([0xff; 4]).collect();
        for (ty, bytes, what) in [
            (1, &ino[..], "another type"),
            (0, &ino[..], "type 0"),
            (0xfe, &ino[..4], "4 bytes"),
            (0xfe, &0u64.to_le_bytes()[..], "inode 0"),
        ] {
            assert_eq!(open(ty, bytes), Err(Errno::ESTALE), "{p}: {what}");
        }
        assert_eq!(open(0xfe, &long[..9]), Ok(fd.ino()), "{p}: 9 bytes");
        assert_eq!(open(0xfe, &long), Ok(fd.ino()), "{p}: 12 bytes");
        assert_eq!(
            open(0xfe | 0x0001_0000, &ino),
            Ok(fd.ino()),
            "{p}: FILEID_IS_CONNECTABLE"
        );
        // The open flags are checked before the handle is looked up (EINVAL, not
        // ESTALE, for a handle that names nothing).
        assert_eq!(
            FileHandle::from_bytes(1, &ino).and_then(|h| w.pidfs.open_by_handle(
                &w.root,
                &h,
                PidfdFlags::from_bits_retain(1 << 30)
            )),
            Err(Errno::EINVAL)
        );
    });
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
