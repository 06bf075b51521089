//! `Profile`: which kernel's locking the life cycle imitates.

use core::fmt;
use core::str::FromStr;

/// The lock profile a runtime runs under. Every profile has the same observable
/// semantics; they differ only in which global locks the clone/exit path takes.
///
/// | profile | pidmap_lock per alloc | pidfs index | pid free | css_set_lock |
/// |---|---|---|---|---|
/// | `Linux618` | twice (reserve; publish + index) | ordered tree under pidmap_lock | under tasklist_lock | 3 per life cycle |
/// | `Linux70` | once, all levels | sharded hash, outside the lock | after tasklist_lock | 3 per life cycle |
/// | `Scalable` | none (per-thread batches; amortised refills) | sharded, per-thread ino batches | lock-free slot | 0 |
///
/// `Scalable` keeps every observable rule of `Linux70` except the order in which pid
/// numbers are handed out (least recently freed first, through per-thread batches).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Profile {
    /// Linux before Dec 2025: `alloc_pid` takes `pidmap_lock` twice.
    Linux618,
    /// Linux 7.0: `alloc_pid` takes `pidmap_lock` once; pidfs index outside it.
    #[default]
    Linux70,
    /// No global lock on the hot path: pid numbers and pidfs inode numbers from
    /// per-thread batches, lock-free lookup slots, per-level atomic cgroup charges.
    Scalable,
}

impl Profile {
    /// Every profile that exists, oldest first.
    pub const ALL: &'static [Profile] = &[Profile::Linux618, Profile::Linux70, Profile::Scalable];

    /// The lower-case name used on command lines (`"linux70"`).
    pub fn name(self) -> &'static str {
        match self {
            Profile::Linux618 => "linux618",
            Profile::Linux70 => "linux70",
            Profile::Scalable => "scalable",
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a profile name was not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseProfileError(String);

impl fmt::Display for ParseProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseProfileError {}

impl FromStr for Profile {
    type Err = ParseProfileError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "linux618" | "linux-6.18" | "618" => Ok(Profile::Linux618),
            "linux70" | "linux-7.0" | "70" => Ok(Profile::Linux70),
            "scalable" => Ok(Profile::Scalable),
            other => Err(ParseProfileError(format!(
                "unknown profile `{other}` (expected linux618, linux70 or scalable)"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_name() {
        assert_eq!("linux618".parse::<Profile>(), Ok(Profile::Linux618));
        assert_eq!("Linux70".parse::<Profile>(), Ok(Profile::Linux70));
        assert_eq!("scalable".parse::<Profile>(), Ok(Profile::Scalable));
        assert_eq!("SCALABLE".parse::<Profile>(), Ok(Profile::Scalable));
        for p in Profile::ALL {
            assert_eq!(p.name().parse::<Profile>(), Ok(*p));
        }
        let err = "bogus".parse::<Profile>().unwrap_err().to_string();
        assert!(
            err.contains("expected linux618, linux70 or scalable"),
            "{err}"
        );
        assert_eq!(Profile::default(), Profile::Linux70);
    }
}
