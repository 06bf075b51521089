//! The task cache: where a reaped task's allocation waits for the next fork of the
//! same thread.
//!
//! Linux allocates every `task_struct` from a slab cache (`task_struct_cachep`:
//! `alloc_task_struct_node` in `dup_task_struct`, `free_task_struct` in `free_task`),
//! whose per-CPU free lists make a fork's allocation and the last `put_task_struct`'s
//! free a few instructions each. A task here is an `Arc<TaskInner>` (its process's
//! group state inline); a plain drop of its last reference costs two atomics and a
//! `free`, the next fork a `malloc`: about 130 instructions of glibc per life cycle.
//! So, as the pid cache does for pids (`uproc_pidns::put_pid`), per thread a few
//! *emptied* task allocations (`uproc_abi::arc_cache`):
//!
//! ```text
//!  drop(Task) ──► put_task: the last handle, and nothing outside the task
//!                 can reach it (sole_owner)? ─ no ──► plain drop
//!                                 │ yes
//!                                 ▼
//!        drop the TaskInner in place (its pid to put_pid, its cgroup link, its
//!        group state: everything a last drop drops, at the same moment) and keep
//!        the allocation, counts 1/1, value dead
//!                                 │
//!   thread-local cache of 8   ◄───┘ (full, or the thread's cache gone: freed)
//!          │
//!          ▼
//!  fork ──► new_task_slot(): the allocation the new task is written into
//! ```
//!
//! Who may touch what: only the owning thread reads or writes its cache (a
//! `thread_local!`); an entry is a unique allocation whose value was dropped, so no
//! handle to it exists anywhere. Only the drop of a [`Task`](crate::Task) handle
//! feeds the cache (in a fork/exit/reap loop the caller's handle of the child is the
//! last: the parent's list lets go of it at the reap); every other holder
//! (`Arc<TaskInner>` clones inside the crate) drops plainly, and so does a last
//! handle while anything else can still reach the task (see [`sole_owner`]): the
//! allocation then goes back to the allocator.
//!
//! Why not `Arc::get_mut` (`uproc_abi::arc_cache::empty_if_unique`, the pid cache's
//! test): a task is never free of weak references while it exists, since its own
//! pid's task slot names it (a `Weak`, kept until the pid drops, see
//! `uproc_pidns::TaskSlot`). That `Weak` lives inside the task (in its pid), so the
//! test here is that the task's weak references are that one only and that its pid
//! is unreachable from outside; the task's drop then drops the `Weak` itself.
//! Nothing observable changes: the task's drop runs when it would have.

use std::cell::RefCell;
use std::sync::Arc;

use uproc_abi::arc_cache::{ArcCache, Emptied, empty_sole_owner};

use crate::task::TaskInner;

/// Emptied allocations a thread keeps (as the pid cache: one serves a fork/exit/reap
/// loop, a few absorb a burst of reaps).
const CACHED: usize = 8;

thread_local! {
    // Const-initialised: no lazy-initialisation check on the fork and reap paths.
    static CACHE: RefCell<ArcCache<TaskInner, CACHED>> = const { RefCell::new(ArcCache::new()) };
}

/// `alloc_task_struct_node`: an allocation this thread's cache kept, else a new one.
#[inline(always)]
pub(crate) fn new_task_slot() -> Emptied<TaskInner> {
    CACHE
        .try_with(|c| c.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// `put_task_struct`: drops a task handle's reference; the last one drops the task now
/// and keeps its allocation for this thread's next fork, when nothing outside the task
/// can reach it any more (see [`sole_owner`]).
#[inline]
#[allow(unsafe_code)]
pub(crate) fn put_task(task: Arc<TaskInner>) {
    // The common case, one of several handles: one plain load, then the plain drop.
    if Arc::strong_count(&task) != 1 || !sole_owner(&task) {
        return;
    }
    // SAFETY: `sole_owner` read that `task` is the only `Arc` and that the one `Weak`
    // counted, if any, is its pid's task slot's, with the pid itself held by the task
    // alone and named by no `Weak`: nothing outside the task can reach that `Weak` to
    // upgrade it while the task is dropped in place (the argument is `sole_owner`'s).
    let emptied = unsafe { empty_sole_owner(task) };
    // The task's own drop (nested `Task` handles of a leader's thread list included)
    // ran inside `empty_sole_owner`, before the cache is borrowed below.
    if let Some(emptied) = emptied {
        let _ = CACHE.try_with(|c| c.borrow_mut().push(emptied));
    }
}

/// Whether the caller's one `Arc` of `task` is the only way to reach it: the weak
/// references to it are at most its own pid's task slot's (every task's pid names it
/// there from its fork on), and that pid is held by the task alone (strong count 1)
/// with no `Weak` to it (the pidfs index lets go of its own at `free_pid`). Any other
/// `Weak` (a child's `real_parent`, a `WeakTask`, a cgroup's dying-leader list) or pid
/// holder sends the task to a plain drop.
///
/// The one upgrader to rule out is a lookup through the pid's task slot
/// (`pid_task`), which holds a counted reference to the pid from before it reads the
/// slot until after its upgrade (a pidfd's, the pid table's, or one upgraded from a
/// clone of the pidfs index's `Weak`, a clone it holds until it has upgraded it).
/// Hence the order: the pid's weak count, then its strong count, then the task's,
/// each read after an `Acquire` fence. A count read from a holder's `Release`
/// decrement makes everything that holder did before letting go (its upgrade of the
/// pid, of the task) visible to the next read. So a lookup either still holds the pid
/// or a `Weak` to it (refused), or its upgrade of the task shows in the task's strong
/// count, or it has not begun and cannot begin (nothing left to reach the pid from).
/// `tests/loom_task_cache.rs` models this against both kinds of lookup.
///
/// A task that keeps its `CLONE_PIDFD` pidfd holds its pid twice (the pidfd's open
/// file holds it too): that second count is the task's own when the task's handle is
/// the file's only one ([`PidFd::is_only_handle`](uproc_pidfs::PidFd::is_only_handle),
/// read first, in the same order), and the task's drop drops it.
#[inline]
fn sole_owner(task: &Arc<TaskInner>) -> bool {
    use std::sync::atomic::{Ordering, fence};
    let pid: &Arc<uproc_pidns::Pid> = &task.pid;
    let own_pidfd = match &task.pidfd {
        None => 0,
        Some(fd) => match own_pidfd(fd, pid) {
            Some(n) => n,
            None => return false,
        },
    };
    fence(Ordering::Acquire);
    if Arc::weak_count(pid) != 0 {
        return false;
    }
    fence(Ordering::Acquire);
    if Arc::strong_count(pid) != 1 + own_pidfd {
        return false;
    }
    fence(Ordering::Acquire);
    Arc::strong_count(task) == 1
        && Arc::weak_count(task) == usize::from(pid.task_slot().was_attached())
}

/// The count of `pid` that the task's own pidfd `fd` holds (1), or `None` when the
/// pidfd is shared or names another pid. Out of line: most tasks have no pidfd.
#[cold]
#[inline(never)]
fn own_pidfd(fd: &uproc_pidfs::PidFd, pid: &Arc<uproc_pidns::Pid>) -> Option<usize> {
    (Arc::ptr_eq(fd.pid(), pid) && fd.is_only_handle()).then_some(1)
}

/// How many emptied task allocations this thread's cache holds (tests).
#[cfg(test)]
pub(crate) fn cached_tasks() -> usize {
    CACHE.try_with(|c| c.borrow().len()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::cached_tasks;
    use crate::{CloneArgs, System, SystemConfig, Task, WaitId};
    use std::sync::Arc;
    use uproc_abi::{Errno, PidfdFlags, Profile, Signal, WaitOptions};

    fn system(profile: Profile) -> Arc<System> {
        System::new(SystemConfig {
            profile,
            ..SystemConfig::default()
        })
        .expect("valid config")
    }

    /// A child of `init`, exited and reaped: only the returned handle holds it.
    fn reaped_child(init: &Task) -> Task {
        reaped_child_with(init, &CloneArgs::default())
    }

    fn reaped_child_with(init: &Task, args: &CloneArgs) -> Task {
        let c = init.fork(args).expect("fork");
        c.exit(0);
        let info = init
            .wait(WaitId::Pid(init.pid_of(&c)), WaitOptions::EXITED)
            .expect("waitable")
            .expect("blocking wait");
        assert_eq!(info.status.exited(), Some(0));
        c
    }

    /// How many allocations dropping `t` added to this thread's task cache.
    fn kept_by_drop(t: Task) -> usize {
        let before = cached_tasks();
        drop(t);
        cached_tasks() - before
    }

    fn addr(t: &Task) -> *const u8 {
        Arc::as_ptr(&t.0).cast()
    }

    #[test]
    fn a_reaped_tasks_allocation_serves_the_next_fork() {
        for p in Profile::ALL {
            let sys = system(*p);
            let init = sys.init();
            let c = reaped_child(&init);
            let at = addr(&c);
            assert_eq!(kept_by_drop(c), 1, "{p:?}: the last handle kept it");
            let before = cached_tasks();
            let next = init.fork(&CloneArgs::default()).expect("fork");
            assert_eq!(addr(&next), at, "{p:?}: the next fork reuses it");
            assert_eq!(cached_tasks(), before - 1);
            assert_eq!(next.pid(), init.pid_of(&next));
            next.exit(0);
            drop(reaped_child(&init));
        }
    }

    #[test]
    fn a_task_keeping_its_own_pidfd_is_recycled_unless_the_pidfd_is_shared() {
        let pidfd_fork = CloneArgs {
            flags: uproc_abi::CloneFlags::PIDFD,
            ..CloneArgs::default()
        };
        for p in Profile::ALL {
            let sys = system(*p);
            let init = sys.init();
            // Only the task holds its pidfd: recycled with it.
            let c = reaped_child_with(&init, &pidfd_fork);
            assert!(c.pidfd().is_some());
            assert_eq!(kept_by_drop(c), 1, "{p:?}: its own pidfd is the task's");
            // A clone of the pidfd outlives the task: not recycled, and the clone
            // still answers for the reaped pid.
            let c = reaped_child_with(&init, &pidfd_fork);
            let fd = c.pidfd().expect("CLONE_PIDFD");
            assert_eq!(kept_by_drop(c), 0, "{p:?}: a shared pidfd reaches the pid");
            assert_eq!(fd.send_signal(Signal::TERM), Err(Errno::ESRCH));
            assert!(fd.poll().readable, "{p:?}: the exit stays readable");
        }
    }

    #[test]
    fn a_task_reachable_from_outside_is_dropped_plainly() {
        for p in Profile::ALL {
            let sys = system(*p);
            let init = sys.init();
            // A weak handle outlives the task.
            let c = reaped_child(&init);
            let weak = c.downgrade();
            assert_eq!(kept_by_drop(c), 0, "{p:?}: a WeakTask names it");
            assert!(weak.upgrade().is_none(), "{p:?}: and it is gone for it");
            // A pidfd keeps the pid, whose task slot names the task.
            let c = init.fork(&CloneArgs::default()).expect("fork");
            let fd = init
                .pidfd_open(init.pid_of(&c), PidfdFlags::empty())
                .expect("pidfd");
            c.exit(0);
            init.wait(WaitId::Pid(init.pid_of(&c)), WaitOptions::EXITED)
                .expect("waitable");
            assert_eq!(kept_by_drop(c), 0, "{p:?}: a pidfd holds its pid");
            assert_eq!(fd.send_signal(Signal::TERM), Err(Errno::ESRCH));
            drop(fd);
            // A zombie's handle: its parent's list still holds it.
            let z = init.fork(&CloneArgs::default()).expect("fork");
            z.exit(0);
            let pid = init.pid_of(&z);
            assert_eq!(kept_by_drop(z), 0, "{p:?}: the parent holds the zombie");
            init.wait(WaitId::Pid(pid), WaitOptions::EXITED)
                .expect("the zombie is still waitable");
        }
    }
}
