//! An anchor's member set (its css_set task list): a slab of `(serial, member)`
//! entries.
//!
//! Every membership change (post_fork, task_dead, attach) is one slab operation: an
//! entry is found by the slab key its [`CssLink`](crate::CssLink) keeps (no search,
//! no hashing, no list to splice), and a freed slot is reused by the next insert (no
//! allocation once the slab has grown to the anchor's high-water mark). Order is kept
//! by the serials instead of by position: the rare readers (`cgroup.procs`,
//! `cgroup.threads`) sort what they collect, so the life cycle pays nothing for it.
//!
//! Under `Scalable` a fork into a cgroup that can be removed reserves its entry at
//! can_fork (a *reserved* entry: no member yet, no serial) and fills it at post_fork:
//! rmdir, which decides under every anchor's lock, sees the fork in flight as an entry
//! (EBUSY), and a fork that takes the lock after rmdir decided sees the cgroup
//! removed (ENOENT). Readers skip reserved entries: their member never upgrades.

use slab::Slab;

use crate::membership::CgroupMember;
use crate::sync::Weak;

/// The member type of a reserved entry: its `Weak` never upgrades (and costs nothing
/// to make or drop: `Weak::new` allocates nothing).
struct Reserved;

impl CgroupMember for Reserved {
    fn tgid(&self) -> i32 {
        unreachable!("a reserved entry has no member")
    }
    fn is_group_leader(&self) -> bool {
        unreachable!("a reserved entry has no member")
    }
    fn kill(&self) {}
}

/// One member and its link serial: 24 bytes (32 in the slab), one per live task.
struct Entry {
    serial: u64,
    member: Weak<dyn CgroupMember>,
}

/// The member set of one anchor (one css_set of a cgroup). Guarded by the anchor's
/// `members` mutex (taken inside `css_set_lock` under the Linux profiles; alone under
/// `Scalable`).
pub(crate) struct MemberSet {
    slots: Slab<Entry>,
    /// Entries reserved by a fork in flight (can_fork to post_fork or cancel).
    reserved: usize,
    /// The serial [`append`](MemberSet::append) gives next (`Scalable`: serials are per
    /// anchor, drawn under this set's lock, instead of one runtime-wide counter).
    next_serial: u64,
}

impl Default for MemberSet {
    fn default() -> Self {
        MemberSet {
            slots: Slab::new(),
            reserved: 0,
            next_serial: 1,
        }
    }
}

impl MemberSet {
    /// Adds `member` after every member already here (`list_add_tail`, and
    /// `list_move_tail` for a migrated task), with this set's next serial: no
    /// runtime-wide counter.
    #[inline]
    pub(crate) fn append(&mut self, member: Weak<dyn CgroupMember>) -> usize {
        let serial = self.next_serial;
        self.next_serial += 1;
        self.insert(serial, member)
    }

    /// Adds `member` at its `serial` position (a runtime-wide serial: the Linux
    /// profiles); returns the key that [`remove`](MemberSet::remove) takes.
    #[inline]
    pub(crate) fn insert(&mut self, serial: u64, member: Weak<dyn CgroupMember>) -> usize {
        self.next_serial = self.next_serial.max(serial + 1);
        self.slots.insert(Entry { serial, member })
    }

    /// Reserves an entry for a fork in flight (see the module essay); returns its key,
    /// for [`fill`](MemberSet::fill) or [`unreserve`](MemberSet::unreserve).
    #[inline]
    pub(crate) fn reserve(&mut self) -> usize {
        self.reserved += 1;
        self.slots.insert(Entry {
            serial: 0,
            member: Weak::<Reserved>::new(),
        })
    }

    /// Puts `member` in the entry `key` reserved, after every member already here
    /// (as [`append`](MemberSet::append)); returns `key`.
    #[inline]
    pub(crate) fn fill(&mut self, key: usize, member: Weak<dyn CgroupMember>) -> usize {
        let serial = self.next_serial;
        self.next_serial += 1;
        let e = self.slots.get_mut(key).expect("a reserved entry");
        debug_assert!(e.member.upgrade().is_none() && e.serial == 0, "reserved");
        *e = Entry { serial, member };
        self.reserved -= 1;
        key
    }

    /// Gives back the entry `key` reserved (the fork failed, or its task is gone).
    pub(crate) fn unreserve(&mut self, key: usize) {
        let e = self.slots.try_remove(key);
        debug_assert!(e.is_some_and(|e| e.serial == 0), "a reserved entry");
        self.reserved -= 1;
    }

    /// Removes the entry `key` (from [`insert`](MemberSet::insert)): its serial and
    /// member; `None` if there is none.
    #[inline]
    pub(crate) fn remove(&mut self, key: usize) -> Option<(u64, Weak<dyn CgroupMember>)> {
        let e = self.slots.try_remove(key)?;
        Some((e.serial, e.member))
    }

    /// The members, in no particular order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &Weak<dyn CgroupMember>> + '_ {
        self.slots.iter().map(|(_, e)| &e.member)
    }

    /// The members with their serials, in no particular order (sort by serial for link
    /// order).
    pub(crate) fn entries(&self) -> impl Iterator<Item = (u64, &Weak<dyn CgroupMember>)> + '_ {
        self.slots.iter().map(|(_, e)| (e.serial, &e.member))
    }

    /// Whether no member is linked here (reserved entries are not members).
    pub(crate) fn is_empty(&self) -> bool {
        self.slots.len() == self.reserved
    }

    /// Whether no member is linked here and no fork holds a reserved entry (rmdir's
    /// test).
    pub(crate) fn is_idle(&self) -> bool {
        self.slots.is_empty()
    }

    /// How many members.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// How many members are linked (reservations left out), for the loom model.
    #[cfg(loom)]
    pub(crate) fn linked(&self) -> usize {
        self.slots.len() - self.reserved
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

    /// The tgids in link (serial) order, as `cgroup.procs` shows them.
    fn tgids(s: &MemberSet) -> Vec<i32> {
        let mut v: Vec<_> = s
            .entries()
            .map(|(serial, w)| (serial, w.upgrade().expect("alive").tgid()))
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, t)| t).collect()
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
        assert_eq!(s.remove(key_of(0)).map(|e| e.0), Some(0), "first");
        assert!(s.remove(key_of(5)).is_some(), "last");
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
    fn append_goes_after_everything_before_whatever_the_slot() {
        let ms: Vec<Arc<dyn CgroupMember>> = (0..4).map(|i| Arc::new(M(i)) as _).collect();
        let mut s = MemberSet::default();
        s.insert(10, Arc::downgrade(&ms[0]));
        s.append(Arc::downgrade(&ms[1]));
        let k = s.append(Arc::downgrade(&ms[2]));
        assert!(s.remove(k).is_some());
        // Reuses the freed slot, still listed last.
        s.append(Arc::downgrade(&ms[3]));
        assert_eq!(tgids(&s), vec![0, 1, 3]);
    }

    #[test]
    fn reserved_entries_keep_rmdir_off_but_are_not_members() {
        let m: Arc<dyn CgroupMember> = Arc::new(M(9));
        let mut s = MemberSet::default();
        s.append(Arc::downgrade(&m));
        let r = s.reserve();
        let gone = s.reserve();
        assert!(!s.is_idle() && !s.is_empty());
        let live: Vec<i32> = s
            .values()
            .filter_map(|w| Some(w.upgrade()?.tgid()))
            .collect();
        assert_eq!(live, vec![9], "a reserved entry lists nothing");
        s.unreserve(gone);
        assert_eq!(s.fill(r, Arc::downgrade(&m)), r);
        assert_eq!(tgids(&s), vec![9, 9]);
        assert_eq!(s.len(), 2);
        let mut e = MemberSet::default();
        let k = e.reserve();
        assert!(
            e.is_empty() && !e.is_idle(),
            "a fork in flight is no member"
        );
        assert_eq!(e.values().filter(|w| w.upgrade().is_some()).count(), 0);
        e.unreserve(k);
        assert!(e.is_empty() && e.is_idle());
    }

    #[test]
    fn empties_and_refills() {
        let m: Arc<dyn CgroupMember> = Arc::new(M(7));
        let mut s = MemberSet::default();
        for serial in 0..100 {
            let k = s.insert(serial, Arc::downgrade(&m));
            assert_eq!(tgids(&s), vec![7]);
            assert!(!s.is_empty());
            assert!(s.remove(k).is_some());
            assert_eq!(s.values().count(), 0);
            assert!(s.is_empty());
        }
        assert_eq!(s.len(), 0);
    }
}
