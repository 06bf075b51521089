//! The op language and the reference model for `uproc-pidns`, shared by the fuzz target
//! `pidns_ops`, the property test `crates/pidns/tests/prop_model.rs` and the stable
//! corpus replay `crates/pidns/tests/fuzz_corpus_replay.rs` (all include this file with
//! `#[path]`, so it names no crate-local paths).
//!
//! The model is Linux's numbering (`alloc_pid` in `kernel/pid.c`, clone3(2)'s `set_tid`)
//! written down as plainly as possible: per namespace a set of taken numbers, a cyclic
//! cursor, `pid_max`, whether an init was installed and whether the namespace still
//! accepts pids. It does not look at
//! how `uproc-pidns` stores anything; it only compares what the public API answers.
#![allow(dead_code)]

#[path = "input_bytes.rs"]
mod input_bytes;

use input_bytes::{Bytes, decode_ops};
use std::any::Any;
use std::collections::BTreeSet;
use std::sync::{Arc, Weak};
use uproc_abi::{Errno, Profile};
use uproc_pidns::{PID_MAX_LIMIT, Pid, PidMap, PidNamespace, RESERVED_PIDS, alloc_pid, free_pid};

/// Namespaces a case may create (new_child beyond this is ignored).
pub(crate) const MAX_NAMESPACES: usize = 40;

/// Ops decoded from one input; the rest is ignored. With [`MAX_CHURN`] this bounds the
/// work of one input (a few thousand model steps), so the fuzzer runs thousands of
/// inputs a second instead of spending seconds on one long input.
pub(crate) const MAX_OPS: usize = 512;

/// A churn op runs `byte % MAX_CHURN` alloc/free pairs: enough to move the cyclic
/// cursor across a small `pid_max`, no more work than a handful of plain ops.
pub(crate) const MAX_CHURN: u8 = 16;

/// One operation. Namespace and pid indexes are taken modulo what exists when the op runs.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    /// `alloc_pid(ns, set_tid, cap)`; on success an init-less namespace gets its init.
    Alloc {
        ns: usize,
        set_tid: Vec<i32>,
        cap: bool,
    },
    /// `free_pid` of the `idx`-th live pid.
    Free { idx: usize },
    /// `set_pid_max(ns, pid_max)`.
    SetPidMax { ns: usize, pid_max: i32 },
    /// `new_child(ns)`.
    NewChild { ns: usize },
    /// `disable_pid_allocation(ns)` (its init died).
    Disable { ns: usize },
    /// `n` times: alloc in `ns` without set_tid, free at once if it succeeded.
    Churn { ns: usize, n: u16 },
}

/// A root namespace's `pid_max` and the ops to run against it.
#[derive(Clone, Debug)]
pub(crate) struct Case {
    pub(crate) root_pid_max: i32,
    pub(crate) ops: Vec<Op>,
}

/// What a run did, so callers can check that it exercised something.
#[derive(Clone, Debug, Default)]
pub(crate) struct Stats {
    pub(crate) ok: usize,
    /// `alloc_pid` errors, in order.
    pub(crate) errors: Vec<Errno>,
    /// `set_pid_max` / `new_child` errors, in order.
    pub(crate) ns_errors: Vec<Errno>,
    pub(crate) frees: usize,
}

fn decode_tid(b: &mut Bytes<'_>) -> Option<i32> {
    let t = b.u8()?;
    Some(match t % 16 {
        0 => 0,
        1 => -1,
        2 => 1,
        3 => 300,
        4 => 399,
        5 => 400,
        6 => i32::MAX,
        7 => i32::from(b.u16()? % 700),
        _ => i32::from(t >> 3),
    })
}

fn decode_pid_max(v: u16) -> i32 {
    match v % 8 {
        0 => RESERVED_PIDS,
        1 => PID_MAX_LIMIT + 1,
        2 => PID_MAX_LIMIT,
        3 => 0,
        _ => RESERVED_PIDS + 1 + i32::from(v >> 3) % 400,
    }
}

/// Decodes fuzzer bytes: two bytes of root `pid_max` (301..=500), then ops until the
/// bytes run out (a truncated op is dropped). Every byte string decodes to a case.
pub(crate) fn decode(data: &[u8]) -> Case {
    let root_pid_max = RESERVED_PIDS + 1 + i32::from(Bytes::new(data).u16().unwrap_or(99) % 200);
    let ops = decode_ops(data.get(2..).unwrap_or(&[]), MAX_OPS, decode_op);
    Case { root_pid_max, ops }
}

fn decode_op(b: &mut Bytes<'_>) -> Option<Op> {
    let tag = b.u8()?;
    Some(match tag % 16 {
        0..=5 => {
            let ns = usize::from(b.u8()?);
            let flags = b.u8()?;
            let len = if flags & 0x10 != 0 {
                (flags >> 1) & 7
            } else {
                0
            };
            let mut set_tid = Vec::with_capacity(len.into());
            for _ in 0..len {
                set_tid.push(decode_tid(b)?);
            }
            Op::Alloc {
                ns,
                set_tid,
                cap: flags & 1 == 0,
            }
        }
        6..=9 => Op::Free {
            idx: usize::from(b.u8()?),
        },
        10 => Op::SetPidMax {
            ns: usize::from(b.u8()?),
            pid_max: decode_pid_max(b.u16()?),
        },
        11 | 12 => Op::NewChild {
            ns: usize::from(b.u8()?),
        },
        13 => Op::Disable {
            ns: usize::from(b.u8()?),
        },
        _ => Op::Churn {
            ns: usize::from(b.u8()?),
            n: u16::from(b.u8()? % MAX_CHURN),
        },
    })
}

/// Encodes a tid so that [`decode_tid`] gives it back (for hand-built seeds).
fn encode_tid(out: &mut Vec<u8>, tid: i32) {
    match tid {
        0 => out.push(0),
        -1 => out.push(1),
        1 => out.push(2),
        300 => out.push(3),
        399 => out.push(4),
        400 => out.push(5),
        i32::MAX => out.push(6),
        _ => {
            let v = u16::try_from(tid).expect("seed tid in 0..700");
            out.push(7);
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
}

/// Encodes a case for [`decode`] (seed corpus generation). `pid_max` values must be
/// ones [`decode_pid_max`] can produce; `Churn` counts must be below [`MAX_CHURN`].
pub(crate) fn encode(case: &Case) -> Vec<u8> {
    let v = u16::try_from(case.root_pid_max - RESERVED_PIDS - 1).expect("root pid_max 301..=500");
    let mut out = v.to_le_bytes().to_vec();
    for op in &case.ops {
        match op {
            Op::Alloc { ns, set_tid, cap } => {
                out.push(0);
                out.push(*ns as u8);
                let len = set_tid.len() as u8;
                let flags = (if len > 0 { 0x10 | (len << 1) } else { 0 }) | u8::from(!cap);
                out.push(flags);
                for &t in set_tid {
                    encode_tid(&mut out, t);
                }
            }
            Op::Free { idx } => out.extend_from_slice(&[6, *idx as u8]),
            Op::SetPidMax { ns, pid_max } => {
                let v: u16 = match *pid_max {
                    RESERVED_PIDS => 0,
                    p if p == PID_MAX_LIMIT + 1 => 1,
                    PID_MAX_LIMIT => 2,
                    0 => 3,
                    p => 4 + 8 * u16::try_from(p - RESERVED_PIDS - 1).expect("301..=700"),
                };
                out.extend_from_slice(&[10, *ns as u8]);
                out.extend_from_slice(&v.to_le_bytes());
            }
            Op::NewChild { ns } => out.extend_from_slice(&[11, *ns as u8]),
            Op::Disable { ns } => out.extend_from_slice(&[13, *ns as u8]),
            Op::Churn { ns, n } => {
                let n = u8::try_from(*n).expect("churn count below MAX_CHURN");
                out.extend_from_slice(&[14, *ns as u8, n]);
            }
        }
    }
    out
}

/// One namespace as the model sees it.
#[derive(Debug)]
struct MNs {
    parent: Option<usize>,
    pid_max: i32,
    /// `idr_next`: where the next cyclic search starts.
    cursor: i32,
    taken: BTreeSet<i32>,
    has_reaper: bool,
    adding: bool,
}

fn first_free(taken: &BTreeSet<i32>, from: i32, end: i32) -> Option<i32> {
    (from..end).find(|n| !taken.contains(n))
}

/// The reference model: Linux's `alloc_pid` rules over plain sets.
#[derive(Debug)]
struct Model {
    ns: Vec<MNs>,
}

impl Model {
    /// Namespace indexes, innermost first.
    fn chain(&self, ns: usize) -> Vec<usize> {
        std::iter::successors(Some(ns), |&n| self.ns[n].parent).collect()
    }

    /// Numbers innermost first, or the errno Linux returns.
    fn alloc(&mut self, ns: usize, set_tid: &[i32], cap: bool) -> Result<Vec<i32>, Errno> {
        let chain = self.chain(ns);
        if set_tid.len() > chain.len() {
            return Err(Errno::EINVAL);
        }
        for (i, &n) in chain.iter().enumerate() {
            if let Some(&tid) = set_tid.get(i) {
                if tid < 1 || tid >= self.ns[n].pid_max {
                    return Err(Errno::EINVAL);
                }
                // "PID 1 must be created first" comes before the capability check.
                if tid != 1 && !self.ns[n].has_reaper {
                    return Err(Errno::EINVAL);
                }
                if !cap {
                    return Err(Errno::EPERM);
                }
            }
        }
        // A namespace still waiting for its first process numbers from 1 again.
        if self.ns[ns].adding && self.ns[ns].taken.is_empty() {
            self.ns[ns].cursor = 0;
        }
        let mut got = Vec::new();
        let mut err = None;
        for (i, &n) in chain.iter().enumerate() {
            let m = &mut self.ns[n];
            let nr = if let Some(&tid) = set_tid.get(i) {
                if m.taken.contains(&tid) {
                    err = Some(Errno::EEXIST);
                    break;
                }
                tid
            } else {
                let min = if m.cursor > RESERVED_PIDS {
                    RESERVED_PIDS
                } else {
                    1
                };
                let from = m.cursor.max(min);
                let found = first_free(&m.taken, from, m.pid_max).or_else(|| {
                    if from > min {
                        first_free(&m.taken, min, m.pid_max)
                    } else {
                        None
                    }
                });
                let Some(nr) = found else {
                    err = Some(Errno::EAGAIN);
                    break;
                };
                m.cursor = nr + 1;
                nr
            };
            // Past pid 1 before an init: EINVAL, but in a closed namespace (its first
            // process failed) the PIDNS_ADDING check below answers ENOMEM.
            if nr != 1 && !m.has_reaper && (set_tid.get(i).is_some() || m.adding) {
                err = Some(Errno::EINVAL);
                break;
            }
            m.taken.insert(nr);
            got.push((n, nr));
        }
        if err.is_none() && !self.ns[ns].adding {
            err = Some(Errno::ENOMEM);
        }
        if let Some(e) = err {
            for (n, nr) in got {
                self.ns[n].taken.remove(&nr);
            }
            return Err(e);
        }
        Ok(got.into_iter().map(|(_, nr)| nr).collect())
    }
}

fn any_reaper() -> Weak<dyn Any + Send + Sync> {
    Weak::<()>::new()
}

/// Runs `case` against `uproc-pidns` under `profile` and against the model; returns a
/// description of the first divergence.
pub(crate) fn run(profile: Profile, case: &Case) -> Result<Stats, String> {
    let map = PidMap::new(profile);
    let root = PidNamespace::new_root(&map, case.root_pid_max)
        .map_err(|e| format!("new_root({}) failed: {e}", case.root_pid_max))?;
    let mut real: Vec<Arc<PidNamespace>> = vec![root];
    let mut model = Model {
        ns: vec![MNs {
            parent: None,
            pid_max: case.root_pid_max,
            cursor: 0,
            taken: BTreeSet::new(),
            has_reaper: false,
            adding: true,
        }],
    };
    // Live pids: the real object and the namespace chain (innermost first) of its numbers.
    let mut live: Vec<(Arc<Pid>, Vec<usize>)> = Vec::new();
    let mut stats = Stats::default();

    for (step, op) in case.ops.iter().enumerate() {
        let ctx = |what: String| format!("{profile} step {step} {op:?}: {what}");
        match op {
            Op::Alloc { ns, set_tid, cap } => {
                let ns = ns % real.len();
                alloc_one(&real, &mut model, &mut live, &mut stats, ns, set_tid, *cap)
                    .map_err(ctx)?;
            }
            Op::Churn { ns, n } => {
                let ns = ns % real.len();
                for _ in 0..*n {
                    let before = live.len();
                    alloc_one(&real, &mut model, &mut live, &mut stats, ns, &[], true)
                        .map_err(ctx)?;
                    if live.len() > before {
                        free_one(&real, &mut model, &mut live, &mut stats, before).map_err(ctx)?;
                    }
                }
            }
            Op::Free { idx } => {
                if !live.is_empty() {
                    let idx = idx % live.len();
                    free_one(&real, &mut model, &mut live, &mut stats, idx).map_err(ctx)?;
                }
            }
            Op::SetPidMax { ns, pid_max } => {
                let ns = ns % real.len();
                let want = if (RESERVED_PIDS + 1..=PID_MAX_LIMIT).contains(pid_max) {
                    model.ns[ns].pid_max = *pid_max;
                    Ok(())
                } else {
                    Err(Errno::EINVAL)
                };
                let got = real[ns].set_pid_max(*pid_max);
                if got != want {
                    return Err(ctx(format!(
                        "set_pid_max gave {got:?}, Linux gives {want:?}"
                    )));
                }
                if let Err(e) = got {
                    stats.ns_errors.push(e);
                }
            }
            Op::NewChild { ns } => {
                let ns = ns % real.len();
                if real.len() < MAX_NAMESPACES {
                    let level = model.chain(ns).len() as u32; // the child's level
                    let got = real[ns].new_child();
                    match (got, level > 32) {
                        (Err(Errno::ENOSPC), true) => stats.ns_errors.push(Errno::ENOSPC),
                        (Ok(child), false) => {
                            if child.pid_max() != PID_MAX_LIMIT || child.level() != level {
                                return Err(ctx(format!(
                                    "child has pid_max {} level {}, Linux starts it at \
                                     PID_MAX_LIMIT at level {level}",
                                    child.pid_max(),
                                    child.level(),
                                )));
                            }
                            real.push(child);
                            model.ns.push(MNs {
                                parent: Some(ns),
                                pid_max: PID_MAX_LIMIT,
                                cursor: 0,
                                taken: BTreeSet::new(),
                                has_reaper: false,
                                adding: true,
                            });
                        }
                        (got, _) => {
                            return Err(ctx(format!(
                                "new_child at level {level} gave {got:?}; Linux: ENOSPC beyond 32"
                            )));
                        }
                    }
                }
            }
            Op::Disable { ns } => {
                let ns = ns % real.len();
                real[ns].disable_pid_allocation();
                model.ns[ns].adding = false;
            }
        }
        check_counts(&real, &model).map_err(ctx)?;
    }
    // Free everything: every namespace must be back to zero.
    while !live.is_empty() {
        free_one(&real, &mut model, &mut live, &mut stats, 0)
            .map_err(|e| format!("{profile} final free: {e}"))?;
    }
    check_counts(&real, &model).map_err(|e| format!("{profile} at rest: {e}"))?;
    for (i, ns) in real.iter().enumerate() {
        if ns.nr_allocated() != 0 || !ns.pids().is_empty() {
            return Err(format!("{profile} ns {i}: pids left after freeing all"));
        }
    }
    Ok(stats)
}

fn check_counts(real: &[Arc<PidNamespace>], model: &Model) -> Result<(), String> {
    for (i, (r, m)) in real.iter().zip(&model.ns).enumerate() {
        if r.nr_allocated() != m.taken.len() {
            return Err(format!(
                "ns {i}: nr_allocated {} but {} numbers are in use",
                r.nr_allocated(),
                m.taken.len()
            ));
        }
        if r.pid_max() != m.pid_max || r.is_adding() != m.adding {
            return Err(format!("ns {i}: pid_max/adding diverged"));
        }
    }
    Ok(())
}

fn alloc_one(
    real: &[Arc<PidNamespace>],
    model: &mut Model,
    live: &mut Vec<(Arc<Pid>, Vec<usize>)>,
    stats: &mut Stats,
    ns: usize,
    set_tid: &[i32],
    cap: bool,
) -> Result<(), String> {
    let want = model.alloc(ns, set_tid, cap);
    let got = alloc_pid(&real[ns], set_tid, cap);
    match (got, want) {
        (Ok(pid), Ok(inner_first)) => {
            let outer_first: Vec<i32> = inner_first.iter().rev().copied().collect();
            if pid.nspid() != outer_first {
                return Err(format!(
                    "alloc gave NSpid {:?}, Linux gives {outer_first:?}",
                    pid.nspid()
                ));
            }
            let chain = model.chain(ns);
            for (&n, &nr) in chain.iter().zip(&inner_first) {
                let found = real[n].find_pid(nr);
                if !found.is_some_and(|f| Arc::ptr_eq(&f, &pid)) || pid.nr_in(&real[n]) != nr {
                    return Err(format!("pid {nr} not findable in ns {n} after alloc"));
                }
            }
            if !model.ns[ns].has_reaper {
                // The first task of the namespace becomes its init.
                model.ns[ns].has_reaper = true;
                real[ns].set_child_reaper(Some(any_reaper()));
            }
            live.push((pid, chain));
            stats.ok += 1;
        }
        (Err(g), Err(w)) if g == w => stats.errors.push(g),
        (got, want) => {
            return Err(format!(
                "alloc gave {:?}, Linux gives {want:?}",
                got.map(|p| p.nspid())
            ));
        }
    }
    Ok(())
}

fn free_one(
    real: &[Arc<PidNamespace>],
    model: &mut Model,
    live: &mut Vec<(Arc<Pid>, Vec<usize>)>,
    stats: &mut Stats,
    idx: usize,
) -> Result<(), String> {
    let (pid, chain) = live.swap_remove(idx);
    let inner_first: Vec<i32> = pid.nspid().into_iter().rev().collect();
    free_pid(&pid);
    // `free_pid`'s `case PIDNS_ADDING`: the last pid of a namespace that never had an
    // init (its first process, failed) closes it.
    let inner = &mut model.ns[chain[0]];
    inner.taken.remove(&inner_first[0]);
    if inner.taken.is_empty() && !inner.has_reaper {
        inner.adding = false;
    }
    for (&n, &nr) in chain.iter().zip(&inner_first) {
        model.ns[n].taken.remove(&nr);
        if real[n].find_pid(nr).is_some_and(|f| Arc::ptr_eq(&f, &pid)) {
            return Err(format!("freed pid {nr} still findable in ns {n}"));
        }
        if pid.nr_in(&real[n]) != nr {
            return Err(format!("freed pid lost its number {nr} in ns {n}"));
        }
    }
    if !pid.is_freed() {
        return Err("free_pid did not mark the pid freed".into());
    }
    stats.frees += 1;
    Ok(())
}
