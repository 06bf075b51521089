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
//!        take the pid's task slot `Weak` out (its count stays: the kept weak),
//!        drop the TaskInner in place (its pid to put_pid_as(_, true), its cgroup link,
//!        its group state: everything a last drop drops, at the same moment) and
//!        keep the allocation, counts 1/2 (the kept weak), value dead
//!                                 │
//!   thread-local cache of 8   ◄───┘ (full, or the thread's cache gone: freed,
//!          │                         the kept weak with it)
//!          ▼
//!  fork ──► new_task_slot(): the allocation the new task is written into;
//!           publish_kept_in_pid(): its kept weak becomes the new pid's slot `Weak`
//! ```
//!
//! Who may touch what: only the owning thread reads or writes its cache (a
//! `thread_local!`); an entry is a unique allocation whose value was dropped, so no
//! handle to it exists anywhere (its kept weak is a count the entry owns, not a
//! handle anyone holds). Only the drop of a [`Task`](crate::Task) handle
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

use std::mem::ManuallyDrop;
use std::sync::{Arc, Weak};

use uproc_abi::arc_cache::{Emptied, empty_sole_owner};
use uproc_abi::stash::LocalStash;

use crate::task::TaskInner;

/// Emptied allocations a thread keeps (as the pid cache: one serves a fork/exit/reap
/// loop, a few absorb a burst of reaps).
const CACHED: usize = 8;

/// A task allocation for the next fork: an emptied one, or a new one, with one `Weak`
/// counted besides its `Arc` (the *kept weak*) for the new task's pid's task slot.
///
/// A task's pid names it with a `Weak` from the fork (the task slot) until the pid
/// drops. Made at each fork (`Arc::downgrade`: a compare-exchange loop) and dropped at
/// each reap (a locked decrement), that count would go up and down by one on the same
/// allocation every life cycle; the cache instead takes the reaped task's slot `Weak`
/// out before the task's drop ([`put_task`]) and keeps its count with the allocation,
/// and the next fork's [`publish_kept_in_pid`](crate::task::publish_kept_in_pid) hands
/// it to the new pid. The count is kept as a count, not a `Weak` value (a `Weak<dyn Any>`
/// is two words), and taken back with `Weak::from_raw` on the allocation's address.
///
/// The kept weak is never upgraded while the allocation is empty (the value it would
/// name is dead until [`fill`](KeptTask::fill) writes one), and it drops with the
/// allocation when the allocation is freed instead (the cache full, the thread ending).
pub(crate) struct KeptTask(ManuallyDrop<Emptied<TaskInner>>);

impl KeptTask {
    /// A new allocation, its kept weak counted (one atomic; a fork that found the cache
    /// empty).
    #[cold]
    #[inline(never)]
    fn new() -> KeptTask {
        KeptTask(ManuallyDrop::new(Emptied::new_with_kept_weak()))
    }

    /// Where the task will live (see [`Emptied::as_ptr`]).
    #[inline]
    pub(crate) fn as_ptr(&self) -> *const TaskInner {
        self.0.as_ptr()
    }

    /// Writes the task in and links its group's address
    /// ([`TaskInner::link_group`]), before anyone else can reach it. The kept weak is
    /// now the new task's: the caller hands it to the task's pid with
    /// [`publish_kept_in_pid`](crate::task::publish_kept_in_pid) before the task can be
    /// dropped (else it keeps the allocation, leaked).
    #[inline]
    #[allow(unsafe_code)]
    pub(crate) fn fill(self, task: TaskInner) -> Arc<TaskInner> {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped (the `ManuallyDrop` above), so the emptied
        // allocation is taken out of it exactly once, here.
        let emptied = unsafe { ManuallyDrop::take(&mut this.0) };
        let task = emptied.fill(task);
        TaskInner::link_group(&task);
        task
    }
}

impl Drop for KeptTask {
    /// Frees the allocation, its kept weak included (the cache full or gone). Out of
    /// line: the reap's path only names it.
    #[allow(unsafe_code)]
    #[inline(never)]
    fn drop(&mut self) {
        // SAFETY: the kept weak is a count on this allocation that this entry owns (left
        // by `Emptied::new_with_kept_weak`'s `Weak::into_raw`, or by the reaped task's
        // slot `Weak`, which `put_task` never dropped), and nothing else took it back.
        // Either `Weak`'s raw pointer is this address, the allocation's value address
        // (`Weak::into_raw` and `Arc::as_ptr` both point at the value), and
        // `Weak<TaskInner>` has that `Weak`'s data layout (the slot's `Weak<dyn Any>` was
        // made from a `Weak<TaskInner>`; `MaybeUninit<TaskInner>` is laid out as
        // `TaskInner`); the value is not read (a `Weak`'s drop never touches it). The
        // `Emptied` is then dropped once, here, and never used again.
        unsafe {
            drop(Weak::from_raw(self.0.as_ptr()));
            ManuallyDrop::drop(&mut self.0);
        }
    }
}

thread_local! {
    // Const-initialised: no lazy-initialisation check on the fork and reap paths.
    static CACHE: LocalStash<KeptTask, CACHED> = const { LocalStash::new() };
}

/// `alloc_task_struct_node`: an allocation this thread's cache kept, else a new one.
#[inline(always)]
pub(crate) fn new_task_slot() -> KeptTask {
    CACHE
        .try_with(|c| c.pop())
        .ok()
        .flatten()
        .unwrap_or_else(KeptTask::new)
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
    // The pid's task slot's `Weak` stays with the allocation as its kept weak (see
    // [`KeptTask`]).
    // SAFETY: `sole_owner` read that the task's pid is held by the task alone with no
    // `Weak` to it, and nothing outside the task can reach it (the argument is
    // `sole_owner`'s): nobody reads its task slot now or later.
    let Some(own_weak) = (unsafe { task.pid.task_slot().take_unique() }) else {
        // Never attached (no fork returns such a task): a plain drop.
        return;
    };
    // Not dropped (its count stays with the allocation), and not turned into a raw
    // pointer either: the address arithmetic of a `dyn` pointer is needed only if it
    // has to be given back (`give_back`).
    let kept = ManuallyDrop::new(own_weak);
    if task.pidfd.is_none() {
        // The task's drop may then empty its pid without asking again (its own pidfd,
        // when it has one, is dropped first there and may have done anything with the
        // pid: that case keeps `put_pid`'s check). A plain store: nothing else can
        // reach the task.
        use std::sync::atomic::Ordering::Relaxed;
        let f = task.flags.load(Relaxed);
        task.flags.store(f | crate::task::PID_UNIQUE, Relaxed);
    }
    // SAFETY: `sole_owner` read that `task` is the only `Arc` and that the one `Weak`
    // counted is its pid's task slot's, with the pid itself held by the task alone and
    // named by no `Weak`: nothing outside the task can reach that `Weak` (now the
    // `kept`, held here and not upgraded) to upgrade it while the task is dropped
    // in place (the argument is `sole_owner`'s).
    match unsafe { empty_sole_owner(task, 1) } {
        // The task's own drop (nested `Task` handles of a leader's thread list
        // included) ran inside `empty_sole_owner`, before the cache is borrowed here.
        Some(emptied) => {
            let _ = CACHE.try_with(|c| c.push(KeptTask(ManuallyDrop::new(emptied))));
        }
        // Another `Weak` outlived the task's drop after all: it keeps the allocation,
        // and the kept count is given back.
        None => give_back(ManuallyDrop::into_inner(kept)),
    }
}

/// Drops the kept weak of a task allocation that another `Weak` keeps (out of line:
/// no reap of a task nothing else reaches comes here).
#[cold]
#[inline(never)]
fn give_back(kept: Weak<dyn std::any::Any + Send + Sync>) {
    drop(kept);
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
    CACHE.try_with(|c| c.len()).unwrap_or(0)
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
        reap(init, c)
    }

    /// `c`, a child of `init` that exited with 0, reaped: only the returned handle
    /// holds it.
    fn reap(init: &Task, c: Task) -> Task {
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
            // The kept weak went to the new task's pid: as many `Weak`s as a task in
            // a new allocation has (whose slot's `Weak` was made for it), and a lookup
            // through the pid finds the new task.
            let other = init.fork(&CloneArgs::default()).expect("fork");
            assert_ne!(addr(&other), at);
            assert_eq!(
                Arc::weak_count(&next.0),
                Arc::weak_count(&other.0),
                "{p:?}: the slot's Weak, and no other"
            );
            if *p == Profile::Scalable {
                // (No cgroup member list names a task under `Scalable`.)
                assert_eq!(Arc::weak_count(&next.0), 1, "the slot's Weak only");
            }
            other.exit(0);
            drop(reap(&init, other));
            let found = sys
                .find_task(init.0.active_ns(), init.pid_of(&next))
                .expect("found by number");
            assert_eq!(addr(&found), at, "{p:?}: the slot names the new task");
            drop(found);
            next.exit(0);
            assert_eq!(kept_by_drop(reap(&init, next)), 1, "{p:?}: and kept again");
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
            let c = reap(&init, c);
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
