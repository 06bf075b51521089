//! Differential test against the real kernel: the kernel is the oracle for numbering.
//!
//! The test re-executes its own binary as pid 1 of a fresh pid namespace
//! (`unshare -Urpf --mount-proc`), sets that namespace's `/proc/sys/kernel/pid_max` to
//! 400, forks and reaps children with libc in patterns (reap at once, keep alive, kill
//! some, wrap past pid_max, fill the namespace until fork fails) and prints one line with
//! every event. The parent replays the same alloc/free pattern against the model (a root
//! namespace with init = 1 and the same pid_max) and checks it hands out the same numbers
//! and the same error, in both profiles. Where unshare or the pid_max write is not
//! permitted the test prints why and passes.

mod common;

use std::collections::HashMap;
use std::process::Command;
use std::sync::Arc;
use uproc_abi::{Errno, Profile};
use uproc_pidns::{Pid, alloc_pid, free_pid};

const ROLE_ENV: &str = "UPROC_PIDNS_KERNEL_CHILD";
const TEST_NAME: &str = "kernel_numbering_matches_model";
const PID_MAX: i32 = 400;
const RESULT: &str = "UPROC_KERNEL_RESULT";
const SKIP: &str = "UPROC_KERNEL_SKIP";

/// One thing the kernel did, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    /// fork returned this number in the new namespace.
    Fork(i32),
    /// fork failed with this errno.
    ForkFailed(i32),
    /// the child with this number was reaped (its number freed).
    Reaped(i32),
}

#[test]
fn kernel_numbering_matches_model() {
    if std::env::var_os(ROLE_ENV).is_some() {
        child_role();
        return;
    }
    let exe = std::env::current_exe().expect("test binary path");
    let out = match Command::new("unshare")
        .args(["-Urpf", "--mount-proc"])
        .arg(&exe)
        .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
        .env(ROLE_ENV, "1")
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            println!("SKIP kernel differential: cannot run unshare(1): {e}");
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if let Some(reason) = stdout.lines().find_map(|l| after(l, SKIP)) {
        println!("SKIP kernel differential:{reason}");
        return;
    }
    let Some(line) = stdout.lines().find_map(|l| after(l, RESULT)) else {
        if !out.status.success() && stderr.contains("unshare") {
            println!(
                "SKIP kernel differential: unshare -Urpf --mount-proc not permitted here: {}",
                stderr.trim()
            );
            return;
        }
        panic!(
            "child printed no result (status {}):\n{stdout}\n{stderr}",
            out.status
        );
    };
    assert!(out.status.success(), "child failed: {stdout}\n{stderr}");
    let (pre_live, events) = parse(line);
    let forks = events
        .iter()
        .filter(|e| matches!(e, Event::Fork(_)))
        .count();
    let wrapped = events
        .iter()
        .filter_map(|e| match e {
            Event::Fork(n) => Some(*n),
            _ => None,
        })
        .collect::<Vec<_>>()
        .windows(2)
        .any(|w| w[1] < w[0] && w[1] >= 300);
    assert!(forks > 500, "the kernel pattern forked {forks} times");
    assert!(wrapped, "the kernel pattern wrapped past pid_max");
    assert!(
        events.contains(&Event::ForkFailed(libc::EAGAIN)),
        "the kernel pattern filled the namespace"
    );
    // Compares numbers with the kernel's: the Linux profiles only.
    for &p in common::LINUX_NUMBERING {
        let compared = replay(p, &pre_live, &events);
        println!(
            "kernel differential ({p}): {compared} fork results compared with Linux {}, {} pre-existing tids",
            std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .unwrap_or_default()
                .trim(),
            pre_live.len()
        );
        assert_eq!(compared, forks + 1);
    }
}

/// The rest of `line` after `marker` (libtest may have printed `test name ... ` first).
fn after<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    line.find(marker).map(|i| &line[i + marker.len()..])
}

/// `RESULT pre=2,3 ev=F4,R4,E11` -> (pre-existing live tids, events).
fn parse(line: &str) -> (Vec<i32>, Vec<Event>) {
    let mut pre = Vec::new();
    let mut events = Vec::new();
    for field in line.split_whitespace() {
        if let Some(list) = field.strip_prefix("pre=") {
            pre = list
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|s| s.parse().expect("tid"))
                .collect();
        } else if let Some(list) = field.strip_prefix("ev=") {
            for ev in list.split(',').filter(|s| !s.is_empty()) {
                let n: i32 = ev[1..].parse().expect("event number");
                events.push(match &ev[..1] {
                    "F" => Event::Fork(n),
                    "E" => Event::ForkFailed(n),
                    "R" => Event::Reaped(n),
                    other => panic!("unknown event {other}"),
                });
            }
        }
    }
    (pre, events)
}

/// Replays the kernel's pattern on the model; returns how many fork results matched.
fn replay(profile: Profile, pre_live: &[i32], events: &[Event]) -> usize {
    let (ns, _init) = common::root_with_init(profile, 32768);
    ns.set_pid_max(PID_MAX).unwrap();
    let mut live: HashMap<i32, Arc<Pid>> = HashMap::new();
    // Numbers the harness's own threads took before the pattern started: everything
    // below the first fork was handed out once; the ones still live stay taken.
    let first = events
        .iter()
        .find_map(|e| match e {
            Event::Fork(n) => Some(*n),
            _ => None,
        })
        .expect("at least one fork");
    assert!(
        pre_live.iter().all(|&t| t > 1 && t < first),
        "pre-existing tids {pre_live:?} lie below the first fork {first}"
    );
    for n in 2..first {
        let pid = alloc_pid(&ns, &[], false).expect("prefill");
        assert_eq!(pid.nr(), n);
        if pre_live.contains(&n) {
            live.insert(n, pid);
        } else {
            free_pid(&pid);
        }
    }
    let mut compared = 1; // the prefill reproduced the kernel's first number
    for (i, ev) in events.iter().enumerate() {
        match *ev {
            Event::Fork(want) => {
                let pid = alloc_pid(&ns, &[], false).unwrap_or_else(|e| {
                    panic!("{profile} event {i}: model failed with {e}, Linux forked {want}")
                });
                assert_eq!(
                    pid.nr(),
                    want,
                    "{profile} event {i}: Linux handed out {want} (history {:?})",
                    &events[i.saturating_sub(6)..i]
                );
                live.insert(want, pid);
                compared += 1;
            }
            Event::ForkFailed(errno) => {
                let got = alloc_pid(&ns, &[], false).map(|p| p.nr());
                assert_eq!(
                    got,
                    Err(Errno::from_raw(errno)),
                    "{profile} event {i}: Linux's fork failed with errno {errno}"
                );
            }
            Event::Reaped(nr) => {
                let pid = live.remove(&nr).expect("reaped a live number");
                free_pid(&pid);
            }
        }
    }
    compared
}

// ---- the child role: pid 1 of a fresh pid namespace ----

fn child_role() {
    // SAFETY: getpid has no preconditions.
    if unsafe { libc::getpid() } != 1 {
        println!("{SKIP} {ROLE_ENV} is set but this process is not pid 1 of a new namespace");
        return;
    }
    let pre_live = live_tids();
    if let Err(e) = std::fs::write("/proc/sys/kernel/pid_max", PID_MAX.to_string()) {
        println!("{SKIP} cannot write /proc/sys/kernel/pid_max in the new namespace: {e}");
        return;
    }
    let mut k = Kernel::new();
    // A: short-lived children, reaped at once.
    for _ in 0..10 {
        k.fork_reap();
    }
    // B: forty children kept alive.
    let mut kept: Vec<i32> = (0..40).filter_map(|_| k.fork_blocked()).collect();
    // C: more short-lived ones, then kill and reap every third kept child.
    for _ in 0..20 {
        k.fork_reap();
    }
    let mut i = 0;
    kept.retain(|&pid| {
        i += 1;
        if i % 3 == 0 {
            k.kill_reap(pid);
            false
        } else {
            true
        }
    });
    // D: churn past pid_max (399 -> 300) and around again.
    for _ in 0..450 {
        k.fork_reap();
    }
    // E: fill the namespace until fork fails, keeping everything alive.
    for _ in 0..200 {
        match k.fork_blocked() {
            Some(pid) => kept.push(pid),
            None => break,
        }
    }
    // F: free a few in the middle and fork into the holes.
    for idx in [kept.len() - 3, kept.len() - 10, kept.len() - 20] {
        k.kill_reap(kept.remove(idx));
    }
    for _ in 0..4 {
        k.fork_reap();
    }
    // G: release every kept child (close the pipe) and reap them in order.
    k.release();
    for pid in kept {
        k.reap(pid);
    }
    let pre: Vec<String> = pre_live.iter().map(i32::to_string).collect();
    let ev: Vec<String> = k
        .events
        .iter()
        .map(|e| match e {
            Event::Fork(n) => format!("F{n}"),
            Event::ForkFailed(n) => format!("E{n}"),
            Event::Reaped(n) => format!("R{n}"),
        })
        .collect();
    println!("{RESULT} pre={} ev={}", pre.join(","), ev.join(","));
}

/// Tids other than 1 alive in this namespace (the harness's threads).
fn live_tids() -> Vec<i32> {
    let mut tids = Vec::new();
    for proc_entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = proc_entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let task_dir = format!("/proc/{pid}/task");
        for t in std::fs::read_dir(task_dir).into_iter().flatten().flatten() {
            if let Ok(tid) = t.file_name().to_string_lossy().parse::<i32>() {
                if tid != 1 {
                    tids.push(tid);
                }
            }
        }
    }
    tids.sort_unstable();
    tids
}

/// The real kernel side: forks with libc and records what happened.
struct Kernel {
    events: Vec<Event>,
    /// Read end blocked children wait on; write end closed to release them.
    pipe: [libc::c_int; 2],
}

impl Kernel {
    fn new() -> Self {
        let mut pipe = [0; 2];
        // SAFETY: `pipe` points at two writable c_ints.
        let rc = unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) };
        assert_eq!(rc, 0, "pipe2");
        Kernel {
            events: Vec::with_capacity(4096),
            pipe,
        }
    }

    /// Forks a child that exits at once (`block == false`) or waits for the pipe to close.
    /// The child runs only async-signal-safe calls and never allocates.
    fn fork(&mut self, block: bool) -> Option<i32> {
        let [read_fd, write_fd] = self.pipe;
        // SAFETY: the child only calls close/read/_exit, which are async-signal-safe.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            if block {
                let mut byte = 0u8;
                // SAFETY: closing our copy of the write end so EOF can arrive; reading
                // into a one-byte stack buffer; `_exit` never returns.
                unsafe {
                    libc::close(write_fd);
                    libc::read(read_fd, (&raw mut byte).cast(), 1);
                }
            }
            // SAFETY: ends the child without running Rust destructors or atexit handlers.
            unsafe { libc::_exit(0) }
        }
        if pid < 0 {
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            self.events.push(Event::ForkFailed(errno));
            return None;
        }
        self.events.push(Event::Fork(pid));
        Some(pid)
    }

    fn fork_reap(&mut self) {
        if let Some(pid) = self.fork(false) {
            self.reap(pid);
        }
    }

    fn fork_blocked(&mut self) -> Option<i32> {
        self.fork(true)
    }

    fn reap(&mut self, pid: i32) {
        let mut status = 0;
        // SAFETY: waits for our own child; `status` is a valid out pointer.
        let rc = unsafe { libc::waitpid(pid, &raw mut status, 0) };
        assert_eq!(rc, pid, "waitpid({pid})");
        self.events.push(Event::Reaped(pid));
    }

    fn kill_reap(&mut self, pid: i32) {
        // SAFETY: signals our own child.
        let rc = unsafe { libc::kill(pid, libc::SIGKILL) };
        assert_eq!(rc, 0, "kill({pid})");
        self.reap(pid);
    }

    /// Closes the write end: every blocked child reads EOF and exits.
    fn release(&mut self) {
        // SAFETY: closes a descriptor this struct owns, once.
        unsafe { libc::close(self.pipe[1]) };
        self.pipe[1] = -1;
    }
}
