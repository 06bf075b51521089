//! The command line of `threadspawn` (clap derive): every option with its default and
//! allowed values in `--help`; a bad value exits 2 with clap's message.

use crate::dedup;
use clap::builder::TypedValueParser as _;
use clap::{Parser, ValueEnum};
use serde::Serialize;
use uproc_abi::Profile;

/// What a measured task does between fork and exit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Body {
    /// Bookkeeping only: Task::fork, Task::exit, Task::wait; nothing runs.
    None,
    /// Runtime::spawn of an empty body on the thread executor, then Child::wait.
    Thread,
    /// Runtime::spawn_async of an empty body on a tokio multi-thread runtime, awaited.
    Tokio,
}

impl Body {
    /// The name used on the command line (clap's, from the variant) and in the table.
    pub fn name(self) -> String {
        let value = self.to_possible_value().expect("no body is skipped");
        value.get_name().to_string()
    }
}

/// `all` and every existing profile's name, so `--help` lists exactly what exists; each
/// value parses to the profiles it names (`all`: every one in [`Profile::ALL`]).
fn profile_parser() -> impl clap::builder::TypedValueParser<Value = &'static [Profile]> {
    let names = std::iter::once("all").chain(Profile::ALL.iter().map(|p| p.name()));
    clap::builder::PossibleValuesParser::new(names).map(|s| {
        let one = Profile::ALL.iter().position(|p| p.name() == s);
        one.map_or(Profile::ALL, |i| &Profile::ALL[i..=i])
    })
}

fn default_workers() -> &'static str {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    if n > 2 {
        format!("1,2,{n}").leak()
    } else {
        "1,2"
    }
}

fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 3600.0 => Ok(v),
        _ => Err(format!("`{s}` is not a number of seconds in (0, 3600]")),
    }
}

/// The most live tasks memory mode holds: `pid_max` at its limit, less room for init.
const MAX_COUNT: u64 = uproc_pidns::PID_MAX_LIMIT as u64 - 400;

/// N workers each loop { fork a child from its own parent task; the child exits; the
/// parent reaps } for a fixed time, per lock profile, beside the same loop on
/// std::thread, tokio and pthread_create+pthread_join; then the lock budget (hold time
/// per life cycle of each global lock), the ceilings it imposes, and a model's
/// prediction for 1..64 workers.
///
/// Exit status: 0 ok; 1 a life cycle failed, or (body none) a lock count per life
/// cycle was not the expected one; 2 bad command line.
#[derive(Clone, Debug, PartialEq, Parser)]
#[command(name = "threadspawn", version)]
pub struct Options {
    /// Profiles to measure, comma-separated; `all` is every profile that exists
    #[arg(long = "profile", default_value = "all", value_parser = profile_parser(),
          value_delimiter = ',', num_args = 1.., action = clap::ArgAction::Set)]
    pub profiles: Vec<&'static [Profile]>,
    /// Worker counts, comma-separated, each in 1..=1024 (default: 1, 2 and nproc if larger)
    #[arg(long, default_value = default_workers(), value_delimiter = ',', num_args = 1..,
          value_parser = clap::value_parser!(u16).range(1..=1024), action = clap::ArgAction::Set)]
    pub workers: Vec<u16>,
    /// Length of one measured run, seconds, in (0, 3600]
    #[arg(long, default_value = "2", value_parser = seconds)]
    pub seconds: f64,
    /// Runs per (subject, worker count); the table shows their median and min-max
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub repeats: u16,
    /// How each fork is made.
    #[command(flatten)]
    pub shape: crate::load::ForkShape,
    /// Bodies to measure, comma-separated
    #[arg(long = "body", value_enum, default_value = "none", value_delimiter = ',',
          num_args = 1.., action = clap::ArgAction::Set)]
    pub bodies: Vec<Body>,
    /// Do not measure the peers (pthread, std::thread, tokio); `--peers` is the default
    #[arg(long = "no-peers", action = clap::ArgAction::SetFalse, overrides_with = "with_peers")]
    pub peers: bool,
    /// Measure the peers (the default)
    #[arg(long = "peers", overrides_with = "peers")]
    pub with_peers: bool,
    /// Time one exclusive lock acquisition in N on average (random gaps); 0 = counts only
    #[arg(long, default_value_t = uproc_abi::lockstat::DEFAULT_SAMPLE_ONE_IN)]
    pub sample_one_in: u64,
    /// Largest worker count the prediction covers
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..=4096))]
    pub predict_to: u16,
    /// Also draw the results as an SVG chart into FILE
    #[arg(long, value_name = "FILE")]
    pub plot: Option<std::path::PathBuf>,
    /// JSON lines on stdout instead of the tables
    #[arg(long)]
    pub json: bool,
    /// Memory mode: bytes per live task, per profile (each in a fresh process)
    #[arg(long)]
    pub memory: bool,
    /// Live tasks held in memory mode
    #[arg(long, default_value = "1000000",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=MAX_COUNT))]
    pub count: usize,
}

impl Options {
    /// The profiles, `all` expanded, without repeats, in the order given.
    pub fn profile_list(&self) -> Vec<Profile> {
        dedup(self.profiles.iter().flat_map(|p| p.iter().copied()))
    }

    /// The worker counts, ascending, without repeats.
    pub fn worker_list(&self) -> Vec<usize> {
        let mut w = dedup(self.workers.iter().map(|&n| usize::from(n)));
        w.sort_unstable();
        w
    }

    /// The bodies without repeats, in the order given.
    pub fn body_list(&self) -> Vec<Body> {
        dedup(self.bodies.iter().copied())
    }
}
