//! `workload-fuzz`: build a world from the command line, run it, judge it.
//!
//! Everything printed to the `out` writer is a pure function of the arguments and the
//! build, so two runs of one command compare byte for byte; wall-clock figures are
//! returned separately for the binary to print on stderr.

mod args;

use std::io::{self, Write};
use std::rc::Rc;

pub use args::{FuzzArgs, NetworkOverrides, Plane};
use cluster::seam::ProcessId;

use crate::echo::{self, EchoStats, SharedEchoStats};
use crate::profile::{FaultProfile, ResolvedProfile, load_profile};
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
    /// The executor's schedule hash at the end.
    pub schedule_hash: u64,
}

/// Run the workload described by `args` with `seed`, printing the banner, the figures
/// and the verdict line to `out`.
pub fn run(args: &FuzzArgs, seed: u64, out: &mut dyn Write) -> io::Result<RunReport> {
    let mut report = RunReport {
        verdict: Verdict::Pass,
        seed,
        ticks: 0,
        polls: 0,
        schedule_hash: 0,
    };
    let (config, resolved) = match configure(args, seed) {
        Ok(configured) => configured,
        Err(message) => {
            writeln!(out, "workload-fuzz: invalid configuration: {message}")?;
            report.verdict = Verdict::Invalid(message);
            return Ok(report);
        }
    };

    writeln!(
        out,
        "workload-fuzz: seed={seed} ticks={} replicas={} clients={} plane={} faults={}",
        args.ticks,
        config.replicas,
        config.clients,
        args.plane.name(),
        resolved.name
    )?;
    writeln!(out, "profile: {}", resolved.banner_line())?;

    let mut simulation = Simulation::new(seed, &config);
    let seeds = simulation
        .seeds()
        .children()
        .map(|(name, value)| format!("{name}={value:#018x}"));
    writeln!(out, "seeds: {}", seeds.join(" "))?;
    writeln!(out, "network: {}", simulation.network().describe())?;

    let stats = boot_echo(&simulation, &config);
    let mut failure = None;
    for _ in 0..args.ticks {
        if let Err(error) = simulation.step() {
            failure = Some(error.to_string());
            break;
        }
    }
    report.ticks = simulation.tick();
    report.polls = simulation.executor().totals().0;
    report.schedule_hash = simulation.executor().schedule_hash();

    let echo = stats.borrow().clone();
    let sim = simulation.stats();
    let net = simulation.network().stats();
    writeln!(
        out,
        "ran {} ticks; requests={} replies={} resends={} stale_replies={} heartbeats={}",
        report.ticks, echo.requests, echo.replies_matched, echo.resends, echo.replies_stale, echo.heartbeats
    )?;
    writeln!(
        out,
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
    )?;
    writeln!(
        out,
        "compared: replies_matched={} corrupted_frames_delivered={} frames_rejected={} replies_wrong={} \
         frames_unexpected={} frames_unroutable={} inbox_full_drops={}",
        echo.replies_matched,
        sim.frames_delivered_corrupted,
        echo.frames_rejected,
        echo.replies_wrong,
        echo.frames_unexpected,
        sim.frames_unroutable,
        sim.frames_dropped_inbox_full
    )?;
    writeln!(
        out,
        "schedule_hash={:#018x} polls={}",
        report.schedule_hash, report.polls
    )?;

    report.verdict = match failure.or_else(|| check_echo(&echo, sim.frames_delivered_corrupted, sim.frames_unroutable))
    {
        Some(reason) => Verdict::Failed(reason),
        None if echo.replies_matched < args.min_replies => Verdict::Vacuous(format!(
            "{} matched replies, below --min-replies {}",
            echo.replies_matched, args.min_replies
        )),
        None => Verdict::Pass,
    };
    match &report.verdict {
        Verdict::Pass => writeln!(out, "workload-fuzz: OK (seed={seed})")?,
        Verdict::Vacuous(reason) => writeln!(out, "vacuous: {reason}")?,
        Verdict::Failed(reason) => writeln!(out, "check failed: {reason}")?,
        Verdict::Invalid(_) => unreachable!("invalid configurations return early"),
    }
    Ok(report)
}

/// Resolve the profile, apply overrides and swarm draws, validate.
fn configure(args: &FuzzArgs, seed: u64) -> Result<(SimulationConfig, ResolvedProfile), String> {
    if args.plane != Plane::Echo {
        return Err(format!(
            "--plane {} needs the consensus workload, which is not built yet; today only --plane echo runs",
            args.plane.name()
        ));
    }
    if args.ticks == 0 {
        return Err("--ticks 0 simulates nothing; give at least 1".to_owned());
    }
    let profile = load_profile(&args.faults).map_err(|error| error.to_string())?;
    let mut resolved = profile.resolve(crate::seeds::SimSeeds::derive(seed).swarm);
    args.network.apply(&mut resolved.network);
    // The overridden network obeys the same rules as a profile file.
    FaultProfile::Fixed {
        name: format!("{}.with-overrides", resolved.name),
        network: resolved.network.clone(),
    }
    .validate()
    .map_err(|error| error.to_string())?;
    // Swarm draws the cluster's shape too; fixed profiles take it from the flags.
    let (replicas, clients) = match &resolved.swarm {
        Some(draw) => (draw.replicas, draw.clients),
        None => (args.replicas as usize, args.clients as usize),
    };
    let config = SimulationConfig {
        replicas,
        clients,
        network: resolved.network.clone(),
    };
    Ok((config, resolved))
}

fn boot_echo(simulation: &Simulation, config: &SimulationConfig) -> SharedEchoStats {
    let stats = SharedEchoStats::default();
    // The world has at most 6 + 64 processes (clap bounds), far below u32::MAX.
    let replicas = config.replicas as u32;
    for index in 0..(config.replicas + config.clients) as u32 {
        let process = ProcessId(index);
        let (bus, inbox, stats) = (simulation.bus(process), simulation.inbox(process), Rc::clone(&stats));
        if index < replicas {
            simulation.spawn(process, echo::replica(bus, inbox, replicas, stats));
        } else {
            simulation.spawn(process, echo::client(bus, inbox, replicas, stats));
        }
    }
    stats
}

/// The echo run's checks; `None` when all hold.
fn check_echo(echo: &EchoStats, corrupted_delivered: u64, unroutable: u64) -> Option<String> {
    if echo.replies_wrong > 0 {
        return Some(format!(
            "{} replies did not echo the request they answer",
            echo.replies_wrong
        ));
    }
    if echo.frames_unexpected > 0 {
        return Some(format!(
            "{} frames arrived with a command their receiver does not serve",
            echo.frames_unexpected
        ));
    }
    if echo.frames_rejected != corrupted_delivered {
        return Some(format!(
            "the network corrupted {corrupted_delivered} delivered frames but receivers rejected {} \
             (a corrupted frame was accepted, or an intact one refused)",
            echo.frames_rejected
        ));
    }
    if unroutable > 0 {
        return Some(format!(
            "{unroutable} frames were sent to a process that does not exist"
        ));
    }
    None
}
