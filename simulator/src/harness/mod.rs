//! A simulated VSR cluster: real replicas running the real shard pump on the
//! [`Simulation`], with crash injection, per-tick checks and the state checker.
//!
//! What it models: replicas that crash (tasks dropped mid-await, inbox and in-flight
//! packets lost) and restart on the store they kept, under a new incarnation; clients
//! that follow the resend discipline of [`client`]. What it does not model yet: power
//! loss or storage faults (the store never loses a write), several shards per replica.

pub mod client;
pub mod crash;
pub mod state_checker;

use std::cell::RefCell;
use std::rc::Rc;

use cluster::seam::ProcessId;
use cluster::shard::run_replica;
use cluster::vsr::journal::root_header;
use cluster::vsr::{MemoryStore, Replica, ReplicaConfig, StateMachine, Status};

use crate::simulation::{Simulation, SimulationConfig, SimulationError};
use client::{ClientDriver, ClientStats, run_client};
use crash::{CrashAction, CrashConfig, CrashInjector, ReplicaLife};
use state_checker::{CommittedOp, StateChecker};

/// Ticks a live Normal replica may sit behind its commit point without applying
/// anything before the run fails as stuck (a hole nobody repairs).
pub const COMMIT_STUCK_TICKS_MAX: u64 = 2_000;

/// The cluster id the simulated cluster uses.
pub const SIMULATED_CLUSTER_ID: u64 = 0xC1_0057;

/// Everything that shapes a simulated cluster run.
#[derive(Clone, Debug)]
pub struct HarnessConfig {
    /// Replicas and clients and their network.
    pub simulation: SimulationConfig,
    /// Crash injection.
    pub crash: CrashConfig,
    /// Test-only: fail the state checker on ops whose checksum ends in twelve zero
    /// bits (see `workload-fuzz --break-check`).
    pub break_check: bool,
}

type SharedReplica<S> = Rc<RefCell<Replica<S, MemoryStore>>>;

struct Slot<S> {
    replica: Option<SharedReplica<S>>,
    store: MemoryStore,
    incarnation: u64,
    since: u64,
    /// Last applied op checked by the state checker, this incarnation.
    checked: u64,
    /// Highest view seen (views are durable: they never go back, even across restarts).
    view_seen: u64,
    /// (commit_min, tick it last moved) this incarnation, for the stuck check.
    progress: (u64, u64),
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
}

/// A simulated cluster.
pub struct Harness<S: StateMachine + 'static> {
    simulation: Simulation,
    slots: Vec<Slot<S>>,
    make_state_machine: Box<dyn Fn() -> S>,
    crash: CrashInjector,
    checker: StateChecker,
    clients: Vec<Rc<RefCell<ClientStats>>>,
    stats: HarnessStats,
    crashes_enabled: bool,
    replica_count: usize,
    break_check: bool,
}

impl<S: StateMachine + 'static> Harness<S> {
    /// Boot `config.simulation.replicas` fresh replicas and the clients, driven by `driver`.
    pub fn new(
        seed: u64,
        config: &HarnessConfig,
        make_state_machine: Box<dyn Fn() -> S>,
        driver: Rc<RefCell<dyn ClientDriver>>,
    ) -> Self {
        let simulation = Simulation::new(seed, &config.simulation);
        let replicas = config.simulation.replicas;
        let quorum = cluster::vsr::constants::quorum_replication(replicas)
            .max(cluster::vsr::constants::quorum_view_change(replicas));
        let crash = CrashInjector::new(simulation.seeds().crash, config.crash, quorum);
        let root = root_header(SIMULATED_CLUSTER_ID, 0).checksum;
        let mut harness = Self {
            simulation,
            slots: Vec::new(),
            make_state_machine,
            crash,
            checker: StateChecker::new(root),
            clients: Vec::new(),
            stats: HarnessStats::default(),
            crashes_enabled: true,
            replica_count: replicas,
            break_check: config.break_check,
        };
        for index in 0..replicas {
            harness.slots.push(Slot {
                replica: None,
                store: MemoryStore::new(),
                incarnation: 0,
                since: 0,
                checked: 0,
                view_seen: 0,
                progress: (0, 0),
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
        let config = ReplicaConfig {
            cluster: SIMULATED_CLUSTER_ID,
            group: 0,
            replica: index as u8,
            replicas: self.replica_count as u8,
            entropy_seed: self.simulation.seeds().workload ^ (index as u64).wrapping_mul(0x9E37_79B9),
        };
        let (store, incarnation) = (self.slots[index].store.clone(), self.slots[index].incarnation);
        let replica = Replica::open(config, (self.make_state_machine)(), store, incarnation);
        let shared = Rc::new(RefCell::new(replica));
        let process = ProcessId(index as u32);
        let task = run_replica(
            self.simulation.bus(process),
            self.simulation.inbox(process),
            shared.clone(),
        );
        self.simulation.spawn(process, task);
        let slot = &mut self.slots[index];
        slot.replica = Some(shared);
        slot.checked = 0;
        slot.progress = (0, self.simulation.tick());
    }

    /// Stop injecting crashes (for the drain at the end of a run).
    pub fn disable_crashes(&mut self) {
        self.crashes_enabled = false;
    }

    /// One tick: crash decisions, the simulation step, every per-tick check.
    pub fn step(&mut self) -> Result<(), CheckFailure> {
        let tick = self.simulation.tick();
        if self.crashes_enabled {
            self.inject_crashes(tick);
        }
        self.simulation.step().map_err(|error| CheckFailure {
            check: match error {
                SimulationError::Executor(_) => "executor",
                SimulationError::LostWakeup { .. } => "lost wakeup",
            },
            detail: error.to_string(),
            tick,
        })?;
        self.check(self.simulation.tick())
    }

    fn inject_crashes(&mut self, tick: u64) {
        let lives: Vec<ReplicaLife> = self
            .slots
            .iter()
            .map(|slot| ReplicaLife {
                up: slot.replica.is_some(),
                since: slot.since,
                primary: slot
                    .replica
                    .as_ref()
                    .is_some_and(|replica| replica.borrow().is_primary()),
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

    /// The per-tick checks: views never go back; applied ops agree with the canonical
    /// chain; a Normal replica does not sit behind its commit point for long; no frame
    /// is misrouted.
    fn check(&mut self, tick: u64) -> Result<(), CheckFailure> {
        let fail = |check: &'static str, detail: String| CheckFailure { check, detail, tick };
        if self.simulation.stats().frames_unroutable > 0 {
            return Err(fail(
                "unroutable frame",
                "a frame was sent to a process outside the world".into(),
            ));
        }
        for (index, slot) in self.slots.iter_mut().enumerate() {
            let Some(replica) = &slot.replica else { continue };
            let replica = replica.borrow();
            if replica.view() < slot.view_seen {
                return Err(fail(
                    "view went back",
                    format!(
                        "replica {index} is in view {} after view {}",
                        replica.view(),
                        slot.view_seen
                    ),
                ));
            }
            slot.view_seen = replica.view();
            if replica.stats().frames_misrouted > 0 {
                return Err(fail(
                    "misrouted frame",
                    format!("replica {index} received a frame for another group or cluster"),
                ));
            }
            let commit_min = replica.commit_min();
            if commit_min < slot.checked {
                return Err(fail(
                    "commit went back",
                    format!("replica {index} applied up to {commit_min} after {}", slot.checked),
                ));
            }
            for op in slot.checked + 1..=commit_min {
                let header = replica.committed_header(op).ok_or_else(|| {
                    fail(
                        "applied op missing",
                        format!("replica {index} applied op {op} but no longer holds its header"),
                    )
                })?;
                self.checker
                    .on_commit(index, slot.incarnation, CommittedOp::from(header))
                    .map_err(|detail| fail("state checker", detail))?;
                if self.break_check && header.checksum.trailing_zeros() >= 12 {
                    return Err(fail(
                        "broken check (test-only)",
                        format!(
                            "replica {index} applied op {op}, whose checksum {:#x} ends in twelve zero bits",
                            header.checksum
                        ),
                    ));
                }
            }
            slot.checked = commit_min;
            if commit_min != slot.progress.0 || replica.status() != Status::Normal || commit_min >= replica.commit_max()
            {
                slot.progress = (commit_min, tick);
            } else if tick - slot.progress.1 > COMMIT_STUCK_TICKS_MAX {
                let (requests, outstanding) = replica.repair_state();
                return Err(fail(
                    "commit stuck",
                    format!(
                        "replica {index} has applied {commit_min} of {} committed ops for {} ticks (head {}); \
                         next: {}; below: {}; repair requests sent: {requests}, outstanding: {outstanding}",
                        replica.commit_max(),
                        tick - slot.progress.1,
                        replica.head(),
                        replica.describe_op(commit_min + 1),
                        replica.describe_op(commit_min),
                    ),
                ));
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

    /// The state checker.
    pub fn checker(&self) -> &StateChecker {
        &self.checker
    }

    /// Crash and restart counts.
    pub fn stats(&self) -> HarnessStats {
        self.stats
    }

    /// Each client's counters.
    pub fn client_stats(&self) -> Vec<ClientStats> {
        self.clients.iter().map(|stats| *stats.borrow()).collect()
    }

    /// The live replicas.
    pub fn live_replicas(&self) -> Vec<(usize, SharedReplica<S>)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(index, slot)| slot.replica.clone().map(|replica| (index, replica)))
            .collect()
    }

    /// The store of replica `index` (kept across crashes), for fault injection in tests.
    pub fn store(&self, index: usize) -> MemoryStore {
        self.slots[index].store.clone()
    }

    /// Crash replica `index` now (the crash injector, tests and scenarios).
    pub fn crash_now(&mut self, index: usize) {
        let tick = self.simulation.tick();
        self.simulation.crash(ProcessId(index as u32));
        let slot = &mut self.slots[index];
        slot.replica = None;
        slot.since = tick;
        self.stats.crashes += 1;
    }

    /// Restart replica `index` now with `incarnation` (the crash injector, tests and scenarios).
    pub fn restart_now(&mut self, index: usize, incarnation: u64) {
        let tick = self.simulation.tick();
        self.simulation.restart(ProcessId(index as u32));
        let slot = &mut self.slots[index];
        slot.incarnation = incarnation;
        slot.since = tick;
        self.boot(index);
        self.stats.restarts += 1;
    }

    /// One status line per replica, for failure reports.
    pub fn status_lines(&self) -> Vec<String> {
        self.slots
            .iter()
            .enumerate()
            .map(|(index, slot)| match &slot.replica {
                None => format!("replica {index}: CRASHED (since tick {})", slot.since),
                Some(replica) => {
                    let r = replica.borrow();
                    let (repairs, repairing) = r.repair_state();
                    format!(
                        "replica {index}: live | status={:?} view={} log_view={} commit={}..{} head={} primary={} \
                         repairs={repairs} repairing={repairing} next: {}",
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
