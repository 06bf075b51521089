//! `Pid`: the kernel's `struct pid`, one number per namespace level.

use crate::PidNamespace;
use crate::pidfs_slot::PidfsSlot;
use crate::task_slot::TaskSlot;
use std::any::Any;
use std::fmt;
use std::mem::ManuallyDrop;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};

/// A type-erased object another crate hangs on a pid (pidfs state, the attached task).
pub type Attachment = Arc<dyn Any + Send + Sync>;

/// One level's number: `struct upid { nr, ns }`.
#[derive(Clone)]
pub struct Upid {
    /// The number in `ns`.
    pub nr: i32,
    /// The namespace this number belongs to.
    pub ns: Arc<PidNamespace>,
}

impl fmt::Debug for Upid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@L{}", self.nr, self.ns.level())
    }
}

/// `struct pid`: the identity of a task, with one number in its own namespace and in
/// every ancestor. Shared by `Arc`; it outlives its numbers (a pidfd keeps it after
/// [`free_pid`](crate::free_pid) returned the numbers for reuse), which is what makes a
/// handle unable to hit a recycled number.
///
/// Fields other crates own (the Linux `struct pid` holds them too):
/// - `ino`: the pidfs inode number. `Linux*`: written once by pidfs before the pid is
///   returned from [`alloc_pid`](crate::alloc_pid). `Scalable`: assigned by pidfs
///   ([`PidfsHooks::next_ino`](crate::PidfsHooks::next_ino)) the first time anyone
///   reads it ([`Pid::ino`]), since most pids never get a pidfd. 0 means pidfs does not
///   number this pid (allocated before pidfs was installed).
/// - [`pidfs_slot`](Pid::pidfs_slot): pidfs's per-pid state (`pid->attr`, `wait_pidfd`).
/// - [`pidfs_flags`](Pid::pidfs_flags): pidfs's flag bits (`PIDFS_PID_DEAD`).
/// - [`task_slot`](Pid::task_slot): the task attached as `PIDTYPE_PID` (`pid->tasks`),
///   written by tasklist when it attaches and releases the task (a [`TaskSlot`]).
///
/// # References
/// `struct pid` in `include/linux/pid.h`; `pid_nr_ns` in `kernel/pid.c`.
pub struct Pid {
    numbers: Numbers,
    ino: AtomicU64,
    freed: AtomicBool,
    pidfs_flags: AtomicU8,
    pidfs: PidfsSlot,
    task: TaskSlot,
}

/// A pid's numbers: inline for a root-namespace pid (the common case, so `alloc_pid`
/// allocates only the `Pid` itself), boxed for a pid of a nested namespace.
pub(crate) enum Numbers {
    /// Level 0: the only number. Its namespace reference is taken with
    /// `PidNamespace::get_for_pid` and given back by `Pid`'s drop (per-thread credits
    /// under `Scalable`), hence the `ManuallyDrop`.
    One(ManuallyDrop<Upid>),
    /// Levels 1..=32: outermost first. Handed to `pid_cache::put_numbers` by the
    /// `Pid`'s drop (only the innermost number counts its namespace), hence the
    /// `ManuallyDrop`: the enum then has no drop of its own to call.
    Many(ManuallyDrop<Box<[Upid]>>),
}

impl Numbers {
    #[inline]
    fn as_slice(&self) -> &[Upid] {
        match self {
            Numbers::One(u) => std::slice::from_ref(&**u),
            Numbers::Many(b) => b,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [Upid] {
        match self {
            Numbers::One(u) => std::slice::from_mut(&mut **u),
            Numbers::Many(b) => b,
        }
    }
}

impl Drop for Pid {
    /// `put_pid`'s `put_pid_ns` for a root-level pid: the namespace reference goes
    /// back through `PidNamespace::put_for_pid` (a per-thread credit under
    /// `Scalable`). Deeper pids drop their numbers now and leave their box to this
    /// thread's cache (`pid_cache::put_numbers`).
    #[allow(unsafe_code)]
    #[inline]
    fn drop(&mut self) {
        // First, while the numbers still name the namespace (and its map's pidfs).
        // (A test of the value alone, the take out of line: a pid without pidfs state
        // pays the one test its field's own drop would have made.)
        if self.pidfs.holds_value() {
            self.release_pidfs_state();
        }
        match &mut self.numbers {
            Numbers::One(u) => {
                // SAFETY: `u` is taken exactly once, here, in the `Pid`'s drop; nothing
                // reads `self.numbers` afterwards, and the `ManuallyDrop` keeps the
                // field's own drop from running on the moved-out value.
                let up = unsafe { ManuallyDrop::take(u) };
                PidNamespace::put_for_pid(up.ns);
            }
            // SAFETY: as above, taken once, here; the field is never read again.
            Numbers::Many(b) => crate::pid_cache::put_numbers(unsafe { ManuallyDrop::take(b) }),
        }
    }
}

/// `PIDFS_PID_DEAD` in [`Pid::pidfs_flags`]: pidfs's `pidfs_exit` ran for the pid; no
/// pidfd can be made for it any more.
pub const PIDFS_DEAD: u8 = 1;
/// In [`Pid::pidfs_flags`]: a pidfd opener created (or found) pidfs's state for the
/// pid; set before the opener reads [`PIDFS_DEAD`].
pub const PIDFS_OPENED: u8 = 2;

/// `Pid::ino`'s value for a pid whose inode number pidfs assigns on first read.
/// Never a real inode number (pidfs counts up from 1).
const INO_ON_FIRST_READ: u64 = u64::MAX;

/// The panic of [`Pid::innermost`] for a pid without numbers (never made).
#[cold]
#[inline(never)]
fn no_numbers() -> ! {
    unreachable!("a pid has at least one number")
}

impl Pid {
    /// The drop's hand-over of the pid's pidfs state to its runtime's pidfs (a pid that
    /// had a pidfd: out of line).
    #[cold]
    #[inline(never)]
    fn release_pidfs_state(&mut self) {
        let Some(state) = self.pidfs.take() else {
            return;
        };
        match self.ns().map().pidfs.get() {
            Some(hooks) => hooks.release_state(state),
            None => drop(state),
        }
    }

    /// A pid with `numbers`; `lazy_ino`: pidfs numbers it on the first read of
    /// [`Pid::ino`] (`Scalable` with pidfs installed), else it starts at 0.
    pub(crate) fn new(numbers: Numbers, lazy_ino: bool) -> Pid {
        Pid {
            numbers,
            ino: AtomicU64::new(if lazy_ino { INO_ON_FIRST_READ } else { 0 }),
            freed: AtomicBool::new(false),
            pidfs_flags: AtomicU8::new(0),
            pidfs: PidfsSlot::new(),
            task: TaskSlot::new(),
        }
    }

    /// Every level's number, outermost (the root namespace, index 0) to innermost.
    #[inline]
    pub fn numbers(&self) -> &[Upid] {
        self.numbers.as_slice()
    }

    /// The depth of the innermost namespace (`pid->level`).
    #[inline]
    pub fn level(&self) -> u32 {
        (self.numbers().len() - 1) as u32
    }

    /// The number in the innermost namespace.
    #[inline]
    pub fn nr(&self) -> i32 {
        self.innermost().nr
    }

    /// The innermost namespace (the one the pid was allocated in).
    #[inline]
    pub fn ns(&self) -> &Arc<PidNamespace> {
        &self.innermost().ns
    }

    #[inline]
    pub(crate) fn innermost(&self) -> &Upid {
        match &self.numbers {
            Numbers::One(u) => u,
            // Never empty (two levels at least); the panic out of line, not inlined
            // into every caller.
            Numbers::Many(b) => match b.last() {
                Some(u) => u,
                None => no_numbers(),
            },
        }
    }

    /// `pid_nr_ns`: the number as `ns` sees it, 0 where invisible (a sibling branch or a
    /// deeper namespace).
    #[inline]
    pub fn nr_in(&self, ns: &PidNamespace) -> i32 {
        let level = ns.level() as usize;
        match self.numbers().get(level) {
            Some(up) if std::ptr::eq(Arc::as_ptr(&up.ns), ns) => up.nr,
            _ => 0,
        }
    }

    /// The numbers outermost to innermost, as `/proc/PID/status` prints `NSpid` (from the
    /// root namespace; see [`Pid::nspid_from`] for a nested viewer).
    pub fn nspid(&self) -> Vec<i32> {
        self.numbers().iter().map(|u| u.nr).collect()
    }

    /// `NSpid` as a task in `ns` sees it: its own level and deeper, empty if invisible.
    pub fn nspid_from(&self, ns: &PidNamespace) -> Vec<i32> {
        if self.nr_in(ns) == 0 {
            return Vec::new();
        }
        self.numbers()[ns.level() as usize..]
            .iter()
            .map(|u| u.nr)
            .collect()
    }

    /// The pidfs inode number: 0 if pidfs does not number this pid. Under `Scalable`
    /// the first read assigns it (one number from the reading thread's batch; two
    /// first reads racing agree on one, the loser's number is never used).
    #[inline]
    pub fn ino(&self) -> u64 {
        match self.ino.load(Ordering::Acquire) {
            INO_ON_FIRST_READ => self.ino_first_read(),
            ino => ino,
        }
    }

    /// `Scalable`: the first read of [`Pid::ino`] takes a number from pidfs and
    /// installs it unless another first read won.
    #[cold]
    #[inline(never)]
    fn ino_first_read(&self) -> u64 {
        let ino = self
            .ns()
            .map()
            .pidfs_hooks()
            .map_or(0, |hooks| hooks.next_ino());
        match self
            .ino
            .compare_exchange(INO_ON_FIRST_READ, ino, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => ino,
            Err(won) => won,
        }
    }

    /// The inode number if it was assigned, without assigning it: `None` for a
    /// `Scalable` pid nobody asked for its number yet (no pidfd, no file handle, no
    /// lookup by number can name it). For walks that must not number every pid they
    /// pass.
    #[inline]
    pub fn ino_if_assigned(&self) -> Option<u64> {
        match self.ino.load(Ordering::Acquire) {
            INO_ON_FIRST_READ => None,
            ino => Some(ino),
        }
    }

    /// Sets the pidfs inode number. Called once by pidfs from its publish hook.
    pub fn set_ino(&self, ino: u64) {
        // Written once, by the publish hook, before the pid is shared: a store (not a
        // swap) suffices.
        debug_assert!(
            matches!(self.ino.load(Ordering::Relaxed), 0) || self.ino_if_assigned() == Some(ino),
            "pid ino assigned twice"
        );
        self.ino.store(ino, Ordering::Release);
    }

    /// Whether [`free_pid`](crate::free_pid) has returned the numbers.
    #[inline]
    pub fn is_freed(&self) -> bool {
        self.freed.load(Ordering::Acquire)
    }

    pub(crate) fn mark_freed(&self) -> bool {
        !self.freed.swap(true, Ordering::AcqRel)
    }

    /// pidfs's per-pid state, created when first needed.
    #[inline]
    pub fn pidfs_slot(&self) -> &PidfsSlot {
        &self.pidfs
    }

    /// The task attached as `PIDTYPE_PID`, owned by tasklist (which attaches the task
    /// once, detaches it at release, and downcasts on read): a `Weak` written once and
    /// a state byte, no lock ([`TaskSlot`]).
    #[inline]
    pub fn task_slot(&self) -> &TaskSlot {
        &self.task
    }

    /// pidfs's per-pid flag bits (`PIDFS_PID_DEAD` and the like), owned and interpreted
    /// by pidfs; 0 for a new pid. A flag word next to the slot lets pidfs mark a pid
    /// reaped with one atomic instruction instead of installing a marker in the slot.
    ///
    /// Two bits are part of the contract with [`free_pid`](crate::free_pid):
    /// [`PIDFS_DEAD`] set with [`PIDFS_OPENED`] clear says pidfs keeps nothing for the
    /// pid past its reap, so `Scalable`'s `free_pid` skips the
    /// [`remove_pid`](crate::PidfsHooks::remove_pid) call (the common reap: no pidfd
    /// was ever asked for).
    #[inline]
    pub fn pidfs_flags(&self) -> &AtomicU8 {
        &self.pidfs_flags
    }

    /// `Scalable`: whether `free_pid` must call pidfs's `remove_pid` for this pid (see
    /// [`Pid::pidfs_flags`]). The bits are only ever set, and `OPENED` is set by an
    /// opener that then reads `DEAD`: one that comes after this read sees `DEAD` and
    /// fails without indexing anything.
    #[inline(always)]
    pub(crate) fn pidfs_may_hold_entry(&self) -> bool {
        self.pidfs_flags.load(Ordering::Acquire) & (PIDFS_DEAD | PIDFS_OPENED) != PIDFS_DEAD
    }

    /// The attached task, if one is attached and alive.
    pub fn task(&self) -> Option<Attachment> {
        self.task.get()
    }
}

impl fmt::Debug for Pid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pid")
            .field("numbers", &self.numbers())
            .field("ino", &self.ino_if_assigned())
            .field("freed", &self.is_freed())
            .finish()
    }
}

impl Pid {
    pub(crate) fn numbers_mut(&mut self) -> &mut [Upid] {
        self.numbers.as_mut_slice()
    }
}
