//! Loom model of the handshake between a group kill (`kill(-1)`, `kill(-pgid)`) and a
//! fork under `Scalable`: the kill raises the in-flight word, fences and walks the
//! pids; the fork attaches its child, fences (the fence `Task::fork` makes after its
//! attach) and loads the word. Either the walk finds the child or the fork sees the
//! kill (and waits for it to end before its child can fork in turn): never both miss.
//! Removing either fence (the kill's in `GroupKills::raise`, or the fork's here) makes
//! loom find the interleaving where both miss.
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p uproc-tasklist --test loom_group_kill --release`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, Ordering, fence};
use loom::thread;
use uproc_tasklist::loom_model::group_kill::GroupKills;

/// A forked child as the walk sees it: `pid_task` of its pid (the task slot the attach
/// writes).
#[derive(Default)]
struct Child {
    attached: AtomicBool,
}

impl Child {
    /// The fork's side: attach, the fence after it, then the load of the word.
    /// Returns whether the fork waits for a kill.
    fn fork(&self, kills: &GroupKills) -> bool {
        self.attached.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        kills.any_in_flight()
    }

    /// The walk's read of the child (after the kill's raise).
    fn found(&self) -> bool {
        self.attached.load(Ordering::Relaxed)
    }
}

#[test]
fn a_fork_and_a_group_kill_never_both_miss() {
    loom::model(|| {
        let kills = Arc::new(GroupKills::new());
        let child = Arc::new(Child::default());
        let kill = {
            let (kills, child) = (kills.clone(), child.clone());
            thread::spawn(move || {
                kills.raise();
                child.found()
            })
        };
        let fork_waits = child.fork(&kills);
        let walk_found = kill.join().unwrap();
        assert!(
            walk_found || fork_waits,
            "the walk missed the child and the fork missed the kill"
        );
    });
}

/// Two kills in flight at once and one fork: the fork sees at least one of the kills
/// its walk missed, and after both kills lowered their raises the word reads zero.
#[test]
fn a_fork_sees_every_kill_whose_walk_missed_it() {
    loom::model(|| {
        let kills = Arc::new(GroupKills::new());
        let child = Arc::new(Child::default());
        let killers: Vec<_> = (0..2)
            .map(|_| {
                let (kills, child) = (kills.clone(), child.clone());
                thread::spawn(move || {
                    kills.raise();
                    let found = child.found();
                    (kills, found)
                })
            })
            .collect();
        let fork_waits = child.fork(&kills);
        let mut missed = false;
        for k in killers {
            let (kills, found) = k.join().unwrap();
            missed |= !found;
            kills.lower();
        }
        assert!(
            !missed || fork_waits,
            "a walk missed the child and the fork saw no kill in flight"
        );
        assert!(!kills.any_in_flight(), "every raise was lowered");
    });
}
