//! Loom model of the handshake between the first pidfd open and `pidfs_exit` on
//! `Pid::pidfs_flags` (crates/pidfs/src/state.rs, "Race rule"): the opener creates the
//! slot, then `fetch_or(OPENED)`; the reaper does `fetch_or(DEAD)`, then looks at the
//! slot if a load of the flags after its mark shows `OPENED` (an opener whose
//! `fetch_or` comes later sees `DEAD` and fails, so no slot needs reading). Whatever the interleaving, either the open fails (it saw DEAD) or the reaper
//! sees the opener's slot and records the exit info in it — an opened pidfd never misses
//! its exit info.
//!
//! The model restates the protocol with loom's primitives (the crate's own slot is a
//! `std::sync::OnceLock` inside `uproc_pidns::Pid`, which loom cannot instrument); keep it
//! in step with `PidState::get_or_create` and `pidfs_exit`.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p uproc-pidfs --test loom_dead_flag --release`
#![cfg(loom)]

use loom::sync::atomic::{AtomicU8, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;

const DEAD: u8 = 1;
const OPENED: u8 = 2;

#[derive(Default)]
struct State {
    exit_recorded: bool,
}

struct ModelPid {
    flags: AtomicU8,
    /// The `OnceLock` slot: `None` until the first opener creates the state.
    slot: Mutex<Option<Arc<Mutex<State>>>>,
}

impl ModelPid {
    /// `PidState::get_or_create`.
    fn open(&self) -> Option<Arc<Mutex<State>>> {
        if self.flags.load(Ordering::Acquire) & DEAD != 0 {
            return None;
        }
        let state = self
            .slot
            .lock()
            .unwrap()
            .get_or_insert_with(Default::default)
            .clone();
        if self.flags.fetch_or(OPENED, Ordering::AcqRel) & DEAD != 0 {
            return None;
        }
        Some(state)
    }

    /// `pidfs_exit`: the slot is read only when a load after the mark shows OPENED.
    fn exit(&self) {
        self.flags.fetch_or(DEAD, Ordering::AcqRel);
        if self.flags.load(Ordering::Acquire) & OPENED == 0 {
            return;
        }
        let state = self.slot.lock().unwrap().clone();
        if let Some(s) = state {
            s.lock().unwrap().exit_recorded = true;
        }
    }
}

#[test]
fn an_opened_pidfd_never_misses_its_exit_info() {
    loom::model(|| {
        let pid = Arc::new(ModelPid {
            flags: AtomicU8::new(0),
            slot: Mutex::new(None),
        });
        let reaper = {
            let pid = pid.clone();
            thread::spawn(move || pid.exit())
        };
        let opened = pid.open();
        reaper.join().unwrap();
        if let Some(state) = opened {
            assert!(
                state.lock().unwrap().exit_recorded,
                "Linux: a pidfd created before pidfs_exit gets the exit info"
            );
        }
        assert!(
            pid.open().is_none(),
            "Linux: no pidfd for a pid after pidfs_exit"
        );
    });
}
