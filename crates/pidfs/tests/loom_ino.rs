//! Loom model of the `Linux70` ino allocator (`gen_cookie_next`): two threads taking
//! batches from one shared counter never hand out the same number.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p uproc-pidfs --test loom_ino --release`
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use std::collections::HashSet;
use uproc_pidfs::InoCookie;

#[test]
fn two_threads_with_tiny_batches_get_unique_inos() {
    loom::model(|| {
        let cookie = Arc::new(InoCookie::new(2));
        let other = cookie.clone();
        let h = thread::spawn(move || (0..3).map(|_| other.next()).collect::<Vec<u64>>());
        let mine: Vec<u64> = (0..3).map(|_| cookie.next()).collect();
        let theirs = h.join().unwrap();
        for v in [&mine, &theirs] {
            assert!(
                v.windows(2).all(|w| w[0] < w[1]),
                "one thread's numbers increase"
            );
        }
        let all: HashSet<u64> = mine.iter().chain(&theirs).copied().collect();
        assert_eq!(
            all.len(),
            6,
            "gen_cookie_next never hands out a number twice"
        );
        assert!(
            all.iter().all(|&ino| (1..=8).contains(&ino)),
            "starts at 1, at most 4 batches of 2"
        );
    });
}

#[test]
fn two_allocators_on_one_thread_keep_separate_batches() {
    loom::model(|| {
        let a = InoCookie::new(4);
        let b = InoCookie::new(4);
        assert_eq!((a.next(), b.next(), a.next(), b.next()), (1, 1, 2, 2));
    });
}
