//! What pidfs asks of the task list ([`PidfdBackend`]) and the plain data it answers with.

use std::sync::Arc;
use uproc_abi::{Errno, Signal, WaitStatus};
use uproc_pidns::{Pid, PidNamespace};

/// What pidfs asks of tasklist (implemented by tasklist's `System`).
///
/// pidfs calls every method WITHOUT any pidfs lock held, so an implementation may take
/// its own locks (tasklist lock, sighand) freely.
///
/// # References
/// The task side of `fs/pidfs.c`: `pid_task`, `pid_has_task`, `delay_group_leader`,
/// `do_pidfd_send_signal` in `kernel/signal.c`.
pub trait PidfdBackend: Send + Sync + 'static {
    /// What is attached to `pid` as `PIDTYPE_PID` right now.
    fn task_state(&self, pid: &Pid) -> PidTaskState;
    /// Deliver `sig` with `scope` to the task(s) attached to `pid`, sent from a task of
    /// namespace `from` (the pidfd's: the namespace of the task that opened it, for the
    /// namespace-init rule of `send_signal_locked`: an init drops SIGKILL and SIGSTOP
    /// sent from inside its namespace and takes them from an ancestor's). ESRCH if
    /// nothing is attached. A zombie (exited, not reaped) succeeds silently.
    fn send_signal(
        &self,
        pid: &Arc<Pid>,
        sig: Signal,
        scope: SignalScope,
        from: &PidNamespace,
    ) -> Result<(), Errno>;
    /// pid / tgid / ppid as `viewer` sees them, and the cgroup id; `None` once reaped.
    fn task_ids(&self, pid: &Pid, viewer: &PidNamespace) -> Option<TaskIds>;
}

/// The task attached to a pid, as pidfs needs to know it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PidTaskState {
    /// A task is attached (alive or zombie); false once reaped (`pid_has_task`).
    pub attached: bool,
    /// That task leads its thread group (`thread_group_leader`).
    pub group_leader: bool,
    /// `exit_state` is set and the task is NOT a delayed group leader (a leader whose
    /// threads still run): poll is readable.
    pub exited: bool,
    /// The status it exited with, when exited.
    pub exit_status: Option<WaitStatus>,
}

/// Which tasks a signal sent through a pidfd reaches.
///
/// # References
/// `PIDFD_SIGNAL_THREAD`, `PIDFD_SIGNAL_THREAD_GROUP`, `PIDFD_SIGNAL_PROCESS_GROUP` in
/// [pidfd_send_signal(2)](https://man7.org/linux/man-pages/man2/pidfd_send_signal.2.html).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignalScope {
    /// That thread only (`PIDTYPE_PID`).
    Thread,
    /// Its thread group (`PIDTYPE_TGID`).
    ThreadGroup,
    /// The process group whose id is the pidfd's pid (`PIDTYPE_PGID`,
    /// `kill_pgrp_info`): the one its task leads, still there after that task was
    /// reaped while members remain; ESRCH when no group has that id (the task leads
    /// none).
    ProcessGroup,
}

/// The numbers of a live (or zombie) task as one namespace sees them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskIds {
    /// `task_pid_nr_ns`.
    pub pid: i32,
    /// `task_tgid_nr_ns`.
    pub tgid: i32,
    /// `task_ppid_nr_ns` (0 where the parent is invisible).
    pub ppid: i32,
    /// `cgroup_id` of the task's cgroup.
    pub cgroupid: u64,
}
