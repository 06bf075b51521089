//! The same scenario on tokio (feature `tokio`).
#![cfg(feature = "tokio")]

use uproc::Runtime;
use uproc_portability::{assert_observed, exercise};

#[test]
fn child_pidfd_and_child_set_futures_complete_on_tokio() {
    let tokio_rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let rt = Runtime::new().unwrap();
    let observed = tokio_rt.block_on(exercise(&rt)).expect("scenario");
    assert_observed(&observed);
}
