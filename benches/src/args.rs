//! Command-line options of `threadspawn`, parsed by hand from `std::env::args`.
//!
//! Every value is checked here, so the measuring code never sees a nonsensical request;
//! a bad option is a [`UsageError`] that the binary prints with the usage text and turns
//! into exit status 2.

use core::fmt;
use uproc_abi::{ParseProfileError, Profile};

/// What a measured task does between fork and exit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Body {
    /// Bookkeeping only: `Task::fork`, `Task::exit`, `Task::wait`, nothing runs.
    None,
    /// `Runtime::spawn` with an empty body on the thread executor, then `Child::wait`.
    Thread,
    /// `Runtime::spawn_async` with an empty body on a tokio multi-thread runtime, awaited.
    Tokio,
}

impl Body {
    /// The name used on the command line and in the table.
    pub fn name(self) -> &'static str {
        match self {
            Body::None => "none",
            Body::Thread => "thread",
            Body::Tokio => "tokio",
        }
    }

    fn parse(s: &str) -> Result<Body, UsageError> {
        match s {
            "none" => Ok(Body::None),
            "thread" => Ok(Body::Thread),
            "tokio" => Ok(Body::Tokio),
            other => Err(UsageError(format!(
                "unknown body `{other}` (expected none, thread or tokio)"
            ))),
        }
    }
}

/// Everything `threadspawn` was asked to do.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Profiles to measure, in the order given (`all` = [`Profile::ALL`]).
    pub profiles: Vec<Profile>,
    /// Worker counts, ascending, without duplicates.
    pub workers: Vec<usize>,
    /// Length of one measured run.
    pub seconds: f64,
    /// Runs per (subject, worker count); the table shows their median.
    pub repeats: usize,
    /// Depth of the pid namespace the workers' parents live in (0 = the root namespace).
    pub levels: u32,
    /// `CLONE_PIDFD` on every fork.
    pub pidfd: bool,
    /// The workers' parents (and so their children) live in a cgroup with a `pids.max`.
    pub cgroup: bool,
    /// Bodies to measure (one table row per profile and body).
    pub bodies: Vec<Body>,
    /// Also measure std::thread, tokio and pthread spawn+join in the same run.
    pub peers: bool,
    /// Print JSON lines on stdout instead of the table.
    pub json: bool,
    /// Memory mode: bytes per live task instead of throughput.
    pub memory: bool,
    /// Live tasks held in memory mode.
    pub count: usize,
}

/// A rejected command line; the message says which option and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// What `--help` prints.
pub const USAGE: &str = "\
usage: threadspawn [options]
  N workers each loop { fork a child from its own parent task; the child exits; the
  parent reaps } for a fixed time, per lock profile, beside the same loop on
  std::thread, tokio and pthread_create+pthread_join.

  --profile P     linux618 | linux70 | scalable | all (default all; comma lists allowed).
  --workers LIST  worker counts, e.g. 1,2,4 (default 1,2 and nproc if larger)
  --seconds F     length of one run (default 2)
  --repeats N     runs per row; the table shows the median and min-max (default 3)
  --levels N      the workers' parents live in a pid namespace N levels deep (default 0)
  --pidfd         CLONE_PIDFD on every fork
  --cgroup        parents and children in a cgroup with a (non-binding) pids.max
  --body B        none | thread | tokio, or a comma list (default none)
  --peers         measure std::thread, tokio and pthread peers (default)
  --no-peers      do not
  --json          JSON lines on stdout instead of the table
  --memory        memory mode: bytes per live task, per profile
  --count N       live tasks in memory mode (default 1000000)
  --help          this text

exit status: 0 ok; 1 a life cycle failed or a lock count per life cycle was not the
expected one (body none); 2 bad command line.";

fn default_workers() -> Vec<usize> {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut w = vec![1, 2];
    if n > 2 {
        w.push(n);
    }
    w
}

fn parse_profiles(s: &str) -> Result<Vec<Profile>, UsageError> {
    let mut out = Vec::new();
    for part in s.split(',') {
        if part.eq_ignore_ascii_case("all") {
            out.extend_from_slice(Profile::ALL);
            continue;
        }
        let p: Profile = part
            .parse()
            .map_err(|e: ParseProfileError| UsageError(format!("--profile: {e}")))?;
        out.push(p);
    }
    let mut seen = Vec::new();
    out.retain(|p| {
        if seen.contains(p) {
            false
        } else {
            seen.push(*p);
            true
        }
    });
    Ok(out)
}

fn parse_num<T: core::str::FromStr>(opt: &str, v: &str) -> Result<T, UsageError> {
    v.parse()
        .map_err(|_| UsageError(format!("{opt}: `{v}` is not a valid number")))
}

impl Options {
    /// Parses the arguments after the program name.
    ///
    /// Returns `Ok(None)` for `--help`.
    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Option<Options>, UsageError> {
        let mut o = Options {
            profiles: Profile::ALL.to_vec(),
            workers: default_workers(),
            seconds: 2.0,
            repeats: 3,
            levels: 0,
            pidfd: false,
            cgroup: false,
            bodies: vec![Body::None],
            peers: true,
            json: false,
            memory: false,
            count: 1_000_000,
        };
        let mut it = args.into_iter();
        while let Some(arg) = it.next() {
            // Accept both `--opt value` and `--opt=value`.
            let (name, inline) = match arg.split_once('=') {
                Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
                _ => (arg.clone(), None),
            };
            let mut value = |name: &str| -> Result<String, UsageError> {
                match inline.clone().or_else(|| it.next()) {
                    Some(v) => Ok(v),
                    None => Err(UsageError(format!("{name} needs a value"))),
                }
            };
            match name.as_str() {
                "--help" | "-h" => return Ok(None),
                "--profile" => o.profiles = parse_profiles(&value("--profile")?)?,
                "--workers" => {
                    let v = value("--workers")?;
                    let mut w = Vec::new();
                    for part in v.split(',') {
                        let n: usize = parse_num("--workers", part)?;
                        if n == 0 || n > 1024 {
                            return Err(UsageError(format!(
                                "--workers: {n} is out of range 1..=1024"
                            )));
                        }
                        w.push(n);
                    }
                    w.sort_unstable();
                    w.dedup();
                    o.workers = w;
                }
                "--seconds" => {
                    let s: f64 = parse_num("--seconds", &value("--seconds")?)?;
                    if !(s > 0.0 && s <= 3600.0) {
                        return Err(UsageError(format!(
                            "--seconds: {s} is out of range (0, 3600]"
                        )));
                    }
                    o.seconds = s;
                }
                "--repeats" => {
                    let n: usize = parse_num("--repeats", &value("--repeats")?)?;
                    if n == 0 || n > 1000 {
                        return Err(UsageError(format!(
                            "--repeats: {n} is out of range 1..=1000"
                        )));
                    }
                    o.repeats = n;
                }
                "--levels" => {
                    let n: u32 = parse_num("--levels", &value("--levels")?)?;
                    // The children are created at the parents' level; Linux's deepest
                    // level is 32 (MAX_PID_NS_LEVEL).
                    if n > uproc_pidns::MAX_PID_NS_LEVEL {
                        return Err(UsageError(format!(
                            "--levels: {n} is deeper than MAX_PID_NS_LEVEL ({})",
                            uproc_pidns::MAX_PID_NS_LEVEL
                        )));
                    }
                    o.levels = n;
                }
                "--body" => {
                    let v = value("--body")?;
                    let mut b = Vec::new();
                    for part in v.split(',') {
                        let body = Body::parse(part)?;
                        if !b.contains(&body) {
                            b.push(body);
                        }
                    }
                    o.bodies = b;
                }
                "--count" => {
                    let n: usize = parse_num("--count", &value("--count")?)?;
                    let max = uproc_pidns::PID_MAX_LIMIT as usize - 400;
                    if n == 0 || n > max {
                        return Err(UsageError(format!(
                            "--count: {n} is out of range 1..={max}"
                        )));
                    }
                    o.count = n;
                }
                "--pidfd" | "--cgroup" | "--peers" | "--no-peers" | "--json" | "--memory"
                    if inline.is_some() =>
                {
                    return Err(UsageError(format!("{name} takes no value")));
                }
                "--pidfd" => o.pidfd = true,
                "--cgroup" => o.cgroup = true,
                "--peers" => o.peers = true,
                "--no-peers" => o.peers = false,
                "--json" => o.json = true,
                "--memory" => o.memory = true,
                other => return Err(UsageError(format!("unknown option `{other}`"))),
            }
        }
        Ok(Some(o))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Option<Options>, UsageError> {
        Options::parse(s.split_whitespace().map(String::from))
    }

    #[test]
    fn all_means_every_existing_profile() {
        let o = parse("--profile all").unwrap().unwrap();
        assert_eq!(o.profiles, Profile::ALL.to_vec());
        let o = parse("--profile linux70").unwrap().unwrap();
        assert_eq!(o.profiles, vec![Profile::Linux70]);
    }

    #[test]
    fn scalable_is_accepted_and_unknown_names_refused() {
        let o = parse("--profile scalable").unwrap().unwrap();
        assert_eq!(o.profiles, vec![Profile::Scalable]);
        let e = parse("--profile linux70,bogus").unwrap_err();
        assert!(
            e.0.contains("expected linux618, linux70 or scalable"),
            "{e}"
        );
    }

    #[test]
    fn values_are_checked() {
        assert!(parse("--workers 0").is_err());
        assert!(parse("--workers 1,x").is_err());
        assert!(parse("--seconds 0").is_err());
        assert!(parse("--seconds -1").is_err());
        assert!(parse("--repeats 0").is_err());
        assert!(parse("--levels 33").is_err());
        assert!(parse("--body fibre").is_err());
        assert!(parse("--bogus").is_err());
        assert!(parse("--seconds").is_err());
        assert!(parse("--json=1").is_err());
    }

    #[test]
    fn lists_and_flags_parse() {
        let o = parse("--workers 4,1,2,2 --seconds=0.5 --repeats 1 --levels 2 --pidfd --cgroup --body none,tokio --no-peers --json")
            .unwrap()
            .unwrap();
        assert_eq!(o.workers, vec![1, 2, 4]);
        assert_eq!(o.seconds, 0.5);
        assert_eq!(o.repeats, 1);
        assert_eq!(o.levels, 2);
        assert!(o.pidfd && o.cgroup && o.json && !o.peers);
        assert_eq!(o.bodies, vec![Body::None, Body::Tokio]);
        assert_eq!(parse("--help").unwrap(), None);
    }
}
