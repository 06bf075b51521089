//! [`Cgroup`]: the cheap handle to one cgroup, and the tree operations (mkdir, rmdir,
//! navigation, the typed pids accessors).

use core::fmt;
use core::hash::{Hash, Hasher};

use uproc_abi::Errno;

use crate::controller::pids::Limit;
use crate::files;
use crate::fork_gate;
use crate::hierarchy::{Hierarchy, Node, check_new_name, mkdir_target};
use crate::sync::{Arc, Ordering, Weak};

/// A handle to one cgroup of a [`Hierarchy`]: cheap to clone, compared and hashed by
/// identity, printed as its path.
///
/// The text interface ([`read`](Cgroup::read), [`write`](Cgroup::write)) speaks
/// cgroupfs; the typed methods beside it do the same without formatting. A handle
/// stays valid after [`rmdir`](Cgroup::rmdir): [`is_removed`](Cgroup::is_removed)
/// turns true, file access and forks fail with ENOENT, and the counters keep
/// draining as zombies charged there are reaped.
///
/// ```
/// use uproc_abi::{Errno, Profile};
/// use uproc_cgroup::Hierarchy;
/// let h = Hierarchy::new(Profile::default());
/// let jobs = h.root().mkdir("jobs")?;
/// jobs.write("pids.max", "2\n")?;
/// assert_eq!(jobs.read("pids.max")?, "2\n");
/// assert_eq!(jobs.read("pids.current")?, "0\n");
/// assert_eq!(h.root().read("pids.max"), Err(Errno::ENOENT)); // not on the root
/// assert_eq!(format!("{jobs:?}"), "Cgroup(\"/jobs\")");
/// jobs.rmdir()?;
/// # Ok::<(), Errno>(())
/// ```
#[derive(Clone)]
pub struct Cgroup {
    pub(crate) hier: Arc<Hierarchy>,
    pub(crate) node: Arc<Node>,
}

/// A weak handle to a cgroup: it does not keep the cgroup (or its hierarchy) alive.
/// [`upgrade`](WeakCgroup::upgrade) fails once the cgroup has been freed (removed and
/// no handle, link or charge left).
#[derive(Clone, Debug)]
pub struct WeakCgroup {
    hier: Weak<Hierarchy>,
    node: Weak<Node>,
}

impl WeakCgroup {
    /// The cgroup, if it still exists in memory.
    pub fn upgrade(&self) -> Option<Cgroup> {
        Some(Cgroup {
            hier: self.hier.upgrade()?,
            node: self.node.upgrade()?,
        })
    }
}

impl Cgroup {
    pub(crate) fn from_parts(hier: Arc<Hierarchy>, node: Arc<Node>) -> Cgroup {
        Cgroup { hier, node }
    }

    /// Creates a cgroup (mkdir(2) in cgroupfs; `cgroup_mkdir`): `path` is the new
    /// cgroup's name, or a path to it relative to this cgroup (`"a/b"` creates `b`
    /// in the existing child `a`), or absolute from the hierarchy's root (`"/a/b"`,
    /// as [`path`](Cgroup::path) prints it), resolved as the VFS resolves mkdir's
    /// path: repeated and trailing slashes are one, `.` is the directory itself, `..`
    /// its parent (the root's is the root).
    ///
    /// Errors (what mkdir(2) gives in cgroupfs): ENOENT for a relative path if this
    /// cgroup was removed, for `""`, or when a directory on the way does not exist; ENOTDIR when one is a
    /// control file; ENAMETOOLONG for a path of 4096 bytes (a name
    /// of any length below that is taken: kernfs sets no `NAME_MAX`);
    /// EEXIST if the name is `.`, `..` or the root, or a child or a control file
    /// (`pids.max`, `cgroup.controllers`, ...) already has it; EINVAL for a newline
    /// in the name (`cgroup_mkdir`) or a NUL anywhere.
    ///
    /// [mkdir(2)]: https://man7.org/linux/man-pages/man2/mkdir.2.html
    pub fn mkdir(&self, path: &str) -> Result<Cgroup, Errno> {
        let mut tree = self.hier.tree.lock();
        // A removed cgroup's directory is gone: nothing is found relative to it (an
        // absolute path does not start there).
        if self.node.is_removed() && !path.starts_with('/') {
            return Err(Errno::ENOENT);
        }
        let root = &self.hier.root().node;
        let (dir, name) = mkdir_target(&tree, root, &self.node, path, files::exists)?;
        let exists = tree
            .children_of(dir.id)
            .is_some_and(|c| c.contains_key(name));
        if exists || files::exists(&dir, name) {
            return Err(Errno::EEXIST);
        }
        check_new_name(name)?;
        let node = self.hier.new_node(name, &dir);
        tree.insert_child(dir.id, node.clone());
        drop(tree);
        tracing::debug!(path = %node.path(), id = node.id, "cgroup created");
        Ok(Cgroup::from_parts(self.hier.clone(), node))
    }

    /// Removes this cgroup (rmdir(2) in cgroupfs; `cgroup_rmdir` / `cgroup_destroy_locked`).
    ///
    /// Errors: EBUSY for the root, for a cgroup with children, with linked members
    /// (`populated 1`) or with a fork between can_fork and post_fork; ENOENT if already
    /// removed. Zombies (unlinked, still charged) do not keep it: their charge drains
    /// from the removed cgroup and its ancestors when they are reaped.
    pub fn rmdir(&self) -> Result<(), Errno> {
        if self.node.parent.is_none() {
            return Err(Errno::EBUSY);
        }
        let mut tree = self.hier.tree.lock();
        if self.node.is_removed() {
            return Err(Errno::ENOENT);
        }
        if tree
            .children_of(self.node.id)
            .is_some_and(|c| !c.is_empty())
        {
            return Err(Errno::EBUSY);
        }
        if self.hier.is_scalable() {
            // Rule: cgroup_mutex -> registry -> every anchor's member lock. Members
            // change only under those, and a fork past can_fork holds a reserved
            // entry in its anchor's set until post_fork or cancel; one that takes its
            // anchor's lock after this decision sees `removed`. The registry stays
            // held so that no anchor appears meanwhile.
            let reg = self.node.registry.lock();
            let anchors = reg.live();
            let sets: Vec<_> = anchors.iter().map(|a| a.members.lock()).collect();
            if !fork_gate::close_if_idle(sets.iter().map(|s| &**s), &self.node.removed) {
                return Err(Errno::EBUSY);
            }
        } else {
            // Rule: cgroup_mutex -> css_set_lock.
            let _css = self.hier.css_set_lock.lock();
            if self.node.nr_populated.load(Ordering::Acquire) > 0
                || self.node.nr_forking.load(Ordering::Acquire) > 0
            {
                return Err(Errno::EBUSY);
            }
            self.node.removed.store(true, Ordering::Release);
        }
        tree.remove(&self.node);
        drop(tree);
        tracing::debug!(path = %self.node.path(), id = self.node.id, "cgroup removed");
        Ok(())
    }

    /// `pids.current` as a number: tasks charged in this subtree (live, zombie, or
    /// mid-fork). 0 for the root, which keeps no counter.
    pub fn pids_current(&self) -> u64 {
        self.node.pids.as_ref().map_or(0, |p| p.current())
    }

    /// `pids.max` as a number; `None` for "max" (and for the root, which has no limit).
    pub fn pids_max(&self) -> Option<u64> {
        match self.node.pids.as_ref()?.limit() {
            Limit::Max => None,
            Limit::Value(n) => Some(n),
        }
    }

    /// Sets `pids.max` (`pids_max_write`). EINVAL above [`PID_MAX_LIMIT`](crate::PID_MAX_LIMIT);
    /// ENOENT on the root (no such file) or a removed cgroup. Never kills anything:
    /// a limit below `pids.current` only stops new forks.
    pub fn set_pids_max(&self, limit: Limit) -> Result<(), Errno> {
        if self.node.is_removed() {
            return Err(Errno::ENOENT);
        }
        let pids = self.node.pids.as_ref().ok_or(Errno::ENOENT)?;
        pids.set_limit(limit)?;
        tracing::debug!(path = %self.node.path(), %limit, "pids.max set");
        Ok(())
    }

    /// `pids.peak`: the highest `pids.current` seen; never decreases. 0 for the root.
    pub fn pids_peak(&self) -> u64 {
        self.node.pids.as_ref().map_or(0, |p| p.peak())
    }

    /// `pids.events` "max N": rejected forks whose over-limit cgroup is this one or a
    /// descendant. 0 for the root.
    pub fn pids_events(&self) -> u64 {
        self.node.pids.as_ref().map_or(0, |p| p.events_max())
    }

    /// `pids.events.local` "max N": rejected forks whose over-limit cgroup is exactly
    /// this one. 0 for the root.
    pub fn pids_events_local(&self) -> u64 {
        self.node.pids.as_ref().map_or(0, |p| p.events_local_max())
    }

    /// Forks started in this cgroup that the pids controller rejected, wherever the
    /// full level was (`events_local[PIDCG_FORKFAIL]`, which Linux shows only with the
    /// `pids_localevents` mount option). 0 for the root.
    pub fn pids_forkfail(&self) -> u64 {
        self.node.pids.as_ref().map_or(0, |p| p.forkfail())
    }

    /// The path from the hierarchy's root: `"/"` for the root, `"/jobs/a"` below.
    pub fn path(&self) -> String {
        self.node.path()
    }

    /// The cgroup id: stable, unique for the hierarchy's life (never reused), root = 1.
    /// What `PIDFD_INFO_CGROUPID` reports.
    pub fn id(&self) -> u64 {
        self.node.id
    }

    /// The last path component; `""` for the root.
    pub fn name(&self) -> String {
        self.node.name.clone()
    }

    /// The parent cgroup; `None` for the root. A removed cgroup keeps its parent.
    pub fn parent(&self) -> Option<Cgroup> {
        let p = self.node.parent.clone()?;
        Some(Cgroup::from_parts(self.hier.clone(), p))
    }

    /// The live children, sorted by name. Empty for a removed cgroup.
    pub fn children(&self) -> Vec<Cgroup> {
        let tree = self.hier.tree.lock();
        tree.children_of(self.node.id)
            .map(|c| {
                c.values()
                    .map(|n| Cgroup::from_parts(self.hier.clone(), n.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// `cgroup.events` "populated": any linked (not yet dead) member in this subtree.
    pub fn is_populated(&self) -> bool {
        self.populated()
    }

    /// Whether [`rmdir`](Cgroup::rmdir) removed this cgroup.
    pub fn is_removed(&self) -> bool {
        self.node.is_removed()
    }

    /// The hierarchy this cgroup belongs to.
    pub fn hierarchy(&self) -> Arc<Hierarchy> {
        self.hier.clone()
    }

    /// A handle that does not keep the cgroup alive.
    pub fn downgrade(&self) -> WeakCgroup {
        WeakCgroup {
            hier: Arc::downgrade(&self.hier),
            node: Arc::downgrade(&self.node),
        }
    }
}

impl PartialEq for Cgroup {
    fn eq(&self, other: &Cgroup) -> bool {
        Arc::ptr_eq(&self.node, &other.node)
    }
}

impl Eq for Cgroup {}

impl Hash for Cgroup {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (Arc::as_ptr(&self.node) as usize).hash(state);
    }
}

impl fmt::Debug for Cgroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Cgroup").field(&self.node.path()).finish()
    }
}
