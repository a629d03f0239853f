//! Queries (a partition's polls): answered by the primary from its applied state,
//! without a consensus round, but only once a replication quorum has confirmed, after
//! the query arrived, that this replica still leads its view.
//!
//! Why: a primary cut off by a partition does not know it was deposed. Until it hears
//! of the new view it would go on answering polls from its own state while the new
//! primary commits sends that clients see acknowledged: a client that polls after its
//! send was acknowledged would not see it (a stale read, which the contended workload's
//! linearizability check caught). A round costs one round trip to a quorum, shared by
//! every query waiting for it, and no log space.
//!
//! Why a quorum's confirmation is enough: a write acknowledged in a later view was
//! committed by a primary that a view-change quorum had moved to that view before the
//! write's reply, so before the query arrived and before this round's probe went out. A
//! replica that moved to a later view never confirms an earlier one (views only grow,
//! and the view is durable before a DoViewChange is sent), and a replication quorum
//! meets every view-change quorum (`quorum_replication + quorum_view_change >
//! replicas`). So when a replication quorum confirms a round, no later view has started
//! and every write acknowledged before the query arrived was committed by this primary
//! (applied before its reply was sent) or inherited by it (applied before it answers any
//! query at all).
//!
//! The round: the primary broadcasts a commit heartbeat whose `request` names the round
//! (0 in an ordinary heartbeat); a backup Normal in that view answers `CommitOk` with the
//! same view and round. Queries that arrive while a round is out wait for the next one:
//! the round they wait for must have started after them. A round that is not confirmed
//! is sent again every [`QUERY_ROUND_RESEND_TICKS`]; queries wait at most
//! `QUERIES_WAITING_MAX` at a time (a smaller `Buggify::queries_waiting_max` in the
//! simulator) (more are refused, and their clients try again),
//! and all are refused the moment this replica stops leading a Normal view.
//!
//! Does not model: leases (a lease would answer without a round trip, at the price of
//! trusting clock rates).

use std::collections::VecDeque;

use super::ClientError;
use super::constants::QUERY_ROUND_RESEND_TICKS;
use super::replica::{Replica, bit};
use super::store::{ReplicaStore, StorageBreak};
use super::timeout::Timeout;
use super::{StateMachine, Status};
use crate::seam::ProcessId;
use crate::wire::{Command, Header};

/// A query waiting for its round.
#[derive(Clone, Debug)]
struct Waiting {
    from: ProcessId,
    header: Header,
    body: Vec<u8>,
    /// The view it arrived in.
    view: u64,
    /// The round whose confirmation answers it.
    round: u64,
}

/// The primary's confirmation rounds and the queries waiting for them.
#[derive(Clone, Debug)]
pub(crate) struct QueryRounds {
    waiting: VecDeque<Waiting>,
    /// The newest round started (rounds only grow, across views too).
    round: u64,
    /// The view `round` was started in.
    round_view: u64,
    /// Replicas that confirmed `round`, this one included.
    confirmed_by: u8,
    /// The newest round a quorum confirmed.
    round_confirmed: u64,
    resend: Timeout,
}

impl QueryRounds {
    pub(crate) fn new() -> Self {
        Self {
            waiting: VecDeque::new(),
            round: 0,
            round_view: 0,
            confirmed_by: 0,
            round_confirmed: 0,
            resend: Timeout::new("query_round_resend", QUERY_ROUND_RESEND_TICKS),
        }
    }

    /// Ticks before the resend timeout fires (see `vsr::idle_ticks`).
    pub(crate) fn resend_ticks_before_firing(&self) -> u64 {
        self.resend.ticks_before_firing()
    }

    /// The resend timeout (see `vsr::idle_ticks`).
    pub(crate) fn resend_timeout(&mut self) -> &mut Timeout {
        &mut self.resend
    }

    /// Queries waiting now.
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.len()
    }

    fn in_flight(&self) -> bool {
        self.round > self.round_confirmed
    }
}

impl<S: StateMachine, T: ReplicaStore> Replica<S, T> {
    /// Primary, Normal, in a view it started, every inherited op applied: a query may
    /// be answered from applied state once its round is confirmed.
    fn query_ready(&self) -> bool {
        self.status == Status::Normal
            && self.is_primary()
            && self.durable.log_view == self.view
            && self.commit_min == self.commit_max
            && self.pipeline.front().is_none_or(|entry| {
                self.journal
                    .get(entry.op)
                    .is_some_and(|journaled| journaled.header().view == self.view)
            })
    }

    /// Primary: a query arrived (the caller checked this replica leads a started view).
    /// Until every op this primary inherited from earlier views is applied it is
    /// refused (the client tries again), never answered stale; otherwise it waits for
    /// a round that starts after it.
    pub(crate) fn on_query(&mut self, from: ProcessId, header: &Header, body: &[u8]) {
        if !self.query_ready() {
            tracing::debug!(
                replica = self.config.replica,
                group = self.config.group,
                commit_min = self.commit_min,
                commit_max = self.commit_max,
                "query refused: inherited ops not applied yet"
            );
            self.refuse(from, header);
            return;
        }
        if self.config.storage_break == StorageBreak::AnswerQueriesUnconfirmed {
            // The broken answer: at once, from whatever this replica believes.
            self.answer_query(from, header, body);
            return;
        }
        if self.queries.waiting.len() >= self.config.buggify.queries_waiting_max {
            crate::cover!(QueryRefusedWaitingFull);
            self.refuse(from, header);
            return;
        }
        // The next round, whether one is out or not: a round out now may have been
        // confirmed by some backup before this query arrived, so it cannot answer it.
        let round = self.queries.round + 1;
        self.queries.waiting.push_back(Waiting {
            from,
            header: *header,
            body: body.to_vec(),
            view: self.view,
            round,
        });
        if !self.queries.in_flight() {
            self.start_query_round();
        }
        assert!(self.queries.waiting.len() <= self.config.buggify.queries_waiting_max);
    }

    /// Start the next round: a heartbeat that asks every backup to confirm the view.
    fn start_query_round(&mut self) {
        debug_assert!(self.status == Status::Normal && self.is_primary());
        assert!(!self.queries.in_flight(), "one round at a time");
        self.queries.round += 1;
        self.queries.round_view = self.view;
        self.queries.confirmed_by = bit(self.config.replica);
        self.stats.query_rounds_started += 1;
        tracing::debug!(
            replica = self.config.replica,
            group = self.config.group,
            view = self.view,
            round = self.queries.round,
            waiting = self.queries.waiting.len(),
            "query round started"
        );
        self.queries.resend.start();
        self.send_query_round();
        // A group of one confirms its own round.
        self.confirm_query_round_if_quorum();
    }

    fn send_query_round(&mut self) {
        let mut header = self.header(Command::Commit);
        header.commit = self.commit_max;
        header.request = self.queries.round;
        self.send_to_other_replicas(header, &[]);
    }

    /// Backup: the primary's heartbeat asked to confirm a round; this replica is Normal
    /// in the heartbeat's view (the caller checked).
    pub(crate) fn confirm_query_round(&mut self, primary: u8, heartbeat: &Header) {
        debug_assert!(self.status == Status::Normal && heartbeat.view == self.view);
        assert_ne!(heartbeat.request, 0, "an ordinary heartbeat asks for nothing");
        let mut header = self.header(Command::CommitOk);
        header.request = heartbeat.request;
        header.commit = self.commit_max;
        self.send_to_replica(primary, header, &[]);
    }

    /// Primary: a backup confirmed a round.
    pub(crate) fn on_commit_ok(&mut self, sender: u8, header: &Header) {
        if self.status != Status::Normal
            || !self.is_primary()
            || header.view != self.view
            || header.view != self.queries.round_view
            || header.request != self.queries.round
            || !self.queries.in_flight()
        {
            return;
        }
        self.queries.confirmed_by |= bit(sender);
        self.confirm_query_round_if_quorum();
    }

    fn confirm_query_round_if_quorum(&mut self) {
        if (self.queries.confirmed_by.count_ones() as usize) < self.quorum_replication() {
            return;
        }
        crate::cover!(QueryRoundConfirmed);
        tracing::debug!(
            replica = self.config.replica,
            group = self.config.group,
            round = self.queries.round,
            "query round confirmed"
        );
        self.queries.round_confirmed = self.queries.round;
        self.queries.resend.stop();
        self.stats.query_rounds_confirmed += 1;
        while let Some(waiting) = self.queries.waiting.front() {
            if waiting.round > self.queries.round_confirmed {
                break;
            }
            let waiting = self.queries.waiting.pop_front().expect("just looked at it");
            assert_eq!(
                waiting.view, self.view,
                "queries of an older view were refused when it ended"
            );
            if self.query_ready() {
                self.answer_query(waiting.from, &waiting.header, &waiting.body);
            } else {
                self.refuse(waiting.from, &waiting.header);
            }
        }
        if !self.queries.waiting.is_empty() {
            self.start_query_round();
        }
    }

    /// Every tick: resend a round nobody confirmed yet.
    pub(crate) fn tick_query_rounds(&mut self) -> bool {
        if !self.queries.resend.tick() {
            return false;
        }
        if self.status == Status::Normal && self.is_primary() && self.queries.in_flight() {
            crate::cover!(QueryRoundResent);
            tracing::debug!(
                replica = self.config.replica,
                group = self.config.group,
                round = self.queries.round,
                "query round resent"
            );
            self.send_query_round();
            self.queries.resend.start();
        } else {
            self.queries.resend.stop();
        }
        true
    }

    /// After any input: a replica that no longer leads a Normal view refuses every
    /// waiting query (its clients try again, at whoever leads now).
    pub(crate) fn refuse_queries_unless_leading(&mut self) {
        if self.queries.waiting.is_empty() {
            return;
        }
        let leading = self.status == Status::Normal && self.is_primary() && self.queries.round_view == self.view;
        if leading && self.storage_failure.is_none() {
            return;
        }
        let waiting = std::mem::take(&mut self.queries.waiting);
        // A stopped replica sends nothing; its clients time out and try elsewhere.
        if self.storage_failure.is_none() {
            crate::cover!(QueriesRefusedLeadershipLost);
            for query in waiting {
                self.refuse_with(query.from, &query.header, ClientError::TransientNotAccepted);
            }
        }
        // The round out is abandoned; the next one starts afresh.
        self.queries.round_confirmed = self.queries.round;
        self.queries.resend.stop();
        assert!(self.queries.waiting.is_empty() && !self.queries.in_flight());
    }

    /// Answer a query from applied state.
    fn answer_query(&mut self, from: ProcessId, header: &Header, body: &[u8]) {
        let Some(answer) = self.state_machine.query(header.operation, body) else {
            self.stats.frames_rejected += 1;
            return;
        };
        self.stats.queries_answered += 1;
        let mut reply = self.header(Command::Reply);
        reply.client = header.client;
        reply.request = header.request;
        reply.operation = header.operation;
        reply.op = self.commit_min;
        reply.commit = self.commit_min;
        reply.timestamp = self.realtime_micros;
        self.send(from, reply, &answer);
    }
}
