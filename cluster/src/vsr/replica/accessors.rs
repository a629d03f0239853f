//! What a replica shows of itself (status, view, commit points, journal and
//! checkpoint figures, counters: the reads its shard, the harness's checks and the
//! tests make), and the few calls its shard makes outside the protocol (a flush at
//! shutdown, the shard's shared catch-up budget).

use super::*;

impl<S: StateMachine, T: ReplicaStore> Replica<S, T> {
    /// Current status.
    pub fn status(&self) -> Status {
        self.status
    }
    /// Current view.
    pub fn view(&self) -> u64 {
        self.view
    }
    /// The last view this replica saw start.
    pub fn log_view(&self) -> u64 {
        self.log_view
    }
    /// Highest op applied.
    pub fn commit_min(&self) -> u64 {
        self.commit_min
    }
    /// Highest op known committed.
    pub fn commit_max(&self) -> u64 {
        self.commit_max
    }
    /// A checksum of the client table's replicated part (see `ClientTable::digest`):
    /// equal on replicas that applied the same ops.
    pub fn client_table_digest(&self) -> u128 {
        self.clients.digest()
    }

    /// The first client whose cached reply in this replica's client table is not a frame
    /// that verifies, with its newest request and why
    /// (`ClientTable::first_unverifiable_reply`): for a checker, since the table's digest
    /// leaves reply headers out.
    pub fn unverifiable_client_reply(&self) -> Option<(u128, u64, crate::wire::FrameError)> {
        self.clients.first_unverifiable_reply()
    }

    /// What the last checkpoint this replica encoded held: the op, the state machine's
    /// digest and the client table's, taken as it encoded them (to take a checkpoint,
    /// or to ship one to a peer in a state transfer, at its applied head either way).
    /// Every replica that applies or installs that op must hold the same two digests;
    /// a checker that looks after every input sees every encoding, including those of
    /// states the replica applied past before its next check.
    pub fn last_encoded_checkpoint(&self) -> Option<CheckpointDigests> {
        self.last_encoded_checkpoint.get()
    }
    /// Highest op in the journal.
    pub fn head(&self) -> u64 {
        self.journal.head()
    }
    /// This replica's index.
    pub fn index(&self) -> u8 {
        self.config.replica
    }
    /// The highest op whose body this replica's journal holds (its floor when it holds
    /// none above it): the most it may have acknowledged, since a body is journaled only
    /// once its store write returned. A restart that offers its log as complete in the
    /// same log view must hold this much again; the simulator checks it at every boot.
    pub fn held_head(&self) -> u64 {
        let floor = self.journal.floor();
        (floor + 1..=self.journal.head())
            .rev()
            .find(|&op| self.journal.get(op).is_some_and(Entry::has_body))
            .unwrap_or(floor)
    }
    /// Whether this replica is the primary of its current view.
    pub fn is_primary(&self) -> bool {
        self.primary_of(self.view) == self.config.replica
    }
    /// The primary of `view`.
    pub fn primary_of(&self, view: u64) -> u8 {
        // The remainder is < replicas <= REPLICAS_MAX, so it fits u8.
        (view % u64::from(self.config.replicas)) as u8
    }
    /// The state machine.
    pub fn state_machine(&self) -> &S {
        &self.state_machine
    }
    /// Counters.
    pub fn stats(&self) -> ReplicaStats {
        self.stats
    }
    /// How many inputs that may have changed this replica it has taken: every frame, and
    /// every tick on which a timeout fired. A tick on which none fired only counts its
    /// timers down (see [`Replica::tick`]), so between two equal readings the replica's
    /// view, status, log, commit points, checkpoint and transfer are what they were. The
    /// simulator re-checks only the groups whose count moved (its full check, at an
    /// interval, verifies that claim).
    pub fn activity(&self) -> u64 {
        self.activity
    }
    /// The header of an applied op (for the state checker).
    pub fn committed_header(&self, op: u64) -> Option<Header> {
        (op <= self.commit_min)
            .then(|| self.journal.get(op).map(|entry| entry.header()))
            .flatten()
    }
    /// A one-line description of the journal slot `op` (for failure reports).
    pub fn describe_op(&self, op: u64) -> String {
        match self.journal.get(op) {
            None => format!("op {op}: missing"),
            Some(entry) => format!(
                "op {op}: view={} checksum={:#x} parent={:#x} trusted={} body={}",
                entry.header().view,
                entry.header().checksum,
                entry.header().parent,
                entry.trusted,
                entry.has_body()
            ),
        }
    }

    /// A clean shutdown: make everything this replica journaled durable
    /// ([`ReplicaStore::flush_for_shutdown`]), so a restart of every replica loses
    /// nothing it acknowledged. The replica must take no more input afterwards.
    pub fn flush_for_shutdown(&mut self) -> Result<(), StoreError> {
        self.store.flush_for_shutdown()
    }

    /// Why this replica stopped, if its store failed for good: a write or sync of its
    /// log or superblock was refused, so nothing it holds may be vouched for any more.
    /// A stopped replica sends nothing (a primary stops heartbeating, so the others
    /// elect another within their liveness window), reads nothing and ticks nothing;
    /// its node fail-stops and boots again from the disk (see `node::Node`).
    pub fn storage_failure(&self) -> Option<&'static str> {
        self.storage_failure
    }

    /// Whether this replica holds its group's log in full: Normal in its view, not
    /// booted with a possibly incomplete log that it has not replaced yet, and holding
    /// a verified body for every op it knows of. A replica that is not caught up may be
    /// the only one missing ops its peers alone hold; the simulator's fault budget
    /// fails another replica only while enough replicas are caught up.
    pub fn caught_up(&self) -> bool {
        self.storage_failure.is_none()
            && self.status == Status::Normal
            && !self.log_incomplete
            && (self.commit_min + 1..=self.journal.head()).all(|op| self.journal.ready(op))
    }

    /// Whether the log this replica booted with may lack ops it acknowledged, and it
    /// has not yet installed a view's log in its place.
    pub fn log_incomplete(&self) -> bool {
        self.log_incomplete
    }

    /// Replicas in the group.
    pub fn replica_count(&self) -> usize {
        usize::from(self.config.replicas)
    }

    /// The op of the newest durable checkpoint (0: none).
    pub fn checkpoint_op(&self) -> u64 {
        self.checkpoint_op
    }

    /// The lowest op the journal holds (the root or a checkpoint): headers of applied
    /// ops below it are gone.
    pub fn journal_floor(&self) -> u64 {
        self.journal.floor()
    }

    /// Entries and frame bytes the journal holds (for memory reports).
    pub fn journal_size(&self) -> (usize, u64) {
        (self.journal.len(), self.journal.frame_bytes())
    }

    /// Share the catch-up allowance of the shard hosting this replica.
    pub fn set_catch_up_budget(&mut self, budget: Rc<CatchUpBudget>) {
        self.budget = Some(budget);
    }

    /// Whether a repair session holds a place in the budget.
    pub fn repair_session_active(&self) -> bool {
        self.repair_session
    }

    /// State transfers this replica is serving.
    pub fn transfers_serving(&self) -> usize {
        self.served.len()
    }

    /// Prepares this primary has sent whose ops have not committed yet (0 on a backup).
    pub fn prepares_in_flight(&self) -> usize {
        self.pipeline.len()
    }

    /// Repair requests sent and whether one is outstanding (for failure reports).
    pub fn repair_state(&self) -> (u64, bool) {
        (self.stats.repair_requests, self.repair_retry.ticking())
    }

    /// Take everything queued to send.
    pub fn drain_outbox(&mut self) -> std::vec::Drain<'_, Outgoing> {
        self.outbox.drain(..)
    }

    /// Move every pending outgoing message to the end of `out`, in order (what
    /// `out.extend(self.drain_outbox())` does, without an iterator per call: a shard
    /// asks every replica every tick, and the outbox is nearly always empty).
    #[inline]
    pub fn move_outbox_into(&mut self, out: &mut Vec<Outgoing>) {
        if !self.outbox.is_empty() {
            out.append(&mut self.outbox);
        }
    }

    pub(crate) fn quorum_replication(&self) -> usize {
        quorum_replication(usize::from(self.config.replicas))
    }

    pub(crate) fn quorum_view_change(&self) -> usize {
        quorum_view_change(usize::from(self.config.replicas))
    }
}
