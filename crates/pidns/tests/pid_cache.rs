//! The pid cache (`put_pid` keeps the allocation of a pid whose last reference it
//! drops, for this thread's next `alloc_pid`): only a last reference is kept, the pid's
//! drop still runs at once (its namespace goes when its last pid does), the cache is
//! bounded, and a thread's exit frees what it kept (a counting allocator shows that no
//! allocation is left behind).

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::{Arc, Mutex};

use common::{any_reaper, root_with_init};
use uproc_abi::Profile;
use uproc_pidns::{
    Pid, PidNamespace, alloc_pid, cached_numbers, cached_pids, free_pid, put_pid, put_pid_as,
};

/// Counts the allocations and frees made on threads that ask for it ([`COUNTED`]):
/// the test harness's own threads allocate at any time and stay out of the count.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

thread_local! {
    // No destructor: readable even while the thread's other thread-locals are
    // destroyed (the pid cache frees its blocks then).
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

fn counted() -> bool {
    COUNTED.try_with(Cell::get).unwrap_or(false)
}

/// Runs `f` on a thread whose every allocation and free, its exit included, is
/// counted; returns the thread's net count of allocations.
fn counted_thread(f: impl FnOnce() + Send + 'static) -> isize {
    let before = LIVE.load(Ordering::SeqCst);
    std::thread::spawn(move || {
        COUNTED.with(|c| c.set(true));
        f();
    })
    .join()
    .unwrap();
    LIVE.load(Ordering::SeqCst) - before
}

// SAFETY: forwards to the system allocator, only counting.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counted() {
            LIVE.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: the caller's obligations, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if counted() {
            LIVE.fetch_sub(1, Ordering::Relaxed);
        }
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// The tests share the allocation count: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A child namespace of `parent` with its init (pid 1 there) allocated and its reaper
/// set, so that any number may be allocated in it.
fn child_with_init(parent: &Arc<PidNamespace>) -> (Arc<PidNamespace>, Arc<Pid>) {
    let child = parent.new_child().unwrap();
    let init = alloc_pid(&child, &[], false).unwrap();
    child.set_child_reaper(Some(any_reaper()));
    (child, init)
}

/// The next `alloc_pid` in `ns` takes the one allocation this thread's cache kept (at
/// `addr`), and the pid is a fresh one in every respect; then freed and kept again.
fn next_fork_reuses(p: Profile, ns: &Arc<PidNamespace>, addr: *const Pid) {
    let next = alloc_pid(ns, &[], false).unwrap();
    assert_eq!(
        Arc::as_ptr(&next),
        addr,
        "{p:?}: the kept allocation is reused"
    );
    assert_eq!(cached_pids(), 0);
    assert!(!next.is_freed());
    assert!(next.task_slot().get().is_none());
    assert_eq!(
        Arc::strong_count(&next),
        2,
        "{p:?}: the caller's and the table's"
    );
    free_pid(&next);
    put_pid(next);
}

/// Runs `f` on a thread of its own (an empty pid cache, counted allocations aside)
/// once per profile, with a root namespace that has its init and a pid just allocated
/// there.
fn with_a_fresh_pid_per_profile(f: fn(Profile, &Arc<PidNamespace>, Arc<Pid>)) {
    std::thread::spawn(move || {
        for &p in Profile::ALL.iter() {
            let (ns, _init) = root_with_init(p, 1000);
            let pid = alloc_pid(&ns, &[], false).unwrap();
            f(p, &ns, pid);
        }
    })
    .join()
    .unwrap();
}

#[test]
fn a_last_reference_is_kept_and_reused_by_the_next_fork() {
    let _s = serial();
    with_a_fresh_pid_per_profile(|p, ns, pid| {
        let addr = Arc::as_ptr(&pid);
        free_pid(&pid);
        assert_eq!(cached_pids(), 0);
        put_pid(pid);
        assert_eq!(cached_pids(), 1, "{p:?}: the last reference is kept");
        next_fork_reuses(p, ns, addr);
    });
}

#[test]
#[allow(unsafe_code)]
fn a_pid_known_unique_is_kept_without_the_check_and_its_slots_weak_taken() {
    let _s = serial();
    with_a_fresh_pid_per_profile(|p, ns, pid| {
        let addr = Arc::as_ptr(&pid);
        // A task attached and detached, as a reaped task's pid is.
        let task: Arc<dyn std::any::Any + Send + Sync> = Arc::new(7u32);
        // SAFETY: the pid's first and only attach.
        unsafe { pid.task_slot().attach(Arc::downgrade(&task)) };
        free_pid(&pid);
        pid.task_slot().detach();
        // SAFETY: the only reference to the pid, no `Weak` to it, nothing else
        // reaches it: nobody reads the slot.
        let weak = unsafe { pid.task_slot().take_unique() }.expect("the slot's Weak");
        assert!(pid.task_slot().get().is_none(), "{p:?}: nothing attached");
        assert_eq!(
            Arc::weak_count(&task),
            1,
            "{p:?}: the Weak moved, not dropped"
        );
        // SAFETY: as above: strong 1, weak 0, unreachable.
        unsafe { put_pid_as(pid, true) };
        assert_eq!(cached_pids(), 1, "{p:?}: kept without the check");
        assert_eq!(
            Arc::weak_count(&task),
            1,
            "{p:?}: the pid's drop dropped no Weak"
        );
        drop(weak);
        assert_eq!(Arc::weak_count(&task), 0);
        next_fork_reuses(p, ns, addr);
    });
}

#[test]
fn a_shared_pid_is_not_kept() {
    let _s = serial();
    std::thread::spawn(|| {
        let (ns, _init) = root_with_init(Profile::Scalable, 1000);
        let pid = alloc_pid(&ns, &[], false).unwrap();
        free_pid(&pid);
        // Another strong reference (a pidfd, say): a plain drop.
        let other = pid.clone();
        put_pid(pid);
        assert_eq!(cached_pids(), 0);
        assert_eq!(other.nr(), 2, "still a live object");
        // A weak one: not unique either.
        let weak = Arc::downgrade(&other);
        put_pid(other);
        assert_eq!(cached_pids(), 0);
        assert!(
            weak.upgrade().is_none(),
            "dropped: it was the last strong one"
        );
    })
    .join()
    .unwrap();
}

#[test]
fn a_kept_pid_gives_back_its_namespace_at_once() {
    let _s = serial();
    std::thread::spawn(|| {
        for &p in Profile::ALL.iter() {
            let (root, _init) = root_with_init(p, 1000);
            let (child, init) = child_with_init(&root);
            let weak_ns = Arc::downgrade(&child);
            drop(child);
            free_pid(&init);
            put_pid(init);
            assert!(
                weak_ns.upgrade().is_none(),
                "{p:?}: the namespace goes with its last pid, cache or not"
            );
        }
    })
    .join()
    .unwrap();
}

/// Allocates `n` pids of `ns` on a counted thread and drops them (`free_pid`, then the
/// last reference to `put_pid`), runs `check` there, and asserts that the thread's exit
/// left no allocation behind (its caches freed, its number batch flushed). A first,
/// uncounted thread warms up what is allocated lazily (the pool's chunks, this
/// binary's thread machinery).
fn assert_a_thread_exit_frees_what_it_kept(
    ns: &Arc<PidNamespace>,
    n: usize,
    check: impl FnOnce() + Send + 'static,
) {
    let warm = ns.clone();
    std::thread::spawn(move || {
        let p = alloc_pid(&warm, &[], false).unwrap();
        free_pid(&p);
        put_pid(p);
    })
    .join()
    .unwrap();
    // What a counted thread that does nothing nets (the closure `spawn` boxed on this
    // thread and the thread's own bookkeeping, freed on it): the baseline.
    let control = counted_thread(|| {});
    let ns = ns.clone();
    let net = counted_thread(move || {
        let pids: Vec<_> = (0..n)
            .map(|_| alloc_pid(&ns, &[], false).unwrap())
            .collect();
        for p in pids {
            free_pid(&p);
            put_pid(p);
        }
        check();
    });
    assert_eq!(net, control, "no allocation left behind by the thread");
}

#[test]
fn the_cache_is_bounded_and_a_thread_exit_frees_it() {
    let _s = serial();
    let (ns, _init) = root_with_init(Profile::Scalable, 1000);
    assert_a_thread_exit_frees_what_it_kept(&ns, 20, || {
        assert_eq!(cached_pids(), 8, "at most 8 kept per thread");
    });
}

#[test]
fn a_nested_pids_numbers_box_is_kept_and_reused_at_the_same_depth() {
    let _s = serial();
    std::thread::spawn(|| {
        for &p in Profile::ALL.iter() {
            let (root, _init) = root_with_init(p, 1000);
            let (child, child_init) = child_with_init(&root);
            let a = alloc_pid(&child, &[], false).unwrap();
            let at = a.numbers().as_ptr();
            let before = cached_numbers();
            free_pid(&a);
            put_pid(a);
            assert_eq!(cached_numbers(), before + 1, "{p:?}: the box is kept");
            let b = alloc_pid(&child, &[], false).unwrap();
            assert_eq!(b.numbers().as_ptr(), at, "{p:?}: and reused");
            assert_eq!(cached_numbers(), before);
            // Outermost first, each level's own namespace and a number of it.
            assert!(Arc::ptr_eq(&b.numbers()[0].ns, &root), "{p:?}");
            assert!(Arc::ptr_eq(&b.numbers()[1].ns, &child), "{p:?}");
            assert_eq!(b.nspid(), vec![b.numbers()[0].nr, b.numbers()[1].nr]);
            assert!(b.numbers().iter().all(|u| u.nr > 1), "{p:?}: {b:?}");
            // A pid of another depth does not take it.
            let grandchild = child.new_child().unwrap();
            let deeper = alloc_pid(&grandchild, &[], false).unwrap();
            assert_ne!(deeper.numbers().as_ptr(), at);
            assert_eq!(deeper.numbers().len(), 3);
            for pid in [b, deeper, child_init] {
                free_pid(&pid);
                put_pid(pid);
            }
            let weak_ns = Arc::downgrade(&grandchild);
            drop(grandchild);
            assert!(
                weak_ns.upgrade().is_none(),
                "{p:?}: the numbers gave their namespace references back"
            );
        }
    })
    .join()
    .unwrap();
}

#[test]
fn kept_number_boxes_are_bounded_and_freed_with_their_thread() {
    let _s = serial();
    let (root, _init) = root_with_init(Profile::Scalable, 1000);
    let (child, child_init) = child_with_init(&root);
    assert_a_thread_exit_frees_what_it_kept(&child, 10, || {
        assert_eq!(cached_numbers(), 4, "at most 4 kept per thread");
    });
    free_pid(&child_init);
    put_pid(child_init);
}

/// A nested pid counts only its innermost namespace, which keeps its ancestors alive;
/// the outer levels' references are borrowed from it, and nothing is given back for
/// them: every namespace goes once its last pid and handle do.
#[test]
fn a_nested_pid_counts_only_its_own_namespace() {
    let _s = serial();
    std::thread::spawn(|| {
        for &p in Profile::ALL.iter() {
            let (root, _init) = root_with_init(p, 1000);
            let (child, child_init) = child_with_init(&root);
            let (grandchild, grandchild_init) = child_with_init(&child);
            let counts = || [&root, &child, &grandchild].map(Arc::strong_count);
            let before = counts();
            // A nested fork that fails after its numbers were built (`set_tid` naming
            // the init's number: EEXIST) gives back exactly what it took.
            assert_eq!(
                alloc_pid(&grandchild, &[1], true).unwrap_err(),
                uproc_abi::Errno::EEXIST
            );
            assert_eq!(
                counts(),
                before,
                "{p:?}: a failed nested alloc_pid balances"
            );
            let pid = alloc_pid(&grandchild, &[], false).unwrap();
            let [r, c, g] = counts();
            assert_eq!(
                [r, c],
                [before[0], before[1]],
                "{p:?}: outer levels borrowed"
            );
            assert_eq!(g, before[2] + 1, "{p:?}: the innermost level counted");
            // The pid alone keeps the chain alive for its numbers.
            let (weak_child, weak_grandchild) =
                (Arc::downgrade(&child), Arc::downgrade(&grandchild));
            drop((child, grandchild));
            for pid in [child_init, grandchild_init] {
                free_pid(&pid);
                put_pid(pid);
            }
            assert!(weak_child.upgrade().is_some() && weak_grandchild.upgrade().is_some());
            assert_eq!(pid.numbers().len(), 3);
            assert!(Arc::ptr_eq(&pid.numbers()[0].ns, &root), "{p:?}");
            let outer = pid.numbers()[1].ns.clone();
            assert!(Arc::ptr_eq(&outer, &weak_child.upgrade().unwrap()), "{p:?}");
            drop(outer);
            free_pid(&pid);
            put_pid(pid);
            assert!(
                weak_grandchild.upgrade().is_none() && weak_child.upgrade().is_none(),
                "{p:?}: the chain goes with the last pid"
            );
            assert_eq!(
                Arc::strong_count(&root),
                before[0] - 1,
                "{p:?}: the root lost only the child namespace's reference"
            );
        }
    })
    .join()
    .unwrap();
}
