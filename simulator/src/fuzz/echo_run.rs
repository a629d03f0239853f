//! The echo plane: the seam, executor and network under an echo service.

use std::io::{self, Write};
use std::rc::Rc;

use cluster::seam::ProcessId;

use super::{FuzzArgs, RunReport, Verdict, print_packets, print_world};
use crate::echo::{self, EchoStats, SharedEchoStats};
use crate::simulation::{Simulation, SimulationConfig};

/// Run the echo plane and judge it.
pub(super) fn run(
    args: &FuzzArgs,
    config: &SimulationConfig,
    report: &mut RunReport,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut simulation = Simulation::new(report.seed, config);
    print_world(&simulation, out)?;

    let stats = boot_echo(&simulation, config);
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
    report.commits = echo.replies_matched;
    let sim = simulation.stats();
    writeln!(
        out,
        "ran {} ticks; requests={} replies={} resends={} stale_replies={} heartbeats={}",
        report.ticks, echo.requests, echo.replies_matched, echo.resends, echo.replies_stale, echo.heartbeats
    )?;
    print_packets(&simulation, out)?;
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
        None if echo.replies_matched < args.run.min_replies => Verdict::Vacuous(format!(
            "{} matched replies, below --min-replies {}",
            echo.replies_matched, args.run.min_replies
        )),
        None => Verdict::Pass,
    };
    Ok(())
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
