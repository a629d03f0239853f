//! The consensus planes (metadata, partition, mixed, uniform, lifecycle, contended): a
//! simulated cluster of nodes under the workload, judged by the per-tick checks, a
//! state checker per group, the end-of-run checks and the oracle.
//!
//! A run is a sequence of phases, each in its own module and each taking what the
//! previous one left ([`setup::World`]); [`run`] reads them top to bottom. The first
//! failure ends the phases that change the world (fault phase, liveness, drain, final
//! checks); the oracle and the summary still report what the run reached.

mod checks;
mod drain;
mod fault_phase;
mod oracle;
mod setup;
mod summary;
mod verdict;

use std::io::{self, Write};

use super::{FuzzArgs, RunReport, liveness};
use crate::fault_schedule::FaultSchedule;
use crate::harness::CheckFailure;
use crate::profile::StorageRates;
use crate::simulation::SimulationConfig;
use summary::Summary;

/// Run a consensus plane and judge it.
pub(super) fn run(
    args: &FuzzArgs,
    config: &SimulationConfig,
    profile_storage: StorageRates,
    schedule: Option<&FaultSchedule>,
    report: &mut RunReport,
    out: &mut dyn Write,
) -> io::Result<()> {
    // Setup: the workload, the harness, the fault injectors; the banner.
    let mut world = setup::build(args, config, profile_storage, schedule, report.seed, out)?;
    // Faults: `--ticks` of workload under every fault the run draws.
    let mut failure = fault_phase::run(args.ticks, &mut world, report);
    let ran = world.harness.simulation().tick();
    // Liveness: a healed core of replicas must settle on its own in bounded time.
    let mut liveness = None;
    if failure.is_none() && !args.run.no_quiesce && !args.run.no_liveness {
        match liveness::run(&mut world.harness, &world.workload, report.seed, config.replicas) {
            Ok(outcome) => liveness = Some(outcome),
            Err(error) => failure = Some(error),
        }
    }
    // Drain: everything back, every request answered, one view.
    let mut drain_timeliness = None;
    if failure.is_none() && !args.run.no_quiesce {
        (failure, drain_timeliness) = drain::run(&mut world, args.run.heal_before_quiesce || liveness.is_some());
    }
    // Final checks: every group in full, then the shared objects' histories.
    failure = failure.or_else(|| checks::in_full(&mut world));
    if failure.is_none() && !args.run.no_quiesce {
        failure = checks::settle_with_final_logs(&world);
    }
    let linearizability = checks::linearizability(&world);
    failure = failure.or_else(|| checks::linearizability_failure(&world, linearizability.as_ref()));
    // Oracle: replicas agree, and the cluster holds what the shadow predicted.
    let oracle = match failure {
        Some(_) => Some(Vec::new()),
        None => match oracle::run(&world.harness, &world.workload.borrow()) {
            Ok(compared) => Some(compared),
            Err(detail) => {
                failure = Some(CheckFailure {
                    check: "oracle",
                    detail,
                    tick: world.harness.simulation().tick(),
                });
                None
            }
        },
    };
    // Summary and verdict.
    let mut summary = Summary::gather(args, &world, ran, liveness, drain_timeliness, oracle, linearizability);
    summary.record(report);
    summary.print(out)?;
    report.failure_tick = failure.as_ref().map(|failure| failure.tick);
    report.trace = world.harness.finish_trace(failure.as_ref());
    report.first_reached = world.harness.first_reached().to_vec();
    report.verdict = verdict::judge(args, failure, &summary, &world);
    Ok(())
}
