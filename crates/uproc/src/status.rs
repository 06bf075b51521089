//! `StatusSlot`: the exit status of a reaped task, recorded once for every handle.
//!
//! The first reap (`Child::wait`, `try_wait`, `.await`, or the detached reap) records
//! the status; later calls, on any thread, return that one. One atomic word: the raw
//! status in the low half, a set bit above it; `compare_exchange` from 0 decides the
//! first record. `tests/loom_status.rs` checks that racing records agree; the items
//! are `pub` only so that test can reach them through `loom_model` (a `cfg(loom)`
//! build).
#![cfg_attr(not(loom), allow(unreachable_pub))]

use crate::sync::{AtomicU64, Ordering};
use uproc_abi::WaitStatus;

/// The status of a reaped task, set once: the first status recorded wins and every
/// later read returns it. One atomic word (a set bit above the raw status) rather than
/// a `OnceLock`, whose `Once` costs a call and a state machine on every reap.
#[derive(Debug, Default)]
pub struct StatusSlot(AtomicU64);

impl StatusSlot {
    const SET: u64 = 1 << 32;

    fn encode(s: WaitStatus) -> u64 {
        Self::SET | u64::from(s.raw() as u32)
    }

    fn decode(word: u64) -> Option<WaitStatus> {
        (word & Self::SET != 0).then(|| WaitStatus::from_raw(word as u32 as i32))
    }

    /// The recorded status, if any.
    pub fn get(&self) -> Option<WaitStatus> {
        Self::decode(self.0.load(Ordering::Acquire))
    }

    /// Records `s` unless a status is recorded already; returns the recorded one.
    pub fn set_once(&self, s: WaitStatus) -> WaitStatus {
        match self
            .0
            .compare_exchange(0, Self::encode(s), Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => s,
            Err(first) => Self::decode(first).unwrap_or(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::StatusSlot;
    use uproc_abi::{Signal, WaitStatus};

    #[test]
    fn the_status_slot_keeps_the_first_status_it_is_given() {
        let slot = StatusSlot::default();
        assert_eq!(slot.get(), None);
        let exited = WaitStatus::exited_with(0);
        assert_eq!(slot.set_once(exited), exited);
        assert_eq!(
            slot.get(),
            Some(exited),
            "status 0 is a status, not 'unset'"
        );
        let killed = WaitStatus::signaled_by(Signal::KILL, false);
        assert_eq!(
            slot.set_once(killed),
            exited,
            "a second record changes nothing"
        );
        assert_eq!(slot.get(), Some(exited));
        let odd = StatusSlot::default();
        let raw = WaitStatus::from_raw(-1);
        assert_eq!(odd.set_once(raw), raw, "every raw value round-trips");
        assert_eq!(odd.get(), Some(raw));
    }
}
