//! The control files as text, exactly as cgroupfs prints and parses them
//! (`cgroup_base_files`, `pids_files` / `cgroup1_base_files` are not modelled).
//!
//! | file | root | mode | read | write |
//! |---|---|---|---|---|
//! | `cgroup.procs` | yes | rw | tgids of live leaders, then of leaders that died here before a live thread of theirs, one per line | a pid: move its thread group's live threads |
//! | `cgroup.threads` | yes | rw | tids, one per line | a tid already here: no-op; elsewhere: EOPNOTSUPP |
//! | `cgroup.events` | no | r | `populated N\nfrozen 0\n` | EINVAL |
//! | `cgroup.kill` | no | w | EINVAL | `1`: SIGKILL to each leader `cgroup.procs` lists in the subtree; other numbers ERANGE |
//! | `cgroup.type` | no | rw | `domain\n` | `threaded`: EOPNOTSUPP; else EINVAL |
//! | `pids.max` | no | rw | `max\n` / `N\n` | `max` or an integer |
//! | `pids.current` | no | r | `N\n` | EINVAL |
//! | `pids.peak` | no | r | `N\n` | EINVAL |
//! | `pids.events` | no | r | `max N\n` | EINVAL |
//! | `pids.events.local` | no | r | `max N\n` | EINVAL |
//!
//! A file that does not exist (any other name, or a not-on-root file on the root) is
//! ENOENT, and so is every file of a removed cgroup (its directory is gone). So is
//! every cgroupfs file not in the table (`cgroup.controllers`, `cgroup.stat`,
//! `cgroup.freeze`, the pressure files, ...), though its name is taken: a mkdir of it
//! is EEXIST, as in cgroupfs.
//!
//! uproc acts as root, whose open succeeds whatever the mode bits
//! (`CAP_DAC_OVERRIDE`): a read of a write-only file or a write to a read-only one
//! fails in the operation, EINVAL (`cgroup_seqfile_show` / `cgroup_file_write` find no
//! handler; an unprivileged opener would get EACCES from the open). A write of nothing
//! (`write(fd, "", 0)`) succeeds and changes nothing, on any file that exists.

use core::fmt::Write as _;

/// `atomic_write_len` of every cgroup file (`PAGE_SIZE`): the longest write kernfs
/// passes to a handler; a longer one is E2BIG.
const ATOMIC_WRITE_LEN: usize = 4096;

use uproc_abi::Errno;

use crate::Cgroup;
use crate::controller::pids::Limit;
use crate::hierarchy::Node;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum File {
    Procs,
    Threads,
    Events,
    Kill,
    Type,
    PidsMax,
    PidsCurrent,
    PidsPeak,
    PidsEvents,
    PidsEventsLocal,
}

impl File {
    fn lookup(node: &Node, name: &str) -> Option<File> {
        let f = match name {
            "cgroup.procs" => File::Procs,
            "cgroup.threads" => File::Threads,
            "cgroup.events" => File::Events,
            "cgroup.kill" => File::Kill,
            "cgroup.type" => File::Type,
            "pids.max" => File::PidsMax,
            "pids.current" => File::PidsCurrent,
            "pids.peak" => File::PidsPeak,
            "pids.events" => File::PidsEvents,
            "pids.events.local" => File::PidsEventsLocal,
            _ => return None,
        };
        let on_root = matches!(f, File::Procs | File::Threads);
        (on_root || node.parent.is_some()).then_some(f)
    }
}

/// Files of every cgroupfs directory that uproc does not model (the rest of
/// `cgroup_base_files`, `cgroup_psi_files`): reading or writing one is ENOENT, but the
/// name is taken all the same, so a mkdir of it is EEXIST as in cgroupfs.
const UNMODELLED: [&str; 11] = [
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
];

/// Whether `name` is a control file of `node`, modelled or not (mkdir of that name is
/// EEXIST).
pub(crate) fn exists(node: &Node, name: &str) -> bool {
    File::lookup(node, name).is_some()
        || UNMODELLED.contains(&name)
        || (matches!(name, "cgroup.freeze" | "cgroup.stat.local") && node.parent.is_some())
}

impl Cgroup {
    /// Reads a control file, as `cat` would in cgroupfs (`"max\n"`, `"3\n"`,
    /// `"max 1\n"`, `"populated 0\nfrozen 0\n"`).
    ///
    /// ENOENT for a file this cgroup does not have (pids files and `cgroup.events` /
    /// `cgroup.kill` / `cgroup.type` are not on the root) or when the cgroup was
    /// removed; EINVAL for the write-only `cgroup.kill`.
    pub fn read(&self, file: &str) -> Result<String, Errno> {
        let node = &self.node;
        if node.is_removed() {
            return Err(Errno::ENOENT);
        }
        let f = File::lookup(node, file).ok_or(Errno::ENOENT)?;
        let pids = || {
            node.pids
                .as_ref()
                .expect("pids files exist only below the root")
        };
        Ok(match f {
            File::Procs => {
                // Live leaders' tgids in link order, then the leaders that died here
                // while a thread of theirs lives, wherever that thread is (the dying
                // list `css_task_iter` walks with CSS_TASK_ITER_PROCS). A live thread
                // whose leader died in another cgroup is not listed here.
                let mut out = String::new();
                for m in self.members().iter().filter(|m| m.is_group_leader()) {
                    let _ = writeln!(out, "{}", m.tgid());
                }
                for m in crate::hierarchy::still_listed(&node.parked()) {
                    let _ = writeln!(out, "{}", m.tgid());
                }
                out
            }
            File::Threads => {
                let mut out = String::new();
                for m in self.members() {
                    let _ = writeln!(out, "{}", m.tid());
                }
                out
            }
            File::Events => format!("populated {}\nfrozen 0\n", u8::from(self.populated())),
            File::Kill => return Err(Errno::EINVAL),
            File::Type => "domain\n".to_owned(),
            File::PidsMax => format!("{}\n", pids().limit()),
            File::PidsCurrent => format!("{}\n", pids().current()),
            File::PidsPeak => format!("{}\n", pids().peak()),
            File::PidsEvents => format!("max {}\n", pids().events_max()),
            File::PidsEventsLocal => format!("max {}\n", pids().events_local_max()),
        })
    }

    /// Writes a control file, as `echo value > file` would in cgroupfs.
    ///
    /// - `pids.max`: `"max"` or an integer parsed as `kstrtoll(buf, 0)` after stripping
    ///   surrounding whitespace (so `"0x10"`, `"010"` and `"5\n"` work); negative or
    ///   above 4194304 -> EINVAL; garbage -> EINVAL; beyond 64 bits -> ERANGE.
    /// - `cgroup.procs`: a pid (`kstrtoint`; negative or garbage -> EINVAL); its whole
    ///   thread group moves here, found through the registered
    ///   [`TaskResolver`](crate::TaskResolver) (ESRCH if none is registered or the
    ///   pid is not found). `0` is the writer's own process, where the resolver knows
    ///   one (the task list's asks its runtime for the task running on this thread).
    /// - `cgroup.threads`: a tid, parsed and found the same way; it moves only that
    ///   thread, which Linux allows only within one threaded subtree
    ///   (`cgroup_attach_permissions`). uproc has no threaded cgroups, so a thread
    ///   already here is a no-op and one anywhere else is EOPNOTSUPP, judged by that
    ///   thread's own cgroup (a zombie not yet reaped included: one in another cgroup
    ///   is EOPNOTSUPP, as in Linux).
    /// - `cgroup.kill`: `1` kills the subtree ([`Cgroup::kill`]); another number ->
    ///   ERANGE; garbage -> EINVAL.
    /// - `cgroup.type`: `threaded` -> EOPNOTSUPP (uproc has no threaded cgroups);
    ///   anything else -> EINVAL.
    /// - read-only files -> EINVAL; unknown files and removed cgroups -> ENOENT.
    /// - an empty `value` (a write of no bytes) -> Ok on any file that exists,
    ///   changing nothing; one longer than a page (4096 bytes) -> E2BIG, on any file
    ///   that exists, before the value is read; a NUL ends the value, as the kernel's
    ///   handlers read it as a C string (`"5\0x"` to `pids.max` sets 5, `"\0"` is
    ///   EINVAL).
    pub fn write(&self, file: &str, value: &str) -> Result<(), Errno> {
        let node = &self.node;
        if node.is_removed() {
            return Err(Errno::ENOENT);
        }
        let f = File::lookup(node, file).ok_or(Errno::ENOENT)?;
        if value.is_empty() {
            // `vfs_write` of zero bytes: no handler runs.
            return Ok(());
        }
        if value.len() > ATOMIC_WRITE_LEN {
            // `kernfs_fop_write_iter`: a cgroup file takes one page per write at most
            // (`atomic_write_len`), checked before any handler runs.
            return Err(Errno::E2BIG);
        }
        // The handlers read the page as a C string: a NUL ends the value (`"5\0x"`
        // sets 5; a value that starts with one reads as empty, EINVAL).
        let value = value.split('\0').next().unwrap_or_default();
        match f {
            File::PidsMax => self.set_pids_max(value.parse::<Limit>()?),
            f @ (File::Procs | File::Threads) => {
                let pid = kstrtoint(strstrip(value)).map_err(|_| Errno::EINVAL)?;
                if pid < 0 {
                    return Err(Errno::EINVAL);
                }
                let resolver = self.hier.resolver().ok_or(Errno::ESRCH)?;
                if f == File::Procs {
                    return resolver.with_thread_group(pid, &mut |links| self.attach_links(links));
                }
                // The named thread's own cgroup, a zombie's included
                // (`cgroup_attach_permissions` with `threadgroup == false`): a zombie
                // leader left behind by its group's migration is elsewhere.
                let link = resolver.thread_link(pid)?;
                if !link.is_of(&self.hier) {
                    return Err(Errno::EINVAL);
                }
                match link.cgroup() == *self {
                    true => Ok(()),
                    false => Err(Errno::EOPNOTSUPP),
                }
            }
            File::Kill => match kstrtoint(strstrip(value))? {
                1 => self.kill(),
                _ => Err(Errno::ERANGE),
            },
            File::Type => match strstrip(value) {
                "threaded" => Err(Errno::EOPNOTSUPP),
                _ => Err(Errno::EINVAL),
            },
            File::Events
            | File::PidsCurrent
            | File::PidsPeak
            | File::PidsEvents
            | File::PidsEventsLocal => Err(Errno::EINVAL),
        }
    }
}

/// `strstrip`: surrounding whitespace off, as the kernel's `isspace` defines it: space,
/// `\t`, `\n`, `\v`, `\f`, `\r` (`char::is_ascii_whitespace` lacks the vertical tab, so
/// `"5\v"` would be EINVAL where Linux sets 5).
pub(crate) fn strstrip(s: &str) -> &str {
    s.trim_matches(|c: char| matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r'))
}

/// `_kstrtoull(s, 0)`: `0x`/`0X` hex (with at least one hex digit after), leading `0`
/// octal, else decimal; one trailing `\n` allowed; nothing else. As `_parse_integer`
/// does, overflow (ERANGE) is reported before trailing garbage (EINVAL).
fn parse_ull(s: &str) -> Result<u64, Errno> {
    let b = s.as_bytes();
    let (radix, start) =
        if b.len() >= 3 && b[0] == b'0' && (b[1] | 0x20) == b'x' && b[2].is_ascii_hexdigit() {
            (16u32, 2)
        } else if b.first() == Some(&b'0') {
            (8, 0)
        } else {
            (10, 0)
        };
    let mut acc: u64 = 0;
    let mut overflow = false;
    let mut n = 0;
    for &c in &b[start..] {
        let Some(d) = (c as char).to_digit(radix) else {
            break;
        };
        match acc
            .checked_mul(radix.into())
            .and_then(|v| v.checked_add(d.into()))
        {
            Some(v) => acc = v,
            None => overflow = true,
        }
        n += 1;
    }
    if overflow {
        return Err(Errno::ERANGE);
    }
    if n == 0 {
        return Err(Errno::EINVAL);
    }
    let rest = &b[start + n..];
    if !(rest.is_empty() || rest == b"\n") {
        return Err(Errno::EINVAL);
    }
    Ok(acc)
}

/// `kstrtoull(s, 0)`: an optional `+`, then [`parse_ull`].
fn kstrtoull(s: &str) -> Result<u64, Errno> {
    parse_ull(s.strip_prefix('+').unwrap_or(s))
}

/// `kstrtoll(s, 0)`: [`kstrtoull`] with an optional leading `-`; ERANGE outside `i64`.
pub(crate) fn kstrtoll(s: &str) -> Result<i64, Errno> {
    if let Some(rest) = s.strip_prefix('-') {
        let v = parse_ull(rest)?;
        if v > i64::MAX as u64 + 1 {
            return Err(Errno::ERANGE);
        }
        Ok((v as i64).wrapping_neg())
    } else {
        let v = kstrtoull(s)?;
        i64::try_from(v).map_err(|_| Errno::ERANGE)
    }
}

/// `kstrtoint(s, 0)`: [`kstrtoll`] with ERANGE outside `i32`.
pub(crate) fn kstrtoint(s: &str) -> Result<i32, Errno> {
    i32::try_from(kstrtoll(s)?).map_err(|_| Errno::ERANGE)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn kstrtoll_bases_and_errors() {
        assert_eq!(kstrtoll("10"), Ok(10));
        assert_eq!(kstrtoll("0x10"), Ok(16));
        assert_eq!(kstrtoll("0X1f"), Ok(31));
        assert_eq!(kstrtoll("010"), Ok(8));
        assert_eq!(kstrtoll("0"), Ok(0));
        assert_eq!(kstrtoll("-0"), Ok(0));
        assert_eq!(kstrtoll("+7"), Ok(7));
        assert_eq!(kstrtoll("7\n"), Ok(7));
        assert_eq!(kstrtoll("-5"), Ok(-5));
        assert_eq!(kstrtoll("-9223372036854775808"), Ok(i64::MIN));
        assert_eq!(kstrtoll("9223372036854775808"), Err(Errno::ERANGE));
        assert_eq!(kstrtoll("99999999999999999999999"), Err(Errno::ERANGE));
        assert_eq!(kstrtoll("99999999999999999999999x"), Err(Errno::ERANGE));
        for bad in [
            "", "0x", "08", "1a", " 1", "1\n\n", "--1", "-", "+", "0xg", "1.0", "-+1",
        ] {
            assert_eq!(kstrtoll(bad), Err(Errno::EINVAL), "{bad:?}");
        }
        assert_eq!(kstrtoint("2147483648"), Err(Errno::ERANGE));
        assert_eq!(kstrtoint("-2147483648"), Ok(i32::MIN));
    }
}
