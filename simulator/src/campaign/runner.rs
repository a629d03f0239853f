//! Running a campaign: every planned run in parallel on `--jobs` worker threads, each
//! isolated (a panic or failed check in one never stops the others), with a progress
//! display and a time budget for starting runs.
//!
//! Under a time budget the sub-campaigns share it by weight: each worker takes its next
//! run from the source that has used the least run time for its weight, so a budget
//! that ends early has still spent it in the spec's proportions. A source is a plain
//! sub-campaign's plan, or the exploration every exploring sub-campaign shares
//! (`--explore`, see `campaign::explore`), weighing their weights summed, whose runs
//! come from its explorer in plan order. Which runs fit in the budget depends on the
//! machine; each run itself replays bit for bit.
#![allow(
    clippy::disallowed_methods,
    reason = "a campaign measures wall time for its report and its time budget; no run reads it"
)]

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use std::sync::{Condvar, Mutex};

use super::batch::{BranchBy, execute_batch};
use super::exploration::Exploration;
use super::report::{CampaignReport, ExploreSummary, REPORT_FORMAT_VERSION, RunRecord, RunVerdict, SubCampaignRecord};
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
pub fn execute_with_marks(run: &PlannedRun, campaign: &str) -> (RunRecord, Vec<(cluster::coverage::Point, u64)>) {
    let started = Instant::now();
    let mut out = Vec::new();
    let outcome = crate::panic_report::catch_run(|| fuzz::run(&run.args, run.seed, &mut out));
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
        polls: 0,
        group_ticks: 0,
        // Read even after a panic: the marks show how far the run got.
        coverage: fuzz::marks_reached(),
        finished_seconds: 0.0,
        watermarks: cluster::coverage::watermarks()
            .into_iter()
            .map(|(watermark, value)| (watermark.name().to_owned(), value))
            .collect(),
        explore: None,
    };
    let mut first_reached = Vec::new();
    match outcome {
        Ok(Ok(mut report)) => {
            first_reached = std::mem::take(&mut report.first_reached);
            record.ticks = report.ticks;
            record.polls = report.polls;
            record.group_ticks = report.group_ticks;
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

/// How long an idle worker waits before it looks for a run again, in milliseconds: a
/// bound on a missed wake-up (the time budget is checked on each look), not the usual
/// path, which is woken as soon as a run finishes. Workers wait only while every
/// sub-campaign with runs left is an exploration whose lag holds planning back.
const WORKER_WAIT_MS: u64 = 200;

/// Where runs come from: one sub-campaign's plan, or an exploration shared by one or
/// more exploring sub-campaigns.
enum Source {
    /// Sub-campaign `sub`'s planned runs in order: the next one's position, and how
    /// many there are.
    Plan { sub: usize, next: u64, len: u64 },
    /// An exploration (`--explore`), which plans its runs as results come in.
    Explore(Box<Exploration>),
}

/// What a worker is to do next.
enum Pick {
    /// Make these runs of sub-campaign `sub`, taken from source `source`.
    Run {
        source: usize,
        sub: usize,
        /// One run, or a batch of an exploration's siblings (see `campaign::batch`),
        /// each with its index in the exploration's plan if the source explores.
        runs: Vec<(PlannedRun, Option<usize>)>,
    },
    /// Nothing can start now, but an exploration will plan more once a run finishes.
    Wait,
    /// Nothing is left.
    Done,
}

/// The weighted choice of the next run, between the sources: each plain
/// sub-campaign, and each exploration with its members' weights summed.
struct Dispatcher<'a> {
    spec: &'a CampaignSpec,
    sources: Vec<Source>,
    /// Per source: its weight.
    weights: Vec<f64>,
    /// Per source: run time of its finished runs, seconds.
    seconds_done: Vec<f64>,
    /// Per source: finished runs.
    finished: Vec<u64>,
    /// Per source: runs under way.
    in_flight: Vec<u64>,
    /// Records of finished runs of sub-campaigns run plan by plan (explorations keep
    /// theirs until they end), with their sub-campaign.
    records: Vec<(usize, RunRecord)>,
}

/// The exploring sub-campaigns of `spec` grouped into the explorations they share:
/// those that search for the same targets explore together, in spec order.
fn exploration_members(spec: &CampaignSpec) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (sub, plan) in spec.subs.iter().enumerate().filter(|(_, plan)| plan.explore) {
        match groups
            .iter_mut()
            .find(|group| spec.subs[group[0]].targets == plan.targets)
        {
            Some(group) => group.push(sub),
            None => groups.push(vec![sub]),
        }
    }
    groups
}

impl<'a> Dispatcher<'a> {
    fn new(spec: &'a CampaignSpec) -> Dispatcher<'a> {
        let mut sources: Vec<Source> = spec
            .subs
            .iter()
            .enumerate()
            .filter(|(_, plan)| !plan.explore)
            .map(|(sub, plan)| Source::Plan {
                sub,
                next: 0,
                len: plan.len(),
            })
            .collect();
        sources.extend(
            exploration_members(spec)
                .into_iter()
                .map(|members| Source::Explore(Box::new(Exploration::new(spec, members)))),
        );
        let weights: Vec<f64> = sources
            .iter()
            .map(|source| match source {
                Source::Plan { sub, .. } => spec.subs[*sub].sub.weight,
                Source::Explore(exploration) => {
                    exploration.members().iter().map(|&sub| spec.subs[sub].sub.weight).sum()
                }
            })
            .collect();
        let count = sources.len();
        Dispatcher {
            spec,
            sources,
            weights,
            seconds_done: vec![0.0; count],
            finished: vec![0; count],
            in_flight: vec![0; count],
            records: Vec::new(),
        }
    }

    /// Whether source `source` can start a run now.
    fn ready(&self, source: usize) -> bool {
        match &self.sources[source] {
            Source::Plan { next, len, .. } => next < len,
            Source::Explore(exploration) => exploration.has_planned(),
        }
    }

    /// The next run to start: from the ready source with the least run time (finished
    /// plus an estimate for those under way) per unit of weight.
    fn next(&mut self) -> Pick {
        let share = |source: usize| {
            let mean = if self.finished[source] == 0 {
                FIRST_RUN_SECONDS_GUESS
            } else {
                self.seconds_done[source] / self.finished[source] as f64
            };
            (self.seconds_done[source] + self.in_flight[source] as f64 * mean) / self.weights[source]
        };
        let Some(source) = (0..self.sources.len())
            .filter(|&source| self.ready(source))
            .min_by(|&a, &b| share(a).total_cmp(&share(b)).then(a.cmp(&b)))
        else {
            let exploring = self
                .sources
                .iter()
                .any(|source| matches!(source, Source::Explore(exploration) if exploration.is_running()));
            return if exploring { Pick::Wait } else { Pick::Done };
        };
        let pick = match &mut self.sources[source] {
            Source::Plan { sub, next, .. } => {
                *next += 1;
                Pick::Run {
                    source,
                    sub: *sub,
                    runs: vec![(self.spec.subs[*sub].run(*next - 1, *sub), None)],
                }
            }
            Source::Explore(exploration) => {
                let batch = exploration.take_batch(self.spec.branch_by == BranchBy::Fork);
                let sub = batch.first().expect("a ready exploration has a planned run").1;
                Pick::Run {
                    source,
                    sub,
                    runs: batch.into_iter().map(|(index, _, run)| (run, Some(index))).collect(),
                }
            }
        };
        if let Pick::Run { runs, .. } = &pick {
            self.in_flight[source] += runs.len() as u64;
        }
        pick
    }

    /// A run of sub-campaign `sub`, taken from source `source`, finished.
    fn done(
        &mut self,
        source: usize,
        sub: usize,
        explore: Option<usize>,
        record: RunRecord,
        first_reached: Vec<(cluster::coverage::Point, u64)>,
    ) {
        self.in_flight[source] -= 1;
        self.finished[source] += 1;
        self.seconds_done[source] += record.wall_ms / 1_000.0;
        match (&mut self.sources[source], explore) {
            (Source::Explore(exploration), Some(index)) => {
                exploration.finish(self.spec, index, record, first_reached);
            }
            _ => self.records.push((sub, record)),
        }
    }

    /// Branched runs merged so far and splitpoints found, over every exploration.
    fn explore_progress(&self) -> Option<(u64, u64)> {
        self.sources
            .iter()
            .filter_map(|source| match source {
                Source::Explore(exploration) => Some(exploration.progress()),
                Source::Plan { .. } => None,
            })
            .reduce(|a, b| (a.0 + b.0, a.1 + b.1))
    }

    /// Every finished run's record with its sub-campaign, and the explorations'
    /// summary if any sub-campaign explored.
    fn into_records(self) -> (Vec<(usize, RunRecord)>, Option<ExploreSummary>) {
        let mut records = self.records;
        let mut summary = None;
        for source in self.sources {
            if let Source::Explore(exploration) = source {
                let (explored, explored_summary) = exploration.finish_all();
                records.extend(explored);
                summary
                    .get_or_insert_with(ExploreSummary::default)
                    .absorb(&explored_summary);
            }
        }
        (records, summary)
    }
}

/// Run every planned run of `spec` (exploring the sub-campaigns that explore);
/// `campaign_id` and `command` label the report.
pub fn run_campaign(spec: &CampaignSpec, campaign_id: &str, command: &str) -> Result<CampaignReport, String> {
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
    let wake = Condvar::new();
    let lock = || dispatcher.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let worker = || {
        loop {
            if deadline.is_some_and(|deadline| Instant::now() >= deadline)
                || spec
                    .stop_after_failures
                    .is_some_and(|enough| failed.load(Ordering::Relaxed) >= enough)
            {
                wake.notify_all();
                return;
            }
            let mut guard = lock();
            let (source, sub, runs) = match guard.next() {
                Pick::Run { source, sub, runs } => (source, sub, runs),
                Pick::Done => {
                    wake.notify_all();
                    return;
                }
                Pick::Wait => {
                    drop(
                        wake.wait_timeout(guard, Duration::from_millis(WORKER_WAIT_MS))
                            .unwrap_or_else(std::sync::PoisonError::into_inner),
                    );
                    continue;
                }
            };
            drop(guard);
            let (runs, explore): (Vec<PlannedRun>, Vec<Option<usize>>) = runs.into_iter().unzip();
            let results = execute_batch(&runs, &spec.subs[sub].sub.name, spec.branch_by);
            let explored = {
                let mut guard = lock();
                for ((mut record, first_reached), explore) in results.into_iter().zip(explore) {
                    record.finished_seconds = started.elapsed().as_secs_f64();
                    if record.verdict == RunVerdict::Fail {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                    guard.done(source, sub, explore, record, first_reached);
                }
                guard.explore_progress()
            };
            wake.notify_all();
            let finished = done.fetch_add(runs.len() as u64, Ordering::Relaxed) + runs.len() as u64;
            let failures = failed.load(Ordering::Relaxed);
            match &bar {
                Some(bar) => {
                    bar.inc(runs.len() as u64);
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
                        let explored = explored.map_or(String::new(), |(children, splitpoints)| {
                            format!(" ({children} branched, {splitpoints} splitpoints)")
                        });
                        println!(
                            "campaign: {finished} runs{explored}, {failures} failed, {rate:.1} runs/s, {remaining:.0} s left"
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
    if let Some(enough) = spec.stop_after_failures
        && failed.load(Ordering::Relaxed) >= enough
    {
        println!("campaign: stopped after {enough} failed run(s) (--stop-after-failures {enough})");
    }
    let (records, explore) = dispatcher
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .into_records();
    let mut sub_campaigns: Vec<SubCampaignRecord> = spec
        .subs
        .iter()
        .map(|sub| SubCampaignRecord {
            sub: sub.sub.clone(),
            planned: sub.len(),
            not_started: sub.len(),
        })
        .collect();
    // A sub-campaign that shares an exploration may make more runs than it planned
    // (children of its runs spend the exploration's budget, which is every member's
    // plan together): then none of its runs counts as not started.
    for (campaign, _) in &records {
        let sub = &mut sub_campaigns[*campaign];
        sub.not_started = sub.not_started.saturating_sub(1);
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
        explore,
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
