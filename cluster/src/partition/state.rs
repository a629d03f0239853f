//! [`PartitionState`]: what one partition's VSR group agrees on, and the rules that
//! change it.
//!
//! Models: the log ([`PartitionLog`]), consumer offsets keyed by [`ConsumerKey`], and
//! each consumer group's owner fence (member and generation). Applying is a pure
//! function of the state, the op and its [`ApplyContext`] (the prepare's timestamp and
//! op number), so replicas compare equal by [`PartitionState::digest`], a hash of a
//! canonical encoding of everything. [`PartitionState::decode_state`] is that
//! encoding's exact inverse, for checkpoints and state transfer: it accepts only bytes
//! `encode_state` produces for a state `apply` can reach.
//!
//! Rules and choices:
//! - Retention runs at the start of every apply, at the prepare's timestamp, so every
//!   replica drops the same segments at the same op.
//! - A group offset write (store or delete) is checked against the owner fence before
//!   the offset itself: a stale member learns nothing about the log.
//! - A group with no owner yet accepts a write from any member at any generation and
//!   records no owner: ownership is only ever set by `SetGroupOwner`, never implied.
//! - `SetGroupOwner` on a group with no owner treats the current generation as 0, so
//!   generation 0 is refused.
//! - Deleting a missing offset is `Ok` and changes nothing: which replicas hold an
//!   offset is not agreed, so a committed delete cannot require it to exist.
//! - `Purge` and `DeleteSegments` drop messages only: the next offset, consumer offsets
//!   and owners stay, so offsets are never reused and a stored offset may point below
//!   the oldest retained message (a poll from there starts at the oldest retained one).
//! - [`OwnerFence::DisabledForTest`] switches the owner fence off, for simulator tests
//!   only; it is not part of the digest.
//!
//! Does not model: request deduplication (watermarks), the metadata plane's view of
//! groups and members, or durability.

use std::collections::BTreeMap;

use super::log::{PartitionLog, SEGMENT_MESSAGES_MAX, StoredMessage};
use super::ops::{BATCH_BYTES_MAX, Consumer, ConsumerKey, MESSAGES_PER_BATCH_MAX, PartitionOp};
use super::poll::{PollReply, PollRequest};
use super::reply::PartitionReply;
use crate::codec::{DecodeError, Reader, Writer};

/// Most segments a decoded state may claim, in segments: 16 Mi. Every sealed segment
/// holds at least 36,000 stored bytes (it rolled at [`SEGMENT_MESSAGES_MAX`] messages of
/// at least 36 bytes each, or near 16 MiB), so this many is over 600 GB of messages,
/// more than a replica holding its log in memory can have. Nothing is allocated from
/// the count: segments are built as they are read, so a lying count costs only the
/// bytes actually present.
pub const SNAPSHOT_SEGMENTS_MAX: usize = 1 << 24;

/// Most consumer offsets a decoded state may claim, in entries: the whole key space
/// (single and group consumers, each a u32 id). `apply` caps nothing here, so any tighter
/// bound could refuse a state that replicas really reached and stall its state transfer.
/// Strictly ascending keys make a larger count impossible anyway; nothing is allocated
/// from the count.
pub const SNAPSHOT_CONSUMER_OFFSETS_MAX: usize = (u32::MAX as usize).saturating_add(1).saturating_mul(2);

/// Most group owners a decoded state may claim, in entries: every u32 group id, for the
/// same reason as [`SNAPSHOT_CONSUMER_OFFSETS_MAX`] (`SetGroupOwner` caps nothing, and
/// owners are never removed).
pub const SNAPSHOT_GROUP_OWNERS_MAX: usize = (u32::MAX as usize).saturating_add(1);

/// Tags of [`ConsumerKey`] in the state encoding, in key order (single before group).
const CONSUMER_KEY_SINGLE: u8 = 1;
const CONSUMER_KEY_GROUP: u8 = 2;

/// What the primary fixed for one op, read from its prepare header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApplyContext {
    /// The prepare's timestamp: appended messages get it, and retention is measured by it.
    pub timestamp_micros: u64,
    /// The op number. Carried for diagnostics and future deduplication watermarks; no
    /// rule reads it today, so it is not part of the state.
    pub op_number: u64,
}

/// A consumer group's owner of this partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupOwner {
    /// The owning member.
    pub member_id: u32,
    /// The generation it owns at.
    pub generation: u64,
}

/// Whether group offset writes are checked against the group's owner.
///
/// **TEST ONLY: production code must always pass [`OwnerFence::Enforced`].**
/// [`OwnerFence::DisabledForTest`] exists so a simulator test can break the fence on
/// purpose and prove that the workload's check of it is load-bearing (a check that
/// still passes with the fence off proves nothing). With the fence disabled, a stale
/// member's write overwrites the group's offset: exactly the bug the fence prevents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnerFence {
    /// A group offset write must come from the owner at its generation. Always this
    /// outside tests.
    Enforced,
    /// **Test only:** every group offset write is allowed, whoever sends it. Not part
    /// of the digest, so replicas that differ only in this compare equal by digest.
    DisabledForTest,
}

/// The refusal a batch of `messages` messages holding `payload_bytes` in all gets
/// whatever the state: empty, or over the batch bounds. The primary answers such a
/// request without preparing it; applying one (an op prepared by a primary that did
/// not) refuses it the same way.
pub(super) fn batch_refusal_of(messages: usize, payload_bytes: usize) -> Option<PartitionReply> {
    if messages == 0 {
        return Some(PartitionReply::EmptyBatch);
    }
    (messages > MESSAGES_PER_BATCH_MAX || payload_bytes > BATCH_BYTES_MAX).then_some(PartitionReply::BatchTooLarge)
}

/// One partition's replicated state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionState {
    log: PartitionLog,
    consumer_offsets: BTreeMap<ConsumerKey, u64>,
    group_owners: BTreeMap<u32, GroupOwner>,
    message_expiry_micros: u64,
    fence: OwnerFence,
}

impl PartitionState {
    /// An empty partition whose messages expire after `message_expiry_micros` (0 = never).
    /// `fence` must be [`OwnerFence::Enforced`] outside tests.
    pub fn new(message_expiry_micros: u64, fence: OwnerFence) -> Self {
        Self {
            log: PartitionLog::new(),
            consumer_offsets: BTreeMap::new(),
            group_owners: BTreeMap::new(),
            message_expiry_micros,
            fence,
        }
    }

    /// The log (polls read it directly).
    pub fn log(&self) -> &PartitionLog {
        &self.log
    }

    /// The offset the next message gets.
    pub fn next_offset(&self) -> u64 {
        self.log.next_offset()
    }

    /// A consumer's stored offset.
    pub fn consumer_offset(&self, key: ConsumerKey) -> Option<u64> {
        self.consumer_offsets.get(&key).copied()
    }

    /// A group's owner, if it has one.
    pub fn group_owner(&self, group_id: u32) -> Option<GroupOwner> {
        self.group_owners.get(&group_id).copied()
    }

    /// Every stored consumer offset, in key order.
    pub fn consumer_offsets(&self) -> impl Iterator<Item = (ConsumerKey, u64)> + '_ {
        self.consumer_offsets.iter().map(|(key, offset)| (*key, *offset))
    }

    /// Every group owner, in group id order.
    pub fn group_owners(&self) -> impl Iterator<Item = (u32, GroupOwner)> + '_ {
        self.group_owners.iter().map(|(group_id, owner)| (*group_id, *owner))
    }

    /// Whether the owner fence is enforced (always, outside tests).
    pub fn fence(&self) -> OwnerFence {
        self.fence
    }

    /// Answer a poll from the retained log (a query: changes nothing).
    pub fn poll(&self, request: &PollRequest) -> PollReply {
        PollReply::from_log(&self.log, request)
    }

    /// [`PartitionState::poll`]'s reply, encoded (without a copy of the payloads).
    pub fn poll_encoded(&self, request: &PollRequest) -> Vec<u8> {
        PollReply::encode_from_log(&self.log, request)
    }

    /// The message expiry this partition was created with.
    pub fn message_expiry_micros(&self) -> u64 {
        self.message_expiry_micros
    }

    /// Apply one committed op.
    pub fn apply(&mut self, op: &PartitionOp, context: &ApplyContext) -> PartitionReply {
        self.log
            .apply_retention(context.timestamp_micros, self.message_expiry_micros);
        match *op {
            PartitionOp::SendMessages { ref messages } => {
                let payload_bytes = messages.iter().map(|m| m.payload.len()).sum();
                self.send_batch(messages.len(), payload_bytes, context, |log, timestamp_micros| {
                    for message in messages {
                        log.append(timestamp_micros, message.id, &message.payload);
                    }
                })
            }
            PartitionOp::StoreConsumerOffset { consumer, offset } => {
                if let Err(reply) = self.check_owner(&consumer) {
                    return reply;
                }
                let next_offset = self.log.next_offset();
                if offset > next_offset {
                    return PartitionReply::OffsetBeyondLog { next_offset };
                }
                self.consumer_offsets.insert(consumer.key(), offset);
                PartitionReply::Ok
            }
            PartitionOp::DeleteConsumerOffset { consumer } => {
                if let Err(reply) = self.check_owner(&consumer) {
                    return reply;
                }
                self.consumer_offsets.remove(&consumer.key());
                PartitionReply::Ok
            }
            PartitionOp::SetGroupOwner {
                group_id,
                member_id,
                generation,
            } => {
                let current = self.group_owners.get(&group_id).map_or(0, |owner| owner.generation);
                if generation <= current {
                    return PartitionReply::StaleGeneration;
                }
                self.group_owners.insert(group_id, GroupOwner { member_id, generation });
                PartitionReply::Ok
            }
            PartitionOp::Purge => {
                self.log.purge();
                PartitionReply::Ok
            }
            PartitionOp::DeleteSegments { count } => {
                let wanted = usize::try_from(count).unwrap_or(usize::MAX);
                let dropped = self.log.delete_oldest_segments(wanted);
                PartitionReply::SegmentsDeleted {
                    // dropped <= count, a u32.
                    count: u32::try_from(dropped).unwrap_or(count),
                }
            }
        }
    }

    /// Apply a committed op from its encoded `body`, whose header names `operation`:
    /// what [`PartitionState::apply`] of the decoded op does, with a batch's payloads
    /// copied straight from `body` into the log (the replica's path: no message is
    /// decoded into a buffer of its own first). `None` for a body that does not decode
    /// to an op of `operation`, which changes nothing.
    pub fn apply_encoded(&mut self, operation: u8, body: &[u8], context: &ApplyContext) -> Option<PartitionReply> {
        let shape = PartitionOp::decode_shape(body).ok()?;
        if shape.operation != operation {
            return None;
        }
        let Some((messages, payload_bytes)) = shape.batch else {
            let op = PartitionOp::decode(body).ok()?;
            return Some(self.apply(&op, context));
        };
        self.log
            .apply_retention(context.timestamp_micros, self.message_expiry_micros);
        Some(
            self.send_batch(messages, payload_bytes, context, |log, timestamp_micros| {
                let visited = PartitionOp::visit_batch(body, |id, payload| {
                    log.append(timestamp_micros, id, payload);
                });
                debug_assert!(visited.is_ok(), "a body decode_shape accepted visits whole");
            }),
        )
    }

    /// Append a batch of `messages` holding `payload_bytes` (`append_all` appends each
    /// to the log, stamped with the given time), or refuse it whole by the batch bounds.
    fn send_batch(
        &mut self,
        messages: usize,
        payload_bytes: usize,
        context: &ApplyContext,
        append_all: impl FnOnce(&mut PartitionLog, u64),
    ) -> PartitionReply {
        if let Some(refusal) = batch_refusal_of(messages, payload_bytes) {
            return refusal;
        }
        let base_offset = self.log.next_offset();
        append_all(&mut self.log, context.timestamp_micros);
        let appended = self.log.next_offset() - base_offset;
        assert_eq!(appended, messages as u64, "a batch appends every message it holds");
        PartitionReply::Appended {
            base_offset,
            last_offset: self.log.next_offset() - 1,
        }
    }

    /// The owner fence: a group write must come from the owner at its generation.
    /// Always allows with [`OwnerFence::DisabledForTest`].
    fn check_owner(&self, consumer: &Consumer) -> Result<(), PartitionReply> {
        if self.fence == OwnerFence::DisabledForTest {
            return Ok(());
        }
        let Consumer::Group {
            group_id,
            member_id,
            generation,
        } = *consumer
        else {
            return Ok(());
        };
        match self.group_owners.get(&group_id) {
            None => Ok(()),
            Some(owner) if owner.member_id == member_id && owner.generation == generation => Ok(()),
            Some(owner) => {
                crate::cover!(OwnerFenceRefused);
                Err(PartitionReply::StaleOwner {
                    current_generation: owner.generation,
                })
            }
        }
    }

    /// The canonical encoding of the whole state: expiry, next offset, every retained
    /// segment with its messages, offsets and owners in key order. The owner fence
    /// switch is left out: it is test configuration, not replicated state.
    pub fn encode_state(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u64(self.message_expiry_micros);
        w.u64(self.log.next_offset());
        w.list(self.log.segments().iter(), |w, segment| {
            w.u64(segment.base_offset());
            w.list(segment.messages(), |w, message| {
                w.u64(message.offset);
                w.u64(message.timestamp_micros);
                w.u128(message.id);
                w.bytes(message.payload);
            });
        });
        w.len(self.consumer_offsets.len());
        for (key, offset) in &self.consumer_offsets {
            match *key {
                ConsumerKey::Single(id) => {
                    w.u8(CONSUMER_KEY_SINGLE);
                    w.u32(id);
                }
                ConsumerKey::Group(id) => {
                    w.u8(CONSUMER_KEY_GROUP);
                    w.u32(id);
                }
            }
            w.u64(*offset);
        }
        w.len(self.group_owners.len());
        for (group_id, owner) in &self.group_owners {
            w.u32(*group_id);
            w.u32(owner.member_id);
            w.u64(owner.generation);
        }
        w.finish()
    }

    /// The exact inverse of [`PartitionState::encode_state`], with `fence` for the
    /// decoded state (the encoding leaves it out; pass [`OwnerFence::Enforced`] outside
    /// tests). Refuses every input `encode_state` would not have produced for a state
    /// `apply` can reach: a log layout `append` would not have made (see
    /// `PartitionLog::from_layout`), a payload above [`BATCH_BYTES_MAX`] (apply refuses
    /// larger batches), keys not strictly ascending, unknown consumer key tags, a
    /// consumer offset beyond the next offset, an owner at generation 0, counts above
    /// their bounds, trailing bytes. Last, the decoded state is encoded again and must
    /// give back `bytes`: the structural checks name what is wrong, this one guarantees
    /// a decoded state's digest is the digest of the bytes it came from. Never panics.
    pub fn decode_state(bytes: &[u8], fence: OwnerFence) -> Result<PartitionState, DecodeError> {
        let mut r = Reader::new(bytes);
        let message_expiry_micros = r.u64("message expiry")?;
        let next_offset = r.u64("next offset")?;
        // Segments are read into a layout and rebuilt by the log's own rules.
        let layout = decode_layout(&mut r)?;
        let log = PartitionLog::from_layout(layout, next_offset)?;

        let consumer_offsets = r.ascending_map(
            "consumer offset count",
            SNAPSHOT_CONSUMER_OFFSETS_MAX,
            "consumer offset key",
            |r| Ok((decode_consumer_key(r)?, r.u64("consumer offset")?)),
            |&offset| {
                // apply refuses an offset beyond the log, and the next offset never moves back.
                if offset > next_offset {
                    return Err(DecodeError::InvalidState {
                        what: "a consumer offset beyond the next offset",
                    });
                }
                Ok(())
            },
        )?;
        let group_owners = r.ascending_map(
            "group owner count",
            SNAPSHOT_GROUP_OWNERS_MAX,
            "group owner id",
            |r| {
                let group_id = r.u32("group owner id")?;
                let owner = GroupOwner {
                    member_id: r.u32("group owner member")?,
                    generation: r.u64("group owner generation")?,
                };
                Ok((group_id, owner))
            },
            |owner| {
                // SetGroupOwner treats a group without owner as generation 0 and needs more.
                if owner.generation == 0 {
                    return Err(DecodeError::InvalidState {
                        what: "a group owner at generation 0",
                    });
                }
                Ok(())
            },
        )?;
        r.finish()?;

        let state = PartitionState {
            log,
            consumer_offsets,
            group_owners,
            message_expiry_micros,
            fence,
        };
        if state.encode_state() != bytes {
            return Err(DecodeError::NonCanonical {
                field: "partition state",
            });
        }
        Ok(state)
    }

    /// A checksum of the whole state, for comparing replicas.
    pub fn digest(&self) -> u128 {
        crate::wire::checksum(&self.encode_state())
    }
}

/// The segments of a snapshot, `(base offset, messages)` each. The vector grows as
/// segments are read, never from the claimed count.
fn decode_layout(r: &mut Reader<'_>) -> Result<Vec<(u64, Vec<StoredMessage>)>, DecodeError> {
    let mut layout = Vec::new();
    for _ in 0..r.len("segment count", SNAPSHOT_SEGMENTS_MAX)? {
        let base_offset = r.u64("segment base offset")?;
        let messages = r.list("segment message count", SEGMENT_MESSAGES_MAX, |r| {
            Ok(StoredMessage {
                offset: r.u64("message offset")?,
                timestamp_micros: r.u64("message timestamp")?,
                id: r.u128("message id")?,
                payload: r.bytes("message payload", BATCH_BYTES_MAX)?,
            })
        })?;
        layout.push((base_offset, messages));
    }
    Ok(layout)
}

/// A consumer offset's key: its tag, then the consumer's or the group's id.
fn decode_consumer_key(r: &mut Reader<'_>) -> Result<ConsumerKey, DecodeError> {
    match r.u8("consumer key tag")? {
        CONSUMER_KEY_SINGLE => Ok(ConsumerKey::Single(r.u32("consumer id")?)),
        CONSUMER_KEY_GROUP => Ok(ConsumerKey::Group(r.u32("consumer group id")?)),
        code => Err(DecodeError::UnknownCode {
            field: "consumer key tag",
            code,
        }),
    }
}
