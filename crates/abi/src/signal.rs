//! `Signal`: signal numbers 0..=64 with libc's values.

use crate::Errno;
use core::fmt;

/// A signal number. `Signal(0)` is the existence probe of kill(2); 1..=64 are real
/// signals (31 standard, then the real-time range).
///
/// ```
/// use uproc_abi::{Errno, Signal};
/// assert_eq!(Signal::new(9), Ok(Signal::KILL));
/// assert_eq!(Signal::new(65), Err(Errno::EINVAL));
/// assert_eq!(Signal::KILL.to_string(), "SIGKILL");
/// ```
///
/// # References
/// [signal(7)](https://man7.org/linux/man-pages/man7/signal.7.html)
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Signal(i32);

/// The largest signal number Linux accepts (`_NSIG - 1`).
pub const SIGRTMAX: i32 = 64;

macro_rules! signals {
    ($($name:ident = $libc:ident,)*) => {
        impl Signal {
            $(
                #[doc = concat!("`", stringify!($libc), "`.")]
                pub const $name: Signal = Signal(libc::$libc);
            )*

            /// The symbolic name (`"SIGKILL"`), `"SIGRTMIN+n"` for real-time signals,
            /// `"0"` for the probe.
            pub fn name(self) -> std::borrow::Cow<'static, str> {
                match self.0 {
                    0 => "0".into(),
                    $(libc::$libc => stringify!($libc).into(),)*
                    n => format!("SIGRTMIN+{}", n - 32).into(),
                }
            }
        }
    };
}

signals! {
    HUP = SIGHUP,
    INT = SIGINT,
    QUIT = SIGQUIT,
    ILL = SIGILL,
    TRAP = SIGTRAP,
    ABRT = SIGABRT,
    BUS = SIGBUS,
    FPE = SIGFPE,
    KILL = SIGKILL,
    USR1 = SIGUSR1,
    SEGV = SIGSEGV,
    USR2 = SIGUSR2,
    PIPE = SIGPIPE,
    ALRM = SIGALRM,
    TERM = SIGTERM,
    STKFLT = SIGSTKFLT,
    CHLD = SIGCHLD,
    CONT = SIGCONT,
    STOP = SIGSTOP,
    TSTP = SIGTSTP,
    TTIN = SIGTTIN,
    TTOU = SIGTTOU,
    URG = SIGURG,
    XCPU = SIGXCPU,
    XFSZ = SIGXFSZ,
    VTALRM = SIGVTALRM,
    PROF = SIGPROF,
    WINCH = SIGWINCH,
    IO = SIGIO,
    PWR = SIGPWR,
    SYS = SIGSYS,
}

/// What a signal does when nobody handles it (signal(7) "Standard signals").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultAction {
    /// Terminate the process.
    Term,
    /// Terminate and dump core.
    Core,
    /// Ignore the signal.
    Ignore,
    /// Stop the process.
    Stop,
    /// Continue the process if it is stopped.
    Cont,
}

impl Signal {
    /// The existence probe of kill(2): permission and existence checks only.
    pub const PROBE: Signal = Signal(0);

    /// Validates a signal number: 0..=64, else `EINVAL` (what kill(2) returns for one
    /// once it has found a target; Linux looks the target up first, so `kill` of a pid
    /// that names nothing with signal 99 is ESRCH there, where with uproc's typed
    /// signal the EINVAL comes first, from here).
    pub fn new(n: i32) -> Result<Signal, Errno> {
        if (0..=SIGRTMAX).contains(&n) {
            Ok(Signal(n))
        } else {
            Err(Errno::EINVAL)
        }
    }

    /// The raw number.
    pub const fn raw(self) -> i32 {
        self.0
    }

    /// Whether this is the existence probe `0`.
    pub const fn is_probe(self) -> bool {
        self.0 == 0
    }

    /// SIGKILL and SIGSTOP can be neither caught, blocked nor ignored.
    pub const fn is_unblockable(self) -> bool {
        self.0 == libc::SIGKILL || self.0 == libc::SIGSTOP
    }

    /// The default disposition (`sig_kernel_*` in `include/linux/signal.h`).
    pub fn default_action(self) -> DefaultAction {
        match self.0 {
            libc::SIGCHLD | libc::SIGURG | libc::SIGWINCH => DefaultAction::Ignore,
            libc::SIGCONT => DefaultAction::Cont,
            libc::SIGSTOP | libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU => DefaultAction::Stop,
            libc::SIGQUIT
            | libc::SIGILL
            | libc::SIGTRAP
            | libc::SIGABRT
            | libc::SIGBUS
            | libc::SIGFPE
            | libc::SIGSEGV
            | libc::SIGXCPU
            | libc::SIGXFSZ
            | libc::SIGSYS => DefaultAction::Core,
            _ => DefaultAction::Term,
        }
    }

    /// Whether the default action is Core: kills and dumps core, where the process
    /// may (`RLIMIT_CORE` not zero; then its status has the 0x80 bit).
    pub fn dumps_core(self) -> bool {
        self.default_action() == DefaultAction::Core
    }

    /// A bit for this signal in a 64-bit signal set (`sigmask`); 0 for the probe.
    pub const fn mask(self) -> u64 {
        if self.0 == 0 { 0 } else { 1u64 << (self.0 - 1) }
    }
}

impl fmt::Debug for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.name(), self.0)
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// A set of signals (bit `n-1` for signal `n`), as `sigset_t` holds them.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SigSet(u64);

impl SigSet {
    /// The empty set.
    pub const EMPTY: SigSet = SigSet(0);

    /// Adds a signal (the probe adds nothing).
    pub fn insert(&mut self, sig: Signal) {
        self.0 |= sig.mask();
    }

    /// Removes a signal.
    pub fn remove(&mut self, sig: Signal) {
        self.0 &= !sig.mask();
    }

    /// Whether the signal is in the set.
    pub fn contains(self, sig: Signal) -> bool {
        sig.mask() != 0 && self.0 & sig.mask() != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The raw bits.
    pub fn bits(self) -> u64 {
        self.0
    }

    /// The members, lowest number first.
    pub fn iter(self) -> impl Iterator<Item = Signal> {
        (1..=SIGRTMAX)
            .map(Signal)
            .filter(move |s| self.contains(*s))
    }
}

impl fmt::Debug for SigSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_range() {
        assert!(Signal::new(-1).is_err());
        assert!(Signal::new(0).unwrap().is_probe());
        assert_eq!(Signal::new(64).unwrap().raw(), 64);
        assert_eq!(Signal::new(64).unwrap().name(), "SIGRTMIN+32");
    }

    #[test]
    fn default_actions_match_signal_7() {
        assert_eq!(Signal::KILL.default_action(), DefaultAction::Term);
        assert_eq!(Signal::CHLD.default_action(), DefaultAction::Ignore);
        assert_eq!(Signal::TSTP.default_action(), DefaultAction::Stop);
        assert!(Signal::ABRT.dumps_core());
        assert!(!Signal::TERM.dumps_core());
    }

    #[test]
    fn sigset_roundtrip() {
        let mut s = SigSet::EMPTY;
        s.insert(Signal::KILL);
        s.insert(Signal::new(64).unwrap());
        s.insert(Signal::PROBE);
        assert!(s.contains(Signal::KILL));
        assert_eq!(s.iter().count(), 2);
        s.remove(Signal::KILL);
        assert!(!s.contains(Signal::KILL));
    }
}
