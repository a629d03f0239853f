//! Repair: fetching prepares a replica is missing, and deciding which ones to trust.
//!
//! A replica asks for the lowest range of ops it cannot yet apply (at most
//! [`REPAIR_PREPARES_MAX`] a round, retried after [`REPAIR_RETRY_TICKS`]). A prepare
//! that arrives is journaled only if it is provably canonical: its checksum is the one
//! a trusted header names for that op (installed from a StartView or merge, or the
//! parent of the trusted op above it), or it comes from the current view's primary,
//! which holds only its own view's log.

use std::rc::Rc;

use super::StateMachine;
use super::constants::{REPAIR_BUFFER_PREPARES_MAX, REPAIR_PREPARES_MAX};
use super::journal::Entry;
use super::replica::{Replica, Status};
use super::store::ReplicaStore;
use crate::wire::{self, Command, Header};

/// RepairPrepare flag: the server trusts the prepare (it is in the server's view's chain).
const REPAIR_FLAG_TRUSTED: u8 = 1;

/// Bytes of a RequestPrepares body: a bit per op of the range from its first (the
/// asker holds that op; serve it not), `REPAIR_PREPARES_MAX` bits, little-endian. An
/// empty body holds nothing. Any other length is refused.
pub(crate) const REPAIR_HELD_BITMAP_BYTES: usize = (REPAIR_PREPARES_MAX / 8) as usize;
const _: () = assert!(REPAIR_PREPARES_MAX == 128, "the held bitmap is one u128");

/// One repair round: ops `first..=last`, except those whose bit is set in `held`
/// (bit 0 is `first`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RepairAsk {
    pub first: u64,
    pub last: u64,
    pub held: u128,
}

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

    /// The next round's range, `(first, last)` (see `repair_ask`).
    #[cfg(test)]
    pub(crate) fn repair_range(&self) -> Option<(u64, u64)> {
        self.repair_ask().map(|ask| (ask.first, ask.last))
    }

    /// The lowest run of ops this replica needs but cannot apply, as `(start, end)`; a
    /// round asks for its top (`repair_ask`). Its top sits right under an op
    /// held ready (or is the top of the log), and a repaired prepare is proven canonical
    /// by the trusted op above it: each answer connects at once, and nothing already
    /// held is asked for again.
    ///
    /// The lowest run first, because it is what keeps the replica from applying. Asking
    /// for the highest run first starves the bottom on a lossy or overloaded network
    /// with writes going on: every lost prepare opens a new gap above, and the gap that
    /// blocks applying is never asked for again (found by `--plane metadata --faults
    /// swarm --crash-prob 0.01 --restart-prob 0.05 --crash-primary --seed 58`, and by
    /// eight clients on a clean network overflowing links while a restarted replica
    /// caught up).
    ///
    /// Nothing above what the journal may hold (`op_prepare_max`) is asked for: such an
    /// answer is dropped as journal-full, and a replica far enough behind asked for
    /// that one op forever (`--seed 783 --plane metadata --faults swarm`, 1,024 journal
    /// slots, 535 ops behind). Capped there, the range's top is vouched for by the
    /// primary alone, which `repair_peer` asks.
    ///
    /// A backup also reaches up to the head a stalled primary named (`on_commit`):
    /// ops it never received that only a resend would bring.
    fn repair_run(&self) -> Option<(u64, u64)> {
        let stalled_head = match self.stalled_head_heard {
            (view, head) if view == self.view && self.status == Status::Normal && !self.is_primary() => head,
            _ => 0,
        };
        let top = self
            .commit_max
            .max(stalled_head)
            .min(self.op_prepare_max())
            .max(self.journal.head());
        let mut op = self.commit_min + 1;
        while op <= top && self.journal.ready(op) {
            op += 1;
        }
        if op > top {
            return None;
        }
        let run_start = op;
        while op < top && !self.journal.ready(op + 1) {
            op += 1;
        }
        Some((run_start, op))
    }

    /// Whether a repair round may leave `op` out: this replica holds a body for it (in
    /// the journal, or buffered until the chain proves it) that only waits for the op
    /// above to be trusted. Once the op above is trusted, the chain walk has already
    /// trusted or removed the journal's copy, and a buffered copy that was not drained
    /// is asked for again rather than trusted to drain later.
    fn repair_holds(&self, op: u64) -> bool {
        let above_trusted = self.journal.get(op + 1).is_some_and(|above| above.trusted);
        let held = self.journal.get(op).is_some_and(Entry::has_body) || self.repair_buffer.contains_key(&op);
        held && !above_trusted
    }

    /// The next repair round: the top of the lowest run (`repair_run`), asking for
    /// at most `repair_window` ops the replica lacks and leaving out the ones it holds
    /// (`held`, a bit per op from `first`). The top is always asked for, since it is
    /// what proves the rest.
    ///
    /// Asking for held ops cost a replica that restarted with most of its log on disk
    /// but unproven most of each round: on a link that carries nine packets, the peer's
    /// answers for ops it already held pushed out the ones it lacked, and it applied
    /// 511 ops in 1,851 ticks (`--seed 90000049 --plane metadata --faults swarm
    /// --storage-faults budgeted`). Holes left by a damaged disk, scattered through a
    /// run, now go in one round instead of one round each.
    pub(crate) fn repair_ask(&self) -> Option<RepairAsk> {
        let (run_start, last) = self.repair_run()?;
        let mut first = last;
        let mut asked = 1;
        while first > run_start && last - (first - 1) < REPAIR_PREPARES_MAX && asked < self.repair_window {
            first -= 1;
            if !self.repair_holds(first) {
                asked += 1;
            }
        }
        // The range ends on an op asked for: held ops under the last one asked add
        // nothing.
        while first < last && self.repair_holds(first) {
            first += 1;
        }
        let mut held: u128 = 0;
        for op in first..last {
            if self.repair_holds(op) {
                held |= 1 << (op - first);
            }
        }
        debug_assert!(last - first < REPAIR_PREPARES_MAX);
        debug_assert!(held & (1 << (last - first)) == 0, "the top is always asked for");
        debug_assert!(last - first + 1 - u64::from(held.count_ones()) <= self.repair_window);
        Some(RepairAsk { first, last, held })
    }

    /// Ask a peer for the lowest missing range, unless a request is outstanding.
    pub(crate) fn repair(&mut self) {
        self.walk_chain();
        if self.status == Status::Recovering || self.transfer.is_some() {
            self.end_repair_session();
            return;
        }
        if self.repair_retry.ticking() {
            return;
        }
        // Worked out once: the peer asked depends on the round's top.
        let ask = self.repair_ask();
        let target = match self.status {
            // The primary, or after a round that timed out, maybe another peer (see
            // `repair_peer`); nothing to ask for ends the session below.
            Status::Normal if !self.is_primary() => ask.map(|ask| self.repair_peer(ask.last)),
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
        let Some(target) = target else {
            self.end_repair_session();
            return;
        };
        let Some(RepairAsk { first, last, held }) = ask else {
            // Everything asked for arrived: the session is over.
            self.end_repair_session();
            return;
        };
        if !self.repair_session {
            if self
                .budget
                .as_ref()
                .is_some_and(|budget| !budget.try_start_repair_session())
            {
                self.repair_deferred = true;
                self.stats.repair_sessions_deferred += 1;
                crate::cover!(RepairSessionDeferred);
                return;
            }
            self.repair_session = true;
            self.stats.repair_sessions += 1;
        }
        self.repair_deferred = false;
        debug_assert!((1..=REPAIR_PREPARES_MAX).contains(&self.repair_window));
        debug_assert!(first <= last && last - first < REPAIR_PREPARES_MAX);
        self.repair_first = last;
        self.repair_round_answered = false;
        let mut header = self.header(Command::RequestPrepares);
        header.op = first;
        header.commit = last;
        // Each request its own nonce (this incarnation's, counted on), which the answers
        // echo: a round trip is measured only on an answer to the request awaited.
        self.repair_nonce = self.boot_nonce.wrapping_add(self.stats.repair_requests + 1);
        header.nonce = self.repair_nonce;
        self.repair_sent_at_tick = self.ticks_delivered;
        tracing::debug!(
            replica = self.config.replica,
            group = self.config.group,
            target,
            first,
            last,
            held = held.count_ones(),
            "repair request"
        );
        let body = held.to_le_bytes();
        self.send_to_replica(target, header, if held == 0 { &[] } else { &body });
        self.stats.repair_requests += 1;
        self.repair_retry.after = self.repair_round_trip.retry_ticks();
        self.repair_retry.start();
    }

    /// The peer a backup asks for a range whose top is `last`. Only the primary can
    /// vouch for an op whose header this replica lacks (no trusted header of its own,
    /// nothing trusted above it naming it), so such a range always goes to the primary. Otherwise any peer's answer is
    /// proven by the trusted op above: after a round that timed out, every other round
    /// goes to another peer in turn (the primary keeps every second one).
    ///
    /// Asking only the primary starved a backup whose link to the primary was clogged or
    /// full while the other backups held every op it needed (issue #17: `--seed 9900940
    /// --faults swarm`, a repair request to one peer every 100 ticks for 1,100 ticks;
    /// seen again under disk faults, `--seed 933 --faults swarm`). Asking the others for
    /// a header-less op wasted four rounds in five on six replicas (`--seed 11 --plane
    /// mixed --faults swarm --shards 2`).
    pub(crate) fn repair_peer(&self, last: u64) -> u8 {
        let primary = self.primary_of(self.view);
        debug_assert_ne!(
            primary, self.config.replica,
            "a primary repairs from the logs it merges"
        );
        // A trusted header at the top (its body missing) or a trusted op right above it
        // proves any peer's answer.
        let vouched = [last, last + 1]
            .iter()
            .any(|&op| self.journal.get(op).is_some_and(|entry| entry.trusted));
        if !vouched || self.repair_misses.is_multiple_of(2) {
            return primary;
        }
        // The backups other than itself, in ring order after the primary.
        let replicas = self.config.replicas;
        let others: Vec<u8> = (1..replicas)
            .map(|step| (primary + step) % replicas)
            .filter(|&replica| replica != self.config.replica)
            .collect();
        if others.is_empty() {
            return primary;
        }
        let peer = others[(self.repair_misses / 2) as usize % others.len()];
        crate::cover!(RepairFromAnotherPeer);
        debug_assert!(peer != self.config.replica && peer != primary);
        peer
    }

    /// End the repair session, if one runs, giving its place back.
    pub(crate) fn end_repair_session(&mut self) {
        self.repair_deferred = false;
        if self.repair_session {
            self.repair_session = false;
            if let Some(budget) = &self.budget {
                budget.end_repair_session();
            }
        }
    }

    /// An answer filled `op`. Once the top of the range the outstanding request asked
    /// for is filled (the rest connects below it), the next request may go out at
    /// once, with a larger window.
    fn note_repair_progress(&mut self, op: u64) {
        if op == self.repair_first || self.journal.ready(self.repair_first) {
            self.repair_misses = 0;
            self.repair_retry.stop();
            self.repair_window = if self.config.storage_break == super::store::StorageBreak::RepairOneOpARound {
                1
            } else {
                (self.repair_window * 2).min(REPAIR_PREPARES_MAX)
            };
        }
    }

    pub(crate) fn on_request_prepares(&mut self, sender: u8, header: &Header, body: &[u8]) {
        if self.status == Status::Recovering || header.commit < header.op {
            return;
        }
        let held = match body.len() {
            0 => 0,
            REPAIR_HELD_BITMAP_BYTES => {
                let mut bytes = [0u8; REPAIR_HELD_BITMAP_BYTES];
                bytes.copy_from_slice(body);
                u128::from_le_bytes(bytes)
            }
            _ => {
                self.stats.frames_rejected += 1;
                return;
            }
        };
        // Whether the asker said it holds `op` (ops past the bitmap are never held).
        let asker_holds = |op: u64| {
            op.checked_sub(header.op)
                .is_some_and(|index| index < REPAIR_PREPARES_MAX && held & (1 << index) != 0)
        };
        self.release_pins_of_installed_transfers(sender, header.op);
        let floor = self.journal.floor();
        let mut first = header.op.max(1);
        if first <= floor {
            // The start of the range left this ring: say where it begins (the asker
            // transfers state if what it needs next is below that), then serve the rest.
            let mut evicted = self.header(Command::RangeEvicted);
            evicted.op = floor + 1;
            evicted.commit = self.checkpoint_op;
            self.send_to_replica(sender, evicted, &[]);
            self.stats.range_evicted_sent += 1;
            crate::cover!(RangeEvictedSent);
            first = floor + 1;
        }
        let last = header.commit.min(first + REPAIR_PREPARES_MAX - 1);
        if last < first {
            return;
        }
        // An applied op's frame may be in the store only (see `Journal::release_frame`):
        // read it back, and check it is the one the journal names. One that cannot be
        // read is not served, as if only its header were held; the asker tries again,
        // or asks another peer.
        let served: Vec<(bool, Rc<[u8]>)> = self
            .journal
            .range(first, last)
            .filter(|entry| !asker_holds(entry.header().op))
            .filter_map(|entry| {
                let frame = match entry.frame() {
                    Some(frame) => Rc::clone(frame),
                    // The store verified the frame it read; it must be this entry's.
                    None if entry.body_in_store() => self
                        .store
                        .read_prepare(entry.header().op)
                        .filter(|frame| super::journal::frame_checksum(frame) == Some(entry.checksum()))?,
                    None => return None,
                };
                Some((entry.trusted, frame))
            })
            .collect();
        tracing::debug!(
            replica = self.config.replica,
            group = self.config.group,
            sender,
            first,
            last,
            served = served.len(),
            floor,
            head = self.journal.head(),
            "repair serve"
        );
        for (trusted, frame) in served {
            let mut reply = self.header(Command::RepairPrepare);
            reply.nonce = header.nonce;
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
        tracing::debug!(
            replica = self.config.replica,
            group = self.config.group,
            sender,
            op,
            commit_min = self.commit_min,
            ready = self.journal.ready(op),
            above_trusted = self.journal.get(op + 1).is_some_and(|above| above.trusted),
            "repair answer"
        );
        if self.repair_retry.ticking() && outer.nonce == self.repair_nonce && op == self.repair_first {
            self.repair_round_trip
                .sample(self.ticks_delivered - self.repair_sent_at_tick);
        }
        if self.repair_retry.ticking() && op <= self.repair_first {
            self.repair_round_answered = true;
        }
        if op <= self.commit_min {
            return;
        }
        if op > self.journal.head() && !self.journal_has_room_for_new_op(op) && op != self.commit_min + 1 {
            self.stats.prepares_dropped_journal_full += 1;
            return;
        }
        let expected = self
            .journal
            .get(op)
            .map(|entry| (entry.header().checksum, entry.has_body(), entry.trusted));
        let parent_of_above = self
            .journal
            .get(op + 1)
            .filter(|above| above.trusted)
            .map(|above| above.header().parent);
        let from_current_primary = self.status == Status::Normal
            && !self.is_primary()
            && outer.view == self.view
            && sender == self.primary_of(self.view)
            && outer.flags & REPAIR_FLAG_TRUSTED != 0;
        let proven = parent_of_above == Some(inner.checksum) || from_current_primary;
        let trusted = match expected {
            // Already held (say, recovered from the store): the answer can still prove
            // it canonical, which is what lets the commit walk pass it.
            Some((checksum, true, trusted)) if checksum == inner.checksum => {
                if !trusted && proven {
                    if let Some(entry) = self.journal.get_mut(op) {
                        entry.trusted = true;
                    }
                    self.chain_dirty = true;
                    self.walk_chain();
                    self.note_repair_progress(op);
                }
                return;
            }
            // The header is known; only the body was missing.
            Some((checksum, false, trusted)) if checksum == inner.checksum => trusted || proven,
            Some(_) if proven => {
                // The op held a different prepare (another view's): the proven one replaces it.
                crate::cover!(RepairReplacedOtherVersion);
                true
            }
            _ if proven => true,
            _ => {
                // Not provable yet: keep it until the op above it is trusted.
                if op <= self.journal.head() && self.repair_buffer.len() < REPAIR_BUFFER_PREPARES_MAX {
                    self.repair_buffer
                        .insert(op, (inner, std::rc::Rc::from(inner_frame.to_vec())));
                    crate::cover!(RepairBuffered);
                } else if op <= self.journal.head() {
                    crate::cover!(RepairBufferFullDropped);
                }
                return;
            }
        };
        let frame: std::rc::Rc<[u8]> = std::rc::Rc::from(inner_frame);
        if !self.store_prepare(op, &frame) {
            return;
        }
        self.journal.put(Entry::new(inner, Some(frame), trusted));
        self.chain_dirty = true;
        self.walk_chain();
        self.note_repair_progress(op);
        self.send_prepare_ok(op);
        self.drain_repair_buffer(op);
    }

    /// Move buffered prepares under `filled` into the journal, top down, each one the
    /// trusted op above it names (and drop each one it does not: another view's). The
    /// op above need not be one just filled: an op the replica held, left out of the
    /// round (see `repair_ask`), is trusted by the chain walk, and the buffered op
    /// under it is proven by it all the same. At most the buffer's entries are looked
    /// at.
    fn drain_repair_buffer(&mut self, filled: u64) {
        let mut cursor = filled;
        while let Some((&below, _)) = self.repair_buffer.range(..cursor).next_back() {
            cursor = below;
            let Some(parent) = self
                .journal
                .get(below + 1)
                .filter(|above| above.trusted)
                .map(|above| above.header().parent)
            else {
                // Nothing proves it yet: it waits for the op above.
                continue;
            };
            let Some((header, frame)) = self.repair_buffer.remove(&below) else {
                unreachable!("op {below} was just found in the repair buffer");
            };
            if parent != header.checksum || self.journal.ready(below) || below <= self.commit_min {
                // Another view's prepare, or one no longer needed.
                continue;
            }
            if !self.store_prepare(below, &frame) {
                break;
            }
            self.journal.put(Entry::new(header, Some(frame), true));
            self.chain_dirty = true;
            self.walk_chain();
            self.note_repair_progress(below);
            self.send_prepare_ok(below);
        }
    }
}
