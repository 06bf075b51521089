//! `UserList`: a list that is emptied when the last user handle goes, and that nothing
//! can be added to afterwards.
//!
//! A runtime keeps its per-thread shares listed (so that each thread finds its own
//! again) only while a user holds a `Runtime` handle: the shares hold the runtime, so a
//! share left listed after the last user handle would keep it alive forever. Two rules,
//! without a lock on the count:
//!
//! - **users**: `add_user` / `drop_user` count the user handles with read-modify-writes
//!   (`Relaxed` up, as `Arc::clone`; `AcqRel` down). The handle whose decrement reaches
//!   0 takes the list's mutex and empties the list if the count is *still* 0 (a handle
//!   made since, e.g. cloned from a share, empties it when it goes).
//! - **listing**: `list_if_used` adds an item only if the count read *under the mutex*
//!   is above 0 (and prunes, now and then, the items of threads that ended). The last drop's decrement happens before it takes the mutex; so a
//!   listing that takes the mutex after that drop reads 0 and lists nothing, and one
//!   that took it before has its item emptied out by that drop. Either way no item is
//!   left listed once the count is 0 and no operation is in flight.
//!
//! `tests/loom_users.rs` checks the rule under every interleaving (it fails when the
//! count is read before taking the mutex); the items are `pub` only so that test can
//! reach them through `loom_model` (a `cfg(loom)` build).
#![cfg_attr(not(loom), allow(unreachable_pub))]

use crate::sync::{AtomicUsize, Mutex, Ordering};

/// See the module docs.
#[derive(Debug)]
pub struct UserList<T> {
    users: AtomicUsize,
    listed: Mutex<Listed<T>>,
}

/// The items, and the length at which the next listing prunes the gone ones.
#[derive(Debug)]
struct Listed<T> {
    items: Vec<T>,
    prune_at: usize,
}

impl<T> UserList<T> {
    /// The fewest items a prune is worth scanning for.
    const PRUNE_MIN: usize = 16;

    /// An empty list with one user (the handle that made it).
    pub fn new() -> UserList<T> {
        UserList {
            users: AtomicUsize::new(1),
            listed: Mutex::new(Listed {
                items: Vec::new(),
                prune_at: Self::PRUNE_MIN,
            }),
        }
    }

    /// Another user handle.
    pub fn add_user(&self) {
        self.users.fetch_add(1, Ordering::Relaxed);
    }

    /// A user handle went: if it was the last, the list is emptied and its items are
    /// returned (for the caller to drop outside the mutex).
    pub fn drop_user(&self) -> Vec<T> {
        if self.users.fetch_sub(1, Ordering::AcqRel) != 1 {
            return Vec::new();
        }
        let mut listed = self.listed.lock();
        if self.users.load(Ordering::Acquire) == 0 {
            std::mem::take(&mut listed.items)
        } else {
            Vec::new()
        }
    }

    /// Lists `item` if some user handle exists. Once the list has doubled since the
    /// last prune, first drops from it the items `gone` says are of no more use (their
    /// thread ended), so that it stays as long as the live items, at an amortised
    /// constant cost per listing; those are returned for the caller to drop outside
    /// the mutex.
    pub fn list_if_used(&self, item: T, gone: impl Fn(&T) -> bool) -> Vec<T> {
        let mut listed = self.listed.lock();
        if self.users.load(Ordering::Acquire) == 0 {
            return Vec::new();
        }
        let mut pruned = Vec::new();
        if listed.items.len() >= listed.prune_at {
            let (keep, drop): (Vec<T>, Vec<T>) = std::mem::take(&mut listed.items)
                .into_iter()
                .partition(|t| !gone(t));
            listed.items = keep;
            listed.prune_at = (2 * listed.items.len()).max(Self::PRUNE_MIN);
            pruned = drop;
        }
        listed.items.push(item);
        pruned
    }

    /// How many items are listed.
    #[cfg(any(test, loom))]
    pub fn len(&self) -> usize {
        self.listed.lock().items.len()
    }

    /// Whether nothing is listed.
    #[cfg(loom)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> Default for UserList<T> {
    fn default() -> UserList<T> {
        UserList::new()
    }
}
