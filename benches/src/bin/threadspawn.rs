//! `threadspawn`: will-it-scale's `threadspawn1` for uproc. See the package README and
//! `threadspawn --help`.

use clap::Parser;
use std::process::{Command, ExitCode};
use uproc_benches::args::Options;
use uproc_benches::memory::measure_memory;
use uproc_benches::threadspawn::measure_all;

fn main() -> ExitCode {
    uproc_benches::init_tracing();
    let opts = Options::parse(); // exits 2 on a bad command line, 0 after --help
    if opts.memory {
        return memory(&opts);
    }
    let (report, problems) = measure_all(&opts);
    print!(
        "{}",
        if opts.json {
            report.json_lines()
        } else {
            report.table()
        }
    );
    if let Some(path) = &opts.plot {
        match uproc_benches::plot::draw(&report, path) {
            Ok(()) => eprintln!("threadspawn: chart written to {}", path.display()),
            Err(e) => {
                eprintln!("threadspawn: --plot {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        }
    }
    for p in &problems.0 {
        eprintln!("threadspawn: FAILED: {p}");
    }
    if problems.0.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Memory mode. One profile is measured in this process; several are measured each in
/// a fresh child process of this binary, since freed memory stays in the allocator and
/// would make the second profile read low.
fn memory(opts: &Options) -> ExitCode {
    if let [profile] = opts.profile_list()[..] {
        eprintln!(
            "threadspawn: memory: {} live tasks under {profile} ...",
            opts.count
        );
        return match measure_memory(profile, opts.count) {
            Ok(m) => {
                println!("{}", if opts.json { m.json() } else { m.line() });
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("threadspawn: memory: {profile}: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let mut ok = true;
    for p in opts.profile_list() {
        let exe = std::env::current_exe();
        let status = exe.and_then(|exe| {
            let mut cmd = Command::new(exe);
            cmd.args([
                "--memory",
                "--profile",
                p.name(),
                "--count",
                &opts.count.to_string(),
            ]);
            cmd.args(opts.json.then_some("--json")).status()
        });
        if !status.as_ref().is_ok_and(|s| s.success()) {
            eprintln!("threadspawn: memory: {p}: child failed: {status:?}");
            ok = false;
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
