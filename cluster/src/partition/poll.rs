//! Polling messages: a query the primary answers from its applied state, without a
//! consensus round (see `StateMachine::is_query`).
//!
//! Models: the request ([`PollRequest`]: from which offset, how many), the rule (every
//! retained message at or above the offset, in offset order, at most
//! `min(count, POLL_MESSAGES_MAX)` messages and [`POLL_REPLY_PAYLOAD_BYTES_MAX`] payload
//! bytes), and the reply ([`PollReply`]: the log's next offset and the messages). A
//! request below the oldest retained offset starts at the oldest retained message, so
//! a consumer that fell behind retention sees the gap in the offsets it gets back
//! rather than an empty answer it cannot tell from "caught up".
//!
//! Codecs: a request is `[POLL_MESSAGES_CODE][offset: u64][count: u32]`, led by its
//! operation code like every partition op so that a body sent as the wrong operation
//! never decodes. A reply is `[next offset: u64][message count: varint]` then per
//! message `[offset: u64][timestamp: u64][id: u128][payload: varint length + bytes]`.
//! Integers are little-endian; every byte must be used; decoding is canonical.
//!
//! Does not model: consumer offsets (a poll does not store one; the consumer commits
//! with `StoreConsumerOffset`), or long polls. (Reads stay linearizable across a view
//! change: the primary answers only once a quorum confirmed it still leads, see
//! `vsr::query`.)

use super::log::{MessageRef, PartitionLog, READ_MESSAGES_MAX};
use super::ops::{OPERATION_CODE_MIN, PAYLOAD_BYTES_MAX};
use crate::codec::{DecodeError, Reader, Writer};
use crate::wire::{FRAME_BYTES_MAX, HEADER_BYTES};

/// The operation code of a poll. A query, never committed: appended after the
/// committed ops' codes (64..=69) and never renumbered.
pub const POLL_MESSAGES_CODE: u8 = OPERATION_CODE_MIN + 6;

/// Most messages one poll returns, whatever is asked. A poll is served by the primary
/// on the same single-threaded shard that drives replication and costs no consensus,
/// so nothing but this bound stops a client from making the primary copy the whole
/// log per request; 100 keeps that work to a small fraction of a tick while a consumer
/// still drains a full batch in a few round trips.
pub const POLL_MESSAGES_MAX: usize = 100;

/// Most payload bytes in one poll reply: the same half frame as a batch
/// (`BATCH_BYTES_MAX`), so a full reply plus its per-message overhead and the frame
/// header fits a 1 MiB frame with room to spare (checked below at compile time).
pub const POLL_REPLY_PAYLOAD_BYTES_MAX: usize = 512 * 1024;

/// Most bytes a polled message adds to a reply besides its payload: offset (8),
/// timestamp (8), id (16) and a payload length varint (3 bytes cover
/// [`PAYLOAD_BYTES_MAX`], 64 KiB < 2^21).
const POLLED_MESSAGE_OVERHEAD_BYTES_MAX: usize = 8 + 8 + 16 + 3;

/// Most bytes of a reply before its messages: next offset (8) and a message count
/// varint (1 byte covers [`POLL_MESSAGES_MAX`] < 128).
const POLL_REPLY_PREFIX_BYTES_MAX: usize = 8 + 1;

// A largest message always fits in a reply on its own, so a poll at a retained offset
// with a nonzero count always makes progress.
const _: () = assert!(PAYLOAD_BYTES_MAX <= POLL_REPLY_PAYLOAD_BYTES_MAX);
// The largest reply, in a frame, fits the frame bound.
const _: () = assert!(
    HEADER_BYTES
        + POLL_REPLY_PREFIX_BYTES_MAX
        + POLL_MESSAGES_MAX * POLLED_MESSAGE_OVERHEAD_BYTES_MAX
        + POLL_REPLY_PAYLOAD_BYTES_MAX
        <= FRAME_BYTES_MAX
);
// The count varint is one byte, as the prefix bound assumes.
const _: () = assert!(POLL_MESSAGES_MAX < 0x80);
// A poll never asks the log for more than a read gives.
const _: () = assert!(POLL_MESSAGES_MAX <= READ_MESSAGES_MAX);

/// A poll: messages from `offset` on, at most `count` of them (capped at
/// [`POLL_MESSAGES_MAX`]; 0 answers no messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PollRequest {
    /// The first offset wanted.
    pub offset: u64,
    /// The most messages wanted.
    pub count: u32,
}

impl PollRequest {
    /// `[POLL_MESSAGES_CODE][offset][count]`.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u8(POLL_MESSAGES_CODE);
        w.u64(self.offset);
        w.u32(self.count);
        w.finish()
    }

    /// The inverse of [`PollRequest::encode`]; every byte must be used.
    pub fn decode(bytes: &[u8]) -> Result<PollRequest, DecodeError> {
        let mut r = Reader::new(bytes);
        let code = r.u8("operation code")?;
        if code != POLL_MESSAGES_CODE {
            return Err(DecodeError::UnknownCode {
                field: "operation code",
                code,
            });
        }
        let request = PollRequest {
            offset: r.u64("poll offset")?,
            count: r.u32("poll count")?,
        };
        r.finish()?;
        Ok(request)
    }
}

/// One message as a poll returns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolledMessage {
    /// Its offset in the partition.
    pub offset: u64,
    /// The timestamp of the prepare that appended it, in microseconds.
    pub timestamp_micros: u64,
    /// The producer's id.
    pub id: u128,
    /// The bytes, at most [`PAYLOAD_BYTES_MAX`].
    pub payload: Vec<u8>,
}

impl From<MessageRef<'_>> for PolledMessage {
    fn from(message: MessageRef<'_>) -> Self {
        PolledMessage {
            offset: message.offset,
            timestamp_micros: message.timestamp_micros,
            id: message.id,
            payload: message.payload.to_vec(),
        }
    }
}

/// Bytes [`encode_message`] writes for a message with `payload_len` bytes of payload.
fn encoded_message_bytes(payload_len: usize) -> usize {
    8 + 8 + 16 + Writer::len_bytes(payload_len) + payload_len
}

/// Bytes a poll reply of these payload lengths takes: `[next offset][count][messages]`.
fn encoded_reply_bytes(payload_lens: impl Iterator<Item = usize>, count: usize) -> usize {
    8 + Writer::len_bytes(count) + payload_lens.map(encoded_message_bytes).sum::<usize>()
}

/// One polled message's encoding, `[offset][timestamp][id][payload]`: a
/// [`PolledMessage`]'s, and a stored message's when a reply is encoded straight from
/// the log.
fn encode_message(w: &mut Writer, offset: u64, timestamp_micros: u64, id: u128, payload: &[u8]) {
    w.u64(offset);
    w.u64(timestamp_micros);
    w.u128(id);
    w.bytes(payload);
}

impl PolledMessage {
    /// `[offset][timestamp][id][payload]`.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        self.encode_into(&mut w);
        w.finish()
    }

    /// The inverse of [`PolledMessage::encode`]; every byte must be used.
    pub fn decode(bytes: &[u8]) -> Result<PolledMessage, DecodeError> {
        let mut r = Reader::new(bytes);
        let message = Self::decode_from(&mut r)?;
        r.finish()?;
        Ok(message)
    }

    fn encode_into(&self, w: &mut Writer) {
        encode_message(w, self.offset, self.timestamp_micros, self.id, &self.payload);
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<PolledMessage, DecodeError> {
        Ok(PolledMessage {
            offset: r.u64("message offset")?,
            timestamp_micros: r.u64("message timestamp")?,
            id: r.u128("message id")?,
            payload: r.bytes("message payload", PAYLOAD_BYTES_MAX)?,
        })
    }
}

/// The answer to a poll.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PollReply {
    /// The log's next offset when the poll was answered (its high-water mark): a
    /// consumer whose position reaches it has read everything appended so far.
    pub next_offset: u64,
    /// Consecutive offsets, all below `next_offset`, at most [`POLL_MESSAGES_MAX`]
    /// messages and [`POLL_REPLY_PAYLOAD_BYTES_MAX`] payload bytes.
    pub messages: Vec<PolledMessage>,
}

impl PollReply {
    /// Answer `request` from `log` (see the module documentation for the rule).
    pub fn from_log(log: &PartitionLog, request: &PollRequest) -> PollReply {
        PollReply {
            next_offset: log.next_offset(),
            messages: Self::selected(log, request)
                .into_iter()
                .map(PolledMessage::from)
                .collect(),
        }
    }

    /// The messages of `log` that answer `request`, by the module documentation's rule.
    fn selected<'a>(log: &'a PartitionLog, request: &PollRequest) -> Vec<MessageRef<'a>> {
        let limit = usize::try_from(request.count)
            .unwrap_or(usize::MAX)
            .min(POLL_MESSAGES_MAX);
        let start = request.offset.max(log.oldest_offset());
        let mut payload_bytes = 0usize;
        let mut messages = log.read(start, limit);
        let within = messages
            .iter()
            .take_while(|message| {
                payload_bytes += message.payload.len();
                payload_bytes <= POLL_REPLY_PAYLOAD_BYTES_MAX
            })
            .count();
        messages.truncate(within);
        messages
    }

    /// `PollReply::from_log(log, request).encode()`, written straight from the log's
    /// messages: the replica's query path, which would otherwise copy every payload
    /// once into the reply and again into its encoding.
    pub fn encode_from_log(log: &PartitionLog, request: &PollRequest) -> Vec<u8> {
        let messages = Self::selected(log, request);
        let mut w = Writer::with_capacity(encoded_reply_bytes(
            messages.iter().map(|message| message.payload.len()),
            messages.len(),
        ));
        w.u64(log.next_offset());
        w.len(messages.len());
        for message in messages {
            encode_message(
                &mut w,
                message.offset,
                message.timestamp_micros,
                message.id,
                message.payload,
            );
        }
        let bytes = w.finish();
        debug_assert_eq!(bytes.len(), bytes.capacity(), "the reply's size was computed exactly");
        bytes
    }

    /// `[next offset][message count][messages]`.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(encoded_reply_bytes(
            self.messages.iter().map(|message| message.payload.len()),
            self.messages.len(),
        ));
        w.u64(self.next_offset);
        w.len(self.messages.len());
        for message in &self.messages {
            message.encode_into(&mut w);
        }
        w.finish()
    }

    /// The inverse of [`PollReply::encode`]; every byte must be used. Refuses a reply
    /// over its bounds, with offsets that are not consecutive (the retained log is
    /// contiguous: retention, segment deletion and purge all drop a prefix), or with a
    /// message at or above `next_offset`.
    pub fn decode(bytes: &[u8]) -> Result<PollReply, DecodeError> {
        let mut r = Reader::new(bytes);
        let next_offset = r.u64("next offset")?;
        let count = r.len("polled message count", POLL_MESSAGES_MAX)?;
        let mut messages: Vec<PolledMessage> = Vec::with_capacity(count);
        let mut payload_bytes = 0usize;
        for _ in 0..count {
            let message = PolledMessage::decode_from(&mut r)?;
            payload_bytes += message.payload.len();
            if payload_bytes > POLL_REPLY_PAYLOAD_BYTES_MAX {
                return Err(DecodeError::TooLong {
                    field: "poll reply payload bytes",
                    len: payload_bytes as u64,
                    max: POLL_REPLY_PAYLOAD_BYTES_MAX as u64,
                });
            }
            if let Some(previous) = messages.last()
                && previous.offset.checked_add(1) != Some(message.offset)
            {
                return Err(DecodeError::InvalidState {
                    what: "polled offsets not consecutive",
                });
            }
            if message.offset >= next_offset {
                return Err(DecodeError::InvalidState {
                    what: "polled offset at or above next offset",
                });
            }
            messages.push(message);
        }
        r.finish()?;
        Ok(PollReply { next_offset, messages })
    }
}
