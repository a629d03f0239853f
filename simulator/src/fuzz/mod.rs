//! `workload-fuzz`: build a world from the command line, run it, judge it.
//!
//! Everything printed to the `out` writer is a pure function of the arguments and the
//! build, so two runs of one command compare byte for byte; wall-clock figures are
//! returned separately for the binary to print on stderr.

mod args;
mod cluster_run;
mod echo_run;
mod liveness;
pub mod outage;
mod run_flags;
mod settle;
pub mod shrink;
mod timeliness;

use std::io::{self, Write};

pub use args::{
    FuzzArgs, NetworkOverrides, Plane, StorageFaultMode, parse_probability, parse_storage, parse_storage_break,
    parse_storage_faults,
};
pub use run_flags::RunFlags;

use crate::fault_schedule::FaultSchedule;
use crate::profile::{ResolvedProfile, load_profile, validate_network};
use crate::simulation::{Simulation, SimulationConfig};

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every check held and the run compared enough to mean something.
    Pass,
    /// A check failed; the text says which and what it saw.
    Failed(String),
    /// Nothing failed, but too little was compared to prove anything.
    Vacuous(String),
    /// The configuration was rejected before anything ran.
    Invalid(String),
}

impl Verdict {
    /// The process exit code: 0 pass, 1 failed, 2 invalid, 3 vacuous.
    pub fn exit_code(&self) -> i32 {
        match self {
            Verdict::Pass => 0,
            Verdict::Failed(_) => 1,
            Verdict::Invalid(_) => 2,
            Verdict::Vacuous(_) => 3,
        }
    }
}

/// The outcome of one run, with the figures a campaign records.
#[derive(Clone, Debug)]
pub struct RunReport {
    /// The verdict.
    pub verdict: Verdict,
    /// The seed that ran (drawn or given).
    pub seed: u64,
    /// Ticks actually simulated.
    pub ticks: u64,
    /// Executor polls made.
    pub polls: u64,
    /// Replica-group ticks: each tick's groups on every live replica, checked or
    /// skipped as quiet (`Harness::group_ticks`; 0 on the echo plane).
    pub group_ticks: u64,
    /// The executor's schedule hash at the end.
    pub schedule_hash: u64,
    /// Ops committed (consensus planes; matched replies on the echo plane).
    pub commits: u64,
    /// Committed ops checked against the canonical chain (consensus planes).
    pub ops_compared: u64,
    /// Checkpoints made durable, over every replica and incarnation.
    pub checkpoints: u64,
    /// State transfers installed, over every replica and incarnation.
    pub transfers_installed: u64,
    /// The tick the failing check failed at (failed runs).
    pub failure_tick: Option<u64>,
    /// For a failure in the fault phase, the `--ticks` that is enough to reach it
    /// (outages make the phase longer than its `--ticks`).
    pub failure_fault_ticks: Option<u64>,
    /// The faults the run injected (consensus planes).
    pub faults: FaultSchedule,
    /// Requests the workload handed out (consensus planes).
    pub requests: u64,
    /// The world that ran: (replicas, clients, shards), as the flags or a swarm
    /// profile's draw made it.
    pub shape: (usize, usize, usize),
    /// With `--trace`, the run's timeline (consensus planes).
    pub trace: Option<crate::trace::TraceRecorder>,
    /// Primary losses, their failover times, and spurious view changes (consensus
    /// planes).
    pub failover: crate::harness::failover::FailoverFigures,
    /// Frames the adversary sent, and how many of them reached a replica (each of
    /// those refused: checked every tick); zero without an adversary.
    pub adversary: (u64, u64),
    /// Each coverage mark the run reached and the tick that first reached it, in the
    /// order reached (consensus planes): where `campaign --explore` branches it.
    pub first_reached: Vec<(cluster::coverage::Point, u64)>,
}

/// Run the workload described by `args` with `seed`, printing the banner, the figures
/// and the verdict line to `out`.
pub fn run(args: &FuzzArgs, seed: u64, out: &mut dyn Write) -> io::Result<RunReport> {
    // The run owns this thread while it runs: its coverage marks start from zero.
    cluster::coverage::reset();
    let mut report = RunReport {
        verdict: Verdict::Pass,
        seed,
        ticks: 0,
        polls: 0,
        group_ticks: 0,
        schedule_hash: 0,
        commits: 0,
        ops_compared: 0,
        checkpoints: 0,
        transfers_installed: 0,
        failure_tick: None,
        failure_fault_ticks: None,
        faults: FaultSchedule::default(),
        requests: 0,
        shape: (0, 0, 0),
        trace: None,
        failover: Default::default(),
        adversary: (0, 0),
        first_reached: Vec::new(),
    };
    let (config, resolved) = match configure(args, seed) {
        Ok(configured) => configured,
        Err(message) => {
            writeln!(out, "workload-fuzz: invalid configuration: {message}")?;
            report.verdict = Verdict::Invalid(message);
            return Ok(report);
        }
    };

    report.shape = (config.replicas, config.clients, config.shards);
    writeln!(
        out,
        "workload-fuzz: seed={seed} ticks={} replicas={} clients={} shards={} plane={} faults={}",
        args.ticks,
        config.replicas,
        config.clients,
        config.shards,
        args.plane.name(),
        resolved.name
    )?;
    writeln!(out, "profile: {}", resolved.banner_line())?;

    let schedule = match (&args.schedule, &args.faults_from) {
        (Some(schedule), _) => Some(schedule.clone()),
        (None, Some(path)) => match FaultSchedule::read(path) {
            Ok(schedule) => Some(schedule),
            Err(error) => {
                writeln!(out, "workload-fuzz: invalid configuration: {error}")?;
                report.verdict = Verdict::Invalid(error.to_string());
                return Ok(report);
            }
        },
        (None, None) => None,
    };
    if (schedule.is_some() || args.trace.is_some()) && args.plane == Plane::Echo {
        let message = "--faults-from and --trace are for the consensus planes; the echo plane draws its own faults \
                       and has no replicas to trace"
            .to_owned();
        writeln!(out, "workload-fuzz: invalid configuration: {message}")?;
        report.verdict = Verdict::Invalid(message);
        return Ok(report);
    }
    match args.plane {
        Plane::Echo => echo_run::run(args, &config, &mut report, out)?,
        Plane::Metadata | Plane::Partition | Plane::Mixed | Plane::Uniform | Plane::Lifecycle | Plane::Contended => {
            cluster_run::run(args, &config, resolved.storage, schedule.as_ref(), &mut report, out)?
        }
    }
    writeln!(out, "{}", coverage_line())?;
    writeln!(out, "{}", watermarks_line())?;
    match &report.verdict {
        Verdict::Pass => writeln!(out, "workload-fuzz: OK (seed={seed})")?,
        Verdict::Vacuous(reason) => writeln!(out, "vacuous: {reason}")?,
        Verdict::Failed(reason) => writeln!(out, "check failed: {reason}")?,
        Verdict::Invalid(_) => unreachable!("invalid configurations return early"),
    }
    Ok(report)
}

/// The `coverage:` line: how many of the cluster's coverage marks this run reached, and
/// each reached mark with its hits, in the table's order (`cluster::coverage`).
pub fn coverage_line() -> String {
    let reached: Vec<String> = reached_marks()
        .map(|(mark, hits)| format!("{}={hits}", mark.name()))
        .collect();
    format!(
        "coverage: reached {} of {} marks{}{}",
        reached.len(),
        cluster::coverage::MARKS,
        if reached.is_empty() { "" } else { ": " },
        reached.join(" ")
    )
}

/// The `watermarks:` line: how deep this run went, each watermark's highest value in
/// the table's order (`cluster::coverage`).
pub fn watermarks_line() -> String {
    let values: Vec<String> = cluster::coverage::watermarks()
        .into_iter()
        .map(|(watermark, value)| format!("{}={value}", watermark.name()))
        .collect();
    format!("watermarks: {}", values.join(" "))
}

/// The names of the coverage marks this thread's run reached, in the table's order.
pub fn marks_reached() -> Vec<String> {
    reached_marks().map(|(mark, _)| mark.name().to_owned()).collect()
}

/// This thread's marks with at least one hit, and their hits, in the table's order.
fn reached_marks() -> impl Iterator<Item = (cluster::coverage::Mark, u64)> {
    cluster::coverage::hits().into_iter().filter(|(_, hits)| *hits > 0)
}

/// Print the seeds and the network of a world (part of every banner).
pub(super) fn print_world(simulation: &Simulation, out: &mut dyn Write) -> io::Result<()> {
    let seeds = simulation
        .seeds()
        .children()
        .map(|(name, value)| format!("{name}={value:#018x}"));
    writeln!(out, "seeds: {}", seeds.join(" "))?;
    writeln!(out, "network: {}", simulation.network().describe())
}

/// Print the network's packet counters (part of every report).
pub(super) fn print_packets(simulation: &Simulation, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", packets_line(simulation.network().stats()))
}

/// The `packets:` line: the network's counters.
pub(super) fn packets_line(net: &crate::network::NetworkStats) -> String {
    format!(
        "packets: submitted={} delivered={} lost={} replayed={} corrupted={} evicted={} dropped_crashed={} \
         dropped_partitioned={} dropped_filtered={} partitions={} clogs={}",
        net.submitted,
        net.delivered,
        net.lost,
        net.replayed,
        net.corrupted,
        net.evicted,
        net.dropped_crashed,
        net.dropped_partitioned,
        net.dropped_filtered,
        net.partitions_started,
        net.clogs_started
    )
}

/// Resolve the profile, apply overrides and swarm draws, validate.
fn configure(args: &FuzzArgs, seed: u64) -> Result<(SimulationConfig, ResolvedProfile), String> {
    if args.ticks == 0 {
        return Err("--ticks 0 simulates nothing; give at least 1".to_owned());
    }
    if !args.branch.is_empty() && args.plane == Plane::Echo {
        return Err(format!(
            "--branch {}: branch points are for the consensus planes (metadata, partition, mixed, uniform, \
             lifecycle, contended); the echo plane's run has no harness to branch",
            args.branch
        ));
    }
    if args.run.shared && args.plane == Plane::Echo {
        return Err(
            "--shared sends requests to the contended plane's shared objects; the echo plane has none: \
                    give a consensus plane (metadata, partition, mixed, uniform, lifecycle)"
                .to_owned(),
        );
    }
    if args.run.power_loss_prob > 0.0 && args.run.storage == crate::harness::StorageModel::Memory {
        return Err(format!(
            "--power-loss-prob {} needs --storage sim: in-memory stores have no power to lose",
            args.run.power_loss_prob
        ));
    }
    for (flag, value) in [
        ("--disk-error-prob", args.run.disk_error_prob),
        ("--disk-corruption-prob", args.run.disk_corruption_prob),
        ("--disk-slow-prob", args.run.disk_slow_prob),
        ("--power-outage-prob", args.run.power_outage_prob),
    ] {
        if let Some(probability) = value.filter(|&probability| probability > 0.0)
            && args.run.storage == crate::harness::StorageModel::Memory
        {
            return Err(format!(
                "{flag} {probability} needs --storage sim: in-memory stores have no disk to fail"
            ));
        }
    }
    let profile = load_profile(&args.faults).map_err(|error| error.to_string())?;
    let mut resolved = profile.resolve(crate::seeds::SimSeeds::derive(seed).swarm);
    args.run.network.apply(&mut resolved.network);
    // The overridden network obeys the same rules as a profile file.
    validate_network(
        &format!("fault profile `{}` with command-line overrides", resolved.name),
        &resolved.network,
    )
    .map_err(|error| error.to_string())?;
    // Swarm draws the cluster's shape too; fixed profiles take it from the flags. The
    // echo plane's replicas read one inbox, so it always runs one shard.
    let (replicas, clients, shards) = match &resolved.swarm {
        Some(draw) => (draw.replicas, draw.clients, draw.shards),
        None => (
            args.run.replicas as usize,
            args.run.clients as usize,
            args.shards as usize,
        ),
    };
    let shards = if args.plane == Plane::Echo { 1 } else { shards };
    if let Some(probability) = args.run.adversary_prob {
        resolved.adversary.forged_frame_probability = probability;
    }
    // The adversary attacks the cluster's nodes; the echo plane's replicas are not them.
    if args.plane == Plane::Echo {
        resolved.adversary.forged_frame_probability = 0.0;
    }
    let adversary_probability = resolved.adversary.forged_frame_probability;
    let config = SimulationConfig {
        replicas,
        clients,
        shards,
        network: resolved.network.clone(),
        adversary_probability,
    };
    Ok((config, resolved))
}
