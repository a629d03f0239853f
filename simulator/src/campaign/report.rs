//! The campaign report: every run's outcome, as `report.json`, plus merging shard
//! reports into one.
//!
//! The JSON is the contract between shards, the merge step, CI and people's tools:
//! field names are stable, and `format` is bumped on any incompatible change.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::harness::failover::{quantile, ticks_or_dash};

/// The report format version; a reader refuses other versions.
pub const REPORT_FORMAT_VERSION: u32 = 1;

/// A run's verdict, as the report spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunVerdict {
    /// Every check held and enough was compared.
    Pass,
    /// A check failed (or the run panicked).
    Fail,
    /// Nothing failed but too little was compared.
    Vacuous,
    /// The configuration was refused.
    Invalid,
}

impl fmt::Display for RunVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RunVerdict::Pass => "pass",
            RunVerdict::Fail => "fail",
            RunVerdict::Vacuous => "vacuous",
            RunVerdict::Invalid => "invalid",
        })
    }
}

/// One simulated run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The sub-campaign it belongs to ("" when the campaign has none; absent from
    /// reports written before sub-campaigns existed).
    #[serde(default)]
    pub campaign: String,
    /// Fault profile (name or path).
    pub profile: String,
    /// Workload plane.
    pub plane: String,
    /// The seed.
    pub seed: u64,
    /// The full command that replays this run.
    pub command: String,
    /// The verdict.
    pub verdict: RunVerdict,
    /// The failure's normalised signature (fail and invalid only).
    pub signature: Option<String>,
    /// What the run said about its failure, vacuity or invalidity.
    pub detail: Option<String>,
    /// Ticks simulated (drain included).
    pub ticks: u64,
    /// Ops committed (the canonical chain's length).
    pub commits: u64,
    /// Committed ops checked against the canonical chain, over all replicas.
    pub ops_compared: u64,
    /// Checkpoints made durable (absent from reports written before they were counted).
    #[serde(default)]
    pub checkpoints: u64,
    /// State transfers installed (absent from older reports).
    #[serde(default)]
    pub transfers_installed: u64,
    /// Frames the adversary sent (absent without one, and from older reports).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub adversary_sent: u64,
    /// Of those, the ones that reached a replica: every one refused, or the run
    /// failed (absent without an adversary).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub adversary_refused: u64,
    /// Failover time of each primary loss that ended, ticks, ascending (absent from
    /// older reports; see `harness::failover`).
    #[serde(default)]
    pub failover_ticks: Vec<u64>,
    /// Primary losses still open when the run ended.
    #[serde(default)]
    pub failover_unresolved: u64,
    /// View changes started while the old primary was healthy.
    #[serde(default)]
    pub spurious_view_changes: u64,
    /// Wall time of the run, milliseconds.
    pub wall_ms: f64,
    /// The executor's schedule hash, hex.
    pub schedule_hash: String,
    /// Executor polls the run made: with `group_ticks`, the deterministic measure of
    /// its work that shares an exploration's roots between its sub-campaigns
    /// (`campaign::exploration::run_cost`; absent from older reports).
    #[serde(default)]
    pub polls: u64,
    /// Replica-group ticks the run checked (`fuzz::RunReport::group_ticks`).
    #[serde(default)]
    pub group_ticks: u64,
    /// The coverage marks the run reached, by name (`cluster::coverage`; absent from
    /// reports written before marks existed).
    #[serde(default)]
    pub coverage: Vec<String>,
    /// When the run finished, seconds after its campaign started (0 outside a
    /// campaign): time to first catch is the least of its failed runs'.
    #[serde(default)]
    pub finished_seconds: f64,
    /// How deep the run went: each watermark's highest value, by name
    /// (`cluster::coverage::Watermark`; absent from reports written before them).
    #[serde(default)]
    pub watermarks: BTreeMap<String, u64>,
    /// Where the run stands in an exploration's tree (`campaign --explore`); absent
    /// for a plain campaign's runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explore: Option<ExploreRecord>,
}

/// A run of an exploration: its timeline and what made and what it found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExploreRecord {
    /// Its branch points as `--branch` takes them ("" for a root).
    pub branches: String,
    /// The branch points of the run it branched from ("" for a child of a root);
    /// `None` for a root.
    pub parent: Option<String>,
    /// The mark whose first reach made the splitpoint it branched at (children).
    pub trigger: Option<String>,
    /// The tick its parent reached `trigger` at (children): the branch point lies just
    /// after it, or in its lead-up (before it; see `campaign::explore`).
    #[serde(default)]
    pub trigger_tick: Option<u64>,
    /// Points (marks, watermark levels) it reached before any earlier run of the
    /// exploration did.
    pub first_in_exploration: Vec<String>,
    /// Marks it reached by its own randomness, after its last branch point (all of its
    /// marks, for a root): a child's prefix reaches what its parent did.
    #[serde(default)]
    pub own_marks: Vec<String>,
}

/// What an exploration did, over all its sub-campaigns.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExploreSummary {
    /// Root runs (planned runs taken from scratch).
    pub roots: u64,
    /// Branched runs.
    pub children: u64,
    /// Splitpoints found (a point new or rare to the exploration, reached in some run at
    /// some tick).
    pub splitpoints: u64,
    /// Marks first reached by a branched run rather than a root, by name.
    pub marks_first_reached_by_branching: Vec<String>,
    /// Watermark levels (`wm.view>=16`) first reached by a branched run rather than a
    /// root.
    #[serde(default)]
    pub levels_first_reached_by_branching: Vec<String>,
    /// A directed exploration's targets (`--target-marks`, comma-separated; "" if
    /// none).
    #[serde(default)]
    pub target_marks: String,
    /// Runs that reached every target.
    #[serde(default)]
    pub runs_reaching_targets: u64,
    /// The repro command of the first run (in plan order) that reached every target.
    #[serde(default)]
    pub first_reaching_targets: Option<String>,
}

impl ExploreSummary {
    /// The `explore:` line a campaign prints.
    pub fn line(&self) -> String {
        format!(
            "explore: {} runs ({} roots, {} branched), {} splitpoints; marks first reached by branching: {}; \
             watermark levels first reached by branching: {}",
            self.roots + self.children,
            self.roots,
            self.children,
            self.splitpoints,
            if self.marks_first_reached_by_branching.is_empty() {
                "none".to_owned()
            } else {
                self.marks_first_reached_by_branching.join(", ")
            },
            if self.levels_first_reached_by_branching.is_empty() {
                "none".to_owned()
            } else {
                self.levels_first_reached_by_branching.join(", ")
            }
        )
    }

    /// Add another shard's exploration to this one (`campaign merge`): counts add up,
    /// the points first reached by branching join (each first in its shard's
    /// exploration), and the first run to reach the targets is the first shard's that
    /// had one.
    pub fn absorb(&mut self, other: &ExploreSummary) {
        self.roots += other.roots;
        self.children += other.children;
        self.splitpoints += other.splitpoints;
        for (mine, theirs) in [
            (
                &mut self.marks_first_reached_by_branching,
                &other.marks_first_reached_by_branching,
            ),
            (
                &mut self.levels_first_reached_by_branching,
                &other.levels_first_reached_by_branching,
            ),
        ] {
            mine.extend(theirs.iter().cloned());
            mine.sort();
            mine.dedup();
        }
        if self.target_marks.is_empty() {
            self.target_marks = other.target_marks.clone();
        }
        self.runs_reaching_targets += other.runs_reaching_targets;
        if self.first_reaching_targets.is_none() {
            self.first_reaching_targets = other.first_reaching_targets.clone();
        }
    }

    /// The `targets:` line of a directed exploration (`None` if it had no targets).
    pub fn targets_line(&self) -> Option<String> {
        if self.target_marks.is_empty() {
            return None;
        }
        Some(match &self.first_reaching_targets {
            Some(command) => format!(
                "targets: {} runs reached every one of {}; the first: {command}",
                self.runs_reaching_targets, self.target_marks
            ),
            None => format!("targets: no run reached every one of {}", self.target_marks),
        })
    }
}

impl CampaignReport {
    /// The `failover:` line: every timed primary loss of every run (see
    /// `harness::failover`), its quantiles, and the spurious view changes.
    pub fn failover_line(&self) -> String {
        let mut ticks: Vec<u64> = self
            .runs
            .iter()
            .flat_map(|run| run.failover_ticks.iter().copied())
            .collect();
        ticks.sort_unstable();
        let show = |q: f64| ticks_or_dash(quantile(&ticks, q));
        let unresolved: u64 = self.runs.iter().map(|run| run.failover_unresolved).sum();
        let spurious: u64 = self.runs.iter().map(|run| run.spurious_view_changes).sum();
        format!(
            "failover: {} primary losses timed over all runs, p50 {} p99 {} max {} ticks; {unresolved} still open \
             at their run's end; {spurious} view changes started while the old primary was healthy",
            ticks.len(),
            show(0.5),
            show(0.99),
            show(1.0),
        )
    }
}

impl RunRecord {
    /// The key that orders runs and identifies them across shards.
    pub fn key(&self) -> (String, String, String, u64, String) {
        (
            self.campaign.clone(),
            self.profile.clone(),
            self.plane.clone(),
            self.seed,
            // An exploration runs a seed on several timelines; the root sorts first.
            self.explore
                .as_ref()
                .map(|explore| explore.branches.clone())
                .unwrap_or_default(),
        )
    }
}

/// A whole campaign (or one shard of it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CampaignReport {
    /// [`REPORT_FORMAT_VERSION`].
    pub format: u32,
    /// A name for the campaign, unique per invocation.
    pub campaign_id: String,
    /// The command that ran it.
    pub command: String,
    /// The simulator version that ran it (seeds replay only on the same build).
    pub build: String,
    /// `(k, n)` when this is shard k of n; `None` for a whole or merged campaign.
    pub shard: Option<(u32, u32)>,
    /// Runs the campaign planned (in this shard).
    pub planned: u64,
    /// Runs not started because the time budget ran out (or a failure stopped the
    /// campaign: `--stop-after-failures`).
    pub not_started: u64,
    /// Wall time, seconds.
    pub wall_seconds: f64,
    /// Every run, in canonical order (sub-campaign, profile, plane, seed).
    pub runs: Vec<RunRecord>,
    /// The sub-campaigns, with what each planned and left unstarted (one, named "", for
    /// a campaign without a spec file's `sub` lines; absent from older reports).
    #[serde(default)]
    pub sub_campaigns: Vec<SubCampaignRecord>,
    /// Coverage marks the campaign must reach; a merge checks them over every shard.
    #[serde(default)]
    pub required_marks: Vec<String>,
    /// Each failure group's shrunk repro (absent from reports written before shrinks,
    /// and from campaigns run with `--no-shrink`).
    #[serde(default)]
    pub shrunk: Vec<super::shrink::ShrunkRepro>,
    /// A real-cluster campaign's schedules and availability figures (`nemesis`; absent
    /// from simulator campaigns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nemesis: Option<crate::nemesis_format::NemesisSummary>,
    /// What `--explore` did (absent from plain campaigns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explore: Option<ExploreSummary>,
}

/// One sub-campaign of a report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubCampaignRecord {
    /// Its name and flags as the spec file gave them.
    #[serde(flatten)]
    pub sub: crate::campaign::spec::SubCampaign,
    /// Runs it planned (in this shard).
    pub planned: u64,
    /// Runs of it not started because the time budget ran out (or a failure stopped
    /// the campaign: `--stop-after-failures`). In an exploration shared by several
    /// sub-campaigns, its planned runs less the runs it made, or 0 when its children
    /// made it more.
    pub not_started: u64,
}

/// Counts by verdict.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Passed runs.
    pub pass: u64,
    /// Failed runs.
    pub fail: u64,
    /// Vacuous runs.
    pub vacuous: u64,
    /// Invalid runs.
    pub invalid: u64,
}

impl Totals {
    /// Every run counted.
    pub fn runs(&self) -> u64 {
        self.pass + self.fail + self.vacuous + self.invalid
    }

    fn add(&mut self, verdict: RunVerdict) {
        match verdict {
            RunVerdict::Pass => self.pass += 1,
            RunVerdict::Fail => self.fail += 1,
            RunVerdict::Vacuous => self.vacuous += 1,
            RunVerdict::Invalid => self.invalid += 1,
        }
    }
}

/// Runs that failed the same way.
#[derive(Clone, Debug, PartialEq)]
pub struct FailureGroup {
    /// The shared signature.
    pub signature: String,
    /// The runs, smallest seed first.
    pub runs: Vec<RunRecord>,
}

/// Why a report could not be read or merged.
#[derive(Debug)]
pub struct ReportError(pub String);

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ReportError {}

/// How a campaign reached one coverage mark.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarkReach {
    /// Runs that reached it.
    pub runs: u64,
    /// The first run (in report order: sub-campaign, profile, plane, seed, branch
    /// points) that reached it.
    pub first: (String, String, String, u64, String),
    /// Runs that reached it, per plane.
    pub by_plane: BTreeMap<String, u64>,
}

impl CampaignReport {
    /// The coverage marks no run reached, in the table's order.
    pub fn marks_never_reached(&self) -> Vec<&'static str> {
        let reached = self.coverage();
        cluster::coverage::Mark::ALL
            .iter()
            .map(|mark| mark.name())
            .filter(|name| !reached.contains_key(*name))
            .collect()
    }

    /// Every coverage mark some run reached, by name, with how it was reached.
    pub fn coverage(&self) -> BTreeMap<String, MarkReach> {
        let mut reached: BTreeMap<String, MarkReach> = BTreeMap::new();
        for run in &self.runs {
            for mark in &run.coverage {
                let reach = reached.entry(mark.clone()).or_insert_with(|| MarkReach {
                    runs: 0,
                    first: run.key(),
                    by_plane: BTreeMap::new(),
                });
                reach.runs += 1;
                *reach.by_plane.entry(run.plane.clone()).or_default() += 1;
            }
        }
        reached
    }

    /// Per watermark, the deepest run: its value and the run's repro command; in the
    /// table's order, watermarks no run raised left out.
    pub fn deepest(&self) -> Vec<(&'static str, u64, &str)> {
        cluster::coverage::Watermark::ALL
            .iter()
            .filter_map(|watermark| {
                let name = watermark.name();
                self.runs
                    .iter()
                    .filter_map(|run| Some((*run.watermarks.get(name)?, run)))
                    .filter(|(value, _)| *value > 0)
                    .max_by_key(|(value, run)| (*value, std::cmp::Reverse(run.key())))
                    .map(|(value, run)| (name, value, run.command.as_str()))
            })
            .collect()
    }

    /// Totals over all runs.
    pub fn totals(&self) -> Totals {
        let mut totals = Totals::default();
        for run in &self.runs {
            totals.add(run.verdict);
        }
        totals
    }

    /// Totals per (profile, plane), in order.
    pub fn totals_by_cell(&self) -> BTreeMap<(String, String), Totals> {
        let mut cells: BTreeMap<(String, String), Totals> = BTreeMap::new();
        for run in &self.runs {
            cells
                .entry((run.profile.clone(), run.plane.clone()))
                .or_default()
                .add(run.verdict);
        }
        cells
    }

    /// Failed and invalid runs grouped by signature: largest group first, each group's
    /// runs smallest seed first (the cheapest repro on top).
    pub fn failure_groups(&self) -> Vec<FailureGroup> {
        let mut groups: BTreeMap<String, Vec<RunRecord>> = BTreeMap::new();
        for run in self
            .runs
            .iter()
            .filter(|run| matches!(run.verdict, RunVerdict::Fail | RunVerdict::Invalid))
        {
            let signature = run.signature.clone().unwrap_or_else(|| "unclassified".to_owned());
            groups.entry(signature).or_default().push(run.clone());
        }
        let mut groups: Vec<FailureGroup> = groups
            .into_iter()
            .map(|(signature, mut runs)| {
                runs.sort_by(|a, b| (a.seed, &a.profile, &a.plane).cmp(&(b.seed, &b.profile, &b.plane)));
                FailureGroup { signature, runs }
            })
            .collect();
        groups.sort_by(|a, b| {
            b.runs
                .len()
                .cmp(&a.runs.len())
                .then_with(|| a.signature.cmp(&b.signature))
        });
        groups
    }

    /// Read `report.json` (a file, or a directory holding one).
    pub fn read(path: &Path) -> Result<CampaignReport, ReportError> {
        let file = if path.is_dir() {
            path.join("report.json")
        } else {
            path.to_path_buf()
        };
        let text = std::fs::read_to_string(&file)
            .map_err(|error| ReportError(format!("cannot read {}: {error}", file.display())))?;
        let report: CampaignReport = serde_json::from_str(&text)
            .map_err(|error| ReportError(format!("{} is not a campaign report: {error}", file.display())))?;
        if report.format != REPORT_FORMAT_VERSION {
            return Err(ReportError(format!(
                "{} has report format {}, this build reads format {REPORT_FORMAT_VERSION}",
                file.display(),
                report.format
            )));
        }
        Ok(report)
    }

    /// Merge shard reports into one campaign. Refuses reports of different builds and
    /// runs that appear twice (overlapping shards).
    pub fn merge(reports: Vec<CampaignReport>) -> Result<CampaignReport, ReportError> {
        let Some(first) = reports.first() else {
            return Err(ReportError(
                "nothing to merge: give at least one report directory".to_owned(),
            ));
        };
        let build = first.build.clone();
        let first_id = first.campaign_id.clone();
        let mut merged = CampaignReport {
            format: REPORT_FORMAT_VERSION,
            campaign_id: format!(
                "{}-merged",
                first.campaign_id.split("-shard").next().unwrap_or(&first.campaign_id)
            ),
            command: first.command.clone(),
            build: build.clone(),
            shard: None,
            planned: 0,
            not_started: 0,
            wall_seconds: 0.0,
            runs: Vec::new(),
            sub_campaigns: Vec::new(),
            required_marks: first.required_marks.clone(),
            shrunk: Vec::new(),
            nemesis: None,
            explore: None,
        };
        let mut seen = BTreeMap::new();
        for report in reports {
            if report.build != build {
                return Err(ReportError(format!(
                    "cannot merge reports of different builds ({} and {}): seeds replay only on the build that ran them",
                    build, report.build
                )));
            }
            if report.required_marks != merged.required_marks {
                return Err(ReportError(format!(
                    "cannot merge {} and {}: they require different coverage marks (shards of different specs?)",
                    first_id, report.campaign_id
                )));
            }
            for sub in report.sub_campaigns {
                match merged
                    .sub_campaigns
                    .iter_mut()
                    .find(|known| known.sub.name == sub.sub.name)
                {
                    Some(known) if known.sub != sub.sub => {
                        return Err(ReportError(format!(
                            "cannot merge {first_id} and {}: sub-campaign {:?} has different flags or weight (shards of different specs?)",
                            report.campaign_id, sub.sub.name
                        )));
                    }
                    Some(known) => {
                        known.planned += sub.planned;
                        known.not_started += sub.not_started;
                    }
                    None => merged.sub_campaigns.push(sub),
                }
            }
            if let Some(explore) = &report.explore {
                merged
                    .explore
                    .get_or_insert_with(ExploreSummary::default)
                    .absorb(explore);
            }
            merged.shrunk.extend(report.shrunk);
            merged.planned += report.planned;
            merged.not_started += report.not_started;
            merged.wall_seconds = merged.wall_seconds.max(report.wall_seconds);
            for run in report.runs {
                if let Some(previous) = seen.insert(run.key(), report.campaign_id.clone()) {
                    return Err(ReportError(format!(
                        "run {}{}/{}/seed {} appears in both {previous} and {}: overlapping shards",
                        if run.campaign.is_empty() {
                            String::new()
                        } else {
                            format!("{}/", run.campaign)
                        },
                        run.profile,
                        run.plane,
                        run.seed,
                        report.campaign_id
                    )));
                }
                merged.runs.push(run);
            }
        }
        merged.runs.sort_by_key(RunRecord::key);
        // One shrunk repro per signature: the smallest seed's, as a single campaign's.
        merged
            .shrunk
            .sort_by(|a, b| (&a.signature, a.seed).cmp(&(&b.signature, b.seed)));
        merged
            .shrunk
            .dedup_by(|later, first| later.signature == first.signature);
        Ok(merged)
    }
}

/// For `skip_serializing_if`: a count that is zero is left out of the report.
fn is_zero(count: &u64) -> bool {
    *count == 0
}
