//! What the run did to catch replicas up, summed over every replica of every group in
//! every incarnation, and the check that every checkpoint of a group at one op holds
//! the same state.
//!
//! Counters of a replica live in its `Replica` and die with a crash, so the harness
//! adds a node's counters to the retired total just before it crashes it.
//!
//! The checkpoint check: whenever a replica's applied head is its checkpoint (it just
//! took one, installed one from a peer, or booted from one), the digest of its state
//! machine is compared with every other digest seen for that group at that op; so is
//! every checkpoint a replica encodes (to take it, or to ship it in a state transfer),
//! with the digests it encoded (`Replica::last_encoded_checkpoint`). A transferred
//! state that differs from what its peer applied fails the run there.

use std::collections::BTreeMap;

use cluster::node::Node;
use cluster::vsr::{Replica, ReplicaStats, ReplicaStore, StateMachine};

use super::stores::SimStores;

/// Catch-up counters (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CatchUpCounters {
    /// Repair requests sent.
    pub repairs: u64,
    /// Repair sessions started (a place in the shard's catch-up budget each).
    pub repair_sessions: u64,
    /// Repairs put off to the next tick by the shard's budget.
    pub repair_sessions_deferred: u64,
    /// RangeEvicted answers sent.
    pub range_evicted: u64,
    /// Checkpoints made durable (taken or installed).
    pub checkpoints: u64,
    /// Checkpoint writes refused by the disk.
    pub checkpoint_failures: u64,
    /// Ops evicted from journals.
    pub evicted: u64,
    /// State transfers started by receivers.
    pub transfers_started: u64,
    /// State transfers installed.
    pub transfers_installed: u64,
    /// State transfers abandoned.
    pub transfers_abandoned: u64,
    /// Transfers that had to switch to a newer checkpoint mid-way.
    pub transfers_restarted: u64,
    /// Transfers started before the previous install connected.
    pub transfers_stale: u64,
    /// Checkpoint chunks served.
    pub chunks_served: u64,
    /// Prepares dropped for want of journal room.
    pub dropped_journal_full: u64,
    /// Records found damaged at boot (held but unknown, repaired from peers).
    pub damaged_at_boot: u64,
    /// Incomplete logs (lost or damaged records) replaced by a view's log.
    pub incomplete_logs_replaced: u64,
    /// Of those, logs that booted with damaged records.
    pub damaged_logs_replaced: u64,
    /// Replicas that stopped on a storage failure.
    pub storage_failures: u64,
}

impl CatchUpCounters {
    fn add(&mut self, stats: &ReplicaStats) {
        self.repairs += stats.repair_requests;
        self.repair_sessions += stats.repair_sessions;
        self.repair_sessions_deferred += stats.repair_sessions_deferred;
        self.range_evicted += stats.range_evicted_sent;
        self.checkpoints += stats.checkpoints_written;
        self.checkpoint_failures += stats.checkpoint_write_failures;
        self.evicted += stats.ops_evicted;
        self.transfers_started += stats.transfers_started;
        self.transfers_installed += stats.transfers_installed;
        self.transfers_abandoned += stats.transfers_abandoned;
        self.transfers_restarted += stats.transfers_restarted;
        self.transfers_stale += stats.transfers_stale;
        self.chunks_served += stats.transfer_chunks_served;
        self.dropped_journal_full += stats.prepares_dropped_journal_full;
        self.damaged_at_boot += stats.damaged_records_at_boot;
        self.incomplete_logs_replaced += stats.incomplete_logs_replaced;
        self.damaged_logs_replaced += stats.damaged_logs_replaced;
        self.storage_failures += stats.storage_failures;
    }

    /// The sum of two counters.
    pub fn plus(mut self, other: &CatchUpCounters) -> CatchUpCounters {
        self.repairs += other.repairs;
        self.repair_sessions += other.repair_sessions;
        self.repair_sessions_deferred += other.repair_sessions_deferred;
        self.range_evicted += other.range_evicted;
        self.checkpoints += other.checkpoints;
        self.checkpoint_failures += other.checkpoint_failures;
        self.evicted += other.evicted;
        self.transfers_started += other.transfers_started;
        self.transfers_installed += other.transfers_installed;
        self.transfers_abandoned += other.transfers_abandoned;
        self.transfers_restarted += other.transfers_restarted;
        self.transfers_stale += other.transfers_stale;
        self.chunks_served += other.chunks_served;
        self.dropped_journal_full += other.dropped_journal_full;
        self.damaged_at_boot += other.damaged_at_boot;
        self.incomplete_logs_replaced += other.incomplete_logs_replaced;
        self.damaged_logs_replaced += other.damaged_logs_replaced;
        self.storage_failures += other.storage_failures;
        self
    }

    /// The counters of every group a node hosts now.
    pub fn of_node(node: &Node<SimStores>) -> CatchUpCounters {
        let mut counters = CatchUpCounters::default();
        for shard in node.shards() {
            let shard = shard.borrow();
            if let Some(metadata) = shard.metadata() {
                counters.add(&metadata.stats());
            }
            for replica in shard.partitions().values() {
                counters.add(&replica.stats());
            }
        }
        counters
    }
}

impl std::fmt::Display for CatchUpCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "catch-up: repairs={} repair_sessions={} deferred={} range_evicted={} checkpoints={} checkpoint_failures={} evicted={} \
             transfers_started={} transfers_installed={} transfers_abandoned={} transfers_restarted={} \
             transfers_stale={} chunks_served={} dropped_journal_full={}",
            self.repairs,
            self.repair_sessions,
            self.repair_sessions_deferred,
            self.range_evicted,
            self.checkpoints,
            self.checkpoint_failures,
            self.evicted,
            self.transfers_started,
            self.transfers_installed,
            self.transfers_abandoned,
            self.transfers_restarted,
            self.transfers_stale,
            self.chunks_served,
            self.dropped_journal_full,
        )
    }
}

/// The state digest and the client table digest of each group at each checkpoint op
/// seen, and the largest journal any replica held (entries, frame bytes), sampled every
/// tick.
#[derive(Debug, Default)]
pub struct CheckpointChecker {
    digests: BTreeMap<(u64, u64), (CheckpointDigests, usize)>,
    compared: u64,
    journal_peak: (usize, u64),
}

/// What the checkpoint check compares between replicas at the same checkpoint op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CheckpointDigests {
    /// The state machine's.
    state: u128,
    /// The client table's replicated part (`Replica::client_table_digest`).
    client_table: u128,
}

impl CheckpointChecker {
    /// The most entries and frame bytes one replica's journal held at a tick's end.
    pub fn journal_peak(&self) -> (usize, u64) {
        self.journal_peak
    }

    /// Forget `group`'s checkpoint digests above `op` (see
    /// `Harness::forget_commits_above`: those ops take new values).
    pub fn forget_above(&mut self, group: u64, op: u64) {
        self.digests
            .retain(|&(digest_group, at), _| digest_group != group || at <= op);
    }

    /// Checkpoint states compared with one seen before.
    pub fn compared(&self) -> u64 {
        self.compared
    }

    /// Check `replica` (index `index`) of `group`: the checkpoint it last encoded (to
    /// take it, or to ship it to a peer), if `encoded_seen` (updated) says that op was
    /// not compared yet; then its state, if its applied head is its checkpoint and
    /// `last_seen` (updated) says it was not checked at that op yet.
    ///
    /// Comparing what a replica encoded matters because a sampled check sees only the
    /// checkpoints a replica still sits on at a tick's end: a replica that takes one, or
    /// serves a transfer, and applies further ops in the same tick would otherwise leave
    /// nothing for a receiver's installed state to be compared with.
    ///
    /// Called for every group on every replica at every tick, so the common case (no new
    /// checkpoint applied) is inlined into the walk and the comparison is not.
    #[inline]
    pub fn check<S: StateMachine, T: ReplicaStore>(
        &mut self,
        index: usize,
        group: u64,
        replica: &Replica<S, T>,
        last_seen: &mut u64,
        encoded_seen: &mut u64,
    ) -> Result<(), String> {
        let (entries, bytes) = replica.journal_size();
        self.journal_peak = (self.journal_peak.0.max(entries), self.journal_peak.1.max(bytes));
        if let Some(encoded) = replica.last_encoded_checkpoint()
            && encoded.op != *encoded_seen
        {
            *encoded_seen = encoded.op;
            let digests = CheckpointDigests {
                state: encoded.state,
                client_table: encoded.client_table,
            };
            self.compare(index, group, encoded.op, digests, "encoded a checkpoint holding")?;
        }
        let op = replica.checkpoint_op();
        if op == 0 || op == *last_seen || replica.commit_min() != op {
            return Ok(());
        }
        *last_seen = op;
        if let Some((client, request, why)) = replica.unverifiable_client_reply() {
            return Err(format!(
                "group {group:#x} at checkpoint op {op}: replica {index} holds a reply for client {client:#x} \
                 (request {request}) that is not a frame that verifies ({why}): it would answer that \
                 client's resend with bytes the client must drop"
            ));
        }
        let digests = CheckpointDigests {
            state: replica.state_machine().digest(),
            client_table: replica.client_table_digest(),
        };
        self.compare(index, group, op, digests, "holds")
    }

    /// Compare `digests`, what replica `index` held at checkpoint `op` of `group`, with
    /// the first replica's seen there (or record them, if it is the first). `how` says
    /// where they came from, for the failure's text.
    #[inline(never)]
    fn compare(
        &mut self,
        index: usize,
        group: u64,
        op: u64,
        digests: CheckpointDigests,
        how: &str,
    ) -> Result<(), String> {
        match self.digests.get(&(group, op)) {
            None => {
                self.digests.insert((group, op), (digests, index));
                Ok(())
            }
            Some(&(seen, _)) if seen == digests => {
                self.compared += 1;
                Ok(())
            }
            Some(&(seen, by)) if seen.state != digests.state => Err(format!(
                "group {group:#x} at checkpoint op {op}: replica {index} {how} state {:#x}, \
                 replica {by} held {:#x}",
                digests.state, seen.state
            )),
            Some(&(seen, by)) => Err(format!(
                "group {group:#x} at checkpoint op {op}: replica {index} {how} client table {:#x} \
                 (deduplication entries and replies), replica {by} held {:#x}; their states agree",
                digests.client_table, seen.client_table
            )),
        }
    }
}
