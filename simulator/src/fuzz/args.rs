//! The `workload-fuzz` command line, and the repro command that replays it.

use clap::{Parser, ValueEnum};

use cluster::node::JournalBounds;

use cluster::vsr::constants::JOURNAL_SLOTS_DEFAULT;

use super::run_flags::RunFlags;
use crate::harness::StorageModel;
use crate::network::config::{NetworkConfig, PartitionMode, PartitionSymmetry};
use crate::profile::{mode_name, symmetry_name};
use crate::timeline::Branches;

/// Run one simulated cluster from one seed and judge it.
///
/// Every packet delay, loss, partition and task switch is drawn from --seed, so the
/// same command on the same build prints the same output, byte for byte (stdout;
/// timings go to stderr). A failing run prints one line starting with
/// `workload-fuzz FAILED, reproduce with:` followed by the full command.
///
/// Exit codes: 0 pass; 1 a check failed (or a panic); 2 invalid configuration;
/// 3 vacuous (the run compared too little to prove anything).
#[derive(Parser, Clone, Debug)]
#[command(name = "workload-fuzz", version, about, long_about)]
pub struct FuzzArgs {
    /// The run's seed (decimal or 0x-hex). Omitted: one is drawn and printed.
    #[arg(long, value_parser = parse_seed)]
    pub seed: Option<u64>,

    /// Branch the run's timeline: `TICK:SALT[,TICK:SALT...]`, ticks strictly
    /// increasing. As each of those ticks starts, every choice stream (network,
    /// scheduler, crashes and restarts, disks, outages, the adversary, the workload) is
    /// reseeded from its own next draw and the tick and salt; the world the seed built
    /// (profile and swarm draws, buggify knobs, clocks, flags) stays. The run up to the
    /// first point is exactly the seed's, and the same points replay the same run byte
    /// for byte. `campaign --explore` makes these where a run first reaches something
    /// rare; its repro commands name them. Consensus planes only.
    #[arg(long, value_name = "TICK:SALT,...", value_parser = Branches::parse, default_value = "", hide_default_value = true)]
    pub branch: Branches,

    /// Ticks to simulate (1 tick = 10 ms of cluster time).
    #[arg(long, default_value_t = 10_000)]
    pub ticks: u64,

    /// Shards per replica. Each partition's group lives on the shard its id hashes to,
    /// the metadata group on shard 0; a packet enters a replica on a shard drawn from
    /// its own seed stream and takes a router hop to the owner when it lands elsewhere.
    /// The swarm profile draws it instead (the banner says what it drew); the echo
    /// plane always runs one.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=8))]
    pub shards: u32,

    /// What the clients do. `echo` exercises the seam, executor and network with an
    /// echo service; the consensus planes (metadata, partition, mixed, uniform,
    /// lifecycle) run the cluster under the workload's weight table for that plane,
    /// each client in its own namespace, every answer predicted; `contended` has every
    /// client race on shared partitions, groups and user names, and checks each
    /// object's history for linearizability.
    #[arg(long, value_enum, default_value_t = Plane::Echo)]
    pub plane: Plane,

    /// Fault profile: none, light, heavy, split (long partitions that depose live primaries),
    /// swarm, or a path to a profile file (.json).
    #[arg(long, default_value = "none")]
    pub faults: String,

    /// The flags a campaign passes to every run (see [`RunFlags`]).
    #[command(flatten)]
    pub run: RunFlags,

    /// Hand out at most this many requests over all clients (logins included), then
    /// let the run go on without new ones: a smaller workload (what `--shrink` cuts).
    #[arg(long)]
    pub requests_max: Option<u64>,

    /// Write the faults the run injected to FILE, one JSON object per line: crashes
    /// (and power cuts), restarts, partitions and heals, path clogs, disk-error
    /// windows, WAL rot and outages, each on its tick. Edit it and give it back with
    /// `--faults-from`.
    #[arg(long, value_name = "FILE")]
    pub record_faults: Option<std::path::PathBuf>,

    /// Take the run's faults from FILE (as `--record-faults` writes it) instead of
    /// drawing them; the workload, the packet coins and the scheduler still follow the
    /// seed. The file of a run, given back with the same flags, replays that run
    /// exactly; an edited one makes another deterministic run (a fault that does not
    /// fit when its tick comes, such as a crash the budget forbids, is skipped).
    #[arg(long, value_name = "FILE")]
    pub faults_from: Option<std::path::PathBuf>,

    /// Write a timeline of the run to FILE in the Chrome trace event format (open it
    /// in https://ui.perfetto.dev or chrome://tracing): a track per replica and group
    /// with its status and view, commits and heads as counters, checkpoints, client
    /// requests from send to answer, every fault, and the failing check. Virtual time
    /// only, so it is as deterministic as the run; bounded (the file says what it
    /// dropped).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<std::path::PathBuf>,

    /// On a failure, search for a smaller run that fails the same way (same failure
    /// signature): the failing tick, fewer fault events (delta debugging over the
    /// schedule), fault classes off, fewer clients, shards and replicas, fewer
    /// requests. Prints each step and the smallest repro, with its schedule file
    /// (next to `--shrink-dir`).
    #[arg(long)]
    pub shrink: bool,

    /// Wall-clock bound of `--shrink`, in seconds. The search is deterministic until
    /// the bound stops it (the output says when it did).
    #[arg(long, default_value_t = 60)]
    pub shrink_seconds: u64,

    /// Bound of `--shrink` in candidate runs: the deterministic bound.
    #[arg(long, default_value_t = 500)]
    pub shrink_runs: u64,

    /// Where `--shrink` writes the smallest repro's schedule (and trace, with
    /// `--trace`): `shrunk-<seed>.faults.jsonl` and `shrunk-<seed>.trace.json`.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub shrink_dir: std::path::PathBuf,

    /// An in-memory schedule to replay (a shrink's candidates); takes precedence over
    /// `--faults-from`.
    #[arg(skip)]
    pub schedule: Option<crate::fault_schedule::FaultSchedule>,

    /// Keep the run's fault events for its report (a shrink's candidates need them).
    #[arg(skip)]
    pub keep_fault_schedule: bool,

    /// Test-only: disable the partition plane's consumer-group owner fence, so that
    /// tests can check the lifecycle plane notices a stale owner's write succeeding.
    #[arg(long, hide = true)]
    pub break_fence: bool,
}

/// Workload planes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Plane {
    /// Echo service over the simulated network (foundations smoke workload).
    Echo,
    /// Metadata operations through the metadata VSR group.
    Metadata,
    /// Partition writes, polls and consumer offsets through the partition groups, with
    /// enough metadata to create them.
    Partition,
    /// Metadata and partition operations mixed.
    Mixed,
    /// Every action at equal weight.
    Uniform,
    /// Topic replacement and consumer-group hand-offs under writes; must see the owner
    /// fence refuse a stale owner at least once, or the run is vacuous.
    Lifecycle,
    /// Clients that share a topic's partitions, consumer groups and user names and race
    /// on them; every object's history is checked for linearizability at the end (a
    /// run that checked no contended operation is vacuous).
    Contended,
}

impl Plane {
    /// The flag value.
    pub fn name(self) -> &'static str {
        match self {
            Plane::Echo => "echo",
            Plane::Metadata => "metadata",
            Plane::Partition => "partition",
            Plane::Mixed => "mixed",
            Plane::Uniform => "uniform",
            Plane::Lifecycle => "lifecycle",
            Plane::Contended => "contended",
        }
    }
}

/// One flag per network parameter; each replaces the profile's value when given.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct NetworkOverrides {
    /// Override: floor of the one-way delay, ticks.
    #[arg(long)]
    pub delay_min: Option<u64>,
    /// Override: mean of the exponential one-way delay, ticks.
    #[arg(long)]
    pub delay_mean: Option<u64>,
    /// Override: probability a packet is lost.
    #[arg(long)]
    pub packet_loss: Option<f64>,
    /// Override: probability a packet is delivered twice.
    #[arg(long)]
    pub packet_replay: Option<f64>,
    /// Override: probability a packet is corrupted in transit.
    #[arg(long)]
    pub packet_corruption: Option<f64>,
    /// Override: packets a link holds before evicting.
    #[arg(long)]
    pub link_capacity: Option<usize>,
    /// Override: per-tick probability the network partitions.
    #[arg(long)]
    pub partition_prob: Option<f64>,
    /// Override: per-tick probability a partition heals.
    #[arg(long)]
    pub unpartition_prob: Option<f64>,
    /// Override: minimum ticks a partition stands.
    #[arg(long)]
    pub partition_stability: Option<u64>,
    /// Override: minimum ticks between partitions.
    #[arg(long)]
    pub unpartition_stability: Option<u64>,
    /// Override: partition shape.
    #[arg(long, value_parser = parse_mode)]
    pub partition_mode: Option<PartitionMode>,
    /// Override: partition symmetry.
    #[arg(long, value_parser = parse_symmetry)]
    pub partition_symmetry: Option<PartitionSymmetry>,
    /// Override: per-tick, per-path probability a path clogs.
    #[arg(long)]
    pub clog_prob: Option<f64>,
    /// Override: mean clog duration, ticks.
    #[arg(long)]
    pub clog_duration: Option<u64>,
    /// Override: largest replica clock offset, microseconds.
    #[arg(long)]
    pub clock_offset_max: Option<u64>,
    /// Override: largest replica clock drift, ppm.
    #[arg(long)]
    pub clock_drift_max: Option<u64>,
}

fn parse_seed(text: &str) -> Result<u64, String> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16),
        None => text.replace('_', "").parse(),
    };
    parsed.map_err(|error| format!("{text:?} is not a 64-bit seed (decimal or 0x-hex): {error}"))
}

fn parse_mode(text: &str) -> Result<PartitionMode, String> {
    [
        PartitionMode::None,
        PartitionMode::UniformSize,
        PartitionMode::UniformPartition,
        PartitionMode::IsolateSingle,
    ]
    .into_iter()
    .find(|&mode| mode_name(mode) == text)
    .ok_or_else(|| format!("{text:?} is not a partition mode (none, uniform-size, uniform-partition, isolate-single)"))
}

fn parse_symmetry(text: &str) -> Result<PartitionSymmetry, String> {
    [PartitionSymmetry::Symmetric, PartitionSymmetry::Asymmetric]
        .into_iter()
        .find(|&symmetry| symmetry_name(symmetry) == text)
        .ok_or_else(|| format!("{text:?} is not a partition symmetry (symmetric, asymmetric)"))
}

impl NetworkOverrides {
    /// Apply every given override to `network`.
    pub fn apply(&self, network: &mut NetworkConfig) {
        let n = network;
        macro_rules! set {
            ($($flag:ident => $field:ident),* $(,)?) => {
                $(if let Some(value) = self.$flag { n.$field = value; })*
            };
        }
        set!(
            delay_min => one_way_delay_min_ticks,
            delay_mean => one_way_delay_mean_ticks,
            packet_loss => packet_loss_probability,
            packet_replay => packet_replay_probability,
            packet_corruption => packet_corruption_probability,
            link_capacity => link_capacity_packets,
            partition_prob => partition_probability,
            unpartition_prob => unpartition_probability,
            partition_stability => partition_stability_ticks,
            unpartition_stability => unpartition_stability_ticks,
            partition_mode => partition_mode,
            partition_symmetry => partition_symmetry,
            clog_prob => path_clog_probability,
            clog_duration => path_clog_duration_mean_ticks,
            clock_offset_max => clock_offset_max_micros,
            clock_drift_max => clock_drift_max_ppm,
        );
    }

    /// The given overrides as flags, in declaration order.
    fn flags(&self) -> Vec<String> {
        let mut flags = Vec::new();
        macro_rules! push {
            ($($flag:ident => $name:literal),* $(,)?) => {
                $(if let Some(value) = &self.$flag { flags.push(format!("--{} {}", $name, value)); })*
            };
        }
        push!(
            delay_min => "delay-min",
            delay_mean => "delay-mean",
            packet_loss => "packet-loss",
            packet_replay => "packet-replay",
            packet_corruption => "packet-corruption",
            link_capacity => "link-capacity",
            partition_prob => "partition-prob",
            unpartition_prob => "unpartition-prob",
            partition_stability => "partition-stability",
            unpartition_stability => "unpartition-stability",
            clog_prob => "clog-prob",
            clog_duration => "clog-duration",
            clock_offset_max => "clock-offset-max",
            clock_drift_max => "clock-drift-max",
        );
        if let Some(mode) = self.partition_mode {
            flags.push(format!("--partition-mode {}", mode_name(mode)));
        }
        if let Some(symmetry) = self.partition_symmetry {
            flags.push(format!("--partition-symmetry {}", symmetry_name(symmetry)));
        }
        flags
    }
}

/// A probability: a finite number in 0..=1.
pub fn parse_probability(text: &str) -> Result<f64, String> {
    let value: f64 = text.parse().map_err(|_| format!("{text:?} is not a number"))?;
    if !(0.0..=1.0).contains(&value) {
        return Err(format!("{text} is not a probability (0 to 1)"));
    }
    Ok(value)
}

/// How `--storage-faults` treats the disk-fault flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StorageFaultMode {
    /// As asked, within the budget.
    Budgeted,
    /// None at all.
    Off,
    /// As asked, budget lifted: exploration, never a pass.
    Unsafe,
}

impl StorageFaultMode {
    /// The name the command line takes.
    pub fn name(self) -> &'static str {
        match self {
            StorageFaultMode::Budgeted => "budgeted",
            StorageFaultMode::Off => "off",
            StorageFaultMode::Unsafe => "unsafe",
        }
    }
}

/// A `--storage-faults` value.
pub fn parse_storage_faults(text: &str) -> Result<StorageFaultMode, String> {
    [
        StorageFaultMode::Budgeted,
        StorageFaultMode::Off,
        StorageFaultMode::Unsafe,
    ]
    .into_iter()
    .find(|mode| mode.name() == text)
    .ok_or_else(|| format!("{text:?} is not a storage fault mode; expected budgeted, off or unsafe"))
}

/// A `--break-storage` value.
pub fn parse_storage_break(text: &str) -> Result<cluster::vsr::StorageBreak, String> {
    let all = cluster::vsr::StorageBreak::ALL;
    all.into_iter().find(|kind| kind.name() == text).ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|kind| kind.name()).collect();
        format!(
            "{text:?} is not a storage breakage; expected one of {}",
            names.join(", ")
        )
    })
}

/// A storage model name (`sim` or `memory`).
pub fn parse_storage(text: &str) -> Result<StorageModel, String> {
    text.parse()
}

/// Quote a value for a POSIX shell if it needs it.
fn shell_quote(value: &str) -> String {
    if !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+".contains(c))
    {
        value.to_owned()
    } else {
        format!("'{}'", value.replace('\'', r"'\''"))
    }
}

/// Split a command line as a POSIX shell would for the quoting `shell_quote` writes:
/// words on whitespace, single-quoted spans kept whole (`'\''` is a quote inside one).
fn shell_words(command: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                let word = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(inner) => word.push(inner),
                        None => return Err(format!("unclosed quote in `{command}`")),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(escaped) => word.get_or_insert_with(String::new).push(escaped),
                None => return Err(format!("a trailing backslash in `{command}`")),
            },
            c if c.is_whitespace() => words.extend(word.take()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

impl FuzzArgs {
    /// The arguments of a repro command (`repro_command`'s output, the words after
    /// `--`), and its seed.
    pub fn from_repro_command(command: &str) -> Result<(FuzzArgs, u64), String> {
        let words = shell_words(command)?;
        let flags = words.iter().skip_while(|word| *word != "--").skip(1);
        let args = FuzzArgs::try_parse_from(std::iter::once("workload-fuzz".to_owned()).chain(flags.cloned()))
            .map_err(|error| {
                format!(
                    "cannot read the repro command `{command}`: {}",
                    error.to_string().trim()
                )
            })?;
        let seed = args
            .seed
            .ok_or_else(|| format!("the repro command `{command}` names no --seed"))?;
        Ok((args, seed))
    }

    /// The disk faults of the run: the profile's rates, overridden by the flags.
    pub fn storage_faults(&self, profile: crate::profile::StorageRates) -> crate::harness::StorageFaults {
        match self.run.storage_faults {
            StorageFaultMode::Off => crate::harness::StorageFaults::default(),
            mode => crate::harness::StorageFaults {
                error_probability: self.run.disk_error_prob.unwrap_or(profile.disk_error_probability),
                corruption_probability: self
                    .run
                    .disk_corruption_prob
                    .unwrap_or(profile.disk_corruption_probability),
                slow_probability: self.run.disk_slow_prob.unwrap_or(profile.disk_slow_probability),
                unsafe_budget: mode == StorageFaultMode::Unsafe,
            },
        }
    }

    /// The per-tick probability of a whole-cluster power outage: the profile's,
    /// overridden by the flag; none with `--storage-faults off` or in-memory stores.
    pub fn power_outage_probability(&self, profile: crate::profile::StorageRates) -> f64 {
        if self.run.storage_faults == StorageFaultMode::Off || self.run.storage == crate::harness::StorageModel::Memory
        {
            return 0.0;
        }
        self.run.power_outage_prob.unwrap_or(profile.power_outage_probability)
    }

    /// Whether the run keeps every fault event it makes for its report: only when
    /// something reads them (`--record-faults`, `--trace`, `--shrink`, a shrink's
    /// candidates); otherwise it counts them, so its memory does not grow with them.
    pub fn keeps_fault_schedule(&self) -> bool {
        self.keep_fault_schedule || self.record_faults.is_some() || self.trace.is_some() || self.shrink
    }

    /// The journal bounds the flags ask for.
    pub fn journal(&self) -> JournalBounds {
        JournalBounds {
            journal_slots: self.run.journal_slots,
            ring_entries: self.run.ring_entries,
            ring_bytes: self.run.ring_bytes,
            applied_frames_in_memory_ops: super::run_flags::SIM_APPLIED_FRAMES_IN_MEMORY_OPS,
        }
    }

    /// Whether the run was asked to exercise checkpoints (a journal or ring smaller
    /// than the default): then a run that takes none is vacuous.
    pub fn asks_for_checkpoints(&self) -> bool {
        self.run.journal_slots < JOURNAL_SLOTS_DEFAULT
            || self.run.ring_entries < super::run_flags::SIM_RING_ENTRIES_DEFAULT
    }

    /// The command that replays this run exactly, every flag spelled out (the seed too,
    /// even when it was drawn).
    pub fn repro_command(&self, seed: u64) -> String {
        let mut parts = vec![
            "cargo run --release -p simulator --bin workload-fuzz --".to_owned(),
            format!("--seed {seed}"),
        ];
        if !self.branch.is_empty() {
            parts.push(format!("--branch {}", self.branch));
        }
        parts.extend([
            format!("--ticks {}", self.ticks),
            format!("--replicas {}", self.run.replicas),
            format!("--clients {}", self.run.clients),
            format!("--shards {}", self.shards),
            format!("--plane {}", self.plane.name()),
            format!("--faults {}", shell_quote(&self.faults)),
            format!("--min-replies {}", self.run.min_replies),
            format!("--min-commits {}", self.run.min_commits),
            format!("--min-ops-compared {}", self.run.min_ops_compared),
            format!("--crash-prob {}", self.run.crash_prob),
            format!("--restart-prob {}", self.run.restart_prob),
            format!("--power-loss-prob {}", self.run.power_loss_prob),
            format!("--storage {}", self.run.storage),
            format!("--storage-faults {}", self.run.storage_faults.name()),
            format!("--journal-slots {}", self.run.journal_slots),
            format!("--ring-entries {}", self.run.ring_entries),
            format!("--ring-bytes {}", self.run.ring_bytes),
        ]);
        for (set, flag) in [
            (self.run.crash_primary, "--crash-primary"),
            (self.run.crash_moments, "--crash-moments"),
            (self.run.heal_before_quiesce, "--heal-before-quiesce"),
            (self.run.no_quiesce, "--no-quiesce"),
            (self.run.no_liveness, "--no-liveness"),
            (self.run.shared, "--shared"),
            (self.run.buggify, "--buggify"),
            (self.run.break_check, "--break-check"),
            (self.break_fence, "--break-fence"),
        ] {
            if set {
                parts.push(flag.to_owned());
            }
        }
        if self.run.break_storage != cluster::vsr::StorageBreak::None {
            parts.push(format!("--break-storage {}", self.run.break_storage.name()));
        }
        if let Some(max) = self.requests_max {
            parts.push(format!("--requests-max {max}"));
        }
        if let Some(path) = &self.faults_from {
            parts.push(format!("--faults-from {}", shell_quote(&path.display().to_string())));
        }
        if let Some(probability) = self.run.disk_error_prob {
            parts.push(format!("--disk-error-prob {probability}"));
        }
        if let Some(probability) = self.run.disk_corruption_prob {
            parts.push(format!("--disk-corruption-prob {probability}"));
        }
        if let Some(probability) = self.run.disk_slow_prob {
            parts.push(format!("--disk-slow-prob {probability}"));
        }
        if let Some(probability) = self.run.power_outage_prob {
            parts.push(format!("--power-outage-prob {probability}"));
        }
        if let Some(probability) = self.run.adversary_prob {
            parts.push(format!("--adversary-prob {probability}"));
        }
        parts.extend(self.run.network.flags());
        parts.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repro_command_parses_back_to_the_same_arguments() {
        let args = FuzzArgs::try_parse_from([
            "workload-fuzz",
            "--seed",
            "0x10",
            "--faults",
            "light",
            "--packet-loss",
            "0.5",
            "--partition-mode",
            "isolate-single",
            "--ticks",
            "77",
            "--disk-slow-prob",
            "0.25",
            "--adversary-prob",
            "0.125",
        ])
        .expect("valid flags");
        assert_eq!(args.seed, Some(16));
        let command = args.repro_command(16);
        let words: Vec<&str> = command
            .split_whitespace()
            .skip_while(|word| *word != "--")
            .skip(1)
            .collect();
        let reparsed = FuzzArgs::try_parse_from(std::iter::once("workload-fuzz").chain(words)).expect("repro parses");
        assert_eq!(reparsed.repro_command(16), command);
        assert_eq!(reparsed.run.network.packet_loss, Some(0.5));
        assert_eq!(reparsed.run.network.partition_mode, Some(PartitionMode::IsolateSingle));
        assert_eq!(reparsed.ticks, 77);
        assert_eq!(reparsed.run.disk_slow_prob, Some(0.25));
        assert_eq!(reparsed.run.adversary_prob, Some(0.125));
        let (from_command, seed) = FuzzArgs::from_repro_command(&command).expect("reads back");
        assert_eq!((from_command.repro_command(seed), seed), (command, 16));
    }

    #[test]
    fn a_quoted_path_reads_back_from_a_repro_command() {
        let mut args = FuzzArgs::try_parse_from(["workload-fuzz", "--seed", "3"]).expect("valid");
        args.faults_from = Some("/tmp/it's here/f.jsonl".into());
        let (back, _) = FuzzArgs::from_repro_command(&args.repro_command(3)).expect("reads back");
        assert_eq!(back.faults_from, args.faults_from);
        assert!(FuzzArgs::from_repro_command("cargo run -- --seed 'open").is_err());
    }

    #[test]
    fn bad_flags_are_clear_errors() {
        let error = FuzzArgs::try_parse_from(["workload-fuzz", "--seed", "banana"]).expect_err("bad seed");
        assert!(error.to_string().contains("is not a 64-bit seed"), "{error}");
        let error = FuzzArgs::try_parse_from(["workload-fuzz", "--partition-mode", "sideways"]).expect_err("bad mode");
        assert!(error.to_string().contains("is not a partition mode"), "{error}");
        assert!(FuzzArgs::try_parse_from(["workload-fuzz", "--replicas", "0"]).is_err());
    }

    #[test]
    fn a_path_with_spaces_is_quoted_in_the_repro() {
        assert_eq!(shell_quote("my profiles/x.json"), "'my profiles/x.json'");
        assert_eq!(shell_quote("heavy"), "heavy");
    }
}
