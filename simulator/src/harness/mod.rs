//! A simulated cluster: real nodes (every shard running the real pump, the metadata
//! group and one group per partition) on the [`Simulation`], with crash injection,
//! per-tick checks and a state checker per group.
//!
//! What it models: replicas that crash (tasks dropped mid-await, inboxes and in-flight
//! packets lost) and restart on the disk they kept, under a new incarnation, booting
//! through the production recovery code ([`stores`]); a crash may cut the power, which
//! loses whatever the disk had not made stable; shards within a replica, with router
//! hops; clients that follow the resend discipline of [`client`]; disk faults inside the
//! run ([`StorageFaults`]: write and sync EIO, latent WAL corruption, under a budget) and
//! a supervisor that restarts a node that fail-stopped on one. What it does not model
//! yet: read errors, slow I/O, torn writes at a crash, damaged checkpoints, superblocks
//! and frontiers (the storage sweeps cover these one structure at a time).

mod branch;
pub mod catch_up;
pub mod client;
pub mod crash;
mod disk_faults;
pub mod failover;
mod group_check;
mod lifecycle;
mod queries;
pub mod resend_clock;
mod retire;
mod schedule;
pub mod state_checker;
pub mod stores;
mod trace;
mod watches;

use std::cell::{Ref, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

use cluster::metadata::MetadataMachine;
use cluster::node::{JournalBounds, METADATA_GROUP, MemoryStores, Node, Shard};
use cluster::partition::{OwnerFence, PartitionMachine};
use cluster::seam::ProcessId;
use cluster::vsr::journal::root_header;
use cluster::vsr::{Replica, StorageBreak};

use crate::fault_schedule::FaultEvent;
use crate::rng::SimRng;
use crate::storage::{SimStorage, SimStorageOptions};
use crate::timeline::Branches;
pub use stores::{SimReplicaStore, SimStores, StorageModel};

use crate::simulation::{Simulation, SimulationConfig, SimulationError};
use catch_up::{CatchUpCounters, CheckpointChecker};
use client::{ClientDriver, ClientStats, run_client};
use crash::{CrashConfig, CrashInjector};
use disk_faults::{CORRUPTIBLE_SALT, CORRUPTION_SALT, ErrorsOn};
pub use disk_faults::{
    DISK_ERROR_WINDOW_TICKS, DISK_FAULTS_EXPECTED_MIN, READ_ERRORS_IN_A_ROW_MAX, SLOW_IO_TICKS_MAX, StorageFaultCounts,
    StorageFaults,
};
pub use group_check::FULL_CHECK_INTERVAL_TICKS;
use group_check::Lagging;
use retire::RetiredCheckers;
use schedule::HarnessReplay;
use state_checker::StateChecker;
use watches::GroupWatches;

/// Ticks a live Normal replica of a group may sit behind its commit point without
/// applying anything before the run fails as stuck (a hole nobody repairs). The clock
/// runs only while some live peer that applied further is reachable both ways: a
/// replica a standing partition cuts off from every such peer (it may still hear the
/// primary's commit point over a one-way link) cannot repair, and its clock starts
/// again when the partition heals.
pub const COMMIT_STUCK_TICKS_MAX: u64 = 2_000;

/// Ticks a replica that could repair sat behind its commit point without applying
/// anything past which its run counts as a near miss of the commit-stuck check
/// (`liveness.commit_stuck_near_miss`): three quarters of
/// [`COMMIT_STUCK_TICKS_MAX`]. A correct replica rarely gets so close; a slow recovery
/// (a repair that fetches too little a round, a transfer that restarts) gets there
/// often and fails some of the time, so the explorer branches such runs where they got
/// there (a rare mark) and plays the rest of the recovery again. A quarter of the
/// bound is left for a child to fail or recover in.
pub const COMMIT_STUCK_NEAR_MISS_TICKS: u64 = COMMIT_STUCK_TICKS_MAX * 3 / 4;

/// Ticks a replica that could repair sat behind its commit point without applying
/// anything past which its run is half way to the commit-stuck check
/// (`liveness.commit_stuck_half_way`): the first rung of the near miss's ladder. The
/// explorer branches it as a near miss too, and a child that goes on to the near miss
/// proper (`COMMIT_STUCK_NEAR_MISS_TICKS`) by its own randomness is branched again
/// from there: a lag that grows climbs the ladder. Half: correct code got there in
/// 3 of 1,670 runs of the nightly spec (seeds 445M, heavy and swarm faults, 1,006 to
/// 1,083 ticks); with `repair-one-op-a-round` planted, 8% of the exploring nightly's
/// roots did, four to six times as many as reached the near miss (seeds 402M-403M).
pub const COMMIT_STUCK_HALF_WAY_TICKS: u64 = COMMIT_STUCK_TICKS_MAX / 2;

/// Ticks between a node's fail-stop on a storage failure and its supervisor starting
/// it again on the same disk. systemd's `RestartSec` defaults to 100 ms; a second keeps
/// a node whose disk fails at every boot from spinning, and is well inside the
/// survivors' 500-tick liveness window, so a restarted backup rarely costs a view.
pub const SUPERVISOR_RESTART_TICKS: u64 = 100;

/// The cluster id the simulated cluster uses.
pub const SIMULATED_CLUSTER_ID: u64 = 0xC1_0057;

/// The name the simulated cluster's disks are stamped with.
pub const SIMULATED_CLUSTER_NAME: &str = "simulated";

/// Everything that shapes a simulated cluster run.
#[derive(Clone, Debug)]
pub struct HarnessConfig {
    /// Replicas, shards, clients and their network.
    pub simulation: SimulationConfig,
    /// Crash injection.
    pub crash: CrashConfig,
    /// Test-only: fail the state checker on ops whose checksum ends in twelve zero
    /// bits (see `workload-fuzz --break-check`).
    pub break_check: bool,
    /// Test-only: disable the partition owner fence (see `workload-fuzz --break-fence`).
    pub break_fence: bool,
    /// What replicas keep across a crash.
    pub storage: StorageModel,
    /// With [`StorageModel::Sim`], the probability that a crash is a power loss (the
    /// disk keeps only what it made stable) rather than a process crash (the page cache
    /// survives).
    pub power_loss_probability: f64,
    /// How much of its log each group keeps (small values force checkpoints,
    /// evictions and state transfers).
    pub journal: JournalBounds,
    /// Disk faults inside the run (with [`StorageModel::Sim`]).
    pub storage_faults: StorageFaults,
    /// Test-only: a deliberately broken answer to disk faults in the cluster (see
    /// `workload-fuzz --break-storage`).
    pub storage_break: StorageBreak,
    /// Simulation-only smaller bounds for every replica (see `cluster::vsr::Buggify`).
    pub buggify: cluster::vsr::Buggify,
}

impl HarnessConfig {
    /// `simulation` with no crashes, the simulated disk without disk faults or power
    /// loss, the default journal bounds, production's bounds and no test-only break:
    /// what a test starts from before it turns on what it is about.
    pub fn new(simulation: SimulationConfig) -> Self {
        Self {
            simulation,
            crash: CrashConfig::default(),
            break_check: false,
            break_fence: false,
            storage: StorageModel::Sim,
            power_loss_probability: 0.0,
            journal: JournalBounds::default(),
            storage_faults: StorageFaults::default(),
            storage_break: StorageBreak::default(),
            buggify: cluster::vsr::Buggify::default(),
        }
    }
}

/// A metadata replica as the harness hosts it (inside shard 0 of a node).
pub type MetadataReplica = Replica<MetadataMachine, SimReplicaStore>;
/// A partition replica as the harness hosts it.
pub type PartitionReplica = Replica<PartitionMachine, SimReplicaStore>;

/// A handle on a live node's metadata replica (it lives in the node's shard 0).
#[derive(Clone)]
pub struct MetadataHandle(Rc<RefCell<Shard<SimStores>>>);

impl MetadataHandle {
    /// Borrow the replica (between steps only: the pumps borrow it while they run).
    pub fn borrow(&self) -> Ref<'_, MetadataReplica> {
        Ref::map(self.0.borrow(), |shard| {
            shard.metadata().expect("shard 0 hosts the metadata replica")
        })
    }
}

/// What a replica keeps while it is down.
enum Disk {
    Memory(MemoryStores),
    Sim(SimStorage),
}

struct Slot {
    node: Option<Node<SimStores>>,
    disk: Disk,
    incarnation: u64,
    since: u64,
    watches: GroupWatches,
    /// The tick the supervisor starts this node again, after a fail-stop.
    supervisor_restart_at: Option<u64>,
    /// Faults the disk had injected when this incarnation began to boot: a storage
    /// failure with none injected since is a bug, not a fault.
    injected_at_boot: u64,
}

/// A failed check: what broke, where, when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckFailure {
    /// Which check.
    pub check: &'static str,
    /// What it saw.
    pub detail: String,
    /// The tick.
    pub tick: u64,
}

impl std::fmt::Display for CheckFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (tick {}): {}", self.check, self.tick, self.detail)
    }
}

/// Counters of the run, for the report.
#[derive(Clone, Copy, Debug, Default)]
pub struct HarnessStats {
    /// Crashes.
    pub crashes: u64,
    /// Restarts.
    pub restarts: u64,
    /// Crashes that were power losses.
    pub power_losses: u64,
    /// Nodes that stopped themselves on a storage failure (fail-stop).
    pub fail_stops: u64,
    /// Of the restarts, those made by the supervisor after a fail-stop.
    pub supervisor_restarts: u64,
    /// Whole-cluster power outages (every replica lost power at once).
    pub power_outages: u64,
    /// Crashes that fell on a protocol moment (`--crash-moments`), in `Moment::ALL`
    /// order.
    pub moment_crashes: [u64; 3],
}

/// A simulated cluster.
pub struct Harness {
    simulation: Simulation,
    slots: Vec<Slot>,
    crash: CrashInjector,
    /// One per group seen committing, kept after the group is deleted until every
    /// replica has tombstoned it (then retired, see `retire_deleted_groups`).
    checkers: BTreeMap<u64, StateChecker>,
    /// The partition groups whose checkers were retired, and what they had counted.
    retired_checkers: RetiredCheckers,
    /// Primary losses and their failover times, and spurious view changes.
    failover: failover::Failover,
    clients: Vec<Rc<RefCell<ClientStats>>>,
    stats: HarnessStats,
    crashes_enabled: bool,
    replica_count: usize,
    shards: usize,
    break_check: bool,
    owner_fence: OwnerFence,
    storage_break: StorageBreak,
    buggify: cluster::vsr::Buggify,
    power_loss_probability: f64,
    /// Draws whether a crash cuts the power (only when the probability is above zero,
    /// so runs without power loss draw nothing from it).
    power_rng: SimRng,
    /// A node that refused to boot (its disk did not recover): reported by the next step.
    boot_failure: Option<CheckFailure>,
    journal: JournalBounds,
    /// Catch-up counters of nodes that crashed (a node's own die with it).
    retired: CatchUpCounters,
    /// The disk faults the run asked for; injected while `crashes_enabled` (the drain
    /// injects none).
    storage_faults: StorageFaults,
    /// Restarts of a replica whose WAL the budget let rot (each a chance of a rot).
    rot_chances: u64,
    /// The op of the newest change to the partition set any replica ever applied, in
    /// any incarnation (see `wholes`).
    partitions_changed_max: u64,
    /// The larger of the two quorums: more than this many replicas up and rejoined
    /// leaves room for one more to restart (the crash injector's rule).
    quorum_live_min: usize,
    /// Whose disks may fail now (see [`DISK_ERROR_WINDOW_TICKS`]), as last applied.
    errors_on: ErrorsOn,
    /// The one replica whose WAL may rot under the budget (see [`StorageFaults`]).
    corruptible: usize,
    /// Draws whether a restarting replica's WAL rots (only when the probability is
    /// above zero).
    corruption_rng: SimRng,
    checkpoints: CheckpointChecker,
    /// `check`'s per-tick list of what every replica of every group applied, kept
    /// between ticks so a tick's check allocates nothing (it is rebuilt each tick).
    applied_scratch: Vec<(u64, usize, u64)>,
    /// `check`'s lagging replicas, kept to reuse its allocation.
    lagging_scratch: Vec<Lagging>,
    /// Groups checked, summed over every replica and tick (see [`Harness::group_ticks`]).
    group_ticks: u64,
    /// Of those, the ones skipped as quiet (see `group_check`).
    group_checks_skipped: u64,
    /// Per-tick walks over one node's groups that visited only the groups it touched
    /// (and those with a clock running), and walks that visited every group.
    node_walks: (u64, u64),
    /// Reused by `check_groups`: the groups a node touched since the last check.
    touched_scratch: Vec<u64>,
    /// Reused by `check_groups`: the watches a partial walk visits.
    plan_scratch: Vec<usize>,
    /// The clients' driver, told each tick as it starts (`ClientDriver::on_tick`).
    driver: Rc<RefCell<dyn ClientDriver>>,
    /// The crashes, restarts, disk-error windows and rots made so far (the harness's
    /// share of the run's fault schedule), while `keep_fault_events` says so (see
    /// `Harness::keep_fault_events`).
    faults_made: Vec<FaultEvent>,
    keep_fault_events: bool,
    /// How many of each kind were made, kept or not, by `Fault::kind`.
    faults_counted: BTreeMap<&'static str, u64>,
    /// A replayed schedule's events, in place of the crash draws and the budget's turn.
    replay: Option<HarnessReplay>,
    /// With `--trace`, the run's timeline being recorded.
    trace: Option<Box<trace::HarnessTrace>>,
    /// Where this run's timeline branches (see [`crate::timeline`] and `branch.rs`).
    branches: Branches,
    /// Branch points taken so far.
    branches_taken: usize,
    /// The coverage marks reached as of the last step (`cluster::coverage::reached`).
    reached_seen: cluster::coverage::Reached,
    /// Each mark the run reached, with the tick of the step that first reached it, in
    /// the order they were reached (a mark reached while the harness booted its nodes
    /// counts at the first step).
    first_reached: Vec<(cluster::coverage::Point, u64)>,
}

impl Harness {
    /// Boot `config.simulation.replicas` fresh nodes and the clients, driven by `driver`.
    pub fn new(seed: u64, config: &HarnessConfig, driver: Rc<RefCell<dyn ClientDriver>>) -> Self {
        let mut simulation = Simulation::new(seed, &config.simulation);
        // The cluster's pumps take closed-connection notices: a crashed node's peers
        // see its connections reset, as a real node's kernel reports them.
        simulation.notify_closed_connections(true);
        let replicas = config.simulation.replicas;
        let quorum = cluster::vsr::constants::quorum_replication(replicas)
            .max(cluster::vsr::constants::quorum_view_change(replicas));
        let crash = CrashInjector::new(simulation.seeds().crash, config.crash, quorum);
        let storage_seed = simulation.seeds().storage;
        let metadata_root = root_header(SIMULATED_CLUSTER_ID, METADATA_GROUP).checksum;
        let mut harness = Self {
            simulation,
            slots: Vec::new(),
            crash,
            checkers: BTreeMap::from([(METADATA_GROUP, StateChecker::new(metadata_root))]),
            retired_checkers: RetiredCheckers::default(),
            failover: failover::Failover::default(),
            clients: Vec::new(),
            stats: HarnessStats::default(),
            crashes_enabled: true,
            replica_count: replicas,
            shards: config.simulation.shards,
            break_check: config.break_check,
            owner_fence: if config.break_fence {
                OwnerFence::DisabledForTest
            } else {
                OwnerFence::Enforced
            },
            power_loss_probability: config.power_loss_probability,
            storage_break: config.storage_break,
            buggify: config.buggify,
            power_rng: SimRng::new(storage_seed),
            boot_failure: None,
            journal: config.journal,
            retired: CatchUpCounters::default(),
            checkpoints: CheckpointChecker::default(),
            applied_scratch: Vec::new(),
            lagging_scratch: Vec::new(),
            group_ticks: 0,
            group_checks_skipped: 0,
            node_walks: (0, 0),
            touched_scratch: Vec::new(),
            plan_scratch: Vec::new(),
            storage_faults: config.storage_faults,
            rot_chances: 0,
            partitions_changed_max: 0,
            quorum_live_min: quorum,
            errors_on: ErrorsOn::Nobody,
            // Derived from the storage stream without drawing from it, so turning
            // corruption on shifts no other draw.
            corruptible: SimRng::new(storage_seed ^ CORRUPTIBLE_SALT).index(replicas),
            corruption_rng: SimRng::new(storage_seed ^ CORRUPTION_SALT),
            driver: driver.clone(),
            faults_made: Vec::new(),
            keep_fault_events: true,
            faults_counted: BTreeMap::new(),
            replay: None,
            trace: None,
            branches: Branches::none(),
            branches_taken: 0,
            reached_seen: [0; cluster::coverage::REACHED_WORDS],
            first_reached: Vec::new(),
        };
        for index in 0..replicas {
            let disk = match config.storage {
                StorageModel::Memory => Disk::Memory(MemoryStores::new()),
                StorageModel::Sim => Disk::Sim(SimStorage::new(SimStorageOptions {
                    seed: storage_seed ^ (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                    writeback: true,
                    // A cluster run makes millions of storage calls; nobody replays them
                    // by position, so the trace is not kept.
                    record_trace: false,
                    // Errors start off: `gate_disk_errors` turns them on for one replica at a time.
                    misdirected_write_probability: config
                        .storage_faults
                        .rates_for_everyone()
                        .misdirected_write_probability,
                    slow_probability: config.storage_faults.rates_for_everyone().slow_probability,
                    slow_ticks_max: config.storage_faults.rates_for_everyone().slow_ticks_max,
                    // A page torn at a power cut holds only unsynced bytes, which nothing
                    // acknowledged depends on: within every budget.
                    torn_write_at_power_loss: config.storage_faults.enabled(),
                    ..SimStorageOptions::default()
                })),
            };
            if let Disk::Sim(storage) = &disk {
                // A slow call blocks the node that made it (see `simulation`).
                harness
                    .simulation
                    .set_stall_source(ProcessId(index as u32), storage.stall_source());
            }
            harness.slots.push(Slot {
                node: None,
                disk,
                incarnation: 0,
                since: 0,
                watches: GroupWatches::default(),
                supervisor_restart_at: None,
                injected_at_boot: 0,
            });
            harness.boot(index);
        }
        for client in 0..config.simulation.clients {
            let process = ProcessId((replicas + client) as u32);
            let stats = Rc::new(RefCell::new(ClientStats::default()));
            harness.clients.push(stats.clone());
            let task = run_client(
                harness.simulation.bus(process),
                harness.simulation.inbox(process),
                client,
                SIMULATED_CLUSTER_ID,
                replicas as u32,
                driver.clone(),
                stats,
            );
            harness.simulation.spawn(process, task);
        }
        harness
    }

    /// One tick: crash decisions, the simulation step, every per-tick check.
    pub fn step(&mut self) -> Result<(), CheckFailure> {
        let tick = self.simulation.tick();
        self.take_branch_point(tick + 1);
        self.driver.borrow_mut().on_tick(tick);
        self.supervise(tick);
        if self.crashes_enabled && (self.crash.active() || self.replay.is_some()) {
            self.inject_crashes(tick);
        }
        cluster::watermark!(
            ReplicasDown,
            self.slots.iter().filter(|slot| slot.node.is_none()).count() as u64
        );
        // After this tick's crashes and restarts: a replica crashed now leaves no room
        // for another to fail in the same tick.
        self.gate_disk_errors(tick);
        if let Some(failure) = self.boot_failure.take() {
            return Err(failure);
        }
        self.simulation.step().map_err(|error| CheckFailure {
            check: match error {
                SimulationError::Executor(_) => "executor",
                SimulationError::LostWakeup { .. } => "lost wakeup",
            },
            detail: error.to_string(),
            tick,
        })?;
        if self.trace.is_some() {
            self.trace_tick();
        }
        // Before anyone fail-stops: what a replica applied in this step counts even if
        // its node stops at the end of it.
        for index in 0..self.slots.len() {
            if let Some(handle) = self.metadata(index) {
                let changed = handle.borrow().state_machine().state().partitions_changed_at();
                self.partitions_changed_max = self.partitions_changed_max.max(changed);
            }
        }
        self.fail_stop_nodes()?;
        let checked = self.check(self.simulation.tick());
        // After the checks, which note the watermarks only the harness sees.
        self.note_marks_reached();
        checked
    }

    /// The per-tick checks, for every group on every live replica: views never go
    /// back; applied ops agree with the group's canonical chain; a Normal replica does
    /// not sit behind its commit point for long; no frame is misrouted or unroutable.
    /// A group quiet since its last check is skipped, except on a full check (every
    /// [`FULL_CHECK_INTERVAL_TICKS`]; see `group_check`).
    fn check(&mut self, tick: u64) -> Result<(), CheckFailure> {
        let full = tick.is_multiple_of(FULL_CHECK_INTERVAL_TICKS);
        self.check_adversary_refused(tick)?;
        self.failover.set_healthy(self.healthy_replicas());
        self.group_ticks += self.check_groups(tick, full)?;
        if full {
            self.retire_deleted_groups();
        }
        Ok(())
    }

    /// With an adversary: every frame it handed a live node since the node started was
    /// refused unread, the in-range ones by the shard's rule that only a replica
    /// speaks the protocol (counted exactly: nothing honest trips it), the ones holding
    /// impossible numbers at decode (counted among the node's rejected headers, with
    /// the network's corrupted packets). Anything else was acted on.
    fn check_adversary_refused(&self, tick: u64) -> Result<(), CheckFailure> {
        if self.simulation.adversary_stats().is_none() {
            return Ok(());
        }
        for (index, node) in self.live_nodes() {
            let (in_range, out_of_range) = self.simulation.adversary_delivered(index);
            let shard = node.stats().shard;
            if shard.frames_refused_not_from_replica != in_range || shard.frames_rejected < out_of_range {
                return Err(CheckFailure {
                    check: "adversary frame acted on",
                    detail: format!(
                        "replica {index} was handed {in_range} well-formed frames by the adversary since it started \
                         and refused {} as not from a replica; and {out_of_range} with impossible numbers, with {} \
                         headers rejected in all: some frame of a party that is not a replica got past the refusal",
                        shard.frames_refused_not_from_replica, shard.frames_rejected
                    ),
                    tick,
                });
            }
        }
        Ok(())
    }

    /// The replicas that are up and not cut off by a partition from a quorum of the
    /// replicas (counting themselves), a bit each (see `failover`).
    fn healthy_replicas(&self) -> u64 {
        let network = self.simulation.network();
        let quorum = self.replica_count / 2 + 1;
        (0..self.slots.len())
            .filter(|&index| self.slots[index].node.is_some())
            .filter(|&index| {
                let reached = (0..self.slots.len())
                    .filter(|&peer| peer == index || (!network.path_cut(index, peer) && !network.path_cut(peer, index)))
                    .count();
                reached >= quorum
            })
            .fold(0, |healthy, index| healthy | 1 << index)
    }

    /// The full check, now: every group of every live replica, whatever its activity,
    /// each skipped one verified unchanged. A run calls it once at its end, so the last
    /// ticks are checked in full whatever the interval.
    pub fn check_in_full(&mut self) -> Result<(), CheckFailure> {
        self.check_groups(self.simulation.tick(), true).map(drop)
    }
}
