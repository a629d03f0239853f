//! The canonical byte encoding of a whole [`MetadataState`]: the input of its digest
//! and the body of a metadata snapshot.
//!
//! Models: one encoding per state (maps in key order, no optional padding), so equal
//! states give equal bytes and [`MetadataState::digest`] can compare replicas. Decoding
//! rejects any bytes that are not exactly what `encode_state` would produce for a valid
//! state: ids ascending and below their counters, names valid and unique in scope,
//! counts within the limits, the root user present and intact, every partition's group
//! id derived from its id and an op already applied (unique, in creation order within
//! a topic, none after `partitions_changed_at`), consumer group generations no larger
//! than the op number and no smaller than the member count. A snapshot that decodes
//! therefore gives a state that `apply` could have produced, as far as these
//! invariants can tell.
//!
//! Sessions are decoded as `sessions.rs` says (a session whose user is gone is kept:
//! it stops authorising, which `authorize.rs` checks at each use).
//!
//! Does not model: snapshot scheduling, chunking or transfer (consensus does that), a
//! format version (the layout is fixed; change it only with a migration), or the
//! client table, which is snapshotted separately.

use std::collections::{BTreeMap, BTreeSet};

use super::entities::{ConsumerGroup, Partition, PersonalAccessToken, Stream, Topic, User};
use super::group_id::{group_created_at_op, group_partition_id};
use super::limits::{
    CONSUMER_GROUPS_PER_TOPIC_MAX, MEMBERS_PER_GROUP_MAX, PARTITIONS_PER_TOPIC_MAX, PARTITIONS_TOTAL_MAX, STREAMS_MAX,
    TOKENS_PER_USER_MAX, TOPICS_PER_STREAM_MAX, USERS_MAX,
};
use super::name::is_valid_name;
use super::ops::Durability;
use super::permissions::Permissions;
use super::sessions::Sessions;
use super::state::{MetadataState, ROOT_USER_ID};
use crate::codec::{DecodeError, Reader, Writer};

impl MetadataState {
    /// The canonical bytes of the whole state. Layout (little-endian, counts as varints):
    /// `[op number applied: u64][partitions changed at: u64][next stream id: u32]
    /// [next user id: u32]`, then streams (each with its topics, each with its
    /// partitions as `[group id: u64][created in view: u64]` in id order, the id being
    /// the position, then its consumer groups with their members), then users (each with
    /// permissions and tokens), then the open sessions (`Sessions::encode_into`), every
    /// map in ascending key order.
    pub fn encode_state(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u64(self.op_number_applied);
        w.u64(self.partitions_changed_at);
        w.u32(self.next_stream_id);
        w.u32(self.next_user_id);
        w.len(self.streams.len());
        for stream in self.streams.values() {
            w.u32(stream.id);
            w.str(&stream.name);
            w.u64(stream.created_at_micros);
            w.u32(stream.next_topic_id);
            w.len(stream.topics.len());
            for topic in stream.topics.values() {
                w.u32(topic.id);
                w.str(&topic.name);
                w.u64(topic.created_at_micros);
                w.len(topic.partitions.len());
                for partition in &topic.partitions {
                    w.u64(partition.group_id);
                    w.u64(partition.created_in_view);
                    w.u64(partition.message_expiry_micros);
                }
                w.u8(topic.durability.code());
                w.u64(topic.message_expiry_micros);
                w.u32(topic.next_group_id);
                w.len(topic.consumer_groups.len());
                for group in topic.consumer_groups.values() {
                    w.u32(group.id);
                    w.str(&group.name);
                    w.u64(group.created_at_micros);
                    w.u64(group.generation);
                    w.len(group.members.len());
                    for member in &group.members {
                        w.u32(*member);
                    }
                }
            }
        }
        w.len(self.users.len());
        for user in self.users.values() {
            w.u32(user.id);
            w.str(&user.username);
            w.u128(user.password_hash);
            w.u128(user.salt);
            w.bool(user.active);
            w.u64(user.created_at_micros);
            user.permissions.encode_into(&mut w);
            w.len(user.tokens.len());
            for token in user.tokens.values() {
                w.str(&token.name);
                w.u128(token.token_hash);
                w.u64(token.created_at_micros);
                w.opt_u64(token.expires_at_micros);
            }
        }
        self.sessions.encode_into(&mut w);
        w.finish()
    }

    /// Rebuild a state from [`MetadataState::encode_state`] bytes, checking every
    /// invariant listed in the module docs. Never panics.
    pub fn decode_state(bytes: &[u8]) -> Result<MetadataState, DecodeError> {
        let mut r = Reader::new(bytes);
        let op_number_applied = r.u64("op number applied")?;
        let partitions_changed_at = r.u64("partitions changed at")?;
        if partitions_changed_at > op_number_applied {
            return Err(DecodeError::InvalidState {
                what: "partitions changed at an op not yet applied",
            });
        }
        let next_stream_id = r.u32("next stream id")?;
        let next_user_id = r.u32("next user id")?;

        let mut partitions_total: u64 = 0;
        let mut group_ids = BTreeSet::new();
        let streams = Scope::new("stream count", STREAMS_MAX, "stream ids", next_stream_id).decode_checked(
            &mut r,
            |r| decode_stream(r, op_number_applied),
            |stream| {
                for partition in stream.topics.values().flat_map(|t| &t.partitions) {
                    partitions_total += 1;
                    if group_created_at_op(partition.group_id) > partitions_changed_at {
                        return Err(DecodeError::InvalidState {
                            what: "a partition was created after partitions last changed",
                        });
                    }
                    if !group_ids.insert(partition.group_id) {
                        return Err(DecodeError::InvalidState {
                            what: "two partitions share a group id",
                        });
                    }
                }
                Ok(())
            },
        )?;
        if partitions_total > PARTITIONS_TOTAL_MAX {
            return Err(DecodeError::InvalidState {
                what: "more partitions than PARTITIONS_TOTAL_MAX",
            });
        }

        let users = Scope::new("user count", USERS_MAX, "user ids", next_user_id).decode_checked(
            &mut r,
            decode_user,
            |user| {
                if user.permissions.streams.keys().any(|id| !streams.contains_key(id)) {
                    return Err(DecodeError::InvalidState {
                        what: "a permission names a missing stream",
                    });
                }
                Ok(())
            },
        )?;
        match users.get(&ROOT_USER_ID) {
            Some(root) if root.active && root.permissions == Permissions::full() => {}
            _ => {
                return Err(DecodeError::InvalidState {
                    what: "the root user is missing, inactive or lacks full permissions",
                });
            }
        }
        let sessions = Sessions::decode_from(&mut r, op_number_applied)?;
        r.finish()?;
        Ok(MetadataState {
            streams,
            users,
            next_stream_id,
            next_user_id,
            op_number_applied,
            partitions_changed_at,
            sessions,
        })
    }
}

/// `op_number_applied` bounds the ops partitions and generations can come from.
fn decode_stream(r: &mut Reader<'_>, op_number_applied: u64) -> Result<Stream, DecodeError> {
    let id = r.u32("stream id")?;
    let name = r.string("stream name")?;
    let created_at_micros = r.u64("stream created at")?;
    let next_topic_id = r.u32("next topic id")?;
    let topics = Scope::new("topic count", TOPICS_PER_STREAM_MAX, "topic ids", next_topic_id)
        .decode(r, |r| decode_topic(r, op_number_applied))?;
    Ok(Stream {
        id,
        name,
        created_at_micros,
        topics,
        next_topic_id,
    })
}

fn decode_topic(r: &mut Reader<'_>, op_number_applied: u64) -> Result<Topic, DecodeError> {
    let id = r.u32("topic id")?;
    let name = r.string("topic name")?;
    let created_at_micros = r.u64("topic created at")?;
    // u32 -> usize is lossless on every supported target.
    let count = r.len("partition count", PARTITIONS_PER_TOPIC_MAX as usize)?;
    if count == 0 {
        return Err(DecodeError::InvalidState {
            what: "a topic has no partitions",
        });
    }
    let mut partitions: Vec<Partition> = Vec::with_capacity(count);
    for index in 0..count {
        let group_id = r.u64("partition group id")?;
        let created_in_view = r.u64("partition created in view")?;
        let partition_expiry_micros = r.u64("partition message expiry")?;
        let created_at_op = group_created_at_op(group_id);
        // index < PARTITIONS_PER_TOPIC_MAX, a u32.
        let partition_id = index as u32;
        if group_partition_id(group_id) != u64::from(partition_id) {
            return Err(DecodeError::InvalidState {
                what: "a partition group id does not end in the partition id",
            });
        }
        if created_at_op == 0 || created_at_op > op_number_applied {
            return Err(DecodeError::InvalidState {
                what: "a partition group id names an op not applied",
            });
        }
        // Deletes remove the highest ids and creates append, so a higher id was never
        // created before a lower one that still exists.
        if partitions
            .last()
            .is_some_and(|previous| group_created_at_op(previous.group_id) > created_at_op)
        {
            return Err(DecodeError::InvalidState {
                what: "a partition was created before a lower-numbered one",
            });
        }
        partitions.push(Partition {
            id: partition_id,
            group_id,
            created_in_view,
            message_expiry_micros: partition_expiry_micros,
        });
    }
    let durability = Durability::decode_from(r)?;
    let message_expiry_micros = r.u64("message expiry")?;
    let next_group_id = r.u32("next consumer group id")?;
    let consumer_groups = Scope::new(
        "consumer group count",
        CONSUMER_GROUPS_PER_TOPIC_MAX,
        "consumer group ids",
        next_group_id,
    )
    .decode(r, |r| decode_group(r, op_number_applied))?;
    Ok(Topic {
        id,
        name,
        created_at_micros,
        partitions,
        durability,
        message_expiry_micros,
        consumer_groups,
        next_group_id,
    })
}

fn decode_group(r: &mut Reader<'_>, op_number_applied: u64) -> Result<ConsumerGroup, DecodeError> {
    let id = r.u32("consumer group id")?;
    let name = r.string("consumer group name")?;
    let created_at_micros = r.u64("consumer group created at")?;
    let generation = r.u64("consumer group generation")?;
    let mut members = BTreeSet::new();
    for _ in 0..r.len("member count", MEMBERS_PER_GROUP_MAX)? {
        let member = r.u32("member id")?;
        if members.last().is_some_and(|last| *last >= member) {
            return Err(DecodeError::NonCanonical { field: "member ids" });
        }
        members.insert(member);
    }
    // Each join or leave is one op and adds 1, and each member joined once.
    // u64::try_from cannot fail for a count bounded by MEMBERS_PER_GROUP_MAX.
    let members_count = u64::try_from(members.len()).unwrap_or(u64::MAX);
    if generation > op_number_applied || generation < members_count {
        return Err(DecodeError::InvalidState {
            what: "a consumer group's generation does not fit its members and the op number",
        });
    }
    Ok(ConsumerGroup {
        id,
        name,
        created_at_micros,
        members,
        generation,
    })
}

fn decode_user(r: &mut Reader<'_>) -> Result<User, DecodeError> {
    let id = r.u32("user id")?;
    let username = r.string("username")?;
    let password_hash = r.u128("password hash")?;
    let salt = r.u128("salt")?;
    let active = r.bool("user active")?;
    let created_at_micros = r.u64("user created at")?;
    let permissions = Permissions::decode_from(r)?;
    let mut tokens: BTreeMap<String, PersonalAccessToken> = BTreeMap::new();
    for _ in 0..r.len("token count", TOKENS_PER_USER_MAX)? {
        let token = PersonalAccessToken {
            name: r.string("token name")?,
            token_hash: r.u128("token hash")?,
            created_at_micros: r.u64("token created at")?,
            expires_at_micros: r.opt_u64("token expires at")?,
        };
        if !is_valid_name(&token.name) {
            return Err(DecodeError::InvalidState {
                what: "a token name is invalid",
            });
        }
        if tokens.last_key_value().is_some_and(|(last, _)| *last >= token.name) {
            return Err(DecodeError::NonCanonical { field: "token names" });
        }
        tokens.insert(token.name.clone(), token);
    }
    Ok(User {
        id,
        username,
        password_hash,
        salt,
        active,
        created_at_micros,
        permissions,
        tokens,
    })
}

/// An entity a snapshot keys by id within its scope, whose name is unique there.
trait Named {
    fn id(&self) -> u32;
    fn name(&self) -> &str;
}

/// `Named` for entities whose name field is `$name`.
macro_rules! named {
    ($($entity:ty => $name:ident),* $(,)?) => {
        $(
            impl Named for $entity {
                fn id(&self) -> u32 {
                    self.id
                }
                fn name(&self) -> &str {
                    &self.$name
                }
            }
        )*
    };
}

named!(Stream => name, Topic => name, ConsumerGroup => name, User => username);

/// One scope of named entities in a snapshot (the streams, a stream's topics, a topic's
/// groups, the users): the label and bound of its count, and the label of its ids and
/// the next-id counter they are below.
struct Scope {
    count_field: &'static str,
    max: usize,
    ids_field: &'static str,
    next_id: u32,
}

impl Scope {
    fn new(count_field: &'static str, max: usize, ids_field: &'static str, next_id: u32) -> Self {
        Self {
            count_field,
            max,
            ids_field,
            next_id,
        }
    }

    /// `[count][entity]...`, each entity read by `decode_one` and its id and name
    /// checked ([`check_id`], [`check_unique_name`]), keyed by id.
    fn decode<T: Named>(
        &self,
        r: &mut Reader<'_>,
        decode_one: impl FnMut(&mut Reader<'_>) -> Result<T, DecodeError>,
    ) -> Result<BTreeMap<u32, T>, DecodeError> {
        self.decode_checked(r, decode_one, |_| Ok(()))
    }

    /// As [`Scope::decode`], each entity then checked by `check` (an invariant of its
    /// scope) before it is kept.
    fn decode_checked<T: Named>(
        &self,
        r: &mut Reader<'_>,
        mut decode_one: impl FnMut(&mut Reader<'_>) -> Result<T, DecodeError>,
        mut check: impl FnMut(&T) -> Result<(), DecodeError>,
    ) -> Result<BTreeMap<u32, T>, DecodeError> {
        let mut entities = BTreeMap::new();
        let mut names = BTreeSet::new();
        for _ in 0..r.len(self.count_field, self.max)? {
            let entity = decode_one(r)?;
            let previous = entities.last_key_value().map(|(id, _)| *id);
            check_id(previous, entity.id(), self.next_id, self.ids_field)?;
            check_unique_name(&mut names, entity.name())?;
            check(&entity)?;
            entities.insert(entity.id(), entity);
        }
        Ok(entities)
    }
}

/// Ids must be strictly ascending (canonical order) and below the scope's counter
/// (the counter only grows, so every existing id was handed out before it).
fn check_id(previous: Option<u32>, id: u32, next: u32, field: &'static str) -> Result<(), DecodeError> {
    if previous.is_some_and(|p| p >= id) {
        return Err(DecodeError::NonCanonical { field });
    }
    if id >= next {
        return Err(DecodeError::InvalidState {
            what: "an id is not below its scope's next-id counter",
        });
    }
    Ok(())
}

fn check_unique_name(seen: &mut BTreeSet<String>, name: &str) -> Result<(), DecodeError> {
    if !is_valid_name(name) {
        return Err(DecodeError::InvalidState {
            what: "a name is invalid",
        });
    }
    if !seen.insert(name.to_owned()) {
        return Err(DecodeError::InvalidState {
            what: "a name appears twice in one scope",
        });
    }
    Ok(())
}
