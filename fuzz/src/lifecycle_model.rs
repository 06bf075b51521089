//! The op language and the sequential reference model of the task life cycle, shared by
//! the fuzz targets `lifecycle` and `signals` and the stable corpus replay
//! (`crates/tasklist/tests/fuzz_corpus_replay.rs`, which includes this file with
//! `#[path]`).
//!
//! An input decodes into operations on one `System`: fork (process, thread,
//! `CLONE_PARENT`, `CLONE_NEWPID`, `CLONE_AUTOREAP`, `set_tid`, exit signals, bad flag
//! combinations), exit / exit_group / death by a signal, `waitid` with any id and
//! options (always `WNOHANG`: the model is sequential; `P_PIDFD` included), kill /
//! tgkill with any target and signal (stop and continue included), setpgid / setsid,
//! the child subreaper bit, the SIGCHLD disposition, pidfds (`CLONE_PIDFD`,
//! `pidfd_open`, `pidfd_send_signal` with every scope, poll, `PIDFD_GET_INFO`) and
//! cgroups (mkdir, rmdir, `pids.max`, `CLONE_INTO_CGROUP`, `cgroup.procs`,
//! `cgroup.kill`), `unshare(CLONE_NEWPID)` / `setns`, `pid_max` writes and the root
//! namespace filled up to its `pid_max`. Every result and errno is compared with the
//! model (under `Scalable`, which hands numbers out in another order, a new task's
//! numbers are checked as legal and taken rather than predicted), and after every
//! op the invariants are checked: each task's state, parent, process group, session,
//! cgroup and pending signals; no number live twice in a namespace; `nr_allocated` =
//! numbers of unreleased tasks + numbers kept as a process group or session id; no task
//! reachable through its number after it was reaped; `pids.current` of every cgroup =
//! the tasks charged in its subtree. A teardown (kill(-1), reap everything) ends each
//! run, through the model too.
//!
//! The model is Linux's rules written down plainly over vectors (`kernel/fork.c`,
//! `kernel/exit.c`, `kernel/signal.c`, `kernel/sys.c`, `kernel/pid.c`), not a copy of
//! the crate's structures: tasks are indexes, a process is a `MGroup`, a namespace an
//! `MNs`. Tasks are bare (no signal hook): a fatal signal ends them at once.
#![allow(dead_code)]

#[path = "input_bytes.rs"]
mod input_bytes;
#[path = "system_teardown.rs"]
mod system_teardown;

use input_bytes::{Bytes, decode_ops};
use std::collections::BTreeSet;
use std::sync::Arc;
use uproc_abi::{
    CloneFlags, Errno, InfoMask, PidfdFlags, PidfdSignalFlags, Profile, Signal, WaitOptions,
    WaitStatus,
};
use uproc_cgroup::Cgroup;
use uproc_pidfs::{PidFd, PidfdInfo};
use uproc_pidns::{Pid, PidNamespace};
use uproc_tasklist::{
    ChildCode, CloneArgs, SigChld, System, SystemConfig, Task, TaskState, WaitId, WaitInfo,
};

/// Ops decoded from one input at most.
pub(crate) const MAX_OPS: usize = 96;
/// Tasks a case may create (forks beyond are skipped).
pub(crate) const MAX_TASKS: usize = 48;
/// `MAX_PID_NS_LEVEL`.
const MAX_LEVEL: usize = 32;
/// `pid_max` of the root namespace in these runs, and of every new namespace
/// (`PID_MAX_LIMIT`: a new namespace does not copy its parent's).
const ROOT_PID_MAX: i32 = 32768;
const NEW_NS_PID_MAX: i32 = 4 * 1024 * 1024;

/// Which op mix the decoder produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mix {
    /// Everything (`lifecycle`).
    All,
    /// Signal storms on a small tree: forks, kill/tgkill, stop/continue, waits, exits
    /// (`signals`).
    Signals,
}

/// How a task is named in an op: resolved when the op runs.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Who {
    /// The `n`-th task created (modulo), as the actor sees its number.
    Task(u8),
    /// A literal number.
    Nr(i32),
}

/// Who sends a signal, for a namespace init's protection (`sig_task_ignored`).
#[derive(Clone, Copy, Debug)]
enum Snd {
    /// The kernel / the runtime: from outside every namespace.
    Outside,
    /// A task.
    Task(usize),
    /// Some task of this namespace (a pidfd's sender: the namespace it was opened in).
    InNs(usize),
}

/// One operation. `actor` picks a live task (modulo the live ones, creation order).
#[derive(Clone, Debug)]
pub(crate) enum Op {
    Fork {
        actor: u8,
        flags: CloneFlags,
        exit_signal: Option<i32>,
        set_tid: Vec<Who>,
        /// With `INTO_CGROUP`: the cgroup (index modulo the cgroups made so far).
        cgroup: Option<u8>,
    },
    /// `pidfd_open(who, flags)`: bit 0 `PIDFD_THREAD`, bit 1 `PIDFD_NONBLOCK`, bit 2 an
    /// unknown flag.
    PidfdOpen {
        actor: u8,
        who: Who,
        flags: u8,
    },
    /// `pidfd_send_signal` through the `fd`-th pidfd; `scope` 0 default, 1 thread,
    /// 2 thread group, 3 process group, 4 two scopes, 5 an unknown bit.
    PidfdSignal {
        fd: u8,
        sig: i32,
        scope: u8,
    },
    /// `poll` on the `fd`-th pidfd.
    PidfdPoll {
        fd: u8,
    },
    /// `PIDFD_GET_INFO` on the `fd`-th pidfd with a mask (`InfoMask` bits).
    PidfdInfo {
        fd: u8,
        mask: u8,
    },
    /// A cgroup operation.
    Cgroup(CgOp),
    Exit {
        actor: u8,
        code: u8,
    },
    ExitGroup {
        actor: u8,
        code: u8,
    },
    ExitSignaled {
        actor: u8,
        sig: i32,
    },
    /// `kill(pid, sig)`: `pid` from `who`, negated when `group` (a process group).
    Kill {
        actor: u8,
        who: Who,
        group: bool,
        sig: i32,
    },
    Tgkill {
        actor: u8,
        who: Who,
        sig: i32,
    },
    Wait {
        actor: u8,
        id: WaitSel,
        opts: u32,
    },
    SetSigchld {
        actor: u8,
        d: u8,
    },
    Subreaper {
        actor: u8,
        on: bool,
    },
    Setsid {
        actor: u8,
    },
    Setpgid {
        actor: u8,
        pid: Who,
        pgid: Who,
    },
    /// `unshare(CLONE_NEWPID)`. `any`: the actor is the `actor`-th task created,
    /// whatever its state (a reaped one gets ESRCH), not a live one.
    Unshare {
        actor: u8,
        any: bool,
    },
    /// `setns(fd, CLONE_NEWPID)` into the `ns`-th namespace made so far (0: the root).
    Setns {
        actor: u8,
        ns: u8,
        any: bool,
    },
    /// Writes `pid_max` of the `ns`-th namespace: [`PID_MAX_VALUES`]`[v]`.
    SetPidMax {
        ns: u8,
        v: u8,
    },
    /// Another user of the root namespace takes every number `alloc_pid` still hands
    /// out there (only while its `pid_max` is at most [`FILL_LIMIT`]), and holds them
    /// to the end of the run.
    FillRoot,
}

/// The `pid_max` values a `SetPidMax` op writes (index modulo the length): both
/// bounds, just outside them, and a few small limits that make EAGAIN reachable.
const PID_MAX_VALUES: [i32; 12] = [
    301,
    302,
    300,
    0,
    -1,
    4_194_304,
    4_194_305,
    32768,
    310,
    400,
    i32::MIN,
    1024,
];

/// `FillRoot` only runs while the root namespace's `pid_max` is at most this (it costs
/// one `alloc_pid` per number).
const FILL_LIMIT: i32 = 1024;

/// Cgroup operations; `cg` is an index modulo the cgroups made so far (0: the root).
#[derive(Clone, Copy, Debug)]
pub(crate) enum CgOp {
    Mkdir {
        parent: u8,
    },
    Rmdir {
        cg: u8,
    },
    /// `pids.max`: "max" or a small number (`v - 1`).
    Max {
        cg: u8,
        v: u8,
    },
    /// `echo <who's root-namespace pid> > cgroup.procs`.
    Attach {
        cg: u8,
        who: Who,
    },
    /// `echo 1 > cgroup.kill`.
    Kill {
        cg: u8,
    },
}

/// The `WaitId` of a wait op.
#[derive(Clone, Copy, Debug)]
pub(crate) enum WaitSel {
    All,
    Pid(Who),
    Pgid(Who),
    /// `P_PIDFD` with the `n`-th pidfd.
    PidFd(u8),
}

/// The wait options an option byte's bits 0-6 select (bit 7 adds an unknown bit).
const WAIT_BITS: [WaitOptions; 7] = [
    WaitOptions::EXITED,
    WaitOptions::STOPPED,
    WaitOptions::CONTINUED,
    WaitOptions::NOWAIT,
    WaitOptions::NOTHREAD,
    WaitOptions::ALL,
    WaitOptions::CLONE,
];

/// Signals the decoder picks from (index = selector).
const SIGNALS: [i32; 12] = [
    0,
    libc::SIGKILL,
    libc::SIGTERM,
    libc::SIGSTOP,
    libc::SIGCONT,
    libc::SIGCHLD,
    libc::SIGUSR1,
    libc::SIGURG,
    libc::SIGTSTP,
    libc::SIGSEGV,
    libc::SIGWINCH,
    libc::SIGQUIT,
];

fn who(b: &mut Bytes<'_>) -> Option<Who> {
    let v = b.u8()?;
    Some(match v % 16 {
        0 => Who::Nr(0),
        1 => Who::Nr(-1),
        2 => Who::Nr(1),
        3 => Who::Nr(30000),
        4 => Who::Nr(i32::MIN),
        _ => Who::Task(v >> 4),
    })
}

fn sig(b: &mut Bytes<'_>) -> Option<i32> {
    let v = b.u8()?;
    Some(match v {
        0..=239 => SIGNALS[usize::from(v) % SIGNALS.len()],
        _ => i32::from(v) - 240 + 60, // 60..=75: the top real-time signals and beyond
    })
}

/// A case: whether the runtime init reaps the orphans it adopts, and the ops.
#[derive(Clone, Debug)]
pub(crate) struct Case {
    pub(crate) reap_orphans: bool,
    pub(crate) ops: Vec<Op>,
}

/// Decodes fuzzer bytes (first byte: `reap_orphans` in bit 0); every byte string is a
/// valid input.
pub(crate) fn decode_case(data: &[u8], mix: Mix) -> Case {
    let reap_orphans = data.first().is_some_and(|b| b & 1 == 1);
    Case {
        reap_orphans,
        ops: decode(data.get(1..).unwrap_or(&[]), mix),
    }
}

/// Decodes op bytes.
pub(crate) fn decode(data: &[u8], mix: Mix) -> Vec<Op> {
    decode_ops(data, MAX_OPS, |b| decode_op(b, mix))
}

fn decode_op(b: &mut Bytes<'_>, mix: Mix) -> Option<Op> {
    let tag = b.u8()?;
    let actor = b.u8()?;
    let kind = match mix {
        Mix::All => tag % 16,
        // forks, exits, kills, tgkills, waits only
        Mix::Signals => [0, 0, 2, 4, 5, 5, 5, 6, 6, 7, 7, 3][usize::from(tag) % 12],
    };
    Some(match kind {
        0 | 1 => {
            let f = b.u8()?;
            let mut flags = CloneFlags::empty();
            match f % 8 {
                0..=2 => {}
                3 => flags |= CloneFlags::NEW_THREAD,
                4 => flags |= CloneFlags::PARENT,
                5 => flags |= CloneFlags::NEWPID,
                6 => flags |= CloneFlags::AUTOREAP,
                _ => flags |= CloneFlags::from_bits_retain(u64::from(f >> 3) << 11),
            }
            let mut cgroup = None;
            if f % 8 != 7 && mix == Mix::All {
                if f & 0x08 != 0 {
                    flags |= CloneFlags::PIDFD;
                }
                if f & 0x10 != 0 {
                    flags |= CloneFlags::INTO_CGROUP;
                    cgroup = Some(b.u8()?);
                }
            }
            if f & 0x80 != 0 && mix == Mix::All {
                // odd combinations: a lone THREAD, SIGHAND without VM, NEWPID too
                flags |= [
                    CloneFlags::THREAD,
                    CloneFlags::SIGHAND,
                    CloneFlags::NEWPID,
                    CloneFlags::AUTOREAP,
                ][usize::from(f >> 5) & 3];
            }
            let e = b.u8()?;
            let exit_signal = match e % 8 {
                0..=2 => None,
                3 => Some(0),
                4 => Some(libc::SIGCHLD),
                _ => Some(sig(b)?),
            };
            let mut set_tid = Vec::new();
            if mix == Mix::All && e & 0x80 != 0 {
                for _ in 0..=((e >> 5) & 1) {
                    set_tid.push(who(b)?);
                }
            }
            Op::Fork {
                actor,
                flags,
                exit_signal,
                set_tid,
                cgroup,
            }
        }
        2 => Op::Exit {
            actor,
            code: b.u8()?,
        },
        3 => Op::ExitGroup {
            actor,
            code: b.u8()?,
        },
        4 => Op::ExitSignaled {
            actor,
            sig: sig(b)?,
        },
        5 | 6 if kind == 5 || tag & 0x40 == 0 => {
            let w = who(b)?;
            let s = sig(b)?;
            Op::Kill {
                actor,
                who: w,
                group: tag & 0x80 != 0,
                sig: s,
            }
        }
        6 => Op::Tgkill {
            actor,
            who: who(b)?,
            sig: sig(b)?,
        },
        7 | 8 => {
            let sel = b.u8()?;
            let id = match sel % 4 {
                _ if sel & 0x40 != 0 && mix == Mix::All => WaitSel::PidFd(b.u8()?),
                0 | 1 => WaitSel::All,
                2 => WaitSel::Pid(who(b)?),
                _ => WaitSel::Pgid(who(b)?),
            };
            let o = b.u8()?;
            let mut opts = WaitOptions::NOHANG;
            for (bit, f) in WAIT_BITS.into_iter().enumerate() {
                if o & (1 << bit) != 0 {
                    opts |= f;
                }
            }
            // The common case most of the time; the top bit adds an unknown option.
            if sel & 0x10 != 0 {
                opts |= WaitOptions::EXITED | WaitOptions::ALL;
            }
            let mut bits = opts.bits();
            if o & 0x80 != 0 {
                bits |= 0x40;
            }
            Op::Wait {
                actor,
                id,
                opts: bits,
            }
        }
        9 => Op::SetSigchld {
            actor,
            d: b.u8()? % 3,
        },
        10 => {
            let k = b.u8()?;
            match k % 4 {
                0 => Op::PidfdOpen {
                    actor,
                    who: who(b)?,
                    flags: k >> 2,
                },
                1 => Op::PidfdSignal {
                    fd: actor,
                    sig: sig(b)?,
                    scope: (k >> 2) % 6,
                },
                2 => Op::PidfdPoll { fd: actor },
                _ => Op::PidfdInfo {
                    fd: actor,
                    mask: k >> 2,
                },
            }
        }
        11 => Op::Subreaper {
            actor,
            on: b.u8()? & 1 == 1,
        },
        12 => Op::Setsid { actor },
        13 => Op::Setpgid {
            actor,
            pid: who(b)?,
            pgid: who(b)?,
        },
        14 => {
            let k = b.u8()?;
            let cg = actor;
            Op::Cgroup(match k % 8 {
                0 | 1 => CgOp::Mkdir { parent: cg },
                2 => CgOp::Rmdir { cg },
                3 | 4 => CgOp::Max { cg, v: k >> 3 },
                5 | 6 => CgOp::Attach { cg, who: who(b)? },
                _ => CgOp::Kill { cg },
            })
        }
        15 if tag & 0x80 != 0 && mix == Mix::All => {
            let k = b.u8()?;
            match k % 8 {
                0 | 1 => Op::Unshare {
                    actor,
                    any: k & 0x10 != 0,
                },
                2..=4 => Op::Setns {
                    actor,
                    ns: k >> 5,
                    any: k & 0x10 != 0,
                },
                5 | 6 => Op::SetPidMax {
                    ns: actor,
                    v: k >> 3,
                },
                _ => Op::FillRoot,
            }
        }
        _ => Op::Wait {
            actor,
            id: WaitSel::All,
            opts: (WaitOptions::NOHANG | WaitOptions::EXITED | WaitOptions::ALL).bits(),
        },
    })
}

/// Encodes a case for [`decode_case`] with [`Mix::All`] (hand-built seeds). Supported:
/// fork flags empty, `NEW_THREAD`, `PARENT`, `NEWPID`, `AUTOREAP` or one extra bit of
/// `THREAD`/`SIGHAND` alone; exit signals from the decoder's table; `Who::Task` below
/// 16; wait options without the unknown bit.
pub(crate) fn encode(case: &Case) -> Vec<u8> {
    fn extra_cg(f: u8) -> bool {
        f % 8 != 7 && f & 0x10 != 0
    }
    fn who(w: Who) -> u8 {
        match w {
            Who::Nr(0) => 0,
            Who::Nr(-1) => 1,
            Who::Nr(1) => 2,
            Who::Nr(30000) => 3,
            Who::Nr(i32::MIN) => 4,
            Who::Task(i) if i < 16 => (i << 4) | 5,
            other => panic!("{other:?} has no encoding"),
        }
    }
    fn sig(s: i32) -> u8 {
        SIGNALS
            .iter()
            .position(|&x| x == s)
            .expect("a signal of the table") as u8
    }
    let mut out = vec![u8::from(case.reap_orphans)];
    for op in &case.ops {
        match op {
            Op::Fork {
                actor,
                flags,
                exit_signal,
                set_tid,
                cgroup,
            } => {
                let extra = *flags & (CloneFlags::PIDFD | CloneFlags::INTO_CGROUP);
                let mut f: u8 = match *flags - extra {
                    f if f.is_empty() => 0,
                    f if f == CloneFlags::NEW_THREAD => 3,
                    f if f == CloneFlags::PARENT => 4,
                    f if f == CloneFlags::NEWPID => 5,
                    f if f == CloneFlags::AUTOREAP => 6,
                    f if f == CloneFlags::THREAD => 0x80,
                    f if f == CloneFlags::SIGHAND => 0x80 | (1 << 5),
                    f if f == CloneFlags::NEW_THREAD | CloneFlags::NEWPID => 0x80 | (2 << 5) | 3,
                    f if f == CloneFlags::PARENT | CloneFlags::AUTOREAP => 0x80 | (3 << 5) | 4,
                    f => panic!("{f:?} has no encoding"),
                };
                if extra.contains(CloneFlags::PIDFD) {
                    f |= 0x08;
                }
                if extra.contains(CloneFlags::INTO_CGROUP) {
                    f |= 0x10;
                }
                let (mut e, extra) = match exit_signal {
                    None => (0u8, None),
                    Some(0) => (3, None),
                    Some(s) if *s == libc::SIGCHLD => (4, None),
                    Some(s) => (5, Some(sig(*s))),
                };
                if !set_tid.is_empty() {
                    assert!(set_tid.len() <= 2, "at most two set_tid entries");
                    e |= 0x80 | (((set_tid.len() - 1) as u8) << 5);
                }
                out.extend_from_slice(&[0, *actor, f]);
                if extra_cg(f) {
                    out.push(cgroup.expect("INTO_CGROUP names a cgroup"));
                }
                out.push(e);
                out.extend(extra);
                out.extend(set_tid.iter().map(|&w| who(w)));
            }
            Op::Exit { actor, code } => out.extend_from_slice(&[2, *actor, *code]),
            Op::ExitGroup { actor, code } => out.extend_from_slice(&[3, *actor, *code]),
            Op::ExitSignaled { actor, sig: s } => out.extend_from_slice(&[4, *actor, sig(*s)]),
            Op::Kill {
                actor,
                who: w,
                group,
                sig: s,
            } => out.extend_from_slice(&[
                5 | if *group { 0x80 } else { 0 },
                *actor,
                who(*w),
                sig(*s),
            ]),
            Op::Tgkill {
                actor,
                who: w,
                sig: s,
            } => {
                out.extend_from_slice(&[6 | 0x40, *actor, who(*w), sig(*s)]);
            }
            Op::Wait { actor, id, opts } => {
                out.extend_from_slice(&[7, *actor]);
                match id {
                    WaitSel::All => out.push(0),
                    WaitSel::Pid(w) => out.extend_from_slice(&[2, who(*w)]),
                    WaitSel::Pgid(w) => out.extend_from_slice(&[3, who(*w)]),
                    WaitSel::PidFd(fd) => out.extend_from_slice(&[0x40, *fd]),
                }
                let o = WaitOptions::from_bits_retain(*opts);
                let mut b = 0u8;
                for (bit, f) in WAIT_BITS.into_iter().enumerate() {
                    if o.contains(f) {
                        b |= 1 << bit;
                    }
                }
                out.push(b);
            }
            Op::SetSigchld { actor, d } => out.extend_from_slice(&[9, *actor, *d]),
            Op::Subreaper { actor, on } => out.extend_from_slice(&[11, *actor, u8::from(*on)]),
            Op::Setsid { actor } => out.extend_from_slice(&[12, *actor]),
            Op::Setpgid { actor, pid, pgid } => {
                out.extend_from_slice(&[13, *actor, who(*pid), who(*pgid)]);
            }
            Op::PidfdOpen {
                actor,
                who: w,
                flags,
            } => {
                out.extend_from_slice(&[10, *actor, flags << 2, who(*w)]);
            }
            Op::PidfdSignal { fd, sig: s, scope } => {
                out.extend_from_slice(&[10, *fd, 1 | (scope << 2), sig(*s)]);
            }
            Op::PidfdPoll { fd } => out.extend_from_slice(&[10, *fd, 2]),
            Op::PidfdInfo { fd, mask } => out.extend_from_slice(&[10, *fd, 3 | (mask << 2)]),
            Op::Cgroup(c) => match *c {
                CgOp::Mkdir { parent } => out.extend_from_slice(&[14, parent, 0]),
                CgOp::Rmdir { cg } => out.extend_from_slice(&[14, cg, 2]),
                CgOp::Max { cg, v } => out.extend_from_slice(&[14, cg, 3 | (v << 3)]),
                CgOp::Attach { cg, who: w } => out.extend_from_slice(&[14, cg, 5, who(w)]),
                CgOp::Kill { cg } => out.extend_from_slice(&[14, cg, 7]),
            },
            Op::Unshare { actor, any } => {
                out.extend_from_slice(&[15 | 0x80, *actor, if *any { 0x10 } else { 0 }]);
            }
            Op::Setns { actor, ns, any } => {
                assert!(*ns < 8, "setns names one of the first 8 namespaces");
                let k = 2 | (ns << 5) | if *any { 0x10 } else { 0 };
                out.extend_from_slice(&[15 | 0x80, *actor, k]);
            }
            Op::SetPidMax { ns, v } => {
                assert!(*v < 32, "a pid_max selector below 32");
                out.extend_from_slice(&[15 | 0x80, *ns, 5 | (v << 3)]);
            }
            Op::FillRoot => out.extend_from_slice(&[15 | 0x80, 0, 7]),
        }
    }
    out
}

/// A thread's `exit_state`, as the model sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Running,
    /// An exited leader that is not reportable yet (threads left, or a namespace init
    /// waiting for its namespace to empty).
    Delayed,
    Zombie,
    /// Released: numbers freed (unless used as a pgrp/session id), off every list.
    Released,
}

#[derive(Debug)]
struct MTask {
    group: usize,
    leader: bool,
    /// `(namespace, number)`, outermost first.
    nums: Vec<(usize, i32)>,
    st: St,
    exiting: bool,
    status: i32,
    exit_signal: i32,
    /// Thread-directed pending signals (bit n-1).
    pending: u64,
    /// `real_parent` (a thread), for leaders.
    parent: Option<usize>,
    /// Namespace its children go to (`pid_ns_for_children`): its active one.
    ns: usize,
    /// Its cgroup (index into `Model::cgs`); charged there until released.
    cg: usize,
}

#[derive(Debug)]
struct MGroup {
    leader: usize,
    /// Unreleased non-leader threads, in creation order.
    threads: Vec<usize>,
    /// Child group leaders (tasks), list order.
    children: Vec<usize>,
    nr_live: usize,
    group_exit: Option<i32>,
    stopped: bool,
    stop_report: i32,
    cont_report: bool,
    shared: u64,
    sigchld: SigChld,
    is_subreaper: bool,
    has_child_subreaper: bool,
    /// Task whose pid is the pgrp / session id.
    pgrp: usize,
    session: usize,
    autoreap: bool,
    /// `SIGNAL_UNKILLABLE`: a namespace init (or the runtime init).
    unkillable: bool,
    zapping: bool,
    /// The thread that ended a namespace init's process: it waits in its exit for
    /// the namespace to empty (`zap_pid_ns_processes`), running, while `zapping`.
    zapper: Option<usize>,
}

impl MGroup {
    /// A new process of one live thread, `leader`, in process group `pgrp` and
    /// `session`: nothing pending, stopped or reported yet.
    fn new(leader: usize, pgrp: usize, session: usize, unkillable: bool) -> MGroup {
        MGroup {
            leader,
            threads: Vec::new(),
            children: Vec::new(),
            nr_live: 1,
            group_exit: None,
            stopped: false,
            stop_report: 0,
            cont_report: false,
            shared: 0,
            sigchld: SigChld::Default,
            is_subreaper: false,
            has_child_subreaper: false,
            pgrp,
            session,
            autoreap: false,
            unkillable,
            zapping: false,
            zapper: None,
        }
    }
}

#[derive(Debug)]
struct MNs {
    parent: Option<usize>,
    level: usize,
    pid_max: i32,
    cursor: i32,
    taken: BTreeSet<i32>,
    /// Task that is the namespace's init.
    reaper: Option<usize>,
    adding: bool,
}

/// What a run exercised (the replay checks the corpus reaches every errno).
#[derive(Clone, Debug, Default)]
pub(crate) struct Stats {
    pub(crate) outcomes: BTreeSet<String>,
    pub(crate) reaped: usize,
    pub(crate) forks: usize,
}

struct Model {
    reap_orphans: bool,
    /// `Profile::Scalable`: numbers come in another order (least recently freed first,
    /// no floor of 300 after the cursor wrapped): the model checks that each number it
    /// is given is one `alloc_pid` may hand out, and takes it.
    scalable: bool,
    tasks: Vec<MTask>,
    groups: Vec<MGroup>,
    ns: Vec<MNs>,
    cgs: Vec<MCg>,
    pidfds: Vec<MPidfd>,
}

/// A cgroup: its parent, whether removed, its `pids.max` (`None`: max).
#[derive(Debug)]
struct MCg {
    parent: Option<usize>,
    removed: bool,
    max: Option<u64>,
}

/// A pidfd: the task it names, the namespace it reports numbers in, its flags.
#[derive(Debug)]
struct MPidfd {
    task: usize,
    viewer: usize,
    thread: bool,
    nonblock: bool,
}

fn bit(sig: i32) -> u64 {
    1u64 << (sig - 1)
}

fn signal(sig: i32) -> Signal {
    Signal::new(sig).expect("valid signal")
}

fn is_fatal(sig: i32) -> bool {
    use uproc_abi::DefaultAction::{Core, Term};
    matches!(signal(sig).default_action(), Term | Core)
}

fn killed_by(sig: i32) -> i32 {
    // No task of the model sets a core limit (`Task::set_dumps_core`): no core bit.
    WaitStatus::signaled_by(signal(sig), false).raw()
}

impl Model {
    fn ns_of(&self, t: usize) -> usize {
        self.tasks[t].nums.last().expect("a number").0
    }

    /// The number of task `t` as namespace `ns` sees it (0: invisible).
    fn nr_in(&self, t: usize, ns: usize) -> i32 {
        self.tasks[t]
            .nums
            .iter()
            .find(|(n, _)| *n == ns)
            .map_or(0, |(_, nr)| *nr)
    }

    fn chain(&self, ns: usize) -> Vec<usize> {
        let mut v: Vec<usize> = std::iter::successors(Some(ns), |&n| self.ns[n].parent).collect();
        v.reverse();
        v
    }

    /// Whether the number `nr` is allocated in `ns` and by which task's pid.
    fn find_pid(&self, ns: usize, nr: i32) -> Option<usize> {
        if !self.ns[ns].taken.contains(&nr) {
            return None;
        }
        // A number is reused only after it was freed: its owner is the newest task
        // that had it.
        self.tasks.iter().rposition(|t| t.nums.contains(&(ns, nr)))
    }

    /// `find_task_by_pid_ns`: the task attached to that number (not released).
    fn find_task(&self, ns: usize, nr: i32) -> Option<usize> {
        self.find_pid(ns, nr)
            .filter(|&t| self.tasks[t].st != St::Released)
    }

    fn users(&self, t: usize) -> bool {
        self.groups
            .iter()
            .any(|g| self.tasks[g.leader].st != St::Released && (g.pgrp == t || g.session == t))
    }

    fn maybe_free(&mut self, t: usize) {
        if self.tasks[t].st == St::Released && !self.users(t) {
            for &(ns, nr) in &self.tasks[t].nums {
                self.ns[ns].taken.remove(&nr);
            }
        }
    }

    fn live_threads(&self, g: usize) -> Vec<usize> {
        let gr = &self.groups[g];
        std::iter::once(gr.leader)
            .chain(gr.threads.iter().copied())
            .filter(|&t| self.tasks[t].st == St::Running && !self.tasks[t].exiting)
            .collect()
    }

    fn is_runtime_init(&self, g: usize) -> bool {
        g == 0
    }

    // ---- fork -------------------------------------------------------------------

    fn fork(
        &mut self,
        actor: usize,
        flags: CloneFlags,
        exit_signal: Option<i32>,
        set_tid: &[i32],
        into: Option<usize>,
    ) -> Result<usize, Errno> {
        let f = flags;
        if !CloneFlags::all().contains(f) {
            return Err(Errno::EINVAL);
        }
        let exit_sig = exit_signal.is_some_and(|s| s != 0);
        let thread = f.contains(CloneFlags::THREAD);
        let parent_flag = f.contains(CloneFlags::PARENT);
        if (thread || parent_flag) && exit_sig {
            return Err(Errno::EINVAL);
        }
        if thread && f.contains(CloneFlags::NEWPID) {
            return Err(Errno::EINVAL);
        }
        if thread && !f.contains(CloneFlags::SIGHAND) {
            return Err(Errno::EINVAL);
        }
        if f.contains(CloneFlags::SIGHAND) && !f.contains(CloneFlags::VM) {
            return Err(Errno::EINVAL);
        }
        let autoreap = f.contains(CloneFlags::AUTOREAP);
        if autoreap && (thread || parent_flag || exit_sig) {
            return Err(Errno::EINVAL);
        }
        if f.contains(CloneFlags::INTO_CGROUP) != into.is_some() {
            return Err(Errno::EINVAL);
        }
        let ag = self.tasks[actor].group;
        if parent_flag && self.groups[ag].unkillable {
            return Err(Errno::EINVAL);
        }
        // copy_process: a thread cannot join another namespace than its group's;
        // copy_pid_ns: NEWPID needs pid_ns_for_children to be the active namespace.
        if self.tasks[actor].ns != self.ns_of(actor) && (thread || f.contains(CloneFlags::NEWPID)) {
            return Err(Errno::EINVAL);
        }
        // alloc_pid in the actor's namespace, or a new child of it.
        let mut ns = self.tasks[actor].ns;
        let new_ns = f.contains(CloneFlags::NEWPID);
        if new_ns && self.ns[ns].level + 1 > MAX_LEVEL {
            return Err(Errno::ENOSPC);
        }
        if new_ns {
            ns = self.push_child_ns(ns);
        }
        let nums = match self.alloc_pid(ns, set_tid) {
            Ok(n) => n,
            Err(e) => {
                if new_ns {
                    self.ns.pop();
                }
                return Err(e);
            }
        };
        // cgroup_can_fork: the target cgroup exists (ENOENT from
        // `css_tryget_online_from_dir`), a thread goes into its group's cgroup only
        // (`cgroup_attach_permissions` with `threadgroup = false`: EOPNOTSUPP), and no
        // pids.max on its way to the root is reached.
        let cg = into.unwrap_or(self.tasks[actor].cg);
        let split = thread && !self.cgs[cg].removed && cg != self.tasks[actor].cg;
        let charged = if split {
            Err(Errno::EOPNOTSUPP)
        } else {
            self.can_fork(cg)
        };
        if let Err(e) = charged {
            for &(n, nr) in &nums {
                self.ns[n].taken.remove(&nr);
            }
            // `free_pid`'s `case PIDNS_ADDING`: the failed fork was the first process
            // of a namespace with no init yet (after `unshare`): it is closed.
            let inner = &mut self.ns[ns];
            if inner.reaper.is_none() && inner.taken.is_empty() {
                inner.adding = false;
            }
            if new_ns {
                self.ns.pop();
            }
            return Err(e);
        }
        let idx = self.tasks.len();
        let inner_nr = nums.last().expect("a number").1;
        let exit_signal = if thread || autoreap {
            0
        } else if parent_flag {
            self.tasks[self.groups[ag].leader].exit_signal
        } else {
            exit_signal.unwrap_or(libc::SIGCHLD)
        };
        self.tasks.push(MTask {
            group: 0,
            leader: !thread,
            nums,
            st: St::Running,
            exiting: false,
            status: 0,
            exit_signal,
            pending: 0,
            parent: None,
            ns,
            cg,
        });
        if thread {
            self.tasks[idx].group = ag;
            self.groups[ag].threads.push(idx);
            self.groups[ag].nr_live += 1;
        } else {
            let rp = if parent_flag {
                self.tasks[self.groups[ag].leader]
                    .parent
                    .expect("not the runtime init")
            } else {
                actor
            };
            let pg = self.tasks[rp].group;
            let (pgrp, session) = (self.groups[ag].pgrp, self.groups[ag].session);
            let g = MGroup {
                has_child_subreaper: self.groups[pg].has_child_subreaper
                    || self.groups[pg].is_subreaper,
                autoreap,
                // `copy_sighand`: the caller's dispositions.
                sigchld: self.groups[ag].sigchld,
                ..MGroup::new(idx, pgrp, session, inner_nr == 1)
            };
            self.groups.push(g);
            let gi = self.groups.len() - 1;
            self.tasks[idx].group = gi;
            self.tasks[idx].parent = Some(rp);
            self.groups[pg].children.push(idx);
            if inner_nr == 1 {
                self.ns[ns].reaper = Some(idx);
            }
        }
        Ok(idx)
    }

    /// `alloc_pid`: numbers outermost first, or Linux's errno.
    fn alloc_pid(&mut self, ns: usize, set_tid: &[i32]) -> Result<Vec<(usize, i32)>, Errno> {
        let chain = self.chain(ns); // outermost first
        if set_tid.len() > chain.len() {
            return Err(Errno::EINVAL);
        }
        // Every entry is checked before any number is taken (`alloc_pid` validates
        // `set_tid` before it takes `pidmap_lock`). The runtime init holds
        // CAP_CHECKPOINT_RESTORE and children inherit it: no EPERM here.
        for (i, &n) in chain.iter().rev().enumerate() {
            if let Some(&tid) = set_tid.get(i) {
                if tid < 1 || tid >= self.ns[n].pid_max || (tid != 1 && self.ns[n].reaper.is_none())
                {
                    return Err(Errno::EINVAL);
                }
            }
        }
        // A namespace still waiting for its first process restarts its cursor, so that
        // a failed attempt to create the init does not push it past 1.
        if self.ns[ns].adding && self.ns[ns].taken.is_empty() {
            self.ns[ns].cursor = 0;
        }
        let mut got: Vec<(usize, i32)> = Vec::new();
        let mut result = Ok(());
        for (i, &n) in chain.iter().rev().enumerate() {
            let m = &self.ns[n];
            let nr = if let Some(&tid) = set_tid.get(i) {
                if m.taken.contains(&tid) {
                    result = Err(Errno::EEXIST);
                    break;
                }
                tid
            } else {
                let min = if m.cursor > 300 && !self.scalable {
                    300
                } else {
                    1
                };
                let from = m.cursor.max(min);
                // `idr_alloc_cyclic`: from the cursor to `pid_max`, then from the
                // start again, still below `pid_max` (a cursor left above a lowered
                // `pid_max` must not hand out a number at or past it).
                let found = (from..m.pid_max)
                    .find(|x| !m.taken.contains(x))
                    .or_else(|| (min..from.min(m.pid_max)).find(|x| !m.taken.contains(x)));
                let Some(nr) = found else {
                    result = Err(Errno::EAGAIN);
                    break;
                };
                // (A closed namespace, whose first process failed, answers ENOMEM
                // below instead.)
                let no_init = m.reaper.is_none() && m.adding;
                self.ns[n].cursor = nr + 1;
                // "PID 1 (init) must be created first"
                if nr != 1 && no_init {
                    result = Err(Errno::EINVAL);
                    break;
                }
                nr
            };
            self.ns[n].taken.insert(nr);
            got.push((n, nr));
        }
        if result.is_ok() && !self.ns[ns].adding {
            result = Err(Errno::ENOMEM);
        }
        if let Err(e) = result {
            for (n, nr) in got {
                self.ns[n].taken.remove(&nr);
            }
            return Err(e);
        }
        got.reverse();
        Ok(got)
    }

    /// Under `Scalable`: replaces the numbers the model picked for task `t` with those
    /// uproc gave (`nspid`, outermost first), after checking each is one `alloc_pid`
    /// may hand out: free before this fork and below its level's `pid_max`, 1 in a
    /// namespace without an init, the `set_tid` entry where one was given.
    fn adopt_numbers(&mut self, t: usize, nspid: &[i32], set_tid: &[i32]) -> Result<(), String> {
        let nums = self.tasks[t].nums.clone();
        if nspid.len() != nums.len() {
            return Err(format!("NSpid {nspid:?}, Linux {nums:?}"));
        }
        for &(n, nr) in &nums {
            self.ns[n].taken.remove(&nr);
        }
        let inner = nums.len() - 1;
        for (i, (&(n, mine), &nr)) in nums.iter().zip(nspid).enumerate() {
            let requested = set_tid.get(inner - i).copied();
            let legal = nr >= 1
                && nr < self.ns[n].pid_max
                && !self.ns[n].taken.contains(&nr)
                && requested.is_none_or(|tid| tid == nr)
                && (nr == 1) == (mine == 1);
            if !legal {
                return Err(format!(
                    "NSpid {nspid:?}: {nr} is not a number alloc_pid may hand out at level {i} (model {nums:?})"
                ));
            }
            self.ns[n].taken.insert(nr);
        }
        self.tasks[t].nums = nums
            .iter()
            .zip(nspid)
            .map(|(&(n, _), &nr)| (n, nr))
            .collect();
        Ok(())
    }

    // ---- namespaces ---------------------------------------------------------------

    /// `unshare(CLONE_NEWPID)` (`copy_pid_ns`): children go to a new child of the
    /// active namespace; EINVAL if `pid_ns_for_children` was already moved, ENOSPC
    /// past `MAX_PID_NS_LEVEL`, ESRCH for a reaped task.
    fn unshare(&mut self, t: usize) -> Result<(), Errno> {
        if self.tasks[t].st == St::Released {
            return Err(Errno::ESRCH);
        }
        let active = self.ns_of(t);
        if self.tasks[t].ns != active {
            return Err(Errno::EINVAL);
        }
        if self.ns[active].level + 1 > MAX_LEVEL {
            return Err(Errno::ENOSPC);
        }
        self.tasks[t].ns = self.push_child_ns(active);
        Ok(())
    }

    /// `create_pid_namespace`: a new child of `parent`, waiting for its init, with
    /// `pid_max` at `PID_MAX_LIMIT` (not copied from the parent).
    fn push_child_ns(&mut self, parent: usize) -> usize {
        self.ns.push(MNs {
            parent: Some(parent),
            level: self.ns[parent].level + 1,
            pid_max: NEW_NS_PID_MAX,
            cursor: 0,
            taken: BTreeSet::new(),
            reaper: None,
            adding: true,
        });
        self.ns.len() - 1
    }

    /// `setns(fd, CLONE_NEWPID)` (`pidns_install`): only the active namespace or a
    /// descendant of it (EINVAL otherwise); ESRCH for a reaped task.
    fn setns(&mut self, t: usize, target: usize) -> Result<(), Errno> {
        if self.tasks[t].st == St::Released {
            return Err(Errno::ESRCH);
        }
        if !self.chain(target).contains(&self.ns_of(t)) {
            return Err(Errno::EINVAL);
        }
        // `pid_for_children` cannot be opened before the namespace's first process.
        if self.ns[target].reaper.is_none() {
            return Err(Errno::ENOENT);
        }
        self.tasks[t].ns = target;
        Ok(())
    }

    /// `/proc/sys/kernel/pid_max` (`proc_dointvec_minmax`): [301, `PID_MAX_LIMIT`].
    fn set_pid_max(&mut self, ns: usize, v: i32) -> Result<(), Errno> {
        if !(301..=NEW_NS_PID_MAX).contains(&v) {
            return Err(Errno::EINVAL);
        }
        self.ns[ns].pid_max = v;
        Ok(())
    }

    // ---- cgroups -----------------------------------------------------------------

    fn cg_under(&self, anc: usize, mut cg: usize) -> bool {
        loop {
            if cg == anc {
                return true;
            }
            match self.cgs[cg].parent {
                Some(p) => cg = p,
                None => return false,
            }
        }
    }

    /// `pids.current`: unreleased tasks (live or zombie) charged in the subtree.
    fn pids_current(&self, cg: usize) -> u64 {
        self.tasks
            .iter()
            .filter(|t| t.st != St::Released && self.cg_under(cg, t.cg))
            .count() as u64
    }

    fn is_live(&self, t: usize) -> bool {
        self.tasks[t].st == St::Running && !self.tasks[t].exiting
    }

    /// Live members in the subtree (`populated`).
    fn populated(&self, cg: usize) -> bool {
        (0..self.tasks.len()).any(|t| self.is_live(t) && self.cg_under(cg, self.tasks[t].cg))
    }

    fn can_fork(&self, cg: usize) -> Result<(), Errno> {
        if self.cgs[cg].removed {
            return Err(Errno::ENOENT);
        }
        let mut c = Some(cg);
        while let Some(i) = c {
            if self.cgs[i]
                .max
                .is_some_and(|max| self.pids_current(i) + 1 > max)
            {
                return Err(Errno::EAGAIN);
            }
            c = self.cgs[i].parent;
        }
        Ok(())
    }

    fn cg_rmdir(&mut self, cg: usize) -> Result<(), Errno> {
        if self.cgs[cg].parent.is_none() {
            return Err(Errno::EBUSY);
        }
        if self.cgs[cg].removed {
            return Err(Errno::ENOENT);
        }
        let has_child = self.cgs.iter().any(|c| c.parent == Some(cg) && !c.removed);
        if has_child || self.populated(cg) {
            return Err(Errno::EBUSY);
        }
        self.cgs[cg].removed = true;
        Ok(())
    }

    /// `cgroup.procs` write of `pid` (a root-namespace number): every live thread of
    /// its process moves (a zombie has none: nothing moves, no error).
    fn cg_attach(&mut self, cg: usize, pid: i32) -> Result<(), Errno> {
        if self.cgs[cg].removed {
            return Err(Errno::ENOENT);
        }
        if pid < 0 {
            return Err(Errno::EINVAL);
        }
        let t = self.find_task(0, pid).ok_or(Errno::ESRCH)?;
        let g = self.tasks[t].group;
        for th in self.live_threads(g) {
            self.tasks[th].cg = cg;
        }
        Ok(())
    }

    /// `cgroup.kill`: SIGKILL, from no task, thread-directed to each leader its
    /// CSS_TASK_ITER_PROCS walk finds in the subtree: the live leaders (each kill ends
    /// its group) and the leaders that died there while a thread lives (a thread-
    /// directed signal to an exiting thread does nothing: the process survives).
    fn cg_kill(&mut self, cg: usize) -> Result<(), Errno> {
        if self.cgs[cg].parent.is_none() || self.cgs[cg].removed {
            return Err(Errno::ENOENT);
        }
        let leaders: Vec<usize> = (0..self.tasks.len())
            .filter(|&t| self.in_procs(t) && self.cg_under(cg, self.tasks[t].cg))
            .collect();
        for t in leaders {
            let g = self.tasks[t].group;
            self.deliver(g, t, libc::SIGKILL, Snd::Outside, true);
        }
        Ok(())
    }

    /// Whether `cgroup.procs` of the task's cgroup lists it (`css_task_iter` with
    /// CSS_TASK_ITER_PROCS): a live leader, or a leader that died before a thread of
    /// its group that still lives (it stays in the cgroup it died in).
    fn in_procs(&self, t: usize) -> bool {
        let mt = &self.tasks[t];
        mt.leader
            && (self.is_live(t) || (mt.st != St::Released && self.groups[mt.group].nr_live > 0))
    }

    // ---- pidfds -------------------------------------------------------------------

    fn pidfd_open(&mut self, actor: usize, nr: i32, flags: u8) -> Result<usize, Errno> {
        if flags & 4 != 0 || nr <= 0 {
            return Err(Errno::EINVAL);
        }
        let t = self.find_pid(self.ns_of(actor), nr).ok_or(Errno::ESRCH)?;
        if self.tasks[t].st == St::Released {
            return Err(Errno::ESRCH);
        }
        let thread = flags & 1 != 0;
        if !thread && !self.tasks[t].leader {
            return Err(Errno::ENOENT);
        }
        self.pidfds.push(MPidfd {
            task: t,
            viewer: self.ns_of(actor),
            thread,
            nonblock: flags & 2 != 0,
        });
        Ok(self.pidfds.len() - 1)
    }

    fn pidfd_signal(&mut self, fd: usize, sig: i32, scope: u8) -> Result<(), Errno> {
        if scope >= 4 {
            return Err(Errno::EINVAL);
        }
        let t = self.pidfds[fd].task;
        if scope == 3 {
            // `kill_pgrp_info(sig, &kinfo, pid)`: the group whose id is the pidfd's pid,
            // there or not its task (a reaped leader's group lives on in its members).
            let members = self.pgrp_members(t);
            if members.is_empty() {
                return Err(Errno::ESRCH);
            }
            self.send_many(&members, sig, Snd::InNs(self.pidfds[fd].viewer));
            return Ok(());
        }
        if self.tasks[t].st == St::Released {
            return Err(Errno::ESRCH);
        }
        let g = self.tasks[t].group;
        let thread = scope == 1 || (scope == 0 && self.pidfds[fd].thread);
        // Sent as by a task of the namespace the pidfd was opened in.
        self.deliver(g, t, sig, Snd::InNs(self.pidfds[fd].viewer), thread);
        Ok(())
    }

    /// `PIDFD_GET_INFO` as Linux answers it for pidfd `fd`.
    fn check_info(
        &self,
        fd: usize,
        mask: InfoMask,
        got: &Result<PidfdInfo, Errno>,
        cgs: &[Cgroup],
    ) -> Result<(), String> {
        let pf = &self.pidfds[fd];
        let t = &self.tasks[pf.task];
        let bad = |want: &str| Err(format!("pidfd info gave {got:?}, Linux {want}"));
        if self.nr_in(pf.task, pf.viewer) == 0 {
            return if *got == Err(Errno::EREMOTE) {
                Ok(())
            } else {
                bad("EREMOTE")
            };
        }
        let Ok(info) = got else {
            return if t.st == St::Released
                && !mask.contains(InfoMask::EXIT)
                && *got == Err(Errno::ESRCH)
            {
                Ok(())
            } else {
                bad("an answer")
            };
        };
        if t.st == St::Released {
            if !mask.contains(InfoMask::EXIT) {
                return bad("ESRCH");
            }
            if !info.mask.contains(InfoMask::EXIT) || info.exit_code != t.status {
                return bad(&format!("EXIT {:#x}", t.status));
            }
            if info.mask.contains(InfoMask::PID) {
                return bad("no PID after reap");
            }
            return Ok(());
        }
        if info.mask.contains(InfoMask::EXIT) {
            return bad("no EXIT before reap");
        }
        let leader = self.groups[t.group].leader;
        let ppid = self.tasks[leader].parent.map_or(0, |p| {
            self.nr_in(self.groups[self.tasks[p].group].leader, pf.viewer)
        });
        let want = (
            self.nr_in(pf.task, pf.viewer),
            self.nr_in(leader, pf.viewer),
            ppid,
        );
        if !info.mask.contains(InfoMask::PID) || (info.pid, info.tgid, info.ppid) != want {
            return bad(&format!("pid/tgid/ppid {want:?}"));
        }
        // Linux fills the cgroup id of a live task whatever the mask asked for.
        if !info.mask.contains(InfoMask::CGROUPID) || info.cgroupid != cgs[t.cg].id() {
            return bad(&format!("cgroup id {}", cgs[t.cg].id()));
        }
        Ok(())
    }

    // ---- exit -------------------------------------------------------------------

    fn do_group_exit(&mut self, t: usize, status: i32) {
        let g = self.tasks[t].group;
        if self.is_runtime_init(g) {
            // The runtime init never exits; another thread of it ends alone.
            self.do_exit(t, status);
            return;
        }
        let gr = &mut self.groups[g];
        let status = *gr.group_exit.get_or_insert(status);
        // `SIGNAL_GROUP_EXIT`: no stop, and no stop or continue left to report.
        gr.stopped = false;
        gr.stop_report = 0;
        gr.cont_report = false;
        for th in self.live_threads(g) {
            if th != t {
                self.tasks[th].pending |= bit(libc::SIGKILL);
                self.do_exit(th, status);
            }
        }
        self.do_exit(t, status);
    }

    fn do_exit(&mut self, t: usize, status: i32) {
        let g = self.tasks[t].group;
        if self.tasks[t].leader && self.is_runtime_init(g) {
            return;
        }
        if self.tasks[t].exiting || self.tasks[t].st != St::Running {
            return;
        }
        self.tasks[t].exiting = true;
        let leader = self.tasks[t].leader;
        let gr = &mut self.groups[g];
        gr.nr_live -= 1;
        let status = gr.group_exit.unwrap_or(status);
        let dead = gr.nr_live == 0;
        if dead {
            // synchronize_group_exit: a last thread that outlived its leader gives the
            // group its code (what wait and PIDFD_INFO_EXIT report for the leader).
            if !leader && gr.group_exit.is_none() {
                gr.group_exit = Some(status);
            }
            gr.stopped = false;
            gr.stop_report = 0;
            gr.cont_report = false;
        }
        self.tasks[t].status = status;
        // exit_notify
        let mut zap = false;
        let mut release_children = Vec::new();
        let mut reparented = Vec::new();
        if dead {
            let before = self.groups[g].children.clone();
            zap = self.forget_original_parent(t, &mut release_children);
            reparented = before
                .into_iter()
                .filter(|&c| {
                    self.tasks[c]
                        .parent
                        .is_some_and(|p| self.tasks[p].group != g)
                })
                .collect();
        } else {
            self.pass_to_live_thread(t);
        }
        let mut release_self = false;
        let mut parent_signal = None;
        if !self.tasks[t].leader && zap {
            // The thread that ended a namespace init's process waits in its exit,
            // attached (its tid still found), until the namespace empties
            // (`finish_zaps` releases it).
            self.tasks[t].st = St::Delayed;
        } else if !self.tasks[t].leader {
            self.tasks[t].st = St::Zombie; // DEAD: released below
            release_self = true;
        } else if zap || !self.groups[g].threads.is_empty() {
            self.tasks[t].st = St::Delayed;
        } else {
            release_self = self.publish_exit(t, &mut parent_signal);
        }
        // `reparent_leader`'s `kill_orphaned_pgrp(p, father)` for each child handed on.
        let (fpgrp, fsession) = (self.groups[g].pgrp, self.groups[g].session);
        for c in reparented {
            let cg = self.tasks[c].group;
            let (pgrp, session) = (self.groups[cg].pgrp, self.groups[cg].session);
            self.kill_orphaned_pgrp(pgrp, session, fpgrp, fsession, None);
        }
        self.send_exit_signal(t, parent_signal);
        for c in release_children {
            self.release(c);
        }
        if release_self {
            self.release(t);
        }
        if zap {
            // The zap ends (now or later) with the orphan check below, in `finish_zaps`.
            self.zap(t);
        } else if dead {
            self.exit_orphans_pgrp(g);
        }
    }

    /// `exit_notify`'s `kill_orphaned_pgrp(tsk->group_leader, NULL)` for the dead
    /// group `g`: right away, or for a namespace init once its zap ends (Linux asks
    /// after `zap_pid_ns_processes` returns).
    fn exit_orphans_pgrp(&mut self, g: usize) {
        let (fpgrp, fsession) = (self.groups[g].pgrp, self.groups[g].session);
        if let Some(p) = self.tasks[self.groups[g].leader].parent {
            let pg = self.tasks[p].group;
            let (ppgrp, psession) = (self.groups[pg].pgrp, self.groups[pg].session);
            self.kill_orphaned_pgrp(fpgrp, fsession, ppgrp, psession, Some(g));
        }
    }

    /// `kill_orphaned_pgrp`: the group `pgrp` (of session `session`) lost the link its
    /// parent side (`ppgrp`, `psession`) was; orphaned with a stopped member, its
    /// stopped members get SIGHUP and then all get SIGCONT from the kernel. `ignored`:
    /// the exiting process's group.
    fn kill_orphaned_pgrp(
        &mut self,
        pgrp: usize,
        session: usize,
        ppgrp: usize,
        psession: usize,
        ignored: Option<usize>,
    ) {
        if ppgrp == pgrp || psession != session {
            return;
        }
        let members: Vec<usize> = self
            .pgrp_members(pgrp)
            .into_iter()
            .filter(|&l| Some(self.tasks[l].group) != ignored)
            .collect();
        if !self.orphaned_among(pgrp, &members) {
            return;
        }
        if !members
            .iter()
            .any(|&l| self.groups[self.tasks[l].group].stopped)
        {
            return;
        }
        // SIGHUP to the stopped members only (Linux 6.18, measured), SIGCONT to all.
        let stopped: Vec<usize> = self
            .pgrp_members(pgrp)
            .into_iter()
            .filter(|&l| self.groups[self.tasks[l].group].stopped)
            .collect();
        self.send_many(&stopped, libc::SIGHUP, Snd::Outside);
        let members = self.pgrp_members(pgrp);
        self.send_many(&members, libc::SIGCONT, Snd::Outside);
    }

    /// Children of the dying group go to the new reaper. Returns whether the group is a
    /// nested namespace's init (its namespace is zapped instead).
    fn forget_original_parent(&mut self, t: usize, release: &mut Vec<usize>) -> bool {
        let g = self.tasks[t].group;
        let ns = self.ns_of(t);
        let is_init =
            self.ns[ns].level > 0 && self.ns[ns].reaper.is_some_and(|r| self.tasks[r].group == g);
        if is_init {
            self.groups[g].sigchld = SigChld::Ignore;
            self.groups[g].zapping = true;
            self.groups[g].zapper = Some(t);
            for &c in &self.groups[g].children {
                if self.tasks[c].st == St::Zombie {
                    release.push(c);
                }
            }
            return true;
        }
        if self.groups[g].children.is_empty() {
            return false;
        }
        let reaper = self.find_new_reaper(t, ns);
        if self.tasks[reaper].group == g {
            return false;
        }
        let rg = self.tasks[reaper].group;
        let adopt_autoreap = self.reap_orphans && rg == 0;
        for c in std::mem::take(&mut self.groups[g].children) {
            self.tasks[c].parent = Some(reaper);
            self.tasks[c].exit_signal = libc::SIGCHLD;
            let cg = self.tasks[c].group;
            if adopt_autoreap {
                self.groups[cg].autoreap = true;
            }
            self.groups[rg].children.push(c);
            if self.tasks[c].st == St::Zombie && self.groups[cg].threads.is_empty() {
                let mut sig = None;
                if self.notify_parent(c, &mut sig) {
                    release.push(c);
                }
            }
        }
        false
    }

    fn find_new_reaper(&self, t: usize, ns: usize) -> usize {
        let g = self.tasks[t].group;
        let init = self.ns[ns].reaper.expect("every namespace has an init");
        if self.groups[g].has_child_subreaper {
            let level = self.ns[ns].level;
            let mut p = self.tasks[self.groups[g].leader].parent;
            while let Some(r) = p {
                if self.ns[self.ns_of(r)].level != level {
                    break;
                }
                let rg = self.tasks[r].group;
                if self.groups[rg].is_subreaper {
                    if let Some(&live) = self.live_threads(rg).first() {
                        return live;
                    }
                }
                if rg == self.tasks[init].group {
                    break;
                }
                p = self.tasks[self.groups[rg].leader].parent;
            }
        }
        let ig = self.tasks[init].group;
        self.live_threads(ig).first().copied().unwrap_or(init)
    }

    fn pass_to_live_thread(&mut self, t: usize) {
        let g = self.tasks[t].group;
        let Some(&heir) = self.live_threads(g).first() else {
            return;
        };
        for c in self.groups[g].children.clone() {
            if self.tasks[c].parent == Some(t) {
                self.tasks[c].parent = Some(heir);
            }
        }
    }

    /// `do_notify_parent` without the state change: SIGCHLD queued on the parent
    /// unless ignored; another exit signal handed back to be sent. Returns whether the
    /// child autoreaps.
    fn notify_parent(&mut self, c: usize, signal: &mut Option<(usize, i32)>) -> bool {
        let cg = self.tasks[c].group;
        let mut autoreap = self.groups[cg].autoreap;
        let sig = self.tasks[c].exit_signal;
        let Some(p) = self.tasks[c].parent else {
            return true;
        };
        let pg = self.tasks[p].group;
        // A dying namespace init reaps every child, clone children included
        // (`zap_pid_ns_processes` waits with `__WALL`).
        if self.groups[pg].zapping {
            autoreap = true;
        }
        if sig == libc::SIGCHLD {
            match self.groups[pg].sigchld {
                SigChld::Ignore => autoreap = true,
                SigChld::NoCldWait => {
                    autoreap = true;
                    self.groups[pg].shared |= bit(libc::SIGCHLD);
                }
                SigChld::Default => self.groups[pg].shared |= bit(libc::SIGCHLD),
            }
        } else if sig != 0 {
            *signal = Some((p, sig));
        }
        autoreap
    }

    /// The leader becomes reportable: ZOMBIE, or released at once if it autoreaps.
    fn publish_exit(&mut self, t: usize, signal: &mut Option<(usize, i32)>) -> bool {
        let autoreap = self.notify_parent(t, signal);
        self.tasks[t].st = St::Zombie;
        autoreap
    }

    fn send_exit_signal(&mut self, child: usize, signal: Option<(usize, i32)>) {
        if let Some((p, sig)) = signal {
            let pg = self.tasks[p].group;
            self.deliver(pg, p, sig, Snd::Task(child), false);
        }
    }

    /// `release_task`.
    fn release(&mut self, t: usize) {
        let g = self.tasks[t].group;
        self.tasks[t].st = St::Released;
        let mut next = None;
        if self.tasks[t].leader {
            if let Some(p) = self.tasks[t].parent {
                let pg = self.tasks[p].group;
                self.groups[pg].children.retain(|&c| c != t);
            }
            let (pgrp, session) = (self.groups[g].pgrp, self.groups[g].session);
            self.maybe_free(pgrp);
            self.maybe_free(session);
        } else {
            self.groups[g].threads.retain(|&x| x != t);
            let l = self.groups[g].leader;
            if self.tasks[l].st == St::Delayed
                && self.groups[g].threads.is_empty()
                && !self.groups[g].zapping
            {
                let status = self.groups[g].group_exit.unwrap_or(self.tasks[l].status);
                self.tasks[l].status = status;
                let mut sig = None;
                if self.publish_exit(l, &mut sig) {
                    next = Some(l);
                }
                self.send_exit_signal(l, sig);
            }
        }
        self.maybe_free(t);
        if let Some(l) = next {
            if self.tasks[l].st == St::Zombie {
                self.release(l);
            }
        }
        self.finish_zaps();
    }

    /// `zap_pid_ns_processes`, first half.
    fn zap(&mut self, t: usize) {
        let g = self.tasks[t].group;
        let l = self.groups[g].leader;
        let ns = self.ns_of(l);
        self.ns[ns].adding = false;
        let victims: Vec<usize> = (0..self.tasks.len())
            .filter(|&v| {
                let vt = &self.tasks[v];
                vt.leader
                    && vt.st != St::Released
                    && vt.group != g
                    && vt.nums.iter().any(|(n, _)| *n == ns)
            })
            .collect();
        for v in victims {
            let vg = self.tasks[v].group;
            self.deliver(vg, v, libc::SIGKILL, Snd::Outside, false);
        }
        self.finish_zaps();
    }

    /// `zap_pid_ns_processes`, second half, for every zapping init whose namespace has
    /// emptied.
    fn finish_zaps(&mut self) {
        loop {
            // A thread other than the leader that ended the process waits attached:
            // its number counts with the init's (`init_pids` 2).
            let waiter =
                |m: &Self, g: usize| m.groups[g].zapper.filter(|&z| z != m.groups[g].leader);
            let ready = (0..self.groups.len()).find(|&g| {
                let l = self.groups[g].leader;
                let w = waiter(self, g);
                self.groups[g].zapping
                    && self.tasks[l].st == St::Delayed
                    && self.groups[g].threads.iter().all(|&x| Some(x) == w)
                    && self.ns[self.ns_of(l)].taken.len() <= 1 + usize::from(w.is_some())
            });
            let Some(g) = ready else { return };
            let l = self.groups[g].leader;
            // Released while `zapping` still holds: its release must not publish the
            // leader (done here).
            if let Some(w) = waiter(self, g) {
                self.groups[g].zapper = None;
                self.tasks[w].st = St::Zombie;
                self.release(w);
            }
            self.groups[g].zapping = false;
            self.tasks[l].status = self.groups[g].group_exit.unwrap_or(self.tasks[l].status);
            let mut sig = None;
            let release = self.publish_exit(l, &mut sig);
            self.exit_orphans_pgrp(g);
            self.send_exit_signal(l, sig);
            if release && self.tasks[l].st == St::Zombie {
                self.release(l);
            }
        }
    }

    // ---- signals ----------------------------------------------------------------

    /// Whether the unkillable group `g` drops `sig` from `sender` (`sig_task_ignored`).
    /// Whether namespace `a` is `v` or one of its ancestors.
    fn ns_is_same_or_above(&self, a: usize, mut v: usize) -> bool {
        loop {
            if v == a {
                return true;
            }
            match self.ns[v].parent {
                Some(p) => v = p,
                None => return false,
            }
        }
    }

    fn init_ignores(&self, g: usize, sig: i32, sender: Snd) -> bool {
        if sig == libc::SIGCONT || sig == libc::SIGCHLD {
            return false;
        }
        let l = self.groups[g].leader;
        let ns = self.ns_of(l);
        let force = self.ns[ns].level > 0
            && match sender {
                Snd::Outside => true,
                Snd::Task(s) => self.nr_in(s, ns) == 0,
                // A task of `v` has a number in `ns` when `ns` is `v` or above it.
                Snd::InNs(v) => !self.ns_is_same_or_above(ns, v),
            };
        !(force && (sig == libc::SIGKILL || sig == libc::SIGSTOP))
    }

    /// Delivery of `sig` to group `g` (thread `t` when `thread`).
    fn deliver(&mut self, g: usize, t: usize, sig: i32, sender: Snd, thread: bool) {
        use uproc_abi::DefaultAction as A;
        if sig == 0 {
            return;
        }
        if self.groups[g].nr_live == 0 || self.groups[g].group_exit.is_some() {
            return;
        }
        if self.groups[g].unkillable && self.init_ignores(g, sig, sender) {
            return;
        }
        let stop_sigs = [libc::SIGSTOP, libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU];
        // `complete_signal`: a thread-directed signal to an exiting thread does nothing
        // (`wants_signal` is false for `PF_EXITING`) and leaves nothing pending (Linux
        // 6.18's `/proc` shows none); SIGCONT's side effects still happen.
        let exiting_target = thread && self.tasks[t].exiting;
        match signal(sig).default_action() {
            A::Ignore => {
                if sig == libc::SIGCHLD
                    && self.groups[g].sigchld != SigChld::Ignore
                    && !exiting_target
                {
                    if thread {
                        self.tasks[t].pending |= bit(sig);
                    } else {
                        self.groups[g].shared |= bit(sig);
                    }
                }
            }
            A::Cont => {
                let mask = stop_sigs.iter().fold(0, |m, &s| m | bit(s));
                self.groups[g].shared &= !mask;
                let all: Vec<usize> = std::iter::once(self.groups[g].leader)
                    .chain(self.groups[g].threads.iter().copied())
                    .collect();
                for th in all {
                    self.tasks[th].pending &= !mask;
                }
                if self.groups[g].stopped {
                    let gr = &mut self.groups[g];
                    gr.stopped = false;
                    gr.stop_report = 0;
                    gr.cont_report = true;
                    let fatal = self.pending_fatal(g);
                    self.notify_cldstop(g);
                    if let Some(f) = fatal {
                        // `SIGNAL_GROUP_EXIT` replaces the continued flag: the parent was
                        // notified, a waiter finds no report.
                        let gr = &mut self.groups[g];
                        gr.group_exit = Some(killed_by(f));
                        gr.cont_report = false;
                        self.complete_fatal(g, killed_by(f));
                    }
                }
            }
            A::Stop => {
                self.groups[g].shared &= !bit(libc::SIGCONT);
                if exiting_target {
                    return;
                }
                // A stopped group dequeues nothing: the stop signal stays queued until
                // SIGCONT flushes it (orphaned or not; measured on Linux 6.18).
                if self.groups[g].stopped {
                    if thread {
                        self.tasks[t].pending |= bit(sig);
                    } else {
                        self.groups[g].shared |= bit(sig);
                    }
                    return;
                }
                // `get_signal`: SIGTSTP/SIGTTIN/SIGTTOU to an orphaned group are dropped.
                if sig != libc::SIGSTOP && self.pgrp_orphaned(self.groups[g].pgrp) {
                    return;
                }
                if !self.groups[g].stopped {
                    let gr = &mut self.groups[g];
                    gr.stopped = true;
                    gr.cont_report = false;
                    gr.stop_report = sig;
                    self.notify_cldstop(g);
                }
            }
            A::Term | A::Core if exiting_target => {}
            A::Term | A::Core if self.groups[g].stopped && sig != libc::SIGKILL => {
                if thread {
                    self.tasks[t].pending |= bit(sig);
                } else {
                    self.groups[g].shared |= bit(sig);
                }
            }
            A::Term | A::Core => {
                let status = killed_by(sig);
                let gr = &mut self.groups[g];
                gr.group_exit = Some(status);
                gr.shared |= bit(sig);
                gr.stopped = false;
                gr.stop_report = 0;
                gr.cont_report = false;
                self.complete_fatal(g, status);
            }
        }
    }

    /// What a continued group dies of: `dequeue_signal` takes the first woken thread's
    /// own set before the group's (threads leader first), and `next_signal` the synchronous signals
    /// (SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE, SIGSYS) before the lowest-numbered.
    fn pending_fatal(&self, g: usize) -> Option<i32> {
        let sync = [
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGILL,
            libc::SIGTRAP,
            libc::SIGFPE,
            libc::SIGSYS,
        ]
        .iter()
        .fold(0, |m, &s| m | bit(s));
        let first = |bits: u64| {
            let pick = |set: u64| (1..=64).find(|&n| set & bit(n) != 0 && is_fatal(n));
            pick(bits & sync).or_else(|| pick(bits))
        };
        // The first live thread (leader first) runs first: its own set, then the
        // group's, then the other threads' own.
        let live = self.live_threads(g);
        live.first()
            .and_then(|&th| first(self.tasks[th].pending))
            .or_else(|| first(self.groups[g].shared))
            .or_else(|| {
                live.iter()
                    .skip(1)
                    .find_map(|&th| first(self.tasks[th].pending))
            })
    }

    fn complete_fatal(&mut self, g: usize, status: i32) {
        let live = self.live_threads(g);
        for &th in &live {
            self.tasks[th].pending |= bit(libc::SIGKILL);
        }
        for th in live {
            self.do_exit(th, status);
        }
    }

    fn notify_cldstop(&mut self, g: usize) {
        let l = self.groups[g].leader;
        if let Some(p) = self.tasks[l].parent {
            let pg = self.tasks[p].group;
            if self.groups[pg].sigchld != SigChld::Ignore {
                self.groups[pg].shared |= bit(libc::SIGCHLD);
            }
        }
    }

    /// `will_become_orphaned_pgrp(pgrp, NULL)`: no member (but zombies with no thread
    /// left and children of the runtime init) has its parent in another group of the
    /// same session.
    fn pgrp_orphaned(&self, pgrp: usize) -> bool {
        self.orphaned_among(pgrp, &self.pgrp_members(pgrp))
    }

    /// [`Self::pgrp_orphaned`] over the given members of `pgrp`.
    fn orphaned_among(&self, pgrp: usize, members: &[usize]) -> bool {
        !members.iter().any(|&l| {
            let g = self.tasks[l].group;
            // (A namespace init waiting for its namespace counts: it is still in
            // `do_exit` on Linux, not a zombie.)
            if self.tasks[l].st != St::Running
                && self.groups[g].threads.is_empty()
                && !self.groups[g].zapping
            {
                return false;
            }
            let Some(p) = self.tasks[l].parent else {
                return false;
            };
            let pg = self.tasks[p].group;
            !self.is_runtime_init(pg)
                && self.groups[pg].pgrp != pgrp
                && self.groups[pg].session == self.groups[g].session
        })
    }

    /// Leaders of process group `pgrp` (a task index), not released.
    fn pgrp_members(&self, pgrp: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..self.groups.len())
            .filter(|&g| {
                self.groups[g].pgrp == pgrp && self.tasks[self.groups[g].leader].st != St::Released
            })
            .map(|g| self.groups[g].leader)
            .collect();
        // root-namespace number order, as the crate walks them (order does not change
        // the outcome: every member gets the signal)
        v.sort_by_key(|&t| self.tasks[t].nums[0].1);
        v
    }

    /// The processes `kill(pid)` from `actor` signals (leaders), or its errno.
    fn kill_targets(&self, actor: usize, pid: i32) -> Result<Vec<usize>, Errno> {
        let ns = self.ns_of(actor);
        let ag = self.tasks[actor].group;
        let nonempty = |v: Vec<usize>| {
            if v.is_empty() {
                Err(Errno::ESRCH)
            } else {
                Ok(v)
            }
        };
        if pid > 0 {
            return self.find_task(ns, pid).map(|t| vec![t]).ok_or(Errno::ESRCH);
        }
        if pid == 0 {
            return nonempty(self.pgrp_members(self.groups[ag].pgrp));
        }
        if pid == -1 {
            let mut targets: Vec<usize> = (0..self.tasks.len())
                .filter(|&t| {
                    let tt = &self.tasks[t];
                    tt.leader && tt.st != St::Released && tt.group != ag && self.nr_in(t, ns) > 1
                })
                .collect();
            targets.sort_by_key(|&t| self.nr_in(t, ns));
            return nonempty(targets);
        }
        let nr = pid.checked_neg().ok_or(Errno::ESRCH)?;
        let p = self.find_pid(ns, nr).ok_or(Errno::ESRCH)?;
        nonempty(self.pgrp_members(p))
    }

    fn kill(&mut self, actor: usize, pid: i32, sig: i32) -> Result<(), Errno> {
        let targets = self.kill_targets(actor, pid)?;
        self.send_many(&targets, sig, Snd::Task(actor));
        Ok(())
    }

    /// One signal to several processes, as `kill_something_info` / `__kill_pgrp_info`
    /// send it: every target is sent the signal (a fatal one marks its group as exiting
    /// with it) before any of them exits, because the senders hold `tasklist_lock` and
    /// an exit needs it. So a child's exit signal cannot reach a parent that is a target
    /// too before the parent got this one.
    fn send_many(&mut self, targets: &[usize], sig: i32, sender: Snd) {
        if sig == 0 || !is_fatal(sig) {
            for &t in targets {
                let g = self.tasks[t].group;
                self.deliver(g, t, sig, sender, false);
            }
            return;
        }
        let mut doomed = Vec::new();
        for &t in targets {
            let g = self.tasks[t].group;
            let gr = &self.groups[g];
            if gr.nr_live == 0 || gr.group_exit.is_some() {
                continue;
            }
            if gr.unkillable && self.init_ignores(g, sig, sender) {
                continue;
            }
            if gr.stopped && sig != libc::SIGKILL {
                self.groups[g].shared |= bit(sig);
                continue;
            }
            let gr = &mut self.groups[g];
            gr.group_exit = Some(killed_by(sig));
            gr.shared |= bit(sig);
            gr.stopped = false;
            gr.stop_report = 0;
            gr.cont_report = false;
            doomed.push(g);
        }
        for g in doomed {
            self.complete_fatal(g, killed_by(sig));
        }
    }

    /// Whether some process among `targets` has its parent process among them too.
    fn parent_and_child_among(&self, targets: &[usize]) -> bool {
        let groups: Vec<usize> = targets.iter().map(|&t| self.tasks[t].group).collect();
        targets.iter().any(|&c| {
            self.tasks[c]
                .parent
                .is_some_and(|p| groups.contains(&self.tasks[p].group))
        })
    }

    /// Whether the outcome of one signal sent to `targets` depends on the order the
    /// targets die in: some target's child (a target too) would send its parent an
    /// exit signal other than SIGCHLD.
    fn order_sensitive(&self, targets: &[usize], sig: i32) -> bool {
        if !(is_fatal(sig) || sig == libc::SIGCONT) {
            return false;
        }
        let groups: Vec<usize> = targets.iter().map(|&t| self.tasks[t].group).collect();
        targets.iter().any(|&c| {
            let ct = &self.tasks[c];
            ct.leader
                && !matches!(ct.exit_signal, 0 | libc::SIGCHLD)
                && ct
                    .parent
                    .is_some_and(|p| groups.contains(&self.tasks[p].group))
        })
    }

    fn tgkill(&mut self, actor: usize, tgid: i32, tid: i32, sig: i32) -> Result<(), Errno> {
        if tgid <= 0 || tid <= 0 {
            return Err(Errno::EINVAL);
        }
        let ns = self.ns_of(actor);
        let t = self.find_task(ns, tid).ok_or(Errno::ESRCH)?;
        let g = self.tasks[t].group;
        if self.nr_in(self.groups[g].leader, ns) != tgid {
            return Err(Errno::ESRCH);
        }
        self.deliver(g, t, sig, Snd::Task(actor), true);
        Ok(())
    }

    // ---- wait -------------------------------------------------------------------

    /// `waitid`. Several children may be ready at once; Linux reports one of them
    /// (the first on its children list), and which one is first depends on the order
    /// of earlier reparenting, which a sequential model need not copy: if `seen` (what
    /// uproc reported) is one of the ready reports, the model takes that one; otherwise
    /// its own first.
    fn wait(
        &mut self,
        actor: usize,
        id: Result<WaitTarget, Errno>,
        opts: u32,
        seen: Option<WaitInfo>,
    ) -> Result<Option<WaitInfo>, Errno> {
        let known = WaitOptions::all().bits();
        if opts & !known != 0 {
            return Err(Errno::EINVAL);
        }
        let o = WaitOptions::from_bits_retain(opts);
        if !o.intersects(WaitOptions::EXITED | WaitOptions::STOPPED | WaitOptions::CONTINUED) {
            return Err(Errno::EINVAL);
        }
        let target = id?;
        let ns = self.ns_of(actor);
        let ag = self.tasks[actor].group;
        let nowait = o.contains(WaitOptions::NOWAIT);
        let mut eligible = false;
        // (child, report) for every child with something to report, list order.
        let mut ready: Vec<(usize, WaitInfo)> = Vec::new();
        for c in self.groups[ag].children.clone() {
            let cg = self.tasks[c].group;
            match target {
                WaitTarget::All => {}
                WaitTarget::Nr(n) => {
                    if self.nr_in(c, ns) != n {
                        continue;
                    }
                }
                WaitTarget::Pgrp(p) => {
                    if self.groups[cg].pgrp != p {
                        continue;
                    }
                }
                WaitTarget::Task(t) => {
                    if c != t {
                        continue;
                    }
                }
            }
            if o.contains(WaitOptions::NOTHREAD) && self.tasks[c].parent != Some(actor) {
                continue;
            }
            let clone_child = self.tasks[c].exit_signal != libc::SIGCHLD;
            if !o.contains(WaitOptions::ALL) && clone_child != o.contains(WaitOptions::CLONE) {
                continue;
            }
            let pid = self.nr_in(c, ns);
            match self.tasks[c].st {
                St::Released => continue,
                St::Zombie => {
                    if !o.contains(WaitOptions::EXITED) {
                        continue;
                    }
                    let status = WaitStatus::from_raw(self.tasks[c].status);
                    ready.push((
                        c,
                        WaitInfo {
                            pid,
                            uid: 0,
                            status,
                            code: code_of(status),
                        },
                    ));
                }
                // `wait_consider_task`: a zombie leader whose threads live on is not
                // reaped, but its group's stop and continue are reported through it
                // ("allow access to stopped/continued state via zombie").
                St::Delayed | St::Running => {
                    eligible = true;
                    let g = &self.groups[cg];
                    if o.contains(WaitOptions::STOPPED) && g.stop_report != 0 {
                        ready.push((
                            c,
                            WaitInfo {
                                pid,
                                uid: 0,
                                status: WaitStatus::stopped_by(signal(g.stop_report)),
                                code: ChildCode::Stopped,
                            },
                        ));
                    } else if o.contains(WaitOptions::CONTINUED) && g.cont_report {
                        ready.push((
                            c,
                            WaitInfo {
                                pid,
                                uid: 0,
                                status: WaitStatus::CONTINUED,
                                code: ChildCode::Continued,
                            },
                        ));
                    }
                }
            }
        }
        let pick = ready
            .iter()
            .position(|(_, info)| Some(*info) == seen)
            .unwrap_or(0);
        if let Some(&(c, info)) = ready.get(pick) {
            if !nowait {
                let cg = self.tasks[c].group;
                match info.code {
                    ChildCode::Stopped => self.groups[cg].stop_report = 0,
                    ChildCode::Continued => self.groups[cg].cont_report = false,
                    _ => self.release(c),
                }
            }
            return Ok(Some(info));
        }
        if eligible {
            Ok(None)
        } else {
            Err(Errno::ECHILD)
        }
    }

    // ---- process groups -----------------------------------------------------------

    fn setpgid(&mut self, actor: usize, pid: i32, pgid: i32) -> Result<(), Errno> {
        // `ksys_setpgid`: `pgid` 0 means `pid` (itself the caller's when 0), and only then
        // is a negative one EINVAL: `setpgid(-n, 0)` too.
        if pgid < 0 || (pgid == 0 && pid < 0) {
            return Err(Errno::EINVAL);
        }
        let ns = self.ns_of(actor);
        let me = self.groups[self.tasks[actor].group].leader;
        let target = if pid == 0 {
            me
        } else {
            self.find_task(ns, pid).ok_or(Errno::ESRCH)?
        };
        if !self.tasks[target].leader {
            return Err(Errno::EINVAL);
        }
        let tg = self.tasks[target].group;
        let mg = self.tasks[me].group;
        if tg != mg {
            let is_child = self.tasks[target]
                .parent
                .is_some_and(|p| self.tasks[p].group == mg);
            if !is_child {
                return Err(Errno::ESRCH);
            }
            if self.groups[tg].session != self.groups[mg].session {
                return Err(Errno::EPERM);
            }
        }
        if self.groups[tg].session == target {
            return Err(Errno::EPERM);
        }
        let new_pgrp = if pgid == 0 || pgid == self.nr_in(target, ns) {
            target
        } else {
            let p = self.find_pid(ns, pgid).ok_or(Errno::EPERM)?;
            let session = self.groups[mg].session;
            let ok = self
                .pgrp_members(p)
                .iter()
                .any(|&m| self.groups[self.tasks[m].group].session == session);
            if !ok {
                return Err(Errno::EPERM);
            }
            p
        };
        let old = self.groups[tg].pgrp;
        if new_pgrp != old {
            self.groups[tg].pgrp = new_pgrp;
            self.maybe_free(old);
            self.finish_zaps();
        }
        Ok(())
    }

    fn setsid(&mut self, actor: usize) -> Result<i32, Errno> {
        let g = self.tasks[actor].group;
        let me = self.groups[g].leader;
        if !self.pgrp_members(me).is_empty() {
            return Err(Errno::EPERM);
        }
        let (op, os) = (self.groups[g].pgrp, self.groups[g].session);
        self.groups[g].pgrp = me;
        self.groups[g].session = me;
        self.maybe_free(op);
        self.maybe_free(os);
        self.finish_zaps();
        Ok(self.nr_in(me, self.ns_of(actor)))
    }

    fn set_subreaper(&mut self, actor: usize, on: bool) {
        let g = self.tasks[actor].group;
        self.groups[g].is_subreaper = on;
        if !on {
            return;
        }
        let mut stack: Vec<usize> = self.groups[g].children.clone();
        while let Some(c) = stack.pop() {
            let cg = self.tasks[c].group;
            if self.groups[cg].has_child_subreaper {
                continue;
            }
            self.groups[cg].has_child_subreaper = true;
            stack.extend(self.groups[cg].children.iter().copied());
        }
    }
}

/// Whether the harness skips a signal to several processes: SIGCONT that ends some of
/// them (on Linux the scheduler decides which dies first, so whether a parent first
/// gets its child's exit signal).
fn skip_multi_kill(m: &Model, targets: &[usize], sig: i32) -> bool {
    sig == libc::SIGCONT && m.order_sensitive(targets, sig)
}

/// A resolved wait target.
#[derive(Clone, Copy, Debug)]
enum WaitTarget {
    All,
    Nr(i32),
    /// A task index whose pid is the process group id.
    Pgrp(usize),
    /// The task a pidfd names.
    Task(usize),
}

fn code_of(status: WaitStatus) -> ChildCode {
    match status.signaled() {
        Some(_) if status.core_dumped() => ChildCode::Dumped,
        Some(_) => ChildCode::Killed,
        None => ChildCode::Exited,
    }
}

fn outcome<T>(r: &Result<T, Errno>) -> String {
    match r {
        Ok(_) => "ok".to_owned(),
        Err(e) => e.name().to_string(),
    }
}

/// Runs the ops under `profile` with orphans adopted by the runtime init reaped there
/// or not; the first divergence is the error.
pub(crate) fn run(profile: Profile, reap_orphans: bool, ops: &[Op]) -> Result<Stats, String> {
    let sys = System::new(SystemConfig {
        profile,
        pid_max: ROOT_PID_MAX,
        reap_orphans,
    })
    .map_err(|e| format!("System::new: {e}"))?;
    let init = sys.init();
    let mut real: Vec<Task> = vec![init];
    let mut m = Model {
        reap_orphans,
        scalable: profile == Profile::Scalable,
        tasks: vec![MTask {
            group: 0,
            leader: true,
            nums: vec![(0, 1)],
            st: St::Running,
            exiting: false,
            status: 0,
            exit_signal: 0,
            pending: 0,
            parent: None,
            ns: 0,
            cg: 0,
        }],
        groups: vec![MGroup::new(0, 0, 0, true)],
        ns: vec![MNs {
            parent: None,
            level: 0,
            pid_max: ROOT_PID_MAX,
            cursor: 2,
            taken: BTreeSet::from([1]),
            reaper: Some(0),
            adding: true,
        }],
        cgs: vec![MCg {
            parent: None,
            removed: false,
            max: None,
        }],
        pidfds: Vec::new(),
    };
    let mut cgs: Vec<Cgroup> = vec![sys.cgroup_root()];
    let mut pidfds: Vec<PidFd> = Vec::new();
    // The namespaces made so far, in the model's order; numbers `FillRoot` holds.
    let mut namespaces: Vec<Arc<PidNamespace>> = vec![sys.root_ns().clone()];
    let mut held: Vec<Arc<Pid>> = Vec::new();
    let mut stats = Stats::default();
    // UPROC_FUZZ_TRACE=1 prints every op and what uproc answered (for reading a seed).
    let trace = std::env::var_os("UPROC_FUZZ_TRACE").is_some();
    for (step, op) in ops.iter().enumerate() {
        let ctx = |what: String| {
            format!("{profile} reap_orphans={reap_orphans} step {step} {op:?}: {what}")
        };
        let live: Vec<usize> = (0..m.tasks.len())
            .filter(|&t| m.tasks[t].st == St::Running && !m.tasks[t].exiting)
            .collect();
        if trace {
            eprintln!("{profile} {step} live {live:?}: {op:?}");
        }
        let pick = |a: u8| live[usize::from(a) % live.len()];
        // How the actor names `who`: a task's number in its namespace, or a literal.
        let resolve = |m: &Model, actor: usize, w: Who| -> i32 {
            match w {
                Who::Nr(n) => n,
                Who::Task(i) => {
                    let t = usize::from(i) % m.tasks.len();
                    match m.nr_in(t, m.ns_of(actor)) {
                        0 => 30001,
                        n => n,
                    }
                }
            }
        };
        match op {
            Op::Fork {
                actor,
                flags,
                exit_signal,
                set_tid,
                cgroup,
            } => {
                let a = pick(*actor);
                let into = cgroup.map(|c| usize::from(c) % cgs.len());
                if m.tasks.len() >= MAX_TASKS {
                    continue;
                }
                let tids: Vec<i32> = set_tid
                    .iter()
                    .map(|&w| match w {
                        Who::Task(i) => {
                            let t = usize::from(i) % m.tasks.len();
                            m.tasks[t].nums.last().map_or(1, |x| x.1) + i32::from(i % 3)
                        }
                        Who::Nr(n) => n,
                    })
                    .collect();
                let sig = match exit_signal {
                    None => None,
                    Some(s) => match Signal::new(*s) {
                        Ok(s) => Some(s),
                        Err(_) => continue, // not a signal: the API cannot express it
                    },
                };
                let want = m.fork(a, *flags, *exit_signal, &tids, into);
                let got = real[a].fork(&CloneArgs {
                    flags: *flags,
                    set_tid: tids.clone(),
                    cgroup: into.map(|c| cgs[c].clone()),
                    exit_signal: sig,
                });
                stats.outcomes.insert(outcome(&got));
                if !held.is_empty() && matches!(got, Err(Errno::EAGAIN)) {
                    // The root namespace was filled up to its pid_max.
                    stats.outcomes.insert("pid_max:EAGAIN".into());
                }
                if trace {
                    eprintln!("{profile} {step} {op:?} -> {got:?}");
                }
                match (got, want) {
                    (Ok(t), Ok(idx)) => {
                        let want_nspid: Vec<i32> = m.tasks[idx].nums.iter().map(|x| x.1).collect();
                        if m.scalable && t.nspid() != want_nspid {
                            m.adopt_numbers(idx, &t.nspid(), &tids).map_err(ctx)?;
                        } else if t.nspid() != want_nspid {
                            return Err(ctx(format!(
                                "NSpid {:?}, Linux {want_nspid:?}",
                                t.nspid()
                            )));
                        }
                        if flags.contains(CloneFlags::PIDFD) {
                            let fd = t
                                .pidfd()
                                .ok_or_else(|| ctx("CLONE_PIDFD gave no pidfd".into()))?;
                            m.pidfds.push(MPidfd {
                                task: idx,
                                viewer: m.ns_of(a),
                                thread: flags.contains(CloneFlags::THREAD),
                                nonblock: false,
                            });
                            pidfds.push(fd);
                        } else if t.pidfd().is_some() {
                            return Err(ctx("a pidfd without CLONE_PIDFD".into()));
                        }
                        if flags.contains(CloneFlags::NEWPID) {
                            namespaces.push(t.pid_ns());
                        }
                        if t.pid_ns().id() != namespaces[m.ns_of(idx)].id() {
                            return Err(ctx(format!(
                                "the child is in namespace level {}, model level {}",
                                t.pid_ns().level(),
                                m.ns[m.ns_of(idx)].level
                            )));
                        }
                        real.push(t);
                        stats.forks += 1;
                    }
                    (Err(g), Err(w)) if g == w => {}
                    (got, want) => {
                        return Err(ctx(format!(
                            "fork gave {:?}, Linux {want:?}",
                            got.map(|t| t.nspid())
                        )));
                    }
                }
            }
            Op::Exit { actor, code } => {
                let a = pick(*actor);
                real[a].exit(i32::from(*code));
                m.do_exit(a, WaitStatus::exited_with(i32::from(*code)).raw());
            }
            Op::ExitGroup { actor, code } => {
                let a = pick(*actor);
                real[a].exit_group(i32::from(*code));
                m.do_group_exit(a, WaitStatus::exited_with(i32::from(*code)).raw());
            }
            Op::ExitSignaled { actor, sig } => {
                let a = pick(*actor);
                let Ok(s) = Signal::new(*sig) else { continue };
                real[a].exit_signaled(s);
                let status = if *sig == 0 {
                    WaitStatus::exited_with(0).raw()
                } else {
                    killed_by(*sig)
                };
                m.do_group_exit(a, status);
            }
            Op::Kill {
                actor,
                who,
                group,
                sig,
            } => {
                let a = pick(*actor);
                let nr = resolve(&m, a, *who);
                let pid = if *group { nr.wrapping_neg() } else { nr };
                let Ok(s) = Signal::new(*sig) else {
                    // Not a signal: the API cannot be asked (Signal::new refuses it).
                    continue;
                };
                if let Ok(targets) = m.kill_targets(a, pid) {
                    if skip_multi_kill(&m, &targets, *sig) {
                        continue;
                    }
                }
                let want = m.kill(a, pid, *sig);
                let got = real[a].kill(pid, s);
                stats.outcomes.insert(outcome(&got));
                if trace {
                    eprintln!("{profile} {step} {op:?} -> {got:?}");
                }
                if got != want {
                    return Err(ctx(format!("kill({pid}) gave {got:?}, Linux {want:?}")));
                }
            }
            Op::Tgkill { actor, who, sig } => {
                let a = pick(*actor);
                let tid = resolve(&m, a, *who);
                let ns = m.ns_of(a);
                let tgid = match m.find_task(ns, tid) {
                    Some(t) => m.nr_in(m.groups[m.tasks[t].group].leader, ns),
                    None => tid,
                };
                let Ok(s) = Signal::new(*sig) else { continue };
                let want = m.tgkill(a, tgid, tid, *sig);
                let got = real[a].tgkill(tgid, tid, s);
                stats.outcomes.insert(outcome(&got));
                if trace {
                    eprintln!("{profile} {step} {op:?} -> {got:?}");
                }
                if got != want {
                    return Err(ctx(format!(
                        "tgkill({tgid}, {tid}) gave {got:?}, Linux {want:?}"
                    )));
                }
            }
            Op::Wait { actor, id, opts } => {
                let a = pick(*actor);
                let ns = m.ns_of(a);
                let (real_id, target) = match *id {
                    WaitSel::All => (WaitId::All, Ok(WaitTarget::All)),
                    WaitSel::PidFd(i) => {
                        if pidfds.is_empty() {
                            continue;
                        }
                        let fd = usize::from(i) % pidfds.len();
                        (
                            WaitId::PidFd(&pidfds[fd]),
                            Ok(WaitTarget::Task(m.pidfds[fd].task)),
                        )
                    }
                    WaitSel::Pid(w) => {
                        let n = resolve(&m, a, w);
                        (
                            WaitId::Pid(n),
                            if n <= 0 {
                                Err(Errno::EINVAL)
                            } else {
                                Ok(WaitTarget::Nr(n))
                            },
                        )
                    }
                    WaitSel::Pgid(w) => {
                        let n = resolve(&m, a, w);
                        let t = if n < 0 {
                            Err(Errno::EINVAL)
                        } else if n == 0 {
                            Ok(WaitTarget::Pgrp(m.groups[m.tasks[a].group].pgrp))
                        } else {
                            m.find_pid(ns, n).map(WaitTarget::Pgrp).ok_or(Errno::ECHILD)
                        };
                        (WaitId::Pgid(n), t)
                    }
                };
                let got = real[a].wait(real_id, WaitOptions::from_bits_retain(*opts));
                let want = m.wait(a, target, *opts, got.ok().flatten());
                stats.outcomes.insert(outcome(&got));
                if trace {
                    eprintln!("{profile} {step} {op:?} -> {got:?}");
                }
                if matches!(got, Ok(Some(i)) if i.code == ChildCode::Exited || i.code == ChildCode::Killed || i.code == ChildCode::Dumped)
                    && opts & WaitOptions::NOWAIT.bits() == 0
                {
                    stats.reaped += 1;
                }
                if got != want {
                    return Err(ctx(format!("wait gave {got:?}, Linux {want:?}")));
                }
            }
            Op::PidfdOpen { actor, who, flags } => {
                let a = pick(*actor);
                let nr = resolve(&m, a, *who);
                let mut bits = PidfdFlags::empty();
                if flags & 1 != 0 {
                    bits |= PidfdFlags::THREAD;
                }
                if flags & 2 != 0 {
                    bits |= PidfdFlags::NONBLOCK;
                }
                if flags & 4 != 0 {
                    bits |= PidfdFlags::from_bits_retain(1 << 20);
                }
                let want = m.pidfd_open(a, nr, *flags & 7);
                let got = real[a].pidfd_open(nr, bits);
                stats.outcomes.insert(outcome(&got));
                if trace {
                    eprintln!("{profile} {step} {op:?} -> {:?}", got.as_ref().map(|_| ()));
                }
                match (got, want) {
                    (Ok(fd), Ok(i)) => {
                        if !Arc::ptr_eq(fd.pid(), real[m.pidfds[i].task].struct_pid()) {
                            return Err(ctx("pidfd_open opened another task".into()));
                        }
                        pidfds.push(fd);
                    }
                    (Err(g), Err(w)) if g == w => {}
                    (got, want) => {
                        return Err(ctx(format!(
                            "pidfd_open({nr}) gave {:?}, Linux {want:?}",
                            got.map(|_| ())
                        )));
                    }
                }
            }
            Op::PidfdSignal { fd, sig, scope } => {
                if pidfds.is_empty() {
                    continue;
                }
                let i = usize::from(*fd) % pidfds.len();
                let Ok(s) = Signal::new(*sig) else { continue };
                let flags = match scope {
                    0 => PidfdSignalFlags::empty(),
                    1 => PidfdSignalFlags::THREAD,
                    2 => PidfdSignalFlags::THREAD_GROUP,
                    3 => PidfdSignalFlags::PROCESS_GROUP,
                    4 => PidfdSignalFlags::THREAD | PidfdSignalFlags::PROCESS_GROUP,
                    _ => PidfdSignalFlags::from_bits_retain(1 << 9),
                };
                let t = m.pidfds[i].task;
                if *scope == 3 {
                    let members = m.pgrp_members(t);
                    if skip_multi_kill(&m, &members, *sig) {
                        continue;
                    }
                }
                let want = m.pidfd_signal(i, *sig, *scope);
                let got = pidfds[i].send_signal_with(s, flags);
                stats.outcomes.insert(outcome(&got));
                if trace {
                    eprintln!("{profile} {step} {op:?} -> {got:?}");
                }
                if got != want {
                    return Err(ctx(format!(
                        "pidfd_send_signal gave {got:?}, Linux {want:?}"
                    )));
                }
            }
            Op::PidfdPoll { fd } => {
                if pidfds.is_empty() {
                    continue;
                }
                let i = usize::from(*fd) % pidfds.len();
                let t = &m.tasks[m.pidfds[i].task];
                let got = pidfds[i].poll();
                let (readable, hangup) = (
                    matches!(t.st, St::Zombie | St::Released),
                    t.st == St::Released,
                );
                if got.readable != readable || got.hangup != hangup {
                    return Err(ctx(format!(
                        "poll gave {got:?}, Linux readable {readable} hangup {hangup}"
                    )));
                }
            }
            Op::PidfdInfo { fd, mask } => {
                if pidfds.is_empty() {
                    continue;
                }
                let i = usize::from(*fd) % pidfds.len();
                let mask = InfoMask::from_bits_retain(u64::from(*mask));
                let got = pidfds[i].info(mask);
                stats.outcomes.insert(outcome(&got));
                m.check_info(i, mask, &got, &cgs).map_err(ctx)?;
            }
            Op::Cgroup(c) => {
                let got;
                let want;
                match *c {
                    CgOp::Mkdir { parent } => {
                        let p = usize::from(parent) % cgs.len();
                        if cgs.len() >= 8 {
                            continue;
                        }
                        let name = format!("c{}", cgs.len());
                        let r = cgs[p].mkdir(&name);
                        want = if m.cgs[p].removed {
                            Err(Errno::ENOENT)
                        } else {
                            Ok(())
                        };
                        if let Ok(c) = &r {
                            cgs.push(c.clone());
                            m.cgs.push(MCg {
                                parent: Some(p),
                                removed: false,
                                max: None,
                            });
                        }
                        got = r.map(|_| ());
                    }
                    CgOp::Rmdir { cg } => {
                        let c = usize::from(cg) % cgs.len();
                        want = m.cg_rmdir(c);
                        got = cgs[c].rmdir();
                    }
                    CgOp::Max { cg, v } => {
                        let c = usize::from(cg) % cgs.len();
                        let value = match v % 8 {
                            0 => "max".to_owned(),
                            n => (n - 1).to_string(),
                        };
                        want = if m.cgs[c].removed || m.cgs[c].parent.is_none() {
                            Err(Errno::ENOENT)
                        } else {
                            m.cgs[c].max = value.parse().ok();
                            Ok(())
                        };
                        got = cgs[c].write("pids.max", &value);
                    }
                    CgOp::Attach { cg, who } => {
                        let c = usize::from(cg) % cgs.len();
                        // The number as the root namespace sees it.
                        let pid = resolve(&m, 0, who);
                        want = m.cg_attach(c, pid);
                        got = cgs[c].write("cgroup.procs", &pid.to_string());
                    }
                    CgOp::Kill { cg } => {
                        let c = usize::from(cg) % cgs.len();
                        // cgroup.kill sends SIGKILL member by member without holding
                        // off exits: on Linux, which member dies first is up to the
                        // scheduler, and when a parent and its child are both members
                        // that decides whether the child is reaped by its parent's
                        // SIGCHLD disposition, reparented first, or sends its exit
                        // signal to a living parent. uproc kills in its own member
                        // order; a model cannot say which, so such kills are skipped.
                        let leaders: Vec<usize> = (0..m.tasks.len())
                            .filter(|&t| m.is_live(t) && m.cg_under(c, m.tasks[t].cg))
                            .map(|t| m.groups[m.tasks[t].group].leader)
                            .collect();
                        if m.parent_and_child_among(&leaders) {
                            continue;
                        }
                        want = m.cg_kill(c);
                        got = cgs[c].write("cgroup.kill", "1");
                    }
                }
                stats.outcomes.insert(outcome(&got));
                if trace {
                    eprintln!("{profile} {step} {op:?} -> {got:?}");
                }
                if got != want {
                    return Err(ctx(format!("gave {got:?}, Linux {want:?}")));
                }
            }
            Op::SetSigchld { actor, d } => {
                let a = pick(*actor);
                let d =
                    [SigChld::Default, SigChld::Ignore, SigChld::NoCldWait][usize::from(*d) % 3];
                real[a].set_sigchld(d);
                let g = m.tasks[a].group;
                m.groups[g].sigchld = d;
                // `do_sigaction`: `SIG_IGN` discards a pending SIGCHLD everywhere.
                if d == SigChld::Ignore {
                    m.groups[g].shared &= !bit(libc::SIGCHLD);
                    let all: Vec<usize> = std::iter::once(m.groups[g].leader)
                        .chain(m.groups[g].threads.iter().copied())
                        .collect();
                    for t in all {
                        m.tasks[t].pending &= !bit(libc::SIGCHLD);
                    }
                }
            }
            Op::Subreaper { actor, on } => {
                let a = pick(*actor);
                real[a].set_child_subreaper(*on);
                m.set_subreaper(a, *on);
            }
            Op::Setsid { actor } => {
                let a = pick(*actor);
                let want = m.setsid(a);
                let got = real[a].setsid();
                stats.outcomes.insert(outcome(&got));
                if trace {
                    eprintln!("{profile} {step} {op:?} -> {got:?}");
                }
                if got != want {
                    return Err(ctx(format!("setsid gave {got:?}, Linux {want:?}")));
                }
            }
            Op::Unshare { actor, any } | Op::Setns { actor, any, .. } => {
                let a = if *any {
                    usize::from(*actor) % m.tasks.len()
                } else {
                    pick(*actor)
                };
                let (name, want, got) = match op {
                    Op::Setns { ns, .. } => {
                        let target = usize::from(*ns) % namespaces.len();
                        let want = m.setns(a, target);
                        ("setns", want, real[a].setns_pid(&namespaces[target]))
                    }
                    _ => {
                        let want = m.unshare(a);
                        let got = real[a].unshare_pid_ns();
                        if got.is_ok() {
                            namespaces.push(real[a].pid_ns_for_children());
                        }
                        ("unshare", want, got)
                    }
                };
                if trace {
                    eprintln!("{profile} {step} {op:?} -> {got:?}");
                }
                record_ns_op(&mut stats, name, &got, &want).map_err(ctx)?;
                if real[a].pid_ns_for_children().id() != namespaces[m.tasks[a].ns].id() {
                    return Err(ctx("pid_ns_for_children is not the model's".into()));
                }
            }
            Op::SetPidMax { ns, v } => {
                let n = usize::from(*ns) % namespaces.len();
                let value = PID_MAX_VALUES[usize::from(*v) % PID_MAX_VALUES.len()];
                let want = m.set_pid_max(n, value);
                let got = namespaces[n].set_pid_max(value);
                if trace {
                    eprintln!("{profile} {step} {op:?} -> {got:?}");
                }
                record_ns_op(&mut stats, "pid_max", &got, &want).map_err(ctx)?;
                if namespaces[n].pid_max() != m.ns[n].pid_max {
                    return Err(ctx(format!(
                        "pid_max {}, model {}",
                        namespaces[n].pid_max(),
                        m.ns[n].pid_max
                    )));
                }
            }
            Op::FillRoot => {
                if m.ns[0].pid_max > FILL_LIMIT {
                    continue;
                }
                // What alloc_pid still hands out in the root namespace, number by
                // number, until EAGAIN; uproc must give as many.
                let mut want = Vec::new();
                while let Ok(nums) = m.alloc_pid(0, &[]) {
                    want.push(nums[0].1);
                }
                let mut got = Vec::new();
                loop {
                    match uproc_pidns::alloc_pid(sys.root_ns(), &[], true) {
                        Ok(pid) => {
                            got.push(pid.nr());
                            held.push(pid);
                        }
                        Err(Errno::EAGAIN) => break,
                        Err(e) => return Err(ctx(format!("alloc_pid gave {e:?}, Linux EAGAIN"))),
                    }
                    if got.len() > want.len() {
                        break;
                    }
                }
                stats.outcomes.insert("fill".into());
                if trace {
                    eprintln!("{profile} {step} {op:?} -> {got:?}");
                }
                let (mut g, mut w) = (got.clone(), want.clone());
                g.sort_unstable();
                w.sort_unstable();
                if g != w {
                    return Err(ctx(format!("alloc_pid handed out {got:?}, Linux {want:?}")));
                }
            }
            Op::Setpgid { actor, pid, pgid } => {
                let a = pick(*actor);
                let (p, g) = (resolve(&m, a, *pid), resolve(&m, a, *pgid));
                let want = m.setpgid(a, p, g);
                let got = real[a].setpgid(p, g);
                stats.outcomes.insert(outcome(&got));
                if trace {
                    eprintln!("{profile} {step} {op:?} -> {got:?}");
                }
                if got != want {
                    return Err(ctx(format!(
                        "setpgid({p}, {g}) gave {got:?}, Linux {want:?}"
                    )));
                }
            }
        }
        check(&sys, &real, &m).map_err(ctx)?;
        check_cgroups(&real, &m, &cgs).map_err(ctx)?;
    }
    // Teardown, through the model too: init's threads exit, kill(-1, SIGKILL) from init,
    // init reaps whatever it can. What is left must be what Linux leaves (a dying
    // namespace init whose namespace still holds a number used as a process group id
    // elsewhere stays unreapable on Linux too).
    let ctx = |what: String| format!("{profile} reap_orphans={reap_orphans} teardown: {what}");
    let init_threads: Vec<usize> = (1..m.tasks.len())
        .filter(|&t| m.tasks[t].group == 0 && m.tasks[t].st == St::Running && !m.tasks[t].exiting)
        .collect();
    for t in init_threads {
        real[t].exit(0);
        m.do_exit(t, WaitStatus::exited_with(0).raw());
    }
    // Top-down: each round SIGKILLs the live processes whose parent is init or gone,
    // one kill(pid) each, so no exit signal can race a kill.
    loop {
        let tops: Vec<usize> = (0..m.tasks.len())
            .filter(|&t| {
                let g = m.tasks[t].group;
                let parent_live = m.tasks[t].parent.is_some_and(|p| {
                    let pg = m.tasks[p].group;
                    pg != 0 && m.groups[pg].nr_live > 0 && m.groups[pg].group_exit.is_none()
                });
                m.tasks[t].leader && g != 0 && m.groups[g].nr_live > 0 && !parent_live
            })
            .collect();
        if tops.is_empty() {
            break;
        }
        for t in tops {
            let nr = m.nr_in(t, 0);
            let want = m.kill(0, nr, libc::SIGKILL);
            let got = real[0].kill(nr, Signal::KILL);
            if got != want {
                return Err(ctx(format!("kill({nr}) gave {got:?}, Linux {want:?}")));
            }
        }
    }
    let opts = (WaitOptions::EXITED | WaitOptions::ALL | WaitOptions::NOHANG).bits();
    loop {
        let got = real[0].wait(WaitId::All, WaitOptions::from_bits_retain(opts));
        let want = m.wait(0, Ok(WaitTarget::All), opts, got.ok().flatten());
        if got != want {
            return Err(ctx(format!("wait gave {got:?}, Linux {want:?}")));
        }
        if !matches!(got, Ok(Some(_))) {
            break;
        }
    }
    check(&sys, &real, &m).map_err(ctx)?;
    for pid in &held {
        uproc_pidns::free_pid(pid);
    }
    Ok(stats)
}

/// Records a namespace op's outcome (also under the op's `name`, so that the replay
/// can tell which op reached an errno) and compares it with the model's.
fn record_ns_op(
    stats: &mut Stats,
    name: &str,
    got: &Result<(), Errno>,
    want: &Result<(), Errno>,
) -> Result<(), String> {
    stats.outcomes.insert(outcome(got));
    stats.outcomes.insert(format!("{name}:{}", outcome(got)));
    if got != want {
        return Err(format!("{name} gave {got:?}, Linux {want:?}"));
    }
    Ok(())
}

/// pids.current of every cgroup equals the tasks charged in its subtree; every live
/// task is in the model's cgroup.
fn check_cgroups(real: &[Task], m: &Model, cgs: &[Cgroup]) -> Result<(), String> {
    for (i, c) in cgs.iter().enumerate().skip(1) {
        if c.is_removed() != m.cgs[i].removed {
            return Err(format!(
                "cgroup {i}: removed {}, model {}",
                c.is_removed(),
                m.cgs[i].removed
            ));
        }
        if !m.cgs[i].removed && c.pids_current() != m.pids_current(i) {
            return Err(format!(
                "cgroup {i}: pids.current {}, model {} (tasks charged in the subtree)",
                c.pids_current(),
                m.pids_current(i)
            ));
        }
    }
    // `cgroup.procs` of every cgroup, as a set (the order is the link order, which
    // the model does not keep): the leaders `in_procs` finds there.
    for (i, c) in cgs.iter().enumerate() {
        if m.cgs[i].removed {
            continue;
        }
        let mut want: Vec<i32> = (0..m.tasks.len())
            .filter(|&t| m.tasks[t].cg == i && m.in_procs(t))
            .map(|t| m.tasks[t].nums[0].1)
            .collect();
        want.sort_unstable();
        let mut got: Vec<i32> = match c.read("cgroup.procs") {
            Ok(text) => text.lines().filter_map(|l| l.parse().ok()).collect(),
            Err(e) => return Err(format!("cgroup {i}: cgroup.procs read {e:?}")),
        };
        got.sort_unstable();
        if got != want {
            return Err(format!("cgroup {i}: cgroup.procs {got:?}, model {want:?}"));
        }
    }
    for (t, mt) in m.tasks.iter().enumerate() {
        if m.is_live(t) && real[t].cgroup().id() != cgs[mt.cg].id() {
            return Err(format!(
                "task {t} in cgroup {}, model {}",
                real[t].cgroup().path(),
                cgs[mt.cg].path()
            ));
        }
    }
    Ok(())
}

/// The invariants after every op.
fn check(sys: &System, real: &[Task], m: &Model) -> Result<(), String> {
    let unreleased = m.tasks.iter().filter(|t| t.st != St::Released).count();
    if sys.nr_tasks() != unreleased {
        return Err(format!(
            "{} tasks attached, model {unreleased}",
            sys.nr_tasks()
        ));
    }
    if sys.root_ns().nr_allocated() != m.ns[0].taken.len() {
        return Err(format!(
            "root nr_allocated {}, model {} (live + zombie + pgrp/session ids)",
            sys.root_ns().nr_allocated(),
            m.ns[0].taken.len()
        ));
    }
    for (i, (t, mt)) in real.iter().zip(&m.tasks).enumerate() {
        let g = &m.groups[mt.group];
        let want = match mt.st {
            // The thread that ended a namespace init's process waits (runs) in its
            // exit until the namespace empties.
            St::Delayed | St::Released | St::Running if g.zapping && g.zapper == Some(i) => {
                TaskState::Running
            }
            St::Released => TaskState::Dead,
            St::Delayed | St::Zombie => TaskState::Zombie,
            St::Running if mt.exiting => TaskState::Dead,
            St::Running if g.stopped => TaskState::Stopped,
            St::Running => TaskState::Running,
        };
        if t.state() != want {
            return Err(format!(
                "task {i} is {:?}, model {want:?} ({mt:?})",
                t.state()
            ));
        }
        let ns = sys.root_ns();
        let found = sys.find_task(ns, mt.nums[0].1);
        match mt.st {
            St::Released => {
                if found.is_some_and(|f| f == *t) {
                    return Err(format!("task {i} reachable after reap"));
                }
                continue;
            }
            _ => {
                if found.as_ref() != Some(t) {
                    return Err(format!("task {i} not found by its number {}", mt.nums[0].1));
                }
            }
        }
        if mt.leader {
            let want_ppid = mt.parent.map_or(0, |p| {
                m.nr_in(m.groups[m.tasks[p].group].leader, m.ns_of(i))
            });
            if t.ppid() != want_ppid {
                return Err(format!("task {i} ppid {}, model {want_ppid}", t.ppid()));
            }
            let ns_i = m.ns_of(i);
            let (pgid, sid) = (m.nr_in(g.pgrp, ns_i), m.nr_in(g.session, ns_i));
            if mt.st == St::Running && (t.getpgid() != pgid || t.getsid() != sid) {
                return Err(format!(
                    "task {i} pgid/sid {}/{}, model {pgid}/{sid}",
                    t.getpgid(),
                    t.getsid()
                ));
            }
        }
        if mt.st == St::Running && !mt.exiting {
            let bits = mt.pending | g.shared;
            let want: Vec<i32> = (1..=64).filter(|&n| bits & bit(n) != 0).collect();
            let got: Vec<i32> = t.pending_signals().iter().map(|s| s.raw()).collect();
            if got != want {
                return Err(format!("task {i} pending {got:?}, model {want:?}"));
            }
        }
    }
    // Every nested namespace: its numbers in use are exactly the model's.
    for (i, n) in m.ns.iter().enumerate().skip(1) {
        let Some(r) = n.reaper else { continue };
        let got = real[r].pid_ns().nr_allocated();
        if got != n.taken.len() {
            return Err(format!(
                "ns {i}: nr_allocated {got}, model {}",
                n.taken.len()
            ));
        }
    }
    Ok(())
}
