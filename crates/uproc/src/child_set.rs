//! [`ChildSet`]: wait for whichever of many children exits first.
//!
//! In the spirit of tokio's `JoinSet`: children go in ([`spawn`](ChildSet::spawn),
//! [`spawn_async`](ChildSet::spawn_async), [`insert`](ChildSet::insert)), and
//! [`join_next`](ChildSet::join_next) (a future) or [`wait_next`](ChildSet::wait_next)
//! (blocking) reaps the next one to exit. Linux's nearest equivalent is
//! `waitid(P_ALL)` by a parent, or an epoll set of pidfds; a set here holds only the
//! children put in it, whoever their parent is.
//!
//! # Per-pid wake-ups, no polling
//!
//! Each member is a [`ChildFuture`] with a waker of its own (`MemberWaker`, one
//! allocation per member, made once). The member's exit wakes exactly that waker
//! (through the task's exit latch or its pidfd wait queue: nothing else wakes it),
//! which appends the member's key to the set's ready queue and wakes the set's waiter.
//! A `join_next` poll then polls only the members in the ready queue, in the order
//! their exits woke them: a set of 10,000 running children costs nothing per exit but
//! the one member that exited. A member's `queued` flag keeps it in the queue at most
//! once; it is cleared (with an acquire-release swap) before the member is polled, so an
//! exit during that poll queues it again, and an exit whose wake-up found the flag still
//! set is visible to that poll.
//!
//! Who touches what: the set (`&mut self`) owns the members; the ready queue and the
//! set's waker slot (two leaf mutexes in `Ready`) are shared with the member wakers,
//! which may run on any thread (the one that ends a child). Wakers are woken and
//! dropped after those mutexes are released. `tests/loom_child_set.rs` checks that an
//! exit is never lost between a member's wake-up and the set's poll.
#![cfg_attr(not(loom), allow(unreachable_pub))]

use crate::child::{Child, ChildFuture};
use crate::coroutine;
use crate::cx::TaskCx;
use crate::runtime::Runtime;
use crate::spawn::Spawn;
use crate::sync::{AtomicBool, Mutex, Ordering};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Wake, Waker};
use uproc_abi::{Errno, WaitStatus};

/// A set of children, each reaped as it becomes ready: the first to exit once the set
/// waits, and, of those that exited before a wait, the first inserted (as `wait(-1)`
/// meets zombies in fork order).
///
/// Dropping the set detaches the children still in it (each is reaped as soon as its
/// body ends, as a dropped [`Child`] is); call [`abort_all`](ChildSet::abort_all) first
/// to end them.
///
/// ```
/// use uproc::{ChildSet, Runtime, Spawn};
/// let rt = Runtime::builder().build()?;
/// let mut set = ChildSet::new();
/// let (tx, rx) = std::sync::mpsc::channel::<()>();
/// let slow = set.spawn(&rt, Spawn::new(), move |_| { rx.recv().unwrap(); 2 })?;
/// let fast = set.spawn(&rt, Spawn::new(), |_| 1)?;
/// // The fast child is reaped first: the slow one waits for us.
/// let (pid, status) = set.wait_next().expect("two members");
/// assert_eq!((pid, status?.exited()), (fast, Some(1)));
/// tx.send(()).unwrap();
/// let (pid, status) = set.wait_next().expect("one member");
/// assert_eq!((pid, status?.exited()), (slow, Some(2)));
/// assert!(set.wait_next().is_none());
/// assert_eq!(rt.ps().len(), 1); // both reaped
/// # Ok::<(), uproc::Errno>(())
/// ```
pub struct ChildSet {
    members: HashMap<u64, Member>,
    ready: Arc<Ready>,
    next_key: u64,
}

/// One child in the set.
struct Member {
    /// The pid as the child's parent saw it when it joined the set.
    pid: i32,
    fut: ChildFuture,
    /// This member's waker (a `MemberWaker`), kept so its flag can be cleared.
    flag: Arc<MemberWaker>,
    waker: Waker,
}

/// What the member wakers share with the set (`pub` for the loom model only).
#[derive(Default)]
pub struct Ready {
    /// Keys of members whose exit (or first poll) is due.
    queue: Mutex<VecDeque<u64>>,
    /// The waker of the `join_next` waiting on the set, if any.
    waiter: Mutex<Option<Waker>>,
}

impl Ready {
    /// The next due key.
    pub fn pop(&self) -> Option<u64> {
        self.queue.lock().pop_front()
    }

    /// Whether `key` is due.
    #[cfg(loom)]
    pub fn is_queued(&self, key: u64) -> bool {
        self.queue.lock().contains(&key)
    }
}

/// Wakes one member: queues its key and wakes the set's waiter.
pub struct MemberWaker {
    key: u64,
    ready: Weak<Ready>,
    queued: AtomicBool,
}

impl std::fmt::Debug for Ready {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ready").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for MemberWaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemberWaker")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl MemberWaker {
    /// The waker of member `key`, queued for its first poll.
    pub fn new_queued(key: u64, ready: &Arc<Ready>) -> Arc<MemberWaker> {
        ready.queue.lock().push_back(key);
        Arc::new(MemberWaker {
            key,
            ready: Arc::downgrade(ready),
            queued: AtomicBool::new(true),
        })
    }

    /// Called before the member is polled: later wake-ups queue it again. An RMW,
    /// not a store: it reads the latest `queued`, so if an exit's wake-up set it (and
    /// skipped the queue, the key being there already), this swap synchronizes with
    /// that wake-up and the poll that follows sees the exit.
    pub fn clear(&self) {
        self.queued.swap(false, Ordering::AcqRel);
    }
}

impl Wake for MemberWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.queued.swap(true, Ordering::AcqRel) {
            return; // already in the queue
        }
        let Some(ready) = self.ready.upgrade() else {
            return; // the set is gone
        };
        ready.queue.lock().push_back(self.key);
        let waiter = ready.waiter.lock().take();
        if let Some(w) = waiter {
            w.wake(); // outside the lock: waking may run foreign code
        }
    }
}

impl ChildSet {
    /// An empty set.
    pub fn new() -> ChildSet {
        ChildSet {
            members: HashMap::new(),
            ready: Arc::new(Ready::default()),
            next_key: 0,
        }
    }

    /// Adds `child` to the set; returns its pid (as its parent sees it), which
    /// [`join_next`](Self::join_next) returns with its status.
    pub fn insert(&mut self, child: Child) -> i32 {
        let key = self.next_key;
        self.next_key += 1;
        // Queued: the first poll registers the member's waker.
        let flag = MemberWaker::new_queued(key, &self.ready);
        let pid = child.pid();
        let member = Member {
            pid,
            fut: child.into_future(),
            waker: Waker::from(Arc::clone(&flag)),
            flag,
        };
        self.members.insert(key, member);
        pid
    }

    /// [`Runtime::spawn`] into the set: returns the child's pid.
    pub fn spawn<F>(&mut self, rt: &Runtime, s: Spawn, body: F) -> Result<i32, Errno>
    where
        F: FnOnce(&TaskCx) -> i32 + Send + 'static,
    {
        Ok(self.insert(rt.spawn(s, body)?))
    }

    /// [`Runtime::spawn_async`] into the set: returns the child's pid.
    pub fn spawn_async<F, Fut>(&mut self, rt: &Runtime, s: Spawn, body: F) -> Result<i32, Errno>
    where
        F: FnOnce(TaskCx) -> Fut + Send + 'static,
        Fut: Future<Output = i32> + Send + 'static,
    {
        Ok(self.insert(rt.spawn_async(s, body)?))
    }

    /// How many children the set holds (not yet returned by `join_next`).
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether the set holds no child.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Waits for the next child to exit, reaps it and removes it from the set:
    /// `Some((pid, status))`, or `None` once the set is empty. The pid is the one
    /// [`insert`](Self::insert) returned (the number is free again once reaped). The
    /// status is [`Child::wait`]'s.
    ///
    /// Cancel-safe: dropping the future before it completes loses no child.
    pub fn join_next(&mut self) -> JoinNext<'_> {
        JoinNext { set: self }
    }

    /// [`join_next`](Self::join_next), blocking: parks the calling thread, or, in a
    /// coroutine of a runtime with registered
    /// [`CoroutineHooks`](crate::CoroutineHooks), only the calling coroutine.
    #[allow(clippy::type_complexity)]
    pub fn wait_next(&mut self) -> Option<(i32, Result<WaitStatus, Errno>)> {
        coroutine::block_on(self.join_next())
    }

    /// Sends `SIGKILL` to every child in the set (through each one's pidfd, as
    /// [`Child::kill`] does). They stay in the set: [`join_next`](Self::join_next)
    /// reaps them as they die. Children that already exited are not affected.
    pub fn abort_all(&self) {
        for m in self.members.values() {
            // ESRCH only for a task reaped behind the set's back: nothing to kill.
            let _ = m.fut.child().kill();
        }
    }

    fn poll_join_next(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<(i32, Result<WaitStatus, Errno>)>> {
        if self.members.is_empty() {
            return Poll::Ready(None);
        }
        // Register first, then read the queue: a wake-up in between is not lost.
        let old = {
            let mut w = self.ready.waiter.lock();
            match &*w {
                Some(old) if old.will_wake(cx.waker()) => None,
                _ => w.replace(cx.waker().clone()),
            }
        };
        drop(old); // outside the lock: dropping a waker may run foreign code
        // Poll at most the members queued now; one that queues itself again during
        // this poll (a claim race it must retry) is seen at the next poll.
        let due = self.ready.queue.lock().len();
        for _ in 0..due {
            let Some(key) = self.ready.pop() else {
                break;
            };
            let Some(m) = self.members.get_mut(&key) else {
                continue;
            };
            m.flag.clear();
            let mut mcx = Context::from_waker(&m.waker);
            if let Poll::Ready(status) = Pin::new(&mut m.fut).poll(&mut mcx) {
                let pid = m.pid;
                self.members.remove(&key);
                return Poll::Ready(Some((pid, status)));
            }
        }
        if !self.ready.queue.lock().is_empty() {
            cx.waker().wake_by_ref();
        }
        Poll::Pending
    }
}

impl Default for ChildSet {
    fn default() -> ChildSet {
        ChildSet::new()
    }
}

impl fmt::Debug for ChildSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut pids: Vec<i32> = self.members.values().map(|m| m.pid).collect();
        pids.sort_unstable();
        f.debug_struct("ChildSet").field("pids", &pids).finish()
    }
}

/// The future of [`ChildSet::join_next`].
#[must_use = "futures do nothing unless awaited"]
pub struct JoinNext<'a> {
    set: &'a mut ChildSet,
}

impl Future for JoinNext<'_> {
    type Output = Option<(i32, Result<WaitStatus, Errno>)>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().set.poll_join_next(cx)
    }
}

impl fmt::Debug for JoinNext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinNext").field("set", &self.set).finish()
    }
}
