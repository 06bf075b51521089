//! The task life cycle for uproc: fork, exit, wait, reap, signals, reparenting.
//!
//! This crate is uproc's `kernel/fork.c`, `kernel/exit.c` and the task half of
//! `kernel/signal.c`: it owns [`Task`]s (threads), their thread groups (processes), the
//! parent/child tree, process groups and sessions, and the [`System`] that holds one
//! runtime's pid namespaces (`uproc-pidns`), pidfs (`uproc-pidfs`) and cgroup hierarchy
//! (`uproc-cgroup`) together.
//!
//! # Objects and who holds them
//!
//! - [`System`] (one per runtime, in an `Arc`) holds the runtime init, pid 1 of the root
//!   namespace. Only the init points back to it (weakly); every other task reaches it
//!   through its root namespace's init, on slow paths only, so that the fork/exit/wait
//!   path of `Scalable` takes no count on the one object every worker shares.
//! - A process is a `ThreadGroup` (`signal_struct` + `sighand_struct`); each thread is a
//!   `TaskInner` (`task_struct`) behind a [`Task`] handle. The group lives inside its
//!   leader's `TaskInner` (a process is one allocation); every other thread holds its
//!   leader strongly and reaches the group through it; the group holds its threads
//!   weakly; the leader holds the other threads strongly until each is released (it
//!   is released last), and `System::drop` cuts that link for threads never released.
//! - A parent's group holds its children (child group leaders) strongly in its
//!   `children` list; a child holds its parent (`real_parent`) weakly. So once reaped
//!   (detached from its parent's list, its pid slot cleared, a thread taken off its
//!   leader's list) a task is freed as soon as the last user handle goes.
//! - A namespace's idr holds its published [`Pid`]s and each `Pid` holds its
//!   namespaces: that loop is cut by `free_pid`. Dropping the `System` frees every
//!   number still allocated, so the last handle of a runtime frees everything.
//! - A [`Pid`] names a task only weakly (`task_slot`); a namespace's `child_reaper` is
//!   weak too. pidfs's backend and cgroup's resolver are the `System`, weakly.
//! - A task's css link (its cgroup membership) lives inside the task: the cgroup side
//!   reaches it through the task ([`CgroupMember`]'s `css`), and its drop with the
//!   task's unlinks and uncharges whatever a path left linked or charged.
//!
//! # THE LOCK ORDER
//!
//! Every profile runs the same per-process protocol; the `Linux*` profiles also take
//! the global `tasklist_lock` around the tree changes, exactly where Linux does.
//!
//! ```text
//! a group's threadgroup_rwsem               (thread fork: read; cgroup migration: write)
//! tasklist_lock (NamedRwLock, global)       Linux*: fork attach, exit_notify, release
//!   |                                        every profile: slow paths only
//!   -> a dying group D's `children` lock
//!     -> its reaper R's `children` lock      (R: an ancestor of D, or D's namespace init)
//!       -> a group's siglock (`sig`)         [one at a time, leaf, except:]
//!         -> per-task leaf spin lock (`rare`: hook, threads, ns_for_children)
//!       -> a hashed sleep lock               (a waiter going to sleep on a list it
//!                                             holds, and that list's notifier; leaf)
//! ```
//!
//! `children` and `sig` are spin locks (`uproc_abi::spin`: one atomic a round, as
//! Linux's `tasklist_lock` and `siglock` spin); every hold is short.
//!
//! 0. A group's `threadgroup_rwsem` (`cgroup_threadgroup_rwsem`, per group) is the
//!    outermost: a fork adding a thread to a group holds it for reading from choosing
//!    the cgroup until `cgroup_post_fork` linked the thread; a migration of the group
//!    (`cgroup.procs`, [`Cgroup::attach`](uproc_cgroup::Cgroup::attach)) holds it for
//!    writing, so a thread group is never split across cgroups. A fork of a new process
//!    does not read-lock the new group (nobody can name it before its attach): a
//!    migration that finds it before the fork's end waits for its `started` flag, which
//!    the fork publishes right after linking it. Nothing else takes it.
//! 1. `tasklist_lock` is taken before any lock of this crate (but the rwsem) and never
//!    while one is held. `Linux618`/`Linux70` write it at fork's attach (1), `exit_notify` (1) and
//!    `release_task` (1) — exactly three per life cycle of a plain child, as Linux —
//!    and read it for the stop/continue parent notification. `Scalable` takes it on
//!    none of these. Every profile takes it for the slow paths: setpgid, setsid (write;
//!    it also guards the index of process-group ids), kill -1, kill -pgid, the
//!    orphaned-process-group test of a SIGTSTP/SIGTTIN/SIGTTOU (any sender; it then
//!    takes siglocks one at a time), the subreaper marking walk and the namespace
//!    zap's walk (read).
//! 2. A group's `children` list, a child's `real_parent`, `exit_state` (of a leader),
//!    `exit_signal` and `autoreap` change only under the `children` lock of the
//!    parent group (both the old and the new one for a reparent). So a waiter holding
//!    its own group's lock sees a consistent list and no child in flight, and a
//!    child's exit, which locks its parent's list and re-checks `real_parent` under it
//!    (`TaskInner::with_parent_children`, retrying if a reparent moved it), notifies
//!    exactly its current parent, in the same critical section as its zombie
//!    transition and the autoreap decision. Under `Scalable` a waiter that claimed a
//!    zombie under its own group's lock unlinks it in the same hold (no
//!    `tasklist_lock` has to come first), then records its pidfs exit and uncharges
//!    it with the lock dropped.
//! 3. At most two `children` locks are held at once, only by `forget_original_parent`:
//!    the dying group D's, then its reaper R's. R is a live subreaper ancestor of D
//!    (or a live thread of it), or D's namespace init, which, when it dies itself,
//!    never takes a second `children` lock. A group holding a `children` lock while
//!    waiting for another is dying (no live thread), and a dying group is never chosen
//!    as a reaper except a namespace init: a wait-for chain D1 -> R1 = D2 -> R2 ... only
//!    climbs towards inits and cannot cycle. D marks its list closed before it hands
//!    the children on, in the same critical section: a fork attaching under D's lock
//!    sees it and fails (EINTR; a `CLONE_PARENT` fork re-reads its parent and retries),
//!    and a reparent that finds R's list closed looks for R's own reaper (a namespace
//!    init keeps adopting: its orphans autoreap).
//! 4. The siglock is a leaf: while holding it nothing else is acquired but the per-task
//!    leaf mutexes. Siglocks are never nested in each other. Inside a `children` lock
//!    any number of siglocks are taken one after another (children's, parent's).
//! 5. The locks of other crates: `pidmap_lock` (inside `alloc_pid` / `free_pid` /
//!    `disable_pid_allocation`) is never taken under a lock of this crate in `Linux70`
//!    and `Scalable` (the pids of a reap are freed after the locks are dropped); in
//!    `Linux618`, `free_pid` runs under `tasklist_lock` (write), as 6.18 did, so there
//!    `tasklist_lock -> pidmap_lock`. `css_set_lock` is never taken under any lock of
//!    this crate: `can_fork` before the attach, `post_fork` after it, `task_dead` before
//!    `exit_notify`, `release` before `release_task` locks; the cgroup crate may call
//!    [`CgroupMember`] methods (which take a siglock) under `css_set_lock`, so
//!    `css_set_lock -> siglock`. pidfs is called (`pidfd_prepare_stale`, `pidfs_exit`,
//!    `do_notify_pidfd`) with none of our locks held, and calls our [`PidfdBackend`]
//!    with none of its own.
//! 6. No user code (signal hooks, pidfd wakers) runs under any lock; no guard leaves
//!    the crate. Exit signals other than SIGCHLD are delivered after the locks.
//! 7. Under `Scalable` a fork that attached while a group kill (`kill(-1)`,
//!    `kill(-pgid)`) was in flight waits, before `cgroup_post_fork`, until that kill's
//!    walks end (`group_kill.rs`). It then holds only `threadgroup_rwsem` read guards
//!    and its pids charge; the walks take `tasklist_lock` (read), `children` locks and
//!    siglocks, whose holders never wait for either, and the kill ends before its
//!    actions (hooks) run.
//!
//! Per life cycle (fork + exit + reap of a plain child) the named global locks are taken
//! exactly: `tasklist_lock` write 3 (`Linux*`) or 0 (`Scalable`); `pidmap_lock` 2
//! (`Linux70`: alloc, free), 3 (`Linux618`: reserve, publish, free) or 0 (`Scalable`,
//! whose per-namespace number pool lock, `pidns_pool_lock`, is only taken by amortised
//! batch refills); `css_set_lock` 3 (can_fork, post_fork, task_dead) or 0 (`Scalable`:
//! per-cgroup membership). Waiting never takes `tasklist_lock`.
//!
//! # Which lock protects which field
//!
//! | field | written under (`Linux*` adds `tasklist_lock` W on fork/exit/reap) | read under |
//! |---|---|---|
//! | group `children` list, `closed` | that group's `children` | `children` |
//! | `had_children` (never cleared) | the group's siglock, inside the `children` lock of its list | siglock |
//! | leader `exit_state` | parent group's `children` (+ own siglock for DELAYED), the reaper's claim ZOMBIE->DEAD included (a load and a store) | lock-free (Acquire) |
//! | thread `exit_state` | own group's siglock | lock-free (Acquire) |
//! | `real_parent` (and its address, `parent_addr`) | old and new parent groups' `children` + own siglock | siglock; or, holding the parent group's `children`, the address (Acquire) compared with that parent |
//! | `exit_signal`, `autoreap` | fork / parent groups' `children` on reparent | lock-free (Acquire) |
//! | pgrp, session (`ids`, shared `Arc` counted) | siglock (+ `tasklist_lock` W for setpgid/setsid) | siglock |
//! | index of process-group ids (slow path) | `tasklist_lock` (W) | `tasklist_lock` (W) |
//! | pending sets, group exit, stop state, SIGCHLD disposition, thread list, `nr_live` | siglock | siglock (the group's SIGKILL also lock-free: `GROUP_KILL` in the leader's flags, `task::SharedPending`; "an exit's SIGCHLD changes nothing": `CHLD_NOOP` there too) |
//! | stop / continue reports | siglock (set), waiter's swap (consume) | lock-free |
//! | `Pid::task_slot` | fork's attach (once, lock-free) / release's detach (a store) | lock-free |
//! | `started` | fork, once, then a `SeqCst` fence | fenced load (`task::StartFlag`) |
//! | `comm` (`name`) | `PR_SET_NAME`, under its sequence count | sequence-count read, lock-free |
//! | `rare` | its own lock, after raising `RARE_USED` (`SeqCst`) | its lock, skipped while `RARE_USED` is down |
//!
//! # Life cycle (kernel function each piece models)
//!
//! - [`Task::fork`] (`copy_process`, `fork.rs`): validate, `alloc_pid`, `CLONE_PIDFD`,
//!   `cgroup_can_fork`, attach under `tasklist_lock`, `cgroup_post_fork`; reverse unwind.
//! - [`Task::exit`] / [`Task::exit_group`] / [`Task::exit_signaled`] (`do_exit`,
//!   `do_group_exit`, `exit_notify`, `exit.rs`): reparent (`reparent.rs`,
//!   `forget_original_parent`), zombie / delayed zombie / autoreap, notify the parent and
//!   pidfs. A namespace init's death closes and kills its namespace
//!   (`zap_pid_ns_processes`); the init is reapable once the namespace is empty.
//! - [`Task::wait`] (`do_wait`, `wait.rs`) and `release_task` (`exit.rs`).
//! - [`Task::kill`], [`Task::tgkill`] (`kill_something_info`, `do_tkill`, `signal.rs`).
//! - [`Task::setpgid`], [`Task::setsid`] (`pgrp.rs`).
//!
//! ```
//! use uproc_abi::{WaitOptions, Signal};
//! use uproc_tasklist::{CloneArgs, System, SystemConfig, WaitId};
//!
//! let sys = System::new(SystemConfig::default())?;
//! let init = sys.init();
//! let child = init.fork(&CloneArgs::default())?;
//! init.kill(init.pid_of(&child), Signal::TERM)?;            // a bare task dies at once
//! let info = init.wait(WaitId::All, WaitOptions::EXITED)?.expect("blocking wait");
//! assert_eq!(info.status.signaled(), Some(Signal::TERM));
//! assert_eq!(sys.nr_tasks(), 1);                            // reaped: only init is left
//! # Ok::<(), uproc_abi::Errno>(())
//! ```
//!
//! Tasks are bookkeeping ("bare") unless a runtime installs a signal hook
//! ([`Task::set_signal_hook`], "managed") or forks them managed
//! ([`Task::fork_managed`]: managed from their creation, with no hook): a bare task
//! dies at once from a fatal signal; a managed one gets it pending and its hook, if it
//! has one, called. See IMPLEMENTATION.md for the diagrams.
// `unsafe` only where it removes real cost, each item allowed on its own with its
// `SAFETY:` argument (`task::LeaderRef`, `task::SharedPending`).
#![deny(unsafe_code)]

mod exit;
mod fork;
mod group_kill;
mod pgrp;
mod reparent;
mod signal;
mod sync;
mod system;
mod task;
mod task_cache;
mod wait;
mod zap_flag;

pub use fork::CloneArgs;
pub use signal::SigChld;
pub use system::{System, SystemConfig};
pub use task::{Task, TaskState, WeakTask};
pub use wait::{ChildCode, WaitId, WaitInfo};

#[cfg(doc)]
use {uproc_cgroup::CgroupMember, uproc_pidfs::PidfdBackend, uproc_pidns::Pid};

/// The lock-free handoffs on their own, for `tests/loom_claim.rs` (loom cannot run the
/// rest of the crate: its locks are `parking_lot`'s).
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_model {
    use crate::sync::{AtomicI32, AtomicU8, Ordering};

    /// A child's `exit_state` and exit code as the exiting side publishes them, with
    /// the `children` lock of the list it is on (every transition of a leader's
    /// `exit_state` is made under it, the claim included).
    #[derive(Debug)]
    pub struct Child {
        state: AtomicU8,
        code: AtomicI32,
        stop: AtomicI32,
        list: loom::sync::Mutex<()>,
    }

    impl Default for Child {
        fn default() -> Self {
            Self::new()
        }
    }

    impl Child {
        /// A running child.
        pub fn new() -> Child {
            Child {
                state: AtomicU8::new(crate::task::RUNNING),
                code: AtomicI32::new(0),
                stop: AtomicI32::new(0),
                list: loom::sync::Mutex::new(()),
            }
        }

        /// exit_notify: code first, then ZOMBIE with Release under the parent's list
        /// lock.
        pub fn exit(&self, code: i32) {
            self.code.store(code, Ordering::Release);
            let _held = self.list.lock().unwrap();
            self.state.store(crate::task::ZOMBIE, Ordering::Release);
        }

        /// A waiter's attempt: the code if it won the ZOMBIE -> DEAD claim, made (as
        /// `exit::claim`) with a load and a store under the list's lock.
        pub fn try_reap(&self) -> Option<i32> {
            let _held = self.list.lock().unwrap();
            if self.state.load(Ordering::Acquire) != crate::task::ZOMBIE {
                return None;
            }
            self.state.store(crate::task::DEAD, Ordering::Release);
            Some(self.code.load(Ordering::Acquire))
        }

        /// The stop report a signal sets.
        pub fn stop(&self, sig: i32) {
            self.stop.store(sig, Ordering::Release);
        }

        /// A waiter consumes the stop report (once).
        pub fn take_stop(&self) -> i32 {
            self.stop.swap(0, Ordering::AcqRel)
        }
    }

    /// The per-process locking of exit vs. reparent vs. wait vs. fork (`Scalable`), in
    /// miniature: the same protocol as `reparent.rs`, `exit.rs`, `fork.rs` and
    /// `wait.rs`, with loom's mutexes, over groups named by index.
    ///
    /// - a dying group closes its `children` list and hands its children to its reaper
    ///   while holding its own list, then the reaper's (descendant before ancestor); a
    ///   reaper whose list is closed is passed over for its own reaper, except an init
    ///   (its own reaper), which keeps adopting;
    /// - a child's exit locks its parent's list, re-checks `real_parent` (under its own
    ///   siglock) and retries if it moved, then publishes ZOMBIE and notifies in one
    ///   critical section;
    /// - a reparented zombie is re-notified to the new parent;
    /// - a waiter scans and claims under its own list's lock; a fork attaches under
    ///   the parent's list lock unless it is closed.
    ///
    /// The namespace-init re-check after a reap under `Scalable`
    /// (`exit::in_closed_namespace`) against the namespace's closing
    /// (`zap_pid_ns_processes`, then its own count in `try_finish_zap`): the reaper of
    /// a pid skips the runtime's re-check unless, after a fence, it sees the namespace
    /// closed; then the closer's count, after its own fence, must see the free.
    pub mod zap_check {
        use crate::sync::{AtomicBool, AtomicU32, Ordering, fence};
        pub use crate::zap_flag::ZapFlag;
        use loom::sync::Mutex;

        /// One nested namespace: its init's pid and one other.
        #[derive(Debug)]
        pub struct Namespace {
            /// `PidNamespace::adding`.
            adding: AtomicBool,
            /// `nr_allocated`.
            pids: AtomicU32,
        }

        impl Default for Namespace {
            fn default() -> Self {
                Namespace {
                    adding: AtomicBool::new(true),
                    pids: AtomicU32::new(2),
                }
            }
        }

        impl Namespace {
            /// The init's death: `disable_pid_allocation`, the fence, then the count
            /// its re-check reads.
            pub fn zap(&self) -> u32 {
                self.adding.store(false, Ordering::Release);
                fence(Ordering::SeqCst);
                self.pids.load(Ordering::Acquire)
            }

            /// The reap of the other pid: `free_pid`, then `in_closed_namespace`.
            /// Returns whether the reaper runs the re-check.
            pub fn reap(&self) -> bool {
                self.pids.fetch_sub(1, Ordering::AcqRel);
                fence(Ordering::SeqCst);
                !self.adding.load(Ordering::Acquire)
            }
        }

        /// The runtime side of the re-check: the `zapping` queue, the [`ZapFlag`],
        /// and a closed namespace holding its dead init and `others` more pids, each
        /// counted in its own shard as `free_pid` counts them (`SeqCst`).
        #[derive(Debug)]
        pub struct Runtime {
            flag: ZapFlag,
            zapping: Mutex<bool>,
            shards: [AtomicU32; 2],
            finished: AtomicBool,
        }

        impl Runtime {
            /// A closed namespace with its init and one pid per shard.
            pub fn new() -> Self {
                Runtime {
                    flag: ZapFlag::default(),
                    zapping: Mutex::new(false),
                    shards: [AtomicU32::new(1), AtomicU32::new(1)],
                    finished: AtomicBool::new(false),
                }
            }

            /// `nr_allocated`: the init's pid plus every shard.
            fn count(&self) -> u32 {
                1 + self
                    .shards
                    .iter()
                    .map(|s| s.load(Ordering::SeqCst))
                    .sum::<u32>()
            }

            /// `process_zaps`: a plain load, then the take and the re-check of every
            /// queued init (`try_finish_zap`: finished when its count reads 1).
            fn process(&self) {
                if self.flag.is_raised()
                    && self.flag.take()
                    && *self.zapping.lock().unwrap()
                    && self.count() == 1
                {
                    self.finished.store(true, Ordering::Release);
                }
            }

            /// The zap's end: queue the init, raise the flag, process.
            pub fn zap(&self) {
                *self.zapping.lock().unwrap() = true;
                self.flag.raise();
                self.process();
            }

            /// The reap of shard `i`'s pid: `free_pid` counts it out, sums, raises the
            /// flag when the namespace is down to 2 or 1 pids, then processes.
            pub fn reap(&self, i: usize) {
                self.shards[i].fetch_sub(1, Ordering::SeqCst);
                if matches!(self.count(), 1 | 2) {
                    self.flag.raise();
                }
                self.process();
            }

            /// Whether some thread saw the namespace empty and finished the init.
            pub fn finished(&self) -> bool {
                self.finished.load(Ordering::Acquire)
            }
        }

        impl Default for Runtime {
            fn default() -> Self {
                Runtime::new()
            }
        }
    }

    /// The lock-free `started` handshake (`task::StartFlag`) between a fork finishing
    /// its child and a fatal signal marking the child's group: the fork publishes
    /// `started` and then reads the child's `pending`; the signal side sets SIGKILL in
    /// `pending` (under the siglock, which the fork no longer takes) and then reads
    /// `started`. Whoever sees the other's write leaves the child alone; whoever does
    /// not ends it: never both miss.
    pub mod start {
        use crate::sync::{AtomicU64, Ordering};
        use crate::task::StartFlag;
        use uproc_abi::Signal;

        /// A child being forked.
        pub struct Child {
            started: StartFlag,
            pending: AtomicU64,
        }

        impl Default for Child {
            fn default() -> Self {
                Child {
                    started: StartFlag::new(false),
                    pending: AtomicU64::new(0),
                }
            }
        }

        impl std::fmt::Debug for Child {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("Child")
            }
        }

        impl Child {
            /// The fork's end (`wake_up_new_task`): true when it must end the child
            /// (it saw SIGKILL).
            pub fn fork_finishes(&self) -> bool {
                self.started.publish_then_fence();
                self.pending.load(Ordering::Acquire) & Signal::KILL.mask() != 0
            }

            /// A fatal signal's marking (`complete_fatal`, `do_group_exit`): true when
            /// it ends the child itself (it saw it started).
            pub fn signal_marks(&self) -> bool {
                self.pending.fetch_or(Signal::KILL.mask(), Ordering::AcqRel);
                self.started.load(Ordering::Acquire)
            }
        }
    }

    /// The handshake of a group kill (`signal_groups`) with a fork that attaches during
    /// it (`group_kill.rs`): the kill raises the word, fences and walks; the fork
    /// attaches, fences and loads the word. Never both miss.
    pub mod group_kill {
        pub use crate::group_kill::GroupKills;
    }

    pub mod family {
        use crate::sync::{AtomicU8, AtomicU32, AtomicUsize, Ordering};
        use loom::sync::Mutex;

        /// A child list (`children` lock).
        #[derive(Debug, Default)]
        pub struct List {
            /// The children, by group index.
            pub list: Vec<usize>,
            /// Set by the group's death.
            pub closed: bool,
        }

        /// What the model's siglock holds besides `real_parent`.
        #[derive(Debug, Default)]
        pub struct Life {
            /// The group's last thread has exited (`nr_live == 0`).
            pub dead: bool,
            /// `GroupState::had_children`.
            pub had_children: bool,
        }

        /// One process.
        #[derive(Debug)]
        pub struct Group {
            /// The `children` lock and list.
            pub children: Mutex<List>,
            /// `real_parent`, under the group's siglock.
            pub parent: Mutex<usize>,
            /// `real_parent`'s address (`ThreadGroup::parent_is`): written with it,
            /// under the old and new parent's `children` locks; trusted by the exit
            /// only when equal to the parent whose lock it holds.
            pub parent_addr: AtomicUsize,
            /// The siglock's `nr_live == 0` and `had_children`.
            pub life: Mutex<Life>,
            /// RUNNING / ZOMBIE / DEAD.
            pub state: AtomicU8,
            /// Exit notifications received (SIGCHLD queued).
            pub notified: AtomicU32,
            /// Where this group's children go when it dies (its subreaper ancestor or
            /// init; an init names itself).
            pub reaper: usize,
        }

        /// A process tree.
        #[derive(Debug)]
        pub struct World {
            /// The groups, by index.
            pub groups: Vec<Group>,
        }

        impl World {
            /// Groups with these `(parent, reaper)`; group `i` is on its parent's list
            /// when `attached[i]`.
            pub fn new(shape: &[(usize, usize, bool)]) -> World {
                let groups: Vec<Group> = shape
                    .iter()
                    .map(|&(parent, reaper, _)| Group {
                        children: Mutex::new(List::default()),
                        parent: Mutex::new(parent),
                        parent_addr: AtomicUsize::new(parent),
                        life: Mutex::new(Life::default()),
                        state: AtomicU8::new(crate::task::RUNNING),
                        notified: AtomicU32::new(0),
                        reaper,
                    })
                    .collect();
                for (i, &(parent, _, attached)) in shape.iter().enumerate() {
                    if attached && parent != i {
                        groups[parent].children.lock().unwrap().list.push(i);
                        groups[parent].life.lock().unwrap().had_children = true;
                    }
                }
                World { groups }
            }

            /// `exit_notify` of group `g`'s last thread.
            pub fn exit(&self, g: usize) {
                // The last live-count hold: a group that never had a child skips the
                // hand-over, lock included.
                let childless = {
                    let mut life = self.groups[g].life.lock().unwrap();
                    life.dead = true;
                    !life.had_children
                };
                if !childless {
                    self.forget_original_parent(g);
                }
                self.publish_exit(g);
            }

            fn forget_original_parent(&self, g: usize) {
                let mut mine = self.groups[g].children.lock().unwrap();
                mine.closed = true;
                if mine.list.is_empty() {
                    return;
                }
                let mut r = self.groups[g].reaper;
                loop {
                    let mut theirs = self.groups[r].children.lock().unwrap();
                    let dead = {
                        let mut life = self.groups[r].life.lock().unwrap();
                        life.had_children = true;
                        life.dead
                    };
                    if (theirs.closed || dead) && self.groups[r].reaper != r {
                        drop(theirs);
                        r = self.groups[r].reaper;
                        continue;
                    }
                    for c in mine.list.drain(..) {
                        *self.groups[c].parent.lock().unwrap() = r;
                        self.groups[c].parent_addr.store(r, Ordering::Release);
                        if self.groups[c].state.load(Ordering::Acquire) == crate::task::ZOMBIE {
                            self.groups[r].notified.fetch_add(1, Ordering::AcqRel);
                        }
                        theirs.list.push(c);
                    }
                    return;
                }
            }

            fn publish_exit(&self, g: usize) {
                let mut p = *self.groups[g].parent.lock().unwrap();
                loop {
                    let _held = self.groups[p].children.lock().unwrap();
                    // The usual exit: the parent address confirms `p` with one load.
                    if self.groups[g].parent_addr.load(Ordering::Acquire) == p {
                        self.groups[g]
                            .state
                            .store(crate::task::ZOMBIE, Ordering::Release);
                        self.groups[p].notified.fetch_add(1, Ordering::AcqRel);
                        return;
                    }
                    let now = *self.groups[g].parent.lock().unwrap();
                    if now == p {
                        self.groups[g]
                            .state
                            .store(crate::task::ZOMBIE, Ordering::Release);
                        self.groups[p].notified.fetch_add(1, Ordering::AcqRel);
                        return;
                    }
                    drop(_held);
                    p = now;
                }
            }

            /// A non-blocking wait by `w`: claims and unlinks one zombie child.
            pub fn try_wait(&self, w: usize) -> Option<usize> {
                let mut ch = self.groups[w].children.lock().unwrap();
                // The claim: a load and a store under the list's lock (`exit::claim`).
                let i = ch.list.iter().position(|&c| {
                    let state = &self.groups[c].state;
                    let zombie = state.load(Ordering::Acquire) == crate::task::ZOMBIE;
                    if zombie {
                        state.store(crate::task::DEAD, Ordering::Release);
                    }
                    zombie
                })?;
                Some(ch.list.remove(i))
            }

            /// Fork's attach of the new group `d` to `g`: fails on a closed list.
            pub fn fork(&self, g: usize, d: usize) -> bool {
                let mut ch = self.groups[g].children.lock().unwrap();
                // The forking thread's "dying?" check, in the siglock hold that marks
                // the list as having children.
                let dying = {
                    let mut life = self.groups[g].life.lock().unwrap();
                    life.had_children = true;
                    life.dead
                };
                if ch.closed || dying {
                    return false;
                }
                *self.groups[d].parent.lock().unwrap() = g;
                self.groups[d].parent_addr.store(g, Ordering::Release);
                ch.list.push(d);
                true
            }

            /// Every list that holds `c`.
            pub fn lists_holding(&self, c: usize) -> Vec<usize> {
                (0..self.groups.len())
                    .filter(|&g| self.groups[g].children.lock().unwrap().list.contains(&c))
                    .collect()
            }
        }
    }

    /// A waiter's sleep on a spin-locked `children` list and its wakeup
    /// (`ThreadGroup::sleep_on_children`, `ThreadGroup::notify_waiters`), with loom's
    /// mutex standing in for the spin lock: the waiter marks the list's `SLEEPERS` flag
    /// and takes the hashed sleep lock before it lets the list go; a notifier, holding
    /// the list, clears the flag and takes the sleep lock to count the change and wake
    /// it. A wakeup that counts nothing (`wake_exiting`: a thread's exit) leaves the
    /// flag up, and the waiter sleeps on until the count moves.
    #[derive(Debug)]
    pub struct Sleepers {
        /// The list's lock, over the number of changes made (a child's new state).
        list: loom::sync::Mutex<u32>,
        flags: AtomicU8,
        /// The sleep lock, over the count of wakeups for a change.
        sleep: loom::sync::Mutex<u64>,
        queue: loom::sync::Condvar,
        /// The broken order the model must catch: the sleep lock taken only after the
        /// list is let go.
        sleep_lock_late: bool,
    }

    const SLEEPERS: u8 = 2;

    impl Sleepers {
        /// The protocol as `task.rs` runs it.
        pub fn new() -> Sleepers {
            Sleepers::with_order(false)
        }

        /// The sleep lock taken after the list is released: a wakeup can fall between.
        pub fn with_sleep_lock_taken_late() -> Sleepers {
            Sleepers::with_order(true)
        }

        fn with_order(sleep_lock_late: bool) -> Sleepers {
            Sleepers {
                list: loom::sync::Mutex::new(0),
                flags: AtomicU8::new(0),
                sleep: loom::sync::Mutex::new(0),
                queue: loom::sync::Condvar::new(),
                sleep_lock_late,
            }
        }

        /// A change under the list's lock, then `notify_waiters`.
        pub fn change(&self) {
            let mut list = self.list.lock().unwrap();
            *list += 1;
            let f = self.flags.load(Ordering::Relaxed);
            if f & SLEEPERS != 0 {
                self.flags.store(f & !SLEEPERS, Ordering::Relaxed);
                let mut changes = self.sleep.lock().unwrap();
                *changes += 1;
                self.queue.notify_all();
            }
            drop(list);
        }

        /// `wake_exiting_waiter`: a wakeup under the list's lock that changes nothing
        /// and counts nothing; the flag stays up.
        pub fn wake_exiting(&self) {
            let list = self.list.lock().unwrap();
            if self.flags.load(Ordering::Relaxed) & SLEEPERS != 0 {
                let _queued = self.sleep.lock().unwrap();
                self.queue.notify_all();
            }
            drop(list);
        }

        /// `wait_for`'s loop: scan under the list's lock, sleep until woken, until at
        /// least `n` changes were made.
        pub fn wait_for(&self, n: u32) {
            let mut list = self.list.lock().unwrap();
            while *list < n {
                let f = self.flags.load(Ordering::Relaxed);
                self.flags.store(f | SLEEPERS, Ordering::Relaxed);
                let queued = if self.sleep_lock_late {
                    drop(list);
                    self.sleep.lock().unwrap()
                } else {
                    let q = self.sleep.lock().unwrap();
                    drop(list);
                    q
                };
                let seen = *queued;
                let mut queued = queued;
                loop {
                    queued = self.queue.wait(queued).unwrap();
                    if *queued != seen {
                        break;
                    }
                }
                drop(queued);
                list = self.list.lock().unwrap();
            }
        }
    }

    impl Default for Sleepers {
        fn default() -> Self {
            Self::new()
        }
    }
}
#[cfg(test)]
mod size {
    /// A process is one allocation: its leader's `TaskInner`, with the `ThreadGroup`
    /// and the css link inline (plus a 16-byte `Arc` header). Growing it shows here
    /// first.
    #[test]
    fn task_and_group_stay_within_their_budget() {
        use crate::task::{TaskInner, ThreadGroup};
        assert!(
            size_of::<ThreadGroup>() <= 144,
            "{}",
            size_of::<ThreadGroup>()
        );
        // 288 + the 16-byte header + malloc's 8 fill one 320-byte chunk (the css link
        // inline: 40 bytes, instead of its own 96-byte chunk; the signal hook inline:
        // 16 bytes, instead of a boxed `Rare` for every task of an async body; the
        // group's address: 8 bytes that took the chunk from 304 to 320 bytes for ~8
        // instructions per bookkeeping life cycle and ~67 per tokio spawn, see
        // IMPLEMENTATION.md, "The group's address").
        assert!(size_of::<TaskInner>() <= 288, "{}", size_of::<TaskInner>());
    }
}
