//! `nemesis`: the simulator's workload and checkers against real `node` processes under
//! real faults, Jepsen-style.
//!
//! The simulator judges the cluster code through the seam; it cannot see the tokio
//! runtime, TCP and the framing, real fsync, real timers or the client library under
//! real latency. Here the production binary and the production client are the subject:
//! N nodes on fresh data dirs (each in its own network namespace where the machine
//! allows), K clients of `cluster::client`, and faults dealt from a seed: signals
//! (`procs.rs`), links cut with `ip` (`net.rs`), libfiu failing fdatasync, pwrite and
//! pread, libfaketime offsetting or drifting clocks (`faults.rs` names every kind).
//! After healing everything and a bounded settle, the checks of `check.rs` judge the
//! run, and `report.rs` adds its schedule and figures to a campaign report.
//!
//! Module map: `run.rs` holds one run's phases top to bottom; `inject.rs` deals,
//! injects and heals the faults; `workload.rs` the clients; `tools.rs` finds the Debian tools.
//!
//! Does not model: power loss (a SIGKILL keeps the page cache: the simulator covers
//! lost writes), packet delay or loss (no `tc netem` here), byte-exact replay.
//!
//! This module reads the wall clock: it drives real processes in real time, like the
//! production runtime (`cluster/src/runtime/clock.rs`), never inside a simulation.

#![allow(
    clippy::disallowed_methods,
    reason = "the nemesis drives real processes on the wall clock; nothing here runs inside a simulation"
)]

pub mod check;
pub mod faults;
mod inject;
pub mod net;
pub mod procs;
pub mod run;
pub mod tools;
pub mod workload;

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::campaign::report::{CampaignReport, REPORT_FORMAT_VERSION, RunRecord, RunVerdict, SubCampaignRecord};
use crate::nemesis_format::{NemesisRun, NemesisSummary};
use crate::signature::signature;
use faults::FaultKind;
use workload::Mode;

/// Seconds of a run spent beyond its planned fault phase (start-up, setup, the deck's
/// last faults, the healed cluster's recovery, settle and reads), assumed for the first
/// run's sizing from `--minutes`; later runs use the mean measured so far.
pub const RUN_OVERHEAD_SECONDS: u64 = 20;
/// The shortest planned fault phase, seconds (a phase runs on until the deck is dealt
/// anyway, at most twice its plan).
pub const PHASE_SECONDS_MIN: u64 = 5;

/// Which workload mode each run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModeChoice {
    /// Every run exact.
    Exact,
    /// Every run contended.
    Contended,
    /// Even seeds exact, odd seeds contended.
    Alternate,
}

/// Where the nodes' network lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetworkChoice {
    /// Namespaces where they can be made, else loopback (and say so).
    Auto,
    /// Namespaces, or refuse to run.
    Namespaces,
    /// Loopback: no network faults.
    Loopback,
}

/// A nemesis campaign's settings.
#[derive(Clone, Debug)]
pub struct NemesisConfig {
    /// The first run's seed; run i uses seed + i.
    pub seed: u64,
    /// Runs.
    pub runs: u64,
    /// Nodes per cluster.
    pub nodes: usize,
    /// Concurrent clients.
    pub clients: usize,
    /// The whole campaign's wall budget, minutes (sizes each run's fault phase).
    pub minutes: f64,
    /// The fault phase of each run, seconds (instead of sizing it from `minutes`).
    pub run_seconds: Option<u64>,
    /// The workload mode.
    pub mode: ModeChoice,
    /// Fault kinds asked for.
    pub faults: Vec<FaultKind>,
    /// The `--faults` text as given (for repro commands).
    pub faults_text: String,
    /// The network.
    pub network: NetworkChoice,
    /// The node binary.
    pub node_binary: PathBuf,
    /// The report and run directories go here.
    pub out: PathBuf,
    /// Requests per run at most.
    pub requests_max: u64,
    /// A test-only break passed to every node (`--test-break`).
    pub node_break: Option<String>,
    /// Keep every run's data dirs (default: only a failing run's).
    pub keep_data: bool,
    /// One fault at a time, the next only once every client was served again.
    pub one_fault_at_a_time: bool,
}

impl NemesisConfig {
    fn mode_of(&self, seed: u64) -> Mode {
        match self.mode {
            ModeChoice::Exact => Mode::Exact,
            ModeChoice::Contended => Mode::Contended,
            ModeChoice::Alternate if seed.is_multiple_of(2) => Mode::Exact,
            ModeChoice::Alternate => Mode::Contended,
        }
    }

    /// The fault phase of the next run, seconds: `--run-seconds`, or the budget left
    /// shared by the runs left, less the overhead the runs so far measured (start-up,
    /// recovery, settle and checks; [`RUN_OVERHEAD_SECONDS`] before the first).
    pub fn phase_seconds(&self, budget_left_seconds: f64, runs_left: u64, overhead_seconds: f64) -> u64 {
        match self.run_seconds {
            Some(seconds) => seconds,
            None => {
                let per_run = budget_left_seconds / runs_left.max(1) as f64;
                ((per_run - overhead_seconds).max(0.0) as u64).max(PHASE_SECONDS_MIN)
            }
        }
    }

    /// The command that runs seed `seed` alone, every flag spelled out.
    pub fn repro_command(&self, seed: u64, mode: Mode, phase_seconds: u64) -> String {
        let mut command = format!(
            "nemesis --seed {seed} --runs 1 --nodes {} --clients {} --mode {} --faults {} --run-seconds {} \
             --requests-max {} --network {} --node-binary {} --out {}",
            self.nodes,
            self.clients,
            mode.name(),
            self.faults_text,
            phase_seconds,
            self.requests_max,
            match self.network {
                NetworkChoice::Auto => "auto",
                NetworkChoice::Namespaces => "namespaces",
                NetworkChoice::Loopback => "loopback",
            },
            self.node_binary.display(),
            self.out.join(format!("repro-{seed}")).display()
        );
        if let Some(name) = &self.node_break {
            command.push_str(&format!(" --node-break {name}"));
        }
        if self.one_fault_at_a_time {
            command.push_str(" --one-fault-at-a-time");
        }
        command
    }
}

/// What every run of a campaign shares: what this machine can do, found once.
struct Setup {
    /// The fault kinds dealt (those asked for that this machine can inject).
    kinds: Vec<FaultKind>,
    /// The nodes get network namespaces.
    namespaces: bool,
    /// libfaketime's library, if found.
    faketime: Option<PathBuf>,
    /// Start nodes under libfiu (it is there and a disk fault is dealt).
    fiu: bool,
    /// Namespace name prefix, unique to this process.
    prefix: String,
}

/// Run the campaign; the report (also written to `out/report.json` and
/// `out/report.html` after every run, so an interrupted campaign leaves one).
pub async fn run_campaign(config: &NemesisConfig, command: &str) -> Result<CampaignReport, String> {
    std::fs::create_dir_all(&config.out).map_err(|error| format!("{}: {error}", config.out.display()))?;
    let started = Instant::now();
    let prefix = format!("nemesis-{}", std::process::id());
    let tools = tools::Tools::find(&format!("{prefix}-probe"));
    let namespaces = use_namespaces(config.network, &tools)?;
    let (kinds, missing) = usable_kinds(&config.faults, &tools, namespaces);
    for line in &missing {
        println!("nemesis: {line}");
    }
    if !config.node_binary.is_file() {
        return Err(format!(
            "--node-binary {}: no such file (build it: cargo build --release -p cluster --bin node)",
            config.node_binary.display()
        ));
    }
    let mut summary = NemesisSummary {
        replay_note: "Real processes: a run cannot replay bit for bit. Its command replays the seed's plan (the \
                      faults, their order and lengths, the clients' draws) on this machine; the schedule and the \
                      node logs of the run's directory say what actually happened."
            .to_owned(),
        namespaces,
        missing,
        liveness_gap_ms_max: check::LIVENESS_GAP_MS_MAX,
        ..NemesisSummary::default()
    };
    let mut report = empty_report(config, command);
    let budget_seconds = config.minutes * 60.0;
    let setup = Setup {
        fiu: tools.fiu.is_ok() && kinds.iter().any(|kind| kind.category() == faults::Category::Disk),
        faketime: tools.faketime.clone().ok(),
        kinds,
        namespaces,
        prefix,
    };
    let mut overhead_seconds = RUN_OVERHEAD_SECONDS as f64;
    for index in 0..config.runs {
        let budget_left = budget_seconds - started.elapsed().as_secs_f64();
        if config.run_seconds.is_none() && index > 0 && budget_left <= 0.0 {
            report.not_started = config.runs - index;
            report.sub_campaigns[0].not_started = report.not_started;
            break;
        }
        let phase_seconds = config.phase_seconds(budget_left, config.runs - index, overhead_seconds);
        let (record, schedule) = one_run(config, &setup, index, phase_seconds).await?;
        // What a run costs beyond its planned fault phase (the phase itself runs on
        // until the deck is dealt): the mean so far sizes the next phases.
        let overhead = (record.wall_ms / 1000.0 - phase_seconds as f64).max(0.0);
        overhead_seconds = (overhead_seconds * index as f64 + overhead) / (index + 1) as f64;
        report.runs.push(record);
        summary.add(schedule);
        report.wall_seconds = started.elapsed().as_secs_f64();
        report.nemesis = Some(summary.clone());
        write_report(&config.out, &report)?;
    }
    report.wall_seconds = started.elapsed().as_secs_f64();
    report.nemesis = Some(summary);
    write_report(&config.out, &report)?;
    Ok(report)
}

/// Whether the nodes get network namespaces: never on loopback, else if this machine
/// can make them (`--network namespaces` refuses to run without; `auto` says so).
fn use_namespaces(network: NetworkChoice, tools: &tools::Tools) -> Result<bool, String> {
    Ok(match (network, &tools.namespaces) {
        (NetworkChoice::Loopback, _) => false,
        (_, Ok(())) => true,
        (NetworkChoice::Namespaces, Err(why)) => return Err(format!("--network namespaces: {why}")),
        (NetworkChoice::Auto, Err(why)) => {
            println!("nemesis: no network namespaces ({why}); running with process, disk and clock faults only");
            false
        }
    })
}

/// The fault kinds asked for that this machine can inject, and a line for each one left
/// out saying why.
fn usable_kinds(asked: &[FaultKind], tools: &tools::Tools, namespaces: bool) -> (Vec<FaultKind>, Vec<String>) {
    let mut missing = Vec::new();
    let mut kinds = Vec::new();
    for &kind in asked {
        let why = if kind.category() == faults::Category::Network && !namespaces {
            Some("no network namespaces".to_owned())
        } else {
            tools.missing_for(kind)
        };
        match why {
            Some(why) => missing.push(format!("{kind} left out: {why}")),
            None => kinds.push(kind),
        }
    }
    (kinds, missing)
}

/// The campaign's report before any run: one sub-campaign of every planned run.
fn empty_report(config: &NemesisConfig, command: &str) -> CampaignReport {
    CampaignReport {
        format: REPORT_FORMAT_VERSION,
        campaign_id: format!("nemesis-{}", config.seed),
        command: command.to_owned(),
        build: crate::campaign::runner::build_id(),
        shard: None,
        planned: config.runs,
        not_started: 0,
        wall_seconds: 0.0,
        runs: Vec::new(),
        sub_campaigns: vec![SubCampaignRecord {
            sub: crate::campaign::spec::SubCampaign {
                name: String::new(),
                weight: 1.0,
                flags: String::new(),
            },
            planned: config.runs,
            not_started: 0,
        }],
        required_marks: Vec::new(),
        shrunk: Vec::new(),
        nemesis: None,
        explore: None,
    }
}

/// Make run `index` (seed `config.seed + index`) with a fault phase of `phase_seconds`
/// in a fresh `run-<seed>` directory, write its schedule there, say how it went; its
/// campaign record and its schedule and figures for the nemesis section.
async fn one_run(
    config: &NemesisConfig,
    setup: &Setup,
    index: u64,
    phase_seconds: u64,
) -> Result<(RunRecord, NemesisRun), String> {
    let seed = config.seed.wrapping_add(index);
    let mode = config.mode_of(seed);
    let dir = config.out.join(format!("run-{seed}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|error| format!("{}: {error}", dir.display()))?;
    println!(
        "run {}/{} seed {seed} ({} nodes, {} clients, {} mode, fault phase {} s):",
        index + 1,
        config.runs,
        config.nodes,
        config.clients,
        mode.name(),
        phase_seconds
    );
    let spec = run::RunSpec {
        seed,
        nodes: config.nodes,
        clients: config.clients,
        mode,
        kinds: setup.kinds.clone(),
        phase_ms: phase_seconds * 1000,
        requests_max: config.requests_max,
        dir: dir.clone(),
        node_binary: config.node_binary.clone(),
        node_flags: config
            .node_break
            .iter()
            .flat_map(|name| ["--test-break".to_owned(), name.clone()])
            .collect(),
        namespaces: setup.namespaces,
        faketime: setup.faketime.clone(),
        fiu: setup.fiu,
        namespace_prefix: setup.prefix.clone(),
        one_fault_at_a_time: config.one_fault_at_a_time,
    };
    let outcome = run::run(spec).await;
    let schedule: String = outcome
        .faults
        .iter()
        .filter_map(|fault| serde_json::to_string(fault).ok())
        .map(|line| line + "\n")
        .collect();
    let _ = std::fs::write(dir.join("schedule.jsonl"), &schedule);
    let repro = config.repro_command(seed, mode, phase_seconds);
    let (verdict, detail) = match &outcome.verdict {
        check::Verdict::Pass => (RunVerdict::Pass, None),
        check::Verdict::Fail(why) => (RunVerdict::Fail, Some(why.clone())),
        check::Verdict::Vacuous(why) => (RunVerdict::Vacuous, Some(why.clone())),
        check::Verdict::Invalid(why) => (RunVerdict::Invalid, Some(why.clone())),
    };
    print_outcome(&outcome, verdict);
    if let Some(detail) = &detail {
        println!("  {detail}");
        println!("  schedule and node logs: {}", dir.display());
        println!("  repro: {repro}");
    }
    if verdict == RunVerdict::Pass && !config.keep_data {
        remove_data_dirs(&dir, config.nodes);
    }
    let s = &outcome.stats;
    let record = RunRecord {
        campaign: String::new(),
        profile: format!("nemesis-{}-nodes", config.nodes),
        plane: mode.name().to_owned(),
        seed,
        command: repro,
        verdict,
        signature: detail
            .as_ref()
            .filter(|_| matches!(verdict, RunVerdict::Fail | RunVerdict::Invalid))
            .map(|why| signature(why)),
        detail,
        ticks: outcome.wall_ms,
        commits: s.acked_messages,
        ops_compared: s.acked_messages + s.linearized_operations,
        checkpoints: 0,
        transfers_installed: 0,
        adversary_sent: 0,
        adversary_refused: 0,
        // The nemesis reports its failovers in its own figures (wall-clock, per fault).
        failover_ticks: Vec::new(),
        failover_unresolved: 0,
        spurious_view_changes: 0,
        wall_ms: outcome.wall_ms as f64,
        schedule_hash: format!("{:016x}", fnv1a(schedule.as_bytes())),
        polls: 0,
        group_ticks: 0,
        coverage: Vec::new(),
        finished_seconds: 0.0,
        watermarks: std::collections::BTreeMap::new(),
        explore: None,
    };
    let figures = NemesisRun {
        seed,
        mode: mode.name().to_owned(),
        dir: dir.display().to_string(),
        faults: outcome.faults,
        stats: outcome.stats,
    };
    Ok((record, figures))
}

/// Print a run's verdict and figures on two lines.
fn print_outcome(outcome: &run::RunOutcome, verdict: RunVerdict) {
    let s = &outcome.stats;
    println!(
        "  {verdict}: {} faults, {} requests, {} messages acknowledged and found, {} unknown, {} linearized \
         operations, {} polls checked, longest gap {} ms ({} ms with a healthy majority), recovered {} ms after the heal, \
         settled in {} ms, {} supervisor restarts, {:.1} s",
        outcome.faults.len(),
        s.requests,
        s.acked_messages,
        s.unknown_messages,
        s.linearized_operations,
        s.polls_checked,
        s.longest_gap_ms,
        s.longest_healthy_gap_ms,
        s.recovered_ms,
        s.settle_ms,
        s.supervisor_restarts,
        outcome.wall_ms as f64 / 1000.0
    );
    let served: Vec<String> = s
        .served_after_fault_ms
        .iter()
        .map(|(kind, waits)| format!("{kind} {waits:?}"))
        .collect();
    println!(
        "  from each fault's start until every client was served, ms: {}",
        served.join(", ")
    );
    println!("  successes per second: {:?}", s.successes_by_second);
}

fn remove_data_dirs(dir: &Path, nodes: usize) {
    for node in 0..nodes {
        let _ = std::fs::remove_dir_all(dir.join(format!("data-{node}")));
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn write_report(out: &Path, report: &CampaignReport) -> Result<(), String> {
    let json = serde_json::to_string_pretty(report).map_err(|error| format!("report.json: {error}"))?;
    std::fs::write(out.join("report.json"), json).map_err(|error| format!("{}: {error}", out.display()))?;
    std::fs::write(out.join("report.html"), crate::campaign::html::render(report))
        .map_err(|error| format!("{}: {error}", out.display()))?;
    Ok(())
}
