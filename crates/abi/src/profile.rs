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
///
/// A third profile, `Scalable` (no global lock on the hot path), is planned; it is not
/// offered until it exists, so nothing can silently measure one profile as another.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Profile {
    /// Linux before Dec 2025: `alloc_pid` takes `pidmap_lock` twice.
    Linux618,
    /// Linux 7.0: `alloc_pid` takes `pidmap_lock` once; pidfs index outside it.
    #[default]
    Linux70,
}

impl Profile {
    /// Every profile that exists, oldest first.
    pub const ALL: &'static [Profile] = &[Profile::Linux618, Profile::Linux70];

    /// The lower-case name used on command lines (`"linux70"`).
    pub fn name(self) -> &'static str {
        match self {
            Profile::Linux618 => "linux618",
            Profile::Linux70 => "linux70",
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
            "scalable" => Err(ParseProfileError(
                "profile `scalable` is not implemented yet (planned: no global lock on the hot path)".into(),
            )),
            other => Err(ParseProfileError(format!(
                "unknown profile `{other}` (expected linux618 or linux70)"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_refuses_scalable() {
        assert_eq!("linux618".parse::<Profile>(), Ok(Profile::Linux618));
        assert_eq!("Linux70".parse::<Profile>(), Ok(Profile::Linux70));
        assert!(
            "scalable"
                .parse::<Profile>()
                .unwrap_err()
                .to_string()
                .contains("not implemented")
        );
        assert!("bogus".parse::<Profile>().is_err());
        assert_eq!(Profile::default(), Profile::Linux70);
    }
}
