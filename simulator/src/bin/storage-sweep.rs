//! `storage-sweep`: crash the disk at every step of the production storage code.
//! See `--help`.
#![allow(
    clippy::disallowed_methods,
    reason = "wall time of the sweep is reported to the user; it never feeds a case"
)]

use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use simulator::storage_sweep::{self, Case, Sweep, run_case, run_sweep};

/// Crash the disk at every step of a piece of real storage code, and check recovery.
///
/// Each sweep first runs its code (a superblock write, a WAL append, a segment roll, an
/// install, ...) without faults and records the storage operations it makes. Then for
/// every operation in that trace, every fault (none, fail-before, fail-after, torn-error,
/// torn-silent), both crashes (process, power-loss) and background writeback on and off,
/// it runs the code again, stops the process right after the faulted operation, crashes,
/// runs the real recovery code and checks it: nothing acknowledged as durable is lost,
/// nothing never written appears, recovery never panics.
///
/// A failing case is printed as a `--case` spec with the command that replays it alone.
///
/// Exit codes: 0 every case passed; 1 a case failed; 2 bad input (flags, sweep names,
/// case specs); 3 vacuous (a sweep compared no acknowledged item in any case).
#[derive(Parser, Debug)]
#[command(name = "storage-sweep", version, about, long_about)]
struct Cli {
    /// Run only these sweeps (repeat the flag or separate names with commas).
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    sweep: Vec<String>,

    /// List the sweeps with what each one covers, and exit.
    #[arg(long)]
    list: bool,

    /// Run one case of one sweep (needs exactly one --sweep):
    /// POSITION:FAULT:CRASH:WRITEBACK, e.g. 17:torn-silent:power-loss:on.
    #[arg(long, value_name = "SPEC")]
    case: Option<Case>,

    /// Print the fault-free operation trace of each selected sweep (the positions a
    /// case names), and exit.
    #[arg(long)]
    trace: bool,

    /// Seed for the writeback order and tear sizes of every case.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

fn select(names: &[String]) -> Result<Vec<Box<dyn Sweep>>, String> {
    let all = storage_sweep::all();
    if names.is_empty() {
        return Ok(all);
    }
    let known: Vec<&'static str> = all.iter().map(|sweep| sweep.name()).collect();
    for name in names {
        if !known.contains(&name.as_str()) {
            return Err(format!(
                "--sweep {name:?} is not a sweep; known sweeps: {}",
                known.join(", ")
            ));
        }
    }
    Ok(all
        .into_iter()
        .filter(|sweep| names.iter().any(|name| name == sweep.name()))
        .collect())
}

fn repro(sweep: &str, seed: u64, case: &Case) -> String {
    format!("cargo run --release -p simulator --bin storage-sweep -- --sweep {sweep} --seed {seed} --case {case}")
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let sweeps = match select(&cli.sweep) {
        Ok(sweeps) => sweeps,
        Err(error) => {
            eprintln!("storage-sweep: {error}");
            return ExitCode::from(2);
        }
    };
    if cli.list {
        for sweep in &sweeps {
            println!("{:<28} {}", sweep.name(), sweep.description());
        }
        return ExitCode::SUCCESS;
    }
    if cli.trace {
        for sweep in &sweeps {
            println!("{}:", sweep.name());
            for entry in storage_sweep::fault_free_trace(sweep.as_ref()) {
                println!("  {entry}");
            }
        }
        return ExitCode::SUCCESS;
    }
    if let Some(case) = cli.case {
        let [sweep] = sweeps.as_slice() else {
            eprintln!("storage-sweep: --case needs exactly one --sweep NAME");
            return ExitCode::from(2);
        };
        return match run_case(sweep.as_ref(), cli.seed, &case) {
            Ok(compared) => {
                println!("pass {} {case}: {compared} acknowledged items compared", sweep.name());
                ExitCode::SUCCESS
            }
            Err(detail) => {
                println!("FAIL {} {case}: {detail}", sweep.name());
                println!("repro: {}", repro(sweep.name(), cli.seed, &case));
                ExitCode::from(1)
            }
        };
    }

    let started = Instant::now();
    let (mut cases, mut vacuous) = (0, false);
    for sweep in &sweeps {
        let sweep_started = Instant::now();
        let summary = run_sweep(sweep.as_ref(), cli.seed);
        cases += summary.cases;
        println!(
            "{:<28} trace {:>4} ops  {:>5} cases  {:>7} acknowledged compared  {:.3} s",
            sweep.name(),
            summary.trace_operations,
            summary.cases,
            summary.acknowledged_compared,
            sweep_started.elapsed().as_secs_f64()
        );
        if let Some(failure) = summary.failure {
            println!("FAIL {} {}: {}", sweep.name(), failure.case, failure.detail);
            println!("repro: {}", repro(sweep.name(), cli.seed, &failure.case));
            return ExitCode::from(1);
        }
        if summary.acknowledged_compared == 0 {
            println!("vacuous: {} compared no acknowledged item in any case", sweep.name());
            vacuous = true;
        }
    }
    println!(
        "storage-sweep: {} sweeps, {cases} cases, all passed, {:.3} s",
        sweeps.len(),
        started.elapsed().as_secs_f64()
    );
    if vacuous || sweeps.is_empty() {
        return ExitCode::from(3);
    }
    ExitCode::SUCCESS
}
