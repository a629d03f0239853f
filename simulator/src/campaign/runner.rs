//! Running a campaign: every planned run in parallel on `--jobs` worker threads, each
//! isolated (a panic or failed check in one never stops the others), with a progress
//! display and a time budget for starting runs.
//!
//! Under a time budget the sub-campaigns share it by weight: each worker takes its next
//! run from the sub-campaign that has used the least run time for its weight, so a
//! budget that ends early has still spent it in the spec's proportions. Which runs fit
//! in the budget depends on the machine; each run itself replays bit for bit.
#![allow(
    clippy::disallowed_methods,
    reason = "a campaign measures wall time for its report and its time budget; no run reads it"
)]

use std::io::IsTerminal;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use super::report::{CampaignReport, REPORT_FORMAT_VERSION, RunRecord, RunVerdict, SubCampaignRecord};
use super::spec::{CampaignSpec, PlannedRun};
use crate::fuzz::{self, Verdict};
use crate::panic_report::describe_panic;
use crate::signature::signature;

/// Make one run and describe it; `campaign` names its sub-campaign.
pub fn execute(run: &PlannedRun, campaign: &str) -> RunRecord {
    execute_with_marks(run, campaign).0
}

/// [`execute`], and the coverage marks the run reached with the tick that first reached
/// each (empty after a panic: an exploration branches only runs that ended).
pub fn execute_with_marks(run: &PlannedRun, campaign: &str) -> (RunRecord, Vec<(cluster::coverage::Mark, u64)>) {
    let started = Instant::now();
    let mut out = Vec::new();
    let outcome = catch_unwind(AssertUnwindSafe(|| fuzz::run(&run.args, run.seed, &mut out)));
    let wall_ms = started.elapsed().as_secs_f64() * 1_000.0;
    let command = run.args.repro_command(run.seed);
    let mut record = RunRecord {
        campaign: campaign.to_owned(),
        profile: run.profile.clone(),
        plane: run.plane.clone(),
        seed: run.seed,
        command,
        verdict: RunVerdict::Pass,
        signature: None,
        detail: None,
        ticks: 0,
        commits: 0,
        ops_compared: 0,
        checkpoints: 0,
        transfers_installed: 0,
        adversary_sent: 0,
        adversary_refused: 0,
        failover_ticks: Vec::new(),
        failover_unresolved: 0,
        spurious_view_changes: 0,
        wall_ms,
        schedule_hash: String::new(),
        // Read even after a panic: the marks show how far the run got.
        coverage: fuzz::marks_reached(),
        explore: None,
    };
    let mut first_reached = Vec::new();
    match outcome {
        Ok(Ok(mut report)) => {
            first_reached = std::mem::take(&mut report.first_reached);
            record.ticks = report.ticks;
            record.commits = report.commits;
            record.ops_compared = report.ops_compared;
            record.checkpoints = report.checkpoints;
            record.transfers_installed = report.transfers_installed;
            (record.adversary_sent, record.adversary_refused) = report.adversary;
            record.failover_ticks = report.failover.ended_ticks.clone();
            record.failover_unresolved = report.failover.unresolved;
            record.spurious_view_changes = report.failover.spurious;
            record.schedule_hash = format!("{:#018x}", report.schedule_hash);
            match report.verdict {
                Verdict::Pass => {}
                Verdict::Failed(reason) => {
                    record.verdict = RunVerdict::Fail;
                    record.signature = Some(signature(&reason));
                    record.detail = Some(reason);
                }
                Verdict::Vacuous(reason) => {
                    record.verdict = RunVerdict::Vacuous;
                    record.detail = Some(reason);
                }
                Verdict::Invalid(reason) => {
                    record.verdict = RunVerdict::Invalid;
                    record.signature = Some(format!("invalid configuration: {}", signature(&reason)));
                    record.detail = Some(reason);
                }
            }
        }
        Ok(Err(error)) => {
            record.verdict = RunVerdict::Fail;
            record.signature = Some("output error".to_owned());
            record.detail = Some(error.to_string());
        }
        Err(payload) => {
            let (signature, detail) = describe_panic(payload.as_ref());
            record.verdict = RunVerdict::Fail;
            record.signature = Some(signature);
            record.detail = Some(detail);
        }
    }
    (record, first_reached)
}

/// Plain progress lines when stdout is not a terminal: a line for every twentieth of
/// the campaign (of its runs, or of its time budget when it has one: a night's seed
/// range is never run to the end), so logs stay short at any size.
const PLAIN_PROGRESS_LINES: u64 = 20;

/// Run time assumed for a run of a sub-campaign none of whose runs has finished yet,
/// seconds: only orders the first picks; measured times replace it within a few runs.
const FIRST_RUN_SECONDS_GUESS: f64 = 1.0;

/// The weighted choice of the next run: one queue per sub-campaign.
struct Dispatcher {
    /// Per sub-campaign: its next run's position, and its runs in this shard.
    cursors: Vec<(u64, u64)>,
    /// Per sub-campaign: its weight.
    weights: Vec<f64>,
    /// Per sub-campaign: run time of its finished runs, seconds.
    seconds_done: Vec<f64>,
    /// Per sub-campaign: finished runs.
    finished: Vec<u64>,
    /// Per sub-campaign: runs under way.
    in_flight: Vec<u64>,
}

impl Dispatcher {
    fn new(spec: &CampaignSpec) -> Dispatcher {
        let subs = spec.subs.len();
        Dispatcher {
            cursors: spec.subs.iter().map(|sub| (0, sub.len())).collect(),
            weights: spec.subs.iter().map(|sub| sub.sub.weight).collect(),
            seconds_done: vec![0.0; subs],
            finished: vec![0; subs],
            in_flight: vec![0; subs],
        }
    }

    /// The next run to start: from the sub-campaign with the least run time (finished
    /// plus an estimate for those under way) per unit of weight.
    fn next(&mut self) -> Option<(usize, u64)> {
        let share = |sub: usize| {
            let mean = if self.finished[sub] == 0 {
                FIRST_RUN_SECONDS_GUESS
            } else {
                self.seconds_done[sub] / self.finished[sub] as f64
            };
            (self.seconds_done[sub] + self.in_flight[sub] as f64 * mean) / self.weights[sub]
        };
        let sub = (0..self.cursors.len())
            .filter(|&sub| self.cursors[sub].0 < self.cursors[sub].1)
            .min_by(|&a, &b| share(a).total_cmp(&share(b)).then(a.cmp(&b)))?;
        self.in_flight[sub] += 1;
        let position = self.cursors[sub].0;
        self.cursors[sub].0 += 1;
        Some((sub, position))
    }

    fn done(&mut self, sub: usize, seconds: f64) {
        self.in_flight[sub] -= 1;
        self.finished[sub] += 1;
        self.seconds_done[sub] += seconds;
    }
}

/// Run every planned run of `spec`; `campaign_id` and `command` label the report.
pub fn run_campaign(spec: &CampaignSpec, campaign_id: &str, command: &str) -> Result<CampaignReport, String> {
    if spec.explore {
        return super::explore::run_exploration(spec, campaign_id, command);
    }
    let started = Instant::now();
    let deadline = spec
        .budget_seconds
        .map(|seconds| started + Duration::from_secs_f64(seconds));
    let planned = spec.planned();
    let done = AtomicU64::new(0);
    let failed = AtomicU64::new(0);
    let terminal = std::io::stdout().is_terminal();
    let bar = if terminal {
        let bar = ProgressBar::new(planned);
        let style = ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40}] {pos}/{len} runs {per_sec} failures: {msg} eta {eta}",
        )
        .map_err(|error| format!("progress bar template: {error}"))?;
        bar.set_style(style.progress_chars("=> "));
        bar.set_message("0");
        Some(bar)
    } else {
        None
    };
    let print_every = (planned / PLAIN_PROGRESS_LINES).max(1);
    // The next twentieth of the time budget to print a line for (budgeted campaigns).
    let last_line = AtomicU64::new(0);
    let print_lock = Mutex::new(());
    let dispatcher = Mutex::new(Dispatcher::new(spec));
    let records = Mutex::new(Vec::new());
    let worker = || {
        loop {
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return;
            }
            let Some((campaign, position)) = dispatcher
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .next()
            else {
                return;
            };
            let run = &spec.subs[campaign].run(position, campaign);
            let record = execute(run, &spec.subs[campaign].sub.name);
            dispatcher
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .done(run.campaign, record.wall_ms / 1_000.0);
            if record.verdict == RunVerdict::Fail {
                failed.fetch_add(1, Ordering::Relaxed);
            }
            records
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push((run.campaign, record));
            let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
            let failures = failed.load(Ordering::Relaxed);
            match &bar {
                Some(bar) => {
                    bar.inc(1);
                    bar.set_message(failures.to_string());
                }
                None => {
                    let elapsed = started.elapsed().as_secs_f64().max(1e-9);
                    let line_due = match spec.budget_seconds {
                        // The twentieth of the budget this run finished in, if no line
                        // was printed for it yet.
                        Some(budget) => {
                            let twentieth = ((elapsed / budget) * PLAIN_PROGRESS_LINES as f64) as u64;
                            last_line.fetch_max(twentieth + 1, Ordering::Relaxed) <= twentieth
                        }
                        None => finished.is_multiple_of(print_every) || finished == planned,
                    };
                    if line_due {
                        let _guard = print_lock.lock();
                        let rate = finished as f64 / elapsed;
                        let remaining = match spec.budget_seconds {
                            Some(budget) => (budget - elapsed).max(0.0),
                            None => planned.saturating_sub(finished) as f64 / rate.max(1e-9),
                        };
                        println!(
                            "campaign: {finished} runs, {failures} failed, {rate:.1} runs/s, {remaining:.0} s left"
                        );
                    }
                }
            }
        }
    };
    std::thread::scope(|scope| {
        for _ in 0..spec.jobs {
            scope.spawn(worker);
        }
    });
    if let Some(bar) = bar {
        bar.finish();
    }
    let records = records.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut sub_campaigns: Vec<SubCampaignRecord> = spec
        .subs
        .iter()
        .map(|sub| SubCampaignRecord {
            sub: sub.sub.clone(),
            planned: sub.len(),
            not_started: sub.len(),
        })
        .collect();
    for (campaign, _) in &records {
        sub_campaigns[*campaign].not_started -= 1;
    }
    let mut runs: Vec<RunRecord> = records.into_iter().map(|(_, record)| record).collect();
    runs.sort_by_key(RunRecord::key);
    Ok(CampaignReport {
        format: REPORT_FORMAT_VERSION,
        campaign_id: campaign_id.to_owned(),
        command: command.to_owned(),
        build: build_id(),
        shard: spec.shard,
        planned,
        not_started: planned - runs.len() as u64,
        wall_seconds: started.elapsed().as_secs_f64(),
        runs,
        sub_campaigns,
        required_marks: spec.required_marks.clone(),
        shrunk: Vec::new(),
        nemesis: None,
        explore: None,
    })
}

/// What identifies the build that ran a campaign: seeds replay only on the same build.
pub fn build_id() -> String {
    format!(
        "simulator {} ({})",
        env!("CARGO_PKG_VERSION"),
        env!("SIMULATOR_BUILD_COMMIT")
    )
}
