//! uproc's futures on a hand-rolled `block_on`: no runtime at all.

use uproc::{Errno, Runtime, Spawn};
use uproc_portability::{assert_observed, block_on, exercise};

#[test]
fn child_pidfd_and_child_set_futures_complete_without_a_runtime() {
    let rt = Runtime::new().unwrap();
    let observed = block_on(exercise(&rt)).expect("scenario");
    assert_observed(&observed);
}

#[test]
fn spawn_async_without_a_future_executor_is_einval_and_creates_nothing() {
    let rt = Runtime::new().unwrap();
    let r = rt.spawn_async(Spawn::new(), |_| async { 0 });
    assert_eq!(r.unwrap_err(), Errno::EINVAL);
    assert_eq!(rt.ps().len(), 1, "nothing was forked");
    assert_eq!(rt.init().pid_ns().nr_allocated(), 1, "no pid taken");
}
