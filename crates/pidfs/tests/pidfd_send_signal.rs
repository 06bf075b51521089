//! pidfd_send_signal (mirrors selftests/pidfd/pidfd_test.c and pidfd_setns_test.c's
//! signal cases).

mod common;

use common::{World, both};
use std::sync::Arc;
use uproc_abi::{Errno, InfoMask, PidfdFlags, PidfdSignalFlags, Signal, WaitStatus};
use uproc_pidfs::SignalScope;
use uproc_pidns::alloc_pid;

fn last_signal(w: &World) -> (u64, Signal, SignalScope) {
    *w.fake
        .signals
        .lock()
        .last()
        .expect("a signal was delivered")
}

#[test]
fn default_scope_is_the_thread_group() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        fd.send_signal(Signal::USR1).unwrap();
        assert_eq!(
            last_signal(&w),
            (pid.ino(), Signal::USR1, SignalScope::ThreadGroup)
        );
    });
}

#[test]
fn thread_pidfd_defaults_to_the_thread() {
    both(|p| {
        let w = World::new(p);
        let leader = w.spawn();
        let t = w.spawn_thread(&leader);
        let fd = w.open_thread(&t);
        fd.send_signal(Signal::USR2).unwrap();
        assert_eq!(
            last_signal(&w),
            (t.ino(), Signal::USR2, SignalScope::Thread),
            "Linux: PIDFD_THREAD pidfd -> that thread"
        );
    });
}

#[test]
fn explicit_scope_overrides_the_default() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open_thread(&pid);
        for (flag, scope) in [
            (PidfdSignalFlags::THREAD, SignalScope::Thread),
            (PidfdSignalFlags::THREAD_GROUP, SignalScope::ThreadGroup),
            (PidfdSignalFlags::PROCESS_GROUP, SignalScope::ProcessGroup),
        ] {
            fd.send_signal_with(Signal::TERM, flag).unwrap();
            assert_eq!(last_signal(&w).2, scope);
        }
    });
}

#[test]
fn two_scopes_are_einval() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        for flags in [
            PidfdSignalFlags::THREAD | PidfdSignalFlags::THREAD_GROUP,
            PidfdSignalFlags::THREAD_GROUP | PidfdSignalFlags::PROCESS_GROUP,
            PidfdSignalFlags::all(),
        ] {
            assert_eq!(
                fd.send_signal_with(Signal::TERM, flags).unwrap_err(),
                Errno::EINVAL,
                "Linux: more than one scope -> EINVAL"
            );
        }
        assert!(
            w.fake.signals.lock().is_empty(),
            "nothing delivered on EINVAL"
        );
    });
}

#[test]
fn unknown_flag_bits_are_einval() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        let bad = PidfdSignalFlags::from_bits_retain(1 << 3);
        assert_eq!(
            fd.send_signal_with(Signal::TERM, bad).unwrap_err(),
            Errno::EINVAL
        );
        let bad = PidfdSignalFlags::THREAD | PidfdSignalFlags::from_bits_retain(1 << 8);
        assert_eq!(
            fd.send_signal_with(Signal::TERM, bad).unwrap_err(),
            Errno::EINVAL
        );
        assert!(w.fake.signals.lock().is_empty());
    });
}

#[test]
fn zombie_accepts_signals_silently() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        w.exit(&pid, WaitStatus::exited_with(0));
        assert_eq!(
            fd.send_signal(Signal::KILL),
            Ok(()),
            "Linux: a zombie still has its task attached"
        );
        assert_eq!(fd.send_signal(Signal::PROBE), Ok(()));
    });
}

#[test]
fn reaped_task_is_esrch() {
    both(|p| {
        let w = World::new(p);
        let pid = w.spawn();
        let fd = w.open(&pid);
        w.kill_and_reap(&pid, WaitStatus::exited_with(0));
        assert_eq!(
            fd.send_signal(Signal::TERM).unwrap_err(),
            Errno::ESRCH,
            "Linux: ESRCH only after reap"
        );
        assert_eq!(fd.send_signal(Signal::PROBE).unwrap_err(), Errno::ESRCH);
    });
}

#[test]
fn recycled_number_is_never_signalled_through_an_old_pidfd() {
    both(|p| {
        let w = World::new(p);
        w.spawn(); // init
        let old = w.spawn();
        let n = old.nr();
        let fd = w.pidfs.pidfd_open(&w.root, n, PidfdFlags::empty()).unwrap();
        let old_ino = fd.ino();
        w.kill_and_reap(&old, WaitStatus::exited_with(17));
        // A new task gets the same number.
        let new = alloc_pid(&w.root, &[n], true).expect("number N is free again");
        assert_eq!(new.nr(), n);
        w.attach(&new, None, None);
        assert_ne!(
            new.ino(),
            old_ino,
            "a later process that reuses the number has a different ino"
        );
        assert_eq!(
            fd.send_signal(Signal::KILL).unwrap_err(),
            Errno::ESRCH,
            "the old pidfd names the old struct pid"
        );
        assert!(
            w.fake.signals.lock().iter().all(|s| s.0 != new.ino()),
            "the new task got nothing"
        );
        let i = fd.info(InfoMask::EXIT).unwrap();
        assert_eq!(
            i.exit_code,
            WaitStatus::exited_with(17).raw(),
            "the old exit status"
        );
        assert_eq!(fd.info(InfoMask::PID).unwrap_err(), Errno::ESRCH);
        assert!(fd.poll().hangup);
        assert!(
            fd.wait_readable(std::time::Duration::ZERO),
            "waiting through the old pidfd sees the old exit"
        );
        assert_eq!(fd.exit_status(), Some(WaitStatus::exited_with(17)));
        let nfd = w.pidfs.pidfd_open(&w.root, n, PidfdFlags::empty()).unwrap();
        assert_ne!(nfd.ino(), fd.ino());
        assert!(!nfd.poll().readable);
        assert!(!Arc::ptr_eq(nfd.pid(), fd.pid()));
        w.kill_and_reap(&new, WaitStatus::exited_with(0));
    });
}
