//! The pidfd caches: where a closed pidfd's open file and a freed pid's pidfs state
//! wait for the next pidfd made on the same thread.
//!
//! Linux takes both from slab caches: the `struct file` of a pidfd from `filp_cachep`
//! (`alloc_empty_file`, freed by the last `fput`), the pid's pidfs attributes from
//! `pidfs_attr_cachep` (`pidfs_register_pid`, freed with the pid). Their per-CPU free
//! lists make each allocation and free a few instructions. Here each is an `Arc` from
//! the global allocator: a `CLONE_PIDFD` fork, its exit and its reap made and freed
//! two of them, about 260 instructions of glibc per life cycle. So, as the pid and
//! task caches do (`uproc_abi::arc_cache`), per thread a few *emptied* allocations of
//! each:
//!
//! ```text
//!  drop(PidFd) ──► File::recycle: its file's only handle? ─ no ──► plain drop
//!                      │ yes: drop the File in place (its pid, its state: the drops
//!                      ▼      a last fput makes), keep the allocation
//!                  FILES (8) ──► new_file: the next PidFd's file
//!                               (a `PidFd` holds its file as a `CachedArc`, whose
//!                               drop is `File::recycle`)
//!
//!  drop(Pid) ──► PidfsHooks::release_state ─┐
//!  drop(File) ─► its state's CachedArc ──────┴► PidState::recycle: the state's only
//!                      │ yes (no pid slot, pidfd or poll future     handle? ─ no ──►
//!                      │      holds it any more)                        plain drop
//!                      ▼
//!                  STATES (8) ──► new_state: the next pid's first pidfd
//! ```
//!
//! In a `CLONE_PIDFD` life cycle the task's pidfd closes first (its file lets go of
//! the state: one count left, the pid's slot's), then the pid drops and hands its
//! slot's count over: the last one, so both allocations come back. A pidfd that
//! outlives its pid (a handle kept after the reap) gives the state back itself.
//!
//! Who may touch what: only the owning thread reads or writes its caches (the
//! `thread_local!`s below); an entry is an emptied allocation
//! ([`Emptied`](uproc_abi::arc_cache::Emptied)), which nothing else
//! can reach. Nothing observable changes: a file's or a state's drop runs when the
//! plain drop would have run it, and a new one starts as a fresh one would.

use std::sync::Arc;

use uproc_abi::arc_cache::{ArcCache, Recycle, empty_if_unique};

use crate::pidfd::File;
use crate::state::PidState;

/// Emptied allocations of each kind a thread keeps: one serves a fork/exit/reap loop,
/// a few absorb a burst of closes.
const CACHED: usize = 8;

thread_local! {
    // Const-initialised: no lazy-initialisation check on the pidfd's paths.
    static FILES: ArcCache<File, CACHED> = const { ArcCache::new() };
    static STATES: ArcCache<PidState, CACHED> = const { ArcCache::new() };
}

/// `value` in an allocation this thread kept, else in a new one.
#[inline(always)]
fn fill<T: 'static, const N: usize>(
    cache: &'static std::thread::LocalKey<ArcCache<T, N>>,
    value: T,
) -> Arc<T> {
    match cache.try_with(ArcCache::pop).ok().flatten() {
        Some(emptied) => emptied.fill(value),
        None => Arc::new(value),
    }
}

/// Drops `arc`; if it was the last handle (and no `Weak` names it), the value is
/// dropped in place and this thread keeps the allocation (else it is freed: the
/// cache full or gone).
#[inline(always)]
fn put<T: 'static, const N: usize>(
    cache: &'static std::thread::LocalKey<ArcCache<T, N>>,
    arc: Arc<T>,
) {
    // Another handle left (a state whose pid or pidfd still holds it: the common case
    // of the first of the two to let go): one relaxed load, then the plain drop,
    // without `Arc::get_mut`'s compare-exchange. A count read stale only costs the
    // allocation's reuse, never correctness: `get_mut` decides exactly.
    if Arc::strong_count(&arc) != 1 {
        drop(arc);
        return;
    }
    put_if_unique(cache, arc);
}

/// [`put`] past its load: `Arc::get_mut` decides whether `arc` is the last handle.
#[inline(always)]
fn put_if_unique<T: 'static, const N: usize>(
    cache: &'static std::thread::LocalKey<ArcCache<T, N>>,
    arc: Arc<T>,
) {
    // The value's drop runs inside `empty_if_unique`, before the cache is touched: a
    // drop that puts something itself (a file's state, its pid) finds it unborrowed.
    if let Some(emptied) = empty_if_unique(arc) {
        // Full, or the thread's cache gone: the allocation is freed.
        let _ = cache.try_with(|c| c.push(emptied));
    }
}

/// The allocation of a new pidfd's open file.
#[inline]
pub(crate) fn new_file(file: File) -> Arc<File> {
    fill(&FILES, file)
}

/// `fput` of a pidfd's handle (the drop of its
/// [`CachedArc`](uproc_abi::arc_cache::CachedArc)).
impl Recycle for File {
    // Out of line: the drop of a task's `Option<PidFd>` (no pidfd, mostly) stays a
    // test the task's drop inlines.
    #[inline(never)]
    fn recycle(file: Arc<File>) {
        put(&FILES, file);
    }
}

/// The allocation of a pid's state (its first pidfd, or a pidfd made without a pid's
/// slot).
#[inline]
pub(crate) fn new_state(state: PidState) -> Arc<PidState> {
    fill(&STATES, state)
}

/// A pid's state, let go of by its pid's drop (`Pidfs::release_state`) or by a
/// pidfd's file (the drop of its [`CachedArc`](uproc_abi::arc_cache::CachedArc)):
/// whichever lets go last keeps the allocation.
impl Recycle for PidState {
    // Inline: the first of the pid's slot and the pidfd's file to let go (one load,
    // the plain drop) costs no call.
    #[inline]
    fn recycle(state: Arc<PidState>) {
        if Arc::strong_count(&state) != 1 {
            drop(state);
            return;
        }
        put_last_state(state);
    }
}

/// [`PidState::recycle`] of what looks like the last handle, out of line.
#[inline(never)]
fn put_last_state(state: Arc<PidState>) {
    put_if_unique(&STATES, state);
}

/// How many emptied files and states this thread's caches hold (tests).
#[cfg(test)]
pub(crate) fn cached() -> (usize, usize) {
    (FILES.with(ArcCache::len), STATES.with(ArcCache::len))
}

#[cfg(test)]
mod tests {
    use super::cached;
    use crate::{PidFd, Pidfs, Readable, do_notify_pidfd, pidfs_exit};
    use std::future::Future;
    use std::pin::pin;
    use std::sync::Arc;
    use std::task::{Context, Poll, Waker};
    use uproc_abi::{PidfdFlags, Profile, WaitStatus};
    use uproc_pidns::{PID_MAX_DEFAULT, Pid, PidMap, PidNamespace, alloc_pid, free_pid};

    struct World {
        _map: Arc<PidMap>,
        pidfs: Arc<Pidfs>,
        root: Arc<PidNamespace>,
    }

    impl World {
        fn new(profile: Profile) -> World {
            let map = PidMap::new(profile);
            let pidfs = Pidfs::new(&map);
            let root = PidNamespace::new_root(&map, PID_MAX_DEFAULT).expect("a root namespace");
            // An init, as a runtime has: without one, freeing the first pid would close
            // the namespace (its first process failed).
            root.set_child_reaper(Some(std::sync::Weak::<()>::new()));
            World {
                _map: map,
                pidfs,
                root,
            }
        }

        /// A pid and its `CLONE_PIDFD` pidfd.
        fn fork(&self) -> (Arc<Pid>, PidFd) {
            let pid = alloc_pid(&self.root, &[], false).expect("alloc_pid");
            let fd = self
                .pidfs
                .pidfd_prepare_stale(&self.root, pid.clone(), PidfdFlags::empty());
            (pid, fd)
        }
    }

    /// Where a pidfd's file and its pid's state live.
    fn addresses(fd: &PidFd) -> (usize, usize) {
        (
            Arc::as_ptr(fd.file()) as usize,
            Arc::as_ptr(&*fd.file().state) as usize,
        )
    }

    fn status() -> WaitStatus {
        WaitStatus::exited_with(3)
    }

    /// Exit and reap as the task list does, then the last holder drops the pid.
    fn exit_reap_drop(pid: Arc<Pid>) {
        do_notify_pidfd(&pid, status());
        pidfs_exit(&pid, status(), 7);
        free_pid(&pid);
        drop(pid);
    }

    /// A `CLONE_PIDFD` fork's pidfd and pid let go (the pidfd first, as a task's drop
    /// does, or the pid first, as when a handle outlives the reap): both allocations
    /// come back, whichever drop was last, and serve the next pidfd, fresh.
    fn both_come_back_and_serve_the_next_pidfd(pidfd_first: bool) {
        for &profile in Profile::ALL {
            let w = World::new(profile);
            let (pid, fd) = w.fork();
            let at = addresses(&fd);
            let (files, states) = cached();
            if pidfd_first {
                drop(fd);
                assert_eq!(cached(), (files + 1, states), "{profile}: the file");
                exit_reap_drop(pid);
            } else {
                exit_reap_drop(pid);
                assert_eq!(cached(), (files, states), "{profile}: the pidfd holds both");
                assert_eq!(fd.exit_status(), Some(status()), "{profile}");
                drop(fd);
            }
            assert_eq!(cached(), (files + 1, states + 1), "{profile}: both");

            let (pid, fd) = w.fork();
            assert_eq!(addresses(&fd), at, "{profile}: both allocations reused");
            assert_eq!(cached(), (files, states));
            // Fresh: nothing of the last pid's exit shows.
            let ready = fd.poll();
            assert!(!ready.readable && !ready.hangup, "{profile}: {ready:?}");
            assert_eq!(fd.exit_status(), None, "{profile}");
            assert_eq!(fd.waiter_counts(), (0, 0), "{profile}");
            do_notify_pidfd(&pid, status());
            pidfs_exit(&pid, status(), 7);
            assert_eq!(fd.exit_status(), Some(status()), "{profile}");
            free_pid(&pid);
            drop((pid, fd));
        }
    }

    #[test]
    fn a_closed_pidfds_file_and_its_dropped_pids_state_serve_the_next_pidfd() {
        both_come_back_and_serve_the_next_pidfd(true);
    }

    #[test]
    fn a_pidfd_that_outlives_its_pid_gives_the_state_back_itself() {
        both_come_back_and_serve_the_next_pidfd(false);
    }

    #[test]
    fn a_file_or_state_another_handle_holds_is_left_to_it() {
        for &profile in Profile::ALL {
            let w = World::new(profile);
            let (pid, fd) = w.fork();
            let dup = fd.clone();
            let readable: Readable = fd.readable();
            let (files, states) = cached();
            drop(fd);
            assert_eq!(
                cached(),
                (files, states),
                "{profile}: the dup holds the file"
            );
            drop(dup);
            assert_eq!(
                cached().0,
                files + 1,
                "{profile}: the last handle gave it back"
            );
            exit_reap_drop(pid);
            assert_eq!(
                cached().1,
                states,
                "{profile}: the poll future still holds the state"
            );
            // And it still works: the pid was reaped, so it is ready.
            let mut readable = pin!(readable);
            let mut cx = Context::from_waker(Waker::noop());
            assert!(
                matches!(readable.as_mut().poll(&mut cx), Poll::Ready(())),
                "{profile}"
            );
        }
    }
}
