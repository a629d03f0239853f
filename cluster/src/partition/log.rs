//! The partition log, in memory: consecutive offsets, segments, a per-message index and
//! time-based retention.
//!
//! Models: every appended message gets the next offset (from 0) and keeps the prepare
//! header's timestamp; messages live in segments that roll every
//! [`SEGMENT_MESSAGES_MAX`] messages or [`SEGMENT_BYTES_MAX`] bytes; each segment keeps
//! a 24-byte index entry per message (offset, byte position within the segment,
//! timestamp) as a file-backed segment would; retention drops whole expired segments
//! from the front, never the active one; a purge empties the log without moving the
//! next offset; deleting segments drops the oldest sealed ones on request; reads serve
//! polls from local state.
//!
//! Does not model: files, fsync, the write-ahead log or its durable frontier, sparse
//! indexes, size-based retention, or state transfer of segments. Positions are those a
//! segment file would have, computed with [`MESSAGE_HEADER_BYTES`] per message.

use crate::codec::DecodeError;

/// Most messages in one segment before it rolls. Small so that retention, which drops
/// whole segments, frees space in steps a simulation can reach.
pub const SEGMENT_MESSAGES_MAX: usize = 1_000;

/// Most bytes (message headers plus payloads) in one segment before it rolls: 16 MiB,
/// so a segment file would stay small enough to copy in a state transfer quickly.
pub const SEGMENT_BYTES_MAX: u64 = 16 * 1024 * 1024;

/// Bytes a stored message occupies in a segment before its payload: offset (8),
/// timestamp (8), id (16), payload length (4).
pub const MESSAGE_HEADER_BYTES: u64 = 36;

/// Bytes of one index entry: offset, position, timestamp, each a little-endian u64.
pub const INDEX_ENTRY_BYTES: usize = 24;

/// Most messages one read returns, whatever is asked: bounds the work of a poll, which
/// a replica serves without consensus.
pub const READ_MESSAGES_MAX: usize = 1_000;

/// One message, owned: what a segment file or a checkpoint decodes to, before the log
/// takes it in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredMessage {
    /// Its offset in the partition.
    pub offset: u64,
    /// The timestamp of the prepare that appended it, in microseconds.
    pub timestamp_micros: u64,
    /// The producer's id.
    pub id: u128,
    /// The bytes.
    pub payload: Vec<u8>,
}

impl StoredMessage {
    /// Bytes it occupies in a segment.
    pub fn stored_bytes(&self) -> u64 {
        MESSAGE_HEADER_BYTES + self.payload.len() as u64
    }
}

/// One message as the log hands it out: its payload borrowed from the segment's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageRef<'a> {
    /// Its offset in the partition.
    pub offset: u64,
    /// The timestamp of the prepare that appended it, in microseconds.
    pub timestamp_micros: u64,
    /// The producer's id.
    pub id: u128,
    /// The bytes.
    pub payload: &'a [u8],
}

impl MessageRef<'_> {
    /// An owned copy.
    pub fn to_owned(&self) -> StoredMessage {
        StoredMessage {
            offset: self.offset,
            timestamp_micros: self.timestamp_micros,
            id: self.id,
            payload: self.payload.to_vec(),
        }
    }
}

/// What a segment keeps of a message besides its payload bytes; the offset is the
/// segment's base plus the message's position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    id: u128,
    timestamp_micros: u64,
    /// Where its payload ends in the segment's payload buffer (it starts where the
    /// previous message's ends).
    payload_end: usize,
}

/// One index entry: where a message sits in its segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    /// The message's offset.
    pub offset: u64,
    /// Its byte position within the segment.
    pub position: u64,
    /// Its timestamp in microseconds.
    pub timestamp_micros: u64,
}

/// `[offset][position][timestamp]`, little-endian.
pub fn encode_index_entry(entry: &IndexEntry) -> [u8; INDEX_ENTRY_BYTES] {
    let mut out = [0u8; INDEX_ENTRY_BYTES];
    out[0..8].copy_from_slice(&entry.offset.to_le_bytes());
    out[8..16].copy_from_slice(&entry.position.to_le_bytes());
    out[16..24].copy_from_slice(&entry.timestamp_micros.to_le_bytes());
    out
}

/// The inverse of [`encode_index_entry`]; `bytes` must be exactly one entry.
pub fn decode_index_entry(bytes: &[u8]) -> Result<IndexEntry, DecodeError> {
    if bytes.len() > INDEX_ENTRY_BYTES {
        return Err(DecodeError::TrailingBytes {
            count: bytes.len() - INDEX_ENTRY_BYTES,
        });
    }
    let field = |start: usize, name: &'static str| -> Result<u64, DecodeError> {
        let mut raw = [0u8; 8];
        let slice = bytes.get(start..start + 8).ok_or(DecodeError::Truncated {
            field: name,
            offset: start,
        })?;
        raw.copy_from_slice(slice);
        Ok(u64::from_le_bytes(raw))
    };
    Ok(IndexEntry {
        offset: field(0, "index offset")?,
        position: field(8, "index position")?,
        timestamp_micros: field(16, "index timestamp")?,
    })
}

/// A run of consecutive messages with its index.
///
/// Representation: the payloads of all its messages sit end to end in one buffer, and
/// each message keeps a fixed-size slot (id, timestamp, where its payload ends). A
/// message costs no allocation of its own, which is where applying a batch spent a
/// third of its time (a `Vec` per payload, allocated on apply and freed at retention).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    base_offset: u64,
    slots: Vec<Slot>,
    payloads: Vec<u8>,
    index: Vec<u8>,
}

impl Segment {
    fn new(base_offset: u64) -> Self {
        Self {
            base_offset,
            slots: Vec::new(),
            payloads: Vec::new(),
            index: Vec::new(),
        }
    }

    /// The offset of its first message (or of the next one, when empty).
    pub fn base_offset(&self) -> u64 {
        self.base_offset
    }

    /// How many messages it holds.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether it holds no message (only a new or purged log's sole segment).
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Its `position`-th message.
    pub fn message(&self, position: usize) -> Option<MessageRef<'_>> {
        self.messages_from(position).next()
    }

    /// Its messages, in offset order, from its `position`-th on.
    pub fn messages_from(&self, position: usize) -> impl ExactSizeIterator<Item = MessageRef<'_>> + '_ {
        let mut start = position.checked_sub(1).map_or(0, |previous| {
            self.slots
                .get(previous)
                .map_or(self.payloads.len(), |slot| slot.payload_end)
        });
        let skip = position.min(self.slots.len());
        self.slots[skip..].iter().enumerate().map(move |(i, slot)| {
            let payload = &self.payloads[start..slot.payload_end];
            start = slot.payload_end;
            MessageRef {
                offset: self.base_offset + (skip + i) as u64,
                timestamp_micros: slot.timestamp_micros,
                id: slot.id,
                payload,
            }
        })
    }

    /// Its messages, in offset order.
    pub fn messages(&self) -> impl ExactSizeIterator<Item = MessageRef<'_>> + '_ {
        self.messages_from(0)
    }

    /// Its size as a segment file would have it, in bytes.
    pub fn bytes(&self) -> u64 {
        MESSAGE_HEADER_BYTES * self.slots.len() as u64 + self.payloads.len() as u64
    }

    /// The raw index: [`INDEX_ENTRY_BYTES`] per message.
    pub fn index_bytes(&self) -> &[u8] {
        &self.index
    }

    /// The index entry of its `position`-th message.
    pub fn index_entry(&self, position: usize) -> Option<IndexEntry> {
        let start = position.checked_mul(INDEX_ENTRY_BYTES)?;
        let bytes = self.index.get(start..start.checked_add(INDEX_ENTRY_BYTES)?)?;
        decode_index_entry(bytes).ok()
    }

    /// The offset after its last message (its base when empty); `None` past `u64::MAX`,
    /// which only a decoded layout can claim.
    fn end_offset(&self) -> Option<u64> {
        self.base_offset.checked_add(self.slots.len() as u64)
    }

    fn newest_timestamp_micros(&self) -> Option<u64> {
        self.slots.last().map(|slot| slot.timestamp_micros)
    }

    fn has_room_for(&self, stored_bytes: u64) -> bool {
        self.slots.is_empty()
            || (self.slots.len() < SEGMENT_MESSAGES_MAX && self.bytes() + stored_bytes <= SEGMENT_BYTES_MAX)
    }

    /// Append the message at offset [`Segment::end_offset`].
    fn push(&mut self, timestamp_micros: u64, id: u128, payload: &[u8]) {
        let entry = IndexEntry {
            offset: self.base_offset + self.slots.len() as u64,
            position: self.bytes(),
            timestamp_micros,
        };
        self.index.extend_from_slice(&encode_index_entry(&entry));
        self.payloads.extend_from_slice(payload);
        self.slots.push(Slot {
            id,
            timestamp_micros,
            payload_end: self.payloads.len(),
        });
    }
}

/// The log: segments in offset order, the last one active. Never empty of segments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionLog {
    segments: Vec<Segment>,
    next_offset: u64,
}

impl Default for PartitionLog {
    fn default() -> Self {
        Self::new()
    }
}

impl PartitionLog {
    /// An empty log whose first message will get offset 0.
    pub fn new() -> Self {
        Self {
            segments: vec![Segment::new(0)],
            next_offset: 0,
        }
    }

    /// The offset the next appended message gets.
    pub fn next_offset(&self) -> u64 {
        self.next_offset
    }

    /// The oldest offset still retained (equal to `next_offset` when nothing is).
    pub fn oldest_offset(&self) -> u64 {
        self.segments.first().map_or(self.next_offset, Segment::base_offset)
    }

    /// The segments, oldest first; the last is the active one.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Append one message at `next_offset`, rolling the active segment if it is full.
    /// Returns its offset.
    pub fn append(&mut self, timestamp_micros: u64, id: u128, payload: &[u8]) -> u64 {
        let offset = self.next_offset;
        let stored_bytes = MESSAGE_HEADER_BYTES + payload.len() as u64;
        let fits = self
            .segments
            .last()
            .is_some_and(|active| active.has_room_for(stored_bytes));
        if !fits {
            self.segments.push(Segment::new(offset));
        }
        if let Some(active) = self.segments.last_mut() {
            debug_assert_eq!(active.end_offset(), Some(offset));
            active.push(timestamp_micros, id, payload);
        }
        self.next_offset += 1;
        offset
    }

    /// Rebuild a log from a decoded layout: each segment's base offset and messages,
    /// oldest first, and the next offset. Accepts exactly the layouts that
    /// [`PartitionLog::append`], retention, purge and deletion produce, and rebuilds each
    /// segment by the same rules `append` fills one (so sizes and index entries are
    /// recomputed, never trusted): offsets consecutive from each base, each segment
    /// starting where the previous one ends, a segment started only when the previous one
    /// had no room for its first message, an empty segment only as a log's sole segment
    /// (a new or purged log), and `next_offset` the end of the last segment. The oldest
    /// retained segment's predecessor is gone, so nothing is said about its start.
    pub(super) fn from_layout(layout: Vec<(u64, Vec<StoredMessage>)>, next_offset: u64) -> Result<Self, DecodeError> {
        let invalid = |what| Err(DecodeError::InvalidState { what });
        let several = layout.len() > 1;
        let mut segments: Vec<Segment> = Vec::with_capacity(layout.len());
        for (base_offset, messages) in layout {
            if messages.is_empty() && several {
                return invalid("an empty segment beside others (only a new or purged log has one, alone)");
            }
            if let Some(previous) = segments.last() {
                if previous.end_offset() != Some(base_offset) {
                    return invalid("a segment does not start where the previous one ends");
                }
                if let Some(first) = messages.first()
                    && previous.has_room_for(first.stored_bytes())
                {
                    return invalid("a segment starts although the previous one had room for its first message");
                }
            }
            let mut segment = Segment::new(base_offset);
            for message in messages {
                if segment.end_offset() != Some(message.offset) {
                    return invalid("message offsets are not consecutive from their segment's base");
                }
                if !segment.has_room_for(message.stored_bytes()) {
                    return invalid("a segment holds more than append puts in one before rolling");
                }
                segment.push(message.timestamp_micros, message.id, &message.payload);
            }
            segments.push(segment);
        }
        let Some(active) = segments.last() else {
            return invalid("a log without segments (even an empty log has its active segment)");
        };
        if active.end_offset() != Some(next_offset) {
            return invalid("the next offset is not the end of the last segment");
        }
        Ok(Self { segments, next_offset })
    }

    /// Drop whole segments from the front whose newest message is older than
    /// `now_micros - expiry_micros`, never the active segment. `expiry_micros == 0`
    /// keeps everything. Stops at the first segment kept, so the retained log stays
    /// contiguous even if timestamps ever step back across views. Returns how many
    /// segments were dropped.
    pub fn apply_retention(&mut self, now_micros: u64, expiry_micros: u64) -> usize {
        if expiry_micros == 0 {
            return 0;
        }
        let cutoff = now_micros.saturating_sub(expiry_micros);
        let droppable = self.segments.len().saturating_sub(1);
        let expired = self.segments[..droppable]
            .iter()
            .take_while(|s| s.newest_timestamp_micros().is_some_and(|newest| newest < cutoff))
            .count();
        self.segments.drain(..expired);
        expired
    }

    /// Drop every message, keeping `next_offset`: the log becomes one empty active
    /// segment based at `next_offset`, so the next append continues the offsets and no
    /// offset is ever handed out twice. Returns how many messages were dropped.
    pub fn purge(&mut self) -> u64 {
        let dropped = self.next_offset - self.oldest_offset();
        self.segments = vec![Segment::new(self.next_offset)];
        dropped
    }

    /// Drop up to `count` of the oldest sealed segments, never the active (last) one,
    /// so the log always keeps a segment to append to and its base offset. Returns how
    /// many were dropped (at most `count`).
    pub fn delete_oldest_segments(&mut self, count: usize) -> usize {
        let sealed = self.segments.len().saturating_sub(1);
        let dropped = count.min(sealed);
        self.segments.drain(..dropped);
        dropped
    }

    /// Up to `max_messages` (and at most [`READ_MESSAGES_MAX`]) messages from `offset`
    /// on. Nothing below the oldest retained offset or at or after `next_offset`.
    pub fn read(&self, offset: u64, max_messages: usize) -> Vec<MessageRef<'_>> {
        if offset < self.oldest_offset() || offset >= self.next_offset {
            return Vec::new();
        }
        let limit = max_messages.min(READ_MESSAGES_MAX);
        let first = self
            .segments
            .partition_point(|s| s.base_offset <= offset)
            .saturating_sub(1);
        let skip = usize::try_from(offset - self.segments[first].base_offset).unwrap_or(usize::MAX);
        let mut messages = Vec::with_capacity(limit.min((self.next_offset - offset) as usize));
        for (i, segment) in self.segments[first..].iter().enumerate() {
            let from = if i == 0 { skip } else { 0 };
            messages.extend(segment.messages_from(from).take(limit - messages.len()));
            if messages.len() == limit {
                break;
            }
        }
        messages
    }
}
