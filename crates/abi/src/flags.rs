//! Flag sets with Linux's values: clone3, waitid/wait4, pidfd_open, PIDFD_GET_INFO,
//! pidfd_send_signal.
//!
//! All are `bitflags` so `from_bits_retain` can carry unknown bits to the validation
//! that rejects them with `EINVAL`, as the kernel does.

bitflags::bitflags! {
    /// `clone3(2)` flags (`CLONE_*` in `<linux/sched.h>`).
    ///
    /// uproc models the process-lifecycle flags. The flags for state it does not model
    /// (memory, files, fs, SysV undo lists, TLS, the tid addresses, the I/O context,
    /// tracing: `VM`, `FILES`, `FS`, `SYSVSEM`, `SETTLS`, `PARENT_SETTID`,
    /// `CHILD_SETTID`, `CHILD_CLEARTID`, `IO`, `PTRACE`, `UNTRACED`, `VFORK`) are
    /// accepted, checked as Linux's `clone3_args_valid` and `copy_process` check them
    /// (`THREAD` without `SIGHAND`, `SIGHAND` without `VM`, `SIGHAND` with
    /// `CLEAR_SIGHAND` are EINVAL), and change nothing else: the set `pthread_create`
    /// passes makes a thread. `VFORK` does not suspend the caller (the embedding
    /// runtime does that, until the child's exit or exec). `CLEAR_SIGHAND` resets
    /// what uproc keeps of the child's handlers (`SA_NOCLDWAIT`; `SIG_IGN` stays). The
    /// other namespaces' `CLONE_NEW*` flags, `CLONE_DETACHED`, bits in the low byte
    /// (the exit signal's, separate in clone3) and unknown bits are EINVAL: uproc has
    /// pid namespaces only. [`NEW_THREAD`](Self::NEW_THREAD) is the set a new thread
    /// needs.
    ///
    /// # References
    /// [clone(2)](https://man7.org/linux/man-pages/man2/clone.2.html)
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct CloneFlags: u64 {
        /// `CLONE_VM`.
        const VM = libc::CLONE_VM as u64;
        /// `CLONE_PIDFD`: return a pidfd for the child.
        const PIDFD = 0x0000_1000;
        /// `CLONE_SIGHAND`.
        const SIGHAND = libc::CLONE_SIGHAND as u64;
        /// `CLONE_PARENT`: the child's parent is the caller's parent.
        const PARENT = libc::CLONE_PARENT as u64;
        /// `CLONE_THREAD`: the child joins the caller's thread group.
        const THREAD = libc::CLONE_THREAD as u64;
        /// `CLONE_NEWPID`: the child is pid 1 of a new pid namespace.
        const NEWPID = libc::CLONE_NEWPID as u64;
        /// `CLONE_FS` (not modelled: accepted).
        const FS = 0x0000_0200;
        /// `CLONE_FILES` (not modelled: accepted).
        const FILES = 0x0000_0400;
        /// `CLONE_PTRACE` (no tracer: accepted).
        const PTRACE = 0x0000_2000;
        /// `CLONE_VFORK`: accepted; the caller is not suspended (the runtime's part).
        const VFORK = 0x0000_4000;
        /// `CLONE_SYSVSEM` (not modelled: accepted).
        const SYSVSEM = 0x0004_0000;
        /// `CLONE_SETTLS` (not modelled: accepted).
        const SETTLS = 0x0008_0000;
        /// `CLONE_PARENT_SETTID` (not modelled: accepted).
        const PARENT_SETTID = 0x0010_0000;
        /// `CLONE_CHILD_CLEARTID` (not modelled: accepted).
        const CHILD_CLEARTID = 0x0020_0000;
        /// `CLONE_UNTRACED` (no tracer: accepted).
        const UNTRACED = 0x0080_0000;
        /// `CLONE_CHILD_SETTID` (not modelled: accepted).
        const CHILD_SETTID = 0x0100_0000;
        /// `CLONE_IO` (not modelled: accepted).
        const IO = 0x8000_0000;
        /// `CLONE_CLEAR_SIGHAND`: the child's handlers back to their defaults (of
        /// what uproc keeps: `SA_NOCLDWAIT` cleared; `SIG_IGN` stays). EINVAL with
        /// `SIGHAND`.
        const CLEAR_SIGHAND = 0x1_0000_0000;
        /// `CLONE_INTO_CGROUP`: start the child in `CloneArgs::cgroup`.
        const INTO_CGROUP = 0x2_0000_0000;
        /// `CLONE_AUTOREAP` (Linux 7.1): the child is reaped at exit, never a zombie.
        const AUTOREAP = 0x4_0000_0000;
        /// `CLONE_THREAD | CLONE_SIGHAND | CLONE_VM`: a new thread of the caller's
        /// group, with the sharing Linux requires of one.
        const NEW_THREAD = Self::THREAD.bits() | Self::SIGHAND.bits() | Self::VM.bits();
    }
}

bitflags::bitflags! {
    /// `waitid(2)` / `wait4(2)` options (`W*` in `<sys/wait.h>`).
    ///
    /// # References
    /// [wait(2)](https://man7.org/linux/man-pages/man2/wait.2.html)
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct WaitOptions: u32 {
        /// `WNOHANG`: return at once if nothing is ready.
        const NOHANG = libc::WNOHANG as u32;
        /// `WSTOPPED` (`WUNTRACED`): report stopped children.
        const STOPPED = libc::WSTOPPED as u32;
        /// `WEXITED`: report exited children.
        const EXITED = libc::WEXITED as u32;
        /// `WCONTINUED`: report continued children.
        const CONTINUED = libc::WCONTINUED as u32;
        /// `WNOWAIT`: leave the child waitable.
        const NOWAIT = libc::WNOWAIT as u32;
        /// `__WNOTHREAD`: only the caller's own children, not its thread group's.
        const NOTHREAD = libc::__WNOTHREAD as u32;
        /// `__WALL`: any child, whatever its exit signal.
        const ALL = libc::__WALL as u32;
        /// `__WCLONE`: only "clone" children (exit signal other than SIGCHLD).
        const CLONE = libc::__WCLONE as u32;
    }
}

bitflags::bitflags! {
    /// `pidfd_open(2)` flags.
    ///
    /// # References
    /// [pidfd_open(2)](https://man7.org/linux/man-pages/man2/pidfd_open.2.html)
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct PidfdFlags: u32 {
        /// `PIDFD_NONBLOCK` (== `O_NONBLOCK`): waitid through it returns EAGAIN.
        const NONBLOCK = libc::O_NONBLOCK as u32;
        /// `PIDFD_THREAD` (== `O_EXCL`): refer to one thread, not the thread group.
        const THREAD = libc::O_EXCL as u32;
    }
}

bitflags::bitflags! {
    /// `open_by_handle_at(2)` flags accepted for pidfs file handles.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct OpenFlags: u32 {
        /// `O_WRONLY`.
        const WRONLY = libc::O_WRONLY as u32;
        /// `O_RDWR`.
        const RDWR = libc::O_RDWR as u32;
        /// `O_NONBLOCK` (== `PIDFD_NONBLOCK`).
        const NONBLOCK = libc::O_NONBLOCK as u32;
        /// `O_CLOEXEC`.
        const CLOEXEC = libc::O_CLOEXEC as u32;
        /// `O_EXCL` (== `PIDFD_THREAD`).
        const EXCL = libc::O_EXCL as u32;
    }
}

bitflags::bitflags! {
    /// `PIDFD_GET_INFO` request/response mask (`PIDFD_INFO_*` in `<linux/pidfd.h>`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct InfoMask: u64 {
        /// `PIDFD_INFO_PID`: pid, tgid, ppid in the caller's namespace.
        const PID = 1 << 0;
        /// `PIDFD_INFO_CREDS`: user and group ids.
        const CREDS = 1 << 1;
        /// `PIDFD_INFO_CGROUPID`: the cgroup id.
        const CGROUPID = 1 << 2;
        /// `PIDFD_INFO_EXIT`: exit status, once reaped.
        const EXIT = 1 << 3;
        /// `PIDFD_INFO_COREDUMP`.
        const COREDUMP = 1 << 4;
        /// `PIDFD_INFO_SUPPORTED_MASK`: report which bits this implementation knows.
        const SUPPORTED_MASK = 1 << 5;
    }
}

bitflags::bitflags! {
    /// `pidfd_send_signal(2)` scope flags.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct PidfdSignalFlags: u32 {
        /// `PIDFD_SIGNAL_THREAD`: that thread only.
        const THREAD = 1 << 0;
        /// `PIDFD_SIGNAL_THREAD_GROUP`: the thread group.
        const THREAD_GROUP = 1 << 1;
        /// `PIDFD_SIGNAL_PROCESS_GROUP`: the process group the task leads.
        const PROCESS_GROUP = 1 << 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_linux_values() {
        assert_eq!(CloneFlags::THREAD.bits(), 0x10000);
        assert_eq!(CloneFlags::NEWPID.bits(), 0x2000_0000);
        assert_eq!(CloneFlags::PARENT.bits(), 0x8000);
        assert_eq!(WaitOptions::NOWAIT.bits(), 0x0100_0000);
        assert_eq!(PidfdFlags::NONBLOCK.bits(), 0o4000);
        assert_eq!(PidfdFlags::THREAD.bits(), 0o200);
        // libc's `c_int` constants, as the kernel's unsigned values.
        for (ours, theirs) in [
            (CloneFlags::FS, libc::CLONE_FS),
            (CloneFlags::FILES, libc::CLONE_FILES),
            (CloneFlags::PTRACE, libc::CLONE_PTRACE),
            (CloneFlags::VFORK, libc::CLONE_VFORK),
            (CloneFlags::SYSVSEM, libc::CLONE_SYSVSEM),
            (CloneFlags::SETTLS, libc::CLONE_SETTLS),
            (CloneFlags::PARENT_SETTID, libc::CLONE_PARENT_SETTID),
            (CloneFlags::CHILD_CLEARTID, libc::CLONE_CHILD_CLEARTID),
            (CloneFlags::UNTRACED, libc::CLONE_UNTRACED),
            (CloneFlags::CHILD_SETTID, libc::CLONE_CHILD_SETTID),
            (CloneFlags::IO, libc::CLONE_IO),
        ] {
            assert_eq!(ours.bits(), u64::from(theirs as u32), "{ours:?}");
        }
        // (libc has `CLONE_CLEAR_SIGHAND` as a truncated `c_int`.) `<linux/sched.h>`:
        assert_eq!(CloneFlags::CLEAR_SIGHAND.bits(), 0x1_0000_0000);
    }

    #[test]
    fn unknown_bits_survive_from_bits_retain() {
        let f = CloneFlags::from_bits_retain(1 << 60);
        assert!(!CloneFlags::all().contains(f));
    }
}
