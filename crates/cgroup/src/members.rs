//! A cgroup's member set (its css_set task list): a slab of entries threaded on a
//! doubly linked list kept in link-serial order.
//!
//! Every membership change (post_fork, task_dead, attach) is O(1) for the common case:
//! an entry is found by the slab key its [`CssLink`](crate::CssLink) keeps (no search,
//! no hashing, no tree rebalancing), and a freed slot is reused by the next insert (no
//! allocation once the slab has grown to the cgroup's high-water mark). Readers
//! (`cgroup.procs`, `cgroup.kill`) walk the list in serial order, the order a
//! `BTreeMap<serial, _>` gave before.
//!
//! Insertion walks back from the tail to the entry's serial position: post_fork
//! inserts a fresh serial, which is the largest or nearly so (two forks may reach
//! `css_set_lock` in the other order than they drew their serials), so the walk is
//! O(1) there; attach re-inserts a migrated task at its old serial, a slow path.

use slab::Slab;

use crate::membership::CgroupMember;
use crate::sync::Weak;

/// No entry (list end).
const NIL: usize = u32::MAX as usize;

/// One member. The links are `u32` (a slab key of this set; a set holds fewer than
/// `u32::MAX` live tasks) so that an entry takes 32 bytes, not 40: one per live task.
struct Entry {
    serial: u64,
    member: Weak<dyn CgroupMember>,
    prev: u32,
    next: u32,
}

impl Entry {
    fn prev(&self) -> usize {
        self.prev as usize
    }

    fn next(&self) -> usize {
        self.next as usize
    }
}

/// A slab key or [`NIL`] as an [`Entry`] link (a set never holds `u32::MAX`
/// members: each is a live task of well over 100 bytes).
#[inline]
fn link(key: usize) -> u32 {
    debug_assert!(key <= NIL, "fewer than u32::MAX members in one set");
    key as u32
}

/// The member set of one anchor (one css_set of a cgroup). Guarded by the anchor's
/// `members` mutex (taken inside `css_set_lock` under the Linux profiles; alone under
/// `Scalable`).
pub(crate) struct MemberSet {
    slots: Slab<Entry>,
    head: usize,
    tail: usize,
    /// The serial [`append`](MemberSet::append) gives next (`Scalable`: serials are per
    /// anchor, drawn under this set's lock, instead of one runtime-wide counter).
    next_serial: u64,
}

impl Default for MemberSet {
    fn default() -> Self {
        MemberSet {
            slots: Slab::new(),
            head: NIL,
            tail: NIL,
            next_serial: 1,
        }
    }
}

impl MemberSet {
    /// Inserts `member` at the tail with this set's next serial (`list_add_tail`, and
    /// `list_move_tail` for a migrated task): O(1), no runtime-wide counter.
    pub(crate) fn append(&mut self, member: Weak<dyn CgroupMember>) -> usize {
        let serial = self.next_serial.max(self.tail_serial() + 1);
        self.next_serial = serial + 1;
        self.insert(serial, member)
    }

    fn tail_serial(&self) -> u64 {
        if self.tail == NIL {
            0
        } else {
            self.slots[self.tail].serial
        }
    }

    /// Inserts `member` at its `serial` position; returns the key that
    /// [`remove`](MemberSet::remove) takes.
    pub(crate) fn insert(&mut self, serial: u64, member: Weak<dyn CgroupMember>) -> usize {
        let mut after = self.tail;
        while after != NIL && self.slots[after].serial > serial {
            after = self.slots[after].prev();
        }
        let next = if after == NIL {
            self.head
        } else {
            self.slots[after].next()
        };
        let key = self.slots.insert(Entry {
            serial,
            member,
            prev: link(after),
            next: link(next),
        });
        debug_assert!(key != NIL, "the list end is no slab key");
        if after == NIL {
            self.head = key;
        } else {
            self.slots[after].next = link(key);
        }
        if next == NIL {
            self.tail = key;
        } else {
            self.slots[next].prev = link(key);
        }
        key
    }

    /// Removes the entry `key` (from [`insert`](MemberSet::insert)); `None` if there is
    /// none.
    pub(crate) fn remove(&mut self, key: usize) -> Option<Weak<dyn CgroupMember>> {
        let e = self.slots.try_remove(key)?;
        if e.prev() == NIL {
            self.head = e.next();
        } else {
            self.slots[e.prev()].next = e.next;
        }
        if e.next() == NIL {
            self.tail = e.prev();
        } else {
            self.slots[e.next()].prev = e.prev;
        }
        Some(e.member)
    }

    /// The members in serial (link) order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &Weak<dyn CgroupMember>> + '_ {
        self.entries().map(|(_, m)| m)
    }

    /// The members with their serials, in serial (link) order.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (u64, &Weak<dyn CgroupMember>)> + '_ {
        let mut cur = self.head;
        std::iter::from_fn(move || {
            if cur == NIL {
                return None;
            }
            let e = &self.slots[cur];
            cur = e.next();
            Some((e.serial, &e.member))
        })
    }

    /// Whether no member is linked here.
    pub(crate) fn is_empty(&self) -> bool {
        self.head == NIL
    }

    /// How many members.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::Arc;

    struct M(i32);

    impl CgroupMember for M {
        fn tgid(&self) -> i32 {
            self.0
        }
        fn is_group_leader(&self) -> bool {
            true
        }
        fn kill(&self) {}
    }

    fn tgids(s: &MemberSet) -> Vec<i32> {
        s.values()
            .map(|w| w.upgrade().expect("alive").tgid())
            .collect()
    }

    #[test]
    fn keeps_serial_order_whatever_the_insert_order() {
        let ms: Vec<Arc<dyn CgroupMember>> = (0..6).map(|i| Arc::new(M(i)) as _).collect();
        let mut s = MemberSet::default();
        let mut keys = Vec::new();
        for i in [0usize, 1, 3, 2, 5, 4] {
            keys.push((i, s.insert(i as u64, Arc::downgrade(&ms[i]))));
        }
        assert_eq!(tgids(&s), vec![0, 1, 2, 3, 4, 5]);
        let key_of = |i: usize| keys.iter().find(|k| k.0 == i).unwrap().1;
        assert!(s.remove(key_of(0)).is_some(), "head");
        assert!(s.remove(key_of(5)).is_some(), "tail");
        assert!(s.remove(key_of(3)).is_some(), "middle");
        assert!(s.remove(key_of(3)).is_none(), "already removed");
        assert_eq!(tgids(&s), vec![1, 2, 4]);
        assert_eq!(s.len(), 3);
        // A freed slot is reused, and the order still follows serials.
        s.insert(0, Arc::downgrade(&ms[0]));
        s.insert(3, Arc::downgrade(&ms[3]));
        assert_eq!(tgids(&s), vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn append_goes_to_the_tail_whatever_the_serials_before() {
        let ms: Vec<Arc<dyn CgroupMember>> = (0..4).map(|i| Arc::new(M(i)) as _).collect();
        let mut s = MemberSet::default();
        s.insert(10, Arc::downgrade(&ms[0]));
        s.append(Arc::downgrade(&ms[1]));
        let k = s.append(Arc::downgrade(&ms[2]));
        assert!(s.remove(k).is_some());
        s.append(Arc::downgrade(&ms[3]));
        assert_eq!(tgids(&s), vec![0, 1, 3]);
    }

    #[test]
    fn empties_and_refills() {
        let m: Arc<dyn CgroupMember> = Arc::new(M(7));
        let mut s = MemberSet::default();
        for serial in 0..100 {
            let k = s.insert(serial, Arc::downgrade(&m));
            assert_eq!(tgids(&s), vec![7]);
            assert!(s.remove(k).is_some());
            assert_eq!(s.values().count(), 0);
        }
        assert_eq!(s.len(), 0);
    }
}
