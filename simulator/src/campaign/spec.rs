//! What a campaign runs: profiles x planes x seeds (or the seed corpus), the flags
//! every run shares, and which shard of it this process takes.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::fuzz::{FuzzArgs, Plane, RunFlags};
use crate::profile::load_profile;

/// Flags of `campaign` (run mode).
#[derive(Args, Clone, Debug)]
pub struct CampaignFlags {
    /// Fault profiles: names (none, light, heavy, split, swarm) or paths, comma-separated.
    #[arg(long, default_value = "none,light,heavy,swarm")]
    pub profiles: String,

    /// Workload planes, comma-separated.
    #[arg(long, default_value = "metadata")]
    pub planes: String,

    /// Seeds, inclusive: `A..B` (or a single seed).
    #[arg(long, default_value = "1..100")]
    pub seeds: String,

    /// Run the seed corpus instead: every `workload-fuzz` line of every `*.jsonl` in DIR.
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,

    /// Parallel runs (default: every core).
    #[arg(long)]
    pub jobs: Option<usize>,

    /// Stop starting new runs after this many minutes (runs under way finish).
    #[arg(long)]
    pub minutes: Option<f64>,

    /// Stop starting new runs once this many runs have failed (runs under way
    /// finish): to learn quickly whether a bug is still there, or how long a campaign
    /// takes to catch it (the `first failure:` line). The runs not started are counted
    /// as such in the report.
    #[arg(long, value_name = "N")]
    pub stop_after_failures: Option<u64>,

    /// Where to write report.json and report.html (default: reports/<campaign id>/).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Run only shard K of N (1-based): runs are dealt round-robin in a fixed order, so
    /// N machines with K = 1..N cover the campaign exactly once.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,

    /// Coverage marks the campaign must reach (comma-separated names, as the `coverage:`
    /// lines print them): one that no run reached makes it exit 1, naming the mark. May
    /// be given more than once (the lists add up). A sharded campaign records them in
    /// its report and `campaign merge` checks them over every shard.
    #[arg(long, value_name = "MARKS", action = clap::ArgAction::Append)]
    pub require_marks: Vec<String>,

    /// Explore instead of running every planned run from scratch: branch runs where
    /// they first reach a coverage mark no earlier run reached (or one still rare, or
    /// a hazard: a race the harness marks, `race.*`, or a near miss: a harness check
    /// half way or three quarters of the way to failing, `liveness.commit_stuck_*`,
    /// whose children go first), most
    /// children just after that moment and some in the 100 ticks before it, and give
    /// productive places more runs (see `campaign::explore`). Makes as many runs as the plain
    /// campaign would (the planned runs are its roots, taken in order while the
    /// budget lasts), deterministically for a seed range and budget; `--minutes` may
    /// cut it short. Each branched run's repro command names its `--branch` points.
    /// On a spec file's `sub` line it makes that sub-campaign explore; every exploring
    /// sub-campaign shares one exploration (one map of what was reached), taking turns
    /// in it by weight (children take at most half of each one's work, so its fresh
    /// roots keep the rest), and the exploration is time-shared with the plain
    /// sub-campaigns by its members' weights. With `--shard`, each shard explores from
    /// its own share of the roots. Not with `--corpus`.
    #[arg(long)]
    pub explore: bool,

    /// With `--explore`: search for runs that reach every one of these coverage marks
    /// (comma-separated), e.g. to re-pin a corpus line a re-lock moved off its
    /// scenario. The exploration branches first from the runs that reached the most
    /// of them, and the summary names how many runs reached them all and the first
    /// one's repro command. Marks or watermark levels (`wm.view>=16`).
    #[arg(long, value_name = "MARKS")]
    pub target_marks: Option<String>,

    /// With `--explore`: how a splitpoint's children are made. `fork` (the default)
    /// runs the prefix they share once per batch of siblings and forks a copy of the
    /// worker for each child where its timeline branches; `rerun` runs each child from
    /// scratch, prefix included. Both give every run the same result (the exploration
    /// is the same); fork spends less CPU on prefixes. See ARCHITECTURE.md, "Timelines".
    #[arg(long, value_enum, default_value_t = super::batch::BranchBy::Fork)]
    pub branch_by: super::batch::BranchBy,

    /// Passed to every run: ticks to simulate.
    #[arg(long, default_value_t = 6_000)]
    pub ticks: u64,

    /// Passed to every run: shards per replica (`workload-fuzz --shards`; not to be
    /// confused with `--shard K/N`, which splits the campaign across machines).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=8))]
    pub node_shards: u32,

    /// Do not shrink failures. By default, after the runs, each failure group's
    /// smallest seed is shrunk to a smaller run failing the same way (`workload-fuzz
    /// --shrink`), and its repro command, fault schedule and trace are written under
    /// the report directory's `shrunk/`, drawn as a timeline in report.html.
    #[arg(long)]
    pub no_shrink: bool,

    /// Per failure group, the shrink's wall-clock bound in seconds.
    #[arg(long, default_value_t = 60)]
    pub shrink_seconds: u64,

    /// Per failure group, the shrink's bound in candidate runs (deterministic).
    #[arg(long, default_value_t = 500)]
    pub shrink_runs: u64,

    /// The flags passed to every run, as `workload-fuzz` takes them (same names, same
    /// bounds: the repro command a campaign records always replays).
    #[command(flatten, next_help_heading = "Passed to every run (as workload-fuzz takes them)")]
    pub run: RunFlags,
}

/// One run of a campaign.
#[derive(Clone, Debug)]
pub struct PlannedRun {
    /// Position in its sub-campaign's canonical order (before sharding).
    pub index: u64,
    /// Which sub-campaign it belongs to (an index into [`CampaignSpec::subs`]).
    pub campaign: usize,
    /// Label: the profile.
    pub profile: String,
    /// Label: the plane.
    pub plane: String,
    /// The seed.
    pub seed: u64,
    /// Every flag of the run.
    pub args: FuzzArgs,
}

/// One sub-campaign: a named, weighted part of a campaign with flags of its own (a spec
/// file's `sub` line). A campaign from the command line alone has one, named "".
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SubCampaign {
    /// Its name ("" for a campaign with no spec file sub-campaigns).
    pub name: String,
    /// Its share of the time budget, relative to the others' weights.
    pub weight: f64,
    /// Its flags as the spec file writes them (empty for a command-line campaign).
    pub flags: String,
}

/// Where a sub-campaign's runs come from: a grid of seeds x profiles x planes, made
/// run by run when asked (a night's seed range is far larger than memory), or a list
/// (the corpus).
#[derive(Clone, Debug)]
enum RunSource {
    /// Seeds `first..first + seeds`, outermost; then profiles, then planes.
    Grid {
        first: u64,
        seeds: u64,
        profiles: Vec<String>,
        planes: Vec<Plane>,
        flags: Box<CampaignFlags>,
    },
    /// Runs given one by one.
    List(Vec<RunPlan>),
}

impl RunSource {
    /// Runs in the whole source (before sharding).
    fn len(&self) -> u64 {
        match self {
            RunSource::Grid {
                seeds,
                profiles,
                planes,
                ..
            } => seeds.saturating_mul((profiles.len() * planes.len()) as u64),
            RunSource::List(runs) => runs.len() as u64,
        }
    }

    /// Run `index` of the whole source (`index < len()`).
    fn run(&self, index: u64) -> RunPlan {
        match self {
            RunSource::Grid {
                first,
                profiles,
                planes,
                flags,
                ..
            } => {
                let cells = (profiles.len() * planes.len()) as u64;
                let seed = first + index / cells;
                let cell = (index % cells) as usize;
                let (profile, plane) = (&profiles[cell / planes.len()], planes[cell % planes.len()]);
                (
                    profile.clone(),
                    plane.name().to_owned(),
                    seed,
                    flags.run_args(profile, plane, seed),
                )
            }
            RunSource::List(runs) => runs[index as usize].clone(),
        }
    }
}

/// One sub-campaign, planned: its runs (this shard's), made on demand.
#[derive(Clone, Debug)]
pub struct SubPlan {
    /// Its name, weight and flags.
    pub sub: SubCampaign,
    source: RunSource,
    shard: Option<(u32, u32)>,
    /// Whether it is explored (`--explore`, campaign-wide or on its `sub` line) rather
    /// than run plan by plan.
    pub explore: bool,
    /// The points its exploration searches for (`--target-marks`; empty: none).
    pub targets: Vec<cluster::coverage::Point>,
}

impl SubPlan {
    /// Runs of this sub-campaign in this shard: the source's runs dealt round-robin,
    /// shard k taking indices k-1, k-1+n, k-1+2n, ...
    pub fn len(&self) -> u64 {
        let all = self.source.len();
        match self.shard {
            None => all,
            Some((k, n)) => all.saturating_sub(u64::from(k - 1)).div_ceil(u64::from(n)),
        }
    }

    /// Whether this shard holds none of its runs.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `position`-th run of this sub-campaign in this shard (`position < len()`);
    /// `campaign` is the sub-campaign's index in the spec.
    pub fn run(&self, position: u64, campaign: usize) -> PlannedRun {
        let index = match self.shard {
            None => position,
            Some((k, n)) => u64::from(k - 1) + position * u64::from(n),
        };
        let (profile, plane, seed, args) = self.source.run(index);
        PlannedRun {
            index,
            campaign,
            profile,
            plane,
            seed,
            args,
        }
    }
}

/// A validated campaign.
#[derive(Clone, Debug)]
pub struct CampaignSpec {
    /// The sub-campaigns (at least one) and their runs in this shard.
    pub subs: Vec<SubPlan>,
    /// `(k, n)` if sharded.
    pub shard: Option<(u32, u32)>,
    /// Parallel runs.
    pub jobs: usize,
    /// Time budget for starting runs, seconds.
    pub budget_seconds: Option<f64>,
    /// Failed runs after which no new run starts (`--stop-after-failures`).
    pub stop_after_failures: Option<u64>,
    /// Where the report goes (None: reports/<campaign id>/).
    pub out: Option<PathBuf>,
    /// Short description for the campaign id.
    pub label: String,
    /// Coverage marks the campaign must reach (names, validated).
    pub required_marks: Vec<String>,
    /// How an exploration makes a splitpoint's children (`--branch-by`).
    pub branch_by: super::batch::BranchBy,
}

/// The campaign-wide settings: shard, jobs, time budget (seconds), required marks.
type CampaignWide = (Option<(u32, u32)>, usize, Option<f64>, Vec<String>);

/// A run before it is numbered and sharded: profile, plane, seed and its flags.
type RunPlan = (String, String, u64, FuzzArgs);

/// Parse `--require-marks`: every name must be a coverage mark.
pub fn parse_required_marks(text: Option<&str>) -> Result<Vec<String>, String> {
    let Some(text) = text else { return Ok(Vec::new()) };
    text.split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(|name| {
            cluster::coverage::Mark::from_name(name)
                .map(|mark| mark.name().to_owned())
                .ok_or_else(|| {
                    let names: Vec<&str> = cluster::coverage::Mark::ALL.iter().map(|mark| mark.name()).collect();
                    format!(
                        "--require-marks: {name:?} is not a coverage mark; the marks are: {}",
                        names.join(", ")
                    )
                })
        })
        .collect()
}

/// Parse `A..B` (inclusive) or `A`.
pub fn parse_seed_range(text: &str) -> Result<(u64, u64), String> {
    let parse = |part: &str| {
        part.trim()
            .replace('_', "")
            .parse::<u64>()
            .map_err(|error| format!("--seeds {text:?}: {part:?} is not a seed: {error}"))
    };
    let (first, last) = match text.split_once("..") {
        Some((a, b)) => (parse(a)?, parse(b.trim_start_matches('='))?),
        None => {
            let seed = parse(text)?;
            (seed, seed)
        }
    };
    if first > last {
        return Err(format!("--seeds {text:?} is reversed: {first} is above {last}"));
    }
    Ok((first, last))
}

/// Parse `K/N` (1 <= K <= N).
pub fn parse_shard(text: &str) -> Result<(u32, u32), String> {
    let invalid = || format!("--shard {text:?}: expected K/N with 1 <= K <= N, e.g. 3/8");
    let (k, n) = text.split_once('/').ok_or_else(invalid)?;
    let (k, n): (u32, u32) = (
        k.trim().parse().map_err(|_| invalid())?,
        n.trim().parse().map_err(|_| invalid())?,
    );
    if k == 0 || n == 0 || k > n {
        return Err(invalid());
    }
    Ok((k, n))
}

fn parse_plane(name: &str) -> Result<Plane, String> {
    use clap::ValueEnum;
    Plane::from_str(name, true).map_err(|_| {
        // Listed from the enum, so a new plane is never missing from the message (the
        // hand-written list had left out `contended`).
        let planes: Vec<String> = Plane::value_variants()
            .iter()
            .filter_map(|plane| plane.to_possible_value().map(|value| value.get_name().to_owned()))
            .collect();
        format!("unknown plane {name:?}: expected one of {}", planes.join(", "))
    })
}

/// Every `workload-fuzz` command in the corpus directory, with where it came from.
pub fn corpus_commands(dir: &Path) -> Result<Vec<(String, FuzzArgs)>, String> {
    use clap::Parser;
    let entries = std::fs::read_dir(dir).map_err(|error| format!("--corpus {}: {error}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    files.sort();
    let mut commands = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|error| format!("{}: {error}", file.display()))?;
        for (number, line) in text.lines().enumerate().filter(|(_, line)| !line.trim().is_empty()) {
            let at = format!("{}:{}", file.display(), number + 1);
            let value: serde_json::Value =
                serde_json::from_str(line).map_err(|error| format!("{at}: malformed corpus line: {error}"))?;
            let command = value
                .get("command")
                .and_then(serde_json::Value::as_str)
                .ok_or_else(|| format!("{at}: malformed corpus line: no string field `command`"))?;
            let Some(flags) = command.strip_prefix("workload-fuzz ") else {
                continue;
            };
            let args = FuzzArgs::try_parse_from(std::iter::once("workload-fuzz").chain(flags.split_whitespace()))
                .map_err(|error| format!("{at}: malformed command: {}", error.to_string().trim()))?;
            if args.seed.is_none() {
                return Err(format!("{at}: the command gives no --seed"));
            }
            commands.push((at, args));
        }
    }
    if commands.is_empty() {
        return Err(format!(
            "--corpus {}: no workload-fuzz lines in any *.jsonl",
            dir.display()
        ));
    }
    Ok(commands)
}

impl CampaignFlags {
    /// The arguments of one run.
    fn run_args(&self, profile: &str, plane: Plane, seed: u64) -> FuzzArgs {
        FuzzArgs {
            seed: Some(seed),
            // A planned run is its seed's own; an exploration adds branch points.
            branch: crate::timeline::Branches::none(),
            ticks: self.ticks,
            shards: self.node_shards,
            plane,
            faults: profile.to_owned(),
            run: RunFlags {
                shared: self.run.shared && plane != Plane::Echo,
                ..self.run.clone()
            },
            break_fence: false,
            requests_max: None,
            record_faults: None,
            faults_from: None,
            trace: None,
            shrink: false,
            shrink_seconds: 0,
            shrink_runs: 0,
            shrink_dir: std::path::PathBuf::new(),
            schedule: None,
            keep_fault_schedule: false,
        }
    }

    /// The campaign-wide settings: shard, jobs, time budget, required marks.
    fn campaign_wide(&self) -> Result<CampaignWide, String> {
        let shard = self.shard.as_deref().map(parse_shard).transpose()?;
        let jobs = match self.jobs {
            Some(0) => return Err("--jobs 0 runs nothing; give at least 1".to_owned()),
            Some(jobs) => jobs,
            None => std::thread::available_parallelism().map_or(1, usize::from),
        };
        if let Some(minutes) = self.minutes
            && !(minutes.is_finite() && minutes > 0.0)
        {
            return Err(format!("--minutes {minutes} must be a positive number of minutes"));
        }
        if self.stop_after_failures == Some(0) {
            return Err("--stop-after-failures 0 would start no run; give at least 1".to_owned());
        }
        let required = if self.require_marks.is_empty() {
            Vec::new()
        } else {
            parse_required_marks(Some(&self.require_marks.join(",")))?
        };
        Ok((shard, jobs, self.minutes.map(|minutes| minutes * 60.0), required))
    }

    /// Every run these flags ask for, seeds outermost (so a campaign cut short by its
    /// time budget has still visited every profile and plane), and a label.
    fn run_source(&self) -> Result<(RunSource, String), String> {
        if let Some(dir) = &self.corpus {
            let runs = corpus_commands(dir)?
                .into_iter()
                .map(|(_, args)| {
                    let seed = args.seed.unwrap_or_default();
                    (args.faults.clone(), args.plane.name().to_owned(), seed, args)
                })
                .collect();
            return Ok((RunSource::List(runs), "corpus".to_owned()));
        }
        let (first, last) = parse_seed_range(&self.seeds)?;
        let names = |list: &str| -> Vec<String> {
            list.split(',')
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .map(str::to_owned)
                .collect()
        };
        let (profiles, planes) = (names(&self.profiles), names(&self.planes));
        if profiles.is_empty() || planes.is_empty() {
            return Err("--profiles and --planes each need at least one name".to_owned());
        }
        for profile in &profiles {
            load_profile(profile).map_err(|error| format!("--profiles: {error}"))?;
        }
        let planes: Vec<Plane> = planes.iter().map(|name| parse_plane(name)).collect::<Result<_, _>>()?;
        let label = format!(
            "{}-{}-{first}-{last}",
            profiles.join("+").replace(['/', '.'], "_"),
            self.planes.replace(',', "+")
        );
        let source = RunSource::Grid {
            first,
            seeds: last - first + 1,
            profiles,
            planes,
            flags: Box::new(self.clone()),
        };
        Ok((source, label))
    }

    /// The points `--target-marks` names (checked: names of marks or watermark levels,
    /// and only with `--explore`).
    fn targets(&self) -> Result<Vec<cluster::coverage::Point>, String> {
        let Some(text) = &self.target_marks else {
            return Ok(Vec::new());
        };
        if !self.explore {
            return Err("--target-marks steers an exploration: give --explore too".to_owned());
        }
        let targets: Vec<cluster::coverage::Point> = text
            .split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .map(|name| {
                cluster::coverage::Point::from_name(name).ok_or_else(|| {
                    let marks: Vec<&str> = cluster::coverage::Mark::ALL.iter().map(|mark| mark.name()).collect();
                    let watermarks: Vec<&str> = cluster::coverage::Watermark::ALL
                        .iter()
                        .map(|watermark| watermark.name())
                        .collect();
                    format!(
                        "--target-marks: {name:?} is neither a coverage mark nor a watermark level; the marks are: \
                         {}; a level is a watermark, `>=` and a power of two (`wm.view>=16`), of: {}",
                        marks.join(", "),
                        watermarks.join(", ")
                    )
                })
            })
            .collect::<Result<_, _>>()?;
        if targets.is_empty() {
            return Err("--target-marks: no mark named".to_owned());
        }
        Ok(targets)
    }

    /// Validate the flags and plan the runs (this shard's).
    pub fn plan(&self) -> Result<CampaignSpec, String> {
        let (runs, label) = self.run_source()?;
        let whole = SubCampaign {
            name: String::new(),
            weight: 1.0,
            flags: String::new(),
        };
        let targets = self.targets()?;
        plan_sub_campaigns(self, vec![(whole, runs, self.explore, targets)], label)
    }

    /// Plan a campaign of several sub-campaigns (a spec file's `sub` lines): `self`
    /// holds the campaign-wide flags, `subs` each sub-campaign and its own flags.
    pub fn plan_with_subs(
        &self,
        subs: Vec<(SubCampaign, CampaignFlags)>,
        label: String,
    ) -> Result<CampaignSpec, String> {
        let mut planned = Vec::with_capacity(subs.len());
        for (sub, flags) in subs {
            let (runs, _) = flags
                .run_source()
                .map_err(|error| format!("sub-campaign {}: {error}", sub.name))?;
            let targets = flags
                .targets()
                .map_err(|error| format!("sub-campaign {}: {error}", sub.name))?;
            planned.push((sub, runs, flags.explore, targets));
        }
        plan_sub_campaigns(self, planned, label)
    }
}

/// The campaign of these sub-campaigns, each dealt round-robin over the shards on its
/// own, so every shard holds its share of each.
fn plan_sub_campaigns(
    wide: &CampaignFlags,
    subs: Vec<(SubCampaign, RunSource, bool, Vec<cluster::coverage::Point>)>,
    label: String,
) -> Result<CampaignSpec, String> {
    let (shard, jobs, budget_seconds, required_marks) = wide.campaign_wide()?;
    if wide.corpus.is_some() && (wide.explore || subs.iter().any(|(_, _, explore, _)| *explore)) {
        return Err("--explore with --corpus: the corpus pins runs to replay, not roots to explore from".to_owned());
    }
    let subs = subs
        .into_iter()
        .map(|(sub, source, explore, targets)| SubPlan {
            sub,
            source,
            shard,
            explore,
            targets,
        })
        .collect();
    Ok(CampaignSpec {
        subs,
        shard,
        jobs,
        budget_seconds,
        stop_after_failures: wide.stop_after_failures,
        out: wide.out.clone(),
        label,
        required_marks,
        branch_by: wide.branch_by,
    })
}

impl CampaignSpec {
    /// Runs this process plans (its shard), over every sub-campaign.
    pub fn planned(&self) -> u64 {
        self.subs.iter().map(SubPlan::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_ranges_are_inclusive_and_reversed_ones_are_refused() {
        assert_eq!(parse_seed_range("1..2000"), Ok((1, 2000)));
        assert_eq!(parse_seed_range("7"), Ok((7, 7)));
        assert_eq!(parse_seed_range("5..=9"), Ok((5, 9)));
        assert!(parse_seed_range("9..5").expect_err("reversed").contains("reversed"));
        assert!(parse_seed_range("a..5").expect_err("bad").contains("is not a seed"));
    }

    #[test]
    fn a_campaign_refuses_every_run_flag_value_workload_fuzz_refuses() {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            flags: CampaignFlags,
        }
        for (flag, value) in [
            ("--crash-prob", "3"),
            ("--restart-prob", "1.5"),
            ("--power-loss-prob", "2"),
            ("--replicas", "7"),
            ("--journal-slots", "1"),
        ] {
            let fuzz = FuzzArgs::try_parse_from(["workload-fuzz", flag, value]);
            let campaign = Wrap::try_parse_from(["campaign", flag, value]);
            let (Err(fuzz), Err(campaign)) = (fuzz, campaign) else {
                panic!("{flag} {value}: both must refuse it");
            };
            assert!(campaign.to_string().contains(flag), "{campaign}");
            assert_eq!(fuzz.kind(), campaign.kind(), "{flag} {value}");
        }
    }

    #[test]
    fn shards_deal_each_sub_campaign_once_and_seeds_come_outermost() {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            flags: CampaignFlags,
        }
        let plan = |extra: &[&str]| {
            let args = [
                "campaign",
                "--profiles",
                "none,light",
                "--planes",
                "metadata,echo",
                "--seeds",
                "5..9",
            ];
            Wrap::parse_from(args.iter().chain(extra)).flags.plan().expect("valid")
        };
        let whole = plan(&[]);
        assert_eq!(whole.planned(), 20);
        let sub = &whole.subs[0];
        let firsts: Vec<(String, String, u64)> = (0..4)
            .map(|position| {
                let run = sub.run(position, 0);
                (run.profile, run.plane, run.seed)
            })
            .collect();
        assert_eq!(
            firsts,
            [
                ("none".to_owned(), "metadata".to_owned(), 5),
                ("none".to_owned(), "echo".to_owned(), 5),
                ("light".to_owned(), "metadata".to_owned(), 5),
                ("light".to_owned(), "echo".to_owned(), 5)
            ],
            "every profile and plane of a seed before the next seed"
        );
        let mut seen = std::collections::BTreeSet::new();
        for k in 1..=3 {
            let shard = plan(&["--shard", &format!("{k}/3")]);
            let sub = &shard.subs[0];
            for position in 0..sub.len() {
                let run = sub.run(position, 0);
                assert!(seen.insert(run.index), "run {} dealt twice", run.index);
            }
        }
        assert_eq!(seen.len(), 20, "three shards cover the campaign exactly once");
    }

    #[test]
    fn shards_are_one_based_and_bounded() {
        assert_eq!(parse_shard("3/8"), Ok((3, 8)));
        for bad in ["0/8", "9/8", "x/2", "3", "1/0"] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }
}
