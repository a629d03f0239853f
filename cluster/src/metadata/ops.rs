//! The operations the metadata VSR group replicates, and their binary codec.
//!
//! Models: every change a client can ask of the metadata plane (streams, topics,
//! partitions, users, permissions, personal access tokens, consumer groups and their
//! membership) and the two logins,
//! which are replicated too so that a session is created at a committed point of the
//! log. The codec is compact and versionless: `[operation code: u8][fields]`, integers
//! little-endian, strings as `[len: varint][utf-8]`, options as `[0|1][value]`.
//!
//! Does not model: whether an op is allowed or sensible (a decoded op may name a
//! missing stream or carry an invalid name; the state machine answers that), who sent
//! it (client id and request number live in the request header), or authorisation.

use super::permissions::Permissions;
use crate::codec::{DecodeError, Reader, WireField, WireTable, Writer, wire_table};

/// When a topic's writes are acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Durability {
    /// Acknowledged once a quorum's write-ahead logs have queued the batch.
    Replicated,
    /// Acknowledged once a quorum has fsynced the batch.
    Persisted,
}

impl Durability {
    /// The stable wire byte (part of the op and snapshot formats; never renumber).
    pub fn code(self) -> u8 {
        match self {
            Durability::Replicated => 0,
            Durability::Persisted => 1,
        }
    }

    pub(crate) fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Self::decode_field(r, "durability")
    }
}

impl WireField for Durability {
    fn encode_field(&self, w: &mut Writer) {
        w.u8(self.code());
    }

    fn decode_field(r: &mut Reader<'_>, field: &'static str) -> Result<Self, DecodeError> {
        match r.u8(field)? {
            0 => Ok(Durability::Replicated),
            1 => Ok(Durability::Persisted),
            code => Err(DecodeError::UnknownCode { field, code }),
        }
    }
}

wire_table! {
    /// One metadata operation, as proposed by the primary and applied by every replica.
    ///
    /// Ids are u32 and assigned by the state machine. Times are microseconds.
    /// `Debug` prints passwords and tokens as `<redacted>` so logs never hold secrets.
    #[derive(Clone, PartialEq, Eq)]
    pub enum MetadataOp {
        code_label: "operation code",
        redacted: REDACTED,
        /// The stable byte identifying this variant on the wire and on disk (1..=21, see
        /// the `code` table; append-only).
        fn operation_code;
        variants: {
            /// Create a stream; replies `StreamCreated`.
            CreateStream = code::CREATE_STREAM {
                /// Unique among streams.
                name: String = "stream name",
            },
            /// Rename a stream.
            UpdateStream = code::UPDATE_STREAM {
                /// The stream.
                stream_id: u32 = "stream id",
                /// Unique among streams (its own current name is fine).
                name: String = "stream name",
            },
            /// Delete a stream with its topics and groups, and every user's permissions on it.
            DeleteStream = code::DELETE_STREAM {
                /// The stream.
                stream_id: u32 = "stream id",
            },
            /// Create a topic in a stream; replies `TopicCreated`.
            CreateTopic = code::CREATE_TOPIC {
                /// The stream.
                stream_id: u32 = "stream id",
                /// Unique among the stream's topics.
                name: String = "topic name",
                /// 1 to `PARTITIONS_PER_TOPIC_MAX`.
                partitions: u32 = "partition count",
                /// When writes are acknowledged.
                durability: Durability = "durability",
                /// How long messages are kept; 0 = forever.
                message_expiry_micros: u64 = "message expiry",
            },
            /// Rename a topic or change its durability or message expiry.
            UpdateTopic = code::UPDATE_TOPIC {
                /// The stream.
                stream_id: u32 = "stream id",
                /// The topic.
                topic_id: u32 = "topic id",
                /// Unique among the stream's topics (its own current name is fine).
                name: String = "topic name",
                /// When writes are acknowledged.
                durability: Durability = "durability",
                /// How long messages are kept; 0 = forever.
                message_expiry_micros: u64 = "message expiry",
            },
            /// Delete a topic with its consumer groups.
            DeleteTopic = code::DELETE_TOPIC {
                /// The stream.
                stream_id: u32 = "stream id",
                /// The topic.
                topic_id: u32 = "topic id",
            },
            /// Create a user with no permissions; replies `UserCreated`.
            CreateUser = code::CREATE_USER {
                /// Unique among users.
                username: String = "username",
                /// Stored only as a salted hash.
                password: String = "password" [redacted],
                /// An inactive user cannot log in.
                active: bool = "user active",
            },
            /// Rename, activate or deactivate a user. `None` leaves a field unchanged.
            UpdateUser = code::UPDATE_USER {
                /// The user.
                user_id: u32 = "user id",
                /// New username, unique among users.
                username: Option<String> = "username",
                /// New status; the root user cannot be deactivated.
                active: Option<bool> = "user active",
            },
            /// Delete a user with its tokens. The root user cannot be deleted.
            DeleteUser = code::DELETE_USER {
                /// The user.
                user_id: u32 = "user id",
            },
            /// Replace a user's password, given the current one.
            ChangePassword = code::CHANGE_PASSWORD {
                /// The user.
                user_id: u32 = "user id",
                /// Must match the stored hash.
                current_password: String = "current password" [redacted],
                /// The replacement.
                new_password: String = "new password" [redacted],
            },
            /// Replace a user's permissions. The root user's cannot be changed.
            UpdatePermissions = code::UPDATE_PERMISSIONS {
                /// The user.
                user_id: u32 = "user id",
                /// Every stream named must exist.
                permissions: Permissions = "permissions",
            },
            /// Create a personal access token; replies `TokenCreated` with the token itself,
            /// the only time it is ever revealed (the state keeps its hash).
            CreatePersonalAccessToken = code::CREATE_PERSONAL_ACCESS_TOKEN {
                /// The owner.
                user_id: u32 = "user id",
                /// Unique among the owner's tokens.
                name: String = "token name",
                /// Lifetime from the op's timestamp; 0 = never expires.
                expiry_micros: u64 = "token expiry",
            },
            /// Delete a user's token by name.
            DeletePersonalAccessToken = code::DELETE_PERSONAL_ACCESS_TOKEN {
                /// The owner.
                user_id: u32 = "user id",
                /// The token's name.
                name: String = "token name",
            },
            /// Create a consumer group on a topic; replies `GroupCreated`.
            CreateConsumerGroup = code::CREATE_CONSUMER_GROUP {
                /// The stream.
                stream_id: u32 = "stream id",
                /// The topic.
                topic_id: u32 = "topic id",
                /// Unique among the topic's groups.
                name: String = "consumer group name",
            },
            /// Delete a consumer group.
            DeleteConsumerGroup = code::DELETE_CONSUMER_GROUP {
                /// The stream.
                stream_id: u32 = "stream id",
                /// The topic.
                topic_id: u32 = "topic id",
                /// The group.
                group_id: u32 = "consumer group id",
            },
            /// Log in with username and password; replies `LoggedIn`.
            LoginUser = code::LOGIN_USER {
                /// The user's name.
                username: String = "username",
                /// Checked against the stored hash.
                password: String = "password" [redacted],
            },
            /// Log in with a personal access token; replies `LoggedIn`.
            LoginWithPersonalAccessToken = code::LOGIN_WITH_PERSONAL_ACCESS_TOKEN {
                /// The token as `TokenCreated` revealed it.
                token: String = "token" [redacted],
            },
            /// Append partitions to a topic; replies `PartitionsCreated`. Each new partition's
            /// group id is `partition_group_id(this op's number, its id)`.
            CreatePartitions = code::CREATE_PARTITIONS {
                /// The stream.
                stream_id: u32 = "stream id",
                /// The topic.
                topic_id: u32 = "topic id",
                /// At least 1; the topic may not grow past `PARTITIONS_PER_TOPIC_MAX`.
                count: u32 = "partition count",
            },
            /// Remove a topic's highest-numbered partitions.
            DeletePartitions = code::DELETE_PARTITIONS {
                /// The stream.
                stream_id: u32 = "stream id",
                /// The topic.
                topic_id: u32 = "topic id",
                /// At least 1 and fewer than the topic has: a topic keeps at least one.
                count: u32 = "partition count",
            },
            /// Add a member to a consumer group; replies `Joined` with the new generation.
            JoinConsumerGroup = code::JOIN_CONSUMER_GROUP {
                /// The stream.
                stream_id: u32 = "stream id",
                /// The topic.
                topic_id: u32 = "topic id",
                /// The consumer group.
                group_id: u32 = "consumer group id",
                /// Chosen by the client; not yet a member of the group.
                member_id: u32 = "member id",
            },
            /// Remove a member from a consumer group; replies `Left` with the new generation.
            LeaveConsumerGroup = code::LEAVE_CONSUMER_GROUP {
                /// The stream.
                stream_id: u32 = "stream id",
                /// The topic.
                topic_id: u32 = "topic id",
                /// The consumer group.
                group_id: u32 = "consumer group id",
                /// A current member of the group.
                member_id: u32 = "member id",
            },
        }
    }
}

/// What `Debug` prints in place of a password or token.
const REDACTED: &str = "<redacted>";

/// Operation codes. Part of the wire contract and of every journal on disk: append new
/// codes, never renumber or reuse one. 0 is never assigned, so a zeroed buffer never
/// decodes as an op.
mod code {
    pub const CREATE_STREAM: u8 = 1;
    pub const UPDATE_STREAM: u8 = 2;
    pub const DELETE_STREAM: u8 = 3;
    pub const CREATE_TOPIC: u8 = 4;
    pub const UPDATE_TOPIC: u8 = 5;
    pub const DELETE_TOPIC: u8 = 6;
    pub const CREATE_USER: u8 = 7;
    pub const UPDATE_USER: u8 = 8;
    pub const DELETE_USER: u8 = 9;
    pub const CHANGE_PASSWORD: u8 = 10;
    pub const UPDATE_PERMISSIONS: u8 = 11;
    pub const CREATE_PERSONAL_ACCESS_TOKEN: u8 = 12;
    pub const DELETE_PERSONAL_ACCESS_TOKEN: u8 = 13;
    pub const CREATE_CONSUMER_GROUP: u8 = 14;
    pub const DELETE_CONSUMER_GROUP: u8 = 15;
    pub const LOGIN_USER: u8 = 16;
    pub const LOGIN_WITH_PERSONAL_ACCESS_TOKEN: u8 = 17;
    pub const CREATE_PARTITIONS: u8 = 18;
    pub const DELETE_PARTITIONS: u8 = 19;
    pub const JOIN_CONSUMER_GROUP: u8 = 20;
    pub const LEAVE_CONSUMER_GROUP: u8 = 21;
}

impl MetadataOp {
    /// Whether `operation` is a login's code: a login needs no session (it opens one),
    /// so a node admits it from any sender.
    pub fn is_login_operation(operation: u8) -> bool {
        operation == code::LOGIN_USER || operation == code::LOGIN_WITH_PERSONAL_ACCESS_TOKEN
    }

    /// True for the ops that only read committed state (the logins). They are still
    /// replicated: a session begins at a committed point of the log.
    pub fn is_login(&self) -> bool {
        matches!(
            self,
            MetadataOp::LoginUser { .. } | MetadataOp::LoginWithPersonalAccessToken { .. }
        )
    }

    /// The op's bytes: `[operation code][fields in declaration order]`.
    pub fn encode(&self) -> Vec<u8> {
        self.encode_tagged()
    }

    /// Parse one op occupying all of `bytes`. Never panics; rejects unknown codes,
    /// truncation, trailing bytes, invalid UTF-8, strings longer than
    /// `STRING_DECODE_BYTES_MAX` and non-canonical encodings.
    pub fn decode(bytes: &[u8]) -> Result<MetadataOp, DecodeError> {
        Self::decode_tagged(bytes)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::super::permissions::StreamPermissions;
    use super::*;
    use crate::codec::{STRING_DECODE_BYTES_MAX, assert_cuts_and_padding_refused};

    /// One op of every variant, with non-trivial field values.
    fn every_variant() -> Vec<MetadataOp> {
        let mut permissions = Permissions::full();
        permissions.streams.insert(
            7,
            StreamPermissions {
                manage_topics: true,
                read: true,
                write: false,
            },
        );
        vec![
            MetadataOp::CreateStream { name: "orders".into() },
            MetadataOp::UpdateStream {
                stream_id: 1,
                name: "zamówienia".into(),
            },
            MetadataOp::DeleteStream { stream_id: u32::MAX },
            MetadataOp::CreateTopic {
                stream_id: 1,
                name: "eu".into(),
                partitions: 24,
                durability: Durability::Persisted,
                message_expiry_micros: 86_400_000_000,
            },
            MetadataOp::UpdateTopic {
                stream_id: 1,
                topic_id: 2,
                name: "eu-west".into(),
                durability: Durability::Replicated,
                message_expiry_micros: 0,
            },
            MetadataOp::DeleteTopic {
                stream_id: 1,
                topic_id: 2,
            },
            MetadataOp::CreateUser {
                username: "alice".into(),
                password: "correct horse".into(),
                active: true,
            },
            MetadataOp::UpdateUser {
                user_id: 3,
                username: Some("alicia".into()),
                active: Some(false),
            },
            MetadataOp::UpdateUser {
                user_id: 3,
                username: None,
                active: None,
            },
            MetadataOp::DeleteUser { user_id: 3 },
            MetadataOp::ChangePassword {
                user_id: 3,
                current_password: "old".into(),
                new_password: "new".into(),
            },
            MetadataOp::UpdatePermissions {
                user_id: 3,
                permissions,
            },
            MetadataOp::CreatePersonalAccessToken {
                user_id: 3,
                name: "ci".into(),
                expiry_micros: 3_600_000_000,
            },
            MetadataOp::DeletePersonalAccessToken {
                user_id: 3,
                name: "ci".into(),
            },
            MetadataOp::CreateConsumerGroup {
                stream_id: 1,
                topic_id: 2,
                name: "billing".into(),
            },
            MetadataOp::DeleteConsumerGroup {
                stream_id: 1,
                topic_id: 2,
                group_id: 4,
            },
            MetadataOp::LoginUser {
                username: "alice".into(),
                password: "correct horse".into(),
            },
            MetadataOp::LoginWithPersonalAccessToken {
                token: "0123456789abcdef".into(),
            },
            MetadataOp::CreatePartitions {
                stream_id: 1,
                topic_id: 2,
                count: 3,
            },
            MetadataOp::DeletePartitions {
                stream_id: 1,
                topic_id: 2,
                count: u32::MAX,
            },
            MetadataOp::JoinConsumerGroup {
                stream_id: 1,
                topic_id: 2,
                group_id: 4,
                member_id: 0xdead_beef,
            },
            MetadataOp::LeaveConsumerGroup {
                stream_id: 1,
                topic_id: 2,
                group_id: 4,
                member_id: 5,
            },
        ]
    }

    #[test]
    fn every_op_round_trips_through_its_bytes() {
        for op in every_variant() {
            let bytes = op.encode();
            assert_eq!(bytes[0], op.operation_code());
            assert_eq!(MetadataOp::decode(&bytes), Ok(op.clone()), "{op:?}");
        }
    }

    #[test]
    fn operation_codes_are_distinct_stable_and_never_zero() {
        let codes: BTreeSet<u8> = every_variant().iter().map(MetadataOp::operation_code).collect();
        assert_eq!(codes, (1..=21).collect());
        // Pinned: these bytes are in journals on disk.
        assert_eq!(MetadataOp::CreateStream { name: "s".into() }.operation_code(), 1);
        let login = MetadataOp::LoginWithPersonalAccessToken { token: "t".into() };
        assert_eq!(login.operation_code(), 17);
        assert!(login.is_login());
        assert_eq!(MetadataOp::DeleteStream { stream_id: 1 }.encode(), vec![3, 1, 0, 0, 0]);
        let create = MetadataOp::CreatePartitions {
            stream_id: 1,
            topic_id: 2,
            count: 3,
        };
        assert_eq!(create.encode(), vec![18, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0]);
        let delete = MetadataOp::DeletePartitions {
            stream_id: 1,
            topic_id: 2,
            count: 3,
        };
        assert_eq!(delete.operation_code(), 19);
        let join = MetadataOp::JoinConsumerGroup {
            stream_id: 1,
            topic_id: 2,
            group_id: 3,
            member_id: 4,
        };
        assert_eq!(join.encode(), vec![20, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0]);
        assert!(!join.is_login());
        let leave = MetadataOp::LeaveConsumerGroup {
            stream_id: 1,
            topic_id: 2,
            group_id: 3,
            member_id: 4,
        };
        assert_eq!(leave.operation_code(), 21);
    }

    #[test]
    fn every_truncation_of_every_op_is_rejected() {
        for op in every_variant() {
            assert_cuts_and_padding_refused(&op.encode(), Some(0), MetadataOp::decode);
        }
    }

    #[test]
    fn garbage_bytes_never_panic_and_bad_fields_are_named() {
        assert_eq!(
            MetadataOp::decode(&[]),
            Err(DecodeError::Truncated {
                field: "operation code",
                offset: 0
            })
        );
        assert_eq!(
            MetadataOp::decode(&[0]),
            Err(DecodeError::UnknownCode {
                field: "operation code",
                code: 0
            })
        );
        assert_eq!(
            MetadataOp::decode(&[200, 1, 2]),
            Err(DecodeError::UnknownCode {
                field: "operation code",
                code: 200
            })
        );
        // CreateUser with active = 2.
        assert_eq!(
            MetadataOp::decode(&[7, 1, b'a', 1, b'p', 2]),
            Err(DecodeError::InvalidBool {
                field: "user active",
                byte: 2
            })
        );
        // CreateTopic with durability 9.
        let mut topic = vec![4, 1, 0, 0, 0, 1, b't', 1, 0, 0, 0, 9];
        topic.extend_from_slice(&[0; 8]);
        assert_eq!(
            MetadataOp::decode(&topic),
            Err(DecodeError::UnknownCode {
                field: "durability",
                code: 9
            })
        );
        // A stream name claiming more than the decode bound.
        let mut long = vec![1];
        let mut w = Writer::new();
        w.len(STRING_DECODE_BYTES_MAX + 1);
        long.extend(w.finish());
        assert!(matches!(
            MetadataOp::decode(&long),
            Err(DecodeError::TooLong {
                field: "stream name",
                ..
            })
        ));
        // A deterministic spray of pseudo-random inputs (xorshift; no OS randomness).
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 40) as usize;
            let mut bytes: Vec<u8> = (0..len).map(|i| (x >> (i % 8 * 8)) as u8 ^ i as u8).collect();
            // Mostly valid operation codes, so the field decoders are exercised too.
            if let Some(first) = bytes.first_mut() {
                *first %= 24;
            }
            if let Ok(op) = MetadataOp::decode(&bytes) {
                assert_eq!(op.encode(), bytes, "a decoded op re-encodes to the same bytes");
            }
        }
    }

    #[test]
    fn debug_output_redacts_secrets() {
        let op = MetadataOp::CreateUser {
            username: "alice".into(),
            password: "hunter2".into(),
            active: true,
        };
        let text = format!("{op:?}");
        assert!(text.contains("alice") && !text.contains("hunter2"), "{text}");
        // Pinned: the simulator prints ops, and its output must not change.
        assert_eq!(
            text,
            r#"CreateUser { username: "alice", password: "<redacted>", active: true }"#
        );
        let op = MetadataOp::LoginWithPersonalAccessToken {
            token: "secret-token".into(),
        };
        assert!(!format!("{op:?}").contains("secret-token"));
    }
}
