//! Kill walks: every victim signalled before any of them dies.
//!
//! Linux's kills of many processes (`kill(-pgid)` and `kill(-1)`'s loops,
//! `cgroup_kill`'s `css_task_iter`, `zap_pid_ns_processes`, the parent-death signals of
//! `forget_original_parent`) queue SIGKILL on every victim in one walk, and each victim
//! dies afterwards, in its own context. No victim's death is seen by a victim not yet
//! signalled: a child's SIGCHLD to a parent killed by the same walk finds the parent
//! already dying and is dropped (`prepare_signal`), and a parent-death signal to a
//! child killed by the same zap finds the child dying too. A handler the signal runs
//! runs later too, in the target's context: after the sender's locks are gone.
//!
//! uproc ends a task with no runtime of its own to act on signals (a *bare* task)
//! inside the send, and calls a managed task's signal hook there. Inside a walk
//! ([`walk`], or the guard [`enter`] returns) both are queued instead
//! ([`end_or_defer`]) and run once the outermost walk on this thread is over, before
//! it returns: a caller still finds every bare victim dead when the kill returns. An
//! end queued while the queue runs (a dying victim's exit sends parent-death signals
//! in a walk of its own) joins the same queue and runs in the same frame, so a chain
//! of deaths of any length needs no recursion.
//!
//! User code (a hook, a waker) runs [`outside`] any walk: what it does acts at once, as
//! from any caller (a kill it makes ends its bare victims before it returns), with its
//! own queue while it runs.
//!
//! The order the victims die in is Linux's scheduler's choice; here an end names what
//! it ends (`key`) and what must end before it if the same walk queued both (`after`):
//! the task list names a process and its parent, so a parent dies before the children
//! killed with it, whatever their numbers (a walk meets tasks in number order, which
//! `Scalable`'s per-thread batches would otherwise let decide who is reparented before
//! dying). The order is computed over the walk's ends once, when it is over.
//!
//! Who touches what: the queue and the counters are this thread's own
//! (`thread_local!`); nothing here is shared between threads.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};

/// A queued end: what it ends (`key`), what must end first (`after`), its place
/// among ends with no order between them (`tie`), the end.
struct End {
    key: usize,
    after: usize,
    tie: u64,
    run: Box<dyn FnOnce()>,
}

thread_local! {
    /// How many walks this thread is in.
    static WALKS: Cell<u32> = const { Cell::new(0) };
    /// Whether this thread is running the queue.
    static ENDING: Cell<bool> = const { Cell::new(false) };
    /// The ends queued by the walks, in the order their victims were signalled.
    static QUEUE: RefCell<VecDeque<End>> = const { RefCell::new(VecDeque::new()) };
    /// How many of `QUEUE`'s ends are not ordered yet: those queued since it was last
    /// ordered (the ends of the walk that just ended).
    static UNORDERED: Cell<usize> = const { Cell::new(0) };
}

/// A walk in progress on this thread ([`enter`]); dropping it leaves the walk (also
/// when unwinding), and the outermost one runs the queue.
#[must_use = "the walk ends when the guard is dropped"]
#[derive(Debug)]
pub struct Walking(());

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

/// Enters a walk: until the guard drops, bare ends and hooks are queued
/// ([`end_or_defer`]); the drop of the outermost guard on this thread runs them,
/// unless the queue is already running further up (whose loop then runs them).
pub fn enter() -> Walking {
    WALKS.with(|w| w.set(w.get() + 1));
    Walking(())
}

/// Runs `signal_all` (the walk that signals every victim) inside a walk ([`enter`]).
pub fn walk<R>(signal_all: impl FnOnce() -> R) -> R {
    let _walking = enter();
    signal_all()
}

/// Runs `end` now, or, inside a walk, queues it for when the walk is over. `key`
/// names what it ends and `after` what must end before it (`0`: nothing) if the same
/// walk queued that too; ends at the same depth of that order run by `tie` (the task
/// list: a process's place among its siblings, its fork order), then in the order
/// they came in.
pub fn end_or_defer(key: usize, after: usize, tie: u64, end: impl FnOnce() + 'static) {
    if WALKS.with(Cell::get) == 0 {
        end();
    } else {
        QUEUE.with(|q| {
            q.borrow_mut().push_back(End {
                key,
                after,
                tie,
                run: Box::new(end),
            });
        });
        UNORDERED.with(|u| u.set(u.get() + 1));
    }
}

/// Whether this thread is inside a walk (an end now would be queued).
pub fn in_walk() -> bool {
    WALKS.with(Cell::get) != 0
}

/// Runs `user_code` (a hook, a waker) outside any walk of this thread: its kills act
/// at once, its own walks run their own queue before they return, and the walk it was
/// called from resumes afterwards (also if it unwinds).
#[inline]
pub fn outside<R>(user_code: impl FnOnce() -> R) -> R {
    // Outside any walk already (a waker of every exit, a hook of a plain kill): as is.
    if WALKS.with(Cell::get) == 0 && !ENDING.with(Cell::get) {
        return user_code();
    }
    outside_a_walk(user_code)
}

/// [`outside`] from inside a walk or its queue: the walk set aside, then resumed.
#[cold]
#[inline(never)]
fn outside_a_walk<R>(user_code: impl FnOnce() -> R) -> R {
    struct Resume(u32, bool, VecDeque<End>, usize);
    impl Drop for Resume {
        fn drop(&mut self) {
            let queue = std::mem::take(&mut self.2);
            WALKS.with(|w| w.set(self.0));
            ENDING.with(|e| e.set(self.1));
            UNORDERED.with(|u| u.set(self.3));
            // Whatever the user code's own walks left (none, unless they unwound) runs
            // with the resumed walk's ends.
            QUEUE.with(|q| {
                let mut q = q.borrow_mut();
                let own = std::mem::replace(&mut *q, queue);
                q.extend(own);
            });
        }
    }
    let _resume = Resume(
        WALKS.with(|w| w.replace(0)),
        ENDING.with(|e| e.replace(false)),
        QUEUE.with(|q| std::mem::take(&mut *q.borrow_mut())),
        UNORDERED.with(|u| u.replace(0)),
    );
    user_code()
}

/// Orders the last `fresh` ends of `q`: each after the end its `after` names, if that
/// one is among them; otherwise stable.
fn order(q: &mut VecDeque<End>, fresh: usize) {
    let from = q.len() - fresh;
    let ends = q.make_contiguous();
    let ends = &mut ends[from..];
    let index: HashMap<usize, usize> = ends
        .iter()
        .enumerate()
        .filter(|(_, e)| e.key != 0)
        .map(|(i, e)| (e.key, i))
        .collect();
    // Each end's depth in the forest `after` draws over this walk's ends, without
    // recursion (a chain of 50,000 is one walk when a zap kills it).
    let mut depth: Vec<Option<usize>> = vec![None; ends.len()];
    let mut on_path = vec![false; ends.len()];
    for start in 0..ends.len() {
        let mut path = Vec::new();
        let mut i = start;
        let base = loop {
            if let Some(d) = depth[i] {
                break d + 1;
            }
            path.push(i);
            on_path[i] = true;
            match index.get(&ends[i].after) {
                // A cycle cannot arise from a process tree; guard anyway.
                Some(&p) if !on_path[p] => i = p,
                _ => break 0,
            }
        };
        for (d, &j) in path.iter().rev().enumerate() {
            depth[j] = Some(base + d);
            on_path[j] = false;
        }
    }
    let mut keyed: Vec<(usize, u64, usize)> = depth
        .iter()
        .enumerate()
        .map(|(i, d)| (d.unwrap_or(0), ends[i].tie, i))
        .collect();
    keyed.sort_unstable();
    let taken: Vec<End> = q.drain(from..).collect();
    let mut slots: Vec<Option<End>> = taken.into_iter().map(Some).collect();
    for (_, _, i) in keyed {
        if let Some(e) = slots[i].take() {
            q.push_back(e);
        }
    }
}

/// Runs the queued ends in order, each in this frame, unless this thread already
/// runs them further up (an end's own walk queued more: the loop there takes them).
fn run_queue() {
    let fresh = UNORDERED.with(|u| u.replace(0));
    if fresh > 1 {
        QUEUE.with(|q| order(&mut q.borrow_mut(), fresh));
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
    while let Some(end) = QUEUE.with(|q| q.borrow_mut().pop_front()) {
        (end.run)();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    type Log = Rc<RefCell<Vec<&'static str>>>;

    fn push(log: &Log, s: &'static str) -> impl FnOnce() + 'static {
        let log = log.clone();
        move || log.borrow_mut().push(s)
    }

    #[test]
    fn ends_run_after_the_outermost_walk_parents_first() {
        let log: Log = Rc::default();
        end_or_defer(0, 0, 0, push(&log, "now"));
        assert_eq!(*log.borrow(), ["now"]);
        log.borrow_mut().clear();
        walk(|| {
            // c's parent is b, b's is a: queued child first, they run a, b, c; d has
            // no parent among them and keeps its place.
            end_or_defer(3, 2, 0, push(&log, "c"));
            end_or_defer(4, 9, 0, push(&log, "d"));
            walk(|| end_or_defer(2, 1, 0, push(&log, "b")));
            end_or_defer(1, 0, 0, push(&log, "a"));
            // Two roots more, by tie: f before e.
            end_or_defer(6, 0, 2, push(&log, "e"));
            end_or_defer(5, 0, 1, push(&log, "f"));
            assert!(in_walk());
            log.borrow_mut().push("signalled");
        });
        assert_eq!(*log.borrow(), ["signalled", "d", "a", "f", "e", "b", "c"]);
        assert!(!in_walk());
    }

    #[test]
    fn user_code_runs_outside_the_walk() {
        let log: Log = Rc::default();
        let l = log.clone();
        walk(|| {
            end_or_defer(1, 0, 0, push(&log, "victim"));
            outside(|| {
                assert!(!in_walk());
                // A kill made by user code: its own walk ends its victim before it
                // returns, not with the walk the user code was called from.
                walk(|| end_or_defer(2, 0, 0, push(&l, "hook's victim")));
                l.borrow_mut().push("hook returns");
            });
            assert!(in_walk());
        });
        assert_eq!(*log.borrow(), ["hook's victim", "hook returns", "victim"]);
    }

    #[test]
    fn an_end_that_walks_again_queues_without_recursing() {
        fn chain(n: u32, log: Rc<RefCell<Vec<u32>>>) {
            walk(|| {
                if n > 0 {
                    let l = log.clone();
                    end_or_defer(n as usize, 0, 0, move || {
                        l.borrow_mut().push(n);
                        chain(n - 1, l);
                    });
                }
            });
        }
        // Deep enough to overflow a small stack if each end ran inside the last.
        std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(|| {
                let log = Rc::new(RefCell::new(Vec::new()));
                chain(100_000, log.clone());
                assert_eq!(log.borrow().len(), 100_000);
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn a_deep_tree_in_one_walk_is_ordered_without_recursion() {
        std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(|| {
                let log = Rc::new(RefCell::new(Vec::new()));
                walk(|| {
                    // A chain of 50,000 queued leaf first.
                    for k in (1..=50_000usize).rev() {
                        let l = log.clone();
                        end_or_defer(k, k - 1, 0, move || l.borrow_mut().push(k));
                    }
                });
                let got = log.borrow();
                assert!(got.windows(2).all(|w| w[0] < w[1]), "parents first");
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
