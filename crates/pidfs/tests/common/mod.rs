//! A fake task list for pidfs tests: per-pid task state the test flips by hand, plus
//! helpers that call pidfs the way tasklist does (exit -> do_notify_pidfd; reap ->
//! pidfs_exit, detach, free_pid).
#![allow(dead_code, unreachable_pub)]

use parking_lot::Mutex;
use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;
use uproc_abi::{Errno, PidfdFlags, Profile, Signal, WaitStatus};
use uproc_pidfs::{
    FileHandle, PidFd, PidTaskState, PidfdBackend, Pidfs, SignalScope, TaskIds, do_notify_pidfd,
    pidfs_exit,
};
use uproc_pidns::{Pid, PidMap, PidNamespace, alloc_pid, free_pid};

/// The fake task attached to one pid (keyed by ino).
#[derive(Clone, Debug)]
pub struct FakeTask {
    pub state: PidTaskState,
    pub leader: Option<Arc<Pid>>,
    pub parent: Option<Arc<Pid>>,
    pub cgroupid: u64,
    /// Report tgid 0 (as for a task whose group the viewer cannot see).
    pub hide_tgid: bool,
}

type Hook = Box<dyn Fn(&Pid) + Send + Sync>;

#[derive(Default)]
pub struct Fake {
    pub tasks: Mutex<HashMap<u64, FakeTask>>,
    pub signals: Mutex<Vec<(u64, Signal, SignalScope)>>,
    /// Runs inside `task_state` (no pidfs lock held), to stage races.
    pub on_task_state: Mutex<Option<Hook>>,
}

impl PidfdBackend for Fake {
    fn task_state(&self, pid: &Pid) -> PidTaskState {
        if let Some(h) = self.on_task_state.lock().take() {
            h(pid);
        }
        self.tasks
            .lock()
            .get(&pid.ino())
            .map(|t| t.state)
            .unwrap_or_default()
    }

    /// Records the signal; SIGKILL to a running task makes it exit (and notifies
    /// pidfs after the fake's lock is released, as tasklist would).
    fn send_signal(
        &self,
        pid: &Arc<Pid>,
        sig: Signal,
        scope: SignalScope,
        _from: &PidNamespace,
    ) -> Result<(), Errno> {
        let killed = {
            let mut tasks = self.tasks.lock();
            let Some(t) = tasks.get_mut(&pid.ino()).filter(|t| t.state.attached) else {
                return Err(Errno::ESRCH);
            };
            if sig == Signal::KILL && t.state.exit_status.is_none() {
                let st = WaitStatus::signaled_by(Signal::KILL, false);
                t.state.exited = true;
                t.state.exit_status = Some(st);
                Some(st)
            } else {
                None
            }
        };
        self.signals.lock().push((pid.ino(), sig, scope));
        if let Some(st) = killed {
            do_notify_pidfd(pid, st);
        }
        Ok(())
    }

    fn task_ids(&self, pid: &Pid, viewer: &PidNamespace) -> Option<TaskIds> {
        let t = self.tasks.lock().get(&pid.ino())?.clone();
        if !t.state.attached {
            return None;
        }
        let tgid = match (&t.leader, t.hide_tgid) {
            (_, true) => 0,
            (Some(l), false) => l.nr_in(viewer),
            (None, false) => pid.nr_in(viewer),
        };
        Some(TaskIds {
            pid: pid.nr_in(viewer),
            tgid,
            ppid: t.parent.as_ref().map_or(0, |p| p.nr_in(viewer)),
            cgroupid: t.cgroupid,
        })
    }
}

/// One runtime: map, root namespace, pidfs, fake task list.
pub struct World {
    pub map: Arc<PidMap>,
    pub root: Arc<PidNamespace>,
    pub pidfs: Arc<Pidfs>,
    pub fake: Arc<Fake>,
    init_obj: Arc<dyn Any + Send + Sync>,
}

impl World {
    pub fn new(profile: Profile) -> World {
        let map = PidMap::new(profile);
        let pidfs = Pidfs::new(&map);
        let root = PidNamespace::new_root(&map, uproc_pidns::PID_MAX_DEFAULT).unwrap();
        let fake = Arc::new(Fake::default());
        let backend: Arc<dyn PidfdBackend> = fake.clone();
        pidfs.set_backend(Arc::downgrade(&backend));
        World {
            map,
            root,
            pidfs,
            fake,
            init_obj: Arc::new(()),
        }
    }

    /// A bare pid in `ns` (no task attached). Installs a child reaper after the first.
    pub fn alloc_in(&self, ns: &Arc<PidNamespace>) -> Arc<Pid> {
        let pid = alloc_pid(ns, &[], false).expect("alloc_pid");
        self.ensure_reaper(ns);
        pid
    }

    pub fn ensure_reaper(&self, ns: &Arc<PidNamespace>) {
        if !ns.has_child_reaper() {
            ns.set_child_reaper(Some(Arc::downgrade(&self.init_obj)));
        }
    }

    /// A new thread-group leader in `ns`, attached, child of `parent`.
    pub fn spawn_in(&self, ns: &Arc<PidNamespace>, parent: Option<&Arc<Pid>>) -> Arc<Pid> {
        let pid = self.alloc_in(ns);
        self.attach(&pid, None, parent);
        pid
    }

    /// A new leader in the root namespace.
    pub fn spawn(&self) -> Arc<Pid> {
        self.spawn_in(&self.root.clone(), None)
    }

    /// A new non-leader thread of `leader`'s group.
    pub fn spawn_thread(&self, leader: &Arc<Pid>) -> Arc<Pid> {
        let pid = self.alloc_in(&leader.ns().clone());
        self.attach(&pid, Some(leader), None);
        pid
    }

    pub fn attach(&self, pid: &Arc<Pid>, leader: Option<&Arc<Pid>>, parent: Option<&Arc<Pid>>) {
        self.fake.tasks.lock().insert(
            pid.ino(),
            FakeTask {
                state: PidTaskState {
                    attached: true,
                    group_leader: leader.is_none(),
                    exited: false,
                    exit_status: None,
                },
                leader: leader.cloned(),
                parent: parent.cloned(),
                cgroupid: 7,
                hide_tgid: false,
            },
        );
    }

    pub fn with_task(&self, pid: &Pid, f: impl FnOnce(&mut FakeTask)) {
        f(self
            .fake
            .tasks
            .lock()
            .get_mut(&pid.ino())
            .expect("task attached"));
    }

    /// The task exits (not a delayed leader): exit_state, then do_notify_pidfd.
    pub fn exit(&self, pid: &Pid, status: WaitStatus) {
        self.with_task(pid, |t| {
            t.state.exited = true;
            t.state.exit_status = Some(status);
        });
        do_notify_pidfd(pid, status);
    }

    /// A leader exits while its threads run: a zombie that is not readable yet.
    pub fn exit_delayed_leader(&self, pid: &Pid, status: WaitStatus) {
        self.with_task(pid, |t| t.state.exit_status = Some(status));
    }

    /// Reap: pidfs_exit, detach (as release_task), then free_pid.
    pub fn reap(&self, pid: &Arc<Pid>, status: WaitStatus, cgroupid: u64) {
        pidfs_exit(pid, status, cgroupid);
        self.fake.tasks.lock().remove(&pid.ino());
        free_pid(pid);
    }

    /// Exit then reap.
    /// A pidfd for `pid` (any level) viewed from the root namespace
    /// (`pidfd_prepare`: the checks of pidfd_open after the lookup), which must succeed.
    pub fn open(&self, pid: &Arc<Pid>) -> PidFd {
        self.pidfs
            .pidfd_prepare(&self.root, pid.clone(), PidfdFlags::empty())
            .expect("pidfd of a live task")
    }

    /// A `PIDFD_THREAD` pidfd for `pid` viewed from the root namespace, which must
    /// succeed.
    pub fn open_thread(&self, pid: &Arc<Pid>) -> PidFd {
        self.pidfs
            .pidfd_prepare(&self.root, pid.clone(), PidfdFlags::THREAD)
            .expect("PIDFD_THREAD pidfd of a live thread")
    }

    /// `open_by_handle_at(h, 0)` from the root namespace.
    pub fn open_handle(&self, h: &FileHandle) -> Result<PidFd, Errno> {
        self.pidfs
            .open_by_handle(&self.root, h, PidfdFlags::empty())
    }

    pub fn kill_and_reap(&self, pid: &Arc<Pid>, status: WaitStatus) {
        self.exit(pid, status);
        self.reap(pid, status, 7);
    }
}

pub fn both(f: impl Fn(Profile)) {
    for &p in Profile::ALL {
        f(p);
    }
}
