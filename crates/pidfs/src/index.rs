//! The ino -> [`Pid`] index, one shape per profile.
//!
//! | profile | structure | lock | numbering |
//! |---|---|---|---|
//! | `Linux618` | `BTreeMap` (the rb-tree `pidfs_ino_tree`) | one mutex, taken only under `pidmap_lock` | a counter under that mutex |
//! | `Linux70`, `Scalable` | hash table of [`SHARDS`] buckets (`pidfs_ino_ht`) | one mutex per bucket | [`InoCookie`] batches |
//!
//! Entries are `Weak`: the index names pids, it does not own them (the namespace's idr
//! and the handles do). Under the `Linux*` profiles an entry lives from `alloc_pid`
//! (hook `add_pid`) to `free_pid` (hook `remove_pid`), for every pid.
//!
//! `Scalable` indexes only the pids that ever had a pidfd (the only ones a file handle
//! can open): `add_pid` just takes the inode number from the thread's batch, and the
//! first pidfd's registration inserts the entry ([`InoIndex::insert_registered`]). The
//! rare lookup of a pid that never had one ([`Pidfs::find_by_ino`](crate::Pidfs::find_by_ino))
//! walks the runtime's root namespaces instead, whose slot tables hold every live pid.
//! A fork and a free touch no shared memory of pidfs at all.
//!
//! # `Scalable`: an insert racing with the free
//!
//! Two bits of [`Pid::pidfs_flags`] decide it, both changed by read-modify-writes of
//! that one byte, so they are totally ordered: the inserter sets [`INDEXED`] *under
//! the bucket lock* and inserts only if [`REMOVED`] was clear; `remove_pid` sets
//! `REMOVED` and takes the bucket lock to remove the entry only if `INDEXED` was set.
//! If `REMOVED` came first, nothing is inserted; if `INDEXED` came first, the remover
//! saw it and its lock waits for the insert to finish, then removes the entry. No
//! entry outlives its pid's numbers (`tests/pidfs_index.rs` races the two).
//!
//! The common free needs neither: a pid reaped before any pidfd was opened has `DEAD`
//! set and `OPENED` clear, and since the bits are only ever set, any later opener's
//! `fetch_or(OPENED)` sees `DEAD` and fails before it could insert. `free_pid` reads
//! the byte itself (`uproc-pidns` exports the two bits) and makes no `remove_pid` call
//! at all (no read-modify-write, no call per free).
//!
//! Under `Scalable` a pid's inode number is not made at fork either: [`Pid::ino`]
//! takes it from the reading thread's [`InoCookie`] batch on first read (a pidfd, a
//! file handle, a walk that compares numbers uses [`Pid::ino_if_assigned`] and assigns
//! none). Numbers stay unique and never reused; a pid nobody asked about has none.

use crate::ino::InoCookie;
use crate::state::{INDEXED, REMOVED};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use uproc_pidns::Pid;

/// Buckets of the `Linux70` table (a power of two).
pub(crate) const SHARDS: usize = 64;
/// Numbers a thread takes from the shared counter at once under `Linux70`.
pub(crate) const INO_BATCH: u64 = 64;

/// `Linux618`'s counter and tree. Its mutex is only ever taken while `pidmap_lock` is
/// held (the hooks run under it, `find_by_ino` takes it first), so it is never contended
/// and stands for "protected by `pidmap_lock`" without taking that lock a second time.
#[derive(Debug, Default)]
pub(crate) struct Ordered {
    /// The last number handed out (`pidfs_ino`); the first pid gets 1.
    last: u64,
    tree: BTreeMap<u64, Weak<Pid>>,
}

#[derive(Debug)]
pub(crate) enum InoIndex {
    /// `Linux618`: global counter + ordered tree "under pidmap_lock".
    Ordered(Mutex<Ordered>),
    /// `Linux70`: batched cookie + sharded hash table, outside `pidmap_lock`.
    Sharded {
        cookie: InoCookie,
        shards: Box<[Bucket]>,
    },
}

/// One bucket of the `Linux70` table.
type Bucket = Mutex<HashMap<u64, Weak<Pid>, BuildHasherDefault<InoHasher>>>;

/// The hash of an ino inside a bucket: one multiply and a rotate, no SipHash.
///
/// Inos are not chosen by an adversary (they come from our own counter), so a keyed
/// hash buys nothing. The rotate puts the product's well-mixed high bits where the
/// table takes its slot index (bits 32..) and control byte (bits 25..32).
#[derive(Default)]
pub(crate) struct InoHasher(u64);

impl Hasher for InoHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not used for `u64` keys; a correct fallback for any other input.
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(32);
    }
}

/// The bucket of `ino`: one per batch of [`INO_BATCH`] numbers (Fibonacci hashing of
/// the batch's index spreads batches over buckets). A thread's inos come from its own
/// batch, so two threads registering pidfds at once lock different buckets (unless
/// their current batches collide, 1 in [`SHARDS`]); spreading each ino on its own made
/// every thread take every bucket's lock in turn, a shared line per registration.
fn shard_of(ino: u64) -> usize {
    let batch = ino.wrapping_sub(1) / INO_BATCH;
    (batch.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SHARDS.trailing_zeros())) as usize
}

impl InoIndex {
    pub(crate) fn ordered() -> InoIndex {
        InoIndex::Ordered(Mutex::new(Ordered::default()))
    }

    pub(crate) fn sharded() -> InoIndex {
        InoIndex::Sharded {
            cookie: InoCookie::new(INO_BATCH),
            shards: (0..SHARDS)
                .map(|_| Mutex::new(HashMap::default()))
                .collect(),
        }
    }

    /// Assigns the next number and inserts the pid (`pidfs_add_pid`). Returns the ino.
    pub(crate) fn add(&self, pid: &Arc<Pid>) -> u64 {
        match self {
            InoIndex::Ordered(m) => {
                let mut o = m.lock();
                o.last += 1;
                let ino = o.last;
                pid.set_ino(ino);
                o.tree.insert(ino, Arc::downgrade(pid));
                ino
            }
            InoIndex::Sharded { cookie, shards } => {
                let ino = cookie.next();
                pid.set_ino(ino);
                shards[shard_of(ino)]
                    .lock()
                    .insert(ino, Arc::downgrade(pid));
                ino
            }
        }
    }

    /// `Scalable`'s `pidfs_add_pid`: the inode number only, from the thread's batch.
    pub(crate) fn assign_ino(&self, pid: &Pid) -> u64 {
        let ino = self.next_ino();
        pid.set_ino(ino);
        ino
    }

    /// `Scalable`: the next inode number from the thread's batch, for a pid whose
    /// number is read for the first time.
    pub(crate) fn next_ino(&self) -> u64 {
        let InoIndex::Sharded { cookie, .. } = self else {
            unreachable!("Scalable uses the sharded index");
        };
        cookie.next()
    }

    /// `Scalable`: inserts a pid that just got its first pidfd, unless its numbers were
    /// freed already (see the module essay). Idempotent.
    pub(crate) fn insert_registered(&self, pid: &Arc<Pid>) {
        let InoIndex::Sharded { shards, .. } = self else {
            unreachable!("Scalable uses the sharded index");
        };
        if pid.pidfs_flags().load(Ordering::Acquire) & (INDEXED | REMOVED) != 0 {
            return;
        }
        let ino = pid.ino();
        if ino == 0 {
            // Allocated before pidfs was installed: never indexed under any profile.
            return;
        }
        let mut bucket = shards[shard_of(ino)].lock();
        let prev = pid.pidfs_flags().fetch_or(INDEXED, Ordering::AcqRel);
        if prev & (INDEXED | REMOVED) == 0 {
            bucket.insert(ino, Arc::downgrade(pid));
        }
    }

    /// `Scalable`'s `pidfs_remove_pid`: marks the pid removed and drops its entry if it
    /// has one, with one read-modify-write of the pid's own flag byte. `free_pid` calls
    /// it only for a pid that may have an entry: a pid reaped (`DEAD`) before any opener
    /// came (`OPENED` clear) never gets one (an opener's `fetch_or(OPENED)` comes after
    /// that `DEAD` in the byte's order, sees it and fails before it could insert), and
    /// `free_pid` reads that itself. Called for such a pid anyway, it marks it removed
    /// and finds no entry.
    pub(crate) fn remove_registered(&self, pid: &Pid) {
        if pid.pidfs_flags().fetch_or(REMOVED, Ordering::AcqRel) & INDEXED != 0 {
            self.remove(pid.ino());
        }
    }

    /// Removes the pid's entry (`pidfs_remove_pid`).
    pub(crate) fn remove(&self, ino: u64) {
        if ino == 0 {
            return;
        }
        match self {
            InoIndex::Ordered(m) => {
                m.lock().tree.remove(&ino);
            }
            InoIndex::Sharded { shards, .. } => {
                shards[shard_of(ino)].lock().remove(&ino);
            }
        }
    }

    /// The pid with number `ino`. For `Ordered` the caller holds `pidmap_lock`.
    pub(crate) fn find(&self, ino: u64) -> Option<Arc<Pid>> {
        let weak = match self {
            InoIndex::Ordered(m) => m.lock().tree.get(&ino).cloned(),
            InoIndex::Sharded { shards, .. } => shards[shard_of(ino)].lock().get(&ino).cloned(),
        };
        weak.and_then(|w| w.upgrade())
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            InoIndex::Ordered(m) => m.lock().tree.len(),
            InoIndex::Sharded { shards, .. } => shards.iter().map(|s| s.lock().len()).sum(),
        }
    }
}
