//! The harness itself: runs leave nothing behind, lock counts are Linux's, the binary's
//! exit status means what the README says. No timing is asserted.

use std::process::Command;
use uproc_abi::Profile;
use uproc_benches::args::Body;
use uproc_benches::load::{ForkShape, Setup, expected_locks, measure};
use uproc_benches::report::Subject;
use uproc_benches::threadspawn::check_locks;

const PLAIN: ForkShape = ForkShape {
    levels: 0,
    pidfd: false,
    cgroup: false,
};

#[test]
fn bookkeeping_runs_take_linux_lock_counts_per_life_cycle() {
    for shape in [
        PLAIN,
        ForkShape {
            levels: 2,
            pidfd: true,
            cgroup: true,
        },
    ] {
        for &profile in Profile::ALL {
            let u = measure(profile, Body::None, shape, 2, 0.05).expect("run");
            assert!(u.outcome.failure.is_none(), "{:?}", u.outcome.failure);
            assert!(u.outcome.ops > 0, "no life cycle completed");
            let s = Subject::Uproc {
                profile,
                body: Body::None,
            };
            check_locks(s, shape.levels, u.outcome.ops, &u.locks).unwrap_or_else(|e| {
                panic!("{e} (Linux: {:?})", expected_locks(profile, shape.levels))
            });
        }
    }
}

#[test]
fn bodies_complete_life_cycles() {
    for body in [Body::Thread, Body::Tokio] {
        let u = measure(Profile::Linux70, body, PLAIN, 1, 0.05).expect("run");
        assert!(
            u.outcome.failure.is_none(),
            "{body:?}: {:?}",
            u.outcome.failure
        );
        assert!(u.outcome.ops > 0, "{body:?}: no life cycle completed");
    }
}

#[test]
fn teardown_reaps_every_task_and_removes_the_cgroup() {
    let shape = ForkShape {
        levels: 3,
        pidfd: true,
        cgroup: true,
    };
    let setup = Setup::new(Profile::Linux618, shape, 3).expect("setup");
    let rt = setup.rt.clone();
    assert_eq!(
        rt.system().nr_tasks(),
        1 + 3 + 3,
        "init, 3 namespace inits, 3 parents"
    );
    setup.teardown().expect("teardown");
    assert_eq!(
        rt.system().nr_tasks(),
        1,
        "only init is left, as after any reap"
    );
    assert_eq!(
        rt.init().pid_ns().nr_allocated(),
        1,
        "every pid number freed"
    );
    assert!(rt.cgroup_root().children().is_empty(), "cgroup removed");
}

fn threadspawn(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_threadspawn"))
        .args(args)
        .output()
        .expect("running threadspawn")
}

#[test]
fn an_unknown_profile_is_refused_with_status_2() {
    let out = threadspawn(&["--profile", "linux99"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("expected linux618, linux70 or scalable"),
        "{err}"
    );
}

#[test]
fn smoke_run_exits_0_with_a_row_per_profile_and_worker_count() {
    let out = threadspawn(&[
        "--profile",
        "all",
        "--seconds",
        "0.05",
        "--repeats",
        "1",
        "--workers",
        "1,2",
        "--no-peers",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for p in Profile::ALL {
        let rows = stdout
            .lines()
            .filter(|l| l.starts_with(&format!("uproc {p} body=none")))
            .count();
        assert_eq!(rows, 2, "{p}: one row per worker count\n{stdout}");
    }
    assert!(
        stdout.contains("linux70 / linux618 (body=none)"),
        "{stdout}"
    );
}

#[test]
fn json_mode_prints_only_json_objects() {
    let out = threadspawn(&[
        "--profile",
        "linux618",
        "--seconds",
        "0.05",
        "--repeats",
        "1",
        "--workers",
        "1",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<_> = stdout.lines().collect();
    assert!(
        lines.len() >= 5,
        "meta, uproc row and three peer rows\n{stdout}"
    );
    for l in lines {
        assert!(l.starts_with("{\"type\":\"") && l.ends_with('}'), "{l}");
    }
    assert!(
        stdout.contains("\"pidmap_lock\":{\"write\":3.000"),
        "{stdout}"
    );
}

#[test]
fn bad_options_exit_2() {
    for args in [
        &["--workers", "0"][..],
        &["--body", "fibre"],
        &["--frobnicate"],
    ] {
        assert_eq!(threadspawn(args).status.code(), Some(2), "{args:?}");
    }
}
