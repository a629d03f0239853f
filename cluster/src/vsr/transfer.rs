//! State transfer: catching up from a peer's checkpoint when the ops a replica needs
//! have left every ring it can reach.
//!
//! A replica learns it must transfer when a repair request comes back
//! `RangeEvicted` with an oldest op above the next op it must apply. It then asks that
//! peer for a checkpoint, one [`TRANSFER_CHUNK_BYTES`] chunk at a time, one chunk in
//! flight. The peer encodes its state *now* (at its applied head, which is in its
//! ring) and pins its ring above that op while the transfer runs, so when the
//! checkpoint lands the ops right above it are still there to repair: the transfer
//! does not chase its own tail. (Shipping the peer's last durable checkpoint instead
//! would start from an op its ring may already have passed.) A pin is released when
//! the receiver asks for the ops above it (it installed: the pin did its job), when it
//! goes quiet for [`TRANSFER_PIN_IDLE_TICKS_MAX`] (or for
//! [`TRANSFER_PIN_SHIPPED_IDLE_TICKS_MAX`] once the last chunk has left: the ask for
//! the ops above is one frame, and a network may lose it), when a newer transfer to
//! the same peer replaces it, or when it would let the ring pass twice its cap.
//!
//! The receiver checks every chunk's position and the whole checkpoint's checksum,
//! decodes and restores it (the state machine refuses bytes that are not a state),
//! makes it its own durable checkpoint, and repairs what was committed meanwhile.
//! While transferring it takes part in view changes but sends no PrepareOk: its log
//! has a hole where the checkpoint goes.
//!
//! Counted: transfers started, installed, abandoned (the peer went silent), and
//! *stale*: a transfer started while the previous install had not yet connected to
//! the peer's ring (the measure of chasing one's tail).

use std::rc::Rc;

use super::StateMachine;
use super::constants::{
    CHECKPOINT_BYTES_MAX, TRANSFER_CHUNK_BYTES, TRANSFER_PIN_IDLE_TICKS_MAX, TRANSFER_PIN_SHIPPED_IDLE_TICKS_MAX,
    TRANSFER_RETRIES_MAX, TRANSFER_RETRY_TICKS, TRANSFERS_SERVED_MAX,
};
use super::replica::{Replica, Status};
use super::store::{ReplicaStore, StorageBreak};
use super::timeout::Timeout;
use crate::wire::{Command, Header};

/// A transfer this replica is receiving.
#[derive(Debug)]
pub(crate) struct Transfer {
    /// The peer serving it.
    peer: u8,
    /// The checkpoint op (0 until the first chunk names it).
    op: u64,
    /// The checkpoint's length and checksum, from the first chunk.
    total: u64,
    checksum: u128,
    /// What has arrived, in order.
    bytes: Vec<u8>,
    retry: Timeout,
    retries: u32,
}

/// A transfer this replica is serving.
#[derive(Debug)]
pub(crate) struct Served {
    peer: u8,
    op: u64,
    checksum: u128,
    bytes: Rc<[u8]>,
    idle_ticks: u64,
    /// The last chunk has been sent: the receiver has, or soon asks for it again.
    shipped: bool,
}

impl Served {
    /// Ticks this pin may go without a word from its receiver.
    fn idle_ticks_max(&self) -> u64 {
        if self.shipped {
            TRANSFER_PIN_SHIPPED_IDLE_TICKS_MAX
        } else {
            TRANSFER_PIN_IDLE_TICKS_MAX
        }
    }
}

fn checksum(bytes: &[u8]) -> u128 {
    crate::wire::checksum(bytes)
}

/// How far a state transfer has come (`Replica::transfer_received`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransferProgress {
    /// The checkpoint op fetched (0 until the first chunk names it).
    pub op: u64,
    /// The checkpoint's length in bytes (0 until the first chunk names it).
    pub total: u64,
    /// Bytes received so far.
    pub received: u64,
}

impl<S: StateMachine, T: ReplicaStore> Replica<S, T> {
    /// Ticks [`Replica::tick_transfers`] may be skipped for: none of them releases an
    /// idle pin or retries the transfer in progress (see `vsr::idle_ticks`).
    pub(crate) fn transfer_ticks_quiet(&self) -> u64 {
        let pins = self
            .served
            .iter()
            .map(|served| served.idle_ticks_max().saturating_sub(served.idle_ticks))
            .min()
            .unwrap_or(u64::MAX);
        let retry = self
            .transfer
            .as_ref()
            .map_or(u64::MAX, |transfer| transfer.retry.ticks_before_firing());
        pins.min(retry)
    }

    /// What `n` quiet calls of [`Replica::tick_transfers`] do.
    pub(crate) fn skip_transfer_ticks(&mut self, n: u64) {
        for served in &mut self.served {
            served.idle_ticks += n;
            debug_assert!(served.idle_ticks <= served.idle_ticks_max());
        }
        if let Some(transfer) = self.transfer.as_mut() {
            transfer.retry.advance(n);
        }
    }

    /// Whether this replica is receiving a state transfer.
    pub fn transferring(&self) -> bool {
        self.transfer.is_some()
    }

    /// The state transfer this replica is receiving, if any: the checkpoint op it
    /// fetches and its length in bytes (both 0 until the first chunk names them), and
    /// the bytes received so far. Moves with every chunk, so a watcher can tell a slow
    /// transfer from a stalled one.
    pub fn transfer_received(&self) -> Option<TransferProgress> {
        self.transfer.as_ref().map(|transfer| TransferProgress {
            op: transfer.op,
            total: transfer.total,
            received: transfer.bytes.len() as u64,
        })
    }

    /// The lowest op a served transfer pins in the ring.
    pub(crate) fn pinned_op(&self) -> Option<u64> {
        self.served.iter().map(|served| served.op).min()
    }

    /// `peer` asks for ops from `first` on: a transfer served to it below that op was
    /// installed, so its pin has done its job (and the shard's place is free for the
    /// next transfer).
    pub(crate) fn release_pins_of_installed_transfers(&mut self, peer: u8, first: u64) {
        let before = self.served.len();
        self.served.retain(|served| served.peer != peer || first <= served.op);
        self.stats.transfers_connected += (before - self.served.len()) as u64;
    }

    /// Release the pin of the oldest served transfer; false if none.
    pub(crate) fn release_oldest_pin(&mut self) -> bool {
        let Some(position) = self
            .served
            .iter()
            .enumerate()
            .min_by_key(|(_, served)| served.op)
            .map(|(position, _)| position)
        else {
            return false;
        };
        self.served.remove(position);
        self.stats.transfer_pins_released += 1;
        true
    }

    /// Whether this replica may start a transfer now: a backup in a started view, or
    /// a new primary merging logs (which cannot start its view without the state).
    fn may_transfer(&self) -> bool {
        match self.status {
            Status::Normal => !self.is_primary(),
            Status::ViewChange => self.is_primary() && self.do_view_change_sent,
            Status::Recovering => false,
        }
    }

    /// A peer evicted the start of the range asked for: `header.op` is its oldest op.
    pub(crate) fn on_range_evicted(&mut self, sender: u8, header: &Header) {
        self.stats.range_evicted_received += 1;
        let oldest = header.op;
        if self.transfer.is_some() || !self.may_transfer() || self.commit_min + 1 >= oldest {
            return;
        }
        self.start_transfer(sender);
    }

    pub(crate) fn start_transfer(&mut self, peer: u8) {
        if self.installed_awaiting_connect.is_some() {
            self.stats.transfers_stale += 1;
            crate::cover!(TransferStale);
        }
        self.stats.transfers_started += 1;
        crate::cover!(TransferStarted);
        tracing::info!(
            replica = self.config.replica,
            group = self.config.group,
            peer,
            commit_min = self.commit_min,
            "state transfer started"
        );
        self.repair_retry.stop();
        self.transfer = Some(Transfer {
            peer,
            op: 0,
            total: 0,
            checksum: 0,
            bytes: Vec::new(),
            retry: Timeout::new("transfer_retry", TRANSFER_RETRY_TICKS),
            retries: 0,
        });
        self.request_chunk();
    }

    fn request_chunk(&mut self) {
        let Some(transfer) = self.transfer.as_mut() else { return };
        transfer.retry.start();
        let (peer, op, offset) = (transfer.peer, transfer.op, transfer.bytes.len() as u64);
        let mut header = self.header(Command::RequestCheckpoint);
        header.op = op;
        header.commit = offset;
        self.send_to_replica(peer, header, &[]);
    }

    /// Tick the transfer and the served pins; true if a timeout fired.
    pub(crate) fn tick_transfers(&mut self) -> bool {
        if self.served.is_empty() && self.transfer.is_none() {
            // The common case, at every tick of every replica: nothing to age.
            return false;
        }
        for served in &mut self.served {
            served.idle_ticks += 1;
        }
        let before = self.served.len();
        self.served
            .retain(|served| served.idle_ticks <= served.idle_ticks_max());
        if self.served.len() < before {
            crate::cover!(TransferPinReleasedIdle);
        }
        self.stats.transfer_pins_released += (before - self.served.len()) as u64;
        let Some(transfer) = self.transfer.as_mut() else {
            return false;
        };
        if !transfer.retry.tick() {
            return false;
        }
        transfer.retries += 1;
        if transfer.retries > TRANSFER_RETRIES_MAX {
            self.abandon_transfer("the peer stopped answering");
        } else {
            self.request_chunk();
        }
        true
    }

    /// Give up the state transfer in flight, if any, saying `why` in the log.
    pub(crate) fn abandon_transfer(&mut self, why: &'static str) {
        if let Some(transfer) = self.transfer.take() {
            tracing::info!(
                replica = self.config.replica,
                group = self.config.group,
                peer = transfer.peer,
                op = transfer.op,
                received = transfer.bytes.len(),
                why,
                "state transfer abandoned"
            );
            self.stats.transfers_abandoned += 1;
            crate::cover!(TransferAbandoned);
        }
    }

    /// Serve a chunk of a checkpoint to `sender`.
    pub(crate) fn on_request_checkpoint(&mut self, sender: u8, header: &Header) {
        if self.status == Status::Recovering {
            return;
        }
        let offset = header.commit;
        let existing = self
            .served
            .iter()
            .position(|served| served.peer == sender && served.op == header.op && header.op != 0);
        let position = match existing {
            Some(position) => position,
            None => {
                // A new transfer (or one whose pin was released): ship the state now.
                // A receiver that asked for an older op sees a new op and restarts.
                self.served.retain(|served| served.peer != sender);
                let shard_refuses = self.budget.as_ref().is_some_and(|budget| !budget.try_serve_transfer());
                if self.served.len() >= TRANSFERS_SERVED_MAX || shard_refuses {
                    // The receiver asks again after its retry timeout.
                    self.stats.transfers_refused += 1;
                    crate::cover!(TransferRefusedBusy);
                    return;
                }
                let bytes: Rc<[u8]> = Rc::from(self.encode_checkpoint_now());
                if bytes.len() > CHECKPOINT_BYTES_MAX {
                    self.stats.transfers_refused += 1;
                    return;
                }
                self.served.push(Served {
                    peer: sender,
                    op: self.commit_min,
                    checksum: checksum(&bytes),
                    bytes,
                    idle_ticks: 0,
                    shipped: false,
                });
                self.stats.transfers_served += 1;
                self.served.len() - 1
            }
        };
        let served = &mut self.served[position];
        served.idle_ticks = 0;
        let offset = if existing.is_some() { offset } else { 0 };
        let Ok(start) = usize::try_from(offset) else { return };
        if start > served.bytes.len() {
            return;
        }
        let chunk_bytes = if self.config.storage_break == StorageBreak::TransferTinyChunks {
            super::store::TRANSFER_CHUNK_BYTES_SLOWED
        } else {
            TRANSFER_CHUNK_BYTES
        };
        let end = (start + chunk_bytes).min(served.bytes.len());
        served.shipped = end == served.bytes.len();
        let chunk = served.bytes[start..end].to_vec();
        let (op, total, sum) = (served.op, served.bytes.len() as u64, served.checksum);
        let mut reply = self.header(Command::CheckpointChunk);
        reply.op = op;
        reply.commit = offset;
        reply.timestamp = total;
        reply.context = sum;
        self.stats.transfer_chunks_served += 1;
        self.send_to_replica(sender, reply, &chunk);
    }

    /// A chunk arrived.
    pub(crate) fn on_checkpoint_chunk(&mut self, sender: u8, header: &Header, body: &[u8]) {
        let Some(transfer) = self.transfer.as_mut() else { return };
        if transfer.peer != sender {
            return;
        }
        let same =
            header.op == transfer.op && header.context == transfer.checksum && header.timestamp == transfer.total;
        if !same {
            // The first chunk, or the peer ships another checkpoint (it released the pin
            // of the old one): start over from this one.
            if header.commit != 0 || header.timestamp > CHECKPOINT_BYTES_MAX as u64 {
                return;
            }
            if transfer.op != 0 {
                self.stats.transfers_restarted += 1;
                crate::cover!(TransferRestarted);
            }
            transfer.op = header.op;
            transfer.total = header.timestamp;
            transfer.checksum = header.context;
            transfer.bytes.clear();
        }
        if header.commit != transfer.bytes.len() as u64 {
            return; // A duplicate or a chunk from before a restart.
        }
        let end = transfer.bytes.len() as u64 + body.len() as u64;
        if end > transfer.total || (body.is_empty() && end < transfer.total) {
            self.stats.frames_rejected += 1;
            return;
        }
        transfer.bytes.extend_from_slice(body);
        transfer.retries = 0;
        if transfer.op <= self.commit_min {
            // The peer is not ahead of this replica: nothing to gain.
            self.abandon_transfer("the peer's checkpoint is not ahead");
            return;
        }
        if (transfer.bytes.len() as u64) < transfer.total {
            self.request_chunk();
            return;
        }
        let Some(transfer) = self.transfer.take() else { return };
        let verify = self.config.storage_break != StorageBreak::InstallUnverifiedTransfer;
        if verify && checksum(&transfer.bytes) != transfer.checksum {
            self.stats.frames_rejected += 1;
            self.stats.transfers_abandoned += 1;
            crate::cover!(TransferAbandoned);
            return;
        }
        self.finish_transfer(transfer);
    }

    fn finish_transfer(&mut self, transfer: Transfer) {
        let bytes: Rc<[u8]> = Rc::from(transfer.bytes);
        let op = match self.install_transferred_checkpoint(&bytes) {
            Ok(op) => op,
            Err(error) => {
                tracing::warn!(
                    replica = self.config.replica,
                    group = self.config.group,
                    peer = transfer.peer,
                    %error,
                    "transferred checkpoint refused"
                );
                self.stats.transfers_abandoned += 1;
                crate::cover!(TransferAbandoned);
                return;
            }
        };
        self.stats.transfers_installed += 1;
        crate::cover!(TransferInstalled);
        self.installed_awaiting_connect = Some(op);
        // The peer pinned its ring above `op` for this install and holds one of its
        // shard's few transfer places until it hears a repair request from above `op`.
        // With nothing left to repair none would come, and the place would stay taken
        // until the pin idles out (after a whole-cluster power outage every group
        // transfers at once, and the last ones starved for 2,000 ticks). Ask for the
        // op above now: it releases the pin, and the op comes back if there is one.
        let mut release = self.header(Command::RequestPrepares);
        release.op = op + 1;
        release.commit = op + 1;
        self.send_to_replica(transfer.peer, release, &[]);
        tracing::info!(
            replica = self.config.replica,
            group = self.config.group,
            peer = transfer.peer,
            op,
            bytes = bytes.len(),
            "state transfer installed"
        );
    }

    /// Note that an install connected (the op above it was applied).
    pub(crate) fn note_transfer_connected(&mut self) {
        if self.installed_awaiting_connect.is_some_and(|op| self.commit_min > op) {
            self.installed_awaiting_connect = None;
        }
    }
}
