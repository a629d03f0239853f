//! What the run's phases and checks read of the harness: the simulation, the state
//! checkers, counters, the live replicas and nodes, each replica's status line.
//!
//! Reads only: nothing here draws from a seed or steps the simulation.

use super::catch_up::CatchUpCounters;
use super::client::ClientStats;
use super::state_checker::StateChecker;
use super::stores::SimStores;
use super::*;
use crate::simulation::Simulation;
use crate::storage::SimStorage;
use cluster::node::{METADATA_GROUP, Node, owner_shard};
use cluster::vsr::{MemoryStore, Status};
use std::cell::Ref;
use std::collections::BTreeMap;

impl Harness {
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

    /// Every group's state checker (deleted partitions' included until every replica
    /// tombstoned them: see `harness::retire`).
    pub fn checkers(&self) -> &BTreeMap<u64, StateChecker> {
        &self.checkers
    }

    /// Groups checked: with a checker now, or retired.
    pub fn groups_checked(&self) -> usize {
        self.checkers.len() + self.retired_checkers.groups.len()
    }

    /// Committed ops summed over every group's canonical chain (retired ones too).
    pub fn commits_total(&self) -> u64 {
        self.checkers.values().map(StateChecker::commits).sum::<u64>() + self.retired_checkers.commits
    }

    /// Ops checked against a canonical chain, summed over groups (retired ones too).
    pub fn ops_compared_total(&self) -> u64 {
        self.checkers.values().map(StateChecker::ops_compared).sum::<u64>() + self.retired_checkers.ops_compared
    }

    /// Ops of partition groups checked against their chains (retired ones too).
    pub fn partition_ops_compared(&self) -> u64 {
        self.ops_compared_total() - self.checker().ops_compared()
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

    /// Primary losses, their failover times, and spurious view changes so far.
    pub fn failover(&self) -> super::failover::FailoverFigures {
        self.failover.figures()
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
}
