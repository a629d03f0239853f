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

pub mod catch_up;
pub mod client;
pub mod crash;
mod group_check;
mod schedule;
pub mod state_checker;
pub mod stores;
mod trace;
mod watches;

use std::cell::{Ref, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use cluster::metadata::{DEFAULT_ROOT_PASSWORD, MetadataMachine};
use cluster::node::{
    DurableStores, JournalBounds, METADATA_GROUP, MemoryStores, Node, NodeConfig, NodeIdentity, Shard, owner_shard,
};
use cluster::partition::{OwnerFence, PartitionMachine};
use cluster::seam::ProcessId;
use cluster::storage::superblock::{self, cluster_id};
use cluster::vsr::journal::root_header;
use cluster::vsr::{MemoryStore, Replica, Status, StorageBreak};

use crate::fault_schedule::{DiskErrorsOn, Fault, FaultEvent};
use crate::rng::SimRng;
use crate::storage::{CrashKind, FaultRates, InjectedFaults, PARTS_PER_MILLION, SimStorage, SimStorageOptions};
pub use stores::{SimReplicaStore, SimStores, StorageModel};

use crate::simulation::{Simulation, SimulationConfig, SimulationError};
use catch_up::{CatchUpCounters, CheckpointChecker};
use client::{ClientDriver, ClientStats, run_client};
use crash::{CrashAction, CrashConfig, CrashInjector, Moment, ReplicaLife};
pub use group_check::FULL_CHECK_INTERVAL_TICKS;
use group_check::Lagging;
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

/// Ticks between a node's fail-stop on a storage failure and its supervisor starting
/// it again on the same disk. systemd's `RestartSec` defaults to 100 ms; a second keeps
/// a node whose disk fails at every boot from spinning, and is well inside the
/// survivors' 500-tick liveness window, so a restarted backup rarely costs a view.
pub const SUPERVISOR_RESTART_TICKS: u64 = 100;

/// Ticks each replica in turn is the one whose disk may fail (see [`StorageFaults`]):
/// long enough for several writes and syncs, short enough that every replica, the
/// primary included, gets its turn many times in a run.
pub const DISK_ERROR_WINDOW_TICKS: u64 = 200;

/// Longest stall one slow disk call causes, in ticks (the draw is uniform from 1):
/// 400 ms of a node blocked in one fsync, a disk limping badly but not dead. Longer
/// than a primary's commit heartbeat, shorter than the backups' liveness window, so a
/// single slow call delays the group and a run of them forces a view change.
pub const SLOW_IO_TICKS_MAX: u64 = 40;

/// Most transient read errors a simulated disk returns in a row within the budget: one
/// fewer than the cluster's read attempts (`cluster::storage::read_retry::READ_ATTEMPTS_MAX`),
/// so a budgeted read error is always outlasted and never turns into damage on a
/// replica the corruption budget did not choose.
pub const READ_ERRORS_IN_A_ROW_MAX: u32 = cluster::storage::read_retry::READ_ATTEMPTS_MAX - 1;

/// Faults a run must have been able to expect before getting none makes it vacuous: at
/// fifteen expected (Poisson), none arriving has odds of about 1 in 3.3 million, so a
/// run that sees none points at the fault machinery, not at luck, even across a
/// campaign. (It was five, odds of 1 in 148 per run: CI's 450-run catch-up campaign
/// drew such a run by luck, `--seed 146 ... --journal-slots 80 --ring-entries 80`,
/// 5.1 expected, once the query confirmation round moved its schedule; a nightly of
/// thousands of runs would draw dozens.)
pub const DISK_FAULTS_EXPECTED_MIN: f64 = 15.0;

/// One rot in this many hits a publish frontier or a superblock instead of a WAL or a
/// checkpoint (see `maybe_rot`).
const ROT_STRUCTURES_ONE_IN: u64 = 4;

/// Salts the storage seed into the draw of the corruptible replica.
const CORRUPTIBLE_SALT: u64 = 0xC0FF_EE00_5EED_0001;
/// Salts the storage seed into the corruption coin's stream.
const CORRUPTION_SALT: u64 = 0xC0FF_EE00_5EED_0002;

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

/// Disk faults a cluster run injects on its simulated disks, and the budget that keeps
/// every failure a bug rather than bad luck.
///
/// Errors may hit any replica, primaries included: a write or a sync refused with EIO
/// (a refused sync drops the file's dirty pages, errseq style). The cluster's answer is to stop the replica and fail-stop its
/// node (publishing what its healthy stores hold); the harness's supervisor starts it
/// again on the same disk. A restart costs a `replicated` partition whatever it had
/// not published (by design: such a write is safe while some replica that holds it
/// stays up), so errors are budgeted like crashes: one replica at a time may be hit,
/// each in turn for [`DISK_ERROR_WINDOW_TICKS`], and only while more than a quorum of
/// replicas are up and rejoined.
///
/// Corruption is budgeted: the protocol repairs a damaged record from a peer that
/// holds it, so no op may be damaged on more replicas than the rest can cover. The
/// budget here is the simplest that holds for every cluster size: one replica per run,
/// drawn from the storage stream (the *corruptible* replica), may have bits of its WAL,
/// checkpoint, publish-frontier and superblock files rot; a bit rots, with
/// `corruption_probability`, each time that replica restarts, before it boots (latent
/// corruption found by the boot's read). A superblock rots only while all its copies
/// are intact, so boot always has the others.
///
/// Reads fail like writes (one replica at a time, and at any replica's boot) but stay
/// transient ([`READ_ERRORS_IN_A_ROW_MAX`]). Slowness ([`SLOW_IO_TICKS_MAX`]) damages
/// nothing and hits anyone.
/// With `unsafe_budget`, errors hit every replica at once, a background writeback may
/// fail (dropping dirty pages silently until the file's next sync), any replica may rot
/// and writes may be misdirected: such runs explore, and are reported, never counted as
/// passes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StorageFaults {
    /// Probability that one write, sync or background writeback fails with EIO.
    pub error_probability: f64,
    /// Probability, per restart of a replica the budget allows, that a bit of its WAL
    /// rots before it boots.
    pub corruption_probability: f64,
    /// Probability that one write or sync of any replica's disk is slow (see
    /// [`SLOW_IO_TICKS_MAX`]); slowness corrupts nothing, so it is outside the budget.
    pub slow_probability: f64,
    /// Lift the budget (see above).
    pub unsafe_budget: bool,
}

impl StorageFaults {
    /// Whether any fault is asked for.
    pub fn enabled(&self) -> bool {
        self.error_probability > 0.0 || self.corruption_probability > 0.0 || self.slow_probability > 0.0
    }

    /// The disk's random rates, in parts per million.
    fn rates(&self) -> FaultRates {
        let ppm = |probability: f64| (probability * f64::from(PARTS_PER_MILLION)).round() as u32;
        let error = ppm(self.error_probability);
        FaultRates {
            write_error_probability: error,
            sync_error_probability: error,
            // A failed background writeback drops dirty pages silently, to be reported
            // at the file's next sync, possibly long after this replica's turn: a
            // `replicated` partition would lose its unpublished tail while the budget
            // counts the replica as whole. Only the unsafe mode injects it.
            writeback_failure_probability: if self.unsafe_budget { error } else { 0 },
            misdirected_write_probability: if self.unsafe_budget {
                ppm(self.corruption_probability / 100.0)
            } else {
                0
            },
            read_error_probability: error,
            // Budgeted read errors are transient: fewer in a row than the cluster's
            // read attempts, so none becomes damage a peer must cover. Unsafe runs lift
            // the bound (an unreadable page is read as damaged, on any replica).
            read_errors_in_a_row_max: if self.unsafe_budget {
                u32::MAX
            } else {
                READ_ERRORS_IN_A_ROW_MAX
            },
            slow_probability: ppm(self.slow_probability),
            slow_ticks_max: SLOW_IO_TICKS_MAX,
        }
    }

    /// The rates every replica's disk has whoever's turn it is to fail: slowness, and
    /// (unsafe only) misdirected writes.
    fn rates_for_everyone(&self) -> FaultRates {
        let rates = self.rates();
        FaultRates {
            misdirected_write_probability: rates.misdirected_write_probability,
            slow_probability: rates.slow_probability,
            slow_ticks_max: rates.slow_ticks_max,
            ..FaultRates::default()
        }
    }
}

/// Whose disks the budget lets fail (see [`StorageFaults`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ErrorsOn {
    /// Nobody's: too few replicas are whole, or errors are off.
    Nobody,
    /// The one replica whose turn it is.
    One(usize),
    /// Everyone's (`--storage-faults unsafe`).
    Everyone,
}

/// What the run's disks suffered and what the cluster made of it, over every replica
/// and incarnation (the `storage-faults:` line).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StorageFaultCounts {
    /// Storage calls made on every disk.
    pub calls: u64,
    /// Faults the budget let the run expect: writes and syncs exposed to errors times
    /// the error probability, plus the corruptible replica's restarts times the
    /// corruption probability.
    pub expected: f64,
    /// Faults injected by the disks.
    pub injected: InjectedFaults,
    /// Damaged records found at boot (held but unknown).
    pub detected: u64,
    /// Logs that booted with damaged records and were replaced by a view's log, then
    /// repaired from peers.
    pub repaired: u64,
    /// Logs that booted incomplete for any reason (damage, or a partition WAL's
    /// unpublished tail discarded) and were replaced by a view's log.
    pub incomplete_replaced: u64,
    /// Replicas that stopped on a storage failure.
    pub stopped: u64,
    /// Nodes that fail-stopped (and were restarted by the supervisor).
    pub fail_stops: u64,
}

impl StorageFaultCounts {
    /// Every fault injected, of every kind.
    pub fn injected_total(&self) -> u64 {
        self.injected.total()
    }

    /// Whether the run asked for disk faults, the budget allowed enough of them that
    /// at least one was all but certain ([`DISK_FAULTS_EXPECTED_MIN`]), and none came:
    /// the fault machinery did not work, and the run tested less than it claims.
    pub fn vacuous(&self) -> bool {
        self.expected >= DISK_FAULTS_EXPECTED_MIN && self.injected_total() == 0
    }
}

impl std::fmt::Display for StorageFaultCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let i = self.injected;
        write!(
            f,
            "storage-faults: calls={} exposed_calls={} expected={:.1} injected write_errors={} sync_errors={} read_errors={} slow_calls={} \
             writeback_failures={} misdirected_writes={} corruptions={} torn_writes={}; detected damaged_records={}; repaired damaged_logs={} (incomplete_logs={}); stopped \
             replicas={} fail_stops={}",
            self.calls,
            i.exposed_calls,
            self.expected,
            i.write_errors,
            i.sync_errors,
            i.read_errors,
            i.slow_calls,
            i.writeback_failures,
            i.misdirected_writes,
            i.corruptions,
            i.torn_writes,
            self.detected,
            self.repaired,
            self.incomplete_replaced,
            self.stopped,
            self.fail_stops
        )
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
    /// One per group ever seen committing, kept after the group is deleted.
    checkers: BTreeMap<u64, StateChecker>,
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
    /// share of the run's fault schedule).
    faults_made: Vec<FaultEvent>,
    /// A replayed schedule's events, in place of the crash draws and the budget's turn.
    replay: Option<HarnessReplay>,
    /// With `--trace`, the run's timeline being recorded.
    trace: Option<Box<trace::HarnessTrace>>,
}

impl Harness {
    /// Boot `config.simulation.replicas` fresh nodes and the clients, driven by `driver`.
    pub fn new(seed: u64, config: &HarnessConfig, driver: Rc<RefCell<dyn ClientDriver>>) -> Self {
        let simulation = Simulation::new(seed, &config.simulation);
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
            replay: None,
            trace: None,
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

    fn boot(&mut self, index: usize) {
        self.slots[index].injected_at_boot = self.injected_on(index);
        // A booting replica is not whole, so its failing costs the cluster nothing: its
        // boot reads (superblocks, WALs, checkpoints) meet read errors whenever errors
        // are on at all. Writes stay as the budget's turn has them.
        let rates_before_boot = match &self.slots[index].disk {
            Disk::Sim(storage) if self.crashes_enabled && self.storage_faults.rates().read_error_probability > 0 => {
                let (before, rates) = (storage.fault_rates(), self.storage_faults.rates());
                storage.set_fault_rates(FaultRates {
                    read_error_probability: rates.read_error_probability,
                    read_errors_in_a_row_max: rates.read_errors_in_a_row_max,
                    ..before
                });
                Some(before)
            }
            _ => None,
        };
        self.open_node(index);
        if let (Some(before), Disk::Sim(storage)) = (rates_before_boot, &self.slots[index].disk) {
            storage.set_fault_rates(before);
        }
    }

    fn open_node(&mut self, index: usize) {
        let config = NodeConfig {
            cluster: SIMULATED_CLUSTER_ID,
            replica: index as u8,
            replicas: self.replica_count as u8,
            shards: self.shards as u8,
            entropy_seed: self.simulation.seeds().workload ^ (index as u64).wrapping_mul(0x9E37_79B9),
            root_password: DEFAULT_ROOT_PASSWORD.to_owned(),
            owner_fence: self.owner_fence,
            journal: self.journal,
            storage_break: self.storage_break,
            buggify: self.buggify,
        };
        let slot = &self.slots[index];
        let stores = match &slot.disk {
            Disk::Memory(stores) => SimStores::Memory(stores.clone()),
            Disk::Sim(storage) => {
                let identity = NodeIdentity {
                    cluster: cluster_id(SIMULATED_CLUSTER_NAME),
                    replica: index as u8,
                    replica_count: self.replica_count as u8,
                };
                match DurableStores::open(storage.clone(), identity) {
                    Ok(stores) => SimStores::Durable(stores.with_storage_break(self.storage_break)),
                    Err(error) => {
                        self.refused_boot(index, &error.to_string());
                        return;
                    }
                }
            }
        };
        let node = Node::open(&config, stores, slot.incarnation);
        for shard in node.shards() {
            // The per-tick checks look only at the groups that did something.
            shard.borrow_mut().track_touched_groups();
        }
        if let Some(failure) = node.storage_failure() {
            self.refused_boot(index, &failure.to_string());
            return;
        }
        let process = ProcessId(index as u32);
        let bus = self.simulation.bus(process);
        for pump in node.pumps(&bus, &self.simulation.inboxes(process)) {
            self.simulation.spawn(process, pump);
        }
        let tick = self.simulation.tick();
        let slot = &mut self.slots[index];
        slot.node = Some(node);
        for watch in slot.watches.values_mut() {
            watch.checked = 0;
            watch.checkpoint_seen = 0;
            watch.encoded_seen = 0;
            watch.transfer_since = None;
            watch.progress = (0, tick);
            watch.hosted = false;
            watch.held_before_restart = watch.held.take();
            watch.quiet = None;
        }
    }

    /// Faults replica `index`'s disk has injected so far (0 for in-memory stores).
    fn injected_on(&self, index: usize) -> u64 {
        match &self.slots[index].disk {
            Disk::Sim(storage) => storage.injected().total(),
            Disk::Memory(_) => 0,
        }
    }

    /// Replica `index` could not boot from its disk. If its disk injected a fault
    /// while it booted (or its stores are in memory, which fail only when a test says
    /// so), that is the fault at work: the node fail-stops, as a
    /// production node exits when it cannot start, and the supervisor tries again.
    /// Otherwise the disk held nothing boot should refuse: the run fails.
    fn refused_boot(&mut self, index: usize, why: &str) {
        let tick = self.simulation.tick();
        // In-memory stores fail only when a test tells them to: that is the fault.
        let memory = matches!(self.slots[index].disk, Disk::Memory(_));
        if memory || self.injected_on(index) > self.slots[index].injected_at_boot {
            tracing::info!(replica = index, why, "boot failed on an injected disk fault; fail-stop");
            self.simulation.crash(ProcessId(index as u32));
            let slot = &mut self.slots[index];
            slot.node = None;
            slot.since = tick;
            slot.supervisor_restart_at = Some(tick + SUPERVISOR_RESTART_TICKS);
            self.stats.fail_stops += 1;
        } else {
            self.boot_failure = Some(CheckFailure {
                check: "boot",
                detail: format!("replica {index} refused to boot from its disk: {why}"),
                tick,
            });
        }
    }

    /// Inject crashes and disk faults again after [`Harness::disable_crashes`] (the
    /// run goes on after an outage's recovery).
    pub fn enable_crashes(&mut self) {
        self.crashes_enabled = true;
        self.errors_on = ErrorsOn::Nobody;
        let everyone = self.storage_faults.rates_for_everyone();
        for slot in &self.slots {
            if let Disk::Sim(storage) = &slot.disk {
                storage.set_fault_rates(everyone);
            }
        }
    }

    /// A data-centre outage: every live replica loses power now (only what its disk
    /// made stable survives). They stay down until [`Harness::restart_all`].
    pub fn power_outage_now(&mut self) {
        for index in 0..self.slots.len() {
            if self.slots[index].node.is_some() {
                self.remember_held(index);
                self.end_process(index, true);
            }
        }
        self.stats.power_outages += 1;
    }

    /// Start every replica that is down (after an outage), each as a new incarnation.
    pub fn restart_all(&mut self) {
        for index in 0..self.slots.len() {
            if self.slots[index].node.is_none() {
                let incarnation = self.slots[index]
                    .incarnation
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                self.restart_now(index, incarnation);
            }
        }
    }

    /// Forget `group`'s committed ops above `op`: after an outage a `replicated`
    /// partition may come back at an earlier op, and its next ops take those numbers
    /// again. Only the caller, who knows the group's durability and checked what came
    /// back, may say so; every other group's chain stays final.
    pub fn forget_commits_above(&mut self, group: u64, op: u64) {
        if let Some(checker) = self.checkers.get_mut(&group) {
            checker.forget_above(op);
        }
        self.checkpoints.forget_above(group, op);
    }

    /// Stop injecting crashes and disk faults (for the drain at the end of a run).
    pub fn disable_crashes(&mut self) {
        self.crashes_enabled = false;
        self.errors_on = ErrorsOn::Nobody;
        for slot in &self.slots {
            if let Disk::Sim(storage) = &slot.disk {
                storage.set_fault_rates(FaultRates::default());
            }
        }
    }

    /// The replica whose WAL may rot under the budget (see [`StorageFaults`]).
    pub fn corruptible_replica(&self) -> usize {
        self.corruptible
    }

    /// The `storage-faults:` counts so far.
    pub fn storage_fault_counts(&self) -> StorageFaultCounts {
        let catch_up = self.catch_up();
        let mut injected = InjectedFaults::default();
        let mut calls = 0;
        for slot in &self.slots {
            if let Disk::Sim(storage) = &slot.disk {
                calls += storage.operations();
                injected = injected.plus(&storage.injected());
            }
        }
        StorageFaultCounts {
            calls,
            expected: injected.exposed_calls as f64 * self.storage_faults.error_probability
                + self.rot_chances as f64 * self.storage_faults.corruption_probability,
            injected,
            detected: catch_up.damaged_at_boot,
            repaired: catch_up.damaged_logs_replaced,
            incomplete_replaced: catch_up.incomplete_logs_replaced,
            stopped: catch_up.storage_failures,
            fail_stops: self.stats.fail_stops,
        }
    }

    /// With the budget's leave, rot one bit of replica `index`'s WAL before it boots.
    fn maybe_rot(&mut self, index: usize) {
        let probability = self.storage_faults.corruption_probability;
        if !self.crashes_enabled || probability <= 0.0 || !matches!(self.slots[index].disk, Disk::Sim(_)) {
            return;
        }
        if !self.storage_faults.unsafe_budget && index != self.corruptible {
            return;
        }
        self.rot_chances += 1;
        let tick = self.simulation.tick();
        let drawn = self.corruption_rng.chance(probability);
        let rot = match &mut self.replay {
            Some(replay) => replay.rots(tick, index),
            None => drawn,
        };
        if !rot {
            return;
        }
        self.faults_made.push(FaultEvent {
            tick,
            fault: Fault::Rot { replica: index },
        });
        let Disk::Sim(storage) = &self.slots[index].disk else {
            return;
        };
        // A superblock may rot only while every copy is intact, so boot always has all
        // but one to choose from (four copies, written in two synced halves, so the
        // newest state survives in another copy); rotting more would be beyond the
        // budget: with every copy damaged the replica rightly refuses to boot, for good.
        let whole_superblocks: BTreeSet<String> = storage
            .paths()
            .into_iter()
            .filter(|path| path.ends_with("/superblock"))
            .filter(|path| {
                storage
                    .buffered_bytes(path)
                    .is_some_and(|bytes| superblock::intact_copies(&bytes) == superblock::SUPERBLOCK_COPIES)
            })
            .collect();
        // Three rots in four hit what peers repair (WAL records, checkpoints), one the
        // structures a replica keeps its own copies of (publish frontiers, superblocks):
        // these are many small files, and picked like the rest they would take most
        // hits from the data the protocol has to answer for.
        let structures = self.corruption_rng.below(ROT_STRUCTURES_ONE_IN) == 0;
        if let Some((path, offset)) = storage.corrupt_stable_bit(|path| {
            if structures {
                path.ends_with("/frontier") || whole_superblocks.contains(path)
            } else {
                path.ends_with("/wal") || path.ends_with("/checkpoint")
            }
        }) {
            tracing::info!(replica = index, path, offset, "latent corruption");
        }
    }

    /// One tick: crash decisions, the simulation step, every per-tick check.
    pub fn step(&mut self) -> Result<(), CheckFailure> {
        let tick = self.simulation.tick();
        self.driver.borrow_mut().on_tick(tick);
        self.supervise(tick);
        if self.crashes_enabled && (self.crash.active() || self.replay.is_some()) {
            self.inject_crashes(tick);
        }
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
        self.check(self.simulation.tick())
    }

    /// A node whose storage failed for good has stopped itself (see
    /// `cluster::node::StorageFailure`): end its process (its page cache survives, as
    /// when a real process exits) and have the supervisor start it again after
    /// [`SUPERVISOR_RESTART_TICKS`].
    fn fail_stop_nodes(&mut self) -> Result<(), CheckFailure> {
        let tick = self.simulation.tick();
        for index in 0..self.slots.len() {
            let Some(failure) = self.slots[index].node.as_ref().and_then(Node::storage_failure) else {
                continue;
            };
            let slot = &self.slots[index];
            if matches!(slot.disk, Disk::Sim(_)) && self.injected_on(index) == slot.injected_at_boot {
                return Err(CheckFailure {
                    check: "storage",
                    detail: format!(
                        "replica {index} stopped on a storage failure ({failure}) although its disk injected no \
                         fault since it booted"
                    ),
                    tick,
                });
            }
            // The budget's own promise: an injected error stops a replica only while
            // enough others are up to cover for it (see `gate_disk_errors`).
            let others_up = (0..self.slots.len())
                .filter(|&other| other != index && self.slots[other].node.is_some())
                .count();
            if matches!(slot.disk, Disk::Sim(_))
                && !self.storage_faults.unsafe_budget
                && others_up < self.quorum_live_min
            {
                return Err(CheckFailure {
                    check: "disk fault budget",
                    detail: format!(
                        "replica {index} stopped on an injected disk fault ({failure}) with only {others_up} other \
                         replica(s) up; the budget allows errors only while {} others are (a harness bug, not the \
                         cluster's)",
                        self.quorum_live_min
                    ),
                    tick,
                });
            }
            // A group the node closed in this very step (deleted) is forgotten now, as
            // `check` would have after the step: its next incarnation may re-create it
            // fresh while replaying the metadata log, in an older view.
            if let Some(node) = &self.slots[index].node {
                let hosted: BTreeSet<u64> = node
                    .shards()
                    .iter()
                    .flat_map(|shard| shard.borrow().partitions().keys().copied().collect::<Vec<u64>>())
                    .chain([METADATA_GROUP])
                    .collect();
                self.slots[index]
                    .watches
                    .retain(|group, watch| !watch.hosted || hosted.contains(&group));
            }
            // A store that failed mid-input may have done half of what it was asked
            // (a view change truncates the log before it makes the new log view
            // durable, and that second write can be the one refused), so what it held
            // is not compared at the next boot.
            for watch in self.slots[index].watches.values_mut() {
                watch.held = None;
            }
            // As the production node does: publish what the healthy stores hold, then exit.
            let (flushed, failed) = self.slots[index].node.as_ref().map_or((0, 0), Node::flush_for_shutdown);
            tracing::info!(replica = index, %failure, flushed, failed, "fail-stop");
            if self.trace.is_some() {
                self.trace_fault(index, "fail-stop", failure.to_string());
            }
            self.end_process(index, false);
            self.stats.fail_stops += 1;
            self.slots[index].supervisor_restart_at = Some(tick + SUPERVISOR_RESTART_TICKS);
        }
        Ok(())
    }

    /// Start again every fail-stopped node whose supervisor delay is over, whether or
    /// not crashes are being injected (the supervisor is not a fault).
    fn supervise(&mut self, tick: u64) {
        for index in 0..self.slots.len() {
            let slot = &self.slots[index];
            if slot.node.is_some() || slot.supervisor_restart_at.is_none_or(|at| at > tick) {
                continue;
            }
            // A new incarnation, derived (one LCG step) so the supervisor draws nothing.
            let incarnation = slot
                .incarnation
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            tracing::info!(replica = index, "supervisor restart");
            self.restart_now(index, incarnation);
            self.stats.supervisor_restarts += 1;
        }
    }

    /// Whether each replica is up and whole, so the cluster could lose another:
    /// its node has rejoined (every group it hosts holds its log in full) and its
    /// metadata has applied the newest change to the partition set any replica ever
    /// applied, so it hosts every group it will host. Without the second half, a
    /// node that had not yet applied a partition's creation counted as whole while that
    /// group's store, once opened, would hold an amnesiac log (CI's power-loss campaign,
    /// `--seed 92 --plane uniform --faults light --power-loss-prob 0.5`: the node had led
    /// seven groups before a fail-stop, and the crash injector took the only other copy).
    /// "Ever", not "any live replica": in `--seed 253 --plane uniform --faults heavy
    /// --power-loss-prob 0.5` the only replica that had applied a creation fail-stopped
    /// in the same tick (its group superblocks written), no live replica had applied it
    /// yet, all counted whole, and the crash injector took a third replica for good
    /// while the restarted one's new groups were amnesiac: stuck through the drain.
    pub fn wholes(&self) -> Vec<bool> {
        let partitions_changed =
            |handle: &MetadataHandle| handle.borrow().state_machine().state().partitions_changed_at();
        let live = self.live_replicas();
        let newest = self.partitions_changed_max;
        let mut wholes = vec![false; self.slots.len()];
        for (index, handle) in &live {
            let rejoined = self.slots[*index].node.as_ref().is_some_and(Node::rejoined);
            wholes[*index] = rejoined && partitions_changed(handle) >= newest;
        }
        wholes
    }

    /// Turn disk errors on for the replica whose turn it is, if the cluster can afford
    /// it a restart now, and off for every other (see [`StorageFaults`]).
    fn gate_disk_errors(&mut self, tick: u64) {
        let rates = self.storage_faults.rates();
        if !self.crashes_enabled || rates.write_error_probability == 0 {
            return;
        }
        let scheduled = self.replay.as_mut().map(|replay| replay.disk_at(tick));
        let target = match scheduled {
            Some(DiskErrorsOn::Nobody) => ErrorsOn::Nobody,
            Some(DiskErrorsOn::Everyone) if self.storage_faults.unsafe_budget => ErrorsOn::Everyone,
            None if self.storage_faults.unsafe_budget => ErrorsOn::Everyone,
            Some(DiskErrorsOn::Everyone) => ErrorsOn::Nobody,
            Some(DiskErrorsOn::Replica(turn)) if turn >= self.slots.len() => ErrorsOn::Nobody,
            Some(DiskErrorsOn::Replica(turn)) if self.storage_faults.unsafe_budget => ErrorsOn::One(turn),
            // The budget's turn, or the schedule's replica under the budget's rule.
            scheduled => {
                let live = self.wholes().into_iter().filter(|&whole| whole).count();
                let turn = match scheduled {
                    Some(DiskErrorsOn::Replica(turn)) => turn,
                    _ => (tick / DISK_ERROR_WINDOW_TICKS) as usize % self.slots.len(),
                };
                if live > self.quorum_live_min && self.slots[turn].node.is_some() {
                    ErrorsOn::One(turn)
                } else {
                    ErrorsOn::Nobody
                }
            }
        };
        if target == self.errors_on {
            return;
        }
        self.errors_on = target;
        self.faults_made.push(FaultEvent {
            tick,
            fault: Fault::DiskErrors {
                on: match target {
                    ErrorsOn::Nobody => DiskErrorsOn::Nobody,
                    ErrorsOn::One(replica) => DiskErrorsOn::Replica(replica),
                    ErrorsOn::Everyone => DiskErrorsOn::Everyone,
                },
            },
        });
        for (index, slot) in self.slots.iter().enumerate() {
            if let Disk::Sim(storage) = &slot.disk {
                let on = target == ErrorsOn::Everyone || target == ErrorsOn::One(index);
                storage.set_fault_rates(if on {
                    rates
                } else {
                    self.storage_faults.rates_for_everyone()
                });
            }
        }
    }

    /// The protocol moment replica `index` is at, over every group its node hosts (the
    /// metadata group's first): a transfer in progress, then prepares in flight as a
    /// primary, then a repair outstanding as a backup.
    fn moment_of(&self, index: usize) -> Option<Moment> {
        let node = self.slots[index].node.as_ref()?;
        let mut moment = None;
        let mut note = |transferring: bool, preparing: bool, repairing: bool| {
            let here = if transferring {
                Some(Moment::Transferring)
            } else if preparing {
                Some(Moment::PrimaryPreparing)
            } else if repairing {
                Some(Moment::BackupRepairing)
            } else {
                None
            };
            moment = moment.or(here);
        };
        for shard in node.shards() {
            let shard = shard.borrow();
            let replicas = shard
                .metadata()
                .map(|replica| {
                    (
                        replica.transferring(),
                        replica.prepares_in_flight() > 0,
                        replica.repair_state().1,
                    )
                })
                .into_iter()
                .chain(shard.partitions().values().map(|replica| {
                    (
                        replica.transferring(),
                        replica.prepares_in_flight() > 0,
                        replica.repair_state().1,
                    )
                }));
            for (transferring, preparing, repairing) in replicas {
                note(transferring, preparing, repairing);
            }
        }
        moment
    }

    fn inject_crashes(&mut self, tick: u64) {
        let at_moments = self.crash.at_moments();
        // "Primary" means the metadata primary: with a group per partition nearly
        // every replica leads some partition, and sparing all of them would spare all.
        let wholes = self.wholes();
        let lives: Vec<ReplicaLife> = (0..self.slots.len())
            .map(|index| ReplicaLife {
                up: self.slots[index].node.is_some(),
                since: self.slots[index].since,
                primary: self
                    .metadata(index)
                    .is_some_and(|replica| replica.borrow().is_primary()),
                rejoined: wholes[index],
                moment: if at_moments { self.moment_of(index) } else { None },
            })
            .collect();
        let actions = match &mut self.replay {
            Some(replay) => {
                let scheduled = replay.crashes_at(tick);
                self.scheduled_crash_actions(scheduled, &lives)
            }
            None => self
                .crash
                .decide(tick, &lives)
                .into_iter()
                .map(|action| (action, None))
                .collect(),
        };
        for (action, scheduled_power_loss) in actions {
            match action {
                CrashAction::Crash { replica, moment } => {
                    tracing::info!(replica, moment = moment.map(Moment::name), "crash");
                    if let Some(moment) = moment {
                        let at = Moment::ALL.iter().position(|&m| m == moment).unwrap_or(0);
                        self.stats.moment_crashes[at] += 1;
                    }
                    let power_loss = self.crash_with(replica, scheduled_power_loss);
                    self.faults_made.push(FaultEvent {
                        tick,
                        fault: Fault::Crash {
                            replica,
                            power_loss,
                            moment: moment.map(|moment| moment.name().to_owned()),
                        },
                    });
                }
                CrashAction::Restart { replica, incarnation } => {
                    tracing::info!(replica, incarnation = format_args!("{incarnation:#x}"), "restart");
                    self.faults_made.push(FaultEvent {
                        tick,
                        fault: Fault::Restart { replica, incarnation },
                    });
                    self.restart_now(replica, incarnation);
                }
            }
        }
    }

    /// The per-tick checks, for every group on every live replica: views never go
    /// back; applied ops agree with the group's canonical chain; a Normal replica does
    /// not sit behind its commit point for long; no frame is misrouted or unroutable.
    /// A group quiet since its last check is skipped, except on a full check (every
    /// [`FULL_CHECK_INTERVAL_TICKS`]; see `group_check`).
    fn check(&mut self, tick: u64) -> Result<(), CheckFailure> {
        self.group_ticks += self.check_groups(tick, tick.is_multiple_of(FULL_CHECK_INTERVAL_TICKS))?;
        Ok(())
    }

    /// The full check, now: every group of every live replica, whatever its activity,
    /// each skipped one verified unchanged. A run calls it once at its end, so the last
    /// ticks are checked in full whatever the interval.
    pub fn check_in_full(&mut self) -> Result<(), CheckFailure> {
        self.check_groups(self.simulation.tick(), true).map(drop)
    }

    /// The simulation (network, executor).
    pub fn simulation(&self) -> &Simulation {
        &self.simulation
    }

    /// The simulation, mutably.
    pub fn simulation_mut(&mut self) -> &mut Simulation {
        &mut self.simulation
    }

    /// The metadata group's state checker.
    pub fn checker(&self) -> &StateChecker {
        self.checkers
            .get(&METADATA_GROUP)
            .expect("the metadata checker exists from boot")
    }

    /// Every group's state checker (deleted partitions' included).
    pub fn checkers(&self) -> &BTreeMap<u64, StateChecker> {
        &self.checkers
    }

    /// Committed ops summed over every group's canonical chain.
    pub fn commits_total(&self) -> u64 {
        self.checkers.values().map(StateChecker::commits).sum()
    }

    /// Ops checked against a canonical chain, summed over groups.
    pub fn ops_compared_total(&self) -> u64 {
        self.checkers.values().map(StateChecker::ops_compared).sum()
    }

    /// Crash and restart counts.
    pub fn stats(&self) -> HarnessStats {
        self.stats
    }

    /// Catch-up counters over every replica of every group, crashed incarnations too.
    pub fn catch_up(&self) -> CatchUpCounters {
        self.live_nodes()
            .iter()
            .fold(self.retired, |sum, (_, node)| sum.plus(&CatchUpCounters::of_node(node)))
    }

    /// Checkpoint states compared between replicas (see [`CheckpointChecker`]).
    pub fn checkpoints_compared(&self) -> u64 {
        self.checkpoints.compared()
    }

    /// The most entries and frame bytes one replica's journal held at a tick's end.
    pub fn journal_peak(&self) -> (usize, u64) {
        self.checkpoints.journal_peak()
    }

    /// Each client's counters.
    pub fn client_stats(&self) -> Vec<ClientStats> {
        self.clients.iter().map(|stats| *stats.borrow()).collect()
    }

    /// Replica `index`'s metadata replica, if it is up.
    pub fn metadata(&self, index: usize) -> Option<MetadataHandle> {
        let node = self.slots[index].node.as_ref()?;
        Some(MetadataHandle(node.shards()[0].clone()))
    }

    /// The live replicas' metadata replicas.
    pub fn live_replicas(&self) -> Vec<(usize, MetadataHandle)> {
        (0..self.slots.len())
            .filter_map(|index| self.metadata(index).map(|handle| (index, handle)))
            .collect()
    }

    /// The live nodes.
    pub fn live_nodes(&self) -> Vec<(usize, &Node<SimStores>)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(index, slot)| slot.node.as_ref().map(|node| (index, node)))
            .collect()
    }

    /// Every live replica of partition group `group`, with its replica index (borrow
    /// between steps only).
    pub fn partition_replicas(&self, group: u64) -> Vec<(usize, Ref<'_, PartitionReplica>)> {
        let owner = usize::from(owner_shard(group, self.shards as u8));
        self.live_nodes()
            .into_iter()
            .filter_map(|(index, node)| {
                Ref::filter_map(node.shards()[owner].borrow(), |shard| shard.partitions().get(&group))
                    .ok()
                    .map(|replica| (index, replica))
            })
            .collect()
    }

    /// The metadata store of replica `index` (kept across crashes), for fault
    /// injection. Only with [`StorageModel::Memory`]: a simulated disk is faulted
    /// through [`SimStorage`] instead.
    pub fn store(&self, index: usize) -> MemoryStore {
        match &self.slots[index].disk {
            Disk::Memory(stores) => stores.get(METADATA_GROUP).expect("the metadata store exists from boot"),
            Disk::Sim(_) => panic!("Harness::store needs StorageModel::Memory"),
        }
    }

    /// Replica-group ticks so far: at each tick, the groups every live replica hosts.
    /// The work a run's ticks stand for: a plane that creates groups as it runs does
    /// more of it per tick late in a run than early, so its ticks/s alone would read
    /// as cost growing faster than the work.
    pub fn group_ticks(&self) -> u64 {
        self.group_ticks
    }

    /// Of [`Harness::group_ticks`], the ones whose checks were skipped: the group was
    /// quiet at its last check and its replica had taken no input since.
    pub fn group_checks_skipped(&self) -> u64 {
        self.group_checks_skipped
    }

    /// Per-tick walks over one node's groups so far: (those that visited only the
    /// groups the node touched and those with a clock running, those that visited
    /// every group).
    pub fn node_walks(&self) -> (u64, u64) {
        self.node_walks
    }

    /// Test only: make the watch of one quiet group of replica `index` remember its
    /// replica other than it is, as a change that came without an input would leave
    /// it, so the next full check must fail. Returns the group, if one was quiet.
    #[doc(hidden)]
    pub fn misremember_a_quiet_group_for_test(&mut self, index: usize) -> Option<u64> {
        self.slots[index].watches.misremember_a_quiet_group()
    }

    /// The simulated disk of replica `index` (with [`StorageModel::Sim`]).
    pub fn disk(&self, index: usize) -> Option<&SimStorage> {
        match &self.slots[index].disk {
            Disk::Sim(storage) => Some(storage),
            Disk::Memory(_) => None,
        }
    }

    /// Note what every group of replica `index` holds now, for the check at its next
    /// boot (see `GroupWatch::held`). A crash comes between steps, so this is what the
    /// last check saw.
    fn remember_held(&mut self, index: usize) {
        let slot = &mut self.slots[index];
        let Some(node) = &slot.node else { return };
        for shard in node.shards() {
            let shard = shard.borrow();
            if let Some(metadata) = shard.metadata()
                && let Some(watch) = slot.watches.get_mut(METADATA_GROUP)
            {
                watch.held = Some((metadata.log_view(), metadata.held_head()));
            }
            for (group, replica) in shard.partitions() {
                if let Some(watch) = slot.watches.get_mut(*group) {
                    watch.held = Some((replica.log_view(), replica.held_head()));
                }
            }
        }
    }

    /// Crash replica `index` now (the crash injector, tests and scenarios); with
    /// [`StorageModel::Sim`] the crash is a power loss with the configured probability.
    pub fn crash_now(&mut self, index: usize) {
        self.crash_with(index, None);
    }

    /// Crash replica `index` now, cutting the power as `power_loss` says or, without
    /// it, as the power coin falls. The coin is drawn either way, so a replayed
    /// schedule leaves the draws of every later crash where they were. Returns whether
    /// the power was cut.
    fn crash_with(&mut self, index: usize, power_loss: Option<bool>) -> bool {
        self.remember_held(index);
        let drawn = self.power_loss_probability > 0.0 && self.power_rng.chance(self.power_loss_probability);
        let power_loss = power_loss.unwrap_or(drawn) && matches!(self.slots[index].disk, Disk::Sim(_));
        self.end_process(index, power_loss);
        self.stats.crashes += 1;
        power_loss
    }

    /// Cut the power to replica `index` now, whatever the power-loss probability.
    pub fn power_loss_now(&mut self, index: usize) {
        self.remember_held(index);
        self.end_process(index, true);
        self.stats.crashes += 1;
    }

    /// Replica `index`'s process ends (its tasks dropped mid-await); with a power loss
    /// its disk keeps only what was stable.
    fn end_process(&mut self, index: usize, power_loss: bool) {
        let tick = self.simulation.tick();
        if self.trace.is_some() {
            let kind = if power_loss { "power-loss" } else { "crash" };
            self.trace_fault(index, kind, format!("replica {index}'s process ends"));
        }
        self.simulation.crash(ProcessId(index as u32));
        let slot = &mut self.slots[index];
        if let Some(node) = &slot.node {
            self.retired = self.retired.plus(&CatchUpCounters::of_node(node));
        }
        slot.node = None;
        slot.since = tick;
        if let Disk::Sim(storage) = &slot.disk {
            if power_loss {
                storage.crash(CrashKind::PowerLoss);
                self.stats.power_losses += 1;
            } else {
                storage.crash(CrashKind::Process);
            }
        }
    }

    /// Keep replica `index`, which is down, down: cancel the supervisor's restart of a
    /// fail-stopped node (a phase that decides which replicas run, the liveness phase,
    /// restarts it itself when the phase ends).
    pub fn keep_down(&mut self, index: usize) {
        let slot = &mut self.slots[index];
        assert!(slot.node.is_none(), "replica {index} is up; crash it first");
        slot.supervisor_restart_at = None;
    }

    /// Restart replica `index` now with `incarnation` (the crash injector, tests and scenarios).
    pub fn restart_now(&mut self, index: usize, incarnation: u64) {
        let tick = self.simulation.tick();
        self.simulation.restart(ProcessId(index as u32));
        let slot = &mut self.slots[index];
        slot.incarnation = incarnation;
        slot.since = tick;
        slot.supervisor_restart_at = None;
        self.maybe_rot(index);
        self.boot(index);
        self.stats.restarts += 1;
        if self.trace.is_some() {
            self.trace_fault(index, "restart", format!("incarnation {incarnation:#x}"));
        }
    }

    /// One status line per replica (its metadata replica and partition summary), for
    /// failure reports.
    pub fn status_lines(&self) -> Vec<String> {
        (0..self.slots.len())
            .map(|index| match self.metadata(index) {
                None => format!("replica {index}: CRASHED (since tick {})", self.slots[index].since),
                Some(handle) => {
                    let r = handle.borrow();
                    let (repairs, repairing) = r.repair_state();
                    let node = self.slots[index].node.as_ref().expect("a live replica has a node");
                    let (mut groups, mut primaries, mut not_normal) = (0, 0, 0);
                    for shard in node.shards() {
                        for replica in shard.borrow().partitions().values() {
                            groups += 1;
                            primaries += u64::from(replica.is_primary() && replica.status() == Status::Normal);
                            not_normal += u64::from(replica.status() != Status::Normal);
                        }
                    }
                    format!(
                        "replica {index}: live | metadata status={:?} view={} log_view={} commit={}..{} head={} \
                         primary={} repairs={repairs} repairing={repairing} next: {} | partitions={groups} \
                         leading={primaries} not_normal={not_normal}",
                        r.status(),
                        r.view(),
                        r.log_view(),
                        r.commit_min(),
                        r.commit_max(),
                        r.head(),
                        r.is_primary(),
                        r.describe_op(r.commit_min() + 1)
                    )
                }
            })
            .collect()
    }
}
