//! Loom model of `UserList`, the list of a runtime's per-thread shares: once the last
//! user handle is gone, nothing is left listed (a listed share would hold the runtime
//! forever), whatever a concurrent listing or a concurrent new user handle does.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p uproc --test loom_users --release`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use uproc::loom_model::UserList;

#[test]
fn nothing_stays_listed_after_the_last_user_handle() {
    loom::model(|| {
        let list = Arc::new(UserList::<u32>::new());
        let l2 = list.clone();
        // A thread's first spawn lists its share while the last user handle goes.
        let spawner = thread::spawn(move || {
            let got = l2.find_or_list(|&t| t == 7, || 7);
            assert_eq!(got, 7);
        });
        let emptied = list.drop_user();
        spawner.join().unwrap();
        assert!(
            list.is_empty(),
            "no share left listed after the last user (emptied {emptied:?})"
        );
    });
}

#[test]
fn a_user_handle_made_meanwhile_empties_the_list_when_it_goes() {
    loom::model(|| {
        let list = Arc::new(UserList::<u32>::new());
        assert_eq!(list.find_or_list(|&t| t == 1, || 1), 1);
        // A body clones the runtime from its context while the caller drops its own
        // handle; that clone goes last.
        let l2 = list.clone();
        let body = thread::spawn(move || {
            l2.add_user();
            l2.find_or_list(|&t| t == 2, || 2);
            l2
        });
        drop(list.drop_user());
        let l2 = body.join().unwrap();
        drop(l2.drop_user());
        assert!(list.is_empty(), "the last of the two empties the list");
    });
}
