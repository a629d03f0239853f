//! Checkpoints: the state after an applied op, made durable so the ops below it can be
//! forgotten, and the bound on the journal (the prepare ring) that this makes possible.
//!
//! A checkpoint at op C is the state machine's snapshot, the client table and C's
//! prepare header (its checksum is what op C + 1 must name as parent). A replica takes
//! one every [`checkpoint_interval_ops`] applied ops, or sooner when the frames above
//! its last one fill half the ring's bytes. Only once the store has made it durable
//! does the replica evict ops at or below C from memory and disk; until then it keeps
//! everything, so a restart always finds a checkpoint and every op above it.
//!
//! The ring keeps ops below the checkpoint as long as it has room, so a peer a little
//! behind repairs from it instead of transferring state, and the store keeps their
//! records as long as the ring keeps them: the ring holds applied ops' frames in the
//! store, not in memory, past the last repair window (`Journal::release_frame`,
//! `JOURNAL_APPLIED_FRAMES_IN_MEMORY_OPS`). It is bounded two ways (the bytes are the
//! frames', wherever they are held):
//! - entries: a replica never journals an op above `checkpoint + journal_ops_max`
//!   (a primary does not prepare it, a backup drops it unacknowledged: repair or a
//!   state transfer brings it later), and evicts ops at or below the checkpoint once
//!   over the entry cap;
//! - bytes: ops at or below the checkpoint are evicted once the frames held pass half
//!   the byte cap, and no new op is journaled at or above the byte cap.
//!
//! A peer serving a state transfer pins the ring above the op it is shipping (see
//! `transfer`), so the transfer connects when it lands; a pin never lets the ring grow
//! past twice its entry cap.
//!
//! Known limit: a partition's state is its retained log, so its checkpoint (and what a
//! transfer ships) is every retained message, written whole at each checkpoint. That
//! suits the simulator's partitions; a production node with large partitions should
//! checkpoint its segment files instead (`storage::segment`, `storage::install`), which
//! is not wired in yet.
//!
//! Encoding (little-endian, the codec of `crate::codec`):
//! `[magic "VCKP": u32][group: u64][op: u64][header: 256 bytes][state digest: u128]
//! [client table: bytes][state: bytes]`. The store and the transfer protect it with
//! their own checksums; decoding checks every field against the replica's own group.

use std::rc::Rc;

use super::StateMachine;
use super::client_table::ClientTable;
use super::constants::{CHECKPOINT_BYTES_MAX, CHECKPOINT_RETRY_TICKS, PIPELINE_PREPARES_MAX};
use super::replica::{CheckpointDigests, Replica};
use super::store::{ReplicaStore, StorageBreak, StoreError};
use crate::codec::{DecodeError, Reader, Writer};
use crate::wire::{Command, HEADER_BYTES, Header};

/// The magic of an encoded checkpoint ("VCKP"): bytes of any other kind fail at once.
const CHECKPOINT_MAGIC: u32 = u32::from_le_bytes(*b"VCKP");

/// Applied ops between checkpoints for a journal of `journal_ops_max` entries: the
/// ops above a checkpoint (this many, plus a pipeline in flight, plus a pipeline of
/// slack for a backup applying behind its primary) always fit the journal. For the
/// default 1,024 slots this is 960.
pub fn checkpoint_interval_ops(journal_ops_max: u64) -> u64 {
    journal_ops_max - 2 * PIPELINE_PREPARES_MAX as u64
}

/// Why checkpoint bytes were refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckpointError {
    /// A field did not decode.
    Decode(DecodeError),
    /// The magic is not a checkpoint's.
    BadMagic(u32),
    /// The checkpoint is another group's, or its header does not match its op.
    WrongGroupOrOp {
        /// What the checkpoint says.
        group: u64,
        /// Its op.
        op: u64,
        /// The header's op.
        header_op: u64,
    },
    /// The header does not verify or is not a prepare's.
    BadHeader,
    /// The state did not restore (the state machine refused it).
    State(DecodeError),
    /// The restored state's digest differs from the one recorded with it.
    DigestMismatch {
        /// Recorded.
        expected: u128,
        /// After restoring.
        actual: u128,
    },
    /// A transferred checkpoint could not be made durable here, so it was not
    /// installed (see [`Replica::install_transferred_checkpoint`]).
    NotDurable(StoreError),
}

impl std::fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckpointError::Decode(error) => write!(f, "checkpoint does not decode: {error}"),
            CheckpointError::BadMagic(magic) => write!(f, "not a checkpoint (magic {magic:#x})"),
            CheckpointError::WrongGroupOrOp { group, op, header_op } => write!(
                f,
                "checkpoint of group {group:#x} at op {op} carries the header of op {header_op} or is another group's"
            ),
            CheckpointError::BadHeader => write!(f, "checkpoint header does not verify or is not a prepare"),
            CheckpointError::State(error) => write!(f, "checkpoint state refused: {error}"),
            CheckpointError::DigestMismatch { expected, actual } => {
                write!(
                    f,
                    "restored state digest {actual:#x} differs from the recorded {expected:#x}"
                )
            }
            CheckpointError::NotDurable(error) => {
                write!(f, "transferred checkpoint not installed: writing it failed ({error})")
            }
        }
    }
}

impl std::error::Error for CheckpointError {}

impl From<DecodeError> for CheckpointError {
    fn from(error: DecodeError) -> Self {
        CheckpointError::Decode(error)
    }
}

/// A checkpoint's fields, decoded but not yet applied.
pub(crate) struct DecodedCheckpoint<'a> {
    pub header: Header,
    pub digest: u128,
    pub clients: ClientTable,
    pub state: &'a [u8],
}

/// Encode a checkpoint (see the module docs).
pub(crate) fn encode_checkpoint(group: u64, header: &Header, digest: u128, clients: &[u8], state: &[u8]) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(CHECKPOINT_MAGIC);
    w.u64(group);
    w.u64(header.op);
    w.raw(&header.to_bytes());
    w.u128(digest);
    w.bytes(clients);
    w.bytes(state);
    w.finish()
}

/// Decode a checkpoint of `group`, checking its framing and header (not its state).
pub(crate) fn decode_checkpoint(group: u64, bytes: &[u8]) -> Result<DecodedCheckpoint<'_>, CheckpointError> {
    let mut r = Reader::new(bytes);
    let magic = r.u32("checkpoint magic")?;
    if magic != CHECKPOINT_MAGIC {
        return Err(CheckpointError::BadMagic(magic));
    }
    let checkpoint_group = r.u64("checkpoint group")?;
    let op = r.u64("checkpoint op")?;
    let header_bytes = r.raw("checkpoint header", HEADER_BYTES)?;
    let header = Header::decode_verified(header_bytes).map_err(|_| CheckpointError::BadHeader)?;
    if header.command != Command::Prepare {
        return Err(CheckpointError::BadHeader);
    }
    if checkpoint_group != group || header.group != group || header.op != op {
        return Err(CheckpointError::WrongGroupOrOp {
            group: checkpoint_group,
            op,
            header_op: header.op,
        });
    }
    let digest = r.u128("checkpoint digest")?;
    let clients = ClientTable::decode(r.slice("checkpoint client table", CHECKPOINT_BYTES_MAX)?)?;
    let state = r.slice("checkpoint state", CHECKPOINT_BYTES_MAX)?;
    r.finish()?;
    Ok(DecodedCheckpoint {
        header,
        digest,
        clients,
        state,
    })
}

impl<S: StateMachine, T: ReplicaStore> Replica<S, T> {
    /// The checkpoint of this replica's state now (after `commit_min`).
    pub(crate) fn encode_checkpoint_now(&self) -> Vec<u8> {
        let header = self
            .journal
            .get(self.commit_min)
            .map(|entry| entry.header())
            .expect("the applied head stays in the journal");
        let state = self.state_machine.digest();
        let encoded = encode_checkpoint(
            self.config.group,
            &header,
            state,
            &self.clients.encode(),
            &self.state_machine.snapshot(),
        );
        self.last_encoded_checkpoint.set(Some(CheckpointDigests {
            op: self.commit_min,
            state,
            client_table: self.clients.digest(),
            bytes: encoded.len() as u64,
        }));
        encoded
    }

    /// The highest op this replica may journal: past it, the ops above its checkpoint
    /// would not fit the journal.
    pub(crate) fn op_prepare_max(&self) -> u64 {
        self.checkpoint_op + self.config.journal_ops_max
    }

    /// Whether a new op (above the head) may be journaled now.
    pub(crate) fn journal_has_room_for_new_op(&self, op: u64) -> bool {
        op <= self.op_prepare_max() && self.journal.frame_bytes() < self.config.journal_bytes_max
    }

    /// Take a checkpoint if enough was applied since the last one, then evict what the
    /// journal's bounds ask for. Runs after every input.
    pub(crate) fn maybe_checkpoint(&mut self) {
        // Every op above the durable checkpoint is in the journal or its records: a
        // floor above the checkpoint would leave a crash without the ops between.
        assert!(
            self.journal.floor() <= self.checkpoint_op,
            "replica {} group {:#x}: journal floor {} above the durable checkpoint {}",
            self.config.replica,
            self.config.group,
            self.journal.floor(),
            self.checkpoint_op
        );
        let interval =
            checkpoint_interval_ops(self.config.journal_ops_max).min(self.config.buggify.checkpoint_interval_ops_max);
        let due_by_ops = self.commit_min >= self.checkpoint_op + interval;
        let due_by_bytes = self.journal.floor() == self.checkpoint_op
            && self.journal.frame_bytes() >= self.config.journal_bytes_max / 2;
        if self.commit_min > self.checkpoint_op && (due_by_ops || due_by_bytes) && self.checkpoint_retry_wait_ticks == 0
        {
            self.take_checkpoint();
        }
        self.enforce_journal_bounds();
    }

    /// Make a checkpoint at `commit_min` durable; on success, ops at or below it may go.
    fn take_checkpoint(&mut self) {
        let op = self.commit_min;
        let bytes: Rc<[u8]> = Rc::from(self.encode_checkpoint_now());
        // On failure nothing is evicted: the journal keeps every op above the last
        // durable checkpoint, and new ops wait (the bound on the journal holds).
        if bytes.len() > CHECKPOINT_BYTES_MAX {
            // No peer could take it in a transfer and no boot could decode it: never
            // write it. The group stops taking new ops once its journal is full.
            tracing::warn!(
                replica = self.config.replica,
                group = self.config.group,
                op,
                bytes = bytes.len(),
                "checkpoint exceeds CHECKPOINT_BYTES_MAX ({CHECKPOINT_BYTES_MAX}); not taken"
            );
            self.stats.checkpoint_write_failures += 1;
            crate::cover!(CheckpointWriteFailed);
            self.checkpoint_retry_wait_ticks = CHECKPOINT_RETRY_TICKS;
            return;
        }
        self.make_checkpoint_durable(op, &bytes);
    }

    /// Make checkpoint `bytes` at `op` this replica's durable checkpoint and let the
    /// store forget what it covers; a refusal is counted and changes nothing.
    fn make_checkpoint_durable(&mut self, op: u64, bytes: &Rc<[u8]>) {
        match self.store.write_checkpoint(op, bytes) {
            Ok(()) => self.checkpoint_written(op, bytes.len()),
            Err(error) => {
                tracing::warn!(replica = self.config.replica, group = self.config.group, op, %error, "checkpoint write failed");
                self.stats.checkpoint_write_failures += 1;
                crate::cover!(CheckpointWriteFailed);
                self.checkpoint_retry_wait_ticks = CHECKPOINT_RETRY_TICKS;
            }
        }
    }

    /// Account for a checkpoint at `op` that the store has just made durable, and
    /// let go what it covers.
    fn checkpoint_written(&mut self, op: u64, bytes: usize) {
        tracing::debug!(
            replica = self.config.replica,
            group = self.config.group,
            op,
            bytes,
            "checkpoint written"
        );
        assert!(
            op >= self.checkpoint_op,
            "checkpoint {op} written below the durable {}",
            self.checkpoint_op
        );
        self.checkpoint_op = op;
        self.stats.checkpoints_written += 1;
        crate::cover!(CheckpointTaken);
        // The ring keeps ops below the checkpoint for peers a little behind, and the
        // store keeps their records as long as the ring keeps the ops (the journal
        // holds only the headers of applied ops, see `Journal::release_frame`): evict
        // what the ring's bounds let go now (the caller would at once), then let the
        // store forget what the ring did.
        self.enforce_journal_bounds();
        // Eviction lets the store forget what it evicted; a transfer's install moved
        // the floor itself, so tell the store here too (a repeat is a no-op: the WAL
        // plans a drop only when it frees bytes).
        if self.journal.floor() > 0 {
            self.store.discard_through(self.journal.floor());
        }
    }

    /// Evict ops at or below the checkpoint while the journal is over a bound, never
    /// above the op a served transfer ships (unless the pin would let the journal pass
    /// twice its entry cap: then the oldest pin goes and that transfer will be stale).
    pub(crate) fn enforce_journal_bounds(&mut self) {
        let entries_max = usize::try_from(self.config.journal_ops_max).unwrap_or(usize::MAX);
        let over_bytes = self.journal.frame_bytes() > self.config.journal_bytes_max / 2;
        if !(self.journal.len() > entries_max || over_bytes) || self.journal.floor() >= self.checkpoint_op {
            return;
        }
        while self.journal.len() > 2 * entries_max && self.release_oldest_pin() {}
        let limit = self.checkpoint_op.min(self.pinned_op().unwrap_or(u64::MAX));
        // Evict lowest first, only as far as needed: the ring keeps what it can.
        let mut target = self.journal.floor();
        let excess_entries = self.journal.len().saturating_sub(entries_max) as u64;
        if excess_entries > 0 {
            target = target.max(self.journal.floor() + excess_entries);
        }
        if over_bytes {
            // Bytes: drop everything the checkpoint covers (frames are not indexed by
            // size, and the byte bound is a safety net rather than the usual limit).
            target = limit;
        }
        let target = target.min(limit);
        if target <= self.journal.floor() {
            return;
        }
        // The new floor must be held: step down to the nearest held op.
        let Some(floor) = self
            .journal
            .range(self.journal.floor(), target)
            .map(|entry| entry.header().op)
            .next_back()
        else {
            return;
        };
        if floor > self.journal.floor() {
            let before = self.journal.len();
            self.journal.evict_below(floor);
            self.stats.ops_evicted += (before - self.journal.len()) as u64;
            // The records of evicted ops are no longer needed (the floor's state is the
            // durable checkpoint's, or older than it).
            self.store.discard_through(floor);
        }
    }

    /// Install checkpoint `bytes` from this replica's own store at boot (durable
    /// already): restore the state machine and client table and make the checkpoint's
    /// op the journal's floor and the applied head. Refused bytes change nothing.
    pub(crate) fn install_checkpoint(&mut self, bytes: &[u8]) -> Result<u64, CheckpointError> {
        self.install(bytes, None)
    }

    /// Install a checkpoint a peer transferred, as [`Replica::install_checkpoint`],
    /// but only once this replica's store has made it durable. The install moves the
    /// journal's floor to the checkpoint's op and the ops below it are never
    /// journaled here, so a replica that installed it only in memory and then crashed
    /// would boot from its older checkpoint without them, after having counted them as
    /// held (in a view change, or as the log below its acknowledged ops): seed
    /// 353000081's replica offered a log that had lost op 120. A refused write
    /// installs nothing; the transfer is abandoned and the catch-up asks again.
    pub(crate) fn install_transferred_checkpoint(&mut self, bytes: &Rc<[u8]>) -> Result<u64, CheckpointError> {
        let op = self.install(bytes, Some(bytes))?;
        self.checkpoint_written(op, bytes.len());
        Ok(op)
    }

    /// The install both paths share; `write_first` is the checkpoint to make durable
    /// after the state restored and before anything else changes.
    fn install(&mut self, bytes: &[u8], write_first: Option<&Rc<[u8]>>) -> Result<u64, CheckpointError> {
        let decoded = decode_checkpoint(self.config.group, bytes)?;
        let op = decoded.header.op;
        assert!(
            op > self.commit_min,
            "installing checkpoint {op} at or below applied {}",
            self.commit_min
        );
        // A write can fail after the state machine took the new state; the state it
        // had goes back then, so a refusal leaves the replica as it was.
        let write_first = write_first.map(|durable| (durable, self.state_machine.snapshot()));
        self.state_machine
            .restore(decoded.state)
            .map_err(CheckpointError::State)?;
        let actual = self.state_machine.digest();
        if actual != decoded.digest {
            // The state machine accepted bytes whose digest is not the recorded one: the
            // checkpoint is not what its sender applied. Nothing else has changed, but
            // the state has: that is a bug in `restore` or the encoding, never a fault.
            panic!(
                "replica {} group {:#x}: checkpoint at op {op} restored to digest {actual:#x}, recorded {:#x}",
                self.config.replica, self.config.group, decoded.digest
            );
        }
        if let Some((durable, previous)) = write_first
            && let Err(error) = self.store.write_checkpoint(op, durable)
        {
            tracing::warn!(replica = self.config.replica, group = self.config.group, op, %error, "transferred checkpoint write failed");
            self.stats.checkpoint_write_failures += 1;
            crate::cover!(TransferNotDurable);
            // The state machine's own snapshot restores, or `snapshot` and
            // `restore` disagree: a bug, never a fault.
            let restored = self.state_machine.restore(&previous);
            assert!(
                restored.is_ok(),
                "replica {} group {:#x}: own snapshot refused on restore: {restored:?}",
                self.config.replica,
                self.config.group
            );
            return Err(CheckpointError::NotDurable(error));
        }
        if self.config.storage_break != StorageBreak::InstallCheckpointWithoutClientTable {
            self.clients = decoded.clients;
        }
        self.journal.reset_floor(decoded.header);
        self.commit_min = op;
        self.commit_max = self.commit_max.max(op);
        self.last_timestamp = self.last_timestamp.max(decoded.header.timestamp);
        self.chain_dirty = true;
        self.repair_buffer = self.repair_buffer.split_off(&(op + 1));
        Ok(op)
    }
}

/// Property tests of [`decode_checkpoint`] (bytes from a disk, and from a peer in a
/// state transfer): any bytes give a typed [`CheckpointError`] or a checkpoint that
/// re-encodes to exactly those bytes, never a panic, and the two length-prefixed
/// fields are bounded by `CHECKPOINT_BYTES_MAX` before anything is read from them. The
/// checkpoint's own header is verified; its other bytes are covered by the store's and
/// the transfer's checksums, so damage there may decode here (canonically): catching
/// it is those checksums' job.
#[cfg(test)]
mod proptests {
    use proptest::prelude::*;
    use proptest::sample::Index;

    use super::*;
    use crate::testing::proptest_support::{config, damage};

    const GROUP: u64 = 0x7_0000_0003;

    /// The prepare header of checkpoint op `op`.
    fn prepare(op: u64, view: u64, parent: u128) -> Header {
        let mut header = Header::new(Command::Prepare);
        header.group = GROUP;
        header.op = op;
        header.view = view;
        header.parent = parent;
        header
    }

    /// A checkpoint's parts: header, digest, client table bytes, state.
    fn checkpoint() -> impl Strategy<Value = (Header, u128, Vec<u8>, Vec<u8>)> {
        (
            (
                0..=crate::wire::OP_MAX,
                0..=crate::wire::VIEW_MAX,
                any::<u128>(),
                any::<u128>(),
            ),
            prop::collection::btree_map(
                any::<u128>(),
                (any::<u64>(), prop::collection::vec(any::<u8>(), 0..32)),
                0..4,
            ),
            prop::collection::vec(any::<u8>(), 0..256),
        )
            .prop_map(|((op, view, parent, digest), clients, state)| {
                let mut table = ClientTable::default();
                for (client, (request, reply)) in clients {
                    table.record(client, request, op, reply, None);
                }
                (prepare(op, view, parent), digest, table.encode(), state)
            })
    }

    /// Decode and re-encode: `Ok` only if the checkpoint is exactly `bytes` again.
    fn check_canonical(bytes: &[u8]) -> Result<(), TestCaseError> {
        if let Ok(decoded) = decode_checkpoint(GROUP, bytes) {
            let again = encode_checkpoint(
                GROUP,
                &decoded.header,
                decoded.digest,
                &decoded.clients.encode(),
                decoded.state,
            );
            prop_assert!(
                again == bytes,
                "a checkpoint decoded from bytes that are not its encoding"
            );
            prop_assert_eq!(decoded.header.checksum, decoded.header.compute_checksum());
            prop_assert_eq!(decoded.header.command, Command::Prepare);
            prop_assert_eq!(decoded.header.group, GROUP);
        }
        Ok(())
    }

    /// `[varint]` as the codec writes a length.
    fn varint(value: u64) -> Vec<u8> {
        let mut w = Writer::new();
        w.varint(value);
        w.finish()
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn checkpoints_round_trip_through_their_encoding((header, digest, clients, state) in checkpoint()) {
            let bytes = encode_checkpoint(GROUP, &header, digest, &clients, &state);
            let decoded = decode_checkpoint(GROUP, &bytes).expect("a checkpoint's own bytes decode");
            prop_assert_eq!(decoded.header, Header { checksum: header.compute_checksum(), ..header });
            prop_assert_eq!(decoded.digest, digest);
            prop_assert_eq!(decoded.clients.encode(), clients);
            prop_assert_eq!(decoded.state, &state[..]);
            // Another group's replica refuses it.
            let refused = decode_checkpoint(GROUP + 1, &bytes).err();
            prop_assert!(matches!(refused, Some(CheckpointError::WrongGroupOrOp { .. })), "{refused:?}");
        }

        #[test]
        fn random_bytes_never_panic_the_checkpoint_decoder(input in prop::collection::vec(any::<u8>(), 0..1024)) {
            prop_assert!(decode_checkpoint(GROUP, &input).is_err());
            // Behind the right magic the bytes reach the header and length checks.
            let led = [&CHECKPOINT_MAGIC.to_le_bytes()[..], &input].concat();
            check_canonical(&led)?;
        }

        #[test]
        fn a_damaged_checkpoint_decodes_to_an_error_or_to_exactly_its_bytes(
            (header, digest, clients, state) in checkpoint(),
            (how, at, bit) in (any::<u8>(), any::<Index>(), 0u8..8),
            other in prop::collection::vec(any::<u8>(), 0..48),
        ) {
            let bytes = encode_checkpoint(GROUP, &header, digest, &clients, &state);
            let damaged = damage(&bytes, how, at, bit, &other);
            check_canonical(&damaged)?;
            let header_bytes = 4 + 8 + 8..4 + 8 + 8 + HEADER_BYTES;
            if how % 3 == 0 && header_bytes.contains(&at.index(bytes.len())) {
                prop_assert!(decode_checkpoint(GROUP, &damaged).is_err(), "a flipped header bit went unnoticed");
            }
            if how % 3 == 1 {
                prop_assert!(decode_checkpoint(GROUP, &damaged).is_err(), "a cut checkpoint decoded");
            }
        }

        #[test]
        fn checkpoint_lengths_beyond_checkpoint_bytes_max_are_refused_before_allocating(
            (header, digest, _, _) in checkpoint(),
            claim in (CHECKPOINT_BYTES_MAX as u64 + 1)..=u64::MAX,
            within in 1..=CHECKPOINT_BYTES_MAX as u64,
            tail in prop::collection::vec(any::<u8>(), 0..16),
        ) {
            // CHECKPOINT_BYTES_MAX (256 MiB) bounds both length-prefixed fields. A claim
            // within it over too few bytes is truncated: the fields are borrowed from the
            // input, never copied from a claimed length.
            let prefix = encode_checkpoint(GROUP, &header, digest, &[], &[]);
            let fixed = &prefix[..prefix.len() - 2];
            let too_long = [fixed, &varint(claim), &tail].concat();
            let refused = decode_checkpoint(GROUP, &too_long).err();
            prop_assert!(
                matches!(refused, Some(CheckpointError::Decode(DecodeError::TooLong { field: "checkpoint client table", .. }))),
                "{refused:?}"
            );
            // An empty client table is one byte (its count): a field of length 1.
            let too_long = [fixed, &[1, 0], &varint(claim), &tail].concat();
            let refused = decode_checkpoint(GROUP, &too_long).err();
            prop_assert!(
                matches!(refused, Some(CheckpointError::Decode(DecodeError::TooLong { field: "checkpoint state", .. }))),
                "{refused:?}"
            );
            let short = [fixed, &[1, 0], &varint(within.max(tail.len() as u64 + 1)), &tail].concat();
            let refused = decode_checkpoint(GROUP, &short).err();
            prop_assert!(
                matches!(refused, Some(CheckpointError::Decode(DecodeError::Truncated { .. }))),
                "{refused:?}"
            );
        }
    }
}
