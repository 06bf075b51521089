//! Kill walks: every victim signalled before any of them dies.
//!
//! Linux's kills of many processes (`kill(-pgid)` and `kill(-1)`'s loops,
//! `cgroup_kill`'s `css_task_iter`, `zap_pid_ns_processes`, the parent-death signals of
//! `forget_original_parent`) queue SIGKILL on every victim in one walk, and each victim
//! dies afterwards, in its own context. No victim's death is seen by a victim not yet
//! signalled: a child's SIGCHLD to a parent killed by the same walk finds the parent
//! already dying and is dropped (`prepare_signal`), and a parent-death signal to a
//! child killed by the same zap finds the child dying too.
//!
//! uproc ends a task with no runtime of its own to act on signals (a *bare* task)
//! inside the send. Inside a walk ([`walk`]) that end is queued instead
//! ([`end_or_defer`]) and run once the outermost walk on this thread has signalled
//! every victim, before it returns: a caller still finds every bare victim dead when
//! the kill returns. An end queued while the queue runs (a dying victim's exit sends
//! parent-death signals in a walk of its own) joins the same queue and runs in the
//! same frame, so a chain of deaths of any length needs no recursion.
//!
//! The order the victims die in is Linux's scheduler's choice; here it is the order of
//! each end's `rank` (then the walk's): the task list ranks a task by its depth in the
//! process tree, so a parent dies before the children killed with it, whatever their
//! numbers (a walk meets tasks in number order, which `Scalable`'s per-thread batches
//! would otherwise let decide who is reparented before dying).
//!
//! Who touches what: the queue and the two flags are this thread's own
//! (`thread_local!`); nothing here is shared between threads.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

/// A queued end of a bare task, with its rank.
type End = (u64, Box<dyn FnOnce()>);

thread_local! {
    /// How many walks this thread is in.
    static WALKS: Cell<u32> = const { Cell::new(0) };
    /// Whether this thread is running the queue.
    static ENDING: Cell<bool> = const { Cell::new(false) };
    /// The ends queued by the walks, in the order their victims were signalled.
    static QUEUE: RefCell<VecDeque<End>> = const { RefCell::new(VecDeque::new()) };
    /// How many of `QUEUE`'s ends the running queue has not ranked yet: those queued
    /// since it last sorted (the ends of the walk that just ended).
    static UNRANKED: Cell<usize> = const { Cell::new(0) };
}

/// Leaves a walk, also when unwinding; the outermost one runs the queue.
struct Walking;

impl Drop for Walking {
    fn drop(&mut self) {
        let left = WALKS.with(|w| {
            let n = w.get() - 1;
            w.set(n);
            n
        });
        if left == 0 {
            run_queue();
        }
    }
}

/// Runs `signal_all` (the walk that signals every victim) with the ends of the bare
/// tasks it kills queued ([`end_or_defer`]), then runs them, unless this thread is
/// already in a walk or running the queue (whose caller runs them).
pub fn walk<R>(signal_all: impl FnOnce() -> R) -> R {
    WALKS.with(|w| w.set(w.get() + 1));
    let _walking = Walking;
    signal_all()
}

/// Ends a bare task now (`end`), or, inside a [`walk`], queues its end for when every
/// victim of the walk has been signalled; the ends a walk queued run by `rank`
/// (lowest first; equal ranks in the order queued).
pub fn end_or_defer(rank: u64, end: impl FnOnce() + 'static) {
    if WALKS.with(Cell::get) == 0 {
        end();
    } else {
        QUEUE.with(|q| q.borrow_mut().push_back((rank, Box::new(end))));
        UNRANKED.with(|u| u.set(u.get() + 1));
    }
}

/// Whether this thread is inside a [`walk`] (an end now would be queued).
pub fn in_walk() -> bool {
    WALKS.with(Cell::get) != 0
}

/// Runs the queued ends in order, each in this frame, unless this thread already
/// runs them further up (an end's own walk queued more: the loop there takes them).
fn run_queue() {
    // The ends the walk that just ended queued, ranked among themselves (behind any
    // still queued from before, which keep their place).
    let fresh = UNRANKED.with(|u| u.replace(0));
    if fresh > 1 {
        QUEUE.with(|q| {
            let mut q = q.borrow_mut();
            let from = q.len() - fresh;
            q.make_contiguous()[from..].sort_by_key(|(rank, _)| *rank);
        });
    }
    if ENDING.with(|e| e.replace(true)) {
        return;
    }
    struct Ending;
    impl Drop for Ending {
        fn drop(&mut self) {
            ENDING.with(|e| e.set(false));
        }
    }
    let _ending = Ending;
    while let Some((_, end)) = QUEUE.with(|q| q.borrow_mut().pop_front()) {
        end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    #[test]
    fn ends_run_after_the_outermost_walk_by_rank() {
        let log = Rc::new(RefCell::new(Vec::new()));
        let l = log.clone();
        end_or_defer(0, move || l.borrow_mut().push("now"));
        assert_eq!(*log.borrow(), ["now"]);
        log.borrow_mut().clear();
        let (a, b, c) = (log.clone(), log.clone(), log.clone());
        walk(|| {
            end_or_defer(2, move || a.borrow_mut().push("a"));
            walk(|| end_or_defer(1, move || b.borrow_mut().push("b")));
            assert!(in_walk());
            c.borrow_mut().push("signalled");
        });
        assert_eq!(*log.borrow(), ["signalled", "b", "a"], "by rank");
        assert!(!in_walk());
    }

    #[test]
    fn an_end_that_walks_again_queues_without_recursing() {
        fn chain(n: u32, log: Rc<RefCell<Vec<u32>>>) {
            walk(|| {
                if n > 0 {
                    let l = log.clone();
                    end_or_defer(0, move || {
                        l.borrow_mut().push(n);
                        chain(n - 1, l);
                    });
                }
            });
        }
        let log = Rc::new(RefCell::new(Vec::new()));
        // Deep enough to overflow a small stack if each end ran inside the last.
        let log2 = log.clone();
        std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || {
                let log = Rc::new(RefCell::new(Vec::new()));
                chain(100_000, log.clone());
                assert_eq!(log.borrow().len(), 100_000);
            })
            .unwrap()
            .join()
            .unwrap();
        chain(3, log2);
        assert_eq!(*log.borrow(), [3, 2, 1]);
    }
}
