//! `WaitStatus`: the wait(2) status word.

use crate::Signal;
use core::fmt;

/// The status word wait4(2) stores: exited `(code & 0xff) << 8`, killed `sig | 0x80 if
/// core dumped`, stopped `(sig << 8) | 0x7f`, continued `0xffff`.
///
/// ```
/// use uproc_abi::{Signal, WaitStatus};
/// let st = WaitStatus::exited_with(3);
/// assert_eq!(st.raw(), 0x300);
/// assert_eq!(st.exited(), Some(3));
/// assert_eq!(WaitStatus::signaled_by(Signal::KILL, false).signaled(), Some(Signal::KILL));
/// assert!(WaitStatus::CONTINUED.continued());
/// ```
///
/// # References
/// [wait(2)](https://man7.org/linux/man-pages/man2/wait.2.html), `WIFEXITED` and
/// friends in `<sys/wait.h>`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct WaitStatus(i32);

impl WaitStatus {
    /// The status of a continued child (`WIFCONTINUED`).
    pub const CONTINUED: WaitStatus = WaitStatus(0xffff);

    /// Wraps a raw status word.
    pub const fn from_raw(raw: i32) -> Self {
        WaitStatus(raw)
    }

    /// The raw status word.
    pub const fn raw(self) -> i32 {
        self.0
    }

    /// A normal exit with `code` (only the low 8 bits survive, as in Linux).
    pub const fn exited_with(code: i32) -> Self {
        WaitStatus((code & 0xff) << 8)
    }

    /// Death by `sig`, with the core-dump bit if `core`.
    pub const fn signaled_by(sig: Signal, core: bool) -> Self {
        WaitStatus((sig.raw() & 0x7f) | if core { 0x80 } else { 0 })
    }

    /// Stopped by `sig`.
    pub const fn stopped_by(sig: Signal) -> Self {
        WaitStatus(((sig.raw() & 0xff) << 8) | 0x7f)
    }

    /// `WEXITSTATUS` if `WIFEXITED`.
    pub fn exited(self) -> Option<i32> {
        (self.0 & 0x7f == 0).then_some((self.0 >> 8) & 0xff)
    }

    /// `WIFSIGNALED`: the low 7 bits are neither 0 (exited) nor 0x7f (stopped). True for
    /// every such word, including a signal field of 65..=126 that names no signal (a
    /// word built with [`from_raw`](Self::from_raw)); [`termsig`](Self::termsig) has
    /// the number then.
    pub fn is_signaled(self) -> bool {
        let sig = self.0 & 0x7f;
        sig != 0 && sig != 0x7f
    }

    /// `WTERMSIG` as a raw number if `WIFSIGNALED` (1..=126).
    pub fn termsig(self) -> Option<i32> {
        self.is_signaled().then_some(self.0 & 0x7f)
    }

    /// `WTERMSIG` as a [`Signal`] if `WIFSIGNALED` and the number is a signal (1..=64);
    /// `None` for a signal field of 65..=126, which only [`from_raw`](Self::from_raw)
    /// can produce (use [`is_signaled`](Self::is_signaled) / [`termsig`](Self::termsig)
    /// to see those).
    pub fn signaled(self) -> Option<Signal> {
        self.termsig().and_then(|n| Signal::new(n).ok())
    }

    /// `WCOREDUMP`: killed and the core bit set.
    pub fn core_dumped(self) -> bool {
        self.is_signaled() && self.0 & 0x80 != 0
    }

    /// `WSTOPSIG` if `WIFSTOPPED`.
    pub fn stopped(self) -> Option<Signal> {
        (self.0 & 0xff == 0x7f).then(|| Signal::new((self.0 >> 8) & 0xff).unwrap_or(Signal::STOP))
    }

    /// `WIFCONTINUED`.
    pub fn continued(self) -> bool {
        self.0 == 0xffff
    }
}

impl fmt::Debug for WaitStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for WaitStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(c) = self.exited() {
            write!(f, "exited({c})")
        } else if let Some(n) = self.termsig() {
            let core = if self.core_dumped() {
                ", core dumped"
            } else {
                ""
            };
            match Signal::new(n) {
                Ok(s) => write!(f, "killed({s}{core})"),
                Err(_) => write!(f, "killed(signal {n}{core})"),
            }
        } else if let Some(s) = self.stopped() {
            write!(f, "stopped({s})")
        } else if self.continued() {
            f.write_str("continued")
        } else {
            write!(f, "raw({:#x})", self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_libc_macros() {
        for raw in [0x0, 0x300, 0xff00, 0x9, 0x86, 0x137f, 0xffff] {
            let st = WaitStatus::from_raw(raw);
            assert_eq!(st.exited().is_some(), libc::WIFEXITED(raw), "{raw:#x}");
            assert_eq!(st.signaled().is_some(), libc::WIFSIGNALED(raw), "{raw:#x}");
            assert_eq!(st.stopped().is_some(), libc::WIFSTOPPED(raw), "{raw:#x}");
            assert_eq!(st.continued(), libc::WIFCONTINUED(raw), "{raw:#x}");
            if libc::WIFEXITED(raw) {
                assert_eq!(st.exited(), Some(libc::WEXITSTATUS(raw)));
            }
            if libc::WIFSIGNALED(raw) {
                assert_eq!(st.signaled().unwrap().raw(), libc::WTERMSIG(raw));
                assert_eq!(st.core_dumped(), libc::WCOREDUMP(raw));
            }
            if libc::WIFSTOPPED(raw) {
                assert_eq!(st.stopped().unwrap().raw(), libc::WSTOPSIG(raw));
            }
        }
    }

    /// Checks `st` against libc's macros and formats it (which must not panic).
    fn check_against_libc(raw: i32) {
        let st = WaitStatus::from_raw(raw);
        assert_eq!(st.exited().is_some(), libc::WIFEXITED(raw), "{raw:#x}");
        assert_eq!(st.is_signaled(), libc::WIFSIGNALED(raw), "{raw:#x}");
        assert_eq!(st.stopped().is_some(), libc::WIFSTOPPED(raw), "{raw:#x}");
        assert_eq!(st.continued(), libc::WIFCONTINUED(raw), "{raw:#x}");
        if libc::WIFSIGNALED(raw) {
            assert_eq!(st.termsig(), Some(libc::WTERMSIG(raw)), "{raw:#x}");
            assert_eq!(st.core_dumped(), libc::WCOREDUMP(raw), "{raw:#x}");
            assert_eq!(
                st.signaled().map(Signal::raw),
                (libc::WTERMSIG(raw) <= 64).then(|| libc::WTERMSIG(raw)),
                "{raw:#x}"
            );
        } else {
            assert_eq!(st.termsig(), None);
            assert_eq!(st.signaled(), None);
        }
        let shown = st.to_string();
        assert!(!shown.is_empty());
        let _ = format!("{st:?}");
    }

    #[test]
    fn from_raw_never_panics_for_any_signal_field() {
        // Every low 16 bits (exit code / stop signal byte, core bit, 7-bit signal
        // field), with each high half pattern that can matter.
        for high in [0, 0x1_0000, 0x7fff_0000u32 as i32, i32::MIN, -0x1_0000] {
            for low in 0..=0xffff {
                check_against_libc(high | low);
            }
        }
        // A stride over the whole i32 range.
        let mut raw = i32::MIN;
        while let Some(next) = raw.checked_add(65_521) {
            check_against_libc(raw);
            raw = next;
        }
        check_against_libc(i32::MAX);
        let odd = WaitStatus::from_raw(100 | 0x80);
        assert!(odd.is_signaled(), "libc: WIFSIGNALED(100) is true");
        assert_eq!(odd.termsig(), Some(100));
        assert_eq!(odd.signaled(), None, "100 names no Signal");
        assert_eq!(odd.to_string(), "killed(signal 100, core dumped)");
    }

    #[test]
    fn exit_code_keeps_low_byte() {
        assert_eq!(WaitStatus::exited_with(256 + 7).exited(), Some(7));
        assert_eq!(WaitStatus::signaled_by(Signal::ABRT, true).raw(), 6 | 0x80);
        assert_eq!(
            WaitStatus::stopped_by(Signal::STOP).stopped(),
            Some(Signal::STOP)
        );
    }
}
