//! Introspection: `ps` ([`ProcInfo`]) and a `pstree` renderer.

use crate::runtime::Runtime;
use std::collections::BTreeMap;
use std::sync::Arc;
use uproc_pidns::PidNamespace;
use uproc_tasklist::{System, Task, TaskState};

/// One line of `ps`: a task as one pid namespace sees it.
///
/// Numbers are in the viewing namespace; `ppid` is 0 when the parent is not visible
/// there (the init of a nested namespace, seen from inside it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcInfo {
    /// The task's pid.
    pub pid: i32,
    /// Its parent's pid (0 if invisible).
    pub ppid: i32,
    /// Its thread group id.
    pub tgid: i32,
    /// Running, stopped, zombie (dead tasks are not listed: they are released).
    pub state: TaskState,
    /// The cgroup path (`/jobs/a`), as `/proc/PID/cgroup` shows it (`/jobs/a
    /// (deleted)` for a zombie left in a cgroup since removed).
    pub cgroup: String,
    /// The task's name (`comm`).
    pub name: String,
    /// `NSpid`: its pid in the viewing namespace and every namespace below, down to
    /// its own.
    pub nspid: Vec<i32>,
}

/// The ids of `t` as `ns` sees them, read from the task list itself: `pid_nr_ns` for
/// the pid and tgid, `task_ppid_nr_ns` ([`Task::ppid_in`]) for the parent. Nothing is
/// opened: listing a task does not register it with pidfs (no pidfd is made), as
/// reading `/proc/PID/status` does not.
///
/// # References
/// `proc_pid_status` / `task_state` in `fs/proc/array.c`.
fn info_in(sys: &System, t: &Task, ns: &PidNamespace) -> Option<ProcInfo> {
    let pid = t.struct_pid();
    let nr = pid.nr_in(ns);
    if nr == 0 {
        return None;
    }
    // A leader (or a lone task) is its own thread group; a thread's tgid is its
    // leader's number, found in the thread's own namespace and renumbered for `ns`.
    let tgid = if t.is_thread_group_leader() {
        nr
    } else {
        sys.find_task(&t.pid_ns(), t.tgid())
            .map_or(0, |leader| leader.struct_pid().nr_in(ns))
    };
    Some(ProcInfo {
        pid: nr,
        ppid: t.ppid_in(ns),
        tgid,
        state: t.state(),
        cgroup: {
            // `proc_cgroup_show`: a task still in a removed cgroup (a zombie left in
            // it) shows its path with " (deleted)" on the default hierarchy.
            let cg = t.cgroup();
            if cg.is_removed() {
                format!("{} (deleted)", cg.path())
            } else {
                cg.path()
            }
        },
        name: t.name(),
        nspid: pid.nspid_from(ns),
    })
}

pub(crate) fn ps_in(rt: &Runtime, ns: &Arc<PidNamespace>) -> Vec<ProcInfo> {
    let sys = rt.system();
    let mut v: Vec<ProcInfo> = sys
        .tasks()
        .iter()
        .filter_map(|t| info_in(sys, t, ns))
        .collect();
    v.sort_by_key(|p| p.pid);
    v
}

/// Renders `procs` in the style of `pstree -pn`: each task as `name(pid)`, children
/// sorted by pid (`-n`; plain `pstree -p` sorts them by name), joined with
/// box-drawing lines; tasks whose parent is not listed start a tree. A thread is drawn
/// as a child of its leader's parent, as its `ProcInfo` lists it, with its own name,
/// not as `pstree`'s `{name}(tid)` under its leader.
///
/// ```
/// use uproc::{Runtime, Spawn};
/// let rt = Runtime::builder().build()?;
/// let init = rt.init();
/// init.set_name("init");
/// // Two children of init (parked until killed), one grandchild.
/// let a = init.fork(&Default::default())?;
/// a.set_name("a");
/// let b = init.fork(&Default::default())?;
/// b.set_name("b");
/// let c = a.fork(&Default::default())?;
/// c.set_name("c");
/// assert_eq!(rt.pstree(), "\
/// init(1)─┬─a(2)───c(4)
///         └─b(3)
/// ");
/// # for t in [&c, &b, &a] { t.exit(0); }
/// # Ok::<(), uproc::Errno>(())
/// ```
pub fn pstree(procs: &[ProcInfo]) -> String {
    let mut children: BTreeMap<i32, Vec<&ProcInfo>> = BTreeMap::new();
    let listed: std::collections::BTreeSet<i32> = procs.iter().map(|p| p.pid).collect();
    let mut roots = Vec::new();
    for p in procs {
        if p.ppid != 0 && p.ppid != p.pid && listed.contains(&p.ppid) {
            children.entry(p.ppid).or_default().push(p);
        } else {
            roots.push(p);
        }
    }
    for v in children.values_mut() {
        v.sort_by_key(|p| p.pid);
    }
    let mut out = String::new();
    for r in roots {
        render(r, &children, &mut out);
    }
    out
}

/// One child list being drawn: the next child to draw, the width of its parent's
/// label, and the length of the parent's continuation prefix.
struct Level<'a> {
    kids: &'a [&'a ProcInfo],
    next: usize,
    pad: usize,
    base: usize,
}

/// Appends the lines of `root`'s tree to `out`, `pstree`'s way: a process's first
/// child goes on its own line, each later child on a new line under a connector. An
/// explicit stack, not recursion: a chain of tasks as deep as `pid_max` allows must
/// not overflow the caller's stack, and each line is built once (a recursive render
/// rebuilt every line at every level above it).
fn render(root: &ProcInfo, children: &BTreeMap<i32, Vec<&ProcInfo>>, out: &mut String) {
    let mut line = String::new();
    // What a new line inside the current process's block starts with (the
    // connectors and pads of every level above it).
    let mut prefix = String::new();
    let mut levels: Vec<Level<'_>> = Vec::new();
    let mut visit = Some((root, ""));
    loop {
        if let Some((p, conn)) = visit.take() {
            line.push_str(conn);
            let start = line.len();
            line.push_str(&format!("{}({})", p.name, p.pid));
            let pad = line[start..].chars().count();
            match children.get(&p.pid).filter(|k| !k.is_empty()) {
                Some(kids) => levels.push(Level {
                    kids,
                    next: 0,
                    pad,
                    base: prefix.len(),
                }),
                None => {
                    out.push_str(&line);
                    out.push('\n');
                    line.clear();
                }
            }
        }
        let Some(level) = levels.last_mut() else {
            return;
        };
        prefix.truncate(level.base);
        let (i, n) = (level.next, level.kids.len());
        if i == n {
            levels.pop();
            continue;
        }
        level.next += 1;
        let (first, rest) = match (n, i) {
            (1, _) => ("───", "   "),
            (_, 0) => ("─┬─", " │ "),
            (_, i) if i == n - 1 => (" └─", "   "),
            _ => (" ├─", " │ "),
        };
        let pad = " ".repeat(level.pad);
        if i > 0 {
            // A later child: a new line, under the parent's label.
            line.push_str(&prefix);
            line.push_str(&pad);
        }
        prefix.push_str(&pad);
        prefix.push_str(rest);
        visit = Some((level.kids[i], first));
    }
}
