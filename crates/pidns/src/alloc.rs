//! `alloc_pid` and `free_pid` under each lock profile.
//!
//! The numbering rules are shared ([`reserve_level`]); the profiles differ only in how
//! many times they take `pidmap_lock` and where the pidfs hooks run:
//!
//! | profile | reserve | publish + pidfs add | free + pidfs remove |
//! |---|---|---|---|
//! | `Linux618` | one acquisition per level | a second acquisition, pidfs add inside | one acquisition, pidfs remove inside |
//! | `Linux70` | one acquisition for all levels, publish included | pidfs add after unlock | one acquisition, pidfs remove after unlock |
//! | `Scalable` | none: the thread's batch (a pool lock once per batch) or a direct claim | lock-free slot store; no pidfs add (the ino is assigned on first read) | none: slot clear, number to the thread's free batch |
//!
//! On failure `Linux70` rolls back under the acquisition it already holds (a `set_tid`
//! that fails validation takes no lock at all); `Linux618` rolls back under one more
//! acquisition, as 6.18's `out_free` label did (also when validation failed and there is
//! nothing to roll back). Only the counts differ: numbering and error codes are the
//! newest kernel's in both profiles.

use crate::namespace::{NsState, PidMap, PidNamespace};
use crate::pid::{Numbers, Pid, Upid};
use crate::pid_cache::new_pid;
use crate::pool::NumberPool;
use crate::{MAX_PID_NS_LEVEL, RESERVED_PIDS};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use uproc_abi::{Errno, Profile};

/// One reserved-but-unpublished number, kept for publish or rollback.
#[derive(Clone, Copy)]
struct Reserved {
    /// Index into the innermost-first namespace chain.
    level_from_inner: usize,
    nr: i32,
}

/// The namespace chain innermost first, without allocating.
fn chain(ns: &Arc<PidNamespace>) -> impl Iterator<Item = &Arc<PidNamespace>> {
    std::iter::successors(Some(ns), |n| n.parent())
}

/// Reserves one number in one namespace: `set_tid` entry or cyclic search, then the
/// "PID 1 (init) must be created first" rule. The caller holds `pidmap_lock`.
fn reserve_level(
    ns: &PidNamespace,
    st: &mut NsState,
    tid: Option<i32>,
    pid_max: i32,
) -> Result<i32, Errno> {
    let nr = match tid {
        // idr_alloc(tid, tid + 1): "range full" is reported as EEXIST.
        Some(tid) => {
            if !st.idr.reserve_exact(tid) {
                return Err(Errno::EEXIST);
            }
            tid
        }
        None => {
            // Once more than RESERVED_PIDS numbers were ever handed out, never go below.
            let pid_min = if st.idr.cursor > RESERVED_PIDS {
                RESERVED_PIDS
            } else {
                1
            };
            match st.idr.reserve_cyclic(pid_min, pid_max) {
                Some(nr) => nr,
                None => {
                    tracing::debug!(level = ns.level(), pid_max, "alloc_pid: namespace full");
                    return Err(Errno::EAGAIN);
                }
            }
        }
    };
    // Past pid 1 before an init: EINVAL, unless the namespace is closed (its first
    // process failed after `alloc_pid`), where the `PIDNS_ADDING` check that follows
    // answers ENOMEM, as Linux's does for any number it hands out there.
    if nr != 1 && !ns.has_child_reaper() && (tid.is_some() || st.adding) {
        st.idr.remove(nr);
        return Err(Errno::EINVAL);
    }
    Ok(nr)
}

/// `alloc_pid`: a new [`Pid`] with a number in `ns` and every ancestor.
///
/// `set_tid[0]` asks for a number in `ns`, `set_tid[1]` in its parent, and so on
/// (clone3's `set_tid`); levels without an entry allocate cyclically. Errors, in Linux
/// 7.0's order under every profile (6.18 checked each level's entry as it reserved it,
/// so there an entry in use at an inner level can precede an outer entry's range
/// EINVAL): more entries than levels -> EINVAL; an entry `< 1` or `>= pid_max` -> EINVAL;
/// an entry other than 1 for a namespace without an init -> EINVAL; an entry without
/// `cap_checkpoint_restore` -> EPERM; an entry in use -> EEXIST; a full
/// level -> EAGAIN; a number other than 1 in a namespace without an init -> EINVAL; `ns`
/// closed because its init died -> ENOMEM. On failure nothing stays reserved, but the
/// cyclic cursors that moved stay moved (a failed fork consumes the position).
///
/// # References
/// `alloc_pid` in `kernel/pid.c`; [clone3(2)](https://man7.org/linux/man-pages/man2/clone3.2.html)
/// `set_tid`.
pub fn alloc_pid(
    ns: &Arc<PidNamespace>,
    set_tid: &[i32],
    cap_checkpoint_restore: bool,
) -> Result<Arc<Pid>, Errno> {
    if set_tid.is_empty() && ns.parent().is_none() && ns.map().profile() == Profile::Scalable {
        return alloc_scalable_root(ns);
    }
    let levels = ns.level() as usize + 1;
    if set_tid.len() > levels {
        return Err(Errno::EINVAL);
    }
    // Snapshot pid_max and validate set_tid without the lock. A root-namespace pid (the
    // common case) needs one level: no 33-entry array, no chain walk.
    let one: [i32; 1];
    let many: [i32; MAX_PID_NS_LEVEL as usize + 1];
    let checked = if levels == 1 {
        match check_level(ns, set_tid.first().copied(), cap_checkpoint_restore) {
            Ok(max) => {
                one = [max];
                Ok(&one[..])
            }
            Err(e) => Err(e),
        }
    } else {
        let mut buf = [0i32; MAX_PID_NS_LEVEL as usize + 1];
        let valid = chain(ns).enumerate().try_for_each(|(i, level_ns)| {
            buf[i] = check_level(level_ns, set_tid.get(i).copied(), cap_checkpoint_restore)?;
            Ok(())
        });
        match valid {
            Ok(()) => {
                many = buf;
                Ok(&many[..])
            }
            Err(e) => Err(e),
        }
    };
    let pid_max = match checked {
        Ok(pid_max) => pid_max,
        Err(e) => {
            if ns.map().profile() == Profile::Linux618 {
                // 6.18's `out_free` took pidmap_lock even with nothing to roll back.
                drop(ns.map().pidmap_lock.lock());
            }
            return Err(e);
        }
    };
    // The object is built before the lock; its numbers are filled in while it is still
    // private to this call.
    // A root-namespace pid keeps its one number inline: the `Pid` is the only
    // allocation. Deeper pids box theirs, outermost first.
    let numbers = if levels == 1 {
        Numbers::One(std::mem::ManuallyDrop::new(Upid {
            nr: 0,
            ns: ns.get_for_pid(),
        }))
    } else {
        // In this thread's kept box of this depth, if any; only the innermost level
        // counts its namespace (`pid_cache::new_numbers`).
        Numbers::Many(std::mem::ManuallyDrop::new(crate::pid_cache::new_numbers(
            levels,
            chain(ns),
        )))
    };
    let map = ns.map();
    let lazy_ino = map.profile() == Profile::Scalable && map.pidfs.get().is_some();
    let mut pid = new_pid(|| Pid::new(numbers, lazy_ino));

    match map.profile() {
        Profile::Linux618 => alloc_two_phase(ns, set_tid, pid_max, &mut pid)?,
        Profile::Linux70 => alloc_one_phase(ns, set_tid, pid_max, &mut pid)?,
        Profile::Scalable => alloc_scalable(ns, set_tid, pid_max, &mut pid)?,
    }
    if map.profile() == Profile::Linux70 {
        if let Some(hooks) = map.pidfs.get() {
            if let Err(e) = hooks.add_pid(&pid) {
                // Already public: tear down like any pid.
                free_pid(&pid);
                return Err(e);
            }
        }
    }
    Ok(pid)
}

/// One level's `set_tid` checks, in Linux's order; returns the level's `pid_max`
/// snapshot.
fn check_level(
    ns: &PidNamespace,
    tid: Option<i32>,
    cap_checkpoint_restore: bool,
) -> Result<i32, Errno> {
    let pid_max = ns.pid_max();
    if let Some(tid) = tid {
        if tid < 1 || tid >= pid_max {
            return Err(Errno::EINVAL);
        }
        // "PID 1 (init) must be created first" is checked before the capability.
        if tid != 1 && !ns.has_child_reaper() {
            return Err(Errno::EINVAL);
        }
        if !cap_checkpoint_restore {
            return Err(Errno::EPERM);
        }
    }
    Ok(pid_max)
}

fn fill_number(pid: &mut Arc<Pid>, level_from_inner: usize, nr: i32) {
    let p = Arc::get_mut(pid).expect("pid is private until published");
    let levels = p.numbers().len();
    p.numbers_mut()[levels - 1 - level_from_inner].nr = nr;
}

fn reset_cursor_if_first(st: &mut NsState) {
    // A namespace still waiting for its first process starts numbering at 1 again, so a
    // failed attempt to create its init leaves no trace.
    if st.adding && st.idr.allocated == 0 {
        st.idr.cursor = 0;
    }
}

/// Removes the reserved numbers. The caller holds `pidmap_lock` and, once it dropped
/// it, passes the result to [`wake_reapers`] with the same chain: a reservation counts
/// in `nr_allocated`, so a dead init that checked "is my namespace empty" while it was
/// visible needs the same wakeup a `free_pid` gives.
#[must_use = "the reapers to wake once pidmap_lock is dropped"]
fn rollback(ns: &Arc<PidNamespace>, done: &[Reserved]) -> u64 {
    let mut wake = 0;
    for r in done {
        let level_ns = chain(ns).nth(r.level_from_inner).expect("level exists");
        let mut st = level_ns.state.write();
        st.idr.remove(r.nr);
        if reaper_must_recheck(&st) {
            wake |= 1 << r.level_from_inner;
        }
    }
    wake
}

/// `switch (--ns->pid_allocated) { case 2: case 1: wake_up_process(reaper) }`: after a
/// number was removed, only a closed namespace (PIDNS_ADDING clear) reads 2 or 1, and 0
/// means the reaper itself is gone, so it is not woken.
fn reaper_must_recheck(st: &NsState) -> bool {
    !st.adding && matches!(st.idr.allocated, 1 | 2)
}

/// Calls the reaper wakeup for the namespaces of `levels` whose bit is set in `wake`
/// (bit `i` for the `i`-th namespace `levels` yields). Called with no lock held.
fn wake_reapers<'a>(map: &PidMap, levels: impl Iterator<Item = &'a Arc<PidNamespace>>, wake: u64) {
    if wake == 0 {
        return;
    }
    if let Some(wakeup) = map.wakeup.get() {
        for (i, ns) in levels.enumerate() {
            if wake & (1 << i) != 0 {
                wakeup(ns);
            }
        }
    }
}

fn publish(pid: &Arc<Pid>) {
    for up in pid.numbers() {
        up.ns.state.write().idr.publish(up.nr, Arc::clone(pid));
    }
}

/// `Linux70`: one `pidmap_lock` round trip reserves every level, checks `PIDNS_ADDING`
/// and publishes.
fn alloc_one_phase(
    ns: &Arc<PidNamespace>,
    set_tid: &[i32],
    pid_max: &[i32],
    pid: &mut Arc<Pid>,
) -> Result<(), Errno> {
    let mut done = [Reserved {
        level_from_inner: 0,
        nr: 0,
    }; MAX_PID_NS_LEVEL as usize + 1];
    let mut n = 0;
    let g = ns.map().pidmap_lock.lock();
    if ns.parent().is_none() {
        // One level (the common case): reserve, check and publish under one
        // acquisition of the namespace's state lock instead of two.
        let mut st = ns.state.write();
        reset_cursor_if_first(&mut st);
        let nr = reserve_level(ns, &mut st, set_tid.first().copied(), pid_max[0])?;
        // pidmap_lock is held: `adding` cannot change under it.
        if !ns.adding.load(Ordering::Acquire) {
            st.idr.remove(nr);
            let wake = u64::from(reaper_must_recheck(&st));
            drop(st);
            drop(g);
            wake_reapers(ns.map(), chain(ns), wake);
            return Err(Errno::ENOMEM);
        }
        fill_number(pid, 0, nr);
        st.idr.publish(nr, Arc::clone(pid));
        return Ok(());
    }
    let result = (|| {
        for (i, level_ns) in chain(ns).enumerate() {
            let mut st = level_ns.state.write();
            if i == 0 {
                reset_cursor_if_first(&mut st);
            }
            let nr = reserve_level(level_ns, &mut st, set_tid.get(i).copied(), pid_max[i])?;
            done[n] = Reserved {
                level_from_inner: i,
                nr,
            };
            n += 1;
        }
        // pidmap_lock is held: `adding` cannot change under it.
        if !ns.adding.load(Ordering::Acquire) {
            return Err(Errno::ENOMEM);
        }
        Ok(())
    })();
    if let Err(e) = result {
        let wake = rollback(ns, &done[..n]);
        drop(g);
        wake_reapers(ns.map(), chain(ns), wake);
        return Err(e);
    }
    for r in &done[..n] {
        fill_number(pid, r.level_from_inner, r.nr);
    }
    publish(pid);
    Ok(())
}

/// `Linux618`: one `pidmap_lock` round trip per level to reserve, then a second one to
/// check `PIDNS_ADDING`, add the pid to pidfs and publish.
fn alloc_two_phase(
    ns: &Arc<PidNamespace>,
    set_tid: &[i32],
    pid_max: &[i32],
    pid: &mut Arc<Pid>,
) -> Result<(), Errno> {
    let map = ns.map();
    let mut done = [Reserved {
        level_from_inner: 0,
        nr: 0,
    }; MAX_PID_NS_LEVEL as usize + 1];
    let mut n = 0;
    for (i, level_ns) in chain(ns).enumerate() {
        let g = map.pidmap_lock.lock();
        let mut st = level_ns.state.write();
        if i == 0 {
            reset_cursor_if_first(&mut st);
        }
        match reserve_level(level_ns, &mut st, set_tid.get(i).copied(), pid_max[i]) {
            Ok(nr) => {
                done[n] = Reserved {
                    level_from_inner: i,
                    nr,
                };
                n += 1;
            }
            Err(e) => {
                drop(st);
                drop(g);
                // 6.18's `out_free`: the rollback retakes pidmap_lock.
                let g = map.pidmap_lock.lock();
                let wake = rollback(ns, &done[..n]);
                drop(g);
                wake_reapers(map, chain(ns), wake);
                return Err(e);
            }
        }
    }
    for r in &done[..n] {
        fill_number(pid, r.level_from_inner, r.nr);
    }
    let g = map.pidmap_lock.lock();
    if !ns.adding.load(Ordering::Acquire) {
        // 6.18: `out_unlock` drops the lock, `out_free` retakes it for the rollback.
        drop(g);
        let g = map.pidmap_lock.lock();
        let wake = rollback(ns, &done[..n]);
        drop(g);
        wake_reapers(map, chain(ns), wake);
        return Err(Errno::ENOMEM);
    }
    if let Some(hooks) = map.pidfs.get() {
        if let Err(e) = hooks.add_pid(pid) {
            let wake = rollback(ns, &done[..n]);
            drop(g);
            wake_reapers(map, chain(ns), wake);
            return Err(e);
        }
    }
    publish(pid);
    Ok(())
}

fn pool_of(ns: &PidNamespace) -> &Arc<NumberPool<Pid>> {
    ns.pool
        .as_ref()
        .expect("a Scalable namespace has a number pool")
}

/// `Scalable`: one number from `ns`'s pool: `set_tid`'s exact claim, or the thread's
/// batch (numbers below `bound`, the tightest `pid_max` of `ns` and its ancestors, see
/// [`alloc_scalable`]); then the init-first rule. Same errors as [`reserve_level`]:
/// EAGAIN only if every number below the namespace's own `pid_max` was in use at once.
fn reserve_pooled(
    ns: &PidNamespace,
    tid: Option<i32>,
    pid_max: i32,
    bound: i32,
) -> Result<i32, Errno> {
    let pool = pool_of(ns);
    let has_reaper = ns.has_child_reaper();
    let nr = match tid {
        Some(tid) if pool.claim(tid) => tid,
        Some(_) => return Err(Errno::EEXIST),
        // A namespace waiting for its init gives it 1 (Linux resets the cursor).
        None if !has_reaper && pool.claim(1) => 1,
        // Every number below the ancestors' bound is in use here. That need not mean an
        // outer level is full (pids between the reservation of their inner number and
        // their outer one, or a free between the two; outer numbers above an ancestor's
        // limit lowered since): the namespace's own limit decides, as in Linux, with an
        // exact scan beyond the bound.
        None => match pool
            .alloc_among(bound)
            .or_else(|| (bound < pid_max).then(|| pool.scan(pid_max)).flatten())
        {
            Some(nr) => nr,
            None => {
                tracing::debug!(level = ns.level(), pid_max, "alloc_pid: namespace full");
                return Err(Errno::EAGAIN);
            }
        },
    };
    if nr != 1 && !has_reaper {
        pool.release(nr);
        return Err(Errno::EINVAL);
    }
    Ok(nr)
}

/// `Scalable`, a root-namespace pid without `set_tid` (the common fork): nothing to
/// validate, one level, so no `pid_max` array, no chain walk, no rollback list. The
/// number is reserved before the `Pid` is built, so it goes in with its number and
/// never needs `Arc::get_mut`; on EAGAIN/EINVAL nothing was built.
fn alloc_scalable_root(ns: &Arc<PidNamespace>) -> Result<Arc<Pid>, Errno> {
    let pool = pool_of(ns);
    let pid_max = ns.pid_max();
    let nr = if ns.has_child_reaper() {
        // With an init there is no init-first rule: the batch's next number or EAGAIN.
        pool.alloc(pid_max).ok_or_else(|| {
            tracing::debug!(level = 0, pid_max, "alloc_pid: namespace full");
            Errno::EAGAIN
        })?
    } else {
        reserve_pooled(ns, None, pid_max, pid_max)?
    };
    // pidfs numbers the pid when its number is first read (`Pid::ino`), not here.
    let lazy_ino = ns.map().pidfs.get().is_some();
    let pid = new_pid(|| {
        Pid::new(
            Numbers::One(std::mem::ManuallyDrop::new(Upid {
                nr,
                ns: ns.get_for_pid(),
            })),
            lazy_ino,
        )
    });
    pool.publish(nr, Arc::clone(&pid));
    if !pool.count.add() {
        pool.unpublish_release(nr);
        let wake = u64::from(pool.count.sub());
        wake_reapers(ns.map(), chain(ns), wake);
        return Err(Errno::ENOMEM);
    }
    Ok(pid)
}

/// `Scalable`: every level's number from its own pool (no shared lock), then publish
/// every level's slot, then count the pid in each level's sharded count; the innermost
/// level's [`add`](crate::count::AllocCount::add) checks `PIDNS_ADDING`.
///
/// Publishing before the check is what orders a fork against
/// `disable_pid_allocation` without a lock (`count.rs`): either this fork's count comes
/// first (and its publish is seen by whatever walks the namespace after the close), or
/// it sees the namespace closed and undoes everything with ENOMEM. In that second case
/// a concurrent `find_pid` may briefly have seen the pid; it has no task attached, so
/// nothing can act on it. The count it added was visible too (the dead init's
/// emptiness check reads it), so the undo gives the reaper wakeup a `free_pid` gives,
/// as the locked profiles' rollback does.
fn alloc_scalable(
    ns: &Arc<PidNamespace>,
    set_tid: &[i32],
    pid_max: &[i32],
    pid: &mut Arc<Pid>,
) -> Result<(), Errno> {
    if ns.parent().is_none() {
        // One level (the common case): no chain walk, no rollback array.
        let nr = reserve_pooled(ns, set_tid.first().copied(), pid_max[0], pid_max[0])?;
        fill_number(pid, 0, nr);
        let pool = pool_of(ns);
        pool.publish(nr, Arc::clone(pid));
        if !pool.count.add() {
            pool.unpublish_release(nr);
            let wake = u64::from(pool.count.sub());
            wake_reapers(ns.map(), chain(ns), wake);
            return Err(Errno::ENOMEM);
        }
        return Ok(());
    }
    let mut done = [Reserved {
        level_from_inner: 0,
        nr: 0,
    }; MAX_PID_NS_LEVEL as usize + 1];
    let mut n = 0;
    // A pid needs a number below every ancestor's pid_max too, so a nested namespace
    // never holds more live pids than its tightest ancestor allows: its pool hands out
    // numbers below that bound only (its own pid_max is PID_MAX_LIMIT by default, and
    // the pool's FIFO would otherwise walk, and build lookup slots for, all 4M numbers
    // before reusing one). EAGAIN stays exact: when every number below the bound is in
    // use here, the pool goes on beyond it (`reserve_pooled`). `set_tid` may still ask
    // for any number below the namespace's own pid_max.
    let levels = pid.numbers().len();
    let mut bound = [0i32; MAX_PID_NS_LEVEL as usize + 1];
    let mut tightest = i32::MAX;
    for i in (0..levels).rev() {
        tightest = tightest.min(pid_max[i]);
        bound[i] = tightest;
    }
    for (i, level_ns) in chain(ns).enumerate() {
        match reserve_pooled(level_ns, set_tid.get(i).copied(), pid_max[i], bound[i]) {
            Ok(nr) => {
                done[n] = Reserved {
                    level_from_inner: i,
                    nr,
                };
                n += 1;
            }
            Err(e) => {
                for (r, level_ns) in done[..n].iter().zip(chain(ns)) {
                    pool_of(level_ns).release(r.nr);
                }
                return Err(e);
            }
        }
    }
    for r in &done[..n] {
        fill_number(pid, r.level_from_inner, r.nr);
    }
    for up in pid.numbers() {
        pool_of(&up.ns).publish(up.nr, Arc::clone(pid));
    }
    // Outer levels first: counted before the innermost level's flag is read.
    let outer = levels - 1;
    for up in &pid.numbers()[..outer] {
        pool_of(&up.ns).count.add_unchecked();
    }
    if !pool_of(ns).count.add() {
        // Every level was counted: undo each like a free, wakeups included.
        let wake = free_scalable(pid);
        wake_reapers(ns.map(), pid.numbers().iter().map(|up| &up.ns), wake);
        return Err(Errno::ENOMEM);
    }
    Ok(())
}

/// `Scalable` half of [`free_pid`]: clear each level's slot, give the number back
/// (to this thread's free batch), count it out of the level's shard. Bit `i` of the
/// result: wake the reaper of level `i`'s namespace.
#[inline(always)]
fn free_scalable(pid: &Pid) -> u64 {
    if let [up] = pid.numbers() {
        let pool = pool_of(&up.ns);
        pool.unpublish_release(up.nr);
        let wake = u64::from(pool.count.sub());
        if up.nr == 1 {
            close_after_failed_first_process(&up.ns);
        }
        return wake;
    }
    free_scalable_nested(pid)
}

/// [`free_scalable`] for a pid of several levels, out of line.
#[inline(never)]
fn free_scalable_nested(pid: &Pid) -> u64 {
    // Every level counted out before any level's `adding` is read (`count.rs`).
    for up in pid.numbers() {
        let pool = pool_of(&up.ns);
        pool.unpublish_release_among(up.nr);
        pool.count.sub_only();
    }
    let mut wake = 0;
    for (i, up) in pid.numbers().iter().enumerate() {
        if pool_of(&up.ns).count.owes_wakeup() {
            wake |= 1 << i;
        }
    }
    close_if_first_process_failed(pid);
    wake
}

/// `free_pid`: returns the pid's numbers at every level for reuse (subject to the
/// cursor). The [`Pid`] object lives on while anything holds it. Calling it twice for
/// one pid is a bug; the second call does nothing.
///
/// Linux requires it to run without `tasklist_lock` held (`Linux70`); `Linux618` freed
/// under it. Which one applies is the caller's (tasklist's) business.
///
/// # References
/// `free_pid` in `kernel/pid.c`.
pub fn free_pid(pid: &Arc<Pid>) {
    if !pid.mark_freed() {
        debug_assert!(false, "free_pid called twice");
        return;
    }
    let map = pid.ns().map();
    // Bit `i`: wake the reaper of `pid.numbers()[i].ns` (at most 33 levels).
    let mut wake: u64 = 0;
    if map.profile() == Profile::Scalable {
        wake = free_scalable(pid);
    } else {
        let g = map.pidmap_lock.lock();
        for (i, up) in pid.numbers().iter().enumerate() {
            let mut st = up.ns.state.write();
            st.idr.remove(up.nr);
            if reaper_must_recheck(&st) {
                wake |= 1 << i;
            }
        }
        if map.profile() == Profile::Linux618 {
            if let Some(hooks) = map.pidfs.get() {
                hooks.remove_pid(pid);
            }
        }
        drop(g);
        close_if_first_process_failed(pid);
    }
    // `Scalable`: a pid reaped before anyone asked pidfs for a pidfd has nothing in
    // pidfs's index (the usual reap): no call.
    if map.profile() != Profile::Linux618
        && (map.profile() != Profile::Scalable || pid.pidfs_may_hold_entry())
    {
        if let Some(hooks) = map.pidfs.get() {
            hooks.remove_pid(pid);
        }
    }
    wake_reapers(map, pid.numbers().iter().map(|up| &up.ns), wake);
}

/// [`close_after_failed_first_process`] for `pid` just freed, if it was numbered 1 in
/// its innermost namespace (the nested and idr frees; the one-level `Scalable` free
/// tests the number it holds).
#[inline]
fn close_if_first_process_failed(pid: &Pid) {
    let inner = pid.innermost();
    if inner.nr == 1 {
        close_after_failed_first_process(&inner.ns);
    }
}

/// `free_pid`'s `case PIDNS_ADDING`, for a freed pid numbered 1 in its innermost
/// namespace (`ns`): the last pid of a namespace that never had an init is its first
/// process's, whose fork failed after `alloc_pid` (only pid 1 can be allocated before
/// an init attaches). Linux then closes the namespace (`pid_allocated = 0`): later
/// forks into it fail with ENOMEM (measured on Linux 6.18: `unshare(CLONE_NEWPID)`, a
/// `clone3` failing after the pid is allocated, then `fork()` gives ENOMEM). A failure
/// inside `alloc_pid` itself does not come here: it rolls back and leaves the namespace
/// open, its next pid 1 again. Called with no lock held; out of line: the common free
/// only compares the number it already has with 1.
#[cold]
#[inline(never)]
fn close_after_failed_first_process(ns: &Arc<PidNamespace>) {
    if !ns.has_child_reaper() && ns.is_adding() && ns.nr_allocated() == 0 {
        tracing::debug!(
            level = ns.level(),
            "free_pid: first process failed, namespace closed"
        );
        ns.disable_pid_allocation();
    }
}
