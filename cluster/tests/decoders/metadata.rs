//! Metadata: ops, replies, session binds, the state snapshot.

#[allow(unused_imports)]
use crate::{memory::*, partition::*, storage_boot::*, storage_logs::*, support::*, vsr_node::*, wire::*};

// ---------------------------------------------------------------------------------------
// Metadata: ops, replies, session binds, the state snapshot
// ---------------------------------------------------------------------------------------

pub(crate) fn durability() -> impl Strategy<Value = Durability> {
    prop_oneof![Just(Durability::Replicated), Just(Durability::Persisted)]
}

pub(crate) fn permissions() -> impl Strategy<Value = Permissions> {
    (
        any::<[bool; 4]>(),
        prop::collection::btree_map(any::<u32>(), any::<[bool; 3]>(), 0..5),
    )
        .prop_map(|(global, streams)| Permissions {
            global: GlobalPermissions {
                manage_streams: global[0],
                read_streams: global[1],
                manage_users: global[2],
                read_users: global[3],
            },
            streams: streams
                .into_iter()
                .map(|(id, bits)| {
                    let stream = StreamPermissions {
                        manage_topics: bits[0],
                        read: bits[1],
                        write: bits[2],
                    };
                    (id, stream)
                })
                .collect(),
        })
}

/// Every metadata op, every field arbitrary.
pub(crate) fn metadata_op() -> impl Strategy<Value = MetadataOp> {
    let id = any::<u32>;
    #[rustfmt::skip]
    let ops = prop_oneof![
        arbitrary! { MetadataOp::CreateStream { name: text() } },
        arbitrary! { MetadataOp::UpdateStream { stream_id: id(), name: text() } },
        arbitrary! { MetadataOp::DeleteStream { stream_id: id() } },
        arbitrary! { MetadataOp::CreateTopic {
            stream_id: id(), name: text(), partitions: id(), durability: durability(), message_expiry_micros: any::<u64>()
        } },
        arbitrary! { MetadataOp::UpdateTopic {
            stream_id: id(), topic_id: id(), name: text(), durability: durability(), message_expiry_micros: any::<u64>()
        } },
        arbitrary! { MetadataOp::DeleteTopic { stream_id: id(), topic_id: id() } },
        arbitrary! { MetadataOp::CreateUser { username: text(), password: text(), active: any::<bool>() } },
        arbitrary! { MetadataOp::UpdateUser {
            user_id: id(), username: prop::option::of(text()), active: prop::option::of(any::<bool>())
        } },
        arbitrary! { MetadataOp::DeleteUser { user_id: id() } },
        arbitrary! { MetadataOp::ChangePassword { user_id: id(), current_password: text(), new_password: text() } },
        arbitrary! { MetadataOp::UpdatePermissions { user_id: id(), permissions: permissions() } },
        arbitrary! { MetadataOp::CreatePersonalAccessToken { user_id: id(), name: text(), expiry_micros: any::<u64>() } },
        arbitrary! { MetadataOp::DeletePersonalAccessToken { user_id: id(), name: text() } },
        arbitrary! { MetadataOp::CreateConsumerGroup { stream_id: id(), topic_id: id(), name: text() } },
        arbitrary! { MetadataOp::DeleteConsumerGroup { stream_id: id(), topic_id: id(), group_id: id() } },
        arbitrary! { MetadataOp::LoginUser { username: text(), password: text() } },
        arbitrary! { MetadataOp::LoginWithPersonalAccessToken { token: text() } },
        arbitrary! { MetadataOp::CreatePartitions { stream_id: id(), topic_id: id(), count: id() } },
        arbitrary! { MetadataOp::DeletePartitions { stream_id: id(), topic_id: id(), count: id() } },
        arbitrary! { MetadataOp::JoinConsumerGroup { stream_id: id(), topic_id: id(), group_id: id(), member_id: id() } },
        arbitrary! { MetadataOp::LeaveConsumerGroup { stream_id: id(), topic_id: id(), group_id: id(), member_id: id() } },
    ];
    ops
}

/// Every metadata reply, every field arbitrary.
pub(crate) fn metadata_reply() -> impl Strategy<Value = MetadataReply> {
    let id = any::<u32>;
    // The fieldless replies are those whose code byte alone decodes, in code order.
    let fieldless = prop::sample::select(
        (0..=u8::MAX)
            .filter_map(|code| MetadataReply::decode(&[code]).ok())
            .collect::<Vec<_>>(),
    );
    #[rustfmt::skip]
    let replies = prop_oneof![
        fieldless.boxed(),
        arbitrary! { MetadataReply::StreamCreated { stream_id: id() } },
        arbitrary! { MetadataReply::TopicCreated { topic_id: id() } },
        arbitrary! { MetadataReply::UserCreated { user_id: id() } },
        arbitrary! { MetadataReply::TokenCreated { token: text() } },
        arbitrary! { MetadataReply::LoggedIn { user_id: id(), session: any::<u64>(), secret: any::<u128>() } },
        arbitrary! { MetadataReply::GroupCreated { group_id: id() } },
        arbitrary! { MetadataReply::PartitionsCreated { first_partition_id: id() } },
        arbitrary! { MetadataReply::Joined { generation: any::<u64>() } },
        arbitrary! { MetadataReply::Left { generation: any::<u64>() } },
        arbitrary! { MetadataReply::LimitReached { what: prop::sample::select(Limit::ALL.to_vec()) } },
        arbitrary! { MetadataReply::SessionBound { user_id: id() } },
    ];
    replies
}

/// Applies ops to a metadata state the way committed ops reach it.
pub(crate) struct MetadataLog {
    pub(crate) state: MetadataState,
    pub(crate) op: u64,
}

impl MetadataLog {
    pub(crate) fn new(entropy: u64) -> Self {
        Self {
            state: MetadataState::new("root password", entropy),
            op: 0,
        }
    }

    /// Apply `op` as the next committed op, sent by `client`; it must succeed.
    pub(crate) fn apply(&mut self, op: MetadataOp, client: u128) {
        self.op += 1;
        let context = MetadataContext {
            timestamp_micros: 1_000_000 + self.op * 1_000,
            op_number: self.op,
            view: 1 + self.op / 4,
            entropy: self.op.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            client,
            session: 0,
        };
        let reply = self.state.apply(&op, &context);
        assert!(reply.is_ok(), "{op:?} was refused: {reply:?}");
    }
}

/// A metadata state with something of everything the snapshot encodes: streams, topics
/// (partitions created by two ops, one deleted), consumer groups with members, users
/// with permissions and tokens, and open sessions. `names` become extra streams.
pub(crate) fn metadata_state() -> impl Strategy<Value = MetadataState> {
    (
        any::<u64>(),
        prop::collection::btree_set(valid_name(), 0..4),
        1u32..5,
        0u32..3,
        any::<bool>(),
    )
        .prop_map(|(entropy, names, partitions, members, persisted)| {
            let mut log = MetadataLog::new(entropy);
            let durability = if persisted {
                Durability::Persisted
            } else {
                Durability::Replicated
            };
            log.apply(MetadataOp::CreateStream { name: "orders".into() }, 11);
            log.apply(
                MetadataOp::CreateTopic {
                    stream_id: 0,
                    name: "eu".into(),
                    partitions,
                    durability,
                    message_expiry_micros: 60_000_000,
                },
                11,
            );
            log.apply(
                MetadataOp::CreateConsumerGroup {
                    stream_id: 0,
                    topic_id: 0,
                    name: "billing".into(),
                },
                11,
            );
            for member_id in 0..members {
                log.apply(
                    MetadataOp::JoinConsumerGroup {
                        stream_id: 0,
                        topic_id: 0,
                        group_id: 0,
                        member_id: member_id * 7,
                    },
                    12,
                );
            }
            log.apply(
                MetadataOp::CreateUser {
                    username: "alice".into(),
                    password: "alice's password".into(),
                    active: true,
                },
                11,
            );
            log.apply(
                MetadataOp::UpdatePermissions {
                    user_id: 1,
                    permissions: Permissions {
                        global: GlobalPermissions::default(),
                        streams: BTreeMap::from([(
                            0,
                            StreamPermissions {
                                manage_topics: false,
                                read: true,
                                write: true,
                            },
                        )]),
                    },
                },
                11,
            );
            log.apply(
                MetadataOp::CreatePersonalAccessToken {
                    user_id: 1,
                    name: "ci".into(),
                    expiry_micros: 3_600_000_000,
                },
                11,
            );
            log.apply(
                MetadataOp::LoginUser {
                    username: "alice".into(),
                    password: "alice's password".into(),
                },
                13,
            );
            log.apply(
                MetadataOp::CreatePartitions {
                    stream_id: 0,
                    topic_id: 0,
                    count: 2,
                },
                11,
            );
            log.apply(
                MetadataOp::DeletePartitions {
                    stream_id: 0,
                    topic_id: 0,
                    count: 1,
                },
                11,
            );
            for name in names {
                if name != "orders" {
                    log.apply(MetadataOp::CreateStream { name }, 14);
                }
            }
            log.apply(
                MetadataOp::LoginUser {
                    username: "root".into(),
                    password: "root password".into(),
                },
                15,
            );
            log.state
        })
}

/// The metadata op codec.
const METADATA_OPS: Codec<MetadataOp, DecodeError> = Codec {
    encode: MetadataOp::encode,
    decode: MetadataOp::decode,
};

/// The metadata state's snapshot codec.
const METADATA_STATES: Codec<MetadataState, DecodeError> = Codec {
    encode: MetadataState::encode_state,
    decode: MetadataState::decode_state,
};

/// The metadata reply codec.
const METADATA_REPLIES: Codec<MetadataReply, DecodeError> = Codec {
    encode: MetadataReply::encode,
    decode: MetadataReply::decode,
};

tagged_codec_properties! {
    METADATA_OPS, metadata_op(), garbage: 512, codes: 0u8..24;
    metadata_ops_round_trip_through_their_encoding,
    random_bytes_never_panic_the_metadata_op_decoder,
    a_damaged_metadata_op_decodes_to_an_error_or_to_exactly_its_bytes,
}

snapshot_properties! {
    METADATA_STATES, metadata_state();
    metadata_states_round_trip_through_their_snapshot,
    random_bytes_never_panic_the_metadata_snapshot_decoder,
    a_damaged_metadata_snapshot_decodes_to_an_error_or_to_exactly_its_bytes,
}

tagged_codec_properties! {
    METADATA_REPLIES, metadata_reply(), garbage: 64, codes: 0u8..90;
    metadata_replies_round_trip_through_their_encoding,
    random_bytes_never_panic_the_metadata_reply_decoder,
    a_damaged_metadata_reply_decodes_to_an_error_or_to_exactly_its_bytes,
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn metadata_length_prefixes_beyond_their_bounds_are_refused_before_allocating(
        claim in beyond(STRING_DECODE_BYTES_MAX as u64),
        streams in beyond(PERMISSION_STREAMS_MAX as u64),
        tail in bytes(16),
    ) {
        // STRING_DECODE_BYTES_MAX bounds every string; PERMISSION_STREAMS_MAX the
        // per-stream permissions of UpdatePermissions (code 11: user id, global bits).
        let name = [&[1u8][..], &varint(claim), &tail].concat();
        check_too_long(MetadataOp::decode(&name), "stream name")?;
        let token = [&[4u8][..], &varint(claim), &tail].concat();
        check_too_long(MetadataReply::decode(&token), "token")?;
        let permissions = [&[11u8, 1, 0, 0, 0, 0][..], &varint(streams), &tail].concat();
        check_too_long(MetadataOp::decode(&permissions), "stream permission count")?;
    }

    #[test]
    fn session_binds_round_trip_and_any_other_length_is_refused(
        session in any::<u64>(),
        secret in any::<u128>(),
        input in bytes(64),
    ) {
        let bind = BindSession { session, secret };
        prop_assert_eq!(BindSession::decode(&bind.encode()), Ok(bind));
        match BindSession::decode(&input) {
            Ok(decoded) => prop_assert_eq!(decoded.encode(), input),
            Err(_) => prop_assert_ne!(input.len(), 24),
        }
    }

    #[test]
    fn metadata_snapshot_counts_beyond_their_bounds_are_refused_before_allocating(
        streams in beyond(STREAMS_MAX as u64),
        users in beyond(USERS_MAX as u64),
        sessions in beyond(SESSIONS_MAX as u64),
        tail in bytes(16),
    ) {
        let prefix = [0u8; 24]; // op numbers, next stream id, next user id
        let claim = [&prefix[..], &varint(streams), &tail].concat();
        check_too_long(MetadataState::decode_state(&claim), "stream count")?;
        // An empty stream list, then the user count.
        let claim = [&prefix[..], &[0], &varint(users), &tail].concat();
        check_too_long(MetadataState::decode_state(&claim), "user count")?;
        // A genesis state's snapshot ends with its session count: claim more.
        let genesis = MetadataState::new("root password", 7).encode_state();
        let (session_count, rest) = genesis.split_last().expect("ends with the session count");
        prop_assert_eq!(*session_count, 0);
        let claim = [rest, &varint(sessions), &tail].concat();
        check_too_long(MetadataState::decode_state(&claim), "session count")?;
    }
}
