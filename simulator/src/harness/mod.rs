//! A simulated cluster: real nodes (every shard running the real pump, the metadata
//! group and one group per partition) on the [`Simulation`], with crash injection,
//! per-tick checks and a state checker per group.
//!
//! What it models: replicas that crash (tasks dropped mid-await, inboxes and in-flight
//! packets lost) and restart on the disk they kept, under a new incarnation, booting
//! through the production recovery code ([`stores`]); a crash may cut the power, which
//! loses whatever the disk had not made stable; shards within a replica, with router
//! hops; clients that follow the resend discipline of [`client`]. What it does not model
//! yet: I/O errors and torn writes inside a cluster run (the storage sweeps cover them
//! one structure at a time).

pub mod catch_up;
pub mod client;
pub mod crash;
pub mod state_checker;
pub mod stores;

use std::cell::{Ref, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

use cluster::metadata::{DEFAULT_ROOT_PASSWORD, MetadataMachine};
use cluster::node::{
    DurableStores, JournalBounds, METADATA_GROUP, MemoryStores, Node, NodeConfig, NodeIdentity, Shard, owner_shard,
};
use cluster::partition::{OwnerFence, PartitionMachine};
use cluster::seam::ProcessId;
use cluster::storage::superblock::cluster_id;
use cluster::vsr::journal::root_header;
use cluster::vsr::{MemoryStore, Replica, StateMachine, Status};

use crate::rng::SimRng;
use crate::storage::{CrashKind, SimStorage, SimStorageOptions};
pub use stores::{SimReplicaStore, SimStores, StorageModel};

use crate::simulation::{Simulation, SimulationConfig, SimulationError};
use catch_up::{CatchUpCounters, CheckpointChecker};
use client::{ClientDriver, ClientStats, run_client};
use crash::{CrashAction, CrashConfig, CrashInjector, ReplicaLife};
use state_checker::{CommittedOp, StateChecker};

/// Ticks a live Normal replica of a group may sit behind its commit point without
/// applying anything before the run fails as stuck (a hole nobody repairs).
pub const COMMIT_STUCK_TICKS_MAX: u64 = 2_000;

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

/// What the per-tick checks remember about one group on one replica.
#[derive(Clone, Copy, Debug, Default)]
struct GroupWatch {
    /// Last applied op checked by the state checker, this incarnation.
    checked: u64,
    /// Highest view seen (views are durable: they never go back, even across restarts).
    view_seen: u64,
    /// (commit_min, tick it last moved) this incarnation, for the stuck check.
    progress: (u64, u64),
    /// Hosted at the last check.
    present: bool,
    /// Hosted at some check this incarnation (one that was, and no longer is, was
    /// closed: its partition was deleted).
    hosted: bool,
    /// The checkpoint op whose state was last compared, this incarnation.
    checkpoint_seen: u64,
    /// The tick the state transfer in progress was first seen, this incarnation.
    transfer_since: Option<u64>,
}

impl GroupWatch {
    fn new(tick: u64) -> Self {
        Self {
            progress: (0, tick),
            ..Self::default()
        }
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
    watches: BTreeMap<u64, GroupWatch>,
    /// The tick the supervisor starts this node again, after a fail-stop.
    supervisor_restart_at: Option<u64>,
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
    power_loss_probability: f64,
    /// Draws whether a crash cuts the power (only when the probability is above zero,
    /// so runs without power loss draw nothing from it).
    power_rng: SimRng,
    /// A node that refused to boot (its disk did not recover): reported by the next step.
    boot_failure: Option<CheckFailure>,
    journal: JournalBounds,
    /// Catch-up counters of nodes that crashed (a node's own die with it).
    retired: CatchUpCounters,
    checkpoints: CheckpointChecker,
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
            power_rng: SimRng::new(storage_seed),
            boot_failure: None,
            journal: config.journal,
            retired: CatchUpCounters::default(),
            checkpoints: CheckpointChecker::default(),
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
                    ..SimStorageOptions::default()
                })),
            };
            harness.slots.push(Slot {
                node: None,
                disk,
                incarnation: 0,
                since: 0,
                watches: BTreeMap::new(),
                supervisor_restart_at: None,
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
        let config = NodeConfig {
            cluster: SIMULATED_CLUSTER_ID,
            replica: index as u8,
            replicas: self.replica_count as u8,
            shards: self.shards as u8,
            entropy_seed: self.simulation.seeds().workload ^ (index as u64).wrapping_mul(0x9E37_79B9),
            root_password: DEFAULT_ROOT_PASSWORD.to_owned(),
            owner_fence: self.owner_fence,
            journal: self.journal,
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
                    Ok(stores) => SimStores::Durable(stores),
                    Err(error) => {
                        self.boot_failure = Some(CheckFailure {
                            check: "boot",
                            detail: format!("replica {index} refused to boot from its disk: {error}"),
                            tick: self.simulation.tick(),
                        });
                        return;
                    }
                }
            }
        };
        let node = Node::open(&config, stores, slot.incarnation);
        let failed_groups: u64 = node
            .shards()
            .iter()
            .map(|shard| shard.borrow().stats().groups_open_failed)
            .sum();
        if failed_groups > 0 {
            self.boot_failure = Some(CheckFailure {
                check: "boot",
                detail: format!("replica {index}: {failed_groups} group store(s) refused to open from its disk"),
                tick: self.simulation.tick(),
            });
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
            watch.transfer_since = None;
            watch.progress = (0, tick);
            watch.present = false;
            watch.hosted = false;
        }
    }

    /// Stop injecting crashes (for the drain at the end of a run).
    pub fn disable_crashes(&mut self) {
        self.crashes_enabled = false;
    }

    /// One tick: crash decisions, the simulation step, every per-tick check.
    pub fn step(&mut self) -> Result<(), CheckFailure> {
        let tick = self.simulation.tick();
        self.supervise(tick);
        if self.crashes_enabled && self.crash.active() {
            self.inject_crashes(tick);
        }
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
        self.fail_stop_nodes();
        self.check(self.simulation.tick())
    }

    /// A node whose storage failed for good has stopped itself (see
    /// `cluster::node::StorageFailure`): end its process (its page cache survives, as
    /// when a real process exits) and have the supervisor start it again after
    /// [`SUPERVISOR_RESTART_TICKS`].
    fn fail_stop_nodes(&mut self) {
        let tick = self.simulation.tick();
        for index in 0..self.slots.len() {
            let Some(failure) = self.slots[index].node.as_ref().and_then(Node::storage_failure) else {
                continue;
            };
            tracing::info!(replica = index, %failure, "fail-stop");
            self.end_process(index, false);
            self.stats.fail_stops += 1;
            self.slots[index].supervisor_restart_at = Some(tick + SUPERVISOR_RESTART_TICKS);
        }
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

    fn inject_crashes(&mut self, tick: u64) {
        // "Primary" means the metadata primary: with a group per partition nearly
        // every replica leads some partition, and sparing all of them would spare all.
        let lives: Vec<ReplicaLife> = (0..self.slots.len())
            .map(|index| ReplicaLife {
                up: self.slots[index].node.is_some(),
                since: self.slots[index].since,
                primary: self
                    .metadata(index)
                    .is_some_and(|replica| replica.borrow().is_primary()),
                rejoined: self.slots[index].node.as_ref().is_some_and(Node::rejoined),
            })
            .collect();
        for action in self.crash.decide(tick, &lives) {
            match action {
                CrashAction::Crash { replica } => {
                    tracing::info!(replica, "crash");
                    self.crash_now(replica);
                }
                CrashAction::Restart { replica, incarnation } => {
                    tracing::info!(replica, incarnation = format_args!("{incarnation:#x}"), "restart");
                    self.restart_now(replica, incarnation);
                }
            }
        }
    }

    /// The per-tick checks, for every group on every live replica: views never go
    /// back; applied ops agree with the group's canonical chain; a Normal replica does
    /// not sit behind its commit point for long; no frame is misrouted or unroutable.
    fn check(&mut self, tick: u64) -> Result<(), CheckFailure> {
        let fail = |check: &'static str, detail: String| CheckFailure { check, detail, tick };
        if self.simulation.stats().frames_unroutable > 0 {
            return Err(fail(
                "unroutable frame",
                "a frame was sent to a process outside the world".into(),
            ));
        }
        let break_check = self.break_check;
        for (index, slot) in self.slots.iter_mut().enumerate() {
            let Some(node) = &slot.node else { continue };
            for watch in slot.watches.values_mut() {
                watch.present = false;
            }
            for shard in node.shards() {
                let shard = shard.borrow();
                if let Some(metadata) = shard.metadata() {
                    check_group(
                        index,
                        METADATA_GROUP,
                        metadata,
                        slot.incarnation,
                        slot.watches
                            .entry(METADATA_GROUP)
                            .or_insert_with(|| GroupWatch::new(tick)),
                        &mut self.checkers,
                        &mut self.checkpoints,
                        tick,
                        break_check,
                    )?;
                }
                for (group, replica) in shard.partitions() {
                    check_group(
                        index,
                        *group,
                        replica,
                        slot.incarnation,
                        slot.watches.entry(*group).or_insert_with(|| GroupWatch::new(tick)),
                        &mut self.checkers,
                        &mut self.checkpoints,
                        tick,
                        break_check,
                    )?;
                }
            }
            // A group this node no longer hosts was deleted here: forget what was seen
            // of it, since its store went with it (a restart replaying the metadata log
            // briefly re-creates it, fresh, before replaying the delete).
            if slot.watches.values().any(|watch| watch.hosted && !watch.present) {
                slot.watches.retain(|_, watch| watch.present || !watch.hosted);
            }
        }
        Ok(())
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

    /// The simulated disk of replica `index` (with [`StorageModel::Sim`]).
    pub fn disk(&self, index: usize) -> Option<&SimStorage> {
        match &self.slots[index].disk {
            Disk::Sim(storage) => Some(storage),
            Disk::Memory(_) => None,
        }
    }

    /// Crash replica `index` now (the crash injector, tests and scenarios); with
    /// [`StorageModel::Sim`] the crash is a power loss with the configured probability.
    pub fn crash_now(&mut self, index: usize) {
        let power_loss = self.power_loss_probability > 0.0 && self.power_rng.chance(self.power_loss_probability);
        self.end_process(index, power_loss);
        self.stats.crashes += 1;
    }

    /// Cut the power to replica `index` now, whatever the power-loss probability.
    pub fn power_loss_now(&mut self, index: usize) {
        self.end_process(index, true);
        self.stats.crashes += 1;
    }

    /// Replica `index`'s process ends (its tasks dropped mid-await); with a power loss
    /// its disk keeps only what was stable.
    fn end_process(&mut self, index: usize, power_loss: bool) {
        let tick = self.simulation.tick();
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

    /// Restart replica `index` now with `incarnation` (the crash injector, tests and scenarios).
    pub fn restart_now(&mut self, index: usize, incarnation: u64) {
        let tick = self.simulation.tick();
        self.simulation.restart(ProcessId(index as u32));
        let slot = &mut self.slots[index];
        slot.incarnation = incarnation;
        slot.since = tick;
        slot.supervisor_restart_at = None;
        self.boot(index);
        self.stats.restarts += 1;
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

/// The per-tick checks for one group on one replica.
#[allow(clippy::too_many_arguments)]
fn check_group<S: StateMachine>(
    index: usize,
    group: u64,
    replica: &Replica<S, SimReplicaStore>,
    incarnation: u64,
    watch: &mut GroupWatch,
    checkers: &mut BTreeMap<u64, StateChecker>,
    checkpoints: &mut CheckpointChecker,
    tick: u64,
    break_check: bool,
) -> Result<(), CheckFailure> {
    let fail = |check: &'static str, detail: String| CheckFailure { check, detail, tick };
    watch.present = true;
    watch.hosted = true;
    if replica.view() < watch.view_seen {
        return Err(fail(
            "view went back",
            format!(
                "replica {index} group {group:#x} is in view {} after view {}",
                replica.view(),
                watch.view_seen
            ),
        ));
    }
    watch.view_seen = replica.view();
    if replica.stats().frames_misrouted > 0 {
        return Err(fail(
            "misrouted frame",
            format!("replica {index} group {group:#x} received a frame for another group or cluster"),
        ));
    }
    let commit_min = replica.commit_min();
    if commit_min < watch.checked {
        return Err(fail(
            "commit went back",
            format!(
                "replica {index} group {group:#x} applied up to {commit_min} after {}",
                watch.checked
            ),
        ));
    }
    if commit_min > watch.checked {
        let checker = checkers
            .entry(group)
            .or_insert_with(|| StateChecker::new(root_header(SIMULATED_CLUSTER_ID, group).checksum));
        // Ops below the journal's floor were covered by a checkpoint this replica
        // installed (from a peer or its disk) without applying them one by one: the
        // checkpoint check compares its state instead, and the floor op's header is
        // still checked against the chain.
        for op in (watch.checked + 1).max(replica.journal_floor())..=commit_min {
            let header = replica.committed_header(op).ok_or_else(|| {
                fail(
                    "applied op missing",
                    format!("replica {index} group {group:#x} applied op {op} but no longer holds its header"),
                )
            })?;
            checker
                .on_commit(index, incarnation, CommittedOp::from(header))
                .map_err(|detail| fail("state checker", format!("group {group:#x}: {detail}")))?;
            if break_check && header.checksum.trailing_zeros() >= 12 {
                return Err(fail(
                    "broken check (test-only)",
                    format!(
                        "replica {index} applied op {op} of group {group:#x}, whose checksum {:#x} ends in twelve zero bits",
                        header.checksum
                    ),
                ));
            }
        }
        watch.checked = commit_min;
    }
    checkpoints
        .check(index, group, replica, &mut watch.checkpoint_seen)
        .map_err(|detail| fail("checkpoint diverged", detail))?;
    // A transfer ends within its retry budget when its peer is silent, so one still
    // running after this long is making no progress it will ever finish.
    match (replica.transferring(), watch.transfer_since) {
        (false, _) => watch.transfer_since = None,
        (true, None) => watch.transfer_since = Some(tick),
        (true, Some(since)) if tick - since > COMMIT_STUCK_TICKS_MAX => {
            return Err(fail(
                "transfer stuck",
                format!(
                    "replica {index} group {group:#x} has been receiving a state transfer for {} ticks \
                     (applied {}, committed {})",
                    tick - since,
                    replica.commit_min(),
                    replica.commit_max()
                ),
            ));
        }
        (true, Some(_)) => {}
    }
    if commit_min != watch.progress.0 || replica.status() != Status::Normal || commit_min >= replica.commit_max() {
        watch.progress = (commit_min, tick);
    } else if tick - watch.progress.1 > COMMIT_STUCK_TICKS_MAX {
        let (requests, outstanding) = replica.repair_state();
        return Err(fail(
            "commit stuck",
            format!(
                "replica {index} group {group:#x} has applied {commit_min} of {} committed ops for {} ticks (head {}); \
                 next: {}; below: {}; repair requests sent: {requests}, outstanding: {outstanding}",
                replica.commit_max(),
                tick - watch.progress.1,
                replica.head(),
                replica.describe_op(commit_min + 1),
                replica.describe_op(commit_min),
            ),
        ));
    }
    Ok(())
}
