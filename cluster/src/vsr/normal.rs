//! Normal operation: a client request becomes a prepare, travels the chain, gathers a
//! replication quorum of PrepareOks, commits, is applied and answered. Also the
//! primary's commit heartbeat and prepare retransmits, and a backup's side of each.

use std::rc::Rc;

use super::StateMachine;
use super::client_table::Dedup;
use super::constants::*;
use super::journal::Entry;
use super::replica::{Outgoing, PipelineEntry, Replica, Status, bit, mix};
use super::store::ReplicaStore;
use super::timeout::Timeout;
use crate::seam::ProcessId;
use crate::wire::{self, Command, Header};

/// Why a request was answered with `Refused` (the body's one byte): what the client
/// may conclude about its request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientError {
    /// Never taken (not the primary, not in a started view, queue full, or a query
    /// before the primary caught up): safe to send again anywhere.
    TransientNotAccepted = 1,
    /// Taken and prepared, but the primary lost its view before it committed: the
    /// outcome is unknown (the next view may still commit it). Resending the same
    /// request is safe (the client table or watermark answers it if it did commit).
    TransientNotCommitted = 2,
    /// The node that refused does not know the sender as this client id (it never bound
    /// the client's session, restarted since, or the client logged in again): send
    /// `BindSession` to that node, then the same request again. Never taken.
    Unbound = 3,
    /// The session's user lacks the permission the request needs (decided by the node
    /// from its applied metadata, before anything was prepared). Final.
    PermissionDenied = 4,
    /// The session's user was deleted or deactivated: log in again. Never taken.
    Unauthenticated = 5,
    /// The request's operation is unknown to the group, or its body does not decode
    /// as that operation's: a client of another version, or a broken one. Never taken;
    /// sending it again gets the same answer.
    Malformed = 6,
    /// Too many failed logins lately from the client's address or for the user it
    /// named (see `runtime::tcp::login_throttle`): the login was not tried. Never
    /// taken; try again after a pause.
    Throttled = 7,
}

impl ClientError {
    /// The body of a `Refused` frame.
    pub fn encode(self) -> [u8; 1] {
        [self as u8]
    }

    /// Parse a `Refused` body; `None` for anything else.
    pub fn decode(body: &[u8]) -> Option<Self> {
        match body {
            [1] => Some(ClientError::TransientNotAccepted),
            [2] => Some(ClientError::TransientNotCommitted),
            [3] => Some(ClientError::Unbound),
            [4] => Some(ClientError::PermissionDenied),
            [5] => Some(ClientError::Unauthenticated),
            [6] => Some(ClientError::Malformed),
            [7] => Some(ClientError::Throttled),
            _ => None,
        }
    }
}

/// A `Refused` frame answering `request`: `sender` carries who refuses (cluster, group,
/// replica, view), `hint` the replica the client should try next.
pub fn seal_refusal(mut sender: Header, request: &Header, hint: u8, error: ClientError) -> Vec<u8> {
    debug_assert_eq!(sender.command, Command::Refused);
    sender.client = request.client;
    sender.request = request.request;
    sender.operation = request.operation;
    sender.flags = hint;
    wire::seal_header(sender, &error.encode())
}

impl<S: StateMachine, T: ReplicaStore> Replica<S, T> {
    pub(crate) fn refuse(&mut self, to: ProcessId, request: &Header) {
        self.refuse_with(to, request, ClientError::TransientNotAccepted);
    }

    pub(crate) fn refuse_with(&mut self, to: ProcessId, request: &Header, error: ClientError) {
        self.stats.requests_refused += 1;
        // Hint: who this replica believes leads.
        let frame = seal_refusal(
            self.header(Command::Refused),
            request,
            self.primary_of(self.view),
            error,
        );
        self.outbox.push(Outgoing { to, frame });
    }

    /// A primary giving up its view: tell every client it holds a request of what
    /// became of it. Queued requests were never prepared (not accepted); prepared ones
    /// above the commit point may or may not commit in the next view (not committed).
    pub(crate) fn abandon_client_requests(&mut self) {
        let queued: Vec<(ProcessId, Header)> = self
            .request_queue
            .drain(..)
            .map(|(from, header, _)| (from, header))
            .collect();
        for (from, header) in queued {
            self.refuse_with(from, &header, ClientError::TransientNotAccepted);
        }
        let prepared: Vec<Header> = self
            .pipeline
            .iter()
            .filter_map(|entry| self.journal.get(entry.op).map(|journaled| journaled.header()))
            .filter(|header| header.client != 0)
            .collect();
        for header in prepared {
            let address = self
                .pending_addresses
                .get(&header.client)
                .copied()
                .or_else(|| self.clients.address(header.client));
            if let Some(address) = address {
                self.refuse_with(address, &header, ClientError::TransientNotCommitted);
            }
        }
    }

    pub(crate) fn on_request(&mut self, from: ProcessId, header: Header, body: &[u8]) {
        let ready = self.status == Status::Normal && self.is_primary() && self.durable.log_view == self.view;
        if !ready {
            self.refuse(from, &header);
            return;
        }
        if self.state_machine.is_query(header.operation) {
            self.stats.queries_taken_as_primary += 1;
            self.on_query(from, &header, body);
            return;
        }
        self.stats.updates_taken_as_primary += 1;
        if !self.state_machine.validate_request(header.operation, body) {
            // Answered, not dropped: a silent drop left the client waiting out its
            // whole budget to report an unknown outcome for a request never taken.
            self.stats.requests_malformed += 1;
            self.refuse_with(from, &header, ClientError::Malformed);
            return;
        }
        match self.clients.check(header.client, header.request) {
            Dedup::Stale => return,
            Dedup::Duplicate(reply) => {
                let reply = reply.to_vec();
                self.clients.set_address(header.client, from);
                self.outbox.push(Outgoing { to: from, frame: reply });
                return;
            }
            Dedup::New => {}
        }
        if let Some(reply_body) = self.state_machine.refuse_before_prepare(header.operation, body) {
            // Refused whatever the state: no op, nothing in the client table (a resend
            // is refused again, identically).
            let mut reply = self.header(Command::Reply);
            reply.client = header.client;
            reply.request = header.request;
            reply.operation = header.operation;
            reply.commit = self.commit_max;
            self.send(from, reply, &reply_body);
            self.stats.requests_refused_before_prepare += 1;
            return;
        }
        // The client table knows only applied requests. Every op above the applied
        // head (prepared in the pipeline, inherited from a view change, or committed
        // and not yet applied) and every queued request may hold this client's newer
        // ones: the same request is in flight, an older one is stale. An older request
        // prepared now would commit after the newer one (a packet the network replayed
        // or delayed after the client moved on: `--seed 9770026 --plane contended
        // --faults split`), which the client table must never see: a later resend of
        // the newer request would then execute it twice.
        let newest_unapplied = (self.commit_min + 1..=self.journal.head())
            .filter_map(|op| self.journal.get(op))
            .map(Entry::header)
            .filter(|logged| logged.client == header.client)
            .map(|logged| logged.request)
            .chain(
                self.request_queue
                    .iter()
                    .filter(|(_, queued, _)| queued.client == header.client)
                    .map(|(_, queued, _)| queued.request),
            )
            .max();
        match newest_unapplied {
            Some(newest) if newest > header.request => {
                crate::cover!(RequestStaleBehindUnapplied);
                return;
            }
            Some(newest) if newest == header.request => {
                // In flight: answered when it commits, at the client's newest address.
                self.pending_addresses.insert(header.client, from);
                return;
            }
            _ => {}
        }
        self.pending_addresses.insert(header.client, from);
        if self.can_prepare_next() {
            self.prepare(header, body);
        } else if self.request_queue.len() < self.config.buggify.request_queue_max {
            crate::cover!(RequestQueuedBehindPipeline);
            self.request_queue.push_back((from, header, body.to_vec()));
        } else {
            crate::cover!(RequestRefusedQueueFull);
            self.refuse(from, &header);
        }
    }

    /// Primary: assign the next op to a request and replicate it.
    pub(crate) fn prepare(&mut self, request: Header, body: &[u8]) {
        assert!(self.status == Status::Normal && self.is_primary());
        let head = self.journal.head();
        let parent = self.journal.checksum(head).expect("the primary holds its head");
        assert!(
            self.journal.ready(head),
            "replica {} (view {}, commit {}..{}) prepares on head {head} that is not ready: {:?}",
            self.config.replica,
            self.view,
            self.commit_min,
            self.commit_max,
            self.journal
                .get(head)
                .map(|entry| (entry.trusted, entry.has_body(), entry.header().view))
        );
        let op = head + 1;
        let mut header = self.header(Command::Prepare);
        header.op = op;
        header.commit = self.commit_max;
        header.parent = parent;
        header.client = request.client;
        header.request = request.request;
        header.operation = request.operation;
        // The session the client sent it in: the state machine authorises against that
        // session, never against whatever session the client holds when it applies.
        header.context = request.context;
        self.last_timestamp = self.realtime_micros.max(self.last_timestamp + 1);
        header.timestamp = self.last_timestamp;
        header.nonce = mix(self.config.entropy_seed ^ mix(op ^ (self.view << 32)));
        if self.store.persisted() {
            header.flags |= wire::PREPARE_FLAG_PERSISTED;
        }
        let frame = wire::seal_header(header, body);
        let (sealed, _) = wire::open(&frame).expect("a frame we just sealed opens");
        if !self.journal_prepare(sealed, &frame) {
            // Its own disk refused: the op does not exist; the client's retry tries again.
            return;
        }
        let mut retransmit = Timeout::new("prepare_retransmit", PREPARE_RETRANSMIT_BASE_TICKS);
        retransmit.start();
        self.pipeline.push_back(PipelineEntry {
            op,
            checksum: sealed.checksum,
            oks: bit(self.config.replica),
            retransmit,
            attempts: 0,
        });
        // Chain replication: the primary sends to the next replica, which forwards.
        if let Some(next) = self.chain_next() {
            self.outbox.push(Outgoing {
                to: ProcessId(u32::from(next)),
                frame,
            });
        }
        self.commit_pipeline();
    }

    /// Primary: whether the next op may be prepared now (room in the pipeline and in
    /// the journal above the checkpoint).
    fn can_prepare_next(&self) -> bool {
        self.pipeline.len() < self.config.buggify.pipeline_prepares_max
            && self.journal_has_room_for_new_op(self.journal.head() + 1)
    }

    /// The next replica in this view's prepare chain after this one, if any.
    pub(crate) fn chain_next(&self) -> Option<u8> {
        let next = (self.config.replica + 1) % self.config.replicas;
        (next != self.primary_of(self.view)).then_some(next)
    }

    /// Journal a prepare durably and in memory (trusted: it is the current view's).
    /// False if the store failed (nothing journaled).
    pub(crate) fn journal_prepare(&mut self, header: Header, frame: &[u8]) -> bool {
        self.chain_dirty = true;
        // A failed write leaves the op out of the journal, which withholds the PrepareOk.
        // Copied once, straight into the journal's buffer.
        let frame: Rc<[u8]> = Rc::from(frame);
        if !self.store_prepare(header.op, &frame) {
            return false;
        }
        self.journal.put(Entry::new(header, Some(frame), true));
        true
    }

    pub(crate) fn on_prepare(&mut self, header: Header, frame: &[u8]) {
        if header.view > self.view {
            // A view started that this replica missed: ask its primary for it.
            if self.status != Status::Recovering {
                self.ask_for_start_view(self.primary_of(header.view));
            }
            return;
        }
        if self.status != Status::Normal || self.is_primary() {
            return;
        }
        if header.flags & !wire::PREPARE_FLAG_PERSISTED != 0 {
            // No primary sets other bits: nothing of this frame is acted on.
            self.stats.frames_rejected += 1;
            return;
        }
        if header.op <= self.journal.floor() && header.op > 0 {
            self.acknowledge_checkpointed_op(&header);
            return;
        }
        let held = self
            .journal
            .get(header.op)
            .map(|entry| (entry.header().checksum, entry.has_body()));
        match held {
            // A retransmit (possibly of an op prepared in an older view and kept by the
            // view change): fill the body if only the header was known, and ack again,
            // since the first PrepareOk may have been lost.
            Some((checksum, has_frame)) if checksum == header.checksum => {
                // The floor keeps only its header: its state is the checkpoint's.
                if !has_frame && header.op > self.journal.floor() {
                    self.journal_prepare_keeping_trust(header, frame);
                }
                self.send_prepare_ok(header.op);
                return;
            }
            _ => {}
        }
        if header.op <= self.commit_min {
            // Applied ops are final; a different prepare at one is stale.
            return;
        }
        if header.op > self.journal.head() && !self.journal_has_room_for_new_op(header.op) {
            // Beyond what the journal may hold above this replica's checkpoint: not
            // journaled, not acknowledged; repair or a state transfer brings it later.
            self.stats.prepares_dropped_journal_full += 1;
            crate::cover!(PrepareDroppedJournalFull);
            return;
        }
        if header.view < self.view {
            // An older view's prepare this replica does not hold: canonical only if the
            // trusted op above names it as its parent.
            let named = self
                .journal
                .get(header.op + 1)
                .is_some_and(|above| above.trusted && above.header().parent == header.checksum);
            if named && self.journal_prepare(header, frame) {
                crate::cover!(OlderViewPrepareKept);
                self.send_prepare_ok(header.op);
            }
            return;
        }
        // The current primary's prepare: canonical for this view, superseding anything
        // an older view left at this op.
        if let Some(existing) = self.journal.get(header.op) {
            assert!(
                existing.header().view < header.view || !existing.trusted,
                "two prepares for op {} in view {}",
                header.op,
                header.view
            );
        }
        if !self.journal_prepare(header, frame) {
            return;
        }
        if let Some(next) = self.chain_next() {
            self.outbox.push(Outgoing {
                to: ProcessId(u32::from(next)),
                frame: frame.to_vec(),
            });
        }
        self.commit_max = self.commit_max.max(header.commit);
        self.send_prepare_ok(header.op);
    }

    /// Store a prepare's body under a header this replica already holds, keeping the
    /// entry's trust as it was.
    pub(crate) fn journal_prepare_keeping_trust(&mut self, header: Header, frame: &[u8]) {
        let trusted = self.journal.get(header.op).is_some_and(|entry| entry.trusted);
        let frame: Rc<[u8]> = Rc::from(frame);
        if !self.store_prepare(header.op, &frame) {
            return;
        }
        self.journal.put(Entry::new(header, Some(frame), trusted));
        self.chain_dirty = true;
    }

    /// Backup: acknowledge `op` to the primary, if this replica holds it in the current
    /// view and has made the view durable.
    /// Backup: acknowledge a prepare for an op at or below this replica's journal floor,
    /// which it holds only inside its checkpoint. Such an op was applied, so it was
    /// committed, and a committed op sits at the same position in the log of every
    /// later view: the current primary's prepare at that op is the one the checkpoint
    /// holds, and the primary counts the acknowledgement only against its own checksum.
    /// A primary that started its view with a lower commit point needs it to commit the
    /// op again: in a 2-replica group one log is a view-change quorum, so a primary that
    /// had committed less than its backup started view 4 at commit 145 and waited
    /// forever for acknowledgements of ops 146-147 from a backup whose checkpoint held
    /// them (`--seed 1000001 --plane lifecycle --faults swarm --journal-slots 80`, after
    /// a whole-cluster power outage). Where the journal can still check the checksum
    /// (the floor's header, and its parent), a different prepare is not acknowledged.
    fn acknowledge_checkpointed_op(&mut self, header: &Header) {
        let floor = self.journal.floor();
        debug_assert!(header.op <= floor && floor <= self.commit_min);
        let known = if header.op == floor {
            self.journal.checksum(floor)
        } else if header.op + 1 == floor {
            self.journal.get(floor).map(|entry| entry.header().parent)
        } else {
            None
        };
        if known.is_some_and(|checksum| checksum != header.checksum) {
            return; // A stale prepare from an older view: not the op the checkpoint holds.
        }
        crate::cover!(CheckpointedOpAcknowledged);
        self.send_prepare_ok_checksum(header.op, header.checksum);
    }

    pub(crate) fn send_prepare_ok(&mut self, op: u64) {
        if self.status != Status::Normal || self.is_primary() || self.durable.log_view != self.view {
            return;
        }
        if self.transfer.is_some() {
            // Its log has a hole where the checkpoint goes: it takes part in view
            // changes, but vouches for no op until the state is installed.
            return;
        }
        // Ops at or below this replica's commit point are acknowledged too: a new
        // primary may have started its view with a lower commit point and needs the
        // acknowledgements to commit them again.
        if !self.journal.ready(op) {
            return;
        }
        let Some(checksum) = self.journal.checksum(op) else {
            return;
        };
        self.send_prepare_ok_checksum(op, checksum);
    }

    /// Send the PrepareOk of `op` with `checksum` to the current primary, if this
    /// replica may vouch for ops now (Normal backup, its log view durable, no state
    /// transfer under way).
    fn send_prepare_ok_checksum(&mut self, op: u64, checksum: u128) {
        if self.status != Status::Normal || self.is_primary() || self.durable.log_view != self.view {
            return;
        }
        if self.transfer.is_some() {
            return;
        }
        self.stats.prepare_oks_considered += 1;
        if self.config.buggify.skips_prepare_ok(self.stats.prepare_oks_considered) {
            return;
        }
        let mut header = self.header(Command::PrepareOk);
        header.op = op;
        header.context = checksum;
        let primary = self.primary_of(self.view);
        self.send_to_replica(primary, header, &[]);
    }

    pub(crate) fn on_prepare_ok(&mut self, sender: u8, header: &Header) {
        if self.status != Status::Normal || !self.is_primary() || header.view != self.view {
            return;
        }
        if let Some(entry) = self.pipeline.iter_mut().find(|entry| entry.op == header.op)
            && entry.checksum == header.context
        {
            entry.oks |= bit(sender);
        }
        self.commit_pipeline();
    }

    /// Primary: commit every pipeline head that has its quorum, in order.
    pub(crate) fn commit_pipeline(&mut self) {
        let quorum = self.quorum_replication();
        while let Some(entry) = self.pipeline.front() {
            if (entry.oks.count_ones() as usize) < quorum {
                break;
            }
            assert_eq!(entry.op, self.commit_max + 1, "the pipeline commits in op order");
            self.commit_max = entry.op;
            self.pipeline.pop_front();
        }
        self.pipeline_inherited = self.pipeline_inherited.min(self.pipeline.len());
        self.apply_committed();
        while self.can_prepare_next() {
            let Some((from, header, body)) = self.request_queue.pop_front() else {
                break;
            };
            self.pending_addresses.insert(header.client, from);
            self.prepare(header, &body);
        }
    }

    /// Primary: retransmit the prepares at the pipeline's front (`PREPARE_RESEND_WINDOW_OPS`)
    /// whose timeout fired; true if any did.
    pub(crate) fn tick_pipeline(&mut self) -> bool {
        if self.status != Status::Normal || !self.is_primary() {
            return false;
        }
        let mut resend = Vec::new();
        for entry in self.pipeline.iter_mut().take(PREPARE_RESEND_WINDOW_OPS) {
            if entry.retransmit.tick() {
                entry.attempts += 1;
                let multiplier = (1u64 << entry.attempts.min(8)).min(PREPARE_RETRANSMIT_BACKOFF_MULTIPLIER_MAX);
                let backoff = PREPARE_RETRANSMIT_BASE_TICKS * multiplier;
                // Jitter in [0, backoff], seeded from (replica, group, op, attempt).
                let jitter =
                    mix(self.config.entropy_seed ^ mix(self.config.group ^ entry.op ^ u64::from(entry.attempts)))
                        % (backoff + 1);
                entry.retransmit = Timeout::new("prepare_retransmit", backoff + jitter);
                entry.retransmit.start();
                crate::watermark!(PrepareAttempts, u64::from(entry.attempts));
                resend.push((entry.op, entry.oks));
            }
        }
        let fired = !resend.is_empty();
        if fired {
            crate::cover!(PrepareResent);
        }
        for (op, oks) in resend {
            let Some(frame) = self.journal.get(op).and_then(|entry| entry.frame().cloned()) else {
                continue;
            };
            for replica in 0..self.config.replicas {
                if oks & bit(replica) == 0 {
                    self.outbox.push(Outgoing {
                        to: ProcessId(u32::from(replica)),
                        frame: frame.to_vec(),
                    });
                }
            }
        }
        fired
    }

    pub(crate) fn broadcast_commit(&mut self) {
        debug_assert!(self.status == Status::Normal && self.is_primary());
        let mut header = self.header(Command::Commit);
        header.commit = self.commit_max;
        // The head too: a backup that lacks ops under it while the commit point stands
        // still fetches them itself (see `on_commit`).
        header.op = self.journal.head();
        self.send_to_other_replicas(header, &[]);
    }

    pub(crate) fn on_commit(&mut self, sender: u8, header: &Header) {
        if header.view > self.view {
            if self.status != Status::Recovering {
                self.ask_for_start_view(sender);
            }
            return;
        }
        if self.status != Status::Normal || header.view < self.view || sender != self.primary_of(self.view) {
            return;
        }
        self.liveness.reset();
        self.withdraw_leave_vote();
        self.commit_max = self.commit_max.max(header.commit);
        if header.request != 0 {
            // The primary asks whether it still leads this view, for its queries.
            self.confirm_query_round(sender, header);
        }
        // A commit point that stood still for a whole broadcast interval while this
        // replica holds ops above it: the primary is waiting for acknowledgements that
        // were lost. The broadcast just proved the link works, so acknowledge the ops
        // at the front of its pipeline again now instead of waiting for the primary's
        // backed-off resend, which a link that is up only in short spells keeps
        // missing (a 2-replica group took over 20,000 ticks to commit 42 ops inherited
        // by a view change that way).
        let stalled = self.commit_heard == (header.view, header.commit);
        self.commit_heard = (header.view, header.commit);
        if stalled && header.commit < self.journal.head() {
            crate::cover!(PipelineFrontReacknowledged);
            let last = self
                .journal
                .head()
                .min(header.commit + PREPARE_RESEND_WINDOW_OPS as u64);
            for op in header.commit + 1..=last {
                self.send_prepare_ok(op);
            }
        }
        // And if the primary holds ops this backup lacks, they are not in flight: the
        // prepares were lost, or went to a replica that is down while this one was cut
        // off. Fetch them (`repair_run` reaches up to this head) rather than wait for
        // the primary's resend, whose backoff grew while the link was down and stays
        // grown after it heals (up to 800 ticks a resend; a backup healed from a
        // one-way partition waited 2,700 ticks for a single op, `--seed 94000062
        // --plane uniform --faults heavy --journal-slots 80`).
        if stalled && header.op > self.journal.head() {
            crate::cover!(StalledPipelineOpsFetched);
            self.stalled_head_heard = (header.view, header.op);
        }
    }

    /// Apply every committed op this replica holds, in order, replying to clients if
    /// primary.
    pub(crate) fn apply_committed(&mut self) {
        // Only in a started view: trust is settled there (a view change or recovery
        // may still be replacing stale entries).
        if self.status != Status::Normal {
            return;
        }
        while self.commit_min < self.commit_max {
            let op = self.commit_min + 1;
            if !self.journal.ready(op) {
                break;
            }
            let Some(entry) = self.journal.get(op) else { break };
            let header = entry.header();
            // Only applied ops leave their frame to the store: an unapplied one holds it.
            let frame = entry.frame().cloned().expect("a ready unapplied entry holds its frame");
            let parent = self.journal.checksum(op - 1).expect("applied ops stay in the journal");
            assert_eq!(
                header.parent, parent,
                "op {op} does not chain to the applied op below it"
            );
            let body = &frame[wire::HEADER_BYTES..];
            let reply_body = self.state_machine.apply(&header, body);
            self.commit_min = op;
            // The op a repair window below the applied head leaves memory for the store
            // (see `ReplicaConfig::applied_frames_in_memory_ops`), which keeps every record above
            // the journal's floor (see `make_checkpoint_durable`).
            // A store that shares the frames in memory would gain nothing.
            if let Some(old) = op.checked_sub(self.config.applied_frames_in_memory_ops)
                && old > self.journal.floor()
                && !self.store.shares_frames_in_memory()
            {
                self.journal.release_frame(old);
            }
            self.stats.ops_applied += 1;
            tracing::trace!(replica = self.config.replica, group = self.config.group, op, "applied");
            if header.client != 0 {
                let address = self
                    .pending_addresses
                    .remove(&header.client)
                    .or_else(|| self.clients.address(header.client));
                let mut reply = self.header(Command::Reply);
                reply.client = header.client;
                reply.request = header.request;
                reply.operation = header.operation;
                reply.op = op;
                reply.commit = op;
                reply.timestamp = header.timestamp;
                let frame = wire::seal_header(reply, &reply_body);
                if let Some(to) = address.filter(|_| self.is_primary() && self.status == Status::Normal) {
                    self.outbox.push(Outgoing {
                        to,
                        frame: frame.clone(),
                    });
                }
                self.clients.record(header.client, header.request, op, frame, address);
            }
        }
    }
}
