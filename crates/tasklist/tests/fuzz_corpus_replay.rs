//! Replays the committed seed corpora of the fuzz targets that drive a whole `System`
//! (`fuzz/corpus/<target>`) through the same decoders and reference models on stable
//! Rust, under every lock profile, so CI checks the seeds without nightly or cargo-fuzz.
// Each model includes the shared byte reader itself (so that a fuzz target needs only
// its model); three models do here, each getting its own copy.
#![allow(clippy::duplicate_mod)]

#[path = "../../../fuzz/src/control_files_model.rs"]
mod control_files_model;
#[path = "../../../fuzz/src/corpus.rs"]
mod corpus;
#[path = "../../../fuzz/src/file_handle_model.rs"]
mod file_handle_model;
#[path = "../../../fuzz/src/lifecycle_model.rs"]
mod lifecycle_model;

use corpus::corpus;
use std::path::PathBuf;
use uproc_abi::Profile;

#[test]
fn control_files_corpus_matches_cgroupfs() {
    let mut outcomes = std::collections::BTreeSet::new();
    for (path, bytes) in corpus("control_files", 5) {
        let ops = control_files_model::decode(&bytes);
        for &profile in Profile::ALL {
            let stats = control_files_model::run(profile, &ops)
                .unwrap_or_else(|d| panic!("{}: {d}", path.display()));
            outcomes.extend(stats.outcomes);
        }
    }
    for want in [
        "ok",
        "EAGAIN",
        "EBUSY",
        "EEXIST",
        "EINVAL",
        "ENOENT",
        "ENOTDIR",
        "EOPNOTSUPP",
        "ERANGE",
        "ESRCH",
    ] {
        assert!(
            outcomes.contains(want),
            "the corpus reaches {want}: {outcomes:?}"
        );
    }
}

#[test]
fn file_handle_corpus_opens_only_the_right_task() {
    let mut total = file_handle_model::Stats::default();
    for (path, bytes) in corpus("file_handle", 5) {
        let ops = file_handle_model::decode(&bytes);
        for &profile in Profile::ALL {
            let s = file_handle_model::run(profile, &ops)
                .unwrap_or_else(|d| panic!("{}: {d}", path.display()));
            total.opened += s.opened;
            total.estale += s.estale;
            total.einval += s.einval;
        }
    }
    assert!(
        total.opened > 0 && total.estale > 0 && total.einval > 0,
        "the corpus opens, goes stale and is refused: {total:?}"
    );
}

/// Replays `target`'s corpus through the life-cycle model; returns the outcomes seen.
fn replay_lifecycle(target: &str, mix: lifecycle_model::Mix, min: usize) -> lifecycle_model::Stats {
    let mut total = lifecycle_model::Stats::default();
    for (path, bytes) in corpus(target, min) {
        let case = lifecycle_model::decode_case(&bytes, mix);
        for &profile in Profile::ALL {
            let s = lifecycle_model::run(profile, case.reap_orphans, &case.ops)
                .unwrap_or_else(|d| panic!("{}: {d}", path.display()));
            total.outcomes.extend(s.outcomes);
            total.reaped += s.reaped;
            total.forks += s.forks;
        }
    }
    total
}

#[test]
fn lifecycle_corpus_matches_the_linux_model() {
    let s = replay_lifecycle("lifecycle", lifecycle_model::Mix::All, 5);
    assert!(
        s.forks > 0 && s.reaped > 0,
        "the corpus forks and reaps: {s:?}"
    );
    for want in [
        "ok",
        "ECHILD",
        "EINVAL",
        "EPERM",
        "ESRCH",
        "EEXIST",
        "EAGAIN",
        "ENOENT",
        "EBUSY",
        "ENOMEM",
        // pid namespace ops: unshare / setns, pid_max and forks at the limit
        "unshare:ok",
        "unshare:EINVAL",
        "unshare:ESRCH",
        "unshare:ENOSPC",
        "setns:ok",
        "setns:EINVAL",
        "setns:ESRCH",
        "pid_max:ok",
        "pid_max:EINVAL",
        "pid_max:EAGAIN",
        "fill",
    ] {
        assert!(
            s.outcomes.contains(want),
            "the corpus reaches {want}: {:?}",
            s.outcomes
        );
    }
}

#[test]
fn signals_corpus_matches_the_linux_model() {
    let s = replay_lifecycle("signals", lifecycle_model::Mix::Signals, 5);
    assert!(
        s.forks > 0 && s.reaped > 0,
        "the corpus forks and reaps: {s:?}"
    );
}

#[test]
fn kstrtoll_model_follows_the_kernel() {
    use control_files_model::kstrtoll;
    use uproc_abi::Errno;
    assert_eq!(kstrtoll(b"0x1F"), Ok(31));
    assert_eq!(kstrtoll(b"017\n"), Ok(15));
    assert_eq!(kstrtoll(b"-9223372036854775808"), Ok(i64::MIN));
    assert_eq!(kstrtoll(b"9223372036854775808"), Err(Errno::ERANGE));
    assert_eq!(kstrtoll(b"18446744073709551616"), Err(Errno::ERANGE));
    for bad in [
        &b""[..],
        b"0x",
        b"08",
        b" 1",
        b"1\n\n",
        b"-+1",
        b"+-1",
        b"1 ",
    ] {
        assert_eq!(kstrtoll(bad), Err(Errno::EINVAL), "{bad:?}");
    }
}

/// Writes the hand-built seeds (`hand_*`) into `fuzz/corpus/`: run with
/// `cargo test -p uproc-tasklist --test fuzz_corpus_replay -- --ignored write_hand_seeds`
/// after changing a decoder, then minimise with `cargo fuzz cmin`.
#[test]
#[ignore = "writes the seed corpus; run by hand"]
fn write_hand_seeds() {
    use control_files_model::{Op, encode};
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let write = |target: &str, name: &str, bytes: Vec<u8>| {
        std::fs::write(root.join(target).join(name), bytes).expect("corpus writable");
    };
    let w = |cg: usize, file: &str, value: &str| Op::Write {
        cg,
        file: file.into(),
        value: value.into(),
    };
    let r = |cg: usize, file: &str| Op::Read {
        cg,
        file: file.into(),
    };
    let mk = |cg: usize, name: &str| Op::Mkdir {
        cg,
        name: name.into(),
    };
    let mut values = vec![mk(0, "a")];
    let extra = ["max\n", "1x"];
    for v in control_files_model::VALUES.iter().chain(&extra) {
        values.push(w(1, "pids.max", v));
        values.push(r(1, "pids.max"));
    }
    write("control_files", "hand_pids_max_values", encode(&values));
    let limit = vec![
        mk(0, "a"),
        mk(1, "b"),
        w(1, "pids.max", "2"),
        Op::Fork { cg: 2 },
        Op::Fork { cg: 2 },
        Op::Fork { cg: 2 },
        r(1, "pids.current"),
        r(2, "cgroup.procs"),
        r(1, "cgroup.events"),
        r(1, "pids.events"),
        r(1, "pids.peak"),
        Op::Rmdir { cg: 1 },
        Op::Rmdir { cg: 2 },
        Op::Move { cg: 0, task: 1 },
        w(2, "cgroup.kill", "2"),
        w(2, "cgroup.kill", " 1\n"),
        Op::Rmdir { cg: 2 },
        r(2, "pids.max"),
        w(2, "pids.max", "1"),
        Op::Fork { cg: 2 },
        Op::Rmdir { cg: 1 },
        Op::Rmdir { cg: 0 },
    ];
    write("control_files", "hand_limit_kill_rmdir", encode(&limit));
    let files = vec![
        mk(0, "a"),
        w(1, "cgroup.type", "threaded"),
        w(1, "cgroup.type", "domain"),
        r(1, "cgroup.type"),
        w(1, "pids.current", "1"),
        w(1, "cgroup.events", "1"),
        r(1, "cgroup.kill"),
        r(0, "pids.max"),
        w(0, "cgroup.kill", "1"),
        r(1, "nonexistent"),
        mk(1, "pids.max"),
        mk(0, "a"),
        mk(0, ""),
        mk(0, "."),
        mk(0, ".."),
        mk(0, "x/y"),
        w(1, "cgroup.procs", "99999"),
        w(1, "cgroup.procs", "-1"),
        w(1, "cgroup.procs", "0"),
        w(1, "cgroup.procs", "abc"),
        w(1, "cgroup.threads", "1"),
        r(1, "cgroup.threads"),
        r(0, "cgroup.procs"),
        w(0, "cgroup.procs", "1\n"),
    ];
    write("control_files", "hand_every_file", encode(&files));
    // mkdir's path walk: nested, absolute, dots, slashes, a file on the way, and a
    // write of nothing to every kind of file.
    let paths = vec![
        mk(0, "a"),
        mk(0, "a/b"),
        mk(1, "./b//c/"),
        mk(2, "../d"),
        mk(2, "/e"),
        mk(0, "../f"),
        mk(0, "a/b/.."),
        mk(0, "a/x/y"),
        mk(1, "pids.max/y"),
        mk(1, "cgroup.stat.local"),
        mk(0, "cgroup.stat.local"),
        mk(0, "/"),
        mk(0, "a/new\nline"),
        w(1, "pids.max", ""),
        w(1, "pids.current", ""),
        w(1, "cgroup.kill", ""),
        r(1, "cgroup.kill"),
        w(1, "cgroup.events", "0"),
        Op::Rmdir { cg: 3 },
        mk(3, "/g"),
        mk(3, "h"),
    ];
    write("control_files", "hand_mkdir_paths", encode(&paths));

    // file_handle: tag, task, then for Open: caller, selector, [extra], flag selector.
    let fh: Vec<u8> = vec![
        0, 0, // init forks task 1
        1, 1, // pidfd on task 1
        4, 1, 0, 0, 0, // open task 1's exact handle as init: ok
        4, 1, 0, 0, 1, // ... with NONBLOCK
        4, 1, 0, 4, 9, 0, // flipped low bits: ESTALE
        4, 1, 0, 7, 1, 2, 3, 0, // 3 raw bytes: EINVAL
        4, 1, 0, 0, 5, // unknown flag bit: EINVAL
        4, 0, 0, 0, 0, // init never had a pidfd: ESTALE
        2, 1, 3, 1, // task 1 exits, is reaped
        4, 1, 0, 0, 0, // reaped: ESTALE
        128, 0, // init forks task 2 into a new namespace
        0, 2, // task 2 forks task 3 inside it
        1, 3, 1, 2, // pidfds on 3 and 2
        4, 3, 3, 0, 2, // task 3 opens itself (THREAD flag): ok
        4, 2, 3, 0, 0, // task 3 opens its parent, the namespace init: ok (nr 1 there)
        0, 0, 1, 4, // init forks task 4, pidfd
        4, 4, 3, 0, 0, // task 3 cannot see task 4: ESTALE
        4, 1, 0, 0x80, 3, 0, // wrong handle type: EINVAL
        2, 2, 4, 3, 0, 0, // the namespace init dies; task 3 is gone: ESTALE
    ];
    write("file_handle", "hand_open_stale_invisible", fh);
    lifecycle_hand_seeds(&write);
}

/// The hand-built life-cycle scenarios (`actor` is an index into the live tasks in
/// creation order; `Task(i)` the i-th task created, init being 0).
fn lifecycle_hand_seeds(write: &dyn Fn(&str, &str, Vec<u8>)) {
    use lifecycle_model::{Case, CgOp, Op, WaitSel, Who, encode};
    use uproc_abi::{CloneFlags, WaitOptions as W};
    let fork =
        |actor: u8, flags: CloneFlags, exit_signal: Option<i32>, set_tid: Vec<Who>| Op::Fork {
            actor,
            flags,
            exit_signal,
            set_tid,
            cgroup: None,
        };
    let plain = |actor: u8| fork(actor, CloneFlags::empty(), None, vec![]);
    let kill = |actor: u8, who: Who, sig: i32| Op::Kill {
        actor,
        who,
        group: false,
        sig,
    };
    let wait = |actor: u8, id: WaitSel, opts: W| Op::Wait {
        actor,
        id,
        opts: (opts | W::NOHANG).bits(),
    };
    let t = Who::Task;
    let (ex, all) = (W::EXITED, W::EXITED | W::ALL);
    let mut seeds: Vec<(&str, bool, Vec<Op>)> = vec![
        (
            "hand_stop_term_cont",
            false,
            vec![
                plain(0),
                kill(0, t(1), libc::SIGSTOP),
                wait(0, WaitSel::Pid(t(1)), W::STOPPED),
                kill(0, t(1), libc::SIGTERM), // stays stopped, TERM pending
                wait(0, WaitSel::Pid(t(1)), ex),
                kill(0, t(1), libc::SIGCONT), // now it dies of TERM
                wait(0, WaitSel::Pid(t(1)), ex),
                plain(0),
                kill(0, t(2), libc::SIGSTOP),
                kill(0, t(2), libc::SIGKILL), // SIGKILL wakes a stopped group
                wait(0, WaitSel::All, ex),
                plain(0),
                kill(0, t(3), libc::SIGTSTP),
                wait(0, WaitSel::Pid(t(3)), W::STOPPED | W::NOWAIT),
                wait(0, WaitSel::Pid(t(3)), W::STOPPED),
                wait(0, WaitSel::Pid(t(3)), W::STOPPED),
                kill(0, t(3), libc::SIGCONT),
                wait(0, WaitSel::Pid(t(3)), W::CONTINUED),
                Op::Tgkill {
                    actor: 0,
                    who: t(3),
                    sig: libc::SIGCHLD,
                },
                kill(0, t(3), libc::SIGCHLD),
                kill(0, t(3), libc::SIGURG),
                Op::ExitSignaled {
                    actor: 1,
                    sig: libc::SIGSEGV,
                },
                wait(0, WaitSel::All, ex),
            ],
        ),
        (
            // Job-control stops (`get_signal`): SIGTSTP stops a group with a parent in
            // another group of its session, is dropped for an orphaned one (a child of
            // init; a session leader), SIGSTOP stops both; tgkill to an exited leader
            // whose thread runs does nothing (`complete_signal`), SIGCONT still works.
            "hand_tty_stops_and_zombie_leaders",
            false,
            vec![
                plain(0), // 1: child of init
                plain(1), // 2: its child
                Op::Setpgid {
                    actor: 2,
                    pid: Who::Nr(0),
                    pgid: Who::Nr(0),
                },
                kill(0, t(2), libc::SIGTSTP), // not orphaned: stops
                wait(1, WaitSel::Pid(t(2)), W::STOPPED),
                kill(0, t(2), libc::SIGCONT),
                kill(0, t(1), libc::SIGTSTP), // a child of init: dropped
                wait(0, WaitSel::Pid(t(1)), W::STOPPED),
                Op::Setsid { actor: 2 },
                kill(0, t(2), libc::SIGTSTP), // a session leader: dropped
                kill(0, t(2), libc::SIGSTOP), // SIGSTOP stops it
                wait(1, WaitSel::Pid(t(2)), W::STOPPED),
                kill(0, t(2), libc::SIGCONT),
                fork(1, CloneFlags::NEW_THREAD, None, vec![]), // 3: a thread of 1
                Op::Exit { actor: 1, code: 4 },                // the leader exits first
                Op::Tgkill {
                    actor: 0,
                    who: t(1),
                    sig: libc::SIGKILL,
                },
                Op::Tgkill {
                    actor: 0,
                    who: t(1),
                    sig: libc::SIGSTOP,
                },
                wait(0, WaitSel::Pid(t(1)), W::STOPPED | ex),
                kill(0, t(1), libc::SIGTERM), // kill(tgid) reaches the thread
                wait(0, WaitSel::All, all),
            ],
        ),
        (
            // `kill_orphaned_pgrp`: a reparent (pp exits, its child c, leader of its own
            // group in sl's session, goes to init) and an exit (a, leader of its own
            // group under sl, exits; its child b stays in a's group, now init's)
            // orphan a group with a stopped member: SIGHUP, SIGCONT, it dies of SIGHUP.
            "hand_orphaned_stopped_groups",
            false,
            vec![
                plain(0), // 1: sl
                Op::Setsid { actor: 1 },
                plain(1), // 2: pp
                plain(2), // 3: c
                Op::Setpgid {
                    actor: 3,
                    pid: Who::Nr(0),
                    pgid: Who::Nr(0),
                },
                kill(0, t(3), libc::SIGSTOP),
                Op::Exit { actor: 2, code: 0 },
                wait(1, WaitSel::Pid(t(2)), ex),
                wait(0, WaitSel::All, all),
                plain(1), // 4: a (live: init, sl, a)
                Op::Setpgid {
                    actor: 2,
                    pid: Who::Nr(0),
                    pgid: Who::Nr(0),
                },
                plain(2), // 5: b
                kill(0, t(5), libc::SIGSTOP),
                Op::Exit { actor: 2, code: 0 },
                wait(1, WaitSel::Pid(t(4)), ex),
                wait(0, WaitSel::All, all),
            ],
        ),
        (
            "hand_exit_signals",
            false,
            vec![
                plain(0),
                fork(1, CloneFlags::empty(), Some(libc::SIGUSR1), vec![]),
                wait(1, WaitSel::All, ex), // a clone child: ECHILD without __WCLONE
                wait(1, WaitSel::All, ex | W::CLONE | W::NOWAIT),
                Op::Exit { actor: 2, code: 7 }, // USR1 ends the parent
                wait(0, WaitSel::All, ex),
                wait(0, WaitSel::All, ex),
                fork(0, CloneFlags::empty(), Some(libc::SIGKILL), vec![]),
                Op::Exit { actor: 1, code: 0 }, // init ignores SIGKILL
                plain(0),                       // and still forks
                wait(0, WaitSel::All, ex | W::CLONE),
                fork(1, CloneFlags::empty(), Some(libc::SIGTERM), vec![]),
                kill(0, t(4), libc::SIGSTOP),
                Op::Exit { actor: 2, code: 0 }, // TERM to a stopped parent waits
                wait(0, WaitSel::Pid(t(4)), ex | W::NOWAIT),
                kill(0, t(4), libc::SIGCONT),
                wait(0, WaitSel::All, all),
                wait(0, WaitSel::All, all),
                wait(0, WaitSel::All, all),
            ],
        ),
        (
            "hand_threads_subreaper_sigchld",
            true,
            vec![
                plain(0),
                Op::Subreaper { actor: 1, on: true },
                plain(1),
                plain(2),
                fork(2, CloneFlags::NEW_THREAD, None, vec![]),
                Op::Exit { actor: 2, code: 1 }, // the leader waits for its thread
                wait(1, WaitSel::Pid(t(2)), ex),
                Op::Exit { actor: 3, code: 2 }, // last thread: the child goes to the subreaper
                wait(1, WaitSel::All, ex),
                wait(1, WaitSel::All, ex),
                Op::Exit { actor: 2, code: 3 },
                wait(1, WaitSel::All, ex),
                Op::Subreaper {
                    actor: 1,
                    on: false,
                },
                plain(1),
                plain(2),
                Op::Exit { actor: 2, code: 4 }, // orphan to init, which reaps orphans
                Op::Exit { actor: 2, code: 5 },
                wait(1, WaitSel::All, ex),
                wait(0, WaitSel::All, ex),
                Op::SetSigchld { actor: 1, d: 1 },
                plain(1),
                Op::Exit { actor: 2, code: 6 },
                wait(1, WaitSel::All, ex),
                Op::SetSigchld { actor: 1, d: 2 },
                plain(1),
                Op::Exit { actor: 2, code: 7 },
                wait(1, WaitSel::All, ex),
                Op::SetSigchld { actor: 1, d: 0 },
                fork(1, CloneFlags::AUTOREAP, None, vec![]),
                Op::Exit { actor: 2, code: 8 },
                wait(1, WaitSel::All, all),
                fork(1, CloneFlags::PARENT, None, vec![]),
                Op::ExitGroup { actor: 2, code: 9 },
                wait(0, WaitSel::All, ex),
            ],
        ),
        (
            "hand_namespaces",
            false,
            vec![
                fork(0, CloneFlags::NEWPID, None, vec![]),
                plain(1),
                plain(2),
                fork(2, CloneFlags::NEWPID, None, vec![]),
                kill(2, Who::Nr(1), libc::SIGKILL), // its own init: ignored
                kill(0, t(1), libc::SIGTERM),       // from outside, not forced
                kill(2, Who::Nr(-1), libc::SIGTERM),
                wait(2, WaitSel::All, all),
                fork(1, CloneFlags::PARENT, None, vec![]), // from an init: EINVAL
                fork(1, CloneFlags::empty(), None, vec![Who::Nr(1)]), // EEXIST
                fork(
                    0,
                    CloneFlags::NEWPID,
                    None,
                    vec![Who::Nr(1), Who::Nr(30000)],
                ),
                Op::ExitGroup { actor: 1, code: 3 }, // the namespace dies
                wait(0, WaitSel::All, ex),
                kill(0, t(5), libc::SIGSTOP), // forced from outside
                wait(0, WaitSel::Pid(t(5)), W::STOPPED),
                kill(0, t(5), libc::SIGKILL),
                wait(0, WaitSel::All, ex),
            ],
        ),
        (
            "hand_unshare_setns_pid_max",
            false,
            vec![
                plain(0),
                Op::Unshare {
                    actor: 1,
                    any: false,
                },
                Op::Unshare {
                    actor: 1,
                    any: false,
                }, // moved already: EINVAL
                fork(1, CloneFlags::NEWPID, None, vec![]), // EINVAL after unshare
                fork(1, CloneFlags::NEW_THREAD, None, vec![]), // EINVAL after unshare
                plain(1),                                  // pid 1 of the new namespace
                plain(1),                                  // pid 2 there
                plain(0),
                Op::Setns {
                    actor: 4,
                    ns: 1,
                    any: false,
                }, // a descendant
                plain(4), // pid 3 there
                Op::Setns {
                    actor: 2,
                    ns: 0,
                    any: false,
                }, // an ancestor: EINVAL
                Op::Setns {
                    actor: 4,
                    ns: 0,
                    any: false,
                }, // back to the active one
                Op::Unshare {
                    actor: 4,
                    any: false,
                },
                Op::Setns {
                    actor: 4,
                    ns: 1,
                    any: false,
                },
                Op::SetPidMax { ns: 1, v: 2 },       // 300: EINVAL
                Op::SetPidMax { ns: 1, v: 0 },       // 301
                Op::SetPidMax { ns: 1, v: 6 },       // 4194305: EINVAL
                Op::SetPidMax { ns: 2, v: 3 },       // 0: EINVAL
                Op::SetPidMax { ns: 2, v: 4 },       // -1: EINVAL
                Op::SetPidMax { ns: 2, v: 5 },       // 4194304
                Op::SetPidMax { ns: 1, v: 10 },      // i32::MIN: EINVAL
                Op::ExitGroup { actor: 2, code: 0 }, // the namespace's init dies
                plain(1),                            // into a dead namespace: ENOMEM
                wait(1, WaitSel::All, ex),
                wait(1, WaitSel::All, ex),
                wait(2, WaitSel::All, ex),
                Op::Unshare {
                    actor: 5,
                    any: true,
                }, // reaped: ESRCH
                Op::Setns {
                    actor: 3,
                    ns: 0,
                    any: true,
                }, // reaped: ESRCH
                Op::SetPidMax { ns: 0, v: 0 }, // the root namespace: 301
                Op::FillRoot,
                plain(0), // EAGAIN: no number below pid_max left
                plain(2), // EAGAIN at the outer level
                Op::Exit { actor: 1, code: 0 },
                wait(0, WaitSel::All, ex),
                plain(0), // Linux: EAGAIN (past 300 the floor is 300); Scalable reuses
            ],
        ),
        (
            // unshare/setns move one thread's children only, whatever the other
            // threads of its process
            "hand_unshare_setns_threads",
            true,
            vec![
                plain(0),
                fork(1, CloneFlags::NEW_THREAD, None, vec![]),
                Op::Unshare {
                    actor: 2,
                    any: false,
                }, // a thread of a 2-thread process
                plain(1), // its sibling thread: the root
                plain(2), // pid 1 of the new namespace
                Op::Setns {
                    actor: 1,
                    ns: 1,
                    any: false,
                }, // the leader joins it
                fork(1, CloneFlags::NEW_THREAD, None, vec![]), // EINVAL now
                Op::Unshare {
                    actor: 1,
                    any: false,
                }, // EINVAL: already moved
                plain(1), // pid 2 there
                Op::Setns {
                    actor: 4,
                    ns: 0,
                    any: false,
                }, // the init: EINVAL
                Op::Setns {
                    actor: 1,
                    ns: 0,
                    any: false,
                }, // back
                fork(1, CloneFlags::NEW_THREAD, None, vec![]),
                Op::ExitGroup { actor: 1, code: 9 },
            ],
        ),
        (
            // A namespace below one whose init died: setns into it is ENOENT, as it
            // never had an init (Linux's pid_for_children cannot be opened before
            // the first process, so no outsider can fork that process), and its
            // unsharer died with the namespace above; a fork into the dead namespace
            // is ENOMEM.
            "hand_setns_below_a_dead_namespace",
            false,
            vec![
                plain(0),
                Op::Unshare {
                    actor: 1,
                    any: false,
                },
                plain(1), // the init of the new namespace
                plain(1),
                Op::Unshare {
                    actor: 3,
                    any: false,
                }, // a namespace below it
                Op::ExitGroup { actor: 2, code: 0 }, // the init dies, its namespace too
                Op::Setns {
                    actor: 1,
                    ns: 2,
                    any: false,
                },
                plain(1),
                wait(1, WaitSel::All, ex),
                wait(1, WaitSel::All, ex),
                Op::Exit { actor: 2, code: 4 },
                wait(1, WaitSel::All, ex),
                wait(1, WaitSel::All, ex),
                wait(1, WaitSel::All, ex),
            ],
        ),
        (
            "hand_bad_arguments",
            false,
            vec![
                fork(0, CloneFlags::THREAD, None, vec![]),
                fork(0, CloneFlags::SIGHAND, None, vec![]),
                fork(0, CloneFlags::NEW_THREAD | CloneFlags::NEWPID, None, vec![]),
                fork(0, CloneFlags::PARENT | CloneFlags::AUTOREAP, None, vec![]),
                fork(0, CloneFlags::NEW_THREAD, Some(libc::SIGCHLD), vec![]),
                fork(0, CloneFlags::AUTOREAP, Some(libc::SIGUSR1), vec![]),
                fork(0, CloneFlags::PARENT, None, vec![]),
                fork(0, CloneFlags::empty(), None, vec![Who::Nr(-1)]),
                fork(0, CloneFlags::empty(), None, vec![Who::Nr(1), Who::Nr(1)]),
                wait(0, WaitSel::Pid(Who::Nr(0)), ex),
                wait(0, WaitSel::Pgid(Who::Nr(-1)), ex),
                wait(0, WaitSel::Pgid(Who::Nr(30000)), ex),
                wait(0, WaitSel::All, W::empty()),
                Op::Tgkill {
                    actor: 0,
                    who: Who::Nr(0),
                    sig: libc::SIGTERM,
                },
                Op::Tgkill {
                    actor: 0,
                    who: Who::Nr(30000),
                    sig: libc::SIGTERM,
                },
                kill(0, Who::Nr(i32::MIN), libc::SIGTERM),
                kill(0, Who::Nr(30000), 0),
                Op::Setpgid {
                    actor: 0,
                    pid: Who::Nr(30000),
                    pgid: Who::Nr(0),
                },
                Op::Setsid { actor: 0 }, // init leads its group: EPERM
                Op::Exit { actor: 0, code: 1 },
                Op::ExitGroup { actor: 0, code: 1 },
                plain(0),
                Op::Setsid { actor: 1 },
                Op::Setsid { actor: 1 },
                Op::Setpgid {
                    actor: 0,
                    pid: t(1),
                    pgid: Who::Nr(0),
                },
                plain(0),
                Op::Setpgid {
                    actor: 0,
                    pid: t(2),
                    pgid: t(1),
                },
                Op::Setpgid {
                    actor: 1,
                    pid: t(2),
                    pgid: Who::Nr(0),
                },
                Op::Setpgid {
                    actor: 2,
                    pid: Who::Nr(0),
                    pgid: Who::Nr(0),
                },
                Op::Kill {
                    actor: 0,
                    who: t(2),
                    group: true,
                    sig: libc::SIGSTOP,
                },
                wait(0, WaitSel::Pgid(t(2)), W::STOPPED),
                Op::Setpgid {
                    actor: 0,
                    pid: t(2),
                    pgid: Who::Nr(1),
                },
                kill(1, Who::Nr(-1), libc::SIGKILL),
                kill(1, Who::Nr(1), libc::SIGKILL),
                wait(0, WaitSel::All, ex),
                wait(0, WaitSel::Pgid(Who::Nr(0)), ex),
            ],
        ),
        (
            "hand_pidfds_and_cgroups",
            false,
            vec![
                Op::Cgroup(CgOp::Mkdir { parent: 0 }),
                Op::Cgroup(CgOp::Max { cg: 1, v: 3 }), // pids.max 2
                Op::Fork {
                    actor: 0,
                    flags: CloneFlags::PIDFD | CloneFlags::INTO_CGROUP,
                    exit_signal: None,
                    set_tid: vec![],
                    cgroup: Some(1),
                },
                fork(1, CloneFlags::NEW_THREAD, None, vec![]),
                fork(1, CloneFlags::empty(), None, vec![]), // EAGAIN at pids.max
                Op::PidfdPoll { fd: 0 },
                Op::PidfdInfo { fd: 0, mask: 0x3f },
                Op::PidfdOpen {
                    actor: 0,
                    who: t(2),
                    flags: 0,
                }, // a thread without PIDFD_THREAD: ENOENT
                Op::PidfdOpen {
                    actor: 0,
                    who: t(2),
                    flags: 1,
                },
                Op::PidfdOpen {
                    actor: 0,
                    who: Who::Nr(30000),
                    flags: 0,
                },
                Op::PidfdOpen {
                    actor: 0,
                    who: t(1),
                    flags: 4,
                },
                Op::PidfdSignal {
                    fd: 1,
                    sig: libc::SIGCHLD,
                    scope: 0,
                }, // queued on the thread
                Op::PidfdSignal {
                    fd: 0,
                    sig: libc::SIGSTOP,
                    scope: 4,
                }, // two scopes: EINVAL
                Op::PidfdSignal {
                    fd: 0,
                    sig: libc::SIGSTOP,
                    scope: 2,
                },
                wait(0, WaitSel::PidFd(0), W::STOPPED),
                Op::Cgroup(CgOp::Rmdir { cg: 1 }), // populated: EBUSY
                Op::Cgroup(CgOp::Mkdir { parent: 1 }),
                Op::Cgroup(CgOp::Attach { cg: 2, who: t(1) }),
                Op::Cgroup(CgOp::Kill { cg: 1 }),
                Op::PidfdPoll { fd: 0 },
                Op::PidfdInfo { fd: 0, mask: 0x0d },
                wait(0, WaitSel::PidFd(0), ex),
                Op::PidfdPoll { fd: 0 },
                Op::PidfdInfo { fd: 0, mask: 0x0d },
                Op::PidfdInfo { fd: 0, mask: 0x01 },
                Op::PidfdSignal {
                    fd: 0,
                    sig: libc::SIGTERM,
                    scope: 0,
                }, // reaped: ESRCH
                Op::Cgroup(CgOp::Rmdir { cg: 2 }),
                Op::Cgroup(CgOp::Rmdir { cg: 1 }),
                Op::Cgroup(CgOp::Rmdir { cg: 0 }),
                Op::Cgroup(CgOp::Kill { cg: 0 }),
                Op::Cgroup(CgOp::Max { cg: 2, v: 0 }),
            ],
        ),
        (
            // A leader that exits before its thread stays in its cgroup, where
            // cgroup.procs lists it; moving the process moves the thread only, and
            // neither cgroup's cgroup.kill kills it (measured on Linux 6.18).
            "hand_cgroup_dying_leader",
            false,
            vec![
                Op::Cgroup(CgOp::Mkdir { parent: 0 }), // 1
                Op::Cgroup(CgOp::Mkdir { parent: 0 }), // 2
                plain(0),                              // 1: a process
                Op::Cgroup(CgOp::Attach { cg: 1, who: t(1) }),
                fork(1, CloneFlags::NEW_THREAD, None, vec![]), // 2: its thread
                Op::Exit { actor: 1, code: 3 },                // the leader exits first
                Op::Cgroup(CgOp::Kill { cg: 1 }),              // the thread survives
                Op::Cgroup(CgOp::Attach { cg: 2, who: t(1) }), // moves the thread
                Op::Cgroup(CgOp::Kill { cg: 2 }),
                Op::Cgroup(CgOp::Kill { cg: 1 }),
                Op::Cgroup(CgOp::Rmdir { cg: 1 }), // unpopulated: a dying leader is no member
                wait(0, WaitSel::Pid(t(1)), ex),
                kill(0, t(1), libc::SIGKILL), // kill(tgid) reaches the thread
                wait(0, WaitSel::All, ex),
                Op::Cgroup(CgOp::Rmdir { cg: 2 }),
            ],
        ),
    ];
    // kill(-1, SIGKILL) marks every target first: the parent dies of SIGKILL even though
    // its child, numbered below it and killed first, has SIGTERM as its exit signal.
    let kill_order = vec![
        fork(0, CloneFlags::empty(), None, vec![Who::Nr(30000)]),
        fork(1, CloneFlags::empty(), Some(libc::SIGTERM), vec![]), // numbered 2
        kill(0, Who::Nr(-1), libc::SIGKILL),
        wait(0, WaitSel::All, all),
        wait(0, WaitSel::All, all),
    ];
    let bytes = encode(&Case {
        reap_orphans: false,
        ops: kill_order,
    });
    // 32 nested namespaces, then a 33rd level through unshare: ENOSPC.
    let mut deep: Vec<Op> = (0..32)
        .map(|i| fork(i, CloneFlags::NEWPID, None, vec![]))
        .collect();
    deep.push(Op::Unshare {
        actor: 32,
        any: false,
    });
    deep.push(Op::Unshare {
        actor: 31,
        any: false,
    });
    seeds.push(("hand_unshare_level_33", true, deep));
    write("lifecycle", "regression_kill_order_exit_signal", bytes);
    for (name, reap_orphans, ops) in seeds {
        let bytes = encode(&Case {
            reap_orphans,
            ops: ops.clone(),
        });
        let back = lifecycle_model::decode_case(&bytes, lifecycle_model::Mix::All);
        assert_eq!(
            format!("{:?}", back.ops),
            format!("{ops:?}"),
            "{name} round-trips"
        );
        write("lifecycle", name, bytes);
    }
}

/// Runs one life-cycle input and prints every op with uproc's answer:
/// `UPROC_FUZZ_TRACE=1 UPROC_FUZZ_SEED=fuzz/corpus/lifecycle/hand_namespaces cargo test
/// -p uproc-tasklist --test fuzz_corpus_replay -- --ignored --nocapture trace_seed`
/// (`UPROC_FUZZ_MIX=signals` for the `signals` decoder).
#[test]
#[ignore = "reads UPROC_FUZZ_SEED; run by hand"]
fn trace_seed() {
    let path = std::env::var("UPROC_FUZZ_SEED").expect("UPROC_FUZZ_SEED names an input file");
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path);
    let bytes = std::fs::read(&path).expect("readable input");
    let mix = match std::env::var("UPROC_FUZZ_MIX").as_deref() {
        Ok("signals") => lifecycle_model::Mix::Signals,
        _ => lifecycle_model::Mix::All,
    };
    let case = lifecycle_model::decode_case(&bytes, mix);
    for &profile in Profile::ALL {
        if let Err(d) = lifecycle_model::run(profile, case.reap_orphans, &case.ops) {
            panic!("{}: {d}", path.display());
        }
    }
}

/// Replays `fuzz/regressions/<target>/`: the inputs of deviations found and not yet
/// fixed. Each must still diverge with the steering off (`UPROC_FUZZ_NO_STEER=1`); one
/// that passes means its fix landed and the input belongs in the corpus:
/// `UPROC_FUZZ_NO_STEER=1 cargo test -p uproc-tasklist --test fuzz_corpus_replay --
/// --ignored open_regressions_still_diverge`.
#[test]
#[ignore = "needs UPROC_FUZZ_NO_STEER=1; run by hand"]
fn open_regressions_still_diverge() {
    assert!(
        std::env::var_os("UPROC_FUZZ_NO_STEER").is_some(),
        "set UPROC_FUZZ_NO_STEER=1"
    );
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions");
    let mut fixed = Vec::new();
    for target in ["control_files", "lifecycle"] {
        let Ok(entries) = std::fs::read_dir(dir.join(target)) else {
            continue;
        };
        for e in entries {
            let path = e.expect("readable entry").path();
            let bytes = std::fs::read(&path).expect("readable input");
            let diverged = Profile::ALL.iter().any(|&profile| match target {
                "control_files" => {
                    control_files_model::run(profile, &control_files_model::decode(&bytes)).is_err()
                }
                _ => {
                    let case = lifecycle_model::decode_case(&bytes, lifecycle_model::Mix::All);
                    lifecycle_model::run(profile, case.reap_orphans, &case.ops).is_err()
                }
            });
            if !diverged {
                fixed.push(path);
            }
        }
    }
    assert!(fixed.is_empty(), "fixed, move into the corpus: {fixed:?}");
}
