//! [`ShadowPartition`]: what the shadow knows of one partition's replicated state, and
//! [`ShadowLog`]: its messages, with exactly as much certainty as a client can have.
//!
//! Models: every message by offset (id, payload checksum and length, and the timestamp
//! of the prepare that appended it, read from the `Appended` reply header), the next
//! offset (always exact: one client writes a partition, one request at a time),
//! consumer offsets, each consumer group's owner and the owners it had before.
//!
//! What is not predictable, and how it is modelled: messages leave the log only as a
//! prefix (retention drops expired sealed segments at every applied op of a partition
//! with a message expiry; `DeleteSegments` drops sealed segments the client cannot
//! count; `Purge` drops everything), and the newest message is never dropped except by
//! a purge (the active segment is never dropped). So the shadow keeps a *floor*, the
//! first offset possibly retained (everything below it is certainly gone), and whether
//! the floor is *exact* (the cluster's oldest retained offset is the floor). A purge
//! sets an exact floor at the next offset; a deletion that dropped something or any
//! applied op of an expiring partition makes it inexact; a poll that reveals where the
//! retained log starts makes it exact again. It never guesses a segment boundary.
//!
//! Does not model: segments themselves (their boundaries are the cluster's business),
//! or timestamps of ops other than appends.

use std::collections::{BTreeMap, VecDeque};

use cluster::partition::{
    ConsumerKey, GroupOwner, Message, POLL_MESSAGES_MAX, POLL_REPLY_PAYLOAD_BYTES_MAX, PartitionState, PollReply,
    PollRequest,
};

use crate::executor::Fnv1a64;

/// Former owners remembered per consumer group (the most recent ones): enough for a
/// stale write to pick a real former owner, bounded so a long run does not grow it.
pub const FORMER_OWNERS_KEPT_MAX: usize = 8;

/// One message as the shadow knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShadowMessage {
    /// The producer's id.
    pub id: u128,
    /// FNV-1a-64 of the payload.
    pub checksum: u64,
    /// Payload bytes (polls stop at a payload byte budget).
    pub len: usize,
    /// The timestamp of the prepare that appended it.
    pub timestamp_micros: u64,
}

impl ShadowMessage {
    /// What the cluster answered or holds: a message `id` with `payload`, appended at
    /// `timestamp_micros`.
    pub fn observed(id: u128, payload: &[u8], timestamp_micros: u64) -> Self {
        Self {
            id,
            checksum: payload_checksum(payload),
            len: payload.len(),
            timestamp_micros,
        }
    }

    /// The shadow's record of `message`, appended at `timestamp_micros`.
    pub fn of(message: &Message, timestamp_micros: u64) -> Self {
        Self {
            id: message.id,
            checksum: payload_checksum(&message.payload),
            len: message.payload.len(),
            timestamp_micros,
        }
    }
}

/// FNV-1a-64 of a payload: what the shadow keeps instead of the bytes.
pub fn payload_checksum(payload: &[u8]) -> u64 {
    let mut hash = Fnv1a64::default();
    hash.write(payload);
    hash.finish()
}

/// A partition's messages as far as a client can know them. See the module docs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShadowLog {
    /// Messages at offsets `floor..next_offset`, in offset order.
    messages: VecDeque<ShadowMessage>,
    /// Every offset below is certainly gone from the cluster's log.
    floor: u64,
    /// Whether the cluster's oldest retained offset is `floor` (else it is somewhere in
    /// `floor..next_offset`, or `next_offset` when nothing is retained).
    floor_exact: bool,
}

/// What a poll must answer, computed from the shadow when the poll is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollExpectation {
    /// No messages (the offset is at or past the end, the count is 0, or nothing is
    /// retained from the offset on).
    Nothing,
    /// At least one message: the newest one is always retained.
    Messages,
}

impl Default for ShadowLog {
    fn default() -> Self {
        Self::new()
    }
}

impl ShadowLog {
    /// An empty log: nothing appended, nothing dropped.
    pub fn new() -> Self {
        Self {
            messages: VecDeque::new(),
            floor: 0,
            floor_exact: true,
        }
    }

    /// The log a partition came back with after an outage: `messages` at consecutive
    /// offsets from `floor`, which is exactly where the retained log starts.
    pub fn recovered(floor: u64, messages: Vec<ShadowMessage>) -> Self {
        Self {
            messages: messages.into(),
            floor,
            floor_exact: true,
        }
    }

    /// The offset the next message gets.
    pub fn next_offset(&self) -> u64 {
        // usize -> u64 is lossless on every supported target.
        self.floor + self.messages.len() as u64
    }

    /// The first offset possibly retained.
    pub fn floor(&self) -> u64 {
        self.floor
    }

    /// Whether the cluster's oldest retained offset is known to be the floor.
    pub fn floor_exact(&self) -> bool {
        self.floor_exact
    }

    /// The message at `offset`, if the shadow holds it (at or above the floor).
    pub fn message(&self, offset: u64) -> Option<&ShadowMessage> {
        let index = usize::try_from(offset.checked_sub(self.floor)?).ok()?;
        self.messages.get(index)
    }

    /// Messages possibly retained.
    pub fn possibly_retained(&self) -> usize {
        self.messages.len()
    }

    /// Fold in an appended batch: `messages` at `base_offset..`, stamped `timestamp_micros`.
    pub fn append(&mut self, messages: &[Message], timestamp_micros: u64) {
        self.messages.extend(
            messages
                .iter()
                .map(|message| ShadowMessage::of(message, timestamp_micros)),
        );
    }

    /// Fold in that an op was applied: with a message expiry, retention may have
    /// dropped expired sealed segments at it.
    pub fn applied(&mut self, message_expiry_micros: u64) {
        if message_expiry_micros > 0 {
            self.floor_exact = false;
        }
    }

    /// Fold in a purge: everything is gone and the oldest retained offset is the next.
    pub fn purge(&mut self) {
        self.raise_floor(self.next_offset());
        self.floor_exact = true;
    }

    /// Fold in that `DeleteSegments` dropped `count` segments: how many messages that
    /// was is the cluster's business.
    pub fn segments_deleted(&mut self, count: u32) {
        if count > 0 {
            self.floor_exact = false;
        }
    }

    /// Raise the floor to `offset` (never lowers it), forgetting the messages below.
    fn raise_floor(&mut self, offset: u64) {
        while self.floor < offset && self.messages.pop_front().is_some() {
            self.floor += 1;
        }
    }

    /// What a poll of `request` must answer now.
    pub fn expect_poll(&self, request: &PollRequest) -> PollExpectation {
        if request.count == 0 || request.offset.max(self.floor) >= self.next_offset() {
            PollExpectation::Nothing
        } else {
            PollExpectation::Messages
        }
    }

    /// How many messages a poll of `request` answered from `first` on returns: up to
    /// the count (capped at `POLL_MESSAGES_MAX`), the payload byte budget, and the end.
    fn expected_poll_len(&self, request: &PollRequest, first: u64) -> usize {
        let limit = usize::try_from(request.count)
            .unwrap_or(usize::MAX)
            .min(POLL_MESSAGES_MAX);
        let Some(skip) = first
            .checked_sub(self.floor)
            .and_then(|skip| usize::try_from(skip).ok())
        else {
            return 0;
        };
        let mut payload_bytes = 0usize;
        self.messages
            .iter()
            .skip(skip)
            .take(limit)
            .take_while(|message| {
                payload_bytes += message.len;
                payload_bytes <= POLL_REPLY_PAYLOAD_BYTES_MAX
            })
            .count()
    }

    /// Judge a poll reply against the shadow and learn where the retained log starts.
    /// Every difference is returned, worded for a failure.
    ///
    /// Checks: the next offset is the shadow's; no message below the floor; with an
    /// exact floor, the first message is at `max(offset, floor)`; every message is
    /// the one the shadow holds at its offset (id, payload, timestamp); the count is
    /// what the request, the caps and the retained messages allow. (The reply decoder
    /// already refused offsets that are not consecutive or not below its next offset.)
    pub fn judge_poll(&mut self, request: &PollRequest, reply: &PollReply) -> Vec<String> {
        let mut differences = Vec::new();
        let next = self.next_offset();
        if reply.next_offset != next {
            differences.push(format!(
                "the poll answered next offset {}, the shadow holds {next}",
                reply.next_offset
            ));
        }
        let Some(first) = reply.messages.first().map(|message| message.offset) else {
            return differences;
        };
        let start = request.offset.max(self.floor);
        if first < start {
            differences.push(format!(
                "the poll from offset {} started at {first}, below the first offset possibly retained ({start})",
                request.offset
            ));
            return differences;
        }
        if self.floor_exact && first != start {
            differences.push(format!(
                "the poll from offset {} started at {first}; the retained log starts at {} (nothing could have dropped more)",
                request.offset, self.floor
            ));
        }
        for polled in &reply.messages {
            let Some(expected) = self.message(polled.offset) else {
                differences.push(format!(
                    "the poll returned offset {}, which the shadow never saw committed (next offset {next})",
                    polled.offset
                ));
                continue;
            };
            let actual = ShadowMessage::observed(polled.id, &polled.payload, polled.timestamp_micros);
            if actual != *expected {
                differences.push(format!(
                    "the poll returned at offset {} {actual:?}, the shadow holds {expected:?}",
                    polled.offset
                ));
            }
        }
        let expected_len = self.expected_poll_len(request, first);
        if reply.messages.len() != expected_len {
            differences.push(format!(
                "the poll from offset {} (count {}) returned {} messages from offset {first}; the shadow expects {expected_len}",
                request.offset,
                request.count,
                reply.messages.len()
            ));
        }
        // first = max(offset, oldest retained): when first > offset, or offset <= floor
        // <= oldest, first IS the oldest retained offset. (Learn only from an answer
        // that passed: a wrong answer must not move the shadow.)
        if differences.is_empty() && (first > request.offset || request.offset <= self.floor) {
            self.raise_floor(first);
            self.floor_exact = true;
        }
        differences
    }

    /// Compare with the cluster's log: next offset, where the retained log starts, and
    /// every retained message. Returns the messages compared; differences are pushed.
    pub fn compare(&self, state: &PartitionState, differences: &mut Vec<String>) -> u64 {
        let log = state.log();
        let next = self.next_offset();
        if log.next_offset() != next {
            differences.push(format!("next offset: shadow {next}, cluster {}", log.next_offset()));
        }
        let oldest = log.oldest_offset();
        if oldest < self.floor {
            differences.push(format!(
                "the cluster retains offset {oldest}, below the shadow's floor {} (purged or revealed gone)",
                self.floor
            ));
        }
        if self.floor_exact && oldest != self.floor {
            differences.push(format!(
                "the cluster's log starts at {oldest}, the shadow's exactly at {}",
                self.floor
            ));
        }
        if next > self.floor && oldest >= next {
            differences.push(format!(
                "the cluster retains nothing, but the newest message (offset {}) is never dropped",
                next - 1
            ));
        }
        let mut compared = 0;
        for message in log.segments().iter().flat_map(|segment| segment.messages()) {
            let actual = ShadowMessage::observed(message.id, message.payload, message.timestamp_micros);
            match self.message(message.offset) {
                Some(expected) if *expected == actual => compared += 1,
                Some(expected) => differences.push(format!(
                    "message at offset {}: shadow {expected:?}, cluster {actual:?}",
                    message.offset
                )),
                None => differences.push(format!(
                    "the cluster retains offset {}, which the shadow does not hold",
                    message.offset
                )),
            }
        }
        compared
    }
}

/// One partition as the shadow sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShadowPartition {
    /// Its id within the topic.
    pub id: u32,
    /// The VSR group replicating it.
    pub group: u64,
    /// The message expiry it was created with (0 = forever).
    pub message_expiry_micros: u64,
    /// Its messages.
    pub log: ShadowLog,
    /// Stored consumer offsets.
    pub offsets: BTreeMap<ConsumerKey, u64>,
    /// Each consumer group's owner of this partition, by group id.
    pub owners: BTreeMap<u32, GroupOwner>,
    /// Owners each group had before its current one, most recent last (at most
    /// [`FORMER_OWNERS_KEPT_MAX`]).
    pub former_owners: BTreeMap<u32, Vec<GroupOwner>>,
    /// The offset from which its topic has been `persisted` without a break (`None`:
    /// the topic is `replicated`). What a whole-cluster power outage must leave (see
    /// `workload::outage`).
    pub persisted_from: Option<u64>,
    /// Whether its topic has been `persisted` since the partition was created: then
    /// an outage must leave all of it, consumer offsets and owners included.
    pub persisted_since_creation: bool,
}

impl ShadowPartition {
    /// A new, empty partition.
    pub fn new(id: u32, group: u64, message_expiry_micros: u64) -> Self {
        Self {
            id,
            group,
            message_expiry_micros,
            log: ShadowLog::new(),
            offsets: BTreeMap::new(),
            owners: BTreeMap::new(),
            former_owners: BTreeMap::new(),
            persisted_from: None,
            persisted_since_creation: false,
        }
    }

    /// Hand group `group_id` to `owner`, remembering the owner it replaces.
    pub fn set_owner(&mut self, group_id: u32, owner: GroupOwner) {
        if let Some(former) = self.owners.insert(group_id, owner) {
            let formers = self.former_owners.entry(group_id).or_default();
            formers.push(former);
            if formers.len() > FORMER_OWNERS_KEPT_MAX {
                formers.remove(0);
            }
        }
    }

    /// Whether a group offset write by `member_id` at `generation` passes the owner
    /// fence: the group has no owner, or the writer is the owner at its generation.
    pub fn fence_allows(&self, group_id: u32, member_id: u32, generation: u64) -> bool {
        self.owners
            .get(&group_id)
            .is_none_or(|owner| owner.member_id == member_id && owner.generation == generation)
    }

    /// Compare with the cluster's partition state. Returns (messages, offsets, owners)
    /// compared; differences are pushed.
    pub fn compare(&self, state: &PartitionState, differences: &mut Vec<String>) -> (u64, u64, u64) {
        if state.message_expiry_micros() != self.message_expiry_micros {
            differences.push(format!(
                "message expiry: shadow {}, cluster {}",
                self.message_expiry_micros,
                state.message_expiry_micros()
            ));
        }
        let messages = self.log.compare(state, differences);
        let offsets: BTreeMap<ConsumerKey, u64> = state.consumer_offsets().collect();
        if offsets != self.offsets {
            differences.push(format!(
                "consumer offsets: shadow {:?}, cluster {offsets:?}",
                self.offsets
            ));
        }
        let owners: BTreeMap<u32, GroupOwner> = state.group_owners().collect();
        if owners != self.owners {
            differences.push(format!("group owners: shadow {:?}, cluster {owners:?}", self.owners));
        }
        // usize -> u64 is lossless on every supported target.
        (messages, offsets.len() as u64, owners.len() as u64)
    }
}
