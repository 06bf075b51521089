//! Differential test of the process life cycle against the real kernel: random
//! sequences of fork (some with `CLONE_NEWPID`, the child the init of a nested pid
//! namespace), thread creation, `exit_group` and thread exits, kill and tgkill,
//! waitid, setpgid, setsid, the child-subreaper bit and the SIGCHLD disposition, and
//! `unshare(CLONE_NEWPID)` and `setns` through a pidfd (after which a thread's forks
//! make the init or members of another namespace, with their parent outside it), run
//! by real processes in a fresh pid namespace and by uproc under every profile in
//! lockstep, compared after every step. The driver also holds pidfds: it opens them
//! (`pidfd_open` with and without `PIDFD_THREAD` and `PIDFD_NONBLOCK`, and with flags
//! Linux refuses), signals through them (`pidfd_send_signal` with each scope flag and
//! their invalid mixes), polls them, waits through them (`waitid(P_PIDFD)`, blocking
//! and `WNOHANG`, `EAGAIN` on a non-blocking one) and reads `PIDFD_GET_INFO` (the ids,
//! and the exit status once the process is reaped).
//!
//! The test re-executes its own binary as pid 1 of a new pid namespace (`unshare -Urpf
//! --mount-proc`): the *driver*, that namespace's init, which runs before the test
//! harness's `main` so that it is single-threaded. Its uproc counterpart is the init
//! of a nested namespace too (forked with `CLONE_NEWPID` from the runtime init, in a
//! session of its own as the driver makes itself); neither reaps orphans unless a step
//! says so. Every other process is a *controlled* process forked by the driver or by
//! another controlled process, and every thread of one (`pthread_create`), blocks in
//! `read` on its own command FIFO, runs one command (fork, thread creation, `_exit`,
//! `SYS_exit`, kill, tgkill, waitid with `WNOHANG`, setpgid, setsid, prctl, sigaction,
//! unshare, setns)
//! and writes the result to its reply FIFO. SIGCHLD is blocked everywhere, so that it
//! stays pending as uproc's default disposition keeps it (uproc's `SigChld::Default`
//! is a handler here, `Ignore` is `SIG_IGN`, whose SIGCHLDs queued only because the
//! signal is blocked are left out of the comparison).
//!
//! Two orders are the kernel scheduler's, not a rule: which thread of a dying process
//! hands its children on first, and which of several processes killed at once dies
//! first, decide the order of the reaper's children list. So when the worlds' waits
//! name different ready children, each named child must be
//! ready in every world (a `WNOWAIT` wait by pid reports it the same) and is then
//! reaped in every world. A third: of a namespace init whose threads die together,
//! the one that exits last waits in its exit for the namespace to empty (shown
//! running; the leader a zombie), so such an init is compared by process: the
//! waiting thread's view in its leader's place, whichever thread it is (its pending
//! set left out where the worlds chose different threads, and later steps name none
//! of those threads).
//!
//! Two more such orders are not reconciled, so a long run can meet them (diagnosed,
//! both measured on 6.18 with small C programs): a process with several threads and a
//! core limit that is its process group's only link outside, dying of a Core signal
//! with a stopped child in the group: if a thread other than the leader reaches
//! `exit_notify` first, the group is judged orphaned and the stopped child dies of
//! SIGHUP (4 to 9 runs in 30); uproc's leader hands the child on first, as the
//! kernel's other runs do (`UPROC_KERNEL_STEPS=250`, seed 478). And a parent and its
//! child killed in one step, the parent autoreaping (`SA_NOCLDWAIT`): if the parent
//! exits first, the child's exit is autoreaped by the reaper but still queues SIGCHLD
//! there (6 to 19 runs in 40); uproc kills parents first, so it shows that SIGCHLD
//! (default mix, seed 134, 120 steps, 4 runs in 15).
//!
//! After each step the driver waits until the kernel's view settles (signal delivery,
//! group stops and exits run in the target's own context), then compares, for every
//! process it ever made: the state (`R`/`S` as running, `T`, `Z`, gone), the parent,
//! the process group and session (through the id both worlds gave the same process)
//! and the pending signals (`SigPnd | ShdPnd`), and the step's own result (pid or
//! errno, and waitid's `si_pid`/`si_code`/`si_status`). Numbers are compared through
//! a map from each world's numbers to the ids of the processes, not directly: the
//! state as the driver's namespace sees it (`/proc` is its), and each command's
//! numbers (arguments and results) as the actor's own namespace does, so that a
//! member of a nested namespace kills, waits for and groups by its own numbers and
//! cannot name a process outside (it passes a number no process has).
//!
//! Beyond that first mix (`UPROC_KERNEL_EXT`, see [`ext`]): forks by any thread, not
//! only leaders (a thread's exit hands its children to another thread, deterministic
//! as long as one thread exits per step); `CLONE_PARENT` and exit signals other than
//! SIGCHLD through clone3 (0, SIGWINCH, SIGURG; the fatal SIGUSR1 and SIGHUP only with
//! `UPROC_KERNEL_FATAL_EXITSIG`, since a parent that a group kill kills in the same
//! step dies of either); `__WNOTHREAD`, `__WCLONE` and `__WALL` on waits;
//! `RLIMIT_CORE` on and off (`Task::set_dumps_core`) where cores land as `core` in the
//! dying process's working directory; SIGQUIT, SIGSEGV, SIGTTIN and SIGWINCH.
//!
//! Where `unshare` is missing or not permitted the test prints why and passes.
//! `UPROC_KERNEL_SEEDS` (default 6) and `UPROC_KERNEL_STEPS` (default 120) size it;
//! `UPROC_KERNEL_FIRST_SEED` (default 1) picks other sequences; `UPROC_KERNEL_TRACE=N`
//! prints uproc's view of every task after each step from step `N` on.
//! Found so far (each then measured by hand and pinned by a unit test): a stop signal
//! to a stopped process stays queued until SIGCONT (uproc dropped it); a continued
//! process dies of its thread's own fatal signal before the group's, and of a
//! synchronous one before a lower-numbered one (uproc took the lowest-numbered of
//! all); a child inherits its parent's SIGCHLD disposition, and `SIG_IGN` discards a
//! pending SIGCHLD (uproc did neither); the thread that ends a namespace init's
//! process sleeps in its exit, shown running, until its namespace is empty (uproc
//! showed a zombie), and shows no SIGKILL pending (it dequeued it); an orphaned
//! process group's SIGHUP reaches its stopped members only (uproc sent it to all).
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::process::Command;
use std::time::{Duration, Instant};

use uproc_abi::{
    CloneFlags, Errno, InfoMask, PidfdFlags, PidfdSignalFlags, Profile, Signal, WaitOptions,
};
use uproc_pidfs::PidFd;
use uproc_pidns::PidNamespace;
use uproc_tasklist::{
    ChildCode, CloneArgs, SigChld, System, SystemConfig, Task, TaskState, WaitId, WaitInfo,
};

const ROLE_ENV: &str = "UPROC_TASKLIST_KERNEL_DRIVER";
const DIR_ENV: &str = "UPROC_TASKLIST_KERNEL_DIR";
const SKIP: &str = "UPROC_KERNEL_SKIP";
const DONE: &str = "UPROC_KERNEL_DONE";
const DIVERGE: &str = "UPROC_KERNEL_DIVERGE";
/// The parts of the operation mix beyond the first version's, chosen by
/// `UPROC_KERNEL_EXT` (a comma list; default `all`): `nonleader` (any thread forks, not
/// only leaders), `clone` (`CLONE_PARENT` and exit signals other than SIGCHLD through
/// clone3), `wflags` (`__WNOTHREAD`, `__WCLONE`, `__WALL` on waits), `core`
/// (`RLIMIT_CORE` on and off, `Task::set_dumps_core`), `sigs` (SIGQUIT, SIGSEGV,
/// SIGTTIN, SIGWINCH). `core` runs only where `/proc/sys/kernel/core_pattern` is
/// `core` (a file in the dying process's working directory, a scratch directory of
/// its own here): a pipe to a crash handler, or a path elsewhere, would decide
/// whether a core is written, which uproc cannot know.
fn ext(name: &str) -> bool {
    let on = match std::env::var("UPROC_KERNEL_EXT") {
        Ok(v) => v.split(',').any(|x| x == name || x == "all"),
        Err(_) => true,
    };
    on && (name != "core" || core_files_here())
}

/// Whether the kernel writes core files as `core` in the working directory.
fn core_files_here() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/core_pattern").is_ok_and(|p| p.trim() == "core")
}

/// A number no process has in either world during a run.
const NO_SUCH_PID: i32 = 29_999;
/// Live processes at most (the driver excluded).
const MAX_LIVE: usize = 9;

/// The driver runs before the test harness's `main`, on the process's one thread: the
/// namespace's init must be single-threaded as uproc's runtime init is (a waiting
/// thread sees its own children first, then its other threads', and orphans go to
/// the main thread's list). An `.init_array` entry runs before `main`; without the
/// driver's environment variable it returns at once.
#[used]
#[unsafe(link_section = ".init_array")]
static DRIVER_BEFORE_MAIN: extern "C" fn() = driver_before_main;

extern "C" fn driver_before_main() {
    if std::env::var_os(ROLE_ENV).is_none() {
        return;
    }
    let ok = std::panic::catch_unwind(driver).is_ok();
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    // SAFETY: ends the process (and the namespace) without running the harness.
    unsafe { libc::_exit(if ok { 0 } else { 1 }) }
}

#[test]
fn life_cycle_matches_the_kernel() {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = std::env::temp_dir().join(format!("uproc-kernel-lifecycle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory for the FIFOs");
    let out = Command::new("unshare")
        .args(["-Urpf", "--mount-proc"])
        .arg(&exe)
        .env(ROLE_ENV, "1")
        .env(DIR_ENV, &dir)
        .output();
    let _ = std::fs::remove_dir_all(&dir);
    let out = match out {
        Ok(out) => out,
        Err(e) => {
            println!("SKIP kernel life cycle: cannot run unshare(1): {e}");
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if let Some(l) = stdout.lines().find(|l| l.contains(SKIP)) {
        println!("SKIP kernel life cycle: {l}");
        return;
    }
    if let Some(l) = stdout.lines().find(|l| l.contains(DIVERGE)) {
        panic!("uproc diverges from the kernel: {l}\n--- driver output ---\n{stdout}\n{stderr}");
    }
    let Some(done) = stdout.lines().find(|l| l.contains(DONE)) else {
        if !out.status.success() && stderr.contains("unshare") {
            println!(
                "SKIP kernel life cycle: unshare -Urpf --mount-proc not permitted here: {}",
                stderr.trim()
            );
            return;
        }
        panic!(
            "the driver printed no result (status {}):\n{stdout}\n{stderr}",
            out.status
        );
    };
    assert!(out.status.success(), "driver failed: {stdout}\n{stderr}");
    println!("kernel life cycle: {done}");
}

// ---- the controlled processes (no allocation after fork) --------------------------

/// Where the FIFOs live, as bytes, for building paths without allocating.
#[derive(Clone, Copy)]
struct Dir {
    bytes: [u8; 200],
    len: usize,
}

impl Dir {
    fn new(path: &str) -> Dir {
        let mut bytes = [0u8; 200];
        assert!(path.len() < 150, "FIFO directory path too long: {path}");
        bytes[..path.len()].copy_from_slice(path.as_bytes());
        Dir {
            bytes,
            len: path.len(),
        }
    }

    /// `DIR/<kind><id>` as a NUL-terminated path in a stack buffer.
    fn fifo(&self, kind: u8, id: usize) -> [u8; 200] {
        let mut p = self.bytes;
        let mut n = self.len;
        p[n] = b'/';
        p[n + 1] = kind;
        n += 2;
        n += write_num(&mut p[n..], id as i64);
        p[n] = 0;
        p
    }
}

/// Writes `v` in decimal; returns the length.
fn write_num(out: &mut [u8], v: i64) -> usize {
    let mut digits = [0u8; 24];
    let mut n = 0;
    let neg = v < 0;
    let mut u = v.unsigned_abs();
    loop {
        digits[n] = b'0' + (u % 10) as u8;
        n += 1;
        u /= 10;
        if u == 0 {
            break;
        }
    }
    let mut len = 0;
    if neg {
        out[0] = b'-';
        len = 1;
    }
    for i in (0..n).rev() {
        out[len] = digits[i];
        len += 1;
    }
    len
}

/// Parses up to 4 space-separated integers.
fn parse_nums(line: &[u8]) -> [i64; 4] {
    let mut out = [0i64; 4];
    let mut k = 0;
    let mut cur: i64 = 0;
    let mut neg = false;
    let mut in_num = false;
    for &b in line.iter().chain(std::iter::once(&b' ')) {
        match b {
            b'-' => {
                neg = true;
                in_num = true;
            }
            b'0'..=b'9' => {
                cur = cur * 10 + i64::from(b - b'0');
                in_num = true;
            }
            _ => {
                if in_num && k < 4 {
                    out[k] = if neg { -cur } else { cur };
                    k += 1;
                }
                cur = 0;
                neg = false;
                in_num = false;
            }
        }
    }
    out
}

fn errno() -> i64 {
    // SAFETY: reads this thread's errno.
    i64::from(unsafe { *libc::__errno_location() })
}

/// Makes the FIFOs of process `id` (before the fork that creates it).
fn make_fifos(dir: &Dir, id: usize) -> bool {
    for kind in [b'c', b'r'] {
        let p = dir.fifo(kind, id);
        // SAFETY: `p` is NUL-terminated.
        // One left by a fork that failed (no process ever opened it) serves again.
        if unsafe { libc::mkfifo(p.as_ptr().cast(), 0o600) } != 0
            && errno() != i64::from(libc::EEXIST)
        {
            return false;
        }
    }
    true
}

/// Opens a FIFO of process `id` read-write (never blocks).
fn open_fifo(dir: &Dir, kind: u8, id: usize) -> i32 {
    let p = dir.fifo(kind, id);
    // SAFETY: `p` is NUL-terminated.
    unsafe { libc::open(p.as_ptr().cast(), libc::O_RDWR) }
}

/// One command, run by the process itself (a controlled process or the driver):
/// returns the reply's numbers. `op`: 1 fork(new id, new pid namespace), 3 kill, 4
/// waitid, 5 setpgid, 6 setsid, 7 subreaper, 8 thread(new id), 10 tgkill, 11 SIGCHLD
/// disposition, 12 unshare(CLONE_NEWPID), 13 setns(pidfd, CLONE_NEWPID). Exit (2) and
/// thread exit (9) never return.
fn run_command(dir: &Dir, args: [i64; 4], keep: &[i32]) -> [i64; 4] {
    let [op, a, b, c] = args;
    // SAFETY: plain system calls on values and on buffers on this stack; the forked
    // child only closes descriptors and enters `controlled` (no allocation).
    unsafe {
        match op {
            1 => {
                let id = a as usize;
                if !make_fifos(dir, id) {
                    return [-errno(), 0, 0, 0];
                }
                // `b`: the child is the init of a new pid namespace (`CLONE_NEWPID`:
                // raw clone without a new stack, as fork).
                // `c`: the clone3 exit signal, `| 1 << 16` for CLONE_PARENT.
                let exit_sig = c & 0xffff;
                let parent = c & (1 << 16) != 0;
                let pid = if b != 0 || parent || exit_sig != i64::from(libc::SIGCHLD) {
                    let mut flags: u64 = 0;
                    if b != 0 {
                        flags |= libc::CLONE_NEWPID as u64;
                    }
                    if parent {
                        flags |= libc::CLONE_PARENT as u64;
                    }
                    let args: [u64; 11] = [flags, 0, 0, 0, exit_sig as u64, 0, 0, 0, 0, 0, 0];
                    libc::syscall(libc::SYS_clone3, args.as_ptr(), 88usize) as i32
                } else {
                    libc::fork()
                };
                if pid < 0 {
                    return [-errno(), 0, 0, 0];
                }
                if pid == 0 {
                    for &fd in keep {
                        libc::close(fd);
                    }
                    // A working directory of its own: core files ("core", the
                    // core_pattern here) of processes dumping at once would collide
                    // (O_EXCL: the second dump fails, CLD_KILLED).
                    let d = dir.fifo(b'd', id);
                    libc::mkdir(d.as_ptr().cast(), 0o700);
                    libc::chdir(d.as_ptr().cast());
                    controlled(dir, id);
                }
                [i64::from(pid), 0, 0, 0]
            }
            2 => libc::_exit(a as i32),
            8 => {
                let id = a as usize;
                if !make_fifos(dir, id) {
                    return [-errno(), 0, 0, 0];
                }
                NEW_TID.store(0, std::sync::atomic::Ordering::SeqCst);
                let arg = Box::into_raw(Box::new((*dir, id)));
                let mut th: libc::pthread_t = std::mem::zeroed();
                let r = libc::pthread_create(&mut th, std::ptr::null(), thread_main, arg.cast());
                if r != 0 {
                    drop(Box::from_raw(arg));
                    return [-i64::from(r), 0, 0, 0];
                }
                libc::pthread_detach(th);
                loop {
                    let tid = NEW_TID.load(std::sync::atomic::Ordering::SeqCst);
                    if tid != 0 {
                        return [i64::from(tid), 0, 0, 0];
                    }
                    libc::sched_yield();
                }
            }
            9 => {
                libc::syscall(libc::SYS_exit, a as i32);
                unreachable!("SYS_exit returned");
            }
            10 => {
                let r = libc::syscall(libc::SYS_tgkill, a as i32, b as i32, c as i32);
                [if r == 0 { 0 } else { -errno() }, 0, 0, 0]
            }
            11 => {
                // uproc's `SigChld`: Default (a handler: SIGCHLD is queued, here while
                // blocked), Ignore (`SIG_IGN`), NoCldWait (a handler with
                // `SA_NOCLDWAIT`).
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = if a == 1 {
                    libc::SIG_IGN
                } else {
                    chld_handler as extern "C" fn(libc::c_int) as libc::sighandler_t
                };
                if a == 2 {
                    sa.sa_flags = libc::SA_NOCLDWAIT;
                }
                // Leaving `SIG_IGN`: what was queued under it (only because SIGCHLD is
                // blocked here) goes first, as an unblocked `SIG_IGN` would have
                // discarded it at the send: setting `SIG_IGN` again flushes it.
                let mut old: libc::sigaction = std::mem::zeroed();
                libc::sigaction(libc::SIGCHLD, std::ptr::null(), &mut old);
                if old.sa_sigaction == libc::SIG_IGN {
                    libc::sigaction(libc::SIGCHLD, &old, std::ptr::null_mut());
                }
                let r = libc::sigaction(libc::SIGCHLD, &sa, std::ptr::null_mut());
                [if r == 0 { 0 } else { -errno() }, 0, 0, 0]
            }
            3 => {
                let r = libc::kill(a as i32, b as i32);
                [if r == 0 { 0 } else { -errno() }, 0, 0, 0]
            }
            4 => {
                let mut si: libc::siginfo_t = std::mem::zeroed();
                let r = libc::waitid(a as libc::idtype_t, b as libc::id_t, &mut si, c as i32);
                if r != 0 {
                    return [-errno(), 0, 0, 0];
                }
                [
                    0,
                    i64::from(si.si_pid()),
                    i64::from(si.si_code),
                    i64::from(si.si_status()),
                ]
            }
            5 => {
                let r = libc::setpgid(a as i32, b as i32);
                [if r == 0 { 0 } else { -errno() }, 0, 0, 0]
            }
            6 => {
                let r = libc::setsid();
                [if r < 0 { -errno() } else { i64::from(r) }, 0, 0, 0]
            }
            7 => {
                let r = libc::prctl(libc::PR_SET_CHILD_SUBREAPER, a as libc::c_ulong, 0, 0, 0);
                [if r == 0 { 0 } else { -errno() }, 0, 0, 0]
            }
            14 => {
                let v = if a != 0 { libc::RLIM_INFINITY } else { 0 };
                let rl = libc::rlimit {
                    rlim_cur: v,
                    rlim_max: libc::RLIM_INFINITY,
                };
                let r = libc::setrlimit(libc::RLIMIT_CORE, &rl);
                [if r == 0 { 0 } else { -errno() }, 0, 0, 0]
            }
            12 => {
                let r = libc::unshare(libc::CLONE_NEWPID);
                [if r == 0 { 0 } else { -errno() }, 0, 0, 0]
            }
            13 => {
                // setns through a pidfd of process `a` (as this thread sees it).
                let fd = libc::syscall(libc::SYS_pidfd_open, a as libc::pid_t, 0) as i32;
                if fd < 0 {
                    return [-errno(), 0, 0, 0];
                }
                let r = libc::setns(fd, libc::CLONE_NEWPID);
                let e = if r == 0 { 0 } else { -errno() };
                libc::close(fd);
                [e, 0, 0, 0]
            }
            _ => [-i64::from(libc::ENOSYS), 0, 0, 0],
        }
    }
}

/// The SIGCHLD handler of uproc's `SigChld::Default` and `NoCldWait` (never runs:
/// SIGCHLD is blocked).
extern "C" fn chld_handler(_: libc::c_int) {}

/// The tid of the thread a `pthread_create` just made (it stores it first thing).
static NEW_TID: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// A controlled thread: reports its tid, then serves its own FIFOs.
extern "C" fn thread_main(arg: *mut libc::c_void) -> *mut libc::c_void {
    // SAFETY: `arg` is the `Box` the creating thread leaked for this one.
    let (dir, id) = *unsafe { Box::from_raw(arg.cast::<(Dir, usize)>()) };
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    NEW_TID.store(tid, std::sync::atomic::Ordering::SeqCst);
    controlled(&dir, id)
}

/// A controlled process's loop: one command per line on its FIFO, one reply per line.
fn controlled(dir: &Dir, id: usize) -> ! {
    let cmd = open_fifo(dir, b'c', id);
    let resp = open_fifo(dir, b'r', id);
    // SAFETY: plain system calls on stack buffers.
    unsafe {
        if cmd < 0 || resp < 0 {
            libc::_exit(111);
        }
        let mut buf = [0u8; 128];
        loop {
            let n = libc::read(cmd, buf.as_mut_ptr().cast(), buf.len());
            if n <= 0 {
                if n < 0 && errno() == i64::from(libc::EINTR) {
                    continue;
                }
                libc::_exit(112);
            }
            let reply = run_command(dir, parse_nums(&buf[..n as usize]), &[cmd, resp]);
            let mut out = [0u8; 128];
            let mut len = 0;
            for (i, v) in reply.iter().enumerate() {
                if i > 0 {
                    out[len] = b' ';
                    len += 1;
                }
                len += write_num(&mut out[len..], *v);
            }
            out[len] = b'\n';
            len += 1;
            libc::write(resp, out.as_ptr().cast(), len);
        }
    }
}

// ---- the driver ---------------------------------------------------------------------

/// What one process looks like from outside, in either world, numbers as ids.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Seen {
    state: TaskState,
    parent: Option<usize>,
    pgrp: Option<usize>,
    session: Option<usize>,
    pending: u64,
}

/// Every task's numbers in one world, and the pid namespaces the tasks are in, by
/// id: `chain[i]` the namespaces from the driver's (0) to task `i`'s own, `nspid[i]`
/// its number in each of them, `leader[i]` its thread group's leader.
/// `for_children[i]`, where set, is the chain task `i`'s children go to after its
/// `unshare(CLONE_NEWPID)` or `setns` (`pid_ns_for_children`, per thread).
#[derive(Default)]
struct Numbers {
    chain: Vec<Vec<usize>>,
    nspid: Vec<Vec<i32>>,
    leader: Vec<usize>,
    for_children: Vec<Option<Vec<usize>>>,
    namespaces: usize,
}

impl Numbers {
    /// Task `id` (the next one) made by `parent`: a thread of its group, a process in
    /// its namespace, or the init of a new one (`newpid`).
    fn add(&mut self, parent: Option<usize>, thread: bool, newpid: bool, nspid: Vec<i32>) {
        let id = self.nspid.len();
        let mut chain = match parent {
            None => vec![0],
            Some(p) if thread => self.chain[p].clone(),
            Some(p) => self.for_children[p]
                .clone()
                .unwrap_or_else(|| self.chain[p].clone()),
        };
        if newpid {
            self.namespaces += 1;
            chain.push(self.namespaces);
        }
        assert_eq!(chain.len(), nspid.len(), "task {id}'s namespace levels");
        self.chain.push(chain);
        self.nspid.push(nspid);
        // A child shares its parent's `nsproxy` (or has a new one, `CLONE_NEWPID`):
        // its children go where it lives.
        self.for_children.push(None);
        let leader = match parent {
            Some(p) if thread => self.leader[p],
            _ => id,
        };
        self.leader.push(leader);
    }

    /// The number task `target` has as task `viewer` sees it, [`NO_SUCH_PID`] if it is
    /// in no namespace of `viewer`'s (`pid_nr_ns` would give 0, which means something
    /// else to the calls that take it).
    fn nr(&self, viewer: usize, target: usize) -> i32 {
        let v = &self.chain[viewer];
        if self.chain[target].starts_with(v) {
            self.nspid[target][v.len() - 1]
        } else {
            NO_SUCH_PID
        }
    }

    /// Task `actor`'s `unshare(CLONE_NEWPID)` succeeded: a new namespace below its own,
    /// which its next fork's child will be the init of.
    fn unshare(&mut self, actor: usize) {
        self.namespaces += 1;
        let mut chain = self.chain[actor].clone();
        chain.push(self.namespaces);
        self.for_children[actor] = Some(chain);
    }

    /// Task `actor`'s setns to task `target`'s namespace succeeded.
    fn setns(&mut self, actor: usize, target: usize) {
        let chain = self.chain[target].clone();
        self.for_children[actor] = (chain != self.chain[actor]).then_some(chain);
    }

    /// The task whose number is `nr` as `viewer` sees it.
    fn id(&self, viewer: usize, nr: i32) -> Option<usize> {
        let v = &self.chain[viewer];
        // The latest: a number may have been another's that was reaped.
        (0..self.nspid.len())
            .rfind(|&j| self.chain[j].starts_with(v) && self.nspid[j][v.len() - 1] == nr)
    }
}

/// One step.
#[derive(Clone, Copy, Debug)]
enum Op {
    /// A fork; with `newpid` the child is the init of a new pid namespace.
    Fork {
        actor: usize,
        newpid: bool,
        parent: bool,
        exit_sig: i32,
    },
    /// RLIMIT_CORE on (unlimited) or off (0).
    Core {
        actor: usize,
        on: bool,
    },
    /// A thread of the actor's process (`pthread_create`; `CLONE_THREAD`).
    Thread {
        actor: usize,
    },
    /// `unshare(CLONE_NEWPID)` by the actor thread.
    Unshare {
        actor: usize,
    },
    /// `setns(pidfd_open(target), CLONE_NEWPID)` by the actor thread.
    Setns {
        actor: usize,
        target: usize,
    },
    /// The actor thread alone (`SYS_exit`); `Exit` is `exit_group` (`_exit`).
    ThreadExit {
        actor: usize,
        code: i32,
    },
    Tgkill {
        actor: usize,
        target: usize,
        sig: i32,
    },
    Exit {
        actor: usize,
        code: i32,
    },
    /// `kill(target)`: a process (`Proc`), a process group of a process (`Pgrp`), the
    /// caller's group (0), everyone (-1), or nobody.
    Kill {
        actor: usize,
        target: Target,
        sig: i32,
    },
    Wait {
        actor: usize,
        id: WaitSel,
        opts: i32,
    },
    Setpgid {
        actor: usize,
        pid: Option<usize>,
        pgid: Option<usize>,
    },
    Setsid {
        actor: usize,
    },
    /// The SIGCHLD disposition: 0 default (a handler), 1 `SIG_IGN`, 2 `SA_NOCLDWAIT`.
    Sigchld {
        actor: usize,
        mode: u8,
    },
    Subreaper {
        actor: usize,
        on: bool,
    },
    /// The driver's `pidfd_open(target, flags)` (`PIDFD_THREAD`, `PIDFD_NONBLOCK`);
    /// the pidfd replaces the one it held for that target.
    PidfdOpen {
        target: usize,
        flags: u32,
    },
    /// `pidfd_send_signal(pidfd of target, sig, NULL, flags)` by the driver.
    PidfdSignal {
        target: usize,
        sig: i32,
        flags: u32,
    },
    /// `poll(2)` on the driver's pidfd of target, not waiting.
    PidfdPoll {
        target: usize,
    },
    /// `waitid(P_PIDFD, pidfd of target, opts)` by the driver (`WNOHANG` left out on a
    /// `PIDFD_NONBLOCK` pidfd, which makes nothing ready EAGAIN).
    PidfdWait {
        target: usize,
        opts: i32,
    },
    /// `ioctl(pidfd of target, PIDFD_GET_INFO)` asking for `PIDFD_INFO_PID`, and
    /// `PIDFD_INFO_EXIT` if `exit`.
    PidfdInfo {
        target: usize,
        exit: bool,
    },
}

#[derive(Clone, Copy, Debug)]
enum Target {
    Proc(usize),
    Pgrp(usize),
    OwnGroup,
    All,
    Nobody,
}

impl Target {
    /// `kill`'s pid argument, with `pid(i)` the number of task `i` in the world at hand.
    fn pid(self, pid: impl Fn(usize) -> i32) -> i32 {
        match self {
            Target::Proc(i) => pid(i),
            Target::Pgrp(i) => -pid(i),
            Target::OwnGroup => 0,
            Target::All => -1,
            Target::Nobody => NO_SUCH_PID,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum WaitSel {
    All,
    Pid(usize),
    Pgid(usize),
    OwnPgid,
    Nobody,
}

/// The kernel side of one process the driver made.
struct KProc {
    pid: i32,
    /// The thread group's id (its leader's pid).
    tgid: i32,
    cmd: i32,
    resp: i32,
}

struct Kernel {
    dir: Dir,
    procs: Vec<KProc>,
    nums: Numbers,
    /// Thread groups (by tgid) whose SIGCHLD disposition is `SIG_IGN`.
    ignoring: std::collections::HashSet<i32>,
    /// The driver's pidfds, by target id, with the flags they were opened with.
    pidfds: HashMap<usize, (i32, u32)>,
}

impl Kernel {
    fn fds(&self) -> Vec<i32> {
        self.procs
            .iter()
            .skip(1)
            .flat_map(|p| [p.cmd, p.resp])
            .chain(self.pidfds.values().map(|&(fd, _)| fd))
            .collect()
    }

    /// The driver's pidfd of task `id` (one the step generator saw).
    fn pidfd(&self, id: usize) -> i32 {
        self.pidfds[&id].0
    }

    /// Runs `args` as process `id` and returns its reply.
    fn command(&mut self, id: usize, args: [i64; 4]) -> [i64; 4] {
        if id == 0 {
            let keep = self.fds();
            return run_command(&self.dir, args, &keep);
        }
        let p = &self.procs[id];
        drain(p.resp);
        let line = format!("{} {} {} {}\n", args[0], args[1], args[2], args[3]);
        // SAFETY: a write of a short buffer to a FIFO the process reads.
        let w = unsafe { libc::write(p.cmd, line.as_ptr().cast(), line.len()) };
        assert_eq!(w, line.len() as isize, "command to process {id}");
        if args[0] == 2 || args[0] == 9 {
            return [0; 4];
        }
        // A kill or tgkill that stops or ends its own sender never replies (a stopped one
        // replies once continued: `drain` drops that late reply before the next
        // command).
        let mut pfd = libc::pollfd {
            fd: p.resp,
            events: libc::POLLIN,
            revents: 0,
        };
        // Only a kill or tgkill may stay silent; any other command replies, late on a
        // loaded machine (half a second was seen to be too little).
        let timeout_ms = if matches!(args[0], 3 | 10) { 500 } else { 5000 };
        // SAFETY: poll on one descriptor of ours.
        if unsafe { libc::poll(&mut pfd, 1, timeout_ms) } != 1 {
            assert!(
                matches!(args[0], 3 | 10),
                "no reply from process {id} to {args:?}"
            );
            return [0; 4];
        }
        let mut buf = [0u8; 128];
        // SAFETY: a read into a stack buffer from the process's reply FIFO.
        let n = unsafe { libc::read(p.resp, buf.as_mut_ptr().cast(), buf.len()) };
        assert!(n > 0, "no reply from process {id}");
        parse_nums(&buf[..n as usize])
    }

    /// After `actor` made new task `id`, `nr` in its namespace (a thread of its own
    /// group if `thread`, the init of a new namespace if `newpid`): its numbers as
    /// `/proc` (the driver's namespace) shows them, and its FIFOs.
    fn adopt(&mut self, actor: usize, id: usize, nr: i32, thread: bool, newpid: bool) {
        let level = self.nums.chain[actor].len() - 1;
        // The one task /proc shows that is not ours yet and has `nr` at the actor's
        // level: a process, or a thread of the actor's process.
        let tasks = if thread {
            format!("/proc/{}/task", self.procs[actor].tgid)
        } else {
            "/proc".to_string()
        };
        let found: Vec<(i32, Vec<i32>)> = std::fs::read_dir(&tasks)
            .expect("/proc")
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|&p| self.nums.id(0, p).is_none())
            .filter_map(|p| Some((p, nspid(&format!("{tasks}/{p}/status"))?)))
            .filter(|(_, ns)| ns.get(level) == Some(&nr))
            .collect();
        assert_eq!(
            found.len(),
            1,
            "task {id} ({nr} to task {actor}) in {tasks}"
        );
        let (pid, ns) = found.into_iter().next().expect("one");
        let tgid = if thread { self.procs[actor].tgid } else { pid };
        let cmd = open_fifo(&self.dir, b'c', id);
        let resp = open_fifo(&self.dir, b'r', id);
        assert!(cmd >= 0 && resp >= 0, "FIFOs of process {id}");
        self.procs.push(KProc {
            pid,
            tgid,
            cmd,
            resp,
        });
        self.nums.add(Some(actor), thread, newpid, ns);
    }

    /// Task `id`'s number in the driver's namespace, which `/proc` shows.
    fn pid(&self, id: usize) -> i32 {
        self.procs[id].pid
    }

    /// A waitid reply (`[ret, si_pid, si_code, si_status]`) to `actor` as an outcome.
    fn waited(&self, actor: usize, r: [i64; 4]) -> Outcome {
        if r[0] < 0 {
            return Outcome::Failed(-r[0] as i32);
        }
        if r[1] == 0 {
            return Outcome::Waited(None);
        }
        Outcome::Waited(Some((
            self.nums.id(actor, r[1] as i32),
            r[2] as i32,
            r[3] as i32,
        )))
    }

    fn ignores_chld(&self, id: usize) -> bool {
        self.ignoring.contains(&self.procs[id].tgid)
    }

    /// `/proc` for process `id`: state, ppid, pgrp, session, pending; `None` once gone.
    fn raw(&self, id: usize) -> Option<(u8, i32, i32, i32, u64)> {
        let pid = self.procs[id].pid;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let rest = &stat[stat.rfind(')')? + 2..];
        let mut f = rest.split_whitespace();
        let state = f.next()?.as_bytes()[0];
        let ppid: i32 = f.next()?.parse().ok()?;
        let pgrp: i32 = f.next()?.parse().ok()?;
        let sid: i32 = f.next()?.parse().ok()?;
        let mut pending = 0;
        if state != b'Z' {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            for l in status.lines() {
                if let Some(v) = l
                    .strip_prefix("SigPnd:")
                    .or_else(|| l.strip_prefix("ShdPnd:"))
                {
                    pending |= u64::from_str_radix(v.trim(), 16).ok()?;
                }
            }
        }
        Some((state, ppid, pgrp, sid, pending))
    }

    /// Whether task `id` is in its exit (`PF_EXITING` in `/proc/PID/stat`'s flags) but
    /// shows no zombie yet: a namespace init waiting for its namespace to empty.
    fn exiting(&self, id: usize) -> bool {
        let pid = self.procs[id].pid;
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false;
        };
        let Some(close) = stat.rfind(')') else {
            return false;
        };
        // After the name: state, ppid, pgrp, session, tty_nr, tpgid, flags.
        let flags: u64 = stat[close + 2..]
            .split_whitespace()
            .nth(6)
            .and_then(|f| f.parse().ok())
            .unwrap_or(0);
        const PF_EXITING: u64 = 0x4;
        flags & PF_EXITING != 0
    }

    fn seen(&self, id: usize) -> Seen {
        let map = |n: i32| self.nums.id(0, n);
        match self.raw(id) {
            None => Seen {
                state: TaskState::Dead,
                parent: None,
                pgrp: None,
                session: None,
                pending: 0,
            },
            Some((st, ppid, pgrp, sid, pending)) => {
                let state = match st {
                    b'T' | b't' => TaskState::Stopped,
                    b'Z' => TaskState::Zombie,
                    b'X' => TaskState::Dead,
                    _ => TaskState::Running,
                };
                let live = !matches!(state, TaskState::Zombie | TaskState::Dead);
                Seen {
                    state,
                    parent: map(ppid),
                    pgrp: if live { map(pgrp) } else { None },
                    session: if live { map(sid) } else { None },
                    pending,
                }
            }
        }
    }

    /// Waits until the kernel's view settles: no controlled process runnable (`R`:
    /// at rest each sleeps in `read`, is stopped or is a zombie), dying, or about to
    /// act on a signal, and the same view three times in a row, 2 ms apart (at most
    /// 10 s: a loaded machine may leave a signalled process unscheduled for a while).
    fn settle(&self) -> Vec<Seen> {
        let start = Instant::now();
        let mut last = self.snapshot();
        let mut same = 0;
        while same < 3 && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(2));
            let (now, busy) = self.snapshot_busy();
            if now == last && !busy {
                same += 1;
            } else {
                same = 0;
                last = now;
            }
        }
        last
    }

    fn snapshot(&self) -> Vec<Seen> {
        self.snapshot_busy().0
    }

    /// The view, and whether some controlled process is still on its way somewhere.
    fn snapshot_busy(&self) -> (Vec<Seen>, bool) {
        let mut busy = false;
        let seen = (0..self.procs.len())
            .map(|i| {
                if i > 0 {
                    if let Some((st, _, _, _, pending)) = self.raw(i) {
                        // Runnable, dying (SIGKILL pending), or not stopped with a
                        // signal other than the blocked SIGCHLD pending (it has yet
                        // to act on it).
                        // A namespace init asleep in its exit (its SIGKILL still
                        // pending) waits for its namespace to empty: settled.
                        let chld = 1u64 << (libc::SIGCHLD - 1);
                        if st == b'S' && self.exiting(i) {
                            return self.seen(i);
                        }
                        busy |= matches!(st, b'R' | b'D')
                            || pending & (1 << (libc::SIGKILL - 1)) != 0
                            || (!matches!(st, b'T' | b't' | b'Z') && pending & !chld != 0);
                    }
                }
                self.seen(i)
            })
            .collect();
        (seen, busy)
    }
}

/// The `NSpid:` line of a `/proc` status file: the task's number in the driver's
/// namespace and in each below it, down to its own.
fn nspid(status: &str) -> Option<Vec<i32>> {
    let text = std::fs::read_to_string(status).ok()?;
    let line = text.lines().find_map(|l| l.strip_prefix("NSpid:"))?;
    line.split_whitespace().map(|n| n.parse().ok()).collect()
}

/// Drops whatever is waiting in a reply FIFO (a late reply).
fn drain(fd: i32) {
    let mut buf = [0u8; 128];
    loop {
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll and read on one descriptor of ours, into a stack buffer.
        unsafe {
            if libc::poll(&mut pfd, 1, 0) != 1 {
                return;
            }
            libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        }
    }
}

/// One uproc world (one profile).
struct Uproc {
    profile: Profile,
    _sys: std::sync::Arc<System>,
    tasks: Vec<Task>,
    nums: Numbers,
    /// The init's namespace, the driver's counterpart (what `/proc` shows).
    ns: std::sync::Arc<PidNamespace>,
    /// The init's pidfds, by target id (the driver's, in this world).
    pidfds: HashMap<usize, PidFd>,
}

impl Uproc {
    fn new(profile: Profile) -> Uproc {
        let sys = System::new(SystemConfig {
            profile,
            reap_orphans: false,
            ..SystemConfig::default()
        })
        .expect("a runtime");
        // The driver is the init of a nested namespace, not the global init (whose
        // children do not keep a process group from being orphaned): so is this one,
        // in a session of its own as the driver makes itself.
        let args = CloneArgs {
            flags: CloneFlags::NEWPID,
            ..CloneArgs::default()
        };
        let init = sys.init().fork(&args).expect("a namespace init");
        assert_eq!(init.pid(), 1);
        init.setsid().expect("the namespace init's own session");
        let mut nums = Numbers::default();
        nums.add(None, false, false, vec![init.pid()]);
        Uproc {
            profile,
            _sys: sys,
            ns: init.pid_ns(),
            tasks: vec![init],
            nums,
            pidfds: HashMap::new(),
        }
    }

    /// A fork (`flags`) by task `actor`; the new task gets id `new_id`.
    fn fork(&mut self, actor: usize, flags: CloneFlags, new_id: usize) -> Outcome {
        self.fork_sig(actor, flags, new_id, None)
    }

    fn fork_sig(
        &mut self,
        actor: usize,
        flags: CloneFlags,
        new_id: usize,
        exit_signal: Option<Signal>,
    ) -> Outcome {
        let args = CloneArgs {
            flags,
            exit_signal,
            ..CloneArgs::default()
        };
        match self.tasks[actor].fork(&args) {
            Ok(t) => {
                assert_eq!(self.tasks.len(), new_id);
                // From the driver's counterpart's level down (the root is above it).
                let nspid = t.nspid()[1..].to_vec();
                let thread = flags.contains(CloneFlags::NEW_THREAD);
                let newpid = flags.contains(CloneFlags::NEWPID);
                self.nums.add(Some(actor), thread, newpid, nspid);
                self.tasks.push(t);
                Outcome::Forked
            }
            Err(e) => errno_of(e),
        }
    }

    /// A waitid by task `actor`, as an outcome.
    fn wait(&self, actor: usize, which: WaitId<'_>, opts: i32) -> Outcome {
        let o = WaitOptions::from_bits_retain(opts as u32);
        match self.tasks[actor].wait(which, o) {
            Ok(None) => Outcome::Waited(None),
            Ok(Some(info)) => {
                let (code, status) = code_of(&info);
                Outcome::Waited(Some((self.nums.id(actor, info.pid), code, status)))
            }
            Err(e) => errno_of(e),
        }
    }

    fn seen(&self, id: usize) -> Seen {
        let t = &self.tasks[id];
        let map = |n: i32| self.nums.id(0, n);
        let state = t.state();
        let live = !matches!(state, TaskState::Zombie | TaskState::Dead);
        if state == TaskState::Dead {
            return Seen {
                state,
                parent: None,
                pgrp: None,
                session: None,
                pending: 0,
            };
        }
        Seen {
            state,
            parent: map(t.ppid_in(&self.ns)),
            pgrp: if live { map(t.pgid_in(&self.ns)) } else { None },
            session: if live { map(t.sid_in(&self.ns)) } else { None },
            pending: if live {
                t.pending_signals().iter().fold(0, |m, s| m | s.mask())
            } else {
                0
            },
        }
    }
}

/// xorshift64*: the steps of one seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const SIGNALS: [i32; 13] = [
    libc::SIGQUIT,
    libc::SIGSEGV,
    libc::SIGTTIN,
    libc::SIGWINCH,
    0,
    libc::SIGTERM,
    libc::SIGKILL,
    libc::SIGSTOP,
    libc::SIGCONT,
    libc::SIGUSR1,
    libc::SIGHUP,
    libc::SIGTSTP,
    libc::SIGCHLD,
];

/// The next step, for a state both worlds agree on. `leaders[i]`: task `i` leads its
/// thread group.
/// `shared_stop[i]`: task `i`'s process has another live thread and is stopped.
///
/// `pidfds`: the flags of the driver's pidfd of each task that has one.
fn gen_op(
    rng: &mut Rng,
    seen: &[Seen],
    leaders: &[bool],
    shared_stop: &[bool],
    pidfds: &HashMap<usize, u32>,
    unsettled: &std::collections::HashSet<usize>,
) -> Op {
    let runnable: Vec<usize> = (0..seen.len())
        .filter(|&i| seen[i].state == TaskState::Running)
        .collect();
    let live = seen
        .iter()
        .skip(1)
        .filter(|s| !matches!(s.state, TaskState::Dead | TaskState::Zombie))
        .count();
    let actor = runnable[rng.below(runnable.len())];
    let any = rng.below(seen.len());
    let mut with_fd: Vec<usize> = pidfds.keys().copied().collect();
    with_fd.sort_unstable();
    let fd_of = with_fd.get(rng.below(with_fd.len().max(1))).copied();
    let nsig = if ext("sigs") { SIGNALS.len() } else { 9 };
    let base = SIGNALS.len() - 9;
    let pick_sig = |rng: &mut Rng| {
        let i = rng.below(nsig);
        if ext("sigs") {
            SIGNALS[i]
        } else {
            SIGNALS[base + i]
        }
    };
    loop {
        let op = match rng.below(38) {
            // Only leaders fork: when a process with several threads dies, each thread
            // hands its own children to the reaper as it exits, in an order the
            // kernel's scheduling decides, and a later wait would report whichever
            // came first.
            0..=4 if live < MAX_LIVE && (leaders[actor] || ext("nonleader")) => {
                let (parent, exit_sig) = if ext("clone") {
                    let parent = rng.below(5) == 0;
                    let sigs = if parent {
                        [0, 0, 0, 0, libc::SIGCHLD, libc::SIGWINCH]
                    } else {
                        // A fatal exit signal to a parent that a group kill kills in
                        // the same step races with that kill (seed 319 of the first
                        // runs): SIGWINCH (ignored by default) unless asked.
                        if std::env::var_os("UPROC_KERNEL_FATAL_EXITSIG").is_some() {
                            [
                                libc::SIGCHLD,
                                libc::SIGCHLD,
                                libc::SIGCHLD,
                                libc::SIGUSR1,
                                0,
                                libc::SIGHUP,
                            ]
                        } else {
                            [
                                libc::SIGCHLD,
                                libc::SIGCHLD,
                                libc::SIGCHLD,
                                libc::SIGWINCH,
                                0,
                                libc::SIGURG,
                            ]
                        }
                    };
                    (parent, sigs[rng.below(6)])
                } else {
                    (false, libc::SIGCHLD)
                };
                Op::Fork {
                    actor,
                    newpid: rng.below(5) == 0,
                    parent,
                    exit_sig,
                }
            }
            36 | 37 if ext("core") && actor != 0 => Op::Core {
                actor,
                on: rng.below(3) != 0,
            },
            5 | 6 if actor != 0 => Op::Exit {
                actor,
                code: rng.below(4) as i32,
            },
            // The driver stays single-threaded (the namespace's init, which forks).
            20..=22 if live < MAX_LIVE && actor != 0 => Op::Thread { actor },
            23 if actor != 0 => Op::ThreadExit {
                actor,
                code: rng.below(4) as i32,
            },
            // Not the driver: its disposition must keep orphans as zombies, as uproc's
            // runtime init does not reap them here.
            27 if actor != 0 => Op::Sigchld {
                actor,
                mode: rng.below(3) as u8,
            },
            // A fatal signal queued on one thread of a stopped process with several:
            // when SIGCONT wakes them, whichever thread runs first dies of its own
            // set's signal or of the group's, the scheduler's choice (measured: either
            // happens), so not that.
            24..=26 => {
                let sig = pick_sig(rng);
                let fatal = matches!(
                    sig,
                    libc::SIGTERM | libc::SIGUSR1 | libc::SIGHUP | libc::SIGQUIT | libc::SIGSEGV
                );
                if fatal && shared_stop[any] {
                    continue;
                }
                Op::Tgkill {
                    actor,
                    target: any,
                    sig,
                }
            }
            7..=10 => Op::Kill {
                actor,
                target: match rng.below(10) {
                    0..=5 => Target::Proc(any),
                    6 | 7 => Target::Pgrp(any),
                    8 => Target::OwnGroup,
                    _ if rng.below(4) == 0 => Target::All,
                    _ => Target::Nobody,
                },
                sig: pick_sig(rng),
            },
            11..=14 => Op::Wait {
                actor,
                id: match rng.below(8) {
                    0..=2 => WaitSel::All,
                    3..=5 => WaitSel::Pid(any),
                    6 => WaitSel::Pgid(any),
                    _ if rng.below(2) == 0 => WaitSel::OwnPgid,
                    _ => WaitSel::Nobody,
                },
                opts: wait_opts(rng),
            },
            28 | 29 => Op::PidfdOpen {
                target: any,
                flags: {
                    let mut f =
                        [0, PidfdFlags::THREAD.bits(), PidfdFlags::NONBLOCK.bits()][rng.below(3)];
                    if rng.below(4) == 0 {
                        f |= PidfdFlags::THREAD.bits();
                    }
                    if rng.below(16) == 0 {
                        // Not a pidfd_open flag: EINVAL.
                        f |= libc::O_RDWR as u32;
                    }
                    f
                },
            },
            30 | 31 if fd_of.is_some() => {
                let target = fd_of.expect("a pidfd");
                let sig = pick_sig(rng);
                let flags = [0, 0, 0, 1, 2, 4, 3][rng.below(7)];
                let thread_fd = pidfds[&target] & PidfdFlags::THREAD.bits() != 0;
                let to_thread = flags == 1 || (flags == 0 && thread_fd);
                let fatal = matches!(
                    sig,
                    libc::SIGTERM | libc::SIGUSR1 | libc::SIGHUP | libc::SIGQUIT | libc::SIGSEGV
                );
                // As for tgkill: not a fatal signal to one thread of a stopped process
                // with several.
                if fatal && to_thread && shared_stop[target] {
                    continue;
                }
                Op::PidfdSignal { target, sig, flags }
            }
            32 if fd_of.is_some() => Op::PidfdPoll {
                target: fd_of.expect("a pidfd"),
            },
            33 if fd_of.is_some() => {
                let target = fd_of.expect("a pidfd");
                let mut opts = wait_opts(rng);
                if pidfds[&target] & PidfdFlags::NONBLOCK.bits() != 0 && rng.below(2) == 0 {
                    opts &= !libc::WNOHANG;
                }
                Op::PidfdWait { target, opts }
            }
            19 if fd_of.is_some() => Op::PidfdInfo {
                target: fd_of.expect("a pidfd"),
                exit: rng.below(2) == 0,
            },
            15 | 16 => Op::Setpgid {
                actor,
                pid: (rng.below(3) != 0).then_some(any),
                pgid: (rng.below(3) != 0).then(|| rng.below(seen.len())),
            },
            17 => Op::Setsid { actor },
            18 => Op::Subreaper {
                actor,
                on: rng.below(2) == 0,
            },
            // Not the driver: it outlives the sequence, and its children's namespace
            // would carry over to the next one.
            34 if actor != 0 => Op::Unshare { actor },
            35 if actor != 0 => Op::Setns { actor, target: any },
            _ => continue,
        };
        if op_names(&op).iter().any(|t| unsettled.contains(t)) {
            continue;
        }
        return op;
    }
}

/// The tasks an op names besides its actor.
fn op_names(op: &Op) -> Vec<usize> {
    match *op {
        Op::Tgkill { target, .. } | Op::Setns { target, .. } => vec![target],
        Op::Kill {
            target: Target::Proc(t) | Target::Pgrp(t),
            ..
        } => vec![t],
        Op::Wait {
            id: WaitSel::Pid(t) | WaitSel::Pgid(t),
            ..
        } => vec![t],
        Op::Setpgid { pid, pgid, .. } => pid.into_iter().chain(pgid).collect(),
        Op::PidfdOpen { target, .. }
        | Op::PidfdSignal { target, .. }
        | Op::PidfdPoll { target }
        | Op::PidfdWait { target, .. }
        | Op::PidfdInfo { target, .. } => vec![target],
        _ => Vec::new(),
    }
}

/// waitid's options: `WNOHANG` and a random mix of the others, mostly with `WEXITED`.
fn wait_opts(rng: &mut Rng) -> i32 {
    let mut o = libc::WNOHANG;
    for bit in [
        libc::WEXITED,
        libc::WSTOPPED,
        libc::WCONTINUED,
        libc::WNOWAIT,
    ] {
        if rng.below(2) == 0 {
            o |= bit;
        }
    }
    if rng.below(6) != 0 && o & (libc::WEXITED | libc::WSTOPPED | libc::WCONTINUED) == 0 {
        o |= libc::WEXITED;
    }
    if ext("wflags") {
        for bit in [libc::__WNOTHREAD, libc::__WCLONE, libc::__WALL] {
            if rng.below(4) == 0 {
                o |= bit;
            }
        }
    }
    o
}

/// A step's result in either world, numbers as ids: Ok(value) or the errno.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    Done,
    Forked,
    Value(i64),
    /// waitid: nothing ready, or (id, si_code, si_status).
    Waited(Option<(Option<usize>, i32, i32)>),
    /// PIDFD_GET_INFO: (pid, tgid, ppid) as ids if `PIDFD_INFO_PID` came back, the
    /// exit status if `PIDFD_INFO_EXIT` did.
    Info {
        ids: Option<(Option<usize>, Option<usize>, Option<usize>)>,
        exit: Option<i32>,
    },
    Failed(i32),
}

fn errno_of(e: Errno) -> Outcome {
    Outcome::Failed(e.raw())
}

fn code_of(info: &WaitInfo) -> (i32, i32) {
    match info.code {
        ChildCode::Exited => (libc::CLD_EXITED, info.status.exited().unwrap_or(-1)),
        ChildCode::Killed => (
            libc::CLD_KILLED,
            info.status.signaled().map_or(-1, Signal::raw),
        ),
        ChildCode::Dumped => (
            libc::CLD_DUMPED,
            info.status.signaled().map_or(-1, Signal::raw),
        ),
        ChildCode::Stopped => (
            libc::CLD_STOPPED,
            info.status.stopped().map_or(-1, Signal::raw),
        ),
        ChildCode::Continued => (libc::CLD_CONTINUED, libc::SIGCONT),
    }
}

/// A command's reply: done, or the errno it returned negated.
fn done_or_failed(r: i64) -> Outcome {
    if r < 0 {
        Outcome::Failed(-r as i32)
    } else {
        Outcome::Done
    }
}

fn kernel_step(k: &mut Kernel, op: Op, new_id: usize) -> Outcome {
    let pidsel =
        |k: &Kernel, actor: usize, sel: Option<usize>| sel.map_or(0, |i| k.nums.nr(actor, i));
    match op {
        Op::Core { actor, on } => {
            let r = k.command(actor, [14, i64::from(on), 0, 0])[0];
            done_or_failed(r)
        }
        Op::Fork {
            actor,
            newpid,
            parent,
            exit_sig,
        } => {
            let c = i64::from(exit_sig) | if parent { 1 << 16 } else { 0 };
            let r = k.command(actor, [1, new_id as i64, i64::from(newpid), c])[0];
            if r < 0 {
                return Outcome::Failed(-r as i32);
            }
            k.adopt(actor, new_id, r as i32, false, newpid);
            // The child starts with its parent's dispositions.
            if k.ignores_chld(actor) {
                k.ignoring.insert(k.pid(new_id));
            }
            Outcome::Forked
        }
        Op::Thread { actor } => {
            let r = k.command(actor, [8, new_id as i64, 0, 0])[0];
            if r < 0 {
                return Outcome::Failed(-r as i32);
            }
            k.adopt(actor, new_id, r as i32, true, false);
            Outcome::Forked
        }
        Op::ThreadExit { actor, code } => {
            k.command(actor, [9, i64::from(code), 0, 0]);
            Outcome::Done
        }
        Op::Unshare { actor } => {
            let r = k.command(actor, [12, 0, 0, 0])[0];
            if r == 0 {
                k.nums.unshare(actor);
            }
            done_or_failed(r)
        }
        Op::Setns { actor, target } => {
            let nr = k.nums.nr(actor, target);
            let r = k.command(actor, [13, i64::from(nr), 0, 0])[0];
            if r == 0 {
                let opened = k.nums.id(actor, nr).expect("the process opened");
                k.nums.setns(actor, opened);
            }
            done_or_failed(r)
        }
        Op::Tgkill { actor, target, sig } => {
            let leader = k.nums.leader[target];
            let (tgid, tid) = (k.nums.nr(actor, leader), k.nums.nr(actor, target));
            let r = k.command(actor, [10, i64::from(tgid), i64::from(tid), i64::from(sig)])[0];
            done_or_failed(r)
        }
        Op::Exit { actor, code } => {
            k.command(actor, [2, i64::from(code), 0, 0]);
            Outcome::Done
        }
        Op::Kill { actor, target, sig } => {
            let pid = target.pid(|i| k.nums.nr(actor, i));
            let r = k.command(actor, [3, i64::from(pid), i64::from(sig), 0])[0];
            done_or_failed(r)
        }
        Op::Wait { actor, id, opts } => {
            let (idtype, n) = match id {
                WaitSel::All => (libc::P_ALL, 0),
                WaitSel::Pid(i) => (libc::P_PID, k.nums.nr(actor, i)),
                WaitSel::Pgid(i) => (libc::P_PGID, k.nums.nr(actor, i)),
                WaitSel::OwnPgid => (libc::P_PGID, 0),
                WaitSel::Nobody => (libc::P_PID, NO_SUCH_PID),
            };
            let r = k.command(actor, [4, i64::from(idtype), i64::from(n), i64::from(opts)]);
            k.waited(actor, r)
        }
        Op::Setpgid { actor, pid, pgid } => {
            let (a, b) = (pidsel(k, actor, pid), pidsel(k, actor, pgid));
            let r = k.command(actor, [5, i64::from(a), i64::from(b), 0])[0];
            done_or_failed(r)
        }
        Op::Setsid { actor } => {
            let r = k.command(actor, [6, 0, 0, 0])[0];
            if r < 0 {
                Outcome::Failed(-r as i32)
            } else {
                Outcome::Value(k.nums.id(actor, r as i32).map_or(-1, |i| i as i64))
            }
        }
        Op::Sigchld { actor, mode } => {
            let r = k.command(actor, [11, i64::from(mode), 0, 0])[0];
            let tgid = k.procs[actor].tgid;
            if mode == 1 {
                k.ignoring.insert(tgid);
            } else {
                k.ignoring.remove(&tgid);
            }
            done_or_failed(r)
        }
        Op::Subreaper { actor, on } => {
            let r = k.command(actor, [7, i64::from(on), 0, 0])[0];
            done_or_failed(r)
        }
        Op::PidfdOpen { target, flags } => {
            // SAFETY: pidfd_open on a number; the descriptor it returns is the driver's.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, k.nums.nr(0, target), flags) };
            if fd < 0 {
                return Outcome::Failed(errno() as i32);
            }
            if let Some((old, _)) = k.pidfds.insert(target, (fd as i32, flags)) {
                // SAFETY: closing the driver's own descriptor, replaced above.
                unsafe { libc::close(old) };
            }
            Outcome::Done
        }
        Op::PidfdSignal { target, sig, flags } => {
            let fd = k.pidfd(target);
            // SAFETY: pidfd_send_signal on the driver's pidfd, no siginfo.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd,
                    sig,
                    std::ptr::null::<libc::siginfo_t>(),
                    flags,
                )
            };
            done_or_failed(if r == 0 { 0 } else { -errno() })
        }
        Op::PidfdPoll { target } => {
            let mut pfd = libc::pollfd {
                fd: k.pidfd(target),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: poll on one descriptor of the driver's, not waiting.
            let r = unsafe { libc::poll(&mut pfd, 1, 0) };
            assert!(r >= 0, "poll on a pidfd");
            Outcome::Value(
                i64::from(pfd.revents & libc::POLLIN != 0)
                    | i64::from(pfd.revents & libc::POLLHUP != 0) << 1,
            )
        }
        Op::PidfdWait { target, opts } => {
            let fd = k.pidfd(target);
            let r = k.command(
                0,
                [4, i64::from(libc::P_PIDFD), i64::from(fd), i64::from(opts)],
            );
            k.waited(0, r)
        }
        Op::PidfdInfo { target, exit } => {
            let mut info = RawPidfdInfo {
                mask: PIDFD_INFO_PID | if exit { PIDFD_INFO_EXIT } else { 0 },
                ..RawPidfdInfo::default()
            };
            // SAFETY: PIDFD_GET_INFO fills a `struct pidfd_info` of the size its
            // command number carries (the first version's 64 bytes), on our stack.
            let r = unsafe { libc::ioctl(k.pidfd(target), PIDFD_GET_INFO, &mut info) };
            if r != 0 {
                return Outcome::Failed(errno() as i32);
            }
            let map = |n: u32| k.nums.id(0, n as i32);
            Outcome::Info {
                ids: (info.mask & PIDFD_INFO_PID != 0)
                    .then(|| (map(info.pid), map(info.tgid), map(info.ppid))),
                exit: (info.mask & PIDFD_INFO_EXIT != 0).then_some(info.exit_code),
            }
        }
    }
}

/// `struct pidfd_info` up to `exit_code` (`PIDFD_INFO_SIZE_VER0`, 64 bytes).
#[repr(C)]
#[derive(Default)]
struct RawPidfdInfo {
    mask: u64,
    cgroupid: u64,
    pid: u32,
    tgid: u32,
    ppid: u32,
    creds: [u32; 8],
    exit_code: i32,
}

const PIDFD_INFO_PID: u64 = 1;
const PIDFD_INFO_EXIT: u64 = 1 << 3;
/// `_IOWR(PIDFS_IOCTL_MAGIC, 11, struct pidfd_info)` for the 64-byte struct.
const PIDFD_GET_INFO: libc::Ioctl = 0xC040_FF0B_u32 as libc::Ioctl;

fn uproc_step(u: &mut Uproc, op: Op, new_id: usize) -> Outcome {
    let sig = |n: i32| Signal::new(n).expect("a valid signal");
    match op {
        Op::Fork {
            actor,
            newpid,
            parent,
            exit_sig,
        } => {
            let mut flags = if newpid {
                CloneFlags::NEWPID
            } else {
                CloneFlags::empty()
            };
            if parent {
                flags |= CloneFlags::PARENT;
            }
            u.fork_sig(actor, flags, new_id, Some(sig(exit_sig)))
        }
        Op::Core { actor, on } => {
            u.tasks[actor].set_dumps_core(on);
            Outcome::Done
        }
        Op::Thread { actor } => u.fork(actor, CloneFlags::NEW_THREAD, new_id),
        Op::Exit { actor, code } => {
            u.tasks[actor].exit_group(code);
            Outcome::Done
        }
        Op::ThreadExit { actor, code } => {
            u.tasks[actor].exit(code);
            Outcome::Done
        }
        Op::Unshare { actor } => match u.tasks[actor].unshare_pid_ns() {
            Ok(()) => {
                u.nums.unshare(actor);
                Outcome::Done
            }
            Err(e) => errno_of(e),
        },
        Op::Setns { actor, target } => {
            let nr = u.nums.nr(actor, target);
            let fd = match u.tasks[actor].pidfd_open(nr, PidfdFlags::empty()) {
                Ok(fd) => fd,
                Err(e) => return errno_of(e),
            };
            match u.tasks[actor].setns_pidfd(&fd) {
                Ok(()) => {
                    let opened = u.nums.id(actor, nr).expect("the process opened");
                    u.nums.setns(actor, opened);
                    Outcome::Done
                }
                Err(e) => errno_of(e),
            }
        }
        Op::Tgkill {
            actor,
            target,
            sig: s,
        } => {
            let leader = u.nums.leader[target];
            let (tgid, tid) = (u.nums.nr(actor, leader), u.nums.nr(actor, target));
            u.tasks[actor]
                .tgkill(tgid, tid, sig(s))
                .map_or_else(errno_of, |()| Outcome::Done)
        }
        Op::Kill {
            actor,
            target,
            sig: s,
        } => {
            let pid = target.pid(|i| u.nums.nr(actor, i));
            u.tasks[actor]
                .kill(pid, sig(s))
                .map_or_else(errno_of, |()| Outcome::Done)
        }
        Op::Wait { actor, id, opts } => {
            let which = match id {
                WaitSel::All => WaitId::All,
                WaitSel::Pid(i) => WaitId::Pid(u.nums.nr(actor, i)),
                WaitSel::Pgid(i) => WaitId::Pgid(u.nums.nr(actor, i)),
                WaitSel::OwnPgid => WaitId::Pgid(0),
                WaitSel::Nobody => WaitId::Pid(NO_SUCH_PID),
            };
            u.wait(actor, which, opts)
        }
        Op::PidfdOpen { target, flags } => {
            let flags = PidfdFlags::from_bits_retain(flags);
            match u.tasks[0].pidfd_open(u.nums.nr(0, target), flags) {
                Ok(fd) => {
                    u.pidfds.insert(target, fd);
                    Outcome::Done
                }
                Err(e) => errno_of(e),
            }
        }
        Op::PidfdSignal {
            target,
            sig: s,
            flags,
        } => u.pidfds[&target]
            .send_signal_with(sig(s), PidfdSignalFlags::from_bits_retain(flags))
            .map_or_else(errno_of, |()| Outcome::Done),
        Op::PidfdPoll { target } => {
            let r = u.pidfds[&target].poll();
            Outcome::Value(i64::from(r.readable) | i64::from(r.hangup) << 1)
        }
        Op::PidfdWait { target, opts } => {
            let fd = u.pidfds[&target].clone();
            u.wait(0, WaitId::PidFd(&fd), opts)
        }
        Op::PidfdInfo { target, exit } => {
            let mask = InfoMask::PID
                | if exit {
                    InfoMask::EXIT
                } else {
                    InfoMask::empty()
                };
            match u.pidfds[&target].info(mask) {
                Ok(info) => {
                    let map = |n: i32| u.nums.id(0, n);
                    Outcome::Info {
                        ids: info
                            .mask
                            .contains(InfoMask::PID)
                            .then(|| (map(info.pid), map(info.tgid), map(info.ppid))),
                        exit: info.mask.contains(InfoMask::EXIT).then_some(info.exit_code),
                    }
                }
                Err(e) => errno_of(e),
            }
        }
        Op::Setpgid { actor, pid, pgid } => {
            let nr = |sel: Option<usize>| sel.map_or(0, |i| u.nums.nr(actor, i));
            let (a, b) = (nr(pid), nr(pgid));
            u.tasks[actor]
                .setpgid(a, b)
                .map_or_else(errno_of, |()| Outcome::Done)
        }
        Op::Setsid { actor } => match u.tasks[actor].setsid() {
            Ok(sid) => Outcome::Value(u.nums.id(actor, sid).map_or(-1, |i| i as i64)),
            Err(e) => errno_of(e),
        },
        Op::Subreaper { actor, on } => {
            u.tasks[actor].set_child_subreaper(on);
            Outcome::Done
        }
        Op::Sigchld { actor, mode } => {
            let d = [SigChld::Default, SigChld::Ignore, SigChld::NoCldWait][usize::from(mode)];
            u.tasks[actor].set_sigchld(d);
            Outcome::Done
        }
    }
}

/// Runs in the new namespace as its pid 1.
fn driver() {
    // SAFETY: getpid has no preconditions.
    if unsafe { libc::getpid() } != 1 {
        println!("{SKIP}: not pid 1 of a new namespace");
        return;
    }
    let dir = std::env::var(DIR_ENV).expect("the FIFO directory");
    // SAFETY: setsid and sigprocmask on this process, a zeroed set filled by sigaddset.
    unsafe {
        libc::setsid();
        let cdir = std::ffi::CString::new(std::env::var(DIR_ENV).unwrap_or_default()).unwrap();
        libc::chdir(cdir.as_ptr());
        let rl = libc::rlimit {
            rlim_cur: 0,
            rlim_max: libc::RLIM_INFINITY,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &rl);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    let seeds: u64 = std::env::var("UPROC_KERNEL_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6);
    let steps: usize = std::env::var("UPROC_KERNEL_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    let first: u64 = std::env::var("UPROC_KERNEL_FIRST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let mut compared = 0usize;
    let mut stats = Stats::default();
    for seed in first..first + seeds {
        let sub = format!("{dir}/s{seed}");
        std::fs::create_dir_all(&sub).expect("seed directory");
        compared += run_seed(seed, &sub, steps, &mut stats);
    }
    println!(
        "{DONE} {compared} steps ({stats}) compared with Linux {} under {} profiles, {seeds} seeds",
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim(),
        Profile::ALL.len()
    );
}

/// What the steps did, for the summary line (so that a run shows it reached threads,
/// stops and zombie leaders).
#[derive(Default)]
struct Stats {
    ops: std::collections::BTreeMap<&'static str, usize>,
    reports: usize,
    stopped: usize,
    zombie_leaders: usize,
    /// Live processes seen in a namespace below the driver's, and namespace inits
    /// seen dead (their namespace with them).
    nested: usize,
    nested_inits_died: usize,
    /// `unshare`s and `setns`es that succeeded, and live members (not inits) of a
    /// namespace seen with a parent outside it (what they make).
    moved: usize,
    outside_parent: usize,
    /// Comparisons where the kernel and uproc let different threads of a dying init
    /// wait for its namespace (see `zap_waiters`).
    zap_waiter_choices: usize,
    /// Steps whose outcome the kernel's scheduling decided (see `reconcile_*`).
    reconciled: usize,
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (k, n) in &self.ops {
            write!(f, "{k} {n}, ")?;
        }
        write!(
            f,
            "wait reports {}, stopped processes seen {}, zombie leaders with live threads seen {}, \
             live processes in nested namespaces seen {}, nested namespace inits died {}, \
             unshare/setns done {}, members with a parent outside their namespace seen {}, \
             steps whose order the kernel's scheduler decided {}, \
             comparisons where it let another thread of a dying init wait {}",
            self.reports,
            self.stopped,
            self.zombie_leaders,
            self.nested,
            self.nested_inits_died,
            self.moved,
            self.outside_parent,
            self.reconciled,
            self.zap_waiter_choices
        )
    }
}

fn op_name(op: &Op) -> &'static str {
    match op {
        Op::Fork { parent: true, .. } => "fork(CLONE_PARENT)",
        Op::Fork { exit_sig, .. } if *exit_sig != libc::SIGCHLD => "fork(exit_signal)",
        Op::Fork { newpid: false, .. } => "fork",
        Op::Fork { newpid: true, .. } => "fork(CLONE_NEWPID)",
        Op::Core { .. } => "rlimit_core",
        Op::Thread { .. } => "thread",
        Op::Unshare { .. } => "unshare(CLONE_NEWPID)",
        Op::Setns { .. } => "setns(pidfd, CLONE_NEWPID)",
        Op::Exit { .. } => "exit_group",
        Op::ThreadExit { .. } => "exit",
        Op::Kill { .. } => "kill",
        Op::Tgkill { .. } => "tgkill",
        Op::Wait { .. } => "waitid",
        Op::Setpgid { .. } => "setpgid",
        Op::Setsid { .. } => "setsid",
        Op::Sigchld { .. } => "sigchld",
        Op::Subreaper { .. } => "subreaper",
        Op::PidfdOpen { .. } => "pidfd_open",
        Op::PidfdSignal { .. } => "pidfd_send_signal",
        Op::PidfdPoll { .. } => "pidfd poll",
        Op::PidfdWait { .. } => "waitid(P_PIDFD)",
        Op::PidfdInfo { .. } => "PIDFD_GET_INFO",
    }
}

fn run_seed(seed: u64, dir: &str, steps: usize, stats: &mut Stats) -> usize {
    let mut k = Kernel {
        dir: Dir::new(dir),
        procs: vec![KProc {
            pid: 1,
            tgid: 1,
            cmd: -1,
            resp: -1,
        }],
        nums: {
            let mut nums = Numbers::default();
            nums.add(None, false, false, vec![1]);
            nums
        },
        ignoring: Default::default(),
        pidfds: HashMap::new(),
    };
    let mut worlds: Vec<Uproc> = Profile::ALL.iter().map(|&p| Uproc::new(p)).collect();
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut log: Vec<String> = Vec::new();
    let mut done = 0;
    let mut seen = k.settle();
    // The threads of dying inits whose waiting thread differs between the worlds (and
    // their leaders): a command naming one of them would find it in one world only.
    let mut unsettled: std::collections::HashSet<usize> = Default::default();
    let trace_from: Option<usize> = std::env::var("UPROC_KERNEL_TRACE")
        .ok()
        .and_then(|v| v.parse().ok());
    for step in 0..steps {
        let leaders: Vec<bool> = k.procs.iter().map(|p| p.pid == p.tgid).collect();
        let live = |j: usize| matches!(seen[j].state, TaskState::Running | TaskState::Stopped);
        let shared_stop: Vec<bool> = (0..seen.len())
            .map(|i| {
                seen[i].state == TaskState::Stopped
                    && (0..seen.len())
                        .filter(|&j| k.procs[j].tgid == k.procs[i].tgid && live(j))
                        .count()
                        > 1
            })
            .collect();
        let fds: HashMap<usize, u32> = k.pidfds.iter().map(|(&i, &(_, f))| (i, f)).collect();
        // An init in its exit reads as running but takes no command.
        let mut actors = seen.clone();
        for (i, s) in actors.iter_mut().enumerate() {
            if s.state == TaskState::Running && k.exiting(i) {
                s.state = TaskState::Zombie;
            }
        }
        let op = gen_op(&mut rng, &actors, &leaders, &shared_stop, &fds, &unsettled);
        let new_id = k.procs.len();
        let before = seen.clone();
        let want = kernel_step(&mut k, op, new_id);
        seen = k.settle();
        *stats.ops.entry(op_name(&op)).or_default() += 1;
        stats.reports += usize::from(matches!(want, Outcome::Waited(Some(_))));
        if let Outcome::Waited(Some((_, code, _))) = want {
            let name = match code {
                1 => "report CLD_EXITED",
                2 => "report CLD_KILLED",
                3 => "report CLD_DUMPED",
                4 => "report CLD_TRAPPED",
                5 => "report CLD_STOPPED",
                _ => "report CLD_CONTINUED",
            };
            *stats.ops.entry(name).or_default() += 1;
            if let Op::Wait { opts, .. } = op {
                if opts & libc::__WCLONE != 0 {
                    *stats.ops.entry("report with __WCLONE").or_default() += 1;
                }
                if opts & libc::__WNOTHREAD != 0 {
                    *stats.ops.entry("report with __WNOTHREAD").or_default() += 1;
                }
            }
        }
        if let Op::Fork { actor, .. } = op {
            if !leaders[actor] && want == Outcome::Forked {
                *stats.ops.entry("fork by non-leader").or_default() += 1;
            }
        }
        stats.stopped += seen
            .iter()
            .filter(|s| s.state == TaskState::Stopped)
            .count();
        stats.zombie_leaders += (1..seen.len())
            .filter(|&i| {
                seen[i].state == TaskState::Zombie
                    && k.procs[i].tgid == k.procs[i].pid
                    && (1..seen.len()).any(|j| {
                        j != i
                            && k.procs[j].tgid == k.procs[i].pid
                            && !matches!(seen[j].state, TaskState::Dead | TaskState::Zombie)
                    })
            })
            .count();
        let alive = |s: &Seen| matches!(s.state, TaskState::Running | TaskState::Stopped);
        stats.nested += (1..seen.len())
            .filter(|&i| k.nums.chain[i].len() > 1 && alive(&seen[i]))
            .count();
        stats.nested_inits_died += (1..before.len())
            .filter(|&i| {
                k.nums.chain[i].len() > 1
                    && k.nums.nspid[i].last() == Some(&1)
                    && alive(&before[i])
                    && !alive(&seen[i])
            })
            .count();
        stats.moved += usize::from(
            matches!(op, Op::Unshare { .. } | Op::Setns { .. }) && want == Outcome::Done,
        );
        stats.outside_parent += (1..seen.len())
            .filter(|&i| {
                alive(&seen[i])
                    && k.nums.nspid[i].last() != Some(&1)
                    && seen[i]
                        .parent
                        .is_some_and(|p| k.nums.chain[p] != k.nums.chain[i])
            })
            .count();
        log.push(format!("{step}: {op:?} -> {want:?}"));
        let got: Vec<Outcome> = worlds
            .iter_mut()
            .map(|u| uproc_step(u, op, new_id))
            .collect();
        if trace_from.is_some_and(|from| step >= from) {
            trace(&worlds[0], step);
        }
        let mut reconciled = false;
        if let Op::Wait { actor, opts, .. } = op {
            match reconcile_waits(&mut k, &mut worlds, actor, opts, &want, &got) {
                Ok(None) => {}
                Ok(Some(note)) => {
                    log.push(format!("   {note}"));
                    seen = k.settle();
                    reconciled = true;
                    stats.reconciled += 1;
                }
                Err(what) => diverge(seed, step, Profile::default(), &log, &what),
            }
        }
        if let Some(note) = reconcile_deaths(&mut k, &mut worlds, &before, &seen) {
            log.push(format!("   {note}"));
            seen = k.settle();
            stats.reconciled += 1;
        }
        for (u, got) in worlds.iter_mut().zip(&got) {
            let agree = if reconciled {
                same_kind(got, &want)
            } else {
                *got == want
            };
            if !agree {
                diverge(
                    seed,
                    step,
                    u.profile,
                    &log,
                    &format!("result {got:?}, kernel {want:?}"),
                );
            }
            let mut theirs: Vec<Seen> = seen
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let mut s = s.clone();
                    if k.ignores_chld(i) {
                        // `SIG_IGN` with SIGCHLD blocked (as every controlled thread
                        // has it) still queues it, never to act; uproc's `Ignore`
                        // drops it.
                        s.pending &= !(1u64 << (libc::SIGCHLD - 1));
                    }
                    s
                })
                .collect();
            let mut ours: Vec<Seen> = (0..seen.len()).map(|i| u.seen(i)).collect();
            let kernel_waits = zap_waiters(&theirs, &k.nums, |i| k.exiting(i));
            let uproc_waits = zap_waiters(&ours, &u.nums, |i| u.tasks[i].exit_status().is_some());
            if kernel_waits != uproc_waits && kernel_waits.keys().eq(uproc_waits.keys()) {
                stats.zap_waiter_choices += 1;
            }
            for (leader, waiter) in &kernel_waits {
                let theirs = uproc_waits.get(leader);
                if theirs != Some(waiter) {
                    unsettled.extend([*leader, *waiter]);
                    unsettled.extend(theirs);
                }
            }
            fold_zap_waiters(&mut theirs, &kernel_waits, &uproc_waits);
            fold_zap_waiters(&mut ours, &uproc_waits, &kernel_waits);
            for (i, s) in theirs.iter().enumerate() {
                let mine = ours[i].clone();
                if mine != *s {
                    // Every process as /proc shows it then, for the report.
                    for j in 0..k.procs.len() {
                        log.push(format!(
                            "   /proc of {j} (pid {}, namespaces {:?}): {:?}",
                            k.pid(j),
                            k.nums.chain[j],
                            k.raw(j)
                        ));
                    }
                    diverge(
                        seed,
                        step,
                        u.profile,
                        &log,
                        &format!("process {i}: uproc {mine:?}, kernel {s:?}"),
                    );
                }
            }
        }
        done += 1;
    }
    // Tear down: everyone but the driver killed and reaped.
    // SAFETY: kill and waitpid on this namespace's processes.
    unsafe {
        libc::kill(-1, libc::SIGKILL);
        while libc::waitpid(-1, std::ptr::null_mut(), libc::__WALL) > 0 {}
    }
    for fd in k.fds() {
        // SAFETY: closing the driver's own FIFO ends and pidfds.
        unsafe { libc::close(fd) };
    }
    // The teardown's SIGCHLDs, dequeued: the next seed's init starts with none pending,
    // as a new runtime's does.
    // SAFETY: sigtimedwait with a zero timeout on a set built by sigaddset.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        let zero = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        while libc::sigtimedwait(&set, std::ptr::null_mut(), &zero) > 0 {}
    }
    done
}

/// Several processes died in one step (a group kill, or the SIGHUP of a process group
/// an exit orphaned): the order they died in is the kernel scheduler's, and with it
/// where each one's children went, whether to a parent that ignores SIGCHLD
/// (autoreaped) or on to a reaper (a zombie there). When one world has a process of
/// this step as a reapable zombie and another has it reaped, the zombie is reaped
/// where it is one (by its parent), so that the worlds agree again. Returns what was
/// done; `None` when nothing needed it.
fn reconcile_deaths(
    k: &mut Kernel,
    worlds: &mut [Uproc],
    before: &[Seen],
    after: &[Seen],
) -> Option<String> {
    let alive = |s: &Seen| matches!(s.state, TaskState::Running | TaskState::Stopped);
    let died: Vec<usize> = (1..before.len().min(after.len()))
        .filter(|&i| k.procs[i].pid == k.procs[i].tgid && alive(&before[i]) && !alive(&after[i]))
        .collect();
    if died.len() < 2 {
        return None;
    }
    let mut reaped = Vec::new();
    for &id in &died {
        let kernel_zombie = after[id].state == TaskState::Zombie;
        let world_zombie: Vec<bool> = worlds
            .iter()
            .map(|u| u.tasks[id].state() == TaskState::Zombie)
            .collect();
        let all_same = world_zombie.iter().all(|&z| z == kernel_zombie);
        if all_same {
            continue;
        }
        // A zombie whose threads all ended: reap it where it is one.
        let group_live = (1..after.len())
            .any(|j| j != id && k.procs[j].tgid == k.procs[id].pid && alive(&after[j]));
        if group_live {
            continue;
        }
        if kernel_zombie {
            let Some(parent) = after[id].parent else {
                continue;
            };
            let ptgid = k.procs[parent].tgid;
            let Some(waiter) = (0..after.len())
                .find(|&j| k.procs[j].tgid == ptgid && after[j].state == TaskState::Running)
            else {
                continue;
            };
            let pid = k.nums.nr(waiter, id);
            k.command(
                waiter,
                [
                    4,
                    i64::from(libc::P_PID),
                    i64::from(pid),
                    i64::from(libc::WEXITED | libc::WNOHANG | libc::__WALL),
                ],
            );
        }
        for (u, z) in worlds.iter_mut().zip(&world_zombie) {
            if *z {
                if let Some(p) = u.tasks[id].parent() {
                    let pid = p.pid_of(&u.tasks[id]);
                    let _ = p.wait(
                        WaitId::Pid(pid),
                        WaitOptions::EXITED | WaitOptions::NOHANG | WaitOptions::ALL,
                    );
                }
            }
        }
        reaped.push(id);
    }
    (!reaped.is_empty()).then(|| {
        format!(
            "{} died at once; reaped where still zombies, as others had them reaped: {reaped:?}",
            died.len()
        )
    })
}

/// Whether two wait outcomes agree but for which ready child they name (the caller
/// checked that each named child was ready in every world: `reconcile_waits`).
/// `UPROC_KERNEL_TRACE=STEP`: from that step on, what uproc's first world shows of
/// every task after each step (to find where a divergence began).
fn trace(u: &Uproc, step: usize) {
    for (i, t) in u.tasks.iter().enumerate() {
        let status = t.status();
        let field = |k: &str| {
            status
                .lines()
                .find(|l| l.starts_with(k))
                .unwrap_or("")
                .replace('\t', " ")
        };
        eprintln!(
            "TRACE {step} task {i}: {:?} {} {} pgid {} pending {:?}",
            t.state(),
            field("PPid"),
            field("NSpid"),
            t.pgid_in(&u.ns),
            t.pending_signals()
        );
    }
}

/// The thread of each namespace init's process that waits in its exit for the
/// namespace to empty (running, though it has exited: `exited(i)`), by its leader.
/// When the init's last threads die together (`exit_group`, a fatal signal), which
/// one exits last, and so waits, is the kernel scheduler's choice.
fn zap_waiters(
    view: &[Seen],
    nums: &Numbers,
    exited: impl Fn(usize) -> bool,
) -> std::collections::BTreeMap<usize, usize> {
    (1..view.len())
        .filter(|&i| view[i].state == TaskState::Running && exited(i))
        .map(|i| (nums.leader[i], i))
        .collect()
}

/// Compares such an init by process, not by thread: the waiting thread's view moves
/// to its leader's place, and the waiting thread reads as gone. Where the other world
/// let another thread wait, the pending signals are left out: a thread's own set
/// (a tgkill's signal) goes with it.
fn fold_zap_waiters(
    view: &mut [Seen],
    waiters: &std::collections::BTreeMap<usize, usize>,
    other: &std::collections::BTreeMap<usize, usize>,
) {
    for (&leader, &waiter) in waiters {
        let chosen_alike = other.get(&leader) == Some(&waiter);
        if !chosen_alike {
            view[waiter].pending = 0;
        }
        if leader != waiter {
            view[leader] = view[waiter].clone();
            view[waiter] = Seen {
                state: TaskState::Dead,
                parent: None,
                pgrp: None,
                session: None,
                pending: 0,
            };
        }
    }
}

fn same_kind(a: &Outcome, b: &Outcome) -> bool {
    match (a, b) {
        (Outcome::Waited(Some(_)), Outcome::Waited(Some(_))) => true,
        _ => a == b,
    }
}

/// Several children ready at once: Linux reports the first on the waiter's children
/// list, and the order of that list follows the order in which the processes that
/// handed children on to the waiter died, which a group kill leaves to the kernel's
/// scheduler. When the worlds named different children, each must have been ready in
/// every world (a `WNOWAIT` wait by pid reports it the same); a consuming wait is then
/// completed in every world for every child named, so that they agree again. Returns
/// what was done, `None` when no two worlds named different children; an error when a
/// child some world named was not ready (or not the same) in another.
fn reconcile_waits(
    k: &mut Kernel,
    worlds: &mut [Uproc],
    actor: usize,
    opts: i32,
    want: &Outcome,
    got: &[Outcome],
) -> Result<Option<String>, String> {
    let named = |o: &Outcome| match o {
        Outcome::Waited(Some((Some(id), code, status))) => Some((*id, *code, *status)),
        _ => None,
    };
    let Some(kernel) = named(want) else {
        return Ok(None);
    };
    let mut all = vec![kernel];
    for g in got {
        let Some(g) = named(g) else {
            return Ok(None);
        };
        if !all.iter().any(|a| a.0 == g.0) {
            all.push(g);
        }
    }
    if all.len() == 1 {
        return Ok(None);
    }
    let probe = opts | libc::WNOWAIT;
    let consuming = opts & libc::WNOWAIT == 0;
    for &(id, code, status) in &all {
        let nr = k.nums.nr(actor, id);
        if id != kernel.0 {
            let r = k.command(
                actor,
                [4, i64::from(libc::P_PID), i64::from(nr), i64::from(probe)],
            );
            if r[0] != 0 || (r[1] as i32, r[2] as i32, r[3] as i32) != (nr, code, status) {
                return Err(format!(
                    "uproc reported child {id} ({code}, {status}), the kernel does not: {r:?}"
                ));
            }
            if consuming {
                k.command(
                    actor,
                    [4, i64::from(libc::P_PID), i64::from(nr), i64::from(opts)],
                );
            }
        }
        for (u, g) in worlds.iter_mut().zip(got) {
            if named(g).map(|n| n.0) == Some(id) {
                continue;
            }
            let which = WaitId::Pid(u.nums.nr(actor, id));
            let o = WaitOptions::from_bits_retain(probe as u32);
            match u.tasks[actor].wait(which, o) {
                Ok(Some(info)) if code_of(&info) == (code, status) => {}
                other => {
                    return Err(format!(
                        "{}: child {id} ({code}, {status}) was reported elsewhere, here {other:?}",
                        u.profile
                    ));
                }
            }
            if consuming {
                let o = WaitOptions::from_bits_retain(opts as u32);
                let _ = u.tasks[actor].wait(which, o);
            }
        }
    }
    Ok(Some(format!(
        "several children ready, each world named one of {:?}: all of them {}",
        all.iter().map(|a| a.0).collect::<Vec<_>>(),
        if consuming {
            "consumed everywhere"
        } else {
            "left (WNOWAIT)"
        }
    )))
}

fn diverge(seed: u64, step: usize, profile: Profile, log: &[String], what: &str) -> ! {
    println!("{DIVERGE} seed {seed} step {step} {profile}: {what}");
    for l in log {
        println!("  {l}");
    }
    // SAFETY: ends the namespace (every process in it dies with its init).
    unsafe { libc::_exit(1) }
}
