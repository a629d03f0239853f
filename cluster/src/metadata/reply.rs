//! What applying a metadata op answers, its binary codec, and its [`Outcome`] class.
//!
//! Models: the successes (carrying the ids or token an op created) and every error a
//! client can act on (a name taken, something missing, bad credentials, a limit
//! reached). Replies are what the client table caches and replays for a duplicate
//! request, so they encode compactly: `[reply code: u8][fields]`.
//!
//! The session replies (`SessionBound`, `SessionRefused`) answer a `BindSession`, which
//! a node answers from its applied metadata without applying an op.
//!
//! Does not model: transport-level outcomes (`TransientNotAccepted`,
//! `TransientNotCommitted`, redirects to the primary) which the request path produces
//! without ever applying an op, or malformed requests, which never become ops.

use super::limits::Limit;
use crate::codec::{DecodeError, Redacted, WireTable, wire_table};

wire_table! {
    /// The answer to one applied op. Success variants come first.
    #[derive(Clone, PartialEq, Eq)]
    pub enum MetadataReply {
        code_label: "reply code",
        redacted: Redacted,
        // Replies always printed on one line, `{:#?}` too.
        debug: one_line,
        /// The stable byte identifying this variant (see the `code` table; append-only).
        fn reply_code;
        variants: {
            /// Done; nothing to report.
            Ok = code::OK,
            /// `CreateStream` succeeded.
            StreamCreated = code::STREAM_CREATED {
                /// The new stream's id.
                stream_id: u32 = "stream id",
            },
            /// `CreateTopic` succeeded.
            TopicCreated = code::TOPIC_CREATED {
                /// The new topic's id within its stream.
                topic_id: u32 = "topic id",
            },
            /// `CreateUser` succeeded.
            UserCreated = code::USER_CREATED {
                /// The new user's id.
                user_id: u32 = "user id",
            },
            /// `CreatePersonalAccessToken` succeeded. The only place the token appears: the
            /// state keeps its hash. (A duplicate request is answered from the client table
            /// with these same bytes, so the token is replayed, not regenerated.)
            TokenCreated = code::TOKEN_CREATED {
                /// The token to present to `LoginWithPersonalAccessToken`.
                token: String = "token" [redacted],
            },
            /// A login succeeded and opened a session for the client that sent it.
            LoggedIn = code::LOGGED_IN {
                /// Who the session acts as.
                user_id: u32 = "user id",
                /// The session's id (the login's op number).
                session: u64 = "session id",
                /// What the client presents to bind the session on another node (a credential:
                /// never logged).
                secret: u128 = "session secret" [redacted],
            },
            /// `CreateConsumerGroup` succeeded.
            GroupCreated = code::GROUP_CREATED {
                /// The new group's id within its topic.
                group_id: u32 = "consumer group id",
            },
            /// `CreatePartitions` succeeded: the new partitions are `first_partition_id..` up to
            /// the count asked for, each replicated by group
            /// `partition_group_id(reply header op, id)`.
            PartitionsCreated = code::PARTITIONS_CREATED {
                /// The id of the first new partition (the topic's partition count before).
                first_partition_id: u32 = "first partition id",
            },
            /// `JoinConsumerGroup` succeeded.
            Joined = code::JOINED {
                /// The group's generation after the join.
                generation: u64 = "generation",
            },
            /// `LeaveConsumerGroup` succeeded.
            Left = code::LEFT {
                /// The group's generation after the leave.
                generation: u64 = "generation",
            },
            /// The name is already used in its scope.
            NameAlreadyExists = code::NAME_ALREADY_EXISTS,
            /// No stream has that id.
            StreamNotFound = code::STREAM_NOT_FOUND,
            /// The stream has no topic with that id.
            TopicNotFound = code::TOPIC_NOT_FOUND,
            /// No user has that id.
            UserNotFound = code::USER_NOT_FOUND,
            /// The topic has no consumer group with that id.
            GroupNotFound = code::GROUP_NOT_FOUND,
            /// The user has no token with that name.
            TokenNotFound = code::TOKEN_NOT_FOUND,
            /// The token exists but its expiry has passed (at the op's timestamp).
            TokenExpired = code::TOKEN_EXPIRED,
            /// The name is empty, too long or has control characters.
            InvalidName = code::INVALID_NAME,
            /// The password is empty or too long.
            InvalidPassword = code::INVALID_PASSWORD,
            /// A topic needs 1 to `PARTITIONS_PER_TOPIC_MAX` partitions: `CreateTopic` asked for
            /// 0 or too many, `CreatePartitions` for 0 or past the maximum, or
            /// `DeletePartitions` for 0 or all of them.
            InvalidPartitionCount = code::INVALID_PARTITION_COUNT,
            /// Username, password or token did not match.
            InvalidCredentials = code::INVALID_CREDENTIALS,
            /// The credentials matched but the user is deactivated.
            UserInactive = code::USER_INACTIVE,
            /// The root user cannot be deleted, deactivated or have its permissions changed.
            CannotModifyRoot = code::CANNOT_MODIFY_ROOT,
            /// A bound was reached; nothing changed.
            LimitReached = code::LIMIT_REACHED {
                /// Which bound.
                what: Limit = "limit",
            },
            /// `JoinConsumerGroup` named a member the group already has.
            AlreadyMember = code::ALREADY_MEMBER,
            /// `LeaveConsumerGroup` named a member the group does not have.
            MemberNotFound = code::MEMBER_NOT_FOUND,
            /// A `BindSession` succeeded: the node now knows its sender as the session's client.
            /// Answered by a node from its applied metadata, never an applied op.
            SessionBound = code::SESSION_BOUND {
                /// Who the session acts as.
                user_id: u32 = "user id",
            },
            /// The client has no session (never logged in, or it closed), or its user was
            /// deleted or deactivated since: log in.
            Unauthenticated = code::UNAUTHENTICATED,
            /// The session's user lacks the permission the op needs.
            PermissionDenied = code::PERMISSION_DENIED,
            /// A `BindSession` named a session the node's applied metadata does not hold for
            /// that client, or with another secret: log in again.
            SessionRefused = code::SESSION_REFUSED,
        }
    }
}

/// Hands `$callback` the metadata outcomes only the metadata plane answers (every
/// error but the session's refusals), in declaration order, after whatever tokens it
/// was given: `with_metadata_errors!(my_macro! { prefix })` expands to
/// `my_macro! { prefix [NameAlreadyExists, ..., MemberNotFound] }`. The one list both
/// [`Outcome`] and a workload's outcome classes are made from, so a new error is added
/// here once and every table of outcomes has it.
#[macro_export]
macro_rules! with_metadata_errors {
    ($callback:ident ! { $($prefix:tt)* }) => {
        $callback! { $($prefix)* [
            NameAlreadyExists,
            StreamNotFound,
            TopicNotFound,
            UserNotFound,
            GroupNotFound,
            TokenNotFound,
            TokenExpired,
            InvalidName,
            InvalidPassword,
            InvalidPartitionCount,
            InvalidCredentials,
            UserInactive,
            CannotModifyRoot,
            LimitReached,
            AlreadyMember,
            MemberNotFound
        ] }
    };
}

/// [`Outcome`] and its `ALL`, from the list of [`with_metadata_errors!`].
macro_rules! outcome_enum {
    ([$($error:ident),*]) => {
        /// A reply's class without its fields, for workloads and metrics to count by.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Outcome {
            /// Any success variant.
            Ok,
            $(
                #[doc = concat!("[`MetadataReply::", stringify!($error), "`].")]
                $error,
            )*
            /// [`MetadataReply::Unauthenticated`].
            Unauthenticated,
            /// [`MetadataReply::PermissionDenied`].
            PermissionDenied,
            /// [`MetadataReply::SessionRefused`].
            SessionRefused,
        }

        impl Outcome {
            /// Every outcome, in declaration order (for tables of counters).
            pub const ALL: [Outcome; 4 + [$(stringify!($error)),*].len()] = [
                Outcome::Ok,
                $(Outcome::$error,)*
                Outcome::Unauthenticated,
                Outcome::PermissionDenied,
                Outcome::SessionRefused,
            ];
        }
    };
}

with_metadata_errors!(outcome_enum! {});

/// Reply codes. Part of the wire contract and cached in client tables: append, never
/// renumber. Successes are below `ERROR_CODE_MIN`, errors at or above it, so a reader
/// can tell the two apart from the first byte alone.
mod code {
    pub const OK: u8 = 0;
    pub const STREAM_CREATED: u8 = 1;
    pub const TOPIC_CREATED: u8 = 2;
    pub const USER_CREATED: u8 = 3;
    pub const TOKEN_CREATED: u8 = 4;
    pub const LOGGED_IN: u8 = 5;
    pub const GROUP_CREATED: u8 = 6;
    pub const PARTITIONS_CREATED: u8 = 7;
    pub const JOINED: u8 = 8;
    pub const LEFT: u8 = 9;
    pub const SESSION_BOUND: u8 = 10;
    pub const NAME_ALREADY_EXISTS: u8 = 64;
    pub const STREAM_NOT_FOUND: u8 = 65;
    pub const TOPIC_NOT_FOUND: u8 = 66;
    pub const USER_NOT_FOUND: u8 = 67;
    pub const GROUP_NOT_FOUND: u8 = 68;
    pub const TOKEN_NOT_FOUND: u8 = 69;
    pub const TOKEN_EXPIRED: u8 = 70;
    pub const INVALID_NAME: u8 = 71;
    pub const INVALID_PASSWORD: u8 = 72;
    pub const INVALID_PARTITION_COUNT: u8 = 73;
    pub const INVALID_CREDENTIALS: u8 = 74;
    pub const USER_INACTIVE: u8 = 75;
    pub const CANNOT_MODIFY_ROOT: u8 = 76;
    pub const LIMIT_REACHED: u8 = 77;
    pub const ALREADY_MEMBER: u8 = 78;
    pub const MEMBER_NOT_FOUND: u8 = 79;
    pub const UNAUTHENTICATED: u8 = 80;
    pub const PERMISSION_DENIED: u8 = 81;
    pub const SESSION_REFUSED: u8 = 82;
}

/// First reply code that is an error.
pub const ERROR_CODE_MIN: u8 = 64;

impl MetadataReply {
    /// The reply's class.
    pub fn outcome(&self) -> Outcome {
        match self {
            MetadataReply::Ok
            | MetadataReply::StreamCreated { .. }
            | MetadataReply::TopicCreated { .. }
            | MetadataReply::UserCreated { .. }
            | MetadataReply::TokenCreated { .. }
            | MetadataReply::LoggedIn { .. }
            | MetadataReply::GroupCreated { .. }
            | MetadataReply::PartitionsCreated { .. }
            | MetadataReply::Joined { .. }
            | MetadataReply::Left { .. }
            | MetadataReply::SessionBound { .. } => Outcome::Ok,
            MetadataReply::NameAlreadyExists => Outcome::NameAlreadyExists,
            MetadataReply::StreamNotFound => Outcome::StreamNotFound,
            MetadataReply::TopicNotFound => Outcome::TopicNotFound,
            MetadataReply::UserNotFound => Outcome::UserNotFound,
            MetadataReply::GroupNotFound => Outcome::GroupNotFound,
            MetadataReply::TokenNotFound => Outcome::TokenNotFound,
            MetadataReply::TokenExpired => Outcome::TokenExpired,
            MetadataReply::InvalidName => Outcome::InvalidName,
            MetadataReply::InvalidPassword => Outcome::InvalidPassword,
            MetadataReply::InvalidPartitionCount => Outcome::InvalidPartitionCount,
            MetadataReply::InvalidCredentials => Outcome::InvalidCredentials,
            MetadataReply::UserInactive => Outcome::UserInactive,
            MetadataReply::CannotModifyRoot => Outcome::CannotModifyRoot,
            MetadataReply::LimitReached { .. } => Outcome::LimitReached,
            MetadataReply::AlreadyMember => Outcome::AlreadyMember,
            MetadataReply::MemberNotFound => Outcome::MemberNotFound,
            MetadataReply::Unauthenticated => Outcome::Unauthenticated,
            MetadataReply::PermissionDenied => Outcome::PermissionDenied,
            MetadataReply::SessionRefused => Outcome::SessionRefused,
        }
    }

    /// True for every success variant.
    pub fn is_ok(&self) -> bool {
        self.outcome() == Outcome::Ok
    }

    /// The reply's bytes: `[reply code][fields]`.
    pub fn encode(&self) -> Vec<u8> {
        self.encode_tagged()
    }

    /// Parse one reply occupying all of `bytes`. Never panics.
    pub fn decode(bytes: &[u8]) -> Result<MetadataReply, DecodeError> {
        Self::decode_tagged(bytes)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::codec::assert_cuts_and_padding_refused;

    fn every_variant() -> Vec<MetadataReply> {
        let mut replies = vec![
            MetadataReply::Ok,
            MetadataReply::StreamCreated { stream_id: 1 },
            MetadataReply::TopicCreated { topic_id: 2 },
            MetadataReply::UserCreated { user_id: 3 },
            MetadataReply::TokenCreated {
                token: "a1b2c3d4e5f60718293a4b5c6d7e8f90".into(),
            },
            MetadataReply::LoggedIn {
                user_id: 0,
                session: 9,
                secret: u128::MAX,
            },
            MetadataReply::SessionBound { user_id: 4 },
            MetadataReply::Unauthenticated,
            MetadataReply::PermissionDenied,
            MetadataReply::SessionRefused,
            MetadataReply::GroupCreated { group_id: u32::MAX },
            MetadataReply::NameAlreadyExists,
            MetadataReply::StreamNotFound,
            MetadataReply::TopicNotFound,
            MetadataReply::UserNotFound,
            MetadataReply::GroupNotFound,
            MetadataReply::TokenNotFound,
            MetadataReply::TokenExpired,
            MetadataReply::InvalidName,
            MetadataReply::InvalidPassword,
            MetadataReply::InvalidPartitionCount,
            MetadataReply::InvalidCredentials,
            MetadataReply::UserInactive,
            MetadataReply::CannotModifyRoot,
            MetadataReply::PartitionsCreated { first_partition_id: 5 },
            MetadataReply::Joined { generation: 1 },
            MetadataReply::Left { generation: u64::MAX },
            MetadataReply::AlreadyMember,
            MetadataReply::MemberNotFound,
        ];
        replies.extend(Limit::ALL.map(|what| MetadataReply::LimitReached { what }));
        replies
    }

    #[test]
    fn every_reply_round_trips_through_its_bytes() {
        for reply in every_variant() {
            let bytes = reply.encode();
            assert_eq!(bytes[0], reply.reply_code());
            assert_eq!(MetadataReply::decode(&bytes), Ok(reply.clone()), "{reply:?}");
            assert_eq!(reply.is_ok(), reply.reply_code() < ERROR_CODE_MIN, "{reply:?}");
        }
    }

    #[test]
    fn every_outcome_is_reachable_and_codes_are_distinct() {
        let replies = every_variant();
        let outcomes: BTreeSet<Outcome> = replies.iter().map(MetadataReply::outcome).collect();
        assert_eq!(outcomes, Outcome::ALL.into_iter().collect());
        let codes: BTreeSet<u8> = replies.iter().map(MetadataReply::reply_code).collect();
        assert_eq!(codes.len(), 30);
        // Pinned: cached reply bytes outlive a binary upgrade.
        assert_eq!(
            MetadataReply::StreamCreated { stream_id: 9 }.encode(),
            vec![1, 9, 0, 0, 0]
        );
        assert_eq!(MetadataReply::LimitReached { what: Limit::Users }.encode(), vec![77, 4]);
        assert_eq!(
            MetadataReply::PartitionsCreated { first_partition_id: 2 }.encode(),
            vec![7, 2, 0, 0, 0]
        );
        assert_eq!(
            MetadataReply::Joined { generation: 1 }.encode(),
            vec![8, 1, 0, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(MetadataReply::Left { generation: 2 }.encode()[0], 9);
        assert_eq!(MetadataReply::AlreadyMember.encode(), vec![78]);
        assert_eq!(MetadataReply::MemberNotFound.encode(), vec![79]);
        assert_eq!(
            MetadataReply::LimitReached {
                what: Limit::MembersPerGroup
            }
            .encode(),
            vec![77, 8]
        );
    }

    #[test]
    fn truncated_and_garbage_replies_are_rejected() {
        for reply in every_variant() {
            assert_cuts_and_padding_refused(&reply.encode(), Some(0xaa), MetadataReply::decode);
        }
        assert_eq!(
            MetadataReply::decode(&[11]),
            Err(DecodeError::UnknownCode {
                field: "reply code",
                code: 11
            })
        );
        assert_eq!(
            MetadataReply::decode(&[77, 99]),
            Err(DecodeError::UnknownCode {
                field: "limit",
                code: 99
            })
        );
        for first in 0..=u8::MAX {
            for second in [0u8, 1, 0x80, 0xff] {
                if let Ok(reply) = MetadataReply::decode(&[first, second]) {
                    assert_eq!(reply.encode(), vec![first, second]);
                }
            }
        }
    }

    #[test]
    fn debug_output_redacts_the_token() {
        let reply = MetadataReply::TokenCreated { token: "s3cr3t".into() };
        assert!(!format!("{reply:?}").contains("s3cr3t"));
        assert_eq!(format!("{:?}", MetadataReply::StreamNotFound), "StreamNotFound");
        assert_eq!(
            format!("{:?}", MetadataReply::Joined { generation: 3 }),
            "Joined { generation: 3 }"
        );
        assert_eq!(format!("{:?}", MetadataReply::MemberNotFound), "MemberNotFound");
        // Pinned, `{:#?}` included: a reply prints on one line.
        let logged_in = MetadataReply::LoggedIn {
            user_id: 1,
            session: 2,
            secret: 3,
        };
        assert_eq!(
            format!("{logged_in:#?}"),
            "LoggedIn { user_id: 1, session: 2, secret: <redacted> }"
        );
    }
}
