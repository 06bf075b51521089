//! `Task` (a thread: `struct task_struct`) and `ThreadGroup` (a process: `struct
//! signal_struct` + `sighand_struct`), their fields, and the accessors that read them.
//!
//! Which lock protects which field is in the crate essay (`lib.rs`); each field says it
//! again in one word.

use crate::pgrp::{PidUse, ProcessIds};
use crate::signal::SigChld;
use crate::sync::{
    AtomicBool, AtomicI32, AtomicPtr, AtomicU8, AtomicU16, AtomicU64, Condvar, Mutex, Ordering,
    RwLock, SpinGuard, SpinMutex,
};
use crate::system::System;
use std::any::Any;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::mem::ManuallyDrop;
use std::sync::{Arc, Weak};
use uproc_abi::{Errno, SigSet, Signal, WaitStatus};
use uproc_cgroup::{Attachable, Cgroup, CgroupMember, CssLink, LinkRef, MigrateFn};
use uproc_pidfs::PidFd;
use uproc_pidns::{Pid, PidNamespace};

/// `exit_state == 0`: the thread has not exited.
pub(crate) const RUNNING: u8 = 0;
/// `EXIT_ZOMBIE`, reportable: wait can consume it, its pidfd is readable.
pub(crate) const ZOMBIE: u8 = 1;
/// `EXIT_ZOMBIE` that is not reportable yet: a group leader whose other threads are not
/// released (`delay_group_leader`), or a namespace init waiting for its namespace to
/// empty (`zap_pid_ns_processes`).
pub(crate) const DELAYED: u8 = 2;
/// `EXIT_DEAD`: claimed by a reaper (a waiter's claim or autoreap); being or already
/// released.
pub(crate) const DEAD: u8 = 3;

/// A hook a runtime installs to hear about fatal signals (managed mode).
pub(crate) type SignalHook = Arc<dyn Fn(Signal) + Send + Sync>;

/// Calls each signal hook a kill or an exit collected with `sig` (if any), with no
/// lock held, then drops them, each call's and each drop's panic contained
/// ([`uproc_abi::user::contain`]): the next hook is still called and the bare threads
/// still end after them, whatever one hook does. (A hook's captured values are user
/// code too, and the copy a kill holds may be the last one: a hook that ended its own
/// task, or one removed meanwhile.)
pub(crate) fn call_hooks(hooks: Vec<SignalHook>, sig: Option<Signal>) {
    if hooks.is_empty() {
        return;
    }
    if uproc_abi::walk::in_walk() {
        // Inside a kill walk a handler runs after it, as Linux's runs in the target's
        // own context once the sender is done (`uproc_abi::walk`).
        uproc_abi::hint::cold_path();
        uproc_abi::walk::end_or_defer(0, 0, 0, move || call_hooks_now(hooks, sig));
        return;
    }
    call_hooks_now(hooks, sig);
}

/// [`call_hooks`], now.
fn call_hooks_now(hooks: Vec<SignalHook>, sig: Option<Signal>) {
    if let Some(sig) = sig {
        for hook in &hooks {
            if let Err(panic) = uproc_abi::user::contain(|| hook(sig)) {
                tracing::error!(%sig, panic, "signal hook panicked; contained");
            }
        }
    }
    for hook in hooks {
        drop_hook(Some(hook));
    }
}

/// Drops a signal hook, its drop's panic contained (see [`call_hooks`]).
pub(crate) fn drop_hook(hook: Option<SignalHook>) {
    if let Err(panic) = uproc_abi::user::contain(move || drop(hook)) {
        tracing::error!(panic, "signal hook's drop panicked; contained");
    }
}

/// `TASK_COMM_LEN`: names are truncated to 15 bytes, as `prctl(PR_SET_NAME)` does.
const COMM_LEN: usize = 16;

/// The task name (`comm`), stored inline so that fork copies it without allocating.
#[derive(Clone, Copy)]
pub(crate) struct Comm {
    bytes: [u8; COMM_LEN],
    len: u8,
}

impl Comm {
    pub(crate) fn new(name: &str) -> Comm {
        let mut c = Comm {
            bytes: [0; COMM_LEN],
            len: 0,
        };
        // PR_SET_NAME copies a C string: a NUL ends it.
        let name = name.split('\0').next().unwrap_or_default();
        // Truncate at a char boundary within 15 bytes.
        let mut end = name.len().min(COMM_LEN - 1);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        c.bytes[..end].copy_from_slice(&name.as_bytes()[..end]);
        c.len = end as u8;
        c
    }

    pub(crate) fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len as usize]).unwrap_or("?")
    }

    /// The name as two words: the (at most 15) bytes, the length in the last byte.
    fn to_words(self) -> [u64; 2] {
        let mut b = self.bytes;
        b[COMM_LEN - 1] = self.len;
        let (lo, hi) = b.split_at(8);
        [
            u64::from_ne_bytes(lo.try_into().expect("8 bytes")),
            u64::from_ne_bytes(hi.try_into().expect("8 bytes")),
        ]
    }

    fn from_words(w: [u64; 2]) -> Comm {
        let mut bytes = [0; COMM_LEN];
        bytes[..8].copy_from_slice(&w[0].to_ne_bytes());
        bytes[8..].copy_from_slice(&w[1].to_ne_bytes());
        let len = bytes[COMM_LEN - 1].min(COMM_LEN as u8 - 1);
        bytes[COMM_LEN - 1] = 0;
        Comm { bytes, len }
    }
}

/// `comm` in two words under a sequence count: fork copies its parent's name with
/// plain loads (no lock round per fork), `PR_SET_NAME` (rare) writes it.
///
/// The writer makes the count odd (a CAS from an even value: writers exclude each
/// other), fences (Release), stores the words, and makes the count even again
/// (Release); a reader loads the count (Acquire), the words, fences (Acquire), and
/// reloads the count: equal and even, the words it read are one writer's whole name.
/// The count is 16 bits (the task's small fields fill their word exactly): a reader
/// would need to sleep through 32,768 renames of the same task between its two loads
/// to be fooled.
pub(crate) struct NameWords([AtomicU64; 2]);

impl NameWords {
    pub(crate) fn new(c: Comm) -> NameWords {
        let [a, b] = c.to_words();
        NameWords([AtomicU64::new(a), AtomicU64::new(b)])
    }

    /// Reads the name (`get_task_comm`).
    #[inline]
    pub(crate) fn get(&self, seq: &AtomicU16) -> Comm {
        loop {
            let s1 = seq.load(Ordering::Acquire);
            if s1 & 1 == 0 {
                let w = [
                    self.0[0].load(Ordering::Relaxed),
                    self.0[1].load(Ordering::Relaxed),
                ];
                crate::sync::fence(Ordering::Acquire);
                if seq.load(Ordering::Relaxed) == s1 {
                    return Comm::from_words(w);
                }
            }
            std::hint::spin_loop();
        }
    }

    /// Writes the name (`__set_task_comm`).
    pub(crate) fn set(&self, seq: &AtomicU16, c: Comm) {
        let mut s = seq.load(Ordering::Relaxed);
        loop {
            if s & 1 == 0 {
                match seq.compare_exchange_weak(
                    s,
                    s.wrapping_add(1),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break,
                    Err(now) => s = now,
                }
            } else {
                std::hint::spin_loop();
                s = seq.load(Ordering::Relaxed);
            }
        }
        crate::sync::fence(Ordering::Release);
        let [a, b] = c.to_words();
        self.0[0].store(a, Ordering::Relaxed);
        self.0[1].store(b, Ordering::Relaxed);
        seq.store(s.wrapping_add(2), Ordering::Release);
    }
}

/// The state a task is in, as `/proc/PID/status` `State:` reports it.
///
/// # References
/// `task_state_array` in `fs/proc/array.c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// `R`: alive (uproc does not distinguish running from sleeping `S`), or the
    /// thread of a namespace init waiting in its exit for its namespace to empty.
    Running,
    /// `T`: stopped by SIGSTOP/SIGTSTP/SIGTTIN/SIGTTOU, until SIGCONT.
    Stopped,
    /// `Z`: exited, not yet reaped.
    Zombie,
    /// `X`: reaped (or being reaped).
    Dead,
}

/// A task handle: one thread of a thread group (`struct task_struct`).
///
/// Cheap to clone (one `Arc`); compares and hashes by identity. A handle keeps the
/// task object alive but not its pid numbers: once the task is reaped its numbers are
/// freed and [`Task::state`] reads [`TaskState::Dead`].
pub struct Task(pub(crate) TaskRef);

impl Clone for Task {
    fn clone(&self) -> Self {
        Task::from_inner(Arc::clone(&self.0))
    }
}

/// The `Arc` inside a [`Task`] handle: its drop goes to `put_task` (`task_cache.rs`),
/// where the last handle's drop keeps the task's allocation for this thread's next
/// fork. Deliberately not `Clone`: `handle.0.clone()` resolves through `Deref` to
/// `Arc::clone` and gives a plain `Arc<TaskInner>`, so no copy of the `ManuallyDrop`
/// (which would never be dropped) can be made by accident.
pub(crate) struct TaskRef(ManuallyDrop<Arc<TaskInner>>);

impl std::ops::Deref for TaskRef {
    type Target = Arc<TaskInner>;

    #[inline]
    fn deref(&self) -> &Arc<TaskInner> {
        &self.0
    }
}

impl Drop for TaskRef {
    #[inline]
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: the field is taken exactly once, here, in the handle's drop, and
        // nothing reads it afterwards.
        let inner = unsafe { ManuallyDrop::take(&mut self.0) };
        crate::task_cache::put_task(inner);
    }
}

/// A weak task handle: does not keep the task object alive.
#[derive(Clone, Debug)]
pub struct WeakTask(pub(crate) Weak<TaskInner>);

impl WeakTask {
    /// The task, if its object still exists.
    pub fn upgrade(&self) -> Option<Task> {
        self.0.upgrade().map(Task::from_inner)
    }
}

/// One thread.
pub(crate) struct TaskInner {
    /// `thread_pid`: the pid attached as `PIDTYPE_PID`. Immutable. Handed to
    /// `put_pid` by the task's drop (below), which keeps the pid's allocation for this
    /// thread's next fork when the task held the last reference.
    pub(crate) pid: ManuallyDrop<Arc<Pid>>,
    /// `Linux*` only: the runtime, for the `tasklist_lock` of the fork/exit/reap path
    /// ([`TaskInner::hot_sys`]). `Scalable`: `Weak::new()`, which counts on nothing
    /// (the path needs nothing of the runtime there), and which `hot_sys` reads as the
    /// profile (a `Linux*` task's is never `Weak::new()`: a runtime's own). Immutable.
    pub(crate) locked_runtime: Weak<System>,
    /// Where the process this thread belongs to lives.
    /// Immutable.
    pub(crate) home: GroupHome,
    /// The address of that process ([`TaskInner::group`]): `home`'s group, or its
    /// leader's. Written once, by [`TaskInner::link_group`], before the task is shared
    /// with anyone; null until then.
    pub(crate) group_at: GroupAt,
    /// `thread_group_leader()`. Immutable.
    pub(crate) leader: bool,
    /// `exit_state`: RUNNING / ZOMBIE / DELAYED / DEAD. Written under the parent
    /// group's `children` lock (a leader; a thread: its group's siglock), including
    /// ZOMBIE -> DEAD by the reaper that wins it (`exit::claim`: a load and a store,
    /// the lock deciding).
    pub(crate) exit_state: AtomicU8,
    /// The raw wait status this thread exited with (valid once `exit_state != RUNNING`).
    pub(crate) exit_code: AtomicI32,
    /// `PF_EXITING`: `do_exit` has started. Makes exit idempotent.
    pub(crate) exiting: AtomicBool,
    /// `release_task` has started.
    pub(crate) released: AtomicBool,
    /// Post-fork done (`wake_up_new_task`): from here on a fatal signal ends the task
    /// itself; before, the fork that makes it does. Lock-free ([`StartFlag`]).
    pub(crate) started: StartFlag,
    /// `exit_signal` (leaders): the signal the parent gets at exit; 0 for none.
    /// Written at fork and on reparent (under the parent groups' `children` locks).
    pub(crate) exit_signal: AtomicI32,
    /// Per-thread pending signals (`task->pending`), bit `n-1` for signal `n`.
    pub(crate) pending: AtomicU64,
    /// [`CAP_CHECKPOINT_RESTORE`] (for `set_tid`) and [`RARE_USED`], one byte (the
    /// task's small fields fill their word exactly). Written with `fetch_or`/`fetch_and`
    /// on the rare paths that change them; read with plain loads.
    pub(crate) flags: AtomicU8,
    /// The fields few tasks use (a leader's threads, a changed
    /// `pid_ns_for_children`), boxed on first use so that a plain task pays one pointer
    /// for them, and the managed-mode signal hook beside the box (every task of an
    /// async body has one: boxed, it cost each a malloc and a free). Own lock (leaf,
    /// taken under the group's siglock by the kill walks); a hook is called with no
    /// lock held. Behind an "ever set" flag ([`RARE_USED`]), so that the hot paths of a
    /// task that never used them (fork reading `pid_ns_for_children`, exit taking the
    /// hook) read one plain word instead of taking the lock.
    /// (`ManuallyDrop`: the task's drop drops it only when something was put in it,
    /// so most tasks' drops make no call for two empty fields.)
    pub(crate) rare: ManuallyDrop<SpinMutex<RareSlot>>,
    /// The css_set link, built with the task (`ForkCharge::take_link`: in the cgroup
    /// charged at fork, unlinked) and linked by post_fork. Inline: the cgroup side
    /// reaches it through the task ([`CgroupMember::css`]), so it costs no allocation
    /// of its own; its drop (with the task's) unlinks and uncharges what is left.
    pub(crate) css: CssLink,
    /// The `CLONE_PIDFD` handle.
    pub(crate) pidfd: Option<PidFd>,
    /// `comm`, under [`TaskInner::name_seq`] ([`NameWords`]).
    pub(crate) name: NameWords,
    /// The sequence count of `name`.
    pub(crate) name_seq: AtomicU16,
}

/// [`TaskInner::group_at`]: the address of the task's [`ThreadGroup`], so that
/// [`TaskInner::group`], which nearly every step of a life cycle calls (a dozen times
/// per fork, exit and reap), is one load rather than a match on [`GroupHome`] (a
/// compare and a branch more per call; measured in `IMPLEMENTATION.md`, "The group's
/// address").
///
/// An atomic only to be writable through the shared task once it sits in its `Arc`
/// (the leader's group lives inside the task, so its address is known only then); it
/// is written once, before the task is published (the pid's task slot, the parent's
/// list, the returned handle), and every reader reaches the task through one of those
/// publications, which order the write before the read: `Relaxed` (a plain load).
pub(crate) struct GroupAt(std::sync::atomic::AtomicPtr<ThreadGroup>);

impl GroupAt {
    /// Not linked yet ([`TaskInner::link_group`] links it).
    pub(crate) const fn unlinked() -> GroupAt {
        GroupAt(std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()))
    }
}

/// Where a thread's process lives: in its leader's allocation, so that a process is
/// one allocation, not two.
pub(crate) enum GroupHome {
    /// A leader: the process itself, inline.
    Own(ThreadGroup),
    /// Another thread: its leader, which holds the group. Strong: the group lives as
    /// long as any of its threads. (The leader holds the thread strongly in turn,
    /// `Rare::threads`, until the thread is released; a runtime dropped with threads
    /// still attached breaks those links in `System::drop`.)
    Leader(Arc<TaskInner>),
}

/// What [`TaskInner::rare`] guards: the signal hook, and the box of the rarely used
/// fields.
#[derive(Default)]
pub(crate) struct RareSlot {
    /// The managed-mode signal hook.
    pub(crate) hook: Option<SignalHook>,
    /// The rarely used fields, boxed on first use.
    pub(crate) boxed: Option<Box<Rare>>,
}

impl RareSlot {
    /// Nothing set (what every forked task starts with).
    pub(crate) const EMPTY: RareSlot = RareSlot {
        hook: None,
        boxed: None,
    };
}

/// The rarely used part of a task, boxed in [`RareSlot::boxed`].
#[derive(Default)]
pub(crate) struct Rare {
    /// Leader only: strong references to the other threads of the group (the leader is
    /// released last, so it is the natural owner). Changed after the group's siglock is
    /// dropped by fork's thread attach and a thread's release.
    pub(crate) threads: Vec<Task>,
    /// `nsproxy->pid_ns_for_children` once `unshare`/`setns` changed it; `None`: the
    /// active namespace (what every task starts with, so a fork stores nothing).
    pub(crate) ns_for_children: Option<Arc<PidNamespace>>,
    /// The init of a nested namespace (`Scalable`): the guard of its namespace's
    /// reference credits, closed when this task is dropped (see `fork.rs`,
    /// `become_child_reaper`).
    pub(crate) ns_credits: Option<uproc_pidns::PidRefCredits>,
    /// The runtime init only: its [`System`] (weak: the runtime owns the task tree).
    /// Every other task reaches the runtime through the init of its root namespace
    /// ([`TaskInner::sys`]), on the slow paths only, so that no task holds a count on
    /// the one object every fork of the runtime would share.
    pub(crate) runtime: Weak<System>,
    /// `pdeath_signal` ([`Task::set_pdeath_signal`]): sent to this thread's process
    /// when its parent thread exits. A fork starts without one.
    pub(crate) pdeath_signal: Option<Signal>,
}

/// [`TaskInner::flags`]: `CAP_CHECKPOINT_RESTORE`.
pub(crate) const CAP_CHECKPOINT_RESTORE: u8 = 1;
/// [`TaskInner::flags`]: the rarely used fields ([`TaskInner::rare`]) were ever set.
///
/// Raised (`SeqCst`) under the `rare` lock before anything is stored there, and never
/// lowered; a reader that finds it down knows the box is empty without the lock. The
/// one reader whose answer must be exact is `do_exit` taking the hook:
/// [`Task::set_signal_hook`] raises the flag and then reads `exiting`, `do_exit` swaps
/// `exiting` and then reads the flag, all `SeqCst`: at least one of them sees the
/// other's write, so a hook is either refused (the installer saw `exiting`) or taken by
/// the exit (which saw the flag and locks behind the installer).
pub(crate) const RARE_USED: u8 = 2;
/// [`TaskInner::flags`], of a group's leader only: SIGKILL is in the group's shared
/// pending set ([`SharedPending`] keeps it so, under the siglock), so that
/// `fatal_signal_pending` reads one word instead of taking the siglock.
pub(crate) const GROUP_KILL: u8 = 4;
/// [`TaskInner::flags`], of a group's leader only: an exit's SIGCHLD to this group
/// would change nothing (SIGCHLD is pending in the shared set already, its disposition
/// is the default, and the group is not a dying namespace init), so `do_notify_parent`
/// skips the siglock. Only ever true while that holds: set under the siglock by the
/// notification that queued SIGCHLD, cleared under it by whatever ends one of the
/// three (the dequeue, in [`SharedPending::remove`]; a new disposition; the zap).
pub(crate) const CHLD_NOOP: u8 = 8;
/// [`TaskInner::flags`]: this thread ended its namespace init's process and waits in
/// its exit for the namespace to empty (`zap_pid_ns_processes`, run by the init
/// group's last thread to exit, a leader or not). Set once, under the group's siglock,
/// with the group's `zapping`; [`Task::state`] reads it while `zapping` lasts.
pub(crate) const ZAPPER: u8 = 16;
/// [`TaskInner::flags`]: a managed task with no hook to call ([`Task::fork_managed`]):
/// a fatal signal is made pending, as for a task with a hook, and nothing is called.
/// Set at fork, before the task can be reached; cleared (under the `rare` lock) by
/// `set_signal_hook(None)`, which makes the task bare. A hook, when one is installed,
/// decides on its own: managed either way.
pub(crate) const MANAGED: u8 = 32;

/// [`TaskInner::flags`]: the task cache recycles this task and has proved its pid
/// unreachable but through the task (`task_cache::sole_owner`): the task's drop
/// empties the pid with [`uproc_pidns::put_pid_as`]`(pid, true)`, without `put_pid`'s
/// compare-exchange. Set (a plain store) just before that drop, never otherwise.
pub(crate) const PID_UNIQUE: u8 = 64;

/// [`TaskInner::flags`]: the process's `RLIMIT_CORE` is not zero, so a fatal signal
/// whose default action is Core dumps core ([`Task::set_dumps_core`]). A process-wide
/// setting kept on every thread, changed on all of them under the group's siglock (a
/// new thread copies it under that lock too), so that whoever decides a fatal status
/// under the siglock reads it from the thread at hand, and a fork copies it with
/// [`CAP_CHECKPOINT_RESTORE`] from the flags it reads anyway (`copy_signal`'s rlimit
/// copy): no field of its own in the group, no load of its own at a fork.
pub(crate) const DUMPS_CORE: u8 = 128;

/// What a fatal signal does to one thread ([`TaskInner::managed`]).
pub(crate) enum Managed {
    /// No hook, not [`MANAGED`]: the thread exits at once.
    Bare,
    /// Managed: the signal is made pending, then the hook (if any) is called with no
    /// lock held.
    Hook(Option<SignalHook>),
}

impl Managed {
    /// Files a started thread that a group-wide fatal signal was just made pending
    /// for: its hook into `hooks` (called once the siglock is dropped), the thread
    /// into `bare` (it exits now); a managed thread without a hook needs neither (its
    /// runtime ends it when the body sees the signal).
    pub(crate) fn file(
        th: Arc<TaskInner>,
        hooks: &mut Vec<SignalHook>,
        bare: &mut Vec<Arc<TaskInner>>,
    ) {
        match th.managed() {
            Managed::Hook(Some(h)) => hooks.push(h),
            Managed::Hook(None) => {}
            Managed::Bare => bare.push(th),
        }
    }
}

/// `started` (post-fork done), read and written without a lock.
///
/// The handshake it carries: a fatal signal marks every live thread (`pending |=
/// SIGKILL`, under the group's siglock) and then reads `started`: a started thread it
/// ends itself, an unstarted one it leaves to its fork. The fork publishes `started`
/// (Release: a migration that waits for it sees the css link made before) and then
/// reads `pending`. A `SeqCst` fence sits between the write and the read on each side
/// (the fork's is the one after its attach; [`StartFlag::load`] issues the signal
/// side's), so they cannot both miss each other: the thread is ended by one of them, or
/// by both (`do_exit` is idempotent). `tests/loom_start.rs` is the model.
pub(crate) struct StartFlag(AtomicBool);

impl StartFlag {
    /// A flag, up for the runtime init (which has no fork), down for a forked task.
    pub(crate) fn new(started: bool) -> StartFlag {
        StartFlag(AtomicBool::new(started))
    }

    /// The signal side's read, after it marked the thread: fenced (`SeqCst`) before the
    /// load whatever `_order` the caller names, so that this read and the fork's read of
    /// `pending` cannot both miss.
    #[inline]
    pub(crate) fn load(&self, _order: Ordering) -> bool {
        crate::sync::fence(Ordering::SeqCst);
        self.0.load(Ordering::Acquire)
    }

    /// The fork's write, then the `SeqCst` fence (the caller reads `pending` after
    /// it; the fork also reads its namespace's `adding` there, see `fork.rs`).
    #[inline]
    pub(crate) fn publish_then_fence(&self) {
        self.0.store(true, Ordering::Release);
        crate::sync::fence(Ordering::SeqCst);
    }
}

/// [`ThreadGroup::list_flags`]: the group died; no child attaches to its list.
const LIST_CLOSED: u8 = 1;
/// [`ThreadGroup::list_flags`]: a waiter sleeps (or is about to) on `wait_chldexit`.
const LIST_SLEEPERS: u8 = 2;

/// The locks a waiter holds from marking itself asleep until it is queued on its
/// group's `wait_chldexit`, and a notifier takes to wake it: hashed by the group's
/// address, as Linux hashes the wait queues of `wait_on_bit` (a lock per group would
/// grow every process by eight bytes for a path that only sleeping waiters take).
/// Each counts the wakeups for a change of a list ([`ThreadGroup::notify_waiters`]) of
/// the groups hashed to it, so that a waiter woken for anything else (a thread's exit,
/// [`ThreadGroup::wake_exiting_waiter`], or spuriously) sleeps on without a scan.
static SLEEP_LOCKS: [Mutex<u64>; 64] = [const { Mutex::new(0) }; 64];

/// The sleep lock of `g`: always the same one, so `wait_chldexit` is always paired
/// with one mutex.
fn sleep_lock(g: &ThreadGroup) -> &'static Mutex<u64> {
    let a = std::ptr::from_ref(g) as usize;
    &SLEEP_LOCKS[(a >> 7) % SLEEP_LOCKS.len()]
}

/// One process (thread group).
pub(crate) struct ThreadGroup {
    /// The children of every thread of the group (child thread-group leaders, fork
    /// order). Modified only with this lock held (and `tasklist_lock` (write) under
    /// `Linux*`), so a waiter holding only this lock sees a consistent list.
    /// A spin lock (`uproc_abi::spin`, one atomic a round; Linux's children lists are
    /// under `tasklist_lock`, a spinning rwlock): its waiters sleep on
    /// `wait_chldexit` instead of on a condition variable of the lock itself.
    pub(crate) children: SpinMutex<Children>,
    /// `signal->wait_chldexit`: where a waiter that found nothing sleeps
    /// ([`ThreadGroup::sleep_on_children`]) until a change of the list or of a child's
    /// state wakes it ([`ThreadGroup::notify_waiters`]); see "Waiters on a spin-locked
    /// list" in `IMPLEMENTATION.md`. Paired with a lock of [`SLEEP_LOCKS`].
    wait_chldexit: Condvar,
    /// `cgroup_threadgroup_rwsem`, per group: a fork that adds a thread to this group
    /// holds it for reading from choosing the cgroup (`cgroup_can_fork`) until the
    /// thread is linked (`cgroup_post_fork`); a migration of the group holds it for
    /// writing while it collects and moves the links. (A new process's own group is
    /// not read-locked by its fork: [`ThreadGroup::migrate`] waits for `started`.)
    /// Outermost of this crate's locks.
    pub(crate) threadgroup_rwsem: RwLock<()>,
    /// `siglock`: signal and group state. A leaf lock, a spin lock (`uproc_abi::spin`):
    /// every hold is short and takes no other lock but the per-task leaf `rare`.
    pub(crate) sig: SpinMutex<GroupState>,
    /// The address of `real_parent` (`GroupState::real_parent`), written with it
    /// ([`ThreadGroup::set_real_parent`]): the exit of a process re-checks its parent
    /// under the parent group's `children` lock with one load instead of a siglock
    /// round. Only an equality with a parent the reader holds (and whose group's lock
    /// it holds, which every change away from that parent needs) is trusted; anything
    /// else sends the reader to the siglock.
    parent_addr: AtomicPtr<TaskInner>,
    /// A stop to report to the parent's wait (`WSTOPPED`): the stop signal, 0 if none.
    /// Set under `sig`; consumed by a swap in the waiter.
    pub(crate) stop_report: AtomicI32,
    /// A continue to report to the parent's wait (`WCONTINUED`).
    pub(crate) cont_report: AtomicBool,
    /// `signal->autoreap`: reaped at exit whatever the parent does (`CLONE_AUTOREAP`,
    /// or an orphan adopted by a runtime init with `reap_orphans`).
    pub(crate) autoreap: AtomicBool,
    /// The `children` list's flags, read and written only under its lock (an atomic
    /// only to sit outside it, in the group's small fields; loads and stores, no
    /// read-modify-write). [`LIST_CLOSED`]: set by the group's death
    /// (`forget_original_parent`) in the same critical section that hands the children
    /// on: no child attaches afterwards (a fork that sees it fails, a `CLONE_PARENT`
    /// fork retries with its new parent), and a reparenting group picks another reaper
    /// (unless this is a namespace init, which keeps adopting and autoreaps).
    /// [`LIST_SLEEPERS`]: a waiter is (about to be) asleep on `wait_chldexit`.
    list_flags: AtomicU8,
    /// Whether this is the runtime init's process. Immutable.
    role: Role,
}

/// A [`ThreadGroup`]'s role. (An enum, not two bools: one byte, and its unused values
/// are the niche that tags [`GroupHome`] for free.)
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Any process but the runtime init's.
    Process,
    /// The runtime init's process (which never exits).
    RuntimeInit,
    /// The runtime init's process, built with `reap_orphans`: orphans reparented to it
    /// autoreap.
    RuntimeInitReapingOrphans,
}

/// A process's threads other than its leader: boxed on the first one, so that a
/// single-threaded process (the common case) pays one pointer, not a `Vec`'s three.
#[derive(Default)]
#[allow(clippy::box_collection)] // the point: 8 bytes in every group, not 24
pub(crate) struct ThreadList(Option<Box<Vec<Weak<TaskInner>>>>);

impl ThreadList {
    pub(crate) fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|v| v.is_empty())
    }

    pub(crate) fn push(&mut self, t: Weak<TaskInner>) {
        self.0.get_or_insert_with(Default::default).push(t);
    }

    pub(crate) fn iter(&self) -> std::slice::Iter<'_, Weak<TaskInner>> {
        self.0.as_deref().map_or([].iter(), |v| v.iter())
    }

    pub(crate) fn retain(&mut self, keep: impl FnMut(&Weak<TaskInner>) -> bool) {
        if let Some(v) = &mut self.0 {
            v.retain(keep);
        }
    }
}

/// The children list of a thread group.
/// (Its `closed` mark is [`ThreadGroup::children_closed`], under the same lock.)
pub(crate) struct Children {
    /// (`ManuallyDrop`: the drop below skips the empty list most groups end with,
    /// without a call.)
    pub(crate) list: ManuallyDrop<Vec<Task>>,
}

impl Drop for Children {
    /// Drops the list, unless it never had room for a child (no allocation, so no
    /// element: nothing to drop): a reaped process's own list usually, whose drop
    /// glue the compiler would otherwise call out of line on every reap.
    #[inline(always)]
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        if self.list.capacity() != 0 {
            // SAFETY: taken once, here, in the list's owner's drop; never used again.
            drop_children(unsafe { ManuallyDrop::take(&mut self.list) });
        }
    }
}

thread_local! {
    /// Whether this thread is in [`drop_children`]'s loop.
    static DROPPING_CHILDREN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Children lists met by that loop, to drop after the current one.
    static DEFERRED_CHILDREN: std::cell::RefCell<Vec<Task>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Drops a children list without recursing into the lists of its children: a live
/// task is held by its parent's list, so dropping a runtime with a chain of live tasks
/// (each the only child of the one before) would drop one list per level, ~20 frames
/// each, and overflow the thread's stack a few thousand levels down. The first list
/// dropped on a thread drops its tasks in a loop; a list dropped meanwhile (by a task
/// dropped in it) only hands its tasks to that loop. Out of line: a list with room
/// for children is dropped with a process that had some, or with the runtime.
#[cold]
#[inline(never)]
fn drop_children(list: Vec<Task>) {
    if list.is_empty() {
        return;
    }
    // Unset again however the loop ends (a panicking drop included).
    struct Loop;
    impl Drop for Loop {
        fn drop(&mut self) {
            DROPPING_CHILDREN.set(false);
        }
    }
    match DROPPING_CHILDREN.try_with(|d| d.replace(true)) {
        // Inside the loop: queue the tasks (during thread-local teardown, where
        // nothing can be queued, the closure and with it the list are dropped here).
        Ok(true) => {
            let _ = DEFERRED_CHILDREN.try_with(move |q| q.borrow_mut().extend(list));
        }
        Ok(false) => {
            let _looping = Loop;
            let mut batch = list;
            while !batch.is_empty() {
                drop(batch);
                batch = DEFERRED_CHILDREN.with(|q| std::mem::take(&mut *q.borrow_mut()));
            }
        }
        Err(_) => drop(list),
    }
}

/// `group_leader` without a reference count: the address of the task whose
/// allocation holds the group (a process is one allocation, its leader's).
///
/// A weak reference would cost a count made at fork and dropped with the task, for a
/// pointer that can never dangle while it is read: the group state is only reached
/// through its group, the group only through a task of it (the leader itself, or a
/// thread, which holds the leader strongly: [`GroupHome::Leader`]), and every task is
/// reached through a counted reference, so whoever reads this field keeps the leader's
/// strong count above zero meanwhile. Null only before the runtime init's group is set
/// up.
pub(crate) struct LeaderRef(*const TaskInner);

// SAFETY: a plain address; the only dereference (`upgrade`) is valid from any thread
// for the reason in the type's docs, and `TaskInner` is `Send + Sync`.
#[allow(unsafe_code)]
unsafe impl Send for LeaderRef {}
// SAFETY: as for `Send`: shared access only reads the address.
#[allow(unsafe_code)]
unsafe impl Sync for LeaderRef {}

impl LeaderRef {
    /// No leader yet.
    pub(crate) const NONE: LeaderRef = LeaderRef(std::ptr::null());

    /// The leader at `leader` (`Arc::as_ptr`, or `Weak::as_ptr` of the task being
    /// built by `Arc::new_cyclic`), which holds the group this is stored in.
    pub(crate) fn new(leader: *const TaskInner) -> LeaderRef {
        LeaderRef(leader)
    }

    /// The leader's address, for comparison only (never dereferenced through this).
    pub(crate) fn as_ptr(&self) -> *const TaskInner {
        self.0
    }

    /// The address of the leader's `flags` (for [`SharedPending`]'s mirror), computed
    /// without reading the task, which may still be under construction.
    #[allow(unsafe_code)]
    pub(crate) fn flags_ptr(&self) -> *const AtomicU8 {
        if self.0.is_null() {
            return std::ptr::null();
        }
        // SAFETY: a place projection inside the task's allocation (`Weak::as_ptr` of
        // the `Arc::new_cyclic` being built, or `Arc::as_ptr`): no read, no reference.
        unsafe { &raw const (*self.0).flags }
    }

    /// The leader, counted (what `Weak::upgrade` would give: it never fails here).
    #[allow(unsafe_code)]
    #[inline]
    pub(crate) fn upgrade(&self) -> Option<Arc<TaskInner>> {
        if self.0.is_null() {
            return None;
        }
        // SAFETY: `self.0` is `Arc::as_ptr` of the leader's `Arc<TaskInner>`, and the
        // caller reached this field through a counted reference to the leader or to a
        // thread holding it (see the type's docs): the strong count is at least one,
        // so the allocation is live and may be counted once more and wrapped.
        unsafe {
            Arc::increment_strong_count(self.0);
            Some(Arc::from_raw(self.0))
        }
    }
}

/// `signal->shared_pending`: a [`SigSet`] (read through `Deref`) whose SIGKILL bit is
/// mirrored, by every change made through [`insert`](SharedPending::insert) and
/// [`remove`](SharedPending::remove) (the only mutators; the siglock held, as for the
/// set), in the leader's [`TaskInner::flags`] ([`GROUP_KILL`]): `fatal_signal_pending`
/// reads the flag with Acquire instead of taking the siglock. A reader sees the set's
/// SIGKILL bit as of some moment inside the critical section that changed it, which is
/// all the siglock gave it.
///
/// It also carries the group's leader (`group_leader`, [`GroupState::leader`]): the task
/// whose flags it mirrors into, kept once for both uses (the group state pays one
/// pointer, not two).
pub(crate) struct SharedPending {
    set: SigSet,
    /// The leader: the task whose allocation holds this group state, so its address is
    /// valid for as long as this field is.
    leader: LeaderRef,
}

impl SharedPending {
    /// An empty set of the group led by `leader` ([`LeaderRef::NONE`] until the
    /// runtime init's group is set up: nothing mirrored).
    pub(crate) fn new(leader: LeaderRef) -> SharedPending {
        SharedPending {
            set: SigSet::EMPTY,
            leader,
        }
    }

    /// Sets the leader (the runtime init's group, set up after its task exists). The set
    /// holds no SIGKILL yet.
    pub(crate) fn set_leader(&mut self, leader: LeaderRef) {
        self.leader = leader;
    }

    /// Adds `sig` (`sigaddset`).
    pub(crate) fn insert(&mut self, sig: Signal) {
        self.set.insert(sig);
        if sig == Signal::KILL {
            self.mirror(GROUP_KILL, true);
        }
    }

    /// Removes `sig` (`sigdelset`). Removing SIGCHLD ends [`CHLD_NOOP`].
    pub(crate) fn remove(&mut self, sig: Signal) {
        self.set.remove(sig);
        if sig == Signal::KILL {
            self.mirror(GROUP_KILL, false);
        } else if sig == Signal::CHLD {
            self.set_chld_noop(false);
        }
    }

    /// Raises or lowers `bit` in the leader's flags (the siglock held).
    fn mirror(&self, bit: u8, on: bool) {
        if let Some(flags) = self.leader_flags() {
            if on {
                flags.fetch_or(bit, Ordering::Release);
            } else {
                flags.fetch_and(!bit, Ordering::Release);
            }
        }
    }

    /// Raises or lowers the leader's [`CHLD_NOOP`] (the siglock held). Only a change
    /// writes: the flag is raised once per run of SIGCHLD notifications, not per exit.
    pub(crate) fn set_chld_noop(&self, on: bool) {
        let is_on = |f: &AtomicU8| f.load(Ordering::Relaxed) & CHLD_NOOP != 0;
        if self.leader_flags().is_some_and(|f| is_on(f) != on) {
            self.mirror(CHLD_NOOP, on);
        }
    }

    /// The leader's flags, which this set mirrors bits into; `None` before the
    /// runtime init's group has its leader.
    #[allow(unsafe_code)]
    fn leader_flags(&self) -> Option<&AtomicU8> {
        let mirror = self.leader.flags_ptr();
        if mirror.is_null() {
            return None;
        }
        // SAFETY: `mirror` is `&raw const leader.flags` of the task whose allocation
        // holds this group state (see the field), and `&self` borrows that state, so
        // the task is live for the borrow; `flags` is an atomic, shared by design.
        Some(unsafe { &*mirror })
    }
}

impl std::ops::Deref for SharedPending {
    type Target = SigSet;

    fn deref(&self) -> &SigSet {
        &self.set
    }
}

/// [`GroupState::exit_flags`]: SIGKILL itself was sent to the group other than into
/// its shared set ([`Task::sigkill_sent`]): after another fatal signal had doomed the
/// group (Linux drops it: the group dies at once there; a managed task's hooks heard
/// it), or by `tgkill` into a thread's own set.
pub(crate) const KILL_FORCED: u8 = 1;
/// [`GroupState::exit_flags`]: a thread acted on the group's exit (`do_group_exit`, or
/// a thread's exit once it was decided), as a Linux thread that dequeued the fatal
/// signal does: a core-dumping signal's exit can no longer be taken over by another
/// fatal signal (`signal.rs`, `core_unacted`).
pub(crate) const EXIT_ACTED: u8 = 2;
/// [`GroupState::exit_flags`]: the group's exit was decided by a core-dumping signal,
/// which Linux acts on only when a thread dequeues it (no `complete_signal` fast path):
/// until a thread acts ([`EXIT_ACTED`]), fatal signals sent meanwhile are queued and
/// the first dequeued decides.
pub(crate) const DEQUEUE_PENDING: u8 = 4;

/// Group state under the siglock.
pub(crate) struct GroupState {
    /// Attached (not released) threads other than the leader, in creation order (empty
    /// for a single-threaded process, so a fork allocates no list).
    pub(crate) threads: ThreadList,
    /// `signal->live`: threads that have not exited.
    pub(crate) nr_live: usize,
    /// `real_parent`: the thread that forked the group (or its adopter). Weak.
    pub(crate) real_parent: Weak<TaskInner>,
    /// `signal->shared_pending`, with SIGKILL's presence mirrored in the leader's flags.
    pub(crate) shared_pending: SharedPending,
    /// `SIGNAL_GROUP_EXIT` + `group_exit_code`.
    pub(crate) group_exit: Option<WaitStatus>,
    /// `SIGNAL_STOP_STOPPED`. Changed only through [`GroupState::set_stopped`], which
    /// keeps the process group's stopped count.
    pub(crate) stopped: bool,
    /// SIGCHLD disposition.
    pub(crate) sigchld: SigChld,
    /// `is_child_subreaper`.
    pub(crate) is_subreaper: bool,
    /// `has_child_subreaper`: some ancestor is a subreaper.
    pub(crate) has_child_subreaper: bool,
    /// `SIGNAL_UNKILLABLE`: a namespace init.
    pub(crate) unkillable: bool,
    /// The init of a namespace whose last thread exited: `zap_pid_ns_processes` runs.
    pub(crate) zapping: bool,
    /// [`KILL_FORCED`] and [`EXIT_ACTED`].
    pub(crate) exit_flags: u8,
    /// A child was ever put on this group's `children` list (or a fork or an adoption
    /// meant to): set under this siglock inside that list's lock, before the child is
    /// pushed, and never cleared. A group that dies without it skips the hand-over
    /// (`forget_original_parent`), its list's lock included: a fork or an adoption
    /// whose siglock hold came later sees the group dead (no live thread) and leaves
    /// it alone.
    pub(crate) had_children: bool,
    /// `PIDTYPE_PGID` + `PIDTYPE_SID`, shared with every process forked with the same
    /// pair (the `Arc` count is the usage count, see `pgrp.rs`). `None` before attach
    /// and after release.
    pub(crate) ids: Option<Arc<ProcessIds>>,
    /// The use of this process's own pid as a process-group/session id, if any.
    pub(crate) own_use: Weak<PidUse>,
}

impl GroupState {
    /// The state of a new process: one live thread, no process group or session until
    /// attach inherits the parent's, default SIGCHLD disposition. `unkillable` is
    /// `SIGNAL_UNKILLABLE` (the runtime's init).
    #[inline(always)]
    pub(crate) fn new_process(unkillable: bool) -> GroupState {
        GroupState {
            threads: ThreadList::default(),
            nr_live: 1,
            real_parent: Weak::new(),
            shared_pending: SharedPending::new(LeaderRef::NONE),
            group_exit: None,
            stopped: false,
            sigchld: SigChld::Default,
            is_subreaper: false,
            has_child_subreaper: false,
            unkillable,
            zapping: false,
            exit_flags: 0,
            had_children: false,
            ids: None,
            own_use: Weak::new(),
        }
    }

    /// The state of a forked process, complete before the task is published: its
    /// `leader` (itself), `real_parent`, inherited process group and session (`ids`),
    /// `has_child_subreaper`, and `SIGNAL_UNKILLABLE` for a namespace's init.
    #[inline(always)]
    pub(crate) fn for_child(
        leader: LeaderRef,
        real_parent: Weak<TaskInner>,
        ids: Arc<ProcessIds>,
        has_child_subreaper: bool,
        unkillable: bool,
        sigchld: SigChld,
    ) -> GroupState {
        GroupState {
            shared_pending: SharedPending::new(leader),
            real_parent,
            ids: Some(ids),
            has_child_subreaper,
            sigchld,
            ..GroupState::new_process(unkillable)
        }
    }

    /// `group_leader`: the task this group lives in ([`LeaderRef`], kept in
    /// [`SharedPending`]).
    #[inline]
    pub(crate) fn leader(&self) -> &LeaderRef {
        &self.shared_pending.leader
    }

    /// Marks the group stopped or not (`SIGNAL_STOP_STOPPED`), counted in its process
    /// group ([`PidUse::has_stopped_members`](crate::pgrp::PidUse::has_stopped_members)).
    #[inline]
    pub(crate) fn set_stopped(&mut self, stopped: bool) {
        if self.stopped == stopped {
            return;
        }
        self.stopped = stopped;
        if let Some(ids) = &self.ids {
            ids.pgrp.count_stopped(stopped);
        }
    }

    /// The process group's pid (`task_pgrp`), `None` once released.
    pub(crate) fn pgrp(&self) -> Option<Arc<Pid>> {
        self.ids.as_ref().map(|i| i.pgrp.pid.clone())
    }

    /// The session's pid (`task_session`), `None` once released.
    pub(crate) fn session(&self) -> Option<Arc<Pid>> {
        self.ids.as_ref().map(|i| i.session.pid.clone())
    }

    /// Whether the process group is `pgrp`.
    pub(crate) fn in_pgrp(&self, pgrp: &Arc<Pid>) -> bool {
        self.ids
            .as_ref()
            .is_some_and(|i| Arc::ptr_eq(&i.pgrp.pid, pgrp))
    }
}

impl ThreadGroup {
    /// What `signal->flags = SIGNAL_GROUP_EXIT` clears, for a group whose exit begins
    /// (a fatal signal, `exit_group`, the last thread's exit): the stop, and the stop
    /// or continue report no waiter has collected yet (`task_stopped_code` and
    /// `wait_task_continued` test the flags that assignment clears). A managed task's
    /// body may run on long after the fatal signal: a waiter must not be handed a stop
    /// or a continue of a group that is dying. Under the siglock (`st`).
    #[inline]
    pub(crate) fn end_job_control(&self, st: &mut GroupState) {
        st.set_stopped(false);
        self.stop_report.store(0, Ordering::Release);
        self.cont_report.store(false, Ordering::Release);
    }

    /// A new process (not the runtime init's).
    #[inline(always)]
    pub(crate) fn new(st: GroupState) -> ThreadGroup {
        ThreadGroup::with_role(st, false, false)
    }

    /// A new process; `runtime_init` and `reaps_orphans` for the runtime init's.
    #[inline(always)]
    pub(crate) fn with_role(
        st: GroupState,
        runtime_init: bool,
        reaps_orphans: bool,
    ) -> ThreadGroup {
        ThreadGroup {
            children: SpinMutex::new(Children {
                list: ManuallyDrop::new(Vec::new()),
            }),
            wait_chldexit: Condvar::new(),
            threadgroup_rwsem: RwLock::new(()),
            parent_addr: AtomicPtr::new(st.real_parent.as_ptr().cast_mut()),
            sig: SpinMutex::new(st),
            stop_report: AtomicI32::new(0),
            cont_report: AtomicBool::new(false),
            autoreap: AtomicBool::new(false),
            list_flags: AtomicU8::new(0),
            role: match (runtime_init, reaps_orphans) {
                (false, _) => Role::Process,
                (true, false) => Role::RuntimeInit,
                (true, true) => Role::RuntimeInitReapingOrphans,
            },
        }
    }

    /// The runtime init's process (which never exits).
    #[inline(always)]
    pub(crate) fn runtime_init(&self) -> bool {
        self.role != Role::Process
    }

    /// The runtime init's process, built with `reap_orphans`: orphans reparented to it
    /// autoreap.
    #[inline(always)]
    pub(crate) fn reaps_orphans(&self) -> bool {
        self.role == Role::RuntimeInitReapingOrphans
    }

    /// Marks the `children` list closed; the caller holds the list's lock.
    pub(crate) fn close_children(&self, _held: &mut Children) {
        let f = self.list_flags.load(Ordering::Relaxed);
        self.list_flags.store(f | LIST_CLOSED, Ordering::Relaxed);
    }

    /// Whether the `children` list is closed; the caller holds the list's lock.
    pub(crate) fn children_closed(&self, _held: &Children) -> bool {
        self.list_flags.load(Ordering::Relaxed) & LIST_CLOSED != 0
    }

    /// Wakes every waiter asleep on this group's list (`__wake_up_parent`). The caller
    /// holds the list's lock (`_held`) and has made the change the waiters are to see
    /// under it. With nobody asleep (the life cycle's case) it is one load.
    #[inline]
    pub(crate) fn notify_waiters(&self, _held: &Children) {
        let f = self.list_flags.load(Ordering::Relaxed);
        if f & LIST_SLEEPERS != 0 {
            self.list_flags.store(f & !LIST_SLEEPERS, Ordering::Relaxed);
            self.wake_sleepers();
        }
    }

    #[cold]
    #[inline(never)]
    fn wake_sleepers(&self) {
        // Taken after the sleeper released the list and before it is queued: this
        // lock waits until it is queued, so the wakeup cannot fall between the two.
        let mut changes = sleep_lock(self).lock();
        *changes = changes.wrapping_add(1);
        self.wait_chldexit.notify_all();
    }

    /// The exit of a thread of this group, whose process lives on: its own waiter
    /// (blocked in wait on another OS thread) is to return EINTR; the others sleep on.
    /// The children the thread handed to another thread are no event of the list for
    /// Linux (`forget_original_parent` wakes nobody for a hand-over inside the
    /// process), so a `__WNOTHREAD` waiter of the heir is not woken to find them. The
    /// caller holds the list's lock (`_held`); the sleepers flag stays up.
    pub(crate) fn wake_exiting_waiter(&self, _held: &Children) {
        if self.list_flags.load(Ordering::Relaxed) & LIST_SLEEPERS != 0 {
            let _queued = sleep_lock(self).lock();
            self.wait_chldexit.notify_all();
        }
    }

    /// Sleeps on `wait_chldexit` until the next [`notify_waiters`] of this group's list
    /// (or a wakeup of a group sharing its sleep lock: the caller scans again either
    /// way), or until `waiter` exits or has a fatal signal pending (its wait returns
    /// EINTR), with the list's lock, `guard`, released while asleep and held again on
    /// return.
    ///
    /// [`notify_waiters`]: ThreadGroup::notify_waiters
    pub(crate) fn sleep_on_children(
        &self,
        guard: &mut SpinGuard<'_, Children>,
        waiter: &TaskInner,
    ) {
        let f = self.list_flags.load(Ordering::Relaxed);
        self.list_flags.store(f | LIST_SLEEPERS, Ordering::Relaxed);
        let mut queued = sleep_lock(self).lock();
        // Lock order: the list, then the sleep lock (as a notifier takes them). The
        // sleep lock is dropped before the list is taken again.
        SpinGuard::unlocked(guard, move || {
            let seen = *queued;
            // A notifier counts under the sleep lock, held here from the flag's mark
            // until the sleep: a change of the list after the scan either counted
            // before this read (and woke nobody yet: it waited for this lock) or
            // counts later and wakes this sleep. Either way the count differs at the
            // next wakeup.
            loop {
                self.wait_chldexit.wait(&mut queued);
                // (Both lock-free: no siglock under the sleep lock.)
                if *queued != seen
                    || waiter.exiting.load(Ordering::Acquire)
                    || waiter.fatal_signal_pending()
                {
                    break;
                }
            }
            drop(queued);
        });
    }

    /// Changes `real_parent` (the caller holds this group's siglock, `st`, and the
    /// `children` locks of the old and new parent groups, rule 2) and its address.
    pub(crate) fn set_real_parent(&self, st: &mut GroupState, parent: Weak<TaskInner>) {
        self.parent_addr
            .store(parent.as_ptr().cast_mut(), Ordering::Release);
        st.real_parent = parent;
    }

    /// Whether `real_parent` is `p`, for a caller that holds `p`'s group's `children`
    /// lock (so the answer "yes" stays true while it holds it). "No" may be stale only
    /// in the direction of a change the caller cannot rely on anyway: it then asks the
    /// siglock.
    #[inline]
    pub(crate) fn parent_is(&self, p: &Arc<TaskInner>) -> bool {
        std::ptr::eq(self.parent_addr.load(Ordering::Acquire), Arc::as_ptr(p))
    }

    /// Wakes this group's waiters (`__wake_up_parent`). Takes `children` (rule 3).
    pub(crate) fn wake_waiters(&self) {
        let g = self.children.lock();
        self.notify_waiters(&g);
    }

    /// Live (not exited) threads, leader first.
    pub(crate) fn live_threads(st: &GroupState) -> impl Iterator<Item = Arc<TaskInner>> + '_ {
        Self::attached_threads(st).filter(|t| !t.exiting.load(Ordering::Acquire))
    }

    /// `flush_sigqueue_mask` of `mask` from the group's set and from every attached
    /// thread's own (an exiting thread's may hold queued ones): what SIGCONT does to the
    /// stop signals and `SIG_IGN` to the signal it ignores. A thread's set is written
    /// only where it holds one of them. The caller holds the siglock (`st`).
    pub(crate) fn flush_pending(st: &mut GroupState, mask: u64) {
        for n in (1..=64).filter(|n| mask & (1u64 << (n - 1)) != 0) {
            if let Ok(sig) = Signal::new(n) {
                st.shared_pending.remove(sig);
            }
        }
        for th in Self::attached_threads(st) {
            if th.pending.load(Ordering::Relaxed) & mask != 0 {
                th.pending.fetch_and(!mask, Ordering::AcqRel);
            }
        }
    }

    /// Every thread still on the group's list, exited or not (`for_each_thread`: a
    /// leader that exited while its threads run included), leader first.
    pub(crate) fn attached_threads(st: &GroupState) -> impl Iterator<Item = Arc<TaskInner>> + '_ {
        st.leader()
            .upgrade()
            .into_iter()
            .chain(st.threads.iter().filter_map(Weak::upgrade))
    }
}

impl TaskInner {
    /// The process this thread belongs to (`signal_struct` + `sighand_struct`).
    ///
    /// One load ([`GroupAt`]).
    #[inline]
    #[allow(unsafe_code)]
    pub(crate) fn group(&self) -> &ThreadGroup {
        let at = self.group_at.0.load(std::sync::atomic::Ordering::Relaxed);
        debug_assert!(
            !at.is_null(),
            "a task's group is linked before it is shared"
        );
        // SAFETY: `link_group` wrote the address of this task's group before the task
        // was shared (every `TaskInner` is linked right after it is written into its
        // `Arc`, and nothing calls `group` before), and the group outlives `&self`: a
        // leader's lives inside the task itself, which is never moved once in its
        // `Arc`; a thread's lives inside its leader, which `home` holds strongly for
        // as long as the thread lives. A `ThreadGroup` is only ever used shared.
        unsafe { &*at }
    }

    /// Writes [`group_at`](TaskInner::group_at): the address of `home`'s group (a
    /// leader's own, inside this very allocation) or of its leader's. Called once per
    /// task, right after the task is written into its `Arc` and before it is shared:
    /// by `KeptTask::fill` for every forked task, and by the boot for the init.
    #[inline]
    pub(crate) fn link_group(this: &Arc<TaskInner>) {
        let at: *const ThreadGroup = match &this.home {
            GroupHome::Own(g) => g,
            GroupHome::Leader(l) => l.group(),
        };
        this.group_at
            .0
            .store(at.cast_mut(), std::sync::atomic::Ordering::Relaxed);
    }

    /// The thread-group leader holding the group's allocation: `this` itself for a
    /// leader.
    pub(crate) fn group_owner(this: &Arc<TaskInner>) -> Arc<TaskInner> {
        match &this.home {
            GroupHome::Own(_) => this.clone(),
            GroupHome::Leader(l) => l.clone(),
        }
    }

    /// The runtime, `None` once it was dropped. A slow-path call: it goes through the
    /// root namespace's `child_reaper` (the runtime init, never reaped while its
    /// runtime lives) and upgrades two weak references, so the fork/exit/reap path
    /// of `Scalable` never calls it ([`TaskInner::hot_sys`]).
    pub(crate) fn sys(&self) -> Option<Arc<System>> {
        let init = crate::reparent::child_reaper(&self.pid.numbers()[0].ns)?;
        let rare = init.rare.lock();
        rare.boxed.as_ref()?.runtime.upgrade()
    }

    /// The runtime as the fork/exit/reap path needs it: under `Scalable` nothing
    /// (`Ok(None)`: no reference count on a shared object is touched; the path
    /// reaches every object it uses through the task itself); under `Linux*` the
    /// [`System`] for its `tasklist_lock`. ESRCH once the runtime was dropped.
    ///
    /// The profile is read from `locked_runtime` itself: `Weak::new()` exactly when the
    /// profile takes no `tasklist_lock` on this path (set so at fork and boot), a
    /// compare with a constant where the profile's own word is four loads away (the
    /// pid, its numbers, the namespace, its map).
    #[inline]
    pub(crate) fn hot_sys(&self) -> Result<Option<Arc<System>>, Errno> {
        if self.runtime_dropped() {
            uproc_abi::hint::cold_path();
            return Err(Errno::ESRCH);
        }
        if Weak::ptr_eq(&self.locked_runtime, &Weak::new()) {
            debug_assert!(!crate::system::tasklist_on_hot_path(
                self.pid.ns().map().profile()
            ));
            return Ok(None);
        }
        self.locked_runtime.upgrade().map(Some).ok_or(Errno::ESRCH)
    }

    /// Whether this task's runtime was dropped, read without touching the runtime:
    /// dropping a [`System`] frees every number it handed out, so a task whose pid is
    /// freed although it was never released outlived its runtime. (`release_one`
    /// sets `released` before it frees the pid, so a released task never reads as
    /// dropped.) A runtime dropped during a call that passed this check is like one
    /// dropped just after the call: every object the call touches is reached
    /// through the caller's own task handle (its pid, namespaces, group, css link),
    /// which keeps them alive.
    pub(crate) fn runtime_dropped(&self) -> bool {
        self.pid.is_freed() && !self.released.load(Ordering::Acquire)
    }

    /// ESRCH once this task was released (reaped): a reaped task makes no more system
    /// calls. For the calls whose effect needs no lock-held recheck (the pgrp/session
    /// changes check under `tasklist_lock`).
    pub(crate) fn check_not_released(&self) -> Result<(), Errno> {
        if self.released.load(Ordering::Acquire) {
            Err(Errno::ESRCH)
        } else {
            Ok(())
        }
    }

    /// The status wait reports: the group exit code if the group exited as a whole,
    /// else this thread's own.
    pub(crate) fn exit_status(&self) -> WaitStatus {
        WaitStatus::from_raw(self.exit_code.load(Ordering::Acquire))
    }

    /// The namespace this task's numbers end in (`task_active_pid_ns`).
    pub(crate) fn active_ns(&self) -> &Arc<PidNamespace> {
        self.pid.ns()
    }

    pub(crate) fn thread_pending(&self) -> SigSet {
        let mut s = SigSet::EMPTY;
        let bits = self.pending.load(Ordering::Acquire);
        for n in 1..=64 {
            if bits & (1u64 << (n - 1)) != 0 {
                s.insert(Signal::new(n).expect("1..=64 is a signal"));
            }
        }
        s
    }

    /// `fatal_signal_pending`: SIGKILL pending for this thread or its group.
    ///
    /// Lock-free: the group's SIGKILL is read from its leader's [`GROUP_KILL`] flag
    /// ([`SharedPending`]), so a runtime asking at every spawn takes no siglock.
    pub(crate) fn fatal_signal_pending(&self) -> bool {
        if self.pending.load(Ordering::Acquire) & Signal::KILL.mask() != 0 {
            return true;
        }
        self.group_flags() & GROUP_KILL != 0
    }

    /// Whether an exit's SIGCHLD to this task's group would change nothing
    /// ([`CHLD_NOOP`], read lock-free from the group's leader).
    #[inline]
    pub(crate) fn chld_notify_is_noop(&self) -> bool {
        self.group_flags() & CHLD_NOOP != 0
    }

    /// The flags of this task's group leader (`Acquire`), where [`SharedPending`]
    /// mirrors its bits ([`GROUP_KILL`], [`CHLD_NOOP`]).
    #[inline]
    fn group_flags(&self) -> u8 {
        let leader = match &self.home {
            GroupHome::Own(_) => self,
            GroupHome::Leader(l) => l,
        };
        leader.flags.load(Ordering::Acquire)
    }

    /// Whether the thread is managed, and the hook to call if it has one. Read under
    /// the `rare` lock, where `set_signal_hook` changes both.
    /// Neither a hook nor [`MANAGED`]: a fatal signal ends this thread at once. (No
    /// copy of the hook is made, so none is dropped where the caller holds its locks.)
    pub(crate) fn is_bare(&self) -> bool {
        self.rare.lock().hook.is_none() && self.flags.load(Ordering::Acquire) & MANAGED == 0
    }

    pub(crate) fn managed(&self) -> Managed {
        let rare = self.rare.lock();
        match rare.hook.clone() {
            Some(h) => Managed::Hook(Some(h)),
            None if self.flags.load(Ordering::Acquire) & MANAGED != 0 => Managed::Hook(None),
            None => Managed::Bare,
        }
    }

    /// `pid_ns_for_children` if it is not the active namespace (`None` if it is).
    #[inline(always)]
    pub(crate) fn changed_ns_for_children(&self) -> Option<Arc<PidNamespace>> {
        if !self.rare_ever_used() {
            return None;
        }
        self.rare
            .lock()
            .boxed
            .as_ref()
            .and_then(|r| r.ns_for_children.clone())
    }

    /// Runs `f` on the rarely used fields, boxing them on first use.
    pub(crate) fn with_rare<R>(&self, f: impl FnOnce(&mut Rare) -> R) -> R {
        f(self
            .rare_lock_for_insert()
            .boxed
            .get_or_insert_with(Default::default))
    }

    /// The rare fields, locked, for storing something: raises [`RARE_USED`] first.
    pub(crate) fn rare_lock_for_insert(&self) -> SpinGuard<'_, RareSlot> {
        let g = self.rare.lock();
        if self.flags.load(Ordering::Relaxed) & RARE_USED == 0 {
            self.flags.fetch_or(RARE_USED, Ordering::SeqCst);
        }
        g
    }

    /// Whether the rare fields were ever set (a plain load; `SeqCst` for `do_exit`'s
    /// pairing, see [`RARE_USED`]).
    #[inline(always)]
    pub(crate) fn rare_ever_used(&self) -> bool {
        self.flags.load(Ordering::SeqCst) & RARE_USED != 0
    }

    /// [`DUMPS_CORE`]: read under the group's siglock where it must be current.
    #[inline(always)]
    pub(crate) fn dumps_core(&self) -> bool {
        self.flags.load(Ordering::Acquire) & DUMPS_CORE != 0
    }

    pub(crate) fn cgroup(&self) -> Cgroup {
        self.css.cgroup()
    }

    /// `cgroup().id()` without making a `Cgroup` handle.
    pub(crate) fn cgroup_id(&self) -> u64 {
        self.css.cgroup_id()
    }

    /// Runs `f` with the `children` lock of this process's parent group held and
    /// `real_parent` stable meanwhile (it moves to another group only under the old
    /// parent group's `children` lock): reads the parent, locks its children, re-reads
    /// and retries if a reparent moved this task in between. `f` gets the current
    /// parent thread and its group's children, or `None` when there is no parent (the
    /// runtime init; a parent released), and this group's siglock, still held from the
    /// re-read (so a caller that needs this group's state under the parent's lock
    /// pays no second round; it drops the guard before it takes another siglock).
    ///
    /// Takes one `children` lock and this group's siglock inside it (lock order rules
    /// 2-4); the caller holds no `children` lock or siglock.
    #[inline]
    pub(crate) fn with_parent_children<R>(
        &self,
        f: impl FnOnce(Option<(&Arc<TaskInner>, &mut Children)>, SpinGuard<'_, GroupState>) -> R,
    ) -> R {
        let parent = self.group().sig.lock().real_parent.upgrade();
        self.with_parent_children_from(parent, f)
    }

    /// [`with_parent_children`](TaskInner::with_parent_children) from a parent the
    /// caller read in an earlier hold of this group's siglock (so the exit, which holds
    /// it anyway to count its live threads, pays no round for the read): re-checked
    /// under the parent's `children` lock as the first read is.
    #[inline]
    pub(crate) fn with_parent_children_from<R>(
        &self,
        mut parent: Option<Arc<TaskInner>>,
        f: impl FnOnce(Option<(&Arc<TaskInner>, &mut Children)>, SpinGuard<'_, GroupState>) -> R,
    ) -> R {
        let mine = self.group();
        loop {
            let Some(p) = parent else {
                return f(None, mine.sig.lock());
            };
            let mut ch = p.group().children.lock();
            let st = mine.sig.lock();
            // The usual case, the same parent thread, needs no second `upgrade`.
            if std::ptr::eq(st.real_parent.as_ptr(), Arc::as_ptr(&p)) {
                return f(Some((&p, &mut ch)), st);
            }
            match st.real_parent.upgrade() {
                Some(n) if std::ptr::eq(n.group(), p.group()) => {
                    return f(Some((&n, &mut ch)), st);
                }
                now => {
                    drop(st);
                    drop(ch);
                    parent = now;
                }
            }
        }
    }

    /// The group's leader task (itself for a leader).
    pub(crate) fn leader_task(&self) -> Option<Arc<TaskInner>> {
        self.group().sig.lock().leader().upgrade()
    }

    pub(crate) fn as_any_weak(this: &Arc<TaskInner>) -> Weak<dyn Any + Send + Sync> {
        let w: Weak<TaskInner> = Arc::downgrade(this);
        w
    }
}

/// Publishes the runtime init `t` in its pid's task slot (`attach_pid(PIDTYPE_PID)`):
/// `pid_task` finds it from here on. The boot's attach, once, before `t` is returned
/// to anyone; a fork attaches with [`publish_kept_in_pid`].
#[inline]
#[allow(unsafe_code)]
pub(crate) fn publish_in_pid(t: &Arc<TaskInner>) {
    // SAFETY: `t.pid` is `t`'s own pid, made for it by `alloc_pid` at boot and given to
    // no other task; this is its only attach (`TaskSlot::attach`'s contract), and no
    // other thread attaches it meanwhile.
    unsafe { t.pid.task_slot().attach(TaskInner::as_any_weak(t)) };
}

/// [`publish_in_pid`] for a task a fork wrote into a [`KeptTask`](crate::task_cache::KeptTask)
/// (`KeptTask::fill`): the slot takes the allocation's kept weak instead of a new
/// `Weak` (no atomic). The one place a forked task's slot is attached: by the fork
/// that allocated the pid, once, before `t` is returned to anyone.
#[inline]
#[allow(unsafe_code)]
pub(crate) fn publish_kept_in_pid(t: &Arc<TaskInner>) {
    // SAFETY: `t` was written by `KeptTask::fill`, whose allocation carries one `Weak`
    // count that nothing has taken back (the fork calls this once, right after the
    // fill): `Weak::from_raw` takes it. The pointer is the one that count's `Weak`
    // would give from `into_raw`: the allocation's value address (`Arc::as_ptr`),
    // with `TaskInner`'s layout (see `KeptTask`'s drop).
    let weak: Weak<TaskInner> = unsafe { Weak::from_raw(Arc::as_ptr(t)) };
    // SAFETY: `t.pid` is `t`'s own pid, made for it by `alloc_pid` in this fork and
    // given to no other task; this is its only attach (`TaskSlot::attach`'s contract),
    // and no other thread attaches it meanwhile.
    unsafe { t.pid.task_slot().attach(weak) };
}

/// The task attached to a pid as `PIDTYPE_PID` (`pid_task`).
pub(crate) fn pid_task(pid: &Pid) -> Option<Arc<TaskInner>> {
    pid.task().and_then(|a| a.downcast::<TaskInner>().ok())
}

impl Drop for TaskInner {
    /// The task's last reference to its pid goes to `put_pid` (Linux's
    /// `put_task_struct` -> `put_pid`): usually the last of all, whose allocation the
    /// pid cache keeps for this thread's next fork. The other fields drop as usual.
    #[inline]
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        let rare = self.rare.get_mut();
        if rare.hook.is_some() || rare.boxed.is_some() {
            // SAFETY: dropped once, here, in the task's drop; nothing reads it after.
            // (An empty slot owns nothing: not dropping it leaks nothing.)
            unsafe { ManuallyDrop::drop(&mut self.rare) };
        }
        // The task's own `CLONE_PIDFD` pidfd first: it holds the pid too, and
        // `put_pid` can keep the pid's allocation only as its last holder.
        if self.pidfd.is_some() {
            drop(self.pidfd.take());
        }
        // SAFETY: `pid` is taken exactly once, here, in the task's drop; nothing reads
        // it afterwards, and the `ManuallyDrop` keeps the field's own drop from running.
        let pid = unsafe { ManuallyDrop::take(&mut self.pid) };
        let known_unique = self.flags.load(Ordering::Relaxed) & PID_UNIQUE != 0;
        // SAFETY: `PID_UNIQUE` is set only by the task cache's recycling, after
        // `sole_owner` read the pid held by this task alone (no other `Arc`, no `Weak`,
        // none can be made: nothing outside the task reaches it) and only for a task
        // without its own pidfd (whose drop above could have touched the pid):
        // `put_pid_as`'s contract for `known_unique`. Without it, `put_pid`.
        unsafe { uproc_pidns::put_pid_as(pid, known_unique) };
    }
}

impl CgroupMember for TaskInner {
    fn tgid(&self) -> i32 {
        match self.leader_task() {
            Some(l) => l.pid.numbers()[0].nr,
            None => self.pid.numbers()[0].nr,
        }
    }

    fn is_group_leader(&self) -> bool {
        self.leader
    }

    fn kill(&self) {
        // cgroup.kill comes from the cgroup writer, outside any task: it reaches
        // namespace inits (force), as a writer in an ancestor namespace would.
        // `cgroup_kill` does `send_sig(SIGKILL, task)` on each leader of its
        // CSS_TASK_ITER_PROCS walk: thread-directed. A live leader's SIGKILL kills its
        // whole group; one that exited before its threads takes nothing (an exiting
        // thread wants no signal, and a thread-directed one goes to no other), so that
        // process survives the kill (measured on Linux 6.18). Called on leaders only,
        // so the leader found here is this task.
        debug_assert!(self.leader, "cgroup.kill signals leaders only");
        if let Some(t) = self.leader_task() {
            let _ = crate::signal::send_thread(&t, Signal::KILL, crate::signal::Sender::Runtime);
        }
    }

    fn tid(&self) -> i32 {
        self.pid.numbers()[0].nr
    }

    fn css(&self) -> Option<&CssLink> {
        Some(&self.css)
    }

    fn group_has_live_threads(&self) -> bool {
        self.group().sig.lock().nr_live > 0
    }
}

impl ThreadGroup {
    /// The css links of the live threads (a migration skips those not linked yet,
    /// which its exclusion of forks leaves none of, and those already dead).
    pub(crate) fn css_links(&self) -> Vec<LinkRef> {
        let st = self.sig.lock();
        ThreadGroup::live_threads(&st)
            .map(|t| LinkRef::Inline(t as Arc<dyn CgroupMember>))
            .collect()
    }

    /// Runs a migration of the whole group with its forks excluded (the write side of
    /// `threadgroup_rwsem`; rule 0 of the lock order).
    ///
    /// A fork of a new process takes no read lock on the new group's rwsem (its task is
    /// built unseen and published at the attach; a lock round only to exclude this
    /// would be paid by every fork): a migration that found the group between the
    /// attach and the end of `cgroup_post_fork` waits for the threads' `started`
    /// instead, which the fork publishes (Release) right after linking them. The wait
    /// is short (the rest of one fork, which takes no lock a migration holds here) and
    /// only a migration racing the fork of the very group it moves pays it.
    pub(crate) fn migrate(&self, f: &mut MigrateFn<'_>) -> Result<(), Errno> {
        let _tg = self.threadgroup_rwsem.write();
        loop {
            let unstarted = {
                let st = self.sig.lock();
                ThreadGroup::live_threads(&st).any(|t| !t.started.load(Ordering::Acquire))
            };
            if !unstarted {
                break;
            }
            std::thread::yield_now();
        }
        f(&self.css_links())
    }
}

impl Attachable for Task {
    fn css_links(&self) -> Vec<LinkRef> {
        self.0.group().css_links()
    }

    fn with_threadgroup_locked(&self, f: &mut MigrateFn<'_>) -> Result<(), Errno> {
        self.0.group().migrate(f)
    }

    fn belongs_to(&self, h: &uproc_cgroup::Hierarchy) -> bool {
        self.0
            .sys()
            .is_some_and(|s| std::ptr::eq(Arc::as_ptr(&s.cgroups), h))
    }
}

impl PartialEq for Task {
    fn eq(&self, other: &Task) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Task {}

impl Hash for Task {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (Arc::as_ptr(&self.0) as usize).hash(state);
    }
}

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("nspid", &self.0.pid.nspid())
            .field("leader", &self.0.leader)
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

impl Task {
    pub(crate) fn from_inner(inner: Arc<TaskInner>) -> Task {
        Task(TaskRef(ManuallyDrop::new(inner)))
    }

    /// The pid number in the task's own (innermost) namespace (`task_pid_vnr` as the
    /// task itself sees it).
    ///
    /// # References
    /// [gettid(2)](https://man7.org/linux/man-pages/man2/gettid.2.html)
    pub fn pid(&self) -> i32 {
        self.0.pid.nr()
    }

    /// The number `other` has as this task sees it, 0 if invisible (`pid_nr_ns` in the
    /// caller's active namespace).
    ///
    /// # References
    /// `task_pid_nr_ns` in `kernel/pid.c`.
    pub fn pid_of(&self, other: &Task) -> i32 {
        other.0.pid.nr_in(self.0.active_ns())
    }

    /// Every level's number, outermost (the root namespace) to innermost, as
    /// `/proc/PID/status` `NSpid:` shows from the root namespace.
    pub fn nspid(&self) -> Vec<i32> {
        self.0.pid.nspid()
    }

    /// The thread-group id in the task's own namespace ([getpid(2)](https://man7.org/linux/man-pages/man2/getpid.2.html)).
    pub fn tgid(&self) -> i32 {
        match self.0.leader_task() {
            Some(l) => l.pid.nr_in(self.0.active_ns()),
            None => self.pid(),
        }
    }

    /// The parent's tgid in the task's own namespace, 0 when the parent is invisible
    /// (a namespace init) or there is none (the runtime init).
    ///
    /// # References
    /// [getppid(2)](https://man7.org/linux/man-pages/man2/getppid.2.html), `task_ppid_nr_ns`.
    pub fn ppid(&self) -> i32 {
        self.ppid_in(self.0.active_ns())
    }

    /// `task_ppid_nr_ns`: the parent's tgid as `ns` sees it, 0 when the task has no
    /// parent (the runtime's init) or the parent is invisible from `ns`.
    pub fn ppid_in(&self, ns: &PidNamespace) -> i32 {
        self.parent().map_or(0, |p| p.0.pid.nr_in(ns))
    }

    /// The parent process (`real_parent`'s thread-group leader, or the parent thread
    /// itself when its leader is gone); `None` for the runtime's init or once the parent
    /// was released.
    pub fn parent(&self) -> Option<Task> {
        let parent = self.0.group().sig.lock().real_parent.upgrade()?;
        Some(Task::from_inner(parent.leader_task().unwrap_or(parent)))
    }

    /// Running, stopped, zombie or dead, as `/proc/PID/stat` shows it. When a
    /// namespace init's process ends while its namespace still holds other numbers,
    /// the thread that ended it (the last to exit: the leader of a single-threaded
    /// init) reads as running: Linux's init sleeps in `do_exit`
    /// (`zap_pid_ns_processes`) until its namespace is empty, and only then becomes a
    /// zombie; a leader that exited before it reads as a zombie meanwhile. The numbers
    /// a process group or session id holds count, so a process outside that still
    /// belongs to a group led by a reaped member keeps the init there.
    pub fn state(&self) -> TaskState {
        let waits_for_zap = || {
            self.0.flags.load(Ordering::Acquire) & ZAPPER != 0 && self.0.group().sig.lock().zapping
        };
        match self.0.exit_state.load(Ordering::Acquire) {
            ZOMBIE => TaskState::Zombie,
            DELAYED | DEAD if waits_for_zap() => TaskState::Running,
            DELAYED => TaskState::Zombie,
            DEAD => TaskState::Dead,
            _ => {
                if self.0.group().sig.lock().stopped {
                    TaskState::Stopped
                } else {
                    TaskState::Running
                }
            }
        }
    }

    /// The task's own (active) pid namespace (`task_active_pid_ns`).
    pub fn pid_ns(&self) -> Arc<PidNamespace> {
        self.0.active_ns().clone()
    }

    /// The namespace the task's children are created in
    /// (`nsproxy->pid_ns_for_children`).
    pub fn pid_ns_for_children(&self) -> Arc<PidNamespace> {
        self.0
            .changed_ns_for_children()
            .unwrap_or_else(|| self.0.active_ns().clone())
    }

    /// `unshare(CLONE_NEWPID)`: children go to a new child namespace of the active one;
    /// the first of them becomes its init (pid 1). EINVAL if the children's namespace
    /// was already changed (`copy_pid_ns`: it must be the active one); ENOSPC past
    /// level 32; ESRCH if the task was reaped.
    ///
    /// # References
    /// [unshare(2)](https://man7.org/linux/man-pages/man2/unshare.2.html), `copy_pid_ns`.
    pub fn unshare_pid_ns(&self) -> Result<(), Errno> {
        self.0.check_not_released()?;
        self.0.with_rare(|r| {
            if r.ns_for_children.is_some() {
                return Err(Errno::EINVAL);
            }
            r.ns_for_children = Some(self.0.active_ns().new_child()?);
            Ok(())
        })
    }

    /// `setns(fd, CLONE_NEWPID)`: children go to `ns`, which must be the active
    /// namespace or a descendant of it (else EINVAL); ESRCH if the task was reaped.
    /// ENOENT for a namespace that has never had an init (one made by
    /// [`unshare_pid_ns`](Task::unshare_pid_ns) whose first process is not forked
    /// yet): Linux gives no handle on it to pass, as `/proc/PID/ns/pid_for_children`
    /// cannot be opened before then (`pidns_for_children_get`; measured on Linux 6.18:
    /// ENOENT). A namespace whose init has died is accepted (a fork into it is then
    /// ENOMEM).
    ///
    /// # References
    /// [setns(2)](https://man7.org/linux/man-pages/man2/setns.2.html), `pidns_install`,
    /// [pid_namespaces(7)](https://man7.org/linux/man-pages/man7/pid_namespaces.7.html).
    pub fn setns_pid(&self, ns: &Arc<PidNamespace>) -> Result<(), Errno> {
        self.0.check_not_released()?;
        let active = self.0.active_ns();
        if !Arc::ptr_eq(active.map(), ns.map()) || !active.is_same_or_ancestor_of(ns) {
            return Err(Errno::EINVAL);
        }
        if !ns.has_child_reaper() {
            return Err(Errno::ENOENT);
        }
        let changed = (!Arc::ptr_eq(active, ns)).then(|| ns.clone());
        if changed.is_some() || self.0.rare.lock().boxed.is_some() {
            self.0.with_rare(|r| r.ns_for_children = changed);
        }
        Ok(())
    }

    /// `setns(pidfd, CLONE_NEWPID)`: children go to the namespace the pidfd's task is
    /// in (`task_active_pid_ns` of that thread), by the rules of
    /// [`setns_pid`](Task::setns_pid) (EINVAL unless it is this task's active namespace
    /// or a descendant of it). ESRCH, checked first, when that thread has begun its
    /// exit or is gone: Linux reads the namespace from its `nsproxy`, which
    /// `exit_task_namespaces` drops early in `do_exit` (so a zombie, or a leader
    /// whose threads still run, has none); ESRCH too if this task was reaped.
    ///
    /// # References
    /// [setns(2)](https://man7.org/linux/man-pages/man2/setns.2.html) ("a PID file
    /// descriptor"), `validate_nsset` in `kernel/nsproxy.c`.
    pub fn setns_pidfd(&self, pidfd: &PidFd) -> Result<(), Errno> {
        self.0.check_not_released()?;
        let target = pid_task(pidfd.pid()).ok_or(Errno::ESRCH)?;
        if target.exiting.load(Ordering::Acquire) {
            return Err(Errno::ESRCH);
        }
        self.setns_pid(target.active_ns())
    }

    /// [pidfd_open(2)](https://man7.org/linux/man-pages/man2/pidfd_open.2.html): `pid`
    /// is looked up in this task's namespace; ESRCH if this task was reaped.
    pub fn pidfd_open(&self, pid: i32, flags: uproc_abi::PidfdFlags) -> Result<PidFd, Errno> {
        self.0.check_not_released()?;
        let sys = self.0.sys().ok_or(Errno::ESRCH)?;
        sys.pidfs().pidfd_open(self.0.active_ns(), pid, flags)
    }

    /// The pidfd `CLONE_PIDFD` created for this task at fork.
    pub fn pidfd(&self) -> Option<PidFd> {
        self.0.pidfd.clone()
    }

    /// `PR_SET_CHILD_SUBREAPER`: orphaned descendants are reparented to this process
    /// rather than to the namespace init. Turning it on marks every current descendant
    /// (`has_child_subreaper`), as Linux's `walk_process_tree` does.
    ///
    /// # References
    /// [prctl(2)](https://man7.org/linux/man-pages/man2/prctl.2.html) `PR_SET_CHILD_SUBREAPER`.
    pub fn set_child_subreaper(&self, on: bool) {
        self.0.group().sig.lock().is_subreaper = on;
        if !on {
            return;
        }
        let Some(sys) = self.0.sys() else { return };
        // Slow path: tasklist_lock (read) keeps the tree still while it is walked.
        let _r = sys.tasklist_lock.read();
        let mut stack: Vec<Task> = self.0.group().children.lock().list.to_vec();
        while let Some(t) = stack.pop() {
            let mut st = t.0.group().sig.lock();
            if st.has_child_subreaper {
                continue;
            }
            st.has_child_subreaper = true;
            drop(st);
            stack.extend(t.0.group().children.lock().list.iter().cloned());
        }
    }

    /// `setrlimit(RLIMIT_CORE)`, reduced to what uproc can observe: whether this
    /// process dumps core when a signal whose default action is Core
    /// ([`Signal::dumps_core`](uproc_abi::Signal::dumps_core): SIGQUIT, SIGABRT,
    /// SIGSEGV, ...) kills it, so that its parent's wait reports `CLD_DUMPED` and the
    /// status's `WCOREDUMP` bit. Off in the runtime init, as under `ulimit -c 0`:
    /// Linux sets the bit only when a core file was written, and uproc writes none
    /// unless told to pretend it did. Children forked from here on inherit the
    /// setting (`copy_signal` copies the rlimits); the status of a signal already
    /// acted on keeps its bit.
    ///
    /// # References
    /// [setrlimit(2)](https://man7.org/linux/man-pages/man2/setrlimit.2.html)
    /// `RLIMIT_CORE`, [core(5)](https://man7.org/linux/man-pages/man5/core.5.html),
    /// `do_coredump` in `fs/coredump.c`.
    pub fn set_dumps_core(&self, on: bool) {
        let st = self.0.group().sig.lock();
        // Every thread of the process, this one included (also once released: its
        // own copy is all it reads).
        for t in ThreadGroup::attached_threads(&st).chain([self.0.clone()]) {
            if on {
                t.flags.fetch_or(DUMPS_CORE, Ordering::AcqRel);
            } else {
                t.flags.fetch_and(!DUMPS_CORE, Ordering::AcqRel);
            }
        }
    }

    /// Whether this process dumps core when a Core signal kills it
    /// ([`set_dumps_core`](Task::set_dumps_core)).
    pub fn dumps_core(&self) -> bool {
        self.0.dumps_core()
    }

    /// `prctl(PR_SET_PDEATHSIG)`: the signal this thread's process gets when the
    /// thread that forked it (its parent thread, or the one it was handed to) exits,
    /// even if the parent's process lives on in another thread, and at each later
    /// hand-over; [`Signal`] 0 clears it. Per thread, and not inherited: a fork starts
    /// without one. Sent as from the exiting parent (a namespace init child takes it
    /// only as a signal from an ancestor namespace: SIGKILL and SIGSTOP, or anything
    /// it handles). As in Linux, a parent that died before the call is not signalled:
    /// check [`ppid`](Task::ppid) after it.
    ///
    /// # References
    /// [prctl(2)](https://man7.org/linux/man-pages/man2/PR_SET_PDEATHSIG.2const.html)
    /// `PR_SET_PDEATHSIG`, `forget_original_parent` in `kernel/exit.c`.
    pub fn set_pdeath_signal(&self, sig: Signal) {
        let sig = (!sig.is_probe()).then_some(sig);
        if sig.is_none() && !self.0.rare_ever_used() {
            return;
        }
        self.0.with_rare(|r| r.pdeath_signal = sig);
    }

    /// `prctl(PR_GET_PDEATHSIG)`: this thread's parent-death signal, if set.
    pub fn pdeath_signal(&self) -> Option<Signal> {
        if !self.0.rare_ever_used() {
            return None;
        }
        self.0
            .rare
            .lock()
            .boxed
            .as_ref()
            .and_then(|r| r.pdeath_signal)
    }

    /// The SIGCHLD disposition of this process ([`set_sigchld`](Task::set_sigchld)).
    pub fn sigchld(&self) -> SigChld {
        self.0.group().sig.lock().sigchld
    }

    /// The SIGCHLD disposition of this process: `Ignore` and `NoCldWait` make its
    /// children autoreap; `Ignore` also drops the SIGCHLD itself, and discards one
    /// already pending, in the group's set and every thread's (`do_sigaction`: a
    /// signal set to `SIG_IGN` is flushed). Children forked from here on start with
    /// this disposition (`copy_sighand`).
    ///
    /// # References
    /// [sigaction(2)](https://man7.org/linux/man-pages/man2/sigaction.2.html), `do_sigaction`
    /// in `kernel/signal.c`.
    pub fn set_sigchld(&self, d: SigChld) {
        let mut st = self.0.group().sig.lock();
        st.sigchld = d;
        if d != SigChld::Default {
            st.shared_pending.set_chld_noop(false);
        }
        if d == SigChld::Ignore {
            ThreadGroup::flush_pending(&mut st, Signal::CHLD.mask());
        }
    }

    /// Grants or drops `CAP_CHECKPOINT_RESTORE`, which `set_tid` needs (EPERM without).
    /// The runtime's init holds it, as Linux's root init does, and a child inherits
    /// its parent's value at fork.
    pub fn set_cap_checkpoint_restore(&self, on: bool) {
        if on {
            self.0
                .flags
                .fetch_or(CAP_CHECKPOINT_RESTORE, Ordering::Relaxed);
        } else {
            self.0
                .flags
                .fetch_and(!CAP_CHECKPOINT_RESTORE, Ordering::Relaxed);
        }
    }

    /// The cgroup the task belongs to.
    pub fn cgroup(&self) -> Cgroup {
        self.0.cgroup()
    }

    /// `/proc/PID/status` lines `Name`, `State`, `Tgid`, `Pid`, `PPid`, `NSpid`
    /// (tab-separated like Linux), with the numbers as the root namespace sees them.
    ///
    /// # References
    /// [proc_pid_status(5)](https://man7.org/linux/man-pages/man5/proc_pid_status.5.html)
    pub fn status(&self) -> String {
        use std::fmt::Write;
        let state = match self.state() {
            TaskState::Running => "R (running)",
            TaskState::Stopped => "T (stopped)",
            TaskState::Zombie => "Z (zombie)",
            TaskState::Dead => "X (dead)",
        };
        let root = &self.0.pid.numbers()[0].ns;
        let leader = self.0.leader_task().unwrap_or_else(|| Arc::clone(&self.0));
        let ppid = self
            .0
            .group()
            .sig
            .lock()
            .real_parent
            .upgrade()
            .map(|p| p.leader_task().unwrap_or(p).pid.nr_in(root))
            .unwrap_or(0);
        let mut s = String::new();
        // `proc_task_name` escapes a newline and a backslash (`seq_escape_str` with
        // "\n\\"), so a name cannot forge a line.
        let name = self.name().replace('\\', "\\\\").replace('\n', "\\n");
        let _ = writeln!(s, "Name:\t{name}");
        let _ = writeln!(s, "State:\t{state}");
        let _ = writeln!(s, "Tgid:\t{}", leader.pid.nr_in(root));
        let _ = writeln!(s, "Pid:\t{}", self.0.pid.nr_in(root));
        let _ = writeln!(s, "PPid:\t{ppid}");
        let _ = write!(s, "NSpid:");
        for n in self.nspid() {
            let _ = write!(s, "\t{n}");
        }
        s.push('\n');
        s
    }

    /// The task name (`comm`, at most 15 bytes).
    pub fn name(&self) -> String {
        self.0.name.get(&self.0.name_seq).as_str().to_owned()
    }

    /// Sets the task name, truncated to 15 bytes and ended by a NUL as the C string
    /// `PR_SET_NAME` copies (`"ab\0cd"` names it `ab`). A multibyte character that
    /// does not fit whole is left out (Linux cuts its bytes).
    pub fn set_name(&self, name: &str) {
        self.0.name.set(&self.0.name_seq, Comm::new(name));
    }

    /// Whether the task belongs to runtime `sys` (its objects are EINVAL to another
    /// runtime's calls), in whatever state it is.
    pub fn belongs_to(&self, sys: &System) -> bool {
        // Every namespace of a runtime shares its pid map.
        Arc::ptr_eq(self.0.pid.ns().map(), &sys.map)
    }

    /// The runtime the task belongs to; `None` once that [`System`] was dropped (a
    /// handle that outlived its runtime).
    pub fn system(&self) -> Option<Arc<System>> {
        self.0.sys()
    }

    /// The task's `struct pid`.
    pub fn struct_pid(&self) -> &Arc<Pid> {
        &self.0.pid
    }

    /// `thread_group_leader`.
    pub fn is_thread_group_leader(&self) -> bool {
        self.0.leader
    }

    /// The status this thread exited with, once it has exited.
    pub fn exit_status(&self) -> Option<WaitStatus> {
        (self.0.exit_state.load(Ordering::Acquire) != RUNNING).then(|| self.0.exit_status())
    }

    /// A weak handle.
    pub fn downgrade(&self) -> WeakTask {
        WeakTask(Arc::downgrade(&self.0))
    }

    /// Installs (or removes) the managed-mode signal hook; see the crate docs.
    ///
    /// With a hook, a fatal signal (SIGKILL or a default-Term/Core signal) does not
    /// end the task at once: it is made pending (SIGKILL in the thread's pending set,
    /// the signal itself in the group's) and the hook is called with the signal, with
    /// no lock held, so the runtime can stop the body and call
    /// [`exit_signaled`](Task::exit_signaled). Without one (a bare task) the task ends
    /// immediately; a task made by [`fork_managed`](Task::fork_managed) is managed
    /// without a hook (signals made pending, nothing called) until
    /// `set_signal_hook(None)` makes it bare. The hook is dropped when the task exits;
    /// once it has exited this call does nothing.
    pub fn set_signal_hook(&self, hook: Option<Arc<dyn Fn(Signal) + Send + Sync>>) {
        let old = {
            // Raises the "ever set" flag before reading `exiting` (see `RARE_USED`).
            let mut rare = if hook.is_some() {
                self.0.rare_lock_for_insert()
            } else {
                self.0.rare.lock()
            };
            // `do_exit` sets `exiting` and then takes the hook under this lock: a hook
            // installed after that would never be dropped (and may hold the task).
            if self.0.exiting.load(Ordering::SeqCst) {
                hook
            } else {
                if hook.is_none() {
                    // Bare from here on, a task made managed at its fork included.
                    self.0.flags.fetch_and(!MANAGED, Ordering::AcqRel);
                }
                std::mem::replace(&mut rare.hook, hook)
            }
        };
        drop(old);
    }

    /// `fatal_signal_pending`: SIGKILL is pending for this thread (a managed task that
    /// got a fatal signal and has not exited yet).
    pub fn fatal_signal_pending(&self) -> bool {
        self.0.fatal_signal_pending()
    }

    /// The signal this task's process is dying of: the fatal signal its exit was
    /// decided by (Linux's `group_exit_code` under `SIGNAL_GROUP_EXIT`), once one was
    /// (`None` before, and for an `exit_group` with a code). A core-dumping signal no
    /// thread has acted on yet can still be overtaken, as in Linux, where it starts no
    /// group exit until a thread dequeues it: by a fatal signal that does not dump
    /// core, or by a synchronous one (SIGSEGV, ...) dequeued first. A runtime that ends
    /// a managed task passes this to [`exit_signaled`](Task::exit_signaled).
    pub fn dying_of(&self) -> Option<Signal> {
        self.0
            .group()
            .sig
            .lock()
            .group_exit
            .and_then(|s| s.signaled())
    }

    /// Whether `SIGKILL` itself was sent to this task's process (to the group or to one
    /// of its threads), not only marked on its threads by another fatal signal (every
    /// fatal signal marks `SIGKILL` pending here, as Linux's `complete_signal` does for
    /// all but the core-dumping ones, so
    /// [`fatal_signal_pending`](Task::fatal_signal_pending) cannot tell). A runtime
    /// whose bodies end cooperatively uses it to force an end that another fatal
    /// signal only requested: a managed task hit by `SIGTERM` and then `SIGKILL` has
    /// its signal hook called with each (the status stays the first's).
    pub fn sigkill_sent(&self) -> bool {
        let st = self.0.group().sig.lock();
        st.exit_flags & KILL_FORCED != 0 || st.shared_pending.contains(Signal::KILL)
    }

    /// The pending signals: the thread's own set and the group's shared set, lowest
    /// number first, each once (`SigPnd` and `ShdPnd` of
    /// [proc_pid_status(5)](https://man7.org/linux/man-pages/man5/proc_pid_status.5.html)
    /// together). A thread that exited takes nothing sent to it afterwards: a
    /// thread-directed signal to a zombie leader leaves no trace here, as
    /// `/proc/PID/status` shows none on Linux 6.18.
    pub fn pending_signals(&self) -> Vec<Signal> {
        let mut s = self.0.thread_pending();
        for sig in self.0.group().sig.lock().shared_pending.iter() {
            s.insert(sig);
        }
        s.iter().collect()
    }
}
