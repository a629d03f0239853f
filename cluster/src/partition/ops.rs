//! The operations one partition's VSR group replicates, and their binary codec.
//!
//! Models: appending a batch of messages, storing and deleting a consumer's offset,
//! fencing a consumer group's ownership of the partition (`SetGroupOwner`, which the
//! metadata plane will drive), purging every message, and deleting the oldest sealed
//! segments. The codec is versionless:
//! `[operation code: u8][fields]`, integers little-endian, counts and lengths as
//! LEB128 varints. Operation codes start at [`OPERATION_CODE_MIN`]; 0..63 belong to the
//! metadata plane, so a body sent to the wrong plane never decodes. The poll query's
//! code ([`super::POLL_MESSAGES_CODE`]) is a partition code too, but it is never a
//! committed op, so [`PartitionOp::decode`] refuses it.
//!
//! Does not model: whether an op is allowed (an offset beyond the log or a stale owner
//! decodes fine; the state machine answers it), who sent it (client and request number
//! live in the request header), or polls, which are queries served from the primary's
//! applied state without consensus (`poll.rs`).

use crate::codec::{DecodeError, Reader, WireField, WireTable, Writer, wire_table};

/// The first operation code of the partition plane. Codes below it are the metadata
/// plane's; codes are append-only and never renumbered.
pub const OPERATION_CODE_MIN: u8 = 64;

/// Most messages in one `SendMessages` batch. Bounds the per-op work of a replica and
/// the allocation a decoder makes for the message list.
pub const MESSAGES_PER_BATCH_MAX: usize = 1_000;

/// Largest payload of one message, in bytes. A single message must fit comfortably in
/// a frame (`wire::FRAME_BYTES_MAX`, 1 MiB) alongside its header.
pub const PAYLOAD_BYTES_MAX: usize = 64 * 1024;

/// Largest sum of payload bytes in one batch. Half a frame, so a full batch plus its
/// per-message overhead (at most ~20 bytes times [`MESSAGES_PER_BATCH_MAX`]) and the
/// 256-byte header always fit in one 1 MiB frame.
pub const BATCH_BYTES_MAX: usize = 512 * 1024;

const CODE_SEND_MESSAGES: u8 = OPERATION_CODE_MIN;
const CODE_STORE_CONSUMER_OFFSET: u8 = OPERATION_CODE_MIN + 1;
const CODE_DELETE_CONSUMER_OFFSET: u8 = OPERATION_CODE_MIN + 2;
const CODE_SET_GROUP_OWNER: u8 = OPERATION_CODE_MIN + 3;
const CODE_PURGE: u8 = OPERATION_CODE_MIN + 4;
const CODE_DELETE_SEGMENTS: u8 = OPERATION_CODE_MIN + 5;

/// Consumer kind bytes. 0 is deliberately unassigned so a zeroed or defaulted kind is
/// rejected rather than silently read as a single consumer.
const KIND_SINGLE: u8 = 1;
const KIND_GROUP: u8 = 2;

/// One message a producer sends: a client-chosen id and opaque bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// Client-chosen id (for deduplication by consumers; not checked here).
    pub id: u128,
    /// Opaque bytes, at most [`PAYLOAD_BYTES_MAX`].
    pub payload: Vec<u8>,
}

/// Who an offset belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Consumer {
    /// A standalone consumer, keyed by its id.
    Single {
        /// The consumer.
        consumer_id: u32,
    },
    /// A member of a consumer group, writing the group's offset.
    Group {
        /// The group (the offset's key).
        group_id: u32,
        /// The member claiming to own the partition.
        member_id: u32,
        /// The ownership generation the member believes current.
        generation: u64,
    },
}

/// The key a consumer's offset is stored under: a group's members share one offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ConsumerKey {
    /// A standalone consumer.
    Single(u32),
    /// A consumer group.
    Group(u32),
}

impl Consumer {
    /// The key its offset is stored under.
    pub fn key(&self) -> ConsumerKey {
        match *self {
            Consumer::Single { consumer_id } => ConsumerKey::Single(consumer_id),
            Consumer::Group { group_id, .. } => ConsumerKey::Group(group_id),
        }
    }
}

/// A consumer names its own parts in a [`DecodeError`], so the field label is unused.
impl WireField for Consumer {
    fn encode_field(&self, w: &mut Writer) {
        match *self {
            Consumer::Single { consumer_id } => {
                w.u8(KIND_SINGLE);
                w.u32(consumer_id);
            }
            Consumer::Group {
                group_id,
                member_id,
                generation,
            } => {
                w.u8(KIND_GROUP);
                w.u32(group_id);
                w.u32(member_id);
                w.u64(generation);
            }
        }
    }

    fn decode_field(r: &mut Reader<'_>, _field: &'static str) -> Result<Self, DecodeError> {
        match r.u8("consumer kind")? {
            KIND_SINGLE => Ok(Consumer::Single {
                consumer_id: r.u32("consumer id")?,
            }),
            KIND_GROUP => Ok(Consumer::Group {
                group_id: r.u32("group id")?,
                member_id: r.u32("member id")?,
                generation: r.u64("generation")?,
            }),
            code => Err(DecodeError::UnknownCode {
                field: "consumer kind",
                code,
            }),
        }
    }
}

/// What [`PartitionOp::decode_shape`] reads of a body: enough to validate a request
/// and to refuse a batch out of bounds, without the payloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpShape {
    /// The operation code the body decodes to.
    pub operation: u8,
    /// For a batch: its message count and total payload bytes.
    pub batch: Option<(usize, usize)>,
}

wire_table! {
    /// One partition operation, as proposed by the primary and applied by every replica.
    #[derive(Clone, PartialEq, Eq)]
    pub enum PartitionOp {
        code_label: "operation code",
        redacted: crate::codec::Redacted,
        /// The stable operation code (the header's `operation` byte).
        fn operation_code;
        variants: {
            /// Append a batch; replies `Appended` with the offsets it was given.
            SendMessages = CODE_SEND_MESSAGES => by_hand(encode_batch, decode_batch) {
                /// 1 to [`MESSAGES_PER_BATCH_MAX`] messages.
                messages: Vec<Message> = "message count",
            },
            /// Record where a consumer will read next (at most the log's next offset).
            StoreConsumerOffset = CODE_STORE_CONSUMER_OFFSET {
                /// Whose offset.
                consumer: Consumer = "consumer",
                /// The offset.
                offset: u64 = "offset",
            },
            /// Forget a consumer's offset; a missing one is fine.
            DeleteConsumerOffset = CODE_DELETE_CONSUMER_OFFSET {
                /// Whose offset.
                consumer: Consumer = "consumer",
            },
            /// Hand a group's ownership of this partition to a member at a newer generation.
            SetGroupOwner = CODE_SET_GROUP_OWNER {
                /// The group.
                group_id: u32 = "group id",
                /// The new owner.
                member_id: u32 = "member id",
                /// Must be above the current generation (0 when the group has no owner yet).
                generation: u64 = "generation",
            },
            /// Drop every retained message (every segment's contents). The next offset, the
            /// consumer offsets and the group owners are kept, so offsets are never reused and
            /// a consumer's stored position stays meaningful. Replies `Ok`.
            Purge = CODE_PURGE,
            /// Drop up to `count` of the oldest sealed segments, never the active (last) one.
            /// Replies `SegmentsDeleted` with how many were dropped (0 for `count` 0).
            DeleteSegments = CODE_DELETE_SEGMENTS {
                /// The most segments to drop.
                count: u32 = "segment count",
            },
        }
    }
}

impl PartitionOp {
    /// `[operation code][fields]`.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = match self {
            // `[code][count][id, payload]...`: sized up front, a batch can be large.
            PartitionOp::SendMessages { messages } => Writer::with_capacity(
                1 + Writer::len_bytes(messages.len())
                    + messages
                        .iter()
                        .map(|message| 16 + Writer::len_bytes(message.payload.len()) + message.payload.len())
                        .sum::<usize>(),
            ),
            _ => Writer::new(),
        };
        w.u8(self.operation_code());
        self.encode_fields(&mut w);
        let bytes = w.finish();
        debug_assert!(
            !matches!(self, PartitionOp::SendMessages { .. }) || bytes.len() == bytes.capacity(),
            "a batch's size was computed exactly"
        );
        bytes
    }

    /// The inverse of [`PartitionOp::encode`]; every byte must be used.
    pub fn decode(bytes: &[u8]) -> Result<PartitionOp, DecodeError> {
        Self::decode_tagged(bytes)
    }

    /// What [`PartitionOp::decode`] would give, without copying a batch's payloads: the
    /// operation code, and for a batch its message count and payload bytes. Accepts
    /// exactly the bodies `decode` accepts (it is the same decoder). The request path
    /// checks every body this way before preparing it, so a batch's payloads are
    /// copied only when a replica applies it.
    pub fn decode_shape(bytes: &[u8]) -> Result<OpShape, DecodeError> {
        let (mut messages, mut payload_bytes) = (0usize, 0usize);
        let op = Self::decode_visiting(bytes, |_, payload| {
            messages += 1;
            payload_bytes += payload.len();
        })?;
        Ok(OpShape {
            operation: op.operation_code(),
            batch: matches!(op, PartitionOp::SendMessages { .. }).then_some((messages, payload_bytes)),
        })
    }

    /// Hand each message of the batch `bytes` encodes to `on_message`, in order, its
    /// payload borrowed from `bytes`. Accepts exactly what [`PartitionOp::decode`]
    /// accepts; for a body of any other op it visits nothing.
    pub fn visit_batch(bytes: &[u8], on_message: impl FnMut(u128, &[u8])) -> Result<(), DecodeError> {
        Self::decode_visiting(bytes, on_message).map(|_| ())
    }

    /// Decode `bytes`, handing each message of a batch to `on_message` (in order, the
    /// payload borrowed from `bytes`) instead of keeping it: a batch comes back with no
    /// messages. Every other op is the table's.
    fn decode_visiting(bytes: &[u8], on_message: impl FnMut(u128, &[u8])) -> Result<PartitionOp, DecodeError> {
        let mut r = Reader::new(bytes);
        let op = match r.u8(Self::CODE_LABEL)? {
            CODE_SEND_MESSAGES => {
                visit_messages(&mut r, on_message)?;
                PartitionOp::SendMessages { messages: Vec::new() }
            }
            code => Self::decode_fields(code, &mut r)?,
        };
        r.finish()?;
        Ok(op)
    }

    /// A batch's fields: `[count][id, payload]...`.
    fn encode_batch(w: &mut Writer, messages: &[Message]) {
        w.len(messages.len());
        for message in messages {
            w.u128(message.id);
            w.bytes(&message.payload);
        }
    }

    /// The inverse of [`PartitionOp::encode_batch`], copying the payloads.
    fn decode_batch(r: &mut Reader<'_>) -> Result<PartitionOp, DecodeError> {
        let mut messages = Vec::new();
        visit_messages(r, |id, payload| {
            messages.push(Message {
                id,
                payload: payload.to_vec(),
            });
        })?;
        Ok(PartitionOp::SendMessages { messages })
    }
}

/// Read a batch's `[count][id, payload]...`, handing each message to `on_message` with
/// its payload borrowed from the input; the count is bounded before anything is read.
fn visit_messages<'a>(r: &mut Reader<'a>, mut on_message: impl FnMut(u128, &'a [u8])) -> Result<(), DecodeError> {
    let count = r.len("message count", MESSAGES_PER_BATCH_MAX)?;
    for _ in 0..count {
        let id = r.u128("message id")?;
        let payload = r.bytes_borrowed("message payload", PAYLOAD_BYTES_MAX)?;
        on_message(id, payload);
    }
    Ok(())
}

/// What a partition request with header `operation` needs on its stream `stream_id`
/// (see `metadata::authorize`): sends write; polls, offsets and owner hand-offs read;
/// purges and segment deletion manage the stream's topics. `None` for a code that is
/// no partition request (the replica refuses it as malformed).
pub fn need_of_operation(operation: u8, stream_id: u32) -> Option<crate::metadata::Need> {
    use crate::metadata::Need;
    match operation {
        CODE_SEND_MESSAGES => Some(Need::Write(stream_id)),
        CODE_STORE_CONSUMER_OFFSET | CODE_DELETE_CONSUMER_OFFSET | CODE_SET_GROUP_OWNER => Some(Need::Read(stream_id)),
        super::poll::POLL_MESSAGES_CODE => Some(Need::Read(stream_id)),
        CODE_PURGE | CODE_DELETE_SEGMENTS => Some(Need::ManageTopics(stream_id)),
        _ => None,
    }
}
