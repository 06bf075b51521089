//! The hierarchy: one per runtime, owning the tree of cgroups, the global
//! `css_set_lock`, and the id counter (`struct cgroup_root`, `cgrp_dfl_root`).

use core::fmt;
use std::collections::{BTreeMap, HashMap};

use parking_lot::Mutex;
use uproc_abi::lockstat::{LockStat, NamedMutex};
use uproc_abi::{Errno, Profile};

use crate::Cgroup;
use crate::anchor::Registry;
use crate::controller::pids::PidsCounter;
use crate::kill_state::KillState;
use crate::membership::TaskResolver;
use crate::sync::{Arc, AtomicBool, AtomicU64, Ordering, Weak};

/// The cgroup v2 hierarchy of one runtime: its root, its tree, and the global
/// `css_set_lock`.
///
/// Created once per runtime with [`Hierarchy::new`]; every [`Cgroup`] handle and every
/// [`CssLink`](crate::CssLink) holds it by `Arc`, and it holds the live cgroups (the
/// tree), so it lives as long as anything refers to it and frees the whole tree when
/// the last handle goes.
///
/// ```
/// use uproc_abi::Profile;
/// use uproc_cgroup::Hierarchy;
/// let h = Hierarchy::new(Profile::Linux70);
/// let jobs = h.root().mkdir("jobs")?;
/// assert_eq!(jobs.path(), "/jobs");
/// assert_eq!(h.find_by_id(jobs.id()), Some(jobs.clone()));
/// assert_eq!(h.css_set_lock_stat().name, "css_set_lock");
/// # Ok::<(), uproc_abi::Errno>(())
/// ```
///
/// # References
/// `cgroup_setup_root`, `cgrp_dfl_root` in `kernel/cgroup/cgroup.c`.
pub struct Hierarchy {
    profile: Profile,
    /// `profile == Scalable`: membership without `css_set_lock`.
    scalable: bool,
    me: Weak<Hierarchy>,
    root: Arc<Node>,
    /// `cgroup_mutex`: the shape of the tree (which cgroups exist, their children).
    /// Taken by mkdir, rmdir, kill (to walk the subtree), children(), find_by_id().
    /// Lock order: `cgroup_mutex` -> `css_set_lock` -> a link's state -> a cgroup's
    /// member set.
    pub(crate) tree: Mutex<Tree>,
    /// `css_set_lock`: membership (member sets, link state, `populated` counts,
    /// `kill_seq`, `nr_forking`, `removed`). Three acquisitions per task life cycle.
    pub(crate) css_set_lock: NamedMutex<()>,
    next_id: AtomicU64,
    /// Link serials (Linux profiles only; `Scalable` numbers per cgroup, so no fork
    /// writes a runtime-wide counter).
    pub(crate) next_link: AtomicU64,
    resolver: Mutex<Option<Weak<dyn TaskResolver>>>,
    /// `Scalable` with a resolver that lists every member
    /// (`Hierarchy::set_listing_resolver`): the root keeps no member set for the links
    /// forked into it through `post_fork_inline` (they are *listed*, `phase.rs`).
    /// Written by `set_resolver`, read at every such fork.
    root_listed: AtomicBool,
}

/// The tree under `cgroup_mutex`: every live (not removed) cgroup by id, with its
/// children by name. It owns the live cgroups; a cgroup never owns its children, so
/// there is no reference cycle (a child owns its parent, for the uncharge walk).
pub(crate) struct Tree {
    entries: HashMap<u64, Entry>,
}

struct Entry {
    node: Arc<Node>,
    children: BTreeMap<String, Arc<Node>>,
}

impl Tree {
    pub(crate) fn children_of(&self, id: u64) -> Option<&BTreeMap<String, Arc<Node>>> {
        self.entries.get(&id).map(|e| &e.children)
    }

    pub(crate) fn insert_child(&mut self, parent: u64, node: Arc<Node>) {
        let entry = self
            .entries
            .get_mut(&parent)
            .expect("insert_child is called with a live parent, under cgroup_mutex");
        entry.children.insert(node.name.clone(), node.clone());
        self.entries.insert(
            node.id,
            Entry {
                node,
                children: BTreeMap::new(),
            },
        );
    }

    pub(crate) fn remove(&mut self, node: &Node) {
        let gone = self.entries.remove(&node.id);
        debug_assert!(gone.is_some_and(|e| e.children.is_empty()));
        if let Some(parent) = node.parent.as_ref() {
            if let Some(p) = self.entries.get_mut(&parent.id) {
                p.children.remove(&node.name);
            }
        }
    }

    /// `css_for_each_descendant_pre`: `node` and every live descendant.
    pub(crate) fn subtree(&self, node: &Arc<Node>) -> Vec<Arc<Node>> {
        let mut out = vec![node.clone()];
        let mut i = 0;
        while i < out.len() {
            if let Some(children) = self.children_of(out[i].id) {
                out.extend(children.values().cloned());
            }
            i += 1;
        }
        out
    }

    fn get(&self, id: u64) -> Option<&Arc<Node>> {
        self.entries.get(&id).map(|e| &e.node)
    }

    fn len(&self) -> usize {
        self.entries.len()
    }
}

/// One cgroup (`struct cgroup` with its pids css and the one css_set uproc keeps per
/// cgroup). Shared by [`Cgroup`] handles, [`CssLink`](crate::CssLink)s, children and
/// the tree.
pub(crate) struct Node {
    /// Stable id, unique for the hierarchy's life (root = 1), never reused.
    pub(crate) id: u64,
    pub(crate) name: String,
    /// The parent, owned: a removed cgroup with zombies still charged must be able to
    /// uncharge its ancestors at reap.
    pub(crate) parent: Option<Arc<Node>>,
    /// `None` on the root: the pids controller keeps no counter there.
    pub(crate) pids: Option<PidsCounter>,
    /// Set by rmdir, under `cgroup_mutex` and `css_set_lock` (`Scalable`: the node's
    /// registry and every anchor's member lock; read by can_fork under its anchor's,
    /// the fork gate of `fork_gate.rs`).
    pub(crate) removed: AtomicBool,
    /// `cgrp->kill_seq` and `CGRP_KILL` (`kill_state.rs`): begun and ended by every
    /// cgroup.kill on this cgroup or an ancestor (begun under `css_set_lock`;
    /// `Scalable`: before the anchors are collected); read by can_fork and post_fork.
    pub(crate) kill: KillState,
    /// Linux profiles: forks between can_fork and post_fork/cancel, incremented under
    /// `css_set_lock`, decremented by post_fork or cancel. rmdir refuses (EBUSY) while
    /// non-zero, as Linux's parent task (or `cgroup_mutex`, with CLONE_INTO_CGROUP)
    /// keeps the cgroup populated. `Scalable` reserves member-set entries instead.
    pub(crate) nr_forking: AtomicU64,
    /// Linux profiles: linked members in this cgroup and its descendants
    /// (`nr_populated_*`), written under `css_set_lock` with a load and a store; read
    /// anywhere. `Scalable` keeps no count (it would be a line every fork of the
    /// subtree writes): populated is computed from the anchors when asked.
    pub(crate) nr_populated: AtomicU64,
    /// The cgroup's anchors (its css_sets), named weakly: the rare readers'
    /// (`cgroup.procs`, `cgroup.kill`, rmdir) way to the members. Lock order: a link's
    /// state -> this -> anchors' member locks.
    pub(crate) registry: Mutex<Registry>,
    /// Group leaders that died here before the rest of their thread group, in order
    /// of death (`cset->dying_tasks`, [`CssLink::task_dead_leader`](crate::CssLink)):
    /// `cgroup.procs` lists them and `cgroup.kill` signals them while a thread of
    /// theirs lives, wherever that thread is. Not members: they keep no cgroup
    /// populated. An entry leaves at the leader's release (or its link's drop). A
    /// leaf lock, taken under a link's state, `cgroup_mutex` or nothing; never on the
    /// fork/exit path of a task whose group dies with it.
    pub(crate) dying: Mutex<Vec<DyingLeader>>,
}

/// The parked leaders ([`Node::parked`]) whose thread group still has a live thread:
/// the `cgroup.procs` entries (and `cgroup.kill` targets) Linux's `css_task_iter`
/// finds on a css_set's dying list. Called with no cgroup lock held: the live-thread
/// test takes the group's lock.
pub(crate) fn still_listed(
    parked: &[Weak<dyn crate::CgroupMember>],
) -> impl Iterator<Item = Arc<dyn crate::CgroupMember>> + '_ {
    parked
        .iter()
        .filter_map(Weak::upgrade)
        .filter(|m| m.group_has_live_threads())
}

/// One entry of [`Node::dying`].
pub(crate) struct DyingLeader {
    /// The leader's link, by address: how release and drop find the entry.
    pub(crate) link: usize,
    pub(crate) member: Weak<dyn crate::CgroupMember>,
}

impl Node {
    fn new(id: u64, name: String, parent: Option<Arc<Node>>) -> Node {
        let pids = parent.is_some().then(PidsCounter::new);
        Node {
            id,
            name,
            parent,
            pids,
            removed: AtomicBool::new(false),
            kill: KillState::default(),
            nr_forking: AtomicU64::new(0),
            nr_populated: AtomicU64::new(0),
            registry: Mutex::new(Registry::default()),
            dying: Mutex::new(Vec::new()),
        }
    }

    /// The leaders on [`dying`](Node::dying), in order of death, copied under the
    /// list's lock; [`still_listed`] keeps those `cgroup.procs` shows.
    pub(crate) fn parked(&self) -> Vec<Weak<dyn crate::CgroupMember>> {
        self.dying.lock().iter().map(|d| d.member.clone()).collect()
    }

    /// Whether any anchor of this cgroup itself (not its descendants) has a member
    /// linked (`Scalable`'s populated test).
    pub(crate) fn has_members(&self) -> bool {
        let anchors = self.registry.lock().live();
        anchors.iter().any(|a| !a.members.lock().is_empty())
    }

    /// This node and every ancestor up to and including the root.
    pub(crate) fn ancestors(&self) -> Ancestors<'_> {
        Ancestors(Some(self))
    }

    /// Whether a `Scalable` fork into this cgroup passes the fork gate (`fork_gate.rs`):
    /// every cgroup but the root, which is never removed nor killed (a fork into it
    /// counts itself nowhere and its `kill_seq` stays 0).
    #[inline]
    pub(crate) fn is_gated(&self) -> bool {
        self.parent.is_some()
    }

    /// Whether a task here is charged to any pids level: every cgroup but the root
    /// (which keeps no counter) has one. The fast test before walking
    /// [`pids_levels`](Node::pids_levels).
    #[inline]
    pub(crate) fn is_charged_to(&self) -> bool {
        self.pids.is_some()
    }

    /// The pids counters of this node and its ancestors below the root (the walk ends
    /// at the root, the only node without one).
    #[inline]
    pub(crate) fn pids_levels(&self) -> impl Iterator<Item = &PidsCounter> + Clone {
        self.ancestors().map_while(|n| n.pids.as_ref())
    }

    /// Like [`Node::pids_levels`], stopping before `stop` (the common ancestor of a
    /// migration).
    pub(crate) fn pids_levels_below<'a>(
        &'a self,
        stop: &'a Node,
    ) -> impl Iterator<Item = &'a PidsCounter> + Clone {
        self.ancestors()
            .take_while(move |n| !core::ptr::eq(*n, stop))
            .filter_map(|n| n.pids.as_ref())
    }

    pub(crate) fn depth(&self) -> usize {
        self.ancestors().count() - 1
    }

    /// `cgroup_path`: "/" for the root, "/a/b" below it.
    pub(crate) fn path(&self) -> String {
        let mut names: Vec<&str> = self
            .ancestors()
            .filter(|n| n.parent.is_some())
            .map(|n| n.name.as_str())
            .collect();
        if names.is_empty() {
            return "/".to_owned();
        }
        names.reverse();
        let mut s = String::new();
        for n in names {
            s.push('/');
            s.push_str(n);
        }
        s
    }

    /// Whether rmdir removed this cgroup (a fork is refused with ENOENT only after it
    /// saw this).
    pub(crate) fn is_removed(&self) -> bool {
        self.removed.load(Ordering::Acquire)
    }

    pub(crate) fn is_populated(&self) -> bool {
        self.nr_populated.load(Ordering::Acquire) > 0
    }
}

/// The lowest cgroup that is an ancestor of (or equal to) both.
pub(crate) fn common_ancestor<'a>(a: &'a Node, b: &'a Node) -> &'a Node {
    let (mut a, mut b) = (a, b);
    let (mut da, mut db) = (a.depth(), b.depth());
    while da > db {
        a = a.parent.as_deref().expect("depth > 0 has a parent");
        da -= 1;
    }
    while db > da {
        b = b.parent.as_deref().expect("depth > 0 has a parent");
        db -= 1;
    }
    while !core::ptr::eq(a, b) {
        a = a
            .parent
            .as_deref()
            .expect("same hierarchy: the walk meets at the root");
        b = b
            .parent
            .as_deref()
            .expect("same hierarchy: the walk meets at the root");
    }
    a
}

/// Iterator from a node up to the root.
#[derive(Clone)]
pub(crate) struct Ancestors<'a>(Option<&'a Node>);

impl<'a> Iterator for Ancestors<'a> {
    type Item = &'a Node;

    fn next(&mut self) -> Option<&'a Node> {
        let n = self.0?;
        self.0 = n.parent.as_deref();
        Some(n)
    }
}

impl Hierarchy {
    /// A new hierarchy with only its root cgroup (id 1), under `profile`'s locking.
    ///
    /// # References
    /// `cgroup_init` / `cgroup_setup_root` (the default hierarchy).
    pub fn new(profile: Profile) -> Arc<Hierarchy> {
        let root = Arc::new(Node::new(1, String::new(), None));
        let mut entries = HashMap::new();
        entries.insert(
            1,
            Entry {
                node: root.clone(),
                children: BTreeMap::new(),
            },
        );
        Arc::new_cyclic(|me| Hierarchy {
            profile,
            scalable: profile == Profile::Scalable,
            me: me.clone(),
            root,
            tree: Mutex::new(Tree { entries }),
            css_set_lock: NamedMutex::new("css_set_lock", ()),
            next_id: AtomicU64::new(2),
            next_link: AtomicU64::new(1),
            resolver: Mutex::new(None),
            root_listed: AtomicBool::new(false),
        })
    }

    /// The root cgroup ("/", id 1). It has no pids files, cannot be removed, and
    /// cannot be killed through `cgroup.kill` (Linux does not create those files there).
    pub fn root(&self) -> Cgroup {
        Cgroup::from_parts(self.arc(), self.root.clone())
    }

    /// The lock profile this hierarchy imitates. `Linux618` and `Linux70` lock the
    /// same way here: `css_set_lock` three times per task life cycle; `Scalable` never
    /// takes it (per-anchor member locks and atomics instead).
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// Whether membership runs without `css_set_lock` (`Profile::Scalable`).
    #[inline]
    pub(crate) fn is_scalable(&self) -> bool {
        self.scalable
    }

    /// Acquisitions of the global `css_set_lock` so far (non-zero only with the
    /// `lockstat` feature).
    pub fn css_set_lock_stat(&self) -> LockStat {
        self.css_set_lock.stat()
    }

    /// Registers the object that turns a pid written to `cgroup.procs` into the css
    /// links of its thread group (the task list does this once). Held weakly.
    ///
    /// Registered after a listing resolver ([`set_listing_resolver`]), it ends the
    /// listing for new forks; tasks already listed in the root stay linked (they exit
    /// and are reaped as usual) but `cgroup.procs` of the root finds them only through
    /// the resolver registered now.
    ///
    /// [`set_listing_resolver`]: Hierarchy::set_listing_resolver
    pub fn set_resolver(&self, r: Weak<dyn TaskResolver>) {
        self.register(r, false);
    }

    /// [`set_resolver`](Hierarchy::set_resolver) for a resolver whose
    /// [`members`](TaskResolver::members) lists every task of the hierarchy that holds
    /// its link inline. Under `Scalable` the root then keeps no member set for the tasks
    /// forked into it through
    /// [`ForkCharge::post_fork_inline`](crate::ForkCharge::post_fork_inline): they are
    /// linked with one compare-exchange, and `cgroup.procs` of the root asks the
    /// resolver. (The task list's way: every task has a number in the root namespace.)
    pub fn set_listing_resolver(&self, r: Weak<dyn TaskResolver>) {
        self.register(r, true);
    }

    fn register(&self, r: Weak<dyn TaskResolver>, lists: bool) {
        let mut slot = self.resolver.lock();
        *slot = Some(r);
        // Under the resolver's lock, so that a reader of both sees them agree.
        self.root_listed
            .store(self.scalable && lists, Ordering::Release);
    }

    /// Whether forks into the root are listed rather than put in a member set.
    #[inline]
    pub(crate) fn lists_root_members(&self) -> bool {
        self.root_listed.load(Ordering::Acquire)
    }

    pub(crate) fn resolver(&self) -> Option<Arc<dyn TaskResolver>> {
        self.resolver.lock().as_ref().and_then(Weak::upgrade)
    }

    /// The live cgroup with this id (`cgroup_get_from_id`); `None` once removed.
    pub fn find_by_id(&self, id: u64) -> Option<Cgroup> {
        let node = self.tree.lock().get(id)?.clone();
        Some(Cgroup::from_parts(self.arc(), node))
    }

    pub(crate) fn alloc_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn new_node(&self, name: &str, parent: &Arc<Node>) -> Arc<Node> {
        Arc::new(Node::new(
            self.alloc_id(),
            name.to_owned(),
            Some(parent.clone()),
        ))
    }

    fn arc(&self) -> Arc<Hierarchy> {
        self.me
            .upgrade()
            .expect("a &Hierarchy is only reachable through a live Arc<Hierarchy>")
    }
}

impl fmt::Debug for Hierarchy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hierarchy")
            .field("profile", &self.profile)
            .field("cgroups", &self.tree.lock().len())
            .field("css_set_lock", &self.css_set_lock)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Node")
            .field("id", &self.id)
            .field("path", &self.path())
            .finish_non_exhaustive()
    }
}

/// `PATH_MAX`: a path of this many bytes or more is ENAMETOOLONG (the kernel's
/// `getname` counts the terminating NUL).
const PATH_MAX: usize = 4096;

/// mkdir's path walk, as the VFS does it before `cgroup_mkdir` runs (`do_mkdirat` ->
/// `filename_create`): the directory `path` creates its last component in, and that
/// component. `path` is relative to `start`, or to the hierarchy's `root` when it
/// begins with `/` (as [`Cgroup::path`](crate::Cgroup::path) prints one). Repeated and
/// trailing slashes are one; `.` is the directory itself and `..` its parent (the
/// root's is the root, as `/..` is `/`).
///
/// Errors in the order the walk meets them: ENOENT for an empty path or a missing
/// directory on the way; ENAMETOOLONG for a path of `PATH_MAX` bytes (no bound on
/// one component: kernfs has none, and the VFS leaves it to the filesystem); ENOTDIR for a control file on the way (`dir_is_file`); EEXIST
/// when the last component is `.`, `..` or the root (`filename_create`: not
/// `LAST_NORM`); EINVAL for a NUL (a C path would end there; a Rust string is refused)
/// and, from `cgroup_mkdir` itself, a newline in the new name (it would make
/// `/proc/PID/cgroup` unparsable). The caller checks that the name is free (EEXIST).
pub(crate) fn mkdir_target<'p>(
    tree: &Tree,
    root: &Arc<Node>,
    start: &Arc<Node>,
    path: &'p str,
    dir_is_file: impl Fn(&Node, &str) -> bool,
) -> Result<(Arc<Node>, &'p str), Errno> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    if path.len() >= PATH_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    if path.contains('\0') {
        return Err(Errno::EINVAL);
    }
    let mut dir = if path.starts_with('/') {
        root.clone()
    } else {
        start.clone()
    };
    let mut parts = path.split('/').filter(|c| !c.is_empty()).peekable();
    let last = loop {
        let Some(part) = parts.next() else {
            // Only slashes: the root itself.
            return Err(Errno::EEXIST);
        };
        if parts.peek().is_none() {
            break part;
        }
        dir = match part {
            "." => dir,
            ".." => dir.parent.clone().unwrap_or(dir),
            name => match tree.children_of(dir.id).and_then(|c| c.get(name)) {
                Some(child) => child.clone(),
                None if dir_is_file(&dir, name) => return Err(Errno::ENOTDIR),
                None => return Err(Errno::ENOENT),
            },
        };
    };
    if last == "." || last == ".." {
        return Err(Errno::EEXIST);
    }
    Ok((dir, last))
}

/// `cgroup_mkdir`'s own check of the new name, after the walk found it free.
pub(crate) fn check_new_name(name: &str) -> Result<(), Errno> {
    match name.contains('\n') {
        true => Err(Errno::EINVAL),
        false => Ok(()),
    }
}
