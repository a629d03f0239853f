//! Repair: fetching prepares a replica is missing, and deciding which ones to trust.
//!
//! A replica asks for the lowest range of ops it cannot yet apply (at most
//! [`REPAIR_PREPARES_MAX`] a round, retried after [`REPAIR_RETRY_TICKS`]). A prepare
//! that arrives is journaled only if it is provably canonical: its checksum is the one
//! a trusted header names for that op (installed from a StartView or merge, or the
//! parent of the trusted op above it), or it comes from the current view's primary,
//! which holds only its own view's log.

use super::StateMachine;
use super::constants::REPAIR_PREPARES_MAX;
use super::journal::Entry;
use super::replica::{Replica, Status};
use super::store::ReplicaStore;
use crate::wire::{self, Command, Header};

/// RepairPrepare flag: the server trusts the prepare (it is in the server's view's chain).
const REPAIR_FLAG_TRUSTED: u8 = 1;

impl<S: StateMachine, T: ReplicaStore> Replica<S, T> {
    /// Re-verify the chain after the journal changed; forget stale ops durably.
    pub(crate) fn walk_chain(&mut self) {
        if !self.chain_dirty {
            return;
        }
        self.chain_dirty = false;
        match self.journal.walk_chain(self.commit_min) {
            Ok(removed) => {
                for op in removed {
                    self.store.remove_prepare(op);
                }
            }
            Err((op, canonical, applied)) => panic!(
                "divergence: replica {} applied op {op} with checksum {applied:#x}, the canonical chain holds {canonical:#x}",
                self.config.replica
            ),
        }
    }

    /// The lowest op this replica needs but cannot apply, up to what it knows exists.
    fn first_missing(&self) -> Option<u64> {
        let top = self.commit_max.max(self.journal.head());
        (self.commit_min + 1..=top).find(|&op| !self.journal.ready(op))
    }

    /// Ask a peer for the lowest missing range, unless a request is outstanding.
    pub(crate) fn repair(&mut self) {
        self.walk_chain();
        if self.status == Status::Recovering || self.repair_retry.ticking() {
            return;
        }
        let target = match self.status {
            Status::Normal if !self.is_primary() => Some(self.primary_of(self.view)),
            Status::ViewChange if self.is_primary() && self.do_view_change_sent => {
                // Rotate among the peers whose logs are being merged.
                let peers: Vec<u8> = self
                    .do_view_change_from
                    .keys()
                    .copied()
                    .filter(|&peer| peer != self.config.replica)
                    .collect();
                (!peers.is_empty()).then(|| {
                    self.repair_cursor = self.repair_cursor.wrapping_add(1);
                    peers[usize::from(self.repair_cursor) % peers.len()]
                })
            }
            _ => None,
        };
        let Some(target) = target else { return };
        let Some(first) = self.first_missing() else { return };
        let top = self.commit_max.max(self.journal.head()).max(first);
        let last = top.min(first + REPAIR_PREPARES_MAX - 1);
        let mut header = self.header(Command::RequestPrepares);
        header.op = first;
        header.commit = last;
        self.send_to_replica(target, header, &[]);
        self.stats.repair_requests += 1;
        self.repair_retry.start();
    }

    pub(crate) fn on_request_prepares(&mut self, sender: u8, header: &Header) {
        if self.status == Status::Recovering || header.commit < header.op {
            return;
        }
        let last = header.commit.min(header.op + REPAIR_PREPARES_MAX - 1);
        let served: Vec<(bool, Vec<u8>)> = self
            .journal
            .range(header.op.max(1), last)
            .filter_map(|entry| entry.frame.as_ref().map(|frame| (entry.trusted, frame.to_vec())))
            .collect();
        for (trusted, frame) in served {
            let mut reply = self.header(Command::RepairPrepare);
            reply.flags = if trusted && self.status == Status::Normal {
                REPAIR_FLAG_TRUSTED
            } else {
                0
            };
            self.send_to_replica(sender, reply, &frame);
        }
    }

    pub(crate) fn on_repair_prepare(&mut self, sender: u8, outer: &Header, inner_frame: &[u8]) {
        if self.status == Status::Recovering {
            return;
        }
        let Ok((inner, _)) = wire::open(inner_frame) else {
            self.stats.frames_rejected += 1;
            return;
        };
        if inner.command != Command::Prepare
            || inner.cluster != self.config.cluster
            || inner.group != self.config.group
            || inner.op == 0
        {
            self.stats.frames_rejected += 1;
            return;
        }
        let op = inner.op;
        if op <= self.commit_min {
            return;
        }
        let expected = self
            .journal
            .get(op)
            .map(|entry| (entry.header.checksum, entry.frame.is_some(), entry.trusted));
        let parent_of_above = self
            .journal
            .get(op + 1)
            .filter(|above| above.trusted)
            .map(|above| above.header.parent);
        let from_current_primary = self.status == Status::Normal
            && !self.is_primary()
            && outer.view == self.view
            && sender == self.primary_of(self.view)
            && outer.flags & REPAIR_FLAG_TRUSTED != 0;
        let trusted = match expected {
            // The header is known; only the body was missing.
            Some((checksum, false, trusted)) if checksum == inner.checksum => trusted,
            // Already held.
            Some((checksum, true, _)) if checksum == inner.checksum => return,
            _ if parent_of_above == Some(inner.checksum) => true,
            _ if from_current_primary => true,
            _ => return,
        };
        let _ = self.store.write_prepare(op, inner_frame);
        self.journal.put(Entry {
            header: inner,
            frame: Some(std::rc::Rc::from(inner_frame.to_vec())),
            trusted,
        });
        self.chain_dirty = true;
        // The answer arrived: the next request may go out at once.
        self.repair_retry.stop();
        self.walk_chain();
        if op > self.commit_max {
            self.send_prepare_ok(op);
        }
    }
}
