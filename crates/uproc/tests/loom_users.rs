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
            assert!(l2.list_if_used(7, |_| false).is_empty(), "nothing to prune");
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
        assert!(list.list_if_used(1, |_| false).is_empty());
        // A body clones the runtime from its context while the caller drops its own
        // handle; that clone goes last.
        let l2 = list.clone();
        let body = thread::spawn(move || {
            l2.add_user();
            drop(l2.list_if_used(2, |_| false));
            l2
        });
        drop(list.drop_user());
        let l2 = body.join().unwrap();
        drop(l2.drop_user());
        assert!(list.is_empty(), "the last of the two empties the list");
    });
}
