//! What a campaign runs: profiles x planes x seeds (or the seed corpus), the flags
//! every run shares, and which shard of it this process takes.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::fuzz::{FuzzArgs, NetworkOverrides, Plane};
use crate::profile::load_profile;

/// Flags of `campaign` (run mode).
#[derive(Args, Clone, Debug)]
pub struct CampaignFlags {
    /// Fault profiles: names (none, light, heavy, swarm) or paths, comma-separated.
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

    /// Where to write report.json and report.html (default: reports/<campaign id>/).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Run only shard K of N (1-based): runs are dealt round-robin in a fixed order, so
    /// N machines with K = 1..N cover the campaign exactly once.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,

    /// Coverage marks the campaign must reach (comma-separated names, as the `coverage:`
    /// lines print them): one that no run reached makes it exit 1, naming the mark. A
    /// sharded campaign gives them to `campaign merge` instead.
    #[arg(long, value_name = "MARKS")]
    pub require_marks: Option<String>,

    /// Passed to every run: ticks to simulate.
    #[arg(long, default_value_t = 6_000)]
    pub ticks: u64,

    /// Passed to every run: replicas.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=6))]
    pub replicas: u32,

    /// Passed to every run: clients.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub clients: u32,

    /// Passed to every run: shards per replica (`workload-fuzz --shards`; not to be
    /// confused with `--shard K/N`, which splits the campaign across machines).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=8))]
    pub node_shards: u32,

    /// Passed to every run: crash probability per tick.
    #[arg(long, default_value_t = 0.0)]
    pub crash_prob: f64,

    /// Passed to every run: restart probability per tick.
    #[arg(long, default_value_t = 0.0)]
    pub restart_prob: f64,

    /// Passed to every run: allow crashing primaries.
    #[arg(long)]
    pub crash_primary: bool,

    /// Passed to every run: probability that a crash is a power loss.
    #[arg(long, default_value_t = 0.0, value_parser = crate::fuzz::parse_probability)]
    pub power_loss_prob: f64,

    /// Passed to every run: probability that one disk write or sync fails with EIO,
    /// overriding each profile's (see workload-fuzz).
    #[arg(long, value_parser = crate::fuzz::parse_probability)]
    pub disk_error_prob: Option<f64>,

    /// Passed to every run: probability, per restart of the budget's corruptible
    /// replica, that a bit of its WAL or checkpoint rots, overriding each profile's (see
    /// workload-fuzz).
    #[arg(long, value_parser = crate::fuzz::parse_probability)]
    pub disk_corruption_prob: Option<f64>,

    /// Passed to every run: probability that one disk write or sync is slow, stalling
    /// its node (see workload-fuzz), overriding each profile's.
    #[arg(long, value_parser = crate::fuzz::parse_probability)]
    pub disk_slow_prob: Option<f64>,

    /// Passed to every run: probability per tick of a whole-cluster power outage (see
    /// workload-fuzz), overriding each profile's.
    #[arg(long, value_parser = crate::fuzz::parse_probability)]
    pub power_outage_prob: Option<f64>,

    /// Passed to every run: `budgeted`, `off` or `unsafe` (see workload-fuzz).
    #[arg(long, default_value = "budgeted", value_parser = crate::fuzz::parse_storage_faults)]
    pub storage_faults: crate::fuzz::StorageFaultMode,

    /// Passed to every run: `sim` (production formats on a simulated disk) or `memory`.
    #[arg(long, default_value = "sim", value_parser = crate::fuzz::parse_storage)]
    pub storage: crate::harness::StorageModel,

    /// Passed to every run: journal slots of the metadata group (see workload-fuzz).
    #[arg(long, default_value_t = cluster::vsr::constants::JOURNAL_SLOTS_DEFAULT,
          value_parser = clap::value_parser!(u64).range(
              cluster::vsr::constants::JOURNAL_OPS_MIN..=cluster::vsr::constants::JOURNAL_OPS_MAX))]
    pub journal_slots: u64,

    /// Passed to every run: prepare ring entries of each partition group.
    #[arg(long, default_value_t = cluster::vsr::constants::RING_ENTRIES_DEFAULT,
          value_parser = clap::value_parser!(u64).range(
              cluster::vsr::constants::JOURNAL_OPS_MIN..=cluster::vsr::constants::JOURNAL_OPS_MAX))]
    pub ring_entries: u64,

    /// Passed to every run: frame bytes every journal holds at most.
    #[arg(long, default_value_t = cluster::vsr::constants::RING_BYTES_DEFAULT,
          value_parser = clap::value_parser!(u64).range(
              cluster::vsr::constants::RING_BYTES_MIN..=cluster::vsr::constants::RING_BYTES_MAX))]
    pub ring_bytes: u64,

    /// Passed to every run: fewest commits for a non-vacuous run.
    #[arg(long, default_value_t = 1)]
    pub min_commits: u64,

    /// Passed to every run: fewest ops compared for a non-vacuous run.
    #[arg(long, default_value_t = 1)]
    pub min_ops_compared: u64,

    /// Passed to every run: echo plane's fewest matched replies.
    #[arg(long, default_value_t = 1)]
    pub min_replies: u64,

    /// Passed to every run: heal the network and restart replicas before draining.
    #[arg(long)]
    pub heal_before_quiesce: bool,

    /// Passed to every run: skip the drain.
    #[arg(long)]
    pub no_quiesce: bool,

    /// Passed to every run: the test-only broken check.
    #[arg(long, hide = true)]
    pub break_check: bool,

    /// Passed to every run: a test-only broken answer to disk faults (see workload-fuzz).
    #[arg(long, hide = true, default_value = "none", value_parser = crate::fuzz::parse_storage_break)]
    pub break_storage: cluster::vsr::StorageBreak,

    /// Passed to every run: network overrides.
    #[command(flatten)]
    pub network: NetworkOverrides,
}

/// One run of a campaign.
#[derive(Clone, Debug)]
pub struct PlannedRun {
    /// Position in the canonical order (before sharding).
    pub index: u64,
    /// Label: the profile.
    pub profile: String,
    /// Label: the plane.
    pub plane: String,
    /// The seed.
    pub seed: u64,
    /// Every flag of the run.
    pub args: FuzzArgs,
}

/// A validated campaign.
#[derive(Clone, Debug)]
pub struct CampaignSpec {
    /// The runs this process will make (its shard), in canonical order.
    pub runs: Vec<PlannedRun>,
    /// `(k, n)` if sharded.
    pub shard: Option<(u32, u32)>,
    /// Parallel runs.
    pub jobs: usize,
    /// Time budget for starting runs, seconds.
    pub budget_seconds: Option<f64>,
    /// Where the report goes (None: reports/<campaign id>/).
    pub out: Option<PathBuf>,
    /// Short description for the campaign id.
    pub label: String,
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
        format!("unknown plane {name:?}: expected one of echo, metadata, partition, mixed, uniform, lifecycle")
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
            ticks: self.ticks,
            replicas: self.replicas,
            clients: self.clients,
            shards: self.node_shards,
            plane,
            faults: profile.to_owned(),
            min_replies: self.min_replies,
            min_commits: self.min_commits,
            min_ops_compared: self.min_ops_compared,
            crash_prob: self.crash_prob,
            restart_prob: self.restart_prob,
            crash_primary: self.crash_primary,
            power_loss_prob: self.power_loss_prob,
            storage: self.storage,
            disk_error_prob: self.disk_error_prob,
            disk_corruption_prob: self.disk_corruption_prob,
            disk_slow_prob: self.disk_slow_prob,
            power_outage_prob: self.power_outage_prob,
            storage_faults: self.storage_faults,
            journal_slots: self.journal_slots,
            ring_entries: self.ring_entries,
            ring_bytes: self.ring_bytes,
            heal_before_quiesce: self.heal_before_quiesce,
            no_quiesce: self.no_quiesce,
            network: self.network.clone(),
            break_check: self.break_check,
            break_fence: false,
            break_storage: self.break_storage,
        }
    }

    /// Validate the flags and plan the runs (this shard's).
    pub fn plan(&self) -> Result<CampaignSpec, String> {
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
        let mut all = Vec::new();
        let label;
        if let Some(dir) = &self.corpus {
            for (at, args) in corpus_commands(dir)? {
                let seed = args.seed.unwrap_or_default();
                all.push((args.faults.clone(), args.plane.name().to_owned(), seed, args, at));
            }
            label = "corpus".to_owned();
        } else {
            let (first, last) = parse_seed_range(&self.seeds)?;
            let profiles: Vec<&str> = self
                .profiles
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .collect();
            let planes: Vec<&str> = self
                .planes
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .collect();
            if profiles.is_empty() || planes.is_empty() {
                return Err("--profiles and --planes each need at least one name".to_owned());
            }
            for profile in &profiles {
                load_profile(profile).map_err(|error| format!("--profiles: {error}"))?;
            }
            let planes: Vec<Plane> = planes.iter().map(|name| parse_plane(name)).collect::<Result<_, _>>()?;
            for &profile in &profiles {
                for &plane in &planes {
                    for seed in first..=last {
                        all.push((
                            profile.to_owned(),
                            plane.name().to_owned(),
                            seed,
                            self.run_args(profile, plane, seed),
                            String::new(),
                        ));
                    }
                }
            }
            label = format!(
                "{}-{}-{first}-{last}",
                profiles.join("+").replace(['/', '.'], "_"),
                self.planes.replace(',', "+")
            );
        }
        let runs = all
            .into_iter()
            .enumerate()
            .map(|(index, (profile, plane, seed, args, _))| PlannedRun {
                index: index as u64,
                profile,
                plane,
                seed,
                args,
            })
            .filter(|run| shard.is_none_or(|(k, n)| run.index % u64::from(n) == u64::from(k - 1)))
            .collect();
        Ok(CampaignSpec {
            runs,
            shard,
            jobs,
            budget_seconds: self.minutes.map(|minutes| minutes * 60.0),
            out: self.out.clone(),
            label,
        })
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
    fn shards_are_one_based_and_bounded() {
        assert_eq!(parse_shard("3/8"), Ok((3, 8)));
        for bad in ["0/8", "9/8", "x/2", "3", "1/0"] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }
}
