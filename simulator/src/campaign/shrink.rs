//! After a campaign: each failure group's smallest seed shrunk to a smaller run that
//! fails the same way (`fuzz::shrink`), with its repro command, its fault schedule
//! and its trace written under the report directory's `shrunk/`, and its timeline
//! kept in the report for `report.html` to draw.
//!
//! Groups are shrunk largest first, at most [`SHRINK_GROUPS_MAX`] of them, on the
//! campaign's worker threads, each bounded by `--shrink-seconds` and
//! `--shrink-runs`. A group whose failure is a panic is listed without a shrink: a
//! panicking run leaves no schedule behind to replay.
#![allow(
    clippy::disallowed_methods,
    reason = "a shrink's wall-clock bound and its reported time; no run reads it"
)]

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::report::CampaignReport;
use crate::fuzz::shrink::{RunSize, ShrinkBounds, shrink};
use crate::fuzz::{self, FuzzArgs};
use crate::trace::Timeline;

/// Failure groups shrunk at most, largest first: a night with more distinct failures
/// than this has bigger problems than their size, and each shrink costs up to
/// `--shrink-seconds`.
pub const SHRINK_GROUPS_MAX: usize = 20;

/// The directory under the report directory that holds the shrunk repros.
pub const SHRUNK_DIR: &str = "shrunk";

/// A run's size as the report keeps it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeRecord {
    /// `--ticks`.
    pub ticks: u64,
    /// Ticks simulated, drain included.
    pub ticks_run: u64,
    /// Fault events injected.
    pub fault_events: usize,
    /// Replicas.
    pub replicas: usize,
    /// Clients.
    pub clients: usize,
    /// Shards per replica.
    pub shards: usize,
    /// Requests handed out.
    pub requests: u64,
}

impl From<RunSize> for SizeRecord {
    fn from(size: RunSize) -> Self {
        Self {
            ticks: size.fault_ticks,
            ticks_run: size.ticks,
            fault_events: size.events,
            replicas: size.replicas,
            clients: size.clients,
            shards: size.shards,
            requests: size.requests,
        }
    }
}

/// One failure group's shrunk repro.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShrunkRepro {
    /// The group's signature.
    pub signature: String,
    /// The seed shrunk (the group's smallest).
    pub seed: u64,
    /// The original run's command.
    pub original_command: String,
    /// The original run's size.
    pub original: SizeRecord,
    /// The shrunk run's size (`None` when nothing could be shrunk; see `note`).
    pub shrunk: Option<SizeRecord>,
    /// The shrunk run's command, naming its schedule file.
    pub command: Option<String>,
    /// The schedule file, relative to the report directory.
    pub schedule_file: Option<String>,
    /// The trace file (Chrome trace JSON), relative to the report directory.
    pub trace_file: Option<String>,
    /// The shrunk run's failure.
    pub failure: Option<String>,
    /// The kept shrink steps.
    pub steps: Vec<String>,
    /// Candidate runs made.
    pub runs: u64,
    /// Why the search ended early, if it did.
    pub stopped_early: Option<String>,
    /// Wall time of the shrink, seconds.
    pub seconds: f64,
    /// Why there is no shrunk run, when there is none.
    pub note: Option<String>,
    /// The shrunk run's timeline, for the report's drawing.
    pub timeline: Option<Timeline>,
}

impl ShrunkRepro {
    /// Original fault events over shrunk (`+1` each), or ticks over ticks, whichever
    /// is larger: the "how much smaller" a report leads with.
    pub fn ratio(&self) -> Option<f64> {
        let shrunk = self.shrunk?;
        let ticks = self.original.ticks as f64 / shrunk.ticks.max(1) as f64;
        let events = (self.original.fault_events + 1) as f64 / (shrunk.fault_events + 1) as f64;
        Some(ticks.max(events))
    }
}

/// The bounds of a campaign's shrinks.
#[derive(Clone, Copy, Debug)]
pub struct ShrinkOptions {
    /// Per group, wall-clock seconds.
    pub seconds: u64,
    /// Per group, candidate runs.
    pub runs: u64,
    /// Groups shrunk at once.
    pub jobs: usize,
}

/// Shrink each failure group's smallest seed (see the module docs), writing the files
/// under `dir`. Returns one entry per group considered, in group order.
pub fn shrink_failure_groups(report: &CampaignReport, dir: &Path, options: ShrinkOptions) -> Vec<ShrunkRepro> {
    let groups: Vec<(String, u64, String)> = report
        .failure_groups()
        .into_iter()
        .filter(|group| !group.signature.starts_with("invalid configuration"))
        .take(SHRINK_GROUPS_MAX)
        .filter_map(|group| {
            let first = group.runs.first()?;
            Some((group.signature.clone(), first.seed, first.command.clone()))
        })
        .collect();
    let results: Mutex<Vec<Option<ShrunkRepro>>> = Mutex::new(vec![None; groups.len()]);
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..options.jobs.clamp(1, groups.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some((signature, seed, command)) = groups.get(index) else {
                        break;
                    };
                    let repro = shrink_one(signature, *seed, command, index, dir, options);
                    if let Ok(mut results) = results.lock() {
                        results[index] = Some(repro);
                    }
                }
            });
        }
    });
    results.into_inner().unwrap_or_default().into_iter().flatten().collect()
}

/// Shrink one group's run; every failure to do so is a `note`, never an error.
fn shrink_one(
    signature: &str,
    seed: u64,
    command: &str,
    index: usize,
    dir: &Path,
    options: ShrinkOptions,
) -> ShrunkRepro {
    let started = Instant::now();
    let mut repro = ShrunkRepro {
        signature: signature.to_owned(),
        seed,
        original_command: command.to_owned(),
        original: SizeRecord::default(),
        shrunk: None,
        command: None,
        schedule_file: None,
        trace_file: None,
        failure: None,
        steps: Vec::new(),
        runs: 0,
        stopped_early: None,
        seconds: 0.0,
        note: None,
        timeline: None,
    };
    let args = match FuzzArgs::from_repro_command(command) {
        Ok((args, _)) => args,
        Err(error) => {
            repro.note = Some(error);
            return repro;
        }
    };
    let bound = Duration::from_secs(options.seconds);
    let mut time_used = || started.elapsed().as_secs_f64() / bound.as_secs_f64().max(f64::MIN_POSITIVE);
    let mut steps = Vec::new();
    let outcome = shrink(
        &args,
        seed,
        ShrinkBounds { runs: options.runs },
        &mut time_used,
        &mut steps,
    );
    repro.seconds = started.elapsed().as_secs_f64();
    let shrunk = match outcome {
        Ok(Some(shrunk)) => shrunk,
        Ok(None) => {
            let said = String::from_utf8_lossy(&steps).trim().to_owned();
            repro.note = Some(if signature.starts_with("panic") {
                "a panicking run leaves no fault schedule to replay, so it is not shrunk".to_owned()
            } else {
                said
            });
            return repro;
        }
        Err(error) => {
            repro.note = Some(format!("shrink output: {error}"));
            return repro;
        }
    };
    repro.original = shrunk.original.into();
    repro.shrunk = Some(shrunk.shrunk.into());
    repro.failure = Some(shrunk.failure.clone());
    repro.steps = shrunk.steps.clone();
    repro.runs = shrunk.runs;
    repro.stopped_early = shrunk.stopped_early.map(str::to_owned);

    let stem = format!("group{}-seed{seed}", index + 1);
    let files = dir.join(SHRUNK_DIR);
    let schedule_file = format!("{SHRUNK_DIR}/{stem}.faults.jsonl");
    let trace_file = format!("{SHRUNK_DIR}/{stem}.trace.json");
    let written = std::fs::create_dir_all(&files)
        .map_err(|error| format!("cannot create {}: {error}", files.display()))
        .and_then(|()| {
            shrunk
                .schedule
                .write(&dir.join(&schedule_file))
                .map_err(|error| error.to_string())
        });
    if let Err(error) = written {
        repro.note = Some(error);
        return repro;
    }
    let mut final_args = shrunk.args.clone();
    final_args.schedule = None;
    final_args.faults_from = Some(dir.join(&schedule_file));
    let command = final_args.repro_command(seed);
    let _ = std::fs::write(
        dir.join(format!("{SHRUNK_DIR}/{stem}.command.txt")),
        format!("{command}\n"),
    );
    repro.command = Some(command);
    repro.schedule_file = Some(schedule_file);

    // The smallest run once more, traced.
    final_args.trace = Some(dir.join(&trace_file));
    if let Ok(report) = fuzz::run(&final_args, seed, &mut std::io::sink())
        && let Some(trace) = report.trace
    {
        let path = dir.join(&trace_file);
        match trace.write_file(&path) {
            Ok(()) => repro.trace_file = Some(trace_file),
            Err(error) => repro.note = Some(format!("cannot write {}: {error}", path.display())),
        }
        repro.timeline = Some(trace.timeline());
    }
    repro.seconds = started.elapsed().as_secs_f64();
    repro
}
