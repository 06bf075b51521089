//! `threadspawn`: will-it-scale's `threadspawn1` for uproc. See the package README and
//! `threadspawn --help`.

use std::process::ExitCode;
use uproc_benches::args::{Options, USAGE};
use uproc_benches::memory::{MemoryOutcome, measure_memory};
use uproc_benches::threadspawn::measure_all;

fn main() -> ExitCode {
    let opts = match Options::parse(std::env::args().skip(1)) {
        Ok(Some(o)) => o,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("threadspawn: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if opts.memory {
        return memory(&opts);
    }
    let (report, problems) = measure_all(&opts, &mut |line| eprintln!("{line}"));
    if opts.json {
        print!("{}", report.json_lines());
    } else {
        print!("{}", report.table());
    }
    if problems.0.is_empty() {
        ExitCode::SUCCESS
    } else {
        for p in &problems.0 {
            eprintln!("threadspawn: FAILED: {p}");
        }
        ExitCode::FAILURE
    }
}

/// Memory mode. One profile is measured in this process; several are measured each in
/// a fresh child process of this binary, since freed memory stays in the allocator and
/// would make the second profile read low.
fn memory(opts: &uproc_benches::args::Options) -> ExitCode {
    if let [profile] = opts.profiles[..] {
        eprintln!(
            "threadspawn: memory: {} live tasks under {profile} ...",
            opts.count
        );
        return match measure_memory(profile, opts.count) {
            Ok(m) => {
                print_memory(&m, opts.json);
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("threadspawn: memory: {profile}: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("threadspawn: memory: cannot find my own executable: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut ok = true;
    for p in &opts.profiles {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args(["--memory", "--profile", p.name(), "--count"])
            .arg(opts.count.to_string());
        if opts.json {
            cmd.arg("--json");
        }
        match cmd.status() {
            Ok(s) if s.success() => {}
            Ok(s) => {
                eprintln!("threadspawn: memory: {p}: child exited with {s}");
                ok = false;
            }
            Err(e) => {
                eprintln!("threadspawn: memory: {p}: cannot run child: {e}");
                ok = false;
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn print_memory(m: &MemoryOutcome, json: bool) {
    if json {
        println!("{}", m.json());
    } else {
        println!("{}", m.line());
    }
}
