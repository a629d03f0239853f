//! The metadata plane's state machine: what the metadata VSR group replicates.
//!
//! Models: the ops clients send to the metadata plane ([`MetadataOp`]), the state they
//! change ([`MetadataState`]: streams, topics, partitions and the VSR group id of each
//! ([`partition_group_id`]), consumer groups and their members, users, permissions,
//! personal access tokens), the replies they get ([`MetadataReply`], classified by
//! [`Outcome`]). Every request takes effect at most once through the replica's client
//! table (`vsr::client_table`). Applying is a pure function of the committed op sequence and each op's
//! [`ApplyContext`] (timestamp, op number and entropy fixed by the primary), so replicas
//! and a shadow model compare equal by [`MetadataState::digest`].
//!
//! Does not model: consensus (ordering, commit, deduplication), the request path (bindings,
//! redirects, transport errors), or partition data. Nothing here reads a clock or OS
//! randomness.
//!
//! | file | what it holds |
//! |---|---|
//! | `name.rs` | name and password validation, [`NAME_BYTES_MAX`] |
//! | `limits.rs` | every entity-count bound and the [`Limit`] a reply names |
//! | `permissions.rs` | [`Permissions`] and their codec |
//! | `ops.rs` | [`MetadataOp`], [`Durability`], the op codec and operation codes |
//! | `reply.rs` | [`MetadataReply`], [`Outcome`], the reply codec |
//! | `credentials.rs` | salts, password hashes, tokens (a placeholder, not a KDF) |
//! | `entities.rs` | the records: [`Stream`], [`Topic`], [`Partition`], [`ConsumerGroup`], [`User`], [`PersonalAccessToken`] |
//! | `group_id.rs` | [`partition_group_id`]: a partition's VSR group id from the op that created it |
//! | `state.rs` | [`MetadataState`], [`ApplyContext`], `apply_request` (authorise, then apply), `apply`, `digest`, `summary` |
//! | `sessions.rs` | [`Sessions`] opened by logins, [`BindSession`] and its codec |
//! | `authorize.rs` | [`Need`]: what each request needs, `Permissions::allows`, `MetadataState::authorize` |
//! | `snapshot.rs` | the canonical state encoding: `encode_state` / `decode_state` |
//! | `machine.rs` | [`MetadataMachine`]: the state as the VSR group's `StateMachine` |

mod authorize;
mod credentials;
mod entities;
mod group_id;
mod limits;
mod machine;
mod name;
mod ops;
mod permissions;
mod reply;
mod sessions;
mod snapshot;
mod state;

#[cfg(test)]
mod tests;

pub use crate::codec::{DecodeError, STRING_DECODE_BYTES_MAX};
pub use authorize::{Need, need_of};
pub use credentials::TOKEN_CHARS;
pub use entities::{ConsumerGroup, Partition, PersonalAccessToken, Stream, Topic, User};
pub use group_id::{PARTITION_GROUP_OP_LIMIT, PARTITION_ID_BITS, partition_group_id};
pub use limits::SESSIONS_MAX;
pub use limits::{
    CONSUMER_GROUPS_PER_TOPIC_MAX, Limit, MEMBERS_PER_GROUP_MAX, PARTITIONS_PER_TOPIC_MAX, PARTITIONS_TOTAL_MAX,
    PERMISSION_STREAMS_MAX, STREAMS_MAX, TOKENS_PER_USER_MAX, TOPICS_PER_STREAM_MAX, USERS_MAX,
};
pub use machine::{DEFAULT_ROOT_PASSWORD, MetadataMachine};
pub use name::{NAME_BYTES_MAX, PASSWORD_BYTES_MAX, is_valid_name, is_valid_password};
pub use ops::{Durability, MetadataOp};
pub use permissions::{GlobalPermissions, Permissions, StreamPermissions};
pub use reply::{ERROR_CODE_MIN, MetadataReply, Outcome};
pub use sessions::{BIND_SESSION_CODE, BindSession, Session, Sessions, derive_session_secret};
pub use state::{ApplyContext, MetadataState, ROOT_USER_ID, ROOT_USERNAME};
