//! [`RunFlags`]: the flags that shape one run and that `campaign` passes to every run
//! it makes. Written once, so `workload-fuzz` and `campaign` take the same values under
//! the same bounds, and a campaign never records a repro command `workload-fuzz`
//! would refuse.

use clap::Args;

use cluster::vsr::constants::{
    JOURNAL_OPS_MAX, JOURNAL_OPS_MIN, JOURNAL_SLOTS_DEFAULT, RING_BYTES_DEFAULT, RING_BYTES_MAX, RING_BYTES_MIN,
};

use super::args::{
    NetworkOverrides, StorageFaultMode, parse_probability, parse_storage, parse_storage_break, parse_storage_faults,
};
use crate::harness::StorageModel;

/// Prepare ring entries of each partition group in a simulated run unless
/// `--ring-entries` says otherwise: 128, where a node's default is 65,536
/// (`RING_ENTRIES_DEFAULT`, about a minute of a busy partition). The code is the same;
/// only the bound differs, for two reasons:
/// - Reach: a simulated partition commits a few hundred ops per 100,000 ticks, so at
///   the node's bound no partition ever took a checkpoint in an ordinary run, and
///   partition checkpoints, evictions, WAL prefix drops and partition state transfers
///   were reached only under `--buggify` or a hand-picked flag. At 128 a partition
///   checkpoints every 64 ops, so every long run crosses them.
/// - Memory: a ring keeps a header per op in memory and the ops' records in the WAL
///   until a checkpoint lets them go; at 65,536 a soak run grew by tens of MB per
///   million ticks until the rings filled (24 of them in a three-replica partition run).
///   At 256 a 100,000-tick partition run peaked at 21.8 MB, at 128 at 19.1 MB.
///
/// `--ring-entries 65536` runs the node's bound.
pub const SIM_RING_ENTRIES_DEFAULT: u64 = 128;

/// Applied ops whose frames a simulated replica's journal keeps in memory: 32, where a
/// node keeps 128 (`JOURNAL_APPLIED_FRAMES_IN_MEMORY_OPS`). Every frame is also on the
/// simulated disk, and three replicas held the same 128 frames of every group in
/// memory besides: a quarter of a 100,000-tick partition run's heap. With 32, a repair
/// of an op further behind is served from the store, so simulated runs also read
/// frames back from disk (under its read faults) far more often.
pub const SIM_APPLIED_FRAMES_IN_MEMORY_OPS: u64 = 32;

/// The world, the faults, the phases and the checks' floors of one run.
#[derive(Args, Clone, Debug)]
pub struct RunFlags {
    /// Replica processes.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=6))]
    pub replicas: u32,

    /// Client processes.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub clients: u32,

    /// Echo plane: fewest matched replies for the run to count as having tested anything.
    #[arg(long, default_value_t = 1)]
    pub min_replies: u64,

    /// Fewest committed ops (the canonical chain's length) for a consensus run to count.
    #[arg(long, default_value_t = 1)]
    pub min_commits: u64,

    /// Fewest committed ops checked against the canonical chain, summed over replicas.
    #[arg(long, default_value_t = 1)]
    pub min_ops_compared: u64,

    /// Per tick, probability of crashing one replica (up at least 500 ticks, never below
    /// a live replication quorum).
    #[arg(long, default_value_t = 0.0, value_parser = parse_probability)]
    pub crash_prob: f64,

    /// Per tick, probability of restarting one crashed replica (down at least 300 ticks).
    #[arg(long, default_value_t = 0.0, value_parser = parse_probability)]
    pub restart_prob: f64,

    /// Probability that a crash is a power loss: the replica's simulated disk keeps only
    /// what it had made stable (synced pages and directory entries, plus whatever
    /// background writeback flushed), so a partition replica loses its unpublished WAL
    /// tail. Otherwise a crash is a process crash, which keeps the page cache. Needs
    /// `--storage sim`.
    #[arg(long, default_value_t = 0.0, value_parser = parse_probability)]
    pub power_loss_prob: f64,

    /// What a replica keeps across a crash: `sim`, the production on-disk formats on a
    /// simulated disk, booted through the real recovery code (default); or `memory`,
    /// in-memory stores that never lose a write (faster, and what older runs used).
    #[arg(long, default_value = "sim", value_parser = parse_storage)]
    pub storage: StorageModel,

    /// Disk errors inside the run (with `--storage sim`), overriding the profile's
    /// `storage.disk_error_probability`: the probability that one write or sync of a
    /// replica's simulated disk fails with EIO (a failed sync drops the file's dirty
    /// pages). Any replica
    /// may be hit, primaries included (one at a time, while the others can cover for
    /// it): the replica stops, its node fail-stops, and a supervisor restarts it 100
    /// ticks later on the same disk.
    #[arg(long, value_parser = parse_probability)]
    pub disk_error_prob: Option<f64>,

    /// Latent disk corruption (with `--storage sim`), overriding the profile's
    /// `storage.disk_corruption_probability`: the probability, each time the budget's
    /// corruptible replica (one per run, drawn from the seed) restarts, that one bit of
    /// one of its WAL or checkpoint files rots before it boots. The replica must hold a
    /// damaged record as unknown (never apply it or read it as a nack) and repair it
    /// from peers, and fetch a damaged checkpoint's state by state transfer.
    #[arg(long, value_parser = parse_probability)]
    pub disk_corruption_prob: Option<f64>,

    /// A limping disk (with `--storage sim`), overriding the profile's
    /// `storage.disk_slow_probability`: the probability that one write or sync of any
    /// replica's simulated disk is slow. The call completes, but its node is blocked in
    /// it for 1 to 40 ticks (drawn): it receives, ticks and sends nothing meanwhile, and
    /// frames to it wait in its inbox. Any replica may limp, primaries included; the
    /// others must elect around a primary that stalls too long.
    #[arg(long, value_parser = parse_probability)]
    pub disk_slow_prob: Option<f64>,

    /// Whole-cluster power outages (with `--storage sim`), overriding the profile's
    /// `storage.power_outage_probability`: the probability, per tick of the run, that
    /// every replica loses power at once (a data-centre outage). The workload pauses
    /// until nothing is outstanding, the cluster stays dark for 100 ticks, every
    /// replica starts again and the cluster must settle; then every partition is judged
    /// by its topic's durability: a `persisted` one must hold everything acknowledged,
    /// a `replicated` one may come back at an earlier op (what it lost is counted on the
    /// `outages:` line). `--storage-faults off` turns outages off too.
    #[arg(long, value_parser = parse_probability)]
    pub power_outage_prob: Option<f64>,

    /// The adversary, overriding the profile's `adversary.forged_frame_probability`:
    /// the probability, per tick, that a party on the network that is not a replica
    /// sends a replica a forged, replayed or foreign frame (forged votes and prepares,
    /// views past any real one, replays of frames it watched, frames of another
    /// cluster, batches). The cluster must refuse every one, unread, and stay safe and
    /// live; the run's `adversary:` line counts what was sent and what was refused.
    /// Not on the echo plane.
    #[arg(long, value_parser = parse_probability)]
    pub adversary_prob: Option<f64>,

    /// `budgeted` (default): disk faults as the profile and the two flags above ask,
    /// within the budget that keeps every failure a bug (errors on one replica at a
    /// time, corruption on one replica per run). `off`: no disk faults whatever the
    /// profile and flags say. `unsafe`: lift the budget (errors on every replica at once,
    /// background writebacks that fail silently, corruption on any replica, misdirected
    /// writes); for exploration, such a run never counts as a pass (it ends vacuous when
    /// nothing fails).
    #[arg(long, default_value = "budgeted", value_parser = parse_storage_faults)]
    pub storage_faults: StorageFaultMode,

    /// Journal slots of the metadata group: ops it keeps in memory and in its WAL above
    /// its last checkpoint, which it takes every `journal-slots - 64` applied ops. Small
    /// values (80 is the least) force checkpoints, evictions and state transfers
    /// within a few thousand ticks; a run given a value below the default that takes
    /// no checkpoint is vacuous.
    #[arg(long, default_value_t = JOURNAL_SLOTS_DEFAULT,
          value_parser = clap::value_parser!(u64).range(JOURNAL_OPS_MIN..=JOURNAL_OPS_MAX))]
    pub journal_slots: u64,

    /// Prepare ring entries of each partition group (as --journal-slots, for
    /// partitions). The default is the simulator's, 128, not a node's 65,536: every
    /// long run then crosses partition checkpoints, and a soak run's memory stays flat
    /// (`--ring-entries 65536` runs a node's bound).
    #[arg(long, default_value_t = SIM_RING_ENTRIES_DEFAULT,
          value_parser = clap::value_parser!(u64).range(JOURNAL_OPS_MIN..=JOURNAL_OPS_MAX))]
    pub ring_entries: u64,

    /// Frame bytes every group's journal holds at most, in bytes (64 MiB to 256 MiB).
    #[arg(long, default_value_t = RING_BYTES_DEFAULT,
          value_parser = clap::value_parser!(u64).range(RING_BYTES_MIN..=RING_BYTES_MAX))]
    pub ring_bytes: u64,

    /// Allow the crash injector to crash primaries.
    #[arg(long)]
    pub crash_primary: bool,

    /// Crash at protocol moments: when the injector crashes a replica, it picks one
    /// caught mid-protocol if any eligible replica is (a primary with prepares not yet
    /// committed, a backup waiting for a repair answer, a replica receiving a state
    /// transfer). The crash rate is unchanged; view changes over half-replicated tails
    /// and restarts over half-filled logs become common. Counted on the `crash moments:`
    /// line.
    #[arg(long)]
    pub crash_moments: bool,

    /// Before draining at the end, heal the network (partitions, clogs) and restart every
    /// crashed replica. Off by default: a wedge the heal would resolve is worth seeing.
    #[arg(long)]
    pub heal_before_quiesce: bool,

    /// Skip the end-of-run drain and settle (the oracle then compares what it can).
    #[arg(long)]
    pub no_quiesce: bool,

    /// Skip the liveness phase. By default, after the fault phase a core of replicas
    /// (a quorum, drawn from the seed) is healed, restarted and kept up while the others
    /// stay down or cut off, and within `LIVENESS_TICKS_MAX` ticks every group must have
    /// a primary in the core that has committed what it holds, every core replica must
    /// have applied it, and every outstanding request must be answered (see
    /// `fuzz::liveness`). Then everything heals and the drain runs.
    #[arg(long)]
    pub no_liveness: bool,

    /// With a consensus plane other than `contended`: send a share of every client's
    /// requests (`SHARED_REQUEST_PERCENT`) to the contended plane's shared objects,
    /// checked for linearizability, while the rest keep to the plane's exact,
    /// per-client namespaces.
    #[arg(long)]
    pub shared: bool,

    /// Shrink some of the cluster's bounds for this run, drawn from the seed (each knob
    /// on with probability 1/2): the pipeline (1, 2 or 4 ops), the request queue behind
    /// it (1, 2 or 4), the window a replica's first repair asks for (1, 2 or 8 ops,
    /// doubling with every answered round as in production). Rare paths (requests
    /// queued and refused, repairs in many small steps) become common; every check
    /// holds as without it. Production never shrinks them (see `cluster::vsr::Buggify`).
    #[arg(long)]
    pub buggify: bool,

    /// Network overrides, applied after the profile (and after swarm draws).
    #[command(flatten)]
    pub network: NetworkOverrides,

    /// Test-only: make the state checker fail on purpose whenever a committed op's
    /// checksum ends in twelve zero bits (about one op in 4,096), so that tests can
    /// check a campaign groups failures and that each repro fails again.
    #[arg(long, hide = true)]
    pub break_check: bool,

    /// Test-only: a deliberately broken answer to disk faults in the cluster
    /// (`keep-going-after-failed-write`: a replica whose store failed goes on, its
    /// primary heartbeating; `cut-damage-as-torn-tail`: WAL damage is cut as a torn tail
    /// and the log counts as complete; `read-error-as-end-of-file`: a boot takes a read
    /// error for the end of its WAL; `skip-wal-checksums`: the WAL is read without
    /// verifying checksums, so a rotted prepare is applied; `ack-persisted-before-publish`:
    /// a persisted partition acknowledges before its WAL is published;
    /// `install-unverified-transfer`: transfer chunks are taken unverified;
    /// `view-change-waits-for-every-replica`: a view change waits for every replica's
    /// DoViewChange, a liveness bug; `answer-queries-unconfirmed`: a primary answers
    /// polls without a quorum confirming its view, so a deposed one serves stale reads;
    /// `install-checkpoint-without-client-table`: an
    /// installed checkpoint keeps the replica's old client table; the slowed recoveries
    /// `repair-one-op-a-round`, `leave-view-after-ten-windows` and
    /// `transfer-tiny-chunks`, which only the timeliness check sees), so tests can show
    /// the campaigns catch it.
    #[arg(long, hide = true, default_value = "none", value_parser = parse_storage_break)]
    pub break_storage: cluster::vsr::StorageBreak,
}
