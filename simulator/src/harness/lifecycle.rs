//! A replica's life in a run: boot (the node opened on the disk it kept, or refused),
//! crashes and power losses (injected, at protocol moments, or asked for by a phase),
//! fail-stops on a failed disk, the supervisor's restarts, whole-cluster outages.
//!
//! The crash injector's draws happen here, once per tick, in a fixed order.

use super::catch_up::CatchUpCounters;
use super::stores::SimStores;
use crate::fault_schedule::{Fault, FaultEvent};
use crate::simulation::Ending;
use crate::storage::{CrashKind, FaultRates};
use cluster::metadata::DEFAULT_ROOT_PASSWORD;
use cluster::node::{DurableStores, METADATA_GROUP, Node, NodeConfig, NodeIdentity};
use cluster::seam::ProcessId;
use cluster::storage::superblock::cluster_id;
use cluster::vsr::Status;
use std::collections::BTreeSet;

use super::crash::{CrashAction, Moment, ReplicaLife};
use super::*;

/// Records a simulated node's tombstone log holds before it is compacted: 64, where a
/// node waits for 1,024 (`TOMBSTONE_LOG_COMPACT_RECORDS_MIN`). The uniform plane
/// deletes about 150 groups per node in 10,000 ticks, so at the node's bound no
/// campaign run would ever compact (or crash mid-compaction); at 64 a run compacts
/// every few dozen deletes.
pub const SIM_TOMBSTONE_COMPACT_RECORDS_MIN: u64 = 64;

impl Harness {
    pub(super) fn boot(&mut self, index: usize) {
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

    pub(super) fn open_node(&mut self, index: usize) {
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
                match DurableStores::open_skipping_lost_identity_check(storage.clone(), identity) {
                    Ok(stores) => SimStores::Durable(
                        stores
                            .with_storage_break(self.storage_break)
                            .with_tombstone_compact_records_min(SIM_TOMBSTONE_COMPACT_RECORDS_MIN),
                    ),
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

    /// Replica `index` could not boot from its disk. If its disk injected a fault
    /// while it booted (or its stores are in memory, which fail only when a test says
    /// so), that is the fault at work: the node fail-stops, as a
    /// production node exits when it cannot start, and the supervisor tries again.
    /// Otherwise the disk held nothing boot should refuse: the run fails.
    pub(super) fn refused_boot(&mut self, index: usize, why: &str) {
        let tick = self.simulation.tick();
        // In-memory stores fail only when a test tells them to: that is the fault.
        let memory = matches!(self.slots[index].disk, Disk::Memory(_));
        if memory || self.injected_on(index) > self.slots[index].injected_at_boot {
            tracing::info!(replica = index, why, "boot failed on an injected disk fault; fail-stop");
            self.simulation.crash(ProcessId(index as u32), Ending::Process);
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

    /// A node whose storage failed for good has stopped itself (see
    /// `cluster::node::StorageFailure`): end its process (its page cache survives, as
    /// when a real process exits) and have the supervisor start it again after
    /// [`SUPERVISOR_RESTART_TICKS`].
    pub(super) fn fail_stop_nodes(&mut self) -> Result<(), CheckFailure> {
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
    pub(super) fn supervise(&mut self, tick: u64) {
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

    /// The protocol moment replica `index` is at, over every group its node hosts (the
    /// metadata group's first): a transfer in progress, then prepares in flight as a
    /// primary, then a repair outstanding as a backup.
    pub(super) fn moment_of(&self, index: usize) -> Option<Moment> {
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

    pub(super) fn inject_crashes(&mut self, tick: u64) {
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
                    self.note_fault(FaultEvent {
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
                    self.note_fault(FaultEvent {
                        tick,
                        fault: Fault::Restart { replica, incarnation },
                    });
                    self.restart_now(replica, incarnation);
                }
            }
        }
    }

    /// Note what every group of replica `index` holds now, for the check at its next
    /// boot (see `GroupWatch::held`). A crash comes between steps, so this is what the
    /// last check saw.
    pub(super) fn remember_held(&mut self, index: usize) {
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
    pub(super) fn crash_with(&mut self, index: usize, power_loss: Option<bool>) -> bool {
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
    pub(super) fn end_process(&mut self, index: usize, power_loss: bool) {
        let tick = self.simulation.tick();
        if self.trace.is_some() {
            let kind = if power_loss { "power-loss" } else { "crash" };
            self.trace_fault(index, kind, format!("replica {index}'s process ends"));
        }
        let ending = if power_loss { Ending::PowerLoss } else { Ending::Process };
        self.simulation.crash(ProcessId(index as u32), ending);
        let mut primaries = Vec::new();
        if let Some(node) = self.slots[index].node.take() {
            self.retired = self.retired.plus(&CatchUpCounters::of_node(&node));
            primaries = led_groups(&node);
        }
        let up_after = self.slots.iter().filter(|slot| slot.node.is_some()).count();
        self.failover
            .process_ended(tick, primaries, up_after, self.replica_count / 2 + 1);
        let slot = &mut self.slots[index];
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
}

/// The groups `node` is the Normal primary of, each with its view.
fn led_groups(node: &Node<SimStores>) -> Vec<(u64, u64)> {
    let mut led = Vec::new();
    for shard in node.shards() {
        let shard = shard.borrow();
        if let Some(metadata) = shard.metadata()
            && metadata.status() == Status::Normal
            && metadata.is_primary()
        {
            led.push((METADATA_GROUP, metadata.view()));
        }
        for (&group, replica) in shard.partitions() {
            if replica.status() == Status::Normal && replica.is_primary() {
                led.push((group, replica.view()));
            }
        }
    }
    led
}
