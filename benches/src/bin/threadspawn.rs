//! `threadspawn`: will-it-scale's `threadspawn1` for uproc. See the package README and
//! `threadspawn --help`.

use clap::Parser;
use std::process::{Command, ExitCode};
use uproc_benches::args::Options;
use uproc_benches::memory::measure_memory;
use uproc_benches::report::typed;
use uproc_benches::threadspawn::measure_all;

fn main() -> ExitCode {
    uproc_benches::init_tracing();
    let opts = Options::parse(); // exits 2 on a bad command line, 0 after --help
    let mut problems = Vec::new();
    if opts.memory {
        memory(&opts, &mut problems);
    } else {
        let report;
        (report, problems) = measure_all(&opts);
        let out = if opts.json {
            report.json_lines()
        } else {
            report.table()
        };
        print!("{out}");
        if let Some(path) = &opts.plot {
            match uproc_benches::plot::draw(&report, path) {
                Ok(()) => eprintln!("threadspawn: chart written to {}", path.display()),
                Err(e) => problems.push(format!("--plot {}: {e}", path.display())),
            }
        }
    }
    for p in &problems {
        eprintln!("threadspawn: FAILED: {p}");
    }
    ExitCode::from(u8::from(!problems.is_empty()))
}

/// Memory mode. One profile is measured in this process; several are measured each in
/// a fresh child process of this binary, since freed memory stays in the allocator and
/// would make the second profile read low.
fn memory(opts: &Options, problems: &mut Vec<String>) {
    let profiles = opts.profile_list();
    if let [profile] = profiles[..] {
        let count = opts.count;
        eprintln!("threadspawn: memory: {count} live tasks under {profile} ...");
        match measure_memory(profile, opts.count) {
            Ok(m) if opts.json => println!("{}", typed("memory", [serde_json::json!(m)])),
            Ok(m) => println!("{}", m.line()),
            Err(e) => problems.push(format!("memory: {profile}: {e}")),
        }
        return;
    }
    for p in profiles {
        let status = std::env::current_exe().and_then(|exe| {
            let count = opts.count.to_string();
            let mut cmd = Command::new(exe);
            cmd.args(["--memory", "--profile", p.name(), "--count", &count]);
            cmd.args(opts.json.then_some("--json")).status()
        });
        if !status.as_ref().is_ok_and(|s| s.success()) {
            problems.push(format!("memory: {p}: child process: {status:?}"));
        }
    }
}
