//! `workload-fuzz`: one seed, one simulated cluster, one verdict. See `--help`.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use simulator::fuzz::{self, FuzzArgs, Verdict};

#[allow(
    clippy::disallowed_methods,
    reason = "an omitted --seed is drawn from the wall clock once, then printed; the run itself never reads it"
)]
fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    // Fold the 128-bit count so every bit of it moves the seed.
    (nanos as u64) ^ ((nanos >> 64) as u64).rotate_left(17)
}

#[allow(
    clippy::disallowed_methods,
    reason = "wall time is measured for the stderr report only"
)]
fn now() -> Instant {
    Instant::now()
}

fn main() -> ExitCode {
    let args = FuzzArgs::parse();
    simulator::log::init_from_env();
    let seed = args.seed.unwrap_or_else(fresh_seed);
    let repro = args.repro_command(seed);
    let started = now();
    let stdout = std::io::stdout();
    let outcome = simulator::panic_report::catch_run(|| fuzz::run(&args, seed, &mut stdout.lock()));
    let elapsed = started.elapsed().max(Duration::from_nanos(1));
    let code = match outcome {
        Ok(Ok(report)) => {
            let ticks_per_second = report.ticks as f64 / elapsed.as_secs_f64();
            // Group-ticks/s: the work per second when a plane's groups grow over a run.
            eprintln!(
                "wall: {:.3} s, {:.0} ticks/s, {} polls, {:.0} group-ticks/s",
                elapsed.as_secs_f64(),
                ticks_per_second,
                report.polls,
                report.group_ticks as f64 / elapsed.as_secs_f64()
            );
            if matches!(report.verdict, Verdict::Failed(_)) {
                println!("workload-fuzz FAILED, reproduce with: {repro}");
            }
            if let (Some(path), Some(trace)) = (&args.trace, &report.trace) {
                match trace.write_file(path) {
                    Ok(()) => eprintln!(
                        "trace: {} events written to {} ({} dropped at the cap); open it in https://ui.perfetto.dev",
                        trace.events(),
                        path.display(),
                        trace.dropped()
                    ),
                    Err(error) => eprintln!("workload-fuzz: cannot write trace {}: {error}", path.display()),
                }
            }
            match &args.record_faults {
                Some(path) if !matches!(report.verdict, Verdict::Invalid(_)) => match report.faults.write(path) {
                    Ok(()) => {
                        eprintln!(
                            "fault schedule: {} events written to {}",
                            report.faults.events.len(),
                            path.display()
                        );
                        report.verdict.exit_code()
                    }
                    Err(error) => {
                        eprintln!("workload-fuzz: {error}");
                        2
                    }
                },
                _ => report.verdict.exit_code(),
            }
        }
        Ok(Err(error)) => {
            eprintln!("workload-fuzz: cannot write output: {error}");
            1
        }
        Err(_) => {
            // The panic message was already printed by the panic hook.
            println!("workload-fuzz: panic (seed={seed})");
            println!("workload-fuzz FAILED, reproduce with: {repro}");
            1
        }
    };
    let code = if args.shrink && code == 1 {
        shrink(&args, seed).unwrap_or_else(|error| {
            eprintln!("workload-fuzz: shrink: {error}");
            1
        })
    } else {
        code
    };
    let _ = std::io::stdout().flush();
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// `--shrink`: search for the smallest run failing the same way, write its schedule,
/// print its repro. The exit code stays 1 (the run failed).
fn shrink(args: &FuzzArgs, seed: u64) -> Result<i32, String> {
    simulator::panic_report::install_quiet_panic_hook();
    let started = now();
    let bound = Duration::from_secs(args.shrink_seconds);
    let mut time_used = || started.elapsed().as_secs_f64() / bound.as_secs_f64().max(f64::MIN_POSITIVE);
    let bounds = fuzz::shrink::ShrinkBounds { runs: args.shrink_runs };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let shrunk = fuzz::shrink::shrink(args, seed, bounds, &mut time_used, &mut out)
        .map_err(|error| format!("cannot write output: {error}"))?;
    let Some(shrunk) = shrunk else {
        return Ok(1);
    };
    std::fs::create_dir_all(&args.shrink_dir)
        .map_err(|error| format!("cannot create {}: {error}", args.shrink_dir.display()))?;
    let path = args.shrink_dir.join(format!("shrunk-{seed}.faults.jsonl"));
    shrunk.schedule.write(&path).map_err(|error| error.to_string())?;
    let mut repro = shrunk.args.clone();
    repro.faults_from = Some(path);
    repro.schedule = None;
    repro.shrink = false;
    if args.trace.is_some() {
        // The smallest run once more, traced (its output is the repro's, not printed).
        let trace_path = args.shrink_dir.join(format!("shrunk-{seed}.trace.json"));
        let mut traced = shrunk.args.clone();
        traced.trace = Some(trace_path.clone());
        let report = fuzz::run(&traced, seed, &mut std::io::sink()).map_err(|error| error.to_string())?;
        if let Some(trace) = &report.trace {
            trace
                .write_file(&trace_path)
                .map_err(|error| format!("cannot write {}: {error}", trace_path.display()))?;
            writeln!(
                out,
                "shrunk trace: {} ({} events)",
                trace_path.display(),
                trace.events()
            )
            .map_err(|error| error.to_string())?;
        }
    }
    writeln!(out, "shrunk failure: {}", shrunk.failure).map_err(|error| error.to_string())?;
    writeln!(
        out,
        "workload-fuzz SHRUNK, reproduce with: {}",
        repro.repro_command(seed)
    )
    .map_err(|error| error.to_string())?;
    eprintln!("shrink: {:.1} s wall", started.elapsed().as_secs_f64());
    Ok(1)
}
