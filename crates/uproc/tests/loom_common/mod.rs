//! Helpers shared by the loom models (included with `mod loom_common;`).
#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;
use std::task::{Wake, Waker};

/// A waker that counts its wakes (a loom atomic, so the models see every order).
pub struct CountWake(loom::sync::atomic::AtomicUsize);

impl CountWake {
    /// A counter at zero and a waker that bumps it.
    pub fn new() -> (Arc<CountWake>, Waker) {
        let count = Arc::new(CountWake(loom::sync::atomic::AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        (count, waker)
    }

    /// How many times the waker was woken.
    pub fn wakes(&self) -> usize {
        self.0.load(loom::sync::atomic::Ordering::SeqCst)
    }
}

impl Wake for CountWake {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, loom::sync::atomic::Ordering::SeqCst);
    }
}
