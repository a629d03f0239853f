//! The records the metadata state holds: streams, topics, consumer groups, users and
//! personal access tokens.
//!
//! Models: the fields each entity keeps once created, nested as they are owned
//! (a stream owns its topics, a topic its partitions and consumer groups, a user its
//! tokens), each child map keyed by id (or by name for tokens) so iteration order is
//! deterministic; a topic's partitions are a vector whose index is the partition id.
//! Does not model: partition contents, offsets or segments (the partition plane), which
//! replicas host a partition's group (placement), or sessions (the client table).
//! Fields are public for reading; the state only changes through
//! `MetadataState::apply`, which hands these out by shared reference.

use std::collections::{BTreeMap, BTreeSet};

use super::ops::Durability;
use super::permissions::Permissions;

/// A stream: a named namespace of topics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stream {
    /// Assigned at creation, never reused.
    pub id: u32,
    /// Unique among streams.
    pub name: String,
    /// Timestamp of the creating op.
    pub created_at_micros: u64,
    /// Topics by id.
    pub topics: BTreeMap<u32, Topic>,
    /// The id the next topic in this stream gets.
    pub next_topic_id: u32,
}

/// A topic: a partitioned log inside a stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topic {
    /// Assigned at creation, unique within the stream, never reused.
    pub id: u32,
    /// Unique among the stream's topics.
    pub name: String,
    /// Timestamp of the creating op.
    pub created_at_micros: u64,
    /// The partitions, 1 to `PARTITIONS_PER_TOPIC_MAX` of them, ordered by id with ids
    /// always `0..len` (so `partitions[i].id == i`): `CreatePartitions` appends ids,
    /// `DeletePartitions` removes the highest ones.
    pub partitions: Vec<Partition>,
    /// When writes are acknowledged.
    pub durability: Durability,
    /// How long messages are kept; 0 = forever.
    pub message_expiry_micros: u64,
    /// Consumer groups by id.
    pub consumer_groups: BTreeMap<u32, ConsumerGroup>,
    /// The id the next consumer group in this topic gets.
    pub next_group_id: u32,
}

/// One partition of a topic: an ordered log replicated by a VSR group of its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    /// The partition's index within its topic: `0..topic.partitions.len()`. Reused
    /// after `DeletePartitions` and a later `CreatePartitions`; the group id is not.
    pub id: u32,
    /// The VSR group replicating this partition:
    /// `partition_group_id(op that created it, id)`. Unique per incarnation of the
    /// partition, never 0 (the metadata group's id).
    pub group_id: u64,
    /// The metadata view in which the partition's create was prepared (the prepare
    /// header's view). The partition's group starts in this view, so every replica
    /// that learns of the partition boots its group from the same view.
    pub created_in_view: u64,
    /// The topic's message expiry when this partition was created (0 = never). The
    /// partition's group applies retention with it; it is fixed at creation because a
    /// replica that creates the group late (after a restart or while catching up) must
    /// start it exactly as the others did, whatever `UpdateTopic` did since.
    pub message_expiry_micros: u64,
}

/// A consumer group: a named set of consumers sharing a topic's partitions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerGroup {
    /// Assigned at creation, unique within the topic, never reused.
    pub id: u32,
    /// Unique among the topic's groups.
    pub name: String,
    /// Timestamp of the creating op.
    pub created_at_micros: u64,
    /// Member ids (chosen by the clients), at most `MEMBERS_PER_GROUP_MAX`.
    pub members: BTreeSet<u32>,
    /// 0 at creation; every successful join or leave adds 1, so members can tell a
    /// stale partition assignment from the current one.
    pub generation: u64,
}

/// A user account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    /// Assigned at creation, never reused; 0 is root.
    pub id: u32,
    /// Unique among users.
    pub username: String,
    /// `hash_password(salt, password)`; see `credentials` (a placeholder, not a KDF).
    pub password_hash: u128,
    /// Derived from the entropy of the op that last set the password.
    pub salt: u128,
    /// An inactive user cannot log in.
    pub active: bool,
    /// Timestamp of the creating op (0 for root, created at genesis).
    pub created_at_micros: u64,
    /// What the user may do.
    pub permissions: Permissions,
    /// Personal access tokens by name.
    pub tokens: BTreeMap<String, PersonalAccessToken>,
}

/// A personal access token: a named, optionally expiring credential for one user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PersonalAccessToken {
    /// Unique among the user's tokens.
    pub name: String,
    /// `hash_token(token)`; the token itself is revealed once and never stored.
    pub token_hash: u128,
    /// Timestamp of the creating op.
    pub created_at_micros: u64,
    /// The token stops working at this timestamp; `None` = never.
    pub expires_at_micros: Option<u64>,
}

impl PersonalAccessToken {
    /// True if the token no longer works at `now_micros` (it expires at, not after,
    /// its expiry timestamp).
    pub fn is_expired_at(&self, now_micros: u64) -> bool {
        self.expires_at_micros.is_some_and(|expires| now_micros >= expires)
    }
}
