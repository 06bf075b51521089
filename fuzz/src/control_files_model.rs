//! The op language and the reference model of the cgroup control files, shared by the
//! fuzz target `control_files` and the stable corpus replay
//! (`crates/tasklist/tests/fuzz_corpus_replay.rs`, which includes this file with
//! `#[path]`).
//!
//! An input writes arbitrary (ASCII) bytes to every control file of a small cgroup tree,
//! reads every file back, creates cgroups with arbitrary names and removes them, and
//! forks into them; the model says what cgroupfs answers: `kstrtoll(buf, 0)` after
//! `strstrip` exactly as `lib/kstrtox.c` parses (written here from the kernel's rules,
//! not from the crate's parser), `pids.max` bounds, which files exist where, EINVAL for
//! the wrong direction (as root), a write of nothing succeeding, mkdir's VFS path
//! walk, ENOENT for a removed cgroup, and the pids counters.
#![allow(dead_code)]

#[path = "input_bytes.rs"]
mod input_bytes;

use input_bytes::{Bytes, decode_ops};
use std::collections::BTreeSet;
use std::sync::Arc;
use uproc_abi::{CloneFlags, Errno, Profile, WaitOptions};
use uproc_cgroup::Cgroup;
use uproc_tasklist::{CloneArgs, System, SystemConfig, Task, WaitId};

/// Ops decoded from one input at most (bounds the work per input).
pub(crate) const MAX_OPS: usize = 48;
/// Cgroups a case may create.
pub(crate) const MAX_CGROUPS: usize = 12;
/// Tasks a case may fork.
pub(crate) const MAX_TASKS: usize = 24;

/// The control files, in selector order; a selector past the end names an arbitrary
/// (mostly nonexistent) file.
pub(crate) const FILES: [&str; 10] = [
    "cgroup.procs",
    "cgroup.threads",
    "cgroup.events",
    "cgroup.kill",
    "cgroup.type",
    "pids.max",
    "pids.current",
    "pids.peak",
    "pids.events",
    "pids.events.local",
];

/// One operation; cgroup and task indexes are taken modulo what exists.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    /// `echo value > cg/file`.
    Write {
        cg: usize,
        file: String,
        value: String,
    },
    /// `cat cg/file`.
    Read { cg: usize, file: String },
    /// `mkdir cg/name`.
    Mkdir { cg: usize, name: String },
    /// `rmdir cg`.
    Rmdir { cg: usize },
    /// init forks a child with `CLONE_INTO_CGROUP` `cg`.
    Fork { cg: usize },
    /// `echo <pid of task> > cg/cgroup.procs` with a well-formed pid.
    Move { cg: usize, task: usize },
}

/// A length byte then that many bytes, as ASCII (the API takes `&str`; the high bit
/// is dropped so every byte is one character).
fn text(b: &mut Bytes<'_>, max: u8) -> Option<String> {
    let len = b.u8()? % (max + 1);
    let mut s = String::with_capacity(len.into());
    for _ in 0..len {
        s.push(char::from(b.u8()? & 0x7f));
    }
    Some(s)
}

fn file_name(b: &mut Bytes<'_>) -> Option<String> {
    let sel = usize::from(b.u8()?);
    Some(match FILES.get(sel % 12) {
        Some(f) => (*f).to_owned(),
        None if sel % 12 == 10 => text(b, 20)?,
        None => format!("{}\n", FILES[sel % FILES.len()]),
    })
}

/// Values the fuzzer would take long to find, picked by a selector byte.
pub(crate) const VALUES: [&str; 16] = [
    "max",
    "0",
    "1",
    "2",
    "5\n",
    " 3 ",
    "0x10",
    "010",
    "08",
    "-1",
    "4194304",
    "4194305",
    "9223372036854775808",
    "-9223372036854775809",
    "+7",
    "0x",
];

/// Decodes fuzzer bytes into ops; every byte string is a valid input.
pub(crate) fn decode(data: &[u8]) -> Vec<Op> {
    decode_ops(data, MAX_OPS, decode_op)
}

fn decode_op(b: &mut Bytes<'_>) -> Option<Op> {
    let tag = b.u8()?;
    let cg = usize::from(b.u8()?);
    Some(match tag % 8 {
        0 | 1 => {
            let file = file_name(b)?;
            let v = b.u8()?;
            let value = if v & 0x80 != 0 {
                VALUES[usize::from(v) % VALUES.len()].to_owned()
            } else {
                text(b, 24)?
            };
            Op::Write { cg, file, value }
        }
        2 => Op::Read {
            cg,
            file: file_name(b)?,
        },
        3 => Op::Mkdir {
            cg,
            name: text(b, 40)?,
        },
        4 => Op::Rmdir { cg },
        5 => Op::Fork { cg },
        6 => Op::Move {
            cg,
            task: usize::from(b.u8()?),
        },
        _ => Op::Read {
            cg,
            file: "pids.current".to_owned(),
        },
    })
}

/// Encodes ops for [`decode`] (hand-built seeds). Texts must be ASCII without 0x0b and
/// at most the decoder's length; `Write` values are always sent as text.
pub(crate) fn encode(ops: &[Op]) -> Vec<u8> {
    fn text(out: &mut Vec<u8>, s: &str) {
        out.push(u8::try_from(s.len()).expect("short text"));
        out.extend_from_slice(s.as_bytes());
    }
    fn file(out: &mut Vec<u8>, f: &str) {
        match FILES.iter().position(|k| *k == f) {
            Some(i) => out.push(i as u8),
            None => {
                out.push(10);
                text(out, f);
            }
        }
    }
    let mut out = Vec::new();
    for op in ops {
        match op {
            Op::Write { cg, file: f, value } => {
                out.extend_from_slice(&[0, *cg as u8]);
                file(&mut out, f);
                out.push(0); // a text value, not one of VALUES
                text(&mut out, value);
            }
            Op::Read { cg, file: f } => {
                out.extend_from_slice(&[2, *cg as u8]);
                file(&mut out, f);
            }
            Op::Mkdir { cg, name } => {
                out.extend_from_slice(&[3, *cg as u8]);
                text(&mut out, name);
            }
            Op::Rmdir { cg } => out.extend_from_slice(&[4, *cg as u8]),
            Op::Fork { cg } => out.extend_from_slice(&[5, *cg as u8]),
            Op::Move { cg, task } => out.extend_from_slice(&[6, *cg as u8, *task as u8]),
        }
    }
    out
}

/// The kernel's `isspace` over ASCII: space, `\t`, `\n`, `\v`, `\f`, `\r`.
fn kernel_isspace(c: u8) -> bool {
    c == b' ' || (9..=13).contains(&c)
}

/// `strstrip`.
fn strstrip(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|&c| !kernel_isspace(c))
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|&c| !kernel_isspace(c))
        .map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

/// `_kstrtoull(s, 0)`: `_parse_integer_fixup_radix`, `_parse_integer`, one optional
/// trailing newline.
fn kstrtoull_raw(s: &[u8]) -> Result<u64, Errno> {
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    let (base, mut i) = if at(0) == b'0' {
        if at(1).eq_ignore_ascii_case(&b'x') && at(2).is_ascii_hexdigit() {
            (16u64, 2)
        } else {
            (8, 0)
        }
    } else {
        (10, 0)
    };
    let (mut res, mut overflow, start) = (0u64, false, i);
    while i < s.len() {
        let c = s[i];
        let val = match c {
            b'0'..=b'9' => u64::from(c - b'0'),
            _ if (b'a'..=b'f').contains(&c.to_ascii_lowercase()) => {
                u64::from(c.to_ascii_lowercase() - b'a' + 10)
            }
            _ => break,
        };
        if val >= base {
            break;
        }
        match res.checked_mul(base).and_then(|r| r.checked_add(val)) {
            Some(r) => res = r,
            None => {
                overflow = true;
                res = res.wrapping_mul(base).wrapping_add(val);
            }
        }
        i += 1;
    }
    if overflow {
        return Err(Errno::ERANGE);
    }
    if i == start {
        return Err(Errno::EINVAL);
    }
    if at(i) == b'\n' {
        i += 1;
    }
    if i < s.len() {
        return Err(Errno::EINVAL);
    }
    Ok(res)
}

/// `kstrtoll(s, 0)`.
pub(crate) fn kstrtoll(s: &[u8]) -> Result<i64, Errno> {
    if let Some(rest) = s.strip_prefix(b"-") {
        let v = kstrtoull_raw(rest)?;
        if v > 1u64 << 63 {
            return Err(Errno::ERANGE);
        }
        Ok((v as i64).wrapping_neg())
    } else {
        let v = kstrtoull_raw(s.strip_prefix(b"+").unwrap_or(s))?;
        i64::try_from(v).map_err(|_| Errno::ERANGE)
    }
}

/// `kstrtoint(s, 0)`.
fn kstrtoint(s: &[u8]) -> Result<i32, Errno> {
    i32::try_from(kstrtoll(s)?).map_err(|_| Errno::ERANGE)
}

/// `PID_MAX_LIMIT`; `pids.max` accepts `0..=PID_MAX_LIMIT`.
const PIDS_LIMIT: i64 = 4 * 1024 * 1024;

/// One cgroup as the model sees it.
#[derive(Debug)]
struct MCg {
    name: String,
    parent: Option<usize>,
    removed: bool,
    /// `None`: `max`.
    max: Option<i64>,
}

/// One task (index 0 is the runtime init): its cgroup, whether it was killed (a zombie
/// until reaped).
#[derive(Debug)]
struct MTask {
    cg: usize,
    dead: bool,
}

struct World {
    sys: Arc<System>,
    init: Task,
    cgs: Vec<Cgroup>,
    mcgs: Vec<MCg>,
    tasks: Vec<Task>,
    mtasks: Vec<MTask>,
}

/// What a run exercised, so the replay can check the corpus reaches every answer.
#[derive(Clone, Debug, Default)]
pub(crate) struct Stats {
    /// Errno names returned (and expected), plus `"ok"`.
    pub(crate) outcomes: BTreeSet<String>,
}

impl World {
    fn is_ancestor_or_self(&self, anc: usize, mut cg: usize) -> bool {
        loop {
            if cg == anc {
                return true;
            }
            match self.mcgs[cg].parent {
                Some(p) => cg = p,
                None => return false,
            }
        }
    }

    /// `pids.current`: live and zombie tasks charged in the subtree.
    fn current(&self, cg: usize) -> usize {
        self.mtasks
            .iter()
            .filter(|t| self.is_ancestor_or_self(cg, t.cg))
            .count()
    }

    fn populated(&self, cg: usize) -> bool {
        self.mtasks
            .iter()
            .any(|t| !t.dead && self.is_ancestor_or_self(cg, t.cg))
    }

    /// Whether `file` exists in cgroup `cg` (cgroupfs's file set; the root has only
    /// `cgroup.procs` and `cgroup.threads` of these).
    fn has_file(&self, cg: usize, file: &str) -> bool {
        FILES.contains(&file)
            && (self.mcgs[cg].parent.is_some()
                || file == "cgroup.procs"
                || file == "cgroup.threads")
    }

    fn model_write(&mut self, cg: usize, file: &str, value: &str) -> Result<(), Errno> {
        if self.mcgs[cg].removed || !self.has_file(cg, file) {
            return Err(Errno::ENOENT);
        }
        if value.is_empty() {
            // write(fd, "", 0): no handler runs.
            return Ok(());
        }
        if value.len() > 4096 {
            // `kernfs_fop_write_iter`: longer than the files' `atomic_write_len`.
            return Err(Errno::E2BIG);
        }
        // kernfs hands the handler a NUL-terminated copy, which it reads as a C
        // string: the value ends at its first NUL.
        let c_string = value
            .as_bytes()
            .split(|&b| b == 0)
            .next()
            .unwrap_or_default();
        let v = strstrip(c_string);
        match file {
            "pids.max" => {
                if v == b"max" {
                    self.mcgs[cg].max = None;
                    return Ok(());
                }
                let n = kstrtoll(v)?;
                if !(0..=PIDS_LIMIT).contains(&n) {
                    return Err(Errno::EINVAL);
                }
                self.mcgs[cg].max = Some(n);
                Ok(())
            }
            "cgroup.procs" | "cgroup.threads" => {
                let pid = kstrtoint(v).map_err(|_| Errno::EINVAL)?;
                if pid < 0 {
                    return Err(Errno::EINVAL);
                }
                // No writing process in uproc: pid 0 names nobody (ESRCH).
                let t = self
                    .tasks
                    .iter()
                    .position(|t| t.pid() == pid)
                    .filter(|&i| !self.mtasks[i].dead)
                    .ok_or(Errno::ESRCH)?;
                if file == "cgroup.threads" {
                    // One thread moves only inside a threaded subtree; there are none.
                    return match self.mtasks[t].cg == cg {
                        true => Ok(()),
                        false => Err(Errno::EOPNOTSUPP),
                    };
                }
                self.mtasks[t].cg = cg;
                Ok(())
            }
            "cgroup.kill" => match kstrtoint(v)? {
                1 => {
                    // The runtime init (task 0) is unkillable.
                    for t in self.mtasks.iter_mut().skip(1) {
                        if !t.dead && is_under(&self.mcgs, cg, t.cg) {
                            t.dead = true;
                        }
                    }
                    Ok(())
                }
                _ => Err(Errno::ERANGE),
            },
            "cgroup.type" if v == b"threaded" => Err(Errno::EOPNOTSUPP),
            "cgroup.type" => Err(Errno::EINVAL),
            // Root opens anything; the read-only files have no write handler.
            _ => Err(Errno::EINVAL),
        }
    }

    /// Checks a read against the model; `Err` is the divergence.
    fn check_read(&self, cg: usize, file: &str, got: Result<String, Errno>) -> Result<(), String> {
        if self.mcgs[cg].removed || !self.has_file(cg, file) {
            return expect_err(got, Errno::ENOENT);
        }
        let got = match (file, got) {
            ("cgroup.kill", got) => return expect_err(got, Errno::EINVAL),
            (_, Ok(s)) => s,
            (_, Err(e)) => return Err(format!("read gave {e:?}")),
        };
        let want = match file {
            "pids.max" => match self.mcgs[cg].max {
                None => "max\n".to_owned(),
                Some(n) => format!("{n}\n"),
            },
            "pids.current" => format!("{}\n", self.current(cg)),
            "cgroup.events" => format!("populated {}\nfrozen 0\n", u8::from(self.populated(cg))),
            "cgroup.type" => "domain\n".to_owned(),
            "cgroup.procs" | "cgroup.threads" => {
                let mut want: Vec<i32> = self
                    .mtasks
                    .iter()
                    .zip(&self.tasks)
                    .filter(|(m, _)| !m.dead && m.cg == cg)
                    .map(|(_, t)| t.pid())
                    .collect();
                let mut got_pids: Vec<i32> = got
                    .lines()
                    .map(|l| l.parse().map_err(|_| format!("bad line {l:?}")))
                    .collect::<Result<_, _>>()?;
                want.sort_unstable();
                got_pids.sort_unstable();
                if !got.is_empty() && !got.ends_with('\n') {
                    return Err(format!("{got:?} lacks the final newline"));
                }
                return if want == got_pids {
                    Ok(())
                } else {
                    Err(format!("members {got_pids:?}, model {want:?}"))
                };
            }
            "pids.peak" => {
                let n: usize = got
                    .strip_suffix('\n')
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| format!("pids.peak {got:?}"))?;
                return if n >= self.current(cg) {
                    Ok(())
                } else {
                    Err(format!("pids.peak {n} below pids.current"))
                };
            }
            "pids.events" | "pids.events.local" => {
                let ok = got
                    .strip_prefix("max ")
                    .and_then(|s| s.strip_suffix('\n'))
                    .is_some_and(|n| n.parse::<u64>().is_ok());
                return if ok {
                    Ok(())
                } else {
                    Err(format!("{file} {got:?}"))
                };
            }
            _ => unreachable!("has_file covers every name"),
        };
        if got == want {
            Ok(())
        } else {
            Err(format!("read {got:?}, model {want:?}"))
        }
    }

    /// mkdir(2) of `path` relative to cgroup `cg` (or from the root when it starts
    /// with `/`): the cgroup to create the last component in, and that component.
    /// The VFS walks the path first (`filename_create`), then `cgroup_mkdir` checks the
    /// name.
    fn model_mkdir(&self, cg: usize, path: &str) -> Result<(usize, String), Errno> {
        if (self.mcgs[cg].removed && !path.starts_with('/')) || path.is_empty() {
            return Err(Errno::ENOENT);
        }
        if path.len() >= 4096 {
            return Err(Errno::ENAMETOOLONG);
        }
        if path.contains('\0') {
            return Err(Errno::EINVAL);
        }
        let child = |dir: usize, name: &str| {
            (0..self.mcgs.len()).find(|&c| {
                self.mcgs[c].parent == Some(dir)
                    && !self.mcgs[c].removed
                    && self.mcgs[c].name == name
            })
        };
        let mut dir = if path.starts_with('/') { 0 } else { cg };
        let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
        let Some((&last, walk)) = comps.split_last() else {
            return Err(Errno::EEXIST); // "/": the root
        };
        for &c in walk {
            if c.len() > 255 {
                return Err(Errno::ENAMETOOLONG);
            }
            dir = match c {
                "." => dir,
                ".." => self.mcgs[dir].parent.unwrap_or(dir),
                name => match child(dir, name) {
                    Some(d) => d,
                    None if self.takes_name(dir, name) => return Err(Errno::ENOTDIR),
                    None => return Err(Errno::ENOENT),
                },
            };
        }
        if last.len() > 255 {
            return Err(Errno::ENAMETOOLONG);
        }
        if last == "." || last == ".." || child(dir, last).is_some() || self.takes_name(dir, last) {
            return Err(Errno::EEXIST);
        }
        if last.contains('\n') {
            return Err(Errno::EINVAL);
        }
        Ok((dir, last.to_owned()))
    }

    /// Whether a file of cgroup `cg` has this name, modelled or not (cgroupfs's other
    /// files still take their names).
    fn takes_name(&self, cg: usize, name: &str) -> bool {
        let unmodelled = [
            "cgroup.controllers",
            "cgroup.subtree_control",
            "cgroup.max.descendants",
            "cgroup.max.depth",
            "cgroup.stat",
            "cgroup.pressure",
            "cpu.stat",
            "cpu.stat.local",
            "cpu.pressure",
            "io.pressure",
            "memory.pressure",
        ]
        .contains(&name)
            || (matches!(name, "cgroup.freeze" | "cgroup.stat.local")
                && self.mcgs[cg].parent.is_some());
        unmodelled || self.has_file(cg, name)
    }

    fn model_rmdir(&self, cg: usize) -> Result<(), Errno> {
        if self.mcgs[cg].parent.is_none() {
            return Err(Errno::EBUSY);
        }
        if self.mcgs[cg].removed {
            return Err(Errno::ENOENT);
        }
        let has_child = self.mcgs.iter().any(|c| c.parent == Some(cg) && !c.removed);
        if has_child || self.populated(cg) {
            return Err(Errno::EBUSY);
        }
        Ok(())
    }

    fn model_fork(&self, cg: usize) -> Result<(), Errno> {
        if self.mcgs[cg].removed {
            return Err(Errno::ENOENT);
        }
        let mut c = Some(cg);
        while let Some(i) = c {
            if let Some(max) = self.mcgs[i].max {
                if self.current(i) as i64 + 1 > max {
                    return Err(Errno::EAGAIN);
                }
            }
            c = self.mcgs[i].parent;
        }
        Ok(())
    }

    /// init reaps every killed child (so charges drain as they do after a wait).
    fn reap_killed(&mut self) -> Result<(), String> {
        let mut i = 0;
        while i < self.tasks.len() {
            if self.mtasks[i].dead {
                let pid = self.tasks[i].pid();
                let got = self
                    .init
                    .wait(WaitId::Pid(pid), WaitOptions::EXITED | WaitOptions::NOHANG);
                if !matches!(got, Ok(Some(info)) if info.pid == pid) {
                    return Err(format!("reaping killed {pid}: {got:?}"));
                }
                self.tasks.swap_remove(i);
                self.mtasks.swap_remove(i);
            } else {
                i += 1;
            }
        }
        Ok(())
    }
}

fn is_under(cgs: &[MCg], anc: usize, mut cg: usize) -> bool {
    loop {
        if cg == anc {
            return true;
        }
        match cgs[cg].parent {
            Some(p) => cg = p,
            None => return false,
        }
    }
}

fn expect_err<T: std::fmt::Debug>(got: Result<T, Errno>, want: Errno) -> Result<(), String> {
    match got {
        Err(e) if e == want => Ok(()),
        other => Err(format!("gave {other:?}, cgroupfs gives {want:?}")),
    }
}

fn same<T: std::fmt::Debug, U: std::fmt::Debug>(
    got: &Result<T, Errno>,
    want: &Result<U, Errno>,
) -> Result<(), String> {
    match (got, want) {
        (Ok(_), Ok(_)) => Ok(()),
        (Err(g), Err(w)) if g == w => Ok(()),
        _ => Err(format!("gave {got:?}, cgroupfs gives {want:?}")),
    }
}

fn outcome<T>(r: &Result<T, Errno>) -> String {
    match r {
        Ok(_) => "ok".to_owned(),
        Err(e) => e.name().to_string(),
    }
}

/// Runs the ops under `profile` against a fresh `System`; the first divergence is the
/// error.
pub(crate) fn run(profile: Profile, ops: &[Op]) -> Result<Stats, String> {
    let sys = System::new(SystemConfig {
        profile,
        ..SystemConfig::default()
    })
    .map_err(|e| format!("System::new: {e}"))?;
    let init = sys.init();
    let mut w = World {
        init: init.clone(),
        cgs: vec![sys.cgroup_root()],
        mcgs: vec![MCg {
            name: String::new(),
            parent: None,
            removed: false,
            max: None,
        }],
        tasks: vec![init],
        mtasks: vec![MTask { cg: 0, dead: false }],
        sys,
    };
    let mut stats = Stats::default();
    for (step, op) in ops.iter().enumerate() {
        let ctx = |what: String| format!("{profile} step {step} {op:?}: {what}");
        match op {
            Op::Write { cg, file, value } => {
                let cg = cg % w.cgs.len();
                let want = w.model_write(cg, file, value);
                let got = w.cgs[cg].write(file, value);
                same(&got, &want).map_err(ctx)?;
                stats.outcomes.insert(outcome(&got));
                w.reap_killed().map_err(ctx)?;
            }
            Op::Read { cg, file } => {
                let cg = cg % w.cgs.len();
                let got = w.cgs[cg].read(file);
                stats.outcomes.insert(outcome(&got));
                w.check_read(cg, file, got).map_err(ctx)?;
            }
            Op::Mkdir { cg, name } => {
                let cg = cg % w.cgs.len();
                if w.cgs.len() >= MAX_CGROUPS {
                    continue;
                }
                let want = w.model_mkdir(cg, name);
                let got = w.cgs[cg].mkdir(name);
                same(&got, &want).map_err(ctx)?;
                stats.outcomes.insert(outcome(&got));
                if let (Ok(c), Ok((dir, leaf))) = (got, want) {
                    if c.name() != leaf || c.parent().map(|p| p.id()) != Some(w.cgs[dir].id()) {
                        return Err(ctx(format!("new cgroup is {:?}", c.path())));
                    }
                    w.cgs.push(c);
                    w.mcgs.push(MCg {
                        name: leaf,
                        parent: Some(dir),
                        removed: false,
                        max: None,
                    });
                }
            }
            Op::Rmdir { cg } => {
                let cg = cg % w.cgs.len();
                let want = w.model_rmdir(cg);
                let got = w.cgs[cg].rmdir();
                same(&got, &want).map_err(ctx)?;
                stats.outcomes.insert(outcome(&got));
                if got.is_ok() {
                    w.mcgs[cg].removed = true;
                }
            }
            Op::Fork { cg } => {
                let cg = cg % w.cgs.len();
                if w.tasks.len() >= MAX_TASKS {
                    continue;
                }
                let want = w.model_fork(cg);
                let got = w.init.fork(&CloneArgs {
                    flags: CloneFlags::INTO_CGROUP,
                    cgroup: Some(w.cgs[cg].clone()),
                    ..CloneArgs::default()
                });
                same(&got, &want).map_err(ctx)?;
                stats.outcomes.insert(outcome(&got));
                if let Ok(t) = got {
                    w.tasks.push(t);
                    w.mtasks.push(MTask { cg, dead: false });
                }
            }
            Op::Move { cg, task } => {
                let cg = cg % w.cgs.len();
                if w.tasks.is_empty() {
                    continue;
                }
                let t = task % w.tasks.len();
                let value = format!("{}\n", w.tasks[t].pid());
                let want = w.model_write(cg, "cgroup.procs", &value);
                let got = w.cgs[cg].write("cgroup.procs", &value);
                same(&got, &want).map_err(ctx)?;
                stats.outcomes.insert(outcome(&got));
                if got.is_ok() && w.tasks[t].cgroup().id() != w.cgs[cg].id() {
                    return Err(ctx("moved task reports another cgroup".into()));
                }
            }
        }
        // Invariants after every op: pids.current = members charged in the subtree.
        for (i, c) in w.cgs.iter().enumerate() {
            if i > 0 && !w.mcgs[i].removed && c.pids_current() != w.current(i) as u64 {
                return Err(ctx(format!(
                    "cgroup {i}: pids.current {} but {} tasks charged",
                    c.pids_current(),
                    w.current(i)
                )));
            }
            if c.is_removed() != w.mcgs[i].removed {
                return Err(ctx(format!("cgroup {i}: removed flag diverged")));
            }
        }
    }
    // At rest: init back to the root, every child exits and is reaped; every counter
    // drains to zero.
    let init_pid = format!("{}", w.init.pid());
    w.cgs[0]
        .write("cgroup.procs", &init_pid)
        .map_err(|e| format!("{profile} at rest: moving init back: {e}"))?;
    for t in &w.tasks[1..] {
        t.exit(0);
    }
    for t in w.tasks.drain(1..).collect::<Vec<_>>() {
        let pid = t.pid();
        let got = w
            .init
            .wait(WaitId::Pid(pid), WaitOptions::EXITED | WaitOptions::NOHANG);
        if !matches!(got, Ok(Some(_))) {
            return Err(format!("{profile} at rest: reaping {pid}: {got:?}"));
        }
    }
    for (i, c) in w.cgs.iter().enumerate() {
        if c.pids_current() != 0 {
            return Err(format!(
                "{profile} at rest: cgroup {i} still charges {}",
                c.pids_current()
            ));
        }
    }
    if w.sys.nr_tasks() != 1 {
        return Err(format!(
            "{profile} at rest: {} tasks left",
            w.sys.nr_tasks()
        ));
    }
    Ok(stats)
}
