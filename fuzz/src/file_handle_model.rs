//! The op language and the reference model of pidfs file handles, shared by the fuzz
//! target `file_handle` and the stable corpus replay
//! (`crates/tasklist/tests/fuzz_corpus_replay.rs`, which includes this file with
//! `#[path]`).
//!
//! An input builds a small tree (children, a child pid namespace, pidfds opened or not,
//! exits and reaps) and pushes arbitrary handle bytes, handle types and open flags
//! through `FileHandle::from_bytes` + `System::open_by_handle`, from callers in either
//! namespace. The answer must be EINVAL (no bytes, too many, a negative handle type or
//! unknown flag bits in it, or unknown open flags), ESTALE (a handle that decodes to no
//! pid, no such pid, never had a pidfd, reaped, or invisible to the caller) or a
//! pidfd of exactly the task whose inode number the handle holds, with the flags kept
//! to `NONBLOCK | THREAD`.
#![allow(dead_code)]

#[path = "input_bytes.rs"]
mod input_bytes;
#[path = "system_teardown.rs"]
mod system_teardown;

use input_bytes::{Bytes, decode_ops};
use std::collections::BTreeMap;
use std::sync::Arc;
use uproc_abi::{CloneFlags, Errno, OpenFlags, PidfdFlags, Profile, WaitOptions};
use uproc_pidfs::FileHandle;
use uproc_tasklist::{CloneArgs, System, SystemConfig, Task, WaitId};

/// Ops decoded from one input at most.
pub(crate) const MAX_OPS: usize = 128;
/// Tasks a case may fork.
pub(crate) const MAX_TASKS: usize = 16;

/// One operation; task indexes are taken modulo the tasks created so far (index 0 is
/// the runtime init).
#[derive(Clone, Debug)]
pub(crate) enum Op {
    /// `parent` forks a child (into a new pid namespace with `newpid`).
    Fork { parent: usize, newpid: bool },
    /// init opens a pidfd on `task` (registers it with pidfs).
    OpenPidfd { task: usize },
    /// `task` exits.
    Exit { task: usize },
    /// The parent of `task` reaps it.
    Reap { task: usize },
    /// `open_by_handle_at` as `caller` with a handle built from `src`.
    Open {
        caller: usize,
        src: Source,
        handle_type: i32,
        flags: u32,
    },
}

/// Where the handle bytes come from.
#[derive(Clone, Debug)]
pub(crate) enum Source {
    /// The inode number of `task`, XOR `flip` (0: the exact handle).
    Task { task: usize, flip: u64 },
    /// Raw bytes.
    Raw(Vec<u8>),
}

/// Flag words the fuzzer would take long to assemble.
fn flags_of(sel: u8, b: &mut Bytes<'_>) -> Option<u32> {
    let known = [
        0,
        PidfdFlags::NONBLOCK.bits(),
        PidfdFlags::THREAD.bits(),
        OpenFlags::RDWR.bits() | OpenFlags::CLOEXEC.bits(),
        OpenFlags::WRONLY.bits() | PidfdFlags::NONBLOCK.bits(),
        1 << 30,
    ];
    Some(match sel % 8 {
        6 | 7 => b.u32()?,
        i => known[usize::from(i)],
    })
}

/// Decodes fuzzer bytes; every byte string is a valid input.
pub(crate) fn decode(data: &[u8]) -> Vec<Op> {
    decode_ops(data, MAX_OPS, decode_op)
}

fn decode_op(b: &mut Bytes<'_>) -> Option<Op> {
    let tag = b.u8()?;
    let a = usize::from(b.u8()?);
    Some(match tag % 8 {
        0 => Op::Fork {
            parent: a,
            newpid: tag & 0x80 != 0,
        },
        1 => Op::OpenPidfd { task: a },
        2 => Op::Exit { task: a },
        3 => Op::Reap { task: a },
        _ => {
            let caller = usize::from(b.u8()?);
            let sel = b.u8()?;
            let src = if sel & 1 == 0 {
                let flip = match (sel >> 1) % 4 {
                    0 | 1 => 0,
                    2 => u64::from(b.u8()?),
                    _ => 1 << (b.u8()? % 64),
                };
                Source::Task { task: a, flip }
            } else {
                let len = (sel >> 1) % 12;
                let mut v = Vec::with_capacity(len.into());
                for _ in 0..len {
                    v.push(b.u8()?);
                }
                Source::Raw(v)
            };
            let handle_type = if sel & 0x80 == 0 {
                FileHandle::TYPE_KERNFS
            } else {
                i32::from(b.u8()?) - 1
            };
            let fsel = b.u8()?;
            Op::Open {
                caller,
                src,
                handle_type,
                flags: flags_of(fsel, b)?,
            }
        }
    })
}

/// One task as the model sees it.
#[derive(Debug)]
struct MTask {
    /// Task index of the parent (none for init).
    parent: Option<usize>,
    /// The namespace level-path: the namespace ids from the root inwards.
    ns_path: Vec<usize>,
    exited: bool,
    reaped: bool,
    /// A pidfd was opened on it while it was not reaped (`pidfs` registered it).
    registered: bool,
}

/// What a run exercised.
#[derive(Clone, Debug, Default)]
pub(crate) struct Stats {
    pub(crate) opened: usize,
    pub(crate) estale: usize,
    pub(crate) einval: usize,
}

/// Runs the ops under `profile`; the first divergence is the error.
pub(crate) fn run(profile: Profile, ops: &[Op]) -> Result<Stats, String> {
    let sys = System::new(SystemConfig {
        profile,
        reap_orphans: false,
        ..SystemConfig::default()
    })
    .map_err(|e| format!("System::new: {e}"))?;
    let mut tasks: Vec<Task> = vec![sys.init()];
    let mut model = vec![MTask {
        parent: None,
        ns_path: vec![0],
        exited: false,
        reaped: false,
        registered: false,
    }];
    let mut next_ns = 1;
    // ino -> task index, for every pid ever allocated in this run.
    let mut by_ino: BTreeMap<u64, usize> = BTreeMap::new();
    by_ino.insert(tasks[0].struct_pid().ino(), 0);
    let mut stats = Stats::default();
    for (step, op) in ops.iter().enumerate() {
        let ctx = |what: String| format!("{profile} step {step} {op:?}: {what}");
        match op {
            Op::Fork { parent, newpid } => {
                let p = parent % tasks.len();
                if tasks.len() >= MAX_TASKS || model[p].exited {
                    continue;
                }
                let flags = if *newpid {
                    CloneFlags::NEWPID
                } else {
                    CloneFlags::empty()
                };
                let child = tasks[p]
                    .fork(&CloneArgs {
                        flags,
                        ..CloneArgs::default()
                    })
                    .map_err(|e| ctx(format!("fork of a live task failed: {e}")))?;
                let mut ns_path = model[p].ns_path.clone();
                if *newpid {
                    ns_path.push(next_ns);
                    next_ns += 1;
                }
                by_ino.insert(child.struct_pid().ino(), tasks.len());
                tasks.push(child);
                model.push(MTask {
                    parent: Some(p),
                    ns_path,
                    exited: false,
                    reaped: false,
                    registered: false,
                });
            }
            Op::OpenPidfd { task } => {
                let t = task % tasks.len();
                let pid = tasks[0].pid_of(&tasks[t]);
                let got = tasks[0].pidfd_open(pid, PidfdFlags::empty());
                match (&got, model[t].reaped) {
                    (Ok(fd), false) if Arc::ptr_eq(fd.pid(), tasks[t].struct_pid()) => {
                        model[t].registered = true;
                    }
                    (Err(_), true) => {}
                    _ => return Err(ctx(format!("pidfd_open gave {got:?}"))),
                }
            }
            Op::Exit { task } => {
                let t = task % tasks.len();
                if t == 0 {
                    continue;
                }
                tasks[t].exit(3);
                if !model[t].exited {
                    model[t].exited = true;
                    // A namespace init's death kills its namespace: every other task
                    // in it dies and is reaped at once (the dying init autoreaps).
                    let parent_depth = model[model[t].parent.unwrap_or(0)].ns_path.len();
                    if model[t].ns_path.len() > parent_depth {
                        let ns = *model[t].ns_path.last().unwrap_or(&0);
                        for (i, m) in model.iter_mut().enumerate() {
                            if i != t && m.ns_path.contains(&ns) {
                                m.exited = true;
                                m.reaped = true;
                            }
                        }
                    }
                }
            }
            Op::Reap { task } => {
                let t = task % tasks.len();
                // Reap every exited child of t's parent that the parent can see.
                let Some(p) = model[t].parent else { continue };
                if model[p].exited {
                    continue;
                }
                let pid = tasks[p].pid_of(&tasks[t]);
                if pid == 0 || !model[t].exited || model[t].reaped {
                    continue;
                }
                let got =
                    tasks[p].wait(WaitId::Pid(pid), WaitOptions::EXITED | WaitOptions::NOHANG);
                if let Ok(Some(info)) = got {
                    if info.pid != pid {
                        return Err(ctx(format!("reaped {} instead of {pid}", info.pid)));
                    }
                    model[t].reaped = true;
                }
            }
            Op::Open {
                caller,
                src,
                handle_type,
                flags,
            } => {
                let c = caller % tasks.len();
                if model[c].exited {
                    continue;
                }
                let bytes = match src {
                    Source::Task { task, flip } => (tasks[task % tasks.len()].struct_pid().ino()
                        ^ flip)
                        .to_le_bytes()
                        .to_vec(),
                    Source::Raw(v) => v.clone(),
                };
                let got = FileHandle::from_bytes(*handle_type, &bytes).and_then(|h| {
                    sys.open_by_handle(&tasks[c], &h, PidfdFlags::from_bits_retain(*flags))
                });
                let allowed = PidfdFlags::all().bits()
                    | OpenFlags::WRONLY.bits()
                    | OpenFlags::RDWR.bits()
                    | OpenFlags::CLOEXEC.bits();
                // `handle_to_path`: EINVAL for no bytes, more than MAX_HANDLE_SZ, a
                // negative type or unknown flag bits in it; the open flags (EINVAL);
                // then `pidfs_fh_to_dentry`: another type, under two words or inode 0
                // decode to nothing (ESTALE); bytes past the eighth are not read.
                let malformed = bytes.is_empty()
                    || bytes.len() > FileHandle::MAX_BYTES
                    || *handle_type < 0
                    || (*handle_type as u32 & 0xffff_0000) & !0x0003_0000 != 0;
                let ino = match bytes.first_chunk::<8>() {
                    Some(b) if (*handle_type as u32 & 0xffff) == FileHandle::TYPE_KERNFS as u32 => {
                        u64::from_le_bytes(*b)
                    }
                    _ => 0,
                };
                let want: Result<usize, Errno> = match ino {
                    _ if malformed => Err(Errno::EINVAL),
                    _ if flags & !allowed != 0 => Err(Errno::EINVAL),
                    0 => Err(Errno::ESTALE),
                    ino => match by_ino.get(&ino) {
                        None => Err(Errno::ESTALE),
                        Some(&t) => {
                            let m = &model[t];
                            // Visible: the caller's namespace is on the task's path.
                            let caller_ns = *model[c].ns_path.last().unwrap_or(&0);
                            if !m.registered || m.reaped || !m.ns_path.contains(&caller_ns) {
                                Err(Errno::ESTALE)
                            } else {
                                Ok(t)
                            }
                        }
                    },
                };
                match (&got, want) {
                    (Ok(fd), Ok(t)) => {
                        if !Arc::ptr_eq(fd.pid(), tasks[t].struct_pid()) {
                            return Err(ctx("the handle opened another task".into()));
                        }
                        let keep = flags & PidfdFlags::all().bits();
                        if fd.flags().bits() != keep {
                            return Err(ctx(format!("flags {:?}, want {keep:#x}", fd.flags())));
                        }
                        stats.opened += 1;
                    }
                    (Err(g), Err(w)) if *g == w => {
                        if w == Errno::ESTALE {
                            stats.estale += 1;
                        } else {
                            stats.einval += 1;
                        }
                    }
                    (got, want) => {
                        return Err(ctx(format!("open_by_handle gave {got:?}, want {want:?}")));
                    }
                }
            }
        }
    }
    system_teardown::teardown(&sys, &[]).map_err(|e| format!("{profile}: {e}"))?;
    Ok(stats)
}
