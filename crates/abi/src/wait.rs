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

    /// `WTERMSIG` if `WIFSIGNALED`.
    pub fn signaled(self) -> Option<Signal> {
        let sig = self.0 & 0x7f;
        (sig != 0 && sig != 0x7f).then(|| Signal::new(sig).expect("7-bit value is a signal"))
    }

    /// `WCOREDUMP`: killed and the core bit set.
    pub fn core_dumped(self) -> bool {
        self.signaled().is_some() && self.0 & 0x80 != 0
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
        } else if let Some(s) = self.signaled() {
            write!(
                f,
                "killed({s}{})",
                if self.core_dumped() {
                    ", core dumped"
                } else {
                    ""
                }
            )
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
