//! Loom model of the `cgroup.kill` / fork handshake (`src/kill_state.rs`): a fork whose
//! parent a racing kill collects and SIGKILLs either fails its attach (the parent's
//! fatal signal seen under its siglock), or its child is collected by the kill, or its
//! post_fork (after linking the child under the member lock) reports it killed. Never a
//! child linked, missed by the collection and not marked. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p uproc-cgroup --test loom_kill --release`.
#![cfg(loom)]

use loom::sync::{Arc, Mutex};
use loom::thread;
use uproc_cgroup::loom_model::Kill;

/// One cgroup: its kill state, its member set (does it hold the child?), and the
/// parent's siglock (is SIGKILL pending?).
#[derive(Default)]
struct Cg {
    kill: Kill,
    child_linked: Mutex<bool>,
    parent_killed: Mutex<bool>,
}

/// The fork: can_fork, attach (EINTR if the parent is dying), post_fork. `None`: it
/// failed; `Some(killed)`: the child is linked, and post_fork's verdict.
fn fork(cg: &Cg) -> Option<bool> {
    let seen = cg.kill.seen();
    if *cg.parent_killed.lock().unwrap() {
        return None;
    }
    let mut linked = cg.child_linked.lock().unwrap();
    *linked = true;
    let killed = cg.kill.raced(seen);
    drop(linked);
    Some(killed)
}

/// `cgroup.kill`: begin, collect (the parent is a member already; is the child?),
/// SIGKILL the parent, end. Returns whether the collection found the child.
fn kill(cg: &Cg) -> bool {
    cg.kill.begin();
    let collected = *cg.child_linked.lock().unwrap();
    *cg.parent_killed.lock().unwrap() = true;
    cg.kill.end();
    collected
}

#[test]
fn no_child_of_a_killed_parent_escapes_the_kill() {
    loom::model(|| {
        let cg = Arc::new(Cg::default());
        let c2 = cg.clone();
        let forker = thread::spawn(move || fork(&c2));
        let collected = kill(&cg);
        if let Some(killed) = forker.join().unwrap() {
            assert!(
                collected || killed,
                "a child linked after the collection, not marked: it escapes"
            );
        }
    });
}

#[test]
fn a_fork_racing_two_kills_in_a_row_is_caught_by_one() {
    loom::model(|| {
        let cg = Arc::new(Cg::default());
        let c2 = cg.clone();
        let forker = thread::spawn(move || fork(&c2));
        let first = kill(&cg);
        let second = kill(&cg);
        if let Some(killed) = forker.join().unwrap() {
            assert!(first || second || killed, "a child escaped both kills");
        }
        // At rest no kill is in flight: a fork now is not marked.
        let seen = cg.kill.seen();
        assert!(!cg.kill.raced(seen));
    });
}

/// Kills nest: one ending while another is in flight leaves the mark up.
#[test]
fn a_kill_ending_inside_another_leaves_the_mark_up() {
    loom::model(|| {
        let cg = Arc::new(Cg::default());
        let c2 = cg.clone();
        let seen = cg.kill.seen();
        cg.kill.begin();
        let other = thread::spawn(move || {
            c2.kill.begin();
            c2.kill.end();
        });
        other.join().unwrap();
        assert!(
            cg.kill.raced(cg.kill.seen()),
            "the first kill is still in flight"
        );
        cg.kill.end();
        assert!(cg.kill.raced(seen), "both kills ended after `seen`");
        assert!(!cg.kill.raced(cg.kill.seen()), "none in flight at rest");
    });
}
