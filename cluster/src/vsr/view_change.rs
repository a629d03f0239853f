//! Electing the next primary: StartViewChange, DoViewChange, the merge, StartView.
//!
//! Nobody votes on who leads: the primary of view v is replica v % n. The replicas
//! only agree that the old view is over (StartViewChange from a view-change quorum)
//! and what its log was (DoViewChange from a view-change quorum, merged by the new
//! primary). The merge keeps every op a client could have been told committed:
//!
//! - the log of the latest `log_view` is the authority (older logs only vote nacks);
//! - an op above the merged commit point is dropped only on a nack quorum (a
//!   view-change quorum of replicas that never held it; a header held without its body
//!   above the sender's commit point counts as a nack, since a replica journals a
//!   prepare before acknowledging it);
//! - every other op is kept, and the new primary fetches and verifies its body before
//!   it sends StartView. If an op can be neither proven dead nor served, the view does
//!   not start: unavailable beats wrong.

use std::collections::BTreeMap;

use super::StateMachine;
use super::constants::PREPARE_RETRANSMIT_BASE_TICKS;
use super::constants::VIEW_CHANGE_HEADERS_MAX;
use super::journal::Entry;
use super::replica::{PipelineEntry, Replica, Status, bit};
use super::store::{ReplicaStore, Superblock};
use super::timeout::Timeout;
use crate::seam::ProcessId;
use crate::wire::{Command, HEADER_BYTES, Header};

/// Record flag: a header is present for this op.
const RECORD_HAS_HEADER: u8 = 1;
/// Record flag: the sender holds the body (can serve it).
const RECORD_PRESENT: u8 = 2;
/// Record flag: the sender never had this op.
const RECORD_NACK: u8 = 4;
/// DoViewChange header flag: the sender's log may lack ops it acknowledged (it booted
/// from a disk that discarded an unpublished tail and has not installed a view's log
/// since). Its missing ops are unknown, never nacks, and its log counts toward the
/// quorum only when every replica has sent one (nothing better will ever come).
const DVC_FLAG_LOG_INCOMPLETE: u8 = 1;
/// Bytes per DoViewChange record: op (8) + flags (1) + header (256).
const RECORD_BYTES: usize = 8 + 1 + HEADER_BYTES;

/// One op as a DoViewChange reports it.
#[derive(Clone, Debug)]
pub struct DoViewChangeRecord {
    /// The sender's header for the op, if it has one.
    pub header: Option<Header>,
    /// Whether the sender holds the body, or, at its journal's floor (the root or its
    /// checkpoint), the state it stands for (which a peer can fetch by state transfer).
    pub present: bool,
}

/// A replica's log summary, as its DoViewChange carries it.
#[derive(Clone, Debug)]
pub struct DoViewChangeLog {
    /// The last view the sender saw start.
    pub log_view: u64,
    /// The sender's head op.
    pub head: u64,
    /// The sender's commit point.
    pub commit: u64,
    /// Records by op, from the first op the sender has not applied (at most its
    /// commit point; its floor + 1 if its log is incomplete), or `head - 127` if that
    /// is higher, to `head`.
    pub records: BTreeMap<u64, DoViewChangeRecord>,
    /// The sender's log may lack ops it acknowledged: above its head it knows nothing.
    pub incomplete: bool,
}

impl DoViewChangeLog {
    /// Whether the sender holds `header` (same checksum) at its op, and with its body.
    fn holds(&self, header: &Header) -> (bool, bool) {
        match self.records.get(&header.op) {
            Some(DoViewChangeRecord {
                header: Some(held),
                present,
            }) if held.checksum == header.checksum => (true, *present),
            _ => (false, false),
        }
    }

    /// Whether the sender proves it never acknowledged `header`. An op below the
    /// records the sender carried (but at or below its head) is unknown, never a nack:
    /// the sender holds something there and may have acknowledged it.
    fn nacks(&self, header: &Header) -> bool {
        if self.incomplete && header.op > self.head {
            return false;
        }
        let carried_from = self.records.keys().next().copied().unwrap_or(self.head + 1);
        if header.op < carried_from && header.op <= self.head {
            return false;
        }
        let (held, present) = self.holds(header);
        let nack = !held || (!present && header.op > self.commit);
        if held && nack {
            crate::cover!(ViewChangeHeaderWithoutBodyNacks);
        }
        nack
    }
}

/// The outcome of merging the DoViewChange logs received so far.
struct Merge {
    commit: u64,
    head: u64,
    /// Canonical headers to install, by op (the merged commit op and everything kept above it).
    headers: Vec<Header>,
}

impl<S: StateMachine, T: ReplicaStore> Replica<S, T> {
    /// Give up on the current view and ask for `view`.
    pub(crate) fn start_view_change(&mut self, view: u64) {
        assert!(view > self.view || (view == self.view && self.status == Status::Recovering));
        // A view starts at most once: a replica that took part in a view (its log is
        // that view's) never goes back into a view change for it. A recovering primary
        // doing so would start its view a second time, with another log.
        assert!(
            self.log_view < view,
            "replica {} group {:#x}: a view change for view {view}, whose log it already holds",
            self.config.replica,
            self.config.group
        );
        tracing::info!(replica = self.config.replica, group = self.config.group, from = self.view, view, status = ?self.status, "start view change");
        if self.status == Status::Normal && self.is_primary() {
            self.abandon_client_requests();
        }
        self.status = Status::ViewChange;
        self.view = view;
        self.clear_leave_votes();
        self.pipeline.clear();
        self.pipeline_inherited = 0;
        self.request_queue.clear();
        self.start_view_change_from = bit(self.config.replica);
        self.do_view_change_from.clear();
        self.do_view_change_sent = false;
        self.liveness.stop();
        self.commit_broadcast.stop();
        self.request_start_view.stop();
        self.repair_retry.stop();
        self.view_change_escalate.start();
        self.view_change_resend.start();
        self.hasten_if_primary_closed();
        // The promise not to take part in older views must survive a crash before it is
        // made to anyone.
        if self.persist(Superblock {
            view,
            log_view: self.log_view,
            commit_max: self.durable.commit_max,
        }) {
            let header = self.header(Command::StartViewChange);
            self.send_to_other_replicas(header, &[]);
        }
        self.maybe_send_do_view_change();
    }

    /// Resend StartViewChange and DoViewChange (the resend timer fired).
    pub(crate) fn resend_view_change(&mut self) {
        debug_assert_eq!(self.status, Status::ViewChange);
        if self.leaving {
            self.send_leave_view();
        }
        if !self.persist(Superblock {
            view: self.view,
            log_view: self.log_view,
            commit_max: self.durable.commit_max,
        }) {
            return;
        }
        let header = self.header(Command::StartViewChange);
        self.send_to_other_replicas(header, &[]);
        if self.do_view_change_sent && !self.is_primary() {
            self.send_do_view_change();
        }
        self.maybe_send_do_view_change();
    }

    pub(crate) fn on_start_view_change(&mut self, sender: u8, header: &Header) {
        if header.view < self.view {
            return;
        }
        self.heard_view_change(header.view);
        if header.view != self.view {
            // Only a StartViewChange for this replica's own view counts toward it.
            return;
        }
        match self.status {
            Status::ViewChange => {
                self.start_view_change_from |= bit(sender);
                self.maybe_send_do_view_change();
            }
            Status::Normal if self.is_primary() => self.send_start_view(ProcessId(u32::from(sender)), 0),
            _ => {}
        }
    }

    /// Another replica is in a view change for `view` (it sent a StartViewChange, a
    /// DoViewChange or a LeaveView from it). Every such view was asked for by a
    /// view-change quorum (`vsr::leave_view`), so a replica behind it follows, whatever
    /// its status: a recovering one too, with the log it recovered (marked incomplete
    /// if it may be; the merge weighs it so), as its own election would.
    pub(crate) fn heard_view_change(&mut self, view: u64) {
        // A recovering replica rejoins a view change for its own view only if that view
        // never started with it (its log is older): a view starts at most once.
        let follow =
            view > self.view || (view == self.view && self.status == Status::Recovering && self.log_view < self.view);
        if !follow {
            return;
        }
        if self.status == Status::Recovering {
            crate::cover!(RecoveringJoinsViewChange);
        }
        self.start_view_change(view);
    }

    fn maybe_send_do_view_change(&mut self) {
        if self.status != Status::ViewChange || self.do_view_change_sent || self.durable.view != self.view {
            return;
        }
        if (self.start_view_change_from.count_ones() as usize) < self.quorum_view_change() {
            return;
        }
        self.do_view_change_sent = true;
        if self.log_incomplete {
            self.stats.do_view_changes_incomplete += 1;
        }
        if self.is_primary() {
            let own = self.do_view_change_log();
            self.do_view_change_from.insert(self.config.replica, own);
        } else {
            self.send_do_view_change();
        }
    }

    /// This replica's log summary.
    pub(super) fn do_view_change_log(&self) -> DoViewChangeLog {
        let head = self.journal.head();
        // A complete log carries what lies above what it applied, from its commit point
        // at the latest (the header there anchors the merge's chain walk). An
        // incomplete one carries from its floor too. Either way the merge must see
        // which ops, committed ones included, no replica holds a body for any more (see
        // `merge`): an op below the carried window counts as held, and a complete log
        // can lack the body of a committed op it has not applied (a hole repair had not
        // filled when the power went). Carried from its commit point only, such a hole
        // read as held, and after a whole-cluster outage in which no replica kept op 1
        // of a group, its views changed forever waiting for a body nobody had
        // (`--seed 9700131 --plane mixed --faults swarm`, 6 replicas).
        let low = if self.log_incomplete {
            self.journal.floor() + 1
        } else {
            (self.commit_min + 1).min(self.commit_max)
        };
        let from = low.max(head.saturating_sub(VIEW_CHANGE_HEADERS_MAX - 1)).min(head);
        let records = (from..=head)
            .map(|op| {
                let record = match self.journal.get(op) {
                    Some(entry) => DoViewChangeRecord {
                        header: Some(entry.header()),
                        present: entry.has_body() || op == self.journal.floor(),
                    },
                    None => DoViewChangeRecord {
                        header: None,
                        present: false,
                    },
                };
                (op, record)
            })
            .collect();
        DoViewChangeLog {
            log_view: self.log_view,
            head,
            commit: self.commit_max,
            records,
            incomplete: self.log_incomplete,
        }
    }

    fn send_do_view_change(&mut self) {
        let log = self.do_view_change_log();
        let mut body = Vec::with_capacity(log.records.len() * RECORD_BYTES);
        for (op, record) in &log.records {
            body.extend_from_slice(&op.to_le_bytes());
            let mut flags = if record.present { RECORD_PRESENT } else { 0 };
            match &record.header {
                Some(header) => {
                    body.push(flags | RECORD_HAS_HEADER);
                    body.extend_from_slice(&header.to_bytes());
                }
                None => {
                    flags |= RECORD_NACK;
                    body.push(flags);
                    body.extend_from_slice(&[0u8; HEADER_BYTES]);
                }
            }
        }
        let mut header = self.header(Command::DoViewChange);
        header.log_view = log.log_view;
        header.op = log.head;
        header.commit = log.commit;
        if log.incomplete {
            header.flags |= DVC_FLAG_LOG_INCOMPLETE;
        }
        let primary = self.primary_of(self.view);
        self.send_to_replica(primary, header, &body);
    }

    /// Decode a DoViewChange body; `None` if malformed (the frame is then ignored).
    fn decode_do_view_change(header: &Header, body: &[u8]) -> Option<DoViewChangeLog> {
        if !body.len().is_multiple_of(RECORD_BYTES) || body.len() / RECORD_BYTES > VIEW_CHANGE_HEADERS_MAX as usize {
            return None;
        }
        let mut records = BTreeMap::new();
        for chunk in body.chunks_exact(RECORD_BYTES) {
            let op = u64::from_le_bytes(chunk[..8].try_into().ok()?);
            let flags = chunk[8];
            let record = if flags & RECORD_HAS_HEADER != 0 {
                let held = Header::decode_verified(&chunk[9..]).ok()?;
                if held.op != op || held.command != Command::Prepare {
                    return None;
                }
                DoViewChangeRecord {
                    header: Some(held),
                    present: flags & RECORD_PRESENT != 0,
                }
            } else {
                DoViewChangeRecord {
                    header: None,
                    present: false,
                }
            };
            if op > header.op || records.insert(op, record).is_some() {
                return None;
            }
        }
        Some(DoViewChangeLog {
            log_view: header.log_view,
            head: header.op,
            commit: header.commit,
            records,
            incomplete: header.flags & DVC_FLAG_LOG_INCOMPLETE != 0,
        })
    }

    pub(crate) fn on_do_view_change(&mut self, sender: u8, header: &Header, body: &[u8]) {
        if header.view < self.view {
            return;
        }
        self.heard_view_change(header.view);
        if header.view != self.view || self.primary_of(header.view) != self.config.replica {
            return;
        }
        match self.status {
            Status::ViewChange => {
                let Some(log) = Self::decode_do_view_change(header, body) else {
                    self.stats.frames_rejected += 1;
                    return;
                };
                // A DoViewChange implies its sender gave up on the old view too.
                self.start_view_change_from |= bit(sender);
                self.do_view_change_from.insert(sender, log);
                self.maybe_send_do_view_change();
            }
            Status::Normal => self.send_start_view(ProcessId(u32::from(sender)), 0),
            Status::Recovering => {}
        }
    }

    /// The commit point a view whose log ends at `head` starts with: this replica's,
    /// unless every replica lost the committed ops above `head` (a whole-cluster power
    /// loss of a `replicated` partition, decided by a log from every replica): those
    /// are gone, and the view's next op takes the number of the first of them. Counted
    /// and logged, never silent.
    fn commit_point_after_merge(&mut self, head: u64) -> u64 {
        if head >= self.commit_max {
            return self.commit_max;
        }
        assert!(
            self.commit_min <= head,
            "replica {} group {:#x}: applied op {} is above the view's head {head}",
            self.config.replica,
            self.config.group,
            self.commit_min
        );
        let lost = self.commit_max - head;
        self.stats.committed_ops_lost += lost;
        tracing::warn!(
            replica = self.config.replica,
            group = self.config.group,
            view = self.view,
            head,
            commit_max = self.commit_max,
            lost,
            "committed ops no replica holds any more (every replica lost its unpublished tail): the view starts \
             without them"
        );
        head
    }

    /// Whether the DoViewChanges received can decide the view: a view-change quorum of
    /// complete logs, or a log from every replica (after every replica lost its disk's
    /// unpublished tail, waiting brings nothing back; what no log holds is gone).
    fn do_view_changes_decide(&self) -> bool {
        if self.config.storage_break == crate::vsr::StorageBreak::ViewChangeWaitsForEveryReplica {
            // The planted liveness bug (test-only): see `StorageBreak`.
            return self.do_view_change_from.len() == usize::from(self.config.replicas);
        }
        self.complete_do_view_changes_form_quorum()
            || self.do_view_change_from.len() == usize::from(self.config.replicas)
    }

    /// Whether the complete logs received alone form a view-change quorum.
    fn complete_do_view_changes_form_quorum(&self) -> bool {
        let complete = self.do_view_change_from.values().filter(|log| !log.incomplete).count();
        complete >= self.quorum_view_change()
    }

    /// Merge the logs received so far; `None` while the outcome is still open.
    ///
    /// With a quorum of complete logs, incomplete ones are left out: a complete quorum
    /// alone proves what committed. Otherwise (every replica sent one) all take part,
    /// and an incomplete log never nacks an op above its head.
    fn merge(&self) -> Option<Merge> {
        let only_complete = self.complete_do_view_changes_form_quorum();
        let logs: BTreeMap<u8, &DoViewChangeLog> = self
            .do_view_change_from
            .iter()
            .filter(|(_, log)| !only_complete || !log.incomplete)
            .map(|(replica, log)| (*replica, log))
            .collect();
        let logs = &logs;
        let best_log_view = logs.values().map(|log| log.log_view).max()?;
        let best: Vec<&DoViewChangeLog> = logs
            .values()
            .copied()
            .filter(|log| log.log_view == best_log_view)
            .collect();
        let canonical_head = best.iter().map(|log| log.head).max()?;
        if logs
            .values()
            .any(|log| log.log_view < best_log_view && log.head > canonical_head)
        {
            crate::cover!(ViewChangeLongerOlderLogLoses);
        }
        if only_complete && self.do_view_change_from.values().any(|log| log.incomplete) {
            crate::cover!(ViewChangeIncompleteLogsLeftOut);
        }
        let merged_commit = logs.values().map(|log| log.commit).max()?.min(canonical_head);
        let header_at = |op: u64| {
            best.iter()
                .find_map(|log| log.records.get(&op).and_then(|record| record.header))
        };
        // The header at the commit point anchors the chain walk below it.
        let anchor_at = |op: u64| {
            header_at(op).or_else(|| {
                self.journal
                    .get(op)
                    .filter(|_| op <= self.commit_min)
                    .map(|entry| entry.header())
            })
        };
        let mut headers = Vec::new();
        if let Some(anchor) = anchor_at(merged_commit) {
            headers.push(anchor);
        }
        let nack_quorum = self.quorum_view_change();
        let mut head = canonical_head;
        for op in merged_commit + 1..=canonical_head {
            let Some(header) = header_at(op) else {
                // No authoritative log names this op. A log that carried the slot without a
                // header of the authoritative view never acknowledged it (a nack); a log
                // whose carried window starts above it holds something there and may have
                // (unknown).
                let carried = |log: &DoViewChangeLog| log.records.keys().next().is_some_and(|&first| op >= first);
                let nacks = logs
                    .values()
                    .filter(|log| {
                        (op > log.head && !log.incomplete)
                            || (carried(log) && log.log_view < best_log_view)
                            || (carried(log) && log.records.get(&op).is_none_or(|record| record.header.is_none()))
                    })
                    .count();
                if nacks >= nack_quorum {
                    crate::cover!(ViewChangeNackQuorumDropsUnnamedOp);
                    head = op - 1;
                    break;
                }
                if best.iter().any(|log| !carried(log) && op <= log.head) {
                    // Kept: its header is learned by walking parent checksums down from
                    // the kept ops above.
                    continue;
                }
                // Neither proven dead nor known: wait for more DoViewChanges.
                return None;
            };
            let nacks = logs.values().filter(|log| log.nacks(&header)).count();
            if nacks >= nack_quorum {
                crate::cover!(ViewChangeNackQuorumDropsOp);
                head = op - 1;
                break;
            }
            headers.push(header);
        }
        if !only_complete {
            crate::cover!(ViewChangeEveryLogTakesPart);
            // Every replica sent its log and none proves what committed alone: an op
            // whose body no log holds can be fetched from nobody. Every replica lost it
            // with its unpublished tail (a whole-cluster power loss of a `replicated`
            // partition), so the view ends below it, or it could never start.
            // A log may hold the body if it says so, or if the op lies below the window
            // it carried and at or below its head (it said nothing of it).
            let may_hold = |log: &DoViewChangeLog, op: u64| match log.records.get(&op) {
                Some(record) => record.present,
                None => log.records.keys().next().is_none_or(|&first| op < first) && op <= log.head,
            };
            let lost = logs
                .values()
                .flat_map(|log| log.records.keys().copied())
                .filter(|&op| op <= head)
                .filter(|&op| !logs.values().any(|log| may_hold(log, op)))
                .min();
            if let Some(op) = lost {
                let held = self.journal.get(op).is_some_and(Entry::has_body);
                if !held {
                    crate::cover!(ViewChangeEndsBelowLostOp);
                    head = op.saturating_sub(1);
                }
            }
        }
        let commit = merged_commit.min(head);
        if commit < merged_commit {
            crate::cover!(ViewChangeCommitPointLowered);
            headers.clear();
            headers.extend(anchor_at(commit));
        } else {
            headers.retain(|header| header.op <= head);
        }
        Some(Merge { commit, head, headers })
    }

    /// New primary: merge, fetch what is missing, and start the view once complete.
    pub(crate) fn try_start_view(&mut self) {
        debug_assert!(self.status == Status::ViewChange && self.is_primary());
        if !self.do_view_change_sent || !self.do_view_changes_decide() {
            return;
        }
        let Some(merge) = self.merge() else { return };
        debug_assert!(merge.commit <= merge.head);
        if merge.head < self.commit_min {
            // This replica applied ops above everything the view's logs hold: while it
            // gathered them (a new primary fetching what its merge lacks) it installed a
            // peer's checkpoint, and that checkpoint's ops were committed by a later
            // view than this one (a view's logs hold every op committed before it), so
            // this view was replaced before it could start. Starting it would undo
            // applied ops (seed 300000003); its replicas have moved on, so the view
            // change is left to time out and move on, and the replica hears the newer
            // view there.
            crate::cover!(ViewChangeStaleBelowApplied);
            return;
        }
        // Install the merged log: drop what lies above it, replace what differs.
        if self.journal.head() > merge.head {
            assert!(merge.head >= self.commit_min, "the merge truncated below an applied op");
            self.journal.truncate_after(merge.head);
            self.store.truncate_after(merge.head);
        }
        self.journal.distrust_above(self.commit_min);
        for header in &merge.headers {
            self.install_canonical_header(header);
        }
        self.commit_max = self.commit_max.max(merge.commit);
        // Every op known committed is in some quorum's log, so a merge of a complete
        // quorum keeps it. A merged head below the commit point means every replica
        // lost those ops with its disk's unpublished tail (a power loss of the whole
        // cluster, which a `replicated` partition is allowed to suffer): decided by a
        // log from every replica, now or in a view after the one this replica last
        // logged in (its commit point is then from before that decision), and the view
        // starts at the merged head (see `commit_point_after_merge`).
        let newest_log_view = self
            .do_view_change_from
            .values()
            .map(|log| log.log_view)
            .max()
            .unwrap_or(self.log_view);
        assert!(
            merge.head >= self.commit_max
                || !self.complete_do_view_changes_form_quorum()
                || self.log_view < newest_log_view,
            "replica {} group {:#x}: view {} would start with head {} below the commit point {} although a complete \
             quorum took part (a complete log lacks a committed op)",
            self.config.replica,
            self.config.group,
            self.view,
            merge.head,
            self.commit_max
        );
        self.walk_chain();
        let complete = (self.commit_min + 1..=merge.head).all(|op| self.journal.ready(op));
        if !complete {
            return;
        }
        // Every op it will announce is held and verified: the view can start.
        let commit_max = self.commit_point_after_merge(merge.head);
        if !self.persist(Superblock {
            view: self.view,
            log_view: self.view,
            commit_max,
        }) {
            return;
        }
        self.commit_max = commit_max;
        self.log_view = self.view;
        self.status = Status::Normal;
        self.note_log_replaced();
        self.log_incomplete = false;
        self.stats.views_started += 1;
        tracing::info!(
            replica = self.config.replica,
            group = self.config.group,
            view = self.view,
            commit = merge.commit,
            head = merge.head,
            logs = self.do_view_change_from.len(),
            "view started as primary"
        );
        self.do_view_change_from.clear();
        // A would-be primary may have started a state transfer to fetch what its log
        // lacked; repair filled the log first. Installing it now would lift the commit
        // point over the inherited pipeline's front (ops this view must commit again),
        // and a primary whose log is complete has nothing to fetch: drop it. (Seed
        // 10001315 installed one three ops above the pipeline's front.)
        if self.transfer.is_some() {
            crate::cover!(TransferDroppedLeading);
            self.abandon_transfer("the view started with this replica leading: its log is complete");
        }
        self.pipeline.clear();
        // Ops kept by the merge are re-replicated in this view; there may be more of
        // them than a pipeline holds (backups learn the commit point lazily), and no
        // new op is prepared until the pipeline is back under its bound.
        self.pipeline_inherited = (merge.head - self.commit_max) as usize;
        crate::watermark!(InheritedPipeline, merge.head - self.commit_max);
        // Over the bound this replica's pipeline has (the production one, or a
        // buggified smaller one): new prepares wait for the inherited ops to commit.
        if self.pipeline_inherited > self.config.buggify.pipeline_prepares_max {
            crate::cover!(InheritedPipelineOverBound);
        }
        for op in self.commit_max + 1..=merge.head {
            let checksum = self.journal.checksum(op).expect("complete log");
            let mut retransmit = Timeout::new("prepare_retransmit", PREPARE_RETRANSMIT_BASE_TICKS);
            retransmit.start();
            self.pipeline.push_back(PipelineEntry {
                op,
                checksum,
                oks: bit(self.config.replica),
                retransmit,
                attempts: 0,
            });
        }
        if let Some(entry) = self.journal.get(merge.head) {
            self.last_timestamp = self.last_timestamp.max(entry.header().timestamp);
        }
        self.enter_normal_timers();
        for replica in 0..self.config.replicas {
            if replica != self.config.replica {
                self.send_start_view(ProcessId(u32::from(replica)), 0);
            }
        }
        self.commit_pipeline();
    }

    /// Put a canonical header at its op: trust a matching entry, replace a different one.
    pub(crate) fn install_canonical_header(&mut self, header: &Header) {
        if header.op <= self.journal.floor() {
            // Applied and covered by a checkpoint; only the floor's header is kept.
            if let Some(floor) = self.journal.get(header.op) {
                assert_eq!(
                    floor.header().checksum,
                    header.checksum,
                    "divergence: replica {} checkpointed op {} that the canonical log does not hold",
                    self.config.replica,
                    header.op
                );
            }
            return;
        }
        match self.journal.get_mut(header.op) {
            Some(entry) if entry.header().checksum == header.checksum => entry.trusted = true,
            Some(_) | None => {
                if header.op <= self.commit_min {
                    let applied = self.journal.checksum(header.op);
                    panic!(
                        "divergence: replica {} applied op {} with checksum {:#x?}, the canonical log holds {:#x}",
                        self.config.replica, header.op, applied, header.checksum
                    );
                }
                // Durable before the log_view that names it, so a restart still knows
                // which op its log holds here (and that it lacks the body).
                let _ = self.store.write_header(header.op, &header.to_bytes());
                self.journal.put(Entry::new(*header, None, true));
            }
        }
        self.chain_dirty = true;
    }

    /// Send this primary's log to `to` as a StartView (echoing `nonce` for a probe).
    pub(crate) fn send_start_view(&mut self, to: ProcessId, nonce: u64) {
        debug_assert!(self.status == Status::Normal && self.is_primary());
        let head = self.journal.head();
        let from = self
            .commit_max
            .max(head.saturating_sub(VIEW_CHANGE_HEADERS_MAX - 1))
            .min(head);
        let mut body = Vec::with_capacity(((head - from + 1) as usize) * HEADER_BYTES);
        for entry in self.journal.range(from, head) {
            body.extend_from_slice(&entry.header().to_bytes());
        }
        let mut header = self.header(Command::StartView);
        header.log_view = self.log_view;
        header.op = head;
        header.commit = self.commit_max;
        header.nonce = nonce;
        // The newest durable checkpoint: a rejoining replica behind it fetches the state.
        header.request = self.checkpoint_op;
        self.send(to, header, &body);
    }

    pub(crate) fn on_start_view(&mut self, sender: u8, header: &Header, body: &[u8]) {
        if sender != self.primary_of(header.view) || header.log_view != header.view {
            return;
        }
        let acceptable = match self.status {
            Status::Recovering => header.nonce == self.boot_nonce && header.view >= self.view,
            Status::ViewChange => header.view >= self.view,
            Status::Normal => header.view > self.view,
        };
        if !acceptable {
            return;
        }
        let Some(headers) = Self::decode_start_view(header, body) else {
            self.stats.frames_rejected += 1;
            return;
        };
        if header.op < self.commit_min {
            // A StartView whose head lies below an op this replica applied is of a view
            // already replaced: it installed, by state transfer, a checkpoint a later
            // view committed (a view's log holds every op committed before it).
            // Adopting it would undo applied ops; the replica hears the newer view.
            crate::cover!(ViewChangeStaleBelowApplied);
            return;
        }
        // The new view's log is made durable first, then the log_view that names it.
        if self.journal.head() > header.op {
            crate::cover!(StartViewTruncatesLog);
            assert!(header.op >= self.commit_min, "a StartView below an applied op");
            self.journal.truncate_after(header.op);
            self.store.truncate_after(header.op);
        }
        self.journal.distrust_above(self.commit_min);
        for canonical in &headers {
            self.install_canonical_header(canonical);
        }
        let commit_max = self.commit_point_after_merge(header.op).max(header.commit);
        if !self.persist(Superblock {
            view: header.view,
            log_view: header.view,
            commit_max,
        }) {
            return;
        }
        tracing::info!(
            replica = self.config.replica,
            group = self.config.group,
            view = header.view,
            was = ?self.status,
            commit = header.commit,
            head = header.op,
            "adopted start view"
        );
        if self.status == Status::Normal && self.is_primary() {
            crate::cover!(PrimaryAbandonsRequests);
            self.abandon_client_requests();
        }
        let rejoining = self.status == Status::Recovering;
        if rejoining {
            crate::cover!(StartViewToRecovering);
        }
        self.view = header.view;
        self.log_view = header.view;
        self.status = Status::Normal;
        self.note_log_replaced();
        self.log_incomplete = false;
        self.pipeline.clear();
        self.pipeline_inherited = 0;
        self.request_queue.clear();
        self.do_view_change_from.clear();
        self.do_view_change_sent = false;
        self.request_start_view_probes = 0;
        self.commit_max = commit_max;
        self.enter_normal_timers();
        self.walk_chain();
        // Acknowledge everything the new primary may still need to commit: its pipeline
        // holds the ops above the commit point it announced.
        for op in header.commit + 1..=self.journal.head() {
            self.send_prepare_ok(op);
        }
        if rejoining && self.config.transfer_on_rejoin && header.request > self.commit_min && self.transfer.is_none() {
            // The primary checkpointed past what this replica applied: fetch its state
            // now rather than repairing op by op (a primary with no checkpoint yet says
            // 0, and the replica repairs everything instead).
            self.start_transfer(sender);
        }
    }

    /// Decode a StartView body: contiguous verified headers ending at the head.
    fn decode_start_view(header: &Header, body: &[u8]) -> Option<Vec<Header>> {
        if body.is_empty() || !body.len().is_multiple_of(HEADER_BYTES) {
            return None;
        }
        let headers: Vec<Header> = body
            .chunks_exact(HEADER_BYTES)
            .map(Header::decode_verified)
            .collect::<Result<_, _>>()
            .ok()?;
        let contiguous = headers
            .windows(2)
            .all(|pair| pair[0].op.checked_add(1) == Some(pair[1].op) && pair[1].parent == pair[0].checksum);
        let last = headers.last()?;
        (contiguous && last.op == header.op && headers.iter().all(|h| h.command == Command::Prepare)).then_some(headers)
    }
}

#[cfg(test)]
mod tests;

/// Property tests of the two view-change body decoders (bytes from a socket): any body
/// gives `None` or a log whose every header verifies as a prepare of its op, never a
/// panic. The frame around a body is checksummed by `wire::open`; these bodies are what
/// a peer chose to send, so their own checks are all that stands between a buggy or
/// hostile peer and the merge.
#[cfg(test)]
mod proptests;
