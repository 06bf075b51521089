//! `pids_cycles PROFILE N`: N life cycles (can_fork, post_fork, task_dead, release) of
//! children of one task in `/a/b`, where `a` has a `pids.max`: what the pids charge and
//! uncharge cost per life cycle, for instruction counting (the task list's
//! `lifecycles` runs in the root cgroup, which keeps no pids counter):
//!
//! ```sh
//! cargo build --release -p uproc-cgroup --example pids_cycles
//! for n in 10000 20000; do
//!   valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/pids_cycles scalable $n 2>&1 | grep refs
//! done   # (refs at 20000 - refs at 10000) / 10000 = instructions per life cycle
//! ```

use std::sync::{Arc, Weak};

use uproc_abi::Profile;
use uproc_cgroup::{CgroupMember, Hierarchy};

/// A task as the cgroup code sees it.
struct Task(i32);

impl CgroupMember for Task {
    fn tgid(&self) -> i32 {
        self.0
    }
    fn is_group_leader(&self) -> bool {
        true
    }
    fn kill(&self) {}
}

fn main() {
    let mut args = std::env::args().skip(1);
    let profile: Option<Profile> = args.next().and_then(|p| p.parse().ok());
    let n: Option<i32> = args.next().and_then(|n| n.parse().ok());
    let (Some(profile), Some(n)) = (profile, n) else {
        eprintln!("usage: pids_cycles linux618|linux70|scalable N");
        std::process::exit(2);
    };
    let h = Hierarchy::new(profile);
    let a = h.root().mkdir("a").expect("mkdir a");
    a.write("pids.max", "16").expect("pids.max");
    let b = a.mkdir("b").expect("mkdir b");
    let parent: Arc<dyn CgroupMember> = Arc::new(Task(1));
    let parent_link = b
        .can_fork()
        .expect("room")
        .post_fork(Arc::downgrade(&parent))
        .link;
    for i in 0..n {
        let child: Arc<dyn CgroupMember> = Arc::new(Task(i + 2));
        let charge = parent_link.can_fork().expect("pids.max is never reached");
        let link = charge.post_fork(Weak::clone(&Arc::downgrade(&child))).link;
        link.task_dead();
        link.release();
    }
    assert_eq!(b.pids_current(), 1, "only the parent is charged");
    parent_link.task_dead();
    parent_link.release();
}
