//! The bounds on how much metadata a cluster holds, and the [`Limit`] a reply names
//! when one is reached.
//!
//! Models: one named maximum per kind of entity, each with the reason for its value,
//! so the snapshot, the memory of every replica and the work of every op stay bounded.
//! Does not model: per-user quotas or rate limits, or bounds on message data (those
//! belong to the partition plane).

use crate::codec::{DecodeError, Reader, WireField, Writer};

/// Most streams in a cluster. Each stream holds topics and each topic at least one
/// partition (a VSR group of its own), so streams are few in practice; the bound keeps
/// the linear name checks and the snapshot small.
pub const STREAMS_MAX: usize = 1_024;

/// Most topics in one stream. Same reasoning as [`STREAMS_MAX`], one level down.
pub const TOPICS_PER_STREAM_MAX: usize = 1_024;

/// Most partitions in one topic. `CreateTopic` asking for more (or for zero), or
/// `CreatePartitions` that would grow a topic past it, is answered
/// `InvalidPartitionCount`. A partition's id must fit in the low `PARTITION_ID_BITS`
/// bits of its group id (asserted at compile time where group ids are made).
pub const PARTITIONS_PER_TOPIC_MAX: u32 = 1_024;

/// Most partitions in the whole cluster. Every partition is its own VSR group with a
/// journal, a prepare ring and timers on some shard, so this caps the consensus groups
/// a cluster hosts. It also bounds the topic count (every topic has a partition).
pub const PARTITIONS_TOTAL_MAX: u64 = 8_192;

/// Most consumer groups in one topic. Groups are cheap metadata, but each one owns
/// offsets on every partition of its topic.
pub const CONSUMER_GROUPS_PER_TOPIC_MAX: usize = 256;

/// Most members in one consumer group. Every join or leave bumps the group's
/// generation and makes its members rebalance the topic's partitions among
/// themselves, so a group far larger than a topic's partition count only adds idle
/// members and rebalance churn; 64 is well above any useful fan-out per topic while
/// keeping a group's snapshot entry and each membership check small.
pub const MEMBERS_PER_GROUP_MAX: usize = 64;

/// Most open sessions (one per client id that logged in). Every replica holds them in
/// its metadata state and snapshot, so they are bounded like any entity; 4,096 is far
/// above the clients a cluster like this serves at once. When full, a new client's
/// login closes the oldest session, whose client must log in again.
pub const SESSIONS_MAX: usize = 4_096;

/// Most users, root included. Logins scan users by name, and the bound keeps that scan
/// and the snapshot small.
pub const USERS_MAX: usize = 1_024;

/// Most personal access tokens one user holds. Logging in with a token scans every
/// user's tokens, so this and [`USERS_MAX`] bound that scan.
pub const TOKENS_PER_USER_MAX: usize = 32;

/// Most per-stream entries in one user's permissions: one per stream at most.
pub const PERMISSION_STREAMS_MAX: usize = STREAMS_MAX;

/// A bound that stopped an op. Carried by `MetadataReply::LimitReached`.
///
/// The byte each variant encodes to ([`Limit::code`]) is part of the wire contract:
/// append new variants with new codes, never renumber.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Limit {
    /// [`STREAMS_MAX`].
    Streams,
    /// [`TOPICS_PER_STREAM_MAX`].
    TopicsPerStream,
    /// [`PARTITIONS_TOTAL_MAX`].
    PartitionsTotal,
    /// [`CONSUMER_GROUPS_PER_TOPIC_MAX`].
    ConsumerGroupsPerTopic,
    /// [`USERS_MAX`].
    Users,
    /// [`TOKENS_PER_USER_MAX`].
    TokensPerUser,
    /// [`PERMISSION_STREAMS_MAX`].
    PermissionStreams,
    /// An id space is exhausted. Usually an id counter (u32): ids are never reused, so a
    /// scope that created four billion entities can create no more. Also answered by an
    /// op that would create partitions at an op number too large to form a partition
    /// group id (at or above `PARTITION_GROUP_OP_LIMIT`, far beyond any real log).
    Ids,
    /// [`MEMBERS_PER_GROUP_MAX`].
    MembersPerGroup,
}

impl Limit {
    /// Every limit, in code order.
    pub const ALL: [Limit; 9] = [
        Limit::Streams,
        Limit::TopicsPerStream,
        Limit::PartitionsTotal,
        Limit::ConsumerGroupsPerTopic,
        Limit::Users,
        Limit::TokensPerUser,
        Limit::PermissionStreams,
        Limit::Ids,
        Limit::MembersPerGroup,
    ];

    /// The stable wire byte of this limit.
    pub fn code(self) -> u8 {
        match self {
            Limit::Streams => 0,
            Limit::TopicsPerStream => 1,
            Limit::PartitionsTotal => 2,
            Limit::ConsumerGroupsPerTopic => 3,
            Limit::Users => 4,
            Limit::TokensPerUser => 5,
            Limit::PermissionStreams => 6,
            Limit::Ids => 7,
            Limit::MembersPerGroup => 8,
        }
    }

    /// The limit with wire byte `code`, if any.
    pub fn from_code(code: u8) -> Option<Limit> {
        Limit::ALL.into_iter().find(|limit| limit.code() == code)
    }

    /// The bound itself.
    pub fn max(self) -> u64 {
        // usize -> u64 is lossless on every supported target.
        match self {
            Limit::Streams => STREAMS_MAX as u64,
            Limit::TopicsPerStream => TOPICS_PER_STREAM_MAX as u64,
            Limit::PartitionsTotal => PARTITIONS_TOTAL_MAX,
            Limit::ConsumerGroupsPerTopic => CONSUMER_GROUPS_PER_TOPIC_MAX as u64,
            Limit::Users => USERS_MAX as u64,
            Limit::TokensPerUser => TOKENS_PER_USER_MAX as u64,
            Limit::PermissionStreams => PERMISSION_STREAMS_MAX as u64,
            Limit::Ids => u64::from(u32::MAX),
            Limit::MembersPerGroup => MEMBERS_PER_GROUP_MAX as u64,
        }
    }
}

impl WireField for Limit {
    fn encode_field(&self, w: &mut Writer) {
        w.u8(self.code());
    }

    fn decode_field(r: &mut Reader<'_>, field: &'static str) -> Result<Self, DecodeError> {
        let code = r.u8(field)?;
        Limit::from_code(code).ok_or(DecodeError::UnknownCode { field, code })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_codes_are_distinct_and_round_trip() {
        for (index, limit) in Limit::ALL.into_iter().enumerate() {
            assert_eq!(usize::from(limit.code()), index);
            assert_eq!(Limit::from_code(limit.code()), Some(limit));
            assert!(limit.max() > 0);
        }
        assert_eq!(Limit::from_code(200), None);
    }
}
