//! The records the metadata state holds: streams, topics, consumer groups, users and
//! personal access tokens.
//!
//! Models: the fields each entity keeps once created, nested as they are owned
//! (a stream owns its topics, a topic its consumer groups, a user its tokens), each
//! child map keyed by id (or by name for tokens) so iteration order is deterministic.
//! Does not model: partition contents, offsets or segments (the partition plane), or
//! sessions (the client table). Fields are public for reading; the state only changes
//! through `MetadataState::apply`, which hands these out by shared reference.

use std::collections::BTreeMap;

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
    /// Partition count, 1 to `PARTITIONS_PER_TOPIC_MAX`; fixed at creation.
    pub partitions: u32,
    /// When writes are acknowledged.
    pub durability: Durability,
    /// How long messages are kept; 0 = forever.
    pub message_expiry_micros: u64,
    /// Consumer groups by id.
    pub consumer_groups: BTreeMap<u32, ConsumerGroup>,
    /// The id the next consumer group in this topic gets.
    pub next_group_id: u32,
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
